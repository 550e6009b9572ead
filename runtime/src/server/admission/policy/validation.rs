//! What writes of ValidatingAdmissionPolicies and their bindings must satisfy, as upstream's
//! `ValidateValidatingAdmissionPolicy` and `ValidateValidatingAdmissionPolicyBinding`
//! (`pkg/apis/admissionregistration/validation/validation.go`), with its messages: the failure
//! policy, `paramKind`, the match resources and their rules, the match conditions, variables,
//! validations and audit annotations, whose CEL must compile (`spec.validations[0].expression:
//! Invalid value: "...": compilation failed: ERROR: <input>:1:1: ...`); a binding's policy
//! name, `paramRef` and validation actions. Object metadata and label selectors are checked by
//! every write (`validation::check_metadata`, the selectors' type rule).
//!
//! MutatingAdmissionPolicies and their bindings are checked as upstream's
//! `ValidateMutatingAdmissionPolicy` and `ValidateMutatingAdmissionPolicyBinding`: the shared
//! parts as above, at least one mutation, each `patchType` with its one expression (which
//! must compile in the mutation environment, `cel::mutation`, and give an `Object` or a
//! `list(JSONPatch)`: `must evaluate to Object but got string`), `reinvocationPolicy`, and no
//! `DELETE` among the operations matched.
//!
//! `prepare` gives every served version of the four kinds this check, as the validator of its
//! registered kind. The versions share the shape checked here.
//!
//! The expressions are type-checked (`request` and `namespaceObject` typed as upstream
//! declares them, `authorizer` and `authorizer.requestResource` of the authz library's types,
//! so `authorizer.group(1)` is a compilation error; the other variables dyn) and a result type that is certainly not the one its
//! field requires refuses the policy; an expression of dyn type that gives no boolean refuses
//! the requests it is evaluated for. Not checked: reads of undeclared `variables`.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use super::config::{BINDINGS, MUTATING_BINDINGS, MUTATING_POLICIES, POLICIES};
use super::evaluate::names;
use crate::KubeVersion;
use crate::cel::mutation::{self, Patch};
use crate::cel::{Type, admission};
use crate::meta::StatusCause;
use crate::registry::{RegisteredKind, Registry, Validator};
use crate::server::admission::webhook::config::GROUP;
use crate::validation::{Errors, FieldPath, Format, Shown};

/// The most match conditions (`validateMatchConditions`).
const MOST_MATCH_CONDITIONS: usize = 64;
/// The most audit annotations (`maxAuditAnnotations`).
const MOST_AUDIT_ANNOTATIONS: usize = 20;
/// The longest audit annotation value expression (`maxAuditAnnotationValueExpressionLength`).
const MOST_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;

