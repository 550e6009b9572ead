//! The schemas of an OpenAPI document: each served kind's and its list's, named like
//! upstream's (`io.k8s.api.<group>.<version>.<Kind>`, the reversed group for others), the
//! shared meta schemas operations refer to, and the rewrite of a v3 schema for Swagger 2.0.
//! How a schema is referred to depends on the document's [`Dialect`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::registry::RegisteredKind;
use crate::{GroupVersionKind, Registry, ResourceInfo};

/// Which OpenAPI dialect a document is rendered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    V2,
    V3,
}

impl Dialect {
    pub(super) fn schema_ref(self, name: &str) -> Value {
        match self {
            Dialect::V2 => json!({"$ref": format!("#/definitions/{name}")}),
            Dialect::V3 => json!({"$ref": format!("#/components/schemas/{name}")}),
        }
    }
}

pub(super) const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";
pub(super) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// The schema name of a kind, following upstream's naming.
pub(crate) fn definition_name(gvk: &GroupVersionKind) -> String {
    let group = gvk.group.as_ref();
    let prefix = if group.is_empty() {
        "io.k8s.api.core".to_owned()
    } else if let Some(short) = group.strip_suffix(".k8s.io") {
        format!("io.k8s.api.{}", short.split('.').next().unwrap_or(short))
    } else if !group.contains('.') {
        format!("io.k8s.api.{group}")
    } else {
        group.split('.').rev().collect::<Vec<_>>().join(".")
    };
    format!("{prefix}.{}.{}", gvk.version, gvk.kind)
}

pub(super) fn gvk_object(gvk: &GroupVersionKind) -> Value {
    json!({"group": gvk.group, "kind": gvk.kind, "version": gvk.version})
}

/// TypeMeta's and ObjectMeta's descriptions, as upstream's generated definitions and
/// `swaggerPartialObjectMetadataDescriptions` word them.
const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DOC: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
/// An embedded resource's own wording (`addEmbeddedProperties`).
const EMBEDDED_API_VERSION_DOC: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DOC: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
/// The definition a custom resource's `metadata` refers to.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A CRD's schema as upstream publishes it (`buildKubeNative` in apiextensions-apiserver's
/// `pkg/controller/openapi/builder`): `apiVersion`, `kind` and `metadata` (a reference to
/// ObjectMeta) added at the root and in every embedded resource, except that a Swagger 2.0
/// document publishes a schema that keeps unknown fields at its root as a bare object, and
/// leaves such subtrees alone, because kubectl would refuse every field they do not declare.
fn crd_published(mut schema: Value, dialect: Dialect, meta: &Value) -> Value {
    let keeps_unknown = |schema: &Value| {
        schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
    };
    if dialect == Dialect::V2 && keeps_unknown(&schema) {
        return json!({"type": "object"});
    }
    if let Some(object) = schema.as_object_mut() {
        add_type_meta(object, [API_VERSION_DOC, KIND_DOC], meta);
    }
    add_embedded_properties(&mut schema, dialect, meta);
    schema
}

/// Sets the `apiVersion` and `kind` properties (with these descriptions) and `metadata` of an
/// object schema.
fn add_type_meta(object: &mut serde_json::Map<String, Value>, docs: [&str; 2], meta: &Value) {
    let properties = object.entry("properties").or_insert_with(|| json!({}));
    if let Some(properties) = properties.as_object_mut() {
        for (name, doc) in ["apiVersion", "kind"].into_iter().zip(docs) {
            properties.insert(name.into(), json!({"description": doc, "type": "string"}));
        }
        properties.insert("metadata".into(), meta.clone());
    }
}

