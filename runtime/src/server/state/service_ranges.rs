//! The ranges Services take their addresses from, as kube-apiserver configures them:
//! `--service-cluster-ip-range` ([`ServiceCidr`], default `10.0.0.0/24`) and
//! `--service-node-port-range` ([`NodePortRange`], default `30000-32767`), and where in each a
//! free value is looked for.
//!
//! As upstream's `ipallocator` (`pkg/registry/core/service/ipallocator`): the network address
//! and, for IPv4, the broadcast address are never handed out, and an IPv6 range is used for at
//! most 65536 addresses. As upstream's static subranges (KEP-3070 and KEP-3668), a value picked
//! by the server comes from the upper band of the range first, so that the lower band stays
//! free for values clients ask for; the lower band is `min(max(16, size/16), 256)` addresses
//! and `min(max(16, size/32), 128)` ports.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The most addresses an IPv6 range is used for (upstream's bitmap limit).
const IPV6_MAX: u64 = 1 << 16;

/// The range cluster IPs are allocated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceCidr {
    /// The network address, host bits cleared.
    network: IpAddr,
    prefix: u8,
}

impl Default for ServiceCidr {
    /// Upstream's default, `10.0.0.0/24` (kube-apiserver's `DefaultServiceIPCIDR`).
    fn default() -> Self {
        Self {
            network: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 0)),
            prefix: 24,
        }
    }
}

impl ServiceCidr {
    /// Parses `a.b.c.d/n` or an IPv6 CIDR; host bits are cleared as Go's `ParseCIDR` does.
    /// As kube-apiserver, an IPv4 range wider than `/12` and an IPv6 range wider than `/108`
    /// are refused (the allocator keeps one bit per address).
    pub fn parse(text: &str) -> Result<Self, String> {
        let (ip, prefix) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not a CIDR such as 10.0.0.0/24"))?;
        let ip: IpAddr = ip
            .parse()
            .map_err(|_| format!("{text:?} is not a CIDR such as 10.0.0.0/24"))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| format!("{text:?} has no valid prefix length"))?;
        let (bits, widest) = match ip {
            IpAddr::V4(_) => (32, 12),
            IpAddr::V6(_) => (128, 108),
        };
        if prefix > bits {
            return Err(format!("{text:?} has no valid prefix length"));
        }
        if prefix < widest {
            return Err(format!(
                "{text:?} is too large; for {bits}-bit addresses, the mask must be >= {widest}"
            ));
        }
        let host_bits = u32::from(bits - prefix);
        let mask = u128::MAX.checked_shl(host_bits).unwrap_or(0);
        let network = from_number(ip, to_number(ip) & mask);
        Ok(Self { network, prefix })
    }

    /// `IPv4` or `IPv6`, as a Service's `ipFamilies` names it.
    pub(crate) fn family(&self) -> &'static str {
        family_of(self.network)
    }

    /// How many addresses can be handed out.
    pub(crate) fn size(&self) -> u64 {
        let (bits, broadcast) = match self.network {
            IpAddr::V4(_) => (32u8, 1),
            IpAddr::V6(_) => (128u8, 0),
        };
        let whole = self.whole();
        let usable = whole.saturating_sub(1 + broadcast);
        if bits == 128 {
            usable.min(IPV6_MAX)
        } else {
            usable
        }
    }

    /// Every address of the network, capped at `u64::MAX`.
    fn whole(&self) -> u64 {
        let bits: u8 = match self.network {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        1u64.checked_shl(u32::from(bits - self.prefix))
            .unwrap_or(u64::MAX)
    }

    /// The lower band kept for requested addresses: `min(max(16, size/16), 256)` of the whole
    /// network, 0 for a network smaller than 16 (upstream's `calculateRangeOffset`).
    pub(crate) fn static_band(&self) -> u64 {
        let whole = self.whole();
        if whole < 16 {
            0
        } else {
            (whole / 16).clamp(16, 256).min(self.size())
        }
    }

    /// The first address handed out: the `kubernetes` Service's.
    pub fn first(&self) -> Option<IpAddr> {
        (self.size() > 0).then(|| self.address(0))
    }

    /// The address at `offset` from the first.
    pub(crate) fn address(&self, offset: u64) -> IpAddr {
        from_number(
            self.network,
            to_number(self.network) + 1 + u128::from(offset),
        )
    }

    /// Where `ip` is in the range, if it is.
    pub(crate) fn offset_of(&self, ip: IpAddr) -> Option<u64> {
        if family_of(ip) != self.family() {
            return None;
        }
        let offset = to_number(ip).checked_sub(to_number(self.network) + 1)?;
        u64::try_from(offset).ok().filter(|o| *o < self.size())
    }
}

impl fmt::Display for ServiceCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// `IPv4` or `IPv6`.
pub(crate) fn family_of(ip: IpAddr) -> &'static str {
    match ip {
        IpAddr::V4(_) => "IPv4",
        IpAddr::V6(_) => "IPv6",
    }
}

fn to_number(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_number(like: IpAddr, number: u128) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(
            u32::try_from(number & u128::from(u32::MAX)).unwrap_or(0),
        )),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(number)),
    }
}

/// The range node ports are allocated from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePortRange {
    base: u16,
    size: u32,
}

impl Default for NodePortRange {
    /// Upstream's default, `30000-32767`.
    fn default() -> Self {
        Self {
            base: 30000,
            size: 2768,
        }
    }
}

