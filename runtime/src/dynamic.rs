//! `DynamicObject`: an object of any kind, with typed `apiVersion`, `kind` and `metadata` and
//! every other top-level field kept as JSON.
//!
//! It is what the server and clients use where no Rust type exists (custom resources served from
//! a CRD, generic tooling). Decoding and re-encoding loses nothing: fields the type does not name
//! land in [`DynamicObject::data`] and are written back as they came.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::{ObjectMeta, TypeMeta};
use crate::wire::null_as_default;

/// An object of any kind.
///
/// `apiVersion` and `kind` are written first, then `metadata`, then the other fields in their
/// original order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DynamicObject {
    /// `apiVersion` and `kind`; either may be absent, e.g. in a list item.
    #[serde(flatten)]
    pub types: TypeMeta,
    /// The object's metadata; default when absent or `null`, as Go reads it.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ObjectMeta,
    /// Every other top-level field, e.g. `spec`, `status` or a ConfigMap's `data`.
    #[serde(flatten)]
    pub data: Map<String, Value>,
}

impl DynamicObject {
    /// An empty object of the given type, e.g. `("v1", "ConfigMap")`.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            types: TypeMeta::new(api_version, kind),
            ..Self::default()
        }
    }

    /// The same object with a name.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.metadata.name = Some(name.into());
        self
    }

    /// The same object with a namespace.
    pub fn with_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.metadata.namespace = Some(namespace.into());
        self
    }

    /// The same object with one more top-level field, e.g. `spec`.
    pub fn with_field(mut self, key: impl Into<String>, value: Value) -> Self {
        self.data.insert(key.into(), value);
        self
    }

    /// `apiVersion`, if set.
    pub fn api_version(&self) -> Option<&str> {
        self.types.api_version.as_deref()
    }

    /// `kind`, if set.
    pub fn kind(&self) -> Option<&str> {
        self.types.kind.as_deref()
    }

    /// `metadata.name`, if set.
    pub fn name(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }

    /// `metadata.namespace`, if set.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }

    /// A top-level field other than `apiVersion`, `kind` and `metadata`.
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.data.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-0",
                "generateName": "web-",
                "namespace": "default",
                "uid": "0b6f6c2e-1f6a-4b1e-9a59-3c1d2c8d6b11",
                "resourceVersion": "12345",
                "creationTimestamp": "2024-01-02T03:04:05Z",
                "labels": {"app": "web", "statefulset.kubernetes.io/pod-name": "web-0"},
                "annotations": {"kubectl.kubernetes.io/restartedAt": "2024-01-02T03:00:00Z"},
                "ownerReferences": [{
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "web",
                    "uid": "5f0c9a0e-7d1e-4a53-8f1e-2b6c1a9e0d22",
                    "controller": true,
                    "blockOwnerDeletion": true
                }],
                "managedFields": [{
                    "manager": "kube-controller-manager",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
                }]
            },
            "spec": {
                "containers": [{
                    "name": "nginx",
                    "image": "nginx:1.25",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}
                }],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "nodeName": "node-1",
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-01-02T03:04:10Z"}],
                "podIP": "10.0.0.7",
                "startTime": "2024-01-02T03:04:05Z",
                "qosClass": "Burstable"
            }
        })
    }

    #[test]
    fn full_pod_round_trips() {
        let obj: DynamicObject = serde_json::from_value(pod()).unwrap();
        assert_eq!(obj.api_version(), Some("v1"));
        assert_eq!(obj.kind(), Some("Pod"));
        assert_eq!(obj.name(), Some("web-0"));
        assert_eq!(obj.namespace(), Some("default"));
        assert_eq!(obj.metadata.owner_references[0].controller, Some(true));
        assert_eq!(obj.metadata.labels["app"], "web");
        assert_eq!(obj.field("status").unwrap()["phase"], "Running");
        // Only the untyped fields are in `data`.
        assert_eq!(obj.data.keys().collect::<Vec<_>>(), ["spec", "status"]);
        assert_eq!(serde_json::to_value(&obj).unwrap(), pod());
    }

    #[test]
    fn writes_type_then_metadata_then_the_rest() {
        let obj: DynamicObject = serde_json::from_str(
            r#"{"data":{"k":"v"},"metadata":{"name":"cm"},"kind":"ConfigMap","apiVersion":"v1","immutable":true}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&obj).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"},"data":{"k":"v"},"immutable":true}"#
        );
    }

    #[test]
    fn absent_or_null_parts_read_as_defaults() {
        for input in [json!({}), json!({"metadata": null})] {
            let obj: DynamicObject = serde_json::from_value(input.clone()).unwrap();
            assert_eq!(obj, DynamicObject::default(), "{input}");
        }
        assert_eq!(
            serde_json::to_value(DynamicObject::default()).unwrap(),
            json!({"metadata": {}})
        );
    }

    #[test]
    fn builders_set_what_they_name() {
        let obj = DynamicObject::new("example.com/v1", "Widget")
            .with_name("w")
            .with_namespace("ns")
            .with_field("spec", json!({"size": 3}));
        assert_eq!(
            serde_json::to_value(&obj).unwrap(),
            json!({
                "kind": "Widget",
                "apiVersion": "example.com/v1",
                "metadata": {"name": "w", "namespace": "ns"},
                "spec": {"size": 3}
            })
        );
    }

    #[test]
    fn non_object_input_is_an_error() {
        assert!(serde_json::from_str::<DynamicObject>("[1,2]").is_err());
        assert!(serde_json::from_str::<DynamicObject>(r#"{"metadata":{"name":5}}"#).is_err());
    }
}
