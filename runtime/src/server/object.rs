//! Single-object handlers: create, get, update (PUT), delete (one object or a collection), the
//! `status` and `scale` subresources, and the object rules they share (name validation,
//! server-set metadata, generation, finalizers, namespace checks, the trip through the kind's
//! codec).
//!
//! Objects are stored as JSON without `metadata.resourceVersion`; it is the key's mod revision
//! and is filled in on every read, so it can never disagree with the store. A resource whose
//! versions were registered with conversions (`Registry::register_versions`) is stored in its
//! storage version: `stored::to_stored` converts every write to it, after the requested
//! version's codec, and `stored::from_stored` converts every read (gets, list items, watch
//! events, write answers) to the requested version, so handlers and patches only see the
//! requested version.
//!
//! Every write takes its [`WriteOptions`]: a dry run runs all of the above and the store reads
//! they need, then answers with the object it would have stored instead of writing it; the
//! body's unknown and duplicate fields are reported as `fieldValidation` asks (see
//! `field_validation`). Every create and update records its field manager's changes in
//! `metadata.managedFields` (see `managed_fields`).

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::ResourceInfo;
use crate::meta::{DeleteOptions, ListOptions, StatusCause};
use crate::storage::{Bytes, CreateError, DeleteError, Guard, KeyValue, Storage, UpdateError};
use crate::time::Time;

use super::Call;
use super::builtin::{NAMESPACE_FINALIZER, is_namespace_kind};
use super::dry_run::WriteOptions;
use super::error::{ApiError, Subject};
use super::field_validation::{self, Directive};
use super::gc;
use super::json::{eval_path, meta_mut, meta_str, set_path};
use super::keys;
use super::list::list;
use super::managed_fields::{self, Writer};
use super::revision::{parse_rv, wait_for};
use super::selector::Selectors;
use super::stored::{at_revision, converter, dry_answer, kv_object, to_stored};

/// How many times a write re-reads and retries after losing a race it may retry.
pub(crate) const RETRIES: usize = 16;

/// How many generated names are tried before answering 500 ServerTimeout.
const GENERATE_ATTEMPTS: usize = 8;

pub(crate) use crate::names::{is_dns_label, is_dns_subdomain};

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// The name rule of a kind: namespaces are labels, everything else a subdomain.
fn name_causes(info: &ResourceInfo, name: &str) -> Vec<StatusCause> {
    let (ok, msg) = if is_namespace_kind(info) {
        (is_dns_label(name), LABEL_MSG)
    } else {
        (is_dns_subdomain(name), SUBDOMAIN_MSG)
    };
    if ok {
        Vec::new()
    } else {
        vec![StatusCause::invalid(
            "metadata.name",
            &Value::from(name),
            msg,
        )]
    }
}

/// `metadata.finalizers` plus, for namespaces, `spec.finalizers`: what holds a deletion.
pub(crate) fn has_finalizers(info: &ResourceInfo, object: &Value) -> bool {
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    non_empty(object.pointer("/metadata/finalizers"))
        || (is_namespace_kind(info) && non_empty(object.pointer("/spec/finalizers")))
}

/// Fills in missing `apiVersion`/`kind` and rejects ones that name another kind (400).
pub(crate) fn check_type(info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
    let Value::Object(map) = object else {
        return Err(ApiError::bad_request("the request body must be an object"));
    };
    let want_version = info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::from(want_version));
        }
        Some(v) if v == want_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({want_version})"
            )));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::from(info.gvk.kind.to_string()));
        }
        Some(k) if k == info.gvk.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.gvk.kind
            )));
        }
    }
    Ok(())
}

/// Pushes a body through the kind's Rust type, dropping unknown fields (400 on type errors).
pub(crate) fn through_codec(call: &Call, object: Value) -> Result<Value, ApiError> {
    let info = call.info();
    (call.target.kind.codec)(object).map_err(|e| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {e}",
            kind = info.gvk.kind,
            version = info.gvk.version
        ))
    })
}

/// Holds a written object to its kind's own checks (a CRD's schema): 422 Invalid with one cause
/// per violation.
fn check_schema(call: &Call, object: &Value, name: &str) -> Result<(), ApiError> {
    let Some(validate) = &call.target.kind.validate else {
        return Ok(());
    };
    let causes = validate(object);
    if causes.is_empty() {
        return Ok(());
    }
    let info = call.info();
    Err(ApiError::invalid(
        &info.gvk.group,
        &info.gvk.kind,
        name,
        causes,
    ))
}

