//! Watch streams of the embedded engine: replay from disk, then follow the live broadcast.
//!
//! A watcher first replays committed history after its start revision in bounded chunks, then
//! switches to the in-process broadcast of committed events. Before each chunk it subscribes
//! afresh, so the subscription that is kept was taken before the final chunk's snapshot: every
//! event newer than that snapshot reaches the subscription (no gap), and events the chunk
//! already delivered are skipped by revision (no duplicate). The broadcast ring is the only
//! buffer shared by watchers and is bounded; a watcher that falls further behind than the ring
//! holds is ended with [`WatchError::Lagged`].

use std::collections::VecDeque;
use std::sync::Weak;
use std::time::Duration;

use futures_util::stream;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio::time::Instant;

use super::Shared;
use super::read::{self, ReplayError};
use super::writer::Committed;
use crate::storage::{WatchError, WatchEvent, WatchStream};

/// How many revisions one replay chunk scans, and how many events it may return: bounds the
/// memory and the time one chunk holds a read transaction.
const REPLAY_SCAN: usize = 4096;
const REPLAY_EVENTS: usize = 512;

enum Phase {
    Replay,
    Live(broadcast::Receiver<Committed>),
    Done,
}

struct State {
    shared: Weak<Shared>,
    prefix: String,
    /// Every revision up to here has been delivered or found not to match the prefix.
    position: u64,
    buffer: VecDeque<WatchEvent>,
    phase: Phase,
    progress_every: Duration,
    last_sent: Instant,
}

/// Builds the stream for a watch that starts after `from_revision`.
pub(super) fn stream(
    shared: Weak<Shared>,
    prefix: String,
    from_revision: u64,
    progress_every: Duration,
) -> WatchStream {
    let state = State {
        shared,
        prefix,
        position: from_revision,
        buffer: VecDeque::new(),
        phase: Phase::Replay,
        progress_every,
        last_sent: Instant::now(),
    };
    WatchStream::new(stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

fn closed() -> WatchError {
    WatchError::Internal("storage closed".to_owned())
}

impl State {
    async fn next(&mut self) -> Option<Result<WatchEvent, WatchError>> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                self.last_sent = Instant::now();
                return Some(Ok(event));
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Replay => {
                    if let Err(err) = self.replay_chunk().await {
                        self.phase = Phase::Done;
                        return Some(Err(err));
                    }
                }
                Phase::Live(receiver) => {
                    let deadline = self.last_sent + self.progress_every;
                    let received = match tokio::time::timeout_at(deadline, receiver.recv()).await {
                        Ok(received) => received,
                        Err(_elapsed) => {
                            self.last_sent = Instant::now();
                            return Some(Ok(WatchEvent::Progress {
                                revision: self.position,
                            }));
                        }
                    };
                    match received {
                        Ok(event) => {
                            let revision = event.revision();
                            if revision <= self.position {
                                continue;
                            }
                            self.position = revision;
                            if event.key().is_some_and(|key| key.starts_with(&self.prefix)) {
                                self.last_sent = Instant::now();
                                return Some(Ok(WatchEvent::clone(&event)));
                            }
                        }
                        Err(RecvError::Lagged(_)) => {
                            self.phase = Phase::Done;
                            return Some(Err(WatchError::Lagged {
                                revision: self.position,
                            }));
                        }
                        Err(RecvError::Closed) => {
                            self.phase = Phase::Done;
                            return Some(Err(closed()));
                        }
                    }
                }
            }
        }
    }

    /// Reads the next chunk of history into the buffer; switches to live once history is
    /// exhausted.
    async fn replay_chunk(&mut self) -> Result<(), WatchError> {
        let shared = self.shared.upgrade().ok_or_else(closed)?;
        let receiver = shared.events.subscribe();
        let db = shared.db.get().map_err(WatchError::Internal)?;
        drop(shared);
        let prefix = self.prefix.clone();
        let after = self.position;
        let chunk = tokio::task::spawn_blocking(move || {
            read::replay(&db, &prefix, after, REPLAY_SCAN, REPLAY_EVENTS)
        })
        .await
        .map_err(|err| WatchError::Internal(super::failed_task(err)))?;
        let chunk = chunk.map_err(|err| match err {
            ReplayError::Compacted { compacted } => WatchError::Compacted {
                requested: after,
                compacted,
            },
            ReplayError::Corrupt(message) => WatchError::Corrupt(message),
            ReplayError::Internal(message) => WatchError::Internal(message),
        })?;
        self.buffer.extend(chunk.events);
        self.position = chunk.scanned_to;
        if chunk.scanned_to >= chunk.head {
            self.phase = Phase::Live(receiver);
            // Progress is measured from the moment the watcher is caught up.
            self.last_sent = Instant::now();
        }
        Ok(())
    }
}
