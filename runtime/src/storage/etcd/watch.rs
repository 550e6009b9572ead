//! Watches over etcd: one etcd watch stream per [`WatchStream`], started at the requested
//! revision with previous values, progress requested while idle, and resumed transparently
//! when the connection to a member breaks.
//!
//! etcd watches from a start revision `s` deliver changes with revision `>= s` and refuse
//! `s` below the compaction point. The trait's watch from `r` delivers changes `> r` and
//! needs `r` at or past the compaction point (the values the first events replace must
//! still exist), so the etcd watch starts at `r` itself and events at `r` are skipped. A
//! resumed watch starts the same way from the last revision it was complete to.
//!
//! Progress: when the stream has been quiet for the progress interval, the watch asks etcd
//! for a progress notification (a response without events whose header revision every
//! future event exceeds) and passes it on as [`WatchEvent::Progress`]. etcd releases before
//! 3.4.24 and 3.5.8 answer such requests out of band (etcd issue 15220): the answer can
//! overtake events still on their way, above all while a new watch replays history. Against
//! those, a requested notification is held until the watch has existed for
//! [`SYNC_GRACE`] and stayed quiet for another interval, and is dropped if events overtake it;
//! etcd's periodic per-watch notifications are ordered in every release and pass at once.
//! Progress never moves the point events are skipped below, so an event that still came
//! late is delivered, not lost.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{EventType, WatchOptions, WatchResponse};

use super::{Failure, Inner, MAX_RESPONSE_BYTES, classify, revision, signed};
use crate::storage::{WatchError, WatchEvent, WatchStream};

/// How long a broken watch keeps trying to resume before it ends with an error.
const RESUME_FOR: Duration = Duration::from_secs(15);

/// How long a new etcd watch is assumed to be replaying history, during which requested
/// progress from an etcd that sends it out of order is not trusted.
const SYNC_GRACE: Duration = Duration::from_millis(500);

/// The watch id etcd puts on answers to progress requests (they belong to no one watch).
const STREAM_WIDE: i64 = -1;

/// What a watch's events carry of the values before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Previous {
    /// The previous value of every update and delete (etcd reads it for each event).
    Values,
    /// None: deletes carry the key only (see `Storage::watch_without_prev`).
    Keys,
}

struct Follow {
    inner: Arc<Inner>,
    /// The full etcd prefix watched.
    key: Vec<u8>,
    previous: Previous,
    /// Every change up to this revision has been handed out (or was before the start):
    /// later events at or below it are duplicates from a resumed watch.
    delivered: u64,
    /// The last progress revision handed out; a watch resumes from past it too.
    progressed: u64,
    stream: Option<etcd_client::WatchStream>,
    /// When the current etcd watch was opened.
    opened: Instant,
    /// When the last event arrived (or the watch was opened).
    last_event: Instant,
    /// A requested progress revision not trusted yet, and when it came.
    candidate: Option<(u64, Instant)>,
    pending: VecDeque<Result<WatchEvent, WatchError>>,
    done: bool,
}

/// Opens the etcd watch and wraps it; fails when the first connection cannot be made.
pub(super) async fn start(
    inner: Arc<Inner>,
    key: Vec<u8>,
    from_revision: u64,
    previous: Previous,
) -> Result<WatchStream, WatchError> {
    let stream = open(&inner, &key, from_revision, previous)
        .await
        .map_err(|f| WatchError::Internal(f.message()))?;
    let now = Instant::now();
    let follow = Follow {
        inner,
        key,
        previous,
        delivered: from_revision,
        progressed: from_revision,
        stream: Some(stream),
        opened: now,
        last_event: now,
        candidate: None,
        pending: VecDeque::new(),
        done: false,
    };
    Ok(WatchStream::new(futures_util::stream::unfold(
        follow,
        |mut follow| async move {
            let item = follow.next().await?;
            Some((item, follow))
        },
    )))
}

async fn open(
    inner: &Inner,
    key: &[u8],
    from_revision: u64,
    previous: Previous,
) -> Result<etcd_client::WatchStream, Failure> {
    let mut options = WatchOptions::new()
        .with_prefix()
        .with_start_revision(signed(from_revision.max(1)))
        .with_progress_notify();
    if previous == Previous::Values {
        options = options.with_prev_key();
    }
    let mut client = inner
        .client
        .watch_client()
        .max_decoding_message_size(MAX_RESPONSE_BYTES);
    match tokio::time::timeout(
        inner.options.request_timeout,
        client.watch(key.to_vec(), Some(options)),
    )
    .await
    {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(error)) => Err(classify(&error)),
        Err(_) => Err(Failure::Transient(
            "etcd did not open the watch in time".to_owned(),
        )),
    }
}

