//! `/openapi/v2` in protobuf: the Swagger 2.0 document written as gnostic's
//! `openapi.v2.Document`, the message kube-openapi's handler serves
//! (`ToProtoBinary`: the JSON read by gnostic's compiler, `NewDocument`, then marshalled) and
//! client-go reads (`DiscoveryClient.OpenAPISchema`) for kubectl's `apply`, `diff`, `explain`
//! and client-side validation.
//!
//! The shape of every message is data: [`DOCUMENT`] and the messages it refers to name, per
//! JSON key, the field number and how the value is written (field numbers from gnostic-models'
//! `openapiv2/OpenAPIv2.proto`). Cases the compiler decides by looking at the value are
//! one-of choosers: a parameter is a body parameter or, by its `in`, a header, formData, query
//! or path one; `additionalProperties` is a schema or a bool; a response or parameter with
//! `$ref` is a JSON reference; a security definition goes by its `type` (and OAuth2 `flow`).
//!
//! As the compiler does: keys starting with `x-` become `NamedAny` vendor extensions whose
//! `Any.yaml` holds the value as YAML text (kubectl reads `x-kubernetes-group-version-kind`
//! and the patch strategies from it); maps (`definitions`, `properties`, `paths`, response
//! codes, ...) become repeated `Named*` entries in the JSON's key order; scalars equal to their
//! proto3 default are left out, as Go's marshaller leaves them out, except inside a one-of,
//! where `additionalProperties: false` must still be written. The YAML text is the value's
//! JSON, which YAML reads as the same value, with the characters YAML 1.1 may not carry raw
//! or would read as line breaks escaped.
//!
//! Keys the compiler would reject (kapi's documents have none: a unit test checks) are skipped
//! rather than refused; ill-typed values are skipped too, so nothing here fails.

use std::convert::Infallible;

use serde_json::Value;

use crate::server::http::protobuf::wire::Writer;

/// How one JSON value is written as one field.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// `string`, from a JSON string.
    Str,
    /// `bool`.
    Bool,
    /// `int64`, from an integral JSON number.
    Int,
    /// `double`, from a JSON number.
    Double,
    /// `Any`: the value as YAML text in its field 2.
    Any,
    /// `repeated string`, from an array of strings.
    Strs,
    /// `repeated Any`, from an array.
    Anys,
    /// A nested message, written whenever the key is there (an empty one too: kubectl tells a
    /// schema with `properties: {}` from one without).
    Msg(&'static Message),
    /// `repeated` messages, one per element of an array.
    Msgs(&'static Message),
}

/// A message and how a JSON value fills it.
#[derive(Debug)]
enum Message {
    /// An object, by key.
    Object(Shape),
    /// A map: each key a `Named*` entry (`name` 1, `value` 2) of field 1 (`Definitions`,
    /// `Properties`, `SecurityRequirement`, ...).
    Map(Field),
    /// Field 1 `repeated string`, from one string or an array (`TypeItem`, `StringArray`).
    Strings,
    /// Field 1 `repeated` messages, from one object or an array of them (`ItemsItem`).
    OneOrMany(&'static Message),
    /// One of several fields (`members`), the one whose number `choose` finds by looking at
    /// the value.
    OneOf {
        members: &'static [(u32, Field)],
        choose: fn(&Value) -> Option<u32>,
    },
}

/// How an object's keys become fields: `fields` maps known keys (in field-number order), and
/// the validation keywords of a non-body value ([`KEYWORDS`]) follow one another from number
/// `keywords`; `x-` keys are `NamedAny` entries of field `extensions`; any other key is a
/// named entry of `rest` (a path of `Paths`, a response code of `Responses`).
#[derive(Debug)]
struct Shape {
    fields: &'static [(&'static str, u32, Field)],
    keywords: Option<u32>,
    extensions: Option<u32>,
    rest: Option<(u32, Field)>,
}

impl Shape {
    /// Only `fields`, and `x-` keys as field `extensions`.
    const fn of(fields: &'static [(&'static str, u32, Field)], extensions: u32) -> Self {
        Self {
            fields,
            keywords: None,
            extensions: Some(extensions),
            rest: None,
        }
    }

    /// Every known key with its number and field, in number order.
    fn known(&self) -> impl Iterator<Item = (&'static str, u32, Field)> + '_ {
        let start = self.keywords.unwrap_or(u32::MAX);
        let below = self.fields.iter().copied().filter(move |f| f.1 < start);
        let keywords = self.keywords.into_iter().flat_map(|start| {
            KEYWORDS
                .iter()
                .zip(start..)
                .map(|((key, field), number)| (*key, number, *field))
        });
        let above = self.fields.iter().copied().filter(move |f| f.1 >= start);
        below.chain(keywords).chain(above)
    }
}

