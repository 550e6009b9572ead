//! `kapi-wire-load`: what an answer costs in Kubernetes' protobuf encoding against JSON (issue
//! 16), in one run against the release `kapi serve` binary.
//!
//! Fills one namespace with `--objects` ConfigMaps shaped like a controller's (labels, an
//! annotation, a few data keys), then for each encoding:
//! 1. lists the namespace `--rounds` times: bytes on the wire and server CPU per object, and
//!    the time of one list;
//! 2. opens `--watchers` watches from the current resourceVersion, changes `--changes`
//!    ConfigMaps one after another and waits until every watcher has every event: bytes per
//!    event and server CPU per delivered event (the changes' own cost included, the same for
//!    both encodings).
//!
//! Prints one Markdown table with the protobuf/JSON ratios.

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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use bytes::Bytes;
use clap::Parser;
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::http::Conn;
use crate::server::Server;

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "Lists and watch fan-out in protobuf against JSON")]
struct Args {
    /// The `kapi` binary.
    #[arg(long)]
    server: PathBuf,
    /// Where the server's temporary data directory goes.
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// ConfigMaps in the listed namespace.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Lists per encoding.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Watches per encoding.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Changes each watcher receives.
    #[arg(long, default_value_t = 500)]
    changes: usize,
}

const NAMESPACE: &str = "wire";
const JSON: &str = "application/json";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

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
            eprintln!("kapi-wire-load: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One encoding's figures.
#[derive(Debug, Default, Clone, Copy)]
struct Figures {
    list_bytes_per_object: f64,
    list_cpu_us_per_object: f64,
    list_ms: f64,
    event_bytes: f64,
    event_cpu_us: f64,
}

async fn run(args: Args) -> Result<String> {
    let tmp = args.tmp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let (server, _) = Server::start(&args.server, &tmp).await?;
    fill(&server, args.objects).await?;
    let mut figures = Vec::new();
    for (phase, accept) in [JSON, PROTOBUF].into_iter().enumerate() {
        eprintln!("{accept}: {} lists", args.rounds);
        let mut f = list(&server, &args, accept).await?;
        eprintln!(
            "{accept}: {} watchers, {} changes",
            args.watchers, args.changes
        );
        let (bytes, cpu) = fan_out(&server, &args, accept, phase).await?;
        f.event_bytes = bytes;
        f.event_cpu_us = cpu;
        figures.push(f);
    }
    let (json, pb) = (figures[0], figures[1]);
    let row = |name: &str, j: f64, p: f64, unit: &str| {
        format!(
            "| {name} | {j:.2} {unit} | {p:.2} {unit} | **{:.2}** |\n",
            p / j
        )
    };
    let mut table =
        String::from("| figure | JSON | protobuf | protobuf/JSON |\n|---|---:|---:|---:|\n");
    table += &row(
        &format!("list of {}: bytes per object", args.objects),
        json.list_bytes_per_object,
        pb.list_bytes_per_object,
        "B",
    );
    table += &row(
        "list: server CPU per object",
        json.list_cpu_us_per_object,
        pb.list_cpu_us_per_object,
        "µs",
    );
    table += &row("list: time of one", json.list_ms, pb.list_ms, "ms");
    table += &row(
        &format!(
            "watch fan-out ({} watchers): bytes per event",
            args.watchers
        ),
        json.event_bytes,
        pb.event_bytes,
        "B",
    );
    table += &row(
        "watch fan-out: server CPU per delivered event",
        json.event_cpu_us,
        pb.event_cpu_us,
        "µs",
    );
    Ok(table)
}

fn config_map(i: usize, generation: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("cm-{i:06}"),
            "labels": {"app": "wire", "tier": "backend", "shard": (i % 16).to_string()},
            "annotations": {"example.com/owner": "team-wire"},
        },
        "data": {
            "mode": "production",
            "replicas": (i % 7).to_string(),
            "endpoint": format!("https://svc-{i}.example.com:8443/api"),
            "generation": generation.to_string(),
        },
    })
}

