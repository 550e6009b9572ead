//! RBAC rules (`pkg/apis/rbac/validation/validation.go`): a role's policy rules
//! (`ValidatePolicyRule`), a binding's role reference and subjects (`ValidateRoleBinding`,
//! `ValidateClusterRoleBinding`, `ValidateRoleBindingSubject`) and the reference that never
//! changes (`ValidateRoleBindingUpdate`).

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::text;

const GROUP: &str = "rbac.authorization.k8s.io";

fn list_len(holder: &Value, field: &str) -> usize {
    holder
        .get(field)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// `ValidatePolicyRule` for each of a Role's (`namespaced`) or ClusterRole's rules.
pub(super) fn policy_rules(role: &Value, namespaced: bool, at: &FieldPath, errors: &mut Errors) {
    for (i, rule) in role
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = at.child("rules").index(i);
        if list_len(rule, "verbs") == 0 {
            errors.required(
                &path.child("verbs"),
                "verbs must contain at least one value",
            );
        }
        if list_len(rule, "nonResourceURLs") > 0 {
            let urls = rule.get("nonResourceURLs").unwrap_or(&Value::Null);
            let urls_at = path.child("nonResourceURLs");
            if namespaced {
                errors.invalid(
                    &urls_at,
                    Shown::StringList(urls),
                    "namespaced rules cannot apply to non-resource URLs",
                );
            }
            if ["apiGroups", "resources", "resourceNames"]
                .iter()
                .any(|f| list_len(rule, f) > 0)
            {
                errors.invalid(
                    &urls_at,
                    Shown::StringList(urls),
                    "rules cannot apply to both regular resources and non-resource URLs",
                );
            }
            continue;
        }
        if list_len(rule, "apiGroups") == 0 {
            errors.required(
                &path.child("apiGroups"),
                "resource rules must supply at least one api group",
            );
        }
        if list_len(rule, "resources") == 0 {
            errors.required(
                &path.child("resources"),
                "resource rules must supply at least one resource",
            );
        }
    }
}

/// `ValidateClusterRole`'s aggregation rule: at least one selector (the selectors are checked
/// as every label selector is).
pub(super) fn aggregation_rule(role: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(rule) = role.get("aggregationRule").filter(|r| !r.is_null()) else {
        return;
    };
    if list_len(rule, "clusterRoleSelectors") == 0 {
        errors.required(
            &at.child("aggregationRule").child("clusterRoleSelectors"),
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        );
    }
}

/// The internal `rbac.RoleRef` as upstream prints it: Go's `%#v` before 1.34, JSON of the
/// untagged struct after.
fn role_ref_value(role_ref: &Value) -> (String, Value) {
    let (group, kind, name) = (
        text(role_ref, "apiGroup"),
        text(role_ref, "kind"),
        text(role_ref, "name"),
    );
    let go = format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
        Value::from(group),
        Value::from(kind),
        Value::from(name)
    );
    let mut json = serde_json::Map::new();
    json.insert("APIGroup".into(), Value::from(group));
    json.insert("Kind".into(), Value::from(kind));
    json.insert("Name".into(), Value::from(name));
    (go, Value::Object(json))
}

/// `ValidateRoleBinding` (`namespaced`) or `ValidateClusterRoleBinding`, and on an update the
/// unchanged role reference.
pub(super) fn binding(
    binding: &Value,
    old: Option<&Value>,
    namespaced: bool,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let ref_at = at.child("roleRef");
    let group = text(role_ref, "apiGroup");
    if group != GROUP {
        errors.not_supported(&ref_at.child("apiGroup"), &Value::from(group), &[GROUP]);
    }
    let kind = text(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errors.not_supported(&ref_at.child("kind"), &Value::from(kind), kinds);
    }
    let name = text(role_ref, "name");
    if name.is_empty() {
        errors.required(&ref_at.child("name"), "");
    } else {
        for message in Format::PathSegment.messages(name, errors.release()) {
            errors.invalid(
                &ref_at.child("name"),
                Shown::Plain(&Value::from(name)),
                &message,
            );
        }
    }
    for (i, subject) in binding
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        self::subject(subject, namespaced, &at.child("subjects").index(i), errors);
    }
    if let Some(old) = old {
        let old_ref = old.get("roleRef").unwrap_or(&Value::Null);
        let fields = ["apiGroup", "kind", "name"];
        if fields.iter().any(|f| text(old_ref, f) != text(role_ref, f)) {
            let (go, json) = role_ref_value(role_ref);
            errors.invalid(&ref_at, Shown::Go(&go, &json), "cannot change roleRef");
        }
    }
}

/// `ValidateRoleBindingSubject`.
fn subject(subject: &Value, namespaced: bool, at: &FieldPath, errors: &mut Errors) {
    let name = text(subject, "name");
    if name.is_empty() {
        errors.required(&at.child("name"), "");
    }
    let group = text(subject, "apiGroup");
    match text(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                // ValidateServiceAccountName: a DNS subdomain.
                for message in Format::DnsSubdomain.messages(name, errors.release()) {
                    errors.invalid(
                        &at.child("name"),
                        Shown::Plain(&Value::from(name)),
                        &message,
                    );
                }
            }
            if !group.is_empty() {
                errors.not_supported(&at.child("apiGroup"), &Value::from(group), &[""]);
            }
            if !namespaced && text(subject, "namespace").is_empty() {
                errors.required(&at.child("namespace"), "");
            }
        }
        "User" | "Group" => {
            if group != GROUP {
                errors.not_supported(&at.child("apiGroup"), &Value::from(group), &[GROUP]);
            }
        }
        other => errors.not_supported(
            &at.child("kind"),
            &Value::from(other),
            &["ServiceAccount", "User", "Group"],
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    use super::super::lines as messages;

    #[test]
    fn policy_rules_need_verbs_groups_and_resources() {
        // ValidatePolicyRule: non-resource URLs only in ClusterRoles.
        let role = json!({"rules": [
            {"resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
        ]});
        let root = FieldPath::root();
        assert_eq!(
            messages(28, |e| policy_rules(&role, true, &root, e)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[1].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
            ]
        );
        assert_eq!(
            messages(34, |e| policy_rules(&role, false, &root, e)).len(),
            2
        );
        let aggregated = json!({"aggregationRule": {}});
        assert_eq!(
            messages(34, |e| aggregation_rule(&aggregated, &root, e)),
            [
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
            ]
        );
    }

    #[test]
    fn bindings_reference_a_role_that_never_changes() {
        // ValidateClusterRoleBinding, ValidateRoleBindingSubject, ValidateRoleBindingUpdate.
        let old = json!({"roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}});
        let new = json!({
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "edit"},
            "subjects": [{"kind": "ServiceAccount", "name": "default"}, {"kind": "Robot", "name": "r"}]
        });
        let root = FieldPath::root();
        assert_eq!(
            messages(28, |e| binding(&new, Some(&old), false, &root, e)),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
                "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"edit\"}: cannot change roleRef",
            ]
        );
        let changed = messages(34, |e| binding(&new, Some(&old), true, &root, e));
        assert_eq!(
            changed.last().unwrap(),
            "roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"edit\"}: cannot change roleRef"
        );
    }
}
