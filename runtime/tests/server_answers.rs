//! kube-apiserver's exact answers to requests it refuses, which clients and scripts match on:
//! bodies of another type or not JSON, methods no route takes, continue tokens and
//! resourceVersions it cannot use, selector syntax, names, namespaces and uids that do not
//! match, preconditions, creates in a terminating namespace, and the PUT that creates.
//!
//! Upstream mirrored (kubernetes/kubernetes): `staging/src/k8s.io/apiserver/pkg/endpoints/
//! handlers/{create,update,rest}.go` (`transformDecodeError`, `checkName`),
//! `staging/src/k8s.io/apiserver/pkg/server/handler.go` (`serviceErrorHandler`, go-restful's
//! 405), `staging/src/k8s.io/apiserver/pkg/storage/continue.go`,
//! `staging/src/k8s.io/apiserver/pkg/storage/cacher/delegator.go` and `etcd3/store.go`
//! (resourceVersions), `staging/src/k8s.io/apimachinery/pkg/labels/selector.go` and
//! `fields/selector.go`, `staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go`,
//! `staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go` (`BeforeDelete`),
//! `staging/src/k8s.io/apiserver/pkg/storage/interfaces.go` (`Preconditions.Check`),
//! `plugin/pkg/admission/namespace/lifecycle/admission.go` and the registry strategies'
//! `AllowCreateOnUpdate`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kapi::meta::ObjectMeta;
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::kinds::{ConfigMap, Widget};
use support::{Harness, MERGE, builder, eventually, store_options};

mod support;

/// The core Secret, a kind of the same scheme another endpoint does not take.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "Secret", namespaced)]
struct Secret {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
}

/// The core Endpoints, whose strategy creates on update (`endpointsStrategy`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    group = "",
    version = "v1",
    kind = "Endpoints",
    plural = "endpoints",
    namespaced
)]
#[resource(generation = "none", create_on_update = true)]
struct Endpoints {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
}

/// The core ComponentStatus: get and list only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    group = "",
    version = "v1",
    kind = "ComponentStatus",
    plural = "componentstatuses"
)]
#[resource(cluster, verbs = ["get", "list"])]
struct ComponentStatus {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register::<ConfigMap>();
    registry.register::<Secret>();
    registry.register::<Endpoints>();
    registry.register::<ComponentStatus>();
    registry.register::<Widget>();
    registry
}

async fn harness(release: KubeVersion) -> Harness {
    Harness::in_temp_dir(store_options(), builder(registry(), release)).await
}

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or("")
}

/// `transformDecodeError` and the serializer's refusals, per release (the legacy scheme's name
/// lost its GOPATH prefix when kube-apiserver's build moved to modules, 1.30).
#[tokio::test]
async fn bodies_of_another_type_or_not_json_are_refused_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    let rows: Vec<(&str, &str, String)> = vec![
        (
            "application/json",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"}}"#,
            "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion".into(),
        ),
        (
            "application/json",
            r#"{"apiVersion":"v1","kind":"configmap","metadata":{"name":"a"}}"#,
            "configmap in version \"v1\" cannot be handled as a ConfigMap: no kind \"configmap\" is registered for version \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"".into(),
        ),
        (
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"name":"a"}}"#,
            "ConfigMapList in version \"v1\" cannot be handled as a ConfigMap: converting (v1.ConfigMapList) to (core.ConfigMap): unknown conversion".into(),
        ),
        (
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a""#,
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)".into(),
        ),
        (
            "application/json",
            "[]",
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b5d)".into(),
        ),
        (
            "application/json",
            "",
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)".into(),
        ),
        (
            "application/yaml",
            "a: [b",
            "the object provided is unrecognized (must be of type ConfigMap): error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']' (613a205b62)".into(),
        ),
    ];
    for (media, body, want) in rows {
        let reply = h.raw("POST", CONFIGMAPS, media, body).await;
        assert_eq!(reply.code, 400, "{body}: {}", reply.body);
        assert_eq!(reply.body["reason"], "BadRequest");
        assert_eq!(reply.message(), want, "{body}");
    }
    // A custom resource's body, as the CRD handler's conversion and validator refuse it.
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    for (body, code, want) in [
        (
            r#"{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"}}"#,
            400,
            "Widget in version \"v2\" cannot be handled as a Widget: request to convert CR from an invalid group/version: example.com/v2",
        ),
        (
            r#"{"apiVersion":"other.io/v1","kind":"Widget","metadata":{"name":"w"}}"#,
            400,
            "Widget in version \"v1\" cannot be handled as a Widget: other.io/v1, Kind=Widget is unstructured and is not suitable for converting to \"example.com/v1\"",
        ),
        (
            r#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"w"}}"#,
            422,
            "Widget.example.com \"w\" is invalid: kind: Invalid value: \"Gadget\": must be Widget",
        ),
    ] {
        let reply = h.raw("POST", widgets, "application/json", body).await;
        assert_eq!((reply.code, reply.message()), (code, want), "{body}");
    }
    let old = harness(KubeVersion::new(1, 20)).await;
    let reply = old
        .raw(
            "POST",
            CONFIGMAPS,
            "application/json",
            r#"{"apiVersion":"v1","kind":"pod"}"#,
        )
        .await;
    assert_eq!(
        reply.message(),
        "pod in version \"v1\" cannot be handled as a ConfigMap: no kind \"pod\" is registered for version \"v1\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\""
    );
}

