//! Where events go: a JSON line each, appended to a file (`--audit-log-path`, rotated as
//! `rotation` says) or written to standard output (`-`), by one writer task behind a bounded
//! queue of at most [`QUEUE`] events. In the blocking modes (`--audit-log-mode`, `blocking` by
//! default as upstream's) a request waits until its event is written, and waits for room in a
//! full queue; in `batch` mode a slow disk delays no request, and events beyond the queue are
//! dropped and counted in the log, as upstream's batching backend drops what its buffer cannot
//! hold.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

use crate::server::audit::Mode;
use crate::server::audit::event::Event;
use crate::server::audit::rotation::{LogRotation, RotatingFile};

/// The most events waiting to be written.
const QUEUE: usize = 10_000;

/// Where an audit log is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Stdout,
    File(PathBuf),
}

impl Target {
    /// `-` for standard output, else a file path.
    pub(crate) fn of(path: &Path) -> Self {
        if path.as_os_str() == "-" {
            Self::Stdout
        } else {
            Self::File(path.to_owned())
        }
    }
}

/// Where the writer task writes: each event one whole line, so rotation never splits one.
enum Out {
    Stdout(std::io::Stdout),
    File(RotatingFile),
}

impl Out {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Out::Stdout(out) => out.write_all(line),
            Out::File(file) => file.write_line(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Stdout(out) => out.flush(),
            Out::File(file) => file.flush(),
        }
    }
}

/// The sending side of a backend's bounded queue: what does not fit is dropped and counted,
/// and the count logged at every power of two.
#[derive(Debug)]
pub(crate) struct Queue<T> {
    sender: mpsc::Sender<T>,
    dropped: AtomicU64,
    /// What the log says when events are dropped.
    behind: &'static str,
}

impl<T> Queue<T> {
    pub(crate) fn new(sender: mpsc::Sender<T>, behind: &'static str) -> Self {
        Self {
            sender,
            dropped: AtomicU64::new(0),
            behind,
        }
    }

    /// Queues `item`; drops it when the queue is full.
    pub(crate) fn offer(&self, item: T) {
        if self.sender.try_send(item).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "{}", self.behind);
            }
        }
    }
}

/// An event for the writer task, with where to tell whether it was written when a request
/// waits for that.
type Entry = (Event, Option<oneshot::Sender<bool>>);

/// The sending side of the writer task.
#[derive(Debug)]
pub(crate) struct Sink {
    queue: Queue<Entry>,
    pub(crate) mode: Mode,
}

impl Sink {
    /// Opens `target` (creating the file, appending to it; rotated as `rotation` says) and
    /// starts the writer task.
    pub(crate) fn open(target: &Target, rotation: LogRotation) -> std::io::Result<Self> {
        let mut out = match target {
            Target::Stdout => Out::Stdout(std::io::stdout()),
            Target::File(path) => Out::File(RotatingFile::open(path, rotation)?),
        };
        let (queue, mut events) = mpsc::channel::<Entry>(QUEUE);
        tokio::task::spawn_blocking(move || {
            while let Some((event, written_back)) = events.blocking_recv() {
                let written = serde_json::to_vec(&event)
                    .map_err(std::io::Error::other)
                    .and_then(|mut line| {
                        line.push(b'\n');
                        out.write_line(&line)
                    });
                if let Err(error) = &written {
                    tracing::error!(%error, "Error in audit plugin 'log' affecting 1 audit events");
                }
                if let Some(waiting) = written_back {
                    // The file is flushed for a waiting request, as upstream's blocking log
                    // backend writes each event through before it answers.
                    let flushed = written.and_then(|()| out.flush());
                    let _ = waiting.send(flushed.is_ok());
                }
            }
            let _ = out.flush();
        });
        Ok(Self {
            queue: Queue::new(queue, "the audit log falls behind: events dropped"),
            mode: Mode::default(),
        })
    }

    /// Queues `event`; drops it when the queue is full.
    pub(crate) fn offer(&self, event: Event) {
        self.queue.offer((event, None));
    }

    /// Writes `event`, as the mode says: queued in batch mode, else written before this
    /// resolves; false when it could not be written and the mode is `blocking-strict`.
    pub(crate) async fn process(&self, event: Event) -> bool {
        if self.mode == Mode::Batch {
            self.offer(event);
            return true;
        }
        let (written_back, written) = oneshot::channel();
        let stored = self
            .queue
            .sender
            .send((event, Some(written_back)))
            .await
            .is_ok()
            && written.await.unwrap_or(false);
        stored || self.mode == Mode::Blocking
    }
}
