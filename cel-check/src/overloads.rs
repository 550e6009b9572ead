//! The signatures of the functions the environment declares, for the checker: CEL's standard
//! library, the crate's strings and lists extensions, and Kubernetes' libraries. Each overload
//! is written as CEL documentation writes it, `(int, int) -> int` for a global function and
//! `string.(string) -> bool` for a member one, with `A`, `B`, `K`, `V` type parameters, and
//! read once. A function the environment has but this table does not list is called with any
//! arguments and gives dyn.
//!
//! Upstream: cel-go `common/stdlib/standard.go`, `ext/strings.go`, `ext/lists.go`,
//! `ext/sets.go`; k8s `apiserver/pkg/cel/library/` (`lists.go`, `regex.go`, `urls.go`,
//! `quantity.go`, `ip.go`, `cidr.go`, `format.go`, `authz.go`, `semverlib.go`).

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::types::Type;

/// One overload: whether it is called on a target, its parameter types (the target's first)
/// and its result.
#[derive(Debug, Clone)]
pub(crate) struct Overload {
    pub(crate) member: bool,
    pub(crate) params: Vec<Type>,
    pub(crate) result: Type,
}

const COMPARABLE: &[&str] = &[
    "(bool, bool) -> bool",
    "(int, int) -> bool",
    "(int, uint) -> bool",
    "(int, double) -> bool",
    "(uint, int) -> bool",
    "(uint, uint) -> bool",
    "(uint, double) -> bool",
    "(double, int) -> bool",
    "(double, uint) -> bool",
    "(double, double) -> bool",
    "(string, string) -> bool",
    "(bytes, bytes) -> bool",
    "(timestamp, timestamp) -> bool",
    "(duration, duration) -> bool",
];

const TIME_GETTERS: &[&str] = &[
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
];

const CLOCK_GETTERS: &[&str] = &["getHours", "getMinutes", "getSeconds", "getMilliseconds"];