impl Follow {
    /// The next item; `None` once the stream has ended (after an error, or never).
    async fn next(&mut self) -> Option<Result<WatchEvent, WatchError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                if item.is_err() {
                    self.done = true;
                    self.pending.clear();
                }
                return Some(item);
            }
            if self.done {
                return None;
            }
            let Some(stream) = self.stream.as_mut() else {
                match self.resume().await {
                    Ok(stream) => {
                        self.stream = Some(stream);
                        self.opened = Instant::now();
                        self.last_event = self.opened;
                        self.candidate = None;
                    }
                    Err(error) => {
                        self.done = true;
                        return Some(Err(error));
                    }
                }
                continue;
            };
            let got =
                tokio::time::timeout(self.inner.options.progress_interval, stream.message()).await;
            match got {
                Err(_) => {
                    // Quiet: pass on a held notification that has proven itself, then ask
                    // for a fresh one. A failed request shows up as a broken stream.
                    self.release_candidate();
                    let asked = match self.stream.as_mut() {
                        Some(stream) => stream.request_progress().await.is_ok(),
                        None => false,
                    };
                    if !asked {
                        self.stream = None;
                    }
                }
                Ok(Ok(Some(response))) => self.absorb(response),
                Ok(Ok(None)) | Ok(Err(_)) => self.stream = None,
            }
        }
    }

    /// Hands out the held progress notification once the watch has been open long enough to
    /// have replayed its history and quiet long enough for stragglers to have arrived.
    fn release_candidate(&mut self) {
        let Some((revision, came)) = self.candidate else {
            return;
        };
        let interval = self.inner.options.progress_interval;
        let now = Instant::now();
        if now.duration_since(self.opened) >= SYNC_GRACE
            && now.duration_since(self.last_event) >= interval
            && now.duration_since(came) >= interval.min(SYNC_GRACE)
        {
            self.candidate = None;
            self.progress(revision);
        }
    }

    /// Reopens the etcd watch after a broken connection, from where delivery stopped.
    async fn resume(&mut self) -> Result<etcd_client::WatchStream, WatchError> {
        let deadline = tokio::time::Instant::now() + RESUME_FOR;
        let mut pause = Duration::from_millis(50);
        loop {
            let from = self.delivered.max(self.progressed);
            match open(&self.inner, &self.key, from, self.previous).await {
                Ok(stream) => return Ok(stream),
                Err(Failure::Compacted) => {
                    return Err(WatchError::Compacted {
                        requested: from,
                        compacted: self
                            .inner
                            .compacted
                            .load(std::sync::atomic::Ordering::Acquire)
                            .max(from + 1),
                    });
                }
                Err(Failure::Transient(message)) => {
                    if tokio::time::Instant::now() + pause >= deadline {
                        return Err(WatchError::Internal(message));
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(1000));
                }
                Err(other) => return Err(WatchError::Internal(other.message())),
            }
        }
    }

    /// Turns one etcd response into pending items.
    fn absorb(&mut self, response: WatchResponse) {
        if response.canceled() {
            let compacted = revision(response.compact_revision());
            let error = if compacted > 0 {
                self.inner
                    .compacted
                    .fetch_max(compacted, std::sync::atomic::Ordering::AcqRel);
                WatchError::Compacted {
                    requested: self.delivered.max(self.progressed),
                    compacted,
                }
            } else {
                WatchError::Internal(format!(
                    "etcd canceled the watch: {}",
                    response.cancel_reason()
                ))
            };
            self.pending.push_back(Err(error));
            return;
        }
        if response.created() {
            return;
        }
        let header = revision(response.header().map_or(0, |h| h.revision()));
        self.inner.note_seen(Some(signed(header)));
        if response.events().is_empty() {
            if response.watch_id() != STREAM_WIDE || self.inner.ordered_progress {
                self.progress(header);
            } else {
                self.candidate = Some((header, Instant::now()));
            }
            return;
        }
        self.last_event = Instant::now();
        // One etcd transaction may change several keys at one revision: skip by the
        // revision this response started from, not the last event's.
        let floor = self.delivered;
        for event in response.events() {
            let Some(kv) = event.kv() else { continue };
            let at = revision(kv.mod_revision());
            if at <= floor {
                continue;
            }
            let item = match event.event_type() {
                EventType::Put => {
                    let created = kv.version() == 1;
                    Ok(WatchEvent::Put {
                        kv: self.inner.to_kv(kv.clone()),
                        prev: event
                            .prev_kv()
                            .filter(|_| !created)
                            .map(|p| self.inner.to_kv(p.clone())),
                    })
                }
                EventType::Delete => match event.prev_kv() {
                    Some(prev) => Ok(WatchEvent::Delete {
                        prev: self.inner.to_kv(prev.clone()),
                        revision: at,
                    }),
                    None if self.previous == Previous::Keys => {
                        let mut prev = self.inner.to_kv(kv.clone());
                        prev.mod_revision = 0;
                        Ok(WatchEvent::Delete { prev, revision: at })
                    }
                    // Without the deleted value there is nothing to tell watchers.
                    None => Err(WatchError::Internal(format!(
                        "etcd sent the delete of {} at revision {at} without its previous value",
                        self.inner.to_kv(kv.clone()).key
                    ))),
                },
            };
            self.pending.push_back(item);
            self.delivered = self.delivered.max(at);
        }
        // A held notification that events overtook says nothing new.
        if self
            .candidate
            .is_some_and(|(revision, _)| revision <= self.delivered)
        {
            self.candidate = None;
        }
    }

    /// Hands out progress up to `revision`, unless it would go backwards.
    fn progress(&mut self, revision: u64) {
        if revision >= self.delivered && revision > self.progressed {
            self.progressed = revision;
            self.pending
                .push_back(Ok(WatchEvent::Progress { revision }));
        }
    }
}
