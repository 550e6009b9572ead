//! The server under test: spawns the real `kapi serve` binary on a fresh data directory, times
//! start → ready, reads its memory and disk use, and kills it and removes its files when dropped,
//! so an error or a panic anywhere in a scenario leaves no process or directory behind.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hyper::{Method, StatusCode};
use tempfile::TempDir;

use crate::http::Conn;

/// What `kapi serve` prints once it accepts requests.
const READY_LINE: &str = "kapi: serving on http://";

/// How long a start may take before the benchmark gives up on it.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one start took.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Startup {
    /// Spawn until the ready line was read from the server's stdout.
    pub(crate) line: Duration,
    /// Spawn until `/readyz` first answered 200.
    pub(crate) readyz: Duration,
}

/// How a restart stops the running server.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    /// SIGTERM: the server drains and closes its store cleanly.
    Term,
    /// SIGKILL: the store is reopened as after a crash.
    Kill,
}

/// How long a clean shutdown may take before it is cut short with SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// A running server and the directory holding its store; both go away on drop.
pub(crate) struct Server {
    binary: PathBuf,
    child: Option<Child>,
    addr: SocketAddr,
    // Declared last so it is removed after the process is gone.
    dir: TempDir,
}

impl Server {
    /// Starts the server on an empty data directory under `parent`.
    pub(crate) async fn start(binary: &Path, parent: &Path) -> Result<(Server, Startup)> {
        let dir = tempfile::Builder::new()
            .prefix("kapi-load-")
            .tempdir_in(parent)
            .with_context(|| format!("creating a temporary directory in {}", parent.display()))?;
        let mut server = Server {
            binary: binary.to_path_buf(),
            child: None,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            dir,
        };
        let startup = server.spawn().await?;
        Ok((server, startup))
    }

    /// Stops the process as `how` says and starts it again on the same data.
    pub(crate) async fn restart(&mut self, how: Stop) -> Result<Startup> {
        match how {
            Stop::Kill => self.kill(),
            Stop::Term => self.terminate().await?,
        }
        self.spawn().await
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    async fn spawn(&mut self) -> Result<Startup> {
        let log = std::fs::File::create(self.dir.path().join("server.log"))?;
        let started = Instant::now();
        let mut child = Command::new(&self.binary)
            .arg("serve")
            .arg("--plain-http")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(self.data_dir())
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning {}", self.binary.display()))?;
        let stdout = child.stdout.take().context("the server's stdout")?;
        self.child = Some(child);

        // A blocking reader thread timestamps the line the moment it arrives and then keeps
        // draining stdout, so the server never blocks on a full pipe.
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let mut tx = Some(tx);
            for line in lines.by_ref() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.strip_prefix(READY_LINE)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send((addr.trim().to_owned(), Instant::now()));
                }
            }
        });
        let (addr, printed) = match tokio::time::timeout(START_TIMEOUT, rx).await {
            Ok(Ok(found)) => found,
            _ => bail!(
                "the server did not print {READY_LINE:?} within {START_TIMEOUT:?}; its log:\n{}",
                self.log()
            ),
        };
        self.addr = addr
            .parse()
            .with_context(|| format!("the server's address {addr:?}"))?;
        let ready = self.wait_ready(started).await?;
        Ok(Startup {
            line: printed - started,
            readyz: ready - started,
        })
    }

    /// Polls `/readyz` until it answers 200; returns when it did.
    async fn wait_ready(&self, started: Instant) -> Result<Instant> {
        let mut conn = None;
        loop {
            if started.elapsed() > START_TIMEOUT {
                bail!("/readyz did not answer 200 within {START_TIMEOUT:?}");
            }
            if conn.is_none() {
                conn = Conn::connect(self.addr).await.ok();
            }
            if let Some(c) = conn.as_mut() {
                match c.send(Method::GET, "/readyz", None).await {
                    Ok((StatusCode::OK, _)) => return Ok(Instant::now()),
                    Ok(_) => {}
                    Err(_) => conn = None,
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn pid(&self) -> Result<u32> {
        Ok(self
            .child
            .as_ref()
            .context("the server is not running")?
            .id())
    }

    /// The server's resident set size in bytes (`VmRSS` in `/proc/<pid>/status`).
    pub(crate) fn rss(&self) -> Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?))?;
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .context("no VmRSS in /proc/<pid>/status")?;
        let kib: u64 = line
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .context("parsing VmRSS")?;
        Ok(kib * 1024)
    }

    /// CPU time (user + system, all threads) the server has used so far.
    pub(crate) fn cpu(&self) -> Result<Duration> {
        cpu_of(&format!("/proc/{}/stat", self.pid()?))
    }

    /// The data directory's size in bytes: the files' lengths (not their allocated blocks,
    /// which redb grows in large steps).
    pub(crate) fn data_size(&self) -> Result<u64> {
        fn walk(path: &Path) -> std::io::Result<u64> {
            let mut total = 0;
            for entry in std::fs::read_dir(path)? {
                let entry = entry?;
                let meta = entry.metadata()?;
                total += if meta.is_dir() {
                    walk(&entry.path())?
                } else {
                    meta.len()
                };
            }
            Ok(total)
        }
        Ok(walk(&self.data_dir())?)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Sends SIGTERM (through kill(1): this crate has no unsafe code for libc) and waits for
    /// the exit, polling so the async runtime is not blocked.
    async fn terminate(&mut self) -> Result<()> {
        let pid = self.pid()?;
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .context("running kill -TERM")?;
        if !sent.success() {
            bail!("kill -TERM {pid} failed");
        }
        let started = Instant::now();
        while started.elapsed() < STOP_TIMEOUT {
            if let Some(child) = self.child.as_mut()
                && child.try_wait()?.is_some()
            {
                self.child = None;
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.kill();
        bail!("the server did not stop within {STOP_TIMEOUT:?} of SIGTERM")
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// CPU time of this process (the load generator), to compare with the server's.
pub(crate) fn own_cpu() -> Result<Duration> {
    cpu_of("/proc/self/stat")
}

/// Linux reports `utime` and `stime` in USER_HZ ticks, which is 100 per second on every
/// architecture the kernel exposes to user space this way.
const TICKS_PER_SECOND: u64 = 100;

fn cpu_of(stat_path: &str) -> Result<Duration> {
    let stat = std::fs::read_to_string(stat_path)?;
    // The command name (field 2) may contain spaces; the fields after its closing parenthesis
    // start at field 3, so utime and stime (fields 14 and 15) are the 12th and 13th of them.
    let rest = stat.rsplit_once(')').context("malformed stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<u64> {
        fields
            .get(i)
            .context("short stat")?
            .parse()
            .context("stat field")
    };
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(total * 1000 / TICKS_PER_SECOND))
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        // `dir` is removed by its own drop, after this.
    }
}
