// Over the server's 800-line bound: the v2 and v3 documents share one walk over the catalog
// and its schemas; splitting the two documents apart is left for a later change.
//! OpenAPI documents built from the registry: `/openapi/v2` (Swagger 2.0), the `/openapi/v3`
//! index, and one `/openapi/v3/<api|apis>/<group>/<version>` document per served group/version.
//!
//! Every served kind gets a schema named like upstream's (`io.k8s.api.<group>.<version>.<Kind>`
//! for Kubernetes groups, the reversed group for others, e.g. `dev.kapi.widgets.v1.Widget`),
//! tagged `x-kubernetes-group-version-kind`, plus its `<Kind>List`. The schema is the one the
//! kind was registered with ([`Registry::register_with_schema`](crate::Registry) or
//! `register_custom`); else the registry's definition tagged with the kind's GVK (generated
//! crates hand theirs over in `register`, see [`Registry::add_definitions`](crate::Registry)),
//! published under its own name with every definition it refers to; else a permissive object
//! schema (`x-kubernetes-preserve-unknown-fields`) so clients still find and accept the kind.
//!
//! Paths carry the operations kube-apiserver publishes (list, create, deletecollection, get,
//! replace, patch, delete, and the `status`/`scale` subresources), each with
//! `x-kubernetes-action` and `x-kubernetes-group-version-kind`, because that is how kubectl
//! finds a kind: `kubectl apply` checks the PATCH operation for the `fieldValidation` parameter
//! to choose server-side validation, and `kubectl explain` looks the schema up by its GVK. The
//! PATCH request bodies list JSON patch, merge patch and apply patch but not strategic merge
//! patch, so kubectl computes patches the way it does without OpenAPI (strategic merge for
//! kinds it knows, merge patch otherwise).
//!
//! The v3 index names each document with `?hash=<content hash>`; a request with the current
//! hash is cacheable forever, one with a stale hash is redirected (301) to the current one, and
//! `ETag`/`If-None-Match` work on every document. Only JSON is served: a client that accepts
//! nothing but protobuf (client-go asks `/openapi/v2` that way) gets 406.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::{Path, RawQuery, State as Extract};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use crate::meta::Status;
use crate::registry::RegisteredKind;
use crate::server::describe::discovery::{Served, json_response, not_found, status_response};
use crate::server::describe::health::percent_decode;
use crate::server::state::State;
use crate::{GroupVersionKind, KubeVersion, Registry, ResourceInfo, Verb};

/// Which OpenAPI dialect a document is rendered in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V2,
    V3,
}

impl Dialect {
    fn schema_ref(self, name: &str) -> Value {
        match self {
            Dialect::V2 => json!({"$ref": format!("#/definitions/{name}")}),
            Dialect::V3 => json!({"$ref": format!("#/components/schemas/{name}")}),
        }
    }
}

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

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

fn gvk_object(gvk: &GroupVersionKind) -> Value {
    json!({"group": gvk.group, "kind": gvk.kind, "version": gvk.version})
}

