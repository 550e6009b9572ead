//! Requests the server forwards to a backend past it (a kubelet, a pod, a Service's endpoint),
//! as upstream's `UpgradeAwareHandler` and `LocationStreamer` forward them
//! (`staging/src/k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go`,
//! `staging/src/k8s.io/apiserver/pkg/registry/generic/rest/streamer.go`): one HTTP/1.1
//! connection per request, plain or TLS as the backend's scheme says, dialed within upstream's
//! transport bounds (30 s to connect, 10 s for the TLS handshake) and answered within a
//! deadline for the response head; then the body streams through as it arrives, both ways,
//! and an upgrade (`101 Switching Protocols`: SPDY or WebSocket) becomes a byte tunnel between
//! the client's connection and the backend's until either closes or the server stops.
//!
//! Errors are Go transport's texts (`dial tcp 10.0.0.1:10250: connect: connection refused`),
//! which upstream's messages embed.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio::sync::watch;

use crate::server::Streamed;

/// How long dialing a backend may take (the dialer of upstream's transports).
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the TLS handshake may take (`TLSHandshakeTimeout` of upstream's transports).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the backend may take to answer with its status and headers. Upstream sets no such
/// bound; a backend that never answers would otherwise hold the request forever.
const RESPONSE_HEAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether a backend is dialed in plain text or over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// Where a forwarded request goes, and with which TLS settings when over HTTPS.
#[derive(Clone)]
pub(crate) struct Backend {
    pub(crate) scheme: Scheme,
    /// A name or an IP address (an IPv6 one bare, without brackets).
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("scheme", &self.scheme)
            .field("host", &self.host)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Backend {
    /// `host:port`, an IPv6 address bracketed (Go's `net.JoinHostPort`).
    pub(crate) fn authority(&self) -> String {
        join_host_port(&self.host, &self.port.to_string())
    }

    /// `<scheme>://<host:port><path_and_query>`, as upstream's errors show the URL.
    pub(crate) fn url(&self, path_and_query: &str) -> String {
        format!(
            "{}://{}{path_and_query}",
            self.scheme.as_str(),
            self.authority()
        )
    }
}

/// Go's `net.JoinHostPort`: an IPv6 host (one with a colon) in brackets.
pub(crate) fn join_host_port(host: &str, port: &str) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A TLS client that accepts any server certificate: upstream's proxy transport
/// (`InsecureSkipVerify`) and its kubelet client without a CA. Built once; the error is
/// rustls' text.
pub(crate) fn unverified_tls() -> Result<Arc<rustls::ClientConfig>, String> {
    static BUILT: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            Ok(Arc::new(
                builder()?
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AnyCertificate::new()))
                    .with_no_client_auth(),
            ))
        })
        .clone()
}

/// [`unverified_tls`] with a client certificate; the error is rustls' text.
pub(crate) fn unverified_tls_with(
    (chain, key): (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
) -> Result<Arc<rustls::ClientConfig>, String> {
    builder()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate::new()))
        .with_client_auth_cert(chain, key)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

/// A TLS client verifying servers against `roots`, presenting `certificate` when given.
pub(crate) fn verified_tls(
    roots: RootCertStore,
    certificate: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let config = builder()?.with_root_certificates(roots);
    match certificate {
        Some((chain, key)) => config
            .with_client_auth_cert(chain, key)
            .map(Arc::new)
            .map_err(|e| e.to_string()),
        None => Ok(Arc::new(config.with_no_client_auth())),
    }
}

/// ring's provider with rustls' safe protocol versions (TLS 1.2 and 1.3).
fn builder() -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())
}

/// Accepts every server certificate, still checking the handshake's signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl AnyCertificate {
    fn new() -> Self {
        Self(Arc::new(rustls::crypto::ring::default_provider()))
    }
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The hop-by-hop headers a proxy does not pass on (Go's `httputil.ReverseProxy`), besides
/// those `Connection` names.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
];

/// Whether `headers` ask for an upgrade: a `Connection` header naming `upgrade`
/// (apimachinery's `httpstream.IsUpgradeRequest`).
pub(crate) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
}

/// `headers` without the hop-by-hop ones; an upgrade keeps `Connection: Upgrade` and its
/// `Upgrade` header, which the backend must see.
pub(crate) fn end_to_end(headers: &HeaderMap, keep_upgrade: bool) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|token| token.trim().to_ascii_lowercase())
        .filter(|token| !token.is_empty())
        .collect();
    let mut kept = HeaderMap::new();
    for (name, value) in headers {
        let lower = name.as_str();
        let hop =
            HOP_BY_HOP.contains(&lower) || lower == "upgrade" || named.iter().any(|n| n == lower);
        if !hop {
            kept.append(name.clone(), value.clone());
        }
    }
    if keep_upgrade {
        kept.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        for value in headers.get_all(header::UPGRADE) {
            kept.append(header::UPGRADE, value.clone());
        }
    }
    kept
}

/// A backend's answer: its head and streaming body, and the connection it came on, which
/// lives as long as the answer is used.
pub(crate) struct Forwarded {
    pub(crate) response: Response<Incoming>,
    connection: AbortOnDrop,
}