/// go-restful's answer to a method no route takes (`serviceErrorHandler` turns it into
/// `NewGenericServerResponse`, without an `Allow` header), also for `OPTIONS` and `HEAD`; the
/// CRD handler's `MethodNotSupported` for a custom resource.
#[tokio::test]
async fn methods_without_a_route_are_refused_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    let generic = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server does not allow this method on the requested resource",
        "reason": "MethodNotAllowed",
        "details": {"causes": [{"reason": "UnexpectedServerResponse", "message": "405: Method Not Allowed"}]},
        "code": 405,
    });
    for (method, uri) in [
        ("POST", format!("{CONFIGMAPS}/a")),
        ("PUT", CONFIGMAPS.to_owned()),
        ("DELETE", "/api/v1/configmaps".to_owned()),
        ("DELETE", "/api/v1/componentstatuses/x".to_owned()),
        ("POST", "/api/v1/componentstatuses".to_owned()),
        ("OPTIONS", CONFIGMAPS.to_owned()),
        ("DELETE", "/api/v1/namespaces/default/finalize".to_owned()),
    ] {
        let answer = h.exchange(method, &uri, &[], Vec::new()).await;
        assert_eq!(answer.value(), generic, "{method} {uri}");
        assert!(answer.headers.get("allow").is_none());
    }
    let head = h.exchange("HEAD", CONFIGMAPS, &[], Vec::new()).await;
    assert_eq!(head.code(), 405);
    // The discovery documents and /version are go-restful GET routes too; /apis and
    // /apis/<group> are the aggregator's handlers, which answer any method.
    for (method, uri) in [
        ("OPTIONS", "/api"),
        ("POST", "/api/v1"),
        ("HEAD", "/version"),
        ("OPTIONS", "/apis/example.com/v1"),
    ] {
        let answer = h.exchange(method, uri, &[], Vec::new()).await;
        assert_eq!(answer.code(), 405, "{method} {uri}");
        if method != "HEAD" {
            assert_eq!(answer.value(), generic, "{method} {uri}");
        }
    }
    assert_eq!(
        h.exchange("OPTIONS", "/apis", &[], Vec::new()).await.code(),
        200
    );
    // A path no route takes at all is go-restful's 404.
    let (code, body) = h.call("GET", "/api/v1/watch/componentstatuses", None).await;
    assert_eq!(code, 404);
    assert_eq!(
        body["details"]["causes"][0]["message"], "404: Page Not Found",
        "{body}"
    );
    // A watch of a kind that lists but does not watch: the list handler's refusal.
    let (code, body) = h
        .call("GET", "/api/v1/componentstatuses?watch=true", None)
        .await;
    assert_eq!(code, 405);
    assert_eq!(
        message(&body),
        "watch is not supported on resources of kind \"componentstatuses\""
    );
    // The CRD handler serves a HEAD as the GET it reads it as.
    let head = h
        .exchange(
            "HEAD",
            "/apis/example.com/v1/namespaces/default/widgets",
            &[],
            Vec::new(),
        )
        .await;
    assert_eq!(head.code(), 200);
    let (code, body) = h
        .call(
            "OPTIONS",
            "/apis/example.com/v1/namespaces/default/widgets",
            None,
        )
        .await;
    assert_eq!(code, 405);
    assert_eq!(
        message(&body),
        "options is not supported on resources of kind \"widgets.example.com\""
    );
}

