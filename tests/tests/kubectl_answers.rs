//! kube-apiserver's exact answers to requests it refuses, as every kubectl and the official
//! Python client surface them: a body of another kind or with a field of the wrong JSON type,
//! a method no route takes, selector syntax, continue tokens and resourceVersions it cannot
//! use, a uid precondition, a PUT that creates (or is a 404), preconditions of a delete, and a
//! create in a terminating namespace.
//!
//! Upstream mirrored (kubernetes/kubernetes): `transformDecodeError` in
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go` and the scheme's conversion
//! error; go-restful's 405 through `serviceErrorHandler`
//! (`staging/src/k8s.io/apiserver/pkg/server/handler.go`); `labels.Parse`
//! (`staging/src/k8s.io/apimachinery/pkg/labels/selector.go`, field errors since 1.21) and
//! `fields.ParseSelector`; `DecodeContinue` (`staging/src/k8s.io/apiserver/pkg/storage/
//! continue.go`); the watch cache's `ParseResourceVersion` error (500 without a reason,
//! kubernetes/kubernetes#139485); `Preconditions.Check` (`staging/src/k8s.io/apiserver/pkg/
//! storage/interfaces.go`) and `rest.BeforeDelete`; `AllowCreateOnUpdate` of
//! `pkg/registry/core/endpoint/strategy.go` and `configmap/strategy.go`; NamespaceLifecycle
//! (`plugin/pkg/admission/namespace/lifecycle/admission.go`).

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::time::Duration;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, expect_python_ok, kubectl_binaries};

/// Runs a call that must fail and returns kubectl's error text.
fn refused(k: &Kubectl<'_>, args: &[&str]) -> String {
    k.expect_failure(args).trim().to_owned()
}

/// The refusal of a Deployment whose `spec.replicas` is a string, sent as these bytes.
fn wrongly_typed_deployment(k: &Kubectl<'_>) -> String {
    let typed = k.file(
        "typed.json",
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":"3"}}"#,
    );
    let path = "/apis/apps/v1/namespaces/default/deployments";
    refused(k, &["create", "--raw", path, "-f", typed.to_str().unwrap()])
}

