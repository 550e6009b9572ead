//! `GET /version`: the release the server presents itself as, in upstream's `version.Info` shape.
//!
//! For the releases kapi carries, the answer is a real patch release's, as its kube-apiserver
//! reports it (`gitVersion`, `gitCommit`, `buildDate`, `goVersion`, `compiler: gc`, a clean tree;
//! the release table `specs/gating/kubernetes.yaml` names the patch release of each), so clients'
//! version checks see the server they expect; `platform` is the machine's, in Go's `os/arch`
//! names. For any other release a server is configured with, `gitVersion` is
//! `v<major>.<minor>.0` and the build fields say what kapi knows: no commit, upstream's
//! placeholder date, compiled by `rustc`. Servers from 1.33 on also report their emulated and
//! minimum-compatibility releases, which kapi fills the way an unflagged upstream server does.

use axum::Json;
use axum::Router;
use axum::extract::State as Extract;
use axum::routing::get;
use serde::Serialize;

use crate::KubeVersion;
use crate::server::http::routes::get_only;
use crate::server::state::State;
use crate::server::state::release;

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
        let mut info = Self {
            major: at.major.to_string(),
            minor: at.minor.to_string(),
            emulation_major,
            emulation_minor,
            min_compatibility_major: min_major,
            min_compatibility_minor: min_minor,
            git_version: git_version(at),
            git_commit: String::new(),
            git_tree_state: String::new(),
            build_date: "1970-01-01T00:00:00Z".to_owned(),
            go_version: String::new(),
            compiler: "rustc".to_owned(),
            platform: platform(),
        };
        if let Some(row) = release::gates(at) {
            info.git_commit.clone_from(&row.version.git_commit);
            info.git_tree_state = "clean".to_owned();
            info.build_date.clone_from(&row.version.build_date);
            info.go_version.clone_from(&row.version.go_version);
            info.compiler = "gc".to_owned();
        }
        info
    }
}

/// The `gitVersion` of release `at`: the table's patch release, or `v<major>.<minor>.0`.
pub(crate) fn git_version(at: KubeVersion) -> String {
    match release::gates(at) {
        Some(row) => row.version.git_version.clone(),
        None => format!("v{}.{}.0", at.major, at.minor),
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

/// `GET /version`, and `/version/`, which upstream's route also answers and the Python
/// client's `VersionApi` asks for; go-restful's 405 for any other method.
pub(crate) fn routes() -> Router<State> {
    Router::new()
        .route("/version", get_only(get(version)))
        .route("/version/", get_only(get(version)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A real v1.20.15 kube-apiserver's `/version` (build facts as it reports them).
    #[test]
    fn shape_before_and_after_emulation_fields() {
        let mut old = serde_json::to_value(VersionInfo::new(KubeVersion::new(1, 20))).unwrap();
        assert!(old["platform"].as_str().unwrap().contains('/'));
        old["platform"] = json!("x");
        assert_eq!(
            old,
            json!({
                "major": "1", "minor": "20", "gitVersion": "v1.20.15",
                "gitCommit": "8f1e5bf0b9729a899b8df86249b56e2c74aebc55",
                "gitTreeState": "clean", "buildDate": "2022-01-19T17:23:01Z",
                "goVersion": "go1.15.15", "compiler": "gc", "platform": "x"
            })
        );
        let new = serde_json::to_value(VersionInfo::new(KubeVersion::new(1, 34))).unwrap();
        assert_eq!(new["emulationMinor"], "34");
        assert_eq!(new["minCompatibilityMinor"], "33");
        assert_eq!(new["gitVersion"], "v1.34.1");
        // A release without a table row says what kapi knows.
        let other = serde_json::to_value(VersionInfo::new(KubeVersion::new(1, 25))).unwrap();
        assert_eq!(other["gitVersion"], "v1.25.0");
        assert_eq!(other["gitCommit"], "");
        assert_eq!(other["compiler"], "rustc");
    }
}
