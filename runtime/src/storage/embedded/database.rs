//! The database every reader and the writer share, and how it comes back after an I/O error.
//!
//! redb latches an I/O error: once a write fails (a full disk, say), every later operation on
//! that `Database` fails with `PreviousIo` until the file is opened again. So a failed write
//! puts the store in a fault: the writer takes the database out of service, waits for the
//! reads in flight to let go of it, and opens the file again (redb repairs it if needed, and
//! the failed transaction never committed, so the revision is where it was). While the fault
//! lasts, reads, writes and the current revision answer it, which the health checks report;
//! the next write after a successful reopen clears it. A store in memory has no file to fail.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redb::Database;

/// How long a recovery waits for in-flight reads to release the failed database.
const RELEASE_WAIT: Duration = Duration::from_secs(5);

/// Opens the database file again after a fault.
pub(super) type Opener = Box<dyn Fn() -> Result<Database, String> + Send + Sync>;

/// The shared database handle.
pub(super) struct Db {
    slot: RwLock<Option<Arc<Database>>>,
    fault: Mutex<Option<String>>,
    reopen: Option<Opener>,
}

impl Db {
    pub(super) fn new(database: Database, reopen: Option<Opener>) -> Self {
        Self {
            slot: RwLock::new(Some(Arc::new(database))),
            fault: Mutex::new(None),
            reopen,
        }
    }

    /// The database to use now, or the fault that keeps it out of service.
    pub(super) fn get(&self) -> Result<Arc<Database>, String> {
        if let Some(fault) = self.fault() {
            return Err(fault);
        }
        self.slot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| "storage unavailable".to_owned())
    }

    /// What went wrong, while the store is in a fault.
    pub(super) fn fault(&self) -> Option<String> {
        self.fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records a failed write: the store is in a fault until [`Db::recover`] succeeds.
    pub(super) fn failed(&self, message: &str) {
        tracing::error!(
            error = message,
            "storage fault: a write failed; the store refuses requests until the file takes writes again"
        );
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(format!("storage I/O error: {message}"));
    }

    /// Called by the writer only. Opens the file again if the store is in a fault; `Ok` when
    /// it is (again) usable, else why not.
    pub(super) fn recover(&self) -> Result<(), String> {
        let Some(fault) = self.fault() else {
            return Ok(());
        };
        let Some(reopen) = &self.reopen else {
            return Err(fault);
        };
        let taken = self
            .slot
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut old) = taken {
            // The file stays locked while any handle lives: wait for reads in flight.
            let deadline = Instant::now() + RELEASE_WAIT;
            loop {
                match Arc::try_unwrap(old) {
                    Ok(database) => {
                        drop(database);
                        break;
                    }
                    Err(shared) if Instant::now() < deadline => {
                        old = shared;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(shared) => {
                        tracing::warn!(
                            "storage recovery postponed: reads still hold the failed database"
                        );
                        *self.slot.write().unwrap_or_else(PoisonError::into_inner) = Some(shared);
                        return Err(fault);
                    }
                }
            }
        }
        // A write proves the file takes writes again (a reopen alone may succeed on a disk
        // that is still full).
        let probed = reopen().and_then(|database| {
            let txn = database.begin_write().map_err(|e| e.to_string())?;
            txn.commit().map_err(|e| e.to_string())?;
            Ok(database)
        });
        match probed {
            Ok(database) => {
                *self.slot.write().unwrap_or_else(PoisonError::into_inner) =
                    Some(Arc::new(database));
                *self.fault.lock().unwrap_or_else(PoisonError::into_inner) = None;
                tracing::warn!(
                    "storage recovered: the database file was reopened and takes writes"
                );
                Ok(())
            }
            Err(message) => {
                self.failed(&message);
                Err(format!("storage I/O error: {message}"))
            }
        }
    }
}

/// For tests: a switch that makes the database file's writes, syncs and growth fail as on a
/// full disk, while reads go on. Handed to [`EmbeddedOptions::with_disk_full_switch`].
///
/// [`EmbeddedOptions::with_disk_full_switch`]: super::EmbeddedOptions::with_disk_full_switch
#[derive(Debug, Clone, Default)]
pub struct DiskFullSwitch(Arc<AtomicBool>);

impl DiskFullSwitch {
    /// Fills (`true`) or frees (`false`) the simulated disk.
    pub fn set(&self, full: bool) {
        self.0.store(full, Ordering::Release);
    }

    fn check(&self) -> std::io::Result<()> {
        if self.0.load(Ordering::Acquire) {
            Err(std::io::Error::from(std::io::ErrorKind::StorageFull))
        } else {
            Ok(())
        }
    }
}

/// A file backend whose writes fail while its switch says the disk is full.
#[derive(Debug)]
pub(super) struct FaultyFile {
    pub(super) file: redb::backends::FileBackend,
    pub(super) switch: DiskFullSwitch,
}

impl redb::StorageBackend for FaultyFile {
    fn len(&self) -> std::io::Result<u64> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.file.read(offset, out)
    }

    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.switch.check()?;
        self.file.set_len(len)
    }

    fn sync_data(&self) -> std::io::Result<()> {
        self.switch.check()?;
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.switch.check()?;
        self.file.write(offset, data)
    }

    fn close(&self) -> std::io::Result<()> {
        self.file.close()
    }

    fn try_lock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        self.file.lock_range(start, end)
    }

    fn lock_shared_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<(), redb::BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(
        &self,
        start: std::ops::Bound<u64>,
        end: std::ops::Bound<u64>,
    ) -> Result<bool, redb::BackendError> {
        self.file.query_lock_range(start, end)
    }
}
