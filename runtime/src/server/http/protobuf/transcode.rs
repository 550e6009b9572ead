//! An object's JSON text → its protobuf message in one pass, without building the JSON tree,
//! driven by the field table: the inverse of `decode`, written as upstream's generated
//! marshallers write (fields in number order, repeated scalars unpacked, map entries sorted by
//! key, embedded structs always, the small meta messages with every field). Lists and watch
//! events are written from the stored JSON bytes this way; a single answer from its serialized
//! tree.
//!
//! The JSON keys come in the object's order, so each message records where each field starts
//! and puts them in number order at its end when they were not (a stable sort: repeated
//! elements keep theirs). The fields of a Go embedded struct appear among its parent's keys;
//! they are gathered in a writer of their own and written as the embedded message at the end.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::table::{Cardinality, Field, Kind, Message, Name, Table};
use super::wire::Writer;

/// Deeper nesting than any served object has is refused rather than risking the stack (a
/// `JSONSchemaProps` tree is bounded by the CRD validation before it is stored).
const MAX_DEPTH: usize = 100;

/// Why an object could not be written: it does not have the shape its field's type says, which
/// for a stored object is a server fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EncodeError(pub(crate) String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Writes the message `message` from `json`, an object's JSON text.
pub(crate) fn message(
    table: &Table,
    out: &mut Writer,
    message: &Message,
    name: Name,
    json: &[u8],
) -> Result<(), EncodeError> {
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let seed = MessageSeed {
        table,
        out,
        message,
        name,
        depth: 0,
    };
    seed.deserialize(&mut deserializer)
        .and_then(|()| deserializer.end())
        .map_err(|e| EncodeError(e.to_string()))
}

/// Writes one message's fields from a JSON object.
struct MessageSeed<'a, 't> {
    table: &'t Table,
    out: &'a mut Writer,
    message: &'t Message,
    name: Name,
    depth: usize,
}

/// Where a JSON key goes.
enum Target<'t> {
    Field(u32, &'t Field),
    /// A field of the embedded struct at this index of the message's inline fields.
    Inline(usize, u32, &'t Field),
    Unknown,
}

impl<'a, 't> MessageSeed<'a, 't> {
    /// The seed of a message nested in one at `depth`.
    fn inside(
        table: &'t Table,
        out: &'a mut Writer,
        message: &'t Message,
        name: Name,
        depth: usize,
    ) -> Self {
        Self {
            table,
            out,
            message,
            name,
            depth: depth + 1,
        }
    }

    fn target(&self, inline: &[(u32, Name, &'t Message)], key: &str) -> Target<'t> {
        if let Some((number, field)) = self.message.named(key) {
            return Target::Field(number, field);
        }
        for (i, (_, _, inner)) in inline.iter().enumerate() {
            if let Some((number, field)) = inner.named(key) {
                return Target::Inline(i, number, field);
            }
        }
        Target::Unknown
    }
}

impl<'de> DeserializeSeed<'de> for MessageSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MessageSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object for {}", self.name.1)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom(format!(
                "nesting deeper than {MAX_DEPTH} messages"
            )));
        }
        let table = self.table;
        let inline: Vec<(u32, Name, &Message)> = self
            .message
            .ordered()
            .filter(|(_, field)| field.cardinality == Cardinality::Inline)
            .filter_map(|(number, field)| match field.kind {
                Kind::Message(name) => Some((number, name, table.messages.get(&name)?)),
                _ => None,
            })
            .collect();
        let mut embedded: Vec<Writer> = inline.iter().map(|_| Writer::default()).collect();
        let start = self.out.position();
        let mut segments: Vec<(u32, usize)> = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match self.target(&inline, key.as_str()) {
                Target::Field(number, field) => {
                    segments.push((number, self.out.position()));
                    map.next_value_seed(FieldSeed {
                        table,
                        out: self.out,
                        parent: self.message,
                        number,
                        field,
                        depth: self.depth,
                    })
                    .map_err(|e| at(self.name, field, e))?;
                }
                Target::Inline(i, number, field) => {
                    map.next_value_seed(FieldSeed {
                        table,
                        out: &mut embedded[i],
                        parent: inline[i].2,
                        number,
                        field,
                        depth: self.depth + 1,
                    })
                    .map_err(|e| at(inline[i].1, field, e))?;
                }
                Target::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // A Go embedded struct is a value: written even when none of its fields is set.
        for ((number, _, _), writer) in inline.iter().zip(embedded) {
            segments.push((*number, self.out.position()));
            self.out.bytes(*number, &writer.into_bytes());
        }
        self.out.order_fields(start, &mut segments);
        Ok(())
    }
}

