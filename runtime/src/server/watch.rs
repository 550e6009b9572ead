//! Watches: a chunked stream of `{"type": ..., "object": ...}` lines fed by the store's watch.
//!
//! Each watch runs one producer task that reads the store's event stream (which the engine fans
//! out from one ring buffer, ending laggards with `Lagged`), filters by namespace prefix and
//! selectors (an object leaving the selector is sent as DELETED, one entering as ADDED), renders
//! each event, and pushes it into a bounded queue the HTTP body drains. A client too slow to
//! drain its queue stalls its producer; the store then cuts the producer off as lagged and the
//! client receives an ERROR event with a 410 Status, so no buffer grows without bound.
//!
//! Every object, initial events included, is read through `object::from_stored`, so a resource
//! with conversions is watched in the requested version; an object that fails to convert ends
//! the watch with an ERROR event carrying the 500 (before the stream starts: the plain 500).

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::meta::{Bookmark, ListOptions, ResourceVersionMatch};
use crate::storage::{WatchError, WatchEvent as StoreEvent};

use super::error::ApiError;
use super::keys;
use super::list::{self, columns, include_policy, row};
use super::negotiate::{Output, Shape};
use super::object::{from_stored, parse_rv, wait_for};
use super::selector::Selectors;
use super::{Call, stopped};

/// How an event's object is rendered.
struct Renderer {
    output: Output,
    include: crate::meta::IncludeObjectPolicy,
}

impl Renderer {
    fn event(&self, call: &Call, kind: &str, object: &Value) -> Bytes {
        let info = call.info();
        let rendered = match self.output.shape {
            Shape::Object => object.clone(),
            Shape::Partial => {
                let meta: crate::meta::ObjectMeta = object
                    .get("metadata")
                    .and_then(|m| serde_json::from_value(m.clone()).ok())
                    .unwrap_or_default();
                serde_json::to_value(crate::meta::PartialObjectMetadata::new(meta))
                    .unwrap_or(Value::Null)
            }
            Shape::Table => {
                let meta = crate::meta::ListMeta {
                    resource_version: object
                        .pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    ..Default::default()
                };
                let table = crate::meta::Table::new(
                    meta,
                    columns(info),
                    vec![row(info, object, &self.include)],
                );
                serde_json::to_value(table).unwrap_or(Value::Null)
            }
        };
        line(&json!({"type": kind, "object": rendered}))
    }
}

fn line(value: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

fn bookmark(call: &Call, revision: u64, initial_end: bool) -> Bytes {
    let info = call.info();
    let mut mark = Bookmark::new(
        info.api_version(),
        info.gvk.kind.to_string(),
        revision.to_string(),
    );
    if initial_end {
        mark = mark.initial_events_end();
    }
    line(&json!({"type": "BOOKMARK", "object": mark}))
}

fn error_event(error: ApiError) -> Bytes {
    line(&json!({"type": "ERROR", "object": error.into_status()}))
}

/// Starts a watch; errors before the stream starts are plain HTTP errors.
pub(crate) async fn watch(
    call: Call,
    options: ListOptions,
    selectors: Selectors,
    output: Output,
) -> Result<Response, ApiError> {
    let include = include_policy(&call)?;
    let renderer = Renderer { output, include };
    let rv = options
        .resource_version
        .as_deref()
        .filter(|rv| !rv.is_empty());
    let send_initial = options.send_initial_events == Some(true);
    let bookmarks = options.allow_watch_bookmarks == Some(true);
    let timeout = options
        .timeout_seconds
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .map_or(call.tun.watch_timeout, Duration::from_secs);
    // Unset or "0": the current state as ADDED events first. A specific version: changes
    // after it only, unless initial events were asked for.
    let initial = send_initial || matches!(rv, None | Some("0"));
    let mut first = Vec::new();
    let start = if initial {
        let list_options = ListOptions {
            resource_version: rv.filter(|rv| *rv != "0").map(str::to_owned),
            resource_version_match: rv
                .filter(|rv| *rv != "0")
                .map(|_| ResourceVersionMatch::NotOlderThan),
            ..ListOptions::default()
        };
        let page = list::list(&call, &list_options, &selectors).await?;
        for object in &page.items {
            first.push(renderer.event(&call, "ADDED", object));
        }
        if send_initial && bookmarks {
            first.push(bookmark(&call, page.revision, true));
        }
        page.revision
    } else {
        let wanted = parse_rv(rv.unwrap_or("0"))?;
        wait_for(&call, wanted).await?;
        wanted
    };
    let prefix = keys::collection_prefix(call.info(), call.target.namespace.as_deref());
    let stream = match call.state.storage.watch(&prefix, start).await {
        Ok(stream) => Some(stream),
        Err(e @ (WatchError::Compacted { .. } | WatchError::Lagged { .. })) => {
            first.push(error_event(ApiError::from_watch(e)));
            None
        }
        Err(e) => return Err(ApiError::from_watch(e)),
    };
    let (tx, mut rx) = mpsc::channel::<Bytes>(call.tun.watch_queue.max(first.len() + 1));
    for event in first {
        // The queue was sized to hold the initial events.
        let _ = tx.try_send(event);
    }
    if let Some(stream) = stream {
        tokio::spawn(produce(
            call, renderer, selectors, stream, tx, start, bookmarks, timeout,
        ));
    }
    let body = futures_util::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|next| next.map(Ok::<Bytes, Infallible>))
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, super::JSON);
    Ok(response)
}

