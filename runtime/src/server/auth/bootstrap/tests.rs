use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;

const RELEASES: [KubeVersion; 4] = [
    KubeVersion::new(1, 20),
    KubeVersion::new(1, 28),
    KubeVersion::new(1, 34),
    KubeVersion::new(1, 36),
];

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap()
}

fn namespaced_name(object: &Value) -> (String, String) {
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    (namespace.to_owned(), name(object).to_owned())
}

fn find<'a>(objects: &'a [Value], wanted: &str) -> Option<&'a Value> {
    objects.iter().find(|o| name(o) == wanted)
}

#[test]
fn every_binding_names_a_bootstrap_role() {
    for version in RELEASES {
        let roles = cluster_roles(version);
        for binding in cluster_role_bindings(version) {
            assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
            let role = binding["roleRef"]["name"].as_str().unwrap();
            assert!(find(&roles, role).is_some(), "{version}: {role}");
        }
        let roles: BTreeSet<(String, String)> = roles_of(version);
        for binding in role_bindings() {
            assert_eq!(binding["roleRef"]["kind"], "Role");
            let (namespace, _) = namespaced_name(&binding);
            let role = binding["roleRef"]["name"].as_str().unwrap().to_owned();
            assert!(
                roles.contains(&(namespace.clone(), role.clone())),
                "{version}: {namespace}/{role}"
            );
        }
    }
}

fn roles_of(version: KubeVersion) -> BTreeSet<(String, String)> {
    roles(version).iter().map(namespaced_name).collect()
}

#[test]
fn every_name_is_unique() {
    for version in RELEASES {
        for objects in [
            cluster_roles(version),
            cluster_role_bindings(version),
            roles(version),
            role_bindings(),
        ] {
            let names: BTreeSet<(String, String)> = objects.iter().map(namespaced_name).collect();
            assert_eq!(names.len(), objects.len(), "{version}: {objects:?}");
        }
    }
}

// `controller_policy.go`'s `addControllerRole`: every controller role is bound to the
// kube-system service account of the controller's name, and to nothing else.
#[test]
fn controller_roles_are_bound_to_their_service_accounts() {
    let version = KubeVersion::new(1, 36);
    let bindings = cluster_role_bindings(version);
    let controllers: Vec<Value> = cluster_roles(version)
        .into_iter()
        .filter(|r| name(r).starts_with("system:controller:"))
        .collect();
    assert_eq!(controllers.len(), controllers::CLUSTER_ROLES.len());
    for role in &controllers {
        let binding = find(&bindings, name(role)).unwrap();
        let account = &name(role)["system:controller:".len()..];
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}])
        );
    }
    let deployments = find(&controllers, "system:controller:deployment-controller").unwrap();
    assert!(
        deployments["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"] == json!(["deployments/status"])
                && r["verbs"] == json!(["update"])),
        "{deployments}"
    );
}

// What a release has: roles and rules upstream added after 1.28 are made from 1.34 on.
#[test]
fn roles_and_rules_follow_the_release() {
    let has_role = |version, role: &str| find(&cluster_roles(version), role).is_some();
    let claims = "system:controller:resource-claim-controller";
    assert!(!has_role(KubeVersion::new(1, 20), claims));
    assert!(!has_role(KubeVersion::new(1, 28), claims));
    assert!(has_role(KubeVersion::new(1, 34), claims));
    let cleaner = "system:controller:legacy-service-account-token-cleaner";
    assert!(!has_role(KubeVersion::new(1, 20), cleaner));
    assert!(has_role(KubeVersion::new(1, 28), cleaner));
    let bindings = cluster_role_bindings(KubeVersion::new(1, 20));
    assert!(
        find(&bindings, claims).is_none(),
        "no binding without its role"
    );

    let node_resources = |version| {
        let roles = cluster_roles(version);
        let node = find(&roles, "system:node").unwrap();
        node["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["resources"].as_array().unwrap().clone())
            .collect::<Vec<Value>>()
    };
    assert!(!node_resources(KubeVersion::new(1, 28)).contains(&json!("resourceslices")));
    assert!(node_resources(KubeVersion::new(1, 36)).contains(&json!("resourceslices")));
}

#[test]
fn objects_are_as_upstream_stores_them() {
    let version = KubeVersion::new(1, 36);
    let roles = cluster_roles(version);
    let admin = find(&roles, "admin").unwrap();
    assert_eq!(
        admin["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
        "true"
    );
    let bindings = cluster_role_bindings(version);
    // `system:node` is bound to no one (the Node authorizer's job), without a `subjects`.
    let node = find(&bindings, "system:node").unwrap();
    assert!(node.get("subjects").is_none(), "{node}");
    for object in roles.iter().chain(&bindings).chain(&roles_and_bindings()) {
        assert_eq!(
            object["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
        assert_eq!(
            object["metadata"]["annotations"][AUTOUPDATE], "true",
            "{object}"
        );
    }
    let reader = roles_and_bindings()
        .into_iter()
        .find(|o| name(o) == "extension-apiserver-authentication-reader")
        .unwrap();
    assert_eq!(reader["metadata"]["namespace"], "kube-system");
    assert_eq!(
        reader["rules"][0]["resourceNames"],
        json!(["extension-apiserver-authentication"])
    );
}

fn roles_and_bindings() -> Vec<Value> {
    let mut all = roles(KubeVersion::new(1, 36));
    all.extend(role_bindings());
    all
}
