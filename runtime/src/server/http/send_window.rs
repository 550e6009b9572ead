//! A byte budget for a streaming response body: how much of what the body produced the
//! connection still holds, unwritten.
//!
//! hyper polls a response body for more data whenever its write queue has room (up to 16
//! buffers or its buffer size, 1 MiB here because that is also the request-head limit), and
//! keeps every chunk until the socket took it. A watch whose client stops reading would so pin
//! up to a megabyte of events in the server, per watcher. [`SendWindow`] counts the bytes of
//! the chunks handed to the connection and not yet dropped by it (each chunk is wrapped so its
//! drop returns its bytes) and tells the body to wait while that count is at its limit; the
//! connection's writes wake it. A chunk shared with other watchers (a watch cache line) is
//! counted too, though it costs this watcher nothing more: the window bounds what one client
//! can make the server hold, and it ends a non-reading watcher sooner.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::task::AtomicWaker;

/// The unwritten bytes of one response body, and the body's waker.
#[derive(Debug)]
pub(crate) struct SendWindow {
    shared: Arc<Shared>,
    limit: usize,
}

#[derive(Debug, Default)]
struct Shared {
    held: AtomicUsize,
    waker: AtomicWaker,
}

impl SendWindow {
    /// A window that lets the connection hold up to `limit` bytes (a single larger chunk is
    /// handed over whole when the window is empty).
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            shared: Arc::default(),
            limit,
        }
    }

    /// Ready when more may be handed to the connection; otherwise the task is woken once a
    /// chunk has been written.
    pub(crate) fn poll_room(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.held() < self.limit {
            return Poll::Ready(());
        }
        self.shared.waker.register(cx.waker());
        // A write may have finished between the check and the registration.
        if self.held() < self.limit {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// `chunk`, counted until the connection drops it.
    pub(crate) fn track(&self, chunk: Bytes) -> Bytes {
        self.shared.held.fetch_add(chunk.len(), Ordering::AcqRel);
        Bytes::from_owner(Counted {
            chunk,
            shared: Arc::clone(&self.shared),
        })
    }

    /// Bytes handed over and not yet written.
    pub(crate) fn held(&self) -> usize {
        self.shared.held.load(Ordering::Acquire)
    }
}

/// A chunk whose drop returns its bytes to the window.
struct Counted {
    chunk: Bytes,
    shared: Arc<Shared>,
}

impl AsRef<[u8]> for Counted {
    fn as_ref(&self) -> &[u8] {
        &self.chunk
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.shared
            .held
            .fetch_sub(self.chunk.len(), Ordering::AcqRel);
        self.shared.waker.wake();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::task::Wake;

    use super::*;

    #[derive(Default)]
    struct Flag(AtomicBool);

    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::Release);
        }
    }

    #[test]
    fn a_full_window_waits_until_a_chunk_is_written() {
        let window = SendWindow::new(10);
        let flag = Arc::new(Flag::default());
        let waker = Arc::clone(&flag).into();
        let mut cx = Context::from_waker(&waker);
        assert!(window.poll_room(&mut cx).is_ready());
        let first = window.track(Bytes::from_static(b"0123456"));
        assert!(window.poll_room(&mut cx).is_ready(), "7 of 10 held");
        let second = window.track(Bytes::from_static(b"789"));
        assert_eq!(window.held(), 10);
        assert!(window.poll_room(&mut cx).is_pending());
        assert_eq!(&second[..], b"789", "the chunk's bytes are unchanged");
        // A clone is the same chunk: the bytes return when the last one goes.
        let clone = first.clone();
        drop(first);
        assert_eq!(window.held(), 10);
        assert!(!flag.0.load(Ordering::Acquire));
        drop(clone);
        assert!(flag.0.load(Ordering::Acquire), "the write woke the body");
        assert_eq!(window.held(), 3);
        assert!(window.poll_room(&mut cx).is_ready());
    }
}
