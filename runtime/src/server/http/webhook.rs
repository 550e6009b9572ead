//! The calls the server makes to webhooks, shared by admission webhooks
//! (`admission::webhook`) and CRD conversion webhooks (`objects::conversion_webhook`), as
//! upstream's `k8s.io/apiserver/pkg/util/webhook` client manager serves both: one HTTPS POST
//! of a review through the server's client (`http::client`), verified against the webhook's
//! `caBundle` (the system's roots without one), bounded by a timeout and by the size of the
//! answer read. Errors are texts in the shape upstream's REST client gives them
//! (`Post "<url>": ...`), which each caller wraps in its own words.
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
use serde::Deserialize;
use serde_json::Value;

use crate::storage::Storage;

use crate::server::Call;
use crate::server::http::client::{self, Destination, Exchange, roots_of_pem, system_roots};
use crate::server::http::error::ApiError;
use crate::server::state::keys::prefix_of;

/// Where a webhook is called: a URL, or a Service of the cluster (`clientConfig` of an
/// admission webhook and of a CRD's conversion webhook alike).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClientConfig {
    #[serde(default)]
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) service: Option<ServiceReference>,
    /// Base64 of the PEM bundle that verifies the webhook's serving certificate.
    #[serde(default)]
    pub(crate) ca_bundle: Option<String>,
}

/// `clientConfig.service`: port 443 unless given.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServiceReference {
    pub(crate) namespace: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) path: Option<String>,
    #[serde(default)]
    pub(crate) port: Option<u16>,
}

/// The most bytes of an answer read: a review carrying its objects (an AdmissionReview
/// with an object and its patch, a ConversionReview with the objects converted).
const MOST_ANSWER_BYTES: usize = 3 * 1024 * 1024;

/// Where one call goes and the roots that verify it.
pub(crate) struct Target {
    destination: Destination,
    roots: Arc<RootCertStore>,
}

/// Resolves a webhook's client configuration; an error says why it cannot be called.
pub(crate) async fn target(
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
    let read = |plural: &'static str| read_core(call, plural, &service.namespace, &service.name);
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

/// The stored core object `namespace/name` of `plural`, as stored (the fields read here are
/// the same in every version).
async fn read_core(
    call: &Call,
    plural: &str,
    namespace: &str,
    name: &str,
) -> Result<Option<Value>, ApiError> {
    let key = format!("{}{namespace}/{name}", prefix_of("", plural));
    match call.state.storage.get(&key, None).await {
        Ok(Some(kv)) => serde_json::from_slice(&kv.value)
            .map(Some)
            .map_err(ApiError::internal),
        Ok(None) => Ok(None),
        Err(e) => Err(ApiError::from_read(e)),
    }
}

/// POSTs `body` to `target` and returns the answer's bytes, all within `timeout`; an answer
/// other than 200 is an error, as upstream's REST client's.
pub(crate) async fn post(
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
