//! The outer half of the corpus round-trip proof: finds each served kind's generated Rust type,
//! writes its sample objects and what each must re-encode as into the scratch crate, and writes
//! the table and `#[test]`s that `support/roundtrip_harness.rs` runs inside it.
//!
//! # What "keeps its meaning" means
//!
//! `Full` and `Minimal` samples must come back exactly (key order aside). The two derived
//! variants relax only where Kubernetes itself gives two spellings one meaning:
//!
//! - `empty` ([`Variant::Empty`]): every list `[]`, every map `{}`, every optional `nullable`
//!   property `null`. A `[]` or `{}` in a generated type must come back as written (an optional
//!   list sent as `[]` is not absent: server-side apply and strategic merge tell the two apart).
//!   An optional property sent as `null` may come back absent: the API server treats `null` as
//!   unset (Go decodes it to a nil pointer; CRD pruning drops it). Inside the runtime's meta types
//!   (ObjectMeta, LabelSelector, ...), `[]` and `{}` may come back absent, as upstream's Go
//!   structs with `omitempty` write them.
//! - `null` (derived from `Full`): every optional property holding a scalar (string, number,
//!   boolean, and the string forms of Quantity, IntOrString, Time) is `null`; it must come back
//!   absent and the rest exactly. Type meta (`apiVersion`, `kind`) of kind objects stays.
//!
//! Values of untyped fields (`x-kubernetes-preserve-unknown-fields`, RawExtension, JSON) are data:
//! nothing inside them is relaxed.

#![allow(dead_code, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kapi_codegen::emit::GeneratedFile;
use kapi_codegen::model::{Gvk, Model, Schema, SchemaType};
use kapi_codegen::sample::{Special, Variant, sample_kind};
use serde_json::{Value, json};

/// The harness compiled into the scratch crate.
pub const HARNESS: &str = include_str!("roundtrip_harness.rs");

/// apimachinery meta.v1 definitions the runtime provides as hand-written types (mirrors emission's
/// table; a definition missing here is checked as strictly as generated types, so a gap shows up
/// as a test failure, not a silent pass).
const RUNTIME_META: [&str; 18] = [
    "ObjectMeta",
    "ListMeta",
    "TypeMeta",
    "LabelSelector",
    "LabelSelectorRequirement",
    "OwnerReference",
    "ManagedFieldsEntry",
    "Status",
    "StatusDetails",
    "StatusCause",
    "Condition",
    "DeleteOptions",
    "Preconditions",
    "APIResource",
    "APIResourceList",
    "APIGroup",
    "APIGroupList",
    "APIVersions",
];

fn is_runtime_meta(name: &str) -> bool {
    name.strip_prefix("io.k8s.apimachinery.pkg.apis.meta.v1.")
        .is_some_and(|n| RUNTIME_META.contains(&n))
}

/// `<group>.<version>.<Kind>`, `core` for the core group: one fixture name per kind.
pub fn slug(gvk: &Gvk) -> String {
    let group = if gvk.group.is_empty() {
        "core"
    } else {
        &gvk.group
    };
    format!("{group}.{}.{}", gvk.version, gvk.kind)
}

/// Files written into a scratch crate, rewritten only when their contents change so cargo's
/// fingerprints (mtime based) let an unchanged corpus skip the rebuild.
pub struct Tree {
    root: PathBuf,
    written: BTreeSet<PathBuf>,
}

impl Tree {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            written: BTreeSet::new(),
        }
    }

    pub fn write(&mut self, rel: impl AsRef<Path>, contents: &str) {
        let path = self.root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create dir");
        }
        if std::fs::read(&path).ok().as_deref() != Some(contents.as_bytes()) {
            std::fs::write(&path, contents).expect("write file");
        }
        self.written.insert(path);
    }

    pub fn write_json(&mut self, rel: impl AsRef<Path>, value: &Value) {
        let text = serde_json::to_string_pretty(value).expect("json");
        self.write(rel, &text);
    }

    /// Removes files under `sub` that this run did not write (stale kinds, old layouts).
    pub fn prune(&self, sub: &str) {
        let mut stack = vec![self.root.join(sub)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.filter_map(Result::ok) {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if !self.written.contains(&path) {
                    std::fs::remove_file(&path).expect("remove stale file");
                }
            }
        }
    }
}

