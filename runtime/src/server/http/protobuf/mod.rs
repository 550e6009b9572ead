//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`),
//! read into the same JSON value the JSON path produces.
//!
//! kubectl 1.32 and newer send built-in objects this way. A body is the magic `k8s\0` and a
//! `runtime.Unknown` envelope (`typeMeta{apiVersion, kind}`, `raw`, `contentEncoding`,
//! `contentType`) whose `raw` is the object's message. Field numbers are a fact of the wire
//! format no OpenAPI document carries: `fields.txt` lists them per type (the format is described
//! in `table`), written by `scripts/protobuf_fields.py` (its doc says how to regenerate) from
//! the `k8s-pb` crate's sources with the JSON names cross-checked against kapi-k8s's OpenAPI
//! definitions. Kinds without numbers (custom
//! resources) cannot be read, as upstream cannot: 415. Bytes that do not parse are 400.
//!
//! A field number the table lacks (a client built against a newer release, or an older one's
//! field since removed, such as 1.20's `metadata.clusterName`) is dropped silently, whatever
//! `fieldValidation` says: upstream's protobuf serializer is its own strict one
//! (`CodecFactory`), strict decoding being JSON's and YAML's alone.
//!
//! Responses stay JSON: every kubectl that sends protobuf also accepts JSON.

mod decode;
mod table;
#[cfg(test)]
mod tests;
pub(crate) mod wire;

use std::fmt;

use serde_json::Value;

use decode::Decoder;
use table::Table;
use wire::{Payload, Reader, WireError, error};

/// The media type of Kubernetes' protobuf encoding.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The first bytes of every protobuf-encoded object.
const MAGIC: &[u8] = b"k8s\0";

/// Why a protobuf body could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProtoError {
    /// The bytes are not a well-formed envelope or message (400).
    Malformed(String),
    /// A well-formed envelope of a kind we have no field numbers for (415).
    UnknownKind {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
    },
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtoError::Malformed(message) => {
                write!(f, "error decoding protobuf body: {message}")
            }
            ProtoError::UnknownKind { api_version, kind } => write!(
                f,
                "{api_version}, Kind={kind} cannot be read as {MEDIA_TYPE}"
            ),
        }
    }
}

/// Whether `body` is in Kubernetes' protobuf encoding (it starts with the magic `k8s\0`).
pub(crate) fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// Reads a protobuf body into the object's JSON form, `apiVersion` and `kind` included.
/// Fields the table has no number for are skipped.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    let table = Table::get();
    let mut decoder = Decoder::new(table);
    decode_envelope(&mut decoder, body, 0).map_err(|e| match e {
        Failure::Wire(e) => ProtoError::Malformed(e.to_string()),
        Failure::Unknown(api_version, kind) => ProtoError::UnknownKind { api_version, kind },
    })
}

/// What went wrong inside, before it is sorted into a [`ProtoError`].
enum Failure {
    Wire(WireError),
    Unknown(String, String),
}

impl Failure {
    /// Inside a message, where any failure is malformed input.
    fn into_wire(self) -> WireError {
        match self {
            Failure::Wire(e) => e,
            Failure::Unknown(api_version, kind) => error(format!(
                "no field numbers for nested {api_version}, Kind={kind}"
            )),
        }
    }
}

impl From<WireError> for Failure {
    fn from(e: WireError) -> Self {
        Failure::Wire(e)
    }
}

/// The envelope and the message inside it. Nested envelopes (a RawExtension holding a protobuf
/// object) go through here too; an unknown kind there is malformed input rather than a 415.
fn decode_envelope(decoder: &mut Decoder<'_>, body: &[u8], depth: usize) -> Result<Value, Failure> {
    let Some(envelope) = body.strip_prefix(MAGIC) else {
        return Err(error("the body does not start with the protobuf magic k8s\\0").into());
    };
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let mut encoding = String::new();
    let mut reader = Reader::new(envelope);
    while let Some((number, payload)) = reader.field()? {
        match (number, payload) {
            (1, Payload::Len(type_meta)) => {
                let mut reader = Reader::new(type_meta);
                while let Some((number, payload)) = reader.field()? {
                    match (number, payload) {
                        (1, Payload::Len(s)) => api_version = utf8(s)?,
                        (2, Payload::Len(s)) => kind = utf8(s)?,
                        _ => {}
                    }
                }
            }
            (2, Payload::Len(bytes)) => raw = bytes,
            (3, Payload::Len(s)) => encoding = utf8(s)?,
            // The content type of `raw`, empty for the protobuf message itself.
            (4, Payload::Len(_)) => {}
            (1..=4, _) => {
                return Err(
                    error(format!("envelope field {number} has the wrong wire type")).into(),
                );
            }
            _ => {}
        }
    }
    if !encoding.is_empty() {
        return Err(error(format!("unsupported content encoding {encoding:?}")).into());
    }
    if kind.is_empty() || api_version.is_empty() {
        return Err(error("the envelope names no apiVersion and kind").into());
    }
    let Some((name, message)) = decoder.table.message_of(&api_version, &kind) else {
        return Err(Failure::Unknown(api_version, kind));
    };
    let mut object = serde_json::Map::new();
    object.insert("apiVersion".into(), Value::String(api_version));
    object.insert("kind".into(), Value::String(kind));
    let fields = decoder.message(message, name, raw, depth)?;
    object.extend(fields);
    Ok(Value::Object(object))
}

fn utf8(bytes: &[u8]) -> Result<String, WireError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| error("a type name that is not UTF-8"))
}
