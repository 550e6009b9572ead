//! `kapi-watch-memory`: what watchers cost the server in memory (issue 13).
//!
//! Starts the `kapi serve` binary on an empty data directory, fills one namespace with
//! `--objects` ConfigMaps of `--object-bytes` each, and measures the server's resident set
//! (`VmRSS`):
//! 1. with `--watchers` watches of that namespace without a resourceVersion (so each gets the
//!    whole collection as initial events) whose clients never read a byte: what a watcher that
//!    does not keep up costs;
//! 2. with as many watches whose clients read their initial events to the end and then stay
//!    open without traffic: what an idle watcher costs.
//!
//! Each figure is taken once the server's RSS stops growing, and is printed beside the RSS
//! before the watches; the per-watcher figure is the difference over the number of watches.
//! Prints one Markdown table with the targets beside the figures.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark: a failed unwrap is a failed run"
)]

#[path = "../http.rs"]
#[allow(dead_code, unreachable_pub)]
mod http;

#[path = "../server.rs"]
#[allow(dead_code, unreachable_pub)]
mod server;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::Parser;
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::http::Conn;
use crate::server::{Server, Stop};

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "Server memory with many watchers: non-reading and idle")]
struct Args {
    /// The `kapi` binary.
    #[arg(long)]
    server: PathBuf,
    /// Where the server's temporary data directory goes.
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// ConfigMaps in the watched namespace.
    #[arg(long, default_value_t = 1000)]
    objects: usize,
    /// Bytes of data in each of them (the default makes a 5 MiB collection).
    #[arg(long, default_value_t = 5 * 1024)]
    object_bytes: usize,
    /// Watches opened in each phase.
    #[arg(long, default_value_t = 2000)]
    watchers: usize,
    /// The longest wait for the server's RSS to settle, in seconds.
    #[arg(long, default_value_t = 60)]
    settle_seconds: u64,
}

