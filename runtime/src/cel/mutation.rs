//! The CEL of MutatingAdmissionPolicies' mutations: expressions that build an apply
//! configuration out of `Object` struct literals (`Object{spec: Object.spec{replicas: 3}}`) or
//! a list of `JSONPatch{op, path, value}` operations, and the `jsonpatch.escapeKey` function,
//! which only mutations see.
//!
//! The `cel` crate constructs a struct literal through a struct type registered on the
//! environment under the literal's name. The `Object…` names are as many as an object has
//! field paths, so [`compile`] collects those an expression uses from its syntax tree and runs
//! it in an environment that registers exactly those (and `JSONPatch`), kept for the next
//! expression naming the same set. Each literal makes a struct value of its name;
//! [`apply_configuration`] and [`json_patch`] turn a result into JSON and check, as upstream's
//! `CheckTypeNamesMatchFieldPathNames` does, that each nested literal is named by the path of
//! the field it sits in.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/mutation/` (the `Object` and `JSONPatch` types, the
//! `jsonpatch` library), `admission/plugin/policy/mutating/patch/json_patch.go` and `smd.go`
//! (how the results are read).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock, Mutex};

use cel::common::types::{CelStruct, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError, StructType, Value as Cel};
use serde_json::{Map, Value};

use super::library::{string_arg, value_overload};
use super::{CompileError, Program, Variable, check};

/// The root of the apply configuration types.
pub const OBJECT: &str = "Object";
/// The type of one JSON patch operation.
pub const JSON_PATCH: &str = "JSONPatch";
/// The fields a `JSONPatch` literal may set.
const JSON_PATCH_FIELDS: &[&str] = &["op", "path", "from", "value"];
/// The function escaping a map key for a JSON pointer.
const ESCAPE_KEY: &str = "jsonpatch.escapeKey";

/// How many environments (one per set of struct names) are kept: past it the cache starts
/// over, so policies with ever new field paths cannot grow memory without bound.
const MOST_ENVIRONMENTS: usize = 64;

static ENVIRONMENTS: LazyLock<Mutex<BTreeMap<BTreeSet<String>, Arc<Env>>>> =
    LazyLock::new(Mutex::default);

/// A struct type whose literals make a struct value of its name with the fields given
/// (`fields`, when set, are the only ones allowed).
struct Literal {
    r#type: Type,
    fields: Option<&'static [&'static str]>,
}

impl StructType for Literal {
    fn get_type(&self) -> &Type {
        &self.r#type
    }

    fn new_value<'b, 'v>(
        &self,
        fields: BTreeMap<String, CowVal<'b, 'v>>,
    ) -> Result<Box<dyn Val + 'v>, ExecutionError> {
        let name = self.r#type.name();
        let mut value = CelStruct::new(name.to_owned());
        for (field, item) in fields {
            if self
                .fields
                .is_some_and(|allowed| !allowed.contains(&field.as_str()))
            {
                return Err(ExecutionError::NoSuchKey(Arc::new(format!(
                    "field `{field}` on struct `{name}`"
                ))));
            }
            value.add_field_value(field, item);
        }
        Ok(Box::new(value))
    }
}

/// `jsonpatch.escapeKey`: `~` as `~0` and `/` as `~1` (RFC 6901).
fn escape_key(args: &[Cel]) -> Result<Cel, ExecutionError> {
    let key = string_arg(ESCAPE_KEY, args, 0)?;
    Ok(Cel::String(Arc::new(
        key.replace('~', "~0").replace('/', "~1"),
    )))
}

