//! The storage contract the API server is written against, and its engines.
//!
//! [`Storage`] is shaped like the small contract etcd publishes for Kubernetes: keyed,
//! revisioned, opaque values, optimistic writes against an expected mod revision, reads at an
//! older revision until that revision is compacted, and watches that resume from any revision
//! still in history. Every write (create, update, delete) takes the next value of one global
//! revision counter, so a revision orders all changes in the store.
//!
//! This module owns the engine-neutral types ([`KeyValue`], [`ListResult`], [`WatchEvent`],
//! [`WatchStream`]) and the per-operation errors. [`embedded`] is the default engine (a redb
//! file in a data directory); `etcd` (feature `etcd`) keeps the same contract over an etcd
//! cluster, for several server replicas; [`conformance`] is the behaviour suite every engine
//! must pass; [`encryption`] wraps an engine to keep listed resources encrypted at rest.
//!
//! Revision conventions, identical in every engine:
//! - a fresh store is at revision 1 and its first write gets revision 2 (as in etcd, so no
//!   object or list ever carries resourceVersion "0", which clients treat specially);
//! - after `compact(c)`, reads at revisions `>= c` still work and reads below fail with
//!   `Compacted`; a watch from revision `r` needs `r >= c`;
//! - a watch from revision `r` delivers the changes with revision `> r`.

pub mod conformance;
pub mod embedded;
pub mod encryption;
#[cfg(feature = "etcd")]
pub mod etcd;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

pub use bytes::Bytes;
use futures_util::Stream;

pub use embedded::{EmbeddedOptions, EmbeddedStorage, OpenError};
pub use encryption::{EncryptedStorage, EncryptionConfig};
#[cfg(feature = "etcd")]
pub use etcd::{EtcdOptions, EtcdStorage};

/// A boxed, sendable future: the return type of every [`Storage`] method.
///
/// Native `async fn` in traits is not dyn-compatible, and the server holds its engine as
/// `Arc<dyn Storage>`, so each method returns a boxed future instead. One allocation per call
/// is noise next to a disk or network round trip, and it avoids a proc-macro dependency.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One stored key with its value and the revisions that describe its life.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyValue {
    /// The key, e.g. `/registry/core/pods/default/web-0`.
    pub key: String,
    /// The value, opaque to the store.
    pub value: Bytes,
    /// The revision of the write that created this key (since its last deletion).
    pub create_revision: u64,
    /// The revision of the write that produced this value: the object's resourceVersion.
    pub mod_revision: u64,
}

impl fmt::Debug for KeyValue {
    // Values can be megabytes; their length says enough in logs and assertion messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyValue")
            .field("key", &self.key)
            .field("value_len", &self.value.len())
            .field("create_revision", &self.create_revision)
            .field("mod_revision", &self.mod_revision)
            .finish()
    }
}

/// The answer to [`Storage::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListResult {
    /// The items in key order, at most `limit` of them.
    pub items: Vec<KeyValue>,
    /// The revision the whole list was read at: the list's resourceVersion, and the revision to
    /// pass back as `at_revision` for the next page.
    pub revision: u64,
    /// Whether keys under the prefix remain after the last item.
    pub more: bool,
    /// How many keys under the prefix remain after the last item (0 when `more` is false).
    pub remaining: u64,
}

/// The answer to [`Storage::delete`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// The value the key held just before the delete.
    pub prev: KeyValue,
    /// The revision of the delete itself.
    pub revision: u64,
}

/// One item of a [`WatchStream`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// A key was created or updated; `kv.mod_revision` is the event's revision.
    Put {
        /// The key's new value.
        kv: KeyValue,
        /// The value before this write, `None` when the write created the key.
        prev: Option<KeyValue>,
    },
    /// A key was deleted.
    Delete {
        /// The value the key held just before the delete.
        prev: KeyValue,
        /// The revision of the delete.
        revision: u64,
    },
    /// Every change under the watched prefix up to `revision` has been delivered; sent when the
    /// stream has been quiet for a while, so bookmarks and consistent reads can move forward.
    Progress {
        /// The revision the watcher is known to be complete up to.
        revision: u64,
    },
}

impl WatchEvent {
    /// The revision this event describes (for progress: the revision it confirms).
    pub fn revision(&self) -> u64 {
        match self {
            WatchEvent::Put { kv, .. } => kv.mod_revision,
            WatchEvent::Delete { revision, .. } | WatchEvent::Progress { revision } => *revision,
        }
    }

    /// The key this event is about; `None` for progress notifications.
    pub fn key(&self) -> Option<&str> {
        match self {
            WatchEvent::Put { kv, .. } => Some(&kv.key),
            WatchEvent::Delete { prev, .. } => Some(&prev.key),
            WatchEvent::Progress { .. } => None,
        }
    }
}

