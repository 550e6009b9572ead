//! The compiled kinds several server suites serve, and the paths they are served at. A kind
//! only one suite needs stays in that suite.

use std::collections::BTreeMap;

use kapi::merge::{TypeInfo, field};
use kapi::meta::ObjectMeta;
use kapi::type_tag::{ApiVersion, Kind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The core ConfigMap, its data as a map.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "ConfigMap", namespaced)]
pub(crate) struct ConfigMap {
    #[serde(rename = "apiVersion")]
    pub(crate) api_version: ApiVersion<Self>,
    pub(crate) kind: Kind<Self>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) data: Option<BTreeMap<String, String>>,
}

/// Widgets in the `default` namespace.
pub(crate) const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A namespaced `example.com/v1` Widget with a free-form spec and no subresources.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub(crate) struct Widget {
    #[serde(rename = "apiVersion")]
    pub(crate) api_version: ApiVersion<Self>,
    pub(crate) kind: Kind<Self>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec: Option<Value>,
}

/// The same Widget kind with a typed spec (so unknown fields are found), the `status` and
/// `scale` subresources (the scale's selector read from `.status.selector`), a printer column
/// and a selectable field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status
)]
#[resource(scale(
    spec_replicas_path = ".spec.replicas",
    status_replicas_path = ".status.replicas",
    label_selector_path = ".status.selector"
))]
#[resource(printer_column(name = "Replicas", type = "integer", json_path = ".spec.replicas"))]
#[resource(selectable_fields = [".spec.color"])]
pub(crate) struct ScaledWidget {
    #[serde(rename = "apiVersion")]
    pub(crate) api_version: ApiVersion<Self>,
    pub(crate) kind: Kind<Self>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec: Option<ScaledWidgetSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<ScaledWidgetStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScaledWidgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) color: Option<String>,
    /// A list without merge metadata: patches replace it whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tags: Vec<String>,
    /// A list of objects whose own fields are checked for unknown ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) parts: Vec<Part>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Part {
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScaledWidgetStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ready: Option<bool>,
}

/// Cluster-scoped gadgets.
pub(crate) const GADGETS: &str = "/apis/example.com/v1/gadgets";

/// A cluster-scoped kind that cannot be patched or deleted as a collection.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1", kind = "Gadget", cluster)]
#[resource(verbs = ["get", "list", "watch", "create", "update", "delete"])]
pub(crate) struct Gadget {
    #[serde(rename = "apiVersion")]
    pub(crate) api_version: ApiVersion<Self>,
    pub(crate) kind: Kind<Self>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<i64>,
}

/// Cluster-scoped gizmos.
pub(crate) const GIZMOS: &str = "/apis/example.com/v1beta1/gizmos";

/// A cluster-scoped beta kind with a lifecycle: introduced in 1.10, deprecated in 1.20,
/// removed in 1.30.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1beta1", kind = "Gizmo", cluster)]
#[resource(introduced = "1.10", deprecated = "1.20", removed = "1.30")]
pub(crate) struct Gizmo {
    #[serde(rename = "apiVersion")]
    pub(crate) api_version: ApiVersion<Self>,
    pub(crate) kind: Kind<Self>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) size: Option<i64>,
}

/// Deployments in the `default` namespace.
pub(crate) const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

static CONTAINER: TypeInfo = TypeInfo::new(&[]);
static POD_SPEC: TypeInfo = TypeInfo::new(&[field("containers")
    .strategy("merge")
    .merge_key("name")
    .items(&CONTAINER)]);
static TEMPLATE: TypeInfo = TypeInfo::new(&[field("spec").of(&POD_SPEC)]);
static DEPLOYMENT_SPEC: TypeInfo = TypeInfo::new(&[
    field("template").of(&TEMPLATE),
    field("selector").atomic_map(),
]);
static DEPLOYMENT: TypeInfo = TypeInfo::new(&[field("spec").of(&DEPLOYMENT_SPEC)]);

/// An apps/v1 Deployment with a free-form spec and status: strategic merge metadata for its
/// pod template's containers (merged by name) and its atomic selector, and the `status` and
/// `scale` subresources.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    group = "apps",
    version = "v1",
    kind = "Deployment",
    namespaced,
    status,
    merge = DEPLOYMENT
)]
#[resource(scale(
    spec_replicas_path = ".spec.replicas",
    status_replicas_path = ".status.replicas"
))]
pub(crate) struct Deployment {
    #[serde(rename = "apiVersion")]
    pub(crate) api_version: ApiVersion<Self>,
    pub(crate) kind: Kind<Self>,
    #[serde(default)]
    pub(crate) metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) spec: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<Value>,
}
