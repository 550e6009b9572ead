//! The embedded engine's single writer: one OS thread that owns every write transaction.
//!
//! Requests queue on a bounded channel. The thread takes everything queued (up to a batch
//! limit), applies the writes in order inside one redb transaction, each taking the next
//! revision, and commits once with an fsync (group commit): a burst of concurrent writers
//! costs one disk flush instead of one each, while every reply still waits for durability.
//! Only after the commit does the thread answer the callers and publish the events to
//! watchers, so no one ever observes a write that a crash could take back.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use redb::{Durability, ReadableTable, Table, WriteTransaction};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::codec::{self, Checked, Version};
use super::database::Db;
use super::{CURRENT, HISTORY, LOG, META, META_COMPACTED, META_REVISION};
use crate::storage::{
    CompactError, CreateError, DeleteError, Deleted, Guard, KeyValue, UpdateError, WatchEvent,
};

/// A request handed to the writer thread.
#[derive(Debug)]
pub(super) enum Command {
    /// A write, batched with its neighbours into one transaction.
    Write(Write),
    /// Compacts towards `target`, touching at most `max_entries` revisions; replies with the
    /// compaction point reached so the caller can continue in further steps (each step is its
    /// own short transaction, so writes keep flowing while a large history is pruned).
    CompactStep {
        target: u64,
        max_entries: usize,
        reply: oneshot::Sender<Result<u64, CompactError>>,
    },
    /// Tries to bring a store in a fault back (see `database`).
    Recover,
}

/// One write with the channel its answer goes back on.
#[derive(Debug)]
pub(super) enum Write {
    Create {
        key: String,
        value: Bytes,
        guard: Option<Guard>,
        reply: oneshot::Sender<Result<KeyValue, CreateError>>,
    },
    Update {
        key: String,
        value: Bytes,
        expected: u64,
        reply: oneshot::Sender<Result<KeyValue, UpdateError>>,
    },
    Delete {
        key: String,
        expected: Option<u64>,
        reply: oneshot::Sender<Result<Deleted, DeleteError>>,
    },
}

/// The revision counters shared by the writer (which advances them after each commit) and the
/// readers (which use them for cheap `current_revision` answers).
#[derive(Debug, Default)]
pub(super) struct Revisions {
    pub(super) current: AtomicU64,
    pub(super) compacted: AtomicU64,
}

/// A committed change as broadcast to watchers.
pub(super) type Committed = Arc<WatchEvent>;

/// What one command did inside the open transaction, answered only after the commit.
enum Applied {
    Create(
        oneshot::Sender<Result<KeyValue, CreateError>>,
        Result<KeyValue, CreateError>,
    ),
    Update(
        oneshot::Sender<Result<KeyValue, UpdateError>>,
        Result<KeyValue, UpdateError>,
    ),
    Delete(
        oneshot::Sender<Result<Deleted, DeleteError>>,
        Result<Deleted, DeleteError>,
    ),
}

impl Write {
    /// Answers the write with a storage error without applying it.
    fn fail(self, message: &str) {
        // A caller that stopped waiting needs no answer.
        match self {
            Write::Create { reply, .. } => {
                let _ = reply.send(Err(CreateError::Internal(message.to_owned())));
            }
            Write::Update { reply, .. } => {
                let _ = reply.send(Err(UpdateError::Internal(message.to_owned())));
            }
            Write::Delete { reply, .. } => {
                let _ = reply.send(Err(DeleteError::Internal(message.to_owned())));
            }
        }
    }
}

impl Applied {
    fn fail(self, message: &str) {
        // A caller that stopped waiting needs no answer, so send errors are ignored.
        match self {
            Applied::Create(reply, _) => {
                let _ = reply.send(Err(CreateError::Internal(message.to_owned())));
            }
            Applied::Update(reply, _) => {
                let _ = reply.send(Err(UpdateError::Internal(message.to_owned())));
            }
            Applied::Delete(reply, _) => {
                let _ = reply.send(Err(DeleteError::Internal(message.to_owned())));
            }
        }
    }

