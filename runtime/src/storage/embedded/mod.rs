//! The embedded engine: a crash-safe [`Storage`] in one redb file inside a data directory, or,
//! for tests, the same engine over memory only ([`EmbeddedStorage::in_memory`]).
//!
//! On-disk layout (`<data dir>/kapi.redb`, one redb database, four tables):
//! - `current`: key → create revision, mod revision, value. The live keys, so reads at the
//!   latest revision and `count` never walk history.
//! - `history`: (key, revision) → put (create revision, value) or tombstone. Every version
//!   since the compaction point, which answers reads at older revisions and the previous
//!   values of replayed watch events.
//! - `log`: revision → key. One row per write, in revision order, so a watch replays history
//!   with a forward scan and compaction knows which keys changed.
//! - `meta`: `revision` (the last committed revision) and `compacted` (the compaction point).
//!
//! Beside it, `<data dir>/kapi.store` marks the directory as initialised: a directory with the
//! marker and no database (or an empty one) lost its data and is refused. The directory is
//! 0700 and its files 0600.
//!
//! Writes go through one writer thread that batches everything queued into one transaction
//! and commits with fsync before any caller is answered (see `writer`). Reads run on tokio's
//! blocking pool, each in one redb snapshot. Watches replay from disk and then follow an
//! in-process broadcast (see `watch`). A background task compacts periodically, keeping at
//! least one interval of history, like kube-apiserver's compactor over etcd. An I/O error puts
//! the store in a fault until the file takes writes again (see `database`).

mod codec;
mod database;
mod read;
mod watch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use redb::{Database, ReadableTable, TableDefinition};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::{
    BoxFuture, CompactError, CreateError, DeleteError, Deleted, Guard, KeyValue, ListResult,
    ReadError, Storage, UpdateError, WatchError, WatchStream,
};
pub use database::DiskFullSwitch;
use database::{Db, FaultyFile};
use writer::{Command, Revisions, Write, Writer};

const CURRENT: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("current");
const HISTORY: TableDefinition<'static, (&str, u64), &[u8]> = TableDefinition::new("history");
const LOG: TableDefinition<'static, u64, &str> = TableDefinition::new("log");
const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");
const META_REVISION: &str = "revision";
const META_COMPACTED: &str = "compacted";

/// The database file's name inside the data directory.
pub const DATA_FILE: &str = "kapi.redb";

/// The file that marks a data directory as initialised: written once its database exists, it
/// tells a lost or emptied database (refused) from a new directory (created).
pub const MARKER_FILE: &str = "kapi.store";

/// What the marker file says, for whoever opens it.
const MARKER_TEXT: &str = "kapi embedded store: this directory's kapi.redb holds the objects; \
    kapi refuses to start here without it\n";

/// The default bound of redb's page cache, 1 GiB: redb's own default.
pub const DEFAULT_CACHE_SIZE: usize = 1024 * 1024 * 1024;

/// Revisions one compaction step may prune before it commits and lets writes through.
const COMPACT_STEP: usize = 10_000;

/// Tunables of the embedded engine; [`Default`] gives the production settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EmbeddedOptions {
    /// How often history is compacted; each run keeps at least this much history. `None`
    /// disables periodic compaction (explicit [`Storage::compact`] still works).
    pub compaction_interval: Option<Duration>,
    /// How many committed events the live broadcast ring holds; a watcher further behind than
    /// this is ended with [`WatchError::Lagged`].
    pub watch_buffer: usize,
    /// How long a watch may stay quiet before it sends a progress notification.
    pub progress_interval: Duration,
    /// The largest key plus value accepted by a write.
    pub max_value_size: usize,
    /// The most writes committed together in one transaction.
    pub max_batch: usize,
    /// The most memory, in bytes, redb's page cache may hold: pages read from the database
    /// file and writes not yet flushed. The cache only fills with pages actually used, so the
    /// process's resident memory grows with the data read, up to about this bound on top of
    /// the rest of the server; a store smaller than the cache ends up held whole in memory.
    /// Default [`DEFAULT_CACHE_SIZE`] (redb's own default). Not used by
    /// [`EmbeddedStorage::in_memory`], whose data is in memory anyway.
    pub cache_size: usize,
    /// For tests: a switch that fails the database file's writes as a full disk would.
    #[doc(hidden)]
    pub disk_full: Option<DiskFullSwitch>,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        Self {
            // etcd clusters behind Kubernetes keep five minutes of history by default.
            compaction_interval: Some(Duration::from_secs(5 * 60)),
            watch_buffer: 8192,
            progress_interval: Duration::from_secs(1),
            // Above the API server's 3 MiB request limit, leaving room for server-set metadata.
            max_value_size: 4 * 1024 * 1024,
            max_batch: 512,
            cache_size: DEFAULT_CACHE_SIZE,
            disk_full: None,
        }
    }
}

