//! A core `v1` Service's rules, as `ValidateService` and `ValidateServiceUpdate`
//! (`pkg/apis/core/validation`) check them: its ports taken together (`service_ports`, on the
//! ServiceSpec), and everything else that is code (`service`, on the Service itself, which
//! reads the annotations and, on updates, the stored Service): ExternalName Services, headless
//! NodePort and LoadBalancer Services, the cluster IPs, IP families and family policy as fields
//! (`ValidateServiceClusterIPsRelatedFields`), external IPs, source ranges, session affinity,
//! the selector's labels, the LoadBalancer-only fields and the traffic policies. Single fields
//! (a port's name, number, protocol, target port and app protocol; `type`;
//! `sessionAffinity`) are data in `specs/validation/kubernetes.yaml`.
//!
//! What the Service storage does is the server's (`server::handlers::services`): allocating
//! cluster IPs and node ports, the IP families a single-stack cluster has, a `nodePort` on a
//! Service without node ports, and the cluster IPs an update may not change. The server
//! validates a new Service before it allocates (upstream allocates first), so on a create
//! these rules read `clusterIPs` as upstream's `NormalizeClusterIPs` leaves them and leave the
//! health check node port the allocator picks alone.
//!
//! Upstream's text was read at 1.20 (as 1.21 and 1.22 vendor it, for what 1.20 already had),
//! 1.28, 1.31 and 1.35 (1.34 and 1.36 are assumed to validate Services as 1.35 does). A
//! constant names the first release read with a text where it changed between releases kapi
//! does not serve.

use std::collections::{BTreeSet, HashSet};
use std::net::{IpAddr, Ipv4Addr};

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::super::meta::labels;
use super::networking::parse_cidr;
use super::{items, port_number, text};
use crate::KubeVersion;

const CLIENT_IP: &str = "ClientIP";
const EXTERNAL_NAME: &str = "ExternalName";
const LOAD_BALANCER: &str = "LoadBalancer";
const NODE_PORT: &str = "NodePort";
const NONE: &str = "None";
/// `ports.KubeletPort`, which a LoadBalancer may not expose before 1.31.
const KUBELET_PORT: i64 = 10250;
/// `core.MaxClientIPServiceAffinitySeconds`.
const MAX_AFFINITY_SECONDS: i64 = 86400;
/// `core.AnnotationLoadBalancerSourceRangesKey`.
const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";
/// `core.AnnotationTopologyMode` and `core.DeprecatedAnnotationTopologyAwareHints`.
const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
/// `IsValidIP`'s (and, without StrictIPCIDRValidation, `IsValidIPForLegacyField`'s) message.
pub(super) const BAD_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
/// `IsValidCIDR`'s (and `IsValidCIDRForLegacyField`'s) message.
const BAD_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";
const ONLY_LOAD_BALANCER: &str = "may only be used when `type` is 'LoadBalancer'";
const NOT_FOR_EXTERNAL_NAME: &str = "may not be set for ExternalName services";

/// The first release with the dual-stack fields on (IPv6DualStack beta): 1.20 drops
/// `ipFamilies`, `ipFamilyPolicy` and a second cluster IP before validating
/// (`dropServiceDisabledFields`).
const DUAL_STACK_SINCE: KubeVersion = KubeVersion::new(1, 21);
/// The first release with `loadBalancerClass`, `internalTrafficPolicy` and
/// `allocateLoadBalancerNodePorts` on by default (their gates beta; 1.20 has none of the
/// first two and drops the third).
const LOAD_BALANCER_FIELDS_SINCE: KubeVersion = KubeVersion::new(1, 22);
/// The first release read with `validateServiceExternalTrafficPolicy` (externally-accessible
/// Services, a required health check port, immutable on update) in place of 1.20's
/// `validateServiceExternalTrafficFieldsValue` and the storage's
/// `ValidateServiceExternalTrafficFieldsCombination` (1.22 read with the old ones); and with
/// the topology-mode annotation check (the annotation is from 1.27).
const TRAFFIC_POLICY_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// The first release read checking each source range alone (`IsValidCIDR`, 1.28 read with the
/// one message for the list) and without the kubelet port check.
const SOURCE_RANGE_ITEMS_SINCE: KubeVersion = KubeVersion::new(1, 31);
/// The first release read leaving an unchanged source-ranges annotation alone on update
/// (`IsValidCIDRForLegacyField`), with `trafficDistribution`'s three values
/// (PreferSameTrafficDistribution beta; the field is not in 1.28), the clusterIP-sync wording
/// below, and the ClientIP affinity config dropped by defaulting when `sessionAffinity` is
/// `None` (so never refused).
const LEGACY_FIELDS_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// The first release whose special-IP messages name the IPv6 ranges too (1.21 assumed, from
/// the change that taught `ValidateNonSpecialIP` IPv6; 1.28 read with them, 1.20 assumed
/// without).
const IPV6_RANGES_SINCE: KubeVersion = KubeVersion::new(1, 21);

/// A Service's ports taken together: required unless headless or ExternalName, named when
/// several, names unique (`validateServicePort`'s name checks), the kubelet's port on a
/// LoadBalancer before 1.31, and no `port` or `nodePort` twice for one protocol; on a
/// ServiceSpec.
pub(super) fn service_ports(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let ports = items(spec, "ports");
    let path = at.child("ports");
    if ports.is_empty()
        && !is_headless(&cluster_ips(spec, None))
        && text(spec, "type") != EXTERNAL_NAME
    {
        errors.required(&path, "");
    }
    if text(spec, "type") == LOAD_BALANCER && release < SOURCE_RANGE_ITEMS_SINCE {
        for (i, port) in ports.iter().enumerate() {
            if number(port, "port") == KUBELET_PORT {
                let detail = format!(
                    "may not expose port {KUBELET_PORT} externally since it is used by kubelet"
                );
                errors.invalid(
                    &path.index(i),
                    Shown::Plain(&Value::from(KUBELET_PORT)),
                    &detail,
                );
            }
        }
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let name = text(port, "name");
        let name_path = path.index(i).child("name");
        if name.is_empty() {
            if ports.len() > 1 {
                errors.required(&name_path, "");
            }
        } else if names.contains(&name) {
            errors.duplicate(&name_path, &Value::from(name));
        } else {
            names.push(name);
        }
    }
    // Keyed by (protocol, port) as upstream keys a `core.ServicePort` holding only those.
    let mut node_ports: HashSet<(&str, i64)> = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let node_port = number(port, "nodePort");
        if node_port != 0 && !node_ports.insert((text(port, "protocol"), node_port)) {
            errors.duplicate(&path.index(i).child("nodePort"), &Value::from(node_port));
        }
    }
    let mut seen: HashSet<(&str, i64)> = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let (protocol, number) = (text(port, "protocol"), number(port, "port"));
        if !seen.insert((protocol, number)) {
            let json = port_key_json(protocol, number);
            let go = port_key_go(protocol, number);
            errors.duplicate_shown(&path.index(i), Shown::Go(&go, &json));
        }
    }
}

