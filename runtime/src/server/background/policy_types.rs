//! The type checking of a ValidatingAdmissionPolicy's expressions, for its
//! `status.typeChecking.expressionWarnings`, as upstream's type-checking controller does it:
//! every kind the policy's `matchConstraints.resourceRules` name exactly (no wildcard group,
//! version or resource, no subresource; at most ten kinds, sorted by group, version and kind)
//! whose schema the server has, `object` and `oldObject` typed by that schema and `params` by
//! the `paramKind`'s (undeclared when it has none the server knows), each validation's
//! `expression` and `messageExpression` checked once per kind. A problem is a warning at the
//! expression's field: `<group>/<version>, Kind=<Kind>: <cel-go's error text>` and a line
//! break, one such part per kind joined by line breaks. Warnings never change what the policy
//! does.
//!
//! `request` and `namespaceObject` have upstream's hand-written declarations and
//! `authorizer` (with `authorizer.requestResource`) the authz library's types
//! (`cel::admission`).
//!
//! Upstream: `apiserver/pkg/admission/plugin/policy/validating/typechecking.go`
//! (`TypeChecker.Check`, `typesToCheck`, `maxTypesToCheck`, `TypeCheckingResult.String`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::cel::types::{Decl, Shape, inline_refs};
use crate::cel::{Type, Variable, admission, compile_typed};
use crate::schema::JSONSchemaProps;
use crate::{GroupVersionKind, Registry};

/// The most kinds one policy is checked against (`maxTypesToCheck`).
const MOST_KINDS: usize = 10;

/// How many levels of `$ref` a built-in kind's schema is followed.
const REF_DEPTH: usize = 16;

/// The warnings of `policy`'s expressions, as `{fieldRef, warning}` objects.
pub(crate) fn warnings(registry: &Registry, policy: &Value) -> Vec<Value> {
    let kinds: Vec<(GroupVersionKind, Arc<Decl>)> = kinds_to_check(registry, policy)
        .into_iter()
        .filter_map(|gvk| Some((gvk.clone(), declaration(registry, &gvk)?)))
        .collect();
    if kinds.is_empty() {
        return Vec::new();
    }
    let params = policy
        .pointer("/spec/paramKind")
        .and_then(param_kind)
        .and_then(|gvk| declaration(registry, &gvk));
    let variables: Vec<(String, String)> = policy
        .pointer("/spec/variables")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|v| {
                    let text = |key: &str| {
                        v.get(key)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    (text("name"), text("expression"))
                })
                .collect()
        })
        .unwrap_or_default();
    let environments: Vec<(String, Vec<Variable>)> = kinds
        .iter()
        .map(|(gvk, object)| {
            (
                format!("{}/{}, Kind={}", gvk.group, gvk.version, gvk.kind),
                environment(object, params.as_ref(), &variables),
            )
        })
        .collect();
    let mut out = Vec::new();
    let validations = policy
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, validation) in validations.iter().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(source) = validation.get(field).and_then(Value::as_str) else {
                continue;
            };
            if source.is_empty() {
                continue;
            }
            let parts: Vec<String> = environments
                .iter()
                .filter_map(|(gvk, variables)| {
                    compile_typed(source, variables)
                        .err()
                        .map(|e| format!("{gvk}: {e}\n"))
                })
                .collect();
            if !parts.is_empty() {
                out.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": parts.join("\n"),
                }));
            }
        }
    }
    out
}

/// The variables a policy's expressions see when `object` is of the kind `object` declares:
/// its `variables` typed by their own expressions, in order.
fn environment(
    object: &Arc<Decl>,
    params: Option<&Arc<Decl>>,
    variables: &[(String, String)],
) -> Vec<Variable> {
    let mut base = vec![
        Variable::declared("object", Arc::clone(object)),
        Variable::declared("oldObject", Arc::clone(object)),
        admission::variable("request"),
        admission::variable("namespaceObject"),
    ];
    base.extend(admission::variables(&["authorizer"]));
    if let Some(params) = params {
        base.push(Variable::declared("params", Arc::clone(params)));
    }
    let mut fields: BTreeMap<String, Arc<Decl>> = BTreeMap::new();
    for (name, expression) in variables {
        let mut scope = base.clone();
        scope.push(Variable::declared("variables", variables_decl(&fields)));
        let result = compile_typed(expression, &scope)
            .map(|p| p.result_type().clone())
            .unwrap_or(Type::Dyn);
        fields.insert(name.clone(), Arc::new(Decl::typed(result)));
    }
    base.push(Variable::declared("variables", variables_decl(&fields)));
    base
}

/// The `variables` object: the variables compiled so far, any other name dyn.
fn variables_decl(fields: &BTreeMap<String, Arc<Decl>>) -> Arc<Decl> {
    Arc::new(Decl {
        name: "kubernetes.variables".to_owned(),
        shape: Shape::Object {
            fields: fields.clone(),
            open: true,
        },
        max_elements: 0,
        min_size: 2,
    })
}

/// The group, version and kind `paramKind` names.
fn param_kind(param_kind: &Value) -> Option<GroupVersionKind> {
    let api_version = param_kind.get("apiVersion")?.as_str()?;
    let kind = param_kind.get("kind")?.as_str()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Some(GroupVersionKind {
        group: group.to_owned().into(),
        version: version.to_owned().into(),
        kind: kind.to_owned().into(),
    })
}

/// The kinds `policy`'s resource rules name exactly, sorted (`typesToCheck`).
fn kinds_to_check(registry: &Registry, policy: &Value) -> Vec<GroupVersionKind> {
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let strings = |rule: &Value, key: &str| -> Vec<String> {
        rule.get(key)
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut found: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut count = 0;
    for rule in &rules {
        let groups = strings(rule, "apiGroups");
        let versions = strings(rule, "apiVersions");
        // A wildcard group or version gives the rule up; a wildcard resource or a
        // subresource only skips that resource.
        if groups.iter().chain(&versions).any(|s| s.contains('*')) {
            continue;
        }
        let mut resources: Vec<String> = strings(rule, "resources")
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        let (mut groups, mut versions) = (groups, versions);
        groups.sort();
        versions.sort();
        resources.sort();
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let Some(kind) = registry.get(group, version, resource) else {
                        continue;
                    };
                    let gvk = &kind.info.gvk;
                    found.insert((
                        gvk.group.to_string(),
                        gvk.version.to_string(),
                        gvk.kind.to_string(),
                    ));
                    count += 1;
                    if count == MOST_KINDS {
                        return to_gvks(found);
                    }
                }
            }
        }
    }
    to_gvks(found)
}

fn to_gvks(found: BTreeSet<(String, String, String)>) -> Vec<GroupVersionKind> {
    found
        .into_iter()
        .map(|(group, version, kind)| GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        })
        .collect()
}

/// What the server's schema of `gvk` declares of its objects: the schema the kind was
/// registered with (a CRD version's), else its published definition.
fn declaration(registry: &Registry, gvk: &GroupVersionKind) -> Option<Arc<Decl>> {
    let registered = registry
        .kinds()
        .find(|k| &k.info.gvk == gvk)
        .and_then(|k| k.schema.as_ref())
        .map(|source| source());
    let schema: JSONSchemaProps = match registered.flatten() {
        Some(schema) => JSONSchemaProps::clone(&schema),
        None => {
            let (_, definition) = registry.definition_of(gvk)?;
            let lookup = |name: &str| registry.definition(name).cloned();
            serde_json::from_value(inline_refs(definition, &lookup, REF_DEPTH)).ok()?
        }
    };
    Some(Decl::of_schema(&schema, true, &gvk.kind))
}
