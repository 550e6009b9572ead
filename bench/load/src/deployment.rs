//! The Deployment the semantics benchmarks write: as people write them, two containers, ports,
//! a probe, resources.

use serde_json::Value;

/// The Deployment `name`, in namespace `namespace` when given.
pub(crate) fn deployment(name: &str, namespace: Option<&str>) -> Value {
    let mut object = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": "web", "tier": "front"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "front"}},
                "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.25",
                     "ports": [{"name": "http", "containerPort": 80}],
                     "readinessProbe": {"httpGet": {"path": "/healthz", "port": 80}},
                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                    {"name": "sidecar", "image": "busybox:1.36",
                     "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
                ]}
            }
        }
    });
    if let (Some(namespace), Some(meta)) = (namespace, object["metadata"].as_object_mut()) {
        meta.insert("namespace".into(), Value::from(namespace));
    }
    object
}