/// `addEmbeddedProperties`: the type meta and metadata of every `x-kubernetes-embedded-resource`
/// below `schema`, which also requires `kind` and `apiVersion`.
fn add_embedded_properties(schema: &mut Value, dialect: Dialect, meta: &Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties
            .values_mut()
            .for_each(|child| add_embedded_properties(child, dialect, meta));
    }
    for nested in ["items", "additionalProperties"] {
        if let Some(child) = object.get_mut(nested) {
            add_embedded_properties(child, dialect, meta);
        }
    }
    let flag = |name: &str| object.get(name) == Some(&Value::Bool(true));
    if dialect == Dialect::V2 && flag("x-kubernetes-preserve-unknown-fields") {
        return;
    }
    if !flag("x-kubernetes-embedded-resource") {
        return;
    }
    add_type_meta(object, [EMBEDDED_API_VERSION_DOC, EMBEDDED_KIND_DOC], meta);
    let required = object.entry("required").or_insert_with(|| json!([]));
    if let Some(required) = required.as_array_mut() {
        for name in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == name) {
                required.push(json!(name));
            }
        }
    }
}

/// What a custom resource's `metadata` is published as: a reference to ObjectMeta (an `allOf`
/// of it in v3, where a reference takes no siblings) when the document has it, else an object.
fn crd_metadata(
    registry: &Registry,
    dialect: Dialect,
    schemas: &mut BTreeMap<String, Value>,
) -> Value {
    add_with_references(registry, OBJECT_META, schemas);
    if !schemas.contains_key(OBJECT_META) {
        return json!({"description": METADATA_DOC, "type": "object"});
    }
    let reference = Dialect::V3.schema_ref(OBJECT_META);
    match dialect {
        // References are written in v3's form and rewritten with the rest for Swagger 2.0.
        Dialect::V2 => {
            let mut meta = reference;
            meta["description"] = json!(METADATA_DOC);
            meta
        }
        Dialect::V3 => json!({"description": METADATA_DOC, "allOf": [reference]}),
    }
}

/// The kind's own schema (a CRD's as upstream publishes it), or the permissive stand-in.
fn kind_schema(
    kind: &RegisteredKind,
    registry: &Registry,
    dialect: Dialect,
    schemas: &mut BTreeMap<String, Value>,
) -> Value {
    let info = &*kind.info;
    let registered = kind
        .schema
        .as_ref()
        .and_then(|source| source())
        .and_then(|schema| serde_json::to_value(&*schema).ok())
        .filter(Value::is_object);
    let registered = match registered {
        Some(schema) if kind.from_crd => {
            let meta = crd_metadata(registry, dialect, schemas);
            Some(crd_published(schema, dialect, &meta))
        }
        other => other,
    };
    let mut schema = registered.unwrap_or_else(|| {
        json!({
            "description": format!(
                "{} has no published schema; every field is accepted.",
                info.gvk.kind
            ),
            "type": "object",
            "properties": {
                "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
                "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
                "metadata": {"description": "Standard object's metadata.", "type": "object"}
            },
            "x-kubernetes-preserve-unknown-fields": true
        })
    });
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "x-kubernetes-group-version-kind".to_owned(),
            json!([gvk_object(&info.gvk)]),
        );
    }
    schema
}

fn list_schema(info: &ResourceInfo, item: &str, dialect: Dialect) -> Value {
    let list_gvk = GroupVersionKind {
        kind: info.list_kind().into(),
        ..info.gvk.clone()
    };
    json!({
        "description": format!("{} is a list of {}.", info.list_kind(), info.gvk.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "items": {
                "description": format!("List of {}.", info.plural),
                "type": "array",
                "items": dialect.schema_ref(item)
            },
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
            "metadata": {"description": "Standard list metadata.", "type": "object"}
        },
        "x-kubernetes-group-version-kind": [gvk_object(&list_gvk)]
    })
}

