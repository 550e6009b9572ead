//! Which cluster IPs and node ports are taken: those the stored Services hold, and those
//! reserved by writes still on their way to the store.
//!
//! Upstream keeps a bitmap per range in etcd (`pkg/registry/core/service/allocator`) and a
//! repair loop that rebuilds it from the stored Services. Here the stored Services are the only
//! record: the server lists them at start (so data directories written before allocation
//! existed open as they are), follows their watch (so several servers on one etcd see each
//! other's Services) and learns at once from its own reads and writes (through
//! `observed::Observed`), with the same ordering rules as `namespaces`: every entry carries
//! the revision it describes and older news never overwrites newer. A Service gives back what
//! it held when it is deleted or written without it, whichever path deleted or wrote it.
//!
//! A write takes a [`Reservation`] before it goes to the store; what it reserved counts as
//! taken until the reservation is dropped, by which time the written Service holds it (or the
//! write failed, or was a dry run, and it is free again).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;

use crate::storage::{KeyValue, Storage, WatchEvent};

use crate::server::state::State;
use crate::server::state::service_ranges::{NodePortRange, ServiceCidr, search_order};
use crate::server::{signal, spawn_repeating};

/// Where Services are stored.
pub(crate) const PREFIX: &str = "/registry/core/services/";

/// How long the task waits before listing again after its watch failed.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// The ranges and what is taken in them.
#[derive(Debug)]
pub(crate) struct ServiceAllocations {
    cidr: ServiceCidr,
    ports: NodePortRange,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    /// Every change up to this revision has come through the watch.
    watched: u64,
    /// What each stored Service holds, by key.
    entries: HashMap<String, Entry>,
    /// Reservations of writes in flight.
    pending: HashMap<u64, Holding>,
    next_reservation: u64,
    /// How many holders (stored Services and reservations) each value has.
    ips: HashMap<IpAddr, u32>,
    ports: HashMap<u16, u32>,
}

#[derive(Debug, Clone)]
struct Entry {
    /// What the entry is as of; a Service deleted here holds nothing until the watch
    /// delivers its delete.
    revision: u64,
    holding: Holding,
}

/// The values one Service or one reservation holds, each once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Holding {
    pub(crate) ips: Vec<IpAddr>,
    pub(crate) ports: Vec<u16>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Watch,
    Local,
}

/// Why a value could not be reserved; the messages are upstream's allocator errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("provided IP is already allocated")]
    IpAllocated,
    #[error("provided IP is not in the valid range. The range of valid IPs is {0}")]
    IpNotInRange(String),
    #[error("provided port is already allocated")]
    PortAllocated,
    #[error("provided port is not in the valid range. The range of valid ports is {0}")]
    PortNotInRange(String),
    #[error("range is full")]
    Full,
}

impl ServiceAllocations {
    pub(crate) fn new(cidr: ServiceCidr, ports: NodePortRange) -> Self {
        Self {
            cidr,
            ports,
            held: Mutex::default(),
        }
    }

    /// The cluster IP range.
    pub(crate) fn cidr(&self) -> ServiceCidr {
        self.cidr
    }