/// Sends `request` (its URI a path and query) to `backend` and waits for the answer's head.
/// The error is Go transport's text.
pub(crate) async fn send(backend: &Backend, request: Request<Body>) -> Result<Forwarded, String> {
    let authority = backend.authority();
    let dial = async {
        // Resolved first, so a name that does not resolve reads as Go's resolver error.
        let addresses: Vec<std::net::SocketAddr> =
            tokio::net::lookup_host((backend.host.as_str(), backend.port))
                .await
                .map_err(|_| format!("dial tcp: lookup {}: no such host", backend.host))?
                .collect();
        tokio::net::TcpStream::connect(addresses.as_slice())
            .await
            .map_err(|e| dial_error(&authority, &e))
    };
    let tcp = tokio::time::timeout(DIAL_TIMEOUT, dial)
        .await
        .map_err(|_| format!("dial tcp {authority}: i/o timeout"))??;
    match backend.scheme {
        Scheme::Http => exchange(TokioIo::new(tcp), request).await,
        Scheme::Https => {
            let name = ServerName::try_from(backend.host.clone())
                .map_err(|e| format!("tls: invalid server name {:?}: {e}", backend.host))?;
            let connector = tokio_rustls::TlsConnector::from(Arc::clone(&backend.tls));
            let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, tcp))
                .await
                .map_err(|_| "net/http: TLS handshake timeout".to_owned())?
                .map_err(|e| format!("tls: {e}"))?;
            exchange(TokioIo::new(tls), request).await
        }
    }
}

/// Go's dial error for `authority`.
fn dial_error(authority: &str, error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {authority}: connect: connection refused")
        }
        _ => format!("dial tcp {authority}: {error}"),
    }
}

async fn exchange<I>(io: I, request: Request<Body>) -> Result<Forwarded, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    // The connection task hands its bytes over to an upgrade once a 101 is answered, and
    // otherwise ends with the answer's body.
    let connection = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.with_upgrades().await;
    }));
    let response = tokio::time::timeout(RESPONSE_HEAD_TIMEOUT, sender.send_request(request))
        .await
        .map_err(|_| "net/http: timeout awaiting response headers".to_owned())?
        .map_err(|e| e.to_string())?;
    Ok(Forwarded {
        response,
        connection,
    })
}

impl Forwarded {
    /// The answer as the client gets it: the backend's status and end-to-end headers, the
    /// body streamed as it arrives (never gzip-buffered or reencoded).
    pub(crate) fn streamed(self) -> Response<Body> {
        let Self {
            response,
            connection,
        } = self;
        let (parts, body) = response.into_parts();
        let mut answer = Response::new(Body::new(Tethered {
            body,
            _connection: connection,
        }));
        *answer.status_mut() = parts.status;
        *answer.headers_mut() = end_to_end(&parts.headers, false);
        answer.extensions_mut().insert(Streamed);
        answer
    }

    /// A `101 Switching Protocols` answer turned into a tunnel: the client gets the backend's
    /// 101 and headers, and once both connections are handed over their bytes are copied both
    /// ways until either side closes or `stop` turns true (the server's shutdown).
    pub(crate) fn tunnel(
        self,
        client: OnUpgrade,
        mut stop: watch::Receiver<bool>,
    ) -> Response<Body> {
        let Self {
            mut response,
            connection,
        } = self;
        let backend = hyper::upgrade::on(&mut response);
        let headers = response.headers().clone();
        tokio::spawn(async move {
            let (client, backend) = match tokio::join!(client, backend) {
                (Ok(client), Ok(backend)) => (client, backend),
                (client, backend) => {
                    tracing::debug!(
                        client = ?client.err(),
                        backend = ?backend.err(),
                        "an upgraded connection was not handed over"
                    );
                    return;
                }
            };
            // The backend's connection task has handed its bytes over and ended.
            drop(connection);
            let mut client = TokioIo::new(client);
            let mut backend = TokioIo::new(backend);
            tokio::select! {
                copied = tokio::io::copy_bidirectional(&mut client, &mut backend) => {
                    if let Err(error) = copied {
                        tracing::debug!(%error, "an upgraded connection ended");
                    }
                }
                _ = stop.wait_for(|stopped| *stopped) => {}
            }
        });
        let mut answer = Response::new(Body::empty());
        *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        *answer.headers_mut() = end_to_end(&headers, true);
        answer.extensions_mut().insert(Streamed);
        answer
    }
}

/// A backend's body, keeping its connection open while it is read and closing it when
/// dropped (a client that went away).
struct Tethered {
    body: Incoming,
    _connection: AbortOnDrop,
}

impl hyper::body::Body for Tethered {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_stay_behind_but_an_upgrade_keeps_its_own() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONNECTION,
            HeaderValue::from_static("Upgrade, X-Private"),
        );
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        headers.insert("x-private", HeaderValue::from_static("1"));
        headers.insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("chunked"),
        );
        headers.insert("sec-websocket-key", HeaderValue::from_static("k"));
        assert!(is_upgrade(&headers));
        let plain = end_to_end(&headers, false);
        assert_eq!(plain.len(), 1);
        assert!(plain.contains_key("sec-websocket-key"));
        let upgrade = end_to_end(&headers, true);
        assert_eq!(
            upgrade.get(header::UPGRADE).map(|v| v.as_bytes()),
            Some(&b"websocket"[..])
        );
        assert_eq!(
            upgrade.get(header::CONNECTION).map(|v| v.as_bytes()),
            Some(&b"Upgrade"[..])
        );
        assert!(!upgrade.contains_key("x-private"));
        assert_eq!(join_host_port("fd00::1", "80"), "[fd00::1]:80");
    }
}
