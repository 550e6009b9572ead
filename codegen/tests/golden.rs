//! Golden tests: small hand-written inputs under `tests/golden/` exercising every construct the
//! generator handles; the output is committed next to them, diffed here, and compiled and tested
//! in a scratch crate (`tests/golden/check.rs`).
//!
//! Regenerate after an intended change with `KAPI_BLESS=1 cargo test -p kapi-codegen`.

mod support;

use std::path::PathBuf;

use kapi_codegen::emit::{KindFacts, Options};
use support::{cargo, generate_from, manifest_dir, scratch_crate, write_tree};

struct Case {
    name: &'static str,
    input: &'static str,
    options: Options,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "swagger",
            input: "spec.json",
            options: Options::default(),
        },
        Case {
            name: "crd",
            input: "crd.yaml",
            options: Options {
                docs: true,
                ..Options::default()
            },
        },
        // CRD constructs from the wild that once broke generation (issue 17).
        Case {
            name: "edge",
            input: "edge.yaml",
            options: Options {
                docs: true,
                ..Options::default()
            },
        },
    ]
}

fn golden() -> PathBuf {
    manifest_dir().join("tests/golden")
}

fn facts() -> KindFacts {
    KindFacts {
        lifecycles: kapi_codegen::load_lifecycle(&golden().join("lifecycle.yaml"))
            .expect("golden lifecycle"),
        ..KindFacts::default()
    }
}

#[test]
fn output_matches_the_committed_golden_files() {
    let bless = std::env::var_os("KAPI_BLESS").is_some();
    let facts = facts();
    let mut stale = Vec::new();
    for case in cases() {
        let generated = generate_from(&[golden().join(case.input)], &facts, &case.options);
        let dir = golden().join(case.name);
        if bless {
            write_tree(&dir, &generated);
            continue;
        }
        let mut expected: Vec<String> = std::fs::read_dir(&dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        expected.sort();
        let mut actual: Vec<String> = generated.files.iter().map(|f| f.path.clone()).collect();
        actual.sort();
        if expected != actual {
            stale.push(format!(
                "{}: files {actual:?}, committed {expected:?}",
                case.name
            ));
        }
        for f in &generated.files {
            let committed = std::fs::read_to_string(dir.join(&f.path)).unwrap_or_default();
            if committed != f.contents {
                let line = committed
                    .lines()
                    .zip(f.contents.lines())
                    .position(|(a, b)| a != b)
                    .map_or(
                        committed.lines().count().min(f.contents.lines().count()),
                        |n| n,
                    )
                    + 1;
                stale.push(format!("{}/{} differs from line {line}", case.name, f.path));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "golden output is stale:\n  {}\nregenerate with `KAPI_BLESS=1 cargo test -p kapi-codegen` and review the diff",
        stale.join("\n  ")
    );
}

#[test]
fn report_names_the_collisions() {
    let generated = generate_from(&[golden().join("spec.json")], &facts(), &Options::default());
    let messages: Vec<String> = generated
        .report
        .warnings
        .iter()
        .map(|w| w.message.clone())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("\"$ref\"") && m.contains("ref_2")),
        "{messages:?}"
    );
    assert_eq!(generated.report.kinds, 2);
    assert!(
        generated
            .report
            .group_modules
            .contains(&("widgets.example.k8s.io".to_owned(), "widgets".to_owned()))
    );
}

/// Compiles the committed golden output and runs `tests/golden/check.rs` against it.
#[test]
fn golden_output_compiles_and_behaves() {
    let lib = format!(
        "#![allow(dead_code)]\n#[path = {:?}]\npub mod swagger;\n#[path = {:?}]\npub mod crd;\n#[path = {:?}]\npub mod edge;\n#[cfg(test)]\n#[path = {:?}]\nmod check;\n",
        golden().join("swagger/mod.rs").display().to_string(),
        golden().join("crd/mod.rs").display().to_string(),
        golden().join("edge/mod.rs").display().to_string(),
        golden().join("check.rs").display().to_string(),
    );
    let dir = scratch_crate("kapi-golden", &lib);
    let took = cargo(&dir, &["test"]);
    eprintln!("golden crate built and tested in {took:?}");
}
