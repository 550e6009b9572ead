//! Rust names for spec names: identifiers, type names, enum variants and module names.
//!
//! Every function is total: any input string yields a valid, non-keyword identifier, and the
//! allocators resolve collisions by a deterministic suffix so the same input always gives the same
//! names.

use std::collections::{BTreeMap, BTreeSet};

use heck::{ToSnakeCase, ToUpperCamelCase};

/// Words Rust reserves in edition 2024 (strict and reserved keywords, and `Self`-like names that
/// cannot be raw identifiers).
const KEYWORDS: [&str; 52] = [
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// Type names generated code uses unqualified, which a generated type must not shadow
/// (`Default` is the trait `open_enum!` and derives implement).
const PRELUDE_TYPES: [&str; 11] = [
    "Option", "Some", "None", "Vec", "String", "Box", "Result", "Ok", "Err", "BTreeMap", "Default",
];

pub(crate) fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    s != "_" && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `podIP` → `pod_ip`, `type` → `type_`, `$ref` → `ref_`, `3d` → `f_3d`.
pub(crate) fn field_ident(wire: &str) -> String {
    let mut s = wire.to_snake_case();
    s.retain(|c| c.is_ascii_alphanumeric() || c == '_');
    if s.is_empty() {
        s = "field".to_owned();
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("f_{s}");
    }
    if is_keyword(&s) {
        s.push('_');
    }
    s
}

/// A module name from free text (`cert-manager` → `cert_manager`, `type` → `type_`).
pub(crate) fn module_ident(text: &str) -> String {
    field_ident(text)
}

/// A type name: definition names that are already identifiers are kept verbatim (`HTTPRoute`),
/// anything else goes through UpperCamelCase. A keyword or prelude name gets `Type` appended
/// (`Default` → `DefaultType`): an underscore would make the derived names (`Default_List`,
/// `Default_Spec`) trip rustc's `non_camel_case_types` lint.
pub(crate) fn type_ident(name: &str) -> String {
    let mut s = if is_ident(name) && name.starts_with(|c: char| c.is_ascii_uppercase()) {
        name.to_owned()
    } else {
        let mut s = name.to_upper_camel_case();
        s.retain(|c| c.is_ascii_alphanumeric());
        s
    };
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("T{s}");
    }
    if is_keyword(&s) || PRELUDE_TYPES.contains(&s.as_str()) {
        s.push_str("Type");
    }
    s
}

/// The UpperCamelCase segment a field contributes to a nested type name.
pub(crate) fn camel_segment(wire: &str) -> String {
    let mut s = wire.to_upper_camel_case();
    s.retain(|c| c.is_ascii_alphanumeric());
    s
}

/// An enum variant for a wire value (`NoSchedule` → `NoSchedule`, `""` → `Empty`, `*` → `V1`
/// where 1 is the value's position).
pub(crate) fn variant_ident(value: &str, position: usize) -> String {
    if value.is_empty() {
        return "Empty".to_owned();
    }
    let mut s = value.to_upper_camel_case();
    s.retain(|c| c.is_ascii_alphanumeric());
    if s.is_empty() {
        return format!("V{position}");
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("V{s}");
    }
    if is_keyword(&s) || s == "Other" {
        s.push('_');
    }
    s
}

/// serde's `rename_all = "camelCase"` applied to a snake_case field name.
pub(crate) fn serde_camel(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut upper = false;
    for c in field.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    // serde lowercases the first character of its PascalCase form.
    let mut chars = out.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => out,
    }
}

/// Hands out unique names in one namespace, suffixing repeats with 2, 3, ...
#[derive(Debug, Default)]
pub(crate) struct Allocator {
    taken: BTreeSet<String>,
}

impl Allocator {
    /// Marks a name as used without allocating it.
    pub(crate) fn reserve(&mut self, name: &str) {
        self.taken.insert(name.to_owned());
    }

