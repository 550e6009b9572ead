//! One resource served in three versions of different shapes from one stored version:
//! `Registry::register_versions` with a hub (`v1`, `spec.replicas: i32`) and two spokes
//! (`v1beta1` renames it `spec.count`; `v1alpha1` has it as text, `spec.size`). Writes through
//! any version are stored in v1; gets, lists, watches, patches and write answers come back in
//! the requested version with the same metadata; objects stored before the conversions existed
//! are converted from the version they carry; failed conversions are 500s.

// The helpers below are test code too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kapi::crd::{Conversions, Hub, round_trip};
use kapi::meta::ObjectMeta;
use kapi::server::Server;
use kapi::storage::{Bytes, Storage};
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::Harness;

mod support;

/// Where a `v1alpha1` size that is not a number is kept while stored as v1.
const SIZE_ANNOTATION: &str = "example.com/v1alpha1-size";

mod v1 {
    use super::*;

    /// The hub and storage version.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
    #[resource(
        group = "example.com",
        version = "v1",
        kind = "Widget",
        namespaced,
        status
    )]
    pub(crate) struct Widget {
        #[serde(rename = "apiVersion")]
        pub(crate) api_version: ApiVersion<Self>,
        pub(crate) kind: Kind<Self>,
        #[serde(default)]
        pub(crate) metadata: ObjectMeta,
        #[serde(default)]
        pub(crate) spec: WidgetSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) status: Option<WidgetStatus>,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct WidgetSpec {
        #[serde(default)]
        pub(crate) replicas: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) color: Option<String>,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct WidgetStatus {
        #[serde(default)]
        pub(crate) ready: bool,
    }

    impl Hub for Widget {}
}

mod v1beta1 {
    use super::*;

    /// `replicas` renamed `count`, `color` spelled `colour`.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
    #[resource(
        group = "example.com",
        version = "v1beta1",
        kind = "Widget",
        namespaced,
        status
    )]
    pub(crate) struct Widget {
        #[serde(rename = "apiVersion")]
        pub(crate) api_version: ApiVersion<Self>,
        pub(crate) kind: Kind<Self>,
        #[serde(default)]
        pub(crate) metadata: ObjectMeta,
        #[serde(default)]
        pub(crate) spec: WidgetSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) status: Option<v1::WidgetStatus>,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct WidgetSpec {
        #[serde(default)]
        pub(crate) count: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) colour: Option<String>,
    }
}

mod v1alpha1 {
    use super::*;

    /// The size as text ("3", or anything a user typed), no colour.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
    #[resource(
        group = "example.com",
        version = "v1alpha1",
        kind = "Widget",
        namespaced,
        status
    )]
    pub(crate) struct Widget {
        #[serde(rename = "apiVersion")]
        pub(crate) api_version: ApiVersion<Self>,
        pub(crate) kind: Kind<Self>,
        #[serde(default)]
        pub(crate) metadata: ObjectMeta,
        #[serde(default)]
        pub(crate) spec: WidgetSpec,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub(crate) status: Option<v1::WidgetStatus>,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct WidgetSpec {
        #[serde(default)]
        pub(crate) size: String,
    }
}

impl From<v1beta1::Widget> for v1::Widget {
    fn from(w: v1beta1::Widget) -> Self {
        // A From impl that panics must not take the server down; this one does on purpose.
        assert!(
            w.spec.colour.as_deref() != Some("explode"),
            "colour explode"
        );
        v1::Widget {
            metadata: w.metadata,
            spec: v1::WidgetSpec {
                replicas: w.spec.count,
                color: w.spec.colour,
            },
            status: w.status,
            ..Default::default()
        }
    }
}

impl From<v1::Widget> for v1beta1::Widget {
    fn from(w: v1::Widget) -> Self {
        v1beta1::Widget {
            metadata: w.metadata,
            spec: v1beta1::WidgetSpec {
                count: w.spec.replicas,
                colour: w.spec.color,
            },
            status: w.status,
            ..Default::default()
        }
    }
}

impl From<v1alpha1::Widget> for v1::Widget {
    fn from(w: v1alpha1::Widget) -> Self {
        let mut metadata = w.metadata;
        // A size that is no number survives the trip in an annotation, as upstream conversion
        // webhooks do for fields the storage version lacks.
        let replicas = match w.spec.size.parse() {
            Ok(n) => {
                metadata.annotations.remove(SIZE_ANNOTATION);
                n
            }
            Err(_) => {
                metadata
                    .annotations
                    .insert(SIZE_ANNOTATION.to_owned(), w.spec.size);
                0
            }
        };
        v1::Widget {
            metadata,
            spec: v1::WidgetSpec {
                replicas,
                color: None,
            },
            status: w.status,
            ..Default::default()
        }
    }
}

