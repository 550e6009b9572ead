//! The CBOR codec against what upstream's `internal/modes` options say a client sees
//! (k8s.io/apimachinery `pkg/runtime/serializer/cbor`: `cbor.go`, `internal/modes/encode.go`,
//! `internal/modes/decode.go`).

use minicbor::Encoder;
use serde_json::json;

use super::*;

/// A CBOR item built with minicbor's encoder.
fn build(f: impl FnOnce(&mut Encoder<&mut Vec<u8>>)) -> Vec<u8> {
    let mut out = Vec::new();
    f(&mut Encoder::new(&mut out));
    out
}

/// `Encode` writes the self-described tag first; strings, keys and field names are byte strings
/// (`StringToByteString`, `FieldNameToByteString`).
#[test]
fn answers_are_self_described_and_strings_are_byte_strings() {
    let bytes = encode(&json!({"kind": "Status", "code": 404})).unwrap();
    let want = build(|e| {
        e.tag(Tag::new(55799)).unwrap();
        e.map(2).unwrap();
        e.bytes(b"kind").unwrap().bytes(b"Status").unwrap();
        e.bytes(b"code").unwrap().i64(404).unwrap();
    });
    assert_eq!(bytes, want);
    assert!(bytes.starts_with(&SELF_DESCRIBED));
}

/// Go `[]byte` fields are byte strings in tag 22 (`ByteSliceLaterFormatBase64`): a Secret's
/// `data` values and a ConfigMap's `binaryData`; its `data` (strings) stays untagged.
#[test]
fn byte_fields_are_tagged_raw_bytes() {
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": "aGVsbG8="},
        "type": "Opaque",
    });
    let bytes = encode(&secret).unwrap();
    let tagged = build(|e| {
        e.bytes(b"k")
            .unwrap()
            .tag(Tag::new(22))
            .unwrap()
            .bytes(b"hello")
            .unwrap();
    });
    assert!(
        bytes.windows(tagged.len()).any(|w| w == tagged),
        "{bytes:02x?}"
    );
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "data": {"text": "aGVsbG8="},
        "binaryData": {"bin": "AAE="},
    });
    let bytes = encode(&config_map).unwrap();
    let text = build(|e| {
        e.bytes(b"text").unwrap().bytes(b"aGVsbG8=").unwrap();
    });
    let bin = build(|e| {
        e.bytes(b"bin")
            .unwrap()
            .tag(Tag::new(22))
            .unwrap()
            .bytes(&[0, 1])
            .unwrap();
    });
    assert!(bytes.windows(text.len()).any(|w| w == text));
    assert!(bytes.windows(bin.len()).any(|w| w == bin));
    // Read back, the bytes are the JSON form's base64 again.
    assert_eq!(decode(&encode(&secret).unwrap()).unwrap(), secret);
    assert_eq!(decode(&encode(&config_map).unwrap()).unwrap(), config_map);
    // A list's items are walked too.
    let list = json!({"apiVersion": "v1", "kind": "SecretList", "items": [secret]});
    let bytes = encode(&list).unwrap();
    assert!(bytes.windows(tagged.len()).any(|w| w == tagged));
    // A custom resource has no []byte fields: its strings stay strings.
    let custom =
        json!({"apiVersion": "widgets.kapi.dev/v1", "kind": "Widget", "data": {"k": "aGVsbG8="}});
    assert!(
        !encode(&custom)
            .unwrap()
            .windows(2)
            .any(|w| w == [0xd6, 0x45])
    );
}

