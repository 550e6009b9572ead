//! Kubernetes' format library: `format.named(name)` (an optional format) and
//! `format.<name>()`, whose `validate(string)` is `optional.none()` for a valid string and the
//! list of upstream's messages otherwise. The DNS and name formats give the messages of
//! `k8s.io/apimachinery/pkg/util/validation` ([`crate::validation::Format`]); `-Prefix`
//! variants accept a trailing dash (a `generateName`).
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/format.go`.

use std::sync::Arc;

use base64::Engine as _;
use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::objects::{Opaque, OptionalValue};
use cel::{Env, ExecutionError, Value};

use super::{no_overload, string_arg, value_overload};
use crate::KubeVersion;
use crate::cel::cost::charge_match;
use crate::validation::Format as NameFormat;

/// The release whose messages the name formats give.
const MESSAGES_OF: KubeVersion = KubeVersion::new(1, 36);

/// The named formats, as `format.named` and `format.<name>()` know them, each with the length
/// of the longest pattern its check stands for (`MaxRegexSize`), which prices a `validate`.
const NAMES: [(&str, u64); 13] = [
    ("dns1123Label", 30),
    ("dns1123Subdomain", 60),
    ("dns1035Label", 30),
    ("qualifiedName", 60),
    ("dns1123LabelPrefix", 30),
    ("dns1123SubdomainPrefix", 60),
    ("dns1035LabelPrefix", 30),
    ("labelValue", 40),
    // govalidator's URL and Base64 patterns and kube-openapi's `strfmt` UUID and date-time
    // patterns, measured.
    ("uri", 1103),
    ("uuid", 70),
    ("byte", 84),
    ("date", 71),
    ("datetime", 71),
];

/// The calls `format.<name>()`, as CEL writes them.
pub(super) const CONSTANTS: [&str; 13] = kapi_cel_check::names::FORMAT_CONSTANTS;

/// One named format (`kubernetes.NamedFormat`).
#[derive(Debug, PartialEq, Eq)]
struct NamedFormat(&'static str);

impl Opaque for NamedFormat {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// `s` with a trailing dash masked, as `NameIsDNSLabel(s, true)` checks a prefix.
fn prefix(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(head) if !s.is_empty() && s.len() > 1 => format!("{head}a"),
        _ => s.to_owned(),
    }
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    (parts.len() == 5
        && parts
            .iter()
            .zip(lengths)
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit())))
        || (s.len() == 32 && s.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The problems of `s` in format `name`; empty when it is valid.
fn problems(name: &str, s: &str) -> Vec<String> {
    let names = |format: NameFormat, s: &str| format.messages(s, MESSAGES_OF);
    match name {
        "dns1123Label" => names(NameFormat::DnsLabel, s),
        "dns1123Subdomain" => names(NameFormat::DnsSubdomain, s),
        "dns1035Label" => names(NameFormat::Dns1035Label, s),
        "qualifiedName" => names(NameFormat::QualifiedName, s),
        "dns1123LabelPrefix" => names(NameFormat::DnsLabel, &prefix(s)),
        "dns1123SubdomainPrefix" => names(NameFormat::DnsSubdomain, &prefix(s)),
        "dns1035LabelPrefix" => names(NameFormat::Dns1035Label, &prefix(s)),
        "labelValue" => names(NameFormat::LabelValue, s),
        "uri" => super::urls::parse_error(s).into_iter().collect(),
        "uuid" if !is_uuid(s) => vec!["does not match the UUID format".to_owned()],
        "byte" if base64::engine::general_purpose::STANDARD.decode(s).is_err() => {
            vec!["invalid base64".to_owned()]
        }
        "date" if chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_err() => {
            vec!["invalid date".to_owned()]
        }
        "datetime" if chrono::DateTime::parse_from_rfc3339(s).is_err() => {
            vec!["invalid datetime".to_owned()]
        }
        _ => Vec::new(),
    }
}

fn optional(value: Option<Value>) -> Value {
    Value::Opaque(Arc::new(match value {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    }))
}

fn format_value(name: &'static str) -> Value {
    Value::Opaque(Arc::new(NamedFormat(name)))
}

macro_rules! constants {
    ($($f:ident => $name:literal),* $(,)?) => {
        $(fn $f(_: &[Value]) -> Result<Value, ExecutionError> {
            Ok(format_value($name))
        })*
        const CONSTANT_FUNCTIONS: [cel::common::functions::Function; 13] =
            [$(value_overload!($f)),*];
    };
}

constants! {
    dns1123_label => "dns1123Label",
    dns1123_subdomain => "dns1123Subdomain",
    dns1035_label => "dns1035Label",
    qualified_name => "qualifiedName",
    dns1123_label_prefix => "dns1123LabelPrefix",
    dns1123_subdomain_prefix => "dns1123SubdomainPrefix",
    dns1035_label_prefix => "dns1035LabelPrefix",
    label_value => "labelValue",
    uri => "uri",
    uuid => "uuid",
    byte => "byte",
    date => "date",
    datetime => "datetime",
}

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload(
        "format.named",
        "format-named",
        vec![STRING_TYPE],
        value_overload!(named),
    );
    for (call, f) in CONSTANTS.iter().zip(CONSTANT_FUNCTIONS) {
        let _ = env.add_overload(call, call, vec![], f);
    }
    let _ = env.add_member_overload(
        "validate",
        "format-validate",
        DYN_TYPE,
        vec![STRING_TYPE],
        value_overload!(validate),
    );
}

fn named(args: &[Value]) -> Result<Value, ExecutionError> {
    let name = string_arg("format.named", args, 0)?;
    Ok(optional(
        NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, _)| format_value(n)),
    ))
}

fn validate(args: &[Value]) -> Result<Value, ExecutionError> {
    let Some(Value::Opaque(o)) = args.first() else {
        return Err(no_overload("validate"));
    };
    let format = o
        .downcast_ref::<NamedFormat>()
        .ok_or_else(|| no_overload("validate"))?;
    let text = string_arg("validate", args, 1)?;
    // As a regular expression of the format's pattern would cost (`library.CallCost`).
    let pattern = NAMES
        .iter()
        .find(|(n, _)| *n == format.0)
        .map_or(0, |(_, size)| *size);
    charge_match(text, pattern)?;
    let found = problems(format.0, text);
    Ok(optional((!found.is_empty()).then(|| {
        Value::List(Arc::new(
            found
                .into_iter()
                .map(|p| Value::String(Arc::new(p)))
                .collect(),
        ))
    })))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_all, eval};

    // Upstream: k8s.io/apiserver/pkg/cel/library/format_test.go (TestFormat).
    #[test]
    fn format_library() {
        assert_all(&[
            (
                "!format.dns1123Label().validate('my-name').hasValue()",
                true,
            ),
            ("format.dns1123Label().validate('My_Name').hasValue()", true),
            (
                "!format.dns1123LabelPrefix().validate('my-prefix-').hasValue()",
                true,
            ),
            (
                "format.dns1123Label().validate('my-prefix-').hasValue()",
                true,
            ),
            (
                "!format.named('dns1123Subdomain').value().validate('a.b.c').hasValue()",
                true,
            ),
            ("!format.named('nope').hasValue()", true),
            (
                "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
                true,
            ),
            (
                "format.uuid().validate('nope').value() == ['does not match the UUID format']",
                true,
            ),
            (
                "format.byte().validate('!!').value() == ['invalid base64']",
                true,
            ),
            ("!format.date().validate('2021-01-01').hasValue()", true),
            (
                "format.datetime().validate('2021-01-01').value() == ['invalid datetime']",
                true,
            ),
            (
                "!format.uri().validate('https://example.com').hasValue()",
                true,
            ),
            ("format.uri().validate('x').hasValue()", true),
        ]);
        let messages = eval("format.dns1123Label().validate('A').value()[0]").unwrap();
        assert_eq!(
            messages,
            cel::Value::String(std::sync::Arc::new(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned()
            ))
        );
    }
}
