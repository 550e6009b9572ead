//! `kapi-cel-load`: what CEL rules cost a custom resource's create (issue 19).
//!
//! Creates in closed loop at `--concurrency` connections against the in-process server
//! (`kapi-test`, memory store), of an object of a CRD whose schema carries ten
//! `x-kubernetes-validations` rules of the kinds real CRDs use (bounds, sizes, regexes,
//! comprehensions over lists, optional fields, a URL check), and of the same CRD without the
//! rules. Rounds alternate between the two on fresh servers, so a busy machine slows both
//! alike; the medians and their ratio are printed as one Markdown table, with each round's CPU
//! time per create (the whole process's, client included, from `/proc/self/stat`). The server
//! runs on one thread, which the rules' cost weighs on alone; `--server-threads 2` serves on a
//! multi-threaded runtime as `kapi serve` does, sharing the cores with the store's writer and
//! the client.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark: a failed unwrap is a failed run"
)]

#[path = "../http.rs"]
#[allow(dead_code, unreachable_pub)]
mod http;
#[path = "../rounds.rs"]
mod rounds;
#[path = "../widget.rs"]
mod widget;

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use bytes::Bytes;
use clap::Parser;
use hyper::{Method, StatusCode};
use kapi_test::TestServer;

use crate::http::Conn;
use crate::rounds::{Round, creates, median};
use crate::widget::{body, crd};

// The allocator the `kapi` server ships with (runtime/server/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "Custom resource creates with ten CEL rules, and without")]
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
    /// Run only one side (`with` the rules or `without` them), to profile it (`perf record`);
    /// no ratio is printed then.
    #[arg(long, value_parser = ["with", "without"])]
    only: Option<String>,
}

/// Creates per second and CPU per create over one round on a fresh server.
async fn round(rules: bool, args: &Args) -> Result<Round> {
    let mut server = TestServer::builder();
    if let Some(threads) = args.server_threads {
        server = server.worker_threads(threads);
    }
    let server = server.start().await?;
    let addr = server.addr();
    let mut probe = Conn::connect(addr).await?;
    probe
        .expect(
            Method::POST,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some(Bytes::from(crd(rules).to_string())),
            StatusCode::CREATED,
        )
        .await?;
    let path = "/apis/bench.kapi.dev/v1/namespaces/default/widgets";
    // The CRD is served once it is established; then check one write of each side.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = probe.send(Method::GET, path, None).await?;
        if status == StatusCode::OK {
            break;
        }
        if Instant::now() > deadline {
            bail!("the CRD was not served within 10 s ({status})");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    probe
        .expect(Method::POST, path, Some(body("probe")), StatusCode::CREATED)
        .await?;
    if rules {
        // A rule that fails must be refused, or the rules are not running.
        let bad = body("bad").to_vec();
        let bad = String::from_utf8(bad)?.replace("https://", "http://");
        probe
            .expect(
                Method::POST,
                path,
                Some(Bytes::from(bad)),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await?;
    }
    creates(addr, path, args.concurrency, args.seconds, body).await
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let Some(side) = args.only.as_deref() {
        for _ in 0..args.rounds {
            let round = runtime.block_on(round(side == "with", &args))?;
            println!(
                "{side}: {:.0} creates/s, {:.0} CPU µs per create",
                round.rate, round.cpu
            );
        }
        return Ok(());
    }
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..args.rounds {
        with.push(runtime.block_on(round(true, &args))?);
        without.push(runtime.block_on(round(false, &args))?);
    }
    let rates = |rounds: &[Round]| median(rounds.iter().map(|r| r.rate).collect());
    let cpus = |rounds: &[Round]| median(rounds.iter().map(|r| r.cpu).collect());
    let (with_rate, without_rate) = (rates(&with), rates(&without));
    let (with_cpu, without_cpu) = (cpus(&with), cpus(&without));
    println!(
        "| Widget creates, {} in flight, in-process server, memory store | creates/s | CPU µs per create |",
        args.concurrency
    );
    println!("|---|---|---|");
    println!("| with ten CEL rules | {with_rate:.0} | {with_cpu:.0} |");
    println!("| the same CRD without them | {without_rate:.0} | {without_cpu:.0} |");
    println!(
        "| ratio with / without (target ≥ 0.8) | {:.2} | {:.2} |",
        with_rate / without_rate,
        without_cpu / with_cpu
    );
    Ok(())
}
