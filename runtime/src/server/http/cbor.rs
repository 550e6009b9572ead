//! CBOR (`application/cbor`, RFC 8949) as kube-apiserver serves it behind the
//! `CBORServingAndStorage` feature gate (alpha since 1.32, off by default): answers written from
//! the JSON value the other formats start from ([`encode`]), watch events as a CBOR sequence
//! (`application/cbor-seq`, RFC 8742, [`watch_frame`]), and request bodies read into the JSON
//! value the JSON path produces ([`decode`]), for every kind, custom resources included.
//!
//! What a client sees is what k8s.io/apimachinery's `pkg/runtime/serializer/cbor` writes with its
//! `internal/modes` options (`Encode`/`EncodeNondeterministic`, `Decode`):
//!
//! - every data item the serializer writes starts with the self-described CBOR tag 55799
//!   (`0xd9d9f7`, RFC 8949 3.4.6), upstream's magic number; a watch event is a
//!   `{type, object}` map with that prefix whose `object` carries its own (`RawExtension`'s
//!   `MarshalCBOR` passes the embedded encoding through as it is);
//! - Go strings, map keys and struct field names are CBOR *byte* strings (`StringToByteString`,
//!   `FieldNameToByteString`), Go `[]byte` values byte strings inside tag 22, "expected later
//!   base64 encoding" (`ByteSliceLaterFormatBase64`): a built-in's `[]byte` fields
//!   (`Secret.data`, `ConfigMap.binaryData`, every `format: byte` field) are found through the
//!   protobuf field table (`protobuf::byte_fields`) and carry their raw bytes, where JSON has
//!   their base64 text;
//! - integers are CBOR integers, other numbers the shortest float that keeps their value
//!   (`ShortestFloat16`), maps and arrays of definite length, map entries in the order the
//!   object has them (answers use `EncodeNondeterministic`: struct fields in declaration order).
//!
//! Reading follows upstream's `Decode` mode: the 55799 prefix is optional; text and byte strings
//! both read as strings (a byte string in tag 21, 22 or 23 as its base64url, base64 or base16
//! text, `ByteStringToStringAllowedWithExpectedLaterEncoding`), invalid UTF-8 in a text string,
//! duplicate map keys (`DupMapKeyEnforcedAPF`), NaN and infinities, integers outside int64
//! (`IntDecConvertSignedOrFail`), bignum tags, simple values other than false, true and null,
//! map keys that are not strings and bytes after the data item are refused; indefinite lengths
//! are accepted; nesting beyond 64 levels, arrays beyond 1024 elements and maps beyond 1024
//! pairs are refused (`MaxNestedLevels`, `MaxArrayElements`, `MaxMapPairs`), so a body costs at
//! most its size (itself bounded by `MAX_BODY_BYTES`) and a bounded recursion. Time tags read as
//! RFC 3339 text (tag 0 as it is, tag 1's epoch seconds formatted). Messages are the wording of
//! the Go library upstream decodes with (`github.com/fxamacker/cbor/v2`) for duplicate keys,
//! the limits, extraneous data, truncation, NaN, infinities, invalid UTF-8 and int64 overflow;
//! the rarer refusals (simple values, bignums, malformed time tags) are worded after it.
//!
//! The crate is `minicbor`: maintained (2.x, 2025), no `unsafe`, no dependencies with the
//! `alloc` feature alone, and a token-level decoder over the body's bytes, which is what
//! upstream's limits and distinctions (byte against text strings, tags, indefinite lengths,
//! duplicate keys) need; a serde-based crate (`ciborium`) would read through serde's data model
//! and have to be undone. Not read as upstream does: in a built-in's `[]byte` field Go takes the
//! raw bytes of a byte string tagged 21 or 23 too, where this reads their base64url or base16
//! text (client-go writes tag 22, which reads the same either way).

use std::collections::HashSet;
use std::fmt;

use base64::Engine as _;
use minicbor::Encoder;
use minicbor::data::{Tag, Type};
use minicbor::decode::Decoder;
use serde_json::{Map, Number, Value};

use crate::server::http::protobuf::push_escaped;

/// The media type of one CBOR data item.
pub(crate) const MEDIA_TYPE: &str = "application/cbor";

/// The media type of a watch in CBOR: a CBOR sequence, one data item per event.
pub(crate) const SEQ_MEDIA_TYPE: &str = "application/cbor-seq";

/// Server-side apply with the configuration in CBOR (`types.ApplyCBORPatchType`).
pub(crate) const APPLY_PATCH: &str = "application/apply-patch+cbor";

