//! The watch cache: one storage watch per watched resource and version, shared by every HTTP
//! watcher of it.
//!
//! A [`Feed`] starts at the store's current revision and reads the store's watch of the whole
//! resource (every namespace) through the storage trait alone, so it works over any engine.
//! Each change is decoded, converted and encoded once, into an [`Entry`] that keeps the served
//! object's JSON and the event line of its natural type (ADDED for a create, MODIFIED for an
//! update, DELETED for a delete); the other two lines and the decoded objects that selectors
//! need are made on first use and shared the same way. Entries go into a ring of the last
//! `watch_queue` changes; watchers keep a cursor into it and are woken when an entry arrives.
//! A watcher whose cursor falls out of the ring (its client did not read that many events) has
//! missed changes and its stream is ended by `watch` (without an error, as upstream's cacher
//! does, so its client resumes from the last change it saw). The ring is the only buffer: the feed never
//! waits for a watcher.
//!
//! A feed lives while a watcher holds it; the last watcher to go stops its storage watch.
//! Entries are in revision order, so a watcher that joins at revision `r` starts at the first
//! entry newer than `r`; `base` is the revision up to which entries have left the ring, and a
//! watcher that starts before it reads history from the store first (see `watch`).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::Waker;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::storage::{KeyValue, Storage, WatchError, WatchEvent as StoreEvent, WatchStream};

use crate::server::http::error::ApiError;
use crate::server::http::{cbor, protobuf};
use crate::server::objects::served::ServedJson;
use crate::server::objects::stored::{convert_event, from_stored_converted};
use crate::server::state::keys;
use crate::server::{Call, stopped};

/// The feeds of a server, by resource prefix, served version and catalog.
#[derive(Default)]
pub(crate) struct WatchCache {
    feeds: tokio::sync::Mutex<HashMap<FeedKey, Weak<Feed>>>,
}

impl fmt::Debug for WatchCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchCache").finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FeedKey {
    prefix: String,
    api_version: String,
    /// The catalog the feed decodes with (its address): a CRD change swaps the catalog, and
    /// watches that start after it get a feed that serves the new definition. The feed keeps
    /// its catalog alive, so a live feed's address cannot be reused.
    catalog: usize,
}

impl WatchCache {
    /// The running feed of `call`'s resource and version, started when there is none.
    pub(crate) async fn feed(&self, call: &Call) -> Result<Arc<Feed>, WatchError> {
        let info = call.info();
        let key = FeedKey {
            prefix: keys::resource_prefix(info),
            api_version: info.api_version(),
            catalog: Arc::as_ptr(&call.registry) as usize,
        };
        // Held across the start so that concurrent first watchers share one storage watch.
        let mut feeds = self.feeds.lock().await;
        if let Some(feed) = feeds.get(&key).and_then(Weak::upgrade)
            && !feed.ended()
        {
            return Ok(feed);
        }
        feeds.retain(|_, feed| feed.strong_count() > 0);
        let storage = &call.state.storage;
        let start = storage
            .current_revision()
            .await
            .map_err(|e| WatchError::Internal(e.to_string()))?;
        let stream = storage.watch(&key.prefix, start).await?;
        let (stop, stopped) = oneshot::channel();
        let shared = Arc::new(Shared {
            ring: Mutex::new(Ring {
                entries: VecDeque::new(),
                first_seq: 0,
                base: start,
                progress: start,
                capacity: call.tun.watch_queue.max(1),
                end: None,
                wakers: HashMap::new(),
            }),
        });
        tokio::spawn(run(shared.clone(), call.clone(), stream, stopped));
        let feed = Arc::new(Feed {
            shared,
            _stop: stop,
        });
        feeds.insert(key, Arc::downgrade(&feed));
        Ok(feed)
    }
}

/// A watcher's handle on a shared feed; dropping the last one stops the feed.
pub(crate) struct Feed {
    shared: Arc<Shared>,
    /// Dropped with the feed, which tells its task to stop.
    _stop: oneshot::Sender<()>,
}

struct Shared {
    ring: Mutex<Ring>,
}

struct Ring {
    entries: VecDeque<Arc<Entry>>,
    /// The sequence number of `entries[0]`; a watcher's cursor is the next one it reads.
    first_seq: u64,
    /// Every change after this revision is in `entries` or still to come.
    base: u64,
    /// Every change up to this revision has reached the ring.
    progress: u64,
    capacity: usize,
    /// Set when the store's watch ended: the ERROR line to send then, if any.
    end: Option<Option<Bytes>>,
    /// Watchers waiting for the next entry, by watcher id.
    wakers: HashMap<u64, Waker>,
}

/// What a watcher finds at its cursor.
pub(crate) enum Next {
    /// Entries were appended to the output and the cursor moved past them.
    Entries,
    /// The cursor fell out of the ring: changes were missed.
    Lagged,
    /// The feed ended after the last entry, with this ERROR line if it failed.
    Ended(Option<Bytes>),
    /// Nothing new; the watcher is woken when something comes. Every change up to the
    /// revision given has been seen.
    Idle(u64),
}

