//! Emission over the real corpus under `$KAPI_SPEC_CORPUS` (default `<workspace>/../shared/specs`):
//! every spec generates, output is deterministic and front-end independent, stays small, and
//! compiles (one scratch crate holding v1.36 and every CRD; set `KAPI_SKIP_CORPUS_COMPILE=1` to
//! skip that slow part).

mod support;

use std::path::PathBuf;
use std::time::Instant;

use kapi_codegen::emit::{Generated, Options};
use support::{cargo, corpus, generate_from, lifecycle, scratch_crate, write_tree};

fn spec(rel: &str) -> PathBuf {
    corpus().join(rel)
}

fn crds(minimal_argo: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(corpus().join("crds"))
        .expect("crds folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        // Both argo manifests define io.argoproj.v1alpha1.Workflow, so they cannot share a model.
        .filter(|p| p.to_string_lossy().contains("_minimal_") == minimal_argo)
        .collect();
    out.sort();
    out
}

fn lines(g: &Generated) -> usize {
    g.files.iter().map(|f| f.contents.lines().count()).sum()
}

#[test]
fn every_spec_generates_and_names_its_collisions() {
    let life = lifecycle();
    let mut inputs: Vec<(String, Vec<PathBuf>)> = ["v1.20.2", "v1.28", "v1.34", "v1.36"]
        .iter()
        .map(|v| {
            (
                v.to_string(),
                vec![spec(&format!("kubernetes/{v}/swagger.json"))],
            )
        })
        .collect();
    inputs.push(("v1.34 v3".into(), vec![spec("kubernetes/v1.34/v3")]));
    inputs.push(("crds".into(), crds(false)));
    inputs.push(("argo minimal".into(), crds(true)));
    for (name, paths) in inputs {
        let start = Instant::now();
        let g = generate_from(&paths, &life, &Options::default());
        eprintln!(
            "{name}: {} types, {} kinds, {} lines ({:.1}/type) in {:?}; {} warnings",
            g.report.types,
            g.report.kinds,
            lines(&g),
            lines(&g) as f64 / g.report.types.max(1) as f64,
            start.elapsed(),
            g.report.warnings.len()
        );
        for w in &g.report.warnings {
            eprintln!("  {:?}: {w}", w.kind);
        }
        assert!(g.report.kinds > 0, "{name}: no kinds");
    }
}

#[test]
fn v1_36_averages_at_most_90_lines_per_type() {
    let g = generate_from(
        &[spec("kubernetes/v1.36/swagger.json")],
        &lifecycle(),
        &Options::default(),
    );
    let per_type = lines(&g) as f64 / g.report.types as f64;
    eprintln!(
        "v1.36: {} lines / {} types = {per_type:.1}",
        lines(&g),
        g.report.types
    );
    assert!(per_type <= 90.0, "{per_type:.1} lines per type");
    let modules: std::collections::BTreeMap<&str, &str> = g
        .report
        .group_modules
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    for (group, module) in [
        ("", "core"),
        ("apps", "apps"),
        ("networking.k8s.io", "networking"),
        ("flowcontrol.apiserver.k8s.io", "flowcontrol"),
        ("rbac.authorization.k8s.io", "rbac"),
        ("apiextensions.k8s.io", "apiextensions"),
        ("apiregistration.k8s.io", "apiregistration"),
    ] {
        assert_eq!(modules.get(group), Some(&module), "{group}");
    }
    let apps = g
        .files
        .iter()
        .find(|f| f.path == "apps.rs")
        .expect("apps.rs");
    assert!(apps.contents.contains("pub struct DeploymentSpec {"));
    assert!(
        !apps.contents.contains("pub struct DeploymentList"),
        "standard lists come from the derive"
    );
}

#[test]
fn output_is_deterministic_and_front_end_independent() {
    let life = lifecycle();
    let opts = Options::default();
    let a = generate_from(&[spec("kubernetes/v1.36/swagger.json")], &life, &opts);
    let b = generate_from(&[spec("kubernetes/v1.36/swagger.json")], &life, &opts);
    assert_eq!(a.files, b.files, "two runs differ");

    let v2 = generate_from(&[spec("kubernetes/v1.34/swagger.json")], &life, &opts);
    let v3 = generate_from(&[spec("kubernetes/v1.34/v3")], &life, &opts);
    assert_eq!(v2.files.len(), v3.files.len());
    for (x, y) in v2.files.iter().zip(&v3.files) {
        assert_eq!(x.path, y.path);
        assert!(
            x.contents == y.contents,
            "v1.34 v2 and v3 differ in {}",
            x.path
        );
    }
}

#[test]
fn corpus_output_compiles() {
    if std::env::var_os("KAPI_SKIP_CORPUS_COMPILE").is_some() {
        eprintln!("skipped: KAPI_SKIP_CORPUS_COMPILE is set");
        return;
    }
    let life = lifecycle();
    let opts = Options::default();
    let parts = [
        ("k8s_v1_36", vec![spec("kubernetes/v1.36/swagger.json")]),
        ("crds", crds(false)),
        ("argo_minimal", crds(true)),
    ];
    let mut lib = String::from("#![allow(dead_code)]\n");
    let dir = scratch_crate("kapi-corpus", "");
    for (module, inputs) in &parts {
        let g = generate_from(inputs, &life, &opts);
        let out = dir.join("src").join(module);
        write_tree(&out, &g);
        lib.push_str(&format!(
            "#[path = \"{module}/mod.rs\"]\npub mod {module};\n"
        ));
    }
    std::fs::write(dir.join("src/lib.rs"), lib).expect("write lib");
    let took = cargo(&dir, &["check"]);
    eprintln!("cargo check of v1.36 + all CRDs: {took:?}");
}
