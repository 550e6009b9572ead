//! Hand-built protobuf bodies decoded to the JSON upstream writes for the same objects.

use serde_json::{Value, json};

use super::decode::Decoder;
use super::table::Table;
use super::wire::{Payload, Reader, Writer};
use super::{ProtoError, decode, encode, transcode, watch_frame};

/// A protobuf message under construction.
#[derive(Default, Clone)]
struct Msg(Vec<u8>);

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

impl Msg {
    fn new() -> Self {
        Self::default()
    }
    fn tag(&mut self, n: u32, wire: u8) {
        varint(&mut self.0, u64::from(n) << 3 | u64::from(wire));
    }
    fn int(mut self, n: u32, v: i64) -> Self {
        self.tag(n, 0);
        varint(&mut self.0, v as u64);
        self
    }
    fn double(mut self, n: u32, v: f64) -> Self {
        self.tag(n, 1);
        self.0.extend_from_slice(&v.to_bits().to_le_bytes());
        self
    }
    fn bytes(mut self, n: u32, v: &[u8]) -> Self {
        self.tag(n, 2);
        varint(&mut self.0, v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }
    fn str(self, n: u32, v: &str) -> Self {
        self.bytes(n, v.as_bytes())
    }
    fn msg(self, n: u32, v: Msg) -> Self {
        self.bytes(n, &v.0)
    }
    fn entry(self, n: u32, key: &str, value: Msg) -> Self {
        self.msg(n, Msg::new().str(1, key).bytes(2, &value.0))
    }
    fn entry_str(self, n: u32, key: &str, value: &str) -> Self {
        self.msg(n, Msg::new().str(1, key).str(2, value))
    }
}

fn envelope(api_version: &str, kind: &str, raw: Msg) -> Vec<u8> {
    let mut out = b"k8s\0".to_vec();
    // Go writes the empty contentEncoding and contentType too.
    let unknown = Msg::new()
        .msg(1, Msg::new().str(1, api_version).str(2, kind))
        .msg(2, raw)
        .str(3, "")
        .str(4, "");
    out.extend_from_slice(&unknown.0);
    out
}

/// ObjectMeta as Go writes it: every non-pointer field present, empty or zero.
fn object_meta(name: &str, namespace: &str) -> Msg {
    Msg::new()
        .str(1, name)
        .str(2, "")
        .str(3, namespace)
        .str(4, "")
        .str(5, "")
        .str(6, "")
        .int(7, 0)
        .msg(8, Msg::new())
}

fn config_map() -> Vec<u8> {
    envelope(
        "v1",
        "ConfigMap",
        Msg::new()
            .msg(1, object_meta("x", "").entry_str(11, "app", "web"))
            .entry_str(2, "a", "b")
            .entry_str(2, "c", "")
            .entry(3, "bin", Msg(vec![0, 1, 2])),
    )
}

fn decoded(body: &[u8]) -> Value {
    decode(body).unwrap()
}

#[test]
fn config_map_decodes_as_json() {
    assert_eq!(
        decoded(&config_map()),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "x", "creationTimestamp": null, "labels": {"app": "web"}},
            "data": {"a": "b", "c": ""},
            "binaryData": {"bin": "AAEC"},
        })
    );
}

#[test]
fn deployment_with_int_or_string_and_quantity() {
    let container = Msg::new()
        .str(1, "web")
        .str(2, "nginx")
        .str(5, "")
        .msg(6, Msg::new().int(3, 80).str(4, "TCP").int(2, 0))
        .msg(
            8,
            Msg::new().entry(1, "cpu", Msg::new().str(1, "500m")).entry(
                2,
                "memory",
                Msg::new().str(1, "64Mi"),
            ),
        )
        .int(16, 0);
    let spec = Msg::new()
        .int(1, 0) // replicas: a pointer, so zero is meaningful
        .msg(
            2,
            Msg::new().entry_str(1, "app", "web"), // selector.matchLabels
        )
        .msg(
            3,
            Msg::new()
                .msg(1, object_meta("", "").entry_str(11, "app", "web"))
                .msg(2, Msg::new().msg(2, container)),
        )
        .msg(
            4,
            Msg::new().str(1, "RollingUpdate").msg(
                2,
                Msg::new()
                    .msg(1, Msg::new().int(1, 0).int(2, 1)) // maxUnavailable: 1
                    .msg(2, Msg::new().int(1, 1).str(3, "25%")), // maxSurge: "25%"
            ),
        )
        .int(5, 0)
        .int(6, 10);
    let meta = object_meta("web", "default").msg(8, Msg::new().int(1, 1_700_000_000));
    let body = envelope(
        "apps/v1",
        "Deployment",
        Msg::new().msg(1, meta).msg(2, spec).msg(3, Msg::new()),
    );
    assert_eq!(
        decoded(&body),
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "default",
                "creationTimestamp": "2023-11-14T22:13:20Z",
            },
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                    "spec": {"containers": [{
                        "name": "web",
                        "image": "nginx",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}},
                    }]},
                },
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"},
                },
                "revisionHistoryLimit": 10,
            },
            "status": {},
        })
    );
}

