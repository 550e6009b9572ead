//! The behaviour suite every [`Storage`] engine must pass, written once for all engines.
//!
//! An engine's test file implements [`Fixture`] (open a fresh, empty store) and calls
//! [`storage_conformance_tests!`](crate::storage_conformance_tests), which turns every entry of
//! [`CASES`] into its own test. A case returns `Err(description)` instead of panicking, so the
//! suite can live in the library next to the trait it specifies, and the generated test decides
//! how to report. Cases never rely on engine internals: only the trait's contract.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::{
    BoxFuture, CompactError, CreateError, DeleteError, Guard, KeyValue, ReadError, Storage,
    UpdateError, WatchError, WatchEvent, WatchStream,
};

/// Opens fresh stores for the suite.
pub trait Fixture: Send + Sync {
    /// Opens a new, empty store (revision 1, nothing compacted). Periodic compaction should be
    /// off or slow; progress notifications should come within a few seconds of idleness.
    fn open(&self) -> BoxFuture<'_, Result<Arc<dyn Storage>, String>>;
}

/// One conformance case: runs against a fixture and describes the first violation found.
pub type Case = for<'a> fn(&'a dyn Fixture) -> BoxFuture<'a, Result<(), String>>;

/// Every case, by name.
pub const CASES: &[(&str, Case)] = crate::__storage_conformance_cases!(table);

/// Runs the case called `name` against `fixture`; an unknown name is a failure too.
pub async fn run(name: &str, fixture: &dyn Fixture) -> Result<(), String> {
    let (_, case) = CASES
        .iter()
        .find(|(case, _)| *case == name)
        .ok_or_else(|| format!("no conformance case named {name}"))?;
    case(fixture).await
}

/// Defines one test per conformance case, each against a fixture of its own.
///
/// The argument is an expression building a
/// [`Fixture`](crate::storage::conformance::Fixture); every generated test evaluates it
/// afresh, so cases never share a store. The expansion defines, in the calling module, one
/// `#[tokio::test]` (multi-threaded, two workers) named after each entry of
/// [`CASES`](crate::storage::conformance::CASES), which panics with the case's description of
/// what went wrong, plus `every_conformance_case_has_a_test`. The calling crate needs `tokio`
/// with the `macros` and `rt-multi-thread` features, as `#[tokio::test]` names it.
///
/// An engine's whole conformance run:
///
/// ```no_run
/// use std::sync::Arc;
///
/// use kapi::storage::conformance::Fixture;
/// use kapi::storage::{BoxFuture, EmbeddedOptions, EmbeddedStorage, Storage};
///
/// struct Fresh(tempfile::TempDir);
///
/// impl Fixture for Fresh {
///     fn open(&self) -> BoxFuture<'_, Result<Arc<dyn Storage>, String>> {
///         Box::pin(async move {
///             let storage = EmbeddedStorage::open(self.0.path(), EmbeddedOptions::default())
///                 .await
///                 .map_err(|e| e.to_string())?;
///             Ok(Arc::new(storage) as Arc<dyn Storage>)
///         })
///     }
/// }
///
/// kapi::storage_conformance_tests!(Fresh(tempfile::tempdir().expect("temporary directory")));
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! storage_conformance_tests {
    ($fixture:expr $(,)?) => {
        $crate::__storage_conformance_cases! { tests $fixture }
    };
}

