//! Custom resources converted by their CRD's conversion webhook (`spec.conversion.strategy:
//! Webhook`), as upstream's `webhookConverter` and the `crConverter` around it convert them
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go`,
//! `converter.go`): a `ConversionReview` (`apiextensions.k8s.io/v1`, or `v1beta1` when the
//! CRD's `conversionReviewVersions` names it first) POSTed over `http::webhook`, its answer
//! checked (the uid, `Success`, one object back, the desired version, the same kind, name,
//! namespace and uid), and of the converted object's `metadata` only the labels and
//! annotations taken (`restoreObjectMeta`).
//!
//! One object per review: upstream's storage decodes every stored object through the
//! version's codec one at a time (a list's items included: `appendListItem` in the etcd3
//! store), so its webhook sees one review per object read in another version; the
//! list-batching branch of `webhookConverter` serves lists converted whole, which the CRD
//! handler never does for stored objects.
//!
//! Failures answer as upstream's: the converter's error is no API status, so the client gets
//! `ErrorToAPIStatus`'s 500 with no reason and the error as the message (`conversion webhook
//! for <group>/<version>, Kind=<kind> failed: ...`). The call is bounded by upstream's fixed
//! 30 s (`setGlobalDefaults` in `util/webhook/authentication.go`) and by `http::webhook`'s cap
//! on the answer.
//!
//! `stored` calls this for every path that converts; imports `http` and the registry's
//! [`ConversionWebhook`].

use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::KubeVersion;
use crate::crd::ConversionWebhook;

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::http::webhook::{self, ClientConfig, ServiceReference};

/// Upstream's timeout of every call to a conversion webhook.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The group of `ConversionReview`.
const GROUP: &str = "apiextensions.k8s.io";

/// The `apiVersion` of `object`, `""` without one.
fn api_version_of(object: &Value) -> &str {
    object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// An object's group/version/kind as Go's `GroupVersionKind.String()` prints it.
fn gvk_text(object: &Value) -> String {
    let (group, version) = split(api_version_of(object));
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    format!("{group}/{version}, Kind={kind}")
}

/// An `apiVersion` as group and version.
fn split(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// `object` converted by `hook` to the `apiVersion` `to`. Objects already there come back as
/// they are, as do objects with nothing but `apiVersion` and `kind` (renamed), which upstream
/// never sends.
pub(crate) async fn convert(
    call: &Call,
    hook: &ConversionWebhook,
    mut object: Value,
    to: &str,
) -> Result<Value, ApiError> {
    check_versions(hook, api_version_of(&object), to).map_err(ApiError::unstatused)?;
    if api_version_of(&object) == to {
        return Ok(object);
    }
    if is_empty(&object) {
        if let Value::Object(map) = &mut object {
            map.insert("apiVersion".into(), Value::from(to));
        }
        return Ok(object);
    }
    let gvk = gvk_text(&object);
    let failed =
        |e: String| ApiError::unstatused(format!("conversion webhook for {gvk} failed: {e}"));
    let version = review_version(&hook.review_versions)
        .ok_or_else(|| ApiError::unstatused("no supported conversion review versions"))?;
    let uid = uuid::Uuid::new_v4().to_string();
    let review = request(version, &uid, to, std::slice::from_ref(&object));
    let body = serde_json::to_vec(&review).map_err(ApiError::internal)?;
    let target = webhook::target(call, &client_config(hook), TIMEOUT)
        .await
        .map_err(failed)?;
    let answer = webhook::post(&target, body, TIMEOUT)
        .await
        .map_err(failed)?;
    let converted = converted_objects(&answer, &uid, version).map_err(failed)?;
    checked(&object, converted, to, call.state.kube_version).map_err(ApiError::unstatused)
}

/// `crConverter`'s checks: both versions are the CRD's.
fn check_versions(hook: &ConversionWebhook, from: &str, to: &str) -> Result<(), String> {
    let valid = |api_version: &str| {
        let (group, version) = split(api_version);
        group == hook.group && hook.versions.iter().any(|v| v == version)
    };
    if !valid(to) {
        return Err(format!(
            "request to convert CR to an invalid group/version: {to}"
        ));
    }
    if !valid(from) {
        return Err(format!(
            "request to convert CR from an invalid group/version: {from}"
        ));
    }
    Ok(())
}

/// Whether the object has no field but `apiVersion` and `kind` (`isEmptyUnstructuredObject`).
fn is_empty(object: &Value) -> bool {
    object.as_object().is_some_and(|map| {
        map.len() == 2 && map.contains_key("apiVersion") && map.contains_key("kind")
    })
}

/// The CRD's client configuration in the shape `http::webhook` calls (the bundle as the
/// base64 text both kinds of webhook carry it in).
fn client_config(hook: &ConversionWebhook) -> ClientConfig {
    let config = &hook.client_config;
    ClientConfig {
        url: config.url.clone(),
        service: config.service.as_ref().map(|s| ServiceReference {
            namespace: s.namespace.clone(),
            name: s.name.clone(),
            path: s.path.clone(),
            // Validation keeps the port within 1-65535; 443 is v1's default.
            port: Some(s.port.and_then(|p| u16::try_from(p).ok()).unwrap_or(443)),
        }),
        ca_bundle: config
            .ca_bundle
            .as_ref()
            .map(|b| base64::engine::general_purpose::STANDARD.encode(b.as_slice())),
    }
}

/// The first `ConversionReview` version of `versions` the server speaks
/// (`createConversionReviewObjects`).
fn review_version(versions: &[String]) -> Option<&'static str> {
    versions.iter().find_map(|v| match v.as_str() {
        "v1" => Some("v1"),
        "v1beta1" => Some("v1beta1"),
        _ => None,
    })
}

/// The review sent: `objects` to convert to `desired`.
fn request(version: &str, uid: &str, desired: &str, objects: &[Value]) -> Value {
    json!({
        "kind": "ConversionReview",
        "apiVersion": format!("{GROUP}/{version}"),
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired,
            "objects": objects,
        },
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    })
}

