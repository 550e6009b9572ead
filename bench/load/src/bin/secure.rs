//! `kapi-secure-load`: what security costs a request (issue 18).
//!
//! ConfigMap creates, each followed by a get of the created object, in closed loop at
//! `--concurrency` keep-alive connections against the in-process server with the 1.36
//! built-ins over a memory store, served two ways: plain HTTP without authentication (every
//! request the unsecured superuser, no authorization work), and TLS with bearer-token
//! authentication and RBAC, the user allowed by a RoleBinding to `edit` (so each request is
//! authenticated and its rules searched, not waved through as `system:masters`). Rounds
//! alternate between the two on fresh servers; the medians of requests per second and of CPU
//! per request (the whole process's, client included) and their ratios are printed as one
//! Markdown table.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark: a failed unwrap is a failed run"
)]

#[path = "../http.rs"]
#[allow(dead_code, unreachable_pub)]
mod http;
#[path = "../rounds.rs"]
mod rounds;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use bytes::Bytes;
use clap::Parser;
use hyper::header::HeaderValue;
use hyper::{Method, StatusCode};
use kapi::Registry;
use kapi::server::{Authentication, RunningServer, Server, Tls};
use kapi::storage::{EmbeddedOptions, EmbeddedStorage};

use crate::http::{Conn, Secure};
use crate::rounds::{cpu_time, median};

// The allocator the `kapi` server ships with (runtime/server/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "ConfigMap creates and gets over TLS with tokens and RBAC, and over plain HTTP")]
struct Args {
    /// Connections sending requests at once.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Seconds each round runs.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Rounds of each variant, alternating.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

const TOKEN: &str = "bench-token";
const PATH: &str = "/api/v1/namespaces/default/configmaps";

/// A server certificate for 127.0.0.1 and a client configuration that trusts it.
struct Certificates {
    chain: String,
    key: String,
    client: Arc<rustls::ClientConfig>,
}

fn certificates() -> Result<Certificates> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()])?;
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress([127, 0, 0, 1].into()));
    let cert = params.self_signed(&key)?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone())?;
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Certificates {
        chain: cert.pem(),
        key: key.serialize_pem(),
        client: Arc::new(client),
    })
}

/// A fresh server: plain and open, or TLS with the token of user `bench`, an editor of
/// `default`.
async fn server(secure: Option<&Certificates>) -> Result<RunningServer> {
    let mut registry = Registry::new();
    kapi_k8s::v1_36::register(&mut registry);
    let storage = Arc::new(EmbeddedStorage::in_memory(EmbeddedOptions::default())?);
    let mut builder = Server::builder().registry(registry).storage(storage);
    if let Some(certs) = secure {
        builder = builder
            .tls(Tls::from_pem(
                certs.chain.as_bytes(),
                certs.key.as_bytes(),
                None,
            )?)
            .authentication(Authentication::required().token(TOKEN, "bench", "1", &[]));
    }
    let running = builder.start().await?;
    if secure.is_some() {
        let binding = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bench-edit", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bench"}]});
        let request = hyper::Request::post(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        )
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(binding.to_string()))?;
        let answer = running.call(request).await;
        anyhow::ensure!(
            answer.status() == StatusCode::CREATED,
            "binding: {}",
            answer.status()
        );
    }
    Ok(running)
}

/// One round's figures.
struct Round {
    /// Requests per second.
    rate: f64,
    /// CPU microseconds per request.
    cpu: f64,
}

async fn connect(running: &RunningServer, secure: Option<&Secure>) -> Result<Conn> {
    match secure {
        Some(secure) => Conn::connect_secure(running.addr(), secure).await,
        None => Conn::connect(running.addr()).await,
    }
}

/// Requests per second and CPU per request over one round on a fresh server.
async fn round(certs: Option<&Certificates>, args: &Args) -> Result<Round> {
    let running = server(certs).await?;
    let secure = certs.map(|certs| Secure {
        connector: tokio_rustls::TlsConnector::from(Arc::clone(&certs.client)),
        authorization: HeaderValue::from_str(&format!("Bearer {TOKEN}")).unwrap(),
    });
    let body = |name: &str| {
        Bytes::from(
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name}, "data": {"k": "v"}})
            .to_string(),
        )
    };
    // The binding reaches the policy through a watch: wait until a request is allowed, so a
    // refusal is never counted as a fast request.
    let mut probe = connect(&running, secure.as_ref()).await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while probe.send(Method::POST, PATH, Some(body("probe"))).await?.0 != StatusCode::CREATED {
        anyhow::ensure!(Instant::now() < deadline, "the binding never took effect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let done = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let mut tasks = Vec::new();
    for worker in 0..args.concurrency {
        let done = done.clone();
        let mut conn = connect(&running, secure.as_ref()).await?;
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while Instant::now() < deadline {
                let name = format!("cm-{worker}-{n}");
                conn.expect(Method::POST, PATH, Some(body(&name)), StatusCode::CREATED)
                    .await?;
                conn.expect(Method::GET, &format!("{PATH}/{name}"), None, StatusCode::OK)
                    .await?;
                done.fetch_add(2, Ordering::Relaxed);
                n += 1;
            }
            anyhow::Ok(())
        }));
    }
    let started = Instant::now();
    let cpu_started = cpu_time()?;
    for task in tasks {
        task.await??;
    }
    let cpu = (cpu_time()? - cpu_started).as_secs_f64();
    let n = done.load(Ordering::Relaxed) as f64;
    let _ = running.shutdown().await;
    Ok(Round {
        rate: n / started.elapsed().as_secs_f64(),
        cpu: cpu * 1e6 / n,
    })
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let certs = certificates()?;
    let (mut secure, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..args.rounds {
        secure.push(runtime.block_on(round(Some(&certs), &args))?);
        plain.push(runtime.block_on(round(None, &args))?);
    }
    let rates = |rounds: &[Round]| median(rounds.iter().map(|r| r.rate).collect());
    let cpus = |rounds: &[Round]| median(rounds.iter().map(|r| r.cpu).collect());
    let (secure_rate, plain_rate) = (rates(&secure), rates(&plain));
    let (secure_cpu, plain_cpu) = (cpus(&secure), cpus(&plain));
    println!(
        "| ConfigMap create + get, {} in flight, in-process server, memory store | requests/s | CPU µs per request |",
        args.concurrency
    );
    println!("|---|---|---|");
    println!(
        "| TLS, bearer token, RBAC (a RoleBinding to `edit`) | {secure_rate:.0} | {secure_cpu:.0} |"
    );
    println!("| plain HTTP, no authentication | {plain_rate:.0} | {plain_cpu:.0} |");
    println!(
        "| ratio secure / plain (target ≥ 0.85) | {:.2} | {:.2} |",
        secure_rate / plain_rate,
        plain_cpu / secure_cpu
    );
    Ok(())
}
