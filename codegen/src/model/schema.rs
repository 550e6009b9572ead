//! The schema tree: one node type for every shape a Kubernetes schema can take.
//!
//! Loaders normalise the spellings of Swagger 2.0, OpenAPI 3.0 and CRD structural schemas into this
//! tree, so emission sees one shape per concept: a v3 `allOf: [{$ref}]` is a plain [`SchemaType::Ref`],
//! `format: int-or-string`, `x-kubernetes-int-or-string` and `oneOf: [integer, string]` are all
//! [`SchemaType::IntOrString`]. Nested objects of CRDs stay inline; naming them is emission's job.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// One schema node with the annotations every node may carry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schema {
    /// The shape of the values this schema admits.
    pub ty: SchemaType,
    /// Upstream description text, verbatim.
    pub description: Option<String>,
    /// The `default` value, verbatim.
    pub default: Option<Value>,
    /// OpenAPI 3 `nullable`.
    pub nullable: bool,
    /// The `enum` values, verbatim and in source order (empty when the schema lists none).
    pub enum_values: Vec<Value>,
    /// The `x-kubernetes-*` extensions.
    pub ext: Extensions,
    /// Validation keywords that do not change the shape (pattern, minimum, maxItems, validation-only
    /// oneOf/anyOf/allOf/not, ...), kept verbatim by keyword so a CRD schema can be reproduced.
    pub constraints: BTreeMap<String, Value>,
}

/// The shape of a schema node.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SchemaType {
    /// Any JSON value: an empty schema or one with only `x-kubernetes-preserve-unknown-fields`.
    #[default]
    Any,
    /// An object with named properties (possibly none).
    Object(ObjectType),
    /// An object used as a map from string keys to values of one schema (`additionalProperties`
    /// without `properties`).
    Map(Box<Schema>),
    /// An array of items of one schema.
    Array(Box<Schema>),
    /// A string, with its `format` (`byte`, `date-time`, ...) if any.
    String {
        /// The `format` keyword.
        format: Option<String>,
    },
    /// An integer, with its `format` (`int32`, `int64`) if any.
    Integer {
        /// The `format` keyword.
        format: Option<String>,
    },
    /// A floating point number, with its `format` (`double`, `float`) if any.
    Number {
        /// The `format` keyword.
        format: Option<String>,
    },
    /// `true` or `false`.
    Boolean,
    /// Either an integer or a string (Kubernetes `IntOrString`).
    IntOrString,
    /// A reference to the named type definition of the model.
    Ref(String),
}

/// The fields of an object schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ObjectType {
    /// Properties in source order.
    pub properties: Vec<Property>,
    /// Names listed in `required`.
    pub required: BTreeSet<String>,
    /// The schema of keys not named in `properties`, when the object also has properties.
    pub additional_properties: Option<Box<Schema>>,
}

/// One named property of an object.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The JSON field name.
    pub name: String,
    /// The property's schema.
    pub schema: Schema,
}

/// The Kubernetes vendor extensions of one schema node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extensions {
    /// `x-kubernetes-list-type`.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`.
    pub map_type: Option<MapType>,
    /// `x-kubernetes-patch-strategy`, verbatim (e.g. `merge`, `merge,retainKeys`).
    pub patch_strategy: Option<String>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<String>,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub embedded_resource: bool,
    /// `x-kubernetes-int-or-string: true` as written (the shape is also [`SchemaType::IntOrString`]).
    pub int_or_string: bool,
    /// `x-kubernetes-validations` (CEL rules), verbatim.
    pub validations: Vec<Value>,
    /// `x-kubernetes-unions`, verbatim.
    pub unions: Vec<Value>,
}

/// Values of `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ListType {
    /// The list is replaced as a whole.
    Atomic,
    /// Items are scalars merged as a set.
    Set,
    /// Items are objects merged by the `list_map_keys`.
    Map,
}

/// Values of `x-kubernetes-map-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MapType {
    /// The map is replaced as a whole.
    Atomic,
    /// Keys are merged individually.
    Granular,
}

impl ListType {
    /// Parses the extension's value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "atomic" => Some(Self::Atomic),
            "set" => Some(Self::Set),
            "map" => Some(Self::Map),
            _ => None,
        }
    }
}

