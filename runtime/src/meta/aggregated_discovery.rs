//! Aggregated discovery (`apidiscovery.k8s.io/v2`): every group, version and resource in one document.
//!
//! Clients ask for it on `/api` and `/apis` with
//! `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` and fall back to
//! the per-group documents of [`super::discovery`] when the server does not offer it. The list
//! and the groups inside it carry optional `kind`/`apiVersion` for the same reason as there: the
//! server sets them only on the top-level list, which [`APIGroupDiscoveryList::new`] does.

use serde::{Deserialize, Serialize};

use super::{ListMeta, ObjectMeta};
use crate::open_enum;
use crate::resource::{GroupVersionKind, ResourceInfo, Scope};
use crate::wire::null_as_default;

/// The API group of aggregated discovery.
pub const AGGREGATED_DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";

/// The `apiVersion` of aggregated discovery documents.
pub const AGGREGATED_DISCOVERY_API_VERSION: &str = "apidiscovery.k8s.io/v2";

/// The `Accept` value a client sends to ask `/api` or `/apis` for the aggregated document.
pub const AGGREGATED_DISCOVERY_MEDIA_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

open_enum! {
    /// Whether a discovered resource is namespaced (`scope` of an [`APIResourceDiscovery`]).
    pub enum ResourceScope {
        /// Objects live at cluster scope.
        Cluster = "Cluster",
        /// Objects live in namespaces.
        Namespaced = "Namespaced",
    }
}

impl Default for ResourceScope {
    /// The empty string, which is what Go reads a missing `scope` as.
    fn default() -> Self {
        Self::Other(String::new())
    }
}

impl From<Scope> for ResourceScope {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::Cluster => Self::Cluster,
            Scope::Namespaced => Self::Namespaced,
        }
    }
}

open_enum! {
    /// Whether a group version's part of the aggregated document is up to date.
    pub enum DiscoveryFreshness {
        /// Recently refreshed.
        Current = "Current",
        /// The aggregated server could not be reached; the entry may be far out of date.
        Stale = "Stale",
    }
}

/// The aggregated discovery document: every group the server offers, in priority order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroupDiscoveryList {
    /// `APIGroupDiscoveryList` when built by [`APIGroupDiscoveryList::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `apidiscovery.k8s.io/v2` when built by [`APIGroupDiscoveryList::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Always written (upstream's `omitempty` has no effect on a struct); never has a
    /// resourceVersion, since several servers' documents have no common order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ListMeta,
    /// The groups, in priority order; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub items: Vec<APIGroupDiscovery>,
}

impl APIGroupDiscoveryList {
    /// The top-level document, with `kind` and `apiVersion` set.
    pub fn new(items: Vec<APIGroupDiscovery>) -> Self {
        Self {
            kind: Some("APIGroupDiscoveryList".to_owned()),
            api_version: Some(AGGREGATED_DISCOVERY_API_VERSION.to_owned()),
            metadata: ListMeta::default(),
            items,
        }
    }
}

/// One group with all its versions; `metadata.name` is the group (empty for the core group).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroupDiscovery {
    /// Unset inside a list, as upstream writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Unset inside a list, as upstream writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Only `name` is set; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ObjectMeta,
    /// The versions, preferred first; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub versions: Vec<APIVersionDiscovery>,
}

impl APIGroupDiscovery {
    /// A group entry; `name` is empty for the core group, which the server still names in
    /// `metadata` (as `{}`, because an empty name is omitted).
    pub fn new(name: &str, versions: Vec<APIVersionDiscovery>) -> Self {
        let metadata = if name.is_empty() {
            ObjectMeta::default()
        } else {
            ObjectMeta::named(name)
        };
        Self {
            kind: None,
            api_version: None,
            metadata,
            versions,
        }
    }

    /// The group name, empty for the core group.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

/// The resources of one version of a group.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIVersionDiscovery {
    /// The version, e.g. `v1`; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub version: String,
    /// The resources; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<APIResourceDiscovery>,
    /// Whether this entry is up to date; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freshness: Option<DiscoveryFreshness>,
}

/// One resource of a group version.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceDiscovery {
    /// Plural name used in URLs; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resource: String,
    /// The kind the endpoint returns; unset when only subresources are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_kind: Option<GroupVersionKind>,
    /// `Cluster` or `Namespaced`; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub scope: ResourceScope,
    /// Singular name; always written, possibly `""`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub singular_resource: String,
    /// Supported verbs; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    /// Short names for kubectl; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub short_names: Vec<String>,
    /// Categories such as `all`; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub categories: Vec<String>,
    /// Subresources such as `status` and `scale`; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub subresources: Vec<APISubresourceDiscovery>,
}

