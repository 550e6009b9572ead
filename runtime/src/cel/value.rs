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

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use cel::Value as Cel;
use cel::objects::{Key, Map};
use serde_json::Value;

use crate::schema::{JSONSchemaProps, JSONSchemaPropsOrBool};

/// CEL's reserved words (a property of that name is `__<name>__` in CEL, and no variable may
/// be named so) and a property name as CEL spells it (upstream's `cel.Escape`).
pub(crate) use kapi_cel_check::names::RESERVED;
pub use kapi_cel_check::names::escape;

/// `value` as the CEL value of a node with `schema`; `resource` says it is the root of an
/// object or an embedded resource.
pub fn to_cel(schema: Option<&JSONSchemaProps>, value: &Value, resource: bool) -> Cel {
    let Some(schema) = schema else {
        return untyped(value);
    };
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            if schema.type_.as_deref() == Some("number") {
                return Cel::Float(n.as_f64().unwrap_or_default());
            }
            number(n)
        }
        Value::String(text) => string(schema, text),
        Value::Array(items) => {
            let item_schema = schema.items_schema();
            Cel::List(Arc::new(
                items
                    .iter()
                    .map(|item| {
                        let embedded =
                            item_schema.is_some_and(|s| s.x_kubernetes_embedded_resource);
                        to_cel(item_schema, item, embedded)
                    })
                    .collect(),
            ))
        }
        Value::Object(fields) => {
            let mut map: HashMap<Key, Cel> = HashMap::with_capacity(fields.len());
            if schema.properties.is_empty()
                && let Some(extra) = schema.additional_properties.as_deref()
            {
                let extra = match extra {
                    JSONSchemaPropsOrBool::Schema(s) => Some(s),
                    JSONSchemaPropsOrBool::Allows(_) => None,
                };
                for (key, child) in fields {
                    let embedded = extra.is_some_and(|s| s.x_kubernetes_embedded_resource);
                    map.insert(
                        Key::String(Arc::new(key.clone())),
                        to_cel(extra, child, embedded),
                    );
                }
                return Cel::Map(Map { map: Arc::new(map) });
            }
            for (key, child) in fields {
                if resource && matches!(key.as_str(), "apiVersion" | "kind") {
                    map.insert(Key::String(Arc::new(key.clone())), untyped(child));
                    continue;
                }
                if resource && key == "metadata" {
                    map.insert(Key::String(Arc::new(key.clone())), type_meta(child));
                    continue;
                }
                let Some(name) = escape(key) else {
                    continue;
                };
                let property = schema.properties.get(key);
                let value = match property {
                    Some(p) => to_cel(Some(p), child, p.x_kubernetes_embedded_resource),
                    None => untyped(child),
                };
                map.insert(Key::String(Arc::new(name)), value);
            }
            Cel::Map(Map { map: Arc::new(map) })
        }
    }
}

/// The metadata a rule sees of a resource: its `name` and `generateName`.
fn type_meta(metadata: &Value) -> Cel {
    let mut map = HashMap::new();
    for key in ["name", "generateName"] {
        if let Some(Value::String(text)) = metadata.get(key) {
            map.insert(
                Key::String(Arc::new(key.to_owned())),
                Cel::String(Arc::new(text.clone())),
            );
        }
    }
    Cel::Map(Map { map: Arc::new(map) })
}

fn number(n: &serde_json::Number) -> Cel {
    if let Some(i) = n.as_i64() {
        Cel::Int(i)
    } else if let Some(u) = n.as_u64() {
        Cel::UInt(u)
    } else {
        Cel::Float(n.as_f64().unwrap_or_default())
    }
}

fn string(schema: &JSONSchemaProps, text: &str) -> Cel {
    let plain = || Cel::String(Arc::new(text.to_owned()));
    if schema.x_kubernetes_int_or_string {
        return plain();
    }
    match schema.format.as_deref() {
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(|bytes| Cel::Bytes(Arc::new(bytes)))
            .unwrap_or_else(|_| plain()),
        Some("duration") => text
            .parse::<crate::Duration>()
            .map(|d| Cel::Duration(chrono::Duration::nanoseconds(d.as_nanos())))
            .unwrap_or_else(|_| plain()),
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(text)
            .map(Cel::Timestamp)
            .unwrap_or_else(|_| plain()),
        Some("date") => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| Cel::Timestamp(t.and_utc().fixed_offset()))
            .unwrap_or_else(plain),
        _ => plain(),
    }
}

/// A value with no schema (or under `x-kubernetes-preserve-unknown-fields`): by JSON type.
pub fn untyped(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => number(n),
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(untyped).collect())),
        Value::Object(fields) => Cel::Map(Map {
            map: Arc::new(
                fields
                    .iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), untyped(v)))
                    .collect(),
            ),
        }),
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
    }
}
