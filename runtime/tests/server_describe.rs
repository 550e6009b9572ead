//! The descriptive endpoints end to end through the server's router: discovery documents
//! (legacy and aggregated, chosen by `Accept`), preferred versions and removals against the
//! configured release, `/version`, the health probes, deprecation warnings on resource
//! requests (the v1.20.2 built-ins' texts and CRD-style ones), and the OpenAPI documents.

// Helpers outside `#[test]` functions unwrap too: a failure here is a test failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use kapi::meta::ObjectMeta;
use kapi::server::Server;
use kapi::storage::{EmbeddedOptions, EmbeddedStorage};
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::{Answer, Harness};

mod support;

/// Kinds shaped like the v1.20.2 built-ins with their real lifecycle data.
mod builtin {
    use super::*;

    #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
    #[resource(group = "extensions", version = "v1beta1", kind = "Ingress")]
    #[resource(short_names = ["ing"])]
    #[resource(introduced = "1.1", deprecated = "1.14", removed = "1.22")]
    #[resource(replacement(group = "networking.k8s.io", version = "v1", kind = "Ingress"))]
    pub(crate) struct Ingress {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
    #[resource(group = "policy", version = "v1beta1", kind = "PodDisruptionBudget")]
    #[resource(short_names = ["pdb"])]
    #[resource(introduced = "1.5", deprecated = "1.21", removed = "1.25")]
    #[resource(replacement(group = "policy", version = "v1", kind = "PodDisruptionBudget"))]
    pub(crate) struct PodDisruptionBudget {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
    }
}

/// One kind in several versions: v1 with a schema, a deprecated beta, a served alpha and an
/// alpha removed before the test release.
mod widgets {
    use super::*;

    /// A widget's desired state.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::CustomResource)]
    #[serde(rename_all = "camelCase")]
    #[resource(
        group = "widgets.kapi.dev",
        version = "v1",
        kind = "Widget",
        status = "WidgetStatus",
        short_names = ["wd"],
        categories = ["all"]
    )]
    #[resource(scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    ))]
    pub(crate) struct WidgetSpec {
        /// The colour to paint the widget.
        pub color: String,
        /// How many widgets.
        #[serde(default)]
        pub replicas: i32,
    }

    /// A widget's observed state.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, Schema)]
    pub(crate) struct WidgetStatus {
        /// How many widgets exist.
        #[serde(default)]
        pub replicas: i32,
    }

    macro_rules! version {
        ($name:ident, $version:literal $(, $extra:meta)*) => {
            #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
            #[resource(group = "widgets.kapi.dev", version = $version, kind = "Widget", no_list)]
            $(#[resource($extra)])*
            pub(crate) struct $name {
                #[serde(rename = "apiVersion")]
                api_version: ApiVersion<Self>,
                kind: Kind<Self>,
                #[serde(default)]
                metadata: ObjectMeta,
            }
        };
    }

    version!(
        WidgetV1beta1,
        "v1beta1",
        introduced = "1.16",
        deprecated = "1.19",
        removed = "1.22",
        replacement(group = "widgets.kapi.dev", version = "v1", kind = "Widget")
    );
    version!(WidgetV1alpha2, "v1alpha2");
    version!(
        WidgetV1alpha1,
        "v1alpha1",
        deprecated = "1.18",
        removed = "1.19"
    );
}

/// A core-group, cluster-scoped kind with a CRD-style deprecation (the default text).
mod gadgets {
    use super::*;

    #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
    #[resource(group = "", version = "v1", kind = "Gadget", cluster)]
    #[resource(short_names = ["gd"], categories = ["all"], verbs = ["get", "list", "create"])]
    pub(crate) struct Gadget {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
    #[resource(group = "stable.example.com", version = "v1beta1", kind = "CronTab")]
    #[resource(
        deprecation_warning = "stable.example.com/v1beta1 CronTab is deprecated; see \"docs\""
    )]
    pub(crate) struct CronTab {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
    }
}

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .register::<builtin::Ingress>()
        .register::<builtin::PodDisruptionBudget>()
        .register_custom::<widgets::Widget>()
        .register::<widgets::WidgetV1beta1>()
        .register::<widgets::WidgetV1alpha2>()
        .register::<widgets::WidgetV1alpha1>()
        .register::<gadgets::Gadget>()
        .register::<gadgets::CronTab>()
        .add_definitions(GADGET_DEFINITIONS);
    registry
}

/// What a generated crate hands over for Gadget: its schema under its own name, a referenced
/// spec, and a stray definition nothing refers to.
const GADGET_DEFINITIONS: &str = r##"{
"example.gadgets.v1.Gadget":{"type":"object","properties":{"spec":{"$ref":"#/components/schemas/example.gadgets.v1.GadgetSpec"}},"x-kubernetes-group-version-kind":[{"group":"","kind":"Gadget","version":"v1"}]},
"example.gadgets.v1.GadgetSpec":{"type":"object","properties":{"size":{"type":"integer","format":"int32"}}},
"example.gadgets.v1.Unused":{"type":"string"}
}"##;

async fn harness(minor: u16) -> Harness {
    let builder = Server::builder()
        .registry(registry())
        .kube_version(KubeVersion::new(1, minor));
    Harness::in_temp_dir(EmbeddedOptions::default(), builder).await
}

impl Harness {
    async fn send(
        &self,
        method: &str,
        uri: &str,
        accept: Option<&str>,
        body: Option<Value>,
    ) -> Answer {
        let mut headers = Vec::new();
        if let Some(accept) = accept {
            headers.push(("accept", accept));
        }
        let body = match body {
            Some(value) => {
                headers.push(("content-type", "application/json"));
                serde_json::to_vec(&value).unwrap()
            }
            None => Vec::new(),
        };
        self.exchange(method, uri, &headers, body).await
    }

    async fn get(&self, uri: &str) -> Answer {
        self.send("GET", uri, None, None).await
    }
}

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

