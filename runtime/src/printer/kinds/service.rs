//! A Service's EXTERNAL-IP and PORT(S) (`printService`: `getServiceExternalIP`,
//! `makePortString`), the load balancer addresses a Service or an Ingress shows
//! (`loadBalancerStatusStringer`), an Endpoints' ENDPOINTS (`formatEndpoints`) and an
//! EndpointSlice's PORTS and ENDPOINTS (`formatDiscoveryPorts`, `formatDiscoveryEndpoints`), of
//! `pkg/printers/internalversion/printers.go`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::printer::format::{self, array_at, at, int_at, str_at};

/// The load balancer ingress points at `path`: each its IP, else its hostname, without
/// repeats, sorted, joined by `,`; `""` without any. The server prints wide, so nothing is cut.
pub(crate) fn load_balancer_addresses(ingress: &[Value]) -> String {
    let addresses: BTreeSet<&str> = ingress
        .iter()
        .map(|point| match str_at(point, ".ip") {
            "" => str_at(point, ".hostname"),
            ip => ip,
        })
        .filter(|address| !address.is_empty())
        .collect();
    addresses.into_iter().collect::<Vec<_>>().join(",")
}

/// Service EXTERNAL-IP: the external IPs of a ClusterIP or NodePort service (`<none>`
/// without); a LoadBalancer's ingress points then its external IPs (`<pending>` without
/// either); an ExternalName's name; `<unknown>` for any other type.
pub(crate) fn service_external_ip(service: &Value) -> Value {
    let external: Vec<&str> = array_at(service, ".spec.externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let text = match str_at(service, ".spec.type") {
        "ClusterIP" | "NodePort" if external.is_empty() => format::NONE.to_owned(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let balancer =
                load_balancer_addresses(array_at(service, ".status.loadBalancer.ingress"));
            if !external.is_empty() {
                let mut all: Vec<&str> = Vec::new();
                if !balancer.is_empty() {
                    all.extend(balancer.split(','));
                }
                all.extend(external);
                all.join(",")
            } else if !balancer.is_empty() {
                balancer
            } else {
                "<pending>".to_owned()
            }
        }
        "ExternalName" => str_at(service, ".spec.externalName").to_owned(),
        _ => format::UNKNOWN.to_owned(),
    };
    Value::from(text)
}

/// Service PORT(S): `port/protocol`, or `port:nodePort/protocol`, joined by `,`; `<none>`
/// without ports.
pub(crate) fn service_ports(service: &Value) -> Value {
    let ports: Vec<String> = array_at(service, ".spec.ports")
        .iter()
        .map(|port| {
            let (number, protocol) = (int_at(port, ".port"), str_at(port, ".protocol"));
            match int_at(port, ".nodePort") {
                node if node > 0 => format!("{number}:{node}/{protocol}"),
                _ => format!("{number}/{protocol}"),
            }
        })
        .collect();
    Value::from(format::or_none(ports.join(",")))
}

/// `net.JoinHostPort`: IPv6 addresses in brackets.
fn host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// Endpoints ENDPOINTS: `ip:port` of each port and address of each subset (the addresses
/// alone for a subset without ports), the first three, then ` + N more...`; `<none>` without
/// subsets.
pub(crate) fn endpoints_addresses(endpoints: &Value) -> Value {
    let subsets = array_at(endpoints, ".subsets");
    if subsets.is_empty() {
        return Value::from(format::NONE);
    }
    let mut all = Vec::new();
    for subset in subsets {
        let addresses = array_at(subset, ".addresses");
        let ports = array_at(subset, ".ports");
        if ports.is_empty() {
            all.extend(addresses.iter().map(|a| str_at(a, ".ip").to_owned()));
            continue;
        }
        for port in ports {
            let number = int_at(port, ".port");
            all.extend(
                addresses
                    .iter()
                    .map(|a| host_port(str_at(a, ".ip"), number)),
            );
        }
    }
    let count = all.len();
    all.truncate(3);
    let joined = all.join(",");
    Value::from(if count > 3 {
        format!("{joined} + {} more...", count - 3)
    } else {
        joined
    })
}

/// EndpointSlice PORTS: each port's number, else its name, else `*`, the first three
/// (`listWithMoreString`: `<unset>` without any).
pub(crate) fn endpoint_slice_ports(slice: &Value) -> Value {
    let ports = array_at(slice, ".ports");
    let list: Vec<String> = ports
        .iter()
        .take(3)
        .map(|port| match at(port, ".port").and_then(Value::as_i64) {
            Some(number) => number.to_string(),
            None => at(port, ".name")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_owned(),
        })
        .collect();
    Value::from(format::list_with_more(&list, ports.len(), 3))
}

/// EndpointSlice ENDPOINTS: every endpoint's addresses, the first three.
pub(crate) fn endpoint_slice_endpoints(slice: &Value) -> Value {
    let addresses: Vec<String> = array_at(slice, ".endpoints")
        .iter()
        .flat_map(|endpoint| array_at(endpoint, ".addresses"))
        .map(|address| address.as_str().unwrap_or("").to_owned())
        .collect();
    let list: Vec<String> = addresses.iter().take(3).cloned().collect();
    Value::from(format::list_with_more(&list, addresses.len(), 3))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn service_cells_by_type() {
        let service = |spec: Value, status: Value| json!({"spec": spec, "status": status});
        let plain = service(
            json!({"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}),
            json!({}),
        );
        assert_eq!(service_external_ip(&plain), json!("<none>"));
        assert_eq!(service_ports(&plain), json!("80:30080/TCP,53/UDP"));
        assert_eq!(service_ports(&json!({})), json!("<none>"));
        let balanced = service(
            json!({"type": "LoadBalancer", "externalIPs": ["1.2.3.4"]}),
            json!({"loadBalancer": {"ingress": [{"ip": "9.9.9.9"}, {"hostname": "lb.example"}, {"ip": "9.9.9.9"}]}}),
        );
        assert_eq!(
            service_external_ip(&balanced),
            json!("9.9.9.9,lb.example,1.2.3.4")
        );
        let pending = service(json!({"type": "LoadBalancer"}), json!({}));
        assert_eq!(service_external_ip(&pending), json!("<pending>"));
        let named = service(
            json!({"type": "ExternalName", "externalName": "db.example"}),
            json!({}),
        );
        assert_eq!(service_external_ip(&named), json!("db.example"));
        assert_eq!(
            service_external_ip(&service(json!({}), json!({}))),
            json!("<unknown>")
        );
    }

    #[test]
    fn endpoints_keep_three() {
        let endpoints = json!({"subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "ports": [{"port": 80}, {"port": 443}]},
            {"addresses": [{"ip": "10.0.0.9"}]},
        ]});
        assert_eq!(
            endpoints_addresses(&endpoints),
            json!("10.0.0.1:80,[fd00::1]:80,10.0.0.1:443 + 2 more...")
        );
        assert_eq!(endpoints_addresses(&json!({})), json!("<none>"));
        assert_eq!(endpoints_addresses(&json!({"subsets": [{}]})), json!(""));
    }

    #[test]
    fn endpoint_slices() {
        let slice = json!({"ports": [{"port": 80}, {"name": "dns"}, {}, {"port": 9}],
                           "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]}]});
        assert_eq!(endpoint_slice_ports(&slice), json!("80,dns,* + 1 more..."));
        assert_eq!(
            endpoint_slice_endpoints(&slice),
            json!("10.0.0.1,10.0.0.2,10.0.0.3")
        );
        assert_eq!(endpoint_slice_ports(&json!({})), json!("<unset>"));
    }
}
