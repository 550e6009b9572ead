//! `dryRun=All` and `fieldValidation` through the router: dry-run creates, updates, patches,
//! deletes and deletecollections answer as the real write would and leave the store (and its
//! watchers) untouched; unknown and duplicate fields warn, refuse or pass as the directive says,
//! in upstream's words.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use futures_util::StreamExt;
use kapi::merge::{TypeInfo, field};
use kapi::meta::ObjectMeta;
use kapi::storage::Storage;
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::kinds::{ScaledWidget, WIDGETS};
use support::{Harness, JSON, JSON_PATCH, MERGE, Reply, SMP};

mod support;

static CONTAINER: TypeInfo = TypeInfo::new(&[]);
static DEPLOYMENT_SPEC: TypeInfo = TypeInfo::new(&[field("containers")
    .strategy("merge")
    .merge_key("name")
    .items(&CONTAINER)]);
static DEPLOYMENT: TypeInfo = TypeInfo::new(&[field("spec").of(&DEPLOYMENT_SPEC)]);

/// A kind in a built-in group: strategic merge patch, and deletes answer with a `Status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    group = "apps",
    version = "v1",
    kind = "Deployment",
    namespaced,
    merge = DEPLOYMENT
)]
struct Deployment {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<DeploymentSpec>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct DeploymentSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    containers: Vec<Container>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Container {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    image: Option<String>,
}

/// A kind whose spec is free-form: its codec keeps whatever the spec holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1", kind = "Blob", namespaced)]
struct Blob {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<Value>,
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const BLOBS: &str = "/apis/example.com/v1/namespaces/default/blobs";
const NAMESPACES: &str = "/api/v1/namespaces";

async fn harness() -> Harness {
    let mut registry = Registry::new();
    registry
        .register::<ScaledWidget>()
        .register::<Deployment>()
        .register::<Blob>();
    let builder = support::builder(registry, KubeVersion::new(1, 34));
    Harness::in_temp_dir(support::store_options(), builder).await
}

impl Harness {
    async fn send(&self, method: &str, uri: &str, content_type: &str, body: &Value) -> Reply {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            serde_json::to_vec(body).unwrap()
        };
        self.raw(method, uri, content_type, &bytes).await
    }

    async fn get(&self, uri: &str) -> Reply {
        self.send("GET", uri, JSON, &Value::Null).await
    }

    async fn revision(&self) -> u64 {
        self.storage.current_revision().await.unwrap()
    }

    async fn widget(&self, name: &str) -> Value {
        self.ok(
            "POST",
            WIDGETS,
            Some(json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": name},
                "spec": {"replicas": 1, "color": "red"},
            })),
        )
        .await
    }

    /// Every event a watch from `rv` delivers within a second (a dry run must deliver none).
    async fn events_since(&self, collection: &str, rv: u64) -> Vec<Value> {
        let uri = format!("{collection}?watch=true&resourceVersion={rv}");
        let request = Request::builder().uri(uri).body(Body::empty()).unwrap();
        let response = self.request(request).await;
        assert_eq!(response.status(), 200);
        let mut stream = response.into_body().into_data_stream();
        let mut bytes = Vec::new();
        // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, stream.next()).await {
            bytes.extend_from_slice(&chunk);
        }
        bytes
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice::<Value>(line).unwrap())
            .filter(|event| event["type"] != "BOOKMARK")
            .collect()
    }
}

fn warning(text: &str) -> String {
    format!(
        "299 - \"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

#[tokio::test]
async fn dry_run_create_answers_like_a_create_and_stores_nothing() {
    let h = harness().await;
    let before = h.revision().await;
    let reply = h
        .send(
            "POST",
            &format!("{WIDGETS}?dryRun=All"),
            JSON,
            &json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"generateName": "gear-", "resourceVersion": ""},
                "spec": {"replicas": 2},
                "status": {"replicas": 9},
            }),
        )
        .await;
    assert_eq!(reply.code, 201, "{reply:?}");
    let object = &reply.body;
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap();
    assert!(
        name.starts_with("gear-") && name.len() == "gear-".len() + 5,
        "{name}"
    );
    assert!(!meta["uid"].as_str().unwrap().is_empty());
    assert!(meta["creationTimestamp"].is_string());
    assert_eq!(meta["generation"], 1);
    assert_eq!(meta["namespace"], "default");
    // Upstream's dry-run create answers without a resourceVersion.
    assert!(meta.get("resourceVersion").is_none(), "{object}");
    // The status subresource owns status: a create drops it, dry or not.
    assert!(object.get("status").is_none(), "{object}");
    assert_eq!(object["spec"]["replicas"], 2);

    assert_eq!(h.get(&format!("{WIDGETS}/{name}")).await.code, 404);
    assert_eq!(h.get(WIDGETS).await.body["items"], json!([]));
    assert_eq!(h.revision().await, before, "a dry run moved the store");
    assert_eq!(h.events_since(WIDGETS, before).await, Vec::<Value>::new());

    // The same request for real is seen by watchers, which shows the check above can fail.
    h.widget("real").await;
    let events = h.events_since(WIDGETS, before).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ADDED");
}

