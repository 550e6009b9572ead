//! Shared by the emission tests: running the generator and `cargo` on scratch crates.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kapi_codegen::emit::{Generated, KindFacts, Options, generate};
use kapi_codegen::load_inputs;

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's target dir (`CARGO_TARGET_DIR` when set).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => manifest_dir().join("../target"),
    }
}

pub fn corpus() -> PathBuf {
    match std::env::var_os("KAPI_SPEC_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => manifest_dir().join("../../shared/specs"),
    }
}

/// The project's data files about the built-ins, as `generated/k8s` is generated with them.
pub fn facts() -> KindFacts {
    let specs = manifest_dir().join("../specs");
    kapi_codegen::load_facts(kapi_codegen::FactFiles {
        lifecycle: Some(&specs.join("lifecycle/kubernetes.yaml")),
        printers: Some(&specs.join("printers/kubernetes.yaml")),
        defaults: Some(&specs.join("defaults/kubernetes.yaml")),
        strategies: Some(&specs.join("strategies/kubernetes.yaml")),
        validation: Some(&specs.join("validation/kubernetes.yaml")),
        field_selectors: Some(&specs.join("field_selectors/kubernetes.yaml")),
        conversions: Some(&specs.join("conversions/kubernetes.yaml")),
    })
    .expect("data files load")
}

pub fn generate_from(inputs: &[PathBuf], facts: &KindFacts, options: &Options) -> Generated {
    let model = load_inputs(inputs).unwrap_or_else(|e| panic!("{inputs:?}: {e}"));
    generate(&model, facts, options).unwrap_or_else(|e| panic!("{inputs:?}: {e}"))
}

/// Writes generated files into `dir` (replacing what was there).
pub fn write_tree(dir: &Path, generated: &Generated) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("create dir");
    for f in &generated.files {
        std::fs::write(dir.join(&f.path), &f.contents).expect("write file");
    }
}

/// A scratch crate under `<target>/kapi-codegen-scratch/<name>` depending on kapi by path;
/// `lib` is its `src/lib.rs`. Returns the crate dir.
pub fn scratch_crate(name: &str, lib: &str) -> PathBuf {
    let dir = target_dir().join("kapi-codegen-scratch").join(name);
    std::fs::create_dir_all(dir.join("src")).expect("create scratch");
    let runtime = manifest_dir().join("../runtime");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nkapi = {{ path = {runtime:?}, package = \"kapi-runtime\" }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\
         serde_json = {{ version = \"1\", features = [\"preserve_order\"] }}\n\n[workspace]\n\n\
         # No debug info: failures report through panic messages, and generating code for this\n\
         # much serde is the corpus test's main cost.\n\
         [profile.dev]\ndebug = 0\nincremental = false\n",
        runtime = runtime.display().to_string()
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    write_if_changed(&dir.join("src/lib.rs"), lib);
    dir
}

/// Writes `contents` unless the file already holds them: cargo's fingerprints are mtime based,
/// so an untouched scratch crate is not rebuilt.
pub fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read(path).ok().as_deref() != Some(contents.as_bytes()) {
        std::fs::write(path, contents).expect("write file");
    }
}

/// Runs `cargo <args>` in a scratch crate with its own target dir (a nested cargo sharing the
/// outer one would wait on its lock); panics with the output on failure.
pub fn cargo(dir: &Path, args: &[&str]) -> Duration {
    cargo_with(dir, args, &[])
}

/// [`cargo`] with extra environment variables (`RUSTDOCFLAGS`, ...). Arguments after a `--`
/// go to the tool (`clippy -- -D warnings`); `--quiet` is put before them.
pub fn cargo_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Duration {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let start = Instant::now();
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    let out = Command::new(cargo)
        .args(&args[..split])
        .arg("--quiet")
        .args(&args[split..])
        .envs(env.iter().copied())
        .current_dir(dir)
        .env(
            "CARGO_TARGET_DIR",
            target_dir().join("kapi-codegen-scratch/target"),
        )
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    let elapsed = start.elapsed();
    assert!(
        out.status.success(),
        "cargo {args:?} failed in {}:\n{}\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    elapsed
}
