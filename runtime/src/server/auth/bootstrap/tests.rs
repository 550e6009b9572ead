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

fn find<'a>(objects: &'a [Value], wanted: &str) -> Option<&'a Value> {
    objects.iter().find(|o| name(o) == wanted)
}

#[test]
fn every_binding_names_a_bootstrap_role() {
    for version in RELEASES {
        let roles = cluster_roles(version);
        for binding in cluster_role_bindings() {
            assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
            let role = binding["roleRef"]["name"].as_str().unwrap();
            assert!(find(&roles, role).is_some(), "{version}: {role}");
        }
    }
}

#[test]
fn every_name_is_unique() {
    for version in RELEASES {
        for objects in [cluster_roles(version), cluster_role_bindings()] {
            let names: BTreeSet<&str> = objects.iter().map(name).collect();
            assert_eq!(names.len(), objects.len(), "{version}: {objects:?}");
        }
    }
}

// What a release has: rules upstream added after 1.28 are made from 1.34 on.
#[test]
fn roles_and_rules_follow_the_release() {
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
    let bindings = cluster_role_bindings();
    // `system:node` is bound to no one (the Node authorizer's job), without a `subjects`.
    let node = find(&bindings, "system:node").unwrap();
    assert!(node.get("subjects").is_none(), "{node}");
    for object in roles.iter().chain(&bindings) {
        assert_eq!(
            object["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
        assert_eq!(
            object["metadata"]["annotations"][AUTOUPDATE], "true",
            "{object}"
        );
    }
}