    /// Starts a reservation for one write.
    pub(crate) fn reserve(&self) -> Reservation<'_> {
        let mut held = self.lock();
        held.next_reservation += 1;
        let id = held.next_reservation;
        held.pending.insert(id, Holding::default());
        Reservation { owner: self, id }
    }

    /// This server read or wrote `kv` (keys outside [`PREFIX`] are ignored).
    pub(crate) fn observe(&self, kv: &KeyValue) {
        if is_service_key(&kv.key) {
            self.lock().learn(
                &kv.key,
                kv.mod_revision,
                holding_of(&kv.value),
                Source::Local,
            );
        }
    }

    /// This server deleted `key` at `revision`.
    pub(crate) fn deleted(&self, key: &str, revision: u64) {
        if is_service_key(key) {
            self.lock()
                .learn(key, revision, Holding::default(), Source::Local);
        }
    }

    /// Starts over from a listing at `revision`, keeping local news newer than it.
    pub(crate) fn reset(&self, items: &[KeyValue], revision: u64) {
        let mut held = self.lock();
        let stale: Vec<String> = held
            .entries
            .iter()
            .filter(|(_, entry)| entry.revision <= revision)
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            held.forget(&key);
        }
        held.watched = revision;
        for kv in items.iter().filter(|kv| is_service_key(&kv.key)) {
            held.learn(
                &kv.key,
                kv.mod_revision,
                holding_of(&kv.value),
                Source::Watch,
            );
        }
    }

    fn watched(&self, event: &WatchEvent) {
        let mut held = self.lock();
        match event {
            WatchEvent::Put { kv, .. } if is_service_key(&kv.key) => {
                held.learn(
                    &kv.key,
                    kv.mod_revision,
                    holding_of(&kv.value),
                    Source::Watch,
                );
            }
            WatchEvent::Delete { prev, revision }
                if held
                    .entries
                    .get(&prev.key)
                    .is_some_and(|entry| entry.revision <= *revision) =>
            {
                held.forget(&prev.key);
            }
            _ => {}
        }
        held.watched = held.watched.max(event.revision());
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        // Every change leaves the maps whole, so a poisoned lock still holds usable counts.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn taken(&self) -> (usize, usize) {
        let held = self.lock();
        (held.ips.len(), held.ports.len())
    }
}

impl Held {
    fn learn(&mut self, key: &str, revision: u64, holding: Holding, source: Source) {
        if source == Source::Local && revision <= self.watched {
            return;
        }
        if self
            .entries
            .get(key)
            .is_some_and(|entry| entry.revision > revision)
        {
            return;
        }
        self.forget(key);
        self.count(&holding, true);
        self.entries
            .insert(key.to_owned(), Entry { revision, holding });
    }

    fn forget(&mut self, key: &str) {
        if let Some(entry) = self.entries.remove(key) {
            self.count(&entry.holding, false);
        }
    }

    fn count(&mut self, holding: &Holding, up: bool) {
        for ip in &holding.ips {
            bump(&mut self.ips, *ip, up);
        }
        for port in &holding.ports {
            bump(&mut self.ports, *port, up);
        }
    }
}

fn bump<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, u32>, key: K, up: bool) {
    if up {
        *counts.entry(key).or_default() += 1;
    } else if let Some(n) = counts.get_mut(&key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(&key);
        }
    }
}

/// What one write has reserved; dropped, it gives everything back.
#[derive(Debug)]
pub(crate) struct Reservation<'a> {
    owner: &'a ServiceAllocations,
    id: u64,
}

impl Reservation<'_> {
    /// Reserves `requested`, or the next free address when `None`.
    pub(crate) fn ip(&mut self, requested: Option<IpAddr>) -> Result<IpAddr, Refusal> {
        let cidr = self.owner.cidr;
        let mut held = self.owner.lock();
        let ip = match requested {
            Some(ip) => {
                if cidr.offset_of(ip).is_none() {
                    return Err(Refusal::IpNotInRange(cidr.to_string()));
                }
                if held.ips.contains_key(&ip) {
                    return Err(Refusal::IpAllocated);
                }
                ip
            }
            None => search_order(cidr.size(), cidr.static_band(), random())
                .map(|offset| cidr.address(offset))
                .find(|ip| !held.ips.contains_key(ip))
                .ok_or(Refusal::Full)?,
        };
        bump(&mut held.ips, ip, true);
        if let Some(pending) = held.pending.get_mut(&self.id) {
            pending.ips.push(ip);
        }
        Ok(ip)
    }

    /// Reserves node port `requested`, or the next free one when `None`.
    pub(crate) fn port(&mut self, requested: Option<i64>) -> Result<u16, Refusal> {
        let range = self.owner.ports;
        let mut held = self.owner.lock();
        let port = match requested {
            Some(port) => {
                let Some(offset) = range.offset_of(port) else {
                    return Err(Refusal::PortNotInRange(range.to_string()));
                };
                let port = range.port(offset);
                if held.ports.contains_key(&port) {
                    return Err(Refusal::PortAllocated);
                }
                port
            }
            None => search_order(range.size(), range.static_band(), random())
                .map(|offset| range.port(offset))
                .find(|port| !held.ports.contains_key(port))
                .ok_or(Refusal::Full)?,
        };
        bump(&mut held.ports, port, true);
        if let Some(pending) = held.pending.get_mut(&self.id) {
            pending.ports.push(port);
        }
        Ok(port)
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut held = self.owner.lock();
        if let Some(holding) = held.pending.remove(&self.id) {
            held.count(&holding, false);
        }
    }
}

