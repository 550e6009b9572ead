//! The request log: one `HTTP` event per request, as kube-apiserver's `httplog` writes at
//! verbosity 3, with the verb (HTTP method), URI, latency, user agent, source address and
//! response code, emitted at `DEBUG` on the target `kapi::httplog` (the `kapi` binary shows it
//! from `-v=3`). The latency is until the response head is ready: for a watch, until it is
//! established, since its stream then lasts as long as it lasts.
//!
//! The library only emits events through `tracing`; whoever runs the server chooses where they
//! go (the binary installs a subscriber).

use std::time::Instant;

use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

use crate::server::http::connections::Peer;

/// The layer's function: times the request and logs it once the response is ready.
pub(crate) async fn log(request: Request, next: Next) -> Response {
    if !tracing::enabled!(target: "kapi::httplog", tracing::Level::DEBUG) {
        return next.run(request).await;
    }
    let started = Instant::now();
    let method = request.method().clone();
    let uri = request.uri().clone();
    let user_agent = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    // Requests made in-process (`RunningServer::call`) come from no address.
    let peer = request
        .extensions()
        .get::<Peer>()
        .map(|peer| peer.0.to_string())
        .unwrap_or_default();
    let response = next.run(request).await;
    tracing::debug!(
        target: "kapi::httplog",
        verb = %method,
        URI = %uri,
        latency = ?started.elapsed(),
        userAgent = %user_agent,
        srcIP = %peer,
        resp = response.status().as_u16(),
        "HTTP"
    );
    response
}
