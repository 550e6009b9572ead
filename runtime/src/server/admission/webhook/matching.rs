//! Whether a webhook is called for a request, as upstream's `ShouldCallHook`
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/generic/webhook.go`): the
//! configuration kinds themselves are exempt; then the `rules`
//! (`predicates/rules/rules.go`: operations, groups, versions, resources with their `*` and
//! `*/sub` forms, scope), the `namespaceSelector` (`predicates/namespace/matcher.go`: never
//! for cluster-scoped objects but namespaces, a namespace's own labels for a namespace), the
//! `objectSelector` (`predicates/object/matcher.go`: the object's or the old object's labels)
//! and the `matchConditions` (CEL over `object`, `oldObject`, `request` and `authorizer`; all
//! must hold).
//!
//! The rules, selectors and match conditions are shared with the admission policies
//! (`admission::policy`), which upstream matches with the same predicates.
//!
//! Rules match the request's own group, version and resource first; under `matchPolicy:
//! Equivalent` (v1's default) a webhook whose rules name none of it is still called when they
//! name the same resource served at another version or group (`EquivalentResourcesFor`: a
//! built-in family's members, a CRD's other versions), and then sees the request as made there,
//! its objects converted ([`Matched::Equivalent`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::Request;
use super::config::{GROUP, Webhook};
use crate::ResourceInfo;
use crate::cel;
use crate::meta::LabelSelector;
use crate::server::Call;
use crate::server::admission::authorizer::AUTHORIZER;
use crate::server::admission::storage;
use crate::server::http::error::ApiError;

/// The cost one match condition may spend, upstream's per-call limit.
const CONDITION_COST_LIMIT: u64 = cel::PER_CALL_LIMIT;

/// The resource a webhook's rules matched.
pub(in crate::server::admission) enum Matched {
    /// The request's own.
    Exact,
    /// The same resource served at another version or group, which the webhook is called
    /// for instead.
    Equivalent(Arc<ResourceInfo>),
}

/// Which resource `webhook`'s rules match for `request`, if any (`ShouldCallHook`'s rule
/// check, then its walk of the equivalent resources).
pub(super) fn matched(call: &Call, webhook: &Webhook, request: &Request<'_>) -> Option<Matched> {
    if exempt(call) {
        return None;
    }
    match_resource(call, webhook.matches_equivalents(), |at| {
        webhook
            .rules
            .iter()
            .any(|r| rule_matches_at(call, r, request, at))
    })
}

/// The resource `rules_match` accepts: the request's own, else, with `equivalent`
/// (`matchPolicy: Equivalent`), the first of its equivalents.
pub(in crate::server::admission) fn match_resource(
    call: &Call,
    equivalent: bool,
    rules_match: impl Fn(&ResourceInfo) -> bool,
) -> Option<Matched> {
    if rules_match(call.info()) {
        return Some(Matched::Exact);
    }
    if !equivalent {
        return None;
    }
    equivalents(call)
        .into_iter()
        .find(|info| rules_match(info))
        .map(Matched::Equivalent)
}

/// The other versions and groups the call's resource is served at, as upstream's
/// `EquivalentResourcesFor`: the members of a built-in's family (the stored version first),
/// else the other versions of the same group and resource (a CRD's, or a kind registered in
/// several versions).
fn equivalents(call: &Call) -> Vec<Arc<ResourceInfo>> {
    let info = call.info();
    let other = |kind: &&crate::registry::RegisteredKind| kind.info.gvk != info.gvk;
    match info.family {
        Some(family) => std::iter::once(family.storage)
            .chain(family.versions.iter().map(|v| v.api_version))
            .filter_map(|api_version| {
                let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
                call.registry.get(group, version, family.resource)
            })
            .filter(other)
            .map(|kind| Arc::clone(&kind.info))
            .collect(),
        None => call
            .registry
            .kinds()
            .filter(|kind| kind.info.gvk.group == info.gvk.group && kind.info.plural == info.plural)
            .filter(other)
            .map(|kind| Arc::clone(&kind.info))
            .collect(),
    }
}

/// Whether `webhook`'s selectors and match conditions let it be called for `request` (as the
/// webhook sees it, with `review` its AdmissionReview request): `Ok(false)` to skip it; an
/// error when a match condition fails to evaluate under `failurePolicy: Fail`.
pub(super) async fn selected(
    call: &Call,
    webhook: &Webhook,
    request: &Request<'_>,
    review: &Value,
) -> Result<bool, ApiError> {
    let context = || format!("webhook {:?}", webhook.name);
    if !namespace_selected(call, webhook.namespace_selector.as_ref(), request, context).await?
        || !object_selected(webhook.object_selector.as_ref(), request)
    {
        return Ok(false);
    }
    conditions_hold(call, webhook, request, review)
}

/// Upstream's `IsExemptAdmissionConfigurationResource`: writes of webhook configurations and
/// admission policies never go through webhooks or policies, so a bad one cannot lock itself
/// in.
pub(in crate::server::admission) fn exempt(call: &Call) -> bool {
    call.target.group() == GROUP
}

/// The name of the request's subresource, empty for the main resource.
pub(in crate::server::admission) fn subresource(call: &Call) -> &'static str {
    call.target.sub.map_or("", |sub| sub.name())
}

