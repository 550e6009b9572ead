//! Loaders: the only part of the crate that reads files. Each input format becomes [`Model`].
//!
//! - a Swagger 2.0 `swagger.json` (what `/openapi/v2` serves),
//! - a folder of OpenAPI 3.0 documents (what `/openapi/v3/<group-version>` serves), merged by name,
//! - CustomResourceDefinition manifests, YAML (several documents) or JSON.
//!
//! Inputs are detected by shape ([`load_inputs`]) and merged: a name defined twice must be defined
//! identically, else [`LoadError::Conflict`] names both files. `$ref`s are resolved across all
//! inputs at the end. The `*_str` functions take text instead of paths for callers that already
//! hold the bytes (build scripts, tests, fuzzing).

mod crd;
mod document;
mod error;
mod json;
mod openapi3;
mod paths;
mod schema;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

pub use error::{LoadError, Source};

use document::{Parts, load_document};
use schema::Dialect;

use crate::emit::{
    Conversions, Defaults, FieldSelectors, KindFacts, Lifecycles, Printers, Strategies, Validations,
};
use crate::model::{Gvk, Kind, Model};

/// Loads and merges several inputs; each is a swagger.json, an OpenAPI v3 folder or a CRD file.
pub fn load_inputs<P: AsRef<Path>>(inputs: &[P]) -> Result<Model, LoadError> {
    let mut merger = Merger::default();
    for input in inputs {
        let path = input.as_ref();
        if path.is_dir() {
            for (source, parts) in openapi3::load_folder(path)? {
                merger.add(&source, parts)?;
            }
            continue;
        }
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        for (source, parts) in load_file_text(path, &text)? {
            merger.add(&source, parts)?;
        }
    }
    merger.finish()
}

/// Reads and parses a lifecycle data file (the format of `specs/lifecycle/README.md`).
pub fn load_lifecycle(path: &Path) -> Result<Lifecycles, LoadError> {
    Lifecycles::from_yaml_str(path, &read_data(path)?)
}

/// Reads and parses a printer data file (the format of `specs/printers/README.md`).
pub fn load_printers(path: &Path) -> Result<Printers, LoadError> {
    Printers::from_yaml_str(path, &read_data(path)?)
}

/// Reads and parses a defaults data file (the format of `specs/defaults/README.md`).
pub fn load_defaults(path: &Path) -> Result<Defaults, LoadError> {
    Defaults::from_yaml_str(path, &read_data(path)?)
}

/// Reads and parses a strategies data file (the format of `specs/strategies/README.md`).
pub fn load_strategies(path: &Path) -> Result<Strategies, LoadError> {
    Strategies::from_yaml_str(path, &read_data(path)?)
}

/// Reads and parses a validation data file (the format of `specs/validation/README.md`).
pub fn load_validations(path: &Path) -> Result<Validations, LoadError> {
    Validations::from_yaml_str(path, &read_data(path)?)
}

/// Reads and parses a field selectors data file (the format of
/// `specs/field_selectors/README.md`).
pub fn load_field_selectors(path: &Path) -> Result<FieldSelectors, LoadError> {
    FieldSelectors::from_yaml_str(path, &read_data(path)?)
}

/// Reads and parses a conversions data file (the format of `specs/conversions/README.md`).
pub fn load_conversions(path: &Path) -> Result<Conversions, LoadError> {
    Conversions::from_yaml_str(path, &read_data(path)?)
}

/// The data files about kinds a generation reads; each is optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct FactFiles<'a> {
    /// Lifecycle data (`specs/lifecycle` format).
    pub lifecycle: Option<&'a Path>,
    /// Printer columns (`specs/printers` format).
    pub printers: Option<&'a Path>,
    /// Defaults (`specs/defaults` format).
    pub defaults: Option<&'a Path>,
    /// Write rules (`specs/strategies` format).
    pub strategies: Option<&'a Path>,
    /// Checks (`specs/validation` format).
    pub validation: Option<&'a Path>,
    /// Field labels (`specs/field_selectors` format).
    pub field_selectors: Option<&'a Path>,
    /// Families of versions stored once (`specs/conversions` format).
    pub conversions: Option<&'a Path>,
}

/// Reads the data files that are given; what is not given stays empty.
pub fn load_facts(files: FactFiles<'_>) -> Result<KindFacts, LoadError> {
    Ok(KindFacts {
        lifecycles: files
            .lifecycle
            .map(load_lifecycle)
            .transpose()?
            .unwrap_or_default(),
        printers: files
            .printers
            .map(load_printers)
            .transpose()?
            .unwrap_or_default(),
        defaults: files
            .defaults
            .map(load_defaults)
            .transpose()?
            .unwrap_or_default(),
        strategies: files
            .strategies
            .map(load_strategies)
            .transpose()?
            .unwrap_or_default(),
        validations: files
            .validation
            .map(load_validations)
            .transpose()?
            .unwrap_or_default(),
        field_selectors: files
            .field_selectors
            .map(load_field_selectors)
            .transpose()?
            .unwrap_or_default(),
        conversions: files
            .conversions
            .map(load_conversions)
            .transpose()?
            .unwrap_or_default(),
    })
}

