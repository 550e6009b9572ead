//! Watches: a chunked stream of `{"type": ..., "object": ...}` lines.
//!
//! Changes come from the server's watch cache (`watch_cache`): one store watch per resource
//! and version, each change decoded and encoded once, and a ring of recent changes every
//! watcher of the resource reads with its own cursor. A watcher is its response body: polled
//! by the connection's task, it takes the ring's new entries, keeps those under its namespace
//! prefix that its selectors pass (an object leaving the selector is sent as DELETED with its
//! previous state at the change's resourceVersion, one entering as ADDED, decided on the
//! decoded objects) and sends their shared lines; Table and
//! PartialObjectMetadata watchers render their own lines from the shared decoded object. A
//! client too slow to read lets the ring move past its cursor; its stream then ends after the
//! events it was owed, without an ERROR event, as upstream's cacher ends a watcher that does
//! not keep up: the client watches again from the last resourceVersion it saw (reading that
//! stretch from the store's history) instead of listing everything again, and nothing buffers
//! without bound. A watch that starts at a revision the
//! ring no longer covers reads the store's history through its own store watch first and
//! joins the ring at the first change it has not sent: no gap, no duplicate.
//!
//! Initial events (a watch without a resourceVersion, or one that asks for them) are read from
//! the store a page at a time, at the revision the watch starts from, as the client takes
//! them; the changes follow from that revision on. What a watcher holds is so bounded whatever
//! the collection's size: one page of initial events, and what its connection has not yet
//! written, which `send_window` caps (a client that stops reading stops the watcher there).
//!
//! Every object, initial events included, is served as `stored::from_stored` serves it (or
//! spliced from the stored bytes to the same result, see `served`), so a resource with
//! conversions is watched in the requested version; an object that fails to convert ends the
//! watch with an ERROR event carrying the 500 (before the stream starts: the plain 500).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::{Stream, StreamExt as _};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::meta::{Bookmark, ListOptions, ResourceVersionMatch};
use crate::storage::{Storage, WatchError, WatchEvent as StoreEvent, WatchStream};

use crate::server::handlers::list;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::{Format, Output, Shape};
use crate::server::http::send_window::SendWindow;
use crate::server::http::{cbor, protobuf};
use crate::server::objects::render::Rendering;
use crate::server::objects::revision::{parse_rv, wait_for};
use crate::server::objects::selector::Selectors;
use crate::server::objects::stored::{convert_event, from_stored_converted, has_webhook};
use crate::server::state::keys;
use crate::server::state::release::Feature;
use crate::server::state::watch_cache::{Entry, EventType, Feed, Next, event_line, watcher_id};
use crate::server::state::watch_cache::{error_event, line};
use crate::server::{Call, Streamed, stopped};

/// How an event's object is rendered and framed.
#[derive(Clone)]
struct Renderer {
    output: Output,
    rendering: Rendering,
    /// The watched kind's `apiVersion`, which protobuf frames name (taken once, not per event).
    api_version: String,
}

impl Renderer {
    /// An event carrying `object` as the watch's representation asks.
    fn event(&self, call: &Call, kind: &str, object: &Value) -> Bytes {
        let rendered = self.rendering.object(call.info(), object.clone());
        self.frame(kind, &rendered)
    }

    /// An event in the watch's framing: a JSON line, a length-prefixed protobuf `WatchEvent`,
    /// or a CBOR data item.
    fn frame(&self, kind: &str, object: &Value) -> Bytes {
        match self.output.format {
            Format::Protobuf => protobuf_frame(kind, object),
            Format::Cbor => cbor_frame(kind, object),
            Format::Json | Format::Yaml => line(&json!({"type": kind, "object": object})),
        }
    }

    /// An event made as a JSON line (the ERROR events of the watch cache and the store) in the
    /// watch's framing.
    fn relay(&self, line: Bytes) -> Bytes {
        if !matches!(self.output.format, Format::Protobuf | Format::Cbor) {
            return line;
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(event) => {
                let kind = event.get("type").and_then(Value::as_str).unwrap_or("ERROR");
                self.frame(kind, event.get("object").unwrap_or(&Value::Null))
            }
            Err(e) => self.frame("ERROR", &error_status(ApiError::internal(e))),
        }
    }

