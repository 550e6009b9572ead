//! A Node's STATUS, ROLES and addresses (`printNode`, `findNodeRoles`, `getNodeInternalIP`,
//! `getNodeExternalIP` of `pkg/printers/internalversion/printers.go`).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::printer::format::{self, array_at, at, str_at};

/// Node STATUS: `Ready` or `NotReady` from the Ready condition (the last of that type),
/// `Unknown` without one; `,SchedulingDisabled` when unschedulable.
pub(crate) fn node_status(node: &Value) -> Value {
    let ready = array_at(node, ".status.conditions")
        .iter()
        .rev()
        .find(|c| str_at(c, ".type") == "Ready");
    let mut status = match ready {
        Some(c) if str_at(c, ".status") == "True" => "Ready".to_owned(),
        Some(_) => "NotReady".to_owned(),
        None => "Unknown".to_owned(),
    };
    if at(node, ".spec.unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    Value::from(status)
}

/// Node ROLES: the `<role>` of each `node-role.kubernetes.io/<role>` label and the value of
/// `kubernetes.io/role`, sorted without repeats; `<none>` without any.
pub(crate) fn node_roles(node: &Value) -> Value {
    let mut roles = BTreeSet::new();
    for (key, value) in format::map_at(node, ".metadata.labels")
        .into_iter()
        .flatten()
    {
        if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.insert(role.to_owned());
            }
        } else if key == "kubernetes.io/role" {
            match value.as_str() {
                Some(role) if !role.is_empty() => {
                    roles.insert(role.to_owned());
                }
                _ => {}
            }
        }
    }
    Value::from(format::or_none(
        roles.into_iter().collect::<Vec<_>>().join(","),
    ))
}

fn address(node: &Value, type_: &str) -> Value {
    let address = array_at(node, ".status.addresses")
        .iter()
        .find(|a| str_at(a, ".type") == type_)
        .map_or(format::NONE, |a| str_at(a, ".address"));
    Value::from(address)
}

/// Node INTERNAL-IP: the first InternalIP address, `<none>` without.
pub(crate) fn node_internal_ip(node: &Value) -> Value {
    address(node, "InternalIP")
}

/// Node EXTERNAL-IP: the first ExternalIP address, `<none>` without.
pub(crate) fn node_external_ip(node: &Value) -> Value {
    address(node, "ExternalIP")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn status_from_the_last_ready_condition() {
        let node = json!({"spec": {"unschedulable": true}, "status": {"conditions": [
            {"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "True"},
            {"type": "Ready", "status": "True"}]}});
        assert_eq!(node_status(&node), json!("Ready,SchedulingDisabled"));
        let not_ready = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert_eq!(node_status(&not_ready), json!("NotReady"));
        assert_eq!(node_status(&json!({})), json!("Unknown"));
    }

    #[test]
    fn roles_and_addresses() {
        let node = json!({"metadata": {"labels": {
            "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x",
            "kubernetes.io/role": "worker", "node-role.kubernetes.io/worker": "true"}},
            "status": {"addresses": [{"type": "Hostname", "address": "n1"},
                                     {"type": "InternalIP", "address": "10.0.0.1"},
                                     {"type": "InternalIP", "address": "10.0.0.2"}]}});
        assert_eq!(node_roles(&node), json!("control-plane,worker"));
        assert_eq!(node_roles(&json!({})), json!("<none>"));
        assert_eq!(node_internal_ip(&node), json!("10.0.0.1"));
        assert_eq!(node_external_ip(&node), json!("<none>"));
    }
}