impl EmbeddedOptions {
    /// Sets [`EmbeddedOptions::compaction_interval`].
    pub fn with_compaction_interval(mut self, interval: Option<Duration>) -> Self {
        self.compaction_interval = interval;
        self
    }

    /// Sets [`EmbeddedOptions::watch_buffer`] (at least 1).
    pub fn with_watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events.max(1);
        self
    }

    /// Sets [`EmbeddedOptions::progress_interval`].
    pub fn with_progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }

    /// Sets [`EmbeddedOptions::max_value_size`].
    pub fn with_max_value_size(mut self, bytes: usize) -> Self {
        self.max_value_size = bytes;
        self
    }

    /// For tests: the database file's writes fail while `switch` says the disk is full, as a
    /// real full disk would fail them.
    #[doc(hidden)]
    pub fn with_disk_full_switch(mut self, switch: DiskFullSwitch) -> Self {
        self.disk_full = Some(switch);
        self
    }

    /// Sets [`EmbeddedOptions::max_batch`] (at least 1).
    pub fn with_max_batch(mut self, writes: usize) -> Self {
        self.max_batch = writes.max(1);
        self
    }

    /// Sets [`EmbeddedOptions::cache_size`], in bytes.
    pub fn with_cache_size(mut self, bytes: usize) -> Self {
        self.cache_size = bytes;
        self
    }
}

/// Why [`EmbeddedStorage::open`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The data directory could not be created.
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The database file could not be opened, initialised or read.
    #[error("cannot open database {path}: {message}")]
    Database {
        /// The database file.
        path: PathBuf,
        /// What redb reported.
        message: String,
    },
    /// Opening was not called from inside a tokio runtime.
    #[error("the embedded storage must be opened inside a tokio runtime")]
    NoRuntime,
    /// The directory held a store before, and its database is now missing or empty: starting
    /// would serve an empty store whose resourceVersions go backwards.
    #[error(
        "data directory {dir} was initialised before, but its database {DATA_FILE} is missing or \
         empty: refusing to start on an empty store (restore the file from a backup, or remove \
         the directory to start afresh)"
    )]
    LostData {
        /// The data directory.
        dir: PathBuf,
    },
}

/// The state every handle, reader and watcher shares.
pub(super) struct Shared {
    db: Arc<Db>,
    revisions: Arc<Revisions>,
    events: broadcast::Sender<writer::Committed>,
    commands: Option<mpsc::Sender<Command>>,
    writer: Option<JoinHandle<()>>,
    // Dropping this wakes the compactor so it exits at once instead of at its next tick.
    _stop_compactor: Option<oneshot::Sender<()>>,
    options: EmbeddedOptions,
    /// The database file; `None` in memory.
    path: Option<PathBuf>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Closing the queue ends the writer after it finishes the batch in hand; joining it
        // means the database file is closed when the last handle is gone, so the same data
        // directory can be reopened at once (a restart, or a test).
        self.commands = None;
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The embedded engine; a cheap-to-clone handle (clones share one database).
#[derive(Clone)]
pub struct EmbeddedStorage {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for EmbeddedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedStorage")
            .field("path", &self.shared.path)
            .field(
                "revision",
                &self.shared.revisions.current.load(Ordering::Acquire),
            )
            .field(
                "compacted",
                &self.shared.revisions.compacted.load(Ordering::Acquire),
            )
            .finish()
    }
}

/// Creates (or checks) the data directory, opens its database and marks the directory as
/// initialised. The directory is private to its owner (0700, the files 0600), whatever the
/// umask: it holds every object, Secrets included.
fn prepare_data_dir(
    dir: &Path,
    file: &Path,
    disk_full: Option<&DiskFullSwitch>,
    cache_size: usize,
) -> Result<(Database, u64, u64), OpenError> {
    let dir_error = |source| OpenError::DataDir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(dir_error)?;
    restrict(dir, 0o700).map_err(dir_error)?;
    let marker = dir.join(MARKER_FILE);
    let has_data = std::fs::metadata(file).is_ok_and(|m| m.len() > 0);
    if !has_data && marker.exists() {
        return Err(OpenError::LostData {
            dir: dir.to_path_buf(),
        });
    }
    let opened =
        open_database(file, disk_full, cache_size).map_err(|message| OpenError::Database {
            path: file.to_path_buf(),
            message,
        })?;
    restrict(file, 0o600).map_err(dir_error)?;
    if !marker.exists() {
        write_marker(dir, &marker).map_err(dir_error)?;
    }
    Ok(opened)
}

