//! PATCH: the patch types kube-apiserver accepts for a kind, chosen by `Content-Type`, and
//! their application to the stored object through the same pipeline as PUT.
//!
//! - `application/json-patch+json` ([`json_patch`], RFC 6902), `application/merge-patch+json`
//!   ([`merge_patch`], RFC 7386) for every kind.
//! - `application/strategic-merge-patch+json` ([`strategic`]) for kinds that support it:
//!   upstream serves it for built-in APIs only and answers 415 for custom resources. Here a kind
//!   supports it when it has merge metadata and either lives in a built-in API group (core,
//!   an unqualified group such as `apps`, or `*.k8s.io`) or declares a patch strategy outside
//!   `metadata` (its author gave it strategic metadata on purpose). Kinds from
//!   `#[derive(CustomResource)]` carry only generated metadata in their own groups, so they
//!   answer 415 like CRDs.
//! - `application/apply-patch+yaml` ([`apply`], server-side apply) for every kind. `force` on
//!   any other patch is upstream's 422. Other patches record an `Update` in the object's
//!   managed fields (`managed_fields`) for their `fieldManager` or User-Agent.
//!
//! The patch applies to the object as served (with its `resourceVersion`); a patched object
//! whose `resourceVersion` differs from the stored one is a 409, otherwise a lost race re-reads
//! and re-applies. Errors follow upstream: an undecodable patch is 400, a JSON patch that fails
//! to apply is 422 `Invalid` with upstream's generic message (our explanation in the cause), a
//! patched object the kind's type rejects is 422 on field `patch`.
//!
//! `fieldValidation` looks at the patch document (its duplicate keys; for a JSON patch also
//! operation fields upstream's operation type lacks) and at the patched object's unknown
//! fields, in that order. `Strict` refuses them with upstream's 422 on field `patch` (the value
//! shown is the patched object's JSON, or for a strategic merge patch the patch as Go prints
//! it); `Warn` sends them as warnings. A dry run applies the patch and answers without writing.

pub(crate) mod apply;
pub(crate) mod json_patch;
pub(crate) mod merge_patch;
pub(crate) mod strategic;

use std::sync::Mutex;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use crate::merge::TypeInfo;
use crate::meta::{PatchOptions, Status, StatusCause, StatusDetails, StatusReason};
use crate::registry::RegisteredKind;

use crate::server::Call;
use crate::server::handlers::managed_fields::{self, Writer};
use crate::server::handlers::object;
use crate::server::handlers::object::UpdateScope;
use crate::server::handlers::request::write_request;
use crate::server::handlers::scale;
use crate::server::handlers::update;
use crate::server::http::dry_run::WriteOptions;
use crate::server::http::error::ApiError;
use crate::server::http::field_validation::{self, Directive};
use crate::server::http::negotiate::{self, Output};
use crate::server::objects::render;

/// `Content-Type` of a JSON patch.
pub(crate) const JSON_PATCH: &str = "application/json-patch+json";
/// `Content-Type` of a JSON merge patch.
pub(crate) const MERGE_PATCH: &str = "application/merge-patch+json";
/// `Content-Type` of a strategic merge patch.
pub(crate) const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// A patch type we apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// RFC 6902.
    Json,
    /// RFC 7386.
    Merge,
    /// Kubernetes strategic merge patch.
    Strategic,
    /// Server-side apply.
    Apply,
}

/// Whether strategic merge patch is served for the kind (see the module docs).
pub(crate) fn supports_strategic(kind: &RegisteredKind) -> bool {
    let Some(root) = kind.merge else {
        return false;
    };
    let group: &str = &kind.info.gvk.group;
    let builtin = group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io");
    builtin
        || root
            .fields
            .iter()
            .filter(|f| f.name != "metadata")
            .any(|f| declares_strategy(f, 0))
}

/// Whether a field or anything below it names a patch strategy; depth-capped because merge
/// metadata may be recursive.
fn declares_strategy(field: &crate::merge::FieldInfo, depth: usize) -> bool {
    if field.patch_strategy.is_some() || field.patch_merge_key.is_some() {
        return true;
    }
    depth < 16
        && field
            .ty
            .is_some_and(|t| t.fields.iter().any(|f| declares_strategy(f, depth + 1)))
}

/// The patch types served for the kind, in upstream's order, as a 415 lists them; with
/// `cbor` (`CBORServingAndStorage` on) server-side apply in CBOR last, as upstream appends it.
pub(crate) fn accepted(kind: &RegisteredKind, cbor: bool) -> Vec<&'static str> {
    let mut types = vec![JSON_PATCH, MERGE_PATCH];
    if supports_strategic(kind) {
        types.push(STRATEGIC_MERGE_PATCH);
    }
    types.push(apply::APPLY_PATCH);
    if cbor {
        types.push(crate::server::http::cbor::APPLY_PATCH);
    }
    types
}

