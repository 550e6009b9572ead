//! The errors of json-iterator (`github.com/json-iterator/go` v1.1.10), which kube-apiserver
//! 1.20 decodes bodies with (k8s.io/apimachinery `runtime/serializer/json`'s case-sensitive
//! configuration; a YAML body is first turned into JSON by `sigs.k8s.io/yaml`) before 1.23
//! moved to `sigs.k8s.io/json`: `v1.Deployment.Spec: v1.DeploymentSpec.Replicas: readUint32:
//! unexpected character: \u{fffd}, error found in #10 byte of ...|eplicas":"3"}}|..., bigger
//! context ...|<50 bytes either side>|...`.
//!
//! The body's bytes are decoded as json-iterator's reflection decoders decode them into the
//! kind's Go types, described by its OpenAPI definition, with `iter`'s port of its readers: a
//! reader's report (the operation, the message, the bytes around where it stopped), then what
//! each decoder adds on its way out: a struct field its Go name (`structFieldDecoder`, twice
//! for a field of a struct embedded inline: `VolumeSource: ConfigMap: ...`), a struct its Go
//! type (`v1.DeploymentSpec.`), a slice its type (`[]v1.Container: `), a map nothing. As
//! upstream, decoding goes on after a misfit: a loop that reads a `,` next decodes its next
//! element from wherever the misfit left the reader, each field decoder it passes wraps the
//! message again, and only the first report stands. Types that decode themselves
//! (`UnmarshalJSON`: quantities, times, int-or-strings) report their own errors through
//! `unmarshalerDecoder`; `[]byte` is base64 (`decode base64: illegal base64 data at input byte
//! 4`); floats and out-of-range integers have their readers' texts (`readUint32: overflow`,
//! `ReadInt32: overflow: 3000000000`, `strconv.ParseFloat: parsing "1e999": value out of
//! range`).
//!
//! What OpenAPI does not say comes from `go_fields`, the Go struct fields of 1.20's types (Go
//! field names, pointers: an `OptionalDecoder` reads a `null` first, which after a misfit
//! costs a byte; slice types as printed, `[]v1.Capability`; structs embedded inline). For
//! types that table lacks (no 1.20 kind's, but a definition kapi has beyond them), Kubernetes'
//! conventions: JSON
//! names capitalized with its initialisms (`uid` → `UID`), embedded structs from the protobuf
//! table (its `^` fields, in 1.20's names), pointers from the table's `?` marks for numbers and
//! bools and from `POINTER_FREE_STRUCTS` and `POINTER_VALUES`. A misfit in the top-level
//! `apiVersion` or `kind`, which upstream's serializer refuses before decoding, and types this
//! port does not follow (durations, apiextensions' `JSONSchemaPropsOr*`) once a misfit has
//! been met, give `None`: the caller keeps its own account.

mod go_fields;
mod iter;

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::{decoders, go_named, reference, short_type, unnamed_go_type};
use crate::server::http::protobuf::table::{Cardinality, Kind as FieldKind, Message, Table};
use iter::{Failure, Iter};

/// Deeper than any body kapi takes (serde_json's own limit is 128): give up rather than risk
/// the stack.
const MAX_DEPTH: usize = 256;

/// Leading lowercase words of JSON names that Go spells as initialisms, as Kubernetes' API
/// types name their fields (a JSON name whose first word is one of these gets it in capitals).
const INITIALISMS: &[(&str, &str)] = &[
    ("api", "API"),
    ("aws", "AWS"),
    ("ca", "CA"),
    ("cidr", "CIDR"),
    ("csi", "CSI"),
    ("dns", "DNS"),
    ("fc", "FC"),
    ("fs", "FS"),
    ("gce", "GCE"),
    ("grpc", "GRPC"),
    ("http", "HTTP"),
    ("ip", "IP"),
    ("iscsi", "ISCSI"),
    ("nfs", "NFS"),
    ("rbd", "RBD"),
    ("se", "SE"),
    ("tcp", "TCP"),
    ("tls", "TLS"),
    ("udp", "UDP"),
    ("uid", "UID"),
    ("url", "URL"),
];

/// Optional struct fields that Kubernetes' types hold as values, not pointers: an object's
/// metadata, spec and status, pod templates, a container's resources, rollout strategies,
/// statuses' nested structs.
const POINTER_FREE_STRUCTS: &[&str] = &[
    "daemonEndpoints",
    "jobTemplate",
    "loadBalancer",
    "metadata",
    "nodeInfo",
    "resources",
    "spec",
    "status",
    "strategy",
    "template",
    "updateStrategy",
];

/// Optional fields of self-decoding types (times, quantities, int-or-strings) that
/// Kubernetes' types hold as pointers.
const POINTER_VALUES: &[&str] = &[
    "completionTime",
    "deletionTimestamp",
    "lastScheduleTime",
    "lastSuccessfulTime",
    "maxSurge",
    "maxUnavailable",
    "minAvailable",
    "partition",
    "sizeLimit",
    "startTime",
];

/// The Go name of the struct field `json_name` whose schema is `schema`.
fn go_field_name(json_name: &str, schema: &Value) -> String {
    if json_name == "metadata"
        && let Some(name) = reference(schema).map(short_type)
        && matches!(name, "ObjectMeta" | "ListMeta")
    {
        return name.to_owned();
    }
    let word_end = json_name
        .find(|c: char| !c.is_ascii_lowercase())
        .unwrap_or(json_name.len());
    let (word, rest) = json_name.split_at(word_end);
    if let Some((_, upper)) = INITIALISMS.iter().find(|(lower, _)| *lower == word) {
        return format!("{upper}{rest}");
    }
    let mut chars = json_name.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// A type that decodes itself (`UnmarshalJSON`), as `unmarshalerDecoder` calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SelfDecoding {
    Quantity,
    Time,
    MicroTime,
    IntOrString,
    /// RawExtension, FieldsV1, apiextensions' JSON: any value, kept as it is.
    Raw,
}