/// The declared overloads, by function name as CEL calls it.
fn table() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut t: Vec<(&'static str, Vec<&'static str>)> = vec![
        ("!_", vec!["(bool) -> bool"]),
        ("-_", vec!["(int) -> int", "(double) -> double"]),
        ("_&&_", vec!["(bool, bool) -> bool"]),
        ("_||_", vec!["(bool, bool) -> bool"]),
        ("@not_strictly_false", vec!["(bool) -> bool"]),
        ("_?_:_", vec!["(bool, A, A) -> A"]),
        ("_==_", vec!["(A, A) -> bool"]),
        ("_!=_", vec!["(A, A) -> bool"]),
        (
            "_+_",
            vec![
                "(int, int) -> int",
                "(uint, uint) -> uint",
                "(double, double) -> double",
                "(string, string) -> string",
                "(bytes, bytes) -> bytes",
                "(list(A), list(A)) -> list(A)",
                "(timestamp, duration) -> timestamp",
                "(duration, timestamp) -> timestamp",
                "(duration, duration) -> duration",
            ],
        ),
        (
            "_-_",
            vec![
                "(int, int) -> int",
                "(uint, uint) -> uint",
                "(double, double) -> double",
                "(timestamp, timestamp) -> duration",
                "(timestamp, duration) -> timestamp",
                "(duration, duration) -> duration",
            ],
        ),
        (
            "_*_",
            vec![
                "(int, int) -> int",
                "(uint, uint) -> uint",
                "(double, double) -> double",
            ],
        ),
        (
            "_/_",
            vec![
                "(int, int) -> int",
                "(uint, uint) -> uint",
                "(double, double) -> double",
            ],
        ),
        ("_%_", vec!["(int, int) -> int", "(uint, uint) -> uint"]),
        ("_[_]", vec!["(list(A), int) -> A", "(map(K, V), K) -> V"]),
        (
            "_[?_]",
            vec![
                "(list(A), int) -> optional(A)",
                "(map(K, V), K) -> optional(V)",
            ],
        ),
        (
            "@in",
            vec!["(A, list(A)) -> bool", "(K, map(K, V)) -> bool"],
        ),
        (
            "size",
            vec![
                "(string) -> int",
                "(bytes) -> int",
                "(list(A)) -> int",
                "(map(K, V)) -> int",
                "string.() -> int",
                "bytes.() -> int",
                "list(A).() -> int",
                "map(K, V).() -> int",
            ],
        ),
        ("contains", vec!["string.(string) -> bool"]),
        ("startsWith", vec!["string.(string) -> bool"]),
        ("endsWith", vec!["string.(string) -> bool"]),
        (
            "matches",
            vec!["(string, string) -> bool", "string.(string) -> bool"],
        ),
        (
            "int",
            vec![
                "(int) -> int",
                "(uint) -> int",
                "(double) -> int",
                "(string) -> int",
                "(timestamp) -> int",
                "(duration) -> int",
            ],
        ),
        (
            "uint",
            vec![
                "(int) -> uint",
                "(uint) -> uint",
                "(double) -> uint",
                "(string) -> uint",
            ],
        ),
        (
            "double",
            vec![
                "(int) -> double",
                "(uint) -> double",
                "(double) -> double",
                "(string) -> double",
            ],
        ),
        (
            "string",
            vec![
                "(int) -> string",
                "(uint) -> string",
                "(double) -> string",
                "(bool) -> string",
                "(bytes) -> string",
                "(string) -> string",
                "(timestamp) -> string",
                "(duration) -> string",
                "(net.IP) -> string",
                "(net.CIDR) -> string",
            ],
        ),
        ("bytes", vec!["(bytes) -> bytes", "(string) -> bytes"]),
        ("bool", vec!["(bool) -> bool", "(string) -> bool"]),
        ("dyn", vec!["(A) -> dyn"]),
        ("type", vec!["(A) -> type(A)"]),
        (
            "duration",
            vec!["(string) -> duration", "(duration) -> duration"],
        ),
        (
            "timestamp",
            vec![
                "(string) -> timestamp",
                "(int) -> timestamp",
                "(timestamp) -> timestamp",
            ],
        ),
        ("optional.of", vec!["(A) -> optional(A)"]),
        ("optional.ofNonZeroValue", vec!["(A) -> optional(A)"]),
        ("optional.none", vec!["() -> optional(dyn)"]),
        ("hasValue", vec!["optional(A).() -> bool"]),
        ("value", vec!["optional(A).() -> A"]),
        ("or", vec!["optional(A).(optional(A)) -> optional(A)"]),
        ("orValue", vec!["optional(A).(A) -> A"]),
        // Strings extension.
        ("charAt", vec!["string.(int) -> string"]),
        (
            "indexOf",
            vec![
                "string.(string) -> int",
                "string.(string, int) -> int",
                "list(A).(A) -> int",
            ],
        ),
        (
            "lastIndexOf",
            vec![
                "string.(string) -> int",
                "string.(string, int) -> int",
                "list(A).(A) -> int",
            ],
        ),
        ("lowerAscii", vec!["string.() -> string"]),
        ("upperAscii", vec!["string.() -> string"]),
        (
            "replace",
            vec![
                "string.(string, string) -> string",
                "string.(string, string, int) -> string",
            ],
        ),
        (
            "split",
            vec![
                "string.(string) -> list(string)",
                "string.(string, int) -> list(string)",
            ],
        ),
        (
            "substring",
            vec!["string.(int) -> string", "string.(int, int) -> string"],
        ),
        ("trim", vec!["string.() -> string"]),
        (
            "join",
            vec![
                "list(string).() -> string",
                "list(string).(string) -> string",
            ],
        ),
        ("format", vec!["string.(list(dyn)) -> string"]),
        ("strings.quote", vec!["(string) -> string"]),
        (
            "reverse",
            vec!["string.() -> string", "list(A).() -> list(A)"],
        ),
        // Lists extension.
        ("slice", vec!["list(A).(int, int) -> list(A)"]),
        (
            "flatten",
            vec!["list(list(A)).() -> list(A)", "list(A).(int) -> list(dyn)"],
        ),
        ("distinct", vec!["list(A).() -> list(A)"]),
        ("lists.range", vec!["(int) -> list(int)"]),
        ("sort", vec!["list(A).() -> list(A)"]),
        ("first", vec!["list(A).() -> optional(A)"]),
        ("last", vec!["list(A).() -> optional(A)"]),
        // Kubernetes: lists.
        ("isSorted", vec!["list(A).() -> bool"]),
        (
            "sum",
            vec![
                "list(int).() -> int",
                "list(uint).() -> uint",
                "list(double).() -> double",
                "list(duration).() -> duration",
            ],
        ),
        ("min", vec!["list(A).() -> A"]),
        ("max", vec!["list(A).() -> A"]),
        // regex.
        ("find", vec!["string.(string) -> string"]),
        (
            "findAll",
            vec![
                "string.(string) -> list(string)",
                "string.(string, int) -> list(string)",
            ],
        ),
        // urls.
        ("url", vec!["(string) -> kubernetes.URL"]),
        ("isURL", vec!["(string) -> bool"]),
        ("getScheme", vec!["kubernetes.URL.() -> string"]),
        ("getHost", vec!["kubernetes.URL.() -> string"]),
        ("getHostname", vec!["kubernetes.URL.() -> string"]),
        ("getPort", vec!["kubernetes.URL.() -> string"]),
        ("getEscapedPath", vec!["kubernetes.URL.() -> string"]),
        (
            "getQuery",
            vec!["kubernetes.URL.() -> map(string, list(string))"],
        ),
        // quantity.
        ("quantity", vec!["(string) -> kubernetes.Quantity"]),
        ("isQuantity", vec!["(string) -> bool"]),
        ("sign", vec!["kubernetes.Quantity.() -> int"]),
        ("isInteger", vec!["kubernetes.Quantity.() -> bool"]),
        ("asInteger", vec!["kubernetes.Quantity.() -> int"]),
        (
            "asApproximateFloat",
            vec!["kubernetes.Quantity.() -> double"],
        ),
        (
            "add",
            vec![
                "kubernetes.Quantity.(kubernetes.Quantity) -> kubernetes.Quantity",
                "kubernetes.Quantity.(int) -> kubernetes.Quantity",
            ],
        ),
        (
            "sub",
            vec![
                "kubernetes.Quantity.(kubernetes.Quantity) -> kubernetes.Quantity",
                "kubernetes.Quantity.(int) -> kubernetes.Quantity",
            ],
        ),
        // Comparisons of quantities and of versions (semver).
        (
            "isLessThan",
            vec![
                "kubernetes.Quantity.(kubernetes.Quantity) -> bool",
                "kubernetes.Semver.(kubernetes.Semver) -> bool",
            ],
        ),
        (
            "isGreaterThan",
            vec![
                "kubernetes.Quantity.(kubernetes.Quantity) -> bool",
                "kubernetes.Semver.(kubernetes.Semver) -> bool",
            ],
        ),
        (
            "compareTo",
            vec![
                "kubernetes.Quantity.(kubernetes.Quantity) -> int",
                "kubernetes.Semver.(kubernetes.Semver) -> int",
            ],
        ),
        // semver.
        (
            "semver",
            vec![
                "(string) -> kubernetes.Semver",
                "(string, bool) -> kubernetes.Semver",
            ],
        ),
        (
            "isSemver",
            vec!["(string) -> bool", "(string, bool) -> bool"],
        ),
        ("major", vec!["kubernetes.Semver.() -> int"]),
        ("minor", vec!["kubernetes.Semver.() -> int"]),
        ("patch", vec!["kubernetes.Semver.() -> int"]),
        // ip.
        ("isIP", vec!["(string) -> bool"]),
        ("ip.isCanonical", vec!["(string) -> bool"]),
        ("family", vec!["net.IP.() -> int"]),
        ("isUnspecified", vec!["net.IP.() -> bool"]),
        ("isLoopback", vec!["net.IP.() -> bool"]),
        ("isLinkLocalMulticast", vec!["net.IP.() -> bool"]),
        ("isLinkLocalUnicast", vec!["net.IP.() -> bool"]),
        ("isGlobalUnicast", vec!["net.IP.() -> bool"]),
        // cidr.
        ("cidr", vec!["(string) -> net.CIDR"]),
        ("isCIDR", vec!["(string) -> bool"]),
        (
            "containsIP",
            vec!["net.CIDR.(string) -> bool", "net.CIDR.(net.IP) -> bool"],
        ),
        (
            "containsCIDR",
            vec!["net.CIDR.(string) -> bool", "net.CIDR.(net.CIDR) -> bool"],
        ),
        ("masked", vec!["net.CIDR.() -> net.CIDR"]),
        ("prefixLength", vec!["net.CIDR.() -> int"]),
        // sets.
        ("sets.contains", vec!["(list(A), list(A)) -> bool"]),
        ("sets.equivalent", vec!["(list(A), list(A)) -> bool"]),
        ("sets.intersects", vec!["(list(A), list(A)) -> bool"]),
        // format.
        (
            "format.named",
            vec!["(string) -> optional(kubernetes.NamedFormat)"],
        ),
        (
            "validate",
            vec!["kubernetes.NamedFormat.(string) -> optional(list(string))"],
        ),
        // authz (the `authorizer` variable's checks).
        (
            "path",
            vec![
                "kubernetes.authorization.Authorizer.(string) -> kubernetes.authorization.PathCheck",
            ],
        ),
        (
            "group",
            vec![
                "kubernetes.authorization.Authorizer.(string) -> kubernetes.authorization.GroupCheck",
            ],
        ),
        (
            "serviceAccount",
            vec![
                "kubernetes.authorization.Authorizer.(string, string) -> kubernetes.authorization.Authorizer",
            ],
        ),
        (
            "resource",
            vec![
                "kubernetes.authorization.GroupCheck.(string) -> kubernetes.authorization.ResourceCheck",
            ],
        ),
        (
            "check",
            vec![
                "kubernetes.authorization.PathCheck.(string) -> kubernetes.authorization.Decision",
                "kubernetes.authorization.ResourceCheck.(string) -> kubernetes.authorization.Decision",
            ],
        ),
        (
            "allowed",
            vec!["kubernetes.authorization.Decision.() -> bool"],
        ),
        (
            "errored",
            vec!["kubernetes.authorization.Decision.() -> bool"],
        ),
        (
            "reason",
            vec!["kubernetes.authorization.Decision.() -> string"],
        ),
        (
            "error",
            vec!["kubernetes.authorization.Decision.() -> string"],
        ),
    ];
    for builder in [
        "subresource",
        "namespace",
        "name",
        "fieldSelector",
        "labelSelector",
    ] {
        t.push((
            builder,
            vec!["kubernetes.authorization.ResourceCheck.(string) -> kubernetes.authorization.ResourceCheck"],
        ));
    }
    // `ip` is both the IP constructor and a CIDR's address.
    t.push(("ip", vec!["(string) -> net.IP", "net.CIDR.() -> net.IP"]));
    for op in ["_<_", "_<=_", "_>_", "_>=_"] {
        t.push((op, COMPARABLE.to_vec()));
    }
    for getter in TIME_GETTERS {
        t.push((
            getter,
            vec!["timestamp.() -> int", "timestamp.(string) -> int"],
        ));
    }
    for getter in CLOCK_GETTERS {
        t.push((
            getter,
            vec![
                "timestamp.() -> int",
                "timestamp.(string) -> int",
                "duration.() -> int",
            ],
        ));
    }
    t
}

