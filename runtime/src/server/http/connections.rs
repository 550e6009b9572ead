//! Connections: accepting them, speaking HTTP/1.1 or HTTP/2 on each, and the bounds each lives
//! within, so that no client can hold the server's sockets or memory for nothing.
//!
//! Upstream's numbers (kube-apiserver's `http.Server` and `http2.Server` settings):
//! - request headers must arrive within 32 s ([`HEADER_READ_TIMEOUT`], Go's
//!   `ReadHeaderTimeout`); with HTTP/1.1 the same timer runs while a kept-alive connection
//!   waits for its next request, so an idle HTTP/1.1 connection is closed after it too;
//! - a connection with no request in flight for 90 s is closed ([`IDLE_TIMEOUT`], Go's
//!   `IdleTimeout`), HTTP/2 included; a watch is in flight until its body ends;
//! - headers are at most 1 MiB ([`MAX_HEADER_BYTES`]); an HTTP/2 connection carries at most
//!   250 concurrent streams.
//!
//! With TLS ([`Tls`]) the handshake comes first, within the header read timeout (Go's
//! `tlsHandshakeTimeout`, see `tls`), and ALPN decides the protocol: `h2` is HTTP/2, anything
//! else HTTP/1.1. Without TLS a connection is HTTP/1.1, or HTTP/2 when it opens with the
//! HTTP/2 preface (prior knowledge). Every request of a TLS connection carries what the
//! handshake established about the client certificate (`tls::PeerCertificates`).
//!
//! Every accepted socket gets TCP_NODELAY: watch events are small writes that must leave at once,
//! not wait for the client's (delayed) acknowledgement of the previous one; over HTTP/2, where a
//! connection carries many watches, Nagle held most deliveries about 40 ms (BENCHMARKS.md). Go
//! servers set the same.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt as _;

use super::tls::{ClientIdentity, Tls};

/// How long a client may take to send a request's headers (and, over HTTP/1.1, how long a
/// kept-alive connection may wait for its next request).
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// How long a connection may go without a request in flight before it is closed.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The largest request head accepted.
pub(crate) const MAX_HEADER_BYTES: usize = 1024 * 1024;

/// The most concurrent streams on one HTTP/2 connection.
pub(crate) const MAX_CONCURRENT_STREAMS: u32 = 250;

/// How long accepting pauses after an error such as running out of file descriptors, so the
/// loop does not spin while open connections wind down.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The timeouts of every connection of one server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// See [`HEADER_READ_TIMEOUT`].
    pub(crate) header_read: Duration,
    /// See [`IDLE_TIMEOUT`].
    pub(crate) idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            header_read: HEADER_READ_TIMEOUT,
            idle: IDLE_TIMEOUT,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then closes the listener, lets
/// every open connection finish its requests in flight and waits for them, for at most
/// `drain`; connections still busy then are closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Tls>,
    timeouts: Timeouts,
    drain: Duration,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let (closing, closed) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
            // Reap finished connections so the set holds only open ones.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        match accepted {
            Ok((tcp, peer)) => {
                let _ = tcp.set_nodelay(true);
                let closing = closed.clone();
                let router = router.clone();
                match &tls {
                    None => {
                        let io = TokioIo::new(tcp);
                        let how = Connection::plain(peer, timeouts);
                        connections.spawn(how.serve(io, router, closing));
                    }
                    Some(tls) => {
                        connections.spawn(handshake(
                            tls.clone(),
                            tcp,
                            peer,
                            router,
                            timeouts,
                            closing,
                        ));
                    }
                }
            }
            // Out of descriptors or a connection reset before it was accepted: the listener
            // itself is fine, so wait a little and go on.
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
    drop(listener);
    tracing::info!(
        connections = connections.len(),
        "shutdown: listener closed, draining requests in flight"
    );
    let _ = closing.send(true);
    drop(closed);
    // Each connection holds a receiver until it is done.
    if tokio::time::timeout(drain, closing.closed()).await.is_err() {
        tracing::warn!(
            connections = connections.len(),
            "shutdown: requests still in flight after {drain:?}; closing their connections"
        );
        connections.shutdown().await;
    } else {
        tracing::info!("shutdown: every request in flight finished");
    }
    Ok(())
}