/// Why a read (`get`, `list`, `count`, revision queries) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The requested revision is older than the compaction point (HTTP 410 Expired).
    #[error("required revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: u64,
        /// The oldest revision still readable.
        compacted: u64,
    },
    /// The requested revision is newer than the store has reached (the caller waits briefly,
    /// then answers 504 "Too large resource version").
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: u64,
        /// The store's current revision.
        current: u64,
    },
    /// A stored value failed its integrity check (the message names the key and where it
    /// was stored). Its bytes are not returned; the API server answers a generic 500.
    #[error("storage corruption: {0}")]
    Corrupt(String),
    /// A stored value could not be read back through the encryption at rest configured
    /// ([`EncryptedStorage`]): no provider or key reads it, or it does not decrypt. The
    /// message is upstream's (`no matching prefix found`, `unable to transform key ...`), which
    /// the API server answers in a 500.
    #[error("{0}")]
    Unreadable(String),
    /// The engine failed (I/O, lost connection).
    #[error("storage error: {0}")]
    Internal(String),
}

/// Why [`Storage::create`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CreateError {
    /// The key already exists.
    #[error("key already exists")]
    AlreadyExists {
        /// The value the key holds.
        current: KeyValue,
    },
    /// Key plus value exceed the engine's limit.
    #[error("value of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Key plus value length.
        size: usize,
        /// The engine's limit.
        limit: usize,
    },
    /// The [`Guard`] of [`Storage::create_guarded`] no longer holds: its key changed or is gone.
    #[error("the guard key changed")]
    GuardChanged,
    /// The key's stored value failed its integrity check (the message names the key and
    /// where it was stored); nothing was written.
    #[error("storage corruption: {0}")]
    Corrupt(String),
    /// The engine failed.
    #[error("storage error: {0}")]
    Internal(String),
}

/// What a guarded write requires of another key: that its mod revision is still this one
/// (the key was not written or deleted since it was read at that revision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The other key.
    pub key: String,
    /// Its mod revision when it was read.
    pub mod_revision: u64,
}

/// Why [`Storage::update`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateError {
    /// The key does not exist.
    #[error("key not found")]
    NotFound,
    /// The key's mod revision is not the expected one; `current` is what it holds now.
    #[error("expected mod revision does not match current {}", current.mod_revision)]
    Conflict {
        /// The value the key holds now.
        current: KeyValue,
    },
    /// Key plus value exceed the engine's limit.
    #[error("value of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Key plus value length.
        size: usize,
        /// The engine's limit.
        limit: usize,
    },
    /// The key's stored value failed its integrity check (the message names the key and
    /// where it was stored); nothing was written.
    #[error("storage corruption: {0}")]
    Corrupt(String),
    /// The engine failed.
    #[error("storage error: {0}")]
    Internal(String),
}

/// Why [`Storage::delete`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeleteError {
    /// The key does not exist.
    #[error("key not found")]
    NotFound,
    /// The key's mod revision is not the expected one; `current` is what it holds now.
    #[error("expected mod revision does not match current {}", current.mod_revision)]
    Conflict {
        /// The value the key holds now.
        current: KeyValue,
    },
    /// The key's stored value failed its integrity check (the message names the key and
    /// where it was stored); nothing was written.
    #[error("storage corruption: {0}")]
    Corrupt(String),
    /// The engine failed.
    #[error("storage error: {0}")]
    Internal(String),
}

/// Why a watch could not start, or why a running watch ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// Events after the requested revision are no longer in history (HTTP 410 / ERROR event).
    #[error("required revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        /// The revision the watch needed to start after.
        requested: u64,
        /// The oldest revision still in history.
        compacted: u64,
    },
    /// The watch asked to start after a revision the store has not reached.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: u64,
        /// The store's current revision.
        current: u64,
    },
    /// The watcher fell too far behind the writers and was cut off instead of buffering
    /// without bound; it must relist (HTTP 410). `revision` is the last one it was complete to.
    #[error("watcher fell behind after revision {revision} and must relist")]
    Lagged {
        /// The last revision the watcher had fully received.
        revision: u64,
    },
    /// A stored value the watch had to replay failed its integrity check (the message names
    /// the key and where it was stored). Its bytes are not sent.
    #[error("storage corruption: {0}")]
    Corrupt(String),
    /// The engine failed or was shut down.
    #[error("storage error: {0}")]
    Internal(String),
}

/// Why [`Storage::compact`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The store is already compacted at or past the requested revision.
    #[error("revision {requested} is already compacted (compacted revision {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: u64,
        /// The current compaction point.
        compacted: u64,
    },
    /// The requested revision is newer than the current revision.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: u64,
        /// The store's current revision.
        current: u64,
    },
    /// The engine failed.
    #[error("storage error: {0}")]
    Internal(String),
}

