//! Admission policies' PARAMKIND and their bindings' PARAMREF (`printValidatingAdmissionPolicy`,
//! `printValidatingAdmissionPolicyBinding` and their mutating twins of
//! `pkg/printers/internalversion/printers.go`).

use serde_json::Value;

use crate::printer::format::{self, array_at, at, str_at};

/// PARAMKIND: `apiVersion/kind`, `<unset>` without a param kind.
pub(crate) fn param_kind(policy: &Value, path: &str) -> Value {
    match at(policy, path).filter(|p| !p.is_null()) {
        Some(kind) => Value::from(format!(
            "{}/{}",
            str_at(kind, ".apiVersion"),
            str_at(kind, ".kind")
        )),
        None => Value::from(format::UNSET),
    }
}

/// PARAMREF (1.28's): `namespace/name`, `*/name` without a namespace, else the selector as the
/// generated `LabelSelector.String()` writes it; `<unset>` without either.
pub(crate) fn param_ref(binding: &Value, path: &str) -> Value {
    let Some(reference) = at(binding, path).filter(|p| !p.is_null()) else {
        return Value::from(format::UNSET);
    };
    let name = str_at(reference, ".name");
    if !name.is_empty() {
        let namespace = match str_at(reference, ".namespace") {
            "" => "*",
            namespace => namespace,
        };
        return Value::from(format!("{namespace}/{name}"));
    }
    match at(reference, ".selector").filter(|s| !s.is_null()) {
        Some(selector) => Value::from(go_label_selector(selector)),
        None => Value::from(format::UNSET),
    }
}

/// A `LabelSelector` as its gogo-protobuf `String()` writes it:
/// `&LabelSelector{MatchLabels:map[string]string{k: v,},MatchExpressions:[]LabelSelectorRequirement{...},}`.
fn go_label_selector(selector: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = format::map_at(selector, ".matchLabels")
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or("")))
        .collect();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = array_at(selector, ".matchExpressions")
        .iter()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:{},}},",
                str_at(e, ".key"),
                str_at(e, ".operator"),
                format::go_strings(array_at(e, ".values"))
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn param_kinds_and_references() {
        let policy = json!({"spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}});
        assert_eq!(
            param_kind(&policy, ".spec.paramKind"),
            json!("v1/ConfigMap")
        );
        assert_eq!(param_kind(&json!({}), ".spec.paramKind"), json!("<unset>"));
        let named = json!({"spec": {"paramRef": {"name": "limits", "namespace": "ns"}}});
        assert_eq!(param_ref(&named, ".spec.paramRef"), json!("ns/limits"));
        let any = json!({"spec": {"paramRef": {"name": "limits"}}});
        assert_eq!(param_ref(&any, ".spec.paramRef"), json!("*/limits"));
        let selected = json!({"spec": {"paramRef": {"selector": {"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}}}});
        assert_eq!(
            param_ref(&selected, ".spec.paramRef"),
            json!(
                "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:env,Operator:In,Values:[prod dev],},},}"
            )
        );
        assert_eq!(
            param_ref(&json!({"spec": {"paramRef": {}}}), ".spec.paramRef"),
            json!("<unset>")
        );
        assert_eq!(param_ref(&json!({}), ".spec.paramRef"), json!("<unset>"));
    }
}
