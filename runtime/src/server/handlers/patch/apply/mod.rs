//! Server-side apply (`application/apply-patch+yaml`): the applied configuration is merged
//! into the live object with the kind's list and map semantics, fields the manager applied
//! before and dropped now are removed unless someone else owns them, and ownership moves as
//! upstream's field manager moves it (see `managed_fields`).
//!
//! - `fieldManager` is required (upstream's 422 on `PatchOptions`); `force=true` takes the
//!   fields of other managers instead of answering 409 with one cause per conflicting field.
//! - The configuration must name the kind's `apiVersion` and `kind` (400 `invalid object
//!   type`), may not carry `managedFields` (400), and must fit the kind's type: a type error
//!   or a field the type lacks fails as upstream's typed conversion does (500).
//! - A missing object is created from the configuration (201); `/status` applies only to
//!   `status` and never creates.
//! - An object without managed fields gives its existing fields to `before-first-apply` at
//!   its first apply, so dropping them later does not remove them.
//!
//! The merge and the pruning of dropped fields are `merge`'s, the repeated keys upstream's
//! strict YAML decoding reports are `strict_yaml`'s; this module checks the configuration,
//! moves ownership and writes the result.
//!
//! May import: what `patch` may; `merge` and `strict_yaml` import neither this module nor
//! each other.

pub(crate) mod merge;
mod strict_yaml;

use axum::http::StatusCode;
use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::meta::{PatchOptions, Status, StatusCause, StatusReason};

use crate::server::Call;
use crate::server::handlers::managed_fields::fieldpath::{self, Path, Set, Step};
use crate::server::handlers::managed_fields::typed::{self, Node, Shape};
use crate::server::handlers::managed_fields::{
    self as mf, APPLY, BEFORE_FIRST_APPLY, Entry, UPDATE, Writer,
};
use crate::server::handlers::object;
use crate::server::handlers::object::UpdateScope;
use crate::server::handlers::update;
use crate::server::handlers::{create, scale};
use crate::server::http::dry_run::WriteOptions;
use crate::server::http::error::ApiError;
use crate::server::http::field_validation::Directive;

use merge::{merge, prune};
use strict_yaml::strict_yaml_problem;