/// `registry` with every version of both kinds checked as upstream checks them in `release`.
pub(crate) fn prepare(mut registry: Registry, release: KubeVersion) -> Registry {
    let kinds: Vec<RegisteredKind> = registry
        .kinds()
        .filter(|k| {
            k.info.gvk.group == GROUP
                && [POLICIES, BINDINGS, MUTATING_POLICIES, MUTATING_BINDINGS]
                    .contains(&k.info.plural.as_ref())
        })
        .cloned()
        .collect();
    for kind in kinds {
        let validate: Validator = match kind.info.plural.as_ref() {
            POLICIES => {
                Arc::new(move |object: &Value, _: Option<&Value>| check_policy(object, release))
            }
            BINDINGS => {
                Arc::new(move |object: &Value, _: Option<&Value>| check_binding(object, release))
            }
            MUTATING_POLICIES => Arc::new(move |object: &Value, _: Option<&Value>| {
                check_mutating_policy(object, release)
            }),
            _ => Arc::new(move |object: &Value, _: Option<&Value>| {
                check_mutating_binding(object, release)
            }),
        };
        registry.insert_kind(RegisteredKind {
            validate: Some(validate),
            ..kind
        });
    }
    registry
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn list<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn present(value: &Value, key: &str) -> bool {
    value.get(key).is_some_and(|v| !v.is_null())
}

/// A policy's causes.
pub(crate) fn check_policy(object: &Value, release: KubeVersion) -> Vec<StatusCause> {
    let mut errors = Errors::new(release);
    let null = Value::Null;
    let spec = object.get("spec").unwrap_or(&null);
    let path = FieldPath::of("spec");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    match spec.get("failurePolicy") {
        None | Some(Value::Null) => errors.required(&path.child("failurePolicy"), ""),
        Some(policy) if !matches!(policy.as_str(), Some("Fail" | "Ignore")) => {
            errors.not_supported(&path.child("failurePolicy"), policy, &["Fail", "Ignore"]);
        }
        Some(_) => {}
    }
    let has_params = present(spec, "paramKind");
    if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
        check_param_kind(kind, &path.child("paramKind"), &mut errors);
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errors.required(&path.child("matchConstraints"), ""),
        Some(constraints) => {
            let at = path.child("matchConstraints");
            check_match_resources(constraints, &at, &mut errors);
            if list(constraints, "resourceRules").is_empty() {
                errors.required(&at.child("resourceRules"), "");
            }
        }
    }
    let names = names(has_params, true);
    check_match_conditions(
        list(spec, "matchConditions"),
        &path.child("matchConditions"),
        &names,
        &mut errors,
    );
    check_variables(list(spec, "variables"), &path, &names, &mut errors);
    let validations = list(spec, "validations");
    let annotations = list(spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        errors.required(&path.child("validations"), detail);
        errors.required(&path.child("auditAnnotations"), detail);
    }
    let message_names = super::evaluate::names(has_params, false);
    for (i, validation) in validations.iter().enumerate() {
        let at = path.child("validations").index(i);
        let expression = text(validation, "expression").unwrap_or("");
        if expression.trim().is_empty() {
            errors.required(&at.child("expression"), "expression is not specified");
        } else {
            compile(
                expression,
                &names,
                BOOL,
                &at.child("expression"),
                &mut errors,
            );
        }
        let message_expression = text(validation, "messageExpression").unwrap_or("");
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errors.invalid(
                &at.child("messageExpression"),
                Shown::Plain(&Value::from(message_expression)),
                "must be non-empty if specified",
            );
        } else if !message_expression.is_empty() {
            compile(
                message_expression,
                &message_names,
                STRING,
                &at.child("messageExpression"),
                &mut errors,
            );
        }
        let message = text(validation, "message").unwrap_or("");
        if !message.is_empty() && message.trim().is_empty() {
            errors.invalid(
                &at.child("message"),
                Shown::Plain(&Value::from(message)),
                "message must be non-empty if specified",
            );
        } else if message.trim().contains(['\n', '\r']) {
            errors.invalid(
                &at.child("message"),
                Shown::Plain(&Value::from(message)),
                "message must not contain line breaks",
            );
        }
        if let Some(reason) = validation.get("reason").filter(|r| !r.is_null())
            && !matches!(
                reason.as_str(),
                Some("Forbidden" | "Invalid" | "RequestEntityTooLarge")
            )
        {
            errors.not_supported(
                &at.child("reason"),
                reason,
                &["Forbidden", "Invalid", "RequestEntityTooLarge"],
            );
        }
    }
    if annotations.len() > MOST_AUDIT_ANNOTATIONS {
        let all = Value::Array(annotations.to_vec());
        errors.invalid(
            &path.child("auditAnnotations"),
            Shown::Plain(&all),
            &format!("must not have more than {MOST_AUDIT_ANNOTATIONS} auditAnnotations"),
        );
    }
    let mut keys = BTreeSet::new();
    for (i, annotation) in annotations.iter().enumerate() {
        let at = path.child("auditAnnotations").index(i);
        let key = text(annotation, "key").unwrap_or("");
        if name.is_empty() {
            errors.invalid(
                &at.child("key"),
                Shown::Plain(&Value::from(key)),
                "requires metadata.name be non-empty",
            );
        } else {
            let qualified = format!("{name}/{key}");
            for message in Format::QualifiedName.messages(&qualified, release) {
                errors.invalid(
                    &at.child("key"),
                    Shown::Plain(&Value::from(qualified.as_str())),
                    &message,
                );
            }
        }
        let value_expression = text(annotation, "valueExpression").unwrap_or("");
        let trimmed = value_expression.trim();
        if trimmed.is_empty() {
            errors.required(
                &at.child("valueExpression"),
                "valueExpression is not specified",
            );
        } else if trimmed.len() > MOST_VALUE_EXPRESSION_BYTES {
            errors.required(
                &at.child("valueExpression"),
                &format!("must not exceed {MOST_VALUE_EXPRESSION_BYTES} bytes in length"),
            );
        } else {
            compile(
                value_expression,
                &names,
                STRING_OR_NULL,
                &at.child("valueExpression"),
                &mut errors,
            );
        }
        if !keys.insert(key) {
            errors.duplicate(&at.child("key"), &Value::from(key));
        }
    }
    errors.into_causes()
}

