//! The `x-kubernetes-validations` of a structural schema, compiled once, run against the
//! objects written through it: a tree parallel to the schema holding each node's compiled
//! rules, walked with the object (and, on an update, the old object correlated to it), as
//! upstream's `apiextensions-apiserver/pkg/apiserver/schema/cel` `Validator` is.
//!
//! - A rule runs on every non-null value of its node, with `self` bound to it. A rule that
//!   mentions `oldSelf` (a transition rule) runs only where an old value correlates: object
//!   fields correlate by name (not under `x-kubernetes-map-type: atomic`), items of
//!   `x-kubernetes-list-type: map` lists by their keys, nothing else. With
//!   `optionalOldSelf: true` it runs anyway, `oldSelf` an optional.
//! - A failure is a cause at the node's path (plus the rule's `fieldPath`), with the rule's
//!   `message`, its `messageExpression`'s result, or `failed rule: <rule>`, of the rule's
//!   `reason` (`FieldValueInvalid` by default, whose value is the node's type).
//! - Costs add up over the object; past [`RUNTIME_COST_BUDGET`] no further rule runs.
//!
//! Upstream: `validation.go` (`validateExpressions`, `fieldErrorForReason`,
//! `evalMessageExpression`, `ruleMessageOrDefault`, `ValidFieldPath`) and `compilation.go`.

use std::collections::BTreeMap;

use cel::common::types::CelOptional;
use serde_json::Value;

use std::sync::Arc;

use kapi_cel_check::estimate::cost_message;

use super::types::{Decl, MAX_REQUEST_BYTES, Type};
use super::{
    Activation, EvalError, OLD_SELF, PER_CALL_LIMIT, Program, RUNTIME_COST_BUDGET, SELF,
    compile_declared,
};
use crate::meta::StatusCause;
use crate::schema::{JSONSchemaProps, ValidationRule};

/// One compiled rule.
#[derive(Debug)]
struct Compiled {
    rule: ValidationRule,
    /// `None` for an empty rule, which upstream skips.
    program: Option<Program>,
    message: Option<Program>,
    /// The rule's `fieldPath` as a field path (`spec.x`, `[key]`), when it has one.
    field_path: Option<String>,
    /// Why the rule (or its message expression) did not compile.
    error: Option<String>,
}

/// The rules of one schema node and of the nodes under it.
#[derive(Debug, Default)]
struct Node {
    rules: Vec<Compiled>,
    /// The node's schema, for mapping its values to CEL (only kept where there are rules).
    schema: Option<JSONSchemaProps>,
    /// The node's `type`, the value of upstream's `Invalid` causes.
    type_: String,
    resource: bool,
    uses_old_self: bool,
    properties: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    all_of: Vec<Node>,
    /// Whether the node's fields correlate with the old object's (not an atomic map).
    correlatable: bool,
    /// The keys items of a `x-kubernetes-list-type: map` list correlate by.
    map_keys: Option<Vec<String>>,
}

/// The compiled rules of one CRD version's schema.
#[derive(Debug)]
pub struct Validator {
    root: Node,
}

/// A rule of a schema that did not compile: where it sits and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleError {
    /// The path of the rule's `rule` (or `messageExpression`) field under the schema, as
    /// upstream writes it: `properties[spec].x-kubernetes-validations[0].rule`.
    pub path: String,
    /// The rule, for the cause's value.
    pub rule: ValidationRule,
    /// `compilation failed: ERROR: ...`, or the start of the message about `within`.
    pub detail: String,
    /// For a transition rule where old values do not correlate: the path (under the schema)
    /// of the node that stops the correlation; the rule compiled.
    pub within: Option<String>,
    /// A problem of the rule's own fields (an empty `rule`, a `message` with line breaks, an
    /// unknown `reason`, a `fieldPath` that names nothing), as its cause, the field relative
    /// to the schema; the rule was not compiled.
    pub cause: Option<StatusCause>,
}