/// The one list of case names, handed to the arm named first: `table` builds
/// [`CASES`](crate::storage::conformance::CASES), `tests` the tests of
/// [`storage_conformance_tests!`](crate::storage_conformance_tests). Test names must be identifiers at
/// expansion time, which a `const` table cannot give a declarative macro, hence a macro list.
#[doc(hidden)]
#[macro_export]
macro_rules! __storage_conformance_cases {
    (@table; $($name:ident),*) => {
        &[$((stringify!($name), $name)),*]
    };
    (@tests $fixture:expr; $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let fixture = $fixture;
                if let Err(failure) =
                    $crate::storage::conformance::run(stringify!($name), &fixture).await
                {
                    panic!(
                        "conformance case {} failed against {}: {failure}",
                        stringify!($name),
                        ::std::any::type_name_of_val(&fixture),
                    );
                }
            }
        )*

        #[test]
        fn every_conformance_case_has_a_test() {
            let listed = [$(stringify!($name)),*];
            for (name, _) in $crate::storage::conformance::CASES {
                assert!(listed.contains(name), "conformance case {name} is not run by a test");
            }
            for (i, name) in listed.iter().enumerate() {
                assert!(!listed[..i].contains(name), "conformance case {name} is listed twice");
            }
            assert_eq!(listed.len(), $crate::storage::conformance::CASES.len());
        }
    };
    ($then:ident $($args:tt)*) => {
        $crate::__storage_conformance_cases! { @$then $($args)*;
            revisions_strictly_increase,
            get_at_old_revision,
            list_pages_are_one_snapshot,
            count_counts_live_keys_under_prefix,
            create_of_existing_key_conflicts,
            guarded_create_needs_the_guard_unchanged,
            stale_update_returns_current,
            stale_delete_returns_current,
            too_large_value_is_refused,
            watch_delivers_exactly_later_events,
            watch_without_prev_keeps_keys_and_revisions,
            watch_replays_then_follows_live,
            watch_sends_progress_when_idle,
            compacted_revisions_are_refused,
            future_revisions_are_refused,
            compaction_keeps_latest_values,
            racing_updates_have_one_winner
        }
    };
}

/// How long a case waits for an expected watch event before calling it missing.
const EVENT_WAIT: Duration = Duration::from_secs(10);

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

macro_rules! ensure_eq {
    ($left:expr, $right:expr, $what:expr) => {{
        let (left, right) = (&$left, &$right);
        if left != right {
            return Err(format!("{}: got {:?}, want {:?}", $what, left, right));
        }
    }};
}

fn v(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

fn fail<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> String + '_ {
    move |err| format!("{what}: {err}")
}

async fn put_new(s: &dyn Storage, key: &str, value: &str) -> Result<KeyValue, String> {
    s.create(key, v(value))
        .await
        .map_err(|e| format!("create {key}: {e}"))
}

async fn put(s: &dyn Storage, key: &str, value: &str, expected: u64) -> Result<KeyValue, String> {
    s.update(key, v(value), expected)
        .await
        .map_err(|e| format!("update {key}: {e}"))
}

async fn current(s: &dyn Storage) -> Result<u64, String> {
    s.current_revision().await.map_err(|e| e.to_string())
}

/// The next non-progress event, or an error when none arrives in time.
async fn next_change(watch: &mut WatchStream) -> Result<WatchEvent, String> {
    let deadline = tokio::time::Instant::now() + EVENT_WAIT;
    loop {
        match tokio::time::timeout_at(deadline, watch.next()).await {
            Err(_) => return Err("no watch event arrived in time".to_owned()),
            Ok(None) => return Err("watch ended unexpectedly".to_owned()),
            Ok(Some(Err(err))) => return Err(format!("watch failed: {err}")),
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
            Ok(Some(Ok(event))) => return Ok(event),
        }
    }
}

/// A compact description of a change for comparisons: (revision, key, value or None for a
/// delete, previous value).
type Change = (u64, String, Option<Bytes>, Option<Bytes>);

fn describe(event: &WatchEvent) -> Option<Change> {
    match event {
        WatchEvent::Put { kv, prev } => Some((
            kv.mod_revision,
            kv.key.clone(),
            Some(kv.value.clone()),
            prev.as_ref().map(|p| p.value.clone()),
        )),
        WatchEvent::Delete { prev, revision } => {
            Some((*revision, prev.key.clone(), None, Some(prev.value.clone())))
        }
        WatchEvent::Progress { .. } => None,
    }
}