/// The operations a mutating policy may match (`supportedMutatingOperations`): a mutation
/// has no object to change on a delete.
const MUTATING_OPERATIONS: [&str; 4] = ["*", "CONNECT", "CREATE", "UPDATE"];

/// A mutating policy's causes, as upstream's `validateMutatingAdmissionPolicySpec`: the
/// failure policy, `paramKind`, the match constraints (with at least one resource rule, and
/// no operation a mutation cannot act on), match conditions and variables as a validating
/// policy's; at least one mutation, each with a supported `patchType` and the one expression
/// it names, which must compile; and the reinvocation policy.
pub(crate) fn check_mutating_policy(object: &Value, release: KubeVersion) -> Vec<StatusCause> {
    let mut errors = Errors::new(release);
    let null = Value::Null;
    let spec = object.get("spec").unwrap_or(&null);
    let path = FieldPath::of("spec");
    match spec.get("failurePolicy") {
        None | Some(Value::Null) => errors.required(&path.child("failurePolicy"), ""),
        Some(policy) if !matches!(policy.as_str(), Some("Fail" | "Ignore")) => {
            errors.not_supported(&path.child("failurePolicy"), policy, &["Fail", "Ignore"]);
        }
        Some(_) => {}
    }
    let has_params = present(spec, "paramKind");
    if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
        check_param_kind(kind, &path.child("paramKind"), &mut errors);
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errors.required(&path.child("matchConstraints"), ""),
        Some(constraints) => {
            let at = path.child("matchConstraints");
            check_match_resources(constraints, &at, &mut errors);
            if list(constraints, "resourceRules").is_empty() {
                errors.required(&at.child("resourceRules"), "");
            }
            check_mutable_operations(constraints, &at, &mut errors);
        }
    }
    let names = names(has_params, true);
    check_match_conditions(
        list(spec, "matchConditions"),
        &path.child("matchConditions"),
        &names,
        &mut errors,
    );
    check_variables(list(spec, "variables"), &path, &names, &mut errors);
    let mutations = list(spec, "mutations");
    if mutations.is_empty() {
        errors.required(
            &path.child("mutations"),
            "mutations must contain at least one item",
        );
    }
    for (i, mutation) in mutations.iter().enumerate() {
        check_mutation(
            mutation,
            &path.child("mutations").index(i),
            &names,
            &mut errors,
        );
    }
    match spec.get("reinvocationPolicy") {
        None | Some(Value::Null) => errors.required(&path.child("reinvocationPolicy"), ""),
        Some(policy) if !matches!(policy.as_str(), Some("Never" | "IfNeeded")) => {
            errors.not_supported(
                &path.child("reinvocationPolicy"),
                policy,
                &["IfNeeded", "Never"],
            );
        }
        Some(_) => {}
    }
    errors.into_causes()
}

/// Every operation of the resource rules must be one a mutation acts on (upstream reports
/// them at `resourceRules.operations`, without an index).
fn check_mutable_operations(resources: &Value, at: &FieldPath, errors: &mut Errors) {
    let operations_at = at.child("resourceRules").child("operations");
    for rule in list(resources, "resourceRules") {
        for operation in strings(rule, "operations") {
            if !MUTATING_OPERATIONS.contains(&operation.as_str()) {
                errors.not_supported(
                    &operations_at,
                    &Value::from(operation.as_str()),
                    &MUTATING_OPERATIONS,
                );
            }
        }
    }
}

