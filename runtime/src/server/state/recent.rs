//! The objects this server wrote or read last, kept so that an update need not read the object
//! from storage before its compare-and-swap.
//!
//! A stored value never changes at its mod revision, so a copy of key `k` at revision `r` is
//! exactly what the store holds while `k`'s mod revision is `r`; the update that starts from it
//! names `r` as the expected revision, and a stale copy costs one failed write (which answers
//! with the current value), never a lost one. Upstream's `GuaranteedUpdate` starts from its
//! watch cache's copy the same way. Answers that no write confirms (a conflict with the client's
//! resourceVersion, a no-op, a dry run) are decided on a fresh read instead (see
//! `handlers::update::update_with`).
//!
//! Memory is bounded by two generations: new entries go into the young map; when it is full
//! (by count or bytes) it becomes the old one and the previous old one is dropped, so an entry
//! lives for between one and two generations of writes after its last use.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::storage::KeyValue;

/// Entries per generation. Large enough that a controller cycling through tens of thousands
/// of objects still finds each one (upstream's watch cache holds every object); each entry
/// costs its key and about 100 bytes beside the value.
const GENERATION_ENTRIES: usize = 1 << 16;
/// Bytes of values per generation, so at most twice this stays alive because of the cache.
const GENERATION_BYTES: usize = 64 << 20;

/// The last known value of recently used keys.
#[derive(Debug, Default)]
pub(crate) struct RecentObjects {
    generations: Mutex<Generations>,
}

#[derive(Debug, Default)]
struct Generations {
    young: HashMap<String, KeyValue>,
    young_bytes: usize,
    old: HashMap<String, KeyValue>,
}

impl RecentObjects {
    /// The newest value known for `key`, if it was used lately.
    pub(crate) fn get(&self, key: &str) -> Option<KeyValue> {
        let generations = self.lock();
        generations
            .young
            .get(key)
            .or_else(|| generations.old.get(key))
            .cloned()
    }

    /// Remembers `kv`, unless a newer value of its key is known already (a read that raced
    /// with a write may report after it).
    pub(crate) fn remember(&self, kv: &KeyValue) {
        let mut generations = self.lock();
        if generations.newest_revision(&kv.key) >= kv.mod_revision {
            return;
        }
        generations.old.remove(&kv.key);
        if generations.young.len() >= GENERATION_ENTRIES
            || generations.young_bytes + kv.value.len() > GENERATION_BYTES
        {
            generations.old = std::mem::take(&mut generations.young);
            generations.young_bytes = 0;
        }
        generations.young_bytes += kv.value.len();
        if let Some(replaced) = generations.young.insert(kv.key.clone(), kv.clone()) {
            generations.young_bytes -= replaced.value.len();
        }
    }

    /// Forgets `key`, deleted at `revision` (unless a newer value is known).
    pub(crate) fn forget(&self, key: &str, revision: u64) {
        let mut generations = self.lock();
        if generations.newest_revision(key) >= revision {
            return;
        }
        if let Some(removed) = generations.young.remove(key) {
            generations.young_bytes -= removed.value.len();
        }
        generations.old.remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        // Every update leaves the maps whole, so a poisoned lock still holds a usable cache.
        self.generations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Generations {
    fn newest_revision(&self, key: &str) -> u64 {
        self.young
            .get(key)
            .or_else(|| self.old.get(key))
            .map_or(0, |kv| kv.mod_revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Bytes;

    fn kv(key: &str, revision: u64, value: &str) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Bytes::from(value.to_owned()),
            create_revision: 2,
            mod_revision: revision,
        }
    }

    #[test]
    fn keeps_the_newest_value_of_a_key() {
        let recent = RecentObjects::default();
        recent.remember(&kv("/a", 5, "five"));
        recent.remember(&kv("/a", 3, "three"));
        assert_eq!(recent.get("/a").map(|kv| kv.mod_revision), Some(5));
        recent.remember(&kv("/a", 7, "seven"));
        assert_eq!(
            recent.get("/a").map(|kv| kv.value),
            Some(Bytes::from("seven"))
        );
    }

    #[test]
    fn a_delete_forgets_only_older_values() {
        let recent = RecentObjects::default();
        recent.remember(&kv("/a", 5, "five"));
        recent.forget("/a", 4);
        assert!(recent.get("/a").is_some(), "a delete older than the value");
        recent.forget("/a", 6);
        assert!(recent.get("/a").is_none());
    }

    #[test]
    fn memory_is_bounded_by_two_generations() {
        let recent = RecentObjects::default();
        let total = 3 * GENERATION_ENTRIES;
        for i in 0..total {
            recent.remember(&kv(&format!("/k{i}"), i as u64 + 2, "v"));
        }
        let kept = (0..total)
            .filter(|i| recent.get(&format!("/k{i}")).is_some())
            .count();
        assert!(kept <= 2 * GENERATION_ENTRIES, "kept {kept}");
        assert!(
            recent.get(&format!("/k{}", total - 1)).is_some(),
            "the newest stays"
        );
        assert!(recent.get("/k0").is_none(), "the oldest goes");
    }

    #[test]
    fn a_rewritten_entry_starts_a_new_life() {
        let recent = RecentObjects::default();
        recent.remember(&kv("/first", 2, "v"));
        for i in 0..GENERATION_ENTRIES {
            recent.remember(&kv(&format!("/k{i}"), i as u64 + 3, "v"));
        }
        // `/first` is in the old generation now; a newer write brings it back.
        recent.remember(&kv("/first", 10_000, "w"));
        for i in 0..GENERATION_ENTRIES {
            recent.remember(&kv(&format!("/m{i}"), i as u64 + 20_000, "v"));
        }
        assert_eq!(recent.get("/first").map(|kv| kv.mod_revision), Some(10_000));
    }
}
