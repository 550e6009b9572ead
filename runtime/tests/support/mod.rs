//! The harness the server integration tests share: a store, a router over it, and requests
//! sent to that router in-process, with their answers read back (status, headers, JSON body,
//! `Warning` headers) and watches read event by event. The kinds several suites serve are in
//! [`kinds`]; each test file keeps its own registry, its own kinds and its server settings.
//!
//! The store is the embedded engine unless `KAPI_TEST_STORAGE=etcd` (and the `etcd` feature):
//! then [`Harness::in_temp_dir`] starts an etcd of its own for each harness (tests compact
//! and read old revisions, which one shared etcd would let them do to each other) and serves
//! over the etcd engine, so the same suites check both engines. Tests that open an embedded
//! store themselves, or shrink its watch ring to test its laggard cut-off, stay embedded.
//! `KAPI_TEST_ENCRYPTION=1` puts every harness's store behind encryption at rest (`*.*` with
//! aesgcm, then identity for what a test stored before serving), so the same suites check the
//! server over encrypted values too; a test that edits the engine's values itself, bypassing
//! the server, reads them encrypted.

// Every integration test is its own crate and uses only some of these helpers; the rest would
// be dead code in that crate.
#![allow(dead_code)]
// Test code too: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode, header};
use futures_util::{Stream, StreamExt};
use kapi::server::{Background, Server, ServerBuilder};
use kapi::storage::{
    BoxFuture, Bytes, CompactError, CreateError, DeleteError, Deleted, EmbeddedOptions,
    EmbeddedStorage, EncryptedStorage, EncryptionConfig, Guard, KeyValue, ListResult, ReadError,
    Storage, UpdateError, WatchError, WatchStream,
};
use kapi::{KubeVersion, Registry};
use serde_json::{Value, json};
use tower::ServiceExt;

pub(crate) mod kinds;

/// The media types requests are sent as.
pub(crate) const JSON: &str = "application/json";
pub(crate) const JSON_PATCH: &str = "application/json-patch+json";
pub(crate) const MERGE: &str = "application/merge-patch+json";
pub(crate) const SMP: &str = "application/strategic-merge-patch+json";
pub(crate) const APPLY: &str = "application/apply-patch+yaml";

/// A server serving `registry` as release `version`, with resourceVersion waits cut to 200 ms
/// so that tests of a wait that times out do not wait long.
pub(crate) fn builder(registry: Registry, version: KubeVersion) -> ServerBuilder {
    Server::builder()
        .registry(registry)
        .kube_version(version)
        .resource_version_wait(Duration::from_millis(200))
}

/// Runs `check` every `every` until it returns `Ok`, and fails the test with its last `Err`
/// once `within` has passed. Wall clock: what the tests wait for is done by the store's writer
/// thread, etcd or another server, none of which a paused clock would wait for.
pub(crate) async fn eventually<T>(
    within: Duration,
    every: Duration,
    mut check: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(failure) => {
                assert!(tokio::time::Instant::now() < deadline, "{failure}");
                tokio::time::sleep(every).await;
            }
        }
    }
}

/// Opens the embedded store in `dir` once a stopped server's tasks, which let go of it as they
/// see the stop signal, have done so.
pub(crate) async fn reopen(dir: &std::path::Path) -> EmbeddedStorage {
    eventually(
        Duration::from_secs(15),
        Duration::from_millis(20),
        async || {
            EmbeddedStorage::open(dir, store_options())
                .await
                .map_err(|e| format!("cannot reopen {dir:?}: {e}"))
        },
    )
    .await
}

/// An object's `metadata.resourceVersion`.
pub(crate) fn rv(object: &Value) -> &str {
    object["metadata"]["resourceVersion"].as_str().unwrap()
}

/// An object's `metadata.resourceVersion` as the revision it is.
pub(crate) fn revision_of(object: &Value) -> u64 {
    rv(object).parse().unwrap()
}

/// Store options for tests: no compaction behind their back, and progress notices often enough
/// for bookmarks and resourceVersion waits to come quickly.
pub(crate) fn store_options() -> EmbeddedOptions {
    EmbeddedOptions::default()
        .with_compaction_interval(None)
        .with_progress_interval(Duration::from_millis(50))
}

