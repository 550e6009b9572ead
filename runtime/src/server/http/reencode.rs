//! JSON answers written again the way the client wants them:
//!
//! - indented for people: upstream indents a JSON answer by two spaces when the request says
//!   `?pretty=true`, or says nothing and comes from `curl`, `Wget` or a browser
//!   (`isPrettyPrint` in k8s.io/apiserver's `endpoints/handlers/negotiation`); `?pretty=false`
//!   turns it off for those too. Watches stay one event per line.
//! - an error in the format the request asked for: a failure is a `Status`, written in YAML,
//!   protobuf or (with `CBORServingAndStorage` on) CBOR for a client that accepts those before
//!   JSON, as upstream's `ErrorNegotiated` writes it (a `Status` has field numbers whatever the
//!   kind asked about).
//!
//! The layer sits inside compression: it reads a JSON body (up to [`MOST`] bytes; a larger one
//! passes as it is) and writes it again, keys in their order.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Uri, header};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;

use crate::server::Streamed;
use crate::server::http::negotiate::{self, Format, RequestShape};
use crate::server::http::path::query_values;

/// The largest body indented; a larger one is sent compact rather than held in memory.
const MOST: usize = 64 << 20;

/// Whether the answer to a request for `uri` with `headers` is indented.
fn wants_pretty(uri: &Uri, headers: &HeaderMap) -> bool {
    let asked = query_values(uri, "pretty").find(|value| !value.is_empty());
    if let Some(value) = asked {
        // Go's `strconv.ParseBool`; what it cannot read is false.
        return matches!(value, "1" | "t" | "T" | "TRUE" | "true" | "True");
    }
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ["curl", "Wget", "Mozilla/5.0"]
        .iter()
        .any(|prefix| agent.starts_with(prefix))
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// The format of an error answer to a request with `headers`, when it is not JSON: the client
/// accepts YAML, protobuf or CBOR (when `cbor`) before JSON (an `Accept` the server cannot
/// satisfy gets JSON).
fn error_format(headers: &HeaderMap, cbor: bool) -> Option<Format> {
    negotiate::choose(headers, RequestShape::Single, true, cbor, true, &|_| {
        String::new()
    })
    .ok()
    .map(|output| output.format)
    .filter(|format| *format != Format::Json)
}

/// How a request wants its JSON answer written again, read from the request before it is
/// handed on: the reencoding layer and the request filters that answer early (the auth guard's
/// 401 and 403, which upstream writes with `ErrorNegotiated` too) apply it alike.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wants {
    pretty: bool,
    error_format: Option<Format>,
}

impl Wants {
    /// What a request for `uri` with `headers` wants (`cbor`: the gate is on).
    pub(crate) fn of(uri: &Uri, headers: &HeaderMap, cbor: bool) -> Self {
        Self {
            pretty: wants_pretty(uri, headers),
            error_format: error_format(headers, cbor),
        }
    }

    /// `response` written as wanted: indented, or a failure in the format asked for.
    pub(crate) async fn apply(self, response: Response) -> Response {
        let failed = response.status().is_client_error() || response.status().is_server_error();
        let error_format = self.error_format.filter(|_| failed);
        if !(self.pretty || error_format.is_some())
            || !is_json(&response)
            || response.extensions().get::<Streamed>().is_some()
        {
            return response;
        }
        rewrite(response, error_format).await
    }
}

/// The layer: indents the JSON answers of requests that want it, and writes errors in YAML,
/// protobuf or CBOR (`cbor`: the gate is on) for those that asked for them.
pub(crate) async fn layer(cbor: bool, request: Request, next: Next) -> Response {
    let wants = Wants::of(request.uri(), request.headers(), cbor);
    wants.apply(next.run(request).await).await
}

/// A JSON `response` read whole (up to [`MOST`]) and written again: in `error_format`, or
/// indented.
async fn rewrite(response: Response, error_format: Option<Format>) -> Response {
    let (mut parts, body) = response.into_parts();
    let mut stream = body.into_data_stream();
    let mut read: Vec<Bytes> = Vec::new();
    let mut size = 0;
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            // The body failed midway: what was read is sent, the failure ends it as before.
            let rest = futures_util::stream::iter(read.into_iter().map(Ok))
                .chain(futures_util::stream::once(async move { chunk }));
            return Response::from_parts(parts, Body::from_stream(rest));
        };
        size += chunk.len();
        read.push(chunk);
        if size > MOST {
            let rest = futures_util::stream::iter(read.into_iter().map(Ok)).chain(stream);
            return Response::from_parts(parts, Body::from_stream(rest));
        }
    }
    let whole: Vec<u8> = read.concat();
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&whole) else {
        return Response::from_parts(parts, Body::from(whole));
    };
    if let Some(format) = error_format {
        let written = negotiate::encode(format, parts.status, &value);
        let (written_parts, body) = written.into_parts();
        parts.headers.remove(header::CONTENT_LENGTH);
        if let Some(content_type) = written_parts.headers.get(header::CONTENT_TYPE) {
            parts
                .headers
                .insert(header::CONTENT_TYPE, content_type.clone());
        }
        return Response::from_parts(parts, body);
    }
    let body = match serde_json::to_vec_pretty(&value) {
        Ok(indented) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            indented
        }
        Err(_) => whole,
    };
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(uri: &str, agent: Option<&str>) -> Request {
        let mut builder = Request::get(uri);
        if let Some(agent) = agent {
            builder = builder.header(header::USER_AGENT, agent);
        }
        builder.body(Body::empty()).unwrap_or_default()
    }

    /// `isPrettyPrint`: the query first, then the client.
    #[test]
    fn people_get_indented_json_programs_do_not() {
        let cases = [
            ("/api/v1/pods?pretty=true", None, true),
            ("/api/v1/pods?pretty=1", Some("kubectl/v1.34"), true),
            ("/api/v1/pods?pretty=false", Some("curl/8.5.0"), false),
            ("/api/v1/pods?pretty=nonsense", None, false),
            ("/api/v1/pods?pretty=", Some("curl/8.5.0"), true),
            ("/api/v1/pods", Some("curl/8.5.0"), true),
            ("/api/v1/pods", Some("Wget/1.21"), true),
            (
                "/api/v1/pods",
                Some("Mozilla/5.0 (X11; Linux x86_64)"),
                true,
            ),
            ("/api/v1/pods", Some("kubectl/v1.34.0 (linux/amd64)"), false),
            ("/api/v1/pods", None, false),
        ];
        for (uri, agent, want) in cases {
            let request = request(uri, agent);
            assert_eq!(
                wants_pretty(request.uri(), request.headers()),
                want,
                "{uri} {agent:?}"
            );
        }
    }
}
