//! `kapi-etcd-load`: the API server over etcd against raw etcd (issue #7).
//!
//! Starts a one-member etcd and two `kapi serve --etcd-servers` replicas over it, then measures
//! in one run: ConfigMap creates and updates (PUT) through a replica in closed loop at
//! `--concurrency` connections; the same creates and updates as raw etcd transactions (create
//! if absent, update if the mod revision matches) with the same client crate and concurrency;
//! the ratio of the two; and watch fan-out: `--watchers` watches split over both replicas,
//! creates through one replica stamped with their send time, latency from the stamp to the
//! event read by each watcher. Prints one Markdown table.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark: a failed unwrap is a failed run"
)]

#[path = "../http.rs"]
#[allow(dead_code, unreachable_pub)]
mod http;

#[path = "../../../../runtime/tests/support/etcd.rs"]
mod etcd;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Parser;
use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use serde_json::json;

/// The API server over etcd against raw etcd.
#[derive(Debug, Parser)]
#[command(name = "kapi-etcd-load")]
struct Args {
    /// The `kapi` server binary [default: `kapi` beside this binary].
    #[arg(long, value_name = "FILE")]
    server: Option<PathBuf>,
    /// Concurrent connections (HTTP) and in-flight transactions (raw etcd).
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// How long each create and update phase runs, in seconds.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Bytes of data in each ConfigMap (and raw value) besides its stamp.
    #[arg(long, default_value_t = 256)]
    payload_bytes: usize,
    /// Concurrent watches, split over the two replicas.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,
    /// Objects created while the watches are open.
    #[arg(long, default_value_t = 100)]
    watch_events: usize,
    /// Rate of those creates, per second.
    #[arg(long, default_value_t = 20.0)]
    watch_rate: f64,
}

/// A `kapi serve` replica; killed when dropped.
struct Replica {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Replica {
    fn start(binary: &PathBuf, endpoints: &str) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut child = Command::new(binary)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--etcd-servers",
                endpoints,
                "--plain-http",
            ])
            .arg("--kubeconfig")
            .arg(dir.path().join("kubeconfig"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting kapi")?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut line)?;
        let addr = line
            .trim()
            .rsplit("http://")
            .next()
            .and_then(|a| a.parse().ok())
            .with_context(|| format!("no address in {line:?}"))?;
        Ok(Self {
            child,
            addr,
            _dir: dir,
        })
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Latencies of one phase.
#[derive(Default)]
struct Samples {
    latencies: Vec<Duration>,
    failures: usize,
    elapsed: Duration,
}

impl Samples {
    fn merge(&mut self, other: Samples) {
        self.latencies.extend(other.latencies);
        self.failures += other.failures;
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn quantile(&mut self, q: f64) -> Duration {
        self.latencies.sort();
        let n = self.latencies.len();
        if n == 0 {
            return Duration::ZERO;
        }
        let index = ((n as f64 * q).ceil() as usize).clamp(1, n) - 1;
        self.latencies[index]
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn config_map(name: &str, payload: &str) -> Bytes {
    Bytes::from(
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "bench"},
            "data": {"payload": payload, "stamp": now_micros().to_string()},
        })
        .to_string(),
    )
}

/// Runs `op(worker, i)` on `concurrency` workers for `seconds`, timing each call.
async fn closed_loop<F, Fut>(concurrency: usize, seconds: u64, op: F) -> Samples
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send,
{
    let op = Arc::new(op);
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            let mut samples = Samples::default();
            let mut i = 0;
            while Instant::now() < until {
                let begun = Instant::now();
                match op(worker, i).await {
                    Ok(()) => samples.latencies.push(begun.elapsed()),
                    Err(_) => samples.failures += 1,
                }
                i += 1;
            }
            samples
        }));
    }
    let mut all = Samples::default();
    for task in tasks {
        all.merge(task.await.unwrap());
    }
    all.elapsed = started.elapsed();
    all
}

/// Each worker's objects so far: (name or key, resourceVersion / mod revision).
type Owned = Arc<Vec<Mutex<Vec<(String, u64)>>>>;