/// The kind's own schema, or the permissive stand-in.
fn kind_schema(kind: &RegisteredKind) -> Value {
    let info = &*kind.info;
    let registered = kind
        .schema
        .as_ref()
        .and_then(|source| source())
        .and_then(|schema| serde_json::to_value(schema).ok())
        .filter(Value::is_object);
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
fn meta_schemas() -> Vec<(String, Value)> {
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

/// A parameter of an operation.
struct Param {
    name: &'static str,
    location: &'static str,
    kind: &'static str,
    required: bool,
    description: &'static str,
}

const fn query(name: &'static str, kind: &'static str, description: &'static str) -> Param {
    Param {
        name,
        location: "query",
        kind,
        required: false,
        description,
    }
}

const PRETTY: Param = query(
    "pretty",
    "string",
    "If 'true', then the output is pretty printed.",
);
const DRY_RUN: Param = query(
    "dryRun",
    "string",
    "When present, indicates that modifications should not be persisted.",
);
const FIELD_MANAGER: Param = query(
    "fieldManager",
    "string",
    "fieldManager is a name associated with the actor or entity that is making these changes.",
);
const FIELD_VALIDATION: Param = query(
    "fieldValidation",
    "string",
    "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn or Strict.",
);
const FORCE: Param = query(
    "force",
    "boolean",
    "Force is going to \"force\" Apply requests. It must be unset for non-apply patch requests.",
);
const LIST_PARAMS: [Param; 10] = [
    query(
        "allowWatchBookmarks",
        "boolean",
        "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
    ),
    query(
        "continue",
        "string",
        "The continue option should be set when retrieving more results from the server.",
    ),
    query(
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields.",
    ),
    query(
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels.",
    ),
    query(
        "limit",
        "integer",
        "limit is a maximum number of responses to return for a list call.",
    ),
    query(
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    query(
        "resourceVersionMatch",
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    query(
        "sendInitialEvents",
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
    ),
    query(
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call.",
    ),
    query(
        "watch",
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
    ),
];
const DELETE_PARAMS: [Param; 3] = [
    DRY_RUN,
    query(
        "gracePeriodSeconds",
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    query(
        "propagationPolicy",
        "string",
        "Whether and how garbage collection will be performed: Orphan, Background or Foreground.",
    ),
];

fn render_param(param: &Param, dialect: Dialect) -> Value {
    let mut out = Map::new();
    match dialect {
        Dialect::V2 => {
            out.insert("uniqueItems".into(), json!(true));
            out.insert("type".into(), json!(param.kind));
            out.insert("description".into(), json!(param.description));
            out.insert("name".into(), json!(param.name));
            out.insert("in".into(), json!(param.location));
        }
        Dialect::V3 => {
            out.insert("name".into(), json!(param.name));
            out.insert("in".into(), json!(param.location));
            out.insert("description".into(), json!(param.description));
            out.insert(
                "schema".into(),
                json!({"type": param.kind, "uniqueItems": true}),
            );
        }
    }
    if param.required {
        out.insert("required".into(), json!(true));
    }
    Value::Object(out)
}

/// One operation of a path.
struct Operation<'a> {
    method: &'static str,
    action: &'static str,
    verb: &'static str,
    id_suffix: &'a str,
    description: String,
    params: Vec<&'a Param>,
    /// Request body: schema name and content types.
    body: Option<(String, &'static [&'static str])>,
    response: Option<String>,
    gvk: &'a GroupVersionKind,
}

const WRITE_TYPES: &[&str] = &["application/json", "application/yaml"];
const PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
];
const PRODUCES: &[&str] = &["application/json", "application/yaml"];

fn render_operation(op: &Operation<'_>, tag: &str, id_base: &str, dialect: Dialect) -> Value {
    let mut out = Map::new();
    out.insert("tags".into(), json!([tag]));
    out.insert("description".into(), json!(op.description));
    if dialect == Dialect::V2 {
        if let Some((_, types)) = &op.body {
            out.insert("consumes".into(), json!(types));
        }
        out.insert("produces".into(), json!(PRODUCES));
        out.insert("schemes".into(), json!(["https"]));
    }
    out.insert(
        "operationId".into(),
        json!(format!("{}{id_base}{}", op.verb, op.id_suffix)),
    );
    let mut params: Vec<Value> = Vec::new();
    if dialect == Dialect::V2
        && let Some((schema, _)) = &op.body
    {
        params.push(json!({
            "name": "body", "in": "body", "required": true,
            "schema": dialect.schema_ref(schema)
        }));
    }
    params.extend(op.params.iter().map(|p| render_param(p, dialect)));
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    if dialect == Dialect::V3
        && let Some((schema, types)) = &op.body
    {
        let content: Map<String, Value> = types
            .iter()
            .map(|t| {
                (
                    (*t).to_owned(),
                    json!({"schema": dialect.schema_ref(schema)}),
                )
            })
            .collect();
        out.insert(
            "requestBody".into(),
            json!({"content": content, "required": true}),
        );
    }
    let response = op.response.as_deref().unwrap_or("");
    let ok = match dialect {
        Dialect::V2 => json!({"description": "OK", "schema": dialect.schema_ref(response)}),
        Dialect::V3 => {
            let content: Map<String, Value> = PRODUCES
                .iter()
                .map(|t| {
                    (
                        (*t).to_owned(),
                        json!({"schema": dialect.schema_ref(response)}),
                    )
                })
                .collect();
            json!({"description": "OK", "content": content})
        }
    };
    out.insert(
        "responses".into(),
        json!({"200": ok, "401": {"description": "Unauthorized"}}),
    );
    out.insert("x-kubernetes-action".into(), json!(op.action));
    out.insert("x-kubernetes-group-version-kind".into(), gvk_object(op.gvk));
    Value::Object(out)
}

fn path_param(name: &'static str, description: &'static str) -> Param {
    Param {
        name,
        location: "path",
        kind: "string",
        required: true,
        description,
    }
}

/// `CoreV1`, `AppsV1`, `NetworkingV1`, `WidgetsKapiDevV1`: the group/version in operation ids.
fn id_group_version(group: &str, version: &str) -> String {
    let group = if group.is_empty() {
        "core"
    } else {
        group.strip_suffix(".k8s.io").unwrap_or(group)
    };
    let mut out = String::new();
    for part in group.split(['.', '-']).chain([version]) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

/// The operations' tag, as upstream writes it: `core_v1`, `apps_v1`, `rbacAuthorization_v1`.
fn tag(group: &str, version: &str) -> String {
    let camel = id_group_version(group, "");
    let mut chars = camel.chars();
    let first = chars.next().map(|c| c.to_lowercase().collect::<String>());
    format!("{}{}_{version}", first.unwrap_or_default(), chars.as_str())
}

/// Adds the paths of one kind to `paths`.
fn kind_paths(
    info: &ResourceInfo,
    names: &SchemaNames,
    dialect: Dialect,
    paths: &mut Map<String, Value>,
) {
    let gvk = &info.gvk;
    let group = gvk.group.as_ref();
    let base = if group.is_empty() {
        format!("/api/{}", gvk.version)
    } else {
        format!("/apis/{group}/{}", gvk.version)
    };
    let tag = tag(group, &gvk.version);
    let id_gv = id_group_version(group, &gvk.version);
    let namespaced = info.is_namespaced();
    let scoped = if namespaced { "Namespaced" } else { "" };
    let collection = if namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", info.plural)
    } else {
        format!("{base}/{}", info.plural)
    };
    let item = format!("{collection}/{{name}}");
    let kind_def = names.kind.clone();
    let list_def = names.list.clone();
    let has = |verb: Verb| info.verbs.contains(&verb);
    let name_param = path_param("name", "name of the resource");
    let namespace_param = path_param(
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let status_def = format!("{META}.Status");
    let patch_def = format!("{META}.Patch");
    let kind = gvk.kind.as_ref();
    let id_base = format!("{id_gv}{scoped}{kind}");

    let mut add_path = |path: String, ops: Vec<Operation<'_>>, with_name: bool| {
        if ops.is_empty() {
            return;
        }
        let mut entry = Map::new();
        for op in &ops {
            entry.insert(
                op.method.to_owned(),
                render_operation(op, &tag, &id_base, dialect),
            );
        }
        let mut params = Vec::new();
        if with_name {
            params.push(render_param(&name_param, dialect));
        }
        if namespaced && path.contains("{namespace}") {
            params.push(render_param(&namespace_param, dialect));
        }
        params.push(render_param(&PRETTY, dialect));
        entry.insert("parameters".into(), Value::Array(params));
        paths.insert(path, Value::Object(entry));
    };

    let mut ops = Vec::new();
    if has(Verb::List) {
        ops.push(Operation {
            method: "get",
            action: "list",
            verb: "list",
            id_suffix: "",
            description: format!("list or watch objects of kind {kind}"),
            params: LIST_PARAMS.iter().collect(),
            body: None,
            response: Some(list_def.clone()),
            gvk,
        });
    }
    if has(Verb::Create) {
        ops.push(Operation {
            method: "post",
            action: "post",
            verb: "create",
            id_suffix: "",
            description: format!("create a {kind}"),
            params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION],
            body: Some((kind_def.clone(), WRITE_TYPES)),
            response: Some(kind_def.clone()),
            gvk,
        });
    }
    if has(Verb::DeleteCollection) {
        ops.push(Operation {
            method: "delete",
            action: "deletecollection",
            verb: "deletecollection",
            id_suffix: "",
            description: format!("delete collection of {kind}"),
            params: DELETE_PARAMS.iter().chain(LIST_PARAMS.iter()).collect(),
            body: None,
            response: Some(status_def.clone()),
            gvk,
        });
    }
    add_path(collection.clone(), ops, false);

    let mut ops = Vec::new();
    if has(Verb::Get) {
        ops.push(Operation {
            method: "get",
            action: "get",
            verb: "read",
            id_suffix: "",
            description: format!("read the specified {kind}"),
            params: Vec::new(),
            body: None,
            response: Some(kind_def.clone()),
            gvk,
        });
    }
    if has(Verb::Update) {
        ops.push(Operation {
            method: "put",
            action: "put",
            verb: "replace",
            id_suffix: "",
            description: format!("replace the specified {kind}"),
            params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION],
            body: Some((kind_def.clone(), WRITE_TYPES)),
            response: Some(kind_def.clone()),
            gvk,
        });
    }
    if has(Verb::Patch) {
        ops.push(Operation {
            method: "patch",
            action: "patch",
            verb: "patch",
            id_suffix: "",
            description: format!("partially update the specified {kind}"),
            params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION, &FORCE],
            body: Some((patch_def.clone(), PATCH_TYPES)),
            response: Some(kind_def.clone()),
            gvk,
        });
    }
    if has(Verb::Delete) {
        ops.push(Operation {
            method: "delete",
            action: "delete",
            verb: "delete",
            id_suffix: "",
            description: format!("delete a {kind}"),
            params: DELETE_PARAMS.iter().collect(),
            body: None,
            response: Some(status_def.clone()),
            gvk,
        });
    }
    add_path(item.clone(), ops, true);

    let scale_gvk = GroupVersionKind::new_static("autoscaling", "v1", "Scale");
    let subresources: [(bool, &str, &str, &GroupVersionKind, &str); 2] = [
        (info.subresources.status, "status", "Status", gvk, &kind_def),
        (
            info.subresources.scale.is_some(),
            "scale",
            "Scale",
            &scale_gvk,
            SCALE,
        ),
    ];
    for (served, sub, suffix, sub_gvk, def) in subresources {
        if !served {
            continue;
        }
        let ops = vec![
            Operation {
                method: "get",
                action: "get",
                verb: "read",
                id_suffix: suffix,
                description: format!("read {sub} of the specified {kind}"),
                params: Vec::new(),
                body: None,
                response: Some(def.to_owned()),
                gvk: sub_gvk,
            },
            Operation {
                method: "put",
                action: "put",
                verb: "replace",
                id_suffix: suffix,
                description: format!("replace {sub} of the specified {kind}"),
                params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION],
                body: Some((def.to_owned(), WRITE_TYPES)),
                response: Some(def.to_owned()),
                gvk: sub_gvk,
            },
            Operation {
                method: "patch",
                action: "patch",
                verb: "patch",
                id_suffix: suffix,
                description: format!("partially update {sub} of the specified {kind}"),
                params: vec![&DRY_RUN, &FIELD_MANAGER, &FIELD_VALIDATION, &FORCE],
                body: Some((patch_def.clone(), PATCH_TYPES)),
                response: Some(def.to_owned()),
                gvk: sub_gvk,
            },
        ];
        add_path(format!("{item}/{sub}"), ops, true);
    }

    if namespaced && has(Verb::List) {
        let all_id = format!("{id_gv}{kind}ForAllNamespaces");
        let op = Operation {
            method: "get",
            action: "list",
            verb: "list",
            id_suffix: "",
            description: format!("list or watch objects of kind {kind}"),
            params: LIST_PARAMS.iter().collect(),
            body: None,
            response: Some(list_def),
            gvk,
        };
        let mut entry = Map::new();
        entry.insert("get".into(), render_operation(&op, &tag, &all_id, dialect));
        entry.insert("parameters".into(), json!([render_param(&PRETTY, dialect)]));
        paths.insert(format!("{base}/{}", info.plural), Value::Object(entry));
    }
}

