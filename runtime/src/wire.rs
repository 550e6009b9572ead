//! Serde helpers shared by every kapi type and by generated code.
//!
//! Upstream JSON has two habits a Rust model must absorb: string "enums" whose set of values the
//! world may extend ([`open_enum!`](crate::open_enum)), and `null` where Go wrote a nil slice, map
//! or string ([`null_as_default`]). Generated structs read and write themselves through
//! [`WireFields`] (`#[derive(kapi::Wire)]`), which keeps their compile cost small.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Reads `null` as the type's default, as Go does for slices, maps and strings.
///
/// Go servers write `null` for a nil slice in some places; refusing it would reject objects
/// upstream clients accept.
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Defines a string enum that keeps values it does not know in an `Other` variant.
///
/// Upstream declares these as string type aliases with a few well-known constants, and the
/// world is open (a newer server may send a value this version never heard of), so decoding
/// must never fail on an unknown spelling. Equality and hashing go by the wire spelling, so
/// `Other("Apply")` equals `Apply`.
///
/// A trailing `impl Default;` also implements `Default` as the empty spelling, Go's zero value
/// for a string type; generated code uses it so structs with a required enum field have a
/// `Default` too.
///
/// ```
/// kapi::open_enum! {
///     /// How a widget turns.
///     pub enum Spin { Left = "Left", Right = "Right", }
///     impl Default;
/// }
/// assert_eq!(Spin::default(), "");
/// assert_eq!(Spin::from("Up"), Spin::Other("Up".to_owned()));
/// ```
#[macro_export]
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )*
        }
        impl Default;
    ) => {
        $crate::open_enum! {
            $(#[$meta])*
            $vis enum $name {
                $( $(#[$vmeta])* $variant = $text, )*
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::from("")
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value without a variant of its own, kept verbatim.
            Other(String),
        }

        impl $name {
            /// The wire spelling of this value.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )*
                    Self::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $( $text => Self::$variant, )*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $( $text => Self::$variant, )*
                    _ => Self::Other(s),
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok(Self::from(s))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for $name {}

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl std::hash::Hash for $name {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.as_str().hash(state);
            }
        }

        impl $crate::__private::serde::Serialize for $name {
            fn serialize<S: $crate::__private::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__private::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                <String as $crate::__private::serde::Deserialize>::deserialize(d).map(Self::from)
            }
        }
    };
}

/// A struct whose JSON form is one object of named fields, read by `#[derive(kapi::Wire)]`.
///
/// serde's derive writes a field enum, a visitor and per-field bookkeeping for every struct, which
/// the compiler type- and borrow-checks once per struct. This trait keeps the per-struct part to a
/// table of names and one `match` storing a value; [`deserialize_fields`] does the rest, generic
/// and checked once. Reading starts from `Default` and overwrites what the input names: the
/// implementor is either the struct itself (when every missing field takes its `Default` value)
/// or a hidden struct of `Option` slots the derive builds the struct from.
pub trait WireFields: Default {
    /// The struct's name, for error messages.
    const NAME: &'static str;
    /// Every field's wire name.
    const FIELDS: &'static [&'static str];
    /// Whether keys not in [`FIELDS`](Self::FIELDS) are kept (a `#[wire(flatten)]` field) and
    /// go to [`set_unknown`](Self::set_unknown) rather than being skipped.
    const KEEPS_UNKNOWN: bool = false;

    /// Reads the value of field `index` (a position in [`FIELDS`](Self::FIELDS)) from `map`
    /// into `self`.
    fn set_field<'de, A: MapAccess<'de>>(
        &mut self,
        index: usize,
        map: &mut A,
    ) -> Result<(), A::Error>;

    /// Reads the value of `key`, a key not in [`FIELDS`](Self::FIELDS), when
    /// [`KEEPS_UNKNOWN`](Self::KEEPS_UNKNOWN) is set.
    fn set_unknown<'de, A: MapAccess<'de>>(
        &mut self,
        key: String,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let _ = key;
        skip(map)
    }
}

/// Reads the value of an unknown `key` into the `#[wire(flatten)]` map of a struct, so a
/// schema with `x-kubernetes-preserve-unknown-fields` beside its properties loses nothing.
pub fn read_unknown<'de, V: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut std::collections::BTreeMap<String, V>,
    key: String,
    map: &mut A,
) -> Result<(), A::Error> {
    let value = map.next_value()?;
    slot.insert(key, value);
    Ok(())
}

