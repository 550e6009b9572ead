//! Requests the server itself sends over HTTPS (a JWT issuer's discovery document and keys):
//! one request per connection, HTTP/1.1, the server verified against the given roots, and every
//! request bounded as upstream bounds its clients' (a deadline for the whole exchange, a cap on
//! the answer's size).

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

/// Sends a `GET` of `url` (`https://` only) and reads the answer, all within `deadline`, the
/// body refused beyond `most_bytes`. The error is a sentence for logs and messages.
pub(crate) async fn get(
    url: &str,
    roots: Arc<RootCertStore>,
    deadline: Duration,
    most_bytes: usize,
) -> Result<Answer, String> {
    match tokio::time::timeout(deadline, exchange(url, roots, most_bytes)).await {
        Ok(answer) => answer,
        Err(_) => Err(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

async fn exchange(
    url: &str,
    roots: Arc<RootCertStore>,
    most_bytes: usize,
) -> Result<Answer, String> {
    let failed = |what: &dyn std::fmt::Display| format!("Get {url:?}: {what}");
    let uri: Uri = url.parse().map_err(|e| failed(&e))?;
    if uri.scheme_str() != Some("https") {
        return Err(failed(&"unsupported protocol scheme"));
    }
    let host = uri
        .host()
        .ok_or_else(|| failed(&"no host in request URL"))?;
    // An IPv6 literal comes bracketed in a URL and bare in a server name.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(443);
    let tcp = tokio::net::TcpStream::connect((bare, port))
        .await
        .map_err(|e| failed(&e))?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| failed(&e))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from(bare.to_owned()).map_err(|e| failed(&e))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| failed(&format!("tls: {e}")))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| failed(&e))?;
    let driver = tokio::spawn(connection);
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = Request::builder()
        .method(Method::GET)
        .uri(path)
        .header(header::HOST, authority)
        .header(header::ACCEPT, "application/json")
        .body(Body::empty())
        .map_err(|e| failed(&e))?;
    let response = sender.send_request(request).await.map_err(|e| failed(&e));
    let result = match response {
        Ok(response) => {
            let status = response.status();
            let limited = http_body_util::Limited::new(response.into_body(), most_bytes);
            match limited.collect().await {
                Ok(body) => Ok(Answer {
                    status,
                    body: body.to_bytes(),
                }),
                Err(e) => Err(failed(&e)),
            }
        }
        Err(e) => Err(e),
    };
    driver.abort();
    result
}
