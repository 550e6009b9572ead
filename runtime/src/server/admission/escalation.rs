//! RBAC's escalation prevention, which upstream's policy-based storage of roles and bindings
//! runs before anything else of a write (`pkg/registry/rbac/{role,clusterrole,rolebinding,
//! clusterrolebinding}/policybased/storage.go`, `pkg/registry/rbac/validation/rule.go`): a user
//! may write a Role or ClusterRole only with rules they hold themselves, unless allowed the
//! `escalate` verb on it, and may bind a role only if they hold its rules, unless allowed the
//! `bind` verb on it. A ClusterRole with an `aggregationRule` (before or after the write) takes
//! cluster-admin's rules to write, since it can gather any rule (`clusterrole/policybased`).
//! Members of `system:masters` may do either; an update that changes only what the garbage
//! collector writes (owner references, finalizers) is not checked.

use serde_json::Value;

use crate::server::Call;
use crate::server::auth::attributes::Attributes;
use crate::server::auth::authz::Decision;
use crate::server::auth::rbac::PolicyRule;
use crate::server::auth::user::MASTERS;
use crate::server::http::error::ApiError;
use crate::validation::go_quoted;

const GROUP: &str = "rbac.authorization.k8s.io";

/// Refuses the write of `object` (replacing `old` on an update) when it would grant what the
/// requestor does not hold; 403 with upstream's message.
pub(crate) fn check(call: &Call, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let target = &call.target;
    if target.group() != GROUP || target.sub.is_some() || call.user.in_group(MASTERS) {
        return Ok(());
    }
    let plural = target.plural();
    let role = matches!(plural, "roles" | "clusterroles");
    if !role && !matches!(plural, "rolebindings" | "clusterrolebindings") {
        return Ok(());
    }
    if old.is_some_and(|old| only_gc_fields_differ(old, object)) {
        return Ok(());
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespace = target.namespace.clone().unwrap_or_default();
    let policy = call.state.access.policy();
    let allowed_to = |verb: &str, resource: &str, name: &str| {
        let request = Attributes {
            verb: verb.to_owned(),
            resource_request: true,
            api_group: GROUP.to_owned(),
            namespace: namespace.clone(),
            resource: resource.to_owned(),
            name: name.to_owned(),
            ..Attributes::default()
        };
        matches!(
            call.state.access.decide(&call.user, &request),
            Decision::Allow(_)
        )
    };
    let refused = |message: String| ApiError::forbidden(call.subject(name), &message);
    let granted: Vec<PolicyRule> = if role {
        if allowed_to("escalate", plural, name) {
            return Ok(());
        }
        rules_of(object)
    } else {
        let kind = object.pointer("/roleRef/kind").and_then(Value::as_str);
        let role_name = object
            .pointer("/roleRef/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (resource, in_namespace) = match kind {
            Some("Role") => ("roles", true),
            Some("ClusterRole") => ("clusterroles", false),
            // Validation refuses any other kind.
            _ => return Ok(()),
        };
        if allowed_to("bind", resource, role_name) {
            return Ok(());
        }
        let rules = if in_namespace {
            policy.role(&namespace, role_name)
        } else {
            policy.cluster_role(role_name)
        };
        match rules {
            Some(rules) => rules.to_vec(),
            None => {
                let singular = if in_namespace { "role" } else { "clusterrole" };
                return Err(refused(format!(
                    "{singular}.{GROUP} {role_name:?} not found"
                )));
            }
        }
    };
    let (held, errors) = policy.rules_for(&call.user, &namespace);
    let missing_of = |granted: &[PolicyRule]| -> Vec<PolicyRule> {
        granted
            .iter()
            .flat_map(breakdown)
            .filter(|sub| !held.iter().any(|owner| covers(owner, sub)))
            .collect()
    };
    let missing = missing_of(&granted);
    if missing.is_empty() {
        // An aggregation rule can gather any rule there is, so setting one (or changing a
        // role that has one) takes everything: `*` on `*.*` and on every URL.
        // Upstream's `hasAggregationRule`: a rule with at least one selector.
        let aggregates = |role: &Value| {
            role.pointer("/aggregationRule/clusterRoleSelectors")
                .and_then(Value::as_array)
                .is_some_and(|selectors| !selectors.is_empty())
        };
        if plural == "clusterroles"
            && (aggregates(object) || old.is_some_and(aggregates))
            && !missing_of(&full_authority()).is_empty()
        {
            return Err(refused(
                "must have cluster-admin privileges to use the aggregationRule".to_owned(),
            ));
        }
        return Ok(());
    }
    let mut lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
    lines.sort();
    lines.dedup();
    let mut message = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        call.user.username,
        go_quoted(&call.user.groups),
        lines.join("\n")
    );
    if !errors.is_empty() {
        message.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(refused(message))
}

/// What it takes to write an aggregated ClusterRole (upstream's `fullAuthority`).
fn full_authority() -> Vec<PolicyRule> {
    serde_json::from_value(serde_json::json!([
        {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
        {"verbs": ["*"], "nonResourceURLs": ["*"]},
    ]))
    .unwrap_or_default()
}

fn rules_of(object: &Value) -> Vec<PolicyRule> {
    object
        .get("rules")
        .and_then(|rules| serde_json::from_value(rules.clone()).ok())
        .unwrap_or_default()
}

/// Whether `new` differs from `old` only in what the garbage collector writes (upstream's
/// `IsOnlyMutatingGCFields`), or in what the server writes on every update.
fn only_gc_fields_differ(old: &Value, new: &Value) -> bool {
    let strip = |object: &Value| {
        let mut copy = object.clone();
        if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "ownerReferences",
                "finalizers",
                "managedFields",
                "resourceVersion",
                "generation",
            ] {
                meta.remove(field);
            }
        }
        copy
    };
    strip(old) == strip(new)
}

