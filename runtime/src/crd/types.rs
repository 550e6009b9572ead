//! The CustomResourceDefinition object (`apiextensions.k8s.io/v1`), field for field.
//!
//! Omission rules are Go's: `omitempty` fields are skipped when empty, the rest always written.
//! One deliberate difference: `status` is skipped when unset, because Go's always-written empty
//! status (`acceptedNames: {plural: "", kind: ""}`) only adds noise to a manifest.

use serde::{Deserialize, Serialize};

use crate::meta::ObjectMeta;
use crate::schema::JSONSchemaProps;
use crate::type_tag::{ApiVersion, Kind};
use crate::{ByteString, ResourceInfo, Scope, Time};

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

/// A CustomResourceDefinition: a kind the server serves from a schema.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, crate::Resource)]
#[resource(
    crate = "crate",
    group = "apiextensions.k8s.io",
    version = "v1",
    kind = "CustomResourceDefinition",
    plural = "customresourcedefinitions",
    singular = "customresourcedefinition",
    cluster,
    short_names = ["crd", "crds"],
    categories = ["api-extensions"],
    status
)]
pub struct CustomResourceDefinition {
    /// `apiextensions.k8s.io/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: ApiVersion<Self>,
    /// `CustomResourceDefinition`.
    pub kind: Kind<Self>,
    /// The name must be `<plural>.<group>`.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The kind's definition.
    pub spec: CustomResourceDefinitionSpec,
    /// What the server accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CustomResourceDefinitionStatus>,
}

/// `spec` of a CRD.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionSpec {
    /// The API group, a DNS subdomain with at least one dot.
    pub group: String,
    /// The resource and kind names.
    pub names: CustomResourceDefinitionNames,
    /// `Namespaced` or `Cluster`.
    pub scope: String,
    /// The served versions; exactly one has `storage: true`.
    pub versions: Vec<CustomResourceDefinitionVersion>,
    /// How objects convert between versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion: Option<CustomResourceConversion>,
    /// Deprecated: keep unknown fields everywhere (must be false in v1).
    #[serde(default, skip_serializing_if = "is_false")]
    pub preserve_unknown_fields: bool,
}

/// `spec.names` (and `status.acceptedNames`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionNames {
    /// Resource name in URLs, e.g. `widgets`.
    pub plural: String,
    /// Lowercase singular, e.g. `widget`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub singular: String,
    /// Short names for kubectl.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// The kind, e.g. `Widget`.
    pub kind: String,
    /// The list kind, e.g. `WidgetList`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub list_kind: String,
    /// Categories such as `all`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

/// One version of a CRD.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionVersion {
    /// The version name, e.g. `v1`.
    pub name: String,
    /// Whether the version is served.
    pub served: bool,
    /// Whether objects are stored in this version.
    pub storage: bool,
    /// Whether requests get a deprecation warning.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deprecated: bool,
    /// The warning text instead of the server's default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    /// The schema objects of this version are validated, pruned and defaulted with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<CustomResourceValidation>,
    /// The `/status` and `/scale` subresources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresources: Option<CustomResourceSubresources>,
    /// Columns for `kubectl get`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_printer_columns: Vec<CustomResourceColumnDefinition>,
    /// Fields usable in field selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selectable_fields: Vec<SelectableField>,
}

/// `schema` of a version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomResourceValidation {
    /// The structural OpenAPI v3 schema.
    #[serde(
        default,
        rename = "openAPIV3Schema",
        skip_serializing_if = "Option::is_none"
    )]
    pub open_api_v3_schema: Option<JSONSchemaProps>,
}

/// `subresources` of a version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomResourceSubresources {
    /// Present (as `{}`) when `/status` is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CustomResourceSubresourceStatus>,
    /// The `/scale` subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<CustomResourceSubresourceScale>,
}

/// The status subresource: an empty object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomResourceSubresourceStatus {}

/// The scale subresource's paths.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceSubresourceScale {
    /// JSON path of the desired replicas, under `.spec`.
    pub spec_replicas_path: String,
    /// JSON path of the observed replicas, under `.status`.
    pub status_replicas_path: String,
    /// JSON path of the serialized label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector_path: Option<String>,
}

/// An additional printer column.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceColumnDefinition {
    /// Column header.
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// OpenAPI format hint.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub format: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// 0 for the default view, higher for `-o wide`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// Simple JSON path of the cell value.
    #[serde(rename = "jsonPath")]
    pub json_path: String,
}

/// A field usable in field selectors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectableField {
    /// JSON path of the field, e.g. `.spec.color`.
    #[serde(rename = "jsonPath")]
    pub json_path: String,
}

