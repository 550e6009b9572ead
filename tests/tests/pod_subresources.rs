//! A pod's subresources that act on it as a cluster's components and tools use them: a
//! scheduler's `binding`, `kubectl drain`'s `eviction` (held by PodDisruptionBudgets),
//! `kubectl debug`'s `ephemeralcontainers` and the in-place `resize` of `kubectl patch
//! --subresource=resize`, with kubectl and the official Python client, in the releases that
//! serve each. Upstream's behaviour comes from `pkg/registry/core/pod/storage/storage.go`
//! (`BindingREST`, `ResizeREST`), `eviction.go` (`EvictionREST`) and
//! `pkg/registry/core/pod/strategy.go` with `ValidatePodEphemeralContainersUpdate` and
//! `ValidatePodResize`.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::path::PathBuf;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, expect_python_ok, kubectl_binaries_since};
use serde_json::{Value, json};

fn pod(k: &Kubectl<'_>, name: &str) -> Value {
    k.expect_json(&["get", "pod", name])
}

/// POSTs `body` to `path` with `kubectl create --raw`: its output, or its error text.
fn post(k: &Kubectl<'_>, path: &str, body: &Value) -> Result<String, String> {
    let file = k.file("body.json", &body.to_string());
    k.ok(&["create", "--raw", path, "-f", file.to_str().unwrap()])
}

/// A JSON patch of pod `web` through `subresource` that must be refused: kubectl's error text.
fn refused_json_patch(k: &Kubectl<'_>, subresource: &str, ops: &str) -> String {
    let sub = format!("--subresource={subresource}");
    k.expect_failure(&["patch", "pod", "web", &sub, "--type=json", "-p", ops])
}

fn running_ready(k: &Kubectl<'_>, name: &str) {
    k.expect_ok(&[
        "patch",
        "pod",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
}

#[test]
fn a_binding_puts_a_pod_on_a_node_once() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        k.expect_ok(&["run", "web", "--image=nginx"]);
        let binding = json!({"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": "web", "annotations": {"scheduled-by": "test"}},
            "target": {"kind": "Node", "name": "node-1"}});
        // BindingREST.Create answers a success Status; the create handler gives it code 201.
        let answer: Value = serde_json::from_str(
            &post(&k, "/api/v1/namespaces/default/pods/web/binding", &binding).unwrap(),
        )
        .unwrap();
        assert_eq!(
            answer,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
            "{release}"
        );
        // setPodHostAndAnnotations: the node, the annotations and PodScheduled true.
        let bound = pod(&k, "web");
        assert_eq!(bound["spec"]["nodeName"], "node-1", "{release}");
        assert_eq!(
            bound["metadata"]["annotations"]["scheduled-by"], "test",
            "{release}"
        );
        let scheduled = bound["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "PodScheduled")
            .cloned()
            .unwrap();
        assert_eq!(scheduled["status"], "True", "{release}");
        assert!(scheduled["lastTransitionTime"].is_string(), "{release}");
        // A bound pod is a 409 on pods/binding; the older `bindings` collection binds too,
        // and its target is checked (ValidatePodBinding, answered as a plain 500).
        let again = post(&k, "/api/v1/namespaces/default/bindings", &binding).unwrap_err();
        assert!(
            again.contains(
                r#"Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "node-1""#
            ),
            "{release}: {again}"
        );
        k.expect_ok(&["run", "other", "--image=nginx"]);
        let wrong = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "other"},
            "target": {"kind": "Pod"}});
        let refused = post(&k, "/api/v1/namespaces/default/bindings", &wrong).unwrap_err();
        assert!(
            refused.contains(
                r#"[target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>", target.name: Required value]"#
            ),
            "{release}: {refused}"
        );
        let legacy = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "other"},
            "target": {"name": "node-2"}});
        post(&k, "/api/v1/namespaces/default/bindings", &legacy).unwrap();
        assert_eq!(pod(&k, "other")["spec"]["nodeName"], "node-2", "{release}");
        // Nothing of a binding is stored: the same binding again meets the bound pod, not a
        // stored Binding of that name (AlreadyExists).
        let twice = post(&k, "/api/v1/namespaces/default/bindings", &legacy).unwrap_err();
        assert!(
            twice.contains(r#"pod other is already assigned to node "node-2""#),
            "{release}: {twice}"
        );
    }
}

