//! `fieldValidation`: the fields of a write its kind does not know and the JSON keys it
//! repeats, worded as upstream's strict decoder words them (`unknown field "spec.foo"`,
//! `duplicate field "metadata.name"`, list items as `spec.containers[0].foo`), and what the
//! directive makes of them: a `Warning` header each (`Warn`, the default), a `strict decoding
//! error` (`Strict`), or nothing (`Ignore`).
//!
//! Unknown fields are what the kind's codec drops. The request object is walked beside the
//! codec's output; a key missing from the output is unknown unless the type only skipped it
//! (an empty value such as `creationTimestamp: null`, or a field the type does not write
//! back). Such a key is probed: the output goes through the codec again with a value of the
//! wrong type in the key's place, which a known field rejects or keeps and an unknown one
//! drops. Kinds whose codec passes JSON through unchanged therefore report nothing.
//!
//! Duplicate keys only exist in the raw body: a streaming pass over the JSON bytes with a
//! serde visitor sees every key, reports the repeated ones, and yields all problems in
//! document order, as upstream's decoder does. YAML bodies get unknown fields only.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// What a write does with unknown and duplicate fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Directive {
    /// Drop them silently.
    Ignore,
    /// Drop them and send a `Warning` header for each.
    Warn,
    /// Refuse the write.
    Strict,
}

/// Upstream's decoder stops collecting problems after this many.
const MAX_PROBLEMS: usize = 100;

/// How many missing keys one request may probe through the codec; beyond it a missing key
/// counts as unknown when its value is not empty.
const MAX_PROBES: usize = 32;

/// The values a probe puts in a missing key's place: no typed field but a free-form one takes
/// both, and a free-form one keeps them.
fn probes() -> [Value; 2] {
    [Value::Bool(true), Value::Object(serde_json::Map::new())]
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn item(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

/// One step into a JSON document.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn descend<'v>(mut value: &'v mut Value, steps: &[Step]) -> Option<&'v mut Value> {
    for step in steps {
        value = match step {
            Step::Key(key) => value.get_mut(key.as_str())?,
            Step::Index(i) => value.get_mut(*i)?,
        };
    }
    Some(value)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// A kind's codec (see [`crate::registry::Codec`]), borrowed for one check.
pub(crate) type Decode = dyn Fn(Value) -> Result<Value, serde_json::Error> + Send + Sync;

/// The paths of the fields in `input` that the codec dropped from `output` (its result for
/// `input`), in document order.
pub(crate) fn unknown_fields(codec: &Decode, input: &Value, output: &Value) -> Vec<String> {
    let mut walk = Walk {
        codec,
        root: output,
        steps: Vec::new(),
        found: Vec::new(),
        probes: 0,
    };
    walk.node(input, output, "");
    walk.found
}

struct Walk<'a> {
    codec: &'a Decode,
    root: &'a Value,
    steps: Vec<Step>,
    found: Vec<String>,
    probes: usize,
}

impl Walk<'_> {
    fn node(&mut self, input: &Value, output: &Value, path: &str) {
        match (input, output) {
            (Value::Object(input), Value::Object(output)) => {
                for (key, value) in input {
                    if self.found.len() >= MAX_PROBLEMS {
                        return;
                    }
                    let path = child(path, key);
                    match output.get(key) {
                        Some(out) => {
                            self.steps.push(Step::Key(key.clone()));
                            self.node(value, out, &path);
                            self.steps.pop();
                        }
                        None if self.is_unknown(key, value) => self.found.push(path),
                        None => {}
                    }
                }
            }
            (Value::Array(input), Value::Array(output)) => {
                for (i, (value, out)) in input.iter().zip(output).enumerate() {
                    self.steps.push(Step::Index(i));
                    self.node(value, out, &item(path, i));
                    self.steps.pop();
                }
            }
            _ => {}
        }
    }

    /// Whether a key the codec dropped is one the type does not have.
    fn is_unknown(&mut self, key: &str, value: &Value) -> bool {
        if self.probes >= MAX_PROBES {
            return !is_empty(value);
        }
        self.probes += 1;
        for probe in probes() {
            let mut doc = self.root.clone();
            let Some(Value::Object(parent)) = descend(&mut doc, &self.steps) else {
                return false;
            };
            parent.insert(key.to_owned(), probe);
            let Ok(mut out) = (self.codec)(doc) else {
                // A type error: the type has the field.
                return false;
            };
            match descend(&mut out, &self.steps) {
                Some(Value::Object(parent)) if !parent.contains_key(key) => {}
                // Kept, or the probe changed the document's shape: the type has the field.
                _ => return false,
            }
        }
        true
    }
}