/// Every successful write takes exactly the next revision; failed writes take none.
pub fn revisions_strictly_increase(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let start = current(s).await?;
        ensure_eq!(start, 1, "revision of a fresh store");
        let a = put_new(s, "/r/a", "1").await?;
        ensure_eq!(a.mod_revision, start + 1, "first write's revision");
        ensure_eq!(
            a.create_revision,
            start + 1,
            "first write's create revision"
        );
        let b = put_new(s, "/r/b", "1").await?;
        ensure_eq!(b.mod_revision, start + 2, "second write's revision");
        let a2 = put(s, "/r/a", "2", a.mod_revision).await?;
        ensure_eq!(a2.mod_revision, start + 3, "update's revision");
        ensure_eq!(
            a2.create_revision,
            a.create_revision,
            "update keeps create revision"
        );
        ensure!(
            s.create("/r/a", v("x")).await.is_err(),
            "duplicate create succeeded"
        );
        ensure!(
            s.update("/r/b", v("x"), 999).await.is_err(),
            "stale update succeeded"
        );
        ensure!(
            s.delete("/r/zz", None).await.is_err(),
            "delete of a missing key succeeded"
        );
        ensure_eq!(current(s).await?, start + 3, "revision after failed writes");
        let deleted = s.delete("/r/a", None).await.map_err(fail("delete"))?;
        ensure_eq!(deleted.revision, start + 4, "delete's revision");
        ensure_eq!(deleted.prev, a2, "delete's previous value");
        ensure_eq!(current(s).await?, start + 4, "current revision");
        Ok(())
    })
}

/// Reads at an older revision see the key as it was then, including absence.
pub fn get_at_old_revision(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let before = current(s).await?;
        let v1 = put_new(s, "/g/k", "v1").await?;
        let v2 = put(s, "/g/k", "v2", v1.mod_revision).await?;
        let deleted = s
            .delete("/g/k", Some(v2.mod_revision))
            .await
            .map_err(fail("delete"))?;
        let v3 = put_new(s, "/g/k", "v3").await?;
        let cases = [
            (before, None),
            (v1.mod_revision, Some(v1.clone())),
            (v2.mod_revision, Some(v2.clone())),
            (deleted.revision, None),
            (v3.mod_revision, Some(v3.clone())),
        ];
        for (revision, want) in cases {
            let got = s.get("/g/k", Some(revision)).await.map_err(fail("get"))?;
            ensure_eq!(got, want, format!("get at revision {revision}"));
        }
        ensure_eq!(
            v2.create_revision,
            v1.mod_revision,
            "create revision survives updates"
        );
        ensure_eq!(
            v3.create_revision,
            v3.mod_revision,
            "re-created key has a new create revision"
        );
        let latest = s.get("/g/k", None).await.map_err(fail("get latest"))?;
        ensure_eq!(latest, Some(v3), "latest value");
        ensure_eq!(
            s.get("/g/none", None).await.map_err(fail("get missing"))?,
            None,
            "missing key"
        );
        Ok(())
    })
}

