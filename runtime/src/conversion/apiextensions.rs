//! CustomResourceDefinitions between `apiextensions.k8s.io/v1beta1` and the stored `v1`, as
//! `pkg/apis/apiextensions/v1beta1` and `v1` convert them through the internal version.
//!
//! v1beta1 may say a CRD's schema, subresources and printer columns once for every version
//! (`spec.validation`, `spec.subresources`, `spec.additionalPrinterColumns`) and names its one
//! version in `spec.version`; v1 says them per version. On the way to v1 the shared values are
//! copied into every version that has none; on the way back values every version has alike
//! are said once, as upstream's conversion to the internal version hoists them. Printer
//! columns name their path `JSONPath` in v1beta1 and `jsonPath` in v1; a webhook conversion's
//! client config and review versions sit under `conversion.webhook` in v1.

use serde_json::{Map, Value, json};

/// The per-version fields v1beta1 may also say once, as (v1beta1's top-level name, v1's
/// per-version name).
const SHARED: [(&str, &str); 3] = [
    ("validation", "schema"),
    ("subresources", "subresources"),
    ("additionalPrinterColumns", "additionalPrinterColumns"),
];

fn spec(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object.get_mut("spec")?.as_object_mut()
}

/// v1beta1 → v1.
pub(super) fn v1beta1_up(object: &mut Value) {
    let Some(spec) = spec(object) else {
        return;
    };
    let version = spec.remove("version");
    let mut versions = match spec.remove("versions") {
        Some(Value::Array(versions)) if !versions.is_empty() => versions,
        _ => match version {
            Some(name) => vec![json!({"name": name, "served": true, "storage": true})],
            None => Vec::new(),
        },
    };
    for (shared, per_version) in SHARED {
        let Some(value) = spec.remove(shared) else {
            continue;
        };
        for version in versions.iter_mut().filter_map(Value::as_object_mut) {
            version.entry(per_version).or_insert_with(|| value.clone());
        }
    }
    for version in &mut versions {
        rename_column_paths(version, "JSONPath", "jsonPath");
    }
    spec.insert("versions".into(), Value::Array(versions));
    if let Some(Value::Object(conversion)) = spec.get_mut("conversion") {
        let mut webhook = Map::new();
        if let Some(config) = conversion.remove("webhookClientConfig") {
            webhook.insert("clientConfig".into(), config);
        }
        if let Some(reviews) = conversion.remove("conversionReviewVersions") {
            webhook.insert("conversionReviewVersions".into(), reviews);
        }
        if !webhook.is_empty() {
            conversion.insert("webhook".into(), Value::Object(webhook));
        }
    }
}

/// v1 → v1beta1.
pub(super) fn v1beta1_down(object: &mut Value) {
    let Some(spec) = spec(object) else {
        return;
    };
    let Some(Value::Array(mut versions)) = spec.remove("versions") else {
        return;
    };
    if let Some(name) = versions.first().and_then(|v| v.get("name")).cloned() {
        spec.insert("version".into(), name);
    }
    for (shared, per_version) in SHARED {
        let first = versions.first().and_then(|v| v.get(per_version)).cloned();
        let Some(first) = first else {
            continue;
        };
        if versions.iter().all(|v| v.get(per_version) == Some(&first)) {
            for version in versions.iter_mut().filter_map(Value::as_object_mut) {
                version.remove(per_version);
            }
            spec.insert(shared.into(), first);
        }
    }
    if let Some(columns) = spec.get_mut("additionalPrinterColumns") {
        rename_paths(columns, "jsonPath", "JSONPath");
    }
    for version in &mut versions {
        rename_column_paths(version, "jsonPath", "JSONPath");
    }
    spec.insert("versions".into(), Value::Array(versions));
    if let Some(Value::Object(conversion)) = spec.get_mut("conversion")
        && let Some(Value::Object(mut webhook)) = conversion.remove("webhook")
    {
        if let Some(config) = webhook.remove("clientConfig") {
            conversion.insert("webhookClientConfig".into(), config);
        }
        if let Some(reviews) = webhook.remove("conversionReviewVersions") {
            conversion.insert("conversionReviewVersions".into(), reviews);
        }
    }
}

fn rename_column_paths(version: &mut Value, from: &str, to: &str) {
    if let Some(columns) = version.get_mut("additionalPrinterColumns") {
        rename_paths(columns, from, to);
    }
}

fn rename_paths(columns: &mut Value, from: &str, to: &str) {
    for column in columns
        .as_array_mut()
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        if let Some(path) = column.remove(from) {
            column.insert(to.into(), path);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(spec: Value) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "spec": spec})
    }

    #[test]
    fn a_shared_schema_goes_into_every_version_and_comes_back_once() {
        let schema = json!({"openAPIV3Schema": {"type": "object"}});
        let columns = json!([{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}]);
        let old = crd(json!({
            "group": "example.com", "version": "v1",
            "versions": [{"name": "v1", "served": true, "storage": true},
                         {"name": "v2", "served": true, "storage": false}],
            "validation": schema, "additionalPrinterColumns": columns,
            "conversion": {"strategy": "Webhook", "webhookClientConfig": {"url": "https://x"},
                           "conversionReviewVersions": ["v1"]},
        }));
        let mut object = old.clone();
        v1beta1_up(&mut object);
        let spec = &object["spec"];
        assert!(spec.get("version").is_none() && spec.get("validation").is_none());
        for version in spec["versions"].as_array().unwrap() {
            assert_eq!(version["schema"], schema);
            assert_eq!(
                version["additionalPrinterColumns"][0]["jsonPath"],
                ".spec.size"
            );
        }
        assert_eq!(
            spec["conversion"],
            json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}})
        );
        v1beta1_down(&mut object);
        assert_eq!(object, old);
    }

    #[test]
    fn one_version_named_by_version_alone_becomes_the_stored_version() {
        let mut object = crd(json!({"group": "example.com", "version": "v1"}));
        v1beta1_up(&mut object);
        assert_eq!(
            object["spec"]["versions"],
            json!([{"name": "v1", "served": true, "storage": true}])
        );
    }

    #[test]
    fn schemas_that_differ_stay_per_version() {
        let object = json!({"spec": {"versions": [
            {"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v2", "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"]}}},
        ]}});
        let mut down = object.clone();
        v1beta1_down(&mut down);
        assert!(down["spec"].get("validation").is_none());
        assert_eq!(down["spec"]["version"], "v1");
        v1beta1_up(&mut down);
        assert_eq!(down, object);
    }
}
