//! Answers in Kubernetes' protobuf encoding, read back field by field: objects, lists, `Status`
//! errors and watch events for a kind with field numbers (apps/v1 Deployment), JSON for one
//! without (a custom resource), as upstream negotiates them.
//!
//! Upstream mirrored: the protobuf serializer's envelope (`runtime.Unknown` after the magic
//! `k8s\0`, k8s.io/apimachinery `runtime/serializer/protobuf`), the watch framing
//! (`LengthDelimitedFramer`: four big-endian length bytes, then a `metav1.WatchEvent`), the
//! custom resource handler leaving protobuf out of its standard serializers
//! (apiextensions-apiserver `customresource_handler.go`), and `ErrorNegotiated` writing a
//! failure's `Status` in the negotiated format.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use kapi::{KubeVersion, Registry};
use serde_json::json;

use support::kinds::{DEPLOYMENTS, Deployment, WIDGETS, Widget};
use support::{Answer, Harness};

mod support;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What client-go's protobuf clients send (kubectl 1.32 and newer among them).
const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf,application/json";

async fn harness() -> Harness {
    let mut registry = Registry::new();
    registry.register::<Deployment>();
    registry.register::<Widget>();
    let builder = support::builder(registry, KubeVersion::new(1, 34));
    Harness::in_temp_dir(support::store_options(), builder).await
}

/// One field of a message as read off the wire: a varint or a length-delimited payload.
#[derive(Debug, Clone, PartialEq)]
enum Wire {
    Varint(u64),
    Bytes(Vec<u8>),
}

/// The fields of a message, in order (only the wire types the encoding uses).
fn fields(bytes: &[u8]) -> Vec<(u64, Wire)> {
    let mut out = Vec::new();
    let mut pos = 0;
    let varint = |pos: &mut usize| {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = bytes[*pos];
            *pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value;
            }
            shift += 7;
        }
    };
    while pos < bytes.len() {
        let tag = varint(&mut pos);
        match tag & 7 {
            0 => out.push((tag >> 3, Wire::Varint(varint(&mut pos)))),
            2 => {
                let len = varint(&mut pos) as usize;
                out.push((tag >> 3, Wire::Bytes(bytes[pos..pos + len].to_vec())));
                pos += len;
            }
            other => panic!("wire type {other} in {bytes:x?}"),
        }
    }
    out
}

/// Every payload of field `number`.
fn all(bytes: &[u8], number: u64) -> Vec<Vec<u8>> {
    fields(bytes)
        .into_iter()
        .filter_map(|(n, wire)| match wire {
            Wire::Bytes(b) if n == number => Some(b),
            _ => None,
        })
        .collect()
}

/// The one payload of field `number`.
fn one(bytes: &[u8], number: u64) -> Vec<u8> {
    let mut found = all(bytes, number);
    assert_eq!(found.len(), 1, "field {number} of {bytes:x?}");
    found.remove(0)
}

fn text(bytes: &[u8], number: u64) -> String {
    String::from_utf8(one(bytes, number)).unwrap()
}

/// The `(apiVersion, kind)` and message of a body: the magic, then `runtime.Unknown`.
fn unwrap_envelope(body: &[u8]) -> ((String, String), Vec<u8>) {
    let unknown = body.strip_prefix(b"k8s\0").expect("the protobuf magic");
    let type_meta = one(unknown, 1);
    ((text(&type_meta, 1), text(&type_meta, 2)), one(unknown, 2))
}

fn content_type(answer: &Answer) -> &str {
    answer.headers["content-type"].to_str().unwrap()
}