/// Every kind struct in generated files (those with `#[resource(group = .., version = ..)]`),
/// as slug → Rust path relative to the generated tree's root module.
pub fn kind_types(files: &[GeneratedFile]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in files {
        let Some(stem) = f.path.strip_suffix(".rs") else {
            continue;
        };
        let file = syn::parse_file(&f.contents).unwrap_or_else(|e| panic!("{}: {e}", f.path));
        let prefix = if stem == "mod" {
            Vec::new()
        } else {
            stem.split('/').map(str::to_owned).collect()
        };
        collect_kinds(&file.items, &prefix, &mut out);
    }
    out
}

fn collect_kinds(items: &[syn::Item], path: &[String], out: &mut BTreeMap<String, String>) {
    for item in items {
        match item {
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    let mut p = path.to_vec();
                    p.push(m.ident.to_string());
                    collect_kinds(inner, &p, out);
                }
            }
            syn::Item::Struct(s) => {
                for attr in &s.attrs {
                    if !attr.path().is_ident("resource") {
                        continue;
                    }
                    let Ok(list) = attr.meta.require_list() else {
                        continue;
                    };
                    let tokens = list.tokens.to_string();
                    let (Some(group), Some(version)) =
                        (string_arg(&tokens, "group"), string_arg(&tokens, "version"))
                    else {
                        continue;
                    };
                    let name = s.ident.to_string();
                    let kind = string_arg(&tokens, "kind").unwrap_or_else(|| name.clone());
                    let gvk = Gvk::new(&group, &version, &kind);
                    let mut p = path.to_vec();
                    p.push(name);
                    out.insert(slug(&gvk), p.join("::"));
                }
            }
            _ => {}
        }
    }
}

/// The string value of `key = "..."` at the top level of an attribute's token text.
fn string_arg(tokens: &str, key: &str) -> Option<String> {
    let mut rest = tokens;
    loop {
        let at = rest.find(key)?;
        let before = rest[..at].trim_end();
        let after = rest[at + key.len()..].trim_start();
        rest = &rest[at + key.len()..];
        if (before.is_empty() || before.ends_with(',')) && after.starts_with('=') {
            let value = after[1..].trim_start().strip_prefix('"')?;
            return value.split('"').next().map(str::to_owned);
        }
    }
}

/// The four sample fixtures of one kind: (variant name, input, expected re-encoding).
pub fn kind_fixtures(model: &Model, gvk: &Gvk) -> Vec<(&'static str, Value, Value)> {
    let sample = |v| sample_kind(model, gvk, v).unwrap_or_else(|e| panic!("{gvk}: {e}"));
    let full = sample(Variant::Full);
    let minimal = sample(Variant::Minimal);
    let empty = sample(Variant::Empty);
    let root = &model.kinds[gvk].definition;
    let walker = Walker::new(model);

    let mut empty_expected = empty.clone();
    walker.reference(root, &mut empty_expected, Rule::Empty, false, 0);
    let mut nulled = full.clone();
    walker.reference(root, &mut nulled, Rule::NullScalars, false, 0);
    let mut null_expected = nulled.clone();
    walker.reference(root, &mut null_expected, Rule::Empty, false, 0);
    vec![
        ("full", full.clone(), full),
        ("minimal", minimal.clone(), minimal),
        ("empty", empty, empty_expected),
        ("null", nulled, null_expected),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Rewrite a sample into what it must re-encode as (see the module docs).
    Empty,
    /// Replace every optional scalar with `null`.
    NullScalars,
}

/// Walks a sample value alongside its schema.
struct Walker<'m> {
    model: &'m Model,
    /// Definitions of served kinds: their `apiVersion` and `kind` are type meta, never nulled.
    kind_defs: BTreeSet<&'m str>,
}

impl<'m> Walker<'m> {
    fn new(model: &'m Model) -> Self {
        Self {
            model,
            kind_defs: model
                .resources()
                .map(|(k, _)| k.definition.as_str())
                .collect(),
        }
    }

    fn reference(&self, name: &str, v: &mut Value, rule: Rule, runtime: bool, depth: usize) {
        if Special::of_definition(name).is_some_and(|s| s != Special::ObjectMeta) {
            return;
        }
        let runtime = runtime || is_runtime_meta(name);
        let kind_root = self.kind_defs.contains(name);
        if let Some(schema) = self.model.types.get(name) {
            self.object_or_value(schema, v, rule, runtime, kind_root, depth + 1);
        }
    }