/// `validateMutation`: the `patchType` union and its expression.
fn check_mutation(mutation: &Value, at: &FieldPath, names: &[&str], errors: &mut Errors) {
    let patch_type = text(mutation, "patchType").unwrap_or("");
    let own = |key: &str| mutation.get(key).filter(|v| !v.is_null());
    let (field, other) = match patch_type {
        "" => {
            errors.required(&at.child("patchType"), "");
            return;
        }
        "ApplyConfiguration" => ("applyConfiguration", "jsonPatch"),
        "JSONPatch" => ("jsonPatch", "applyConfiguration"),
        _ => {
            errors.not_supported(
                &at.child("patchType"),
                &Value::from(patch_type),
                &["ApplyConfiguration", "JSONPatch"],
            );
            return;
        }
    };
    match own(field) {
        None => errors.required(
            &at.child(field),
            &format!("must be specified when patchType is {patch_type}"),
        ),
        Some(config) => {
            let expression = text(config, "expression").unwrap_or("").trim();
            let expression_at = at.child(field).child("expression");
            if expression.is_empty() {
                errors.required(&expression_at, "");
            } else {
                let patch = if field == "jsonPatch" {
                    Patch::JsonPatch
                } else {
                    Patch::ApplyConfiguration
                };
                let variables = admission::variables(names);
                if let Err(detail) = mutation::validate(expression, &variables, patch) {
                    errors.invalid(
                        &expression_at,
                        Shown::Plain(&Value::from(expression)),
                        &detail,
                    );
                }
            }
        }
    }
    if own(other).is_some() {
        errors.invalid(
            &at.child(other),
            Shown::Plain(&Value::from(format!("{{{other}}}"))),
            &format!("must not be specified when patchType is {patch_type}"),
        );
    }
}

/// A mutating policy's binding: as a validating one's, without validation actions and with
/// the match resources' operations limited to what a mutation acts on.
pub(crate) fn check_mutating_binding(object: &Value, release: KubeVersion) -> Vec<StatusCause> {
    let mut errors = Errors::new(release);
    let null = Value::Null;
    let spec = object.get("spec").unwrap_or(&null);
    let path = FieldPath::of("spec");
    check_policy_name(spec, &path, &mut errors);
    if let Some(param_ref) = spec.get("paramRef").filter(|p| !p.is_null()) {
        check_param_ref(param_ref, &path.child("paramRef"), &mut errors);
    }
    if let Some(resources) = spec.get("matchResources").filter(|m| !m.is_null()) {
        let at = path.child("matchResources");
        check_match_resources(resources, &at, &mut errors);
        check_mutable_operations(resources, &at, &mut errors);
    }
    errors.into_causes()
}

/// A binding's `policyName`: required, a DNS subdomain.
fn check_policy_name(spec: &Value, path: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let policy = text(spec, "policyName").unwrap_or("");
    if policy.is_empty() {
        errors.required(&path.child("policyName"), "");
    } else {
        for message in Format::DnsSubdomain.messages(policy, release) {
            errors.invalid(
                &path.child("policyName"),
                Shown::Plain(&Value::from(policy)),
                &message,
            );
        }
    }
}

/// What an expression must evaluate to (upstream's `ReturnTypes`), as cel-go names the types;
/// none for any type.
const BOOL: &[(Type, &str)] = &[(Type::Bool, "bool")];
const STRING: &[(Type, &str)] = &[(Type::String, "string")];
const STRING_OR_NULL: &[(Type, &str)] = &[(Type::String, "string"), (Type::Null, "null_type")];
const ANY: &[(Type, &str)] = &[];

