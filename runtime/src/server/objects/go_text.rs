//! The texts of Go's decoders that kube-apiserver's answers embed: `encoding/json`'s syntax and
//! type errors, `encoding/base64`'s corrupt input, `sigs.k8s.io/yaml`'s YAML errors (go-yaml's
//! `yaml: line N: ...`), and the hex summary upstream's handlers give of a body they could not
//! read. Close to Go's for the inputs clients send; Go's scanner contexts are simplified.

use serde_json::Value;

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

    #[test]
    fn yaml_errors_number_lines_as_go_yaml() {
        let e = serde_yaml_ng::from_str::<Value>("a: [b\n").unwrap_err();
        assert_eq!(
            yaml_error(&e),
            "error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'"
        );
    }
}
