//! Sample objects synthesised from the model, for round-trip tests of generated types.
//!
//! This module owns turning a type definition or a kind into one deterministic JSON value that is
//! valid for its schema and for the Rust types emission maps the schema to, so a test can decode
//! it with the generated type, encode it again and compare. It reads only the [`Model`].
//!
//! # Variants
//!
//! - [`Variant::Full`]: every property of every object is present, arrays hold one element, maps
//!   one entry. This is the "every field populated" object of the round-trip test.
//! - [`Variant::Minimal`]: only required properties (plus the `x-kubernetes-list-map-keys` of
//!   list items); a required array is `[]` and a required map `{}` unless `minItems` /
//!   `minProperties` asks for one entry. Decoding it checks that optional fields really are
//!   optional and that absent stays absent.
//! - [`Variant::Empty`]: the object shape of `Full`, but every array is `[]`, every map `{}`
//!   (unless the schema demands an entry) and every optional `nullable` property is `null`. It is
//!   there to check that `[]`, `{}` and `null` decode; whether they re-encode unchanged or as
//!   absent depends on the Rust type (runtime meta types follow Go's `omitempty` and drop them),
//!   so the test decides which comparison applies.
//!
//! Every kind sample, whatever the variant, carries `apiVersion` and `kind` from its GVK and a
//! `metadata` with at least a name (and a namespace for namespaced resources). So does every
//! nested value of a served kind's definition (a list's `items`), because the generated kind
//! type always writes its type meta and metadata; the first served GVK in model order names it.
//! `Full` gives a rich `ObjectMeta`: labels, annotations, timestamps, uid, resourceVersion,
//! generation, an owner reference, a finalizer and a `managedFields` entry with `fieldsV1`, cut
//! down to the properties the model's ObjectMeta definition has (so older specs get no field they
//! do not know). Any other ObjectMeta is built the same way (without a namespace) rather than read
//! from the spec, because the runtime type, not the spec, decides which fields survive (v1.20's
//! `clusterName` does not): rich in `Full`, a name in `Empty`, `{}` in `Minimal`.

//! # Values
//!
//! | schema | value |
//! |---|---|
//! | `enum` | the first value that is neither `null` nor `""` (else the first) |
//! | integer `int32` / no format | 42, moved into `minimum`/`maximum` |
//! | integer `int64` | 5000000000 (beyond i32), moved into `minimum`/`maximum` |
//! | number | 1.5 (never a whole number, so `f64` re-encodes it as written) |
//! | boolean | `true` |
//! | string | `"sample-<field name>"` |
//! | string `byte` | [`BYTES_SAMPLE`], standard base64 with padding |
//! | string `date-time`, meta `Time` | [`TIME_SAMPLE`], second precision |
//! | meta `MicroTime` | [`MICRO_TIME_SAMPLE`], six fractional digits |
//! | meta `Duration`, string `duration` | [`DURATION_SAMPLE`] |
//! | Quantity | [`QUANTITY_SAMPLES`] in turn, canonical so `kapi::Quantity` writes them back |
//! | int-or-string | [`INT_OR_STRING_SAMPLES`] in turn: an int32, then a percentage string |
//! | int-or-string with the Quantity pattern | a Quantity string (valid as both types) |
//! | untyped, preserve-unknown, `JSON`, `RawExtension` | a small nested object ([`json_sample`]) |
//! | `FieldsV1` | a small field set ([`fields_v1_sample`]) |
//! | map | one entry under `"key"`; a map of quantities gets `cpu: 1500m` or `memory: 2Gi` |
//! | object without properties (and not preserving unknown fields) | `{}` |
//!
//! The int-or-string and Quantity rotations advance in document order, so one sample covers both
//! forms wherever a type has two such fields (a Deployment's `maxSurge` / `maxUnavailable`), and
//! the same call always gives the same value. Extra keys are never invented for an object that
//! has properties, even when it also allows additional properties or preserves unknown fields:
//! whether the Rust type keeps such keys is not something the sample should depend on.
//!
//! # Recursion
//!
//! Only `$ref`s can recurse. A definition may be expanded at most [`MAX_EXPANSIONS`] times on one
//! path (so a recursive type such as JSONSchemaProps is shown nested once); past that an optional
//! property leading to it is left out, and a required one gets the definition's minimal form. A
//! definition that requires itself without end has no finite sample and is an error.
//!
//! # Which schemas are special
//!
//! Emission must map the same schemas to the same runtime types, else samples stop round-tripping.
//! [`Special::of_definition`] decides by definition name (upstream's Go package paths, identical
//! in Swagger 2.0 and OpenAPI 3); [`Special::of_inline`] decides from the shape of an inline node
//! (what CRDs use). A kind-root `metadata` that is an inline object without properties (a CRD's
//! bare `type: object`) is ObjectMeta, as the API server treats it.

use std::collections::BTreeMap;

use serde_json::{Map, Number, Value, json};

use crate::model::{Gvk, ListType, Model, ObjectType, Schema, SchemaType, Scope, escape_pointer};

