//! The opaque continue tokens of paginated lists, in upstream's encoding and with its refusals
//! (`staging/src/k8s.io/apiserver/pkg/storage/continue.go`): the JSON
//! `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<next key>"}` in unpadded URL-safe base64,
//! the start key relative to the listed collection's prefix. A token that does not decode is
//! refused with the text Go's decoders give (`illegal base64 data at input byte 3`,
//! `unexpected end of JSON input`, ...), which the list answers as a 400
//! `invalid continue token: continue key is not valid: ...`.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde_json::Value;

use crate::server::objects::go_text;

/// What a continue token carries: the list's revision and where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ContinueToken {
    /// Format marker, always [`TOKEN_VERSION`].
    #[serde(rename = "v")]
    version: String,
    /// Revision of the first page; -1 asks for the latest (an "inconsistent" continuation).
    pub(crate) rv: i64,
    /// The next key to read, relative to the collection prefix.
    pub(crate) start: String,
}

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// The prefix of every refusal.
const INVALID: &str = "continue key is not valid";

impl ContinueToken {
    /// A token resuming at `start` (relative to the prefix), at revision `rv`.
    pub(crate) fn new(rv: i64, start: String) -> Self {
        Self {
            version: TOKEN_VERSION.to_owned(),
            rv,
            start,
        }
    }

    /// The token as sent to clients: its JSON in unpadded URL-safe base64, as upstream's
    /// `EncodeContinue`.
    pub(crate) fn encode(&self) -> String {
        // Serializing a struct of strings and integers cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        URL_SAFE_NO_PAD.encode(json)
    }

    /// Reads a client's token as upstream's `DecodeContinue` does; the start key comes back
    /// cleaned, without its leading `/`. The error is the reason the token is unusable.
    pub(crate) fn decode(token: &str) -> Result<Self, String> {
        let bytes = go_text::raw_url_base64(token).map_err(|e| format!("{INVALID}: {e}"))?;
        let (version, rv, start) = go_unmarshal(&bytes).map_err(|e| format!("{INVALID}: {e}"))?;
        if version != TOKEN_VERSION {
            return Err(format!(
                "{INVALID}: server does not recognize this encoding version"
            ));
        }
        if rv == 0 {
            return Err(format!(
                "{INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            ));
        }
        if start.is_empty() {
            return Err(format!(
                "{INVALID}: encoded start key empty (version meta.k8s.io/v1)"
            ));
        }
        // A start key that climbs out of the collection would let a token read other data:
        // upstream refuses any key `path.Clean` changes.
        let rooted = if start.starts_with('/') {
            start.clone()
        } else {
            format!("/{start}")
        };
        if clean_rooted(&rooted) != rooted {
            return Err(format!("{INVALID}: {start}"));
        }
        Ok(Self::new(rv, rooted[1..].to_owned()))
    }
}

/// Go's `path.Clean` of a path starting with `/`.
fn clean_rooted(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Go's `json.Unmarshal` of the token into upstream's struct: keys matched without regard to
/// case, the last one winning, unknown keys ignored, `null` leaving the zero value; the error
/// is Go's text for the first problem.
fn go_unmarshal(bytes: &[u8]) -> Result<(String, i64, String), String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| go_text::json_syntax_error(bytes, &e))?;
    let Value::Object(fields) = value else {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type storage.continueToken",
            go_text::json_kind(&value)
        ));
    };
    let mut version = String::new();
    let mut rv = 0;
    let mut start = String::new();
    let field_error = |name: &str, value: &Value, go_type: &str| {
        format!(
            "json: cannot unmarshal {} into Go struct field continueToken.{name} of type {go_type}",
            go_text::json_kind(value)
        )
    };
    for (key, value) in &fields {
        match (key.to_ascii_lowercase().as_str(), value) {
            (_, Value::Null) => {}
            ("v", Value::String(s)) => version.clone_from(s),
            ("start", Value::String(s)) => start.clone_from(s),
            ("v", other) => return Err(field_error("v", other, "string")),
            ("start", other) => return Err(field_error("start", other, "string")),
            ("rv", Value::Number(n)) => {
                rv = n.as_i64().ok_or_else(|| {
                    format!(
                        "json: cannot unmarshal number {n} into Go struct field continueToken.rv of type int64"
                    )
                })?;
            }
            ("rv", other) => return Err(field_error("rv", other, "int64")),
            _ => {}
        }
    }
    Ok((version, rv, start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(json: &str) -> String {
        URL_SAFE_NO_PAD.encode(json)
    }

    #[test]
    fn token_round_trips_in_upstreams_encoding() {
        let token = ContinueToken::new(42, "b\0".to_owned());
        let text = token.encode();
        assert!(!text.contains('='), "{text}");
        assert_eq!(
            go_text::raw_url_base64(&text).unwrap(),
            br#"{"v":"meta.k8s.io/v1","rv":42,"start":"b\u0000"}"#
        );
        assert_eq!(ContinueToken::decode(&text).unwrap(), token);
        // A leading `/` is upstream's form of the same key.
        let rooted = encoded(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"/b"}"#);
        assert_eq!(ContinueToken::decode(&rooted).unwrap().start, "b");
    }

    /// `DecodeContinue`'s refusals, word for word, with Go's decoder errors.
    #[test]
    fn refusals_are_upstreams() {
        let rows = [
            (
                "abc!",
                "continue key is not valid: illegal base64 data at input byte 3",
            ),
            (
                "e30=",
                "continue key is not valid: illegal base64 data at input byte 3",
            ),
            (
                "abcde",
                "continue key is not valid: illegal base64 data at input byte 4",
            ),
            (
                "e30",
                "continue key is not valid: server does not recognize this encoding version",
            ),
            (
                &encoded(r#"{"v":"meta.k8s.io/v1","start":"a"}"#),
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ),
            (
                &encoded(r#"{"v":"meta.k8s.io/v1","rv":5}"#),
                "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
            ),
            (
                &encoded(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"../secrets"}"#),
                "continue key is not valid: ../secrets",
            ),
            (
                &encoded(r#"{"v":"meta.k8s.io/v1","rv":"5","start":"a"}"#),
                "continue key is not valid: json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
            ),
            (
                &encoded(r#"{"v":"#),
                "continue key is not valid: unexpected end of JSON input",
            ),
            (
                &encoded("x"),
                "continue key is not valid: invalid character 'x' looking for beginning of value",
            ),
            (
                &encoded("[]"),
                "continue key is not valid: json: cannot unmarshal array into Go value of type storage.continueToken",
            ),
        ];
        for (token, message) in rows {
            assert_eq!(
                ContinueToken::decode(token).unwrap_err(),
                message,
                "{token}"
            );
        }
        // Go matches keys without regard to case.
        let upper = encoded(r#"{"V":"meta.k8s.io/v1","RV":7,"Start":"a"}"#);
        assert_eq!(ContinueToken::decode(&upper).unwrap().rv, 7);
    }
}
