//! `ObjectMeta`, `ListMeta`, `TypeMeta` and `OwnerReference`: the metadata every object and list
//! carries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::wire::null_as_default;

use super::ManagedFieldsEntry;
use crate::Time;

/// The `apiVersion` and `kind` every serialized object starts with (`metav1.TypeMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeMeta {
    /// The kind, e.g. `Pod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The group and version, e.g. `apps/v1`, or `v1` for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
}

impl TypeMeta {
    /// A `TypeMeta` with both fields set.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            kind: Some(kind.into()),
            api_version: Some(api_version.into()),
        }
    }
}

/// The metadata of a persisted object (`metav1.ObjectMeta`).
///
/// Every field is optional upstream, so a default value serializes to `{}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Name, unique within the namespace (or the cluster, for cluster-scoped kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Prefix the server completes with random characters when `name` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Deprecated URL of the object; no longer set by servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    /// Server-assigned unique id, never reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Opaque version of the object's last modification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Sequence number of the desired state, bumped on spec changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the object was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// When the object will be deleted; set once deletion is requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// Grace period granted when deletion was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Identifying key/value pairs, matched by label selectors.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    /// Non-identifying key/value pairs for tools and extensions.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Objects this one depends on; garbage collection follows these.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub owner_references: Vec<OwnerReference>,
    /// Keys that must be cleared before the object is removed from storage.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub finalizers: Vec<String>,
    /// Which manager owns which fields, for server-side apply.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

impl ObjectMeta {
    /// Metadata with only a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            ..Self::default()
        }
    }

    /// Metadata with a namespace and a name.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..Self::default()
        }
    }

    /// The owner reference marked as the managing controller, if any.
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.owner_references
            .iter()
            .find(|r| r.controller == Some(true))
    }
}

/// A reference from a dependent object to its owner (`metav1.OwnerReference`).
///
/// The owner must be in the same namespace as the dependent, or cluster-scoped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// API version of the owner.
    #[serde(default)]
    pub api_version: String,
    /// Kind of the owner.
    #[serde(default)]
    pub kind: String,
    /// Name of the owner.
    #[serde(default)]
    pub name: String,
    /// UID of the owner.
    #[serde(default)]
    pub uid: String,
    /// Whether the owner is the managing controller; at most one reference may say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether deleting the owner in the foreground waits for this dependent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// The metadata of a list or a simple kind such as `Status` (`metav1.ListMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// Deprecated URL of the list; no longer set by servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    /// The version of the store the list was read at; watch from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// Token for the next page of a paginated list.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_: Option<String>,
    /// Estimated number of items after this page, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
    /// Set when the list is one shard of the collection (Kubernetes 1.36, alpha).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_info: Option<ShardInfo>,
}

/// The shard selector a sharded list response was produced with (`metav1.ShardInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardInfo {
    /// The shard selector from the request, echoed back.
    #[serde(default)]
    pub selector: String,
}