/// The validation keywords of a non-body parameter, a header or their items, in the order
/// their numbers run in each message that has them.
const KEYWORDS: [(&str, Field); 17] = [
    ("type", Field::Str),
    ("format", Field::Str),
    ("items", Field::Msg(&PRIMITIVES_ITEMS)),
    ("collectionFormat", Field::Str),
    ("default", Field::Any),
    ("maximum", Field::Double),
    ("exclusiveMaximum", Field::Bool),
    ("minimum", Field::Double),
    ("exclusiveMinimum", Field::Bool),
    ("maxLength", Field::Int),
    ("minLength", Field::Int),
    ("pattern", Field::Str),
    ("maxItems", Field::Int),
    ("minItems", Field::Int),
    ("uniqueItems", Field::Bool),
    ("enum", Field::Anys),
    ("multipleOf", Field::Double),
];

/// Field numbers of the `Named*` messages and of `Any`'s YAML text.
const NAME: u32 = 1;
const VALUE: u32 = 2;
const ANY_YAML: u32 = 2;

use Field::{Any, Anys, Bool, Double, Int, Msg, Msgs, Str, Strs};

/// `Document`.
static DOCUMENT: Message = Message::Object(Shape::of(
    &[
        ("swagger", 1, Str),
        ("info", 2, Msg(&INFO)),
        ("host", 3, Str),
        ("basePath", 4, Str),
        ("schemes", 5, Strs),
        ("consumes", 6, Strs),
        ("produces", 7, Strs),
        ("paths", 8, Msg(&PATHS)),
        ("definitions", 9, Msg(&DEFINITIONS)),
        ("parameters", 10, Msg(&PARAMETER_DEFINITIONS)),
        ("responses", 11, Msg(&RESPONSE_DEFINITIONS)),
        ("security", 12, Msgs(&SECURITY_REQUIREMENT)),
        ("securityDefinitions", 13, Msg(&SECURITY_DEFINITIONS)),
        ("tags", 14, Msgs(&TAG)),
        ("externalDocs", 15, Msg(&EXTERNAL_DOCS)),
    ],
    16,
));

static INFO: Message = Message::Object(Shape::of(
    &[
        ("title", 1, Str),
        ("version", 2, Str),
        ("description", 3, Str),
        ("termsOfService", 4, Str),
        ("contact", 5, Msg(&CONTACT)),
        ("license", 6, Msg(&LICENSE)),
    ],
    7,
));

static CONTACT: Message = Message::Object(Shape::of(
    &[("name", 1, Str), ("url", 2, Str), ("email", 3, Str)],
    4,
));

static LICENSE: Message = Message::Object(Shape::of(&[("name", 1, Str), ("url", 2, Str)], 3));

static EXTERNAL_DOCS: Message =
    Message::Object(Shape::of(&[("description", 1, Str), ("url", 2, Str)], 3));

static TAG: Message = Message::Object(Shape::of(
    &[
        ("name", 1, Str),
        ("description", 2, Str),
        ("externalDocs", 3, Msg(&EXTERNAL_DOCS)),
    ],
    4,
));

/// `Paths`: vendor extensions in field 1, every other key a `NamedPathItem` of field 2.
static PATHS: Message = Message::Object(Shape {
    fields: &[],
    keywords: None,
    extensions: Some(1),
    rest: Some((2, Msg(&PATH_ITEM))),
});

static PATH_ITEM: Message = Message::Object(Shape::of(
    &[
        ("$ref", 1, Str),
        ("get", 2, Msg(&OPERATION)),
        ("put", 3, Msg(&OPERATION)),
        ("post", 4, Msg(&OPERATION)),
        ("delete", 5, Msg(&OPERATION)),
        ("options", 6, Msg(&OPERATION)),
        ("head", 7, Msg(&OPERATION)),
        ("patch", 8, Msg(&OPERATION)),
        ("parameters", 9, Msgs(&PARAMETERS_ITEM)),
    ],
    10,
));

