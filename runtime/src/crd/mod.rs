//! `apiextensions.k8s.io/v1` CustomResourceDefinition, typed and serde-exact, and what a
//! derived custom resource needs around it: the [`CustomResource`] trait, the structural-schema
//! validator ([`validate_structural`]), the size budget of client-side apply ([`fit_to_budget`]),
//! combining versions ([`merge_versions`]), hub conversion ([`Hub`]) and condition helpers on
//! kinds ([`ConditionsExt`]).
//!
//! The validator is the one the server uses for CRDs created at run time, so a derived CRD
//! and a user-supplied one are judged by the same rules; with the `server` feature, [`instance`]
//! applies a CRD version's schema to the objects written through it.

mod convert;
#[cfg(feature = "server")]
pub mod instance;
mod size;
mod structural;
mod types;

pub use convert::{ConversionError, Conversions, Hub, VersionConverter, round_trip};
pub use size::{ANNOTATION_BUDGET, SizeWarning, fit_to_budget};
pub use structural::{StructuralError, validate_structural};
pub use types::*;

#[cfg(feature = "server")]
use std::sync::Arc;

use crate::meta::{Condition, ConditionStatus, Conditions};
use crate::resource::{ObjectMetaAccess as _, Resource};
use crate::schema::JSONSchemaProps;

/// The conversion webhook of a CRD whose `spec.conversion.strategy` is `Webhook`, with what the
/// server needs to call it for any of the CRD's versions (upstream's `webhookConverter` and the
/// `crConverter` around it): kept in the [`Registry`](crate::Registry) beside the CRD's kinds.
#[cfg(feature = "server")]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ConversionWebhook {
    /// The CRD's name, for logs.
    pub(crate) crd: String,
    pub(crate) group: String,
    pub(crate) plural: String,
    pub(crate) kind: String,
    /// Every version of the CRD: an object in another, or a request for another, is refused.
    pub(crate) versions: Vec<String>,
    /// The version objects are stored in.
    pub(crate) storage: String,
    pub(crate) client_config: WebhookClientConfig,
    /// The `ConversionReview` versions the webhook understands, preferred first.
    pub(crate) review_versions: Vec<String>,
}

#[cfg(feature = "server")]
impl ConversionWebhook {
    /// The webhook of `crd`, when it converts by one and names where to call it.
    pub(crate) fn of(crd: &CustomResourceDefinition, plural: &str) -> Option<Arc<Self>> {
        let conversion = crd.spec.conversion.as_ref()?;
        if conversion.strategy != "Webhook" {
            return None;
        }
        let webhook = conversion.webhook.as_ref()?;
        Some(Arc::new(Self {
            crd: crd.metadata.name.clone().unwrap_or_default(),
            group: crd.spec.group.clone(),
            plural: plural.to_owned(),
            kind: crd.spec.names.kind.clone(),
            versions: crd.spec.versions.iter().map(|v| v.name.clone()).collect(),
            storage: crd.storage_version()?.name.clone(),
            client_config: webhook.client_config.clone()?,
            review_versions: webhook.conversion_review_versions.clone(),
        }))
    }
}

/// A kind defined by a CustomResourceDefinition; implemented by `#[derive(CustomResource)]`.
pub trait CustomResource: Resource {
    /// The spec struct the derive was applied to.
    type Spec;

    /// This version's entry in the CRD: name, flags, schema, subresources, columns.
    fn crd_version() -> CustomResourceDefinitionVersion;

    /// The CRD for this one version, with descriptions trimmed if it would not fit the
    /// client-side apply budget. [`CustomResource::crd_with_warnings`] says what was trimmed.
    fn crd() -> CustomResourceDefinition {
        Self::crd_with_warnings().0
    }