#[cfg(feature = "etcd")]
pub(crate) mod etcd;

/// The engine `KAPI_TEST_STORAGE` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    Embedded,
    Etcd,
}

impl Engine {
    pub(crate) fn from_env() -> Self {
        match std::env::var("KAPI_TEST_STORAGE").as_deref() {
            Ok("etcd") => Engine::Etcd,
            Ok("") | Ok("embedded") | Err(_) => Engine::Embedded,
            Ok(other) => panic!("KAPI_TEST_STORAGE={other}: use embedded or etcd"),
        }
    }
}

/// What keeps a harness's store alive: its temporary directory, or its etcd.
enum Backing {
    Dir(tempfile::TempDir),
    #[cfg(feature = "etcd")]
    Etcd(etcd::EtcdCluster),
}

/// The harness's store, whichever the engine: a [`Storage`] handed on to the engine.
#[derive(Debug, Clone)]
pub(crate) struct Store(pub(crate) Arc<dyn Storage>);

impl Storage for Store {
    fn get<'a>(
        &'a self,
        key: &'a str,
        at_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>> {
        self.0.get(key, at_revision)
    }

    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at_revision: Option<u64>,
        start_key: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>> {
        self.0.list(prefix, at_revision, start_key, limit)
    }

    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>> {
        self.0.count(prefix)
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        self.0.create(key, value)
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>> {
        self.0.update(key, value, expected_mod_revision)
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>> {
        self.0.delete(key, expected_mod_revision)
    }

    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        self.0.watch(prefix, from_revision)
    }

    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        self.0.create_guarded(key, value, guard)
    }

    fn watch_without_prev<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        self.0.watch_without_prev(prefix, from_revision)
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.0.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>> {
        self.0.compact(revision)
    }

    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.0.compacted_revision()
    }
}

/// `storage` behind encryption at rest of every resource when `KAPI_TEST_ENCRYPTION=1`.
fn encrypted_if_asked(storage: Arc<dyn Storage>) -> Arc<dyn Storage> {
    if std::env::var("KAPI_TEST_ENCRYPTION").as_deref() != Ok("1") {
        return storage;
    }
    let config = EncryptionConfig::parse(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: ['*.*']
  providers:
  - aesgcm: {keys: [{name: k, secret: 'MTIzNDU2Nzg5MDEyMzQ1Ng=='}]}
  - identity: {}
",
        KubeVersion::new(1, 36),
    )
    .unwrap();
    Arc::new(EncryptedStorage::new(storage, config))
}

/// A server's router over a store.
pub(crate) struct Harness {
    pub(crate) router: Router,
    pub(crate) storage: Store,
    pub(crate) background: Background,
    pub(crate) engine: Engine,
    /// Removed (or killed) when the harness goes.
    _backing: Option<Backing>,
}

impl Harness {
    /// Serves `storage` with a builder that holds everything but the storage.
    pub(crate) async fn serve(
        storage: impl Storage + 'static,
        dir: Option<tempfile::TempDir>,
        builder: ServerBuilder,
    ) -> Self {
        let storage = encrypted_if_asked(Arc::new(storage));
        Self::serve_shared(storage, dir.map(Backing::Dir), builder).await
    }

    async fn serve_shared(
        storage: Arc<dyn Storage>,
        backing: Option<Backing>,
        builder: ServerBuilder,
    ) -> Self {
        let engine = match backing {
            #[cfg(feature = "etcd")]
            Some(Backing::Etcd(_)) => Engine::Etcd,
            _ => Engine::Embedded,
        };
        let (router, background) = builder
            .storage(storage.clone())
            .into_router()
            .await
            .unwrap();
        Harness {
            router,
            storage: Store(storage),
            background,
            engine,
            _backing: backing,
        }
    }