/// What a schema decodes into.
enum GoValue<'a> {
    /// A struct: its schema, its definition's name, its Go type name (`v1.PodSpec`).
    Struct(&'a Value, &'a str, String),
    /// A map from strings to values of this schema, with the Go type its slice values print
    /// where the Go field table has it (`v1.ExtraValue`).
    Map(&'a Value, Option<String>),
    /// A slice of values of this schema, with its Go type name.
    Slice(&'a Value, String),
    String,
    Int32,
    Int64,
    Uint8,
    Float64,
    Bool,
    Bytes,
    SelfDecoding(SelfDecoding),
    /// A type this port does not follow.
    Unknown,
}

/// The Go field a JSON name decodes into.
struct GoField<'a> {
    schema: &'a Value,
    /// `structFieldDecoder`'s name.
    name: String,
    /// The structs embedded inline that hold the field, outermost first, whose decoders
    /// wrap it too.
    embedded_in: Vec<String>,
    pointer: bool,
    /// The Go type a slice decoder prints, where the Go field table has it.
    printed_type: Option<String>,
    /// The top-level `apiVersion` or `kind`, which upstream reads before decoding.
    top_type_meta: bool,
}

struct Decoding<'r, 'a> {
    resolve: &'r dyn Fn(&str) -> Option<&'a Value>,
}

/// json-iterator's error for `bytes` (JSON) decoded into the definition `name` (`schema`, its
/// references looked up by `resolve`), or `None` when it decodes, or the port gives up.
pub(crate) fn type_error<'a>(
    bytes: &[u8],
    name: &'a str,
    schema: &'a Value,
    resolve: &dyn Fn(&str) -> Option<&'a Value>,
) -> Option<String> {
    let decoding = Decoding { resolve };
    let mut it = Iter::new(bytes);
    let top = GoValue::Struct(schema, name, go_named(name));
    decoding.decode(&mut it, &top, false, 0)?;
    // `Unmarshal`: anything but white space after the value is an error of its own.
    if it.next_token() != 0 {
        it.report("Unmarshal", b"there are bytes left after unmarshal");
    }
    if it.gave_up {
        return None;
    }
    it.error
        .as_ref()
        .and_then(Failure::text)
        .map(|text| go_string(&text))
}

/// Bytes as Go's JSON encoder writes a string holding them: each byte that is not part of
/// valid UTF-8 as U+FFFD.
fn go_string(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        text.extend(std::iter::repeat_n('\u{fffd}', chunk.invalid().len()));
    }
    text
}

/// `Some(())` to go on, `None` when the port gives up.
type Step = Option<()>;