    /// The bookmark at `revision`, with the annotation that ends the initial events when
    /// `initial_end`.
    fn bookmark(&self, call: &Call, revision: u64, initial_end: bool) -> Bytes {
        let info = call.info();
        let mut mark = Bookmark::new(
            info.api_version(),
            info.gvk.kind.to_string(),
            revision.to_string(),
        );
        if initial_end {
            mark = mark.initial_events_end();
        }
        self.frame("BOOKMARK", &json!(mark))
    }
}

/// An event in protobuf framing; an object that cannot be written ends the watch with the 500
/// it is.
fn protobuf_frame(kind: &str, object: &Value) -> Bytes {
    let frame = protobuf::watch_frame(kind, object)
        .or_else(|e| protobuf::watch_frame("ERROR", &error_status(ApiError::internal(e))));
    Bytes::from(frame.unwrap_or_default())
}

/// An event in CBOR framing (one self-described data item of the sequence); an object that
/// cannot be written ends the watch with the 500 it is.
fn cbor_frame(kind: &str, object: &Value) -> Bytes {
    let frame = cbor::watch_frame(kind, object)
        .or_else(|e| cbor::watch_frame("ERROR", &error_status(ApiError::internal(e))));
    Bytes::from(frame.unwrap_or_default())
}

fn error_status(error: ApiError) -> Value {
    json!(error.into_status())
}

/// Serves a watch of the collection or, with `name`, of one object in it; errors before the
/// stream starts are plain HTTP errors.
pub(crate) async fn serve(
    call: &Call,
    name: Option<&str>,
    output: Output,
) -> Result<Response, ApiError> {
    let mut options: ListOptions = call.query()?;
    list::validate(&mut options, true, call.state.feature(Feature::WatchList))?;
    let selectors = Selectors::of_request(call.info(), call.state.kube_version, &options, name)?;
    let mut response = watch(call.clone(), options, selectors, output).await?;
    response.extensions_mut().insert(Streamed);
    Ok(response)
}

/// Starts a watch.
async fn watch(
    call: Call,
    options: ListOptions,
    selectors: Selectors,
    output: Output,
) -> Result<Response, ApiError> {
    let rendering = Rendering::of(&call, output)?;
    let api_version = call.info().api_version();
    let renderer = Renderer {
        output,
        rendering,
        api_version,
    };
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
    let mut first = VecDeque::new();
    let mut initial_pages = None;
    let start = if initial {
        let list_options = ListOptions {
            resource_version: rv.filter(|rv| *rv != "0").map(str::to_owned),
            resource_version_match: rv
                .filter(|rv| *rv != "0")
                .map(|_| ResourceVersionMatch::NotOlderThan),
            ..ListOptions::default()
        };
        // The first page is read before the stream starts, so its errors are plain HTTP
        // errors and its revision is where the changes start; the rest follow as the client
        // reads them.
        let mut pages = InitialPages {
            call: call.clone(),
            selectors: selectors.clone(),
            renderer: renderer.clone(),
            end_bookmark: send_initial && bookmarks,
            next: None,
        };
        let page = pages.read(list_options, FIRST_PAGE).await?;
        let revision = page.revision;
        if pages.queue(page, &mut first) {
            initial_pages = Some(pages);
        }
        revision
    } else {
        let wanted = parse_rv(rv.unwrap_or("0"))?;
        wait_for(&call, wanted).await?;
        wanted
    };
    let prefix = keys::collection_prefix(call.info(), call.target.namespace.as_deref());
    let feed = match call.state.watch_cache.feed(&call).await {
        Ok(feed) => Some(feed),
        Err(e @ (WatchError::Compacted { .. } | WatchError::Lagged { .. })) => {
            first.push_back(renderer.relay(error_event(ApiError::from_watch(e))));
            None
        }
        Err(e) => return Err(ApiError::from_watch(e)),
    };
    let phase = match &feed {
        None => Phase::Done,
        Some(feed) => match feed.join(start) {
            Some(cursor) => Phase::Live { cursor },
            // Older than the shared ring: history from the store first, for this watcher.
            None => match call.state.storage.watch(&prefix, start).await {
                Ok(stream) => Phase::CatchUp(converting(call.clone(), stream)),
                Err(e @ (WatchError::Compacted { .. } | WatchError::Lagged { .. })) => {
                    first.push_back(renderer.relay(error_event(ApiError::from_watch(e))));
                    Phase::Done
                }
                Err(e) => return Err(ApiError::from_watch(e)),
            },
        },
    };
    let mut stop = call.tun.stop.clone();
    let ends = Instant::now() + timeout;
    let bookmarks = bookmarks.then(|| BookmarkClock {
        period: call.tun.bookmark_interval,
        ends,
        next: Box::pin(tokio::time::sleep_until(ends)),
    });
    let watcher = Watcher {
        id: watcher_id(),
        call,
        renderer,
        selectors,
        prefix,
        pending: first,
        initial: initial_pages,
        window: SendWindow::new(WINDOW),
        phase,
        feed,
        after: start,
        last: start,
        deadline: Box::pin(tokio::time::sleep_until(ends)),
        stop: Box::pin(async move { stopped(&mut stop).await }),
        bookmarks: bookmarks.and_then(BookmarkClock::started),
        taken: Vec::new(),
    };
    let content_type = match output.format {
        Format::Protobuf => HeaderValue::from_static(protobuf::WATCH_MEDIA_TYPE),
        // Upstream's answer to a watch that accepts `application/cbor`.
        Format::Cbor => HeaderValue::from_static(cbor::SEQ_MEDIA_TYPE),
        Format::Json | Format::Yaml => crate::server::JSON,
    };
    let mut response = Response::new(Body::from_stream(watcher));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, content_type);
    Ok(response)
}

