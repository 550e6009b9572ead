//! The committed crates under `generated/` are exactly what the generator produces now from
//! their manifests, and their `register` functions cover every served kind of their specs.
//!
//! Inputs come from each crate's `kapi-codegen.yaml`; spec paths into the shared corpus follow
//! `KAPI_SPEC_CORPUS` when it is set.

use std::path::{Path, PathBuf};

use kapi_codegen::output;
use kapi_codegen::project::{Inputs, Job, MANIFEST};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A corpus path from a manifest, moved below `KAPI_SPEC_CORPUS` when that is set.
fn corpus_path(path: &Path) -> PathBuf {
    let Some(corpus) = std::env::var_os("KAPI_SPEC_CORPUS") else {
        return path.to_path_buf();
    };
    let text = path.to_string_lossy();
    match text.split_once("shared/specs/") {
        Some((_, rest)) => PathBuf::from(corpus).join(rest),
        None => path.to_path_buf(),
    }
}

fn job(name: &str) -> Job {
    let manifest = repo().join("generated").join(name).join(MANIFEST);
    let mut job = Job::from_manifest(&manifest).unwrap_or_else(|e| panic!("{e}"));
    job.inputs = match job.inputs {
        Inputs::Single(inputs) => Inputs::Single(inputs.iter().map(|p| corpus_path(p)).collect()),
        Inputs::Versions(versions) => Inputs::Versions(
            versions
                .into_iter()
                .map(|(n, inputs)| (n, inputs.iter().map(|p| corpus_path(p)).collect()))
                .collect(),
        ),
    };
    job
}

fn assert_fresh(name: &str) {
    let job = job(name);
    let generated = job
        .generate()
        .unwrap_or_else(|e| panic!("generating {name}: {e}"));
    let diff = output::diff(&job.out, &generated).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        diff.is_empty(),
        "generated/{name} differs from a fresh generation:\n  {}\n\nRegenerate it from the \
         repository root with:\n\n    cargo run -p kapi-codegen --features cli -- generate --manifest \
         generated/{name}/{MANIFEST}\n",
        diff.lines().join("\n  ")
    );
}

#[test]
fn committed_k8s_crate_is_fresh() {
    assert_fresh("k8s");
}

#[test]
fn committed_example_crate_is_fresh() {
    assert_fresh("example");
}

/// Every served kind of each version's spec is registered by that version's `register`: the
/// number of `register::<Kind>()` calls in the committed tree equals the spec's served kinds.
#[test]
fn each_version_registers_every_served_kind() {
    let job = job("k8s");
    let Inputs::Versions(versions) = &job.inputs else {
        panic!("k8s is a multi-version crate");
    };
    let mut seen = Vec::new();
    for (name, inputs) in versions {
        let model = kapi_codegen::load_inputs(inputs).unwrap_or_else(|e| panic!("{e}"));
        let served = model.resources().count();
        let dir = job.out.join("src").join(name);
        let mut calls = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            calls += text.matches(".register::<").count();
        }
        assert_eq!(calls, served, "{name}");
        seen.push((name.clone(), served));
    }
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["v1_20", "v1_28", "v1_34", "v1_36"]);
    assert!(seen.iter().all(|(_, n)| *n > 50), "{seen:?}");
}
