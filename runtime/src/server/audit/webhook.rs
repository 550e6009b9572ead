//! The audit webhook backend (`--audit-webhook-config-file`), as kube-apiserver's batching
//! webhook sends events (`staging/src/k8s.io/apiserver/plugin/pkg/audit/buffered` over
//! `.../audit/webhook`): events wait in a bounded buffer (a full buffer drops them, logged), are
//! collected into batches of at most [`WebhookOptions::max_batch_size`] or whatever arrived
//! within [`WebhookOptions::max_batch_wait`], and each batch is POSTed as an `audit.k8s.io/v1`
//! `EventList` to the server the configuration file (a kubeconfig) names, with its CA and its
//! user's client certificate or token. Batches leave at most at the throttle's rate (a token
//! bucket of `qps` and `burst`), each on its own task; a failed POST (no connection, a 5xx or
//! 429 answer) is tried again with upstream's backoff (the initial delay, then 1.5 times
//! longer, with jitter, five tries in all) before its events are given up, logged as upstream
//! logs a plugin's error. When the audit is dropped with its server, what is buffered is
//! sent at once rather than when a batch fills; unlike upstream, the process does not wait for
//! those last requests before it exits.
//!
//! In the blocking modes (`--audit-webhook-mode=blocking|blocking-strict`) nothing is buffered:
//! each event is POSTed alone, with the same retries, while its request waits; a delivery that
//! fails in the end is logged, and in `blocking-strict` mode it fails the request too when it
//! was the RequestReceived event (upstream's `ignoreErrorsBackend` is the difference).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use base64::Engine as _;
use bytes::Bytes;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::server::audit::Mode;
use crate::server::audit::event::Event;
use crate::server::audit::sink::Queue;
use crate::server::http::client::{self, Credentials, Destination, Exchange};

/// The most bytes of a webhook's answer read.
const MOST_ANSWER_BYTES: usize = 1 << 20;
/// How long one POST may take, connecting included.
const POST_DEADLINE: Duration = Duration::from_secs(30);
/// Upstream's retry backoff (`DefaultRetryBackoffWithInitialDelay`): factor, jitter, tries.
const BACKOFF_FACTOR: f64 = 1.5;
const BACKOFF_JITTER: f64 = 0.2;
const TRIES: u32 = 5;

/// How the batching backend buffers, batches and paces events: kube-apiserver's
/// `--audit-webhook-batch-*` and `--audit-webhook-initial-backoff` flags, with their defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WebhookOptions {
    /// The most events waiting to be sent (`--audit-webhook-batch-buffer-size`, 10000).
    pub buffer_size: usize,
    /// The most events in one request (`--audit-webhook-batch-max-size`, 400).
    pub max_batch_size: usize,
    /// How long a batch collects events before it is sent anyway
    /// (`--audit-webhook-batch-max-wait`, 30 s).
    pub max_batch_wait: Duration,
    /// Batches per second and the burst above it (`--audit-webhook-batch-throttle-qps` 10,
    /// `-burst` 15); `None` sends as fast as batches fill (`-throttle-enable=false`).
    pub throttle: Option<(f64, u32)>,
    /// The wait before a failed request is tried again (`--audit-webhook-initial-backoff`, 10 s).
    pub initial_backoff: Duration,
    /// Whether events are batched or sent while their request waits
    /// (`--audit-webhook-mode`, batch).
    pub mode: Mode,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        Self {
            buffer_size: 10_000,
            max_batch_size: 400,
            max_batch_wait: Duration::from_secs(30),
            throttle: Some((10.0, 15)),
            initial_backoff: Duration::from_secs(10),
            mode: Mode::Batch,
        }
    }
}

/// Where batches go: the kubeconfig's server, its CA, and its user's credentials.
#[derive(Debug)]
pub(crate) struct Target {
    destination: Destination,
    roots: Arc<RootCertStore>,
    credentials: Credentials,
}

