//! Local etcd clusters for tests and benchmarks: members on free loopback ports with
//! temporary data directories, killed (and their directories removed) when the cluster is
//! dropped, panics included.
//!
//! Shared by the runtime's tests (`mod support`, `storage_etcd`) and, through `#[path]`, by
//! the end-to-end tests and the benchmark, so it uses nothing beyond std and `tempfile`.

// Each user needs only some of these helpers.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a member may take to become healthy.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One member: its process (`None` once killed) and addresses.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) client_url: String,
    pub(crate) peer_url: String,
    pub(crate) data_dir: PathBuf,
    process: Option<Child>,
}

/// A running etcd cluster; dropping it kills every member.
#[derive(Debug)]
pub(crate) struct EtcdCluster {
    pub(crate) members: Vec<Member>,
    token: String,
    initial_cluster: String,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// The temporary directory for data: memory-backed when available, as fsync cost there
/// says nothing about kapi and slows every test down.
fn temp_root() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new()
            .prefix("kapi-etcd-")
            .tempdir_in(shm)
    {
        return dir;
    }
    tempfile::Builder::new()
        .prefix("kapi-etcd-")
        .tempdir()
        .expect("temporary directory")
}

/// Whether an `etcd` binary is on PATH.
pub(crate) fn etcd_available() -> bool {
    Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `GET /health` on a client URL answers `"health":"true"`.
fn healthy(client_url: &str) -> bool {
    let addr = client_url.trim_start_matches("http://");
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}

impl EtcdCluster {
    /// Starts a one-member cluster.
    pub(crate) fn single() -> Self {
        Self::start(1)
    }

    /// Starts a cluster of `size` members and waits until every one is healthy. Retries
    /// with new ports when a port was taken between picking and binding.
    pub(crate) fn start(size: usize) -> Self {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(size) {
                Ok(cluster) => return cluster,
                Err(e) => last = e,
            }
        }
        panic!("etcd did not start: {last}");
    }

    fn try_start(size: usize) -> Result<Self, String> {
        let dir = temp_root();
        let token = format!(
            "kapi-{}-{}",
            std::process::id(),
            dir.path()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        let mut members: Vec<Member> = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client_url: format!("http://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                data_dir: dir.path().join(format!("m{i}")),
                process: None,
            })
            .collect();
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = EtcdCluster {
            members: Vec::new(),
            token,
            initial_cluster,
            _dir: dir,
        };
        for member in &mut members {
            member.process = Some(cluster.spawn(member, "new")?);
        }
        cluster.members = members;
        cluster.wait_healthy()?;
        Ok(cluster)
    }

    fn spawn(&self, member: &Member, state: &str) -> Result<Child, String> {
        let log = std::fs::File::create(self._dir.path().join(format!("{}.log", member.name)))
            .map_err(|e| e.to_string())?;
        Command::new("etcd")
            .args(["--name", &member.name])
            .arg("--data-dir")
            .arg(&member.data_dir)
            .args(["--listen-client-urls", &member.client_url])
            .args(["--advertise-client-urls", &member.client_url])
            .args(["--listen-peer-urls", &member.peer_url])
            .args(["--initial-advertise-peer-urls", &member.peer_url])
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-cluster-state", state])
            .args(["--initial-cluster-token", &self.token])
            // Fast elections on loopback, so killing a leader costs well under a second.
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .args(["--log-level", "warn"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run etcd (is it installed?): {e}"))
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        for i in 0..self.members.len() {
            loop {
                if healthy(&self.members[i].client_url) {
                    break;
                }
                if let Some(process) = self.members[i].process.as_mut()
                    && let Ok(Some(status)) = process.try_wait()
                {
                    let log = std::fs::read_to_string(
                        self._dir
                            .path()
                            .join(format!("{}.log", self.members[i].name)),
                    )
                    .unwrap_or_default();
                    return Err(format!("member {i} exited with {status}: {log}"));
                }
                if Instant::now() > deadline {
                    return Err(format!("member {i} not healthy in {START_TIMEOUT:?}"));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// Every member's client URL.
    pub(crate) fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The client URLs joined with commas, as `--etcd-servers` takes them.
    pub(crate) fn endpoints_flag(&self) -> String {
        self.endpoints().join(",")
    }

    /// Kills member `i` with SIGKILL and waits for it to be gone.
    pub(crate) fn kill(&mut self, i: usize) {
        if let Some(mut process) = self.members[i].process.take() {
            let _ = process.kill();
            let _ = process.wait();
        }
    }

    /// Restarts a killed member from its data directory.
    pub(crate) fn restart(&mut self, i: usize) {
        let child = self
            .spawn(&self.members[i], "existing")
            .expect("restart etcd member");
        self.members[i].process = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        while !healthy(&self.members[i].client_url) {
            assert!(Instant::now() < deadline, "member {i} did not come back");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}