async fn server_phases(args: &Args, addr: SocketAddr, payload: &str) -> (Samples, Samples) {
    let mut setup = http::Conn::connect(addr).await.unwrap();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}});
    let _ = setup
        .send(
            Method::POST,
            "/api/v1/namespaces",
            Some(Bytes::from(ns.to_string())),
        )
        .await;
    let mut conns = Vec::new();
    for _ in 0..args.concurrency {
        conns.push(tokio::sync::Mutex::new(
            http::Conn::connect(addr).await.unwrap(),
        ));
    }
    let conns = Arc::new(conns);
    let owned: Owned = Arc::new((0..args.concurrency).map(|_| Mutex::default()).collect());
    let collection = "/api/v1/namespaces/bench/configmaps";
    let creates = {
        let (conns, owned, payload) = (conns.clone(), owned.clone(), payload.to_owned());
        closed_loop(args.concurrency, args.seconds, move |w, i| {
            let (conns, owned, payload) = (conns.clone(), owned.clone(), payload.clone());
            async move {
                let name = format!("c{w}-{i}");
                let body = config_map(&name, &payload);
                let mut conn = conns[w].lock().await;
                let answer = conn
                    .expect(Method::POST, collection, Some(body), StatusCode::CREATED)
                    .await?;
                let object: serde_json::Value = serde_json::from_slice(&answer)?;
                let rv = object["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .context("resourceVersion")?;
                owned[w].lock().unwrap().push((name, rv));
                Ok(())
            }
        })
        .await
    };
    let updates = {
        let (conns, owned, payload) = (conns.clone(), owned.clone(), payload.to_owned());
        closed_loop(args.concurrency, args.seconds, move |w, i| {
            let (conns, owned, payload) = (conns.clone(), owned.clone(), payload.clone());
            async move {
                let (name, rv) = {
                    let mine = owned[w].lock().unwrap();
                    mine[i as usize % mine.len()].clone()
                };
                let mut object: serde_json::Value =
                    serde_json::from_slice(&config_map(&name, &payload))?;
                object["metadata"]["resourceVersion"] = json!(rv.to_string());
                let mut conn = conns[w].lock().await;
                let answer = conn
                    .expect(
                        Method::PUT,
                        &format!("{collection}/{name}"),
                        Some(Bytes::from(object.to_string())),
                        StatusCode::OK,
                    )
                    .await?;
                let object: serde_json::Value = serde_json::from_slice(&answer)?;
                let rv = object["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .context("resourceVersion")?;
                let mut mine = owned[w].lock().unwrap();
                let slot = i as usize % mine.len();
                mine[slot].1 = rv;
                Ok(())
            }
        })
        .await
    };
    (creates, updates)
}

async fn raw_phases(args: &Args, endpoints: Vec<String>, payload: &str) -> (Samples, Samples) {
    let client = etcd_client::Client::connect(&endpoints, None)
        .await
        .unwrap();
    let owned: Owned = Arc::new((0..args.concurrency).map(|_| Mutex::default()).collect());
    let creates = {
        let (client, owned, payload) = (client.clone(), owned.clone(), payload.to_owned());
        closed_loop(args.concurrency, args.seconds, move |w, i| {
            let (mut kv, owned, payload) = (client.kv_client(), owned.clone(), payload.clone());
            async move {
                let key = format!("/raw/configmaps/bench/c{w}-{i}");
                let value = config_map(&key, &payload).to_vec();
                let txn = Txn::new()
                    .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key.clone(), value, None)])
                    .or_else([TxnOp::get(key.clone(), None)]);
                let response = kv.txn(txn).await?;
                anyhow::ensure!(response.succeeded(), "key exists");
                let rev = response.header().map_or(0, |h| h.revision()) as u64;
                owned[w].lock().unwrap().push((key, rev));
                Ok(())
            }
        })
        .await
    };
    let updates = {
        let (client, owned, payload) = (client.clone(), owned.clone(), payload.to_owned());
        closed_loop(args.concurrency, args.seconds, move |w, i| {
            let (mut kv, owned, payload) = (client.kv_client(), owned.clone(), payload.clone());
            async move {
                let (key, rev) = {
                    let mine = owned[w].lock().unwrap();
                    mine[i as usize % mine.len()].clone()
                };
                let value = config_map(&key, &payload).to_vec();
                let txn = Txn::new()
                    .when([Compare::mod_revision(
                        key.clone(),
                        CompareOp::Equal,
                        rev as i64,
                    )])
                    .and_then([TxnOp::put(key.clone(), value, None)])
                    .or_else([TxnOp::get(key.clone(), None)]);
                let response = kv.txn(txn).await?;
                anyhow::ensure!(response.succeeded(), "conflict");
                let rev = response.header().map_or(0, |h| h.revision()) as u64;
                let mut mine = owned[w].lock().unwrap();
                let slot = i as usize % mine.len();
                mine[slot].1 = rev;
                Ok(())
            }
        })
        .await
    };
    (creates, updates)
}

