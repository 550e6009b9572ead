//! The encoder read back: by hand, field by field, against the numbers of gnostic-models'
//! `openapiv2/OpenAPIv2.proto` (so a wrong number in the tables shows), and by a reader driven
//! by the same tables over a whole document (so nothing kapi's documents hold is dropped).

use serde_json::{Map, Value, json};

use super::{DOCUMENT, Field, Message, encode, schema_keys, yaml_text};
use crate::server::http::protobuf::wire::{Payload, Reader, WireError};

/// The fields of one message, in wire order.
fn fields(bytes: &[u8]) -> Vec<(u32, Payload<'_>)> {
    let mut reader = Reader::new(bytes);
    let mut out = Vec::new();
    while let Some(field) = reader.field().expect("well-formed message") {
        out.push(field);
    }
    out
}

/// The payload of the only field `number` of a message.
fn only(bytes: &[u8], number: u32) -> Payload<'_> {
    let found: Vec<Payload<'_>> = fields(bytes)
        .into_iter()
        .filter(|(n, _)| *n == number)
        .map(|(_, p)| p)
        .collect();
    assert_eq!(found.len(), 1, "field {number} of {bytes:x?}");
    found[0]
}

fn len(payload: Payload<'_>) -> &[u8] {
    match payload {
        Payload::Len(bytes) => bytes,
        other => panic!("not length-delimited: {other:?}"),
    }
}

fn text(payload: Payload<'_>) -> &str {
    std::str::from_utf8(len(payload)).expect("UTF-8")
}

/// The `Named*` entries of field `number`: name and value bytes.
fn named(bytes: &[u8], number: u32) -> Vec<(&str, &[u8])> {
    fields(bytes)
        .into_iter()
        .filter(|(n, _)| *n == number)
        .map(|(_, entry)| {
            let entry = len(entry);
            (text(only(entry, 1)), len(only(entry, 2)))
        })
        .collect()
}

fn entry<'a>(bytes: &'a [u8], number: u32, name: &str) -> &'a [u8] {
    named(bytes, number)
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no entry {name} in field {number}"))
        .1
}

/// A small document with one of each shape kapi's documents hold.
fn sample() -> Value {
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.20.15"},
        "paths": {
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {
                "patch": {
                    "consumes": ["application/merge-patch+json"],
                    "operationId": "patchAppsV1NamespacedDeployment",
                    "parameters": [
                        {"name": "body", "in": "body", "required": true,
                         "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}},
                        {"uniqueItems": true, "type": "string", "name": "dryRun", "in": "query"},
                        {"$ref": "#/parameters/name"},
                        {"name": "tags", "in": "query", "type": "array", "items": {"type": "string", "enum": ["a"]}, "collectionFormat": "multi"}
                    ],
                    "responses": {
                        "200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}},
                        "401": {"description": "Unauthorized", "headers": {"Retry-After": {"type": "integer", "description": "seconds"}}}
                    },
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"}
                },
                "parameters": [
                    {"name": "name", "in": "path", "required": true, "type": "string", "uniqueItems": true}
                ]
            }
        },
        "definitions": {
            "io.k8s.api.apps.v1.DeploymentSpec": {
                "description": "DeploymentSpec is the specification of the desired behavior of the Deployment.",
                "type": "object",
                "required": ["selector", "template"],
                "properties": {
                    "replicas": {"description": "Number of desired pods.", "type": "integer", "format": "int32", "minimum": 0},
                    "paused": {"type": "boolean", "default": false},
                    "strategy": {"type": "string", "enum": ["Recreate", "RollingUpdate"]},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "closed": {"type": "object", "additionalProperties": false, "properties": {}},
                    "containers": {
                        "type": "array",
                        "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"},
                        "maxItems": 10,
                        "x-kubernetes-patch-merge-key": "name",
                        "x-kubernetes-patch-strategy": "merge"
                    }
                },
                "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
            }
        },
        "securityDefinitions": {
            "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}
        },
        "security": [{"BearerToken": []}]
    })
}