impl Target {
    /// The cluster and user of the kubeconfig at `path` (its current context's, else its
    /// first); files it names are relative to it. The error is a sentence.
    pub(crate) fn of_kubeconfig(path: &Path) -> Result<Self, String> {
        let text =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let config: Value = serde_yaml_ng::from_slice(&text)
            .map_err(|e| format!("cannot parse {} as a kubeconfig: {e}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let context = config["current-context"]
            .as_str()
            .and_then(|name| named(&config["contexts"], name).map(|entry| &entry["context"]));
        let pick = |list: &str, key: &str| {
            let chosen = context.and_then(|c| c[key].as_str());
            match chosen {
                Some(name) => named(&config[list], name),
                None => config[list].get(0),
            }
        };
        let cluster = pick("clusters", "cluster")
            .map(|entry| &entry["cluster"])
            .ok_or_else(|| format!("{}: no cluster", path.display()))?;
        let server = cluster["server"]
            .as_str()
            .ok_or_else(|| format!("{}: the cluster has no server", path.display()))?;
        let destination = Destination::of_url(server)?;
        let ca = material(dir, cluster, "certificate-authority")?;
        let roots = match ca {
            Some(pem) => client::roots_of_pem(&pem).ok_or_else(|| {
                format!(
                    "{}: the certificate authority holds no certificate",
                    path.display()
                )
            })?,
            None => client::system_roots(),
        };
        let user = pick("users", "user").map_or(&Value::Null, |entry| &entry["user"]);
        let certificate = match (
            material(dir, user, "client-certificate")?,
            material(dir, user, "client-key")?,
        ) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(&cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("{}: the client certificate: {e}", path.display()))?;
                let key = PrivateKeyDer::from_pem_slice(&key)
                    .map_err(|e| format!("{}: the client key: {e}", path.display()))?;
                Some((chain, Arc::new(key)))
            }
            (None, None) => None,
            _ => {
                return Err(format!(
                    "{}: a client certificate needs its key, and a key its certificate",
                    path.display()
                ));
            }
        };
        let token = match (user["token"].as_str(), user["tokenFile"].as_str()) {
            (Some(token), _) => Some(token.to_owned()),
            (None, Some(file)) => Some(
                std::fs::read_to_string(dir.join(file))
                    .map_err(|e| format!("cannot read the token file {file}: {e}"))?
                    .trim()
                    .to_owned(),
            ),
            (None, None) => None,
        };
        Ok(Self {
            destination,
            roots: Arc::new(roots),
            credentials: Credentials { certificate, token },
        })
    }
}

/// The entry of a kubeconfig list (`clusters`, `users`, `contexts`) named `name`.
fn named<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list.as_array()?.iter().find(|entry| entry["name"] == name)
}

/// A kubeconfig's `<key>-data` (base64) or `<key>` (a file, relative to `dir`).
fn material(dir: &Path, entry: &Value, key: &str) -> Result<Option<Vec<u8>>, String> {
    if let Some(data) = entry[format!("{key}-data")].as_str() {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|e| format!("{key}-data is not base64: {e}"));
    }
    match entry[key].as_str() {
        Some(file) => {
            let file: PathBuf = dir.join(file);
            std::fs::read(&file)
                .map(Some)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))
        }
        None => Ok(None),
    }
}

/// The sending side of the backend.
#[derive(Debug)]
pub(crate) struct Webhook {
    /// The batching task's buffer, in batch mode.
    queue: Option<Queue<Event>>,
    target: Arc<Target>,
    options: WebhookOptions,
}

impl Webhook {
    /// Starts the backend, and in batch mode its task (within a Tokio runtime).
    pub(crate) fn start(target: Target, options: WebhookOptions) -> Self {
        let target = Arc::new(target);
        let queue = (options.mode == Mode::Batch).then(|| {
            let (queue, events) = mpsc::channel(options.buffer_size.max(1));
            tokio::spawn(run(events, Arc::clone(&target), options));
            Queue::new(
                queue,
                "Error in audit plugin 'webhook': audit buffer queue blocked; events dropped",
            )
        });
        Self {
            queue,
            target,
            options,
        }
    }

