//! Deletion through the router as kube-apiserver and its garbage collector do it: the
//! propagation policies (`Orphan`, `Background`, `Foreground`, the deprecated
//! `orphanDependents`) on an owner → child → grandchild chain, `blockOwnerDeletion`, owner
//! references across namespaces and scopes, dry runs, deletecollection, Pods' grace periods,
//! the kinds that orphan by default, the namespace `finalize` subresource, the order watchers
//! see the deletions in, and cascades a stopped server left half done.
//!
//! The collector works in the background, so every wait polls with a deadline.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use futures_util::StreamExt;
use kapi::meta::ObjectMeta;
use kapi::storage::{Bytes, EmbeddedStorage, Storage};
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

use support::kinds::Widget;
use support::{Harness, MERGE, eventually};

mod support;

/// A cluster-scoped custom kind.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1", kind = "Gadget", cluster)]
struct Gadget {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<Value>,
}

/// The core Pod, as far as deletion looks at it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "Pod", namespaced)]
struct Pod {
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

/// The core ReplicationController, which orphans its dependents unless told otherwise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "ReplicationController", namespaced)]
struct ReplicationController {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<Value>,
}

/// How long any wait for the collector may take before the test fails.
const WAIT: Duration = Duration::from_secs(15);

const HOLD: &str = "example.com/hold";

fn widgets(ns: &str) -> String {
    format!("/apis/example.com/v1/namespaces/{ns}/widgets")
}

fn widget_uri(ns: &str, name: &str) -> String {
    format!("{}/{name}", widgets(ns))
}

const GADGETS: &str = "/apis/example.com/v1/gadgets";

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register::<Widget>()
        .register::<Gadget>()
        .register::<Pod>()
        .register::<ReplicationController>();
    registry
}

impl Harness {
    async fn start(storage: EmbeddedStorage) -> Self {
        let builder = support::builder(registry(), KubeVersion::new(1, 34));
        Self::serve(storage, None, builder).await
    }

    async fn open(dir: &Path) -> Self {
        Self::start(support::reopen(dir).await).await
    }

    /// Stops the server and lets go of its store.
    fn stop(self) {
        self.background.stop();
        drop(self);
    }

    async fn get(&self, uri: &str) -> Option<Value> {
        let (code, value) = self.call("GET", uri, None).await;
        match code {
            200 => Some(value),
            404 => None,
            _ => panic!("GET {uri}: {code} {value}"),
        }
    }

    /// Creates a widget with the given owner references and finalizers.
    async fn widget(&self, ns: &str, name: &str, owners: &[Value], finalizers: &[&str]) -> Value {
        self.ok(
            "POST",
            &widgets(ns),
            Some(json!({
                "metadata": {"name": name, "ownerReferences": owners, "finalizers": finalizers},
                "spec": {"n": 1},
            })),
        )
        .await
    }

    async fn gadget(&self, name: &str, owners: &[Value]) -> Value {
        self.ok(
            "POST",
            GADGETS,
            Some(json!({"metadata": {"name": name, "ownerReferences": owners}})),
        )
        .await
    }

    /// owner → child → grandchild in `ns`, every reference blocking.
    async fn chain(&self, ns: &str) -> [Value; 3] {
        let owner = self.widget(ns, "owner", &[], &[]).await;
        let child = self
            .widget(ns, "child", &[owner_ref(&owner, true)], &[])
            .await;
        let grandchild = self
            .widget(ns, "grandchild", &[owner_ref(&child, true)], &[])
            .await;
        [owner, child, grandchild]
    }

    /// Polls `uri` until `done` holds for it (`None`: not found), or fails the test.
    async fn wait(&self, what: &str, uri: &str, done: impl Fn(Option<&Value>) -> bool) {
        eventually(WAIT, Duration::from_millis(20), async || {
            let current = self.get(uri).await;
            if done(current.as_ref()) {
                Ok(())
            } else {
                Err(format!(
                    "timed out waiting for {what}: {uri} is {current:?}"
                ))
            }
        })
        .await
    }