/// Field numbers of `Document`, `Info`, `Paths`/`NamedPathItem`, `PathItem`, `Operation`,
/// `ParametersItem`, `Parameter`, `NonBodyParameter`, `QueryParameterSubSchema`,
/// `PathParameterSubSchema`, `PrimitivesItems`, `BodyParameter`, `Responses`, `Response`,
/// `Header`, `SchemaItem`, `NamedAny` and `Any`.
#[test]
fn document_and_operation_fields() {
    let bytes = encode(&sample());
    // Document: swagger 1, info 2 (title 1, version 2).
    assert_eq!(text(only(&bytes, 1)), "2.0");
    let info = len(only(&bytes, 2));
    assert_eq!(text(only(info, 1)), "Kubernetes");
    assert_eq!(text(only(info, 2)), "v1.20.15");
    // paths 8: NamedPathItem entries in Paths field 2.
    let paths = len(only(&bytes, 8));
    let item = entry(
        paths,
        2,
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
    );
    // PathItem: patch 8, parameters 9 (ParametersItem → Parameter 1 → NonBodyParameter 2 →
    // PathParameterSubSchema 4: required 1, in 2, name 4, type 5, uniqueItems 19).
    let path_param = len(only(item, 9));
    let non_body = len(only(len(only(path_param, 1)), 2));
    let path = len(only(non_body, 4));
    assert_eq!(only(path, 1), Payload::Varint(1));
    assert_eq!(text(only(path, 2)), "path");
    assert_eq!(text(only(path, 4)), "name");
    assert_eq!(text(only(path, 5)), "string");
    assert_eq!(only(path, 19), Payload::Varint(1));
    let patch = len(only(item, 8));
    // Operation: consumes 7, operationId 5, parameters 8, responses 9, extensions 13.
    assert_eq!(text(only(patch, 5)), "patchAppsV1NamespacedDeployment");
    assert_eq!(text(only(patch, 7)), "application/merge-patch+json");
    let params: Vec<&[u8]> = fields(patch)
        .into_iter()
        .filter(|(n, _)| *n == 8)
        .map(|(_, p)| len(p))
        .collect();
    assert_eq!(params.len(), 4);
    // The body: ParametersItem 1 → Parameter 1 (BodyParameter: name 2, in 3, required 4,
    // schema 5 with $ref 1).
    let body = len(only(len(only(params[0], 1)), 1));
    assert_eq!(text(only(body, 2)), "body");
    assert_eq!(text(only(body, 3)), "body");
    assert_eq!(only(body, 4), Payload::Varint(1));
    assert_eq!(
        text(only(len(only(body, 5)), 1)),
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    );
    // A query parameter: NonBodyParameter 3 (QueryParameterSubSchema: in 2, name 4, type 6,
    // uniqueItems 20).
    let query = len(only(len(only(len(only(params[1], 1)), 2)), 3));
    assert_eq!(text(only(query, 2)), "query");
    assert_eq!(text(only(query, 4)), "dryRun");
    assert_eq!(text(only(query, 6)), "string");
    assert_eq!(only(query, 20), Payload::Varint(1));
    // A reference: ParametersItem 2 (JsonReference: _ref 1).
    assert_eq!(text(only(len(only(params[2], 2)), 1)), "#/parameters/name");
    // Items of a query parameter: items 8 (PrimitivesItems: type 1, enum 16); collectionFormat 9.
    let tags = len(only(len(only(len(only(params[3], 1)), 2)), 3));
    assert_eq!(text(only(tags, 9)), "multi");
    let items = len(only(tags, 8));
    assert_eq!(text(only(items, 1)), "string");
    assert_eq!(text(only(len(only(items, 16)), 2)), "\"a\"");
    // Responses: NamedResponseValue in 1 → ResponseValue 1 → Response (description 1,
    // schema 2 → SchemaItem 1 → Schema).
    let responses = len(only(patch, 9));
    let ok = len(only(entry(responses, 1, "200"), 1));
    assert_eq!(text(only(ok, 1)), "OK");
    let schema = len(only(len(only(ok, 2)), 1));
    assert_eq!(
        text(only(schema, 1)),
        "#/definitions/io.k8s.api.apps.v1.Deployment"
    );
    // Response headers 3: NamedHeader entries (Header: type 1, description 18).
    let unauthorized = len(only(entry(responses, 1, "401"), 1));
    let retry = entry(len(only(unauthorized, 3)), 1, "Retry-After");
    assert_eq!(text(only(retry, 1)), "integer");
    assert_eq!(text(only(retry, 18)), "seconds");
    // Vendor extensions: NamedAny (name 1, Any 2 with yaml 2).
    let gvk = entry(patch, 13, "x-kubernetes-group-version-kind");
    let yaml = text(only(gvk, 2));
    assert_eq!(
        serde_json::from_str::<Value>(yaml).unwrap(),
        json!({"group": "apps", "kind": "Deployment", "version": "v1"})
    );
    assert_eq!(
        text(only(entry(patch, 13, "x-kubernetes-action"), 2)),
        "\"patch\""
    );
}

