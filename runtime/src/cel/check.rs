//! What cel-go's checker refuses that a parse lets through and kapi can tell without types: a
//! name that is neither a declared variable, a comprehension's variable nor a type, and a
//! function the environment does not have (`undeclared reference to 'foo' (in container '')`),
//! and, given the schema a rule sits on, a field its objects cannot have (`undefined field
//! 'x'`): reads from `self` through declared properties, list items and map values are
//! followed; whatever is not known (a function's result, an int-or-string, an object that keeps
//! unknown fields) is let through, so no rule kube-apiserver accepts is refused.
//!
//! Upstream: cel-go `checker/checker.go` (`undeclared reference to '%s' (in container '%s')`,
//! `undefined field '%s'`).

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

use super::library;
use super::value::escape;
use crate::schema::JSONSchemaProps;

/// The functions of the crate's standard library and its strings and lists extensions, as
/// they are called in CEL.
const CRATE_FUNCTIONS: &[&str] = &[
    // Standard library.
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "hasValue",
    "value",
    "or",
    "orValue",
    // Strings extension.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "join",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "split",
    "substring",
    "format",
    "strings.quote",
    "reverse",
    // Lists extension.
    "slice",
    "flatten",
    "distinct",
    "lists.range",
    "sort",
    "sortBy",
    "first",
    "last",
];

/// Identifiers that name types, usable as values (`type(x) == string`).
const TYPE_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
];

fn is_function(name: &str) -> bool {
    name.starts_with('_')
        || name.starts_with('@')
        || name.starts_with('!')
        || CRATE_FUNCTIONS.contains(&name)
        || library::declares(name)
}

/// The problems of `expr`, each with the id of the node it is at, or none.
/// `functions` are those the expression's environment declares beyond the shared one's.
pub(super) fn references(
    expr: &IdedExpr,
    variables: &[&str],
    functions: &[&str],
) -> Result<(), Vec<(u64, String)>> {
    let mut scope: Vec<String> = variables.iter().map(|v| (*v).to_owned()).collect();
    let mut problems = Vec::new();
    let known = |name: &str| is_function(name) || functions.contains(&name);
    walk(expr, &mut scope, &mut problems, &known);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

pub(super) fn undeclared(name: &str) -> String {
    format!("undeclared reference to '{name}' (in container '')")
}

/// The qualified name a chain of selects spells (`a.b.c`), if it is one.
fn qualified(expr: &IdedExpr) -> Option<String> {
    match &expr.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(select) if !select.test => {
            qualified(&select.operand).map(|left| format!("{left}.{}", select.field))
        }
        _ => None,
    }
}

