//! What kube-apiserver serves by default in each Kubernetes release kapi carries: the release's
//! real version info (`/version`), whether each built-in group-version is on, and whether each
//! API feature kapi implements is on, off, or not yet in the release. The facts are data, the
//! project's `specs/gating/kubernetes.yaml` (its README names the upstream sources), read once
//! from the copy compiled in.
//!
//! A server at a release the table does not hold (a library user's own choice of version) is
//! not gated: every registered group-version is on and every feature kapi implements is on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::Deserialize;

use crate::KubeVersion;
use crate::resource::{Lifecycle, ResourceInfo};

/// The table, as committed.
const TABLE: &str = include_str!("../../../../specs/gating/kubernetes.yaml");

/// One release's row of the table.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReleaseGates {
    /// `"1.N"`.
    release: String,
    /// What `/version` reports.
    pub(crate) version: VersionFacts,
    /// Every built-in group-version the release's kube-apiserver can serve (`v1` for the core
    /// group), and whether it does by default.
    pub(crate) group_versions: BTreeMap<String, bool>,
    /// The API features kapi implements that the release has, and the state of each one's
    /// feature gate; a feature not listed is not in the release yet.
    #[serde(default)]
    features: BTreeMap<String, Gate>,
}

/// A feature gate of a release, as its kube-apiserver's feature gate holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub(crate) enum Gate {
    /// A gate `--feature-gates` may set: on (`true`, beta) or off (`false`, alpha) by default.
    Settable(bool),
    /// `locked`: GA, on and locked to its default; `graduated`: GA and the gate gone from the
    /// release, on and unknown to `--feature-gates`.
    Fixed(FixedGate),
}

/// A gate `--feature-gates` may not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FixedGate {
    /// GA and locked to on (`LockToDefault`).
    Locked,
    /// GA and removed from the gate list: the feature is simply on.
    Graduated,
}

impl Gate {
    /// Whether the feature is on when no flag says otherwise.
    pub(crate) fn default_on(self) -> bool {
        !matches!(self, Gate::Settable(false))
    }
}

/// The build facts of a real patch release, as its kube-apiserver reports them.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct VersionFacts {
    pub(crate) git_version: String,
    pub(crate) git_commit: String,
    pub(crate) build_date: String,
    pub(crate) go_version: String,
}

/// The API features whose default differs between releases kapi serves, by upstream's gate
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feature {
    /// `sendInitialEvents` on watches (alpha in 1.27, on from 1.34 as kapi's releases go).
    WatchList,
    /// The `fieldValidation` write option and its warnings (beta and on in 1.25, GA in 1.27).
    ServerSideFieldValidation,
    /// Aggregated discovery on `/api` and `/apis` (beta and on in 1.27, GA in 1.30).
    AggregatedDiscoveryEndpoint,
    /// CBOR requests and answers (`application/cbor`, `application/cbor-seq`), alpha and off
    /// from 1.32.
    CborServingAndStorage,
    /// `/openapi/v3` (alpha in 1.23, on from 1.24, GA in 1.27): before it, the path is
    /// served by nothing.
    OpenApiV3,
    /// An update keeps a custom resource whose CEL rules fail only on values it does not
    /// change (alpha in 1.28, beta and on in 1.30, GA in 1.33).
    CrdValidationRatcheting,
    /// ValidatingAdmissionPolicy enforcement (beta and off in 1.28, GA in 1.30, the gate
    /// removed in 1.32).
    ValidatingAdmissionPolicy,
    /// MutatingAdmissionPolicy enforcement (alpha in 1.32, beta and off in 1.34, GA in 1.36).
    MutatingAdmissionPolicy,
    /// In-place pod resize through a pod's `resize` subresource (the gate alpha from 1.27, the
    /// subresource from 1.32, beta and on in 1.33, GA in 1.35).
    InPlacePodVerticalScaling,
    /// The Node authorizer limits a kubelet's reads of Nodes and Pods to its own, and its
    /// lists of ResourceSlices to a `nodeName` field selector (alpha in 1.31, beta and on in
    /// 1.32, GA in 1.34).
    AuthorizeNodeWithSelectors,
    /// A WebSocket `exec`, `attach` or `portforward` of a pod (a GET, authorized as `get`)
    /// also needs `create` on the subresource (KEP-4006; beta and on from 1.35).
    AuthorizePodWebsocketUpgradeCreatePermission,
}

