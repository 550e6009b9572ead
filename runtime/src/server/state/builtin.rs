//! The core `v1` `Namespace` kind the server needs even when the user registers no built-ins:
//! namespaced creates check their namespace exists and is not terminating, and `kubectl` expects
//! `default` to exist. A user's own `v1/namespaces` registration replaces this one.

use serde::{Deserialize, Serialize};

use crate::ResourceInfo;
use crate::meta::ObjectMeta;
use crate::type_tag::{ApiVersion, Kind};

/// The namespaces the server creates at start, as kube-apiserver does.
pub(crate) const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The finalizer the namespace lifecycle holds until a namespace's contents are gone.
pub(crate) const NAMESPACE_FINALIZER: &str = "kubernetes";

/// A minimal core `v1` Namespace: its spec finalizers and status phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, crate::Resource)]
#[resource(
    crate = "crate",
    group = "",
    version = "v1",
    kind = "Namespace",
    cluster
)]
#[resource(singular = "namespace", short_names = ["ns"], status)]
#[resource(printer_column(name = "Status", type = "string", json_path = ".status.phase"))]
#[resource(printer_column(name = "Age", type = "date", json_path = ".metadata.creationTimestamp"))]
pub(crate) struct Namespace {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<NamespaceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<NamespaceStatus>,
}

/// `spec` of a Namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct NamespaceSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    finalizers: Vec<String>,
}

/// `status` of a Namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct NamespaceStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phase: Option<String>,
    /// Kept as JSON: the server only carries conditions through.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<serde_json::Value>,
}

/// Whether the kind is the core Namespace, which has lifecycle rules of its own.
pub(crate) fn is_namespace_kind(info: &ResourceInfo) -> bool {
    info.gvk.group.is_empty() && info.plural == "namespaces"
}