#[tokio::test]
async fn legacy_discovery_documents() {
    let h = harness(20).await;

    let api = h.get("/api").await;
    assert_eq!(api.status, StatusCode::OK);
    assert_eq!(api.header(header::CONTENT_TYPE), Some("application/json"));
    assert_eq!(
        api.json(),
        json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
    );

    let core = h.get("/api/v1").await.json();
    assert_eq!(core["kind"], "APIResourceList");
    assert!(core.get("apiVersion").is_none(), "{core}");
    assert_eq!(core["groupVersion"], "v1");
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"gadgets"), "{names:?}");
    assert!(names.contains(&"namespaces"), "{names:?}");
    // The namespace lifecycle's subresource, as upstream lists it.
    let finalize = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces/finalize")
        .expect("namespaces/finalize");
    assert_eq!(finalize["verbs"], json!(["update"]));
    assert_eq!(finalize["kind"], "Namespace");
    let gadget = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "gadgets")
        .unwrap();
    assert_eq!(
        gadget,
        &json!({
            "name": "gadgets", "singularName": "gadget", "namespaced": false, "kind": "Gadget",
            "verbs": ["create", "get", "list"], "shortNames": ["gd"], "categories": ["all"]
        })
    );

    // Versions in priority order (GA, beta, alpha); v1alpha1 was removed in 1.19.
    let group = json!({
        "name": "widgets.kapi.dev",
        "versions": [
            {"groupVersion": "widgets.kapi.dev/v1", "version": "v1"},
            {"groupVersion": "widgets.kapi.dev/v1beta1", "version": "v1beta1"},
            {"groupVersion": "widgets.kapi.dev/v1alpha2", "version": "v1alpha2"}
        ],
        "preferredVersion": {"groupVersion": "widgets.kapi.dev/v1", "version": "v1"}
    });
    let apis = h.get("/apis").await.json();
    assert_eq!(apis["kind"], "APIGroupList");
    assert_eq!(apis["apiVersion"], "v1");
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        groups,
        [
            // Served by every server, as kube-apiserver serves CRDs.
            "apiextensions.k8s.io",
            "extensions",
            "policy",
            "stable.example.com",
            "widgets.kapi.dev"
        ]
    );
    assert_eq!(apis["groups"][4], group);

    let mut single = group.clone();
    single["kind"] = json!("APIGroup");
    single["apiVersion"] = json!("v1");
    assert_eq!(h.get("/apis/widgets.kapi.dev").await.json(), single);
    // With a trailing slash too, as upstream's go-restful routes answer (its discovery
    // conformance test reads `/apis/<group>/`).
    assert_eq!(h.get("/apis/widgets.kapi.dev/").await.json(), single);
    assert_eq!(
        h.get("/apis/widgets.kapi.dev/v1/").await.json(),
        h.get("/apis/widgets.kapi.dev/v1").await.json()
    );
    assert_eq!(h.get("/api/v1/").await.json(), core);

    assert_eq!(
        h.get("/apis/widgets.kapi.dev/v1").await.json(),
        json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "widgets.kapi.dev/v1",
            "resources": [
                {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
                 "verbs": ALL_VERBS, "shortNames": ["wd"], "categories": ["all"]},
                {"name": "widgets/scale", "singularName": "", "namespaced": true,
                 "group": "autoscaling", "version": "v1", "kind": "Scale",
                 "verbs": ["get", "patch", "update"]},
                {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget",
                 "verbs": ["get", "patch", "update"]}
            ]
        })
    );

    // Unknown or removed versions of a served group are go-restful's 404 Status (a group
    // nothing serves is Go's plain-text 404: `paths_nothing_serves_are_plain_text_404`).
    for path in [
        "/apis/widgets.kapi.dev/v1alpha1",
        "/apis/widgets.kapi.dev/v9",
        "/api/v2",
    ] {
        let answer = h.get(path).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}");
        let status = answer.json();
        assert_eq!(status["kind"], "Status", "{path}");
        assert_eq!(status["reason"], "NotFound", "{path}");
        assert_eq!(status["code"], 404, "{path}");
    }
}

#[tokio::test]
async fn removed_versions_disappear_at_later_releases() {
    let h = harness(22).await;
    let apis = h.get("/apis").await.json();
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    // extensions/v1beta1 Ingress is gone in 1.22; so is widgets.kapi.dev/v1beta1.
    assert_eq!(
        groups,
        [
            "apiextensions.k8s.io",
            "policy",
            "stable.example.com",
            "widgets.kapi.dev"
        ]
    );
    let versions: Vec<&str> = apis["groups"][3]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1", "v1alpha2"]);
    assert_eq!(
        h.get("/apis/extensions/v1beta1").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        h.get("/apis/extensions/v1beta1/namespaces/default/ingresses")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn aggregated_discovery_by_accept() {
    // 1.21 is not a release kapi gates, so aggregated discovery (on from 1.27) is served.
    let h = harness(21).await;

    let answer = h.send("GET", "/apis", Some(AGGREGATED_V2), None).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header(header::CONTENT_TYPE), Some(AGGREGATED_V2));
    let doc = answer.json();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(doc["metadata"], json!({}));
    let widgets = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "widgets.kapi.dev")
        .unwrap();
    assert_eq!(
        widgets["versions"][0],
        json!({
            "version": "v1",
            "resources": [{
                "resource": "widgets",
                "responseKind": {"group": "widgets.kapi.dev", "version": "v1", "kind": "Widget"},
                "scope": "Namespaced",
                "singularResource": "widget",
                "verbs": ALL_VERBS,
                "shortNames": ["wd"],
                "categories": ["all"],
                "subresources": [
                    {"subresource": "scale",
                     "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                     "verbs": ["get", "patch", "update"]},
                    {"subresource": "status",
                     "responseKind": {"group": "widgets.kapi.dev", "version": "v1", "kind": "Widget"},
                     "verbs": ["get", "patch", "update"]}
                ]
            }],
            "freshness": "Current"
        })
    );
    let versions: Vec<&str> = widgets["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1", "v1beta1", "v1alpha2"]);
    // The core group is only on /api.
    assert!(
        doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["metadata"].get("name").is_some())
    );

    let core = h
        .send("GET", "/api", Some(AGGREGATED_V2), None)
        .await
        .json();
    assert_eq!(core["items"].as_array().unwrap().len(), 1);
    assert_eq!(core["items"][0]["metadata"], json!({}));
    assert_eq!(core["items"][0]["versions"][0]["version"], "v1");

    // What kubectl 1.30+ sends picks v2; what 1.27-1.29 send picks v2beta1.
    let kubectl_new = format!("{AGGREGATED_V2},{AGGREGATED_V2BETA1},application/json");
    let answer = h.send("GET", "/apis", Some(&kubectl_new), None).await;
    assert_eq!(answer.header(header::CONTENT_TYPE), Some(AGGREGATED_V2));
    let kubectl_old = format!("{AGGREGATED_V2BETA1},application/json");
    let answer = h.send("GET", "/api", Some(&kubectl_old), None).await;
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some(AGGREGATED_V2BETA1)
    );
    assert_eq!(answer.json()["apiVersion"], "apidiscovery.k8s.io/v2beta1");

    // A client preferring plain JSON gets the legacy document.
    let answer = h
        .send(
            "GET",
            "/apis",
            Some(&format!("application/json,{AGGREGATED_V2}")),
            None,
        )
        .await;
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("application/json")
    );
    assert_eq!(answer.json()["kind"], "APIGroupList");

    // An unknown aggregated version with a JSON fallback falls back; alone it is 406.
    let unknown = "application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList";
    let answer = h
        .send(
            "GET",
            "/apis",
            Some(&format!("{unknown},application/json")),
            None,
        )
        .await;
    assert_eq!(answer.json()["kind"], "APIGroupList");
    let answer = h.send("GET", "/apis", Some(unknown), None).await;
    assert_eq!(answer.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(answer.json()["reason"], "NotAcceptable");

    // kube-apiserver 1.20 predates aggregated discovery (AggregatedDiscoveryEndpoint, alpha in
    // 1.26, on from 1.27): what kubectl sends gets the legacy documents.
    let old = harness(20).await;
    let answer = old.send("GET", "/apis", Some(&kubectl_new), None).await;
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("application/json")
    );
    assert_eq!(answer.json()["kind"], "APIGroupList");
}

