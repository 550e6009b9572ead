//! CEL's types as the checker infers them, and the declarations a structural schema gives the
//! values it describes: an object's fields, a list's items, a map's values, each with the size
//! bounds cost estimation needs (upstream's `DeclType`: the largest number of elements a value
//! may have, from `maxLength`/`maxItems`/`maxProperties` or else from the 3 MiB request limit,
//! and the smallest size it serializes to).
//!
//! `dyn` is the checker's "not known": an `x-kubernetes-int-or-string`, a value that keeps
//! unknown fields, a field of an object without declared properties. A dyn value is assignable
//! to and from every type, so nothing typed dyn is refused.
//!
//! Upstream: cel-go `checker/types.go` (assignability, type parameters, `mostGeneral`),
//! `checker/format.go` (how types are written in messages), k8s
//! `apiserver/pkg/cel/common/schemas.go` (`SchemaDeclType` and its size estimates) and
//! `apiserver/pkg/cel/types.go` (the minimum serialized sizes).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use crate::names::escape;
use crate::schema::SchemaNode;

/// The largest request kube-apiserver accepts (`DefaultMaxRequestSizeBytes`), which bounds
/// every value no schema bounds.
pub const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// The shortest a timestamp serializes to in JSON (`MinDatetimeSizeJSON`, `"2006-01-02T15:04:05Z"`).
const MIN_DATETIME_SIZE: u64 = 22;
/// The longest (`MaxDatetimeSizeJSON`, with nanoseconds and a zone offset).
const MAX_DATETIME_SIZE: u64 = 37;
/// A date (`JSONDateSize`, `"2006-01-02"`).
const DATE_SIZE: u64 = 12;
/// The shortest duration (`MinDurationSizeJSON`, `"0s"`).
const MIN_DURATION_SIZE: u64 = 4;
/// The longest duration (`MaxDurationSizeJSON`).
const MAX_DURATION_SIZE: u64 = 32;