/// `DecodeContinue`'s refusals (wrapped in the store's `invalid continue token: ...`) and
/// upstream's token encoding, unpadded URL-safe base64.
#[tokio::test]
async fn continue_tokens_are_upstreams() {
    let h = harness(KubeVersion::new(1, 34)).await;
    for name in ["a", "b", "c"] {
        h.ok(
            "POST",
            CONFIGMAPS,
            Some(json!({"metadata": {"name": name}})),
        )
        .await;
    }
    let page = h.ok("GET", &format!("{CONFIGMAPS}?limit=1"), None).await;
    let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
    assert!(!token.contains('=') && !token.contains('+') && !token.contains('/'));
    let next = h
        .ok(
            "GET",
            &format!("{CONFIGMAPS}?limit=1&continue={token}"),
            None,
        )
        .await;
    assert_eq!(next["items"][0]["metadata"]["name"], "b");
    for (token, want) in [
        (
            "e30=",
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 3",
        ),
        (
            "e30",
            "invalid continue token: continue key is not valid: server does not recognize this encoding version",
        ),
        (
            // {"v":"meta.k8s.io/v1","rv":5,"start":"../x"}
            "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NSwic3RhcnQiOiIuLi94In0",
            "invalid continue token: continue key is not valid: ../x",
        ),
    ] {
        let (code, body) = h
            .call("GET", &format!("{CONFIGMAPS}?continue={token}"), None)
            .await;
        assert_eq!(code, 400, "{body}");
        assert_eq!(message(&body), want);
    }
    let (code, body) = h
        .call(
            "GET",
            &format!("{CONFIGMAPS}?continue={token}&resourceVersion=5"),
            None,
        )
        .await;
    assert_eq!(code, 400);
    assert_eq!(
        message(&body),
        "specifying resource version is not allowed when using continue"
    );
}

/// An unparsable resourceVersion: the watch cache's storage error (500 without a reason) for
/// reads it serves, the etcd3 store's 400 for a list it hands over, `strconv`'s error for a
/// written object's; a create that carries one is the store's `ErrResourceVersionSetOnCreate`.
#[tokio::test]
async fn resource_versions_are_refused_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    h.ok("POST", CONFIGMAPS, Some(json!({"metadata": {"name": "a"}})))
        .await;
    let cached = "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax";
    for uri in [
        format!("{CONFIGMAPS}/a?resourceVersion=abc"),
        format!("{CONFIGMAPS}?resourceVersion=abc"),
        format!("{CONFIGMAPS}?watch=true&resourceVersion=abc"),
    ] {
        let (code, body) = h.call("GET", &uri, None).await;
        assert_eq!(code, 500, "{uri}: {body}");
        assert!(body.get("reason").is_none(), "{body}");
        assert_eq!(message(&body), cached);
    }
    let (code, body) = h
        .call(
            "GET",
            &format!("{CONFIGMAPS}?resourceVersion=abc&resourceVersionMatch=Exact"),
            None,
        )
        .await;
    assert_eq!(
        (code, message(&body)),
        (400, &*format!("invalid resource version: {cached}"))
    );
    let (code, body) = h
        .call(
            "PUT",
            &format!("{CONFIGMAPS}/a"),
            Some(json!({"metadata": {"name": "a", "resourceVersion": "abc"}})),
        )
        .await;
    assert_eq!(
        (code, message(&body)),
        (500, "strconv.ParseUint: parsing \"abc\": invalid syntax")
    );
    let (code, body) = h
        .call(
            "POST",
            CONFIGMAPS,
            Some(json!({"metadata": {"name": "b", "resourceVersion": "7"}})),
        )
        .await;
    assert_eq!(
        (code, message(&body)),
        (
            500,
            "resourceVersion should not be set on objects to be created"
        )
    );
}

