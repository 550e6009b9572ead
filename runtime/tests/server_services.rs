//! Service addresses over a store written before the server allocated them, across the paths
//! that delete a Service, and across replicas sharing a store; and what a new server holds
//! from the start, through the router.
//!
//! Upstream mirrored: the repair controllers that rebuild the allocators from the stored
//! Services (`pkg/registry/core/service/ipallocator/controller/repair.go`,
//! `portallocator/controller/repair.go`), the release of a deleted Service's values
//! (`pkg/registry/core/service/storage/storage.go`, `afterDelete`), the controlplane's
//! `kubernetes` Service and kube-controller-manager's serviceaccounts controller.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kapi::meta::ObjectMeta;
use kapi::storage::{EmbeddedStorage, Storage};
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::{Harness, MERGE, builder, eventually, store_options};

mod support;

/// The core Service, its spec kept as JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "Service", namespaced, status)]
struct Service {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<Value>,
}

/// The core ServiceAccount.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "ServiceAccount", namespaced)]
struct ServiceAccount {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
}

const SERVICES: &str = "/api/v1/namespaces/default/services";

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register::<Service>();
    registry.register::<ServiceAccount>();
    registry
}

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

/// Serves a store that already holds Services as an earlier kapi wrote them: one without a
/// cluster IP, one with an address and a node port a client asked for.
async fn over_old_data() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path(), store_options())
        .await
        .unwrap();
    let stored = [
        (
            "legacy",
            json!({"type": "ClusterIP", "ports": [{"port": 80}]}),
        ),
        (
            "held",
            json!({"type": "NodePort", "clusterIP": "10.0.0.50",
                   "ports": [{"port": 80, "nodePort": 30050}]}),
        ),
    ];
    for (name, spec) in stored {
        let mut object = service(name, spec);
        object["metadata"]["namespace"] = json!("default");
        object["metadata"]["uid"] = json!(format!("uid-{name}"));
        storage
            .create(
                &format!("/registry/core/services/default/{name}"),
                serde_json::to_vec(&object).unwrap().into(),
            )
            .await
            .unwrap();
    }
    Harness::serve(
        storage,
        Some(dir),
        builder(registry(), KubeVersion::new(1, 36)),
    )
    .await
}

/// A merge patch of a label only: an update that says nothing of addresses.
async fn touch(h: &Harness, name: &str) -> Value {
    h.ok_as(
        "PATCH",
        &format!("{SERVICES}/{name}"),
        MERGE,
        Some(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
}

#[tokio::test]
async fn services_stored_before_allocation_keep_what_they_hold_and_get_an_address_on_update() {
    let h = over_old_data().await;
    // The stored values count as taken from the first request on.
    let (code, refused) = h
        .call(
            "POST",
            SERVICES,
            Some(service(
                "dup",
                json!({"clusterIP": "10.0.0.50", "ports": [{"port": 80}]}),
            )),
        )
        .await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["message"],
        r#"Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.50"}: failed to allocate IP 10.0.0.50: provided IP is already allocated"#
    );
    let (code, refused) = h
        .call(
            "POST",
            SERVICES,
            Some(service(
                "np",
                json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30050}]}),
            )),
        )
        .await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["details"]["causes"][0],
        json!({"reason": "FieldValueInvalid", "field": "spec.ports[0].nodePort",
               "message": "Invalid value: 30050: provided port is already allocated"})
    );

    // Read as stored; the first update gives it an address (and keeps `held`'s).
    let legacy = h.ok("GET", &format!("{SERVICES}/legacy"), None).await;
    assert!(legacy["spec"].get("clusterIP").is_none(), "{legacy}");
    let patched = touch(&h, "legacy").await;
    let ip = patched["spec"]["clusterIP"].as_str().unwrap();
    assert!(ip.starts_with("10.0.0."), "{patched}");
    assert_eq!(patched["spec"]["clusterIPs"], json!([ip]));
    let held = touch(&h, "held").await;
    assert_eq!(held["spec"]["clusterIP"], "10.0.0.50");
    assert_eq!(held["spec"]["ports"][0]["nodePort"], 30050);
}

#[tokio::test]
async fn a_new_server_holds_the_kubernetes_service_and_default_accounts() {
    let h = over_old_data().await;
    let kubernetes = h.ok("GET", &format!("{SERVICES}/kubernetes"), None).await;
    assert_eq!(kubernetes["spec"]["clusterIP"], "10.0.0.1");
    assert_eq!(
        kubernetes["spec"]["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 443}]),
        "a router without a port targets 443"
    );
    h.ok(
        "GET",
        "/api/v1/namespaces/kube-system/serviceaccounts/default",
        None,
    )
    .await;
}

#[tokio::test]
async fn a_namespace_deleted_with_its_services_gives_their_addresses_back() {
    let h = over_old_data().await;
    h.create_namespace("team").await;
    let team = "/api/v1/namespaces/team/services";
    let spec = json!({"clusterIP": "10.0.0.60", "type": "NodePort",
                      "ports": [{"port": 80, "nodePort": 30060}]});
    h.ok("POST", team, Some(service("web", spec.clone()))).await;
    h.ok("DELETE", "/api/v1/namespaces/team", None).await;
    // The namespace lifecycle deletes the Service from the store, not through a handler.
    eventually(
        Duration::from_secs(10),
        Duration::from_millis(50),
        async || match h
            .call("POST", SERVICES, Some(service("again", spec.clone())))
            .await
        {
            (201, _) => Ok(()),
            (code, body) => Err(format!("{code} {body}")),
        },
    )
    .await;
}

#[tokio::test]
async fn replicas_over_one_store_see_each_others_addresses() {
    let a = over_old_data().await;
    let b = a
        .replica(builder(registry(), KubeVersion::new(1, 36)))
        .await;
    let spec = json!({"clusterIP": "10.0.0.70", "ports": [{"port": 80}]});
    a.ok("POST", SERVICES, Some(service("on-a", spec.clone())))
        .await;
    // B learns it from the Services' watch.
    eventually(
        Duration::from_secs(10),
        Duration::from_millis(50),
        async || match b
            .call("POST", SERVICES, Some(service("on-b", spec.clone())))
            .await
        {
            (422, body)
                if body["message"]
                    .as_str()
                    .unwrap()
                    .ends_with("already allocated") =>
            {
                Ok(())
            }
            (code, body) => {
                if code == 201 {
                    b.ok("DELETE", &format!("{SERVICES}/on-b"), None).await;
                }
                Err(format!("{code} {body}"))
            }
        },
    )
    .await;
}
