//! Emission: a [`Model`] (plus lifecycle data and [`Options`]) → Rust source.
//!
//! [`emit`](fn@emit) is the engine: no I/O, it returns one `TokenStream` per output file and a [`Report`]
//! of every naming decision a caller may want to print. [`generate`] is the thin step on top that
//! formats each file with prettyplease and prefixes the `@generated` header. Output is a pure
//! function of its inputs: every walk is over sorted maps or source-ordered vectors.
//!
//! Output layout: `mod.rs` declares one module per API group (`core`, `apps`, `networking`, ...,
//! plus `apimachinery` for meta types the runtime lacks); `<group>.rs` holds that group's versions
//! as inline modules (`pub mod v1 { ... }`), each with a `merge` child module of merge-metadata
//! statics. Types refer to each other by relative `super::` paths, so the tree can be mounted
//! anywhere in a crate. Every module holding kinds (directly or below) has a
//! `register(&mut kapi::Registry)`, so one call at the root registers the whole spec.
//!
//! [`generate_crate`] wraps one spec as a crate and [`generate_versions`] puts several versions
//! in one crate, sharing identical definitions (the `multi` module). Nothing here reads or writes
//! files: jobs ([`project`](crate::project)) and the output directory
//! ([`output`](crate::output)) belong to the front ends.

mod conversions;
mod data_file;
mod defaults;
mod docs;
mod facts;
mod field_selectors;
mod krate;
mod lifecycle;
mod multi;
mod names;
mod openapi;
mod plan;
mod printers;
mod strategies;
mod tokens;
mod validations;

use std::fmt;

use proc_macro2::TokenStream;

use crate::model::Model;

pub use conversions::{ChangeData, Conversions, FamilyData, StepData};
pub use defaults::{DefaultFill, Defaults, TypeDefault};
pub use facts::KindFacts;
pub use field_selectors::{FieldSelectorEntry, FieldSelectors, LabelFact};
pub use krate::{ALL_GROUPS, CrateOptions, RuntimeDependency, generate_crate, generate_versions};
pub use lifecycle::{LifecycleEntry, LifecycleSource, Lifecycles, Release, ResolvedLifecycle};
pub use printers::Printers;
pub use strategies::{StatusKeeps, Strategies, Strategy};
pub use validations::{CheckRule, TypeCheck, Validations};

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Turn upstream descriptions into `///` doc comments (default: off).
    pub docs: bool,
    /// Path of the kapi runtime crate in generated code (default: `kapi`).
    pub runtime_crate: String,
    /// Put every module inline in `mod.rs` instead of one file per group (for `include!` from
    /// `OUT_DIR`, where `mod x;` cannot find sibling files).
    pub single_file: bool,
    /// Emit kinds the `kube` crate takes unchanged (`Api<K>`, `watcher`, `Controller`): their
    /// `metadata` is k8s-openapi's `ObjectMeta`, they implement k8s-openapi's traits besides
    /// kapi's, and their list alias is k8s-openapi's `List`. Needs kapi's `kube` feature.
    pub kube: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            docs: false,
            runtime_crate: "kapi".to_owned(),
            single_file: false,
            kube: false,
        }
    }
}

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WarningKind {
    /// A group did not get its first label as module name.
    ModuleName,
    /// A type name was taken and got a suffix.
    TypeName,
    /// A field name collided after case conversion and got a suffix.
    FieldName,
    /// Something about a kind could not be expressed (shared definition, scale paths).
    Kind,
    /// An input document was skipped (not a CRD).
    Input,
}

/// One decision the caller may want to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The category.
    pub kind: WarningKind,
    /// A lowercase sentence naming the spec item and the outcome.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What emission decided, for callers to print.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// Naming collisions and other decisions, in the order they were made.
    pub warnings: Vec<Warning>,
    /// API group → module name.
    pub group_modules: Vec<(String, String)>,
    /// Emitted types: structs, enums and aliases (not `<Kind>List` aliases from the derive).
    pub types: usize,
    /// Emitted kinds (structs with the `Resource` derive).
    pub kinds: usize,
}

/// Why emission failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmitError {
    /// An option has an unusable value.
    #[error("invalid option: {0}")]
    Option(String),
    /// A generated file did not parse as Rust (a generator bug).
    #[error("generated {path} is not valid Rust: {message}")]
    Invalid {
        /// The output file.
        path: String,
        /// The parser's message.
        message: String,
    },
}

/// One output file as tokens.
#[derive(Debug, Clone)]
pub struct EmittedFile {
    /// Path relative to the output directory, `/`-separated.
    pub path: String,
    /// The file's items.
    pub tokens: TokenStream,
}

/// The output of [`emit`](fn@emit).
#[derive(Debug, Clone)]
pub struct Emitted {
    /// Files, `mod.rs` first, then one per group module in name order.
    pub files: Vec<EmittedFile>,
    /// Decisions and counts.
    pub report: Report,
}

/// One formatted output file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the output directory, `/`-separated.
    pub path: String,
    /// Formatted source with the `@generated` header.
    pub contents: String,
}

/// The output of [`generate`].
#[derive(Debug, Clone)]
pub struct Generated {
    /// Files, `mod.rs` first.
    pub files: Vec<GeneratedFile>,
    /// Decisions and counts.
    pub report: Report,
}

/// The first line of every generated file.
pub fn header() -> String {
    format!(
        "// @generated by kapi-codegen {}. Do not edit.\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// Emits the model as token streams, one per output file. Pure: no I/O, deterministic.
pub fn emit(model: &Model, facts: &KindFacts, options: &Options) -> Result<Emitted, EmitError> {
    let plan = plan::plan(model, facts, options);
    let files = tokens::render(model, &plan, options, &facts.conversions)?;
    let mut report = Report {
        warnings: plan.warnings.clone(),
        group_modules: plan
            .group_modules
            .iter()
            .map(|(g, m)| (g.clone(), m.clone()))
            .collect(),
        ..Report::default()
    };
    for e in &plan.entries {
        match &e.body {
            plan::Body::Struct(s) => {
                report.types += 1;
                report.kinds += usize::from(s.kind.is_some());
            }
            plan::Body::Enum(_) | plan::Body::Alias(_) => report.types += 1,
            _ => {}
        }
    }
    Ok(Emitted { files, report })
}

/// Emits and formats: each file parsed, pretty-printed and prefixed with [`header`].
pub fn generate(
    model: &Model,
    facts: &KindFacts,
    options: &Options,
) -> Result<Generated, EmitError> {
    let emitted = emit(model, facts, options)?;
    let mut files = Vec::with_capacity(emitted.files.len());
    for f in emitted.files {
        files.push(GeneratedFile {
            contents: format_file(&f.path, f.tokens)?,
            path: f.path,
        });
    }
    Ok(Generated {
        files,
        report: emitted.report,
    })
}

/// Formats one file's tokens with prettyplease, after the [`header`].
pub fn format_file(path: &str, tokens: TokenStream) -> Result<String, EmitError> {
    let file: syn::File = syn::parse2(tokens).map_err(|e| EmitError::Invalid {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    Ok(format!("{}\n{}", header(), prettyplease::unparse(&file)))
}
