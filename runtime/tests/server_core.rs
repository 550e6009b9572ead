//! The server core over the embedded store: routing and errors, object semantics, lists,
//! resourceVersion rules, watches and representations, driven through the router in-process.

// The helpers below are test code too; a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use kapi::server::Server;
use kapi::storage::{EmbeddedOptions, EmbeddedStorage, Storage};
use kapi::{KubeVersion, Registry};
use serde_json::{Value, json};

use support::Harness;
use support::kinds::{GADGETS, Gadget, Gizmo, ScaledWidget, WIDGETS};

mod support;

async fn harness_with(version: KubeVersion) -> Harness {
    let mut registry = Registry::new();
    registry
        .register::<ScaledWidget>()
        .register::<Gadget>()
        .register::<Gizmo>();
    let builder = support::builder(registry, version).bookmark_interval(Duration::from_millis(100));
    Harness::in_temp_dir(support::store_options(), builder).await
}

async fn harness() -> Harness {
    harness_with(KubeVersion::new(1, 25)).await
}

impl Harness {
    async fn create_widget(&self, name: &str, labels: Value, color: &str) -> Value {
        self.ok(
            "POST",
            WIDGETS,
            Some(json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": name, "labels": labels},
                "spec": {"replicas": 1, "color": color},
            })),
        )
        .await
    }
}

fn reason(value: &Value) -> &str {
    value["reason"].as_str().unwrap_or("")
}

#[tokio::test]
async fn errors_are_statuses_with_upstream_codes_and_reasons() {
    let h = harness().await;
    h.create_widget("taken", json!({}), "red").await;
    let big = "x".repeat(3 * 1024 * 1024 + 10);
    let widget = |name: &str| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}});
    struct Row {
        method: &'static str,
        uri: String,
        content_type: Option<&'static str>,
        accept: Option<&'static str>,
        body: Option<String>,
        code: u16,
        reason: &'static str,
    }
    let row = |method, uri: &str, body: Option<Value>, code, reason| Row {
        method,
        uri: uri.to_owned(),
        content_type: body.as_ref().map(|_| "application/json"),
        accept: None,
        body: body.map(|b| b.to_string()),
        code,
        reason,
    };
    let rows = vec![
        row("GET", &format!("{WIDGETS}/missing"), None, 404, "NotFound"),
        row("GET", "/apis/example.com/v1/nothing", None, 404, "NotFound"),
        row(
            "GET",
            "/apis/example.com/v1/widgets/x",
            None,
            404,
            "NotFound",
        ),
        row(
            "GET",
            "/apis/example.com/v1/namespaces/default/gadgets",
            None,
            404,
            "NotFound",
        ),
        row("GET", &format!("{GADGETS}/x/status"), None, 404, "NotFound"),
        // A PATCH without a patch Content-Type is refused as upstream does.
        row(
            "PATCH",
            &format!("{WIDGETS}/taken"),
            None,
            415,
            "UnsupportedMediaType",
        ),
        row(
            "POST",
            "/apis/example.com/v1/widgets",
            Some(widget("a")),
            405,
            "MethodNotAllowed",
        ),
        row("DELETE", GADGETS, None, 405, "MethodNotAllowed"),
        Row {
            body: Some("{".to_owned()),
            ..row("POST", WIDGETS, Some(json!({})), 400, "BadRequest")
        },
        Row {
            content_type: Some("text/plain"),
            ..row(
                "POST",
                WIDGETS,
                Some(widget("a")),
                415,
                "UnsupportedMediaType",
            )
        },
        Row {
            accept: Some("text/html"),
            ..row("GET", WIDGETS, None, 406, "NotAcceptable")
        },
        Row {
            body: Some(format!(
                r#"{{"metadata":{{"name":"big"}},"spec":{{"color":"{big}"}}}}"#
            )),
            ..row(
                "POST",
                WIDGETS,
                Some(json!({})),
                413,
                "RequestEntityTooLarge",
            )
        },
        // A custom resource of another kind: the CRD validator's ValidateTypeMeta.
        row(
            "POST",
            WIDGETS,
            Some(json!({"kind": "Gadget", "metadata": {"name": "a"}})),
            422,
            "Invalid",
        ),
        row(
            "POST",
            WIDGETS,
            Some(json!({"apiVersion": "example.com/v2", "metadata": {"name": "a"}})),
            400,
            "BadRequest",
        ),
        row(
            "POST",
            WIDGETS,
            Some(json!({"metadata": {"name": "a"}, "spec": {"replicas": "x"}})),
            400,
            "BadRequest",
        ),
        row("POST", WIDGETS, Some(widget("Bad_Name")), 422, "Invalid"),
        row(
            "POST",
            WIDGETS,
            Some(json!({"metadata": {}})),
            422,
            "Invalid",
        ),
        row("POST", WIDGETS, Some(widget("taken")), 409, "AlreadyExists"),
        row(
            "POST",
            "/apis/example.com/v1/namespaces/nope/widgets",
            Some(widget("a")),
            404,
            "NotFound",
        ),
        row(
            "POST",
            WIDGETS,
            Some(json!({"metadata": {"name": "a", "namespace": "other"}})),
            400,
            "BadRequest",
        ),
        row(
            "PUT",
            &format!("{WIDGETS}/taken"),
            Some(widget("other")),
            400,
            "BadRequest",
        ),
        row(
            "PUT",
            &format!("{WIDGETS}/missing"),
            Some(widget("missing")),
            404,
            "NotFound",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?labelSelector=a+in+("),
            None,
            400,
            "BadRequest",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?fieldSelector=spec.size%3D1"),
            None,
            400,
            "BadRequest",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?limit=x"),
            None,
            400,
            "BadRequest",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?resourceVersionMatch=Exact"),
            None,
            422,
            "Invalid",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?resourceVersion=0&resourceVersionMatch=Exact"),
            None,
            422,
            "Invalid",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?continue=garbage"),
            None,
            400,
            "BadRequest",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?watch=true&sendInitialEvents=true"),
            None,
            422,
            "Invalid",
        ),
        // The watch cache's storage error, no API status: kube-apiserver answers 500 without a
        // reason (kubernetes/kubernetes#139485); with a limit the list goes to etcd, whose
        // store answers 400 (storage.ValidateListOptions).
        row(
            "GET",
            &format!("{WIDGETS}?resourceVersion=abc"),
            None,
            500,
            "",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?resourceVersion=abc&limit=1"),
            None,
            400,
            "BadRequest",
        ),
        row(
            "GET",
            &format!("{WIDGETS}/taken?resourceVersion=99999"),
            None,
            504,
            "Timeout",
        ),
        row(
            "GET",
            &format!("{WIDGETS}?resourceVersion=99999&resourceVersionMatch=NotOlderThan"),
            None,
            504,
            "Timeout",
        ),
        row(
            "DELETE",
            &format!("{WIDGETS}/missing"),
            None,
            404,
            "NotFound",
        ),
        row("GET", "/apis/example.com/v1beta1/gizmos", None, 200, ""),
    ];
    for r in rows {
        let mut builder = Request::builder().method(r.method).uri(&r.uri);
        if let Some(ct) = r.content_type {
            builder = builder.header("content-type", ct);
        }
        if let Some(accept) = r.accept {
            builder = builder.header("accept", accept);
        }
        let body = r.body.clone().map(Body::from).unwrap_or_else(Body::empty);
        let response = h.request(builder.body(body).unwrap()).await;
        let code = response.status().as_u16();
        let content_type = response.headers().get("content-type").cloned();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let value: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| panic!("{} {}: body is not JSON: {bytes:?}", r.method, r.uri));
        assert_eq!(code, r.code, "{} {}: {value}", r.method, r.uri);
        if r.code >= 400 {
            assert_eq!(content_type.unwrap(), "application/json");
            assert_eq!(value["kind"], "Status", "{value}");
            assert_eq!(value["status"], "Failure");
            assert_eq!(value["code"], r.code);
            assert_eq!(reason(&value), r.reason, "{} {}: {value}", r.method, r.uri);
        }
    }
}