/// Rewrites a v3 schema for Swagger 2.0: references point into `definitions`, and the
/// keywords Swagger 2.0 lacks are dropped, as upstream drops them when publishing CRD
/// schemas in v2.
fn to_v2_schema(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            for keyword in ["nullable", "oneOf", "anyOf", "not"] {
                object.remove(keyword);
            }
            if let Some(Value::String(reference)) = object.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/components/schemas/")
            {
                *reference = format!("#/definitions/{name}");
            }
            for value in object.values_mut() {
                to_v2_schema(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_v2_schema),
        _ => {}
    }
}

/// Where a kind's schemas come from and what they are called.
struct SchemaNames {
    kind: String,
    list: String,
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
fn add_kind_schemas(
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
            schemas.insert(name.clone(), kind_schema(kind));
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

/// The schemas (by name) and paths of the given kinds.
fn build(
    registry: &Registry,
    kinds: &[&RegisteredKind],
    dialect: Dialect,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut schemas: BTreeMap<String, Value> = meta_schemas().into_iter().collect();
    let mut paths = Map::new();
    for kind in kinds {
        let names = add_kind_schemas(registry, kind, dialect, &mut schemas);
        kind_paths(&kind.info, &names, dialect, &mut paths);
    }
    let mut schemas: Map<String, Value> = schemas.into_iter().collect();
    if dialect == Dialect::V2 {
        schemas.values_mut().for_each(to_v2_schema);
    }
    let mut sorted: Vec<(String, Value)> = paths.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    (schemas, sorted.into_iter().collect())
}

fn info_block(at: KubeVersion) -> Value {
    json!({"title": "Kubernetes", "version": format!("v{}.{}.0", at.major, at.minor)})
}

/// The registered kinds served at `at` in one group/version.
fn served_kinds<'a>(
    registry: &'a Registry,
    served: &Served<'_>,
    group: &str,
    version: &str,
) -> Option<Vec<&'a RegisteredKind>> {
    let infos = served.kinds(group, version)?;
    Some(
        registry
            .kinds()
            .filter(|kind| infos.iter().any(|info| std::ptr::eq(*info, &*kind.info)))
            .collect(),
    )
}

