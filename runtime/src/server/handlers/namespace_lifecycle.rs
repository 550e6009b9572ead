//! The namespace lifecycle: the `finalize` subresource (a namespace's `spec.finalizers`), and
//! the passes over a terminating namespace that delete its objects and, once nothing holds it,
//! remove the lifecycle finalizer and the namespace. The task that runs the passes is started
//! by the dispatcher's `serve`. What the server knows of each namespace's phase lives in
//! `namespaces`.

use std::time::Duration;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value};

use crate::meta::{DeleteOptions, StatusCause, UpdateOptions};
use crate::storage::{Bytes, DeleteError, Storage, UpdateError};

use crate::server::Call;
use crate::server::background::{TaskError, gc};
use crate::server::handlers::decode::decode_object;
use crate::server::handlers::object::{
    RETRIES, check_identity, has_finalizers, read, same_json, through_codec,
};
use crate::server::handlers::request::write_request;
use crate::server::http::dry_run::WriteOptions;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::Output;
use crate::server::objects::json::{meta_str, object_mut};
use crate::server::objects::render;
use crate::server::objects::revision::parse_object_rv;
use crate::server::objects::stored::{at_revision, dry_answer, kv_object, to_stored};
use crate::server::state::builtin::NAMESPACE_FINALIZER;
use crate::server::state::keys;

/// Whether a name is a standard finalizer or a qualified name with a prefix, as upstream's
/// `validateFinalizerName` requires of namespace finalizers.
fn finalizer_name_problem(name: &str) -> Option<&'static str> {
    if !crate::names::is_qualified_name(name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        );
    }
    let standard = [
        NAMESPACE_FINALIZER,
        gc::ORPHAN_FINALIZER,
        gc::FOREGROUND_FINALIZER,
    ];
    if !name.contains('/') && !standard.contains(&name) {
        return Some("name is neither a standard finalizer name nor is it fully qualified");
    }
    None
}

/// The name part of a qualified name: at most 63 alphanumerics, `-`, `_` or `.`, starting and
/// ending with an alphanumeric.
/// Serves a PUT of a namespace's `finalize`: the namespace after the write, rendered as asked.
pub(crate) async fn serve_finalize(
    call: &Call,
    name: &str,
    body: Body,
    output: Output,
) -> Result<Response, ApiError> {
    let (body, write) = write_request::<UpdateOptions>(call, body).await?;
    let object = finalize_namespace(call, name, &body, write).await?;
    render::reply(call, output, StatusCode::OK, object)
}

