//! The two ways operations are issued.
//!
//! - Open loop: operation i is due at `start + i / rate` whatever happened before it, and its
//!   latency runs from that due time to its response. A stalled server therefore shows up in the
//!   latency of every operation that had to wait, not only the one that stalled (no coordinated
//!   omission). Due operations queue in one channel that every connection takes from.
//! - Closed loop: each connection issues its next operation as soon as the previous one
//!   answered, which finds the throughput at that concurrency; latency is the service time.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, mpsc};

use crate::crud::{Op, Workload};
use crate::http::Conn;
use crate::stats::{Samples, Summary};

/// What one driven phase measured.
#[derive(Debug)]
pub(crate) struct Phase {
    /// Per-operation latency: from the due time (open loop) or the send (closed loop).
    pub(crate) latency: Summary,
    /// Open loop only: how long due operations waited for a free connection, timer lateness
    /// included; the client's share of the latency.
    pub(crate) wait: Summary,
    /// From the first due time to the last response.
    pub(crate) span: Duration,
}

impl Phase {
    /// Completed operations per second over the phase.
    pub(crate) fn throughput(&self) -> f64 {
        crate::stats::rate(self.latency.count(), self.span)
    }
}

/// Issues operations `first..first + count` at `rate` per second over `conns`.
pub(crate) async fn open_loop(
    conns: Vec<Conn>,
    work: Arc<Workload>,
    op: Op,
    first: u64,
    count: u64,
    rate: f64,
) -> (Phase, Vec<Conn>) {
    let (tx, rx) = mpsc::unbounded_channel::<(u64, Instant)>();
    // Unbounded because the scheduler must never block: a full queue would hold back due
    // operations, which is exactly the omission the open loop exists to avoid.
    let rx = Arc::new(Mutex::new(rx));
    let workers: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let rx = Arc::clone(&rx);
            let work = Arc::clone(&work);
            tokio::spawn(async move {
                let mut latency = Samples::with_capacity(count as usize);
                let mut wait = Samples::default();
                let mut last = None;
                loop {
                    // The lock only serialises taking a job; it is released before the request.
                    let job = rx.lock().await.recv().await;
                    let Some((i, due)) = job else { break };
                    wait.record(due.elapsed());
                    match work.run(op, &mut conn, i).await {
                        Ok(()) => latency.record(due.elapsed()),
                        Err(e) => {
                            latency.fail(format!("{e:#}"));
                            let _ = conn.revive().await;
                        }
                    }
                    last = Some(Instant::now());
                }
                (latency, wait, last, conn)
            })
        })
        .collect();

    // The schedule runs on its own thread with the OS's sleep, which wakes within tens of
    // microseconds; the async runtime's timer rounds up to whole milliseconds, which at 500/s
    // would put up to half an interval of the load generator's own lateness into every latency.
    let start = Instant::now();
    let scheduler = std::thread::spawn(move || {
        for n in 0..count {
            let due = start + Duration::from_secs_f64(n as f64 / rate);
            if let Some(ahead) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(ahead);
            }
            if tx.send((first + n, due)).is_err() {
                break;
            }
        }
    });
    let collected = collect(workers, start).await;
    // The workers only finish once the scheduler dropped its sender, so this does not block.
    let _ = scheduler.join();
    collected
}

/// When a closed loop stops.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Until {
    /// After operation index reaches this value (exclusive).
    Index(u64),
    /// After this long.
    Elapsed(Duration),
}

/// Issues operations from `first` on, each connection back to back, until `until`.
pub(crate) async fn closed_loop(
    conns: Vec<Conn>,
    work: Arc<Workload>,
    op: Op,
    first: u64,
    until: Until,
) -> (Phase, Vec<Conn>) {
    let next = Arc::new(AtomicU64::new(first));
    let start = Instant::now();
    let workers: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let next = Arc::clone(&next);
            let work = Arc::clone(&work);
            tokio::spawn(async move {
                let mut latency = Samples::with_capacity(4096);
                let mut last = None;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let done = match until {
                        Until::Index(end) => i >= end,
                        Until::Elapsed(d) => start.elapsed() >= d,
                    };
                    if done {
                        break;
                    }
                    let sent = Instant::now();
                    match work.run(op, &mut conn, i).await {
                        Ok(()) => latency.record(sent.elapsed()),
                        Err(e) => {
                            latency.fail(format!("{e:#}"));
                            let _ = conn.revive().await;
                        }
                    }
                    last = Some(Instant::now());
                }
                (latency, Samples::default(), last, conn)
            })
        })
        .collect();
    collect(workers, start).await
}

type Worker = tokio::task::JoinHandle<(Samples, Samples, Option<Instant>, Conn)>;

async fn collect(workers: Vec<Worker>, start: Instant) -> (Phase, Vec<Conn>) {
    let mut latency = Samples::default();
    let mut wait = Samples::default();
    let mut end = start;
    let mut conns = Vec::with_capacity(workers.len());
    for worker in workers {
        match worker.await {
            Ok((l, w, last, conn)) => {
                latency.merge(l);
                wait.merge(w);
                end = end.max(last.unwrap_or(start));
                conns.push(conn);
            }
            Err(e) => latency.fail(format!("worker task failed: {e}")),
        }
    }
    let phase = Phase {
        latency: latency.summary(),
        wait: wait.summary(),
        span: end - start,
    };
    (phase, conns)
}
