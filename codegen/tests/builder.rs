//! The build.rs front end ([`kapi_codegen::Builder`]): what it writes, when it leaves a file alone,
//! which `cargo:rerun-if-changed` lines it prints (checked on the real stdout of a child process,
//! not just on the list it returns), and how it reports bad input.
//!
//! Scratch files live under `CARGO_TARGET_TMPDIR`, one folder per test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use kapi_codegen::emit::{KindFacts, Options};
use kapi_codegen::{BuildError, Builder};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn widgets_spec() -> PathBuf {
    repo().join("specs/example/widgets.kapi.dev.yaml")
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// A fresh, empty folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("builder")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn write(path: &Path, text: &str) -> PathBuf {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create dir");
    }
    std::fs::write(path, text).expect("write file");
    path.to_path_buf()
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
}

/// Sets a file's mtime far in the past, so a rewrite is visible whatever the clock's resolution.
fn age(path: &Path) -> SystemTime {
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(old))
        .expect("set mtime");
    assert_eq!(mtime(path), old);
    old
}

/// What the library functions produce for the same inputs: the builder must add nothing else.
fn expected_contents(inputs: &[PathBuf], facts: &KindFacts, options: &Options) -> String {
    let model = kapi_codegen::load_inputs(inputs).expect("inputs load");
    let generated = kapi_codegen::generate(&model, facts, options).expect("generates");
    assert_eq!(generated.files.len(), 1, "single-file output is one file");
    generated.files[0].contents.clone()
}

#[test]
fn writes_the_expected_file() {
    struct Case {
        name: &'static str,
        configure: fn(&mut Builder),
        file: &'static str,
        options: Options,
        lifecycle: Option<&'static str>,
        contains: &'static [&'static str],
        lacks: &'static [&'static str],
        /// Widget in three versions and Gizmo.
        kinds: Option<usize>,
    }
    let single = Options {
        single_file: true,
        ..Options::default()
    };
    let cases = [
        Case {
            name: "defaults",
            configure: |_| {},
            file: "kapi_generated.rs",
            options: single.clone(),
            lifecycle: None,
            contains: &["pub mod widgets {", "pub struct Widget {", "kapi::Resource"],
            lacks: &["/// A Go duration string", "pub mod widgets;"],
            kinds: Some(4),
        },
        Case {
            name: "docs, runtime path and file name",
            configure: |b| {
                b.docs(true).runtime_crate("crate::rt").file_name("api.rs");
            },
            file: "api.rs",
            options: Options {
                docs: true,
                runtime_crate: "crate::rt".to_owned(),
                single_file: true,
                kube: false,
            },
            lifecycle: None,
            contains: &["/// A Go duration string", "crate::rt::Resource"],
            lacks: &["kapi::Resource"],
            kinds: Some(4),
        },
        Case {
            name: "kube target",
            configure: |b| {
                b.kube(true);
            },
            file: "kapi_generated.rs",
            options: Options {
                kube: true,
                ..single.clone()
            },
            lifecycle: None,
            contains: &[
                "pub metadata: kapi::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,",
                " kube,",
            ],
            lacks: &["pub metadata: kapi::meta::ObjectMeta"],
            kinds: Some(4),
        },
        Case {
            name: "lifecycle file",
            configure: |b| {
                b.input(golden("spec.json"))
                    .lifecycle(golden("lifecycle.yaml"));
            },
            file: "kapi_generated.rs",
            options: single.clone(),
            lifecycle: Some("lifecycle.yaml"),
            contains: &[
                "pub struct Widget {",
                "pub struct Gizmo {",
                "deprecated = \"1.22\"",
            ],
            lacks: &[],
            kinds: None,
        },
    ];
    for (i, case) in cases.iter().enumerate() {
        let out = scratch(&format!("writes_{i}"));
        let mut b = Builder::new();
        b.input(widgets_spec()).out_dir(&out);
        (case.configure)(&mut b);
        let result = b.generate_to(&mut Vec::new()).expect(case.name);

        let path = out.join(case.file);
        assert_eq!(result.path, path, "{}", case.name);
        assert!(result.written, "{}", case.name);
        let written = std::fs::read_to_string(&path).expect(case.name);
        let mut inputs = vec![widgets_spec()];
        if case.lifecycle.is_some() {
            inputs.push(golden("spec.json"));
        }
        let facts = KindFacts {
            lifecycles: case
                .lifecycle
                .map(|l| kapi_codegen::load_lifecycle(&golden(l)).expect("lifecycle"))
                .unwrap_or_default(),
            ..KindFacts::default()
        };
        assert_eq!(
            written,
            expected_contents(&inputs, &facts, &case.options),
            "{}",
            case.name
        );
        assert!(
            written.starts_with(&format!(
                "// @generated by kapi-codegen {}. Do not edit.\n",
                env!("CARGO_PKG_VERSION")
            )),
            "{}",
            case.name
        );
        for needle in case.contains {
            assert!(written.contains(needle), "{}: lacks {needle}", case.name);
        }
        for needle in case.lacks {
            assert!(!written.contains(needle), "{}: has {needle}", case.name);
        }
        if let Some(kinds) = case.kinds {
            assert_eq!(result.report.kinds, kinds, "{}", case.name);
        }
    }
}

