//! `/openapi/v2` as kube-openapi's handler serves it (`RegisterOpenAPIVersionedService` in
//! `pkg/handler/handler.go`): the Swagger 2.0 document in JSON or, for client-go, in protobuf
//! (`protobuf`), negotiated on `Accept` the way each release's copy does.
//!
//! What each release's copy offers is data ([`HANDLERS`]): the one 1.20 vendors (kube-openapi
//! d219536, Nov 2020) answers `application/json` and
//! `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` without naming a content type,
//! so Go's `http.ServeContent` sniffs one, and tags each format with the hash of its own bytes;
//! the one 1.27 and later vendor also takes the `.v1.0+protobuf` spelling (ff9a8e8, Feb 2023),
//! names the content type (the `.` spelling for both protobuf ones), and tags both formats with
//! the JSON's hash ("we can re-use the same etag as json because of the Vary header"). Neither
//! serves the format-separated `/swagger.json`, `/swagger-2.0.0.pb-v1` and `.pb-v1.gz` paths,
//! dropped from kube-openapi in Feb 2019 (34ca78d) before any release kapi speaks as; client-go
//! falls back to `/swagger-2.0.0.pb-v1` only when `/openapi/v2` fails.
//!
//! Negotiation is goautoneg's: `Accept` (`*/*` when absent) split into clauses, sorted by its
//! comparison (quality, then concrete type before wildcard), and the first clause matching an
//! offer wins, a `q=0` clause included; none matching is a bare 406. Every answer says
//! `Vary: Accept`; `http.ServeContent` adds `Last-Modified` (when the document was built) and
//! answers `If-None-Match` and `If-Modified-Since` with 304. Gzip comes from the server's
//! compression layer (the documents are far past its threshold). Ranges and `If-Match` are not
//! handled.
//!
//! The document is built once per catalog (a CRD change swaps the catalog, and the next request
//! builds it again), its protobuf encoded once on first demand, both kept with their hashes
//! (kapi's content hash, where upstream takes SHA-512: a tag is opaque to clients).

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use jiff::Timestamp;
use jiff::fmt::rfc2822::{DateTimeParser, DateTimePrinter};

use crate::server::state::ServerState;
use crate::{KubeVersion, Registry};

use super::{content_hash, protobuf, v2_document};

/// The format of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Protobuf,
}

/// One media type a handler answers in.
#[derive(Debug)]
struct Offer {
    /// The `Accept` subtype it matches (the type is always `application`).
    subtype: &'static str,
    format: Format,
    /// The `Content-Type` the answer names; `None` leaves it to Go's sniffing.
    content_type: Option<&'static str>,
}

/// What one kube-openapi handler offers, from the release that first vendors it.
#[derive(Debug)]
struct Handler {
    since: KubeVersion,
    /// In the handler's order of preference.
    offers: &'static [Offer],
    /// Whether the protobuf answer carries the JSON's ETag rather than its own.
    json_etag_for_all: bool,
}

const JSON: &str = "json";
const PROTOBUF_AT: &str = "com.github.proto-openapi.spec.v2@v1.0+protobuf";
const PROTOBUF_DOT: &str = "com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Each handler, oldest first; a release uses the last one it has reached.
static HANDLERS: &[Handler] = &[
    Handler {
        since: KubeVersion::new(1, 20),
        offers: &[
            Offer {
                subtype: JSON,
                format: Format::Json,
                content_type: None,
            },
            Offer {
                subtype: PROTOBUF_AT,
                format: Format::Protobuf,
                content_type: None,
            },
        ],
        json_etag_for_all: false,
    },
    Handler {
        since: KubeVersion::new(1, 27),
        offers: &[
            Offer {
                subtype: JSON,
                format: Format::Json,
                content_type: Some("application/json"),
            },
            Offer {
                subtype: PROTOBUF_AT,
                format: Format::Protobuf,
                content_type: Some(concat!(
                    "application/",
                    "com.github.proto-openapi.spec.v2.v1.0+protobuf"
                )),
            },
            Offer {
                subtype: PROTOBUF_DOT,
                format: Format::Protobuf,
                content_type: Some(concat!(
                    "application/",
                    "com.github.proto-openapi.spec.v2.v1.0+protobuf"
                )),
            },
        ],
        json_etag_for_all: true,
    },
];

fn handler(at: KubeVersion) -> &'static Handler {
    HANDLERS
        .iter()
        .rev()
        .find(|handler| handler.since <= at)
        .unwrap_or(&HANDLERS[0])
}

/// The document built for one catalog.
#[derive(Debug)]
struct Built {
    /// The catalog it describes; held weakly so a swapped-out catalog is not kept alive, and
    /// compared by address (the allocation stays while this is held, so it is never reused).
    registry: Weak<Registry>,
    /// When it was built, to the second: `Last-Modified`.
    at: Timestamp,
    json: Bytes,
    json_hash: String,
    /// The protobuf form and its hash, encoded on first demand.
    protobuf: OnceLock<(Bytes, String)>,
}