    async fn wait_gone(&self, uri: &str) {
        self.wait("deletion", uri, |o| o.is_none()).await;
    }

    async fn remove_finalizers(&self, uri: &str) {
        self.ok_as(
            "PATCH",
            uri,
            MERGE,
            Some(json!({"metadata": {"finalizers": null}})),
        )
        .await;
    }
}

/// A reference to `owner`, blocking its foreground deletion or not.
fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn finalizers(object: &Value) -> Vec<String> {
    object["metadata"]["finalizers"]
        .as_array()
        .map(|a| a.iter().map(|f| f.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn owner_uids(object: &Value) -> Vec<String> {
    object["metadata"]["ownerReferences"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| r["uid"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn harness() -> (Harness, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Harness::open(dir.path()).await, dir)
}

/// What a delete asks for, as a query string and a body.
struct Ask {
    name: &'static str,
    query: &'static str,
    body: Option<Value>,
    /// Whether the owner's dependents are deleted (otherwise orphaned).
    cascades: bool,
    /// The finalizer the answer shows on the owner, if it is held.
    held_by: Option<&'static str>,
    code: u16,
}

fn asks() -> Vec<Ask> {
    vec![
        Ask {
            name: "default",
            query: "",
            body: None,
            cascades: true,
            held_by: None,
            code: 200,
        },
        Ask {
            name: "background query",
            query: "?propagationPolicy=Background",
            body: None,
            cascades: true,
            held_by: None,
            code: 200,
        },
        Ask {
            name: "foreground body",
            query: "",
            body: Some(
                json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"}),
            ),
            cascades: true,
            held_by: Some("foregroundDeletion"),
            code: 200,
        },
        Ask {
            name: "orphan query",
            query: "?propagationPolicy=Orphan",
            body: None,
            cascades: false,
            held_by: Some("orphan"),
            code: 200,
        },
        Ask {
            name: "orphanDependents true",
            query: "",
            body: Some(json!({"orphanDependents": true})),
            cascades: false,
            held_by: Some("orphan"),
            code: 200,
        },
        Ask {
            name: "orphanDependents false",
            query: "?orphanDependents=false",
            body: None,
            cascades: true,
            held_by: None,
            code: 200,
        },
    ]
}

#[tokio::test]
async fn each_policy_on_a_chain() {
    let (h, _dir) = harness().await;
    for (i, ask) in asks().into_iter().enumerate() {
        let ns = format!("chain-{i}");
        h.create_namespace(&ns).await;
        let [owner, child, _] = h.chain(&ns).await;
        let uri = format!("{}{}", widget_uri(&ns, "owner"), ask.query);
        let (code, answer) = h.call("DELETE", &uri, ask.body.clone()).await;
        assert_eq!(code, ask.code, "{}: {answer}", ask.name);
        match ask.held_by {
            Some(finalizer) => {
                assert!(
                    finalizers(&answer).contains(&finalizer.to_owned()),
                    "{}: {answer}",
                    ask.name
                );
                assert!(
                    answer["metadata"]["deletionTimestamp"].is_string(),
                    "{}",
                    ask.name
                );
            }
            None => assert!(finalizers(&answer).is_empty(), "{}: {answer}", ask.name),
        }
        h.wait_gone(&widget_uri(&ns, "owner")).await;
        if ask.cascades {
            h.wait_gone(&widget_uri(&ns, "child")).await;
            h.wait_gone(&widget_uri(&ns, "grandchild")).await;
        } else {
            // The owner only goes once its dependents are orphaned.
            let child_now = h.get(&widget_uri(&ns, "child")).await.unwrap();
            assert!(
                owner_uids(&child_now).is_empty(),
                "{}: {child_now}",
                ask.name
            );
            let grandchild = h.get(&widget_uri(&ns, "grandchild")).await.unwrap();
            assert_eq!(
                owner_uids(&grandchild),
                [child["metadata"]["uid"].as_str().unwrap()],
                "{}: only the deleted owner's references go",
                ask.name
            );
        }
        assert!(owner["metadata"]["uid"].is_string());
    }
}

#[tokio::test]
async fn foreground_waits_for_blocking_dependents_only() {
    let (h, _dir) = harness().await;
    for block in [true, false] {
        let ns = format!("block-{block}");
        h.create_namespace(&ns).await;
        let owner = h.widget(&ns, "owner", &[], &[]).await;
        h.widget(&ns, "dependent", &[owner_ref(&owner, block)], &[HOLD])
            .await;
        let owner_uri = widget_uri(&ns, "owner");
        let dependent_uri = widget_uri(&ns, "dependent");
        h.ok(
            "DELETE",
            &format!("{owner_uri}?propagationPolicy=Foreground"),
            None,
        )
        .await;
        // Blocking or not, the dependent is deleted; its own finalizer holds it.
        h.wait("the dependent marked", &dependent_uri, |o| {
            o.is_some_and(|o| o["metadata"]["deletionTimestamp"].is_string())
        })
        .await;
        if block {
            let held = h.get(&owner_uri).await.unwrap();
            assert_eq!(finalizers(&held), ["foregroundDeletion"], "{held}");
            h.remove_finalizers(&dependent_uri).await;
            h.wait_gone(&dependent_uri).await;
            h.wait_gone(&owner_uri).await;
        } else {
            h.wait_gone(&owner_uri).await;
            let dependent = h.get(&dependent_uri).await.unwrap();
            assert_eq!(finalizers(&dependent), [HOLD]);
            h.remove_finalizers(&dependent_uri).await;
            h.wait_gone(&dependent_uri).await;
        }
    }
}

#[tokio::test]
async fn owners_resolve_only_in_the_dependents_namespace_or_cluster_wide() {
    let (h, _dir) = harness().await;
    h.create_namespace("a").await;
    h.create_namespace("b").await;
    let owner = h.widget("a", "owner", &[], &[]).await;
    let same = h.widget("a", "same", &[owner_ref(&owner, true)], &[]).await;
    // A namespaced owner does not own objects of another namespace: the reference counts as
    // absent there, and an object whose owners are all absent is collected.
    h.widget("b", "other", &[owner_ref(&owner, true)], &[])
        .await;
    h.wait_gone(&widget_uri("b", "other")).await;
    assert!(h.get(&widget_uri("a", "owner")).await.is_some());
    // A namespaced owner of a cluster-scoped object never resolves: the object is kept.
    h.gadget("kept", &[owner_ref(&owner, true)]).await;
    // The collector takes objects in order: once this later, dangling one is gone, it has
    // looked at the gadget.
    let mut ghost = same.clone();
    ghost["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    ghost["metadata"]["name"] = json!("ghost");
    h.widget("a", "sentinel", &[owner_ref(&ghost, false)], &[])
        .await;
    h.wait_gone(&widget_uri("a", "sentinel")).await;
    assert!(h.get(&format!("{GADGETS}/kept")).await.is_some());
    assert!(h.get(&widget_uri("a", "same")).await.is_some());

    // A cluster-scoped owner owns objects in every namespace.
    let cluster_owner = h.gadget("root", &[]).await;
    for ns in ["a", "b"] {
        h.widget(ns, "leaf", &[owner_ref(&cluster_owner, false)], &[])
            .await;
    }
    h.ok("DELETE", &format!("{GADGETS}/root"), None).await;
    for ns in ["a", "b"] {
        h.wait_gone(&widget_uri(ns, "leaf")).await;
    }
    // Foreground on the namespaced owner only waits for its own namespace's dependents.
    h.ok(
        "DELETE",
        &format!("{}?propagationPolicy=Foreground", widget_uri("a", "owner")),
        None,
    )
    .await;
    h.wait_gone(&widget_uri("a", "same")).await;
    h.wait_gone(&widget_uri("a", "owner")).await;
}

#[tokio::test]
async fn foreground_deletion_of_an_ownership_cycle_finishes() {
    let (h, _dir) = harness().await;
    let a = h.widget("default", "a", &[], &[]).await;
    let b = h.widget("default", "b", &[owner_ref(&a, true)], &[]).await;
    h.ok_as(
        "PATCH",
        &widget_uri("default", "a"),
        MERGE,
        Some(json!({"metadata": {"ownerReferences": [owner_ref(&b, true)]}})),
    )
    .await;
    h.ok(
        "DELETE",
        &format!(
            "{}?propagationPolicy=Foreground",
            widget_uri("default", "a")
        ),
        None,
    )
    .await;
    h.wait_gone(&widget_uri("default", "a")).await;
    h.wait_gone(&widget_uri("default", "b")).await;
}

#[tokio::test]
async fn dry_run_deletes_change_nothing() {
    let (h, _dir) = harness().await;
    let [owner, _, _] = h.chain("default").await;
    for ask in asks() {
        let before = h.storage.current_revision().await.unwrap();
        let sep = if ask.query.is_empty() { "?" } else { "&" };
        let uri = format!(
            "{}{}{sep}dryRun=All",
            widget_uri("default", "owner"),
            ask.query
        );
        let (code, answer) = h.call("DELETE", &uri, ask.body.clone()).await;
        assert_eq!(code, ask.code, "{}: {answer}", ask.name);
        if let Some(finalizer) = ask.held_by {
            assert!(
                finalizers(&answer).contains(&finalizer.to_owned()),
                "{}: {answer}",
                ask.name
            );
        }
        assert_eq!(
            h.storage.current_revision().await.unwrap(),
            before,
            "{}: a dry run wrote",
            ask.name
        );
        let stored = h.get(&widget_uri("default", "owner")).await.unwrap();
        assert_eq!(stored, owner, "{}", ask.name);
        for name in ["child", "grandchild"] {
            assert!(h.get(&widget_uri("default", name)).await.is_some());
        }
    }
}

#[tokio::test]
async fn invalid_options_are_422_in_upstreams_words() {
    let (h, _dir) = harness().await;
    h.widget("default", "w", &[], &[]).await;
    let uri = widget_uri("default", "w");
    let rows = [
        (
            format!("{uri}?propagationPolicy=Sideways"),
            None,
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
        ),
        (
            uri.clone(),
            Some(json!({"propagationPolicy": "Sideways"})),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
        ),
        (
            uri.clone(),
            Some(json!({"propagationPolicy": "Orphan", "orphanDependents": true})),
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set",
        ),
    ];
    for (uri, body, message) in rows {
        let (code, status) = h.call("DELETE", &uri, body).await;
        assert_eq!(code, 422, "{status}");
        assert_eq!(status["reason"], "Invalid");
        assert_eq!(status["message"], message);
    }
    assert!(h.get(&uri).await.is_some());
}

#[tokio::test]
async fn deletecollection_passes_the_policy_to_every_delete() {
    let (h, _dir) = harness().await;
    for (policy, cascades) in [
        ("Orphan", false),
        ("Foreground", true),
        ("Background", true),
    ] {
        let ns = policy.to_ascii_lowercase();
        h.create_namespace(&ns).await;
        for i in 0..2 {
            let owner = h
                .ok(
                    "POST",
                    &widgets(&ns),
                    Some(json!({"metadata": {"name": format!("owner-{i}"), "labels": {"role": "owner"}}})),
                )
                .await;
            h.widget(&ns, &format!("child-{i}"), &[owner_ref(&owner, true)], &[])
                .await;
        }
        let list = h
            .ok(
                "DELETE",
                &format!(
                    "{}?labelSelector=role%3Downer&propagationPolicy={policy}",
                    widgets(&ns)
                ),
                None,
            )
            .await;
        assert_eq!(list["items"].as_array().unwrap().len(), 2, "{list}");
        for i in 0..2 {
            h.wait_gone(&widget_uri(&ns, &format!("owner-{i}"))).await;
            let child = widget_uri(&ns, &format!("child-{i}"));
            if cascades {
                h.wait_gone(&child).await;
            } else {
                let child = h.get(&child).await.unwrap();
                assert!(owner_uids(&child).is_empty(), "{policy}: {child}");
            }
        }
    }
}

#[tokio::test]
async fn only_orphan_dependents_false_makes_a_held_delete_202() {
    let (h, _dir) = harness().await;
    for (query, code) in [
        ("?orphanDependents=false", 202),
        ("?propagationPolicy=Background", 200),
    ] {
        h.widget("default", "held", &[], &[HOLD]).await;
        let uri = widget_uri("default", "held");
        let (got, answer) = h.call("DELETE", &format!("{uri}{query}"), None).await;
        assert_eq!(got, code, "{query}: {answer}");
        assert_eq!(finalizers(&answer), [HOLD], "{query}");
        h.remove_finalizers(&uri).await;
        h.wait_gone(&uri).await;
    }
}

#[tokio::test]
async fn replication_controllers_orphan_by_default() {
    let (h, _dir) = harness().await;
    let rcs = "/api/v1/namespaces/default/replicationcontrollers";
    let rc = h
        .ok("POST", rcs, Some(json!({"metadata": {"name": "rc"}})))
        .await;
    h.widget("default", "pod-like", &[owner_ref(&rc, true)], &[])
        .await;
    let answer = h.ok("DELETE", &format!("{rcs}/rc"), None).await;
    assert_eq!(finalizers(&answer), ["orphan"], "{answer}");
    h.wait_gone(&format!("{rcs}/rc")).await;
    let kept = h.get(&widget_uri("default", "pod-like")).await.unwrap();
    assert!(owner_uids(&kept).is_empty(), "{kept}");
}

#[tokio::test]
async fn pods_go_at_once_unless_scheduled_with_a_grace_period() {
    let (h, _dir) = harness().await;
    let pods = "/api/v1/namespaces/default/pods";
    let pod = |name: &str, node: Option<&str>| {
        json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 1},
        })
    };
    h.ok("POST", pods, Some(pod("unscheduled", None))).await;
    h.ok("POST", pods, Some(pod("forced", Some("node-1"))))
        .await;
    h.ok("POST", pods, Some(pod("graceful", Some("node-1"))))
        .await;
    // Deleted at once, a core kind answers with a Status.
    let status = h.ok("DELETE", &format!("{pods}/unscheduled"), None).await;
    assert_eq!(status["kind"], "Status", "{status}");
    assert!(h.get(&format!("{pods}/unscheduled")).await.is_none());
    let status = h
        .ok(
            "DELETE",
            &format!("{pods}/forced?gracePeriodSeconds=0"),
            None,
        )
        .await;
    assert_eq!(status["kind"], "Status", "{status}");
    assert!(h.get(&format!("{pods}/forced")).await.is_none());
    // A scheduled pod is marked with its grace period, then removed once it has passed.
    let marked = h.ok("DELETE", &format!("{pods}/graceful"), None).await;
    assert_eq!(marked["kind"], "Pod", "{marked}");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 1);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    h.wait_gone(&format!("{pods}/graceful")).await;
}

#[tokio::test]
async fn namespace_finalize_updates_only_spec_finalizers() {
    let (h, _dir) = harness().await;
    h.create_namespace("fin").await;
    let finalize = "/api/v1/namespaces/fin/finalize";
    let answer = h
        .ok(
            "PUT",
            finalize,
            Some(json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "fin", "labels": {"ignored": "yes"}},
                "spec": {"finalizers": ["example.com/wait"]},
                "status": {"phase": "Bogus"},
            })),
        )
        .await;
    assert_eq!(answer["spec"]["finalizers"], json!(["example.com/wait"]));
    assert_eq!(answer["status"]["phase"], "Active");
    assert!(
        answer["metadata"]["labels"].get("ignored").is_none(),
        "{answer}"
    );
    let (code, status) = h
        .call(
            "PUT",
            finalize,
            Some(json!({"metadata": {"name": "fin"}, "spec": {"finalizers": ["bogus"]}})),
        )
        .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "Namespace \"fin\" is invalid: spec.finalizers[0]: Invalid value: \"bogus\": name is neither a standard finalizer name nor is it fully qualified"
    );
    let (code, _) = h.call("GET", finalize, None).await;
    assert_eq!(code, 405);
    let (code, _) = h
        .call(
            "PUT",
            "/api/v1/namespaces/missing/finalize",
            Some(json!({"metadata": {"name": "missing"}})),
        )
        .await;
    assert_eq!(code, 404);

    // Namespace deletion: contents go in the background (owners and dependents alike), the
    // namespace waits for its remaining finalizer, and the finalize call that drops it ends it.
    let owner = h.widget("fin", "owner", &[], &[]).await;
    h.widget("fin", "child", &[owner_ref(&owner, true)], &["orphan"])
        .await;
    let marked = h
        .ok(
            "DELETE",
            "/api/v1/namespaces/fin?propagationPolicy=Foreground",
            None,
        )
        .await;
    assert_eq!(marked["status"]["phase"], "Terminating");
    assert_eq!(finalizers(&marked), ["foregroundDeletion"]);
    h.wait_gone(&widget_uri("fin", "owner")).await;
    h.wait_gone(&widget_uri("fin", "child")).await;
    h.wait(
        "the collector's finalizer gone",
        "/api/v1/namespaces/fin",
        |ns| ns.is_some_and(|ns| finalizers(ns).is_empty()),
    )
    .await;
    let ns = h.get("/api/v1/namespaces/fin").await.unwrap();
    assert_eq!(ns["spec"]["finalizers"], json!(["example.com/wait"]));
    h.ok(
        "PUT",
        finalize,
        Some(json!({"metadata": {"name": "fin"}, "spec": {"finalizers": []}})),
    )
    .await;
    assert!(h.get("/api/v1/namespaces/fin").await.is_none());
}