#[test]
fn delete_options() {
    let options = Msg::new()
        .int(1, 0)
        .msg(2, Msg::new().str(1, "uid-1"))
        .str(4, "Foreground")
        .str(5, "All");
    for api_version in ["v1", "meta.k8s.io/v1", "apps/v1"] {
        let body = envelope(api_version, "DeleteOptions", options.clone());
        assert_eq!(
            decoded(&body),
            json!({
                "apiVersion": api_version,
                "kind": "DeleteOptions",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "uid-1"},
                "propagationPolicy": "Foreground",
                "dryRun": ["All"],
            })
        );
    }
}

#[test]
fn scalars_times_and_lists() {
    // supplementalGroups (repeated int64), packed and unpacked in one message, and a
    // negative runAsUser.
    let mut packed = Vec::new();
    for v in [1u64, 300] {
        varint(&mut packed, v);
    }
    let security = Msg::new().bytes(4, &packed).int(4, 7).int(2, -1).int(3, 1);
    let pod = Msg::new()
        .msg(1, object_meta("p", ""))
        .msg(2, Msg::new().msg(14, security));
    let body = envelope("v1", "Pod", pod);
    assert_eq!(
        decoded(&body)["spec"]["securityContext"],
        json!({"supplementalGroups": [1, 300, 7], "runAsUser": -1, "runAsNonRoot": true})
    );

    // A lease: MicroTime, and a duration-free int32.
    let lease = Msg::new().msg(1, object_meta("l", "")).msg(
        2,
        Msg::new()
            .str(1, "me")
            .int(2, 15)
            .msg(4, Msg::new().int(1, 1_700_000_000).int(2, 123_456_789)),
    );
    assert_eq!(
        decoded(&envelope("coordination.k8s.io/v1", "Lease", lease))["spec"],
        json!({
            "holderIdentity": "me",
            "leaseDurationSeconds": 15,
            "renewTime": "2023-11-14T22:13:20.123456Z",
        })
    );
}

/// Field numbers the table lacks are left out of the object wherever they sit, as upstream's
/// protobuf decoding drops them.
#[test]
fn unknown_fields_are_skipped() {
    let container = |unknown: u32| Msg::new().str(1, "web").str(unknown, "new");
    let pod_spec = Msg::new()
        .msg(2, container(900))
        .msg(2, container(901))
        .int(902, 1);
    let deployment = envelope(
        "apps/v1",
        "Deployment",
        Msg::new()
            .msg(
                1,
                object_meta("d", "").int(903, 1).entry_str(11, "app", "web"),
            )
            .msg(
                2,
                Msg::new()
                    .int(1, 0)
                    .msg(3, Msg::new().msg(2, pod_spec))
                    .double(904, 1.5),
            )
            .str(905, "top"),
    );
    // A map value (ResourceSlice device attributes) and an inline struct (a
    // NamedRuleWithOperations's embedded RuleWithOperations and Rule).
    let slice = envelope(
        "resource.k8s.io/v1",
        "ResourceSlice",
        Msg::new().msg(
            2,
            Msg::new().msg(
                6,
                Msg::new()
                    .str(1, "gpu")
                    .entry(2, "model", Msg::new().str(4, "a100").int(906, 1)),
            ),
        ),
    );
    let policy_rules = envelope(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        Msg::new().msg(
            2,
            Msg::new().msg(
                2,
                Msg::new().msg(
                    3,
                    Msg::new().msg(2, Msg::new().msg(2, Msg::new().str(4, "*").int(907, 1))),
                ),
            ),
        ),
    );
    assert_eq!(
        decoded(&policy_rules)["spec"]["matchConstraints"]["resourceRules"][0],
        json!({"scope": "*"})
    );
    let value = decoded(&deployment);
    assert_eq!(
        value["metadata"],
        json!({"name": "d", "creationTimestamp": null, "labels": {"app": "web"}})
    );
    assert_eq!(
        value["spec"]["template"]["spec"]["containers"],
        json!([{"name": "web"}, {"name": "web"}])
    );
    assert_eq!(
        decoded(&slice)["spec"]["devices"][0]["attributes"],
        json!({"model": {"string": "a100"}})
    );
}

