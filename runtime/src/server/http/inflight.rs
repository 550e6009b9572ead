//! How many requests the server works on at once: API Priority and Fairness in its simplest
//! form.
//!
//! Upstream shares its concurrency between priority levels (on by default since 1.20; before
//! it, `--max-requests-inflight=400` and `--max-mutating-requests-inflight=200`). Here there
//! are two shares with those sizes: read-only requests and mutating ones, so a flood of writes
//! cannot starve reads and the other way round. Long-running requests (watches, and the
//! subresources that stream from a kubelet or a backend: logs, exec, proxies) hold no seat,
//! as upstream exempts them, and neither do health probes (upstream's `probes` flow schema is
//! exempt). A request that finds its share full waits in a queue for a short while, as APF
//! queues, and is then answered as upstream answers: 429, `Retry-After: 1`, and a plain-text
//! body.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::Semaphore;

use crate::server::http::path::is_long_running_subresource;

/// Upstream's default `--max-requests-inflight`.
pub(crate) const READ_ONLY_SEATS: usize = 400;

/// Upstream's default `--max-mutating-requests-inflight`.
pub(crate) const MUTATING_SEATS: usize = 200;

/// How long a request waits for a seat before it is turned away.
pub(crate) const QUEUE_WAIT: Duration = Duration::from_secs(1);

/// The seats of both shares.
#[derive(Debug, Clone)]
pub(crate) struct Seats {
    read_only: Arc<Semaphore>,
    mutating: Arc<Semaphore>,
    wait: Duration,
}

impl Seats {
    pub(crate) fn new(read_only: usize, mutating: usize, wait: Duration) -> Self {
        Self {
            read_only: Arc::new(Semaphore::new(read_only.max(1))),
            mutating: Arc::new(Semaphore::new(mutating.max(1))),
            wait,
        }
    }

    /// The middleware: runs the request in a seat of its share, or answers 429.
    pub(crate) async fn admit(self, request: Request, next: Next) -> Response {
        let share = match share(&request) {
            Some(Share::ReadOnly) => &self.read_only,
            Some(Share::Mutating) => &self.mutating,
            None => return next.run(request).await,
        };
        let seat = match share.try_acquire() {
            Ok(seat) => Some(seat),
            Err(_) => tokio::time::timeout(self.wait, share.acquire())
                .await
                .ok()
                .and_then(Result::ok),
        };
        match seat {
            Some(_seat) => next.run(request).await,
            None => too_many_requests(),
        }
    }
}

/// Which share a request takes a seat in; `None` for the exempt ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Share {
    ReadOnly,
    Mutating,
}

fn share(request: &Request) -> Option<Share> {
    let path = request.uri().path();
    let probe = ["/livez", "/readyz", "/healthz"].iter().any(|p| {
        path.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    if probe || is_watch(request) || is_long_running_subresource(path) {
        return None;
    }
    match *request.method() {
        Method::GET | Method::HEAD | Method::OPTIONS => Some(Share::ReadOnly),
        _ => Some(Share::Mutating),
    }
}

/// A watch: `?watch=true` (or `1`) on a GET, or the legacy `/watch/` paths.
fn is_watch(request: &Request) -> bool {
    if request.method() != Method::GET {
        return false;
    }
    let uri = request.uri();
    let mut segments = uri.path().split('/').skip(1);
    // `/api/<version>/watch/...` and `/apis/<group>/<version>/watch/...`.
    let legacy = match segments.next() {
        Some("api") => segments.nth(1) == Some("watch"),
        Some("apis") => segments.nth(2) == Some("watch"),
        _ => false,
    };
    legacy
        || uri.query().is_some_and(|query| {
            query
                .split('&')
                .any(|pair| matches!(pair, "watch=true" | "watch=1" | "watch=True"))
        })
}

/// Upstream's answer when no seat is free: `http.Error` text with a retry hint.
fn too_many_requests() -> Response {
    let mut response = Response::new(Body::from("Too many requests, please try again later.\n"));
    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str) -> Request {
        Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap()
    }

    #[test]
    fn requests_take_seats_in_their_share_and_watches_none() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/default/pods",
                Some(Share::ReadOnly),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/default/pods",
                Some(Share::Mutating),
            ),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/a/deployments/b",
                Some(Share::Mutating),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/a",
                Some(Share::Mutating),
            ),
            (
                Method::GET,
                "/api/v1/pods?watch=true&resourceVersion=1",
                None,
            ),
            (Method::GET, "/api/v1/pods?labelSelector=a&watch=1", None),
            (Method::GET, "/api/v1/watch/pods", None),
            (
                Method::GET,
                "/apis/apps/v1/watch/namespaces/a/deployments",
                None,
            ),
            (Method::GET, "/readyz", None),
            (Method::GET, "/livez/ping", None),
            (
                Method::GET,
                "/api/v1/pods?watch=false",
                Some(Share::ReadOnly),
            ),
            (
                Method::GET,
                "/apis/watch.example/v1/things",
                Some(Share::ReadOnly),
            ),
        ];
        for (method, uri, want) in cases {
            assert_eq!(share(&request(method.clone(), uri)), want, "{method} {uri}");
        }
    }
}