#[tokio::test]
async fn dry_run_create_runs_every_check() {
    let h = harness().await;
    h.widget("taken").await;
    let widget = |name: &str| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}});
    let rows = [
        (WIDGETS.to_owned(), widget("taken"), 409, "AlreadyExists"),
        (WIDGETS.to_owned(), widget("Not_A_Name"), 422, "Invalid"),
        (
            "/apis/example.com/v1/namespaces/nowhere/widgets".to_owned(),
            widget("fresh"),
            404,
            "NotFound",
        ),
        (
            WIDGETS.to_owned(),
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"replicas": "many"}}),
            400,
            "BadRequest",
        ),
        (WIDGETS.to_owned(), widget("fresh"), 201, ""),
    ];
    let before = h.revision().await;
    for (collection, body, code, reason) in rows {
        let reply = h
            .send("POST", &format!("{collection}?dryRun=All"), JSON, &body)
            .await;
        assert_eq!(reply.code, code, "{body}: {reply:?}");
        if !reason.is_empty() {
            assert_eq!(reply.body["reason"], reason, "{body}");
        }
    }
    assert_eq!(h.revision().await, before);
    assert_eq!(h.get(&format!("{WIDGETS}/fresh")).await.code, 404);
}

#[tokio::test]
async fn dry_run_values_other_than_all_are_refused_as_upstream() {
    let h = harness().await;
    h.widget("w").await;
    let body = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let rows = [
        (
            "POST",
            WIDGETS.to_owned(),
            JSON,
            body.clone(),
            "CreateOptions",
        ),
        (
            "PUT",
            format!("{WIDGETS}/w"),
            JSON,
            body.clone(),
            "UpdateOptions",
        ),
        (
            "PATCH",
            format!("{WIDGETS}/w"),
            MERGE,
            json!({}),
            "PatchOptions",
        ),
        (
            "DELETE",
            format!("{WIDGETS}/w"),
            JSON,
            Value::Null,
            "DeleteOptions",
        ),
        (
            "DELETE",
            WIDGETS.to_owned(),
            JSON,
            Value::Null,
            "DeleteOptions",
        ),
    ];
    let before = h.revision().await;
    for (method, uri, content_type, body, kind) in rows {
        let reply = h
            .send(
                method,
                &format!("{uri}?dryRun=Everything"),
                content_type,
                &body,
            )
            .await;
        assert_eq!(reply.code, 422, "{method} {uri}: {reply:?}");
        assert_eq!(reply.body["reason"], "Invalid");
        assert_eq!(
            reply.message(),
            format!(
                "{kind}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{{\"Everything\"}}: supported values: \"All\""
            ),
            "{method} {uri}"
        );
        assert_eq!(reply.body["details"]["causes"][0]["field"], "dryRun");
    }
    // DeleteOptions in the body are checked the same way.
    let reply = h
        .send(
            "DELETE",
            &format!("{WIDGETS}/w"),
            JSON,
            &json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All", "Nope"]}),
        )
        .await;
    assert_eq!(reply.code, 422, "{reply:?}");
    assert!(
        reply.message().contains(r#"[]string{"All", "Nope"}"#),
        "{reply:?}"
    );
    assert_eq!(h.revision().await, before, "a refused request wrote");
}

#[tokio::test]
async fn dry_run_updates_and_patches_answer_with_the_would_be_object() {
    let h = harness().await;
    let created = h.widget("w").await;
    let rv = created["metadata"]["resourceVersion"].clone();
    h.ok(
        "PUT",
        &format!("{WIDGETS}/w/status"),
        Some(
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
               "status": {"replicas": 1}}),
        ),
    )
    .await;
    let stored = h.get(&format!("{WIDGETS}/w")).await.body;
    let rv_after_status = stored["metadata"]["resourceVersion"].clone();
    assert_ne!(rv, rv_after_status);
    let mut changed = stored.clone();
    changed["spec"]["color"] = json!("blue");
    let w = format!("{WIDGETS}/w");
    // (method, path, content type, body, pointer into the answer, expected value there)
    let rows = [
        (
            "PUT",
            w.clone(),
            JSON,
            changed.clone(),
            "/spec/color",
            json!("blue"),
        ),
        (
            "PUT",
            w.clone(),
            JSON,
            changed.clone(),
            "/metadata/generation",
            json!(2),
        ),
        (
            "PUT",
            format!("{w}/status"),
            JSON,
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                   "status": {"replicas": 5, "ready": true}}),
            "/status/ready",
            json!(true),
        ),
        (
            "PUT",
            format!("{w}/scale"),
            JSON,
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {"name": "w"},
                   "spec": {"replicas": 7}}),
            "/spec/replicas",
            json!(7),
        ),
        (
            "PATCH",
            w.clone(),
            MERGE,
            json!({"spec": {"color": "green"}}),
            "/spec/color",
            json!("green"),
        ),
        (
            "PATCH",
            w.clone(),
            JSON_PATCH,
            json!([{"op": "replace", "path": "/spec/replicas", "value": 4}]),
            "/spec/replicas",
            json!(4),
        ),
        (
            "PATCH",
            format!("{w}/status"),
            MERGE,
            json!({"status": {"replicas": 3}}),
            "/status/replicas",
            json!(3),
        ),
        (
            "PATCH",
            format!("{w}/scale"),
            MERGE,
            json!({"spec": {"replicas": 6}}),
            "/spec/replicas",
            json!(6),
        ),
        (
            "PATCH",
            w.clone(),
            MERGE,
            json!({"metadata": {"finalizers": ["example.com/hold"]}}),
            "/metadata/finalizers/0",
            json!("example.com/hold"),
        ),
    ];
    let before = h.revision().await;
    for (method, uri, content_type, body, pointer, want) in rows {
        let reply = h
            .send(method, &format!("{uri}?dryRun=All"), content_type, &body)
            .await;
        assert_eq!(reply.code, 200, "{method} {uri}: {reply:?}");
        assert_eq!(
            reply.body.pointer(pointer),
            Some(&want),
            "{method} {uri}: {}",
            reply.body
        );
        // Nothing was written, so the version is still the stored one.
        assert_eq!(
            reply.body["metadata"]["resourceVersion"], rv_after_status,
            "{method} {uri}"
        );
    }
    assert_eq!(h.revision().await, before, "a dry run moved the store");
    assert_eq!(h.get(&w).await.body, stored, "a dry run changed the object");
    assert_eq!(h.events_since(WIDGETS, before).await, Vec::<Value>::new());

    // Strategic merge patch on a built-in kind, and a stale resourceVersion still conflicts.
    h.ok(
        "POST",
        DEPLOYMENTS,
        Some(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"containers": [{"name": "a", "image": "one"}]}}),
        ),
    )
    .await;
    let before = h.revision().await;
    let reply = h
        .send(
            "PATCH",
            &format!("{DEPLOYMENTS}/d?dryRun=All"),
            SMP,
            &json!({"spec": {"containers": [{"name": "b", "image": "two"}]}}),
        )
        .await;
    assert_eq!(reply.code, 200, "{reply:?}");
    assert_eq!(
        reply.body["spec"]["containers"],
        json!([{"name": "a", "image": "one"}, {"name": "b", "image": "two"}])
    );
    let reply = h
        .send(
            "PATCH",
            &format!("{DEPLOYMENTS}/d?dryRun=All"),
            MERGE,
            &json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 3}}),
        )
        .await;
    assert_eq!(reply.code, 409, "{reply:?}");
    assert_eq!(h.revision().await, before);
}

