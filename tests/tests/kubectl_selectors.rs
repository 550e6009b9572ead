//! What upstream's registry does per built-in kind beyond defaults, seen through `kubectl` and
//! the Python client in the oldest and newest releases kapi serves: the field labels each kind's
//! `fieldSelector` accepts and their values on the typed object (`pkg/apis/*/v1*/conversion.go`
//! `AddFieldLabelConversionFunc`, `pkg/registry/**/strategy.go` `*ToSelectableFields`); what a
//! write through the status subresource changes (each status strategy's `PrepareForUpdate`); a
//! new Pod's status (`podStrategy.PrepareForCreate`); a Secret's `stringData`
//! (`Convert_v1_Secret_To_core_Secret`).

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::Command;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, python};
use serde_json::{Value, json};

const OBJECTS: &str = "apiVersion: v1
kind: Node
metadata: {name: plain}
---
apiVersion: v1
kind: Node
metadata: {name: cordoned}
spec: {unschedulable: true}
---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec:
  containers: [{name: app, image: app:1}]
---
apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  nodeName: plain
  containers:
  - name: app
    image: app:1
    resources: {limits: {cpu: 500m, memory: 64Mi}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: busybox}]
---
apiVersion: v1
kind: Event
metadata: {name: started}
involvedObject: {kind: Pod, name: small, namespace: default}
reason: Started
reportingComponent: kubelet
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: pulled}
eventTime: '2024-01-02T03:04:05.000000Z'
regarding: {kind: Pod, name: small, namespace: default}
reason: Pulled
action: Pull
reportingController: kubelet
reportingInstance: node-1
type: Normal
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, labels: {app: api}}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: api:1}]
---
apiVersion: v1
kind: Secret
metadata: {name: token}
data: {kept: a2VwdA==, key: b2xk}
stringData: {key: value}
";

fn names(k: &Kubectl<'_>, resource: &str, selector: &str) -> Vec<String> {
    let out = k.expect_ok(&["get", resource, "--field-selector", selector, "-o", "name"]);
    out.lines().map(str::to_owned).collect()
}

fn get(k: &Kubectl<'_>, resource: &str) -> Value {
    k.expect_json(&["get", resource, "-o", "json"])
}

