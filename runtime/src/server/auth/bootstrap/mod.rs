//! The roles and bindings every cluster starts with: upstream's bootstrap policy
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/`), as data. [`user_facing`] holds the
//! roles people are bound to (`cluster-admin`, the aggregated `admin`, `edit` and `view`,
//! discovery, the self-reviews); [`components`] those of upstream's own programs (the
//! kubelets' `system:node`, `system:kube-scheduler`, `system:kube-controller-manager`, the
//! proxy, the CSR approvers); [`controllers`] one `system:controller:<name>` role per
//! kube-controller-manager controller, each bound to the kube-system service account
//! `<name>`; [`namespaced`] the Roles and RoleBindings of `kube-system` and `kube-public`.
//! kapi runs none of those programs: their roles are there so that the programs, or anything
//! acting as them, find the permissions upstream gives them.
//!
//! Which release: the data follows upstream's 1.34-era policy (its `testdata/*.yaml`, which
//! the policy's tests generate from `policy.go`, `controller_policy.go` and
//! `namespace_policy.go`). What an older release's policy lacks carries `since`, so that a
//! server of that release makes neither those roles nor those rules: `since: 34` for what 1.28
//! lacks (dynamic resource allocation, ServiceCIDRs, the admission-policy status controller),
//! `since: 28` for what 1.20 lacks. `since` is exact at the granularity of kapi's releases
//! (1.20, 1.28, 1.34, 1.36), not upstream's: `since: 34` says "absent from 1.28, present from
//! 1.34". Rules an older release had and 1.34 dropped (1.20's leader election through
//! ConfigMaps and Endpoints) are not kept, and rules and roles behind feature gates that are
//! off by default in 1.34 are left out. 1.36 gets 1.34's policy.
//!
//! Every object is labelled `kubernetes.io/bootstrapping: rbac-defaults` and annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`, so that a start completes what a
//! stored copy lacks (`background::rbac`).

mod components;
mod controllers;
mod namespaced;
mod user_facing;

use serde_json::{Value, json};

use crate::KubeVersion;
use crate::server::auth::rbac::PolicyRule;

/// The label every bootstrap object carries.
pub(crate) const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The annotation that lets the server add what is missing on every start.
pub(crate) const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

/// Writing events, core or `events.k8s.io` (upstream's `eventsRule`), which most components do.
const EVENTS: Rule = resources(
    &["create", "patch", "update"],
    &["", "events.k8s.io"],
    &["events"],
);

/// A rule: verbs, API groups, resources and optionally resource names, or verbs and
/// non-resource URLs (`urls`); held from the kapi release `since` on (a minor version, 0 for
/// every release).
struct Rule {
    verbs: &'static [&'static str],
    groups: &'static [&'static str],
    resources: &'static [&'static str],
    names: &'static [&'static str],
    urls: &'static [&'static str],
    since: u16,
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
        names: &[],
        urls: &[],
        since: 0,
    }
}

const fn urls(verbs: &'static [&'static str], urls: &'static [&'static str]) -> Rule {
    Rule {
        verbs,
        groups: &[],
        resources: &[],
        names: &[],
        urls,
        since: 0,
    }
}

impl Rule {
    /// The rule, for the objects of these names only.
    const fn named(self, names: &'static [&'static str]) -> Rule {
        Rule { names, ..self }
    }

    /// The rule, from the kapi release of minor version `since` on.
    const fn since(self, since: u16) -> Rule {
        Rule { since, ..self }
    }
}

/// A bootstrap role (a ClusterRole, or a Role of [`namespaced`]).
struct Role {
    name: &'static str,
    /// Extra labels (which aggregated role it feeds).
    labels: &'static [(&'static str, &'static str)],
    /// The `aggregate-to-*` label whose roles make up this one's rules.
    aggregates: Option<&'static str>,
    rules: &'static [Rule],
    /// The minor version of the first kapi release that has the role (0 for every release).
    since: u16,
}

/// A role of `rules`, unlabelled, in every release.
const fn role(name: &'static str, rules: &'static [Rule]) -> Role {
    Role {
        name,
        labels: &[],
        aggregates: None,
        rules,
        since: 0,
    }
}

impl Role {
    /// The role, from the kapi release of minor version `since` on.
    const fn since(self, since: u16) -> Role {
        Role { since, ..self }
    }
}

/// Who a binding binds.
enum Subject {
    User(&'static str),
    Group(&'static str),
    /// A service account: namespace and name.
    ServiceAccount(&'static str, &'static str),
}

/// A bootstrap binding: its name, the role it names (a ClusterRole for a ClusterRoleBinding;
/// for a RoleBinding see [`namespaced`]) and its subjects.
struct Binding {
    name: &'static str,
    role: &'static str,
    subjects: &'static [Subject],
}

/// A binding named as its role.
const fn binding(role: &'static str, subjects: &'static [Subject]) -> Binding {
    Binding {
        name: role,
        role,
        subjects,
    }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

impl Rule {
    fn policy_rule(&self) -> PolicyRule {
        PolicyRule {
            verbs: strings(self.verbs),
            api_groups: strings(self.groups),
            resources: strings(self.resources),
            resource_names: strings(self.names),
            non_resource_urls: strings(self.urls),
        }
    }
}

impl Subject {
    fn to_json(&self) -> Value {
        match self {
            Self::User(name) => json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": name}),
            Self::Group(name) => json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": name}),
            Self::ServiceAccount(namespace, name) => {
                json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
            }
        }
    }
}

/// An `rbac.authorization.k8s.io/v1` object of `kind` (without uid and timestamps, which the
/// writer adds), in `namespace` when given.
fn object(kind: &str, name: &str, namespace: Option<&str>, labels: &[(&str, &str)]) -> Value {
    let mut all = serde_json::Map::new();
    all.insert(BOOTSTRAP_LABEL.0.into(), BOOTSTRAP_LABEL.1.into());
    for (key, value) in labels {
        all.insert((*key).into(), (*value).into());
    }
    let mut metadata = json!({
        "name": name,
        "labels": all,
        "annotations": {AUTOUPDATE: "true"},
    });
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata})
}

impl Role {
    fn to_json(&self, kind: &str, namespace: Option<&str>, version: KubeVersion) -> Value {
        let rules: Vec<PolicyRule> = self
            .rules
            .iter()
            .filter(|rule| version.minor >= rule.since)
            .map(Rule::policy_rule)
            .collect();
        let mut object = object(kind, self.name, namespace, self.labels);
        object["rules"] = json!(rules);
        if let Some(label) = self.aggregates {
            object["aggregationRule"] =
                json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
        }
        object
    }
}

/// A binding of `kind` to the role `role` of `role_kind`, in `namespace` when given. Upstream's
/// `system:node` binding has no subjects, and no `subjects` field.
fn binding_object(
    (kind, name, namespace): (&str, &str, Option<&str>),
    (role_kind, role): (&str, &str),
    subjects: Vec<Value>,
) -> Value {
    let mut object = object(kind, name, namespace, &[]);
    object["roleRef"] = json!({"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role});
    if !subjects.is_empty() {
        object["subjects"] = json!(subjects);
    }
    object
}

impl Binding {
    fn to_json(&self, kind: &str, role_kind: &str, namespace: Option<&str>) -> Value {
        let subjects = self.subjects.iter().map(Subject::to_json).collect();
        binding_object(
            (kind, self.name, namespace),
            (role_kind, self.role),
            subjects,
        )
    }
}

/// The bootstrap ClusterRoles of release `version`.
pub(crate) fn cluster_roles(version: KubeVersion) -> Vec<Value> {
    [
        user_facing::CLUSTER_ROLES,
        components::CLUSTER_ROLES,
        controllers::CLUSTER_ROLES,
    ]
    .into_iter()
    .flatten()
    .filter(|role| version.minor >= role.since)
    .map(|role| role.to_json("ClusterRole", None, version))
    .collect()
}

/// The rules of `system:node` in release `version`: what the Node authorizer allows every
/// node beyond the objects of its graph (upstream's `NodeRules()`, which the role is made of).
pub(crate) fn node_rules(version: KubeVersion) -> Vec<PolicyRule> {
    components::CLUSTER_ROLES
        .iter()
        .filter(|role| role.name == components::NODE_ROLE)
        .flat_map(|role| role.rules)
        .filter(|rule| version.minor >= rule.since)
        .map(Rule::policy_rule)
        .collect()
}

/// The bootstrap ClusterRoleBindings of release `version`: those of [`user_facing`] and
/// [`components`], and each controller's role bound to the kube-system service account it
/// is named after (upstream's `addControllerRole`).
pub(crate) fn cluster_role_bindings(version: KubeVersion) -> Vec<Value> {
    let listed = [
        user_facing::CLUSTER_ROLE_BINDINGS,
        components::CLUSTER_ROLE_BINDINGS,
    ]
    .into_iter()
    .flatten()
    .map(|binding| binding.to_json("ClusterRoleBinding", "ClusterRole", None));
    let controllers = controllers::CLUSTER_ROLES
        .iter()
        .filter(|role| version.minor >= role.since)
        .map(|role| {
            let account = role
                .name
                .strip_prefix(controllers::PREFIX)
                .unwrap_or(role.name);
            let subject = Subject::ServiceAccount("kube-system", account).to_json();
            binding_object(
                ("ClusterRoleBinding", role.name, None),
                ("ClusterRole", role.name),
                vec![subject],
            )
        });
    listed.chain(controllers).collect()
}

/// The bootstrap Roles of release `version`, each with its namespace.
pub(crate) fn roles(version: KubeVersion) -> Vec<Value> {
    namespaced::ROLES
        .iter()
        .filter(|(_, role)| version.minor >= role.since)
        .map(|(namespace, role)| role.to_json("Role", Some(namespace), version))
        .collect()
}

/// The bootstrap RoleBindings, each with its namespace.
pub(crate) fn role_bindings() -> Vec<Value> {
    namespaced::ROLE_BINDINGS
        .iter()
        .map(|(namespace, binding)| binding.to_json("RoleBinding", "Role", Some(namespace)))
        .collect()
}

#[cfg(test)]
mod tests;