/// Any number of unknown fields costs nothing but reading past them.
#[test]
fn many_unknown_fields_are_skipped() {
    let mut object = Msg::new();
    for n in 0..10_000u32 {
        object = object.int(1000 + n, 1);
    }
    let body = envelope("v1", "ConfigMap", object);
    assert_eq!(
        decoded(&body),
        json!({"apiVersion": "v1", "kind": "ConfigMap"})
    );
}

/// A map entry without its value (Go leaves out nothing, but other writers may) is the value
/// kind's zero value, as Go's decoder reads it; without its key, the empty key.
#[test]
fn map_entries_without_a_value_are_zero() {
    let table = Table::parse(
        "@test\nHolder\n1 b %b\n2 i %i\n3 l %l\n4 d %d\n5 s %s\n6 y %y\n7 q %q\n8 m %mInner\n9 t %t\nInner\n1 x s\n",
    );
    let mut holder = Msg::new();
    for n in 1..=9 {
        holder = holder.msg(n, Msg::new().str(1, "k"));
    }
    let holder = holder.msg(5, Msg::new().str(2, "no key"));
    let name = ("test", "Holder");
    let mut decoder = Decoder::new(&table);
    let value = decoder
        .message(&table.messages[&name], name, &holder.0, 0)
        .unwrap();
    assert_eq!(
        Value::Object(value),
        json!({
            "b": {"k": false},
            "i": {"k": 0},
            "l": {"k": 0},
            "d": {"k": 0.0},
            "s": {"k": "", "": "no key"},
            "y": {"k": ""},
            "q": {"k": "0"},
            "m": {"k": {}},
            "t": {"k": null},
        })
    );
}

#[test]
fn unknown_kinds_and_bad_envelopes() {
    let widget = envelope("widgets.kapi.dev/v1", "Widget", Msg::new());
    assert_eq!(
        decode(&widget).unwrap_err(),
        ProtoError::UnknownKind {
            api_version: "widgets.kapi.dev/v1".into(),
            kind: "Widget".into()
        }
    );
    let mut gzip = b"k8s\0".to_vec();
    gzip.extend(
        Msg::new()
            .msg(1, Msg::new().str(1, "v1").str(2, "ConfigMap"))
            .str(3, "gzip")
            .0,
    );
    let no_type = {
        let mut body = b"k8s\0".to_vec();
        body.extend(Msg::new().msg(2, Msg::new()).0);
        body
    };
    let wrong_wire = envelope("v1", "ConfigMap", Msg::new().int(1, 5));
    let bad_utf8 = envelope("v1", "ConfigMap", Msg::new().entry(2, "a", Msg(vec![0xff])));
    let bad_time = envelope(
        "v1",
        "ConfigMap",
        Msg::new().msg(1, Msg::new().msg(8, Msg::new().int(1, i64::MAX))),
    );
    let nan = envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        Msg::new().msg(
            2,
            Msg::new().msg(
                7,
                Msg::new().msg(4, Msg::new().msg(1, Msg::new().double(9, f64::NAN))),
            ),
        ),
    );
    for (what, body) in [
        ("no magic", b"{}".to_vec()),
        ("magic only", b"k8s\0".to_vec()),
        ("gzip", gzip),
        ("no type", no_type),
        ("wrong wire type", wrong_wire),
        ("bad utf-8", bad_utf8),
        ("bad time", bad_time),
        ("nan", nan),
    ] {
        assert!(
            matches!(decode(&body), Err(ProtoError::Malformed(_))),
            "{what}: {:?}",
            decode(&body)
        );
    }
}