/// A CEL type.
#[derive(Clone, Debug, Default)]
pub enum Type {
    /// Any type: what the checker does not know.
    #[default]
    Dyn,
    /// A type error already reported: assignable everywhere, like dyn, so one error is
    /// reported once.
    Error,
    /// The type of `null`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Timestamp`, written `timestamp`.
    Timestamp,
    /// `google.protobuf.Duration`, written `duration`.
    Duration,
    /// A list of the element type.
    List(Box<Type>),
    /// A map from the key type to the value type.
    Map(Box<Type>, Box<Type>),
    /// The type of a type value (`type(x)`, `int`).
    Type(Box<Type>),
    /// A library's abstract type (`net.IP`, `kubernetes.Quantity`, `optional_type(T)`).
    Opaque(&'static str, Vec<Type>),
    /// An object a schema declares.
    Object(Arc<Decl>),
    /// A type parameter of an overload's signature.
    Param(&'static str),
}

impl PartialEq for Type {
    fn eq(&self, other: &Type) -> bool {
        match (self, other) {
            (Type::List(a), Type::List(b)) | (Type::Type(a), Type::Type(b)) => a == b,
            (Type::Map(k1, v1), Type::Map(k2, v2)) => k1 == k2 && v1 == v2,
            (Type::Opaque(a, p), Type::Opaque(b, q)) => a == b && p == q,
            (Type::Object(a), Type::Object(b)) => a.name == b.name,
            (Type::Param(a), Type::Param(b)) => a == b,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Error => f.write_str("!error!"),
            Type::Null => f.write_str("null"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Timestamp => f.write_str("timestamp"),
            Type::Duration => f.write_str("duration"),
            Type::List(elem) => write!(f, "list({elem})"),
            Type::Map(key, value) => write!(f, "map({key}, {value})"),
            Type::Type(of) => write!(f, "type({of})"),
            Type::Opaque(name, params) if params.is_empty() => f.write_str(name),
            Type::Opaque(name, params) => {
                write!(f, "{name}(")?;
                for (i, p) in params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str(")")
            }
            Type::Object(decl) => f.write_str(&decl.name),
            Type::Param(name) => f.write_str(name),
        }
    }
}

/// The name of CEL's optional type.
pub const OPTIONAL: &str = "optional_type";

impl Type {
    /// `list(elem)`.
    pub fn list(elem: Type) -> Type {
        Type::List(Box::new(elem))
    }

    /// `map(key, value)`.
    pub fn map(key: Type, value: Type) -> Type {
        Type::Map(Box::new(key), Box::new(value))
    }

    /// `optional_type(of)`.
    pub fn optional(of: Type) -> Type {
        Type::Opaque(OPTIONAL, vec![of])
    }

    /// Whether the type says nothing: dyn or an error.
    pub fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn | Type::Error)
    }

    /// Whether the type is known through and through: no dyn, error or parameter anywhere,
    /// which makes a refusal on its account certain.
    pub fn is_concrete(&self) -> bool {
        match self {
            Type::Dyn | Type::Error | Type::Param(_) => false,
            Type::List(e) | Type::Type(e) => e.is_concrete(),
            Type::Map(k, v) => k.is_concrete() && v.is_concrete(),
            Type::Opaque(_, params) => params.iter().all(Type::is_concrete),
            _ => true,
        }
    }

    /// The element type of a list, or the value type of a map.
    pub fn element(&self) -> Type {
        match self {
            Type::List(e) | Type::Map(_, e) => (**e).clone(),
            _ => Type::Dyn,
        }
    }
}

/// Type parameters bound while an overload is matched.
#[derive(Clone, Default, Debug)]
pub struct Bindings(HashMap<&'static str, Type>);

impl Bindings {
    /// `t` with every bound parameter replaced, unbound ones by dyn.
    pub fn substitute(&self, t: &Type) -> Type {
        match t {
            Type::Param(name) => match self.0.get(name) {
                Some(bound) => self.substitute(bound),
                None => Type::Dyn,
            },
            Type::List(e) => Type::list(self.substitute(e)),
            Type::Map(k, v) => Type::map(self.substitute(k), self.substitute(v)),
            Type::Type(e) => Type::Type(Box::new(self.substitute(e))),
            Type::Opaque(name, params) => {
                Type::Opaque(name, params.iter().map(|p| self.substitute(p)).collect())
            }
            other => other.clone(),
        }
    }

    /// Whether a value of type `from` can be passed where `to` is declared, binding `to`'s
    /// parameters (cel-go's `internalIsAssignable`, parameters only on the declared side).
    pub fn assignable(&mut self, to: &Type, from: &Type) -> bool {
        if let Type::Param(name) = to {
            return match self.0.get(name).cloned() {
                None => {
                    self.0.insert(name, from.clone());
                    true
                }
                Some(bound) => {
                    if self.assignable(&bound, from) {
                        let general = most_general(&bound, from);
                        self.0.insert(name, general);
                        true
                    } else if self.assignable_loose(from, &bound) {
                        self.0.insert(name, most_general(from, &bound));
                        true
                    } else {
                        false
                    }
                }
            };
        }
        if to.is_dyn() || from.is_dyn() {
            return true;
        }
        match (to, from) {
            // cel-go lets null stand for objects, wrappers and abstract types only; kapi lets
            // it meet any type, so no comparison with null is refused.
            (_, Type::Null) | (Type::Null, _) => true,
            (Type::List(a), Type::List(b)) => self.assignable(a, b),
            (Type::Map(k1, v1), Type::Map(k2, v2)) => {
                self.assignable(k1, k2) && self.assignable(v1, v2)
            }
            (Type::Type(_), Type::Type(_)) => true,
            (Type::Opaque(a, p), Type::Opaque(b, q)) => {
                a == b && p.len() == q.len() && p.iter().zip(q).all(|(x, y)| self.assignable(x, y))
            }
            (a, b) => a == b,
        }
    }

    /// Assignability of two argument types to each other (neither holds parameters).
    fn assignable_loose(&mut self, to: &Type, from: &Type) -> bool {
        Bindings::default().assignable(to, from)
    }
}

/// The more general of two types known to unify (cel-go's `mostGeneral`).
fn most_general(a: &Type, b: &Type) -> Type {
    if less_specific(a, b) {
        a.clone()
    } else {
        b.clone()
    }
}

/// Whether `a` is equal to `b` or less specific (dyn where `b` is known).
fn less_specific(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (a, _) if a.is_dyn() => true,
        (_, b) if b.is_dyn() => false,
        (Type::List(x), Type::List(y)) => less_specific(x, y),
        (Type::Map(k1, v1), Type::Map(k2, v2)) => less_specific(k1, k2) && less_specific(v1, v2),
        (Type::Opaque(n, p), Type::Opaque(m, q)) => {
            n == m && p.len() == q.len() && p.iter().zip(q).all(|(x, y)| less_specific(x, y))
        }
        (Type::Type(_), Type::Type(_)) => true,
        (a, b) => a == b,
    }
}

/// What a schema declares of a value: its shape and its size bounds.
#[derive(Debug)]
pub struct Decl {
    /// The type's name in messages (objects only).
    pub name: String,
    /// What the value is made of.
    pub shape: Shape,
    /// The most elements (characters, bytes, items, properties) the value may have.
    pub max_elements: u64,
    /// The fewest bytes the value serializes to in JSON.
    pub min_size: u64,
}

/// A field read of a declared value.
#[derive(Debug)]
pub enum Field<'d> {
    /// A field the schema declares.
    Declared(&'d Arc<Decl>),
    /// A field of an object that lets others be read: dyn.
    Open,
    /// A field the object cannot have (`undefined field`).
    Undefined,
}

/// The shape of a declared value.
#[derive(Debug)]
pub enum Shape {
    /// A value of a scalar type (or dyn).
    Scalar(Type),
    /// A list of the declared items.
    List(Arc<Decl>),
    /// A map from strings to values.
    Map(Arc<Decl>),
    /// An object: its fields by CEL name; `open` when fields it does not declare may be read
    /// (dyn), which kapi allows where upstream's declaration would be empty or where unknown
    /// fields are kept, so no rule upstream accepts is refused.
    Object {
        /// The declared fields.
        fields: BTreeMap<String, Arc<Decl>>,
        /// Whether other fields may be read.
        open: bool,
    },
}

impl Decl {
    fn scalar(t: Type, max_elements: u64, min_size: u64) -> Arc<Decl> {
        Arc::new(Decl {
            name: String::new(),
            shape: Shape::Scalar(t),
            max_elements,
            min_size,
        })
    }