/// The timestamp used for every `Time` and inline `date-time` value.
pub const TIME_SAMPLE: &str = "2024-01-02T03:04:05Z";
/// The timestamp used for every `MicroTime` value.
pub const MICRO_TIME_SAMPLE: &str = "2024-01-02T03:04:05.123456Z";
/// The Go duration used for every `Duration` value; `Duration::to_string` writes it back as is.
pub const DURATION_SAMPLE: &str = "1h2m3s";
/// Base64 of `hello`, used for every `format: byte` value.
pub const BYTES_SAMPLE: &str = "aGVsbG8=";
/// Quantities in the order they are handed out; both are canonical (decimal and binary SI).
pub const QUANTITY_SAMPLES: [&str; 2] = ["1500m", "2Gi"];
/// The int32 and the string form of an int-or-string, in the order they are handed out.
pub const INT_OR_STRING_SAMPLES: [IntOrStringSample; 2] =
    [IntOrStringSample::Int(3), IntOrStringSample::Str("25%")];
/// The value of `int32` and format-less integers.
pub const INT32_SAMPLE: i64 = 42;
/// The value of `int64` integers: beyond the i32 range, so an `i32` field would fail to decode.
pub const INT64_SAMPLE: i64 = 5_000_000_000;
/// The value of numbers.
pub const NUMBER_SAMPLE: f64 = 1.5;
/// How many times one definition may be expanded on one path before recursion is cut.
pub const MAX_EXPANSIONS: usize = 2;
/// The deepest nesting of sample values before sampling gives up.
pub const MAX_DEPTH: usize = 128;

pub use crate::model::QUANTITY_PATTERN;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const UID_SAMPLE: &str = "0b7d3a8c-1f2e-4d5a-9b6c-7e8f9a0b1c2d";
const OWNER_UID_SAMPLE: &str = "5c4b3a29-1807-4f6e-8d5c-4b3a29180716";

/// One of the two int-or-string forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOrStringSample {
    /// A JSON number.
    Int(i32),
    /// A JSON string.
    Str(&'static str),
}

impl IntOrStringSample {
    fn to_value(self) -> Value {
        match self {
            Self::Int(i) => Value::from(i),
            Self::Str(s) => Value::from(s),
        }
    }
}

/// Which sample to build; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Every property present, arrays with one element, maps with one entry.
    Full,
    /// Required properties (and list-map keys) only.
    Minimal,
    /// The shape of `Full` with every collection empty and every optional nullable field `null`.
    Empty,
}

/// A schema that maps to a runtime type rather than a generated one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Special {
    /// `resource.Quantity`.
    Quantity,
    /// `intstr.IntOrString`.
    IntOrString,
    /// `metav1.Time`, or an inline `date-time` string.
    Time,
    /// `metav1.MicroTime`.
    MicroTime,
    /// `metav1.Duration`.
    Duration,
    /// A `format: byte` string.
    Bytes,
    /// Any JSON: `apiextensions.JSON`, untyped and preserve-unknown nodes.
    Json,
    /// `runtime.RawExtension`.
    RawExtension,
    /// `metav1.FieldsV1`.
    FieldsV1,
    /// `metav1.ObjectMeta`.
    ObjectMeta,
}

impl Special {
    /// The runtime type a definition of this name stands for, if any.
    pub fn of_definition(name: &str) -> Option<Special> {
        if let Some(meta) = name.strip_prefix("io.k8s.apimachinery.pkg.apis.meta.v1.") {
            return match meta {
                "Time" => Some(Self::Time),
                "MicroTime" => Some(Self::MicroTime),
                "Duration" => Some(Self::Duration),
                "FieldsV1" => Some(Self::FieldsV1),
                "ObjectMeta" => Some(Self::ObjectMeta),
                _ => None,
            };
        }
        match name {
            "io.k8s.apimachinery.pkg.api.resource.Quantity" => Some(Self::Quantity),
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => Some(Self::IntOrString),
            "io.k8s.apimachinery.pkg.runtime.RawExtension" => Some(Self::RawExtension),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"
            | "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1beta1.JSON" => {
                Some(Self::Json)
            }
            _ => None,
        }
    }

    /// The runtime type an inline schema node stands for, if any: an int-or-string carrying
    /// [`QUANTITY_PATTERN`] is a Quantity, other int-or-strings are IntOrString, `date-time`
    /// strings are Time, `byte` strings are bytes, and untyped nodes as well as objects that
    /// preserve unknown fields and declare no properties are JSON.
    pub fn of_inline(schema: &Schema) -> Option<Special> {
        match &schema.ty {
            SchemaType::IntOrString if schema.has_quantity_pattern() => Some(Self::Quantity),
            SchemaType::IntOrString => Some(Self::IntOrString),
            SchemaType::String { format } => match format.as_deref() {
                Some("date-time") => Some(Self::Time),
                Some("byte") => Some(Self::Bytes),
                _ => None,
            },
            SchemaType::Any => Some(Self::Json),
            SchemaType::Object(o)
                if o.properties.is_empty()
                    && o.additional_properties.is_none()
                    && schema.ext.preserve_unknown_fields =>
            {
                Some(Self::Json)
            }
            _ => None,
        }
    }
}