#[test]
fn the_lifecycle_file_changes_the_output() {
    let out = scratch("lifecycle_changes_output");
    let without = Builder::new()
        .input(golden("spec.json"))
        .render()
        .expect("renders")
        .0;
    let with = Builder::new()
        .input(golden("spec.json"))
        .lifecycle(golden("lifecycle.yaml"))
        .out_dir(&out)
        .render()
        .expect("renders")
        .0;
    assert_ne!(without, with);
    assert!(
        std::fs::read_dir(&out).expect("dir").next().is_none(),
        "render writes nothing"
    );
}

#[test]
fn an_unchanged_file_is_not_rewritten() {
    let out = scratch("unchanged");
    let mut b = Builder::new();
    b.input(widgets_spec()).docs(true).out_dir(&out);
    let first = b.generate_to(&mut Vec::new()).expect("first run");
    assert!(first.written);
    let old = age(&first.path);

    let second = b.generate_to(&mut Vec::new()).expect("second run");
    assert!(!second.written, "same contents must not be written again");
    assert_eq!(
        mtime(&second.path),
        old,
        "mtime moved: the file was rewritten"
    );

    // Different contents are written, so the check above is not vacuous.
    b.docs(false);
    let third = b.generate_to(&mut Vec::new()).expect("third run");
    assert!(third.written);
    assert_ne!(mtime(&third.path), old);

    // A file someone edited by hand is restored.
    std::fs::write(&third.path, "// edited\n").expect("edit");
    let fourth = b.generate_to(&mut Vec::new()).expect("fourth run");
    assert!(fourth.written);
    assert!(
        std::fs::read_to_string(&fourth.path)
            .expect("read")
            .starts_with("// @generated")
    );
}

/// A folder of two OpenAPI v3 documents, each with one schema.
fn v3_folder(dir: &Path) -> PathBuf {
    let doc = |name: &str| {
        format!(
            r#"{{"openapi": "3.0.0", "info": {{"title": "t", "version": "v1"}}, "paths": {{}},
               "components": {{"schemas": {{"io.example.v1.{name}": {{"type": "object",
               "properties": {{"size": {{"type": "integer"}}}}}}}}}}}}"#
        )
    };
    let folder = dir.join("v3");
    write(
        &folder.join("apis__b.example.io__v1_openapi.json"),
        &doc("Beta"),
    );
    write(
        &folder.join("apis__a.example.io__v1_openapi.json"),
        &doc("Alpha"),
    );
    folder
}