impl<'a> Decoding<'_, 'a> {
    fn classify(&self, schema: &'a Value) -> GoValue<'a> {
        if let Some(name) = reference(schema) {
            match short_type(name) {
                "Quantity" => return GoValue::SelfDecoding(SelfDecoding::Quantity),
                "Time" => return GoValue::SelfDecoding(SelfDecoding::Time),
                "MicroTime" => return GoValue::SelfDecoding(SelfDecoding::MicroTime),
                "IntOrString" => return GoValue::SelfDecoding(SelfDecoding::IntOrString),
                "RawExtension" | "FieldsV1" | "JSON" => {
                    return GoValue::SelfDecoding(SelfDecoding::Raw);
                }
                "Duration"
                | "JSONSchemaPropsOrArray"
                | "JSONSchemaPropsOrBool"
                | "JSONSchemaPropsOrStringArray" => return GoValue::Unknown,
                _ => {}
            }
            return match (self.resolve)(name) {
                Some(definition) => self.classify_definition(definition, Some(name)),
                None => GoValue::Unknown,
            };
        }
        self.classify_definition(schema, None)
    }

    fn classify_definition(&self, schema: &'a Value, name: Option<&'a str>) -> GoValue<'a> {
        if schema.get("x-kubernetes-int-or-string").is_some() {
            return GoValue::SelfDecoding(SelfDecoding::IntOrString);
        }
        if schema.get("x-kubernetes-preserve-unknown-fields").is_some() {
            return GoValue::Unknown;
        }
        let format = schema.get("format").and_then(Value::as_str);
        match schema.get("type").and_then(Value::as_str) {
            Some("object") if schema.get("properties").is_some() => match name {
                Some(name) => GoValue::Struct(schema, name, go_named(name)),
                None => GoValue::Unknown,
            },
            Some("object") => match schema.get("additionalProperties") {
                Some(values) if values.is_object() => GoValue::Map(values, None),
                _ => GoValue::Unknown,
            },
            Some("array") => match (schema.get("items"), self.go_type(schema)) {
                (Some(items), Some(go_type)) => GoValue::Slice(items, go_type),
                _ => GoValue::Unknown,
            },
            Some("string") if format == Some("byte") => GoValue::Bytes,
            Some("string") => GoValue::String,
            Some("integer") if format == Some("int32") => GoValue::Int32,
            Some("integer") => GoValue::Int64,
            Some("number") => GoValue::Float64,
            Some("boolean") => GoValue::Bool,
            _ => GoValue::Unknown,
        }
    }

    /// The Go type a schema decodes into, as a slice decoder names its type.
    fn go_type(&self, schema: &Value) -> Option<String> {
        if let Some(name) = reference(schema) {
            return Some(match short_type(name) {
                "Quantity" => "resource.Quantity".to_owned(),
                "IntOrString" => "intstr.IntOrString".to_owned(),
                "RawExtension" => "runtime.RawExtension".to_owned(),
                _ => go_named(name),
            });
        }
        unnamed_go_type(schema, |inner| self.go_type(inner))
    }

    /// The field `key` of the struct `definition` (`schema`), if it has one.
    fn field(
        &self,
        schema: &'a Value,
        definition: &str,
        key: &str,
        top: bool,
    ) -> Option<GoField<'a>> {
        let field_schema = schema.get("properties")?.get(key)?;
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|names| names.iter().any(|n| n == key));
        // The kinds embed TypeMeta: `apiVersion` and `kind` are its fields.
        let type_meta = matches!(key, "apiVersion" | "kind")
            && schema.get("x-kubernetes-group-version-kind").is_some();
        if let Some(found) = go_fields::field(definition, key) {
            return Some(GoField {
                schema: field_schema,
                name: found.field.name.to_owned(),
                embedded_in: found.embedded.iter().map(|e| (*e).to_owned()).collect(),
                pointer: found.pointer(),
                printed_type: Some(found.printed_type()),
                top_type_meta: top && type_meta,
            });
        }
        // A type the Go field table lacks: Kubernetes' conventions.
        let embedded_in = if type_meta {
            vec!["TypeMeta".to_owned()]
        } else {
            embedding(definition, key).into_iter().collect()
        };
        let pointer = !required && self.is_pointer(definition, key, field_schema);
        Some(GoField {
            schema: field_schema,
            name: go_field_name(key, field_schema),
            embedded_in,
            pointer,
            printed_type: None,
            top_type_meta: top && type_meta,
        })
    }

    /// Whether the optional field `key` of `definition` is a Go pointer.
    fn is_pointer(&self, definition: &str, key: &str, schema: &'a Value) -> bool {
        match self.classify(schema) {
            GoValue::Struct(..) => !POINTER_FREE_STRUCTS.contains(&key),
            GoValue::SelfDecoding(_) => POINTER_VALUES.contains(&key),
            GoValue::Int32 | GoValue::Int64 | GoValue::Float64 | GoValue::Bool => {
                // The protobuf table marks the optional numbers and bools that are values.
                let value = table_message(definition)
                    .and_then(|message| message.named(key))
                    .is_some_and(|(_, field)| field.zero_is_unset);
                !value
            }
            _ => false,
        }
    }

    /// Decodes one value of `go` (through an `OptionalDecoder` when `pointer`).
    fn decode(&self, it: &mut Iter, go: &GoValue<'a>, pointer: bool, depth: usize) -> Step {
        if depth > MAX_DEPTH || it.gave_up {
            return None;
        }
        if pointer && it.read_nil() {
            return Some(());
        }
        match go {
            GoValue::String => {
                it.read_string();
            }
            GoValue::Int32 => {
                if !it.read_nil() {
                    it.read_int32();
                }
            }
            GoValue::Int64 => {
                if !it.read_nil() {
                    it.read_int64();
                }
            }
            GoValue::Uint8 => {
                if !it.read_nil() {
                    it.read_uint8();
                }
            }
            GoValue::Float64 => {
                if !it.read_nil() {
                    it.read_float64();
                }
            }
            GoValue::Bool => {
                if !it.read_nil() {
                    it.read_bool();
                }
            }
            GoValue::Bytes => self.bytes(it, depth)?,
            GoValue::SelfDecoding(kind) => {
                // `unmarshalerDecoder`: the value's bytes, handed to `UnmarshalJSON`.
                it.next_token();
                it.unread_byte();
                let raw = it.skip_and_return_bytes();
                if let Some(problem) = self_decoding_error(*kind, &raw)? {
                    it.report("unmarshalerDecoder", problem.as_bytes());
                }
            }
            GoValue::Struct(schema, definition, name) => {
                self.structure(it, schema, definition, name, depth)?;
            }
            GoValue::Map(values, element) => self.map(it, values, element.as_deref(), depth)?,
            GoValue::Slice(items, name) => {
                let elements = self.classify(items);
                self.slice(it, &elements, name, depth)?;
            }
            // A type this port does not follow: assumed to take a value while nothing has
            // failed yet; after a misfit, where its reading would matter, the port gives up.
            GoValue::Unknown if it.failed() => return None,
            GoValue::Unknown => it.skip(depth),
        }
        if it.gave_up { None } else { Some(()) }
    }

    /// `base64Codec`: `null`, a base64 string (`StdEncoding`), or an array of bytes.
    fn bytes(&self, it: &mut Iter, depth: usize) -> Step {
        if it.read_nil() {
            return Some(());
        }
        match it.peek() {
            b'"' => {
                let text = it.read_string();
                if let Err(problem) = std_base64(&text) {
                    it.report("decode base64", problem.as_bytes());
                }
            }
            b'[' => self.slice(it, &GoValue::Uint8, "[]uint8", depth)?,
            _ => it.report("base64Codec", b"invalid input"),
        }
        Some(())
    }

    /// `generalStructDecoder` (more than ten fields) or the hashed decoders json-iterator
    /// makes for one to ten, which read names and ends in their own ways; a struct with no
    /// fields is `skipObjectDecoder`.
    fn structure(
        &self,
        it: &mut Iter,
        schema: &'a Value,
        definition: &str,
        name: &str,
        depth: usize,
    ) -> Step {
        let count = go_fields::field_count(definition).unwrap_or_else(|| {
            schema
                .get("properties")
                .and_then(Value::as_object)
                .map_or(0, |p| p.len())
        });
        if count == 0 {
            if !matches!(it.peek(), b'{' | b'n') {
                it.report("skipObjectDecoder", b"expect object or null");
                return Some(());
            }
            it.skip(depth);
            return Some(());
        }
        if !it.read_object_start() {
            return Some(());
        }
        let top = depth == 0;
        if count > 10 {
            let mut c = b',';
            while c == b',' {
                let key = it.read_string();
                let field = std::str::from_utf8(&key)
                    .ok()
                    .and_then(|key| self.field(schema, definition, key, top));
                let colon = it.next_token();
                if colon != b':' {
                    let mut message = b"expect : after object field, but found ".to_vec();
                    message.push(colon);
                    it.report("ReadObject", &message);
                }
                match field {
                    Some(field) => self.field_value(it, &field, depth)?,
                    None => it.skip(depth),
                }
                c = it.next_token();
            }
            if it.failed() {
                it.wrap(&format!("{name}."));
            }
            if c != b'}' {
                let mut message = b"expect }, but found ".to_vec();
                message.push(c);
                it.report("struct Decode", &message);
            }
        } else {
            loop {
                let field = it.read_field_name().and_then(|key| {
                    let key = std::str::from_utf8(&key).ok()?;
                    self.field(schema, definition, key, top)
                });
                match field {
                    Some(field) => self.field_value(it, &field, depth)?,
                    None => it.skip(depth),
                }
                if it.is_object_end() {
                    break;
                }
            }
            if it.failed() {
                it.wrap(&format!("{name}."));
            }
        }
        if it.gave_up { None } else { Some(()) }
    }

    /// `structFieldDecoder`: the field's value, then its Go name before any error.
    fn field_value(&self, it: &mut Iter, field: &GoField<'a>, depth: usize) -> Step {
        let clean = !it.failed();
        let go = match (self.classify(field.schema), &field.printed_type) {
            (GoValue::Slice(items, _), Some(printed)) => GoValue::Slice(items, printed.clone()),
            (GoValue::Map(values, _), Some(printed)) => {
                let element = printed
                    .strip_prefix("map[")
                    .and_then(|rest| rest.split_once(']'))
                    .map(|(_, element)| element.to_owned());
                GoValue::Map(values, element)
            }
            (go, _) => go,
        };
        self.decode(it, &go, field.pointer, depth + 1)?;
        if field.top_type_meta && clean && it.failed() {
            // Upstream's serializer refuses such a body before it decodes it.
            return None;
        }
        if it.failed() {
            it.wrap(&format!("{}: ", field.name));
            for embedded in field.embedded_in.iter().rev() {
                it.wrap(&format!("{embedded}: "));
            }
        }
        Some(())
    }

    /// `mapDecoder` with string keys.
    fn map(&self, it: &mut Iter, values: &'a Value, element: Option<&str>, depth: usize) -> Step {
        let go = match (self.classify(values), element) {
            (GoValue::Slice(items, _), Some(printed)) => GoValue::Slice(items, printed.to_owned()),
            (go, _) => go,
        };
        let c = it.next_token();
        if c == b'n' {
            it.skip_three_bytes(b'u', b'l', b'l');
            return Some(());
        }
        if c != b'{' {
            let mut message = b"expect { or n, but found ".to_vec();
            message.push(c);
            it.report("ReadMapCB", &message);
            return Some(());
        }
        if it.next_token() == b'}' {
            return Some(());
        }
        it.unread_byte();
        let mut first = true;
        loop {
            if !first {
                let c = it.next_token();
                if c != b',' {
                    if c != b'}' {
                        let mut message = b"expect }, but found ".to_vec();
                        message.push(c);
                        it.report("ReadMapCB", &message);
                    }
                    return Some(());
                }
            }
            first = false;
            it.read_string();
            let c = it.next_token();
            if c != b':' {
                let mut message = b"expect : after object field, but found ".to_vec();
                message.push(c);
                it.report("ReadMapCB", &message);
                return Some(());
            }
            self.decode(it, &go, false, depth + 1)?;
        }
    }

    /// `sliceDecoder`: its elements, then its type before any error.
    fn slice(&self, it: &mut Iter, elements: &GoValue<'a>, name: &str, depth: usize) -> Step {
        self.slice_elements(it, elements, depth)?;
        if it.failed() {
            it.wrap(&format!("{name}: "));
        }
        Some(())
    }

    fn slice_elements(&self, it: &mut Iter, elements: &GoValue<'a>, depth: usize) -> Step {
        let c = it.next_token();
        if c == b'n' {
            it.skip_three_bytes(b'u', b'l', b'l');
            return Some(());
        }
        if c != b'[' {
            let mut message = b"expect [ or n, but found ".to_vec();
            message.push(c);
            it.report("decode slice", &message);
            return Some(());
        }
        if it.next_token() == b']' {
            return Some(());
        }
        it.unread_byte();
        self.decode(it, elements, false, depth + 1)?;
        let mut c = it.next_token();
        while c == b',' {
            self.decode(it, elements, false, depth + 1)?;
            c = it.next_token();
        }
        if c != b']' {
            let mut message = b"expect ], but found ".to_vec();
            message.push(c);
            it.report("decode slice", &message);
        }
        Some(())
    }
}