/// Where a watcher reads changes from.
enum Phase {
    /// The store's watch of the watcher's collection, until it reaches the shared ring.
    CatchUp(WatchStream),
    /// The shared ring, at this sequence number.
    Live { cursor: u64 },
    /// Nothing more: the stream ends once `pending` is sent.
    Done,
}

/// How many ring entries a watcher takes per poll, so it does not hold the ring's lock long.
const TAKE: usize = 64;
/// Small event lines are joined into chunks of up to this many bytes (fewer, larger writes);
/// larger lines, shared ones from the watch cache among them, go out as they are.
const CHUNK: usize = 8 * 1024;
/// The bytes a watcher may have handed to its connection and not yet written (see
/// `send_window`): what a client that stops reading can make the server hold for it,
/// besides the one page of initial events being sent.
const WINDOW: usize = 32 * 1024;
/// Objects in the first page of initial events; later pages hold about `PAGE_BYTES` of
/// rendered events, by the average event size of the page before.
const FIRST_PAGE: i64 = 16;
const PAGE_BYTES: usize = 16 * 1024;
const MAX_PAGE: i64 = 500;

/// One watch's response body: the initial events, then the changes of its collection that its
/// selectors pass, bookmarks when asked, until the timeout, the server's stop or an error.
///
/// The body is polled by the connection's own task, so a watcher costs no task, channel or
/// per-event timer of its own. What it holds is bounded: one page of initial events read from
/// the store as the client takes them, and what its connection has not yet written
/// (`window`). A client that does not read stops the polling, its cursor falls behind, and
/// its stream ends (without an error) once the ring has moved past it.
struct Watcher {
    id: u64,
    call: Call,
    renderer: Renderer,
    selectors: Selectors,
    /// Keys of the watched collection start with this (the feed covers every namespace).
    prefix: String,
    pending: VecDeque<Bytes>,
    /// The initial events not read yet, when the watch sends them.
    initial: Option<InitialPages>,
    window: SendWindow,
    phase: Phase,
    feed: Option<Arc<Feed>>,
    /// Changes up to this revision were sent already (or before the watch's start).
    after: u64,
    /// Every change up to this revision has been seen: the revision of bookmarks.
    last: u64,
    deadline: Pin<Box<tokio::time::Sleep>>,
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// When the next bookmark is due, for watches that asked for bookmarks.
    bookmarks: Option<BookmarkClock>,
    /// Reused buffer of entries taken from the ring.
    taken: Vec<Arc<Entry>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(feed) = &self.feed {
            feed.leave(self.id);
        }
    }
}

