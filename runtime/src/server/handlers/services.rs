//! What a write of a core `v1` Service does to its addresses, as kube-apiserver's Service
//! storage does (`pkg/registry/core/service/storage/alloc.go` and `rest.go`, the strategy's
//! `dropTypeDependentFields` and `NormalizeClusterIPs`, and the cluster-IP rules of
//! `pkg/apis/core/validation`): the IP family fields filled in, a cluster IP allocated from the
//! server's range (or the requested one reserved), node ports allocated for `NodePort` and
//! `LoadBalancer` Services, what an update leaves out patched in from the stored Service,
//! what a type change no longer needs dropped, and the cluster IP kept from changing.
//!
//! Each step is one named function. The values are reserved in `state::service_allocations`
//! for as long as the returned [`Reservation`] lives, which the caller keeps until its write
//! is done: the stored Service holds them from then on, and a failed write or a dry run gives
//! them back.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde_json::{Map, Value, json};

use crate::meta::{CauseType, StatusCause};
use crate::{KubeVersion, ResourceInfo};

use crate::server::Call;
use crate::server::handlers::object::refuse;
use crate::server::http::error::ApiError;
use crate::server::state::service_allocations::{Refusal, Reservation, holding_of_service};
use crate::server::state::service_ranges::family_of;

const EXTERNAL_NAME: &str = "ExternalName";
/// The first release with `ipFamilies` and `ipFamilyPolicy` on by default (IPv6DualStack
/// beta); before it, as upstream's `dropServiceDisabledFields`, they are dropped.
const DUAL_STACK_FIELDS: KubeVersion = KubeVersion::new(1, 21);
const NONE: &str = "None";

/// Whether the kind is the core Service.
pub(crate) fn is_service_kind(info: &ResourceInfo) -> bool {
    info.gvk.group.is_empty() && info.plural == "services"
}

/// A create: fills the IP family fields and allocates the cluster IP and node ports
/// (upstream's `allocateCreate`). `None` for kinds other than Service.
pub(crate) fn allocate_on_create<'a>(
    call: &'a Call,
    object: &mut Value,
) -> Result<Option<Reservation<'a>>, ApiError> {
    if !is_service_kind(call.info()) {
        return Ok(None);
    }
    let name = object_name(object);
    let mut reservation = call.state.storage.services().reserve();
    let Some(spec) = spec_mut(object) else {
        return Ok(Some(reservation));
    };
    normalize_cluster_ips(spec, None);
    let mut causes = ip_family_fields(call, spec, None);
    causes.extend(node_ports_forbidden(spec));
    refuse(call, &name, causes)?;
    if needs_cluster_ip(spec) && !is_headless(spec) {
        allocate_cluster_ip(call, &name, spec, &mut reservation)?;
    }
    allocate_node_ports(call, &name, spec, None, &mut reservation)?;
    Ok(Some(reservation))
}

/// An update of the main resource from `current` to `next` (upstream's `PrepareForUpdate`
/// type-dependent drops, `patchAllocatedValues`, `NormalizeClusterIPs`, the cluster IP
/// immutability of `ValidateServiceUpdate` and `allocateUpdate`). `None` for other kinds.
pub(crate) fn allocate_on_update<'a>(
    call: &'a Call,
    current: &Value,
    next: &mut Value,
) -> Result<Option<Reservation<'a>>, ApiError> {
    if !is_service_kind(call.info()) {
        return Ok(None);
    }
    let name = object_name(next);
    let old = current
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut reservation = call.state.storage.services().reserve();
    let Some(spec) = spec_mut(next) else {
        return Ok(Some(reservation));
    };
    drop_type_dependent_fields(spec, &old);
    patch_allocated_values(spec, &old);
    normalize_cluster_ips(spec, Some(&old));
    let mut causes = cluster_ips_unchanged(spec, &old);
    causes.extend(node_ports_forbidden(spec));
    refuse(call, &name, causes)?;
    refuse(call, &name, ip_family_fields(call, spec, Some(&old)))?;
    // A Service that needs a cluster IP and has none gets one: one that was an ExternalName,
    // or one stored before the server allocated them.
    let has_ip = cluster_ips(spec).first().is_some_and(|ip| !ip.is_empty());
    let held = holding_of_service(&json!({"spec": old}));
    if needs_cluster_ip(spec) && !is_headless(spec) {
        let requested = cluster_ips(spec).first().cloned().unwrap_or_default();
        let already = requested
            .parse::<IpAddr>()
            .is_ok_and(|ip| held.ips.contains(&ip));
        if !has_ip || !already {
            allocate_cluster_ip(call, &name, spec, &mut reservation)?;
        }
    }
    allocate_node_ports(call, &name, spec, Some(&held.ports), &mut reservation)?;
    Ok(Some(reservation))
}

