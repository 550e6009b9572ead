//! The compile-time check of `#[schema(validation(...))]`: every `rule` and
//! `message_expression` is parsed and type-checked by `kapi-cel-check`, the checker the runtime
//! runs when a CRD is created, against the schema this derive writes for the node the rule sits
//! on. A rule kube-apiserver would refuse at `kubectl apply` refuses the build instead, at the
//! string literal, with kube-apiserver's text (`compilation failed: ERROR: <input>:1:N: ...`):
//!
//! - a parse error, a name nothing declares (`undeclared reference to 'x' (in container '')`);
//! - a field the schema does not declare (`undefined field 'x'`), a call no overload fits
//!   (`found no matching overload for '_+_' applied to '(int, string)'`), a field selected on
//!   a scalar;
//! - a rule that is not a bool, a `message_expression` that is not a string;
//! - `optional_old_self` (`true` or `false`) on a rule that does not use `oldSelf`, and
//!   `oldSelf` on a field of a struct marked `map_type = "atomic"`, whose fields' old values do
//!   not correlate.
//! - a rule or message expression estimated to cost more than upstream's per-expression limit
//!   on one value, when every value it reads is typed (the estimate is then the one upstream
//!   makes; the number of values, which depends on where the type is used, only raises it).
//!
//! `self` (and `oldSelf`) are typed by what the derive knows when it expands: the serialized
//! fields of the struct, and each field's schema from how its type is written (`bool`,
//! integers, `String`, `Vec<T>`, maps with string keys, through `Option`, `Box` and `Arc`) and
//! its markers (`format`, `int_or_string`, `max_length`, ...). Any other type's schema is that
//! type's `Schema` impl, which runs later, so its values are dyn here: a rule is refused only
//! for types that are certain, and whatever is dyn is checked again when the CRD is applied.

use proc_macro2::Span;
use serde_json::{Map, Value, json};
use syn::{GenericArgument, PathArguments, Type};

use super::attr::{SchemaAttrs, Validation};
use crate::errors::Errors;

/// What a rule's `self` is: the node's schema as the derive knows it.
pub(crate) struct Node {
    schema: Value,
    /// Whether the node is an (embedded) resource: `apiVersion`, `kind` and `metadata` are
    /// there whatever its fields.
    resource: bool,
    /// Whether old values of the node do not correlate with new ones (a field of an atomic
    /// map), where upstream forbids `oldSelf`.
    uncorrelatable: bool,
}

impl Node {
    /// A node nothing is known of: every field and call is let through.
    pub(crate) fn unknown() -> Node {
        Node {
            schema: json!({}),
            resource: false,
            uncorrelatable: false,
        }
    }

    /// A struct's object: its serialized `fields` with their schemas; `open` when it admits
    /// fields it does not list (a flattened field, `preserve_unknown_fields`).
    pub(crate) fn object(fields: Vec<(String, Value)>, open: bool, attrs: &SchemaAttrs) -> Node {
        let mut schema = Map::new();
        schema.insert("type".to_owned(), json!("object"));
        schema.insert(
            "properties".to_owned(),
            Value::Object(fields.into_iter().collect()),
        );
        if open {
            schema.insert(
                "x-kubernetes-preserve-unknown-fields".to_owned(),
                json!(true),
            );
        }
        let mut schema = Value::Object(schema);
        numbers(&mut schema, attrs);
        Node {
            schema,
            resource: attrs.embedded_resource,
            uncorrelatable: false,
        }
    }

    /// A field of type `ty` with its markers; `in_atomic_map` says its struct is marked
    /// `map_type = "atomic"`.
    pub(crate) fn field(ty: &Type, attrs: &SchemaAttrs, in_atomic_map: bool) -> Node {
        Node {
            schema: field_schema(ty, attrs),
            resource: attrs.embedded_resource,
            uncorrelatable: in_atomic_map,
        }
    }
}

/// The schema of a field as the derive knows it: its type's, with its markers applied.
pub(crate) fn field_schema(ty: &Type, attrs: &SchemaAttrs) -> Value {
    if attrs.with.is_some() {
        return json!({});
    }
    let mut schema = if attrs.int_or_string {
        json!({"x-kubernetes-int-or-string": true})
    } else {
        type_schema(ty, 0)
    };
    if let Value::Object(map) = &mut schema {
        if let Some(format) = &attrs.format {
            map.insert("format".to_owned(), json!(format));
        }
        if attrs.preserve_unknown_fields {
            map.insert(
                "x-kubernetes-preserve-unknown-fields".to_owned(),
                json!(true),
            );
        }
        if attrs.embedded_resource {
            map.insert("type".to_owned(), json!("object"));
            map.insert("x-kubernetes-embedded-resource".to_owned(), json!(true));
        }
    }
    numbers(&mut schema, attrs);
    schema
}