/// Why no sample could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleError {
    /// The model has no such kind.
    #[error("no kind {0} in the model")]
    UnknownKind(Gvk),
    /// A `$ref` (or a kind) names a definition the model lacks.
    #[error("{root}: no definition {target:?} in the model (needed at #{pointer})")]
    MissingDefinition {
        /// The kind or definition being sampled.
        root: String,
        /// JSON pointer of the sample value that needed it.
        pointer: String,
        /// The missing name.
        target: String,
    },
    /// A kind whose definition is not an object schema.
    #[error("{root}: a kind's definition must be an object schema")]
    NotAnObject {
        /// The kind.
        root: String,
    },
    /// A definition requires itself through required fields only, so every value is infinite.
    #[error("{root}: at #{pointer}, {definition} requires itself without end")]
    Unbounded {
        /// The kind or definition being sampled.
        root: String,
        /// JSON pointer of the sample value.
        pointer: String,
        /// The recursive definition.
        definition: String,
    },
    /// Inline nesting beyond [`MAX_DEPTH`].
    #[error("{root}: at #{pointer}, the schema nests deeper than {MAX_DEPTH} levels")]
    TooDeep {
        /// The kind or definition being sampled.
        root: String,
        /// JSON pointer of the sample value.
        pointer: String,
    },
}

/// A sample object of a kind: `apiVersion` and `kind` from its GVK, a `metadata`, and the rest of
/// its definition per `variant`.
pub fn sample_kind(model: &Model, gvk: &Gvk, variant: Variant) -> Result<Value, SampleError> {
    let kind = model
        .kinds
        .get(gvk)
        .ok_or_else(|| SampleError::UnknownKind(gvk.clone()))?;
    let root = gvk.to_string();
    let schema =
        model
            .types
            .get(&kind.definition)
            .ok_or_else(|| SampleError::MissingDefinition {
                root: root.clone(),
                pointer: String::new(),
                target: kind.definition.clone(),
            })?;
    let Some(object) = schema.as_object() else {
        return Err(SampleError::NotAnObject { root });
    };
    let namespaced = kind
        .resource
        .as_ref()
        .is_some_and(|r| r.scope == Scope::Namespaced);
    let mut sampler = Sampler::new(model, root);
    sampler.stack.push(&kind.definition);
    sampler.kind_root(object, gvk, namespaced, variant)
}

/// A sample value of a named type definition, per `variant`. The definition of a served kind
/// comes out as [`sample_kind`] gives it for the first GVK (in model order) that uses it.
pub fn sample_definition(
    model: &Model,
    name: &str,
    variant: Variant,
) -> Result<Value, SampleError> {
    let mut sampler = Sampler::new(model, name.to_owned());
    sampler.reference(name, variant, &[])
}

/// A sample value of an inline schema whose `$ref`s point into `model`, per `variant`.
pub fn sample_schema(
    model: &Model,
    schema: &Schema,
    variant: Variant,
) -> Result<Value, SampleError> {
    let mut sampler = Sampler::new(model, "schema".to_owned());
    sampler.value(schema, variant, &[])
}

/// The nested object used for schemas that admit any JSON.
pub fn json_sample() -> Value {
    json!({
        "sample": "value",
        "nested": {"count": 2, "enabled": true, "ratio": 1.5, "tags": ["a"]}
    })
}

/// The field set used for `FieldsV1` values.
pub fn fields_v1_sample() -> Value {
    json!({"f:metadata": {"f:labels": {"f:app.kubernetes.io/name": {}}}})
}

/// The object used for untyped nodes marked `x-kubernetes-embedded-resource`.
fn embedded_resource_sample() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "embedded"},
        "data": {"key": "value"}
    })
}

/// Walks schemas, remembering where it is for recursion control, rotations and messages.
struct Sampler<'m> {
    model: &'m Model,
    /// What is being sampled, for error messages.
    root: String,
    /// Pointer segments of the value being built.
    path: Vec<String>,
    /// Definitions being expanded, outermost first.
    stack: Vec<&'m str>,
    quantities: usize,
    int_or_strings: usize,
    /// Definitions of served kinds (the first GVK in model order wins), with whether the kind is
    /// namespaced: wherever they appear they are kind objects with type meta and metadata.
    kind_defs: BTreeMap<&'m str, (&'m Gvk, bool)>,
}

impl<'m> Sampler<'m> {
    fn new(model: &'m Model, root: String) -> Self {
        let mut kind_defs = BTreeMap::new();
        for (kind, resource) in model.resources() {
            kind_defs
                .entry(kind.definition.as_str())
                .or_insert((&kind.gvk, resource.scope == Scope::Namespaced));
        }
        Self {
            model,
            root,
            path: Vec::new(),
            stack: Vec::new(),
            quantities: 0,
            int_or_strings: 0,
            kind_defs,
        }
    }

    fn pointer(&self) -> String {
        self.path
            .iter()
            .map(|s| format!("/{}", escape_pointer(s)))
            .collect()
    }

    fn kind_root(
        &mut self,
        object: &'m ObjectType,
        gvk: &Gvk,
        namespaced: bool,
        variant: Variant,
    ) -> Result<Value, SampleError> {
        let api_version = gvk.group_version().to_string();
        let name = format!("sample-{}", gvk.kind.to_lowercase());
        let namespace = namespaced.then_some("sample-ns");
        let mut out = Map::new();
        // apiVersion, kind and metadata lead, in the order Kubernetes writes them.
        out.insert("apiVersion".into(), Value::from(api_version.as_str()));
        out.insert("kind".into(), Value::from(gvk.kind.as_str()));
        let meta_schema = object.properties.iter().find(|p| p.name == "metadata");
        let is_object_meta = meta_schema.is_none_or(|p| match &p.schema.ty {
            SchemaType::Ref(name) => name == OBJECT_META,
            SchemaType::Object(o) => o.properties.is_empty(),
            _ => false,
        });
        if is_object_meta {
            let meta = match variant {
                Variant::Full => self.object_meta(&name, namespace, &api_version),
                Variant::Minimal | Variant::Empty => short_meta(&name, namespace),
            };
            out.insert("metadata".into(), meta);
        }
        let skip: &[&str] = if is_object_meta {
            &["apiVersion", "kind", "metadata"]
        } else {
            &["apiVersion", "kind"]
        };
        self.properties(object, variant, &[], skip, &mut out)?;
        Ok(Value::Object(out))
    }

