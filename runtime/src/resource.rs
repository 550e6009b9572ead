//! The `Resource` trait and `ResourceInfo`, the static description of a served kind.
//!
//! Every kind, whether generated from a spec, derived by `kapi-macros` or created at run time from a
//! CRD, reaches the server through a [`ResourceInfo`]: the server never needs the concrete type. The
//! description uses `Cow<'static, _>` so generated code builds it in a `const` while run-time CRDs
//! build an owned one with the same type.

use std::borrow::Cow;
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::meta::ObjectMeta;
use crate::printer::{Cell, Releases};

/// A group, version and kind, e.g. `apps/v1 Deployment`. The core group is the empty string.
///
/// Its JSON form is upstream's `{"group":"apps","version":"v1","kind":"Deployment"}`, as used by
/// aggregated discovery; every field is always written and a missing one reads as empty, as in Go.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// API group, empty for the core group.
    #[serde(default, deserialize_with = "crate::wire::null_as_default")]
    pub group: Cow<'static, str>,
    /// API version within the group, e.g. `v1beta1`.
    #[serde(default, deserialize_with = "crate::wire::null_as_default")]
    pub version: Cow<'static, str>,
    /// Kind, CamelCase and singular, e.g. `Deployment`.
    #[serde(default, deserialize_with = "crate::wire::null_as_default")]
    pub kind: Cow<'static, str>,
}

impl GroupVersionKind {
    /// A GVK from static strings, usable in `const` items.
    pub const fn new_static(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
    ) -> Self {
        Self {
            group: Cow::Borrowed(group),
            version: Cow::Borrowed(version),
            kind: Cow::Borrowed(kind),
        }
    }

    /// The `apiVersion` string: `version` for the core group, else `group/version`.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }
}

impl fmt::Display for GroupVersionKind {
    /// Formats as upstream's deprecation warnings name a kind: `apps/v1beta1 Deployment`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version(), self.kind)
    }
}

/// The `apiVersion` string for a group and version.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// Whether objects of a kind live in a namespace or at cluster scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Objects live in a namespace (`/namespaces/<ns>/<plural>/<name>`).
    Namespaced,
    /// Objects are cluster-wide (`/<plural>/<name>`).
    Cluster,
}

/// An API verb as it appears in discovery documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// `GET` one object.
    Get,
    /// `GET` a collection.
    List,
    /// `GET ?watch=true`.
    Watch,
    /// `POST` to a collection.
    Create,
    /// `PUT` one object.
    Update,
    /// `PATCH` one object.
    Patch,
    /// `DELETE` one object.
    Delete,
    /// `DELETE` a collection.
    DeleteCollection,
}

impl Verb {
    /// Every verb, in the order discovery lists them.
    pub const ALL: &'static [Verb] = &[
        Verb::Create,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Get,
        Verb::List,
        Verb::Patch,
        Verb::Update,
        Verb::Watch,
    ];

    /// The discovery spelling, e.g. `deletecollection`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// The `scale` subresource of a kind: where replica counts and the selector live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scale {
    /// JSON path of the desired replicas, e.g. `.spec.replicas`.
    pub spec_replicas_path: Cow<'static, str>,
    /// JSON path of the observed replicas, e.g. `.status.replicas`.
    pub status_replicas_path: Cow<'static, str>,
    /// JSON path of the serialized label selector, if the kind has one.
    pub label_selector_path: Option<Cow<'static, str>>,
}

/// The subresources a kind serves besides the object itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subresources {
    /// Whether `/status` is served (and the main resource ignores `status` on writes).
    pub status: bool,
    /// The `/scale` subresource, if served.
    pub scale: Option<Scale>,
}

/// A Kubernetes minor release, e.g. `1.22`, against which lifecycle data is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeVersion {
    /// Major version (always 1 so far).
    pub major: u16,
    /// Minor version.
    pub minor: u16,
}

impl KubeVersion {
    /// `major.minor`.
    pub const fn new(major: u16, minor: u16) -> Self {
        Self { major, minor }
    }
}

impl fmt::Display for KubeVersion {
    /// Formats as upstream warnings do: `v1.22`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}.{}", self.major, self.minor)
    }
}

/// When a group/version/kind appeared, was deprecated and is removed, and what replaces it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lifecycle {
    /// The release that introduced this version of the kind.
    pub introduced: Option<KubeVersion>,
    /// The release that deprecated it.
    pub deprecated: Option<KubeVersion>,
    /// The release that stops serving it.
    pub removed: Option<KubeVersion>,
    /// The kind users should move to.
    pub replacement: Option<GroupVersionKind>,
    /// A custom warning that replaces the computed one (CRDs' `deprecationWarning`). Set without
    /// a `deprecated` release, it marks the kind deprecated in every release, as a CRD's
    /// `deprecated: true` does.
    pub warning: Option<Cow<'static, str>>,
}

