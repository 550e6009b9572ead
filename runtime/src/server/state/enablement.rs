//! Which group-versions (and resources) the server serves: the release's defaults from
//! `release`, changed by kube-apiserver's `--runtime-config` ([`RuntimeConfig`]), resolved as
//! upstream resolves them into [`ApiEnablement`].
//!
//! Upstream's steps, in order (k8s.io/apiserver `pkg/server/options/api_enablement.go`,
//! `pkg/server/resourceconfig/helpers.go`, and kube-apiserver's option completion):
//! the flag is a `key=value` list split on commas (component-base's `ConfigurationMap`: a key
//! without `=` has the empty value, which means `true`); `v1`, `v1/...`, `api/v1` and
//! `api/v1/...` become the core group's `/v1`, and `api/legacy` is dropped; `api/all=false` alone
//! is refused; every other key must be `group/version` or `group/version/resource` of a known
//! group; then `api/all`, `api/ga`, `api/beta` and `api/alpha` switch every version they match,
//! in that order, then each group-version, then each resource, which wins over its version.
//! The errors are upstream's texts.

use std::collections::BTreeMap;
use std::fmt;

use crate::{KubeVersion, Registry};

use super::release::{self, split_group_version};

/// The parsed `--runtime-config` flag: its keys and values in the order given, a later value of
/// a key replacing an earlier one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeConfig {
    entries: Vec<(String, String)>,
}

impl RuntimeConfig {
    /// Parses one `--runtime-config` value, e.g. `api/all=false,apps/v1=true,v1`. Never fails,
    /// as upstream's flag never does: bad keys and values are refused when the server resolves
    /// them ([`ApiEnablement::for_release`]).
    pub fn parse(text: &str) -> Self {
        let mut config = Self::default();
        config.add(text);
        config
    }

    /// Adds the pairs of another occurrence of the flag.
    pub fn add(&mut self, text: &str) {
        for part in text.split(',').filter(|part| !part.is_empty()) {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            self.set(key.trim().to_owned(), value.trim().to_owned());
        }
    }

    fn set(&mut self, key: String, value: String) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the flag was given no pairs.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// kube-apiserver's completion: the core group's spellings become `/v1`, `api/legacy` goes.
    fn completed(&self) -> Self {
        let mut out = Self::default();
        for (key, value) in &self.entries {
            let core = key == "v1"
                || key.starts_with("v1/")
                || key == "api/v1"
                || key.starts_with("api/v1/");
            if core {
                out.set("/v1".to_owned(), value.clone());
            } else if key != "api/legacy" {
                out.set(key.clone(), value.clone());
            }
        }
        out
    }
}

/// Why a `--runtime-config` was refused; the text is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RuntimeConfigError(String);

/// The switches `api/<name>` that address every version of a stability level, in the order
/// upstream applies them.
const MATCHERS: [&str; 4] = ["api/all", "api/ga", "api/beta", "api/alpha"];

