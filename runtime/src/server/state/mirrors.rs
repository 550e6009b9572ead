//! In-memory copies of the few resources that admission reads on every write: admission
//! policies and their bindings, webhook configurations, ResourceQuotas and LimitRanges, and
//! of every Pod or claim: PriorityClasses and StorageClasses.
//!
//! Without them each admitted write listed and decoded every one of these collections from
//! the store, most of them empty (a fifth of a custom resource create's CPU). Upstream's
//! admission plugins read the same objects from informers; so does kapi, with one difference
//! that tests rely on: a write this server acknowledged is in its copy before the answer
//! leaves, so the next request through this server sees the policy or webhook it just created.
//! Writes through other servers sharing the store arrive through the watch, a moment later,
//! as upstream's informers deliver them.
//!
//! Each [`Mirror`] is fed by a listing and the watch after it (the task [`spawn`] runs, which
//! starts over when the watch fails) and by this server's own reads and writes (through
//! `observed::Observed`). Ordering is the namespace cache's (`namespaces`): every entry carries
//! the revision it is as of, older news never overwrites newer, local news the watch has
//! passed is dropped, and a local delete leaves a tombstone until the watch delivers it.
//!
//! A mirror answers only while it is in step with the store (listed and watching) and holds
//! at most [`MOST`] objects; otherwise admission reads the store as before
//! (`admission::storage::list`), so a copy never answers with less than the store holds.
//!
//! The same machinery keeps the Node authorizer's graph (`node_graph`): mirrors that keep a
//! projection of each object (the few names its edges need) rather than the object, read only
//! through [`Mirrors::visit`] and never by admission's reads, present only when the
//! authorization chain has the Node mode.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;

use crate::storage::{KeyValue, Storage, WatchEvent};

use crate::server::state::State;
use crate::server::state::keys::prefix_of;
use crate::server::{signal, spawn_repeating};

/// The resources mirrored, by group and plural.
const MIRRORED: &[(&str, &str)] = &[
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    ("", "resourcequotas"),
    ("", "limitranges"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("storage.k8s.io", "storageclasses"),
];

/// How many objects one mirror holds at most: the most admission reads of one collection
/// (`admission::storage`). A resource with more is read from the store instead.
pub(crate) const MOST: usize = 10_000;

/// How long the task waits before listing again after its watch ended.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// How long the task waits before listing a resource again that held more than [`MOST`]
/// objects, so that a crowded resource is not listed over and over.
const RECHECK_CROWDED_AFTER: Duration = Duration::from_secs(30);

/// The mirrors of a server, one per mirrored resource.
#[derive(Debug)]
pub(crate) struct Mirrors {
    mirrors: Vec<Mirror>,
}

impl Default for Mirrors {
    fn default() -> Self {
        Self::new(&[], 0)
    }
}

/// What a mirror keeps of each object: the whole object, or what a function projects of it
/// (the node graph's edges), which only [`Mirrors::visit`] reads.
pub(crate) type Projection = fn(&Value) -> Value;

impl Mirrors {
    /// The mirrors admission reads and, for each of `projected` (group, plural and
    /// projection), a mirror of projections holding at most `most` objects: the node graph's
    /// (`node_graph::MIRRORED`) when the chain has the Node authorizer.
    pub(crate) fn new(projected: &[(&str, &str, Projection)], most: usize) -> Self {
        let whole = MIRRORED
            .iter()
            .map(|(group, plural)| Mirror::new(prefix_of(group, plural), None, MOST));
        let projected = projected.iter().map(|(group, plural, projection)| {
            Mirror::new(prefix_of(group, plural), Some(*projection), most)
        });
        Self {
            mirrors: whole.chain(projected).collect(),
        }
    }

    /// Every object stored under `prefix` (a mirrored resource's prefix, or one namespace's
    /// part of it), decoded, in key order; `None` when no mirror can answer for it now.
    pub(crate) fn list(&self, prefix: &str) -> Option<Vec<Value>> {
        self.whole_mirror_of(prefix)?.list(prefix)
    }

    /// The object stored under `key`, decoded, or `None` inside; `None` when no mirror can
    /// answer for it now.
    pub(crate) fn get(&self, key: &str) -> Option<Option<Value>> {
        self.whole_mirror_of(key)?.get(key)
    }

    /// Calls `visit` with the key and projection of every object under `prefix` of a
    /// projected mirror, in key order, until it answers true; answers whether one did, or
    /// `None` when no projected mirror can answer for `prefix` now.
    pub(crate) fn visit(
        &self,
        prefix: &str,
        mut visit: impl FnMut(&str, &Value) -> bool,
    ) -> Option<bool> {
        let mirror = self
            .mirrors
            .iter()
            .find(|m| m.projection.is_some() && prefix.starts_with(&m.prefix))?;
        let known = mirror.lock();
        if !known.in_step {
            return None;
        }
        for (key, entry) in known
            .entries
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(key, _)| key.starts_with(prefix))
        {
            match &entry.object {
                Some(Ok(object)) if visit(key, object) => return Some(true),
                Some(Err(())) => return None,
                _ => {}
            }
        }
        Some(false)
    }

    /// Whether every projected mirror has listed its resource and follows its watch.
    pub(crate) fn projections_in_step(&self) -> bool {
        self.mirrors
            .iter()
            .filter(|m| m.projection.is_some())
            .all(|m| m.lock().in_step)
    }

    /// This server read or wrote `kv` (any key; keys no mirror holds are ignored).
    pub(crate) fn observe(&self, kv: &KeyValue) {
        if let Some(mirror) = self.mirror_of(&kv.key) {
            let decoded = mirror.decode(kv);
            mirror
                .lock()
                .learn(&kv.key, kv.mod_revision, Some(decoded), Source::Local);
        }
    }

    /// This server deleted `key` at `revision`.
    pub(crate) fn deleted(&self, key: &str, revision: u64) {
        if let Some(mirror) = self.mirror_of(key) {
            mirror.lock().learn(key, revision, None, Source::Local);
        }
    }

    /// Starts every mirror over from `items` listed at `revision`, as if its listing came in.
    #[cfg(test)]
    pub(crate) fn listed(&self, items: &[KeyValue], revision: u64) {
        for mirror in &self.mirrors {
            let mine: Vec<KeyValue> = items
                .iter()
                .filter(|kv| kv.key.starts_with(&mirror.prefix))
                .cloned()
                .collect();
            mirror.reset(&mine, revision);
        }
    }

    fn mirror_of(&self, key: &str) -> Option<&Mirror> {
        self.mirrors.iter().find(|m| key.starts_with(&m.prefix))
    }

    /// The mirror of whole objects holding `key`: a projection never answers for the store.
    fn whole_mirror_of(&self, key: &str) -> Option<&Mirror> {
        self.mirror_of(key).filter(|m| m.projection.is_none())
    }
}

