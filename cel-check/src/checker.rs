//! The type checker: the CEL type of every node of a parsed expression, from the declared
//! variables' types (a schema's declarations for `self`, `object`, ...; dyn for the others) and
//! the overloads of the environment's functions (`overloads`), with cel-go's errors:
//!
//! - `undeclared reference to 'x' (in container '')`: a name that is neither a variable in
//!   scope, a comprehension's variable, a type nor a function the environment has;
//! - `undefined field 'x'`: a field an object's schema does not declare;
//! - `found no matching overload for '_+_' applied to '(string, int)'` (`'string.(int)'` for a
//!   member call): a call whose argument types fit none of the function's overloads;
//! - `type 'int' does not support field selection`, and a comprehension over what is neither a
//!   list nor a map.
//!
//! Dyn (an int-or-string, a value keeping unknown fields, a function whose signatures the table
//! does not list) fits every parameter, so an expression is refused only for types that are
//! certain. Alongside the types, the checker records which nodes read a declared value (a
//! field of `self`, an item of one of its lists), whose size bounds cost estimation reads.
//!
//! Upstream: cel-go `checker/checker.go` and `checker/errors.go`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::names::{TYPE_NAMES, is_function, undeclared};
use crate::overloads::{self, Overload};
use crate::syntax::qualified;
use crate::types::{Bindings, Decl, Field, OPTIONAL, Type};

/// A variable an expression may read.
#[derive(Clone, Debug)]
pub struct Variable {
    /// The name expressions read it by.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// What a schema declares of the variable's values, when one does.
    pub decl: Option<Arc<Decl>>,
}

impl Variable {
    /// A variable nothing is known of.
    pub fn dyn_named(name: &str) -> Variable {
        Variable {
            name: name.to_owned(),
            ty: Type::Dyn,
            decl: None,
        }
    }

    /// A variable holding values `decl` declares.
    pub fn declared(name: &str, decl: Arc<Decl>) -> Variable {
        Variable {
            name: name.to_owned(),
            ty: decl.cel_type(),
            decl: Some(decl),
        }
    }
}

/// A checked expression: the type of each node and the declarations read.
#[derive(Debug, Default)]
pub struct Checked {
    /// The type of each node, by id.
    pub types: HashMap<u64, Type>,
    /// The declaration of each node that reads a declared value, by id.
    pub decls: HashMap<u64, Arc<Decl>>,
    /// The type of the whole expression.
    pub result: Type,
}

impl Checked {
    /// The type of node `id`, dyn when unknown.
    pub fn type_of(&self, id: u64) -> Type {
        self.types.get(&id).cloned().unwrap_or(Type::Dyn)
    }
}

/// Checks `expr` with `variables` declared; `functions` are those its environment declares
/// beyond the shared one's. The problems, each at the id of its node, when there are any.
pub fn check(
    expr: &IdedExpr,
    variables: &[Variable],
    functions: &[&str],
) -> Result<Checked, Vec<(u64, String)>> {
    let mut checker = Checker {
        scope: variables
            .iter()
            .map(|v| (v.name.clone(), v.ty.clone(), v.decl.clone()))
            .collect(),
        functions,
        problems: Vec::new(),
        checked: Checked::default(),
    };
    let result = checker.walk(expr);
    checker.checked.result = result;
    if checker.problems.is_empty() {
        Ok(checker.checked)
    } else {
        Err(checker.problems)
    }
}

struct Checker<'f> {
    /// Variables in scope, innermost last.
    scope: Vec<(String, Type, Option<Arc<Decl>>)>,
    functions: &'f [&'f str],
    problems: Vec<(u64, String)>,
    checked: Checked,
}

/// The type a type name denotes (`int` is `type(int)`'s value).
fn type_value(name: &str) -> Option<Type> {
    if !TYPE_NAMES.contains(&name) {
        return None;
    }
    let of = match name {
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "bool" => Type::Bool,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null_type" => Type::Null,
        "google.protobuf.Timestamp" => Type::Timestamp,
        "google.protobuf.Duration" => Type::Duration,
        _ => Type::Dyn,
    };
    Some(Type::Type(Box::new(of)))
}