/// The `core.ServicePort{Protocol, Port}` upstream reports a duplicate port as, in Go's `%#v`.
fn port_key_go(protocol: &str, port: i64) -> String {
    format!(
        "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{port}, \
         TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
        Value::from(protocol)
    )
}

/// The same key as JSON keyed by the Go field names, as 1.34 prints it (an `IntOrString`
/// writes its number).
fn port_key_json(protocol: &str, port: i64) -> Value {
    let mut key = serde_json::Map::new();
    key.insert("Name".into(), Value::from(""));
    key.insert("Protocol".into(), Value::from(protocol));
    key.insert("AppProtocol".into(), Value::Null);
    key.insert("Port".into(), Value::from(port));
    key.insert("TargetPort".into(), Value::from(0));
    key.insert("NodePort".into(), Value::from(0));
    Value::Object(key)
}

/// `ValidateService`'s checks that are not a single field's, and on an update
/// `ValidateServiceUpdate`'s load balancer class and health check port; on the Service.
pub(super) fn service(object: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let empty = Value::Null;
    let spec = object.get("spec").unwrap_or(&empty);
    let old_spec = old.map(|old| old.get("spec").unwrap_or(&empty));
    let spec_at = at.child("spec");
    topology_annotations(object, at, errors);
    type_specific(spec, old_spec, &spec_at, errors);
    labels(spec, "selector", &spec_at, errors);
    session_affinity(spec, &spec_at, errors);
    cluster_ip_fields(spec, old_spec, &spec_at, errors);
    external_ips(spec, &spec_at, errors);
    source_ranges(object, old, at, errors);
    load_balancer_fields(spec, old_spec, &spec_at, errors);
    traffic_policies(spec, old_spec, &spec_at, errors);
}

/// The first release refusing load balancer ingress on a Service of another type
/// (`AllowServiceLBStatusOnNonLB` off by default from 1.29), with `ipMode` (LoadBalancerIPMode
/// beta, on from 1.30) and the legacy IP message (`IsValidIPForLegacyField`, 1.33): read at
/// 1.34, none of it in 1.28.
const LOAD_BALANCER_STATUS_SINCE: KubeVersion = KubeVersion::new(1, 29);
/// The first release requiring an ingress point's `ipMode` beside its `ip` (LoadBalancerIPMode
/// beta and on), which its defaulting fills in as `VIP` on a LoadBalancer Service.
const IP_MODE_REQUIRED_SINCE: KubeVersion = KubeVersion::new(1, 30);
/// `supportedLoadBalancerIPMode`, sorted as upstream lists it.
const IP_MODES: &[&str] = &["Proxy", "VIP"];

/// `ValidateServiceStatusUpdate`'s `ValidateLoadBalancerStatus`: each ingress point's IP and
/// host name (a DNS subdomain, not an IP); from 1.29 only on a LoadBalancer, and its `ipMode`
/// only beside an IP, and from 1.30 required beside one (the defaults give a LoadBalancer's
/// ingress point with an IP the `VIP` mode, so a write meets this only on another type).
pub(super) fn service_status(object: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let Some(ingress) = object
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
    else {
        return;
    };
    let ingress_at = at.child("status").child("loadBalancer").child("ingress");
    let recent = release >= LOAD_BALANCER_STATUS_SINCE;
    let spec_type = object.pointer("/spec/type").and_then(Value::as_str);
    if recent && !ingress.is_empty() && spec_type != Some(LOAD_BALANCER) {
        errors.forbidden(
            &ingress_at,
            "may only be used when `spec.type` is 'LoadBalancer'",
        );
        return;
    }
    for (i, point) in ingress.iter().enumerate() {
        let point_at = ingress_at.index(i);
        let ip = text(point, "ip");
        if !ip.is_empty() && parse_ip_sloppy(ip).is_none() {
            let detail = if release >= LEGACY_FIELDS_SINCE {
                BAD_IP
            } else {
                "must be a valid IP address"
            };
            errors.invalid(
                &point_at.child("ip"),
                Shown::Plain(&Value::from(ip)),
                detail,
            );
        }
        let mode = point.get("ipMode").filter(|m| !m.is_null());
        let mode_at = point_at.child("ipMode");
        match mode {
            _ if !recent => {}
            None if release >= IP_MODE_REQUIRED_SINCE && !ip.is_empty() => {
                errors.required(&mode_at, "must be specified when `ip` is set");
            }
            None => {}
            Some(_) if ip.is_empty() => {
                errors.forbidden(&mode_at, "may not be specified when `ip` is not set");
            }
            Some(mode) if !mode.as_str().is_some_and(|m| IP_MODES.contains(&m)) => {
                errors.not_supported(&mode_at, mode, IP_MODES);
            }
            Some(_) => {}
        }
        let host = text(point, "hostname");
        if !host.is_empty() {
            let shown = Value::from(host);
            let host_at = point_at.child("hostname");
            for message in Format::DnsSubdomain.messages(host, release) {
                errors.invalid(&host_at, Shown::Plain(&shown), &message);
            }
            if parse_ip_sloppy(host).is_some() {
                errors.invalid(
                    &host_at,
                    Shown::Plain(&shown),
                    "must be a DNS name, not an IP address",
                );
            }
        }
    }
}

