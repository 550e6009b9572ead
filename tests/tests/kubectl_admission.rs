//! The default admission plugins that shape objects, as kube-apiserver runs them
//! (`plugin/pkg/admission/*`), seen through kubectl and the Python client in the oldest and
//! newest release kapi serves: LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds,
//! DefaultStorageClass, StorageObjectInUseProtection and ResourceQuota, on writes and dry runs.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, expect_python_ok};
use serde_json::{Value, json};

const CLASSES: &str = "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: Never
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
  annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}
provisioner: example.com/fast
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder}
imagePullSecrets: [{name: registry}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: quiet}
automountServiceAccountToken: false
";

fn pod(name: &str, spec: &Value) -> String {
    let mut spec = spec.clone();
    spec["containers"] =
        json!([{"name": "app", "image": "busybox"}, {"name": "side", "image": "busybox"}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}).to_string()
}

fn create(k: &Kubectl<'_>, name: &str, spec: &Value) -> Value {
    let file = k.file(&format!("{name}.json"), &pod(name, spec));
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    k.expect_json(&["get", "pod", name])
}

fn refused(k: &Kubectl<'_>, name: &str, spec: &Value) -> String {
    let file = k.file(&format!("{name}.json"), &pod(name, spec));
    k.expect_failure(&["create", "-f", file.to_str().unwrap()])
}