impl Lifecycle {
    /// Whether requests in release `at` get a deprecation warning.
    pub fn is_deprecated_at(&self, at: KubeVersion) -> bool {
        match self.deprecated {
            Some(since) => since <= at,
            None => self.warning.is_some(),
        }
    }

    /// Whether the kind is no longer served in release `at`.
    pub fn is_removed_at(&self, at: KubeVersion) -> bool {
        self.removed.is_some_and(|removed| removed <= at)
    }
}

/// An additional printer column, shown by `kubectl get` through the Table representation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: Cow<'static, str>,
    /// OpenAPI type of the cell: `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: Cow<'static, str>,
    /// OpenAPI format hint, e.g. `int32` or `date-time`.
    pub format: Option<Cow<'static, str>>,
    /// Human-readable description.
    pub description: Option<Cow<'static, str>>,
    /// 0 for the default view, higher for `-o wide`.
    pub priority: i32,
    /// How the cell is computed: the value at a JSON path, or a printer rule.
    pub cell: Cell,
    /// The releases that show the column (all, for every kind but the built-ins).
    pub releases: Releases,
}

impl PrinterColumn {
    /// A column of a kind's static description, in the one call the derive writes per column
    /// (a struct literal of `Cow`s and `Option`s costs the compiler several times as much to
    /// check, paid for every column of every generated kind): `""` stands for no description.
    #[doc(hidden)]
    pub const fn derived(
        name: &'static str,
        type_: &'static str,
        format: Option<&'static str>,
        description: &'static str,
        priority: i32,
        cell: Cell,
        releases: Releases,
    ) -> Self {
        Self {
            name: Cow::Borrowed(name),
            type_: Cow::Borrowed(type_),
            format: match format {
                Some(format) => Some(Cow::Borrowed(format)),
                None => None,
            },
            description: if description.is_empty() {
                None
            } else {
                Some(Cow::Borrowed(description))
            },
            priority,
            cell,
            releases,
        }
    }

    /// A column showing the value at a simple JSON path, in every release, as a
    /// CustomResourceDefinition's `additionalPrinterColumns` entry.
    pub fn at_path(
        name: impl Into<Cow<'static, str>>,
        type_: impl Into<Cow<'static, str>>,
        json_path: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self {
            name: name.into(),
            type_: type_.into(),
            format: None,
            description: None,
            priority: 0,
            cell: Cell::Path(json_path.into()),
            releases: Releases::ALL,
        }
    }
}

/// Everything the server needs to know to serve a kind, without knowing its Rust type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// Group, version and kind.
    pub gvk: GroupVersionKind,
    /// The resource name in URLs: lowercase plural, e.g. `deployments`.
    pub plural: Cow<'static, str>,
    /// Lowercase singular, e.g. `deployment`.
    pub singular: Cow<'static, str>,
    /// Short names for kubectl, e.g. `deploy`.
    pub short_names: Cow<'static, [Cow<'static, str>]>,
    /// Categories such as `all`.
    pub categories: Cow<'static, [Cow<'static, str>]>,
    /// Namespaced or cluster scope.
    pub scope: Scope,
    /// The verbs served on the resource.
    pub verbs: Cow<'static, [Verb]>,
    /// The subresources served.
    pub subresources: Subresources,
    /// Deprecation and removal data.
    pub lifecycle: Lifecycle,
    /// Additional printer columns for the Table representation.
    pub printer_columns: Cow<'static, [PrinterColumn]>,
    /// Field paths usable in field selectors besides `metadata.name` and `metadata.namespace`.
    pub selectable_fields: Cow<'static, [Cow<'static, str>]>,
    /// The labels `fieldSelector` accepts and what each reads (a custom resource's by default).
    pub field_labels: crate::field_labels::FieldLabels,
    /// The fields writes leave out that the server fills in, in order.
    pub defaults: Cow<'static, [crate::defaulting::Default]>,
    /// What writes do to the generation and status.
    pub write_rules: crate::write_rules::WriteRules,
    /// The family of a built-in resource served in several versions or groups: where its
    /// objects are stored and how they convert; `None` stores objects as written, under the
    /// kind's own group.
    pub family: Option<&'static crate::conversion::Family>,
}

impl ResourceInfo {
    /// The `apiVersion` of objects of this kind.
    pub fn api_version(&self) -> String {
        self.gvk.api_version()
    }

    /// The kind of the list type, `<Kind>List`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.gvk.kind)
    }

    /// Whether the kind is served at namespace scope.
    pub fn is_namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }
}

