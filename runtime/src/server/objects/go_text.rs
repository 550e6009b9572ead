//! The texts of Go's decoders that kube-apiserver's answers embed: `encoding/json`'s syntax
//! errors and type errors (the latter found by walking a kind's OpenAPI definition),
//! `encoding/base64`'s corrupt input, `sigs.k8s.io/yaml`'s YAML errors (go-yaml's `yaml: line
//! N: ...`), and the hex summary upstream's handlers give of a body they could not read. Close
//! to Go's for the inputs clients send; Go's scanner contexts are simplified. `decoders`: the
//! errors of the API types that decode themselves (quantities, times); `jsoniter`: the type
//! errors of json-iterator, 1.20's JSON decoder.

use serde_json::Value;

mod decoders;
mod jsoniter;

pub(crate) use jsoniter::type_error as jsoniter_type_error;

/// How Go's JSON decoder names a JSON value's type in its errors.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `json.Unmarshal` error for bytes that are not JSON: `unexpected end of JSON input`
/// when they end early, else the first character it cannot take (`invalid character 'x'
/// looking for beginning of value`).
pub(crate) fn json_syntax_error(bytes: &[u8], error: &serde_json::Error) -> String {
    if error.is_eof() {
        return "unexpected end of JSON input".to_owned();
    }
    // serde_json reports the 1-based line and column of the character it stopped at.
    let mut line = 1;
    let mut column = 0;
    let mut found = None;
    for &byte in bytes {
        if byte == b'\n' {
            line += 1;
            column = 0;
            continue;
        }
        column += 1;
        if line == error.line() && column == error.column() {
            found = Some(byte);
            break;
        }
    }
    let shown = match found {
        Some(b'\'') => "'\\''".to_owned(),
        Some(b) if b.is_ascii_graphic() || b == b' ' => format!("'{}'", char::from(b)),
        Some(b) => format!("'\\x{b:02x}'"),
        None => return "unexpected end of JSON input".to_owned(),
    };
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    let nested =
        first == Some(&b'{') && bytes.iter().filter(|b| !b.is_ascii_whitespace()).count() > 1;
    let context = if nested {
        "looking for beginning of object key string"
    } else {
        "looking for beginning of value"
    };
    format!("invalid character {shown} {context}")
}

/// Go's `base64.RawURLEncoding.DecodeString`: URL-safe, no padding, line breaks skipped; the
/// error names the first byte it could not use.
pub(crate) fn raw_url_base64(text: &str) -> Result<Vec<u8>, String> {
    let corrupt = |at: usize| format!("illegal base64 data at input byte {at}");
    let mut sextets = Vec::with_capacity(text.len());
    let mut last = 0;
    for (at, byte) in text.bytes().enumerate() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            b'\r' | b'\n' => continue,
            _ => return Err(corrupt(at)),
        };
        sextets.push(value);
        last = at;
    }
    // A lone character after the last whole group of four carries no full byte.
    if sextets.len() % 4 == 1 {
        return Err(corrupt(last));
    }
    let mut out = Vec::with_capacity(sextets.len() * 3 / 4);
    for group in sextets.chunks(4) {
        let mut bits: u32 = 0;
        for (i, sextet) in group.iter().enumerate() {
            bits |= u32::from(*sextet) << (18 - 6 * i);
        }
        let bytes = bits.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len()]);
    }
    Ok(out)
}

/// `sigs.k8s.io/yaml`'s `YAMLToJSON` output for a parsed YAML document: Go's `json.Marshal`
/// of it, compact, object keys sorted by their bytes, `<`, `>`, `&`, U+2028 and U+2029
/// escaped as `\u003c`..., floats as Go's encoder writes them (`1e+21`, `1e-7`, `0.5`).
/// `None` for a value Go cannot write (which a parsed `Value` cannot hold anyway).
pub(crate) fn go_json(value: &Value) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    write_go_json(value, &mut out)?;
    Some(out)
}