/// A number field, 0 when missing (a Go int's zero value).
fn number(holder: &Value, field: &str) -> i64 {
    holder.get(field).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether `field` is set (a Go pointer that is not nil).
fn is_set(holder: &Value, field: &str) -> bool {
    holder.get(field).is_some_and(|v| !v.is_null())
}

fn strings(holder: &Value, field: &str) -> Vec<String> {
    items(holder, field)
        .iter()
        .map(|v| v.as_str().unwrap_or("").to_owned())
        .collect()
}

/// `clusterIPs` as validation sees them: on a create, as `NormalizeClusterIPs` leaves them (an
/// old client's `clusterIP` alone becomes the list); in 1.20, cut to one address unless the
/// stored Service had more (`dropServiceDisabledFields`).
fn cluster_ips(spec: &Value, old: Option<&Value>) -> Vec<String> {
    let mut ips = strings(spec, "clusterIPs");
    let ip = text(spec, "clusterIP");
    if old.is_none() && ips.is_empty() && !ip.is_empty() {
        ips.push(ip.to_owned());
    }
    ips
}

/// `isHeadlessService`: exactly one cluster IP, `None`.
fn is_headless(ips: &[String]) -> bool {
    ips.len() == 1 && ips[0] == NONE
}

/// Whether the release still has the dual-stack fields as they were written.
fn dual_stack_fields(release: KubeVersion, old: Option<&Value>) -> bool {
    release >= DUAL_STACK_SINCE
        || old.is_some_and(|old| {
            is_set(old, "ipFamilies")
                || is_set(old, "ipFamilyPolicy")
                || items(old, "clusterIPs").len() > 1
        })
}

fn topology_annotations(object: &Value, at: &FieldPath, errors: &mut Errors) {
    if errors.release() < TRAFFIC_POLICY_SINCE {
        return;
    }
    let annotation = |key: &str| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    };
    if let (Some(mode), Some(hints)) = (annotation(TOPOLOGY_MODE), annotation(TOPOLOGY_HINTS))
        && mode != hints
    {
        let path = at.child("metadata").child("annotations").key(TOPOLOGY_MODE);
        let detail = format!("must match annotations[{TOPOLOGY_HINTS}] when both are specified");
        errors.invalid(&path, Shown::Plain(&Value::from(mode)), &detail);
    }
}

/// The `switch service.Spec.Type` of `ValidateService`: no headless NodePort or LoadBalancer,
/// and an ExternalName Service's name without cluster IPs or families.
fn type_specific(spec: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let ips = effective_cluster_ips(spec, old, release);
    let kind = text(spec, "type");
    match kind {
        LOAD_BALANCER | NODE_PORT if is_headless(&ips) => {
            let detail = format!("may not be set to 'None' for {kind} services");
            errors.invalid(
                &at.child("clusterIPs").index(0),
                Shown::Plain(&Value::from(NONE)),
                &detail,
            );
        }
        EXTERNAL_NAME => {
            if !ips.is_empty() {
                errors.forbidden(&at.child("clusterIPs"), NOT_FOR_EXTERNAL_NAME);
            }
            if dual_stack_fields(release, old) {
                if !items(spec, "ipFamilies").is_empty() {
                    errors.forbidden(&at.child("ipFamilies"), NOT_FOR_EXTERNAL_NAME);
                }
                if is_set(spec, "ipFamilyPolicy") {
                    errors.forbidden(&at.child("ipFamilyPolicy"), NOT_FOR_EXTERNAL_NAME);
                }
            }
            // The name (a CNAME) may end in a dot, fully qualified (the trim is assumed in
            // 1.20, read from 1.21).
            let name = text(spec, "externalName");
            let cname = name.strip_suffix('.').unwrap_or(name);
            let path = at.child("externalName");
            if cname.is_empty() {
                return errors.required(&path, "");
            }
            for message in Format::DnsSubdomain.messages(cname, release) {
                errors.invalid(&path, Shown::Plain(&Value::from(cname)), &message);
            }
        }
        _ => {}
    }
}

/// [`cluster_ips`], with 1.20's second address dropped.
fn effective_cluster_ips(spec: &Value, old: Option<&Value>, release: KubeVersion) -> Vec<String> {
    let mut ips = cluster_ips(spec, old);
    if !dual_stack_fields(release, old) {
        ips.truncate(1);
    }
    ips
}

/// `validateClientIPAffinityConfig`, and before 1.34 no config under `None`.
fn session_affinity(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let path = at.child("sessionAffinityConfig");
    let config = spec.get("sessionAffinityConfig").filter(|c| !c.is_null());
    match text(spec, "sessionAffinity") {
        CLIENT_IP => {
            let detail = format!("when session affinity type is {CLIENT_IP}");
            let Some(config) = config else {
                return errors.required(&path, &detail);
            };
            let path = path.child("clientIP");
            let Some(client_ip) = config.get("clientIP").filter(|c| !c.is_null()) else {
                return errors.required(&path, &detail);
            };
            let path = path.child("timeoutSeconds");
            let Some(timeout) = client_ip.get("timeoutSeconds").filter(|t| !t.is_null()) else {
                return errors.required(&path, &detail);
            };
            let seconds = timeout.as_i64().unwrap_or(0);
            if seconds <= 0 || seconds > MAX_AFFINITY_SECONDS {
                let detail = format!("must be greater than 0 and less than {MAX_AFFINITY_SECONDS}");
                errors.invalid(&path, Shown::Plain(&Value::from(seconds)), &detail);
            }
        }
        NONE if config.is_some() && errors.release() < LEGACY_FIELDS_SINCE => {
            errors.forbidden(&path, "must not be set when session affinity is None");
        }
        _ => {}
    }
}