/// The Swagger 2.0 document of every served kind.
pub(crate) fn v2_document(registry: &Registry, at: KubeVersion) -> Value {
    let served = Served::new(registry, at);
    let infos: Vec<&ResourceInfo> = served
        .group_versions()
        .flat_map(|(_, _, kinds)| kinds.iter().copied())
        .collect();
    let kinds: Vec<&RegisteredKind> = registry
        .kinds()
        .filter(|kind| infos.iter().any(|info| std::ptr::eq(*info, &*kind.info)))
        .collect();
    let (definitions, paths) = build(registry, &kinds, Dialect::V2);
    json!({
        "swagger": "2.0",
        "info": info_block(at),
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}
        },
        "security": [{"BearerToken": []}]
    })
}

/// The OpenAPI v3 document of one served group/version, or `None` when it is not served.
pub(crate) fn v3_document(
    registry: &Registry,
    at: KubeVersion,
    group: &str,
    version: &str,
) -> Option<Value> {
    let served = Served::new(registry, at);
    let kinds = served_kinds(registry, &served, group, version)?;
    let (schemas, paths) = build(registry, &kinds, Dialect::V3);
    Some(json!({
        "openapi": "3.0.0",
        "info": info_block(at),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}
            }
        }
    }))
}

/// The `/openapi/v3` path of a group/version: `api/v1` or `apis/<group>/<version>`.
fn v3_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// FNV-1a over the document: a stable content hash for cache-busting URLs and ETags.
fn content_hash(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016X}")
}

