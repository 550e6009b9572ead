//! Conversion between versions of one kind through a hub version.
//!
//! Each version is its own Rust type. One of them is the hub, which is also the version objects
//! are stored in; every other version (a spoke) converts to and from it with `From` impls, so n
//! versions need 2(n-1) impls instead of n(n-1). [`Conversions`] collects the versions and turns
//! those impls into JSON-to-JSON functions; [`Registry::register_versions`] hands them to the
//! server, which then stores every object of the kind in the hub's version and serves each
//! version by converting, as kube-apiserver does for a CRD with a conversion webhook:
//!
//! ```
//! use kapi::crd::Conversions;
//! use kapi::Registry;
//!
//! mod v1 {
//!     use kapi::meta::ObjectMeta;
//!     use kapi::type_tag::{ApiVersion, Kind};
//!     use serde::{Deserialize, Serialize};
//!     /// Stored version: the size as a number.
//!     #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
//!     #[resource(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//!     pub struct Widget {
//!         #[serde(rename = "apiVersion")]
//!         pub api_version: ApiVersion<Self>,
//!         pub kind: Kind<Self>,
//!         #[serde(default)]
//!         pub metadata: ObjectMeta,
//!         #[serde(default)]
//!         pub replicas: i32,
//!     }
//!     impl kapi::crd::Hub for Widget {}
//! }
//!
//! mod v1alpha1 {
//!     use kapi::meta::ObjectMeta;
//!     use kapi::type_tag::{ApiVersion, Kind};
//!     use serde::{Deserialize, Serialize};
//!     /// Old version: the size as text.
//!     #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
//!     #[resource(group = "example.com", version = "v1alpha1", kind = "Widget", namespaced)]
//!     pub struct Widget {
//!         #[serde(rename = "apiVersion")]
//!         pub api_version: ApiVersion<Self>,
//!         pub kind: Kind<Self>,
//!         #[serde(default)]
//!         pub metadata: ObjectMeta,
//!         #[serde(default)]
//!         pub size: String,
//!     }
//! }
//!
//! impl From<v1alpha1::Widget> for v1::Widget {
//!     fn from(old: v1alpha1::Widget) -> Self {
//!         let replicas = old.size.parse().unwrap_or(0);
//!         v1::Widget { metadata: old.metadata, replicas, ..Default::default() }
//!     }
//! }
//!
//! impl From<v1::Widget> for v1alpha1::Widget {
//!     fn from(new: v1::Widget) -> Self {
//!         let size = new.replicas.to_string();
//!         v1alpha1::Widget { metadata: new.metadata, size, ..Default::default() }
//!     }
//! }
//!
//! let mut registry = Registry::new();
//! // Registers both versions and serves them from objects stored as v1.
//! registry.register_versions(Conversions::<v1::Widget>::new().spoke::<v1alpha1::Widget>());
//! let conversion = registry.conversion("example.com", "widgets").unwrap();
//! assert_eq!(conversion.storage_version(), "v1");
//!
//! let served = conversion
//!     .convert(
//!         serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
//!                            "metadata": {"name": "a"}, "replicas": 3}),
//!         "v1alpha1",
//!     )
//!     .unwrap();
//! assert_eq!(served["size"], "3");
//! ```

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Map, Value};

use crate::Resource;
use crate::meta::ObjectMeta;
use crate::registry::{self, RegisteredKind};

/// Marks the version every other version of the kind converts through, and that objects of
/// the kind are stored in once the versions are registered with
/// [`Registry::register_versions`](crate::Registry::register_versions).
pub trait Hub: Resource {}

/// Converts `object` to the hub and back: for a lossless pair of `From` impls this gives the
/// object unchanged, which tests should assert.
pub fn round_trip<K, H>(object: K) -> K
where
    H: Hub + From<K>,
    K: From<H>,
{
    K::from(H::from(object))
}

type Step = fn(Value) -> Result<Value, serde_json::Error>;

/// One version of a kind family: its way to the hub and back, and its registry entry.
#[derive(Debug, Clone, Copy)]
struct Version {
    up: Step,
    down: Step,
    kind: fn() -> RegisteredKind,
}

/// The versions of one kind and their conversions through the hub, with the hub's Rust type
/// forgotten: what a [`Registry`](crate::Registry) keeps once [`Conversions`] are registered,
/// and what the server converts with.
#[derive(Debug, Clone)]
pub struct VersionConverter {
    group: String,
    plural: String,
    kind: String,
    hub: String,
    versions: BTreeMap<String, Version>,
}

