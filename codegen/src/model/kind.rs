//! Kinds and the REST resources that serve them: GVKs, scope, verbs, subresources.
//!
//! A [`Kind`] is every (group, version, kind) a spec stamps on a type definition. Only kinds with a
//! top-level resource path (or a CRD version) carry a [`Resource`]; the meta kinds upstream stamps on
//! every group-version (DeleteOptions, WatchEvent, Status, ...) and subresource kinds (Scale,
//! Eviction) stay plain kinds.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// An API group and version; the core group is the empty string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupVersion {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The version, e.g. `v1beta1`.
    pub version: String,
}

impl fmt::Display for GroupVersion {
    /// Formats as `apiVersion` is written: `apps/v1`, or `v1` for the core group.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

/// A group, version and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    /// The API group, `""` for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

impl Gvk {
    /// Builds a GVK from its parts.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The group-version part.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion {
            group: self.group.clone(),
            version: self.version.clone(),
        }
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.group_version(), self.kind)
    }
}

/// One kind of the model and the definition that describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Kind {
    /// The kind's group, version and name.
    pub gvk: Gvk,
    /// Name of the type definition in [`crate::model::Model::types`].
    pub definition: String,
    /// The REST resource serving this kind, if the spec serves it.
    pub resource: Option<Resource>,
}

/// Whether objects live in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Objects live in a namespace.
    Namespaced,
    /// Objects are cluster-wide.
    Cluster,
}

impl Scope {
    /// The name used by CRDs and discovery (`Namespaced`, `Cluster`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Namespaced => "Namespaced",
            Self::Cluster => "Cluster",
        }
    }
}

/// A discovery verb. Declared in alphabetical order so sets print the way discovery lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// POST to the collection.
    Create,
    /// DELETE one object.
    Delete,
    /// DELETE the collection.
    DeleteCollection,
    /// GET one object.
    Get,
    /// GET the collection.
    List,
    /// PATCH one object.
    Patch,
    /// PUT one object.
    Update,
    /// Watch one object or the collection.
    Watch,
}

impl Verb {
    /// Every verb a CRD version serves.
    pub const ALL: [Verb; 8] = [
        Verb::Create,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Get,
        Verb::List,
        Verb::Patch,
        Verb::Update,
        Verb::Watch,
    ];

    /// The verb as discovery spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
            Self::Get => "get",
            Self::List => "list",
            Self::Patch => "patch",
            Self::Update => "update",
            Self::Watch => "watch",
        }
    }

    /// Maps an `x-kubernetes-action` to a verb; `connect` depends on the HTTP method and is
    /// handled by [`Verb::from_method`].
    pub fn from_action(action: &str) -> Option<Self> {
        Some(match action {
            "get" => Self::Get,
            "list" => Self::List,
            "watch" | "watchlist" => Self::Watch,
            "post" => Self::Create,
            "put" => Self::Update,
            "patch" => Self::Patch,
            "delete" => Self::Delete,
            "deletecollection" => Self::DeleteCollection,
            _ => return None,
        })
    }

    /// The verb discovery reports for a connect operation with this HTTP method (`None` for
    /// HEAD and OPTIONS, which discovery does not list).
    pub fn from_method(method: &str) -> Option<Self> {
        Some(match method {
            "get" => Self::Get,
            "post" => Self::Create,
            "put" => Self::Update,
            "patch" => Self::Patch,
            "delete" => Self::Delete,
            _ => return None,
        })
    }
}

/// A top-level REST resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// The plural resource name used in URLs, e.g. `deployments`.
    pub plural: String,
    /// Namespaced or cluster scoped.
    pub scope: Scope,
    /// Verbs the resource serves.
    pub verbs: BTreeSet<Verb>,
    /// Subresources by name (`status`, `scale`, `log`, `exec`, ...).
    pub subresources: BTreeMap<String, Subresource>,
    /// Naming and lifecycle data that only CRDs declare.
    pub crd: Option<CrdVersion>,
}

/// One subresource of a resource.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Subresource {
    /// The kind the subresource accepts or returns (e.g. autoscaling/v1 Scale), if declared.
    pub kind: Option<Gvk>,
    /// Verbs the subresource serves.
    pub verbs: BTreeSet<Verb>,
    /// For a CRD's scale subresource: where replicas and the selector live.
    pub scale: Option<ScalePaths>,
}

/// JSON paths of a CRD's scale subresource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScalePaths {
    /// `specReplicasPath`.
    pub spec_replicas: String,
    /// `statusReplicasPath`.
    pub status_replicas: String,
    /// `labelSelectorPath`.
    pub label_selector: Option<String>,
}

/// What a CRD declares about one of its versions beyond the resource shape.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CrdVersion {
    /// `names.singular`.
    pub singular: Option<String>,
    /// `names.shortNames`.
    pub short_names: Vec<String>,
    /// `names.categories`.
    pub categories: Vec<String>,
    /// `names.listKind`.
    pub list_kind: Option<String>,
    /// The version is served.
    pub served: bool,
    /// The version is the storage version.
    pub storage: bool,
    /// The version is deprecated.
    pub deprecated: bool,
    /// The custom deprecation warning, if any.
    pub deprecation_warning: Option<String>,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// JSON paths of `selectableFields`.
    pub selectable_fields: Vec<String>,
}

/// A printer column: one of a CRD version's `additionalPrinterColumns`, or a built-in kind's
/// from the printer data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type of the column (`string`, `integer`, `date`, ...).
    pub ty: String,
    /// Optional OpenAPI format.
    pub format: Option<String>,
    /// Human readable description.
    pub description: Option<String>,
    /// Columns with priority above 0 show only in wide output.
    pub priority: i64,
    /// What the cell shows.
    pub cell: ColumnCell,
    /// The first release that shows the column (every release when absent).
    pub since: Option<(u16, u16)>,
    /// The first release that no longer shows it.
    pub until: Option<(u16, u16)>,
}

/// What a printer column's cell shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnCell {
    /// The value at a simple JSON path (a CRD's `jsonPath`).
    Path(String),
    /// A `kapi::printer::Rule` with its paths, as written: `ratio(.status.readyReplicas, .spec.replicas)`.
    Rule(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_map_to_discovery_verbs() {
        let cases = [
            ("get", Some(Verb::Get)),
            ("list", Some(Verb::List)),
            ("watch", Some(Verb::Watch)),
            ("watchlist", Some(Verb::Watch)),
            ("post", Some(Verb::Create)),
            ("put", Some(Verb::Update)),
            ("patch", Some(Verb::Patch)),
            ("delete", Some(Verb::Delete)),
            ("deletecollection", Some(Verb::DeleteCollection)),
            ("connect", None),
            ("frobnicate", None),
        ];
        for (action, want) in cases {
            assert_eq!(Verb::from_action(action), want, "{action}");
        }
        assert_eq!(Verb::from_method("post"), Some(Verb::Create));
        assert_eq!(Verb::from_method("head"), None);
    }

    #[test]
    fn verbs_sort_alphabetically() {
        let names: Vec<&str> = Verb::ALL.iter().map(|v| v.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn group_versions_format_like_api_version() {
        assert_eq!(Gvk::new("", "v1", "Pod").group_version().to_string(), "v1");
        assert_eq!(
            Gvk::new("apps", "v1", "Deployment").to_string(),
            "apps/v1 Deployment"
        );
    }
}
