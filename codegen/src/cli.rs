//! The `generate` and `check` commands: arguments to a [`Job`], then write or compare.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use kapi_codegen::emit::{CrateOptions, Generated, Options, RuntimeDependency};
use kapi_codegen::output;
use kapi_codegen::project::{Inputs, Job};

/// What to generate from and where to; shared by `generate` and `check`.
#[derive(Debug, Args)]
pub(crate) struct GenArgs {
    /// Inputs of a single spec: a swagger.json (OpenAPI v2), a folder of OpenAPI v3 documents,
    /// or CRD manifests (YAML or JSON); several inputs are merged.
    #[arg(value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// One version of a multi-version crate as NAME=INPUT (e.g. v1_34=specs/v1.34/swagger.json);
    /// repeat for each version (and a name again to merge more inputs into it). NAME becomes the
    /// module and the cargo feature.
    #[arg(long = "version", value_name = "NAME=INPUT")]
    versions: Vec<String>,
    /// Read inputs and options from a manifest (YAML, paths relative to it); the output goes
    /// next to it. Excludes every other option.
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Output directory: the crate's directory with --crate-name, else the module tree's.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Turn upstream descriptions into doc comments.
    #[arg(long)]
    docs: bool,
    /// Emit kinds the kube crate takes unchanged (Api, watcher, Controller): k8s-openapi's
    /// ObjectMeta and traits; the crate enables kapi's `kube` feature.
    #[arg(long)]
    kube: bool,
    /// Write a whole crate of this name (Cargo.toml, src/lib.rs, src/...) instead of a module
    /// tree (mod.rs and one file per group).
    #[arg(long, value_name = "NAME")]
    crate_name: Option<String>,
    /// With --crate-name: inherit version, edition, dependencies and lints from the enclosing
    /// Cargo workspace.
    #[arg(long)]
    workspace: bool,
    /// Lifecycle data (introduced/deprecated/removed per kind) baked into each ResourceInfo.
    #[arg(long, value_name = "FILE")]
    lifecycle: Option<PathBuf>,
    /// Printer columns of built-in kinds (specs/printers format) baked into each ResourceInfo.
    #[arg(long, value_name = "FILE")]
    printers: Option<PathBuf>,
    /// Defaults of built-in types (specs/defaults format), applied wherever a kind holds them.
    #[arg(long, value_name = "FILE")]
    defaults: Option<PathBuf>,
    /// What writes do to built-in kinds' generation and status (specs/strategies format).
    #[arg(long, value_name = "FILE")]
    strategies: Option<PathBuf>,
    /// What writes to built-in types must satisfy (specs/validation format).
    #[arg(long, value_name = "FILE")]
    validation: Option<PathBuf>,
    /// The field labels built-in kinds' fieldSelector accepts (specs/field_selectors format).
    #[arg(long, value_name = "FILE")]
    field_selectors: Option<PathBuf>,
    /// Built-in resources stored once across versions and groups (specs/conversions format).
    #[arg(long, value_name = "FILE")]
    conversions: Option<PathBuf>,
    /// A version feature enabled by default in a multi-version crate; repeatable.
    #[arg(long, value_name = "NAME")]
    default_version: Vec<String>,
    /// With --crate-name: depend on this kapi release from crates.io (default: the generator's).
    #[arg(long, value_name = "VERSION", conflicts_with_all = ["kapi_path", "kapi_git"])]
    kapi_version: Option<String>,
    /// With --crate-name: depend on kapi's runtime in this directory (relative to the crate).
    #[arg(long, value_name = "DIR", conflicts_with = "kapi_git")]
    kapi_path: Option<String>,
    /// With --crate-name: depend on kapi from this git repository.
    #[arg(long, value_name = "URL")]
    kapi_git: Option<String>,
    /// With --kapi-git: the commit, tag or branch.
    #[arg(long, value_name = "REV", requires = "kapi_git")]
    kapi_rev: Option<String>,
}

impl GenArgs {
    /// Where the generated crate finds kapi.
    fn runtime(&mut self) -> RuntimeDependency {
        match (
            self.kapi_version.take(),
            self.kapi_path.take(),
            self.kapi_git.take(),
        ) {
            (_, Some(path), _) => RuntimeDependency::Path(path),
            (_, _, Some(url)) => RuntimeDependency::Git {
                url,
                rev: self.kapi_rev.take(),
            },
            (Some(version), _, _) => RuntimeDependency::Version(version),
            _ => RuntimeDependency::default(),
        }
    }
}