fn write_go_json(value: &Value, out: &mut Vec<u8>) -> Option<()> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.extend_from_slice(i.to_string().as_bytes()),
            (_, Some(u), _) => out.extend_from_slice(u.to_string().as_bytes()),
            (_, _, Some(f)) => out.extend_from_slice(go_float(f)?.as_bytes()),
            _ => return None,
        },
        Value::String(text) => write_go_string(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_go_json(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_go_string(key, out);
                out.push(b':');
                write_go_json(item, out)?;
            }
            out.push(b'}');
        }
    }
    Some(())
}

/// Go's `encodeState.string` with HTML escaping, as `json.Marshal` writes strings.
fn write_go_string(text: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.extend_from_slice(format!("\\u{:04x}", u32::from(c)).as_bytes());
            }
            c if u32::from(c) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", u32::from(c)).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Go's `floatEncoder` for a float64: the shortest decimal that reads back, in exponent form
/// below 1e-6 and from 1e21 on (`1e+21`, `1.5e-7`). `None` for infinities and NaN, which Go
/// refuses to write.
fn go_float(f: f64) -> Option<String> {
    if !f.is_finite() {
        return None;
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` is the same shortest mantissa, with a bare exponent (`1.5e-7`).
        let text = format!("{f:e}");
        let (mantissa, exponent) = text.split_once('e')?;
        return Some(match exponent.strip_prefix('-') {
            Some(digits) => format!("{mantissa}e-{digits}"),
            None => format!("{mantissa}e+{exponent}"),
        });
    }
    Some(format!("{f}"))
}

/// `sigs.k8s.io/yaml`'s error for a YAML body it cannot convert: `error converting YAML to JSON:
/// yaml: line N: <problem>`, numbered as go-yaml v2 numbers it (a scanner error's line, a
/// parser error's line before it, as its marks count from zero).
pub(crate) fn yaml_error(error: &serde_yaml_ng::Error) -> String {
    let text = error.to_string();
    let (problem, rest) = text.split_once(" at line ").unwrap_or((text.as_str(), ""));
    let line_of = |s: &str| -> usize {
        s.split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    // Marks from zero, as go-yaml keeps them: the problem's, then the context's.
    let problem_line = line_of(rest).saturating_sub(1);
    let (context, context_line) = match rest.split_once(", while ") {
        Some((_, context)) => (
            context,
            context
                .split_once(" at line ")
                .map_or(0, |(_, at)| line_of(at).saturating_sub(1)),
        ),
        None => ("", 0),
    };
    let scanner = !context.starts_with("parsing");
    let line = if problem_line != 0 {
        problem_line + usize::from(scanner)
    } else {
        context_line
    };
    let at = if line == 0 {
        String::new()
    } else {
        format!("line {line}: ")
    };
    format!("error converting YAML to JSON: yaml: {at}{problem}")
}

/// Go's `json.Unmarshal` type error for `value` decoded into the Kubernetes type `schema`
/// describes (an OpenAPI definition called `name`, its references looked up by `resolve`):
/// What Go's `encoding/json` answers for `value` decoded into the definition `name`: the error
/// of a type that decodes itself (a quantity, a time), which stops the decoder where it is
/// met, else the first type error in document order, which the decoder saves while it goes
/// on: `json: cannot unmarshal number into Go struct field ConfigMap.data of type string`
/// (the innermost struct's name, then the JSON path of struct fields from the top, then the
/// Go type). `None` when every value fits, or the misfit is in a type whose texts are not
/// Go's (int-or-strings, free-form fields).
pub(crate) fn json_type_error<'a>(
    value: &Value,
    name: &str,
    schema: &'a Value,
    resolve: &dyn Fn(&str) -> Option<&'a Value>,
) -> Option<String> {
    let owner = short_type(name);
    let walk = |decoders| {
        let walker = TypeWalker { resolve, decoders };
        walker.walk(value, schema, Some(name), owner, &mut Vec::new())
    };
    walk(true).or_else(|| walk(false))
}

struct TypeWalker<'r, 'a> {
    resolve: &'r dyn Fn(&str) -> Option<&'a Value>,
    /// Report the errors of self-decoding types only, passing over type misfits as the decoder
    /// skips them; otherwise the misfits only.
    decoders: bool,
}

/// What `metav1.Time` answers for `text` as a query parameter or a JSON string: Go's
/// `time.Parse` error against RFC 3339, or `None` when it reads it.
pub(crate) fn time_text_error(text: &str) -> Option<String> {
    decoders::time_error(&Value::String(text.to_owned()), decoders::TimeType::Time)
}

/// The error of the self-decoding type `name` for `value`, if it is one kapi words as Go.
fn decoder_error(name: &str, value: &Value) -> Option<String> {
    match short_type(name) {
        "Quantity" => decoders::quantity_error(value).map(str::to_owned),
        "Time" => decoders::time_error(value, decoders::TimeType::Time),
        "MicroTime" => decoders::time_error(value, decoders::TimeType::MicroTime),
        _ => None,
    }
}

/// The definition a schema refers to, directly or through a one-element `allOf`.
fn reference(schema: &Value) -> Option<&str> {
    let direct = schema.get("$ref").and_then(Value::as_str);
    let wrapped = || {
        schema
            .get("allOf")?
            .as_array()?
            .first()?
            .get("$ref")?
            .as_str()
    };
    direct
        .or_else(wrapped)
        .map(|r| r.rsplit('/').next().unwrap_or(r))
}

/// `io.k8s.api.core.v1.PodSpec` → `PodSpec`.
fn short_type(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// `io.k8s.api.core.v1.PodSpec` → `v1.PodSpec`, as Go prints a named type.
fn go_named(name: &str) -> String {
    let mut parts = name.rsplit('.');
    let kind = parts.next().unwrap_or(name);
    match parts.next() {
        Some(package) => format!("{package}.{kind}"),
        None => kind.to_owned(),
    }
}

/// Types whose Go decoders are their own, not `encoding/json`'s.
fn custom_decoder(name: &str) -> bool {
    matches!(
        short_type(name),
        "Quantity" | "Time" | "MicroTime" | "IntOrString" | "RawExtension" | "FieldsV1" | "JSON"
    )
}

/// The Go type of a schema that names no definition: scalars by type and format, slices and
/// maps of what `inner` calls their items' type; `None` for anything else.
fn unnamed_go_type(schema: &Value, inner: impl Fn(&Value) -> Option<String>) -> Option<String> {
    let format = schema.get("format").and_then(Value::as_str);
    Some(match schema.get("type").and_then(Value::as_str)? {
        "string" if format == Some("byte") => "[]uint8".to_owned(),
        "string" => "string".to_owned(),
        "integer" if format == Some("int32") => "int32".to_owned(),
        "integer" => "int64".to_owned(),
        "number" => "float64".to_owned(),
        "boolean" => "bool".to_owned(),
        "array" => format!("[]{}", inner(schema.get("items")?)?),
        "object" => format!("map[string]{}", inner(schema.get("additionalProperties")?)?),
        _ => return None,
    })
}

impl<'a> TypeWalker<'_, 'a> {
    /// The Go type a schema decodes into, or `None` for a type of its own decoding.
    fn go_type(&self, schema: &Value) -> Option<String> {
        if let Some(name) = reference(schema) {
            return (!custom_decoder(name)).then(|| go_named(name));
        }
        unnamed_go_type(schema, |inner| self.go_type(inner))
    }

    /// The first misfit in `value` decoded as `schema` (the definition `named`, when it is
    /// one), a field of the struct `owner` at `path`.
    fn walk(
        &self,
        value: &Value,
        schema: &'a Value,
        named: Option<&str>,
        owner: &str,
        path: &mut Vec<String>,
    ) -> Option<String> {
        if value.is_null() {
            return None;
        }
        let (schema, named) = match reference(schema) {
            Some(name) if custom_decoder(name) => {
                return self.decoders.then(|| decoder_error(name, value)).flatten();
            }
            Some(name) => ((self.resolve)(name)?, Some(name)),
            None => (schema, named),
        };
        let decoders = self.decoders;
        let misfit = |what: String, go_type: String| {
            if decoders {
                return None;
            }
            Some(if path.is_empty() {
                format!("json: cannot unmarshal {what} into Go value of type {go_type}")
            } else {
                format!(
                    "json: cannot unmarshal {what} into Go struct field {owner}.{} of type {go_type}",
                    path.join(".")
                )
            })
        };
        let kind = json_kind(value).to_owned();
        if schema.get("x-kubernetes-int-or-string").is_some()
            || schema.get("x-kubernetes-preserve-unknown-fields").is_some()
        {
            return None;
        }
        let format = schema.get("format").and_then(Value::as_str);
        match schema.get("type").and_then(Value::as_str) {
            Some("object") if schema.get("properties").is_some() => {
                let Value::Object(fields) = value else {
                    return misfit(kind, go_named(named?));
                };
                let owner = named.map_or(owner, short_type);
                let properties = schema.get("properties")?;
                for (key, child) in fields {
                    let Some(child_schema) = properties.get(key) else {
                        continue;
                    };
                    path.push(key.clone());
                    let found = self.walk(child, child_schema, None, owner, path);
                    path.pop();
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            Some("object") => {
                let entries = schema.get("additionalProperties")?;
                let Value::Object(map) = value else {
                    return misfit(kind, self.go_type(schema)?);
                };
                map.values()
                    .find_map(|child| self.walk(child, entries, None, owner, path))
            }
            Some("array") => {
                let items = schema.get("items")?;
                let Value::Array(elements) = value else {
                    return misfit(kind, self.go_type(schema)?);
                };
                elements
                    .iter()
                    .find_map(|child| self.walk(child, items, None, owner, path))
            }
            Some("string") if !value.is_string() => misfit(kind, self.go_type(schema)?),
            Some("boolean") if !value.is_boolean() => misfit(kind, "bool".to_owned()),
            Some("integer") => {
                let go_type = self.go_type(schema)?;
                match value {
                    Value::Number(n) => {
                        let fits = match format {
                            Some("int32") => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
                            _ => n.as_i64().is_some(),
                        };
                        (!fits)
                            .then(|| misfit(format!("number {n}"), go_type))
                            .flatten()
                    }
                    _ => misfit(kind, go_type),
                }
            }
            Some("number") if !value.is_number() => misfit(kind, "float64".to_owned()),
            _ => None,
        }
    }
}

/// Upstream's `summarizeData` of a body: `<empty>`, a JSON object's first 30 bytes as text,
/// anything else's in hex, with ` ...` when cut.
pub(crate) fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let cut = body.len() > MAX;
    let head = &body[..body.len().min(MAX)];
    let more = if cut { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_errors_name_the_byte() {
        assert_eq!(raw_url_base64("e30").unwrap(), b"{}");
        assert_eq!(
            raw_url_base64("e30=").unwrap_err(),
            "illegal base64 data at input byte 3"
        );
        assert_eq!(
            raw_url_base64("abcde").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
    }

    #[test]
    fn json_errors_are_gos() {
        let error = |text: &str| {
            let e = serde_json::from_str::<Value>(text).unwrap_err();
            json_syntax_error(text.as_bytes(), &e)
        };
        assert_eq!(error("{\"a\":"), "unexpected end of JSON input");
        assert_eq!(error(""), "unexpected end of JSON input");
        assert_eq!(
            error("x"),
            "invalid character 'x' looking for beginning of value"
        );
    }

    #[test]
    fn summaries_are_upstreams() {
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(b"[]"), "5b5d");
        assert_eq!(
            summarize(br#"{"apiVersion":"v1","kind":"ConfigMap"}"#),
            r#"{"apiVersion":"v1","kind":"Con ..."#
        );
    }

    /// Texts kube-apiserver answers for bodies of the wrong JSON types (encoding/json's
    /// `UnmarshalTypeError` with its struct and field path).
    #[test]
    fn type_errors_are_gos() {
        let definitions = serde_json::json!({
            "io.k8s.api.core.v1.ConfigMap": {"type": "object", "properties": {
                "data": {"type": "object", "additionalProperties": {"type": "string"}},
                "metadata": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                "spec": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Spec"}}},
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "creationTimestamp": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}}},
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {"type": "string", "format": "date-time"},
            "io.k8s.api.core.v1.Spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "containers": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}}}},
            "io.k8s.api.core.v1.Container": {"type": "object", "properties": {"name": {"type": "string"}}},
        });
        let resolve = |name: &str| definitions.get(name);
        let root = &definitions["io.k8s.api.core.v1.ConfigMap"];
        let error =
            |value: Value| json_type_error(&value, "io.k8s.api.core.v1.ConfigMap", root, &resolve);
        let rows = [
            (
                serde_json::json!({"data": {"a": 1}}),
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
            ),
            (
                serde_json::json!({"metadata": {"labels": {"a": true}}}),
                "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
            ),
            (
                serde_json::json!({"spec": {"containers": [{"name": 5}]}}),
                "json: cannot unmarshal number into Go struct field Container.spec.containers.name of type string",
            ),
            (
                serde_json::json!({"spec": {"containers": {}}}),
                "json: cannot unmarshal object into Go struct field Spec.spec.containers of type []v1.Container",
            ),
            (
                serde_json::json!({"spec": {"replicas": 1.5}}),
                "json: cannot unmarshal number 1.5 into Go struct field Spec.spec.replicas of type int32",
            ),
            (
                serde_json::json!({"spec": "x"}),
                "json: cannot unmarshal string into Go struct field ConfigMap.spec of type v1.Spec",
            ),
        ];
        for (value, want) in rows {
            assert_eq!(error(value.clone()).as_deref(), Some(want), "{value}");
        }
        // `metav1.Time.UnmarshalJSON` reads a string first, and its error stops the decoder:
        // it wins over a type error met before it.
        assert_eq!(
            error(serde_json::json!({"metadata": {"creationTimestamp": 5}})).as_deref(),
            Some("json: cannot unmarshal number into Go value of type string")
        );
        assert_eq!(
            error(
                serde_json::json!({"data": {"a": 1}, "metadata": {"creationTimestamp": "today"}})
            )
            .as_deref(),
            Some(
                r#"parsing time "today" as "2006-01-02T15:04:05Z07:00": cannot parse "today" as "2006""#
            )
        );
        assert_eq!(
            error(serde_json::json!({"data": {"a": "b"}, "other": 1})),
            None
        );
    }

    /// Go 1.19's `json.Marshal` of the same document (a `map[string]interface{}`).
    #[test]
    fn go_json_is_json_marshal() {
        let value = serde_json::json!({
            "c": true, "A": null, "a<": "x<y>&z\u{2028}\"\\\n\t\u{1}é",
            "b": [1.5, 1e21, 1.5e-7, 3.0, 1e20, 0.000001, -2.5e-10, -3, 18446744073709551615u64],
        });
        assert_eq!(
            String::from_utf8(go_json(&value).unwrap()).unwrap(),
            r#"{"A":null,"a\u003c":"x\u003cy\u003e\u0026z\u2028\"\\\n\t\u0001é","b":[1.5,1e+21,1.5e-7,3,100000000000000000000,0.000001,-2.5e-10,-3,18446744073709551615],"c":true}"#
        );
    }

    #[test]
    fn yaml_errors_number_lines_as_go_yaml() {
        let e = serde_yaml_ng::from_str::<Value>("a: [b\n").unwrap_err();
        assert_eq!(
            yaml_error(&e),
            "error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'"
        );
    }
}
