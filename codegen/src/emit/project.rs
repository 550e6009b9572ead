//! Generation jobs as the CLI and tests run them: inputs, options and output directory, given
//! on the command line or in a manifest file next to the generated crate; and the file work
//! around them (write only what changed, find what is stale).
//!
//! A manifest (YAML; paths relative to the manifest's directory, which is also the output
//! directory) makes committed bindings reproducible from the repository alone:
//!
//! ```yaml
//! crate: kapi-k8s          # package name; the output is a whole crate
//! workspace: true          # inherit version, edition, dependencies and lints
//! lifecycle: ../../specs/lifecycle/kubernetes.yaml
//! default-versions: [v1_36]
//! versions:                # or `inputs: [...]` for a single-spec crate
//!   - name: v1_34
//!     inputs: [../../../shared/specs/kubernetes/v1.34/swagger.json]
//! doc: |
//!   Text appended to the crate's `//!` doc.
//! ```
//!
//! A file belongs to the generator when it starts with the `@generated` header; only such files
//! are ever overwritten or removed.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::krate::{CrateOptions, generate_crate, generate_versions};
use super::lifecycle::{Lifecycles, load_lifecycle};
use super::{EmitError, Generated, Options, generate};
use crate::load::{LoadError, load_inputs};

/// The conventional manifest file name in a generated crate's directory.
pub const MANIFEST: &str = "kapi-codegen.yaml";

/// Why a job failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectError {
    /// An input or the lifecycle file did not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Emission failed.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// The manifest or the arguments are unusable.
    #[error("{path}: {message}")]
    Manifest {
        /// The manifest (or `<command line>`).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing an output file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What to generate from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inputs {
    /// One spec (several files merged): a module tree, or a crate with [`Job::krate`].
    Single(Vec<PathBuf>),
    /// One spec per version (`(name, files)`): always a crate.
    Versions(Vec<(String, Vec<PathBuf>)>),
}

/// One generation: inputs, options and where the output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The inputs.
    pub inputs: Inputs,
    /// The lifecycle data file, if any.
    pub lifecycle: Option<PathBuf>,
    /// Emission options.
    pub options: Options,
    /// Wrap the output as a crate (`Cargo.toml`, `src/lib.rs`); `None` writes a module tree
    /// (`mod.rs` and one file per group) to mount with `mod`.
    pub krate: Option<CrateOptions>,
    /// The output directory: the crate's directory, or the module tree's.
    pub out: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Manifest {
    #[serde(rename = "crate")]
    crate_name: String,
    #[serde(default)]
    doc: String,
    #[serde(default)]
    workspace: bool,
    #[serde(default)]
    docs: bool,
    #[serde(default)]
    lifecycle: Option<PathBuf>,
    #[serde(default)]
    inputs: Vec<PathBuf>,
    #[serde(default)]
    versions: Vec<ManifestVersion>,
    #[serde(default)]
    default_versions: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestVersion {
    name: String,
    inputs: Vec<PathBuf>,
}

impl Job {
    /// Reads a manifest; its directory is the output directory and the base of its paths.
    pub fn from_manifest(path: &Path) -> Result<Self, ProjectError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProjectError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_manifest_str(path, &text)
    }

    /// Parses manifest text; `path` locates the relative paths and names the manifest in errors.
    pub fn from_manifest_str(path: &Path, text: &str) -> Result<Self, ProjectError> {
        let invalid = |message: String| ProjectError::Manifest {
            path: path.to_path_buf(),
            message,
        };
        let m: Manifest = serde_yaml_ng::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let rel = |p: &PathBuf| dir.join(p);
        let inputs = match (m.inputs.is_empty(), m.versions.is_empty()) {
            (false, true) => Inputs::Single(m.inputs.iter().map(rel).collect()),
            (true, false) => Inputs::Versions(
                m.versions
                    .iter()
                    .map(|v| (v.name.clone(), v.inputs.iter().map(rel).collect()))
                    .collect(),
            ),
            _ => {
                return Err(invalid(
                    "give exactly one of `inputs` and `versions`".into(),
                ));
            }
        };
        Ok(Self {
            inputs,
            lifecycle: m.lifecycle.as_ref().map(rel),
            options: Options {
                docs: m.docs,
                ..Options::default()
            },
            krate: Some(CrateOptions {
                name: m.crate_name,
                doc: m.doc,
                workspace: m.workspace,
                default_versions: m.default_versions,
            }),
            out: dir,
        })
    }

    /// Loads the inputs and generates; paths in the result are relative to [`Job::out`].
    pub fn generate(&self) -> Result<Generated, ProjectError> {
        let lifecycle = match &self.lifecycle {
            Some(path) => load_lifecycle(path)?,
            None => Lifecycles::default(),
        };
        match (&self.inputs, &self.krate) {
            (Inputs::Single(inputs), None) => {
                Ok(generate(&load_inputs(inputs)?, &lifecycle, &self.options)?)
            }
            (Inputs::Single(inputs), Some(krate)) => Ok(generate_crate(
                &load_inputs(inputs)?,
                &lifecycle,
                &self.options,
                krate,
            )?),
            (Inputs::Versions(versions), krate) => {
                let krate = krate.clone().ok_or_else(|| ProjectError::Manifest {
                    path: PathBuf::from("<command line>"),
                    message: "several versions make a crate: give a crate name".into(),
                })?;
                let mut models = Vec::with_capacity(versions.len());
                for (name, inputs) in versions {
                    models.push((name.clone(), load_inputs(inputs)?));
                }
                let refs: Vec<(String, &crate::model::Model)> =
                    models.iter().map(|(n, m)| (n.clone(), m)).collect();
                Ok(generate_versions(&refs, &lifecycle, &self.options, &krate)?)
            }
        }
    }
}

