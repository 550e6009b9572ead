//! Requests the server itself sends over HTTPS (a JWT issuer's discovery document and keys,
//! admission webhooks): one request per connection, HTTP/1.1, the server verified against the
//! given roots under the name the caller expects, and every request bounded as upstream bounds
//! its clients' (a deadline for the whole exchange, a cap on the answer's size). Errors are
//! sentences in the shape of Go's client errors, which upstream's messages embed.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, Uri, header};
use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};

/// The system's trusted roots on Debian and its relatives, which a client uses when it was
/// given none (Go's `x509.SystemCertPool` reads the same file).
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The certificates of a PEM bundle as trusted roots; `None` when it holds none.
pub(crate) fn roots_of_pem(pem: &[u8]) -> Option<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(pem) {
        roots.add(certificate.ok()?).ok()?;
    }
    (!roots.is_empty()).then_some(roots)
}

/// The system's trusted roots (empty when the system has no bundle).
pub(crate) fn system_roots() -> RootCertStore {
    std::fs::read(SYSTEM_ROOTS)
        .ok()
        .and_then(|pem| roots_of_pem(&pem))
        .unwrap_or_else(RootCertStore::empty)
}

/// An answer: its status and body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

/// Where a request goes: the address dialed, the name the server's certificate must carry (a
/// Service reference dials an endpoint's address but verifies `<service>.<namespace>.svc`),
/// the path, and the URL errors show.
#[derive(Debug, Clone)]
pub(crate) struct Destination {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) server_name: String,
    pub(crate) path_and_query: String,
    pub(crate) shown: String,
}

impl Destination {
    /// An `https://` URL's destination; the error is a sentence.
    pub(crate) fn of_url(url: &str) -> Result<Self, String> {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!("invalid URL {url:?}: the scheme must be https"));
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("invalid URL {url:?}: no host"))?;
        // An IPv6 literal comes bracketed in a URL and bare in a server name.
        let bare = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        Ok(Self {
            port: uri.port_u16().unwrap_or(443),
            server_name: bare.clone(),
            host: bare,
            path_and_query: uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
            shown: url.to_owned(),
        })
    }
}

/// One request: what is sent where, trusting which roots, within which bounds.
#[derive(Debug)]
pub(crate) struct Exchange<'a> {
    pub(crate) method: Method,
    pub(crate) destination: &'a Destination,
    /// The body's media type, with the body; `None` sends none.
    pub(crate) body: Option<(&'static str, Bytes)>,
    pub(crate) roots: Arc<RootCertStore>,
    /// The whole exchange's deadline, connecting included.
    pub(crate) deadline: Duration,
    /// The most bytes of the answer's body read.
    pub(crate) most_bytes: usize,
    /// Who the server is told the request is from, if anyone.
    pub(crate) credentials: Option<&'a Credentials>,
}

/// A client's credentials, as a kubeconfig's user gives them: a certificate presented in the
/// handshake, a bearer token, or both.
#[derive(Clone, Default)]
pub(crate) struct Credentials {
    /// The certificate chain (leaf first) and its private key.
    pub(crate) certificate: Option<(
        Vec<CertificateDer<'static>>,
        Arc<rustls::pki_types::PrivateKeyDer<'static>>,
    )>,
    pub(crate) token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key or the token.
        f.debug_struct("Credentials")
            .field("certificate", &self.certificate.is_some())
            .field("token", &self.token.is_some())
            .finish()
    }
}

/// Sends a `GET` of `url` (`https://` only) and reads the answer, all within `deadline`, the
/// body refused beyond `most_bytes`. The error is a sentence for logs and messages, in the
/// shape of Go's client errors (`Get "<url>": ...`).
pub(crate) async fn get(
    url: &str,
    roots: Arc<RootCertStore>,
    deadline: Duration,
    most_bytes: usize,
) -> Result<Answer, String> {
    let destination = Destination::of_url(url).map_err(|e| format!("Get {url:?}: {e}"))?;
    send(Exchange {
        method: Method::GET,
        destination: &destination,
        body: None,
        roots,
        deadline,
        most_bytes,
        credentials: None,
    })
    .await
}

/// Sends `exchange` and reads the answer. The error is `<Method> "<url>": <why>`, as Go's
/// client words it (`context deadline exceeded` past the deadline).
pub(crate) async fn send(exchange: Exchange<'_>) -> Result<Answer, String> {
    let method = exchange.method.as_str();
    let method: String = method
        .chars()
        .take(1)
        .chain(method.chars().skip(1).flat_map(char::to_lowercase))
        .collect();
    let shown = exchange.destination.shown.clone();
    match tokio::time::timeout(exchange.deadline, run(exchange)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(why)) => Err(format!("{method} {shown:?}: {why}")),
        Err(_) => Err(format!("{method} {shown:?}: context deadline exceeded")),
    }
}

async fn run(exchange: Exchange<'_>) -> Result<Answer, String> {
    let destination = exchange.destination;
    let (host, port) = (destination.host.as_str(), destination.port);
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => {
                format!("dial tcp {host}:{port}: connect: connection refused")
            }
            _ => format!("dial tcp {host}:{port}: {e}"),
        })?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(exchange.roots);
    let certificate = exchange.credentials.and_then(|c| c.certificate.as_ref());
    let config = match certificate {
        Some((chain, key)) => config
            .with_client_auth_cert(chain.clone(), key.clone_key())
            .map_err(|e| format!("tls: the client certificate: {e}"))?,
        None => config.with_no_client_auth(),
    };
    let name = ServerName::try_from(destination.server_name.clone())
        .map_err(|e| format!("invalid server name {:?}: {e}", destination.server_name))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    // The connection lives as long as this one exchange needs it, also when the deadline
    // drops the exchange midway.
    let _driver = AbortOnDrop(tokio::spawn(connection));
    let authority = match port {
        443 => destination.server_name.clone(),
        port => format!("{}:{port}", destination.server_name),
    };
    let mut request = Request::builder()
        .method(exchange.method)
        .uri(&destination.path_and_query)
        .header(header::HOST, authority)
        .header(header::ACCEPT, "application/json, */*");
    if let Some(token) = exchange.credentials.and_then(|c| c.token.as_deref()) {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = match exchange.body {
        Some((media_type, bytes)) => {
            request = request
                .header(header::CONTENT_TYPE, media_type)
                .header(header::CONTENT_LENGTH, bytes.len());
            Body::from(bytes)
        }
        None => Body::empty(),
    };
    let request = request.body(body).map_err(|e| e.to_string())?;
    match sender.send_request(request).await {
        Ok(response) => {
            let status = response.status();
            let limited = http_body_util::Limited::new(response.into_body(), exchange.most_bytes);
            match limited.collect().await {
                Ok(body) => Ok(Answer {
                    status,
                    body: body.to_bytes(),
                }),
                Err(e) => Err(format!("reading the answer: {e}")),
            }
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Aborts its task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
