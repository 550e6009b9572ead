//! Field selections on values the checker typed as objects or maps, rewritten as index
//! operations once, when a rule is compiled, so evaluating them costs one lookup per field.
//!
//! The crate evaluates `a.b.c` as a name first: in every scope it tries the qualified names
//! the selection may spell (`a.b.c`, `a.b`, then `a`), joining the segments into a new string
//! each time, and a method call on it (`a.b.size()`) first asks whether `a.b` names a function
//! namespace. cel-go decides this when it plans the program, from the checker's references; a
//! selection the checker resolved to a field of a declared value cannot name anything else, so
//! here it becomes `a["b"]["c"]`. On a map the two are one operation in CEL, with the same
//! results: the value, `no such key` for a missing key, `no such overload` on a null or any
//! value that is not a map (`cel_go_error` words both alike).
//!
//! Presence tests (`has(a.b)`) keep their last selection; operands the checker could not type
//! (dyn, optionals) are left as written.

use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue, operators};
use cel::common::types::CelString;

use super::check;
use super::checker::Checked;
use super::types::Type;

/// Rewrites every selection of a field on a value `checked` typed as an object or a map with
/// string keys into an index with the field's name.
pub(super) fn index_selections(expr: &mut IdedExpr, checked: &Checked) {
    check::visit_mut(expr, &mut |node| {
        let Expr::Select(select) = &mut node.expr else {
            return;
        };
        if select.test || !is_map(&checked.type_of(select.operand.id)) {
            return;
        }
        let operand = std::mem::take(select.operand.as_mut());
        let field = IdedExpr {
            id: node.id,
            expr: Expr::Literal(LiteralValue::String(CelString::from(std::mem::take(
                &mut select.field,
            )))),
        };
        node.expr = Expr::Call(CallExpr {
            func_name: operators::INDEX.to_owned(),
            target: None,
            args: vec![operand, field],
        });
    });
}

/// Whether values of `type_` are maps keyed by strings at run time.
fn is_map(type_: &Type) -> bool {
    match type_ {
        Type::Object(_) => true,
        Type::Map(key, _) => **key == Type::String,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{
        EvalError, PER_CALL_LIMIT, SELF, Type, Variable, compile, compile_on, compile_typed, value,
    };
    use crate::schema::JSONSchemaProps;

    fn schema() -> JSONSchemaProps {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "nullable": true, "properties": {
                    "b": {"type": "integer"},
                    "c": {"type": "object", "properties": {"d": {"type": "string"}}}
                }},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}
                }}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }
        }))
        .unwrap()
    }

    /// Whether the expression still holds a selection that is not a presence test.
    fn selects(expr: &cel::common::ast::IdedExpr) -> bool {
        let mut found = false;
        kapi_cel_check::syntax::visit(expr, &mut |e| {
            if let cel::common::ast::Expr::Select(select) = &e.expr {
                found |= !select.test;
            }
        });
        found
    }

    // A typed selection runs as an index, and gives what the selection gives: the same
    // values, the same errors (missing keys, nulls, values that are not maps).
    #[test]
    fn indexed_selections_answer_as_the_selections_did() {
        let schema = schema();
        let rules = [
            "self.a.b == 1",
            "self.a.c.d.size() > 1",
            "has(self.a.c) && has(self.a.c.d)",
            "self.items.all(i, i.name != 'x')",
            "self.items.exists_one(i, i.name == self.items[0].name)",
            "self.labels.app == 'web'",
            "self.free.x.y == 2",
        ];
        let objects = [
            json!({"a": {"b": 1, "c": {"d": "ok"}}, "items": [{"name": "p"}, {"name": "q"}],
                   "labels": {"app": "web"}, "free": {"x": {"y": 2}}}),
            json!({"a": {}, "items": [{}], "labels": {}, "free": {"x": 3}}),
            json!({"a": null, "items": [], "labels": {"app": "db"}, "free": {}}),
        ];
        for rule in rules {
            let typed = compile_on(rule, &schema, false).unwrap();
            let untyped = compile(rule, &[SELF]).unwrap();
            assert!(selects(&untyped.expression), "{rule}");
            for object in &objects {
                let bound = value::to_cel(Some(&schema), object, false);
                let run = |p: &super::super::Program| {
                    p.evaluate(&[(SELF, bound.clone())], PER_CALL_LIMIT)
                };
                let (indexed, selected) = (run(&typed), run(&untyped));
                assert_eq!(indexed.result, selected.result, "{rule} on {object}");
                assert_eq!(indexed.cost, selected.cost, "{rule} on {object}");
            }
        }
        // The rewrite happened where the checker knew the types, and only there.
        assert!(!selects(
            &compile_on("self.a.c.d == ''", &schema, false)
                .unwrap()
                .expression
        ));
        assert!(selects(
            &compile_on("self.free.x.y == 2", &schema, false)
                .unwrap()
                .expression
        ));
        let missing = compile_on("self.a.b == 1", &schema, false)
            .unwrap()
            .evaluate(
                &[(SELF, value::to_cel(Some(&schema), &json!({"a": {}}), false))],
                PER_CALL_LIMIT,
            );
        assert_eq!(
            missing.result,
            Err(EvalError::Failed("no such key: b".into()))
        );
    }

    // What a program selects (`claims.email`, upstream's `hasSelectExp`) is read from the
    // source, not from the indexes its selections became: a written `claims["email"]` is no
    // selection.
    #[test]
    fn a_program_selects_what_its_source_selects() {
        let claims = Variable {
            name: "claims".into(),
            ty: Type::Map(Box::new(Type::String), Box::new(Type::Dyn)),
            decl: None,
        };
        let selected = compile_typed("claims.email", std::slice::from_ref(&claims)).unwrap();
        assert!(!selects(&selected.expression));
        assert!(selected.selects("claims", "email"));
        let indexed = compile_typed("claims['email']", &[claims]).unwrap();
        assert!(!indexed.selects("claims", "email"));
    }
}