#[tokio::test]
async fn dry_run_deletes_show_the_outcome_and_keep_the_objects() {
    let h = harness().await;
    h.ok(
        "POST",
        WIDGETS,
        Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "held", "finalizers": ["example.com/hold"]}})),
    )
    .await;
    let free = h.widget("free").await;
    h.ok(
        "POST",
        DEPLOYMENTS,
        Some(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}})),
    )
    .await;
    h.create_namespace("scratch").await;
    let before = h.revision().await;

    // Finalizers: the answer shows the deletion that would start.
    let reply = h
        .send(
            "DELETE",
            &format!("{WIDGETS}/held?dryRun=All"),
            JSON,
            &Value::Null,
        )
        .await;
    assert_eq!(reply.code, 200, "{reply:?}");
    assert!(
        reply.body["metadata"]["deletionTimestamp"].is_string(),
        "{reply:?}"
    );
    // No finalizers: a custom resource answers with the object, a built-in with a Status.
    let reply = h
        .send(
            "DELETE",
            &format!("{WIDGETS}/free?dryRun=All"),
            JSON,
            &Value::Null,
        )
        .await;
    assert_eq!(reply.code, 200);
    assert_eq!(reply.body["metadata"]["uid"], free["metadata"]["uid"]);
    let reply = h
        .send(
            "DELETE",
            &format!("{DEPLOYMENTS}/d"),
            JSON,
            &json!({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}),
        )
        .await;
    assert_eq!(
        (reply.code, &reply.body["status"]),
        (200, &json!("Success"))
    );
    // A namespace would start terminating.
    let reply = h
        .send(
            "DELETE",
            &format!("{NAMESPACES}/scratch?dryRun=All"),
            JSON,
            &Value::Null,
        )
        .await;
    assert_eq!(reply.code, 200);
    assert_eq!(reply.body["status"]["phase"], "Terminating", "{reply:?}");
    // Preconditions are still checked.
    let reply = h
        .send(
            "DELETE",
            &format!("{WIDGETS}/free?dryRun=All"),
            JSON,
            &json!({"preconditions": {"uid": "someone-else"}}),
        )
        .await;
    assert_eq!(reply.code, 409, "{reply:?}");
    // deletecollection lists what it would delete.
    let reply = h
        .send(
            "DELETE",
            &format!("{WIDGETS}?dryRun=All"),
            JSON,
            &Value::Null,
        )
        .await;
    assert_eq!(reply.code, 200);
    let mut names: Vec<&str> = reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["free", "held"]);

    // Give a (wrongly) started namespace cleanup time to act before looking.
    // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(h.revision().await, before, "a dry-run delete wrote");
    let held = h.get(&format!("{WIDGETS}/held")).await.body;
    assert!(
        held["metadata"].get("deletionTimestamp").is_none(),
        "{held}"
    );
    assert_eq!(h.get(&format!("{WIDGETS}/free")).await.code, 200);
    assert_eq!(h.get(&format!("{DEPLOYMENTS}/d")).await.code, 200);
    let ns = h.get(&format!("{NAMESPACES}/scratch")).await.body;
    assert_eq!(ns["status"]["phase"], "Active", "{ns}");

    // For real, the same delete removes the object.
    let reply = h
        .send("DELETE", &format!("{WIDGETS}/free"), JSON, &Value::Null)
        .await;
    assert_eq!(reply.code, 200);
    assert_eq!(h.get(&format!("{WIDGETS}/free")).await.code, 404);
}

