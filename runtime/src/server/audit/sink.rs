//! Where events go: a JSON line each, appended to a file (`--audit-log-path`) or written to
//! standard output (`-`), by one writer task behind a bounded queue, so a slow disk delays no
//! request and holds at most [`QUEUE`] events; events beyond it are dropped and counted in the
//! log, as upstream's batching backend drops what its buffer cannot hold.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;

use crate::server::audit::event::Event;

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

/// The sending side of the writer task.
#[derive(Debug)]
pub(crate) struct Sink {
    queue: mpsc::Sender<Event>,
    dropped: AtomicU64,
}

impl Sink {
    /// Opens `target` (creating the file, appending to it) and starts the writer task.
    pub(crate) fn open(target: &Target) -> std::io::Result<Self> {
        let mut out: Box<dyn std::io::Write + Send> = match target {
            Target::Stdout => Box::new(std::io::stdout()),
            Target::File(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)?;
                }
                let mut options = std::fs::OpenOptions::new();
                options.create(true).append(true);
                // Events name users and may hold objects: private, as upstream's log is 0600.
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                Box::new(std::io::LineWriter::new(options.open(path)?))
            }
        };
        let (queue, mut events) = mpsc::channel::<Event>(QUEUE);
        tokio::task::spawn_blocking(move || {
            while let Some(event) = events.blocking_recv() {
                let written = serde_json::to_writer(&mut out, &event)
                    .map_err(std::io::Error::other)
                    .and_then(|()| out.write_all(b"\n"));
                if let Err(error) = written {
                    tracing::error!(%error, "writing an audit event failed");
                }
            }
            let _ = out.flush();
        });
        Ok(Self {
            queue,
            dropped: AtomicU64::new(0),
        })
    }

    /// Queues `event`; drops it when the queue is full.
    pub(crate) fn send(&self, event: Event) {
        if self.queue.try_send(event).is_err() {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "the audit log falls behind: events dropped");
            }
        }
    }
}
