//! Bringing a database up to date when it is opened, in one write transaction: the tables and
//! revision counters of a new database; the rewrite of an older value format (see `codec`);
//! the check of its revision against the data directory's high-water mark (see `marker`), and
//! the revision bump that accepts a restored older copy.
//!
//! The value format is recorded in the `meta` table (`format`). A database without it was
//! written by kapi before checksums (format 1) and is rewritten in format 2 before anything
//! reads it, so readers know one layout. A format newer than this code's is refused: this code
//! could not check its values.

use std::ops::Bound;

use redb::{Database, ReadableTable, WriteTransaction};

use super::codec::{self, Version};
use super::{CURRENT, HISTORY, LOG, META, META_COMPACTED, META_REVISION};

/// The `meta` entry that records the value format.
const META_FORMAT: &str = "format";
/// The value format this code writes: 2, values with checksums.
pub(super) const FORMAT: u64 = 2;
/// Rows one step of the migration reads before it writes them back, bounding its memory.
const MIGRATE_CHUNK: usize = 1024;
/// How far past the high-water mark an accepted older copy's revision jumps. The mark may
/// trail the last revision served by the writes of one marker interval before a crash (see
/// `marker`); this margin covers far more writes than the engine commits in that time.
pub(super) const RESTORE_BUMP: u64 = 1_000_000;

/// A database ready for the engine, at `revision` with history from `compacted`.
#[derive(Debug)]
pub(super) struct Ready {
    pub(super) db: Database,
    pub(super) revision: u64,
    pub(super) compacted: u64,
    /// Whether format 1 values were rewritten.
    pub(super) migrated: bool,
    /// The revision an accepted older copy was at before it jumped, if it did.
    pub(super) bumped_from: Option<u64>,
}

/// What the data directory knows beyond the database file.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Expect {
    /// The highest revision the directory is known to have served (0 when unknown).
    pub(super) high_water: u64,
    /// Whether a database behind the high-water mark is accepted, its revision bumped.
    pub(super) accept_older: bool,
}

/// Why a database could not be brought up to date.
#[derive(Debug)]
pub(super) enum InitError {
    /// redb failed.
    Database(String),
    /// The database was written in a format newer than this code's.
    NewerFormat(u64),
    /// The database's revision is below the high-water mark, and that was not accepted.
    Behind { revision: u64, high_water: u64 },
}

impl<E: Into<redb::Error>> From<E> for InitError {
    fn from(err: E) -> Self {
        InitError::Database(err.into().to_string())
    }
}

/// Creates the tables and the revision counters of a new database; reads them from an old
/// one, migrating its values and checking its revision against `expect`.
pub(super) fn init_database(db: Database, expect: Expect) -> Result<Ready, InitError> {
    let txn = db.begin_write()?;
    // Creating the tables up front lets every read open them without a special case.
    txn.open_table(CURRENT)?;
    txn.open_table(HISTORY)?;
    txn.open_table(LOG)?;
    let (mut revision, mut compacted, format) = {
        let meta = txn.open_table(META)?;
        let read =
            |name| -> Result<Option<u64>, InitError> { Ok(meta.get(name)?.map(|v| v.value())) };
        (
            read(META_REVISION)?,
            read(META_COMPACTED)?,
            read(META_FORMAT)?,
        )
    };
    let mut migrated = false;
    match (revision, format) {
        // A new database: nothing to migrate or check.
        (None, _) => {
            let mut meta = txn.open_table(META)?;
            meta.insert(META_REVISION, 1u64)?;
            meta.insert(META_COMPACTED, 0u64)?;
            meta.insert(META_FORMAT, FORMAT)?;
            revision = Some(1);
            compacted = Some(0);
        }
        (Some(_), None | Some(1)) => {
            migrate_current(&txn)?;
            migrate_history(&txn)?;
            txn.open_table(META)?.insert(META_FORMAT, FORMAT)?;
            migrated = true;
        }
        (Some(_), Some(FORMAT)) => {}
        (Some(_), Some(newer)) => return Err(InitError::NewerFormat(newer)),
    }
    let mut revision = revision.unwrap_or(1);
    let mut compacted = compacted.unwrap_or(0);
    let mut bumped_from = None;
    if revision < expect.high_water {
        if !expect.accept_older {
            return Err(InitError::Behind {
                revision,
                high_water: expect.high_water,
            });
        }
        let to = expect.high_water.saturating_add(RESTORE_BUMP);
        bump(&txn, to)?;
        bumped_from = Some(revision);
        revision = to;
        compacted = to;
    }
    txn.commit()?;
    Ok(Ready {
        db,
        revision,
        compacted,
        migrated,
        bumped_from,
    })
}

