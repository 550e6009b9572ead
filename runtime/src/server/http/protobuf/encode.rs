//! The JSON value of an object → its protobuf message, driven by the field table: the inverse
//! of `decode`, written as upstream's generated marshallers write (fields in number order,
//! repeated scalars unpacked, map entries sorted by key, the small meta messages with every
//! field).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use super::table::{Cardinality, Field, Kind, Message, Name, Table};
use super::wire::Writer;

/// Deeper nesting than any served object has is refused rather than risking the stack (a
/// `JSONSchemaProps` tree is bounded by the CRD validation before it is stored).
const MAX_DEPTH: usize = 100;

/// Why a value could not be written: it does not have the shape its field's type says, which
/// for a stored object is a server fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EncodeError(pub(crate) String);

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn error(message: impl Into<String>) -> EncodeError {
    EncodeError(message.into())
}

/// Writes JSON values as protobuf messages through the field table.
pub(crate) struct Encoder<'t> {
    pub(crate) table: &'t Table,
}

impl<'t> Encoder<'t> {
    pub(crate) fn new(table: &'t Table) -> Self {
        Self { table }
    }

    /// Writes the fields of `object` as the message `message` (named `name`, for errors).
    /// Keys the message has no number for (`apiVersion` and `kind` among them) are not written.
    pub(crate) fn message(
        &self,
        out: &mut Writer,
        message: &Message,
        name: Name,
        object: &Map<String, Value>,
        depth: usize,
    ) -> Result<(), EncodeError> {
        if depth > MAX_DEPTH {
            return Err(error(format!("nesting deeper than {MAX_DEPTH} messages")));
        }
        for (number, field) in message.ordered() {
            let at = |e: EncodeError| error(format!("{}.{}: {e}", name.1, field.name));
            if field.cardinality == Cardinality::Inline {
                let Kind::Message(target) = field.kind else {
                    continue;
                };
                let inner = self.lookup(target).map_err(at)?;
                // A Go embedded struct is a value: written even when none of its fields is set.
                out.message(number, |w| {
                    self.message(w, inner, target, object, depth + 1)
                })?;
                continue;
            }
            let Some(value) = object.get(field.name) else {
                continue;
            };
            self.field(out, message, number, field, value, depth)
                .map_err(at)?;
        }
        Ok(())
    }

    fn field(
        &self,
        out: &mut Writer,
        parent: &Message,
        number: u32,
        field: &Field,
        value: &Value,
        depth: usize,
    ) -> Result<(), EncodeError> {
        if value.is_null() {
            // Go's zero `Time` (JSON `null`, as an unset `creationTimestamp` is written) is an
            // empty message on the wire.
            if matches!(field.kind, Kind::Time | Kind::MicroTime)
                && field.cardinality == Cardinality::One
            {
                out.message(number, |_| Ok::<(), EncodeError>(()))?;
            }
            return Ok(());
        }
        match field.cardinality {
            Cardinality::One | Cardinality::Inline => {
                self.value(out, parent, number, field.kind, value, depth)
            }
            Cardinality::Repeated => {
                let Value::Array(items) = value else {
                    return Err(error("a list was expected"));
                };
                for item in items {
                    self.value(out, parent, number, field.kind, item, depth)?;
                }
                Ok(())
            }
            Cardinality::Map => {
                let Value::Object(map) = value else {
                    return Err(error("a map was expected"));
                };
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for key in keys {
                    out.message(number, |w| {
                        w.string(1, key);
                        let value = &map[key];
                        if value.is_null() {
                            return Ok(());
                        }
                        self.value(w, parent, 2, field.kind, value, depth)
                    })?;
                }
                Ok(())
            }
        }
    }

