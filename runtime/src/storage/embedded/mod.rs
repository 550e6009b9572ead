//! The embedded engine: a crash-safe [`Storage`] in one redb file inside a data directory, or,
//! for tests, the same engine over memory only ([`EmbeddedStorage::in_memory`]).
//!
//! On-disk layout (`<data dir>/kapi.redb`, one redb database, four tables):
//! - `current`: key → create revision, mod revision, value. The live keys, so reads at the
//!   latest revision and `count` never walk history.
//! - `history`: (key, revision) → put (create revision, value) or tombstone. Every version
//!   since the compaction point that is no longer live: a write moves the version it replaces
//!   here, a delete adds its tombstone. With `current` it answers reads at older revisions and
//!   the previous values of replayed watch events; each version is stored once, so a create
//!   writes its value once, as etcd does.
//! - `log`: revision → key. One row per write, in revision order, so a watch replays history
//!   with a forward scan and compaction knows which keys changed.
//! - `meta`: `revision` (the last committed revision), `compacted` (the compaction point) and
//!   `format` (the layout of the values, see `codec`: every value carries a checksum, checked
//!   on every read; and which versions `history` holds; a database of an older format is
//!   migrated when it is opened, see `init`).
//!
//! Beside it, `<data dir>/kapi.store` marks the directory as initialised and records the
//! highest revision it is known to have served (see `marker`): a directory with the marker
//! and no database (or an empty one) lost its data and is refused, and so is a database whose
//! revision is below the mark (an older copy put back), unless
//! [`EmbeddedOptions::accept_restored_database`] accepts it and moves its revision past the
//! mark. The directory is 0700 and its files 0600.
//!
//! Writes go through one writer thread that batches everything queued into one transaction
//! and commits with fsync before any caller is answered (see `writer`). Reads run on tokio's
//! blocking pool, each in one redb snapshot. Watches replay from disk and then follow an
//! in-process broadcast (see `watch`). A background task compacts periodically, keeping at
//! least one interval of history, like kube-apiserver's compactor over etcd. An I/O error puts
//! the store in a fault until the file takes writes again (see `database`).

mod codec;
mod database;
mod init;
mod marker;
mod memory;
mod read;
mod watch;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use redb::{Database, TableDefinition};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::{
    BoxFuture, CompactError, CreateError, DeleteError, Deleted, Guard, KeyValue, ListResult,
    ReadError, Storage, UpdateError, WatchError, WatchStream,
};
/// The value type of the `current` and `history` tables, for tests that read the file.
#[doc(hidden)]
pub use codec::Checked;
pub use database::DiskFullSwitch;
use database::{Db, FaultyFile};
use init::{Expect, InitError, Ready};
use marker::Marker;
use writer::{Command, Revisions, Write, Writer};

const CURRENT: TableDefinition<'static, &str, Checked> = TableDefinition::new("current");
const HISTORY: TableDefinition<'static, (&str, u64), Checked> = TableDefinition::new("history");
const LOG: TableDefinition<'static, u64, &str> = TableDefinition::new("log");
const META: TableDefinition<'static, &str, u64> = TableDefinition::new("meta");
const META_REVISION: &str = "revision";
const META_COMPACTED: &str = "compacted";

/// The database file's name inside the data directory.
pub const DATA_FILE: &str = "kapi.redb";