static OVERLOADS: LazyLock<HashMap<&'static str, Vec<Overload>>> = LazyLock::new(|| {
    let mut map: HashMap<&'static str, Vec<Overload>> = HashMap::new();
    for (name, signatures) in table() {
        let entry = map.entry(name).or_default();
        entry.extend(signatures.into_iter().filter_map(parse_signature));
    }
    for name in crate::names::FORMAT_CONSTANTS {
        map.entry(name).or_default().push(Overload {
            member: false,
            params: Vec::new(),
            result: Type::Opaque("kubernetes.NamedFormat", Vec::new()),
        });
    }
    map
});

/// The overloads of `function`, when the table lists it.
pub(crate) fn of(function: &str) -> Option<&'static [Overload]> {
    OVERLOADS.get(function).map(Vec::as_slice)
}

/// Reads `(T, U) -> R` or `T.(U) -> R`.
fn parse_signature(text: &'static str) -> Option<Overload> {
    let (params, result) = text.split_once(" -> ")?;
    let result = parse_type(result.trim())?;
    let (target, list) = match params.rfind(".(") {
        Some(at) if !params.starts_with('(') => (Some(&params[..at]), &params[at + 1..]),
        _ => (None, params),
    };
    let inner = list.strip_prefix('(')?.strip_suffix(')')?;
    let mut types = Vec::new();
    if let Some(target) = target {
        types.push(parse_type(target)?);
    }
    for part in split_top(inner) {
        types.push(parse_type(part)?);
    }
    Some(Overload {
        member: target.is_some(),
        params: types,
        result,
    })
}

