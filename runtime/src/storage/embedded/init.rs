//! Bringing a database up to date when it is opened, in one write transaction: the tables and
//! revision counters of a new database; the migration of an older format (see `codec`);
//! the check of its revision against the data directory's high-water mark (see `marker`), and
//! the revision bump that accepts a restored older copy.
//!
//! The format is recorded in the `meta` table (`format`), and a database of an older one is
//! brought to this code's before anything reads it, so readers know one layout:
//! - A database without it was written by kapi before checksums (format 1): its `current` and
//!   `history` tables are moved aside and copied into tables of format 2's value type
//!   (`codec::Checked`), which kapi of format 1 cannot open.
//! - Format 2 kept every version in `history`, the live ones too, so each live value was
//!   stored twice. Format 3 keeps in `history` only the versions `current` no longer holds:
//!   the migration deletes from `history` each live key's version at its mod revision. Values
//!   are not rewritten.
//!
//! A format newer than this code's is refused: this code could not read it (kapi of format 2
//! refuses format 3 the same way, rather than miss the versions only `current` holds).

use redb::{Database, ReadableTable, TableDefinition, TableError, WriteTransaction};

use super::codec::{self, Checked};
use super::{CURRENT, HISTORY, LOG, META, META_COMPACTED, META_REVISION};

/// The `meta` entry that records the format.
const META_FORMAT: &str = "format";
/// The format this code writes: 3, values with checksums, each version stored once.
pub(super) const FORMAT: u64 = 3;
/// The format that stored live versions in `history` too.
const FORMAT_LIVE_IN_HISTORY: u64 = 2;
/// The tables of format 1, and the names they are moved to while they are rewritten.
const LEGACY_CURRENT: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("current");
const LEGACY_HISTORY: TableDefinition<'static, (&str, u64), &[u8]> =
    TableDefinition::new("history");
const STAGED_CURRENT: TableDefinition<'static, &str, &[u8]> =
    TableDefinition::new("current.format1");
const STAGED_HISTORY: TableDefinition<'static, (&str, u64), &[u8]> =
    TableDefinition::new("history.format1");
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
    /// Whether the database was brought from an older format (1 or 2) to this one.
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
    /// redb found the file damaged.
    Damaged(String),
    /// The database was written in a format newer than this code's.
    NewerFormat(u64),
    /// The database's revision is below the high-water mark, and that was not accepted.
    Behind { revision: u64, high_water: u64 },
}

impl<E: Into<redb::Error>> From<E> for InitError {
    fn from(err: E) -> Self {
        match err.into() {
            redb::Error::Corrupted(message) => InitError::Damaged(message),
            other => InitError::Database(other.to_string()),
        }
    }
}

/// Creates the tables and the revision counters of a new database; reads them from an old
/// one, migrating its values and checking its revision against `expect`.
pub(super) fn init_database(db: Database, expect: Expect) -> Result<Ready, InitError> {
    let txn = db.begin_write()?;
    let (revision, compacted, format) = {
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
        }
        (Some(_), None | Some(1)) => {
            migrate(&txn, LEGACY_CURRENT, STAGED_CURRENT, CURRENT, |key, raw| {
                codec::migrate_current(key, raw)
            })?;
            migrate(&txn, LEGACY_HISTORY, STAGED_HISTORY, HISTORY, |key, raw| {
                codec::migrate_history(key.0, key.1, raw)
            })?;
            drop_live_versions_from_history(&txn)?;
            txn.open_table(META)?.insert(META_FORMAT, FORMAT)?;
            migrated = true;
        }
        (Some(_), Some(FORMAT_LIVE_IN_HISTORY)) => {
            drop_live_versions_from_history(&txn)?;
            txn.open_table(META)?.insert(META_FORMAT, FORMAT)?;
            migrated = true;
        }
        (Some(_), Some(FORMAT)) => {}
        (Some(_), Some(newer)) => return Err(InitError::NewerFormat(newer)),
    }
    // Creating the tables up front lets every read open them without a special case.
    txn.open_table(CURRENT)?;
    txn.open_table(HISTORY)?;
    txn.open_table(LOG)?;
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

/// Moves a format 1 table aside, writes each of its rows into the format 2 table of the same
/// name, and deletes it. A value that does not parse is copied as it was, and so fails its
/// checksum when read: corruption is reported, as it was before.
fn migrate<K: redb::Key + 'static>(
    txn: &WriteTransaction,
    legacy: TableDefinition<'static, K, &'static [u8]>,
    staged: TableDefinition<'static, K, &'static [u8]>,
    target: TableDefinition<'static, K, Checked>,
    rewrite: impl for<'a> Fn(K::SelfType<'a>, &[u8]) -> Result<Vec<u8>, String>,
) -> Result<(), InitError> {
    match txn.rename_table(legacy, staged) {
        Ok(()) => {}
        // kapi always created its tables; without this one there is nothing to move.
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(err) => return Err(err.into()),
    }
    {
        let old = txn.open_table(staged)?;
        let mut new = txn.open_table(target)?;
        for entry in old.iter()? {
            let (k, v) = entry?;
            let raw = v.value();
            let value = rewrite(k.value(), raw).unwrap_or_else(|_| raw.to_vec());
            new.insert(k.value(), value.as_slice())?;
        }
    }
    txn.delete_table(staged)?;
    Ok(())
}

/// Format 2 to 3: deletes from `history` the version each live key holds in `current`. A live
/// value that is damaged keeps its copy in history, which reads never reach past the damage.
fn drop_live_versions_from_history(txn: &WriteTransaction) -> Result<(), InitError> {
    let current = txn.open_table(CURRENT)?;
    let mut history = txn.open_table(HISTORY)?;
    for entry in current.iter()? {
        let (k, v) = entry?;
        let key = k.value();
        if let Some(mod_revision) = codec::mod_revision_of_current(key, v.value()) {
            history.remove((key, mod_revision))?;
        }
    }
    Ok(())
}

/// Moves an accepted older copy to revision `to`, as `etcdutl snapshot restore
/// --bump-revision --mark-compacted` does: history before `to` counts as compacted (reads
/// and watches from older resourceVersions answer 410, so clients relist), and the next
/// write takes `to + 1`, above every revision served before. What history keeps is what a
/// compaction to `to` would keep: nothing, the live versions being in `current`.
fn bump(txn: &WriteTransaction, to: u64) -> Result<(), InitError> {
    txn.open_table(LOG)?.retain(|_, _| false)?;
    txn.open_table(HISTORY)?.retain(|_, _| false)?;
    let mut meta = txn.open_table(META)?;
    meta.insert(META_REVISION, to)?;
    meta.insert(META_COMPACTED, to)?;
    Ok(())
}