/// JSON conversion between the versions of one kind, through hub `H`: a builder of the kind's
/// version family for [`Registry::register_versions`](crate::Registry::register_versions).
#[derive(Debug, Clone)]
pub struct Conversions<H> {
    converter: VersionConverter,
    hub: std::marker::PhantomData<fn() -> H>,
}

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The object or target names a version that is not registered (the object's whole
    /// `apiVersion` when its group is another).
    #[error("no conversion registered for version {0:?}")]
    UnknownVersion(String),
    /// The object has no `apiVersion`.
    #[error("object has no apiVersion")]
    NoApiVersion,
    /// The object does not decode as its version's type.
    #[error("object does not decode: {0}")]
    Decode(#[from] serde_json::Error),
    /// A `From` impl panicked; the text is the panic's message.
    #[error("conversion panicked: {0}")]
    Panicked(String),
}

fn to_hub<K, H>(value: Value) -> Result<Value, serde_json::Error>
where
    K: Resource,
    H: Hub + From<K>,
{
    serde_json::to_value(H::from(serde_json::from_value::<K>(value)?))
}

fn from_hub<K, H>(value: Value) -> Result<Value, serde_json::Error>
where
    K: Resource + From<H>,
    H: Hub,
{
    serde_json::to_value(K::from(serde_json::from_value::<H>(value)?))
}

fn identity(value: Value) -> Result<Value, serde_json::Error> {
    Ok(value)
}

impl<H: Hub> Default for Conversions<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: Hub> Conversions<H> {
    /// Conversions with only the hub registered.
    pub fn new() -> Self {
        let mut versions = BTreeMap::new();
        versions.insert(
            H::VERSION.to_owned(),
            Version {
                up: identity,
                down: identity,
                kind: registry::entry_of::<H>,
            },
        );
        Self {
            converter: VersionConverter {
                group: H::GROUP.to_owned(),
                plural: H::PLURAL.to_owned(),
                kind: H::KIND.to_owned(),
                hub: H::VERSION.to_owned(),
                versions,
            },
            hub: std::marker::PhantomData,
        }
    }

    /// Registers version `K`, converted through the hub by its `From` impls. `K` must be a
    /// version of the hub's resource (same group, kind and plural); a type that is not is no
    /// version of it and is left out.
    pub fn spoke<K>(mut self) -> Self
    where
        K: Resource + From<H>,
        H: From<K>,
    {
        if K::GROUP == H::GROUP && K::KIND == H::KIND && K::PLURAL == H::PLURAL {
            self.converter.versions.insert(
                K::VERSION.to_owned(),
                Version {
                    up: to_hub::<K, H>,
                    down: from_hub::<K, H>,
                    kind: registry::entry_of::<K>,
                },
            );
        }
        self
    }

    /// The registered version names.
    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.converter.versions()
    }

    /// Converts `object` (any registered version, read from its `apiVersion`) to `to_version`.
    /// See [`VersionConverter::convert`].
    pub fn convert(&self, object: Value, to_version: &str) -> Result<Value, ConversionError> {
        self.converter.convert(object, to_version)
    }

    /// The conversions with the hub's type forgotten.
    pub fn into_converter(self) -> VersionConverter {
        self.converter
    }
}

impl VersionConverter {
    /// The API group of the kind.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The resource (plural) the versions are served as.
    pub fn plural(&self) -> &str {
        &self.plural
    }

    /// The kind's name.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The version objects are stored in: the hub's.
    pub fn storage_version(&self) -> &str {
        &self.hub
    }

    /// The registered version names, hub included, sorted.
    pub fn versions(&self) -> impl Iterator<Item = &str> {
        self.versions.keys().map(String::as_str)
    }

    /// Whether `version` is one of the registered versions.
    pub fn has_version(&self, version: &str) -> bool {
        self.versions.contains_key(version)
    }

    /// The registry entries of every version, hub first.
    pub(crate) fn entries(&self) -> impl Iterator<Item = RegisteredKind> {
        let hub = self.versions.get(&self.hub).map(|v| (v.kind)());
        let spokes = self
            .versions
            .iter()
            .filter(|(name, _)| **name != self.hub)
            .map(|(_, v)| (v.kind)());
        hub.into_iter().chain(spokes)
    }