/// The environment registering `types`, built once per set.
fn environment_with(types: &BTreeSet<String>) -> Arc<Env> {
    let mut cache = match ENVIRONMENTS.lock() {
        Ok(cache) => cache,
        // A panic while holding the lock left at worst a partly filled map of complete
        // environments, which is still right.
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(env) = cache.get(types) {
        return Arc::clone(env);
    }
    let mut env = super::build_environment();
    // Registration fails only on a name declared twice: the set holds each once.
    let _ = env.add_overload(
        ESCAPE_KEY,
        "jsonpatch_escape_key_string",
        vec![STRING_TYPE],
        value_overload!(escape_key),
    );
    for name in types {
        let fields = (name == JSON_PATCH).then_some(JSON_PATCH_FIELDS);
        let _ = env.add_type(Literal {
            r#type: Type::new_struct(name.clone()),
            fields,
        });
    }
    let env = Arc::new(env);
    if cache.len() >= MOST_ENVIRONMENTS {
        cache.clear();
    }
    cache.insert(types.clone(), Arc::clone(&env));
    env
}

/// Compiles a mutation's expression with `variables` declared: as [`super::compile`], with
/// `jsonpatch.escapeKey` declared and struct literals of `JSONPatch`, `Object` and `Object.…`
/// types allowed (any other type name is undeclared, as cel-go's checker reports it).
pub fn compile(source: &str, variables: &[&str]) -> Result<Program, CompileError> {
    let (expression, info) = kapi_cel_check::parse(source)?;
    let variables: Vec<Variable> = variables.iter().map(|v| Variable::dyn_named(v)).collect();
    let checked = super::checker::check(&expression, &variables, &[ESCAPE_KEY])
        .map_err(|problems| CompileError(kapi_cel_check::render(&problems, &info)))?;
    let mut types = BTreeSet::new();
    let mut problems = Vec::new();
    for (id, name) in check::struct_names(&expression) {
        if name == JSON_PATCH || name == OBJECT || name.starts_with("Object.") {
            types.insert(name);
        } else {
            problems.push((id, kapi_cel_check::names::undeclared(&name)));
        }
    }
    if !problems.is_empty() {
        return Err(CompileError(kapi_cel_check::render(&problems, &info)));
    }
    Ok(super::finish(
        source,
        expression,
        &checked,
        environment_with(&types),
    ))
}

/// The apply configuration an `ApplyConfiguration` expression gave: an `Object` literal as
/// JSON.
pub fn apply_configuration(value: &Cel) -> Result<Value, String> {
    match value {
        Cel::Struct(object) if object.name() == OBJECT => {
            struct_json(object, OBJECT).map_err(|e| format!("type mismatch: {e}"))
        }
        other => Err(format!(
            "unsupported return type from ApplyConfiguration expression: {}",
            type_name(other)
        )),
    }
}

/// The operations a `JSONPatch` expression gave, as JSON patch operation objects (`from`
/// only when set, `value` only when given).
pub fn json_patch(value: &Cel) -> Result<Vec<Value>, String> {
    let Cel::List(items) = value else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".to_owned());
    };
    let mut operations = Vec::with_capacity(items.len());
    for item in items.iter() {
        let Cel::Struct(patch) = item else {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of {}",
                type_name(item)
            ));
        };
        if patch.name() != JSON_PATCH {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of {}",
                patch.name()
            ));
        }
        let mut operation = Map::new();
        for field in ["op", "path", "from"] {
            let text = match patch.field_value(field).map(Cel::try_from) {
                None => String::new(),
                Some(Ok(Cel::String(text))) => text.to_string(),
                Some(_) => return Err(format!("JSONPatch.{field} must be a string")),
            };
            if field != "from" || !text.is_empty() {
                operation.insert(field.to_owned(), Value::String(text));
            }
        }
        if let Some(value) = patch.field_value("value") {
            let value = Cel::try_from(value).map_err(|e| e.to_string())?;
            let json = match &value {
                Cel::Struct(object) => {
                    struct_json(object, object.name()).map_err(|e| format!("type mismatch: {e}"))?
                }
                other => json(other, "").map_err(|e| {
                    format!(
                        "JSONPath valueExpression evaluated to a type that could not marshal to JSON: {e}"
                    )
                })?,
            };
            operation.insert("value".to_owned(), json);
        }
        operations.push(Value::Object(operation));
    }
    Ok(operations)
}

/// A struct literal named `path` as a JSON object.
fn struct_json(object: &CelStruct<'_>, path: &str) -> Result<Value, String> {
    let mut out = Map::new();
    for (field, value) in object.field_values() {
        let value = Cel::try_from(value.as_ref()).map_err(|e| e.to_string())?;
        out.insert(field.clone(), json(&value, &format!("{path}.{field}"))?);
    }
    Ok(Value::Object(out))
}

/// A value at the field path `path` as JSON: a struct must be named `path`; list items sit at
/// the list's path.
fn json(value: &Cel, path: &str) -> Result<Value, String> {
    Ok(match value {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("{f} is not a JSON number"))?,
        Cel::String(s) => Value::String(s.to_string()),
        Cel::Bytes(bytes) => {
            use base64::Engine as _;
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes.as_slice()))
        }
        Cel::Duration(d) => Value::String(go_duration(d)),
        Cel::Timestamp(t) => Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
        Cel::List(items) => Value::Array(
            items
                .iter()
                .map(|item| json(item, path))
                .collect::<Result<_, _>>()?,
        ),
        Cel::Map(map) => {
            let mut out = Map::new();
            for (key, item) in map.map.iter() {
                let cel::objects::Key::String(key) = key else {
                    return Err(format!("map key {key:?} is not a string"));
                };
                out.insert(key.to_string(), json(item, &format!("{path}.{key}"))?);
            }
            Value::Object(out)
        }
        Cel::Struct(object) => {
            if object.name() != path {
                return Err(format!(
                    "unexpected type name \"{}\", expected \"{path}\", which matches field name path from root Object type",
                    object.name()
                ));
            }
            struct_json(object, path)?
        }
        other => return Err(format!("{} has no JSON form", type_name(other))),
    })
}

/// A duration as protobuf's JSON writes one: seconds with a fraction, `s` after.
fn go_duration(d: &chrono::Duration) -> String {
    let nanos = d.num_nanoseconds().unwrap_or(i64::MAX);
    if nanos % 1_000_000_000 == 0 {
        format!("{}s", nanos / 1_000_000_000)
    } else {
        format!("{:.9}s", nanos as f64 / 1e9)
    }
}

/// cel-go's name of a value's type.
fn type_name(value: &Cel) -> String {
    match value {
        Cel::List(_) => "list".to_owned(),
        Cel::Map(_) => "map".to_owned(),
        Cel::Int(_) => "int".to_owned(),
        Cel::UInt(_) => "uint".to_owned(),
        Cel::Float(_) => "double".to_owned(),
        Cel::String(_) => "string".to_owned(),
        Cel::Bytes(_) => "bytes".to_owned(),
        Cel::Bool(_) => "bool".to_owned(),
        Cel::Null => "null_type".to_owned(),
        Cel::Struct(object) => object.name().to_owned(),
        _ => "object".to_owned(),
    }
}

#[cfg(test)]
mod tests;