/// Reads a watch until it has `count` DELETED events, returning their names in order.
async fn deleted_names(response: axum::response::Response, count: usize) -> Vec<String> {
    let mut stream = response.into_body().into_data_stream();
    let mut buffer = Vec::new();
    let mut names = Vec::new();
    // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
    let deadline = Instant::now() + WAIT;
    while names.len() < count {
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the watch went quiet before every deletion")
            .expect("the watch ended")
            .unwrap();
        buffer.extend_from_slice(&chunk);
        while let Some(pos) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=pos).collect();
            let event: Value = serde_json::from_slice(&line).unwrap();
            if event["type"] == "DELETED" {
                names.push(
                    event["object"]["metadata"]["name"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                );
            }
        }
    }
    names
}

#[tokio::test]
async fn watchers_see_the_cascade_in_order() {
    let (h, _dir) = harness().await;
    let rows = [
        ("Background", ["owner", "child", "grandchild"]),
        ("Foreground", ["grandchild", "child", "owner"]),
    ];
    for (policy, order) in rows {
        let ns = policy.to_ascii_lowercase();
        h.create_namespace(&ns).await;
        let [owner, _, _] = h.chain(&ns).await;
        let rv = owner["metadata"]["resourceVersion"].as_str().unwrap();
        let request = Request::builder()
            .uri(format!("{}?watch=true&resourceVersion={rv}", widgets(&ns)))
            .body(Body::empty())
            .unwrap();
        let response = h.request(request).await;
        assert_eq!(response.status(), 200);
        h.ok(
            "DELETE",
            &format!("{}?propagationPolicy={policy}", widget_uri(&ns, "owner")),
            None,
        )
        .await;
        assert_eq!(deleted_names(response, 3).await, order, "{policy}");
    }
}

