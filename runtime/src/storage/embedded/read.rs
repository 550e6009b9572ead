//! Snapshot reads of the embedded engine: get, list and count at the latest or an older
//! revision, and the history scan that replays events to a watcher.
//!
//! Each function runs inside one redb read transaction, so everything it returns is consistent
//! with the revision recorded in that same snapshot. They block on disk and are called from
//! `spawn_blocking`.

use std::iter::Peekable;

use redb::{Database, ReadOnlyTable, ReadTransaction, ReadableDatabase, StorageError};

use super::codec::{self, Checked, Version};
use super::{CURRENT, HISTORY, LOG, META, META_COMPACTED, META_REVISION};
use crate::storage::{KeyValue, ListResult, ReadError, WatchEvent};

/// The revisions recorded in one snapshot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Snapshot {
    pub(super) revision: u64,
    pub(super) compacted: u64,
}

/// Converts any redb failure into the engine-neutral internal error.
pub(super) fn internal(err: impl std::fmt::Display) -> ReadError {
    ReadError::Internal(err.to_string())
}

fn begin(db: &Database) -> Result<(ReadTransaction, Snapshot), ReadError> {
    let txn = db.begin_read().map_err(internal)?;
    let meta = txn.open_table(META).map_err(internal)?;
    let read = |name: &str| -> Result<u64, ReadError> {
        Ok(meta.get(name).map_err(internal)?.map_or(0, |v| v.value()))
    };
    let snapshot = Snapshot {
        revision: read(META_REVISION)?,
        compacted: read(META_COMPACTED)?,
    };
    drop(meta);
    Ok((txn, snapshot))
}

/// Checks that `requested` is readable in `snapshot`.
fn check(requested: u64, snapshot: Snapshot) -> Result<(), ReadError> {
    if requested > snapshot.revision {
        return Err(ReadError::FutureRevision {
            requested,
            current: snapshot.revision,
        });
    }
    if requested < snapshot.compacted {
        return Err(ReadError::Compacted {
            requested,
            compacted: snapshot.compacted,
        });
    }
    Ok(())
}

/// `Storage::get`.
pub(super) fn get(
    db: &Database,
    key: &str,
    at: Option<u64>,
) -> Result<Option<KeyValue>, ReadError> {
    let (txn, snapshot) = begin(db)?;
    match at {
        Some(rev) if rev != snapshot.revision => {
            check(rev, snapshot)?;
            let current = txn.open_table(CURRENT).map_err(internal)?;
            let history = txn.open_table(HISTORY).map_err(internal)?;
            if let Some(raw) = current.get(key).map_err(internal)? {
                let history_reaches = || {
                    let mut from = history.range((key, rev)..).map_err(internal)?;
                    Ok(from
                        .next()
                        .is_some_and(|e| e.is_ok_and(|(k, _)| k.value().0 == key)))
                };
                if let Live::At(kv) = live_at(key, raw.value(), rev, history_reaches, true)? {
                    return Ok(kv);
                }
            }
            let mut range = history.range((key, 0u64)..=(key, rev)).map_err(internal)?;
            match range.next_back() {
                Some(entry) => {
                    let (k, v) = entry.map_err(internal)?;
                    let mod_revision = k.value().1;
                    let version = codec::decode_history(key, mod_revision, v.value())
                        .map_err(ReadError::Corrupt)?;
                    Ok(version.into_kv(key, mod_revision))
                }
                None => Ok(None),
            }
        }
        _ => {
            let current = txn.open_table(CURRENT).map_err(internal)?;
            match current.get(key).map_err(internal)? {
                Some(raw) => codec::decode_current(key, raw.value())
                    .map(Some)
                    .map_err(ReadError::Corrupt),
                None => Ok(None),
            }
        }
    }
}

