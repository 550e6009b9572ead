//! Legacy discovery documents: what `/api`, `/apis`, `/apis/<group>` and `/<prefix>/<gv>` return.
//!
//! These are the unaggregated discovery types of `meta.k8s.io/v1` (`APIVersions`, `APIGroupList`,
//! `APIGroup`, `APIResourceList`); the aggregated `apidiscovery.k8s.io/v2` form lives in
//! [`super::aggregated_discovery`].
//!
//! # `kind` and `apiVersion`
//!
//! Upstream embeds `TypeMeta` inline with both fields `omitempty`, and the server fills them only on
//! top-level responses: `/api` answers `{"kind":"APIVersions",...}` and `/api/v1` answers
//! `{"kind":"APIResourceList",...}` without an `apiVersion`, while `/apis` and `/apis/<group>[/<v>]`
//! carry `"apiVersion":"v1"` as well; an `APIGroup` nested inside an `APIGroupList` carries neither.
//! So each type here has optional `kind` and `api_version` fields, written only when set, that
//! round-trip whatever a server sent. The `new` constructors fill them as the current
//! kube-apiserver does for the named group endpoints; use [`APIVersions::new`] and
//! [`APIResourceList::legacy`] for the core group's `/api` answers.

use serde::{Deserialize, Serialize};

use crate::resource::{ResourceInfo, Scope};
use crate::wire::null_as_default;

/// The `apiVersion` every discovery document of `meta.k8s.io/v1` is written with.
///
/// Discovery predates API groups, so it is served as the core `v1` rather than `meta.k8s.io/v1`.
pub const DISCOVERY_API_VERSION: &str = "v1";

/// The versions of the core group, answered by `GET /api`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIVersions {
    /// `APIVersions` when built by [`APIVersions::new`]; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Empty for `/api` responses, where upstream omits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The versions served under `/api`, e.g. `["v1"]`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub versions: Vec<String>,
    /// Where clients in each CIDR should connect; always written, even when empty.
    #[serde(
        default,
        rename = "serverAddressByClientCIDRs",
        deserialize_with = "null_as_default"
    )]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
}

impl APIVersions {
    /// The `/api` answer: `kind: APIVersions`, no `apiVersion`, as kube-apiserver writes it.
    pub fn new(
        versions: Vec<String>,
        server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
    ) -> Self {
        Self {
            kind: Some("APIVersions".to_owned()),
            api_version: None,
            versions,
            server_address_by_client_cidrs,
        }
    }
}

/// The API groups a server offers, answered by `GET /apis`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroupList {
    /// `APIGroupList` when built by [`APIGroupList::new`]; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `v1` when built by [`APIGroupList::new`]; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The groups; members carry no `kind`/`apiVersion` of their own.
    #[serde(default, deserialize_with = "null_as_default")]
    pub groups: Vec<APIGroup>,
}

impl APIGroupList {
    /// The `/apis` answer, with `kind: APIGroupList` and `apiVersion: v1`.
    pub fn new(groups: Vec<APIGroup>) -> Self {
        Self {
            kind: Some("APIGroupList".to_owned()),
            api_version: Some(DISCOVERY_API_VERSION.to_owned()),
            groups,
        }
    }
}

/// One API group with its versions, answered by `GET /apis/<group>` and nested in [`APIGroupList`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIGroup {
    /// `APIGroup` on the `/apis/<group>` answer, empty (omitted) inside a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `v1` on the `/apis/<group>` answer, empty (omitted) inside a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The group name, e.g. `apps`.
    #[serde(default)]
    pub name: String,
    /// The versions served, preferred first.
    #[serde(default, deserialize_with = "null_as_default")]
    pub versions: Vec<GroupVersionForDiscovery>,
    /// The version clients should use.
    ///
    /// Upstream tags this struct `omitempty`, which Go's encoder ignores for structs, so it is
    /// always written (`{"groupVersion":"","version":""}` when unset).
    #[serde(default)]
    pub preferred_version: GroupVersionForDiscovery,
    /// Where clients in each CIDR should connect; omitted when empty.
    #[serde(
        default,
        rename = "serverAddressByClientCIDRs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub server_address_by_client_cidrs: Vec<ServerAddressByClientCIDR>,
}