/// The comma-separated parts of `text` at the top level of parentheses.
fn split_top(text: &'static str) -> Vec<&'static str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() {
        parts.push(last);
    }
    parts
}

fn parse_type(text: &'static str) -> Option<Type> {
    if let Some(open) = text.find('(') {
        let name = &text[..open];
        let args: Vec<Type> = split_top(text[open + 1..].strip_suffix(')')?)
            .into_iter()
            .map(parse_type)
            .collect::<Option<_>>()?;
        return match (name, args.as_slice()) {
            ("list", [e]) => Some(Type::list(e.clone())),
            ("map", [k, v]) => Some(Type::map(k.clone(), v.clone())),
            ("type", [t]) => Some(Type::Type(Box::new(t.clone()))),
            ("optional", [t]) => Some(Type::optional(t.clone())),
            _ => None,
        };
    }
    Some(match text {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null" => Type::Null,
        "dyn" => Type::Dyn,
        "timestamp" => Type::Timestamp,
        "duration" => Type::Duration,
        "A" | "B" | "K" | "V" => Type::Param(text),
        opaque => Type::Opaque(opaque, Vec::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signature_reads() {
        for (name, signatures) in table() {
            for signature in signatures {
                assert!(parse_signature(signature).is_some(), "{name}: {signature}");
            }
        }
        let contains = &of("containsIP").unwrap()[1];
        assert!(contains.member);
        assert_eq!(contains.params[0].to_string(), "net.CIDR");
        assert_eq!(contains.params[1].to_string(), "net.IP");
        let join = &of("join").unwrap()[0];
        assert_eq!(join.params[0].to_string(), "list(string)");
    }
}