/// A stream of [`WatchEvent`]s in revision order, ending after the first error.
///
/// Engines build it from any `Stream`; consumers use [`WatchStream::next`] or the `Stream`
/// impl. Polling is cancel-safe: dropping a pending `next()` loses no event.
pub struct WatchStream {
    inner: Pin<Box<dyn Stream<Item = Result<WatchEvent, WatchError>> + Send>>,
}

impl WatchStream {
    /// Wraps an engine's stream.
    pub fn new(
        stream: impl Stream<Item = Result<WatchEvent, WatchError>> + Send + 'static,
    ) -> Self {
        Self {
            inner: Box::pin(stream),
        }
    }

    /// The next event, an error that ends the stream, or `None` once it has ended.
    pub async fn next(&mut self) -> Option<Result<WatchEvent, WatchError>> {
        std::future::poll_fn(|cx| self.inner.as_mut().poll_next(cx)).await
    }
}

impl Stream for WatchStream {
    type Item = Result<WatchEvent, WatchError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream").finish_non_exhaustive()
    }
}

/// A revisioned key-value store with optimistic writes and resumable watches.
///
/// Keys compare as bytes; a prefix selects every key that starts with it. All revisions are
/// global: one counter, incremented by exactly one for every successful write.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Returns the key's value at `at_revision` (or the latest), `None` if it did not exist then.
    fn get<'a>(
        &'a self,
        key: &'a str,
        at_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>>;

    /// Returns, in key order, up to `limit` keys (`None` or `Some(0)`: all) under `prefix` from
    /// `start_key` (inclusive) as of one revision (`at_revision` or the latest), with how many remain.
    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at_revision: Option<u64>,
        start_key: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>>;

    /// Returns how many keys exist under `prefix` at the latest revision.
    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>>;

    /// Stores `value` under a key that must not exist yet, returning the stored key-value.
    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>>;

    /// Like [`Storage::create`], in one atomic step with a check of `guard`: the create happens
    /// only while the guard's key still has the guard's mod revision, so a write that depends on
    /// another object (an object and its namespace) cannot land after that object changed.
    /// An existing key answers `AlreadyExists` whatever the guard; otherwise a guard that no
    /// longer holds answers `GuardChanged` and nothing is written.
    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>>;

    /// Replaces the value of an existing key whose mod revision equals `expected_mod_revision`;
    /// on a mismatch nothing is written and the current value is returned in the error.
    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>>;

    /// Deletes an existing key (only if its mod revision equals `expected_mod_revision`, when
    /// given), returning the deleted value and the revision of the delete.
    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>>;

    /// Streams every change under `prefix` with revision greater than `from_revision`, in
    /// revision order with previous values, plus progress notifications while idle.
    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>>;

    /// Like [`Storage::watch`], for a watcher that remembers what it has seen and needs no
    /// previous values: `Put` events may have `prev: None` for updates too, and a `Delete`'s
    /// `prev` may hold only the key (an empty value, revisions 0). Engines that fetch previous
    /// values for each watcher and event (etcd reads them from its history) skip that work; the
    /// default is [`Storage::watch`].
    fn watch_without_prev<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        self.watch(prefix, from_revision)
    }

    /// Returns the revision of the latest acknowledged write (1 for a fresh store).
    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>>;

    /// Discards history older than `revision`, keeping every key's value as of `revision`.
    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>>;

    /// Returns the compaction point: the oldest revision reads and watches can still use.
    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>>;

    /// Whether the value `key` holds at `mod_revision` must be written again even by a write
    /// that leaves it unchanged: upstream's *stale* read. [`EncryptedStorage`] answers true
    /// for a value read through a provider or key other than the one that encrypts writes, so
    /// `kubectl replace` of an unchanged object re-encrypts it (key rotation); engines, and
    /// any key that changed since `mod_revision`, answer false.
    fn stale<'a>(
        &'a self,
        key: &'a str,
        mod_revision: u64,
    ) -> BoxFuture<'a, Result<bool, ReadError>> {
        let _ = (key, mod_revision);
        Box::pin(std::future::ready(Ok(false)))
    }
}

/// Waits until the store reaches `revision`, polling at a short interval; returns whether it
/// did within `timeout`. The server calls this before answering a too-new resourceVersion
/// with 504 "Too large resource version".
pub async fn wait_for_revision(
    storage: &dyn Storage,
    revision: u64,
    timeout: Duration,
) -> Result<bool, ReadError> {
    let deadline = tokio::time::Instant::now() + timeout;
    // Start fast (a write may be committing right now) and back off to keep polling cheap.
    let mut pause = Duration::from_millis(1);
    loop {
        if storage.current_revision().await? >= revision {
            return Ok(true);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}
