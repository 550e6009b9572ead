//! The address the server gives the cluster to reach it by, kube-apiserver's
//! `--advertise-address`: the `kubernetes` Service's endpoints point at it and the serving
//! certificate the binary makes names it.
//!
//! Without one given, upstream advertises its bind address, or, for a wildcard bind address,
//! the address of the host's default route (`ResolveBindAddress` and `ChooseHostInterface` in
//! apimachinery's `util/net`), IPv4 first unless the bind address is IPv6. kapi finds that
//! address by asking the kernel which source address it would leave the host from (a UDP
//! socket connected to a documentation address: connecting sends nothing), and falls back to
//! loopback on a host with no route out. Upstream resolves a loopback bind address to the
//! host's interface too; kapi advertises loopback then, since a server listening there is
//! reachable nowhere else.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// Where a packet to the outside would go (RFC 5737's TEST-NET-1, RFC 3849's documentation
/// prefix): only the route to it matters, nothing is sent.
const OUTSIDE_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const OUTSIDE_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);

/// The address advertised for a server listening on `listen` when none is given: `listen`
/// itself unless it is a wildcard, else the host's default-route address in the listen
/// address's family first, else loopback of that family.
pub fn default_advertise_address(listen: IpAddr) -> IpAddr {
    if !listen.is_unspecified() {
        return listen;
    }
    let families = match listen {
        IpAddr::V4(_) => [IpAddr::V4(OUTSIDE_V4), IpAddr::V6(OUTSIDE_V6)],
        IpAddr::V6(_) => [IpAddr::V6(OUTSIDE_V6), IpAddr::V4(OUTSIDE_V4)],
    };
    families
        .into_iter()
        .find_map(route_source)
        .unwrap_or(match listen {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        })
}

/// The source address of the host's route to `outside`, if it has one that leaves the host.
fn route_source(outside: IpAddr) -> Option<IpAddr> {
    let any = match outside {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let socket = UdpSocket::bind(SocketAddr::new(any, 0)).ok()?;
    socket.connect(SocketAddr::new(outside, 9)).ok()?;
    let source = socket.local_addr().ok()?.ip();
    (!source.is_unspecified() && !source.is_loopback()).then_some(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_listen_address_is_advertised_as_it_is() {
        for listen in ["127.0.0.1", "::1", "192.0.2.7", "2001:db8::7"] {
            let ip: IpAddr = listen.parse().unwrap();
            assert_eq!(default_advertise_address(ip), ip);
        }
    }

    /// A wildcard is never advertised: the host's route out, or loopback without one. Which
    /// of the two depends on the machine, so both are checked against what it has.
    #[test]
    fn a_wildcard_advertises_the_route_out_or_loopback() {
        let v4 = default_advertise_address(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        assert!(!v4.is_unspecified());
        match route_source(IpAddr::V4(OUTSIDE_V4)) {
            Some(source) => assert_eq!(v4, source),
            None => assert!(
                v4.is_loopback() || route_source(IpAddr::V6(OUTSIDE_V6)) == Some(v4),
                "{v4}"
            ),
        }
        let v6 = default_advertise_address(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
        assert!(!v6.is_unspecified() && (v6.is_ipv6() || v6 == v4), "{v6}");
    }
}