    fn lookup(&self, name: Name) -> Result<&'t Message, EncodeError> {
        self.table
            .messages
            .get(&name)
            .ok_or_else(|| error(format!("no field numbers for {}.{}", name.0, name.1)))
    }

    /// One value of kind `kind` as field `number`.
    fn value(
        &self,
        out: &mut Writer,
        parent: &Message,
        number: u32,
        kind: Kind,
        value: &Value,
        depth: usize,
    ) -> Result<(), EncodeError> {
        match kind {
            Kind::String => out.string(number, string(value)?),
            Kind::Bool => out.varint(number, u64::from(boolean(value)?)),
            // Negative int32s are sign-extended to ten bytes, as Go writes them.
            Kind::Int32 => out.varint(number, i64::from(int32(value)?) as u64),
            Kind::Int64 => out.varint(number, int64(value)? as u64),
            Kind::Double => out.double(
                number,
                value
                    .as_f64()
                    .ok_or_else(|| error("a number was expected"))?,
            ),
            Kind::Bytes => {
                let bytes = STANDARD
                    .decode(string(value)?)
                    .map_err(|e| error(format!("bytes that are not base64: {e}")))?;
                out.bytes(number, &bytes);
            }
            Kind::Time | Kind::MicroTime => {
                let text = string(value)?;
                let at = if kind == Kind::Time {
                    text.parse::<crate::Time>().map(crate::Time::timestamp)
                } else {
                    text.parse::<crate::MicroTime>()
                        .map(crate::MicroTime::timestamp)
                }
                .map_err(|e| error(format!("{text:?} is not a time: {e}")))?;
                out.message(number, |w| {
                    w.varint(1, at.as_second() as u64);
                    w.varint(2, i64::from(at.subsec_nanosecond()) as u64);
                    Ok::<(), EncodeError>(())
                })?;
            }
            Kind::Quantity => {
                let text = match value {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    _ => return Err(error("a quantity was expected")),
                };
                out.message(number, |w| {
                    w.string(1, &text);
                    Ok::<(), EncodeError>(())
                })?;
            }
            Kind::IntOrString => {
                let (type_, int, text) = match value {
                    Value::String(s) => (1, 0, s.as_str()),
                    _ => (0, int32(value)?, ""),
                };
                out.message(number, |w| {
                    w.varint(1, type_);
                    w.varint(2, i64::from(int) as u64);
                    w.string(3, text);
                    Ok::<(), EncodeError>(())
                })?;
            }
            Kind::Duration => {
                let text = string(value)?;
                let duration: crate::Duration = text
                    .parse()
                    .map_err(|e| error(format!("{text:?} is not a duration: {e}")))?;
                out.message(number, |w| {
                    w.varint(1, duration.as_nanos() as u64);
                    Ok::<(), EncodeError>(())
                })?;
            }
            Kind::RawJson => {
                let raw = serde_json::to_vec(value).map_err(|e| error(e.to_string()))?;
                out.message(number, |w| {
                    w.bytes(1, &raw);
                    Ok::<(), EncodeError>(())
                })?;
            }
            Kind::StringList => {
                let Value::Array(items) = value else {
                    return Err(error("a list of strings was expected"));
                };
                out.message(number, |w| {
                    for item in items {
                        w.string(1, string(item)?);
                    }
                    Ok(())
                })?;
            }
            Kind::PropsOrArray | Kind::PropsOrBool | Kind::PropsOrStringArray => {
                out.message(number, |w| self.props_or(w, parent, kind, value, depth))?;
            }
            Kind::Message(name) => {
                let message = self.lookup(name)?;
                let Value::Object(object) = value else {
                    return Err(error(format!("an object was expected for {}", name.1)));
                };
                out.message(number, |w| {
                    self.message(w, message, name, object, depth + 1)
                })?;
            }
        }
        Ok(())
    }

    /// apiextensions' unions: a schema, or the alternative (a list of schemas, a bool, a list
    /// of strings), in the fields `decode::props_or` reads.
    fn props_or(
        &self,
        out: &mut Writer,
        parent: &Message,
        kind: Kind,
        value: &Value,
        depth: usize,
    ) -> Result<(), EncodeError> {
        let props: Name = (parent.package, "JSONSchemaProps");
        let message = self.lookup(props)?;
        let schema = |w: &mut Writer, number: u32, object: &Value| {
            let Value::Object(object) = object else {
                return Err(error("a schema object was expected"));
            };
            w.message(number, |w| {
                self.message(w, message, props, object, depth + 1)
            })
        };
        match (kind, value) {
            (Kind::PropsOrBool, Value::Bool(allows)) => out.varint(1, u64::from(*allows)),
            (Kind::PropsOrBool, object) => {
                out.varint(1, 1);
                schema(out, 2, object)?;
            }
            (Kind::PropsOrArray, Value::Array(items)) => {
                for item in items {
                    schema(out, 2, item)?;
                }
            }
            (Kind::PropsOrStringArray, Value::Array(items)) => {
                for item in items {
                    out.string(2, string(item)?);
                }
            }
            (_, object) => schema(out, 1, object)?,
        }
        Ok(())
    }
}

fn string(value: &Value) -> Result<&str, EncodeError> {
    value.as_str().ok_or_else(|| error("a string was expected"))
}

fn boolean(value: &Value) -> Result<bool, EncodeError> {
    value.as_bool().ok_or_else(|| error("a bool was expected"))
}

fn int64(value: &Value) -> Result<i64, EncodeError> {
    value
        .as_i64()
        .or_else(|| {
            // A whole number written as a float (`3.0`) is the integer it spells.
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| f as i64)
        })
        .ok_or_else(|| error("an integer was expected"))
}

fn int32(value: &Value) -> Result<i32, EncodeError> {
    i32::try_from(int64(value)?).map_err(|_| error("an int32 out of range"))
}