    /// The rich ObjectMeta of `Full`, cut to the fields the model's ObjectMeta knows.
    fn object_meta(&self, name: &str, namespace: Option<&str>, api_version: &str) -> Value {
        let mut meta = json!({
            "name": name,
            "generateName": "sample-",
            "namespace": namespace,
            "selfLink": format!("/sample/{name}"),
            "uid": UID_SAMPLE,
            "resourceVersion": "12345",
            "generation": 3,
            "creationTimestamp": TIME_SAMPLE,
            "deletionTimestamp": "2024-01-02T04:05:06Z",
            "deletionGracePeriodSeconds": 30,
            "labels": {"app.kubernetes.io/name": "sample"},
            "annotations": {"example.com/note": "sampled"},
            "ownerReferences": [{
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "sample-owner",
                "uid": OWNER_UID_SAMPLE,
                "controller": true,
                "blockOwnerDeletion": true
            }],
            "finalizers": ["example.com/cleanup"],
            "managedFields": [{
                "manager": "kapi-sample",
                "operation": "Update",
                "apiVersion": api_version,
                "time": TIME_SAMPLE,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_v1_sample(),
                "subresource": "status"
            }]
        });
        if let Some(m) = meta.as_object_mut()
            && namespace.is_none()
        {
            // `shift_remove` keeps the order the fields were written in.
            m.shift_remove("namespace");
        }
        if let Some(schema) = self.model.types.get(OBJECT_META) {
            prune(self.model, &mut meta, schema, 0);
        }
        meta
    }

    fn value(
        &mut self,
        schema: &'m Schema,
        variant: Variant,
        keys: &'m [String],
    ) -> Result<Value, SampleError> {
        if self.path.len() > MAX_DEPTH {
            return Err(SampleError::TooDeep {
                root: self.root.clone(),
                pointer: self.pointer(),
            });
        }
        if let Some(v) = first_enum_value(schema) {
            return Ok(v);
        }
        Ok(match &schema.ty {
            SchemaType::Ref(name) => return self.reference(name, variant, keys),
            SchemaType::Any if schema.ext.embedded_resource => embedded_resource_sample(),
            SchemaType::Any => json_sample(),
            SchemaType::Object(o) => {
                if o.properties.is_empty() && o.additional_properties.is_none() {
                    if !schema.ext.preserve_unknown_fields {
                        return Ok(Value::Object(Map::new()));
                    }
                    if schema.ext.embedded_resource {
                        return Ok(embedded_resource_sample());
                    }
                    return Ok(json_sample());
                }
                let mut out = Map::new();
                self.properties(o, variant, keys, &[], &mut out)?;
                if o.properties.is_empty()
                    && let Some(extra) = &o.additional_properties
                {
                    // Required names with only `additionalProperties` to describe them.
                    for name in &o.required {
                        self.path.push(name.clone());
                        let v = self.value(extra, variant, &[]);
                        self.path.pop();
                        out.insert(name.clone(), v?);
                    }
                }
                Value::Object(out)
            }
            SchemaType::Map(values) => {
                let mut out = Map::new();
                if variant == Variant::Full || min_count(schema, "minProperties") > 0 {
                    // Name the resource after the quantity it will get: cpu 1500m, memory 2Gi.
                    let key = match self.is_quantity(values) {
                        true if self.quantities.is_multiple_of(2) => "cpu",
                        true => "memory",
                        false => "key",
                    };
                    self.path.push(key.to_owned());
                    let inner = if variant == Variant::Full {
                        variant
                    } else {
                        Variant::Minimal
                    };
                    let v = self.value(values, inner, &[]);
                    self.path.pop();
                    out.insert(key.to_owned(), v?);
                }
                Value::Object(out)
            }
            SchemaType::Array(items) => {
                let mut out = Vec::new();
                if variant == Variant::Full || min_count(schema, "minItems") > 0 {
                    let item_keys: &[String] = if schema.ext.list_type == Some(ListType::Map) {
                        &schema.ext.list_map_keys
                    } else {
                        &[]
                    };
                    let inner = if variant == Variant::Full {
                        variant
                    } else {
                        Variant::Minimal
                    };
                    self.path.push("0".to_owned());
                    let v = self.value(items, inner, item_keys);
                    self.path.pop();
                    out.push(v?);
                }
                Value::Array(out)
            }
            SchemaType::String { format } => match format.as_deref() {
                Some("date-time") => Value::from(TIME_SAMPLE),
                Some("byte") => Value::from(BYTES_SAMPLE),
                Some("duration") => Value::from(DURATION_SAMPLE),
                _ => Value::from(self.string_sample()),
            },
            SchemaType::Integer { format } => {
                let (base, lo, hi) = match format.as_deref() {
                    Some("int64") => (INT64_SAMPLE, i64::MIN, i64::MAX),
                    _ => (INT32_SAMPLE, i64::from(i32::MIN), i64::from(i32::MAX)),
                };
                Value::from(clamp_integer(schema, base, lo, hi))
            }
            SchemaType::Number { .. } => number_value(clamp_number(schema)),
            SchemaType::Boolean => Value::Bool(true),
            SchemaType::IntOrString if schema.has_quantity_pattern() => self.next_quantity(),
            SchemaType::IntOrString => self.next_int_or_string(),
        })
    }

