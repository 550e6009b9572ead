//! The etcd engine: [`Storage`] over an etcd v3 cluster, so several server replicas can share
//! one store (feature `etcd`).
//!
//! Layout and mapping, the same contract kube-apiserver keeps with etcd:
//! - the server's key (`/registry/<group or core>/<resource>/[<namespace>/]<name>`) is stored
//!   under [`EtcdOptions::prefix`]; values are the server's bytes, untouched;
//! - an object's revision is its key's mod revision, a list's is the response header's;
//! - create is a transaction that writes only when the key's create revision is 0 (absent);
//!   update and delete compare the key's mod revision with the expected one, and on a
//!   mismatch read the key in the same transaction, so the conflict carries what is there;
//! - watches start at the requested revision with previous values and ask etcd for progress
//!   whenever they have been quiet for [`EtcdOptions::progress_interval`] (see `watch`);
//! - compaction is coordinated through one key, [`COMPACT_KEY`], that every replica updates
//!   with a transaction on its version before compacting (see `compactor`);
//! - values whose request would exceed etcd's request limit are refused before they are sent.
//!
//! Transient failures (no leader, a member gone, a connection reset) are retried until
//! [`EtcdOptions::request_timeout`]. A write whose first attempt failed ambiguously is resent;
//! when the resent compare then fails because the key already holds exactly our value, the
//! first attempt took effect and the write is reported as done.

mod compactor;
mod watch;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, KvClient, PutOptions,
    Txn, TxnOp, TxnOpResponse, TxnResponse,
};
use tokio::sync::oneshot;

use super::{
    BoxFuture, CompactError, CreateError, DeleteError, Deleted, Guard, KeyValue, ListResult,
    ReadError, Storage, UpdateError, WatchError, WatchStream,
};

/// The key every replica uses to agree on compactions: its value is the last compaction's
/// target revision and its version counts compactions. It lives outside any prefix because
/// compaction applies to the whole etcd keyspace, whichever prefixes share it (upstream's
/// kube-apiserver uses the same name, so they coordinate with each other too).
pub const COMPACT_KEY: &str = "compact_rev_key";

/// etcd's default `--max-request-bytes`.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// Room a put request needs beyond its key and value (framing, transaction compares).
const REQUEST_OVERHEAD: usize = 512;

/// The largest response the client accepts: lists of big collections are one response.
const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// Tunables of the etcd engine.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EtcdOptions {
    /// Client URLs of the cluster's members, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// Prepended to every key the server writes (empty by default: the server's keys already
    /// start with `/registry`). Lets several independent servers share one cluster.
    pub prefix: String,
    /// How often replicas compact history; each run keeps at least this much. `None` disables
    /// periodic compaction (explicit [`Storage::compact`] still works).
    pub compaction_interval: Option<Duration>,
    /// How long a watch may stay quiet before it asks etcd for a progress notification.
    pub progress_interval: Duration,
    /// The cluster's `--max-request-bytes`: larger writes are refused with `TooLarge`.
    pub max_request_bytes: usize,
    /// How long one operation may take, retries of transient failures included.
    pub request_timeout: Duration,
    /// How long connecting may take before [`EtcdStorage::connect`] gives up.
    pub dial_timeout: Duration,
}

impl EtcdOptions {
    /// Options for a cluster reached at `endpoints`, with the production defaults.
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: String::new(),
            // The compaction period kube-apiserver uses by default.
            compaction_interval: Some(Duration::from_secs(5 * 60)),
            progress_interval: Duration::from_secs(1),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            request_timeout: Duration::from_secs(10),
            dial_timeout: Duration::from_secs(10),
        }
    }

    /// Sets [`EtcdOptions::prefix`] (a trailing `/` is dropped: the server's keys bring theirs).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        let mut prefix = prefix.into();
        while prefix.ends_with('/') {
            prefix.pop();
        }
        self.prefix = prefix;
        self
    }

    /// Sets [`EtcdOptions::compaction_interval`].
    pub fn with_compaction_interval(mut self, interval: Option<Duration>) -> Self {
        self.compaction_interval = interval;
        self
    }

    /// Sets [`EtcdOptions::progress_interval`].
    pub fn with_progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval;
        self
    }

    /// Sets [`EtcdOptions::max_request_bytes`].
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// Sets [`EtcdOptions::request_timeout`].
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`EtcdOptions::dial_timeout`].
    pub fn with_dial_timeout(mut self, timeout: Duration) -> Self {
        self.dial_timeout = timeout;
        self
    }
}