/// A rule split into one rule per group, resource, verb and name (or URL and verb), as
/// upstream's `BreakdownRule`.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |v: &String| vec![v.clone()];
    let mut subrules = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let names: Vec<Vec<String>> = if rule.resource_names.is_empty() {
                    vec![Vec::new()]
                } else {
                    rule.resource_names.iter().map(one).collect()
                };
                for resource_names in names {
                    subrules.push(PolicyRule {
                        verbs: one(verb),
                        api_groups: one(group),
                        resources: one(resource),
                        resource_names,
                        non_resource_urls: Vec::new(),
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            subrules.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..PolicyRule::default()
            });
        }
    }
    subrules
}

/// Whether `owner` grants all `sub` grants (upstream's `ruleCovers`).
fn covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let has = |set: &[String], value: &str| set.iter().any(|v| v == value);
    let has_all = |set: &[String], values: &[String]| values.iter().all(|v| has(set, v));
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &sub.api_groups);
    let resources = has(&owner.resources, "*")
        || sub.resources.iter().all(|path| {
            has(&owner.resources, path)
                || path
                    .split_once('/')
                    .is_some_and(|(_, sub)| has(&owner.resources, &format!("*/{sub}")))
        });
    let urls = sub.non_resource_urls.iter().all(|path| {
        owner.non_resource_urls.iter().any(|own| {
            own == path
                || own
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
        })
    });
    let names = owner.resource_names.is_empty()
        || (!sub.resource_names.is_empty() && has_all(&owner.resource_names, &sub.resource_names));
    verbs && groups && resources && urls && names
}

/// Rules of one group and one resource (and at most one name) merged when they differ only
/// by verb (upstream's `CompactRules`).
fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty();
        let same = |other: &PolicyRule| {
            other.api_groups == rule.api_groups
                && other.resources == rule.resources
                && other.resource_names == rule.resource_names
                && other.non_resource_urls.is_empty()
        };
        match compacted.iter_mut().find(|other| simple && same(other)) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => compacted.push(rule),
        }
    }
    compacted
}

/// Upstream's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
fn compact_string(rule: &PolicyRule) -> String {
    let parts: Vec<String> = [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ]
    .into_iter()
    .filter(|(_, values)| !values.is_empty())
    .map(|(name, values)| format!("{name}:{}", go_quoted(values)))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(value: Value) -> PolicyRule {
        serde_json::from_value(value).unwrap()
    }

    // Cases of upstream's `TestCoversExactMatch`, `TestCoversSubresourceWildcard`,
    // `TestCoversResourceNameEmpty` and friends (`pkg/registry/rbac/validation/policy_comparator_test.go`).
    #[test]
    fn owners_cover_what_they_hold() {
        let owner = rule(
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"]}),
        );
        let wants = |r: Value| breakdown(&rule(r)).iter().all(|sub| covers(&owner, sub));
        assert!(wants(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})
        ));
        assert!(wants(
            json!({"verbs": ["list"], "apiGroups": [""], "resources": ["deployments/status"]})
        ));
        assert!(!wants(
            json!({"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]})
        ));
        assert!(!wants(
            json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]})
        ));
        assert!(wants(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]})
        ));
        let named = rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}),
        );
        let all = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(
            !covers(&named, &all),
            "a named rule does not cover all names"
        );
        let urls = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}));
        assert!(covers(
            &urls,
            &rule(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/apps"]}))
        ));
        assert!(!covers(
            &urls,
            &rule(json!({"verbs": ["get"], "nonResourceURLs": ["/api"]}))
        ));
    }

    #[test]
    fn missing_rules_are_described_as_upstream() {
        let missing = breakdown(&rule(
            json!({"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"]}),
        ));
        let lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
        assert_eq!(
            lines,
            [r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}"#]
        );
    }
}