    /// Fills `out` with the properties `variant` asks for; `keys` are list-map keys that must
    /// be present even when optional; names in `skip` are left to the caller.
    fn properties(
        &mut self,
        object: &'m ObjectType,
        variant: Variant,
        keys: &'m [String],
        skip: &[&str],
        out: &mut Map<String, Value>,
    ) -> Result<(), SampleError> {
        for p in &object.properties {
            if skip.contains(&p.name.as_str()) {
                continue;
            }
            let required = object.required.contains(&p.name) || keys.contains(&p.name);
            if !required && (variant == Variant::Minimal || self.cuts_recursion(&p.schema)) {
                continue;
            }
            if !required && variant == Variant::Empty && p.schema.nullable {
                out.insert(p.name.clone(), Value::Null);
                continue;
            }
            self.path.push(p.name.clone());
            let v = self.value(&p.schema, variant, &[]);
            self.path.pop();
            out.insert(p.name.clone(), v?);
        }
        Ok(())
    }

    fn reference(
        &mut self,
        name: &'m str,
        variant: Variant,
        keys: &'m [String],
    ) -> Result<Value, SampleError> {
        match Special::of_definition(name) {
            Some(Special::Quantity) => return Ok(self.next_quantity()),
            Some(Special::IntOrString) => return Ok(self.next_int_or_string()),
            Some(Special::Time) => return Ok(Value::from(TIME_SAMPLE)),
            Some(Special::MicroTime) => return Ok(Value::from(MICRO_TIME_SAMPLE)),
            Some(Special::Duration) => return Ok(Value::from(DURATION_SAMPLE)),
            Some(Special::Bytes) => return Ok(Value::from(BYTES_SAMPLE)),
            Some(Special::Json | Special::RawExtension) => return Ok(json_sample()),
            Some(Special::FieldsV1) => return Ok(fields_v1_sample()),
            // Hand-built rather than read from the schema: the runtime type, not the spec's
            // definition, decides which fields survive (v1.20's `clusterName` does not).
            Some(Special::ObjectMeta) => {
                return Ok(match variant {
                    Variant::Full => self.object_meta("sample-nested", None, "v1"),
                    Variant::Empty => short_meta("sample-nested", None),
                    Variant::Minimal => Value::Object(Map::new()),
                });
            }
            None => {}
        }
        let Some(schema) = self.model.types.get(name) else {
            return Err(SampleError::MissingDefinition {
                root: self.root.clone(),
                pointer: self.pointer(),
                target: name.to_owned(),
            });
        };
        let seen = self.stack.iter().filter(|n| **n == name).count();
        let variant = if seen < MAX_EXPANSIONS {
            variant
        } else if seen < MAX_EXPANSIONS + 1 {
            Variant::Minimal
        } else {
            // Already expanded in its minimal form below itself: the cycle is through required
            // fields and never ends.
            return Err(SampleError::Unbounded {
                root: self.root.clone(),
                pointer: self.pointer(),
                definition: name.to_owned(),
            });
        };
        self.stack.push(name);
        // A served kind's type writes its apiVersion, kind and metadata whatever the variant,
        // so a nested one (a list's items) carries them too.
        let v = match (self.kind_defs.get(name).copied(), schema.as_object()) {
            (Some((gvk, namespaced)), Some(object)) => {
                self.kind_root(object, gvk, namespaced, variant)
            }
            _ => self.value(schema, variant, keys),
        };
        self.stack.pop();
        v
    }

    /// Whether sampling `schema` would expand a definition that is already expanded
    /// [`MAX_EXPANSIONS`] times on this path.
    fn cuts_recursion(&self, schema: &Schema) -> bool {
        match &schema.ty {
            SchemaType::Ref(name) => {
                Special::of_definition(name).is_none()
                    && self.stack.iter().filter(|n| **n == name).count() >= MAX_EXPANSIONS
            }
            SchemaType::Array(inner) | SchemaType::Map(inner) => self.cuts_recursion(inner),
            _ => false,
        }
    }

    fn is_quantity(&self, schema: &Schema) -> bool {
        match &schema.ty {
            SchemaType::Ref(name) => Special::of_definition(name) == Some(Special::Quantity),
            _ => Special::of_inline(schema) == Some(Special::Quantity),
        }
    }

    fn next_quantity(&mut self) -> Value {
        let q = QUANTITY_SAMPLES[self.quantities % QUANTITY_SAMPLES.len()];
        self.quantities += 1;
        Value::from(q)
    }

    fn next_int_or_string(&mut self) -> Value {
        let v = INT_OR_STRING_SAMPLES[self.int_or_strings % INT_OR_STRING_SAMPLES.len()];
        self.int_or_strings += 1;
        v.to_value()
    }

    /// `sample-<nearest field name>`, so a value shows where it belongs.
    fn string_sample(&self) -> String {
        let field = self
            .path
            .iter()
            .rev()
            .find(|s| s.parse::<usize>().is_err())
            .map_or("value", String::as_str);
        format!("sample-{field}")
    }
}