fn walk(
    expr: &IdedExpr,
    scope: &mut Vec<String>,
    problems: &mut Vec<(u64, String)>,
    is_function: &dyn Fn(&str) -> bool,
) {
    match &expr.expr {
        Expr::Ident(name) => {
            if !scope.iter().any(|v| v == name) && !TYPE_NAMES.contains(&name.as_str()) {
                problems.push((expr.id, undeclared(name)));
            }
        }
        Expr::Select(select) => {
            if let Some(name) = qualified(expr)
                && TYPE_NAMES.contains(&name.as_str())
            {
                return;
            }
            walk(&select.operand, scope, problems, is_function);
        }
        Expr::Call(call) => {
            let namespaced = call
                .target
                .as_deref()
                .and_then(qualified)
                .map(|target| format!("{target}.{}", call.func_name))
                .filter(|name| is_function(name));
            match (&call.target, namespaced) {
                (Some(_), Some(_)) => {}
                (Some(target), None) => {
                    walk(target, scope, problems, is_function);
                    if !is_function(&call.func_name) {
                        problems.push((expr.id, undeclared(&call.func_name)));
                    }
                }
                (None, _) => {
                    if !is_function(&call.func_name) {
                        problems.push((expr.id, undeclared(&call.func_name)));
                    }
                }
            }
            for arg in &call.args {
                walk(arg, scope, problems, is_function);
            }
        }
        Expr::Comprehension(comprehension) => {
            walk(&comprehension.iter_range, scope, problems, is_function);
            walk(&comprehension.accu_init, scope, problems, is_function);
            let depth = scope.len();
            scope.push(comprehension.accu_var.clone());
            scope.push(comprehension.iter_var.clone());
            if let Some(second) = &comprehension.iter_var2 {
                scope.push(second.clone());
            }
            walk(&comprehension.loop_cond, scope, problems, is_function);
            walk(&comprehension.loop_step, scope, problems, is_function);
            scope.truncate(depth + 1);
            walk(&comprehension.result, scope, problems, is_function);
            scope.truncate(depth);
        }
        Expr::List(list) => {
            for element in &list.elements {
                walk(element, scope, problems, is_function);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    walk(&entry.key, scope, problems, is_function);
                    walk(&entry.value, scope, problems, is_function);
                }
            }
        }
        Expr::Struct(object) => {
            for entry in &object.entries {
                if let EntryExpr::StructField(field) = &entry.expr {
                    walk(&field.value, scope, problems, is_function);
                }
            }
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The type names of the struct literals in `expr` (`Object.spec{...}`), each with the id of
/// its node, in the order they appear.
pub(super) fn struct_names(expr: &IdedExpr) -> Vec<(u64, String)> {
    let mut names = Vec::new();
    visit(expr, &mut |e| {
        if let Expr::Struct(object) = &e.expr {
            names.push((e.id, object.type_name.clone()));
        }
    });
    names
}

/// Whether `expr` mentions the variable `name` anywhere.
pub(super) fn mentions(expr: &IdedExpr, name: &str) -> bool {
    let mut found = false;
    visit(expr, &mut |e| {
        if let Expr::Ident(ident) = &e.expr
            && ident == name
        {
            found = true;
        }
    });
    found
}

/// Whether `expr` selects `field` of the variable `variable` anywhere (`claims.email`, also
/// under `has()`), as upstream's `hasSelectExp` looks for it.
pub(super) fn selects(expr: &IdedExpr, variable: &str, field: &str) -> bool {
    let mut found = false;
    visit(expr, &mut |e| {
        if let Expr::Select(select) = &e.expr
            && select.field == field
            && matches!(&select.operand.expr, Expr::Ident(name) if name == variable)
        {
            found = true;
        }
    });
    found
}

fn visit(expr: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
    f(expr);
    match &expr.expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                visit(target, f);
            }
            for arg in &call.args {
                visit(arg, f);
            }
        }
        Expr::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                visit(part, f);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(|e| visit(e, f)),
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    visit(&entry.key, f);
                    visit(&entry.value, f);
                }
            }
        }
        Expr::Struct(object) => {
            for entry in &object.entries {
                if let EntryExpr::StructField(field) = &entry.expr {
                    visit(&field.value, f);
                }
            }
        }
        Expr::Select(select) => visit(&select.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// A value's schema as the checker knows it: the schema, and whether the value is a resource
/// (the root or an embedded one: `apiVersion`, `kind` and `metadata` are there whatever the
/// schema lists).
#[derive(Clone, Copy)]
struct Known<'s> {
    schema: &'s JSONSchemaProps,
    resource: bool,
}

impl<'s> Known<'s> {
    fn of(schema: &'s JSONSchemaProps) -> Self {
        Known {
            schema,
            resource: schema.x_kubernetes_embedded_resource,
        }
    }