/// `Storage::list`.
pub(super) fn list(
    db: &Database,
    prefix: &str,
    at: Option<u64>,
    start_key: Option<&str>,
    limit: Option<usize>,
) -> Result<ListResult, ReadError> {
    let (txn, snapshot) = begin(db)?;
    let start = match start_key {
        Some(start) if start > prefix => start,
        _ => prefix,
    };
    let limit = limit.filter(|&n| n > 0).unwrap_or(usize::MAX);
    let mut items = Vec::new();
    let mut remaining = 0u64;
    match at {
        Some(rev) if rev != snapshot.revision => {
            check(rev, snapshot)?;
            let current = txn.open_table(CURRENT).map_err(internal)?;
            let history = txn.open_table(HISTORY).map_err(internal)?;
            let mut live = current.range(start..).map_err(internal)?.peekable();
            let mut past = history.range((start, 0u64)..).map_err(internal)?.peekable();
            // Both tables come in key order, history grouped by key with the oldest revision
            // first: each key under the prefix, from either, is read at `rev` in turn.
            loop {
                let under = |key: &str| key.starts_with(prefix).then(|| key.to_owned());
                let live_key = peek(&mut live)?.and_then(|(k, _)| under(k.value()));
                let past_key = peek(&mut past)?.and_then(|(k, _)| under(k.value().0));
                let key = match (&live_key, past_key) {
                    (None, None) => break,
                    (Some(a), Some(b)) => b.min(a.clone()),
                    (Some(a), None) => a.clone(),
                    (None, Some(b)) => b,
                };
                let live_raw = match live_key.as_deref() == Some(key.as_str()) {
                    true => live
                        .next()
                        .transpose()
                        .map_err(internal)?
                        .map(|(_, raw)| raw),
                    false => None,
                };
                // The key's versions in history: the last at or below `rev` is its state then,
                // unless the live version already was.
                let mut last = None;
                let mut history_reaches = false;
                loop {
                    let same = peek(&mut past)?.is_some_and(|(k, _)| k.value().0 == key);
                    let Some(entry) = past.next_if(|_| same) else {
                        break;
                    };
                    let (k, v) = entry.map_err(internal)?;
                    history_reaches |= k.value().1 >= rev;
                    if k.value().1 <= rev {
                        last = Some((k.value().1, v));
                    }
                }
                // Past the page, only existence matters: values are not copied.
                let wanted = items.len() < limit;
                let live = match &live_raw {
                    Some(raw) => live_at(&key, raw.value(), rev, || Ok(history_reaches), wanted)?,
                    None => Live::Newer,
                };
                match (live, last) {
                    (Live::At(Some(kv)), _) => items.push(kv),
                    (Live::At(None), _) => remaining += 1,
                    (Live::Newer, None) => {}
                    (Live::Newer, Some((_, raw))) if !wanted => {
                        if !codec::is_tombstone(raw.value()) {
                            remaining += 1;
                        }
                    }
                    (Live::Newer, Some((mod_revision, raw))) => {
                        let version = codec::decode_history(&key, mod_revision, raw.value())
                            .map_err(ReadError::Corrupt)?;
                        if let Some(kv) = version.into_kv(&key, mod_revision) {
                            items.push(kv);
                        }
                    }
                }
            }
        }
        _ => {
            let current = txn.open_table(CURRENT).map_err(internal)?;
            for entry in current.range(start..).map_err(internal)? {
                let (k, v) = entry.map_err(internal)?;
                let key = k.value();
                if !key.starts_with(prefix) {
                    break;
                }
                if items.len() < limit {
                    items.push(codec::decode_current(key, v.value()).map_err(ReadError::Corrupt)?);
                } else {
                    remaining += 1;
                }
            }
        }
    }
    Ok(ListResult {
        items,
        revision: at.unwrap_or(snapshot.revision),
        more: remaining > 0,
        remaining,
    })
}

/// What a key's live version says of its state at an older revision.
enum Live {
    /// It was live then already: its value, unless the caller wanted only its presence.
    At(Option<KeyValue>),
    /// It is newer: history holds the key's state then.
    Newer,
}

/// The live version `raw` of `key` read at `rev`, its value copied when `wanted`. A damaged
/// value is newer than `rev` if history holds a version of the key at or after `rev`
/// (`history_reaches`; every version in history is older than the live one), and history
/// answers; otherwise the damage is reported, or, when only presence is wanted (a list past its
/// page), the key counts as present, as a list at the latest revision counts it.
fn live_at(
    key: &str,
    raw: &[u8],
    rev: u64,
    history_reaches: impl FnOnce() -> Result<bool, ReadError>,
    wanted: bool,
) -> Result<Live, ReadError> {
    match codec::mod_revision_of_current(key, raw) {
        Some(mod_revision) if mod_revision > rev => return Ok(Live::Newer),
        None if history_reaches()? => return Ok(Live::Newer),
        _ => {}
    }
    if !wanted {
        return Ok(Live::At(None));
    }
    let kv = codec::decode_current(key, raw).map_err(ReadError::Corrupt)?;
    Ok(Live::At(Some(kv)))
}

/// The next entry of a table range, or its error.
fn peek<T>(
    entries: &mut Peekable<impl Iterator<Item = Result<T, StorageError>>>,
) -> Result<Option<&T>, ReadError> {
    if let Some(Err(_)) = entries.peek()
        && let Some(Err(err)) = entries.next()
    {
        return Err(internal(err));
    }
    Ok(entries.peek().and_then(|entry| entry.as_ref().ok()))
}

