//! The names the environment declares, which the checker knows without types: the functions of
//! the `cel` crate's standard library and extensions and of Kubernetes' libraries, the
//! identifiers that name types, CEL's reserved words, how a property name is spelled in CEL,
//! and cel-go's text for a name nothing declares.
//!
//! The runtime registers an implementation for each of these functions (`kapi::cel::library`);
//! its tests hold the two lists together.
//!
//! Upstream: cel-go `checker/checker.go` (`undeclared reference to '%s' (in container '%s')`),
//! k8s `apiserver/pkg/cel/escaping.go` (`Escape`), `apiserver/pkg/cel/library/`.

use std::borrow::Cow;

/// The functions of the crate's standard library and its strings and lists extensions, as
/// they are called in CEL.
const CRATE_FUNCTIONS: &[&str] = &[
    // Standard library.
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "hasValue",
    "value",
    "or",
    "orValue",
    // Strings extension.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "strings.quote",
    "reverse",
    // Lists extension.
    "slice",
    "flatten",
    "distinct",
    "lists.range",
    "sort",
    "sortBy",
    "first",
    "last",
];

/// Identifiers that name types, usable as values (`type(x) == string`).
pub const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
];

/// Whether the environment has the function `name` (as CEL calls it): an operator, one of the
/// crate's or a library's.
pub fn is_function(name: &str) -> bool {
    name.starts_with('_')
        || name.starts_with('@')
        || name.starts_with('!')
        || name == "-_"
        || CRATE_FUNCTIONS.contains(&name)
        || library_declares(name)
}

/// cel-go's error for a name nothing declares.
pub fn undeclared(name: &str) -> String {
    format!("undeclared reference to '{name}' (in container '')")
}

/// The functions the libraries declare, as CEL calls them (with [`FORMAT_CONSTANTS`] and
/// [`AUTHZ_FUNCTIONS`], the whole list is [`library_declares`]).
pub const LIBRARY_FUNCTIONS: &[&str] = &[
    // lists
    "isSorted",
    "sum",
    "min",
    "max",
    // regex
    "find",
    "findAll",
    // urls
    "isURL",
    "url",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    // quantity
    "isQuantity",
    "quantity",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "sign",
    "add",
    "sub",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    // semver (its comparisons are quantity's names)
    "isSemver",
    "semver",
    "major",
    "minor",
    "patch",
    // ip
    "isIP",
    "ip",
    "ip.isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    // cidr
    "isCIDR",
    "cidr",
    "containsIP",
    "containsCIDR",
    "masked",
    "prefixLength",
    // sets
    "sets.contains",
    "sets.equivalent",
    "sets.intersects",
    // format
    "format.named",
    "validate",
];

/// Whether one of Kubernetes' libraries declares the function `name` (as CEL calls it).
pub fn library_declares(name: &str) -> bool {
    LIBRARY_FUNCTIONS.contains(&name)
        || FORMAT_CONSTANTS.contains(&name)
        || AUTHZ_FUNCTIONS.contains(&name)
}

/// The named formats of the format library, `format.<name>()` as CEL writes them, each a
/// function of no arguments.
pub const FORMAT_CONSTANTS: [&str; 13] = [
    "format.dns1123Label",
    "format.dns1123Subdomain",
    "format.dns1035Label",
    "format.qualifiedName",
    "format.dns1123LabelPrefix",
    "format.dns1123SubdomainPrefix",
    "format.dns1035LabelPrefix",
    "format.labelValue",
    "format.uri",
    "format.uuid",
    "format.byte",
    "format.date",
    "format.datetime",
];

/// The functions of the authorization library (admission policies' `authorizer`), as CEL
/// calls them.
pub const AUTHZ_FUNCTIONS: &[&str] = &[
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "fieldSelector",
    "labelSelector",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
];

/// CEL's reserved words: a property of that name is `__<name>__` in CEL, and no variable may
/// be named so.
pub const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as CEL spells it, or `None` when it has no CEL spelling (upstream's
/// `cel.Escape`). Most names need no escaping and are handed back as they are.
pub fn escape(name: &str) -> Option<Cow<'_, str>> {
    let first = name.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(Cow::Owned(format!("__{name}__")));
    }
    let mut plain = true;
    for c in name.chars() {
        match c {
            '.' | '-' | '/' => plain = false,
            c if c.is_ascii_alphanumeric() || c == '_' => {}
            _ => return None,
        }
    }
    if plain && !name.contains("__") {
        return Some(Cow::Borrowed(name));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            other => out.push(other),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(Cow::Owned(out))
}
