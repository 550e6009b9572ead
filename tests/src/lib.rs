//! Shared helpers for kapi's end-to-end tests: where the workspace, the spec corpus and the
//! test tools (the Python venv made by `tests/all.sh`, the `kubectl` binaries) are,
//! [`KapiServer`], the real `kapi` binary running as a child process, [`Kubectl`], one
//! kubectl binary driving such a server, [`HttpsServer`], an HTTPS server a test serves
//! itself for kapi to call, and [`routes`], every kind of route with who may reach it.
//!
//! The tests themselves live in `tests/tests/`, one file per client or scenario.
//!
//! # How the `kapi` binary is found
//! `env!("CARGO_BIN_EXE_kapi")` only exists inside the `kapi-apiserver` package, so
//! [`kapi_binary`] looks for `kapi` in the target directory the test executable itself lives
//! in (`<target>/<profile>/kapi`). Under `cargo test --workspace` (what CI runs) cargo has
//! just built it, so it is newer than every source file and used as is. When it is missing or
//! older than a source (e.g. `cargo test -p kapi-e2e` after editing the server), the helper runs
//! `cargo build -p kapi-apiserver --bin kapi` into that target directory once per test process, so
//! a test never runs a stale server. `$KAPI_BIN` overrides all of this with a prebuilt binary.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub mod https;
pub mod kubectl;
pub mod routes;

pub use https::HttpsServer;
pub use kubectl::Kubectl;

/// The workspace root (the folder holding `README.md`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// The reference spec corpus: `$KAPI_SPEC_CORPUS`, else `../shared/specs` beside the workspace.
pub fn spec_corpus() -> PathBuf {
    std::env::var_os("KAPI_SPEC_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/specs"))
}

/// The Python interpreter with the official `kubernetes` client: `$KAPI_PYTHON` (set by
/// `tests/all.sh`), else the workspace's `.venv`.
///
/// # Panics
/// When neither exists: the tests that need it must not silently pass without it.
pub fn python() -> PathBuf {
    let path = std::env::var_os("KAPI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python"));
    assert!(
        path.exists(),
        "no Python with the kubernetes client at {}: run tests/all.sh, which installs it",
        path.display()
    );
    path
}

