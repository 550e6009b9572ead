//! The `kapi-codegen` command line: parses arguments, calls the library, reports errors.

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kapi_codegen::list::{ListOptions, render};

/// Generate typed Rust from Kubernetes OpenAPI specs and CRD manifests.
#[derive(Debug, Parser)]
#[command(name = "kapi-codegen", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate Rust from the inputs: a module tree, a crate (--crate-name), or one crate with a
    /// module and feature per version (--version, or --manifest). Writes only files whose
    /// contents change and removes generated files that are no longer produced.
    Generate(cli::GenArgs),
    /// Like generate, but only compare: exit 1 listing the files that differ from a fresh
    /// generation, 0 when the output directory is up to date.
    Check(cli::GenArgs),
    /// List the group-versions of the inputs and, under each, its kinds with plural, scope, verbs
    /// and subresources.
    List {
        /// Inputs: a swagger.json (OpenAPI v2), a folder of OpenAPI v3 documents, or CRD manifests
        /// (YAML or JSON); several inputs are merged.
        #[arg(required = true, value_name = "INPUT")]
        inputs: Vec<PathBuf>,
        /// Also list kinds that are not served as resources (DeleteOptions, WatchEvent, Scale, ...).
        #[arg(long)]
        all_kinds: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(out) => {
            print!("{}", out.stdout);
            eprint!("{}", out.stderr);
            if out.success {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(err) => {
            eprintln!("kapi-codegen: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<cli::Outcome> {
    match command {
        Command::Generate(args) => cli::generate(args),
        Command::Check(args) => cli::check(args),
        Command::List { inputs, all_kinds } => {
            let model = kapi_codegen::load_inputs(&inputs)?;
            Ok(cli::Outcome {
                stdout: render(&model, ListOptions { all_kinds }),
                stderr: String::new(),
                success: true,
            })
        }
    }
}
