//! A protobuf message → the JSON value the same object has in Kubernetes' JSON encoding, driven
//! by the field table.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Number, Value};

use super::table::{Cardinality, Field, Kind, Message, Name, Table};
use super::wire::{Payload, Reader, WireError, error};

/// Deeper nesting than any built-in type has (a JSONSchemaProps tree aside) is refused rather
/// than risking the stack.
const MAX_DEPTH: usize = 100;

/// The seconds of Go's zero `time.Time` since the Unix epoch: how a zero `Time` that was
/// written anyway arrives.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Decodes protobuf messages through the field table. A field the table has no number for
/// (a client newer than the table) is skipped: upstream's protobuf decoding drops unknown fields
/// whatever `fieldValidation` says, strict decoding being JSON's and YAML's alone.
#[derive(Debug)]
pub(crate) struct Decoder<'t> {
    pub(crate) table: &'t Table,
}

impl<'t> Decoder<'t> {
    pub(crate) fn new(table: &'t Table) -> Self {
        Self { table }
    }

    /// Decodes `bytes` as the message `message` into a JSON object.
    pub(crate) fn message(
        &mut self,
        message: &Message,
        name: Name,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Map<String, Value>, WireError> {
        let mut object = Map::new();
        self.fill_object(message, name, bytes, depth, &mut object)?;
        Ok(object)
    }

    fn fill_object(
        &mut self,
        message: &Message,
        name: Name,
        bytes: &[u8],
        depth: usize,
        object: &mut Map<String, Value>,
    ) -> Result<(), WireError> {
        if depth > MAX_DEPTH {
            return Err(error(format!("nesting deeper than {MAX_DEPTH} messages")));
        }
        let mut reader = Reader::new(bytes);
        while let Some((number, payload)) = reader.field()? {
            let Some(field) = message.fields.get(&number) else {
                continue;
            };
            let at = |e: WireError| error(format!("{}.{}: {e}", name.1, field.name));
            match field.cardinality {
                Cardinality::One => {
                    let value = self
                        .value(message, field.kind, payload, depth)
                        .map_err(at)?;
                    if field.zero_is_unset && is_zero(&value) {
                        object.remove(field.name);
                    } else {
                        object.insert(field.name.to_owned(), value);
                    }
                }
                Cardinality::Repeated => {
                    let list = object
                        .entry(field.name)
                        .or_insert_with(|| Value::Array(Vec::new()));
                    let Value::Array(list) = list else {
                        return Err(at(error("repeated field seen as a single value")));
                    };
                    match (packed_width(field.kind), payload) {
                        (Some(width), Payload::Len(bytes)) => {
                            unpack(field.kind, width, bytes, list).map_err(at)?;
                        }
                        _ => {
                            let item = self.value(message, field.kind, payload, depth);
                            list.push(item.map_err(at)?);
                        }
                    }
                }
                Cardinality::Map => {
                    let (key, value) = self.entry(message, field, payload, depth).map_err(at)?;
                    let map = object
                        .entry(field.name)
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(map) = map {
                        map.insert(key, value);
                    }
                }
                Cardinality::Inline => {
                    let Kind::Message(target) = field.kind else {
                        continue;
                    };
                    let bytes = len(payload).map_err(at)?;
                    let inner = self.lookup(target).map_err(at)?;
                    self.fill_object(inner, target, bytes, depth + 1, object)?;
                }
            }
        }
        Ok(())
    }

    fn lookup(&self, name: Name) -> Result<&'t Message, WireError> {
        self.table
            .messages
            .get(&name)
            .ok_or_else(|| error(format!("no field numbers for {}.{}", name.0, name.1)))
    }

    /// A map entry: a message with the key as field 1 and the value as field 2. Either may be
    /// missing, which is the zero value, as Go reads it (an empty string, `false`, `0`, `{}`).
    fn entry(
        &mut self,
        parent: &Message,
        field: &Field,
        payload: Payload<'_>,
        depth: usize,
    ) -> Result<(String, Value), WireError> {
        let mut reader = Reader::new(len(payload)?);
        let mut key = String::new();
        let mut raw_value = None;
        while let Some((number, payload)) = reader.field()? {
            match number {
                1 => key = string(payload)?,
                2 => raw_value = Some(payload),
                _ => {}
            }
        }
        let payload = raw_value.unwrap_or_else(|| zero_payload(field.kind));
        let value = self.value(parent, field.kind, payload, depth)?;
        Ok((key, value))
    }

