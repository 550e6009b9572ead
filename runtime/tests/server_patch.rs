//! PATCH through the router: kubectl-style JSON, merge and strategic merge patches on the main
//! resource, `/status` and `/scale`, and the error paths (400, 404, 409, 413, 415, 422).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use kapi::merge::{TypeInfo, field};
use kapi::meta::ObjectMeta;
use kapi::storage::EmbeddedOptions;
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::kinds::{
    DEPLOYMENTS, Deployment, GADGETS, GIZMOS, Gadget, Gizmo, ScaledWidget, WIDGETS,
};
use support::{Harness, JSON_PATCH, MERGE, Reply, SMP, rv};

mod support;

static SPROCKET: TypeInfo = TypeInfo::new(&[field("parts").strategy("merge").merge_key("name")]);

/// A kind outside the built-in groups whose author declared strategic metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    group = "example.com",
    version = "v1",
    kind = "Sprocket",
    cluster,
    merge = SPROCKET
)]
struct Sprocket {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parts: Option<Value>,
}

async fn harness() -> Harness {
    let mut registry = Registry::new();
    registry
        .register::<ScaledWidget>()
        .register::<Deployment>()
        .register::<Gizmo>()
        .register::<Gadget>()
        .register::<Sprocket>();
    let builder = support::builder(registry, KubeVersion::new(1, 25));
    let options = EmbeddedOptions::default().with_compaction_interval(None);
    Harness::in_temp_dir(options, builder).await
}

impl Harness {
    async fn patch(&self, uri: &str, content_type: &str, patch: Value) -> Reply {
        self.raw(
            "PATCH",
            uri,
            content_type,
            serde_json::to_vec(&patch).unwrap(),
        )
        .await
    }

    async fn ok_patch(&self, uri: &str, content_type: &str, patch: Value) -> Value {
        let reply = self.patch(uri, content_type, patch).await;
        assert_eq!(reply.code, 200, "PATCH {uri}: {}", reply.body);
        reply.body
    }

    async fn get(&self, uri: &str) -> Reply {
        self.exchange("GET", uri, &[], Vec::new()).await.into()
    }

    async fn widget(&self, name: &str) -> Value {
        self.ok(
            "POST",
            WIDGETS,
            Some(json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": name, "labels": {"app": "w"}},
                "spec": {"replicas": 1, "color": "red"},
            })),
        )
        .await
    }

    async fn deployment(&self, name: &str) -> Value {
        self.ok(
            "POST",
            DEPLOYMENTS,
            Some(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "finalizers": ["example.com/a", "example.com/b"]},
                "spec": {"replicas": 1, "template": {"spec": {"containers": [
                    {"name": "app", "image": "app:1", "args": ["--a"]},
                    {"name": "sidecar", "image": "side:1"}
                ]}}},
            })),
        )
        .await
    }
}

#[tokio::test]
async fn merge_patch_adds_a_label_like_kubectl_label() {
    let h = harness().await;
    let created = h.widget("w").await;
    let uri = format!("{WIDGETS}/w");
    let patched = h
        .ok_patch(
            &uri,
            MERGE,
            json!({"metadata": {"labels": {"tier": "web", "app": null}}}),
        )
        .await;
    assert_eq!(patched["metadata"]["labels"], json!({"tier": "web"}));
    assert_ne!(rv(&patched), rv(&created));
    // Metadata-only changes leave the generation alone; spec changes bump it.
    assert_eq!(patched["metadata"]["generation"], 1);
    let patched = h
        .ok_patch(&uri, MERGE, json!({"spec": {"color": "blue"}}))
        .await;
    assert_eq!(patched["spec"], json!({"replicas": 1, "color": "blue"}));
    assert_eq!(patched["metadata"]["generation"], 2);
    // A no-op patch writes nothing.
    let again = h
        .ok_patch(&uri, MERGE, json!({"spec": {"color": "blue"}}))
        .await;
    assert_eq!(rv(&again), rv(&patched));
    // The stored object is what the patch returned.
    assert_eq!(h.get(&uri).await.body, again);
}

