//! Role-based access control as upstream's RBAC authorizer decides it
//! (`plugin/pkg/auth/authorizer/rbac/rbac.go`, the rule matching of
//! `pkg/apis/rbac/v1/evaluation_helpers.go`): a request is allowed when a rule of a role bound
//! to its user (by name, group or service account) allows its verb on its resource or path.
//! Cluster roles bound by ClusterRoleBindings apply everywhere; Roles and ClusterRoles bound by
//! RoleBindings in the request's namespace apply there.
//!
//! [`Policy`] is the stored Roles, ClusterRoles and bindings, indexed: the `rbac` background
//! task rebuilds it whenever one of them changes, so a request reads no storage.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::server::auth::attributes::Attributes;
use crate::server::auth::user::{User, service_account_of};

/// `"*"` in a rule's verbs, groups, resources or URLs.
const ALL: &str = "*";

/// One rule of a role, as `rbac.authorization.k8s.io/v1` spells it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PolicyRule {
    #[serde(default)]
    pub(crate) verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) api_groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) resources: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub(crate) non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Whether the rule allows the request (`RuleAllows`).
    pub(crate) fn allows(&self, request: &Attributes) -> bool {
        let verb = has(&self.verbs, &request.verb);
        if !request.resource_request {
            return verb && self.non_resource_url_matches(&request.path);
        }
        let combined = if request.subresource.is_empty() {
            request.resource.clone()
        } else {
            format!("{}/{}", request.resource, request.subresource)
        };
        verb && has(&self.api_groups, &request.api_group)
            && self.resource_matches(&combined, &request.subresource)
            && (self.resource_names.is_empty() || self.resource_names.contains(&request.name))
    }

    /// `*`, the resource (with its subresource), or `*/<subresource>`.
    fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == ALL
                || r == combined
                || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
        })
    }

    /// `*`, the path, or a prefix of it ending in `*`.
    fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|url| {
            url == ALL
                || url == path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    }
}

/// Whether `values` holds `value` or `*`.
fn has(values: &[String], value: &str) -> bool {
    values.iter().any(|v| v == ALL || v == value)
}

/// Whom a binding grants its role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Subject {
    pub(crate) kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) api_group: String,
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) namespace: String,
}

impl Subject {
    /// Whether the subject is `user`; a service account without a namespace takes the
    /// binding's (`binding_namespace`, empty for a ClusterRoleBinding, where it is nobody).
    fn is(&self, user: &User, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.username == self.name,
            "Group" => user.in_group(&self.name),
            "ServiceAccount" => {
                let namespace = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !namespace.is_empty()
                    && service_account_of(&user.username) == Some((namespace, self.name.as_str()))
            }
            _ => false,
        }
    }
}

/// The role a binding grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RoleRef {
    #[serde(default)]
    pub(crate) api_group: String,
    pub(crate) kind: String,
    pub(crate) name: String,
}

/// A stored RoleBinding or ClusterRoleBinding, as far as authorization reads it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Binding {
    #[serde(default)]
    pub(crate) metadata: Named,
    pub(crate) role_ref: RoleRef,
    #[serde(default)]
    pub(crate) subjects: Vec<Subject>,
}

/// A stored Role or ClusterRole, as far as authorization reads it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Role {
    #[serde(default)]
    pub(crate) metadata: Named,
    #[serde(default)]
    pub(crate) rules: Vec<PolicyRule>,
}

/// The name and namespace of a stored object.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Named {
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) namespace: String,
}

/// Where a rule comes from, as upstream's authorizer names it when it allows a request:
/// `ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`, or for a RoleBinding
/// `RoleBinding "b/namespace" of Role "r" to User "u"`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    binding: &'a Binding,
    subject: &'a Subject,
    /// The binding's namespace; empty for a ClusterRoleBinding.
    namespace: &'a str,
}

impl std::fmt::Display for Source<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let role = &self.binding.role_ref;
        let subject = self.subject;
        let who = if subject.kind == "ServiceAccount" {
            let namespace = if subject.namespace.is_empty() {
                self.namespace
            } else {
                &subject.namespace
            };
            format!("{}/{namespace}", subject.name)
        } else {
            subject.name.clone()
        };
        let name = &self.binding.metadata.name;
        if self.namespace.is_empty() {
            write!(f, "ClusterRoleBinding {name:?}")?;
        } else {
            write!(f, "RoleBinding {:?}", format!("{name}/{}", self.namespace))?;
        }
        write!(
            f,
            " of {} {:?} to {} {who:?}",
            role.kind, role.name, subject.kind
        )
    }
}

