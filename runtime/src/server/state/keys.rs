//! Where objects live in the store.
//!
//! Keys are `/registry/<group or "core">/<plural>/[<namespace>/]<name>`. Every version of a
//! group's resource shares one key space, as upstream stores one version per resource; a
//! built-in served in several groups (a [`Family`](crate::conversion::Family)) is keyed under
//! its storage group, so `extensions` Ingresses live with `networking.k8s.io`'s. Names and
//! namespaces are validated as path segments before they reach a key, so no key can escape its
//! prefix.

use crate::ResourceInfo;

/// The root of every key the server writes.
const ROOT: &str = "/registry";

/// The prefix of every object of a resource, across namespaces, ending in `/`.
pub(crate) fn resource_prefix(info: &ResourceInfo) -> String {
    let group = info.family.map_or(&*info.gvk.group, |f| f.storage_group());
    prefix_of(group, &info.plural)
}

/// The prefix of every object of the resource `plural` of `group` ("" for core), ending in `/`.
pub(crate) fn prefix_of(group: &str, plural: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{ROOT}/{group}/{plural}/")
}

/// The prefix of a collection: one namespace's objects, or every object of the resource.
pub(crate) fn collection_prefix(info: &ResourceInfo, namespace: Option<&str>) -> String {
    let mut prefix = resource_prefix(info);
    if let (true, Some(ns)) = (info.is_namespaced(), namespace) {
        prefix.push_str(ns);
        prefix.push('/');
    }
    prefix
}

/// The first key after `key` in key order: where the next page of a listing starts.
pub(crate) fn after(key: &str) -> String {
    format!("{key}\0")
}

/// The key of one object.
pub(crate) fn object_key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    let mut key = collection_prefix(info, namespace);
    key.push_str(name);
    key
}

/// The etcd key kube-apiserver keeps an object at, which its storage errors name: `/registry/`,
/// the resource's prefix (its plural, but for the renamed core and networking resources, and
/// `<group>/<plural>` for CRDs, APIServices and custom resources), then namespace and name.
/// Sources: `SpecialDefaultResourcePrefixes` in
/// `pkg/kubeapiserver/default_storage_factory_builder.go`, and the CRD handler's
/// `/<group>/<plural>` prefix.
pub(crate) fn upstream_key(
    info: &ResourceInfo,
    builtin: bool,
    namespace: Option<&str>,
    name: &str,
) -> String {
    let group = info.family.map_or(&*info.gvk.group, |f| f.storage_group());
    let plural = &*info.plural;
    let prefix = match (group, plural) {
        ("", "replicationcontrollers") => "controllers".to_owned(),
        ("", "endpoints") => "services/endpoints".to_owned(),
        ("", "nodes") => "minions".to_owned(),
        ("", "services") => "services/specs".to_owned(),
        ("extensions" | "networking.k8s.io", "ingresses") => "ingress".to_owned(),
        ("extensions" | "policy", "podsecuritypolicies") => "podsecuritypolicy".to_owned(),
        ("apiextensions.k8s.io" | "apiregistration.k8s.io", _) => format!("{group}/{plural}"),
        _ if builtin => plural.to_owned(),
        _ => format!("{group}/{plural}"),
    };
    match namespace.filter(|_| info.is_namespaced()) {
        Some(ns) => format!("{ROOT}/{prefix}/{ns}/{name}"),
        None => format!("{ROOT}/{prefix}/{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::encryption::resource_of;

    /// Encryption at rest picks a key's providers by the group and resource it reads from the
    /// key (upstream's `schema.GroupResource` of the config file): the core group is "".
    #[test]
    fn encryption_reads_group_and_resource_from_the_keys_written_here() {
        for (group, plural) in [
            ("", "secrets"),
            ("apps", "deployments"),
            ("networking.k8s.io", "ingresses"),
            ("example.com", "widgets"),
        ] {
            let prefix = prefix_of(group, plural);
            assert_eq!(resource_of(&prefix), Some((group, plural)), "{prefix}");
            let key = format!("{prefix}default/name");
            assert_eq!(resource_of(&key), Some((group, plural)), "{key}");
        }
    }
}
