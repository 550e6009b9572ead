//! A resource served in several versions and groups and stored once (`kapi::conversion`), as
//! kube-apiserver stores each built-in once in its storage version: writes through any member
//! land under the storage group's keys in the storage version; reads, lists and watches through
//! any member see every object, converted; and a store written by an earlier kapi, which kept
//! each group's objects under its own keys in the version they were sent in, opens with every
//! object in place.
//!
//! Upstream mirrored: the storage factory's cohabiting resources
//! (`pkg/kubeapiserver/default_storage_factory_builder.go`: Ingresses of `extensions` stored with
//! `networking.k8s.io`'s, Events of `events.k8s.io` with the core group's) and the versioning
//! codec that converts to the storage version on the way in and back on the way out.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kapi::conversion::{Family, Step, Version};
use kapi::meta::ObjectMeta;
use kapi::storage::{EmbeddedStorage, Storage};
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::{Harness, builder, store_options};

mod support;

/// Gadgets: stored as `example.com/v1` (`spec.size`), also served as `example.com/v1beta1`
/// and in another group, `old.example.com/v1`, which both call the field `legacySize`.
static GADGETS: Family = Family {
    resource: "gadgets",
    storage: "example.com/v1",
    versions: &[
        Version {
            api_version: "example.com/v1beta1",
            steps: &[Step::moved("spec", "legacySize", "size")],
        },
        Version {
            api_version: "old.example.com/v1",
            steps: &[Step::moved("spec", "legacySize", "size")],
        },
    ],
};

macro_rules! gadget {
    ($name:ident, $group:literal, $version:literal) => {
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
        #[resource(group = $group, version = $version, kind = "Gadget", plural = "gadgets")]
        #[resource(namespaced, family = GADGETS)]
        struct $name {
            #[serde(rename = "apiVersion")]
            api_version: ApiVersion<Self>,
            kind: Kind<Self>,
            #[serde(default)]
            metadata: ObjectMeta,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            spec: Option<Value>,
        }
    };
}

gadget!(GadgetV1, "example.com", "v1");
gadget!(GadgetV1beta1, "example.com", "v1beta1");
gadget!(OldGadget, "old.example.com", "v1");

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register::<GadgetV1>();
    registry.register::<GadgetV1beta1>();
    registry.register::<OldGadget>();
    registry
}

const V1: &str = "/apis/example.com/v1/namespaces/default/gadgets";
const V1BETA1: &str = "/apis/example.com/v1beta1/namespaces/default/gadgets";
const OLD: &str = "/apis/old.example.com/v1/namespaces/default/gadgets";

fn gadget(api_version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
}

async fn stored(h: &Harness, key: &str) -> Option<Value> {
    let kv = h.storage.get(key, None).await.unwrap()?;
    Some(serde_json::from_slice(&kv.value).unwrap())
}

#[tokio::test]
async fn writes_through_any_member_are_stored_once_in_the_storage_version() {
    let h = Harness::in_temp_dir(
        store_options(),
        builder(registry(), KubeVersion::new(1, 36)),
    )
    .await;
    let created = h
        .ok(
            "POST",
            OLD,
            Some(gadget("old.example.com/v1", "a", json!({"legacySize": 3}))),
        )
        .await;
    // The answer is in the version asked for.
    assert_eq!(created["apiVersion"], "old.example.com/v1");
    assert_eq!(created["spec"], json!({"legacySize": 3}));

    let object = stored(&h, "/registry/example.com/gadgets/default/a")
        .await
        .unwrap();
    assert_eq!(object["apiVersion"], "example.com/v1");
    assert_eq!(object["spec"], json!({"size": 3}));
    let others = h
        .storage
        .list("/registry/old.example.com/", None, None, None)
        .await
        .unwrap();
    assert!(
        others.items.is_empty(),
        "nothing under the member group's keys"
    );

    // Every member reads it, converted; the resourceVersion is the one stored object's.
    let v1 = h.ok("GET", &format!("{V1}/a"), None).await;
    assert_eq!(v1["spec"], json!({"size": 3}));
    let beta = h.ok("GET", &format!("{V1BETA1}/a"), None).await;
    assert_eq!(beta["apiVersion"], "example.com/v1beta1");
    assert_eq!(beta["spec"], json!({"legacySize": 3}));
    assert_eq!(beta["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        beta["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // An update through the storage version is seen through the other group.
    let mut next = v1.clone();
    next["spec"]["size"] = json!(5);
    h.ok("PUT", &format!("{V1}/a"), Some(next)).await;
    let old = h.ok("GET", &format!("{OLD}/a"), None).await;
    assert_eq!(old["spec"], json!({"legacySize": 5}));

    // A delete through one member deletes the one object.
    h.ok("DELETE", &format!("{V1BETA1}/a"), None).await;
    let (code, _) = h.call("GET", &format!("{OLD}/a"), None).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn lists_and_watches_through_any_member_see_every_object() {
    let h = Harness::in_temp_dir(
        store_options(),
        builder(registry(), KubeVersion::new(1, 36)),
    )
    .await;
    let mut watch = h.watch(&format!("{V1BETA1}?watch=true"), None).await;
    h.ok(
        "POST",
        V1,
        Some(gadget("example.com/v1", "one", json!({"size": 1}))),
    )
    .await;
    h.ok(
        "POST",
        OLD,
        Some(gadget(
            "old.example.com/v1",
            "two",
            json!({"legacySize": 2}),
        )),
    )
    .await;
    for (name, size) in [("one", 1), ("two", 2)] {
        let event = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(event["type"], "ADDED");
        let object = &event["object"];
        assert_eq!(object["apiVersion"], "example.com/v1beta1");
        assert_eq!(object["metadata"]["name"], name);
        assert_eq!(object["spec"], json!({"legacySize": size}));
    }
    let listed = h.ok("GET", OLD, None).await;
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["one", "two"]);
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "old.example.com/v1" && i["spec"].get("size").is_none())
    );
}