/// `labels.Parse` and `fields.ParseSelector` texts, as the list handler answers them (400).
#[tokio::test]
async fn selector_syntax_is_refused_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    for (query, want) in [
        (
            "labelSelector=a!!b",
            "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "labelSelector=a%3Db%3Dc",
            "found '=', expected: ',' or 'end of string'",
        ),
        (
            "labelSelector=a%20in%20(b",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "fieldSelector=metadata.name%3Da%3Db",
            "invalid field selector: unescaped character in value: 61",
        ),
        (
            "fieldSelector=metadata.name%3Dx,b",
            "invalid selector: 'metadata.name=x,b'; can't understand 'b'",
        ),
    ] {
        let (code, body) = h.call("GET", &format!("{CONFIGMAPS}?{query}"), None).await;
        assert_eq!((code, message(&body)), (400, want), "{query}");
    }
}

/// `ValidateObjectMeta` on create: the generateName as a prefix, then the generated name, in
/// one 422 with the object's other causes.
#[tokio::test]
async fn generated_names_are_checked_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    let (code, body) = h
        .call(
            "POST",
            CONFIGMAPS,
            Some(json!({"metadata": {"generateName": "A_"}})),
        )
        .await;
    assert_eq!(code, 422, "{body}");
    let causes = body["details"]["causes"].as_array().unwrap();
    let fields: Vec<&str> = causes
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["metadata.generateName", "metadata.name"]);
    assert_eq!(
        causes[0]["message"],
        "Invalid value: \"A_\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    let generated = body["details"]["name"].as_str().unwrap();
    assert!(
        generated.starts_with("A_") && generated.len() == 7,
        "{generated}"
    );
    // A trailing dash is masked, as upstream's maskTrailingDash does.
    h.ok(
        "POST",
        CONFIGMAPS,
        Some(json!({"metadata": {"generateName": "ok-"}})),
    )
    .await;
}

/// `checkName` for an update or patch, `EnsureObjectNamespaceMatchesRequestNamespace` for a
/// create.
#[tokio::test]
async fn names_and_namespaces_must_match_the_url_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    h.ok("POST", CONFIGMAPS, Some(json!({"metadata": {"name": "a"}})))
        .await;
    let rows = [
        (
            "POST",
            CONFIGMAPS.to_owned(),
            json!({"metadata": {"name": "b", "namespace": "other"}}),
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            "PUT",
            format!("{CONFIGMAPS}/a"),
            json!({"metadata": {}}),
            "the name of the object () does not match the name on the URL (a)",
        ),
        (
            "PUT",
            format!("{CONFIGMAPS}/a"),
            json!({"metadata": {"name": "a", "namespace": "other"}}),
            "the namespace of the object (other) does not match the namespace on the request (default)",
        ),
    ];
    for (method, uri, body, want) in rows {
        let (code, reply) = h.call(method, &uri, Some(body)).await;
        assert_eq!((code, message(&reply)), (400, want), "{method} {uri}");
    }
    let (code, reply) = h
        .call_as(
            "PATCH",
            &format!("{CONFIGMAPS}/a"),
            MERGE,
            Some(json!({"metadata": {"namespace": "other"}})),
        )
        .await;
    assert_eq!(
        (code, message(&reply)),
        (
            400,
            "the namespace of the object (other) does not match the namespace on the request (default)"
        )
    );
}