fn short_meta(name: &str, namespace: Option<&str>) -> Value {
    let mut meta = Map::new();
    meta.insert("name".into(), Value::from(name));
    if let Some(ns) = namespace {
        meta.insert("namespace".into(), Value::from(ns));
    }
    Value::Object(meta)
}

/// Removes keys the schema does not declare, following `$ref`s; `depth` bounds the walk for
/// schemas that refer to themselves.
fn prune(model: &Model, value: &mut Value, schema: &Schema, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match (&schema.ty, value) {
        (SchemaType::Ref(name), value) => {
            if Special::of_definition(name).is_some_and(|s| s != Special::ObjectMeta) {
                return;
            }
            if let Some(target) = model.types.get(name) {
                prune(model, value, target, depth + 1);
            }
        }
        (SchemaType::Object(o), Value::Object(map)) => {
            if o.additional_properties.is_some() || o.properties.is_empty() {
                return;
            }
            map.retain(|k, _| o.properties.iter().any(|p| &p.name == k));
            for p in &o.properties {
                if let Some(v) = map.get_mut(&p.name) {
                    prune(model, v, &p.schema, depth + 1);
                }
            }
        }
        (SchemaType::Map(inner), Value::Object(map)) => {
            for v in map.values_mut() {
                prune(model, v, inner, depth + 1);
            }
        }
        (SchemaType::Array(inner), Value::Array(items)) => {
            for v in items {
                prune(model, v, inner, depth + 1);
            }
        }
        _ => {}
    }
}

/// The first enum value worth showing: `null` and `""` are listed by some schemas to allow
/// "unset", which tests nothing.
fn first_enum_value(schema: &Schema) -> Option<Value> {
    let values = &schema.enum_values;
    values
        .iter()
        .find(|v| !v.is_null() && v.as_str() != Some(""))
        .or_else(|| values.first())
        .cloned()
}

