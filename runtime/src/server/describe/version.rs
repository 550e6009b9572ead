//! `GET /version`: the release the server presents itself as, in upstream's `version.Info` shape.
//!
//! `gitVersion` is `v<major>.<minor>.0` of the configured Kubernetes release, so clients'
//! version-skew checks and feature gates see the API surface they are talking to. The build
//! fields describe kapi honestly where they can: `compiler` is `rustc`, `platform` uses Go's
//! `os/arch` names, `gitCommit`/`gitTreeState` are empty (the crate is not built from a known
//! commit) and `goVersion` is empty since no Go toolchain is involved; `buildDate` is upstream's
//! placeholder for an unknown date. Servers from 1.33 on also report their emulated and
//! minimum-compatibility releases, which kapi fills the way an unflagged upstream server does.

use axum::Json;
use axum::Router;
use axum::extract::State as Extract;
use axum::routing::get;
use serde::Serialize;

use crate::KubeVersion;
use crate::server::state::State;

/// The body of `/version`; field names and order are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VersionInfo {
    major: String,
    minor: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    emulation_major: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    emulation_minor: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    min_compatibility_major: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    min_compatibility_minor: String,
    git_version: String,
    git_commit: String,
    git_tree_state: String,
    build_date: String,
    go_version: String,
    compiler: String,
    platform: String,
}

/// The first release whose `/version` carries the emulation fields.
const EMULATION_FIELDS_SINCE: KubeVersion = KubeVersion::new(1, 33);

impl VersionInfo {
    /// What a server speaking release `at` answers.
    pub(crate) fn new(at: KubeVersion) -> Self {
        let (emulation_major, emulation_minor, min_major, min_minor) =
            if at >= EMULATION_FIELDS_SINCE {
                (
                    at.major.to_string(),
                    at.minor.to_string(),
                    at.major.to_string(),
                    at.minor.saturating_sub(1).to_string(),
                )
            } else {
                Default::default()
            };
        Self {
            major: at.major.to_string(),
            minor: at.minor.to_string(),
            emulation_major,
            emulation_minor,
            min_compatibility_major: min_major,
            min_compatibility_minor: min_minor,
            git_version: format!("v{}.{}.0", at.major, at.minor),
            git_commit: String::new(),
            git_tree_state: String::new(),
            build_date: "1970-01-01T00:00:00Z".to_owned(),
            go_version: String::new(),
            compiler: "rustc".to_owned(),
            platform: platform(),
        }
    }
}

/// `os/arch` with Go's names (`linux/amd64`), which clients print and parse.
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        other => other,
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{os}/{arch}")
}

async fn version(Extract(state): Extract<State>) -> Json<VersionInfo> {
    Json(VersionInfo::new(state.kube_version))
}

/// `GET /version`.
pub(crate) fn routes() -> Router<State> {
    Router::new().route("/version", get(version))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shape_before_and_after_emulation_fields() {
        let mut old = serde_json::to_value(VersionInfo::new(KubeVersion::new(1, 20))).unwrap();
        assert!(old["platform"].as_str().unwrap().contains('/'));
        old["platform"] = json!("x");
        assert_eq!(
            old,
            json!({
                "major": "1", "minor": "20", "gitVersion": "v1.20.0", "gitCommit": "",
                "gitTreeState": "", "buildDate": "1970-01-01T00:00:00Z", "goVersion": "",
                "compiler": "rustc", "platform": "x"
            })
        );
        let new = serde_json::to_value(VersionInfo::new(KubeVersion::new(1, 34))).unwrap();
        assert_eq!(new["emulationMinor"], "34");
        assert_eq!(new["minCompatibilityMinor"], "33");
        assert_eq!(new["gitVersion"], "v1.34.0");
    }
}