/// Compiles `expression`: `Invalid value: "<expression>": compilation failed: <cel-go's text>`,
/// or, when the checker knows its type is none of `returns`, `must evaluate to bool` (`must
/// evaluate to one of [string null_type]`), as upstream's `CompileCELExpression` refuses it.
/// `request` and `namespaceObject` are typed by upstream's hand-written declarations,
/// `authorizer` by the authz library's types, the other variables dyn, as upstream declares
/// them outside type checking; a dyn result is let through (upstream refuses it: kapi cannot always tell a dyn of its own from one of
/// upstream's).
fn compile(
    expression: &str,
    names: &[&str],
    returns: &[(Type, &str)],
    at: &FieldPath,
    errors: &mut Errors,
) {
    let variables = admission::variables(names);
    match crate::cel::compile_typed(expression, &variables) {
        Err(e) => errors.invalid(
            at,
            Shown::Plain(&Value::from(expression)),
            &format!("compilation failed: {e}"),
        ),
        Ok(program) => {
            let result = program.result_type();
            if returns.is_empty()
                || !result.is_concrete()
                || returns.iter().any(|(t, _)| t == result)
            {
                return;
            }
            let detail = match returns {
                [(_, name)] => format!("must evaluate to {name}"),
                _ => {
                    let names: Vec<&str> = returns.iter().map(|(_, name)| *name).collect();
                    format!("must evaluate to one of [{}]", names.join(" "))
                }
            };
            errors.invalid(at, Shown::Plain(&Value::from(expression)), &detail);
        }
    }
}

/// A policy's `variables`: named with CEL identifiers, each expression compiling.
fn check_variables(variables: &[Value], path: &FieldPath, names: &[&str], errors: &mut Errors) {
    for (i, variable) in variables.iter().enumerate() {
        let at = path.child("variables").index(i);
        let name = text(variable, "name").unwrap_or("");
        if name.trim().is_empty() {
            errors.required(&at.child("name"), "name is not specified");
        } else if !is_cel_identifier(name) {
            errors.invalid(
                &at.child("name"),
                Shown::Plain(&Value::from(name)),
                "name is not a valid CEL identifier",
            );
        }
        let expression = text(variable, "expression").unwrap_or("");
        if expression.trim().is_empty() {
            errors.required(&at.child("expression"), "expression is not specified");
        } else {
            compile(expression, names, ANY, &at.child("expression"), errors);
        }
    }
}

/// cel-go's identifiers: a letter or `_`, then letters, digits and `_`; no reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !crate::cel::value::RESERVED.contains(&name)
}

fn check_param_kind(kind: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let api_version = text(kind, "apiVersion").unwrap_or("");
    let version_at = at.child("apiVersion");
    if api_version.is_empty() {
        errors.required(&version_at, "");
    } else if api_version.matches('/').count() > 1 {
        errors.invalid(
            &version_at,
            Shown::Plain(&Value::from(api_version)),
            &format!("unexpected GroupVersion string: {api_version}"),
        );
    } else {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let messages = Format::DnsSubdomain.messages(group, release);
        if !group.is_empty() && !messages.is_empty() {
            errors.invalid(
                &version_at,
                Shown::Plain(&Value::from(group)),
                &messages.join(","),
            );
        }
        if version.is_empty() {
            errors.invalid(
                &version_at,
                Shown::Plain(&Value::from(api_version)),
                "version must be specified",
            );
        } else {
            let messages = Format::Dns1035Label.messages(version, release);
            if !messages.is_empty() {
                errors.invalid(
                    &version_at,
                    Shown::Plain(&Value::from(version)),
                    &messages.join(","),
                );
            }
        }
    }
    let name = text(kind, "kind").unwrap_or("");
    if name.is_empty() {
        errors.required(&at.child("kind"), "");
    } else {
        let messages = Format::Dns1035Label.messages(&name.to_lowercase(), release);
        if !messages.is_empty() {
            errors.invalid(
                &at.child("kind"),
                Shown::Plain(&Value::from(name)),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    messages.join(",")
                ),
            );
        }
    }
}

/// `validateMatchResources`.
fn check_match_resources(resources: &Value, at: &FieldPath, errors: &mut Errors) {
    match resources.get("matchPolicy").filter(|p| !p.is_null()) {
        None => errors.required(&at.child("matchPolicy"), ""),
        Some(policy) if !matches!(policy.as_str(), Some("Equivalent" | "Exact")) => {
            errors.not_supported(&at.child("matchPolicy"), policy, &["Equivalent", "Exact"]);
        }
        Some(_) => {}
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if !present(resources, selector) {
            errors.required(&at.child(selector), "");
        }
    }
    for rules in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in list(resources, rules).iter().enumerate() {
            check_named_rule(rule, &at.child(rules).index(i), errors);
        }
    }
}

fn strings(value: &Value, key: &str) -> Vec<String> {
    list(value, key)
        .iter()
        .map(|v| v.as_str().unwrap_or("").to_owned())
        .collect()
}

