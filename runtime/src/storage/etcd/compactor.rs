//! Periodic compaction shared by every replica over one etcd, so that only one of them
//! compacts per interval.
//!
//! Each replica remembers the version of [`COMPACT_KEY`](super::COMPACT_KEY) it last saw.
//! Every interval it tries a transaction "if the key still has that version, record my
//! target"; the replica whose transaction succeeds compacts etcd to the target, the others
//! learn the new version and skip this round. The target is the revision seen one interval
//! earlier, so at least one interval of history stays readable and watchable.

use std::sync::Weak;
use std::time::Duration;

use tokio::sync::oneshot;

use super::{COMPACT_KEY, Inner};

/// Runs until `stopped` fires or the engine is gone; `version` is the key's version at start.
pub(super) async fn run(
    inner: Weak<Inner>,
    interval: Duration,
    mut version: i64,
    mut stopped: oneshot::Receiver<()>,
) {
    // The revision seen at the previous tick: the next compaction's target.
    let mut previous: Option<u64> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = &mut stopped => return,
        }
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let round = match previous {
            Some(target) => inner
                .compact_if_version(version, target)
                .await
                .map(|(now, _won, current)| (now, current)),
            None => inner.read_compact_key_with_revision().await,
        };
        match round {
            Ok((now, current)) => {
                version = now;
                previous = Some(current);
            }
            // Retried at the next tick from a fresh look at the key; history merely stays
            // longer meanwhile.
            Err(_) => previous = None,
        }
    }
}

impl Inner {
    /// The version of [`COMPACT_KEY`] and the cluster's current revision, in one read.
    async fn read_compact_key_with_revision(&self) -> Result<(i64, u64), super::Failure> {
        let mut response = self
            .retry(|mut kv| async move { kv.get(COMPACT_KEY, None).await })
            .await?;
        let current = response.header().map_or(0, |h| h.revision());
        self.note_seen(Some(current));
        let version = response
            .take_kvs()
            .into_iter()
            .next()
            .map_or(0, |kv| kv.version());
        Ok((version, super::revision(current)))
    }
}