/// `Content-Type` of a server-side apply.
pub(crate) const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The apply options: the manager (required) and whether to force.
fn options(call: &Call) -> Result<(String, bool), ApiError> {
    let options: PatchOptions = call.query()?;
    let manager = options.field_manager.unwrap_or_default();
    if manager.is_empty() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![StatusCause::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    mf::check_manager(&manager, "PatchOptions")?;
    Ok((manager, options.force == Some(true)))
}

/// The applied configuration: YAML (or JSON) holding one object.
pub(crate) fn decode_config(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Map::new())
    } else {
        crate::server::http::yaml::check_depth(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        serde_yaml_ng::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    };
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(ApiError::bad_request(format!(
            "error decoding YAML: cannot unmarshal {} into an object",
            kind_name(&other)
        ))),
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

/// What every apply configuration, of an object or of its `/scale`, must be before anything
/// else is checked: of the type the endpoint takes (`api_version` and `kind`; 400 `invalid
/// object type` otherwise), without `managedFields` (400), and naming the object addressed.
fn check_envelope(
    call: &Call,
    name: &str,
    config: &Value,
    api_version: &str,
    kind: &str,
) -> Result<(), ApiError> {
    let given_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let given_kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if given_version != api_version || given_kind != kind {
        let (group, version) = given_version
            .rsplit_once('/')
            .unwrap_or(("", given_version));
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={given_kind}"
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    object::check_config_identity(call, name, config)
}

/// The checks upstream makes of an applied configuration before merging it.
fn check_config(call: &Call, name: &str, config: &Value) -> Result<(), ApiError> {
    let info = call.info();
    check_envelope(call, name, config, &info.api_version(), &info.gvk.kind)?;
    let codec = &call.target.kind.codec;
    let typed_error = |detail: String| {
        let namespace = call.target.namespace.as_deref().unwrap_or("");
        let gvk = format!(
            "{}/{}, Kind={}",
            info.gvk.group, info.gvk.version, info.gvk.kind
        );
        let mut status = Status::failure(
            StatusReason::InternalError,
            format!("failed to create typed patch object ({namespace}/{name}; {gvk}): {detail}"),
            None,
        );
        // Upstream's typed conversion fails with a plain error: a 500 without a reason.
        status.reason = None;
        ApiError::from_status(status)
    };
    let decoded = codec(config.clone()).map_err(|e| typed_error(e.to_string()))?;
    let unknown = crate::server::http::field_validation::unknown_fields(&**codec, config, &decoded);
    let mut problems: Vec<String> = unknown
        .iter()
        .map(|path| format!(".{path}: field not declared in schema"))
        .collect();
    let schema = call.target.kind.schema.as_ref().and_then(|source| source());
    let root = Node::root(schema.as_deref(), call.target.kind.merge);
    check_lists(config, root, &mut Vec::new(), &mut problems);
    match problems.as_slice() {
        [] => Ok(()),
        [one] => Err(typed_error(one.clone())),
        // Upstream's list of validation errors.
        many => Err(typed_error(format!("errors:\n  {}", many.join("\n  ")))),
    }
}

/// The items of the configuration's sets and map lists as upstream's typed conversion
/// checks them: every item named by a key (map lists: an object with every key field, or
/// a default for it; sets: a scalar), no key twice.
fn check_lists(value: &Value, node: Node<'_>, path: &mut Path, problems: &mut Vec<String>) {
    let shape = node.shape(value);
    match (&shape, value) {
        (Shape::Struct | Shape::Map, Value::Object(map)) => {
            for (key, v) in map {
                path.push(Step::Field(key.as_str().into()));
                check_lists(v, node.child(key), path, problems);
                path.pop();
            }
        }
        (Shape::Set | Shape::ListMap(_), Value::Array(items)) => {
            let item = node.item();
            let mut seen = HashSet::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                let at = fieldpath::Display(path);
                if let Some(problem) = keyless(&shape, v, item) {
                    problems.push(format!("{at}: element {i}: {problem}"));
                    continue;
                }
                let Some(step) = typed::item_step(&shape, v, item) else {
                    continue;
                };
                let named = fieldpath::Display(std::slice::from_ref(&step)).to_string();
                if !seen.insert(step.clone()) {
                    problems.push(format!("{at}: duplicate entries for key {named}"));
                }
                path.push(step);
                check_lists(v, item, path, problems);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Why a list item has no key, in upstream's words; `None` when it has one.
fn keyless(shape: &Shape, item: &Value, node: Node<'_>) -> Option<String> {
    match (shape, item) {
        (Shape::ListMap(_), Value::Null) => {
            Some("associative list with keys may not have a null element".to_owned())
        }
        (Shape::ListMap(keys), Value::Object(map)) => keys
            .iter()
            .find(|k| !map.contains_key(k.as_str()) && node.key_default(k).is_none())
            .map(|k| {
                format!(
                    "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                    Value::from(k.as_str())
                )
            }),
        (Shape::ListMap(_), _) => {
            Some("associative list with keys may not have non-map elements".to_owned())
        }
        (_, Value::Object(_)) => {
            Some("associative list without keys has an element that's a map type".to_owned())
        }
        (_, Value::Array(_)) => {
            Some("not supported: associative list with lists as elements".to_owned())
        }
        (_, Value::Null) => {
            Some("associative list without keys has an element that's an explicit null".to_owned())
        }
        _ => None,
    }
}

/// The object an apply makes of `live` (`{}` when creating), with its managed fields.
fn apply_to(
    call: &Call,
    live: &Value,
    config: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApiError> {
    let info = call.info();
    let schema = call.target.kind.schema.as_ref().and_then(|source| source());
    let root = Node::root(schema.as_deref(), call.target.kind.merge);
    let part = typed::part_of(info.subresources.status, &writer.subresource);
    let api_version = info.api_version();
    let mut base = live.clone();
    crate::server::objects::json::meta_mut(&mut base).remove("managedFields");
    let live_fields = typed::fields_of(&base, root, part);
    let mut entries = mf::decode(live.pointer("/metadata/managedFields")).unwrap_or_default();
    if entries.is_empty() {
        let mut first = Entry::new(
            BEFORE_FIRST_APPLY,
            UPDATE,
            &api_version,
            &writer.subresource,
        );
        first.fields = typed::members(&live_fields);
        if !first.fields.is_empty() {
            first.touch();
            entries.push(first);
        }
    }
    let me = Entry::new(&writer.manager, APPLY, &api_version, &writer.subresource);
    let applied = typed::members(&typed::fields_of(config, root, part));
    let last = match entries.iter_mut().find(|e| e.same_identity(&me)) {
        Some(entry) => {
            entry.api_version = api_version.clone();
            std::mem::replace(&mut entry.fields, applied.clone())
        }
        None => {
            let mut entry = me.clone();
            entry.fields = applied.clone();
            entries.push(entry);
            Set::new()
        }
    };
    let mut merged = merge(&base, config, root);
    let kept: Set = entries
        .iter()
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    prune(&mut merged, root, &last, &kept);
    let comparison = typed::compare(&live_fields, typed::fields_of(&merged, root, part));
    let changed = comparison.changed();
    let mut conflicts = Vec::new();
    for entry in entries.iter_mut().filter(|e| !e.same_identity(&me)) {
        let lost: Vec<Path> = entry.fields.intersection(&changed).cloned().collect();
        for path in lost {
            if force {
                entry.fields.remove(&path);
            } else {
                conflicts.push((entry.describe(), path));
            }
        }
        entry.fields.retain(|p| !comparison.removed.contains(p));
    }
    if !conflicts.is_empty() {
        conflicts.sort();
        return Err(mf::conflict_error(&conflicts));
    }
    if merged != base
        && let Some(entry) = entries.iter_mut().find(|e| e.same_identity(&me))
    {
        entry.touch();
    }
    entries.retain(|e| !e.fields.is_empty());
    mf::store(&mut merged, &mut entries);
    Ok(merged)
}

/// PATCH with `application/apply-patch+yaml` on the object (`scope` Main) or its `/status`.
/// Answers 201 when the apply created the object.
pub(crate) async fn apply(
    call: &Call,
    name: &str,
    body: &[u8],
    scope: UpdateScope,
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<(StatusCode, Value), ApiError> {
    let (manager, force) = options(call)?;
    let config = decode_config(body)?;
    check_config(call, name, &config)?;
    // Upstream decodes strictly once the apply itself succeeded.
    let strict = match write.validation {
        Directive::Ignore => None,
        _ => strict_yaml_problem(body),
    };
    let refuse = |strict: &Option<String>| match (strict, write.validation) {
        (Some(problem), Directive::Strict) => Err(ApiError::bad_request(format!(
            "error strict decoding YAML: {problem}"
        ))),
        _ => Ok(()),
    };
    let writer = Writer {
        manager,
        subresource: scope.subresource().to_owned(),
    };
    let updated = update::update_with(call, name, scope, write.dry_run, None, |current| {
        let merged = apply_to(call, current, &config, &writer, force)?;
        refuse(&strict)?;
        object::through_codec(call, merged)
    })
    .await;
    if let (Some(problem), Directive::Warn) = (&strict, write.validation) {
        // A header holds no line breaks; Go's server writes them as spaces.
        warnings.push(problem.replace('\n', " "));
    }
    match updated {
        Err(e)
            if e.code() == StatusCode::NOT_FOUND
                && scope == UpdateScope::Main
                && call.info().verbs.contains(&crate::Verb::Create) =>
        {
            let mut fresh = apply_to(call, &Value::Object(Map::new()), &config, &writer, force)?;
            refuse(&strict)?;
            let meta = crate::server::objects::json::meta_mut(&mut fresh);
            if meta
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                meta.insert("name".into(), Value::from(name));
            }
            let fresh = object::through_codec(call, fresh)?;
            create::create_decoded(call, fresh, write, None).await
        }
        Err(e) => Err(e),
        Ok(object) => Ok((StatusCode::OK, object)),
    }
}

/// The path of the parent's replicas behind `/scale` (`.spec.replicas`), as field steps.
fn replicas_path(call: &Call) -> Result<Path, ApiError> {
    let Some(scale) = call.info().subresources.scale.as_ref() else {
        return Err(ApiError::no_route());
    };
    Ok(scale
        .spec_replicas_path
        .trim_start_matches('.')
        .split('.')
        .filter(|part| !part.is_empty())
        .map(|part| Step::Field(part.into()))
        .collect())
}

/// The value at a path of field steps.
fn at_path<'v>(object: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(object, |value, step| match step {
        Step::Field(name) => value.get(&**name),
        _ => None,
    })
}

/// PATCH `/scale` with an apply configuration (an `autoscaling/v1` `Scale`): the manager
/// applies the parent's replicas and owns them in the parent's managed fields, recorded as
/// an `Apply` entry with subresource `scale` (upstream's scale handler maps `Scale`'s
/// `.spec.replicas` to the parent's replicas path and back). Only the replicas are the
/// configuration's to set; a manager that drops them gives up ownership and the value stays.
pub(crate) async fn apply_scale(
    call: &Call,
    name: &str,
    body: &[u8],
    write: WriteOptions,
) -> Result<Value, ApiError> {
    let (manager, force) = options(call)?;
    let config = decode_config(body)?;
    check_envelope(call, name, &config, "autoscaling/v1", "Scale")?;
    let unknown = scale::scale_unknown_fields(&config);
    if !unknown.is_empty() {
        let namespace = call.target.namespace.as_deref().unwrap_or("");
        let mut status = Status::failure(
            StatusReason::InternalError,
            format!(
                "failed to create typed patch object ({namespace}/{name}; autoscaling/v1, Kind=Scale): {}",
                unknown
                    .iter()
                    .map(|p| format!(".{p}: field not declared in schema"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            None,
        );
        status.reason = None;
        return Err(ApiError::from_status(status));
    }
    let count = match config.pointer("/spec/replicas") {
        None | Some(Value::Null) => None,
        Some(_) => Some(scale::replicas_of(&config, name)?),
    };
    let path = replicas_path(call)?;
    let writer = Writer {
        manager,
        subresource: "scale".to_owned(),
    };
    // The Scale applied: the current one with the configuration's replicas.
    let requested = |current: &Value| {
        let mut scale = current.clone();
        if let Some(count) = count {
            scale["spec"]["replicas"] = Value::from(count);
        }
        scale
    };
    scale::set_replicas(
        call,
        name,
        requested,
        None,
        write.dry_run,
        |current, next| scale_fields(call, current, next, &path, &writer, force, count.is_some()),
    )
    .await
}

/// The managed fields of an apply through `/scale`: `path` is the parent's replicas,
/// `applied` whether the configuration set them.
fn scale_fields(
    call: &Call,
    current: &Value,
    next: &mut Value,
    path: &Path,
    writer: &Writer,
    force: bool,
    applied: bool,
) -> Result<(), ApiError> {
    let api_version = call.info().api_version();
    let mut entries = mf::decode(current.pointer("/metadata/managedFields")).unwrap_or_default();
    if entries.is_empty() && at_path(current, path).is_some() {
        let mut first = Entry::new(BEFORE_FIRST_APPLY, UPDATE, &api_version, "");
        first.fields.insert(path.clone());
        first.touch();
        entries.push(first);
    }
    let me = Entry::new(&writer.manager, APPLY, &api_version, &writer.subresource);
    let changed = at_path(current, path) != at_path(next, path);
    let mut conflicts = Vec::new();
    if changed {
        let shown: Path = vec![Step::Field("spec".into()), Step::Field("replicas".into())];
        for entry in entries.iter_mut().filter(|e| !e.same_identity(&me)) {
            if entry.fields.contains(path) {
                if force {
                    entry.fields.remove(path);
                } else {
                    conflicts.push((entry.describe(), shown.clone()));
                }
            }
        }
    }
    if !conflicts.is_empty() {
        conflicts.sort();
        return Err(mf::conflict_error(&conflicts));
    }
    let owned: Set = if applied {
        std::iter::once(path.clone()).collect()
    } else {
        Set::new()
    };
    match entries.iter_mut().find(|e| e.same_identity(&me)) {
        Some(entry) => {
            entry.api_version = api_version;
            entry.fields = owned;
            if changed {
                entry.touch();
            }
        }
        None => {
            let mut entry = me;
            entry.fields = owned;
            if changed {
                entry.touch();
            }
            entries.push(entry);
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    mf::store(next, &mut entries);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{TypeInfo, field};
    use serde_json::json;

    static ITEM: TypeInfo = TypeInfo::new(&[]);

    #[test]
    fn configurations_name_every_list_item_once() {
        // A port's type defaults its `protocol`, as ServicePort's does.
        static PORT: TypeInfo = TypeInfo::new(&[])
            .defaults(&[crate::defaulting::Default::value(".protocol", "\"TCP\"")]);
        static PORTS: TypeInfo =
            TypeInfo::new(&[field("ports").list_map(&["port", "protocol"]).items(&PORT)]);
        static KEYED: TypeInfo = TypeInfo::new(&[
            field("items").list_map(&["name"]).items(&ITEM),
            field("tags").set(),
            field("spec").of(&PORTS),
        ]);
        let root = Node::root(None, Some(&KEYED));
        let rows = [
            (
                json!({"items": [{"name": "a"}, {"v": 1}]}),
                vec![
                    r#".items: element 1: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#,
                ],
            ),
            (
                json!({"items": [{"name": "a"}, {"name": "a", "v": 1}]}),
                vec![r#".items: duplicate entries for key [name="a"]"#],
            ),
            (
                json!({"items": [null, 3]}),
                vec![
                    ".items: element 0: associative list with keys may not have a null element",
                    ".items: element 1: associative list with keys may not have non-map elements",
                ],
            ),
            (
                json!({"tags": ["a", "b", "a", {"x": 1}, [1], null]}),
                vec![
                    r#".tags: duplicate entries for key [="a"]"#,
                    ".tags: element 3: associative list without keys has an element that's a map type",
                    ".tags: element 4: not supported: associative list with lists as elements",
                    ".tags: element 5: associative list without keys has an element that's an explicit null",
                ],
            ),
            // `protocol` has a default in the port's type; `port` has none.
            (
                json!({"spec": {"ports": [{"port": 80}, {"protocol": "UDP"}]}}),
                vec![
                    r#".spec.ports: element 1: associative list with keys has an element that omits key field "port" (and doesn't have default value)"#,
                ],
            ),
            (
                json!({"items": [{"name": "a", "sub": [1, 1]}], "tags": ["a", "b"]}),
                vec![],
            ),
        ];
        for (config, want) in rows {
            let mut problems = Vec::new();
            check_lists(&config, root, &mut Vec::new(), &mut problems);
            assert_eq!(problems, want, "{config}");
        }
    }
}
