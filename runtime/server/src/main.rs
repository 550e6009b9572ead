//! The `kapi` command: parses the command line, runs the chosen subcommand, reports the outcome.

use std::process::ExitCode;

use clap::Parser;
use kapi_server::{Cli, Command};

// A server allocates and frees many short-lived buffers per request on every worker thread;
// glibc's allocator spent about a third of the server's CPU on them under write load
// (BENCHMARKS.md, "etcd").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
