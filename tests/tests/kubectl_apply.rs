//! Writes through real clients against the `kapi` binary: kubectl's server-side apply (with
//! and without `--force-conflicts`), `patch --type json|merge|strategic`, `diff`,
//! `create --dry-run=server` and `apply --validate=strict`, and the Python client's patch
//! calls (`tests/python/apply_client.py`); each checks the managed fields the server records.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, python, workspace_root};
use serde_json::Value;

/// Longest any single client call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// `(manager, operation)` of each managed-fields entry.
fn managers(object: &Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_owned(),
                        e["operation"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn has_manager(object: &Value, manager: &str, operation: &str) -> bool {
    managers(object)
        .iter()
        .any(|(m, o)| m == manager && o == operation)
}

fn settings(color: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n  labels:\n    app: shop\ndata:\n  color: {color}\n"
    )
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

#[test]
fn kubectl_server_side_apply_patch_diff_and_dry_run() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path()).with_call_timeout(CALL_TIMEOUT);

    // Server-side apply creates, as manager `kubectl`.
    let blue = k.file("blue.yaml", &settings("blue"));
    let out = k.expect_ok(&["apply", "--server-side", "-f", blue.to_str().unwrap()]);
    assert!(
        out.contains("configmap/settings serverside-applied"),
        "{out}"
    );
    let cm = k.expect_json(&["get", "configmap", "settings"]);
    assert_eq!(managers(&cm), [("kubectl".to_owned(), "Apply".to_owned())]);
    assert_eq!(
        cm["metadata"]["managedFields"][0]["fieldsV1"],
        serde_json::json!({"f:data": {"f:color": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
    );

    // Another manager changing the value conflicts; with --force-conflicts it takes over.
    let green = k.file("green.yaml", &settings("green"));
    let path = green.to_str().unwrap();
    let err = k.expect_failure(&[
        "apply",
        "--server-side",
        "--field-manager=deployer",
        "-f",
        path,
    ]);
    assert!(
        err.contains("conflict with \"kubectl\"") && err.contains(".data.color"),
        "{err}"
    );
    assert_eq!(
        k.expect_json(&["get", "configmap", "settings"])["data"]["color"],
        "blue"
    );
    k.expect_ok(&[
        "apply",
        "--server-side",
        "--field-manager=deployer",
        "--force-conflicts",
        "-f",
        path,
    ]);
    let cm = k.expect_json(&["get", "configmap", "settings"]);
    assert_eq!(cm["data"]["color"], "green");
    assert!(has_manager(&cm, "deployer", "Apply"), "{cm}");

    // Every patch type works and records its manager's Update.
    for (kind, patch, key) in [
        ("merge", r#"{"data":{"size":"large"}}"#, "size"),
        (
            "json",
            r#"[{"op":"add","path":"/data/shape","value":"round"}]"#,
            "shape",
        ),
        ("strategic", r#"{"data":{"weight":"light"}}"#, "weight"),
    ] {
        let out = k.expect_ok(&[
            "patch",
            "configmap",
            "settings",
            "--type",
            kind,
            "-p",
            patch,
        ]);
        assert!(out.contains("configmap/settings patched"), "{kind}: {out}");
        let cm = k.expect_json(&["get", "configmap", "settings"]);
        assert!(cm["data"][key].is_string(), "{kind}: {cm}");
    }
    let cm = k.expect_json(&["get", "configmap", "settings"]);
    assert!(has_manager(&cm, "kubectl-patch", "Update"), "{cm}");

    // diff shows what an apply would change, and changes nothing.
    let red = k.file("red.yaml", &settings("red"));
    let diff = k.run(&["diff", "-f", red.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{shown}{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(
        shown.contains("-  color: green") && shown.contains("+  color: red"),
        "{shown}"
    );
    assert_eq!(
        k.expect_json(&["get", "configmap", "settings"])["data"]["color"],
        "green"
    );

    // A server-side dry-run create answers with the object and stores nothing.
    let other = k.file(
        "other.yaml",
        &settings("x").replace("name: settings", "name: other"),
    );
    let dry = k.expect_json(&["create", "--dry-run=server", "-f", other.to_str().unwrap()]);
    assert_eq!(dry["metadata"]["name"], "other");
    assert!(dry["metadata"]["uid"].is_string(), "{dry}");
    let err = k.expect_failure(&["get", "configmap", "other"]);
    assert!(err.contains("NotFound"), "{err}");

    // Strict validation: a clean manifest applies, an unknown field is refused.
    k.expect_ok(&[
        "apply",
        "--server-side",
        "--validate=strict",
        "-f",
        other.to_str().unwrap(),
    ]);
    let bad = k.file(
        "bad.yaml",
        &(settings("x").replace("name: settings", "name: bad") + "bogus: true\n"),
    );
    let err = k.expect_failure(&[
        "apply",
        "--server-side",
        "--validate=strict",
        "-f",
        bad.to_str().unwrap(),
    ]);
    assert!(err.contains("bogus"), "{err}");
    assert!(
        k.expect_failure(&["get", "configmap", "bad"])
            .contains("NotFound")
    );

    // A built-in with list semantics: scaling moves replicas to kubectl-scale, so the next
    // apply of the old count conflicts with it.
    let deployment = k.file("deployment.yaml", DEPLOYMENT);
    let path = deployment.to_str().unwrap();
    k.expect_ok(&["apply", "--server-side", "-f", path]);
    let applied = k.expect_json(&["get", "deployment", "web"]);
    let fields = &applied["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert!(
        fields["f:template"]["f:spec"]["f:containers"]
            .get("k:{\"name\":\"web\"}")
            .is_some(),
        "{applied}"
    );
    k.expect_ok(&["scale", "deployment", "web", "--replicas=4"]);
    let err = k.expect_failure(&["apply", "--server-side", "-f", path]);
    assert!(err.contains(".spec.replicas"), "{err}");
    k.expect_ok(&["apply", "--server-side", "--force-conflicts", "-f", path]);
    assert_eq!(
        k.expect_json(&["get", "deployment", "web"])["spec"]["replicas"],
        2
    );

    // Containers follow the applied order: the new one first, where the file has it.
    let reordered = k.file(
        "reordered.yaml",
        &DEPLOYMENT.replace(
            "      - name: web\n",
            "      - name: sidecar\n        image: envoy:1\n      - name: web\n",
        ),
    );
    k.expect_ok(&["apply", "--server-side", "-f", reordered.to_str().unwrap()]);
    let names: Vec<String> =
        k.expect_json(&["get", "deployment", "web"])["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect();
    assert_eq!(names, ["sidecar", "web"]);
    // A container without its key is refused as upstream's typed conversion refuses it.
    let keyless = k.file(
        "keyless.yaml",
        &DEPLOYMENT.replace("      - name: web\n        image", "      - image"),
    );
    let err = k.expect_failure(&[
        "apply",
        "--server-side",
        "--validate=false",
        "-f",
        keyless.to_str().unwrap(),
    ]);
    assert!(
        err.contains(
            r#"element 0: associative list with keys has an element that omits key field "name""#
        ),
        "{err}"
    );
}

#[test]
fn python_client_patch_calls() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let mut child = Command::new(python())
        .arg(workspace_root().join("tests/python/apply_client.py"))
        .arg(server.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > CALL_TIMEOUT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
        "the Python patch script failed ({}):\n{}{}\nserver stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
}

/// A map list's key an applied item leaves out is its default, as upstream's structured merge
/// names items (`protocol: TCP` of ports, the `default` the schema gives it): applying the same
/// Service twice leaves one port, whose field path names the defaulted protocol.
#[test]
fn applying_a_port_without_its_protocol_twice_keeps_one_port() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path()).with_call_timeout(CALL_TIMEOUT);
    let file = k.file(
        "service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{name: http, port: 80}]\n",
    );
    for _ in 0..2 {
        k.expect_ok(&["apply", "--server-side", "-f", file.to_str().unwrap()]);
    }
    let service = k.expect_json(&["get", "service/web"]);
    let ports = service["spec"]["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert_eq!(ports[0]["protocol"], "TCP");
    let applied = service["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["operation"] == "Apply")
        .unwrap();
    let ports_owned = &applied["fieldsV1"]["f:spec"]["f:ports"];
    assert!(
        ports_owned
            .get(r#"k:{"port":80,"protocol":"TCP"}"#)
            .is_some(),
        "{ports_owned}"
    );
}