fn read_data(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads a Swagger 2.0 document from text; `name` is used in error messages.
pub fn load_swagger_str(name: &str, text: &str) -> Result<Model, LoadError> {
    let source = Source::file(Path::new(name));
    let value = parse_json(&source, text)?;
    let parts = load_document(&cx(&source), &value, Dialect::Swagger2)?;
    single(&source, parts)
}

/// Loads OpenAPI 3.0 documents (one per group-version) from text, as `(name, text)` pairs.
pub fn load_openapi3_str(documents: &[(&str, &str)]) -> Result<Model, LoadError> {
    let mut merger = Merger::default();
    for (name, text) in documents {
        let source = Source::file(Path::new(name));
        let value = parse_json(&source, text)?;
        merger.add(
            &source,
            load_document(&cx(&source), &value, Dialect::OpenApi3)?,
        )?;
    }
    merger.finish()
}

/// Loads CRD manifests from YAML (or JSON) text; `name` is used in error messages.
pub fn load_crds_str(name: &str, text: &str) -> Result<Model, LoadError> {
    let mut merger = Merger::default();
    for (source, parts) in crd_documents(Path::new(name), text)? {
        merger.add(&source, parts)?;
    }
    merger.finish()
}

fn cx(source: &Source) -> error::Cx<'_> {
    error::Cx {
        source,
        what: "spec",
    }
}

fn parse_json(source: &Source, text: &str) -> Result<Value, LoadError> {
    serde_json::from_str(text).map_err(|e| LoadError::Syntax {
        format: "JSON",
        source_file: source.clone(),
        message: e.to_string(),
    })
}

fn single(source: &Source, parts: Parts) -> Result<Model, LoadError> {
    let mut merger = Merger::default();
    merger.add(source, parts)?;
    merger.finish()
}

/// Recognises one file by extension and content.
fn load_file_text(path: &Path, text: &str) -> Result<Vec<(Source, Parts)>, LoadError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    if ext.eq_ignore_ascii_case("yaml") || ext.eq_ignore_ascii_case("yml") {
        return crd_documents(path, text);
    }
    let source = Source::file(path);
    let value = parse_json(&source, text)?;
    let has = |key: &str| value.get(key).is_some();
    let parts = if has("swagger") {
        load_document(&cx(&source), &value, Dialect::Swagger2)?
    } else if has("openapi") {
        load_document(&cx(&source), &value, Dialect::OpenApi3)?
    } else if has("kind") {
        crd::load_crd_document(&source, &value)?
    } else {
        return Err(LoadError::Unrecognized {
            path: path.to_path_buf(),
        });
    };
    Ok(vec![(source, parts)])
}

fn crd_documents(path: &Path, text: &str) -> Result<Vec<(Source, Parts)>, LoadError> {
    let docs = crd::yaml_documents(path, text)?;
    let numbered = docs.iter().filter(|d| !d.is_null()).count() > 1;
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        // Empty documents (a leading or trailing `---`) are allowed by kubectl and carry nothing.
        if doc.is_null() {
            continue;
        }
        let source = Source {
            path: path.to_path_buf(),
            document: numbered.then_some(i + 1),
        };
        let parts = crd::load_crd_document(&source, doc)?;
        out.push((source, parts));
    }
    Ok(out)
}

/// Folds inputs into one model, remembering where each name came from for messages.
#[derive(Default)]
struct Merger {
    model: Model,
    type_origin: BTreeMap<String, (Source, String)>,
    kind_origin: BTreeMap<Gvk, Source>,
}

impl Merger {
    fn add(&mut self, source: &Source, parts: Parts) -> Result<(), LoadError> {
        for (name, schema, pointer) in parts.types {
            match self.model.types.get(&name) {
                Some(existing) if *existing != schema => {
                    return Err(self.conflict(
                        name.clone(),
                        self.type_origin.get(&name).map(|o| &o.0),
                        source,
                    ));
                }
                Some(_) => {}
                None => {
                    self.type_origin
                        .insert(name.clone(), (source.clone(), pointer));
                    self.model.types.insert(name, schema);
                }
            }
        }
        for kind in parts.kinds {
            self.add_kind(source, kind)?;
        }
        self.model.skipped.extend(parts.skipped);
        Ok(())
    }

    /// The same kind appears in every OpenAPI v3 document that references it, but only the
    /// document of its own group-version has its paths; the served copy wins.
    fn add_kind(&mut self, source: &Source, kind: Kind) -> Result<(), LoadError> {
        let Some(existing) = self.model.kinds.get_mut(&kind.gvk) else {
            self.kind_origin.insert(kind.gvk.clone(), source.clone());
            self.model.kinds.insert(kind.gvk.clone(), kind);
            return Ok(());
        };
        let same_type = existing.definition == kind.definition;
        match (&existing.resource, &kind.resource) {
            (a, b) if same_type && a == b => Ok(()),
            (_, None) if same_type => Ok(()),
            (None, Some(_)) if same_type => {
                self.kind_origin.insert(kind.gvk.clone(), source.clone());
                *existing = kind;
                Ok(())
            }
            _ => {
                let name = kind.gvk.to_string();
                Err(self.conflict(name, self.kind_origin.get(&kind.gvk), source))
            }
        }
    }

    fn conflict(&self, name: String, first: Option<&Source>, second: &Source) -> LoadError {
        LoadError::Conflict {
            name,
            first: first.cloned().unwrap_or_else(|| second.clone()),
            second: second.clone(),
        }
    }

    fn finish(self) -> Result<Model, LoadError> {
        if let Some(d) = self.model.dangling_refs().into_iter().next() {
            let (source, base) = self
                .type_origin
                .get(&d.definition)
                .cloned()
                .unwrap_or_else(|| (Source::file(Path::new("")), String::new()));
            return Err(LoadError::DanglingRef {
                source_file: source,
                pointer: format!("{base}{}", d.pointer),
                target: d.target,
            });
        }
        Ok(self.model)
    }
}

#[cfg(test)]
mod tests;