/// `ValidateServiceClusterIPsRelatedFields`: `clusterIP` and `clusterIPs` in step, supported
/// families once each, a supported policy, valid cluster IPs (`None` alone), at most two of
/// them, one per family, each of its family.
fn cluster_ip_fields(spec: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    if text(spec, "type") == EXTERNAL_NAME {
        return;
    }
    let release = errors.release();
    let ips = effective_cluster_ips(spec, old, release);
    let ips_value = Value::from(ips.clone());
    let shown = Shown::StringList(&ips_value);
    let ips_at = at.child("clusterIPs");
    let ip = text(spec, "clusterIP");
    // The wording read at 1.21 is assumed for 1.28.
    let (mismatch, without_ip) = if release >= LEGACY_FIELDS_SINCE {
        (
            "first value must match `clusterIP`",
            "must be empty when `clusterIP` is not specified",
        )
    } else {
        (
            "element [0] must match clusterIP",
            "must be empty when clusterIP is empty",
        )
    };
    if !ip.is_empty() {
        match ips.first() {
            None => errors.required(&ips_at, ""),
            Some(first) if first != ip => errors.invalid(&ips_at, shown, mismatch),
            Some(_) => {}
        }
    } else if !ips.is_empty() {
        errors.invalid(&ips_at, shown, without_ip);
    }
    let dual_stack = dual_stack_fields(release, old);
    let families = if dual_stack {
        strings(spec, "ipFamilies")
    } else {
        Vec::new()
    };
    let families_at = at.child("ipFamilies");
    let mut seen = BTreeSet::new();
    for (i, family) in families.iter().enumerate() {
        if family != "IPv4" && family != "IPv6" {
            errors.not_supported(
                &families_at.index(i),
                &Value::from(family.as_str()),
                &["IPv4", "IPv6"],
            );
        }
        if !seen.insert(family) {
            errors.duplicate(&families_at.index(i), &Value::from(family.as_str()));
        }
    }
    if dual_stack && let Some(policy) = spec.get("ipFamilyPolicy").filter(|p| !p.is_null()) {
        const POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
        if !policy.as_str().is_some_and(|p| POLICIES.contains(&p)) {
            errors.not_supported(&at.child("ipFamilyPolicy"), policy, &POLICIES);
        }
    }
    let mut bad = false;
    let mut parsed = Vec::new();
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == NONE {
            if ips.len() > 1 {
                bad = true;
                errors.invalid(&ips_at, shown, "'None' must be the first and only value");
            }
            continue;
        }
        match parse_ip_sloppy(ip) {
            Some(addr) => parsed.push(addr),
            None => {
                bad = true;
                errors.invalid(
                    &ips_at.index(i),
                    Shown::Plain(&Value::from(ip.as_str())),
                    BAD_IP,
                );
            }
        }
    }
    if ips.len() > 2 {
        errors.invalid(&ips_at, shown, "may only hold up to 2 values");
    }
    if bad {
        return;
    }
    if ips.len() > 1 && !(parsed.iter().any(IpAddr::is_ipv4) && parsed.iter().any(IpAddr::is_ipv6))
    {
        errors.invalid(
            &ips_at,
            shown,
            "may specify no more than one IP for each IP family",
        );
    }
    if is_headless(&ips) {
        return;
    }
    for (i, (ip, family)) in ips.iter().zip(&families).enumerate() {
        let v6 = parsed.get(i).is_some_and(IpAddr::is_ipv6);
        let expected = match family.as_str() {
            "IPv4" if v6 => "IPv4",
            "IPv6" if !v6 => "IPv6",
            _ => continue,
        };
        let detail = format!("expected an {expected} value as indicated by `ipFamilies[{i}]`");
        errors.invalid(
            &ips_at.index(i),
            Shown::Plain(&Value::from(ip.as_str())),
            &detail,
        );
    }
}

/// `netutils.ParseIPSloppy` (and Go's `net.ParseIP` before 1.17): IPv4 parts may have leading
/// zeros, read as decimal.
pub(super) fn parse_ip_sloppy(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(ip);
    }
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, part) in octets.iter_mut().zip(parts) {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse().ok()?;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

/// Each external IP valid and not special (`IsValidIP`, then `ValidateNonSpecialIP`, from 1.34
/// `IsValidIPForLegacyField` and `ValidateEndpointIP`, which word it alike).
fn external_ips(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let ipv6_ranges = errors.release() >= IPV6_RANGES_SINCE;
    for (i, ip) in strings(spec, "externalIPs").iter().enumerate() {
        let path = at.child("externalIPs").index(i);
        let shown = Value::from(ip.as_str());
        let Some(addr) = parse_ip_sloppy(ip) else {
            errors.invalid(&path, Shown::Plain(&shown), BAD_IP);
            continue;
        };
        for detail in special_ip(addr, ip, ipv6_ranges) {
            errors.invalid(&path, Shown::Plain(&shown), &detail);
        }
    }
}

/// What `ValidateNonSpecialIP` says of an address: unspecified, loopback, link-local unicast
/// or link-local multicast, as Go's `net.IP` methods class it (an IPv4-mapped address as IPv4).
fn special_ip(addr: IpAddr, text: &str, ipv6_ranges: bool) -> Vec<String> {
    let addr = match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    };
    let (unspecified, loopback, link_local, multicast) = match addr {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            (
                v4.is_unspecified(),
                a == 127,
                a == 169 && b == 254,
                a == 224 && b == 0 && c == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (
                v6.is_unspecified(),
                v6.is_loopback(),
                s[0] & 0xffc0 == 0xfe80,
                s[0] & 0xff0f == 0xff02,
            )
        }
    };
    let mut out = Vec::new();
    let (loopback_range, link_local_range, multicast_range) = if ipv6_ranges {
        (
            "127.0.0.0/8, ::1/128",
            "169.254.0.0/16, fe80::/10",
            "224.0.0.0/24, ff02::/10",
        )
    } else {
        ("127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/24")
    };
    if unspecified {
        let shown = if ipv6_ranges { text } else { "0.0.0.0" };
        out.push(format!("may not be unspecified ({shown})"));
    }
    if loopback {
        out.push(format!(
            "may not be in the loopback range ({loopback_range})"
        ));
    }
    if link_local {
        out.push(format!(
            "may not be in the link-local range ({link_local_range})"
        ));
    }
    if multicast {
        out.push(format!(
            "may not be in the link-local multicast range ({multicast_range})"
        ));
    }
    out
}

