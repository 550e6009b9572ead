//! CustomResourceDefinitions created while the server runs: the server serves their kinds
//! (discovery, OpenAPI, CRUD, status, deprecation warnings) with their schemas pruning,
//! defaulting and validating objects, reports accepted names and conflicts in the CRD's status,
//! refuses invalid CRDs, deletes a CRD's objects with it, and serves stored CRDs after a restart.
//!
//! The catalog follows CRD changes through a watch, so tests wait for `Established` the way
//! clients do (`kubectl wait --for condition=Established`).

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kapi::Registry;
use kapi::meta::ObjectMeta;
use kapi::server::Server;
use kapi::storage::EmbeddedStorage;
use kapi::type_tag::{ApiVersion, Kind};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::{Harness, eventually};

mod support;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A compiled kind whose plural a CRD may try to take.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    group = "compiled.example.com",
    version = "v1",
    kind = "Gizmo",
    namespaced
)]
struct Gizmo {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
}

async fn harness() -> Harness {
    let mut registry = Registry::new();
    registry.register::<Gizmo>();
    Harness::in_temp_dir(
        support::store_options(),
        Server::builder().registry(registry),
    )
    .await
}

/// A CRD for `widgets.example.com`: v1 stored and served, v1beta1 served and deprecated.
fn widget_crd() -> Value {
    let schema = json!({
        "type": "object",
        "properties": {
            // As controller-gen writes it: the object's metadata must survive pruning anyway.
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "color": {"type": "string", "default": "red"},
                    "replicas": {"type": "integer", "minimum": 0}
                }
            },
            "status": {
                "type": "object",
                "properties": {"ready": {"type": "boolean"}, "replicas": {"type": "integer"}}
            }
        }
    });
    let version = |name: &str, storage: bool, deprecated: bool| {
        json!({
            "name": name, "served": true, "storage": storage, "deprecated": deprecated,
            "schema": {"openAPIV3Schema": schema},
            "subresources": {
                "status": {},
                "scale": {"specReplicasPath": ".spec.replicas",
                          "statusReplicasPath": ".status.replicas"}
            },
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
            ]
        })
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [version("v1", true, false), version("v1beta1", false, true)]
        }
    })
}

/// How long the catalog may take to act on a change.
const WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

/// Waits until the named CRD reports condition `type_` as `status`; returns the CRD.
async fn wait_condition(h: &Harness, name: &str, type_: &str, status: &str) -> Value {
    eventually(WAIT, POLL, async || {
        let (code, crd) = h.call("GET", &format!("{CRDS}/{name}"), None).await;
        let found = crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == type_ && c["status"] == status);
        if code == 200 && found {
            Ok(crd)
        } else {
            Err(format!("{name}: no {type_}={status}: {crd}"))
        }
    })
    .await
}

/// Waits until `uri` answers `code`.
async fn wait_code(h: &Harness, uri: &str, code: u16) -> Value {
    eventually(WAIT, POLL, async || {
        let (got, body) = h.call("GET", uri, None).await;
        if got == code {
            Ok(body)
        } else {
            Err(format!("{uri}: still {got}: {body}"))
        }
    })
    .await
}