/// A random start for the search of a free value.
fn random() -> u64 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let mut first = [0u8; 8];
    first.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(first)
}

/// Whether `key` is a Service's (`<PREFIX><namespace>/<name>`).
fn is_service_key(key: &str) -> bool {
    key.strip_prefix(PREFIX)
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains('/'))
}

/// The cluster IPs and node ports a stored Service holds. A value that does not decode holds
/// nothing.
pub(crate) fn holding_of(value: &[u8]) -> Holding {
    match serde_json::from_slice::<Value>(value) {
        Ok(service) => holding_of_service(&service),
        Err(_) => Holding::default(),
    }
}

/// The cluster IPs (`clusterIPs`, else `clusterIP`; never `None`) and node ports (each port's
/// and the health check's) of a Service object.
pub(crate) fn holding_of_service(service: &Value) -> Holding {
    let spec = service.get("spec");
    let field = |name: &str| spec.and_then(|s| s.get(name));
    let mut holding = Holding::default();
    let texts: Vec<&str> = match field("clusterIPs").and_then(Value::as_array) {
        Some(ips) if !ips.is_empty() => ips.iter().filter_map(Value::as_str).collect(),
        _ => field("clusterIP")
            .and_then(Value::as_str)
            .into_iter()
            .collect(),
    };
    for text in texts {
        if let Ok(ip) = text.parse::<IpAddr>()
            && !holding.ips.contains(&ip)
        {
            holding.ips.push(ip);
        }
    }
    let ports = field("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|port| port.get("nodePort"))
        .chain(field("healthCheckNodePort"));
    for port in ports {
        if let Some(port) = port.as_u64().and_then(|p| u16::try_from(p).ok())
            && port != 0
            && !holding.ports.contains(&port)
        {
            holding.ports.push(port);
        }
    }
    holding
}

/// Learns every stored Service now: the server answers no write before it knows them.
pub(crate) async fn load(state: &State) -> Result<u64, crate::storage::ReadError> {
    let storage = &state.storage;
    let listed = storage.list(PREFIX, None, None, None).await?;
    storage.services().reset(&listed.items, listed.revision);
    Ok(listed.revision)
}

/// Keeps `state`'s allocations current from `revision` on: follows the Services' watch, and
/// lists them again when the watch fails, until `stop`.
pub(crate) fn spawn(state: State, revision: u64, stop: signal::Receiver<bool>) {
    let mut from = Some(revision);
    spawn_repeating(stop, RESYNC_AFTER, move || {
        let state = state.clone();
        let from = from.take();
        async move { follow(&state, from).await }
    });
}

/// A listing (unless `from` says where the last one ended) and the watch after it; returns
/// when the watch ends.
async fn follow(state: &State, from: Option<u64>) {
    let revision = match from {
        Some(revision) => revision,
        None => match load(state).await {
            Ok(revision) => revision,
            Err(_) => return,
        },
    };
    let storage = &state.storage;
    let Ok(mut watch) = storage.watch_without_prev(PREFIX, revision).await else {
        return;
    };
    while let Some(Ok(event)) = watch.next().await {
        storage.services().watched(&event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Bytes;

    fn service(name: &str, revision: u64, spec: &Value) -> KeyValue {
        KeyValue {
            key: format!("{PREFIX}default/{name}"),
            value: Bytes::from(serde_json::to_vec(&serde_json::json!({"spec": spec})).unwrap()),
            create_revision: 2,
            mod_revision: revision,
        }
    }

    fn allocations() -> ServiceAllocations {
        ServiceAllocations::new(
            ServiceCidr::parse("10.0.0.0/28").unwrap(),
            NodePortRange::parse("30000-30003").unwrap(),
        )
    }

    #[test]
    fn stored_services_hold_their_values_until_deleted() {
        let all = allocations();
        let spec = serde_json::json!({"clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
            "ports": [{"port": 80, "nodePort": 30001}, {"port": 80, "protocol": "UDP", "nodePort": 30001}]});
        all.reset(&[service("a", 3, &spec)], 4);
        let mut r = all.reserve();
        // ipallocator's and portallocator's ErrAllocated.
        assert_eq!(r.ip("10.0.0.5".parse().ok()), Err(Refusal::IpAllocated));
        assert_eq!(r.port(Some(30001)), Err(Refusal::PortAllocated));
        assert_eq!(
            r.ip("10.0.1.5".parse().ok()).unwrap_err().to_string(),
            "provided IP is not in the valid range. The range of valid IPs is 10.0.0.0/28"
        );
        assert_eq!(
            r.port(Some(80)).unwrap_err().to_string(),
            "provided port is not in the valid range. The range of valid ports is 30000-30003"
        );
        drop(r);
        all.deleted(&format!("{PREFIX}default/a"), 5);
        let mut r = all.reserve();
        assert_eq!(
            r.ip("10.0.0.5".parse().ok()),
            Ok("10.0.0.5".parse().unwrap())
        );
        assert_eq!(r.port(Some(30001)), Ok(30001));
    }

    #[test]
    fn reservations_are_given_back_when_dropped() {
        let all = allocations();
        let mut first = all.reserve();
        let ip = first.ip(None).unwrap();
        let mut second = all.reserve();
        assert_eq!(second.ip(Some(ip)), Err(Refusal::IpAllocated));
        drop(first);
        assert_eq!(second.ip(Some(ip)), Ok(ip));
        drop(second);
        assert_eq!(all.taken(), (0, 0));
    }

    #[test]
    fn next_values_fill_the_upper_band_then_the_lower_then_fail() {
        // A /28 has 14 addresses; 16 is more than the network, so no lower band is kept.
        let all = allocations();
        let mut r = all.reserve();
        let mut seen = Vec::new();
        for _ in 0..14 {
            seen.push(r.ip(None).unwrap());
        }
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 14);
        assert_eq!(r.ip(None), Err(Refusal::Full));
        for _ in 0..4 {
            r.port(None).unwrap();
        }
        assert_eq!(r.port(None).unwrap_err().to_string(), "range is full");

        // The default range keeps 10.0.0.1-10.0.0.16 for requests while the rest is free.
        let all = ServiceAllocations::new(ServiceCidr::default(), NodePortRange::default());
        let mut r = all.reserve();
        for _ in 0..50 {
            let ip = r.ip(None).unwrap();
            assert!(ServiceCidr::default().offset_of(ip).unwrap() >= 16, "{ip}");
            assert!(r.port(None).unwrap() >= 30086);
        }
    }

    #[test]
    fn old_news_never_overwrites_newer() {
        let all = allocations();
        all.reset(&[], 2);
        let spec = serde_json::json!({"clusterIP": "10.0.0.5"});
        all.observe(&service("a", 5, &spec));
        all.deleted(&format!("{PREFIX}default/a"), 6);
        // The watch delivers the create after the local delete.
        all.watched(&WatchEvent::Put {
            kv: service("a", 5, &spec),
            prev: None,
        });
        assert_eq!(all.taken(), (0, 0));
        // Another Service took the address since; the old delete must not free it.
        all.observe(&service("b", 8, &spec));
        all.watched(&WatchEvent::Delete {
            prev: service("a", 5, &spec),
            revision: 6,
        });
        assert_eq!(all.taken(), (1, 0));
        // Updated without its cluster IP (say, to ExternalName): given back.
        all.observe(&service(
            "b",
            9,
            &serde_json::json!({"type": "ExternalName"}),
        ));
        assert_eq!(all.taken(), (0, 0));
    }

    #[test]
    fn holdings_skip_headless_and_unreadable_values() {
        let spec = serde_json::json!({"clusterIP": "None", "clusterIPs": ["None"],
            "ports": [{"port": 1, "nodePort": 0}], "healthCheckNodePort": 30002});
        assert_eq!(
            holding_of_service(&serde_json::json!({"spec": spec})),
            Holding {
                ips: vec![],
                ports: vec![30002]
            }
        );
        assert_eq!(holding_of(b"not json"), Holding::default());
        assert!(!is_service_key(&format!("{PREFIX}default")));
        assert!(is_service_key(&format!("{PREFIX}default/a")));
    }
}