/// Starts a server of `release` holding `OBJECTS` and runs `check` with it and kubectl.
fn with_objects(release: &str, check: impl FnOnce(&KapiServer, &Kubectl<'_>)) {
    let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let file = k.file("objects.yaml", OBJECTS);
    k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
    check(&server, &k);
}

#[test]
fn field_selectors_follow_each_kinds_labels_and_zero_values() {
    for release in ["1.20", "1.36"] {
        with_objects(release, |_, k| {
            // NodeToSelectableFields: fmt.Sprint(node.Spec.Unschedulable), false when left out.
            assert_eq!(
                names(k, "nodes", "spec.unschedulable=false"),
                ["node/plain"],
                "{release}"
            );
            assert_eq!(
                names(k, "nodes", "spec.unschedulable!=false"),
                ["node/cordoned"],
                "{release}"
            );
            // The Node conversion function has no metadata.namespace.
            let refused =
                k.expect_failure(&["get", "nodes", "--field-selector", "metadata.namespace="]);
            assert!(
                refused.contains("field label not supported: metadata.namespace"),
                "{release}: {refused}"
            );

            // Pod: spec.nodeName and its old alias spec.host; status.phase from PrepareForCreate.
            assert_eq!(names(k, "pods", "spec.nodeName=plain"), ["pod/sized"]);
            assert_eq!(names(k, "pods", "spec.host=plain"), ["pod/sized"]);
            assert_eq!(
                names(k, "pods", "status.phase=Pending,spec.nodeName="),
                ["pod/small"],
                "{release}"
            );
            // spec.hostNetwork is a label since 1.28 (kubernetes#110477), false when left out.
            if release == "1.20" {
                let refused = k.expect_failure(&[
                    "get",
                    "pods",
                    "--field-selector",
                    "spec.hostNetwork=false",
                ]);
                assert!(
                    refused.contains("field label not supported: spec.hostNetwork"),
                    "{refused}"
                );
            } else {
                assert_eq!(
                    names(k, "pods", "spec.hostNetwork=false").len(),
                    2,
                    "{release}"
                );
            }

            // JobToSelectableFields: strconv.Itoa(job.Status.Succeeded), 0 without a status.
            assert_eq!(names(k, "jobs", "status.successful=0"), ["job.batch/once"]);
            let refused = k.expect_failure(&["get", "jobs", "--field-selector", "status.failed=0"]);
            assert!(
                refused.contains(r#"field label "status.failed" not supported for batchv1.Job"#),
                "{release}: {refused}"
            );

            // Event ToSelectableFields: source is source.component, else the reporting controller.
            assert!(names(k, "events", "source=kubelet").contains(&"event/started".to_owned()));
            assert!(names(k, "events", "source=scheduler").is_empty());
            assert_eq!(
                names(k, "events", "involvedObject.name=small,reason=Started"),
                ["event/started"]
            );
            // events.k8s.io names the same fields its own way
            // (events/v1 AddFieldLabelConversionsForEvent), and has no `source`.
            assert!(
                names(
                    k,
                    "events.v1.events.k8s.io",
                    "regarding.name=small,reportingController=kubelet"
                )
                .contains(&"event.events.k8s.io/pulled".to_owned()),
                "{release}"
            );
            let refused = k.expect_failure(&[
                "get",
                "events.v1.events.k8s.io",
                "--field-selector",
                "source=kubelet",
            ]);
            assert!(
                refused.contains("field label not supported: source"),
                "{release}: {refused}"
            );

            // Secret type, Namespace status.phase.
            assert_eq!(names(k, "secrets", "type=Opaque"), ["secret/token"]);
            assert!(
                names(k, "namespaces", "status.phase=Active")
                    .contains(&"namespace/default".to_owned())
            );

            // Service spec.type and spec.clusterIP are labels since 1.31 (kubernetes#123905).
            if release == "1.20" {
                let refused = k.expect_failure(&[
                    "get",
                    "services",
                    "--field-selector",
                    "spec.type=ClusterIP",
                ]);
                assert!(
                    refused.contains("field label not supported: spec.type"),
                    "{refused}"
                );
            } else {
                assert!(
                    names(k, "services", "spec.type=ClusterIP").contains(&"service/web".to_owned())
                );
                assert!(names(k, "services", "spec.clusterIP=None").is_empty());
            }

            // ReplicaSet's field set has status.replicas, but no conversion function admits it:
            // apimachinery's DefaultMetaV1FieldSelectorConversion refuses it.
            let refused = k.expect_failure(&[
                "get",
                "replicasets",
                "--field-selector",
                "status.replicas=0",
            ]);
            assert!(
            refused.contains(
                r#""status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace""#
            ),
            "{release}: {refused}"
        );
        });
    }
}

#[test]
fn status_writes_change_status_and_metadata_as_each_strategy_says() {
    for release in ["1.20", "1.36"] {
        with_objects(release, |_, k| {
            // deploymentStatusStrategy.PrepareForUpdate: the old spec and labels; annotations and
            // the status from the write.
            k.expect_ok(&[
                "patch",
                "deployment/api",
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"metadata": {"labels": {"extra": "x"}, "annotations": {"note": "1"}},
                "spec": {"replicas": 5}, "status": {"replicas": 2}}"#,
            ]);
            let deployment = get(k, "deployment/api");
            assert_eq!(deployment["status"]["replicas"], 2, "{release}");
            assert_eq!(deployment["spec"]["replicas"], 1, "{release}");
            assert_eq!(
                deployment["metadata"]["labels"],
                json!({"app": "api"}),
                "{release}"
            );
            assert_eq!(
                deployment["metadata"]["annotations"]["note"], "1",
                "{release}"
            );
            // A status write leaves the generation (only the spec moves it).
            assert_eq!(deployment["metadata"]["generation"], 1, "{release}");

            // serviceStatusStrategy: the old spec, the new metadata. A load balancer's ingress
            // on a Service that is no LoadBalancer is refused from 1.29
            // (ValidateLoadBalancerStatus), judged against the kept spec.
            let patch = |ingress: &str| {
                format!(
                    r#"{{"metadata": {{"labels": {{"lb": "yes"}}}}, "spec": {{"type": "NodePort"}},
                    "status": {{"loadBalancer": {{"ingress": {ingress}}}}}}}"#
                )
            };
            fn status_patch(body: &str) -> [&str; 6] {
                let args = [
                    "patch",
                    "service/web",
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                ];
                [args[0], args[1], args[2], args[3], args[4], body]
            }
            let (with_ingress, without) = (patch(r#"[{"ip": "10.1.1.1"}]"#), patch("[]"));
            if release == "1.20" {
                k.expect_ok(&status_patch(&with_ingress));
            } else {
                let refused = k.expect_failure(&status_patch(&with_ingress));
                assert!(
                    refused.contains("status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"),
                    "{release}: {refused}"
                );
                k.expect_ok(&status_patch(&without));
            }
            let service = get(k, "service/web");
            assert_eq!(
                service["metadata"]["labels"],
                json!({"lb": "yes"}),
                "{release}"
            );
            assert_eq!(service["spec"]["type"], "ClusterIP", "{release}");
            if release == "1.20" {
                assert_eq!(
                    service["status"]["loadBalancer"]["ingress"][0]["ip"], "10.1.1.1",
                    "{release}"
                );
            }

            // podStatusStrategy keeps the owner references.
            let owner = r#"{"metadata": {"labels": {"seen": "1"}, "ownerReferences": [{"apiVersion": "v1",
            "kind": "Node", "name": "plain", "uid": "00000000-0000-0000-0000-000000000001"}]},
            "status": {"phase": "Running"}}"#;
            k.expect_ok(&[
                "patch",
                "pod/small",
                "--subresource=status",
                "--type=merge",
                "-p",
                owner,
            ]);
            let pod = get(k, "pod/small");
            assert_eq!(pod["status"]["phase"], "Running", "{release}");
            assert_eq!(pod["metadata"]["labels"], json!({"seen": "1"}), "{release}");
            assert!(
                pod["metadata"].get("ownerReferences").is_none(),
                "{release}: {pod}"
            );

            // A main-resource write keeps the stored status (the strategies' PrepareForUpdate).
            k.expect_ok(&[
                "patch",
                "deployment/api",
                "--type=merge",
                "-p",
                r#"{"status": {"replicas": 9}}"#,
            ]);
            assert_eq!(
                get(k, "deployment/api")["status"]["replicas"],
                2,
                "{release}"
            );
        });
    }
}