impl APIGroup {
    /// A group as listed inside [`APIGroupList`]: no `kind`/`apiVersion`.
    ///
    /// The preferred version is the first of `versions` (empty when there are none), matching
    /// the convention that versions are listed in order of preference.
    pub fn new(name: impl Into<String>, versions: Vec<GroupVersionForDiscovery>) -> Self {
        let preferred_version = versions.first().cloned().unwrap_or_default();
        Self {
            kind: None,
            api_version: None,
            name: name.into(),
            versions,
            preferred_version,
            server_address_by_client_cidrs: Vec::new(),
        }
    }

    /// The same group as a top-level `/apis/<group>` answer, with `kind` and `apiVersion` set.
    pub fn into_response(mut self) -> Self {
        self.kind = Some("APIGroup".to_owned());
        self.api_version = Some(DISCOVERY_API_VERSION.to_owned());
        self
    }
}

/// One version of a group: `{"groupVersion":"apps/v1","version":"v1"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionForDiscovery {
    /// `group/version`, or just `version` for the core group.
    #[serde(default)]
    pub group_version: String,
    /// The version alone, e.g. `v1`.
    #[serde(default)]
    pub version: String,
}

impl GroupVersionForDiscovery {
    /// The entry for `version` of `group` (empty `group` for the core group).
    pub fn new(group: &str, version: &str) -> Self {
        Self {
            group_version: crate::resource::api_version(group, version),
            version: version.to_owned(),
        }
    }
}

/// A client network and the server address clients in it should use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerAddressByClientCIDR {
    /// The client network, e.g. `0.0.0.0/0`.
    #[serde(rename = "clientCIDR", default)]
    pub client_cidr: String,
    /// `host:port` (or an IP) of the server for that network.
    #[serde(default)]
    pub server_address: String,
}

/// The resources of one group/version, answered by `GET /api/v1` or `GET /apis/<group>/<version>`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceList {
    /// `APIResourceList` when built by a constructor; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `v1` for named groups, empty (omitted) for `/api/v1`, as kube-apiserver writes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The group/version described, e.g. `apps/v1` or `v1`.
    #[serde(default)]
    pub group_version: String,
    /// The resources and subresources served.
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<APIResource>,
}

impl APIResourceList {
    /// The `/apis/<group>/<version>` answer: `kind: APIResourceList`, `apiVersion: v1`.
    pub fn new(group_version: impl Into<String>, resources: Vec<APIResource>) -> Self {
        Self {
            kind: Some("APIResourceList".to_owned()),
            api_version: Some(DISCOVERY_API_VERSION.to_owned()),
            group_version: group_version.into(),
            resources,
        }
    }

    /// The `/api/<version>` (and `/apis/extensions/<version>`) answer, which upstream writes
    /// without `apiVersion`.
    pub fn legacy(group_version: impl Into<String>, resources: Vec<APIResource>) -> Self {
        Self {
            api_version: None,
            ..Self::new(group_version, resources)
        }
    }
}

/// One resource or subresource of a group/version, as `kubectl api-resources` lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct APIResource {
    /// Plural resource name, or `<plural>/<subresource>` for a subresource.
    #[serde(default)]
    pub name: String,
    /// Singular name; always written, `""` for subresources as upstream does.
    #[serde(default)]
    pub singular_name: String,
    /// Whether the resource lives in namespaces.
    #[serde(default)]
    pub namespaced: bool,
    /// Group of the kind, when it differs from the list's group (e.g. `autoscaling` for scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Version of the kind, when it differs from the list's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The kind read and written at this endpoint.
    #[serde(default)]
    pub kind: String,
    /// Supported verbs; strings because servers add their own (`proxy`, `use`, ...).
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    /// Short names for kubectl, e.g. `deploy`; omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// Categories such as `all`; omitted when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Opaque hash of the storage version, for detecting storage migrations; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_version_hash: Option<String>,
}