/// `Storage::count`.
pub(super) fn count(db: &Database, prefix: &str) -> Result<u64, ReadError> {
    let (txn, _) = begin(db)?;
    let current = txn.open_table(CURRENT).map_err(internal)?;
    let mut n = 0u64;
    for entry in current.range(prefix..).map_err(internal)? {
        let (k, _) = entry.map_err(internal)?;
        if !k.value().starts_with(prefix) {
            break;
        }
        n += 1;
    }
    Ok(n)
}

/// A slice of history replayed to a watcher.
#[derive(Debug)]
pub(super) struct Replay {
    /// Matching events, in revision order.
    pub(super) events: Vec<WatchEvent>,
    /// Every revision up to this one has been scanned.
    pub(super) scanned_to: u64,
    /// The snapshot's revision: when `scanned_to` reaches it, history is exhausted.
    pub(super) head: u64,
}

/// Why a replay could not continue.
#[derive(Debug)]
pub(super) enum ReplayError {
    Compacted { compacted: u64 },
    Corrupt(String),
    Internal(String),
}

impl From<ReadError> for ReplayError {
    fn from(err: ReadError) -> Self {
        match err {
            ReadError::Compacted { compacted, .. } => ReplayError::Compacted { compacted },
            ReadError::Corrupt(message) => ReplayError::Corrupt(message),
            other => ReplayError::Internal(other.to_string()),
        }
    }
}

/// Reads the events under `prefix` with revisions after `after`, scanning at most
/// `max_scan` revisions and returning at most `max_events` events.
pub(super) fn replay(
    db: &Database,
    prefix: &str,
    after: u64,
    max_scan: usize,
    max_events: usize,
) -> Result<Replay, ReplayError> {
    let (txn, snapshot) = begin(db)?;
    if after < snapshot.compacted {
        return Err(ReplayError::Compacted {
            compacted: snapshot.compacted,
        });
    }
    let log = txn.open_table(LOG).map_err(internal)?;
    let current = txn.open_table(CURRENT).map_err(internal)?;
    let history = txn.open_table(HISTORY).map_err(internal)?;
    let mut events = Vec::new();
    let mut scanned_to = after;
    if after >= snapshot.revision {
        return Ok(Replay {
            events,
            scanned_to: snapshot.revision,
            head: snapshot.revision,
        });
    }
    let first = after + 1;
    for (scanned, entry) in log
        .range(first..=snapshot.revision)
        .map_err(internal)?
        .enumerate()
    {
        if scanned >= max_scan || events.len() >= max_events {
            return Ok(Replay {
                events,
                scanned_to,
                head: snapshot.revision,
            });
        }
        let (k, v) = entry.map_err(internal)?;
        let revision = k.value();
        let key = v.value();
        scanned_to = revision;
        if !key.starts_with(prefix) {
            continue;
        }
        let version = version_of(&current, &history, key, revision)?;
        let prev = match history
            .range((key, 0u64)..(key, revision))
            .map_err(internal)?
            .next_back()
        {
            Some(entry) => {
                let (pk, pv) = entry.map_err(internal)?;
                let prev_revision = pk.value().1;
                codec::decode_history(key, prev_revision, pv.value())
                    .map_err(ReplayError::Corrupt)?
                    .into_kv(key, prev_revision)
            }
            None => None,
        };
        let event = match version {
            Version::Put { .. } => match version.into_kv(key, revision) {
                Some(kv) => WatchEvent::Put { kv, prev },
                None => continue,
            },
            Version::Tombstone => match prev {
                Some(prev) => WatchEvent::Delete { prev, revision },
                None => {
                    return Err(ReplayError::Internal(format!(
                        "delete of {key:?} at revision {revision} has no previous value"
                    )));
                }
            },
        };
        events.push(event);
    }
    Ok(Replay {
        events,
        scanned_to: snapshot.revision,
        head: snapshot.revision,
    })
}

/// The version `key` took at `revision`: in history once a later write replaced it, else the
/// live one.
fn version_of(
    current: &ReadOnlyTable<&'static str, Checked>,
    history: &ReadOnlyTable<(&'static str, u64), Checked>,
    key: &str,
    revision: u64,
) -> Result<Version, ReplayError> {
    if let Some(raw) = history.get((key, revision)).map_err(internal)? {
        return codec::decode_history(key, revision, raw.value()).map_err(ReplayError::Corrupt);
    }
    let missing =
        || ReplayError::Internal(format!("history missing revision {revision} of {key:?}"));
    let raw = current.get(key).map_err(internal)?.ok_or_else(missing)?;
    let live = codec::decode_current(key, raw.value()).map_err(ReplayError::Corrupt)?;
    if live.mod_revision != revision {
        return Err(missing());
    }
    Ok(Version::Put {
        create_revision: live.create_revision,
        value: live.value,
    })
}
