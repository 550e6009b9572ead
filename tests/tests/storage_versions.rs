//! One storage per built-in resource across its versions and groups, as kubectl and the
//! official Python client see it: an object written through one version or group is read,
//! listed and deleted through every other, converted field by field where the shapes differ.
//!
//! Upstream mirrored: the storage factory's cohabiting resources
//! (`pkg/kubeapiserver/default_storage_factory_builder.go`: `extensions` Ingresses with
//! `networking.k8s.io`'s, `events.k8s.io` Events with the core group's) and the conversions
//! `Convert_v1beta1_IngressBackend_To_networking_IngressBackend`
//! (`pkg/apis/networking/v1beta1/conversion.go`),
//! `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler` and back
//! (`pkg/apis/autoscaling/v1/conversion.go`: the CPU target, the other metrics in the
//! `autoscaling.alpha.kubernetes.io/metrics` annotation, 80% when v1 says nothing),
//! `Convert_v2beta1_ResourceMetricSource_To_autoscaling_ResourceMetricSource`
//! (`pkg/apis/autoscaling/v2beta1/conversion.go`), `pkg/apis/events/v1/conversion.go` (`note`
//! ↔ `message`, `regarding` ↔ `involvedObject`, `reportingController` ↔ `reportingComponent`)
//! and `Convert_v1beta1_Endpoint_To_discovery_Endpoint` (`pkg/apis/discovery/v1beta1`).
//! `specs/conversions/README.md` lists every family.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, expect_python_ok};
use serde_json::{Value, json};

const INGRESS_V1BETA1: &str = r#"{
  "apiVersion": "extensions/v1beta1", "kind": "Ingress",
  "metadata": {"name": "web", "namespace": "default"},
  "spec": {
    "backend": {"serviceName": "fallback", "servicePort": 80},
    "rules": [{"host": "a.example.com", "http": {"paths": [
      {"path": "/", "backend": {"serviceName": "web", "servicePort": "http"}}
    ]}}]
  }
}"#;

#[test]
fn kubectl_reads_an_extensions_ingress_through_networking_v1_and_deletes_it_there() {
    let server = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let file = k.file("ingress.json", INGRESS_V1BETA1);
    k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);

    let v1 = k.expect_json(&["get", "ingresses.v1.networking.k8s.io", "web"]);
    assert_eq!(v1["apiVersion"], "networking.k8s.io/v1");
    assert_eq!(
        v1["spec"]["defaultBackend"],
        json!({"service": {"name": "fallback", "port": {"number": 80}}})
    );
    assert_eq!(
        v1["spec"]["rules"][0]["http"]["paths"][0]["backend"],
        json!({"service": {"name": "web", "port": {"name": "http"}}})
    );
    // networking.k8s.io/v1beta1 lists it too, in its own shape and with the same identity.
    let listed = k.expect_json(&["get", "ingresses.v1beta1.networking.k8s.io"]);
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{listed}");
    assert_eq!(items[0]["metadata"]["uid"], v1["metadata"]["uid"]);
    assert_eq!(
        items[0]["spec"]["backend"],
        json!({"serviceName": "fallback", "servicePort": 80})
    );

    // An edit through v1 shows through extensions.
    k.expect_ok(&[
        "patch",
        "ingresses.v1.networking.k8s.io",
        "web",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/spec/defaultBackend/service/port", "value": {"name": "https"}}]"#,
    ]);
    let old = k.expect_json(&["get", "ingresses.v1beta1.extensions", "web"]);
    assert_eq!(
        old["spec"]["backend"],
        json!({"serviceName": "fallback", "servicePort": "https"})
    );

    k.expect_ok(&["delete", "ingresses.v1.networking.k8s.io", "web"]);
    let gone = k.expect_failure(&["get", "ingresses.v1beta1.extensions", "web"]);
    assert!(
        gone.contains("NotFound") || gone.contains("not found"),
        "{gone}"
    );
}

const HPA_V1: &str = r#"{
  "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
  "metadata": {"name": "cpu", "namespace": "default"},
  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
           "maxReplicas": 4, "targetCPUUtilizationPercentage": 50}
}"#;

const HPA_V2: &str = r#"{
  "apiVersion": "autoscaling/VERSION", "kind": "HorizontalPodAutoscaler",
  "metadata": {"name": "multi", "namespace": "default"},
  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
           "maxReplicas": 6,
           "metrics": [
             {"type": "Pods", "pods": {"metric": {"name": "qps"},
                                      "target": {"type": "AverageValue", "averageValue": "10"}}},
             {"type": "Resource", "resource": {"name": "cpu",
                                               "target": {"type": "Utilization", "averageUtilization": 60}}}
           ]}
}"#;