impl From<v1::Widget> for v1alpha1::Widget {
    fn from(w: v1::Widget) -> Self {
        let mut metadata = w.metadata;
        let size = match metadata.annotations.remove(SIZE_ANNOTATION) {
            Some(text) if w.spec.replicas == 0 => text,
            _ => w.spec.replicas.to_string(),
        };
        v1alpha1::Widget {
            metadata,
            spec: v1alpha1::WidgetSpec { size },
            status: w.status,
            ..Default::default()
        }
    }
}

const V1: &str = "/apis/example.com/v1/namespaces/default/widgets";
const V1BETA1: &str = "/apis/example.com/v1beta1/namespaces/default/widgets";
const V1ALPHA1: &str = "/apis/example.com/v1alpha1/namespaces/default/widgets";
/// Every version's collection, with the spec each shows for 3 replicas of colour red (v1alpha1
/// has no colour).
const VERSIONS: [(&str, &str); 3] = [(V1, "v1"), (V1BETA1, "v1beta1"), (V1ALPHA1, "v1alpha1")];

fn spec_in(version: &str, replicas: i32, color: &str) -> Value {
    match version {
        "v1" => json!({"replicas": replicas, "color": color}),
        "v1beta1" => json!({"count": replicas, "colour": color}),
        _ => json!({"size": replicas.to_string()}),
    }
}

fn store_key(name: &str) -> String {
    format!("/registry/example.com/widgets/default/{name}")
}

async fn harness() -> Harness {
    let mut registry = Registry::new();
    registry.register_versions(
        Conversions::<v1::Widget>::new()
            .spoke::<v1beta1::Widget>()
            .spoke::<v1alpha1::Widget>(),
    );
    let builder = Server::builder()
        .registry(registry)
        .kube_version(KubeVersion::new(1, 30))
        .resource_version_wait(Duration::from_millis(200))
        .bookmark_interval(Duration::from_millis(100));
    Harness::in_temp_dir(support::store_options(), builder).await
}

impl Harness {
    /// The object as the store holds it.
    async fn stored(&self, name: &str) -> Value {
        let kv = self.storage.get(&store_key(name), None).await.unwrap();
        serde_json::from_slice(&kv.unwrap().value).unwrap()
    }
}

/// The metadata every version must agree on.
fn identity(object: &Value) -> Value {
    let meta = &object["metadata"];
    json!([
        meta["name"],
        meta["uid"],
        meta["resourceVersion"],
        meta["creationTimestamp"],
        meta["generation"],
        meta["labels"]
    ])
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "spec": spec,
    })
}

#[tokio::test]
async fn a_write_through_one_version_is_stored_as_the_hub_and_served_in_every_version() {
    let h = harness().await;
    // Created through each version in turn; every version then serves each object in its
    // own shape with one identity.
    for (i, (collection, version)) in VERSIONS.iter().enumerate() {
        let name = format!("from-{version}");
        let replicas = i32::try_from(i).unwrap() + 2;
        let created = h
            .ok(
                "POST",
                collection,
                Some(widget(version, &name, spec_in(version, replicas, "red"))),
            )
            .await;
        assert_eq!(created["apiVersion"], format!("example.com/{version}"));
        assert_eq!(created["spec"], spec_in(version, replicas, "red"));

        // The store holds the hub's shape (v1alpha1 has no colour to give).
        let stored = h.stored(&name).await;
        assert_eq!(stored["apiVersion"], "example.com/v1", "{stored}");
        assert_eq!(stored["spec"]["replicas"], replicas, "{stored}");
        assert_eq!(stored["metadata"]["uid"], created["metadata"]["uid"]);
        assert!(stored["metadata"].get("resourceVersion").is_none());

        for (other, other_version) in VERSIONS {
            let got = h.ok("GET", &format!("{other}/{name}"), None).await;
            assert_eq!(got["apiVersion"], format!("example.com/{other_version}"));
            assert_eq!(got["kind"], "Widget");
            let color = if *version == "v1alpha1" {
                None
            } else {
                Some("red")
            };
            let want = match (other_version, color) {
                ("v1", None) => json!({"replicas": replicas}),
                ("v1beta1", None) => json!({"count": replicas}),
                (v, c) => spec_in(v, replicas, c.unwrap_or("")),
            };
            assert_eq!(got["spec"], want, "{name} via {other_version}");
            assert_eq!(
                identity(&got),
                identity(&created),
                "{name} via {other_version}"
            );
        }
    }
}