#[test]
fn every_kubectl_shows_upstreams_answers() {
    let server = KapiServer::start(&ServerOptions::release("1.36")).unwrap();
    let binaries = kubectl_binaries();
    assert!(!binaries.is_empty(), "no kubectl found");
    for (i, binary) in binaries.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(binary, &server, dir.path());
        let name = binary.display();
        let secret = k.file(
            "secret.json",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#,
        );
        let secret = secret.to_str().unwrap();
        let configmaps = "/api/v1/namespaces/default/configmaps";
        assert_eq!(
            refused(&k, &["create", "--raw", configmaps, "-f", secret]),
            "Error from server (BadRequest): Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion",
            "{name}"
        );
        assert_eq!(
            refused(
                &k,
                &["create", "--raw", &format!("{configmaps}/x"), "-f", secret]
            ),
            "Error from server (MethodNotAllowed): the server does not allow this method on the requested resource",
            "{name}"
        );
        let labels = refused(&k, &["get", "configmaps", "-l", "a!!b"]);
        assert!(
            labels.ends_with(
                "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"
            ),
            "{name}: {labels}"
        );
        let fields = refused(
            &k,
            &["get", "configmaps", "--field-selector", "metadata.name=a=b"],
        );
        assert!(
            fields.ends_with("invalid field selector: unescaped character in value: 61"),
            "{name}: {fields}"
        );
        assert_eq!(
            refused(
                &k,
                &["get", "--raw", &format!("{configmaps}?continue=e30=")]
            ),
            "Error from server (BadRequest): invalid continue token: continue key is not valid: illegal base64 data at input byte 3",
            "{name}"
        );
        assert_eq!(
            refused(
                &k,
                &["get", "--raw", &format!("{configmaps}?resourceVersion=abc")]
            ),
            "Error from server: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax",
            "{name}"
        );

        // `replace` is a PUT: its uid is a precondition; Endpoints are created, ConfigMaps not.
        let cm = format!("cm{i}");
        k.expect_ok(&["create", "configmap", &cm]);
        let stale = k.file(
            "stale.yaml",
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {cm}, uid: x}}\n"),
        );
        let conflict = refused(
            &k,
            &["replace", "--validate=false", "-f", stale.to_str().unwrap()],
        );
        assert!(
            conflict.starts_with(&format!(
                "Error from server (Conflict): error when replacing \"{}\": Operation cannot be fulfilled on configmaps \"{cm}\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/{cm}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: x, UID in object meta: ",
                stale.display()
            )),
            "{name}: {conflict}"
        );
        let endpoints = k.file(
            "endpoints.yaml",
            &format!("apiVersion: v1\nkind: Endpoints\nmetadata: {{name: ep{i}}}\n"),
        );
        let replaced = k.expect_ok(&[
            "replace",
            "--validate=false",
            "-f",
            endpoints.to_str().unwrap(),
        ]);
        assert_eq!(
            replaced.trim(),
            format!("endpoints/ep{i} replaced"),
            "{name}"
        );
        let missing = k.file(
            "missing.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nowhere}\n",
        );
        assert_eq!(
            refused(
                &k,
                &[
                    "replace",
                    "--validate=false",
                    "-f",
                    missing.to_str().unwrap()
                ]
            ),
            format!(
                "Error from server (NotFound): error when replacing \"{}\": configmaps \"nowhere\" not found",
                missing.display()
            ),
            "{name}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    // A field of the wrong JSON type: encoding/json's UnmarshalTypeError (sigs.k8s.io/json
    // since 1.23), innermost struct, field path and Go type.
    assert_eq!(
        wrongly_typed_deployment(&k),
        "Error from server (BadRequest): Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    // Types that decode themselves hand on their own errors, unwrapped: `ParseQuantity`'s
    // (k8s.io/apimachinery `pkg/api/resource/quantity.go`) and `time.Parse`'s
    // (`metav1.Time.UnmarshalJSON`).
    let pods = "/api/v1/namespaces/default/pods";
    let cases = [
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"two"}}}]}}"#,
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"memory":"1GB"}}}]}}"#,
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"memory":"512mi"}}}]}}"#,
            "unable to parse quantity's suffix",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q","creationTimestamp":"2026-11-27"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#,
            r#"parsing time "2026-11-27" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#,
        ),
    ];
    for (body, problem) in cases {
        let file = k.file("self-decoding.json", body);
        assert_eq!(
            refused(&k, &["create", "--raw", pods, "-f", file.to_str().unwrap()]),
            format!(
                "Error from server (BadRequest): Pod in version \"v1\" cannot be handled as a Pod: {problem}"
            )
        );
    }

    // A create in a terminating namespace.
    k.expect_ok(&["create", "namespace", "doomed"]);
    let held = k.file(
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, namespace: doomed, finalizers: [example.com/hold]}\n",
    );
    k.expect_ok(&["create", "-f", held.to_str().unwrap()]);
    k.expect_ok(&["delete", "namespace", "doomed", "--wait=false"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let output = k.run(&["create", "configmap", "late", "-n", "doomed"]);
        let text = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        if text.contains("Forbidden") || std::time::Instant::now() > deadline {
            assert_eq!(
                text,
                "error: failed to create configmap: configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// 1.20: the legacy scheme named from its GOPATH file, the label parser's plain errors before
/// field errors (kubernetes/kubernetes#97538), and json-iterator's type errors (its JSON
/// decoder until 1.23; the shape of kubernetes-client/python#1023's answer: the Go types and
/// field names from the top, the reader's operation, and the body's bytes around where it
/// stopped).
#[test]
fn release_1_20_answers_as_its_kube_apiserver() {
    let server = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    assert_eq!(
        wrongly_typed_deployment(&k),
        "Error from server (BadRequest): Deployment in version \"v1\" cannot be handled as a \
         Deployment: v1.Deployment.Spec: v1.DeploymentSpec.Replicas: readUint32: unexpected \
         character: \u{fffd}, error found in #10 byte of ...|eplicas\":\"3\"}}|..., bigger \
         context ...|ment\",\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":\"3\"}}|..."
    );
    // json-iterator v1.1.10's answers (its `iter*.go` readers and `reflect_*.go` decoders,
    // as k8s.io/apimachinery 1.20's `runtime/serializer/json` `caseSensitiveJsonIterator`
    // decodes into k8s.io/api 1.20's types; texts produced by that json-iterator decoding into
    // Go structs with those types' fields): self-decoding types through `unmarshalerDecoder`
    // (`Quantity.UnmarshalJSON`, `metav1.Time.UnmarshalJSON`), base64 bytes (`base64Codec`),
    // int32 overflow, a field of a struct embedded inline (`Volume`'s `VolumeSource`,
    // `ConfigMapVolumeSource`'s `LocalObjectReference`), and decoding that reads on past a
    // misfit (a `,` after it) and wraps the message again.
    let kinds = [
        ("Pod", "/api/v1/namespaces/default/pods"),
        ("Secret", "/api/v1/namespaces/default/secrets"),
        ("Deployment", "/apis/apps/v1/namespaces/default/deployments"),
        ("ConfigMap", "/api/v1/namespaces/default/configmaps"),
    ];
    let cases = [
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"two"}}}]}}"#,
            "v1.Pod.Spec: v1.PodSpec.Containers: []v1.Container: v1.Container.Resources: v1.ResourceRequirements.Limits: unmarshalerDecoder: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', error found in #10 byte of ...|cpu\":\"two\"}}}]}}|..., bigger context ...|\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"two\"}}}]}}|...",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"memory":"512mi"}}}]}}"#,
            "v1.Pod.Spec: v1.PodSpec.Containers: []v1.Container: v1.Container.Resources: v1.ResourceRequirements.Requests: unmarshalerDecoder: unable to parse quantity's suffix, error found in #10 byte of ...|y\":\"512mi\"}}}]}}|..., bigger context ...|age\":\"i\",\"resources\":{\"requests\":{\"memory\":\"512mi\"}}}]}}|...",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q","creationTimestamp":"2026-11-27"},"spec":{"containers":[{"name":"c","image":"i"}]}}"#,
            "v1.Pod.Spec: v1.PodSpec.ObjectMeta: v1.ObjectMeta.CreationTimestamp: unmarshalerDecoder: parsing time \"2026-11-27\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as \"T\", error found in #10 byte of ...|026-11-27\"},\"spec\":{|..., bigger context ...|data\":{\"name\":\"q\",\"creationTimestamp\":\"2026-11-27\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}|...",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i"}],"volumes":[{"name":"v","configMap":{"name":5}}]}}"#,
            "v1.Pod.Spec: v1.PodSpec.Volumes: []v1.Volume: v1.Volume.VolumeSource: ConfigMap: v1.ConfigMapVolumeSource.LocalObjectReference: Name: ReadString: expects \" or n, but found 5, error found in #10 byte of ...|:{\"name\":5}}]}}|..., bigger context ...|\"i\"}],\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":5}}]}}|...",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"password":"hunter2"}}"#,
            "v1.Secret.Data: decode base64: illegal base64 data at input byte 4, error found in #10 byte of ...|:\"hunter2\"}}|..., bigger context ...|etadata\":{\"name\":\"s\"},\"data\":{\"password\":\"hunter2\"}}|...",
        ),
        (
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":3000000000}}"#,
            "v1.Deployment.Spec: v1.DeploymentSpec.Replicas: ReadInt32: overflow: 3000000000, error found in #10 byte of ...|3000000000}}|..., bigger context ...|tadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":3000000000}}|...",
        ),
        (
            r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":1},"metadata":{"name":"x"}}"#,
            "v1.ConfigMap.ObjectMeta: v1.ObjectMeta.Data: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|ta\":{\"a\":1},\"metadat|..., bigger context ...|\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"a\":1},\"metadata\":{\"name\":\"x\"}}|...",
        ),
        (
            r#"{"apiVersion":"v1","data":{"a":1,"b":"2"},"kind":"ConfigMap","metadata":{"name":"y"}}"#,
            "v1.ConfigMap.ObjectMeta: v1.ObjectMeta.TypeMeta: Kind: Data: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|ta\":{\"a\":1,\"b\":\"2\"},|..., bigger context ...|{\"apiVersion\":\"v1\",\"data\":{\"a\":1,\"b\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"y|...",
        ),
        (
            r#"{"apiVersion":"v1","data":{"a":"1","b":true},"kind":"ConfigMap","metadata":{"labels":{"x":"<y>"},"name":"y"}}"#,
            "v1.ConfigMap.Data: ReadString: expects \" or n, but found t, error found in #10 byte of ...|:\"1\",\"b\":true},\"kind|..., bigger context ...|{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"b\":true},\"kind\":\"ConfigMap\",\"metadata\":{\"labels\":{\"x\":|...",
        ),
        (
            r#"{"apiVersion":"v1","data":{"a":1.5},"kind":"ConfigMap","metadata":{"name":"y"}}"#,
            "v1.ConfigMap.Data: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|ta\":{\"a\":1.5},\"kind\"|..., bigger context ...|{\"apiVersion\":\"v1\",\"data\":{\"a\":1.5},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"y\"}}|...",
        ),
        // Go's names, not OpenAPI's: a slice of a named string type, a field named apart from
        // its JSON name (k8s.io/api 1.20 `core/v1/types.go`).
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"c","image":"i","securityContext":{"capabilities":{"add":[1]}}}]}}"#,
            "v1.Pod.Spec: v1.PodSpec.Containers: []v1.Container: v1.Container.SecurityContext: v1.SecurityContext.Capabilities: v1.Capabilities.Add: []v1.Capability: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|:{\"add\":[1]}}}]}}|..., bigger context ...|e\":\"i\",\"securityContext\":{\"capabilities\":{\"add\":[1]}}}]}}|...",
        ),
        (
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"serviceAccount":5,"containers":[{"name":"c","image":"i"}]}}"#,
            "v1.Pod.Spec: v1.PodSpec.Containers: []v1.Container: DeprecatedServiceAccount: ReadString: expects \" or n, but found 5, error found in #10 byte of ...|Account\":5,\"containe|..., bigger context ...|\"metadata\":{\"name\":\"q\"},\"spec\":{\"serviceAccount\":5,\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}|...",
        ),
    ];
    for (body, problem) in cases {
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        let kind = value["kind"].as_str().unwrap();
        let path = kinds.iter().find(|(k, _)| *k == kind).unwrap().1;
        let file = k.file("jsoniter.json", body);
        assert_eq!(
            refused(&k, &["create", "--raw", path, "-f", file.to_str().unwrap()]),
            format!(
                "Error from server (BadRequest): {kind} in version \"v1\" cannot be handled as a {kind}: {problem}"
            ),
            "{body}"
        );
    }
    let pod = k.file("pod.json", r#"{"apiVersion":"v1","kind":"pod"}"#);
    assert_eq!(
        refused(
            &k,
            &[
                "create",
                "--raw",
                "/api/v1/namespaces/default/configmaps",
                "-f",
                pod.to_str().unwrap()
            ]
        ),
        "Error from server (BadRequest): pod in version \"v1\" cannot be handled as a ConfigMap: no kind \"pod\" is registered for version \"v1\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\""
    );
    let labels = refused(&k, &["get", "configmaps", "-l", "-a"]);
    assert!(
        labels.ends_with("unable to parse requirement: invalid label key \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        "{labels}"
    );
}

/// The same answers as the Python client's `ApiException` carries them: status, reason,
/// message and causes.
const PYTHON: &str = r#"
import json, sys, time
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
release = sys.argv[2]
v1 = client.CoreV1Api()

def refused(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except ApiException as e:
        return e.status, json.loads(e.body)
    raise AssertionError(f"accepted: {args} {kwargs}")

status, body = refused(v1.list_namespaced_config_map, "default", label_selector="a=b=c")
assert status == 400 and body["message"] == "found '=', expected: ',' or 'end of string'", body
status, body = refused(v1.list_namespaced_config_map, "default", _continue="e30")
assert status == 400, body
assert body["message"] == ("invalid continue token: continue key is not valid: "
                           "server does not recognize this encoding version"), body
status, body = refused(v1.list_namespaced_config_map, "default", resource_version="abc")
assert status == 500 and "reason" not in body, body
assert body["message"] == ('resourceVersion: Invalid value: "abc": '
                           'strconv.ParseUint: parsing "abc": invalid syntax'), body

# The client sends json.dumps of the body: ", " and ": " between tokens.
status, body = refused(v1.create_namespaced_config_map, "default",
                       {"metadata": {"name": "typed"}, "data": {"a": 1}})
assert status == 400, body
if release != "1.20":
    assert body["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"), body
else:
    assert body["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'v1.ConfigMap.Data: ReadString: expects " or n, but found 1, error found in #10 byte '
        'of ...|": {"a": 1}}|..., bigger context ...|{"metadata": {"name": "typed"}, "data": '
        '{"a": 1}}|...'), body

made = v1.create_namespaced_config_map("default", {"metadata": {"name": "p"}})
status, body = refused(v1.delete_namespaced_config_map, "p", "default",
                       body={"preconditions": {"uid": "x"}})
assert status == 409 and body["details"] == {"name": "p", "kind": "ConfigMap"}, body
assert body["message"] == (
    f'Operation cannot be fulfilled on ConfigMap "p": the UID in the precondition (x) does not '
    f"match the UID in record ({made.metadata.uid}). The object might have been deleted and "
    "then recreated"), body
status, body = refused(v1.replace_namespaced_config_map, "absent", "default",
                       {"metadata": {"name": "absent"}})
assert status == 404 and body["message"] == 'configmaps "absent" not found', body
created = v1.replace_namespaced_endpoints("present", "default", {"metadata": {"name": "present"}})
assert created.metadata.uid, created

v1.create_namespace({"metadata": {"name": "ending"}})
v1.create_namespaced_config_map("ending", {"metadata": {"name": "held",
                                                       "finalizers": ["example.com/hold"]}})
v1.delete_namespace("ending")
for _ in range(100):
    try:
        v1.create_namespaced_config_map("ending", {"metadata": {"name": "late"}})
        v1.delete_namespaced_config_map("late", "ending")
    except ApiException as e:
        assert e.status == 403, e.body
        body = json.loads(e.body)
        break
    time.sleep(0.1)
assert body["details"]["causes"] == [{"reason": "NamespaceTerminating",
    "message": "namespace ending is being terminated", "field": "metadata.namespace"}], body
print("ok")
"#;

#[test]
fn python_client_sees_upstreams_answers() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        expect_python_ok(&server, PYTHON, release);
    }
}
