//! The `kapi-codegen` command line: parses arguments, calls the library, reports errors.

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
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("kapi-codegen: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> anyhow::Result<String> {
    match command {
        Command::List { inputs, all_kinds } => {
            let model = kapi_codegen::load_inputs(&inputs)?;
            Ok(render(&model, ListOptions { all_kinds }))
        }
    }
}
