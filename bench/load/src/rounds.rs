//! What benchmarks that alternate rounds of two variants share: the process's CPU time, the
//! median of the rounds, and a round of creates in closed loop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use bytes::Bytes;
use hyper::{Method, StatusCode};

use crate::http::Conn;

/// The CPU time this process has used (user and system, all threads), from `/proc/self/stat`
/// in clock ticks of 1/100 s (Linux's `USER_HZ`).
pub(crate) fn cpu_time() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        bail!("no command in /proc/self/stat");
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
    let mut fields = rest.split_whitespace().skip(11);
    let (Some(user), Some(system)) = (fields.next(), fields.next()) else {
        bail!("no CPU times in /proc/self/stat");
    };
    let ticks = user.parse::<u64>()? + system.parse::<u64>()?;
    Ok(Duration::from_millis(ticks * 10))
}

/// The median of `values` (the upper one of an even count).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One round's figures.
#[allow(dead_code, reason = "kapi-semantics-load's and kapi-cel-load's")]
pub(crate) struct Round {
    /// Creates per second.
    pub(crate) rate: f64,
    /// CPU microseconds per create (the whole process's, client included).
    pub(crate) cpu: f64,
}

/// Creates in closed loop for `seconds` over `concurrency` connections to `addr`: each a POST
/// of `body(name)` to `path` that must answer 201.
#[allow(dead_code, reason = "kapi-semantics-load's and kapi-cel-load's")]
pub(crate) async fn creates(
    addr: SocketAddr,
    path: &'static str,
    concurrency: usize,
    seconds: u64,
    body: fn(&str) -> Bytes,
) -> Result<Round> {
    let created = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let created = created.clone();
        let mut conn = Conn::connect(addr).await?;
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while Instant::now() < deadline {
                let name = format!("o-{worker}-{n}");
                conn.expect(Method::POST, path, Some(body(&name)), StatusCode::CREATED)
                    .await?;
                created.fetch_add(1, Ordering::Relaxed);
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
    let n = created.load(Ordering::Relaxed) as f64;
    Ok(Round {
        rate: n / started.elapsed().as_secs_f64(),
        cpu: cpu * 1e6 / n,
    })
}