/// The shared meta schemas operations refer to.
pub(super) fn meta_schemas() -> Vec<(String, Value)> {
    let open = |description: &str| {
        json!({
            "description": description,
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true
        })
    };
    vec![
        (
            format!("{META}.Patch"),
            json!({"description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object"}),
        ),
        (
            format!("{META}.Status"),
            open("Status is a return value for calls that don't return other objects."),
        ),
        (
            format!("{META}.DeleteOptions"),
            open("DeleteOptions may be provided when deleting an API object."),
        ),
        (
            format!("{META}.WatchEvent"),
            json!({
                "description": "Event represents a single event to a watched resource.",
                "type": "object",
                "required": ["type", "object"],
                "properties": {
                    "object": {"description": "Object is the object that changed (or a Status for ERROR).", "type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "type": {"type": "string"}
                }
            }),
        ),
        (
            SCALE.to_owned(),
            json!({
                "description": "Scale represents a scaling request for a resource.",
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "format": "int32"}}},
                    "status": {"type": "object", "required": ["replicas"], "properties": {"replicas": {"type": "integer", "format": "int32"}, "selector": {"type": "string"}}}
                },
                "x-kubernetes-group-version-kind": [{"group": "autoscaling", "kind": "Scale", "version": "v1"}]
            }),
        ),
    ]
}

/// Rewrites a v3 schema for Swagger 2.0: references point into `definitions`, and the
/// keywords Swagger 2.0 lacks are dropped, as upstream drops them when publishing CRD
/// schemas in v2. Only schemas are rewritten, found where schemas nest (`properties`,
/// `items`, `additionalProperties`, `allOf`, ...): a property that happens to be called
/// `anyOf` or `nullable` (as JSONSchemaProps' are) stays, and so do values (`default`,
/// `enum`, `example`, extensions).
pub(super) fn to_v2_schema(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    for keyword in ["nullable", "oneOf", "anyOf", "not"] {
        object.remove(keyword);
    }
    if let Some(Value::String(reference)) = object.get_mut("$ref")
        && let Some(name) = reference.strip_prefix("#/components/schemas/")
    {
        *reference = format!("#/definitions/{name}");
    }
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            ("properties" | "patternProperties" | "definitions", Value::Object(named)) => {
                named.values_mut().for_each(to_v2_schema);
            }
            ("items" | "allOf", Value::Array(schemas)) => schemas.iter_mut().for_each(to_v2_schema),
            ("items" | "additionalProperties" | "additionalItems", value) => to_v2_schema(value),
            _ => {}
        }
    }
}

/// Rewrites a schema for an OpenAPI 3 document as upstream publishes one: a reference with
/// keywords beside it (a field's description, its patch strategy) becomes an `allOf` of the bare
/// reference with the keywords kept beside it, since OpenAPI 3.0 ignores a `$ref`'s siblings;
/// `kubectl explain` then shows the field's description rather than its type's.
pub(super) fn to_v3_schema(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if object.len() > 1
        && let Some(reference) = object.remove("$ref")
    {
        object.insert("allOf".to_owned(), json!([{"$ref": reference}]));
    }
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            ("properties" | "patternProperties", Value::Object(named)) => {
                named.values_mut().for_each(to_v3_schema);
            }
            ("items" | "allOf", Value::Array(schemas)) => schemas.iter_mut().for_each(to_v3_schema),
            ("items" | "additionalProperties", value) => to_v3_schema(value),
            _ => {}
        }
    }
}

/// Where a kind's schemas come from and what they are called.
pub(super) struct SchemaNames {
    pub(super) kind: String,
    pub(super) list: String,
}

/// The list kind of `info`.
fn list_gvk(info: &ResourceInfo) -> GroupVersionKind {
    GroupVersionKind {
        kind: info.list_kind().into(),
        ..info.gvk.clone()
    }
}

/// Adds the registry's definition `name` and, transitively, every definition it refers to.
fn add_with_references(registry: &Registry, name: &str, schemas: &mut BTreeMap<String, Value>) {
    let mut pending = vec![name.to_owned()];
    while let Some(name) = pending.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        let Some(schema) = registry.definition(&name) else {
            continue;
        };
        collect_references(schema, &mut pending);
        schemas.insert(name, schema.clone());
    }
}

fn collect_references(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(object) => {
            if let Some(name) = object
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                out.push(name.to_owned());
            }
            object.values().for_each(|v| collect_references(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_references(v, out)),
        _ => {}
    }
}

