//! CRD conversion webhooks as kube-apiserver calls them
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go`):
//! a CRD with two versions, `v1` storing `spec.size` as an integer and `v2` serving it as a
//! string, converted by an HTTPS webhook started in this process (`HttpsServer`, its CA the
//! CRD's `caBundle`), driven with kubectl and the `kube` crate against `kapi serve`; and a
//! second CRD whose webhook answers a failure.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::Uri;
use base64::Engine as _;
use futures_util::StreamExt;
use kapi_e2e::{HttpsServer, KapiServer, Kubectl, ServerOptions};
use kube::api::{ApiResource, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::{Value, json};

const GROUP: &str = "conv.kapi.test";
/// What the `/fail` webhook answers as its result's message.
const REFUSAL: &str = "conversion refused by the test webhook";

/// The webhook server and every review it was sent.
struct Converter {
    server: HttpsServer,
    reviews: Arc<Mutex<Vec<Value>>>,
}

impl Converter {
    fn start() -> Self {
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reviews);
        let router = axum::Router::new().fallback(move |uri: Uri, body: Bytes| {
            let seen = Arc::clone(&seen);
            async move { answer(uri.path(), &body, &seen) }
        });
        let server = HttpsServer::start(router).unwrap();
        Converter { server, reviews }
    }

    fn reviews(&self) -> Vec<Value> {
        self.reviews.lock().unwrap().clone()
    }
}

/// The webhook: `/convert` turns `spec.size` into a string for v2 and an integer for v1,
/// notes the version in an annotation and (to show that the server keeps the rest of the
/// metadata, `restoreObjectMeta`) sets a generation of its own; `/fail` answers a failure.
fn answer(path: &str, body: &[u8], seen: &Mutex<Vec<Value>>) -> String {
    let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    seen.lock()
        .unwrap()
        .push(json!({"path": path, "review": review}));
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let response = if path == "/fail" {
        json!({"uid": request["uid"], "result": {"status": "Failure", "message": REFUSAL}})
    } else {
        let converted: Vec<Value> = request["objects"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|mut object| {
                let size = &object["spec"]["size"];
                let size = if desired.ends_with("/v2") {
                    json!(size.as_i64().map(|s| s.to_string()).unwrap_or_default())
                } else {
                    json!(
                        size.as_str()
                            .and_then(|s| s.parse::<i64>().ok())
                            .unwrap_or(0)
                    )
                };
                object["spec"]["size"] = size;
                object["apiVersion"] = json!(desired);
                object["metadata"]["generation"] = json!(999);
                object["metadata"]["annotations"] = json!({"conv.kapi.test/converted-to": desired});
                object
            })
            .collect();
        json!({"uid": request["uid"], "convertedObjects": converted,
               "result": {"status": "Success"}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": response,
    })
    .to_string()
}

/// A CRD of `plural` whose webhook is `path` of the test's server.
fn crd(hooks: &Converter, plural: &str, kind: &str, path: &str) -> Value {
    let ca = base64::engine::general_purpose::STANDARD.encode(hooks.server.ca_pem());
    let schema = |size_type: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": size_type}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("integer")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("string")},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1", "v1beta1"],
                "clientConfig": {"url": format!("{}{path}", hooks.server.url()), "caBundle": ca},
            }},
        },
    })
}

fn object(kind: &str, version: &str, name: &str, size: Value) -> String {
    json!({"apiVersion": format!("{GROUP}/{version}"), "kind": kind,
           "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}})
    .to_string()
}

/// The sizes of a list's items, by name.
fn sizes(list: &Value) -> Vec<(String, Value)> {
    let mut sizes: Vec<(String, Value)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_owned(),
                i["spec"]["size"].clone(),
            )
        })
        .collect();
    sizes.sort_by(|a, b| a.0.cmp(&b.0));
    sizes
}

async fn client(server: &KapiServer) -> Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

fn api(client: Client, plural: &str, kind: &str, version: &str) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: GROUP.to_owned(),
        version: version.to_owned(),
        api_version: format!("{GROUP}/{version}"),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    };
    Api::namespaced_with(client, "default", &resource)
}

#[test]
fn conversion_webhooks_convert_every_read_and_write_as_upstreams() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let hooks = Converter::start();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let crds = format!(
        "{}\n{}\n",
        crd(&hooks, "widgets", "Widget", "/convert"),
        crd(&hooks, "gadgets", "Gadget", "/fail")
    );
    let file = k.file("crds.json", &crds);
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    k.expect_ok(&[
        "wait",
        "--for",
        "condition=Established",
        "crd",
        "--all",
        "--timeout=20s",
    ]);

    // Created through the storage version: stored as sent, no review.
    let w1 = k.file("w1.json", &object("Widget", "v1", "w1", json!(3)));
    k.expect_ok(&["create", "-f", w1.to_str().unwrap()]);
    assert!(hooks.reviews().is_empty(), "{:?}", hooks.reviews());

    // Read through v2: the webhook's object, with the stored metadata but for its labels and
    // annotations (`restoreObjectMeta`: the generation it set is not taken).
    let read = k.expect_json(&["get", &format!("widgets.v2.{GROUP}"), "w1", "-o", "json"]);
    assert_eq!(read["apiVersion"], format!("{GROUP}/v2"));
    assert_eq!(read["spec"]["size"], "3");
    assert_eq!(read["metadata"]["generation"], 1);
    assert_eq!(
        read["metadata"]["annotations"]["conv.kapi.test/converted-to"],
        format!("{GROUP}/v2")
    );
    // One object per review, a v1 ConversionReview (the first version the CRD lists), with
    // a uid and the desired version (`createConversionReviewObjects`).
    let reviews = hooks.reviews();
    let review = &reviews.last().unwrap()["review"];
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(
        review["request"]["desiredAPIVersion"],
        format!("{GROUP}/v2")
    );
    assert!(
        review["request"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    let sent = review["request"]["objects"].as_array().unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["apiVersion"], format!("{GROUP}/v1"));
    assert_eq!(sent[0]["spec"]["size"], 3);

    // Created through v2: converted into the storage version, answered in v2.
    let w2 = k.file("w2.json", &object("Widget", "v2", "w2", json!("5")));
    let created = k.expect_ok(&["create", "-f", w2.to_str().unwrap(), "-o", "json"]);
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["apiVersion"], format!("{GROUP}/v2"));
    assert_eq!(created["spec"]["size"], "5");
    let stored = k.expect_json(&["get", &format!("widgets.v1.{GROUP}"), "w2", "-o", "json"]);
    assert_eq!(stored["spec"]["size"], 5);

    // Listed through both versions: every item in the version asked for.
    let v1 = k.expect_json(&["get", &format!("widgets.v1.{GROUP}"), "-o", "json"]);
    assert_eq!(
        sizes(&v1),
        [("w1".to_owned(), json!(3)), ("w2".to_owned(), json!(5))]
    );
    let v2 = k.expect_json(&["get", &format!("widgets.v2.{GROUP}"), "-o", "json"]);
    assert_eq!(
        sizes(&v2),
        [("w1".to_owned(), json!("3")), ("w2".to_owned(), json!("5"))]
    );

    // A patch through v2 is converted both ways; a dry run too, without being stored.
    k.expect_ok(&[
        "patch",
        &format!("widgets.v2.{GROUP}"),
        "w1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":"7"}}"#,
    ]);
    let patched = k.expect_json(&["get", &format!("widgets.v1.{GROUP}"), "w1", "-o", "json"]);
    assert_eq!(patched["spec"]["size"], 7);
    let w3 = k.file("w3.json", &object("Widget", "v2", "w3", json!("9")));
    let dry = k.expect_ok(&[
        "create",
        "-f",
        w3.to_str().unwrap(),
        "--dry-run=server",
        "-o",
        "json",
    ]);
    let dry: Value = serde_json::from_str(&dry).unwrap();
    assert_eq!(dry["spec"]["size"], "9");
    k.expect_failure(&["get", &format!("widgets.v1.{GROUP}"), "w3"]);

    // The kube crate reads through the other version too.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = client(&server).await;
        let widgets = api(client.clone(), "widgets", "Widget", "v2");
        let w2 = widgets.get("w2").await.unwrap();
        assert_eq!(w2.data["spec"]["size"], "5");
        let listed = widgets.list(&ListParams::default()).await.unwrap();
        let mut got: Vec<Value> = listed
            .items
            .iter()
            .map(|w| w.data["spec"]["size"].clone())
            .collect();
        got.sort_by_key(Value::to_string);
        assert_eq!(got, [json!("5"), json!("7")]);

        // A watch through v2 sees the objects already there and one created through v1 in v2's
        // shape: each event's object is converted as a read is.
        let events = widgets
            .watch(&WatchParams::default().timeout(20), "0")
            .await
            .unwrap();
        let mut events = std::pin::pin!(events);
        let v1: DynamicObject =
            serde_json::from_str(&object("Widget", "v1", "w4", json!(11))).unwrap();
        api(client, "widgets", "Widget", "v1")
            .create(&PostParams::default(), &v1)
            .await
            .unwrap();
        let mut seen = Vec::new();
        while let Some(event) = events.next().await {
            if let WatchEvent::Added(widget) = event.unwrap() {
                let name = widget.metadata.name.clone().unwrap_or_default();
                seen.push((name.clone(), widget.data["spec"]["size"].clone()));
                if name == "w4" {
                    break;
                }
            }
        }
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            seen,
            [
                ("w1".to_owned(), json!("7")),
                ("w2".to_owned(), json!("5")),
                ("w4".to_owned(), json!("11")),
            ]
        );
    });

    // A webhook that answers a failure fails the read with upstream's text: the converter's
    // error is no API status, so the answer is a 500 with no reason
    // (`webhookConverter.Convert`, `ErrorToAPIStatus`).
    let g1 = k.file("g1.json", &object("Gadget", "v1", "g1", json!(1)));
    k.expect_ok(&["create", "-f", g1.to_str().unwrap()]);
    let failed = k.expect_failure(&["get", &format!("gadgets.v2.{GROUP}"), "g1"]);
    let message = format!("conversion webhook for {GROUP}/v1, Kind=Gadget failed: {REFUSAL}");
    assert!(
        failed.contains(&format!("Error from server: {message}")),
        "{failed}"
    );
    // A write through the other version fails the same way, and nothing is stored.
    let g2 = k.file("g2.json", &object("Gadget", "v2", "g2", json!("2")));
    let failed = k.expect_failure(&["create", "-f", g2.to_str().unwrap()]);
    assert!(
        failed.contains(&format!(
            "conversion webhook for {GROUP}/v2, Kind=Gadget failed: {REFUSAL}"
        )),
        "{failed}"
    );
    runtime.block_on(async {
        let client = client(&server).await;
        let gadgets = api(client, "gadgets", "Gadget", "v2");
        match gadgets.get("g1").await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 500);
                assert_eq!(status.message, message);
            }
            other => panic!("expected the webhook's failure, got {other:?}"),
        }
    });
}
