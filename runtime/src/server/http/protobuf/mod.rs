//! Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) of the built-in kinds:
//! request bodies read into the same JSON value the JSON path produces (`decode`), and answers
//! written from JSON text in one pass (`transcode`): objects, lists, `Status` errors, `PartialObjectMetadata[List]`
//! and watch events in upstream's length-prefixed framing.
//!
//! kubectl 1.32 and newer send built-in objects this way, and client-go's protobuf clients
//! (kubectl 1.32 and newer, controllers built with `ContentType:
//! application/vnd.kubernetes.protobuf`) ask for it. A body is the magic `k8s\0` and a
//! `runtime.Unknown` envelope (`typeMeta{apiVersion, kind}`, `raw`, `contentEncoding`,
//! `contentType`) whose `raw` is the object's message. Field numbers are a fact of the wire
//! format no OpenAPI document carries: `fields.txt` lists them per type for every served
//! release (the format and sources are described in `table`), written by
//! `scripts/protobuf_fields.py`. Kinds without numbers (custom resources) cannot be read, as
//! upstream cannot: 415. Bytes that do not parse are 400.
//!
//! A field number the table lacks (a client built against a newer release) is dropped
//! silently, whatever `fieldValidation` says: upstream's protobuf serializer is its own strict
//! one (`CodecFactory`), strict decoding being JSON's and YAML's alone.
//!
//! An answer is written in protobuf only for kinds the table covers; for any other (custom
//! resources) protobuf is not offered and negotiation picks JSON, as upstream's handler for
//! custom resources does.

mod decode;
pub(crate) mod table;
#[cfg(test)]
mod tests;
mod transcode;
pub(crate) mod wire;

use std::fmt;

use serde_json::Value;

use decode::Decoder;
use table::{Message, Name, Table};
pub(crate) use table::{byte_fields, push_escaped};
pub(crate) use transcode::EncodeError;
use wire::{Payload, Reader, WireError, Writer, error};

/// The media type of watch streams in protobuf: each event is a `WatchEvent` message after its
/// length as four big-endian bytes (upstream's `LengthDelimitedFramer`).
pub(crate) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

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

/// Whether objects of `kind` in `api_version` can be written in protobuf.
pub(crate) fn can_encode(api_version: &str, kind: &str) -> bool {
    Table::get().message_of(api_version, kind).is_some()
}

/// Writes an object (or list, or `Status`) with its `apiVersion` and `kind` as upstream's
/// protobuf serializer does: the magic, then a `runtime.Unknown` envelope holding the type and
/// the message (its content encoding and type empty, written anyway as Go writes them).
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, EncodeError> {
    let (api_version, kind, json) = typed_json(value)?;
    let mut out = Writer::with_capacity(json.len());
    out.raw(MAGIC);
    write_envelope(&mut out, api_version, kind, |w, message, name| {
        transcode::message(Table::get(), w, message, name, &json)
    })?;
    Ok(out.into_bytes())
}

/// A list written from its metadata and its items' JSON text, one item at a time: no tree of
/// the list or its items is built.
pub(crate) fn encode_list<'a>(
    api_version: &str,
    list_kind: &str,
    meta: &Value,
    items: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, EncodeError> {
    let table = Table::get();
    let mut out = Writer::with_capacity(4096);
    out.raw(MAGIC);
    write_envelope(&mut out, api_version, list_kind, |w, list, list_name| {
        let items_field = list
            .named("items")
            .map(|(number, field)| (number, field.kind));
        let Some((items_number, table::Kind::Message(item_name))) = items_field else {
            return Err(EncodeError(format!("{list_kind} has no items")));
        };
        let Some(item) = table.messages.get(&item_name) else {
            return Err(EncodeError(format!("no field numbers for {}", item_name.1)));
        };
        // The list's own fields (its metadata) first, as its message orders them.
        let head = serde_json::to_vec(&serde_json::json!({ "metadata": meta }))
            .map_err(|e| EncodeError(e.to_string()))?;
        transcode::message(table, w, list, list_name, &head)?;
        for bytes in items {
            w.message(items_number, |w| {
                transcode::message(table, w, item, item_name, bytes)
            })?;
        }
        Ok(())
    })?;
    Ok(out.into_bytes())
}

/// One watch event in protobuf framing: the length, then a `WatchEvent` whose `object` is a
/// `RawExtension` holding the object as [`encode`] writes it.
pub(crate) fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let (api_version, kind, json) = typed_json(object)?;
    watch_frame_from_json(event_type, api_version, kind, &json)
}

/// [`watch_frame`] of an object given as its JSON text, of kind `kind` in `api_version`: what
/// the watch cache frames its changes from, without building their trees.
pub(crate) fn watch_frame_from_json(
    event_type: &str,
    api_version: &str,
    kind: &str,
    json: &[u8],
) -> Result<Vec<u8>, EncodeError> {
    frame(event_type, |w| {
        w.raw(MAGIC);
        write_envelope(w, api_version, kind, |w, message, name| {
            transcode::message(Table::get(), w, message, name, json)
        })
    })
}

/// An object's `apiVersion`, `kind` and JSON text.
fn typed_json(value: &Value) -> Result<(&str, &str, Vec<u8>), EncodeError> {
    let Value::Object(object) = value else {
        return Err(EncodeError("only objects are written in protobuf".into()));
    };
    let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or_default();
    let json = serde_json::to_vec(value).map_err(|e| EncodeError(e.to_string()))?;
    Ok((text("apiVersion"), text("kind"), json))
}

/// The `runtime.Unknown` envelope: the type, then the message of `kind` that `body` writes,
/// then the empty content encoding and type. An object without `apiVersion` is one of the
/// meta/v1 discovery documents upstream writes without it (`/api`, `/api/v1`: the
/// `stripVersionEncoder` of k8s.io/apiserver `endpoints/discovery/util.go` empties the
/// group and version before the protobuf serializer writes the envelope): meta/v1's message
/// in an envelope whose `apiVersion` is empty.
fn write_envelope(
    out: &mut Writer,
    api_version: &str,
    kind: &str,
    body: impl FnOnce(&mut Writer, &Message, Name) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let message_version = if api_version.is_empty() {
        "v1"
    } else {
        api_version
    };
    let Some((name, message)) = Table::get().message_of(message_version, kind) else {
        return Err(EncodeError(format!(
            "{api_version}, Kind={kind} cannot be written as {MEDIA_TYPE}"
        )));
    };
    out.message(1, |w| {
        w.string(1, api_version);
        w.string(2, kind);
        Ok::<(), EncodeError>(())
    })?;
    out.message(2, |w| body(w, message, name))?;
    out.string(3, "");
    out.string(4, "");
    Ok(())
}

/// The length-prefixed `WatchEvent` of `event_type` around the envelope `object` writes.
fn frame(
    event_type: &str,
    object: impl FnOnce(&mut Writer) -> Result<(), EncodeError>,
) -> Result<Vec<u8>, EncodeError> {
    let mut out = Writer::with_capacity(512);
    out.raw(&[0; 4]);
    out.string(1, event_type);
    out.message(2, |w| w.message(1, object))?;
    let mut bytes = out.into_bytes();
    let len = u32::try_from(bytes.len() - 4)
        .map_err(|_| EncodeError("a watch event over 4 GiB".into()))?;
    bytes[..4].copy_from_slice(&len.to_be_bytes());
    Ok(bytes)
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