    fn value(&self, schema: &Schema, v: &mut Value, rule: Rule, runtime: bool, depth: usize) {
        self.object_or_value(schema, v, rule, runtime, false, depth);
    }

    fn object_or_value(
        &self,
        schema: &Schema,
        v: &mut Value,
        rule: Rule,
        runtime: bool,
        kind_root: bool,
        depth: usize,
    ) {
        // Samples unroll recursion a bounded number of times; this only guards the walk.
        assert!(depth < 512, "schema walk too deep");
        match (&schema.ty, v) {
            (SchemaType::Ref(name), v) => self.reference(name, v, rule, runtime, depth),
            (SchemaType::Object(o), Value::Object(map)) if !o.properties.is_empty() => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let prop = o.properties.iter().find(|p| p.name == key);
                    let required = o.required.contains(&key);
                    let Some(item) = map.get_mut(&key) else {
                        continue;
                    };
                    let sub = match prop {
                        Some(p) => &p.schema,
                        None => match &o.additional_properties {
                            Some(extra) => extra.as_ref(),
                            None => continue,
                        },
                    };
                    match rule {
                        Rule::Empty => {
                            let drop = !required
                                && (item.is_null() || (runtime && omitted_when_empty(sub, item)));
                            if drop {
                                map.shift_remove(&key);
                                continue;
                            }
                        }
                        Rule::NullScalars => {
                            let type_meta = kind_root && (key == "apiVersion" || key == "kind");
                            let scalar = matches!(
                                item,
                                Value::String(_) | Value::Number(_) | Value::Bool(_)
                            );
                            if prop.is_some() && !required && !type_meta && scalar {
                                *item = Value::Null;
                                continue;
                            }
                        }
                    }
                    self.value(sub, item, rule, runtime, depth + 1);
                }
            }
            (SchemaType::Map(inner), Value::Object(map)) => {
                for item in map.values_mut() {
                    self.value(inner, item, rule, runtime, depth + 1);
                }
            }
            (SchemaType::Array(inner), Value::Array(items)) => {
                for item in items {
                    self.value(inner, item, rule, runtime, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// Whether Go's `omitempty` drops `v`: an empty list or map (never a struct, even `{}`).
fn omitted_when_empty(schema: &Schema, v: &Value) -> bool {
    match (&schema.ty, v) {
        (SchemaType::Array(_), Value::Array(a)) => a.is_empty(),
        (SchemaType::Map(_), Value::Object(o)) => o.is_empty(),
        _ => false,
    }
}

/// One input of the scratch crate: a module name and the specs or CRDs it is generated from.
pub struct Part {
    pub module: &'static str,
    pub inputs: Vec<PathBuf>,
}

/// The generated `src/roundtrip.rs`: the kind table and one `#[test]` per module.
pub fn table_source(kinds: &BTreeMap<&str, BTreeMap<String, String>>) -> String {
    let mut out = String::from(
        "//! Generated by codegen/tests/emit_corpus.rs: every kind type of every corpus module.\n\n\
         use crate::harness::{KindType, codec};\n\n\
         pub(crate) static KINDS: &[KindType] = &[\n",
    );
    for (module, table) in kinds {
        for (slug, path) in table {
            out.push_str(&format!(
                "    KindType {{ module: {module:?}, slug: {slug:?}, codec: codec::<crate::{module}::{path}> }},\n"
            ));
        }
    }
    out.push_str("];\n");
    for module in kinds.keys() {
        out.push_str(&format!(
            "\n#[test]\nfn {module}_samples_round_trip() {{\n    crate::harness::samples(KINDS, {module:?});\n}}\n"
        ));
    }
    out.push_str(
        "\n#[test]\nfn decode_cases() {\n    crate::harness::cases(KINDS, \"cases\");\n}\n\
         \n#[test]\nfn project_manifests_round_trip() {\n    crate::harness::cases(KINDS, \"manifests\");\n}\n",
    );
    out
}

/// A decode case: `expect` is what the object must re-encode as, or `error` a substring of the
/// error it must be rejected with.
pub fn case(name: &str, module: &str, input: Value, expect: Result<Value, &str>) -> Value {
    match expect {
        Ok(expect) => json!({"name": name, "module": module, "input": input, "expect": expect}),
        Err(error) => json!({"name": name, "module": module, "input": input, "error": error}),
    }
}
