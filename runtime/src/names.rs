//! Upstream's name rules, in one place: DNS-1123 labels and subdomains (object names,
//! namespaces), label values, and qualified names (label keys, finalizers).

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` without the length limit: the shape of a
/// qualified name's name part and of a non-empty label value.
pub(crate) fn matches_name_part(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` without the length limit: the shape of a DNS-1123 label.
pub(crate) fn matches_dns_label(s: &str) -> bool {
    let lower_alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.starts_with(lower_alnum)
        && s.ends_with(lower_alnum)
        && s.chars().all(|c| lower_alnum(c) || c == '-')
}

/// The DNS-1123 subdomain regex, without the length limit.
pub(crate) fn matches_dns_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns_label)
}

/// A name part of at most 63 characters.
fn is_name_part(s: &str) -> bool {
    s.len() <= 63 && matches_name_part(s)
}

/// Whether `s` is a lowercase RFC 1123 label.
pub(crate) fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && matches_dns_label(s)
}

/// Whether `s` is a lowercase RFC 1123 subdomain.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Whether `s` is a label value: empty, or a name part.
pub(crate) fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

/// Whether `s` is a qualified name: an optional DNS-subdomain prefix and `/`, then a name part.
pub(crate) fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_name_part(name),
        None => is_name_part(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let long = "a".repeat(64);
        let cases: [(&str, [bool; 4]); 11] = [
            // (input, [dns label, dns subdomain, label value, qualified name])
            ("kube-system", [true, true, true, true]),
            ("a.b", [false, true, true, true]),
            ("", [false, false, true, false]),
            ("My_Name", [false, false, true, true]),
            ("-a", [false, false, false, false]),
            ("a.", [false, false, false, false]),
            ("example.com/my-name", [false, false, false, true]),
            ("Example.com/x", [false, false, false, false]),
            ("example.com/", [false, false, false, false]),
            ("a/b/c", [false, false, false, false]),
            (&long, [false, false, false, false]),
        ];
        for (input, [label, subdomain, value, qualified]) in cases {
            assert_eq!(is_dns_label(input), label, "label {input:?}");
            assert_eq!(is_dns_subdomain(input), subdomain, "subdomain {input:?}");
            assert_eq!(is_label_value(input), value, "value {input:?}");
            assert_eq!(is_qualified_name(input), qualified, "qualified {input:?}");
        }
    }
}