    /// Serves a fresh store: the embedded engine opened with `options` in a temporary
    /// directory, or (under `KAPI_TEST_STORAGE=etcd`) a fresh etcd with the same progress
    /// interval. A test that shrinks the watch ring checks the embedded engine's laggard
    /// cut-off, which etcd has no counterpart of, so it stays embedded.
    pub(crate) async fn in_temp_dir(options: EmbeddedOptions, builder: ServerBuilder) -> Self {
        let embedded_only = options.watch_buffer < EmbeddedOptions::default().watch_buffer;
        if Engine::from_env() == Engine::Etcd && !embedded_only {
            return Self::on_etcd(options, builder).await;
        }
        let dir = tempfile::tempdir().unwrap();
        let storage = EmbeddedStorage::open(dir.path(), options).await.unwrap();
        Self::serve(storage, Some(dir), builder).await
    }

    #[cfg(feature = "etcd")]
    async fn on_etcd(options: EmbeddedOptions, builder: ServerBuilder) -> Self {
        use kapi::storage::{EtcdOptions, EtcdStorage};
        let cluster = tokio::task::spawn_blocking(etcd::EtcdCluster::single)
            .await
            .unwrap();
        let storage = EtcdStorage::connect(
            EtcdOptions::new(cluster.endpoints())
                .with_compaction_interval(options.compaction_interval)
                .with_progress_interval(options.progress_interval),
        )
        .await
        .unwrap();
        let storage = encrypted_if_asked(Arc::new(storage));
        Self::serve_shared(storage, Some(Backing::Etcd(cluster)), builder).await
    }

    #[cfg(not(feature = "etcd"))]
    async fn on_etcd(_: EmbeddedOptions, _: ServerBuilder) -> Self {
        panic!("KAPI_TEST_STORAGE=etcd needs the tests built with the kapi feature `etcd`");
    }

    /// A second server over this harness's store, as another replica over one etcd (its
    /// caches and background tasks are its own).
    pub(crate) async fn replica(&self, builder: ServerBuilder) -> Self {
        let mut replica = Self::serve_shared(self.storage.0.clone(), None, builder).await;
        replica.engine = self.engine;
        replica
    }

    /// Creates the namespace `name`.
    pub(crate) async fn create_namespace(&self, name: &str) {
        self.ok(
            "POST",
            "/api/v1/namespaces",
            Some(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})),
        )
        .await;
    }

    pub(crate) async fn request(&self, request: Request<Body>) -> Response<Body> {
        self.router.clone().oneshot(request).await.unwrap()
    }

    /// Sends `body` (none when empty) with the given headers and reads the whole answer.
    pub(crate) async fn exchange(
        &self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Answer {
        let mut request = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = if body.is_empty() {
            Body::empty()
        } else {
            Body::from(body)
        };
        let response = self.request(request.body(body).unwrap()).await;
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec();
        Answer {
            status,
            headers,
            body,
        }
    }

    /// Sends `body` as it is, under `content_type`.
    pub(crate) async fn raw(
        &self,
        method: &str,
        uri: &str,
        content_type: &str,
        body: impl AsRef<[u8]>,
    ) -> Reply {
        self.exchange(
            method,
            uri,
            &[("content-type", content_type)],
            body.as_ref().to_vec(),
        )
        .await
        .into()
    }

    /// Sends `body` as JSON under `content_type` (no body, no content type for `None`); the
    /// answer's body is `Null` when it is not JSON.
    pub(crate) async fn call_as(
        &self,
        method: &str,
        uri: &str,
        content_type: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let answer = match body {
            Some(v) => {
                let bytes = serde_json::to_vec(&v).unwrap();
                let headers = [("content-type", content_type)];
                self.exchange(method, uri, &headers, bytes).await
            }
            None => self.exchange(method, uri, &[], Vec::new()).await,
        };
        (answer.code(), answer.value())
    }

    pub(crate) async fn call(&self, method: &str, uri: &str, body: Option<Value>) -> (u16, Value) {
        self.call_as(method, uri, "application/json", body).await
    }

    /// Like `call_as`, failing the test unless the answer is a success.
    pub(crate) async fn ok_as(
        &self,
        method: &str,
        uri: &str,
        content_type: &str,
        body: Option<Value>,
    ) -> Value {
        let (code, value) = self.call_as(method, uri, content_type, body).await;
        assert!((200..300).contains(&code), "{method} {uri}: {code} {value}");
        value
    }

    pub(crate) async fn ok(&self, method: &str, uri: &str, body: Option<Value>) -> Value {
        self.ok_as(method, uri, "application/json", body).await
    }

    /// Opens a watch and returns a reader of its events.
    pub(crate) async fn watch(&self, uri: &str, accept: Option<&str>) -> Watch {
        let mut builder = Request::builder().uri(uri);
        if let Some(accept) = accept {
            builder = builder.header("accept", accept);
        }
        let response = self.request(builder.body(Body::empty()).unwrap()).await;
        assert_eq!(response.status(), 200, "{uri}");
        Watch {
            stream: Box::pin(response.into_body().into_data_stream()),
            buffer: Vec::new(),
        }
    }
}

