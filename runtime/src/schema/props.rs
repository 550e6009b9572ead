//! `JSONSchemaProps` and its helper types, serde-exact with `apiextensions.k8s.io/v1`.
//!
//! Fields follow the Go struct's order and omission rules (`omitempty` everywhere except the
//! pointer-typed `x-kubernetes-preserve-unknown-fields`, `-list-type` and `-map-type`, which are
//! written when set even to their zero value). Numbers that Go keeps as `float64` are written
//! as integers when they are whole, as Go's encoder does. Properties are a sorted map, which is
//! the order Go writes a map in, so output is byte-stable.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One node of an OpenAPI v3 schema as a CustomResourceDefinition carries it.
///
/// Keywords a structural schema forbids (`$ref`, `definitions`, `patternProperties`, ...) are
/// kept so a schema read from a user's CRD round-trips and the validator can name them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JSONSchemaProps {
    /// `id` (forbidden in structural schemas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `$schema` (forbidden in structural schemas).
    #[serde(default, rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// `$ref` (forbidden in structural schemas).
    #[serde(default, rename = "$ref", skip_serializing_if = "Option::is_none")]
    pub ref_path: Option<String>,
    /// Human-readable description, from doc comments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `object`, `array`, `string`, `integer`, `number` or `boolean`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Format hint, e.g. `int32`, `int64`, `date-time`, `byte`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Title (forbidden in value validations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The value the server fills in when the field is absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Inclusive (or, with `exclusiveMaximum`, exclusive) upper bound.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "go_float")]
    pub maximum: Option<f64>,
    /// Whether `maximum` is exclusive.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclusive_maximum: bool,
    /// Inclusive (or, with `exclusiveMinimum`, exclusive) lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "go_float")]
    pub minimum: Option<f64>,
    /// Whether `minimum` is exclusive.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclusive_minimum: bool,
    /// Maximum string length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i64>,
    /// Minimum string length in characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<i64>,
    /// ECMA 262 regular expression strings must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Maximum number of array items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<i64>,
    /// Minimum number of array items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<i64>,
    /// `uniqueItems` (upstream rejects `true`: use `x-kubernetes-list-type: set`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub unique_items: bool,
    /// Numbers must be a multiple of this.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "go_float")]
    pub multiple_of: Option<f64>,
    /// The allowed values.
    #[serde(default, rename = "enum", skip_serializing_if = "Vec::is_empty")]
    pub enum_: Vec<Value>,
    /// Maximum number of object properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_properties: Option<i64>,
    /// Minimum number of object properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_properties: Option<i64>,
    /// Properties that must be present.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
    /// The schema of array items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<JSONSchemaPropsOrArray>>,
    /// All of these must hold (value validation only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub all_of: Vec<JSONSchemaProps>,
    /// Exactly one of these must hold (value validation only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<JSONSchemaProps>,
    /// At least one of these must hold (value validation only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub any_of: Vec<JSONSchemaProps>,
    /// This must not hold (value validation only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not: Option<Box<JSONSchemaProps>>,
    /// The fields of an object, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, JSONSchemaProps>,
    /// The schema of every value of a map-like object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<Box<JSONSchemaPropsOrBool>>,
    /// `patternProperties` (forbidden in CRDs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pattern_properties: BTreeMap<String, JSONSchemaProps>,
    /// `dependencies` (forbidden in CRDs), kept verbatim.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dependencies: BTreeMap<String, Value>,
    /// `additionalItems` (forbidden in CRDs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_items: Option<Box<JSONSchemaPropsOrBool>>,
    /// `definitions` (forbidden in CRDs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub definitions: BTreeMap<String, JSONSchemaProps>,
    /// A link to further documentation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_docs: Option<ExternalDocumentation>,
    /// An example value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
    /// Whether `null` is accepted (otherwise the server prunes it before validation).
    #[serde(default, skip_serializing_if = "is_false")]
    pub nullable: bool,
    /// Keep fields the schema does not list instead of pruning them.
    #[serde(
        default,
        rename = "x-kubernetes-preserve-unknown-fields",
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_preserve_unknown_fields: Option<bool>,
    /// The object is a whole Kubernetes object (`apiVersion`, `kind`, `metadata`).
    #[serde(
        default,
        rename = "x-kubernetes-embedded-resource",
        skip_serializing_if = "is_false"
    )]
    pub x_kubernetes_embedded_resource: bool,
    /// The value is an integer or a string (`IntOrString`, `Quantity`).
    #[serde(
        default,
        rename = "x-kubernetes-int-or-string",
        skip_serializing_if = "is_false"
    )]
    pub x_kubernetes_int_or_string: bool,
    /// The keys that identify an item of a `map` list.
    #[serde(
        default,
        rename = "x-kubernetes-list-map-keys",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub x_kubernetes_list_map_keys: Vec<String>,
    /// `atomic`, `set` or `map`.
    #[serde(
        default,
        rename = "x-kubernetes-list-type",
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_list_type: Option<String>,
    /// `atomic` or `granular`.
    #[serde(
        default,
        rename = "x-kubernetes-map-type",
        skip_serializing_if = "Option::is_none"
    )]
    pub x_kubernetes_map_type: Option<String>,
    /// CEL validation rules.
    #[serde(
        default,
        rename = "x-kubernetes-validations",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub x_kubernetes_validations: Vec<ValidationRule>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl JSONSchemaProps {
    /// A node of the given `type`.
    pub fn typed(type_: &str) -> Self {
        Self {
            type_: Some(type_.to_owned()),
            ..Self::default()
        }
    }

    /// `type: string`.
    pub fn string() -> Self {
        Self::typed("string")
    }

    /// `type: integer` with a format (`int32` or `int64`).
    pub fn integer(format: &str) -> Self {
        Self {
            format: Some(format.to_owned()),
            ..Self::typed("integer")
        }
    }

    /// `type: object` with no properties yet.
    pub fn object() -> Self {
        Self::typed("object")
    }

    /// `type: array` of `items`.
    pub fn array(items: JSONSchemaProps) -> Self {
        Self {
            items: Some(Box::new(JSONSchemaPropsOrArray::Schema(items))),
            ..Self::typed("array")
        }
    }

    /// `type: object` whose values all follow `values` (a map).
    pub fn map(values: JSONSchemaProps) -> Self {
        Self {
            additional_properties: Some(Box::new(JSONSchemaPropsOrBool::Schema(values))),
            ..Self::typed("object")
        }
    }

    /// Any JSON value, kept verbatim (`x-kubernetes-preserve-unknown-fields` without a type).
    pub fn any() -> Self {
        Self {
            x_kubernetes_preserve_unknown_fields: Some(true),
            ..Self::default()
        }
    }

    /// The int-or-string shape upstream requires: no type, `anyOf` integer/string.
    pub fn int_or_string() -> Self {
        Self {
            any_of: vec![Self::typed("integer"), Self::typed("string")],
            x_kubernetes_int_or_string: true,
            ..Self::default()
        }
    }

    /// The same node with a description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The item schema of an array node, when it is a single schema.
    pub fn items_schema(&self) -> Option<&JSONSchemaProps> {
        match self.items.as_deref() {
            Some(JSONSchemaPropsOrArray::Schema(items)) => Some(items),
            _ => None,
        }
    }

    /// The value schema of a map node, when it is a schema rather than a bool.
    pub fn additional_schema(&self) -> Option<&JSONSchemaProps> {
        match self.additional_properties.as_deref() {
            Some(JSONSchemaPropsOrBool::Schema(values)) => Some(values),
            _ => None,
        }
    }

    /// Every direct child schema, mutably: properties, items, additional properties and the
    /// value-validation branches.
    pub fn children_mut(&mut self) -> Vec<&mut JSONSchemaProps> {
        let mut out: Vec<&mut JSONSchemaProps> = self.properties.values_mut().collect();
        match self.items.as_deref_mut() {
            Some(JSONSchemaPropsOrArray::Schema(items)) => out.push(items),
            Some(JSONSchemaPropsOrArray::Array(items)) => out.extend(items.iter_mut()),
            None => {}
        }
        if let Some(JSONSchemaPropsOrBool::Schema(values)) =
            self.additional_properties.as_deref_mut()
        {
            out.push(values);
        }
        out.extend(self.all_of.iter_mut());
        out.extend(self.one_of.iter_mut());
        out.extend(self.any_of.iter_mut());
        if let Some(not) = self.not.as_deref_mut() {
            out.push(not);
        }
        out
    }
}