impl Validator {
    /// Compiles the rules of `schema`, the root of a resource; `None` when it has none.
    pub fn new(schema: &JSONSchemaProps) -> Option<Validator> {
        let root = node(schema, true)?;
        Some(Validator { root })
    }

    /// Checks `object` (and, on an update, `old`): one cause per failed rule. With `ratchet`
    /// (upstream's CRDValidationRatcheting), a rule that is not a transition rule and fails on
    /// a value equal to its old value (or, where old values do not correlate, under the
    /// nearest ancestor that is unchanged) is let go: upstream turns it into a warning.
    pub fn validate(&self, object: &Value, old: Option<&Value>, ratchet: bool) -> Vec<StatusCause> {
        let mut run = Run {
            causes: Vec::new(),
            budget: RUNTIME_COST_BUDGET,
            exhausted: false,
            ratchet,
        };
        run.node(
            &self.root,
            At {
                path: "",
                value: object,
                old,
                unchanged: ratchet && old == Some(object),
            },
        );
        run.causes
    }
}

pub use kapi_cel_check::estimate::{STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT};

/// Every rule of `schema` that does not compile, with its path under the schema, and every
/// transition rule where old values do not correlate.
pub fn compile_errors(schema: &JSONSchemaProps) -> Vec<RuleError> {
    schema_errors(schema, false)
}

/// [`compile_errors`], and the rules estimated to cost too much: one whose estimated cost
/// times the most values it may run on (the product of the `maxItems` and `maxProperties`
/// above it, or, under an unbounded list or map, as many of its smallest values as fit in a
/// request) passes [`STATIC_ESTIMATED_COST_LIMIT`], and, when all of them together pass
/// [`STATIC_ESTIMATED_CRD_COST_LIMIT`], the four most expensive and the schema itself.
/// `unchanged` says the schema is the one the CRD already had, whose rules upstream does not
/// judge one by one again (`suppressPerExpressionCost`); their total still counts.
///
/// Upstream: `apiextensions/validation/validation.go` (`getCostErrorMessage`,
/// `validateCustomResourceDefinitionValidation`) and `cel_validation.go` (`TotalCost`,
/// `extractMaxElements`).
pub fn schema_errors(schema: &JSONSchemaProps, unchanged: bool) -> Vec<RuleError> {
    let mut errors = Vec::new();
    let mut costs = Costs {
        unchanged,
        ..Costs::default()
    };
    collect_errors(schema, true, "", None, Some(1), &mut costs, &mut errors);
    if costs.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (path, _) in &costs.most_expensive {
            errors.push(cost_error(
                path,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
                    .to_owned(),
            ));
        }
        errors.push(cost_error(
            "",
            cost_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                costs.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    errors
}

/// The estimated costs of a schema's rules so far.
#[derive(Default)]
struct Costs {
    unchanged: bool,
    total: u64,
    /// The four most expensive rules (of at least 1% of the total limit), most first.
    most_expensive: Vec<(String, u64)>,
}

impl Costs {
    fn observe(&mut self, path: &str, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path.to_owned(), cost));
        self.most_expensive
            .sort_by_key(|(_, cost)| std::cmp::Reverse(*cost));
        self.most_expensive.truncate(4);
    }
}

/// A forbidden cause at `path` (under the schema) about cost.
fn cost_error(path: &str, message: String) -> RuleError {
    RuleError {
        path: path.to_owned(),
        rule: ValidationRule::default(),
        detail: String::new(),
        within: None,
        cause: Some(StatusCause::forbidden(path, &message)),
    }
}

/// How many more values each child of `schema` may have than `schema` itself: a list's
/// `maxItems`, a map's `maxProperties`, 1 for an object's fields, `None` when unbounded
/// (`extractMaxElements`).
fn max_elements(schema: &JSONSchemaProps) -> Option<u64> {
    match schema.type_.as_deref() {
        Some("object") if schema.additional_properties.is_some() => {
            schema.max_properties.map(|m| m.max(0) as u64)
        }
        Some("array") => schema.max_items.map(|m| m.max(0) as u64),
        _ => Some(1),
    }
}