/// Every discovery document is negotiated over the discovery handlers' serializers (JSON,
/// YAML, protobuf; `WriteObjectNegotiated` in k8s.io/apiserver `endpoints/discovery/*.go` and
/// kube-aggregator's `handler_apis.go`), the aggregated one too (`aggregated/wrapper.go`
/// negotiates with a codec factory of its own, and `writeDiscoveryResponse` names the kind in
/// the `Content-Type`). What none of them produces is 406 in raw JSON listing the
/// serializers' types (`NegotiateOutputMediaType`'s `NewNotAcceptableError`). The extensions
/// group's versions are written without `apiVersion`, as the core group's (`keepUnversioned`
/// in `discovery/util.go`).
#[tokio::test]
async fn discovery_documents_are_negotiated() {
    let h = harness(20).await;
    let yaml = h
        .send("GET", "/apis/extensions", Some("application/yaml"), None)
        .await;
    assert_eq!(yaml.header(header::CONTENT_TYPE), Some("application/yaml"));
    assert!(
        yaml.text()
            .starts_with("apiVersion: v1\nkind: APIGroup\nname: extensions\n"),
        "{}",
        yaml.text()
    );
    let core = h
        .send("GET", "/api/v1", Some("application/yaml"), None)
        .await;
    assert!(
        core.text()
            .starts_with("groupVersion: v1\nkind: APIResourceList\n"),
        "{}",
        core.text()
    );
    let extensions = h.get("/apis/extensions/v1beta1").await.json();
    assert_eq!(extensions["kind"], "APIResourceList");
    assert!(extensions.get("apiVersion").is_none(), "{extensions}");
    assert_eq!(
        h.get("/apis/policy/v1beta1").await.json()["apiVersion"],
        "v1"
    );
    for path in [
        "/api",
        "/apis",
        "/apis/extensions",
        "/api/v1",
        "/apis/policy/v1beta1",
    ] {
        let refused = h.send("GET", path, Some("text/html"), None).await;
        assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE, "{path}");
        assert_eq!(
            refused.header(header::CONTENT_TYPE),
            Some("application/json")
        );
        assert_eq!(
            refused.json()["message"],
            "only the following media types are accepted: application/json, application/yaml, \
             application/vnd.kubernetes.protobuf",
            "{path}"
        );
    }
    // A conversion is the aggregated document's alone.
    let refused = h
        .send("GET", "/apis/extensions", Some(AGGREGATED_V2), None)
        .await;
    assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE);

    let later = harness(34).await;
    // The aggregated document is tagged (`ServeHTTPWithETag`, `aggregated/etag.go`): the tag is
    // the document's in any format, and a client that has it gets 304 with no body.
    let json = later.send("GET", "/apis", Some(AGGREGATED_V2), None).await;
    let etag = json.header(header::ETAG).unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert_eq!(json.header(header::CACHE_CONTROL), Some("public"));
    assert_eq!(json.header(header::VARY), Some("Accept"));
    let request = Request::builder()
        .uri("/apis")
        .header(header::ACCEPT, AGGREGATED_V2BETA1)
        .header(header::IF_NONE_MATCH, &etag)
        .body(Body::empty())
        .unwrap();
    let cached = later.request(request).await;
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(cached.headers()[header::ETAG], etag.as_str());
    let media = "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let aggregated = later.send("GET", "/apis", Some(media), None).await;
    assert_eq!(aggregated.header(header::ETAG), Some(etag.as_str()));
    assert_eq!(aggregated.header(header::CONTENT_TYPE), Some(media));
    assert!(
        aggregated
            .text()
            .starts_with("apiVersion: apidiscovery.k8s.io/v2\nitems:\n"),
        "{}",
        aggregated.text()
    );
}

