//! Queries on a parsed expression that need no types: the qualified name a chain of selects
//! spells, whether a rule mentions a variable (`oldSelf`, which makes it a transition rule) or
//! selects a field of one, which struct literals a mutation builds, and a walk over every node.
//!
//! Upstream: cel-go `common/ast/navigable.go` (the walk), k8s
//! `apiserver/pkg/admission/plugin/webhook/matchconditions` (`hasSelectExp`).

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

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

/// Every field `expr` selects directly on a variable anywhere (`claims.email`, also under
/// `has()`), as upstream's `hasSelectExp` looks for them: the variable and the field.
pub fn selections(expr: &IdedExpr) -> Vec<(String, String)> {
    let mut found = Vec::new();
    visit(expr, &mut |e| {
        if let Expr::Select(select) = &e.expr
            && let Expr::Ident(name) = &select.operand.expr
        {
            found.push((name.clone(), select.field.clone()));
        }
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

/// Calls `f` on every node of `expr`, children first, so `f` may replace a node whose
/// children it has already seen.
pub fn visit_mut(expr: &mut IdedExpr, f: &mut dyn FnMut(&mut IdedExpr)) {
    match &mut expr.expr {
        Expr::Call(call) => {
            if let Some(target) = call.target.as_deref_mut() {
                visit_mut(target, f);
            }
            for arg in &mut call.args {
                visit_mut(arg, f);
            }
        }
        Expr::Comprehension(c) => {
            for part in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                visit_mut(part, f);
            }
        }
        Expr::List(list) => list.elements.iter_mut().for_each(|e| visit_mut(e, f)),
        Expr::Map(map) => {
            for entry in &mut map.entries {
                if let EntryExpr::MapEntry(entry) = &mut entry.expr {
                    visit_mut(&mut entry.key, f);
                    visit_mut(&mut entry.value, f);
                }
            }
        }
        Expr::Struct(object) => {
            for entry in &mut object.entries {
                if let EntryExpr::StructField(field) = &mut entry.expr {
                    visit_mut(&mut field.value, f);
                }
            }
        }
        Expr::Select(select) => visit_mut(&mut select.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    f(expr);
}
