//! `kapi-k8s` compiles with each version feature alone, with a single group, and with every
//! feature at once: `cargo check` of the committed crate into one target dir
//! (`<target>/kapi-k8s-features`, so the outer cargo's lock is not contended), timing each run.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

fn target_dir() -> PathBuf {
    let base = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
    };
    base.join("kapi-k8s-features")
}

#[test]
fn kapi_k8s_compiles_with_every_version_feature_alone_and_all_together() {
    let cases = [
        "v1_20,all-groups",
        "v1_28,all-groups",
        "v1_34,all-groups",
        "v1_36,all-groups",
        // A group pulls in the groups its types reference (apps → core, apimachinery).
        "v1_34,apps",
        "v1_20,v1_28,v1_34,v1_36,all-groups",
    ];
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let start = Instant::now();
    let mut timings = Vec::new();
    for features in cases {
        let t = Instant::now();
        let out = Command::new(&cargo)
            .args([
                "check",
                "--quiet",
                "-p",
                "kapi-k8s",
                "--no-default-features",
            ])
            .args(["--features", features])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .env("CARGO_TARGET_DIR", target_dir())
            .env_remove("RUSTFLAGS")
            .output()
            .expect("run cargo");
        assert!(
            out.status.success(),
            "cargo check -p kapi-k8s --no-default-features --features {features} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        timings.push(format!("{features}: {:.1}s", t.elapsed().as_secs_f64()));
    }
    eprintln!(
        "kapi-k8s feature checks ({:.1}s total):\n  {}",
        start.elapsed().as_secs_f64(),
        timings.join("\n  ")
    );
}
