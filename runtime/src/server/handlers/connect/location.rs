//! Where a connect subresource's request goes, as upstream's registries work it out: a pod's
//! container and node (`pkg/registry/core/pod/strategy.go`: `validateContainer`,
//! `LogLocation`, `streamLocation`, `PortForwardLocation`, `ResourceLocation`), a Service's
//! endpoint (`pkg/registry/core/service/storage/storage.go`: `ResourceLocation`,
//! `isValidAddress`) and a Node's kubelet or port (`pkg/registry/core/node/strategy.go`:
//! `ResourceLocation`, `isProxyableHostname`), with their refusals.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::Value;

use crate::storage::Storage as _;

use crate::server::Call;
use crate::server::http::backend::{self, Backend, Scheme};
use crate::server::http::error::{ApiError, Subject};
use crate::server::state::keys::prefix_of;

/// How long resolving a node's hostname may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The stored core object of `plural` named `name` (in `namespace`, for a namespaced one), or
/// upstream's 404 for it. Core objects of these kinds are stored in `v1`, whose fields are
/// read here.
pub(crate) async fn read_core(
    call: &Call,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    let mut key = prefix_of("", plural);
    if let Some(namespace) = namespace {
        key.push_str(namespace);
        key.push('/');
    }
    key.push_str(name);
    let subject = Subject {
        group: "",
        resource: plural,
        name,
    };
    match call.state.storage.get(&key, None).await {
        Ok(Some(kv)) => serde_json::from_slice(&kv.value).map_err(ApiError::internal),
        Ok(None) => Err(ApiError::not_found(subject)),
        Err(e) => Err(ApiError::from_read(e)),
    }
}

/// apimachinery's `SplitSchemeNamePort`: `name`, `name:port` or `scheme:name:port`, the scheme
/// `http`, `https` or empty and the name not; `None` otherwise.
pub(crate) fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    (!name.is_empty() && ["", "http", "https"].contains(&scheme)).then_some((scheme, name, port))
}

/// The backend scheme `scheme` names (empty is plain HTTP).
fn scheme_of(scheme: &str) -> Scheme {
    match scheme {
        "https" => Scheme::Https,
        _ => Scheme::Http,
    }
}

/// The names of a pod's containers in upstream's `VisitContainers` order: init containers,
/// containers, ephemeral containers.
fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| {
            pod.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect()
}

/// The container a request names, or the pod's only one (upstream's `validateContainer`), with
/// its 400s.
pub(crate) fn container(pod: &Value, wanted: &str) -> Result<String, ApiError> {
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !wanted.is_empty() {
        return match container_names(pod).contains(&wanted) {
            true => Ok(wanted.to_owned()),
            false => Err(ApiError::bad_request(format!(
                "container {wanted} is not valid for pod {pod_name}"
            ))),
        };
    }
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    match containers {
        [only] => Ok(only
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()),
        [] => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {pod_name}"
        ))),
        _ => Err(ApiError::bad_request(format!(
            // Go's `%s` of a string slice: `[a b c]`.
            "a container name must be specified for pod {pod_name}, choose one of: [{}]",
            container_names(pod).join(" ")
        ))),
    }
}

/// The node a pod is bound to, if any.
pub(crate) fn node_name(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// The kubelet of node `node`, as upstream's `NodeConnectionInfoGetter` finds it (`insecure`:
/// without verifying its certificate); a node without a usable address is upstream's error,
/// which is no API status (500 with the text).
pub(crate) async fn kubelet(call: &Call, node: &str, insecure: bool) -> Result<Backend, ApiError> {
    let node = read_core(call, "nodes", None, node).await?;
    call.state
        .kubelet
        .endpoint(&node, insecure)
        .map_err(ApiError::unstatused)
}

/// Go's `net.IP.IsGlobalUnicast`: not unspecified, loopback, multicast, link-local or the
/// IPv4 broadcast address.
fn is_global_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.is_link_local()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(v6.is_unspecified() || v6.is_loopback() || v6.is_multicast() || link_local)
        }
    }
}

