//! Generation jobs as the CLI and tests run them: inputs, options and output directory, given
//! on the command line or in a manifest file next to the generated crate.
//!
//! A front end, not part of the engine: [`Job::from_manifest`] reads the manifest and
//! [`Job::generate`] loads the inputs through [`load`](crate::load), then calls the engine
//! ([`emit`](mod@crate::emit)), which returns the files as values. Comparing them with the output
//! directory and writing them is [`output`](crate::output)'s job.
//!
//! A manifest (YAML; paths relative to the manifest's directory, which is also the output
//! directory) makes committed bindings reproducible from the repository alone:
//!
//! ```yaml
//! crate: kapi-k8s          # package name; the output is a whole crate
//! workspace: true          # inherit version, edition, dependencies and lints
//! lifecycle: ../../specs/lifecycle/kubernetes.yaml
//! printers: ../../specs/printers/kubernetes.yaml
//! defaults: ../../specs/defaults/kubernetes.yaml
//! strategies: ../../specs/strategies/kubernetes.yaml
//! validation: ../../specs/validation/kubernetes.yaml
//! field-selectors: ../../specs/field_selectors/kubernetes.yaml
//! conversions: ../../specs/conversions/kubernetes.yaml
//! default-versions: [v1_36]
//! versions:                # or `inputs: [...]` for a single-spec crate
//!   - name: v1_34
//!     inputs: [../../../shared/specs/kubernetes/v1.34/swagger.json]
//! doc: |
//!   Text appended to the crate's `//!` doc.
//! ```
//!
//! Outside a workspace, `kapi:` says where the crate finds kapi (`{version: "0.1.0"}`, the
//! default; `{path: ../kapi/runtime}`; `{git: <url>, rev: <commit, tag or branch>}`), and
//! `kube: true` makes kinds for the kube crate; `description: ...` and `publish: true` make a
//! crate for crates.io.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::emit::{
    CrateOptions, EmitError, Generated, Options, RuntimeDependency, generate, generate_crate,
    generate_versions,
};
use crate::load::{FactFiles, LoadError, load_facts, load_inputs};

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
    /// The printer data file, if any.
    pub printers: Option<PathBuf>,
    /// The defaults data file, if any.
    pub defaults: Option<PathBuf>,
    /// The strategies data file, if any.
    pub strategies: Option<PathBuf>,
    /// The validation data file, if any.
    pub validation: Option<PathBuf>,
    /// The field selectors data file, if any.
    pub field_selectors: Option<PathBuf>,
    /// The conversions data file, if any.
    pub conversions: Option<PathBuf>,
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
    /// Kinds for the kube crate (`Options::kube`).
    #[serde(default)]
    kube: bool,
    #[serde(default)]
    lifecycle: Option<PathBuf>,
    #[serde(default)]
    printers: Option<PathBuf>,
    #[serde(default)]
    defaults: Option<PathBuf>,
    #[serde(default)]
    strategies: Option<PathBuf>,
    #[serde(default)]
    validation: Option<PathBuf>,
    field_selectors: Option<PathBuf>,
    #[serde(default)]
    conversions: Option<PathBuf>,
    #[serde(default)]
    inputs: Vec<PathBuf>,
    #[serde(default)]
    versions: Vec<ManifestVersion>,
    #[serde(default)]
    default_versions: Vec<String>,
    /// Where the crate finds kapi: `{version: ..}`, `{path: ..}` or `{git: .., rev: ..}`.
    #[serde(default)]
    kapi: Option<ManifestRuntime>,
    /// The package's description.
    #[serde(default)]
    description: Option<String>,
    /// Whether the crate may be published.
    #[serde(default)]
    publish: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestRuntime {
    version: Option<String>,
    path: Option<String>,
    git: Option<String>,
    rev: Option<String>,
}

impl ManifestRuntime {
    fn dependency(self) -> Result<RuntimeDependency, String> {
        match (self.version, self.path, self.git, self.rev) {
            (Some(version), None, None, None) => Ok(RuntimeDependency::Version(version)),
            (None, Some(path), None, None) => Ok(RuntimeDependency::Path(path)),
            (None, None, Some(url), rev) => Ok(RuntimeDependency::Git { url, rev }),
            _ => Err(
                "`kapi` takes one of `version`, `path` or `git` (with an optional `rev`)"
                    .to_owned(),
            ),
        }
    }
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
        let runtime = match m.kapi {
            Some(_) if m.workspace => {
                return Err(invalid(
                    "`workspace: true` inherits kapi from the workspace: drop `kapi`".into(),
                ));
            }
            Some(kapi) => kapi.dependency().map_err(invalid)?,
            None => RuntimeDependency::default(),
        };
        Ok(Self {
            inputs,
            lifecycle: m.lifecycle.as_ref().map(rel),
            printers: m.printers.as_ref().map(rel),
            defaults: m.defaults.as_ref().map(rel),
            strategies: m.strategies.as_ref().map(rel),
            validation: m.validation.as_ref().map(rel),
            field_selectors: m.field_selectors.as_ref().map(rel),
            conversions: m.conversions.as_ref().map(rel),
            options: Options {
                docs: m.docs,
                kube: m.kube,
                ..Options::default()
            },
            krate: Some(CrateOptions {
                name: m.crate_name,
                doc: m.doc,
                workspace: m.workspace,
                default_versions: m.default_versions,
                runtime,
                description: m.description,
                publish: m.publish,
            }),
            out: dir,
        })
    }

    /// Loads the inputs and generates; paths in the result are relative to [`Job::out`].
    pub fn generate(&self) -> Result<Generated, ProjectError> {
        let facts = load_facts(FactFiles {
            lifecycle: self.lifecycle.as_deref(),
            printers: self.printers.as_deref(),
            defaults: self.defaults.as_deref(),
            strategies: self.strategies.as_deref(),
            validation: self.validation.as_deref(),
            field_selectors: self.field_selectors.as_deref(),
            conversions: self.conversions.as_deref(),
        })?;
        match (&self.inputs, &self.krate) {
            (Inputs::Single(inputs), None) => {
                Ok(generate(&load_inputs(inputs)?, &facts, &self.options)?)
            }
            (Inputs::Single(inputs), Some(krate)) => Ok(generate_crate(
                &load_inputs(inputs)?,
                &facts,
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
                Ok(generate_versions(&refs, &facts, &self.options, &krate)?)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn manifest_says_where_the_crate_finds_kapi_and_whether_for_kube() {
        let job = Job::from_manifest_str(
            Path::new("m.yaml"),
            "crate: k\ninputs: [a]\nkube: true\nkapi: {git: https://example.invalid/k, rev: v1}\n",
        )
        .unwrap();
        assert!(job.options.kube);
        assert_eq!(
            job.krate.unwrap().runtime,
            RuntimeDependency::Git {
                url: "https://example.invalid/k".into(),
                rev: Some("v1".into())
            }
        );
        let bad = [
            "crate: k\ninputs: [a]\nkapi: {path: a, version: '1'}\n",
            "crate: k\ninputs: [a]\nkapi: {rev: v1}\n",
            "crate: k\ninputs: [a]\nworkspace: true\nkapi: {path: a}\n",
        ];
        for text in bad {
            let err = Job::from_manifest_str(Path::new("m.yaml"), text).unwrap_err();
            assert!(err.to_string().contains("kapi"), "{err}");
        }
    }
}