const NAMESPACE: &str = "watch-memory";
const MIB: f64 = 1024.0 * 1024.0;

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    match runtime.block_on(run(args)) {
        Ok(table) => {
            println!("{table}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kapi-watch-memory: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<String> {
    let tmp = args.tmp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let (mut server, _) = Server::start(&args.server, &tmp).await?;
    let mut conn = Conn::connect(server.addr()).await?;
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    conn.expect(
        Method::POST,
        "/api/v1/namespaces",
        Some(Bytes::from(namespace.to_string())),
        StatusCode::CREATED,
    )
    .await?;
    let filler = "x".repeat(args.object_bytes);
    let collection = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    eprintln!("filling {NAMESPACE} with {} ConfigMaps", args.objects);
    for i in 0..args.objects {
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:06}")},
            "data": {"filler": filler},
        });
        conn.expect(
            Method::POST,
            &collection,
            Some(Bytes::from(object.to_string())),
            StatusCode::CREATED,
        )
        .await?;
    }
    let list = conn
        .expect(Method::GET, &collection, None, StatusCode::OK)
        .await?;
    let collection_bytes = list.len();
    drop(conn);
    let settle = Duration::from_secs(args.settle_seconds);

    // Each phase starts from a freshly started server (memory a phase freed can stay with the
    // allocator), after one list so the store's cache holds the collection.
    server.restart(Stop::Term).await?;
    let base = warmed_rss(&server, &collection).await?;
    eprintln!(
        "opening {} watches that read their initial events, then idle",
        args.watchers
    );
    // Opened 32 at a time, each read to the end of its initial events.
    let path = format!("{collection}?watch=true");
    let gate = Arc::new(Semaphore::new(32));
    let mut opening = JoinSet::new();
    for _ in 0..args.watchers {
        let (gate, path, addr) = (Arc::clone(&gate), path.clone(), server.addr());
        let objects = args.objects;
        opening.spawn(async move {
            let _turn = gate.acquire_owned().await?;
            let mut conn = Conn::connect(addr).await?;
            let response = conn.start(Method::GET, &path, None).await?;
            if response.status() != StatusCode::OK {
                bail!("watch answered {}", response.status());
            }
            let mut body = response.into_body();
            // Events are counted by their line ends; a frame may end inside a line.
            let mut lines = 0;
            while lines < objects {
                let frame = body
                    .frame()
                    .await
                    .context("the watch ended during its initial events")??;
                if let Ok(data) = frame.into_data() {
                    lines += data.iter().filter(|b| **b == b'\n').count();
                }
            }
            anyhow::Ok((conn, body))
        });
    }
    let mut idle_watches = Vec::with_capacity(args.watchers);
    let all_read = async {
        while let Some(opened) = opening.join_next().await {
            idle_watches.push(opened??);
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(settle * 10, all_read)
        .await
        .context("the initial events did not arrive in time")??;
    let idle = settled_rss(&server, settle).await?;
    drop(idle_watches);

    server.restart(Stop::Term).await?;
    let silent_base = warmed_rss(&server, &collection).await?;
    eprintln!("opening {} watches that never read", args.watchers);
    let addr = server.addr();
    let request = format!(
        "GET {collection}?watch=true HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    );
    let mut silent = Vec::with_capacity(args.watchers);
    for i in 0..args.watchers {
        let mut stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("watch connection {i}"))?;
        stream.write_all(request.as_bytes()).await?;
        silent.push(stream);
    }
    let non_reading = settled_rss(&server, settle).await?;
    drop(silent);

    let watchers = args.watchers as f64;
    let per = |rss: u64, from: u64| rss.saturating_sub(from) as f64 / watchers / 1024.0;
    let mib = |bytes: u64| bytes as f64 / MIB;
    let met = |ok: bool| if ok { "**met**" } else { "not met" };
    let mut table = format!(
        "{} ConfigMaps, {:.1} MiB served as a list; {} watches per phase; server RSS before \
         the watches {:.0} MiB\n\n",
        args.objects,
        collection_bytes as f64 / MIB,
        args.watchers,
        mib(base)
    );
    table.push_str("| figure | settled | highest | target | met |\n|---|---:|---:|---|---|\n");
    table.push_str(&format!(
        "| server RSS with {} non-reading watches | {:.0} MiB | {:.0} MiB | ≤ 300 MiB | {} |\n",
        args.watchers,
        mib(non_reading.settled),
        mib(non_reading.peak),
        met(mib(non_reading.settled) <= 300.0)
    ));
    table.push_str(&format!(
        "| server RSS per non-reading watch | {:.1} KiB | {:.1} KiB | | |\n",
        per(non_reading.settled, silent_base),
        per(non_reading.peak, silent_base),
    ));
    table.push_str(&format!(
        "| server RSS per idle watch (initial events read) | {:.1} KiB | {:.1} KiB | ≤ 64 KiB | {} |\n",
        per(idle.settled, base),
        per(idle.peak, base),
        met(per(idle.settled, base) <= 64.0)
    ));
    Ok(table)
}

/// The server's settled RSS after one list of `collection`.
async fn warmed_rss(server: &Server, collection: &str) -> Result<u64> {
    let mut conn = Conn::connect(server.addr()).await?;
    conn.expect(Method::GET, collection, None, StatusCode::OK)
        .await?;
    Ok(settled_rss(server, Duration::from_secs(10)).await?.settled)
}

/// The server's RSS once it stopped changing, and the highest seen on the way: sampled every
/// half second until five seconds pass without a change of more than 1%, or `longest` runs
/// out (the allocator hands freed memory back over some seconds).
async fn settled_rss(server: &Server, longest: Duration) -> Result<Rss> {
    let started = Instant::now();
    let mut last = server.rss()?;
    let mut peak = last;
    let mut stable_since = Instant::now();
    while started.elapsed() < longest {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = server.rss()?;
        peak = peak.max(now);
        if now.abs_diff(last) * 100 > last {
            stable_since = Instant::now();
            last = now;
        } else if stable_since.elapsed() >= Duration::from_secs(5) {
            return Ok(Rss { settled: now, peak });
        }
    }
    Ok(Rss {
        settled: server.rss()?,
        peak,
    })
}

/// Resident set sizes in bytes.
#[derive(Debug, Clone, Copy)]
struct Rss {
    settled: u64,
    peak: u64,
}