/// Where a pod's `proxy` goes (upstream's pod `ResourceLocation`): `id` is `name`,
/// `name:port` or `scheme:name:port`; without a port, the first port a container declares;
/// the pod's first IP, which must be a global unicast address.
pub(crate) async fn pod_backend(call: &Call, id: &str) -> Result<Backend, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid pod request {id:?}")))?;
    let namespace = call.target.namespace.as_deref();
    let pod = read_core(call, "pods", namespace, name).await?;
    let mut port = port.to_owned();
    if port.is_empty() {
        let first = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|c| c.pointer("/ports/0/containerPort").and_then(Value::as_i64));
        if let Some(first) = first {
            port = first.to_string();
        }
    }
    let ip = pod
        .pointer("/status/podIPs/0/ip")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let parsed: Option<IpAddr> = ip.parse().ok();
    if !parsed.is_some_and(is_global_unicast) {
        return Err(ApiError::bad_request("address not allowed"));
    }
    let scheme = scheme_of(scheme);
    Ok(Backend {
        scheme,
        host: ip.to_owned(),
        port: port_number(&port, scheme)?,
        tls: backend::unverified_tls().map_err(ApiError::internal)?,
    })
}

/// A port as a URL carries it: empty is the scheme's default; anything else must be a port
/// number, as Go's URL parsing requires of the location upstream builds.
fn port_number(port: &str, scheme: Scheme) -> Result<u16, ApiError> {
    if port.is_empty() {
        return Ok(match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        });
    }
    port.parse().map_err(|_| {
        ApiError::unstatused(format!(
            "parse \"{}://:{port}\": invalid port \":{port}\" after host",
            match scheme {
                Scheme::Http => "http",
                Scheme::Https => "https",
            }
        ))
    })
}

/// Where a Service's `proxy` goes (upstream's Service `ResourceLocation`): `id` is `name`,
/// `name:port` or `scheme:name:port`, the port a Service port's number or name; an address of
/// the Service's Endpoints serving that port whose target pod has that IP.
pub(crate) async fn service_backend(call: &Call, id: &str) -> Result<Backend, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid service request {id:?}")))?;
    let namespace = call.target.namespace.as_deref();
    let mut port_name = port.to_owned();
    // A port number stands for the Service port declaring it.
    if let Ok(number) = port.parse::<i64>() {
        let service = read_core(call, "services", namespace, name).await?;
        let declared = service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(number));
        match declared {
            Some(declared) => {
                port_name = declared
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
            }
            None => {
                return Err(ApiError::service_unavailable(format!(
                    "no service port {number} found for service {name:?}"
                )));
            }
        }
    }
    let endpoints = read_core(call, "endpoints", namespace, name).await?;
    let subsets = endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if subsets.is_empty() {
        return Err(ApiError::service_unavailable(format!(
            "no endpoints available for service {name:?}"
        )));
    }
    // Upstream starts from a random subset and address; the first that fits is as good.
    for subset in subsets {
        let addresses = subset
            .get("addresses")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let ports = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for endpoint_port in ports {
            if endpoint_port
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                != port_name
            {
                continue;
            }
            let Some(number) = endpoint_port
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
            else {
                continue;
            };
            for address in addresses {
                if let Some(ip) = valid_address(call, address).await {
                    return Ok(Backend {
                        scheme: scheme_of(scheme),
                        host: ip,
                        port: number,
                        tls: backend::unverified_tls().map_err(ApiError::internal)?,
                    });
                }
            }
        }
    }
    Err(ApiError::service_unavailable(format!(
        "no endpoints available for service {id:?}"
    )))
}

