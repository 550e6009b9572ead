//! The roles and bindings every cluster starts with: the user-facing part of upstream's
//! bootstrap policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`), as data.
//! `cluster-admin` for `system:masters`; discovery, health and version for everyone
//! (`system:discovery`, `system:public-info-viewer`); the self-reviews (`system:basic-user`);
//! the aggregated `admin`, `edit` and `view` and the `system:aggregate-to-*` roles that fill
//! them; metrics and health details for `system:monitoring`; token and access reviews for
//! delegating servers (`system:auth-delegator`); service-account issuer discovery. The roles
//! of upstream's own components (nodes, controllers, the scheduler) are not here: kapi runs
//! none of them.

use serde_json::{Value, json};

use crate::server::auth::rbac::PolicyRule;

/// The label every bootstrap object carries.
pub(crate) const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The annotation that lets the server add what is missing on every start.
pub(crate) const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// A rule: verbs, API groups and resources, or verbs and non-resource URLs (`urls`).
struct Rule {
    verbs: &'static [&'static str],
    groups: &'static [&'static str],
    resources: &'static [&'static str],
    urls: &'static [&'static str],
}

const fn resources(
    verbs: &'static [&'static str],
    groups: &'static [&'static str],
    resources: &'static [&'static str],
) -> Rule {
    Rule {
        verbs,
        groups,
        resources,
        urls: &[],
    }
}

const fn urls(verbs: &'static [&'static str], urls: &'static [&'static str]) -> Rule {
    Rule {
        verbs,
        groups: &[],
        resources: &[],
        urls,
    }
}

/// A bootstrap ClusterRole.
struct ClusterRole {
    name: &'static str,
    /// Extra labels (which aggregated role it feeds).
    labels: &'static [(&'static str, &'static str)],
    /// The `aggregate-to-*` label whose roles make up this one's rules.
    aggregates: Option<&'static str>,
    rules: &'static [Rule],
}

const TO_ADMIN: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-admin", "true");
const TO_EDIT: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-edit", "true");
const TO_VIEW: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-view", "true");

