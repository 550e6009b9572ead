//! Slow clients (slowloris): connections that send a request head a line a second and never
//! finish it, held open while the gets are measured again. The server must neither run out of
//! anything nor make other clients wait for them.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The slow connections; dropping this closes them.
pub(crate) struct SlowClients {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for SlowClients {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Opens `n` connections, each sending the start of a request head and then one more header
/// line a second, until the server closes it or the clients are dropped.
pub(crate) async fn open(addr: SocketAddr, n: usize) -> Result<SlowClients> {
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let mut stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("slow connection {i}"))?;
        stream
            .write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await?;
        tasks.push(tokio::spawn(async move {
            let mut line = 0u64;
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                line += 1;
                if stream
                    .write_all(format!("X-Slow-{line}: a\r\n").as_bytes())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }));
    }
    Ok(SlowClients { tasks })
}
