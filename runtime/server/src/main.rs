//! The `kapi` command: parses the command line, runs the chosen subcommand, reports the outcome.

use std::process::ExitCode;

use clap::Parser;
use kapi_server::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => kapi_server::run_serve(args, |addr| {
            println!("kapi: serving on http://{addr}");
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kapi: {e}");
            ExitCode::FAILURE
        }
    }
}