/// A unique id per watcher, for its waker slot.
pub(crate) fn watcher_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Feed {
    fn ring(&self) -> MutexGuard<'_, Ring> {
        self.shared.lock()
    }

    fn ended(&self) -> bool {
        self.ring().end.is_some()
    }

    /// The cursor of a watcher that has seen every change up to `after`, or `None` when
    /// changes after it have already left the ring.
    pub(crate) fn join(&self, after: u64) -> Option<u64> {
        let ring = self.ring();
        if after < ring.base {
            return None;
        }
        let skip = ring.entries.partition_point(|e| e.revision <= after);
        Some(ring.first_seq + skip as u64)
    }

    /// Takes up to `max` entries at `cursor` into `out`, or registers `waker` under `id`
    /// when there are none.
    pub(crate) fn next(
        &self,
        cursor: &mut u64,
        max: usize,
        out: &mut Vec<Arc<Entry>>,
        id: u64,
        waker: &Waker,
    ) -> Next {
        let mut ring = self.ring();
        if *cursor < ring.first_seq {
            return Next::Lagged;
        }
        let offset = usize::try_from(*cursor - ring.first_seq).unwrap_or(usize::MAX);
        if offset < ring.entries.len() {
            let taken = ring.entries.range(offset..).take(max).cloned();
            let before = out.len();
            out.extend(taken);
            *cursor += (out.len() - before) as u64;
            return Next::Entries;
        }
        if let Some(end) = &ring.end {
            return Next::Ended(end.clone());
        }
        match ring.wakers.get_mut(&id) {
            Some(known) if known.will_wake(waker) => {}
            Some(known) => known.clone_from(waker),
            None => {
                ring.wakers.insert(id, waker.clone());
            }
        }
        Next::Idle(ring.progress)
    }

    /// Forgets a watcher that is going away.
    pub(crate) fn leave(&self, id: u64) {
        self.ring().wakers.remove(&id);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Ring> {
        // A panic elsewhere cannot leave the ring half-updated: every update is one push or
        // pop, so a poisoned lock still guards a consistent ring.
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, entry: Entry, wake: &mut Vec<Waker>) {
        {
            let mut ring = self.lock();
            ring.progress = ring.progress.max(entry.revision);
            ring.entries.push_back(Arc::new(entry));
            while ring.entries.len() > ring.capacity {
                if let Some(old) = ring.entries.pop_front() {
                    ring.base = old.revision;
                    ring.first_seq += 1;
                }
            }
            wake.extend(ring.wakers.drain().map(|(_, waker)| waker));
        }
        // Woken outside the lock: each woken watcher takes it right away.
        for waker in wake.drain(..) {
            waker.wake();
        }
    }

    fn progress(&self, revision: u64) {
        let mut ring = self.lock();
        ring.progress = ring.progress.max(revision);
    }

    fn end(&self, error: Option<Bytes>) {
        let wakers: Vec<Waker> = {
            let mut ring = self.lock();
            ring.end = Some(error);
            ring.wakers.drain().map(|(_, waker)| waker).collect()
        };
        for waker in wakers {
            waker.wake();
        }
    }
}

/// Reads the store's watch into the ring until the last watcher leaves or the server stops.
async fn run(
    shared: Arc<Shared>,
    call: Call,
    mut stream: WatchStream,
    mut stop: oneshot::Receiver<()>,
) {
    let served = ServedJson::new(&call);
    let mut server_stop = call.tun.stop.clone();
    let mut wake = Vec::new();
    loop {
        let event = tokio::select! {
            _ = &mut stop => return,
            _ = stopped(&mut server_stop) => {
                shared.end(None);
                return;
            }
            event = stream.next() => event,
        };
        match event {
            None => {
                shared.end(None);
                return;
            }
            Some(Err(e)) => {
                shared.end(Some(error_event(ApiError::from_watch(e))));
                return;
            }
            Some(Ok(StoreEvent::Progress { revision })) => shared.progress(revision),
            Some(Ok(mut event)) => {
                // Converted by the resource's webhook, if it has one, before the entry renders
                // the values; a failure is the entry's ERROR event.
                let failure = convert_event(&call, &mut event).await.err();
                if let Some(entry) = Entry::new(&call, &served, event, failure) {
                    shared.push(entry, &mut wake);
                }
            }
        }
    }
}