/// Reads a [`WireFields`] struct from a map (a JSON or YAML object).
///
/// Unknown keys are skipped and `null` for an `Option` field reads as `None`. A key given twice
/// keeps its last value, as Go's `encoding/json` does (serde's derive rejects it instead).
pub fn deserialize_fields<'de, T: WireFields, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_map(FieldsVisitor(PhantomData))
}

/// Skips the value of a key [`WireFields::set_field`] does not know.
pub fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

/// Reads the next value of `map` into `slot`; one call per field keeps
/// [`WireFields::set_field`] free of per-field error plumbing.
pub fn read<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut T,
    map: &mut A,
) -> Result<(), A::Error> {
    *slot = map.next_value()?;
    Ok(())
}

/// Reads the next value of `map` into an empty slot: the value must be a `T` (`null` is not a
/// missing value).
pub fn read_some<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
) -> Result<(), A::Error> {
    *slot = Some(map.next_value()?);
    Ok(())
}

/// The value of a required field, or serde's ``missing field `name` `` error.
pub fn present<T, E: de::Error>(slot: Option<T>, name: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(name))
}

/// Writes variant `index` of the unit-variant enum `name`, whose wire names are `variants`.
pub fn serialize_variant<S: Serializer>(
    serializer: S,
    name: &'static str,
    index: u32,
    variants: &'static [&'static str],
) -> Result<S::Ok, S::Error> {
    let variant = variants.get(index as usize).copied().unwrap_or_default();
    serializer.serialize_unit_variant(name, index, variant)
}

/// Reads a unit-variant enum's wire name: its position in `variants`, or serde's ``unknown
/// variant`` error listing them.
pub fn deserialize_variant<'de, D: Deserializer<'de>>(
    deserializer: D,
    variants: &'static [&'static str],
) -> Result<usize, D::Error> {
    deserializer.deserialize_str(Variant(variants))
}

struct Variant(&'static [&'static str]);

impl Visitor<'_> for Variant {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of {:?}", self.0)
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<usize, E> {
        self.0
            .iter()
            .position(|name| *name == value)
            .ok_or_else(|| E::unknown_variant(value, self.0))
    }
}

/// Writes a struct field by field for `#[derive(kapi::Wire)]`, keeping the first error and
/// ignoring the calls after it, so the generated `serialize` is one chain of calls without
/// per-field error handling.
pub struct StructWriter<S: Serializer> {
    state: Result<S::SerializeStruct, S::Error>,
}

impl<S: Serializer> fmt::Debug for StructWriter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StructWriter")
            .field("failed", &self.state.is_err())
            .finish()
    }
}

impl<S: Serializer> StructWriter<S> {
    /// Starts struct `name` with `len` fields to be written.
    pub fn new(serializer: S, name: &'static str, len: usize) -> Self {
        StructWriter {
            state: serializer.serialize_struct(name, len),
        }
    }

    /// Writes `value` under `key`.
    pub fn field<T: Serialize + ?Sized>(mut self, key: &'static str, value: &T) -> Self {
        if let Ok(s) = &mut self.state
            && let Err(error) = s.serialize_field(key, value)
        {
            self.state = Err(error);
        }
        self
    }

    /// Writes `value` under `key` when it is `Some`, else records the field as skipped.
    pub fn optional<T: Serialize>(mut self, key: &'static str, value: &Option<T>) -> Self {
        if let Ok(s) = &mut self.state {
            let written = match value {
                Some(value) => s.serialize_field(key, value),
                None => s.skip_field(key),
            };
            if let Err(error) = written {
                self.state = Err(error);
            }
        }
        self
    }

    /// Writes `value` under `key` unless `skip`, else records the field as skipped.
    pub fn field_unless<T: Serialize + ?Sized>(
        mut self,
        key: &'static str,
        value: &T,
        skip: bool,
    ) -> Self {
        if let Ok(s) = &mut self.state {
            let written = if skip {
                s.skip_field(key)
            } else {
                s.serialize_field(key, value)
            };
            if let Err(error) = written {
                self.state = Err(error);
            }
        }
        self
    }

    /// Ends the struct, or returns the first error.
    pub fn end(self) -> Result<S::Ok, S::Error> {
        self.state?.end()
    }
}