/// Creates the namespace and its ConfigMaps over 8 connections.
async fn fill(server: &Server, objects: usize) -> Result<()> {
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
    eprintln!("filling {NAMESPACE} with {objects} ConfigMaps");
    let collection = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..8 {
        let (next, collection, addr) = (Arc::clone(&next), collection.clone(), server.addr());
        workers.spawn(async move {
            let mut conn = Conn::connect(addr).await?;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                if i >= objects {
                    return anyhow::Ok(());
                }
                let body = Bytes::from(config_map(i, 0).to_string());
                conn.expect(Method::POST, &collection, Some(body), StatusCode::CREATED)
                    .await?;
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done??;
    }
    Ok(())
}

/// Lists the namespace `rounds` times in `accept` (after one list to warm up).
async fn list(server: &Server, args: &Args, accept: &str) -> Result<Figures> {
    let mut conn = Conn::connect(server.addr()).await?;
    let path = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    let mut read = async || {
        let response = conn
            .start_accepting(Method::GET, &path, None, accept)
            .await?;
        if response.status() != StatusCode::OK {
            bail!("list answered {}", response.status());
        }
        let content_type = response.headers()["content-type"].to_str()?.to_owned();
        if !content_type.starts_with(accept) {
            bail!("list answered {content_type}, not {accept}");
        }
        anyhow::Ok(response.into_body().collect().await?.to_bytes().len())
    };
    read().await?;
    let cpu = server.cpu()?;
    let started = Instant::now();
    let mut bytes = 0;
    for _ in 0..args.rounds {
        bytes += read().await?;
    }
    let elapsed = started.elapsed();
    let used = server.cpu()? - cpu;
    let lists = args.rounds as f64;
    let objects = lists * args.objects as f64;
    Ok(Figures {
        list_bytes_per_object: bytes as f64 / objects,
        list_cpu_us_per_object: used.as_secs_f64() * 1e6 / objects,
        list_ms: elapsed.as_secs_f64() * 1e3 / lists,
        ..Figures::default()
    })
}

/// Watches from now with `watchers` watches, makes `changes` changes, and waits for every
/// watcher to receive every event: (bytes per event, server CPU µs per delivered event). Each
/// `phase` writes other values (an update that changes nothing is no event).
async fn fan_out(server: &Server, args: &Args, accept: &str, phase: usize) -> Result<(f64, f64)> {
    let mut conn = Conn::connect(server.addr()).await?;
    let collection = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    let listed = conn
        .expect(
            Method::GET,
            &format!("{collection}?limit=1"),
            None,
            StatusCode::OK,
        )
        .await?;
    let listed: Value = serde_json::from_slice(&listed)?;
    let rv = listed["metadata"]["resourceVersion"]
        .as_str()
        .context("a list resourceVersion")?
        .to_owned();
    let path = format!("{collection}?watch=true&resourceVersion={rv}&allowWatchBookmarks=false");
    let received = Arc::new(AtomicU64::new(0));
    let mut watchers = JoinSet::new();
    let protobuf = accept == PROTOBUF;
    for _ in 0..args.watchers {
        let mut watch = Conn::connect(server.addr()).await?;
        let response = watch
            .start_accepting(Method::GET, &path, None, accept)
            .await?;
        if response.status() != StatusCode::OK {
            bail!("watch answered {}", response.status());
        }
        let (received, changes) = (Arc::clone(&received), args.changes);
        watchers.spawn(async move {
            let _keep = watch;
            let mut body = response.into_body();
            let mut pending: Vec<u8> = Vec::new();
            let (mut events, mut bytes) = (0, 0);
            while events < changes {
                let frame = body.frame().await.context("the watch ended early")??;
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                bytes += data.len();
                pending.extend_from_slice(&data);
                events += take_events(&mut pending, protobuf);
            }
            received.fetch_add(bytes as u64, Ordering::Relaxed);
            anyhow::Ok(())
        });
    }
    // The watches are open once the server has answered them; give their first poll a moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cpu = server.cpu()?;
    let mut conn = Conn::connect(server.addr()).await?;
    for change in 0..args.changes {
        let i = change % args.objects;
        let generation = phase * args.changes + change + 1;
        let body = Bytes::from(config_map(i, generation).to_string());
        let path = format!("{collection}/cm-{i:06}");
        conn.expect(Method::PUT, &path, Some(body), StatusCode::OK)
            .await?;
    }
    let deadline = Duration::from_secs(120);
    let all = async {
        while let Some(done) = watchers.join_next().await {
            done??;
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(deadline, all)
        .await
        .context("the watchers did not get every event in time")??;
    let used = server.cpu()? - cpu;
    let delivered = (args.watchers * args.changes) as f64;
    Ok((
        received.load(Ordering::Relaxed) as f64 / delivered,
        used.as_secs_f64() * 1e6 / delivered,
    ))
}

/// Removes the whole events at the front of `pending`: JSON lines, or protobuf frames (four
/// big-endian length bytes, then the event).
fn take_events(pending: &mut Vec<u8>, protobuf: bool) -> usize {
    let mut events = 0;
    let mut start = 0;
    if protobuf {
        while pending.len() - start >= 4 {
            let len = u32::from_be_bytes(pending[start..start + 4].try_into().unwrap()) as usize;
            if pending.len() - start < 4 + len {
                break;
            }
            start += 4 + len;
            events += 1;
        }
    } else {
        while let Some(end) = pending[start..].iter().position(|b| *b == b'\n') {
            start += end + 1;
            events += 1;
        }
    }
    pending.drain(..start);
    events
}
