//! kube-apiserver's `--feature-gates` ([`FeatureGates`]): the flag parsed as component-base's
//! `featureGate.Set` parses it, and resolved over the release's gates (`release`, from
//! `specs/gating/kubernetes.yaml`) as `SetFromMap` resolves it, into the [`Features`] the server
//! consults.
//!
//! Upstream's rules (k8s.io/component-base `featuregate/feature_gate.go`): the value is
//! `Name=bool` pairs split on commas (empty items skipped, names and values trimmed, a later
//! pair of a name replacing an earlier one; a pair without `=` is `missing bool value for X`,
//! a value `strconv.ParseBool` cannot read is `invalid value of X=Y, err: ...`); a name the
//! release does not know is `unrecognized feature gate: X` (which stops the check there); a
//! gate locked to its default (GA) set to the other value is `cannot set feature gate X to
//! false, feature is locked to true` (every such error is reported, joined as
//! `utilerrors.NewAggregate` joins them); setting a GA gate is allowed and logged as a warning.
//! `AllAlpha` and `AllBeta` set every alpha (off by default) or beta (on by default) gate the
//! flag does not name.
//!
//! The gates known are those the table records for the release: the API features kapi
//! implements, so a gate of kube-apiserver that kapi has nothing to do with is unrecognized
//! here. A release the table does not hold knows every gate kapi consults, none locked.

use std::collections::BTreeMap;
use std::fmt;

use crate::KubeVersion;

use super::release::{self, Feature, FeatureState, FixedGate, Gate};

/// The special gate that sets every alpha gate the flag does not name.
const ALL_ALPHA: &str = "AllAlpha";
/// The special gate that sets every beta gate the flag does not name.
const ALL_BETA: &str = "AllBeta";

/// The parsed `--feature-gates` flag: names and values in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureGates {
    entries: Vec<(String, bool)>,
}

/// A `--feature-gates` value refused, with upstream's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureGateError(String);

impl fmt::Display for FeatureGateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FeatureGateError {}

impl FeatureGates {
    /// Parses one `--feature-gates` value, e.g. `CBORServingAndStorage=true,WatchList=false`.
    pub fn parse(text: &str) -> Result<Self, FeatureGateError> {
        let mut gates = Self::default();
        gates.add(text)?;
        Ok(gates)
    }

    /// Adds the pairs of another occurrence of the flag.
    pub fn add(&mut self, text: &str) -> Result<(), FeatureGateError> {
        for item in text.split(',').filter(|item| !item.is_empty()) {
            let Some((name, value)) = item.split_once('=') else {
                return Err(FeatureGateError(format!(
                    "missing bool value for {}",
                    item.trim()
                )));
            };
            let (name, value) = (name.trim(), value.trim());
            let Some(on) = parse_bool(value) else {
                return Err(FeatureGateError(format!(
                    "invalid value of {name}={value}, err: strconv.ParseBool: parsing \"{value}\": invalid syntax"
                )));
            };
            self.set(name, on);
        }
        Ok(())
    }

    /// Sets one gate, as the flag's `Name=true|false` does.
    pub fn set(&mut self, name: &str, on: bool) {
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = on,
            None => self.entries.push((name.to_owned(), on)),
        }
    }

    /// Whether the flag set no gate.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The API features of a release as the server follows them: the release's defaults, changed by
/// a `--feature-gates`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// What the flag turned on or off, by gate name.
    set: BTreeMap<String, bool>,
}

impl Features {
    /// The release's defaults, unchanged.
    pub fn defaults() -> Self {
        Self::default()
    }

    /// Resolves `gates` over release `at`'s gates, refusing what upstream refuses.
    pub fn for_release(at: KubeVersion, gates: &FeatureGates) -> Result<Self, FeatureGateError> {
        let table = release::gates_of(at);
        let known = |name: &str| -> Option<Gate> {
            match table {
                Some(table) => table.get(name).copied(),
                None => Feature::ALL
                    .iter()
                    .any(|f| f.name() == name)
                    .then_some(Gate::Settable(true)),
            }
        };
        let mut errors: Vec<String> = Vec::new();
        let mut set = BTreeMap::new();
        let mut all: Vec<(bool, bool)> = Vec::new();
        for (name, on) in &gates.entries {
            if name == ALL_ALPHA || name == ALL_BETA {
                all.push((name == ALL_BETA, *on));
                continue;
            }
            match known(name) {
                None | Some(Gate::Fixed(FixedGate::Graduated)) => {
                    errors.push(format!("unrecognized feature gate: {name}"));
                    return Err(aggregate(errors));
                }
                Some(Gate::Fixed(FixedGate::Locked)) if !*on => {
                    errors.push(format!(
                        "cannot set feature gate {name} to {on}, feature is locked to true"
                    ));
                }
                Some(Gate::Fixed(FixedGate::Locked)) => {
                    tracing::warn!(
                        "Setting GA feature gate {name}={on}. It will be removed in a future release."
                    );
                }
                Some(Gate::Settable(_)) => {
                    set.insert(name.clone(), *on);
                }
            }
        }
        if !errors.is_empty() {
            return Err(aggregate(errors));
        }
        // `AllAlpha`/`AllBeta` reach the gates the flag did not name.
        if let Some(table) = table {
            for (beta, on) in all {
                for (name, gate) in table {
                    if *gate == Gate::Settable(beta) && !set.contains_key(name) {
                        set.insert(name.clone(), on);
                    }
                }
            }
        }
        Ok(Self { set })
    }

