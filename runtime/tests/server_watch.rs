//! The shared watch cache, driven through the router in-process: many watchers of one resource
//! with different namespaces, selectors and start versions each see exactly their events in
//! order, initial events included; a watcher that does not read is ended (without an error)
//! while the others go on; watchers
//! that start before what the shared ring holds read history from the store first and join
//! the live stream without a gap or a duplicate.
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use futures_util::{Stream, StreamExt};
use kapi::Registry;
use kapi::server::Server;
use kapi::storage::{EmbeddedStorage, Storage};
use serde_json::{Value, json};

use support::kinds::Widget;
use support::{Harness, revision_of};

mod support;

const ALL: &str = "/apis/example.com/v1/widgets";

fn collection(namespace: &str) -> String {
    format!("/apis/example.com/v1/namespaces/{namespace}/widgets")
}

async fn harness(watch_queue: usize) -> Harness {
    let mut registry = Registry::new();
    registry.register::<Widget>();
    let builder = Server::builder()
        .registry(registry)
        .watch_queue(watch_queue)
        .bookmark_interval(Duration::from_secs(3600));
    // A ring of a few entries checks the cut-off and catch-up arithmetic; over etcd, whose
    // watch delivers changes in batches, such a ring overflows before a watcher can read, so
    // those tests stay on the embedded engine (the default ring of 1,024 runs on both).
    let h = if watch_queue < 1024 {
        let dir = tempfile::tempdir().unwrap();
        let storage = EmbeddedStorage::open(dir.path(), support::store_options())
            .await
            .unwrap();
        Harness::serve(storage, Some(dir), builder).await
    } else {
        Harness::in_temp_dir(support::store_options(), builder).await
    };
    h.create_namespace("other").await;
    h
}

type Labels = BTreeMap<String, String>;

/// One write the test made, as the model of what each watcher must see.
#[derive(Debug, Clone)]
struct Change {
    rv: u64,
    namespace: String,
    name: String,
    before: Option<Labels>,
    after: Option<Labels>,
}

/// The writes of a test and the objects they left.
#[derive(Default)]
struct Model {
    changes: Vec<Change>,
    live: BTreeMap<(String, String), (Labels, u64)>,
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

impl Model {
    async fn create(&mut self, h: &Harness, namespace: &str, name: &str, l: Labels) -> u64 {
        let object = h
            .ok(
                "POST",
                &collection(namespace),
                Some(json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": name, "labels": l},
                    "spec": {"n": 0},
                })),
            )
            .await;
        let rv = revision_of(&object);
        self.record(namespace, name, Some(l), rv);
        rv
    }

    async fn update(&mut self, h: &Harness, namespace: &str, name: &str, l: Labels) -> u64 {
        let uri = format!("{}/{name}", collection(namespace));
        let mut object = h.ok("GET", &uri, None).await;
        object["metadata"]["labels"] = json!(l);
        object["spec"]["n"] = json!(object["spec"]["n"].as_i64().unwrap() + 1);
        let rv = revision_of(&h.ok("PUT", &uri, Some(object)).await);
        self.record(namespace, name, Some(l), rv);
        rv
    }

    async fn delete(&mut self, h: &Harness, namespace: &str, name: &str) -> u64 {
        let uri = format!("{}/{name}", collection(namespace));
        h.ok("DELETE", &uri, None).await;
        // The writes are sequential: the delete is the latest revision.
        let rv = h.storage.current_revision().await.unwrap();
        self.record(namespace, name, None, rv);
        rv
    }

    fn record(&mut self, namespace: &str, name: &str, after: Option<Labels>, rv: u64) {
        let key = (namespace.to_owned(), name.to_owned());
        let before = self.live.get(&key).map(|(l, _)| l.clone());
        match &after {
            Some(l) => self.live.insert(key, (l.clone(), rv)),
            None => self.live.remove(&key),
        };
        self.changes.push(Change {
            rv,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            before,
            after,
        });
    }
}