/// The patch type named by the request's `Content-Type`, or 415 listing the accepted ones.
fn patch_type(call: &Call) -> Result<PatchType, ApiError> {
    let kind = &call.target.kind;
    let essence = call
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let found = match essence.as_str() {
        JSON_PATCH => Some(PatchType::Json),
        MERGE_PATCH => Some(PatchType::Merge),
        STRATEGIC_MERGE_PATCH if supports_strategic(kind) => Some(PatchType::Strategic),
        apply::APPLY_PATCH => Some(PatchType::Apply),
        _ => None,
    };
    found.ok_or_else(|| ApiError::unsupported_media_type(&accepted(kind, call.state.cbor())))
}

/// A decoded patch, ready to apply to any version of the object.
#[derive(Debug, Clone)]
enum Patch {
    Json(Vec<json_patch::Operation>),
    Merge(Value),
    Strategic(Value, &'static TypeInfo),
}

/// An empty struct: strategic merge over a kind without metadata of its own (`Scale`).
static PLAIN: TypeInfo = TypeInfo::new(&[]);

fn decode(
    patch_type: PatchType,
    body: &[u8],
    root: Option<&'static TypeInfo>,
) -> Result<Patch, ApiError> {
    let json = |body: &[u8]| {
        serde_json::from_slice::<Value>(body).map_err(|e| ApiError::bad_request(e.to_string()))
    };
    match patch_type {
        PatchType::Json => json_patch::parse(body).map(Patch::Json).map_err(json_error),
        PatchType::Merge => match serde_json::from_slice::<Value>(body) {
            // Upstream's merge patch library refuses these with one message.
            Ok(Value::Null) | Err(_) => Err(ApiError::bad_request("Invalid JSON Patch")),
            Ok(value) => Ok(Patch::Merge(value)),
        },
        PatchType::Strategic => {
            let value = json(body)?;
            if !value.is_object() {
                return Err(ApiError::bad_request("invalid JSON document"));
            }
            Ok(Patch::Strategic(value, root.unwrap_or(&PLAIN)))
        }
        // Applies take their own path (`apply`); this is never reached.
        PatchType::Apply => apply::decode_config(body).map(Patch::Merge),
    }
}

/// Upstream's 422 for a JSON patch that does not apply: a generic message; the cause says why.
fn unprocessable(detail: &str) -> ApiError {
    let mut status = Status::failure(
        StatusReason::Invalid,
        "the server rejected our request due to an error in our request",
        None,
    );
    status.code = Some(422);
    status.details = Some(StatusDetails {
        causes: vec![StatusCause {
            message: Some(detail.to_owned()),
            ..StatusCause::default()
        }],
        ..StatusDetails::default()
    });
    ApiError::from_status(status)
}

fn json_error(error: json_patch::JsonPatchError) -> ApiError {
    match error {
        json_patch::JsonPatchError::Malformed(m) => ApiError::bad_request(m),
        e @ json_patch::JsonPatchError::TooManyOperations(_) => {
            ApiError::from_status(Status::request_entity_too_large(&e.to_string()))
        }
        json_patch::JsonPatchError::Apply(m) => unprocessable(&m),
    }
}

fn smp_error(error: strategic::SmpError) -> ApiError {
    match error {
        strategic::SmpError::BadRequest(m) => ApiError::bad_request(m),
        strategic::SmpError::Invalid(m) => unprocessable(&m),
        strategic::SmpError::Internal(m) => ApiError::internal(m),
    }
}

impl Patch {
    fn apply(&self, current: &Value) -> Result<Value, ApiError> {
        match self {
            Patch::Json(ops) => {
                let mut doc = current.clone();
                json_patch::apply(&mut doc, ops).map_err(json_error)?;
                Ok(doc)
            }
            Patch::Merge(patch) => {
                let mut doc = current.clone();
                merge_patch::merge(&mut doc, patch);
                Ok(doc)
            }
            Patch::Strategic(patch, root) => {
                strategic::apply(current, patch, root).map_err(smp_error)
            }
        }
    }
}

/// 422 on field `patch` for a patched object the kind cannot hold, as upstream.
fn rejected(patched: &Value, reason: &str) -> ApiError {
    let text = serde_json::to_string(patched).unwrap_or_default();
    ApiError::invalid(
        "",
        "",
        "",
        vec![StatusCause::invalid("patch", &Value::from(text), reason)],
    )
}

impl Patch {
    /// How upstream shows this patch in a strict 422: a JSON or merge patch by the patched
    /// object's JSON, a strategic merge patch by the patch as Go prints its map.
    fn shown(&self, patched: &Value) -> Value {
        match self {
            Patch::Strategic(patch, _) => Value::from(field_validation::go_print(patch)),
            Patch::Json(_) | Patch::Merge(_) => {
                Value::from(serde_json::to_string(patched).unwrap_or_default())
            }
        }
    }
}

/// What `fieldValidation` found in one application of a patch.
struct Checked {
    decoded: Value,
    problems: Vec<String>,
}

/// Turns a patched object into the incoming object of an update. Under `Warn` and `Strict`
/// the patch's own problems (`patch_problems`) and the patched object's unknown fields are
/// collected; `Strict` refuses them with upstream's 422 on field `patch`.
fn accept(
    call: &Call,
    name: &str,
    patch: &Patch,
    mut patched: Value,
    validation: Directive,
    patch_problems: &[String],
) -> Result<Checked, ApiError> {
    if !patched.is_object() {
        return Err(rejected(&patched, "the patched document is not an object"));
    }
    object::check_type(call.info(), &mut patched)?;
    let codec = &*call.target.kind.codec;
    let mut decoded = codec(patched.clone()).map_err(|e| rejected(&patched, &e.to_string()))?;
    let problems = if validation == Directive::Ignore {
        Vec::new()
    } else {
        let unknown = field_validation::unknown_fields(codec, &patched, &decoded);
        field_validation::with_unknown(patch_problems.to_vec(), &unknown)
    };
    if validation == Directive::Strict && !problems.is_empty() {
        return Err(strict_rejected(
            patch.shown(&patched),
            &field_validation::strict_error(&problems),
        ));
    }
    object::check_identity(call, name, &decoded)?;
    // After the unknown-field check, which compares the codec's output with the patched body.
    object::fill_defaults(call, &mut decoded);
    Ok(Checked { decoded, problems })
}

/// Upstream's 422 for a patch its strict decoding refused: `Invalid value` on field `patch`.
fn strict_rejected(shown: Value, message: &str) -> ApiError {
    ApiError::invalid(
        "",
        "",
        "",
        vec![StatusCause::invalid("patch", &shown, message)],
    )
}

/// The problems of the patch document itself, under `Warn` and `Strict`.
fn patch_problems(patch_type: PatchType, body: &[u8], validation: Directive) -> Vec<String> {
    if validation == Directive::Ignore {
        return Vec::new();
    }
    field_validation::patch_problems(body, patch_type == PatchType::Json)
}

/// `force` belongs to apply: upstream's 422 when another patch carries it.
fn check_force(call: &Call, patch_type: PatchType) -> Result<(), ApiError> {
    if patch_type == PatchType::Apply {
        return Ok(());
    }
    let options: crate::meta::PatchOptions = call.query()?;
    if options.force.is_some() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![StatusCause::forbidden(
                "force",
                "may not be specified for non-apply patch",
            )],
        ));
    }
    Ok(())
}

