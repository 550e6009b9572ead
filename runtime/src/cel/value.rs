//! A JSON value as the CEL value a rule sees, driven by the structural schema it is under, as
//! upstream's `UnstructuredToVal` maps it:
//!
//! - an object with `properties` is a map of its fields, each name escaped as upstream's
//!   `cel.Escape` does (`x-y` is `x__dash__y`, a CEL keyword `namespace` is `__namespace__`;
//!   a name that cannot be escaped, such as one starting with a digit, is left out);
//! - an object with `additionalProperties` is a map of its keys as written;
//! - the root and `x-kubernetes-embedded-resource` objects show `apiVersion`, `kind` and
//!   `metadata` with only `name` and `generateName` (`WithTypeAndObjectMeta`);
//! - `x-kubernetes-int-or-string` is an int or a string; `type: number` is a double, also when
//!   written as an integer;
//! - strings of `format: byte` are bytes, of `format: duration` durations and of
//!   `format: date-time` (or `date`) timestamps;
//! - under `x-kubernetes-preserve-unknown-fields` and where there is no schema, values map by
//!   their JSON type.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/common/values.go`, `k8s.io/apiserver/pkg/cel/escaping.go`,
//! `k8s.io/apiserver/pkg/cel/common/schemas.go`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use cel::Value as Cel;
use cel::common::types::{
    CelBool, CelBytes, CelDouble, CelDuration, CelInt, CelList, CelMap, CelMapKey, CelNull,
    CelString, CelTimestamp, CelUInt,
};
use cel::common::value::Val;
use cel::objects::{Key, Map};
use serde_json::Value;

use super::shared::Shared;
use crate::schema::{JSONSchemaProps, JSONSchemaPropsOrBool};

/// CEL's reserved words (a property of that name is `__<name>__` in CEL, and no variable may
/// be named so) and a property name as CEL spells it (upstream's `cel.Escape`).
pub(crate) use kapi_cel_check::names::RESERVED;
pub use kapi_cel_check::names::escape;

/// `value` as the CEL value of a node with `schema`; `resource` says it is the root of an
/// object or an embedded resource.
pub fn to_cel(schema: Option<&JSONSchemaProps>, value: &Value, resource: bool) -> Cel {
    build(schema, value, resource)
}

/// [`to_cel`] as the crate's values themselves, borrowing `value`'s strings: what a rule's
/// `self` is bound to without converting a [`Cel`] a second time.
pub fn to_val<'v>(
    schema: Option<&JSONSchemaProps>,
    value: &'v Value,
    resource: bool,
) -> Box<dyn Val + 'v> {
    build(schema, value, resource)
}

/// A value with no schema (or under `x-kubernetes-preserve-unknown-fields`): by JSON type.
pub fn untyped(value: &Value) -> Cel {
    build_untyped(value)
}

