//! The string formats upstream checks names, keys and ports against
//! (`k8s.io/apimachinery/pkg/util/validation`: `IsDNS1123Label`, `IsQualifiedName`,
//! `IsConfigMapKey`, `IsValidPortName`, ...; `pkg/api/validation/path`), with their messages
//! word for word, per release.

use crate::KubeVersion;
use crate::names::{matches_dns_label, matches_dns_subdomain, matches_name_part};

/// A string format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// A lowercase RFC 1123 label: at most 63 characters, `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
    DnsLabel,
    /// A lowercase RFC 1123 subdomain: at most 253 characters, dot-separated labels.
    DnsSubdomain,
    /// A DNS-1035 label: as a DNS-1123 label, starting with a letter (Service names).
    Dns1035Label,
    /// A qualified name: an optional DNS subdomain prefix and `/`, then a name part (label and
    /// annotation keys, finalizers).
    QualifiedName,
    /// A label value: empty, or a name part.
    LabelValue,
    /// A ConfigMap or Secret key: `[-._a-zA-Z0-9]+`, not `.` or `..` or starting with `..`.
    ConfigMapKey,
    /// An IANA service name (a port's name): at most 15 lowercase letters, digits and `-`.
    PortName,
    /// A path segment (RBAC names): not `.` or `..`, without `/` or `%`.
    PathSegment,
    /// An environment variable name: `[-._a-zA-Z][-._a-zA-Z0-9]*`, not `.` or `..` or
    /// starting with `..` (`IsEnvVarName`); from 1.32 any printable ASCII but `=`
    /// (`IsRelaxedEnvVarName`, RelaxedEnvironmentVariableValidation on by default).
    EnvVarName,
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const CONFIG_MAP_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const ENV_VAR_NAME_MSG: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const RELAXED_ENV_VAR_NAME_MSG: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";

/// The release whose label-key and label-value length errors count bytes, not characters.
const BYTES_SINCE: KubeVersion = KubeVersion::new(1, 35);
/// The release whose label check says "must not contain dots" for a subdomain.
const NO_DOTS_SINCE: KubeVersion = KubeVersion::new(1, 27);
/// The release whose port-name check asks for a letter, not a letter or number.
const PORT_NAME_LETTER_SINCE: KubeVersion = KubeVersion::new(1, 25);
/// The release whose environment variable names may be any printable ASCII but `=`.
const RELAXED_ENV_VAR_NAME_SINCE: KubeVersion = KubeVersion::new(1, 32);

/// Upstream's `RegexError`: `<msg> (e.g. 'a',  or 'b', regex used for validation is '<re>')`
/// (each example is followed by `', '` and the next begins with `" or "`, hence two spaces).
pub(super) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = msg.to_owned();
    if examples.is_empty() {
        out.push_str(&format!(" (regex used for validation is '{fmt}')"));
        return out;
    }
    out.push_str(" (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn max_len(length: usize, unit: &str) -> String {
    format!("must be no more than {length} {unit}")
}

impl Format {
    /// The upstream messages for `value`, none when it is valid.
    pub fn messages(self, value: &str, release: KubeVersion) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            Self::DnsLabel => {
                if value.len() > 63 {
                    out.push(max_len(63, "characters"));
                }
                if !matches_dns_label(value) {
                    if release >= NO_DOTS_SINCE && matches_dns_subdomain(value) {
                        out.push("must not contain dots".to_owned());
                    } else {
                        out.push(regex_error(
                            DNS1123_LABEL_MSG,
                            DNS1123_LABEL_FMT,
                            &["my-name", "123-abc"],
                        ));
                    }
                }
            }
            Self::DnsSubdomain => {
                if value.len() > 253 {
                    out.push(max_len(253, "characters"));
                }
                if !matches_dns_subdomain(value) {
                    out.push(regex_error(
                        DNS1123_SUBDOMAIN_MSG,
                        DNS1123_SUBDOMAIN_FMT,
                        &["example.com"],
                    ));
                }
            }
            Self::Dns1035Label => {
                if value.len() > 63 {
                    out.push(max_len(63, "characters"));
                }
                if !(matches_dns_label(value)
                    && value.starts_with(|c: char| c.is_ascii_lowercase()))
                {
                    out.push(regex_error(
                        DNS1035_LABEL_MSG,
                        DNS1035_LABEL_FMT,
                        &["my-name", "abc-123"],
                    ));
                }
            }
            Self::QualifiedName => qualified_name(value, release, &mut out),
            Self::LabelValue => {
                if value.len() > 63 {
                    out.push(max_len(63, length_unit(release)));
                }
                if !value.is_empty() && !matches_name_part(value) {
                    out.push(regex_error(
                        LABEL_VALUE_MSG,
                        LABEL_VALUE_FMT,
                        &["MyValue", "my_value", "12345"],
                    ));
                }
            }
            Self::ConfigMapKey => {
                if value.len() > 253 {
                    out.push(max_len(253, "characters"));
                }
                let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
                if value.is_empty() || !value.chars().all(allowed) {
                    out.push(regex_error(
                        CONFIG_MAP_KEY_MSG,
                        CONFIG_MAP_KEY_FMT,
                        &["key.name", "KEY_NAME", "key-name"],
                    ));
                }
                chdir_prefix(value, &mut out);
            }
            Self::EnvVarName => env_var_name(value, release, &mut out),
            Self::PortName => port_name(value, release, &mut out),
            Self::PathSegment => {
                if value == "." || value == ".." {
                    out.push(format!("may not be '{value}'"));
                } else {
                    for illegal in ["/", "%"] {
                        if value.contains(illegal) {
                            out.push(format!("may not contain '{illegal}'"));
                        }
                    }
                }
            }
        }
        out
    }
}