/// One resource's stored objects as this server knows them.
#[derive(Debug)]
struct Mirror {
    prefix: String,
    /// What is kept of each object: `None` for the whole object.
    projection: Option<Projection>,
    /// The most objects the mirror holds before it leaves the resource to the store.
    most: usize,
    known: Mutex<Known>,
}

#[derive(Debug, Default)]
struct Known {
    /// Whether a listing came in and its watch has not ended since: only then does the
    /// mirror hold everything the store does.
    in_step: bool,
    /// Every change up to this revision has come through the watch.
    watched: u64,
    /// By key: the revision an entry is as of and the object, or `None` for a delete this
    /// server made that the watch has not delivered yet.
    entries: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    revision: u64,
    object: Option<Decoded>,
}

/// A stored value as decoded, or `Err` for one that is not JSON (whose read must fail as the
/// store's does, so the mirror does not answer for it).
type Decoded = Result<Arc<Value>, ()>;

/// Where a piece of news comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Watch,
    Local,
}

impl Mirror {
    fn new(prefix: String, projection: Option<Projection>, most: usize) -> Self {
        Self {
            prefix,
            projection,
            most,
            known: Mutex::default(),
        }
    }

    /// A stored value as this mirror keeps it.
    fn decode(&self, kv: &KeyValue) -> Decoded {
        let value: Value = serde_json::from_slice(&kv.value).map_err(|_| ())?;
        Ok(Arc::new(match self.projection {
            Some(project) => project(&value),
            None => value,
        }))
    }

