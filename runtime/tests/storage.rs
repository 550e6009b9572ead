//! Storage: the engine-neutral conformance suite run against the embedded engine, plus the
//! embedded engine's own guarantees (reopen, slow watchers, periodic compaction, throughput; in
//! `integrity`, checksums, old data directories and revisions that never go backwards); in
//! `encrypted`, the same suite through encryption at rest.

// Wall clock throughout: the embedded engine works on its own threads, unseen by a paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kapi::storage::conformance::Fixture;
use kapi::storage::{
    BoxFuture, EmbeddedOptions, EmbeddedStorage, OpenError, ReadError, Storage, WatchError,
    WatchEvent,
};
use tempfile::TempDir;

#[path = "storage/encrypted.rs"]
mod encrypted;
#[path = "storage/integrity.rs"]
mod integrity;

/// Fresh embedded stores in subdirectories of one temporary directory, removed on drop.
struct Embedded {
    root: TempDir,
    opened: AtomicUsize,
}

impl Embedded {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().expect("temporary directory"),
            opened: AtomicUsize::new(0),
        }
    }
}

fn test_options() -> EmbeddedOptions {
    EmbeddedOptions::default()
        .with_compaction_interval(None)
        .with_progress_interval(Duration::from_millis(100))
}

impl Fixture for Embedded {
    fn open(&self) -> BoxFuture<'_, Result<Arc<dyn Storage>, String>> {
        Box::pin(async move {
            let n = self.opened.fetch_add(1, Ordering::Relaxed);
            let storage =
                EmbeddedStorage::open(self.root.path().join(n.to_string()), test_options())
                    .await
                    .map_err(|e| e.to_string())?;
            Ok(Arc::new(storage) as Arc<dyn Storage>)
        })
    }
}

kapi::storage_conformance_tests!(Embedded::new());

/// The same engine in memory only (what test servers use) passes the same suite.
mod in_memory {
    use super::*;

    struct InMemory;

    impl Fixture for InMemory {
        fn open(&self) -> BoxFuture<'_, Result<Arc<dyn Storage>, String>> {
            Box::pin(async move {
                let storage =
                    EmbeddedStorage::in_memory(test_options()).map_err(|e| e.to_string())?;
                Ok(Arc::new(storage) as Arc<dyn Storage>)
            })
        }
    }

    kapi::storage_conformance_tests!(InMemory);

    #[tokio::test]
    async fn a_store_in_memory_has_no_file_and_starts_empty() {
        let storage = EmbeddedStorage::in_memory(test_options()).unwrap();
        assert_eq!(storage.path(), None);
        assert_eq!(storage.current_revision().await.unwrap(), 1);
        storage.create("/a", value("1")).await.unwrap();
        assert_eq!(storage.count("/").await.unwrap(), 1);
        drop(storage);
        let again = EmbeddedStorage::in_memory(test_options()).unwrap();
        assert_eq!(again.count("/").await.unwrap(), 0);
    }
}