/// A Kubernetes kind: an object with `apiVersion`, `kind` and `metadata`.
///
/// Implemented by generated kinds and by `#[derive(Resource)]`/`#[derive(CustomResource)]`. The
/// constants are what code needs at compile time (URLs, `apiVersion`); [`Resource::info`] is the full
/// description the server registers.
pub trait Resource: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {
    /// API group; empty for the core group.
    const GROUP: &'static str;
    /// API version within the group.
    const VERSION: &'static str;
    /// Kind, CamelCase and singular.
    const KIND: &'static str;
    /// Resource name in URLs, lowercase plural.
    const PLURAL: &'static str;
    /// Namespaced or cluster scope.
    const SCOPE: Scope;

    /// The type of the object's `metadata`: kapi's [`ObjectMeta`], or k8s-openapi's for kinds made
    /// for the `kube` crate (`#[resource(kube)]`, feature `kube`).
    type Metadata: ObjectMetaAccess;

    /// The static description of the kind, agreeing with the constants above.
    fn info() -> &'static ResourceInfo;

    /// The object's metadata.
    fn metadata(&self) -> &Self::Metadata;

    /// The object's metadata, mutably.
    fn metadata_mut(&mut self) -> &mut Self::Metadata;

    /// How strategic merge patch and server-side apply walk objects of this kind
    /// (`x-kubernetes-list-type` and friends), when the kind declares any.
    fn merge_info() -> Option<&'static crate::merge::TypeInfo> {
        None
    }

    /// The `apiVersion` of objects of this kind: `version` or `group/version`.
    fn api_version() -> Cow<'static, str> {
        if Self::GROUP.is_empty() {
            Cow::Borrowed(Self::VERSION)
        } else {
            Cow::Owned(format!("{}/{}", Self::GROUP, Self::VERSION))
        }
    }
}

/// What kapi reads and sets of an object's metadata, whichever `ObjectMeta` type holds it: kapi's
/// own, or (feature `kube`) k8s-openapi's, which kinds made for the `kube` crate carry.
pub trait ObjectMetaAccess: Clone + Default + fmt::Debug + Send + Sync + 'static {
    /// `metadata.name`.
    fn name(&self) -> Option<&str>;
    /// Sets `metadata.name`.
    fn set_name(&mut self, name: String);
    /// `metadata.namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.generation`.
    fn generation(&self) -> Option<i64>;
}

/// `ObjectMetaAccess` for an `ObjectMeta` type with upstream's field names, which kapi's and
/// k8s-openapi's both have.
macro_rules! object_meta_access {
    ($ty:ty) => {
        impl $crate::resource::ObjectMetaAccess for $ty {
            fn name(&self) -> Option<&str> {
                self.name.as_deref()
            }

            fn set_name(&mut self, name: String) {
                self.name = Some(name);
            }

            fn namespace(&self) -> Option<&str> {
                self.namespace.as_deref()
            }

            fn generation(&self) -> Option<i64> {
                self.generation
            }
        }
    };
}
#[cfg(feature = "kube")]
pub(crate) use object_meta_access;

object_meta_access!(ObjectMeta);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle_compares_releases() {
        let ingress = Lifecycle {
            introduced: Some(KubeVersion::new(1, 1)),
            deprecated: Some(KubeVersion::new(1, 14)),
            removed: Some(KubeVersion::new(1, 22)),
            ..Lifecycle::default()
        };
        assert!(!ingress.is_deprecated_at(KubeVersion::new(1, 13)));
        assert!(ingress.is_deprecated_at(KubeVersion::new(1, 14)));
        assert!(!ingress.is_removed_at(KubeVersion::new(1, 21)));
        assert!(ingress.is_removed_at(KubeVersion::new(1, 22)));
        let crd = Lifecycle {
            warning: Some(Cow::Borrowed("old")),
            ..Lifecycle::default()
        };
        assert!(crd.is_deprecated_at(KubeVersion::new(1, 0)));
        assert!(!crd.is_removed_at(KubeVersion::new(9, 9)));
        assert!(!Lifecycle::default().is_deprecated_at(KubeVersion::new(1, 36)));
    }

    #[test]
    fn gvk_formats_like_upstream_warnings() {
        let gvk = GroupVersionKind::new_static("extensions", "v1beta1", "Ingress");
        assert_eq!(gvk.to_string(), "extensions/v1beta1 Ingress");
        assert_eq!(
            GroupVersionKind::new_static("", "v1", "Pod").api_version(),
            "v1"
        );
        assert_eq!(KubeVersion::new(1, 22).to_string(), "v1.22");
    }
}
