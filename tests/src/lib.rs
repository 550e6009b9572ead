//! Shared helpers for kapi's end-to-end tests: where the workspace, the spec corpus and the
//! test tools (the Python venv made by `tests/all.sh`) are.
//!
//! The tests themselves live in `tests/tests/`, one file per client or scenario.

use std::path::{Path, PathBuf};

/// The workspace root (the folder holding `README.md`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// The reference spec corpus: `$KAPI_SPEC_CORPUS`, else `../shared/specs` beside the workspace.
pub fn spec_corpus() -> PathBuf {
    std::env::var_os("KAPI_SPEC_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/specs"))
}

/// The Python interpreter with the official `kubernetes` client: `$KAPI_PYTHON` (set by
/// `tests/all.sh`), else the workspace's `.venv`.
///
/// # Panics
/// When neither exists: the tests that need it must not silently pass without it.
pub fn python() -> PathBuf {
    let path = std::env::var_os("KAPI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python"));
    assert!(
        path.exists(),
        "no Python with the kubernetes client at {}: run tests/all.sh, which installs it",
        path.display()
    );
    path
}

/// The two commands of the README's quick start: (run the main job, run every test).
///
/// They are the first two lines of the first `sh` code block after the "Quick start" heading, so a
/// test can run exactly what a newcomer runs.
pub fn readme_quick_start() -> Result<(String, String), String> {
    let readme = std::fs::read_to_string(workspace_root().join("README.md"))
        .map_err(|e| format!("cannot read README.md: {e}"))?;
    let after_heading = readme
        .split_once("## Quick start")
        .ok_or("README.md has no '## Quick start' heading")?
        .1;
    let block = after_heading
        .split_once("```sh\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .ok_or("the quick start has no ```sh block")?
        .0;
    let commands: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    match commands.as_slice() {
        [run, test] => Ok(((*run).to_owned(), (*test).to_owned())),
        other => Err(format!(
            "the quick start must hold exactly two commands, found {}: {other:?}",
            other.len()
        )),
    }
}
