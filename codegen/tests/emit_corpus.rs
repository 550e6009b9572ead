//! Emission over the real corpus under `$KAPI_SPEC_CORPUS` (default `<workspace>/../shared/specs`):
//! every spec generates, output is deterministic and front-end independent, stays small, and
//! compiles and round-trips, in two scratch crates (each built once per run, and rebuilt only when
//! the output changes). `kapi-corpus` holds v1.20.2, v1.28, v1.34 and v1.36 as modules and
//! decodes and re-encodes sample objects of every served kind, decode edge cases and hand-written
//! manifests (`tests/roundtrip/kubernetes.yaml`). `kapi-crds` holds every CRD of `crds` and
//! `crds-wild` (19 projects) and the golden edge cases, generated with docs: it must pass clippy
//! and rustdoc with `-D warnings` and run no failing doctest, and its types must round-trip
//! samples, decode cases, the projects' manifests (`tests/roundtrip/*.yaml`) and the upstream
//! examples in `crds-wild/examples/` exactly. The v1.34 OpenAPI 3 folder is not compiled again:
//! its output is byte-identical to v1.34's Swagger output (checked below). Set
//! `KAPI_SKIP_CORPUS_COMPILE=1` to skip the slow part.

#[path = "support/roundtrip.rs"]
mod roundtrip;
mod support;

use std::path::PathBuf;
use std::time::Instant;

use std::collections::BTreeMap;

use kapi_codegen::emit::{Generated, Options, generate};
use kapi_codegen::load_inputs;
use kapi_codegen::model::Gvk;
use roundtrip::{Part, Tree, case, kind_fixtures, slug};
use serde_json::{Value, json};
use support::{cargo, cargo_with, corpus, facts, generate_from, scratch_crate};

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
    let life = facts();
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
        &facts(),
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
    let life = facts();
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

/// The modules of the Kubernetes round-trip scratch crate.
fn k8s_parts() -> Vec<Part> {
    [
        ("k8s_v1_20_2", "v1.20.2"),
        ("k8s_v1_28", "v1.28"),
        ("k8s_v1_34", "v1.34"),
        ("k8s_v1_36", "v1.36"),
    ]
    .into_iter()
    .map(|(module, v)| Part {
        module,
        inputs: vec![spec(&format!("kubernetes/{v}/swagger.json"))],
    })
    .collect()
}

/// Every CRD of `$KAPI_SPEC_CORPUS/crds-wild` (projects never part of the generator's own
/// corpus), sorted.
fn wild_crds() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(corpus().join("crds-wild"))
        .expect("crds-wild folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    out.sort();
    out
}

/// The modules of the CRD scratch crate: every CRD of the corpus, and the golden edge cases.
fn crd_parts() -> Vec<Part> {
    vec![
        Part {
            module: "crds",
            inputs: crds(false),
        },
        Part {
            module: "argo_minimal",
            inputs: crds(true),
        },
        Part {
            module: "crds_wild",
            inputs: wild_crds(),
        },
        Part {
            module: "golden_edge",
            inputs: vec![support::manifest_dir().join("tests/golden/edge.yaml")],
        },
    ]
}

const K8S: [&str; 4] = ["k8s_v1_20_2", "k8s_v1_28", "k8s_v1_34", "k8s_v1_36"];

/// Quantities as clients write them. Generated types write each back as it was read (custom
/// resources are stored verbatim upstream, so a read-modify-write must not change their text);
/// the server canonicalises built-in kinds itself (see `kapi::quantity`).
fn quantity_inputs() -> Vec<(&'static str, Value)> {
    vec![
        (
            "memory string beyond i32",
            json!({"memory": "107374182400"}),
        ),
        (
            "memory number beyond i32",
            json!({"memory": 107374182400_u64}),
        ),
        ("binary suffix", json!({"memory": "100Gi"})),
        ("cpu 0.5 string", json!({"cpu": "0.5"})),
        ("cpu 1.25 string", json!({"cpu": "1.25"})),
        ("cpu 1000m", json!({"cpu": "1000m"})),
        ("cpu 0.05", json!({"cpu": "0.05"})),
        ("cpu 250m", json!({"cpu": "250m"})),
        ("cpu 0.5 number", json!({"cpu": 0.5})),
        ("cpu integer number", json!({"cpu": 2})),
    ]
}