impl Checker<'_> {
    fn known_function(&self, name: &str) -> bool {
        is_function(name) || self.functions.contains(&name)
    }

    fn lookup(&self, name: &str) -> Option<(Type, Option<Arc<Decl>>)> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _, _)| n == name)
            .map(|(_, t, d)| (t.clone(), d.clone()))
    }

    fn record(&mut self, id: u64, t: Type, decl: Option<Arc<Decl>>) -> Type {
        if let Some(decl) = decl {
            self.checked.decls.insert(id, decl);
        }
        self.checked.types.insert(id, t.clone());
        t
    }

    fn problem(&mut self, id: u64, message: String) -> Type {
        self.problems.push((id, message));
        self.record(id, Type::Error, None)
    }

    fn walk(&mut self, expr: &IdedExpr) -> Type {
        match &expr.expr {
            Expr::Literal(literal) => {
                let t = match literal {
                    LiteralValue::Boolean(_) => Type::Bool,
                    LiteralValue::Bytes(_) => Type::Bytes,
                    LiteralValue::Double(_) => Type::Double,
                    LiteralValue::Int(_) => Type::Int,
                    LiteralValue::Null => Type::Null,
                    LiteralValue::String(_) => Type::String,
                    LiteralValue::UInt(_) => Type::Uint,
                };
                self.record(expr.id, t, None)
            }
            Expr::Ident(name) => match self.lookup(name) {
                Some((t, decl)) => self.record(expr.id, t, decl),
                None => match type_value(name) {
                    Some(t) => self.record(expr.id, t, None),
                    None => self.problem(expr.id, undeclared(name)),
                },
            },
            Expr::Select(select) => {
                if let Some(name) = qualified(expr) {
                    // cel-go resolves a qualified name first: a variable may be declared with
                    // a dotted name (`authorizer.requestResource`).
                    if !select.test
                        && let Some((t, decl)) = self.lookup(&name)
                    {
                        return self.record(expr.id, t, decl);
                    }
                    let head = name.split('.').next().unwrap_or_default();
                    if self.lookup(head).is_none()
                        && let Some(t) = type_value(&name)
                    {
                        return self.record(expr.id, t, None);
                    }
                }
                let operand = self.walk(&select.operand);
                let operand_decl = self.checked.decls.get(&select.operand.id).cloned();
                let (t, decl) = self.select(expr.id, &operand, operand_decl, &select.field);
                if select.test {
                    return self.record(expr.id, Type::Bool, None);
                }
                self.record(expr.id, t, decl)
            }
            Expr::Call(call) => self.call(expr, call),
            Expr::Comprehension(c) => {
                let range = self.walk(&c.iter_range);
                let range_decl = self.checked.decls.get(&c.iter_range.id).cloned();
                let element_decl = range_decl.as_ref().and_then(|d| d.element().cloned());
                let (first, second) = match &range {
                    Type::List(e) => ((Type::Int, None), ((**e).clone(), element_decl.clone())),
                    // A declared map's keys are strings of no declared size (upstream's
                    // shared `StringType` declaration).
                    Type::Map(k, v) => (
                        ((**k).clone(), range_decl.as_ref().map(|_| Decl::map_key())),
                        ((**v).clone(), element_decl),
                    ),
                    t if t.is_dyn() => ((Type::Dyn, None), (Type::Dyn, None)),
                    other => {
                        let message = format!(
                            "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                        );
                        self.problems.push((c.iter_range.id, message));
                        ((Type::Dyn, None), (Type::Dyn, None))
                    }
                };
                let accu = self.walk(&c.accu_init);
                let depth = self.scope.len();
                self.scope.push((c.accu_var.clone(), accu.clone(), None));
                match &c.iter_var2 {
                    Some(second_var) => {
                        self.scope.push((c.iter_var.clone(), first.0, first.1));
                        self.scope.push((second_var.clone(), second.0, second.1));
                    }
                    None => {
                        // One variable ranges over a list's items or a map's keys.
                        let only = if matches!(range, Type::List(_)) {
                            second
                        } else {
                            first
                        };
                        self.scope.push((c.iter_var.clone(), only.0, only.1));
                    }
                }
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.scope.truncate(depth);
                let accu = self.refine_accumulator(accu, &c.accu_var, &c.loop_step);
                self.scope.push((c.accu_var.clone(), accu, None));
                let result = self.walk(&c.result);
                self.scope.truncate(depth);
                self.record(expr.id, result, None)
            }
            Expr::List(list) => {
                let mut elem: Option<Type> = None;
                for (i, element) in list.elements.iter().enumerate() {
                    let mut t = self.walk(element);
                    if list.optional_indices.contains(&i) {
                        t = match t {
                            Type::Opaque(OPTIONAL, mut params) if params.len() == 1 => {
                                params.remove(0)
                            }
                            _ => Type::Dyn,
                        };
                    }
                    elem = Some(join(elem, t));
                }
                self.record(expr.id, Type::list(elem.unwrap_or(Type::Dyn)), None)
            }
            Expr::Map(map) => {
                let (mut key, mut value): (Option<Type>, Option<Type>) = (None, None);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        let k = self.walk(&entry.key);
                        let mut v = self.walk(&entry.value);
                        if entry.optional {
                            v = match v {
                                Type::Opaque(OPTIONAL, mut params) if params.len() == 1 => {
                                    params.remove(0)
                                }
                                _ => Type::Dyn,
                            };
                        }
                        key = Some(join(key, k));
                        value = Some(join(value, v));
                    }
                }
                let t = Type::map(key.unwrap_or(Type::Dyn), value.unwrap_or(Type::Dyn));
                self.record(expr.id, t, None)
            }
            Expr::Struct(object) => {
                for entry in &object.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        self.walk(&field.value);
                    }
                }
                self.record(expr.id, Type::Dyn, None)
            }
            Expr::Unspecified => self.record(expr.id, Type::Dyn, None),
        }
    }

    /// What `.field` of a value of type `operand` reads.
    fn select(
        &mut self,
        id: u64,
        operand: &Type,
        decl: Option<Arc<Decl>>,
        field: &str,
    ) -> (Type, Option<Arc<Decl>>) {
        match operand {
            Type::Object(object) => match object.field(field) {
                Field::Declared(found) => (found.cel_type(), Some(Arc::clone(found))),
                Field::Open => (Type::Dyn, None),
                Field::Undefined => {
                    self.problems
                        .push((id, format!("undefined field '{field}'")));
                    (Type::Error, None)
                }
            },
            Type::Map(_, value) => ((**value).clone(), decl.and_then(|d| d.element().cloned())),
            Type::Bool
            | Type::Int
            | Type::Uint
            | Type::Double
            | Type::String
            | Type::Bytes
            | Type::List(_)
            | Type::Timestamp
            | Type::Duration
            | Type::Null => {
                self.problems.push((
                    id,
                    format!("type '{operand}' does not support field selection"),
                ));
                (Type::Error, None)
            }
            _ => (Type::Dyn, None),
        }
    }

    /// The accumulator of a `map` or `filter` starts as an empty list; its items are those the
    /// loop step appends (`@result + [x]`), as cel-go's type parameter of `[]` resolves.
    fn refine_accumulator(&self, accu: Type, var: &str, step: &IdedExpr) -> Type {
        if accu != Type::list(Type::Dyn) {
            return accu;
        }
        let mut found = None;
        crate::syntax::visit(step, &mut |e| {
            if let Expr::Call(call) = &e.expr
                && call.func_name == "_+_"
                && call.args.len() == 2
                && matches!(&call.args[0].expr, Expr::Ident(n) if n == var)
                && let Some(Type::List(elem)) = self.checked.types.get(&call.args[1].id)
                && found.is_none()
            {
                found = Some(Type::List(elem.clone()));
            }
        });
        found.unwrap_or(accu)
    }

    fn call(&mut self, expr: &IdedExpr, call: &cel::common::ast::CallExpr) -> Type {
        // `a.b.f(x)` may name the function `a.b.f` (`sets.contains`, `optional.of`) when
        // `a` is no variable.
        if let Some(target) = call.target.as_deref()
            && let Some(prefix) = qualified(target)
        {
            let name = format!("{prefix}.{}", call.func_name);
            let head = prefix.split('.').next().unwrap_or_default();
            if self.lookup(head).is_none() && self.known_function(&name) {
                let args: Vec<Type> = call.args.iter().map(|a| self.walk(a)).collect();
                return self.resolve(expr.id, &name, false, args);
            }
        }
        if call.func_name == "_?._" && call.args.len() == 2 && call.target.is_none() {
            let operand = self.walk(&call.args[0]);
            let operand_decl = self.checked.decls.get(&call.args[0].id).cloned();
            self.walk(&call.args[1]);
            let field = match &call.args[1].expr {
                Expr::Literal(LiteralValue::String(s)) => s.to_string(),
                _ => return self.record(expr.id, Type::optional(Type::Dyn), None),
            };
            let inner = match &operand {
                Type::Opaque(OPTIONAL, params) if params.len() == 1 => params[0].clone(),
                other => other.clone(),
            };
            let (t, decl) = self.select(expr.id, &inner, operand_decl, &field);
            return self.record(expr.id, Type::optional(t), decl);
        }
        let target = call.target.as_deref().map(|t| self.walk(t));
        let mut args: Vec<Type> = Vec::with_capacity(call.args.len() + 1);
        let member = target.is_some();
        if let Some(t) = target {
            args.push(t);
        }
        for arg in &call.args {
            args.push(self.walk(arg));
        }
        if !self.known_function(&call.func_name) {
            return self.problem(expr.id, undeclared(&call.func_name));
        }
        let t = self.resolve(expr.id, &call.func_name, member, args);
        // An index reads an item of a declared list or a value of a declared map.
        if matches!(call.func_name.as_str(), "_[_]" | "_[?_]")
            && let Some(container) = call.args.first()
            && let Some(decl) = self.checked.decls.get(&container.id).cloned()
            && let Some(element) = decl.element()
        {
            self.checked.decls.insert(expr.id, Arc::clone(element));
        }
        t
    }

    /// The result of calling `name` with `args` (the target's type first for a member call).
    fn resolve(&mut self, id: u64, name: &str, member: bool, args: Vec<Type>) -> Type {
        let Some(candidates) = overloads::of(name) else {
            return self.record(id, Type::Dyn, None);
        };
        let mut result: Option<Type> = None;
        for overload in candidates {
            if let Some(t) = matches(overload, member, &args) {
                result = Some(match result {
                    None => t,
                    Some(previous) if previous.is_dyn() || previous == t => previous,
                    Some(_) => Type::Dyn,
                });
            }
        }
        match result {
            Some(t) => self.record(id, t, None),
            None => {
                let mut signature = String::new();
                let mut rest = &args[..];
                if member && let Some((target, tail)) = args.split_first() {
                    signature.push_str(&format!("{target}."));
                    rest = tail;
                }
                let list: Vec<String> = rest.iter().map(ToString::to_string).collect();
                signature.push_str(&format!("({})", list.join(", ")));
                self.problem(
                    id,
                    format!("found no matching overload for '{name}' applied to '{signature}'"),
                )
            }
        }
    }
}

/// The result type of `overload` for `args`, when they fit it.
fn matches(overload: &Overload, member: bool, args: &[Type]) -> Option<Type> {
    if overload.member != member || overload.params.len() != args.len() {
        return None;
    }
    let mut bindings = Bindings::default();
    for (param, arg) in overload.params.iter().zip(args) {
        if !bindings.assignable(param, arg) {
            return None;
        }
    }
    Some(bindings.substitute(&overload.result))
}

/// The type of a literal's elements so far joined with one more: the same, or dyn.
fn join(so_far: Option<Type>, next: Type) -> Type {
    match so_far {
        None => next,
        Some(t) if t == next && !matches!(t, Type::Null) => t,
        Some(_) => Type::Dyn,
    }
}