/// The `/openapi/v3` index.
pub(crate) fn v3_index(registry: &Registry, at: KubeVersion) -> Value {
    let served = Served::new(registry, at);
    let mut paths = Map::new();
    for (group, version, _) in served.group_versions() {
        let Some(doc) = v3_document(registry, at, group, version) else {
            continue;
        };
        let bytes = serde_json::to_vec(&doc).unwrap_or_default();
        let path = v3_path(group, version);
        let url = format!("/openapi/v3/{path}?hash={}", content_hash(&bytes));
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    let mut sorted: Vec<(String, Value)> = paths.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    json!({"paths": sorted.into_iter().collect::<Map<String, Value>>()})
}

/// Whether the client takes JSON.
fn accepts_json(headers: &HeaderMap) -> bool {
    let values: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if values.iter().all(|v| v.trim().is_empty()) {
        return true;
    }
    values.iter().flat_map(|v| v.split(',')).any(|range| {
        let mut parts = range.split(';');
        let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let refused = parts.any(|p| {
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim() == "q" && v.trim().parse::<f32>().unwrap_or(0.0) <= 0.0
            })
        });
        !refused
            && matches!(
                essence.as_str(),
                "application/json" | "application/*" | "*/*"
            )
    })
}

fn not_acceptable() -> Response {
    status_response(&Status::not_acceptable(&["application/json"]))
}