/// Adds a kind's schema and its list's to `schemas`: the kind's own schema when it was
/// registered with one, else the registry's definitions tagged with the kind (and what they
/// refer to), else a permissive stand-in.
pub(super) fn add_kind_schemas(
    registry: &Registry,
    kind: &RegisteredKind,
    dialect: Dialect,
    schemas: &mut BTreeMap<String, Value>,
) -> SchemaNames {
    let info = &*kind.info;
    let defined = kind
        .schema
        .is_none()
        .then(|| registry.definition_of(&info.gvk))
        .flatten();
    let kind_name = match defined {
        Some((name, _)) => {
            add_with_references(registry, name, schemas);
            name.to_owned()
        }
        None => {
            let name = definition_name(&info.gvk);
            let schema = kind_schema(kind, registry, dialect, schemas);
            schemas.insert(name.clone(), schema);
            name
        }
    };
    let list = list_gvk(info);
    let list_name = match defined.and_then(|_| registry.definition_of(&list)) {
        Some((name, _)) => {
            add_with_references(registry, name, schemas);
            name.to_owned()
        }
        None => {
            let name = definition_name(&list);
            schemas.insert(name.clone(), list_schema(info, &kind_name, dialect));
            name
        }
    };
    SchemaNames {
        kind: kind_name,
        list: list_name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_names_follow_upstream() {
        let cases = [
            (("", "v1", "Pod"), "io.k8s.api.core.v1.Pod"),
            (
                ("apps", "v1", "Deployment"),
                "io.k8s.api.apps.v1.Deployment",
            ),
            (
                ("networking.k8s.io", "v1", "Ingress"),
                "io.k8s.api.networking.v1.Ingress",
            ),
            (
                ("rbac.authorization.k8s.io", "v1", "Role"),
                "io.k8s.api.rbac.v1.Role",
            ),
            (
                ("widgets.kapi.dev", "v1beta1", "Widget"),
                "dev.kapi.widgets.v1beta1.Widget",
            ),
        ];
        for ((g, v, k), expected) in cases {
            assert_eq!(
                definition_name(&GroupVersionKind::new_static(g, v, k)),
                expected
            );
        }
    }

    /// Upstream's v3 document wraps a described reference (`DeploymentSpec.strategy`:
    /// `{"allOf": [{"$ref": ...}], "description": ..., "x-kubernetes-patch-strategy": ...}`).
    #[test]
    fn v3_rewrite() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "strategy": {"$ref": "#/components/schemas/S", "description": "How.", "x-kubernetes-patch-strategy": "retainKeys"},
                "bare": {"$ref": "#/components/schemas/B"},
                "list": {"type": "array", "items": {"$ref": "#/components/schemas/I", "description": "One."}}
            }
        });
        to_v3_schema(&mut schema);
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "strategy": {"allOf": [{"$ref": "#/components/schemas/S"}], "description": "How.", "x-kubernetes-patch-strategy": "retainKeys"},
                    "bare": {"$ref": "#/components/schemas/B"},
                    "list": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/I"}], "description": "One."}}
                }
            })
        );
    }

    #[test]
    fn v2_rewrite() {
        let mut schema = json!({
            "type": "object",
            "nullable": true,
            "properties": {"a": {"$ref": "#/components/schemas/X", "anyOf": [{"type": "integer"}]}}
        });
        to_v2_schema(&mut schema);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/X"}}})
        );
        // JSONSchemaProps' own fields are properties named like the keywords: they stay, or
        // kubectl's client-side validation (against v2) refuses every CRD using them.
        let mut props = json!({
            "type": "object",
            "properties": {
                "anyOf": {"type": "array", "items": {"$ref": "#/components/schemas/P", "nullable": true}},
                "nullable": {"type": "boolean"},
                "default": {"type": "object", "default": {"not": 1}}
            },
            "additionalProperties": {"oneOf": [{"type": "string"}]}
        });
        to_v2_schema(&mut props);
        assert_eq!(
            props,
            json!({
                "type": "object",
                "properties": {
                    "anyOf": {"type": "array", "items": {"$ref": "#/definitions/P"}},
                    "nullable": {"type": "boolean"},
                    "default": {"type": "object", "default": {"not": 1}}
                },
                "additionalProperties": {}
            })
        );
    }
}
