//! What this server knows of namespaces' lifecycles, so that a create in an active namespace
//! need not read the namespace from storage first.
//!
//! Upstream's namespace admission reads namespaces from an informer's cache the same way, and
//! lets an object into a namespace that another API server marked for deletion a moment ago.
//! Here the cache only proposes: the create is guarded by the namespace's mod revision as the
//! cache knows it (`Storage::create_guarded`), so it lands only if the namespace has not
//! changed since; otherwise the namespace is read and the create tried again
//! (`handlers::create::create_decoded`). The cache is fed by a watch of the namespaces (the task
//! [`spawn`] runs) and, at once, by this server's own reads and writes of them (through
//! `observed::Observed`). Only "active" is trusted: a namespace the cache does not know, or
//! knows as terminating or gone, is read from storage.
//!
//! Ordering: every entry carries the revision it describes and older news never overwrites
//! newer. A local observation older than what the watch has delivered is dropped (the watch
//! has told more recent news already), and a local delete leaves a tombstone until the watch
//! delivers it, so a late event of the namespace's earlier life cannot bring it back.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::storage::{KeyValue, Storage, WatchEvent};

use crate::server::state::State;
use crate::server::{signal, spawn_repeating};

/// Where namespaces are stored.
pub(crate) const PREFIX: &str = "/registry/core/namespaces/";

/// How long the task waits before listing again after its watch failed.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// The lifecycle of every namespace the server has heard of.
#[derive(Debug, Default)]
pub(crate) struct NamespaceCache {
    known: Mutex<Known>,
}

#[derive(Debug, Default)]
struct Known {
    /// Every change up to this revision has come through the watch.
    watched: u64,
    entries: HashMap<String, Entry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// The revision this state is as of.
    revision: u64,
    lifecycle: Lifecycle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Active,
    Terminating,
    /// Deleted by this server; the watch has not delivered the delete yet.
    Gone,
}

/// Where a piece of news comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Watch,
    Local,
}

impl NamespaceCache {
    /// The mod revision at which the namespace is known to exist and not to be terminating.
    pub(crate) fn active_at(&self, name: &str) -> Option<u64> {
        self.lock()
            .entries
            .get(name)
            .filter(|entry| entry.lifecycle == Lifecycle::Active)
            .map(|entry| entry.revision)
    }

    #[cfg(test)]
    fn is_active(&self, name: &str) -> bool {
        self.active_at(name).is_some()
    }

    /// This server read or wrote `kv` (any key; other keys are ignored).
    pub(crate) fn observe(&self, kv: &KeyValue) {
        if let Some(name) = name_of(&kv.key) {
            let lifecycle = lifecycle_of(&kv.value);
            self.lock()
                .learn(name, kv.mod_revision, lifecycle, Source::Local);
        }
    }

    /// This server deleted `key` at `revision`.
    pub(crate) fn deleted(&self, key: &str, revision: u64) {
        if let Some(name) = name_of(key) {
            self.lock()
                .learn(name, revision, Lifecycle::Gone, Source::Local);
        }
    }

    /// Starts over from a listing at `revision`, keeping local news newer than it.
    fn reset(&self, items: &[KeyValue], revision: u64) {
        let mut known = self.lock();
        known.entries.retain(|_, entry| entry.revision > revision);
        known.watched = revision;
        for kv in items {
            if let Some(name) = name_of(&kv.key) {
                known.learn(
                    name,
                    kv.mod_revision,
                    lifecycle_of(&kv.value),
                    Source::Watch,
                );
            }
        }
    }

    fn watched(&self, event: &WatchEvent) {
        let mut known = self.lock();
        match event {
            WatchEvent::Put { kv, .. } => {
                if let Some(name) = name_of(&kv.key) {
                    known.learn(
                        name,
                        kv.mod_revision,
                        lifecycle_of(&kv.value),
                        Source::Watch,
                    );
                }
            }
            WatchEvent::Delete { prev, revision } => {
                if let Some(name) = name_of(&prev.key)
                    && known
                        .entries
                        .get(name)
                        .is_some_and(|entry| entry.revision <= *revision)
                {
                    known.entries.remove(name);
                }
            }
            WatchEvent::Progress { .. } => {}
        }
        known.watched = known.watched.max(event.revision());
    }