    /// What `.field` reads, `Err` when the object declares no such field. Only an object with
    /// `properties` and nothing that lets other fields in is closed.
    fn field(self, field: &str) -> Result<Option<Known<'s>>, ()> {
        let schema = self.schema;
        if let Some(property) = schema
            .properties
            .iter()
            .find(|(name, _)| escape(name).as_deref() == Some(field))
            .map(|(_, p)| p)
        {
            return Ok(Some(Known::of(property)));
        }
        if let Some(extra) = schema.additional_schema() {
            return Ok(Some(Known::of(extra)));
        }
        let open = schema.properties.is_empty()
            || schema.additional_properties.is_some()
            || schema.x_kubernetes_preserve_unknown_fields == Some(true)
            || schema.x_kubernetes_int_or_string
            || (self.resource && matches!(field, "apiVersion" | "kind" | "metadata"));
        if open { Ok(None) } else { Err(()) }
    }

    /// The schema of the items of a list, or the values of a map.
    fn element(self) -> Option<Known<'s>> {
        self.schema
            .items_schema()
            .or_else(|| self.schema.additional_schema())
            .map(Known::of)
    }
}

/// Fields a rule reads that its schema does not declare (cel-go's `undefined field 'x'`),
/// each with the id of the select that reads it. `self` (and `oldSelf`) have `schema`;
/// `resource` says it is the root of a resource.
pub(super) fn fields(
    expr: &IdedExpr,
    schema: &JSONSchemaProps,
    resource: bool,
) -> Vec<(u64, String)> {
    let root = Known { schema, resource };
    let mut scope = vec![
        (super::SELF.to_owned(), Some(root)),
        (super::OLD_SELF.to_owned(), Some(root)),
    ];
    let mut problems = Vec::new();
    typed(expr, &mut scope, &mut problems);
    problems
}

/// Checks `expr` and returns what it knows of its value's schema.
fn typed<'s>(
    expr: &IdedExpr,
    scope: &mut Vec<(String, Option<Known<'s>>)>,
    problems: &mut Vec<(u64, String)>,
) -> Option<Known<'s>> {
    match &expr.expr {
        Expr::Ident(name) => scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, k)| *k),
        Expr::Select(select) => {
            let operand = typed(&select.operand, scope, problems)?;
            match operand.field(&select.field) {
                Ok(known) => known.filter(|_| !select.test),
                Err(()) => {
                    problems.push((expr.id, format!("undefined field '{}'", select.field)));
                    None
                }
            }
        }
        Expr::Call(call) => {
            let target = call
                .target
                .as_deref()
                .and_then(|t| typed(t, scope, problems));
            let args: Vec<Option<Known<'s>>> = call
                .args
                .iter()
                .map(|a| typed(a, scope, problems))
                .collect();
            match (call.func_name.as_str(), args.first()) {
                ("_[_]", Some(Some(container))) => container.element(),
                _ => {
                    let _ = target;
                    None
                }
            }
        }
        Expr::Comprehension(c) => {
            let range = typed(&c.iter_range, scope, problems);
            typed(&c.accu_init, scope, problems);
            let depth = scope.len();
            let element = range
                .filter(|r| r.schema.items_schema().is_some())
                .and_then(Known::element);
            scope.push((c.accu_var.clone(), None));
            match &c.iter_var2 {
                // Two variables: the index (or key) and the element (or value).
                Some(second) => {
                    scope.push((c.iter_var.clone(), None));
                    scope.push((second.clone(), range.and_then(Known::element)));
                }
                None => scope.push((c.iter_var.clone(), element)),
            }
            typed(&c.loop_cond, scope, problems);
            typed(&c.loop_step, scope, problems);
            scope.truncate(depth + 1);
            typed(&c.result, scope, problems);
            scope.truncate(depth);
            None
        }
        Expr::List(list) => {
            for element in &list.elements {
                typed(element, scope, problems);
            }
            None
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(entry) = &entry.expr {
                    typed(&entry.key, scope, problems);
                    typed(&entry.value, scope, problems);
                }
            }
            None
        }
        Expr::Struct(object) => {
            for entry in &object.entries {
                if let EntryExpr::StructField(field) = &entry.expr {
                    typed(&field.value, scope, problems);
                }
            }
            None
        }
        Expr::Literal(_) | Expr::Unspecified => None,
    }
}