/// [`StructWriter`] for a struct with a `#[wire(flatten)]` map: written as a map, so the kept
/// unknown keys ([`rest`](Self::rest)) can follow the named fields.
pub struct MapWriter<S: Serializer> {
    state: Result<S::SerializeMap, S::Error>,
}

impl<S: Serializer> fmt::Debug for MapWriter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MapWriter")
            .field("failed", &self.state.is_err())
            .finish()
    }
}

impl<S: Serializer> MapWriter<S> {
    /// Starts a map of `len` entries, when known.
    pub fn new(serializer: S, len: Option<usize>) -> Self {
        MapWriter {
            state: serializer.serialize_map(len),
        }
    }

    fn entry<T: Serialize + ?Sized>(mut self, key: &str, value: &T) -> Self {
        if let Ok(s) = &mut self.state
            && let Err(error) = s.serialize_entry(key, value)
        {
            self.state = Err(error);
        }
        self
    }

    /// Writes `value` under `key`.
    pub fn field<T: Serialize + ?Sized>(self, key: &'static str, value: &T) -> Self {
        self.entry(key, value)
    }

    /// Writes `value` under `key` when it is `Some`.
    pub fn optional<T: Serialize>(self, key: &'static str, value: &Option<T>) -> Self {
        match value {
            Some(value) => self.entry(key, value),
            None => self,
        }
    }

    /// Writes `value` under `key` unless `skip`.
    pub fn field_unless<T: Serialize + ?Sized>(
        self,
        key: &'static str,
        value: &T,
        skip: bool,
    ) -> Self {
        if skip { self } else { self.entry(key, value) }
    }

    /// Writes the kept unknown keys, skipping any that a named field already wrote.
    pub fn rest<V: Serialize>(
        mut self,
        fields: &[&str],
        rest: &std::collections::BTreeMap<String, V>,
    ) -> Self {
        for (key, value) in rest {
            if !fields.contains(&key.as_str()) {
                self = self.entry(key, value);
            }
        }
        self
    }

    /// Ends the map, or returns the first error.
    pub fn end(self) -> Result<S::Ok, S::Error> {
        self.state?.end()
    }
}

struct FieldsVisitor<T>(PhantomData<T>);

impl<'de, T: WireFields> Visitor<'de> for FieldsVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "struct {}", T::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut out = T::default();
        let seed = || Key {
            fields: T::FIELDS,
            keep: T::KEEPS_UNKNOWN,
        };
        while let Some(key) = map.next_key_seed(seed())? {
            match key {
                KeyAt::Field(index) => out
                    .set_field(index, &mut map)
                    .map_err(|e| at_field(T::FIELDS.get(index).copied().unwrap_or("?"), e))?,
                KeyAt::Unknown(Some(key)) => {
                    let name = key.clone();
                    out.set_unknown(key, &mut map)
                        .map_err(|e| at_field(&name, e))?
                }
                KeyAt::Unknown(None) => skip(&mut map)?,
            }
        }
        Ok(out)
    }
}

/// `error`, raised reading the value of field `name`, with the field prefixed to its path:
/// ``at `.spec.replicas`: invalid type: string "x", expected i64``. Each enclosing struct adds
/// its field on the way out, so the message names the path from the object's root (list
/// indices and map keys aside, which serde's collections do not report). serde_json keeps the
/// line and column, which it reads back from the end of a custom message.
fn at_field<E: de::Error>(name: &str, error: E) -> E {
    let message = error.to_string();
    match message.strip_prefix("at `") {
        Some(rest) => E::custom(format_args!("at `.{name}{rest}")),
        None => E::custom(format_args!("at `.{name}`: {message}")),
    }
}

/// Reads a key as its position in a field table, or as itself when unknown keys are kept.
struct Key<'a> {
    fields: &'a [&'static str],
    keep: bool,
}

