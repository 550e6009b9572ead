//! `kapi-semantics-steps`: what the built-ins' semantics cost one Deployment, step by step, in
//! a loop without a server (issue 15): the kind's codec, its types' defaults and checks, object
//! metadata's checks, and serializing the object as written and as defaulted. Each figure is
//! the mean over `--iterations` runs; a busy machine moves these less than the request rates
//! of `kapi-semantics-load`.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark: a failed unwrap is a failed run"
)]

#[path = "../deployment.rs"]
mod deployment;
#[path = "../timing.rs"]
mod timing;

use std::hint::black_box;

use anyhow::{Context, Result, bail};
use clap::Parser;
use kapi::{KubeVersion, Registry, defaulting, validation};
use kapi_k8s::v1_36::apps::v1::Deployment;
use serde_json::Value;

use crate::deployment::deployment;
use crate::timing::time;

// The allocator the `kapi` server ships with (runtime/server/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "The built-ins' defaults and checks of one Deployment, step by step")]
struct Args {
    /// Runs of each step.
    #[arg(long, default_value_t = 20_000)]
    iterations: u32,
}

/// The Deployment `kapi-semantics-load` creates, as the server holds it after the create
/// handler's metadata.
fn body() -> Value {
    deployment("web-1-2", Some("default"))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let n = args.iterations.max(1);
    let mut registry = Registry::new();
    registry.register::<Deployment>();
    let kind = registry
        .get("apps", "v1", "deployments")
        .context("apps/v1 deployments not registered")?;
    let root = kind.merge.context("no type tree")?;
    let release = KubeVersion::new(1, 36);
    let decoded = (kind.codec)(body()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut defaulted = decoded.clone();
    defaulting::apply_types(root, &mut defaulted, release);
    let mut errors = validation::Errors::new(release);
    validation::check_types(root, &defaulted, None, &mut errors);
    if !errors.is_empty() {
        bail!("the Deployment is invalid: {:?}", errors.into_causes());
    }

    let codec = time(n, || {
        black_box((kind.codec)(body()).unwrap());
    });
    let clone = time(n, || {
        black_box(decoded.clone());
    });
    // The copy each run defaults, and its drop, are the clone's cost: taken off.
    let defaults = time(n, || {
        let mut object = decoded.clone();
        defaulting::apply_types(root, &mut object, release);
        black_box(object);
    }) - clone;
    let checks = time(n, || {
        let mut errors = validation::Errors::new(release);
        validation::check_types(root, black_box(&defaulted), None, &mut errors);
        black_box(errors);
    });
    let metadata = time(n, || {
        let mut errors = validation::Errors::new(release);
        validation::check_metadata(black_box(&defaulted), &mut errors);
        black_box(errors);
    });
    let size = |v: &Value| serde_json::to_vec(v).map_or(0, |b| b.len());
    let written = time(n, || {
        black_box(serde_json::to_vec(&decoded).unwrap());
    });
    let serialized = time(n, || {
        black_box(serde_json::to_vec(&defaulted).unwrap());
    });
    println!("| one Deployment, 1.36 | µs |");
    println!("|---|---:|");
    println!("| the kind's codec (both sides) | {codec:.1} |");
    println!("| its types' defaults | {defaults:.1} |");
    println!("| its types' checks | {checks:.1} |");
    println!("| object metadata's checks (both sides) | {metadata:.1} |");
    println!(
        "| serializing it as written, {} bytes | {written:.1} |",
        size(&decoded)
    );
    println!(
        "| serializing it defaulted, {} bytes | {serialized:.1} |",
        size(&defaulted)
    );
    Ok(())
}
