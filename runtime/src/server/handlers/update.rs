//! Update (PUT) of an object or its `status`: the update rules (identity, generation,
//! finalizers, the scope a subresource may change), and the read-modify-write loop every
//! update, patch and apply runs ([`update_with`]): it starts from the server's last copy of the
//! object when it has one (`state::recent`), and a compare-and-swap catches a stale copy.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::meta::{StatusCause, UpdateOptions};
use crate::storage::{Bytes, DeleteError, KeyValue, Storage, UpdateError};

use crate::server::Call;
use crate::server::handlers::create;
use crate::server::handlers::decode::decode_object;
use crate::server::handlers::gated_fields;
use crate::server::handlers::managed_fields::{self, Writer};
use crate::server::handlers::request::write_request;
use crate::server::handlers::services;
use crate::server::http::dry_run::WriteOptions;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::Output;
use crate::server::objects::json::{meta_mut, meta_str, object_mut};
use crate::server::objects::render;
use crate::server::objects::revision::parse_object_rv;
use crate::server::objects::stored::{converts, dry_answer, kv_object, to_stored};
use crate::server::state::builtin::is_namespace_kind;
use crate::server::state::service_allocations::Reservation;
use crate::write_rules::StatusUpdate;

use crate::server::handlers::object::{
    RETRIES, UpdateScope, body_through_codec, check_identity, check_object, has_finalizers, read,
    same_json, validate_fields,
};