/// `path.tail`, or `tail` at the root.
fn join(path: &str, tail: &str) -> String {
    if path.is_empty() {
        tail.to_owned()
    } else {
        format!("{path}.{tail}")
    }
}

/// Checks the rules of `schema` (at `path`) and under it. `uncorrelatable` is the path of the
/// highest node above whose old values do not correlate with the new ones (an item of a list
/// that is not `x-kubernetes-list-type: map`, a field of an atomic map), where upstream's
/// `forbidOldSelfValidations` forbids transition rules.
fn collect_errors(
    schema: &JSONSchemaProps,
    resource: bool,
    path: &str,
    uncorrelatable: Option<&str>,
    cardinality: Option<u64>,
    costs: &mut Costs,
    errors: &mut Vec<RuleError>,
) {
    check_rules(
        errors,
        path,
        schema,
        &schema.x_kubernetes_validations,
        resource,
        uncorrelatable,
        Some((cardinality, &mut *costs)),
    );
    let child = cardinality
        .zip(max_elements(schema))
        .map(|(a, b)| a.saturating_mul(b));
    let atomic_map = schema.x_kubernetes_map_type.as_deref() == Some("atomic");
    let below = |forbid: bool| {
        if forbid {
            uncorrelatable.or(Some(path))
        } else {
            uncorrelatable
        }
    };
    for (name, property) in &schema.properties {
        let embedded = property.x_kubernetes_embedded_resource;
        let at = join(path, &format!("properties[{name}]"));
        collect_errors(
            property,
            embedded,
            &at,
            below(atomic_map),
            child,
            costs,
            errors,
        );
    }
    if let Some(items) = schema.items_schema() {
        let embedded = items.x_kubernetes_embedded_resource;
        let map_list = schema.x_kubernetes_list_type.as_deref() == Some("map");
        collect_errors(
            items,
            embedded,
            &join(path, "items"),
            below(!map_list),
            child,
            costs,
            errors,
        );
    }
    if let Some(extra) = schema.additional_schema() {
        let embedded = extra.x_kubernetes_embedded_resource;
        let at = join(path, "additionalProperties");
        collect_errors(
            extra,
            embedded,
            &at,
            below(atomic_map),
            child,
            costs,
            errors,
        );
    }
    for (i, part) in schema.all_of.iter().enumerate() {
        // An allOf part's rules see the node's own value.
        let mut merged = schema.clone();
        merged.x_kubernetes_validations = part.x_kubernetes_validations.clone();
        merged.all_of.clear();
        let at = join(path, &format!("allOf[{i}]"));
        check_rules(
            errors,
            &at,
            &merged,
            &part.x_kubernetes_validations,
            resource,
            uncorrelatable,
            // Upstream estimates no cost for an allOf part's rules.
            None,
        );
    }
}

