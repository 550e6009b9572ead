//! The call itself: one HTTPS POST of the review over HTTP/1.1, verified against the
//! webhook's `caBundle`, bounded by its timeout and by the size of the answer read. Errors are
//! texts in the shape upstream's REST client gives them (`Post "<url>": ...`), which the
//! dispatcher wraps as `failed calling webhook "<name>": failed to call webhook: ...`.
//!
//! A `clientConfig.service` is reached at the Service's endpoints (kapi runs no kube-proxy):
//! the first ready address of the stored Endpoints, at the endpoint port that serves the
//! Service's port, with `<name>.<namespace>.svc` as the TLS server name, as kube-apiserver's
//! endpoint resolver does.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, Uri, header};
use base64::Engine as _;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;

use super::config::{ClientConfig, ServiceReference};
use crate::server::Call;
use crate::server::admission::storage;
use crate::server::http::client::{roots_of_pem, system_roots};

/// The most bytes of an answer read: an AdmissionReview carrying an object and its patch.
const MOST_ANSWER_BYTES: usize = 3 * 1024 * 1024;

/// Where one call goes.
pub(super) struct Target {
    /// The URL as errors show it, with the `timeout` query upstream's client adds.
    shown: String,
    /// The address dialed.
    host: String,
    port: u16,
    /// The name the serving certificate must carry.
    server_name: String,
    path_and_query: String,
    ca_bundle: Option<Vec<u8>>,
}

/// Resolves a webhook's client configuration; an error says why it cannot be called.
pub(super) async fn target(
    call: &Call,
    config: &ClientConfig,
    timeout: Duration,
) -> Result<Target, String> {
    let ca_bundle = match config.ca_bundle.as_deref().filter(|c| !c.is_empty()) {
        Some(text) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("invalid caBundle: {e}"))?,
        ),
        None => None,
    };
    let query = format!("timeout={}s", timeout.as_secs());
    if let Some(url) = config.url.as_deref() {
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("invalid url {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!("invalid url {url:?}: the scheme must be https"));
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("invalid url {url:?}: no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let path = uri.path();
        let path_and_query = match uri.query() {
            Some(q) => format!("{path}?{q}&{query}"),
            None => format!("{path}?{query}"),
        };
        let shown = match url.split_once('?') {
            Some(_) => format!("{url}&{query}"),
            None => format!("{url}?{query}"),
        };
        return Ok(Target {
            shown,
            port: uri.port_u16().unwrap_or(443),
            server_name: host.clone(),
            host,
            path_and_query,
            ca_bundle,
        });
    }
    let Some(service) = config.service.as_ref() else {
        return Err("the webhook has neither clientConfig.url nor clientConfig.service".into());
    };
    let (host, port) = endpoint(call, service).await?;
    let path = service.path.as_deref().unwrap_or("/");
    let server_name = format!("{}.{}.svc", service.name, service.namespace);
    Ok(Target {
        shown: format!(
            "https://{server_name}:{}{path}?{query}",
            service.port.unwrap_or(443)
        ),
        host,
        port,
        server_name,
        path_and_query: format!("{path}?{query}"),
        ca_bundle,
    })
}

/// The address and port of a ready endpoint of the Service `service` names.
async fn endpoint(call: &Call, service: &ServiceReference) -> Result<(String, u16), String> {
    let missing = || {
        format!(
            "service \"{}/{}\" not found",
            service.namespace, service.name
        )
    };
    let read = |plural: &'static str| {
        storage::read(call, "", plural, Some(&service.namespace), &service.name)
    };
    let stored = read("services").await.map_err(|_| missing())?;
    let stored = stored.ok_or_else(missing)?;
    let wanted = i64::from(service.port.unwrap_or(443));
    let ports = stored.pointer("/spec/ports").and_then(Value::as_array);
    let port = ports
        .into_iter()
        .flatten()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(wanted))
        .ok_or_else(|| {
            format!(
                "no service port {wanted} found for service {:?}",
                service.name
            )
        })?;
    let port_name = port.get("name").and_then(Value::as_str).unwrap_or("");
    let no_endpoints = || format!("no endpoints available for service {:?}", service.name);
    let endpoints = read("endpoints").await.map_err(|_| no_endpoints())?;
    let endpoints = endpoints.ok_or_else(no_endpoints)?;
    let subsets = endpoints.get("subsets").and_then(Value::as_array);
    for subset in subsets.into_iter().flatten() {
        let address = subset.pointer("/addresses/0/ip").and_then(Value::as_str);
        let port = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64))
            .and_then(|p| u16::try_from(p).ok());
        if let (Some(address), Some(port)) = (address, port) {
            return Ok((address.to_owned(), port));
        }
    }
    Err(no_endpoints())
}

/// POSTs `body` to `target` and returns the answer's bytes, all within `timeout`.
pub(super) async fn post(
    target: &Target,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let shown = &target.shown;
    match tokio::time::timeout(timeout, exchange(target, body)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(e)) => Err(format!("Post {shown:?}: {e}")),
        Err(_) => Err(format!("Post {shown:?}: context deadline exceeded")),
    }
}

async fn exchange(target: &Target, body: Vec<u8>) -> Result<Vec<u8>, String> {
    let tls = tls_config(target.ca_bundle.as_deref())?;
    let address = (target.host.as_str(), target.port);
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::ConnectionRefused => format!(
                "dial tcp {}:{}: connect: connection refused",
                target.host, target.port
            ),
            _ => format!("dial tcp {}:{}: {e}", target.host, target.port),
        })?;
    let name = ServerName::try_from(target.server_name.clone())
        .map_err(|e| format!("invalid server name {:?}: {e}", target.server_name))?;
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    // The connection lives as long as this one exchange needs it.
    let driver = tokio::spawn(connection);
    let host = match target.port {
        443 => target.server_name.clone(),
        port => format!("{}:{port}", target.server_name),
    };
    let request = Request::post(&target.path_and_query)
        .header(header::HOST, host)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .header(header::CONTENT_LENGTH, body.len())
        .body(Body::from(body))
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await;
    let result = match response {
        Ok(response) => {
            let status = response.status();
            let bytes = axum::body::to_bytes(Body::new(response.into_body()), MOST_ANSWER_BYTES)
                .await
                .map_err(|e| format!("reading the answer: {e}"));
            match bytes {
                Ok(bytes) if status == StatusCode::OK => Ok(bytes.to_vec()),
                Ok(_) => Err(format!(
                    "the server responded with the status code {} but did not return more information",
                    status.as_u16()
                )),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e.to_string()),
    };
    driver.abort();
    result
}

/// TLS 1.2+ trusting the webhook's `caBundle`, or the system's roots without one, as
/// upstream's webhook client does.
fn tls_config(ca_bundle: Option<&[u8]>) -> Result<rustls::ClientConfig, String> {
    let roots = match ca_bundle {
        Some(pem) => roots_of_pem(pem).ok_or("invalid caBundle: no certificate in it")?,
        None => system_roots(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}