#[tokio::test]
async fn version_endpoint() {
    let h = harness(20).await;
    let answer = h.get("/version").await;
    assert_eq!(answer.status, StatusCode::OK);
    let mut doc = answer.json();
    let platform = doc["platform"].as_str().unwrap().to_owned();
    assert!(platform.starts_with(std::env::consts::OS) || platform.starts_with("darwin"));
    doc["platform"] = json!("-");
    // A v1.20.15 kube-apiserver's answer.
    assert_eq!(
        doc,
        json!({
            "major": "1", "minor": "20", "gitVersion": "v1.20.15",
            "gitCommit": "8f1e5bf0b9729a899b8df86249b56e2c74aebc55", "gitTreeState": "clean",
            "buildDate": "2022-01-19T17:23:01Z", "goVersion": "go1.15.15",
            "compiler": "gc", "platform": "-"
        })
    );
    let newer = harness(34).await.get("/version").await.json();
    assert_eq!(newer["gitVersion"], "v1.34.1");
    assert_eq!(newer["emulationMajor"], "1");
    assert_eq!(newer["emulationMinor"], "34");
}

/// A plain-text answer as Go's `http.Error` and the health handlers write it.
fn assert_plain_text(answer: &Answer, status: StatusCode, text: &str, path: &str) {
    assert_eq!(answer.status, status, "{path}");
    assert_eq!(answer.text(), text, "{path}");
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("text/plain; charset=utf-8"),
        "{path}"
    );
    assert_eq!(
        answer.header(header::X_CONTENT_TYPE_OPTIONS),
        Some("nosniff"),
        "{path}"
    );
}

#[tokio::test]
async fn health_probes() {
    let h = harness(20).await;
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_plain_text(&h.get(path).await, StatusCode::OK, "ok", path);
    }
    let cases = [
        (
            "/livez?verbose",
            "[+]ping ok\n[+]log ok\n[+]etcd ok\nlivez check passed\n",
        ),
        (
            "/healthz?verbose",
            "[+]ping ok\n[+]log ok\n[+]etcd ok\nhealthz check passed\n",
        ),
        (
            "/readyz?verbose",
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]shutdown ok\nreadyz check passed\n",
        ),
        (
            "/readyz?verbose&exclude=etcd",
            "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n[+]etcd-readiness ok\n[+]shutdown ok\nreadyz check passed\n",
        ),
        (
            "/livez?verbose&exclude=etcd&exclude=nope&exclude=also%20missing",
            "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"also missing\",\"nope\"\nlivez check passed\n",
        ),
        ("/livez?exclude=nope", "ok"),
        ("/livez/etcd", "ok"),
        ("/readyz/etcd-readiness", "ok"),
        ("/healthz/ping", "ok"),
    ];
    for (path, expected) in cases {
        let answer = h.get(path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert_eq!(answer.text(), expected, "{path}");
    }
    let missing = h.get("/livez/etcd-readiness").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["reason"], "NotFound");
}

#[tokio::test]
async fn deprecation_warnings_on_resource_requests() {
    let h = harness(20).await;
    let cases = [
        (
            "/apis/extensions/v1beta1/namespaces/default/ingresses",
            vec![
                r#"299 - "extensions/v1beta1 Ingress is deprecated in v1.14+, unavailable in v1.22+; use networking.k8s.io/v1 Ingress""#,
            ],
        ),
        // Deprecated only from 1.21.
        (
            "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets",
            vec![],
        ),
        (
            "/apis/widgets.kapi.dev/v1beta1/widgets",
            vec![
                r#"299 - "widgets.kapi.dev/v1beta1 Widget is deprecated in v1.19+, unavailable in v1.22+; use widgets.kapi.dev/v1 Widget""#,
            ],
        ),
        (
            "/apis/stable.example.com/v1beta1/namespaces/default/crontabs",
            vec![r#"299 - "stable.example.com/v1beta1 CronTab is deprecated; see \"docs\"""#],
        ),
        ("/apis/widgets.kapi.dev/v1/widgets", vec![]),
    ];
    for (path, expected) in cases {
        let answer = h.get(path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.text());
        assert_eq!(answer.warnings(), expected, "{path}");
    }

    let later = harness(21).await;
    let answer = later
        .get("/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets")
        .await;
    assert_eq!(
        answer.warnings(),
        [
            r#"299 - "policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in v1.25+; use policy/v1 PodDisruptionBudget""#
        ]
    );
}

fn components(doc: &Value) -> &serde_json::Map<String, Value> {
    doc["components"]["schemas"].as_object().unwrap()
}

fn with_gvk<'a>(
    schemas: &'a serde_json::Map<String, Value>,
    group: &str,
    version: &str,
    kind: &str,
) -> Vec<&'a str> {
    schemas
        .iter()
        .filter(|(_, schema)| {
            schema["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|gvks| {
                    gvks.iter()
                        .any(|g| g == &json!({"group": group, "kind": kind, "version": version}))
                })
        })
        .map(|(name, _)| name.as_str())
        .collect()
}

/// 1.20 has no `/openapi/v3` (OpenAPIV3 came alpha in 1.23, on in 1.24: k8s.io/apiserver
/// `pkg/features/kube_features.go`): nothing serves the path, so the last handler of
/// kube-apiserver's chain answers it, Go's `http.NotFound` (k8s.io/apiserver v0.20
/// `pkg/server/mux/pathrecorder.go`, the default of a `PathRecorderMux` that no delegate
/// follows: `NewEmptyDelegate` has no handler), whatever the `Accept`. Its v2 document
/// predates WatchList and server-side field validation: no `sendInitialEvents` (1.27), no
/// `fieldValidation` (1.25), so kubectl validates on the client side against `/openapi/v2`.
#[tokio::test]
async fn openapi_v3_is_not_in_1_20() {
    let h = harness(20).await;
    for path in [
        "/openapi/v3",
        "/openapi/v3/",
        "/openapi/v3/api/v1",
        "/openapi/v3/apis/widgets.kapi.dev/v1?hash=0000",
        "/openapi/v3/bogus",
    ] {
        for accept in [
            None,
            Some("application/json"),
            Some("application/vnd.kubernetes.protobuf"),
        ] {
            let answer = h.send("GET", path, accept, None).await;
            assert_plain_text(&answer, StatusCode::NOT_FOUND, "404 page not found\n", path);
        }
    }
    let v2 = h.get("/openapi/v2").await;
    assert_eq!(v2.status, StatusCode::OK);
    assert!(!v2.text().contains("sendInitialEvents"));
    assert!(!v2.text().contains("fieldValidation"));
}