#[test]
fn kubectl_sees_one_horizontal_pod_autoscaler_in_every_autoscaling_version() {
    for (release, v2) in [("1.20", "v2beta2"), ("1.36", "v2")] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let hpa_v2 = format!("horizontalpodautoscalers.{v2}.autoscaling");

        let file = k.file("v1.json", HPA_V1);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let as_v2 = k.expect_json(&["get", &hpa_v2, "cpu"]);
        assert_eq!(
            as_v2["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]),
            "{release}"
        );
        let table = k.expect_ok(&["get", "hpa", "cpu"]);
        assert!(table.contains("/50%"), "{release}: {table}");

        // A v2 object with a metric v1 has no field for: v1 shows the CPU target and keeps
        // the rest in upstream's annotation, and writing the v1 object back loses nothing.
        let file = k.file("v2.json", &HPA_V2.replace("VERSION", v2));
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let as_v1 = k.expect_json(&["get", "horizontalpodautoscalers.v1.autoscaling", "multi"]);
        assert_eq!(
            as_v1["spec"]["targetCPUUtilizationPercentage"], 60,
            "{release}"
        );
        let others: Value = serde_json::from_str(
            as_v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            others,
            json!([{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]),
            "{release}"
        );
        let back = k.file("back.json", &as_v1.to_string());
        k.expect_ok(&["replace", "--validate=false", "-f", back.to_str().unwrap()]);
        let again = k.expect_json(&["get", &hpa_v2, "multi"]);
        assert_eq!(
            again["spec"]["metrics"].as_array().unwrap().len(),
            2,
            "{release}: {again}"
        );
        assert!(
            again["metadata"].get("annotations").is_none(),
            "{release}: the annotations are v1's alone: {again}"
        );
        if release == "1.20" {
            let beta1 = k.expect_json(&[
                "get",
                "horizontalpodautoscalers.v2beta1.autoscaling",
                "multi",
            ]);
            assert_eq!(
                beta1["spec"]["metrics"][1],
                json!({"type": "Resource", "resource": {"name": "cpu", "targetAverageUtilization": 60}})
            );
        }
    }
}

const ENDPOINT_SLICE_V1BETA1: &str = r#"{
  "apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
  "metadata": {"name": "web-1", "namespace": "default"},
  "addressType": "IPv4",
  "endpoints": [{"addresses": ["10.1.0.5"], "nodeName": "n1",
                 "topology": {"topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": "n1", "rack": "r7"}}]
}"#;

#[test]
fn a_v1beta1_endpoint_slice_keeps_its_topology_through_the_stored_v1() {
    let server = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let file = k.file("slice.json", ENDPOINT_SLICE_V1BETA1);
    k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
    let slice = k.expect_json(&["get", "endpointslices.v1beta1.discovery.k8s.io", "web-1"]);
    assert_eq!(
        slice["endpoints"][0]["topology"],
        json!({"topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": "n1", "rack": "r7"})
    );
}

const EVENTS: &str = r#"
import sys, json
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
release = sys.argv[2]
api = client.ApiClient()
core, events = client.CoreV1Api(api), client.EventsV1Api(api)

# Written through events.k8s.io/v1, read through the core group.
events.create_namespaced_event("default", {
    "metadata": {"name": "e1"}, "eventTime": "2026-11-27T05:00:00.000000Z",
    "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
    "action": "Scale", "reason": "Scaled", "type": "Normal", "note": "scaled up",
    "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"}})
e1 = core.read_namespaced_event("e1", "default")
assert e1.message == "scaled up", e1
assert e1.involved_object.kind == "Deployment" and e1.involved_object.name == "web", e1
assert e1.reporting_component == "example.com/ctl", e1

# Written through the core group, listed through events.k8s.io/v1.
core.create_namespaced_event("default", {
    "metadata": {"name": "e2"}, "message": "pulled", "reason": "Pulled", "type": "Normal",
    "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
    "source": {"component": "kubelet", "host": "n1"}, "count": 3,
    "firstTimestamp": "2026-11-27T05:00:00Z", "lastTimestamp": "2026-11-27T05:01:00Z"})
listed = {e.metadata.name: e for e in events.list_namespaced_event("default").items}
assert set(listed) >= {"e1", "e2"}, listed.keys()
e2 = listed["e2"]
assert e2.note == "pulled" and e2.regarding.name == "p", e2
assert e2.deprecated_source.component == "kubelet" and e2.deprecated_count == 3, e2
assert e1.metadata.uid == listed["e1"].metadata.uid