impl Built {
    fn new(registry: &Arc<Registry>, state: &ServerState) -> Self {
        let doc = v2_document(registry, state);
        let json = serde_json::to_vec(&doc).unwrap_or_default();
        let at = Timestamp::now();
        Self {
            registry: Arc::downgrade(registry),
            at: Timestamp::from_second(at.as_second()).unwrap_or(at),
            json_hash: content_hash(&json),
            json: Bytes::from(json),
            protobuf: OnceLock::new(),
        }
    }

    /// The protobuf bytes and their hash. The JSON is read back rather than rebuilt, so both
    /// forms describe the same catalog.
    fn protobuf(&self) -> &(Bytes, String) {
        self.protobuf.get_or_init(|| {
            let doc = serde_json::from_slice(&self.json).unwrap_or_default();
            let bytes = protobuf::encode(&doc);
            let hash = content_hash(&bytes);
            (Bytes::from(bytes), hash)
        })
    }
}

/// The last document built, shared by the requests of one server.
#[derive(Debug, Default)]
pub(super) struct Cache {
    slot: Mutex<Option<Arc<Built>>>,
}

impl Cache {
    /// The document of the catalog served now, built if the catalog changed since.
    fn current(&self, state: &ServerState) -> Arc<Built> {
        let registry = state.registry();
        let cached = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|built| std::ptr::eq(built.registry.as_ptr(), Arc::as_ptr(&registry)));
        if let Some(built) = cached {
            return built;
        }
        let built = Arc::new(Built::new(&registry, state));
        *self.slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&built));
        built
    }
}

/// One clause of an `Accept` header, as goautoneg parses it.
#[derive(Debug, Clone, PartialEq)]
struct Clause<'a> {
    kind: &'a str,
    subtype: &'a str,
    quality: f32,
}

/// goautoneg's `ParseAccept`: clauses without a `/` are dropped (a lone `*` is `*/*`), an
/// unreadable `q` is 0, and the list is sorted by its comparison with an insertion sort, as Go
/// sorts short lists (the comparison is not a strict order, so the algorithm matters).
fn parse_accept(header: &str) -> Vec<Clause<'_>> {
    let mut clauses: Vec<Clause<'_>> = Vec::new();
    for part in header.split(',') {
        let mut params = part.trim_matches(' ').split(';');
        let range = params.next().unwrap_or_default();
        let pieces: Vec<&str> = range.split('/').collect();
        let kind = pieces[0].trim_matches(' ');
        let subtype = match pieces.as_slice() {
            [_] if kind == "*" => "*",
            [_, subtype] => subtype.trim_matches(' '),
            _ => continue,
        };
        let mut quality = 1.0;
        for param in params {
            if let Some((token, value)) = param.split_once('=')
                && token.trim_matches(' ') == "q"
            {
                quality = value.parse::<f32>().unwrap_or(0.0);
            }
        }
        clauses.push(Clause {
            kind,
            subtype,
            quality,
        });
    }
    let less = |a: &Clause<'_>, b: &Clause<'_>| {
        a.quality > b.quality
            || (a.kind != "*" && b.kind == "*")
            || (a.subtype != "*" && b.subtype == "*")
    };
    for i in 1..clauses.len() {
        let mut j = i;
        while j > 0 && less(&clauses[j], &clauses[j - 1]) {
            clauses.swap(j, j - 1);
            j -= 1;
        }
    }
    clauses
}

/// The offer the first matching clause picks.
fn negotiate(handler: &'static Handler, accept: &str) -> Option<&'static Offer> {
    let accept = if accept.is_empty() { "*/*" } else { accept };
    parse_accept(accept).iter().find_map(|clause| {
        handler.offers.iter().find(|offer| {
            (clause.kind == "application" || clause.kind == "*")
                && (clause.subtype == offer.subtype || clause.subtype == "*")
        })
    })
}

/// What Go's `http.DetectContentType` makes of these documents: text when the first 512 bytes
/// hold no byte its sniffer counts as binary, else `application/octet-stream`.
fn sniffed_content_type(body: &[u8]) -> &'static str {
    let binary = |b: &u8| matches!(b, 0x00..=0x08 | 0x0b | 0x0e..=0x1a | 0x1c..=0x1f);
    if body.iter().take(512).any(binary) {
        "application/octet-stream"
    } else {
        "text/plain; charset=utf-8"
    }
}

/// `If-None-Match` holds `etag` (weak comparison) or `*`; `None` when it is absent or empty.
fn none_match(headers: &HeaderMap, etag: &str) -> Option<bool> {
    let value = headers
        .get(header::IF_NONE_MATCH)?
        .to_str()
        .ok()
        .filter(|v| !v.trim().is_empty())?;
    let bare = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    Some(
        value
            .split(',')
            .any(|tag| tag.trim() == "*" || bare(tag) == bare(etag)),
    )
}