/// A review's answer, as much of it as the server reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    converted_objects: Option<Vec<Value>>,
    #[serde(default)]
    result: Outcome,
}

#[derive(Deserialize, Default)]
struct Outcome {
    #[serde(default)]
    status: String,
    #[serde(default)]
    message: String,
}

/// The converted objects of a successful answer (`getConvertedObjectsFromResponse`); the
/// error is upstream's text. A v1beta1 answer is not checked for its kind and uid, as
/// upstream does not check them for compatibility.
fn converted_objects(answer: &[u8], uid: &str, version: &str) -> Result<Vec<Value>, String> {
    let answer: Answer = serde_json::from_slice(answer)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    if version == "v1" {
        let expected = format!("{GROUP}/v1");
        if answer.api_version != expected || answer.kind != "ConversionReview" {
            let (group, version) = split(&answer.api_version);
            return Err(format!(
                "expected webhook response of {expected}, Kind=ConversionReview, got {group}/{version}, Kind={}",
                answer.kind
            ));
        }
    }
    let response = answer.response.ok_or("no response provided")?;
    if version == "v1" && response.uid != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            response.uid
        ));
    }
    if response.result.status != "Success" {
        if !response.result.message.is_empty() {
            return Err(response.result.message);
        }
        return Err(format!(
            "response.result.status was '{}', not 'Success'",
            response.result.status
        ));
    }
    Ok(response.converted_objects.unwrap_or_default())
}