fn min_count(schema: &Schema, keyword: &str) -> u64 {
    schema
        .constraints
        .get(keyword)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The bounds of a number schema as `(minimum, exclusive, maximum, exclusive)`.
fn bounds(schema: &Schema) -> (Option<f64>, bool, Option<f64>, bool) {
    let c = &schema.constraints;
    let num = |k: &str| c.get(k).and_then(Value::as_f64);
    let flag = |k: &str| c.get(k).and_then(Value::as_bool).unwrap_or(false);
    (
        num("minimum"),
        flag("exclusiveMinimum"),
        num("maximum"),
        flag("exclusiveMaximum"),
    )
}

/// `base` moved into the schema's bounds and the Rust type's range `[lo, hi]`.
fn clamp_integer(schema: &Schema, base: i64, lo: i64, hi: i64) -> i64 {
    let (min, min_excl, max, max_excl) = bounds(schema);
    let mut lo = lo as f64;
    let mut hi = hi as f64;
    if let Some(m) = min {
        let m = if min_excl { m.floor() + 1.0 } else { m.ceil() };
        lo = lo.max(m);
    }
    if let Some(m) = max {
        let m = if max_excl { m.ceil() - 1.0 } else { m.floor() };
        hi = hi.min(m);
    }
    let v = (base as f64).max(lo).min(hi);
    // `v` is the base or a bound the spec wrote as a (small) integer, so the cast is exact; `as`
    // saturates should a spec write a bound beyond i64.
    v as i64
}

/// [`NUMBER_SAMPLE`] moved into the schema's bounds, kept off whole numbers.
fn clamp_number(schema: &Schema) -> f64 {
    let (min, _, max, _) = bounds(schema);
    let mut v = NUMBER_SAMPLE;
    if let Some(m) = min
        && v <= m
    {
        v = m.floor() + 1.5;
    }
    if let Some(m) = max
        && v >= m
    {
        v = m.ceil() - 0.5;
    }
    v
}

fn number_value(v: f64) -> Value {
    Number::from_f64(v).map_or_else(|| json!(NUMBER_SAMPLE), Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Extensions, Kind, Property, Resource};

    fn prop(name: &str, ty: SchemaType) -> Property {
        Property {
            name: name.into(),
            schema: Schema::of(ty),
        }
    }

    fn object(props: Vec<Property>, required: &[&str]) -> Schema {
        Schema::of(SchemaType::Object(ObjectType {
            properties: props,
            required: required.iter().map(|s| s.to_string()).collect(),
            additional_properties: None,
        }))
    }

    fn string() -> SchemaType {
        SchemaType::String { format: None }
    }

    fn model(types: Vec<(&str, Schema)>) -> Model {
        let mut m = Model::default();
        for (n, s) in types {
            m.types.insert(n.into(), s);
        }
        m
    }

    #[test]
    fn scalars_follow_the_value_table() {
        let m = Model::default();
        let mut int_bounded = Schema::of(SchemaType::Integer {
            format: Some("int32".into()),
        });
        int_bounded.constraints.insert("maximum".into(), json!(10));
        let mut int_excl = Schema::of(SchemaType::Integer {
            format: Some("int64".into()),
        });
        int_excl.constraints.insert("maximum".into(), json!(100));
        int_excl
            .constraints
            .insert("exclusiveMaximum".into(), json!(true));
        let mut num_min = Schema::of(SchemaType::Number { format: None });
        num_min.constraints.insert("minimum".into(), json!(2));
        let mut enumerated = Schema::of(string());
        enumerated.enum_values = vec![Value::Null, json!(""), json!("Exact"), json!("Prefix")];
        let cases: Vec<(Schema, Value)> = vec![
            (
                Schema::of(SchemaType::Integer {
                    format: Some("int32".into()),
                }),
                json!(42),
            ),
            (Schema::of(SchemaType::Integer { format: None }), json!(42)),
            (
                Schema::of(SchemaType::Integer {
                    format: Some("int64".into()),
                }),
                json!(5_000_000_000_i64),
            ),
            (int_bounded, json!(10)),
            (int_excl, json!(99)),
            (Schema::of(SchemaType::Number { format: None }), json!(1.5)),
            (num_min, json!(3.5)),
            (Schema::of(SchemaType::Boolean), json!(true)),
            (
                Schema::of(SchemaType::String {
                    format: Some("byte".into()),
                }),
                json!("aGVsbG8="),
            ),
            (
                Schema::of(SchemaType::String {
                    format: Some("date-time".into()),
                }),
                json!("2024-01-02T03:04:05Z"),
            ),
            (enumerated, json!("Exact")),
            (Schema::of(string()), json!("sample-value")),
            (Schema::of(SchemaType::Any), json_sample()),
        ];
        for (schema, want) in cases {
            assert_eq!(
                sample_schema(&m, &schema, Variant::Full).unwrap(),
                want,
                "{schema:?}"
            );
        }
    }

    #[test]
    fn special_definitions_use_runtime_forms() {
        let m = model(vec![(
            "T",
            object(
                vec![
                    prop(
                        "q",
                        SchemaType::Ref("io.k8s.apimachinery.pkg.api.resource.Quantity".into()),
                    ),
                    prop(
                        "q2",
                        SchemaType::Ref("io.k8s.apimachinery.pkg.api.resource.Quantity".into()),
                    ),
                    prop(
                        "i",
                        SchemaType::Ref("io.k8s.apimachinery.pkg.util.intstr.IntOrString".into()),
                    ),
                    prop("i2", SchemaType::IntOrString),
                    prop(
                        "t",
                        SchemaType::Ref("io.k8s.apimachinery.pkg.apis.meta.v1.Time".into()),
                    ),
                    prop(
                        "mt",
                        SchemaType::Ref("io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime".into()),
                    ),
                    prop(
                        "d",
                        SchemaType::Ref("io.k8s.apimachinery.pkg.apis.meta.v1.Duration".into()),
                    ),
                    prop(
                        "raw",
                        SchemaType::Ref("io.k8s.apimachinery.pkg.runtime.RawExtension".into()),
                    ),
                ],
                &[],
            ),
        )]);
        // None of the special names is defined in this model: they must not be looked up.
        let v = sample_definition(&m, "T", Variant::Full).unwrap();
        assert_eq!(
            v,
            json!({
                "q": "1500m", "q2": "2Gi", "i": 3, "i2": "25%",
                "t": TIME_SAMPLE, "mt": MICRO_TIME_SAMPLE, "d": "1h2m3s", "raw": json_sample()
            })
        );
    }

    #[test]
    fn quantity_pattern_int_or_string_gets_a_quantity_string() {
        let mut s = Schema::of(SchemaType::IntOrString);
        s.constraints
            .insert("pattern".into(), json!(QUANTITY_PATTERN));
        assert_eq!(Special::of_inline(&s), Some(Special::Quantity));
        let m = Model::default();
        assert_eq!(
            sample_schema(&m, &s, Variant::Full).unwrap(),
            json!("1500m")
        );
        let map = Schema::of(SchemaType::Map(Box::new(s)));
        assert_eq!(
            sample_schema(&m, &map, Variant::Full).unwrap(),
            json!({"cpu": "1500m"})
        );
    }

    #[test]
    fn variants_differ_in_optional_fields_and_collections() {
        let mut nullable = Schema::of(string());
        nullable.nullable = true;
        let list = Schema::of(SchemaType::Array(Box::new(Schema::of(string()))));
        let t = object(
            vec![
                prop("req", string()),
                prop("opt", string()),
                Property {
                    name: "list".into(),
                    schema: list.clone(),
                },
                Property {
                    name: "reqList".into(),
                    schema: list,
                },
                prop("map", SchemaType::Map(Box::new(Schema::of(string())))),
                Property {
                    name: "maybe".into(),
                    schema: nullable,
                },
            ],
            &["req", "reqList"],
        );
        let m = model(vec![("T", t)]);
        let cases = [
            (
                Variant::Full,
                json!({"req": "sample-req", "opt": "sample-opt", "list": ["sample-list"],
                       "reqList": ["sample-reqList"], "map": {"key": "sample-key"},
                       "maybe": "sample-maybe"}),
            ),
            (
                Variant::Minimal,
                json!({"req": "sample-req", "reqList": []}),
            ),
            (
                Variant::Empty,
                json!({"req": "sample-req", "opt": "sample-opt", "list": [], "reqList": [],
                       "map": {}, "maybe": null}),
            ),
        ];
        for (variant, want) in cases {
            assert_eq!(
                sample_definition(&m, "T", variant).unwrap(),
                want,
                "{variant:?}"
            );
        }
    }

    #[test]
    fn list_map_items_keep_their_keys_in_minimal_samples() {
        let item = object(vec![prop("name", string()), prop("port", string())], &[]);
        let mut list = Schema::of(SchemaType::Array(Box::new(Schema::of(SchemaType::Ref(
            "Item".into(),
        )))));
        list.ext = Extensions {
            list_type: Some(ListType::Map),
            list_map_keys: vec!["name".into()],
            ..Extensions::default()
        };
        list.constraints.insert("minItems".into(), json!(1));
        let t = object(
            vec![Property {
                name: "items".into(),
                schema: list,
            }],
            &["items"],
        );
        let m = model(vec![("T", t), ("Item", item)]);
        assert_eq!(
            sample_definition(&m, "T", Variant::Minimal).unwrap(),
            json!({"items": [{"name": "sample-name"}]})
        );
    }

    #[test]
    fn recursion_is_unrolled_once_then_cut() {
        let t = object(
            vec![
                prop("name", string()),
                prop("child", SchemaType::Ref("T".into())),
                prop(
                    "children",
                    SchemaType::Array(Box::new(Schema::of(SchemaType::Ref("T".into())))),
                ),
            ],
            &[],
        );
        let m = model(vec![("T", t)]);
        let inner = json!({"name": "sample-name"});
        let v = sample_definition(&m, "T", Variant::Full).unwrap();
        let want = json!({
            "name": "sample-name",
            "child": {"name": "sample-name"},
            "children": [inner]
        });
        assert_eq!(v, want);
    }

    #[test]
    fn required_recursion_gets_minimal_form_or_an_error() {
        // A required list of itself: the third level is minimal, where a required list is empty.
        let tree = object(
            vec![prop(
                "items",
                SchemaType::Array(Box::new(Schema::of(SchemaType::Ref("A".into())))),
            )],
            &["items"],
        );
        let m = model(vec![("A", tree)]);
        assert_eq!(
            sample_definition(&m, "A", Variant::Full).unwrap(),
            json!({"items": [{"items": [{"items": []}]}]})
        );

        let endless = object(vec![prop("next", SchemaType::Ref("E".into()))], &["next"]);
        let m = model(vec![("E", endless)]);
        let err = sample_definition(&m, "E", Variant::Full).unwrap_err();
        assert!(
            matches!(&err, SampleError::Unbounded { definition, .. } if definition == "E"),
            "{err}"
        );
        assert!(err.to_string().contains("#/next/next"), "{err}");
    }

    #[test]
    fn dangling_refs_and_unknown_kinds_are_errors() {
        let t = object(
            vec![prop(
                "x",
                SchemaType::Array(Box::new(Schema::of(SchemaType::Ref("Missing".into())))),
            )],
            &[],
        );
        let m = model(vec![("T", t)]);
        let err = sample_definition(&m, "T", Variant::Full).unwrap_err();
        assert_eq!(
            err,
            SampleError::MissingDefinition {
                root: "T".into(),
                pointer: "/x/0".into(),
                target: "Missing".into()
            }
        );
        assert!(matches!(
            sample_kind(&m, &Gvk::new("a", "v1", "X"), Variant::Full),
            Err(SampleError::UnknownKind(_))
        ));
    }

    #[test]
    fn kind_samples_lead_with_type_meta_and_metadata() {
        let root = object(
            vec![
                prop("apiVersion", string()),
                prop("kind", string()),
                prop("metadata", SchemaType::Object(ObjectType::default())),
                prop("spec", SchemaType::Object(ObjectType::default())),
            ],
            &[],
        );
        let mut m = model(vec![("io.example.v1.Widget", root)]);
        let gvk = Gvk::new("example.io", "v1", "Widget");
        m.kinds.insert(
            gvk.clone(),
            Kind {
                gvk: gvk.clone(),
                definition: "io.example.v1.Widget".into(),
                resource: Some(Resource {
                    plural: "widgets".into(),
                    scope: Scope::Namespaced,
                    verbs: Default::default(),
                    subresources: Default::default(),
                    crd: None,
                }),
            },
        );
        let minimal = sample_kind(&m, &gvk, Variant::Minimal).unwrap();
        assert_eq!(
            minimal,
            json!({"apiVersion": "example.io/v1", "kind": "Widget",
                   "metadata": {"name": "sample-widget", "namespace": "sample-ns"}})
        );
        let full = sample_kind(&m, &gvk, Variant::Full).unwrap();
        let keys: Vec<&str> = full
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["apiVersion", "kind", "metadata", "spec"]);
        assert_eq!(full["metadata"]["namespace"], "sample-ns");
        assert_eq!(
            full["metadata"]["managedFields"][0]["apiVersion"],
            "example.io/v1"
        );
        assert_eq!(full["spec"], json!({}));

        // Nested, the kind keeps its type meta and metadata even in the minimal variant.
        let holder = object(
            vec![prop("w", SchemaType::Ref("io.example.v1.Widget".into()))],
            &["w"],
        );
        m.types.insert("H".into(), holder);
        assert_eq!(
            sample_definition(&m, "H", Variant::Minimal).unwrap(),
            json!({"w": minimal})
        );
    }

    #[test]
    fn object_meta_is_cut_to_the_model_definition() {
        let meta = object(vec![prop("name", string()), prop("uid", string())], &[]);
        let holder = object(
            vec![prop("metadata", SchemaType::Ref(OBJECT_META.into()))],
            &[],
        );
        let m = model(vec![(OBJECT_META, meta), ("H", holder)]);
        assert_eq!(
            sample_definition(&m, "H", Variant::Full).unwrap(),
            json!({"metadata": {"name": "sample-nested", "uid": UID_SAMPLE}})
        );
    }
}