/// What the mapping builds: the crate's [`Cel`] values, or its [`Val`]s.
trait Build<'v>: Sized {
    fn null() -> Self;
    fn bool(b: bool) -> Self;
    fn int(i: i64) -> Self;
    fn uint(u: u64) -> Self;
    fn double(f: f64) -> Self;
    fn string(text: &'v str) -> Self;
    fn bytes(bytes: Vec<u8>) -> Self;
    fn duration(d: chrono::Duration) -> Self;
    fn timestamp(t: chrono::DateTime<chrono::FixedOffset>) -> Self;
    fn list(items: Vec<Self>) -> Self;
    fn map(entries: Vec<(Cow<'v, str>, Self)>) -> Self;
}

impl<'v> Build<'v> for Cel {
    fn null() -> Self {
        Cel::Null
    }
    fn bool(b: bool) -> Self {
        Cel::Bool(b)
    }
    fn int(i: i64) -> Self {
        Cel::Int(i)
    }
    fn uint(u: u64) -> Self {
        Cel::UInt(u)
    }
    fn double(f: f64) -> Self {
        Cel::Float(f)
    }
    fn string(text: &'v str) -> Self {
        Cel::String(Arc::new(text.to_owned()))
    }
    fn bytes(bytes: Vec<u8>) -> Self {
        Cel::Bytes(Arc::new(bytes))
    }
    fn duration(d: chrono::Duration) -> Self {
        Cel::Duration(d)
    }
    fn timestamp(t: chrono::DateTime<chrono::FixedOffset>) -> Self {
        Cel::Timestamp(t)
    }
    fn list(items: Vec<Self>) -> Self {
        Cel::List(Arc::new(items))
    }
    fn map(entries: Vec<(Cow<'v, str>, Self)>) -> Self {
        let map: HashMap<Key, Cel> = entries
            .into_iter()
            .map(|(key, value)| (Key::String(Arc::new(key.into_owned())), value))
            .collect();
        Cel::Map(Map { map: Arc::new(map) })
    }
}

impl<'v> Build<'v> for Box<dyn Val + 'v> {
    fn null() -> Self {
        Box::new(CelNull)
    }
    fn bool(b: bool) -> Self {
        Box::new(CelBool::from(b))
    }
    fn int(i: i64) -> Self {
        Box::new(CelInt::from(i))
    }
    fn uint(u: u64) -> Self {
        Box::new(CelUInt::from(u))
    }
    fn double(f: f64) -> Self {
        Box::new(CelDouble::from(f))
    }
    fn string(text: &'v str) -> Self {
        Box::new(CelString::from(text))
    }
    fn bytes(bytes: Vec<u8>) -> Self {
        Box::new(CelBytes::from(bytes))
    }
    fn duration(d: chrono::Duration) -> Self {
        Box::new(CelDuration::from(d))
    }
    fn timestamp(t: chrono::DateTime<chrono::FixedOffset>) -> Self {
        Box::new(CelTimestamp::from(t))
    }
    // Lists and maps are shared: the interpreter clones each element a comprehension visits.
    fn list(items: Vec<Self>) -> Self {
        Box::new(Shared::new(CelList::from(items)))
    }
    fn map(entries: Vec<(Cow<'v, str>, Self)>) -> Self {
        let map: HashMap<CelMapKey<'v>, Self> = entries
            .into_iter()
            .map(|(key, value)| (CelMapKey::String(CelString::from(key)), value))
            .collect();
        Box::new(Shared::new(CelMap::from(map)))
    }
}

fn build<'v, B: Build<'v>>(
    schema: Option<&JSONSchemaProps>,
    value: &'v Value,
    resource: bool,
) -> B {
    let Some(schema) = schema else {
        return build_untyped(value);
    };
    match value {
        Value::Null => B::null(),
        Value::Bool(b) => B::bool(*b),
        Value::Number(n) => {
            if schema.type_.as_deref() == Some("number") {
                return B::double(n.as_f64().unwrap_or_default());
            }
            number(n)
        }
        Value::String(text) => string(schema, text),
        Value::Array(items) => {
            let item_schema = schema.items_schema();
            let embedded = item_schema.is_some_and(|s| s.x_kubernetes_embedded_resource);
            B::list(
                items
                    .iter()
                    .map(|item| build(item_schema, item, embedded))
                    .collect(),
            )
        }
        Value::Object(fields) => {
            if schema.properties.is_empty()
                && let Some(extra) = schema.additional_properties.as_deref()
            {
                let extra = match extra {
                    JSONSchemaPropsOrBool::Schema(s) => Some(s),
                    JSONSchemaPropsOrBool::Allows(_) => None,
                };
                let embedded = extra.is_some_and(|s| s.x_kubernetes_embedded_resource);
                return B::map(
                    fields
                        .iter()
                        .map(|(key, child)| {
                            (Cow::Borrowed(key.as_str()), build(extra, child, embedded))
                        })
                        .collect(),
                );
            }
            let mut entries = Vec::with_capacity(fields.len());
            for (key, child) in fields {
                if resource && matches!(key.as_str(), "apiVersion" | "kind") {
                    entries.push((Cow::Borrowed(key.as_str()), build_untyped(child)));
                    continue;
                }
                if resource && key == "metadata" {
                    entries.push((Cow::Borrowed(key.as_str()), type_meta(child)));
                    continue;
                }
                let Some(name) = escape(key) else {
                    continue;
                };
                let value = match schema.properties.get(key) {
                    Some(p) => build(Some(p), child, p.x_kubernetes_embedded_resource),
                    None => build_untyped(child),
                };
                entries.push((name, value));
            }
            B::map(entries)
        }
    }
}

/// The metadata a rule sees of a resource: its `name` and `generateName`.
fn type_meta<'v, B: Build<'v>>(metadata: &'v Value) -> B {
    let entries = ["name", "generateName"]
        .into_iter()
        .filter_map(|key| match metadata.get(key) {
            Some(Value::String(text)) => Some((Cow::Borrowed(key), B::string(text))),
            _ => None,
        })
        .collect();
    B::map(entries)
}

fn number<'v, B: Build<'v>>(n: &serde_json::Number) -> B {
    if let Some(i) = n.as_i64() {
        B::int(i)
    } else if let Some(u) = n.as_u64() {
        B::uint(u)
    } else {
        B::double(n.as_f64().unwrap_or_default())
    }
}

fn string<'v, B: Build<'v>>(schema: &JSONSchemaProps, text: &'v str) -> B {
    if schema.x_kubernetes_int_or_string {
        return B::string(text);
    }
    let parsed = match schema.format.as_deref() {
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()
            .map(B::bytes),
        Some("duration") => text
            .parse::<crate::Duration>()
            .ok()
            .map(|d| B::duration(chrono::Duration::nanoseconds(d.as_nanos()))),
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(text)
            .ok()
            .map(B::timestamp),
        Some("date") => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| B::timestamp(t.and_utc().fixed_offset())),
        _ => None,
    };
    parsed.unwrap_or_else(|| B::string(text))
}

fn build_untyped<'v, B: Build<'v>>(value: &'v Value) -> B {
    match value {
        Value::Null => B::null(),
        Value::Bool(b) => B::bool(*b),
        Value::Number(n) => number(n),
        Value::String(s) => B::string(s),
        Value::Array(items) => B::list(items.iter().map(build_untyped).collect()),
        Value::Object(fields) => B::map(
            fields
                .iter()
                .map(|(k, v)| (Cow::Borrowed(k.as_str()), build_untyped(v)))
                .collect(),
        ),
    }
}

/// A CEL value as cel-go prints one in an error (`index out of bounds: 3`).
pub fn display(value: &Cel) -> String {
    match value {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        Cel::Float(f) => f.to_string(),
        Cel::String(s) => s.to_string(),
        Cel::Bool(b) => b.to_string(),
        Cel::Null => "null".to_owned(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // Upstream: k8s.io/apiserver/pkg/cel/escaping_test.go (TestEscaping).
    #[test]
    fn names_are_escaped_as_upstream_escapes_them() {
        let cases = [
            ("foo", Some("foo")),
            ("namespace", Some("__namespace__")),
            ("x-y", Some("x__dash__y")),
            ("a.b", Some("a__dot__b")),
            ("a/b", Some("a__slash__b")),
            ("a__b", Some("a__underscores__b")),
            ("_x", Some("_x")),
            ("1x", None),
            ("a b", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(escape(name).as_deref(), want, "{name}");
        }
    }

    fn schema(value: Value) -> JSONSchemaProps {
        serde_json::from_value(value).expect("schema")
    }

    #[test]
    fn values_map_by_their_schema() {
        let s = schema(json!({
            "type": "object",
            "properties": {
                "ratio": {"type": "number"},
                "port": {"x-kubernetes-int-or-string": true},
                "when": {"type": "string", "format": "date-time"},
                "ttl": {"type": "string", "format": "duration"},
                "data": {"type": "string", "format": "byte"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "x-y": {"type": "string"},
                "1st": {"type": "string"}
            }
        }));
        let object = json!({
            "apiVersion": "v1", "kind": "K",
            "metadata": {"name": "n", "namespace": "ns", "labels": {"a": "b"}},
            "ratio": 1, "port": "http", "when": "2024-01-02T03:04:05Z", "ttl": "1m30s",
            "data": "aGk=", "labels": {"x-y": "z"}, "x-y": "dash", "1st": "gone"
        });
        let Cel::Map(map) = to_cel(Some(&s), &object, true) else {
            panic!("object maps to a map");
        };
        let get = |k: &str| map.map.get(&Key::String(Arc::new(k.to_owned()))).cloned();
        assert_eq!(get("ratio"), Some(Cel::Float(1.0)));
        assert_eq!(get("port"), Some(Cel::String(Arc::new("http".into()))));
        assert!(matches!(get("when"), Some(Cel::Timestamp(_))));
        assert_eq!(
            get("ttl"),
            Some(Cel::Duration(chrono::Duration::seconds(90)))
        );
        assert_eq!(get("data"), Some(Cel::Bytes(Arc::new(b"hi".to_vec()))));
        assert!(get("x__dash__y").is_some());
        assert_eq!(get("1st"), None);
        let Some(Cel::Map(labels)) = get("labels") else {
            panic!("labels map");
        };
        assert!(
            labels
                .map
                .contains_key(&Key::String(Arc::new("x-y".into())))
        );
        let Some(Cel::Map(metadata)) = get("metadata") else {
            panic!("metadata map");
        };
        assert_eq!(metadata.map.len(), 1, "only name and generateName are seen");
        // The crate's own values, made straight from the JSON, are the same values.
        let direct = Cel::try_from(to_val(Some(&s), &object, true).as_ref()).unwrap();
        assert_eq!(direct, Cel::Map(map));
        let free = json!({"a": [1, 2.5, "x", null, true, {"b": {}}], "c-d": -3});
        assert_eq!(
            Cel::try_from(to_val(None, &free, false).as_ref()).unwrap(),
            untyped(&free)
        );
    }
}
