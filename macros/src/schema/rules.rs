//! The compile-time check of `#[schema(validation(...))]`: every `rule` and
//! `message_expression` is parsed by the `cel` crate's parser, configured as the runtime's
//! environment configures it (the standard macros and the lists extension's `sortBy`, optional
//! syntax on), so a rule that would refuse its CRD at `kubectl apply` refuses the build instead,
//! at the string literal, with kube-apiserver's text (`compilation failed: ERROR: <input>:1:N:
//! ...`).
//!
//! Beyond the parse, it refuses what cel-go's checker refuses and a derive can tell without
//! types:
//! - a name that is not a declared variable (`self`, `oldSelf`, a comprehension's variables),
//!   a type name or the namespace of a library function (`undeclared reference to 'x' (in
//!   container '')`);
//! - on a struct, `self.x` (and `oldSelf.x`) where `x` is none of its serialized field names
//!   (`undefined field 'x'`), as property names are spelled in CEL (`__dash__` and the rest);
//! - `optional_old_self` (`true` or `false`) on a rule that does not use `oldSelf`.
//!
//! Functions are not checked (their list is the runtime's, in `kapi::cel::library`, which a
//! proc macro cannot depend on), nor are fields deeper than `self`'s own, nor types: all of
//! these are checked again when the CRD is applied. Whatever is not known is let through, so no
//! rule kube-apiserver accepts is refused here. The runtime's fuller checker is
//! `runtime/src/cel/check.rs`; this one stays small rather than share code through a new crate.

use std::sync::LazyLock;

use cel::Env;
use cel::common::ast::{EntryExpr, Expr, IdedExpr, SourceInfo};

use super::attr::Validation;
use crate::errors::Errors;

const SELF: &str = "self";
const OLD_SELF: &str = "oldSelf";

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
];

/// The first names of qualified functions and types (`optional.none()`, `sets.contains(..)`,
/// `format.dns1123Label()`, `google.protobuf.Duration`): an identifier these start is no
/// variable.
const NAMESPACES: &[&str] = &[
    "optional", "strings", "lists", "sets", "math", "ip", "format", "google",
];

/// CEL's reserved words: a property of that name is `__<name>__` in CEL.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The parser's configuration: only its macros matter here, so the environment is the cel
/// crate's standard one plus the extensions that add macros.
static ENVIRONMENT: LazyLock<Env> = LazyLock::new(|| {
    let mut env = Env::stdlib();
    // Registration only fails on a name declared twice, which two fresh extensions never do.
    let _ = env.add_extension(cel::extensions::strings);
    let _ = env.add_extension(cel::extensions::lists);
    env
});

/// What `self` is known to be: the field names (as spelled in CEL) of a struct that admits no
/// others.
pub(crate) struct Object {
    fields: Vec<String>,
}

impl Object {
    /// An object with these serialized field names; `resource` adds `apiVersion`, `kind` and
    /// `metadata`, which an embedded resource has whatever its fields.
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a str>, resource: bool) -> Self {
        let mut fields: Vec<String> = names.into_iter().filter_map(escape).collect();
        if resource {
            fields.extend(["apiVersion", "kind", "metadata"].map(str::to_owned));
        }
        Object { fields }
    }
}

/// Checks the rules of one field or container, reporting at their literals.
pub(crate) fn check_all(validations: &[Validation], object: Option<&Object>, errors: &mut Errors) {
    for v in validations {
        match compile(&v.rule, object) {
            Err(text) => errors.at(v.rule_span, format_args!("compilation failed: {text}")),
            Ok(uses_old_self) => {
                // Upstream refuses the key set either way (`true` or `false`).
                if v.optional_old_self.is_some() && !uses_old_self {
                    errors.at(
                        v.rule_span,
                        "optionalOldSelf: may not be set if oldSelf is not used in rule",
                    );
                }
            }
        }
        if let Some((expression, span)) = &v.message_expression
            && !expression.trim().is_empty()
            && let Err(text) = compile(expression, object)
        {
            errors.at(
                *span,
                format_args!("messageExpression compilation failed: {text}"),
            );
        }
    }
}

/// Parses and checks `source`; whether it uses `oldSelf`, or cel-go's text of its problems.
pub(crate) fn compile(source: &str, object: Option<&Object>) -> Result<bool, String> {
    let (expr, info) = ENVIRONMENT
        .parser()
        .parse_with_source_info(source)
        // The crate writes a snippet as `| line`; cel-go as ` | line`.
        .map_err(|errors| errors.to_string().replace("\n| ", "\n | "))?;
    let mut checker = Checker {
        scope: vec![SELF.to_owned(), OLD_SELF.to_owned()],
        object,
        problems: Vec::new(),
        uses_old_self: false,
    };
    checker.walk(&expr);
    if checker.problems.is_empty() {
        Ok(checker.uses_old_self)
    } else {
        Err(render(&checker.problems, &info))
    }
}

struct Checker<'o> {
    /// The variables in scope, innermost last.
    scope: Vec<String>,
    object: Option<&'o Object>,
    problems: Vec<(u64, String)>,
    uses_old_self: bool,
}