    /// Converts `object` (any registered version, read from its `apiVersion`) to `to_version`,
    /// through the hub.
    ///
    /// As kube-apiserver does for a conversion webhook, the conversion may change only the
    /// object's `labels` and `annotations` in `metadata` (so a lossy version can stash fields
    /// there); every other metadata field (name, uid, resourceVersion, ...) is copied from
    /// `object`, whatever the `From` impls did with it. A `From` impl that panics fails the
    /// conversion with [`ConversionError::Panicked`] instead of unwinding into the caller.
    pub fn convert(&self, object: Value, to_version: &str) -> Result<Value, ConversionError> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or(ConversionError::NoApiVersion)?;
        let (group, from_version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        if group != self.group {
            return Err(ConversionError::UnknownVersion(api_version.to_owned()));
        }
        let from_version = from_version.to_owned();
        if from_version == to_version {
            return Ok(object);
        }
        let up = self
            .versions
            .get(&from_version)
            .ok_or_else(|| ConversionError::UnknownVersion(from_version.clone()))?
            .up;
        let down = self
            .versions
            .get(to_version)
            .ok_or_else(|| ConversionError::UnknownVersion(to_version.to_owned()))?
            .down;
        let original = object.get("metadata").cloned();
        let converted = catch_unwind(AssertUnwindSafe(|| down(up(object)?)))
            .map_err(|panic| ConversionError::Panicked(panic_message(panic.as_ref())))??;
        restore_metadata(original, converted)
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a From impl panicked".to_owned()
    }
}

