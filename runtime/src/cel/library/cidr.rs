//! Kubernetes' CIDR library: `isCIDR`, `cidr`, and on CIDRs `containsIP`, `containsCIDR`,
//! `ip`, `masked`, `prefixLength` and `string`.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/cidr.go`, `k8s.io/apiserver/pkg/cel/cidr.go`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::ip::{CelIp, ip_at, parse as parse_ip};
use super::{no_overload, traversed_arg, value_overload};

/// A CIDR as a CEL value (`net.CIDR`): an address and a prefix length.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct CelCidr {
    pub(super) ip: IpAddr,
    pub(super) bits: u8,
}

impl Opaque for CelCidr {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

impl std::fmt::Display for CelCidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.ip, self.bits)
    }
}

fn width(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// The CIDR `text` spells, as Go's `netip.ParsePrefix` and upstream accept it.
fn parse(text: &str) -> Result<CelCidr, String> {
    let error = || {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({text:?}): bad prefix"
        )
    };
    let (address, bits) = text.split_once('/').ok_or_else(error)?;
    if bits.is_empty()
        || bits.len() > 3
        || !bits.bytes().all(|b| b.is_ascii_digit())
        || (bits.len() > 1 && bits.starts_with('0'))
    {
        return Err(error());
    }
    let ip = parse_ip(address).map_err(|_| error())?;
    let bits: u8 = bits.parse().map_err(|_| error())?;
    if bits > width(ip) {
        return Err(error());
    }
    Ok(CelCidr { ip, bits })
}

fn masked(cidr: &CelCidr) -> CelCidr {
    let ip = match cidr.ip {
        IpAddr::V4(v4) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(cidr.bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) => {
            let mask = u128::MAX
                .checked_shl(128 - u32::from(cidr.bits))
                .unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
    };
    CelCidr {
        ip,
        bits: cidr.bits,
    }
}

fn contains(cidr: &CelCidr, ip: IpAddr) -> bool {
    cidr.ip.is_ipv4() == ip.is_ipv4()
        && masked(cidr).ip
            == masked(&CelCidr {
                ip,
                bits: cidr.bits,
            })
            .ip
}

/// What `containsIP` and `containsCIDR` cost beyond their node when their operand is a
/// string: its parse, and the comparison (`library.CallCost`).
fn charge_operand_parsed(text: &str) -> Result<(), ExecutionError> {
    crate::cel::cost::charge_text(text, 1)?;
    crate::cel::cost::charge(1)
}

fn cidr_at(function: &str, args: &[Value], i: usize) -> Result<CelCidr, ExecutionError> {
    match args.get(i) {
        Some(Value::Opaque(o)) => o
            .downcast_ref::<CelCidr>()
            .map(|c| CelCidr {
                ip: c.ip,
                bits: c.bits,
            })
            .ok_or_else(|| no_overload(function)),
        Some(Value::String(s)) if i > 0 => {
            charge_operand_parsed(s)?;
            parse(s).map_err(|e| ExecutionError::function_error(function, e))
        }
        _ => Err(no_overload(function)),
    }
}

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload(
        "isCIDR",
        "is_cidr",
        vec![STRING_TYPE],
        value_overload!(is_cidr),
    );
    let _ = env.add_overload(
        "cidr",
        "string_to_cidr",
        vec![STRING_TYPE],
        value_overload!(to_cidr),
    );
    let _ = env.add_member_overload(
        "containsIP",
        "cidr_contains_ip",
        DYN_TYPE,
        vec![DYN_TYPE],
        value_overload!(contains_ip),
    );
    let _ = env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        DYN_TYPE,
        vec![DYN_TYPE],
        value_overload!(contains_cidr),
    );
    let _ = env.add_member_overload("ip", "cidr_ip", DYN_TYPE, vec![], value_overload!(ip));
    let _ = env.add_member_overload(
        "masked",
        "cidr_masked",
        DYN_TYPE,
        vec![],
        value_overload!(masked_value),
    );
    let _ = env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        DYN_TYPE,
        vec![],
        value_overload!(prefix_length),
    );
    // `string(ip)` and `string(cidr)`: after the standard overloads, which match first.
    let _ = env.add_overload(
        "string",
        "kubernetes_net_to_string",
        vec![DYN_TYPE],
        value_overload!(to_string),
    );
}