static OPERATION: Message = Message::Object(Shape::of(
    &[
        ("tags", 1, Strs),
        ("summary", 2, Str),
        ("description", 3, Str),
        ("externalDocs", 4, Msg(&EXTERNAL_DOCS)),
        ("operationId", 5, Str),
        ("produces", 6, Strs),
        ("consumes", 7, Strs),
        ("parameters", 8, Msgs(&PARAMETERS_ITEM)),
        ("responses", 9, Msg(&RESPONSES)),
        ("schemes", 10, Strs),
        ("deprecated", 11, Bool),
        ("security", 12, Msgs(&SECURITY_REQUIREMENT)),
    ],
    13,
));

/// `ParametersItem`: a parameter (1) or a JSON reference (2).
static PARAMETERS_ITEM: Message = Message::OneOf {
    members: &[(1, Msg(&PARAMETER)), (2, Msg(&JSON_REFERENCE))],
    choose: reference_or_not,
};

/// 2 (a JSON reference) for an object with `$ref`, else 1.
fn reference_or_not(value: &Value) -> Option<u32> {
    Some(if value.get("$ref").is_some() { 2 } else { 1 })
}

/// `Parameter`: a body parameter (1) or a non-body one (2).
static PARAMETER: Message = Message::OneOf {
    members: &[(1, Msg(&BODY_PARAMETER)), (2, Msg(&NON_BODY_PARAMETER))],
    choose: |value| {
        Some(if text(value, "in") == Some("body") {
            1
        } else {
            2
        })
    },
};

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// `NonBodyParameter`: by `in`, a header (1), formData (2), query (3) or path (4) parameter.
static NON_BODY_PARAMETER: Message = Message::OneOf {
    members: &[
        (1, Msg(&HEADER_OR_PATH_PARAMETER)),
        (2, Msg(&QUERY_OR_FORM_PARAMETER)),
        (3, Msg(&QUERY_OR_FORM_PARAMETER)),
        (4, Msg(&HEADER_OR_PATH_PARAMETER)),
    ],
    choose: |value| match text(value, "in")? {
        "header" => Some(1),
        "formData" => Some(2),
        "query" => Some(3),
        "path" => Some(4),
        _ => None,
    },
};

static BODY_PARAMETER: Message = Message::Object(Shape::of(
    &[
        ("description", 1, Str),
        ("name", 2, Str),
        ("in", 3, Str),
        ("required", 4, Bool),
        ("schema", 5, Msg(&SCHEMA)),
    ],
    6,
));

/// `QueryParameterSubSchema` and `FormDataParameterSubSchema`, numbered alike: the
/// keywords from 6 (`type`) to 22 (`multipleOf`).
static QUERY_OR_FORM_PARAMETER: Message = Message::Object(Shape {
    fields: &[
        ("required", 1, Bool),
        ("in", 2, Str),
        ("description", 3, Str),
        ("name", 4, Str),
        ("allowEmptyValue", 5, Bool),
    ],
    keywords: Some(6),
    extensions: Some(23),
    rest: None,
});

/// `HeaderParameterSubSchema` and `PathParameterSubSchema`, numbered alike: the keywords
/// from 5 (`type`) to 21 (`multipleOf`).
static HEADER_OR_PATH_PARAMETER: Message = Message::Object(Shape {
    fields: &[
        ("required", 1, Bool),
        ("in", 2, Str),
        ("description", 3, Str),
        ("name", 4, Str),
    ],
    keywords: Some(5),
    extensions: Some(22),
    rest: None,
});

/// `PrimitivesItems`: the keywords from 1 to 17.
static PRIMITIVES_ITEMS: Message = Message::Object(Shape {
    fields: &[],
    keywords: Some(1),
    extensions: Some(18),
    rest: None,
});

/// `Header`: the keywords from 1 to 17, then its description.
static HEADER: Message = Message::Object(Shape {
    fields: &[("description", 18, Str)],
    keywords: Some(1),
    extensions: Some(19),
    rest: None,
});

static JSON_REFERENCE: Message = Message::Object(Shape {
    fields: &[("$ref", 1, Str), ("description", 2, Str)],
    keywords: None,
    extensions: None,
    rest: None,
});

/// `Responses`: every response code a `NamedResponseValue` of field 1, extensions in 2.
static RESPONSES: Message = Message::Object(Shape {
    fields: &[],
    keywords: None,
    extensions: Some(2),
    rest: Some((1, Msg(&RESPONSE_VALUE))),
});