#[tokio::test]
async fn built_in_kinds_are_answered_in_protobuf() {
    let h = harness().await;
    let web = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3},
    });
    h.ok("POST", DEPLOYMENTS, Some(web)).await;

    let get = h
        .exchange(
            "GET",
            &format!("{DEPLOYMENTS}/web"),
            &[("accept", CLIENT_GO)],
            Vec::new(),
        )
        .await;
    assert_eq!(get.code(), 200);
    assert_eq!(content_type(&get), PROTOBUF);
    let ((api_version, kind), message) = unwrap_envelope(&get.body);
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("apps/v1", "Deployment")
    );
    // Deployment: metadata = 1, spec = 2; ObjectMeta: name = 1, namespace = 3, labels = 11;
    // DeploymentSpec: replicas = 1.
    let meta = one(&message, 1);
    assert_eq!(text(&meta, 1), "web");
    assert_eq!(text(&meta, 3), "default");
    let label = one(&meta, 11);
    assert_eq!(
        (text(&label, 1), text(&label, 2)),
        ("app".into(), "web".into())
    );
    assert_eq!(fields(&one(&message, 2))[0], (1, Wire::Varint(3)));

    h.ok(
        "POST",
        DEPLOYMENTS,
        Some(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"}})),
    )
    .await;
    let list = h
        .exchange("GET", DEPLOYMENTS, &[("accept", PROTOBUF)], Vec::new())
        .await;
    assert_eq!(list.code(), 200);
    let ((_, kind), message) = unwrap_envelope(&list.body);
    assert_eq!(kind, "DeploymentList");
    // DeploymentList: metadata = 1 (ListMeta: resourceVersion = 2), items = 2.
    assert!(!text(&one(&message, 1), 2).is_empty());
    let names: Vec<String> = all(&message, 2)
        .iter()
        .map(|item| text(&one(item, 1), 1))
        .collect();
    assert_eq!(names, ["api", "web"]);
}

#[tokio::test]
async fn failures_are_statuses_in_protobuf_when_asked_so() {
    let h = harness().await;
    let missing = h
        .exchange(
            "GET",
            &format!("{DEPLOYMENTS}/nope"),
            &[("accept", CLIENT_GO)],
            Vec::new(),
        )
        .await;
    assert_eq!(missing.code(), 404);
    assert_eq!(content_type(&missing), PROTOBUF);
    let ((api_version, kind), status) = unwrap_envelope(&missing.body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "Status"));
    // Status: status = 2, message = 3, reason = 4, details = 5, code = 6.
    assert_eq!(text(&status, 2), "Failure");
    assert_eq!(text(&status, 3), r#"deployments.apps "nope" not found"#);
    assert_eq!(text(&status, 4), "NotFound");
    assert!(fields(&status).contains(&(6, Wire::Varint(404))));
    // A client that prefers JSON gets JSON.
    let (code, json) = h.call("GET", &format!("{DEPLOYMENTS}/nope"), None).await;
    assert_eq!((code, json["reason"].as_str()), (404, Some("NotFound")));
}

/// Custom resources have no field numbers: protobuf is not offered for them, so a client that
/// also takes JSON gets JSON, and one that takes only protobuf 406 with the types served.
#[tokio::test]
async fn custom_resources_fall_back_to_json() {
    let h = harness().await;
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    h.ok("POST", WIDGETS, Some(widget)).await;
    let json = h
        .exchange(
            "GET",
            &format!("{WIDGETS}/w"),
            &[("accept", CLIENT_GO)],
            Vec::new(),
        )
        .await;
    assert_eq!(json.code(), 200);
    assert_eq!(content_type(&json), "application/json");
    assert_eq!(json.value()["metadata"]["name"], "w");
    let refused = h
        .exchange(
            "GET",
            &format!("{WIDGETS}/w"),
            &[("accept", PROTOBUF)],
            Vec::new(),
        )
        .await;
    assert_eq!(refused.code(), 406);
    let ((_, kind), status) = unwrap_envelope(&refused.body);
    assert_eq!(kind, "Status");
    assert_eq!(
        text(&status, 3),
        "only the following media types are accepted: application/json, application/yaml"
    );
}

