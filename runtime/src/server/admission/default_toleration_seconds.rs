//! Upstream's `DefaultTolerationSeconds` admission plugin
//! (`plugin/pkg/admission/defaulttolerationseconds`, `Plugin.Admit`), on pod creates and
//! updates: a pod that does not tolerate the `node.kubernetes.io/not-ready` or
//! `node.kubernetes.io/unreachable` NoExecute taint gets a toleration of it for 300 seconds
//! (the plugin's default `--default-not-ready-toleration-seconds` and
//! `--default-unreachable-toleration-seconds`). A toleration with an empty key or effect
//! tolerates either.

use serde_json::{Value, json};

/// The taints whose tolerations the plugin adds, in the order it appends them.
const TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// How long the added tolerations tolerate their taint.
const SECONDS: i64 = 300;

/// Appends the missing tolerations to `spec.tolerations`.
pub(super) fn admit(pod: &mut Value) {
    let Some(Value::Object(spec)) = pod.get_mut("spec") else {
        return;
    };
    let present: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let missing: Vec<&str> = TAINTS
        .into_iter()
        .filter(|taint| !present.iter().any(|t| tolerates(t, taint)))
        .collect();
    if missing.is_empty() {
        return;
    }
    let tolerations = spec
        .entry("tolerations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !tolerations.is_array() {
        *tolerations = Value::Array(Vec::new());
    }
    if let Value::Array(list) = tolerations {
        list.extend(missing.into_iter().map(|key| {
            json!({
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": SECONDS,
            })
        }));
    }
}

/// Whether `toleration` tolerates the NoExecute taint `key`: its key is `key` or empty, its
/// effect NoExecute or empty.
fn tolerates(toleration: &Value, key: &str) -> bool {
    let field = |name: &str| toleration.get(name).and_then(Value::as_str).unwrap_or("");
    matches!(field("key"), k if k.is_empty() || k == key)
        && matches!(field("effect"), "" | "NoExecute")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mirrors upstream's `TestForgivenessAdmission` (admission_test.go): both added when none
    /// is there, an existing one kept, an empty key or effect counts.
    #[test]
    fn adds_the_missing_tolerations() {
        let mut pod = json!({"spec": {}});
        admit(&mut pod);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        );
        let mut own = json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 700}
        ]}});
        admit(&mut own);
        let list = own["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0]["tolerationSeconds"], 700);
        assert_eq!(list[1]["key"], "node.kubernetes.io/unreachable");
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        admit(&mut all);
        assert_eq!(all["spec"]["tolerations"].as_array().map(Vec::len), Some(1));
        let mut other_effect =
            json!({"spec": {"tolerations": [{"operator": "Exists", "effect": "NoSchedule"}]}});
        admit(&mut other_effect);
        assert_eq!(
            other_effect["spec"]["tolerations"].as_array().map(Vec::len),
            Some(3)
        );
    }
}