/// How the output directory differs from a fresh generation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Diff {
    /// Generated files whose committed contents differ.
    pub changed: Vec<String>,
    /// Generated files not on disk.
    pub missing: Vec<String>,
    /// Files on disk with the `@generated` header that generation no longer produces.
    pub stale: Vec<String>,
}

impl Diff {
    /// No difference at all.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.missing.is_empty() && self.stale.is_empty()
    }

    /// One line per differing file: `changed: src/lib.rs`.
    pub fn lines(&self) -> Vec<String> {
        let tagged = |tag: &str, files: &[String]| -> Vec<String> {
            files.iter().map(|f| format!("{tag}: {f}")).collect()
        };
        let mut out = tagged("changed", &self.changed);
        out.extend(tagged("missing", &self.missing));
        out.extend(tagged("stale", &self.stale));
        out
    }
}

/// Whether a file's text marks it as generated by kapi-codegen.
pub fn is_generated(text: &str) -> bool {
    let first = text.lines().next().unwrap_or_default();
    first.starts_with("// @generated by kapi-codegen")
        || first.starts_with("# @generated by kapi-codegen")
}

/// Compares `generated` with the files under `out`.
pub fn diff(out: &Path, generated: &Generated) -> Result<Diff, ProjectError> {
    let mut d = Diff::default();
    for f in &generated.files {
        match std::fs::read_to_string(out.join(&f.path)) {
            Ok(text) if text == f.contents => {}
            Ok(_) => d.changed.push(f.path.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => d.missing.push(f.path.clone()),
            Err(source) => {
                return Err(ProjectError::Io {
                    path: out.join(&f.path),
                    source,
                });
            }
        }
    }
    let wanted: std::collections::BTreeSet<&str> =
        generated.files.iter().map(|f| f.path.as_str()).collect();
    for path in owned_files(out)? {
        if !wanted.contains(path.as_str()) {
            d.stale.push(path);
        }
    }
    Ok(d)
}

/// Writes `generated` under `out`: only files whose contents change are written, and owned
/// files generation no longer produces are removed. Returns what differed before writing.
pub fn write(out: &Path, generated: &Generated) -> Result<Diff, ProjectError> {
    let d = diff(out, generated)?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ProjectError::Io { path, source }
    };
    for f in &generated.files {
        if !d.changed.contains(&f.path) && !d.missing.contains(&f.path) {
            continue;
        }
        let path = out.join(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&path, &f.contents).map_err(io(&path))?;
    }
    for stale in &d.stale {
        let path = out.join(stale);
        std::fs::remove_file(&path).map_err(io(&path))?;
        // Directories emptied by the removal go too; a non-empty one stays (the error is the
        // signal, not a failure).
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == out || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    Ok(d)
}

/// `/`-separated paths below `out` of files carrying the `@generated` header (`.rs` files,
/// `Cargo.toml` and `rustfmt.toml`), skipping `target` and hidden directories.
fn owned_files(out: &Path) -> Result<Vec<String>, ProjectError> {
    let mut found = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = out.join(&rel);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(ProjectError::Io { path: dir, source }),
        };
        for entry in entries {
            let entry = entry.map_err(|source| ProjectError::Io {
                path: dir.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = rel.join(&name);
            let kind = entry.file_type().map_err(|source| ProjectError::Io {
                path: dir.join(&name),
                source,
            })?;
            if kind.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(path);
                }
                continue;
            }
            if !(name.ends_with(".rs") || name == "Cargo.toml" || name == "rustfmt.toml") {
                continue;
            }
            let text = std::fs::read_to_string(out.join(&path)).unwrap_or_default();
            if is_generated(&text) {
                let parts: Vec<String> = path
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                found.push(parts.join("/"));
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::GeneratedFile;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kapi-project-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn generated(files: &[(&str, &str)]) -> Generated {
        Generated {
            files: files
                .iter()
                .map(|(p, c)| GeneratedFile {
                    path: (*p).to_owned(),
                    contents: (*c).to_owned(),
                })
                .collect(),
            report: Default::default(),
        }
    }

    #[test]
    fn write_then_diff_reports_changes_missing_and_stale() {
        let dir = tmp("diff");
        let head = "// @generated by kapi-codegen 0.1.0. Do not edit.\n";
        let a = format!("{head}a");
        let b = format!("{head}b");
        let first = generated(&[("src/lib.rs", &a), ("src/old/x.rs", &b)]);
        let d = write(&dir, &first).unwrap();
        assert_eq!(d.missing, ["src/lib.rs", "src/old/x.rs"]);
        assert!(diff(&dir, &first).unwrap().is_empty());
        // A hand-written file is never owned.
        std::fs::write(dir.join("src/hand.rs"), "// mine\n").unwrap();
        let a2 = format!("{head}a2");
        let second = generated(&[("src/lib.rs", &a2)]);
        let d = diff(&dir, &second).unwrap();
        assert_eq!(d.lines(), ["changed: src/lib.rs", "stale: src/old/x.rs"]);
        write(&dir, &second).unwrap();
        assert!(diff(&dir, &second).unwrap().is_empty());
        assert!(!dir.join("src/old").exists());
        assert!(dir.join("src/hand.rs").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn manifest_paths_are_relative_to_the_manifest() {
        let job = Job::from_manifest_str(
            Path::new("gen/k8s/kapi-codegen.yaml"),
            "crate: k\nversions:\n  - name: v1_1\n    inputs: [../a.json]\n",
        )
        .unwrap();
        assert_eq!(job.out, PathBuf::from("gen/k8s"));
        assert_eq!(
            job.inputs,
            Inputs::Versions(vec![(
                "v1_1".into(),
                vec![PathBuf::from("gen/k8s/../a.json")]
            )])
        );
        let bad = [
            "crate: k\n",
            "crate: k\ninputs: [a]\nversions: [{name: v, inputs: [b]}]\n",
            "crate: k\ninputs: [a]\ncolour: red\n",
            "[",
        ];
        for text in bad {
            let err = Job::from_manifest_str(Path::new("m.yaml"), text).unwrap_err();
            assert!(err.to_string().starts_with("m.yaml: "), "{err}");
        }
    }
}