/// Rewrites one stored object of the stopped server's store.
async fn edit(storage: &dyn Storage, key: &str, change: impl Fn(&mut Value)) {
    let kv = storage.get(key, None).await.unwrap().unwrap();
    let mut object: Value = serde_json::from_slice(&kv.value).unwrap();
    change(&mut object);
    storage
        .update(
            key,
            Bytes::from(serde_json::to_vec(&object).unwrap()),
            kv.mod_revision,
        )
        .await
        .unwrap();
}

fn mark(object: &mut Value, finalizer: &str) {
    object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    object["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    object["metadata"]["finalizers"] = json!([finalizer]);
}

#[tokio::test]
async fn a_restarted_server_finishes_cascades_a_stop_cut_short() {
    const OWNER: &str = "/registry/example.com/widgets/default/owner";
    const CHILD: &str = "/registry/example.com/widgets/default/child";
    // What the stopped server left: each row edits the store between the two servers.
    let rows: [(&str, bool); 4] = [
        ("owner removed, dependents not yet", true),
        ("owner marked foregroundDeletion", true),
        ("owner marked orphan", false),
        ("child's last finalizer dropped, not yet removed", true),
    ];
    for (i, (case, cascades)) in rows.into_iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let first = Harness::open(dir.path()).await;
        first.chain("default").await;
        first.create_namespace("doomed").await;
        first.widget("doomed", "content", &[], &[]).await;
        if i == 3 {
            // A real foreground cascade, stopped while a finalizer holds the child.
            edit(&first.storage, CHILD, |o| {
                o["metadata"]["finalizers"] = json!([HOLD]);
            })
            .await;
            first
                .ok(
                    "DELETE",
                    &format!(
                        "{}?propagationPolicy=Foreground",
                        widget_uri("default", "owner")
                    ),
                    None,
                )
                .await;
            first.wait_gone(&widget_uri("default", "grandchild")).await;
            first
                .wait("the child marked", &widget_uri("default", "child"), |o| {
                    o.is_some_and(|o| o["metadata"]["deletionTimestamp"].is_string())
                })
                .await;
        }
        first.stop();
        let storage = support::reopen(dir.path()).await;
        match i {
            0 => {
                storage.delete(OWNER, None).await.unwrap();
            }
            1 => edit(&storage, OWNER, |o| mark(o, "foregroundDeletion")).await,
            2 => edit(&storage, OWNER, |o| mark(o, "orphan")).await,
            _ => {
                edit(&storage, CHILD, |o| {
                    o["metadata"]["finalizers"] = json!([]);
                })
                .await;
            }
        }
        // A namespace whose deletion had started, its content still there.
        edit(&storage, "/registry/core/namespaces/doomed", |o| {
            o["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            o["status"]["phase"] = json!("Terminating");
        })
        .await;
        drop(storage);

        let second = Harness::open(dir.path()).await;
        second.wait_gone(&widget_uri("default", "owner")).await;
        if cascades {
            second.wait_gone(&widget_uri("default", "child")).await;
            second.wait_gone(&widget_uri("default", "grandchild")).await;
        } else {
            let child = second.get(&widget_uri("default", "child")).await;
            assert!(
                child.as_ref().is_some_and(|c| owner_uids(c).is_empty()),
                "{case}: {child:?}"
            );
            assert!(
                second
                    .get(&widget_uri("default", "grandchild"))
                    .await
                    .is_some()
            );
        }
        second.wait_gone(&widget_uri("doomed", "content")).await;
        second.wait_gone("/api/v1/namespaces/doomed").await;
        second.stop();
    }
}