/// Decode edge cases of the built-ins: quantities, both int-or-string forms, and inputs that
/// must be rejected (so the harness is seen to fail).
fn k8s_decode_cases() -> Vec<Value> {
    let mut out = Vec::new();
    for module in K8S {
        let pod = |limits: Value, requests: Value| {
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "big", "namespace": "default"},
                "spec": {"containers": [{
                    "name": "app", "image": "app:1",
                    "resources": {"limits": limits, "requests": requests}
                }]}
            })
        };
        for (name, input) in quantity_inputs() {
            let limits = pod(input.clone(), json!({}));
            out.push(case(
                &format!("{module} pod limits {name}"),
                module,
                limits.clone(),
                Ok(limits),
            ));
            let requests = pod(json!({}), input);
            out.push(case(
                &format!("{module} pod requests {name}"),
                module,
                requests.clone(),
                Ok(requests),
            ));
        }
        out.push(case(
            &format!("{module} pod quantity not a number"),
            module,
            pod(json!({"cpu": "lots"}), json!({})),
            Err("decode failed: at `.spec"),
        ));
        let deployment = |surge: Value, unavailable: Value| {
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "web", "image": "nginx"}]}},
                    "strategy": {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
                }
            })
        };
        let both = deployment(json!(1), json!("25%"));
        out.push(case(
            &format!("{module} int-or-string int and string"),
            module,
            both.clone(),
            Ok(both),
        ));
        let numeric_string = deployment(json!("1"), json!(0));
        out.push(case(
            &format!("{module} int-or-string numeric string stays a string"),
            module,
            numeric_string.clone(),
            Ok(numeric_string),
        ));
        out.push(case(
            &format!("{module} int-or-string fraction rejected"),
            module,
            deployment(json!(1.5), json!(0)),
            Err("decode failed: at `.spec.strategy.rollingUpdate.maxSurge`"),
        ));
        out.push(case(
            &format!("{module} int-or-string beyond i32 rejected"),
            module,
            deployment(json!(5_000_000_000_i64), json!(0)),
            Err("decode failed"),
        ));
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}
            ]}
        });
        out.push(case(
            &format!("{module} service target ports"),
            module,
            service.clone(),
            Ok(service),
        ));
        let list = |items: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d", "finalizers": items}})
        };
        out.push(case(
            &format!("{module} empty finalizers omitted as upstream"),
            module,
            list(json!([])),
            Ok(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}})),
        ));
    }
    out
}

/// Decode edge cases of CRD types. controller-gen writes `resource.Quantity` as int-or-string
/// with a pattern, which the generator maps to `Quantity`.
fn crd_decode_cases() -> Vec<Value> {
    let mut out = Vec::new();
    let alertmanager = |limits: Value| {
        json!({
            "apiVersion": "monitoring.coreos.com/v1", "kind": "Alertmanager",
            "metadata": {"name": "main", "namespace": "monitoring"},
            "spec": {"resources": {"limits": limits}}
        })
    };
    for (name, input) in quantity_inputs() {
        let object = alertmanager(input);
        out.push(case(
            &format!("crd alertmanager limits {name}"),
            "crds",
            object.clone(),
            Ok(object),
        ));
    }
    let workflow = |limits: Value| {
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "metadata": {"name": "w", "namespace": "argo"},
            "spec": {"entrypoint": "main", "templates": [{
                "name": "main",
                "container": {"image": "busybox", "resources": {"limits": limits}}
            }]}
        })
    };
    let object = workflow(json!({"memory": 107374182400_u64, "cpu": 0.5}));
    out.push(case(
        "crd workflow limits number beyond i32 and fraction",
        "crds",
        object.clone(),
        Ok(object),
    ));
    let monitor = |port: Value| {
        json!({
            "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": "m", "namespace": "monitoring"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "endpoints": [{"targetPort": port}]}
        })
    };
    for port in [json!(8080), json!("metrics")] {
        out.push(case(
            &format!("crd servicemonitor targetPort {port}"),
            "crds",
            monitor(port.clone()),
            Ok(monitor(port)),
        ));
    }
    out.push(case(
        "crd servicemonitor targetPort fraction rejected",
        "crds",
        monitor(json!(80.5)),
        Err("decode failed: at `.spec.endpoints.targetPort`"),
    ));
    out
}