    /// One value of kind `kind`.
    fn value(
        &mut self,
        parent: &Message,
        kind: Kind,
        payload: Payload<'_>,
        depth: usize,
    ) -> Result<Value, WireError> {
        Ok(match kind {
            Kind::String => Value::String(string(payload)?),
            Kind::Bool => Value::Bool(varint(payload)? != 0),
            // int32 is sign-extended to 64 bits on the wire; the low half is the value.
            Kind::Int32 => Value::from(varint(payload)? as u32 as i32),
            Kind::Int64 => Value::from(varint(payload)? as i64),
            Kind::Double => {
                let Payload::Fixed64(bits) = payload else {
                    return Err(wrong_type(payload, "double"));
                };
                Number::from_f64(f64::from_bits(bits))
                    .map(Value::Number)
                    .ok_or_else(|| error("a double that is not a finite number"))?
            }
            Kind::Bytes => Value::String(STANDARD.encode(len(payload)?)),
            Kind::Time => time(len(payload)?, false)?,
            Kind::MicroTime => time(len(payload)?, true)?,
            Kind::Quantity => {
                let fields = scalar_fields(len(payload)?)?;
                match fields.get(1) {
                    Some(Some(p)) => Value::String(string(*p)?),
                    _ => Value::String("0".into()),
                }
            }
            Kind::IntOrString => {
                let fields = scalar_fields(len(payload)?)?;
                let get = |n: usize| fields.get(n).copied().flatten();
                let is_string = get(1).map(varint).transpose()?.unwrap_or(0) == 1;
                if is_string {
                    Value::String(get(3).map(string).transpose()?.unwrap_or_default())
                } else {
                    Value::from(get(2).map(varint).transpose()?.unwrap_or(0) as u32 as i32)
                }
            }
            Kind::Duration => {
                let fields = scalar_fields(len(payload)?)?;
                let nanos = fields.get(1).copied().flatten().map(varint).transpose()?;
                let nanos = nanos.unwrap_or(0) as i64;
                Value::String(crate::Duration::from_nanos(nanos).to_string())
            }
            Kind::RawJson => {
                let fields = scalar_fields(len(payload)?)?;
                match fields.get(1).copied().flatten() {
                    Some(raw) => self.raw(len(raw)?, depth)?,
                    None => Value::Null,
                }
            }
            Kind::StringList => {
                let mut items = Vec::new();
                let mut reader = Reader::new(len(payload)?);
                while let Some((number, payload)) = reader.field()? {
                    if number == 1 {
                        items.push(Value::String(string(payload)?));
                    }
                }
                Value::Array(items)
            }
            Kind::PropsOrArray | Kind::PropsOrBool | Kind::PropsOrStringArray => {
                self.props_or(parent, kind, len(payload)?, depth)?
            }
            Kind::Message(name) => {
                let message = self.lookup(name)?;
                Value::Object(self.message(message, name, len(payload)?, depth + 1)?)
            }
        })
    }

    /// RawExtension, FieldsV1 and apiextensions JSON carry JSON bytes; a RawExtension may also
    /// carry a nested protobuf object with its own envelope.
    fn raw(&mut self, raw: &[u8], depth: usize) -> Result<Value, WireError> {
        if raw.is_empty() {
            return Ok(Value::Null);
        }
        if raw.starts_with(super::MAGIC) {
            if depth > MAX_DEPTH {
                return Err(error(format!("nesting deeper than {MAX_DEPTH} messages")));
            }
            return super::decode_envelope(self, raw, depth + 1).map_err(super::Failure::into_wire);
        }
        serde_json::from_slice(raw).map_err(|e| error(format!("raw JSON does not parse: {e}")))
    }