#[tokio::test]
async fn strategic_patch_merges_containers_by_name() {
    let h = harness().await;
    h.deployment("d").await;
    let uri = format!("{DEPLOYMENTS}/d");
    let patched = h
        .ok_patch(
            &uri,
            SMP,
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "app:2"},
                {"name": "extra", "image": "extra:1"}
            ]}}}}),
        )
        .await;
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"],
        json!([
            {"name": "app", "image": "app:2", "args": ["--a"]},
            {"name": "sidecar", "image": "side:1"},
            {"name": "extra", "image": "extra:1"}
        ])
    );
    assert_eq!(patched["spec"]["replicas"], 1);
    assert_eq!(patched["metadata"]["generation"], 2);

    let patched = h
        .ok_patch(
            &uri,
            SMP,
            json!({
                "metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]},
                "spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "extra"}, {"name": "app"}],
                    "containers": [{"name": "sidecar", "$patch": "delete"}]
                }}}
            }),
        )
        .await;
    assert_eq!(patched["metadata"]["finalizers"], json!(["example.com/b"]));
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"],
        json!([
            {"name": "extra", "image": "extra:1"},
            {"name": "app", "image": "app:2", "args": ["--a"]}
        ])
    );

    // Finalizers merge as a set.
    let patched = h
        .ok_patch(
            &uri,
            SMP,
            json!({"metadata": {"finalizers": ["example.com/b", "example.com/c"]}}),
        )
        .await;
    assert_eq!(
        patched["metadata"]["finalizers"],
        json!(["example.com/b", "example.com/c"])
    );

    // Malformed strategic patches are 400; a directive that contradicts the patch is 422.
    for (body, code) in [
        (&b"{"[..], 400),
        (br#"[{"a": 1}]"#, 400),
        (br#"{"spec": {"$patch": "frob"}}"#, 400),
        (
            br#"{"spec": {"template": {"spec": {"containers": [["x"]]}}}}"#,
            422,
        ),
    ] {
        let reply = h.raw("PATCH", &uri, SMP, body.to_vec()).await;
        assert_eq!(reply.code, code, "{}", reply.body);
    }

    // Merge patch on the same kind replaces the list.
    let patched = h
        .ok_patch(
            &uri,
            MERGE,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "only"}]}}}}),
        )
        .await;
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"],
        json!([{"name": "only"}])
    );
}

