//! One audit event as upstream writes it: `audit.k8s.io/v1` `Event`, a JSON line per stage of a
//! request (`staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::server::audit::policy::{Level, Stage};
use crate::server::auth::attributes::Attributes;
use crate::server::auth::user::User;

/// What an event says of the object a resource request is about.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    subresource: String,
}

impl ObjectRef {
    /// The name and namespace the request's body gives, where the URL gives none.
    pub(crate) fn fill_from(&mut self, object: &Value) {
        let text = |field: &str| {
            object
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        if self.name.is_empty() {
            self.name = text("name");
        }
        if self.namespace.is_empty() {
            self.namespace = text("namespace");
        }
    }

    /// The object of a resource request; none for a non-resource one.
    pub(crate) fn of(request: &Attributes) -> Option<Self> {
        request.resource_request.then(|| Self {
            resource: request.resource.clone(),
            namespace: request.namespace.clone(),
            name: request.name.clone(),
            api_group: request.api_group.clone(),
            api_version: request.api_version.clone(),
            subresource: request.subresource.clone(),
        })
    }
}

/// An audit event.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Event {
    pub(crate) kind: &'static str,
    pub(crate) api_version: &'static str,
    pub(crate) level: Level,
    #[serde(rename = "auditID")]
    pub(crate) audit_id: String,
    pub(crate) stage: Stage,
    #[serde(rename = "requestURI")]
    pub(crate) request_uri: String,
    pub(crate) verb: String,
    pub(crate) user: User,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) impersonated_user: Option<User>,
    #[serde(rename = "sourceIPs")]
    pub(crate) source_ips: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) user_agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) object_ref: Option<ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_object: Option<Value>,
    pub(crate) request_received_timestamp: String,
    pub(crate) stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) annotations: BTreeMap<String, String>,
}

/// Now as upstream's `MicroTime` writes it: RFC 3339 in UTC with microseconds.
pub(crate) fn micro_time() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// The `responseStatus` of an answer: the code, and for a failure the Status the body holds.
pub(crate) fn response_status(code: u16, body: Option<&Value>) -> Value {
    let mut status = serde_json::json!({"metadata": {}, "code": code});
    if let Some(Value::Object(failure)) = body
        && failure.get("kind").and_then(Value::as_str) == Some("Status")
    {
        for field in ["status", "message", "reason", "details"] {
            if let Some(value) = failure.get(field) {
                status[field] = value.clone();
            }
        }
    }
    status
}