/// `hasChDirPrefix`.
fn chdir_prefix(value: &str, out: &mut Vec<String>) {
    if value == "." {
        out.push("must not be '.'".to_owned());
    } else if value == ".." {
        out.push("must not be '..'".to_owned());
    } else if value.starts_with("..") {
        out.push("must not start with '..'".to_owned());
    }
}

/// `IsEnvVarName`, or `IsRelaxedEnvVarName` from 1.32.
fn env_var_name(value: &str, release: KubeVersion, out: &mut Vec<String>) {
    if release >= RELAXED_ENV_VAR_NAME_SINCE {
        if value.is_empty() {
            out.push("environment variable name must be non-empty".to_owned());
        }
        if value.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
            out.push(RELAXED_ENV_VAR_NAME_MSG.to_owned());
        }
        return;
    }
    let mut chars = value.chars();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    let valid = chars
        .next()
        .is_some_and(|c| allowed(c) && !c.is_ascii_digit())
        && chars.all(allowed);
    if !valid {
        out.push(regex_error(
            ENV_VAR_NAME_MSG,
            ENV_VAR_NAME_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    chdir_prefix(value, out);
}

fn length_unit(release: KubeVersion) -> &'static str {
    if release >= BYTES_SINCE {
        "bytes"
    } else {
        "characters"
    }
}

/// `IsQualifiedName`.
fn qualified_name(value: &str, release: KubeVersion, out: &mut Vec<String>) {
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".to_owned());
            } else {
                let unit = length_unit(release);
                if prefix.len() > 253 {
                    out.push(format!("prefix part {}", max_len(253, unit)));
                }
                if !matches_dns_subdomain(prefix) {
                    out.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_MSG,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            let lead = if release >= BYTES_SINCE {
                "a valid label key "
            } else {
                "a qualified name "
            };
            out.push(format!(
                "{lead}{} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return;
        }
    };
    if name.is_empty() {
        out.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        out.push(format!("name part {}", max_len(63, length_unit(release))));
    }
    if !matches_name_part(name) {
        out.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
}

/// `IsValidPortName` (IANA_SVC_NAME), its checks in upstream's order.
fn port_name(value: &str, release: KubeVersion, out: &mut Vec<String>) {
    if value.len() > 15 {
        out.push(max_len(15, "characters"));
    }
    if value.is_empty()
        || !value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        out.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned(),
        );
    }
    if release >= PORT_NAME_LETTER_SINCE {
        if !value.chars().any(|c| c.is_ascii_lowercase()) {
            out.push("must contain at least one letter (a-z)".to_owned());
        }
    } else if !value
        .chars()
        .any(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    {
        out.push("must contain at least one letter or number (a-z, 0-9)".to_owned());
    }
    if value.contains("--") {
        out.push("must not contain consecutive hyphens".to_owned());
    }
    if value.starts_with('-') || value.ends_with('-') {
        out.push("must not begin or end with a hyphen".to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELEASE: KubeVersion = KubeVersion::new(1, 34);

    #[test]
    fn messages_match_upstream_word_for_word() {
        // Texts from k8s.io/apimachinery/pkg/util/validation/validation.go (RegexError).
        assert_eq!(
            Format::DnsLabel.messages("My_Name", RELEASE),
            [
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            Format::ConfigMapKey.messages("bad key", RELEASE),
            [
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
            ]
        );
        assert_eq!(
            Format::Dns1035Label.messages("1abc", RELEASE),
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            Format::QualifiedName.messages("example.com/", RELEASE),
            [
                "name part must be non-empty".to_owned(),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_owned()
            ]
        );
        assert_eq!(
            Format::PathSegment.messages("a/b", RELEASE),
            ["may not contain '/'"]
        );
        assert_eq!(
            Format::ConfigMapKey.messages("..a", RELEASE),
            ["must not start with '..'"]
        );
    }

    #[test]
    fn wordings_follow_the_release() {
        assert_eq!(
            Format::DnsLabel.messages("a.b", RELEASE),
            ["must not contain dots"]
        );
        assert_eq!(
            Format::DnsLabel
                .messages("a.b", KubeVersion::new(1, 20))
                .len(),
            1
        );
        assert_ne!(
            Format::DnsLabel.messages("a.b", KubeVersion::new(1, 20)),
            ["must not contain dots"]
        );
        let long = "a".repeat(64);
        assert_eq!(
            Format::LabelValue.messages(&long, KubeVersion::new(1, 36)),
            ["must be no more than 63 bytes"]
        );
        assert_eq!(
            Format::LabelValue.messages(&long, RELEASE),
            ["must be no more than 63 characters"]
        );
        assert_eq!(
            Format::PortName.messages("80", KubeVersion::new(1, 20)),
            Vec::<String>::new()
        );
        assert_eq!(
            Format::PortName.messages("80", RELEASE),
            ["must contain at least one letter (a-z)"]
        );
        // IsEnvVarName, then IsRelaxedEnvVarName from 1.32.
        assert_eq!(
            Format::EnvVarName.messages("1A", KubeVersion::new(1, 28)),
            [
                "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
            ]
        );
        assert!(Format::EnvVarName.messages("1A", RELEASE).is_empty());
        assert_eq!(
            Format::EnvVarName.messages("A=B", RELEASE),
            [RELAXED_ENV_VAR_NAME_MSG]
        );
        assert_eq!(
            Format::EnvVarName.messages("..", KubeVersion::new(1, 20)),
            ["must not be '..'"]
        );
        for ok in ["http", "web-1", "a"] {
            assert!(Format::PortName.messages(ok, RELEASE).is_empty(), "{ok}");
        }
    }
}