#[tokio::test]
async fn json_patch_applies_in_order_and_fails_whole() {
    let h = harness().await;
    h.widget("w").await;
    let uri = format!("{WIDGETS}/w");
    let patched = h
        .ok_patch(
            &uri,
            JSON_PATCH,
            json!([
                {"op": "test", "path": "/spec/replicas", "value": 1},
                {"op": "replace", "path": "/spec/replicas", "value": 2},
                {"op": "add", "path": "/spec/tags", "value": ["x"]},
                {"op": "add", "path": "/spec/tags/-", "value": "y"},
                {"op": "add", "path": "/metadata/annotations", "value": {}},
                {"op": "add", "path": "/metadata/annotations/example.com~1note", "value": "n"},
                {"op": "copy", "from": "/spec/color", "path": "/metadata/labels/color"},
                {"op": "move", "from": "/spec/tags/0", "path": "/spec/tags/1"}
            ]),
        )
        .await;
    assert_eq!(
        patched["spec"],
        json!({"replicas": 2, "color": "red", "tags": ["y", "x"]})
    );
    assert_eq!(patched["metadata"]["annotations"]["example.com/note"], "n");
    assert_eq!(patched["metadata"]["labels"]["color"], "red");

    // A failed test is 422 and changes nothing.
    let failed = h
        .patch(
            &uri,
            JSON_PATCH,
            json!([
                {"op": "replace", "path": "/spec/replicas", "value": 7},
                {"op": "test", "path": "/spec/replicas", "value": 1}
            ]),
        )
        .await;
    assert_eq!(failed.code, 422, "{}", failed.body);
    assert_eq!(failed.body["reason"], "Invalid");
    assert_eq!(
        failed.body["message"],
        "the server rejected our request due to an error in our request"
    );
    assert_eq!(h.get(&uri).await.body["spec"]["replicas"], 2);

    let cases = [
        (json!([{"op": "remove", "path": "/spec/missing"}]), 422),
        (
            json!([{"op": "add", "path": "/nope/deeper", "value": 1}]),
            422,
        ),
        (json!([{"op": "jump", "path": "/spec"}]), 422),
        (
            json!({"op": "add", "path": "/spec/color", "value": "x"}),
            400,
        ),
        (json!([1, 2]), 400),
    ];
    for (patch, code) in cases {
        let reply = h.patch(&uri, JSON_PATCH, patch.clone()).await;
        assert_eq!(reply.code, code, "{patch}: {}", reply.body);
    }
    // Copies that double the document stop at upstream's 3 MiB of copied bytes (a 1.6 KB
    // patch once grew the server to 24 GB); the object is unchanged.
    h.ok_patch(
        &uri,
        JSON_PATCH,
        json!([{"op": "replace", "path": "/spec/tags", "value": ["x".repeat(100)]}]),
    )
    .await;
    let doubling: Vec<Value> = (0..25)
        .map(|_| json!({"op": "copy", "from": "/spec/tags", "path": "/spec/tags/-"}))
        .collect();
    let refused = h.patch(&uri, JSON_PATCH, Value::Array(doubling)).await;
    assert_eq!(refused.code, 422, "{}", refused.body);
    assert!(
        refused
            .body
            .to_string()
            .contains("accumulated size increase of copy"),
        "{}",
        refused.body
    );
    assert_eq!(
        h.get(&uri).await.body["spec"]["tags"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    for (content_type, body) in [(JSON_PATCH, &b"[{"[..]), (MERGE, b"{"), (MERGE, b"null")] {
        let garbage = h.raw("PATCH", &uri, content_type, body.to_vec()).await;
        assert_eq!(garbage.code, 400, "{content_type}: {}", garbage.body);
        assert_eq!(garbage.body["reason"], "BadRequest");
    }
}

#[tokio::test]
async fn resource_version_in_the_patch_is_a_precondition() {
    let h = harness().await;
    let created = h.widget("w").await;
    let uri = format!("{WIDGETS}/w");
    let first = h
        .ok_patch(
            &uri,
            MERGE,
            json!({"metadata": {"resourceVersion": rv(&created)}, "spec": {"replicas": 3}}),
        )
        .await;
    assert_eq!(first["spec"]["replicas"], 3);
    // The same, now stale, resourceVersion conflicts.
    let stale = h
        .patch(
            &uri,
            MERGE,
            json!({"metadata": {"resourceVersion": rv(&created)}, "spec": {"replicas": 4}}),
        )
        .await;
    assert_eq!(stale.code, 409, "{}", stale.body);
    assert_eq!(stale.body["reason"], "Conflict");
    let stale = h
        .patch(
            &uri,
            JSON_PATCH,
            json!([{"op": "replace", "path": "/metadata/resourceVersion", "value": rv(&created)}]),
        )
        .await;
    assert_eq!(stale.code, 409);
    assert_eq!(h.get(&uri).await.body["spec"]["replicas"], 3);
}

#[tokio::test]
async fn missing_objects_unsupported_types_and_big_bodies() {
    let h = harness().await;
    h.widget("w").await;
    let missing = h
        .patch(&format!("{WIDGETS}/nope"), MERGE, json!({"spec": {}}))
        .await;
    assert_eq!(missing.code, 404);
    assert_eq!(missing.body["reason"], "NotFound");
    assert_eq!(
        missing.body["message"],
        "widgets.example.com \"nope\" not found"
    );

    // Strategic merge patch is not served for custom-resource-like kinds.
    let uri = format!("{WIDGETS}/w");
    let smp = h.patch(&uri, SMP, json!({"spec": {"replicas": 2}})).await;
    assert_eq!(smp.code, 415, "{}", smp.body);
    assert_eq!(smp.body["reason"], "UnsupportedMediaType");
    assert_eq!(
        smp.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    let plain = h
        .patch(&uri, "application/json", json!({"spec": {"replicas": 2}}))
        .await;
    assert_eq!(plain.code, 415);
    let deployment = h
        .patch(&format!("{DEPLOYMENTS}/none"), "text/plain", json!({}))
        .await;
    assert_eq!(deployment.code, 415);
    assert!(
        deployment.body["message"]
            .as_str()
            .unwrap()
            .ends_with("application/strategic-merge-patch+json, application/apply-patch+yaml")
    );

    let mut big = br#"{"metadata": {"annotations": {"a": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 3 * 1024 * 1024 + 1));
    big.extend(br#""}}}"#);
    let too_big = h.raw("PATCH", &uri, MERGE, big).await;
    assert_eq!(too_big.code, 413);

    // A kind without the patch verb.
    h.ok(
        "POST",
        GADGETS,
        Some(json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}})),
    )
    .await;
    let not_allowed = h.patch(&format!("{GADGETS}/g"), MERGE, json!({})).await;
    assert_eq!(not_allowed.code, 405);
}

#[tokio::test]
async fn patched_objects_the_type_rejects_are_invalid() {
    let h = harness().await;
    h.widget("w").await;
    let uri = format!("{WIDGETS}/w");
    let reply = h
        .patch(&uri, MERGE, json!({"spec": {"replicas": "many"}}))
        .await;
    assert_eq!(reply.code, 422, "{}", reply.body);
    assert_eq!(reply.body["reason"], "Invalid");
    assert_eq!(reply.body["details"]["causes"][0]["field"], "patch");
    let reply = h
        .patch(
            &uri,
            JSON_PATCH,
            json!([{"op": "replace", "path": "", "value": [1]}]),
        )
        .await;
    assert_eq!(reply.code, 422, "{}", reply.body);
    // Renaming through a patch is refused like a PUT with another name.
    let reply = h
        .patch(&uri, MERGE, json!({"metadata": {"name": "other"}}))
        .await;
    assert_eq!(reply.code, 400, "{}", reply.body);
    // Server-owned metadata cannot be patched away.
    let before = h.get(&uri).await.body;
    let after = h
        .ok_patch(
            &uri,
            MERGE,
            json!({"metadata": {"uid": null, "creationTimestamp": null, "generation": 9}}),
        )
        .await;
    assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"]);
    assert_eq!(
        after["metadata"]["generation"],
        before["metadata"]["generation"]
    );
}

#[tokio::test]
async fn status_and_main_resource_split_like_put() {
    let h = harness().await;
    h.widget("w").await;
    let uri = format!("{WIDGETS}/w");
    let status = h
        .ok_patch(
            &format!("{uri}/status"),
            MERGE,
            json!({"status": {"ready": true, "replicas": 1}, "spec": {"replicas": 9}, "metadata": {"labels": {"x": "y"}}}),
        )
        .await;
    assert_eq!(status["status"], json!({"ready": true, "replicas": 1}));
    assert_eq!(status["spec"]["replicas"], 1);
    assert!(status["metadata"]["labels"].get("x").is_none());
    let main = h
        .ok_patch(
            &uri,
            MERGE,
            json!({"status": {"ready": false}, "spec": {"replicas": 2}}),
        )
        .await;
    assert_eq!(main["status"]["ready"], true);
    assert_eq!(main["spec"]["replicas"], 2);

    // JSON patch on /status sees the whole object.
    let status = h
        .ok_patch(
            &format!("{uri}/status"),
            JSON_PATCH,
            json!([{"op": "copy", "from": "/spec/replicas", "path": "/status/replicas"}]),
        )
        .await;
    assert_eq!(status["status"]["replicas"], 2);

    // /scale takes patches against the Scale object.
    let scale = h
        .ok_patch(
            &format!("{uri}/scale"),
            MERGE,
            json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(h.get(&uri).await.body["spec"]["replicas"], 5);
}

#[tokio::test]
async fn removing_the_last_finalizer_by_patch_completes_deletion() {
    let h = harness().await;
    h.deployment("d").await;
    let uri = format!("{DEPLOYMENTS}/d");
    let request = Request::builder()
        .method("DELETE")
        .uri(&uri)
        .body(Body::empty())
        .unwrap();
    let response = h.request(request).await;
    assert_eq!(response.status(), 200);
    // No new finalizers while deleting.
    let added = h
        .patch(
            &uri,
            SMP,
            json!({"metadata": {"finalizers": ["example.com/new"]}}),
        )
        .await;
    assert_eq!(added.code, 422, "{}", added.body);
    let last = h
        .ok_patch(
            &uri,
            JSON_PATCH,
            json!([{"op": "remove", "path": "/metadata/finalizers"}]),
        )
        .await;
    assert!(last["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(h.get(&uri).await.code, 404);
}

#[tokio::test]
async fn patches_on_deprecated_kinds_carry_the_warning() {
    let h = harness().await;
    h.ok(
        "POST",
        GIZMOS,
        Some(json!({"apiVersion": "example.com/v1beta1", "kind": "Gizmo", "metadata": {"name": "g"}})),
    )
    .await;
    let reply = h
        .patch(&format!("{GIZMOS}/g"), MERGE, json!({"size": 3}))
        .await;
    assert_eq!(reply.code, 200, "{}", reply.body);
    assert_eq!(reply.body["size"], 3);
    assert!(
        reply
            .warnings
            .first()
            .is_some_and(|w| w.contains("deprecated")),
        "{:?}",
        reply.warnings.first()
    );
    let failed = h
        .patch(&format!("{GIZMOS}/none"), MERGE, json!({"size": 3}))
        .await;
    assert_eq!(failed.code, 404);
    assert!(!failed.warnings.is_empty());
}

#[tokio::test]
async fn concurrent_patches_without_a_resource_version_all_land() {
    let h = Arc::new(harness().await);
    h.widget("w").await;
    let uri = format!("{WIDGETS}/w");
    let tasks: Vec<_> = (0..12)
        .map(|i| {
            let h = h.clone();
            let uri = uri.clone();
            tokio::spawn(async move {
                h.patch(
                    &uri,
                    JSON_PATCH,
                    json!([{"op": "add", "path": format!("/metadata/labels/l{i}"), "value": "x"}]),
                )
                .await
                .code
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), 200);
    }
    let labels = h.get(&uri).await.body["metadata"]["labels"].clone();
    for i in 0..12 {
        assert_eq!(labels[format!("l{i}")], "x", "{labels}");
    }
}

#[tokio::test]
async fn declared_strategic_metadata_enables_strategic_patch() {
    let h = harness().await;
    let uri = "/apis/example.com/v1/sprockets";
    h.ok(
        "POST",
        uri,
        Some(
            json!({"apiVersion": "example.com/v1", "kind": "Sprocket", "metadata": {"name": "s"},
               "parts": [{"name": "a", "size": 1}, {"name": "b", "size": 2}]}),
        ),
    )
    .await;
    let patched = h
        .ok_patch(
            &format!("{uri}/s"),
            SMP,
            json!({"parts": [{"name": "b", "size": 3}]}),
        )
        .await;
    assert_eq!(
        patched["parts"],
        json!([{"name": "a", "size": 1}, {"name": "b", "size": 3}])
    );
}
