//! The machine's floor for watch fan-out, measured in the same run as the server: as many
//! loopback TCP connections as watchers, each event a line of a watch event's size sent at the
//! same rate, and per connection one task woken for it that makes one write, read back by one
//! task per connection, all in this process. No HTTP, JSON or store: the least a server that
//! writes each watcher its own socket can cost here, so the server's delivery figure is read
//! against it.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::stats::{Samples, Summary};

/// Bytes of one event line: a ConfigMap event of the watch scenario is about this long.
const LINE_BYTES: usize = 600;

/// Fans `events` lines out to `connections` sockets at `rate` per second; answers the delivery
/// latencies (send to read) of every line on every connection.
pub(crate) async fn run(connections: usize, events: usize, rate: f64) -> Result<Summary> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let epoch = Instant::now();
    let (send, lines) = watch::channel(Bytes::new());
    let mut readers = Vec::with_capacity(connections);
    let mut writers = Vec::with_capacity(connections);
    for _ in 0..connections {
        let client = TcpStream::connect(addr).await.context("connecting")?;
        let (server, _) = listener.accept().await.context("accepting")?;
        server.set_nodelay(true)?;
        readers.push(tokio::spawn(read(client, events, epoch)));
        writers.push(tokio::spawn(write(server, lines.clone())));
    }
    drop(lines);
    let started = tokio::time::Instant::now();
    for event in 0..events {
        tokio::time::sleep_until(started + Duration::from_secs_f64(event as f64 / rate)).await;
        send.send_replace(line(epoch.elapsed()));
    }
    let mut samples = Samples::with_capacity(connections * events);
    for reader in readers {
        match tokio::time::timeout(Duration::from_secs(10), reader).await {
            Ok(Ok(read)) => samples.merge(read),
            _ => samples.fail("a reader did not finish"),
        }
    }
    drop(send);
    for writer in writers {
        writer.abort();
    }
    Ok(samples.summary())
}

/// An event line stamped with its send time (nanoseconds since the epoch, 20 digits).
fn line(sent: Duration) -> Bytes {
    let mut line = format!("{:020}", sent.as_nanos()).into_bytes();
    line.resize(LINE_BYTES - 1, b' ');
    line.push(b'\n');
    Bytes::from(line)
}

/// One connection's writer: woken for every line, writes it.
async fn write(mut socket: TcpStream, mut lines: watch::Receiver<Bytes>) {
    while lines.changed().await.is_ok() {
        let line = lines.borrow_and_update().clone();
        if socket.write_all(&line).await.is_err() {
            return;
        }
    }
}

/// One connection's reader: the latency of each of `events` lines.
async fn read(mut socket: TcpStream, events: usize, epoch: Instant) -> Samples {
    let mut samples = Samples::with_capacity(events);
    let mut pending: Vec<u8> = Vec::with_capacity(4 * LINE_BYTES);
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = 0;
    while seen < events {
        let n = match socket.read(&mut buf).await {
            Ok(0) | Err(_) => {
                samples.fail("connection ended early");
                break;
            }
            Ok(n) => n,
        };
        let at = epoch.elapsed();
        pending.extend_from_slice(&buf[..n]);
        while pending.len() >= LINE_BYTES {
            let sent = std::str::from_utf8(&pending[..20])
                .ok()
                .and_then(|digits| digits.parse::<u64>().ok())
                .map(Duration::from_nanos);
            match sent {
                Some(sent) => samples.record(at.saturating_sub(sent)),
                None => samples.fail("an unreadable line"),
            }
            pending.drain(..LINE_BYTES);
            seen += 1;
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_their_send_time() {
        let line = line(Duration::from_nanos(1_234_567));
        assert_eq!(line.len(), LINE_BYTES);
        assert_eq!(&line[..20], b"00000000000001234567");
        assert_eq!(line.last(), Some(&b'\n'));
    }

    #[tokio::test]
    async fn every_line_reaches_every_connection() {
        let summary = run(3, 4, 200.0).await.unwrap();
        assert_eq!(summary.count(), 12);
        assert_eq!(summary.errors(), 0);
    }
}