impl NodePortRange {
    /// Parses `first-last` or `first+count`, as upstream's `net.ParsePortRange`; a single port
    /// is a range of one.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let port = |s: &str| -> Result<u16, String> {
            s.trim()
                .parse::<u16>()
                .map_err(|_| format!("{text:?} is not a port range such as 30000-32767"))
        };
        let (base, last) = if let Some((a, b)) = text.split_once('-') {
            (port(a)?, port(b)?)
        } else if let Some((a, b)) = text.split_once('+') {
            let base = port(a)?;
            let last = base
                .checked_add(port(b)?)
                .ok_or_else(|| format!("{text:?} runs past port 65535"))?;
            (base, last)
        } else {
            let one = port(text)?;
            (one, one)
        };
        if last < base {
            return Err(format!("{text:?} ends before it starts"));
        }
        Ok(Self {
            base,
            size: u32::from(last - base) + 1,
        })
    }

    /// How many ports the range holds.
    pub(crate) fn size(&self) -> u64 {
        u64::from(self.size)
    }

    /// The port at `offset` from the first.
    pub(crate) fn port(&self, offset: u64) -> u16 {
        u16::try_from(u64::from(self.base) + offset).unwrap_or(u16::MAX)
    }

    /// Where `port` is in the range, if it is.
    pub(crate) fn offset_of(&self, port: i64) -> Option<u64> {
        let offset = port.checked_sub(i64::from(self.base))?;
        u64::try_from(offset).ok().filter(|o| *o < self.size())
    }

    /// The lower band kept for requested ports: `min(max(16, size/32), 128)`, 0 for a range
    /// smaller than 16 (upstream's `calculateRangeOffset` for ports).
    pub(crate) fn static_band(&self) -> u64 {
        let size = self.size();
        if size < 16 {
            0
        } else {
            (size / 32).clamp(16, 128)
        }
    }
}

impl fmt::Display for NodePortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.base, self.port(self.size() - 1))
    }
}

/// The order a free value is looked for in a range of `size` whose first `band` values are
/// kept for requests: the upper band from `start` (wrapping within it), then the lower band
/// from its start. Bounded by `size`.
pub(crate) fn search_order(size: u64, band: u64, start: u64) -> impl Iterator<Item = u64> {
    let band = band.min(size);
    let upper = size - band;
    let first = if upper == 0 { 0 } else { start % upper };
    (0..upper)
        .map(move |i| band + (first + i) % upper)
        .chain(0..band)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_range_is_upstreams() {
        // kube-apiserver's DefaultServiceIPCIDR and DefaultServiceNodePortRange.
        let cidr = ServiceCidr::default();
        assert_eq!(cidr.to_string(), "10.0.0.0/24");
        assert_eq!(cidr.first(), Some("10.0.0.1".parse().unwrap()));
        // ipallocator: no network, no broadcast address.
        assert_eq!(cidr.size(), 254);
        assert_eq!(cidr.offset_of("10.0.0.0".parse().unwrap()), None);
        assert_eq!(cidr.offset_of("10.0.0.255".parse().unwrap()), None);
        assert_eq!(cidr.offset_of("10.0.0.254".parse().unwrap()), Some(253));
        assert_eq!(cidr.offset_of("10.0.1.1".parse().unwrap()), None);
        assert_eq!(cidr.offset_of("fd00::1".parse().unwrap()), None);
        // calculateRangeOffset: 256/16 = 16.
        assert_eq!(cidr.static_band(), 16);
        let ports = NodePortRange::default();
        assert_eq!(ports.to_string(), "30000-32767");
        assert_eq!(ports.size(), 2768);
        // calculateRangeOffset for ports: 2768/32 = 86.
        assert_eq!(ports.static_band(), 86);
        assert_eq!(ports.offset_of(29999), None);
        assert_eq!(ports.offset_of(32768), None);
        assert_eq!(ports.offset_of(30005), Some(5));
    }

    #[test]
    fn ranges_parse_as_kube_apiserver_reads_them() {
        let cidr = ServiceCidr::parse("10.96.3.7/12").unwrap();
        assert_eq!(cidr.to_string(), "10.96.0.0/12");
        assert_eq!(cidr.static_band(), 256);
        assert!(
            ServiceCidr::parse("10.0.0.0/8")
                .unwrap_err()
                .contains(">= 12")
        );
        let v6 = ServiceCidr::parse("fd00:10:96::/112").unwrap();
        assert_eq!(v6.family(), "IPv6");
        assert_eq!(v6.first(), Some("fd00:10:96::1".parse().unwrap()));
        assert_eq!(v6.size(), 65535, "no broadcast address in IPv6");
        for bad in ["10.0.0.0", "10.0.0.0/33", "x/24", "fd00::/64"] {
            assert!(ServiceCidr::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            NodePortRange::parse("30000+99").unwrap().to_string(),
            "30000-30099"
        );
        assert_eq!(NodePortRange::parse("80").unwrap().size(), 1);
        for bad in ["32767-30000", "1-70000", "a-b", "65535+1"] {
            assert!(NodePortRange::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn free_values_come_from_the_upper_band_first() {
        let order: Vec<u64> = search_order(10, 3, 5).collect();
        assert_eq!(order, vec![8, 9, 3, 4, 5, 6, 7, 0, 1, 2]);
        assert_eq!(search_order(2, 16, 7).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(search_order(0, 0, 7).count(), 0);
    }
}
