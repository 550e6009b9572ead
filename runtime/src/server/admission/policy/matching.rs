//! Whether a policy's `matchConstraints`, or a binding's `matchResources`, select a request, as
//! upstream's `policy/matching.Matcher.Matches`: the namespace selector, the object selector,
//! none of `excludeResourceRules`, and one of `resourceRules` (all when it lists none) whose
//! `resourceNames`, if any, name the object. The rules and selectors are the webhooks'
//! predicates (`webhook::matching`); rules match the request's own group and version
//! (`matchPolicy: Exact`, which is also how `Equivalent` is treated).

use super::config::{MatchResources, NamedRule};
use crate::server::Call;
use crate::server::admission::webhook::Request;
use crate::server::admission::webhook::matching::{
    namespace_selected, object_selected, rule_matches,
};
use crate::server::http::error::ApiError;

/// Whether `resources` (of the policy or binding `owner`, of the plugin whose policy kind is
/// `kind`) select `request`.
pub(super) async fn matches(
    call: &Call,
    resources: &MatchResources,
    request: &Request<'_>,
    kind: &str,
    owner: &str,
) -> Result<bool, ApiError> {
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
        return Ok(false);
    }
    if any_rule(call, &resources.exclude_resource_rules, request) {
        return Ok(false);
    }
    Ok(resources.resource_rules.is_empty() || any_rule(call, &resources.resource_rules, request))
}

/// Whether one of `rules` selects the request (and, when it names some, its object).
fn any_rule(call: &Call, rules: &[NamedRule], request: &Request<'_>) -> bool {
    rules.iter().any(|named| {
        rule_matches(call, &named.rule, request)
            && (named.resource_names.is_empty()
                || named.resource_names.iter().any(|n| n == request.name))
    })
}