/// Why the producer stopped sending.
enum Send {
    Sent,
    Closed,
}

async fn push(tx: &mpsc::Sender<Bytes>, event: Bytes) -> Send {
    match tx.send(event).await {
        Ok(()) => Send::Sent,
        Err(_) => Send::Closed,
    }
}

#[allow(clippy::too_many_arguments)]
async fn produce(
    call: Call,
    renderer: Renderer,
    selectors: Selectors,
    mut stream: crate::storage::WatchStream,
    tx: mpsc::Sender<Bytes>,
    start: u64,
    bookmarks: bool,
    timeout: Duration,
) {
    let mut stop = call.tun.stop.clone();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut ticker = tokio::time::interval(call.tun.bookmark_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate; a bookmark right at the start tells the client nothing.
    ticker.tick().await;
    let mut last = start;
    loop {
        let event = tokio::select! {
            _ = &mut deadline => return,
            _ = stopped(&mut stop) => return,
            _ = tx.closed() => return,
            _ = ticker.tick(), if bookmarks => {
                if let Send::Closed = push(&tx, bookmark(&call, last, false)).await {
                    return;
                }
                continue;
            }
            event = stream.next() => event,
        };
        let event = match event {
            None => return,
            Some(Err(e)) => {
                let _ = push(&tx, error_event(ApiError::from_watch(e))).await;
                return;
            }
            Some(Ok(event)) => event,
        };
        last = last.max(event.revision());
        let rendered = match translate(&call, &selectors, event) {
            Ok(Some((kind, object))) => renderer.event(&call, kind, &object),
            Ok(None) => continue,
            Err(e) => {
                let _ = push(&tx, error_event(e)).await;
                return;
            }
        };
        if let Send::Closed = push(&tx, rendered).await {
            return;
        }
    }
}

/// Turns a store event into a watch event type and object, applying the selectors: a change
/// that moves an object out of the selection is DELETED, into it ADDED.
fn translate(
    call: &Call,
    selectors: &Selectors,
    event: StoreEvent,
) -> Result<Option<(&'static str, Value)>, ApiError> {
    match event {
        StoreEvent::Progress { .. } => Ok(None),
        StoreEvent::Put { kv, prev } => {
            let object = from_stored(call, &kv.value, kv.mod_revision)?;
            let now = selectors.matches(&object);
            let before = match &prev {
                Some(prev) => {
                    let old = from_stored(call, &prev.value, prev.mod_revision)?;
                    Some(selectors.matches(&old))
                }
                None => None,
            };
            Ok(match (before, now) {
                (None | Some(false), true) => Some(("ADDED", object)),
                (Some(true), true) => Some(("MODIFIED", object)),
                (Some(true), false) => Some(("DELETED", object)),
                (_, false) => None,
            })
        }
        StoreEvent::Delete { prev, revision } => {
            // The deleted object carries the revision of its deletion, as upstream sends it.
            let object = from_stored(call, &prev.value, revision)?;
            Ok(selectors.matches(&object).then_some(("DELETED", object)))
        }
    }
}