    /// A value nothing is known of.
    pub fn dyn_value() -> Arc<Decl> {
        Decl::scalar(Type::Dyn, MAX_REQUEST_BYTES - 2, 1)
    }

    /// A value known only by its type (a policy's variable).
    pub fn typed(t: Type) -> Decl {
        Decl {
            name: String::new(),
            shape: Shape::Scalar(t),
            max_elements: MAX_REQUEST_BYTES - 2,
            min_size: 1,
        }
    }

    /// A key of a declared map: a string of no declared size.
    pub fn map_key() -> Arc<Decl> {
        Decl::scalar(Type::String, 0, 2)
    }

    /// The CEL type of the declared value.
    pub fn cel_type(self: &Arc<Self>) -> Type {
        match &self.shape {
            Shape::Scalar(t) => t.clone(),
            Shape::List(items) => Type::list(items.cel_type()),
            Shape::Map(values) => Type::map(Type::String, values.cel_type()),
            Shape::Object { .. } => Type::Object(Arc::clone(self)),
        }
    }

    /// The declaration of a list's items or a map's values.
    pub fn element(&self) -> Option<&Arc<Decl>> {
        match &self.shape {
            Shape::List(e) | Shape::Map(e) => Some(e),
            _ => None,
        }
    }

    /// What reading `field` of the value gives.
    pub fn field(&self, field: &str) -> Field<'_> {
        match &self.shape {
            Shape::Object { fields, open } => match fields.get(field) {
                Some(decl) => Field::Declared(decl),
                None if *open => Field::Open,
                None => Field::Undefined,
            },
            _ => Field::Open,
        }
    }

    /// The declaration of values of `schema`, named `name` in messages; `resource` says it is
    /// the root of a resource (`apiVersion`, `kind` and `metadata` are there whatever the
    /// schema lists).
    pub fn of_schema<S: SchemaNode>(schema: &S, resource: bool, name: &str) -> Arc<Decl> {
        build(schema, resource, name, 0)
    }
}

/// How deep a schema is followed; deeper values are dyn (recursive schemas end there).
const MAX_DEPTH: usize = 64;

fn non_negative(v: i64) -> u64 {
    v.max(0) as u64
}

fn build<S: SchemaNode>(schema: &S, resource: bool, name: &str, depth: usize) -> Arc<Decl> {
    if depth > MAX_DEPTH || schema.int_or_string() {
        let max = match schema.max_length() {
            Some(max) => non_negative(max).saturating_mul(4),
            None => MAX_REQUEST_BYTES - 2,
        };
        return Decl::scalar(Type::Dyn, max, 1);
    }
    let type_ = schema.schema_type().unwrap_or_default();
    match type_ {
        "array" => {
            let Some(items) = schema.items() else {
                return Decl::dyn_value();
            };
            let items = build(
                items,
                items.embedded_resource(),
                &format!("{name}.@idx"),
                depth + 1,
            );
            let max = match schema.max_items() {
                Some(max) => non_negative(max),
                None => (MAX_REQUEST_BYTES - 2) / (items.min_size + 1),
            };
            Arc::new(Decl {
                name: name.to_owned(),
                shape: Shape::List(items),
                max_elements: max,
                min_size: 2,
            })
        }
        "object" | "" if type_ == "object" || resource || !schema.properties().is_empty() => {
            if let Some(values) = schema.additional() {
                let values = build(
                    values,
                    values.embedded_resource(),
                    &format!("{name}.@elem"),
                    depth + 1,
                );
                let max = match schema.max_properties() {
                    Some(max) => non_negative(max),
                    None => (MAX_REQUEST_BYTES - 2) / (values.min_size + 6),
                };
                return Arc::new(Decl {
                    name: name.to_owned(),
                    shape: Shape::Map(values),
                    max_elements: max,
                    min_size: 2,
                });
            }
            object(schema, resource || schema.embedded_resource(), name, depth)
        }
        "string" => {
            let max_length = schema.max_length().map(non_negative);
            let t = match schema.format() {
                Some("byte") => {
                    return Decl::scalar(
                        Type::Bytes,
                        max_length.unwrap_or(MAX_REQUEST_BYTES - 2),
                        2,
                    );
                }
                Some("duration") => {
                    return Decl::scalar(Type::Duration, MAX_DURATION_SIZE, MIN_DURATION_SIZE);
                }
                Some("date") => return Decl::scalar(Type::Timestamp, DATE_SIZE, DATE_SIZE),
                Some("date-time") => {
                    return Decl::scalar(Type::Timestamp, MAX_DATETIME_SIZE, MIN_DATETIME_SIZE);
                }
                Some("int-or-string") => Type::Dyn,
                _ => Type::String,
            };
            let max = match max_length {
                Some(max) => max.saturating_mul(4),
                None => schema.longest_enum().unwrap_or(MAX_REQUEST_BYTES - 2),
            };
            Decl::scalar(t, max, 2)
        }
        "boolean" => Decl::scalar(Type::Bool, 0, 4),
        "number" => Decl::scalar(Type::Double, 0, 1),
        "integer" => Decl::scalar(Type::Int, 0, 1),
        // No type (and no properties): upstream exposes nothing of it; kapi lets it
        // through as dyn.
        _ => Decl::dyn_value(),
    }
}

