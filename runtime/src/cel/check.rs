//! What the checker knows of names without types: the functions the environment has (the
//! crate's standard library and extensions, Kubernetes' libraries), the identifiers that name
//! types, cel-go's text for an undeclared name, and the syntax-tree queries the compiled
//! programs answer (whether a rule mentions `oldSelf`, which struct literals a mutation builds,
//! whether an expression selects a field of a variable).
//!
//! Upstream: cel-go `checker/checker.go` (`undeclared reference to '%s' (in container '%s')`).

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

use super::library;

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
pub(super) const TYPE_NAMES: &[&str] = &[
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

/// Whether the environment has the function `name` (as CEL calls it): an operator, one of the
/// crate's or a library's.
pub(super) fn is_function(name: &str) -> bool {
    name.starts_with('_')
        || name.starts_with('@')
        || name.starts_with('!')
        || CRATE_FUNCTIONS.contains(&name)
        || library::declares(name)
}

/// cel-go's error for a name nothing declares.
pub(super) fn undeclared(name: &str) -> String {
    format!("undeclared reference to '{name}' (in container '')")
}

/// The qualified name a chain of selects spells (`a.b.c`), if it is one.
pub(super) fn qualified(expr: &IdedExpr) -> Option<String> {
    match &expr.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(select) if !select.test => {
            qualified(&select.operand).map(|left| format!("{left}.{}", select.field))
        }
        _ => None,
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

/// Calls `f` on every node of `expr`, parents first.
pub(super) fn visit(expr: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
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
