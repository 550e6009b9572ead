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
//! the field it sits in. The checker types a struct literal dyn, so [`validate`] works out
//! the type cel-go would give a mutation (the literal's name, a list of one name, agreeing
//! branches) to refuse, when a policy is written, one that is certainly not what its patch
//! type requires. A `JSONPatch` literal's fields are checked against the type's declaration
//! (`op`, `path`, `from` strings, `value` any), as cel-go's checker reads them.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/mutation/` (the `Object` and `JSONPatch` types, the
//! `jsonpatch` library), `admission/plugin/policy/mutating/patch/json_patch.go` and `smd.go`
//! (how the results are read).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock, Mutex};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::types::{CelStruct, STRING_TYPE, Type as CelType};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError, StructType, Value as Cel};
use serde_json::{Map, Value};

use super::checker::Checked;
use super::library::{string_arg, value_overload};
use super::{CompileError, Program, Type, Variable, check};

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
    r#type: CelType,
    fields: Option<&'static [&'static str]>,
}

impl StructType for Literal {
    fn get_type(&self) -> &CelType {
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
            r#type: CelType::new_struct(name.clone()),
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
    let variables: Vec<Variable> = variables.iter().map(|v| Variable::dyn_named(v)).collect();
    compile_with(source, &variables).map(|(program, ..)| program)
}

/// What a mutation's expression must give (upstream's `ReturnTypes` of
/// `ApplyConfigurationCondition` and `JSONPatchCondition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patch {
    /// An `Object`.
    ApplyConfiguration,
    /// A `list(JSONPatch)`.
    JsonPatch,
}

impl Patch {
    /// The type as cel-go names it.
    fn expected(self) -> &'static str {
        match self {
            Patch::ApplyConfiguration => OBJECT,
            Patch::JsonPatch => "list(JSONPatch)",
        }
    }

    /// Whether a result of type `found`, of which the checker may know only the outer part
    /// (`map(string, dyn)`), is certainly not this patch's type. What the checker cannot pin
    /// down could be anything: dyn, a struct literal (which it types dyn), and an object of a
    /// schema, which cel-go sees as dyn when a policy is written.
    fn rules_out(self, found: &Type) -> bool {
        let unknown = |t: &Type| {
            matches!(
                t,
                Type::Dyn | Type::Error | Type::Param(_) | Type::Object(_)
            )
        };
        match (self, found) {
            (_, t) if unknown(t) => false,
            (Patch::JsonPatch, Type::List(element)) => !unknown(element),
            _ => true,
        }
    }
}

/// Whether a mutation's expression compiles with `variables` (typed as declared) and gives
/// what `patch` requires, as upstream's `CompileCELExpression` decides it when a policy is
/// written: `Err` is the field error's detail, `compilation failed: <cel-go's text>` or
/// `must evaluate to Object but got string`. The result type is refused only when it is
/// certain: a struct literal's is its name (`Object.spec`), a list of literals of one name is
/// a list of it (`[]` a `list(dyn)`), a conditional's is its branches' when they agree, and
/// any other expression's is what the checker knows of it. A result whose type the checker
/// knows only in part is refused when the part it knows already rules the patch type out
/// (`{'a': object.x}` is a `map(string, dyn)`, never an `Object`); a dyn result is let through
/// (upstream refuses it, but where its checker knows a variable's type kapi's may not).
pub fn validate(source: &str, variables: &[Variable], patch: Patch) -> Result<(), String> {
    let (_, expression, checked) =
        compile_with(source, variables).map_err(|e| format!("compilation failed: {e}"))?;
    let found = certain_type(&expression, &checked).or_else(|| {
        let partly = checked.type_of(expression.id);
        patch.rules_out(&partly).then(|| partly.to_string())
    });
    match found {
        Some(found) if found != patch.expected() => Err(format!(
            "must evaluate to {} but got {found}",
            patch.expected()
        )),
        _ => Ok(()),
    }
}

/// Compiles a mutation's expression: the program, the expression as parsed and what the
/// checker found of it.
fn compile_with(
    source: &str,
    variables: &[Variable],
) -> Result<(Program, IdedExpr, Checked), CompileError> {
    let (expression, info) = kapi_cel_check::parse(source)?;
    let checked = super::checker::check(&expression, variables, &[ESCAPE_KEY])
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
    check_json_patch_fields(&expression, &checked, &mut problems);
    if !problems.is_empty() {
        return Err(CompileError(kapi_cel_check::render(&problems, &info)));
    }
    let program = super::finish(
        source,
        expression.clone(),
        &checked,
        environment_with(&types),
    );
    Ok((program, expression, checked))
}

/// The fields of `JSONPatch` literals as cel-go's checker sees them against the type's
/// declaration (`op`, `path` and `from` strings, `value` dyn): a field it lacks is `undefined
/// field`, a string field given a value certainly of another type is refused.
fn check_json_patch_fields(expr: &IdedExpr, checked: &Checked, problems: &mut Vec<(u64, String)>) {
    check::visit(expr, &mut |e| {
        let Expr::Struct(object) = &e.expr else {
            return;
        };
        if object.type_name != JSON_PATCH {
            return;
        }
        for entry in &object.entries {
            let EntryExpr::StructField(field) = &entry.expr else {
                continue;
            };
            let name = field.field.as_str();
            if !JSON_PATCH_FIELDS.contains(&name) {
                problems.push((entry.id, format!("undefined field '{name}'")));
                continue;
            }
            let given = checked.type_of(field.value.id);
            if name != "value" && given.is_concrete() && given != Type::String {
                problems.push((
                    entry.id,
                    format!(
                        "expected type of field '{name}' is 'string' but provided type is '{given}'"
                    ),
                ));
            }
        }
    });
}

/// The type cel-go's checker gives `expr` as it names it, when kapi's checker (which types a
/// struct literal dyn) can tell it for certain.
fn certain_type(expr: &IdedExpr, checked: &Checked) -> Option<String> {
    match &expr.expr {
        Expr::Struct(object) => Some(object.type_name.clone()),
        Expr::List(list) => {
            let mut items = list.elements.iter().map(|e| certain_type(e, checked));
            match items.next() {
                // cel-go gives an empty list a free element type, which ends dyn.
                None => Some("list(dyn)".to_owned()),
                Some(first) => {
                    let first = first?;
                    items
                        .all(|item| item.as_ref() == Some(&first))
                        .then(|| format!("list({first})"))
                }
            }
        }
        Expr::Call(call) if call.func_name == "_?_:_" && call.args.len() == 3 => {
            let yes = certain_type(&call.args[1], checked)?;
            let no = certain_type(&call.args[2], checked)?;
            (yes == no).then_some(yes)
        }
        _ => {
            let found = checked.type_of(expr.id);
            if !found.is_concrete() {
                return None;
            }
            Some(match found {
                Type::Null => "null_type".to_owned(),
                other => other.to_string(),
            })
        }
    }
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
