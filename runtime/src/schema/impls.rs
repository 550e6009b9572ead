//! [`Schema`] for the standard library types Kubernetes can express and for kapi's own types.
//!
//! Shapes follow what controller-gen emits for the equivalent Go types, so a CRD derived here
//! reads like one generated for a Go operator: `int32`/`int64` formats, `date-time` for times,
//! the int-or-string `anyOf` for `IntOrString` and `Quantity`, `byte` for base64 data.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::{__private::wrap_in, JSONSchemaProps, Schema};
use crate::merge::{TypeInfo, Wrap};
use crate::meta::{Condition, LabelSelector, LabelSelectorRequirement, ObjectMeta};
use crate::{ByteString, Duration, IntOrString, MicroTime, Quantity, RawExtension, Time};

impl Schema for bool {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::typed("boolean")
    }
}

macro_rules! integers {
    ($($ty:ty => $format:literal, $min:expr;)*) => {$(
        impl Schema for $ty {
            fn schema() -> JSONSchemaProps {
                JSONSchemaProps {
                    minimum: $min,
                    ..JSONSchemaProps::integer($format)
                }
            }
        }
    )*};
}

// Unsigned types carry `minimum: 0` so the server enforces what the Rust type does. `u64`,
// `usize` and 128-bit types have no impl: their range exceeds int64 (or varies by platform).
integers! {
    i8 => "int32", None;
    i16 => "int32", None;
    i32 => "int32", None;
    i64 => "int64", None;
    u8 => "int32", Some(0.0);
    u16 => "int32", Some(0.0);
    u32 => "int64", Some(0.0);
}

impl Schema for f32 {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps {
            format: Some("float".to_owned()),
            ..JSONSchemaProps::typed("number")
        }
    }
}

impl Schema for f64 {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps {
            format: Some("double".to_owned()),
            ..JSONSchemaProps::typed("number")
        }
    }
}

impl Schema for crate::Number {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::typed("number")
    }
}

impl Schema for String {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::string()
    }
}

impl Schema for std::borrow::Cow<'static, str> {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::string()
    }
}

impl<T: Schema> Schema for Option<T> {
    // `null` is pruned by the server for non-nullable fields, so `None` needs no `nullable`:
    // it is written as an absent field (or pruned when written as `null`).
    const OPTIONAL: bool = true;
    const MERGE: Option<&'static TypeInfo> = T::MERGE;
    const MERGE_WRAP: &'static [Wrap] = T::MERGE_WRAP;

    fn schema() -> JSONSchemaProps {
        T::schema()
    }
}

impl<T: Schema> Schema for Box<T> {
    const OPTIONAL: bool = T::OPTIONAL;
    const MERGE: Option<&'static TypeInfo> = T::MERGE;
    const MERGE_WRAP: &'static [Wrap] = T::MERGE_WRAP;

    fn schema() -> JSONSchemaProps {
        T::schema()
    }
}

impl<T: Schema> Schema for Arc<T> {
    const OPTIONAL: bool = T::OPTIONAL;
    const MERGE: Option<&'static TypeInfo> = T::MERGE;
    const MERGE_WRAP: &'static [Wrap] = T::MERGE_WRAP;

    fn schema() -> JSONSchemaProps {
        T::schema()
    }
}

impl<T: Schema> Schema for Vec<T> {
    const MERGE: Option<&'static TypeInfo> = T::MERGE;
    const MERGE_WRAP: &'static [Wrap] = wrap_in(Wrap::List, T::MERGE_WRAP);

    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::array(T::schema())
    }
}

macro_rules! sets {
    ($($set:ident),*) => {$(
        impl<T: Schema> Schema for $set<T> {
            fn schema() -> JSONSchemaProps {
                JSONSchemaProps {
                    x_kubernetes_list_type: Some("set".to_owned()),
                    ..JSONSchemaProps::array(T::schema())
                }
            }
        }
    )*};
}
sets!(BTreeSet, HashSet);

/// A type a JSON object key can be: maps with other keys have no structural schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a map key in a Kubernetes schema",
    label = "JSON object keys are strings",
    note = "use `String` keys, or a list of named items (`x-kubernetes-list-type: map`)"
)]
pub trait MapKey {}
impl MapKey for String {}
impl MapKey for std::borrow::Cow<'static, str> {}