    fn list(&self, prefix: &str) -> Option<Vec<Value>> {
        let known = self.lock();
        if !known.in_step {
            return None;
        }
        let mut out = Vec::new();
        for (_, entry) in known
            .entries
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(key, _)| key.starts_with(prefix))
        {
            match &entry.object {
                Some(Ok(object)) => out.push(Value::clone(object)),
                Some(Err(())) => return None,
                None => {}
            }
        }
        Some(out)
    }

    fn get(&self, key: &str) -> Option<Option<Value>> {
        let known = self.lock();
        if !known.in_step {
            return None;
        }
        match known
            .entries
            .get(key)
            .and_then(|entry| entry.object.as_ref())
        {
            Some(Ok(object)) => Some(Some(Value::clone(object))),
            Some(Err(())) => None,
            None => Some(None),
        }
    }

    /// Starts over from a listing at `revision`, keeping local news newer than it; a listing
    /// of more than its most objects leaves the mirror out of step.
    fn reset(&self, items: &[KeyValue], revision: u64) {
        let decoded: Vec<Decoded> = items.iter().map(|kv| self.decode(kv)).collect();
        let mut known = self.lock();
        known.entries.retain(|_, entry| entry.revision > revision);
        known.watched = revision;
        known.in_step = items.len() <= self.most;
        if !known.in_step {
            known.entries.clear();
            return;
        }
        for (kv, object) in items.iter().zip(decoded) {
            known.learn(&kv.key, kv.mod_revision, Some(object), Source::Watch);
        }
    }

    /// Takes in one watch event; answers false when the mirror has grown past its most.
    fn watched(&self, event: &WatchEvent) -> bool {
        let decoded = match event {
            WatchEvent::Put { kv, .. } => Some(self.decode(kv)),
            _ => None,
        };
        let mut known = self.lock();
        match event {
            WatchEvent::Put { kv, .. } => {
                if let Some(object) = decoded {
                    known.learn(&kv.key, kv.mod_revision, Some(object), Source::Watch);
                }
            }
            WatchEvent::Delete { prev, revision } => {
                if known
                    .entries
                    .get(&prev.key)
                    .is_some_and(|entry| entry.revision <= *revision)
                {
                    known.entries.remove(&prev.key);
                }
            }
            WatchEvent::Progress { .. } => {}
        }
        // A tombstone goes when the watch delivers its delete (above), or with the next
        // listing when the watch ends first.
        known.watched = known.watched.max(event.revision());
        if known.entries.len() > self.most {
            known.out_of_step();
            return false;
        }
        true
    }

    /// The watch ended: answer from the store until the next listing.
    fn ended(&self) {
        self.lock().out_of_step();
    }

    fn lock(&self) -> MutexGuard<'_, Known> {
        // Every change leaves the map whole, so a poisoned lock still holds a usable copy.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Known {
    fn learn(&mut self, key: &str, revision: u64, object: Option<Decoded>, source: Source) {
        if source == Source::Local && revision <= self.watched {
            return;
        }
        match self.entries.get_mut(key) {
            Some(entry) if entry.revision > revision => {}
            Some(entry) => *entry = Entry { revision, object },
            None => {
                self.entries
                    .insert(key.to_owned(), Entry { revision, object });
            }
        }
    }

    fn out_of_step(&mut self) {
        self.in_step = false;
        self.entries.clear();
    }
}

/// Keeps every mirror of `state` in step with the store until `stop`: one task per mirror.
pub(crate) fn spawn(state: &State, stop: &signal::Receiver<bool>) {
    for index in 0..state.storage.mirrors().mirrors.len() {
        let state = state.clone();
        spawn_repeating(stop.clone(), RESYNC_AFTER, move || {
            let state = state.clone();
            async move { follow(&state, index).await }
        });
    }
}

