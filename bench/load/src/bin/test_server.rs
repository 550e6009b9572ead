//! `kapi-test-load`: the in-process test server (`kapi-test`, issue #12) measured in one run.
//!
//! 1. start → ready of `TestServer::start()` (the 1.36 built-ins, in memory), `--starts` times
//!    in this process, and the `kapi serve` binary's start → `/readyz` 200 on an empty data
//!    directory, `--binary-starts` times, as the peer: the ratio of the medians;
//! 2. a hundred servers started and stopped one after another in this process: threads, open
//!    file descriptors and resident memory before and after;
//! 3. the example operator's whole test (`--operator-test`, the prebuilt test binary), wall
//!    time of the process, `--operator-runs` times.
//!
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
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use kapi_test::{Release, TestServer};

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "The in-process test server: start, a hundred starts, the operator test")]
struct Args {
    /// The `kapi` binary (the peer for start → ready).
    #[arg(long)]
    server: PathBuf,
    /// The example operator's prebuilt test binary.
    #[arg(long)]
    operator_test: PathBuf,
    /// Where the binary's data directories go.
    #[arg(long, default_value = "/tmp")]
    tmp_dir: PathBuf,
    /// Test server starts to time.
    #[arg(long, default_value_t = 50)]
    starts: usize,
    /// `kapi serve` starts to time.
    #[arg(long, default_value_t = 10)]
    binary_starts: usize,
    /// Servers started and stopped for the leak figures.
    #[arg(long, default_value_t = 100)]
    servers: usize,
    /// Runs of the operator test.
    #[arg(long, default_value_t = 10)]
    operator_runs: usize,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut rows = Vec::new();

    // 1. Start → ready, in process and the binary.
    let mut harness = Vec::new();
    for _ in 0..args.starts {
        let started = Instant::now();
        let server = runtime.block_on(TestServer::start())?;
        harness.push(started.elapsed());
        if server.release() != Some(Release::V1_36) {
            bail!("the benchmark measures the 1.36 built-ins");
        }
        drop(server);
    }
    let first = harness[0];
    let harness = median(&harness[1..]);
    let mut binary = Vec::new();
    for _ in 0..args.binary_starts {
        let (server, startup) =
            runtime.block_on(server::Server::start(&args.server, &args.tmp_dir))?;
        binary.push(startup.readyz);
        drop(server);
    }
    let binary = median(&binary);
    rows.push(row(
        "TestServer::start(), 1.36 built-ins, memory: median (first start)",
        format!("{} ({})", ms(harness), ms(first)),
        "≤ 15 ms",
        harness <= Duration::from_millis(15),
    ));
    rows.push(row(
        "`kapi serve` → /readyz 200, empty data dir: median (peer)",
        ms(binary),
        "",
        true,
    ));
    rows.push(row(
        "start → ready, binary / TestServer (ratio of medians)",
        format!("{:.1}×", binary.as_secs_f64() / harness.as_secs_f64()),
        "",
        true,
    ));

    // 2. A hundred servers in one process.
    drop(runtime.block_on(TestServer::start())?);
    let before = Process::read()?;
    let started = Instant::now();
    for _ in 0..args.servers {
        let server = runtime.block_on(TestServer::start())?;
        drop(server);
    }
    let took = started.elapsed();
    let after = Process::read()?;
    rows.push(row(
        &format!(
            "{} servers started and stopped: threads, fds before → after",
            args.servers
        ),
        format!(
            "{} → {}, {} → {}",
            before.threads, after.threads, before.fds, after.fds
        ),
        "no growth",
        after.threads <= before.threads && after.fds <= before.fds,
    ));
    rows.push(row(
        &format!("{} servers: RSS before → after (wall)", args.servers),
        format!(
            "{:.1} → {:.1} MiB ({})",
            mib(before.rss),
            mib(after.rss),
            ms(took)
        ),
        "growth < 1 MiB",
        after.rss < before.rss + 1024 * 1024,
    ));

    // 3. The operator test, as a process.
    let mut walls = Vec::new();
    for _ in 0..args.operator_runs {
        let started = Instant::now();
        let status = Command::new(&args.operator_test)
            .arg("--test-threads=1")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .with_context(|| format!("running {}", args.operator_test.display()))?;
        walls.push(started.elapsed());
        if !status.success() {
            bail!("the operator test failed: {status}");
        }
    }
    let wall = median(&walls);
    rows.push(row(
        "example operator test (process wall): median",
        ms(wall),
        "≤ 150 ms",
        wall <= Duration::from_millis(150),
    ));

    println!("| figure | measured | target | met |\n|---|---:|---|---|");
    for line in rows {
        println!("{line}");
    }
    Ok(())
}

fn row(figure: &str, measured: impl std::fmt::Display, target: &str, met: bool) -> String {
    let verdict = match (target.is_empty(), met) {
        (true, _) => "",
        (false, true) => "**met**",
        (false, false) => "not met",
    };
    format!("| {figure} | {measured} | {target} | {verdict} |")
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// This process's threads, open descriptors and resident memory, from /proc.
struct Process {
    threads: usize,
    fds: usize,
    rss: u64,
}

impl Process {
    fn read() -> Result<Process> {
        let count = |dir: &str| -> Result<usize> {
            Ok(std::fs::read_dir(dir)
                .with_context(|| format!("reading {dir}"))?
                .count())
        };
        let status = std::fs::read_to_string("/proc/self/status")?;
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS in /proc/self/status")?;
        Ok(Process {
            threads: count("/proc/self/task")?,
            fds: count("/proc/self/fd")?,
            rss: kib * 1024,
        })
    }
}
