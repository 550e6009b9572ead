//! The static half of CEL as kube-apiserver runs it for the `x-kubernetes-validations` rules of
//! CRDs: an expression parsed as the runtime's environment parses it, then type-checked against
//! what a structural schema declares of `self` and `oldSelf`, with cel-go's error text, and
//! its cost bounded before it ever runs.
//!
//! - [`types`]: CEL's types and the declarations a schema gives the values it describes, read
//!   through [`schema::SchemaNode`] (the runtime's typed schema and a schema written as JSON
//!   both answer it);
//! - [`checker`]: the type of every node, on the signatures of `overloads`, refusing undefined
//!   fields, undeclared names and calls no overload fits;
//! - [`estimate`]: the least and most an expression can cost;
//! - [`names`]: the functions, type names and reserved words the environment knows;
//! - [`syntax`]: queries on the syntax tree that need no types.
//!
//! The crate has no evaluator: `kapi::cel` (which re-exports these modules under the same
//! paths) runs the programs, and `#[derive(Schema)]` runs the same checks at compile time, so a
//! rule a CRD would refuse at `kubectl apply` refuses the build.
//!
//! Upstream: cel-go `checker/` and `common/cost.go`, k8s `apiserver/pkg/cel/common/schemas.go`
//! and `apiextensions-apiserver/pkg/apiserver/schema/cel/compilation.go`.

pub mod checker;
pub mod estimate;
pub mod names;
mod overloads;
pub mod schema;
pub mod syntax;
pub mod types;

use std::sync::{Arc, LazyLock};

use cel::Env;
use cel::common::ast::SourceInfo;

/// A parsed expression: the `cel` crate's syntax tree, which the checker and estimator walk.
pub use cel::parser::Expression;
pub use checker::{Checked, Variable};
pub use estimate::Estimate;
pub use schema::SchemaNode;
pub use types::{Decl, Type};

/// The variable a rule's value is bound to.
pub const SELF: &str = "self";
/// The variable the old value of a transition rule is bound to.
pub const OLD_SELF: &str = "oldSelf";

/// Why an expression did not compile: cel-go's issue text (one `ERROR: ...` per problem).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError(pub String);

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The parser's configuration: what decides a parse is the macros and optional syntax, so the
/// environment is the `cel` crate's standard one plus the extensions that add macros, which
/// is how the runtime's environment parses too.
static PARSER_ENV: LazyLock<Env> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // Registration only fails on a name declared twice, which two fresh extensions never do.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    env
});

/// Parses `source`, with cel-go's error text.
pub fn parse(source: &str) -> Result<(Expression, SourceInfo), CompileError> {
    PARSER_ENV
        .parser()
        .parse_with_source_info(source)
        // The crate writes a snippet as `| line`; cel-go as ` | line`.
        .map_err(|errors| CompileError(errors.to_string().replace("\n| ", "\n | ")))
}

/// Parses and checks `source` with `variables` declared; `functions` are those its environment
/// declares beyond the shared one's.
pub fn check_source(
    source: &str,
    variables: &[Variable],
    functions: &[&str],
) -> Result<(Expression, Checked), CompileError> {
    let (expression, info) = parse(source)?;
    let checked = checker::check(&expression, variables, functions)
        .map_err(|problems| CompileError(render(&problems, &info)))?;
    Ok((expression, checked))
}

/// The variables of a rule on values `decl` declares: `self`, and `oldSelf` of the same type
/// (an optional of it with `optionalOldSelf`).
pub fn rule_variables(decl: &Arc<Decl>, optional_old_self: bool) -> [Variable; 2] {
    let mut old = Variable::declared(OLD_SELF, Arc::clone(decl));
    if optional_old_self {
        old.ty = Type::optional(old.ty);
        old.decl = None;
    }
    [Variable::declared(SELF, Arc::clone(decl)), old]
}

/// Whether `t` is certainly another type than `want` (dyn may be anything, so it never is):
/// a rule whose result is so is refused (`cel expression must evaluate to a bool`).
pub fn known_other_than(t: &Type, want: &Type) -> bool {
    t.is_concrete() && t != want
}

/// cel-go's display of problems found at nodes of a parsed expression.
pub fn render(problems: &[(u64, String)], info: &SourceInfo) -> String {
    let mut out = Vec::new();
    for (id, message) in problems {
        let (line, column) = info
            .offset_for(*id)
            .and_then(|(start, _)| position(info, start))
            .unwrap_or((1, 1));
        let mut text = format!("ERROR: <input>:{line}:{column}: {message}");
        if let Some(snippet) = info.snippet(line as isize - 1) {
            text.push_str(&format!("\n | {snippet}\n | {:.>column$}", "^"));
        }
        out.push(text);
    }
    out.join("\n")
}

/// The 1-based line and column of a character offset in the source.
fn position(info: &SourceInfo, offset: u32) -> Option<(usize, usize)> {
    let mut seen = 0usize;
    let mut line = 0usize;
    loop {
        let text = info.snippet(line as isize)?;
        let length = text.chars().count() + 1;
        if (offset as usize) < seen + length {
            return Some((line + 1, offset as usize - seen + 1));
        }
        seen += length;
        line += 1;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(rule: &str) -> Result<Type, String> {
        let schema = json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "names": {"type": "array", "items": {"type": "string"}}
        }});
        let decl = Decl::of_schema(&schema, false, "selfType");
        check_source(rule, &rule_variables(&decl, false), &[])
            .map(|(_, checked)| checked.result)
            .map_err(|e| e.0)
    }

    #[test]
    fn rules_are_typed_by_a_json_schema() {
        assert_eq!(check("self.replicas >= oldSelf.replicas"), Ok(Type::Bool));
        assert_eq!(
            check("self.names.map(n, n.size())"),
            Ok(Type::list(Type::Int))
        );
        assert_eq!(
            check("self.names[0] + 1 == 2"),
            Err(
                "ERROR: <input>:1:15: found no matching overload for '_+_' applied to \
                 '(string, int)'\n | self.names[0] + 1 == 2\n | ..............^"
                    .to_owned()
            )
        );
        let error = check("self.replicas >").err().unwrap_or_default();
        assert!(
            error.starts_with("ERROR: <input>:1:16: Syntax error:"),
            "{error}"
        );
    }

    #[test]
    fn a_result_of_another_known_type_is_told() {
        assert!(known_other_than(&Type::Int, &Type::Bool));
        assert!(!known_other_than(&Type::Dyn, &Type::Bool));
        // A type with dyn anywhere in it is not judged, as the runtime does not judge it.
        assert!(!known_other_than(&Type::list(Type::Dyn), &Type::Bool));
    }
}