#[tokio::test]
async fn a_created_crd_is_established_and_its_kind_served() {
    let h = harness().await;
    let v2_before = h
        .exchange("GET", "/openapi/v2", &[("accept", V2_PROTOBUF)], Vec::new())
        .await;
    let created = h.ok("POST", CRDS, Some(widget_crd())).await;
    assert_eq!(created["metadata"]["name"], "widgets.example.com");

    let crd = wait_condition(&h, "widgets.example.com", "Established", "True").await;
    assert_eq!(crd["status"]["acceptedNames"]["plural"], "widgets");
    assert_eq!(crd["status"]["acceptedNames"]["singular"], "widget");
    assert_eq!(crd["status"]["acceptedNames"]["listKind"], "WidgetList");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    assert_eq!(
        crd["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );

    // Discovery lists both versions, v1 preferred, with the CRD's names and subresources.
    let group = h.ok("GET", "/apis/example.com", None).await;
    assert_eq!(group["preferredVersion"]["version"], "v1", "{group}");
    let resources = h.ok("GET", "/apis/example.com/v1", None).await;
    let names: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["widgets", "widgets/scale", "widgets/status"]);
    assert_eq!(resources["resources"][0]["shortNames"], json!(["wd"]));
    assert_eq!(resources["resources"][0]["namespaced"], true);

    // What a CRD group does not serve, apiextensions' handler hands down the chain to Go's
    // plain-text 404 (`crdHandler.ServeHTTP` and its version discovery handler delegate a
    // version or resource it has no served CRD for); a served resource's unknown subresource
    // stays a `Status`.
    for path in [
        "/apis/example.com/v9",
        "/apis/example.com/v9/widgets",
        "/apis/example.com/v1/gadgets",
        "/apis/example.com/v1/namespaces/default/gadgets/g",
    ] {
        let answer = h.exchange("GET", path, &[], Vec::new()).await;
        assert_eq!(
            (answer.status.as_u16(), answer.text()),
            (404, "404 page not found\n".to_owned()),
            "{path}"
        );
    }
    let answer = h
        .exchange(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets/w/bogus",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(answer.status.as_u16(), 404);
    assert_eq!(answer.json()["kind"], "Status");

    // Create: unknown fields pruned with a warning, defaults filled in.
    let reply = h
        .raw(
            "POST",
            "/apis/example.com/v1/namespaces/default/widgets",
            "application/json",
            serde_json::to_vec(&json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w1"},
                "spec": {"size": 2, "shape": "round"},
                "status": {"ready": true}
            }))
            .unwrap(),
        )
        .await;
    assert_eq!(reply.code, 201, "{}", reply.body);
    assert_eq!(reply.body["spec"], json!({"size": 2, "color": "red"}));
    // Writes to the main resource ignore status.
    assert_eq!(reply.body.get("status"), None, "{}", reply.body);
    assert_eq!(
        reply.warnings,
        [r#"299 - "unknown field \"spec.shape\"""#],
        "{:?}",
        reply.warnings
    );

    // Read back through both versions; the deprecated one warns.
    let got = h
        .ok(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets/w1",
            None,
        )
        .await;
    assert_eq!(got["spec"]["size"], 2);
    let old = h
        .exchange(
            "GET",
            "/apis/example.com/v1beta1/namespaces/default/widgets/w1",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(old.code(), 200);
    assert_eq!(old.json()["apiVersion"], "example.com/v1beta1");
    assert_eq!(
        old.warnings(),
        [r#"299 - "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget""#]
    );

    // Status subresource and scale.
    let mut with_status = got.clone();
    with_status["status"] = json!({"ready": true, "replicas": 1});
    with_status["spec"]["size"] = json!(9);
    let updated = h
        .ok(
            "PUT",
            "/apis/example.com/v1/namespaces/default/widgets/w1/status",
            Some(with_status),
        )
        .await;
    assert_eq!(updated["status"]["ready"], true);
    assert_eq!(updated["spec"]["size"], 2, "status writes ignore spec");
    let scale = h
        .ok(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
            None,
        )
        .await;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["status"]["replicas"], 1);

    // The list is a WidgetList; the Table has the CRD's column.
    let list = h
        .ok(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets",
            None,
        )
        .await;
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let table = h
        .exchange(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets",
            &[("accept", "application/json;as=Table;g=meta.k8s.io;v=v1")],
            Vec::new(),
        )
        .await
        .json();
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(columns.contains(&"Size"), "{columns:?}");

    // OpenAPI v3 publishes the CRD's schema for `kubectl explain`.
    let doc = h.ok("GET", "/openapi/v3/apis/example.com/v1", None).await;
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let widget = schemas
        .values()
        .find(|s| s["x-kubernetes-group-version-kind"][0]["kind"] == "Widget")
        .unwrap_or_else(|| panic!("no Widget schema in {:?}", schemas.keys()));
    assert_eq!(
        widget["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );

    // So does v2, in JSON and in protobuf: the catalog changed, so the document kube-openapi's
    // handler serves was built again (`OpenAPIService.UpdateSpec`), with a new ETag.
    let doc = h.ok("GET", "/openapi/v2", None).await;
    let definitions = doc["definitions"].as_object().unwrap();
    assert!(
        definitions
            .values()
            .any(|s| s["x-kubernetes-group-version-kind"][0]["kind"] == "Widget"),
        "no Widget definition in /openapi/v2"
    );
    let v2_after = h
        .exchange("GET", "/openapi/v2", &[("accept", V2_PROTOBUF)], Vec::new())
        .await;
    assert_eq!(v2_after.code(), 200);
    assert_ne!(v2_after.headers["etag"], v2_before.headers["etag"]);
    let named = |body: &[u8], text: &[u8]| body.windows(text.len()).any(|w| w == text);
    assert!(!named(
        &v2_before.body,
        b"/apis/example.com/v1/namespaces/{namespace}/widgets"
    ));
    assert!(named(
        &v2_after.body,
        b"/apis/example.com/v1/namespaces/{namespace}/widgets"
    ));
}

/// What client-go asks `/openapi/v2` for.
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

#[tokio::test]
async fn objects_that_break_the_schema_are_invalid() {
    let h = harness().await;
    h.ok("POST", CRDS, Some(widget_crd())).await;
    wait_condition(&h, "widgets.example.com", "Established", "True").await;
    let (code, status) = h
        .call(
            "POST",
            "/apis/example.com/v1/namespaces/default/widgets",
            Some(json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "bad"},
                "spec": {"size": "big", "replicas": -1}
            })),
        )
        .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "Widget");
    assert_eq!(status["details"]["group"], "example.com");
    let causes: Vec<(&str, &str)> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["field"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        causes,
        [
            ("spec.size", "FieldValueTypeInvalid"),
            ("spec.replicas", "FieldValueInvalid"),
        ]
    );
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("spec.size in body must be of type integer: \"string\""),
        "{status}"
    );
    // A required field missing.
    let (code, status) = h
        .call(
            "POST",
            "/apis/example.com/v1/namespaces/default/widgets",
            Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "bad"}, "spec": {}})),
        )
        .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.size");
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldValueRequired"
    );
}