/// `validateNamedRuleWithOperations`: resource names, operations, then the rule.
fn check_named_rule(rule: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let mut seen = BTreeSet::new();
    for (i, name) in strings(rule, "resourceNames").iter().enumerate() {
        let name_at = at.child("resourceNames").index(i);
        for message in Format::PathSegment.messages(name, release) {
            errors.invalid(
                &name_at,
                Shown::Plain(&Value::from(name.as_str())),
                &message,
            );
        }
        if !seen.insert(name.clone()) {
            errors.duplicate(&name_at, &Value::from(name.as_str()));
        }
    }
    let operations = strings(rule, "operations");
    if operations.is_empty() {
        errors.required(&at.child("operations"), "");
    }
    let wildcard = |items: &[String]| items.iter().any(|i| i == "*");
    if operations.len() > 1 && wildcard(&operations) {
        errors.invalid(
            &at.child("operations"),
            Shown::StringList(rule.get("operations").unwrap_or(&Value::Null)),
            "if '*' is present, must not specify other operations",
        );
    }
    for (i, operation) in operations.iter().enumerate() {
        if !matches!(
            operation.as_str(),
            "*" | "CONNECT" | "CREATE" | "DELETE" | "UPDATE"
        ) {
            errors.not_supported(
                &at.child("operations").index(i),
                &Value::from(operation.as_str()),
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            );
        }
    }
    let groups = strings(rule, "apiGroups");
    if groups.is_empty() {
        errors.required(&at.child("apiGroups"), "");
    }
    if groups.len() > 1 && wildcard(&groups) {
        errors.invalid(
            &at.child("apiGroups"),
            Shown::StringList(rule.get("apiGroups").unwrap_or(&Value::Null)),
            "if '*' is present, must not specify other API groups",
        );
    }
    let versions = strings(rule, "apiVersions");
    if versions.is_empty() {
        errors.required(&at.child("apiVersions"), "");
    }
    if versions.len() > 1 && wildcard(&versions) {
        errors.invalid(
            &at.child("apiVersions"),
            Shown::StringList(rule.get("apiVersions").unwrap_or(&Value::Null)),
            "if '*' is present, must not specify other API versions",
        );
    }
    for (i, version) in versions.iter().enumerate() {
        if version.is_empty() {
            errors.required(&at.child("apiVersions").index(i), "");
        }
    }
    check_resources(rule, &at.child("resources"), errors);
    if let Some(scope) = rule.get("scope").filter(|s| !s.is_null())
        && !matches!(scope.as_str(), Some("*" | "Cluster" | "Namespaced"))
    {
        errors.not_supported(&at.child("scope"), scope, &["*", "Cluster", "Namespaced"]);
    }
}

/// `validateResources`: subresources allowed, wildcards not mixed with what they cover.
fn check_resources(rule: &Value, at: &FieldPath, errors: &mut Errors) {
    let resources = strings(rule, "resources");
    if resources.is_empty() {
        errors.required(at, "");
    }
    let mut wildcard_subresources = BTreeSet::new();
    let mut wildcard_resources = BTreeSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            errors.required(&at.index(i), "");
            continue;
        }
        double |= entry == "*/*";
        single |= entry == "*";
        let Some((resource, sub)) = entry.split_once('/') else {
            plain = entry != "*";
            continue;
        };
        let shown = Value::from(entry.as_str());
        if wildcard_subresources.contains(resource) {
            errors.invalid(
                &at.index(i),
                Shown::Plain(&shown),
                &format!("if '{resource}/*' is present, must not specify {entry}"),
            );
        }
        if wildcard_resources.contains(sub) {
            errors.invalid(
                &at.index(i),
                Shown::Plain(&shown),
                &format!("if '*/{sub}' is present, must not specify {entry}"),
            );
        }
        if sub == "*" {
            wildcard_subresources.insert(resource.to_owned());
        }
        if resource == "*" {
            wildcard_resources.insert(sub.to_owned());
        }
    }
    let all = rule.get("resources").unwrap_or(&Value::Null);
    if resources.len() > 1 && double {
        errors.invalid(
            at,
            Shown::StringList(all),
            "if '*/*' is present, must not specify other resources",
        );
    }
    if single && plain {
        errors.invalid(
            at,
            Shown::StringList(all),
            "if '*' is present, must not specify other resources without subresources",
        );
    }
}