/// `e` as the failure of field `field` of message `name` (`ConfigMap.data: ...`).
fn at<E: de::Error>(name: Name, field: &Field, e: E) -> E {
    E::custom(format!("{}.{}: {e}", name.1, field.name))
}

/// A JSON key, borrowed from the input when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// One field's JSON value, as its cardinality says: a value, a list of them, or a map.
struct FieldSeed<'a, 't> {
    table: &'t Table,
    out: &'a mut Writer,
    parent: &'t Message,
    number: u32,
    field: &'t Field,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.field.cardinality {
            Cardinality::One | Cardinality::Inline => ValueSeed {
                table: self.table,
                out: self.out,
                parent: self.parent,
                number: self.number,
                kind: self.field.kind,
                depth: self.depth,
                null_time: true,
            }
            .deserialize(deserializer),
            Cardinality::Repeated | Cardinality::Map => deserializer.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field.cardinality {
            Cardinality::Map => f.write_str("a map"),
            _ => f.write_str("a list"),
        }
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.field.cardinality != Cardinality::Repeated {
            return Err(de::Error::custom("a map was expected"));
        }
        while seq
            .next_element_seed(ValueSeed {
                table: self.table,
                out: &mut *self.out,
                parent: self.parent,
                number: self.number,
                kind: self.field.kind,
                depth: self.depth,
                null_time: false,
            })?
            .is_some()
        {}
        Ok(())
    }

    /// Map entries, `{key: 1, value: 2}` each, written in key order as Go sorts them.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if self.field.cardinality != Cardinality::Map {
            return Err(de::Error::custom("a list was expected"));
        }
        let mut entries: Vec<(String, Vec<u8>)> = Vec::new();
        while let Some(key) = map.next_key::<Key<'de>>()? {
            let mut entry = Writer::default();
            entry.string(1, key.as_str());
            map.next_value_seed(ValueSeed {
                table: self.table,
                out: &mut entry,
                parent: self.parent,
                number: 2,
                kind: self.field.kind,
                depth: self.depth,
                null_time: false,
            })?;
            entries.push((key.as_str().to_owned(), entry.into_bytes()));
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, entry) in entries {
            self.out.bytes(self.number, &entry);
        }
        Ok(())
    }
}

/// One value of a field's kind, written as field `number`.
struct ValueSeed<'a, 't> {
    table: &'t Table,
    out: &'a mut Writer,
    parent: &'t Message,
    number: u32,
    kind: Kind,
    depth: usize,
    /// Whether a `null` time is Go's zero `Time`, an empty message (a single field's).
    null_time: bool,
}

impl ValueSeed<'_, '_> {
    fn small<E>(self, body: impl FnOnce(&mut Writer)) -> Result<(), E> {
        self.out.message(self.number, |w| {
            body(w);
            Ok(())
        })
    }

    fn wrong<E: de::Error>(&self, what: &str) -> E {
        let expected = match self.kind {
            Kind::String | Kind::Bytes | Kind::Time | Kind::MicroTime | Kind::Duration => {
                "a string"
            }
            Kind::Bool => "a bool",
            Kind::Int32 | Kind::Int64 => "an integer",
            Kind::Double => "a number",
            Kind::Quantity => "a quantity",
            Kind::IntOrString => "an integer or a string",
            Kind::StringList => "a list of strings",
            _ => "an object",
        };
        E::custom(format!("{expected} was expected, not {what}"))
    }