/// One listing of mirror `index`'s resource and the watch after it; returns when the watch
/// ends, or after a pause when the resource holds too many objects to mirror.
async fn follow(state: &State, index: usize) {
    let storage = &state.storage;
    let mirror = &storage.mirrors().mirrors[index];
    let Ok(listed) = storage
        .list(&mirror.prefix, None, None, Some(mirror.most + 1))
        .await
    else {
        return;
    };
    mirror.reset(&listed.items, listed.revision);
    if listed.items.len() > mirror.most {
        tokio::time::sleep(RECHECK_CROWDED_AFTER).await;
        return;
    }
    let Ok(mut watch) = storage
        .watch_without_prev(&mirror.prefix, listed.revision)
        .await
    else {
        mirror.ended();
        return;
    };
    while let Some(Ok(event)) = watch.next().await {
        if !mirror.watched(&event) {
            break;
        }
    }
    mirror.ended();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Bytes;

    const QUOTAS: &str = "/registry/core/resourcequotas/";

    fn quota(namespace: &str, name: &str, revision: u64) -> KeyValue {
        KeyValue {
            key: format!("{QUOTAS}{namespace}/{name}"),
            value: Bytes::from(format!(
                r#"{{"metadata":{{"name":"{name}","rv":{revision}}}}}"#
            )),
            create_revision: 2,
            mod_revision: revision,
        }
    }

    fn delete(kv: &KeyValue, revision: u64) -> WatchEvent {
        WatchEvent::Delete {
            prev: KeyValue {
                value: Bytes::new(),
                ..kv.clone()
            },
            revision,
        }
    }

    fn names(objects: Option<Vec<Value>>) -> Option<Vec<String>> {
        objects.map(|objects| {
            objects
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap_or("?").to_owned())
                .collect()
        })
    }

    fn quotas(mirrors: &Mirrors) -> &Mirror {
        mirrors.mirror_of(QUOTAS).expect("quotas are mirrored")
    }

    #[test]
    fn answers_only_in_step_with_the_store() {
        let mirrors = Mirrors::default();
        assert_eq!(mirrors.list(QUOTAS), None, "nothing listed yet");
        mirrors.observe(&quota("a", "q", 3));
        assert_eq!(
            mirrors.list(QUOTAS),
            None,
            "local news alone is not everything"
        );
        quotas(&mirrors).reset(&[quota("a", "p", 2)], 4);
        assert_eq!(
            names(mirrors.list(QUOTAS)),
            Some(vec!["p".into()]),
            "news at or before the listing is the listing's to tell"
        );
        quotas(&mirrors).ended();
        assert_eq!(mirrors.list(QUOTAS), None, "the watch ended");
        assert_eq!(
            mirrors.list("/registry/core/secrets/a/"),
            None,
            "not mirrored"
        );
    }

    #[test]
    fn learns_from_watch_and_local_writes_by_namespace() {
        let mirrors = Mirrors::default();
        quotas(&mirrors).reset(&[quota("a", "p", 2), quota("b", "p", 3)], 3);
        mirrors.observe(&quota("a", "q", 5));
        assert_eq!(
            names(mirrors.list(&format!("{QUOTAS}a/"))),
            Some(vec!["p".into(), "q".into()]),
            "this server's write is seen before the watch delivers it"
        );
        assert!(quotas(&mirrors).watched(&WatchEvent::Put {
            kv: quota("a", "q", 5),
            prev: None
        }));
        mirrors.deleted(&quota("a", "p", 2).key, 6);
        assert_eq!(
            names(mirrors.list(&format!("{QUOTAS}a/"))),
            Some(vec!["q".into()])
        );
        assert_eq!(
            mirrors.get(&quota("a", "p", 0).key),
            Some(None),
            "deleted here"
        );
        // The watch delivers the delete's earlier history: nothing comes back.
        assert!(quotas(&mirrors).watched(&WatchEvent::Put {
            kv: quota("a", "p", 4),
            prev: None
        }));
        assert_eq!(mirrors.get(&quota("a", "p", 0).key), Some(None));
        assert!(quotas(&mirrors).watched(&delete(&quota("a", "p", 4), 6)));
        assert_eq!(
            names(mirrors.list(QUOTAS)),
            Some(vec!["q".into(), "p".into()]),
            "key order: a/q, b/p"
        );
        // A read that began before the delete reports after the watch passed it.
        mirrors.observe(&quota("a", "p", 2));
        assert_eq!(mirrors.get(&quota("a", "p", 0).key), Some(None));
    }

    #[test]
    fn a_value_that_is_not_json_is_left_to_the_store() {
        let mirrors = Mirrors::default();
        let mut broken = quota("a", "p", 2);
        broken.value = Bytes::from_static(b"{not json");
        quotas(&mirrors).reset(&[broken, quota("b", "p", 2)], 2);
        assert_eq!(mirrors.list(&format!("{QUOTAS}a/")), None);
        assert_eq!(mirrors.get(&quota("a", "p", 0).key), None);
        assert_eq!(
            names(mirrors.list(&format!("{QUOTAS}b/"))),
            Some(vec!["p".into()])
        );
    }

    #[test]
    fn a_crowded_resource_is_left_to_the_store() {
        let mirrors = Mirrors::default();
        let many: Vec<KeyValue> = (0..=MOST)
            .map(|i| quota("a", &format!("q{i}"), 2))
            .collect();
        quotas(&mirrors).reset(&many, 3);
        assert_eq!(mirrors.list(QUOTAS), None);
        quotas(&mirrors).reset(&many[..MOST], 3);
        assert_eq!(mirrors.list(QUOTAS).map(|o| o.len()), Some(MOST));
        assert!(!quotas(&mirrors).watched(&WatchEvent::Put {
            kv: quota("b", "one-more", 4),
            prev: None
        }));
        assert_eq!(mirrors.list(QUOTAS), None);
    }
}
