//! Watch delivery: many concurrent watch streams on one namespace, then creates at a modest
//! rate, each stamped with its send time, and per watcher the time from that stamp to the
//! moment the event's line was read off the stream.
//!
//! Readers do no JSON parsing: they take the read time when a chunk arrives and find the stamp
//! by its key, so the load generator spends as little CPU as it can beside the server on a
//! shared machine.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::crud::{Op, Workload};
use crate::drive::{Phase, open_loop};
use crate::http::{Conn, Http2};
use crate::stats::{Samples, Summary};

/// How long watchers wait for events still in flight once the writer is done.
const DRAIN: Duration = Duration::from_secs(10);

/// Open watch streams, each with a reader task.
pub(crate) struct Watchers {
    readers: Vec<tokio::task::JoinHandle<Deliveries>>,
    stop: watch::Sender<bool>,
    /// How long opening all of them took.
    pub(crate) opened_in: Duration,
}

/// What one watcher read.
#[derive(Debug, Default)]
struct Deliveries {
    /// Per ADDED event carrying a stamp: its index, when it was sent and when it was read,
    /// both since the epoch.
    events: Vec<(usize, Duration, Duration)>,
    /// ERROR events, and streams that ended or failed before every event arrived.
    errors: u64,
}

/// What the watch scenario measured.
#[derive(Debug)]
pub(crate) struct Delivery {
    /// Every (watcher, event) delivery latency.
    pub(crate) latency: Summary,
    /// Every delivery counted from the moment the create was answered instead (zero when the
    /// event arrived first): the fan-out without the commit.
    pub(crate) after_answer: Summary,
    /// Per event: until the last watcher had it.
    pub(crate) last: Summary,
    /// Deliveries expected but not seen.
    pub(crate) missing: u64,
    /// ERROR events and broken streams.
    pub(crate) errors: u64,
    /// The creates that produced the events.
    pub(crate) writes: Phase,
}

/// How watch streams reach the server.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Transport {
    /// One HTTP/1.1 connection per watch.
    Http1,
    /// HTTP/2 streams, `streams` per connection.
    Http2 { streams: usize },
}

impl Transport {
    /// How the report names it.
    pub(crate) fn describe(self) -> String {
        match self {
            Transport::Http1 => " (HTTP/1.1, a connection each)".to_owned(),
            Transport::Http2 { streams } => {
                format!(" (HTTP/2, {streams} streams per connection)")
            }
        }
    }
}

/// A started watch and what must live as long as it: its HTTP/1.1 connection, or nothing
/// (an HTTP/2 connection lives while any of its senders does).
type Started = (Option<Conn>, hyper::Response<Incoming>);

/// Opens `count` watches on the workload's namespace from its current resourceVersion.
pub(crate) async fn open(
    addr: SocketAddr,
    work: &Workload,
    count: usize,
    events: usize,
    transport: Transport,
    epoch: Instant,
) -> Result<Watchers> {
    let mut conn = Conn::connect(addr).await?;
    let body = conn
        .expect(
            Method::GET,
            &format!("{}?limit=1", work.collection()),
            None,
            StatusCode::OK,
        )
        .await?;
    let list: Value = serde_json::from_slice(&body)?;
    let rv = list
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .context("the list has no resourceVersion")?;
    let path = format!("{}?watch=true&resourceVersion={rv}", work.collection());

    let started = Instant::now();
    let (stop, stopped) = watch::channel(false);
    let (ready_tx, mut ready_rx) = mpsc::channel::<Result<()>>(count.max(1));
    let mut readers = Vec::with_capacity(count);
    let mut shared: Option<(Http2, usize)> = None;
    for _ in 0..count {
        let path = path.clone();
        let ready = ready_tx.clone();
        let stopped = stopped.clone();
        let http2 = match transport {
            Transport::Http1 => None,
            Transport::Http2 { streams } => {
                let reuse = shared
                    .as_ref()
                    .is_some_and(|(_, used)| *used < streams.max(1));
                if !reuse {
                    shared = Some((Conn::connect_http2(addr).await?, 0));
                }
                shared.as_mut().map(|(conn, used)| {
                    *used += 1;
                    conn.clone()
                })
            }
        };
        readers.push(tokio::spawn(async move {
            let response: Result<Started> = async {
                let (conn, response) = match http2 {
                    Some(mut conn) => (None, conn.get(&path).await?),
                    None => {
                        let mut conn = Conn::connect(addr).await?;
                        let response = conn.start(Method::GET, &path, None).await?;
                        // The connection's sender must outlive the stream it carries.
                        (Some(conn), response)
                    }
                };
                if response.status() != StatusCode::OK {
                    bail!("watch answered {}", response.status());
                }
                Ok((conn, response))
            }
            .await;
            match response {
                Ok((conn, response)) => {
                    let _ = ready.send(Ok(())).await;
                    let read = read(response.into_body(), events, epoch, stopped).await;
                    drop(conn);
                    read
                }
                Err(e) => {
                    let _ = ready.send(Err(e)).await;
                    Deliveries::default()
                }
            }
        }));
    }
    drop(ready_tx);
    for _ in 0..count {
        match ready_rx.recv().await {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(e.context("opening a watch")),
            None => bail!("a watcher ended before its stream opened"),
        }
    }
    Ok(Watchers {
        readers,
        stop,
        opened_in: started.elapsed(),
    })
}