/// Upstream's 400 for a body its strict decoder refused: `<Kind> in version "<v>" cannot be
/// handled as a <Kind>: strict decoding error: ...`.
fn strict_decoding(kind: &str, version: &str, problems: &[String]) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {}",
        field_validation::strict_error(problems)
    ))
}

/// Applies `fieldValidation` to a decoded create or update body: `decoded` is the codec's
/// result for `object`, `raw` the bytes it came from. Warnings go to `warnings`; `Strict`
/// refuses the body.
fn validate_fields(
    call: &Call,
    validation: Directive,
    raw: &[u8],
    object: &Value,
    decoded: &Value,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    if validation == Directive::Ignore {
        return Ok(());
    }
    let problems = field_validation::body_problems(&*call.target.kind.codec, raw, object, decoded);
    if problems.is_empty() {
        return Ok(());
    }
    if validation == Directive::Strict {
        let info = call.info();
        return Err(strict_decoding(
            &info.gvk.kind,
            &info.gvk.version,
            &problems,
        ));
    }
    warnings.extend(problems);
    Ok(())
}

/// Reads, type-checks and decodes a write's body.
pub(crate) fn decode_object(call: &Call, body: &[u8]) -> Result<Value, ApiError> {
    let mut object = super::negotiate::decode_body(&call.headers, body)?;
    check_type(call.info(), &mut object)?;
    Ok(object)
}

/// A short random suffix from upstream's alphabet (no vowels, no look-alikes).
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// The namespace an object is created in must exist and not be terminating; answers the guard
/// the create must hold to (the namespace unchanged since). A namespace the server knows to be
/// active needs no read unless `fresh` (see `namespaces`).
async fn check_namespace(
    call: &Call,
    namespace: &str,
    name: &str,
    fresh: bool,
) -> Result<Guard, ApiError> {
    let key = format!("{}{namespace}", super::namespaces::PREFIX);
    if !fresh && let Some(mod_revision) = call.state.storage.namespaces().active_at(namespace) {
        return Ok(Guard { key, mod_revision });
    }
    let found = call
        .state
        .storage
        .get(&key, None)
        .await
        .map_err(ApiError::from_read)?;
    let Some(kv) = found else {
        return Err(ApiError::not_found(Subject {
            group: "",
            resource: "namespaces",
            name: namespace,
        }));
    };
    let ns: Value = serde_json::from_slice(&kv.value).map_err(ApiError::internal)?;
    if ns
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApiError::forbidden(
            call.subject(name),
            &format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
        ));
    }
    Ok(Guard {
        key,
        mod_revision: kv.mod_revision,
    })
}