/// One problem of a write body.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Problem {
    Unknown(String),
    Duplicate(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, path) = match self {
            Problem::Unknown(path) => ("unknown", path),
            Problem::Duplicate(path) => ("duplicate", path),
        };
        write!(f, "{what} field {}", Value::from(path.as_str()))
    }
}

/// Walks raw JSON: reports repeated keys, and the keys in `unknown` where they first occur.
struct Scan<'u> {
    unknown: &'u HashSet<&'u str>,
    problems: Vec<Problem>,
}

/// The scan at one value of the document.
struct Node<'s, 'u> {
    scan: &'s mut Scan<'u>,
    path: String,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Node { scan, path } = self;
        let mut i = 0;
        while seq
            .next_element_seed(Node {
                scan: &mut *scan,
                path: item(&path, i),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Node { scan, path } = self;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = child(&path, &key);
            let unknown = scan.unknown.contains(path.as_str());
            let first = seen.insert(key);
            if unknown {
                // Upstream skips an unknown field's value and names the field once.
                if first {
                    scan.problems.push(Problem::Unknown(path));
                }
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if !first {
                scan.problems.push(Problem::Duplicate(path.clone()));
            }
            map.next_value_seed(Node {
                scan: &mut *scan,
                path,
            })?;
        }
        Ok(())
    }
}

/// The problems of a body: its duplicate keys and the `unknown` paths, in document order
/// (unknown paths first when the body is not JSON).
fn scan(raw: &[u8], unknown: &[String]) -> Vec<Problem> {
    let set: HashSet<&str> = unknown.iter().map(String::as_str).collect();
    let mut scan = Scan {
        unknown: &set,
        problems: Vec::new(),
    };
    let mut deserializer = serde_json::Deserializer::from_slice(raw);
    let parsed = Node {
        scan: &mut scan,
        path: String::new(),
    }
    .deserialize(&mut deserializer)
    .and_then(|()| deserializer.end());
    if parsed.is_err() {
        // Not JSON (a YAML body): no duplicate keys to report.
        return unknown.iter().cloned().map(Problem::Unknown).collect();
    }
    let mut problems = scan.problems;
    // Unknown paths the body does not spell out (a field added on the way) go last.
    for path in unknown {
        let problem = Problem::Unknown(path.clone());
        if !problems.contains(&problem) {
            problems.push(problem);
        }
    }
    problems
}

/// Upstream's messages, each once, at most [`MAX_PROBLEMS`].
fn messages(problems: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for message in problems {
        if out.len() >= MAX_PROBLEMS {
            break;
        }
        if !out.contains(&message) {
            out.push(message);
        }
    }
    out
}

/// The problems of a create or update body: its duplicate keys and its unknown fields
/// (`input` decoded from `raw`, `output` the codec's result), in document order. A protobuf
/// body has none: upstream decodes protobuf leniently whatever the directive (its strict
/// serializer for protobuf is the protobuf serializer itself).
pub(crate) fn body_problems(
    codec: &Decode,
    raw: &[u8],
    input: &Value,
    output: &Value,
) -> Vec<String> {
    if crate::server::http::protobuf::is_protobuf(raw) {
        return Vec::new();
    }
    let unknown = unknown_fields(codec, input, output);
    messages(scan(raw, &unknown).iter().map(Problem::to_string))
}

/// The problems of a patch document itself: its duplicate keys, and for a JSON patch the
/// operation fields upstream's operation type does not have; worded as upstream words them
/// (a JSON patch's with a `json patch ` prefix).
pub(crate) fn patch_problems(raw: &[u8], json_patch: bool) -> Vec<String> {
    if !json_patch {
        return messages(scan(raw, &[]).iter().map(Problem::to_string));
    }
    const OPERATION_FIELDS: [&str; 4] = ["op", "path", "from", "value"];
    let mut unknown = Vec::new();
    if let Ok(Value::Array(operations)) = serde_json::from_slice::<Value>(raw) {
        for (i, operation) in operations.iter().enumerate() {
            if let Value::Object(fields) = operation {
                unknown.extend(
                    fields
                        .keys()
                        .filter(|k| !OPERATION_FIELDS.contains(&k.as_str()))
                        .map(|k| child(&item("", i), k)),
                );
            }
        }
    }
    messages(
        scan(raw, &unknown)
            .iter()
            .map(|p| format!("json patch {p}")),
    )
}

/// Joins patch-level problems and the patched object's unknown fields, patch first as
/// upstream reports them.
pub(crate) fn with_unknown(mut problems: Vec<String>, unknown: &[String]) -> Vec<String> {
    problems.extend(
        unknown
            .iter()
            .map(|path| Problem::Unknown(path.clone()).to_string()),
    );
    messages(problems)
}

/// `strict decoding error: <problem>, <problem>`, upstream's wording of a strict failure.
pub(crate) fn strict_error(problems: &[String]) -> String {
    format!("strict decoding error: {}", problems.join(", "))
}

/// A JSON value as Go's `fmt` prints the `map[string]interface{}` it decodes into with `%+v`
/// (`map[a:1 b:[x y]]`): how upstream shows a strategic merge patch in a 422.
pub(crate) fn go_print(value: &Value) -> String {
    let mut out = String::new();
    go_print_into(value, &mut out);
    out
}

fn go_print_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => out.push_str(&i.to_string()),
            (None, Some(f)) => out.push_str(&go_float(f)),
            (None, None) => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                go_print_into(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Go prints map keys sorted.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                if let Some(v) = map.get(key) {
                    go_print_into(v, out);
                }
            }
            out.push(']');
        }
    }
}