/// Why [`EtcdStorage::connect`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// No endpoint was given.
    #[error("no etcd endpoints given")]
    NoEndpoints,
    /// An endpoint is not a usable URL.
    #[error("invalid etcd endpoint: {0}")]
    Endpoint(String),
    /// The cluster did not answer within the dial timeout.
    #[error("etcd at {endpoints} did not answer within {timeout:?}: {message}")]
    Unreachable {
        /// The endpoints tried, comma-separated.
        endpoints: String,
        /// The dial timeout.
        timeout: Duration,
        /// The last error seen.
        message: String,
    },
    /// Connecting was not called from inside a tokio runtime.
    #[error("the etcd storage must be connected inside a tokio runtime")]
    NoRuntime,
}

/// What the engine and its watches share.
pub(super) struct Inner {
    kv: KvClient,
    client: Client,
    options: EtcdOptions,
    /// The highest revision any response has shown: a lower bound of the current revision,
    /// which spares watches a round trip to rule out future revisions.
    seen: AtomicU64,
    /// The highest compaction point this process knows of (its own compactions and what it
    /// read from [`COMPACT_KEY`]); etcd itself still refuses anything older.
    compacted: AtomicU64,
    /// Whether the cluster answers progress requests in order with events (see `watch`).
    ordered_progress: bool,
    // Dropping this stops the compactor at once.
    _stop_compactor: Option<oneshot::Sender<()>>,
}

/// The etcd engine; a cheap-to-clone handle (clones share one connection).
#[derive(Clone)]
pub struct EtcdStorage {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for EtcdStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStorage")
            .field("endpoints", &self.inner.options.endpoints)
            .field("prefix", &self.inner.options.prefix)
            .field("seen_revision", &self.inner.seen.load(Ordering::Relaxed))
            .finish()
    }
}

/// How an etcd call failed, in the terms the trait's errors need.
#[derive(Debug)]
pub(super) enum Failure {
    /// The requested revision is compacted.
    Compacted,
    /// The requested revision is ahead of the store.
    FutureRevision,
    /// The request exceeds the cluster's request limit.
    TooLarge,
    /// Worth retrying: no leader, a member or connection gone, a timeout. Whether a write
    /// took effect is unknown.
    Transient(String),
    /// Anything else.
    Fatal(String),
}

impl Failure {
    fn message(&self) -> String {
        match self {
            Failure::Compacted => "required revision has been compacted".to_owned(),
            Failure::FutureRevision => "required revision is a future revision".to_owned(),
            Failure::TooLarge => "etcd request is too large".to_owned(),
            Failure::Transient(m) | Failure::Fatal(m) => m.clone(),
        }
    }
}

/// Sorts an etcd client error into a [`Failure`]; etcd reports most conditions only through
/// the gRPC status message, so the messages are matched (they are part of etcd's API).
pub(super) fn classify(error: &etcd_client::Error) -> Failure {
    use tonic::Code;
    match error {
        etcd_client::Error::GRpcStatus(status) => {
            let message = status.message();
            if message.contains("required revision has been compacted") {
                Failure::Compacted
            } else if message.contains("required revision is a future revision") {
                Failure::FutureRevision
            } else if message.contains("request is too large")
                || status.code() == Code::ResourceExhausted
            {
                Failure::TooLarge
            } else if matches!(
                status.code(),
                Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::Cancelled
            ) || message.contains("leader")
                || message.contains("timed out")
                || message.contains("transport")
            {
                Failure::Transient(format!("etcd: {message}"))
            } else {
                Failure::Fatal(format!("etcd: {message}"))
            }
        }
        etcd_client::Error::TransportError(e) => Failure::Transient(format!("etcd: {e}")),
        etcd_client::Error::IoError(e) => Failure::Transient(format!("etcd: {e}")),
        etcd_client::Error::WatchError(e) => Failure::Transient(format!("etcd watch: {e}")),
        other => Failure::Fatal(format!("etcd: {other}")),
    }
}

