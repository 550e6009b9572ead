//! The audit log file and its rotation, as kube-apiserver rotates it with lumberjack
//! (`gopkg.in/natefinch/lumberjack.v2`) under `--audit-log-maxsize`, `--audit-log-maxbackup`,
//! `--audit-log-maxage` and `--audit-log-compress`: a line that would take the file past the
//! size limit first moves the file aside as `<name>-<UTC 2006-01-02T15-04-05.000><ext>`
//! (`audit-2026-11-27T17-20-00.123.log`) and starts a new one; then backups beyond the count
//! kept (the newest stay) or older than the age kept (by the time in their names) are removed,
//! and, when compressing, the rest are gzipped (`.gz` added). Zero means no limit, as there.

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// How the audit log is rotated; the default never rotates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogRotation {
    /// The most megabytes the file holds before it is rotated (`--audit-log-maxsize`; 0: no
    /// limit).
    pub max_size_mb: u64,
    /// The most rotated files kept (`--audit-log-maxbackup`; 0: all).
    pub max_backups: usize,
    /// The most days a rotated file is kept, by the time in its name (`--audit-log-maxage`; 0:
    /// forever).
    pub max_age_days: u64,
    /// Whether rotated files are gzipped (`--audit-log-compress`).
    pub compress: bool,
}

/// lumberjack's `backupTimeFormat`, as jiff writes it.
const BACKUP_TIME: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// The suffix of compressed backups.
const GZ: &str = ".gz";

/// An audit log file written a line at a time, rotated as [`LogRotation`] says.
#[derive(Debug)]
pub(crate) struct RotatingFile {
    path: PathBuf,
    file: File,
    size: u64,
    rotation: LogRotation,
    /// The size limit in bytes, for tests smaller than a megabyte; 0: none.
    max_bytes: u64,
}

/// Opens (appending) or creates `path`, private as upstream's log is (0600).
fn open(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

impl RotatingFile {
    /// Opens the log at `path`, creating its directory.
    pub(crate) fn open(path: &Path, rotation: LogRotation) -> io::Result<Self> {
        Self::with_limit(path, rotation, rotation.max_size_mb.saturating_mul(1 << 20))
    }

    fn with_limit(path: &Path, rotation: LogRotation, max_bytes: u64) -> io::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = open(path)?;
        let size = file.metadata()?.len();
        Ok(Self {
            path: path.to_owned(),
            file,
            size,
            rotation,
            max_bytes,
        })
    }

    /// Appends one whole line (`line` ends in its newline), rotating first when it would not
    /// fit; a line longer than the limit is refused, as lumberjack refuses such a write.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let length = line.len() as u64;
        if self.max_bytes > 0 {
            if length > self.max_bytes {
                return Err(io::Error::other(format!(
                    "write length {length} exceeds maximum file size {}",
                    self.max_bytes
                )));
            }
            if self.size + length > self.max_bytes {
                self.rotate()?;
            }
        }
        self.file.write_all(line)?;
        self.size += length;
        Ok(())
    }

    /// Moves the file aside under its backup name, starts a new one, and tidies the backups.
    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let now = jiff::Timestamp::now();
        std::fs::rename(&self.path, backup_name(&self.path, now))?;
        self.file = open(&self.path)?;
        self.size = 0;
        if let Err(error) = self.tidy(now) {
            tracing::warn!(%error, "removing or compressing old audit logs");
        }
        Ok(())
    }

    /// lumberjack's `millRunOnce`: removes backups beyond the count and age kept, compresses
    /// the rest.
    fn tidy(&self, now: jiff::Timestamp) -> io::Result<()> {
        let mut backups = backups(&self.path)?;
        // Newest first.
        backups.sort_by_key(|backup| std::cmp::Reverse(backup.1));
        let mut kept = Vec::new();
        let mut names = std::collections::BTreeSet::new();
        for (path, stamp) in backups {
            let name = path.to_string_lossy().trim_end_matches(GZ).to_owned();
            names.insert(name);
            let too_many = self.rotation.max_backups > 0 && names.len() > self.rotation.max_backups;
            let age = u64::try_from(now.duration_since(stamp).as_secs()).unwrap_or(0);
            let too_old = self.rotation.max_age_days > 0
                && age > self.rotation.max_age_days.saturating_mul(86_400);
            if too_many || too_old {
                std::fs::remove_file(&path)?;
            } else {
                kept.push(path);
            }
        }
        if self.rotation.compress {
            for path in kept.iter().filter(|p| !p.to_string_lossy().ends_with(GZ)) {
                compress(path)?;
            }
        }
        Ok(())
    }

    /// Writes out what is buffered.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// `<dir>/<prefix>-<time><ext>` for the log `path` rotated at `at` (lumberjack's