/// Field numbers of `Definitions`, `Schema`, `TypeItem`, `Properties`, `ItemsItem`,
/// `AdditionalPropertiesItem`, security definitions and requirements.
#[test]
fn schema_and_security_fields() {
    let bytes = encode(&sample());
    // definitions 9: NamedSchema entries in field 1.
    let spec = entry(len(only(&bytes, 9)), 1, "io.k8s.api.apps.v1.DeploymentSpec");
    // Schema: description 4, required 19, type 22 (TypeItem value 1), properties 25.
    assert!(text(only(spec, 4)).starts_with("DeploymentSpec is"));
    let required: Vec<&str> = fields(spec)
        .into_iter()
        .filter(|(n, _)| *n == 19)
        .map(|(_, p)| text(p))
        .collect();
    assert_eq!(required, ["selector", "template"]);
    assert_eq!(text(only(len(only(spec, 22)), 1)), "object");
    let properties = len(only(spec, 25));
    let names: Vec<&str> = named(properties, 1).iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "replicas",
            "paused",
            "strategy",
            "labels",
            "closed",
            "containers"
        ]
    );
    // format 2, minimum 9 left out at 0 (proto3 default), as Go's marshaller leaves it out.
    let replicas = entry(properties, 1, "replicas");
    assert_eq!(text(only(replicas, 2)), "int32");
    assert!(fields(replicas).iter().all(|(n, _)| *n != 9));
    // default 5 as Any, even when false (it is a message).
    let paused = entry(properties, 1, "paused");
    assert_eq!(text(only(len(only(paused, 5)), 2)), "false");
    // enum 20: one Any each.
    let strategy = entry(properties, 1, "strategy");
    let values: Vec<&str> = fields(strategy)
        .into_iter()
        .filter(|(n, _)| *n == 20)
        .map(|(_, p)| text(only(len(p), 2)))
        .collect();
    assert_eq!(values, ["\"Recreate\"", "\"RollingUpdate\""]);
    // additionalProperties 21: a schema (1) ...
    let labels = entry(properties, 1, "labels");
    let inner = len(only(len(only(labels, 21)), 1));
    assert_eq!(text(only(len(only(inner, 22)), 1)), "string");
    // ... or a bool (2), written even when false because it is a one-of member; an empty
    // `properties` is still there.
    let closed = entry(properties, 1, "closed");
    assert_eq!(fields(len(only(closed, 21))), [(2, Payload::Varint(0))]);
    assert_eq!(len(only(closed, 25)), b"");
    // items 23 (ItemsItem schema 1), maxItems 14, extensions 31.
    let containers = entry(properties, 1, "containers");
    assert_eq!(
        text(only(len(only(len(only(containers, 23)), 1)), 1)),
        "#/definitions/io.k8s.api.core.v1.Container"
    );
    assert_eq!(only(containers, 14), Payload::Varint(10));
    assert_eq!(
        text(only(
            entry(containers, 31, "x-kubernetes-patch-strategy"),
            2
        )),
        "\"merge\""
    );
    // securityDefinitions 13: SecurityDefinitionsItem 2 (ApiKeySecurity: type 1, name 2, in 3,
    // description 4).
    let bearer = entry(len(only(&bytes, 13)), 1, "BearerToken");
    let api_key = len(only(bearer, 2));
    assert_eq!(text(only(api_key, 1)), "apiKey");
    assert_eq!(text(only(api_key, 2)), "authorization");
    assert_eq!(text(only(api_key, 3)), "header");
    // security 12: SecurityRequirement → NamedStringArray with an empty StringArray.
    let requirement = len(only(&bytes, 12));
    assert_eq!(named(requirement, 1), [("BearerToken", &b""[..])]);
}