/// Paging with a start key and limit at the first page's revision is one consistent snapshot,
/// whatever is written between pages.
pub fn list_pages_are_one_snapshot(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let mut originals = Vec::new();
        for i in 0..10 {
            originals.push(put_new(s, &format!("/p/k{i:02}"), &format!("v{i}")).await?);
        }
        put_new(s, "/pz", "outside").await?;
        put_new(s, "/o/before", "outside").await?;
        let first = s
            .list("/p/", None, None, Some(3))
            .await
            .map_err(fail("first page"))?;
        ensure_eq!(first.items, originals[..3].to_vec(), "first page");
        ensure!(first.more, "first page must say more remain");
        ensure_eq!(first.remaining, 7, "first page's remaining count");
        let snapshot = first.revision;
        ensure_eq!(
            snapshot,
            current(s).await?,
            "list revision is the current revision"
        );

        // Change the collection between pages: none of it may show up in later pages.
        put(s, "/p/k05", "changed", originals[5].mod_revision).await?;
        s.delete("/p/k07", None).await.map_err(fail("delete k07"))?;
        put_new(s, "/p/k10", "new").await?;
        put_new(s, "/p/k035", "new").await?;

        let mut seen = first.items.clone();
        let mut page = first;
        let mut pages = 1;
        while page.more {
            let last = page
                .items
                .last()
                .map(|kv| kv.key.clone())
                .unwrap_or_default();
            // The continue key is the successor of the last key returned.
            let start = format!("{last}\0");
            let before = page.remaining;
            page = s
                .list("/p/", Some(snapshot), Some(&start), Some(3))
                .await
                .map_err(fail("next page"))?;
            pages += 1;
            ensure_eq!(page.revision, snapshot, format!("revision of page {pages}"));
            ensure_eq!(
                page.remaining,
                before - page.items.len() as u64,
                format!("remaining count of page {pages}")
            );
            ensure_eq!(
                page.more,
                page.remaining > 0,
                format!("more flag of page {pages}")
            );
            seen.extend(page.items.clone());
            ensure!(pages <= 10, "pagination does not end");
        }
        ensure_eq!(pages, 4, "page count for 10 items by 3");
        ensure_eq!(seen, originals, "items across pages");

        let whole = s
            .list("/p/", Some(snapshot), None, None)
            .await
            .map_err(fail("whole"))?;
        ensure_eq!(whole.items, originals, "unpaged list at the snapshot");
        ensure!(
            !whole.more && whole.remaining == 0,
            "unpaged list says more remain"
        );

        let now = s
            .list("/p/", None, None, Some(0))
            .await
            .map_err(fail("latest"))?;
        let keys: Vec<_> = now.items.iter().map(|kv| kv.key.as_str()).collect();
        ensure_eq!(
            keys,
            vec![
                "/p/k00", "/p/k01", "/p/k02", "/p/k03", "/p/k035", "/p/k04", "/p/k05", "/p/k06",
                "/p/k08", "/p/k09", "/p/k10"
            ],
            "latest list"
        );
        let k05 = now
            .items
            .iter()
            .find(|kv| kv.key == "/p/k05")
            .map(|kv| kv.value.clone());
        ensure_eq!(k05, Some(v("changed")), "latest value of k05");

        // A start key before the prefix is clamped to the prefix.
        let clamped = s
            .list("/p/", None, Some("/a"), Some(1))
            .await
            .map_err(fail("clamped"))?;
        ensure_eq!(
            clamped.items.first().map(|kv| kv.key.clone()),
            Some("/p/k00".to_owned()),
            "clamped start"
        );
        let empty = s
            .list("/nothing/", None, None, None)
            .await
            .map_err(fail("empty"))?;
        ensure!(
            empty.items.is_empty() && !empty.more,
            "list of an empty prefix"
        );
        Ok(())
    })
}

/// `count` counts the live keys under a prefix, and only those.
pub fn count_counts_live_keys_under_prefix(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        for key in ["/c/a", "/c/b", "/c/c", "/cc", "/d/a"] {
            put_new(s, key, "x").await?;
        }
        s.delete("/c/b", None).await.map_err(fail("delete"))?;
        for (prefix, want) in [("/c/", 2u64), ("/c", 3), ("/d/", 1), ("/e/", 0), ("/", 4)] {
            let got = s.count(prefix).await.map_err(fail("count"))?;
            ensure_eq!(got, want, format!("count of {prefix}"));
        }
        Ok(())
    })
}

/// Creating an existing key fails, reports what is there, and writes nothing.
pub fn create_of_existing_key_conflicts(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let first = put_new(s, "/x/k", "first").await?;
        match s.create("/x/k", v("second")).await {
            Err(CreateError::AlreadyExists { current }) => {
                ensure_eq!(current, first, "existing value")
            }
            other => return Err(format!("second create: got {other:?}, want AlreadyExists")),
        }
        ensure_eq!(
            s.get("/x/k", None).await.map_err(fail("get"))?,
            Some(first),
            "value after failed create"
        );
        Ok(())
    })
}