/// An object's declaration, its fields from `properties`.
fn object<S: SchemaNode>(schema: &S, resource: bool, name: &str, depth: usize) -> Arc<Decl> {
    let mut fields = BTreeMap::new();
    let mut min_size = 2u64;
    let properties = schema.properties();
    for &(property, sub) in &properties {
        let Some(cel_name) = escape(property) else {
            continue;
        };
        let decl = build(
            sub,
            sub.embedded_resource(),
            &format!("{name}.{cel_name}"),
            depth + 1,
        );
        if schema.requires(property) && !sub.has_default() {
            min_size += property.len() as u64 + decl.min_size + 4;
        }
        fields.insert(cel_name.into_owned(), decl);
    }
    if resource {
        let string = || Decl::scalar(Type::String, MAX_REQUEST_BYTES - 2, 2);
        fields.entry("apiVersion".to_owned()).or_insert_with(string);
        fields.entry("kind".to_owned()).or_insert_with(string);
        fields.entry("metadata".to_owned()).or_insert_with(|| {
            let mut meta = BTreeMap::new();
            meta.insert("name".to_owned(), string());
            meta.insert("generateName".to_owned(), string());
            Arc::new(Decl {
                name: format!("{name}.metadata"),
                shape: Shape::Object {
                    fields: meta,
                    open: true,
                },
                max_elements: 0,
                min_size: 2,
            })
        });
    }
    let open = properties.is_empty()
        || schema.has_additional_properties()
        || schema.preserve_unknown_fields();
    Arc::new(Decl {
        name: name.to_owned(),
        shape: Shape::Object { fields, open },
        max_elements: 0,
        min_size,
    })
}

/// An OpenAPI schema of the published definitions (`$ref: #/components/schemas/<name>`, also
/// wrapped in `allOf`) with its references replaced by what they name, down to `depth` levels
/// (deeper, a value that keeps unknown fields): a schema [`Decl::of_schema`] can read.
pub fn inline_refs(
    schema: &serde_json::Value,
    lookup: &dyn Fn(&str) -> Option<serde_json::Value>,
    depth: usize,
) -> serde_json::Value {
    use serde_json::Value;
    let reference = |v: &Value| {
        v.get("$ref")
            .and_then(Value::as_str)
            .map(|r| r.rsplit('/').next().unwrap_or(r).to_owned())
    };
    let target = reference(schema).or_else(|| {
        schema
            .get("allOf")
            .and_then(Value::as_array)
            .filter(|all| all.len() == 1)
            .and_then(|all| reference(&all[0]))
    });
    if let Some(name) = target {
        if depth == 0 {
            return serde_json::json!({"x-kubernetes-preserve-unknown-fields": true});
        }
        return match lookup(&name) {
            Some(found) => inline_refs(&found, lookup, depth - 1),
            None => serde_json::json!({"x-kubernetes-preserve-unknown-fields": true}),
        };
    }
    let Value::Object(fields) = schema else {
        return schema.clone();
    };
    let mut out = serde_json::Map::new();
    for (key, value) in fields {
        let value = match key.as_str() {
            "properties" => match value {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(k, v)| (k.clone(), inline_refs(v, lookup, depth)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" | "additionalProperties" if value.is_object() => {
                inline_refs(value, lookup, depth)
            }
            "allOf" | "oneOf" | "anyOf" | "not" | "x-kubernetes-validations" => continue,
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}