#[tokio::test]
async fn watch_events_are_length_prefixed_watch_events() {
    let h = harness().await;
    let mut watch = h
        .watch(
            &format!("{DEPLOYMENTS}?watch=true&resourceVersion=0"),
            Some(CLIENT_GO),
        )
        .await;
    let first = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}});
    h.ok("POST", DEPLOYMENTS, Some(first)).await;
    h.ok("DELETE", &format!("{DEPLOYMENTS}/a"), None).await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let frame = watch.next_frame().await.expect("a watch event");
        // WatchEvent: type = 1, object = 2 (RawExtension: raw = 1, the whole object).
        let raw = one(&one(&frame, 2), 1);
        let ((_, kind), object) = unwrap_envelope(&raw);
        assert_eq!(kind, "Deployment");
        seen.push((text(&frame, 1), text(&one(&object, 1), 1)));
    }
    assert_eq!(
        seen,
        [("ADDED".into(), "a".into()), ("DELETED".into(), "a".into())]
    );
}

/// `PartialObjectMetadata` has field numbers whatever the kind: a metadata-only client (the
/// garbage collector's, upstream's metadata informers) lists and watches custom resources in
/// protobuf. meta.k8s.io/v1beta1's list numbers its fields the other way round from v1's
/// (upstream's `generated.proto` of each).
#[tokio::test]
async fn partial_object_metadata_of_any_kind_in_protobuf() {
    let h = harness().await;
    for name in ["a", "b"] {
        let widget =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}});
        h.ok("POST", WIDGETS, Some(widget)).await;
    }
    // (version, metadata field, items field)
    for (version, meta_field, items_field) in [("v1", 1, 2), ("v1beta1", 2, 1)] {
        let accept = format!(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v={version}"
        );
        let list = h
            .exchange("GET", WIDGETS, &[("accept", &accept)], Vec::new())
            .await;
        assert_eq!(list.code(), 200, "{version}");
        assert_eq!(content_type(&list), PROTOBUF);
        let ((api_version, kind), message) = unwrap_envelope(&list.body);
        assert_eq!(api_version, format!("meta.k8s.io/{version}"));
        assert_eq!(kind, "PartialObjectMetadataList");
        assert!(!text(&one(&message, meta_field), 2).is_empty(), "{version}");
        // PartialObjectMetadata: metadata = 1.
        let names: Vec<String> = all(&message, items_field)
            .iter()
            .map(|item| text(&one(item, 1), 1))
            .collect();
        assert_eq!(names, ["a", "b"], "{version}");
    }
    let accept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let mut watch = h
        .watch(
            &format!("{WIDGETS}?watch=true&resourceVersion=0"),
            Some(accept),
        )
        .await;
    let frame = watch.next_frame().await.expect("an initial event");
    assert_eq!(text(&frame, 1), "ADDED");
    let ((_, kind), object) = unwrap_envelope(&one(&one(&frame, 2), 1));
    assert_eq!(kind, "PartialObjectMetadata");
    assert_eq!(text(&one(&object, 1), 1), "a");
}

/// Metadata asked in the wrong shape is refused by upstream's transform whatever else the
/// client accepts (`asPartialObjectMetadata[List]`, naming the Go type it holds), and an
/// unknown `includeObject` is a 400 (`optionsForTransform`, `ValidateTableOptions`), both in
/// k8s.io/apiserver's `endpoints/handlers/response.go`.
#[tokio::test]
async fn metadata_and_tables_asked_wrongly_are_refused_as_upstream() {
    let h = harness().await;
    let web = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    h.ok("POST", DEPLOYMENTS, Some(web)).await;
    let cases = [
        (
            format!("{DEPLOYMENTS}/web"),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json",
            406,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*apps.Deployment)",
        ),
        (
            WIDGETS.to_owned(),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            406,
            "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)",
        ),
        (
            format!("{DEPLOYMENTS}?includeObject=Everything"),
            "application/json;as=Table;g=meta.k8s.io;v=v1",
            400,
            "Unable to convert to Table as requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty",
        ),
    ];
    for (uri, accept, code, message) in cases {
        let answer = h
            .exchange("GET", &uri, &[("accept", accept)], Vec::new())
            .await;
        assert_eq!(answer.code(), code, "{uri} {accept}");
        assert_eq!(answer.value()["message"], message, "{uri} {accept}");
    }
}