/// The problems of the rules `list` of the schema node `node` at `at`; with `costs`, the
/// rules' estimated costs (the node's cardinality, `None` when unbounded) are judged and
/// added up.
fn check_rules(
    errors: &mut Vec<RuleError>,
    at: &str,
    node: &JSONSchemaProps,
    list: &[ValidationRule],
    resource: bool,
    uncorrelatable: Option<&str>,
    mut costs: Option<(Option<u64>, &mut Costs)>,
) {
    if list.is_empty() {
        return;
    }
    let decl = Decl::of_schema(node, resource, "selfType");
    // Under an unbounded list or map, as many of the node's smallest values as fit in a
    // request (`maxCardinality`).
    let unbounded = MAX_REQUEST_BYTES / (decl.min_size + 1);
    for (i, rule) in list.iter().enumerate() {
        let rule_path = join(at, &format!("x-kubernetes-validations[{i}]"));
        let fields = rule_field_errors(rule, node);
        if !fields.is_empty() {
            // Upstream compiles no rule of a schema with errors like these.
            for mut cause in fields {
                cause.field = cause.field.map(|f| format!("{rule_path}.{f}"));
                errors.push(RuleError {
                    path: cause.field.clone().unwrap_or_default(),
                    rule: rule.clone(),
                    detail: String::new(),
                    within: None,
                    cause: Some(cause),
                });
            }
            continue;
        }
        let compiled = compile_rule(rule, node, &decl);
        if let Some((cardinality, costs)) = costs.as_mut() {
            let rule_at = format!("{rule_path}.rule");
            let cost = compiled.program.as_ref().map_or(0, |p| {
                let max = p.estimated_cost().max;
                if max == 0 {
                    0
                } else {
                    max.saturating_mul(cardinality.unwrap_or(unbounded))
                }
            });
            if !costs.unchanged && cost > STATIC_ESTIMATED_COST_LIMIT {
                let message =
                    cost_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT);
                errors.push(cost_error(&rule_at, message));
            }
            costs.observe(&rule_at, cost);
            if let Some(message) = &compiled.message {
                let cost = message.estimated_cost().max;
                let message_at = format!("{rule_path}.messageExpression");
                if !costs.unchanged && cost > STATIC_ESTIMATED_COST_LIMIT {
                    let text = cost_message(
                        "estimated messageExpression cost",
                        cost,
                        STATIC_ESTIMATED_COST_LIMIT,
                    );
                    errors.push(cost_error(&message_at, text));
                }
                costs.observe(&message_at, cost);
            }
        }
        if let Some(detail) = compiled.error {
            let field = if compiled.program.is_some() {
                "messageExpression"
            } else {
                "rule"
            };
            errors.push(RuleError {
                path: format!("{rule_path}.{field}"),
                rule: rule.clone(),
                detail,
                within: None,
                cause: None,
            });
        }
        if let (Some(program), Some(within)) = (&compiled.program, uncorrelatable)
            && program.uses_old_self()
        {
            errors.push(RuleError {
                path: format!("{rule_path}.rule"),
                rule: rule.clone(),
                detail: "oldSelf cannot be used on the uncorrelatable portion of the schema within"
                    .to_owned(),
                within: Some(within.to_owned()),
                cause: None,
            });
        }
    }
}

/// Compiles a rule of the schema node `schema` whose values `decl` declares: the rule must be
/// a bool and its message expression a string, where the checker can tell.
fn compile_rule(rule: &ValidationRule, schema: &JSONSchemaProps, decl: &Arc<Decl>) -> Compiled {
    let mut compiled = Compiled {
        rule: rule.clone(),
        program: None,
        message: None,
        field_path: None,
        error: None,
    };
    if rule.rule.trim().is_empty() {
        return compiled;
    }
    let optional = rule.optional_old_self == Some(true);
    match compile_declared(&rule.rule, decl, optional) {
        Ok(program) if known_other_than(program.result_type(), &Type::Bool) => {
            compiled.error = Some("cel expression must evaluate to a bool".to_owned());
            return compiled;
        }
        Ok(program) => compiled.program = Some(program),
        Err(e) => {
            compiled.error = Some(format!("compilation failed: {e}"));
            return compiled;
        }
    }
    if !rule.message_expression.trim().is_empty() {
        match compile_declared(&rule.message_expression, decl, optional) {
            Ok(program) if known_other_than(program.result_type(), &Type::String) => {
                compiled.error = Some("messageExpression must evaluate to a string".to_owned());
            }
            Ok(program) => compiled.message = Some(program),
            Err(e) => {
                compiled.error = Some(format!("messageExpression compilation failed: {e}"));
            }
        }
    }
    if !rule.field_path.trim().is_empty() {
        compiled.field_path = field_path(rule.field_path.trim(), schema).ok();
    }
    compiled
}

