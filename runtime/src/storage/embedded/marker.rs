//! The marker file beside the database (`kapi.store`): it says the directory was initialised,
//! and it records the highest revision the directory is known to have served, its
//! high-water mark.
//!
//! The mark lives outside the database so that a database replaced by an older copy is seen:
//! its revision is below the mark, and opening it is refused unless accepted (see `init`). The
//! mark is written with an fsync and an atomic rename when the store opens, every
//! [`INTERVAL`] while the revision moves, and at a clean shutdown; never per write, which
//! would add a second fsync to every commit. So after a crash (not a clean shutdown) the mark
//! may trail the last revision served by up to one interval of writes, and an older copy whose
//! revision falls in that window is not seen.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::MARKER_FILE;

/// How often a moving revision is recorded (`EmbeddedOptions::high_water_interval`).
pub(super) const INTERVAL: Duration = Duration::from_secs(5);

/// What the marker says to whoever opens it, before the mark.
const TEXT: &str = "kapi embedded store: this directory's kapi.redb holds the objects; kapi \
    refuses to start here without it, or on an older copy of it (below the revision recorded \
    here)\n";

/// The line that carries the mark.
const MARK: &str = "high-water revision: ";

/// The marker file of one data directory.
#[derive(Debug)]
pub(super) struct Marker {
    dir: PathBuf,
    path: PathBuf,
    /// The mark last written (or read). The lock also keeps two writes of the temporary file
    /// apart (the periodic task and the shutdown).
    written: Mutex<u64>,
}

impl Marker {
    /// The marker of `dir`, which may not exist yet.
    pub(super) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            path: dir.join(MARKER_FILE),
            written: Mutex::new(0),
        }
    }

    /// Whether the directory was initialised.
    pub(super) fn exists(&self) -> bool {
        self.path.exists()
    }

    /// The recorded mark: 0 when there is no marker or it has no mark (kapi wrote none before
    /// marks were kept), an error when the marker cannot be read or its mark is garbled.
    pub(super) fn read(&self) -> std::io::Result<u64> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(err) => return Err(err),
        };
        let mark = match text.lines().find_map(|line| line.strip_prefix(MARK)) {
            None => 0,
            Some(number) => number.trim().parse().map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: unreadable {MARK:?} line", self.path.display()),
                )
            })?,
        };
        *self.written.lock().unwrap_or_else(PoisonError::into_inner) = mark;
        Ok(mark)
    }

    /// Records `revision` durably when it is above the mark written last.
    pub(super) fn record(&self, revision: u64) -> std::io::Result<()> {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if revision <= *written && self.path.exists() {
            return Ok(());
        }
        let temp = self.dir.join(format!("{MARKER_FILE}.tmp"));
        let mut file = std::fs::File::create(&temp)?;
        let text = format!("{TEXT}{MARK}{revision}\n");
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
        super::restrict(&temp, 0o600)?;
        std::fs::rename(&temp, &self.path)?;
        std::fs::File::open(&self.dir)?.sync_all()?;
        *written = revision.max(*written);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_round_trips_and_only_moves_up() {
        let dir = tempfile::tempdir().unwrap();
        let marker = Marker::new(dir.path());
        assert!(!marker.exists());
        assert_eq!(marker.read().unwrap(), 0);
        marker.record(7).unwrap();
        marker.record(3).unwrap();
        assert_eq!(Marker::new(dir.path()).read().unwrap(), 7);
        // A marker written before marks were kept has none.
        std::fs::write(dir.path().join(MARKER_FILE), "kapi embedded store\n").unwrap();
        assert_eq!(Marker::new(dir.path()).read().unwrap(), 0);
        std::fs::write(dir.path().join(MARKER_FILE), format!("{MARK}x\n")).unwrap();
        assert!(Marker::new(dir.path()).read().is_err());
    }
}