/// The size bounds among the markers, which bound what the checker estimates.
fn numbers(schema: &mut Value, attrs: &SchemaAttrs) {
    let Value::Object(map) = schema else { return };
    for (key, expr) in &attrs.numbers {
        let name = match *key {
            "max_length" => "maxLength",
            "max_items" => "maxItems",
            "max_properties" => "maxProperties",
            _ => continue,
        };
        if let Some(value) = super::attr::number_literal(expr) {
            #[allow(clippy::cast_possible_truncation)]
            map.insert(name.to_owned(), json!(value as i64));
        }
    }
}

/// How deep a written type is followed; deeper, its values are dyn.
const MAX_TYPE_DEPTH: usize = 16;

/// The schema of a type as it is written, where the `Schema` impl it names is kapi's for a
/// standard type; `{}` (dyn) for any other type.
fn type_schema(ty: &Type, depth: usize) -> Value {
    if depth > MAX_TYPE_DEPTH {
        return json!({});
    }
    let path = match ty {
        Type::Path(path) if path.qself.is_none() => path,
        Type::Reference(reference) => {
            return match &*reference.elem {
                Type::Path(p) if p.path.is_ident("str") => json!({"type": "string"}),
                _ => json!({}),
            };
        }
        Type::Group(group) => return type_schema(&group.elem, depth),
        Type::Paren(paren) => return type_schema(&paren.elem, depth),
        _ => return json!({}),
    };
    let Some(last) = path.path.segments.last() else {
        return json!({});
    };
    let args: Vec<&Type> = match &last.arguments {
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|a| match a {
                GenericArgument::Type(t) => Some(t),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let name = last.ident.to_string();
    match (name.as_str(), args.as_slice()) {
        ("bool", []) => json!({"type": "boolean"}),
        ("i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32", []) => json!({"type": "integer"}),
        ("f32" | "f64", []) => json!({"type": "number"}),
        ("String", []) | ("Cow", [_]) => json!({"type": "string"}),
        ("Option" | "Box" | "Arc", [inner]) => type_schema(inner, depth + 1),
        ("Vec" | "BTreeSet" | "HashSet", [items]) => {
            json!({"type": "array", "items": type_schema(items, depth + 1)})
        }
        ("BTreeMap" | "HashMap", [_, values, ..]) => {
            json!({"type": "object", "additionalProperties": type_schema(values, depth + 1)})
        }
        _ => json!({}),
    }
}

/// Checks the rules on `node`, reporting at their literals.
pub(crate) fn check_all(validations: &[Validation], node: &Node, errors: &mut Errors) {
    if validations.is_empty() {
        return;
    }
    let decl = kapi_cel_check::Decl::of_schema(&node.schema, node.resource, "selfType");
    for v in validations {
        let optional = v.optional_old_self == Some(true);
        let variables = kapi_cel_check::rule_variables(&decl, optional);
        match kapi_cel_check::check_source(&v.rule, &variables, &[]) {
            Err(error) => errors.at(v.rule_span, format_args!("compilation failed: {error}")),
            Ok((expression, checked)) => {
                let uses_old_self =
                    kapi_cel_check::syntax::mentions(&expression, kapi_cel_check::OLD_SELF);
                if kapi_cel_check::known_other_than(&checked.result, &kapi_cel_check::Type::Bool) {
                    errors.at(
                        v.rule_span,
                        format_args!(
                            "cel expression must evaluate to a bool (this rule is of type '{}')",
                            checked.result
                        ),
                    );
                }
                // Upstream refuses the key set either way (`true` or `false`).
                if v.optional_old_self.is_some() && !uses_old_self {
                    errors.at(
                        v.rule_span,
                        "optionalOldSelf: may not be set if oldSelf is not used in rule",
                    );
                }
                check_cost(&expression, &checked, "rule", v.rule_span, errors);
                if uses_old_self && node.uncorrelatable {
                    errors.at(
                        v.rule_span,
                        "oldSelf cannot be used on the uncorrelatable portion of the schema \
                         within a struct marked #[schema(map_type = \"atomic\")]: an atomic \
                         map's fields have no old values to compare with; put the rule on the \
                         struct instead",
                    );
                }
            }
        }
        if let Some((expression, span)) = &v.message_expression
            && !expression.trim().is_empty()
        {
            check_message(expression, *span, &variables, errors);
        }
    }
}

/// Checks a `message_expression`: it compiles and is a string.
fn check_message(
    source: &str,
    span: Span,
    variables: &[kapi_cel_check::Variable],
    errors: &mut Errors,
) {
    match kapi_cel_check::check_source(source, variables, &[]) {
        Err(error) => errors.at(
            span,
            format_args!("messageExpression compilation failed: {error}"),
        ),
        Ok((_, checked))
            if kapi_cel_check::known_other_than(&checked.result, &kapi_cel_check::Type::String) =>
        {
            errors.at(
                span,
                format_args!(
                    "messageExpression must evaluate to a string (this one is of type '{}')",
                    checked.result
                ),
            );
        }
        Ok((expression, checked)) => {
            check_cost(&expression, &checked, "messageExpression", span, errors);
        }
    }
}

/// Refuses an expression whose estimated cost on one value passes upstream's per-expression
/// limit, when the estimate rests on no dyn value: upstream multiplies it by how many values
/// the node may have (one at least) and refuses the CRD.
fn check_cost(
    expression: &kapi_cel_check::Expression,
    checked: &kapi_cel_check::Checked,
    what: &str,
    span: Span,
    errors: &mut Errors,
) {
    use kapi_cel_check::estimate::{
        STATIC_ESTIMATED_COST_LIMIT, cost_message, estimate, fully_typed,
    };
    if !fully_typed(expression, checked) {
        return;
    }
    let cost = estimate(expression, checked).max;
    if cost > STATIC_ESTIMATED_COST_LIMIT {
        errors.at(
            span,
            cost_message(
                &format!("estimated {what} cost"),
                cost,
                STATIC_ESTIMATED_COST_LIMIT,
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(rule: &str, node: &Node) -> Result<(), String> {
        let mut errors = Errors::default();
        let validation = Validation {
            rule: rule.to_owned(),
            rule_span: Span::call_site(),
            message: None,
            message_expression: None,
            reason: None,
            field_path: None,
            optional_old_self: None,
        };
        check_all(&[validation], node, &mut errors);
        match errors.finish() {
            None => Ok(()),
            Some(error) => Err(error.to_string()),
        }
    }

    fn widget() -> Node {
        let field = |ty: Type| field_schema(&ty, &SchemaAttrs::default());
        Node::object(
            vec![
                ("replicas".to_owned(), field(syn::parse_quote!(i32))),
                ("name".to_owned(), field(syn::parse_quote!(Option<String>))),
                ("items".to_owned(), field(syn::parse_quote!(Vec<String>))),
                (
                    "labels".to_owned(),
                    field(syn::parse_quote!(BTreeMap<String, String>)),
                ),
                ("spec".to_owned(), field(syn::parse_quote!(MySpec))),
                ("x-mode".to_owned(), field(syn::parse_quote!(bool))),
            ],
            false,
            &SchemaAttrs::default(),
        )
    }

    #[test]
    fn rules_are_typed_by_the_fields() {
        let node = widget();
        for rule in [
            "self.replicas >= 0 && self.x__dash__mode",
            "self.name.matches('^[a-z]+$')",
            "self.items.all(x, x.size() < 10)",
            "self.labels.all(k, self.labels[k] != '')",
            "self.spec.anything.goes",
            "quantity('1Gi').isGreaterThan(quantity('1Mi'))",
            "self.replicas >= oldSelf.replicas",
        ] {
            assert_eq!(compile(rule, &node), Ok(()), "{rule}");
        }
        for (rule, message) in [
            (
                "self.replicas + 'x' == 'y'",
                "found no matching overload for '_+_' applied to '(int, string)'",
            ),
            ("self.nosuchfield > 0", "undefined field 'nosuchfield'"),
            ("self.replicas", "cel expression must evaluate to a bool"),
            (
                "self.replicas.x == 1",
                "type 'int' does not support field selection",
            ),
        ] {
            let error = compile(rule, &node).err().unwrap_or_default();
            assert!(error.contains(message), "{rule}: {error}");
        }
    }

    #[test]
    fn costs_are_refused_only_when_the_types_are_known() {
        let node = widget();
        // An unbounded list of unbounded strings, each matched: far past upstream's limit.
        let error = compile("self.items.all(x, x.matches('^[a-z]+$'))", &node)
            .err()
            .unwrap_or_default();
        assert!(
            error.contains("estimated rule cost exceeds budget by factor of more than 100x"),
            "{error}"
        );
        // The same over a value the derive cannot type is left to the CRD's creation.
        assert_eq!(
            compile("self.spec.items.all(x, x.matches('^[a-z]+$'))", &node),
            Ok(())
        );
    }

    #[test]
    fn unknown_types_are_dyn() {
        assert_eq!(compile("self.a.b + 1 > self.c", &Node::unknown()), Ok(()));
        let ty: Type = syn::parse_quote!(Option<Box<Vec<my::Thing>>>);
        assert_eq!(
            field_schema(&ty, &SchemaAttrs::default()),
            json!({"type": "array", "items": {}})
        );
    }
}
