//! `kapi-load`: a load generator for the kapi API server over its embedded store (issue #5).
//!
//! It starts the real `kapi serve` binary on an empty data directory and measures, in order:
//! start → ready; creates, gets and updates of ConfigMaps in open loop at a fixed rate and in
//! closed loop at full concurrency (the creates fill the store to `--objects`); memory and disk
//! per stored object; listing all of them whole and in pages; watch delivery to many
//! concurrent watchers; and start → ready again over the filled store, after a clean stop and
//! after SIGKILL. It prints one table with the targets beside the figures, and exits 0
//! whether or not they were met.

mod crud;
mod drive;
mod floor;
mod http;
mod list;
mod report;
mod server;
mod slow;
mod stats;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use hyper::{Method, StatusCode};

use crate::crud::{Op, Workload};
use crate::drive::{Phase, Until, closed_loop, open_loop};
use crate::http::Conn;
use crate::report::Report;
use crate::server::{Server, Startup, Stop};
use crate::stats::ms;

/// Load generator for the kapi API server (embedded store).
#[derive(Debug, Parser)]
#[command(name = "kapi-load")]
struct Args {
    /// The `kapi` server binary [default: `kapi` beside this binary].
    #[arg(long, value_name = "FILE")]
    server: Option<PathBuf>,
    /// Where the server's temporary data directory goes (a real disk, so fsync costs what it
    /// costs) [default: the system temporary directory].
    #[arg(long, value_name = "DIR")]
    tmp_dir: Option<PathBuf>,
    /// Open-loop rate of creates, gets and updates, per second.
    #[arg(long, default_value_t = 500.0)]
    rate: f64,
    /// How long each open-loop phase runs, in seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// How many ConfigMaps the store holds for the list and memory figures.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Bytes of data in each ConfigMap besides its stamp.
    #[arg(long, default_value_t = 256)]
    payload_bytes: usize,
    /// Connections the open-loop phases share.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// Connections of the closed-loop (maximum throughput) phases.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// How long each closed-loop get and update phase runs, in seconds.
    #[arg(long, default_value_t = 5)]
    max_seconds: u64,
    /// How many times each list is repeated.
    #[arg(long, default_value_t = 5)]
    list_runs: usize,
    /// Page size of the paginated list.
    #[arg(long, default_value_t = 500)]
    page_limit: usize,
    /// Concurrent watch streams.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,
    /// Objects created while the watches are open.
    #[arg(long, default_value_t = 100)]
    watch_events: usize,
    /// Rate of those creates, per second.
    #[arg(long, default_value_t = 20.0)]
    watch_rate: f64,
    /// Carry the watches as HTTP/2 streams (prior knowledge), this many per connection, as
    /// clients that multiplex do; 0 (the default): one HTTP/1.1 connection per watch, as
    /// kubectl and the Python client over plain HTTP. At most 250, the server's limit of
    /// concurrent streams per connection (a stream beyond it would wait for a free one).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=250))]
    watch_streams_per_connection: u16,
    /// Slow connections (request heads sent a line a second, never finished) held open while
    /// the gets are measured once more.
    #[arg(long, default_value_t = 1000)]
    slow_connections: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("kapi-load: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        // Dropping `run` on Ctrl-C drops the server guard, which kills the server and removes
        // its directory.
        tokio::select! {
            outcome = run(args) => outcome,
            _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
        }
    });
    match outcome {
        Ok(report) => {
            println!("{}", report.render());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kapi-load: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<Report> {
    let binary = match &args.server {
        Some(path) => path.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("the directory of this binary")?
            .join("kapi"),
    };
    let tmp = args.tmp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut report = Report::default();
    let epoch = Instant::now();

    progress("starting the server");
    let (mut server, cold) = Server::start(&binary, &tmp).await?;
    startup(&mut report, "start → ready, empty store", cold);
    let addr = server.addr();

    let work = Arc::new(Workload::new(
        "kapi-load",
        args.objects,
        args.payload_bytes,
        epoch,
    ));
    let mut admin = Conn::connect(addr).await?;
    work.create_namespace(&mut admin).await?;
    let mut pool = Conn::connect_many(addr, args.concurrency.max(args.connections)).await?;
    warm_up(&mut pool, work.namespace()).await?;
    let concurrency = pool.len();
    let rss_empty = server.rss()?;
    let disk_empty = server.data_size()?;

    let open_count = ((args.rate * args.seconds as f64) as usize).min(args.objects) as u64;
    let open = |what: &str| {
        progress(&format!(
            "{what}: {open_count} in open loop at {}/s",
            args.rate
        ))
    };
    let split = |mut pool: Vec<Conn>| {
        let rest = pool.split_off(args.connections.min(pool.len()));
        (pool, rest)
    };

    open("creates");
    let (conns, rest) = split(pool);
    let cpu = server.cpu()?;
    let (phase, conns) = open_loop(
        conns,
        Arc::clone(&work),
        Op::Create,
        0,
        open_count,
        args.rate,
    )
    .await;
    let used = server.cpu()? - cpu;
    open_row(&mut report, "create", &phase, args.rate, true, used);
    pool = rejoin(conns, rest);

    progress(&format!(
        "creates: up to {} at full concurrency",
        args.objects
    ));
    let until = Until::Index(args.objects as u64);
    let cpu = server.cpu()?;
    let (phase, conns) = closed_loop(pool, Arc::clone(&work), Op::Create, open_count, until).await;
    let used = server.cpu()? - cpu;
    closed_row(&mut report, "create", &phase, concurrency, used);
    pool = conns;

    let rss_full = server.rss()?;
    let disk_full = server.data_size()?;
    let per = |before: u64, after: u64| after.saturating_sub(before) as f64 / args.objects as f64;
    report.figure(
        format!("server RSS per stored object ({} objects)", args.objects),
        format!(
            "{:.0} B ({:.1} → {:.1} MiB)",
            per(rss_empty, rss_full),
            mib(rss_empty),
            mib(rss_full)
        ),
    );
    report.figure(
        "data dir per stored object",
        format!(
            "{:.0} B ({:.1} → {:.1} MiB)",
            per(disk_empty, disk_full),
            mib(disk_empty),
            mib(disk_full)
        ),
    );

    let mut get_p99 = Duration::ZERO;
    for (op, name, target) in [(Op::Get, "get", false), (Op::Update, "update", true)] {
        open(name);
        let (conns, rest) = split(pool);
        let cpu = server.cpu()?;
        let (phase, conns) =
            open_loop(conns, Arc::clone(&work), op, 0, open_count, args.rate).await;
        let used = server.cpu()? - cpu;
        open_row(&mut report, name, &phase, args.rate, target, used);
        if op == Op::Get {
            get_p99 = phase.latency.p99();
        }
        pool = rejoin(conns, rest);

        progress(&format!(
            "{name}: {} s at full concurrency",
            args.max_seconds
        ));
        let until = Until::Elapsed(Duration::from_secs(args.max_seconds));
        // Start past the open loop's indices so updates begin at objects it did not touch.
        let cpu = server.cpu()?;
        let (phase, conns) = closed_loop(pool, Arc::clone(&work), op, open_count, until).await;
        let used = server.cpu()? - cpu;
        closed_row(&mut report, name, &phase, concurrency, used);
        pool = conns;
    }

    progress(&format!(
        "get: {open_count} in open loop at {}/s beside {} slow connections",
        args.rate, args.slow_connections
    ));
    let slow = slow::open(addr, args.slow_connections).await?;
    let (conns, rest) = split(pool);
    let (phase, conns) =
        open_loop(conns, Arc::clone(&work), Op::Get, 0, open_count, args.rate).await;
    drop(slow);
    pool = rejoin(conns, rest);
    let delay = phase.latency.p99().saturating_sub(get_p99);
    report.target(
        format!(
            "get, open loop {}/s beside {} slow connections: p99 (its delay over the get without them)",
            args.rate, args.slow_connections
        ),
        format!("{} (+{})", ms(phase.latency.p99()), ms(delay)),
        "delay ≤ 10 ms",
        delay <= Duration::from_millis(10) && phase.latency.errors() == 0,
    );
    errors_note(&mut report, "get beside slow connections", &phase.latency);

    progress("lists");
    let cpu = server.cpu()?;
    let (whole, bytes) =
        list::whole(&mut admin, &work.collection(), args.objects, args.list_runs).await?;
    let per_object = (server.cpu()? - cpu) / (args.objects * args.list_runs.max(1)) as u32;
    report.target(
        format!(
            "list {} objects whole, median of {} (min / max)",
            args.objects, args.list_runs
        ),
        format!(
            "{} ({} / {}), {:.1} MiB",
            ms(whole.p50()),
            ms(whole.min()),
            ms(whole.max()),
            mib(bytes as u64)
        ),
        "≤ 100 ms",
        whole.p50() <= Duration::from_millis(100),
    );
    report.figure(
        "list: server CPU per listed object",
        format!("{:.1} µs", per_object.as_secs_f64() * 1e6),
    );
    let (paged, pages) = list::paged(
        &mut admin,
        &work.collection(),
        args.objects,
        args.page_limit,
        args.list_runs,
    )
    .await?;
    report.figure(
        format!(
            "list {} objects in {pages} pages of {}, median (min / max)",
            args.objects, args.page_limit
        ),
        format!(
            "{} ({} / {})",
            ms(paged.p50()),
            ms(paged.min()),
            ms(paged.max())
        ),
    );
    drop(pool);

    progress(&format!("watch: opening {} watches", args.watchers));
    let watched = Arc::new(Workload::new(
        "kapi-load-watch",
        args.watch_events,
        args.payload_bytes,
        epoch,
    ));
    watched.create_namespace(&mut admin).await?;
    let rss_before = server.rss()?;
    let transport = match args.watch_streams_per_connection {
        0 => watch::Transport::Http1,
        n => watch::Transport::Http2 {
            streams: usize::from(n),
        },
    };
    let watchers = watch::open(
        addr,
        &watched,
        args.watchers,
        args.watch_events,
        transport,
        epoch,
    )
    .await?;
    let rss_watching = server.rss()?;
    report.figure(
        format!("open {} watches concurrently", args.watchers),
        format!(
            "{} total; server RSS +{:.1} KiB per watch",
            ms(watchers.opened_in),
            rss_watching.saturating_sub(rss_before) as f64 / 1024.0 / args.watchers.max(1) as f64
        ),
    );
    progress(&format!(
        "watch: {} creates at {}/s",
        args.watch_events, args.watch_rate
    ));
    let writers = Conn::connect_many(addr, 4).await?;
    let (server_cpu, own_cpu) = (server.cpu()?, server::own_cpu()?);
    let (delivery, _writers) = watchers
        .deliver(
            writers,
            Arc::clone(&watched),
            args.watch_events,
            args.watch_rate,
        )
        .await;
    let lost = if delivery.missing + delivery.errors > 0 {
        format!(
            "; {} deliveries missing, {} errors",
            delivery.missing, delivery.errors
        )
    } else {
        String::new()
    };
    report.target(
        format!(
            "watch delivery, {} watchers{} × {} events at {}/s: p50 / p99 / max",
            args.watchers,
            transport.describe(),
            args.watch_events,
            args.watch_rate
        ),
        format!(
            "{} / {} / {}{lost}",
            ms(delivery.latency.p50()),
            ms(delivery.latency.p99()),
            ms(delivery.latency.max())
        ),
        "p99 ≤ 5 ms",
        delivery.latency.p99() <= Duration::from_millis(5) && delivery.missing == 0,
    );
    report.figure(
        "watch delivery counted from the create's response, p50 / p99",
        format!(
            "{} / {}",
            ms(delivery.after_answer.p50()),
            ms(delivery.after_answer.p99())
        ),
    );
    report.figure(
        "watch: until the last watcher has an event, p50 / max",
        format!("{} / {}", ms(delivery.last.p50()), ms(delivery.last.max())),
    );
    report.figure(
        "watch: the creates themselves, p50 / p99",
        format!(
            "{} / {}",
            ms(delivery.writes.latency.p50()),
            ms(delivery.writes.latency.p99())
        ),
    );
    let deliveries = delivery.latency.count().max(1) as f64;
    let micros = |d: Duration| d.as_secs_f64() * 1e6 / deliveries;
    report.figure(
        "watch: CPU per delivered event, server / load generator",
        format!(
            "{:.1} µs / {:.1} µs",
            micros(server.cpu()? - server_cpu),
            micros(server::own_cpu()? - own_cpu)
        ),
    );
    progress("watch floor: the same fan-out over bare loopback sockets");
    let own_before = server::own_cpu()?;
    let floor = floor::run(args.watchers, args.watch_events, args.watch_rate).await?;
    let floor_cpu = server::own_cpu()? - own_before;
    report.figure(
        format!(
            "floor of this machine: the same fan-out by {} bare sockets (one task and write each, \
             no HTTP, writer and readers in one process), p50 / p99 / max; CPU per delivery",
            args.watchers
        ),
        format!(
            "{} / {} / {}{}; {:.1} µs (both ends)",
            ms(floor.p50()),
            ms(floor.p99()),
            ms(floor.max()),
            if floor.errors() > 0 {
                format!(" ({} errors)", floor.errors())
            } else {
                String::new()
            },
            floor_cpu.as_secs_f64() * 1e6 / floor.count().max(1) as f64
        ),
    );
    errors_note(&mut report, "watch creates", &delivery.writes.latency);

    drop(admin);
    for (how, what) in [(Stop::Term, "SIGTERM"), (Stop::Kill, "SIGKILL")] {
        progress(&format!("restarting over the filled store after {what}"));
        let warm = server.restart(how).await?;
        startup(
            &mut report,
            &format!(
                "start → ready, {} objects stored, after {what}",
                args.objects
            ),
            warm,
        );
    }
    drop(server);
    Ok(report)
}

/// Each connection reads the namespace a few times, so buffers and per-connection state exist
/// before the empty-store memory baseline is taken.
async fn warm_up(pool: &mut Vec<Conn>, namespace: &str) -> Result<()> {
    let path = format!("/api/v1/namespaces/{namespace}");
    let tasks: Vec<_> = std::mem::take(pool)
        .into_iter()
        .map(|mut conn| {
            let path = path.clone();
            tokio::spawn(async move {
                for _ in 0..5 {
                    conn.expect(Method::GET, &path, None, StatusCode::OK)
                        .await?;
                }
                anyhow::Ok(conn)
            })
        })
        .collect();
    for task in tasks {
        pool.push(task.await??);
    }
    Ok(())
}

fn rejoin(mut conns: Vec<Conn>, rest: Vec<Conn>) -> Vec<Conn> {
    conns.extend(rest);
    conns
}

fn startup(report: &mut Report, what: &str, startup: Startup) {
    report.figure(format!("{what}: ready line printed"), ms(startup.line));
    report.target(
        format!("{what}: /readyz 200"),
        ms(startup.readyz),
        "≤ 200 ms",
        startup.readyz <= Duration::from_millis(200),
    );
}

fn open_row(
    report: &mut Report,
    name: &str,
    phase: &Phase,
    rate: f64,
    target: bool,
    server_cpu: Duration,
) {
    let figure = format!("{name}, open loop {rate}/s: p50 / p99 / max (achieved rate)");
    let measured = format!(
        "{} / {} / {} ({:.0}/s)",
        ms(phase.latency.p50()),
        ms(phase.latency.p99()),
        ms(phase.latency.max()),
        phase.throughput()
    );
    if target {
        report.target(
            figure,
            measured,
            "p99 ≤ 10 ms",
            phase.latency.p99() <= Duration::from_millis(10) && phase.latency.errors() == 0,
        );
    } else {
        report.figure(figure, measured);
    }
    report.figure(
        format!("{name}, open loop: dispatch delay p99; server CPU per {name}"),
        format!(
            "{}; {}",
            ms(phase.wait.p99()),
            per_op(server_cpu, phase.latency.count())
        ),
    );
    errors_note(report, name, &phase.latency);
}

fn closed_row(
    report: &mut Report,
    name: &str,
    phase: &Phase,
    concurrency: usize,
    server_cpu: Duration,
) {
    report.figure(
        format!(
            "{name}, {concurrency} connections back to back: throughput (p50 / p99); server CPU per {name}"
        ),
        format!(
            "{:.0}/s ({} / {}); {}",
            phase.throughput(),
            ms(phase.latency.p50()),
            ms(phase.latency.p99()),
            per_op(server_cpu, phase.latency.count())
        ),
    );
    errors_note(
        report,
        &format!("{name} at full concurrency"),
        &phase.latency,
    );
}

/// CPU time per operation, in microseconds.
fn per_op(cpu: Duration, ops: usize) -> String {
    format!("{:.0} µs", cpu.as_secs_f64() * 1e6 / ops.max(1) as f64)
}

fn errors_note(report: &mut Report, name: &str, summary: &stats::Summary) {
    if summary.errors() > 0 {
        report.note(format!(
            "{name}: {} operations failed; the first: {}",
            summary.errors(),
            summary.first_error().unwrap_or("?")
        ));
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn progress(what: &str) {
    eprintln!("kapi-load: {what}");
}