/// A PUT's uid is a store precondition (409 with the etcd3 store's error, naming upstream's
/// key); a delete's preconditions are `BeforeDelete`'s, naming the kind.
#[tokio::test]
async fn preconditions_fail_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    let created = h
        .ok("POST", CONFIGMAPS, Some(json!({"metadata": {"name": "a"}})))
        .await;
    let uid = created["metadata"]["uid"].as_str().unwrap();
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    let (code, body) = h
        .call(
            "PUT",
            &format!("{CONFIGMAPS}/a"),
            Some(json!({"metadata": {"name": "a", "uid": "x"}})),
        )
        .await;
    assert_eq!(code, 409);
    assert_eq!(body["reason"], "Conflict");
    assert_eq!(
        message(&body),
        format!(
            "Operation cannot be fulfilled on configmaps \"a\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: x, UID in object meta: {uid}"
        )
    );
    let (code, body) = h
        .call(
            "DELETE",
            &format!("{CONFIGMAPS}/a"),
            Some(json!({"preconditions": {"uid": "x"}})),
        )
        .await;
    assert_eq!(code, 409);
    assert_eq!(body["details"], json!({"name": "a", "kind": "ConfigMap"}));
    assert_eq!(
        message(&body),
        format!(
            "Operation cannot be fulfilled on ConfigMap \"a\": the UID in the precondition (x) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    let (code, body) = h
        .call(
            "DELETE",
            &format!("{CONFIGMAPS}/a"),
            Some(json!({"preconditions": {"resourceVersion": "1"}})),
        )
        .await;
    assert_eq!(code, 409);
    assert_eq!(
        message(&body),
        format!(
            "Operation cannot be fulfilled on ConfigMap \"a\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified"
        )
    );
}

/// NamespaceLifecycle's Forbidden with its `NamespaceTerminating` cause, for a POST and for a
/// PUT that would create; a PUT creates only for kinds whose strategy allows it.
#[tokio::test]
async fn creates_on_update_and_in_terminating_namespaces_as_upstream() {
    let h = harness(KubeVersion::new(1, 34)).await;
    let created = h
        .exchange(
            "PUT",
            "/api/v1/namespaces/default/endpoints/e",
            &[("content-type", "application/json")],
            br#"{"metadata":{"name":"e","resourceVersion":"9"}}"#.to_vec(),
        )
        .await;
    assert_eq!(created.code(), 201, "{:?}", created.value());
    assert!(created.value()["metadata"]["uid"].is_string());
    let (code, body) = h
        .call(
            "PUT",
            &format!("{CONFIGMAPS}/missing"),
            Some(json!({"metadata": {"name": "missing"}})),
        )
        .await;
    assert_eq!(
        (code, message(&body)),
        (404, "configmaps \"missing\" not found")
    );

    h.create_namespace("doomed").await;
    h.ok(
        "POST",
        "/api/v1/namespaces/doomed/configmaps",
        Some(json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})),
    )
    .await;
    h.ok("DELETE", "/api/v1/namespaces/doomed", None).await;
    let cause = json!([{
        "reason": "NamespaceTerminating",
        "message": "namespace doomed is being terminated",
        "field": "metadata.namespace",
    }]);
    let refused = eventually(
        Duration::from_secs(10),
        Duration::from_millis(50),
        async || {
            let (code, body) = h
                .call(
                    "POST",
                    "/api/v1/namespaces/doomed/configmaps",
                    Some(json!({"metadata": {"name": "late"}})),
                )
                .await;
            if code == 403 {
                Ok(body)
            } else {
                Err(format!("{code} {body}"))
            }
        },
    )
    .await;
    assert_eq!(
        message(&refused),
        "configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
    );
    assert_eq!(refused["details"]["causes"], cause);
    let (code, body) = h
        .call(
            "PUT",
            "/api/v1/namespaces/doomed/endpoints/late",
            Some(json!({"metadata": {"name": "late"}})),
        )
        .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["details"]["causes"], cause);
}

