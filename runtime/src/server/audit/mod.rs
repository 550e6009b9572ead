//! Auditing: kube-apiserver's audit log (`--audit-policy-file`, `--audit-log-path`, rotated as
//! `--audit-log-maxsize`, `--audit-log-maxbackup`, `--audit-log-maxage` and
//! `--audit-log-compress` say: `rotation`). The policy
//! (`policy`) gives each request a level from its user and attributes; events (`event`) are
//! written at the stages the policy keeps (RequestReceived; ResponseStarted for a watch;
//! ResponseComplete once the answer has been sent or abandoned), each a JSON line (`sink`)
//! and, with `--audit-webhook-config-file`, to a webhook (`webhook`),
//! with the authorization decision and its reason as annotations, the request's body from
//! level `Request` and the response's from `RequestResponse`. Every answer carries an
//! `Audit-Id` header, as upstream's do, audited or not. Each backend has upstream's [`Mode`]s:
//! in the blocking ones a request waits for each of its events to be stored, and in
//! `blocking-strict` fails with a 500 when its RequestReceived event could not be.
//!
//! The layer sits outside `auth::guard`, which tells it in an `auth::Findings` slot who the
//! request was from and what authorization decided, so refused requests are audited too. Once
//! the user is known, the guard calls the layer back (`auth::Authenticated`): the level is
//! decided and the RequestReceived event written there, before the request is authorized and
//! served, where upstream's audit filter sits; a request refused before (401) is audited once
//! it is answered. May import `auth` (users, attributes, findings) and `http`.

mod event;
mod policy;
mod rotation;
mod sink;
mod webhook;

pub use rotation::LogRotation;
pub use webhook::WebhookOptions;

use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::future::{BoxFuture, FutureExt as _};
use hyper::body::{Frame, SizeHint};
use serde_json::Value;

use crate::server::Streamed;
use crate::server::auth::attributes::Attributes;
use crate::server::auth::{Authenticated, Findings, FindingsSlot};
use crate::server::http::connections::Peer;
use crate::server::http::error::MAX_BODY_BYTES;
use crate::server::http::negotiate;

use event::{Event, ObjectRef, micro_time, response_status};
use policy::{Decision, Level, Policy, Stage};
use sink::{Sink, Target};

/// The header naming a request's audit ID, in answers (and, when a client sends one, taken
/// from its request, as upstream takes it).
const AUDIT_ID: &str = "audit-id";

/// The most of a failed answer's body read for its `responseStatus`.
const STATUS_BYTES: usize = 64 << 10;

/// How a backend takes events: kube-apiserver's `--audit-log-mode` and
/// `--audit-webhook-mode` (`staging/src/k8s.io/apiserver/pkg/server/options/audit.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Events are queued and stored later; what a full queue cannot hold is dropped.
    Batch,
    /// A request waits until each of its events is stored; a failure is logged.
    #[default]
    Blocking,
    /// As `Blocking`, and a request whose RequestReceived event could not be stored fails.
    BlockingStrict,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(mode: &str) -> Result<Self, String> {
        match mode {
            "batch" => Ok(Self::Batch),
            "blocking" => Ok(Self::Blocking),
            "blocking-strict" => Ok(Self::BlockingStrict),
            other => Err(format!(
                "invalid audit mode {other}, allowed modes are \"batch,blocking,blocking-strict\""
            )),
        }
    }
}

/// How a server audits: a policy and where its events go.
#[derive(Debug)]
pub struct Audit {
    policy: Policy,
    /// The log, unless events go to the webhook only.
    sink: Option<Sink>,
    webhook: Option<webhook::Webhook>,
    /// Whether some rule records bodies: only then are request bodies copied as they are read.
    records_bodies: bool,
    /// Room for the events of requests that are gone, stored on tasks of their own.
    detached: Arc<tokio::sync::Semaphore>,
}

/// The most events of requests that are gone may be being stored at once by blocking backends.
/// Each store is bounded in time (the webhook's tries, the log's write); this bounds how many a
/// client that opens and drops connections fast can leave behind.
const MAX_DETACHED: usize = 256;

