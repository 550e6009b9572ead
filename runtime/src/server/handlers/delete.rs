//! Delete (DELETE) of one object or of a collection: preconditions, propagation policies and
//! finalizers (a deletion held by a finalizer marks the object; the garbage collector, in
//! `background::gc`, does the rest), and what a delete answers.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::ResourceInfo;
use crate::meta::{DeleteOptions, ListOptions, Status, StatusDetails};
use crate::storage::{DeleteError, Storage, UpdateError};

use crate::server::Call;
use crate::server::background::gc;
use crate::server::handlers::list::list;
use crate::server::handlers::request::read_body;
use crate::server::http::error::{ApiError, Subject};
use crate::server::http::negotiate::{self, Output};
use crate::server::objects::json::{meta_mut, meta_str};
use crate::server::objects::render;
use crate::server::objects::selector::Selectors;
use crate::server::objects::stored::{at_revision, kv_object, to_stored};
use crate::server::state::builtin::is_namespace_kind;

use crate::server::handlers::object::{RETRIES, read};

/// Whether a delete runs the admission of a delete: not when another request's admission
/// stands for it (an eviction deletes its pod past it, as upstream's `ValidateAllObjectFunc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    Run,
    Skip,
}

/// What a delete did.
pub(crate) enum Deletion {
    /// The object is gone; its last state.
    Gone(Value),
    /// Finalizers hold it; its state with `deletionTimestamp` set.
    Pending(Value),
}

/// Serves a DELETE of one object: the object while finalizers hold it (202 only for the
/// deprecated `orphanDependents: false`, as upstream answers it for compatibility), then, once
/// gone, a success `Status` for the built-ins and the last state of the object for custom
/// resources, rendered as asked.
pub(crate) async fn serve(
    call: &Call,
    name: &str,
    body: Body,
    output: Output,
) -> Result<Response, ApiError> {
    let body = read_body(call, body).await?;
    let options = delete_options(call, &body)?;
    gc::validate_options(&options)?;
    let info = call.info();
    match delete(call, name, &options, Admission::Run).await? {
        Deletion::Pending(object) => {
            let code = if options.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            render::reply(call, output, code, object)
        }
        Deletion::Gone(object) if !delete_returns_status(info) => {
            render::reply(call, output, StatusCode::OK, object)
        }
        Deletion::Gone(object) => {
            let mut status = Status::success();
            status.details = Some(StatusDetails {
                name: Some(name.to_owned()),
                group: (!info.gvk.group.is_empty()).then(|| info.gvk.group.to_string()),
                kind: Some(info.plural.to_string()),
                uid: meta_str(&object, "uid").map(str::to_owned),
                ..Default::default()
            });
            let value = serde_json::to_value(status).map_err(ApiError::internal)?;
            Ok(negotiate::encode(output.format, StatusCode::OK, &value))
        }
    }
}

/// Serves a DELETE of a collection: the list of the objects deleted.
pub(crate) async fn serve_collection(
    call: &Call,
    body: Body,
    output: Output,
) -> Result<Response, ApiError> {
    let body = read_body(call, body).await?;
    let delete = delete_options(call, &body)?;
    gc::validate_options(&delete)?;
    let options: ListOptions = call.query()?;
    let selectors = Selectors::of_request(call.info(), call.state.kube_version, &options, None)?;
    let value = delete_collection(call, &options, &selectors, &delete).await?;
    Ok(negotiate::encode(output.format, StatusCode::OK, &value))
}

/// Reads `DeleteOptions` from a body (optional) and the query string.
fn delete_options(call: &Call, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let mut options: DeleteOptions = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        let value =
            crate::server::http::negotiate::decode_body(&call.headers, body, call.state.cbor())?;
        serde_json::from_value(value)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    let query: DeleteOptions = call.query()?;
    options.grace_period_seconds = options.grace_period_seconds.or(query.grace_period_seconds);
    options.propagation_policy = options.propagation_policy.or(query.propagation_policy);
    options.orphan_dependents = options.orphan_dependents.or(query.orphan_dependents);
    if options.dry_run.is_empty() {
        options.dry_run = query.dry_run;
    }
    Ok(options)
}