const CLUSTER_ROLES: &[ClusterRole] = &[
    ClusterRole {
        name: "cluster-admin",
        labels: &[],
        aggregates: None,
        rules: &[resources(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
    },
    ClusterRole {
        name: "system:discovery",
        labels: &[],
        aggregates: None,
        rules: &[urls(
            &["get"],
            &[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ],
        )],
    },
    ClusterRole {
        name: "system:public-info-viewer",
        labels: &[],
        aggregates: None,
        rules: &[urls(
            &["get"],
            &["/healthz", "/livez", "/readyz", "/version", "/version/"],
        )],
    },
    ClusterRole {
        name: "system:basic-user",
        labels: &[],
        aggregates: None,
        rules: &[
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            ),
            resources(
                &["create"],
                &["authentication.k8s.io"],
                &["selfsubjectreviews"],
            ),
        ],
    },
    ClusterRole {
        name: "system:monitoring",
        labels: &[],
        aggregates: None,
        rules: &[urls(
            &["get"],
            &[
                "/healthz",
                "/healthz/*",
                "/livez",
                "/livez/*",
                "/metrics",
                "/metrics/slis",
                "/readyz",
                "/readyz/*",
            ],
        )],
    },
    ClusterRole {
        name: "system:auth-delegator",
        labels: &[],
        aggregates: None,
        rules: &[
            resources(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
            ),
        ],
    },
    ClusterRole {
        name: "system:service-account-issuer-discovery",
        labels: &[],
        aggregates: None,
        rules: &[urls(
            &["get"],
            &[
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ],
        )],
    },
    ClusterRole {
        name: "admin",
        labels: &[],
        aggregates: Some(TO_ADMIN.0),
        rules: &[],
    },
    ClusterRole {
        name: "edit",
        labels: &[TO_ADMIN],
        aggregates: Some(TO_EDIT.0),
        rules: &[],
    },
    ClusterRole {
        name: "view",
        labels: &[TO_EDIT],
        aggregates: Some(TO_VIEW.0),
        rules: &[],
    },
    ClusterRole {
        name: "system:aggregate-to-admin",
        labels: &[TO_ADMIN],
        aggregates: None,
        rules: &[
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["localsubjectaccessreviews"],
            ),
            resources(
                READ_WRITE,
                &["rbac.authorization.k8s.io"],
                &["rolebindings", "roles"],
            ),
        ],
    },
    ClusterRole {
        name: "system:aggregate-to-edit",
        labels: &[TO_EDIT],
        aggregates: None,
        rules: &[
            resources(&["impersonate"], &[""], &["serviceaccounts"]),
            resources(
                WRITE,
                &[""],
                &[
                    "pods",
                    "pods/attach",
                    "pods/proxy",
                    "pods/exec",
                    "pods/portforward",
                ],
            ),
            resources(&["create"], &[""], &["pods/eviction"]),
            resources(
                WRITE,
                &[""],
                &[
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "serviceaccounts",
                    "services",
                    "services/proxy",
                    "persistentvolumeclaims",
                    "configmaps",
                    "secrets",
                    "events",
                ],
            ),
            resources(&["create"], &[""], &["serviceaccounts/token"]),
            resources(
                WRITE,
                &["apps"],
                &[
                    "statefulsets",
                    "statefulsets/scale",
                    "daemonsets",
                    "deployments",
                    "deployments/scale",
                    "deployments/rollback",
                    "replicasets",
                    "replicasets/scale",
                ],
            ),
            resources(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
            resources(WRITE, &["batch"], &["jobs", "cronjobs"]),
            resources(
                WRITE,
                &["extensions"],
                &[
                    "daemonsets",
                    "deployments",
                    "deployments/scale",
                    "deployments/rollback",
                    "ingresses",
                    "replicasets",
                    "replicasets/scale",
                    "replicationcontrollers/scale",
                    "networkpolicies",
                ],
            ),
            resources(WRITE, &["policy"], &["poddisruptionbudgets"]),
            resources(
                WRITE,
                &["networking.k8s.io"],
                &["networkpolicies", "ingresses"],
            ),
        ],
    },
    ClusterRole {
        name: "system:aggregate-to-view",
        labels: &[TO_VIEW],
        aggregates: None,
        rules: &[
            resources(
                READ,
                &[""],
                &[
                    "pods",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "serviceaccounts",
                    "services",
                    "services/status",
                    "endpoints",
                    "persistentvolumeclaims",
                    "persistentvolumeclaims/status",
                    "configmaps",
                ],
            ),
            resources(
                READ,
                &[""],
                &[
                    "limitranges",
                    "resourcequotas",
                    "bindings",
                    "events",
                    "pods/status",
                    "resourcequotas/status",
                    "namespaces/status",
                    "replicationcontrollers/status",
                    "pods/log",
                ],
            ),
            resources(READ, &[""], &["namespaces"]),
            resources(READ, &["discovery.k8s.io"], &["endpointslices"]),
            resources(
                READ,
                &["apps"],
                &[
                    "controllerrevisions",
                    "statefulsets",
                    "statefulsets/status",
                    "statefulsets/scale",
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/status",
                    "deployments/scale",
                    "replicasets",
                    "replicasets/status",
                    "replicasets/scale",
                ],
            ),
            resources(
                READ,
                &["autoscaling"],
                &[
                    "horizontalpodautoscalers",
                    "horizontalpodautoscalers/status",
                ],
            ),
            resources(
                READ,
                &["batch"],
                &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
            ),
            resources(
                READ,
                &["extensions"],
                &[
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/scale",
                    "deployments/status",
                    "ingresses",
                    "ingresses/status",
                    "replicasets",
                    "replicasets/scale",
                    "replicasets/status",
                    "replicationcontrollers/scale",
                    "networkpolicies",
                ],
            ),
            resources(
                READ,
                &["policy"],
                &["poddisruptionbudgets", "poddisruptionbudgets/status"],
            ),
            resources(
                READ,
                &["networking.k8s.io"],
                &["networkpolicies", "ingresses", "ingresses/status"],
            ),
        ],
    },
];

/// The bootstrap ClusterRoleBindings: name (also the role's), and the groups bound.
const CLUSTER_ROLE_BINDINGS: &[(&str, &[&str])] = &[
    ("cluster-admin", &["system:masters"]),
    ("system:discovery", &["system:authenticated"]),
    ("system:basic-user", &["system:authenticated"]),
    (
        "system:public-info-viewer",
        &["system:authenticated", "system:unauthenticated"],
    ),
    ("system:monitoring", &["system:monitoring"]),
    (
        "system:service-account-issuer-discovery",
        &["system:serviceaccounts"],
    ),
];

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

impl Rule {
    fn policy_rule(&self) -> PolicyRule {
        PolicyRule {
            verbs: strings(self.verbs),
            api_groups: strings(self.groups),
            resources: strings(self.resources),
            resource_names: Vec::new(),
            non_resource_urls: strings(self.urls),
        }
    }
}

fn metadata(name: &str, extra: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(BOOTSTRAP_LABEL.0.into(), BOOTSTRAP_LABEL.1.into());
    for (key, value) in extra {
        labels.insert((*key).into(), (*value).into());
    }
    json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE: "true"},
    })
}

/// The bootstrap ClusterRoles as `rbac.authorization.k8s.io/v1` objects (without uid and
/// timestamps, which the writer adds).
pub(crate) fn cluster_roles() -> Vec<Value> {
    CLUSTER_ROLES
        .iter()
        .map(|role| {
            let rules: Vec<PolicyRule> = role.rules.iter().map(Rule::policy_rule).collect();
            let mut object = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata(role.name, role.labels),
                "rules": rules,
            });
            if let Some(label) = role.aggregates {
                object["aggregationRule"] =
                    json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
            }
            object
        })
        .collect()
}

/// The bootstrap ClusterRoleBindings as `rbac.authorization.k8s.io/v1` objects.
pub(crate) fn cluster_role_bindings() -> Vec<Value> {
    CLUSTER_ROLE_BINDINGS
        .iter()
        .map(|(name, groups)| {
            let subjects: Vec<Value> = groups
                .iter()
                .map(|group| {
                    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group})
                })
                .collect();
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(name, &[]),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": subjects,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_names_a_bootstrap_role() {
        let roles = cluster_roles();
        for binding in cluster_role_bindings() {
            let name = &binding["roleRef"]["name"];
            assert!(
                roles.iter().any(|role| role["metadata"]["name"] == *name),
                "{name}"
            );
        }
        let admin = roles
            .iter()
            .find(|r| r["metadata"]["name"] == "admin")
            .unwrap();
        assert_eq!(
            admin["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
            "true"
        );
    }
}
