//! The build-script front end: [`Builder`] loads inputs, emits one self-contained file into
//! `OUT_DIR` and tells Cargo which files to watch.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     kapi_codegen::Builder::new()
//!         .input("crds/widgets.yaml")
//!         .docs(true)
//!         .generate()?;
//!     Ok(())
//! }
//! ```
//!
//! and in `src/lib.rs`:
//!
//! ```text
//! include!(concat!(env!("OUT_DIR"), "/kapi_generated.rs"));
//! ```
//!
//! The output is always a single file (`Options::single_file`), because `include!` cannot follow
//! `mod x;` declarations to sibling files in `OUT_DIR`. It is written only when its contents
//! change, so an unchanged spec does not make Cargo recompile the including crate.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use proc_macro2::TokenStream;

use crate::emit::{EmitError, Options, Report, WarningKind, emit, format_file};
use crate::load::{FactFiles, LoadError, load_facts, load_inputs};
use crate::output::{OutputError, write_if_changed};

/// The file name [`Builder::generate`] writes unless [`Builder::file_name`] says otherwise.
pub const DEFAULT_FILE_NAME: &str = "kapi_generated.rs";

/// Why [`Builder::generate`] or [`Builder::generate_tokens`] failed.
///
/// `Debug` prints the same text as `Display` followed by the causes, because a build script's
/// `main` returning `Err` shows the error with `{:?}` and a struct dump would bury the file name
/// and JSON path.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No input was given.
    #[error(
        "no inputs: add a swagger.json, an OpenAPI v3 folder or a CRD file with Builder::input"
    )]
    NoInputs,
    /// Neither [`Builder::out_dir`] nor `$OUT_DIR` names the output directory.
    #[error("OUT_DIR is not set: run from a build script or call Builder::out_dir")]
    NoOutDir,
    /// The output file name is not a plain file name.
    #[error("invalid output file name {name:?}: expected a file name without directories")]
    FileName {
        /// The name given to [`Builder::file_name`].
        name: String,
    },
    /// An input or the lifecycle file could not be loaded; names the file and JSON path.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Emission failed.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// The output directory or file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The directory or file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl fmt::Debug for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")?;
        let mut cause = std::error::Error::source(self);
        // `Load` and `Emit` are transparent, so `source()` starts below the message just printed
        // and no text appears twice.
        while let Some(e) = cause {
            write!(f, ": {e}")?;
            cause = e.source();
        }
        Ok(())
    }
}

/// What [`Builder::generate`] did.
#[derive(Debug, Clone)]
pub struct Output {
    /// The generated file.
    pub path: PathBuf,
    /// Whether the file was written; `false` when it already had these contents.
    pub written: bool,
    /// The `cargo:rerun-if-changed=` lines that were printed, in order (inputs that were
    /// skipped are printed after them as `cargo::warning=` lines, and are in `report`).
    pub directives: Vec<String>,
    /// Naming decisions and counts from emission.
    pub report: Report,
}

/// Generates Rust bindings from a build script, in the style of `prost_build::Config`.
///
/// Setters take and return `&mut Self` so calls chain from [`Builder::new`]; the terminals are
/// [`Builder::generate`] (writes into `OUT_DIR`) and [`Builder::generate_tokens`] (for macros).
/// Relative paths are resolved against the current directory, which Cargo sets to the package
/// root when it runs a build script.
#[derive(Debug, Clone)]
pub struct Builder {
    inputs: Vec<PathBuf>,
    lifecycle: Option<PathBuf>,
    printers: Option<PathBuf>,
    defaults: Option<PathBuf>,
    strategies: Option<PathBuf>,
    validation: Option<PathBuf>,
    field_selectors: Option<PathBuf>,
    conversions: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    file_name: String,
    options: Options,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// A builder with no inputs, docs off, runtime crate `kapi`, output `$OUT_DIR/kapi_generated.rs`.
    pub fn new() -> Self {
        Self {
            inputs: Vec::new(),
            lifecycle: None,
            printers: None,
            defaults: None,
            strategies: None,
            validation: None,
            field_selectors: None,
            conversions: None,
            out_dir: None,
            file_name: DEFAULT_FILE_NAME.to_owned(),
            options: Options {
                single_file: true,
                ..Options::default()
            },
        }
    }

