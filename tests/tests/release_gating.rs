//! Release gating as kubectl and the official Python client see it: each release serves the
//! group-versions its kube-apiserver serves by default, `--runtime-config` switches them with
//! upstream's syntax and errors, `/version` is a real patch release's, and the API features
//! that are off or not yet there in a release behave as upstream's do.
//!
//! The facts come from upstream's `DefaultAPIResourceConfigSource` (`pkg/controlplane/
//! instance.go`: alpha versions always off; since 1.24, KEP-3136, betas introduced later off,
//! 1.28 keeping flowcontrol's v1beta2 and v1beta3 on as `legacyBetaEnabledByDefaultResources`),
//! k8s.io/apiserver's feature gates (`pkg/features/kube_features.go`) and the releases'
//! `/version` answers; `specs/gating/README.md` lists them.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::Command;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, python};
use serde_json::Value;

fn api_versions(k: &Kubectl<'_>) -> Vec<String> {
    k.expect_ok(&["api-versions"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Per release: group-versions served, and group-versions of the release not served.
const FACTS: [(&str, &[&str], &[&str]); 4] = [
    (
        // 1.20: every beta on, the seven alpha group-versions off.
        "1.20",
        &[
            "batch/v1beta1",
            "autoscaling/v2beta2",
            "policy/v1beta1",
            "extensions/v1beta1",
            "flowcontrol.apiserver.k8s.io/v1beta1",
            "discovery.k8s.io/v1beta1",
            "apiextensions.k8s.io/v1beta1",
        ],
        &[
            "batch/v2alpha1",
            "rbac.authorization.k8s.io/v1alpha1",
            "storage.k8s.io/v1alpha1",
            "scheduling.k8s.io/v1alpha1",
            "node.k8s.io/v1alpha1",
            "flowcontrol.apiserver.k8s.io/v1alpha1",
            "internal.apiserver.k8s.io/v1alpha1",
        ],
    ),
    (
        "1.28",
        &[
            "flowcontrol.apiserver.k8s.io/v1beta2",
            "flowcontrol.apiserver.k8s.io/v1beta3",
            "admissionregistration.k8s.io/v1",
        ],
        &[
            "admissionregistration.k8s.io/v1beta1",
            "admissionregistration.k8s.io/v1alpha1",
            "authentication.k8s.io/v1beta1",
            "resource.k8s.io/v1alpha2",
            "networking.k8s.io/v1alpha1",
            "certificates.k8s.io/v1alpha1",
        ],
    ),
    (
        "1.34",
        &["resource.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1"],
        &[
            "resource.k8s.io/v1beta1",
            "resource.k8s.io/v1beta2",
            "networking.k8s.io/v1beta1",
            "storage.k8s.io/v1beta1",
            "coordination.k8s.io/v1beta1",
            "certificates.k8s.io/v1beta1",
            "admissionregistration.k8s.io/v1beta1",
            "storagemigration.k8s.io/v1alpha1",
        ],
    ),
    (
        "1.36",
        &["resource.k8s.io/v1", "storage.k8s.io/v1"],
        &[
            "storagemigration.k8s.io/v1beta1",
            "scheduling.k8s.io/v1alpha2",
            "storage.k8s.io/v1beta1",
            "resource.k8s.io/v1beta2",
            "coordination.k8s.io/v1alpha2",
        ],
    ),
];

/// The `/version` of the patch release each release reports: kube-apiserver v1.20.15, v1.28.3
/// and v1.36.1 as they answer, and v1.34.1's build as its kubectl reports it.
const VERSIONS: [(&str, &str, &str, &str); 4] = [
    (
        "1.20",
        "v1.20.15",
        "8f1e5bf0b9729a899b8df86249b56e2c74aebc55",
        "go1.15.15",
    ),
    (
        "1.28",
        "v1.28.3",
        "a8a1abc25cad87333840cd7d54be2efaf31a3177",
        "go1.20.10",
    ),
    (
        "1.34",
        "v1.34.1",
        "93248f9ae092f571eb870b7664c534bfc7d00f03",
        "go1.24.6",
    ),
    (
        "1.36",
        "v1.36.1",
        "756939600b9a7180fc2df6550a4585b638875e67",
        "go1.26.2",
    ),
];

#[test]
fn kubectl_sees_each_releases_default_apis_and_version() {
    for ((release, on, off), (_, git_version, commit, go)) in FACTS.iter().zip(VERSIONS) {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let versions = api_versions(&k);
        for gv in *on {
            assert!(versions.iter().any(|v| v == gv), "{release}: {gv} missing");
        }
        for gv in *off {
            assert!(!versions.iter().any(|v| v == gv), "{release}: {gv} served");
        }
        // No alpha group-version of the built-ins is served by default.
        assert!(
            versions
                .iter()
                .all(|v| !v.contains("alpha") || v.starts_with("widgets.kapi.dev/")),
            "{release}: {versions:?}"
        );

        let version = k.expect_json(&["version", "-o", "json"]);
        let server_version = &version["serverVersion"];
        assert_eq!(server_version["gitVersion"], git_version, "{release}");
        assert_eq!(server_version["gitCommit"], commit, "{release}");
        assert_eq!(server_version["goVersion"], go, "{release}");
        assert_eq!(server_version["gitTreeState"], "clean", "{release}");
        assert_eq!(server_version["compiler"], "gc", "{release}");
        assert_eq!(
            server_version["minor"],
            release.trim_start_matches("1."),
            "{release}"
        );
        // A disabled group-version has no routes: 404 as for any unknown path.
        let missing = off[0];
        let raw = k.expect_failure(&["get", "--raw", &format!("/apis/{missing}")]);
        assert!(raw.contains("NotFound"), "{release}: {raw}");
    }
}

/// Resources follow their group-versions: ValidatingAdmissionPolicy is only in v1beta1 and
/// v1alpha1 in 1.28, so neither discovery nor kubectl knows it; in 1.34 it is GA, and
/// MutatingAdmissionPolicy (v1beta1 and v1alpha1 only) is not served.
#[test]
fn kubectl_api_resources_follow_the_group_versions() {
    for (release, has_vap) in [("1.28", false), ("1.34", true)] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let names = k.expect_ok(&[
            "api-resources",
            "--api-group=admissionregistration.k8s.io",
            "-o",
            "name",
        ]);
        assert_eq!(
            names.contains("validatingadmissionpolicies"),
            has_vap,
            "{release}: {names}"
        );
        assert!(!names.contains("mutatingadmissionpolicies"), "{names}");
        assert!(names.contains("validatingwebhookconfigurations"), "{names}");
        if !has_vap {
            let refused = k.expect_failure(&["get", "validatingadmissionpolicies"]);
            assert!(
                refused.contains("doesn't have a resource type"),
                "{release}: {refused}"
            );
        }
    }
}

/// `--runtime-config` with upstream's syntax: `api/all=false` then the group-versions wanted,
/// `v1` for the core group; discovery, OpenAPI and routes follow.
#[test]
fn runtime_config_switches_group_versions() {
    let server = KapiServer::start(&ServerOptions {
        kube_version: Some("1.28".to_owned()),
        args: vec![
            "--runtime-config=api/all=false,v1=true,apps/v1=true".to_owned(),
            "--runtime-config".to_owned(),
            "admissionregistration.k8s.io/v1beta1=true,api/alpha=false".to_owned(),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    assert_eq!(
        api_versions(&k),
        ["admissionregistration.k8s.io/v1beta1", "apps/v1", "v1"]
    );
    k.expect_ok(&["create", "deployment", "web", "--image=nginx"]);
    k.expect_ok(&["get", "deployments", "web"]);
    k.expect_ok(&["get", "validatingadmissionpolicies"]);
    let refused = k.expect_failure(&["get", "jobs"]);
    assert!(
        refused.contains("doesn't have a resource type"),
        "{refused}"
    );
    let v3: Value = serde_json::from_str(&k.expect_ok(&["get", "--raw", "/openapi/v3"])).unwrap();
    let documents: Vec<&String> = v3["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        documents,
        [
            "api/v1",
            "apis/admissionregistration.k8s.io/v1beta1",
            "apis/apps/v1"
        ]
    );
}

/// A `--runtime-config` kube-apiserver refuses stops the server with upstream's message.
#[test]
fn a_bad_runtime_config_is_refused_with_upstreams_message() {
    let cases = [
        ("api/all=false", "invalid key with only api/all=false"),
        (
            "nosuch.example.com/v1=true",
            "unknown api groups nosuch.example.com",
        ),
        (
            "apps/v7=true",
            "group version apps/v7 that has not been registered",
        ),
        (
            "batch/v1=perhaps",
            "invalid value of batch/v1: perhaps, err: strconv.ParseBool: parsing \"perhaps\": invalid syntax",
        ),
    ];
    for (flag, message) in cases {
        let err = KapiServer::start(&ServerOptions {
            args: vec![format!("--runtime-config={flag}")],
            ..ServerOptions::default()
        })
        .unwrap_err();
        assert!(
            err.contains(&format!("invalid --runtime-config: {message}")),
            "{flag}: {err}"
        );
    }
}

/// The Python client against every release: what each release makes of `sendInitialEvents`
/// (WatchList: not in 1.20, alpha and off in 1.28 with `ValidateListOptions`' refusal, on from
/// 1.34) and of unknown fields (ServerSideFieldValidation: not in 1.20, where they are dropped
/// without a warning and `fieldValidation` is ignored; on since 1.25); its `VersionApi`.
const PYTHON_SCRIPT: &str = r#"
import json
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
release = sys.argv[2]
v1 = client.CoreV1Api()

info = client.VersionApi().get_code()
assert info.git_version.startswith("v" + release + "."), info
assert info.compiler == "gc" and len(info.git_commit) == 40, info

loose = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "loose"},
         "data": {"k": "v"}, "bogus": 1}
if release == "1.20":
    _, status, headers = v1.create_namespaced_config_map_with_http_info(
        "default", loose, field_validation="Strict")
    assert status == 201, status
    assert "Warning" not in headers, headers
else:
    try:
        v1.create_namespaced_config_map("default", loose, field_validation="Strict")
        raise AssertionError("Strict let an unknown field through")
    except ApiException as e:
        assert e.status == 400, e
    _, status, headers = v1.create_namespaced_config_map_with_http_info("default", loose)
    assert status == 201, status
    assert 'unknown field \\"bogus\\"' in headers.get("Warning", ""), headers
assert v1.read_namespaced_config_map("loose", "default").data == {"k": "v"}

def initial_watch():
    return v1.list_namespaced_config_map(
        "default", watch=True, send_initial_events=True,
        resource_version_match="NotOlderThan", allow_watch_bookmarks=True,
        timeout_seconds=1, _preload_content=False)

if release == "1.28":
    try:
        initial_watch()
        raise AssertionError("sendInitialEvents was accepted")
    except ApiException as e:
        assert e.status == 422, e
        assert json.loads(e.body)["message"] == (
            'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: '
            'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'
        ), e.body
elif release == "1.20":
    # resourceVersionMatch was refused on watches before WatchList.
    try:
        initial_watch()
        raise AssertionError("resourceVersionMatch was accepted on a watch")
    except ApiException as e:
        assert e.status == 422, e
        assert "resourceVersionMatch is forbidden for watch" in json.loads(e.body)["message"], e.body
else:
    events = [json.loads(line) for line in initial_watch().read().splitlines() if line.strip()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "ADDED", kinds
    ends = [e for e in events if e["type"] == "BOOKMARK" and
            e["object"]["metadata"].get("annotations", {}).get("k8s.io/initial-events-end") == "true"]
    assert ends, events
print("ok")
"#;

#[test]
fn python_client_sees_each_releases_features() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let output = Command::new(python())
            .arg("-c")
            .arg(PYTHON_SCRIPT)
            .arg(server.kubeconfig())
            .arg(release)
            .output()
            .unwrap();
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
            "{release}: the Python script failed ({}):\n{}{}\nserver stderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            server.stderr()
        );
    }
}
