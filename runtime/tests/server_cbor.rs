//! CBOR behind `CBORServingAndStorage`: answers, lists, `Status` errors, watches and request
//! bodies of built-in and custom kinds in `application/cbor`, read back item by item, and the
//! 406 and 415 of a server whose gate is off (or whose release has no such gate).
//!
//! Upstream mirrored: k8s.io/apimachinery `pkg/runtime/serializer/cbor` (every data item
//! enclosed in the self-described tag 55799, `cbor.go`; strings and field names as byte
//! strings, `[]byte` in tag 22, `internal/modes/encode.go`; RFC 8742 sequences for streams,
//! `framer.go`), k8s.io/apiserver's negotiation (`NegotiateOutputMediaType*`,
//! `MediaTypesForSerializer`: watches answered as `application/cbor-seq`, the CBOR serializer
//! appended to the supported types when the gate is on), its `AllowsMediaTypeTransform` (a
//! `Table` in JSON or YAML only), `installer.go` and `customresource_handler.go` (apply patches
//! in `application/apply-patch+cbor` with the gate on, for built-ins and custom resources).
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use kapi::meta::ObjectMeta;
use kapi::server::{FeatureGates, Features};
use kapi::type_tag::{ApiVersion, Kind};
use kapi::{KubeVersion, Registry};
use minicbor::data::{Tag, Type};
use minicbor::{Decoder, Encoder};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use support::kinds::{WIDGETS, Widget};
use support::{Answer, Harness};

mod support;

const CBOR: &str = "application/cbor";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";

/// A Secret as far as these tests need it: `data` holds base64 in JSON, Go `[]byte` upstream.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "Secret", namespaced)]
struct Secret {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion<Self>,
    kind: Kind<Self>,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "type")]
    type_: Option<String>,
}

async fn harness(minor: u16, gates: &str) -> Harness {
    let mut registry = Registry::new();
    registry.register::<Secret>().register::<Widget>();
    let version = KubeVersion::new(1, minor);
    let features = Features::for_release(version, &FeatureGates::parse(gates).unwrap()).unwrap();
    let builder = support::builder(registry, version).features(features);
    Harness::in_temp_dir(support::store_options(), builder).await
}

/// A decoded CBOR data item that keeps what JSON loses: byte against text strings, tags.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Int(i64),
    Float(f64),
    Bool(bool),
    Null,
    Bytes(Vec<u8>),
    Text(String),
    Tagged(u64, Box<Item>),
    Array(Vec<Item>),
    Map(Vec<(Item, Item)>),
}

impl Item {
    fn read(d: &mut Decoder<'_>) -> Item {
        match d.datatype().unwrap() {
            Type::Bool => Item::Bool(d.bool().unwrap()),
            Type::Null => {
                d.null().unwrap();
                Item::Null
            }
            Type::U8 | Type::U16 | Type::U32 | Type::U64 => Item::Int(d.u64().unwrap() as i64),
            Type::I8 | Type::I16 | Type::I32 | Type::I64 => Item::Int(d.i64().unwrap()),
            Type::F32 => Item::Float(f64::from(d.f32().unwrap())),
            Type::F64 => Item::Float(d.f64().unwrap()),
            Type::Bytes => Item::Bytes(d.bytes().unwrap().to_vec()),
            Type::String => Item::Text(d.str().unwrap().to_owned()),
            Type::Tag => {
                let tag = d.tag().unwrap().as_u64();
                Item::Tagged(tag, Box::new(Item::read(d)))
            }
            Type::Array => {
                let len = d.array().unwrap().unwrap();
                Item::Array((0..len).map(|_| Item::read(d)).collect())
            }
            Type::Map => {
                let len = d.map().unwrap().unwrap();
                Item::Map((0..len).map(|_| (Item::read(d), Item::read(d))).collect())
            }
            other => panic!("unexpected {other} in an answer"),
        }
    }