/// Whether a version name matches `api/<level>`: `v\d+`, `v\d+beta\d+` or `v\d+alpha\d+`.
fn matches_level(matcher: &str, version: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(rest) = version.strip_prefix('v') else {
        return matcher == "api/all";
    };
    let level = |word: &str| {
        rest.split_once(word)
            .is_some_and(|(major, minor)| digits(major) && digits(minor))
    };
    match matcher {
        "api/all" => true,
        "api/ga" => digits(rest),
        "api/beta" => level("beta"),
        "api/alpha" => level("alpha"),
        _ => false,
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

type GroupVersion = (String, String);

/// The group-versions and resources a server serves. Group-versions it does not list (a custom
/// resource's, or any when built by [`ApiEnablement::all`]) are served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiEnablement {
    versions: BTreeMap<GroupVersion, bool>,
    resources: BTreeMap<(String, String, String), bool>,
}

impl ApiEnablement {
    /// Serves every registered group-version: what a server does unless told otherwise.
    pub fn all() -> Self {
        Self::default()
    }

    /// What kube-apiserver of release `at` serves with `config` as its `--runtime-config`: the
    /// release's default group-versions (alpha ones and betas introduced after 1.24 off), plus
    /// every other group-version of `registry` on, then the flag's switches. A release kapi has
    /// no table for starts with everything on.
    pub fn for_release(
        registry: &Registry,
        at: KubeVersion,
        config: &RuntimeConfig,
    ) -> Result<Self, RuntimeConfigError> {
        let mut enablement = Self::default();
        if let Some(row) = release::gates(at) {
            for (key, on) in &row.group_versions {
                let (group, version) = split_group_version(key);
                enablement
                    .versions
                    .insert((group.to_owned(), version.to_owned()), *on);
            }
        }
        for kind in registry.kinds() {
            let gvk = &kind.info.gvk;
            enablement
                .versions
                .entry((gvk.group.to_string(), gvk.version.to_string()))
                .or_insert(true);
        }
        enablement.apply(&config.completed())?;
        Ok(enablement)
    }

    /// Upstream's `Validate` and `MergeAPIResourceConfigs` over the known group-versions.
    fn apply(&mut self, config: &RuntimeConfig) -> Result<(), RuntimeConfigError> {
        if config.entries.len() == 1 && config.get("api/all") == Some("false") {
            return Err(RuntimeConfigError(
                "invalid key with only api/all=false".to_owned(),
            ));
        }
        let mut unknown = Vec::new();
        for (key, _) in &config.entries {
            if MATCHERS.contains(&key.as_str()) {
                continue;
            }
            let tokens: Vec<&str> = key.split('/').collect();
            if tokens.len() != 2 && tokens.len() != 3 {
                return Err(RuntimeConfigError(format!(
                    "runtime-config invalid key {key}"
                )));
            }
            if !self.has_group(tokens[0]) {
                unknown.push(tokens[0]);
            }
        }
        if !unknown.is_empty() {
            return Err(RuntimeConfigError(format!(
                "unknown api groups {}",
                unknown.join(",")
            )));
        }
        for matcher in MATCHERS {
            let Some(value) = config.get(matcher) else {
                continue;
            };
            let on = match value {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(RuntimeConfigError(format!(
                        "invalid value {matcher}={value}"
                    )));
                }
            };
            let matching: Vec<GroupVersion> = self
                .versions
                .keys()
                .filter(|(_, version)| matches_level(matcher, version))
                .cloned()
                .collect();
            for gv in matching {
                self.set_version(gv, on);
            }
        }
        let mut versions = Vec::new();
        let mut resources = Vec::new();
        for (key, value) in &config.entries {
            if MATCHERS.contains(&key.as_str()) {
                continue;
            }
            let tokens: Vec<&str> = key.split('/').collect();
            let gv = (tokens[0].to_owned(), tokens[1].to_owned());
            if !self.versions.contains_key(&gv) {
                let shown = if gv.0.is_empty() {
                    gv.1.clone()
                } else {
                    format!("{}/{}", gv.0, gv.1)
                };
                return Err(RuntimeConfigError(format!(
                    "group version {shown} that has not been registered"
                )));
            }
            let on = if value.is_empty() {
                true
            } else {
                parse_bool(value).ok_or_else(|| {
                    RuntimeConfigError(format!(
                        "invalid value of {key}: {value}, err: strconv.ParseBool: parsing \"{value}\": invalid syntax"
                    ))
                })?
            };
            match tokens.get(2) {
                None => versions.push((gv, on)),
                Some(resource) if resource.to_lowercase() != *resource => {
                    return Err(RuntimeConfigError(format!(
                        "invalid key {key}: group/version/resource and resource is always lowercase plural, not \"{resource}\""
                    )));
                }
                Some(resource) => resources.push(((gv.0, gv.1, (*resource).to_owned()), on)),
            }
        }
        for (gv, on) in versions {
            self.set_version(gv, on);
        }
        for (gvr, on) in resources {
            self.resources.insert(gvr, on);
        }
        Ok(())
    }

    fn has_group(&self, group: &str) -> bool {
        self.versions.keys().any(|(g, _)| g == group)
    }

    /// Switches a group-version, forgetting what was said of its resources before.
    fn set_version(&mut self, gv: GroupVersion, on: bool) {
        self.resources
            .retain(|(group, version, _), _| !(*group == gv.0 && *version == gv.1));
        self.versions.insert(gv, on);
    }

    /// Whether the resource `plural` of `group`/`version` is served.
    pub fn serves(&self, group: &str, version: &str, plural: &str) -> bool {
        let resource = self.resources.iter().find(|((g, v, p), _)| {
            g.as_str() == group && v.as_str() == version && p.as_str() == plural
        });
        if let Some((_, on)) = resource {
            return *on;
        }
        self.versions
            .iter()
            .find(|((g, v), _)| g.as_str() == group && v.as_str() == version)
            .is_none_or(|(_, on)| *on)
    }
}