#[tokio::test]
async fn lists_show_every_item_in_the_requested_version() {
    let h = harness().await;
    h.ok(
        "POST",
        V1ALPHA1,
        Some(widget("v1alpha1", "a", json!({"size": "1"}))),
    )
    .await;
    h.ok(
        "POST",
        V1,
        Some(widget("v1", "b", spec_in("v1", 2, "blue"))),
    )
    .await;
    h.ok(
        "POST",
        V1BETA1,
        Some(widget("v1beta1", "c", spec_in("v1beta1", 3, "green"))),
    )
    .await;
    let mut identities = Vec::new();
    for (collection, version) in VERSIONS {
        let list = h.ok("GET", collection, None).await;
        assert_eq!(list["apiVersion"], format!("example.com/{version}"));
        assert_eq!(list["kind"], "WidgetList");
        let items = list["items"].as_array().unwrap();
        let specs: Vec<&Value> = items.iter().map(|i| &i["spec"]).collect();
        let want = match version {
            "v1" => vec![
                json!({"replicas": 1}),
                spec_in("v1", 2, "blue"),
                spec_in("v1", 3, "green"),
            ],
            "v1beta1" => vec![
                json!({"count": 1}),
                spec_in("v1beta1", 2, "blue"),
                spec_in("v1beta1", 3, "green"),
            ],
            _ => vec![
                json!({"size": "1"}),
                json!({"size": "2"}),
                json!({"size": "3"}),
            ],
        };
        assert_eq!(specs, want.iter().collect::<Vec<_>>(), "via {version}");
        assert!(
            items
                .iter()
                .all(|i| i["apiVersion"] == format!("example.com/{version}")),
            "{list}"
        );
        identities.push(items.iter().map(identity).collect::<Vec<_>>());
        // Label selectors and paging work on the converted items too.
        let page = h
            .ok(
                "GET",
                &format!("{collection}?limit=2&labelSelector=app%3Ddemo"),
                None,
            )
            .await;
        assert_eq!(page["items"].as_array().unwrap().len(), 2);
        assert_eq!(page["items"][1]["spec"], want[1]);
    }
    assert_eq!(identities[0], identities[1]);
    assert_eq!(identities[0], identities[2]);
}

#[tokio::test]
async fn watches_convert_initial_and_live_events_to_their_version() {
    let h = harness().await;
    h.ok(
        "POST",
        V1,
        Some(widget("v1", "early", spec_in("v1", 4, "red"))),
    )
    .await;
    let mut watches = Vec::new();
    for (collection, version) in VERSIONS {
        watches.push((
            version,
            h.watch(&format!("{collection}?watch=true"), None).await,
        ));
    }
    for (version, watch) in &mut watches {
        let event = watch.next_change().await.unwrap();
        assert_eq!(event["type"], "ADDED", "{version}");
        assert_eq!(
            event["object"]["apiVersion"],
            format!("example.com/{version}")
        );
        assert_eq!(
            event["object"]["spec"],
            spec_in(version, 4, "red"),
            "{version}"
        );
    }

    let created = h
        .ok(
            "POST",
            V1ALPHA1,
            Some(widget("v1alpha1", "late", json!({"size": "5"}))),
        )
        .await;
    let updated = {
        let mut body = h.ok("GET", &format!("{V1}/late"), None).await;
        body["spec"] = spec_in("v1", 6, "teal");
        h.ok("PUT", &format!("{V1}/late"), Some(body)).await
    };
    let deleted = h.ok("DELETE", &format!("{V1BETA1}/late"), None).await;
    assert_eq!(deleted["spec"], spec_in("v1beta1", 6, "teal"));

    for (version, watch) in &mut watches {
        let added = watch.next_change().await.unwrap();
        assert_eq!(added["type"], "ADDED", "{version}");
        let want = match *version {
            "v1" => json!({"replicas": 5}),
            "v1beta1" => json!({"count": 5}),
            _ => json!({"size": "5"}),
        };
        assert_eq!(added["object"]["spec"], want, "{version}");
        assert_eq!(identity(&added["object"]), identity(&created));

        let modified = watch.next_change().await.unwrap();
        assert_eq!(modified["type"], "MODIFIED", "{version}");
        assert_eq!(modified["object"]["spec"], spec_in(version, 6, "teal"));
        assert_eq!(identity(&modified["object"]), identity(&updated));

        let gone = watch.next_change().await.unwrap();
        assert_eq!(gone["type"], "DELETED", "{version}");
        assert_eq!(
            gone["object"]["apiVersion"],
            format!("example.com/{version}")
        );
        assert_eq!(gone["object"]["spec"], spec_in(version, 6, "teal"));
        assert_eq!(
            gone["object"]["metadata"]["uid"],
            created["metadata"]["uid"]
        );
    }
}

