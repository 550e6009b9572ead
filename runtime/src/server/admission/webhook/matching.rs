//! Whether a webhook is called for a request, as upstream's `ShouldCallHook`
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/generic/webhook.go`): the
//! configuration kinds themselves are exempt; then the `rules`
//! (`predicates/rules/rules.go`: operations, groups, versions, resources with their `*` and
//! `*/sub` forms, scope), the `namespaceSelector` (`predicates/namespace/matcher.go`: never
//! for cluster-scoped objects but namespaces, a namespace's own labels for a namespace), the
//! `objectSelector` (`predicates/object/matcher.go`: the object's or the old object's labels)
//! and the `matchConditions` (CEL over `object`, `oldObject` and `request`; all must hold).
//!
//! Rules match the request's own group, version and resource: `matchPolicy: Exact`'s
//! semantics. `Equivalent`, the v1 default, would also match the same resource requested
//! through another version or group and convert the object; kapi treats it as `Exact`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Request;
use super::config::{GROUP, Webhook};
use crate::cel;
use crate::server::Call;
use crate::server::admission::storage;
use crate::server::http::error::ApiError;

/// The cost one match condition may spend, upstream's per-call limit.
const CONDITION_COST_LIMIT: u64 = cel::PER_CALL_LIMIT;

/// Whether `webhook` is called for `request`: `Ok(false)` to skip it; an error when a match
/// condition fails to evaluate under `failurePolicy: Fail`.
pub(super) async fn should_call(
    call: &Call,
    webhook: &Webhook,
    request: &Request<'_>,
    review: &Value,
) -> Result<bool, ApiError> {
    if exempt(call) || !webhook.rules.iter().any(|r| rule_matches(call, r, request)) {
        return Ok(false);
    }
    if !namespace_matches(call, webhook, request).await? || !object_matches(webhook, request) {
        return Ok(false);
    }
    conditions_hold(call, webhook, request, review)
}

/// Upstream's `IsExemptAdmissionConfigurationResource`: writes of webhook configurations (and
/// of admission policies) never go through webhooks, so a bad webhook cannot lock itself in.
fn exempt(call: &Call) -> bool {
    call.target.group() == GROUP
}

/// The name of the request's subresource, empty for the main resource.
pub(super) fn subresource(call: &Call) -> &'static str {
    use crate::server::http::path::Subresource;
    match call.target.sub {
        None => "",
        Some(Subresource::Status) => "status",
        Some(Subresource::Scale) => "scale",
        Some(Subresource::Finalize) => "finalize",
        Some(Subresource::Token) => "token",
    }
}

fn rule_matches(call: &Call, rule: &super::config::Rule, request: &Request<'_>) -> bool {
    let op = request.operation.as_str();
    let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
    any(&rule.operations, op)
        && any(&rule.api_groups, call.target.group())
        && any(&rule.api_versions, &call.target.kind.info.gvk.version)
        && resource_matches(&rule.resources, call.target.plural(), subresource(call))
        && scope_matches(call, rule.scope.as_deref())
}

/// `rules.go`'s `resource()`: each entry is `resource` or `resource/subresource`, either part
/// `*` for any (so `*` is every main resource, `*/*` everything, `pods/*` pods and all their
/// subresources).
fn resource_matches(resources: &[String], plural: &str, sub: &str) -> bool {
    resources.iter().any(|r| {
        let (res, rsub) = r.split_once('/').unwrap_or((r.as_str(), ""));
        (res == "*" || res == plural) && (rsub == "*" || rsub == sub)
    })
}

/// `rules.go`'s `scope()`: a namespace object counts as cluster-scoped.
fn scope_matches(call: &Call, scope: Option<&str>) -> bool {
    let namespace_object = call.target.group().is_empty() && call.target.plural() == "namespaces";
    let namespaced = call.target.namespace.is_some() && call.info().is_namespaced();
    match scope.unwrap_or("*") {
        "Namespaced" => !namespace_object && namespaced,
        "Cluster" => namespace_object || !namespaced,
        _ => true,
    }
}

fn labels_of(object: Option<&Value>) -> BTreeMap<String, String> {
    object
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

async fn namespace_matches(
    call: &Call,
    webhook: &Webhook,
    request: &Request<'_>,
) -> Result<bool, ApiError> {
    let Some(selector) = webhook
        .namespace_selector
        .as_ref()
        .filter(|s| !s.is_empty())
    else {
        return Ok(true);
    };
    let namespace_object = call.target.group().is_empty() && call.target.plural() == "namespaces";
    let labels = if namespace_object {
        // A namespace's own labels; a delete's come from the old object.
        labels_of(request.object.or(request.old))
    } else {
        match call.target.namespace.as_deref() {
            Some(ns) if call.info().is_namespaced() => {
                let stored = storage::read(call, "", "namespaces", None, ns).await?;
                labels_of(stored.as_ref())
            }
            // Cluster-scoped objects are never skipped by a namespace selector.
            _ => return Ok(true),
        }
    };
    selector
        .matches(&labels)
        .map_err(|e| ApiError::internal(format!("webhook {:?}: {e}", webhook.name)))
}

fn object_matches(webhook: &Webhook, request: &Request<'_>) -> bool {
    let Some(selector) = webhook.object_selector.as_ref().filter(|s| !s.is_empty()) else {
        return true;
    };
    [request.object, request.old]
        .into_iter()
        .flatten()
        .any(|o| selector.matches(&labels_of(Some(o))).unwrap_or(false))
}

/// Every match condition must hold, as upstream's `matchconditions.Matcher`: one that is false
/// skips the webhook; one that fails to evaluate (when none is false) skips it under
/// `failurePolicy: Ignore` and refuses the request under `Fail`, with a 403 naming every
/// failure (`expression '<expression>' resulted in error: <error>`, several as Go's error
/// aggregate prints them).
fn conditions_hold(
    call: &Call,
    webhook: &Webhook,
    request: &Request<'_>,
    review: &Value,
) -> Result<bool, ApiError> {
    if webhook.match_conditions.is_empty() {
        return Ok(true);
    }
    let null = Value::Null;
    let variables = [
        (
            "object",
            cel::value::untyped(request.object.unwrap_or(&null)),
        ),
        (
            "oldObject",
            cel::value::untyped(request.old.unwrap_or(&null)),
        ),
        ("request", cel::value::untyped(review)),
    ];
    let names = ["object", "oldObject", "request"];
    let mut errors = Vec::new();
    for condition in &webhook.match_conditions {
        let outcome = cel::compile(&condition.expression, &names)
            .map_err(|e| e.to_string())
            .and_then(
                |program| match program.evaluate(&variables, CONDITION_COST_LIMIT).result {
                    Ok(::cel::Value::Bool(b)) => Ok(b),
                    Ok(_) => Err("expression must evaluate to a bool".to_owned()),
                    Err(cel::EvalError::CostLimit) => {
                        Err("operation cancelled: actual cost limit exceeded".to_owned())
                    }
                    Err(cel::EvalError::Failed(e)) => Err(e),
                },
            );
        match outcome {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => errors.push(format!(
                "expression '{}' resulted in error: {e}",
                condition.expression
            )),
        }
    }
    match errors.as_slice() {
        [] => Ok(true),
        _ if webhook.ignores_failures() => Ok(false),
        [one] => Err(crate::server::admission::forbidden(call, request.name, one)),
        many => Err(crate::server::admission::forbidden(
            call,
            request.name,
            &format!("[{}]", many.join(", ")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::resource_matches;

    fn rs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn webhook_resources_match_as_upstreams_rules() {
        assert!(resource_matches(&rs(&["*/*"]), "pods", "status"));
        assert!(resource_matches(&rs(&["*"]), "pods", ""));
        assert!(!resource_matches(&rs(&["*"]), "pods", "status"));
        assert!(resource_matches(&rs(&["pods/*"]), "pods", "status"));
        assert!(resource_matches(&rs(&["pods/*"]), "pods", ""));
        assert!(!resource_matches(&rs(&["pods/*"]), "services", ""));
        assert!(resource_matches(
            &rs(&["*/status"]),
            "deployments",
            "status"
        ));
        assert!(resource_matches(&rs(&["pods/status"]), "pods", "status"));
        assert!(!resource_matches(&rs(&["pods"]), "pods", "status"));
        assert!(resource_matches(&rs(&["configmaps", "pods"]), "pods", ""));
    }
}