fn object_name(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// The object's `spec`, made an object if it is not one; `None` when the object is not an
/// object (the codec let nothing such through).
fn spec_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let spec = object
        .as_object_mut()?
        .entry("spec")
        .or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    spec.as_object_mut()
}

fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

/// Every type but `ExternalName` has a cluster IP (upstream's `needsClusterIP`).
fn needs_cluster_ip(spec: &Map<String, Value>) -> bool {
    service_type(spec) != EXTERNAL_NAME
}

/// `NodePort` and `LoadBalancer` Services have node ports (upstream's `needsNodePort`).
fn needs_node_ports(spec: &Map<String, Value>) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

/// A `LoadBalancer` with `externalTrafficPolicy: Local` has a health check node port
/// (upstream's `NeedsHealthCheck`).
fn needs_health_check_port(spec: &Map<String, Value>) -> bool {
    service_type(spec) == "LoadBalancer"
        && spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
}

/// Whether new node ports are picked: not for a `LoadBalancer` with
/// `allocateLoadBalancerNodePorts: false` (upstream's `shouldAllocateNodePorts`).
fn allocates_node_ports(spec: &Map<String, Value>) -> bool {
    match service_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&Value::Bool(false)),
        _ => false,
    }
}

fn is_headless(spec: &Map<String, Value>) -> bool {
    spec.get("clusterIP").and_then(Value::as_str) == Some(NONE)
        || cluster_ips(spec).first().map(String::as_str) == Some(NONE)
}

fn cluster_ips(spec: &Map<String, Value>) -> Vec<String> {
    string_list(spec.get("clusterIPs"))
}

fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn cluster_ip(spec: &Map<String, Value>) -> &str {
    spec.get("clusterIP").and_then(Value::as_str).unwrap_or("")
}

/// Go's `%#v` of a `[]string`, as upstream's field errors print `clusterIPs`.
fn go_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| Value::from(s.as_str()).to_string())
        .collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `FieldValueInvalid` on `clusterIPs` with its Go rendering.
fn invalid_cluster_ips(field: &str, ips: &[String], detail: &str) -> StatusCause {
    StatusCause::new(
        CauseType::FieldValueInvalid,
        field,
        format!("Invalid value: {}: {detail}", go_strings(ips)),
    )
}