/// The text kubectl reads with a YAML parser: JSON, with what YAML may not carry raw escaped.
#[test]
fn yaml_text_is_json_with_yaml_unsafe_characters_escaped() {
    assert_eq!(yaml_text(&json!("merge")), "\"merge\"");
    assert_eq!(yaml_text(&json!(["name"])), "[\"name\"]");
    assert_eq!(
        yaml_text(&json!("a\u{85}b\u{2028}")),
        "\"a\\u0085b\\u2028\""
    );
    let escaped = yaml_text(&json!({"k": "x\u{7f}y\u{feff}"}));
    assert_eq!(escaped, r#"{"k":"x\u007fy\ufeff"}"#);
    assert_eq!(
        serde_json::from_str::<Value>(&escaped).unwrap(),
        json!({"k": "x\u{7f}y\u{feff}"})
    );
}

/// Reads bytes back into JSON with the same tables the encoder writes with.
fn decode(message: &Message, bytes: &[u8]) -> Result<Value, WireError> {
    let mut reader = Reader::new(bytes);
    let mut out = Map::new();
    let mut strings = Vec::new();
    let mut many = Vec::new();
    while let Some((number, payload)) = reader.field()? {
        match message {
            Message::Object(shape) => {
                if let Some((key, _, field)) = shape.known().find(|(_, n, _)| *n == number) {
                    let value = decode_field(field, payload)?;
                    if matches!(field, Field::Strs | Field::Anys | Field::Msgs(_)) {
                        push(&mut out, key, value);
                    } else {
                        out.insert(key.to_owned(), value);
                    }
                } else if shape.extensions == Some(number) {
                    let (name, value) = decode_named(Field::Any, payload)?;
                    out.insert(name, value);
                } else if let Some((_, field)) = shape.rest.filter(|(n, _)| *n == number) {
                    let (name, value) = decode_named(field, payload)?;
                    out.insert(name, value);
                } else {
                    panic!("unexpected field {number}");
                }
            }
            Message::Map(field) => {
                let (name, value) = decode_named(*field, payload)?;
                out.insert(name, value);
            }
            Message::Strings => strings.push(decode_field(Field::Str, payload)?),
            Message::OneOrMany(inner) => many.push(decode_field(Field::Msg(inner), payload)?),
            Message::OneOf { members, .. } => {
                let (_, field) = members
                    .iter()
                    .find(|(n, _)| *n == number)
                    .unwrap_or_else(|| panic!("no one-of member {number}"));
                return decode_field(*field, payload);
            }
        }
    }
    Ok(match message {
        Message::Strings => Value::Array(strings),
        Message::OneOrMany(_) => Value::Array(many),
        _ => Value::Object(out),
    })
}

fn push(out: &mut Map<String, Value>, key: &str, value: Value) {
    if let Value::Array(items) = out
        .entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        items.push(value);
    }
}

fn decode_named(field: Field, payload: Payload<'_>) -> Result<(String, Value), WireError> {
    let mut name = String::new();
    let mut value = Value::Null;
    let mut reader = Reader::new(len(payload));
    while let Some((number, payload)) = reader.field()? {
        match number {
            1 => text(payload).clone_into(&mut name),
            2 => value = decode_field(field, payload)?,
            other => panic!("Named* field {other}"),
        }
    }
    Ok((name, value))
}

fn decode_field(field: Field, payload: Payload<'_>) -> Result<Value, WireError> {
    Ok(match (field, payload) {
        (Field::Str | Field::Strs, p) => Value::String(text(p).to_owned()),
        (Field::Bool, Payload::Varint(v)) => Value::Bool(v != 0),
        (Field::Int, Payload::Varint(v)) => json!(v.cast_signed()),
        (Field::Double, Payload::Fixed64(bits)) => json!(f64::from_bits(bits)),
        (Field::Any | Field::Anys, p) => {
            serde_json::from_str(text(only(len(p), 2))).expect("Any.yaml is JSON text")
        }
        (Field::Msg(message) | Field::Msgs(message), p) => decode(message, len(p))?,
        (field, payload) => panic!("{field:?} with {payload:?}"),
    })
}