/// The three watch event types a change can take for one watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One change, decoded and encoded once for every watcher of the feed.
pub(crate) struct Entry {
    /// The change's revision.
    pub(crate) revision: u64,
    /// The store key of the object.
    pub(crate) key: String,
    /// The type of the event for a watcher without selectors.
    pub(crate) natural: EventType,
    /// The value before an update, for selectors (`None` for creates and deletes).
    prev: Option<KeyValue>,
    /// The served object's JSON, or the ERROR line when it could not be served.
    object: Result<Bytes, Bytes>,
    lines: [OnceLock<Bytes>; 3],
    /// The events in protobuf framing, written for the first protobuf watcher that wants one;
    /// `cbor_frames` likewise in CBOR.
    frames: [OnceLock<Result<Bytes, Bytes>>; 3],
    cbor_frames: [OnceLock<Result<Bytes, Bytes>>; 3],
    value: OnceLock<Result<Value, Bytes>>,
    prev_value: OnceLock<Result<Value, Bytes>>,
}

/// `{"type":"<type>","object":<object>}` and a newline: the same bytes as encoding the event
/// object with `serde_json`.
pub(crate) fn event_line(kind: &str, object: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(object.len() + kind.len() + 23);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

impl Entry {
    fn new(
        call: &Call,
        served: &ServedJson,
        event: StoreEvent,
        failure: Option<ApiError>,
    ) -> Option<Entry> {
        let (revision, key, natural, stored, prev) = match event {
            StoreEvent::Progress { .. } => return None,
            StoreEvent::Put { kv, prev } => {
                let natural = if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                (kv.mod_revision, kv.key, natural, kv.value, prev)
            }
            // The deleted object carries the revision of its deletion, as upstream sends it.
            StoreEvent::Delete { prev, revision } => {
                (revision, prev.key, EventType::Deleted, prev.value, None)
            }
        };
        let lines: [OnceLock<Bytes>; 3] = Default::default();
        let rendered = match failure {
            Some(e) => Err(e),
            None => served.json(call, &stored, revision),
        };
        let object = match rendered {
            Ok(json) => {
                let line = event_line(natural.as_str(), &json);
                // The object is the line minus the envelope, shared rather than copied.
                let start = line.len() - json.len() - 2;
                let object = line.slice(start..line.len() - 2);
                let _ = lines[natural.index()].set(line);
                Ok(object)
            }
            Err(e) => Err(error_event(e)),
        };
        Some(Entry {
            revision,
            key,
            natural,
            prev,
            object,
            lines,
            frames: Default::default(),
            cbor_frames: Default::default(),
            value: OnceLock::new(),
            prev_value: OnceLock::new(),
        })
    }

    /// The event line of type `kind` (object representation), or the ERROR line.
    pub(crate) fn line(&self, kind: EventType) -> Result<Bytes, Bytes> {
        let object = self.object.as_ref().map_err(Clone::clone)?;
        Ok(self.lines[kind.index()]
            .get_or_init(|| event_line(kind.as_str(), object))
            .clone())
    }

    /// The event of type `kind` in protobuf framing (the object of `object_kind` in
    /// `api_version`, the watched resource's), or the ERROR line (JSON) when the object could
    /// not be served or written.
    pub(crate) fn frame(
        &self,
        kind: EventType,
        api_version: &str,
        object_kind: &str,
    ) -> Result<Bytes, Bytes> {
        self.frames[kind.index()]
            .get_or_init(|| {
                let object = self.object.as_ref().map_err(Clone::clone)?;
                let frame = protobuf::watch_frame_from_json(
                    kind.as_str(),
                    api_version,
                    object_kind,
                    object,
                );
                frame
                    .map(Bytes::from)
                    .map_err(|e| error_event(ApiError::internal(e)))
            })
            .clone()
    }

    /// The event of type `kind` as a CBOR sequence's data item, or the ERROR line (JSON) when
    /// the object could not be served or written; made once for every CBOR watcher.
    pub(crate) fn cbor_frame(&self, kind: EventType) -> Result<Bytes, Bytes> {
        self.cbor_frames[kind.index()]
            .get_or_init(|| {
                cbor::watch_frame(kind.as_str(), self.value()?)
                    .map(Bytes::from)
                    .map_err(|e| error_event(ApiError::internal(e.0)))
            })
            .clone()
    }

    /// The served object, decoded on first use.
    pub(crate) fn value(&self) -> Result<&Value, Bytes> {
        let object = self.object.as_ref().map_err(Clone::clone)?;
        self.value
            .get_or_init(|| {
                serde_json::from_slice(object).map_err(|e| error_event(ApiError::internal(e)))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The object before an update as served, decoded on first use; `None` for creates and
    /// deletes.
    pub(crate) fn prev_value(&self, call: &Call) -> Option<Result<&Value, Bytes>> {
        let prev = self.prev.as_ref()?;
        Some(
            self.prev_value
                .get_or_init(|| {
                    from_stored_converted(call, &prev.value, prev.mod_revision).map_err(error_event)
                })
                .as_ref()
                .map_err(Clone::clone),
        )
    }
}

/// One event of a watch body: the JSON value and a newline.
pub(crate) fn line(value: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// The ERROR event line carrying `error`'s Status.
pub(crate) fn error_event(error: ApiError) -> Bytes {
    line(&json!({"type": "ERROR", "object": error.into_status()}))
}