impl Stream for Watcher {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            let ended = matches!(this.phase, Phase::Done) && this.initial.is_none();
            if !(ended && this.pending.is_empty())
                && (this.deadline.as_mut().poll(cx).is_ready()
                    || this.stop.as_mut().poll(cx).is_ready())
            {
                this.phase = Phase::Done;
                this.initial = None;
                this.pending.clear();
                return Poll::Ready(None);
            }
            // Nothing more is made while the connection holds a window's worth unwritten.
            if this.window.poll_room(cx).is_pending() {
                return Poll::Pending;
            }
            if let Some(chunk) = this.take_pending() {
                return Poll::Ready(Some(Ok(this.window.track(chunk))));
            }
            if let Some(pages) = &mut this.initial {
                match pages.poll_next_page(cx, &mut this.pending) {
                    Poll::Ready(more) => {
                        if !more {
                            this.initial = None;
                        }
                        continue;
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
            if matches!(this.phase, Phase::Done) {
                return Poll::Ready(None);
            }
            let progressed = match &mut this.phase {
                Phase::Done => true,
                Phase::CatchUp(_) => this.poll_catch_up(cx),
                Phase::Live { .. } => this.poll_live(cx),
            };
            if progressed {
                continue;
            }
            if let Some(clock) = &mut this.bookmarks
                && clock.next.as_mut().poll(cx).is_ready()
            {
                let mark = this.renderer.bookmark(&this.call, this.last, false);
                this.pending.push_back(mark);
                this.bookmarks = this.bookmarks.take().and_then(BookmarkClock::started);
                continue;
            }
            return Poll::Pending;
        }
    }
}

/// The initial events after the first page: read from the store a page at a time, at the
/// first page's revision (through its continue token), once the client has taken the ones
/// before. A watcher so holds one page of them at most, however large the collection.
struct InitialPages {
    call: Call,
    selectors: Selectors,
    renderer: Renderer,
    /// Whether the last page is followed by the bookmark that ends the initial events.
    end_bookmark: bool,
    next: Option<PageRead>,
}

/// The read of the next page of initial events.
type PageRead = Pin<Box<dyn Future<Output = Result<InitialPage, ApiError>> + Send>>;

/// One page of initial events, rendered.
struct InitialPage {
    lines: Vec<Bytes>,
    revision: u64,
    continue_: Option<String>,
    /// How many objects the page was asked for, and the rendered bytes of the ones read.
    asked: i64,
    bytes: usize,
}

impl InitialPages {
    /// Reads one page with `options` (its `limit` set to `limit`).
    fn read(
        &self,
        mut options: ListOptions,
        limit: i64,
    ) -> impl Future<Output = Result<InitialPage, ApiError>> + Send + 'static {
        let call = self.call.clone();
        let selectors = self.selectors.clone();
        let renderer = self.renderer.clone();
        options.limit = Some(limit);
        async move {
            let (lines, revision, continue_) = if renderer.output == Output::JSON {
                let page = list::list_json(&call, &options, &selectors).await?;
                let lines: Vec<Bytes> = page.items.iter().map(|o| event_line("ADDED", o)).collect();
                (lines, page.revision, page.continue_)
            } else {
                let page = list::list(&call, &options, &selectors).await?;
                let lines = page
                    .items
                    .iter()
                    .map(|o| renderer.event(&call, "ADDED", o))
                    .collect();
                (lines, page.revision, page.continue_)
            };
            let bytes = lines.iter().map(Bytes::len).sum();
            Ok(InitialPage {
                lines,
                revision,
                continue_,
                asked: limit,
                bytes,
            })
        }
    }

    /// Queues `page`'s events and starts reading the next page; false when it was the last.
    fn queue(&mut self, page: InitialPage, pending: &mut VecDeque<Bytes>) -> bool {
        let count = page.lines.len();
        pending.extend(page.lines);
        let Some(token) = page.continue_ else {
            if self.end_bookmark {
                pending.push_back(self.renderer.bookmark(&self.call, page.revision, true));
            }
            return false;
        };
        // About PAGE_BYTES of events per page, by the average event size of this page.
        let limit = match page.bytes.checked_div(count) {
            Some(average) if average > 0 => i64::try_from(PAGE_BYTES / average).unwrap_or(MAX_PAGE),
            _ => page.asked.saturating_mul(2),
        }
        .clamp(1, MAX_PAGE);
        let options = ListOptions {
            continue_: Some(token),
            ..ListOptions::default()
        };
        self.next = Some(Box::pin(self.read(options, limit)));
        true
    }

    /// Reads the next page into `pending`; `Ready(false)` once the initial events are all
    /// queued (or ended by an error line).
    fn poll_next_page(
        &mut self,
        cx: &mut Context<'_>,
        pending: &mut VecDeque<Bytes>,
    ) -> Poll<bool> {
        let Some(next) = &mut self.next else {
            return Poll::Ready(false);
        };
        let page = match next.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(page) => page,
        };
        self.next = None;
        match page {
            Ok(page) => Poll::Ready(self.queue(page, pending)),
            Err(e) => {
                pending.push_back(self.renderer.relay(error_event(e)));
                Poll::Ready(false)
            }
        }
    }
}