/// A guarded create lands only while the guard's key is at the guard's mod revision; an
/// existing key still answers `AlreadyExists`.
pub fn guarded_create_needs_the_guard_unchanged(
    f: &dyn Fixture,
) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let ns = put_new(s, "/ns/a", "active").await?;
        let guard = Guard {
            key: "/ns/a".to_owned(),
            mod_revision: ns.mod_revision,
        };
        let created = s
            .create_guarded("/obj/a/one", v("1"), &guard)
            .await
            .map_err(fail("guarded create"))?;
        ensure_eq!(
            s.get("/obj/a/one", None).await.map_err(fail("get"))?,
            Some(created.clone()),
            "guarded create stored"
        );
        match s.create_guarded("/obj/a/one", v("again"), &guard).await {
            Err(CreateError::AlreadyExists { current }) => {
                ensure_eq!(current, created, "existing value")
            }
            other => return Err(format!("existing key: got {other:?}, want AlreadyExists")),
        }
        let marked = put(s, "/ns/a", "terminating", ns.mod_revision).await?;
        let before = current(s).await?;
        match s.create_guarded("/obj/a/two", v("2"), &guard).await {
            Err(CreateError::GuardChanged) => {}
            other => return Err(format!("changed guard: got {other:?}, want GuardChanged")),
        }
        ensure_eq!(current(s).await?, before, "a failed guard writes nothing");
        ensure_eq!(
            s.get("/obj/a/two", None).await.map_err(fail("get"))?,
            None,
            "nothing stored under a changed guard"
        );
        s.delete("/ns/a", None).await.map_err(fail("delete"))?;
        let gone = Guard {
            key: "/ns/a".to_owned(),
            mod_revision: marked.mod_revision,
        };
        match s.create_guarded("/obj/a/three", v("3"), &gone).await {
            Err(CreateError::GuardChanged) => Ok(()),
            other => Err(format!(
                "deleted guard key: got {other:?}, want GuardChanged"
            )),
        }
    })
}
/// An update against a stale mod revision fails and returns the current value.
pub fn stale_update_returns_current(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let v1 = put_new(s, "/u/k", "v1").await?;
        let v2 = put(s, "/u/k", "v2", v1.mod_revision).await?;
        match s.update("/u/k", v("v3"), v1.mod_revision).await {
            Err(UpdateError::Conflict { current }) => {
                ensure_eq!(current, v2, "conflict's current value")
            }
            other => return Err(format!("stale update: got {other:?}, want Conflict")),
        }
        match s.update("/u/missing", v("x"), 1).await {
            Err(UpdateError::NotFound) => {}
            other => {
                return Err(format!(
                    "update of a missing key: got {other:?}, want NotFound"
                ));
            }
        }
        ensure_eq!(
            s.get("/u/k", None).await.map_err(fail("get"))?,
            Some(v2),
            "value after conflict"
        );
        Ok(())
    })
}

/// A delete against a stale mod revision fails and returns the current value.
pub fn stale_delete_returns_current(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let v1 = put_new(s, "/d/k", "v1").await?;
        let v2 = put(s, "/d/k", "v2", v1.mod_revision).await?;
        match s.delete("/d/k", Some(v1.mod_revision)).await {
            Err(DeleteError::Conflict { current }) => {
                ensure_eq!(current, v2.clone(), "conflict's current value")
            }
            other => return Err(format!("stale delete: got {other:?}, want Conflict")),
        }
        let deleted = s
            .delete("/d/k", Some(v2.mod_revision))
            .await
            .map_err(fail("delete"))?;
        ensure_eq!(deleted.prev, v2, "deleted value");
        ensure_eq!(deleted.revision, v2.mod_revision + 1, "delete revision");
        match s.delete("/d/k", None).await {
            Err(DeleteError::NotFound) => {}
            other => return Err(format!("second delete: got {other:?}, want NotFound")),
        }
        Ok(())
    })
}

/// A value over the engine's size limit is refused with `TooLarge` and nothing is written.
pub fn too_large_value_is_refused(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let before = current(s).await?;
        let huge = Bytes::from(vec![b'x'; 64 * 1024 * 1024]);
        match s.create("/big/k", huge.clone()).await {
            Err(CreateError::TooLarge { size, limit }) => {
                ensure!(size > limit, "size {size} within limit {limit}")
            }
            other => return Err(format!("huge create: got {other:?}, want TooLarge")),
        }
        let small = put_new(s, "/big/k", "small").await?;
        match s.update("/big/k", huge, small.mod_revision).await {
            Err(UpdateError::TooLarge { .. }) => {}
            other => return Err(format!("huge update: got {other:?}, want TooLarge")),
        }
        ensure_eq!(
            current(s).await?,
            before + 1,
            "revision after refused writes"
        );
        Ok(())
    })
}