/// An edit that makes the widget CRD invalid.
type Change = Box<dyn Fn(&mut Value)>;

#[tokio::test]
async fn invalid_crds_are_refused() {
    let h = harness().await;
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "name is not plural.group",
            Box::new(|crd| crd["metadata"]["name"] = json!("things.example.com")),
            "metadata.name",
        ),
        (
            "two storage versions",
            Box::new(|crd| crd["spec"]["versions"][1]["storage"] = json!(true)),
            "spec.versions",
        ),
        (
            "no schema",
            Box::new(|crd| {
                crd["spec"]["versions"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("schema");
            }),
            "spec.versions[0].schema.openAPIV3Schema",
        ),
        (
            "a schema that is not structural",
            Box::new(|crd| {
                crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                    ["size"] = json!({"description": "no type"})
            }),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type",
        ),
        (
            "a pattern that does not compile",
            Box::new(|crd| {
                crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
                    ["color"]["pattern"] = json!("([a-z")
            }),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[color].pattern",
        ),
        (
            "a version name that is not a DNS-1035 label",
            Box::new(|crd| crd["spec"]["versions"][1]["name"] = json!("1beta")),
            "spec.versions[1].name",
        ),
        (
            "a group without a dot",
            Box::new(|crd| {
                crd["spec"]["group"] = json!("example");
                crd["metadata"]["name"] = json!("widgets.example");
            }),
            "spec.group",
        ),
    ];
    for (what, change, field) in cases {
        let mut crd = widget_crd();
        change(&mut crd);
        let (code, status) = h.call("POST", CRDS, Some(crd)).await;
        assert_eq!(code, 422, "{what}: {status}");
        let fields: Vec<&str> = status["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["field"].as_str().unwrap())
            .collect();
        assert!(fields.contains(&field), "{what}: {fields:?} {status}");
    }
    // None of them was stored.
    let list = h.ok("GET", CRDS, None).await;
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn names_already_in_use_are_not_accepted() {
    let h = harness().await;
    // The plural of a compiled kind.
    let mut taken = widget_crd();
    taken["metadata"]["name"] = json!("gizmos.compiled.example.com");
    taken["spec"]["group"] = json!("compiled.example.com");
    taken["spec"]["names"] = json!({"plural": "gizmos", "kind": "OtherGizmo"});
    h.ok("POST", CRDS, Some(taken)).await;
    let crd = wait_condition(&h, "gizmos.compiled.example.com", "NamesAccepted", "False").await;
    let accepted = &crd["status"]["conditions"][0];
    assert_eq!(accepted["reason"], "PluralConflict", "{crd}");
    assert_eq!(accepted["message"], "\"gizmos\" is already in use");
    assert_eq!(crd["status"]["conditions"][1]["type"], "Established");
    assert_eq!(crd["status"]["conditions"][1]["status"], "False");
    // The compiled kind still answers.
    h.ok(
        "GET",
        "/apis/compiled.example.com/v1/namespaces/default/gizmos",
        None,
    )
    .await;

    // The kind of an older CRD in the same group.
    h.ok("POST", CRDS, Some(widget_crd())).await;
    wait_condition(&h, "widgets.example.com", "Established", "True").await;
    let mut same_kind = widget_crd();
    same_kind["metadata"]["name"] = json!("widgetries.example.com");
    same_kind["spec"]["names"] =
        json!({"plural": "widgetries", "singular": "widgetry", "kind": "Widget"});
    h.ok("POST", CRDS, Some(same_kind)).await;
    let crd = wait_condition(&h, "widgetries.example.com", "NamesAccepted", "False").await;
    assert_eq!(crd["status"]["conditions"][0]["reason"], "KindConflict");

    // A short name of an established CRD.
    let mut same_short = widget_crd();
    same_short["metadata"]["name"] = json!("sprockets.example.com");
    same_short["spec"]["names"] =
        json!({"plural": "sprockets", "kind": "Sprocket", "shortNames": ["wd"]});
    h.ok("POST", CRDS, Some(same_short)).await;
    let crd = wait_condition(&h, "sprockets.example.com", "NamesAccepted", "False").await;
    assert_eq!(
        crd["status"]["conditions"][0]["reason"],
        "ShortNamesConflict"
    );
    assert_eq!(
        crd["status"]["conditions"][0]["message"],
        "\"wd\" is already in use"
    );

    // An established CRD whose new names conflict keeps serving the names it was accepted with.
    let mut renamed = h
        .ok("GET", &format!("{CRDS}/widgets.example.com"), None)
        .await;
    let mut taken_kind = widget_crd();
    taken_kind["metadata"]["name"] = json!("gadgets.example.com");
    taken_kind["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    h.ok("POST", CRDS, Some(taken_kind)).await;
    wait_condition(&h, "gadgets.example.com", "Established", "True").await;
    renamed["spec"]["names"]["kind"] = json!("Gadget");
    h.ok("PUT", &format!("{CRDS}/widgets.example.com"), Some(renamed))
        .await;
    let crd = wait_condition(&h, "widgets.example.com", "NamesAccepted", "False").await;
    let established = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Established")
        .unwrap();
    assert_eq!(established["status"], "True", "{crd}");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    h.ok(
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets",
        None,
    )
    .await;
    let (code, _) = h
        .call(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgetries",
            None,
        )
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_objects_and_stops_serving_it() {
    let h = harness().await;
    h.ok("POST", CRDS, Some(widget_crd())).await;
    wait_condition(&h, "widgets.example.com", "Established", "True").await;
    for name in ["a", "b"] {
        h.ok(
            "POST",
            "/apis/example.com/v1/namespaces/default/widgets",
            Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": name}, "spec": {"size": 1}})),
        )
        .await;
    }
    let mut watch = h
        .watch(
            "/apis/example.com/v1/namespaces/default/widgets?watch=true&resourceVersion=1",
            None,
        )
        .await;
    for _ in 0..2 {
        assert_eq!(watch.next_change().await.unwrap()["type"], "ADDED");
    }
    h.ok("DELETE", &format!("{CRDS}/widgets.example.com"), None)
        .await;
    let mut deleted = Vec::new();
    for _ in 0..2 {
        let event = watch.next_change().await.unwrap();
        deleted.push(format!(
            "{} {}",
            event["type"], event["object"]["metadata"]["name"]
        ));
    }
    assert_eq!(deleted, [r#""DELETED" "a""#, r#""DELETED" "b""#]);
    wait_code(&h, &format!("{CRDS}/widgets.example.com"), 404).await;
    // Once the CRD is gone its kind is gone too, with no window in between.
    let (code, _) = h
        .call(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets",
            None,
        )
        .await;
    assert_eq!(code, 404);
    let groups = h.ok("GET", "/apis", None).await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["apiextensions.k8s.io", "compiled.example.com"]);
}

#[tokio::test]
async fn a_deleted_crd_waits_for_objects_held_by_finalizers() {
    let h = harness().await;
    h.ok("POST", CRDS, Some(widget_crd())).await;
    wait_condition(&h, "widgets.example.com", "Established", "True").await;
    let uri = "/apis/example.com/v1/namespaces/default/widgets";
    h.ok(
        "POST",
        uri,
        Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
                    "spec": {"size": 1}})),
    )
    .await;
    h.ok("DELETE", &format!("{CRDS}/widgets.example.com"), None)
        .await;
    let crd = wait_condition(&h, "widgets.example.com", "Terminating", "True").await;
    assert!(crd["metadata"]["deletionTimestamp"].is_string(), "{crd}");
    // New objects are refused while the CRD terminates; the held one is marked for deletion.
    let (code, status) = h
        .call(
            "POST",
            uri,
            Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "late"}, "spec": {"size": 1}})),
        )
        .await;
    assert_eq!(code, 405, "{status}");
    let held = eventually(WAIT, POLL, async || {
        let held = h.ok("GET", &format!("{uri}/held"), None).await;
        if held["metadata"]["deletionTimestamp"].is_string() {
            Ok(held)
        } else {
            Err(held.to_string())
        }
    })
    .await;
    let mut released = held.clone();
    released["metadata"]["finalizers"] = json!([]);
    h.ok("PUT", &format!("{uri}/held"), Some(released)).await;
    wait_code(&h, &format!("{CRDS}/widgets.example.com"), 404).await;
}

#[tokio::test]
async fn stored_crds_are_served_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let storage = EmbeddedStorage::open(dir.path(), support::store_options())
            .await
            .unwrap();
        let h = Harness::serve(storage, None, Server::builder()).await;
        h.ok("POST", CRDS, Some(widget_crd())).await;
        wait_condition(&h, "widgets.example.com", "Established", "True").await;
        h.ok(
            "POST",
            "/apis/example.com/v1/namespaces/default/widgets",
            Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "kept"}, "spec": {"size": 3}})),
        )
        .await;
    }
    let h = Harness::serve(support::reopen(dir.path()).await, None, Server::builder()).await;
    // No wait: the catalog is read before the first request.
    let got = h
        .ok(
            "GET",
            "/apis/example.com/v1/namespaces/default/widgets/kept",
            None,
        )
        .await;
    assert_eq!(got["spec"], json!({"size": 3, "color": "red"}));
}
