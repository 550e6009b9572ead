//! ARCHITECTURE.md stays a true map: every module of the library crates is named in it, and
//! the invariants that can be checked by reading the source hold (the code generator's engine
//! does no I/O).
//!
//! A module counts as named when its name appears inside a `code span` of the document (fenced
//! blocks aside), which is how the map names modules (`server::watch`, `send_window`, `crd/`).
//! The check is by name, so a module that moves keeps passing as long as the map still names
//! it; what the map says about it is for review to judge.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The crates whose modules the map must name (the binary's, the generator's, the macros' and
/// the test harness's too); benchmarks and end-to-end tests are described by crate only.
const CRATE_SOURCES: &[&str] = &[
    "runtime/src",
    "runtime/server/src",
    "codegen/src",
    "macros/src",
    "cel-check/src",
    "testing/src",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Every identifier-like word inside the document's inline code spans.
fn named_in(document: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_fence = false;
    for line in document.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            // Odd pieces lie between a pair of backticks.
            if i % 2 == 1 {
                names.extend(
                    span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .filter(|w| !w.is_empty())
                        .map(str::to_owned),
                );
            }
        }
    }
    names
}

/// Module names under `dir`: `.rs` files other than crate and folder roots, and folders.
fn modules(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if path.is_dir() {
            modules(&path, out);
            out.push((path, name));
        } else if path.extension().is_some_and(|e| e == "rs")
            && !matches!(name.as_str(), "lib" | "main" | "mod")
        {
            out.push((path, name));
        }
    }
}

#[test]
fn every_module_is_named_in_architecture_md() {
    let root = repo();
    let document = std::fs::read_to_string(root.join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the repository's root");
    let named = named_in(&document);
    let mut found = Vec::new();
    for source in CRATE_SOURCES {
        modules(&root.join(source), &mut found);
    }
    assert!(
        found.len() > 100,
        "only {} modules found under {CRATE_SOURCES:?}: is the layout different?",
        found.len()
    );
    let missing: Vec<String> = found
        .iter()
        .filter(|(_, name)| !named.contains(name))
        .map(|(path, _)| {
            path.strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "modules ARCHITECTURE.md does not name (add them to its code map):\n  {}",
        missing.join("\n  ")
    );
}

/// The `.rs` files under `dir`, with their text.
fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            out.push((path, text));
        }
    }
}

/// ARCHITECTURE.md's invariant: "Codegen's `model`, `emit` engine and `sample` do no I/O";
/// files are read by `load` and the front ends and written by `output`.
#[test]
fn the_code_generators_engine_does_no_io() {
    let root = repo();
    let mut files = Vec::new();
    for part in [
        "codegen/src/model",
        "codegen/src/emit",
        "codegen/src/sample.rs",
    ] {
        let path = root.join(part);
        if path.is_dir() {
            sources(&path, &mut files);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            files.push((path, text));
        }
    }
    assert!(files.len() > 5, "the engine's files were not found");
    let io = ["std::fs", "fs::", "File::", "std::io::Write", "OpenOptions"];
    let offending: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, line)| !line.trim_start().starts_with("//"))
                .filter(|(_, line)| io.iter().any(|needle| line.contains(needle)))
                .map(move |(n, line)| format!("{}:{}: {}", path.display(), n + 1, line.trim()))
        })
        .collect();
    assert!(
        offending.is_empty(),
        "I/O in the code generator's engine (move it to `load` or a front end):\n  {}",
        offending.join("\n  ")
    );
}

#[test]
fn code_spans_are_read_as_the_map_writes_them() {
    let names = named_in(
        "- `server::watch` over `watch_cache`; not this\n```\n`fenced`\n```\n`crd/` and `a`-`b`",
    );
    let want: BTreeSet<String> = ["server", "watch", "watch_cache", "crd", "a", "b"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(names, want);
}
