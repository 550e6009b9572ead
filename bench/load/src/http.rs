//! The HTTP/1.1 client every scenario drives: one keep-alive connection per [`Conn`], JSON in
//! and out (and [`Http2`] for watches multiplexed over few connections), built on hyper's low-level connection API so each request goes exactly where the
//! scenario sends it (no pool hiding queueing between the load generator and the server).

use std::net::SocketAddr;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

/// An HTTP/1.1 connection over `io`, driven by a task of its own.
async fn handshake<T>(io: T) -> Result<SendRequest<Full<Bytes>>>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .context("HTTP/1.1 handshake")?;
    tokio::spawn(async move {
        // The connection ends when the scenario drops its sender; its error says nothing new.
        let _ = connection.await;
    });
    Ok(sender)
}

/// One keep-alive connection to the server.
pub(crate) struct Conn {
    sender: SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    host: String,
    /// TLS and a bearer token, for a server that asks for them.
    secure: Option<Secure>,
}

/// How a connection reaches a server over TLS, and the bearer token its requests carry.
#[derive(Clone)]
#[allow(
    dead_code,
    reason = "kapi-secure-load's; the other scenarios speak plain HTTP"
)]
pub(crate) struct Secure {
    pub(crate) connector: tokio_rustls::TlsConnector,
    pub(crate) authorization: hyper::header::HeaderValue,
}

impl Conn {
    pub(crate) async fn connect(addr: SocketAddr) -> Result<Self> {
        Self::open(addr, None).await
    }

    /// Opens a connection over TLS (HTTP/1.1) whose requests carry `secure`'s bearer token.
    #[allow(
        dead_code,
        reason = "kapi-secure-load's; the other scenarios speak plain HTTP"
    )]
    pub(crate) async fn connect_secure(addr: SocketAddr, secure: &Secure) -> Result<Self> {
        Self::open(addr, Some(secure.clone())).await
    }

    async fn open(addr: SocketAddr, secure: Option<Secure>) -> Result<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        // Requests are small and latency is what is measured: no Nagle delay on our side.
        stream.set_nodelay(true)?;
        let sender = match &secure {
            None => handshake(TokioIo::new(stream)).await?,
            Some(secure) => {
                let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
                let stream = secure
                    .connector
                    .connect(name, stream)
                    .await
                    .context("TLS handshake")?;
                handshake(TokioIo::new(stream)).await?
            }
        };
        Ok(Self {
            sender,
            addr,
            host: addr.to_string(),
            secure,
        })
    }

    /// Replaces a connection the server or an error closed; a live one is kept.
    pub(crate) async fn revive(&mut self) -> Result<()> {
        if self.sender.is_closed() {
            *self = Conn::open(self.addr, self.secure.clone()).await?;
        }
        Ok(())
    }

    /// Opens an HTTP/2 connection (prior knowledge, no TLS) for many concurrent requests.
    pub(crate) async fn connect_http2(addr: SocketAddr) -> Result<Http2> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .context("HTTP/2 handshake")?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Http2 {
            sender,
            host: addr.to_string(),
        })
    }

    /// Opens `n` connections.
    pub(crate) async fn connect_many(addr: SocketAddr, n: usize) -> Result<Vec<Conn>> {
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n {
            conns.push(Conn::connect(addr).await?);
        }
        Ok(conns)
    }

    /// Sends a request and starts the response, leaving the body to the caller (watches).
    pub(crate) async fn start(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Response<Incoming>> {
        self.start_accepting(method, path, body, "application/json")
            .await
    }

    /// Like [`Conn::start`], asking for the answer as `accept` says.
    pub(crate) async fn start_accepting(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        accept: &str,
    ) -> Result<Response<Incoming>> {
        // The server closes a kept-alive HTTP/1.1 connection idle for its header timeout (32 s);
        // like a pooling client, open a new one then.
        self.revive().await?;
        self.sender.ready().await.context("connection closed")?;
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, &self.host)
            .header(ACCEPT, accept);
        if body.is_some() {
            request = request.header(CONTENT_TYPE, "application/json");
        }
        if let Some(secure) = &self.secure {
            request = request.header(hyper::header::AUTHORIZATION, &secure.authorization);
        }
        let request = request.body(Full::new(body.unwrap_or_default()))?;
        Ok(self.sender.send_request(request).await?)
    }

    /// Sends a request and reads the whole response body.
    pub(crate) async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<(StatusCode, Bytes)> {
        let response = self.start(method, path, body).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// Like [`Conn::send`], but a status other than `want` is an error carrying the body.
    pub(crate) async fn expect(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        want: StatusCode,
    ) -> Result<Bytes> {
        let (status, body) = self.send(method.clone(), path, body).await?;
        if status != want {
            anyhow::bail!(
                "{method} {path}: {status} (wanted {want}): {}",
                String::from_utf8_lossy(&body)
            );
        }
        Ok(body)
    }
}

/// An HTTP/2 connection; each request is a stream of its own.
#[derive(Clone)]
pub(crate) struct Http2 {
    sender: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    host: String,
}

impl Http2 {
    /// Starts a GET, leaving the body to the caller (watches).
    pub(crate) async fn get(&mut self, path: &str) -> Result<Response<Incoming>> {
        self.sender.ready().await.context("connection closed")?;
        let request = Request::builder()
            .method(Method::GET)
            .uri(format!("http://{}{path}", self.host))
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))?;
        Ok(self.sender.send_request(request).await?)
    }
}

/// Percent-encodes a query value (continue tokens are base64, which carries `+`, `/` and `=`).
pub(crate) fn query_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_escaped() {
        assert_eq!(query_escape("eyJ2Ijo+/x=="), "eyJ2Ijo%2B%2Fx%3D%3D");
        assert_eq!(query_escape("a-b_c.d~"), "a-b_c.d~");
    }
}