/// The verbs every `/status` and `/scale` subresource serves.
const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];

impl APIResource {
    /// The entries `kubectl api-resources` expects for a served kind: the resource itself, then
    /// `<plural>/status` and `<plural>/scale` when served.
    ///
    /// Subresources have an empty `singularName` and the status one repeats the parent kind, as
    /// upstream lists them; `scale` is the `autoscaling/v1` `Scale` kind.
    pub fn for_kind(info: &ResourceInfo) -> Vec<APIResource> {
        let namespaced = info.scope == Scope::Namespaced;
        let mut out = vec![APIResource {
            name: info.plural.to_string(),
            singular_name: info.singular.to_string(),
            namespaced,
            kind: info.gvk.kind.to_string(),
            verbs: info.verbs.iter().map(|v| v.as_str().to_owned()).collect(),
            short_names: info.short_names.iter().map(|s| s.to_string()).collect(),
            categories: info.categories.iter().map(|s| s.to_string()).collect(),
            ..APIResource::default()
        }];
        let sub_verbs = || SUBRESOURCE_VERBS.iter().map(|v| (*v).to_owned()).collect();
        if info.subresources.status {
            out.push(APIResource {
                name: format!("{}/status", info.plural),
                namespaced,
                kind: info.gvk.kind.to_string(),
                verbs: sub_verbs(),
                ..APIResource::default()
            });
        }
        if info.subresources.scale.is_some() {
            out.push(APIResource {
                name: format!("{}/scale", info.plural),
                namespaced,
                group: Some("autoscaling".to_owned()),
                version: Some("v1".to_owned()),
                kind: "Scale".to_owned(),
                verbs: sub_verbs(),
                ..APIResource::default()
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::{Value, json};

    use super::*;
    use crate::resource::{GroupVersionKind, Lifecycle, Scale, Subresources, Verb};

    fn round_trip<T>(value: &Value) -> T
    where
        T: Serialize + for<'de> Deserialize<'de>,
    {
        let typed: T = serde_json::from_value(value.clone()).expect("decode");
        let back = serde_json::to_value(&typed).expect("encode");
        assert_eq!(&back, value);
        typed
    }

    #[test]
    fn api_versions_matches_the_api_endpoint() {
        // The `/api` answer has a kind but no apiVersion.
        let doc = json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]
        });
        let typed: APIVersions = round_trip(&doc);
        assert_eq!(
            typed,
            APIVersions::new(
                vec!["v1".into()],
                vec![ServerAddressByClientCIDR {
                    client_cidr: "0.0.0.0/0".into(),
                    server_address: "10.0.0.1:6443".into(),
                }]
            )
        );
        // Non-omitempty lists are written even when empty.
        assert_eq!(
            serde_json::to_value(APIVersions::new(vec![], vec![])).expect("encode"),
            json!({"kind": "APIVersions", "versions": [], "serverAddressByClientCIDRs": []})
        );
    }

    #[test]
    fn group_list_nests_groups_without_type_meta() {
        let group = APIGroup::new(
            "apps",
            vec![
                GroupVersionForDiscovery::new("apps", "v1"),
                GroupVersionForDiscovery::new("apps", "v1beta1"),
            ],
        );
        let doc = json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [{
                "name": "apps",
                "versions": [
                    {"groupVersion": "apps/v1", "version": "v1"},
                    {"groupVersion": "apps/v1beta1", "version": "v1beta1"}
                ],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}
            }]
        });
        assert_eq!(
            serde_json::to_value(APIGroupList::new(vec![group.clone()])).expect("encode"),
            doc
        );
        let typed: APIGroupList = round_trip(&doc);
        assert_eq!(typed.groups, vec![group.clone()]);

        let single = serde_json::to_value(group.into_response()).expect("encode");
        assert_eq!(single["kind"], "APIGroup");
        assert_eq!(single["apiVersion"], "v1");
    }

    #[test]
    fn group_always_writes_preferred_version_and_omits_empty_cidrs() {
        let empty = serde_json::to_value(APIGroup::default()).expect("encode");
        assert_eq!(
            empty,
            json!({"name": "", "versions": [], "preferredVersion": {"groupVersion": "", "version": ""}})
        );
        let with_cidr = json!({
            "name": "batch",
            "versions": [],
            "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"},
            "serverAddressByClientCIDRs": [{"clientCIDR": "10.0.0.0/8", "serverAddress": "10.0.0.1"}]
        });
        let typed: APIGroup = round_trip(&with_cidr);
        assert_eq!(typed.server_address_by_client_cidrs.len(), 1);
    }

    #[test]
    fn resource_list_core_and_named_groups() {
        // Shape of `/api/v1` (no apiVersion, empty singularName always written).
        let core = json!({
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [
                {"name": "bindings", "singularName": "", "namespaced": true, "kind": "Binding", "verbs": ["create"]},
                {"name": "configmaps", "singularName": "configmap", "namespaced": true, "kind": "ConfigMap",
                 "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                 "shortNames": ["cm"], "storageVersionHash": "qFsyl6wFWjQ="}
            ]
        });
        let typed: APIResourceList = round_trip(&core);
        assert_eq!(typed.api_version, None);
        assert_eq!(typed.resources[1].short_names, vec!["cm"]);
        assert_eq!(
            serde_json::to_value(APIResourceList::legacy("v1", typed.resources.clone()))
                .expect("encode"),
            core
        );

        let named = serde_json::to_value(APIResourceList::new("apps/v1", vec![])).expect("encode");
        assert_eq!(
            named,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": []})
        );
    }

    #[test]
    fn null_lists_read_as_empty() {
        let doc = json!({"name": "x/status", "singularName": "", "namespaced": false, "kind": "X", "verbs": null});
        let typed: APIResource = serde_json::from_value(doc).expect("decode");
        assert!(typed.verbs.is_empty());
        assert_eq!(
            serde_json::to_value(&typed).expect("encode")["verbs"],
            json!([])
        );
        let list: APIResourceList =
            serde_json::from_value(json!({"groupVersion": "v1", "resources": null}))
                .expect("decode");
        assert!(list.resources.is_empty());
    }

    #[test]
    fn wrong_types_are_errors() {
        for bad in [
            json!({"name": 1}),
            json!({"namespaced": "yes"}),
            json!({"verbs": "get"}),
        ] {
            assert!(
                serde_json::from_value::<APIResource>(bad.clone()).is_err(),
                "{bad} should not decode"
            );
        }
    }

    #[test]
    fn for_kind_lists_resource_and_subresources() {
        let info = ResourceInfo {
            gvk: GroupVersionKind::new_static("apps", "v1", "Deployment"),
            plural: Cow::Borrowed("deployments"),
            singular: Cow::Borrowed("deployment"),
            short_names: Cow::Owned(vec![Cow::Borrowed("deploy")]),
            categories: Cow::Owned(vec![Cow::Borrowed("all")]),
            scope: Scope::Namespaced,
            verbs: Cow::Borrowed(Verb::ALL),
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
        let got = serde_json::to_value(APIResource::for_kind(&info)).expect("encode");
        assert_eq!(
            got,
            json!([
                {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
                 "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
                 "shortNames": ["deploy"], "categories": ["all"]},
                {"name": "deployments/status", "singularName": "", "namespaced": true, "kind": "Deployment",
                 "verbs": ["get", "patch", "update"]},
                {"name": "deployments/scale", "singularName": "", "namespaced": true, "group": "autoscaling",
                 "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}
            ])
        );
    }
}