macro_rules! maps {
    ($($map:ident),*) => {$(
        impl<K: MapKey, V: Schema, S> Schema for $map<K, V, S> {
            const MERGE: Option<&'static TypeInfo> = V::MERGE;
            const MERGE_WRAP: &'static [Wrap] = wrap_in(Wrap::Map, V::MERGE_WRAP);

            fn schema() -> JSONSchemaProps {
                JSONSchemaProps::map(V::schema())
            }
        }
    )*};
}

maps!(HashMap);

impl<K: MapKey, V: Schema> Schema for BTreeMap<K, V> {
    const MERGE: Option<&'static TypeInfo> = V::MERGE;
    const MERGE_WRAP: &'static [Wrap] = wrap_in(Wrap::Map, V::MERGE_WRAP);

    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::map(V::schema())
    }
}

impl Schema for Value {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::any()
    }
}

impl Schema for RawExtension {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps {
            x_kubernetes_preserve_unknown_fields: Some(true),
            ..JSONSchemaProps::object()
        }
    }
}

impl Schema for IntOrString {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::int_or_string()
    }
}

/// The quantity grammar as a regular expression, as upstream publishes it for CRDs.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

impl Schema for Quantity {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps {
            pattern: Some(QUANTITY_PATTERN.to_owned()),
            ..JSONSchemaProps::int_or_string()
        }
    }
}

impl Schema for Time {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps {
            format: Some("date-time".to_owned()),
            ..JSONSchemaProps::string()
        }
    }
}

impl Schema for MicroTime {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps {
            format: Some("date-time".to_owned()),
            ..JSONSchemaProps::string()
        }
    }
}

impl Schema for Duration {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::string()
    }
}

impl Schema for ByteString {
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps {
            format: Some("byte".to_owned()),
            ..JSONSchemaProps::string()
        }
    }
}

impl Schema for ObjectMeta {
    // The server validates metadata itself; a CRD schema may only say it is an object.
    fn schema() -> JSONSchemaProps {
        JSONSchemaProps::object()
    }
}

fn bounded_string(min: Option<i64>, max: i64, pattern: Option<&str>) -> JSONSchemaProps {
    JSONSchemaProps {
        min_length: min,
        max_length: Some(max),
        pattern: pattern.map(str::to_owned),
        ..JSONSchemaProps::string()
    }
}

