//! Queries on a parsed expression that need no types: the qualified name a chain of selects
//! spells, whether a rule mentions a variable (`oldSelf`, which makes it a transition rule) or
//! selects a field of one, which struct literals a mutation builds, and a walk over every node.
//!
//! Upstream: cel-go `common/ast/navigable.go` (the walk), k8s
//! `apiserver/pkg/admission/plugin/webhook/matchconditions` (`hasSelectExp`).

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, operators};

/// The qualified name a chain of selects spells (`a.b.c`), if it is one.
pub fn qualified(expr: &IdedExpr) -> Option<String> {
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
pub fn struct_names(expr: &IdedExpr) -> Vec<(u64, String)> {
    let mut names = Vec::new();
    visit(expr, &mut |e| {
        if let Expr::Struct(object) = &e.expr {
            names.push((e.id, object.type_name.clone()));
        }
    });
    names
}

/// Whether `expr` mentions the variable `name` anywhere.
pub fn mentions(expr: &IdedExpr, name: &str) -> bool {
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
pub fn selects(expr: &IdedExpr, variable: &str, field: &str) -> bool {
    let mut found = false;
    let is_variable = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(name) if name == variable);
    visit(expr, &mut |e| match &e.expr {
        Expr::Select(select) if select.field == field && is_variable(&select.operand) => {
            found = true;
        }
        // `variable["field"]`, as written or as a compiled selection
        Expr::Call(call)
            if call.func_name == operators::INDEX
                && call.target.is_none()
                && matches!(call.args.as_slice(), [operand, key]
                    if is_variable(operand)
                        && matches!(&key.expr, Expr::Literal(LiteralValue::String(s)) if s.inner() == field)) =>
        {
            found = true;
        }
        _ => {}
    });
    found
}

/// Calls `f` on every node of `expr`, parents first.
pub fn visit(expr: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
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
