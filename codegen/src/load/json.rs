//! Typed accessors over `serde_json::Value` that fail with the file and JSON pointer.
//!
//! Every loader reads documents through these instead of indexing, so no input can panic and every
//! type mismatch reports where it is.

use serde_json::{Map, Value};

use super::error::{Cx, LoadError, Ptr, json_type};

pub(crate) type Obj = Map<String, Value>;

/// The value as an object.
pub(crate) fn object<'v>(cx: &Cx<'_>, v: &'v Value, at: &Ptr<'_>) -> Result<&'v Obj, LoadError> {
    v.as_object()
        .ok_or_else(|| cx.invalid(at, format!("expected an object, found {}", json_type(v))))
}

/// An optional member that must be an object when present.
pub(crate) fn opt_object<'v>(
    cx: &Cx<'_>,
    m: &'v Obj,
    key: &str,
    at: &Ptr<'_>,
) -> Result<Option<&'v Obj>, LoadError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => object(cx, v, &at.key(key)).map(Some),
    }
}

/// A member that must be present and an object.
pub(crate) fn req_object<'v>(
    cx: &Cx<'_>,
    m: &'v Obj,
    key: &str,
    at: &Ptr<'_>,
) -> Result<&'v Obj, LoadError> {
    opt_object(cx, m, key, at)?.ok_or_else(|| cx.invalid(at, format!("missing {key}")))
}

/// An optional string member.
pub(crate) fn opt_str<'v>(
    cx: &Cx<'_>,
    m: &'v Obj,
    key: &str,
    at: &Ptr<'_>,
) -> Result<Option<&'v str>, LoadError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(cx.invalid(
            &at.key(key),
            format!("expected a string, found {}", json_type(v)),
        )),
    }
}

/// A string member that must be present and non-empty.
pub(crate) fn req_str<'v>(
    cx: &Cx<'_>,
    m: &'v Obj,
    key: &str,
    at: &Ptr<'_>,
) -> Result<&'v str, LoadError> {
    match opt_str(cx, m, key, at)? {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(cx.invalid(at, format!("missing {key}"))),
    }
}

/// An optional boolean member (absent = false).
pub(crate) fn flag(cx: &Cx<'_>, m: &Obj, key: &str, at: &Ptr<'_>) -> Result<bool, LoadError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(cx.invalid(
            &at.key(key),
            format!("expected a boolean, found {}", json_type(v)),
        )),
    }
}

/// An optional array member (absent = empty).
pub(crate) fn array<'v>(
    cx: &Cx<'_>,
    m: &'v Obj,
    key: &str,
    at: &Ptr<'_>,
) -> Result<&'v [Value], LoadError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(v) => Err(cx.invalid(
            &at.key(key),
            format!("expected an array, found {}", json_type(v)),
        )),
    }
}

/// An optional array of strings (absent = empty).
pub(crate) fn strings(
    cx: &Cx<'_>,
    m: &Obj,
    key: &str,
    at: &Ptr<'_>,
) -> Result<Vec<String>, LoadError> {
    let here = at.key(key);
    array(cx, m, key, at)?
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(cx.invalid(
                &here.index(i),
                format!("expected a string, found {}", json_type(other)),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::error::Source;

    #[test]
    fn mismatches_report_the_member() {
        let source = Source::file("x.json".as_ref());
        let cx = Cx {
            source: &source,
            what: "spec",
        };
        let v: Value = serde_json::json!({"a": 1, "b": ["x", 2], "c": "s"});
        let root = Ptr::Root;
        let m = object(&cx, &v, &root).expect("object");
        let cases: Vec<(Result<(), LoadError>, &str)> = vec![
            (
                opt_str(&cx, m, "a", &root).map(drop),
                "invalid spec at x.json #/a: expected a string, found a number",
            ),
            (
                strings(&cx, m, "b", &root).map(drop),
                "invalid spec at x.json #/b/1: expected a string, found a number",
            ),
            (
                flag(&cx, m, "c", &root).map(drop),
                "invalid spec at x.json #/c: expected a boolean, found a string",
            ),
            (
                req_str(&cx, m, "missing", &root).map(drop),
                "invalid spec at x.json #: missing missing",
            ),
            (
                req_object(&cx, m, "c", &root).map(drop),
                "invalid spec at x.json #/c: expected an object, found a string",
            ),
        ];
        for (result, want) in cases {
            match result {
                Err(e) => assert_eq!(e.to_string(), want),
                Ok(()) => panic!("expected error {want}"),
            }
        }
        assert_eq!(opt_str(&cx, m, "c", &root).expect("ok"), Some("s"));
        assert!(array(&cx, m, "absent", &root).expect("ok").is_empty());
    }
}