/// `spec.conversion`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomResourceConversion {
    /// `None` (only `apiVersion` changes) or `Webhook`.
    pub strategy: String,
    /// The webhook for `Webhook`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookConversion>,
}

/// The conversion webhook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookConversion {
    /// Where to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_config: Option<WebhookClientConfig>,
    /// The `ConversionReview` versions the webhook understands, preferred first (required:
    /// the CRD's validation says so with upstream's message rather than the decoder).
    #[serde(default)]
    pub conversion_review_versions: Vec<String>,
}

/// How to reach a webhook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookClientConfig {
    /// An `https://` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A service in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceReference>,
    /// PEM CA bundle to verify the webhook's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<ByteString>,
}

/// A service a webhook runs behind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceReference {
    /// The service's namespace.
    pub namespace: String,
    /// The service's name.
    pub name: String,
    /// URL path on the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Port, 443 by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// `status` of a CRD.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionStatus {
    /// `Established`, `NamesAccepted`, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<CustomResourceDefinitionCondition>,
    /// The names actually served.
    #[serde(default)]
    pub accepted_names: CustomResourceDefinitionNames,
    /// Every version objects were ever stored in.
    #[serde(default)]
    pub stored_versions: Vec<String>,
}

/// A condition of a CRD (its own shape, older than `metav1.Condition`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinitionCondition {
    /// The condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// CamelCase reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl CustomResourceDefinition {
    /// The CRD serving `info`'s kind with these versions. The name is `<plural>.<group>`.
    pub fn for_kind(info: &ResourceInfo, versions: Vec<CustomResourceDefinitionVersion>) -> Self {
        let strings = |list: &[std::borrow::Cow<'static, str>]| {
            list.iter().map(|s| s.to_string()).collect::<Vec<_>>()
        };
        Self {
            metadata: ObjectMeta {
                name: Some(format!("{}.{}", info.plural, info.gvk.group)),
                ..ObjectMeta::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: info.gvk.group.to_string(),
                names: CustomResourceDefinitionNames {
                    plural: info.plural.to_string(),
                    singular: info.singular.to_string(),
                    short_names: strings(&info.short_names),
                    kind: info.gvk.kind.to_string(),
                    list_kind: info.list_kind(),
                    categories: strings(&info.categories),
                },
                scope: match info.scope {
                    Scope::Namespaced => "Namespaced",
                    Scope::Cluster => "Cluster",
                }
                .to_owned(),
                versions,
                ..CustomResourceDefinitionSpec::default()
            },
            ..Self::default()
        }
    }

    /// The version objects are stored in, if exactly one is marked.
    pub fn storage_version(&self) -> Option<&CustomResourceDefinitionVersion> {
        let mut stored = self.spec.versions.iter().filter(|v| v.storage);
        match (stored.next(), stored.next()) {
            (Some(version), None) => Some(version),
            _ => None,
        }
    }
}

impl CustomResourceDefinitionVersion {
    /// The parts of a version that come from a kind's static description: name, subresources,
    /// printer columns, selectable fields and deprecation. Schema and flags are the caller's.
    pub fn from_info(info: &ResourceInfo, served: bool, storage: bool) -> Self {
        let subresources = &info.subresources;
        let has_subresources = subresources.status || subresources.scale.is_some();
        Self {
            name: info.gvk.version.to_string(),
            served,
            storage,
            deprecated: info.lifecycle.warning.is_some() || info.lifecycle.deprecated.is_some(),
            deprecation_warning: info.lifecycle.warning.as_ref().map(|w| w.to_string()),
            schema: None,
            subresources: has_subresources.then(|| CustomResourceSubresources {
                status: subresources
                    .status
                    .then_some(CustomResourceSubresourceStatus {}),
                scale: subresources
                    .scale
                    .as_ref()
                    .map(|s| CustomResourceSubresourceScale {
                        spec_replicas_path: s.spec_replicas_path.to_string(),
                        status_replicas_path: s.status_replicas_path.to_string(),
                        label_selector_path: s.label_selector_path.as_ref().map(|p| p.to_string()),
                    }),
            }),
            // A CRD column can only show a path; rule columns are the server's own printers.
            additional_printer_columns: info
                .printer_columns
                .iter()
                .filter_map(|c| {
                    Some(CustomResourceColumnDefinition {
                        name: c.name.to_string(),
                        type_: c.type_.to_string(),
                        format: c.format.as_deref().unwrap_or_default().to_owned(),
                        description: c.description.as_deref().unwrap_or_default().to_owned(),
                        priority: c.priority,
                        json_path: c.cell.json_path()?.to_owned(),
                    })
                })
                .collect(),
            selectable_fields: info
                .selectable_fields
                .iter()
                .map(|path| SelectableField {
                    json_path: path.to_string(),
                })
                .collect(),
        }
    }
}