impl Schema for Condition {
    /// `metav1.Condition` with the limits upstream declares on it.
    fn schema() -> JSONSchemaProps {
        let properties = [
            (
                "type",
                bounded_string(
                    None,
                    316,
                    Some(
                        r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    ),
                )
                .with_description("The aspect of the object this condition reports, CamelCase."),
            ),
            (
                "status",
                JSONSchemaProps {
                    enum_: vec!["True".into(), "False".into(), "Unknown".into()],
                    ..JSONSchemaProps::string()
                }
                .with_description("Whether the condition holds: True, False or Unknown."),
            ),
            (
                "observedGeneration",
                JSONSchemaProps {
                    minimum: Some(0.0),
                    ..JSONSchemaProps::integer("int64")
                }
                .with_description("The metadata.generation this condition was computed from."),
            ),
            (
                "lastTransitionTime",
                Time::schema().with_description("When the status last changed."),
            ),
            (
                "reason",
                bounded_string(Some(1), 1024, Some(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"))
                    .with_description("CamelCase machine-readable reason for the last transition."),
            ),
            (
                "message",
                bounded_string(None, 32768, None)
                    .with_description("Human-readable details about the transition."),
            ),
        ];
        JSONSchemaProps {
            description: Some("One aspect of the current state of this object.".to_owned()),
            properties: properties
                .into_iter()
                .map(|(name, schema)| (name.to_owned(), schema))
                .collect(),
            required: ["lastTransitionTime", "message", "reason", "status", "type"]
                .map(str::to_owned)
                .to_vec(),
            ..JSONSchemaProps::object()
        }
    }
}

impl Schema for LabelSelectorRequirement {
    fn schema() -> JSONSchemaProps {
        let values = JSONSchemaProps {
            x_kubernetes_list_type: Some("atomic".to_owned()),
            ..JSONSchemaProps::array(JSONSchemaProps::string())
        };
        JSONSchemaProps {
            properties: [
                (
                    "key",
                    JSONSchemaProps::string().with_description("The label key."),
                ),
                (
                    "operator",
                    JSONSchemaProps::string()
                        .with_description("In, NotIn, Exists or DoesNotExist."),
                ),
                (
                    "values",
                    values.with_description("The values for In and NotIn."),
                ),
            ]
            .into_iter()
            .map(|(name, schema)| (name.to_owned(), schema))
            .collect(),
            required: vec!["key".to_owned(), "operator".to_owned()],
            ..JSONSchemaProps::object()
        }
    }
}

impl Schema for LabelSelector {
    fn schema() -> JSONSchemaProps {
        let expressions = JSONSchemaProps {
            x_kubernetes_list_type: Some("atomic".to_owned()),
            ..JSONSchemaProps::array(LabelSelectorRequirement::schema())
        };
        JSONSchemaProps {
            description: Some("A label query over a set of objects.".to_owned()),
            properties: [
                (
                    "matchExpressions",
                    expressions.with_description("Requirements that all must hold."),
                ),
                (
                    "matchLabels",
                    JSONSchemaProps::map(JSONSchemaProps::string())
                        .with_description("Labels that must all match exactly."),
                ),
            ]
            .into_iter()
            .map(|(name, schema)| (name.to_owned(), schema))
            .collect(),
            x_kubernetes_map_type: Some("atomic".to_owned()),
            ..JSONSchemaProps::object()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn json_of<T: Schema>() -> Value {
        serde_json::to_value(T::schema()).unwrap()
    }

    #[test]
    fn primitive_shapes() {
        let cases = [
            (json_of::<bool>(), json!({"type": "boolean"})),
            (
                json_of::<i32>(),
                json!({"type": "integer", "format": "int32"}),
            ),
            (
                json_of::<i64>(),
                json!({"type": "integer", "format": "int64"}),
            ),
            (
                json_of::<u32>(),
                json!({"type": "integer", "format": "int64", "minimum": 0}),
            ),
            (
                json_of::<f64>(),
                json!({"type": "number", "format": "double"}),
            ),
            (json_of::<Option<String>>(), json!({"type": "string"})),
            (
                json_of::<Vec<i32>>(),
                json!({"type": "array", "items": {"type": "integer", "format": "int32"}}),
            ),
            (
                json_of::<BTreeSet<String>>(),
                json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}),
            ),
            (
                json_of::<BTreeMap<String, bool>>(),
                json!({"type": "object", "additionalProperties": {"type": "boolean"}}),
            ),
            (
                json_of::<HashMap<String, bool>>(),
                json!({"type": "object", "additionalProperties": {"type": "boolean"}}),
            ),
            (
                json_of::<Value>(),
                json!({"x-kubernetes-preserve-unknown-fields": true}),
            ),
            (
                json_of::<IntOrString>(),
                json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}),
            ),
            (
                json_of::<Time>(),
                json!({"type": "string", "format": "date-time"}),
            ),
            (
                json_of::<ByteString>(),
                json!({"type": "string", "format": "byte"}),
            ),
            (json_of::<ObjectMeta>(), json!({"type": "object"})),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
        const { assert!(<Option<i32>>::OPTIONAL && !<Vec<i32>>::OPTIONAL) };
        assert_eq!(
            <Vec<BTreeMap<String, i32>>>::MERGE_WRAP,
            [Wrap::List, Wrap::Map]
        );
    }

    #[test]
    fn condition_and_selector_are_structural() {
        for schema in [
            Condition::schema(),
            LabelSelector::schema(),
            Quantity::schema(),
        ] {
            let mut root = JSONSchemaProps::object();
            root.properties.insert("x".to_owned(), schema);
            assert_eq!(crate::crd::validate_structural(&root), Ok(()));
        }
        let condition = json_of::<Condition>();
        assert_eq!(
            condition["properties"]["status"]["enum"],
            json!(["True", "False", "Unknown"])
        );
        assert_eq!(condition["required"][0], "lastTransitionTime");
    }
}
