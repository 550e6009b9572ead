//! The `kapi` command: parses the command line, runs the chosen subcommand, reports the outcome.

use std::process::ExitCode;

use clap::Parser;
use kapi_apiserver::{Cli, Command};

// A server allocates and frees many short-lived buffers per request on every worker thread;
// glibc's allocator spent about a third of the server's CPU on them under write load
// (BENCHMARKS.md, "etcd"). jemalloc is as quick, and its background thread hands freed memory
// back to the system within seconds even while the server is idle; mimalloc, used before,
// kept what a burst freed until the same threads allocated again (2,000 watches of a 5 MiB
// collection: 441 MiB resident against 169 MiB, BENCHMARKS.md "Bounded inputs").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    // Every connection and watch holds a descriptor; the soft limit is often 1,024 while the
    // hard one is far higher. Go programs (kube-apiserver among them) raise the soft limit to
    // the hard one at start; so does this one. Where it cannot, the old limit stands.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let cli = Cli::parse();
    let Command::Serve(args) = cli.command;
    kapi_apiserver::logging::init(args.verbosity, args.logging_format);
    let mut started = false;
    let scheme = if args.plain_http { "http" } else { "https" };
    let result = kapi_apiserver::run_serve(args, |addr| {
        started = true;
        println!("kapi: serving on {scheme}://{addr}");
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if started => {
            tracing::error!(error = %e, "stopped with an error");
            ExitCode::FAILURE
        }
        Err(e) => {
            tracing::error!(error = %e, "refusing to start");
            ExitCode::FAILURE
        }
    }
}