impl fmt::Display for RuntimeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .entries
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(minor: u16, flag: &str) -> Result<ApiEnablement, String> {
        ApiEnablement::for_release(
            &Registry::new(),
            KubeVersion::new(1, minor),
            &RuntimeConfig::parse(flag),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_follow_the_release_table() {
        let on = resolve(28, "").unwrap();
        assert!(on.serves("apps", "v1", "deployments"));
        assert!(on.serves("flowcontrol.apiserver.k8s.io", "v1beta3", "flowschemas"));
        assert!(!on.serves("admissionregistration.k8s.io", "v1beta1", "x"));
        assert!(!on.serves("resource.k8s.io", "v1alpha2", "x"));
        // Not a built-in group-version: served.
        assert!(on.serves("example.com", "v1alpha1", "widgets"));
        let old = resolve(20, "").unwrap();
        assert!(old.serves("batch", "v1beta1", "cronjobs"));
        assert!(!old.serves("batch", "v2alpha1", "cronjobs"));
    }

    /// The flag's grammar and its precedence: `api/<level>` first, then group-versions, then
    /// resources (`MergeAPIResourceConfigs`).
    #[test]
    fn switches_apply_in_upstreams_order() {
        let e = resolve(
            20,
            "api/all=false,apps/v1=true,batch/v1beta1=false,api/alpha=true",
        )
        .unwrap();
        assert!(e.serves("apps", "v1", "deployments"));
        assert!(!e.serves("", "v1", "pods"));
        assert!(!e.serves("batch", "v1beta1", "cronjobs"));
        assert!(e.serves("batch", "v2alpha1", "cronjobs"));
        assert!(!e.serves("networking.k8s.io", "v1", "ingresses"));
        // The core group's spellings, and a bare key meaning true.
        for core in ["v1=false", "api/v1=false", "api/v1/pods=false"] {
            let e = resolve(36, &format!("{core},apps/v1")).unwrap();
            assert!(!e.serves("", "v1", "pods"), "{core}");
        }
        // A resource's switch wins over its version's, whatever the order given.
        let e = resolve(
            36,
            "storage.k8s.io/v1beta1/volumeattributesclasses=true,storage.k8s.io/v1beta1=false",
        )
        .unwrap();
        assert!(e.serves("storage.k8s.io", "v1beta1", "volumeattributesclasses"));
        assert!(!e.serves("storage.k8s.io", "v1beta1", "other"));
        let e = resolve(36, "api/beta=true,  resource.k8s.io/v1beta1 = false ,,").unwrap();
        assert!(e.serves("coordination.k8s.io", "v1beta1", "leasecandidates"));
        assert!(!e.serves("resource.k8s.io", "v1beta1", "resourceclaims"));
        assert!(!e.serves("coordination.k8s.io", "v1alpha2", "leasecandidates"));
        // api/legacy is accepted and ignored.
        assert_eq!(
            resolve(36, "api/legacy=false").unwrap(),
            resolve(36, "").unwrap()
        );
    }

    /// Upstream's texts: `api_enablement.go` (`Validate`) and `helpers.go`.
    #[test]
    fn refusals_are_upstreams() {
        let cases = [
            ("api/all=false", "invalid key with only api/all=false"),
            ("apiall=false", "runtime-config invalid key apiall"),
            ("a/b/c/d=true", "runtime-config invalid key a/b/c/d"),
            (
                "widgets.example.com/v1=true",
                "unknown api groups widgets.example.com",
            ),
            ("api/beta=yes", "invalid value api/beta=yes"),
            ("api/all=", "invalid value api/all="),
            (
                "apps/v9=true",
                "group version apps/v9 that has not been registered",
            ),
            (
                "apps/v1=maybe",
                "invalid value of apps/v1: maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax",
            ),
            (
                "apps/v1/Deployments=false",
                "invalid key apps/v1/Deployments: group/version/resource and resource is always lowercase plural, not \"Deployments\"",
            ),
        ];
        for (flag, want) in cases {
            assert_eq!(resolve(36, flag).unwrap_err(), want, "{flag}");
        }
        assert_eq!(
            resolve(20, "v1/x=nope").unwrap_err(),
            "invalid value of /v1: nope, err: strconv.ParseBool: parsing \"nope\": invalid syntax"
        );
        assert!(resolve(36, "api/all=false,v1=true").is_ok());
    }

    #[test]
    fn version_levels_match_upstreams_patterns() {
        assert!(matches_level("api/ga", "v1"));
        assert!(matches_level("api/ga", "v12"));
        assert!(!matches_level("api/ga", "v1beta1"));
        assert!(matches_level("api/beta", "v2beta2"));
        assert!(!matches_level("api/beta", "v1alpha1"));
        assert!(matches_level("api/alpha", "v1alpha1"));
        assert!(!matches_level("api/alpha", "valpha1"));
        assert!(matches_level("api/all", "anything"));
        assert!(!matches_level("api/ga", "x1"));
    }
}
