//! The `scale` subresource: an object's `autoscaling/v1` Scale read through the paths its
//! kind declares, and a Scale written back to the replicas path ([`set_replicas`], which
//! patches and apply of a scale use as well).

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::meta::{GetOptions, StatusCause, UpdateOptions};
use crate::storage::{Storage, UpdateError};
use crate::write_rules::outside_metadata;

use crate::server::handlers::managed_fields::{self, Writer};
use crate::server::handlers::object;
use crate::server::handlers::object::UpdateScope;
use crate::server::handlers::request::write_request;
use crate::server::http::dry_run::WriteOptions;
use crate::server::http::error::ApiError;
use crate::server::http::field_validation::{self, Directive};
use crate::server::http::negotiate::{self, Output};
use crate::server::objects::json::{eval_path, meta_mut, meta_str, set_path};
use crate::server::objects::revision::parse_object_rv;
use crate::server::objects::stored::{at_revision, kv_object, to_stored};
use crate::server::{Call, admission};

use crate::server::handlers::object::{
    RETRIES, check_object, read, strict_decoding, through_codec,
};

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
pub(crate) struct ScaleBody {
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
pub(crate) struct ScaleSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i64>,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct ScaleStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    selector: Option<String>,
}

/// The codec of `Scale`, for finding the unknown fields of a `/scale` write.
pub(crate) fn scale_codec(value: Value) -> Result<Value, serde_json::Error> {
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

/// Serves a GET of `/scale`: the object's Scale.
pub(crate) async fn serve_get(
    call: &Call,
    name: &str,
    output: Output,
) -> Result<Response, ApiError> {
    let options: GetOptions = call.query()?;
    let object = object::get(call, name, options.resource_version.as_deref()).await?;
    let scale = scale_of(call, &object)?;
    Ok(negotiate::encode(output.format, StatusCode::OK, &scale))
}

/// Serves a PUT of `/scale`: the Scale after the write.
pub(crate) async fn serve_update(
    call: &Call,
    name: &str,
    body: Body,
    output: Output,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let (body, write) = write_request::<UpdateOptions>(call, body).await?;
    let scale = update_scale(call, name, &body, write, warnings).await?;
    Ok(negotiate::encode(output.format, StatusCode::OK, &scale))
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
    let incoming =
        crate::server::http::negotiate::decode_body(&call.headers, body, call.state.cbor())?;
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
    let precondition = match meta_str(&incoming, "resourceVersion") {
        None | Some("") => None,
        Some(rv) => Some(parse_object_rv(rv)?),
    };
    let requested = requested_scale(call, incoming);
    let writer = Writer {
        manager: managed_fields::manager_of(call, "UpdateOptions")?,
        subresource: "scale".to_owned(),
    };
    set_replicas(
        call,
        name,
        |_| requested.clone(),
        precondition,
        write.dry_run,
        |current, next| managed_fields::track(call, Some(current), next, &writer),
    )
    .await
}

/// The Scale a write asks for, as upstream's decoder hands it to admission: its fields only
/// (when it decodes), of its kind, and in the request's namespace.
fn requested_scale(call: &Call, incoming: Value) -> Value {
    let mut scale = scale_codec(incoming.clone()).unwrap_or(incoming);
    if let Some(map) = scale.as_object_mut() {
        map.insert("apiVersion".into(), Value::from("autoscaling/v1"));
        map.insert("kind".into(), Value::from("Scale"));
    }
    if let Some(namespace) = call.target.namespace.as_deref()
        && meta_str(&scale, "namespace").is_none_or(str::is_empty)
    {
        meta_mut(&mut scale).insert("namespace".into(), Value::from(namespace));
    }
    scale
}

/// The replicas an admitted Scale asks for, or upstream's 422 (`ValidateScale`).
pub(crate) fn replicas_of(scale: &Value, name: &str) -> Result<i64, ApiError> {
    let replicas = scale
        .pointer("/spec/replicas")
        .cloned()
        .unwrap_or(Value::from(0));
    replicas
        .as_i64()
        .filter(|n| *n >= 0 && *n <= i64::from(i32::MAX))
        .ok_or_else(|| {
            ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![StatusCause::invalid(
                    "spec.replicas",
                    &replicas,
                    "must be greater than or equal to 0",
                )],
            )
        })
}

/// Sets the replicas of the object behind `/scale` to those of the Scale `requested` makes of
/// the current one, admitted as upstream's `ScaleREST` admits it (`scaleUpdatedObjectInfo`):
/// an update of the subresource whose object is the new Scale and old object the current one,
/// through the mutating plugins before the replicas are checked and set, and the validating
/// ones with the Scale of the object about to be written. `record` computes the managed
/// fields from the object before and after; answers the `Scale`. Nothing is written when
/// neither the spec nor the managed fields change, but the write is validated and admitted
/// first all the same, as upstream's `Store.Update` does before its storage finds the bytes
/// unchanged.
pub(crate) async fn set_replicas(
    call: &Call,
    name: &str,
    requested: impl Fn(&Value) -> Value,
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
        let current = kv_object(call, &kv).await?;
        let old_scale = scale_of(call, &current)?;
        let mut new_scale = requested(&old_scale);
        admission::admit_update(call, &mut new_scale, &old_scale, name, dry_run).await?;
        let count = replicas_of(&new_scale, name)?;
        let mut next = current.clone();
        set_path(&mut next, &scale.spec_replicas_path, Value::from(count))?;
        record(&current, &mut next)?;
        let mut next = through_codec(call, next)?;
        let spec_changed = outside_metadata(&current) != outside_metadata(&next);
        if spec_changed {
            let rule = call
                .info()
                .write_rules
                .generation_at(call.state.kube_version);
            if let Some(old) = current
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                && rule.bumps(&current, &next)
            {
                meta_mut(&mut next).insert("generation".into(), Value::from(old + 1));
            }
        }
        check_object(call, &next, Some(&current), UpdateScope::Main, name)?;
        admission::validate_update(call, &scale_of(call, &next)?, &old_scale, name, dry_run)
            .await?;
        if !spec_changed
            && current.pointer("/metadata/managedFields") == next.pointer("/metadata/managedFields")
        {
            return scale_of(call, &current);
        }
        let stored = to_stored(call, &next).await?;
        if dry_run {
            return scale_of(call, &at_revision(next, kv.mod_revision));
        }
        match call
            .state
            .storage
            .update(&call.key(name), stored, kv.mod_revision)
            .await
        {
            Ok(kv) => return scale_of(call, &kv_object(call, &kv).await?),
            Err(UpdateError::Conflict { .. }) if precondition.is_none() => continue,
            Err(e) => return Err(ApiError::from_update(e, call.subject(name))),
        }
    }
    Err(ApiError::conflict_modified(call.subject(name)))
}