    fn lock(&self) -> MutexGuard<'_, Known> {
        // Every change leaves the map whole, so a poisoned lock still holds a usable cache.
        self.known.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Known {
    fn learn(&mut self, name: &str, revision: u64, lifecycle: Lifecycle, source: Source) {
        if source == Source::Local && revision <= self.watched {
            return;
        }
        match self.entries.get_mut(name) {
            Some(entry) if entry.revision > revision => {}
            Some(entry) => {
                *entry = Entry {
                    revision,
                    lifecycle,
                }
            }
            None => {
                self.entries.insert(
                    name.to_owned(),
                    Entry {
                        revision,
                        lifecycle,
                    },
                );
            }
        }
    }
}

/// The namespace name of a key under [`PREFIX`].
fn name_of(key: &str) -> Option<&str> {
    key.strip_prefix(PREFIX)
        .filter(|name| !name.is_empty() && !name.contains('/'))
}

/// Active unless the stored namespace has a `deletionTimestamp` (a value that does not parse
/// counts as terminating, so the caller reads it and reports what is wrong).
fn lifecycle_of(value: &[u8]) -> Lifecycle {
    #[derive(Deserialize)]
    struct Stored {
        metadata: Metadata,
    }
    #[derive(Deserialize)]
    struct Metadata {
        #[serde(rename = "deletionTimestamp")]
        deletion_timestamp: Option<IgnoredAny>,
    }
    match serde_json::from_slice::<Stored>(value) {
        Ok(stored) if stored.metadata.deletion_timestamp.is_none() => Lifecycle::Active,
        _ => Lifecycle::Terminating,
    }
}

/// Keeps `state`'s namespace cache current: lists the namespaces, then follows their watch,
/// and starts over when the watch fails, until `stop`.
pub(crate) fn spawn(state: State, stop: signal::Receiver<bool>) {
    spawn_repeating(stop, RESYNC_AFTER, move || {
        let state = state.clone();
        async move { follow(&state).await }
    });
}

/// One listing and the watch after it; returns when the watch ends.
async fn follow(state: &State) {
    let storage = &state.storage;
    let Ok(listed) = storage.list(PREFIX, None, None, None).await else {
        return;
    };
    let cache = storage.namespaces();
    cache.reset(&listed.items, listed.revision);
    let Ok(mut watch) = storage.watch_without_prev(PREFIX, listed.revision).await else {
        return;
    };
    while let Some(Ok(event)) = watch.next().await {
        cache.watched(&event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Bytes;

    fn namespace(name: &str, revision: u64, terminating: bool) -> KeyValue {
        let deletion = if terminating {
            r#","deletionTimestamp":"2026-01-01T00:00:00Z""#
        } else {
            ""
        };
        KeyValue {
            key: format!("{PREFIX}{name}"),
            value: Bytes::from(format!(r#"{{"metadata":{{"name":"{name}"{deletion}}}}}"#)),
            create_revision: 2,
            mod_revision: revision,
        }
    }

    fn delete(name: &str, revision: u64) -> WatchEvent {
        WatchEvent::Delete {
            prev: KeyValue {
                key: format!("{PREFIX}{name}"),
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: 0,
            },
            revision,
        }
    }

    fn put(kv: KeyValue) -> WatchEvent {
        WatchEvent::Put { kv, prev: None }
    }

    #[test]
    fn learns_from_listing_watch_and_local_writes() {
        let cache = NamespaceCache::default();
        cache.reset(&[namespace("a", 3, false), namespace("b", 4, true)], 5);
        assert!(cache.is_active("a"));
        assert!(!cache.is_active("b"), "terminating");
        assert!(!cache.is_active("c"), "unknown");
        cache.watched(&put(namespace("c", 6, false)));
        assert!(cache.is_active("c"));
        cache.observe(&namespace("c", 7, true));
        assert!(!cache.is_active("c"), "marked for deletion here");
        cache.watched(&delete("a", 8));
        assert!(!cache.is_active("a"));
        cache.observe(&KeyValue {
            key: "/registry/core/configmaps/a/x".into(),
            ..namespace("x", 9, false)
        });
        assert!(!cache.is_active("x"), "other keys are not namespaces");
    }

    #[test]
    fn old_news_never_overwrites_newer() {
        let cache = NamespaceCache::default();
        cache.reset(&[], 2);
        // Marked and deleted here before the watch delivered the namespace's creation.
        cache.observe(&namespace("a", 5, true));
        cache.deleted(&format!("{PREFIX}a"), 6);
        cache.watched(&put(namespace("a", 3, false)));
        assert!(
            !cache.is_active("a"),
            "the creation event is older than the delete"
        );
        cache.watched(&put(namespace("a", 5, true)));
        cache.watched(&delete("a", 6));
        // A read that started before the delete reports after the watch delivered it.
        cache.observe(&namespace("a", 3, false));
        assert!(!cache.is_active("a"));
        // Created again later: the new life counts.
        cache.watched(&put(namespace("a", 9, false)));
        assert!(cache.is_active("a"));
    }

    #[test]
    fn a_listing_keeps_local_news_newer_than_itself() {
        let cache = NamespaceCache::default();
        cache.observe(&namespace("a", 8, true));
        cache.reset(&[namespace("a", 3, false)], 7);
        assert!(!cache.is_active("a"));
        cache.reset(&[namespace("a", 3, false)], 9);
        assert!(cache.is_active("a"), "a newer listing wins");
    }

    #[test]
    fn unreadable_values_are_not_trusted() {
        let cache = NamespaceCache::default();
        let mut kv = namespace("a", 3, false);
        kv.value = Bytes::from_static(b"not json");
        cache.observe(&kv);
        assert!(!cache.is_active("a"));
    }
}