/// A labelSelector query value and the same rule in Rust.
type Rule = (&'static str, fn(&Labels) -> bool);

fn spec(
    namespace: Option<&'static str>,
    selector: Option<Rule>,
    name: Option<&'static str>,
    start: Option<u64>,
) -> Spec {
    Spec {
        namespace,
        selector,
        name,
        start,
    }
}

/// What one watcher asks for, and the model's answer.
struct Spec {
    namespace: Option<&'static str>,
    selector: Option<Rule>,
    name: Option<&'static str>,
    /// `None`: resourceVersion unset (initial ADDED events first).
    start: Option<u64>,
}

/// (type, namespace, name, resourceVersion) of an event.
type Seen = (String, String, String, u64);

impl Spec {
    fn uri(&self) -> String {
        let mut uri = match self.namespace {
            Some(ns) => collection(ns),
            None => ALL.to_owned(),
        };
        uri.push_str("?watch=true");
        if let Some(rv) = self.start {
            uri.push_str(&format!("&resourceVersion={rv}"));
        }
        if let Some((query, _)) = self.selector {
            uri.push_str(&format!("&labelSelector={}", query.replace(' ', "%20")));
        }
        if let Some(name) = self.name {
            uri.push_str(&format!("&fieldSelector=metadata.name%3D{name}"));
        }
        uri
    }

    fn selects(&self, namespace: &str, name: &str, l: &Labels) -> bool {
        self.namespace.is_none_or(|ns| ns == namespace)
            && self.name.is_none_or(|n| n == name)
            && self.selector.is_none_or(|(_, rule)| rule(l))
    }

    /// The events the watcher must see: the objects alive at `opened` (when it asked for
    /// initial events), then every change after its start that concerns it.
    fn expected(&self, model: &Model, opened: &Model) -> Vec<Seen> {
        let mut out = Vec::new();
        let start = match self.start {
            Some(rv) => rv,
            None => {
                for ((ns, name), (l, rv)) in &opened.live {
                    if self.selects(ns, name, l) {
                        out.push(("ADDED".into(), ns.clone(), name.clone(), *rv));
                    }
                }
                opened.changes.last().map_or(0, |c| c.rv)
            }
        };
        for c in model.changes.iter().filter(|c| c.rv > start) {
            let was = c
                .before
                .as_ref()
                .is_some_and(|l| self.selects(&c.namespace, &c.name, l));
            let is = c
                .after
                .as_ref()
                .is_some_and(|l| self.selects(&c.namespace, &c.name, l));
            let kind = match (c.before.is_some(), was, is) {
                (_, false, true) => "ADDED",
                (true, true, true) => "MODIFIED",
                (_, true, false) => "DELETED",
                _ => continue,
            };
            out.push((kind.into(), c.namespace.clone(), c.name.clone(), c.rv));
        }
        out
    }
}

/// A watch response's events, line by line.
struct Reader {
    stream: Pin<Box<dyn Stream<Item = Result<bytes::Bytes, axum::Error>> + Send>>,
    buffer: Vec<u8>,
}

impl Reader {
    async fn open(h: &Harness, uri: &str) -> Reader {
        let response = h
            .request(Request::get(uri).body(Body::empty()).unwrap())
            .await;
        assert_eq!(response.status(), 200, "{uri}");
        Reader {
            stream: Box::pin(response.into_body().into_data_stream()),
            buffer: Vec::new(),
        }
    }

    /// The next event other than a bookmark; `None` when the stream ends or is quiet for
    /// `quiet`.
    async fn next(&mut self, quiet: Duration) -> Option<Value> {
        loop {
            if let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=pos).collect();
                let event: Value = serde_json::from_slice(&line).unwrap();
                if event["type"] == "BOOKMARK" {
                    continue;
                }
                return Some(event);
            }
            // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
            let chunk = tokio::time::timeout(quiet, self.stream.next())
                .await
                .ok()??;
            self.buffer.extend_from_slice(&chunk.ok()?);
        }
    }

    /// Reads `count` events (waiting up to 10 s for each), then whatever else comes within
    /// `quiet`: a watcher that gets too many events fails the comparison.
    async fn read(&mut self, count: usize, quiet: Duration) -> Vec<Value> {
        let mut events = Vec::new();
        while events.len() < count {
            match self.next(Duration::from_secs(10)).await {
                Some(e) => events.push(e),
                None => return events,
            }
        }
        while let Some(e) = self.next(quiet).await {
            events.push(e);
        }
        events
    }
}