impl Feature {
    /// Upstream's feature gate name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::WatchList => "WatchList",
            Self::ServerSideFieldValidation => "ServerSideFieldValidation",
            Self::AggregatedDiscoveryEndpoint => "AggregatedDiscoveryEndpoint",
            Self::CborServingAndStorage => "CBORServingAndStorage",
            Self::OpenApiV3 => "OpenAPIV3",
            Self::CrdValidationRatcheting => "CRDValidationRatcheting",
            Self::ValidatingAdmissionPolicy => "ValidatingAdmissionPolicy",
            Self::MutatingAdmissionPolicy => "MutatingAdmissionPolicy",
            Self::InPlacePodVerticalScaling => "InPlacePodVerticalScaling",
            Self::AuthorizeNodeWithSelectors => "AuthorizeNodeWithSelectors",
            Self::AuthorizePodWebsocketUpgradeCreatePermission => {
                "AuthorizePodWebsocketUpgradeCreatePermission"
            }
        }
    }

    /// Every feature the server consults.
    pub(crate) const ALL: [Feature; 11] = [
        Feature::WatchList,
        Feature::ServerSideFieldValidation,
        Feature::AggregatedDiscoveryEndpoint,
        Feature::CborServingAndStorage,
        Feature::OpenApiV3,
        Feature::CrdValidationRatcheting,
        Feature::ValidatingAdmissionPolicy,
        Feature::MutatingAdmissionPolicy,
        Feature::InPlacePodVerticalScaling,
        Feature::AuthorizeNodeWithSelectors,
        Feature::AuthorizePodWebsocketUpgradeCreatePermission,
    ];
}

/// What a release makes of a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FeatureState {
    /// The release predates the feature: its parameters are unknown and ignored.
    Absent,
    /// The feature exists but is off by default (alpha): its parameters are refused.
    Off,
    /// On.
    On,
}

impl FeatureState {
    pub(crate) fn is_on(self) -> bool {
        self == Self::On
    }
}

/// Every row of the table; empty if the compiled-in copy does not parse, which a unit test
/// rules out.
pub(crate) fn table() -> &'static [ReleaseGates] {
    static PARSED: OnceLock<Vec<ReleaseGates>> = OnceLock::new();
    PARSED.get_or_init(|| serde_yaml_ng::from_str(TABLE).unwrap_or_default())
}

/// The row of release `at`, if the table holds it.
pub(crate) fn gates(at: KubeVersion) -> Option<&'static ReleaseGates> {
    let name = format!("{}.{}", at.major, at.minor);
    table().iter().find(|row| row.release == name)
}

/// What the server at `at` makes of `feature`: on when the table does not hold `at`.
pub(crate) fn feature(at: KubeVersion, feature: Feature) -> FeatureState {
    let Some(row) = gates(at) else {
        // A release the table does not hold (an embedder's choice) gets the features every
        // later release turns on; CBOR is alpha, off by default, in every release that has it.
        return match feature {
            Feature::CborServingAndStorage => FeatureState::Off,
            _ => FeatureState::On,
        };
    };
    match row.features.get(feature.name()) {
        Some(gate) if gate.default_on() => FeatureState::On,
        Some(_) => FeatureState::Off,
        None => FeatureState::Absent,
    }
}

/// The feature gates of release `at` by name (`None` when the table does not hold `at`).
pub(crate) fn gates_of(at: KubeVersion) -> Option<&'static BTreeMap<String, Gate>> {
    gates(at).map(|row| &row.features)
}

/// The release upstream treats as "not set" in generated lifecycle data.
pub(crate) const UNSET: KubeVersion = KubeVersion::new(0, 0);

/// Whether `info`'s group/version is in release `at` at all: introduced by then (or with no
/// known introduction) and not yet removed.
pub(crate) fn is_served(info: &ResourceInfo, at: KubeVersion) -> bool {
    lifecycle_served(&info.lifecycle, at)
}

pub(crate) fn lifecycle_served(lifecycle: &Lifecycle, at: KubeVersion) -> bool {
    let introduced = lifecycle
        .introduced
        .is_none_or(|since| since == UNSET || since <= at);
    let removed = lifecycle
        .removed
        .is_some_and(|removed| removed != UNSET && removed <= at);
    introduced && !removed
}

/// Whether kube-apiserver serves `group` itself (through go-restful) in some release kapi
/// carries, rather than through the CRD handler.
pub(crate) fn is_builtin_group(group: &str) -> bool {
    // Asked on every request's decode and route: the groups are gathered once.
    static GROUPS: OnceLock<BTreeSet<&'static str>> = OnceLock::new();
    GROUPS
        .get_or_init(|| {
            table()
                .iter()
                .flat_map(|row| row.group_versions.keys())
                .map(|key| split_group_version(key).0)
                .collect()
        })
        .contains(group)
}

/// Whether some release kapi carries serves group-version `key` (`v1`, `apps/v1beta2`).
pub(crate) fn ever_served(key: &str) -> bool {
    table()
        .iter()
        .any(|row| row.group_versions.contains_key(key))
}