/// A TLS connection: the handshake (bounded by the header read timeout, abandoned when the
/// server stops), then HTTP as ALPN chose.
async fn handshake(
    tls: Tls,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    timeouts: Timeouts,
    mut closing: watch::Receiver<bool>,
) {
    let accepting = tokio::time::timeout(timeouts.header_read, tls.accept(tcp));
    let (stream, client) = tokio::select! {
        accepted = accepting => match accepted {
            Ok(Ok(accepted)) => accepted,
            Ok(Err(error)) => {
                tracing::trace!(%peer, %error, "http: TLS handshake error");
                return;
            }
            Err(_) => {
                tracing::trace!(%peer, "http: TLS handshake error: timed out");
                return;
            }
        },
        _ = closing.wait_for(|closing| *closing) => return,
    };
    let (_, session) = stream.get_ref();
    let protocol = if session.alpn_protocol() == Some(b"h2".as_slice()) {
        Protocol::Http2
    } else {
        Protocol::Http1
    };
    let how = Connection {
        peer,
        timeouts,
        protocol,
        client,
    };
    how.serve(TokioIo::new(stream), router, closing).await;
}

/// Which HTTP a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    /// HTTP/1.1, or HTTP/2 when the client opens with its preface (plain connections).
    Detect,
    /// HTTP/1.1 only (TLS without the `h2` ALPN protocol).
    Http1,
    /// HTTP/2 only (TLS with the `h2` ALPN protocol).
    Http2,
}

/// What is known of a connection once its bytes are HTTP.
#[derive(Debug, Clone)]
struct Connection {
    peer: SocketAddr,
    timeouts: Timeouts,
    protocol: Protocol,
    /// The client certificate's standing, on a TLS connection that presented one.
    client: Option<ClientIdentity>,
}

impl Connection {
    fn plain(peer: SocketAddr, timeouts: Timeouts) -> Self {
        Self {
            peer,
            timeouts,
            protocol: Protocol::Detect,
            client: None,
        }
    }