    /// apiextensions' unions of a schema with an array, a bool or a string list: field 1 (2 for
    /// OrBool) is the schema, the other field the alternative.
    fn props_or(
        &mut self,
        parent: &Message,
        kind: Kind,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Value, WireError> {
        let props: Name = (parent.package, "JSONSchemaProps");
        let message = self.lookup(props)?;
        let schema_field = if kind == Kind::PropsOrBool { 2 } else { 1 };
        let mut schema = None;
        let mut list = Vec::new();
        let mut allows = false;
        let mut reader = Reader::new(bytes);
        while let Some((number, payload)) = reader.field()? {
            if number == schema_field {
                schema = Some(self.message(message, props, len(payload)?, depth + 1)?);
            } else if number == 1 && kind == Kind::PropsOrBool {
                allows = varint(payload)? != 0;
            } else if number == 2 && kind == Kind::PropsOrArray {
                let item = self.message(message, props, len(payload)?, depth + 1)?;
                list.push(Value::Object(item));
            } else if number == 2 && kind == Kind::PropsOrStringArray {
                list.push(Value::String(string(payload)?));
            }
        }
        Ok(match (kind, schema) {
            (Kind::PropsOrBool, Some(schema)) => Value::Object(schema),
            (Kind::PropsOrBool, None) => Value::Bool(allows),
            (_, _) if !list.is_empty() => Value::Array(list),
            (_, Some(schema)) => Value::Object(schema),
            (_, None) => Value::Null,
        })
    }
}

/// What an absent value of `kind` reads as: nothing for the length-delimited kinds (the empty
/// string, bytes or message) and zero for the numbers.
fn zero_payload(kind: Kind) -> Payload<'static> {
    match kind {
        Kind::Bool | Kind::Int32 | Kind::Int64 => Payload::Varint(0),
        Kind::Double => Payload::Fixed64(0),
        _ => Payload::Len(&[]),
    }
}

fn wrong_type(payload: Payload<'_>, want: &str) -> WireError {
    error(format!(
        "wire type {:?} where a {want} was expected",
        payload.wire_type()
    ))
}

fn len(payload: Payload<'_>) -> Result<&[u8], WireError> {
    match payload {
        Payload::Len(bytes) => Ok(bytes),
        other => Err(wrong_type(other, "length-delimited value")),
    }
}

fn varint(payload: Payload<'_>) -> Result<u64, WireError> {
    match payload {
        Payload::Varint(v) => Ok(v),
        other => Err(wrong_type(other, "varint")),
    }
}

fn string(payload: Payload<'_>) -> Result<String, WireError> {
    String::from_utf8(len(payload)?.to_vec()).map_err(|_| error("a string that is not UTF-8"))
}

/// The last value of each of fields 1..=3 of a small message (Quantity, IntOrString, ...).
fn scalar_fields(bytes: &[u8]) -> Result<[Option<Payload<'_>>; 4], WireError> {
    let mut fields = [None; 4];
    let mut reader = Reader::new(bytes);
    while let Some((number, payload)) = reader.field()? {
        if let Some(slot) = usize::try_from(number).ok().and_then(|n| fields.get_mut(n)) {
            *slot = Some(payload);
        }
    }
    Ok(fields)
}

/// `Time`/`MicroTime`: `{seconds: 1, nanos: 2}`. An empty message is Go's zero time, which
/// JSON writes as `null`.
fn time(bytes: &[u8], micros: bool) -> Result<Value, WireError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let fields = scalar_fields(bytes)?;
    let seconds = fields[1].map(varint).transpose()?.unwrap_or(0) as i64;
    let nanos = fields[2].map(varint).transpose()?.unwrap_or(0) as u32 as i32;
    if seconds == GO_ZERO_TIME_SECONDS && nanos == 0 {
        return Ok(Value::Null);
    }
    let ts = jiff::Timestamp::new(seconds, nanos)
        .map_err(|_| error(format!("time out of range: {seconds}s {nanos}ns")))?;
    Ok(Value::String(if micros {
        crate::MicroTime::from(ts).to_string()
    } else {
        crate::Time::from(ts).to_string()
    }))
}

/// The element width of a packed repeated scalar (0 for varints), or `None` for kinds that are
/// never packed.
fn packed_width(kind: Kind) -> Option<usize> {
    match kind {
        Kind::Bool | Kind::Int32 | Kind::Int64 => Some(0),
        Kind::Double => Some(8),
        _ => None,
    }
}

fn unpack(kind: Kind, width: usize, bytes: &[u8], list: &mut Vec<Value>) -> Result<(), WireError> {
    let mut reader = Reader::new(bytes);
    while !reader.at_end() {
        let payload = if width == 8 {
            Payload::Fixed64(reader.fixed64()?)
        } else {
            Payload::Varint(reader.varint()?)
        };
        list.push(match (kind, payload) {
            (Kind::Bool, Payload::Varint(v)) => Value::Bool(v != 0),
            (Kind::Int32, Payload::Varint(v)) => Value::from(v as u32 as i32),
            (Kind::Int64, Payload::Varint(v)) => Value::from(v as i64),
            (_, Payload::Fixed64(bits)) => Number::from_f64(f64::from_bits(bits))
                .map(Value::Number)
                .ok_or_else(|| error("a double that is not a finite number"))?,
            _ => return Err(error("unexpected packed element")),
        });
    }
    Ok(())
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0) || n.as_f64() == Some(0.0),
        _ => false,
    }
}