impl GenArgs {
    fn job(mut self) -> anyhow::Result<Job> {
        if let Some(manifest) = &self.manifest {
            let extra = !self.inputs.is_empty()
                || !self.versions.is_empty()
                || self.out.is_some()
                || self.docs
                || self.kube
                || self.crate_name.is_some()
                || self.workspace
                || self.lifecycle.is_some()
                || self.printers.is_some()
                || self.defaults.is_some()
                || self.strategies.is_some()
                || self.validation.is_some()
                || self.field_selectors.is_some()
                || self.conversions.is_some()
                || !self.default_version.is_empty()
                || self.kapi_version.is_some()
                || self.kapi_path.is_some()
                || self.kapi_git.is_some();
            if extra {
                bail!("--manifest takes no other inputs or options");
            }
            return Ok(Job::from_manifest(manifest)?);
        }
        let runtime_given =
            self.kapi_version.is_some() || self.kapi_path.is_some() || self.kapi_git.is_some();
        if self.crate_name.is_none()
            && (self.workspace || !self.default_version.is_empty() || runtime_given)
        {
            bail!("--workspace, --default-version and --kapi-* need --crate-name");
        }
        if self.workspace && runtime_given {
            bail!("--workspace inherits kapi from the workspace: drop --kapi-*");
        }
        let runtime = self.runtime();
        let Some(out) = self.out else {
            bail!("give --out DIR (or --manifest FILE)");
        };
        let inputs = match (self.inputs.is_empty(), self.versions.is_empty()) {
            (false, true) => Inputs::Single(self.inputs),
            (true, false) => {
                let mut versions: Vec<(String, Vec<PathBuf>)> = Vec::new();
                for v in &self.versions {
                    let Some((name, path)) = v.split_once('=') else {
                        bail!("--version {v}: expected NAME=INPUT");
                    };
                    match versions.iter_mut().find(|(n, _)| n == name) {
                        Some((_, paths)) => paths.push(path.into()),
                        None => versions.push((name.to_owned(), vec![path.into()])),
                    }
                }
                Inputs::Versions(versions)
            }
            (true, true) => bail!("give INPUT files, --version NAME=INPUT or --manifest FILE"),
            (false, false) => bail!("give either INPUT files or --version, not both"),
        };
        Ok(Job {
            inputs,
            lifecycle: self.lifecycle,
            printers: self.printers,
            defaults: self.defaults,
            strategies: self.strategies,
            validation: self.validation,
            field_selectors: self.field_selectors,
            conversions: self.conversions,
            options: Options {
                docs: self.docs,
                kube: self.kube,
                ..Options::default()
            },
            krate: self.crate_name.map(|name| CrateOptions {
                name,
                doc: String::new(),
                workspace: self.workspace,
                default_versions: self.default_version,
                runtime,
                description: None,
                publish: false,
            }),
            out,
        })
    }
}

/// What a command prints and how it exits.
pub(crate) struct Outcome {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) success: bool,
}

fn summary(generated: &Generated) -> String {
    let lines: usize = generated
        .files
        .iter()
        .map(|f| f.contents.lines().count())
        .sum();
    let r = &generated.report;
    format!(
        "{} files, {lines} lines, {} types, {} kinds",
        generated.files.len(),
        r.types,
        r.kinds
    )
}

/// Generates and writes only what changed, removing stale generated files.
pub(crate) fn generate(args: GenArgs) -> anyhow::Result<Outcome> {
    let job = args.job()?;
    let generated = job.generate()?;
    let diff = output::write(&job.out, &generated)
        .with_context(|| format!("writing {}", job.out.display()))?;
    let stderr: String = generated
        .report
        .warnings
        .iter()
        .map(|w| format!("warning: {w}\n"))
        .collect();
    Ok(Outcome {
        stdout: format!(
            "{}: {}; {} written, {} removed\n",
            job.out.display(),
            summary(&generated),
            diff.changed.len() + diff.missing.len(),
            diff.stale.len()
        ),
        stderr,
        success: true,
    })
}

/// Generates in memory and compares with the output directory.
pub(crate) fn check(args: GenArgs) -> anyhow::Result<Outcome> {
    let job = args.job()?;
    let generated = job.generate()?;
    let diff = output::diff(&job.out, &generated)?;
    if diff.is_empty() {
        return Ok(Outcome {
            stdout: format!(
                "{}: up to date ({})\n",
                job.out.display(),
                summary(&generated)
            ),
            stderr: String::new(),
            success: true,
        });
    }
    let mut stderr = format!(
        "{}: generated files differ from a fresh generation:\n",
        job.out.display()
    );
    for line in diff.lines() {
        stderr.push_str(&format!("  {line}\n"));
    }
    stderr.push_str("run `kapi-codegen generate` with the same arguments to update them\n");
    Ok(Outcome {
        stdout: String::new(),
        stderr,
        success: false,
    })
}