fn value(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_keeps_data_revision_and_compaction_point() {
    let dir = tempfile::tempdir().unwrap();
    let (a2, b, deleted_at, compacted) = {
        let s = EmbeddedStorage::open(dir.path(), test_options())
            .await
            .unwrap();
        let a1 = s.create("/a", value("a1")).await.unwrap();
        let a2 = s.update("/a", value("a2"), a1.mod_revision).await.unwrap();
        let b = s.create("/b", value("b")).await.unwrap();
        s.create("/c", value("c")).await.unwrap();
        let deleted = s.delete("/c", None).await.unwrap();
        s.compact(a2.mod_revision).await.unwrap();
        (
            a2,
            b,
            deleted.revision,
            s.compacted_revision().await.unwrap(),
        )
    };
    // The first handle is gone, so the file is closed and can be opened again.
    let s = EmbeddedStorage::open(dir.path(), test_options())
        .await
        .unwrap();
    assert_eq!(s.current_revision().await.unwrap(), deleted_at);
    assert_eq!(s.compacted_revision().await.unwrap(), compacted);
    assert_eq!(s.get("/a", None).await.unwrap(), Some(a2.clone()));
    assert_eq!(s.get("/b", None).await.unwrap(), Some(b.clone()));
    assert_eq!(s.get("/c", None).await.unwrap(), None);
    // History newer than the compaction point survived too.
    assert_eq!(
        s.get("/b", Some(b.mod_revision)).await.unwrap(),
        Some(b.clone())
    );
    assert!(s.get("/c", Some(deleted_at - 1)).await.unwrap().is_some());
    assert!(matches!(
        s.get("/a", Some(compacted - 1)).await,
        Err(ReadError::Compacted { .. })
    ));
    let next = s.create("/d", value("d")).await.unwrap();
    assert_eq!(next.mod_revision, deleted_at + 1);
    let mut watch = s.watch("/", compacted).await.unwrap();
    let mut revisions = Vec::new();
    while revisions.len() < 4 {
        match tokio::time::timeout(Duration::from_secs(5), watch.next()).await {
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
            Ok(Some(Ok(event))) => revisions.push(event.revision()),
            other => panic!("unexpected watch item {other:?}"),
        }
    }
    assert_eq!(
        revisions,
        vec![
            b.mod_revision,
            b.mod_revision + 1,
            deleted_at,
            deleted_at + 1
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_watcher_is_cut_off_instead_of_buffering() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStorage::open(dir.path(), test_options().with_watch_buffer(16))
        .await
        .unwrap();
    let start = s.current_revision().await.unwrap();
    let mut slow = s.watch("/s/", start).await.unwrap();
    // Reach the live phase (nothing to replay), then stop reading while writers go on.
    assert!(matches!(
        tokio::time::timeout(Duration::from_secs(5), slow.next()).await,
        Ok(Some(Ok(WatchEvent::Progress { .. })))
    ));
    let mut fast = s.watch("/s/", start).await.unwrap();
    for i in 0..100 {
        s.create(&format!("/s/{i:03}"), value("x")).await.unwrap();
        // The fast watcher keeps up and sees everything.
        let event = loop {
            match tokio::time::timeout(Duration::from_secs(5), fast.next())
                .await
                .unwrap()
            {
                Some(Ok(WatchEvent::Progress { .. })) => {}
                other => break other.unwrap().unwrap(),
            }
        };
        assert_eq!(event.revision(), start + 1 + i);
    }
    let mut delivered = 0;
    let end = loop {
        match tokio::time::timeout(Duration::from_secs(5), slow.next())
            .await
            .unwrap()
        {
            Some(Ok(WatchEvent::Progress { .. })) => {}
            Some(Ok(_)) => delivered += 1,
            Some(Err(err)) => break err,
            None => panic!("stream ended without an error"),
        }
    };
    assert!(matches!(end, WatchError::Lagged { .. }), "{end:?}");
    assert!(delivered < 100, "a lagging watcher received everything");
    assert!(
        slow.next().await.is_none(),
        "the stream ends after the error"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_compaction_keeps_one_interval_of_history() {
    let dir = tempfile::tempdir().unwrap();
    let options = test_options().with_compaction_interval(Some(Duration::from_millis(100)));
    let s = EmbeddedStorage::open(dir.path(), options).await.unwrap();
    let mut kv = s.create("/p", value("0")).await.unwrap();
    for i in 1..10 {
        kv = s
            .update("/p", value(&i.to_string()), kv.mod_revision)
            .await
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.compacted_revision().await.unwrap() < kv.mod_revision {
        assert!(
            Instant::now() < deadline,
            "periodic compaction never reached the last write"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Compaction never passes the revision seen one interval earlier: here, the last write.
    assert_eq!(s.compacted_revision().await.unwrap(), kv.mod_revision);
    assert_eq!(
        s.get("/p", Some(kv.mod_revision)).await.unwrap(),
        Some(kv.clone())
    );
    assert!(matches!(
        s.get("/p", Some(kv.mod_revision - 1)).await,
        Err(ReadError::Compacted { .. })
    ));
}

#[test]
fn open_outside_a_runtime_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let open = EmbeddedStorage::open(dir.path(), test_options());
    let result = futures_lite_block_on(open);
    assert!(matches!(result, Err(OpenError::NoRuntime)), "{result:?}");
}

/// Polls a future to completion on this thread without a tokio runtime.
fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::yield_now();
    }
}

/// Measures fsync'd write throughput with one writer and with many (group commit), and checks
/// that concurrent writes still take contiguous, unique revisions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commit_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(
        EmbeddedStorage::open(dir.path(), test_options())
            .await
            .unwrap(),
    );
    let payload = Bytes::from(vec![b'x'; 1024]);

    const SINGLE: usize = 200;
    let started = Instant::now();
    for i in 0..SINGLE {
        s.create(&format!("/single/{i:05}"), payload.clone())
            .await
            .unwrap();
    }
    let single_rate = SINGLE as f64 / started.elapsed().as_secs_f64();

    const WRITERS: usize = 64;
    const PER_WRITER: usize = 40;
    let before = s.current_revision().await.unwrap();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let s = s.clone();
        let payload = payload.clone();
        tasks.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            for i in 0..PER_WRITER {
                let kv = s
                    .create(&format!("/many/{w:03}/{i:05}"), payload.clone())
                    .await
                    .unwrap();
                revisions.push(kv.mod_revision);
            }
            revisions
        }));
    }
    let mut revisions = Vec::new();
    for task in tasks {
        revisions.extend(task.await.unwrap());
    }
    let concurrent_rate = (WRITERS * PER_WRITER) as f64 / started.elapsed().as_secs_f64();
    revisions.sort_unstable();
    let want: Vec<u64> = (before + 1..=before + (WRITERS * PER_WRITER) as u64).collect();
    assert_eq!(
        revisions, want,
        "concurrent writes took contiguous unique revisions"
    );
    eprintln!(
        "embedded storage, fsync per commit, 1 KiB values: {single_rate:.0} writes/s with 1 writer, \
         {concurrent_rate:.0} writes/s with {WRITERS} writers"
    );
}