/// The bookmark schedule of upstream's watch cache: one every `period`, and one 2 s before the
/// watch ends, so a reflector whose short watch times out resumes from a recent
/// resourceVersion (`nextBookmarkTime` in upstream's `cache_watcher.go`).
struct BookmarkClock {
    period: Duration,
    ends: Instant,
    next: Pin<Box<tokio::time::Sleep>>,
}

impl BookmarkClock {
    /// How long before the end of a watch its last bookmark is sent.
    const BEFORE_END: Duration = Duration::from_secs(2);

    /// Schedules the next bookmark from now; `None` once the last one is past (as upstream,
    /// a watch shorter than 2 s gets no bookmark before it ends).
    fn started(mut self) -> Option<Self> {
        let now = Instant::now();
        let before_end = self.ends.checked_sub(Self::BEFORE_END)?;
        let due = (now + self.period).min(before_end);
        if due <= now {
            return None;
        }
        self.next.as_mut().reset(due);
        Some(self)
    }
}

impl Watcher {
    /// The next chunk to send: one event as it is, or several joined into one write.
    fn take_pending(&mut self) -> Option<Bytes> {
        let first = self.pending.pop_front()?;
        if self.pending.is_empty() || first.len() >= CHUNK {
            return Some(first);
        }
        let mut chunk = first.to_vec();
        while let Some(next) = self.pending.front() {
            if chunk.len() + next.len() > CHUNK {
                break;
            }
            chunk.extend_from_slice(next);
            self.pending.pop_front();
        }
        Some(Bytes::from(chunk))
    }

    /// Ends the watch after `line`, an event made as a JSON line (an ERROR).
    fn end_with(&mut self, line: Bytes) {
        let line = self.renderer.relay(line);
        self.pending.push_back(line);
        self.phase = Phase::Done;
    }

    /// Reads the private store watch; whether anything changed (otherwise it is pending).
    fn poll_catch_up(&mut self, cx: &mut Context<'_>) -> bool {
        let Phase::CatchUp(stream) = &mut self.phase else {
            return true;
        };
        let event = match Pin::new(stream).poll_next(cx) {
            Poll::Pending => return false,
            Poll::Ready(None) => {
                self.phase = Phase::Done;
                return true;
            }
            Poll::Ready(Some(Err(e))) => {
                self.end_with(error_event(ApiError::from_watch(e)));
                return true;
            }
            Poll::Ready(Some(Ok(event))) => event,
        };
        let revision = event.revision();
        self.last = self.last.max(revision);
        if revision > self.after {
            match translate(&self.call, &self.selectors, event) {
                Ok(Some((kind, object))) => {
                    let line = self.renderer.event(&self.call, kind, &object);
                    self.pending.push_back(line);
                }
                Ok(None) => {}
                Err(e) => {
                    self.end_with(error_event(e));
                    return true;
                }
            }
            self.after = revision;
        }
        // Caught up with the shared ring: leave the store's watch for it.
        if let Some(cursor) = self.feed.as_ref().and_then(|f| f.join(self.after)) {
            self.phase = Phase::Live { cursor };
        }
        true
    }

    /// Reads the shared ring; whether anything changed (otherwise the feed will wake us).
    fn poll_live(&mut self, cx: &mut Context<'_>) -> bool {
        let (Phase::Live { cursor }, Some(feed)) = (&mut self.phase, &self.feed) else {
            self.phase = Phase::Done;
            return true;
        };
        let mut taken = std::mem::take(&mut self.taken);
        let next = feed.next(cursor, TAKE, &mut taken, self.id, cx.waker());
        let progressed = match next {
            Next::Entries => {
                for entry in taken.drain(..) {
                    self.last = self.last.max(entry.revision);
                    if entry.revision <= self.after || !entry.key.starts_with(&self.prefix) {
                        continue;
                    }
                    self.after = entry.revision;
                    match self.render(&entry) {
                        Ok(Some(line)) => self.pending.push_back(line),
                        Ok(None) => {}
                        Err(line) => {
                            self.end_with(line);
                            break;
                        }
                    }
                }
                true
            }
            Next::Lagged => {
                // Upstream's cacher closes such a watcher without an error (`forget`), so the
                // reflector resumes from its last event rather than relisting; it logs the
                // close too ("Forcing ... watcher close due to unresponsiveness").
                let info = self.call.info();
                tracing::info!(
                    resource = %info.plural,
                    group = %info.gvk.group,
                    last_sent = self.after,
                    "watcher ended: its client did not keep up with the changes"
                );
                self.phase = Phase::Done;
                true
            }
            Next::Ended(error) => {
                match error {
                    Some(line) => self.end_with(line),
                    None => self.phase = Phase::Done,
                }
                true
            }
            Next::Idle(progress) => {
                self.last = self.last.max(progress);
                false
            }
        };
        taken.clear();
        self.taken = taken;
        progressed
    }