/// The file that marks a data directory as initialised: written once its database exists, it
/// tells a lost or emptied database (refused) from a new directory (created), and it records
/// the highest revision the directory served, which tells an older copy of the database
/// (refused unless accepted) from the newest.
pub const MARKER_FILE: &str = "kapi.store";

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
    /// Accept a database whose revision is below the data directory's high-water mark (an
    /// older copy put back, such as a restored backup): its revision jumps past the mark and
    /// its history counts as compacted, so resourceVersions keep increasing and clients
    /// relist, as after etcd's `etcdutl snapshot restore --bump-revision --mark-compacted`.
    /// Without it such a database is refused ([`OpenError::RevisionBehind`]). It changes
    /// nothing for a database at or above the mark.
    pub accept_restored_database: bool,
    /// How often a moving revision is recorded as the data directory's high-water mark (see
    /// `marker`); for tests, which need not wait the production interval.
    #[doc(hidden)]
    pub high_water_interval: Duration,
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
            accept_restored_database: false,
            high_water_interval: marker::INTERVAL,
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

    /// Sets [`EmbeddedOptions::accept_restored_database`].
    pub fn with_accept_restored_database(mut self, accept: bool) -> Self {
        self.accept_restored_database = accept;
        self
    }

    /// For tests: sets [`EmbeddedOptions::high_water_interval`].
    #[doc(hidden)]
    pub fn with_high_water_interval(mut self, interval: Duration) -> Self {
        self.high_water_interval = interval;
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
    /// redb found the database file damaged (truncated, or its structure broken).
    #[error(
        "database {path} is damaged ({message}): kapi will not serve from it. Restore the file \
         from a backup; a backup older than what this directory served is refused until you \
         start once with `kapi serve --accept-restored-database`"
    )]
    Damaged {
        /// The database file.
        path: PathBuf,
        /// What redb reported.
        message: String,
    },
    /// The database's revision is below the highest revision the data directory has served:
    /// the file was replaced by an older copy, and serving it would send resourceVersions
    /// backwards.
    #[error(
        "database {path} is at revision {revision}, but this data directory has served \
         revisions up to {high_water} (recorded in {MARKER_FILE}): the file was replaced by an \
         older copy, and serving it would send resourceVersions backwards. Put the newer \
         database back, or accept this copy with `kapi serve --accept-restored-database` \
         (EmbeddedOptions::accept_restored_database), which moves its revision past \
         {high_water} and makes clients list again; changes made after the copy was taken stay \
         lost"
    )]
    RevisionBehind {
        /// The database file.
        path: PathBuf,
        /// The database's revision.
        revision: u64,
        /// The directory's high-water mark.
        high_water: u64,
    },
    /// The database was written by a newer kapi in a format this one cannot read.
    #[error(
        "database {path} has format {format}, newer than this kapi's {}: run a newer kapi",
        init::FORMAT
    )]
    NewerFormat {
        /// The database file.
        path: PathBuf,
        /// The format recorded in the database.
        format: u64,
    },
}

impl OpenError {
    fn from_init(path: &Path, error: InitError) -> Self {
        let path = path.to_path_buf();
        match error {
            InitError::Database(message) => OpenError::Database { path, message },
            InitError::Damaged(message) => OpenError::Damaged { path, message },
            InitError::NewerFormat(format) => OpenError::NewerFormat { path, format },
            InitError::Behind {
                revision,
                high_water,
            } => OpenError::RevisionBehind {
                path,
                revision,
                high_water,
            },
        }
    }
}

/// What [`EmbeddedStorage::open`] did to the database beyond opening it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Opened {
    /// The database was in an older format (before checksums, or with live versions in
    /// history too) and was brought to this one.
    pub migrated: bool,
    /// The database was an older copy accepted with
    /// [`EmbeddedOptions::accept_restored_database`]: its revision moved from this one past
    /// the data directory's high-water mark.
    pub bumped_from: Option<u64>,
}