/// A float64 as Go's `%v`: the shortest representation, with an exponent (`1e+21`, `1e-05`)
/// outside [1e-4, 1e21).
fn go_float(f: f64) -> String {
    let magnitude = f.abs();
    if f == 0.0 || (1e-4..1e21).contains(&magnitude) {
        return f.to_string();
    }
    let text = format!("{f:e}");
    let Some((mantissa, exponent)) = text.split_once('e') else {
        return text;
    };
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Thing {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        created: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        items: Vec<Item>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        free: Option<Value>,
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        labels: std::collections::BTreeMap<String, String>,
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Item {
        #[serde(default)]
        port: i32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        on: bool,
    }

    fn codec(value: Value) -> Result<Value, serde_json::Error> {
        serde_json::to_value(serde_json::from_value::<Thing>(value)?)
    }

    fn problems(raw: &str) -> Vec<String> {
        let input: Value = serde_json::from_str(raw).unwrap();
        let output = codec(input.clone()).unwrap();
        body_problems(&codec, raw.as_bytes(), &input, &output)
    }

    #[test]
    fn unknown_and_duplicate_fields_in_document_order() {
        let rows: &[(&str, &[&str])] = &[
            (r#"{"name":"a"}"#, &[]),
            (r#"{"name":"a","foo":1}"#, &[r#"unknown field "foo""#]),
            (
                r#"{"name":"a","name":"b","foo":{"x":1,"x":2}}"#,
                &[r#"duplicate field "name""#, r#"unknown field "foo""#],
            ),
            (
                r#"{"foo":null,"name":"a","items":[{"port":1},{"port":2,"bar":true,"port":3}]}"#,
                &[
                    r#"unknown field "foo""#,
                    r#"unknown field "items[1].bar""#,
                    r#"duplicate field "items[1].port""#,
                ],
            ),
            // Known fields the type skips when empty are not unknown.
            (
                r#"{"name":"a","created":null,"items":[],"labels":{},"free":null}"#,
                &[],
            ),
            (r#"{"name":"a","items":[{"port":0,"on":false}]}"#, &[]),
            // Free-form values keep whatever they hold; their duplicate keys still count.
            (
                r#"{"name":"a","free":{"x":{"y":1,"y":2}}}"#,
                &[r#"duplicate field "free.x.y""#],
            ),
            (
                r#"{"name":"a","labels":{"k":"1","k":"2"}}"#,
                &[r#"duplicate field "labels.k""#],
            ),
            // An unknown field repeated is named once, and nothing inside it is looked at.
            (
                r#"{"name":"a","zz":{"q":1,"q":1},"zz":2}"#,
                &[r#"unknown field "zz""#],
            ),
        ];
        for (raw, want) in rows {
            assert_eq!(problems(raw), *want, "{raw}");
        }
    }

    #[test]
    fn yaml_bodies_report_unknown_fields_only() {
        let input = json!({"name": "a", "foo": 1});
        let output = codec(input.clone()).unwrap();
        let raw = b"name: a\nname: b\nfoo: 1\n";
        assert_eq!(
            body_problems(&codec, raw, &input, &output),
            [r#"unknown field "foo""#]
        );
    }

    /// A protobuf body's field numbers the decoder has no entry for are dropped without a
    /// word, as upstream's lenient protobuf decoding drops them.
    #[test]
    fn protobuf_bodies_report_no_unknown_fields() {
        fn same(value: Value) -> Result<Value, serde_json::Error> {
            Ok(value)
        }
        // A ConfigMap envelope: typeMeta {v1, ConfigMap}; raw {metadata {name: a, 99: 1}}.
        let meta = [&[0x0a, 1, b'a'][..], &[0x98, 0x06, 1]].concat();
        let raw = [&[0x0a, meta.len() as u8][..], &meta].concat();
        let type_meta = b"\x0a\x02v1\x12\x09ConfigMap";
        let body = [
            &b"k8s\0\x0a"[..],
            &[type_meta.len() as u8],
            type_meta,
            &[0x12, raw.len() as u8],
            &raw,
        ]
        .concat();
        let input = crate::server::http::protobuf::decode(&body).unwrap();
        assert_eq!(input["metadata"], json!({"name": "a"}));
        assert!(body_problems(&same, &body, &input, &input).is_empty());
    }

    #[test]
    fn pass_through_codecs_report_nothing() {
        fn same(value: Value) -> Result<Value, serde_json::Error> {
            Ok(value)
        }
        let input = json!({"anything": {"goes": [1, {"x": null}]}});
        assert!(unknown_fields(&same, &input, &input).is_empty());
    }

    #[test]
    fn problems_are_capped_like_upstream() {
        let fields: Vec<String> = (0..150).map(|i| format!("\"f{i}\":1")).collect();
        let raw = format!("{{\"name\":\"a\",{}}}", fields.join(","));
        let found = problems(&raw);
        assert_eq!(found.len(), MAX_PROBLEMS);
        assert_eq!(found[0], r#"unknown field "f0""#);
    }

    #[test]
    fn patch_documents() {
        assert_eq!(
            patch_problems(br#"{"spec":{"a":1,"a":2}}"#, false),
            [r#"duplicate field "spec.a""#]
        );
        assert_eq!(
            patch_problems(
                br#"[{"op":"add","path":"/x","value":{"k":1,"k":2},"extra":1,"op":"add"}]"#,
                true
            ),
            [
                r#"json patch duplicate field "[0].value.k""#,
                r#"json patch unknown field "[0].extra""#,
                r#"json patch duplicate field "[0].op""#,
            ]
        );
        assert_eq!(
            with_unknown(vec!["a".into()], &["spec.x".into()]),
            ["a", r#"unknown field "spec.x""#]
        );
        assert_eq!(
            strict_error(&["x".into(), "y".into()]),
            "strict decoding error: x, y"
        );
    }

    #[test]
    fn go_printing() {
        let rows = [
            (
                json!({"b": [1, "x"], "a": {"c": null}}),
                "map[a:map[c:<nil>] b:[1 x]]",
            ),
            (json!(1.5), "1.5"),
            (json!(1e21), "1e+21"),
            (json!(0.00001), "1e-05"),
            (json!(true), "true"),
        ];
        for (value, want) in rows {
            assert_eq!(go_print(&value), want);
        }
    }
}