    /// Adds an input: a Swagger 2.0 `swagger.json`, a folder of OpenAPI v3 documents, or a file of
    /// CRD manifests (YAML or JSON). Repeatable; all inputs are merged into one model.
    pub fn input(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.inputs.push(path.as_ref().to_path_buf());
        self
    }

    /// Adds several inputs, as [`Builder::input`] does for one.
    pub fn inputs<I, P>(&mut self, paths: I) -> &mut Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        self.inputs
            .extend(paths.into_iter().map(|p| p.as_ref().to_path_buf()));
        self
    }

    /// Turns upstream descriptions into doc comments (default: off).
    pub fn docs(&mut self, on: bool) -> &mut Self {
        self.options.docs = on;
        self
    }

    /// Emits kinds the `kube` crate takes unchanged (default: off): `Api<K>`, `watcher`,
    /// `reflector` and `Controller` work with them. Their `metadata` is k8s-openapi's
    /// `ObjectMeta` and their list alias k8s-openapi's `List`; everything else keeps kapi's types.
    /// The crate that includes the output enables kapi's `kube` feature.
    pub fn kube(&mut self, on: bool) -> &mut Self {
        self.options.kube = on;
        self
    }

    /// The path generated code uses for the kapi runtime crate (default: `kapi`), e.g.
    /// `my_crate::kapi` when it is re-exported.
    pub fn runtime_crate(&mut self, path: impl Into<String>) -> &mut Self {
        self.options.runtime_crate = path.into();
        self
    }

    /// A lifecycle data file (the format of `specs/lifecycle/README.md`) whose entries become the
    /// kinds' deprecation and removal data. Without one, only what the inputs state is used.
    pub fn lifecycle(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.lifecycle = Some(path.as_ref().to_path_buf());
        self
    }

    /// A printer data file (the format of `specs/printers/README.md`) whose columns become the
    /// Table columns of the built-in kinds it names. Without one, only CRDs' columns are used.
    pub fn printers(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.printers = Some(path.as_ref().to_path_buf());
        self
    }

    /// A defaults data file (the format of `specs/defaults/README.md`) whose entries become the
    /// defaults of the types it names, wherever a kind holds them.
    pub fn defaults(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.defaults = Some(path.as_ref().to_path_buf());
        self
    }

    /// A strategies data file (the format of `specs/strategies/README.md`): what writes do to
    /// the generation and status of the built-in kinds it names.
    pub fn strategies(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.strategies = Some(path.as_ref().to_path_buf());
        self
    }

    /// A validation data file (the format of `specs/validation/README.md`): what writes to the
    /// built-in types it names must satisfy.
    pub fn validation(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.validation = Some(path.as_ref().to_path_buf());
        self
    }

    /// A field selectors data file (the format of `specs/field_selectors/README.md`): the field
    /// labels the built-in kinds' `fieldSelector` accepts and what each reads.
    pub fn field_selectors(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.field_selectors = Some(path.as_ref().to_path_buf());
        self
    }

    /// A conversions data file (the format of `specs/conversions/README.md`): the built-in
    /// resources served in several versions or groups and stored once, and how their versions
    /// convert.
    pub fn conversions(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.conversions = Some(path.as_ref().to_path_buf());
        self
    }

    /// The directory to write into (default: `$OUT_DIR`); created when missing.
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The output file's name within the output directory (default: `kapi_generated.rs`).
    pub fn file_name(&mut self, name: impl Into<String>) -> &mut Self {
        self.file_name = name.into();
        self
    }

    /// The emission options this builder passes on; `single_file` is always on.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Loads the inputs and lifecycle file, emits and formats the bindings, writes the file if its
    /// contents changed, and prints `cargo:rerun-if-changed` for every input file (for a folder:
    /// the folder and each file in it) and the lifecycle file.
    pub fn generate(&self) -> Result<Output, BuildError> {
        let mut stdout = io::stdout().lock();
        self.generate_to(&mut stdout)
    }

    /// [`Builder::generate`], printing the directives to `directives` instead of stdout.
    ///
    /// The directives are printed before loading, so Cargo watches the inputs even when they
    /// fail to load and the next build after a fix reruns the script.
    pub fn generate_to(&self, directives: &mut dyn Write) -> Result<Output, BuildError> {
        let path = self.output_path(std::env::var_os("OUT_DIR"))?;
        let lines = self.rerun_if_changed();
        for line in &lines {
            // A closed stdout only loses Cargo's change tracking, which makes it rerun the
            // script every build: not worth failing the build over.
            let _ = writeln!(directives, "{line}");
        }
        let (contents, report) = self.render()?;
        // Inputs left out would otherwise go unnoticed: Cargo shows a build script's output only
        // when it fails, but always shows its warnings.
        for warning in report
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Input)
        {
            let _ = writeln!(directives, "cargo::warning=kapi-codegen: {warning}");
        }
        let written = write_if_changed(&path, &contents)
            .map_err(|OutputError { path, source }| BuildError::Write { path, source })?;
        Ok(Output {
            path,
            written,
            directives: lines,
            report,
        })
    }

    /// The bindings as one token stream (the single-file module tree), for a procedural macro.
    /// Reads the inputs; writes and prints nothing.
    pub fn generate_tokens(&self) -> Result<TokenStream, BuildError> {
        Ok(self.emit_tokens()?.0)
    }

    /// The formatted file contents, with the `@generated` header, and the emission report.
    /// Reads the inputs; writes and prints nothing.
    pub fn render(&self) -> Result<(String, Report), BuildError> {
        let (tokens, report) = self.emit_tokens()?;
        Ok((format_file(&self.file_name, tokens)?, report))
    }

    /// The `cargo:rerun-if-changed=<path>` lines [`Builder::generate`] prints: each input file,
    /// each input folder followed by the files in it (sorted), then the lifecycle file.
    pub fn rerun_if_changed(&self) -> Vec<String> {
        let mut paths = Vec::new();
        for input in &self.inputs {
            paths.push(input.clone());
            if input.is_dir() {
                // An unreadable folder is reported by the loader; the folder's own line already
                // makes Cargo rerun when it appears or changes.
                let mut files: Vec<PathBuf> = std::fs::read_dir(input)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.is_file())
                    .collect();
                files.sort();
                paths.extend(files);
            }
        }
        paths.extend(self.lifecycle.iter().cloned());
        paths.extend(self.printers.iter().cloned());
        paths.extend(self.defaults.iter().cloned());
        paths.extend(self.strategies.iter().cloned());
        paths.extend(self.validation.iter().cloned());
        paths.extend(self.field_selectors.iter().cloned());
        paths.extend(self.conversions.iter().cloned());
        paths
            .iter()
            .map(|p| format!("cargo:rerun-if-changed={}", p.display()))
            .collect()
    }

    fn emit_tokens(&self) -> Result<(TokenStream, Report), BuildError> {
        if self.inputs.is_empty() {
            return Err(BuildError::NoInputs);
        }
        let model = load_inputs(&self.inputs)?;
        let facts = load_facts(FactFiles {
            lifecycle: self.lifecycle.as_deref(),
            printers: self.printers.as_deref(),
            defaults: self.defaults.as_deref(),
            strategies: self.strategies.as_deref(),
            validation: self.validation.as_deref(),
            field_selectors: self.field_selectors.as_deref(),
            conversions: self.conversions.as_deref(),
        })?;
        let emitted = emit(&model, &facts, &self.options)?;
        let mut files = emitted.files.into_iter();
        match (files.next(), files.next()) {
            (Some(file), None) => Ok((file.tokens, emitted.report)),
            (first, second) => Err(EmitError::Invalid {
                path: self.file_name.clone(),
                message: format!(
                    "single-file emission produced {} files",
                    usize::from(first.is_some()) + usize::from(second.is_some()) + files.len()
                ),
            }
            .into()),
        }
    }

    /// The output file: `out_dir` (or `$OUT_DIR`, passed in so tests need not set the variable)
    /// joined with a validated file name.
    fn output_path(&self, env_out_dir: Option<OsString>) -> Result<PathBuf, BuildError> {
        let dir = match (&self.out_dir, env_out_dir) {
            (Some(dir), _) => dir.clone(),
            (None, Some(dir)) if !dir.is_empty() => PathBuf::from(dir),
            (None, _) => return Err(BuildError::NoOutDir),
        };
        let name = Path::new(&self.file_name);
        let mut components = name.components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(_)), None) => Ok(dir.join(name)),
            _ => Err(BuildError::FileName {
                name: self.file_name.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_path_prefers_the_setter_then_out_dir_and_checks_the_name() {
        struct Case {
            out_dir: Option<&'static str>,
            env: Option<&'static str>,
            file_name: &'static str,
            expected: Result<&'static str, &'static str>,
        }
        let cases = [
            Case {
                out_dir: Some("/set"),
                env: Some("/env"),
                file_name: DEFAULT_FILE_NAME,
                expected: Ok("/set/kapi_generated.rs"),
            },
            Case {
                out_dir: None,
                env: Some("/env"),
                file_name: "api.rs",
                expected: Ok("/env/api.rs"),
            },
            Case {
                out_dir: None,
                env: None,
                file_name: DEFAULT_FILE_NAME,
                expected: Err(
                    "OUT_DIR is not set: run from a build script or call Builder::out_dir",
                ),
            },
            Case {
                out_dir: None,
                env: Some(""),
                file_name: DEFAULT_FILE_NAME,
                expected: Err(
                    "OUT_DIR is not set: run from a build script or call Builder::out_dir",
                ),
            },
            Case {
                out_dir: Some("/set"),
                env: None,
                file_name: "sub/api.rs",
                expected: Err(
                    "invalid output file name \"sub/api.rs\": expected a file name without directories",
                ),
            },
            Case {
                out_dir: Some("/set"),
                env: None,
                file_name: "../api.rs",
                expected: Err(
                    "invalid output file name \"../api.rs\": expected a file name without directories",
                ),
            },
            Case {
                out_dir: Some("/set"),
                env: None,
                file_name: "",
                expected: Err(
                    "invalid output file name \"\": expected a file name without directories",
                ),
            },
        ];
        for case in cases {
            let mut b = Builder::new();
            b.file_name(case.file_name);
            if let Some(dir) = case.out_dir {
                b.out_dir(dir);
            }
            let got = b
                .output_path(case.env.map(OsString::from))
                .map_err(|e| e.to_string());
            let expected = case
                .expected
                .map(PathBuf::from)
                .map_err(ToString::to_string);
            assert_eq!(got, expected, "{:?} {:?}", case.out_dir, case.file_name);
        }
    }

    #[test]
    fn setters_chain_and_keep_single_file_on() {
        let mut b = Builder::new();
        b.input("a.yaml")
            .inputs(["b.json", "c"])
            .docs(true)
            .runtime_crate("crate::kapi")
            .lifecycle("l.yaml");
        assert_eq!(
            b.inputs,
            [
                PathBuf::from("a.yaml"),
                PathBuf::from("b.json"),
                PathBuf::from("c")
            ]
        );
        assert_eq!(
            b.options(),
            &Options {
                docs: true,
                runtime_crate: "crate::kapi".to_owned(),
                single_file: true,
                kube: false,
            }
        );
        assert_eq!(
            b.rerun_if_changed(),
            [
                "cargo:rerun-if-changed=a.yaml",
                "cargo:rerun-if-changed=b.json",
                "cargo:rerun-if-changed=c",
                "cargo:rerun-if-changed=l.yaml",
            ]
        );
    }

    #[test]
    fn no_inputs_is_an_error_not_an_empty_file() {
        let err = Builder::new().generate_tokens().expect_err("no inputs");
        assert!(matches!(err, BuildError::NoInputs), "{err:?}");
    }

    #[test]
    fn debug_shows_the_message_and_its_causes() {
        let err = BuildError::Write {
            path: PathBuf::from("/out/x.rs"),
            source: io::Error::new(io::ErrorKind::PermissionDenied, "denied"),
        };
        assert_eq!(format!("{err:?}"), "cannot write /out/x.rs: denied");
    }
}