/// Merges a PUT body onto the current object under the scope's rules.
pub(crate) fn prepare_update(
    call: &Call,
    current: &Value,
    mut incoming: Value,
    scope: UpdateScope,
) -> Result<Value, ApiError> {
    let info = call.info();
    let name = meta_str(current, "name").unwrap_or("").to_owned();
    let mut next = match (scope, info.write_rules.status_update) {
        (UpdateScope::Status, StatusUpdate::OnlyStatus) => {
            // Only status changes; metadata and spec stay as stored. Managed fields come
            // from the write: an apply computed them, other writes recompute them from the
            // stored ones (`managed_fields::track`).
            with_written_managed_fields(
                StatusUpdate::OnlyStatus.merge(current, &incoming),
                &incoming,
            )
        }
        (UpdateScope::Status, rule @ StatusUpdate::StatusAndMetadata { .. }) => {
            // A built-in's status strategy: the old spec, the new status and metadata but
            // what the strategy resets.
            let incoming = update_metadata(info, &name, current, incoming)?;
            let mut next = rule.merge(current, &incoming);
            gated_fields::drop_disabled_status(
                &mut next,
                current,
                &info.gvk.group,
                &info.gvk.kind,
                call.state.kube_version,
                &call.state.features,
            );
            next
        }
        (UpdateScope::EphemeralContainers, _) => {
            // `dropNonEphemeralContainerUpdates`: the stored pod with the written ephemeral
            // containers; managed fields as for a status write.
            let mut next = current.clone();
            let containers = incoming
                .pointer("/spec/ephemeralContainers")
                .cloned()
                .filter(|c| !c.is_null());
            let spec = object_mut(
                object_mut(&mut next)
                    .entry("spec")
                    .or_insert_with(|| json!({})),
            );
            match containers {
                Some(containers) => spec.insert("ephemeralContainers".into(), containers),
                None => spec.remove("ephemeralContainers"),
            };
            with_written_managed_fields(next, &incoming)
        }
        (UpdateScope::Resize, _) => {
            let pod_level = call.state.kube_version >= POD_LEVEL_RESIZE_SINCE;
            let next = drop_non_resize_updates(current, &incoming, pod_level);
            with_written_managed_fields(next, &incoming)
        }
        (UpdateScope::Main, _) => {
            if info.subresources.status
                && let Value::Object(map) = &mut incoming
            {
                match current.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
            let mut next = update_metadata(info, &name, current, incoming)?;
            gated_fields::drop_disabled(
                &mut next,
                Some(current),
                &info.gvk.group,
                &info.gvk.kind,
                call.state.kube_version,
                &call.state.features,
            );
            next
        }
    };
    if is_namespace_kind(info) && scope == UpdateScope::Main {
        // spec.finalizers belongs to the namespace lifecycle (upstream's /finalize).
        if let (Value::Object(map), Some(spec)) = (&mut next, current.get("spec")) {
            map.insert("spec".into(), spec.clone());
        }
    }
    // The client never sets the generation: the old one stays, bumped as the kind's strategy
    // says (upstream's BeforeUpdate, then PrepareForUpdate); a status strategy never bumps it,
    // whatever metadata the write changes.
    let rule = info.write_rules.generation_at(call.state.kube_version);
    let generation = match current.pointer("/metadata/generation") {
        Some(Value::Number(old)) if scope != UpdateScope::Status && rule.bumps(current, &next) => {
            old.as_i64()
                .map_or(Value::from(old.clone()), |old| Value::from(old + 1))
        }
        other => other.cloned().unwrap_or(Value::Null),
    };
    let meta = meta_mut(&mut next);
    if generation.is_null() {
        meta.remove("generation");
    } else {
        meta.insert("generation".into(), generation);
    }
    Ok(next)
}

/// `next` with the managed fields of the write (an apply computed them; other writes
/// recompute them from the stored ones, `managed_fields::track`), as a status write takes them.
fn with_written_managed_fields(mut next: Value, incoming: &Value) -> Value {
    let meta = meta_mut(&mut next);
    match incoming.pointer("/metadata/managedFields") {
        Some(managed) => meta.insert("managedFields".into(), managed.clone()),
        None => meta.remove("managedFields"),
    };
    next
}

/// The release whose pod resize takes pod-level resources too (InPlacePodLevelResourcesVerticalScaling
/// beta and on).
const POD_LEVEL_RESIZE_SINCE: crate::KubeVersion = crate::KubeVersion::new(1, 36);

/// `dropNonResizeUpdates` (`pkg/registry/core/pod/strategy.go`): the stored pod with each
/// container's and init container's `resources` and `resizePolicy` as written, and with
/// `pod_level` the written pod-level `spec.resources`. A write that adds, removes, reorders or
/// renames containers keeps its spec as written, for `ValidatePodResize` to refuse; metadata and
/// status stay as stored either way (`ResetObjectMetaForStatus`, the old status).
fn drop_non_resize_updates(current: &Value, incoming: &Value, pod_level: bool) -> Value {
    const LISTS: [&str; 2] = ["containers", "initContainers"];
    const COPIED: [&str; 2] = ["resources", "resizePolicy"];
    let list = |pod: &Value, name: &str| -> Vec<Value> {
        pod.pointer(&format!("/spec/{name}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut next = current.clone();
    let same_containers = LISTS.iter().all(|name| {
        let (old, new) = (list(current, name), list(incoming, name));
        old.len() == new.len()
            && old
                .iter()
                .zip(&new)
                .all(|(o, n)| o.get("name") == n.get("name"))
    });
    if !same_containers {
        let spec = incoming.get("spec").cloned().unwrap_or_else(|| json!({}));
        object_mut(&mut next).insert("spec".into(), spec);
        return next;
    }
    if pod_level {
        let spec = object_mut(
            object_mut(&mut next)
                .entry("spec")
                .or_insert_with(|| json!({})),
        );
        match incoming.pointer("/spec/resources").filter(|r| !r.is_null()) {
            Some(resources) => spec.insert("resources".into(), resources.clone()),
            None => spec.remove("resources"),
        };
    }
    for name in LISTS {
        let written = list(incoming, name);
        let Some(Value::Array(stored)) = next.pointer_mut(&format!("/spec/{name}")) else {
            continue;
        };
        for (container, written) in stored.iter_mut().zip(&written) {
            let container = object_mut(container);
            for field in COPIED {
                match written.get(field).filter(|v| !v.is_null()) {
                    Some(value) => container.insert(field.into(), value.clone()),
                    None => container.remove(field),
                };
            }
        }
    }
    next
}

/// The metadata rules of every update (upstream's `rest.BeforeUpdate`): the uid may not change,
/// server-owned and immutable fields come from the stored object, and an object being deleted
/// takes no new finalizers.
fn update_metadata(
    info: &crate::ResourceInfo,
    name: &str,
    current: &Value,
    mut incoming: Value,
) -> Result<Value, ApiError> {
    let mut causes = Vec::new();
    let old_meta = current
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let meta = meta_mut(&mut incoming);
    let uid = old_meta.get("uid").cloned().unwrap_or(Value::Null);
    match meta.get("uid") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() => {}
        Some(given) if *given == uid => {}
        Some(given) => causes.push(StatusCause::invalid(
            "metadata.uid",
            given,
            "field is immutable",
        )),
    }
    // Server-owned and immutable metadata always comes from the stored object.
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
        "name",
    ] {
        match old_meta.get(field) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    meta.remove("selfLink");
    if old_meta.get("deletionTimestamp").is_some() {
        let old: Vec<&Value> = old_meta
            .get("finalizers")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let added = meta
            .get("finalizers")
            .and_then(Value::as_array)
            .is_some_and(|new| new.iter().any(|f| !old.contains(&f)));
        if added {
            causes.push(StatusCause::forbidden(
                "metadata.finalizers",
                "no new finalizers can be added if the object is being deleted",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            &info.gvk.group,
            &info.gvk.kind,
            name,
            causes,
        ));
    }
    Ok(incoming)
}

/// Serves a PUT of the object or its `/status`: the updated object, rendered as asked.
pub(crate) async fn serve(
    call: &Call,
    name: &str,
    scope: UpdateScope,
    body: Body,
    output: Output,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let (body, write) = write_request::<UpdateOptions>(call, body).await?;
    let (code, object) = update(call, name, &body, scope, write, warnings).await?;
    render::reply(call, output, code, object)
}

/// PUT of the object or its `/status`: 200 with the updated object, or 201 with the created one
/// when the object is missing and the kind's strategy creates on update.
async fn update(
    call: &Call,
    name: &str,
    body: &[u8],
    scope: UpdateScope,
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<(StatusCode, Value), ApiError> {
    let decoded = decode_object(call, body)?;
    let incoming = body_through_codec(call, &decoded, body)?;
    validate_fields(call, write.validation, body, &decoded, &incoming, warnings)?;
    check_identity(call, name, &incoming)?;
    let writer = Writer {
        manager: managed_fields::manager_of(call, "UpdateOptions")?,
        subresource: scope.subresource().to_owned(),
    };
    // A PUT's uid is a precondition the store checks before the update itself
    // (`rest.DefaultUpdatedObjectInfo.Preconditions`).
    let uid = meta_str(&incoming, "uid").filter(|u| !u.is_empty());
    let updated = update_with(call, name, scope, write.dry_run, Some(&writer), |current| {
        let stored = meta_str(current, "uid").unwrap_or("");
        match uid {
            Some(want) if want != stored => Err(call.uid_precondition_failed(name, want, stored)),
            _ => Ok(incoming.clone()),
        }
    })
    .await;
    match updated {
        Ok(object) => Ok((StatusCode::OK, object)),
        Err(missing)
            if missing.code() == StatusCode::NOT_FOUND
                && scope == UpdateScope::Main
                && call.info().write_rules.create_on_update =>
        {
            // Upstream's `Store.Update` creates the object through the create strategy and
            // the create admission (the namespace must be active), ignoring the
            // resourceVersion it was sent (`staging/src/k8s.io/apiserver/pkg/registry/generic/
            // registry/store.go`).
            let mut object = incoming;
            meta_mut(&mut object).remove("resourceVersion");
            create::create_decoded(call, object, write, Some(&writer)).await
        }
        Err(refused) => Err(refused),
    }
}

/// The update pipeline shared by PUT and PATCH: `make` turns the current object into the full
/// incoming object (decoded and checked). A `resourceVersion` in it must match the stored one
/// (409). A lost race re-reads and calls `make` again, so a patch re-applies to the new object
/// (keeping the version it read only if it did not pin one) and a pinned version fails.
/// A dry run stops before the write and answers with the object it would have written.
/// With a `writer` the write is recorded in the object's managed fields; an apply's `make`
/// records its own.
pub(crate) async fn update_with(
    call: &Call,
    name: &str,
    scope: UpdateScope,
    dry_run: bool,
    writer: Option<&Writer>,
    make: impl Fn(&Value) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let info = call.info();
    let key = call.key(name);
    // The copy this server saw last stands in for a read (see `recent`): the write below
    // names its revision, so a stale copy costs a failed write. What no write confirms (a
    // refusal such as a conflict with the client's resourceVersion, a no-op, a dry run) is
    // decided on a fresh read, and so is everything after a failed write (which answers with
    // the current value).
    // A dry run never writes, so it decides on a fresh read at once (and calls admission
    // webhooks once).
    let mut known = if dry_run {
        None
    } else {
        call.state.storage.recent(&key).map(Cached)
    };
    let mut reads = 0;
    while reads < RETRIES {
        let kv = match known.take() {
            Some(start) => start,
            None => {
                reads += 1;
                Fresh(read(call, name).await?)
            }
        };
        // The reservation is held until the write is done (see `services`).
        let (current, next, stored, _reserved) =
            match plan_update(call, name, &kv, scope, dry_run, writer, &make).await {
                Ok(plan) => plan,
                Err(_) if kv.is_cached() => continue,
                Err(refused) => return Err(refused),
            };
        let mut no_op = unchanged(call, &current, &next, &stored, &kv.value);
        if no_op && !kv.is_cached() {
            // A value read through an older encryption key is written again even unchanged,
            // as upstream's GuaranteedUpdate does with a stale read (key rotation).
            no_op = !call
                .state
                .storage
                .stale(&key, kv.mod_revision)
                .await
                .map_err(ApiError::from_read)?;
        }
        if (no_op || dry_run) && kv.is_cached() {
            continue;
        }
        // Validating admission judges a no-op too: upstream's `Store.Update` runs it inside
        // GuaranteedUpdate's update function, before the storage finds the bytes unchanged.
        let admitted =
            crate::server::admission::validate_update(call, &next, &current, name, dry_run).await;
        match admitted {
            Ok(()) => {}
            Err(_) if kv.is_cached() => continue,
            Err(refused) => return Err(refused),
        }
        if no_op {
            // A no-op write changes nothing, not even the resourceVersion, as upstream.
            return Ok(current);
        }
        if dry_run {
            // Also when the write would complete a pending deletion: the answer is the object
            // as it would have gone.
            return dry_answer(call, next, &stored, kv.mod_revision).await;
        }
        if next
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
            && !has_finalizers(info, &next)
        {
            // The last finalizer is gone: the pending deletion completes now.
            return match call.state.storage.delete(&key, Some(kv.mod_revision)).await {
                Ok(deleted) => {
                    let mut last = next;
                    meta_mut(&mut last).insert(
                        "resourceVersion".into(),
                        Value::from(deleted.revision.to_string()),
                    );
                    Ok(last)
                }
                // Again from the current value: a pinned resourceVersion now fails the check
                // above (409).
                Err(DeleteError::Conflict { current }) => {
                    known = Some(Fresh(current));
                    reads += 1;
                    continue;
                }
                Err(DeleteError::NotFound) if kv.is_cached() => continue,
                Err(e) => Err(ApiError::from_delete(e, call.subject(name))),
            };
        }
        match call
            .state
            .storage
            .update(&key, stored, kv.mod_revision)
            .await
        {
            Ok(kv) => return kv_object(call, &kv).await,
            Err(UpdateError::Conflict { current }) => {
                known = Some(Fresh(current));
                reads += 1;
            }
            Err(UpdateError::NotFound) if kv.is_cached() => {}
            Err(e) => return Err(ApiError::from_update(e, call.subject(name))),
        }
    }
    Err(ApiError::conflict_modified(call.subject(name)))
}

/// One update attempt's current object (decoded from `kv`), the object to write, its stored
/// bytes and, for a Service, the cluster IP and node ports it reserved.
pub(crate) async fn plan_update<'a>(
    call: &'a Call,
    name: &str,
    kv: &KeyValue,
    scope: UpdateScope,
    dry_run: bool,
    writer: Option<&Writer>,
    make: impl Fn(&Value) -> Result<Value, ApiError>,
) -> Result<(Value, Value, Bytes, Option<Reservation<'a>>), ApiError> {
    let current = kv_object(call, kv).await?;
    let incoming = make(&current)?;
    let precondition = match meta_str(&incoming, "resourceVersion") {
        None | Some("") => None,
        Some(rv) => Some(parse_object_rv(rv)?),
    };
    if precondition.is_some_and(|rv| rv != kv.mod_revision) {
        return Err(ApiError::conflict_modified(call.subject(name)));
    }
    let mut next = prepare_update(call, &current, incoming, scope)?;
    if let Some(writer) = writer {
        managed_fields::track(call, Some(&current), &mut next, writer)?;
    }
    crate::server::admission::admit_update(call, &mut next, &current, name, dry_run).await?;
    let reserved = match scope {
        UpdateScope::Main => services::allocate_on_update(call, &current, &mut next)?,
        UpdateScope::Status | UpdateScope::EphemeralContainers | UpdateScope::Resize => None,
    };
    check_object(call, &next, Some(&current), scope, name)?;
    let stored = to_stored(call, &next).await?;
    Ok((current, next, stored, reserved))
}

/// The stored object an update attempt starts from.
pub(crate) enum Start {
    /// This server's last copy, perhaps stale.
    Cached(KeyValue),
    /// The store's answer just now.
    Fresh(KeyValue),
}

use Start::{Cached, Fresh};

impl Start {
    fn is_cached(&self) -> bool {
        matches!(self, Cached(_))
    }
}

impl std::ops::Deref for Start {
    type Target = KeyValue;

    fn deref(&self) -> &KeyValue {
        match self {
            Cached(kv) | Fresh(kv) => kv,
        }
    }
}

/// Whether writing `stored` (encoded from `next`) over `before` (served as `current`) would
/// change nothing. Without conversions, objects that differ as served differ as stored too
/// (the served object is the stored one plus its resourceVersion, or has another apiVersion
/// than the stored one, which a write changes), so only equal objects need the stored values
/// compared, which takes two parses when their key order differs.
pub(crate) fn unchanged(
    call: &Call,
    current: &Value,
    next: &Value,
    stored: &[u8],
    before: &[u8],
) -> bool {
    if stored == before {
        return true;
    }
    if !converts(call) && !same_but_resource_version(current, next) {
        return false;
    }
    same_json(stored, before)
}

/// Whether two objects are equal but for `metadata.resourceVersion`.
pub(crate) fn same_but_resource_version(a: &Value, b: &Value) -> bool {
    fn same_except(a: &Map<String, Value>, b: &Map<String, Value>, skip: &str) -> bool {
        let len = |m: &Map<String, Value>| m.len() - usize::from(m.contains_key(skip));
        len(a) == len(b)
            && a.iter()
                .filter(|(key, _)| key.as_str() != skip)
                .all(|(key, value)| b.get(key) == Some(value))
    }
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => {
            same_except(a, b, "metadata")
                && match (
                    a.get("metadata").and_then(Value::as_object),
                    b.get("metadata").and_then(Value::as_object),
                ) {
                    (Some(a), Some(b)) => same_except(a, b, "resourceVersion"),
                    _ => a.get("metadata") == b.get("metadata"),
                }
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn objects_compare_without_their_resource_version() {
        let a = serde_json::json!({"kind": "K", "metadata": {"name": "a", "resourceVersion": "5"}, "spec": {"x": 1}});
        let same = serde_json::json!({"spec": {"x": 1}, "metadata": {"name": "a"}, "kind": "K"});
        assert!(super::same_but_resource_version(&a, &same));
        let other_spec =
            serde_json::json!({"kind": "K", "metadata": {"name": "a"}, "spec": {"x": 2}});
        assert!(!super::same_but_resource_version(&a, &other_spec));
        let other_meta = serde_json::json!({"kind": "K", "metadata": {"name": "a", "labels": {}}, "spec": {"x": 1}});
        assert!(!super::same_but_resource_version(&a, &other_meta));
        let no_meta = serde_json::json!({"kind": "K", "spec": {"x": 1}});
        assert!(!super::same_but_resource_version(&a, &no_meta));
    }
}
