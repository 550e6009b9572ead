//! Two servers over one store, as replicas over one etcd: each keeps its own copies of what it
//! read and wrote (to skip reads before updates and namespace checks before creates), and
//! none of them may make an answer wrong when the other replica changed the object since.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kapi::Registry;
use kapi::meta::ObjectMeta;
use kapi::server::{Server, ServerBuilder};
use kapi::type_tag::{ApiVersion, Kind};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::{Harness, eventually, revision_of, rv};

mod support;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1", kind = "Note", namespaced)]
struct Note {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<NoteSpec>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct NoteSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    color: Option<String>,
}

fn builder() -> ServerBuilder {
    let mut registry = Registry::new();
    registry.register::<Note>();
    Server::builder().registry(registry)
}

/// A server and a second replica over its store.
async fn replicas() -> (Harness, Harness) {
    let a = Harness::in_temp_dir(support::store_options(), builder()).await;
    let b = a.replica(builder()).await;
    (a, b)
}

const NOTES: &str = "/apis/example.com/v1/namespaces/team/notes";

fn note(text: &str, rv: Option<&str>) -> Value {
    let mut metadata = json!({"name": "n1"});
    if let Some(rv) = rv {
        metadata["resourceVersion"] = json!(rv);
    }
    json!({"apiVersion": "example.com/v1", "kind": "Note", "metadata": metadata,
           "spec": {"text": text}})
}

#[tokio::test]
async fn updates_through_a_replica_with_an_older_copy_lose_nothing() {
    let (a, b) = replicas().await;
    a.create_namespace("team").await;
    let one = a.ok("POST", NOTES, Some(note("one", None))).await;
    let n1 = format!("{NOTES}/n1");
    b.ok("GET", &n1, None).await;

    // b's copy is older than the version the client names: the write still lands.
    let two = a.ok("PUT", &n1, Some(note("two", Some(rv(&one))))).await;
    let three = b.ok("PUT", &n1, Some(note("three", Some(rv(&two))))).await;
    assert_eq!(three["spec"]["text"], "three");
    assert!(revision_of(&three) > revision_of(&two));
    assert_eq!(a.ok("GET", &n1, None).await["spec"]["text"], "three");

    // A version that is really stale is a conflict, whichever replica holds which copy.
    let (code, status) = b.call("PUT", &n1, Some(note("four", Some(rv(&two))))).await;
    assert_eq!(code, 409, "{status}");
    assert_eq!(status["reason"], "Conflict");

    // A no-op is judged against the stored object, not b's copy: no write, the current
    // resourceVersion.
    let five = a.ok("PUT", &n1, Some(note("five", None))).await;
    let same = b.ok("PUT", &n1, Some(note("five", None))).await;
    assert_eq!(rv(&same), rv(&five), "a no-op must not write");

    // A patch applies to the current object.
    let six = a.ok("PUT", &n1, Some(note("six", None))).await;
    let patched = b
        .ok_as(
            "PATCH",
            &n1,
            "application/merge-patch+json",
            Some(json!({"spec": {"color": "red"}})),
        )
        .await;
    assert_eq!(patched["spec"], json!({"text": "six", "color": "red"}));
    assert!(revision_of(&patched) > revision_of(&six));

    // A dry run answers from the current object too.
    let seven = a.ok("PUT", &n1, Some(note("seven", None))).await;
    let dry = b
        .ok(
            "PUT",
            &format!("{n1}?dryRun=All"),
            Some(note("eight", None)),
        )
        .await;
    assert_eq!(dry["spec"]["text"], "eight");
    assert_eq!(rv(&dry), rv(&seven));
    assert_eq!(a.ok("GET", &n1, None).await["spec"]["text"], "seven");
}

#[tokio::test]
async fn an_update_of_an_object_deleted_through_another_replica_is_not_found() {
    let (a, b) = replicas().await;
    a.create_namespace("team").await;
    a.ok("POST", NOTES, Some(note("one", None))).await;
    let n1 = format!("{NOTES}/n1");
    b.ok("GET", &n1, None).await;
    a.ok("DELETE", &n1, None).await;
    let (code, status) = b.call("PUT", &n1, Some(note("two", None))).await;
    assert_eq!(code, 404, "{status}");
}

async fn created(h: &Harness, name: &str) -> (u16, Value) {
    let mut object = note("x", None);
    object["metadata"]["name"] = json!(name);
    h.call("POST", NOTES, Some(object)).await
}

#[tokio::test]
async fn namespaces_created_or_terminated_through_one_replica_count_on_the_other() {
    let (a, b) = replicas().await;

    // Created through a, used through b at once.
    a.create_namespace("team").await;
    b.ok("POST", NOTES, Some(note("one", None))).await;

    // Marked for deletion through a: a refuses new objects from the next request on.
    a.ok("DELETE", "/api/v1/namespaces/team", None).await;
    let (code, status) = created(&a, "late").await;
    assert!(code == 403 || code == 404, "{code} {status}");

    // b learns of it through its watch of the namespaces, within moments.
    let mut attempt = 0;
    eventually(
        Duration::from_secs(10),
        Duration::from_millis(20),
        async || {
            attempt += 1;
            let (code, status) = created(&b, &format!("late-{attempt}")).await;
            if code == 403 || code == 404 {
                return Ok(());
            }
            assert_eq!(code, 201, "{status}");
            Err("b still creates in a terminating namespace".to_owned())
        },
    )
    .await;

    // The lifecycle removes whatever b created meanwhile, and the namespace goes.
    eventually(
        Duration::from_secs(10),
        Duration::from_millis(50),
        async || match a.call("GET", "/api/v1/namespaces/team", None).await.0 {
            404 => Ok(()),
            _ => Err("the namespace was not deleted".to_owned()),
        },
    )
    .await;
    let (code, _) = b.call("GET", NOTES, None).await;
    assert_eq!(code, 200);
    let listed = b.ok("GET", "/apis/example.com/v1/notes", None).await;
    assert_eq!(listed["items"], json!([]));
}