#[test]
fn evictions_are_held_by_disruption_budgets() {
    for (release, version) in [("1.20", "policy/v1beta1"), ("1.34", "policy/v1")] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        for name in ["db-0", "db-1"] {
            k.expect_ok(&["run", name, "--image=postgres", "--labels=app=db"]);
            running_ready(&k, name);
        }
        let budget = format!(
            "apiVersion: {version}\nkind: PodDisruptionBudget\nmetadata: {{name: db}}\nspec:\n  minAvailable: 1\n  selector: {{matchLabels: {{app: db}}}}\n"
        );
        let file = k.file("pdb.yaml", &budget);
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
        let eviction = |name: &str| {
            json!({"apiVersion": version, "kind": "Eviction", "metadata": {"name": name},
                   "deleteOptions": {"gracePeriodSeconds": 0}})
        };
        let evict = |name: &str| {
            post(
                &k,
                &format!("/api/v1/namespaces/default/pods/{name}/eviction"),
                &eviction(name),
            )
        };
        // No disruption controller has looked at the budget yet (observedGeneration 0): 429.
        let refused = evict("db-0").unwrap_err();
        assert!(
            refused.contains("Cannot evict pod as it would violate the pod's disruption budget."),
            "{release}: {refused}"
        );
        // What the controller would write: one disruption allowed.
        k.expect_ok(&[
            "patch", "pdb", "db", "--subresource=status", "--type=merge", "-p",
            r#"{"status":{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":2,"desiredHealthy":1,"expectedPods":2}}"#,
        ]);
        // A dry run takes nothing.
        post(
            &k,
            "/api/v1/namespaces/default/pods/db-0/eviction?dryRun=All",
            &eviction("db-0"),
        )
        .unwrap();
        assert_eq!(
            k.expect_json(&["get", "pdb", "db"])["status"]["disruptionsAllowed"],
            1,
            "{release}"
        );
        assert!(evict("db-0").unwrap().contains("Success"), "{release}");
        let status = &k.expect_json(&["get", "pdb", "db"])["status"];
        assert_eq!(status["disruptionsAllowed"], 0, "{release}");
        assert!(status["disruptedPods"]["db-0"].is_string(), "{release}");
        assert!(
            k.ok(&["get", "pod", "db-0"]).is_err(),
            "{release}: db-0 is gone"
        );
        // The budget is spent: the next ready pod stays, with the budget's numbers.
        let refused = evict("db-1").unwrap_err();
        assert!(refused.contains("Cannot evict pod"), "{release}: {refused}");
        k.expect_ok(&["get", "pod", "db-1"]);
        // A pod no budget selects goes at once; a wrong name in the body is a 400.
        k.expect_ok(&["run", "free", "--image=nginx"]);
        running_ready(&k, "free");
        let mismatch = post(
            &k,
            "/api/v1/namespaces/default/pods/free/eviction",
            &eviction("other"),
        )
        .unwrap_err();
        assert!(
            mismatch.contains("name in URL does not match name in Eviction object"),
            "{release}: {mismatch}"
        );
        evict("free").unwrap();
        assert!(k.ok(&["get", "pod", "free"]).is_err(), "{release}");
    }
}

#[test]
fn kubectl_drain_evicts_the_pods_of_a_node() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let node = k.file(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n",
    );
    k.expect_ok(&["create", "-f", node.to_str().unwrap()]);
    for name in ["a", "b"] {
        k.expect_ok(&["run", name, "--image=nginx"]);
        let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"kind": "Node", "name": "node-1"}});
        post(
            &k,
            &format!("/api/v1/namespaces/default/pods/{name}/binding"),
            &binding,
        )
        .unwrap();
        running_ready(&k, name);
    }
    // Cordons the node, evicts both pods (unmanaged, hence --force) and waits for them to go;
    // their grace period ends after a second, as a kubelet would end them.
    let out = k.expect_ok(&[
        "drain",
        "node-1",
        "--force",
        "--grace-period=1",
        "--timeout=60s",
    ]);
    assert!(out.contains("evicting pod default/a"), "{out}");
    assert!(out.contains("node/node-1 drained"), "{out}");
    assert_eq!(
        k.expect_json(&["get", "node", "node-1"])["spec"]["unschedulable"],
        true
    );
    let pods = k.expect_json(&["get", "pods"]);
    assert_eq!(pods["items"], json!([]), "{pods}");
}