/// `validateMatchConditions`.
fn check_match_conditions(
    conditions: &[Value],
    at: &FieldPath,
    names: &[&str],
    errors: &mut Errors,
) {
    let release = errors.release();
    if conditions.len() > MOST_MATCH_CONDITIONS {
        errors.too_many(at, conditions.len(), MOST_MATCH_CONDITIONS);
    }
    let mut seen = BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let condition_at = at.index(i);
        let expression = text(condition, "expression").unwrap_or("").trim();
        if expression.is_empty() {
            errors.required(&condition_at.child("expression"), "");
        } else {
            compile(
                expression,
                names,
                BOOL,
                &condition_at.child("expression"),
                errors,
            );
        }
        let name = text(condition, "name").unwrap_or("");
        if name.is_empty() {
            errors.required(&condition_at.child("name"), "");
        } else {
            for message in Format::QualifiedName.messages(name, release) {
                errors.invalid(
                    &condition_at.child("name"),
                    Shown::Plain(&Value::from(name)),
                    &message,
                );
            }
        }
        if !name.is_empty() && !seen.insert(name) {
            errors.duplicate(&condition_at.child("name"), &Value::from(name));
        }
    }
}

/// A binding's causes.
pub(crate) fn check_binding(object: &Value, release: KubeVersion) -> Vec<StatusCause> {
    let mut errors = Errors::new(release);
    let null = Value::Null;
    let spec = object.get("spec").unwrap_or(&null);
    let path = FieldPath::of("spec");
    check_policy_name(spec, &path, &mut errors);
    if let Some(param_ref) = spec.get("paramRef").filter(|p| !p.is_null()) {
        check_param_ref(param_ref, &path.child("paramRef"), &mut errors);
    }
    if let Some(resources) = spec.get("matchResources").filter(|m| !m.is_null()) {
        // Upstream's path has this spelling.
        check_match_resources(resources, &path.child("matchResouces"), &mut errors);
    }
    let at = path.child("validationActions");
    let actions = strings(spec, "validationActions");
    let mut seen = BTreeSet::new();
    for (i, action) in actions.iter().enumerate() {
        if !matches!(action.as_str(), "Audit" | "Deny" | "Warn") {
            errors.not_supported(
                &at.index(i),
                &Value::from(action.as_str()),
                &["Audit", "Deny", "Warn"],
            );
        }
        if !seen.insert(action.as_str()) {
            errors.duplicate(&at.index(i), &Value::from(action.as_str()));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errors.invalid(
            &at,
            Shown::GoSlice(
                "[]admissionregistration.ValidationAction",
                spec.get("validationActions").unwrap_or(&Value::Null),
            ),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        );
    }
    if seen.is_empty() {
        errors.required(&at, "at least one validation action is required");
    }
    errors.into_causes()
}

/// `validateParamRef`.
fn check_param_ref(param_ref: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let name = text(param_ref, "name").unwrap_or("");
    let selector = present(param_ref, "selector");
    if !name.is_empty() {
        for message in Format::PathSegment.messages(name, release) {
            errors.invalid(
                &at.child("name"),
                Shown::Plain(&Value::from(name)),
                &message,
            );
        }
        if selector {
            errors.forbidden(
                &at.child("name"),
                "name and selector are mutually exclusive",
            );
        }
    }
    if selector && !name.is_empty() {
        errors.forbidden(
            &at.child("selector"),
            "name and selector are mutually exclusive",
        );
    }
    if name.is_empty() && !selector {
        errors.required(at, "one of name or selector must be specified");
    }
    match param_ref
        .get("parameterNotFoundAction")
        .filter(|a| a.as_str().is_some_and(|a| !a.is_empty()))
    {
        None => errors.required(&at.child("parameterNotFoundAction"), ""),
        Some(action) if !matches!(action.as_str(), Some("Deny" | "Allow")) => {
            errors.not_supported(
                &at.child("parameterNotFoundAction"),
                action,
                &["Deny", "Allow"],
            );
        }
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests;
