//! The `AdmissionReview` a webhook is sent and what its answer must be, as upstream's
//! `CreateAdmissionObjects` and `VerifyAdmissionResponse`
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/request/admissionreview.go`):
//! `admission.k8s.io/v1` or `v1beta1` (the first version of the webhook's
//! `admissionReviewVersions` the server speaks), answered in the same version with the
//! request's uid.

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Request;
use super::matching::subresource;
use crate::ResourceInfo;
use crate::meta::Status;
use crate::server::Call;
use crate::server::describe::discovery::subresource_kind;

/// The request half of a review, and its uid. `seen_as` is the resource a webhook matched
/// through when it is not the request's own (`matchPolicy: Equivalent`): the review's `kind`
/// and `resource` name it, its `requestKind` and `requestResource` what was requested.
pub(in crate::server::admission) fn request(
    call: &Call,
    request: &Request<'_>,
    version: &str,
    seen_as: Option<&ResourceInfo>,
) -> (String, Value) {
    let uid = uuid::Uuid::new_v4().to_string();
    let info = call.info();
    // A subresource is reviewed as the kind it takes (upstream's `scope.Kind`): a `scale` as
    // an `autoscaling/v1` Scale, a `token` as a TokenRequest, a CONNECT as its options'
    // kind (`PodExecOptions`, `PodProxyOptions`, ...).
    let sub = subresource(call);
    let kind_of = |info: &ResourceInfo| {
        let gvk = match sub {
            "" => None,
            sub => subresource_kind(info, &call.state, sub),
        }
        .unwrap_or_else(|| info.gvk.clone());
        json!({"group": gvk.group, "version": gvk.version, "kind": gvk.kind})
    };
    let resource_of = |info: &ResourceInfo| {
        json!({
            "group": info.gvk.group,
            "version": info.gvk.version,
            "resource": info.plural,
        })
    };
    let seen = seen_as.unwrap_or(info);
    let options_kind = match request.operation {
        super::Operation::Create => Some("CreateOptions"),
        super::Operation::Update => Some("UpdateOptions"),
        super::Operation::Delete => Some("DeleteOptions"),
        super::Operation::Connect => None,
    };
    let mut options = options_kind.map_or(
        Value::Null,
        |kind| json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"}),
    );
    if request.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    let mut body = json!({
        "uid": uid,
        "kind": kind_of(seen),
        "resource": resource_of(seen),
        "requestKind": kind_of(info),
        "requestResource": resource_of(info),
        "operation": request.operation.as_str(),
        "userInfo": &*call.user,
        "object": request.object.cloned().unwrap_or(Value::Null),
        "oldObject": request.old.cloned().unwrap_or(Value::Null),
        "dryRun": request.dry_run,
        "options": options,
    });
    if !sub.is_empty() {
        body["subResource"] = json!(sub);
        body["requestSubResource"] = json!(sub);
    }
    if !request.name.is_empty() {
        body["name"] = json!(request.name);
    }
    if let Some(ns) = call
        .target
        .namespace
        .as_deref()
        .filter(|_| info.is_namespaced())
    {
        body["namespace"] = json!(ns);
    }
    let review = json!({
        "apiVersion": format!("admission.k8s.io/{version}"),
        "kind": "AdmissionReview",
        "request": body,
    });
    (uid, review)
}

/// A webhook's verdict.
#[derive(Debug, Default)]
pub(super) struct Verdict {
    pub(super) allowed: bool,
    pub(super) status: Option<Status>,
    /// The JSON patch's bytes, decoded from base64; empty for none.
    pub(super) patch: Vec<u8>,
    pub(super) warnings: Vec<String>,
    /// The answer's `auditAnnotations`, each published as `<webhook>/<key>`.
    pub(super) audit_annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<Response>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    allowed: bool,
    #[serde(default)]
    status: Option<Status>,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    patch_type: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    audit_annotations: std::collections::BTreeMap<String, String>,
}

/// Reads a webhook's answer, with upstream's refusals of one that is not a review of the
/// version sent, names another uid, or carries a patch it may not (any patch from a
/// validating webhook; a patch without its type, or of another type than `JSONPatch`).
pub(super) fn verify(
    body: &[u8],
    uid: &str,
    version: &str,
    mutating: bool,
) -> Result<Verdict, String> {
    let review: Review = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let Some(response) = review.response else {
        return Err("webhook response was absent".to_owned());
    };
    if response.uid != uid {
        return Err(format!(
            "expected response.uid={uid:?}, got {:?}",
            response.uid
        ));
    }
    let expected = format!("admission.k8s.io/{version}");
    if review.api_version != expected || review.kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of {expected}, Kind=AdmissionReview, got {}, Kind={}",
            review.api_version, review.kind
        ));
    }
    let patch = match &response.patch {
        Some(text) if !text.is_empty() => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        _ => Vec::new(),
    };
    if mutating {
        if !patch.is_empty() && response.patch_type.is_none() {
            return Err("webhook returned response.patch but not response.patchType".to_owned());
        }
        if patch.is_empty() && response.patch_type.is_some() {
            return Err("webhook returned response.patchType but not response.patch".to_owned());
        }
        if let Some(t) = response.patch_type.as_deref()
            && t != "JSONPatch"
        {
            return Err(format!(
                "webhook returned invalid response.patchType of {t:?}"
            ));
        }
    } else {
        if !patch.is_empty() {
            return Err("validating webhook may not return response.patch".to_owned());
        }
        if response.patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".to_owned());
        }
    }
    Ok(Verdict {
        allowed: response.allowed,
        status: response.status,
        patch,
        warnings: response.warnings,
        audit_annotations: response.audit_annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::verify;

    #[test]
    fn webhook_answers_are_verified_as_upstreams() {
        let ok = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
            "response":{"uid":"u","allowed":true,"patchType":"JSONPatch",
            "patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d"}}"#;
        let verdict = verify(ok, "u", "v1", true).expect("valid answer");
        assert!(verdict.allowed);
        assert_eq!(verdict.patch, br#"[{"op":"add","path":"/a","value":1}]"#);
        assert_eq!(
            verify(ok, "other", "v1", true).unwrap_err(),
            r#"expected response.uid="other", got "u""#
        );
        assert_eq!(
            verify(ok, "u", "v1", false).unwrap_err(),
            "validating webhook may not return response.patch"
        );
        assert!(verify(ok, "u", "v1beta1", true).is_err());
        assert_eq!(
            verify(b"{}", "u", "v1", true).unwrap_err(),
            "webhook response was absent"
        );
        assert!(verify(b"not json", "u", "v1", true).is_err());
    }
}