/// The encoded head of tag 55799, "self-described CBOR", which upstream writes before every
/// data item.
pub(crate) const SELF_DESCRIBED: [u8; 3] = [0xd9, 0xd9, 0xf7];

const SELF_DESCRIBED_TAG: u64 = 55799;

/// Upstream's decode limits (`internal/modes/decode.go`).
const MAX_NESTED_LEVELS: usize = 64;
const MAX_ARRAY_ELEMENTS: u64 = 1024;
const MAX_MAP_PAIRS: u64 = 1024;

/// Why a body could not be read (400) or a value not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CborError(pub(crate) String);

impl fmt::Display for CborError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn error(message: impl Into<String>) -> CborError {
    CborError(message.into())
}

// ---------------------------------------------------------------------------------------------
// Encoding.

/// An object (or list, or `Status`) as upstream's CBOR serializer writes it: the self-described
/// tag, then the value; the `[]byte` fields of a built-in kind as tagged byte strings.
pub(crate) fn encode(value: &Value) -> Result<Vec<u8>, CborError> {
    let mut out = Vec::with_capacity(256);
    encode_into(&mut out, value)?;
    Ok(out)
}

fn encode_into(out: &mut Vec<u8>, value: &Value) -> Result<(), CborError> {
    out.extend_from_slice(&SELF_DESCRIBED);
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
    let mut bytes = HashSet::new();
    crate::server::http::protobuf::byte_fields(
        text("apiVersion"),
        text("kind"),
        value,
        &mut |pointer| {
            bytes.insert(pointer.to_owned());
        },
    );
    let mut writer = Writer {
        out: Encoder::new(std::mem::take(out)),
        bytes: &bytes,
        pointer: String::new(),
    };
    let written = writer.value(value, 0);
    *out = writer.out.into_writer();
    written
}

/// One watch event of a CBOR sequence: a self-described `{type, object}` map whose object is
/// written as [`encode`] writes it.
pub(crate) fn watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, CborError> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&SELF_DESCRIBED);
    let mut head = Encoder::new(&mut out);
    head.map(2)
        .and_then(|e| e.bytes(b"type"))
        .and_then(|e| e.bytes(event_type.as_bytes()))
        .and_then(|e| e.bytes(b"object"))
        .map_err(|e| error(e.to_string()))?;
    let mut inner = Vec::with_capacity(512);
    encode_into(&mut inner, object)?;
    out.extend_from_slice(&inner);
    Ok(out)
}

/// Writes a JSON value; `bytes` holds the JSON pointers of the `[]byte` fields, `pointer` the
/// current one (kept only when there are byte fields to find).
struct Writer<'a> {
    out: Encoder<Vec<u8>>,
    bytes: &'a HashSet<String>,
    pointer: String,
}

/// How deep a value is written; JSON values the server holds are far shallower.
const MAX_ENCODE_DEPTH: usize = 512;

impl Writer<'_> {
    fn value(&mut self, value: &Value, depth: usize) -> Result<(), CborError> {
        if depth > MAX_ENCODE_DEPTH {
            return Err(error("cbor: value nested too deeply to encode"));
        }
        let failed = |e: minicbor::encode::Error<std::convert::Infallible>| error(e.to_string());
        match value {
            Value::Null => {
                self.out.null().map_err(failed)?;
            }
            Value::Bool(b) => {
                self.out.bool(*b).map_err(failed)?;
            }
            Value::Number(n) => self.number(n)?,
            Value::String(s) => {
                if !self.bytes.is_empty() && self.bytes.contains(&self.pointer) {
                    // A `[]byte` field: its raw bytes in tag 22 (a value that is not base64
                    // goes as the string it is).
                    if let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(s) {
                        self.out
                            .tag(Tag::new(22))
                            .and_then(|e| e.bytes(&raw))
                            .map_err(failed)?;
                        return Ok(());
                    }
                }
                self.out.bytes(s.as_bytes()).map_err(failed)?;
            }
            Value::Array(items) => {
                self.out.array(items.len() as u64).map_err(failed)?;
                for (i, item) in items.iter().enumerate() {
                    let len = self.push(&i.to_string());
                    self.value(item, depth + 1)?;
                    self.pointer.truncate(len);
                }
            }
            Value::Object(map) => {
                self.out.map(map.len() as u64).map_err(failed)?;
                for (key, item) in map {
                    self.out.bytes(key.as_bytes()).map_err(failed)?;
                    let len = self.push(key);
                    self.value(item, depth + 1)?;
                    self.pointer.truncate(len);
                }
            }
        }
        Ok(())
    }

    /// Appends `/segment` (RFC 6901-escaped) to the pointer when byte fields are sought;
    /// returns the length to truncate back to.
    fn push(&mut self, segment: &str) -> usize {
        let len = self.pointer.len();
        if !self.bytes.is_empty() {
            self.pointer.push('/');
            push_escaped(&mut self.pointer, segment);
        }
        len
    }

    fn number(&mut self, n: &Number) -> Result<(), CborError> {
        let failed = |e: minicbor::encode::Error<std::convert::Infallible>| error(e.to_string());
        if let Some(i) = n.as_i64() {
            self.out.i64(i).map_err(failed)?;
        } else if let Some(u) = n.as_u64() {
            self.out.u64(u).map_err(failed)?;
        } else if let Some(f) = n.as_f64() {
            write_float(self.out.writer_mut(), f)?;
        }
        Ok(())
    }
}