    /// The backend's mode.
    pub(crate) fn mode(&self) -> Mode {
        self.options.mode
    }

    /// Buffers `event`, or drops it when the buffer is full, as upstream's batching backend
    /// does; in a blocking mode, sends it on a task of its own.
    pub(crate) fn offer(&self, event: Event) {
        match &self.queue {
            Some(queue) => queue.offer(event),
            None => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    let target = Arc::clone(&self.target);
                    runtime.spawn(deliver(target, vec![event], self.options.initial_backoff));
                }
                Err(_) => tracing::error!(
                    "Error in audit plugin 'webhook' affecting 1 audit events: no runtime to send it"
                ),
            },
        }
    }

    /// Sends `event` as the mode says: buffered in batch mode, else delivered before this
    /// resolves; false when it could not be delivered and the mode is `blocking-strict`.
    pub(crate) async fn process(&self, event: Event) -> bool {
        if let Some(queue) = &self.queue {
            queue.offer(event);
            return true;
        }
        let target = Arc::clone(&self.target);
        let delivered = deliver(target, vec![event], self.options.initial_backoff).await;
        delivered || self.options.mode == Mode::Blocking
    }
}

/// Collects batches and sends each on its own task until the buffer closes, then sends what
/// is left and waits for every batch.
async fn run(mut events: mpsc::Receiver<Event>, target: Arc<Target>, options: WebhookOptions) {
    let mut throttle = options
        .throttle
        .map(|(qps, burst)| Throttle::new(qps, burst));
    let mut sends = tokio::task::JoinSet::new();
    let mut open = true;
    while open {
        let deadline = Instant::now() + options.max_batch_wait;
        let mut batch = Vec::new();
        while batch.len() < options.max_batch_size.max(1) {
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => batch.push(event),
                    None => {
                        open = false;
                        break;
                    }
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        if batch.is_empty() {
            continue;
        }
        if let Some(throttle) = throttle.as_mut() {
            throttle.wait().await;
        }
        sends.spawn(deliver(Arc::clone(&target), batch, options.initial_backoff));
        while sends.try_join_next().is_some() {}
    }
    while sends.join_next().await.is_some() {}
}

/// POSTs one batch, trying again with backoff on failures worth retrying; whether it was
/// delivered.
async fn deliver(target: Arc<Target>, batch: Vec<Event>, initial_backoff: Duration) -> bool {
    let count = batch.len();
    let list = json!({
        "kind": "EventList",
        "apiVersion": "audit.k8s.io/v1",
        "metadata": {},
        "items": batch,
    });
    let body = match serde_json::to_vec(&list) {
        Ok(body) => Bytes::from(body),
        Err(error) => {
            tracing::error!(%error, "Error in audit plugin 'webhook' affecting {count} audit events");
            return false;
        }
    };
    let mut wait = initial_backoff;
    for attempt in 1..=TRIES {
        let answer = client::send(Exchange {
            method: Method::POST,
            destination: &target.destination,
            body: Some(("application/json", body.clone())),
            roots: Arc::clone(&target.roots),
            deadline: POST_DEADLINE,
            most_bytes: MOST_ANSWER_BYTES,
            credentials: Some(&target.credentials),
        })
        .await;
        let error = match answer {
            Ok(answer) if answer.status.is_success() => return true,
            Ok(answer) => {
                let error = format!("the server answered {}", answer.status);
                if !retried(answer.status) {
                    tracing::error!(%error, "Error in audit plugin 'webhook' affecting {count} audit events");
                    return false;
                }
                error
            }
            Err(error) => error,
        };
        if attempt == TRIES {
            tracing::error!(%error, "Error in audit plugin 'webhook' affecting {count} audit events");
            return false;
        }
        tracing::warn!(%error, attempt, "sending audit events failed; trying again");
        tokio::time::sleep(jittered(wait)).await;
        wait = wait.mul_f64(BACKOFF_FACTOR);
    }
    false
}

/// Whether an answer is worth trying again: upstream's `ShouldRetry` (server errors, too many
/// requests).
fn retried(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
}

/// `wait` plus up to [`BACKOFF_JITTER`] of it, as Go's `wait.Jitter`; the clock's nanoseconds
/// are random enough to keep backends that failed together from retrying together.
fn jittered(wait: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let fraction = f64::from(nanos % 1000) / 1000.0;
    wait.mul_f64(1.0 + BACKOFF_JITTER * fraction)
}

/// A token bucket: `burst` batches at once, then `qps` a second (client-go's
/// `NewTokenBucketRateLimiter`).
struct Throttle {
    qps: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Throttle {
    fn new(qps: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            qps: qps.max(f64::MIN_POSITIVE),
            burst,
            tokens: burst,
            at: Instant::now(),
        }
    }

    /// Takes a token, waiting for one when the bucket is empty.
    async fn wait(&mut self) {
        let short = self.reserve(Instant::now());
        if !short.is_zero() {
            tokio::time::sleep(short).await;
        }
    }

    /// Takes the token due next, as of `now`: how long until it is there (zero when the
    /// bucket holds one). A wait is spent from the bucket's future refill.
    fn reserve(&mut self, now: Instant) -> Duration {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * self.qps;
        self.tokens = (self.tokens + refill).min(self.burst) - 1.0;
        self.at = now;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

#[allow(
    clippy::unwrap_used,
    reason = "a test: a failed unwrap is a failed test"
)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_names_server_ca_and_user() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("webhook.kubeconfig");
        std::fs::write(dir.path().join("token"), "s3cret\n").unwrap();
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: audit\n\
             clusters:\n- name: other\n  cluster: {server: \"https://other.example\"}\n\
             - name: sink\n  cluster: {server: \"https://audit.example:8443/events\"}\n\
             users:\n- name: writer\n  user: {tokenFile: token}\n\
             contexts:\n- name: audit\n  context: {cluster: sink, user: writer}\n",
        )
        .unwrap();
        let target = Target::of_kubeconfig(&path).unwrap();
        assert_eq!(target.destination.host, "audit.example");
        assert_eq!(target.destination.port, 8443);
        assert_eq!(target.destination.path_and_query, "/events");
        assert_eq!(target.credentials.token.as_deref(), Some("s3cret"));
        assert!(target.credentials.certificate.is_none());

        std::fs::write(
            &path,
            "clusters:\n- name: x\n  cluster: {server: \"http://plain.example\"}\n",
        )
        .unwrap();
        let error = Target::of_kubeconfig(&path).unwrap_err();
        assert!(error.contains("https"), "{error}");
        std::fs::write(
            &path,
            "clusters:\n- name: x\n  cluster: {server: \"https://a.example\", certificate-authority-data: \"%%%\"}\n",
        )
        .unwrap();
        let error = Target::of_kubeconfig(&path).unwrap_err();
        assert!(
            error.contains("certificate-authority-data is not base64"),
            "{error}"
        );
    }

    /// client-go's token bucket: the burst at once, then one per 1/qps seconds.
    #[test]
    fn the_throttle_lets_a_burst_through_then_paces() {
        let start = Instant::now();
        let mut throttle = Throttle::new(10.0, 3);
        throttle.at = start;
        for _ in 0..3 {
            assert_eq!(throttle.reserve(start), Duration::ZERO);
        }
        let waits: Vec<u128> = (0..2)
            .map(|_| throttle.reserve(start).as_millis())
            .collect();
        assert_eq!(waits, [100, 200]);
        // Later the bucket has refilled to its burst, not beyond.
        let later = start + Duration::from_secs(5);
        for _ in 0..3 {
            assert_eq!(throttle.reserve(later), Duration::ZERO);
        }
        assert_eq!(throttle.reserve(later).as_millis(), 100);
    }

    #[test]
    fn retries_are_for_server_errors_and_throttling() {
        assert!(retried(StatusCode::SERVICE_UNAVAILABLE));
        assert!(retried(StatusCode::TOO_MANY_REQUESTS));
        assert!(!retried(StatusCode::BAD_REQUEST));
        assert!(!retried(StatusCode::FORBIDDEN));
    }
}