/// A whole answer, body unread.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    pub(crate) fn code(&self) -> u16 {
        self.status.as_u16()
    }

    /// The body as JSON, failing the test when it is not.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The body as JSON, or `Null` when it is not.
    pub(crate) fn value(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub(crate) fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Every `Warning` header, in order.
    pub(crate) fn warnings(&self) -> Vec<String> {
        self.headers
            .get_all(header::WARNING)
            .iter()
            .map(|v| String::from_utf8(v.as_bytes().to_vec()).unwrap())
            .collect()
    }
}

/// An answer's code, JSON body (`Null` when not JSON) and warnings.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) code: u16,
    pub(crate) body: Value,
    pub(crate) warnings: Vec<String>,
}

impl Reply {
    pub(crate) fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or("")
    }
}

impl From<Answer> for Reply {
    fn from(answer: Answer) -> Self {
        Reply {
            code: answer.code(),
            body: answer.value(),
            warnings: answer.warnings(),
        }
    }
}

/// A watch's events, one JSON line at a time.
pub(crate) struct Watch {
    stream: Pin<Box<dyn Stream<Item = Result<bytes::Bytes, axum::Error>> + Send>>,
    buffer: Vec<u8>,
}

impl Watch {
    /// The next event, or `None` when the stream ends or nothing comes within two seconds.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=pos).collect();
                return Some(serde_json::from_slice(&line).unwrap());
            }
            // Wall clock: a paused clock would not wait for the store's writer thread or etcd.
            let chunk = tokio::time::timeout(Duration::from_secs(2), self.stream.next())
                .await
                .ok()??;
            self.buffer.extend_from_slice(&chunk.ok()?);
        }
    }

    /// The next event of a protobuf watch: the bytes of one length-prefixed frame (without
    /// its length), or `None` when the stream ends or nothing comes within two seconds.
    pub(crate) async fn next_frame(&mut self) -> Option<Vec<u8>> {
        loop {
            if self.buffer.len() >= 4 {
                let len = u32::from_be_bytes(self.buffer[..4].try_into().unwrap()) as usize;
                if self.buffer.len() >= 4 + len {
                    let frame: Vec<u8> = self.buffer.drain(..4 + len).skip(4).collect();
                    return Some(frame);
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(2), self.stream.next())
                .await
                .ok()??;
            self.buffer.extend_from_slice(&chunk.ok()?);
        }
    }

    /// The next event of a CBOR watch (`application/cbor-seq`): the bytes of one data item, or
    /// `None` when the stream ends or nothing comes within two seconds.
    pub(crate) async fn next_item(&mut self) -> Option<Vec<u8>> {
        loop {
            let mut decoder = minicbor::Decoder::new(&self.buffer);
            // The self-described tag and the item it encloses are one data item.
            if !self.buffer.is_empty() && decoder.skip().is_ok() {
                let len = decoder.position();
                return Some(self.buffer.drain(..len).collect());
            }
            let chunk = tokio::time::timeout(Duration::from_secs(2), self.stream.next())
                .await
                .ok()??;
            self.buffer.extend_from_slice(&chunk.ok()?);
        }
    }

    /// The next event that is not a bookmark.
    pub(crate) async fn next_change(&mut self) -> Option<Value> {
        loop {
            let event = self.next().await?;
            if event["type"] != "BOOKMARK" {
                return Some(event);
            }
        }
    }
}