/// One subresource of a resource, e.g. `status`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APISubresourceDiscovery {
    /// Subresource name as it appears in URLs; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub subresource: String,
    /// The kind the subresource returns; unset for those returning no object (e.g. `log`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_kind: Option<GroupVersionKind>,
    /// Kinds the subresource accepts; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_types: Vec<GroupVersionKind>,
    /// Supported verbs; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
}

fn subresource_verbs() -> Vec<String> {
    ["get", "patch", "update"]
        .iter()
        .map(|v| (*v).to_owned())
        .collect()
}

impl APIResourceDiscovery {
    /// The entry for a served kind, with its `status` and `scale` subresources when served.
    ///
    /// `scale` returns the `autoscaling/v1` `Scale` kind, as upstream's scale subresources do.
    pub fn for_kind(info: &ResourceInfo) -> Self {
        let mut subresources = Vec::new();
        if info.subresources.status {
            subresources.push(APISubresourceDiscovery {
                subresource: "status".to_owned(),
                response_kind: Some(info.gvk.clone()),
                accepted_types: Vec::new(),
                verbs: subresource_verbs(),
            });
        }
        if info.subresources.scale.is_some() {
            subresources.push(APISubresourceDiscovery {
                subresource: "scale".to_owned(),
                response_kind: Some(GroupVersionKind::new_static("autoscaling", "v1", "Scale")),
                accepted_types: Vec::new(),
                verbs: subresource_verbs(),
            });
        }
        Self {
            resource: info.plural.to_string(),
            response_kind: Some(info.gvk.clone()),
            scope: info.scope.into(),
            singular_resource: info.singular.to_string(),
            verbs: info.verbs.iter().map(|v| v.as_str().to_owned()).collect(),
            short_names: info.short_names.iter().map(|s| s.to_string()).collect(),
            categories: info.categories.iter().map(|s| s.to_string()).collect(),
            subresources,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::{Value, json};

    use super::*;
    use crate::resource::{Lifecycle, Scale, Subresources, Verb};

    fn round_trip<T>(value: &Value) -> T
    where
        T: Serialize + for<'de> Deserialize<'de>,
    {
        let typed: T = serde_json::from_value(value.clone()).expect("decode");
        assert_eq!(&serde_json::to_value(&typed).expect("encode"), value);
        typed
    }

    fn sample() -> Value {
        json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": [
                {
                    "metadata": {},
                    "versions": [{
                        "version": "v1",
                        "resources": [{
                            "resource": "pods",
                            "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                            "scope": "Namespaced",
                            "singularResource": "pod",
                            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                            "shortNames": ["po"],
                            "categories": ["all"],
                            "subresources": [
                                {"subresource": "binding", "responseKind": {"group": "", "version": "v1", "kind": "Binding"}, "verbs": ["create"]},
                                {"subresource": "log", "verbs": ["get"]},
                                {"subresource": "eviction", "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                                 "acceptedTypes": [{"group": "policy", "version": "v1", "kind": "Eviction"}], "verbs": ["create"]}
                            ]
                        }],
                        "freshness": "Current"
                    }]
                },
                {
                    "metadata": {"name": "apps"},
                    "versions": [{
                        "version": "v1",
                        "resources": [{
                            "resource": "controllerrevisions",
                            "responseKind": {"group": "apps", "version": "v1", "kind": "ControllerRevision"},
                            "scope": "Namespaced",
                            "singularResource": "controllerrevision",
                            "verbs": ["get", "list"]
                        }]
                    }]
                },
                {
                    "metadata": {"name": "example.com"},
                    "versions": [{"version": "v1", "freshness": "Stale"}]
                }
            ]
        })
    }

    #[test]
    fn document_round_trips_with_typed_fields() {
        let list: APIGroupDiscoveryList = round_trip(&sample());
        assert_eq!(list.items.len(), 3);
        assert_eq!(list.items[0].name(), "");
        assert_eq!(list.items[1].name(), "apps");
        let pods = &list.items[0].versions[0].resources[0];
        assert_eq!(pods.scope, ResourceScope::Namespaced);
        assert_eq!(
            pods.response_kind,
            Some(GroupVersionKind::new_static("", "v1", "Pod"))
        );
        assert_eq!(pods.subresources[1].response_kind, None);
        assert_eq!(
            list.items[0].versions[0].freshness,
            Some(DiscoveryFreshness::Current)
        );
        assert_eq!(
            list.items[2].versions[0].freshness,
            Some(DiscoveryFreshness::Stale)
        );
    }