#[tokio::test]
async fn updates_and_patches_apply_in_the_requested_version() {
    let h = harness().await;
    let created = h
        .ok(
            "POST",
            V1ALPHA1,
            Some(widget("v1alpha1", "w", json!({"size": "2"}))),
        )
        .await;

    // PUT through v1, read back through v1alpha1.
    let mut body = h.ok("GET", &format!("{V1}/w"), None).await;
    assert_eq!(
        body["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    body["spec"] = spec_in("v1", 7, "red");
    let put = h.ok("PUT", &format!("{V1}/w"), Some(body)).await;
    assert_eq!(put["metadata"]["generation"], 2);
    let old = h.ok("GET", &format!("{V1ALPHA1}/w"), None).await;
    assert_eq!(old["spec"], json!({"size": "7"}));
    assert_eq!(identity(&old), identity(&put));
    assert_eq!(h.stored("w").await["spec"], spec_in("v1", 7, "red"));

    // A PUT through v1alpha1 keeps what v1alpha1 cannot show only if its From impls do: this
    // pair drops the colour, so the stored object loses it.
    let mut body = old.clone();
    body["spec"] = json!({"size": "8"});
    let put = h.ok("PUT", &format!("{V1ALPHA1}/w"), Some(body)).await;
    assert_eq!(put["spec"], json!({"size": "8"}));
    assert_eq!(h.stored("w").await["spec"], json!({"replicas": 8}));

    // A JSON patch addresses the v1beta1 shape; a merge patch the v1alpha1 one.
    let patch = json!([
        {"op": "test", "path": "/spec/count", "value": 8},
        {"op": "replace", "path": "/spec/count", "value": 9},
        {"op": "add", "path": "/spec/colour", "value": "navy"},
    ]);
    let (code, patched) = h
        .call_as(
            "PATCH",
            &format!("{V1BETA1}/w"),
            "application/json-patch+json",
            Some(patch),
        )
        .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], spec_in("v1beta1", 9, "navy"));
    assert_eq!(h.stored("w").await["spec"], spec_in("v1", 9, "navy"));
    // The v1 path does not exist in v1beta1's shape.
    let (code, _) = h
        .call_as(
            "PATCH",
            &format!("{V1BETA1}/w"),
            "application/json-patch+json",
            Some(json!([{"op": "test", "path": "/spec/replicas", "value": 9}])),
        )
        .await;
    assert_eq!(code, 422);

    let (code, patched) = h
        .call_as(
            "PATCH",
            &format!("{V1ALPHA1}/w"),
            "application/merge-patch+json",
            Some(json!({"spec": {"size": "lots"}})),
        )
        .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], json!({"size": "lots"}));
    // The hub has no room for text: it keeps it in the annotation the conversion chose, and
    // the annotation is not shown through v1alpha1. v1alpha1 has no colour, so it is gone.
    let stored = h.stored("w").await;
    assert_eq!(stored["spec"], json!({"replicas": 0}));
    assert_eq!(stored["metadata"]["annotations"][SIZE_ANNOTATION], "lots");
    assert!(
        patched["metadata"].get("annotations").is_none(),
        "{patched}"
    );

    // The status subresource too: written through v1beta1, seen through v1alpha1.
    let mut body = h.ok("GET", &format!("{V1BETA1}/w"), None).await;
    body["status"] = json!({"ready": true});
    h.ok("PUT", &format!("{V1BETA1}/w/status"), Some(body))
        .await;
    let old = h.ok("GET", &format!("{V1ALPHA1}/w"), None).await;
    assert_eq!(old["status"], json!({"ready": true}));
    assert_eq!(old["spec"], json!({"size": "lots"}));
}