    /// The CRD and the warnings of fitting it into [`ANNOTATION_BUDGET`].
    fn crd_with_warnings() -> (CustomResourceDefinition, Vec<SizeWarning>) {
        let mut crd = CustomResourceDefinition::for_kind(Self::info(), vec![Self::crd_version()]);
        let warnings = fit_to_budget(&mut crd);
        (crd, warnings)
    }

    /// [`CustomResource::crd`], printing any size warning to standard error: for `crdgen`-style
    /// binaries that write the CRD out.
    fn crd_reporting_to_stderr() -> CustomResourceDefinition {
        let (crd, warnings) = Self::crd_with_warnings();
        for warning in &warnings {
            eprintln!("warning: {warning}");
        }
        crd
    }

    /// The version's schema, as the server validates objects against it.
    fn openapi_schema() -> Option<JSONSchemaProps> {
        Self::crd_version()
            .schema
            .and_then(|validation| validation.open_api_v3_schema)
    }
}

/// A kind whose objects carry a typed `status`; implemented by `#[derive(CustomResource)]` when
/// `status = "..."` is given.
pub trait HasStatus: Resource {
    /// The status struct.
    type Status;

    /// The status, if set.
    fn status(&self) -> Option<&Self::Status>;

    /// The status slot, for controllers to fill in.
    fn status_mut(&mut self) -> &mut Option<Self::Status>;
}

/// A status struct with a `conditions: Vec<Condition>` list; `#[derive(Schema)]` implements it
/// for a struct with such a field.
pub trait HasConditions {
    /// The conditions.
    fn conditions(&self) -> &[Condition];

    /// The conditions, mutably.
    fn conditions_mut(&mut self) -> &mut Vec<Condition>;
}

/// Condition helpers on a kind whose status has conditions, wired to `metadata.generation`.
///
/// The condition type may be a plain string or a typed enum: any `AsRef<str>` reads, and
/// [`Condition::new`] takes any `Into<String>`.
pub trait ConditionsExt: HasStatus
where
    Self::Status: HasConditions + Default,
{
    /// Inserts or updates the condition with upstream's `SetStatusCondition` semantics
    /// (`lastTransitionTime` moves only when the status changes), first stamping
    /// `observedGeneration` from `metadata.generation` when the condition has none. Returns
    /// whether anything changed.
    fn set_condition(&mut self, condition: Condition) -> bool {
        self.set_condition_at(condition, crate::Time::now())
    }

    /// [`ConditionsExt::set_condition`] with an explicit clock.
    fn set_condition_at(&mut self, mut condition: Condition, now: crate::Time) -> bool {
        if condition.observed_generation.is_none() {
            condition.observed_generation = self.metadata().generation();
        }
        self.status_mut()
            .get_or_insert_with(Default::default)
            .conditions_mut()
            .set_condition_at(condition, now)
    }

    /// The condition of this type, if present.
    fn condition(&self, type_: impl AsRef<str>) -> Option<&Condition> {
        self.status()?
            .conditions()
            .iter()
            .find(|c| c.type_ == type_.as_ref())
    }

    /// The status of the condition of this type; `Unknown` when missing.
    fn condition_status(&self, type_: impl AsRef<str>) -> ConditionStatus {
        self.condition(type_)
            .map(|c| c.status.clone())
            .unwrap_or_default()
    }

    /// Whether the condition of this type is present and `True`.
    fn is_condition_true(&self, type_: impl AsRef<str>) -> bool {
        self.condition(type_)
            .is_some_and(|c| c.status == ConditionStatus::True)
    }

    /// Removes the condition of this type. Returns whether it was present.
    fn remove_condition(&mut self, type_: impl AsRef<str>) -> bool {
        match self.status_mut() {
            Some(status) => status.conditions_mut().remove_condition(type_.as_ref()),
            None => false,
        }
    }
}

impl<K: HasStatus> ConditionsExt for K where K::Status: HasConditions + Default {}