/// `ResponseValue`: a response (1) or a JSON reference (2).
static RESPONSE_VALUE: Message = Message::OneOf {
    members: &[(1, Msg(&RESPONSE)), (2, Msg(&JSON_REFERENCE))],
    choose: reference_or_not,
};

static RESPONSE: Message = Message::Object(Shape::of(
    &[
        ("description", 1, Str),
        ("schema", 2, Msg(&SCHEMA_ITEM)),
        ("headers", 3, Msg(&HEADERS)),
        ("examples", 4, Msg(&EXAMPLES)),
    ],
    5,
));

/// `SchemaItem`: a schema (1), or a file schema (2) when its `type` is `file`.
static SCHEMA_ITEM: Message = Message::OneOf {
    members: &[(1, Msg(&SCHEMA)), (2, Msg(&FILE_SCHEMA))],
    choose: |value| {
        Some(if text(value, "type") == Some("file") {
            2
        } else {
            1
        })
    },
};

static HEADERS: Message = Message::Map(Msg(&HEADER));
static EXAMPLES: Message = Message::Map(Any);
static DEFINITIONS: Message = Message::Map(Msg(&SCHEMA));
static PROPERTIES: Message = Message::Map(Msg(&SCHEMA));
static PARAMETER_DEFINITIONS: Message = Message::Map(Msg(&PARAMETER));
static RESPONSE_DEFINITIONS: Message = Message::Map(Msg(&RESPONSE));
static SECURITY_DEFINITIONS: Message = Message::Map(Msg(&SECURITY_DEFINITIONS_ITEM));
static SECURITY_REQUIREMENT: Message = Message::Map(Msg(&STRINGS));
static OAUTH2_SCOPES: Message = Message::Map(Str);
static STRINGS: Message = Message::Strings;

static SCHEMA: Message = Message::Object(Shape::of(
    &[
        ("$ref", 1, Str),
        ("format", 2, Str),
        ("title", 3, Str),
        ("description", 4, Str),
        ("default", 5, Any),
        ("multipleOf", 6, Double),
        ("maximum", 7, Double),
        ("exclusiveMaximum", 8, Bool),
        ("minimum", 9, Double),
        ("exclusiveMinimum", 10, Bool),
        ("maxLength", 11, Int),
        ("minLength", 12, Int),
        ("pattern", 13, Str),
        ("maxItems", 14, Int),
        ("minItems", 15, Int),
        ("uniqueItems", 16, Bool),
        ("maxProperties", 17, Int),
        ("minProperties", 18, Int),
        ("required", 19, Strs),
        ("enum", 20, Anys),
        ("additionalProperties", 21, Msg(&ADDITIONAL_PROPERTIES)),
        ("type", 22, Msg(&STRINGS)),
        ("items", 23, Msg(&ITEMS)),
        ("allOf", 24, Msgs(&SCHEMA)),
        ("properties", 25, Msg(&PROPERTIES)),
        ("discriminator", 26, Str),
        ("readOnly", 27, Bool),
        ("xml", 28, Msg(&XML)),
        ("externalDocs", 29, Msg(&EXTERNAL_DOCS)),
        ("example", 30, Any),
    ],
    31,
));

/// `ItemsItem`: field 1 holds the one schema, or each of a list.
static ITEMS: Message = Message::OneOrMany(&SCHEMA);

/// `AdditionalPropertiesItem`: a schema (1) or a bool (2).
static ADDITIONAL_PROPERTIES: Message = Message::OneOf {
    members: &[(1, Msg(&SCHEMA)), (2, Bool)],
    choose: |value| match value {
        Value::Object(_) => Some(1),
        Value::Bool(_) => Some(2),
        _ => None,
    },
};

static FILE_SCHEMA: Message = Message::Object(Shape::of(
    &[
        ("format", 1, Str),
        ("title", 2, Str),
        ("description", 3, Str),
        ("default", 4, Any),
        ("required", 5, Strs),
        ("type", 6, Str),
        ("readOnly", 7, Bool),
        ("externalDocs", 8, Msg(&EXTERNAL_DOCS)),
        ("example", 9, Any),
    ],
    10,
));

static XML: Message = Message::Object(Shape::of(
    &[
        ("name", 1, Str),
        ("namespace", 2, Str),
        ("prefix", 3, Str),
        ("attribute", 4, Bool),
        ("wrapped", 5, Bool),
    ],
    6,
));