#[tokio::test]
async fn a_round_trip_through_a_spoke_changes_nothing() {
    let h = harness().await;
    let created = h
        .ok("POST", V1, Some(widget("v1", "r", json!({"replicas": 3}))))
        .await;
    let stored = h.stored("r").await;
    // v1 → v1alpha1 → v1 through the server: the v1alpha1 object written back unchanged is a
    // no-op, so nothing moves, not even the resourceVersion.
    let old = h.ok("GET", &format!("{V1ALPHA1}/r"), None).await;
    let put = h
        .ok("PUT", &format!("{V1ALPHA1}/r"), Some(old.clone()))
        .await;
    assert_eq!(put, old);
    let again = h.ok("GET", &format!("{V1}/r"), None).await;
    assert_eq!(again, created);
    assert_eq!(h.stored("r").await, stored);

    // And through the types alone.
    let typed: v1::Widget = serde_json::from_value(created.clone()).unwrap();
    assert_eq!(
        round_trip::<_, v1::Widget>(v1alpha1::Widget::from(typed.clone())),
        v1alpha1::Widget::from(typed.clone())
    );
    assert_eq!(
        v1::Widget::from(v1alpha1::Widget::from(typed.clone())),
        typed
    );
    assert_eq!(
        v1::Widget::from(v1beta1::Widget::from(typed.clone())),
        typed
    );
}

#[tokio::test]
async fn objects_stored_in_a_spoke_version_are_converted_from_it() {
    let h = harness().await;
    // Stored as v1alpha1 before the conversions were registered (when every version was
    // stored as written).
    let legacy = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": {"name": "legacy", "namespace": "default", "uid": "u-legacy",
                     "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 1},
        "spec": {"size": "4"},
    });
    let kv = h
        .storage
        .create(
            &store_key("legacy"),
            Bytes::from(serde_json::to_vec(&legacy).unwrap()),
        )
        .await
        .unwrap();
    for (collection, version) in VERSIONS {
        let got = h.ok("GET", &format!("{collection}/legacy"), None).await;
        assert_eq!(got["apiVersion"], format!("example.com/{version}"));
        let want = match version {
            "v1" => json!({"replicas": 4}),
            "v1beta1" => json!({"count": 4}),
            _ => json!({"size": "4"}),
        };
        assert_eq!(got["spec"], want, "{version}");
        assert_eq!(got["metadata"]["uid"], "u-legacy");
        assert_eq!(
            got["metadata"]["resourceVersion"],
            kv.mod_revision.to_string()
        );
    }
    // The next write stores it in the hub's version.
    let (code, patched) = h
        .call_as(
            "PATCH",
            &format!("{V1}/legacy"),
            "application/merge-patch+json",
            Some(json!({"spec": {"color": "gold"}})),
        )
        .await;
    assert_eq!(code, 200, "{patched}");
    let stored = h.stored("legacy").await;
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert_eq!(stored["spec"], json!({"replicas": 4, "color": "gold"}));
    assert_eq!(stored["metadata"]["uid"], "u-legacy");
}

