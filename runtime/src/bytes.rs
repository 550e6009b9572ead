//! `ByteString`: the Rust side of an OpenAPI `format: byte` string (Go `[]byte`).
//!
//! Go's `encoding/json` writes a `[]byte` as standard base64 with padding and writes a nil slice
//! as `null`; generated code wraps such fields in `Option`, so this type only handles the string.
//! Decoding is as strict as Go's: standard alphabet, padding required.

use std::fmt;
use std::ops::{Deref, DerefMut};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Bytes that travel as a standard base64 string, e.g. a Secret's `data` values.
///
/// ```
/// use kapi::ByteString;
///
/// let b: ByteString = serde_json::from_str(r#""aGVsbG8=""#).unwrap();
/// assert_eq!(b.as_slice(), b"hello");
/// assert_eq!(serde_json::to_string(&b).unwrap(), r#""aGVsbG8=""#);
/// ```
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteString(pub Vec<u8>);

impl ByteString {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    /// Unwraps the bytes.
    pub fn into_inner(self) -> Vec<u8> {
        self.0
    }
}

impl fmt::Debug for ByteString {
    /// Shows text when the bytes are UTF-8 (the common case: certificates, config), else base64.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(&self.0) {
            Ok(s) => write!(f, "ByteString({s:?})"),
            Err(_) => write!(f, "ByteString(base64:{})", STANDARD.encode(&self.0)),
        }
    }
}

impl Deref for ByteString {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl DerefMut for ByteString {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

impl From<Vec<u8>> for ByteString {
    fn from(v: Vec<u8>) -> Self {
        Self(v)
    }
}

impl From<&[u8]> for ByteString {
    fn from(v: &[u8]) -> Self {
        Self(v.to_vec())
    }
}

impl From<&str> for ByteString {
    fn from(v: &str) -> Self {
        Self(v.as_bytes().to_vec())
    }
}

impl Serialize for ByteString {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for ByteString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        STANDARD.decode(text.as_bytes()).map(Self).map_err(|e| {
            serde::de::Error::custom(format_args!("invalid base64 in a byte string: {e}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_as_standard_base64() {
        let cases: [(&[u8], &str); 4] = [
            (b"", r#""""#),
            (b"hello", r#""aGVsbG8=""#),
            (&[0xfb, 0xff, 0xfe], r#""+//+""#),
            (b"ab", r#""YWI=""#),
        ];
        for (bytes, json) in cases {
            let b = ByteString::from(bytes);
            assert_eq!(serde_json::to_string(&b).expect("encode"), json);
            let back: ByteString = serde_json::from_str(json).expect("decode");
            assert_eq!(back, b);
        }
    }

    #[test]
    fn rejects_what_go_rejects() {
        for bad in [r#""aGVsbG8""#, r#""-_-_""#, r#""a b""#, "12"] {
            assert!(
                serde_json::from_str::<ByteString>(bad).is_err(),
                "{bad} must not decode"
            );
        }
    }

    #[test]
    fn debug_shows_text_or_base64() {
        assert_eq!(
            format!("{:?}", ByteString::from("hi")),
            r#"ByteString("hi")"#
        );
        assert_eq!(
            format!("{:?}", ByteString(vec![0xff])),
            "ByteString(base64:/w==)"
        );
    }
}