/// A GET asking for `accept`.
async fn get(h: &Harness, uri: &str, accept: &str) -> Answer {
    h.exchange("GET", uri, &[("accept", accept)], Vec::new())
        .await
}

/// The message among `items` whose field 1 is `name`.
fn named<'a>(items: &'a [Vec<u8>], name: &str) -> &'a [u8] {
    items
        .iter()
        .find(|item| all(item, 1).first().is_some_and(|n| n == name.as_bytes()))
        .unwrap_or_else(|| panic!("no {name} among {} items", items.len()))
}

fn strings(bytes: &[u8], number: u64) -> Vec<String> {
    all(bytes, number)
        .into_iter()
        .map(|b| String::from_utf8(b).unwrap())
        .collect()
}

/// The discovery documents in protobuf, as upstream's discovery handlers write them with
/// their codec factories' protobuf serializer (k8s.io/apiserver `endpoints/discovery/
/// {legacy,root,group,version}.go`, kube-aggregator `handler_apis.go`: all through
/// `WriteObjectNegotiated`). Field numbers from k8s.io/apimachinery `pkg/apis/meta/v1/
/// generated.proto`: APIVersions {1 versions, 2 serverAddressByClientCIDRs}, APIGroupList
/// {1 groups}, APIGroup {1 name, 2 versions, 3 preferredVersion}, GroupVersionForDiscovery
/// {1 groupVersion, 2 version}, APIResourceList {1 groupVersion, 2 resources}, APIResource
/// {1 name, 2 namespaced, 3 kind, 4 verbs (Verbs {1 items}), 6 singularName}. `/api` and
/// `/api/v1` are written by the `stripVersionEncoder` (`discovery/util.go`): their envelope's
/// apiVersion is empty.
#[tokio::test]
async fn discovery_documents_in_protobuf() {
    let h = harness().await;
    let api = h
        .exchange(
            "GET",
            "/api",
            &[("accept", PROTOBUF), ("host", "127.0.0.1:6443")],
            Vec::new(),
        )
        .await;
    assert_eq!(api.code(), 200);
    assert_eq!(content_type(&api), PROTOBUF);
    let (type_meta, versions) = unwrap_envelope(&api.body);
    assert_eq!(type_meta, (String::new(), "APIVersions".to_owned()));
    assert_eq!(strings(&versions, 1), ["v1"]);
    let address = one(&versions, 2);
    assert_eq!(text(&address, 1), "0.0.0.0/0");
    assert_eq!(text(&address, 2), "127.0.0.1:6443");

    let apis = get(&h, "/apis", CLIENT_GO).await;
    assert_eq!(content_type(&apis), PROTOBUF);
    let (type_meta, list) = unwrap_envelope(&apis.body);
    assert_eq!(type_meta, ("v1".to_owned(), "APIGroupList".to_owned()));
    let groups = all(&list, 1);
    let apps = named(&groups, "apps");
    let version = one(apps, 2);
    assert_eq!(
        (text(&version, 1), text(&version, 2)),
        ("apps/v1".to_owned(), "v1".to_owned())
    );
    assert_eq!(one(apps, 3), version);

    let group = get(&h, "/apis/apps", PROTOBUF).await;
    let (type_meta, message) = unwrap_envelope(&group.body);
    assert_eq!(type_meta, ("v1".to_owned(), "APIGroup".to_owned()));
    assert_eq!(message, apps);

    for (path, api_version, group_version) in
        [("/apis/apps/v1", "v1", "apps/v1"), ("/api/v1", "", "v1")]
    {
        let answer = get(&h, path, PROTOBUF).await;
        assert_eq!(content_type(&answer), PROTOBUF, "{path}");
        let (type_meta, list) = unwrap_envelope(&answer.body);
        assert_eq!(
            type_meta,
            (api_version.to_owned(), "APIResourceList".to_owned())
        );
        assert_eq!(text(&list, 1), group_version);
        if path == "/apis/apps/v1" {
            let resources = all(&list, 2);
            let deployments = named(&resources, "deployments");
            assert_eq!(
                fields(deployments).iter().find(|(n, _)| *n == 2),
                Some(&(2, Wire::Varint(1)))
            );
            assert_eq!(text(deployments, 3), "Deployment");
            assert_eq!(text(deployments, 6), "deployment");
            assert!(strings(&one(deployments, 4), 1).contains(&"watch".to_owned()));
        }
    }
}

