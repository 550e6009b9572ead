//! The call itself: one HTTPS POST of the review through the server's client
//! (`http::client`), verified against the webhook's `caBundle` (the system's roots without
//! one), bounded by its timeout and by the size of the answer read. Errors are texts in the
//! shape upstream's REST client gives them (`Post "<url>": ...`), which the dispatcher wraps
//! as `failed calling webhook "<name>": failed to call webhook: ...`.
//!
//! A `clientConfig.service` is reached at the Service's endpoints (kapi runs no kube-proxy):
//! the first ready address of the stored Endpoints, at the endpoint port that serves the
//! Service's port, with `<name>.<namespace>.svc` as the TLS server name, as kube-apiserver's
//! endpoint resolver does.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use base64::Engine as _;
use bytes::Bytes;
use rustls::RootCertStore;
use serde_json::Value;

use super::config::{ClientConfig, ServiceReference};
use crate::server::Call;
use crate::server::admission::storage;
use crate::server::http::client::{self, Destination, Exchange, roots_of_pem, system_roots};

/// The most bytes of an answer read: an AdmissionReview carrying an object and its patch.
const MOST_ANSWER_BYTES: usize = 3 * 1024 * 1024;

/// Where one call goes and the roots that verify it.
pub(super) struct Target {
    destination: Destination,
    roots: Arc<RootCertStore>,
}

/// Resolves a webhook's client configuration; an error says why it cannot be called.
pub(super) async fn target(
    call: &Call,
    config: &ClientConfig,
    timeout: Duration,
) -> Result<Target, String> {
    // Upstream's webhook client trusts the `caBundle`, or the system's roots without one.
    let roots = match config.ca_bundle.as_deref().filter(|c| !c.is_empty()) {
        Some(text) => {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("invalid caBundle: {e}"))?;
            roots_of_pem(&pem).ok_or("invalid caBundle: no certificate in it")?
        }
        None => system_roots(),
    };
    // The `timeout` query upstream's REST client adds, shown in errors too.
    let query = format!("timeout={}s", timeout.as_secs());
    let with_query = |text: &str| {
        let separator = if text.contains('?') { '&' } else { '?' };
        format!("{text}{separator}{query}")
    };
    let mut destination = if let Some(url) = config.url.as_deref() {
        Destination::of_url(url)?
    } else if let Some(service) = config.service.as_ref() {
        let (host, port) = endpoint(call, service).await?;
        let path = service.path.as_deref().unwrap_or("/");
        let server_name = format!("{}.{}.svc", service.name, service.namespace);
        Destination {
            shown: format!(
                "https://{server_name}:{}{path}",
                service.port.unwrap_or(443)
            ),
            host,
            port,
            server_name,
            path_and_query: path.to_owned(),
        }
    } else {
        return Err("the webhook has neither clientConfig.url nor clientConfig.service".into());
    };
    destination.shown = with_query(&destination.shown);
    destination.path_and_query = with_query(&destination.path_and_query);
    Ok(Target {
        destination,
        roots: Arc::new(roots),
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

/// POSTs `body` to `target` and returns the answer's bytes, all within `timeout`; an answer
/// other than 200 is an error, as upstream's REST client's.
pub(super) async fn post(
    target: &Target,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Bytes, String> {
    let answer = client::send(Exchange {
        method: Method::POST,
        destination: &target.destination,
        body: Some(("application/json", Bytes::from(body))),
        roots: Arc::clone(&target.roots),
        deadline: timeout,
        most_bytes: MOST_ANSWER_BYTES,
        credentials: None,
    })
    .await?;
    if answer.status != StatusCode::OK {
        return Err(format!(
            "the server responded with the status code {} but did not return more information",
            answer.status.as_u16()
        ));
    }
    Ok(answer.body)
}