fn is_cidr(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        parse(traversed_arg("isCIDR", args, 0, 1)?).is_ok(),
    ))
}

fn to_cidr(args: &[Value]) -> Result<Value, ExecutionError> {
    parse(traversed_arg("cidr", args, 0, 1)?)
        .map(|c| Value::Opaque(Arc::new(c)))
        .map_err(|e| ExecutionError::function_error("cidr", e))
}

fn contains_ip(args: &[Value]) -> Result<Value, ExecutionError> {
    let cidr = cidr_at("containsIP", args, 0)?;
    let ip = match args.get(1) {
        Some(Value::String(s)) => {
            charge_operand_parsed(s)?;
            parse_ip(s).map_err(|e| ExecutionError::function_error("containsIP", e))?
        }
        _ => ip_at("containsIP", args, 1)?,
    };
    Ok(Value::Bool(contains(&cidr, ip)))
}

fn contains_cidr(args: &[Value]) -> Result<Value, ExecutionError> {
    // Masking the outer CIDR and comparing the prefix lengths (`library.CallCost`).
    crate::cel::cost::charge(2)?;
    let outer = cidr_at("containsCIDR", args, 0)?;
    let inner = cidr_at("containsCIDR", args, 1)?;
    Ok(Value::Bool(
        inner.bits >= outer.bits && contains(&outer, inner.ip),
    ))
}

fn ip(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(super::ip::wrap(cidr_at("ip", args, 0)?.ip))
}

fn masked_value(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Opaque(Arc::new(masked(&cidr_at(
        "masked", args, 0,
    )?))))
}

fn prefix_length(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Int(i64::from(
        cidr_at("prefixLength", args, 0)?.bits,
    )))
}

fn to_string(args: &[Value]) -> Result<Value, ExecutionError> {
    let Some(Value::Opaque(o)) = args.first() else {
        return Err(no_overload("string"));
    };
    if let Some(ip) = o.downcast_ref::<CelIp>() {
        return Ok(Value::String(Arc::new(ip.0.to_string())));
    }
    if let Some(cidr) = o.downcast_ref::<CelCidr>() {
        return Ok(Value::String(Arc::new(cidr.to_string())));
    }
    Err(no_overload("string"))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::assert_all;

    // Upstream: k8s.io/apiserver/pkg/cel/library/cidr_test.go (TestCIDR).
    #[test]
    fn cidr_library() {
        assert_all(&[
            ("isCIDR('192.168.0.0/24')", true),
            ("isCIDR('192.168.0.1/24')", true),
            ("isCIDR('192.168.0.0/33')", false),
            ("isCIDR('192.168.0.0')", false),
            ("isCIDR('2001:db8::/32')", true),
            ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", true),
            ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", false),
            (
                "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))",
                true,
            ),
            (
                "cidr('192.168.0.0/24').containsCIDR('192.168.0.0/16')",
                false,
            ),
            ("cidr('192.168.0.1/24').ip() == ip('192.168.0.1')", true),
            (
                "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
                true,
            ),
            (
                "cidr('2001:db8::1/32').masked() == cidr('2001:db8::/32')",
                true,
            ),
            ("cidr('192.168.0.0/24').prefixLength() == 24", true),
            ("string(cidr('192.168.0.1/24')) == '192.168.0.1/24'", true),
            ("string(ip('10.0.0.1')) == '10.0.0.1'", true),
            ("string(1) == '1'", true),
        ]);
    }
}