/// Upstream's `NormalizeClusterIPs`: an old client sends only `clusterIP`, a newer one both.
fn normalize_cluster_ips(spec: &mut Map<String, Value>, old: Option<&Map<String, Value>>) {
    let ip = cluster_ip(spec).to_owned();
    let ips = cluster_ips(spec);
    let Some(old) = old else {
        if !ip.is_empty() && ips.is_empty() {
            spec.insert("clusterIPs".into(), json!([ip]));
        }
        return;
    };
    let old_ip = cluster_ip(old).to_owned();
    let old_ips = cluster_ips(old);
    if !old_ips.is_empty() && ips.is_empty() && old_ip == ip {
        spec.insert("clusterIPs".into(), json!(old_ips));
    }
    // A Service stored with `clusterIP` alone (by a kapi that did not allocate) is read as an
    // old client's create.
    if old_ips.is_empty() && ips.is_empty() && !ip.is_empty() {
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    if old_ip != ip {
        let same_ips = cluster_ips(spec) == old_ips;
        if !old_ip.is_empty() && ip.is_empty() {
            if same_ips {
                spec.remove("clusterIPs");
            }
        } else if same_ips {
            spec.insert("clusterIPs".into(), json!([ip]));
        }
    }
}

/// Upstream's `dropTypeDependentFields`: what the old type needed and the new one does not is
/// cleared, when the client left it as it was.
fn drop_type_dependent_fields(spec: &mut Map<String, Value>, old: &Map<String, Value>) {
    if needs_cluster_ip(old) && !needs_cluster_ip(spec) {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if spec.get(field) == old.get(field) {
                spec.remove(field);
            }
        }
    }
    if needs_node_ports(old) && !needs_node_ports(spec) && node_ports(spec) == node_ports(old) {
        for port in ports_mut(spec) {
            port.remove("nodePort");
        }
    }
    if needs_health_check_port(old)
        && !needs_health_check_port(spec)
        && spec.get("healthCheckNodePort") == old.get("healthCheckNodePort")
    {
        spec.remove("healthCheckNodePort");
    }
    if service_type(old) == "LoadBalancer"
        && service_type(spec) != "LoadBalancer"
        && spec.get("allocateLoadBalancerNodePorts") == old.get("allocateLoadBalancerNodePorts")
    {
        spec.remove("allocateLoadBalancerNodePorts");
    }
    // A class the update left as it was goes with the LoadBalancer type.
    if service_type(old) == "LoadBalancer"
        && service_type(spec) != "LoadBalancer"
        && spec.get("loadBalancerClass").is_some_and(|c| !c.is_null())
        && spec.get("loadBalancerClass") == old.get("loadBalancerClass")
    {
        spec.remove("loadBalancerClass");
    }
    if externally_accessible(old)
        && !externally_accessible(spec)
        && spec.get("externalTrafficPolicy") == old.get("externalTrafficPolicy")
    {
        spec.remove("externalTrafficPolicy");
    }
}

/// Upstream's `ExternallyAccessible`: a NodePort or LoadBalancer, or a ClusterIP Service with
/// external IPs.
fn externally_accessible(spec: &Map<String, Value>) -> bool {
    match service_type(spec) {
        "NodePort" | "LoadBalancer" => true,
        "ClusterIP" => spec
            .get("externalIPs")
            .and_then(Value::as_array)
            .is_some_and(|ips| !ips.is_empty()),
        _ => false,
    }
}

/// Upstream's `patchAllocatedValues`: what the server allocated and the update left out (a
/// PUT of an object read before, an apply that never named it) comes from the stored Service.
fn patch_allocated_values(spec: &mut Map<String, Value>, old: &Map<String, Value>) {
    if needs_cluster_ip(old) && needs_cluster_ip(spec) {
        if cluster_ip(spec).is_empty()
            && let Some(ip) = old.get("clusterIP")
        {
            spec.insert("clusterIP".into(), ip.clone());
        }
        if cluster_ips(spec).is_empty()
            && let Some(ips) = old
                .get("clusterIPs")
                .filter(|ips| !string_list(Some(ips)).is_empty())
        {
            spec.insert("clusterIPs".into(), ips.clone());
        }
    }
    if needs_node_ports(old) && needs_node_ports(spec) {
        let old_ports: BTreeSet<i64> = node_ports(old).into_iter().flatten().collect();
        let new_ports: BTreeSet<i64> = node_ports(spec).into_iter().flatten().collect();
        let used: BTreeSet<i64> = old_ports.intersection(&new_ports).copied().collect();
        let by_name: BTreeMap<String, i64> = old
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| Some((port_name(p), p.get("nodePort")?.as_i64()?)))
            .collect();
        for port in ports_mut(spec) {
            if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) == 0
                && let Some(old) = by_name.get(&port_name(&Value::Object(port.clone())))
                && !used.contains(old)
            {
                port.insert("nodePort".into(), Value::from(*old));
            }
        }
    }
    if needs_health_check_port(old)
        && needs_health_check_port(spec)
        && spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
        && let Some(port) = old.get("healthCheckNodePort")
    {
        spec.insert("healthCheckNodePort".into(), port.clone());
    }
}