/// Rewrites every format 1 `current` value in format 2. A value that does not parse stays as
/// it was, and so fails its (absent) checksum when read: corruption is reported, as before.
fn migrate_current(txn: &WriteTransaction) -> Result<(), InitError> {
    let mut table = txn.open_table(CURRENT)?;
    let mut after: Option<String> = None;
    loop {
        let mut chunk = Vec::with_capacity(MIGRATE_CHUNK);
        {
            let start = match &after {
                Some(key) => Bound::Excluded(key.as_str()),
                None => Bound::Unbounded,
            };
            for entry in table.range::<&str>((start, Bound::Unbounded))? {
                let (k, v) = entry?;
                let key = k.value().to_owned();
                let migrated = codec::migrate_current(&key, v.value()).ok();
                chunk.push((key, migrated));
                if chunk.len() == MIGRATE_CHUNK {
                    break;
                }
            }
        }
        let Some((last, _)) = chunk.last() else {
            return Ok(());
        };
        after = Some(last.clone());
        for (key, value) in &chunk {
            if let Some(value) = value {
                table.insert(key.as_str(), value.as_slice())?;
            }
        }
    }
}

/// Rewrites every format 1 `history` value in format 2, as [`migrate_current`].
fn migrate_history(txn: &WriteTransaction) -> Result<(), InitError> {
    let mut table = txn.open_table(HISTORY)?;
    let mut after: Option<(String, u64)> = None;
    loop {
        let mut chunk = Vec::with_capacity(MIGRATE_CHUNK);
        {
            let start = match &after {
                Some((key, revision)) => Bound::Excluded((key.as_str(), *revision)),
                None => Bound::Unbounded,
            };
            for entry in table.range::<(&str, u64)>((start, Bound::Unbounded))? {
                let (k, v) = entry?;
                let (key, revision) = k.value();
                let migrated = codec::migrate_history(key, revision, v.value()).ok();
                chunk.push(((key.to_owned(), revision), migrated));
                if chunk.len() == MIGRATE_CHUNK {
                    break;
                }
            }
        }
        let Some((last, _)) = chunk.last() else {
            return Ok(());
        };
        after = Some(last.clone());
        for ((key, revision), value) in &chunk {
            if let Some(value) = value {
                table.insert((key.as_str(), *revision), value.as_slice())?;
            }
        }
    }
}

/// Moves an accepted older copy to revision `to`, as `etcdutl snapshot restore
/// --bump-revision --mark-compacted` does: history before `to` counts as compacted (reads
/// and watches from older resourceVersions answer 410, so clients relist), and the next
/// write takes `to + 1`, above every revision served before. What history keeps is what a
/// compaction to `to` would keep: each live key's current version, at its mod revision.
fn bump(txn: &WriteTransaction, to: u64) -> Result<(), InitError> {
    txn.open_table(LOG)?.retain(|_, _| false)?;
    let mut history = txn.open_table(HISTORY)?;
    history.retain(|_, _| false)?;
    let current = txn.open_table(CURRENT)?;
    for entry in current.iter()? {
        let (k, v) = entry?;
        let key = k.value();
        // A damaged value stays damaged in `current`, where reads report it.
        if let Ok(kv) = codec::decode_current(key, v.value()) {
            let version = Version::Put {
                create_revision: kv.create_revision,
                value: kv.value,
            };
            history.insert(
                (key, kv.mod_revision),
                codec::encode_history(key, kv.mod_revision, &version).as_slice(),
            )?;
        }
    }
    let mut meta = txn.open_table(META)?;
    meta.insert(META_REVISION, to)?;
    meta.insert(META_COMPACTED, to)?;
    Ok(())
}