    pub(crate) fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }

    /// The wanted name if free, else the first free `wanted2`, `wanted3`, ... (with `_` before the
    /// number when `wanted` ends in a digit or is an escaped field name: `type_` → `type_2`, never
    /// `type__2`, which rustc's `non_snake_case` lint rejects); the second value says whether it
    /// moved.
    pub(crate) fn allocate(&mut self, wanted: &str) -> (String, bool) {
        if self.taken.insert(wanted.to_owned()) {
            return (wanted.to_owned(), false);
        }
        let base = match wanted.trim_end_matches('_') {
            "" => wanted,
            base => base,
        };
        let escaped = base.len() < wanted.len();
        let sep = if base.ends_with(|c: char| c.is_ascii_digit())
            || (escaped && base.starts_with(|c: char| c.is_ascii_lowercase()))
        {
            "_"
        } else {
            ""
        };
        let mut n = 2;
        loop {
            let candidate = format!("{base}{sep}{n}");
            if self.taken.insert(candidate.clone()) {
                return (candidate, true);
            }
            n += 1;
        }
    }
}

/// Whether Kubernetes owns a group (core, unqualified names, `*.k8s.io`): those keep the short
/// module name when a CRD group's first label collides with them.
fn kubernetes_owned(group: &str) -> bool {
    !group.contains('.') || group.ends_with(".k8s.io")
}