/// `items`: one schema for every item (the only form structural schemas allow) or a tuple.
// Always held behind a `Box` in `JSONSchemaProps`, so the large variant costs nothing extra.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum JSONSchemaPropsOrArray {
    /// Every item follows this schema.
    Schema(JSONSchemaProps),
    /// Item `i` follows schema `i` (not structural).
    Array(Vec<JSONSchemaProps>),
}

/// `additionalProperties`: a schema for every value, or a plain allow/deny.
// Always held behind a `Box` in `JSONSchemaProps`, so the large variant costs nothing extra.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum JSONSchemaPropsOrBool {
    /// Unlisted properties are allowed (`true`) or not (`false`).
    Allows(bool),
    /// Unlisted properties are allowed and follow this schema.
    Schema(JSONSchemaProps),
}

impl Serialize for JSONSchemaPropsOrBool {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Allows(allows) => serializer.serialize_bool(*allows),
            Self::Schema(schema) => schema.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for JSONSchemaPropsOrBool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(allows) => Ok(Self::Allows(allows)),
            other => serde_json::from_value(other)
                .map(Self::Schema)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// `externalDocs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalDocumentation {
    /// What the link is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// One CEL rule of `x-kubernetes-validations`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationRule {
    /// The CEL expression; `self` is the value at this node.
    pub rule: String,
    /// The message shown when the rule fails.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// A CEL expression producing the message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message_expression: String,
    /// The machine-readable reason: `FieldValueInvalid`, `FieldValueForbidden`,
    /// `FieldValueRequired` or `FieldValueDuplicate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The field path the failure is reported at, relative to this node.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field_path: String,
    /// Whether a transition rule also runs when there is no old value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional_old_self: Option<bool>,
}