/// The one object converted from `original` to `desired`, checked and with `original`'s
/// metadata but the converted labels and annotations; the error is upstream's whole text.
fn checked(
    original: &Value,
    converted: Vec<Value>,
    desired: &str,
    release: KubeVersion,
) -> Result<Value, String> {
    let gvk = gvk_text(original);
    if converted.len() != 1 {
        return Err(format!(
            "conversion webhook for {gvk} returned {} objects, expected 1",
            converted.len()
        ));
    }
    let Some(mut converted) = converted.into_iter().next() else {
        return Err(format!(
            "conversion webhook for {gvk} failed, no objects returned"
        ));
    };
    // Decoding the raw object: a JSON object with a kind (`Object 'Kind' is missing`).
    let kind = |object: &Value| {
        object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    match &converted {
        Value::Object(_) if !kind(&converted).is_empty() => {}
        Value::Object(_) => return Err(format!("Object 'Kind' is missing in '{converted}'")),
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_json_type(other)
            ));
        }
    }
    let got = api_version_of(&converted);
    let gv = |api_version: &str| {
        let (group, version) = split(api_version);
        if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        }
    };
    if gv(got) != gv(desired) {
        return Err(format!(
            "conversion webhook for {gvk} returned invalid object at index 0: invalid groupVersion (expected {}, received {})",
            gv(desired),
            gv(got)
        ));
    }
    if kind(&converted) != kind(original) {
        return Err(format!(
            "conversion webhook for {gvk} returned invalid object at index 0: invalid kind (expected {}, received {})",
            kind(original),
            kind(&converted)
        ));
    }
    same_identity(original, &converted)
        .map_err(|e| format!("conversion webhook for {gvk} returned invalid object: {e}"))?;
    restore_object_meta(original, &mut converted, release)
        .map_err(|e| format!("conversion webhook for {gvk} returned invalid metadata: {e}"))?;
    Ok(converted)
}

/// `validateConvertedObject`: the kind, name, namespace and uid are unchanged.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    let text = |object: &Value, pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    for (pointer, what) in [
        ("/kind", "kind"),
        ("/metadata/name", "name"),
        ("/metadata/namespace", "namespace"),
        ("/metadata/uid", "UID"),
    ] {
        let (e, a) = (text(original, pointer), text(converted, pointer));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

/// Go's `%T` of a value decoded from JSON into `interface{}` (integers are `int64` in
/// unstructured objects).
fn go_json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `restoreObjectMeta`: `converted` gets `original`'s metadata, with the labels and
/// annotations the webhook answered (which must be string maps, and valid when changed).
fn restore_object_meta(
    original: &Value,
    converted: &mut Value,
    release: KubeVersion,
) -> Result<(), String> {
    let Value::Object(object) = converted else {
        return Ok(());
    };
    let answered = match object.get("metadata") {
        None => return Err("missing metadata in converted object".to_owned()),
        Some(Value::Object(meta)) => meta.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_json_type(other)
            ));
        }
    };
    let mut restored = match original.get("metadata") {
        Some(Value::Object(meta)) => meta.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let given = match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
                continue;
            }
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_json_type(other)
                ));
            }
        };
        let before = restored.get(field).and_then(Value::as_object);
        let mut changed = before.map_or(0, Map::len) != given.len();
        for (key, value) in given {
            if !value.is_string() {
                return Err(format!(
                    "metadata.{field}[{key}] must be a string, but is {} in converted object",
                    go_json_type(value)
                ));
            }
            changed |= before.and_then(|b| b.get(key)) != Some(value);
        }
        if changed {
            meta_errors(field, given, release)?;
        }
        restored.insert(field.to_owned(), Value::Object(given.clone()));
    }
    object.insert("metadata".to_owned(), Value::Object(restored));
    Ok(())
}

/// Changed labels or annotations checked as upstream's `ValidateLabels` and
/// `ValidateAnnotations` (whose errors here name `metadata.annotation`, upstream's path),
/// joined as an aggregate error prints.
fn meta_errors(field: &str, map: &Map<String, Value>, release: KubeVersion) -> Result<(), String> {
    let mut errors = crate::validation::Errors::new(release);
    crate::validation::check_metadata(&json!({"metadata": {field: map}}), &mut errors);
    let texts: Vec<String> = errors
        .into_causes()
        .into_iter()
        .map(|cause| {
            let at = cause.field.unwrap_or_default();
            let at = if field == "annotations" {
                at.replacen("metadata.annotations", "metadata.annotation", 1)
            } else {
                at
            };
            format!("{at}: {}", cause.message.unwrap_or_default())
        })
        .collect();
    match texts.len() {
        0 => Ok(()),
        1 => Err(texts.concat()),
        _ => Err(format!("[{}]", texts.join(", "))),
    }
}

#[cfg(test)]
mod tests;