    fn answer(self) {
        match self {
            Applied::Create(reply, result) => {
                let _ = reply.send(result);
            }
            Applied::Update(reply, result) => {
                let _ = reply.send(result);
            }
            Applied::Delete(reply, result) => {
                let _ = reply.send(result);
            }
        }
    }
}

/// The writer thread's state.
pub(super) struct Writer {
    pub(super) db: Arc<Db>,
    pub(super) revisions: Arc<Revisions>,
    pub(super) events: broadcast::Sender<Committed>,
    pub(super) max_batch: usize,
    /// For a store in memory, which nothing can make durable: how many commits in a row skip
    /// redb's durable commit (see [`Writer::durability`]); `0` for a file.
    pub(super) lazy_commits: u32,
    /// Commits since the last durable one.
    pub(super) since_durable: std::cell::Cell<u32>,
}

impl Writer {
    /// The durability of the next commit. A durable commit writes the pages it changed
    /// through to the backend and records what it freed in redb's own tables; a store in memory
    /// gains nothing from either, so only every `lazy_commits`-th commit is durable. That one
    /// releases what redb tracks of the non-durable commits before it (the pages they freed of
    /// the last durable state, which wait for it).
    fn durability(&self) -> Durability {
        let since = self.since_durable.get();
        if since < self.lazy_commits {
            self.since_durable.set(since + 1);
            Durability::None
        } else {
            self.since_durable.set(0);
            Durability::Immediate
        }
    }

    /// Serves commands until every sender is gone.
    pub(super) fn run(self, mut commands: mpsc::Receiver<Command>) {
        let mut batch = Vec::with_capacity(self.max_batch);
        while commands.blocking_recv_many(&mut batch, self.max_batch) > 0 {
            let mut writes = Vec::new();
            for command in batch.drain(..) {
                match command {
                    Command::CompactStep {
                        target,
                        max_entries,
                        reply,
                    } => {
                        // Writes queued before the compaction commit first, keeping arrival order.
                        self.write_batch(std::mem::take(&mut writes));
                        let _ = reply.send(self.compact_step(target, max_entries));
                    }
                    Command::Write(write) => writes.push(write),
                    Command::Recover => {
                        // Failure leaves the fault for the next attempt to clear.
                        let _ = self.db.recover();
                    }
                }
            }
            self.write_batch(writes);
        }
    }

    fn write_batch(&self, writes: Vec<Write>) {
        if writes.is_empty() {
            return;
        }
        // A store in a fault tries its file again first; while that fails, every write queued
        // is answered with the fault.
        let db = match self.db.recover().and_then(|()| self.db.get()) {
            Ok(db) => db,
            Err(fault) => {
                writes.into_iter().for_each(|w| w.fail(&fault));
                return;
            }
        };
        let start = self.revisions.current.load(Ordering::Acquire);
        let mut applied = Vec::with_capacity(writes.len());
        let mut events = Vec::new();
        // Writes not yet applied stay here, so a failure can answer them too.
        let mut pending = writes.into_iter();
        let outcome = (|| -> Result<(u64, WriteTransaction), redb::Error> {
            let mut txn = db.begin_write()?;
            txn.set_durability(self.durability())?;
            let mut revision = start;
            {
                let mut tables = Tables {
                    current: txn.open_table(CURRENT)?,
                    history: txn.open_table(HISTORY)?,
                    log: txn.open_table(LOG)?,
                };
                for command in pending.by_ref() {
                    applied.push(tables.apply(command, &mut revision, &mut events)?);
                }
                if revision != start {
                    txn.open_table(META)?.insert(META_REVISION, revision)?;
                }
            }
            Ok((revision, txn))
        })();
        let (revision, txn) = match outcome {
            Ok(done) => done,
            Err(err) => {
                self.db.failed(&err.to_string());
                let fault = self.db.fault().unwrap_or_default();
                applied.into_iter().for_each(|a| a.fail(&fault));
                pending.for_each(|w| w.fail(&fault));
                return;
            }
        };
        let committed = if revision == start {
            // Every request failed its precondition: nothing to make durable.
            txn.abort().map_err(redb::Error::from)
        } else {
            txn.commit().map_err(redb::Error::from)
        };
        if let Err(err) = committed {
            self.db.failed(&err.to_string());
            let fault = self.db.fault().unwrap_or_default();
            applied.into_iter().for_each(|a| a.fail(&fault));
            return;
        }
        // Publish the revision before answering, so a caller that reads right after its write
        // acknowledges sees a current revision at least as new as its own.
        self.revisions.current.store(revision, Ordering::Release);
        applied.into_iter().for_each(Applied::answer);
        for event in events {
            // No receivers is fine: nobody is watching.
            let _ = self.events.send(Arc::new(event));
        }
    }

