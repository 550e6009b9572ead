//! The embedded engine's integrity: checksummed values (a flipped byte is corruption, never
//! data), data directories written before checksums (migrated when opened), and a revision
//! that never goes backwards (an older copy of the database is refused until accepted).

// Wall clock throughout: the embedded engine works on its own threads, unseen by a paused clock.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::path::Path;

use kapi::storage::embedded::{Checked, DATA_FILE, MARKER_FILE};
use kapi::storage::{
    EmbeddedStorage, KeyValue, OpenError, ReadError, Storage, UpdateError, WatchError, WatchEvent,
};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::{test_options, value};

const CURRENT: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("current");
const HISTORY: TableDefinition<'static, (&str, u64), &[u8]> = TableDefinition::new("history");
const LOG: TableDefinition<'static, u64, &str> = TableDefinition::new("log");
const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");

/// One write of the old store's history: (revision, key, value or `None` for a delete).
type OldWrite = (u64, &'static str, Option<&'static str>);

/// The history the old-format directory holds: `/a` created and updated, `/b` created and
/// deleted, `/c` created.
const OLD_WRITES: [OldWrite; 5] = [
    (2, "/a", Some(r#"{"v":"a1"}"#)),
    (3, "/a", Some(r#"{"v":"a2"}"#)),
    (4, "/b", Some(r#"{"v":"b"}"#)),
    (5, "/b", None),
    (6, "/c", Some(r#"{"v":"c"}"#)),
];

const CHECKED_CURRENT: TableDefinition<'static, &str, Checked> = TableDefinition::new("current");
const CHECKED_HISTORY: TableDefinition<'static, (&str, u64), Checked> =
    TableDefinition::new("history");

/// A format 2 value: `sum | rest`, the CRC-32 over `summed` then `rest`.
fn checked(summed: &[&[u8]], rest: &[u8]) -> Vec<u8> {
    let mut hasher = crc32fast::Hasher::new();
    summed.iter().for_each(|part| hasher.update(part));
    hasher.update(rest);
    let mut out = hasher.finalize().to_le_bytes().to_vec();
    out.extend_from_slice(rest);
    out
}

/// The rows of `current` and of `history`.
struct OldRows {
    current: Vec<(&'static str, Vec<u8>)>,
    history: Vec<((&'static str, u64), Vec<u8>)>,
}

/// The rows an older kapi wrote for [`OLD_WRITES`] in `format`, every version in `history`,
/// the live ones too, through redb directly:
/// - format 1, before checksums (`codec.rs` at commit 0923fe9): `current` = create revision |
///   mod revision | value, `history` = tag (0 put, 1 tombstone) | create revision | value;
/// - format 2, with checksums (`codec.rs` at commit 69abe31): `current` = sum | create
///   revision | mod revision | value, the sum over key | the rest; `history` = tag (2 put,
///   3 tombstone) | sum | create revision | value, the sum over key | revision | tag | the
///   rest; tables typed `kapi::Checked`.
///
/// Integers are little-endian.
fn old_rows(format: u64) -> OldRows {
    let mut current = std::collections::BTreeMap::new();
    let mut history = Vec::new();
    let mut created = std::collections::BTreeMap::new();
    for (revision, key, written) in OLD_WRITES {
        let (tag, create, text) = match written {
            Some(text) => (0u8, *created.entry(key).or_insert(revision), text),
            None => (1u8, 0, ""),
        };
        let mut rest = create.to_le_bytes().to_vec();
        rest.extend_from_slice(text.as_bytes());
        let tag = if format == 1 { tag } else { tag + 2 };
        let old = match format {
            1 => [&[tag][..], &rest].concat(),
            _ => {
                let summed = [key.as_bytes(), &revision.to_le_bytes(), &[tag]];
                let sum_and_rest = checked(&summed, &rest);
                [&[tag][..], &sum_and_rest].concat()
            }
        };
        history.push(((key, revision), old));
        if written.is_none() {
            created.remove(key);
            current.remove(key);
            continue;
        }
        let mut row = create.to_le_bytes().to_vec();
        row.extend_from_slice(&revision.to_le_bytes());
        row.extend_from_slice(text.as_bytes());
        if format == 2 {
            row = checked(&[key.as_bytes()], &row);
        }
        current.insert(key, row);
    }
    OldRows {
        current: current.into_iter().collect(),
        history,
    }
}

/// Writes `rows` into the tables `current` and `history`, of the value type `V`.
fn insert_rows<V>(
    txn: &redb::WriteTransaction,
    current: TableDefinition<'static, &'static str, V>,
    history: TableDefinition<'static, (&'static str, u64), V>,
    rows: &OldRows,
) where
    V: for<'a> redb::Value<SelfType<'a> = &'a [u8]> + 'static,
{
    let mut current = txn.open_table(current).unwrap();
    for (key, row) in &rows.current {
        current.insert(*key, row.as_slice()).unwrap();
    }
    let mut history = txn.open_table(history).unwrap();
    for (key, row) in &rows.history {
        history.insert(*key, row.as_slice()).unwrap();
    }
}

/// Writes a data directory as kapi of value `format` 1 (no `format` entry in `meta`, a marker
/// without a high-water mark) or 2 wrote it.
fn write_old_dir(dir: &Path, format: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let db = redb::Database::create(dir.join(DATA_FILE)).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let rows = old_rows(format);
        if format == 1 {
            insert_rows(&txn, CURRENT, HISTORY, &rows);
        } else {
            insert_rows(&txn, CHECKED_CURRENT, CHECKED_HISTORY, &rows);
        }
        let mut log = txn.open_table(LOG).unwrap();
        for (revision, key, _) in OLD_WRITES {
            log.insert(revision, key).unwrap();
        }
        let mut meta = txn.open_table(META).unwrap();
        meta.insert("revision", 6u64).unwrap();
        meta.insert("compacted", 0u64).unwrap();
        if format == 2 {
            meta.insert("format", 2u64).unwrap();
        }
    }
    txn.commit().unwrap();
    drop(db);
    std::fs::write(
        dir.join(MARKER_FILE),
        "kapi embedded store: this directory's kapi.redb holds the objects; kapi refuses to \
         start here without it\n",
    )
    .unwrap();
}

fn kv(key: &str, text: &str, create_revision: u64, mod_revision: u64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: value(text),
        create_revision,
        mod_revision,
    }
}

/// Every event of a watch until it has `n` changes.
async fn changes(storage: &EmbeddedStorage, from: u64, n: usize) -> Vec<WatchEvent> {
    let mut watch = storage.watch("/", from).await.unwrap();
    let mut events = Vec::new();
    while events.len() < n {
        let next = tokio::time::timeout(std::time::Duration::from_secs(5), watch.next()).await;
        match next {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
            Ok(Some(Ok(event))) => events.push(event),
            other => panic!("unexpected watch item {other:?}"),
        }
    }
    events
}

/// A data directory written before checksums (format 1) or with live versions in history too
/// (format 2) opens: it is brought to the current format in one transaction, and every read
/// (latest, older revisions, lists, watch replay with previous values) answers what was
/// stored. Writes continue from its revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_directory_of_an_older_format_is_migrated_and_reads_the_same() {
    for format in [1, 2] {
        migrates_and_reads_the_same(format).await;
    }
}

async fn migrates_and_reads_the_same(format: u64) {
    let dir = tempfile::tempdir().unwrap();
    write_old_dir(dir.path(), format);
    let s = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap();
    assert!(s.opened().migrated);
    assert_eq!(s.current_revision().await.unwrap(), 6);
    let a2 = kv("/a", r#"{"v":"a2"}"#, 2, 3);
    let b = kv("/b", r#"{"v":"b"}"#, 4, 4);
    let c = kv("/c", r#"{"v":"c"}"#, 6, 6);
    assert_eq!(s.get("/a", None).await.unwrap(), Some(a2.clone()));
    assert_eq!(s.get("/b", None).await.unwrap(), None);
    assert_eq!(
        s.get("/a", Some(2)).await.unwrap(),
        Some(kv("/a", r#"{"v":"a1"}"#, 2, 2))
    );
    assert_eq!(s.get("/b", Some(4)).await.unwrap(), Some(b.clone()));
    let list = s.list("/", None, None, None).await.unwrap();
    assert_eq!(list.items, vec![a2.clone(), c.clone()]);
    let old = s.list("/", Some(4), None, None).await.unwrap();
    assert_eq!(old.items, vec![a2.clone(), b.clone()]);
    let events = changes(&s, 1, 5).await;
    let revisions: Vec<u64> = events.iter().map(WatchEvent::revision).collect();
    assert_eq!(revisions, vec![2, 3, 4, 5, 6]);
    assert_eq!(
        events[3],
        WatchEvent::Delete {
            prev: b,
            revision: 5
        }
    );
    let d = s.create("/d", value("d")).await.unwrap();
    assert_eq!(d.mod_revision, 7);
    drop(s);

    // Migrated once: the second open has nothing to rewrite and reads the same.
    let s = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap();
    assert!(!s.opened().migrated);
    assert_eq!(s.get("/a", None).await.unwrap(), Some(a2));
    assert_eq!(s.get("/c", None).await.unwrap(), Some(c));
    drop(s);

    // History holds the versions no longer live, each live one only in `current`.
    let at = |key: &str, revision| (key.to_owned(), revision);
    assert_eq!(
        history_rows(dir.path()),
        vec![at("/a", 2), at("/b", 4), at("/b", 5)],
        "format {format}"
    );
    let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();

    // kapi from before checksums opened its tables as below when it started: on a migrated
    // database that fails, so it refuses to start rather than misread the values. (kapi of
    // format 2 refuses format 3 as newer, see `a_database_of_a_newer_format_is_refused`.)
    let txn = db.begin_write().unwrap();
    assert!(matches!(
        txn.open_table(CURRENT),
        Err(redb::TableError::TableTypeMismatch { .. })
    ));
    assert!(matches!(
        txn.open_table(HISTORY),
        Err(redb::TableError::TableTypeMismatch { .. })
    ));
}

/// The (key, revision) rows of the closed database's `history` table.
fn history_rows(dir: &Path) -> Vec<(String, u64)> {
    let db = redb::Database::create(dir.join(DATA_FILE)).unwrap();
    let txn = db.begin_read().unwrap();
    let history = txn.open_table(CHECKED_HISTORY).unwrap();
    history
        .iter()
        .unwrap()
        .map(|entry| {
            let (k, _) = entry.unwrap();
            (k.value().0.to_owned(), k.value().1)
        })
        .collect()
}

/// Each version is stored once: history holds the versions writes replaced and tombstones,
/// and compaction leaves it only what reads at or after the compaction point need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_holds_replaced_versions_until_compaction_needs_them_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap();
    let a = s.create("/a", value("a0")).await.unwrap();
    let a = s.update("/a", value("a1"), a.mod_revision).await.unwrap();
    s.update("/a", value("a2"), a.mod_revision).await.unwrap();
    s.create("/b", value("b")).await.unwrap();
    s.delete("/b", None).await.unwrap();
    let c = s.create("/c", value("c0")).await.unwrap();
    s.update("/c", value("c1"), c.mod_revision).await.unwrap();
    drop(s);
    let at = |key: &str, revision| (key.to_owned(), revision);
    assert_eq!(
        history_rows(dir.path()),
        vec![
            at("/a", 2),
            at("/a", 3),
            at("/b", 5),
            at("/b", 6),
            at("/c", 7)
        ]
    );

    let s = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap();
    s.compact(c.mod_revision).await.unwrap();
    // `/c` as it was at the compaction point is still read there.
    assert_eq!(
        s.get("/c", Some(c.mod_revision)).await.unwrap(),
        Some(c.clone())
    );
    drop(s);
    assert_eq!(history_rows(dir.path()), vec![at("/c", 7)]);
}

/// Flips one byte inside every copy of `marker` in the closed database file; how many copies.
fn flip_in_file(file: &Path, marker: &[u8]) -> usize {
    let mut bytes = std::fs::read(file).unwrap();
    let mut flipped = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..]
        .windows(marker.len())
        .position(|window| window == marker)
    {
        let start = at + found;
        bytes[start + marker.len() / 2] ^= 0x01;
        flipped += 1;
        at = start + marker.len();
    }
    std::fs::write(file, bytes).unwrap();
    flipped
}

/// One flipped byte in a stored value is corruption on every path that reads it, naming the
/// key and the table; the value's bytes are never returned, and other keys read on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_in_a_stored_value_is_corruption_not_data() {
    let dir = tempfile::tempdir().unwrap();
    let created = {
        let s = EmbeddedStorage::open(dir.path(), test_options())
            .await
            .unwrap();
        s.create("/k/a", value(r#"{"v":"fine"}"#)).await.unwrap();
        let created = s
            .create("/k/b", value(r#"{"v":"FLIP-THIS-MARKER"}"#))
            .await
            .unwrap();
        s.create("/k/c", value(r#"{"v":"fine too"}"#))
            .await
            .unwrap();
        // The marked version of `/k/b` moves to `history`; `/k/e`'s is live, in `current`.
        s.update("/k/b", value(r#"{"v":"mended"}"#), created.mod_revision)
            .await
            .unwrap();
        s.create("/k/e", value(r#"{"v":"FLIP-THIS-MARKER"}"#))
            .await
            .unwrap();
        // `/k/f`'s live version is marked, the one it replaced intact.
        let f = s.create("/k/f", value(r#"{"v":"intact"}"#)).await.unwrap();
        s.update("/k/f", value(r#"{"v":"FLIP-THIS-MARKER"}"#), f.mod_revision)
            .await
            .unwrap();
        created
    };
    let flipped = flip_in_file(&dir.path().join(DATA_FILE), b"FLIP-THIS-MARKER");
    assert!(flipped >= 3, "versions in `current` and one in `history`");
    let s = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap();
    let corrupt = |error: ReadError, key: &str, table: &str| match error {
        ReadError::Corrupt(message) => {
            assert!(
                message.contains(&format!("{key:?}")) && message.contains(table),
                "{message}"
            );
            assert!(!message.contains("FLIP"), "{message}");
        }
        other => panic!("expected corruption, got {other:?}"),
    };
    corrupt(s.get("/k/e", None).await.unwrap_err(), "/k/e", "current");
    corrupt(
        s.get("/k/b", Some(created.mod_revision)).await.unwrap_err(),
        "/k/b",
        "history",
    );
    corrupt(
        s.list("/k/", None, None, None).await.unwrap_err(),
        "/k/e",
        "current",
    );
    corrupt(
        s.list("/k/", Some(created.mod_revision), None, None)
            .await
            .unwrap_err(),
        "/k/b",
        "history",
    );
    // A replay reads history in chunks, each one snapshot: the chunk that holds the damaged
    // value ends the watch with the corruption instead of any of its events.
    let mut watch = s.watch("/k/", 1).await.unwrap();
    match watch.next().await {
        Some(Err(WatchError::Corrupt(message))) => assert!(message.contains("\"/k/b\"")),
        other => panic!("expected corruption, got {other:?}"),
    }
    assert!(watch.next().await.is_none());
    // An intact older version is read past a damaged live one: history holds a later version
    // of the key, so the live one is newer.
    let f_created = created.mod_revision + 4;
    let intact = Some(kv("/k/f", r#"{"v":"intact"}"#, f_created, f_created));
    assert_eq!(s.get("/k/f", Some(f_created)).await.unwrap(), intact);
    let old_list = s.list("/k/f", Some(f_created), None, None).await.unwrap();
    assert_eq!(old_list.items, Vec::from_iter(intact));
    // Other keys and versions, and pages that do not reach the damaged one, read on.
    assert!(s.get("/k/a", None).await.unwrap().is_some());
    assert!(s.get("/k/b", None).await.unwrap().is_some());
    assert!(s.get("/k/c", None).await.unwrap().is_some());
    let page = s.list("/k/", None, None, Some(1)).await.unwrap();
    assert_eq!(page.items.len(), 1);
    // A write over the damaged key fails rather than build on it; a new key is written.
    let damaged_at = created.mod_revision + 3;
    assert!(matches!(
        s.update("/k/e", value("{}"), damaged_at).await,
        Err(UpdateError::Corrupt(_))
    ));
    s.create("/k/d", value("{}")).await.unwrap();
}

/// Builds a directory at some revision, copies its database, writes on, and puts the copy
/// back. Returns (the copy's revision, the newest revision the directory served).
async fn replace_with_older_copy(dir: &Path) -> (u64, u64) {
    let file = dir.join(DATA_FILE);
    let copy = dir.join("older-copy.redb");
    let old = {
        let s = EmbeddedStorage::open(dir, test_options()).await.unwrap();
        for i in 0..5 {
            s.create(&format!("/k/{i}"), value("old")).await.unwrap();
        }
        s.current_revision().await.unwrap()
    };
    std::fs::copy(&file, &copy).unwrap();
    let newest = {
        let s = EmbeddedStorage::open(dir, test_options()).await.unwrap();
        for i in 5..20 {
            s.create(&format!("/k/{i}"), value("new")).await.unwrap();
        }
        s.current_revision().await.unwrap()
        // A clean close records the exact high-water mark.
    };
    std::fs::rename(&copy, &file).unwrap();
    (old, newest)
}

/// A database replaced by an older copy is refused with a message that says what happened
/// and how to proceed; accepted explicitly, its revision jumps past every revision served
/// before, older resourceVersions count as compacted, and later opens need no flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_copy_of_the_database_is_refused_until_accepted_then_revisions_move_on() {
    let dir = tempfile::tempdir().unwrap();
    let (old, newest) = replace_with_older_copy(dir.path()).await;
    assert!(old < newest);

    let error = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap_err();
    match &error {
        OpenError::RevisionBehind {
            revision,
            high_water,
            ..
        } => assert_eq!((*revision, *high_water), (old, newest)),
        other => panic!("expected RevisionBehind, got {other}"),
    }
    let message = error.to_string();
    for part in ["older copy", "--accept-restored-database", "backwards"] {
        assert!(message.contains(part), "{message}");
    }

    let s = EmbeddedStorage::open(
        dir.path(),
        test_options().with_accept_restored_database(true),
    )
    .await
    .unwrap();
    assert_eq!(s.opened().bumped_from, Some(old));
    let bumped = s.current_revision().await.unwrap();
    assert!(bumped > newest, "{bumped} not past {newest}");
    assert_eq!(s.compacted_revision().await.unwrap(), bumped);
    // The copy's objects are served at their own revisions; what came after it is gone.
    let list = s.list("/k/", None, None, None).await.unwrap();
    assert_eq!(list.items.len(), 5);
    assert_eq!(list.revision, bumped);
    assert!(matches!(
        s.get("/k/0", Some(old)).await,
        Err(ReadError::Compacted { .. })
    ));
    assert!(matches!(
        s.watch("/k/", newest).await,
        Err(WatchError::Compacted { .. })
    ));
    let written = s.create("/k/new", value("x")).await.unwrap();
    assert_eq!(written.mod_revision, bumped + 1);
    let updated = s
        .update("/k/0", value("y"), list.items[0].mod_revision)
        .await
        .unwrap();
    assert_eq!(updated.mod_revision, bumped + 2);
    // A watch from the bump sees the new writes, with the previous value of the update.
    let events = changes(&s, bumped, 2).await;
    match &events[1] {
        WatchEvent::Put {
            prev: Some(prev), ..
        } => assert_eq!(prev, &list.items[0]),
        other => panic!("expected an update with its previous value, got {other:?}"),
    }
    drop(s);

    // The bumped database is the directory's newest now: it opens without the flag, and the
    // flag left on changes nothing.
    for accept in [false, true] {
        let options = test_options().with_accept_restored_database(accept);
        let s = EmbeddedStorage::open(dir.path(), options).await.unwrap();
        assert_eq!(s.opened().bumped_from, None);
        assert_eq!(s.current_revision().await.unwrap(), bumped + 2);
    }
}

/// A database in a format newer than this code's is refused, not misread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap();
    {
        let db = redb::Database::create(dir.path().join(DATA_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("format", 99u64)
            .unwrap();
        txn.commit().unwrap();
    }
    let error = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap_err();
    assert!(
        matches!(error, OpenError::NewerFormat { format: 99, .. }),
        "{error}"
    );
}

/// The high-water mark the marker file records.
fn recorded_mark(dir: &Path) -> u64 {
    let text = std::fs::read_to_string(dir.join(MARKER_FILE)).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("high-water revision: "))
        .unwrap()
        .parse()
        .unwrap()
}

/// Waits (bounded) until the marker records `revision`.
async fn wait_for_mark(dir: &Path, revision: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while recorded_mark(dir) != revision {
        assert!(
            std::time::Instant::now() < deadline,
            "the mark stayed at {} instead of {revision}",
            recorded_mark(dir)
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The mark follows the revision while the store is open (periodically, not per write), so a
/// crash leaves it at most one interval behind; a close records the exact revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_high_water_mark_follows_the_revision_while_open() {
    let dir = tempfile::tempdir().unwrap();
    let options = test_options().with_high_water_interval(std::time::Duration::from_millis(20));
    let s = EmbeddedStorage::open(dir.path(), options).await.unwrap();
    assert_eq!(recorded_mark(dir.path()), 1);
    for i in 0..3 {
        s.create(&format!("/k/{i}"), value("v")).await.unwrap();
    }
    wait_for_mark(dir.path(), s.current_revision().await.unwrap()).await;
    let last = s.create("/k/last", value("v")).await.unwrap();
    // The periodic task may hold the store for a moment, closing it just after this drop.
    drop(s);
    wait_for_mark(dir.path(), last.mod_revision).await;
}