/// A rule's `fieldPath` (`.spec.x`, `['a.b']`) as the field path it names under `schema`
/// (upstream's `ValidFieldPath`): a property is `.name`, a key of an `additionalProperties`
/// map `[key]`.
/// Whether `t` is certainly another type than `want` (dyn may be anything, so it never is).
fn known_other_than(t: &Type, want: &Type) -> bool {
    t.is_concrete() && t != want
}

fn field_path(path: &str, schema: &JSONSchemaProps) -> Result<String, String> {
    let mut out = String::new();
    let mut schema = schema;
    let mut rest = path;
    while !rest.is_empty() {
        let name = if let Some(tail) = rest.strip_prefix('[') {
            let Some(quoted) = tail.strip_prefix('\'') else {
                let token = tail.split(['.', '[', ']']).next().unwrap_or_default();
                return Err(format!("expected single quoted string but got {token}"));
            };
            let end = quoted
                .find("']")
                .ok_or_else(|| "unexpected end of JSON path".to_owned())?;
            rest = &quoted[end + 2..];
            quoted[..end].replace("\\'", "'").replace("\\\\", "\\")
        } else if let Some(tail) = rest.strip_prefix('.') {
            let end = tail.find(['.', '[']).unwrap_or(tail.len());
            if end == 0 {
                return Err("unexpected end of JSON path".to_owned());
            }
            rest = &tail[end..];
            tail[..end].to_owned()
        } else {
            let token = rest.split(['.', '[']).next().unwrap_or_default();
            return Err(format!("expected [ or . but got: {token}"));
        };
        if !schema.properties.is_empty() {
            let property = schema
                .properties
                .get(&name)
                .ok_or_else(|| "does not refer to a valid field".to_owned())?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
            schema = property;
        } else if let Some(extra) = schema.additional_schema() {
            out.push_str(&format!("[{name}]"));
            schema = extra;
        } else {
            return Err("does not refer to a valid field".to_owned());
        }
    }
    Ok(out)
}

/// The reasons a rule may give (`supportedValidationReason`), sorted.
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The checks of a rule's fields that upstream makes before compiling it, as causes whose
/// field is relative to the rule (`message`, `fieldPath`, ...).
fn rule_field_errors(rule: &ValidationRule, schema: &JSONSchemaProps) -> Vec<StatusCause> {
    let newlines = |s: &str| s.contains(['\n', '\r']);
    let text = |s: &str| Value::String(s.to_owned());
    let mut causes = Vec::new();
    let (rule_text, message) = (rule.rule.trim(), rule.message.trim());
    if rule_text.is_empty() {
        causes.push(StatusCause::required("rule", "rule is not specified"));
    } else if !rule.message.is_empty() && message.is_empty() {
        causes.push(StatusCause::invalid(
            "message",
            &text(&rule.message),
            "message must be non-empty if specified",
        ));
    } else if rule.message.len() > 2048 {
        let head: String = rule.message.chars().take(10).collect();
        causes.push(StatusCause::invalid(
            "message",
            &text(&format!("{head}...")),
            "message must have a maximum length of 2048 characters",
        ));
    } else if newlines(message) {
        causes.push(StatusCause::invalid(
            "message",
            &text(&rule.message),
            "message must not contain line breaks",
        ));
    } else if newlines(rule_text) && message.is_empty() {
        causes.push(StatusCause::required(
            "message",
            "message must be specified if rule contains line breaks",
        ));
    }
    if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
        causes.push(StatusCause::required(
            "messageExpression",
            "messageExpression must be non-empty if specified",
        ));
    }
    if let Some(reason) = &rule.reason
        && !REASONS.contains(&reason.as_str())
    {
        causes.push(StatusCause::not_supported(
            "reason",
            &text(reason),
            &REASONS,
        ));
    }
    let field_path = rule.field_path.trim();
    if !rule.field_path.is_empty() && field_path.is_empty() {
        causes.push(StatusCause::invalid(
            "fieldPath",
            &text(&rule.field_path),
            "fieldPath must be non-empty if specified",
        ));
    }
    if newlines(&rule.field_path) {
        causes.push(StatusCause::invalid(
            "fieldPath",
            &text(&rule.field_path),
            "fieldPath must not contain line breaks",
        ));
    } else if !field_path.is_empty()
        && let Err(e) = self::field_path(field_path, schema)
    {
        causes.push(StatusCause::invalid(
            "fieldPath",
            &text(&rule.field_path),
            &format!("fieldPath must be a valid path: {e}"),
        ));
    }
    causes
}