/// Every stored Role, ClusterRole and binding, indexed for authorization.
#[derive(Debug, Default)]
pub(crate) struct Policy {
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    /// By namespace, then name.
    roles: HashMap<String, HashMap<String, Vec<PolicyRule>>>,
    cluster_role_bindings: Vec<Binding>,
    /// By namespace.
    role_bindings: HashMap<String, Vec<Binding>>,
}

/// Stored objects of the four RBAC resources, as JSON.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    pub(crate) cluster_roles: Vec<Value>,
    pub(crate) roles: Vec<Value>,
    pub(crate) cluster_role_bindings: Vec<Value>,
    pub(crate) role_bindings: Vec<Value>,
}

/// A role a binding names that does not exist, in upstream's words.
fn missing(kind: &str, name: &str) -> String {
    let resource = if kind == "Role" {
        "role"
    } else {
        "clusterrole"
    };
    format!("{resource}.rbac.authorization.k8s.io {name:?} not found")
}

impl Policy {
    /// The policy of `stored`; objects that do not decode are left out (and logged).
    pub(crate) fn new(stored: Stored) -> Self {
        fn decode<T: serde::de::DeserializeOwned>(values: Vec<Value>) -> Vec<T> {
            values
                .into_iter()
                .filter_map(|value| match serde_json::from_value(value) {
                    Ok(decoded) => Some(decoded),
                    Err(error) => {
                        tracing::warn!(%error, "an RBAC object does not decode; it grants nothing");
                        None
                    }
                })
                .collect()
        }
        let mut policy = Self::default();
        for role in decode::<Role>(stored.cluster_roles) {
            policy.cluster_roles.insert(role.metadata.name, role.rules);
        }
        for role in decode::<Role>(stored.roles) {
            policy
                .roles
                .entry(role.metadata.namespace)
                .or_default()
                .insert(role.metadata.name, role.rules);
        }
        policy.cluster_role_bindings = decode(stored.cluster_role_bindings);
        for binding in decode::<Binding>(stored.role_bindings) {
            policy
                .role_bindings
                .entry(binding.metadata.namespace.clone())
                .or_default()
                .push(binding);
        }
        policy
    }