# One object: deleted through one group, gone from the other.
events.delete_namespaced_event("e2", "default")
names = [e.metadata.name for e in core.list_namespaced_event("default").items]
assert "e2" not in names, names
print("ok")
"#;

#[test]
fn python_client_sees_one_event_through_both_event_groups() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        expect_python_ok(&server, EVENTS, release);
    }
}

const CRD_V1BETA1: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "backups.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced", "version": "v1",
    "names": {"plural": "backups", "singular": "backup", "kind": "Backup"},
    "validation": {"openAPIV3Schema": {"type": "object", "properties": {
      "spec": {"type": "object", "properties": {"keep": {"type": "integer", "minimum": 1}}}}}},
    "additionalPrinterColumns": [{"name": "Keep", "type": "integer", "JSONPath": ".spec.keep"}],
    "subresources": {"status": {}}
  }
}"#;

/// A 1.20 cluster's CRDs were often written as v1beta1, with one schema for every version.
#[test]
fn a_v1beta1_custom_resource_definition_serves_its_kind_and_reads_as_v1() {
    let server = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let file = k.file("crd.json", CRD_V1BETA1);
    k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
    k.expect_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/backups.example.com",
        "--timeout=20s",
    ]);

    let v1 = k.expect_json(&[
        "get",
        "customresourcedefinitions.v1.apiextensions.k8s.io",
        "backups.example.com",
    ]);
    let version = &v1["spec"]["versions"][0];
    assert_eq!(version["name"], "v1");
    assert_eq!(version["storage"], true);
    assert_eq!(
        version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["keep"]["minimum"],
        1
    );
    assert_eq!(
        version["additionalPrinterColumns"][0]["jsonPath"],
        ".spec.keep"
    );
    assert_eq!(version["subresources"], json!({"status": {}}));

    // The kind is served with the schema and columns said once for every version.
    let backup = k.file(
        "backup.json",
        r#"{"apiVersion": "example.com/v1", "kind": "Backup",
            "metadata": {"name": "nightly", "namespace": "default"}, "spec": {"keep": 3}}"#,
    );
    k.expect_ok(&["create", "--validate=false", "-f", backup.to_str().unwrap()]);
    let table = k.expect_ok(&["get", "backups"]);
    assert!(table.contains("KEEP") && table.contains('3'), "{table}");
    let refused = k.file(
        "bad.json",
        r#"{"apiVersion": "example.com/v1", "kind": "Backup",
            "metadata": {"name": "none", "namespace": "default"}, "spec": {"keep": 0}}"#,
    );
    let error = k.expect_failure(&[
        "create",
        "--validate=false",
        "-f",
        refused.to_str().unwrap(),
    ]);
    assert!(error.contains("spec.keep"), "{error}");

    // Read back through v1beta1, the schema is said once again.
    let beta = k.expect_json(&[
        "get",
        "customresourcedefinitions.v1beta1.apiextensions.k8s.io",
        "backups.example.com",
    ]);
    assert_eq!(beta["spec"]["version"], "v1");
    assert_eq!(
        beta["spec"]["additionalPrinterColumns"][0]["JSONPath"],
        ".spec.keep"
    );
    assert!(
        beta["spec"]["versions"][0].get("schema").is_none(),
        "{beta}"
    );
}

const SLICE_V1BETA1: &str = r#"{
  "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
  "metadata": {"name": "node-1-gpus"},
  "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
           "pool": {"name": "node-1", "resourceSliceCount": 1},
           "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}}}}]}
}"#;

/// The dynamic resource allocation betas, switched on: v1beta1 says a device's fields under
/// `basic`, v1 on the device itself (`pkg/apis/resource/v1beta1/conversion.go`).
#[test]
fn a_v1beta1_resource_slice_reads_flat_through_v1() {
    let mut options = ServerOptions::release("1.36");
    options
        .args
        .push("--runtime-config=resource.k8s.io/v1beta1=true".to_owned());
    let server = KapiServer::start(&options).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let file = k.file("slice.json", SLICE_V1BETA1);
    k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
    let v1 = k.expect_json(&["get", "resourceslices.v1.resource.k8s.io", "node-1-gpus"]);
    assert_eq!(
        v1["spec"]["devices"],
        json!([{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}])
    );
    let beta = k.expect_json(&[
        "get",
        "resourceslices.v1beta1.resource.k8s.io",
        "node-1-gpus",
    ]);
    assert_eq!(
        beta["spec"]["devices"],
        json!([{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}}}}])
    );
}