impl ListMeta {
    /// Whether every field is unset, so the value serializes to `{}`.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_object_meta_is_an_empty_object() {
        assert_eq!(serde_json::to_string(&ObjectMeta::default()).unwrap(), "{}");
        assert_eq!(
            serde_json::from_str::<ObjectMeta>("{}").unwrap(),
            ObjectMeta::default()
        );
    }

    #[test]
    fn full_object_meta_round_trips_in_upstream_field_order() {
        let input = r#"{"name":"web-0","generateName":"web-","namespace":"prod","selfLink":"/api/v1/namespaces/prod/pods/web-0","uid":"u-1","resourceVersion":"99","generation":4,"creationTimestamp":"2024-01-02T03:04:05Z","deletionTimestamp":"2024-01-02T04:00:00Z","deletionGracePeriodSeconds":30,"labels":{"a":"1","b":"2"},"annotations":{"note":"x"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"u-0","controller":true,"blockOwnerDeletion":true}],"finalizers":["example.com/cleanup"],"managedFields":[{"manager":"kubectl","operation":"Apply"}]}"#;
        let meta: ObjectMeta = serde_json::from_str(input).unwrap();
        assert_eq!(meta.generation, Some(4));
        assert_eq!(
            meta.creation_timestamp,
            Some("2024-01-02T03:04:05Z".parse().unwrap())
        );
        assert_eq!(meta.controller().map(|r| r.name.as_str()), Some("web"));
        assert_eq!(serde_json::to_string(&meta).unwrap(), input);
    }

    #[test]
    fn go_nulls_and_unknown_fields_are_accepted() {
        let meta: ObjectMeta = serde_json::from_value(json!({
            "name": "x",
            "creationTimestamp": null,
            "labels": null,
            "annotations": null,
            "ownerReferences": null,
            "finalizers": null,
            "managedFields": null,
            "somethingNew": {"a": 1}
        }))
        .unwrap();
        assert_eq!(meta, ObjectMeta::named("x"));
        assert_eq!(serde_json::to_value(&meta).unwrap(), json!({"name": "x"}));
    }

    #[test]
    fn bad_input_is_an_error() {
        let cases = [
            json!({"creationTimestamp": "yesterday"}),
            json!({"generation": "4"}),
            json!({"labels": ["a"]}),
            json!("not an object"),
        ];
        for input in cases {
            assert!(
                serde_json::from_value::<ObjectMeta>(input.clone()).is_err(),
                "{input}"
            );
        }
    }

    #[test]
    fn owner_reference_always_writes_required_fields() {
        assert_eq!(
            serde_json::to_value(OwnerReference::default()).unwrap(),
            json!({"apiVersion": "", "kind": "", "name": "", "uid": ""})
        );
    }

    #[test]
    fn list_meta_round_trips_and_omits_empty_fields() {
        let input = json!({
            "selfLink": "/api/v1/pods",
            "resourceVersion": "10",
            "continue": "tok",
            "remainingItemCount": 3
        });
        let meta: ListMeta = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(meta.continue_.as_deref(), Some("tok"));
        assert_eq!(meta.remaining_item_count, Some(3));
        assert!(!meta.is_empty());
        assert_eq!(serde_json::to_value(&meta).unwrap(), input);
        assert_eq!(serde_json::to_string(&ListMeta::default()).unwrap(), "{}");
        assert!(ListMeta::default().is_empty());
    }

    #[test]
    fn type_meta_writes_kind_first_and_omits_empty() {
        assert_eq!(
            serde_json::to_string(&TypeMeta::new("apps/v1", "Deployment")).unwrap(),
            r#"{"kind":"Deployment","apiVersion":"apps/v1"}"#
        );
        assert_eq!(serde_json::to_string(&TypeMeta::default()).unwrap(), "{}");
    }

    #[test]
    fn constructors_set_name_and_namespace() {
        let meta = ObjectMeta::namespaced("ns", "n");
        assert_eq!(
            serde_json::to_value(&meta).unwrap(),
            json!({"name": "n", "namespace": "ns"})
        );
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn opt_string() -> impl Strategy<Value = Option<String>> {
            proptest::option::of("[a-z0-9.-]{0,12}")
        }

        fn string_map() -> impl Strategy<Value = BTreeMap<String, String>> {
            proptest::collection::btree_map("[a-z./]{1,10}", ".{0,10}", 0..4)
        }

        prop_compose! {
            fn object_meta()(
                name in opt_string(),
                namespace in opt_string(),
                uid in opt_string(),
                resource_version in opt_string(),
                generation in proptest::option::of(any::<i64>()),
                created in proptest::option::of(0i64..4_000_000_000),
                labels in string_map(),
                annotations in string_map(),
                finalizers in proptest::collection::vec("[a-z./]{1,10}", 0..3),
            ) -> ObjectMeta {
                ObjectMeta {
                    name,
                    namespace,
                    uid,
                    resource_version,
                    generation,
                    creation_timestamp: created
                        .and_then(|s| jiff::Timestamp::from_second(s).ok())
                        .map(Time::from),
                    labels,
                    annotations,
                    finalizers,
                    ..ObjectMeta::default()
                }
            }
        }

        proptest! {
            #[test]
            fn object_meta_round_trips(meta in object_meta()) {
                let json = serde_json::to_value(&meta).unwrap();
                // Empty collections and unset fields never reach the wire.
                for (key, value) in json.as_object().unwrap() {
                    prop_assert!(!value.is_null(), "{key} written as null");
                    prop_assert!(value.as_object().is_none_or(|m| !m.is_empty()), "{key} written empty");
                    prop_assert!(value.as_array().is_none_or(|a| !a.is_empty()), "{key} written empty");
                }
                let back: ObjectMeta = serde_json::from_value(json).unwrap();
                prop_assert_eq!(back, meta);
            }
        }
    }
}