/// `If-Modified-Since` is at or after `at` (only consulted without `If-None-Match`).
fn not_modified_since(headers: &HeaderMap, at: Timestamp) -> bool {
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| DateTimeParser::new().parse_timestamp(v).ok())
        .is_some_and(|since| at <= since)
}

/// The answer to `GET /openapi/v2`.
pub(super) fn answer(state: &ServerState, cache: &Cache, headers: &HeaderMap) -> Response {
    let handler = handler(state.kube_version);
    // Go's `Header.Get`: the first `Accept` header only.
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let Some(offer) = negotiate(handler, accept) else {
        let mut refused = StatusCode::NOT_ACCEPTABLE.into_response();
        refused
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
        return refused;
    };
    let built = cache.current(state);
    let (body, etag) = match offer.format {
        Format::Json => (built.json.clone(), built.json_hash.as_str()),
        Format::Protobuf => {
            let (bytes, hash) = built.protobuf();
            let etag = if handler.json_etag_for_all {
                built.json_hash.as_str()
            } else {
                hash.as_str()
            };
            (bytes.clone(), etag)
        }
    };
    let etag = format!("\"{etag}\"");
    let content_type = offer
        .content_type
        .unwrap_or_else(|| sniffed_content_type(&body));
    let last_modified = DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&built.at)
        .ok();
    let unchanged =
        none_match(headers, &etag).unwrap_or_else(|| not_modified_since(headers, built.at));
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut ok = Response::new(Body::from(body));
        ok.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        ok
    };
    let headers = response.headers_mut();
    headers.insert(header::VARY, HeaderValue::from_static("Accept"));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    // A 304 with an ETag leaves `Last-Modified` out, as `writeNotModified` does.
    if !unchanged && let Some(value) = last_modified.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.insert(header::LAST_MODIFIED, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(at: u16, accept: &str) -> Option<(Format, Option<&'static str>)> {
        negotiate(handler(KubeVersion::new(1, at)), accept)
            .map(|offer| (offer.format, offer.content_type))
    }

    /// kube-openapi's handler at each release: what client-go sends (the `@` spelling), the
    /// `.` spelling 1.27 added, JSON, wildcards, and types it has no answer for.
    #[test]
    fn negotiation_per_release() {
        let pb_at = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        let pb_dot = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
        let pb_type = Some(pb_dot);
        assert_eq!(chosen(20, pb_at), Some((Format::Protobuf, None)));
        assert_eq!(chosen(20, pb_dot), None);
        assert_eq!(chosen(20, ""), Some((Format::Json, None)));
        assert_eq!(chosen(20, "application/yaml"), None);
        for at in [28, 34, 36] {
            assert_eq!(chosen(at, pb_at), Some((Format::Protobuf, pb_type)));
            assert_eq!(chosen(at, pb_dot), Some((Format::Protobuf, pb_type)));
            assert_eq!(
                chosen(at, "application/json"),
                Some((Format::Json, Some("application/json")))
            );
            assert_eq!(
                chosen(at, "*/*"),
                Some((Format::Json, Some("application/json")))
            );
            assert_eq!(chosen(at, "text/html"), None);
        }
        // Quality first; among equals, the concrete type before a wildcard.
        assert_eq!(
            chosen(28, &format!("application/json;q=0.5, {pb_at}")).map(|c| c.0),
            Some(Format::Protobuf)
        );
        assert_eq!(
            chosen(28, &format!("*/*, {pb_at}")).map(|c| c.0),
            Some(Format::Protobuf)
        );
        assert_eq!(chosen(28, "application/*").map(|c| c.0), Some(Format::Json));
        // goautoneg keeps a q=0 clause: it still matches.
        assert_eq!(
            chosen(28, "application/json;q=0").map(|c| c.0),
            Some(Format::Json)
        );
        // Matching is case-sensitive, as goautoneg's comparison is.
        assert_eq!(chosen(28, "Application/JSON"), None);
    }

    /// goautoneg's comparison, run by an insertion sort: a concrete type passes a wildcard of
    /// higher quality it is compared with; unreadable clauses are dropped.
    #[test]
    fn accept_sorting_is_goautonegs() {
        let clauses = parse_accept("*/*;q=0.9, text/plain;q=0.1, bogus, *");
        let order: Vec<(&str, &str)> = clauses.iter().map(|c| (c.kind, c.subtype)).collect();
        assert_eq!(order, [("*", "*"), ("text", "plain"), ("*", "*")]);
    }

    /// `http.DetectContentType` on the two bodies.
    #[test]
    fn sniffing() {
        assert_eq!(
            sniffed_content_type(br#"{"swagger":"2.0"}"#),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            sniffed_content_type(b"\x0a\x032.0\x12\x1c"),
            "application/octet-stream"
        );
    }
}