/// Why an audit policy or log could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The policy file could not be read.
    #[error("reading audit policy {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The policy is not a valid `audit.k8s.io/v1` Policy.
    #[error("invalid audit policy {path}: {message}")]
    Policy {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The webhook's configuration (a kubeconfig) could not be used.
    #[error("invalid audit webhook config file {path}: {message}")]
    Webhook {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The log could not be opened.
    #[error("opening audit log {path}: {source}")]
    Log {
        /// The log's path.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Audit {
    /// Audits as the `audit.k8s.io/v1` Policy in `policy_file` says, appending JSON lines to
    /// `log` (`-`: standard output). Must be called within a Tokio runtime (the writer task).
    pub fn new(policy_file: &Path, log: &Path) -> Result<Self, AuditError> {
        Self::rotated(policy_file, log, LogRotation::default())
    }

    /// [`Audit::new`], the log file rotated as `rotation` says.
    pub fn rotated(
        policy_file: &Path,
        log: &Path,
        rotation: LogRotation,
    ) -> Result<Self, AuditError> {
        let mut audit = Self::of_policy(policy_file)?;
        let sink = Sink::open(&Target::of(log), rotation).map_err(|source| AuditError::Log {
            path: log.display().to_string(),
            source,
        })?;
        audit.sink = Some(sink);
        Ok(audit)
    }

    /// Audits as the Policy in `policy_file` says, sending the events to the webhook the
    /// kubeconfig `config_file` names, batched as `options` say (kube-apiserver's
    /// `--audit-webhook-config-file` in its default batch mode). Must be called within a Tokio
    /// runtime (the sending task).
    pub fn webhook(
        policy_file: &Path,
        config_file: &Path,
        options: WebhookOptions,
    ) -> Result<Self, AuditError> {
        Self::of_policy(policy_file)?.and_webhook(config_file, options)
    }

    /// This audit's events sent to a webhook too, as [`Audit::webhook`] sends them.
    pub fn and_webhook(
        mut self,
        config_file: &Path,
        options: WebhookOptions,
    ) -> Result<Self, AuditError> {
        let target =
            webhook::Target::of_kubeconfig(config_file).map_err(|message| AuditError::Webhook {
                path: config_file.display().to_string(),
                message,
            })?;
        self.webhook = Some(webhook::Webhook::start(target, options));
        Ok(self)
    }

    /// This audit's log written in `mode` (`--audit-log-mode`; blocking unless set).
    #[must_use]
    pub fn log_mode(mut self, mode: Mode) -> Self {
        if let Some(sink) = &mut self.sink {
            sink.mode = mode;
        }
        self
    }

    /// The policy of `policy_file`, with no backend yet.
    fn of_policy(policy_file: &Path) -> Result<Self, AuditError> {
        let shown = policy_file.display().to_string();
        let text = std::fs::read_to_string(policy_file).map_err(|source| AuditError::Read {
            path: shown.clone(),
            source,
        })?;
        let policy = Policy::parse(&text).map_err(|message| AuditError::Policy {
            path: shown,
            message,
        })?;
        let records_bodies = policy.records_bodies();
        Ok(Self {
            policy,
            sink: None,
            webhook: None,
            records_bodies,
            detached: Arc::new(tokio::sync::Semaphore::new(MAX_DETACHED)),
        })
    }

    /// Whether some backend makes requests wait for their events.
    fn blocks(&self) -> bool {
        self.sink
            .as_ref()
            .is_some_and(|sink| sink.mode != Mode::Batch)
            || self
                .webhook
                .as_ref()
                .is_some_and(|webhook| webhook.mode() != Mode::Batch)
    }

    /// Stores `event` in every backend, waiting for those that block; false when a
    /// `blocking-strict` one could not store it.
    async fn store(self: &Arc<Self>, event: Event) -> bool {
        if self.blocks() {
            Arc::clone(self).process(event).await
        } else {
            self.offer(event);
            true
        }
    }

    /// Hands `event` to every backend without waiting: for a request that is gone.
    fn detach(self: &Arc<Self>, event: Event) {
        if self.blocks() {
            self.spawn_detached(Arc::clone(self).process(event).boxed());
        } else {
            self.offer(event);
        }
    }

    /// Finishes `storing`, a blocking store of an event of a request that is gone, on a task
    /// of its own; past [`MAX_DETACHED`] such tasks the event is dropped, with the error
    /// upstream's backends log for events they have no room for.
    fn spawn_detached(&self, storing: BoxFuture<'static, bool>) {
        let runtime = tokio::runtime::Handle::try_current();
        match (runtime, Arc::clone(&self.detached).try_acquire_owned()) {
            (Ok(runtime), Ok(permit)) => {
                runtime.spawn(async move {
                    storing.await;
                    drop(permit);
                });
            }
            (Err(_), _) => tracing::error!(
                "Error in audit plugin affecting 1 audit events: no runtime to store it"
            ),
            (_, Err(_)) => tracing::error!(
                "Error in audit plugin affecting 1 audit events: {MAX_DETACHED} events of requests that are gone are being stored already"
            ),
        }
    }

    /// Hands `event` to every backend's queue.
    fn offer(&self, event: Event) {
        match (&self.sink, &self.webhook) {
            (Some(sink), Some(webhook)) => {
                webhook.offer(event.clone());
                sink.offer(event);
            }
            (Some(sink), None) => sink.offer(event),
            (None, Some(webhook)) => webhook.offer(event),
            (None, None) => {}
        }
    }

    /// Stores `event` in every backend as its mode says (upstream's union backend: stored
    /// when every backend stored it).
    async fn process(self: Arc<Self>, event: Event) -> bool {
        let logged = async {
            match &self.sink {
                Some(sink) => sink.process(event.clone()).await,
                None => true,
            }
        };
        let sent = async {
            match &self.webhook {
                Some(webhook) => webhook.process(event.clone()).await,
                None => true,
            }
        };
        let (logged, sent) = tokio::join!(logged, sent);
        logged && sent
    }
}

/// What is known of a request before its answer.
#[derive(Debug)]
struct Received {
    audit_id: String,
    uri: String,
    attributes: Attributes,
    source_ips: Vec<String>,
    user_agent: Option<String>,
    at: String,
}

/// The layer: an `Audit-Id` on every answer, and with an [`Audit`] the request's events.
pub(crate) async fn layer(audit: Option<Arc<Audit>>, mut request: Request, next: Next) -> Response {
    let audit_id = request
        .headers()
        .get(AUDIT_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 256)
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
    let id_header = HeaderValue::from_str(&audit_id).ok();
    let Some(audit) = audit else {
        let mut response = next.run(request).await;
        if let Some(id) = id_header {
            response.headers_mut().insert(AUDIT_ID, id);
        }
        return response;
    };
    let received = Arc::new(Received {
        audit_id,
        uri: request.uri().to_string(),
        attributes: Attributes::of(request.method(), request.uri()),
        source_ips: request
            .extensions()
            .get::<Peer>()
            .map(|peer| vec![peer.0.ip().to_string()])
            .unwrap_or_default(),
        user_agent: request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        at: micro_time(),
    });
    let head = request.method() == axum::http::Method::HEAD;
    let findings = Arc::new(Mutex::new(Findings::default()));
    let request_body = Arc::new(Mutex::new(Captured::typed(
        request.headers().get(header::CONTENT_TYPE),
    )));
    let opening = Arc::new(Opening {
        audit: Arc::clone(&audit),
        received: Arc::clone(&received),
        request_body: Arc::clone(&request_body),
        opened: Arc::new(Mutex::new(None)),
    });
    request.extensions_mut().insert(FindingsSlot {
        findings: Arc::clone(&findings),
        authenticated: Arc::clone(&opening) as Arc<dyn Authenticated>,
    });
    // A create's body names its object, which every audited level records in `objectRef` (as
    // upstream's `LogRequestObject`): copied whatever the policy keeps of bodies.
    if audit.records_bodies || request.method() == axum::http::Method::POST {
        let (parts, body) = request.into_parts();
        let recorder = Recorder::new(body, Arc::clone(&request_body), MAX_BODY_BYTES, None);
        request = Request::from_parts(parts, Body::new(recorder));
    }
    let mut response = next.run(request).await;
    if let Some(id) = id_header {
        response.headers_mut().insert(AUDIT_ID, id);
    }
    let found = findings
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let opened = opening
        .opened
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let mut record = match opened {
        Some(Opened::Unaudited) => return response,
        Some(Opened::Audited(record)) => *record,
        None => {
            // Refused before its user was known (401): audited now it is answered.
            let decision = audit
                .policy
                .decide(found.user.as_ref(), &received.attributes);
            if decision.level == Level::None {
                return response;
            }
            let record = Record::new(&audit, &received, found.clone(), decision, request_body);
            if let Some(event) = record.event(Stage::RequestReceived) {
                audit.store(event).await;
            }
            record
        }
    };
    record.findings = found;
    record.code = response.status().as_u16();
    record.response_body = Arc::new(Mutex::new(Captured::typed(
        response.headers().get(header::CONTENT_TYPE),
    )));
    if response.extensions().get::<Streamed>().is_some()
        && let Some(event) = record.event(Stage::ResponseStarted)
    {
        audit.store(event).await;
    }
    // An answer whose body the connection never asks for (HEAD, 204, 304, an empty body) is
    // complete now: a blocking backend stores its event before the answer leaves.
    let bodiless = head
        || matches!(record.code, 204 | 304)
        || (response.body().is_end_stream() && record.code != 101);
    if bodiless && audit.blocks() {
        if let Some(event) = record.event(Stage::ResponseComplete) {
            audit.store(event).await;
        }
        return response;
    }
    let limit = if record.level == Level::RequestResponse {
        MAX_BODY_BYTES
    } else if record.code >= 400 {
        STATUS_BYTES
    } else {
        0
    };
    let (parts, body) = response.into_parts();
    let sink = Arc::clone(&record.response_body);
    let recorder = Recorder::new(body, sink, limit, Some(record));
    Response::from_parts(parts, Body::new(recorder))
}

/// The audit's part in `auth::guard`: once the user is known, decides the request's level and
/// stores its RequestReceived event.
struct Opening {
    audit: Arc<Audit>,
    received: Arc<Received>,
    request_body: Arc<Mutex<Captured>>,
    /// What was decided, for the layer to go on with once the request is answered.
    opened: Arc<Mutex<Option<Opened>>>,
}

impl Drop for Opening {
    /// The request is gone without an answer the layer saw (its client left, or it panicked):
    /// its RequestReceived event is completed as upstream's deferred audit completes it, with
    /// a success `Connection closed early`.
    fn drop(&mut self) {
        let opened = self
            .opened
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(Opened::Audited(mut record)) = opened {
            record.code = 200;
            record.closed_early = true;
            if let Some(event) = record.event(Stage::ResponseComplete) {
                self.audit.detach(event);
            }
        }
    }
}

/// What the audit decided when the request authenticated.
enum Opened {
    /// The policy's level is `None`.
    Unaudited,
    Audited(Box<Record>),
}

impl std::fmt::Debug for Opening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opening")
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl Authenticated for Opening {
    fn authenticated(&self, findings: Findings) -> BoxFuture<'static, bool> {
        let decision = self
            .audit
            .policy
            .decide(findings.user.as_ref(), &self.received.attributes);
        let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
        if decision.level == Level::None {
            *opened = Some(Opened::Unaudited);
            return std::future::ready(true).boxed();
        }
        let record = Record::new(
            &self.audit,
            &self.received,
            findings,
            decision,
            Arc::clone(&self.request_body),
        );
        let event = record.event(Stage::RequestReceived);
        *opened = Some(Opened::Audited(Box::new(record)));
        let audit = Arc::clone(&self.audit);
        let decided = Arc::clone(&self.opened);
        async move {
            let stored = match event {
                Some(event) => audit.store(event).await,
                None => true,
            };
            if !stored {
                // Refused for want of its event: upstream's filter writes nothing more of it.
                *decided.lock().unwrap_or_else(PoisonError::into_inner) = Some(Opened::Unaudited);
            }
            stored
        }
        .boxed()
    }
}

/// Everything an event of one request needs.
struct Record {
    audit: Arc<Audit>,
    received: Arc<Received>,
    findings: Findings,
    level: Level,
    omit: Vec<Stage>,
    /// Whether bodies are written without `metadata.managedFields` (`omitManagedFields`).
    omit_managed_fields: bool,
    /// The answer's status code, once there is one.
    code: u16,
    /// The request went without an answer (upstream's faked `Connection closed early`).
    closed_early: bool,
    request_body: Arc<Mutex<Captured>>,
    response_body: Arc<Mutex<Captured>>,
}

impl Record {
    fn new(
        audit: &Arc<Audit>,
        received: &Arc<Received>,
        findings: Findings,
        decision: Decision,
        request_body: Arc<Mutex<Captured>>,
    ) -> Self {
        Self {
            audit: Arc::clone(audit),
            received: Arc::clone(received),
            findings,
            level: decision.level,
            omit: decision.omit_stages,
            omit_managed_fields: decision.omit_managed_fields,
            code: 0,
            closed_early: false,
            request_body,
            response_body: Arc::default(),
        }
    }

    /// The request's event at `stage`, unless the policy omits the stage.
    fn event(&self, stage: Stage) -> Option<Event> {
        if self.omit.contains(&stage) {
            return None;
        }
        let complete = stage == Stage::ResponseComplete;
        let body = |captured: &Arc<Mutex<Captured>>| {
            let mut value = captured
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .json()?;
            if self.omit_managed_fields {
                without_managed_fields(&mut value);
            }
            Some(value)
        };
        let response = complete.then(|| body(&self.response_body)).flatten();
        let response_status = (stage != Stage::RequestReceived).then(|| {
            let mut status = response_status(self.code, response.as_ref());
            if self.closed_early {
                status["status"] = Value::from("Success");
                status["message"] = Value::from("Connection closed early");
            }
            status
        });
        let findings = &self.findings;
        let mut annotations: std::collections::BTreeMap<String, String> =
            findings.annotations.iter().cloned().collect();
        if self.level >= Level::Request {
            annotations.extend(findings.request_level_annotations.iter().cloned());
        }
        if let Some((allowed, reason)) = &findings.decision {
            let decision = if *allowed { "allow" } else { "forbid" };
            annotations.insert(
                "authorization.k8s.io/decision".to_owned(),
                decision.to_owned(),
            );
            annotations.insert("authorization.k8s.io/reason".to_owned(), reason.clone());
        }
        let request_object = body(&self.request_body);
        let mut object_ref = ObjectRef::of(&self.received.attributes);
        if let (Some(object_ref), Some(object)) = (object_ref.as_mut(), request_object.as_ref()) {
            // A create names its object in the body, as upstream's `LogRequestObject` reads it.
            object_ref.fill_from(object);
        }
        Some(Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: self.level,
            audit_id: self.received.audit_id.clone(),
            stage,
            request_uri: self.received.uri.clone(),
            verb: self.received.attributes.verb.clone(),
            user: findings.user.clone().unwrap_or_default(),
            impersonated_user: findings.impersonated.clone(),
            source_ips: self.received.source_ips.clone(),
            user_agent: self.received.user_agent.clone(),
            object_ref,
            response_status,
            request_object: (self.level >= Level::Request && complete)
                .then_some(request_object)
                .flatten(),
            response_object: (self.level == Level::RequestResponse)
                .then_some(response)
                .flatten(),
            request_received_timestamp: self.received.at.clone(),
            stage_timestamp: if stage == Stage::RequestReceived {
                self.received.at.clone()
            } else {
                micro_time()
            },
            annotations,
        })
    }
}

