//! An Ingress's HOSTS and PORTS (`printIngress`: `formatHosts`, `formatPorts`), an
//! IngressClass's PARAMETERS (`printIngressClass`), an IPAddress's PARENTREF (`printIPAddress`)
//! and a ClusterCIDR's NODESELECTOR (`printClusterCIDR`), of
//! `pkg/printers/internalversion/printers.go`.

use serde_json::Value;

use crate::printer::format::{self, array_at, at, str_at};

/// Ingress HOSTS: the hosts of the first three rules (rules without a host add none), then
/// ` + N more...` counting every rule past three; `*` without any host.
pub(crate) fn ingress_hosts(ingress: &Value) -> Value {
    let rules = array_at(ingress, ".spec.rules");
    let hosts: Vec<&str> = rules
        .iter()
        .take(3)
        .map(|rule| str_at(rule, ".host"))
        .filter(|host| !host.is_empty())
        .collect();
    if hosts.is_empty() {
        return Value::from("*");
    }
    let joined = hosts.join(",");
    Value::from(if rules.len() > 3 {
        format!("{joined} + {} more...", rules.len() - 3)
    } else {
        joined
    })
}

/// Ingress PORTS: `80, 443` with TLS, else `80`.
pub(crate) fn ingress_ports(ingress: &Value) -> Value {
    Value::from(if array_at(ingress, ".spec.tls").is_empty() {
        "80"
    } else {
        "80, 443"
    })
}

/// IngressClass PARAMETERS: `Kind.apiGroup/name` (`Kind/name` without a group); `<none>`
/// without parameters.
pub(crate) fn ingress_class_parameters(class: &Value) -> Value {
    let Some(parameters) = at(class, ".spec.parameters").filter(|p| !p.is_null()) else {
        return Value::from(format::NONE);
    };
    let mut text = str_at(parameters, ".kind").to_owned();
    if let Some(group) = at(parameters, ".apiGroup").and_then(Value::as_str) {
        text = format!("{text}.{group}");
    }
    Value::from(format!("{text}/{}", str_at(parameters, ".name")))
}

/// IPAddress PARENTREF: `resource.group[/namespace]/name` in lower case; `<none>` without.
pub(crate) fn ip_address_parent(address: &Value) -> Value {
    let Some(parent) = at(address, ".spec.parentRef").filter(|p| !p.is_null()) else {
        return Value::from(format::NONE);
    };
    let (group, resource) = (str_at(parent, ".group"), str_at(parent, ".resource"));
    let mut text = if group.is_empty() {
        resource.to_lowercase()
    } else {
        format!("{resource}.{group}").to_lowercase()
    };
    let namespace = str_at(parent, ".namespace");
    if !namespace.is_empty() {
        text = format!("{text}/{namespace}");
    }
    Value::from(format!("{text}/{}", str_at(parent, ".name")))
}

/// ClusterCIDR NODESELECTOR: each term's `MatchExpressions: [..]` and `MatchFields: [..]` as
/// Go's `%v` prints the requirements (`{key In [a b]}`), joined by `,`; `<none>` without a
/// selector.
pub(crate) fn cluster_cidr_node_selector(cidr: &Value) -> Value {
    let Some(selector) = at(cidr, ".spec.nodeSelector").filter(|s| !s.is_null()) else {
        return Value::from(format::NONE);
    };
    let requirements = |list: &[Value]| {
        let items: Vec<String> = list
            .iter()
            .map(|r| {
                format!(
                    "{{{} {} {}}}",
                    str_at(r, ".key"),
                    str_at(r, ".operator"),
                    format::go_strings(array_at(r, ".values"))
                )
            })
            .collect();
        format!("[{}]", items.join(" "))
    };
    let mut terms = Vec::new();
    for term in array_at(selector, ".nodeSelectorTerms") {
        for (field, label) in [
            (".matchExpressions", "MatchExpressions"),
            (".matchFields", "MatchFields"),
        ] {
            let list = array_at(term, field);
            if !list.is_empty() {
                terms.push(format!("{label}: {}", requirements(list)));
            }
        }
    }
    Value::from(terms.join(","))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ingress_hosts_and_ports() {
        let ingress = json!({"spec": {"rules": [{"host": "a"}, {}, {"host": "c"}, {"host": "d"}, {"host": "e"}],
                                      "tls": [{"hosts": ["a"]}]}});
        assert_eq!(ingress_hosts(&ingress), json!("a,c + 2 more..."));
        assert_eq!(ingress_ports(&ingress), json!("80, 443"));
        assert_eq!(ingress_hosts(&json!({"spec": {"rules": [{}]}})), json!("*"));
        assert_eq!(ingress_ports(&json!({})), json!("80"));
    }

    #[test]
    fn references() {
        let class = json!({"spec": {"parameters": {"apiGroup": "k8s.example.com", "kind": "Params", "name": "p"}}});
        assert_eq!(
            ingress_class_parameters(&class),
            json!("Params.k8s.example.com/p")
        );
        assert_eq!(ingress_class_parameters(&json!({})), json!("<none>"));
        let address = json!({"spec": {"parentRef": {"group": "", "resource": "Services", "namespace": "default", "name": "kubernetes"}}});
        assert_eq!(
            ip_address_parent(&address),
            json!("services/default/kubernetes")
        );
        let cluster = json!({"spec": {"parentRef": {"group": "example.com", "resource": "gateways", "name": "g"}}});
        assert_eq!(ip_address_parent(&cluster), json!("gateways.example.com/g"));
    }

    #[test]
    fn node_selector_as_go_prints_it() {
        let cidr = json!({"spec": {"nodeSelector": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
             "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}]}}});
        assert_eq!(
            cluster_cidr_node_selector(&cidr),
            json!("MatchExpressions: [{zone In [a b]}],MatchFields: [{metadata.name NotIn [n1]}]")
        );
        assert_eq!(cluster_cidr_node_selector(&json!({})), json!("<none>"));
    }
}