/// A watch from revision r delivers exactly the changes after r under its prefix, in order,
/// with previous values.
pub fn watch_delivers_exactly_later_events(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let a1 = put_new(s, "/w/a", "a1").await?;
        put_new(s, "/other/x", "x").await?;
        let from = current(s).await?;
        let a2 = put(s, "/w/a", "a2", a1.mod_revision).await?;
        let b1 = put_new(s, "/w/b", "b1").await?;
        put_new(s, "/other/y", "y").await?;
        let del = s.delete("/w/a", None).await.map_err(fail("delete a"))?;
        let a3 = put_new(s, "/w/a", "a3").await?;
        let want: Vec<Change> = vec![
            (a2.mod_revision, "/w/a".into(), Some(v("a2")), Some(v("a1"))),
            (b1.mod_revision, "/w/b".into(), Some(v("b1")), None),
            (del.revision, "/w/a".into(), None, Some(v("a2"))),
            (a3.mod_revision, "/w/a".into(), Some(v("a3")), None),
        ];
        let mut watch = s
            .watch("/w/", from)
            .await
            .map_err(|e| format!("watch: {e}"))?;
        let mut got = Vec::new();
        for _ in 0..want.len() {
            got.extend(describe(&next_change(&mut watch).await?));
        }
        ensure_eq!(got, want, "replayed events");
        // Nothing else is pending: the next thing is the next write.
        let b2 = put(s, "/w/b", "b2", b1.mod_revision).await?;
        let next = describe(&next_change(&mut watch).await?);
        ensure_eq!(
            next,
            Some((
                b2.mod_revision,
                "/w/b".to_owned(),
                Some(v("b2")),
                Some(v("b1"))
            )),
            "live event after replay"
        );
        // A watch from the current revision replays nothing.
        let mut fresh = s
            .watch("/w/", current(s).await?)
            .await
            .map_err(|e| format!("watch: {e}"))?;
        let c = put_new(s, "/w/c", "c").await?;
        let first = describe(&next_change(&mut fresh).await?);
        ensure_eq!(
            first.map(|c| c.0),
            Some(c.mod_revision),
            "first event of a watch from now"
        );
        Ok(())
    })
}

/// A watch without previous values has the same changes at the same revisions, each with
/// its key (engines may leave the previous values out).
pub fn watch_without_prev_keeps_keys_and_revisions(
    f: &dyn Fixture,
) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let from = current(s).await?;
        let a1 = put_new(s, "/w/a", "a1").await?;
        let a2 = put(s, "/w/a", "a2", a1.mod_revision).await?;
        put_new(s, "/other/x", "x").await?;
        let del = s.delete("/w/a", None).await.map_err(fail("delete a"))?;
        let mut watch = s
            .watch_without_prev("/w/", from)
            .await
            .map_err(|e| format!("watch: {e}"))?;
        let mut got = Vec::new();
        for _ in 0..3 {
            got.extend(
                describe(&next_change(&mut watch).await?)
                    .map(|(revision, key, value, _)| (revision, key, value)),
            );
        }
        let want = vec![
            (a1.mod_revision, "/w/a".to_owned(), Some(v("a1"))),
            (a2.mod_revision, "/w/a".to_owned(), Some(v("a2"))),
            (del.revision, "/w/a".to_owned(), None),
        ];
        ensure_eq!(got, want, "events without previous values");
        Ok(())
    })
}

/// Replay from history hands over to live events with no gap and no duplicate, while writes
/// keep arriving.
pub fn watch_replays_then_follows_live(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let from = current(&*s).await?;
        const TOTAL: u64 = 300;
        for i in 0..TOTAL / 2 {
            put_new(&*s, &format!("/l/{i:04}"), "x").await?;
        }
        let mut watch = s
            .watch("/l/", from)
            .await
            .map_err(|e| format!("watch: {e}"))?;
        let writer = {
            let s = s.clone();
            tokio::spawn(async move {
                for i in TOTAL / 2..TOTAL {
                    put_new(&*s, &format!("/l/{i:04}"), "x").await?;
                }
                Ok::<(), String>(())
            })
        };
        let mut last = from;
        for i in 0..TOTAL {
            let event = next_change(&mut watch).await?;
            ensure_eq!(event.revision(), last + 1, format!("revision of event {i}"));
            ensure_eq!(
                event.key().map(str::to_owned),
                Some(format!("/l/{i:04}")),
                format!("key of event {i}")
            );
            last = event.revision();
        }
        writer.await.map_err(|e| e.to_string())??;
        Ok(())
    })
}