    #[test]
    fn constructors_write_type_meta_only_on_the_list() {
        let list = APIGroupDiscoveryList::new(vec![APIGroupDiscovery::new("", vec![])]);
        assert_eq!(
            serde_json::to_value(&list).expect("encode"),
            json!({
                "kind": "APIGroupDiscoveryList",
                "apiVersion": "apidiscovery.k8s.io/v2",
                "metadata": {},
                "items": [{"metadata": {}}]
            })
        );
    }

    #[test]
    fn required_fields_are_written_when_empty() {
        let cases = [
            (
                serde_json::to_value(APIVersionDiscovery::default()),
                json!({"version": ""}),
            ),
            (
                serde_json::to_value(APIResourceDiscovery::default()),
                json!({"resource": "", "scope": "", "singularResource": "", "verbs": []}),
            ),
            (
                serde_json::to_value(APISubresourceDiscovery::default()),
                json!({"subresource": "", "verbs": []}),
            ),
            (
                serde_json::to_value(APIGroupDiscoveryList::default()),
                json!({"metadata": {}, "items": []}),
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got.expect("encode"), want);
        }
    }

    #[test]
    fn unknown_enum_values_are_kept() {
        let doc = json!({"resource": "things", "scope": "Galactic", "singularResource": "thing", "verbs": ["get"]});
        let typed: APIResourceDiscovery = round_trip(&doc);
        assert_eq!(typed.scope, ResourceScope::Other("Galactic".into()));
        let doc = json!({"version": "v1", "freshness": "Unknown"});
        let typed: APIVersionDiscovery = round_trip(&doc);
        assert_eq!(
            typed.freshness.as_ref().map(|f| f.as_str()),
            Some("Unknown")
        );
    }

    #[test]
    fn null_lists_read_as_empty_and_bad_types_fail() {
        let typed: APIResourceDiscovery = serde_json::from_value(
            json!({"resource": "x", "scope": "Cluster", "singularResource": "", "verbs": null}),
        )
        .expect("decode");
        assert!(typed.verbs.is_empty());
        for bad in [
            json!({"resource": "x", "scope": 3}),
            json!({"resource": "x", "responseKind": "v1/Pod"}),
            json!({"resource": "x", "verbs": [1]}),
        ] {
            assert!(
                serde_json::from_value::<APIResourceDiscovery>(bad.clone()).is_err(),
                "{bad} should not decode"
            );
        }
    }

    #[test]
    fn gvk_json_form() {
        let gvk = GroupVersionKind::new_static("apps", "v1", "Deployment");
        let v = serde_json::to_value(&gvk).expect("encode");
        assert_eq!(
            v,
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        assert_eq!(
            serde_json::from_value::<GroupVersionKind>(v).expect("decode"),
            gvk
        );
        // Go reads missing fields as empty strings.
        assert_eq!(
            serde_json::from_value::<GroupVersionKind>(json!({"version": "v1", "kind": "Pod"}))
                .expect("decode"),
            GroupVersionKind::new_static("", "v1", "Pod")
        );
    }

    #[test]
    fn for_kind_builds_entry_with_subresources() {
        let info = ResourceInfo {
            gvk: GroupVersionKind::new_static("example.com", "v1", "Widget"),
            plural: Cow::Borrowed("widgets"),
            singular: Cow::Borrowed("widget"),
            short_names: Cow::Borrowed(&[]),
            categories: Cow::Borrowed(&[]),
            scope: Scope::Cluster,
            verbs: Cow::Borrowed(&[Verb::Get, Verb::List]),
            subresources: Subresources {
                status: true,
                scale: Some(Scale {
                    spec_replicas_path: Cow::Borrowed(".spec.replicas"),
                    status_replicas_path: Cow::Borrowed(".status.replicas"),
                    label_selector_path: None,
                }),
            },
            lifecycle: Lifecycle::default(),
            printer_columns: Cow::Borrowed(&[]),
            selectable_fields: Cow::Borrowed(&[]),
            defaults: Cow::Borrowed(&[]),
            field_labels: Default::default(),
            write_rules: crate::write_rules::WriteRules::CUSTOM,
            family: None,
        };
        assert_eq!(
            serde_json::to_value(APIResourceDiscovery::for_kind(&info)).expect("encode"),
            json!({
                "resource": "widgets",
                "responseKind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                "scope": "Cluster",
                "singularResource": "widget",
                "verbs": ["get", "list"],
                "subresources": [
                    {"subresource": "status", "responseKind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                     "verbs": ["get", "patch", "update"]},
                    {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                     "verbs": ["get", "patch", "update"]}
                ]
            })
        );
    }
}
