//! Compiled into the corpus scratch crate (as `src/harness.rs`): decodes JSON fixtures with the
//! generated kind types, encodes them again and compares with what the fixture expects.
//!
//! The fixtures and the table naming each kind's Rust type (`crate::roundtrip::KINDS`) are
//! written by `codegen/tests/emit_corpus.rs`, which also decides what each re-encoding must be;
//! this file only compares, so every rule about `null`, `[]` and `{}` lives in one place there.
//! Objects compare without regard to key order (`serde_json::Map` equality is order-blind).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes wire JSON into a kind's Rust type and encodes the result as a JSON value.
pub type Codec = fn(&str) -> Result<Value, String>;

/// One generated kind type: the corpus module it lives in, its `<group>.<version>.<Kind>` slug
/// (`core` for the core group) and its codec.
pub struct KindType {
    pub module: &'static str,
    pub slug: &'static str,
    pub codec: Codec,
}

/// The codec of kind `K`: decoded from text, as a client reads a response body.
pub fn codec<K: Serialize + DeserializeOwned>(text: &str) -> Result<Value, String> {
    let object: K = serde_json::from_str(text).map_err(|e| format!("decode failed: {e}"))?;
    serde_json::to_value(&object).map_err(|e| format!("encode failed: {e}"))
}

/// Sample variants and the file holding what each must re-encode as.
const VARIANTS: [(&str, &str); 4] = [
    ("full", "full"),
    ("minimal", "minimal"),
    ("empty", "empty.expected"),
    ("null", "null.expected"),
];
/// Differences listed per object, and failing objects listed per test.
const DIFFS_PER_OBJECT: usize = 8;
const OBJECTS_PER_REPORT: usize = 25;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parse(path: &Path, text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `<group>.<version>.<Kind>` of an object, from its `apiVersion` and `kind`.
pub fn slug_of(object: &Value) -> Option<String> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, version) = api_version.split_once('/').unwrap_or(("core", api_version));
    Some(format!("{group}.{version}.{kind}"))
}

fn find(kinds: &[KindType], module: &str, slug: &str) -> Option<Codec> {
    kinds
        .iter()
        .find(|k| k.module == module && k.slug == slug)
        .map(|k| k.codec)
}

/// Round-trips every sample of every kind of `module`; panics listing the differences.
pub fn samples(kinds: &[KindType], module: &str) {
    let dir = fixtures().join("samples").join(module);
    let mut report = Report::default();
    let mut checked = 0;
    for kind in kinds.iter().filter(|k| k.module == module) {
        for (variant, expected) in VARIANTS {
            let input_path = dir.join(format!("{}.{variant}.json", kind.slug));
            let expected_path = dir.join(format!("{}.{expected}.json", kind.slug));
            let input = read(&input_path);
            let want = parse(&expected_path, &read(&expected_path));
            let what = format!("{module} {} {variant}", kind.slug);
            checked += 1;
            match (kind.codec)(&input) {
                Ok(got) => report.compare(&what, &want, &got),
                Err(e) => report.fail(&what, vec![e]),
            }
        }
    }
    assert!(checked > 0, "{module}: no kinds in the table");
    eprintln!("{module}: {checked} samples");
    report.finish();
}

/// Runs every case file under `fixtures/<folder>`: `{"name", "module", "input", "expect"}`
/// or, for input that must be rejected, `{"name", "module", "input", "error": "<substring>"}`.
pub fn cases(kinds: &[KindType], folder: &str) {
    let dir = fixtures().join(folder);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "{}: no cases", dir.display());
    let mut report = Report::default();
    for path in &paths {
        let case = parse(path, &read(path));
        let name = case["name"].as_str().unwrap_or("?");
        let module = case["module"].as_str().unwrap_or("?");
        let input = &case["input"];
        let slug = slug_of(input).unwrap_or_default();
        let what = format!("{name} ({module} {slug})");
        let Some(codec) = find(kinds, module, &slug) else {
            report.fail(&what, vec!["no generated type for this kind".into()]);
            continue;
        };
        let outcome = codec(&input.to_string());
        match (case.get("error").and_then(Value::as_str), outcome) {
            (Some(needle), Err(e)) if e.contains(needle) => {}
            (Some(needle), Err(e)) => {
                report.fail(&what, vec![format!("error {e:?} lacks {needle:?}")])
            }
            (Some(_), Ok(got)) => report.fail(&what, vec![format!("decoded, as {got}")]),
            (None, Ok(got)) => report.compare(&what, &case["expect"], &got),
            (None, Err(e)) => report.fail(&what, vec![e]),
        }
    }
    eprintln!("{folder}: {} cases", paths.len());
    report.finish();
}

#[derive(Default)]
struct Report {
    failures: Vec<(String, Vec<String>)>,
}

impl Report {
    fn fail(&mut self, what: &str, lines: Vec<String>) {
        self.failures.push((what.to_owned(), lines));
    }

    fn compare(&mut self, what: &str, want: &Value, got: &Value) {
        if want == got {
            return;
        }
        let mut lines = Vec::new();
        diff(want, got, &mut String::new(), &mut lines);
        if lines.is_empty() {
            // Equal structure but unequal values (e.g. 1 vs 1.0): say so rather than pass.
            lines.push(format!("/: values differ: want {want}, got {got}"));
        }
        self.fail(what, lines);
    }

    fn finish(self) {
        if self.failures.is_empty() {
            return;
        }
        let mut out = format!("{} objects differ:\n", self.failures.len());
        for (what, lines) in self.failures.iter().take(OBJECTS_PER_REPORT) {
            let _ = writeln!(out, "{what}:");
            for line in lines.iter().take(DIFFS_PER_OBJECT) {
                let _ = writeln!(out, "    {line}");
            }
            if lines.len() > DIFFS_PER_OBJECT {
                let _ = writeln!(out, "    ... {} more", lines.len() - DIFFS_PER_OBJECT);
            }
        }
        if self.failures.len() > OBJECTS_PER_REPORT {
            let _ = writeln!(
                out,
                "... {} more objects",
                self.failures.len() - OBJECTS_PER_REPORT
            );
        }
        panic!("{out}");
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(77).collect::<String>())
    } else {
        s
    }
}

fn pointer(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

/// Lists every difference between `want` and `got` as `<JSON pointer>: <what>`.
fn diff(want: &Value, got: &Value, at: &mut String, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                match g.get(k) {
                    Some(gv) => diff(wv, gv, at, out),
                    None => out.push(format!("{at}: missing, want {}", short(wv))),
                }
                at.truncate(len);
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    out.push(format!("{}/{k}: unexpected {}", at, short(gv)));
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                out.push(format!(
                    "{}: {} items, want {}",
                    pointer(at),
                    g.len(),
                    w.len()
                ));
            }
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                let len = at.len();
                let _ = write!(at, "/{i}");
                diff(wv, gv, at, out);
                at.truncate(len);
            }
        }
        (w, g) if w != g => out.push(format!(
            "{}: got {}, want {}",
            pointer(at),
            short(g),
            short(w)
        )),
        _ => {}
    }
}