/// Splits a table key into group and version: `v1` is the core group.
pub(crate) fn split_group_version(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_groups_are_builtin_and_others_are_not() {
        for group in [
            "",
            "apps",
            "batch",
            "rbac.authorization.k8s.io",
            "apiextensions.k8s.io",
        ] {
            assert!(is_builtin_group(group), "{group}");
        }
        assert!(!is_builtin_group("example.com"));
    }

    const ALL: [Feature; 11] = Feature::ALL;

    /// Features the table records that every release kapi serves has on (watch bookmarks GA
    /// in 1.17, dry run GA in 1.19, server-side apply on since 1.16 and GA in 1.22), so no code
    /// asks for them: kept so the table states them.
    const ALWAYS_ON: [&str; 3] = ["WatchBookmark", "DryRun", "ServerSideApply"];

    #[test]
    fn the_table_parses_and_names_only_known_features() {
        let raw: Vec<ReleaseGates> = serde_yaml_ng::from_str(TABLE).unwrap();
        assert_eq!(
            raw.iter().map(|r| r.release.as_str()).collect::<Vec<_>>(),
            ["1.20", "1.28", "1.34", "1.36"]
        );
        for row in &raw {
            for name in row.features.keys() {
                assert!(
                    ALL.iter().any(|f| f.name() == name) || ALWAYS_ON.contains(&&**name),
                    "{}: unknown feature {name}",
                    row.release
                );
            }
            for name in ALWAYS_ON {
                assert!(
                    row.features.get(name).is_some_and(|g| g.default_on()),
                    "{}",
                    row.release
                );
            }
            assert!(
                row.version
                    .git_version
                    .starts_with(&format!("v{}.", row.release))
            );
            assert_eq!(row.version.git_commit.len(), 40);
        }
    }

    /// Upstream's rule (`pkg/controlplane/instance.go`, `DefaultAPIResourceConfigSource`): alpha
    /// group-versions are always off; since 1.24 (KEP-3136) a beta introduced later is off, and
    /// 1.28 keeps flowcontrol's v1beta2 and v1beta3 on as `legacyBetaEnabledByDefaultResources`.
    #[test]
    fn alpha_is_off_and_later_betas_are_off() {
        for row in table() {
            for (key, on) in &row.group_versions {
                let (_, version) = split_group_version(key);
                if version.contains("alpha") {
                    assert!(!on, "{} {key}", row.release);
                }
                if version.contains("beta") && row.release != "1.20" {
                    let legacy = row.release == "1.28"
                        && key.starts_with("flowcontrol.apiserver.k8s.io/v1beta");
                    assert_eq!(*on, legacy, "{} {key}", row.release);
                }
                if !version.contains("alpha") && !version.contains("beta") {
                    assert!(on, "{} {key}", row.release);
                }
            }
        }
    }

    /// `k8s.io/apiserver/pkg/features/kube_features.go` at each release: WatchList alpha (off)
    /// from 1.27, on in 1.32, off in 1.33, on again from 1.34; ServerSideFieldValidation from
    /// 1.23 (alpha), on from 1.25.
    #[test]
    fn features_by_release() {
        let at = |minor| KubeVersion::new(1, minor);
        assert_eq!(feature(at(20), Feature::WatchList), FeatureState::Absent);
        assert_eq!(feature(at(28), Feature::WatchList), FeatureState::Off);
        assert_eq!(feature(at(34), Feature::WatchList), FeatureState::On);
        assert_eq!(feature(at(36), Feature::WatchList), FeatureState::On);
        assert_eq!(
            feature(at(20), Feature::ServerSideFieldValidation),
            FeatureState::Absent
        );
        assert!(feature(at(28), Feature::ServerSideFieldValidation).is_on());
        // `pkg/features/kube_features.go`: InPlacePodVerticalScaling beta (on) in 1.33, GA in
        // 1.35; kapi records it only where the `resize` subresource serves it.
        assert_eq!(
            feature(at(28), Feature::InPlacePodVerticalScaling),
            FeatureState::Absent
        );
        assert!(feature(at(34), Feature::InPlacePodVerticalScaling).is_on());
        assert!(feature(at(36), Feature::InPlacePodVerticalScaling).is_on());
        // `pkg/features/kube_features.go`: AuthorizePodWebsocketUpgradeCreatePermission beta
        // (on) from 1.35.
        let websocket_create = Feature::AuthorizePodWebsocketUpgradeCreatePermission;
        assert_eq!(feature(at(34), websocket_create), FeatureState::Absent);
        assert!(feature(at(36), websocket_create).is_on());
        // A release the table does not hold is not gated.
        assert!(feature(at(25), Feature::WatchList).is_on());
    }
}