/// A path outside the go-restful container's roots (`/api`, `/apis`, `/version`: the director
/// of k8s.io/apiserver `pkg/server/handler.go` takes a root only at a path boundary) that no
/// handler serves ends at the mux's not-found handler, Go's plain-text `http.NotFound`, in
/// every release; under a root, go-restful's 404 is a `Status`.
#[tokio::test]
async fn paths_nothing_serves_are_plain_text_404() {
    for minor in [20, 34] {
        let h = harness(minor).await;
        // A group no go-restful web service is rooted at, with or without a version or a
        // resource: apiextensions' handler hands it on (`crdHandler` in apiextensions-apiserver
        // `pkg/apiserver/customresource_handler.go`), and so does the aggregator.
        for path in [
            "/foo",
            "/openapi/v4",
            "/apisx",
            "/metrics/x",
            "/apis/nothing.example.com",
            "/apis/nothing.example.com/",
            "/apis/nothing.example.com/v1",
            "/apis/nothing.example.com/v1/",
            "/apis/nothing.example.com/v1/things",
            "/apis/nothing.example.com/v1/namespaces/default/things/a",
        ] {
            assert_plain_text(
                &h.get(path).await,
                StatusCode::NOT_FOUND,
                "404 page not found\n",
                path,
            );
        }
        let restful = h.get("/version/x").await;
        assert_eq!(restful.status, StatusCode::NOT_FOUND);
        assert_eq!(restful.json()["kind"], "Status");
    }
}

/// `/` (and `/index.html`) lists the served paths, as upstream's index handler does
/// (`routes.Index`, k8s.io/apiserver `pkg/server/routes/index.go`: `WriteRawJSON` of a
/// `RootPaths`, sorted, indented, whatever the method).
#[tokio::test]
async fn the_root_lists_the_served_paths() {
    let h = harness(34).await;
    let answer = h.get("/").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("application/json")
    );
    let text = answer.text();
    assert!(
        text.starts_with("{\n  \"paths\": [\n    \"/api\",\n"),
        "{text}"
    );
    let paths: Vec<String> = serde_json::from_value(answer.json()["paths"].clone()).unwrap();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    for listed in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/",
        "/apis/widgets.kapi.dev",
        "/apis/widgets.kapi.dev/v1",
        "/apis/widgets.kapi.dev/v1alpha2",
        "/healthz",
        "/healthz/etcd",
        "/livez/ping",
        "/readyz/shutdown",
        "/metrics",
        "/openapi/v2",
        "/openapi/v3",
        "/openapi/v3/",
        "/version",
    ] {
        assert!(paths.iter().any(|p| p == listed), "{listed} in {paths:?}");
    }
    // Gone since 1.22 (`removed_versions_disappear_at_later_releases`).
    assert!(!paths.iter().any(|p| p == "/apis/widgets.kapi.dev/v1beta1"));
    assert_eq!(
        h.send("POST", "/index.html", None, None).await.json()["paths"],
        json!(paths)
    );

    let old = harness(20).await.get("/").await.json();
    let old: Vec<&str> = old["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        old.contains(&"/openapi/v2") && !old.contains(&"/openapi/v3"),
        "{old:?}"
    );
}