impl Watchers {
    /// Creates `events` objects at `rate` per second over `conns`, then collects what every
    /// watcher read.
    pub(crate) async fn deliver(
        self,
        conns: Vec<Conn>,
        work: Arc<Workload>,
        events: usize,
        rate: f64,
    ) -> (Delivery, Vec<Conn>) {
        let watchers = self.readers.len();
        let (writes, conns) =
            open_loop(conns, Arc::clone(&work), Op::Create, 0, events as u64, rate).await;
        let drain = tokio::time::sleep(DRAIN);
        tokio::pin!(drain);
        let mut all = Samples::with_capacity(watchers * events);
        let mut after_answer = Samples::with_capacity(watchers * events);
        let mut last: BTreeMap<usize, Duration> = BTreeMap::new();
        let mut errors = 0;
        let mut seen = 0u64;
        let mut stopped = false;
        for mut reader in self.readers {
            let read = tokio::select! {
                read = &mut reader => read,
                _ = &mut drain, if !stopped => {
                    // Readers still short of events stop now and hand back what they have.
                    let _ = self.stop.send(true);
                    stopped = true;
                    reader.await
                }
            };
            let Ok(read) = read else {
                errors += 1;
                continue;
            };
            errors += read.errors;
            for (index, sent, at) in read.events {
                seen += 1;
                let latency = at.saturating_sub(sent);
                all.record(latency);
                if let Some(answered) = work.answered(index) {
                    after_answer.record(at.saturating_sub(answered));
                }
                let entry = last.entry(index).or_default();
                *entry = (*entry).max(latency);
            }
        }
        let mut last_samples = Samples::with_capacity(last.len());
        for latency in last.into_values() {
            last_samples.record(latency);
        }
        let expected = (watchers * events) as u64;
        let delivery = Delivery {
            latency: all.summary(),
            after_answer: after_answer.summary(),
            last: last_samples.summary(),
            missing: expected.saturating_sub(seen),
            errors,
            writes,
        };
        (delivery, conns)
    }
}

/// Reads one watch stream until `events` stamped events arrived, the stream ended, or `stop`.
async fn read(
    mut body: Incoming,
    events: usize,
    epoch: Instant,
    mut stop: watch::Receiver<bool>,
) -> Deliveries {
    let mut out = Deliveries {
        events: Vec::with_capacity(events),
        errors: 0,
    };
    let mut pending: Vec<u8> = Vec::new();
    while out.events.len() < events {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = stop.wait_for(|s| *s) => break,
        };
        let at = Instant::now();
        let data = match frame {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            _ => {
                out.errors += 1;
                break;
            }
        };
        pending.extend_from_slice(&data);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if contains(&line, b"\"type\":\"ERROR\"") {
                out.errors += 1;
            } else if contains(&line, b"\"type\":\"ADDED\"")
                && let Some((index, sent)) = stamp(&line)
            {
                out.events.push((index, sent, at.duration_since(epoch)));
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The `"stamp":"<index>:<nanos>"` an object was created with.
fn stamp(line: &[u8]) -> Option<(usize, Duration)> {
    const KEY: &[u8] = b"\"stamp\":\"";
    let start = line.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let len = line[start..].iter().position(|&b| b == b'"')?;
    let text = std::str::from_utf8(&line[start..start + len]).ok()?;
    let (index, nanos) = text.split_once(':')?;
    let nanos: u64 = nanos.parse().ok()?;
    Some((index.parse().ok()?, Duration::from_nanos(nanos)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_read_from_event_lines() {
        let line = br#"{"type":"ADDED","object":{"data":{"stamp":"12:3000000","payload":"x"}}}"#;
        assert_eq!(stamp(line), Some((12, Duration::from_millis(3))));
        assert_eq!(stamp(br#"{"type":"ADDED","object":{}}"#), None);
        assert_eq!(stamp(br#"{"data":{"stamp":"bad"}}"#), None);
        assert!(contains(line, b"\"type\":\"ADDED\""));
        assert!(!contains(line, b"\"type\":\"ERROR\""));
    }
}