fn port_name(port: &Value) -> String {
    port.get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// Each port's `nodePort` (`None` where unset or 0).
fn node_ports(spec: &Map<String, Value>) -> Vec<Option<i64>> {
    spec.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            p.get("nodePort")
                .and_then(Value::as_i64)
                .filter(|n| *n != 0)
        })
        .collect()
}

fn ports_mut(spec: &mut Map<String, Value>) -> impl Iterator<Item = &mut Map<String, Value>> {
    spec.get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// Upstream's `validateUpgradeDowngradeClusterIPs` for a single-stack cluster: the cluster
/// IPs a Service has may not change, nor the primary one be removed.
fn cluster_ips_unchanged(spec: &Map<String, Value>, old: &Map<String, Value>) -> Vec<StatusCause> {
    if !needs_cluster_ip(spec) || !needs_cluster_ip(old) || (is_headless(spec) && is_headless(old))
    {
        return Vec::new();
    }
    // A Service stored with `clusterIP` alone holds that one.
    let before = match cluster_ips(old) {
        ips if ips.is_empty() && !cluster_ip(old).is_empty() => vec![cluster_ip(old).to_owned()],
        ips => ips,
    };
    let after = cluster_ips(spec);
    let mut causes = Vec::new();
    if before.len() == after.len() {
        for (i, ip) in before.iter().enumerate() {
            if after.get(i) != Some(ip) {
                causes.push(invalid_cluster_ips(
                    &format!("spec.clusterIPs[{i}]"),
                    &after,
                    "may not change once set",
                ));
            }
        }
    } else if before.len() > after.len() && after.is_empty() {
        causes.push(StatusCause::required(
            "spec.clusterIPs[0]",
            "primary clusterIP can not be unset",
        ));
    } else if let (Some(a), Some(b)) = (before.first(), after.first())
        && a != b
    {
        causes.push(invalid_cluster_ips(
            "spec.clusterIPs[0]",
            &after,
            "may not change once set",
        ));
    }
    causes
}

/// A `nodePort` on a Service without node ports (upstream's `ValidateService`).
fn node_ports_forbidden(spec: &Map<String, Value>) -> Vec<StatusCause> {
    if needs_node_ports(spec) {
        return Vec::new();
    }
    let kind = service_type(spec).to_owned();
    node_ports(spec)
        .iter()
        .enumerate()
        .filter(|(_, port)| port.is_some())
        .map(|(i, _)| {
            StatusCause::forbidden(
                format!("spec.ports[{i}].nodePort"),
                &format!("may not be used when `type` is '{kind}'"),
            )
        })
        .collect()
}

/// Upstream's `initIPFamilyFields` on a single-stack cluster: `ipFamilyPolicy` (the old one,
/// else `RequireDualStack` for a headless Service without selector, else `SingleStack`) and
/// `ipFamilies` (the cluster's family; both families for a headless Service whose policy is
/// not single-stack), with the errors of a family or policy the cluster does not have.
fn ip_family_fields(
    call: &Call,
    spec: &mut Map<String, Value>,
    old: Option<&Map<String, Value>>,
) -> Vec<StatusCause> {
    if !needs_cluster_ip(spec) {
        return Vec::new();
    }
    if call.state.kube_version < DUAL_STACK_FIELDS {
        drop_dual_stack_fields(spec, old);
        return Vec::new();
    }
    let cidr = call.state.storage.services().cidr();
    let family = cidr.family();
    let headless_without_selector = is_headless(spec)
        && spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        let policy = match old.and_then(|old| old.get("ipFamilyPolicy")) {
            Some(policy) if !policy.is_null() => policy.clone(),
            _ if headless_without_selector => Value::from("RequireDualStack"),
            _ => Value::from("SingleStack"),
        };
        spec.insert("ipFamilyPolicy".into(), policy);
    }
    let policy = spec
        .get("ipFamilyPolicy")
        .and_then(Value::as_str)
        .unwrap_or("SingleStack")
        .to_owned();
    let mut families = string_list(spec.get("ipFamilies"));
    let ips = cluster_ips(spec);
    let mut causes = Vec::new();
    for (i, ip) in ips.iter().enumerate() {
        if ip == NONE || ip.is_empty() {
            break;
        }
        let Ok(parsed) = ip.parse::<IpAddr>() else {
            causes.push(StatusCause::invalid(
                format!("spec.clusterIPs[{i}]"),
                &Value::from(ip.as_str()),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
            continue;
        };
        if i >= families.len() {
            if family_of(parsed) == family {
                families.push(family.to_owned());
            } else {
                causes.push(invalid_cluster_ips(
                    &format!("spec.clusterIPs[{i}]"),
                    &ips,
                    &format!("{} is not configured on this cluster", family_of(parsed)),
                ));
            }
        }
    }
    if policy == "SingleStack" && ips.len() == 2 {
        causes.push(StatusCause::invalid(
            "spec.ipFamilyPolicy",
            &Value::from(policy.as_str()),
            "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
        ));
    }
    if !causes.is_empty() {
        return causes;
    }
    if headless_without_selector {
        if families.is_empty() {
            families.push(family.to_owned());
        }
        if families.len() < 2 && policy != "SingleStack" {
            let other = if families[0] == "IPv4" {
                "IPv6"
            } else {
                "IPv4"
            };
            families.push(other.to_owned());
        }
        spec.insert("ipFamilies".into(), json!(families));
        return causes;
    }
    if policy == "RequireDualStack" {
        causes.push(StatusCause::invalid(
            "spec.ipFamilyPolicy",
            &Value::from(policy.as_str()),
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, asked) in families.iter().enumerate() {
        if asked != family {
            causes.push(StatusCause::invalid(
                format!("spec.ipFamilies[{i}]"),
                &Value::from(asked.as_str()),
                "not configured on this cluster",
            ));
        }
    }
    if families.is_empty() {
        families.push(family.to_owned());
    }
    spec.insert("ipFamilies".into(), json!(families));
    causes
}

/// Upstream's `dropServiceDisabledFields` with IPv6DualStack off (1.20): the family fields
/// and a second cluster IP go, unless the stored Service used them.
fn drop_dual_stack_fields(spec: &mut Map<String, Value>, old: Option<&Map<String, Value>>) {
    let in_use = old.is_some_and(|old| {
        old.get("ipFamilies").is_some()
            || old.get("ipFamilyPolicy").is_some()
            || cluster_ips(old).len() > 1
    });
    if in_use {
        return;
    }
    spec.remove("ipFamilies");
    spec.remove("ipFamilyPolicy");
    if let Some(ips) = spec.get_mut("clusterIPs").and_then(Value::as_array_mut) {
        ips.truncate(1);
    }
}

/// Reserves the requested cluster IP, or the next free one, and writes `clusterIP` and
/// `clusterIPs` (upstream's `allocIPs`).
fn allocate_cluster_ip(
    call: &Call,
    name: &str,
    spec: &mut Map<String, Value>,
    reservation: &mut Reservation<'_>,
) -> Result<(), ApiError> {
    let ips = cluster_ips(spec);
    let requested = ips.first().filter(|ip| !ip.is_empty());
    let ip = match requested {
        Some(text) => {
            let refused = |refusal: Refusal| {
                invalid_cluster_ips(
                    "spec.clusterIPs",
                    &ips,
                    &format!("failed to allocate IP {text}: {refusal}"),
                )
            };
            let parsed = text.parse::<IpAddr>().map_err(|_| {
                ApiError::internal(format!("cluster IP {text:?} passed validation"))
            })?;
            match reservation.ip(Some(parsed)) {
                Ok(ip) => ip,
                Err(refusal) => return refuse(call, name, vec![refused(refusal)]),
            }
        }
        None => reservation
            .ip(None)
            .map_err(|e| ApiError::internal(format!("failed to allocate a serviceIP: {e}")))?,
    };
    let ip = ip.to_string();
    spec.insert("clusterIP".into(), Value::from(ip.as_str()));
    let mut all = ips;
    match all.first_mut() {
        Some(first) => *first = ip,
        None => all.push(ip),
    }
    spec.insert("clusterIPs".into(), json!(all));
    Ok(())
}

/// Reserves node ports for a `NodePort` or `LoadBalancer` Service: a requested one unless the
/// stored Service (`held`) has it already, a new one for each port without (ports with the
/// same number share one on create, as upstream's `initNodePorts`), and the health check port.
fn allocate_node_ports(
    call: &Call,
    name: &str,
    spec: &mut Map<String, Value>,
    held: Option<&Vec<u16>>,
    reservation: &mut Reservation<'_>,
) -> Result<(), ApiError> {
    if !needs_node_ports(spec) {
        return Ok(());
    }
    let allocate_new = allocates_node_ports(spec);
    let is_held =
        |port: i64| held.is_some_and(|held| u16::try_from(port).is_ok_and(|p| held.contains(&p)));
    let mut taken_here: BTreeMap<i64, i64> = BTreeMap::new();
    let mut reserved: BTreeSet<i64> = BTreeSet::new();
    let numbers: Vec<i64> = spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| p.get("port").and_then(Value::as_i64).unwrap_or(0))
        .collect();
    let requested = node_ports(spec);
    let mut chosen: Vec<Option<i64>> = Vec::with_capacity(requested.len());
    for (i, asked) in requested.iter().enumerate() {
        let port = match asked {
            Some(asked) => {
                if !is_held(*asked) && reserved.insert(*asked) {
                    reservation
                        .port(Some(*asked))
                        .map_err(|refusal| node_port_refused(call, name, i, *asked, &refusal))?;
                }
                Some(*asked)
            }
            None if !allocate_new => None,
            None => match (held.is_none())
                .then(|| taken_here.get(&numbers[i]).copied())
                .flatten()
            {
                Some(shared) => Some(shared),
                None => {
                    let port = reservation.port(None).map_err(|e| {
                        ApiError::internal(format!("failed to allocate a nodePort: {e}"))
                    })?;
                    Some(i64::from(port))
                }
            },
        };
        if let Some(port) = port {
            taken_here.entry(numbers[i]).or_insert(port);
        }
        chosen.push(port);
    }
    for (port, value) in ports_mut(spec).zip(chosen) {
        if let Some(value) = value {
            port.insert("nodePort".into(), Value::from(value));
        }
    }
    if needs_health_check_port(spec) {
        let asked = spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .filter(|p| *p != 0);
        match asked {
            Some(asked) if is_held(asked) => {}
            Some(asked) => {
                reservation.port(Some(asked)).map_err(|e| {
                    ApiError::internal(format!(
                        "failed to allocate requested HealthCheck NodePort {asked}: {e}"
                    ))
                })?;
            }
            None => {
                let port = reservation.port(None).map_err(|e| {
                    ApiError::internal(format!("failed to allocate a HealthCheck NodePort 0: {e}"))
                })?;
                spec.insert("healthCheckNodePort".into(), Value::from(port));
            }
        }
    }
    Ok(())
}

/// 422 on `spec.ports[i].nodePort` with the allocator's error, as upstream's `initNodePorts`.
fn node_port_refused(
    call: &Call,
    name: &str,
    index: usize,
    port: i64,
    refusal: &Refusal,
) -> ApiError {
    let cause = StatusCause::invalid(
        format!("spec.ports[{index}].nodePort"),
        &Value::from(port),
        &refusal.to_string(),
    );
    match refuse(call, name, vec![cause]) {
        Err(refused) => refused,
        Ok(()) => ApiError::internal("a refusal without a cause"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn an_old_client_sending_only_cluster_ip_gets_cluster_ips() {
        // NormalizeClusterIPs, create.
        let mut s = spec(json!({"clusterIP": "10.0.0.9"}));
        normalize_cluster_ips(&mut s, None);
        assert_eq!(s["clusterIPs"], json!(["10.0.0.9"]));
        // Update: clusterIP changed, clusterIPs left as stored: follows clusterIP, so the
        // immutability check names clusterIPs[0].
        let old = spec(json!({"clusterIP": "10.0.0.9", "clusterIPs": ["10.0.0.9"]}));
        let mut s = spec(json!({"clusterIP": "10.0.0.10", "clusterIPs": ["10.0.0.9"]}));
        normalize_cluster_ips(&mut s, Some(&old));
        assert_eq!(s["clusterIPs"], json!(["10.0.0.10"]));
        let causes = cluster_ips_unchanged(&s, &old);
        assert_eq!(
            causes[0].message.as_deref(),
            Some(r#"Invalid value: []string{"10.0.0.10"}: may not change once set"#)
        );
        assert_eq!(causes[0].field.as_deref(), Some("spec.clusterIPs[0]"));
    }

    #[test]
    fn a_service_stored_with_cluster_ip_alone_keeps_it() {
        let old = spec(json!({"clusterIP": "10.0.0.50"}));
        let mut s = spec(json!({"clusterIP": "10.0.0.50"}));
        normalize_cluster_ips(&mut s, Some(&old));
        assert_eq!(s["clusterIPs"], json!(["10.0.0.50"]));
        assert!(cluster_ips_unchanged(&s, &old).is_empty());
        let mut s = spec(json!({"clusterIP": "10.0.0.51"}));
        normalize_cluster_ips(&mut s, Some(&old));
        assert_eq!(
            cluster_ips_unchanged(&s, &old).len(),
            1,
            "may not change once set"
        );
    }

    #[test]
    fn updates_keep_what_the_server_allocated() {
        // patchAllocatedValues: a PUT without clusterIP or nodePorts keeps the stored ones.
        let old = spec(
            json!({"type": "NodePort", "clusterIP": "10.0.0.9", "clusterIPs": ["10.0.0.9"],
            "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}),
        );
        let mut s = spec(json!({"type": "NodePort", "ports": [{"name": "http", "port": 80}]}));
        patch_allocated_values(&mut s, &old);
        assert_eq!(s["clusterIP"], "10.0.0.9");
        assert_eq!(s["ports"][0]["nodePort"], 30080);
        // dropTypeDependentFields: to ClusterIP, the unchanged node ports go.
        let mut s = old.clone();
        s.insert("type".into(), json!("ClusterIP"));
        drop_type_dependent_fields(&mut s, &old);
        assert!(s["ports"][0].get("nodePort").is_none());
        assert_eq!(s["clusterIP"], "10.0.0.9");
        // To ExternalName, the cluster IP fields go too.
        let mut s = old.clone();
        s.insert("type".into(), json!("ExternalName"));
        drop_type_dependent_fields(&mut s, &old);
        assert!(s.get("clusterIP").is_none() && s.get("clusterIPs").is_none());
    }

    #[test]
    fn node_ports_on_a_cluster_ip_service_are_forbidden() {
        let s = spec(
            json!({"type": "ClusterIP", "ports": [{"port": 80}, {"port": 81, "nodePort": 30001}]}),
        );
        let causes = node_ports_forbidden(&s);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field.as_deref(), Some("spec.ports[1].nodePort"));
        assert_eq!(
            causes[0].message.as_deref(),
            Some("Forbidden: may not be used when `type` is 'ClusterIP'")
        );
    }
}