    /// One connection, from its first HTTP byte to its close.
    async fn serve<I>(self, io: I, router: Router, mut closing: watch::Receiver<bool>)
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let Self {
            peer,
            timeouts,
            protocol,
            client,
        } = self;
        let activity = Arc::new(Activity::new(timeouts.idle));
        let tracked = {
            let activity = activity.clone();
            router.map_request(move |mut request: Request<Incoming>| {
                activity.start();
                let extensions = request.extensions_mut();
                extensions.insert(Peer(peer));
                match &client {
                    Some(ClientIdentity::Verified(chain)) => {
                        extensions.insert(chain.clone());
                    }
                    Some(ClientIdentity::Unverified(chain)) => {
                        extensions.insert(chain.clone());
                    }
                    None => {}
                }
                request.map(Body::new)
            })
        };
        let tracked = {
            let activity = activity.clone();
            tracked.map_response(move |response: Response| {
                let request = InFlight(activity.clone());
                response.map(|body| Body::new(Holding::new(body, request)))
            })
        };
        let mut builder = Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(timeouts.header_read)
            .max_buf_size(MAX_HEADER_BYTES);
        builder
            .http2()
            .timer(TokioTimer::new())
            .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
            .max_header_list_size(MAX_HEADER_BYTES as u32);
        let builder = match protocol {
            Protocol::Detect => builder,
            Protocol::Http1 => builder.http1_only(),
            Protocol::Http2 => builder.http2_only(),
        };
        let service = TowerToHyperService::new(tracked);
        let mut conn = pin!(builder.serve_connection_with_upgrades(io, service));
        let mut stopping = false;
        loop {
            let idle_check = tokio::time::sleep_until(activity.idle_deadline());
            tokio::select! {
                _ = conn.as_mut() => break,
                changed = closing.changed(), if !stopping => {
                    if changed.is_err() || *closing.borrow() {
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
                () = idle_check, if !stopping => {
                    if activity.is_idle() {
                        stopping = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }
}

/// The address a request came from, in its extensions (for the request log).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) SocketAddr);

/// What a connection is doing: requests in flight, and when the last one ended.
#[derive(Debug)]
struct Activity {
    in_flight: AtomicUsize,
    /// Milliseconds since `epoch` when the connection last had no request in flight.
    quiet_since: AtomicU64,
    epoch: Instant,
    idle_timeout: Duration,
}

impl Activity {
    fn new(idle_timeout: Duration) -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            quiet_since: AtomicU64::new(0),
            epoch: Instant::now(),
            idle_timeout,
        }
    }

    fn start(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
    }

    fn end(&self) {
        let millis = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.quiet_since.store(millis, Ordering::Release);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// When the connection will have been idle for its idle timeout, if nothing starts.
    fn idle_deadline(&self) -> Instant {
        let quiet = Duration::from_millis(self.quiet_since.load(Ordering::Acquire));
        self.epoch + quiet + self.idle_timeout
    }

    fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0 && Instant::now() >= self.idle_deadline()
    }
}

/// A request in flight until its response body is finished or dropped.
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A response body sent unchanged while `held` lives beside it, dropped with the body once it
/// has been sent or abandoned: a connection's [`InFlight`] mark (a watch is in flight for as
/// long as it lasts), and the metrics' open-watch record.
pub(crate) struct Holding<T> {
    body: Body,
    #[allow(dead_code, reason = "held for its Drop")]
    held: T,
}

impl<T> Holding<T> {
    pub(crate) fn new(body: Body, held: T) -> Self {
        Self { body, held }
    }
}

impl<T: Unpin> HttpBody for Holding<T> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Duration;

    use axum::Router;
    use axum::body::Body;
    use axum::extract::Request;
    use http_body_util::BodyExt as _;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use rustls::RootCertStore;
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{PrivateKeyDer, ServerName};

    use super::*;
    use crate::server::http::tls::test_certs::{Ca, ca, client, der, serving};
    use crate::server::http::tls::{
        PeerCertificates, UnverifiedPeerCertificates, certificate_subject,
    };

    /// What a request saw: its HTTP version and the client certificate's standing.
    async fn describe(request: Request) -> String {
        let client = if let Some(PeerCertificates(chain)) = request.extensions().get() {
            let subject = certificate_subject(&chain[0]).unwrap();
            format!(
                "verified {} {:?}",
                subject.common_name, subject.organizations
            )
        } else if let Some(unverified) = request.extensions().get::<UnverifiedPeerCertificates>() {
            format!(
                "unverified ({} certificates): {}",
                unverified.certificates.len(),
                unverified.error
            )
        } else {
            "no certificate".to_owned()
        };
        format!("{:?} {client}", request.version())
    }

    /// Serves [`describe`] over `tls`; the sender stops the server.
    async fn serve_tls(
        tls: Tls,
        timeouts: Timeouts,
    ) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().fallback(describe);
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(super::serve(
            listener,
            router,
            Some(tls),
            timeouts,
            Duration::from_secs(1),
            async move {
                let _ = rx.await;
            },
        ));
        (addr, tx)
    }

    /// GET / over TLS trusting `ca`, offering `alpn`, with `identity` as client certificate.
    async fn get(
        addr: SocketAddr,
        ca: &Ca,
        identity: Option<&(String, String)>,
        alpn: &[&[u8]],
    ) -> Result<String, String> {
        let mut roots = RootCertStore::empty();
        roots.add(der(&ca.pem)).unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let mut config = match identity {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => builder
                .with_client_auth_cert(
                    vec![der(cert)],
                    PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
                )
                .unwrap(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
        let io = TokioIo::new(stream);
        let request = || {
            axum::http::Request::get("/")
                .header("host", addr.to_string())
                .body(Body::empty())
                .unwrap()
        };
        let response = if h2 {
            let (mut sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                    .await
                    .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(request()).await
        } else {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(request()).await
        };
        let body = response
            .map_err(|e| e.to_string())?
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// ALPN picks the protocol (upstream offers `h2` and `http/1.1`); a client certificate is
    /// asked for but optional, and one of another CA does not fail the handshake
    /// (`tls.RequestClientCert`, k8s.io/apiserver `secure_serving.go`): its requests carry the
    /// verification's failure for the authenticator.
    #[tokio::test]
    async fn alpn_and_client_certificates() {
        let ca = ca("kapi-ca");
        let (cert, key) = serving(&ca);
        let tls = Tls::from_pem(cert.as_bytes(), key.as_bytes(), Some(ca.pem.as_bytes())).unwrap();
        let (addr, stop) = serve_tls(tls, Timeouts::default()).await;
        let both: &[&[u8]] = &[b"h2", b"http/1.1"];
        assert_eq!(
            get(addr, &ca, None, both).await.unwrap(),
            "HTTP/2.0 no certificate"
        );
        assert_eq!(
            get(addr, &ca, None, &[b"http/1.1"]).await.unwrap(),
            "HTTP/1.1 no certificate"
        );
        assert_eq!(
            get(addr, &ca, None, &[]).await.unwrap(),
            "HTTP/1.1 no certificate"
        );
        let admin = client(&ca, "kubernetes-admin", "system:masters");
        assert_eq!(
            get(addr, &ca, Some(&admin), both).await.unwrap(),
            "HTTP/2.0 verified kubernetes-admin [\"system:masters\"]"
        );
        let stranger = client(&self::ca("other-ca"), "intruder", "system:masters");
        assert_eq!(
            get(addr, &ca, Some(&stranger), &[b"http/1.1"])
                .await
                .unwrap(),
            "HTTP/1.1 unverified (1 certificates): x509: certificate signed by unknown authority"
        );
        // A serving certificate is not for client authentication (ExtKeyUsageClientAuth).
        let (cert, key) = serving(&ca);
        assert_eq!(
            get(addr, &ca, Some(&(cert, key)), both).await.unwrap(),
            "HTTP/2.0 unverified (1 certificates): x509: certificate specifies an incompatible key usage"
        );
        let _ = stop.send(());
    }

    /// Without client CAs no certificate is asked for, so none is seen.
    #[tokio::test]
    async fn without_client_cas_no_certificate_is_asked_for() {
        let ca = ca("kapi-ca");
        let (cert, key) = serving(&ca);
        let tls = Tls::from_pem(cert.as_bytes(), key.as_bytes(), None).unwrap();
        let (addr, stop) = serve_tls(tls, Timeouts::default()).await;
        let admin = client(&ca, "kubernetes-admin", "system:masters");
        assert_eq!(
            get(addr, &ca, Some(&admin), &[b"h2"]).await.unwrap(),
            "HTTP/2.0 no certificate"
        );
        let _ = stop.send(());
    }

    /// A client that never finishes its handshake is cut at the header read timeout (Go's
    /// `tlsHandshakeTimeout`: the smallest of ReadHeaderTimeout, ReadTimeout, WriteTimeout).
    #[tokio::test]
    async fn a_stalled_handshake_is_cut() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let ca = ca("kapi-ca");
        let (cert, key) = serving(&ca);
        let tls = Tls::from_pem(cert.as_bytes(), key.as_bytes(), None).unwrap();
        let timeouts = Timeouts {
            header_read: Duration::from_millis(200),
            idle: Duration::from_secs(90),
        };
        let (addr, stop) = serve_tls(tls, timeouts).await;
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        // The first bytes of a ClientHello record, then nothing.
        tcp.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
        let mut buf = [0u8; 64];
        let started = std::time::Instant::now();
        let read = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
            .await
            .expect("the server kept a stalled handshake open");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        assert!(started.elapsed() >= Duration::from_millis(150));
        let _ = stop.send(());
    }
}