/// PUT `/api/v1/namespaces/{name}/finalize`: replaces the namespace's `spec.finalizers` and
/// nothing else, as upstream's finalize subresource. When the namespace is terminating and the
/// last finalizer goes, so does the namespace.
async fn finalize_namespace(
    call: &Call,
    name: &str,
    body: &[u8],
    write: WriteOptions,
) -> Result<Value, ApiError> {
    let incoming = decode_object(call, body)?;
    check_identity(call, name, &incoming)?;
    let wanted: Vec<Value> = match incoming.pointer("/spec/finalizers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Namespace in version \"v1\" cannot be handled as a Namespace: spec.finalizers must be a list, got {other}"
            )));
        }
    };
    let mut causes = Vec::new();
    for (i, item) in wanted.iter().enumerate() {
        let text = item.as_str().unwrap_or("");
        if let Some(problem) = finalizer_name_problem(text) {
            causes.push(StatusCause::invalid(
                format!("spec.finalizers[{i}]"),
                item,
                problem,
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Namespace", name, causes));
    }
    let precondition = match meta_str(&incoming, "resourceVersion") {
        None | Some("") => None,
        Some(rv) => Some(parse_object_rv(rv)?),
    };
    let key = call.key(name);
    for _ in 0..RETRIES {
        let kv = read(call, name).await?;
        let current = kv_object(call, &kv).await?;
        // The store checks the uid precondition first, then the update its resourceVersion.
        let uid = meta_str(&current, "uid").unwrap_or("");
        if let Some(want) = meta_str(&incoming, "uid").filter(|u| !u.is_empty())
            && want != uid
        {
            return Err(call.uid_precondition_failed(name, want, uid));
        }
        if precondition.is_some_and(|rv| rv != kv.mod_revision) {
            return Err(ApiError::conflict_modified(call.subject(name)));
        }
        let mut next = current.clone();
        let spec = object_mut(&mut next)
            .entry("spec")
            .or_insert_with(|| Value::Object(Map::new()));
        let spec = object_mut(spec);
        if wanted.is_empty() {
            spec.remove("finalizers");
        } else {
            spec.insert("finalizers".into(), Value::Array(wanted.clone()));
        }
        let next = through_codec(call, next)?;
        let stored = to_stored(call, &next).await?;
        if same_json(&stored, &kv.value) {
            return Ok(current);
        }
        if write.dry_run {
            return dry_answer(call, next, &stored, kv.mod_revision).await;
        }
        if gc::is_deleting(&next) && !has_finalizers(call.info(), &next) {
            match call.state.storage.delete(&key, Some(kv.mod_revision)).await {
                Ok(deleted) => return Ok(at_revision(next, deleted.revision)),
                Err(DeleteError::Conflict { .. }) if precondition.is_none() => continue,
                Err(e) => return Err(ApiError::from_delete(e, call.subject(name))),
            }
        }
        match call
            .state
            .storage
            .update(&key, stored, kv.mod_revision)
            .await
        {
            Ok(kv) => return kv_object(call, &kv).await,
            Err(UpdateError::Conflict { .. }) if precondition.is_none() => continue,
            Err(e) => return Err(ApiError::from_update(e, call.subject(name))),
        }
    }
    Err(ApiError::conflict_modified(call.subject(name)))
}

/// Deletes every object of a namespace (namespace lifecycle), returning how many remain held
/// by finalizers.
pub(crate) async fn purge_namespace(
    state: &crate::server::state::ServerState,
    namespace: &str,
) -> Result<usize, TaskError> {
    let mut remaining = 0;
    let mut seen = std::collections::BTreeSet::new();
    let registry = state.registry();
    for kind in registry.kinds() {
        let info = &*kind.info;
        if !info.is_namespaced() {
            continue;
        }
        let prefix = keys::collection_prefix(info, Some(namespace));
        if !seen.insert(prefix.clone()) {
            continue;
        }
        let list = state.storage.list(&prefix, None, None, None).await?;
        // Upstream's namespace controller deletes each collection in the background; the
        // collector then follows the owner references of what it removed.
        let options = DeleteOptions {
            propagation_policy: Some(crate::meta::DeletionPropagation::Background),
            ..DeleteOptions::default()
        };
        let class = gc::class_of(info);
        for kv in list.items {
            let object: Value =
                serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                    key: kv.key.clone(),
                    source,
                })?;
            // A concurrent change is picked up by the next pass.
            match gc::plan_delete(class, &object, &options, jiff::Timestamp::now()) {
                gc::DeletePlan::Remove => {
                    let _ = state.storage.delete(&kv.key, Some(kv.mod_revision)).await;
                }
                gc::DeletePlan::Mark(next) => {
                    remaining += 1;
                    if let Ok(bytes) = serde_json::to_vec(&next) {
                        let _ = state
                            .storage
                            .update(&kv.key, Bytes::from(bytes), kv.mod_revision)
                            .await;
                    }
                }
                gc::DeletePlan::Unchanged => remaining += 1,
            }
        }
    }
    Ok(remaining)
}

/// Removes the namespace lifecycle finalizer and, when nothing else holds it, the namespace.
pub(crate) async fn finish_namespace(
    state: &crate::server::state::ServerState,
    key: &str,
) -> Result<bool, TaskError> {
    let Some(kv) = state.storage.get(key, None).await? else {
        return Ok(true);
    };
    let mut ns: Value = serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
        key: kv.key.clone(),
        source,
    })?;
    let mut changed = false;
    if let Some(Value::Array(finalizers)) = ns.pointer_mut("/spec/finalizers") {
        let before = finalizers.len();
        finalizers.retain(|f| f.as_str() != Some(NAMESPACE_FINALIZER));
        changed = finalizers.len() != before;
    }
    let spec_empty = ns
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    let meta_empty = ns
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if spec_empty && meta_empty {
        return Ok(state
            .storage
            .delete(key, Some(kv.mod_revision))
            .await
            .is_ok());
    }
    if !changed {
        // Other finalizers hold it; writing the same value again would only wake watchers.
        return Ok(false);
    }
    let bytes = serde_json::to_vec(&ns).map_err(TaskError::Encode)?;
    let _ = state
        .storage
        .update(key, Bytes::from(bytes), kv.mod_revision)
        .await;
    Ok(false)
}

/// How long the namespace lifecycle waits between passes over a terminating namespace.
pub(crate) const NAMESPACE_RETRY: Duration = Duration::from_millis(500);