#[tokio::test]
async fn openapi_v3_index_and_documents() {
    // 1.28, the oldest release kapi carries that has `/openapi/v3` (GA in 1.27).
    let h = harness(28).await;
    let later = harness(34).await.get("/openapi/v3/api/v1").await.text();
    assert!(later.contains("sendInitialEvents"));
    assert!(later.contains("fieldValidation"));
    let index = h.get("/openapi/v3").await.json();
    let paths = index["paths"].as_object().unwrap();
    let keys: Vec<&str> = paths.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "api/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/stable.example.com/v1beta1",
            "apis/widgets.kapi.dev/v1",
            "apis/widgets.kapi.dev/v1alpha2",
        ]
    );

    for (path, entry) in paths {
        let url = entry["serverRelativeURL"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("/openapi/v3/{path}?hash=")),
            "{url}"
        );
        let answer = h.get(url).await;
        assert_eq!(answer.status, StatusCode::OK, "{url}");
        assert_eq!(
            answer.header(header::CACHE_CONTROL),
            Some("public, immutable")
        );
        let doc = answer.json();
        assert_eq!(doc["openapi"], "3.0.0");
        assert_eq!(doc["info"]["version"], "v1.28.3");
    }

    let url = paths["apis/widgets.kapi.dev/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let doc = h.get(url).await.json();
    let schemas = components(&doc);
    assert_eq!(
        with_gvk(schemas, "widgets.kapi.dev", "v1", "Widget"),
        ["dev.kapi.widgets.v1.Widget"]
    );
    assert_eq!(
        with_gvk(schemas, "widgets.kapi.dev", "v1", "WidgetList"),
        ["dev.kapi.widgets.v1.WidgetList"]
    );
    // The registered schema is published: fields and their descriptions, for kubectl explain.
    let widget = &schemas["dev.kapi.widgets.v1.Widget"];
    assert_eq!(
        widget["properties"]["spec"]["properties"]["color"]["description"],
        "The colour to paint the widget."
    );
    assert_eq!(widget["properties"]["spec"]["required"], json!(["color"]));

    // kubectl apply looks for the PATCH operation of the GVK and its fieldValidation parameter.
    let item = &doc["paths"]["/apis/widgets.kapi.dev/v1/namespaces/{namespace}/widgets/{name}"];
    let patch = &item["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "widgets.kapi.dev", "kind": "Widget", "version": "v1"})
    );
    assert_eq!(patch["x-kubernetes-action"], "patch");
    let names: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["in"] == "query")
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"dryRun") && names.contains(&"fieldValidation"));
    let body_types: Vec<&str> = patch["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(!body_types.contains(&"application/strategic-merge-patch+json"));
    assert!(body_types.contains(&"application/merge-patch+json"));
    for path in [
        "/apis/widgets.kapi.dev/v1/namespaces/{namespace}/widgets",
        "/apis/widgets.kapi.dev/v1/namespaces/{namespace}/widgets/{name}/status",
        "/apis/widgets.kapi.dev/v1/namespaces/{namespace}/widgets/{name}/scale",
        "/apis/widgets.kapi.dev/v1/widgets",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path}");
    }
    // Every $ref resolves inside the document.
    assert_refs_resolve(&doc, &doc, "#/components/schemas/");

    // A kind without a schema gets a permissive one.
    let url = paths["apis/stable.example.com/v1beta1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let doc = h.get(url).await.json();
    let crontab = &components(&doc)["com.example.stable.v1beta1.CronTab"];
    assert_eq!(crontab["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(crontab["type"], "object");

    // A stale hash redirects to the current one; no hash is served without long caching.
    let stale = h
        .get("/openapi/v3/apis/widgets.kapi.dev/v1?hash=0000")
        .await;
    assert_eq!(stale.status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(
        stale.header(header::LOCATION),
        Some(url_for(paths, "apis/widgets.kapi.dev/v1"))
    );
    let plain = h.get("/openapi/v3/apis/widgets.kapi.dev/v1").await;
    assert_eq!(plain.status, StatusCode::OK);
    assert_eq!(plain.header(header::CACHE_CONTROL), None);
    let etag = plain.header(header::ETAG).unwrap().to_owned();
    let request = Request::builder()
        .uri("/openapi/v3/apis/widgets.kapi.dev/v1")
        .header(header::IF_NONE_MATCH, &etag)
        .body(Body::empty())
        .unwrap();
    let cached = h.request(request).await;
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);

    for missing in [
        "/openapi/v3/apis/widgets.kapi.dev/v1alpha1",
        "/openapi/v3/apis/nothing/v1",
        "/openapi/v3/bogus",
    ] {
        assert_eq!(
            h.get(missing).await.status,
            StatusCode::NOT_FOUND,
            "{missing}"
        );
    }
    let protobuf = h
        .send(
            "GET",
            "/openapi/v3/api/v1",
            Some("application/com.github.proto-openapi.spec.v3@v1.0+protobuf"),
            None,
        )
        .await;
    assert_eq!(protobuf.status, StatusCode::NOT_ACCEPTABLE);
}

fn url_for<'a>(paths: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    paths[key]["serverRelativeURL"].as_str().unwrap()
}

fn assert_refs_resolve(root: &Value, node: &Value, prefix: &str) {
    match node {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref") {
                let name = reference
                    .strip_prefix(prefix)
                    .unwrap_or_else(|| panic!("unexpected $ref {reference}"));
                let container = if prefix.starts_with("#/definitions") {
                    &root["definitions"]
                } else {
                    &root["components"]["schemas"]
                };
                assert!(container.get(name).is_some(), "dangling $ref {reference}");
            }
            object
                .values()
                .for_each(|v| assert_refs_resolve(root, v, prefix));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| assert_refs_resolve(root, v, prefix)),
        _ => {}
    }
}

#[tokio::test]
async fn openapi_v2_document() {
    let h = harness(20).await;
    let answer = h.get("/openapi/v2").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.header(header::ETAG).is_some());
    let doc = answer.json();
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().unwrap();
    for (group, version, kind) in [
        ("", "v1", "Gadget"),
        ("", "v1", "Namespace"),
        ("extensions", "v1beta1", "Ingress"),
        ("policy", "v1beta1", "PodDisruptionBudget"),
        ("widgets.kapi.dev", "v1", "Widget"),
        ("widgets.kapi.dev", "v1beta1", "Widget"),
        ("widgets.kapi.dev", "v1alpha2", "Widget"),
        ("stable.example.com", "v1beta1", "CronTab"),
    ] {
        assert_eq!(
            with_gvk(definitions, group, version, kind).len(),
            1,
            "{group}/{version} {kind}"
        );
    }
    // Removed versions are not described.
    assert!(with_gvk(definitions, "widgets.kapi.dev", "v1alpha1", "Widget").is_empty());
    assert_refs_resolve(&doc, &doc, "#/definitions/");
    // A kind registered without a schema is published with the registry's definition tagged
    // with its GVK, under that definition's name, with what it refers to and nothing else.
    assert_eq!(
        with_gvk(definitions, "", "v1", "Gadget"),
        ["example.gadgets.v1.Gadget"]
    );
    assert_eq!(
        definitions["example.gadgets.v1.GadgetSpec"]["properties"]["size"]["type"],
        "integer"
    );
    assert!(!definitions.contains_key("example.gadgets.v1.Unused"));
    assert_eq!(
        definitions["io.k8s.api.core.v1.GadgetList"]["properties"]["items"]["items"]["$ref"],
        "#/definitions/example.gadgets.v1.Gadget"
    );
    // Swagger 2.0 bodies are parameters.
    let post = &doc["paths"]["/api/v1/gadgets"]["post"];
    assert_eq!(post["parameters"][0]["in"], "body");
    assert_eq!(post["x-kubernetes-action"], "post");

    // 1.20's kube-openapi (d219536) names no content type: Go's `http.ServeContent` sniffs
    // text; `Last-Modified` says when the document was built.
    assert_eq!(
        answer.header(header::CONTENT_TYPE),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(answer.header(header::VARY), Some("Accept"));
    assert!(answer.header(header::LAST_MODIFIED).is_some());
}