/// POST to a collection. A dry run does everything but the write: the name is still checked
/// against the store (409) and the answer has no resourceVersion, as upstream's.
pub(crate) async fn create(
    call: &Call,
    body: &[u8],
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<(StatusCode, Value), ApiError> {
    let decoded = decode_object(call, body)?;
    // The whole body is decoded, as upstream's strict decoder sees it, status included.
    let object = through_codec(call, decoded.clone())?;
    validate_fields(call, write.validation, body, &decoded, &object, warnings)?;
    let writer = Writer {
        manager: managed_fields::manager_of(call, "CreateOptions")?,
        subresource: String::new(),
    };
    create_decoded(call, object, write, Some(&writer)).await
}

/// The create pipeline after decoding: `object` went through the kind's codec. With a
/// `writer` the create is recorded in the object's managed fields; an apply that creates
/// brings its own.
pub(crate) async fn create_decoded(
    call: &Call,
    mut object: Value,
    write: WriteOptions,
    writer: Option<&Writer>,
) -> Result<(StatusCode, Value), ApiError> {
    let info = call.info();
    if info.subresources.status
        && let Value::Object(map) = &mut object
    {
        map.remove("status");
    }
    let url_ns = call.target.namespace.clone();
    let meta = meta_mut(&mut object);
    if let Some(rv) = meta.get("resourceVersion").and_then(Value::as_str)
        && !rv.is_empty()
    {
        return Err(ApiError::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    if info.is_namespaced() {
        let Some(ns) = url_ns.as_deref() else {
            return Err(ApiError::method_not_allowed(
                &info.gvk.group,
                &info.plural,
                "create",
            ));
        };
        match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {}
            Some(body_ns) if body_ns == ns => {}
            Some(_) => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        meta.insert("namespace".into(), Value::from(ns));
    } else {
        meta.remove("namespace");
    }
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let generate = meta
        .get("generateName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if name.is_empty() && generate.is_empty() {
        return Err(ApiError::invalid(
            &info.gvk.group,
            &info.gvk.kind,
            "",
            vec![StatusCause::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    }
    // Server-owned fields.
    meta.insert("uid".into(), Value::from(uuid::Uuid::new_v4().to_string()));
    meta.insert(
        "creationTimestamp".into(),
        serde_json::to_value(Time::now()).map_err(ApiError::internal)?,
    );
    meta.insert("generation".into(), Value::from(1));
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    meta.remove("selfLink");
    // Upstream's field manager runs before the create strategy, so the creator does not
    // own what the server sets below.
    if let Some(writer) = writer {
        managed_fields::track(call, None, &mut object, writer)?;
    }
    if is_namespace_kind(info)
        && let Value::Object(map) = &mut object
    {
        map.insert("spec".into(), json!({"finalizers": [NAMESPACE_FINALIZER]}));
        map.insert("status".into(), json!({"phase": "Active"}));
    }
    check_schema(
        call,
        &object,
        if name.is_empty() { &generate } else { &name },
    )?;
    let namespace = url_ns.as_deref().filter(|_| info.is_namespaced());
    let shown = if name.is_empty() { &generate } else { &name };
    let mut guard = match namespace {
        Some(ns) => Some(check_namespace(call, ns, shown, false).await?),
        None => None,
    };
    let attempts = if name.is_empty() {
        GENERATE_ATTEMPTS
    } else {
        1
    };
    let mut namespace_changes = 0;
    let mut attempt = 0;
    while attempt < attempts {
        attempt += 1;
        let candidate = if name.is_empty() {
            // Upstream keeps the generated name within 63 characters.
            let base: String = generate.chars().take(58).collect();
            format!("{base}{}", random_suffix())
        } else {
            name.clone()
        };
        let causes = name_causes(info, &candidate);
        if !causes.is_empty() || !super::path::is_path_segment(&candidate) {
            let mut causes = causes;
            if causes.is_empty() {
                causes.push(StatusCause::invalid(
                    "metadata.name",
                    &Value::from(candidate.as_str()),
                    "may not be '.' or '..' and may not contain '/' or '%'",
                ));
            }
            return Err(ApiError::invalid(
                &info.gvk.group,
                &info.gvk.kind,
                &candidate,
                causes,
            ));
        }
        meta_mut(&mut object).insert("name".into(), Value::from(candidate.as_str()));
        let key = keys::object_key(info, url_ns.as_deref(), &candidate);
        if write.dry_run {
            let taken = call
                .state
                .storage
                .get(&key, None)
                .await
                .map_err(ApiError::from_read)?
                .is_some();
            match (taken, name.is_empty()) {
                (false, _) => {
                    let stored = to_stored(call, &object)?;
                    let mut answer = dry_answer(call, object, &stored, 0)?;
                    meta_mut(&mut answer).remove("resourceVersion");
                    return Ok((StatusCode::CREATED, answer));
                }
                (true, true) => continue,
                (true, false) => return Err(ApiError::already_exists(call.subject(&candidate))),
            }
        }
        let stored = to_stored(call, &object)?;
        let storage = &call.state.storage;
        let created = match &guard {
            Some(guard) => storage.create_guarded(&key, stored, guard).await,
            None => storage.create(&key, stored).await,
        };
        match created {
            Ok(kv) => return Ok((StatusCode::CREATED, kv_object(call, &kv)?)),
            Err(CreateError::AlreadyExists { .. }) if name.is_empty() => continue,
            // The namespace changed since it was read (or the cache's copy is stale): look
            // again, and try the same name again.
            Err(CreateError::GuardChanged) if namespace_changes < RETRIES => {
                namespace_changes += 1;
                attempt -= 1;
                if let Some(ns) = namespace {
                    guard = Some(check_namespace(call, ns, shown, true).await?);
                }
            }
            Err(e) => return Err(ApiError::from_create(e, call.subject(&candidate))),
        }
    }
    Err(ApiError::server_timeout(call.subject(""), "POST"))
}

/// GET of one object (also `/status`), honouring `resourceVersion` (unset: latest; "0": any;
/// N: not older than N).
pub(crate) async fn get(call: &Call, name: &str, rv: Option<&str>) -> Result<Value, ApiError> {
    match rv {
        None | Some("") | Some("0") => {}
        Some(rv) => {
            let rv = parse_rv(rv)?;
            wait_for(call, rv).await?;
        }
    }
    let kv = read(call, name).await?;
    kv_object(call, &kv)
}

/// The latest stored value of the named object, or 404.
pub(crate) async fn read(call: &Call, name: &str) -> Result<KeyValue, ApiError> {
    let key = call.key(name);
    call.state
        .storage
        .get(&key, None)
        .await
        .map_err(ApiError::from_read)?
        .ok_or_else(|| ApiError::not_found(call.subject(name)))
}

/// Everything but `metadata` and `status`: what a generation counts changes of.
fn spec_part(object: &Value) -> Map<String, Value> {
    let mut map = object.as_object().cloned().unwrap_or_default();
    for key in ["metadata", "status", "apiVersion", "kind"] {
        map.remove(key);
    }
    map
}

/// Which part of an object a PUT may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateScope {
    /// The main resource: everything but `status` when the kind has a status subresource.
    Main,
    /// `/status`: only `status`.
    Status,
}

/// Merges a PUT body onto the current object under the scope's rules.
fn prepare_update(
    call: &Call,
    current: &Value,
    mut incoming: Value,
    scope: UpdateScope,
) -> Result<Value, ApiError> {
    let info = call.info();
    let name = meta_str(current, "name").unwrap_or("").to_owned();
    let mut next = match scope {
        UpdateScope::Status => {
            // Only status changes; metadata and spec stay as stored. Managed fields come
            // from the write: an apply computed them, other writes recompute them from the
            // stored ones (`managed_fields::track`).
            let mut next = current.clone();
            if let Value::Object(map) = &mut next {
                match incoming.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
            let meta = meta_mut(&mut next);
            match incoming.pointer("/metadata/managedFields") {
                Some(managed) => meta.insert("managedFields".into(), managed.clone()),
                None => meta.remove("managedFields"),
            };
            next
        }
        UpdateScope::Main => {
            if info.subresources.status
                && let Value::Object(map) = &mut incoming
            {
                match current.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
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
                    &name,
                    causes,
                ));
            }
            incoming
        }
    };
    if is_namespace_kind(info) && scope == UpdateScope::Main {
        // spec.finalizers belongs to the namespace lifecycle (upstream's /finalize).
        if let (Value::Object(map), Some(spec)) = (&mut next, current.get("spec")) {
            map.insert("spec".into(), spec.clone());
        }
    }
    let generation = current
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let bumped = if spec_part(current) != spec_part(&next) {
        generation + 1
    } else {
        generation
    };
    meta_mut(&mut next).insert("generation".into(), Value::from(bumped));
    Ok(next)
}

/// PUT of the object or its `/status`.
pub(crate) async fn update(
    call: &Call,
    name: &str,
    body: &[u8],
    scope: UpdateScope,
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<Value, ApiError> {
    let decoded = decode_object(call, body)?;
    let incoming = through_codec(call, decoded.clone())?;
    validate_fields(call, write.validation, body, &decoded, &incoming, warnings)?;
    check_identity(call, name, &incoming)?;
    let writer = Writer {
        manager: managed_fields::manager_of(call, "UpdateOptions")?,
        subresource: match scope {
            UpdateScope::Status => "status".to_owned(),
            UpdateScope::Main => String::new(),
        },
    };
    update_with(call, name, scope, write.dry_run, Some(&writer), |_| {
        Ok(incoming.clone())
    })
    .await
}

/// A written object must name the object and namespace of the URL (400 otherwise).
pub(crate) fn check_identity(call: &Call, name: &str, incoming: &Value) -> Result<(), ApiError> {
    let info = call.info();
    match meta_str(incoming, "name") {
        Some(n) if n == name => {}
        None | Some("") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({other}) does not match the name on the URL ({name})"
            )));
        }
    }
    if let (Some(url_ns), Some(body_ns)) = (
        call.target.namespace.as_deref(),
        meta_str(incoming, "namespace").filter(|s| !s.is_empty()),
    ) && info.is_namespaced()
        && url_ns != body_ns
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
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
    let mut known = call.state.storage.recent(&key).map(Cached);
    let mut reads = 0;
    while reads < RETRIES {
        let kv = match known.take() {
            Some(start) => start,
            None => {
                reads += 1;
                Fresh(read(call, name).await?)
            }
        };
        let (current, next, stored) = match plan_update(call, name, &kv, scope, writer, &make) {
            Ok(plan) => plan,
            Err(_) if kv.is_cached() => continue,
            Err(refused) => return Err(refused),
        };
        let no_op = unchanged(call, &current, &next, &stored, &kv.value);
        if (no_op || dry_run) && kv.is_cached() {
            continue;
        }
        if no_op {
            // A no-op write changes nothing, not even the resourceVersion, as upstream.
            return Ok(current);
        }
        if dry_run {
            // Also when the write would complete a pending deletion: the answer is the object
            // as it would have gone.
            return dry_answer(call, next, &stored, kv.mod_revision);
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
            Ok(kv) => return kv_object(call, &kv),
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

/// One update attempt's current object (decoded from `kv`), the object to write and its
/// stored bytes.
fn plan_update(
    call: &Call,
    name: &str,
    kv: &KeyValue,
    scope: UpdateScope,
    writer: Option<&Writer>,
    make: impl Fn(&Value) -> Result<Value, ApiError>,
) -> Result<(Value, Value, Bytes), ApiError> {
    let current = kv_object(call, kv)?;
    let incoming = make(&current)?;
    let precondition = match meta_str(&incoming, "resourceVersion") {
        None | Some("") => None,
        Some(rv) => Some(parse_rv(rv)?),
    };
    if precondition.is_some_and(|rv| rv != kv.mod_revision) {
        return Err(ApiError::conflict_modified(call.subject(name)));
    }
    let mut next = prepare_update(call, &current, incoming, scope)?;
    if let Some(writer) = writer {
        managed_fields::track(call, Some(&current), &mut next, writer)?;
    }
    check_schema(call, &next, name)?;
    let stored = to_stored(call, &next)?;
    Ok((current, next, stored))
}

/// The stored object an update attempt starts from.
enum Start {
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
fn unchanged(call: &Call, current: &Value, next: &Value, stored: &[u8], before: &[u8]) -> bool {
    if stored == before {
        return true;
    }
    if converter(call).is_none() && !same_but_resource_version(current, next) {
        return false;
    }
    same_json(stored, before)
}

/// Whether two objects are equal but for `metadata.resourceVersion`.
fn same_but_resource_version(a: &Value, b: &Value) -> bool {
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

/// Whether two stored values hold the same JSON. Key order may differ when one of them went
/// through a conversion and the other was stored as written, so equal bytes are only the
/// fast path.
pub(crate) fn same_json(a: &[u8], b: &[u8]) -> bool {
    a == b
        || matches!(
            (serde_json::from_slice::<Value>(a), serde_json::from_slice::<Value>(b)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// What a delete did.
pub(crate) enum Deletion {
    /// The object is gone; its last state.
    Gone(Value),
    /// Finalizers hold it; its state with `deletionTimestamp` set.
    Pending(Value),
}

/// Reads `DeleteOptions` from a body (optional) and the query string.
pub(crate) fn delete_options(call: &Call, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let mut options: DeleteOptions = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        let value = super::negotiate::decode_body(&call.headers, body)?;
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
) -> Result<Deletion, ApiError> {
    let info = call.info();
    let class = gc::class_of(info);
    let dry_run = options.is_dry_run();
    let key = call.key(name);
    for _ in 0..RETRIES {
        let kv = read(call, name).await?;
        let current = kv_object(call, &kv)?;
        check_preconditions(call, name, options, &current, kv.mod_revision)?;
        match gc::plan_delete(class, &current, options, jiff::Timestamp::now()) {
            gc::DeletePlan::Unchanged => return Ok(Deletion::Pending(current)),
            gc::DeletePlan::Mark(next) => {
                if dry_run {
                    return Ok(Deletion::Pending(at_revision(next, kv.mod_revision)));
                }
                match call
                    .state
                    .storage
                    .update(&key, to_stored(call, &next)?, kv.mod_revision)
                    .await
                {
                    Ok(kv) => {
                        let pending = kv_object(call, &kv)?;
                        if is_namespace_kind(info) && !gc::is_deleting(&current) {
                            super::spawn_namespace_cleanup(call, name);
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

/// A delete's preconditions must hold for the object as read (409 otherwise).
fn check_preconditions(
    call: &Call,
    name: &str,
    options: &DeleteOptions,
    current: &Value,
    revision: u64,
) -> Result<(), ApiError> {
    let Some(pre) = &options.preconditions else {
        return Ok(());
    };
    let subject = call.subject(name);
    let uid = meta_str(current, "uid").unwrap_or("");
    if let Some(want) = pre.uid.as_deref()
        && want != uid
    {
        return Err(ApiError::conflict(
            subject,
            &format!("Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"),
        ));
    }
    if let Some(want) = pre.resource_version.as_deref()
        && want != revision.to_string()
    {
        return Err(ApiError::conflict(
            subject,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {revision}"
            ),
        ));
    }
    Ok(())
}

/// Whether a successful immediate delete answers with a `Status` (built-in API groups) rather
/// than the deleted object (custom resources), as upstream's stores differ.
pub(crate) fn delete_returns_status(info: &ResourceInfo) -> bool {
    let group: &str = &info.gvk.group;
    group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io")
}

/// The `autoscaling/v1` `Scale` of an object.
pub(crate) fn scale_of(call: &Call, object: &Value) -> Result<Value, ApiError> {
    let Some(scale) = call.info().subresources.scale.as_ref() else {
        return Err(ApiError::no_route());
    };
    let number = |path: &str| eval_path(object, path).and_then(Value::as_i64).unwrap_or(0);
    let meta = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_meta = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            scale_meta.insert(field.into(), v.clone());
        }
    }
    let mut status = json!({"replicas": number(&scale.status_replicas_path)});
    if let Some(path) = scale.label_selector_path.as_deref()
        && let Some(selector) = eval_path(object, path).and_then(Value::as_str)
        && let Value::Object(map) = &mut status
    {
        map.insert("selector".into(), Value::from(selector));
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": number(&scale.spec_replicas_path)},
        "status": status,
    }))
}

/// The fields of an `autoscaling/v1` `Scale`: what a `/scale` write may hold.
#[derive(serde::Serialize, serde::Deserialize)]
struct ScaleBody {
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<crate::meta::ObjectMeta>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<ScaleSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<ScaleStatus>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ScaleSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i64>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ScaleStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selector: Option<String>,
}

/// The codec of `Scale`, for finding the unknown fields of a `/scale` write.
fn scale_codec(value: Value) -> Result<Value, serde_json::Error> {
    serde_json::to_value(serde_json::from_value::<ScaleBody>(value)?)
}

/// The unknown fields of a `Scale` (none when it does not decode: the replica checks report
/// what is wrong with it).
pub(crate) fn scale_unknown_fields(scale: &Value) -> Vec<String> {
    match scale_codec(scale.clone()) {
        Ok(decoded) => field_validation::unknown_fields(&scale_codec, scale, &decoded),
        Err(_) => Vec::new(),
    }
}

/// PUT `/scale`: sets the desired replicas.
pub(crate) async fn update_scale(
    call: &Call,
    name: &str,
    body: &[u8],
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<Value, ApiError> {
    if call.info().subresources.scale.is_none() {
        return Err(ApiError::no_route());
    }
    let incoming = super::negotiate::decode_body(&call.headers, body)?;
    if write.validation != Directive::Ignore {
        let decoded = scale_codec(incoming.clone()).unwrap_or_else(|_| incoming.clone());
        let problems = field_validation::body_problems(&scale_codec, body, &incoming, &decoded);
        if write.validation == Directive::Strict && !problems.is_empty() {
            return Err(strict_decoding("Scale", "v1", &problems));
        }
        warnings.extend(problems);
    }
    match incoming.get("kind").and_then(Value::as_str) {
        None | Some("" | "Scale") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({other}) does not match the expected kind (Scale)"
            )));
        }
    }
    let replicas = incoming
        .pointer("/spec/replicas")
        .cloned()
        .unwrap_or(Value::from(0));
    let Some(count) = replicas
        .as_i64()
        .filter(|n| *n >= 0 && *n <= i64::from(i32::MAX))
    else {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![StatusCause::invalid(
                "spec.replicas",
                &replicas,
                "must be greater than or equal to 0",
            )],
        ));
    };
    let precondition = match meta_str(&incoming, "resourceVersion") {
        None | Some("") => None,
        Some(rv) => Some(parse_rv(rv)?),
    };
    let writer = Writer {
        manager: managed_fields::manager_of(call, "UpdateOptions")?,
        subresource: "scale".to_owned(),
    };
    set_replicas(
        call,
        name,
        Some(count),
        precondition,
        write.dry_run,
        |current, next| managed_fields::track(call, Some(current), next, &writer),
    )
    .await
}

/// Sets the desired replicas of the object behind `/scale` (`None`: leaves them), with the
/// managed fields `record` computes from the object before and after; answers the `Scale`.
/// Nothing is written when neither the spec nor the managed fields change.
pub(crate) async fn set_replicas(
    call: &Call,
    name: &str,
    count: Option<i64>,
    precondition: Option<u64>,
    dry_run: bool,
    record: impl Fn(&Value, &mut Value) -> Result<(), ApiError>,
) -> Result<Value, ApiError> {
    let Some(scale) = call.info().subresources.scale.clone() else {
        return Err(ApiError::no_route());
    };
    for _ in 0..RETRIES {
        let kv = read(call, name).await?;
        if precondition.is_some_and(|rv| rv != kv.mod_revision) {
            return Err(ApiError::conflict_modified(call.subject(name)));
        }
        let current = kv_object(call, &kv)?;
        let mut next = current.clone();
        if let Some(count) = count {
            set_path(&mut next, &scale.spec_replicas_path, Value::from(count))?;
        }
        record(&current, &mut next)?;
        let next = through_codec(call, next)?;
        let generation = current
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let mut next = next;
        if spec_part(&current) != spec_part(&next) {
            meta_mut(&mut next).insert("generation".into(), Value::from(generation + 1));
        } else if current.pointer("/metadata/managedFields")
            == next.pointer("/metadata/managedFields")
        {
            return scale_of(call, &current);
        }
        check_schema(call, &next, name)?;
        let stored = to_stored(call, &next)?;
        if dry_run {
            return scale_of(call, &at_revision(next, kv.mod_revision));
        }
        match call
            .state
            .storage
            .update(&call.key(name), stored, kv.mod_revision)
            .await
        {
            Ok(kv) => return scale_of(call, &kv_object(call, &kv)?),
            Err(UpdateError::Conflict { .. }) if precondition.is_none() => continue,
            Err(e) => return Err(ApiError::from_update(e, call.subject(name))),
        }
    }
    Err(ApiError::conflict_modified(call.subject(name)))
}

/// DELETE of a collection: deletes every selected object, answering with the list of them.
/// The options go to each delete, so a dry run lists what would go and removes nothing.
pub(crate) async fn delete_collection(
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
        match self::delete(target_call, name, delete).await {
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

    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "a-b", "a.b", "0", "a1.b2-c"] {
            assert!(is_dns_subdomain(ok), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a..b", "a_b", ".a", &"a".repeat(254)] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        assert!(is_dns_label("kube-system"));
        assert!(!is_dns_label("a.b"));
        assert!(!is_dns_label(&"a".repeat(64)));
    }

    #[test]
    fn paths() {
        let obj = json!({"spec": {"replicas": 3, "list": [{"x": 1}]}, "status": {"a.b": 2}});
        assert_eq!(eval_path(&obj, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(eval_path(&obj, ".spec.list[0].x"), Some(&json!(1)));
        assert_eq!(eval_path(&obj, ".spec.missing"), None);
        assert_eq!(eval_path(&obj, ".spec.list[9]"), None);
        let mut target = json!({});
        set_path(&mut target, ".spec.replicas", json!(5)).unwrap();
        assert_eq!(target, json!({"spec": {"replicas": 5}}));
    }

    #[test]
    fn suffixes_use_upstreams_alphabet() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