/// `backupName`, UTC).
fn backup_name(path: &Path, at: jiff::Timestamp) -> PathBuf {
    let (prefix, ext) = prefix_and_ext(path);
    let stamp = at.strftime(BACKUP_TIME);
    path.with_file_name(format!("{prefix}-{stamp}{ext}"))
}

/// The file name's stem and extension (with its dot), as Go's `filepath.Ext` splits them.
fn prefix_and_ext(path: &Path) -> (String, String) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rfind('.') {
        Some(dot) => (name[..dot].to_owned(), name[dot..].to_owned()),
        None => (name, String::new()),
    }
}

/// The backups of the log `path` in its directory, with the times in their names.
fn backups(path: &Path) -> io::Result<Vec<(PathBuf, jiff::Timestamp)>> {
    let (prefix, ext) = prefix_and_ext(path);
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir.to_owned(),
        None => PathBuf::from("."),
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let stamp = name
            .strip_prefix(&format!("{prefix}-"))
            .and_then(|rest| {
                rest.strip_suffix(&format!("{ext}{GZ}"))
                    .or_else(|| rest.strip_suffix(ext.as_str()))
            })
            .and_then(|stamp| {
                jiff::civil::DateTime::strptime(BACKUP_TIME, stamp)
                    .ok()?
                    .to_zoned(jiff::tz::TimeZone::UTC)
                    .ok()
            });
        if let Some(stamp) = stamp {
            found.push((entry.path(), stamp.timestamp()));
        }
    }
    Ok(found)
}

/// Gzips `path` into `path.gz` and removes it (lumberjack's `compressLogFile`).
fn compress(path: &Path) -> io::Result<()> {
    let target = PathBuf::from(format!("{}{GZ}", path.display()));
    let mut input = File::open(path)?;
    let mut options = OpenOptions::new();
    options.create(true).truncate(true).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut encoder =
        flate2::write::GzEncoder::new(options.open(&target)?, flate2::Compression::default());
    io::copy(&mut input, &mut encoder)?;
    encoder.finish()?.sync_all()?;
    std::fs::remove_file(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn backups_are_named_as_lumberjack_names_them() {
        let at: jiff::Timestamp = "2026-11-27T17:20:00.123Z".parse().unwrap();
        assert_eq!(
            backup_name(Path::new("/var/log/audit.log"), at),
            Path::new("/var/log/audit-2026-11-27T17-20-00.123.log")
        );
        assert_eq!(
            backup_name(Path::new("audit"), at),
            Path::new("audit-2026-11-27T17-20-00.123")
        );
    }

    #[test]
    fn a_full_file_is_moved_aside_and_old_ones_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        // Backups from before: one of them older than the age kept.
        std::fs::write(
            dir.path().join("audit-2020-01-01T00-00-00.000.log"),
            "old\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("unrelated.log"), "x\n").unwrap();
        let rotation = LogRotation {
            max_backups: 2,
            max_age_days: 30,
            compress: true,
            ..LogRotation::default()
        };
        let mut log = RotatingFile::with_limit(&path, rotation, 10).unwrap();
        log.write_line(b"12345\n").unwrap();
        log.write_line(b"1234\n").unwrap(); // 11 bytes: rotates first
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1234\n");
        let listed = names(dir.path());
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert!(listed.contains(&"unrelated.log".to_owned()));
        let backup = listed.iter().find(|n| n.ends_with(".log.gz")).unwrap();
        assert!(backup.starts_with("audit-20"), "{backup}");
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(File::open(dir.path().join(backup)).unwrap()),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "12345\n");
        // Too long for any file.
        assert_eq!(
            log.write_line(b"12345678901\n").unwrap_err().to_string(),
            "write length 12 exceeds maximum file size 10"
        );
    }

    #[test]
    fn only_the_newest_backups_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        for stamp in ["2026-11-27T10-00-00.000", "2026-11-27T11-00-00.000"] {
            std::fs::write(dir.path().join(format!("audit-{stamp}.log")), "x\n").unwrap();
        }
        let rotation = LogRotation {
            max_backups: 2,
            ..LogRotation::default()
        };
        let mut log = RotatingFile::with_limit(&path, rotation, 4).unwrap();
        log.write_line(b"abc\n").unwrap();
        log.write_line(b"def\n").unwrap();
        let listed = names(dir.path());
        assert!(!listed.contains(&"audit-2026-11-27T10-00-00.000.log".to_owned()));
        assert!(listed.contains(&"audit-2026-11-27T11-00-00.000.log".to_owned()));
        assert_eq!(listed.len(), 3, "{listed:?}");
    }
}