    /// One whole body: the self-described tag around one item, nothing after it.
    fn body(bytes: &[u8]) -> Item {
        assert!(bytes.starts_with(&[0xd9, 0xd9, 0xf7]), "{bytes:02x?}");
        let mut d = Decoder::new(bytes);
        let item = Item::read(&mut d);
        assert_eq!(d.position(), bytes.len());
        match item {
            Item::Tagged(55799, inner) => *inner,
            other => panic!("not self-described: {other:?}"),
        }
    }

    /// The value under byte-string key `key` of a map.
    fn get(&self, key: &str) -> &Item {
        let Item::Map(entries) = self else {
            panic!("not a map: {self:?}")
        };
        entries
            .iter()
            .find(|(k, _)| *k == Item::Bytes(key.as_bytes().to_vec()))
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no {key} in {self:?}"))
    }

    fn text(&self) -> String {
        match self {
            Item::Bytes(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("not a byte string: {other:?}"),
        }
    }
}

/// `value` in CBOR the way client-go's CBOR serializer sends it: self-described, strings as
/// byte strings, and each `bytes` key's value (a `[]byte` field) raw in tag 22.
fn client_body(value: &Value, bytes: &[&str]) -> Vec<u8> {
    fn write(e: &mut Encoder<&mut Vec<u8>>, value: &Value, raw: bool) {
        match value {
            Value::Null => drop(e.null().unwrap()),
            Value::Bool(b) => drop(e.bool(*b).unwrap()),
            Value::Number(n) => drop(e.i64(n.as_i64().unwrap()).unwrap()),
            Value::String(s) if raw => {
                e.tag(Tag::new(22)).unwrap().bytes(s.as_bytes()).unwrap();
            }
            Value::String(s) => drop(e.bytes(s.as_bytes()).unwrap()),
            Value::Array(items) => {
                e.array(items.len() as u64).unwrap();
                items.iter().for_each(|item| write(e, item, false));
            }
            Value::Object(map) => {
                e.map(map.len() as u64).unwrap();
                for (key, item) in map {
                    e.bytes(key.as_bytes()).unwrap();
                    write(e, item, raw);
                }
            }
        }
    }
    let mut out = vec![0xd9, 0xd9, 0xf7];
    let mut e = Encoder::new(&mut out);
    let Value::Object(map) = value else { panic!() };
    e.map(map.len() as u64).unwrap();
    for (key, item) in map {
        e.bytes(key.as_bytes()).unwrap();
        write(&mut e, item, bytes.contains(&key.as_str()));
    }
    out
}

/// A GET asking for `accept`.
async fn get(h: &Harness, uri: &str, accept: &str) -> Answer {
    h.exchange("GET", uri, &[("accept", accept)], Vec::new())
        .await
}

/// A write of `body` under `content_type`.
async fn send(h: &Harness, method: &str, uri: &str, content_type: &str, body: Vec<u8>) -> Answer {
    h.exchange(method, uri, &[("content-type", content_type)], body)
        .await
}

fn content_type(answer: &Answer) -> &str {
    answer.headers["content-type"].to_str().unwrap()
}

/// With the gate off (its default in 1.34) or absent (1.28), CBOR is a type the server does
/// not know: 406 and 415 list JSON, YAML and protobuf only, as upstream's lists do then.
#[tokio::test]
async fn without_the_gate_cbor_is_unknown() {
    for minor in [28, 34] {
        let h = harness(minor, "").await;
        let get = get(&h, SECRETS, CBOR).await;
        assert_eq!(get.code(), 406, "1.{minor}");
        assert_eq!(
            get.json()["message"],
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let body = client_body(
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
            &[],
        );
        let post = send(&h, "POST", SECRETS, CBOR, body).await;
        assert_eq!(post.code(), 415, "1.{minor}");
        assert_eq!(
            post.json()["message"],
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let apply = send(
            &h,
            "PATCH",
            &format!("{SECRETS}/s?fieldManager=m"),
            "application/apply-patch+cbor",
            b"\xa0".to_vec(),
        )
        .await;
        assert_eq!(apply.code(), 415);
        assert!(!apply.json()["message"].as_str().unwrap().contains("cbor"));
    }
}

/// With the gate on: a Secret created from a CBOR body (its `data` raw bytes in tag 22, as
/// client-go writes `[]byte`), read back in CBOR with the same encoding, in JSON as base64;
/// lists and errors in CBOR; 406 listing CBOR last; a `Table` never in CBOR.
#[tokio::test]
async fn built_in_objects_lists_and_errors_in_cbor() {
    let h = harness(34, "CBORServingAndStorage=true").await;
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"key": "hello"},
        "type": "Opaque",
    });
    let created = h
        .exchange(
            "POST",
            SECRETS,
            &[("content-type", CBOR), ("accept", CBOR)],
            client_body(&secret, &["data"]),
        )
        .await;
    assert_eq!(
        created.code(),
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(content_type(&created), CBOR);
    let item = Item::body(&created.body);
    assert_eq!(item.get("kind").text(), "Secret");
    assert_eq!(item.get("metadata").get("name").text(), "s");
    assert_eq!(
        *item.get("data").get("key"),
        Item::Tagged(22, Box::new(Item::Bytes(b"hello".to_vec())))
    );
    // JSON has the bytes as base64, as upstream's JSON serializer writes []byte.
    let json = h.ok("GET", &format!("{SECRETS}/s"), None).await;
    assert_eq!(json["data"]["key"], "aGVsbG8=");

    let list = get(&h, SECRETS, CBOR).await;
    assert_eq!(list.code(), 200);
    let list = Item::body(&list.body);
    assert_eq!(list.get("kind").text(), "SecretList");
    let Item::Array(items) = list.get("items") else {
        panic!()
    };
    assert_eq!(items.len(), 1);
    assert_eq!(
        *items[0].get("data").get("key"),
        Item::Tagged(22, Box::new(Item::Bytes(b"hello".to_vec())))
    );

    // A failure is a Status in CBOR for a client that asked for CBOR first.
    let missing = get(
        &h,
        &format!("{SECRETS}/nope"),
        "application/cbor, application/json",
    )
    .await;
    assert_eq!(missing.code(), 404);
    assert_eq!(content_type(&missing), CBOR);
    let status = Item::body(&missing.body);
    assert_eq!(status.get("kind").text(), "Status");
    assert_eq!(status.get("reason").text(), "NotFound");
    assert_eq!(*status.get("code"), Item::Int(404));

    // 406 lists CBOR after the others.
    let refused = get(&h, SECRETS, "text/plain").await;
    assert_eq!(refused.code(), 406);
    assert_eq!(
        refused.json()["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/cbor"
    );
    // A Table is JSON or YAML only (`AllowsMediaTypeTransform`); PartialObjectMetadata any.
    let table = get(
        &h,
        SECRETS,
        "application/cbor;as=Table;g=meta.k8s.io;v=v1, application/json",
    )
    .await;
    assert_eq!(content_type(&table), "application/json");
    assert_eq!(table.json()["kind"], "SecretList");
    let partial = get(
        &h,
        &format!("{SECRETS}/s"),
        "application/cbor;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(partial.code(), 200);
    let partial = Item::body(&partial.body);
    assert_eq!(partial.get("kind").text(), "PartialObjectMetadata");

    // An update from a CBOR body.
    let mut changed = json.clone();
    changed["data"] = json!({"key": "bye"});
    let updated = send(
        &h,
        "PUT",
        &format!("{SECRETS}/s"),
        CBOR,
        client_body(&changed, &["data"]),
    )
    .await;
    assert_eq!(updated.code(), 200, "{}", updated.text());
    assert_eq!(updated.json()["data"]["key"], "Ynll");
}

/// What upstream's decoder refuses is a 400 with its message; other types are 415 with CBOR
/// listed last.
#[tokio::test]
async fn bodies_cbor_refuses() {
    let h = harness(36, "CBORServingAndStorage=true").await;
    let duplicate = vec![
        0xa2, 0x64, b'k', b'i', b'n', b'd', 0x61, b'a', 0x44, b'k', b'i', b'n', b'd', 0x61, b'b',
    ];
    let post = send(&h, "POST", SECRETS, CBOR, duplicate).await;
    assert_eq!(post.code(), 400);
    assert_eq!(
        post.json()["message"],
        "cbor: found duplicate map key \"kind\" at map element index 1"
    );
    let trailing = send(&h, "POST", SECRETS, CBOR, vec![0xa0, 0xa0]).await;
    assert_eq!(trailing.code(), 400);
    assert_eq!(
        trailing.json()["message"],
        "cbor: 1 bytes of extraneous data starting at index 1"
    );
    // Not a map: upstream's reading of the kind (`metav1.TypeMeta`) fails first.
    let array = send(&h, "POST", SECRETS, CBOR, vec![0xd9, 0xd9, 0xf7, 0x80]).await;
    assert_eq!(array.code(), 400);
    assert_eq!(
        array.json()["message"],
        "unable to determine group/version/kind: cbor: cannot unmarshal array into Go value of type v1.TypeMeta"
    );
    let text = send(&h, "POST", SECRETS, "text/plain", b"{}".to_vec()).await;
    assert_eq!(text.code(), 415);
    assert_eq!(
        text.json()["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/cbor"
    );
    let patch = send(
        &h,
        "PATCH",
        &format!("{SECRETS}/s"),
        "text/plain",
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(patch.code(), 415);
    assert!(
        patch.json()["message"]
            .as_str()
            .unwrap()
            .ends_with("application/apply-patch+yaml, application/apply-patch+cbor"),
        "{}",
        patch.text()
    );
}

/// A watch that accepts `application/cbor` is answered as `application/cbor-seq`: one
/// self-described `{type, object}` item per event, the object self-described too.
#[tokio::test]
async fn watches_are_cbor_sequences() {
    let h = harness(34, "CBORServingAndStorage=true").await;
    let mut watch = h
        .watch(
            &format!("{SECRETS}?watch=true&resourceVersion=0"),
            Some(CBOR),
        )
        .await;
    h.ok(
        "POST",
        SECRETS,
        Some(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "w"}, "data": {"k": "AAE="}})),
    )
    .await;
    h.ok("DELETE", &format!("{SECRETS}/w"), None).await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        let bytes = watch.next_item().await.expect("a watch event");
        let event = Item::body(&bytes);
        let Item::Tagged(55799, object) = event.get("object") else {
            panic!("the object is not self-described: {event:?}")
        };
        assert_eq!(
            *object.get("data").get("k"),
            Item::Tagged(22, Box::new(Item::Bytes(vec![0, 1])))
        );
        seen.push((
            event.get("type").text(),
            object.get("metadata").get("name").text(),
        ));
    }
    assert_eq!(
        seen,
        [("ADDED".into(), "w".into()), ("DELETED".into(), "w".into())]
    );
    let answer = h
        .request(
            axum::http::Request::builder()
                .uri(format!("{SECRETS}?watch=true&timeoutSeconds=1"))
                .header("accept", CBOR)
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(answer.headers()["content-type"], "application/cbor-seq");
    // `application/cbor-seq` is no serializer's media type: not acceptable as such.
    let seq = get(&h, &format!("{SECRETS}?watch=true"), "application/cbor-seq").await;
    assert_eq!(seq.code(), 406);
    // A watch that prefers YAML, which has no stream form, is refused with the stream types
    // (`NegotiateOutputMediaTypeStream`).
    let yaml = get(
        &h,
        &format!("{SECRETS}?watch=true"),
        "application/yaml, application/json",
    )
    .await;
    assert_eq!(yaml.code(), 406);
    // The Status itself in YAML, the error format the client asked for first.
    assert!(
        yaml.text().contains(
            "message: 'only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch, application/cbor-seq'"
        ),
        "{}",
        yaml.text()
    );
}

/// Custom resources are served in CBOR too (their handler keeps every serializer but protobuf),
/// and server-side apply takes `application/apply-patch+cbor`.
#[tokio::test]
async fn custom_resources_and_apply_in_cbor() {
    let h = harness(36, "CBORServingAndStorage=true").await;
    let widget = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 3, "colour": "red"},
    });
    let created = h
        .exchange(
            "POST",
            WIDGETS,
            &[("content-type", CBOR), ("accept", CBOR)],
            client_body(&widget, &[]),
        )
        .await;
    assert_eq!(
        created.code(),
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let item = Item::body(&created.body);
    assert_eq!(item.get("spec").get("colour").text(), "red");
    assert_eq!(*item.get("spec").get("size"), Item::Int(3));

    let applied = send(&h, "PATCH", &format!("{WIDGETS}/w?fieldManager=tester&force=true"), "application/apply-patch+cbor", client_body(
                &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 4}}),
                &[],
            )).await;
    assert_eq!(applied.code(), 200, "{}", applied.text());
    let applied = applied.json();
    assert_eq!(applied["spec"]["size"], 4);
    let managers: Vec<&str> = applied["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert!(managers.contains(&"tester"), "{managers:?}");
}

