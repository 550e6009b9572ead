//! Bearer tokens that authenticated lately, remembered for ten seconds, as kube-apiserver puts
//! its `tokencache` in front of the token authenticators after the token file
//! (`pkg/kubeapiserver/authenticator/config.go`; `TokenSuccessCacheTTL` 10 s, failures not
//! cached: `staging/src/k8s.io/apiserver/pkg/authentication/token/cache/`). A service-account
//! token is verified and its account (and the object it is bound to) read once in ten seconds
//! rather than on every request, and so is a JWT of a configured issuer. The price is
//! upstream's too: a token whose account or bound pod was just deleted keeps authenticating
//! for up to ten seconds.
//!
//! Entries are keyed by an HMAC of the token under a key made at start, so the cache holds no
//! token; they keep the audit annotations the authentication added, which a hit adds again.
//! At most [`CAPACITY`] entries (upstream's 32 stripes of 128): a full cache first drops what
//! expired, then the entry closest to expiring.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use ring::hmac;

use crate::server::auth::user::User;

/// How long a success is remembered by default.
pub(crate) const SUCCESS_TTL: Duration = Duration::from_secs(10);

/// The most tokens remembered at once.
const CAPACITY: usize = 4096;

/// The user a token authenticated as and the audit annotations that authentication added.
#[derive(Debug, Clone)]
pub(crate) struct Authenticated {
    pub(crate) user: User,
    pub(crate) annotations: Vec<(String, String)>,
}

/// Tokens that authenticated in the last `ttl`.
pub(crate) struct TokenCache {
    ttl: Duration,
    /// `None` when the system gave no randomness to make a key with: nothing is remembered.
    key: Option<hmac::Key>,
    entries: Mutex<HashMap<Digest, Entry>>,
}

/// An HMAC-SHA-256 of a token.
type Digest = [u8; 32];

struct Entry {
    expires: Instant,
    found: Authenticated,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache").finish_non_exhaustive()
    }
}

/// Remembers nothing: the cache of a server without authentication.
impl Default for TokenCache {
    fn default() -> Self {
        Self::new(Duration::ZERO)
    }
}

impl TokenCache {
    /// A cache that remembers successes for `ttl` (zero: nothing).
    pub(crate) fn new(ttl: Duration) -> Self {
        let random = ring::rand::SystemRandom::new();
        let key = (!ttl.is_zero())
            .then(|| hmac::Key::generate(hmac::HMAC_SHA256, &random).ok())
            .flatten();
        Self {
            ttl,
            key,
            entries: Mutex::default(),
        }
    }
}

impl TokenCache {
    /// What `token` authenticated as in the last `ttl`, if it did.
    pub(crate) fn get(&self, token: &str) -> Option<Authenticated> {
        self.get_at(token, Instant::now())
    }

    /// Remembers that `token` authenticated as `found`.
    pub(crate) fn remember(&self, token: &str, found: Authenticated) {
        self.remember_at(token, found, Instant::now());
    }

    fn get_at(&self, token: &str, now: Instant) -> Option<Authenticated> {
        let tag = self.tag(token)?;
        let entries = self.lock();
        let entry = entries.get(&tag).filter(|entry| entry.expires > now)?;
        Some(entry.found.clone())
    }

    fn remember_at(&self, token: &str, found: Authenticated, now: Instant) {
        let Some(tag) = self.tag(token) else {
            return;
        };
        let mut entries = self.lock();
        if entries.len() >= CAPACITY && !entries.contains_key(&tag) {
            entries.retain(|_, entry| entry.expires > now);
            if entries.len() >= CAPACITY {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.expires)
                    .map(|(digest, _)| *digest);
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(
            tag,
            Entry {
                expires: now + self.ttl,
                found,
            },
        );
    }

    /// The token's entry key; `None` without an HMAC key (no TTL, or no randomness to make
    /// one with).
    fn tag(&self, token: &str) -> Option<Digest> {
        let tag = hmac::sign(self.key.as_ref()?, token.as_bytes());
        tag.as_ref().try_into().ok()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Digest, Entry>> {
        // Every change leaves the map whole, so a poisoned lock still holds a usable cache.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(name: &str) -> Authenticated {
        Authenticated {
            user: User::new(name.to_owned(), &[]),
            annotations: vec![("note".to_owned(), name.to_owned())],
        }
    }

    #[test]
    fn remembers_a_success_for_ten_seconds() {
        let cache = TokenCache::new(SUCCESS_TTL);
        let start = Instant::now();
        assert!(cache.get_at("t", start).is_none());
        cache.remember_at("t", found("alice"), start);
        let hit = cache.get_at("t", start + Duration::from_secs(9));
        assert_eq!(
            hit.map(|f| (f.user.username, f.annotations.len())),
            Some(("alice".to_owned(), 1))
        );
        assert!(cache.get_at("t", start + SUCCESS_TTL).is_none(), "expired");
        assert!(cache.get_at("other", start).is_none());
        let off = TokenCache::new(Duration::ZERO);
        off.remember_at("t", found("alice"), start);
        assert!(
            off.get_at("t", start).is_none(),
            "a zero TTL remembers nothing"
        );
    }

    #[test]
    fn holds_at_most_its_capacity() {
        let cache = TokenCache::new(SUCCESS_TTL);
        let start = Instant::now();
        for i in 0..CAPACITY {
            let at = start + Duration::from_millis(u64::try_from(i).unwrap_or(0));
            cache.remember_at(&format!("t{i}"), found("u"), at);
        }
        let later = start + Duration::from_secs(5);
        cache.remember_at("newest", found("n"), later);
        assert_eq!(cache.lock().len(), CAPACITY);
        assert!(
            cache.get_at("t0", later).is_none(),
            "the closest to expiring went"
        );
        assert!(cache.get_at("t1", later).is_some());
        assert!(cache.get_at("newest", later).is_some());
        // Once all have expired, one insert clears them.
        let much_later = start + Duration::from_secs(60);
        cache.remember_at("fresh", found("f"), much_later);
        assert_eq!(cache.lock().len(), 1);
    }
}