/// `SecurityDefinitionsItem`: by `type` (and an OAuth2 `flow`), basic authentication (1), an
/// API key (2), or OAuth2's implicit (3), password (4), application (5) or access code (6).
static SECURITY_DEFINITIONS_ITEM: Message = Message::OneOf {
    members: &[
        (1, Msg(&BASIC_AUTHENTICATION)),
        (2, Msg(&API_KEY)),
        (3, Msg(&OAUTH2_IMPLICIT)),
        (4, Msg(&OAUTH2_PASSWORD_OR_APPLICATION)),
        (5, Msg(&OAUTH2_PASSWORD_OR_APPLICATION)),
        (6, Msg(&OAUTH2_ACCESS_CODE)),
    ],
    choose: |value| match (text(value, "type")?, text(value, "flow")) {
        ("basic", _) => Some(1),
        ("apiKey", _) => Some(2),
        ("oauth2", Some("implicit")) => Some(3),
        ("oauth2", Some("password")) => Some(4),
        ("oauth2", Some("application")) => Some(5),
        ("oauth2", Some("accessCode")) => Some(6),
        _ => None,
    },
};

static BASIC_AUTHENTICATION: Message =
    Message::Object(Shape::of(&[("type", 1, Str), ("description", 2, Str)], 3));

static API_KEY: Message = Message::Object(Shape::of(
    &[
        ("type", 1, Str),
        ("name", 2, Str),
        ("in", 3, Str),
        ("description", 4, Str),
    ],
    5,
));

static OAUTH2_IMPLICIT: Message = Message::Object(Shape::of(
    &[
        ("type", 1, Str),
        ("flow", 2, Str),
        ("scopes", 3, Msg(&OAUTH2_SCOPES)),
        ("authorizationUrl", 4, Str),
        ("description", 5, Str),
    ],
    6,
));

/// `Oauth2PasswordSecurity` and `Oauth2ApplicationSecurity`, numbered alike.
static OAUTH2_PASSWORD_OR_APPLICATION: Message = Message::Object(Shape::of(
    &[
        ("type", 1, Str),
        ("flow", 2, Str),
        ("scopes", 3, Msg(&OAUTH2_SCOPES)),
        ("tokenUrl", 4, Str),
        ("description", 5, Str),
    ],
    6,
));

static OAUTH2_ACCESS_CODE: Message = Message::Object(Shape::of(
    &[
        ("type", 1, Str),
        ("flow", 2, Str),
        ("scopes", 3, Msg(&OAUTH2_SCOPES)),
        ("authorizationUrl", 4, Str),
        ("tokenUrl", 5, Str),
        ("description", 6, Str),
    ],
    7,
));

/// The Swagger 2.0 document `doc` as the bytes of a gnostic `openapi.v2.Document`.
pub(super) fn encode(doc: &Value) -> Vec<u8> {
    let mut writer = Writer::with_capacity(guess_size(doc));
    write_message(&mut writer, &DOCUMENT, doc);
    writer.into_bytes()
}

/// About half the JSON's size: the binary form drops quotes, braces and key names.
fn guess_size(doc: &Value) -> usize {
    doc.get("definitions")
        .and_then(Value::as_object)
        .map_or(4096, |definitions| definitions.len() * 1024)
}

/// Writes the fields of `message` that `value` fills.
fn write_message(w: &mut Writer, message: &Message, value: &Value) {
    match message {
        Message::Object(shape) => {
            let Some(object) = value.as_object() else {
                return;
            };
            for (key, number, field) in shape.known() {
                if let Some(value) = object.get(key) {
                    write_field(w, number, field, value, false);
                }
            }
            // The other keys: extensions and entries, in the order of their numbers (`Paths`
            // numbers its extensions first, `Responses` last).
            let extensions = shape.extensions.map(|number| (number, Any, true));
            let rest = shape.rest.map(|(number, field)| (number, field, false));
            let mut groups: Vec<(u32, Field, bool)> = extensions.into_iter().chain(rest).collect();
            groups.sort_by_key(|group| group.0);
            for (number, field, is_extension) in groups {
                for (key, value) in object {
                    let known = shape.known().any(|(name, _, _)| name == key);
                    if !known && key.starts_with("x-") == is_extension {
                        named(w, number, key, field, value);
                    }
                }
            }
        }
        Message::Map(field) => {
            if let Some(object) = value.as_object() {
                for (key, value) in object {
                    named(w, 1, key, *field, value);
                }
            }
        }
        Message::Strings => match value {
            Value::String(text) => w.string(1, text),
            Value::Array(items) => items
                .iter()
                .filter_map(Value::as_str)
                .for_each(|text| w.string(1, text)),
            _ => {}
        },
        Message::OneOrMany(inner) => match value {
            Value::Array(items) => items.iter().for_each(|item| nested(w, 1, inner, item)),
            other => nested(w, 1, inner, other),
        },
        Message::OneOf { members, choose } => {
            let chosen =
                choose(value).and_then(|number| members.iter().find(|(n, _)| *n == number));
            if let Some((number, field)) = chosen {
                write_field(w, *number, *field, value, true);
            }
        }
    }
}