/// An idle watch reports progress up to the current revision, including writes to other
/// prefixes it does not deliver.
pub fn watch_sends_progress_when_idle(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let mut watch = s
            .watch("/quiet/", current(s).await?)
            .await
            .map_err(|e| format!("watch: {e}"))?;
        put_new(s, "/loud/a", "x").await?;
        let target = current(s).await?;
        let deadline = tokio::time::Instant::now() + EVENT_WAIT;
        loop {
            match tokio::time::timeout_at(deadline, watch.next()).await {
                Err(_) => return Err(format!("no progress up to revision {target} arrived")),
                Ok(Some(Ok(WatchEvent::Progress { revision }))) if revision >= target => {
                    ensure_eq!(revision, target, "progress revision");
                    return Ok(());
                }
                Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
                Ok(other) => return Err(format!("unexpected watch item {other:?}")),
            }
        }
    })
}

/// Reads and watches below the compaction point fail with `Compacted`; at it they work.
pub fn compacted_revisions_are_refused(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let mut kv = put_new(s, "/k/a", "0").await?;
        for i in 1..5 {
            kv = put(s, "/k/a", &i.to_string(), kv.mod_revision).await?;
        }
        let point = kv.mod_revision - 2;
        s.compact(point)
            .await
            .map_err(|e| format!("compact: {e}"))?;
        ensure_eq!(
            s.compacted_revision().await.map_err(|e| e.to_string())?,
            point,
            "compacted revision"
        );
        let old = point - 1;
        match s.get("/k/a", Some(old)).await {
            Err(ReadError::Compacted { compacted, .. }) => {
                ensure_eq!(compacted, point, "get's compacted")
            }
            other => return Err(format!("get below compaction: got {other:?}")),
        }
        match s.list("/k/", Some(old), None, Some(1)).await {
            Err(ReadError::Compacted { compacted, .. }) => {
                ensure_eq!(compacted, point, "list's compacted")
            }
            other => return Err(format!("list below compaction: got {other:?}")),
        }
        match s.watch("/k/", old).await {
            Err(WatchError::Compacted { compacted, .. }) => {
                ensure_eq!(compacted, point, "watch's compacted")
            }
            Err(other) => return Err(format!("watch below compaction: got {other:?}")),
            Ok(mut watch) => match watch.next().await {
                Some(Err(WatchError::Compacted { .. })) => {}
                other => return Err(format!("watch below compaction: got {other:?}")),
            },
        }
        let at = s
            .get("/k/a", Some(point))
            .await
            .map_err(fail("get at compaction point"))?;
        ensure_eq!(
            at.map(|kv| kv.mod_revision),
            Some(point),
            "value at the compaction point"
        );
        let mut watch = s
            .watch("/k/", point)
            .await
            .map_err(|e| format!("watch at point: {e}"))?;
        let first = describe(&next_change(&mut watch).await?);
        ensure_eq!(
            first,
            Some((point + 1, "/k/a".to_owned(), Some(v("3")), Some(v("2")))),
            "first event after the compaction point, with its previous value"
        );
        match s.compact(point).await {
            Err(CompactError::Compacted { .. }) => {}
            other => return Err(format!("compacting again: got {other:?}")),
        }
        Ok(())
    })
}