/// The protobuf table's message for an OpenAPI definition (`io.k8s.api.core.v1.Volume` is
/// `api.core.v1` `Volume`), through an index by full name made on first use.
fn table_message(definition: &str) -> Option<&'static Message> {
    static BY_NAME: OnceLock<HashMap<String, &'static Message>> = OnceLock::new();
    let index = BY_NAME.get_or_init(|| {
        let table = Table::get();
        table
            .messages
            .iter()
            .map(|((package, kind), message)| (format!("{package}.{kind}"), message))
            .collect()
    });
    let name = definition.strip_prefix("io.k8s.")?.replace('-', "_");
    index.get(&name).copied()
}

/// The Go name of the struct that `definition` embeds inline and that holds the JSON field
/// `key`, in 1.20's names (`Probe` embedded `Handler`, renamed `ProbeHandler` in 1.23).
fn embedding(definition: &str, key: &str) -> Option<String> {
    let message = table_message(definition)?;
    let table = Table::get();
    message.ordered().find_map(|(_, field)| {
        let FieldKind::Message(embedded) = field.kind else {
            return None;
        };
        if field.cardinality != Cardinality::Inline {
            return None;
        }
        table.messages.get(&embedded)?.named(key)?;
        Some(match embedded.1 {
            "ProbeHandler" => "Handler".to_owned(),
            other => other.to_owned(),
        })
    })
}