/// DELETE of one object, as upstream's generic store: the propagation policy sets or clears
/// the collector's `orphan` and `foregroundDeletion` finalizers, an object that finalizers
/// (or, for a scheduled Pod, a grace period) hold is marked with `deletionTimestamp`, and
/// anything else is removed; the collector (`gc`) carries out the cascade. A dry run (its
/// options already checked) answers the same and writes nothing.
pub(crate) async fn delete(
    call: &Call,
    name: &str,
    options: &DeleteOptions,
    admission: Admission,
) -> Result<Deletion, ApiError> {
    let info = call.info();
    let class = gc::class_of(info);
    let dry_run = options.is_dry_run();
    let key = call.key(name);
    for _ in 0..RETRIES {
        let kv = read(call, name).await?;
        let current = kv_object(call, &kv).await?;
        check_preconditions(call, name, options, &current, kv.mod_revision)?;
        // Upstream's store runs admission of a delete after the preconditions hold.
        if admission == Admission::Run {
            crate::server::admission::admit_delete(call, &current, name, dry_run).await?;
        }
        match gc::plan_delete(class, &current, options, jiff::Timestamp::now()) {
            gc::DeletePlan::Unchanged => return Ok(Deletion::Pending(current)),
            gc::DeletePlan::Mark(next) => {
                if dry_run {
                    return Ok(Deletion::Pending(at_revision(next, kv.mod_revision)));
                }
                match call
                    .state
                    .storage
                    .update(&key, to_stored(call, &next).await?, kv.mod_revision)
                    .await
                {
                    Ok(kv) => {
                        let pending = kv_object(call, &kv).await?;
                        if is_namespace_kind(info) && !gc::is_deleting(&current) {
                            crate::server::spawn_namespace_cleanup(call, name);
                        }
                        return Ok(Deletion::Pending(pending));
                    }
                    Err(UpdateError::Conflict { .. }) => continue,
                    Err(e) => return Err(ApiError::from_update(e, call.subject(name))),
                }
            }
            gc::DeletePlan::Remove => {
                if dry_run {
                    return Ok(Deletion::Gone(current));
                }
                match call.state.storage.delete(&key, Some(kv.mod_revision)).await {
                    Ok(deleted) => {
                        let mut last = current;
                        meta_mut(&mut last).insert(
                            "resourceVersion".into(),
                            Value::from(deleted.revision.to_string()),
                        );
                        return Ok(Deletion::Gone(last));
                    }
                    Err(DeleteError::Conflict { .. }) => continue,
                    Err(e) => return Err(ApiError::from_delete(e, call.subject(name))),
                }
            }
        }
    }
    Err(ApiError::conflict_modified(call.subject(name)))
}

/// A delete's preconditions must hold for the object as read: otherwise upstream's
/// `rest.BeforeDelete` answers 409, naming the kind of the stored (internal) object rather than
/// the resource (`staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go`).
pub(crate) fn check_preconditions(
    call: &Call,
    name: &str,
    options: &DeleteOptions,
    current: &Value,
    revision: u64,
) -> Result<(), ApiError> {
    let Some(pre) = &options.preconditions else {
        return Ok(());
    };
    let info = call.info();
    let subject = Subject {
        group: info.family.map_or(&*info.gvk.group, |f| f.storage_group()),
        resource: &info.gvk.kind,
        name,
    };
    let uid = meta_str(current, "uid").unwrap_or("");
    if let Some(want) = pre.uid.as_deref()
        && want != uid
    {
        return Err(ApiError::conflict(
            subject,
            &format!(
                "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
            ),
        ));
    }
    if let Some(want) = pre.resource_version.as_deref()
        && want != revision.to_string()
    {
        return Err(ApiError::conflict(
            subject,
            &format!(
                "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({revision}). The object might have been modified"
            ),
        ));
    }
    Ok(())
}

/// Whether a successful immediate delete answers with a `Status` (built-in API groups) rather
/// than the deleted object (custom resources), as upstream's stores differ.
fn delete_returns_status(info: &ResourceInfo) -> bool {
    let group: &str = &info.gvk.group;
    group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io")
}

/// DELETE of a collection: deletes every selected object, answering with the list of them.
/// The options go to each delete, so a dry run lists what would go and removes nothing.
async fn delete_collection(
    call: &Call,
    options: &ListOptions,
    selectors: &Selectors,
    delete: &DeleteOptions,
) -> Result<Value, ApiError> {
    let all = ListOptions {
        label_selector: options.label_selector.clone(),
        field_selector: options.field_selector.clone(),
        ..ListOptions::default()
    };
    let page = list(call, &all, selectors).await?;
    let mut deleted = Vec::new();
    for object in page.items {
        let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let scoped;
        let target_call = match object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            Some(ns) if call.target.namespace.is_none() && call.info().is_namespaced() => {
                scoped = call.in_namespace(ns);
                &scoped
            }
            _ => call,
        };
        match self::delete(target_call, name, delete, Admission::Run).await {
            Ok(Deletion::Gone(last) | Deletion::Pending(last)) => {
                deleted.push(last);
            }
            // Gone already: another client deleted it meanwhile.
            Err(e) if e.code() == axum::http::StatusCode::NOT_FOUND => {}
            Err(e) => return Err(e),
        }
    }
    let info = call.info();
    Ok(json!({
        "kind": info.list_kind(),
        "apiVersion": info.api_version(),
        "metadata": {"resourceVersion": page.revision.to_string()},
        "items": deleted,
    }))
}