/// A key read by [`Key`]: a field's position, or a key not in the table (its text only when
/// the struct keeps unknown keys, so other structs allocate nothing for them).
enum KeyAt {
    Field(usize),
    Unknown(Option<String>),
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = KeyAt;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = KeyAt;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(match self.fields.iter().position(|name| *name == key) {
            Some(index) => KeyAt::Field(index),
            None => KeyAt::Unknown(self.keep.then(|| key.to_owned())),
        })
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Self::Value, E> {
        match self.fields.iter().position(|name| name.as_bytes() == key) {
            Some(index) => Ok(KeyAt::Field(index)),
            None if !self.keep => Ok(KeyAt::Unknown(None)),
            None => match std::str::from_utf8(key) {
                Ok(key) => Ok(KeyAt::Unknown(Some(key.to_owned()))),
                Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(key), &self)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[derive(Debug, Default, PartialEq, crate::Wire)]
    #[wire(crate = "crate", rename_all = "camelCase")]
    struct Port {
        container_port: i32,
        name: String,
        #[wire(rename = "proto")]
        protocol: Option<String>,
        #[wire(default)]
        labels: Vec<String>,
        inner: Option<Box<Port>>,
    }

    #[derive(Debug, Default, PartialEq, crate::Wire)]
    #[wire(crate = "crate")]
    struct Empty {}

    #[test]
    fn reads_objects() {
        let port = |container_port, protocol: Option<&str>, labels: &[&str]| Port {
            container_port,
            name: "http".to_owned(),
            protocol: protocol.map(str::to_owned),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            inner: None,
        };
        let cases = [
            (
                json!({"containerPort": 80, "name": "http"}),
                port(80, None, &[]),
            ),
            (
                json!({"containerPort": 80, "name": "http", "proto": null}),
                port(80, None, &[]),
            ),
            (
                json!({"name": "http", "proto": "TCP", "labels": ["a"], "containerPort": 1}),
                port(1, Some("TCP"), &["a"]),
            ),
            // Unknown keys of any shape are skipped.
            (
                json!({"containerPort": 80, "name": "http", "x": {"y": [1, null]}, "protocol": 1}),
                port(80, None, &[]),
            ),
        ];
        for (input, want) in cases {
            let got: Port = serde_json::from_value(input.clone()).expect("reads");
            assert_eq!(got, want, "{input}");
            let text = input.to_string();
            let got: Port = serde_json::from_str(&text).expect("reads");
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn later_duplicate_keys_win() {
        let text = r#"{"containerPort": 1, "name": "a", "containerPort": 2, "proto": "UDP", "proto": null}"#;
        let got: Port = serde_json::from_str(text).expect("reads");
        assert_eq!((got.container_port, got.protocol), (2, None));
    }

    #[test]
    fn rejects_bad_input() {
        let cases = [
            (r#"{"name": "a"}"#, "missing field `containerPort`"),
            (r#"{"containerPort": 1}"#, "missing field `name`"),
            (
                r#"{"labels": [], "proto": "x"}"#,
                "missing field `containerPort`",
            ),
            (
                r#"{"containerPort": "80", "name": "a"}"#,
                "invalid type: string \"80\"",
            ),
            (
                r#"{"containerPort": 1, "name": null}"#,
                "invalid type: null",
            ),
            ("[1, 2]", "expected struct Port"),
            ("null", "expected struct Port"),
            (
                r#"{"containerPort": 1, "name": "a", "inner": {"name": "b"}}"#,
                "missing field `containerPort`",
            ),
        ];
        for (text, want) in cases {
            let error = serde_json::from_str::<Port>(text)
                .expect_err(text)
                .to_string();
            assert!(error.contains(want), "{text}: {error}");
        }
    }

    #[test]
    fn writes_objects() {
        let mut port = Port {
            container_port: 8080,
            name: "web".to_owned(),
            ..Port::default()
        };
        assert_eq!(
            serde_json::to_value(&port).expect("writes"),
            json!({"containerPort": 8080, "name": "web", "labels": []})
        );
        port.protocol = Some("TCP".to_owned());
        port.inner = Some(Box::new(Port::default()));
        let value = serde_json::to_value(&port).expect("writes");
        assert_eq!(
            value,
            json!({
                "containerPort": 8080, "name": "web", "proto": "TCP", "labels": [],
                "inner": {"containerPort": 0, "name": "", "labels": []},
            })
        );
        // Fields are written in declaration order.
        let text = serde_json::to_string(&port).expect("writes");
        assert!(
            text.starts_with(r#"{"containerPort":8080,"name":"web","proto":"TCP""#),
            "{text}"
        );
        let back: Port = serde_json::from_value(value).expect("reads");
        assert_eq!(back, port);
        let yaml = serde_yaml_ng::to_string(&port).expect("writes");
        assert_eq!(serde_yaml_ng::from_str::<Port>(&yaml).expect("reads"), port);
    }

    #[derive(Debug, Default, PartialEq, crate::Wire)]
    #[wire(crate = "crate")]
    struct Unwritable {
        before: Option<u8>,
        keys: std::collections::BTreeMap<Vec<u8>, u8>,
        after: u8,
    }

    #[test]
    fn the_first_write_error_is_returned() {
        let mut value = Unwritable::default();
        assert_eq!(
            serde_json::to_string(&value).expect("writes"),
            r#"{"keys":{},"after":0}"#
        );
        value.keys.insert(vec![1], 1);
        let error = serde_json::to_string(&value).expect_err("JSON keys are strings");
        assert!(
            error.to_string().contains("key must be a string"),
            "{error}"
        );
    }

    #[test]
    fn empty_structs() {
        assert_eq!(serde_json::to_string(&Empty {}).expect("writes"), "{}");
        let got: Empty = serde_json::from_str(r#"{"a": 1}"#).expect("reads");
        assert_eq!(got, Empty {});
    }

    /// Every missing field takes the struct's `Default` value: nothing is required.
    #[derive(Debug, PartialEq, crate::Wire)]
    #[wire(crate = "crate", rename_all = "camelCase", default)]
    struct Defaulted {
        container_port: i32,
        name: Option<String>,
    }

    impl Default for Defaulted {
        fn default() -> Self {
            Defaulted {
                container_port: 80,
                name: None,
            }
        }
    }

    #[test]
    fn a_default_struct_fills_missing_fields_from_default() {
        let got: Defaulted = serde_json::from_str(r#"{"name": "a"}"#).expect("reads");
        assert_eq!(
            got,
            Defaulted {
                container_port: 80,
                name: Some("a".to_owned())
            }
        );
        let got: Defaulted = serde_json::from_str("{}").expect("reads");
        assert_eq!(got, Defaulted::default());
        assert_eq!(
            serde_json::to_string(&got).expect("writes"),
            r#"{"containerPort":80}"#
        );
    }

    /// How replicas are replaced: written as strings.
    #[derive(Clone, Copy, Debug, PartialEq, crate::Wire)]
    #[serde(rename_all = "camelCase")]
    #[wire(crate = "crate")]
    enum Strategy {
        Recreate,
        RollingUpdate,
        #[serde(rename = "Never")]
        OnDelete,
    }

    /// No `Default`, serde's attributes: the shape a user's custom resource spec has.
    #[derive(Debug, PartialEq, crate::Wire)]
    #[serde(rename_all = "camelCase")]
    #[wire(crate = "crate")]
    struct Spec {
        image: String,
        strategy: Strategy,
        #[serde(default)]
        replicas: i32,
        #[serde(default = "three")]
        max_surge: i32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        backend: Option<String>,
        #[serde(skip)]
        cache: u8,
    }

    fn three() -> i32 {
        3
    }

    #[test]
    fn unit_enums_read_and_write_their_names() {
        let cases = [
            (Strategy::Recreate, "\"recreate\""),
            (Strategy::RollingUpdate, "\"rollingUpdate\""),
            (Strategy::OnDelete, "\"Never\""),
        ];
        for (value, text) in cases {
            assert_eq!(serde_json::to_string(&value).expect("writes"), text);
            assert_eq!(
                serde_json::from_str::<Strategy>(text).expect("reads"),
                value
            );
            let yaml = serde_yaml_ng::to_string(&value).expect("writes");
            assert_eq!(
                serde_yaml_ng::from_str::<Strategy>(&yaml).expect("reads"),
                value
            );
        }
        let error = serde_json::from_str::<Strategy>("\"OnDelete\"")
            .expect_err("not a wire name")
            .to_string();
        assert!(
            error.contains("unknown variant `OnDelete`, expected one of `recreate`"),
            "{error}"
        );
        assert!(serde_json::from_str::<Strategy>("1").is_err());
    }

    #[test]
    fn structs_without_default_build_from_slots() {
        let got: Spec =
            serde_json::from_str(r#"{"image": "nginx", "strategy": "recreate", "cache": 9}"#)
                .expect("reads");
        assert_eq!(
            got,
            Spec {
                image: "nginx".to_owned(),
                strategy: Strategy::Recreate,
                replicas: 0,
                max_surge: 3,
                args: Vec::new(),
                backend: None,
                cache: 0,
            }
        );
        assert_eq!(
            serde_json::to_value(&got).expect("writes"),
            json!({"image": "nginx", "strategy": "recreate", "replicas": 0, "maxSurge": 3})
        );
        let full = json!({
            "image": "a", "strategy": "Never", "replicas": 2, "maxSurge": 1,
            "args": ["-v"], "backend": "db"
        });
        let got: Spec = serde_json::from_value(full.clone()).expect("reads");
        assert_eq!(serde_json::to_value(&got).expect("writes"), full);
        let cases = [
            (r#"{"strategy": "recreate"}"#, "missing field `image`"),
            (r#"{"image": "a"}"#, "missing field `strategy`"),
            (
                r#"{"image": null, "strategy": "recreate"}"#,
                "invalid type: null",
            ),
            (
                r#"{"image": "a", "strategy": "recreate", "args": null}"#,
                "invalid type: null",
            ),
        ];
        for (text, want) in cases {
            let error = serde_json::from_str::<Spec>(text)
                .expect_err(text)
                .to_string();
            assert!(error.contains(want), "{text}: {error}");
        }
    }

    mod spin {
        #![allow(unreachable_pub)]
        crate::open_enum! {
            pub enum Spin { Left = "Left", }
            impl Default;
        }
    }
    use spin::Spin;

    #[test]
    fn open_enum_default_is_the_empty_spelling() {
        assert_eq!(Spin::default(), Spin::Other(String::new()));
        assert_eq!(Spin::default(), "");
        assert_eq!(Spin::from("Left"), Spin::Left);
    }

    /// A schema with properties and `x-kubernetes-preserve-unknown-fields: true`: the API
    /// server keeps keys the schema does not name (upstream's structural pruning stops at such
    /// a node), so a round trip through the type must keep them too.
    #[derive(Debug, Default, PartialEq, crate::Wire)]
    #[wire(crate = "crate", default)]
    struct Open {
        name: Option<String>,
        #[wire(flatten)]
        extra: std::collections::BTreeMap<String, serde_json::Value>,
    }

    #[derive(Debug, PartialEq, crate::Wire)]
    #[wire(crate = "crate")]
    struct OpenRequired {
        name: String,
        #[wire(flatten)]
        extra: std::collections::BTreeMap<String, serde_json::Value>,
    }

    #[test]
    fn flatten_keeps_unknown_keys() {
        let input = json!({"name": "a", "x": 1, "y": {"z": [true, null]}});
        let open: Open = serde_json::from_value(input.clone()).expect("reads");
        assert_eq!(open.name.as_deref(), Some("a"));
        assert_eq!(open.extra.len(), 2);
        assert_eq!(serde_json::to_value(&open).expect("writes"), input);
        let text = r#"{"x":1,"name":"a"}"#;
        let open: Open = serde_json::from_str(text).expect("reads text");
        assert_eq!(
            serde_json::to_value(&open).expect("writes"),
            json!({"name": "a", "x": 1})
        );
        let strict: OpenRequired = serde_json::from_value(input.clone()).expect("reads");
        assert_eq!(serde_json::to_value(&strict).expect("writes"), input);
        let missing = serde_json::from_value::<OpenRequired>(json!({"x": 1}));
        assert!(missing.is_err());
        // A leftover key that a named field also writes is written once.
        let mut clash = Open::default();
        clash.extra.insert("name".into(), json!("shadow"));
        assert_eq!(serde_json::to_value(&clash).expect("writes"), json!({}));
    }

    /// Decode errors name the field path (issue 17), and serde_json still reports the position.
    #[test]
    fn errors_name_the_field_path() {
        #[derive(Debug, Default, PartialEq, crate::Wire)]
        #[wire(crate = "crate", default)]
        struct Outer {
            spec: Option<Open>,
        }
        let error = serde_json::from_str::<Outer>(r#"{"spec": {"name": 5}}"#)
            .expect_err("a number is not a string")
            .to_string();
        assert_eq!(
            error,
            "at `.spec.name`: invalid type: integer `5`, expected a string at line 1 column 19"
        );
        let error = serde_json::from_str::<Outer>(r#"{"spec": {"x": }}"#)
            .expect_err("not JSON")
            .to_string();
        assert!(error.starts_with("at `.spec.x`: expected value"), "{error}");
    }
}