/// The validator node of `schema`, if it or anything under it has rules.
fn node(schema: &JSONSchemaProps, resource: bool) -> Option<Node> {
    let rules: Vec<Compiled> = if schema.x_kubernetes_validations.is_empty() {
        Vec::new()
    } else {
        let decl = Decl::of_schema(schema, resource, "selfType");
        schema
            .x_kubernetes_validations
            .iter()
            .map(|rule| compile_rule(rule, schema, &decl))
            .collect()
    };
    let properties: BTreeMap<String, Node> = schema
        .properties
        .iter()
        .filter_map(|(name, p)| Some((name.clone(), node(p, p.x_kubernetes_embedded_resource)?)))
        .collect();
    let items = schema
        .items_schema()
        .and_then(|s| node(s, s.x_kubernetes_embedded_resource))
        .map(Box::new);
    let additional = schema
        .additional_schema()
        .and_then(|s| node(s, s.x_kubernetes_embedded_resource))
        .map(Box::new);
    let all_of: Vec<Node> = schema
        .all_of
        .iter()
        .filter_map(|part| {
            // An allOf part's rules run on the node's own values, mapped by the node's schema.
            let mut merged = schema.clone();
            merged.x_kubernetes_validations = part.x_kubernetes_validations.clone();
            merged.all_of.clear();
            let mut n = node(&merged, resource)?;
            n.properties.clear();
            n.items = None;
            n.additional = None;
            (!n.rules.is_empty()).then_some(n)
        })
        .collect();
    if rules.is_empty()
        && properties.is_empty()
        && items.is_none()
        && additional.is_none()
        && all_of.is_empty()
    {
        return None;
    }
    let uses_old_self = rules
        .iter()
        .any(|r| r.program.as_ref().is_some_and(Program::uses_old_self));
    Some(Node {
        schema: (!rules.is_empty()).then(|| schema.clone()),
        type_: schema.type_.clone().unwrap_or_default(),
        resource,
        uses_old_self,
        rules,
        properties,
        items,
        additional,
        all_of,
        correlatable: schema.x_kubernetes_map_type.as_deref() != Some("atomic"),
        map_keys: (schema.x_kubernetes_list_type.as_deref() == Some("map"))
            .then(|| schema.x_kubernetes_list_map_keys.clone()),
    })
}

/// A value the walk is at: its field path, the old value correlated to it, and whether the
/// nearest node at or above it whose old value correlates is equal to that old value (what
/// ratcheting looks at).
#[derive(Clone, Copy)]
struct At<'v> {
    path: &'v str,
    value: &'v Value,
    old: Option<&'v Value>,
    unchanged: bool,
}

/// One walk over an object.
struct Run {
    causes: Vec<StatusCause>,
    budget: u64,
    exhausted: bool,
    ratchet: bool,
}

/// Upstream's path text: the root (a nil `field.Path`) prints as `<nil>`.
fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_owned()
    } else {
        path.to_owned()
    }
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