/// Module names for API groups: core → `core`; otherwise the group's first label in snake_case
/// (`apps`, `networking.k8s.io` → `networking`, `cert-manager.io` → `cert_manager`). When several
/// groups want one name, a Kubernetes-owned group with the fewest labels keeps it if it is the only
/// such group; every other group takes more labels (`networking_istio`) until unique, then a
/// numeric suffix. Returns the names and one message per group that did not get its first label.
pub(crate) fn group_modules(
    groups: &BTreeSet<String>,
    reserved: &[&str],
) -> (BTreeMap<String, String>, Vec<String>) {
    let labels = |g: &str| -> Vec<String> {
        if g.is_empty() {
            vec!["core".to_owned()]
        } else {
            g.split('.').map(str::to_owned).collect()
        }
    };
    let candidate = |g: &str, n: usize| -> String {
        let ls = labels(g);
        let take = n.min(ls.len());
        module_ident(&ls.get(..take).unwrap_or_default().join("_"))
    };
    let mut wanted: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    for g in groups {
        wanted.entry(candidate(g, 1)).or_default().push(g);
    }
    let mut out = BTreeMap::new();
    let mut taken: Allocator = Allocator::default();
    for r in reserved {
        taken.reserve(r);
    }
    let mut losers = Vec::new();
    for (name, claimants) in &wanted {
        let rank = |g: &str| (!kubernetes_owned(g), labels(g).len());
        let best = claimants.iter().map(|g| rank(g)).min();
        let winners: Vec<&&String> = claimants.iter().filter(|g| Some(rank(g)) == best).collect();
        let winner = match winners.as_slice() {
            [only] if !taken.is_taken(name) => Some((**only).clone()),
            _ => None,
        };
        for g in claimants {
            if Some((*g).clone()) == winner {
                taken.reserve(name);
                out.insert((*g).clone(), name.clone());
            } else {
                losers.push((*g).clone());
            }
        }
    }
    let mut messages = Vec::new();
    // Losers are placed after every first-label name is fixed, so a longer name never steals a
    // short one from a later group.
    for g in losers {
        let first = candidate(&g, 1);
        let mut chosen = None;
        for n in 2..=labels(&g).len() {
            let c = candidate(&g, n);
            if !taken.is_taken(&c) && !wanted.contains_key(&c) {
                chosen = Some(c);
                break;
            }
        }
        let name = match chosen {
            Some(c) => {
                taken.reserve(&c);
                c
            }
            None => taken.allocate(&candidate(&g, usize::MAX)).0,
        };
        messages.push(format!(
            "module name `{first}` of group \"{g}\" is taken; using `{name}`"
        ));
        out.insert(g, name);
    }
    (out, messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_idents() {
        let cases = [
            ("podIP", "pod_ip"),
            ("type", "type_"),
            ("$ref", "ref_"),
            ("$schema", "schema"),
            ("x-kubernetes-list-type", "x_kubernetes_list_type"),
            ("3d", "f_3d"),
            ("", "field"),
            ("-", "field"),
            ("apiVersion", "api_version"),
            ("self", "self_"),
            ("async", "async_"),
            ("gen", "gen_"),
        ];
        for (wire, want) in cases {
            assert_eq!(field_ident(wire), want, "{wire}");
        }
    }

    #[test]
    fn serde_camel_matches_wire_names() {
        let cases = [
            ("api_version", "apiVersion"),
            ("type_", "type"),
            ("pod_ip", "podIp"),
            ("x_kubernetes_list_type", "xKubernetesListType"),
            ("name", "name"),
        ];
        for (field, want) in cases {
            assert_eq!(serde_camel(field), want, "{field}");
        }
    }

    #[test]
    fn type_and_variant_idents() {
        assert_eq!(type_ident("HTTPRoute"), "HTTPRoute");
        assert_eq!(type_ident("cert-manager"), "CertManager");
        for (name, want) in [
            ("String", "StringType"),
            ("Default", "DefaultType"),
            ("Vec", "VecType"),
            ("Self", "SelfType"),
        ] {
            assert_eq!(type_ident(name), want, "{name}");
        }
        assert_eq!(type_ident("9lives"), "T9lives");
        let cases = [
            ("NoSchedule", 1, "NoSchedule"),
            ("", 1, "Empty"),
            ("*", 3, "V3"),
            ("1.0", 1, "V10"),
            ("Other", 1, "Other_"),
            ("IPv4", 1, "IPv4"),
            ("self", 1, "Self_"),
        ];
        for (value, pos, want) in cases {
            assert_eq!(variant_ident(value, pos), want, "{value}");
        }
    }

    #[test]
    fn allocator_suffixes_repeats() {
        let mut a = Allocator::default();
        assert_eq!(a.allocate("Foo"), ("Foo".to_owned(), false));
        assert_eq!(a.allocate("Foo"), ("Foo2".to_owned(), true));
        assert_eq!(a.allocate("Foo"), ("Foo3".to_owned(), true));
        assert_eq!(a.allocate("V1"), ("V1".to_owned(), false));
        assert_eq!(a.allocate("V1"), ("V1_2".to_owned(), true));
        // Escaped names drop the escape before the number (rustc lints `type__2`).
        assert_eq!(a.allocate("type_"), ("type_".to_owned(), false));
        assert_eq!(a.allocate("type_"), ("type_2".to_owned(), true));
        assert_eq!(a.allocate("Other_"), ("Other_".to_owned(), false));
        assert_eq!(a.allocate("Other_"), ("Other2".to_owned(), true));
    }

    #[test]
    fn group_module_names() {
        let groups: BTreeSet<String> = [
            "",
            "apps",
            "networking.k8s.io",
            "flowcontrol.apiserver.k8s.io",
            "rbac.authorization.k8s.io",
            "gateway.networking.k8s.io",
            "cert-manager.io",
            "networking.istio.io",
            "monitoring.coreos.com",
            "monitoring.example.com",
            "apimachinery.example.com",
            "type.example.com",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        let (names, messages) = group_modules(&groups, &["apimachinery"]);
        let get = |g: &str| names.get(g).map(String::as_str);
        assert_eq!(get(""), Some("core"));
        assert_eq!(get("apps"), Some("apps"));
        assert_eq!(get("networking.k8s.io"), Some("networking"));
        assert_eq!(get("flowcontrol.apiserver.k8s.io"), Some("flowcontrol"));
        assert_eq!(get("rbac.authorization.k8s.io"), Some("rbac"));
        assert_eq!(get("gateway.networking.k8s.io"), Some("gateway"));
        assert_eq!(get("cert-manager.io"), Some("cert_manager"));
        assert_eq!(get("networking.istio.io"), Some("networking_istio"));
        assert_eq!(get("monitoring.coreos.com"), Some("monitoring_coreos"));
        assert_eq!(get("monitoring.example.com"), Some("monitoring_example"));
        assert_eq!(
            get("apimachinery.example.com"),
            Some("apimachinery_example")
        );
        assert_eq!(get("type.example.com"), Some("type_"));
        assert_eq!(messages.len(), 4, "{messages:?}");
    }
}