/// Every truncation and many single-byte corruptions of real bodies end in a value or a
/// `Malformed` error, never a panic.
#[test]
fn truncated_and_corrupted_input() {
    let bodies = [config_map(), {
        let spec = Msg::new().msg(
            4,
            Msg::new().msg(2, Msg::new().msg(2, Msg::new().int(1, 1))),
        );
        envelope("apps/v1", "Deployment", Msg::new().msg(2, spec))
    }];
    for body in &bodies {
        assert!(decode(body).is_ok());
        for cut in 0..body.len() {
            match decode(&body[..cut]) {
                Ok(_) | Err(ProtoError::Malformed(_)) => {}
                Err(e) => panic!("cut at {cut}: {e:?}"),
            }
        }
        for i in 0..body.len() {
            for byte in [0x00, 0x7f, 0x80, 0xff, 0x0a, 0x12] {
                let mut corrupt = body.clone();
                corrupt[i] = byte;
                let _ = decode(&corrupt);
            }
        }
    }
    // Strict prefixes of the envelope cut the message short: those must fail.
    let body = config_map();
    assert!(decode(&body[..body.len() - 1]).is_err());
}

#[test]
fn deep_nesting_is_refused() {
    // JSONSchemaProps.not (28) nested far past the limit.
    let mut schema = Msg::new().str(5, "string");
    for _ in 0..500 {
        schema = Msg::new().msg(28, schema);
    }
    let crd = Msg::new().msg(
        2,
        Msg::new().msg(7, Msg::new().str(1, "v1").msg(4, Msg::new().msg(1, schema))),
    );
    let body = envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd);
    assert!(matches!(decode(&body), Err(ProtoError::Malformed(m)) if m.contains("nesting")));
}

#[test]
fn json_schema_unions() {
    let props = |inner: Msg| {
        let crd = Msg::new().msg(
            2,
            Msg::new().msg(7, Msg::new().str(1, "v1").msg(4, Msg::new().msg(1, inner))),
        );
        decoded(&envelope(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            crd,
        ))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            .clone()
    };
    let string = || Msg::new().str(5, "string").str(4, "");
    assert_eq!(
        props(
            Msg::new()
                .str(5, "object")
                .entry(29, "a", string())
                .msg(30, Msg::new().int(1, 0))
                .msg(24, Msg::new().msg(1, string()))
                .msg(8, Msg::new().bytes(1, br#"{"x":1}"#))
                .int(38, 1)
        ),
        json!({
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": false,
            "items": {"type": "string"},
            "default": {"x": 1},
            "x-kubernetes-preserve-unknown-fields": true,
        })
    );
    assert_eq!(
        props(
            Msg::new()
                .msg(30, Msg::new().msg(2, string()))
                .msg(24, Msg::new().msg(2, string()).msg(2, string()))
        ),
        json!({
            "additionalProperties": {"type": "string"},
            "items": [{"type": "string"}, {"type": "string"}],
        })
    );
}

/// A value field's zero is Go's "unset" and left out; a pointer's explicit zero is kept.
#[test]
fn zero_values_follow_go_pointers() {
    let event = envelope(
        "v1",
        "Event",
        Msg::new()
            .msg(1, object_meta("e", ""))
            .str(3, "")
            .int(8, 0)
            .str(9, "Normal"),
    );
    let value = decoded(&event);
    assert_eq!(value.get("count"), None);
    assert_eq!(value.get("reason"), None);
    assert_eq!(value["type"], json!("Normal"));

    let container = Msg::new()
        .str(1, "web")
        .int(16, 0)
        .msg(15, Msg::new().int(4, 0).int(7, 0));
    let deployment = envelope(
        "apps/v1",
        "Deployment",
        Msg::new().msg(
            2,
            Msg::new()
                .int(1, 0)
                .int(5, 0)
                .msg(3, Msg::new().msg(2, Msg::new().msg(2, container))),
        ),
    );
    let spec = decoded(&deployment)["spec"].clone();
    assert_eq!(spec["replicas"], json!(0));
    assert_eq!(spec.get("minReadySeconds"), None);
    assert_eq!(
        spec["template"]["spec"]["containers"][0],
        json!({"name": "web", "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": false}})
    );
}

/// What `encode` writes reads back as the same JSON.
fn round_trip(value: &Value) -> Vec<u8> {
    let bytes = encode(value).unwrap();
    assert_eq!(&decoded(&bytes), value);
    bytes
}

/// The fields present, in number order, the envelope as Go writes it; absent fields are not
/// written (a pointer's absence is not a zero, and Go reads a missing value field as zero).
#[test]
fn config_map_encodes_as_upstream_reads_it() {
    let value = decoded(&config_map());
    let bytes = round_trip(&value);
    let want = envelope(
        "v1",
        "ConfigMap",
        Msg::new()
            .msg(
                1,
                // The unset creationTimestamp is Go's zero Time: an empty message.
                Msg::new()
                    .str(1, "x")
                    .msg(8, Msg::new())
                    .entry_str(11, "app", "web"),
            )
            .entry_str(2, "a", "b")
            .entry_str(2, "c", "")
            .entry(3, "bin", Msg(vec![0, 1, 2])),
    );
    assert_eq!(bytes, want);
}

#[test]
fn map_keys_are_sorted_as_go_writes_them() {
    let value = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "m"},
        "data": {"b": "2", "a": "1", "c": "3"},
    });
    let want = envelope(
        "v1",
        "ConfigMap",
        Msg::new()
            .msg(1, Msg::new().str(1, "m"))
            .entry_str(2, "a", "1")
            .entry_str(2, "b", "2")
            .entry_str(2, "c", "3"),
    );
    assert_eq!(encode(&value).unwrap(), want);
}