impl Run {
    /// Runs the rules of `node` and under it on the value `at`.
    fn node(&mut self, node: &Node, at: At<'_>) {
        let At {
            path,
            value,
            old,
            unchanged,
        } = at;
        if self.exhausted || value.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        let here = At { old, ..at };
        self.rules(node, &here);
        for part in &node.all_of {
            if self.exhausted {
                return;
            }
            self.rules(part, &here);
        }
        // A child whose old value correlates is unchanged when equal to it; one whose old
        // values do not correlate goes by this node.
        let ratchet = self.ratchet;
        let child_unchanged = |correlates: bool, child: &Value, old_child: Option<&Value>| {
            if correlates {
                ratchet && old_child == Some(child)
            } else {
                unchanged
            }
        };
        match value {
            Value::Object(fields) => {
                let old_fields = old.and_then(Value::as_object).filter(|_| node.correlatable);
                for (key, child_value) in fields {
                    // Only the children with rules under them are visited, or given a path.
                    let (child_node, child_path) = if let Some(property) = node.properties.get(key)
                    {
                        (property, child(path, key))
                    } else if let Some(additional) = node.additional.as_deref() {
                        (additional, format!("{path}[{key}]"))
                    } else {
                        continue;
                    };
                    let old_child = old_fields.and_then(|o| o.get(key));
                    self.node(
                        child_node,
                        At {
                            path: &child_path,
                            value: child_value,
                            old: old_child,
                            unchanged: child_unchanged(
                                old_fields.is_some(),
                                child_value,
                                old_child,
                            ),
                        },
                    );
                    if self.exhausted {
                        return;
                    }
                }
            }
            Value::Array(items) => {
                let Some(item_node) = &node.items else {
                    return;
                };
                let old_items = old.and_then(Value::as_array);
                let correlates = node.map_keys.is_some() && old_items.is_some();
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (&node.map_keys, old_items) {
                        (Some(keys), Some(old_items)) => old_items
                            .iter()
                            .find(|o| keys.iter().all(|k| o.get(k) == item.get(k))),
                        _ => None,
                    };
                    let same = child_unchanged(correlates, item, old_item);
                    self.node(
                        item_node,
                        At {
                            path: &format!("{path}[{i}]"),
                            value: item,
                            old: old_item,
                            unchanged: same,
                        },
                    );
                    if self.exhausted {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    fn rules(&mut self, node: &Node, at: &At<'_>) {
        let At {
            path,
            value,
            old,
            unchanged,
        } = *at;
        if node.rules.is_empty() {
            return;
        }
        let invalid = |path: &str, detail: &str| {
            StatusCause::invalid_shown(shown(path), &format!("{:?}", node.type_), detail)
        };
        if self.budget == 0 {
            self.causes.push(invalid(
                path,
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            self.exhausted = true;
            return;
        }
        let schema = node.schema.as_ref();
        let bind = |value| super::value::to_val(schema, value, node.resource);
        let old = old.filter(|_| node.uses_old_self);
        // Bound once per node: `oldSelf` as the old value, and as an optional for the rules
        // with `optionalOldSelf`.
        let mut plain: Option<Activation<'_>> = None;
        let mut with_optional: Option<Activation<'_>> = None;
        for compiled in &node.rules {
            let rule = &compiled.rule;
            if let Some(error) = &compiled.error {
                self.causes
                    .push(invalid(path, &format!("rule compile error: {error}")));
                continue;
            }
            let Some(program) = &compiled.program else {
                continue;
            };
            let optional_old_self = rule.optional_old_self == Some(true);
            if program.uses_old_self() && old.is_none() && !optional_old_self {
                continue;
            }
            let activation: &Activation<'_> = if optional_old_self {
                with_optional.get_or_insert_with(|| {
                    let old_self = match old {
                        Some(old) => CelOptional::of(bind(old)),
                        None => CelOptional::none(),
                    };
                    Activation::of_vals(vec![(SELF, bind(value)), (OLD_SELF, Box::new(old_self))])
                })
            } else {
                plain.get_or_insert_with(|| {
                    let mut variables = vec![(SELF, bind(value))];
                    if let Some(old) = old {
                        variables.push((OLD_SELF, bind(old)));
                    }
                    Activation::of_vals(variables)
                })
            };
            let evaluated = program.evaluate_in(activation, PER_CALL_LIMIT.min(self.budget));
            if matches!(evaluated.result, Err(EvalError::CostLimit)) && self.budget < PER_CALL_LIMIT
            {
                self.causes.push(invalid(
                    path,
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                self.exhausted = true;
                return;
            }
            self.budget = self.budget.saturating_sub(evaluated.cost);
            // Rendered only for a failure: most evaluations pass.
            let error_string = || rule_error_string(rule);
            match evaluated.result {
                Ok(cel::Value::Bool(true)) => continue,
                Ok(cel::Value::Bool(false)) => {}
                Ok(_) => {
                    self.causes.push(invalid(
                        path,
                        &format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}", error_string()
                        ),
                    ));
                    continue;
                }
                Err(EvalError::CostLimit) => {
                    self.causes.push(invalid(
                        path,
                        &format!(
                            "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}", error_string()
                        ),
                    ));
                    self.exhausted = true;
                    return;
                }
                Err(EvalError::Failed(error)) if error.starts_with("no such overload") => {
                    self.causes.push(invalid(
                        path,
                        &format!(
                            "'{error}': call arguments did not match a supported operator, function or macro signature for rule: {}", error_string()
                        ),
                    ));
                    continue;
                }
                Err(EvalError::Failed(error)) => {
                    self.causes.push(invalid(
                        path,
                        &format!("{error} evaluating rule: {}", error_string()),
                    ));
                    continue;
                }
            }
            // Ratcheting: a failure on a value the update leaves as it was is let go (upstream
            // warns); transition rules always count.
            if unchanged && !program.uses_old_self() {
                continue;
            }
            let failed_path = match &compiled.field_path {
                Some(extra) if extra.starts_with('[') => format!("{path}{extra}"),
                Some(extra) => child(path, extra),
                None => path.to_owned(),
            };
            let mut detail = None;
            if let Some(message) = &compiled.message {
                let evaluated = message.evaluate_in(activation, PER_CALL_LIMIT.min(self.budget));
                if matches!(evaluated.result, Err(EvalError::CostLimit))
                    && self.budget < PER_CALL_LIMIT
                {
                    self.causes.push(invalid(
                        &failed_path,
                        "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
                    ));
                    self.exhausted = true;
                    return;
                }
                self.budget = self.budget.saturating_sub(evaluated.cost);
                match evaluated.result {
                    Ok(cel::Value::String(text)) => {
                        let text = text.trim();
                        if !text.is_empty()
                            && text.len() <= super::MAX_MESSAGE_EXPRESSION_BYTES
                            && !text.contains('\n')
                        {
                            detail = Some(text.to_owned());
                        }
                    }
                    Err(EvalError::CostLimit) => {
                        self.causes.push(invalid(
                            &failed_path,
                            &format!(
                                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {:?}",
                                rule.message_expression
                            ),
                        ));
                        self.exhausted = true;
                        return;
                    }
                    _ => {}
                }
            }
            let detail = detail.unwrap_or_else(|| message_or_default(rule));
            self.causes.push(match rule.reason.as_deref() {
                Some("FieldValueForbidden") => StatusCause::forbidden(shown(&failed_path), &detail),
                Some("FieldValueRequired") => StatusCause::required(shown(&failed_path), &detail),
                Some("FieldValueDuplicate") => {
                    StatusCause::duplicate(shown(&failed_path), &Value::String(node.type_.clone()))
                }
                _ => invalid(&failed_path, &detail),
            });
        }
    }
}

/// `ruleMessageOrDefault`: the message, or `failed rule: <rule>`.
fn message_or_default(rule: &ValidationRule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule_error_string(rule))
    } else {
        rule.message.trim().to_owned()
    }
}

/// `ruleErrorString`: the message if there is one, else the rule.
fn rule_error_string(rule: &ValidationRule) -> String {
    if rule.message.is_empty() {
        rule.rule.trim().to_owned()
    } else {
        rule.message.trim().to_owned()
    }
}

#[cfg(test)]
mod tests;