/// Writes the marker durably (file and directory entry synced), after the database exists.
fn write_marker(dir: &Path, marker: &Path) -> std::io::Result<()> {
    let temp = dir.join(format!("{MARKER_FILE}.tmp"));
    let mut file = std::fs::File::create(&temp)?;
    std::io::Write::write_all(&mut file, MARKER_TEXT.as_bytes())?;
    file.sync_all()?;
    restrict(&temp, 0o600)?;
    std::fs::rename(&temp, marker)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Sets `path`'s permission bits (a no-op where there are none).
fn restrict(path: &Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

fn open_database(
    path: &Path,
    disk_full: Option<&DiskFullSwitch>,
    cache_size: usize,
) -> Result<(Database, u64, u64), String> {
    init_database(open_file(path, disk_full, cache_size)?)
}

/// Opens (creating if needed) the database file with a page cache of `cache_size` bytes,
/// through the disk-full switch when there is one.
fn open_file(
    path: &Path,
    disk_full: Option<&DiskFullSwitch>,
    cache_size: usize,
) -> Result<Database, String> {
    let Some(switch) = disk_full else {
        return Database::builder()
            .set_cache_size(cache_size)
            .create(path)
            .map_err(|e| e.to_string());
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| e.to_string())?;
    let backend = FaultyFile {
        file: redb::backends::FileBackend::new(file).map_err(|e| e.to_string())?,
        switch: switch.clone(),
    };
    Database::builder()
        .set_cache_size(cache_size)
        .create_with_backend(backend)
        .map_err(|e| e.to_string())
}

/// Creates the tables and the revision counters of a new database; reads them from an old one.
fn init_database(db: Database) -> Result<(Database, u64, u64), String> {
    let init = || -> Result<(u64, u64), redb::Error> {
        let txn = db.begin_write()?;
        let revisions;
        {
            // Creating the tables up front lets every read open them without a special case.
            txn.open_table(CURRENT)?;
            txn.open_table(HISTORY)?;
            txn.open_table(LOG)?;
            let mut meta = txn.open_table(META)?;
            let revision = meta.get(META_REVISION)?.map(|v| v.value());
            let compacted = meta.get(META_COMPACTED)?.map_or(0, |v| v.value());
            let revision = match revision {
                Some(revision) => revision,
                None => {
                    meta.insert(META_REVISION, 1u64)?;
                    meta.insert(META_COMPACTED, 0u64)?;
                    1
                }
            };
            revisions = (revision, compacted);
        }
        txn.commit()?;
        Ok(revisions)
    };
    let (revision, compacted) = init().map_err(|e| e.to_string())?;
    Ok((db, revision, compacted))
}

impl EmbeddedStorage {
    /// Opens (creating if needed) the store in `data_dir`, resuming at its last revision.
    ///
    /// Must run inside a tokio runtime: reads use its blocking pool and periodic compaction
    /// runs as a task on it. Background work stops when the last handle is dropped.
    pub async fn open(
        data_dir: impl AsRef<Path>,
        options: EmbeddedOptions,
    ) -> Result<Self, OpenError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| OpenError::NoRuntime)?;
        let dir = data_dir.as_ref().to_path_buf();
        let path = dir.join(DATA_FILE);
        let opened = {
            let file = path.clone();
            let disk_full = options.disk_full.clone();
            let cache_size = options.cache_size;
            tokio::task::spawn_blocking(move || {
                prepare_data_dir(&dir, &file, disk_full.as_ref(), cache_size)
            })
            .await
            .map_err(|err| OpenError::Database {
                path: path.clone(),
                message: err.to_string(),
            })??
        };
        Self::start(runtime, opened, options, Some(path))
    }

    /// A store that lives in memory only: the same engine without a file, so nothing is durable
    /// and everything is gone once the last handle is dropped. Meant for tests, which it spares
    /// the disk's syncs.
    ///
    /// Must be called inside a tokio runtime, as [`EmbeddedStorage::open`].
    pub fn in_memory(options: EmbeddedOptions) -> Result<Self, OpenError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| OpenError::NoRuntime)?;
        let failed = |message| OpenError::Database {
            path: PathBuf::from(":memory:"),
            message,
        };
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(|e| failed(e.to_string()))?;
        let opened = init_database(db).map_err(failed)?;
        Self::start(runtime, opened, options, None)
    }

    /// Starts the writer thread and the compactor over an initialised database.
    fn start(
        runtime: tokio::runtime::Handle,
        (db, revision, compacted): (Database, u64, u64),
        options: EmbeddedOptions,
        path: Option<PathBuf>,
    ) -> Result<Self, OpenError> {
        let reopen = path.clone().map(|path| {
            let disk_full = options.disk_full.clone();
            let cache_size = options.cache_size;
            Box::new(move || open_file(&path, disk_full.as_ref(), cache_size)) as database::Opener
        });
        let db = Arc::new(Db::new(db, reopen));
        let revisions = Arc::new(Revisions::default());
        revisions.current.store(revision, Ordering::Release);
        revisions.compacted.store(compacted, Ordering::Release);
        let (events, _) = broadcast::channel(options.watch_buffer.max(1));
        // Bounded so a flood of writers waits for the disk instead of queueing without limit.
        let (commands, queue) = mpsc::channel(options.max_batch.max(1) * 4);
        let writer = Writer {
            db: db.clone(),
            revisions: revisions.clone(),
            events: events.clone(),
            max_batch: options.max_batch.max(1),
        };
        let writer = std::thread::Builder::new()
            .name("kapi-storage-writer".to_owned())
            .spawn(move || writer.run(queue))
            .map_err(|err| OpenError::Database {
                path: path.clone().unwrap_or_else(|| PathBuf::from(":memory:")),
                message: format!("cannot start the writer thread: {err}"),
            })?;
        let (stop_compactor, stopped) = oneshot::channel();
        let interval = options.compaction_interval;
        let shared = Arc::new(Shared {
            db,
            revisions,
            events,
            commands: Some(commands),
            writer: Some(writer),
            _stop_compactor: Some(stop_compactor),
            options,
            path,
        });
        if let Some(interval) = interval {
            runtime.spawn(compactor(Arc::downgrade(&shared), interval, stopped));
        }
        Ok(Self { shared })
    }

    /// The database file this store uses; `None` for a store in memory.
    pub fn path(&self) -> Option<&Path> {
        self.shared.path.as_deref()
    }

    async fn send(&self, command: Command) -> Result<(), String> {
        let commands = self
            .shared
            .commands
            .as_ref()
            .ok_or_else(|| "storage closed".to_owned())?;
        commands
            .send(command)
            .await
            .map_err(|_| "storage closed".to_owned())
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Database) -> Result<T, ReadError> + Send + 'static,
    ) -> Result<T, ReadError> {
        let db = self.shared.db.get().map_err(ReadError::Internal)?;
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|err| ReadError::Internal(failed_task(err)))?
    }

    fn check_size(&self, key: &str, value: &Bytes) -> Result<(), (usize, usize)> {
        let size = key.len().saturating_add(value.len());
        let limit = self.shared.options.max_value_size;
        if size > limit {
            Err((size, limit))
        } else {
            Ok(())
        }
    }

    async fn compact_to(&self, target: u64) -> Result<(), CompactError> {
        loop {
            let (reply, answer) = oneshot::channel();
            self.send(Command::CompactStep {
                target,
                max_entries: COMPACT_STEP,
                reply,
            })
            .await
            .map_err(CompactError::Internal)?;
            let reached = answer
                .await
                .map_err(|_| CompactError::Internal("storage closed".to_owned()))??;
            if reached >= target {
                return Ok(());
            }
        }
    }
}