/// Drops `metadata.managedFields` from an object, or from each item of a list.
fn without_managed_fields(value: &mut Value) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(Value::Array(items)) = value.get_mut("items") {
        items.iter_mut().for_each(without_managed_fields);
    }
}

/// The first bytes of a body, up to a limit, as it streams by.
#[derive(Debug, Default)]
struct Captured {
    bytes: Vec<u8>,
    /// More came than the limit allowed: the copy is not the body.
    cut: bool,
    /// The body's `Content-Type`.
    content_type: Option<HeaderValue>,
}

impl Captured {
    fn typed(content_type: Option<&HeaderValue>) -> Self {
        Self {
            content_type: content_type.cloned(),
            ..Self::default()
        }
    }

    /// The body as JSON, if it was whole: JSON and the patch types as they are, YAML,
    /// protobuf and CBOR objects read as the handlers read them (events are JSON whatever
    /// the client spoke, as upstream's are).
    fn json(&self) -> Option<Value> {
        if self.cut || self.bytes.is_empty() {
            return None;
        }
        let essence = self
            .content_type
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .unwrap_or("application/json")
            .trim()
            .to_ascii_lowercase();
        if essence.ends_with("json") {
            return serde_json::from_slice(&self.bytes).ok();
        }
        if essence.ends_with("yaml") {
            return serde_yaml_ng::from_slice(&self.bytes).ok();
        }
        let mut headers = axum::http::HeaderMap::new();
        if let Some(content_type) = &self.content_type {
            headers.insert(header::CONTENT_TYPE, content_type.clone());
        }
        negotiate::decode_body(&headers, &self.bytes, true).ok()
    }
}

