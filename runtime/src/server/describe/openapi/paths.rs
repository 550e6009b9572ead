//! The paths of an OpenAPI document: per served kind, the operations kube-apiserver publishes
//! (list, create, deletecollection, get, replace, patch, delete, the `status` and `scale`
//! subresources, and the list across namespaces), with upstream's operation ids, tags and
//! parameters, rendered in either dialect.

use serde_json::{Map, Value, json};

use crate::{GroupVersionKind, ResourceInfo, Verb};

use super::schemas::{Dialect, META, SCALE, SchemaNames, gvk_object};

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
pub(super) fn kind_paths(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