#[test]
fn rerun_if_changed_names_every_input_file_folder_and_the_lifecycle_file() {
    let dir = scratch("rerun");
    let folder = v3_folder(&dir);
    let mut b = Builder::new();
    b.input(widgets_spec())
        .input(&folder)
        .lifecycle(golden("lifecycle.yaml"))
        .out_dir(dir.join("out"));
    let expected: Vec<String> = [
        widgets_spec(),
        folder.clone(),
        folder.join("apis__a.example.io__v1_openapi.json"),
        folder.join("apis__b.example.io__v1_openapi.json"),
        golden("lifecycle.yaml"),
    ]
    .iter()
    .map(|p| format!("cargo:rerun-if-changed={}", p.display()))
    .collect();

    assert_eq!(b.rerun_if_changed(), expected);
    let mut printed = Vec::new();
    let output = b.generate_to(&mut printed).expect("generates");
    let printed = String::from_utf8(printed).expect("utf-8");
    assert_eq!(printed.lines().collect::<Vec<_>>(), expected);
    assert_eq!(output.directives, expected);
    let contents = std::fs::read_to_string(&output.path).expect("written");
    assert!(
        contents.contains("pub struct Alpha"),
        "the folder was loaded"
    );
}

const CHILD_ENV: &str = "KAPI_BUILDER_TEST_CHILD_OUT_DIR";

/// `generate()` itself must put the directives on stdout, where Cargo reads them. The test runs
/// itself again in a child process (with output capture off) and reads the child's real stdout.
#[test]
fn generate_prints_the_directives_on_stdout() {
    let lifecycle = golden("lifecycle.yaml");
    if let Some(out) = std::env::var_os(CHILD_ENV) {
        Builder::new()
            .input(widgets_spec())
            .input(golden("crd.yaml"))
            .lifecycle(&lifecycle)
            .out_dir(out)
            .generate()
            .expect("child generates");
        return;
    }
    let out = scratch("child");
    let child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "generate_prints_the_directives_on_stdout",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &out)
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    // libtest prints `test <name> ... ` without a newline before the test's own output, so the
    // first directive shares its line: take each line from its `cargo:`.
    let printed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.find("cargo:").map(|i| &l[i..]))
        .collect();
    let expected: Vec<String> = [widgets_spec(), golden("crd.yaml"), lifecycle]
        .iter()
        .map(|p| format!("cargo:rerun-if-changed={}", p.display()))
        .collect();
    assert_eq!(printed, expected, "child stdout:\n{stdout}");
    assert!(out.join("kapi_generated.rs").is_file());
}

#[test]
fn generate_tokens_matches_the_written_file_and_writes_nothing() {
    let dir = scratch("tokens");
    let out = dir.join("never-created");
    let mut b = Builder::new();
    b.input(widgets_spec()).out_dir(&out);
    let tokens = b.generate_tokens().expect("tokens");
    assert!(!out.exists(), "generate_tokens must not write");

    let file: syn::File = syn::parse2(tokens.clone()).expect("tokens parse as a file");
    let formatted = format!(
        "{}\n{}",
        kapi_codegen::emit::header(),
        prettyplease::unparse(&file)
    );
    b.out_dir(&dir);
    let written = b.generate_to(&mut Vec::new()).expect("generates");
    assert_eq!(
        std::fs::read_to_string(written.path).expect("read"),
        formatted
    );
}