/// YAML manifests checked against every module that has a type for their kind; they must
/// re-encode exactly as written (JSON values compared exactly: `1` is not `1.0`, and quantity
/// strings keep their text). Objects of kinds no module has are returned by file, not checked.
fn manifest_cases(
    files: &[PathBuf],
    kinds: &BTreeMap<&str, BTreeMap<String, String>>,
) -> (Vec<Value>, Vec<String>) {
    let mut out = Vec::new();
    let mut unchecked = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).expect("read manifest");
        let stem = file
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        for (i, doc) in serde_yaml_ng::Deserializer::from_str(&text).enumerate() {
            let object: Value = serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            if object.is_null() {
                continue;
            }
            let api_version = object["apiVersion"].as_str().expect("apiVersion");
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            let gvk = Gvk::new(group, version, object["kind"].as_str().expect("kind"));
            let modules: Vec<&str> = kinds
                .iter()
                .filter(|(_, t)| t.contains_key(&slug(&gvk)))
                .map(|(m, _)| *m)
                .collect();
            if modules.is_empty() {
                unchecked.push(format!("{stem}: {gvk}"));
            }
            for module in modules {
                out.push(case(
                    &format!("{stem}#{i}"),
                    module,
                    object.clone(),
                    Ok(object.clone()),
                ));
            }
        }
    }
    (out, unchecked)
}

/// `tests/roundtrip/*.yaml`: hand-written manifests of the corpus projects.
fn project_manifests() -> Vec<PathBuf> {
    yaml_files(&support::manifest_dir().join("tests/roundtrip"))
}

fn yaml_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A round-trip scratch crate: generates `parts` as modules, writes sample fixtures of every
/// served kind, the decode `cases` and the manifests, and returns the crate dir, the kind
/// table, and the manifests' objects of kinds no module has.
fn round_trip_crate(
    name: &str,
    parts: Vec<Part>,
    opts: &Options,
    cases: &[Value],
    manifests: &[PathBuf],
) -> (PathBuf, usize, Vec<String>) {
    let start = Instant::now();
    let life = facts();
    let mut lib = String::from(
        "#![allow(dead_code)]\n#[cfg(test)]\nmod harness;\n#[cfg(test)]\nmod roundtrip;\n",
    );
    // The crate's manifest and lib.rs come last (`scratch_crate`), once lib.rs is known, so
    // an unchanged corpus rewrites no file and cargo rebuilds nothing.
    let dir = support::target_dir()
        .join("kapi-codegen-scratch")
        .join(name);
    let mut tree = Tree::new(&dir);
    let mut kinds: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    let mut samples = 0;
    for part in parts {
        let model = load_inputs(&part.inputs).unwrap_or_else(|e| panic!("{:?}: {e}", part.inputs));
        let g = generate(&model, &life, opts).unwrap_or_else(|e| panic!("{}: {e}", part.module));
        for f in &g.files {
            tree.write(format!("src/{}/{}", part.module, f.path), &f.contents);
        }
        lib.push_str(&format!(
            "#[path = \"{m}/mod.rs\"]\npub mod {m};\n",
            m = part.module
        ));
        let types = roundtrip::kind_types(&g.files);
        let mut missing = Vec::new();
        for (kind, _) in model.resources() {
            let slug = slug(&kind.gvk);
            if !types.contains_key(&slug) {
                missing.push(slug);
                continue;
            }
            for (variant, input, expected) in kind_fixtures(&model, &kind.gvk) {
                let base = format!("fixtures/samples/{}/{slug}", part.module);
                tree.write_json(format!("{base}.{variant}.json"), &input);
                if variant == "empty" || variant == "null" {
                    tree.write_json(format!("{base}.{variant}.expected.json"), &expected);
                } else {
                    assert_eq!(input, expected);
                }
                samples += 1;
            }
        }
        assert!(
            missing.is_empty(),
            "{}: served kinds without a type: {missing:?}",
            part.module
        );
        // Kinds are read from the generated code, so every served kind must be there and no more.
        assert_eq!(
            types.len(),
            model.resources().count(),
            "{}: kind structs",
            part.module
        );
        kinds.insert(part.module, types);
    }
    for (i, c) in cases.iter().enumerate() {
        tree.write_json(format!("fixtures/cases/{i:03}.json"), c);
    }
    let (manifest_checks, unchecked) = manifest_cases(manifests, &kinds);
    for (i, c) in manifest_checks.iter().enumerate() {
        tree.write_json(format!("fixtures/manifests/{i:03}.json"), c);
    }
    tree.write("src/harness.rs", roundtrip::HARNESS);
    tree.write("src/roundtrip.rs", &roundtrip::table_source(&kinds));
    scratch_crate(name, &lib);
    tree.write("src/lib.rs", &lib);
    tree.prune("src");
    tree.prune("fixtures");
    let kind_count: usize = kinds.values().map(BTreeMap::len).sum();
    eprintln!(
        "{name}: wrote {kind_count} kinds, {samples} samples, {} decode cases, {} manifest checks in {:?}",
        cases.len(),
        manifest_checks.len(),
        start.elapsed()
    );
    (dir, kind_count, unchecked)
}