/// 1.20's ConfigMap and ObjectMeta as its OpenAPI describes them (k8s.io/api and
/// k8s.io/apimachinery at kubernetes-1.20: six ConfigMap fields with TypeMeta's two, sixteen
/// ObjectMeta fields), which kapi's json-iterator port decodes against.
const CONFIGMAP_1_20: &str = r##"{
  "io.k8s.api.core.v1.ConfigMap": {"type": "object",
    "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}],
    "properties": {
      "apiVersion": {"type": "string"}, "kind": {"type": "string"},
      "metadata": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
      "immutable": {"type": "boolean"},
      "data": {"type": "object", "additionalProperties": {"type": "string"}},
      "binaryData": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}}}},
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
    "name": {"type": "string"}, "generateName": {"type": "string"},
    "namespace": {"type": "string"}, "selfLink": {"type": "string"},
    "uid": {"type": "string"}, "resourceVersion": {"type": "string"},
    "generation": {"type": "integer", "format": "int64"},
    "creationTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
    "deletionTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
    "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    "ownerReferences": {"type": "array", "items": {"type": "object"}},
    "finalizers": {"type": "array", "items": {"type": "string"}},
    "clusterName": {"type": "string"},
    "managedFields": {"type": "array", "items": {"type": "object"}}}},
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"}
}"##;

/// kube-apiserver 1.20 decodes bodies with json-iterator v1.1.10 (k8s.io/apimachinery
/// `runtime/serializer/json` `Serializer.Decode`, `caseSensitiveJsonIterator.Unmarshal`), a
/// YAML body once `sigs.k8s.io/yaml`'s `YAMLToJSON` (`yamlToJSONTarget`: go-yaml, then Go's
/// `json.Marshal`, keys sorted, `<` as `\u003c`, floats as Go writes them) has made JSON of it:
/// its readers' texts quote that JSON, and a misfit that sorting puts before other fields is
/// read on past (`TypeMeta: Kind: ...` wraps it again). The texts are json-iterator v1.1.10's
/// for those JSON bytes decoded into structs with 1.20's ConfigMap and ObjectMeta fields.
#[tokio::test]
async fn release_1_20_words_type_errors_as_json_iterator() {
    let mut registry = registry();
    registry.add_definitions(CONFIGMAP_1_20);
    let h = Harness::in_temp_dir(store_options(), builder(registry, KubeVersion::new(1, 20))).await;
    let yaml = "application/yaml";
    let json = "application/json";
    let rows = [
        (
            yaml,
            "metadata:\n  name: y\ndata:\n  b: \"2\"\n  a: 1\napiVersion: v1\nkind: ConfigMap\n",
            "v1.ConfigMap.ObjectMeta: v1.ObjectMeta.TypeMeta: Kind: Data: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|ta\":{\"a\":1,\"b\":\"2\"},|..., bigger context ...|{\"apiVersion\":\"v1\",\"data\":{\"a\":1,\"b\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"y|...",
        ),
        (
            yaml,
            "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: y\n  labels:\n    c: 1\n  annotations:\n    a: <b>\n",
            "v1.ConfigMap.ObjectMeta: v1.ObjectMeta.Name: Labels: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|ls\":{\"c\":1},\"name\":\"|..., bigger context ...|annotations\":{\"a\":\"\\u003cb\\u003e\"},\"labels\":{\"c\":1},\"name\":\"y\"}}|...",
        ),
        (
            yaml,
            "kind: ConfigMap\napiVersion: v1\nmetadata: {name: y}\ndata: {a: 1.5e-7}\n",
            "v1.ConfigMap.Data: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|ta\":{\"a\":1.5e-7},\"ki|..., bigger context ...|{\"apiVersion\":\"v1\",\"data\":{\"a\":1.5e-7},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"y\"}}|...",
        ),
        (
            json,
            r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"a":1},"metadata":{"name":"x"}}"#,
            "v1.ConfigMap.ObjectMeta: v1.ObjectMeta.Data: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|ta\":{\"a\":1},\"metadat|..., bigger context ...|\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"a\":1},\"metadata\":{\"name\":\"x\"}}|...",
        ),
    ];
    for (media, body, problem) in rows {
        let reply = h.raw("POST", CONFIGMAPS, media, body).await;
        assert_eq!(reply.code, 400, "{body}: {}", reply.body);
        assert_eq!(
            reply.message(),
            format!("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: {problem}"),
            "{body}"
        );
    }
}