/// What a read task that did not finish tells its caller. A panic is a bug: its text goes to
/// the server's standard error for whoever runs it, never to a client.
pub(super) fn failed_task(error: tokio::task::JoinError) -> String {
    if error.is_panic() {
        eprintln!("kapi: a storage read panicked (a bug): {error}");
        "the storage engine failed; the server's log has the details".to_owned()
    } else {
        "the storage read was cancelled".to_owned()
    }
}

/// Every `interval`, compacts to the revision seen one interval earlier, so at least one
/// interval of history stays readable and watchable.
async fn compactor(shared: Weak<Shared>, interval: Duration, mut stopped: oneshot::Receiver<()>) {
    let mut previous: Option<u64> = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = &mut stopped => return,
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let storage = EmbeddedStorage { shared };
        let current = storage.shared.revisions.current.load(Ordering::Acquire);
        let compacted = storage.shared.revisions.compacted.load(Ordering::Acquire);
        if let Some(target) = previous.filter(|&target| target > compacted) {
            // A failure here is retried at the next tick; history merely stays longer.
            let _ = storage.compact_to(target).await;
        }
        previous = Some(current);
    }
}

impl EmbeddedStorage {
    /// The error for a write whose answer never came: the store's fault if it has one.
    fn closed<E>(
        &self,
        make: impl FnOnce(String) -> E,
    ) -> impl FnOnce(oneshot::error::RecvError) -> E {
        let db = self.shared.db.clone();
        move |_| make(db.fault().unwrap_or_else(|| "storage closed".to_owned()))
    }