/// Serves a PATCH of the object or its `/status`: the patched object (201 when an apply
/// created it), rendered as asked.
pub(crate) async fn serve(
    call: &Call,
    name: &str,
    scope: UpdateScope,
    body: Body,
    output: Output,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let patch_type = patch_type(call)?;
    let (body, write) = write_request::<PatchOptions>(call, body).await?;
    let (code, object) = patch(call, name, patch_type, &body, scope, write, warnings).await?;
    render::reply(call, output, code, object)
}

/// Serves a PATCH of `/scale`: the Scale after the write.
pub(crate) async fn serve_scale(
    call: &Call,
    name: &str,
    body: Body,
    output: Output,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let patch_type = patch_type(call)?;
    let (body, write) = write_request::<PatchOptions>(call, body).await?;
    let scale = patch_scale(call, name, patch_type, &body, write, warnings).await?;
    Ok(negotiate::encode(output.format, StatusCode::OK, &scale))
}

/// PATCH of the object (`scope` Main) or its `/status`; 404 when it does not exist, except
/// that an apply creates it (201). `fieldValidation` warnings go to `warnings`.
async fn patch(
    call: &Call,
    name: &str,
    patch_type: PatchType,
    body: &[u8],
    scope: UpdateScope,
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<(StatusCode, Value), ApiError> {
    check_force(call, patch_type)?;
    if patch_type == PatchType::Apply {
        return apply::apply(call, name, body, scope, write, warnings).await;
    }
    let writer = Writer {
        manager: managed_fields::manager_of(call, "PatchOptions")?,
        subresource: scope.subresource().to_owned(),
    };
    let patch = decode(patch_type, body, call.target.kind.merge)?;
    let own = patch_problems(patch_type, body, write.validation);
    // A lost race applies the patch again; the warnings of the last application count.
    let found = Mutex::new(Vec::new());
    let object = update::update_with(call, name, scope, write.dry_run, Some(&writer), |current| {
        let checked = accept(
            call,
            name,
            &patch,
            patch.apply(current)?,
            write.validation,
            &own,
        )?;
        if let Ok(mut found) = found.lock() {
            *found = checked.problems;
        }
        Ok(checked.decoded)
    })
    .await?;
    warnings.extend(found.into_inner().unwrap_or_else(|e| e.into_inner()));
    Ok((StatusCode::OK, object))
}

/// PATCH of `/scale`: the patch applies to the `Scale` as served, then updates the replicas.
async fn patch_scale(
    call: &Call,
    name: &str,
    patch_type: PatchType,
    body: &[u8],
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<Value, ApiError> {
    check_force(call, patch_type)?;
    if patch_type == PatchType::Apply {
        return apply::apply_scale(call, name, body, write).await;
    }
    let patch = decode(patch_type, body, None)?;
    let own = patch_problems(patch_type, body, write.validation);
    let current = object::get(call, name, None).await?;
    let scale = scale::scale_of(call, &current)?;
    let mut patched = patch.apply(&scale)?;
    if write.validation != Directive::Ignore {
        let unknown = scale::scale_unknown_fields(&patched);
        let problems = field_validation::with_unknown(own, &unknown);
        if write.validation == Directive::Strict && !problems.is_empty() {
            return Err(strict_rejected(
                patch.shown(&patched),
                &field_validation::strict_error(&problems),
            ));
        }
        warnings.extend(problems);
    }
    // An unchanged resourceVersion is the one just read, not a precondition the client set.
    let read_rv = scale.pointer("/metadata/resourceVersion").cloned();
    if patched.pointer("/metadata/resourceVersion").cloned() == read_rv
        && let Some(Value::Object(meta)) = patched.get_mut("metadata")
    {
        meta.remove("resourceVersion");
    }
    let body = serde_json::to_vec(&patched).map_err(ApiError::internal)?;
    let mut json_call = call.clone();
    json_call.headers.remove(header::CONTENT_TYPE);
    let write = WriteOptions {
        validation: Directive::Ignore,
        ..write
    };
    scale::update_scale(&json_call, name, &body, write, &mut Vec::new()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Map, json};

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,4}".prop_map(Value::from),
            prop::collection::vec("[a-z]{1,3}", 0..3).prop_map(|v| json!(v)),
        ]
    }

    fn document() -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::btree_map("[a-d]", leaf(), 0..5).prop_map(|m| m.into_iter().collect())
    }

    proptest! {
        /// A merge patch of top-level members and the JSON patch of `add` and `remove`
        /// operations that says the same thing reach the same document.
        #[test]
        fn merge_and_json_patches_agree(
            doc in document(),
            changes in prop::collection::btree_map("[a-f]", prop::option::of(leaf()), 0..5),
        ) {
            let mut merge = Map::new();
            let mut ops = Vec::new();
            for (key, change) in &changes {
                match change {
                    Some(value) => {
                        merge.insert(key.clone(), value.clone());
                        ops.push(json!({"op": "add", "path": format!("/{key}"), "value": value}));
                    }
                    None => {
                        merge.insert(key.clone(), Value::Null);
                        if doc.contains_key(key) {
                            ops.push(json!({"op": "remove", "path": format!("/{key}")}));
                        }
                    }
                }
            }
            let current = Value::Object(doc);
            let by_merge = Patch::Merge(Value::Object(merge)).apply(&current).unwrap();
            let body = serde_json::to_vec(&ops).unwrap();
            let by_json = decode(PatchType::Json, &body, None).unwrap().apply(&current).unwrap();
            prop_assert_eq!(by_merge, by_json);
        }
    }

    #[test]
    fn apply_configurations_are_yaml_or_json() {
        for body in ["a: 1\nb: [x]\n", r#"{"a": 1, "b": ["x"]}"#] {
            assert_eq!(
                apply::decode_config(body.as_bytes()).unwrap(),
                json!({"a": 1, "b": ["x"]})
            );
        }
        assert_eq!(apply::decode_config(b"").unwrap(), json!({}));
        for bad in ["[1]", "a: [", "3"] {
            assert_eq!(
                apply::decode_config(bad.as_bytes()).unwrap_err().code(),
                400,
                "{bad}"
            );
        }
    }
}
