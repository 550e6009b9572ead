//! What the checker reads of a structural schema node, as a trait: the runtime's typed schema
//! and a schema written as JSON (`openAPIV3Schema` as a CRD carries it, or as
//! `#[derive(Schema)]` knows it at compile time) both answer it, so a rule is checked against
//! the same declarations whichever holds its schema.
//!
//! Upstream: k8s `apiserver/pkg/cel/common/schemas.go` (`Schema`, the interface
//! `SchemaDeclType` reads).

use serde_json::Value;

/// A node of a structural schema, as far as CEL's types and size bounds need it.
pub trait SchemaNode {
    /// `type` (`object`, `array`, `string`, ...), when set.
    fn schema_type(&self) -> Option<&str>;
    /// `format` (`byte`, `date-time`, `duration`, ...), when set.
    fn format(&self) -> Option<&str>;
    /// `maxLength`.
    fn max_length(&self) -> Option<i64>;
    /// `maxItems`.
    fn max_items(&self) -> Option<i64>;
    /// `maxProperties`.
    fn max_properties(&self) -> Option<i64>;
    /// The byte length of the longest string `enum` lists; `None` without an `enum`.
    fn longest_enum(&self) -> Option<u64>;
    /// The item schema of an array node, when it is one schema.
    fn items(&self) -> Option<&Self>;
    /// The value schema of a map node (`additionalProperties` as a schema).
    fn additional(&self) -> Option<&Self>;
    /// Whether `additionalProperties` is set at all (a schema or a bool).
    fn has_additional_properties(&self) -> bool;
    /// The declared properties, by name as written.
    fn properties(&self) -> Vec<(&str, &Self)>;
    /// Whether `required` lists `name`.
    fn requires(&self, name: &str) -> bool;
    /// Whether the node has a `default`.
    fn has_default(&self) -> bool;
    /// `x-kubernetes-int-or-string`.
    fn int_or_string(&self) -> bool;
    /// `x-kubernetes-embedded-resource`.
    fn embedded_resource(&self) -> bool;
    /// `x-kubernetes-preserve-unknown-fields: true`.
    fn preserve_unknown_fields(&self) -> bool;
}

impl SchemaNode for Value {
    fn schema_type(&self) -> Option<&str> {
        self.get("type").and_then(Value::as_str)
    }

    fn format(&self) -> Option<&str> {
        self.get("format").and_then(Value::as_str)
    }

    fn max_length(&self) -> Option<i64> {
        self.get("maxLength").and_then(Value::as_i64)
    }

    fn max_items(&self) -> Option<i64> {
        self.get("maxItems").and_then(Value::as_i64)
    }

    fn max_properties(&self) -> Option<i64> {
        self.get("maxProperties").and_then(Value::as_i64)
    }

    fn longest_enum(&self) -> Option<u64> {
        let values = self
            .get("enum")
            .and_then(Value::as_array)
            .filter(|values| !values.is_empty())?;
        Some(
            values
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.len() as u64)
                .max()
                .unwrap_or(0),
        )
    }

    fn items(&self) -> Option<&Self> {
        self.get("items").filter(|items| items.is_object())
    }

    fn additional(&self) -> Option<&Self> {
        self.get("additionalProperties")
            .filter(|values| values.is_object())
    }

    fn has_additional_properties(&self) -> bool {
        self.get("additionalProperties").is_some()
    }

    fn properties(&self) -> Vec<(&str, &Self)> {
        self.get("properties")
            .and_then(Value::as_object)
            .map(|props| props.iter().map(|(k, v)| (k.as_str(), v)).collect())
            .unwrap_or_default()
    }

    fn requires(&self, name: &str) -> bool {
        self.get("required")
            .and_then(Value::as_array)
            .is_some_and(|required| required.iter().any(|r| r.as_str() == Some(name)))
    }

    fn has_default(&self) -> bool {
        self.get("default").is_some()
    }

    fn int_or_string(&self) -> bool {
        flag(self, "x-kubernetes-int-or-string")
    }

    fn embedded_resource(&self) -> bool {
        flag(self, "x-kubernetes-embedded-resource")
    }

    fn preserve_unknown_fields(&self) -> bool {
        flag(self, "x-kubernetes-preserve-unknown-fields")
    }
}

fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool) == Some(true)
}
