//! `/healthz`, `/livez` and `/readyz`: probes with upstream's plain-text output.
//!
//! Each endpoint runs its checks in order. `?verbose` lists them (`[+]ping ok`, ...) and ends
//! with `<endpoint> check passed`; without it a healthy answer is just `ok`. `?exclude=<check>`
//! (repeatable) skips a check, listed as `[+]<check> excluded: ok`; names that match no check
//! are reported on a `warn: some health checks cannot be excluded: no matches for "<a>","<b>"`
//! line. Any failure answers 500 with the full list (`[-]<check> failed: reason withheld`) and
//! `<endpoint> check failed`, whether or not `verbose` was asked. Every check also has its own
//! path, e.g. `/livez/etcd`, answering `ok` or 500 `internal server error: <reason>`.
//!
//! Checks, by upstream's names:
//! - `ping`: the server answers requests at all;
//! - `log`: upstream checks that logging is not blocked; kapi's events go through `tracing`
//!   to whatever subscriber the program installed, which the server cannot probe, so it
//!   passes whenever the server runs;
//! - `etcd`: the storage engine answers a current-revision read within
//!   [`STORAGE_PROBE_TIMEOUT`]. Over the etcd engine that read is a linearizable range
//!   request, so the check fails while the cluster has no quorum or cannot be reached, as
//!   upstream's does; the embedded engine keeps the name because tooling (and the seed's
//!   `readyz?exclude=etcd`) uses it;
//! - `etcd-readiness` (readyz only): the same probe, as upstream's readiness variant;
//! - `shutdown` (readyz only): fails once the server has begun to shut down (see `shutdown`),
//!   as upstream's does, so a load balancer stops sending before the listener closes.
//!
//! Not provided: upstream's readyz `informer-sync` and `poststarthook/*` checks, which would
//! need state the server does not yet expose (cache sync).

use crate::storage::Storage;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, RawQuery, State as Extract};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::server::describe::discovery::not_found;
use crate::server::state::State;

/// How long the storage probe may take before the check fails.
pub(crate) const STORAGE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// One health check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Ping,
    Log,
    Etcd,
    EtcdReadiness,
    Shutdown,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Check::Ping => "ping",
            Check::Log => "log",
            Check::Etcd => "etcd",
            Check::EtcdReadiness => "etcd-readiness",
            Check::Shutdown => "shutdown",
        }
    }

    async fn run(self, state: &State) -> Result<(), String> {
        match self {
            Check::Ping | Check::Log => Ok(()),
            Check::Shutdown => {
                if state.shutting_down.load(Ordering::Acquire) {
                    Err("process is shutting down".to_owned())
                } else {
                    Ok(())
                }
            }
            Check::Etcd | Check::EtcdReadiness => {
                match tokio::time::timeout(STORAGE_PROBE_TIMEOUT, state.storage.current_revision())
                    .await
                {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(error)) => Err(error.to_string()),
                    Err(_) => Err(format!(
                        "storage did not answer within {}s",
                        STORAGE_PROBE_TIMEOUT.as_secs()
                    )),
                }
            }
        }
    }
}

/// The three probe endpoints and their checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }

    fn checks(self) -> &'static [Check] {
        match self {
            Endpoint::Healthz | Endpoint::Livez => &[Check::Ping, Check::Log, Check::Etcd],
            Endpoint::Readyz => &[
                Check::Ping,
                Check::Log,
                Check::Etcd,
                Check::EtcdReadiness,
                Check::Shutdown,
            ],
        }
    }
}

/// The query of a probe request: whether `verbose` is present and the names to exclude.
#[derive(Debug, Default, PartialEq, Eq)]
struct ProbeQuery {
    verbose: bool,
    exclude: BTreeSet<String>,
}

impl ProbeQuery {
    fn parse(raw: Option<&str>) -> Self {
        let mut query = ProbeQuery::default();
        for pair in raw.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match percent_decode(key).as_str() {
                "verbose" => query.verbose = true,
                "exclude" => {
                    query.exclude.insert(percent_decode(value));
                }
                _ => {}
            }
        }
        query
    }
}

