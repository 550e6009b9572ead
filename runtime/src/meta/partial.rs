//! `PartialObjectMetadata` and its list: any object reduced to its `metadata`.
//!
//! Servers answer with these when a client asks for
//! `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` (or
//! `as=PartialObjectMetadataList`), and Table rows carry them by default. Their own
//! `kind`/`apiVersion` are `PartialObjectMetadata[List]` and `meta.k8s.io/v1`, whatever the kind
//! of the underlying objects.

use serde::{Deserialize, Serialize};

use super::{ListMeta, ObjectMeta};
use crate::wire::null_as_default;

/// The `apiVersion` of the `meta.k8s.io/v1` kinds served in place of an object (partial
/// metadata, tables).
pub const META_API_VERSION: &str = "meta.k8s.io/v1";

/// Any object with only its `metadata` (`metav1.PartialObjectMetadata`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialObjectMetadata {
    /// `PartialObjectMetadata` when built by [`PartialObjectMetadata::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `meta.k8s.io/v1` when built by [`PartialObjectMetadata::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The object's metadata; always written (upstream's `omitempty` has no effect on a struct).
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ObjectMeta,
}

impl PartialObjectMetadata {
    /// The metadata-only form of an object, with `kind: PartialObjectMetadata` and
    /// `apiVersion: meta.k8s.io/v1`.
    pub fn new(metadata: ObjectMeta) -> Self {
        Self {
            kind: Some("PartialObjectMetadata".to_owned()),
            api_version: Some(META_API_VERSION.to_owned()),
            metadata,
        }
    }
}

/// A list of metadata-only objects (`metav1.PartialObjectMetadataList`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialObjectMetadataList {
    /// `PartialObjectMetadataList` when built by [`PartialObjectMetadataList::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `meta.k8s.io/v1` when built by [`PartialObjectMetadataList::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Resource version and continue token of the list; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ListMeta,
    /// The items; always written. Each carries `kind: PartialObjectMetadata` and `apiVersion:
    /// meta.k8s.io/v1`, as upstream's do.
    #[serde(default, deserialize_with = "null_as_default")]
    pub items: Vec<PartialObjectMetadata>,
}

impl PartialObjectMetadataList {
    /// A list with `kind: PartialObjectMetadataList` and `apiVersion: meta.k8s.io/v1`; each
    /// item is a [`PartialObjectMetadata::new`] of its metadata.
    pub fn new(metadata: ListMeta, items: Vec<ObjectMeta>) -> Self {
        Self {
            kind: Some("PartialObjectMetadataList".to_owned()),
            api_version: Some(META_API_VERSION.to_owned()),
            metadata,
            items: items.into_iter().map(PartialObjectMetadata::new).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn partial_object_round_trips_and_always_writes_metadata() {
        let doc = json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {
                "name": "web-0",
                "namespace": "default",
                "resourceVersion": "42",
                "labels": {"app": "web"}
            }
        });
        let typed: PartialObjectMetadata = serde_json::from_value(doc.clone()).expect("decode");
        assert_eq!(typed.metadata.name.as_deref(), Some("web-0"));
        assert_eq!(serde_json::to_value(&typed).expect("encode"), doc);

        let mut meta = ObjectMeta::namespaced("default", "web-0");
        meta.resource_version = Some("42".into());
        meta.labels.insert("app".into(), "web".into());
        assert_eq!(
            serde_json::to_value(PartialObjectMetadata::new(meta)).expect("encode"),
            doc
        );
        assert_eq!(
            serde_json::to_value(PartialObjectMetadata::default()).expect("encode"),
            json!({"metadata": {}})
        );
    }

    #[test]
    fn list_writes_metadata_and_items_even_when_empty() {
        assert_eq!(
            serde_json::to_value(PartialObjectMetadataList::new(ListMeta::default(), vec![]))
                .expect("encode"),
            json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {},
                "items": []
            })
        );
        let item = |name: &str| {
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": name}
            })
        };
        let doc = json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "7", "continue": "abc", "remainingItemCount": 3},
            "items": [item("a"), item("b")]
        });
        let typed: PartialObjectMetadataList = serde_json::from_value(doc.clone()).expect("decode");
        assert_eq!(typed.metadata.remaining_item_count, Some(3));
        assert_eq!(typed.items[1].metadata.name.as_deref(), Some("b"));
        assert_eq!(serde_json::to_value(&typed).expect("encode"), doc);
        let metas = typed.items.into_iter().map(|i| i.metadata).collect();
        let built = PartialObjectMetadataList::new(typed.metadata, metas);
        assert_eq!(serde_json::to_value(&built).expect("encode"), doc);
    }

    #[test]
    fn null_items_and_bad_shapes() {
        let typed: PartialObjectMetadataList =
            serde_json::from_value(json!({"metadata": null, "items": null})).expect("decode");
        assert!(typed.items.is_empty());
        for bad in [json!({"items": {}}), json!({"metadata": "x"})] {
            assert!(
                serde_json::from_value::<PartialObjectMetadataList>(bad.clone()).is_err(),
                "{bad} should not decode"
            );
        }
    }
}