/// A data directory that held a store and lost its database (deleted, or truncated to 0
/// bytes) is refused: starting empty would send resourceVersions backwards (50 objects at
/// revision 55 became 0 objects at revision 5). A new directory is created as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_directory_that_lost_its_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = data.join(kapi::storage::embedded::DATA_FILE);
    {
        let s = EmbeddedStorage::open(&data, test_options()).await.unwrap();
        for i in 0..50 {
            s.create(&format!("/k/{i}"), value("v")).await.unwrap();
        }
    }
    for lose in ["delete", "truncate"] {
        match lose {
            "delete" => std::fs::remove_file(&file).unwrap(),
            _ => std::fs::File::create(&file).map(drop).unwrap(),
        }
        let error = EmbeddedStorage::open(&data, test_options())
            .await
            .unwrap_err();
        assert!(
            matches!(error, OpenError::LostData { .. }),
            "{lose}: {error}"
        );
        assert!(
            error.to_string().contains("refusing to start"),
            "{lose}: {error}"
        );
    }
}

/// The data directory and its files are private to their owner whatever the umask: they hold
/// every object, Secrets included.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = EmbeddedStorage::open(&data, test_options()).await.unwrap();
    s.create("/a", value("1")).await.unwrap();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
}

/// A full disk fails every write with the I/O error (never "storage closed"), the store says
/// so through `current_revision` (the health checks' probe) while it lasts, and once there is
/// space again the store comes back by itself, without a restart and without a lost or
/// skipped revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_loudly_and_the_store_comes_back() {
    use kapi::storage::embedded::DiskFullSwitch;
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskFullSwitch::default();
    let s = EmbeddedStorage::open(
        dir.path(),
        test_options().with_disk_full_switch(disk.clone()),
    )
    .await
    .unwrap();
    let before = s.create("/a", value("1")).await.unwrap();

    disk.set(true);
    let writes = (0..20).map(|i| {
        let s = s.clone();
        tokio::spawn(async move { s.create(&format!("/b/{i}"), value("x")).await })
    });
    for write in writes {
        let error = write.await.unwrap().unwrap_err().to_string();
        assert!(error.contains("storage I/O error"), "{error}");
    }
    let fault = s.current_revision().await.unwrap_err().to_string();
    assert!(fault.contains("storage I/O error"), "{fault}");
    assert!(s.create("/c", value("1")).await.is_err());
    assert!(s.get("/a", None).await.is_err());

    disk.set(false);
    let started = Instant::now();
    let revision = loop {
        match s.current_revision().await {
            Ok(revision) => break revision,
            Err(_) if started.elapsed() < Duration::from_secs(10) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("the store did not come back: {e}"),
        }
    };
    assert_eq!(
        revision, before.mod_revision,
        "nothing committed during the fault"
    );
    let after = s.create("/c", value("1")).await.unwrap();
    assert_eq!(after.mod_revision, before.mod_revision + 1);
    assert_eq!(&s.get("/a", None).await.unwrap().unwrap().value[..], b"1");
    assert_eq!(s.count("/b/").await.unwrap(), 0);
}

/// The same on a real full disk, where the machine lets a test mount a small tmpfs (root on
/// Linux; elsewhere the test says why it did nothing): writes fill it until they fail with the
/// I/O error, the store reports the fault, and it comes back once a file beside it is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_full_tmpfs_fails_writes_and_recovers_once_space_is_freed() {
    /// Unmounts the tmpfs however the test ends.
    struct Mounted(std::path::PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
        .arg(dir.path())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("no tmpfs could be mounted here (it needs root): the injected fault covers this");
        return;
    }
    let _mount = Mounted(dir.path().to_path_buf());
    let data = dir.path().join("data");
    let s = EmbeddedStorage::open(&data, test_options()).await.unwrap();
    // A filler file takes most of the space, so freeing it later makes room.
    let filler = dir.path().join("filler");
    std::fs::write(&filler, vec![0u8; 4 * 1024 * 1024]).unwrap();
    let big = Bytes::from(vec![b'x'; 64 * 1024]);
    let mut written = 0u64;
    let error = loop {
        match s.create(&format!("/big/{written}"), big.clone()).await {
            Ok(_) => written += 1,
            Err(e) => break e.to_string(),
        }
        assert!(written < 1000, "the tmpfs never filled up");
    };
    assert!(error.contains("storage I/O error"), "{error}");
    assert!(s.current_revision().await.is_err());

    std::fs::remove_file(&filler).unwrap();
    let started = Instant::now();
    while s.current_revision().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the store did not come back after space was freed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.create("/after", value("1")).await.unwrap();
    assert_eq!(s.count("/big/").await.unwrap(), written);
    drop(s);
}
