//! Where events go: a JSON line each, appended to a file (`--audit-log-path`, rotated as
//! `rotation` says) or written to standard output (`-`), by one writer task behind a bounded
//! queue, so a slow disk delays no request and holds at most [`QUEUE`] events; events beyond
//! it are dropped and counted in the log, as upstream's batching backend drops what its buffer
//! cannot hold.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;

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

    fn flush(&mut self) {
        let _ = match self {
            Out::Stdout(out) => out.flush(),
            Out::File(file) => file.flush(),
        };
    }
}

/// The sending side of a backend's bounded queue: what does not fit is dropped and counted,
/// and the count logged at every power of two.
#[derive(Debug)]
pub(crate) struct Queue {
    sender: mpsc::Sender<Event>,
    dropped: AtomicU64,
    /// What the log says when events are dropped.
    behind: &'static str,
}

impl Queue {
    pub(crate) fn new(sender: mpsc::Sender<Event>, behind: &'static str) -> Self {
        Self {
            sender,
            dropped: AtomicU64::new(0),
            behind,
        }
    }

    /// Queues `event`; drops it when the queue is full.
    pub(crate) fn offer(&self, event: Event) {
        if self.sender.try_send(event).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "{}", self.behind);
            }
        }
    }
}

/// The sending side of the writer task.
#[derive(Debug)]
pub(crate) struct Sink {
    queue: Queue,
}

impl Sink {
    /// Opens `target` (creating the file, appending to it; rotated as `rotation` says) and
    /// starts the writer task.
    pub(crate) fn open(target: &Target, rotation: LogRotation) -> std::io::Result<Self> {
        let mut out = match target {
            Target::Stdout => Out::Stdout(std::io::stdout()),
            Target::File(path) => Out::File(RotatingFile::open(path, rotation)?),
        };
        let (queue, mut events) = mpsc::channel::<Event>(QUEUE);
        tokio::task::spawn_blocking(move || {
            while let Some(event) = events.blocking_recv() {
                let written = serde_json::to_vec(&event)
                    .map_err(std::io::Error::other)
                    .and_then(|mut line| {
                        line.push(b'\n');
                        out.write_line(&line)
                    });
                if let Err(error) = written {
                    tracing::error!(%error, "writing an audit event failed");
                }
            }
            out.flush();
        });
        Ok(Self {
            queue: Queue::new(queue, "the audit log falls behind: events dropped"),
        })
    }

    /// Queues `event`; drops it when the queue is full.
    pub(crate) fn send(&self, event: Event) {
        self.queue.offer(event);
    }
}