#[test]
fn bad_input_is_an_error_naming_the_file_and_path() {
    let dir = scratch("bad");
    let bad_yaml = write(&dir.join("broken.yaml"), "spec: [unclosed\n");
    let bad_crd = write(
        &dir.join("bad-crd.yaml"),
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {name: things.example.io}\n\
         spec:\n  group: example.io\n  scope: Namespaced\n\
         \x20 names: {kind: Thing, plural: things}\n\
         \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n\
         \x20   schema:\n      openAPIV3Schema:\n        type: object\n\
         \x20       properties:\n          spec: {type: 42}\n",
    );
    let unknown = write(&dir.join("data.json"), r#"{"hello": "world"}"#);
    let missing = dir.join("missing.yaml");
    let bad_lifecycle = write(
        &dir.join("life.yaml"),
        "- {group: a, version: v1beta1, kind: K, introduced: soon, source: tag}\n",
    );

    struct Case {
        name: &'static str,
        input: PathBuf,
        lifecycle: Option<PathBuf>,
        /// Pieces the message must contain besides the file name.
        mentions: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "malformed YAML",
            input: bad_yaml.clone(),
            lifecycle: None,
            mentions: &["invalid YAML in "],
        },
        Case {
            name: "bad schema in a CRD",
            input: bad_crd.clone(),
            lifecycle: None,
            mentions: &["#/spec/versions/0/schema/openAPIV3Schema/properties/spec/type"],
        },
        Case {
            name: "unrecognized document",
            input: unknown.clone(),
            lifecycle: None,
            mentions: &["unrecognized input "],
        },
        Case {
            name: "missing file",
            input: missing.clone(),
            lifecycle: None,
            mentions: &["cannot read "],
        },
        Case {
            name: "bad lifecycle file",
            input: widgets_spec(),
            lifecycle: Some(bad_lifecycle.clone()),
            mentions: &["#/0/introduced", "expected \"MAJOR.MINOR\""],
        },
    ];
    for case in cases {
        let out = dir.join("out");
        let mut b = Builder::new();
        b.input(&case.input).out_dir(&out);
        if let Some(l) = &case.lifecycle {
            b.lifecycle(l);
        }
        let err = b.generate_to(&mut Vec::new()).expect_err(case.name);
        assert!(matches!(err, BuildError::Load(_)), "{}: {err:?}", case.name);
        let named = case.lifecycle.as_ref().unwrap_or(&case.input);
        let message = err.to_string();
        assert!(
            message.contains(&named.display().to_string()),
            "{}: {message}",
            case.name
        );
        for m in case.mentions {
            assert!(message.contains(m), "{}: {message} lacks {m}", case.name);
        }
        // A build script returning the error shows it with `{:?}`: that must name the file too.
        let debug = format!("{err:?}");
        assert!(debug.starts_with(&message), "{}: {debug}", case.name);
        assert!(
            !out.join("kapi_generated.rs").exists(),
            "{}: nothing is written on error",
            case.name
        );
    }
}

#[test]
fn missing_inputs_and_out_dir_are_errors() {
    let err = Builder::new()
        .out_dir(scratch("no_inputs"))
        .generate_to(&mut Vec::new())
        .expect_err("no inputs");
    assert!(matches!(err, BuildError::NoInputs), "{err:?}");

    let err = Builder::new()
        .input(widgets_spec())
        .out_dir(scratch("bad_name"))
        .file_name("nested/api.rs")
        .generate_to(&mut Vec::new())
        .expect_err("bad file name");
    assert_eq!(
        err.to_string(),
        "invalid output file name \"nested/api.rs\": expected a file name without directories"
    );
}

#[test]
fn skipped_inputs_are_cargo_warnings() {
    let out = scratch("skipped_inputs");
    let input = out.join("mixed.yaml");
    let crd = std::fs::read_to_string(widgets_spec()).expect("widgets spec");
    std::fs::write(
        &input,
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n---\n{crd}"),
    )
    .expect("write input");
    let mut directives = Vec::new();
    let result = Builder::new()
        .input(&input)
        .out_dir(&out)
        .generate_to(&mut directives)
        .expect("generates the CRDs beside the ConfigMap");
    assert_eq!(result.report.kinds, 4);
    let printed = String::from_utf8(directives).expect("utf-8");
    let warning = printed
        .lines()
        .find(|l| l.starts_with("cargo::warning=kapi-codegen: skipped a ConfigMap object"))
        .unwrap_or_else(|| panic!("no warning in {printed}"));
    assert!(warning.contains("mixed.yaml"), "{warning}");
}