/// `decoded` says what `expected` says, allowing for what protobuf cannot tell apart: scalars
/// at their default are absent, numbers lose their integer-ness, a lone type or items schema is
/// a list of one.
fn same(expected: &Value, decoded: Option<&Value>, at: &str) -> Result<(), String> {
    let is_default = |v: &Value| match v {
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Array(items) => items.is_empty(),
        _ => false,
    };
    let Some(decoded) = decoded else {
        return if is_default(expected) {
            Ok(())
        } else {
            Err(format!("{at}: dropped {expected}"))
        };
    };
    match (expected, decoded) {
        (Value::Object(want), Value::Object(got)) => {
            for (key, value) in want {
                same(value, got.get(key), &format!("{at}.{key}"))?;
            }
            match got.keys().find(|key| !want.contains_key(*key)) {
                Some(extra) => Err(format!("{at}: extra {extra}")),
                None => Ok(()),
            }
        }
        (Value::Array(want), Value::Array(got)) if want.len() == got.len() => want
            .iter()
            .zip(got)
            .enumerate()
            .try_for_each(|(i, (w, g))| same(w, Some(g), &format!("{at}[{i}]"))),
        // `TypeItem` and `ItemsItem` hold a list of what may be one string or schema.
        (Value::String(_) | Value::Object(_), Value::Array(got)) if got.len() == 1 => {
            same(expected, got.first(), at)
        }
        (Value::Number(want), Value::Number(got)) if want.as_f64() == got.as_f64() => Ok(()),
        (want, got) if want == got => Ok(()),
        (want, got) => Err(format!("{at}: {want} became {got}")),
    }
}

#[test]
fn the_sample_reads_back_whole() {
    let doc = sample();
    let decoded = decode(&DOCUMENT, &encode(&doc)).unwrap();
    same(&doc, Some(&decoded), "").unwrap();
}

/// Every JSON value kapi's Swagger 2.0 document holds reads back from the protobuf, and its
/// schemas use only the keys gnostic's compiler accepts (`NewSchema`'s allowed keys, plus
/// `x-`), so upstream's `ToProtoBinary` would take the same document.
#[test]
fn kapis_v2_documents_read_back_whole() {
    for doc in super::super::tests::v2_documents() {
        let bytes = encode(&doc);
        let decoded = decode(&DOCUMENT, &bytes).unwrap();
        same(&doc, Some(&decoded), "").unwrap();
        let allowed = schema_keys();
        let mut stack: Vec<&Value> = doc["definitions"].as_object().unwrap().values().collect();
        while let Some(schema) = stack.pop() {
            let Some(object) = schema.as_object() else {
                continue;
            };
            for key in object.keys() {
                assert!(
                    key.starts_with("x-") || allowed.contains(&key.as_str()),
                    "a schema key gnostic refuses: {key}"
                );
            }
            stack.extend(
                object
                    .get("properties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flat_map(Map::values),
            );
            stack.extend(
                ["items", "additionalProperties"]
                    .iter()
                    .filter_map(|k| object.get(*k)),
            );
            stack.extend(
                object
                    .get("allOf")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten(),
            );
        }
    }
}

/// Hostile values do not panic: ill-typed fields are skipped.
#[test]
fn ill_typed_values_are_skipped() {
    let doc = json!({
        "swagger": 2,
        "info": "none",
        "paths": {"/x": {"get": {"parameters": [{"in": "nowhere"}, 5], "responses": []}}},
        "definitions": {"a": {"type": 7, "additionalProperties": "yes", "maxLength": 1.5, "minLength": -3, "items": [{"type": "string"}, 3]}},
        "securityDefinitions": {"b": {"type": "oauth2"}}
    });
    let bytes = encode(&doc);
    let schema = entry(len(only(&bytes, 9)), 1, "a");
    // minLength 12: a negative int64 takes ten bytes, as Go writes it.
    assert_eq!(only(schema, 12), Payload::Varint((-3i64).cast_unsigned()));
    assert!(fields(schema).iter().all(|(n, _)| *n != 11));
    assert!(decode(&DOCUMENT, &bytes).is_ok());
}