#[tokio::test]
async fn removed_versions_are_not_served_and_deprecated_ones_warn() {
    let h = harness_with(KubeVersion::new(1, 30)).await;
    let (code, body) = h
        .call("GET", "/apis/example.com/v1beta1/gizmos", None)
        .await;
    assert_eq!((code, reason(&body)), (404, "NotFound"));
    let h = harness_with(KubeVersion::new(1, 25)).await;
    let response = h
        .request(
            Request::get("/apis/example.com/v1beta1/gizmos")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), 200);
    let warning = response.headers().get("warning").unwrap().to_str().unwrap();
    assert!(warning.starts_with("299 - \""), "{warning}");
    assert!(
        warning.contains("example.com/v1beta1 Gizmo is deprecated in v1.20+"),
        "{warning}"
    );
}

#[tokio::test]
async fn namespaced_crud() {
    let h = harness().await;
    let created = h.create_widget("a", json!({"app": "web"}), "red").await;
    let meta = &created["metadata"];
    assert_eq!(meta["namespace"], "default");
    assert_eq!(meta["generation"], 1);
    assert!(meta["uid"].as_str().unwrap().len() == 36);
    assert!(meta["creationTimestamp"].is_string());
    let rv: u64 = meta["resourceVersion"].as_str().unwrap().parse().unwrap();
    let got = h.ok("GET", &format!("{WIDGETS}/a"), None).await;
    assert_eq!(got, created);
    // Unknown fields are dropped by the kind's type.
    let mut next = got.clone();
    next["spec"]["color"] = json!("blue");
    next["spec"]["bogus"] = json!(1);
    let updated = h.ok("PUT", &format!("{WIDGETS}/a"), Some(next)).await;
    assert_eq!(updated["spec"], json!({"replicas": 1, "color": "blue"}));
    assert_eq!(updated["metadata"]["generation"], 2);
    let rv2: u64 = updated["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv);
    // A no-op PUT changes nothing, not even the resourceVersion.
    let same = h
        .ok("PUT", &format!("{WIDGETS}/a"), Some(updated.clone()))
        .await;
    assert_eq!(same, updated);
    // Immutable metadata stays; a different uid is rejected.
    let mut tampered = updated.clone();
    tampered["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    tampered["metadata"]["labels"] = json!({"app": "db"});
    let kept = h.ok("PUT", &format!("{WIDGETS}/a"), Some(tampered)).await;
    assert_eq!(
        kept["metadata"]["creationTimestamp"],
        created["metadata"]["creationTimestamp"]
    );
    assert_eq!(kept["metadata"]["labels"], json!({"app": "db"}));
    assert_eq!(
        kept["metadata"]["generation"], 2,
        "metadata changes do not bump generation"
    );
    let mut other_uid = kept.clone();
    other_uid["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    other_uid["metadata"]["resourceVersion"] = json!(null);
    let (code, body) = h
        .call("PUT", &format!("{WIDGETS}/a"), Some(other_uid))
        .await;
    // The uid a PUT carries is a precondition the store checks (rest.DefaultUpdatedObjectInfo,
    // storage.Preconditions.Check): 409 with the etcd3 store's error.
    assert_eq!((code, reason(&body)), (409, "Conflict"));
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Operation cannot be fulfilled on widgets.example.com \"a\": StorageError: invalid object, Code: 4, Key: /registry/example.com/widgets/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: "
        ),
        "{message}"
    );
    // List across namespaces.
    h.create_namespace("second").await;
    h.ok(
        "POST",
        "/apis/example.com/v1/namespaces/second/widgets",
        Some(json!({"metadata": {"name": "a"}})),
    )
    .await;
    let all = h.ok("GET", "/apis/example.com/v1/widgets", None).await;
    assert_eq!(all["kind"], "WidgetList");
    assert_eq!(all["items"].as_array().unwrap().len(), 2);
    let one = h.ok("GET", WIDGETS, None).await;
    assert_eq!(one["items"].as_array().unwrap().len(), 1);
    // Delete answers with the deleted object for a custom group, then 404.
    let deleted = h.ok("DELETE", &format!("{WIDGETS}/a"), None).await;
    assert_eq!(deleted["metadata"]["name"], "a");
    let (code, body) = h.call("GET", &format!("{WIDGETS}/a"), None).await;
    assert_eq!((code, reason(&body)), (404, "NotFound"));
    assert_eq!(body["message"], "widgets.example.com \"a\" not found");
    assert_eq!(
        body["details"],
        json!({"name": "a", "group": "example.com", "kind": "widgets"})
    );
    // The name is reusable.
    h.create_widget("a", json!({}), "red").await;
}

#[tokio::test]
async fn cluster_scoped_crud_and_namespaces() {
    let h = harness().await;
    let ns = h.ok("GET", "/api/v1/namespaces/default", None).await;
    assert_eq!(ns["status"]["phase"], "Active");
    let g = h
        .ok(
            "POST",
            GADGETS,
            Some(json!({"metadata": {"name": "g", "namespace": "x"}, "size": 3})),
        )
        .await;
    assert!(g["metadata"].get("namespace").is_none());
    assert_eq!(h.ok("GET", &format!("{GADGETS}/g"), None).await["size"], 3);
    // Namespace names are DNS labels.
    let (code, body) = h
        .call(
            "POST",
            "/api/v1/namespaces",
            Some(json!({"metadata": {"name": "a.b"}})),
        )
        .await;
    assert_eq!((code, reason(&body)), (422, "Invalid"));
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
    // Deleting a namespace: terminating, refuses new objects, then it and its contents go.
    h.create_namespace("doomed").await;
    let base = "/apis/example.com/v1/namespaces/doomed/widgets";
    h.ok("POST", base, Some(json!({"metadata": {"name": "w"}})))
        .await;
    let pending = h.ok("DELETE", "/api/v1/namespaces/doomed", None).await;
    assert_eq!(pending["status"]["phase"], "Terminating");
    assert!(pending["metadata"]["deletionTimestamp"].is_string());
    let (code, body) = h
        .call("POST", base, Some(json!({"metadata": {"name": "v"}})))
        .await;
    if code != 404 {
        assert_eq!((code, reason(&body)), (403, "Forbidden"));
        assert!(
            body["message"].as_str().unwrap().contains(
                "unable to create new content in namespace doomed because it is being terminated"
            ),
            "{body}"
        );
    }
    // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
    for _ in 0..100 {
        if h.call("GET", "/api/v1/namespaces/doomed", None).await.0 == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        h.call("GET", "/api/v1/namespaces/doomed", None).await.0,
        404
    );
    assert_eq!(h.call("GET", &format!("{base}/w"), None).await.0, 404);
    // Core-group deletes answer with a Status.
    h.create_namespace("tmp").await;
    let _ = h.ok("DELETE", "/api/v1/namespaces/tmp", None).await;
}

#[tokio::test]
async fn racing_writers_exactly_one_wins() {
    let h = Arc::new(harness().await);
    let created = h.create_widget("race", json!({}), "red").await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let h = h.clone();
        let mut body = created.clone();
        body["spec"]["color"] = json!(format!("c{i}"));
        tasks.push(tokio::spawn(async move {
            h.call("PUT", &format!("{WIDGETS}/race"), Some(body)).await
        }));
    }
    let mut wins = 0;
    for task in tasks {
        let (code, body) = task.await.unwrap();
        match code {
            200 => wins += 1,
            409 => {
                assert_eq!(reason(&body), "Conflict");
                assert_eq!(
                    body["message"],
                    "Operation cannot be fulfilled on widgets.example.com \"race\": the object has been modified; please apply your changes to the latest version and try again"
                );
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(wins, 1);
    // Without a resourceVersion, PUT is unconditional.
    let mut blind = created.clone();
    blind["metadata"]["resourceVersion"] = Value::Null;
    blind["spec"]["color"] = json!("final");
    assert_eq!(
        h.ok("PUT", &format!("{WIDGETS}/race"), Some(blind)).await["spec"]["color"],
        "final"
    );
}

#[tokio::test]
async fn generate_name_makes_unique_names() {
    let h = harness().await;
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let (code, body) = h
            .call(
                "POST",
                WIDGETS,
                Some(json!({"metadata": {"generateName": "web-"}})),
            )
            .await;
        assert_eq!(code, 201, "{body}");
        let name = body["metadata"]["name"].as_str().unwrap().to_owned();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        names.insert(name);
    }
    assert_eq!(names.len(), 20);
    let long = "a".repeat(80);
    let body = h
        .ok(
            "POST",
            WIDGETS,
            Some(json!({"metadata": {"generateName": long}})),
        )
        .await;
    assert_eq!(body["metadata"]["name"].as_str().unwrap().len(), 63);
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let h = harness().await;
    h.ok(
        "POST",
        WIDGETS,
        Some(json!({"metadata": {"name": "f", "finalizers": ["example.com/a", "example.com/b"]}})),
    )
    .await;
    let pending = h.ok("DELETE", &format!("{WIDGETS}/f"), None).await;
    assert!(pending["metadata"]["deletionTimestamp"].is_string());
    let mut current = h.ok("GET", &format!("{WIDGETS}/f"), None).await;
    assert_eq!(
        current["metadata"]["deletionTimestamp"],
        pending["metadata"]["deletionTimestamp"]
    );
    // A second delete changes nothing.
    let again = h.ok("DELETE", &format!("{WIDGETS}/f"), None).await;
    assert_eq!(
        again["metadata"]["resourceVersion"],
        current["metadata"]["resourceVersion"]
    );
    // No new finalizers while deleting.
    let mut adding = current.clone();
    adding["metadata"]["finalizers"] = json!(["example.com/a", "example.com/b", "example.com/c"]);
    assert_eq!(
        h.call("PUT", &format!("{WIDGETS}/f"), Some(adding)).await.0,
        422
    );
    current["metadata"]["finalizers"] = json!(["example.com/b"]);
    current = h.ok("PUT", &format!("{WIDGETS}/f"), Some(current)).await;
    assert_eq!(h.call("GET", &format!("{WIDGETS}/f"), None).await.0, 200);
    current["metadata"]["finalizers"] = json!([]);
    h.ok("PUT", &format!("{WIDGETS}/f"), Some(current)).await;
    assert_eq!(h.call("GET", &format!("{WIDGETS}/f"), None).await.0, 404);
    // Preconditions.
    let w = h.create_widget("p", json!({}), "red").await;
    let (code, body) = h
        .call(
            "DELETE",
            &format!("{WIDGETS}/p"),
            Some(json!({"preconditions": {"uid": "nope"}})),
        )
        .await;
    assert_eq!((code, reason(&body)), (409, "Conflict"));
    let rv = w["metadata"]["resourceVersion"].clone();
    h.ok(
        "DELETE",
        &format!("{WIDGETS}/p"),
        Some(json!({"preconditions": {"resourceVersion": rv}})),
    )
    .await;
}

#[tokio::test]
async fn status_subresource_and_scale() {
    let h = harness().await;
    let created = h
        .ok(
            "POST",
            WIDGETS,
            Some(json!({"metadata": {"name": "s"}, "spec": {"replicas": 2}, "status": {"ready": true}})),
        )
        .await;
    assert!(
        created.get("status").is_none(),
        "create ignores status: {created}"
    );
    // /status writes change only status.
    let mut body = created.clone();
    body["status"] = json!({"ready": true, "replicas": 2, "selector": "app=s"});
    body["spec"]["replicas"] = json!(9);
    body["metadata"]["labels"] = json!({"x": "y"});
    let after = h
        .ok("PUT", &format!("{WIDGETS}/s/status"), Some(body))
        .await;
    assert_eq!(after["status"]["ready"], true);
    assert_eq!(after["spec"]["replicas"], 2);
    assert!(after["metadata"].get("labels").is_none());
    assert_eq!(after["metadata"]["generation"], 1);
    // Main-resource writes keep status.
    let mut body = after.clone();
    body["status"] = json!({"ready": false});
    body["spec"]["replicas"] = json!(3);
    let main = h.ok("PUT", &format!("{WIDGETS}/s"), Some(body)).await;
    assert_eq!(main["status"]["ready"], true);
    assert_eq!(main["spec"]["replicas"], 3);
    assert_eq!(main["metadata"]["generation"], 2);
    // GET /status returns the object.
    assert_eq!(
        h.ok("GET", &format!("{WIDGETS}/s/status"), None).await,
        main
    );
    // Scale.
    let scale = h.ok("GET", &format!("{WIDGETS}/s/scale"), None).await;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"], json!({"replicas": 2, "selector": "app=s"}));
    assert_eq!(
        scale["metadata"]["resourceVersion"],
        main["metadata"]["resourceVersion"]
    );
    let mut scale_body = scale.clone();
    scale_body["spec"]["replicas"] = json!(7);
    let scaled = h
        .ok("PUT", &format!("{WIDGETS}/s/scale"), Some(scale_body))
        .await;
    assert_eq!(scaled["spec"]["replicas"], 7);
    let widget = h.ok("GET", &format!("{WIDGETS}/s"), None).await;
    assert_eq!(widget["spec"]["replicas"], 7);
    assert_eq!(widget["metadata"]["generation"], 3);
    let mut stale = scale.clone();
    stale["spec"]["replicas"] = json!(1);
    assert_eq!(
        h.call("PUT", &format!("{WIDGETS}/s/scale"), Some(stale))
            .await
            .0,
        409
    );
    let mut negative = scaled.clone();
    negative["spec"]["replicas"] = json!(-1);
    assert_eq!(
        h.call("PUT", &format!("{WIDGETS}/s/scale"), Some(negative))
            .await
            .0,
        422
    );
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn label_and_field_selectors() {
    let h = harness().await;
    h.create_widget("a", json!({"app": "web", "tier": "front"}), "red")
        .await;
    h.create_widget("b", json!({"app": "web", "tier": "back"}), "blue")
        .await;
    h.create_widget("c", json!({"app": "db"}), "red").await;
    let rows: &[(&str, &[&str])] = &[
        ("labelSelector=app%3Dweb", &["a", "b"]),
        ("labelSelector=app%3D%3Dweb", &["a", "b"]),
        ("labelSelector=app%21%3Dweb", &["c"]),
        ("labelSelector=tier+in+(front,back)", &["a", "b"]),
        ("labelSelector=tier+notin+(front)", &["b", "c"]),
        ("labelSelector=tier", &["a", "b"]),
        ("labelSelector=%21tier", &["c"]),
        ("labelSelector=app%3Dweb,tier%3Dback", &["b"]),
        ("fieldSelector=metadata.name%3Db", &["b"]),
        ("fieldSelector=metadata.name%21%3Db", &["a", "c"]),
        (
            "fieldSelector=metadata.namespace%3Ddefault",
            &["a", "b", "c"],
        ),
        ("fieldSelector=spec.color%3Dred", &["a", "c"]),
        (
            "fieldSelector=spec.color%3Dred&labelSelector=app%3Dweb",
            &["a"],
        ),
    ];
    for (query, want) in rows {
        let list = h.ok("GET", &format!("{WIDGETS}?{query}"), None).await;
        assert_eq!(names(&list), *want, "{query}");
    }
    // Selector + limit: pages fill up across filtered items and omit remainingItemCount.
    let page = h
        .ok(
            "GET",
            &format!("{WIDGETS}?labelSelector=app%3Dweb&limit=1"),
            None,
        )
        .await;
    assert_eq!(names(&page), ["a"]);
    assert!(page["metadata"].get("remainingItemCount").is_none());
    let token = page["metadata"]["continue"].as_str().unwrap();
    let page = h
        .ok(
            "GET",
            &format!("{WIDGETS}?labelSelector=app%3Dweb&limit=1&continue={token}"),
            None,
        )
        .await;
    assert_eq!(names(&page), ["b"]);
    // deletecollection with a selector.
    let deleted = h
        .ok(
            "DELETE",
            &format!("{WIDGETS}?labelSelector=app%3Dweb"),
            None,
        )
        .await;
    assert_eq!(names(&deleted), ["a", "b"]);
    assert_eq!(names(&h.ok("GET", WIDGETS, None).await), ["c"]);
}

#[tokio::test]
async fn pagination_is_a_consistent_snapshot_across_concurrent_writes() {
    let h = harness().await;
    for i in 0..10 {
        h.create_widget(&format!("w{i:02}"), json!({}), "red").await;
    }
    let first = h.ok("GET", &format!("{WIDGETS}?limit=4"), None).await;
    assert_eq!(names(&first), ["w00", "w01", "w02", "w03"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 6);
    let rv = first["metadata"]["resourceVersion"].clone();
    // Writes after the first page are invisible to later pages.
    h.create_widget("w05a", json!({}), "red").await;
    h.ok("DELETE", &format!("{WIDGETS}/w08"), None).await;
    let mut all = names(&first);
    let mut token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    loop {
        let page = h
            .ok("GET", &format!("{WIDGETS}?limit=4&continue={token}"), None)
            .await;
        assert_eq!(page["metadata"]["resourceVersion"], rv);
        all.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = t.to_owned(),
            _ => {
                assert!(page["metadata"].get("remainingItemCount").is_none());
                break;
            }
        }
    }
    let want: Vec<String> = (0..10).map(|i| format!("w{i:02}")).collect();
    assert_eq!(all, want);
    // A fresh list sees the writes.
    let fresh = names(&h.ok("GET", WIDGETS, None).await);
    assert!(fresh.contains(&"w05a".to_owned()) && !fresh.contains(&"w08".to_owned()));
    // After compaction past the snapshot, the token expires with a fresh inconsistent token.
    let current = h.storage.current_revision().await.unwrap();
    h.storage.compact(current).await.unwrap();
    let (code, body) = h
        .call("GET", &format!("{WIDGETS}?limit=4&continue={token}"), None)
        .await;
    assert_eq!((code, reason(&body)), (410, "Expired"), "{body}");
    let fresh_token = body["metadata"]["continue"].as_str().unwrap();
    let rest = h
        .ok(
            "GET",
            &format!("{WIDGETS}?limit=100&continue={fresh_token}"),
            None,
        )
        .await;
    assert!(!names(&rest).is_empty());
    // continue with a non-zero resourceVersion is 400, with "0" it is allowed.
    let (code, _) = h
        .call(
            "GET",
            &format!("{WIDGETS}?limit=4&continue={fresh_token}&resourceVersion=5"),
            None,
        )
        .await;
    assert_eq!(code, 400);
    h.ok(
        "GET",
        &format!("{WIDGETS}?limit=4&continue={fresh_token}&resourceVersion=0"),
        None,
    )
    .await;
}

#[tokio::test]
async fn resource_version_matrix() {
    let h = harness().await;
    let a = h.create_widget("a", json!({}), "red").await;
    let rv_a: u64 = a["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    h.create_widget("b", json!({}), "red").await;
    let latest = h.storage.current_revision().await.unwrap();
    struct Case {
        query: String,
        code: u16,
        names: &'static [&'static str],
        list_rv: Option<u64>,
    }
    let case = |query: String, code, names, list_rv| Case {
        query,
        code,
        names,
        list_rv,
    };
    let cases = vec![
        case(String::new(), 200, &["a", "b"], Some(latest)),
        case("resourceVersion=0".into(), 200, &["a", "b"], None),
        case(
            format!("resourceVersion={rv_a}"),
            200,
            &["a", "b"],
            Some(latest),
        ),
        case(
            format!("resourceVersion={rv_a}&resourceVersionMatch=NotOlderThan"),
            200,
            &["a", "b"],
            Some(latest),
        ),
        case(
            format!("resourceVersion={rv_a}&resourceVersionMatch=Exact"),
            200,
            &["a"],
            Some(rv_a),
        ),
        case(
            format!("resourceVersion={rv_a}&limit=10"),
            200,
            &["a"],
            Some(rv_a),
        ),
        case(
            "resourceVersion=0&resourceVersionMatch=NotOlderThan".into(),
            200,
            &["a", "b"],
            None,
        ),
        case("resourceVersionMatch=NotOlderThan".into(), 422, &[], None),
        case(
            format!(
                "resourceVersion={}&resourceVersionMatch=Exact",
                latest + 100
            ),
            504,
            &[],
            None,
        ),
        case(format!("resourceVersion={}", latest + 100), 504, &[], None),
    ];
    for c in cases {
        let (code, body) = h.call("GET", &format!("{WIDGETS}?{}", c.query), None).await;
        assert_eq!(code, c.code, "{}: {body}", c.query);
        if code == 200 {
            assert_eq!(names(&body), c.names, "{}", c.query);
            if let Some(rv) = c.list_rv {
                assert_eq!(
                    body["metadata"]["resourceVersion"],
                    rv.to_string(),
                    "{}",
                    c.query
                );
            }
        }
    }
    // GET: not older than.
    assert_eq!(
        h.call("GET", &format!("{WIDGETS}/a?resourceVersion={rv_a}"), None)
            .await
            .0,
        200
    );
    assert_eq!(
        h.call("GET", &format!("{WIDGETS}/a?resourceVersion=0"), None)
            .await
            .0,
        200
    );
    // Compacted exact reads are 410.
    h.storage.compact(latest).await.unwrap();
    let (code, body) = h
        .call(
            "GET",
            &format!("{WIDGETS}?resourceVersion={rv_a}&resourceVersionMatch=Exact"),
            None,
        )
        .await;
    assert_eq!((code, reason(&body)), (410, "Expired"), "{body}");
    // staging/src/k8s.io/apiserver/pkg/storage/etcd3/errors.go.
    assert_eq!(
        body["message"],
        "The resourceVersion for the provided list is too old."
    );
}

#[tokio::test]
async fn watch_streams_changes_in_order() {
    let h = harness().await;
    let a = h.create_widget("a", json!({}), "red").await;
    let rv = a["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    // From a specific version: changes after it only.
    let mut w = h
        .watch(&format!("{WIDGETS}?watch=true&resourceVersion={rv}"), None)
        .await;
    h.create_widget("b", json!({}), "red").await;
    let mut a2 = h.ok("GET", &format!("{WIDGETS}/a"), None).await;
    a2["spec"]["replicas"] = json!(5);
    h.ok("PUT", &format!("{WIDGETS}/a"), Some(a2)).await;
    h.ok("DELETE", &format!("{WIDGETS}/b"), None).await;
    let mut seen = Vec::new();
    let mut last_rv = 0u64;
    for _ in 0..3 {
        let e = w.next_change().await.unwrap();
        let rv: u64 = e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(rv > last_rv);
        last_rv = rv;
        seen.push((
            e["type"].as_str().unwrap().to_owned(),
            e["object"]["metadata"]["name"].as_str().unwrap().to_owned(),
        ));
    }
    let want = [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")];
    assert_eq!(seen, want.map(|(t, n)| (t.to_owned(), n.to_owned())));
    // Without a version: the current state as ADDED first.
    let mut w = h.watch(&format!("{WIDGETS}?watch=1"), None).await;
    let e = w.next_change().await.unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("a"))
    );
    // Legacy prefix and single-object watch.
    let mut w = h
        .watch(
            "/apis/example.com/v1/watch/namespaces/default/widgets/a",
            None,
        )
        .await;
    assert_eq!(
        w.next_change().await.unwrap()["object"]["metadata"]["name"],
        "a"
    );
}

#[tokio::test]
async fn watch_bookmarks_initial_events_and_timeouts() {
    let h = harness().await;
    h.create_widget("a", json!({}), "red").await;
    h.create_widget("b", json!({}), "red").await;
    let mut w = h
        .watch(
            &format!("{WIDGETS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
            None,
        )
        .await;
    let mut added = Vec::new();
    let end = loop {
        let e = w.next().await.unwrap();
        if e["type"] == "BOOKMARK" {
            break e;
        }
        assert_eq!(e["type"], "ADDED");
        added.push(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
    };
    assert_eq!(added, ["a", "b"]);
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(end["object"]["kind"], "Widget");
    assert_eq!(end["object"]["apiVersion"], "example.com/v1");
    // Periodic bookmarks follow (interval 100 ms in the harness).
    let next = w.next().await.unwrap();
    assert_eq!(next["type"], "BOOKMARK");
    assert!(next["object"]["metadata"].get("annotations").is_none());
    // timeoutSeconds ends the stream.
    let mut w = h
        .watch(
            &format!("{WIDGETS}?watch=true&timeoutSeconds=1&resourceVersion=0"),
            None,
        )
        .await;
    // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
    let started = std::time::Instant::now();
    let mut events = 0;
    // The stream must end by itself; the generous bound only turns a hang into a failure (how
    // fast it ends is not a unit-test matter on a loaded machine).
    tokio::time::timeout(Duration::from_secs(30), async {
        while w.next().await.is_some() {
            events += 1;
        }
    })
    .await
    .expect("timeoutSeconds=1 ends the watch");
    assert_eq!(events, 2, "the two ADDED events, then the end");
    // It does not end before the timeout: load can only make it later.
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
}

#[tokio::test]
async fn watch_selectors_turn_leaving_into_deleted() {
    let h = harness().await;
    let a = h.create_widget("a", json!({"app": "web"}), "red").await;
    let rv = a["metadata"]["resourceVersion"].as_str().unwrap();
    let mut w = h
        .watch(
            &format!("{WIDGETS}?watch=true&labelSelector=app%3Dweb&resourceVersion={rv}"),
            None,
        )
        .await;
    let mut current = h.ok("GET", &format!("{WIDGETS}/a"), None).await;
    current["metadata"]["labels"] = json!({"app": "db"});
    current = h.ok("PUT", &format!("{WIDGETS}/a"), Some(current)).await;
    h.create_widget("other", json!({"app": "db"}), "red").await;
    current["metadata"]["labels"] = json!({"app": "web"});
    h.ok("PUT", &format!("{WIDGETS}/a"), Some(current)).await;
    let left = w.next_change().await.unwrap();
    assert_eq!(left["type"], "DELETED");
    // The state it was selected in, at the revision it left (`convertToWatchEvent`).
    assert_eq!(left["object"]["metadata"]["labels"]["app"], "web");
    let back = w.next_change().await.unwrap();
    assert_eq!(back["type"], "ADDED");
    assert_eq!(back["object"]["metadata"]["name"], "a");
}

#[tokio::test]
async fn watch_from_compacted_version_is_one_410_error_event() {
    let h = harness().await;
    let a = h.create_widget("a", json!({}), "red").await;
    let rv = a["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    h.create_widget("b", json!({}), "red").await;
    h.create_widget("c", json!({}), "red").await;
    let current = h.storage.current_revision().await.unwrap();
    h.storage.compact(current).await.unwrap();
    let mut w = h
        .watch(&format!("{WIDGETS}?watch=true&resourceVersion={rv}"), None)
        .await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(w.next().await.is_none());
}

/// A watcher that falls behind the ring is ended as upstream's cacher ends it: after the
/// events it was owed, without an ERROR event, so its client watches again from the last
/// resourceVersion it saw (and gets the rest from history) instead of listing again.
#[tokio::test]
async fn slow_watchers_are_ended_without_an_error_and_resume_from_their_last_event() {
    let options = EmbeddedOptions::default()
        .with_compaction_interval(None)
        .with_watch_buffer(8);
    let mut registry = Registry::new();
    registry.register::<ScaledWidget>();
    let builder = Server::builder().registry(registry).watch_queue(2);
    let h = Harness::in_temp_dir(options, builder).await;
    let start = h.ok("GET", WIDGETS, None).await["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut w = h
        .watch(
            &format!("{WIDGETS}?watch=true&resourceVersion={start}"),
            None,
        )
        .await;
    // Nobody reads while many writes happen.
    let names: Vec<String> = (0..60).map(|i| format!("w{i:02}")).collect();
    for name in &names {
        h.create_widget(name, json!({}), "red").await;
    }
    let mut seen = Vec::new();
    while let Some(e) = w.next().await {
        assert_eq!(e["type"], "ADDED", "{e}");
        seen.push(e);
    }
    assert!(seen.len() < names.len(), "the watcher was not cut short");
    // Ended, not quiet: a later change does not reach it.
    h.create_widget("later", json!({}), "red").await;
    assert!(w.next().await.is_none());
    // Watching again from the last event seen gives exactly the rest.
    let resume = seen.last().map_or(start, |e| {
        e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned()
    });
    let mut again = h
        .watch(
            &format!("{WIDGETS}?watch=true&resourceVersion={resume}"),
            None,
        )
        .await;
    let mut rest = Vec::new();
    while let Some(e) = again.next().await {
        rest.push(e["object"]["metadata"]["name"].as_str().unwrap().to_owned());
        if rest.last().map(String::as_str) == Some("later") {
            break;
        }
    }
    let mut want: Vec<String> = names[seen.len()..].to_vec();
    want.push("later".to_owned());
    assert_eq!(rest, want);
}

#[tokio::test]
async fn table_partial_and_yaml_representations() {
    let h = harness().await;
    h.create_widget("a", json!({}), "red").await;
    let get = |uri: &str, accept: &str| {
        Request::get(uri.to_owned())
            .header("accept", accept.to_owned())
            .body(Body::empty())
            .unwrap()
    };
    let response = h
        .request(get(
            WIDGETS,
            "application/json;as=Table;g=meta.k8s.io;v=v1, application/json",
        ))
        .await;
    assert_eq!(response.headers()["content-type"], "application/json");
    let table: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Replicas"]);
    // The Name column is described by ObjectMeta.name's documentation, as upstream's
    // CRD and default table convertors describe it.
    let described = table["columnDefinitions"][0]["description"]
        .as_str()
        .unwrap();
    assert!(
        described.starts_with("Name must be unique within a namespace."),
        "{described}"
    );
    assert_eq!(table["rows"][0]["cells"], json!(["a", 1]));
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let response = h
        .request(get(
            &format!("{GADGETS}?includeObject=Object"),
            "application/json;as=Table;g=meta.k8s.io;v=v1",
        ))
        .await;
    let table: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(table["columnDefinitions"][1]["name"], "Created At");
    // Partial metadata.
    let response = h
        .request(get(
            WIDGETS,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        ))
        .await;
    let list: Value = serde_json::from_slice(
        &axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert!(list["items"][0].get("spec").is_none());
    // Upstream's items carry their own kind and apiVersion (metadata-only informers read them).
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][0]["apiVersion"], "meta.k8s.io/v1");
    // YAML out and in.
    let response = h
        .request(get(&format!("{WIDGETS}/a"), "application/yaml"))
        .await;
    assert_eq!(response.headers()["content-type"], "application/yaml");
    let text = String::from_utf8(
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(text.contains("kind: Widget"), "{text}");
    let response = h
        .request(
            Request::post(WIDGETS)
                .header("content-type", "application/yaml")
                .body(Body::from(
                    "metadata:\n  name: from-yaml\nspec:\n  replicas: 4\n",
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(response.status(), 201);
    assert_eq!(
        h.ok("GET", &format!("{WIDGETS}/from-yaml"), None).await["spec"]["replicas"],
        4
    );
    // Table on a watch.
    let mut w = h
        .watch(
            &format!("{WIDGETS}?watch=true"),
            Some("application/json;as=Table;g=meta.k8s.io;v=v1"),
        )
        .await;
    let e = w.next_change().await.unwrap();
    assert_eq!(e["object"]["kind"], "Table");
    // gzip when asked, from upstream's 128 KiB on (`defaultGzipThresholdBytes`).
    let gzipped = async |uri: &str| {
        let response = h
            .request(
                Request::get(uri)
                    .header("accept-encoding", "gzip")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        let headers = response.headers();
        (
            headers
                .get("content-encoding")
                .map(|v| v.to_str().unwrap().to_owned()),
            headers
                .get("vary")
                .map(|v| v.to_str().unwrap().to_ascii_lowercase()),
        )
    };
    assert_eq!(gzipped(&format!("{WIDGETS}/from-yaml")).await, (None, None));
    h.ok(
        "POST",
        WIDGETS,
        Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "large", "annotations": {"note": "x".repeat(200 * 1024)}}})),
    )
    .await;
    assert_eq!(
        gzipped(&format!("{WIDGETS}/large")).await,
        (Some("gzip".to_owned()), Some("accept-encoding".to_owned()))
    );
}

/// A server of Widgets on a socket (127.0.0.1, a free port) over a fresh store in the returned
/// directory. Tests of it wait on the wall clock: a paused clock would not wait for sockets.
async fn start_widget_server() -> (tempfile::TempDir, kapi::server::RunningServer) {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path(), EmbeddedOptions::default())
        .await
        .unwrap();
    let mut registry = Registry::new();
    registry.register::<ScaledWidget>();
    let server = Server::builder()
        .registry(registry)
        .storage(Arc::new(storage))
        .start()
        .await
        .unwrap();
    (dir, server)
}

#[tokio::test]
async fn start_serves_on_a_socket_and_shuts_down_with_open_watches() {
    use std::io::{Read, Write};
    let (_dir, server) = start_widget_server().await;
    let addr = server.addr();
    assert_ne!(addr.port(), 0);
    let response = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .write_all(
                b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    })
    .await
    .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"name\":\"default\""));
    // An open watch does not block shutdown.
    let watch = tokio::task::spawn_blocking(move || {
        let mut watch = std::net::TcpStream::connect(addr).unwrap();
        watch
            .write_all(
                format!("GET {WIDGETS}?watch=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes(),
            )
            .unwrap();
        let mut buf = [0u8; 64];
        let n = watch.read(&mut buf).unwrap();
        (watch, String::from_utf8_lossy(&buf[..n]).into_owned())
    })
    .await
    .unwrap();
    assert!(watch.1.starts_with("HTTP/1.1 200"), "{}", watch.1);
    tokio::time::timeout(Duration::from_secs(5), server.shutdown())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn watches_share_one_http2_connection() {
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let (_dir, server) = start_widget_server().await;
    let addr = server.addr();
    // HTTP/2 with prior knowledge: no TLS, no upgrade.
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = |method: &str, path: &str, body: Option<Value>| {
        let mut sender = sender.clone();
        let request = Request::builder()
            .method(method)
            .uri(format!("http://{addr}{path}"))
            .header("content-type", "application/json")
            .body(Full::new(kapi::storage::Bytes::from(
                body.map(|b| b.to_string()).unwrap_or_default(),
            )))
            .unwrap();
        async move { sender.send_request(request).await.unwrap() }
    };
    let mut watches = Vec::new();
    for _ in 0..2 {
        let response = request("GET", &format!("{WIDGETS}?watch=true"), None).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.version(), axum::http::Version::HTTP_2);
        watches.push(response.into_body());
    }
    let created = request(
        "POST",
        WIDGETS,
        Some(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2"}})),
    )
    .await;
    assert_eq!(created.status(), 201);
    for body in &mut watches {
        let mut line = Vec::new();
        while !line.contains(&b'\n') {
            let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            line.extend_from_slice(&frame.into_data().unwrap());
        }
        let event: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["metadata"]["name"], "w2");
    }
    // Open HTTP/2 watches do not hold up shutdown either.
    tokio::time::timeout(Duration::from_secs(5), server.shutdown())
        .await
        .unwrap()
        .unwrap();
    drop(watches);
}

/// A 100,000-deep YAML body is refused before a parser sees it: the YAML parser's time grows
/// with the square of the nesting (18 s of CPU for this body), the class of upstream's
/// CVE-2019-11254. Create and apply bodies alike.
#[tokio::test]
async fn deeply_nested_yaml_is_refused_before_parsing() {
    let h = harness().await;
    let deep = format!("metadata: {{name: deep}}\nspec: {}", "[".repeat(100_000));
    let apply = format!("{WIDGETS}/deep?fieldManager=test");
    for (method, uri, content_type) in [
        ("POST", WIDGETS, "application/yaml"),
        ("PATCH", apply.as_str(), "application/apply-patch+yaml"),
    ] {
        let reply = h.raw(method, uri, content_type, deep.as_bytes()).await;
        assert_eq!(reply.code, 400, "{method}: {}", reply.body);
        assert!(
            reply.message().contains("nests deeper than 128 levels"),
            "{method}: {}",
            reply.body
        );
    }
}

/// Without authentication, web pages are kept out: a cross-origin `no-cors` POST (no
/// Content-Type, read as JSON as upstream reads it) and DNS rebinding (a foreign name in
/// `Host`) get 403 and create nothing; programs, which send no `Origin`, and pages of the
/// server's own origin are served.
#[tokio::test]
async fn web_pages_of_other_origins_and_rebound_names_are_refused() {
    let h = harness().await;
    let body = |name: &str| {
        serde_json::to_vec(&json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"replicas": 1},
        }))
        .unwrap()
    };
    let refused: [&[(&str, &str)]; 3] = [
        &[
            ("host", "127.0.0.1:6443"),
            ("origin", "http://attacker.example"),
        ],
        &[("host", "attacker.example:6443")],
        &[("host", "127.0.0.1:6443"), ("origin", "null")],
    ];
    for headers in refused {
        let answer = h.exchange("POST", WIDGETS, headers, body("evil")).await;
        assert_eq!(answer.code(), 403, "{headers:?}: {}", answer.text());
        assert_eq!(answer.json()["reason"], "Forbidden");
    }
    assert_eq!(h.call("GET", &format!("{WIDGETS}/evil"), None).await.0, 404);
    let own = [
        ("host", "localhost:6443"),
        ("origin", "http://localhost:6443"),
    ];
    let answer = h.exchange("POST", WIDGETS, &own, body("own")).await;
    assert_eq!(answer.code(), 201, "{}", answer.text());
}

/// Indented JSON for people, as upstream's `isPrettyPrint` decides: `?pretty=true`, or a
/// `curl`, `Wget` or browser client that does not say `?pretty=false`; two spaces, keys in
/// their order; errors too; watches stay one event per line.
#[tokio::test]
async fn people_get_pretty_json() {
    let h = harness().await;
    h.ok(
        "POST",
        WIDGETS,
        Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"replicas": 1}})),
    )
    .await;
    let compact = h
        .exchange("GET", &format!("{WIDGETS}/w"), &[], Vec::new())
        .await;
    let compact_text = String::from_utf8(compact.body.clone()).unwrap();
    assert!(!compact_text.contains('\n'), "{compact_text}");
    let value: Value = serde_json::from_slice(&compact.body).unwrap();
    let indented = serde_json::to_string_pretty(&value).unwrap();
    assert!(indented.starts_with("{\n  \"apiVersion\": \"example.com/v1\",\n"));

    for (uri, agent) in [
        (format!("{WIDGETS}/w?pretty=true"), "kubectl/v1.34.0"),
        (format!("{WIDGETS}/w"), "curl/8.5.0"),
        (format!("{WIDGETS}/w"), "Mozilla/5.0 (X11; Linux x86_64)"),
    ] {
        let answer = h
            .exchange("GET", &uri, &[("user-agent", agent)], Vec::new())
            .await;
        assert_eq!(
            String::from_utf8(answer.body).unwrap(),
            indented,
            "{uri} {agent}"
        );
    }
    let off = h
        .exchange(
            "GET",
            &format!("{WIDGETS}/w?pretty=false"),
            &[("user-agent", "curl/8.5.0")],
            Vec::new(),
        )
        .await;
    assert_eq!(off.body, compact.body);

    let missing = h
        .exchange(
            "GET",
            &format!("{WIDGETS}/missing?pretty=true"),
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(missing.status, 404);
    assert!(
        String::from_utf8(missing.body)
            .unwrap()
            .contains("\n  \"kind\": \"Status\",\n"),
        "a Status is indented too"
    );
}

