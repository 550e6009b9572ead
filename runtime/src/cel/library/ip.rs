//! Kubernetes' IP library: `isIP`, `ip`, `ip.isCanonical`, and on addresses `family`,
//! `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`,
//! `isGlobalUnicast` and `string`. Zones and IPv4-mapped IPv6 addresses are refused, as
//! upstream's `parseIPAddr` refuses them.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/ip.go`, `k8s.io/apiserver/pkg/cel/ip.go`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::{no_overload, traversed_arg, value_overload};

/// An IP address as a CEL value (`net.IP`).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct CelIp(pub(super) IpAddr);

impl Opaque for CelIp {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

pub(super) fn wrap(ip: IpAddr) -> Value {
    Value::Opaque(Arc::new(CelIp(ip)))
}

/// The address `text` spells, as upstream's `parseIPAddr` accepts it.
pub(super) fn parse(text: &str) -> Result<IpAddr, String> {
    if text.contains('%') {
        return Err(format!(
            "IP address {text:?} with zone value is not allowed"
        ));
    }
    let ip: IpAddr = text.parse().map_err(|_| {
        format!("IP Address {text:?} parse error during conversion from string: ParseAddr({text:?}): unable to parse IP")
    })?;
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {text:?} is not allowed"));
    }
    Ok(ip)
}

/// The address argument at `i`.
pub(super) fn ip_at(function: &str, args: &[Value], i: usize) -> Result<IpAddr, ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => o
            .downcast_ref::<CelIp>()
            .map(|ip| ip.0)
            .ok_or_else(|| no_overload(function)),
        _ => Err(no_overload(function)),
    }
}

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload("isIP", "is_ip", vec![STRING_TYPE], value_overload!(is_ip));
    let _ = env.add_overload(
        "ip",
        "string_to_ip",
        vec![STRING_TYPE],
        value_overload!(to_ip),
    );
    let _ = env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        value_overload!(is_canonical),
    );
    let members: [(&str, cel::common::functions::Function); 6] = [
        ("family", value_overload!(family)),
        ("isUnspecified", value_overload!(is_unspecified)),
        ("isLoopback", value_overload!(is_loopback)),
        (
            "isLinkLocalMulticast",
            value_overload!(is_link_local_multicast),
        ),
        ("isLinkLocalUnicast", value_overload!(is_link_local_unicast)),
        ("isGlobalUnicast", value_overload!(is_global_unicast)),
    ];
    for (name, f) in members {
        let _ = env.add_member_overload(name, &format!("ip_{name}"), DYN_TYPE, vec![], f);
    }
}

fn is_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        parse(traversed_arg("isIP", args, 0, 1)?).is_ok(),
    ))
}

fn to_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    parse(traversed_arg("ip", args, 0, 1)?)
        .map(wrap)
        .map_err(|e| ExecutionError::function_error("ip", e))
}

fn is_canonical(args: &[Value]) -> Result<Value, ExecutionError> {
    let text = traversed_arg("ip.isCanonical", args, 0, 2)?;
    let ip = parse(text).map_err(|e| ExecutionError::function_error("ip.isCanonical", e))?;
    Ok(Value::Bool(ip.to_string() == text))
}

fn family(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(match ip_at("family", args, 0)? {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 6,
    }))
}

fn is_unspecified(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        ip_at("isUnspecified", args, 0)?.is_unspecified(),
    ))
}

fn is_loopback(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(ip_at("isLoopback", args, 0)?.is_loopback()))
}

/// Go's `IsLinkLocalMulticast`: 224.0.0.0/24, ff02::/16.
fn link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

/// Go's `IsLinkLocalUnicast`: 169.254.0.0/16, fe80::/10.
fn link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(link_local_multicast(ip_at(
        "isLinkLocalMulticast",
        args,
        0,
    )?)))
}

fn is_link_local_unicast(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(link_local_unicast(ip_at(
        "isLinkLocalUnicast",
        args,
        0,
    )?)))
}

/// Go's `IsGlobalUnicast`: not unspecified, broadcast, loopback, multicast or link-local
/// unicast (private addresses are global unicast).
fn is_global_unicast(args: &[Value]) -> Result<Value, ExecutionError> {
    let ip = ip_at("isGlobalUnicast", args, 0)?;
    let excluded = match ip {
        IpAddr::V4(v4) => v4 == Ipv4Addr::UNSPECIFIED || v4 == Ipv4Addr::BROADCAST,
        IpAddr::V6(v6) => v6 == Ipv6Addr::UNSPECIFIED,
    };
    Ok(Value::Bool(
        !excluded && !ip.is_loopback() && !ip.is_multicast() && !link_local_unicast(ip),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_all, eval};

    // Upstream: k8s.io/apiserver/pkg/cel/library/ip_test.go (TestIP).
    #[test]
    fn ip_library() {
        assert_all(&[
            ("isIP('192.168.0.1')", true),
            ("isIP('2001:db8::1')", true),
            ("isIP('192.168.0.1/24')", false),
            ("isIP('::ffff:192.168.0.1')", false),
            ("isIP('fe80::1%eth0')", false),
            ("isIP('1.01.1.1')", false),
            ("ip('192.168.0.1').family() == 4", true),
            ("ip('::1').family() == 6", true),
            ("ip('::1').isLoopback()", true),
            ("ip('127.0.0.1').isLoopback()", true),
            ("ip('0.0.0.0').isUnspecified()", true),
            ("ip('224.0.0.1').isLinkLocalMulticast()", true),
            ("ip('ff02::1').isLinkLocalMulticast()", true),
            ("ip('169.254.1.1').isLinkLocalUnicast()", true),
            ("ip('fe80::1').isLinkLocalUnicast()", true),
            ("ip('10.0.0.1').isGlobalUnicast()", true),
            ("ip('255.255.255.255').isGlobalUnicast()", false),
            ("ip.isCanonical('2001:db8::1')", true),
            ("ip.isCanonical('2001:DB8::1')", false),
            ("ip('10.0.0.1') == ip('10.0.0.1')", true),
            ("string(ip('2001:db8:0::1')) == '2001:db8::1'", true),
        ]);
        assert!(eval("ip('nope')").unwrap_err().contains("parse error"));
    }
}