/// Runs a Python `script` against `server` with the kubeconfig and `release` as its
/// arguments; the script prints `ok` when every assertion held.
///
/// # Panics
/// When the script fails or does not print `ok`, with its output and the server's stderr.
pub fn expect_python_ok(server: &KapiServer, script: &str, release: &str) {
    let output = std::process::Command::new(python())
        .arg("-c")
        .arg(script)
        .arg(server.kubeconfig())
        .arg(release)
        .output()
        .unwrap_or_else(|e| panic!("cannot run Python: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("ok"),
        "{release}: the Python script failed ({}):\n{stdout}{}\nserver stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
}

/// The two commands of the README's quick start: (run the main job, run every test).
///
/// They are the first two lines of the first `sh` code block after the "Quick start" heading, so a
/// test can run exactly what a newcomer runs.
pub fn readme_quick_start() -> Result<(String, String), String> {
    let readme = std::fs::read_to_string(workspace_root().join("README.md"))
        .map_err(|e| format!("cannot read README.md: {e}"))?;
    let after_heading = readme
        .split_once("## Quick start")
        .ok_or("README.md has no '## Quick start' heading")?
        .1;
    let block = after_heading
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .ok_or("the quick start has no ```sh block")?
        .0;
    let commands: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    match commands.as_slice() {
        [run, test] => Ok(((*run).to_owned(), (*test).to_owned())),
        other => Err(format!(
            "the quick start must hold exactly two commands, found {}: {other:?}",
            other.len()
        )),
    }
}

/// The target directory and profile folder the running test executable was built into:
/// `<target>/<profile>/deps/<test>` gives (`<target>`, `<profile>`).
fn own_target() -> Result<(PathBuf, String), String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot locate the test executable: {e}"))?;
    let deps = exe.parent().ok_or("the test executable has no folder")?;
    let profile_dir = deps
        .parent()
        .ok_or("the test executable is not under <target>/<profile>/deps")?;
    let target = profile_dir
        .parent()
        .ok_or("the test executable is not under a target dir")?;
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the profile folder has no name")?
        .to_owned();
    Ok((target.to_path_buf(), profile))
}

/// The `kapi` server binary, built if needed (see the crate docs); `$KAPI_BIN` overrides.
///
/// # Panics
/// When the binary cannot be built: every test that needs it would fail anyway, and the build
/// error is the useful message.
pub fn kapi_binary() -> PathBuf {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = BINARY.get_or_init(|| {
        if let Some(path) = std::env::var_os("KAPI_BIN") {
            return Ok(PathBuf::from(path));
        }
        let (target, profile) = own_target()?;
        let binary = target
            .join(&profile)
            .join(format!("kapi{}", std::env::consts::EXE_SUFFIX));
        if is_fresh(&binary) {
            return Ok(binary);
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build
            // With the etcd engine: the replica tests start the binary over etcd.
            .args(["build", "--quiet", "-p", "kapi-apiserver", "--bin", "kapi"])
            .args(["--features", "etcd"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(workspace_root());
        match profile.as_str() {
            "debug" => {}
            "release" => {
                build.arg("--release");
            }
            other => {
                build.args(["--profile", other]);
            }
        }
        let output = build
            .output()
            .map_err(|e| format!("cannot run cargo to build kapi: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "cargo build -p kapi-apiserver failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        if binary.exists() {
            Ok(binary)
        } else {
            Err(format!(
                "cargo built kapi but {} is missing",
                binary.display()
            ))
        }
    });
    match found {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

/// Whether `binary` exists and is newer than every file it could be built from (the
/// workspace manifests and lock file and everything under `runtime/`, `generated/`, `macros/`
/// and `cel-check/`). A workspace-wide `cargo test` builds the binary with the workspace's unified
/// features; rebuilding it with `cargo build -p kapi-apiserver` would compile the whole
/// dependency tree a second time with different features, so a fresh binary is reused.
fn is_fresh(binary: &Path) -> bool {
    fn newest(path: &Path, newest_seen: &mut std::time::SystemTime) {
        let Ok(meta) = std::fs::metadata(path) else {
            return;
        };
        if meta.is_dir() {
            let Ok(entries) = std::fs::read_dir(path) else {
                return;
            };
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                // Build output and hidden folders are not sources.
                if name.starts_with('.') || name.starts_with("target") {
                    continue;
                }
                newest(&entry.path(), newest_seen);
            }
        } else if let Ok(modified) = meta.modified() {
            *newest_seen = (*newest_seen).max(modified);
        }
    }
    let Ok(built) = std::fs::metadata(binary).and_then(|m| m.modified()) else {
        return false;
    };
    let root = workspace_root();
    let mut newest_source = std::time::SystemTime::UNIX_EPOCH;
    for part in [
        "Cargo.toml",
        "Cargo.lock",
        "runtime",
        "generated",
        "macros",
        "cel-check",
    ] {
        newest(&root.join(part), &mut newest_source);
    }
    built > newest_source
}

/// How to start a [`KapiServer`].
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// The data directory; `None` uses a fresh temporary one removed with the server.
    pub data_dir: Option<PathBuf>,
    /// `--kube-version` (e.g. `"1.20"`); `None` leaves the binary's default.
    pub kube_version: Option<String>,
    /// The hidden `--compaction-interval` (e.g. `"1s"`).
    pub compaction_interval: Option<String>,
    /// `--accept-restored-database`.
    pub accept_restored_database: bool,
    /// More arguments for `kapi serve` (e.g. `"--shutdown-delay-duration=2s"`).
    pub args: Vec<String>,
    /// Serve over TLS, the binary's default (its own CA, an admin client certificate in the
    /// kubeconfig); otherwise `--plain-http`, which every test but the TLS ones uses.
    pub tls: bool,
    /// `--etcd-servers` (comma-separated client URLs) instead of a data directory.
    pub etcd_servers: Option<String>,
}

impl ServerOptions {
    /// A server speaking as release `release` (e.g. `"1.20"`), otherwise as the defaults.
    pub fn release(release: &str) -> Self {
        Self {
            kube_version: Some(release.to_owned()),
            ..Self::default()
        }
    }

    /// The same options, served over TLS (see [`ServerOptions::tls`]).
    pub fn tls(mut self) -> Self {
        self.tls = true;
        self
    }

    /// The same options, with tokens verified on every request rather than remembered for
    /// ten seconds after they authenticated (`--token-success-cache-ttl=0`): for tests of
    /// what a token stops authenticating for, which would otherwise wait the ten seconds.
    pub fn remembering_no_tokens(mut self) -> Self {
        self.args.push("--token-success-cache-ttl=0".to_owned());
        self
    }
}

/// Runs `kapi <args>` expecting it to refuse to start: it must exit non-zero within `timeout`
/// (else it is killed and this fails); returns its standard error.
pub fn expect_refusal(args: &[&std::ffi::OsStr], timeout: Duration) -> Result<String, String> {
    let mut child = Command::new(kapi_binary())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start kapi: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() <= deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("kapi {args:?} started instead of refusing"));
            }
            Err(e) => return Err(format!("cannot wait for kapi: {e}")),
        }
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        std::io::Read::read_to_string(&mut pipe, &mut stderr)
            .map_err(|e| format!("cannot read kapi's stderr: {e}"))?;
    }
    if status.success() {
        return Err(format!("kapi {args:?} exited 0: {stderr}"));
    }
    Ok(stderr)
}

/// Runs `kapi serve <flag>` over TLS with a data directory and kubeconfig in `dir`, expecting
/// it to refuse to start (see [`expect_refusal`], 20 s); returns its standard error.
pub fn expect_serve_refusal(dir: &Path, flag: &str) -> Result<String, String> {
    expect_serve_refusal_with(dir, &[flag])
}

/// [`expect_serve_refusal`] with several flags.
pub fn expect_serve_refusal_with(dir: &Path, flags: &[&str]) -> Result<String, String> {
    let (data, kubeconfig) = (dir.join("data"), dir.join("kubeconfig"));
    let mut args: Vec<&std::ffi::OsStr> = vec!["serve".as_ref()];
    args.extend(flags.iter().map(std::ffi::OsStr::new));
    args.extend::<[&std::ffi::OsStr; 6]>([
        "--listen".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
        "--kubeconfig".as_ref(),
        kubeconfig.as_os_str(),
    ]);
    expect_refusal(&args, Duration::from_secs(20))
}

/// How long a server may take from spawn to printing its address.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The `kapi serve` binary running as a child process on 127.0.0.1 with a free port. Dropping
/// it kills the process and removes its temporary files (kubeconfig, log, default data dir).
#[derive(Debug)]
pub struct KapiServer {
    child: Child,
    addr: SocketAddr,
    kubeconfig: PathBuf,
    data_dir: PathBuf,
    log: PathBuf,
    tls: bool,
    ready_after: Duration,
    // Declared last so the process is gone before its files are removed.
    _temp: tempfile::TempDir,
}

impl KapiServer {
    /// Starts the binary and waits (bounded) for its `serving on http(s)://ADDR` line.
    pub fn start(options: &ServerOptions) -> Result<Self, String> {
        let temp = tempfile::tempdir().map_err(|e| format!("cannot create a temp dir: {e}"))?;
        let data_dir = options
            .data_dir
            .clone()
            .unwrap_or_else(|| temp.path().join("data"));
        let kubeconfig = temp.path().join("kubeconfig");
        let log = temp.path().join("stderr.log");
        let stderr = std::fs::File::create(&log).map_err(|e| format!("cannot create log: {e}"))?;
        let mut command = Command::new(kapi_binary());
        command.args(["serve", "--listen", "127.0.0.1:0"]);
        match &options.etcd_servers {
            Some(endpoints) => command.args(["--etcd-servers", endpoints]),
            None => command.arg("--data-dir").arg(&data_dir),
        };
        command
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        if let Some(version) = &options.kube_version {
            command.args(["--kube-version", version]);
        }
        if let Some(interval) = &options.compaction_interval {
            command.args(["--compaction-interval", interval]);
        }
        if options.accept_restored_database {
            command.arg("--accept-restored-database");
        }
        if !options.tls {
            command.arg("--plain-http");
        }
        command.args(&options.args);
        // The log's level comes from the arguments alone, whatever the environment says.
        command.env_remove("RUST_LOG");
        let started = Instant::now();
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start kapi: {e}"))?;
        let line = match child.stdout.take() {
            Some(stdout) => first_line(stdout, READY_TIMEOUT),
            None => Err("kapi's stdout was not captured".to_owned()),
        };
        let addr = line.and_then(|line| parse_ready_line(&line));
        let addr = match addr {
            Ok(addr) => addr,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = std::fs::read_to_string(&log).unwrap_or_default();
                return Err(format!("kapi did not become ready: {e}\nstderr:\n{stderr}"));
            }
        };
        Ok(Self {
            child,
            addr,
            kubeconfig,
            data_dir,
            log,
            tls: options.tls,
            ready_after: started.elapsed(),
            _temp: temp,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, or `https://ADDR` over TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// From spawning the process to reading its address line.
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `kill -9`: the process gets no chance to flush or clean up.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(&mut self, timeout: Duration) -> Result<ExitStatus, String> {
        self.send_terminate()?;
        self.wait_exit(timeout)
    }

    /// Sends SIGTERM without waiting.
    pub fn send_terminate(&self) -> Result<(), String> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .map_err(|e| format!("cannot run kill: {e}"))?;
        if !status.success() {
            return Err("kill -TERM failed".to_owned());
        }
        Ok(())
    }

    /// Waits (bounded) for the process to exit; kills it if it has not by then.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus, String> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    self.kill();
                    return Err(format!("kapi did not exit within {timeout:?} of SIGTERM"));
                }
                Err(e) => return Err(format!("cannot wait for kapi: {e}")),
            }
        }
    }
}