/// What a self-decoding type's `UnmarshalJSON` answers for `raw`: `Some(None)` when it takes
/// it, `None` where this port does not follow (an empty value, which upstream's int-or-string
/// indexes past).
fn self_decoding_error(kind: SelfDecoding, raw: &[u8]) -> Option<Option<String>> {
    let is_null = raw == b"null";
    Some(match kind {
        SelfDecoding::Raw => None,
        _ if is_null => None,
        SelfDecoding::Quantity => {
            // The quotes are cut, not unescaped, then `strings.TrimSpace`.
            let inner = match raw {
                [b'"', inner @ .., b'"'] => inner,
                other => other,
            };
            let text = String::from_utf8_lossy(inner);
            decoders::quantity_text_error(text.trim()).map(str::to_owned)
        }
        SelfDecoding::Time | SelfDecoding::MicroTime => {
            let layout = if kind == SelfDecoding::Time {
                decoders::TimeType::Time
            } else {
                decoders::TimeType::MicroTime
            };
            match serde_json::from_slice::<Value>(raw) {
                Ok(value) => decoders::time_error(&value, layout),
                Err(e) => Some(super::json_syntax_error(raw, &e)),
            }
        }
        SelfDecoding::IntOrString => {
            let first = *raw.first()?;
            let into = if first == b'"' { "string" } else { "int32" };
            match serde_json::from_slice::<Value>(raw) {
                Err(e) => Some(super::json_syntax_error(raw, &e)),
                Ok(Value::Null) => None,
                Ok(Value::String(_)) if into == "string" => None,
                Ok(Value::Number(n)) if into == "int32" => {
                    let fits = n.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
                        && !String::from_utf8_lossy(raw).contains(['.', 'e', 'E']);
                    (!fits).then(|| {
                        format!(
                            "json: cannot unmarshal number {} into Go value of type int32",
                            String::from_utf8_lossy(raw)
                        )
                    })
                }
                Ok(other) => Some(format!(
                    "json: cannot unmarshal {} into Go value of type {into}",
                    super::json_kind(&other)
                )),
            }
        }
    })
}

