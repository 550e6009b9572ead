//! `kapi-semantics-load`: what the built-ins' semantics cost a write (issue 15).
//!
//! Deployment creates in closed loop at `--concurrency` connections against the in-process
//! server (`kapi-test`, memory store, so the store's cost does not hide the request path's),
//! serving the 1.36 `apps/v1` Deployment twice: as generated, with its types' defaults and
//! checks, and with the same kind stripped of them (its type tree copied without defaults and
//! checks, everything else equal). Rounds alternate between the two on fresh servers, so a
//! busy machine slows both alike; the medians and their ratio are printed as one Markdown table.
//! Beside the rate, each round's CPU time per create (the whole process's, client included,
//! from `/proc/self/stat`) is reported: on a shared machine it moves less with other load.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark: a failed unwrap is a failed run"
)]

#[path = "../deployment.rs"]
mod deployment;
#[path = "../http.rs"]
#[allow(dead_code, unreachable_pub)]
mod http;
#[path = "../rounds.rs"]
mod rounds;

use std::collections::HashMap;

use anyhow::{Result, bail};
use bytes::Bytes;
use clap::Parser;
use hyper::{Method, StatusCode};
use kapi::Registry;
use kapi::merge::{FieldInfo, TypeInfo};
use kapi_k8s::v1_36::apps::v1::Deployment;
use kapi_test::TestServer;

use crate::deployment::deployment;
use crate::http::Conn;
use crate::rounds::{Round, creates, median};

// The allocator the `kapi` server ships with (runtime/server/src/main.rs): the server in this
// process allocates as the shipped one does.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "Deployment creates with the built-ins' defaults and checks, and without")]
struct Args {
    /// Connections sending creates at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Seconds each round runs.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Rounds of each variant, alternating.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Run only one variant (`with` or `without`), to profile one side (`perf record`); no ratio
    /// is printed then.
    #[arg(long, value_parser = ["with", "without"])]
    only: Option<String>,
}

/// The body of a create of the Deployment `name`.
fn body(name: &str) -> Bytes {
    Bytes::from(deployment(name, None).to_string())
}

/// A copy of a type tree without defaults and checks, leaked for the server's `'static`.
fn strip(
    ty: &'static TypeInfo,
    done: &mut HashMap<*const TypeInfo, &'static TypeInfo>,
) -> &'static TypeInfo {
    if let Some(copy) = done.get(&(ty as *const TypeInfo)) {
        return copy;
    }
    let fields: Vec<FieldInfo> = ty
        .fields
        .iter()
        .map(|field| FieldInfo {
            ty: field.ty.map(|inner| strip(inner, done)),
            ..*field
        })
        .collect();
    let copy: &'static TypeInfo = Box::leak(Box::new(TypeInfo {
        fields: Box::leak(fields.into_boxed_slice()),
        defaults: &[],
        checks: &[],
        ..*ty
    }));
    done.insert(ty as *const TypeInfo, copy);
    copy
}

fn registry(semantics: bool) -> Result<Registry> {
    let mut registry = Registry::new();
    registry.register::<Deployment>();
    if !semantics {
        let Some(kind) = registry.get_mut("apps", "v1", "deployments") else {
            bail!("apps/v1 deployments not registered");
        };
        kind.merge = kind.merge.map(|root| strip(root, &mut HashMap::new()));
    }
    Ok(registry)
}

/// Creates per second and CPU per create over one round on a fresh server.
async fn round(semantics: bool, args: &Args) -> Result<Round> {
    let server = TestServer::builder()
        .without_builtins()
        .registry(registry(semantics)?)
        .start()
        .await?;
    let addr = server.addr();
    let path = "/apis/apps/v1/namespaces/default/deployments";
    // A write that fails would be counted as fast; check one of each first.
    let mut probe = Conn::connect(addr).await?;
    probe
        .expect(Method::POST, path, Some(body("probe")), StatusCode::CREATED)
        .await?;
    creates(addr, path, args.concurrency, args.seconds, body).await
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    let only = args.only.as_deref();
    for _ in 0..args.rounds {
        if only != Some("without") {
            with.push(runtime.block_on(round(true, &args))?);
        }
        if only != Some("with") {
            without.push(runtime.block_on(round(false, &args))?);
        }
    }
    if only.is_some() {
        for (name, rounds) in [("with", &with), ("without", &without)] {
            for round in rounds {
                println!(
                    "{name}: {:.0} creates/s, {:.0} CPU µs per create",
                    round.rate, round.cpu
                );
            }
        }
        return Ok(());
    }
    let rates = |rounds: &[Round]| median(rounds.iter().map(|r| r.rate).collect());
    let cpus = |rounds: &[Round]| median(rounds.iter().map(|r| r.cpu).collect());
    let (with_rate, without_rate) = (rates(&with), rates(&without));
    let (with_cpu, without_cpu) = (cpus(&with), cpus(&without));
    println!(
        "| Deployment creates, {} in flight, in-process server, memory store | creates/s | CPU µs per create |",
        args.concurrency
    );
    println!("|---|---|---|");
    println!("| with the 1.36 defaults and checks | {with_rate:.0} | {with_cpu:.0} |");
    println!("| the same kind without them | {without_rate:.0} | {without_cpu:.0} |");
    println!(
        "| ratio with / without (target ≥ 0.9) | {:.2} | {:.2} |",
        with_rate / without_rate,
        without_cpu / with_cpu
    );
    Ok(())
}