    /// The rules of the role `role_ref` names, from a binding in `namespace` ("" for a
    /// ClusterRoleBinding).
    fn rules_of(&self, role_ref: &RoleRef, namespace: &str) -> Result<&[PolicyRule], String> {
        let found = match role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&role_ref.name),
            "Role" if !namespace.is_empty() => self
                .roles
                .get(namespace)
                .and_then(|roles| roles.get(&role_ref.name)),
            _ => None,
        };
        found
            .map(Vec::as_slice)
            .ok_or_else(|| missing(&role_ref.kind, &role_ref.name))
    }

    /// Calls `visit` with every rule that applies to `user` in `namespace` ("" for the
    /// cluster scope), cluster-wide ones first, and with where it comes from, until it answers
    /// `false`; answers the errors met on the way (bindings to missing roles).
    pub(crate) fn visit_rules(
        &self,
        user: &User,
        namespace: &str,
        mut visit: impl FnMut(&PolicyRule, Source<'_>) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let scopes = std::iter::once(("", &self.cluster_role_bindings)).chain(
            (!namespace.is_empty())
                .then(|| self.role_bindings.get(namespace).map(|b| (namespace, b)))
                .flatten(),
        );
        for (scope, bindings) in scopes {
            for binding in bindings {
                let Some(subject) = binding.subjects.iter().find(|s| s.is(user, scope)) else {
                    continue;
                };
                match self.rules_of(&binding.role_ref, scope) {
                    Ok(rules) => {
                        let source = Source {
                            binding,
                            subject,
                            namespace: scope,
                        };
                        for rule in rules {
                            if !visit(rule, source) {
                                return errors;
                            }
                        }
                    }
                    Err(error) => errors.push(error),
                }
            }
        }
        errors
    }

    /// Whether a rule allows `request` by `user`: upstream's reason naming the binding that
    /// allows it, or when none does, the reason upstream gives (empty unless bindings name
    /// missing roles).
    pub(crate) fn authorize(&self, user: &User, request: &Attributes) -> Result<String, String> {
        let mut allowed_by = None;
        let errors = self.visit_rules(user, &request.namespace, |rule, source| {
            if rule.allows(request) {
                allowed_by = Some(format!("RBAC: allowed by {source}"));
                return false;
            }
            true
        });
        if let Some(reason) = allowed_by {
            return Ok(reason);
        }
        Err(match errors.as_slice() {
            [] => String::new(),
            [one] => format!("RBAC: {one}"),
            many => format!("RBAC: [{}]", many.join(", ")),
        })
    }

    /// The rules of the cluster role `name`, if stored.
    pub(crate) fn cluster_role(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_roles.get(name).map(Vec::as_slice)
    }

    /// The rules of the role `name` in `namespace`, if stored.
    pub(crate) fn role(&self, namespace: &str, name: &str) -> Option<&[PolicyRule]> {
        self.roles.get(namespace)?.get(name).map(Vec::as_slice)
    }

    /// Every rule that applies to `user` in `namespace`, and whether some could not be read
    /// (bindings to missing roles): what `SelfSubjectRulesReview` answers.
    pub(crate) fn rules_for(&self, user: &User, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let errors = self.visit_rules(user, namespace, |rule, _| {
            rules.push(rule.clone());
            true
        });
        (rules, errors)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use axum::http::Method;

    fn request(method: Method, uri: &str) -> Attributes {
        Attributes::of(&method, &uri.parse().unwrap())
    }

    fn rule(value: Value) -> PolicyRule {
        serde_json::from_value(value).unwrap()
    }

    // Upstream's `TestRuleMatches` cases
    // (`plugin/pkg/auth/authorizer/rbac/rbac_test.go`, `pkg/apis/rbac/v1/evaluation_helpers.go`).
    #[test]
    fn rules_match_as_upstream() {
        let pods = request(Method::GET, "/api/v1/namespaces/a/pods/web");
        let star = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        assert!(star.allows(&pods));
        let get_pods = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(get_pods.allows(&pods));
        assert!(!get_pods.allows(&request(Method::DELETE, "/api/v1/namespaces/a/pods/web")));
        let apps = rule(json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}));
        assert!(!apps.allows(&pods));
        let named = rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["db"]}),
        );
        assert!(!named.allows(&pods));
        let log = request(Method::GET, "/api/v1/namespaces/a/pods/web/log");
        assert!(!get_pods.allows(&log), "a subresource needs its own rule");
        let any_log = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["*/log"]}));
        assert!(any_log.allows(&log));
        assert!(!any_log.allows(&pods));
        let pod_log = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}));
        assert!(pod_log.allows(&log));
        let health = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}));
        assert!(health.allows(&request(Method::GET, "/healthz")));
        assert!(health.allows(&request(Method::GET, "/apis/apps/v1")));
        assert!(!health.allows(&request(Method::GET, "/healthz/ping")));
        assert!(!health.allows(&pods), "URL rules never match resources");
        assert!(!get_pods.allows(&request(Method::GET, "/healthz")));
    }

    fn policy() -> Policy {
        Policy::new(Stored {
            cluster_roles: vec![json!({"metadata": {"name": "view"}, "rules": [
                    {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]})],
            roles: vec![
                json!({"metadata": {"name": "editor", "namespace": "a"}, "rules": [
                {"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"]}]}),
            ],
            cluster_role_bindings: vec![json!({
                "metadata": {"name": "viewers"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "viewers"}]})],
            role_bindings: vec![
                json!({"metadata": {"name": "edit", "namespace": "a"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "editor"},
                    "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
                                 {"kind": "ServiceAccount", "name": "builder"}]}),
                json!({"metadata": {"name": "gone", "namespace": "a"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "missing"},
                    "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]}),
            ],
        })
    }

    #[test]
    fn bindings_grant_their_roles_to_their_subjects() {
        let policy = policy();
        let viewer = User::new("carol", &["viewers"]);
        let list_b = request(Method::GET, "/api/v1/namespaces/b/pods");
        assert_eq!(
            policy.authorize(&viewer, &list_b).as_deref(),
            Ok(
                r#"RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view" to Group "viewers""#
            )
        );
        let alice = User::new("alice", &[]);
        let create_a = request(Method::POST, "/api/v1/namespaces/a/configmaps");
        assert_eq!(
            policy.authorize(&alice, &create_a).as_deref(),
            Ok(r#"RBAC: allowed by RoleBinding "edit/a" of Role "editor" to User "alice""#)
        );
        let create_b = request(Method::POST, "/api/v1/namespaces/b/configmaps");
        assert_eq!(policy.authorize(&alice, &create_b), Err(String::new()));
        let builder = User::new("system:serviceaccount:a:builder", &[]);
        assert_eq!(
            policy.authorize(&builder, &create_a).as_deref(),
            Ok(
                r#"RBAC: allowed by RoleBinding "edit/a" of Role "editor" to ServiceAccount "builder/a""#
            )
        );
        let other = User::new("system:serviceaccount:b:builder", &[]);
        assert!(policy.authorize(&other, &create_a).is_err());
        let bob = User::new("bob", &[]);
        assert_eq!(
            policy.authorize(&bob, &create_a),
            Err(r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#.to_owned())
        );
    }
}
