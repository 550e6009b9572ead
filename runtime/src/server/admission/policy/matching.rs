//! Whether a policy's `matchConstraints`, or a binding's `matchResources`, select a request, as
//! upstream's `policy/matching.Matcher.Matches`: the namespace selector, the object selector,
//! none of `excludeResourceRules`, and one of `resourceRules` (all when it lists none) whose
//! `resourceNames`, if any, name the object. The rules and selectors are the webhooks'
//! predicates (`webhook::matching`). Rules match the request's own group and version, and
//! under `matchPolicy: Equivalent` (the default) the same resource served at another version
//! or group, which the policy then sees the request through (`matchesResourceRules`).

use super::config::{MatchResources, NamedRule};
use crate::server::Call;
use crate::server::admission::webhook::Request;
use crate::server::admission::webhook::matching::{
    Matched, match_resource, namespace_selected, object_selected, rule_matches_at,
};
use crate::server::http::error::ApiError;

/// Which resource `resources` (of the policy or binding `owner`, of the plugin whose policy
/// kind is `kind`) select `request` through, if they select it.
pub(super) async fn matches(
    call: &Call,
    resources: &MatchResources,
    request: &Request<'_>,
    kind: &str,
    owner: &str,
) -> Result<Option<Matched>, ApiError> {
    let context = || format!("{kind} {owner:?}");
    if !namespace_selected(
        call,
        resources.namespace_selector.as_ref(),
        request,
        context,
    )
    .await?
        || !object_selected(resources.object_selector.as_ref(), request)
    {
        return Ok(None);
    }
    let equivalent = resources.match_policy.as_deref() != Some("Exact");
    if any_rule(call, &resources.exclude_resource_rules, request, equivalent).is_some() {
        return Ok(None);
    }
    if resources.resource_rules.is_empty() {
        return Ok(Some(Matched::Exact));
    }
    Ok(any_rule(
        call,
        &resources.resource_rules,
        request,
        equivalent,
    ))
}

/// The resource through which one of `rules` selects the request (and, when it names some,
/// its object).
fn any_rule(
    call: &Call,
    rules: &[NamedRule],
    request: &Request<'_>,
    equivalent: bool,
) -> Option<Matched> {
    match_resource(call, equivalent, |at| {
        rules.iter().any(|named| {
            rule_matches_at(call, &named.rule, request, at)
                && (named.resource_names.is_empty()
                    || named.resource_names.iter().any(|n| n == request.name))
        })
    })
}