impl MapType {
    /// Parses the extension's value.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "atomic" => Some(Self::Atomic),
            "granular" => Some(Self::Granular),
            _ => None,
        }
    }
}

/// A `$ref` found while walking a schema, with where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefSite {
    /// JSON pointer of the referring node, relative to the walked schema (`""` for the root).
    pub pointer: String,
    /// The referenced definition name.
    pub target: String,
}

/// The regular expression controller-gen writes for `resource.Quantity` fields of CRDs.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

impl Schema {
    /// Whether the schema carries controller-gen's Quantity `pattern` (emission maps such an
    /// int-or-string to `Quantity`).
    pub fn has_quantity_pattern(&self) -> bool {
        self.constraints.get("pattern").and_then(Value::as_str) == Some(QUANTITY_PATTERN)
    }

    /// A schema of the given shape without annotations.
    pub fn of(ty: SchemaType) -> Self {
        Self {
            ty,
            ..Self::default()
        }
    }

    /// The object fields, when this is an object schema.
    pub fn as_object(&self) -> Option<&ObjectType> {
        match &self.ty {
            SchemaType::Object(o) => Some(o),
            _ => None,
        }
    }

    /// Every `$ref` in this tree, in a deterministic depth-first order.
    pub fn refs(&self) -> Vec<RefSite> {
        let mut out = Vec::new();
        self.collect_refs(&mut String::new(), &mut out);
        out
    }

    fn collect_refs(&self, at: &mut String, out: &mut Vec<RefSite>) {
        let len = at.len();
        match &self.ty {
            SchemaType::Ref(target) => out.push(RefSite {
                pointer: at.clone(),
                target: target.clone(),
            }),
            SchemaType::Object(o) => {
                for p in &o.properties {
                    at.push_str("/properties/");
                    at.push_str(&escape_pointer(&p.name));
                    p.schema.collect_refs(at, out);
                    at.truncate(len);
                }
                if let Some(extra) = &o.additional_properties {
                    at.push_str("/additionalProperties");
                    extra.collect_refs(at, out);
                    at.truncate(len);
                }
            }
            SchemaType::Map(value) => {
                at.push_str("/additionalProperties");
                value.collect_refs(at, out);
                at.truncate(len);
            }
            SchemaType::Array(items) => {
                at.push_str("/items");
                items.collect_refs(at, out);
                at.truncate(len);
            }
            _ => {}
        }
    }
}

/// Escapes one JSON pointer segment (RFC 6901: `~` → `~0`, `/` → `~1`).
pub fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_found_with_escaped_pointers() {
        let inner = Schema::of(SchemaType::Array(Box::new(Schema::of(SchemaType::Ref(
            "b".into(),
        )))));
        let root = Schema::of(SchemaType::Object(ObjectType {
            properties: vec![
                Property {
                    name: "a/x".into(),
                    schema: Schema::of(SchemaType::Ref("a".into())),
                },
                Property {
                    name: "list".into(),
                    schema: inner,
                },
            ],
            additional_properties: Some(Box::new(Schema::of(SchemaType::Map(Box::new(
                Schema::of(SchemaType::Ref("c".into())),
            ))))),
            ..ObjectType::default()
        }));
        let found: Vec<(String, String)> = root
            .refs()
            .into_iter()
            .map(|r| (r.pointer, r.target))
            .collect();
        assert_eq!(
            found,
            vec![
                ("/properties/a~1x".to_string(), "a".to_string()),
                ("/properties/list/items".to_string(), "b".to_string()),
                (
                    "/additionalProperties/additionalProperties".to_string(),
                    "c".to_string()
                ),
            ]
        );
    }

    #[test]
    fn extension_values_parse() {
        let cases = [
            ("atomic", Some(ListType::Atomic)),
            ("set", Some(ListType::Set)),
            ("map", Some(ListType::Map)),
            ("Map", None),
        ];
        for (input, want) in cases {
            assert_eq!(ListType::parse(input), want, "{input}");
        }
        assert_eq!(MapType::parse("granular"), Some(MapType::Granular));
        assert_eq!(MapType::parse("atomic"), Some(MapType::Atomic));
        assert_eq!(MapType::parse("set"), None);
    }
}
