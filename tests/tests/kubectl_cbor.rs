//! kubectl 1.32 and newer speaking CBOR to a server with `CBORServingAndStorage` on.
//!
//! client-go 1.32 has two alpha gates read from the environment (`KUBE_FEATURE_<name>`,
//! client-go `features/envvar.go` and `features/known_features.go`): `ClientsAllowCBOR` and
//! `ClientsPreferCBOR`. With both on, kubectl's dynamic client (the one `kubectl wait` and the
//! wait of `kubectl delete` use) asks `Accept: application/json;q=0.9,application/cbor;q=1`
//! and reads `application/cbor` answers and `application/cbor-seq` watches; its typed clients
//! keep protobuf and its resource builder JSON. The server then answers the dynamic client's
//! lists, gets and watches in CBOR; with the gate off (1.34's default) the same kubectl gets
//! JSON, its second choice. 1.20 and 1.28 do not know the gate and refuse to start with it, as
//! kube-apiserver refuses an unknown gate.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::path::PathBuf;
use std::time::Duration;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, kubectl_binaries_since};

/// kubectl binaries that have client-go's CBOR gates (1.32 and newer), by their `kubectl.1.N`
/// names.
fn cbor_kubectls() -> Vec<PathBuf> {
    kubectl_binaries_since(32)
}

fn cbor_server(gate: bool) -> KapiServer {
    let mut options = ServerOptions::release("1.34");
    if gate {
        options
            .args
            .push("--feature-gates=CBORServingAndStorage=true".to_owned());
    }
    KapiServer::start(&options).unwrap()
}

/// `kubectl <args>` with client-go's CBOR gates on and `-v=8`: its exit, stdout and the
/// request log (stderr).
fn with_cbor_client(k: &Kubectl<'_>, args: &[&str]) -> (bool, String, String) {
    let k = k
        .clone()
        .with_env("KUBE_FEATURE_ClientsAllowCBOR", "true")
        .with_env("KUBE_FEATURE_ClientsPreferCBOR", "true");
    let mut args = args.to_vec();
    args.push("-v=8");
    let output = k.run(&args);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A wait that sees an object change while it watches: the list (or, from kubectl 1.35, the
/// initial events) and the watch are answered in CBOR, the watch as a CBOR sequence, and kubectl reads the change (a string) and a
/// ConfigMap's `binaryData` (bytes in tag 22) from them.
#[test]
fn kubectl_waits_over_cbor() {
    let kubectls = cbor_kubectls();
    // The test image carries kubectl 1.32 and newer: without them this test would prove nothing.
    assert!(!kubectls.is_empty(), "no kubectl.1.32 or newer on PATH");
    let server = cbor_server(true);
    let dir = tempfile::tempdir().unwrap();
    for (i, binary) in kubectls.iter().enumerate() {
        let k = Kubectl::new(binary, &server, dir.path());
        let ns = format!("cbor-{i}");
        k.expect_ok(&["create", "namespace", &ns]);
        let bin = dir.path().join("bin");
        std::fs::write(&bin, [0u8, 1, 0xfe, 0xff]).unwrap();
        k.expect_ok(&[
            "create",
            "configmap",
            "c",
            "-n",
            &ns,
            "--from-literal=a=before",
            &format!("--from-file=bin={}", bin.display()),
        ]);
        // The change comes while the wait watches.
        let patcher = {
            let binary = binary.clone();
            let kubeconfig = server.kubeconfig().to_path_buf();
            let ns = ns.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(1500));
                std::process::Command::new(binary)
                    .arg("--kubeconfig")
                    .arg(kubeconfig)
                    .args(["patch", "configmap", "c", "-n", &ns, "--type=merge"])
                    .args(["-p", r#"{"data":{"a":"after"}}"#])
                    .output()
                    .unwrap()
            })
        };
        let (ok, out, log) = with_cbor_client(
            &k,
            &[
                "wait",
                "-n",
                &ns,
                "--for=jsonpath={.data.a}=after",
                "configmap/c",
                "--timeout=20s",
            ],
        );
        let patched = patcher.join().unwrap();
        assert!(patched.status.success(), "{patched:?}");
        assert!(ok, "{}: {out}\n{log}", binary.display());
        assert!(out.contains("configmap/c condition met"), "{out}");
        assert!(
            log.contains("Accept: application/json;q=0.9,application/cbor;q=1"),
            "{log}"
        );
        assert!(log.contains("Content-Type: application/cbor-seq"), "{log}");
        // client-go 1.35 turns `WatchListClient` on by default (features/known_features.go):
        // its reflector starts with a watch that sends the initial state as events
        // (`sendInitialEvents=true`, ending in a bookmark) instead of a list, so only the
        // CBOR sequence carries the object; older ones list it in CBOR first.
        if k.client_minor().unwrap() >= 35 {
            assert!(log.contains("sendInitialEvents=true"), "{log}");
            assert!(
                log.contains("received the bookmark that marks the end of initial events"),
                "{log}"
            );
        } else {
            assert!(log.contains("Content-Type: application/cbor\n"), "{log}");
        }
        // bytes read from CBOR's tag 22 byte string.
        let (ok, out, log) = with_cbor_client(
            &k,
            &[
                "wait",
                "-n",
                &ns,
                "--for=jsonpath={.binaryData.bin}",
                "configmap/c",
                "--timeout=10s",
            ],
        );
        assert!(ok && out.contains("condition met"), "{out}\n{log}");
        // The wait of a delete reads the object in CBOR until it is gone.
        let (ok, out, log) =
            with_cbor_client(&k, &["delete", "configmap", "c", "-n", &ns, "--wait=true"]);
        assert!(ok, "{out}\n{log}");
        assert!(out.contains("deleted"), "{out}");
        assert!(log.contains("Content-Type: application/cbor"), "{log}");
    }
}

/// With the gate off, the same client gets JSON: CBOR is not among the server's types, so the
/// client's second choice wins.
#[test]
fn kubectl_falls_back_to_json_without_the_gate() {
    let binary = cbor_kubectls()
        .into_iter()
        .next()
        .expect("no kubectl.1.32 or newer on PATH");
    let server = cbor_server(false);
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::new(&binary, &server, dir.path());
    k.expect_ok(&["create", "configmap", "c", "--from-literal=a=b"]);
    let (ok, out, log) = with_cbor_client(
        &k,
        &[
            "wait",
            "--for=jsonpath={.data.a}=b",
            "configmap/c",
            "--timeout=10s",
        ],
    );
    assert!(ok && out.contains("condition met"), "{out}\n{log}");
    assert!(!log.contains("Content-Type: application/cbor"), "{log}");
}

/// `--feature-gates` as kube-apiserver's: a gate the release does not have stops the start with
/// upstream's message (k8s.io/component-base `featuregate/feature_gate.go`).
#[test]
fn releases_without_the_gate_refuse_it() {
    for release in ["1.20", "1.28"] {
        let mut options = ServerOptions::release(release);
        options
            .args
            .push("--feature-gates=CBORServingAndStorage=true".to_owned());
        let err = KapiServer::start(&options).unwrap_err();
        assert!(
            err.contains(
                "invalid argument \"CBORServingAndStorage=true\" for \"--feature-gates\" flag: unrecognized feature gate: CBORServingAndStorage"
            ),
            "{release}: {err}"
        );
    }
}