/// Why [`merge_versions`] could not combine the versions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No CRDs were given.
    #[error("no versions to merge")]
    Empty,
    /// Two CRDs disagree on a field every version shares.
    #[error("version {version} has {field} {found:?}, but the first version has {expected:?}")]
    Mismatch {
        /// The version that differs.
        version: String,
        /// `group`, `names` or `scope`.
        field: &'static str,
        /// The first version's value.
        expected: String,
        /// This version's value.
        found: String,
    },
    /// The same version name appears twice.
    #[error("version {0} is given twice")]
    Duplicate(String),
    /// Not exactly one version is the storage version.
    #[error("exactly one version must have storage: true, found {0}")]
    Storage(usize),
}

/// Combines the CRDs of several versions of one kind (e.g. `[v1::Widget::crd(),
/// v2::Widget::crd()]`) into one CRD, checking that group, names and scope agree and that
/// exactly one version is stored. Versions are ordered as upstream sorts them for discovery
/// (GA before beta before alpha, newer first); size fitting runs again on the result.
pub fn merge_versions(
    crds: &[CustomResourceDefinition],
) -> Result<(CustomResourceDefinition, Vec<SizeWarning>), MergeError> {
    let (first, rest) = crds.split_first().ok_or(MergeError::Empty)?;
    let mut merged = first.clone();
    for crd in rest {
        let version = crd
            .spec
            .versions
            .first()
            .map(|v| v.name.clone())
            .unwrap_or_default();
        let mismatch = |field, expected: String, found: String| MergeError::Mismatch {
            version: version.clone(),
            field,
            expected,
            found,
        };
        if crd.spec.group != first.spec.group {
            return Err(mismatch(
                "group",
                first.spec.group.clone(),
                crd.spec.group.clone(),
            ));
        }
        if crd.spec.names != first.spec.names {
            return Err(mismatch(
                "names",
                format!("{:?}", first.spec.names),
                format!("{:?}", crd.spec.names),
            ));
        }
        if crd.spec.scope != first.spec.scope {
            return Err(mismatch(
                "scope",
                first.spec.scope.clone(),
                crd.spec.scope.clone(),
            ));
        }
        for v in &crd.spec.versions {
            if merged.spec.versions.iter().any(|m| m.name == v.name) {
                return Err(MergeError::Duplicate(v.name.clone()));
            }
            merged.spec.versions.push(v.clone());
        }
    }
    let storage = merged.spec.versions.iter().filter(|v| v.storage).count();
    if storage != 1 {
        return Err(MergeError::Storage(storage));
    }
    merged
        .spec
        .versions
        .sort_by_key(|v| version_priority(&v.name));
    let warnings = fit_to_budget(&mut merged);
    Ok((merged, warnings))
}

/// Upstream's discovery order of version names: `v2` before `v1` before `v1beta2` before
/// `v1beta1` before `v1alpha1`, and names that are not Kubernetes versions last, by name.
pub fn version_priority(
    name: &str,
) -> (u8, std::cmp::Reverse<u32>, std::cmp::Reverse<u32>, String) {
    use std::cmp::Reverse;
    let parsed = name.strip_prefix('v').and_then(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (major, tail) = rest.split_at(digits);
        let major: u32 = major.parse().ok()?;
        if major == 0 {
            return None;
        }
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        let (level, minor) = if let Some(minor) = tail.strip_prefix("beta") {
            (1, minor)
        } else {
            (2, tail.strip_prefix("alpha")?)
        };
        let minor: u32 = minor.parse().ok().filter(|m| *m > 0)?;
        Some((level, major, minor))
    });
    match parsed {
        Some((level, major, minor)) => (level, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), name.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_discovery() {
        let mut names = [
            "v1alpha1", "foo", "v1", "v2beta1", "v1beta2", "v2", "v1beta1", "bar",
        ];
        names.sort_by_key(|n| version_priority(n));
        assert_eq!(
            names,
            [
                "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"
            ]
        );
    }
}