    /// A create, guarded or not, through the writer thread.
    async fn create_with(
        &self,
        key: &str,
        value: Bytes,
        guard: Option<Guard>,
    ) -> Result<KeyValue, CreateError> {
        self.check_size(key, &value)
            .map_err(|(size, limit)| CreateError::TooLarge { size, limit })?;
        let (reply, answer) = oneshot::channel();
        self.send(Command::Write(Write::Create {
            key: key.to_owned(),
            value,
            guard,
            reply,
        }))
        .await
        .map_err(CreateError::Internal)?;
        answer.await.map_err(self.closed(CreateError::Internal))?
    }
}

impl Storage for EmbeddedStorage {
    fn get<'a>(
        &'a self,
        key: &'a str,
        at_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>> {
        let key = key.to_owned();
        Box::pin(self.read(move |db| read::get(db, &key, at_revision)))
    }

    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at_revision: Option<u64>,
        start_key: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>> {
        let prefix = prefix.to_owned();
        let start_key = start_key.map(str::to_owned);
        Box::pin(
            self.read(move |db| read::list(db, &prefix, at_revision, start_key.as_deref(), limit)),
        )
    }

    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>> {
        let prefix = prefix.to_owned();
        Box::pin(self.read(move |db| read::count(db, &prefix)))
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(self.create_with(key, value, None))
    }

    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(self.create_with(key, value, Some(guard.clone())))
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>> {
        Box::pin(async move {
            self.check_size(key, &value)
                .map_err(|(size, limit)| UpdateError::TooLarge { size, limit })?;
            let (reply, answer) = oneshot::channel();
            self.send(Command::Write(Write::Update {
                key: key.to_owned(),
                value,
                expected: expected_mod_revision,
                reply,
            }))
            .await
            .map_err(UpdateError::Internal)?;
            answer.await.map_err(self.closed(UpdateError::Internal))?
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            self.send(Command::Write(Write::Delete {
                key: key.to_owned(),
                expected: expected_mod_revision,
                reply,
            }))
            .await
            .map_err(DeleteError::Internal)?;
            answer.await.map_err(self.closed(DeleteError::Internal))?
        })
    }

    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        Box::pin(async move {
            let current = self.shared.revisions.current.load(Ordering::Acquire);
            if from_revision > current {
                return Err(WatchError::FutureRevision {
                    requested: from_revision,
                    current,
                });
            }
            let compacted = self.shared.revisions.compacted.load(Ordering::Acquire);
            if from_revision < compacted {
                return Err(WatchError::Compacted {
                    requested: from_revision,
                    compacted,
                });
            }
            Ok(watch::stream(
                Arc::downgrade(&self.shared),
                prefix.to_owned(),
                from_revision,
                self.shared.options.progress_interval,
            ))
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        if let Some(fault) = self.shared.db.fault() {
            // Whoever asks (the health checks do, every few seconds) also has the writer try
            // the file again, so the store comes back once the disk has room without waiting
            // for a write.
            if let Some(commands) = &self.shared.commands {
                let _ = commands.try_send(Command::Recover);
            }
            return Box::pin(async move { Err(ReadError::Internal(fault)) });
        }
        let revision = self.shared.revisions.current.load(Ordering::Acquire);
        Box::pin(async move { Ok(revision) })
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>> {
        Box::pin(self.compact_to(revision))
    }

    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        let revision = self.shared.revisions.compacted.load(Ordering::Acquire);
        Box::pin(async move { Ok(revision) })
    }
}