#[test]
fn deployment_round_trips_with_every_value_kind() {
    let value = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "generation": 3,
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "managedFields": [{
                "manager": "kubectl",
                "operation": "Update",
                "apiVersion": "apps/v1",
                "time": "2023-11-14T22:13:20Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:replicas": {}}},
            }],
        },
        "spec": {
            "replicas": 0,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{
                        "name": "web",
                        "image": "nginx",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {"limits": {"cpu": "500m"}, "requests": {"memory": "64Mi"}},
                        "securityContext": {"runAsUser": -1, "allowPrivilegeEscalation": false},
                    }],
                    "terminationGracePeriodSeconds": 30,
                },
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"},
            },
            "revisionHistoryLimit": 10,
        },
        "status": {"conditions": [{
            "type": "Available",
            "status": "True",
            "lastUpdateTime": "2023-11-14T22:13:21Z",
        }]},
    });
    let bytes = round_trip(&value);
    // IntOrString as Go writes it: type, intVal and strVal, all three.
    let max_unavailable = Msg::new().int(1, 0).int(2, 1).str(3, "").0;
    let max_surge = Msg::new().int(1, 1).int(2, 0).str(3, "25%").0;
    for part in [max_unavailable, max_surge] {
        assert!(
            bytes.windows(part.len()).any(|w| w == part.as_slice()),
            "{part:x?} not in {bytes:x?}"
        );
    }
    // A negative int32 takes ten bytes, sign-extended as Go writes it.
    let run_as_user = Msg::new().int(4, -1).0;
    assert_eq!(run_as_user.len(), 11);
    assert!(bytes.windows(11).any(|w| w == run_as_user.as_slice()));
}

#[test]
fn micro_times_statuses_and_schemas_round_trip() {
    round_trip(&json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "a",
            "leaseDurationSeconds": 15,
            "renewTime": "2024-01-02T03:04:05.123456Z",
        },
    }));
    let status = round_trip(&json!({
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": "configmaps \"x\" not found",
        "reason": "NotFound",
        "details": {"name": "x", "kind": "configmaps"},
        "code": 404,
    }));
    assert!(status.starts_with(b"k8s\0"));
    round_trip(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                            "default": {"a": "b"},
                        },
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "open": {"type": "object", "additionalProperties": true},
                        "closed": {"type": "object", "additionalProperties": false},
                        "tuple": {"items": [{"type": "string"}, {"type": "integer"}]},
                    },
                    "x-kubernetes-preserve-unknown-fields": true,
                }},
            }],
        },
    }));
}

#[test]
fn values_that_do_not_fit_their_field_are_errors() {
    let bad = |value: Value| encode(&value).unwrap_err().to_string();
    let config_map = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "data": data});
    assert!(bad(config_map(json!(["a"]))).contains("ConfigMap.data"));
    assert!(bad(config_map(json!({"a": 1}))).contains("a string was expected"));
    assert!(bad(json!({"apiVersion": "example.com/v1", "kind": "Widget"})).contains("Widget"));
    assert!(bad(json!("text")).contains("objects"));
    let replicas =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1.5}});
    assert!(bad(replicas).contains("an integer was expected"));
    let replicas = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 5_000_000_000i64}});
    assert!(bad(replicas).contains("out of range"));
}

