//! The generated `register` functions: each version registers its served kinds with their
//! plural, scope, subresources and lifecycle, and a kind decodes through its registered codec.
//! Tests for versions whose feature is off compile away.

use kapi::{Registry, Scope};

/// A generated `register` function.
type Register = fn(&mut Registry);

fn registry(register: Register) -> Registry {
    let mut registry = Registry::new();
    register(&mut registry);
    registry
}

#[cfg(all(feature = "v1_36", feature = "all-groups"))]
#[test]
fn v1_36_registers_its_95_served_kinds() {
    let r = registry(kapi_k8s::v1_36::register);
    assert_eq!(r.len(), 95);
    let deploy = r.get("apps", "v1", "deployments").expect("deployments");
    assert_eq!(deploy.info.gvk.kind, "Deployment");
    assert_eq!(deploy.info.scope, Scope::Namespaced);
    assert!(deploy.merge.is_some());
    assert_eq!(
        r.get("", "v1", "nodes").expect("nodes").info.scope,
        Scope::Cluster
    );
    assert!(r.get("extensions", "v1beta1", "ingresses").is_none());
    let out = (deploy.codec)(kapi::serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {}, "template": {}, "unknownField": 1}
    }))
    .expect("decodes");
    assert_eq!(out["spec"].get("unknownField"), None);
    // Per group-version registration covers a subset.
    let apps = registry(kapi_k8s::v1_36::apps::v1::register);
    assert!(apps.len() >= 5 && apps.len() < r.len(), "{}", apps.len());
}

#[cfg(all(feature = "v1_20", feature = "all-groups"))]
#[test]
fn v1_20_registers_removed_apis_with_their_lifecycle() {
    let r = registry(kapi_k8s::v1_20::register);
    assert_eq!(r.len(), 93);
    let ingress = r
        .get("extensions", "v1beta1", "ingresses")
        .expect("ingresses");
    let life = &ingress.info.lifecycle;
    assert_eq!(life.removed.map(|v| (v.major, v.minor)), Some((1, 22)));
    let replacement = life.replacement.as_ref().expect("replacement");
    assert_eq!(
        (replacement.group.as_ref(), replacement.kind.as_ref()),
        ("networking.k8s.io", "Ingress")
    );
    assert_eq!(
        <kapi_k8s::v1_20::extensions::v1beta1::Ingress as kapi::Resource>::info()
            .gvk
            .version,
        "v1beta1"
    );
}

#[cfg(all(feature = "v1_28", feature = "all-groups"))]
#[test]
fn v1_28_registers_its_73_served_kinds() {
    assert_eq!(registry(kapi_k8s::v1_28::register).len(), 73);
}

#[cfg(all(feature = "v1_34", feature = "all-groups"))]
#[test]
fn v1_34_registers_its_90_served_kinds() {
    assert_eq!(registry(kapi_k8s::v1_34::register).len(), 90);
}

/// A type identical in two versions is one type: values move between the versions' paths.
#[cfg(all(feature = "v1_34", feature = "v1_36", feature = "core"))]
#[test]
fn shared_definitions_are_the_same_type_in_both_versions() {
    let a = kapi_k8s::v1_34::core::v1::ConfigMapKeySelector::default();
    let b: kapi_k8s::v1_36::core::v1::ConfigMapKeySelector = a;
    assert_eq!(b, Default::default());
}

/// Every served kind of every version has an OpenAPI definition in the registry, and every
/// definition it refers to, transitively, is there too: what a server needs to publish it.
#[test]
fn every_registered_kind_has_a_complete_openapi_definition() {
    let versions: &[(&str, Register)] = &[
        #[cfg(all(feature = "v1_20", feature = "all-groups"))]
        ("v1_20", kapi_k8s::v1_20::register),
        #[cfg(all(feature = "v1_28", feature = "all-groups"))]
        ("v1_28", kapi_k8s::v1_28::register),
        #[cfg(all(feature = "v1_34", feature = "all-groups"))]
        ("v1_34", kapi_k8s::v1_34::register),
        #[cfg(all(feature = "v1_36", feature = "all-groups"))]
        ("v1_36", kapi_k8s::v1_36::register),
    ];
    assert!(!versions.is_empty(), "no version feature with all-groups");
    for (version, register) in versions {
        let r = registry(*register);
        for kind in r.kinds() {
            let gvk = &kind.info.gvk;
            let (name, schema) = r
                .definition_of(gvk)
                .unwrap_or_else(|| panic!("{version}: no definition for {gvk:?}"));
            assert_eq!(schema["type"], "object", "{version} {name}");
            let mut pending = vec![name.to_owned()];
            let mut seen = std::collections::BTreeSet::new();
            while let Some(name) = pending.pop() {
                if !seen.insert(name.clone()) {
                    continue;
                }
                let schema = r
                    .definition(&name)
                    .unwrap_or_else(|| panic!("{version}: {gvk:?} refers to missing {name}"));
                refs(schema, &mut pending);
            }
        }
    }
}

fn refs(schema: &kapi::serde_json::Value, out: &mut Vec<String>) {
    match schema {
        kapi::serde_json::Value::Object(map) => {
            if let Some(target) = map.get("$ref").and_then(|r| r.as_str()) {
                let name = target.strip_prefix("#/components/schemas/");
                out.push(name.expect("v3 reference").to_owned());
            }
            map.values().for_each(|v| refs(v, out));
        }
        kapi::serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}
