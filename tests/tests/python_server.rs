//! The official Python client (`kubernetes`, installed by `tests/all.sh`) against the `kapi`
//! binary: CRUD on ConfigMaps, 409 on a stale update, limit/continue pagination, watch replay
//! and resume from a resourceVersion, and 410 Gone for a compacted one. The checks live in
//! `tests/python/server_client.py`; the server runs with a one-second compaction interval so
//! the 410 path is reached within seconds.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kapi_e2e::{KapiServer, ServerOptions, python, workspace_root};

#[test]
fn python_client_crud_pagination_watch_and_expiry() {
    let server = KapiServer::start(&ServerOptions {
        compaction_interval: Some("1s".to_owned()),
        ..ServerOptions::default()
    })
    .unwrap();
    let mut child = Command::new(python())
        .arg(workspace_root().join("tests/python/server_client.py"))
        .arg(server.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    eprintln!("python client script took {:.1?}", started.elapsed());
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
        "the Python client script failed ({}):\n{}{}\nserver stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
}