    fn compact_step(&self, target: u64, max_entries: usize) -> Result<u64, CompactError> {
        let internal = |err: redb::Error| CompactError::Internal(err.to_string());
        let current = self.revisions.current.load(Ordering::Acquire);
        let compacted = self.revisions.compacted.load(Ordering::Acquire);
        if target > current {
            return Err(CompactError::FutureRevision {
                requested: target,
                current,
            });
        }
        if target <= compacted {
            return Err(CompactError::Compacted {
                requested: target,
                compacted,
            });
        }
        let db = self.db.get().map_err(CompactError::Internal)?;
        let run = || -> Result<u64, redb::Error> {
            let txn = db.begin_write()?;
            let reached;
            {
                let mut log = txn.open_table(LOG)?;
                let mut history = txn.open_table(HISTORY)?;
                let current = txn.open_table(CURRENT)?;
                let mut touched = BTreeSet::new();
                let mut taken = 0usize;
                let mut last = compacted;
                for entry in log.range(compacted + 1..=target)?.take(max_entries.max(1)) {
                    let (k, v) = entry?;
                    taken += 1;
                    last = k.value();
                    touched.insert(v.value().to_owned());
                }
                // A full step stops at the last revision it looked at; a short one has seen
                // every revision up to the target.
                reached = if taken < max_entries.max(1) {
                    target
                } else {
                    last
                };
                for key in &touched {
                    let live = current
                        .get(key.as_str())?
                        .and_then(|raw| codec::mod_revision_of_current(key, raw.value()));
                    prune_key(&mut history, key, live, reached)?;
                }
                log.retain_in(compacted + 1..=reached, |_, _| false)?;
                txn.open_table(META)?.insert(META_COMPACTED, reached)?;
            }
            txn.commit()?;
            Ok(reached)
        };
        let reached = run().map_err(internal)?;
        self.revisions.compacted.store(reached, Ordering::Release);
        Ok(reached)
    }
}

/// Removes the versions of `key` that no read at or after `compacted` can see: everything
/// before its latest version at `compacted`, and that version too when it is a tombstone.
/// When the live version (at revision `live`) is that latest one, history keeps nothing.
fn prune_key(
    history: &mut Table<'_, (&'static str, u64), Checked>,
    key: &str,
    live: Option<u64>,
    compacted: u64,
) -> Result<(), redb::Error> {
    if live.is_some_and(|live| live <= compacted) {
        history.retain_in((key, 0u64)..=(key, compacted), |_, _| false)?;
        return Ok(());
    }
    let latest = match history.range((key, 0u64)..=(key, compacted))?.next_back() {
        Some(entry) => {
            let (k, v) = entry?;
            Some((k.value().1, codec::is_tombstone(v.value())))
        }
        None => None,
    };
    match latest {
        Some((revision, true)) => history.retain_in((key, 0u64)..=(key, revision), |_, _| false)?,
        Some((revision, false)) => history.retain_in((key, 0u64)..(key, revision), |_, _| false)?,
        None => {}
    }
    Ok(())
}

/// The data tables opened in one write transaction.
struct Tables<'t> {
    current: Table<'t, &'static str, Checked>,
    history: Table<'t, (&'static str, u64), Checked>,
    log: Table<'t, u64, &'static str>,
}