/// `loadBalancerSourceRanges`, else the source-ranges annotation: only on a LoadBalancer, and
/// CIDRs; before 1.31 one message for the whole list, then one per bad range.
fn source_ranges(object: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let empty = Value::Null;
    let spec = object.get("spec").unwrap_or(&empty);
    let load_balancer = text(spec, "type") == LOAD_BALANCER;
    let annotation = |object: &Value| {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(SOURCE_RANGES_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let ranges = strings(spec, "loadBalancerSourceRanges");
    // Upstream names the field with a capital L.
    let field_at = at.child("spec").child("LoadBalancerSourceRanges");
    let annotation_at = at
        .child("metadata")
        .child("annotations")
        .key(SOURCE_RANGES_ANNOTATION);
    let value = annotation(object);
    if !ranges.is_empty() {
        if !load_balancer {
            errors.forbidden(&field_at, ONLY_LOAD_BALANCER);
        }
        if release < SOURCE_RANGE_ITEMS_SINCE {
            if !ranges.iter().all(|r| parse_cidr(r.trim()).is_some()) {
                let shown = Value::from(format!("[{}]", ranges.join(" ")));
                errors.invalid(&field_at, Shown::Plain(&shown), list_message());
            }
            return;
        }
        for (i, range) in ranges.iter().enumerate() {
            let range = range.trim();
            if parse_cidr(range).is_none() {
                errors.invalid(
                    &field_at.index(i),
                    Shown::Plain(&Value::from(range)),
                    BAD_CIDR,
                );
            }
        }
    } else if let Some(value) = value {
        if !load_balancer {
            errors.forbidden(&annotation_at, ONLY_LOAD_BALANCER);
        }
        let trimmed = value.trim();
        if release < SOURCE_RANGE_ITEMS_SINCE {
            // An empty annotation reads as `0.0.0.0/0` (`GetLoadBalancerSourceRanges`).
            if !trimmed.is_empty() && !trimmed.split(',').all(|r| parse_cidr(r.trim()).is_some()) {
                errors.invalid(
                    &annotation_at,
                    Shown::Plain(&Value::from(value.as_str())),
                    list_message(),
                );
            }
            return;
        }
        let unchanged =
            release >= LEGACY_FIELDS_SINCE && old.and_then(annotation) == Some(value.clone());
        if unchanged || trimmed.is_empty() {
            return;
        }
        for range in trimmed.split(',').map(str::trim) {
            if parse_cidr(range).is_none() {
                errors.invalid(&annotation_at, Shown::Plain(&Value::from(range)), BAD_CIDR);
            }
        }
    }
}

/// The message of a bad source-range list before 1.31 (with its trailing space).
fn list_message() -> &'static str {
    "must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 "
}

/// `allocateLoadBalancerNodePorts` and `loadBalancerClass` (`validateLoadBalancerClassField`):
/// only on a LoadBalancer, the class a qualified name that an update of a LoadBalancer keeps.
fn load_balancer_fields(spec: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    if release < LOAD_BALANCER_FIELDS_SINCE {
        return;
    }
    let load_balancer = text(spec, "type") == LOAD_BALANCER;
    if is_set(spec, "allocateLoadBalancerNodePorts") && !load_balancer {
        errors.forbidden(
            &at.child("allocateLoadBalancerNodePorts"),
            ONLY_LOAD_BALANCER,
        );
    }
    if load_balancer && !is_set(spec, "allocateLoadBalancerNodePorts") {
        // Upstream reports it at the root, without `spec`.
        errors.required(&FieldPath::of("allocateLoadBalancerNodePorts"), "");
    }
    let class_at = at.child("loadBalancerClass");
    let class = spec.get("loadBalancerClass").unwrap_or(&Value::Null);
    if let Some(old) = old
        && load_balancer
        && text(old, "type") == LOAD_BALANCER
        && old.get("loadBalancerClass").unwrap_or(&Value::Null) != class
    {
        errors.invalid(&class_at, Shown::Plain(class), "may not change once set");
    }
    let Some(name) = class.as_str() else {
        return;
    };
    if !load_balancer {
        return errors.forbidden(&class_at, ONLY_LOAD_BALANCER);
    }
    for message in Format::QualifiedName.messages(name, release) {
        errors.invalid(&class_at, Shown::Plain(class), &message);
    }
}

/// `apiservice.ExternallyAccessible`: a NodePort or LoadBalancer, or a ClusterIP Service with
/// external IPs.
fn externally_accessible(spec: &Value) -> bool {
    match text(spec, "type") {
        NODE_PORT | LOAD_BALANCER => true,
        "ClusterIP" => !items(spec, "externalIPs").is_empty(),
        _ => false,
    }
}

/// `apiservice.NeedsHealthCheck`: a LoadBalancer with `externalTrafficPolicy: Local`.
fn needs_health_check(spec: &Value) -> bool {
    text(spec, "type") == LOAD_BALANCER && text(spec, "externalTrafficPolicy") == "Local"
}

/// The external and internal traffic policies, the health check node port and
/// `trafficDistribution`, as the release checks them.
fn traffic_policies(spec: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    if release < TRAFFIC_POLICY_SINCE {
        external_traffic_1_20(spec, at, errors);
    } else {
        external_traffic(spec, old, at, errors);
    }
    if release >= LOAD_BALANCER_FIELDS_SINCE {
        let path = at.child("internalTrafficPolicy");
        match spec.get("internalTrafficPolicy").filter(|p| !p.is_null()) {
            None if matches!(text(spec, "type"), NODE_PORT | LOAD_BALANCER | "ClusterIP") => {
                errors.required(&path, "");
            }
            Some(policy) if !matches!(policy.as_str(), Some("Cluster" | "Local")) => {
                errors.not_supported(&path, policy, &["Cluster", "Local"]);
            }
            _ => {}
        }
    }
    if release >= LEGACY_FIELDS_SINCE
        && let Some(value) = spec.get("trafficDistribution").filter(|v| !v.is_null())
    {
        // Upstream's order, not sorted.
        const SUPPORTED: [&str; 3] = ["PreferClose", "PreferSameZone", "PreferSameNode"];
        if !value.as_str().is_some_and(|v| SUPPORTED.contains(&v)) {
            errors.not_supported(&at.child("trafficDistribution"), value, &SUPPORTED);
        }
    }
}

/// 1.20's `validateServiceExternalTrafficFieldsValue` and the storage's
/// `ValidateServiceExternalTrafficFieldsCombination` (which upstream runs once the rest
/// passed; kapi reports them together).
fn external_traffic_1_20(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let policy = text(spec, "externalTrafficPolicy");
    let policy_at = at.child("externalTrafficPolicy");
    let port = number(spec, "healthCheckNodePort");
    let port_at = at.child("healthCheckNodePort");
    if !matches!(policy, "" | "Cluster" | "Local") {
        let detail = "ExternalTrafficPolicy must be empty, Cluster or Local";
        errors.invalid(&policy_at, Shown::Plain(&Value::from(policy)), detail);
    }
    if port < 0 {
        let detail = "HealthCheckNodePort must be not less than 0";
        errors.invalid(&port_at, Shown::Plain(&Value::from(port)), detail);
    }
    if !matches!(text(spec, "type"), NODE_PORT | LOAD_BALANCER) && !policy.is_empty() {
        let detail = "ExternalTrafficPolicy can only be set on NodePort and LoadBalancer service";
        errors.invalid(&policy_at, Shown::Plain(&Value::from(policy)), detail);
    }
    if !needs_health_check(spec) && port != 0 {
        let detail = "HealthCheckNodePort can only be set on LoadBalancer service with ExternalTrafficPolicy=Local";
        errors.invalid(&port_at, Shown::Plain(&Value::from(port)), detail);
    }
}

/// `validateServiceExternalTrafficPolicy` and, on an update,
/// `validateServiceExternalTrafficFieldsUpdate`.
fn external_traffic(spec: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let policy = text(spec, "externalTrafficPolicy");
    let policy_at = at.child("externalTrafficPolicy");
    if !externally_accessible(spec) {
        if !policy.is_empty() {
            let detail = "may only be set for externally-accessible services";
            errors.invalid(&policy_at, Shown::Plain(&Value::from(policy)), detail);
        }
    } else if policy.is_empty() {
        // The defaults fill it in (`SetDefaults_Service`), but for a write they ran on first.
        errors.required(&policy_at, "");
    } else if !matches!(policy, "Cluster" | "Local") {
        errors.not_supported(&policy_at, &Value::from(policy), &["Cluster", "Local"]);
    }
    let port = number(spec, "healthCheckNodePort");
    let port_at = at.child("healthCheckNodePort");
    if !needs_health_check(spec) {
        if port != 0 {
            let detail = "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'";
            errors.invalid(&port_at, Shown::Plain(&Value::from(port)), detail);
        }
    } else if port == 0 {
        // A new Service's port is allocated after validation here, before it upstream.
        if old.is_some() {
            errors.required(&port_at, "");
        }
    } else {
        port_number(port, &port_at, errors);
    }
    if let Some(old) = old
        && needs_health_check(old)
        && needs_health_check(spec)
        && number(old, "healthCheckNodePort") != port
    {
        errors.forbidden(&port_at, "field is immutable");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{Named, lines};
    use super::*;

    /// `<field>: <message>` of `named` on `new` (and `old`) in release 1.`minor`, checked at
    /// the root as the server walks a Service.
    fn messages(named: Named, new: &Value, old: Option<&Value>, minor: u16) -> Vec<String> {
        lines(minor, |errors| {
            named.check(new, old, &FieldPath::root(), errors)
        })
    }

    fn service(spec: Value) -> Value {
        json!({"metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn load_balancer_status_names_valid_ingress_points() {
        // ValidateServiceStatusUpdate/ValidateLoadBalancerStatus: "must be a valid IP address"
        // (IsValidIPForLegacyField's longer text from 1.33); from 1.29 only on a LoadBalancer
        // (AllowServiceLBStatusOnNonLB off) and `ipMode` (LoadBalancerIPMode) beside an IP.
        let status = |kind: &str| {
            json!({"spec": {"type": kind}, "status": {"loadBalancer": {"ingress": [
                {"ip": "1.2.3", "ipMode": "Direct"},
                {"hostname": "10.0.0.1", "ipMode": "VIP"},
            ]}}})
        };
        let old = status("LoadBalancer");
        assert_eq!(
            messages(
                Named::ServiceStatus,
                &status("LoadBalancer"),
                Some(&old),
                28
            ),
            [
                "status.loadBalancer.ingress[0].ip: Invalid value: \"1.2.3\": must be a valid IP address",
                "status.loadBalancer.ingress[1].hostname: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address",
            ]
        );
        assert_eq!(
            messages(
                Named::ServiceStatus,
                &status("LoadBalancer"),
                Some(&old),
                34
            ),
            [
                "status.loadBalancer.ingress[0].ip: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "status.loadBalancer.ingress[0].ipMode: Unsupported value: \"Direct\": supported values: \"Proxy\", \"VIP\"",
                "status.loadBalancer.ingress[1].ipMode: Forbidden: may not be specified when `ip` is not set",
                "status.loadBalancer.ingress[1].hostname: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address",
            ]
        );
        assert_eq!(
            messages(Named::ServiceStatus, &status("ClusterIP"), Some(&old), 36),
            [
                "status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"
            ]
        );
        assert_eq!(
            messages(Named::ServiceStatus, &status("ClusterIP"), Some(&old), 28).len(),
            2
        );
    }

    #[test]
    fn an_ingress_ip_has_a_mode_from_1_30() {
        // ValidateLoadBalancerStatus with LoadBalancerIPMode on: an IP needs its mode, which
        // SetDefaults_Service fills in as VIP on a LoadBalancer before validation.
        let status = json!({"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {
            "ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example"}]}}});
        assert_eq!(
            messages(Named::ServiceStatus, &status, Some(&status), 34),
            [
                "status.loadBalancer.ingress[0].ipMode: Required value: must be specified when `ip` is set"
            ]
        );
        assert!(messages(Named::ServiceStatus, &status, Some(&status), 28).is_empty());
    }

    #[test]
    fn ports_are_unique_by_protocol_and_number() {
        // ValidateService's duplicate Ports and NodePorts, keyed by (protocol, port).
        let spec = json!({"type": "NodePort", "ports": [
            {"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30001},
            {"name": "b", "port": 80, "protocol": "UDP", "nodePort": 30001},
            {"name": "c", "port": 80, "protocol": "TCP", "nodePort": 30001},
        ]});
        let spec_at = FieldPath::of("spec");
        let check = |minor| {
            lines(minor, |e| {
                Named::ServicePorts.check(&spec, None, &spec_at, e)
            })
        };
        assert_eq!(
            check(28),
            [
                "spec.ports[2].nodePort: Duplicate value: 30001",
                "spec.ports[2]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}",
            ]
        );
        assert_eq!(
            check(34)[1],
            "spec.ports[2]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}"
        );
    }

    #[test]
    fn a_load_balancer_may_not_expose_the_kubelet_port_before_1_31() {
        // ValidateService, `ports.KubeletPort`: read at 1.28, gone at 1.31.
        let spec = json!({"type": "LoadBalancer", "ports": [{"port": 10250, "protocol": "TCP"}]});
        let check = |minor| {
            lines(minor, |e| {
                Named::ServicePorts.check(&spec, None, &FieldPath::of("spec"), e)
            })
        };
        assert_eq!(
            check(20),
            [
                "spec.ports[0]: Invalid value: 10250: may not expose port 10250 externally since it is used by kubelet"
            ]
        );
        assert!(check(34).is_empty());
    }

    #[test]
    fn external_names_need_a_name_and_no_cluster_ips() {
        // ValidateService, `case core.ServiceTypeExternalName`.
        let bad = service(
            json!({"type": "ExternalName", "externalName": "Bad_Name.", "clusterIP": "10.0.0.1",
            "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None"}),
        );
        let found = messages(Named::Service, &bad, None, 28);
        assert_eq!(
            found[0],
            "spec.clusterIPs: Forbidden: may not be set for ExternalName services"
        );
        assert_eq!(
            found[1],
            "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services"
        );
        assert!(
            found[2].starts_with(
                "spec.externalName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
            ),
            "{found:?}"
        );
        // 1.20 drops the family fields before validating.
        assert_eq!(messages(Named::Service, &bad, None, 20).len(), 2);
        let missing = service(json!({"type": "ExternalName", "externalName": "."}));
        assert_eq!(
            messages(Named::Service, &missing, None, 34),
            ["spec.externalName: Required value"]
        );
        let ok = service(json!({"type": "ExternalName", "externalName": "db.example.com."}));
        assert!(messages(Named::Service, &ok, None, 34).is_empty());
    }

    #[test]
    fn headless_services_are_not_node_ports() {
        let spec = json!({"type": "NodePort", "clusterIP": "None", "externalTrafficPolicy": "Cluster",
            "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(spec), None, 34),
            [
                "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"
            ]
        );
    }

    #[test]
    fn cluster_ip_fields_are_checked_as_fields() {
        // ValidateServiceClusterIPsRelatedFields.
        let spec = json!({"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.2", "10.0.0.3", "x"],
            "ipFamilies": ["IPv4", "IPv4", "IPv5"], "ipFamilyPolicy": "Both", "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(spec.clone()), None, 28),
            [
                "spec.clusterIPs: Invalid value: []string{\"10.0.0.2\", \"10.0.0.3\", \"x\"}: element [0] must match clusterIP",
                "spec.ipFamilies[1]: Duplicate value: \"IPv4\"",
                "spec.ipFamilies[2]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\"",
                "spec.ipFamilyPolicy: Unsupported value: \"Both\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"",
                "spec.clusterIPs[2]: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "spec.clusterIPs: Invalid value: []string{\"10.0.0.2\", \"10.0.0.3\", \"x\"}: may only hold up to 2 values",
            ]
        );
        assert_eq!(
            messages(Named::Service, &service(spec), None, 34)[0],
            "spec.clusterIPs: Invalid value: [\"10.0.0.2\",\"10.0.0.3\",\"x\"]: first value must match `clusterIP`"
        );
        let same_family = json!({"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1", "10.0.0.2"],
            "ipFamilies": ["IPv6"], "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(same_family), None, 34),
            [
                "spec.clusterIPs: Invalid value: [\"10.0.0.1\",\"10.0.0.2\"]: may specify no more than one IP for each IP family",
                "spec.clusterIPs[0]: Invalid value: \"10.0.0.1\": expected an IPv6 value as indicated by `ipFamilies[0]`",
            ]
        );
        // An old client's `clusterIP` alone is the list (NormalizeClusterIPs).
        let old_client = json!({"clusterIP": "10.0.0.1", "internalTrafficPolicy": "Cluster"});
        assert!(messages(Named::Service, &service(old_client), None, 34).is_empty());
    }

    #[test]
    fn external_ips_are_valid_and_not_special() {
        // IsValidIP, then ValidateNonSpecialIP (ValidateEndpointIP from 1.34).
        let spec = json!({"externalIPs": ["1.2.3", "0.0.0.0", "127.0.0.1", "fe80::1", "224.0.0.1", "8.8.8.8"], "type": "ClusterIP",
            "internalTrafficPolicy": "Cluster", "externalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(spec.clone()), None, 28),
            [
                "spec.externalIPs[0]: Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "spec.externalIPs[1]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
                "spec.externalIPs[2]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "spec.externalIPs[3]: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "spec.externalIPs[4]: Invalid value: \"224.0.0.1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
            ]
        );
        assert_eq!(
            messages(Named::Service, &service(spec), None, 20)[2],
            "spec.externalIPs[2]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8)"
        );
    }

    #[test]
    fn source_ranges_belong_to_load_balancers() {
        // ValidateService's SourceRange field and annotation: one message for the list before
        // 1.31, one per bad range after.
        let spec = json!({"type": "ClusterIP", "loadBalancerSourceRanges": ["10.0.0.0/8", " bad "],
            "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(spec.clone()), None, 28),
            [
                "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.LoadBalancerSourceRanges: Invalid value: \"[10.0.0.0/8  bad ]\": must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 ",
            ]
        );
        assert_eq!(
            messages(Named::Service, &service(spec), None, 34)[1],
            "spec.LoadBalancerSourceRanges[1]: Invalid value: \"bad\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
        );
        let annotated = json!({"metadata": {"annotations": {SOURCE_RANGES_ANNOTATION: "10.0.0.0/8,x"}},
            "spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true, "externalTrafficPolicy": "Cluster",
                "internalTrafficPolicy": "Cluster"}});
        assert_eq!(
            messages(Named::Service, &annotated, None, 34),
            [
                "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: \"x\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            ]
        );
        // An update that leaves the annotation as it was is not held to it (1.34).
        assert!(messages(Named::Service, &annotated, Some(&annotated), 34).is_empty());
        assert_eq!(
            messages(Named::Service, &annotated, Some(&annotated), 28).len(),
            1
        );
    }

    #[test]
    fn client_ip_affinity_has_a_bounded_timeout() {
        // validateClientIPAffinityConfig, validateAffinityTimeout.
        let spec = |timeout: i64| {
            json!({"sessionAffinity": "ClientIP", "internalTrafficPolicy": "Cluster",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": timeout}}})
        };
        assert_eq!(
            messages(Named::Service, &service(spec(86401)), None, 34),
            [
                "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 86401: must be greater than 0 and less than 86400"
            ]
        );
        assert!(messages(Named::Service, &service(spec(86400)), None, 34).is_empty());
        let none = json!({"sessionAffinity": "None", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 1}}});
        assert_eq!(
            messages(Named::Service, &service(none.clone()), None, 20),
            [
                "spec.sessionAffinityConfig: Forbidden: must not be set when session affinity is None"
            ]
        );
        assert!(
            messages(Named::Service, &service(none), None, 34)
                .iter()
                .all(|m| !m.contains("sessionAffinity"))
        );
    }

    #[test]
    fn load_balancer_fields_only_on_load_balancers() {
        // ValidateService's allocateLoadBalancerNodePorts, validateLoadBalancerClassField.
        let spec = json!({"type": "ClusterIP", "allocateLoadBalancerNodePorts": false, "loadBalancerClass": "a/b",
            "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(spec.clone()), None, 28),
            [
                "spec.allocateLoadBalancerNodePorts: Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer'",
            ]
        );
        // 1.20 has no class and drops the allocation flag.
        assert!(messages(Named::Service, &service(spec), None, 20).is_empty());
        let lb = |class: &str| {
            service(
                json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true,
            "loadBalancerClass": class, "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster"}),
            )
        };
        assert_eq!(
            messages(
                Named::Service,
                &lb("example.com/b"),
                Some(&lb("example.com/a")),
                34
            ),
            ["spec.loadBalancerClass: Invalid value: \"example.com/b\": may not change once set"]
        );
        assert!(
            messages(Named::Service, &lb("x/y/z"), None, 28)[0]
                .starts_with("spec.loadBalancerClass: Invalid value: \"x/y/z\": a qualified name")
        );
    }

    #[test]
    fn external_traffic_policy_follows_the_release() {
        // 1.20: validateServiceExternalTrafficFieldsValue and
        // ValidateServiceExternalTrafficFieldsCombination; later validateServiceExternalTrafficPolicy.
        let spec = json!({"type": "ClusterIP", "externalTrafficPolicy": "Local", "healthCheckNodePort": 30000,
            "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(spec.clone()), None, 20),
            [
                "spec.externalTrafficPolicy: Invalid value: \"Local\": ExternalTrafficPolicy can only be set on NodePort and LoadBalancer service",
                "spec.healthCheckNodePort: Invalid value: 30000: HealthCheckNodePort can only be set on LoadBalancer service with ExternalTrafficPolicy=Local",
            ]
        );
        assert_eq!(
            messages(Named::Service, &service(spec), None, 28),
            [
                "spec.externalTrafficPolicy: Invalid value: \"Local\": may only be set for externally-accessible services",
                "spec.healthCheckNodePort: Invalid value: 30000: may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ]
        );
        // A ClusterIP Service with external IPs is externally accessible: its policy, which
        // the defaults fill in from 1.28, is required.
        let external = json!({"type": "ClusterIP", "externalIPs": ["203.0.113.1"],
            "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(external.clone()), None, 28),
            ["spec.externalTrafficPolicy: Required value"]
        );
        assert!(messages(Named::Service, &service(external), None, 20).is_empty());
        let bogus = json!({"type": "NodePort", "externalTrafficPolicy": "Nowhere", "internalTrafficPolicy": "Everywhere"});
        assert_eq!(
            messages(Named::Service, &service(bogus.clone()), None, 20),
            [
                "spec.externalTrafficPolicy: Invalid value: \"Nowhere\": ExternalTrafficPolicy must be empty, Cluster or Local"
            ]
        );
        assert_eq!(
            messages(Named::Service, &service(bogus), None, 36),
            [
                "spec.externalTrafficPolicy: Unsupported value: \"Nowhere\": supported values: \"Cluster\", \"Local\"",
                "spec.internalTrafficPolicy: Unsupported value: \"Everywhere\": supported values: \"Cluster\", \"Local\"",
            ]
        );
        // validateServiceExternalTrafficFieldsUpdate.
        let local = |port: i64| {
            service(
                json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true,
            "externalTrafficPolicy": "Local", "healthCheckNodePort": port, "internalTrafficPolicy": "Cluster"}),
            )
        };
        assert_eq!(
            messages(Named::Service, &local(30001), Some(&local(30000)), 28),
            ["spec.healthCheckNodePort: Forbidden: field is immutable"]
        );
        assert_eq!(
            messages(Named::Service, &local(70000), None, 34),
            [
                "spec.healthCheckNodePort: Invalid value: 70000: must be between 1 and 65535, inclusive"
            ]
        );
    }

    #[test]
    fn traffic_distribution_and_topology_mode() {
        // validateServiceTrafficDistribution (PreferSameTrafficDistribution on from 1.34).
        let spec = json!({"trafficDistribution": "Anywhere", "internalTrafficPolicy": "Cluster"});
        assert_eq!(
            messages(Named::Service, &service(spec.clone()), None, 34),
            [
                "spec.trafficDistribution: Unsupported value: \"Anywhere\": supported values: \"PreferClose\", \"PreferSameZone\", \"PreferSameNode\""
            ]
        );
        assert!(messages(Named::Service, &service(spec), None, 28).is_empty());
        let annotated = json!({"metadata": {"annotations": {TOPOLOGY_MODE: "Auto", TOPOLOGY_HINTS: "auto"}},
            "spec": {"internalTrafficPolicy": "Cluster"}});
        assert_eq!(
            messages(Named::Service, &annotated, None, 28),
            [
                "metadata.annotations[service.kubernetes.io/topology-mode]: Invalid value: \"Auto\": must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified"
            ]
        );
    }

    #[test]
    fn selectors_hold_labels() {
        let spec = json!({"selector": {"app": "bad value"}, "internalTrafficPolicy": "Cluster"});
        let found = messages(Named::Service, &service(spec), None, 34);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("spec.selector: Invalid value: \"bad value\": a valid label"),
            "{found:?}"
        );
    }
}