/// Serves a store an earlier kapi wrote: each group's objects under its own keys, each in the
/// version it was sent in.
async fn over_old_data(objects: &[(&str, Value)]) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path(), store_options())
        .await
        .unwrap();
    for (key, object) in objects {
        storage
            .create(key, serde_json::to_vec(object).unwrap().into())
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

fn old_object(api_version: &str, name: &str, uid: &str, spec: Value) -> Value {
    let mut object = gadget(api_version, name, spec);
    object["metadata"]["namespace"] = json!("default");
    object["metadata"]["uid"] = json!(uid);
    object
}

#[tokio::test]
async fn a_store_written_by_an_earlier_kapi_opens_with_every_object_in_place() {
    let h = over_old_data(&[
        // Kept under the other group's keys before the groups shared one storage.
        (
            "/registry/old.example.com/gadgets/default/moved",
            old_object(
                "old.example.com/v1",
                "moved",
                "uid-moved",
                json!({"legacySize": 7}),
            ),
        ),
        // Stored in the version it was sent in, under the storage group's keys.
        (
            "/registry/example.com/gadgets/default/beta",
            old_object(
                "example.com/v1beta1",
                "beta",
                "uid-beta",
                json!({"legacySize": 4}),
            ),
        ),
        // Two objects of one name, one per group: the storage group's stays, the other is
        // left under its old key, not lost.
        (
            "/registry/example.com/gadgets/default/both",
            old_object("example.com/v1", "both", "uid-new", json!({"size": 1})),
        ),
        (
            "/registry/old.example.com/gadgets/default/both",
            old_object(
                "old.example.com/v1",
                "both",
                "uid-old",
                json!({"legacySize": 9}),
            ),
        ),
        // A version no member is (an alpha API of the same name): served renamed, not a 500.
        (
            "/registry/example.com/gadgets/default/alpha",
            old_object(
                "example.com/v1alpha9",
                "alpha",
                "uid-alpha",
                json!({"size": 3}),
            ),
        ),
    ])
    .await;
    let alpha = h.ok("GET", &format!("{V1}/alpha"), None).await;
    assert_eq!(alpha["apiVersion"], "example.com/v1");
    assert_eq!(alpha["spec"], json!({"size": 3}));
    let listed = h.ok("GET", V1BETA1, None).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 4, "{listed}");

    let moved = h.ok("GET", &format!("{V1}/moved"), None).await;
    assert_eq!(moved["spec"], json!({"size": 7}));
    assert_eq!(moved["metadata"]["uid"], "uid-moved");
    let now = stored(&h, "/registry/example.com/gadgets/default/moved")
        .await
        .unwrap();
    assert_eq!(now["apiVersion"], "example.com/v1");
    assert!(
        stored(&h, "/registry/old.example.com/gadgets/default/moved")
            .await
            .is_none()
    );

    // Read in any version, converted from the one it was stored in.
    let beta = h.ok("GET", &format!("{V1}/beta"), None).await;
    assert_eq!(beta["spec"], json!({"size": 4}));
    let old = h.ok("GET", &format!("{OLD}/beta"), None).await;
    assert_eq!(old["spec"], json!({"legacySize": 4}));

    let both = h.ok("GET", &format!("{OLD}/both"), None).await;
    assert_eq!(both["metadata"]["uid"], "uid-new");
    let kept = stored(&h, "/registry/old.example.com/gadgets/default/both")
        .await
        .unwrap();
    assert_eq!(kept["metadata"]["uid"], "uid-old");
}

#[tokio::test]
async fn a_move_cut_short_by_a_crash_finishes_at_the_next_start() {
    // The create of the new key happened; the delete of the old one did not.
    let object = old_object(
        "old.example.com/v1",
        "half",
        "uid-half",
        json!({"legacySize": 2}),
    );
    let mut converted = GADGETS.convert(object.clone(), "example.com/v1").unwrap();
    converted["metadata"]["namespace"] = json!("default");
    let h = over_old_data(&[
        ("/registry/old.example.com/gadgets/default/half", object),
        ("/registry/example.com/gadgets/default/half", converted),
    ])
    .await;
    assert!(
        stored(&h, "/registry/old.example.com/gadgets/default/half")
            .await
            .is_none()
    );
    let half = h.ok("GET", &format!("{V1}/half"), None).await;
    assert_eq!(half["spec"], json!({"size": 2}));
}