#[test]
fn pods_and_claims_are_shaped_by_the_default_admission_plugins() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("classes.yaml", CLASSES);
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);

        // ServiceAccount: `default` when none is named, the deprecated alias written too.
        // DefaultTolerationSeconds:
        // both NoExecute tolerations for 300 s. Priority: 0 without a default class.
        let plain = create(&k, "plain", &json!({}));
        let spec = &plain["spec"];
        assert_eq!(spec["serviceAccountName"], "default", "{release}");
        assert_eq!(spec["serviceAccount"], "default", "{release}");
        assert_eq!(
            spec["tolerations"],
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ]),
            "{release}"
        );
        assert_eq!(spec["priority"], 0, "{release}");
        assert_eq!(
            spec["preemptionPolicy"], "PreemptLowerPriority",
            "{release}"
        );

        // mountServiceAccountToken: since 1.21 every container mounts the projected
        // kube-api-access-<5> volume (TokenVolumeSource); 1.20 mounts the account's token
        // Secret, which the tokens controller made for it.
        let mounted = create(&k, "mounted", &json!({"serviceAccountName": "builder"}));
        let spec = &mounted["spec"];
        assert_eq!(
            spec["imagePullSecrets"],
            json!([{"name": "registry"}]),
            "{release}"
        );
        let volume = &spec["volumes"][0];
        let name = volume["name"].as_str().unwrap();
        if release == "1.20" {
            assert!(
                name.starts_with("builder-token-") && name.len() == 19,
                "{name}"
            );
            assert_eq!(
                volume["secret"],
                json!({"secretName": name, "defaultMode": 420}),
                "{release}"
            );
        } else {
            assert!(
                name.starts_with("kube-api-access-") && name.len() == 21,
                "{name}"
            );
            assert_eq!(
                volume["projected"],
                json!({"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ]}),
                "{release}"
            );
        }
        for container in spec["containers"].as_array().unwrap() {
            assert_eq!(
                container["volumeMounts"],
                json!([{"name": name, "readOnly": true,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]),
                "{release}"
            );
        }
        // shouldAutomount: the account opts out.
        let quiet = create(&k, "quiet", &json!({"serviceAccountName": "quiet"}));
        assert_eq!(quiet["spec"].get("volumes"), None, "{release}");
        // getServiceAccount: a named account must exist.
        let ghost = refused(&k, "ghost", &json!({"serviceAccountName": "ghost"}));
        assert!(
            ghost.contains(
                r#"pods "ghost" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found"#
            ),
            "{release}: {ghost}"
        );

        // admitPod: the class's value and policy, upstream's system classes, a missing class
        // refused, a priority that differs from the class's refused.
        let high = create(&k, "high", &json!({"priorityClassName": "high"}));
        assert_eq!(high["spec"]["priority"], 1000, "{release}");
        assert_eq!(high["spec"]["preemptionPolicy"], "Never", "{release}");
        let critical = create(
            &k,
            "critical",
            &json!({"priorityClassName": "system-node-critical"}),
        );
        assert_eq!(critical["spec"]["priority"], 2_000_001_000, "{release}");
        let missing = refused(&k, "missing", &json!({"priorityClassName": "missing"}));
        assert!(
            missing.contains(
                r#"pods "missing" is forbidden: no PriorityClass with name missing was found"#
            ),
            "{release}: {missing}"
        );
        let given = refused(
            &k,
            "given",
            &json!({"priorityClassName": "high", "priority": 5}),
        );
        assert!(
            given.contains("the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"),
            "{release}: {given}"
        );
        // An update keeps what admission set; a server-side dry run is admitted too.
        k.expect_ok(&["label", "pod", "high", "tier=web"]);
        let relabelled = k.expect_json(&["get", "pod", "high"]);
        assert_eq!(relabelled["spec"]["priority"], 1000, "{release}");
        assert_eq!(
            relabelled["spec"]["tolerations"].as_array().map(Vec::len),
            Some(2)
        );
        let dry = k.file(
            "dry.json",
            &pod("dry", &json!({"priorityClassName": "high"})),
        );
        let answer = k.expect_json(&["create", "--dry-run=server", "-f", dry.to_str().unwrap()]);
        assert_eq!(answer["spec"]["priority"], 1000, "{release}");
        assert_eq!(answer["spec"]["serviceAccountName"], "default", "{release}");

        // DefaultStorageClass and StorageObjectInUseProtection.
        let claims = k.file(
            "claims.yaml",
            "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: unclassed}
spec:
  storageClassName: \"\"
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  hostPath: {path: /tmp/disk}
",
        );
        k.expect_ok(&["create", "-f", claims.to_str().unwrap()]);
        let data = k.expect_json(&["get", "pvc", "data"]);
        assert_eq!(data["spec"]["storageClassName"], "fast", "{release}");
        assert_eq!(
            data["metadata"]["finalizers"],
            json!(["kubernetes.io/pvc-protection"]),
            "{release}"
        );
        let unclassed = k.expect_json(&["get", "pvc", "unclassed"]);
        assert_eq!(unclassed["spec"]["storageClassName"], "", "{release}");
        let disk = k.expect_json(&["get", "pv", "disk"]);
        assert_eq!(
            disk["metadata"]["finalizers"],
            json!(["kubernetes.io/pv-protection"]),
            "{release}"
        );
    }
}

const SCRIPT: &str = r#"
import json, sys, time
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
release = sys.argv[2]
v1 = client.CoreV1Api()
scheduling = client.SchedulingV1Api()
storage = client.StorageV1Api()

# getDefaultPriorityClass: a class marked globalDefault gives pods without one its name and value.
scheduling.create_priority_class({"metadata": {"name": "normal"}, "value": 100, "globalDefault": True})
pod = v1.create_namespaced_pod("default", {"metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
assert pod.spec.priority_class_name == "normal", pod.spec
assert pod.spec.priority == 100, pod.spec
assert pod.spec.preemption_policy == "PreemptLowerPriority", pod.spec
assert pod.spec.service_account_name == "default", pod.spec
try:
    scheduling.create_priority_class({"metadata": {"name": "other"}, "value": 5, "globalDefault": True})
    raise AssertionError("a second global default accepted")
except ApiException as e:
    assert e.status == 403, e.body
    assert json.loads(e.body)["message"] == (
        'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass normal is already '
        "marked as default. Only one default can exist"), e.body

# GetDefaultClass: with two default classes, 1.20 refuses the claim, 1.26 on takes the newest.
for name in ["first", "second"]:
    storage.create_storage_class({"metadata": {"name": name,
        "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "example.com/x"})
    time.sleep(1.1)
claim = {"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
    "resources": {"requests": {"storage": "1Gi"}}}}
if release == "1.20":
    try:
        v1.create_namespaced_persistent_volume_claim("default", claim)
        raise AssertionError("two default classes accepted")
    except ApiException as e:
        assert e.status == 403, e.body
        status = json.loads(e.body)
        assert status["reason"] == "Forbidden", status
        assert status["message"] == (
            'persistentvolumeclaims "c" is forbidden: Internal error occurred: '
            "2 default StorageClasses were found"), status
else:
    made = v1.create_namespaced_persistent_volume_claim("default", claim)
    assert made.spec.storage_class_name == "second", made.spec
    assert made.metadata.finalizers == ["kubernetes.io/pvc-protection"], made.metadata

# LimitRanger: the namespace's Container defaults (SetDefaults_LimitRangeItem: the limit from
# `max`, the request from the limit) and the annotation saying what was set; `max` refused with
# upstream's 403 for containers and claims.
def forbidden(create, *args):
    try:
        create(*args)
        raise AssertionError(f"accepted: {args}")
    except ApiException as e:
        assert e.status == 403, e.body
        return json.loads(e.body)["message"]

v1.create_namespace({"metadata": {"name": "limited"}})
v1.create_namespaced_limit_range("limited", {"metadata": {"name": "lr"}, "spec": {"limits": [
    {"type": "Container", "default": {"cpu": "500m"}, "max": {"memory": "1Gi"}},
    {"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}}]}})
sized = v1.create_namespaced_pod("limited", {"metadata": {"name": "sized"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
resources = sized.spec.containers[0].resources
assert resources.limits == {"cpu": "500m", "memory": "1Gi"}, resources
assert resources.requests == {"cpu": "500m", "memory": "1Gi"}, resources
assert sized.metadata.annotations["kubernetes.io/limit-ranger"] == (
    "LimitRanger plugin set: cpu, memory request for container c; "
    "cpu, memory limit for container c"), sized.metadata.annotations
message = forbidden(v1.create_namespaced_pod, "limited", {"metadata": {"name": "big"},
    "spec": {"containers": [{"name": "c", "image": "busybox",
        "resources": {"limits": {"memory": "2Gi"}}}]}})
assert message == 'pods "big" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi', message
message = forbidden(v1.create_namespaced_persistent_volume_claim, "limited", {
    "metadata": {"name": "huge"}, "spec": {"accessModes": ["ReadWriteOnce"],
    "storageClassName": "", "resources": {"requests": {"storage": "5Gi"}}}})
assert message == ('persistentvolumeclaims "huge" is forbidden: maximum storage usage per '
                   "PersistentVolumeClaim is 2Gi, but request is 5Gi"), message

# ResourceQuota: usage plus the new object within `hard`, else upstream's "exceeded quota";
# constrained compute must be specified; an admitted create charges `status.used`.
def bare(name):
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}

v1.create_namespace({"metadata": {"name": "quoted"}})
v1.create_namespaced_resource_quota("quoted", {"metadata": {"name": "q"},
    "spec": {"hard": {"pods": "1", "configmaps": "5"}}})
v1.create_namespaced_pod("quoted", bare("p1"))
quota = v1.read_namespaced_resource_quota("q", "quoted")
assert quota.status.hard == {"pods": "1", "configmaps": "5"}, quota.status
assert quota.status.used["pods"] == "1", quota.status
message = forbidden(v1.create_namespaced_pod, "quoted", bare("p2"))
assert message == ('pods "p2" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, '
                   "limited: pods=1"), message
v1.delete_namespaced_pod("p1", "quoted")
v1.create_namespaced_pod("quoted", bare("p2"))
v1.create_namespaced_resource_quota("quoted", {"metadata": {"name": "compute"},
    "spec": {"hard": {"limits.cpu": "1"}}})
message = forbidden(v1.create_namespaced_pod, "quoted", bare("p3"))
assert message == 'pods "p3" is forbidden: failed quota: compute: must specify limits.cpu', message
print("ok")
"#;

#[test]
fn python_client_sees_admission_defaults_and_refusals() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        expect_python_ok(&server, SCRIPT, release);
    }
}

/// The quota controller (`pkg/controller/resourcequota`): `status.used` names every resource
/// of `hard`, counts what existed before the quota, and falls when objects go; a scoped quota
/// (`podMatchesScopeFunc`) counts and limits only the pods in its scopes.
const QUOTA_CONTROLLER: &str = r#"
import sys, time
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()

def used(name, ns, want):
    deadline = time.time() + 10
    while True:
        status = v1.read_namespaced_resource_quota(name, ns).status
        got = status.used if status else None
        if got == want or time.time() > deadline:
            assert got == want, (name, got, want)
            return
        time.sleep(0.1)

def pod(name, **spec):
    spec.setdefault("containers", [{"name": "c", "image": "busybox"}])
    return {"metadata": {"name": name}, "spec": spec}

v1.create_namespace({"metadata": {"name": "counted"}})
v1.create_namespaced_config_map("counted", {"metadata": {"name": "before"}})
v1.create_namespaced_resource_quota("counted", {"metadata": {"name": "q"},
    "spec": {"hard": {"pods": "5", "configmaps": "10", "services.nodeports": "1"}}})
# What existed before the quota is counted; what nothing uses is "0".
maps = len(v1.list_namespaced_config_map("counted").items)
used("q", "counted", {"pods": "0", "configmaps": str(maps), "services.nodeports": "0"})
v1.create_namespaced_pod("counted", pod("a"))
v1.create_namespaced_pod("counted", pod("b"))
used("q", "counted", {"pods": "2", "configmaps": str(maps), "services.nodeports": "0"})
v1.delete_namespaced_pod("a", "counted")
v1.delete_namespaced_config_map("before", "counted")
used("q", "counted", {"pods": "1", "configmaps": str(maps - 1), "services.nodeports": "0"})

# A BestEffort-scoped quota holds pods without requests or limits only.
v1.create_namespaced_resource_quota("counted", {"metadata": {"name": "besteffort"},
    "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}})
used("besteffort", "counted", {"pods": "1"})
sized = [{"name": "c", "image": "busybox",
          "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "100m"}}}]
v1.create_namespaced_pod("counted", pod("sized", containers=sized))
try:
    v1.create_namespaced_pod("counted", pod("another"))
    raise AssertionError("a second best-effort pod was admitted")
except ApiException as e:
    assert e.status == 403, e.body
    assert "exceeded quota: besteffort, requested: pods=1, used: pods=1, limited: pods=1" in e.body, e.body
used("besteffort", "counted", {"pods": "1"})
used("q", "counted", {"pods": "2", "configmaps": str(maps - 1), "services.nodeports": "0"})

# An update is held to what it uses beyond the old object: a ClusterIP Service with two
# ports becoming a NodePort one needs two node ports (upstream's service evaluator).
ports = [{"name": "a", "port": 80}, {"name": "b", "port": 81}]
v1.create_namespaced_service("counted", {"metadata": {"name": "web"},
    "spec": {"ports": ports}})
try:
    v1.patch_namespaced_service("web", "counted", {"spec": {"type": "NodePort"}})
    raise AssertionError("a NodePort Service beyond the quota was admitted")
except ApiException as e:
    assert e.status == 403, e.body
    assert ('services \\"web\\" is forbidden: exceeded quota: q, requested: services.nodeports=2, '
            "used: services.nodeports=0, limited: services.nodeports=1") in e.body, e.body
v1.patch_namespaced_resource_quota("q", "counted", {"spec": {"hard": {"services.nodeports": "2"}}})
used("q", "counted", {"pods": "2", "configmaps": str(maps - 1), "services.nodeports": "0"})
v1.patch_namespaced_service("web", "counted", {"spec": {"type": "NodePort"}})
used("q", "counted", {"pods": "2", "configmaps": str(maps - 1), "services.nodeports": "2"})
print("ok")
"#;

#[test]
fn python_client_sees_quota_usage_kept_by_the_controller() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        expect_python_ok(&server, QUOTA_CONTROLLER, release);
    }
}