/// Opens `watchers` watches over the replicas, creates stamped objects through the first, and
/// returns the stamp-to-read latency of every delivery and how many were expected.
async fn fan_out(args: &Args, replicas: &[SocketAddr], payload: &str) -> (Samples, usize) {
    let mut conn = http::Conn::connect(replicas[0]).await.unwrap();
    let list = conn
        .expect(
            Method::GET,
            "/api/v1/namespaces/bench/configmaps?limit=1",
            None,
            StatusCode::OK,
        )
        .await
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(args.watchers.max(1));
    let mut tasks = Vec::new();
    for w in 0..args.watchers {
        let addr = replicas[w % replicas.len()];
        let path = format!(
            "/api/v1/namespaces/bench/configmaps?watch=true&resourceVersion={rv}&labelSelector=fanout%3Dyes&timeoutSeconds=120"
        );
        let (latencies, ready, want) = (latencies.clone(), ready_tx.clone(), args.watch_events);
        tasks.push(tokio::spawn(async move {
            let mut conn = http::Conn::connect(addr).await?;
            let response = conn.start(Method::GET, &path, None).await?;
            let _ = ready.send(()).await;
            let mut body = response.into_body();
            let mut buffer = Vec::new();
            let mut seen = 0;
            while seen < want {
                let Some(frame) = body.frame().await else {
                    break;
                };
                let Ok(data) = frame?.into_data() else {
                    continue;
                };
                let now = now_micros();
                buffer.extend_from_slice(&data);
                while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    let event: serde_json::Value = serde_json::from_slice(&line)?;
                    if event["type"] == "ADDED" {
                        let stamp: u64 = event["object"]["data"]["stamp"]
                            .as_str()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(now);
                        latencies
                            .lock()
                            .unwrap()
                            .push(Duration::from_micros(now.saturating_sub(stamp)));
                        seen += 1;
                    }
                }
            }
            anyhow::Ok(())
        }));
    }
    for _ in 0..args.watchers {
        ready_rx.recv().await;
    }
    // Let the last watches reach their store position before the writes start.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pause = Duration::from_secs_f64(1.0 / args.watch_rate.max(0.1));
    for i in 0..args.watch_events {
        let mut object: serde_json::Value =
            serde_json::from_slice(&config_map(&format!("fan-{i}"), payload)).unwrap();
        object["metadata"]["labels"] = json!({"fanout": "yes"});
        conn.expect(
            Method::POST,
            "/api/v1/namespaces/bench/configmaps",
            Some(Bytes::from(object.to_string())),
            StatusCode::CREATED,
        )
        .await
        .unwrap();
        tokio::time::sleep(pause).await;
    }
    let mut failures = 0;
    for task in tasks {
        match tokio::time::timeout(Duration::from_secs(60), task).await {
            Ok(Ok(Ok(()))) => {}
            _ => failures += 1,
        }
    }
    let latencies = std::mem::take(&mut *latencies.lock().unwrap());
    (
        Samples {
            latencies,
            failures,
            elapsed: Duration::ZERO,
        },
        args.watchers * args.watch_events,
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let binary = match &args.server {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("binary directory")?
            .join("kapi"),
    };
    let cluster = tokio::task::spawn_blocking(etcd::EtcdCluster::single).await?;
    let endpoints = cluster.endpoints_flag();
    let replicas = [
        Replica::start(&binary, &endpoints)?,
        Replica::start(&binary, &endpoints)?,
    ];
    let payload = "x".repeat(args.payload_bytes);

    let (mut raw_create, mut raw_update) = raw_phases(&args, cluster.endpoints(), &payload).await;
    let (mut api_create, mut api_update) = server_phases(&args, replicas[0].addr, &payload).await;
    let addrs: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
    let (mut fan, expected) = fan_out(&args, &addrs, &payload).await;

    println!(
        "| figure | through kapi over etcd | raw etcd txn | ratio (target ≥ 0.5) |\n|---|---|---|---|"
    );
    for (what, api, raw) in [
        ("create", &mut api_create, &mut raw_create),
        ("update", &mut api_update, &mut raw_update),
    ] {
        println!(
            "| {what} throughput ({} in flight) | {:.0}/s | {:.0}/s | {:.2} |",
            args.concurrency,
            api.throughput(),
            raw.throughput(),
            api.throughput() / raw.throughput().max(1e-9)
        );
        println!(
            "| {what} p50 / p99 | {} / {} | {} / {} | |",
            ms(api.quantile(0.5)),
            ms(api.quantile(0.99)),
            ms(raw.quantile(0.5)),
            ms(raw.quantile(0.99)),
        );
        println!(
            "| {what} failures | {} | {} | |",
            api.failures, raw.failures
        );
    }
    println!(
        "| watch fan-out: {} watchers on 2 replicas, {} events | delivered {}/{expected}, p50 {}, p99 {}, max {} | | |",
        args.watchers,
        args.watch_events,
        fan.latencies.len(),
        ms(fan.quantile(0.5)),
        ms(fan.quantile(0.99)),
        ms(fan.quantile(1.0)),
    );
    if fan.failures > 0 {
        println!("\n{} watchers ended early", fan.failures);
    }
    Ok(())
}