#[test]
fn kubectl_debug_adds_an_ephemeral_container() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    k.expect_ok(&["run", "web", "--image=nginx"]);
    // kubectl debug patches pods/web/ephemeralcontainers (strategic merge).
    k.expect_ok(&[
        "debug",
        "web",
        "--image=busybox",
        "--container=debugger",
        "--target=web",
        "--profile=general",
    ]);
    let debugged = pod(&k, "web");
    let container = &debugged["spec"]["ephemeralContainers"][0];
    assert_eq!(container["name"], "debugger");
    assert_eq!(container["targetContainerName"], "web");
    // SetDefaults_EphemeralContainer applies the Container's defaults.
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(container["terminationMessagePolicy"], "File");
    let subresources: Vec<&str> = debugged["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["subresource"].as_str())
        .collect();
    assert!(subresources.contains(&"ephemeralcontainers"), "{debugged}");
    // ValidatePodEphemeralContainersUpdate: existing ones stay; validateEphemeralContainers:
    // unique names, a target that exists, no ports.
    let removed = refused_json_patch(
        &k,
        "ephemeralcontainers",
        r#"[{"op":"remove","path":"/spec/ephemeralContainers/0"}]"#,
    );
    assert!(
        removed.contains(r#"existing ephemeral containers "debugger" may not be removed"#),
        "{removed}"
    );
    let bad = refused_json_patch(
        &k,
        "ephemeralcontainers",
        r#"[{"op":"add","path":"/spec/ephemeralContainers/-","value":{"name":"web","image":"x","ports":[{"containerPort":80}],"targetContainerName":"nope"}}]"#,
    );
    for line in [
        r#"spec.ephemeralContainers[1].name: Duplicate value: "web""#,
        r#"spec.ephemeralContainers[1].targetContainerName: Not found: "nope""#,
        "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
    ] {
        assert!(bad.contains(line), "{bad}");
    }
    // Only ephemeral containers change there: a label sent along is dropped.
    k.expect_ok(&[
        "patch",
        "pod",
        "web",
        "--subresource=ephemeralcontainers",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"sneaked":"in"}}}"#,
    ]);
    assert!(
        pod(&k, "web")["metadata"]["labels"]
            .get("sneaked")
            .is_none()
    );
    // The main resource may not change them.
    let main = k.expect_failure(&[
        "patch",
        "pod",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/ephemeralContainers"}]"#,
    ]);
    assert!(main.contains("pod updates may not change fields"), "{main}");
}

#[test]
fn releases_serve_the_subresources_they_had() {
    // 1.20 served no ephemeralcontainers (its alpha took another kind) and evictions in
    // policy/v1beta1.
    let old = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&old, dir.path());
    let listed: Value = serde_json::from_str(&k.expect_ok(&["get", "--raw", "/api/v1"])).unwrap();
    let entry = |name: &str| {
        listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
    };
    assert!(entry("pods/ephemeralcontainers").is_none());
    let eviction = entry("pods/eviction").unwrap();
    assert_eq!(
        (&eviction["group"], &eviction["version"], &eviction["kind"]),
        (&json!("policy"), &json!("v1beta1"), &json!("Eviction"))
    );
    assert_eq!(entry("pods/binding").unwrap()["verbs"], json!(["create"]));
    k.expect_ok(&["run", "web", "--image=nginx"]);
    assert!(
        k.ok(&[
            "get",
            "--raw",
            "/api/v1/namespaces/default/pods/web/ephemeralcontainers"
        ])
        .is_err()
    );
    let new = KapiServer::start(&ServerOptions::release("1.36")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&new, dir.path());
    let listed: Value = serde_json::from_str(&k.expect_ok(&["get", "--raw", "/api/v1"])).unwrap();
    let ephemeral = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods/ephemeralcontainers")
        .cloned()
        .unwrap();
    assert_eq!(ephemeral["verbs"], json!(["get", "patch", "update"]));
}