#[test]
fn k8s_output_compiles_and_round_trips() {
    if std::env::var_os("KAPI_SKIP_CORPUS_COMPILE").is_some() {
        eprintln!("skipped: KAPI_SKIP_CORPUS_COMPILE is set");
        return;
    }
    let manifests: Vec<PathBuf> = project_manifests()
        .into_iter()
        .filter(|p| p.ends_with("kubernetes.yaml"))
        .collect();
    let (dir, _, unchecked) = round_trip_crate(
        "kapi-corpus",
        k8s_parts(),
        &Options::default(),
        &k8s_decode_cases(),
        &manifests,
    );
    assert!(unchecked.is_empty(), "no module has {unchecked:?}");
    let took = cargo(&dir, &["test", "--lib"]);
    eprintln!("cargo test of the corpus crate (build and run): {took:?}");
}

/// Every CRD of the corpus (`crds`, and `crds-wild`: 19 projects, 47 CRDs) and the golden edge
/// cases, generated with docs into one crate that must pass clippy and rustdoc without a
/// warning and run no doctest, and whose types must round-trip every sample, decode case,
/// project manifest and upstream example (`crds-wild/examples/`) with no loss (issue 17).
#[test]
fn crd_output_compiles_without_warnings_and_round_trips_examples() {
    if std::env::var_os("KAPI_SKIP_CORPUS_COMPILE").is_some() {
        eprintln!("skipped: KAPI_SKIP_CORPUS_COMPILE is set");
        return;
    }
    let mut manifests: Vec<PathBuf> = project_manifests()
        .into_iter()
        .filter(|p| !p.ends_with("kubernetes.yaml"))
        .collect();
    let examples = yaml_files(&corpus().join("crds-wild/examples"));
    assert_eq!(examples.len(), 31, "crds-wild/examples");
    manifests.extend(examples);
    let opts = Options {
        docs: true,
        ..Options::default()
    };
    let (dir, kinds, mut unchecked) = round_trip_crate(
        "kapi-crds",
        crd_parts(),
        &opts,
        &crd_decode_cases(),
        &manifests,
    );
    unchecked.sort();
    // 47 CRDs, some with several served versions, and the golden edge cases' 8 kinds.
    assert!(kinds >= 47 + 8, "{kinds} kinds");
    // Example objects of kinds whose CRDs the corpus does not carry.
    assert_eq!(
        unchecked,
        [
            "bgppeer_with_bfdprofile: metallb.io/v1beta1 BFDProfile",
            "cephcosidriver: ceph.rook.io/v1 CephObjectStoreUser",
            "cluster-example-full: v1 Secret",
            "cluster-example-full: v1 Secret",
            "cluster-example-full: v1 Secret",
            "cluster-test: ceph.rook.io/v1 CephBlockPool",
        ]
    );
    // `-D warnings` makes rustc's and clippy's warnings errors; `--all-targets` checks the
    // harness too. rustdoc's lints (bare URLs, broken links, HTML tags) run in `cargo doc`.
    let took = cargo_with(
        &dir,
        &["clippy", "--all-targets", "--", "-D", "warnings"],
        &[],
    );
    eprintln!("cargo clippy of the CRD crate: {took:?}");
    let took = cargo_with(
        &dir,
        &["doc", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    );
    eprintln!("cargo doc of the CRD crate: {took:?}");
    // Runs the round trips, then the doctests (there must be none that fail).
    let took = cargo(&dir, &["test"]);
    eprintln!("cargo test of the CRD crate (build and run): {took:?}");
}
