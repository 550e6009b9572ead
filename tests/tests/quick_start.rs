//! The README's quick start is a contract: its first command runs kapi's main job (the API
//! server) and its second is exactly what CI runs. These tests run what a newcomer would type:
//! the server command (on a free port, with a throwaway data dir and kubeconfig) must serve
//! `kubectl get namespaces`.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kapi_e2e::{readme_quick_start, workspace_root};

#[test]
fn ci_runs_the_readme_test_command() {
    let (_, test_command) = readme_quick_start().unwrap();
    let ci = std::fs::read_to_string(workspace_root().join(".ci/run")).unwrap();
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        ci_commands.contains(&test_command.as_str()),
        ".ci/run must run the README's test command {test_command:?}; it runs {ci_commands:?}"
    );
}

/// The README's server command with a free port and this test's own data dir and kubeconfig.
fn localized(command: &str, dir: &Path) -> Result<String, String> {
    let mut words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    for (flag, value) in [
        ("--listen", "127.0.0.1:0".to_owned()),
        ("--data-dir", dir.join("data").display().to_string()),
        ("--kubeconfig", dir.join("kubeconfig").display().to_string()),
    ] {
        let at = words
            .iter()
            .position(|w| w == flag)
            .ok_or_else(|| format!("the README command {command:?} has no {flag}"))?;
        let slot = words
            .get_mut(at + 1)
            .ok_or_else(|| format!("{flag} has no value in {command:?}"))?;
        *slot = value;
    }
    Ok(words.join(" "))
}

#[test]
fn readme_main_command_serves_kubectl() {
    let (run_command, _) = readme_quick_start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let command = localized(&run_command, dir.path()).unwrap();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("exec {command}"))
        .current_dir(workspace_root())
        // Its own process group, so the server `cargo run` starts dies with it.
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = child.id();
    let _guard = KillGroup(group);
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // `cargo run` may have to build the server first.
    let line = rx.recv_timeout(Duration::from_secs(600));
    let line = match line {
        Ok(line) => line,
        Err(e) => {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "{command:?} printed no address ({e}):\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    };
    let addr = kapi_e2e::parse_ready_line(&line).unwrap();
    // TLS by default: the kubeconfig carries the server's CA and the admin's certificate.
    assert!(line.contains(&format!("https://{addr}")), "{line}");
    let kubeconfig = dir.path().join("kubeconfig");
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "namespaces", "--request-timeout=20s"])
        .env("KUBECACHEDIR", dir.path().join("cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.lines().any(|l| l.starts_with("default ")),
        "kubectl get namespaces against the README server: {}\n{stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        rx.try_recv().is_err(),
        "the server must print exactly one line once ready"
    );
}

/// Kills a whole process group when dropped.
struct KillGroup(u32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .status();
    }
}