/// The official Python client's eviction call and its reading of a budget's refusal.
#[test]
fn python_client_evicts_a_pod() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let script = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
policy = client.PolicyV1Api()
for name in ["p0", "p1"]:
    core.create_namespaced_pod("default", client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels={"app": "p"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")])))
    core.patch_namespaced_pod_status(name, "default", {"status": {"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}})
policy.create_namespaced_pod_disruption_budget("default", client.V1PodDisruptionBudget(
    metadata=client.V1ObjectMeta(name="p"),
    spec=client.V1PodDisruptionBudgetSpec(min_available=2,
        selector=client.V1LabelSelector(match_labels={"app": "p"}))))
policy.patch_namespaced_pod_disruption_budget_status("p", "default", {"status": {
    "observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2,
    "expectedPods": 2}})
eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="p0"))
try:
    core.create_namespaced_pod_eviction("p0", "default", eviction)
    raise SystemExit("evicted")
except client.ApiException as e:
    assert e.status == 429, e.status
    body = json.loads(e.body)
    assert body["reason"] == "TooManyRequests", body
    assert body["details"]["causes"] == [{"reason": "DisruptionBudget",
        "message": "The disruption budget p needs 2 healthy pods and has 2 currently"}], body
policy.delete_namespaced_pod_disruption_budget("p", "default")
core.create_namespaced_pod_eviction("p0", "default", eviction)
names = [p.metadata.name for p in core.list_namespaced_pod("default").items
         if p.metadata.deletion_timestamp is None]
assert names == ["p1"], names
print("ok")
"#;
    expect_python_ok(&server, script, "1.36");
}

/// A kubectl with `patch --subresource=resize` (1.33 and newer), the newest found.
fn kubectl_with_resize() -> Result<PathBuf, String> {
    kubectl_binaries_since(33)
        .pop()
        .ok_or_else(|| "no kubectl.1.33 or newer on PATH or beside kubectl".to_owned())
}

/// A Burstable pod `web`: CPU and memory requested, memory limited.
const BURSTABLE: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},
"spec":{"containers":[{"name":"web","image":"nginx","resources":{
"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"memory":"128Mi"}}}]}}"#;

/// `kubectl patch pod web --subresource=resize` with a strategic merge patch of the container.
fn resize(k: &Kubectl<'_>, resources: &str) -> Result<String, String> {
    let patch =
        format!(r#"{{"spec":{{"containers":[{{"name":"web","resources":{resources}}}]}}}}"#);
    k.ok(&["patch", "pod", "web", "--subresource=resize", "-p", &patch])
}

#[test]
fn kubectl_resizes_a_pod_in_place() {
    let binary = kubectl_with_resize().unwrap();
    for release in ["1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(binary.clone(), &server, dir.path());
        let file = k.file("pod.json", BURSTABLE);
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
        let before = pod(&k, "web");
        // dropNonResizeUpdates keeps the written resources; the container changes in place.
        resize(&k, r#"{"requests":{"cpu":"200m","memory":"96Mi"}}"#).unwrap();
        let resized = pod(&k, "web");
        let resources = &resized["spec"]["containers"][0]["resources"];
        assert_eq!(
            resources["requests"],
            json!({"cpu": "200m", "memory": "96Mi"}),
            "{release}"
        );
        assert_eq!(resources["limits"], json!({"memory": "128Mi"}), "{release}");
        assert_eq!(resized["metadata"]["uid"], before["metadata"]["uid"]);
        // podResizeStrategy.PrepareForUpdate: updatePodGeneration, a spec change.
        assert_eq!(
            (
                &before["metadata"]["generation"],
                &resized["metadata"]["generation"]
            ),
            (&json!(1), &json!(2)),
            "{release}"
        );
        assert_eq!(resized["status"]["qosClass"], "Burstable");
        let subresources: Vec<&str> = resized["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["subresource"].as_str())
            .collect();
        assert_eq!(subresources, ["resize"], "{release}: {resized}");
        // dropNonResizeUpdates: anything but resources and resize policies sent along (a label,
        // an image) is dropped, not refused.
        let patch = r#"{"metadata":{"labels":{"sneaked":"in"}},"spec":{"containers":[{"name":"web","image":"httpd"}]}}"#;
        k.expect_ok(&["patch", "pod", "web", "--subresource=resize", "-p", patch]);
        let kept = pod(&k, "web");
        assert!(
            kept["metadata"]["labels"].get("sneaked").is_none(),
            "{kept}"
        );
        assert_eq!(kept["spec"]["containers"][0]["image"], "nginx");
        // ValidatePodResize: only cpu and memory change, the QoS class stays (qos.GetPodQOS
        // against qos.ComputePodQOS), and requests stay (validateContainerResize; a memory
        // request would come back as the limit, SetDefaults_Pod's).
        for (kind, patch, said) in [
            (
                "strategic",
                r#"{"requests":{"ephemeral-storage":"1Gi"}}"#,
                r#"The Pod "web" is invalid: spec: Forbidden: only cpu and memory resources are mutable"#,
            ),
            (
                "strategic",
                r#"{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"cpu":"1","memory":"1Gi"}}"#,
                r#"spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing"#,
            ),
            (
                "json",
                r#"[{"op":"remove","path":"/spec/containers/0/resources/requests/cpu"}]"#,
                "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed",
            ),
        ] {
            let refused = match kind {
                "json" => refused_json_patch(&k, "resize", patch),
                _ => resize(&k, patch).unwrap_err(),
            };
            assert!(refused.contains(said), "{release}: {refused}");
        }
        // ResourceQuota admission: the pod evaluator handles updates through `resize`.
        k.expect_ok(&["create", "quota", "cpu", "--hard=requests.cpu=1"]);
        let over = resize(&k, r#"{"requests":{"cpu":"2"}}"#).unwrap_err();
        assert!(over.contains("exceeded quota: cpu"), "{release}: {over}");
        k.expect_ok(&["delete", "quota", "cpu"]);
        // ValidatePodUpdate (updatablePodSpecFields): the pod itself does not resize.
        let main = k.expect_failure(&[
            "patch",
            "pod",
            "web",
            "-p",
            r#"{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"300m"}}}]}}"#,
        ]);
        assert!(
            main.contains("pod updates may not change fields other than"),
            "{main}"
        );
        assert_eq!(
            pod(&k, "web")["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "200m"
        );
        // Pod-level resources: refused whole in 1.34 (ValidatePodResize), resized from 1.36
        // (InPlacePodLevelResourcesVerticalScaling, validatePodLevelResourcesResize).
        let file = k.file("pod-level.json", POD_LEVEL);
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
        let pod_level = k.ok(&[
            "patch",
            "pod",
            "pod-level",
            "--subresource=resize",
            "-p",
            r#"{"spec":{"resources":{"requests":{"cpu":"2"}}}}"#,
        ]);
        if release == "1.34" {
            let refused = pod_level.unwrap_err();
            assert!(
                refused.contains("Forbidden: pods with pod-level resources cannot be resized"),
                "{refused}"
            );
        } else {
            pod_level.unwrap();
            let resized = pod(&k, "pod-level");
            assert_eq!(
                resized["spec"]["resources"]["requests"]["cpu"], "2",
                "{resized}"
            );
        }
    }
}

/// A Burstable pod `pod-level` whose CPU is requested for the whole pod.
const POD_LEVEL: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-level"},
"spec":{"resources":{"requests":{"cpu":"1"}},"containers":[{"name":"c","image":"nginx"}]}}"#;

#[test]
fn releases_serve_resize_from_1_33() {
    // storage_core.go registers pods/resize only while InPlacePodVerticalScaling is on: not in
    // 1.28, by default from 1.33 (GA in 1.35), and a 1.34 server started with the gate off
    // serves none. While the gate is off a new pod also loses its containers' resize policies
    // (`dropDisabledFields`, pkg/api/pod/util.go).
    for (release, args, served) in [
        ("1.28", &[][..], false),
        ("1.34", &[][..], true),
        (
            "1.34",
            &["--feature-gates=InPlacePodVerticalScaling=false"][..],
            false,
        ),
        ("1.36", &[][..], true),
    ] {
        let options = ServerOptions {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            ..ServerOptions::release(release)
        };
        let server = KapiServer::start(&options).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let listed: Value =
            serde_json::from_str(&k.expect_ok(&["get", "--raw", "/api/v1"])).unwrap();
        let entry = listed["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods/resize")
            .cloned();
        assert_eq!(entry.is_some(), served, "{release} {args:?}");
        if let Some(entry) = entry {
            assert_eq!(entry["verbs"], json!(["get", "patch", "update"]));
            assert_eq!(entry["kind"], "Pod");
        }
        k.expect_ok(&["run", "web", "--image=nginx"]);
        let got = k.ok(&["get", "--raw", "/api/v1/namespaces/default/pods/web/resize"]);
        match got {
            Ok(body) => {
                assert!(served, "{release} {args:?}");
                assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["kind"], "Pod");
            }
            Err(error) => {
                assert!(!served, "{release} {args:?}: {error}");
                assert!(error.contains("NotFound"), "{release}: {error}");
            }
        }
        let file = k.file("resizable.json", RESIZABLE);
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
        let policy = &pod(&k, "resizable")["spec"]["containers"][0]["resizePolicy"];
        assert_eq!(policy.is_array(), served, "{release} {args:?}: {policy}");
    }
}

/// A pod `resizable` whose container says how its CPU is resized.
const RESIZABLE: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"resizable"},
"spec":{"containers":[{"name":"c","image":"nginx",
"resizePolicy":[{"resourceName":"cpu","restartPolicy":"NotRequired"}]}]}}"#;

/// The official Python client's resize calls, and aggregated discovery's entry.
#[test]
fn python_client_resizes_a_pod() {
    let server = KapiServer::start(&ServerOptions::release("1.34")).unwrap();
    let script = r#"
import json, sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
core.create_namespaced_pod("default", client.V1Pod(
    metadata=client.V1ObjectMeta(name="p"),
    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx",
        resources=client.V1ResourceRequirements(requests={"cpu": "100m"}))])))
# ResizeREST's patch and get (podResizeStrategy: dropNonResizeUpdates).
core.patch_namespaced_pod_resize("p", "default",
    {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]}})
read = core.read_namespaced_pod_resize("p", "default")
assert read.spec.containers[0].resources.requests == {"cpu": "250m"}, read.spec.containers[0]
# ValidatePodResize: only cpu and memory resources change.
try:
    core.patch_namespaced_pod_resize("p", "default",
        {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "ephemeral-storage": "1Gi"}}}]}})
    raise SystemExit("resized storage")
except client.ApiException as e:
    assert e.status == 422, e.status
    body = json.loads(e.body)
    assert body["details"]["causes"] == [{"reason": "FieldValueForbidden",
        "message": "Forbidden: only cpu and memory resources are mutable", "field": "spec"}], body
# Aggregated discovery lists pods/resize (registered in storage_core.go while the gate is on).
api = client.ApiClient()
answer = api.call_api("/api", "GET", header_params={"Accept":
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"},
    auth_settings=["BearerToken"], _preload_content=False)
groups = json.loads(answer.data)
pods = [r for v in groups["items"][0]["versions"] for r in v["resources"] if r["resource"] == "pods"][0]
resize = [s for s in pods["subresources"] if s["subresource"] == "resize"]
assert resize == [{"subresource": "resize", "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
    "verbs": ["get", "patch", "update"]}], resize
print("ok")
"#;
    expect_python_ok(&server, script, "1.34");
}
