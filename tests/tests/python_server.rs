//! The official Python client (`kubernetes`, installed by `tests/all.sh`) against the `kapi`
//! binary: CRUD on ConfigMaps, 409 on a stale update, limit/continue pagination, watch replay
//! and resume from a resourceVersion, and 410 Gone for a compacted one. The checks live in
//! `tests/python/server_client.py`; the server runs with a one-second compaction interval so
//! the 410 path is reached within seconds. A second, inline script drives the client's
//! `dry_run` and `field_validation` arguments.

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

/// The client's `dry_run` and `field_validation` arguments: a dry-run create answers with a
/// server-made name and uid and stores nothing; a value other than `All` is upstream's 422;
/// `Strict` refuses an unknown field with the strict decoding error, the default (`Warn`)
/// creates the object without it.
const DRY_RUN_SCRIPT: &str = r#"
import json
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="dry-"), data={"k": "v"})
out = v1.create_namespaced_config_map("default", cm, dry_run="All")
assert out.metadata.name.startswith("dry-") and len(out.metadata.name) > 4, out.metadata
assert out.metadata.uid and out.metadata.creation_timestamp, out.metadata
assert out.metadata.resource_version is None, out.metadata
names = [c.metadata.name for c in v1.list_namespaced_config_map("default").items]
assert out.metadata.name not in names, names

try:
    v1.create_namespaced_config_map("default", cm, dry_run="Yes")
    raise AssertionError("dry_run=Yes was accepted")
except ApiException as e:
    assert e.status == 422, e
    assert json.loads(e.body)["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: '
        'dryRun: Unsupported value: []string{"Yes"}: supported values: "All"'), e.body

loose = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "loose"},
         "data": {"k": "v"}, "bogus": 1}
try:
    v1.create_namespaced_config_map("default", loose, field_validation="Strict")
    raise AssertionError("an unknown field passed Strict")
except ApiException as e:
    assert e.status == 400, e
    assert json.loads(e.body)["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "bogus"'), e.body
created = v1.create_namespaced_config_map("default", loose)
assert created.metadata.name == "loose" and created.data == {"k": "v"}, created
v1.delete_namespaced_config_map("loose", "default", dry_run="All")
assert v1.read_namespaced_config_map("loose", "default").metadata.deletion_timestamp is None
print("ok")
"#;

#[test]
fn python_client_dry_run_and_field_validation() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let output = Command::new(python())
        .arg("-c")
        .arg(DRY_RUN_SCRIPT)
        .arg(server.kubeconfig())
        .output()
        .unwrap();
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
        "the Python dry-run script failed ({}):\n{}{}\nserver stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
}
