//! [`Kubectl`]: one `kubectl` binary driving one [`KapiServer`], the way every kubectl test
//! runs it. Each call gets the server's kubeconfig, keeps kubectl's home and discovery cache in
//! the test's own folder (never the user's), and is killed if it outlives its time bound.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::KapiServer;

/// How long one kubectl call may run before it is killed, unless
/// [`Kubectl::with_call_timeout`] says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One kubectl binary talking to one server, with its home and caches under `dir`.
#[derive(Debug, Clone)]
pub struct Kubectl<'a> {
    binary: PathBuf,
    server: &'a KapiServer,
    dir: &'a Path,
    call_timeout: Duration,
    request_timeout: Option<String>,
    env: Vec<(String, String)>,
    /// The kubeconfig passed: the server's, or a copy with other credentials.
    kubeconfig: PathBuf,
}

impl<'a> Kubectl<'a> {
    /// `binary` (a path, or a name looked up on `PATH`) against `server`; `dir` is its home,
    /// holds its discovery cache and the files written with [`Kubectl::file`].
    pub fn new(binary: impl Into<PathBuf>, server: &'a KapiServer, dir: &'a Path) -> Self {
        Self {
            binary: binary.into(),
            server,
            dir,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            request_timeout: None,
            env: Vec::new(),
            kubeconfig: server.kubeconfig().to_owned(),
        }
    }

    /// The same kubectl with the server's kubeconfig (its cluster and CA) but the credentials
    /// `user` (a kubeconfig `user` entry such as `{"token": "..."}`), saved as `name` in the
    /// kubectl's folder.
    ///
    /// # Panics
    /// When the server's kubeconfig cannot be read or the copy written.
    pub fn as_user(&self, name: &str, user: Value) -> Self {
        let text = std::fs::read_to_string(self.server.kubeconfig())
            .unwrap_or_else(|e| panic!("cannot read the server's kubeconfig: {e}"));
        let mut config: Value = serde_yaml_ng::from_str(&text)
            .unwrap_or_else(|e| panic!("the server's kubeconfig is not YAML: {e}"));
        config["users"][0]["user"] = user;
        let path = self.dir.join(format!("kubeconfig-{name}"));
        std::fs::write(&path, config.to_string())
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        Self {
            kubeconfig: path,
            ..self.clone()
        }
    }

    /// The `kubectl` on `PATH` (see [`Kubectl::new`]).
    pub fn on_path(server: &'a KapiServer, dir: &'a Path) -> Self {
        Self::new("kubectl", server, dir)
    }

    /// Kills each call after `timeout` instead of [`DEFAULT_CALL_TIMEOUT`].
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Passes `--request-timeout=<timeout>` (e.g. `"30s"`) before every call's own arguments,
    /// so kubectl itself gives up on a hung request and reports it.
    pub fn with_request_timeout(mut self, timeout: &str) -> Self {
        self.request_timeout = Some(timeout.to_owned());
        self
    }

    /// Sets `name=value` in every call's environment (e.g. client-go's `KUBE_FEATURE_*` gates).
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The binary this runs.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The folder holding kubectl's home, caches and the files written with [`Kubectl::file`].
    pub fn dir(&self) -> &Path {
        self.dir
    }

    /// The server this talks to.
    pub fn server(&self) -> &KapiServer {
        self.server
    }

    /// The command for `kubectl <args>`, not yet started: for calls that need their own
    /// plumbing (e.g. a `get -w` read line by line). It has no time bound.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command.arg("--kubeconfig").arg(&self.kubeconfig);
        if let Some(timeout) = &self.request_timeout {
            command.arg(format!("--request-timeout={timeout}"));
        }
        command.args(args);
        command
            // Keeps kubectl's discovery cache per test, not in the user's home.
            .env("KUBECACHEDIR", self.dir.join("cache"))
            .env("HOME", self.dir);
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Starts a long-running `kubectl <args>` (`get -w`, `events --watch`) whose stdout lines
    /// arrive on the receiver as kubectl prints them; stderr is dropped. The caller kills and
    /// waits for the child.
    ///
    /// # Panics
    /// When the binary cannot be started.
    pub fn spawn_lines(&self, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.binary.display()));
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        (child, rx)
    }

    /// Runs kubectl to completion, killing it once the call timeout has passed.
    ///
    /// # Panics
    /// When the binary cannot be started or waited for.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.binary.display()));
        let deadline = Instant::now() + self.call_timeout;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() > deadline => {
                    let _ = child.kill();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("cannot wait for {}: {e}", self.binary.display()),
            }
        }
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("cannot read {}'s output: {e}", self.binary.display()))
    }

    /// stdout of a successful call, or an error naming the call with its stdout and stderr.
    pub fn ok(&self, args: &[&str]) -> Result<String, String> {
        let output = self.run(args);
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(format!(
                "`kubectl {}` failed ({}):\n{}{}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// stdout of a call that must succeed.
    ///
    /// # Panics
    /// When it fails, with kubectl's output and the server's stderr.
    pub fn expect_ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "`kubectl {}` failed ({}):\n{}{}\nserver stderr:\n{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            self.server.stderr()
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// stderr of a call that must fail.
    ///
    /// # Panics
    /// When it succeeds.
    pub fn expect_failure(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            !output.status.success(),
            "`kubectl {}` succeeded:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// `kubectl <args> -o json` parsed; a `get` also asks for `--show-managed-fields`, which
    /// kubectl otherwise strips.
    ///
    /// # Panics
    /// When the call fails or prints something other than JSON.
    pub fn expect_json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        if args.first() == Some(&"get") {
            all.push("--show-managed-fields");
        }
        let text = self.expect_ok(&all);
        serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("`kubectl {}` is not JSON ({e}):\n{text}", all.join(" ")))
    }

    /// `kubectl get <resource> -n <namespace> -o json`, parsed.
    pub fn get_json(&self, namespace: &str, resource: &str) -> Result<Value, String> {
        let text = self.ok(&["get", resource, "-n", namespace, "-o", "json"])?;
        serde_json::from_str(&text).map_err(|e| format!("get {resource} is not JSON: {e}"))
    }

    /// The client's minor version, from `kubectl version --client`.
    pub fn client_minor(&self) -> Result<u32, String> {
        let text = self.ok(&["version", "--client", "-o", "json"])?;
        let version: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let minor = version["clientVersion"]["minor"]
            .as_str()
            .unwrap_or_default();
        minor
            .trim_end_matches('+')
            .parse()
            .map_err(|_| format!("no minor version in {version}"))
    }

    /// Writes `contents` to `name` in [`Kubectl::dir`] and returns its path.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }
}

/// `Ok` when `text` (a command's output or error) contains `needle`, else an error naming
/// `what` with the whole text.
pub fn expect(what: &str, text: &str, needle: &str) -> Result<(), String> {
    if text.contains(needle) {
        Ok(())
    } else {
        Err(format!("{what}: expected {needle:?} in:\n{text}"))
    }
}