    /// The line this watcher gets for a change, `None` when its selectors drop it, or the
    /// ERROR line that ends it.
    fn render(&self, entry: &Entry) -> Result<Option<Bytes>, Bytes> {
        let kind = if self.selectors.is_empty() {
            entry.natural
        } else {
            let now = self.selectors.matches(entry.value()?);
            let prev = entry.prev_value(&self.call).transpose()?;
            let before = prev.map(|prev| self.selectors.matches(prev));
            // A change that moves an object out of the selection is DELETED, into it ADDED.
            match (entry.natural, before, now) {
                (_, Some(true), false) => {
                    let left = left_selection(prev, entry.revision);
                    return Ok(Some(self.renderer.event(&self.call, "DELETED", &left)));
                }
                (EventType::Deleted, _, true) => EventType::Deleted,
                (_, None | Some(false), true) => EventType::Added,
                (_, Some(true), true) => EventType::Modified,
                (_, _, false) => return Ok(None),
            }
        };
        match (self.renderer.output.shape, self.renderer.output.format) {
            (Shape::Object, Format::Protobuf) => {
                let object_kind = &self.call.info().gvk.kind;
                entry
                    .frame(kind, &self.renderer.api_version, object_kind)
                    .map(Some)
            }
            (Shape::Object, Format::Cbor) => entry.cbor_frame(kind).map(Some),
            (Shape::Object, _) => entry.line(kind).map(Some),
            _ => {
                let object = entry.value()?;
                Ok(Some(self.renderer.event(&self.call, kind.as_str(), object)))
            }
        }
    }
}

/// The store's watch with its values converted by the resource's conversion webhook, when it
/// has one, so `translate` renders them synchronously. A failed conversion ends the watch
/// with an ERROR event, as upstream's watcher ends on an event it cannot decode; the storage
/// error type carries its message.
fn converting(call: Call, stream: WatchStream) -> WatchStream {
    if !has_webhook(&call) {
        return stream;
    }
    WatchStream::new(stream.then(move |event| {
        let call = call.clone();
        async move {
            let mut event = event?;
            convert_event(&call, &mut event)
                .await
                .map_err(|e| WatchError::Internal(e.into_status().message.unwrap_or_default()))?;
            Ok(event)
        }
    }))
}

/// What a watcher whose selectors an object no longer matches is sent, as upstream's watch
/// cache sends it (`cacheWatcher.convertToWatchEvent`): the object as it was when it last
/// matched, at the revision of the change that made it leave.
fn left_selection(prev: Option<&Value>, revision: u64) -> Value {
    let mut object = prev.cloned().unwrap_or(Value::Null);
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::from(revision.to_string()));
    }
    object
}

/// Turns a store event into a watch event type and object, applying the selectors: a change
/// that moves an object out of the selection is DELETED (with its previous state), into it
/// ADDED.
fn translate(
    call: &Call,
    selectors: &Selectors,
    event: StoreEvent,
) -> Result<Option<(&'static str, Value)>, ApiError> {
    match event {
        StoreEvent::Progress { .. } => Ok(None),
        StoreEvent::Put { kv, prev } => {
            let object = from_stored_converted(call, &kv.value, kv.mod_revision)?;
            let now = selectors.matches(&object);
            let old = match &prev {
                Some(prev) => Some(from_stored_converted(call, &prev.value, prev.mod_revision)?),
                None => None,
            };
            let before = old.as_ref().map(|old| selectors.matches(old));
            Ok(match (before, now) {
                (None | Some(false), true) => Some(("ADDED", object)),
                (Some(true), true) => Some(("MODIFIED", object)),
                (Some(true), false) => {
                    Some(("DELETED", left_selection(old.as_ref(), kv.mod_revision)))
                }
                (_, false) => None,
            })
        }
        StoreEvent::Delete { prev, revision } => {
            // The deleted object carries the revision of its deletion, as upstream sends it.
            let object = from_stored_converted(call, &prev.value, revision)?;
            Ok(selectors.matches(&object).then_some(("DELETED", object)))
        }
    }
}
