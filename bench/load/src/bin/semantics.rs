//! `kapi-semantics-load`: what the built-ins' semantics cost a write (issue 15).
//!
//! Deployment creates in closed loop at `--concurrency` connections against the in-process
//! server (`kapi-test`, memory store, so the store's cost does not hide the request path's),
//! serving the 1.36 `apps/v1` Deployment as generated, with its types' defaults and checks,
//! and with the same kind stripped of them (its type tree copied without defaults and checks,
//! everything else equal). The stripped kind is written to twice: with the body as people
//! write it, so it stores a smaller object than the defaulted one, and with the body written
//! in full (every field the defaults would fill, as the first server stores it), so both
//! store the same object and the ratio is the price of the defaults and checks alone. Rounds
//! alternate between the three on fresh servers, so a busy machine slows all alike; the
//! medians and their ratios are printed as one Markdown table.
//! Beside the rate, each round's CPU time per create (the whole process's, client included,
//! from `/proc/self/stat`) is reported: on a shared machine it moves less with other load.
//! The server runs on one thread unless `--server-threads` serves it on a multi-threaded
//! runtime, as `kapi serve` does.

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
use std::sync::OnceLock;

use anyhow::{Result, bail};
use bytes::Bytes;
use clap::Parser;
use hyper::{Method, StatusCode};
use kapi::Registry;
use kapi::merge::{FieldInfo, TypeInfo};
use kapi_k8s::v1_36::apps::v1::Deployment;
use kapi_test::TestServer;
use serde_json::Value;

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
    /// Serve on a multi-threaded runtime of this many workers, as `kapi serve` does (one per
    /// core), rather than on one thread; the client shares the machine's cores with it.
    #[arg(long)]
    server_threads: Option<usize>,
    /// Run only one side (`with`, `without`, or `in-full`: the server with the defaults, then
    /// the one without sent the body written in full), to profile it (`perf record`); no
    /// ratio is printed then.
    #[arg(long, value_parser = ["with", "without", "in-full"])]
    only: Option<String>,
}

/// The body of a create of the Deployment `name`.
fn body(name: &str) -> Bytes {
    Bytes::from(deployment(name, None).to_string())
}

/// The Deployment as the server with the defaults stores it, without what the server sets
/// of its metadata: filled in once, from the first create of a run.
static IN_FULL: OnceLock<Value> = OnceLock::new();

/// The body of a create of the Deployment `name`, written in full.
fn body_in_full(name: &str) -> Bytes {
    let mut object = IN_FULL
        .get()
        .cloned()
        .unwrap_or_else(|| deployment(name, None));
    object["metadata"]["name"] = Value::from(name);
    Bytes::from(object.to_string())
}

/// What a server answered to a create, less the metadata it sets itself.
fn as_written_in_full(created: &[u8]) -> Result<Value> {
    let mut object: Value = serde_json::from_slice(created)?;
    let Some(meta) = object["metadata"].as_object_mut() else {
        bail!("a created Deployment without metadata");
    };
    for owned in [
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
    ] {
        meta.remove(owned);
    }
    object.as_object_mut().map(|o| o.remove("status"));
    Ok(object)
}

/// The servers a run compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The kind with its defaults and checks, sent the body as written.
    With,
    /// The kind without them, sent the body as written.
    Without,
    /// The kind without them, sent the body written in full.
    WithoutInFull,
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
async fn round(side: Side, args: &Args) -> Result<Round> {
    let mut server = TestServer::builder()
        .without_builtins()
        .registry(registry(side == Side::With)?);
    if let Some(threads) = args.server_threads {
        server = server.worker_threads(threads);
    }
    let server = server.start().await?;
    let addr = server.addr();
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let body = match side {
        Side::WithoutInFull => body_in_full,
        Side::With | Side::Without => body,
    };
    // A write that fails would be counted as fast; check one of each first.
    let mut probe = Conn::connect(addr).await?;
    let created = probe
        .expect(Method::POST, path, Some(body("probe")), StatusCode::CREATED)
        .await?;
    if side == Side::With && IN_FULL.get().is_none() {
        let _ = IN_FULL.set(as_written_in_full(&created)?);
    }
    creates(addr, path, args.concurrency, args.seconds, body).await
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let sides: &[Side] = match args.only.as_deref() {
        Some("with") => &[Side::With],
        Some("without") => &[Side::Without],
        // The body in full is taken from the first server's answer.
        Some(_) => &[Side::With, Side::WithoutInFull],
        None => &[Side::With, Side::Without, Side::WithoutInFull],
    };
    let mut rounds: Vec<(Side, Round)> = Vec::new();
    for _ in 0..args.rounds {
        for &side in sides {
            rounds.push((side, runtime.block_on(round(side, &args))?));
        }
    }
    if args.only.is_some() {
        for (side, round) in &rounds {
            println!(
                "{side:?}: {:.0} creates/s, {:.0} CPU µs per create",
                round.rate, round.cpu
            );
        }
        return Ok(());
    }
    let of = |side: Side| {
        rounds
            .iter()
            .filter(move |(s, _)| *s == side)
            .map(|(_, r)| r)
    };
    let rate = |side: Side| median(of(side).map(|r| r.rate).collect());
    let cpu = |side: Side| median(of(side).map(|r| r.cpu).collect());
    println!(
        "| Deployment creates, {} in flight, in-process server, memory store | creates/s | CPU µs per create |",
        args.concurrency
    );
    println!("|---|---|---|");
    println!(
        "| with the 1.36 defaults and checks | {:.0} | {:.0} |",
        rate(Side::With),
        cpu(Side::With)
    );
    println!(
        "| the same kind without them, body as written | {:.0} | {:.0} |",
        rate(Side::Without),
        cpu(Side::Without)
    );
    println!(
        "| the same kind without them, body written in full | {:.0} | {:.0} |",
        rate(Side::WithoutInFull),
        cpu(Side::WithoutInFull)
    );
    for (against, name) in [
        (Side::Without, "as written (target ≥ 0.9)"),
        (
            Side::WithoutInFull,
            "in full: the defaults and checks alone",
        ),
    ] {
        println!(
            "| ratio with / without, body {name} | {:.2} | {:.2} |",
            rate(Side::With) / rate(against),
            cpu(against) / cpu(Side::With)
        );
    }
    Ok(())
}