/// A body passed through unchanged while its first `limit` bytes are copied into `copy`;
/// holds `record` until the body is done, then stores the ResponseComplete event, or hands it
/// on when the client goes first. When a backend blocks, the body's last frame (or its end)
/// is held back until the event is stored, as upstream's handler has not returned, and its
/// buffered answer not gone out, until then.
struct Recorder {
    body: Body,
    copy: Arc<Mutex<Captured>>,
    limit: usize,
    record: Option<Record>,
    /// The ResponseComplete event being stored by a blocking backend, and its audit.
    completing: Option<(Arc<Audit>, BoxFuture<'static, bool>)>,
    /// The last frame, held while `completing`.
    held: Option<Frame<Bytes>>,
}

impl Recorder {
    fn new(body: Body, copy: Arc<Mutex<Captured>>, limit: usize, record: Option<Record>) -> Self {
        Self {
            body,
            copy,
            limit,
            record,
            completing: None,
            held: None,
        }
    }
}

impl Drop for Recorder {
    /// The client has gone before the body was done: the request is complete all the same,
    /// and an event being stored is stored still.
    fn drop(&mut self) {
        if let Some((audit, storing)) = self.completing.take() {
            audit.spawn_detached(storing);
        }
        if let Some(record) = self.record.take()
            && let Some(event) = record.event(Stage::ResponseComplete)
        {
            record.audit.detach(event);
        }
    }
}

impl HttpBody for Recorder {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        if let Some((_, storing)) = self.completing.as_mut() {
            if storing.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.completing = None;
            return Poll::Ready(self.held.take().map(Ok));
        }
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
            && self.limit > 0
        {
            let mut copy = self.copy.lock().unwrap_or_else(PoisonError::into_inner);
            if copy.bytes.len() + data.len() <= self.limit {
                copy.bytes.extend_from_slice(data);
            } else {
                copy.cut = true;
            }
        }
        let done = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => self.body.is_end_stream(),
            _ => false,
        };
        if done
            && let Some(record) = self.record.take()
            && let Some(event) = record.event(Stage::ResponseComplete)
        {
            // Done: the event is stored now, not whenever the connection lets go of the body.
            if record.audit.blocks() {
                let mut storing = Arc::clone(&record.audit).process(event).boxed();
                if storing.as_mut().poll(cx).is_pending() {
                    if let Poll::Ready(Some(Ok(frame))) = polled {
                        self.held = Some(frame);
                    }
                    self.completing = Some((Arc::clone(&record.audit), storing));
                    return Poll::Pending;
                }
            } else {
                record.audit.offer(event);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        // Not while an event waits to be stored: the end is where it is stored.
        self.record.is_none()
            && self.completing.is_none()
            && self.held.is_none()
            && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores of events of requests that are gone hold a place each until they finish; past
    /// [`MAX_DETACHED`] the event is dropped rather than another task spawned.
    #[tokio::test]
    async fn stores_for_gone_requests_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy.yaml");
        std::fs::write(
            &policy,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
        )
        .unwrap();
        let audit = Audit::of_policy(&policy).unwrap();
        let (release, released) = tokio::sync::watch::channel(false);
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let pending = || {
            let mut released = released.clone();
            let started = Arc::clone(&started);
            async move {
                started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                released.wait_for(|r| *r).await.is_ok()
            }
            .boxed()
        };
        for _ in 0..MAX_DETACHED + 10 {
            audit.spawn_detached(pending());
        }
        assert_eq!(audit.detached.available_permits(), 0);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(
            started.load(std::sync::atomic::Ordering::SeqCst),
            MAX_DETACHED
        );
        release.send(true).unwrap();
        // Each store gives its place back once it is done.
        for _ in 0..100 {
            if audit.detached.available_permits() == MAX_DETACHED {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("{} places free", audit.detached.available_permits());
    }
}