#[tokio::test]
async fn failed_conversions_are_internal_errors() {
    let h = harness().await;
    // Stored in a shape its version cannot decode.
    let broken = json!({
        "apiVersion": "example.com/v1alpha1", "kind": "Widget",
        "metadata": {"name": "broken", "namespace": "default", "uid": "u-broken"},
        "spec": {"size": 5},
    });
    h.storage
        .create(
            &store_key("broken"),
            Bytes::from(serde_json::to_vec(&broken).unwrap()),
        )
        .await
        .unwrap();
    // Stored in a version no one registered.
    let unknown = json!({
        "apiVersion": "example.com/v9", "kind": "Widget",
        "metadata": {"name": "unknown", "namespace": "default"},
    });
    h.storage
        .create(
            &store_key("unknown"),
            Bytes::from(serde_json::to_vec(&unknown).unwrap()),
        )
        .await
        .unwrap();

    let panics = widget(
        "v1beta1",
        "panics",
        json!({"count": 1, "colour": "explode"}),
    );
    let cases: Vec<(&str, String, Option<Value>, &str)> = vec![
        (
            "GET",
            format!("{V1}/broken"),
            None,
            "conversion of widgets.example.com from \"example.com/v1alpha1\" to \"example.com/v1\" failed: object does not decode",
        ),
        (
            "GET",
            format!("{V1BETA1}/unknown"),
            None,
            "conversion of widgets.example.com from \"example.com/v9\" to \"example.com/v1beta1\" failed: no conversion registered for version \"v9\"",
        ),
        (
            "GET",
            V1.to_owned(),
            None,
            "conversion of widgets.example.com",
        ),
        (
            "POST",
            V1BETA1.to_owned(),
            Some(panics.clone()),
            "conversion of widgets.example.com from \"example.com/v1beta1\" to \"example.com/v1\" failed: conversion panicked: colour explode",
        ),
        (
            "POST",
            format!("{V1BETA1}?dryRun=All"),
            Some(panics),
            "conversion panicked: colour explode",
        ),
    ];
    for (method, uri, body, want) in cases {
        let (code, status) = h.call(method, &uri, body).await;
        assert_eq!(code, 500, "{method} {uri}: {status}");
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "InternalError");
        let message = status["message"].as_str().unwrap();
        assert!(message.contains(want), "{method} {uri}: {message}");
    }
    // Nothing was stored by the failed create, and the server still answers.
    let (code, _) = h.call("GET", &format!("{V1}/panics"), None).await;
    assert_eq!(code, 404);
    // A watch whose initial events cannot be converted fails before it starts; one that
    // meets such an object later ends with an ERROR event.
    let (code, status) = h.call("GET", &format!("{V1ALPHA1}?watch=true"), None).await;
    assert_eq!((code, &status["reason"]), (500, &json!("InternalError")));
    let now = h.storage.current_revision().await.unwrap();
    let mut watch = h
        .watch(&format!("{V1}?watch=true&resourceVersion={now}"), None)
        .await;
    let mut later = broken.clone();
    later["metadata"]["name"] = json!("later");
    h.storage
        .create(
            &store_key("later"),
            Bytes::from(serde_json::to_vec(&later).unwrap()),
        )
        .await
        .unwrap();
    let event = watch.next_change().await.unwrap();
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["code"], 500);
    assert!(
        event["object"]["message"]
            .as_str()
            .unwrap()
            .contains("object does not decode"),
        "{event}"
    );
}

#[tokio::test]
async fn dry_runs_answer_in_the_requested_version_and_store_nothing() {
    let h = harness().await;
    // "007" is 7 in the hub and "7" back in v1alpha1: a dry run answers what the real write
    // would, conversions' round trip included.
    let (code, answer) = h
        .call(
            "POST",
            &format!("{V1ALPHA1}?dryRun=All"),
            Some(widget("v1alpha1", "dry", json!({"size": "007"}))),
        )
        .await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["apiVersion"], "example.com/v1alpha1");
    assert_eq!(answer["spec"], json!({"size": "7"}));
    assert!(answer["metadata"].get("resourceVersion").is_none());
    assert!(
        h.storage
            .get(&store_key("dry"), None)
            .await
            .unwrap()
            .is_none()
    );

    let created = h
        .ok(
            "POST",
            V1,
            Some(widget("v1", "dry", spec_in("v1", 1, "red"))),
        )
        .await;
    let stored = h.stored("dry").await;
    let mut body = h.ok("GET", &format!("{V1ALPHA1}/dry"), None).await;
    body["spec"] = json!({"size": "010"});
    let (code, answer) = h
        .call("PUT", &format!("{V1ALPHA1}/dry?dryRun=All"), Some(body))
        .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["spec"], json!({"size": "10"}));
    assert_eq!(
        answer["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(h.stored("dry").await, stored);
}

#[test]
fn versions_registered_alone_have_no_conversion() {
    let mut registry = Registry::new();
    registry
        .register::<v1::Widget>()
        .register::<v1alpha1::Widget>();
    assert_eq!(registry.len(), 2);
    assert!(registry.conversion("example.com", "widgets").is_none());
    // Registering the family afterwards keeps the entries and adds the missing version.
    registry.register_versions(
        Conversions::<v1::Widget>::new()
            .spoke::<v1beta1::Widget>()
            .spoke::<v1alpha1::Widget>(),
    );
    assert_eq!(registry.len(), 3);
    let conversion = registry.conversion("example.com", "widgets").unwrap();
    assert_eq!(conversion.storage_version(), "v1");
    assert_eq!(
        conversion.versions().collect::<Vec<_>>(),
        ["v1", "v1alpha1", "v1beta1"]
    );
}