/// The shortest of float16, float32 and float64 that holds `f` exactly (`ShortestFloat16`).
fn write_float(out: &mut Vec<u8>, f: f64) -> Result<(), CborError> {
    if !f.is_finite() {
        return Err(error(format!(
            "cbor: cannot encode floating-point value {f}"
        )));
    }
    let single = f as f32;
    if f64::from(single) != f {
        out.push(0xfb);
        out.extend_from_slice(&f.to_be_bytes());
    } else if let Some(half) = f16_bits(single) {
        out.push(0xf9);
        out.extend_from_slice(&half.to_be_bytes());
    } else {
        out.push(0xfa);
        out.extend_from_slice(&single.to_be_bytes());
    }
    Ok(())
}

/// The IEEE 754 half-precision bits of `f` when it has them exactly.
fn f16_bits(f: f32) -> Option<u16> {
    let bits = f.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let biased = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x7f_ffff;
    if biased == 0 && mantissa == 0 {
        return Some(sign);
    }
    if biased == 0 || biased == 0xff {
        // float32 subnormals are below float16's range; NaN and infinities are not written.
        return None;
    }
    let exponent = biased - 127;
    if (-14..=15).contains(&exponent) {
        if mantissa & 0x1fff != 0 {
            return None;
        }
        return Some(sign | (((exponent + 15) as u16) << 10) | (mantissa >> 13) as u16);
    }
    if (-24..-14).contains(&exponent) {
        let full = mantissa | 0x80_0000;
        let shift = (-14 - exponent) as u32 + 13;
        if full & ((1 << shift) - 1) != 0 {
            return None;
        }
        return Some(sign | (full >> shift) as u16);
    }
    None
}