/// `ShortestFloat16`: the narrowest float that holds the value; integers stay integers.
#[test]
fn numbers_are_integers_or_the_shortest_float() {
    let item = |value: Value| encode(&value).unwrap()[3..].to_vec();
    assert_eq!(item(json!(1.5)), [0xf9, 0x3e, 0x00]);
    assert_eq!(item(json!(100000.0)), [0xfa, 0x47, 0xc3, 0x50, 0x00]);
    assert_eq!(
        item(json!(0.1)),
        [0xfb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a]
    );
    assert_eq!(item(json!(-2)), [0x21]);
    assert_eq!(
        item(json!(u64::MAX)),
        [0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    );
    // float16 subnormals and the largest float16.
    assert_eq!(f16_bits(2f32.powi(-24)), Some(0x0001));
    assert_eq!(f16_bits(65504.0), Some(0x7bff));
    assert_eq!(f16_bits(65520.0), None);
    for bits in [0x0001u16, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x8001, 0xc000] {
        let value = f16_value(bits);
        assert_eq!(f16_bits(value as f32), Some(bits), "{bits:04x}");
    }
}

/// A watch event: a self-described `{type, object}` map whose object is self-described too
/// (`RawExtension.MarshalCBOR` passes the embedded encoding through).
#[test]
fn watch_events_nest_the_object_encoding() {
    let object = json!({"kind": "Widget"});
    let frame = watch_frame("ADDED", &object).unwrap();
    let mut want = build(|e| {
        e.tag(Tag::new(55799)).unwrap();
        e.map(2).unwrap();
        e.bytes(b"type").unwrap().bytes(b"ADDED").unwrap();
        e.bytes(b"object").unwrap();
    });
    want.extend(encode(&object).unwrap());
    assert_eq!(frame, want);
    assert_eq!(
        decode(&frame).unwrap(),
        json!({"type": "ADDED", "object": {"kind": "Widget"}})
    );
}

/// What `Decode` accepts: the tag optional, text and byte strings, tagged bytes as their
/// expected later encoding, indefinite lengths, time tags as RFC 3339 text.
#[test]
fn bodies_read_as_upstream_reads_them() {
    let plain = build(|e| {
        e.map(7).unwrap();
        e.str("text").unwrap().str("é").unwrap();
        e.bytes(b"bytes").unwrap().bytes(b"abc").unwrap();
        e.str("b64")
            .unwrap()
            .tag(Tag::new(22))
            .unwrap()
            .bytes(b"hi")
            .unwrap();
        e.str("b64url")
            .unwrap()
            .tag(Tag::new(21))
            .unwrap()
            .bytes(&[0xfb, 0xff])
            .unwrap();
        e.str("hex")
            .unwrap()
            .tag(Tag::new(23))
            .unwrap()
            .bytes(&[0xab])
            .unwrap();
        e.str("epoch")
            .unwrap()
            .tag(Tag::new(1))
            .unwrap()
            .i64(0)
            .unwrap();
        e.str("other")
            .unwrap()
            .tag(Tag::new(12345))
            .unwrap()
            .bool(true)
            .unwrap();
    });
    let want = json!({
        "text": "é", "bytes": "abc", "b64": "aGk=", "b64url": "-_8", "hex": "ab",
        "epoch": "1970-01-01T00:00:00Z", "other": true,
    });
    assert_eq!(decode(&plain).unwrap(), want);
    let mut tagged = SELF_DESCRIBED.to_vec();
    tagged.extend(&plain);
    assert_eq!(decode(&tagged).unwrap(), want);
    let indefinite = build(|e| {
        e.begin_map().unwrap();
        e.begin_str()
            .unwrap()
            .str("ki")
            .unwrap()
            .str("nd")
            .unwrap()
            .end()
            .unwrap();
        e.begin_array()
            .unwrap()
            .u8(1)
            .unwrap()
            .null()
            .unwrap()
            .end()
            .unwrap();
        e.end().unwrap();
    });
    assert_eq!(decode(&indefinite).unwrap(), json!({"kind": [1, null]}));
    let half = build(|e| {
        e.map(1).unwrap().str("f").unwrap();
    });
    let mut half = half;
    half.extend([0xf9, 0x3e, 0x00]);
    assert_eq!(decode(&half).unwrap(), json!({"f": 1.5}));
}

/// What `Decode` refuses, in fxamacker/cbor's words.
#[test]
fn bodies_upstream_refuses_are_refused() {
    let refused = |bytes: Vec<u8>| decode(&bytes).unwrap_err().0;
    let duplicate = build(|e| {
        e.map(2).unwrap();
        e.str("a").unwrap().u8(1).unwrap();
        e.bytes(b"a").unwrap().u8(2).unwrap();
    });
    assert_eq!(
        refused(duplicate),
        "cbor: found duplicate map key \"a\" at map element index 1"
    );
    let mut deep = vec![0x81; 65];
    deep.push(0x01);
    assert_eq!(refused(deep), "cbor: exceeded max nested level 64");
    let mut ok = vec![0x81; 63];
    ok.push(0x01);
    assert!(decode(&ok).is_ok());
    let long = build(|e| {
        e.array(1025).unwrap();
        for _ in 0..1025 {
            e.u8(0).unwrap();
        }
    });
    assert_eq!(
        refused(long),
        "cbor: exceeded max number of elements 1024 for CBOR array"
    );
    let wide = build(|e| {
        e.begin_map().unwrap();
        for i in 0..1025 {
            e.str(&i.to_string()).unwrap().u8(0).unwrap();
        }
        e.end().unwrap();
    });
    assert_eq!(
        refused(wide),
        "cbor: exceeded max number of key-value pairs 1024 for CBOR map"
    );
    // A claimed length far beyond the body allocates nothing.
    assert_eq!(
        refused(vec![0x9b, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
        "cbor: exceeded max number of elements 1024 for CBOR array"
    );
    assert_eq!(
        refused(vec![0x5b, 0, 0, 0, 0xff, 0, 0, 0, 0]),
        "unexpected EOF"
    );
    assert_eq!(
        refused(vec![0xa0, 0x00]),
        "cbor: 1 bytes of extraneous data starting at index 1"
    );
    assert_eq!(refused(vec![0xa1, 0x61]), "unexpected EOF");
    assert_eq!(
        refused(vec![0xa1, 0x61, 0x61, 0xfb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0]),
        "cbor: floating-point NaN values are not supported"
    );
    assert_eq!(
        refused(vec![0xa1, 0x61, 0x61, 0xf9, 0x7c, 0x00]),
        "cbor: floating-point infinity values are not supported"
    );
    assert!(
        refused(vec![
            0xa1, 0x61, 0x61, 0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff
        ])
        .contains("overflows Go's int64")
    );
    assert_eq!(
        refused(vec![0xa1, 0x61, 0xff, 0x01]),
        "cbor: invalid UTF-8 string"
    );
    assert!(refused(vec![0xa1, 0x61, 0x61, 0xf7]).contains("simple value 23"));
    assert!(refused(vec![0xa1, 0x01, 0x01]).contains("cannot unmarshal positive integer"));
    assert!(refused(vec![0xa1, 0x61, 0x61, 0xc2, 0x41, 0x01]).contains("bignum"));
}

/// Whatever the input, decoding ends with a value or an error.
#[test]
fn no_input_panics() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for len in 0..2000 {
        let bytes: Vec<u8> = (0..len % 64)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let _ = decode(&bytes);
    }
}