/// A `Named*` entry: the key in field 1, the value in field 2.
fn named(w: &mut Writer, number: u32, name: &str, field: Field, value: &Value) {
    let _ = w.message(number, |w| {
        w.string(NAME, name);
        write_field(w, VALUE, field, value, false);
        Ok::<(), Infallible>(())
    });
}

fn nested(w: &mut Writer, number: u32, message: &Message, value: &Value) {
    let _ = w.message(number, |w| {
        write_message(w, message, value);
        Ok::<(), Infallible>(())
    });
}

/// Writes `value` as field `number`. Scalars equal to their default are left out unless the
/// field is a one-of member (`always`), which is written whatever it holds.
fn write_field(w: &mut Writer, number: u32, field: Field, value: &Value, always: bool) {
    match field {
        Str => {
            if let Some(text) = value.as_str().filter(|t| always || !t.is_empty()) {
                w.string(number, text);
            }
        }
        Bool => {
            if let Some(flag) = value.as_bool().filter(|f| always || *f) {
                w.varint(number, u64::from(flag));
            }
        }
        Int => {
            if let Some(int) = integer(value).filter(|i| always || *i != 0) {
                // Two's complement, as Go writes a negative int64.
                w.varint(number, int.cast_unsigned());
            }
        }
        Double => {
            if let Some(float) = value.as_f64().filter(|f| always || *f != 0.0) {
                w.double(number, float);
            }
        }
        Any => write_any(w, number, value),
        Strs => {
            if let Some(items) = value.as_array() {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .for_each(|text| w.string(number, text));
            }
        }
        Anys => {
            if let Some(items) = value.as_array() {
                items.iter().for_each(|item| write_any(w, number, item));
            }
        }
        Msg(message) => nested(w, number, message, value),
        Msgs(message) => {
            if let Some(items) = value.as_array() {
                items
                    .iter()
                    .for_each(|item| nested(w, number, message, item));
            }
        }
    }
}

/// A JSON number with an integral value, as gnostic's compiler reads an integer.
fn integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        let float = value.as_f64()?;
        // In range and whole: the cast is exact.
        #[allow(
            clippy::cast_possible_truncation,
            reason = "checked whole and in range"
        )]
        (float.fract() == 0.0 && float.abs() < 9.2e18).then_some(float as i64)
    })
}

fn write_any(w: &mut Writer, number: u32, value: &Value) {
    let text = yaml_text(value);
    let _ = w.message(number, |w| {
        w.string(ANY_YAML, &text);
        Ok::<(), Infallible>(())
    });
}

/// `value` as YAML text: its JSON (YAML's flow style reads it as the same value), with the
/// characters YAML 1.1 forbids raw (DEL, the C1 controls, byte-order marks, non-characters)
/// or reads as line breaks (NEL, the line and paragraph separators) written as `\u` escapes.
/// They only occur inside strings, where JSON and YAML read the escape alike.
pub(super) fn yaml_text(value: &Value) -> String {
    let json = serde_json::to_string(value).unwrap_or_default();
    let needs_escape = |c: char| {
        matches!(
            c,
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
    };
    if !json.contains(needs_escape) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs_escape(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The keys gnostic's compiler accepts in a Swagger 2.0 schema besides `x-` ones: a key
/// outside them makes it refuse the whole document (`NewSchema`'s allowed keys).
#[cfg(test)]
pub(super) fn schema_keys() -> Vec<&'static str> {
    match &SCHEMA {
        Message::Object(shape) => shape.known().map(|(key, _, _)| key).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
