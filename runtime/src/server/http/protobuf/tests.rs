//! Hand-built protobuf bodies decoded to the JSON upstream writes for the same objects.

use serde_json::{Value, json};

use super::decode::Decoder;
use super::table::Table;
use super::{ProtoError, decode};

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