impl Drop for KapiServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads the first line of `stream` on a helper thread, giving up after `timeout`. The thread
/// keeps draining the stream afterwards so the child never blocks on a full pipe.
fn first_line(
    stream: impl std::io::Read + Send + 'static,
    timeout: Duration,
) -> Result<String, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stream).lines();
        let first = lines.next();
        let _ = tx.send(first);
        for _ in lines {}
    });
    match rx.recv_timeout(timeout) {
        Ok(Some(Ok(line))) => Ok(line),
        Ok(Some(Err(e))) => Err(format!("cannot read kapi's stdout: {e}")),
        Ok(None) => Err("kapi exited without printing its address".to_owned()),
        Err(_) => Err(format!("no address line within {timeout:?}")),
    }
}

/// The address in `kapi: serving on http://ADDR` (or `https://ADDR`).
pub fn parse_ready_line(line: &str) -> Result<SocketAddr, String> {
    line.split_once("://")
        .filter(|(before, _)| before.ends_with("http") || before.ends_with("https"))
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|addr| addr.trim_end_matches('/').parse().ok())
        .ok_or_else(|| format!("no http(s)://ADDR in kapi's first line {line:?}"))
}

/// The pinned `kubectl.1.NN` of [`kubectl_binaries`] from `1.<minor>` on, oldest first.
pub fn kubectl_binaries_since(minor: u32) -> Vec<PathBuf> {
    kubectl_binaries()
        .into_iter()
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("kubectl.1."))
                .and_then(|m| m.parse::<u32>().ok())
                .is_some_and(|m| m >= minor)
        })
        .collect()
}