/// Upstream's watch framing: the length as four big-endian bytes, then a `WatchEvent` whose
/// `object` is a `RawExtension` holding the whole protobuf object (`LengthDelimitedFramer`,
/// `protobuf.NewRawSerializer` in k8s.io/apimachinery).
#[test]
fn watch_events_are_length_prefixed() {
    let object = decoded(&config_map());
    let frame = watch_frame("MODIFIED", &object).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let mut reader = Reader::new(&frame[4..]);
    assert_eq!(
        reader.field().unwrap(),
        Some((1, Payload::Len(b"MODIFIED")))
    );
    let Some((2, Payload::Len(raw_extension))) = reader.field().unwrap() else {
        panic!("no object in {frame:x?}");
    };
    assert_eq!(reader.field().unwrap(), None);
    let mut reader = Reader::new(raw_extension);
    let Some((1, Payload::Len(raw))) = reader.field().unwrap() else {
        panic!("no raw bytes in {raw_extension:x?}");
    };
    assert_eq!(raw, encode(&object).unwrap().as_slice());
}

/// The message of `json` (an object's text) as the transcoder writes it, and as it writes the
/// same object with every key in reverse order.
fn both_orders(json: &str) -> (Vec<u8>, Vec<u8>) {
    // Raw JSON (managed fields, schema defaults) is written as its text: left as it is.
    fn reversed(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .rev()
                    .map(|(k, v)| {
                        let raw = matches!(k.as_str(), "fieldsV1" | "default");
                        (k.clone(), if raw { v.clone() } else { reversed(v) })
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }
    let value: Value = serde_json::from_str(json).unwrap();
    let table = Table::get();
    let (name, message) = table
        .message_of(
            value["apiVersion"].as_str().unwrap(),
            value["kind"].as_str().unwrap(),
        )
        .unwrap();
    let write = |text: &[u8]| {
        let mut out = Writer::default();
        transcode::message(table, &mut out, message, name, text).unwrap();
        out.into_bytes()
    };
    let other = serde_json::to_vec(&reversed(&value)).unwrap();
    assert_ne!(other, json.as_bytes(), "the keys were not reordered");
    (write(json.as_bytes()), write(&other))
}

/// Fields go out in number order and map entries in key order whatever order the JSON keys
/// come in (stored objects keep their writer's order), as Go's marshallers write them.
#[test]
fn transcoding_does_not_depend_on_key_order() {
    let objects = [
        r#"{"data":{"b":"2","a":"1"},"binaryData":{"bin":"AAEC"},"metadata":{"labels":{"z":"1","a":"2"},"name":"m","creationTimestamp":null,"managedFields":[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}},"time":"2023-11-14T22:13:20Z"}]},"kind":"ConfigMap","apiVersion":"v1"}"#,
        r#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":1},"type":"RollingUpdate"},"template":{"spec":{"volumes":[{"configMap":{"name":"c","defaultMode":420},"name":"v"},{"name":"e","emptyDir":{}}],"containers":[{"resources":{"limits":{"cpu":"500m","memory":1}},"name":"web","securityContext":{"runAsUser":-1},"ports":[{"protocol":"TCP","containerPort":80}]}]},"metadata":{"labels":{"app":"web"}}},"replicas":3,"selector":{"matchLabels":{"app":"web"}}},"metadata":{"name":"web","generation":2}}"#,
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"renewTime":"2024-01-02T03:04:05.123456Z","leaseDurationSeconds":15}}"#,
        r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"w.example.com"},"spec":{"versions":[{"schema":{"openAPIV3Schema":{"x-kubernetes-preserve-unknown-fields":true,"properties":{"tuple":{"items":[{"type":"string"},{"type":"integer"}]},"open":{"additionalProperties":true},"spec":{"default":{"a":"b"},"additionalProperties":{"type":"string"}},"list":{"items":{"type":"string"},"enum":[["a"],"b",1]},"req":{"required":["a","b"]}},"type":"object"}},"name":"v1","served":true,"storage":true}],"group":"example.com"}}"#,
        r#"{"kind":"Status","apiVersion":"v1","code":404,"details":{"causes":[{"field":"a","reason":"b"}],"name":"x"},"reason":"NotFound","status":"Failure","metadata":{}}"#,
    ];
    for json in objects {
        let (as_given, reversed) = both_orders(json);
        assert_eq!(as_given, reversed, "{json}");
    }
}

#[test]
fn transcoding_refuses_what_does_not_fit() {
    let table = Table::get();
    let (name, message) = table.message_of("v1", "ConfigMap").unwrap();
    for json in [
        r#"{"data":["a"]}"#,
        r#"{"data":{"a":1}}"#,
        r#"{"metadata":{"name":"x"}"#,
        r#"{"metadata":{"creationTimestamp":"yesterday"}}"#,
        r#"[]"#,
    ] {
        let mut out = Writer::default();
        let result = transcode::message(table, &mut out, message, name, json.as_bytes());
        assert!(result.is_err(), "{json}");
    }
}