/// A failure is written in the format the request asked for, as upstream's `ErrorNegotiated`
/// writes it: a YAML Status for a client that accepts YAML, keys sorted as upstream's
/// `sigs.k8s.io/yaml.JSONToYAML` sorts them.
#[tokio::test]
async fn errors_come_in_the_format_asked_for() {
    let h = harness().await;
    let answer = h
        .exchange(
            "GET",
            &format!("{WIDGETS}/missing"),
            &[("accept", "application/yaml")],
            Vec::new(),
        )
        .await;
    assert_eq!(answer.status, 404);
    assert_eq!(answer.headers["content-type"], "application/yaml");
    assert_eq!(
        String::from_utf8(answer.body).unwrap(),
        "apiVersion: v1\ncode: 404\ndetails:\n  group: example.com\n  kind: widgets\n  name: missing\n\
         kind: Status\nmessage: widgets.example.com \"missing\" not found\nmetadata: {}\n\
         reason: NotFound\nstatus: Failure\n"
    );
    let json = h
        .exchange("GET", &format!("{WIDGETS}/missing"), &[], Vec::new())
        .await;
    assert_eq!(json.headers["content-type"], "application/json");
}

/// A built-in kind (RuntimeClass of `node.k8s.io`) reduced to its quantities.
#[derive(
    Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, kapi::Resource,
)]
#[resource(group = "node.k8s.io", version = "v1", kind = "RuntimeClass", cluster)]
struct RuntimeClass {
    #[serde(rename = "apiVersion")]
    api_version: kapi::type_tag::ApiVersion<Self>,
    kind: kapi::type_tag::Kind<Self>,
    #[serde(default)]
    metadata: kapi::meta::ObjectMeta,
    handler: String,
    overhead:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, kapi::Quantity>>,
}