/// A float16's value.
fn f16_value(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    match exponent {
        0 => sign * mantissa * 2f64.powi(-24),
        0x1f if mantissa == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        e => sign * (1.0 + mantissa / 1024.0) * 2f64.powi(e - 15),
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding.

/// Reads a request body (one data item, the self-described tag optional) into its JSON value.
pub(crate) fn decode(body: &[u8]) -> Result<Value, CborError> {
    let mut reader = Reader {
        d: Decoder::new(body),
    };
    let value = reader.item(0)?;
    let end = reader.d.position();
    if end < body.len() {
        return Err(error(format!(
            "cbor: {} bytes of extraneous data starting at index {end}",
            body.len() - end
        )));
    }
    Ok(value)
}

struct Reader<'b> {
    d: Decoder<'b>,
}

/// A well-formedness failure of the input, in fxamacker/cbor's words.
fn malformed(e: &minicbor::decode::Error) -> CborError {
    if e.is_end_of_input() {
        error("unexpected EOF")
    } else {
        error(format!("cbor: {e}"))
    }
}

impl Reader<'_> {
    fn nested(depth: usize) -> Result<(), CborError> {
        if depth >= MAX_NESTED_LEVELS {
            return Err(error(format!(
                "cbor: exceeded max nested level {MAX_NESTED_LEVELS}"
            )));
        }
        Ok(())
    }

    fn item(&mut self, depth: usize) -> Result<Value, CborError> {
        let kind = self.d.datatype().map_err(|e| malformed(&e))?;
        match kind {
            Type::Bool => Ok(Value::Bool(self.d.bool().map_err(|e| malformed(&e))?)),
            Type::Null => {
                self.d.null().map_err(|e| malformed(&e))?;
                Ok(Value::Null)
            }
            Type::U8 | Type::U16 | Type::U32 | Type::U64 => {
                let n = self.d.u64().map_err(|e| malformed(&e))?;
                let n = i64::try_from(n).map_err(|_| {
                    error(format!(
                        "cbor: cannot unmarshal positive integer into Go value of type int64 ({n} overflows Go's int64)"
                    ))
                })?;
                Ok(Value::from(n))
            }
            Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::Int => {
                let n = self.d.int().map_err(|e| malformed(&e))?;
                let n = i64::try_from(n).map_err(|_| {
                    error(format!(
                        "cbor: cannot unmarshal negative integer into Go value of type int64 ({n} overflows Go's int64)"
                    ))
                })?;
                Ok(Value::from(n))
            }
            Type::F16 | Type::F32 | Type::F64 => self.float(kind),
            Type::Bytes | Type::BytesIndef => {
                let bytes = self.byte_string()?;
                Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned()))
            }
            Type::String | Type::StringIndef => Ok(Value::String(self.text_string()?)),
            Type::Array | Type::ArrayIndef => self.array(depth),
            Type::Map | Type::MapIndef => self.map(depth),
            Type::Tag => self.tagged(depth),
            Type::Undefined | Type::Simple => {
                let value = match kind {
                    Type::Undefined => 23,
                    _ => self.d.simple().map_err(|e| malformed(&e))?,
                };
                Err(error(format!(
                    "cbor: data item of cbor type primitives is not accepted by protocol: simple value {value} is not recognized"
                )))
            }
            Type::Break => Err(error("cbor: unexpected \"break\" code")),
            Type::Unknown(b) => Err(error(format!(
                "cbor: invalid additional information in initial byte 0x{b:02x}"
            ))),
        }
    }

    fn float(&mut self, kind: Type) -> Result<Value, CborError> {
        let f = match kind {
            Type::F16 => {
                let at = self.d.position();
                let input = self.d.input();
                let raw = input
                    .get(at + 1..at + 3)
                    .ok_or_else(|| error("unexpected EOF"))?;
                self.d.set_position(at + 3);
                f16_value(u16::from_be_bytes([raw[0], raw[1]]))
            }
            Type::F32 => f64::from(self.d.f32().map_err(|e| malformed(&e))?),
            _ => self.d.f64().map_err(|e| malformed(&e))?,
        };
        if f.is_nan() {
            return Err(error("cbor: floating-point NaN values are not supported"));
        }
        if f.is_infinite() {
            return Err(error(
                "cbor: floating-point infinity values are not supported",
            ));
        }
        Ok(Number::from_f64(f).map_or(Value::Null, Value::Number))
    }

    fn byte_string(&mut self) -> Result<Vec<u8>, CborError> {
        let mut out = Vec::new();
        for chunk in self.d.bytes_iter().map_err(|e| malformed(&e))? {
            out.extend_from_slice(chunk.map_err(|e| malformed(&e))?);
        }
        Ok(out)
    }

    fn text_string(&mut self) -> Result<String, CborError> {
        let mut out = String::new();
        for chunk in self.d.str_iter().map_err(|e| utf8(&e))? {
            out.push_str(chunk.map_err(|e| utf8(&e))?);
        }
        Ok(out)
    }

    fn array(&mut self, depth: usize) -> Result<Value, CborError> {
        Self::nested(depth)?;
        let len = self.d.array().map_err(|e| malformed(&e))?;
        let too_many = || {
            error(format!(
                "cbor: exceeded max number of elements {MAX_ARRAY_ELEMENTS} for CBOR array"
            ))
        };
        let mut items = Vec::new();
        match len {
            Some(len) => {
                if len > MAX_ARRAY_ELEMENTS {
                    return Err(too_many());
                }
                for _ in 0..len {
                    items.push(self.item(depth + 1)?);
                }
            }
            None => loop {
                if self.d.datatype().map_err(|e| malformed(&e))? == Type::Break {
                    self.d.skip().map_err(|e| malformed(&e))?;
                    break;
                }
                if items.len() as u64 >= MAX_ARRAY_ELEMENTS {
                    return Err(too_many());
                }
                items.push(self.item(depth + 1)?);
            },
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, depth: usize) -> Result<Value, CborError> {
        Self::nested(depth)?;
        let len = self.d.map().map_err(|e| malformed(&e))?;
        let too_many = || {
            error(format!(
                "cbor: exceeded max number of key-value pairs {MAX_MAP_PAIRS} for CBOR map"
            ))
        };
        let mut map = Map::new();
        let mut index: u64 = 0;
        loop {
            match len {
                Some(len) if index >= len => break,
                Some(len) if len > MAX_MAP_PAIRS => return Err(too_many()),
                None => {
                    if self.d.datatype().map_err(|e| malformed(&e))? == Type::Break {
                        self.d.skip().map_err(|e| malformed(&e))?;
                        break;
                    }
                    if index >= MAX_MAP_PAIRS {
                        return Err(too_many());
                    }
                }
                _ => {}
            }
            let key = self.key()?;
            let value = self.item(depth + 1)?;
            if map.contains_key(&key) {
                return Err(error(format!(
                    "cbor: found duplicate map key {key:?} at map element index {index}"
                )));
            }
            map.insert(key, value);
            index += 1;
        }
        Ok(Value::Object(map))
    }

    /// A map key: a text or byte string (maps decode into `map[string]interface{}`), through
    /// the self-described tag.
    fn key(&mut self) -> Result<String, CborError> {
        loop {
            match self.d.datatype().map_err(|e| malformed(&e))? {
                Type::String | Type::StringIndef => return self.text_string(),
                Type::Bytes | Type::BytesIndef => {
                    return Ok(String::from_utf8_lossy(&self.byte_string()?).into_owned());
                }
                Type::Tag => {
                    let tag = self.d.tag().map_err(|e| malformed(&e))?;
                    if tag.as_u64() != SELF_DESCRIBED_TAG {
                        let value = self.item(1)?;
                        return match value {
                            Value::String(s) => Ok(s),
                            _ => Err(error(
                                "cbor: cannot unmarshal tag into Go value of type string",
                            )),
                        };
                    }
                }
                other => {
                    return Err(error(format!(
                        "cbor: cannot unmarshal {} into Go value of type string",
                        cbor_type_name(other)
                    )));
                }
            }
        }
    }

    fn tagged(&mut self, depth: usize) -> Result<Value, CborError> {
        Self::nested(depth)?;
        let tag = self.d.tag().map_err(|e| malformed(&e))?.as_u64();
        match tag {
            SELF_DESCRIBED_TAG => self.item(depth),
            // Expected later encodings: a byte string becomes that encoding's text.
            21..=23
                if matches!(
                    self.d.datatype().map_err(|e| malformed(&e))?,
                    Type::Bytes | Type::BytesIndef
                ) =>
            {
                let bytes = self.byte_string()?;
                Ok(Value::String(match tag {
                    21 => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes),
                    22 => base64::engine::general_purpose::STANDARD.encode(&bytes),
                    _ => bytes.iter().map(|b| format!("{b:02x}")).collect(),
                }))
            }
            2 | 3 => Err(error("cbor: bignum tags are not accepted by protocol")),
            0 => match self.item(depth + 1)? {
                Value::String(s) => Ok(Value::String(s)),
                _ => Err(error("cbor: tag number 0 must be followed by text string")),
            },
            1 => match self.item(depth + 1)? {
                Value::Number(n) => epoch_time(&n),
                _ => Err(error(
                    "cbor: tag number 1 must be followed by integer or floating-point number",
                )),
            },
            // Any other tag: its content (`UnrecognizedTagContentToAny`).
            _ => self.item(depth + 1),
        }
    }
}