/// The state every handle, reader and watcher shares.
pub(super) struct Shared {
    db: Arc<Db>,
    revisions: Arc<Revisions>,
    events: broadcast::Sender<writer::Committed>,
    commands: Option<mpsc::Sender<Command>>,
    writer: Option<JoinHandle<()>>,
    // Dropping these wakes the compactor and the high-water task so they exit at once
    // instead of at their next tick.
    _stop_compactor: Option<oneshot::Sender<()>>,
    _stop_marker: Option<oneshot::Sender<()>>,
    options: EmbeddedOptions,
    /// The database file; `None` in memory.
    path: Option<PathBuf>,
    /// The data directory's marker; `None` in memory.
    marker: Option<Arc<Marker>>,
    opened: Opened,
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
        // A clean shutdown leaves the exact mark. If this write fails, the last periodic one
        // stands, as after a crash.
        if let Some(marker) = &self.marker {
            let _ = marker.record(self.revisions.current.load(Ordering::Acquire));
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

/// Creates (or checks) the data directory, opens its database (checking its revision against
/// the directory's high-water mark) and marks the directory as initialised. The directory is
/// private to its owner (0700, the files 0600), whatever the umask: it holds every object,
/// Secrets included.
fn prepare_data_dir(
    dir: &Path,
    file: &Path,
    options: &EmbeddedOptions,
) -> Result<(Ready, Marker), OpenError> {
    let dir_error = |source| OpenError::DataDir {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(dir_error)?;
    restrict(dir, 0o700).map_err(dir_error)?;
    let marker = Marker::new(dir);
    let has_data = std::fs::metadata(file).is_ok_and(|m| m.len() > 0);
    if !has_data && marker.exists() {
        return Err(OpenError::LostData {
            dir: dir.to_path_buf(),
        });
    }
    let expect = Expect {
        high_water: marker.read().map_err(dir_error)?,
        accept_older: options.accept_restored_database,
    };
    let db = open_file(file, options.disk_full.as_ref(), options.cache_size)
        .map_err(|error| OpenError::from_init(file, InitError::from(error)))?;
    let ready =
        init::init_database(db, expect).map_err(|error| OpenError::from_init(file, error))?;
    restrict(file, 0o600).map_err(dir_error)?;
    // Written once the database exists: a marker without one means the data was lost.
    marker.record(ready.revision).map_err(dir_error)?;
    Ok((ready, marker))
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

/// Opens (creating if needed) the database file with a page cache of `cache_size` bytes,
/// through the disk-full switch when there is one.
fn open_file(
    path: &Path,
    disk_full: Option<&DiskFullSwitch>,
    cache_size: usize,
) -> Result<Database, redb::DatabaseError> {
    let Some(switch) = disk_full else {
        return Database::builder().set_cache_size(cache_size).create(path);
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| redb::DatabaseError::Storage(e.into()))?;
    let backend = FaultyFile {
        file: redb::backends::FileBackend::new(file)?,
        switch: switch.clone(),
    };
    Database::builder()
        .set_cache_size(cache_size)
        .create_with_backend(backend)
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
        let (ready, marker) = {
            let file = path.clone();
            let options = options.clone();
            tokio::task::spawn_blocking(move || prepare_data_dir(&dir, &file, &options))
                .await
                .map_err(|err| OpenError::Database {
                    path: path.clone(),
                    message: err.to_string(),
                })??
        };
        Self::start(runtime, ready, options, Some((path, marker)))
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
            .create_with_backend(memory::ChunkedMemory::default())
            .map_err(|e| failed(e.to_string()))?;
        let ready = init::init_database(db, Expect::default())
            .map_err(|error| OpenError::from_init(Path::new(":memory:"), error))?;
        Self::start(runtime, ready, options, None)
    }

    /// Starts the writer thread and the compactor over an initialised database.
    fn start(
        runtime: tokio::runtime::Handle,
        ready: Ready,
        options: EmbeddedOptions,
        file: Option<(PathBuf, Marker)>,
    ) -> Result<Self, OpenError> {
        let Ready {
            db,
            revision,
            compacted,
            migrated,
            bumped_from,
        } = ready;
        let (path, marker) = match file {
            Some((path, marker)) => (Some(path), Some(Arc::new(marker))),
            None => (None, None),
        };
        let reopen = path.clone().map(|path| {
            let disk_full = options.disk_full.clone();
            let cache_size = options.cache_size;
            Box::new(move || {
                open_file(&path, disk_full.as_ref(), cache_size).map_err(|e| e.to_string())
            }) as database::Opener
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
            lazy_commits: if path.is_none() { 64 } else { 0 },
            since_durable: std::cell::Cell::new(0),
        };
        let writer = std::thread::Builder::new()
            .name("kapi-storage-writer".to_owned())
            .spawn(move || writer.run(queue))
            .map_err(|err| OpenError::Database {
                path: path.clone().unwrap_or_else(|| PathBuf::from(":memory:")),
                message: format!("cannot start the writer thread: {err}"),
            })?;
        let (stop_compactor, stopped) = oneshot::channel();
        let (stop_marker, marker_stopped) = oneshot::channel();
        let interval = options.compaction_interval;
        let has_marker = marker.is_some();
        let shared = Arc::new(Shared {
            db,
            revisions,
            events,
            commands: Some(commands),
            writer: Some(writer),
            _stop_compactor: Some(stop_compactor),
            _stop_marker: Some(stop_marker),
            options,
            path,
            marker,
            opened: Opened {
                migrated,
                bumped_from,
            },
        });
        if let Some(interval) = interval {
            runtime.spawn(compactor(Arc::downgrade(&shared), interval, stopped));
        }
        if has_marker {
            let every = shared.options.high_water_interval;
            runtime.spawn(mark_high_water(
                Arc::downgrade(&shared),
                every,
                marker_stopped,
            ));
        }
        Ok(Self { shared })
    }

    /// What opening did to the database: a migration, a revision bump.
    pub fn opened(&self) -> Opened {
        self.shared.opened
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

/// Every `every`, records the current revision as the data directory's high-water mark (a
/// no-op while it stands still).
async fn mark_high_water(
    shared: Weak<Shared>,
    every: Duration,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = &mut stopped => return,
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let Some(marker) = shared.marker.clone() else {
            return;
        };
        let revision = shared.revisions.current.load(Ordering::Acquire);
        drop(shared);
        // A failed write leaves the older mark, and the next tick tries again.
        let _ = tokio::task::spawn_blocking(move || marker.record(revision)).await;
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