/// Decodes `%XX` escapes and `+` (a space in query strings); malformed escapes stay as they
/// are, and bytes that do not form UTF-8 are replaced.
pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(value) = hex {
                    out.push(value);
                    i += 3;
                    continue;
                }
                out.push(b);
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn text_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
        .into_response()
}

async fn probe(endpoint: Endpoint, state: &State, query: ProbeQuery) -> Response {
    let mut exclude = query.exclude;
    let mut lines = String::new();
    let mut failed = false;
    for check in endpoint.checks() {
        let name = check.name();
        if exclude.remove(name) {
            lines.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        // The reason stays out of the public answer, as upstream keeps it for its log.
        match check.run(state).await {
            Ok(()) => lines.push_str(&format!("[+]{name} ok\n")),
            Err(reason) => {
                tracing::info!(endpoint = endpoint.name(), check = name, %reason, "health check failed");
                lines.push_str(&format!("[-]{name} failed: reason withheld\n"));
                failed = true;
            }
        }
    }
    if !exclude.is_empty() {
        let names: Vec<String> = exclude
            .iter()
            .map(|n| crate::field_labels::go_quote(n))
            .collect();
        lines.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            names.join(",")
        ));
    }
    let name = endpoint.name();
    if failed {
        return text_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{lines}{name} check failed\n"),
        );
    }
    if !query.verbose {
        return text_response(StatusCode::OK, "ok".to_owned());
    }
    text_response(StatusCode::OK, format!("{lines}{name} check passed\n"))
}

async fn single(endpoint: Endpoint, state: &State, check_name: &str) -> Response {
    let Some(check) = endpoint
        .checks()
        .iter()
        .find(|check| check.name() == check_name)
    else {
        return not_found();
    };
    match check.run(state).await {
        Ok(()) => text_response(StatusCode::OK, "ok".to_owned()),
        Err(reason) => text_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {reason}\n"),
        ),
    }
}

fn endpoint_routes(endpoint: Endpoint) -> Router<State> {
    let root = format!("/{}", endpoint.name());
    let one = format!("/{}/{{check}}", endpoint.name());
    Router::new()
        .route(
            &root,
            get(
                move |Extract(state): Extract<State>, RawQuery(raw): RawQuery| async move {
                    probe(endpoint, &state, ProbeQuery::parse(raw.as_deref())).await
                },
            ),
        )
        .route(
            &one,
            get(
                move |Extract(state): Extract<State>, Path(check): Path<String>| async move {
                    single(endpoint, &state, &check).await
                },
            ),
        )
}

/// The probes' paths and each of their checks', as upstream lists them in the index of `/`.
pub(crate) fn listed_paths() -> impl Iterator<Item = String> {
    [Endpoint::Healthz, Endpoint::Livez, Endpoint::Readyz]
        .into_iter()
        .flat_map(|endpoint| {
            let root = format!("/{}", endpoint.name());
            let checks = endpoint
                .checks()
                .iter()
                .map(move |check| format!("/{}/{}", endpoint.name(), check.name()));
            std::iter::once(root).chain(checks)
        })
}

/// `/healthz`, `/livez`, `/readyz` and their per-check paths.
pub(crate) fn routes() -> Router<State> {
    Router::new()
        .merge(endpoint_routes(Endpoint::Healthz))
        .merge(endpoint_routes(Endpoint::Livez))
        .merge(endpoint_routes(Endpoint::Readyz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parsing() {
        let q = ProbeQuery::parse(Some("verbose&exclude=etcd&exclude=a%2Cb&exclude=x+y"));
        assert!(q.verbose);
        assert_eq!(
            q.exclude.into_iter().collect::<Vec<_>>(),
            ["a,b", "etcd", "x y"]
        );
        assert_eq!(ProbeQuery::parse(None), ProbeQuery::default());
        assert!(ProbeQuery::parse(Some("verbose=false")).verbose);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(
            crate::field_labels::go_quote("a\"b\\c\n\u{1}"),
            r#""a\"b\\c\n\x01""#
        );
    }
}