/// The address's IP when it targets a pod of the request's namespace that has that IP
/// (upstream's `isValidAddress`; an address it skips is logged there).
async fn valid_address(call: &Call, address: &Value) -> Option<String> {
    let ip = address.get("ip").and_then(Value::as_str)?;
    let target = address.get("targetRef")?;
    let namespace = target.get("namespace").and_then(Value::as_str)?;
    if Some(namespace) != call.target.namespace.as_deref() {
        tracing::debug!(%ip, "an endpoint address of another namespace was skipped");
        return None;
    }
    let pod_name = target.get("name").and_then(Value::as_str)?;
    let pod = read_core(call, "pods", Some(namespace), pod_name)
        .await
        .ok()?;
    let has_ip = pod
        .pointer("/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|p| p.get("ip").and_then(Value::as_str) == Some(ip));
    if !has_ip {
        tracing::debug!(%ip, pod = %pod_name, "an endpoint address not of its pod was skipped");
    }
    has_ip.then(|| ip.to_owned())
}

/// Where a Node's `proxy` goes (upstream's node `ResourceLocation`): its kubelet for no port
/// or the kubelet's, else that port of the node's address over the scheme asked; the address
/// must resolve to global unicast addresses only.
pub(crate) async fn node_backend(call: &Call, id: &str) -> Result<Backend, ApiError> {
    let (scheme, name, port) = split_scheme_name_port(id)
        .ok_or_else(|| ApiError::bad_request(format!("invalid node request {id:?}")))?;
    let kubelet = kubelet(call, name, false).await?;
    if let Err(why) = proxyable(&kubelet.host).await {
        return Err(ApiError::bad_request(why));
    }
    if port.is_empty() || port == kubelet.port.to_string() {
        return Ok(kubelet);
    }
    let scheme = scheme_of(scheme);
    Ok(Backend {
        scheme,
        port: port_number(port, scheme)?,
        host: kubelet.host,
        tls: backend::unverified_tls().map_err(ApiError::internal)?,
    })
}

/// Upstream's `isProxyableHostname`: every address `host` resolves to is global unicast.
async fn proxyable(host: &str) -> Result<(), String> {
    let addresses: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => {
            let lookup = tokio::net::lookup_host((host, 0));
            match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
                Ok(Ok(found)) => found.map(|a| a.ip()).collect(),
                Ok(Err(e)) => return Err(format!("lookup {host}: {e}")),
                Err(_) => return Err(format!("lookup {host}: i/o timeout")),
            }
        }
    };
    if addresses.is_empty() {
        return Err("no addresses for hostname".to_owned());
    }
    match addresses.into_iter().all(is_global_unicast) {
        true => Ok(()),
        false => Err("address not allowed".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ids_split_as_apimachinery_splits_them() {
        assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
        assert_eq!(split_scheme_name_port("web:80"), Some(("", "web", "80")));
        assert_eq!(
            split_scheme_name_port("https:web:443"),
            Some(("https", "web", "443"))
        );
        assert_eq!(split_scheme_name_port("ftp:web:21"), None);
        assert_eq!(split_scheme_name_port(":80"), None);
        assert_eq!(split_scheme_name_port("a:b:c:d"), None);
    }

    #[test]
    fn the_container_is_named_or_the_only_one() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {
            "initContainers": [{"name": "setup"}],
            "containers": [{"name": "app"}, {"name": "sidecar"}]}});
        // strategy.go `validateContainer`.
        let refused = container(&pod, "").err().map(ApiError::into_status);
        assert_eq!(
            refused.and_then(|s| s.message).as_deref(),
            Some(
                "a container name must be specified for pod web, choose one of: [setup app sidecar]"
            )
        );
        assert_eq!(container(&pod, "setup").ok().as_deref(), Some("setup"));
        let refused = container(&pod, "db").err().map(ApiError::into_status);
        assert_eq!(
            refused.and_then(|s| s.message).as_deref(),
            Some("container db is not valid for pod web")
        );
        let single = json!({"metadata": {"name": "one"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(container(&single, "").ok().as_deref(), Some("c"));
    }

    #[test]
    fn only_global_unicast_addresses_are_proxied() {
        for (ip, ok) in [
            ("10.1.2.3", true),
            ("203.0.113.9", true),
            ("127.0.0.1", false),
            ("169.254.1.1", false),
            ("0.0.0.0", false),
            ("255.255.255.255", false),
            ("224.0.0.1", false),
            ("fd00::1", true),
            ("::1", false),
            ("fe80::1", false),
        ] {
            let ip: IpAddr = ip.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
            assert_eq!(is_global_unicast(ip), ok, "{ip}");
        }
    }
}