    fn number<E: de::Error>(self, text: String, int: Option<i64>, float: f64) -> Result<(), E> {
        match self.kind {
            Kind::Int32 => {
                let int = int.ok_or_else(|| E::custom("an integer was expected"))?;
                let int = i32::try_from(int).map_err(|_| E::custom("an int32 out of range"))?;
                self.out.varint(self.number, i64::from(int) as u64);
            }
            Kind::Int64 => {
                let int = int.ok_or_else(|| E::custom("an integer was expected"))?;
                self.out.varint(self.number, int as u64);
            }
            Kind::Double => self.out.double(self.number, float),
            Kind::Quantity => return self.small(|w| w.string(1, &text)),
            Kind::IntOrString => {
                let int = int
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or_else(|| E::custom("an int32 was expected"))?;
                return self.small(|w| {
                    w.varint(1, 0);
                    w.varint(2, i64::from(int) as u64);
                    w.string(3, "");
                });
            }
            _ => return Err(self.wrong("a number")),
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.kind == Kind::RawJson {
            // The value's own text: raw JSON is stored and sent as written.
            let raw = <Option<Box<RawValue>> as de::Deserialize>::deserialize(deserializer)?;
            if let Some(raw) = raw {
                self.small(|w| w.bytes(1, raw.get().as_bytes()))?;
            }
            return Ok(());
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a value of kind {:?}", self.kind)
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        if self.null_time && matches!(self.kind, Kind::Time | Kind::MicroTime) {
            return self.small(|_| {});
        }
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        match self.kind {
            Kind::Bool => self.out.varint(self.number, u64::from(v)),
            Kind::PropsOrBool => return self.small(|w| w.varint(1, u64::from(v))),
            _ => return Err(self.wrong("a bool")),
        }
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.number(v.to_string(), Some(v), v as f64)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.number(v.to_string(), i64::try_from(v).ok(), v as f64)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        let whole = (v.fract() == 0.0 && v.abs() < 9.2e18).then_some(v as i64);
        let text = serde_json::Number::from_f64(v).map_or_else(String::new, |n| n.to_string());
        self.number(text, whole, v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        match self.kind {
            Kind::String => self.out.string(self.number, v),
            Kind::Bytes => {
                let bytes = STANDARD
                    .decode(v)
                    .map_err(|e| E::custom(format!("bytes that are not base64: {e}")))?;
                self.out.bytes(self.number, &bytes);
            }
            Kind::Time | Kind::MicroTime => {
                let at = if self.kind == Kind::Time {
                    v.parse::<crate::Time>().map(crate::Time::timestamp)
                } else {
                    v.parse::<crate::MicroTime>()
                        .map(crate::MicroTime::timestamp)
                }
                .map_err(|e| E::custom(format!("{v:?} is not a time: {e}")))?;
                return self.small(|w| {
                    w.varint(1, at.as_second() as u64);
                    w.varint(2, i64::from(at.subsec_nanosecond()) as u64);
                });
            }
            Kind::Quantity => return self.small(|w| w.string(1, v)),
            Kind::IntOrString => {
                return self.small(|w| {
                    w.varint(1, 1);
                    w.varint(2, 0);
                    w.string(3, v);
                });
            }
            Kind::Duration => {
                let duration: crate::Duration = v
                    .parse()
                    .map_err(|e| E::custom(format!("{v:?} is not a duration: {e}")))?;
                return self.small(|w| w.varint(1, duration.as_nanos() as u64));
            }
            _ => return Err(self.wrong("a string")),
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let (table, parent, depth) = (self.table, self.parent, self.depth);
        match self.kind {
            Kind::StringList | Kind::PropsOrStringArray => {
                let number = if self.kind == Kind::StringList { 1 } else { 2 };
                self.out.message(self.number, |w| {
                    while let Some(item) = seq.next_element::<Key<'de>>()? {
                        w.string(number, item.as_str());
                    }
                    Ok(())
                })
            }
            Kind::PropsOrArray => {
                let (name, props) = schema_props(table, parent)?;
                self.out.message(self.number, |w| {
                    while seq
                        .next_element_seed(Nested {
                            table,
                            out: &mut *w,
                            number: 2,
                            message: props,
                            name,
                            depth,
                        })?
                        .is_some()
                    {}
                    Ok(())
                })
            }
            _ => Err(self.wrong("a list")),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let (table, depth) = (self.table, self.depth);
        match self.kind {
            Kind::Message(name) => {
                let message = table
                    .messages
                    .get(&name)
                    .ok_or_else(|| de::Error::custom(format!("no field numbers for {}", name.1)))?;
                self.out.message(self.number, |w| {
                    MessageSeed::inside(table, w, message, name, depth).visit_map(map)
                })
            }
            Kind::PropsOrArray | Kind::PropsOrBool | Kind::PropsOrStringArray => {
                let (name, props) = schema_props(table, self.parent)?;
                let allows = self.kind == Kind::PropsOrBool;
                self.out.message(self.number, |w| {
                    if allows {
                        w.varint(1, 1);
                    }
                    let number = if allows { 2 } else { 1 };
                    w.message(number, |w| {
                        MessageSeed::inside(table, w, props, name, depth).visit_map(map)
                    })
                })
            }
            _ => Err(self.wrong("an object")),
        }
    }
}

fn schema_props<'t, E: de::Error>(
    table: &'t Table,
    parent: &Message,
) -> Result<(Name, &'t Message), E> {
    let name: Name = (parent.package, "JSONSchemaProps");
    let message = table
        .messages
        .get(&name)
        .ok_or_else(|| E::custom("no field numbers for JSONSchemaProps"))?;
    Ok((name, message))
}

/// A nested message as an element of a list (a schema among `items`).
struct Nested<'a, 't> {
    table: &'t Table,
    out: &'a mut Writer,
    number: u32,
    message: &'t Message,
    name: Name,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Nested<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let (table, message, name, depth) = (self.table, self.message, self.name, self.depth);
        self.out.message(self.number, |w| {
            MessageSeed::inside(table, w, message, name, depth).deserialize(deserializer)
        })
    }
}