fn seen(event: &Value) -> Seen {
    let object = &event["object"];
    (
        event["type"].as_str().unwrap_or("?").to_owned(),
        object["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
        object["metadata"]["name"].as_str().unwrap_or("").to_owned(),
        object["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(0),
    )
}

fn web(l: &Labels) -> bool {
    l.get("app").map(String::as_str) == Some("web")
}

fn not_web(l: &Labels) -> bool {
    !web(l)
}

fn web_or_db(l: &Labels) -> bool {
    matches!(l.get("app").map(String::as_str), Some("web" | "db"))
}

fn has_tier(l: &Labels) -> bool {
    l.contains_key("tier")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watchers_each_see_exactly_their_events_in_order() {
    let h = harness(1024).await;
    let mut model = Model::default();
    let rv0 = h.storage.current_revision().await.unwrap();
    model
        .create(&h, "default", "a", labels(&[("app", "web")]))
        .await;
    model
        .create(&h, "other", "a", labels(&[("app", "db")]))
        .await;
    let rv1 = model.create(&h, "default", "b", labels(&[])).await;
    model
        .update(&h, "default", "a", labels(&[("app", "web"), ("tier", "1")]))
        .await;
    let rv2 = model
        .create(&h, "other", "c", labels(&[("app", "web")]))
        .await;
    let opened = Model {
        changes: model.changes.clone(),
        live: model.live.clone(),
    };

    let web_sel: Rule = ("app=web", web);
    let mut specs = vec![
        spec(None, None, None, Some(rv0)),
        spec(Some("default"), None, None, Some(rv1)),
        spec(Some("default"), Some(web_sel), None, Some(rv0)),
        spec(
            Some("default"),
            Some(("app!=web", not_web)),
            None,
            Some(rv2),
        ),
        spec(Some("other"), None, None, Some(rv1)),
        spec(None, Some(("app in (web,db)", web_or_db)), None, Some(rv2)),
        spec(None, Some(("tier", has_tier)), None, Some(rv0)),
        spec(Some("default"), None, Some("a"), Some(rv0)),
        spec(None, Some(web_sel), None, None),
        spec(Some("other"), None, None, None),
    ];
    // Identical watchers share every line; each must still get all of them.
    for _ in 0..6 {
        specs.push(spec(Some("default"), None, None, Some(rv2)));
    }
    let mut readers = Vec::new();
    for s in &specs {
        readers.push(Reader::open(&h, &s.uri()).await);
    }

    // Moves in and out of every selector, in both namespaces, plus deletes.
    model
        .update(&h, "default", "b", labels(&[("app", "web")]))
        .await;
    model
        .update(&h, "default", "a", labels(&[("app", "db")]))
        .await;
    model
        .create(&h, "other", "d", labels(&[("tier", "2")]))
        .await;
    model.delete(&h, "other", "a").await;
    model
        .update(&h, "other", "c", labels(&[("app", "web"), ("tier", "3")]))
        .await;
    model
        .update(&h, "default", "a", labels(&[("app", "web")]))
        .await;
    model.delete(&h, "default", "b").await;
    model
        .create(&h, "default", "e", labels(&[("app", "db")]))
        .await;
    model.delete(&h, "default", "a").await;

    let reads = specs.iter().zip(readers).map(|(s, mut reader)| {
        let want = s.expected(&model, &opened);
        let uri = s.uri();
        async move {
            let got = reader.read(want.len(), Duration::from_millis(300)).await;
            (uri, want, got)
        }
    });
    for (uri, want, got) in futures_util::future::join_all(reads).await {
        let got: Vec<Seen> = got.iter().map(seen).collect();
        assert_eq!(got, want, "{uri}");
        assert!(
            !want.is_empty(),
            "{uri}: the table should give every watcher events"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_does_not_read_is_ended_while_others_go_on() {
    let h = harness(8).await;
    let start = h.storage.current_revision().await.unwrap();
    let uri = format!(
        "{}?watch=true&resourceVersion={start}",
        collection("default")
    );
    let mut slow = Reader::open(&h, &uri).await;
    let mut fast = Reader::open(&h, &uri).await;
    let total = 40;
    // The fast watcher reads each event before the next write, so it never lags, however
    // the machine schedules the test (over etcd, under load); the slow one never reads.
    let mut model = Model::default();
    let mut events = Vec::new();
    for i in 0..total {
        model
            .create(&h, "default", &format!("w{i:02}"), labels(&[]))
            .await;
        events.extend(fast.next(Duration::from_secs(10)).await);
    }
    let got: Vec<Seen> = events.iter().map(seen).collect();
    let want: Vec<Seen> = model
        .changes
        .iter()
        .map(|c| ("ADDED".into(), c.namespace.clone(), c.name.clone(), c.rv))
        .collect();
    assert_eq!(got, want);

    // The slow watcher: at most what it could have had, in order, then the end, without an
    // ERROR event (upstream's cacher closes a watcher that does not keep up the same way).
    let mut slow_events = Vec::new();
    while let Some(e) = slow.next(Duration::from_secs(5)).await {
        slow_events.push(e);
    }
    assert!(
        slow_events.len() < total,
        "{} events: the slow watcher was not cut short",
        slow_events.len()
    );
    for (e, c) in slow_events.iter().zip(&model.changes) {
        assert_eq!(
            seen(e),
            ("ADDED".into(), c.namespace.clone(), c.name.clone(), c.rv)
        );
    }

    // The fast watcher is still served.
    let rv = model.create(&h, "default", "after", labels(&[])).await;
    let e = fast.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        seen(&e),
        ("ADDED".into(), "default".into(), "after".into(), rv)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_older_than_the_ring_read_history_then_join_without_gap_or_duplicate() {
    // A ring of 16 changes: most start versions below are older than it, and it holds more
    // than the live writes below, so a watcher that joins after its history read finds its
    // place still in the ring however the writer and the readers are scheduled.
    let h = harness(16).await;
    let all = format!("{ALL}?watch=true&resourceVersion=");
    let start = h.storage.current_revision().await.unwrap();
    // Keeps the shared feed running from the start, so the ring moves on.
    let keeper = Reader::open(&h, &format!("{all}{start}")).await;
    let keeper = tokio::spawn(async move {
        let mut keeper = keeper;
        keeper.read(usize::MAX, Duration::from_secs(30)).await
    });
    let mut model = Model::default();
    for i in 0..40 {
        let ns = if i % 3 == 0 { "other" } else { "default" };
        model.create(&h, ns, &format!("h{i:02}"), labels(&[])).await;
    }
    let revs: Vec<u64> = model.changes.iter().map(|c| c.rv).collect();
    // From the oldest (history from the store), from the middle, from inside the ring, and
    // one namespace from an old version.
    let starts = [
        (None, start),
        (None, revs[2]),
        (None, revs[20]),
        (None, revs[36]),
        (Some("default"), revs[1]),
    ];
    let mut readers = Vec::new();
    for (ns, rv) in starts {
        let uri = match ns {
            Some(ns) => format!("{}?watch=true&resourceVersion={rv}", collection(ns)),
            None => format!("{all}{rv}"),
        };
        readers.push((ns, rv, Reader::open(&h, &uri).await));
    }
    // Live writes while the new watchers still read their history.
    let writer = {
        let mut model = Model::default();
        async move {
            for i in 40..50 {
                let ns = if i % 3 == 0 { "other" } else { "default" };
                model.create(&h, ns, &format!("h{i:02}"), labels(&[])).await;
            }
            (h, model)
        }
    };
    let reads = readers.into_iter().map(|(ns, rv, mut reader)| async move {
        let got = reader.read(usize::MAX, Duration::from_secs(2)).await;
        (ns, rv, got)
    });
    let ((h, live), results) = tokio::join!(writer, futures_util::future::join_all(reads));
    model.changes.extend(live.changes);
    for (ns, rv, got) in results {
        let got: Vec<Seen> = got.iter().map(seen).collect();
        let want: Vec<Seen> = model
            .changes
            .iter()
            .filter(|c| c.rv > rv && ns.is_none_or(|ns| ns == c.namespace))
            .map(|c| ("ADDED".into(), c.namespace.clone(), c.name.clone(), c.rv))
            .collect();
        assert_eq!(got, want, "namespace {ns:?} from {rv}");
    }
    // The feed's own watcher may have been cut off meanwhile; it only had to exist.
    drop(h);
    let _ = keeper.await.unwrap();
}

/// Upstream's watch cache sends a bookmark 2 s before a watch's `timeoutSeconds` ends
/// (`nextBookmarkTime` in `cache_watcher.go`), so a reflector with short watches resumes from
/// a recent resourceVersion. The harness's periodic bookmarks are an hour apart: the bookmark
/// seen here can only be the one before the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bookmark_comes_two_seconds_before_the_watch_times_out() {
    let h = harness(1024).await;
    let start = h.storage.current_revision().await.unwrap();
    let uri = format!(
        "{}?watch=true&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion={start}",
        collection("default")
    );
    let opened = std::time::Instant::now();
    let response = h
        .request(Request::get(&uri).body(Body::empty()).unwrap())
        .await;
    let mut body = response.into_body().into_data_stream();
    let rv = Model::default()
        .create(&h, "default", "marked", labels(&[]))
        .await;
    let mut lines = Vec::new();
    let mut buffer = Vec::new();
    // The stream ends by itself at the timeout; the bound only turns a hang into a failure.
    // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(10), body.next()).await {
        buffer.extend_from_slice(&chunk.unwrap());
        while let Some(pos) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=pos).collect();
            let event: Value = serde_json::from_slice(&line).unwrap();
            lines.push((event, opened.elapsed()));
        }
    }
    let ended = opened.elapsed();
    let kinds: Vec<&str> = lines
        .iter()
        .map(|(e, _)| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ADDED", "BOOKMARK"], "{lines:?}");
    let (mark, at) = &lines[1];
    assert_eq!(
        mark["object"]["metadata"]["resourceVersion"],
        rv.to_string()
    );
    assert!(
        *at >= Duration::from_millis(1500) && *at < ended,
        "bookmark at {at:?}, end at {ended:?}"
    );
    assert!(ended >= Duration::from_millis(3500), "ended at {ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_events_read_a_page_at_a_time_are_the_state_at_the_start_then_the_changes() {
    // Initial events leave the server a page at a time as the client reads them (a page holds
    // about 16 KiB of events; these objects make pages of about a dozen), read from the store
    // at the revision the watch started at. Changes made while a watcher is still reading its
    // initial events must come after them, once each, and never inside them.
    let h = harness(1024).await;
    let mut model = Model::default();
    let filler = "x".repeat(1200);
    for i in 0..120 {
        let app = if i % 2 == 0 { "web" } else { "db" };
        let name = format!("w{i:03}");
        let object = h
            .ok(
                "POST",
                &collection("default"),
                Some(json!({
                    "apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": name, "labels": {"app": app}},
                    "spec": {"n": 0, "filler": filler},
                })),
            )
            .await;
        model.record(
            "default",
            &name,
            Some(labels(&[("app", app)])),
            revision_of(&object),
        );
    }
    let opened = Model {
        changes: model.changes.clone(),
        live: model.live.clone(),
    };
    let every = spec(Some("default"), None, None, None);
    let selected = spec(Some("default"), Some(("app=web", web)), None, None);
    // The same events when asked for as a watch list: initial events, then a bookmark.
    let listed = format!(
        "{}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        every.uri()
    );
    let mut watchers = Vec::new();
    for (uri, s) in [
        (every.uri(), &every),
        (selected.uri(), &selected),
        (listed, &every),
    ] {
        let mut reader = Reader::open(&h, &uri).await;
        // Five initial events read, and no more: the rest (later pages, read from the store
        // as the reader takes them) are still to come when the writes below happen.
        let mut first = Vec::new();
        for _ in 0..5 {
            first.push(reader.next(Duration::from_secs(10)).await.unwrap());
        }
        watchers.push((reader, first, s));
    }
    model
        .update(&h, "default", "w000", labels(&[("app", "db")]))
        .await;
    model
        .update(&h, "default", "w119", labels(&[("app", "web")]))
        .await;
    model.delete(&h, "default", "w002").await;
    model
        .create(&h, "default", "w200", labels(&[("app", "web")]))
        .await;

    for (mut reader, mut events, s) in watchers {
        let want = s.expected(&model, &opened);
        events.extend(
            reader
                .read(want.len() - events.len(), Duration::from_millis(300))
                .await,
        );
        let got: Vec<Seen> = events.iter().map(seen).collect();
        assert_eq!(got, want);
    }
}

/// An object that stops matching a watch's selector is sent as DELETED carrying its state from
/// before the change, at the change's resourceVersion; one that starts matching as ADDED, as
/// upstream's watch cache sends them (`cacheWatcher.convertToWatchEvent` in
/// k8s.io/apiserver's `storage/cacher/cache_watcher.go`). Checked on a watch served from the
/// cache and on one that starts before it (from the store).
#[tokio::test]
async fn an_object_leaving_a_selection_is_deleted_with_its_previous_state() {
    for start in [None, Some(1)] {
        let h = harness(1024).await;
        let created = h
            .ok(
                "POST",
                &collection("default"),
                Some(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w", "labels": {"tier": "web"}}, "spec": {"size": 1}})),
            )
            .await;
        let mut uri = format!(
            "{}?watch=true&labelSelector=tier%3Dweb",
            collection("default")
        );
        if let Some(rv) = start {
            uri.push_str(&format!("&resourceVersion={rv}"));
        }
        let mut reader = Reader::open(&h, &uri).await;
        let first = reader.next(Duration::from_secs(5)).await.unwrap();
        assert_eq!(first["type"], "ADDED");
        let moved = h
            .ok_as(
                "PATCH",
                &format!("{}/w", collection("default")),
                support::MERGE,
                Some(json!({"metadata": {"labels": {"tier": "db"}}, "spec": {"size": 2}})),
            )
            .await;
        let left = reader.next(Duration::from_secs(5)).await.unwrap();
        assert_eq!(left["type"], "DELETED", "{start:?}");
        let object = &left["object"];
        assert_eq!(
            object["metadata"]["labels"],
            json!({"tier": "web"}),
            "{start:?}"
        );
        assert_eq!(object["spec"], created["spec"], "{start:?}");
        assert_eq!(
            object["metadata"]["resourceVersion"], moved["metadata"]["resourceVersion"],
            "{start:?}"
        );
        h.ok_as(
            "PATCH",
            &format!("{}/w", collection("default")),
            support::MERGE,
            Some(json!({"metadata": {"labels": {"tier": "web"}}})),
        )
        .await;
        let back = reader.next(Duration::from_secs(5)).await.unwrap();
        assert_eq!(back["type"], "ADDED", "{start:?}");
        assert_eq!(back["object"]["metadata"]["labels"], json!({"tier": "web"}));
    }
}