/// Whether `rule` names the request's operation, subresource and scope, and the group,
/// version and resource of `at`, the request's resource or an equivalent of it
/// (`rules.Matcher`).
pub(in crate::server::admission) fn rule_matches_at(
    call: &Call,
    rule: &super::config::Rule,
    request: &Request<'_>,
    at: &ResourceInfo,
) -> bool {
    let op = request.operation.as_str();
    let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
    any(&rule.operations, op)
        && any(&rule.api_groups, &at.gvk.group)
        && any(&rule.api_versions, &at.gvk.version)
        && resource_matches(&rule.resources, &at.plural, subresource(call))
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

/// Whether the request writes a Namespace object itself.
pub(in crate::server::admission) fn is_namespace_object(call: &Call) -> bool {
    call.target.group().is_empty() && call.target.plural() == "namespaces"
}

/// `rules.go`'s `scope()`: a namespace object counts as cluster-scoped.
fn scope_matches(call: &Call, scope: Option<&str>) -> bool {
    let namespace_object = is_namespace_object(call);
    let namespaced = call.target.namespace.is_some() && call.info().is_namespaced();
    match scope.unwrap_or("*") {
        "Namespaced" => !namespace_object && namespaced,
        "Cluster" => namespace_object || !namespaced,
        _ => true,
    }
}

pub(in crate::server::admission) fn labels_of(object: Option<&Value>) -> BTreeMap<String, String> {
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

/// The namespace a namespaced request writes in, read from the store (`None` for a
/// cluster-scoped resource, a Namespace itself included, or a namespace not stored).
pub(in crate::server::admission) async fn namespace_of(
    call: &Call,
) -> Result<Option<Value>, ApiError> {
    match call.target.namespace.as_deref() {
        Some(ns) if call.info().is_namespaced() && !is_namespace_object(call) => {
            storage::read(call, "", "namespaces", None, ns).await
        }
        _ => Ok(None),
    }
}

/// The `namespaceSelector` predicate (`predicates/namespace/matcher.go`): an absent or empty
/// selector matches everything; a namespace is matched by its own labels (a delete's from the
/// old object); cluster-scoped objects are never skipped. `context` names the configuration in
/// the error of a selector that does not parse.
pub(in crate::server::admission) async fn namespace_selected(
    call: &Call,
    selector: Option<&LabelSelector>,
    request: &Request<'_>,
    context: impl FnOnce() -> String,
) -> Result<bool, ApiError> {
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return Ok(true);
    };
    let labels = if is_namespace_object(call) {
        labels_of(request.object.or(request.old))
    } else if call.target.namespace.is_some() && call.info().is_namespaced() {
        labels_of(namespace_of(call).await?.as_ref())
    } else {
        return Ok(true);
    };
    selector
        .matches(&labels)
        .map_err(|e| ApiError::internal(format!("{}: {e}", context())))
}

/// The `objectSelector` predicate (`predicates/object/matcher.go`): the object's or the old
/// object's labels.
pub(in crate::server::admission) fn object_selected(
    selector: Option<&LabelSelector>,
    request: &Request<'_>,
) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_empty()) else {
        return true;
    };
    [request.object, request.old]
        .into_iter()
        .flatten()
        .any(|o| selector.matches(&labels_of(Some(o))).unwrap_or(false))
}

/// Every match condition must hold, as upstream's `matchconditions.Matcher`: one that is
/// false skips the webhook; one that fails to evaluate (when none is false) skips it under
/// `failurePolicy: Ignore` and refuses the request under `Fail`, with a 403 naming every
/// failure.
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
    let mut variables = vec![
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
    variables.extend(crate::server::admission::authorizer::variables(
        call,
        request.name,
    ));
    let expressions = webhook
        .match_conditions
        .iter()
        .map(|c| c.expression.as_str());
    match conditions(
        expressions,
        &cel::Activation::new(&variables),
        &["object", "oldObject", "request", AUTHORIZER],
    ) {
        Ok(holds) => Ok(holds),
        Err(_) if webhook.ignores_failures() => Ok(false),
        Err(message) => Err(crate::server::admission::forbidden(
            call,
            request.name,
            &message,
        )),
    }
}

/// Evaluates match conditions over `activation` (where `names` are declared), as upstream's
/// `matchconditions.Matcher`: `Ok(false)` as soon as one is false, `Ok(true)` when all hold,
/// else the failures (`expression '<expression>' resulted in error: <error>`, several as Go's
/// error aggregate prints them).
pub(in crate::server::admission) fn conditions<'a>(
    expressions: impl Iterator<Item = &'a str>,
    activation: &cel::Activation,
    names: &[&str],
) -> Result<bool, String> {
    let mut errors = Vec::new();
    for expression in expressions {
        let outcome = cel::compile_shared(expression, names)
            .map_err(|e| e.to_string())
            .and_then(|program| {
                match program.evaluate_in(activation, CONDITION_COST_LIMIT).result {
                    Ok(::cel::Value::Bool(b)) => Ok(b),
                    Ok(_) => Err("expression must evaluate to a bool".to_owned()),
                    Err(cel::EvalError::CostLimit) => {
                        Err("operation cancelled: actual cost limit exceeded".to_owned())
                    }
                    Err(cel::EvalError::Failed(e)) => Err(e),
                }
            });
        match outcome {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => errors.push(format!("expression '{expression}' resulted in error: {e}")),
        }
    }
    match errors.as_slice() {
        [] => Ok(true),
        [one] => Err(one.clone()),
        many => Err(format!("[{}]", many.join(", "))),
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