impl Tables<'_> {
    fn current(&self, key: &str) -> Result<Option<Result<KeyValue, String>>, redb::Error> {
        Ok(self
            .current
            .get(key)?
            .map(|raw| codec::decode_current(key, raw.value())))
    }

    /// Makes `value` the live version of `key` at `revision`, moving the version it replaces,
    /// if any, into history.
    fn put(
        &mut self,
        key: &str,
        value: &Bytes,
        create_revision: u64,
        revision: u64,
        replaced: Option<&KeyValue>,
    ) -> Result<(), redb::Error> {
        if let Some(replaced) = replaced {
            self.retire(replaced)?;
        }
        self.current.insert(
            key,
            codec::encode_current(key, create_revision, revision, value).as_slice(),
        )?;
        self.log.insert(revision, key)?;
        Ok(())
    }

    /// Records `live`, a version about to stop being the live one, in history at its
    /// revision (format 3: history holds the versions `current` no longer does).
    fn retire(&mut self, live: &KeyValue) -> Result<(), redb::Error> {
        let version = Version::Put {
            create_revision: live.create_revision,
            value: live.value.clone(),
        };
        self.history.insert(
            (live.key.as_str(), live.mod_revision),
            codec::encode_history(&live.key, live.mod_revision, &version).as_slice(),
        )?;
        Ok(())
    }

    /// Applies one write, advancing `revision` when it succeeds. A redb error aborts the whole
    /// batch; precondition failures are answers, not errors.
    fn apply(
        &mut self,
        command: Write,
        revision: &mut u64,
        events: &mut Vec<WatchEvent>,
    ) -> Result<Applied, redb::Error> {
        match command {
            Write::Create {
                key,
                value,
                guard,
                reply,
            } => {
                let guard_holds = match &guard {
                    None => true,
                    Some(guard) => matches!(
                        self.current(&guard.key)?,
                        Some(Ok(kv)) if kv.mod_revision == guard.mod_revision
                    ),
                };
                let result = match self.current(&key)? {
                    Some(Ok(current)) => Err(CreateError::AlreadyExists { current }),
                    Some(Err(corrupt)) => Err(CreateError::Corrupt(corrupt)),
                    None if !guard_holds => Err(CreateError::GuardChanged),
                    None => {
                        let next = *revision + 1;
                        self.put(&key, &value, next, next, None)?;
                        *revision = next;
                        let kv = KeyValue {
                            key,
                            value,
                            create_revision: next,
                            mod_revision: next,
                        };
                        events.push(WatchEvent::Put {
                            kv: kv.clone(),
                            prev: None,
                        });
                        Ok(kv)
                    }
                };
                Ok(Applied::Create(reply, result))
            }
            Write::Update {
                key,
                value,
                expected,
                reply,
            } => {
                let result = match self.current(&key)? {
                    None => Err(UpdateError::NotFound),
                    Some(Err(corrupt)) => Err(UpdateError::Corrupt(corrupt)),
                    Some(Ok(current)) if current.mod_revision != expected => {
                        Err(UpdateError::Conflict { current })
                    }
                    Some(Ok(current)) => {
                        let next = *revision + 1;
                        self.put(&key, &value, current.create_revision, next, Some(&current))?;
                        *revision = next;
                        let kv = KeyValue {
                            key,
                            value,
                            create_revision: current.create_revision,
                            mod_revision: next,
                        };
                        events.push(WatchEvent::Put {
                            kv: kv.clone(),
                            prev: Some(current),
                        });
                        Ok(kv)
                    }
                };
                Ok(Applied::Update(reply, result))
            }
            Write::Delete {
                key,
                expected,
                reply,
            } => {
                let result = match self.current(&key)? {
                    None => Err(DeleteError::NotFound),
                    Some(Err(corrupt)) => Err(DeleteError::Corrupt(corrupt)),
                    Some(Ok(current)) if expected.is_some_and(|e| e != current.mod_revision) => {
                        Err(DeleteError::Conflict { current })
                    }
                    Some(Ok(current)) => {
                        let next = *revision + 1;
                        self.retire(&current)?;
                        self.current.remove(key.as_str())?;
                        self.history.insert(
                            (key.as_str(), next),
                            codec::encode_history(&key, next, &Version::Tombstone).as_slice(),
                        )?;
                        self.log.insert(next, key.as_str())?;
                        *revision = next;
                        events.push(WatchEvent::Delete {
                            prev: current.clone(),
                            revision: next,
                        });
                        Ok(Deleted {
                            prev: current,
                            revision: next,
                        })
                    }
                };
                Ok(Applied::Delete(reply, result))
            }
        }
    }
}