/// Go's `base64.StdEncoding.DecodeString` error for `text` (`decodeQuantum`, group by group:
/// line breaks skipped, `=` padding required), as `illegal base64 data at input byte N`.
fn std_base64(text: &[u8]) -> Result<(), String> {
    let corrupt = |at: usize| Err(format!("illegal base64 data at input byte {at}"));
    let value = |b: u8| matches!(b, b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/');
    let line_break = |b: u8| b == b'\n' || b == b'\r';
    let mut si = 0;
    while si < text.len() {
        let mut j = 0;
        while j < 4 {
            if si == text.len() {
                // Not a whole group: without padding, the group's start is corrupt.
                return if j == 0 { Ok(()) } else { corrupt(si - j) };
            }
            let b = text[si];
            si += 1;
            if value(b) {
                j += 1;
                continue;
            }
            if line_break(b) {
                continue;
            }
            if b != b'=' {
                return corrupt(si - 1);
            }
            match j {
                0 | 1 => return corrupt(si - 1),
                2 => {
                    while si < text.len() && line_break(text[si]) {
                        si += 1;
                    }
                    if si == text.len() {
                        return corrupt(text.len());
                    }
                    if text[si] != b'=' {
                        return corrupt(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < text.len() && line_break(text[si]) {
                si += 1;
            }
            if si < text.len() {
                return corrupt(si);
            }
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Definitions shaped as the Go types the expected texts were produced with (json-iterator
    /// v1.1.10 decoding into Go structs with these fields, pointers where the table and
    /// `POINTER_*` say; `PodSpec` has more than ten fields, so `generalStructDecoder` reads it).
    fn definitions() -> Value {
        let gvk = json!([{"group": "apps", "version": "v1", "kind": "Deployment"}]);
        let r = |name: &str| json!({"$ref": format!("#/definitions/{name}")});
        let quantities = json!({"type": "object", "additionalProperties": r("io.k8s.apimachinery.pkg.api.resource.Quantity")});
        let mut pod_spec = json!({
            "dnsPolicy": {"type": "string"},
            "containers": {"type": "array", "items": r("io.k8s.api.core.v1.Container")},
            "volumes": {"type": "array", "items": r("io.k8s.api.core.v1.Volume")},
            "activeDeadlineSeconds": {"type": "integer", "format": "int64"},
        });
        for i in 1..=7 {
            pod_spec[format!("a{i}")] = json!({"type": "string"});
        }
        json!({
            "io.k8s.api.apps.v1.Deployment": {"type": "object", "x-kubernetes-group-version-kind": gvk, "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": r("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "spec": r("io.k8s.api.apps.v1.DeploymentSpec")}},
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
                "name": {"type": "string"}, "uid": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "creationTimestamp": r("io.k8s.apimachinery.pkg.apis.meta.v1.Time"),
                "deletionTimestamp": r("io.k8s.apimachinery.pkg.apis.meta.v1.Time")}},
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
            "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
            "io.k8s.api.apps.v1.DeploymentSpec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "paused": {"type": "boolean"},
                "minReadySeconds": {"type": "integer", "format": "int32"},
                "strategy": r("io.k8s.api.apps.v1.DeploymentStrategy"),
                "template": r("io.k8s.api.core.v1.PodTemplateSpec")}},
            "io.k8s.api.apps.v1.DeploymentStrategy": {"type": "object", "properties": {
                "maxSurge": r("io.k8s.apimachinery.pkg.util.intstr.IntOrString")}},
            "io.k8s.api.core.v1.PodTemplateSpec": {"type": "object", "properties": {
                "metadata": r("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "spec": r("io.k8s.api.core.v1.PodSpec")}},
            "io.k8s.api.core.v1.PodSpec": {"type": "object", "properties": pod_spec, "required": ["containers"]},
            "io.k8s.api.core.v1.Container": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "image": {"type": "string"},
                "ports": {"type": "array", "items": r("io.k8s.api.core.v1.ContainerPort")},
                "resources": r("io.k8s.api.core.v1.ResourceRequirements")}},
            "io.k8s.api.core.v1.ContainerPort": {"type": "object", "required": ["containerPort"], "properties": {
                "containerPort": {"type": "integer", "format": "int32"}}},
            "io.k8s.api.core.v1.ResourceRequirements": {"type": "object", "properties": {
                "limits": quantities.clone(), "requests": quantities}},
            "io.k8s.api.core.v1.Volume": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "configMap": r("io.k8s.api.core.v1.ConfigMapVolumeSource")}},
            "io.k8s.api.core.v1.ConfigMapVolumeSource": {"type": "object", "properties": {
                "name": {"type": "string"},
                "defaultMode": {"type": "integer", "format": "int32"}}},
            "io.k8s.api.core.v1.Secret": {"type": "object", "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Secret"}], "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": r("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "data": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "stringData": {"type": "object", "additionalProperties": {"type": "string"}},
                "type": {"type": "string"}}},
            "io.k8s.api.certificates.v1.CertificateSigningRequestSpec": {"type": "object", "properties": {
                "request": {"type": "string", "format": "byte"},
                "extra": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}}},
            "io.k8s.api.test.v1.Scale": {"type": "object", "properties": {
                "ratio": {"type": "number", "format": "double"},
                "big": {"type": "integer", "format": "int64"}}},
        })
    }

    fn error(kind: &str, body: &str) -> Option<String> {
        static DEFINITIONS: OnceLock<Value> = OnceLock::new();
        let defs = DEFINITIONS.get_or_init(definitions);
        let name = match kind {
            "Deployment" => "io.k8s.api.apps.v1.Deployment",
            "Secret" => "io.k8s.api.core.v1.Secret",
            "CSRSpec" => "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
            _ => "io.k8s.api.test.v1.Scale",
        };
        let resolve = |name: &str| defs.get(name);
        type_error(body.as_bytes(), name, &defs[name], &resolve)
    }

    /// What json-iterator v1.1.10 answers for these bodies decoded into the Go structs the
    /// definitions describe (run with Go 1.19; the texts are `err.Error()`, its 0xff byte
    /// shown as U+FFFD, as a JSON `Status` carries it): readers' reports, positions, the
    /// wrapping of each decoder, what follows a misfit read on (a `,` after it), fields of a
    /// struct embedded inline, self-decoding types, base64, floats and overflows.
    #[test]
    fn texts_are_json_iterators() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "Deployment",
                r#"{"spec":{"replicas":"3"}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Replicas: readUint32: unexpected character: \u{fffd}, error found in #10 byte of ...|eplicas\":\"3\"}}|..., bigger context ...|{\"spec\":{\"replicas\":\"3\"}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"replicas":3,"paused":true}}"#,
                None,
            ),
            (
                "Deployment",
                r#"{"metadata":{"name":1,"uid":"x"}}"#,
                Some(
                    "v1.Deployment.ObjectMeta: v1.ObjectMeta.UID: Name: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|:{\"name\":1,\"uid\":\"x\"|..., bigger context ...|{\"metadata\":{\"name\":1,\"uid\":\"x\"}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"metadata":{"name":1,"uid":"x"},"kind":"Deployment"}"#,
                Some(
                    "v1.Deployment.TypeMeta: Kind: ObjectMeta: v1.ObjectMeta.UID: Name: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|:{\"name\":1,\"uid\":\"x\"|..., bigger context ...|{\"metadata\":{\"name\":1,\"uid\":\"x\"},\"kind\":\"Deployment\"}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"two","memory":"1Gi"},"requests":{"cpu":"1"}},"image":"i"}]}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.Containers: []v1.Container: v1.Container.Resources: v1.ResourceRequirements.Limits: unmarshalerDecoder: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', error found in #10 byte of ...|cpu\":\"two\",\"memory\":|..., bigger context ...|s\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"two\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"1\"}},\"image\":\"|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"two"}}}]}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.Containers: []v1.Container: v1.Container.Resources: v1.ResourceRequirements.Limits: unmarshalerDecoder: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', error found in #10 byte of ...|cpu\":\"two\"}}}]}}}}|..., bigger context ...|s\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"two\"}}}]}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"requests":{"memory":"512mi"}}}]}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.Containers: []v1.Container: v1.Container.Resources: v1.ResourceRequirements.Requests: unmarshalerDecoder: unable to parse quantity's suffix, error found in #10 byte of ...|y\":\"512mi\"}}}]}}}}|..., bigger context ...|ame\":\"c\",\"resources\":{\"requests\":{\"memory\":\"512mi\"}}}]}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"metadata":{"name":"q","creationTimestamp":"2026-11-27"}}"#,
                Some(
                    "v1.Deployment.ObjectMeta: v1.ObjectMeta.CreationTimestamp: unmarshalerDecoder: parsing time \"2026-11-27\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as \"T\", error found in #10 byte of ...|026-11-27\"}}|..., bigger context ...|data\":{\"name\":\"q\",\"creationTimestamp\":\"2026-11-27\"}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"metadata":{"creationTimestamp":5,"name":"q"}}"#,
                Some(
                    "v1.Deployment.ObjectMeta: v1.ObjectMeta.Name: CreationTimestamp: unmarshalerDecoder: json: cannot unmarshal number into Go value of type string, error found in #10 byte of ...|mestamp\":5,\"name\":\"q|..., bigger context ...|{\"metadata\":{\"creationTimestamp\":5,\"name\":\"q\"}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"metadata":{"deletionTimestamp":"x","name":"q"}}"#,
                Some(
                    "v1.Deployment.ObjectMeta: v1.ObjectMeta.Name: DeletionTimestamp: unmarshalerDecoder: parsing time \"x\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"x\" as \"2006\", error found in #10 byte of ...|stamp\":\"x\",\"name\":\"q|..., bigger context ...|{\"metadata\":{\"deletionTimestamp\":\"x\",\"name\":\"q\"}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"replicas":3000000000}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Replicas: ReadInt32: overflow: 3000000000, error found in #10 byte of ...|3000000000}}|..., bigger context ...|{\"spec\":{\"replicas\":3000000000}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"replicas":99999999999}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Replicas: readUint32: overflow, error found in #10 byte of ...|\":99999999999}}|..., bigger context ...|{\"spec\":{\"replicas\":99999999999}}|...",
                ),
            ),
            ("Deployment", r#"{"spec":{"replicas":5000000000}}"#, None),
            (
                "Deployment",
                r#"{"spec":{"replicas":-2147483649}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Replicas: ReadInt32: overflow: 2147483649, error found in #10 byte of ...|2147483649}}|..., bigger context ...|{\"spec\":{\"replicas\":-2147483649}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"minReadySeconds":1.5,"paused":true}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.MinReadySeconds: assertInteger: can not decode float as int, error found in #10 byte of ...|Seconds\":1.5,\"paused|..., bigger context ...|{\"spec\":{\"minReadySeconds\":1.5,\"paused\":true}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"activeDeadlineSeconds":99999999999999999999}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.ActiveDeadlineSeconds: readUint64: overflow, error found in #10 byte of ...|\":999999999999999999|..., bigger context ...|emplate\":{\"spec\":{\"activeDeadlineSeconds\":99999999999999999999}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"activeDeadlineSeconds":9223372036854775808}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.ActiveDeadlineSeconds: ReadInt64: overflow: 9223372036854775808, error found in #10 byte of ...|6854775808}}}}|..., bigger context ...|spec\":{\"activeDeadlineSeconds\":9223372036854775808}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"volumes":[{"name":"v","configMap":{"name":5}}]}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.Volumes: []v1.Volume: v1.Volume.VolumeSource: ConfigMap: v1.ConfigMapVolumeSource.LocalObjectReference: Name: ReadString: expects \" or n, but found 5, error found in #10 byte of ...|:{\"name\":5}}]}}}}|..., bigger context ...|pec\":{\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":5}}]}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"volumes":[{"name":"v","configMap":{"defaultMode":"x"}}]}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.Volumes: []v1.Volume: v1.Volume.VolumeSource: ConfigMap: v1.ConfigMapVolumeSource.DefaultMode: readUint32: unexpected character: \u{fffd}, error found in #10 byte of ...|ultMode\":\"x\"}}]}}}}|..., bigger context ...|volumes\":[{\"name\":\"v\",\"configMap\":{\"defaultMode\":\"x\"}}]}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"volumes":[{"configMap":{"name":5},"name":"v"}]}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.Volumes: []v1.Volume: v1.Volume.Name: VolumeSource: ConfigMap: v1.ConfigMapVolumeSource.LocalObjectReference: Name: ReadString: expects \" or n, but found 5, error found in #10 byte of ...|:{\"name\":5},\"name\":\"|..., bigger context ...|mplate\":{\"spec\":{\"volumes\":[{\"configMap\":{\"name\":5},\"name\":\"v\"}]}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"containers":[{"name":5,"image":"i"}],"dnsPolicy":"x"}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.DNSPolicy: Containers: []v1.Container: v1.Container.Image: Name: ReadString: expects \" or n, but found 5, error found in #10 byte of ...|[{\"name\":5,\"image\":\"|..., bigger context ...|spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":5,\"image\":\"i\"}],\"dnsPolicy\":\"x\"}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"template":{"spec":{"dnsPolicy":5,"a1":"x","a2":"y"}}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Template: v1.PodTemplateSpec.Spec: v1.PodSpec.A2: A1: DNSPolicy: ReadString: expects \" or n, but found 5, error found in #10 byte of ...|sPolicy\":5,\"a1\":\"x\",|..., bigger context ...|{\"spec\":{\"template\":{\"spec\":{\"dnsPolicy\":5,\"a1\":\"x\",\"a2\":\"y\"}}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"strategy":{"maxSurge":true}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Strategy: v1.DeploymentStrategy.MaxSurge: unmarshalerDecoder: json: cannot unmarshal bool into Go value of type int32, error found in #10 byte of ...|urge\":true}}}|..., bigger context ...|{\"spec\":{\"strategy\":{\"maxSurge\":true}}}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"spec":{"strategy":{"maxSurge":1.5}}}"#,
                Some(
                    "v1.Deployment.Spec: v1.DeploymentSpec.Strategy: v1.DeploymentStrategy.MaxSurge: unmarshalerDecoder: json: cannot unmarshal number 1.5 into Go value of type int32, error found in #10 byte of ...|Surge\":1.5}}}|..., bigger context ...|{\"spec\":{\"strategy\":{\"maxSurge\":1.5}}}|...",
                ),
            ),
            (
                "Secret",
                r#"{"data":{"password":"hunter2"}}"#,
                Some(
                    "v1.Secret.Data: decode base64: illegal base64 data at input byte 4, error found in #10 byte of ...|:\"hunter2\"}}|..., bigger context ...|{\"data\":{\"password\":\"hunter2\"}}|...",
                ),
            ),
            (
                "Secret",
                r#"{"data":{"a":"aGk=","password":"hunter2"},"type":"Opaque"}"#,
                Some(
                    "v1.Secret.Type: Data: decode base64: illegal base64 data at input byte 4, error found in #10 byte of ...|:\"hunter2\"},\"type\":\"|..., bigger context ...|{\"data\":{\"a\":\"aGk=\",\"password\":\"hunter2\"},\"type\":\"Opaque\"}|...",
                ),
            ),
            (
                "Secret",
                r#"{"data":{"a":"aGk"}}"#,
                Some(
                    "v1.Secret.Data: decode base64: illegal base64 data at input byte 0, error found in #10 byte of ...|{\"a\":\"aGk\"}}|..., bigger context ...|{\"data\":{\"a\":\"aGk\"}}|...",
                ),
            ),
            (
                "Secret",
                r#"{"data":{"a":5}}"#,
                Some(
                    "v1.Secret.Data: base64Codec: invalid input, error found in #10 byte of ...|ata\":{\"a\":5}}|..., bigger context ...|{\"data\":{\"a\":5}}|...",
                ),
            ),
            (
                "Secret",
                r#"{"data":{"a":[1,300]}}"#,
                Some(
                    "v1.Secret.Data: []uint8: ReadUint8: overflow: 300, error found in #10 byte of ...|\"a\":[1,300]}}|..., bigger context ...|{\"data\":{\"a\":[1,300]}}|...",
                ),
            ),
            (
                "Scale",
                r#"{"ratio":"1.5"}"#,
                Some(
                    "v1.Scale.Ratio: readNumberAsString: invalid number, error found in #9 byte of ...|{\"ratio\":\"1.5\"}|..., bigger context ...|{\"ratio\":\"1.5\"}|...",
                ),
            ),
            (
                "Scale",
                r#"{"ratio":1e999}"#,
                Some("v1.Scale.Ratio: strconv.ParseFloat: parsing \"1e999\": value out of range"),
            ),
            (
                "Scale",
                r#"{"ratio":true,"big":1}"#,
                Some(
                    "v1.Scale.Ratio: readNumberAsString: invalid number, error found in #9 byte of ...|{\"ratio\":true,\"big\"|..., bigger context ...|{\"ratio\":true,\"big\":1}|...",
                ),
            ),
            (
                "Deployment",
                r#"{"metadata":{"labels":{"a":"<b>","c":1}}}"#,
                Some(
                    "v1.Deployment.ObjectMeta: v1.ObjectMeta.Labels: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|<b>\",\"c\":1}}}|..., bigger context ...|{\"metadata\":{\"labels\":{\"a\":\"<b>\",\"c\":1}}}|...",
                ),
            ),
            // A map of a named slice type: the slice decoder prints the Go type.
            (
                "CSRSpec",
                r#"{"extra":{"a":["x",1]},"request":"aGk="}"#,
                Some(
                    "v1.CertificateSigningRequestSpec.Request: Extra: v1.ExtraValue: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|\"a\":[\"x\",1]},\"reques|..., bigger context ...|{\"extra\":{\"a\":[\"x\",1]},\"request\":\"aGk=\"}|...",
                ),
            ),
        ];
        for (kind, body, want) in cases {
            assert_eq!(error(kind, body).as_deref(), *want, "{body}");
        }
    }

    /// Whatever the bytes (cut short, a byte changed: readers past a misfit meet such bytes),
    /// the port ends without panicking; a long map after a misfit is left where the reader,
    /// one byte off, stops making sense of it (json-iterator's answer for this body too).
    #[test]
    fn any_bytes_end() {
        let bodies = [
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"two","memory":"1Gi"}},"ports":[{"containerPort":1.5}]}],"volumes":[{"name":"v","configMap":{"name":5}}]}}},"metadata":{"labels":{"a\u00e9\ud800":"b"},"creationTimestamp":"x"}}"#,
            r#"{"data":{"a":"aGk=","b":[1,2,300]},"stringData":{"x":null},"metadata":{"name":"\"q"}}"#,
            r#"{"ratio":-0.5e-3,"big":-9223372036854775808}"#,
        ];
        for body in bodies {
            let bytes = body.as_bytes();
            for end in 0..=bytes.len() {
                let _ = error("Deployment", &String::from_utf8_lossy(&bytes[..end]));
                let _ = error("Secret", &String::from_utf8_lossy(&bytes[..end]));
                let _ = error("Scale", &String::from_utf8_lossy(&bytes[..end]));
            }
            for at in 0..bytes.len() {
                for replacement in [b'"', b',', b'{', b'[', b'\\', b'-', b'0', b'n', b'.'] {
                    let mut changed = bytes.to_vec();
                    changed[at] = replacement;
                    let text = String::from_utf8_lossy(&changed).into_owned();
                    let _ = error("Deployment", &text);
                    let _ = error("Secret", &text);
                }
            }
        }
        let labels: Vec<String> = (0..20_000).map(|i| format!("\"l{i}\":\"v\"")).collect();
        let many = format!(
            r#"{{"metadata":{{"name":1,"labels":{{{}}},"uid":"u"}}}}"#,
            labels.join(",")
        );
        let text = error("Deployment", &many).unwrap_or_default();
        assert!(
            text.starts_with(
                "v1.Deployment.ObjectMeta: v1.ObjectMeta.Labels: Name: ReadString: expects \" or n, but found 1, error found in #10 byte of ...|:{\"name\":1,\"labels\":|..."
            ),
            "{text:.200}"
        );
    }

    /// A misfit in the top-level `apiVersion` or `kind` is refused before decoding upstream.
    #[test]
    fn gives_up_on_top_level_type_meta() {
        assert_eq!(error("Deployment", r#"{"kind":1}"#), None);
        assert_eq!(
            error(
                "Deployment",
                r#"{"spec":{"paused":true},"apiVersion":true}"#
            ),
            None
        );
    }

    /// `base64.StdEncoding.DecodeString`'s answers, as Go 1.19 gives them.
    #[test]
    fn base64_fails_as_go_decodes() {
        let rows: &[(&[u8], Option<usize>)] = &[
            (b"aGk=", None),
            (b"aGVs\nbG8=", None),
            (b"", None),
            (b"aG==", None),
            (b"aG=\n=", None),
            (b"aGk=\n", None),
            (b"ab\rcd", None),
            (b"hunter2", Some(4)),
            (b"aGk", Some(0)),
            (b"a===", Some(1)),
            (b"aGk=x", Some(4)),
            (b"aG=", Some(3)),
            (b"abc!", Some(3)),
            (b"aGVsbG8gd29ybGQ", Some(12)),
        ];
        for (text, at) in rows {
            let want = at.map(|at| format!("illegal base64 data at input byte {at}"));
            assert_eq!(
                std_base64(text).err(),
                want,
                "{:?}",
                String::from_utf8_lossy(text)
            );
        }
    }
}