/// `converted` with `original`'s metadata, except the labels and annotations the conversion
/// produced. Metadata goes through [`ObjectMeta`] so its fields are always in one order: the
/// server compares stored bytes to detect no-op writes.
fn restore_metadata(
    original: Option<Value>,
    mut converted: Value,
) -> Result<Value, ConversionError> {
    let Value::Object(object) = &mut converted else {
        return Ok(converted);
    };
    let produced = object.remove("metadata");
    let mut meta: ObjectMeta = match original {
        Some(original) => serde_json::from_value(original)?,
        None => ObjectMeta::default(),
    };
    let produced: ObjectMeta = match produced {
        Some(produced) => serde_json::from_value(produced)?,
        None => ObjectMeta::default(),
    };
    meta.labels = produced.labels;
    meta.annotations = produced.annotations;
    let meta = serde_json::to_value(meta)?;
    // `metadata` goes back after `apiVersion` and `kind`, where the types put it.
    let mut ordered = Map::with_capacity(object.len() + 1);
    let mut placed = false;
    for (key, value) in std::mem::take(object) {
        if !placed && key != "apiVersion" && key != "kind" {
            ordered.insert("metadata".to_owned(), meta.clone());
            placed = true;
        }
        ordered.insert(key, value);
    }
    if !placed {
        ordered.insert("metadata".to_owned(), meta);
    }
    Ok(Value::Object(ordered))
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;
    use crate::type_tag::{ApiVersion, Kind};

    mod v2 {
        use super::*;

        #[derive(Clone, Debug, Default, Serialize, Deserialize, crate::Resource)]
        #[resource(crate = "crate", group = "t.dev", version = "v2", kind = "Thing")]
        pub(super) struct Thing {
            #[serde(rename = "apiVersion")]
            pub(super) api_version: ApiVersion<Self>,
            pub(super) kind: Kind<Self>,
            #[serde(default)]
            pub(super) metadata: ObjectMeta,
            #[serde(default)]
            pub(super) count: i64,
        }

        impl Hub for Thing {}
    }

    mod v1 {
        use super::*;

        #[derive(Clone, Debug, Default, Serialize, Deserialize, crate::Resource)]
        #[resource(crate = "crate", group = "t.dev", version = "v1", kind = "Thing")]
        pub(super) struct Thing {
            #[serde(rename = "apiVersion")]
            pub(super) api_version: ApiVersion<Self>,
            pub(super) kind: Kind<Self>,
            #[serde(default)]
            pub(super) metadata: ObjectMeta,
            #[serde(default)]
            pub(super) amount: String,
        }
    }

    mod other {
        use super::*;

        #[derive(Clone, Debug, Default, Serialize, Deserialize, crate::Resource)]
        #[resource(crate = "crate", group = "o.dev", version = "v1", kind = "Thing")]
        pub(super) struct Thing {
            #[serde(rename = "apiVersion")]
            pub(super) api_version: ApiVersion<Self>,
            pub(super) kind: Kind<Self>,
            #[serde(default)]
            pub(super) metadata: ObjectMeta,
        }

        impl From<v2::Thing> for Thing {
            fn from(_: v2::Thing) -> Self {
                Thing::default()
            }
        }

        impl From<Thing> for v2::Thing {
            fn from(_: Thing) -> Self {
                v2::Thing::default()
            }
        }
    }

    // The down conversion drops metadata and panics on a marker value; the up one records
    // the old text in an annotation.
    impl From<v1::Thing> for v2::Thing {
        fn from(old: v1::Thing) -> Self {
            let mut metadata = old.metadata;
            metadata
                .annotations
                .insert("t.dev/amount".to_owned(), old.amount.clone());
            v2::Thing {
                metadata,
                count: old.amount.parse().unwrap_or(-1),
                ..Default::default()
            }
        }
    }

    impl From<v2::Thing> for v1::Thing {
        fn from(new: v2::Thing) -> Self {
            assert!(new.count != 13, "unlucky count");
            let mut metadata = ObjectMeta::default();
            metadata.labels.insert("seen".to_owned(), "v1".to_owned());
            v1::Thing {
                metadata,
                amount: new.count.to_string(),
                ..Default::default()
            }
        }
    }

    fn conversions() -> Conversions<v2::Thing> {
        Conversions::<v2::Thing>::new()
            .spoke::<v1::Thing>()
            .spoke::<other::Thing>()
    }

    #[test]
    fn converts_through_the_hub_and_keeps_metadata_but_labels_and_annotations() {
        let converter = conversions().into_converter();
        assert_eq!(converter.versions().collect::<Vec<_>>(), ["v1", "v2"]);
        assert_eq!(converter.storage_version(), "v2");
        assert_eq!(
            (converter.group(), converter.plural(), converter.kind()),
            ("t.dev", "things", "Thing")
        );
        let entries: Vec<_> = converter
            .entries()
            .map(|k| k.info.gvk.version.to_string())
            .collect();
        assert_eq!(entries, ["v2", "v1"]);

        let old = json!({"apiVersion": "t.dev/v1", "kind": "Thing",
                         "metadata": {"name": "a", "uid": "u-1", "labels": {"x": "y"}},
                         "amount": "7"});
        let stored = converter.convert(old, "v2").unwrap();
        assert_eq!(
            stored,
            json!({"apiVersion": "t.dev/v2", "kind": "Thing",
                   "metadata": {"name": "a", "uid": "u-1", "labels": {"x": "y"},
                                "annotations": {"t.dev/amount": "7"}},
                   "count": 7})
        );
        // v1's From impl forgot the name and uid and set its own labels: only the labels
        // are taken.
        let served = converter.convert(stored, "v1").unwrap();
        assert_eq!(
            served,
            json!({"apiVersion": "t.dev/v1", "kind": "Thing",
                   "metadata": {"name": "a", "uid": "u-1", "labels": {"seen": "v1"}},
                   "amount": "7"})
        );
    }

    #[test]
    fn failures_are_errors_not_panics() {
        let converter = conversions().into_converter();
        let hub = |count: Value| json!({"apiVersion": "t.dev/v2", "kind": "Thing", "count": count});
        let cases: Vec<(Value, &str, &str)> = vec![
            (hub(json!(13)), "v1", "conversion panicked: unlucky count"),
            (hub(json!("x")), "v1", "object does not decode"),
            (
                hub(json!(1)),
                "v9",
                "no conversion registered for version \"v9\"",
            ),
            (json!({"kind": "Thing"}), "v1", "object has no apiVersion"),
            // The type of another group is not a version of this kind.
            (
                json!({"apiVersion": "o.dev/v1", "kind": "Thing"}),
                "v2",
                "no conversion registered",
            ),
        ];
        for (object, to, want) in cases {
            let error = converter.convert(object.clone(), to).unwrap_err();
            assert!(
                error.to_string().starts_with(want),
                "{object} → {to}: {error}"
            );
        }
        // The same version is returned as it is, undecoded.
        let same = json!({"apiVersion": "t.dev/v1", "kind": "Thing", "amount": 1});
        assert_eq!(converter.convert(same.clone(), "v1").unwrap(), same);
    }
}
