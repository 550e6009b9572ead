//! The Widget the CEL benchmarks write: a CRD whose spec carries ten `x-kubernetes-validations`
//! rules of the kinds real CRDs use (bounds, sizes, regexes, comprehensions over lists, optional
//! fields, a URL check), or none, and an object that passes every rule.

use bytes::Bytes;
use serde_json::{Value, json};

/// The ten rules, on the spec.
pub(crate) const RULES: [(&str, &str); 10] = [
    (
        "self.replicas >= 0 && self.replicas <= 1000",
        "replicas out of range",
    ),
    ("self.name.size() <= 63", "name too long"),
    (
        "self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
        "name is not a DNS label",
    ),
    ("self.tags.all(t, t.size() < 32)", "tag too long"),
    (
        "!has(self.mode) || self.mode in ['Fast', 'Safe']",
        "unknown mode",
    ),
    (
        "self.ports.all(p, p.port > 0 && p.port < 65536)",
        "port out of range",
    ),
    (
        "self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",
        "port names repeat",
    ),
    (
        "!has(self.minReplicas) || self.minReplicas <= self.replicas",
        "minReplicas above replicas",
    ),
    ("!self.tags.exists(t, t == 'forbidden')", "forbidden tag"),
    (
        "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'",
        "endpoint must be https",
    ),
];

/// The CRD, with the rules or without.
pub(crate) fn crd(rules: bool) -> Value {
    let validations: Vec<Value> = if rules {
        RULES
            .iter()
            .map(|(rule, message)| json!({"rule": rule, "message": message}))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.bench.kapi.dev"},
        "spec": {
            "group": "bench.kapi.dev",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {
                        "type": "object",
                        "required": ["replicas", "name", "tags", "ports", "endpoint"],
                        "x-kubernetes-validations": validations,
                        "properties": {
                            "replicas": {"type": "integer"},
                            "minReplicas": {"type": "integer"},
                            "name": {"type": "string", "maxLength": 253},
                            "mode": {"type": "string", "maxLength": 16},
                            "endpoint": {"type": "string", "maxLength": 2048},
                            "tags": {"type": "array", "maxItems": 16,
                                "items": {"type": "string", "maxLength": 64}},
                            "ports": {"type": "array", "maxItems": 16, "items": {
                                "type": "object",
                                "properties": {
                                    "name": {"type": "string", "maxLength": 63},
                                    "port": {"type": "integer"}
                                }
                            }}
                        }
                    }
                }}}
            }]
        }
    })
}

/// The body of a create of the Widget `name`, valid under every rule.
pub(crate) fn body(name: &str) -> Bytes {
    Bytes::from(
        json!({
            "apiVersion": "bench.kapi.dev/v1",
            "kind": "Widget",
            "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {
                "replicas": 3, "minReplicas": 1, "name": "web-frontend", "mode": "Safe",
                "endpoint": "https://example.com/api",
                "tags": ["blue", "green", "canary", "eu-west"],
                "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443},
                          {"name": "metrics", "port": 9090}]
            }
        })
        .to_string(),
    )
}
