//! Create (POST): name generation, the namespace an object is created in (active, and
//! unchanged until the write, see `state::namespaces`), server-set metadata, managed fields,
//! and the write, skipped under dry run. Server-side apply creates through
//! [`create_decoded`] too.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::meta::{CauseType, CreateOptions, StatusCause};
use crate::storage::{CreateError, Guard, Storage};
use crate::time::Time;
use crate::write_rules::StatusOnCreate;

use crate::server::Call;
use crate::server::handlers::decode::decode_object;
use crate::server::handlers::gated_fields;
use crate::server::handlers::managed_fields::{self, Writer};
use crate::server::handlers::object::UpdateScope;
use crate::server::handlers::request::write_request;
use crate::server::handlers::services;
use crate::server::http::dry_run::WriteOptions;
use crate::server::http::error::{ApiError, Subject};
use crate::server::http::negotiate::Output;
use crate::server::objects::generated_names::random_suffix;
use crate::server::objects::json::meta_mut;
use crate::server::objects::render;
use crate::server::objects::stored::{dry_answer, to_stored, written};
use crate::server::state::builtin::{NAMESPACE_FINALIZER, is_namespace_kind};
use crate::server::state::keys;

use crate::server::handlers::object::{
    RETRIES, body_through_codec, check_object_after, fill_defaults, generate_name_causes,
    name_causes, validate_fields,
};

/// How many generated names are tried before answering 500 ServerTimeout.
pub(crate) const GENERATE_ATTEMPTS: usize = 8;

/// A name generated from `generateName`: upstream keeps it within 63 characters.
fn generated_name(generate: &str) -> String {
    let base: String = generate.chars().take(58).collect();
    format!("{base}{}", random_suffix())
}

/// The namespace an object is created in must exist and not be terminating; answers the guard
/// the create must hold to (the namespace unchanged since). A namespace the server knows to be
/// active needs no read unless `fresh` (see `namespaces`).
pub(crate) async fn check_namespace(
    call: &Call,
    namespace: &str,
    name: &str,
    fresh: bool,
) -> Result<Guard, ApiError> {
    let key = format!("{}{namespace}", crate::server::state::namespaces::PREFIX);
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
        // Upstream's NamespaceLifecycle admission: a Forbidden naming the object, with a
        // `NamespaceTerminating` cause clients look for
        // (`plugin/pkg/admission/namespace/lifecycle/admission.go`).
        let mut status = ApiError::forbidden(
            call.subject(name),
            &format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ),
        )
        .into_status();
        if let Some(details) = status.details.as_mut() {
            details.causes.push(StatusCause {
                reason: Some(CauseType::NamespaceTerminating),
                message: Some(format!("namespace {namespace} is being terminated")),
                field: Some("metadata.namespace".to_owned()),
            });
        }
        return Err(ApiError::from_status(status));
    }
    Ok(Guard {
        key,
        mod_revision: kv.mod_revision,
    })
}

/// Serves a POST to a collection: 201 with the created object, rendered as asked.
pub(crate) async fn serve(
    call: &Call,
    body: Body,
    output: Output,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let (body, write) = write_request::<CreateOptions>(call, body).await?;
    let (code, object) = create(call, &body, write, warnings).await?;
    render::reply(call, output, code, object)
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
    let object = body_through_codec(call, &decoded, body)?;
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
    let rules = &info.write_rules;
    if info.subresources.status
        && let Value::Object(map) = &mut object
    {
        match rules.status_on_create {
            StatusOnCreate::Keep => {}
            StatusOnCreate::Remove => {
                map.remove("status");
            }
            StatusOnCreate::Empty => {
                map.insert("status".into(), json!({}));
                // Upstream defaults the empty status when it decodes it (a claim's phase).
                fill_defaults(call, &mut object);
            }
            StatusOnCreate::PodPending => {
                let now = serde_json::to_value(Time::now()).map_err(ApiError::internal)?;
                let status =
                    crate::write_rules::pod_pending_status(&object, now.as_str().unwrap_or(""));
                if let Value::Object(map) = &mut object {
                    map.insert("status".into(), status);
                }
                fill_defaults(call, &mut object);
            }
        }
    }
    let url_ns = call.target.namespace.clone();
    let meta = meta_mut(&mut object);
    if let Some(rv) = meta.get("resourceVersion").and_then(Value::as_str)
        && !rv.is_empty()
    {
        // The etcd3 store's `ErrResourceVersionSetOnCreate`, no API status: a 500 without a
        // reason (`staging/src/k8s.io/apiserver/pkg/storage/errors.go`).
        return Err(ApiError::unstatused(
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
    if let Some(generation) = rules.generation_at(call.state.kube_version).on_create() {
        meta.insert("generation".into(), Value::from(generation));
    }
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
    crate::server::admission::admit_create(call, &mut object, &name, write.dry_run).await?;
    // The strategy's `PrepareForCreate` runs after mutating admission (a Job's selector).
    rules
        .create_rule
        .apply(&mut object, call.state.kube_version);
    gated_fields::drop_disabled(
        &mut object,
        None,
        &info.gvk.group,
        &info.gvk.kind,
        call.state.kube_version,
        &call.state.features,
    );
    // Upstream's `rest.BeforeCreate` generates the name, then validates it with the object:
    // the generateName as a prefix, then the name, before the kind's own checks.
    let first = if name.is_empty() {
        generated_name(&generate)
    } else {
        name.clone()
    };
    let mut name_problems = Vec::new();
    if !generate.is_empty() {
        name_problems.extend(generate_name_causes(call, &generate));
    }
    name_problems.extend(name_causes(call, &first));
    check_object_after(
        call,
        &object,
        None,
        UpdateScope::Main,
        &first,
        name_problems,
    )?;
    crate::server::admission::validate_create(call, &object, &name, write.dry_run).await?;
    let namespace = url_ns.as_deref().filter(|_| info.is_namespaced());
    let shown = if name.is_empty() { &generate } else { &name };
    let mut guard = match namespace {
        Some(ns) => Some(check_namespace(call, ns, shown, false).await?),
        None => None,
    };
    // After the namespace check, as upstream's admission runs before the Service storage.
    // Held until the write is done: the stored Service holds what it reserved from then on.
    let _reserved = services::allocate_on_create(call, &mut object)?;
    let attempts = if name.is_empty() {
        GENERATE_ATTEMPTS
    } else {
        1
    };
    let mut namespace_changes = 0;
    let mut attempt = 0;
    while attempt < attempts {
        attempt += 1;
        let candidate = if attempt == 1 {
            first.clone()
        } else {
            generated_name(&generate)
        };
        let causes = name_causes(call, &candidate);
        if !causes.is_empty() || !crate::server::http::path::is_path_segment(&candidate) {
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
                    let stored = to_stored(call, &object).await?;
                    let mut answer = dry_answer(call, object, &stored, 0).await?;
                    meta_mut(&mut answer).remove("resourceVersion");
                    return Ok((StatusCode::CREATED, answer));
                }
                (true, true) => continue,
                (true, false) => return Err(ApiError::already_exists(call.subject(&candidate))),
            }
        }
        let stored = to_stored(call, &object).await?;
        let storage = &call.state.storage;
        let created = match &guard {
            Some(guard) => storage.create_guarded(&key, stored.clone(), guard).await,
            None => storage.create(&key, stored.clone()).await,
        };
        match created {
            Ok(kv) => {
                let answer = written(call, object, &stored, kv.mod_revision).await?;
                return Ok((StatusCode::CREATED, answer));
            }
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