/// Tag 1's epoch seconds as Go's RFC 3339 with nanoseconds (`TimeTagToRFC3339Nano`).
fn epoch_time(n: &Number) -> Result<Value, CborError> {
    let out_of_range = || error("cbor: tag number 1 time value out of range");
    let timestamp = if let Some(seconds) = n.as_i64() {
        jiff::Timestamp::from_second(seconds).map_err(|_| out_of_range())?
    } else {
        let seconds = n.as_f64().ok_or_else(out_of_range)?;
        let nanos = (seconds * 1e9).round();
        if !nanos.is_finite() || nanos.abs() > 9.2e18 {
            return Err(out_of_range());
        }
        jiff::Timestamp::from_nanosecond(nanos as i128).map_err(|_| out_of_range())?
    };
    Ok(Value::String(timestamp.to_string()))
}

fn utf8(e: &minicbor::decode::Error) -> CborError {
    if e.is_end_of_input() {
        error("unexpected EOF")
    } else if e.to_string().contains("utf") || e.to_string().contains("UTF") {
        error("cbor: invalid UTF-8 string")
    } else {
        malformed(e)
    }
}

fn cbor_type_name(kind: Type) -> &'static str {
    match kind {
        Type::U8 | Type::U16 | Type::U32 | Type::U64 => "positive integer",
        Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::Int => "negative integer",
        Type::F16 | Type::F32 | Type::F64 => "primitives",
        Type::Bool | Type::Null | Type::Undefined | Type::Simple => "primitives",
        Type::Array | Type::ArrayIndef => "array",
        Type::Map | Type::MapIndef => "map",
        _ => "data item",
    }
}

#[cfg(test)]
mod tests;