impl Checker<'_> {
    /// Whether `name` is `self` or `oldSelf` as declared, not a comprehension's variable.
    fn is_root(&self, name: &str) -> bool {
        (name == SELF || name == OLD_SELF) && self.scope.iter().filter(|v| *v == name).count() == 1
    }

    fn walk(&mut self, expr: &IdedExpr) {
        match &expr.expr {
            Expr::Ident(name) => {
                if name == OLD_SELF && self.is_root(name) {
                    self.uses_old_self = true;
                }
                if !self.scope.iter().any(|v| v == name)
                    && !TYPE_NAMES.contains(&name.as_str())
                    && !NAMESPACES.contains(&name.as_str())
                {
                    self.problems.push((
                        expr.id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    ));
                }
            }
            Expr::Select(select) => {
                if let Expr::Ident(root) = &select.operand.expr
                    && self.is_root(root)
                    && let Some(object) = self.object
                    && !object.fields.contains(&select.field)
                {
                    self.problems
                        .push((expr.id, format!("undefined field '{}'", select.field)));
                }
                self.walk(&select.operand);
            }
            Expr::Call(call) => {
                if let Some(target) = &call.target {
                    self.walk(target);
                }
                for arg in &call.args {
                    self.walk(arg);
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range);
                self.walk(&c.accu_init);
                let depth = self.scope.len();
                self.scope.push(c.accu_var.clone());
                self.scope.push(c.iter_var.clone());
                if let Some(second) = &c.iter_var2 {
                    self.scope.push(second.clone());
                }
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.scope.truncate(depth + 1);
                self.walk(&c.result);
                self.scope.truncate(depth);
            }
            Expr::List(list) => list.elements.iter().for_each(|e| self.walk(e)),
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        self.walk(&entry.key);
                        self.walk(&entry.value);
                    }
                }
            }
            Expr::Struct(object) => {
                for entry in &object.entries {
                    if let EntryExpr::StructField(field) = &entry.expr {
                        self.walk(&field.value);
                    }
                }
            }
            Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}

/// A property name as CEL spells it, or `None` when it has none (upstream's `cel.Escape`, as
/// the runtime's `kapi::cel::value::escape`).
fn escape(name: &str) -> Option<String> {
    let first = name.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
    {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(tail) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = tail;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            other => out.push(other),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// cel-go's display of problems at nodes of a parsed expression: position and snippet.
fn render(problems: &[(u64, String)], info: &SourceInfo) -> String {
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
    use super::{Object, compile, escape};

    fn widget() -> Object {
        Object::new(["replicas", "x-mode", "for"], false)
    }

    #[test]
    fn passing_rules_compile() {
        let object = widget();
        for rule in [
            "self.replicas >= 0",
            "has(self.x__dash__mode) || self.__for__ == 'a'",
            "self.replicas.all(r, r > 0) && [1, 2].exists(x, x == 1)",
            "self.map(k, k).filter(k, k != '').size() > 0",
            "type(self) == map && optional.none().hasValue() == false",
            "sets.contains([1], [1]) && format.dns1123Label().validate('a').hasValue()",
            "self.replicas.sortBy(e, e).size() >= 0",
        ] {
            assert_eq!(compile(rule, Some(&object)), Ok(false), "{rule}");
        }
        assert_eq!(
            compile("self.replicas >= oldSelf.replicas", Some(&object)),
            Ok(true)
        );
    }

    #[test]
    fn a_parse_error_keeps_the_parsers_position() {
        let error = compile("self.replicas >", None).err().unwrap_or_default();
        assert!(
            error.starts_with("ERROR: <input>:1:16: Syntax error:"),
            "{error}"
        );
    }

    #[test]
    fn undeclared_references_are_refused() {
        assert_eq!(
            compile("self > 0 && other < 1", None),
            Err(
                "ERROR: <input>:1:13: undeclared reference to 'other' (in container '')\n \
                 | self > 0 && other < 1\n | ............^"
                    .to_owned()
            )
        );
        // A comprehension's variable is only in scope within it.
        let error = compile("self.all(x, x > 0) && x > 0", None)
            .err()
            .unwrap_or_default();
        assert!(error.contains("undeclared reference to 'x'"), "{error}");
    }

    #[test]
    fn undefined_fields_of_self_are_refused() {
        let object = widget();
        let error = compile("has(self.replica) || oldSelf.mode == 1", Some(&object))
            .err()
            .unwrap_or_default();
        assert!(error.contains("1:4: undefined field 'replica'"), "{error}");
        assert!(error.contains("undefined field 'mode'"), "{error}");
        // A comprehension variable named `self` hides the struct.
        assert_eq!(
            compile("[{'a': 1}].all(self, self.a == 1)", Some(&object)),
            Ok(false)
        );
        // Without a known object, any field goes.
        assert_eq!(compile("self.anything == 1", None), Ok(false));
    }

    #[test]
    fn names_are_escaped_as_upstream() {
        assert_eq!(
            escape("a-b.c/d").as_deref(),
            Some("a__dash__b__dot__c__slash__d")
        );
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("1a"), None);
        assert_eq!(escape("a b"), None);
    }
}
