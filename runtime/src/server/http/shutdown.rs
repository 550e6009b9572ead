//! The shutdown sequence, as kube-apiserver runs it when told to stop:
//! 1. `/readyz` fails (its `shutdown` check, `[-]shutdown failed: reason withheld`), so load
//!    balancers and clients that watch readiness move away;
//! 2. the server goes on serving for the shutdown delay (upstream's
//!    `--shutdown-delay-duration`, default 0);
//! 3. the listener closes, watches end (their streams close without an ERROR event; clients
//!    resume elsewhere from their last resourceVersion) and background tasks stop;
//! 4. requests in flight finish, for at most the drain timeout (upstream's 60 s
//!    `--request-timeout`); `connections` closes whatever is still busy then.
//!
//! Every step is logged at `INFO`.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::server::state::State;
use crate::server::{BODY_TIMEOUT, Background};

/// The timings of one server's shutdown.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// How long the server serves on with `/readyz` failing.
    pub(crate) delay: Duration,
    /// How long requests in flight may take to finish once the listener has closed.
    pub(crate) drain: Duration,
}

impl Default for Plan {
    fn default() -> Self {
        Self {
            delay: Duration::ZERO,
            drain: BODY_TIMEOUT,
        }
    }
}

impl Plan {
    /// Resolves when the listener should close: after `asked` resolves, `/readyz` fails and
    /// the delay passes; then watches and background work are told to stop.
    pub(crate) async fn run(
        self,
        state: State,
        background: Background,
        asked: impl Future<Output = ()>,
    ) {
        asked.await;
        state.shutting_down.store(true, Ordering::Release);
        tracing::info!(delay = ?self.delay, "shutdown: started, /readyz now fails");
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
            tracing::info!("shutdown: delay over");
        }
        // Watches never end on their own; they must stop before the drain can finish.
        background.stop();
        tracing::info!("shutdown: watches and background tasks told to stop");
    }
}