/// The discovery documents in CBOR with the gate on, as upstream's discovery handlers' codec
/// factories gain the CBOR serializer with it (k8s.io/apiserver `aggregated/wrapper.go` and
/// `handler.go`; kube-aggregator `apiserver.go` for `/apis` and `/apis/<group>`): the legacy
/// documents for `application/cbor` (`/api` without `apiVersion`, as the
/// `stripVersionEncoder` writes it), the aggregated one for
/// `application/cbor;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, its kind in the
/// `Content-Type`. Without the gate, CBOR is not among the types a 406 lists.
#[tokio::test]
async fn discovery_documents_in_cbor() {
    let h = harness(34, "CBORServingAndStorage=true").await;
    let api = get(&h, "/api", CBOR).await;
    assert_eq!(api.code(), 200);
    assert_eq!(content_type(&api), CBOR);
    let item = Item::body(&api.body);
    assert_eq!(item.get("kind").text(), "APIVersions");
    assert_eq!(
        *item.get("versions"),
        Item::Array(vec![Item::Bytes(b"v1".to_vec())])
    );
    let Item::Map(entries) = &item else { panic!() };
    assert!(
        !entries
            .iter()
            .any(|(k, _)| *k == Item::Bytes(b"apiVersion".to_vec()))
    );

    for (path, kind) in [
        ("/apis", "APIGroupList"),
        ("/apis/example.com", "APIGroup"),
        ("/apis/example.com/v1", "APIResourceList"),
    ] {
        let answer = get(&h, path, CBOR).await;
        assert_eq!(content_type(&answer), CBOR, "{path}");
        let item = Item::body(&answer.body);
        assert_eq!(item.get("kind").text(), kind);
        assert_eq!(item.get("apiVersion").text(), "v1");
    }

    let aggregated = "application/cbor;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let answer = get(&h, "/apis", aggregated).await;
    assert_eq!(content_type(&answer), aggregated);
    let item = Item::body(&answer.body);
    assert_eq!(item.get("kind").text(), "APIGroupDiscoveryList");
    assert_eq!(item.get("apiVersion").text(), "apidiscovery.k8s.io/v2");

    let refused = get(&h, "/apis/example.com/v1", "text/html").await;
    assert_eq!(refused.code(), 406);
    assert_eq!(
        refused.value()["message"],
        "only the following media types are accepted: application/json, application/yaml, \
         application/vnd.kubernetes.protobuf, application/cbor"
    );

    let off = harness(34, "").await;
    let refused = get(&off, "/apis", CBOR).await;
    assert_eq!(refused.code(), 406);
    assert_eq!(
        refused.value()["message"],
        "only the following media types are accepted: application/json, application/yaml, \
         application/vnd.kubernetes.protobuf"
    );
}