/// Every `kubectl` to test with, by name: `kubectl` and the pinned `kubectl.1.NN` found on
/// `PATH`, beside the real file `kubectl` resolves to (the Cloud SDK keeps its pinned
/// versions there without putting them on `PATH`) or in the repository's `.tools/`, where
/// `tests/setup.sh` puts the releases the machine lacks (1.34, 1.35). `$KAPI_KUBECTLS`
/// (colon-separated paths) overrides the search.
pub fn kubectl_binaries() -> Vec<PathBuf> {
    if let Some(list) = std::env::var_os("KAPI_KUBECTLS") {
        return std::env::split_paths(&list).collect();
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools"));
    let mut found: Vec<PathBuf> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut index = 0;
    while let Some(dir) = dirs.get(index).cloned() {
        index += 1;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut here: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
            .filter(|(name, _)| name == "kubectl" || name.starts_with("kubectl.1."))
            .collect();
        here.sort();
        for (name, path) in here {
            let real_dir = (name == "kubectl")
                .then(|| std::fs::canonicalize(&path).ok())
                .flatten()
                .and_then(|p| p.parent().map(Path::to_path_buf));
            if let Some(real_dir) = real_dir.filter(|d| !dirs.contains(d)) {
                dirs.push(real_dir);
            }
            if !names.contains(&name) {
                names.push(name);
                found.push(path);
            }
        }
    }
    // `kubectl` first, then the pinned ones oldest first, wherever each was found.
    found.sort_by_key(|path| {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        name.strip_prefix("kubectl.1.")
            .and_then(|minor| minor.parse::<u32>().ok())
    });
    found
}