/// A custom resource with the same quantities.
#[derive(
    Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, kapi::Resource,
)]
#[resource(group = "example.com", version = "v1", kind = "Budget", cluster)]
struct Budget {
    #[serde(rename = "apiVersion")]
    api_version: kapi::type_tag::ApiVersion<Self>,
    kind: kapi::type_tag::Kind<Self>,
    #[serde(default)]
    metadata: kapi::meta::ObjectMeta,
    handler: String,
    overhead:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, kapi::Quantity>>,
}

/// Built-in kinds store quantities in canonical form, as Go's `resource.Quantity.MarshalJSON`
/// writes them (`1000m` → `1`, `0.5` → `500m`); custom resources are stored as sent
/// (apiextensions-apiserver keeps the JSON it was given), so `kubectl apply` of a manifest with
/// `1000m` shows no drift (issue 17).
#[tokio::test]
async fn built_in_quantities_are_canonical_and_custom_ones_kept() {
    let mut registry = Registry::new();
    registry.register::<RuntimeClass>().register::<Budget>();
    let builder = support::builder(registry, KubeVersion::new(1, 34));
    let h = Harness::in_temp_dir(support::store_options(), builder).await;
    let overhead = json!({"podFixed": {"cpu": "1000m", "memory": "0.5Gi", "pods": 2, "x": 0.05}});
    let builtin = h
        .ok(
            "POST",
            "/apis/node.k8s.io/v1/runtimeclasses",
            Some(
                json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                "metadata": {"name": "r"}, "handler": "h", "overhead": overhead}),
            ),
        )
        .await;
    assert_eq!(
        builtin["overhead"],
        json!({"podFixed": {"cpu": "1", "memory": "512Mi", "pods": "2", "x": "50m"}})
    );
    let custom = h
        .ok(
            "POST",
            "/apis/example.com/v1/budgets",
            Some(json!({"apiVersion": "example.com/v1", "kind": "Budget",
                "metadata": {"name": "b"}, "handler": "h", "overhead": overhead})),
        )
        .await;
    assert_eq!(custom["overhead"], overhead);
    let got = h.ok("GET", "/apis/example.com/v1/budgets/b", None).await;
    assert_eq!(got["overhead"], overhead);
}