const V2_PROTOBUF_AT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const V2_PROTOBUF_DOT: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2` as kube-openapi's handler (`RegisterOpenAPIVersionedService` in
/// `pkg/handler/handler.go`) negotiates it: the protobuf client-go asks for
/// (`openAPIV2mimePb`), the `.` spelling added in Feb 2023 (from 1.27), JSON for anything
/// else it can answer, a bare 406 for what it cannot; ETags and `http.ServeContent`'s 304s.
#[tokio::test]
async fn openapi_v2_in_protobuf_per_release() {
    for minor in [20, 34] {
        let h = harness(minor).await;
        let json = h.get("/openapi/v2").await;
        let json_etag = json.header(header::ETAG).unwrap().to_owned();
        let protobuf = h
            .send("GET", "/openapi/v2", Some(V2_PROTOBUF_AT), None)
            .await;
        assert_eq!(protobuf.status, StatusCode::OK);
        // gnostic's Document: field 1 (swagger) "2.0", then field 2 (info).
        assert_eq!(protobuf.body[..6], [0x0a, 0x03, b'2', b'.', b'0', 0x12]);
        assert_eq!(protobuf.header(header::VARY), Some("Accept"));
        let etag = protobuf.header(header::ETAG).unwrap().to_owned();
        let dot = h
            .send("GET", "/openapi/v2", Some(V2_PROTOBUF_DOT), None)
            .await;
        let yaml = h
            .send("GET", "/openapi/v2", Some("application/yaml"), None)
            .await;
        assert_eq!(yaml.status, StatusCode::NOT_ACCEPTABLE);
        assert!(yaml.body.is_empty());
        assert_eq!(yaml.header(header::VARY), Some("Accept"));
        if minor == 20 {
            // Sniffed as binary; each format tagged with the hash of its own bytes; no `.`.
            assert_eq!(
                protobuf.header(header::CONTENT_TYPE),
                Some("application/octet-stream")
            );
            assert_ne!(etag, json_etag);
            assert_eq!(dot.status, StatusCode::NOT_ACCEPTABLE);
        } else {
            assert_eq!(json.header(header::CONTENT_TYPE), Some("application/json"));
            assert_eq!(protobuf.header(header::CONTENT_TYPE), Some(V2_PROTOBUF_DOT));
            assert_eq!(etag, json_etag, "both formats carry the JSON's ETag");
            assert_eq!(dot.status, StatusCode::OK);
            assert_eq!(dot.body, protobuf.body);
        }
        // Built once: the same bytes again, and 304 for the client that has them, by ETag or
        // by date.
        let again = h
            .send("GET", "/openapi/v2", Some(V2_PROTOBUF_AT), None)
            .await;
        assert_eq!(again.body, protobuf.body);
        let last_modified = protobuf.header(header::LAST_MODIFIED).unwrap().to_owned();
        for (name, value) in [
            (header::IF_NONE_MATCH, etag.as_str()),
            (header::IF_MODIFIED_SINCE, last_modified.as_str()),
        ] {
            let request = Request::builder()
                .uri("/openapi/v2")
                .header(header::ACCEPT, V2_PROTOBUF_AT)
                .header(name.clone(), value)
                .body(Body::empty())
                .unwrap();
            let cached = h.request(request).await;
            assert_eq!(cached.status(), StatusCode::NOT_MODIFIED, "{name}");
            assert_eq!(cached.headers()[header::ETAG], etag.as_str());
        }
        // A stale ETag gets the document.
        let request = Request::builder()
            .uri("/openapi/v2")
            .header(header::ACCEPT, V2_PROTOBUF_AT)
            .header(header::IF_NONE_MATCH, "\"stale\"")
            .body(Body::empty())
            .unwrap();
        assert_eq!(h.request(request).await.status(), StatusCode::OK);
    }
}

/// `kubectl` (when installed) reads what these endpoints publish: api-resources and
/// api-versions from discovery, explain from OpenAPI v3, and create with its default
/// validation: the OpenAPI v3 PATCH operation of the kind offers no `fieldValidation` in 1.20,
/// so kubectl validates the manifest itself, against `/openapi/v2` in protobuf.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_reads_discovery_and_openapi() {
    let Ok(version) = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    else {
        eprintln!("kubectl not installed; skipping");
        return;
    };
    assert!(version.status.success());
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path().join("data"), EmbeddedOptions::default())
        .await
        .unwrap();
    let server = Server::builder()
        .registry(registry())
        .storage(Arc::new(storage))
        .kube_version(KubeVersion::new(1, 20))
        .listen("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://{}\n\
             users:\n- name: u\n  user: {{}}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n\
             current-context: x\n",
            server.addr()
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let kubectl = |args: &[&str], stdin: Option<&str>| {
        let mut command = std::process::Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(&cache)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        if let Some(input) = stdin {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        drop(child.stdin.take());
        let output = child.wait_with_output().unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let run = |args: &[&str], stdin: Option<&str>| {
        let (ok, out, err) = kubectl(args, stdin);
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        (out, err)
    };

    let (versions, _) = run(&["api-versions"], None);
    let versions: Vec<&str> = versions.lines().collect();
    assert!(versions.contains(&"widgets.kapi.dev/v1"), "{versions:?}");
    assert!(versions.contains(&"v1"), "{versions:?}");
    assert!(
        !versions.contains(&"widgets.kapi.dev/v1alpha1"),
        "{versions:?}"
    );

    let (resources, _) = run(&["api-resources", "--api-group=widgets.kapi.dev"], None);
    assert!(resources.contains("widgets"), "{resources}");
    assert!(resources.contains("wd"), "{resources}");

    let (explained, _) = run(&["explain", "widgets.spec"], None);
    assert!(
        explained.contains("The colour to paint the widget."),
        "{explained}"
    );
    assert!(explained.contains("color"), "{explained}");

    let manifest = "apiVersion: widgets.kapi.dev/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: default\nspec:\n  color: red\n";
    run(&["create", "-f", "-"], Some(manifest));
    // Client-side apply of a new object: validated by kubectl (see above), then created.
    let (applied, _) = run(&["apply", "-f", "-"], Some(&manifest.replace("w1", "w2")));
    assert!(
        applied.contains("widget.widgets.kapi.dev/w2 created"),
        "{applied}"
    );
    let (explained, _) = run(
        &["explain", "ingresses", "--api-version=extensions/v1beta1"],
        None,
    );
    assert!(explained.contains("Ingress"), "{explained}");
    let (_, warnings) = run(&["get", "widgets.v1beta1.widgets.kapi.dev", "-A"], None);
    assert!(
        warnings.contains("widgets.kapi.dev/v1beta1 Widget is deprecated in v1.19+"),
        "{warnings}"
    );
    server.shutdown().await.unwrap();
}

/// A full disk is loud: writes answer 500 with the I/O error, `/readyz` and `/livez` fail
/// their storage check while it lasts, and both come back once there is space again, without
/// a restart.
#[tokio::test]
async fn a_full_disk_fails_the_storage_check_until_space_is_back() {
    use kapi::storage::embedded::DiskFullSwitch;
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskFullSwitch::default();
    let options = EmbeddedOptions::default().with_disk_full_switch(disk.clone());
    let storage = EmbeddedStorage::open(dir.path(), options).await.unwrap();
    let builder = Server::builder().registry(registry());
    let h = Harness::serve(storage, Some(dir), builder).await;
    let namespace = |name: &str| Some(json!({"metadata": {"name": name}}));
    assert_eq!(h.send("GET", "/readyz", None, None).await.code(), 200);

    disk.set(true);
    let refused = h
        .send("POST", "/api/v1/namespaces", None, namespace("full"))
        .await;
    assert_eq!(refused.code(), 500, "{}", refused.text());
    assert!(
        refused.text().contains("storage I/O error"),
        "{}",
        refused.text()
    );
    for probe in ["/readyz", "/livez"] {
        let answer = h.send("GET", probe, None, None).await;
        assert_eq!(answer.code(), 500, "{probe}: {}", answer.text());
        assert!(
            answer.text().contains("[-]etcd failed"),
            "{probe}: {}",
            answer.text()
        );
    }

    disk.set(false);
    support::eventually(
        Duration::from_secs(10),
        Duration::from_millis(10),
        async || match h.send("GET", "/readyz", None, None).await.code() {
            200 => Ok(()),
            _ => Err("/readyz stayed failed".to_owned()),
        },
    )
    .await;
    let created = h
        .send("POST", "/api/v1/namespaces", None, namespace("room"))
        .await;
    assert_eq!(created.code(), 201, "{}", created.text());
}

/// The value of the series `name{labels}` in a `/metrics` exposition, if it is there.
fn series(text: &str, name: &str, labels: &str) -> Option<f64> {
    let head = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&head))
        .map(|value| value.trim().parse().unwrap())
}

#[tokio::test]
async fn metrics_count_requests_watches_objects_and_deprecated_apis() {
    let h = harness(20).await;
    let ingresses = "/apis/extensions/v1beta1/namespaces/default/ingresses";
    let ingress = json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress",
        "metadata": {"name": "a"}});
    assert_eq!(
        h.send("POST", ingresses, None, Some(ingress)).await.code(),
        201
    );
    assert_eq!(h.get(&format!("{ingresses}/a")).await.code(), 200);
    assert_eq!(h.get(ingresses).await.code(), 200);
    assert_eq!(h.get(&format!("{ingresses}/missing")).await.code(), 404);
    let watch = h
        .request(
            Request::get(format!("{ingresses}?watch=true"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(watch.status(), StatusCode::OK);

    let scrape = h.get("/metrics").await;
    assert_eq!(scrape.status, StatusCode::OK);
    assert!(
        scrape
            .header(header::CONTENT_TYPE)
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = scrape.text();
    let request = |verb: &str, scope: &str, code: u16| {
        format!(
            "verb=\"{verb}\",dry_run=\"\",group=\"extensions\",version=\"v1beta1\",\
             resource=\"ingresses\",subresource=\"\",scope=\"{scope}\",component=\"apiserver\",\
             code=\"{code}\""
        )
    };
    for (verb, scope, code) in [
        ("POST", "resource", 201),
        ("GET", "resource", 200),
        ("LIST", "namespace", 200),
        ("GET", "resource", 404),
    ] {
        let labels = request(verb, scope, code);
        assert_eq!(
            series(&text, "apiserver_request_total", &labels),
            Some(1.0),
            "{labels}\n{text}"
        );
    }
    // A watch is recorded when it ends; until then it is a long-running request.
    assert_eq!(
        series(
            &text,
            "apiserver_request_total",
            &request("WATCH", "namespace", 200)
        ),
        None
    );
    let watching = "verb=\"WATCH\",group=\"extensions\",version=\"v1beta1\",\
        resource=\"ingresses\",subresource=\"\",scope=\"namespace\",component=\"apiserver\"";
    assert_eq!(
        series(&text, "apiserver_longrunning_requests", watching),
        Some(1.0),
        "{text}"
    );
    let get_duration = "verb=\"GET\",dry_run=\"\",group=\"extensions\",version=\"v1beta1\",\
        resource=\"ingresses\",subresource=\"\",scope=\"resource\",component=\"apiserver\"";
    assert_eq!(
        series(
            &text,
            "apiserver_request_duration_seconds_count",
            get_duration
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        series(
            &text,
            "apiserver_request_duration_seconds_bucket",
            &format!("le=\"60.0\",{get_duration}")
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        series(
            &text,
            "apiserver_requested_deprecated_apis",
            "group=\"extensions\",version=\"v1beta1\",resource=\"ingresses\",subresource=\"\",\
             removed_release=\"1.22\""
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        series(
            &text,
            "apiserver_storage_objects",
            "resource=\"ingresses.extensions\""
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        series(
            &text,
            "etcd_request_duration_seconds_count",
            "operation=\"create\",type=\"ingresses.extensions\""
        )
        .is_some_and(|count| count >= 1.0),
        "{text}"
    );
    // Neither the scrape nor any other non-resource path is a counted request.
    assert!(!text.contains("/metrics"), "{text}");

    drop(watch);
    let text = h.get("/metrics").await.text();
    assert_eq!(
        series(&text, "apiserver_longrunning_requests", watching),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        series(
            &text,
            "apiserver_request_total",
            &request("WATCH", "namespace", 200)
        ),
        Some(1.0),
        "{text}"
    );
    // A request to a version that is not deprecated leaves the gauge alone.
    assert!(!text.contains("resource=\"widgets\",subresource=\"\",removed_release"));
}