impl ValidationRule {
    /// A rule with a message.
    pub fn new(rule: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            rule: rule.into(),
            message: message.into(),
            ..Self::default()
        }
    }
}

/// `float64` fields as Go writes them: whole numbers without a fraction.
mod go_float {
    use serde::{Deserialize, Deserializer, Serializer};

    // 2^53: beyond it not every integer is a float, so Go's shortest form may use an exponent.
    const EXACT: f64 = 9_007_199_254_740_992.0;

    pub(super) fn serialize<S: Serializer>(
        value: &Option<f64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            #[allow(clippy::cast_possible_truncation)]
            Some(v) if v.fract() == 0.0 && v.abs() < EXACT => serializer.serialize_i64(*v as i64),
            Some(v) => serializer.serialize_f64(*v),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<f64>, D::Error> {
        Option::<f64>::deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn round_trips_every_keyword() {
        let input: Value = serde_json::from_str(
            r##"{
            "id": "x", "$schema": "s", "$ref": "#/r", "description": "d", "type": "object",
            "format": "f", "title": "t", "default": {"a": 1}, "maximum": 5, "exclusiveMaximum": true,
            "minimum": 0.5, "exclusiveMinimum": true, "maxLength": 3, "minLength": 1,
            "pattern": "^a$", "maxItems": 4, "minItems": 1, "uniqueItems": true, "multipleOf": 2,
            "enum": ["a", 1], "maxProperties": 9, "minProperties": 1, "required": ["a"],
            "items": {"type": "string"}, "allOf": [{"minimum": 1}], "oneOf": [{"required": ["a"]}],
            "anyOf": [{"type": "integer"}], "not": {"required": ["b"]},
            "properties": {"b": {"type": "string"}, "a": {"type": "integer"}},
            "additionalProperties": false, "patternProperties": {"^x": {"type": "string"}},
            "dependencies": {"a": ["b"]}, "additionalItems": true,
            "definitions": {"d": {"type": "string"}}, "externalDocs": {"url": "https://x"},
            "example": 1, "nullable": true, "x-kubernetes-preserve-unknown-fields": false,
            "x-kubernetes-embedded-resource": true, "x-kubernetes-int-or-string": true,
            "x-kubernetes-list-map-keys": ["k"], "x-kubernetes-list-type": "map",
            "x-kubernetes-map-type": "atomic",
            "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "m",
                "messageExpression": "'x'", "reason": "FieldValueInvalid", "fieldPath": ".a",
                "optionalOldSelf": true}]
        }"##,
        )
        .unwrap();
        let parsed: JSONSchemaProps = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(parsed.maximum, Some(5.0));
        assert_eq!(parsed.x_kubernetes_preserve_unknown_fields, Some(false));
        assert_eq!(
            parsed.additional_properties.as_deref(),
            Some(&JSONSchemaPropsOrBool::Allows(false))
        );
        assert_eq!(serde_json::to_value(&parsed).unwrap(), input);
    }

    #[test]
    fn empty_node_is_empty_object_and_tuple_items_survive() {
        assert_eq!(
            serde_json::to_value(JSONSchemaProps::default()).unwrap(),
            json!({})
        );
        let tuple: JSONSchemaProps =
            serde_json::from_value(json!({"type": "array", "items": [{"type": "string"}]}))
                .unwrap();
        assert!(matches!(
            tuple.items.as_deref(),
            Some(JSONSchemaPropsOrArray::Array(items)) if items.len() == 1
        ));
        let map: JSONSchemaProps = serde_json::from_value(
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
        )
        .unwrap();
        assert_eq!(map.additional_schema(), Some(&JSONSchemaProps::string()));
    }

    #[test]
    fn floats_are_written_like_go() {
        let cases = [(1.0, json!(1)), (-3.0, json!(-3)), (0.25, json!(0.25))];
        for (value, want) in cases {
            let node = JSONSchemaProps {
                minimum: Some(value),
                ..JSONSchemaProps::default()
            };
            assert_eq!(serde_json::to_value(&node).unwrap()["minimum"], want);
        }
    }
}