    /// What the server at `at` makes of `feature`.
    pub(crate) fn state(&self, at: KubeVersion, feature: Feature) -> FeatureState {
        let default = release::feature(at, feature);
        match (default, self.set.get(feature.name())) {
            (FeatureState::Absent, _) | (_, None) => default,
            (_, Some(true)) => FeatureState::On,
            (_, Some(false)) => FeatureState::Off,
        }
    }
}

/// `utilerrors.NewAggregate`'s message: one error as it is, several in brackets.
fn aggregate(errors: Vec<String>) -> FeatureGateError {
    match errors.as_slice() {
        [one] => FeatureGateError(one.clone()),
        _ => FeatureGateError(format!("[{}]", errors.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minor: u16) -> KubeVersion {
        KubeVersion::new(1, minor)
    }

    fn resolve(minor: u16, flag: &str) -> Result<Features, String> {
        let gates = FeatureGates::parse(flag).map_err(|e| e.to_string())?;
        Features::for_release(at(minor), &gates).map_err(|e| e.to_string())
    }

    /// `featureGate.Set`'s parsing errors.
    #[test]
    fn the_flag_parses_as_component_base_parses_it() {
        assert_eq!(
            FeatureGates::parse("CBORServingAndStorage")
                .unwrap_err()
                .to_string(),
            "missing bool value for CBORServingAndStorage"
        );
        assert_eq!(
            FeatureGates::parse("CBORServingAndStorage=yes")
                .unwrap_err()
                .to_string(),
            "invalid value of CBORServingAndStorage=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
        let gates = FeatureGates::parse(" WatchList = false ,,WatchList=T").unwrap();
        assert_eq!(gates.entries, [("WatchList".to_owned(), true)]);
        assert!(FeatureGates::parse("").unwrap().is_empty());
    }

    /// `CBORServingAndStorage`: alpha from 1.32 (k8s.io/apiserver `pkg/features/kube_features.go`,
    /// `{Version: 1.32, Default: false, PreRelease: Alpha}`), so unknown to 1.20 and 1.28 and off
    /// by default in 1.34 and 1.36.
    #[test]
    fn cbor_is_an_alpha_gate_from_1_32() {
        for minor in [20, 28] {
            assert_eq!(
                resolve(minor, "CBORServingAndStorage=true").unwrap_err(),
                "unrecognized feature gate: CBORServingAndStorage"
            );
        }
        for minor in [34, 36] {
            let cbor = Feature::CborServingAndStorage;
            assert_eq!(
                Features::defaults().state(at(minor), cbor),
                FeatureState::Off
            );
            let on = resolve(minor, "CBORServingAndStorage=true").unwrap();
            assert_eq!(on.state(at(minor), cbor), FeatureState::On);
            let alpha = resolve(minor, "AllAlpha=true").unwrap();
            assert_eq!(alpha.state(at(minor), cbor), FeatureState::On);
            let named = resolve(minor, "AllAlpha=true,CBORServingAndStorage=false").unwrap();
            assert_eq!(named.state(at(minor), cbor), FeatureState::Off);
        }
    }

    /// Locked GA gates (`LockToDefault`), gates removed after GA, and the aggregate of several
    /// refusals; the stages are the feature-gate pages of kubernetes/website.
    #[test]
    fn locked_and_removed_gates_are_refused() {
        assert_eq!(
            resolve(28, "ServerSideApply=false").unwrap_err(),
            "cannot set feature gate ServerSideApply to false, feature is locked to true"
        );
        assert!(resolve(28, "ServerSideApply=true").is_ok());
        assert_eq!(
            resolve(28, "OpenAPIV3=false,WatchBookmark=false").unwrap_err(),
            "[cannot set feature gate OpenAPIV3 to false, feature is locked to true, cannot set feature gate WatchBookmark to false, feature is locked to true]"
        );
        assert_eq!(
            resolve(34, "ServerSideApply=true").unwrap_err(),
            "unrecognized feature gate: ServerSideApply"
        );
        assert_eq!(
            resolve(36, "NoSuchGate=true").unwrap_err(),
            "unrecognized feature gate: NoSuchGate"
        );
        // Beta in 1.28 and settable: off by the flag.
        let off = resolve(28, "AggregatedDiscoveryEndpoint=false").unwrap();
        assert_eq!(
            off.state(at(28), Feature::AggregatedDiscoveryEndpoint),
            FeatureState::Off
        );
        let watch_list = resolve(28, "WatchList=true").unwrap();
        assert!(watch_list.state(at(28), Feature::WatchList).is_on());
    }
}