/// Aggregated discovery in protobuf (`application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;
/// v=v2;as=APIGroupDiscoveryList`): the aggregated handler negotiates with its own codec factory,
/// which has the protobuf serializer, and names the kind in the `Content-Type`
/// (`aggregated/handler.go`, `writeDiscoveryResponse`; `generateMediaTypeWithGVK`). Field numbers
/// from k8s.io/api `apidiscovery/v2/generated.proto` (v2beta1's are the same):
/// APIGroupDiscoveryList {2 items}, APIGroupDiscovery {1 metadata, 2 versions},
/// APIVersionDiscovery {1 version, 2 resources, 3 freshness}, APIResourceDiscovery {1 resource,
/// 2 responseKind (GroupVersionKind {1 group, 2 version, 3 kind}), 3 scope, 4 singularResource,
/// 5 verbs}. Before `AggregatedDiscoveryEndpoint` (1.20) the media type is unknown: 406.
#[tokio::test]
async fn aggregated_discovery_in_protobuf() {
    let h = harness().await;
    for version in ["v2", "v2beta1"] {
        let media =
            format!("{PROTOBUF};g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
        let answer = get(&h, "/apis", &media).await;
        assert_eq!(answer.code(), 200);
        assert_eq!(content_type(&answer), media);
        let (type_meta, list) = unwrap_envelope(&answer.body);
        assert_eq!(
            type_meta,
            (
                format!("apidiscovery.k8s.io/{version}"),
                "APIGroupDiscoveryList".to_owned()
            )
        );
        let apps = all(&list, 2)
            .into_iter()
            .find(|group| text(&one(group, 1), 1) == "apps")
            .unwrap();
        let v1 = one(&apps, 2);
        assert_eq!(text(&v1, 1), "v1");
        assert_eq!(text(&v1, 3), "Current");
        let deployments = all(&v1, 2)
            .into_iter()
            .find(|r| text(r, 1) == "deployments")
            .unwrap();
        let kind = one(&deployments, 2);
        assert_eq!(
            (text(&kind, 1), text(&kind, 2), text(&kind, 3)),
            ("apps".to_owned(), "v1".to_owned(), "Deployment".to_owned())
        );
        assert_eq!(text(&deployments, 3), "Namespaced");
        assert_eq!(text(&deployments, 4), "deployment");
        assert!(strings(&deployments, 5).contains(&"list".to_owned()));
    }
    // The core group on /api, its group name empty.
    let media = format!("{PROTOBUF};g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
    let answer = get(&h, "/api", &media).await;
    let (_, list) = unwrap_envelope(&answer.body);
    let core = one(&list, 2);
    assert_eq!(text(&one(&core, 2), 1), "v1");

    let mut registry = Registry::new();
    registry.register::<Deployment>();
    let old = Harness::in_temp_dir(
        support::store_options(),
        support::builder(registry, KubeVersion::new(1, 20)),
    )
    .await;
    let refused = get(&old, "/apis", &media).await;
    assert_eq!(refused.code(), 406);
    // Plain protobuf is served there too.
    let plain = get(&old, "/apis", PROTOBUF).await;
    assert_eq!(unwrap_envelope(&plain.body).0.1, "APIGroupList");
}
