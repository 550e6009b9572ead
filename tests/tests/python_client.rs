//! kapi's meta types against the official Kubernetes Python client.
//!
//! Each case is decoded into a kapi type and written by kapi; the Python client decodes that JSON
//! into its own model class (which rejects missing required fields and mistyped values) and writes
//! it back; kapi then decodes the client's JSON and must get the very same value. So a field kapi
//! names, omits or formats differently from upstream shows up as a failure here.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::io::Write;
use std::process::{Command, Stdio};

use kapi::DynamicObject;
use kapi::meta::{
    APIGroupList, APIResourceList, APIVersions, Condition, DeleteOptions, LabelSelector, Status,
    StatusCause, WatchEvent,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Decodes the client's JSON and compares it with the value kapi wrote.
type Comparison = Box<dyn Fn(&Value) -> Result<(), String>>;

/// One value checked through the client: its client model class, kapi's JSON, and how to compare.
struct Case {
    model: &'static str,
    kapi_json: Value,
    same_after_client: Comparison,
}

fn case<T>(model: &'static str, value: T) -> Case
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug + 'static,
{
    let kapi_json = serde_json::to_value(&value).unwrap();
    Case {
        model,
        kapi_json,
        same_after_client: Box::new(move |from_client| {
            let back: T = serde_json::from_value(from_client.clone())
                .map_err(|e| format!("kapi cannot read the client's {model}: {e}"))?;
            if back == value {
                Ok(())
            } else {
                Err(format!(
                    "{model} changed through the client:\n kapi:   {value:?}\n client: {back:?}"
                ))
            }
        }),
    }
}

fn decode<T: DeserializeOwned>(json: Value) -> T {
    serde_json::from_value(json).unwrap()
}

fn config_map() -> DynamicObject {
    decode(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "generateName": "settings-",
            "namespace": "team-a",
            "uid": "3b1e7c52-5e0c-4c1f-9a53-0f5d2b7d8f10",
            "resourceVersion": "1187",
            "generation": 3,
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "deletionTimestamp": "2024-05-07T00:00:00Z",
            "deletionGracePeriodSeconds": 30,
            "labels": {"app": "shop", "tier": "web"},
            "annotations": {"example.com/note": "hello"},
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "shop",
                "uid": "8e2f0b16-7c4d-4a0e-b1c3-1a2b3c4d5e6f",
                "controller": true,
                "blockOwnerDeletion": true
            }],
            "finalizers": ["example.com/cleanup"],
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Apply",
                    "apiVersion": "v1",
                    "time": "2024-05-06T07:08:09Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:color": {}}}
                },
                {
                    "manager": "controller",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2024-05-06T07:09:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:finalizers": {".": {}}}},
                    "subresource": "status"
                }
            ]
        },
        "data": {"color": "blue"}
    }))
}

fn cases() -> Vec<Case> {
    let invalid = Status::invalid(
        "apps",
        "Deployment",
        "shop",
        vec![
            StatusCause::required("spec.selector", ""),
            StatusCause::invalid("metadata.name", &json!("Shop!"), "must be lowercase"),
        ],
    );
    vec![
        case("V1ConfigMap", config_map()),
        case("V1Status", Status::not_found("", "pods", "grafana")),
        case("V1Status", invalid),
        case("V1Status", Status::too_large_resource_version(12, 10, 1)),
        case(
            "V1APIResourceList",
            decode::<APIResourceList>(json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": "apps/v1",
                "resources": [
                    {"name": "deployments", "singularName": "deployment", "namespaced": true,
                     "kind": "Deployment", "shortNames": ["deploy"], "categories": ["all"],
                     "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                               "update", "watch"]},
                    {"name": "deployments/scale", "singularName": "", "namespaced": true,
                     "group": "autoscaling", "version": "v1", "kind": "Scale",
                     "verbs": ["get", "patch", "update"]}
                ]
            })),
        ),
        case(
            "V1APIGroupList",
            decode::<APIGroupList>(json!({
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [{
                    "name": "apps",
                    "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                    "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}
                }]
            })),
        ),
        case(
            "V1APIVersions",
            decode::<APIVersions>(json!({
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]
            })),
        ),
        case(
            "V1DeleteOptions",
            decode::<DeleteOptions>(json!({
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "3b1e7c52-5e0c-4c1f-9a53-0f5d2b7d8f10", "resourceVersion": "7"},
                "propagationPolicy": "Foreground",
                "dryRun": ["All"]
            })),
        ),
        case(
            "V1Condition",
            decode::<Condition>(json!({
                "type": "Ready",
                "status": "False",
                "observedGeneration": 4,
                "lastTransitionTime": "2024-05-06T07:08:09Z",
                "reason": "MinimumReplicasUnavailable",
                "message": "0 of 3 replicas are ready"
            })),
        ),
        case(
            "V1LabelSelector",
            decode::<LabelSelector>(json!({
                "matchLabels": {"app": "shop"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["web", "api"]},
                    {"key": "canary", "operator": "DoesNotExist"}
                ]
            })),
        ),
        case(
            "V1WatchEvent",
            decode::<WatchEvent<DynamicObject>>(json!({
                "type": "MODIFIED",
                "object": serde_json::to_value(config_map()).unwrap()
            })),
        ),
    ]
}

#[test]
fn meta_types_survive_the_python_client() {
    let cases = cases();
    let request: Vec<Value> = cases
        .iter()
        .map(|c| json!({"model": c.model, "object": c.kapi_json}))
        .collect();
    let script = kapi_e2e::workspace_root().join("tests/python/roundtrip.py");
    let mut child = Command::new(kapi_e2e::python())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&request).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the Python client rejected kapi's JSON:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answers: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answers.len(), cases.len());

    let failures: Vec<String> = cases
        .iter()
        .zip(&answers)
        .filter_map(|(case, answer)| (case.same_after_client)(answer).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn client_rejects_what_kapi_must_never_write() {
    // Guards the guard: a Condition without its required lastTransitionTime must fail in the client,
    // so the round trip above really exercises the client's required-field checks.
    let request = json!([{"model": "V1Condition", "object": {"type": "Ready", "status": "True"}}]);
    let mut child = Command::new(kapi_e2e::python())
        .arg(kapi_e2e::workspace_root().join("tests/python/roundtrip.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    assert!(!child.wait().unwrap().success());
}