/// Reads, watches and compactions at a revision the store has not reached fail with
/// `FutureRevision` carrying the current revision.
pub fn future_revisions_are_refused(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        put_new(s, "/f/a", "x").await?;
        let now = current(s).await?;
        let ahead = now + 5;
        match s.get("/f/a", Some(ahead)).await {
            Err(ReadError::FutureRevision { current, .. }) => {
                ensure_eq!(current, now, "get's current")
            }
            other => return Err(format!("get ahead: got {other:?}")),
        }
        match s.list("/f/", Some(ahead), None, None).await {
            Err(ReadError::FutureRevision { current, .. }) => {
                ensure_eq!(current, now, "list's current")
            }
            other => return Err(format!("list ahead: got {other:?}")),
        }
        match s.watch("/f/", ahead).await {
            Err(WatchError::FutureRevision { current, .. }) => {
                ensure_eq!(current, now, "watch's current")
            }
            other => return Err(format!("watch ahead: got {other:?}")),
        }
        match s.compact(ahead).await {
            Err(CompactError::FutureRevision { current, .. }) => {
                ensure_eq!(current, now, "compact's current")
            }
            other => return Err(format!("compact ahead: got {other:?}")),
        }
        Ok(())
    })
}

/// Compacting to the current revision keeps every key's latest value and drops deleted keys.
pub fn compaction_keeps_latest_values(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let s = &*s;
        let mut a = put_new(s, "/m/a", "a0").await?;
        for i in 1..20 {
            a = put(s, "/m/a", &format!("a{i}"), a.mod_revision).await?;
        }
        let b = put_new(s, "/m/b", "b").await?;
        put_new(s, "/m/c", "c").await?;
        s.delete("/m/c", None).await.map_err(fail("delete c"))?;
        let d0 = put_new(s, "/m/d", "d0").await?;
        let target = current(s).await?;
        let d = put(s, "/m/d", "d1", d0.mod_revision).await?;
        s.compact(target)
            .await
            .map_err(|e| format!("compact: {e}"))?;
        let at = s
            .list("/m/", Some(target), None, None)
            .await
            .map_err(fail("list at point"))?;
        let keys: Vec<_> = at
            .items
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.clone()))
            .collect();
        ensure_eq!(
            keys,
            vec![("/m/a", v("a19")), ("/m/b", v("b")), ("/m/d", v("d0"))],
            "list at the compaction point"
        );
        let now = s
            .list("/m/", None, None, None)
            .await
            .map_err(fail("list now"))?;
        ensure_eq!(
            now.items,
            vec![a.clone(), b, d.clone()],
            "latest list after compaction"
        );
        let got = s.get("/m/a", Some(target)).await.map_err(fail("get a"))?;
        ensure_eq!(got, Some(a), "a at the compaction point");
        ensure_eq!(
            s.get("/m/c", Some(target)).await.map_err(fail("get c"))?,
            None,
            "deleted c"
        );
        // What came after the point replays with the value it replaced.
        let mut watch = s
            .watch("/m/", target)
            .await
            .map_err(fail("watch from the point"))?;
        ensure_eq!(
            next_change(&mut watch).await?,
            WatchEvent::Put {
                kv: d,
                prev: Some(d0),
            },
            "d's update after the point"
        );
        Ok(())
    })
}

/// Of several updates racing with the same expected revision, exactly one wins and the others
/// see the winner as the current value.
pub fn racing_updates_have_one_winner(f: &dyn Fixture) -> BoxFuture<'_, Result<(), String>> {
    Box::pin(async move {
        let s = f.open().await?;
        let mut kv = put_new(&*s, "/race/k", "start").await?;
        for round in 0..5 {
            let mut racers = Vec::new();
            for racer in 0..8 {
                let s = s.clone();
                let expected = kv.mod_revision;
                racers.push(tokio::spawn(async move {
                    s.update("/race/k", v(&format!("r{round}-{racer}")), expected)
                        .await
                }));
            }
            let mut winners = Vec::new();
            let mut losers = Vec::new();
            for racer in racers {
                match racer.await.map_err(|e| e.to_string())? {
                    Ok(won) => winners.push(won),
                    Err(UpdateError::Conflict { current }) => losers.push(current),
                    Err(other) => return Err(format!("racer failed: {other}")),
                }
            }
            ensure_eq!(winners.len(), 1, format!("winners in round {round}"));
            let winner = winners.remove(0);
            for current in losers {
                ensure_eq!(
                    current,
                    winner,
                    format!("loser's current value in round {round}")
                );
            }
            kv = winner;
        }
        Ok(())
    })
}