/// Whether an etcd release sends requested progress notifications in order with events:
/// fixed in 3.4.24 and 3.5.8 (etcd issue 15220).
fn orders_progress(version: &str) -> bool {
    let mut parts = version
        .split(['.', '-', '+'])
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    match (major, minor) {
        (3, 4) => patch >= 24,
        (3, 5) => patch >= 8,
        (3, m) => m > 5,
        (m, _) => m > 3,
    }
}

fn revision(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The first key after every key that starts with `prefix` (etcd's range end for a prefix);
/// `\0` (every key) when no such key exists.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The outcome of a write attempt sequence: the response, and whether an earlier attempt
/// failed in a way that may still have applied it.
struct Written {
    response: TxnResponse,
    retried_ambiguously: bool,
}

impl EtcdStorage {
    /// Connects to the cluster and checks it answers (retrying until the dial timeout).
    ///
    /// Must run inside a tokio runtime: watches and periodic compaction run as tasks on it.
    /// Periodic compaction stops when the last handle and watch are dropped.
    pub async fn connect(options: EtcdOptions) -> Result<Self, ConnectError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ConnectError::NoRuntime)?;
        if options.endpoints.is_empty() {
            return Err(ConnectError::NoEndpoints);
        }
        // No per-request gRPC timeout: it would also end long-running watch streams. Each
        // unary call gets its own deadline instead (see `retry`).
        let connect = ConnectOptions::new()
            .with_connect_timeout(options.dial_timeout.min(Duration::from_secs(5)))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_require_leader(true);
        let client = Client::connect(&options.endpoints, Some(connect))
            .await
            .map_err(|e| ConnectError::Endpoint(e.to_string()))?;
        let kv = client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .max_encoding_message_size(MAX_RESPONSE_BYTES);
        let interval = options.compaction_interval;
        let (stop, stopped) = oneshot::channel();
        let ordered_progress =
            match tokio::time::timeout(options.dial_timeout, client.maintenance_client().status())
                .await
            {
                Ok(Ok(status)) => orders_progress(status.version()),
                // Unknown: assume the older behaviour, which costs only some delay.
                _ => false,
            };
        let storage = EtcdStorage {
            inner: Arc::new(Inner {
                kv,
                client,
                options,
                seen: AtomicU64::new(0),
                compacted: AtomicU64::new(0),
                ordered_progress,
                _stop_compactor: interval.map(|_| stop),
            }),
        };
        let deadline = tokio::time::Instant::now() + storage.inner.options.dial_timeout;
        let (version, recorded) = loop {
            match storage.read_compact_key().await {
                Ok(found) => break found,
                Err(failure) if tokio::time::Instant::now() >= deadline => {
                    return Err(ConnectError::Unreachable {
                        endpoints: storage.inner.options.endpoints.join(","),
                        timeout: storage.inner.options.dial_timeout,
                        message: failure.message(),
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        storage.note_compacted(recorded);
        if let Some(interval) = interval {
            runtime.spawn(compactor::run(
                Arc::downgrade(&storage.inner),
                interval,
                version,
                stopped,
            ));
        }
        Ok(storage)
    }

    /// The options this engine was connected with.
    pub fn options(&self) -> &EtcdOptions {
        &self.inner.options
    }

    /// The underlying client, for tools that need etcd operations the trait does not offer.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    fn full_key(&self, key: &str) -> Vec<u8> {
        Inner::full_key(&self.inner.options.prefix, key)
    }

    fn check_size(&self, key: &str, value: &Bytes) -> Result<(), (usize, usize)> {
        let size = self
            .inner
            .options
            .prefix
            .len()
            .saturating_add(key.len())
            .saturating_add(value.len());
        let limit = self
            .inner
            .options
            .max_request_bytes
            .saturating_sub(REQUEST_OVERHEAD);
        if size > limit {
            Err((size, limit))
        } else {
            Ok(())
        }
    }

    /// Size and limit to report when etcd itself refused a write our own check let through
    /// (the cluster's limit is lower than configured): etcd does not say its limit, so the
    /// default is named when it explains the refusal.
    fn refused_size(&self, key: &str, value: &Bytes) -> (usize, usize) {
        let size = self
            .inner
            .options
            .prefix
            .len()
            .saturating_add(key.len())
            .saturating_add(value.len());
        let limit = if size > DEFAULT_MAX_REQUEST_BYTES {
            DEFAULT_MAX_REQUEST_BYTES
        } else {
            size.saturating_sub(1)
        };
        (size, limit)
    }

    fn note_seen(&self, header_revision: Option<i64>) {
        self.inner.note_seen(header_revision);
    }

    fn note_compacted(&self, revision: u64) {
        self.inner.compacted.fetch_max(revision, Ordering::AcqRel);
    }

    /// Reads [`COMPACT_KEY`]: its version (0 when absent) and the revision it records.
    async fn read_compact_key(&self) -> Result<(i64, u64), Failure> {
        self.inner.read_compact_key().await
    }

    /// The current revision, read linearizably.
    async fn fetch_current(&self) -> Result<u64, Failure> {
        let key = COMPACT_KEY.as_bytes().to_vec();
        let response = self
            .inner
            .retry(|mut kv| {
                let key = key.clone();
                async move { kv.get(key, Some(GetOptions::new().with_count_only())).await }
            })
            .await?;
        let current = response.header().map_or(0, |h| h.revision());
        self.note_seen(Some(current));
        Ok(revision(current))
    }

    /// The compaction point, as recorded by the replicas.
    async fn fetch_compacted(&self) -> Result<u64, Failure> {
        let (_, recorded) = self.read_compact_key().await?;
        self.note_compacted(recorded);
        Ok(self.inner.compacted.load(Ordering::Acquire))
    }

    /// Turns a read failure into the trait's error, reading the revisions it must carry.
    async fn read_error(&self, failure: Failure, requested: Option<u64>) -> ReadError {
        let requested = requested.unwrap_or(0);
        match failure {
            Failure::Compacted => {
                let compacted = self.fetch_compacted().await.unwrap_or(0);
                // Compacted by someone who did not record it: the point is past `requested`.
                let compacted = compacted.max(requested.saturating_add(1));
                self.note_compacted(compacted);
                ReadError::Compacted {
                    requested,
                    compacted,
                }
            }
            Failure::FutureRevision => match self.fetch_current().await {
                Ok(current) => ReadError::FutureRevision { requested, current },
                Err(f) => ReadError::Internal(f.message()),
            },
            other => ReadError::Internal(other.message()),
        }
    }

    /// Sends a write transaction, retrying transient failures; remembers whether a failed
    /// attempt may have applied, which the caller resolves by looking at what it reads back.
    async fn write(&self, txn: Txn) -> Result<Written, Failure> {
        let deadline = tokio::time::Instant::now() + self.inner.options.request_timeout;
        let mut pause = Duration::from_millis(20);
        let mut retried_ambiguously = false;
        loop {
            let mut kv = self.inner.kv.clone();
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let failure = match tokio::time::timeout(left, kv.txn(txn.clone())).await {
                Ok(Ok(response)) => {
                    self.note_seen(response.header().map(|h| h.revision()));
                    return Ok(Written {
                        response,
                        retried_ambiguously,
                    });
                }
                Ok(Err(error)) => classify(&error),
                Err(_) => Failure::Transient("etcd did not answer in time".to_owned()),
            };
            match failure {
                Failure::Transient(message) => {
                    if tokio::time::Instant::now() + pause >= deadline {
                        return Err(Failure::Transient(message));
                    }
                    retried_ambiguously = true;
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return Err(other),
            }
        }
    }

    fn kv(&self, kv: etcd_client::KeyValue) -> KeyValue {
        self.inner.to_kv(kv)
    }

    /// The key-values of the `Get` in a transaction's `or_else` branch.
    fn failed_branch_kv(&self, response: &TxnResponse) -> Option<KeyValue> {
        response.op_responses().into_iter().find_map(|op| match op {
            TxnOpResponse::Get(mut get) => get.take_kvs().into_iter().next().map(|kv| self.kv(kv)),
            _ => None,
        })
    }

    /// A create (one transaction: the key is absent and, with a guard, the guard's key is at
    /// its mod revision).
    async fn create_with(
        &self,
        key: &str,
        value: Bytes,
        guard: Option<&Guard>,
    ) -> Result<KeyValue, CreateError> {
        self.check_size(key, &value)
            .map_err(|(size, limit)| CreateError::TooLarge { size, limit })?;
        let full = self.full_key(key);
        let mut conditions = vec![Compare::create_revision(full.clone(), CompareOp::Equal, 0)];
        if let Some(guard) = guard {
            conditions.push(Compare::mod_revision(
                self.full_key(&guard.key),
                CompareOp::Equal,
                signed(guard.mod_revision),
            ));
        }
        let txn = Txn::new()
            .when(conditions)
            .and_then([TxnOp::put(full.clone(), value.to_vec(), None)])
            .or_else([TxnOp::get(full, None)]);
        let written = self.write(txn).await.map_err(|failure| match failure {
            Failure::TooLarge => {
                let (size, limit) = self.refused_size(key, &value);
                CreateError::TooLarge { size, limit }
            }
            other => CreateError::Internal(other.message()),
        })?;
        let rev = revision(written.response.header().map_or(0, |h| h.revision()));
        if written.response.succeeded() {
            return Ok(KeyValue {
                key: key.to_owned(),
                value,
                create_revision: rev,
                mod_revision: rev,
            });
        }
        match self.failed_branch_kv(&written.response) {
            // An earlier attempt that seemed to fail did create the key.
            Some(current)
                if written.retried_ambiguously
                    && current.value == value
                    && current.create_revision == current.mod_revision =>
            {
                Ok(current)
            }
            Some(current) => Err(CreateError::AlreadyExists { current }),
            // The key is absent, so the guard is what failed.
            None if guard.is_some() => Err(CreateError::GuardChanged),
            None => Err(CreateError::Internal(
                "etcd refused the create but holds no value for the key".to_owned(),
            )),
        }
    }

    /// Watches `prefix` from a revision the store has reached and not compacted.
    async fn open_watch(
        &self,
        prefix: &str,
        from_revision: u64,
        previous: watch::Previous,
    ) -> Result<WatchStream, WatchError> {
        if from_revision > self.inner.seen.load(Ordering::Acquire) {
            let current = self
                .fetch_current()
                .await
                .map_err(|f| WatchError::Internal(f.message()))?;
            if from_revision > current {
                return Err(WatchError::FutureRevision {
                    requested: from_revision,
                    current,
                });
            }
        }
        let compacted = self.inner.compacted.load(Ordering::Acquire);
        if from_revision < compacted {
            return Err(WatchError::Compacted {
                requested: from_revision,
                compacted,
            });
        }
        watch::start(
            self.inner.clone(),
            self.full_key(prefix),
            from_revision,
            previous,
        )
        .await
    }
}

impl Inner {
    fn full_key(prefix: &str, key: &str) -> Vec<u8> {
        let mut full = Vec::with_capacity(prefix.len() + key.len());
        full.extend_from_slice(prefix.as_bytes());
        full.extend_from_slice(key.as_bytes());
        full
    }

    fn note_seen(&self, header_revision: Option<i64>) {
        if let Some(rev) = header_revision {
            self.seen.fetch_max(revision(rev), Ordering::AcqRel);
        }
    }

    fn to_kv(&self, kv: etcd_client::KeyValue) -> KeyValue {
        let create_revision = revision(kv.create_revision());
        let mod_revision = revision(kv.mod_revision());
        let (key, value) = kv.into_key_value();
        let relative = key
            .get(self.options.prefix.len()..)
            .unwrap_or(key.as_slice());
        KeyValue {
            key: String::from_utf8_lossy(relative).into_owned(),
            value: Bytes::from(value),
            create_revision,
            mod_revision,
        }
    }

    /// Runs an idempotent call, retrying transient failures until the request timeout.
    async fn retry<T, F, Fut>(&self, mut call: F) -> Result<T, Failure>
    where
        F: FnMut(KvClient) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.options.request_timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let failure = match tokio::time::timeout(left, call(self.kv.clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) => classify(&error),
                Err(_) => Failure::Transient("etcd did not answer in time".to_owned()),
            };
            match failure {
                Failure::Transient(message) => {
                    if tokio::time::Instant::now() + pause >= deadline {
                        return Err(Failure::Transient(message));
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                other => return Err(other),
            }
        }
    }

    async fn read_compact_key(&self) -> Result<(i64, u64), Failure> {
        let mut response = self
            .retry(|mut kv| async move { kv.get(COMPACT_KEY, None).await })
            .await?;
        self.note_seen(response.header().map(|h| h.revision()));
        let Some(kv) = response.take_kvs().into_iter().next() else {
            return Ok((0, 0));
        };
        let recorded = std::str::from_utf8(kv.value())
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .unwrap_or(0);
        Ok((kv.version(), recorded))
    }

    /// Records `target` as the compaction point if [`COMPACT_KEY`] still has `version`, and
    /// if so compacts etcd to it. Returns the key's version afterwards and whether this call
    /// won (a loser learns the winner's version and target), and the current revision.
    pub(super) async fn compact_if_version(
        &self,
        version: i64,
        target: u64,
    ) -> Result<(i64, bool, u64), Failure> {
        let txn = Txn::new()
            .when([Compare::version(COMPACT_KEY, CompareOp::Equal, version)])
            .and_then([TxnOp::put(COMPACT_KEY, target.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_KEY, None)]);
        let response = self
            .retry(|mut kv| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await?;
        let current = response.header().map_or(0, |h| h.revision());
        self.note_seen(Some(current));
        let current = revision(current);
        if !response.succeeded() {
            let mut theirs = (version, 0);
            for op in response.op_responses() {
                if let TxnOpResponse::Get(mut get) = op
                    && let Some(kv) = get.take_kvs().into_iter().next()
                {
                    let recorded = std::str::from_utf8(kv.value())
                        .ok()
                        .and_then(|t| t.parse::<u64>().ok())
                        .unwrap_or(0);
                    theirs = (kv.version(), recorded);
                }
            }
            self.compacted.fetch_max(theirs.1, Ordering::AcqRel);
            return Ok((theirs.0, false, current));
        }
        // Recorded first, compacted second (as upstream does): a crash in between leaves the
        // record ahead of etcd, which only makes readers give up on history a little early.
        let compacted = self
            .retry(|mut kv| async move {
                kv.compact(
                    signed(target),
                    Some(etcd_client::CompactionOptions::new().with_physical()),
                )
                .await
            })
            .await;
        match compacted {
            Ok(_) | Err(Failure::Compacted) => {}
            Err(other) => return Err(other),
        }
        self.compacted.fetch_max(target, Ordering::AcqRel);
        Ok((version.saturating_add(1), true, current))
    }
}

impl Storage for EtcdStorage {
    fn get<'a>(
        &'a self,
        key: &'a str,
        at_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>> {
        Box::pin(async move {
            let full = self.full_key(key);
            let mut options = GetOptions::new();
            if let Some(at) = at_revision {
                options = options.with_revision(signed(at));
            }
            let result = self
                .inner
                .retry(|mut kv| {
                    let (full, options) = (full.clone(), options.clone());
                    async move { kv.get(full, Some(options)).await }
                })
                .await;
            match result {
                Ok(mut response) => {
                    self.note_seen(response.header().map(|h| h.revision()));
                    Ok(response.take_kvs().into_iter().next().map(|kv| self.kv(kv)))
                }
                Err(failure) => Err(self.read_error(failure, at_revision).await),
            }
        })
    }

    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at_revision: Option<u64>,
        start_key: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>> {
        Box::pin(async move {
            let full_prefix = self.full_key(prefix);
            let end = prefix_end(&full_prefix);
            let start = match start_key {
                Some(start) if start > prefix => self.full_key(start),
                _ => full_prefix.clone(),
            };
            let mut options = GetOptions::new().with_range(end);
            if let Some(at) = at_revision {
                options = options.with_revision(signed(at));
            }
            if let Some(limit) = limit.filter(|&l| l > 0) {
                options = options.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
            }
            let result = self
                .inner
                .retry(|mut kv| {
                    let (start, options) = (start.clone(), options.clone());
                    async move { kv.get(start, Some(options)).await }
                })
                .await;
            let mut response = match result {
                Ok(response) => response,
                Err(failure) => return Err(self.read_error(failure, at_revision).await),
            };
            let header = response.header().map(|h| h.revision());
            self.note_seen(header);
            let count = revision(response.count());
            let more = response.more();
            let items: Vec<KeyValue> = response
                .take_kvs()
                .into_iter()
                .map(|kv| self.kv(kv))
                .collect();
            let remaining = if more {
                count.saturating_sub(items.len() as u64)
            } else {
                0
            };
            Ok(ListResult {
                revision: at_revision.unwrap_or_else(|| revision(header.unwrap_or(0))),
                items,
                more: remaining > 0,
                remaining,
            })
        })
    }

    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>> {
        Box::pin(async move {
            let full_prefix = self.full_key(prefix);
            let options = GetOptions::new()
                .with_range(prefix_end(&full_prefix))
                .with_count_only();
            let result = self
                .inner
                .retry(|mut kv| {
                    let (key, options) = (full_prefix.clone(), options.clone());
                    async move { kv.get(key, Some(options)).await }
                })
                .await;
            match result {
                Ok(response) => {
                    self.note_seen(response.header().map(|h| h.revision()));
                    Ok(revision(response.count()))
                }
                Err(failure) => Err(self.read_error(failure, None).await),
            }
        })
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(self.create_with(key, value, None))
    }

    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(self.create_with(key, value, Some(guard)))
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>> {
        Box::pin(async move {
            self.check_size(key, &value)
                .map_err(|(size, limit)| UpdateError::TooLarge { size, limit })?;
            let full = self.full_key(key);
            let txn = Txn::new()
                .when([
                    Compare::mod_revision(
                        full.clone(),
                        CompareOp::Equal,
                        signed(expected_mod_revision),
                    ),
                    // A missing key's mod revision is 0: never let an update create it.
                    Compare::version(full.clone(), CompareOp::Greater, 0),
                ])
                .and_then([TxnOp::put(
                    full.clone(),
                    value.to_vec(),
                    Some(PutOptions::new().with_prev_key()),
                )])
                .or_else([TxnOp::get(full, None)]);
            let written = self.write(txn).await.map_err(|failure| match failure {
                Failure::TooLarge => {
                    let (size, limit) = self.refused_size(key, &value);
                    UpdateError::TooLarge { size, limit }
                }
                other => UpdateError::Internal(other.message()),
            })?;
            let rev = revision(written.response.header().map_or(0, |h| h.revision()));
            if written.response.succeeded() {
                let create_revision = written
                    .response
                    .op_responses()
                    .into_iter()
                    .find_map(|op| match op {
                        TxnOpResponse::Put(put) => {
                            put.prev_key().map(|kv| revision(kv.create_revision()))
                        }
                        _ => None,
                    })
                    .unwrap_or(rev);
                return Ok(KeyValue {
                    key: key.to_owned(),
                    value,
                    create_revision,
                    mod_revision: rev,
                });
            }
            match self.failed_branch_kv(&written.response) {
                Some(current) if written.retried_ambiguously && current.value == value => {
                    Ok(current)
                }
                Some(current) => Err(UpdateError::Conflict { current }),
                None => Err(UpdateError::NotFound),
            }
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>> {
        Box::pin(async move {
            let full = self.full_key(key);
            let mut compares = vec![Compare::version(full.clone(), CompareOp::Greater, 0)];
            if let Some(expected) = expected_mod_revision {
                compares.push(Compare::mod_revision(
                    full.clone(),
                    CompareOp::Equal,
                    signed(expected),
                ));
            }
            let txn = Txn::new()
                .when(compares)
                .and_then([TxnOp::delete(
                    full.clone(),
                    Some(DeleteOptions::new().with_prev_key()),
                )])
                .or_else([TxnOp::get(full, None)]);
            let written = self
                .write(txn)
                .await
                .map_err(|failure| DeleteError::Internal(failure.message()))?;
            let rev = revision(written.response.header().map_or(0, |h| h.revision()));
            if written.response.succeeded() {
                let prev = written
                    .response
                    .op_responses()
                    .into_iter()
                    .find_map(|op| match op {
                        TxnOpResponse::Delete(mut deleted) => {
                            deleted.take_prev_kvs().into_iter().next()
                        }
                        _ => None,
                    })
                    .map(|kv| self.kv(kv))
                    .ok_or_else(|| {
                        DeleteError::Internal("etcd deleted the key without its value".to_owned())
                    })?;
                return Ok(Deleted {
                    prev,
                    revision: rev,
                });
            }
            if written.retried_ambiguously {
                // The first attempt may have deleted the key; its value is lost with it.
                return Err(DeleteError::Internal(
                    "etcd was unavailable and the delete's outcome is unknown".to_owned(),
                ));
            }
            match self.failed_branch_kv(&written.response) {
                Some(current) => Err(DeleteError::Conflict { current }),
                None => Err(DeleteError::NotFound),
            }
        })
    }

    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        Box::pin(self.open_watch(prefix, from_revision, watch::Previous::Values))
    }

    fn watch_without_prev<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        Box::pin(self.open_watch(prefix, from_revision, watch::Previous::Keys))
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        Box::pin(async move {
            self.fetch_current()
                .await
                .map_err(|f| ReadError::Internal(f.message()))
        })
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>> {
        Box::pin(async move {
            let internal = |f: Failure| CompactError::Internal(f.message());
            // Another replica may win the key between our read and our transaction; then
            // look again (it may have compacted past `revision` already).
            for _ in 0..8 {
                let current = self.fetch_current().await.map_err(internal)?;
                if revision > current {
                    return Err(CompactError::FutureRevision {
                        requested: revision,
                        current,
                    });
                }
                let (version, recorded) = self.read_compact_key().await.map_err(internal)?;
                self.note_compacted(recorded);
                let compacted = self.inner.compacted.load(Ordering::Acquire);
                if revision <= compacted {
                    return Err(CompactError::Compacted {
                        requested: revision,
                        compacted,
                    });
                }
                let (_, won, _) = self
                    .inner
                    .compact_if_version(version, revision)
                    .await
                    .map_err(internal)?;
                if won {
                    return Ok(());
                }
            }
            Err(CompactError::Internal(
                "other replicas kept compacting concurrently".to_owned(),
            ))
        })
    }

    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        Box::pin(async move {
            self.fetch_compacted()
                .await
                .map_err(|f| ReadError::Internal(f.message()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        let cases: [(&[u8], &[u8]); 4] = [
            (b"/a/", b"/a0"),
            (b"a\xff", b"b"),
            (b"\xff\xff", b"\0"),
            (b"", b"\0"),
        ];
        for (prefix, end) in cases {
            assert_eq!(prefix_end(prefix), end, "{prefix:?}");
        }
    }

    #[test]
    fn progress_order_follows_the_release() {
        let cases = [
            ("3.4.23", false),
            ("3.4.24", true),
            ("3.5.7", false),
            ("3.5.21", true),
            ("3.6.0", true),
            ("3.3.27", false),
            ("4.0.0-alpha", true),
            ("", false),
        ];
        for (version, ordered) in cases {
            assert_eq!(orders_progress(version), ordered, "{version}");
        }
    }

    #[test]
    fn prefixes_lose_trailing_slashes() {
        let options = EtcdOptions::new(["http://127.0.0.1:2379"]).with_prefix("/tenant/");
        assert_eq!(options.prefix, "/tenant");
        assert_eq!(
            Inner::full_key(&options.prefix, "/registry/x"),
            b"/tenant/registry/x"
        );
    }
}