#[test]
fn new_pods_are_pending_with_a_qos_class_and_secrets_fold_string_data() {
    for release in ["1.20", "1.36"] {
        with_objects(release, |server, k| {
            // podStrategy.PrepareForCreate: {phase: Pending, qosClass: qos.GetPodQOS(pod)}; limits
            // alone make requests (SetDefaults_Pod), so equal cpu and memory: Guaranteed.
            assert_eq!(
                get(k, "pod/small")["status"],
                json!({"phase": "Pending", "qosClass": "BestEffort"}),
                "{release}"
            );
            assert_eq!(
                get(k, "pod/sized")["status"],
                json!({"phase": "Pending", "qosClass": "Guaranteed"}),
                "{release}"
            );

            // Convert_v1_Secret_To_core_Secret: stringData overwrites data, base64, not stored.
            let secret = get(k, "secret/token");
            assert_eq!(
                secret["data"],
                json!({"kept": "a2VwdA==", "key": "dmFsdWU="}),
                "{release}"
            );
            assert!(secret.get("stringData").is_none(), "{release}: {secret}");
            // On every write: a patch with stringData.
            k.expect_ok(&[
                "patch",
                "secret/token",
                "--type=merge",
                "-p",
                r#"{"stringData": {"kept": "new"}}"#,
            ]);
            let secret = get(k, "secret/token");
            assert_eq!(secret["data"]["kept"], "bmV3", "{release}");
            assert!(secret.get("stringData").is_none(), "{release}: {secret}");

            // The Python client sees the same.
            let output = Command::new(python())
                .arg("-c")
                .arg(PYTHON_SCRIPT)
                .arg(server.kubeconfig())
                .arg(release)
                .output()
                .unwrap();
            assert!(
                output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
                "{release}: the Python client script failed ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
        });
    }
}

/// Field selectors, a Secret's stringData and a new Pod's status through the Python client.
const PYTHON_SCRIPT: &str = r#"
import base64
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
release = sys.argv[2]
v1 = client.CoreV1Api()
nodes = v1.list_node(field_selector="spec.unschedulable=false").items
assert [n.metadata.name for n in nodes] == ["plain"], nodes
try:
    client.AppsV1Api().list_namespaced_replica_set("default", field_selector="status.replicas=1")
    raise AssertionError("status.replicas was accepted")
except ApiException as e:
    assert e.status == 400, e

secret = v1.create_namespaced_secret("default", client.V1Secret(
    metadata=client.V1ObjectMeta(name="py"), string_data={"user": "admin"}))
assert secret.string_data is None, secret
assert base64.b64decode(secret.data["user"]) == b"admin", secret.data

pod = v1.create_namespaced_pod("default", client.V1Pod(
    metadata=client.V1ObjectMeta(name="py"),
    spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="c:1",
        resources=client.V1ResourceRequirements(requests={"cpu": "100m"}))])))
assert pod.status.phase == "Pending" and pod.status.qos_class == "Burstable", pod.status
print("ok")
"#;