/// A document answer with its ETag, or 304 when the client already has it.
fn document_response(headers: &HeaderMap, body: &Value) -> (Response, String) {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let hash = content_hash(&bytes);
    let etag = format!("\"{hash}\"");
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == etag || tag.trim() == "*");
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response()
    };
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    (response, hash)
}

async fn openapi_v2(Extract(state): Extract<State>, headers: HeaderMap) -> Response {
    if !accepts_json(&headers) {
        return not_acceptable();
    }
    document_response(
        &headers,
        &v2_document(&state.registry(), state.kube_version),
    )
    .0
}

async fn openapi_v3_index(Extract(state): Extract<State>, headers: HeaderMap) -> Response {
    if !accepts_json(&headers) {
        return not_acceptable();
    }
    json_response(
        StatusCode::OK,
        &v3_index(&state.registry(), state.kube_version),
    )
}

async fn openapi_v3_group_version(
    Extract(state): Extract<State>,
    Path(path): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version) = match segments.as_slice() {
        ["api", version] => ("", *version),
        ["apis", group, version] if !group.is_empty() => (*group, *version),
        _ => return not_found(),
    };
    let Some(doc) = v3_document(&state.registry(), state.kube_version, group, version) else {
        return not_found();
    };
    if !accepts_json(&headers) {
        return not_acceptable();
    }
    let requested_hash = raw.as_deref().and_then(|raw| {
        raw.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == "hash")
            .map(|(_, value)| percent_decode(value))
    });
    let (mut response, hash) = document_response(&headers, &doc);
    match requested_hash {
        Some(requested) if requested != hash => {
            let location = format!("/openapi/v3/{}?hash={hash}", v3_path(group, version));
            let mut redirect = StatusCode::MOVED_PERMANENTLY.into_response();
            if let Ok(value) = HeaderValue::from_str(&location) {
                redirect.headers_mut().insert(header::LOCATION, value);
            }
            redirect
        }
        Some(_) => {
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            response
        }
        None => response,
    }
}

/// `/openapi/v2`, `/openapi/v3` and `/openapi/v3/<path>`.
pub(crate) fn routes() -> Router<State> {
    Router::new()
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3", get(openapi_v3_index))
        .route("/openapi/v3/", get(openapi_v3_index))
        .route("/openapi/v3/{*path}", get(openapi_v3_group_version))
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

    #[test]
    fn operation_id_group_versions() {
        assert_eq!(id_group_version("", "v1"), "CoreV1");
        assert_eq!(id_group_version("apps", "v1"), "AppsV1");
        assert_eq!(
            id_group_version("rbac.authorization.k8s.io", "v1"),
            "RbacAuthorizationV1"
        );
        assert_eq!(
            id_group_version("widgets.kapi-x.dev", "v1beta1"),
            "WidgetsKapiXDevV1beta1"
        );
    }

    #[test]
    fn tags() {
        assert_eq!(tag("", "v1"), "core_v1");
        assert_eq!(
            tag("rbac.authorization.k8s.io", "v1"),
            "rbacAuthorization_v1"
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
    }

    #[test]
    fn accept_json() {
        let mut headers = HeaderMap::new();
        assert!(accepts_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
        );
        assert!(!accepts_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, */*"),
        );
        assert!(accepts_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=0"),
        );
        assert!(!accepts_json(&headers));
    }
}