/// A widget body with a duplicate `metadata.name`, an unknown `spec.foo` and an unknown field
/// in the second list item, written by hand because a JSON serializer cannot repeat a key.
const MESSY: &str = r#"{"apiVersion":"example.com/v1","kind":"Widget",
  "metadata":{"name":"messy","name":"messy","creationTimestamp":null},
  "spec":{"replicas":1,"foo":"bar","parts":[{"name":"a"},{"name":"b","colour":"red"}]}}"#;

const MESSY_PROBLEMS: [&str; 3] = [
    r#"duplicate field "metadata.name""#,
    r#"unknown field "spec.foo""#,
    r#"unknown field "spec.parts[1].colour""#,
];

#[tokio::test]
async fn field_validation_on_create_warns_by_default_and_strict_refuses() {
    let h = harness().await;
    let warned: Vec<String> = MESSY_PROBLEMS.iter().map(|p| warning(p)).collect();
    // Dry runs, so the same name can be created again.
    let rows: [(&str, u16, &[String]); 4] = [
        ("?dryRun=All", 201, &warned),
        ("?dryRun=All&fieldValidation=Warn", 201, &warned),
        ("?dryRun=All&fieldValidation=Ignore", 201, &[]),
        ("?dryRun=All&fieldValidation=Strict", 400, &[]),
    ];
    for (query, code, warnings) in rows {
        let reply = h
            .raw("POST", &format!("{WIDGETS}{query}"), JSON, MESSY.as_bytes())
            .await;
        assert_eq!(reply.code, code, "{query}: {reply:?}");
        assert_eq!(reply.warnings, warnings, "{query}");
        if code == 201 {
            // Unknown fields are dropped either way.
            assert_eq!(
                reply.body["spec"],
                json!({"replicas": 1, "parts": [{"name": "a"}, {"name": "b"}]})
            );
        } else {
            assert_eq!(reply.body["reason"], "BadRequest");
            assert_eq!(
                reply.message(),
                format!(
                    "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: {}",
                    MESSY_PROBLEMS.join(", ")
                )
            );
        }
    }
    // A clean body passes Strict without warnings, and so do the empty values clients send
    // for known fields.
    let reply = h
        .send(
            "POST",
            &format!("{WIDGETS}?fieldValidation=Strict"),
            JSON,
            &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "clean", "creationTimestamp": null, "labels": {}},
                    "spec": {"parts": []}, "status": {}}),
        )
        .await;
    assert_eq!((reply.code, reply.warnings.len()), (201, 0), "{reply:?}");
    // A bad directive is upstream's 422.
    let reply = h
        .send(
            "POST",
            &format!("{WIDGETS}?fieldValidation=Loud"),
            JSON,
            &json!({"metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(reply.code, 422);
    assert_eq!(
        reply.message(),
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
    // YAML bodies report unknown fields too.
    let reply = h
        .raw(
            "POST",
            WIDGETS,
            "application/yaml",
            b"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: yaml\nspec:\n  shade: dark\n",
        )
        .await;
    assert_eq!(reply.code, 201, "{reply:?}");
    assert_eq!(reply.warnings, [warning(r#"unknown field "spec.shade""#)]);
    // Free-form parts of a kind keep what they are given: nothing there is unknown.
    let reply = h
        .send(
            "POST",
            &format!("{BLOBS}?fieldValidation=Strict"),
            JSON,
            &json!({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "b"},
                    "spec": {"anything": {"goes": [1, 2]}}}),
        )
        .await;
    assert_eq!((reply.code, reply.warnings.len()), (201, 0), "{reply:?}");
    let reply = h
        .send(
            "POST",
            &format!("{BLOBS}?fieldValidation=Strict&dryRun=All"),
            JSON,
            &json!({"apiVersion": "example.com/v1", "kind": "Blob", "metadata": {"name": "c"},
                    "extra": 1}),
        )
        .await;
    assert_eq!(reply.code, 400, "{reply:?}");
    assert!(
        reply
            .message()
            .ends_with(r#"strict decoding error: unknown field "extra""#)
    );
}

/// One write: method, URI, content type, body, and the problems upstream reports in it.
type Case<'a> = (&'a str, String, &'a str, Vec<u8>, Vec<&'a str>);

#[tokio::test]
async fn field_validation_on_updates_and_patches() {
    let h = harness().await;
    h.widget("w").await;
    h.ok(
        "POST",
        DEPLOYMENTS,
        Some(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}})),
    )
    .await;
    let w = format!("{WIDGETS}/w");
    let d = format!("{DEPLOYMENTS}/d");
    let put = br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","color":"blue","tint":1}}"#;
    let put_problems = [
        r#"duplicate field "spec.color""#,
        r#"unknown field "spec.tint""#,
    ];
    let merge_dup = br#"{"spec":{"color":"a","color":"b","hue":3}}"#;
    // (method, uri, content type, body, problems in upstream's words)
    let rows: Vec<Case<'_>> = vec![
        ("PUT", w.clone(), JSON, put.to_vec(), put_problems.to_vec()),
        (
            "PUT",
            format!("{w}/status"),
            JSON,
            br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"status":{"ok":true}}"#.to_vec(),
            vec![r#"unknown field "status.ok""#],
        ),
        (
            "PUT",
            format!("{w}/scale"),
            JSON,
            br#"{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"w"},"spec":{"replicas":2,"surge":1}}"#.to_vec(),
            vec![r#"unknown field "spec.surge""#],
        ),
        (
            "PATCH",
            w.clone(),
            MERGE,
            merge_dup.to_vec(),
            vec![r#"duplicate field "spec.color""#, r#"unknown field "spec.hue""#],
        ),
        (
            "PATCH",
            w.clone(),
            JSON_PATCH,
            br#"[{"op":"add","path":"/spec/glow","value":true,"why":"x"}]"#.to_vec(),
            vec![r#"json patch unknown field "[0].why""#, r#"unknown field "spec.glow""#],
        ),
        (
            "PATCH",
            format!("{w}/status"),
            MERGE,
            br#"{"status":{"mood":"calm"}}"#.to_vec(),
            vec![r#"unknown field "status.mood""#],
        ),
        (
            "PATCH",
            format!("{w}/scale"),
            MERGE,
            br#"{"spec":{"replicas":3,"burst":2}}"#.to_vec(),
            vec![r#"unknown field "spec.burst""#],
        ),
        (
            "PATCH",
            d.clone(),
            SMP,
            br#"{"spec":{"containers":[{"name":"a","image":"x","pull":"always"}]}}"#.to_vec(),
            vec![r#"unknown field "spec.containers[0].pull""#],
        ),
    ];
    for (method, uri, content_type, body, problems) in rows {
        // Warn (the default): the write happens and each problem is a warning.
        let reply = h.raw(method, &uri, content_type, &body).await;
        assert_eq!(reply.code, 200, "{method} {uri}: {reply:?}");
        let warned: Vec<String> = problems.iter().map(|p| warning(p)).collect();
        assert_eq!(reply.warnings, warned, "{method} {uri}");
        // Ignore: silent.
        let reply = h
            .raw(
                method,
                &format!("{uri}?fieldValidation=Ignore"),
                content_type,
                &body,
            )
            .await;
        assert_eq!(
            (reply.code, reply.warnings.len()),
            (200, 0),
            "{method} {uri}: {reply:?}"
        );
        // Strict: refused, the object unchanged.
        let object = h.get(&uri).await.body;
        let reply = h
            .raw(
                method,
                &format!("{uri}?fieldValidation=Strict"),
                content_type,
                &body,
            )
            .await;
        let detail = format!("strict decoding error: {}", problems.join(", "));
        match method {
            "PUT" => {
                assert_eq!(reply.code, 400, "{method} {uri}: {reply:?}");
                assert!(
                    reply.message().ends_with(&format!(
                        "cannot be handled as a {}: {detail}",
                        if uri.ends_with("/scale") {
                            "Scale"
                        } else {
                            "Widget"
                        }
                    )),
                    "{method} {uri}: {reply:?}"
                );
            }
            _ => {
                assert_eq!(reply.code, 422, "{method} {uri}: {reply:?}");
                let cause = &reply.body["details"]["causes"][0];
                assert_eq!(cause["field"], "patch");
                assert!(
                    cause["message"].as_str().unwrap().ends_with(&detail),
                    "{method} {uri}: {reply:?}"
                );
            }
        }
        assert_eq!(
            h.get(&uri).await.body,
            object,
            "{method} {uri}: Strict wrote"
        );
    }
    // A strategic merge patch is shown as Go prints the patch; a merge patch by the patched
    // object.
    let reply = h
        .raw(
            "PATCH",
            &format!("{d}?fieldValidation=Strict"),
            SMP,
            br#"{"spec":{"zap":1}}"#,
        )
        .await;
    assert_eq!(
        reply.message(),
        " \"\" is invalid: patch: Invalid value: \"map[spec:map[zap:1]]\": strict decoding error: unknown field \"spec.zap\"",
        "{reply:?}"
    );
    let reply = h
        .raw(
            "PATCH",
            &format!("{w}?fieldValidation=Strict"),
            MERGE,
            br#"{"zap":1}"#,
        )
        .await;
    let shown: Value = serde_json::from_str(
        reply.body["details"]["causes"][0]["message"]
            .as_str()
            .unwrap()
            .trim_start_matches("Invalid value: ")
            .split(": strict decoding error")
            .next()
            .unwrap(),
    )
    .unwrap();
    let shown: Value = serde_json::from_str(shown.as_str().unwrap()).unwrap();
    assert_eq!(shown["zap"], 1, "{reply:?}");
    assert_eq!(shown["metadata"]["name"], "w");
}

#[tokio::test]
async fn dry_run_and_strict_validation_combine() {
    let h = harness().await;
    let before = h.revision().await;
    let reply = h
        .raw(
            "POST",
            &format!("{WIDGETS}?dryRun=All&fieldValidation=Warn"),
            JSON,
            br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"},"spec":{"size":1}}"#,
        )
        .await;
    assert_eq!(reply.code, 201);
    assert_eq!(reply.warnings, [warning(r#"unknown field "spec.size""#)]);
    assert_eq!(h.revision().await, before);
}
