//! Writes a real cluster refuses are refused, with upstream's 422 `Invalid` and its messages:
//! the checks of `pkg/apis/<group>/validation` (ConfigMap and Secret keys, sizes and
//! immutability; workload selectors, counts and immutable selectors; Service names and ports;
//! containers) and of object metadata (`k8s.io/apimachinery/pkg/api/validation`), on create,
//! update, patch, apply and dry run, worded as each release words them. Seen through kubectl and
//! the official Python client.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::Command;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, python};

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx}]
";

/// kubectl prints a 422 as `The <Kind> "<name>" is invalid: <causes>` (its generators as
/// `failed to create ...: <Kind> "<name>" is invalid: ...`).
fn assert_refused(stderr: &str, kind_and_name: &str, cause: &str) {
    assert!(
        stderr.contains(&format!("{kind_and_name} is invalid")) && stderr.contains(cause),
        "expected `{cause}` in:\n{stderr}"
    );
}

#[test]
fn kubectl_sees_upstream_refusals_in_each_release() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let json_values = release >= "1.34";

        // ValidatePodTemplateSpecForReplicaSet: the template must carry the selected labels.
        let mismatched = k.file(
            "mismatch.yaml",
            &DEPLOYMENT.replace("labels: {app: web}", "labels: {app: api}"),
        );
        let stderr = k.expect_failure(&[
            "create",
            "--validate=false",
            "-f",
            mismatched.to_str().unwrap(),
        ]);
        let labels = if json_values {
            r#"{"app":"api"}"#
        } else {
            r#"map[string]string{"app":"api"}"#
        };
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            &format!(
                "spec.template.metadata.labels: Invalid value: {labels}: `selector` does not match template `labels`"
            ),
        );
        // A dry run is checked as the real write would be.
        let stderr = k.expect_failure(&[
            "create",
            "--validate=false",
            "--dry-run=server",
            "-f",
            mismatched.to_str().unwrap(),
        ]);
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            "`selector` does not match template `labels`",
        );

        let file = k.file("deployment.yaml", DEPLOYMENT);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        // ValidateNonnegativeField, through a patch.
        let stderr = k.expect_failure(&[
            "patch",
            "deployment/web",
            "-p",
            r#"{"spec":{"replicas":-1}}"#,
        ]);
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        );
        // The apps strategies' ValidateUpdate: the selector never changes.
        let stderr = k.expect_failure(&[
            "patch", "deployment/web", "-p",
            r#"{"spec":{"selector":{"matchLabels":{"app":"web2"}},"template":{"metadata":{"labels":{"app":"web2"}}}}}"#,
        ]);
        let selector = if json_values {
            r#"{"matchLabels":{"app":"web2"}}"#
        } else {
            r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"web2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        };
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            &format!("spec.selector: Invalid value: {selector}: field is immutable"),
        );
        // A valid change passes, through server-side apply too.
        k.expect_ok(&["scale", "deployment/web", "--replicas=3"]);
        let applied = k.file(
            "applied.yaml",
            &DEPLOYMENT.replace("image: nginx", "image: \"\""),
        );
        let stderr = k.expect_failure(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--validate=false",
            "-f",
            applied.to_str().unwrap(),
        ]);
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            "spec.template.spec.containers[0].image: Required value",
        );

        // ValidateConfigMapUpdate: an immutable ConfigMap keeps its data.
        k.expect_ok(&["create", "configmap", "frozen", "--from-literal=k=v"]);
        k.expect_ok(&["patch", "configmap/frozen", "-p", r#"{"immutable":true}"#]);
        let stderr =
            k.expect_failure(&["patch", "configmap/frozen", "-p", r#"{"data":{"k":"w"}}"#]);
        assert_refused(
            &stderr,
            r#"ConfigMap "frozen""#,
            "data: Forbidden: field is immutable when `immutable` is set",
        );

        // ValidateServiceName: a DNS-1035 label, so not starting with a digit.
        let stderr = k.expect_failure(&["create", "service", "clusterip", "1web", "--tcp=80"]);
        assert_refused(
            &stderr,
            r#"Service "1web""#,
            "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        );
        // ValidateRBACName: path segments, so the `system:` names of upstream's roles are fine.
        k.expect_ok(&[
            "create",
            "clusterrole",
            "system:kapi-test",
            "--verb=get",
            "--resource=pods",
        ]);
    }
}

/// The 422 bodies as the Python client receives them: code, reason, message and causes.
const SCRIPT: &str = r#"
import base64
import json
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
release = sys.argv[2]
v1 = client.CoreV1Api()

def refused(create, body):
    try:
        create("default", body)
    except ApiException as e:
        assert e.status == 422, (e.status, e.body)
        status = json.loads(e.body)
        assert status["reason"] == "Invalid", status
        return status
    raise AssertionError(f"accepted: {body}")

# ValidateConfigMap: keys, a key in both maps, and the 1 MiB total reported at `[]`.
status = refused(v1.create_namespaced_config_map, {
    "metadata": {"name": "keys"}, "data": {"a b": "x", "k": "v"},
    "binaryData": {"k": base64.b64encode(b"v").decode()}})
causes = [(c["field"], c["reason"]) for c in status["details"]["causes"]]
assert causes == [("data[a b]", "FieldValueInvalid"), ("data[k]", "FieldValueInvalid")], causes
assert status["message"].startswith('ConfigMap "keys" is invalid: [data[a b]: Invalid value: "a b": '), status
assert status["message"].endswith(', data[k]: Invalid value: "k": duplicate of key present in binaryData]'), status
assert status["details"] == {**status["details"], "name": "keys", "kind": "ConfigMap"}, status

status = refused(v1.create_namespaced_config_map, {
    "metadata": {"name": "big"}, "data": {"a": "x" * (1024 * 1024), "b": "y"}})
worded = "must have at most" if release < "1.32" else "may not be more than"
assert status["message"] == f'ConfigMap "big" is invalid: []: Too long: {worded} 1048576 bytes', status

# ValidateSecret: the keys a type needs; ValidateSecretUpdate: the type never changes.
status = refused(v1.create_namespaced_secret, {
    "metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
    "data": {"tls.crt": base64.b64encode(b"c").decode()}})
assert status["message"] == 'Secret "tls" is invalid: data[tls.key]: Required value', status
v1.create_namespaced_secret("default", {"metadata": {"name": "plain"}, "stringData": {"k": "v"}})
try:
    v1.patch_namespaced_secret("plain", "default", {"type": "example.com/custom"})
    raise AssertionError("the type changed")
except ApiException as e:
    assert e.status == 422, e.body
    assert json.loads(e.body)["message"] == (
        'Secret "plain" is invalid: type: Invalid value: "example.com/custom": field is immutable'), e.body

# ValidateObjectMeta: labels are checked at `metadata.labels`, the bad value shown.
status = refused(v1.create_namespaced_config_map, {
    "metadata": {"name": "labels", "labels": {"app": "bad value!"}}})
assert status["details"]["causes"] == [{
    "reason": "FieldValueInvalid", "field": "metadata.labels",
    "message": 'Invalid value: "bad value!": a valid label must be an empty string or consist of '
               "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
               "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
               "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}], status

# ValidatePodSpec: each container's problems at its full path.
status = refused(v1.create_namespaced_pod, {
    "metadata": {"name": "pod"},
    "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "web"},
                            {"name": "side", "image": "x", "ports": [{"containerPort": 70000}]}]}})
fields = sorted(c["field"] for c in status["details"]["causes"])
assert fields == ["spec.containers[1].image", "spec.containers[1].name",
                  "spec.containers[2].ports[0].containerPort"], status
print("ok")
"#;

#[test]
fn python_client_receives_upstream_invalid_statuses() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let output = Command::new(python())
            .arg("-c")
            .arg(SCRIPT)
            .arg(server.kubeconfig())
            .arg(release)
            .output()
            .unwrap();
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
            "the Python validation script failed in {release} ({}):\n{}{}\nserver stderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            server.stderr()
        );
    }
}
