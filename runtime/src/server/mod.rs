//! The API server: registered kinds served over HTTP the way kube-apiserver serves them.
//!
//! [`Server::builder`] assembles a server from a [`Registry`] and a [`Storage`] engine and either
//! starts it on an address ([`ServerBuilder::start`]), serves a bound listener until a shutdown
//! future resolves ([`ServerBuilder::serve`]), or hands out the router for in-process tests
//! ([`ServerBuilder::into_router`]).
//!
//! The modules are grouped by role, each folder's doc saying what it owns and may import:
//! `http` (connections, the request layers, bodies, errors, request options), `objects` (what
//! handlers share about objects), `handlers` (one module per operation), `admission` (the
//! default admission plugins a create or update runs), `background` (the garbage collector,
//! the CRD task, and the controllers of the `kubernetes` Service and the `default`
//! ServiceAccounts), `describe` (discovery, OpenAPI, health, version,
//! deprecation warnings, `/metrics`) and `state` (what the server remembers). The handlers and
//! the descriptive endpoints meet only through `state::State` and axum routers: the
//! descriptive routes are matched first and every other path falls through to the resource
//! dispatcher (`dispatch`), which decides each request's operation once and runs its handler.
//! In front of both: `connections`
//! (accepting and bounding connections, over TLS with `tls` when [`ServerBuilder::tls`] is set)
//! and the layers every request passes, outermost first:
//! `panics`, `httplog` (the request log), `origin` (who may talk to a server without
//! authentication), `auth::guard` (authentication, impersonation and authorization, in
//! upstream's order), `inflight` (request seats). `shutdown` runs the stop sequence of a served
//! listener.

mod admission;
mod audit;
mod auth;
mod background;
mod describe;
mod dispatch;
mod handlers;
mod http;
mod objects;
mod state;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, Uri};
use axum::response::Response;
use serde::de::DeserializeOwned;
use tokio::sync::watch as signal;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate};

use crate::storage::{EncryptedStorage, EncryptionConfig, Storage};
use crate::{KubeVersion, Registry, ResourceInfo};

pub use audit::{Audit, AuditError, LogRotation, Mode as AuditMode, WebhookOptions};
pub use auth::{
    Authentication, AuthenticationConfigError, Authorization, AuthorizationMode, DEFAULT_ISSUER,
    KeyError, ServiceAccountTokens, SigningKey, TokenFileError, VerificationKey,
};
use background::{
    cohabiting, crds, gc, kubernetes_service, policy_status, rbac, resource_quota, root_ca,
    service_accounts, token_secrets,
};
pub use describe::kubeconfig::{
    KubeconfigTls, kubeconfig, kubeconfig_tls, write_atomically, write_kubeconfig,
    write_kubeconfig_tls,
};
use describe::{discovery, health, index, issuer_discovery, metrics_endpoint, openapi, version};
use handlers::namespace_lifecycle;
pub use http::advertise::default_advertise_address;
pub use http::kubelet::{
    DEFAULT_KUBELET_PORT, DEFAULT_PREFERRED_ADDRESS_TYPES, KubeletClient, KubeletClientBuilder,
    KubeletClientError,
};
pub use http::tls::{Handshake, SniFiles, SniPem, Tls, TlsError, TlsPem};
use http::{connections, error, httplog, inflight, origin, panics, path, reencode, shutdown};
pub use state::admission_plugins::AdmissionPlugins;
pub use state::enablement::{ApiEnablement, RuntimeConfig, RuntimeConfigError};
pub use state::feature_gates::{FeatureGateError, FeatureGates, Features};
pub use state::service_ranges::{NodePortRange, ServiceCidr};
use state::{
    builtin, keys, metrics, mirrors, namespaces, observed, service_allocations, watch_cache,
};

use error::{ApiError, Subject};
use path::Target;
use state::{ServerState, State};

/// The Kubernetes release a server presents itself as when none is configured.
/// The newest release the project carries built-ins for, as in the `kapi` binary.
pub(crate) const DEFAULT_KUBE_VERSION: KubeVersion = KubeVersion::new(1, 36);

/// Tunables of request handling, shared by every handler.
#[derive(Debug, Clone)]
pub(crate) struct Tunables {
    /// How long a read at a resourceVersion the store has not reached waits before 504.
    pub(crate) rv_wait: Duration,
    /// How often a watch that asked for bookmarks gets one.
    pub(crate) bookmark_interval: Duration,
    /// How long a watch without `timeoutSeconds` lasts.
    pub(crate) watch_timeout: Duration,
    /// Ring entries one watcher may fall behind before its stream is ended.
    pub(crate) watch_queue: usize,
    /// How long a request body may take to arrive.
    pub(crate) body_timeout: Duration,
    /// Flips to `true` when the server shuts down: watches and background tasks end.
    pub(crate) stop: signal::Receiver<bool>,
}

/// Why a server could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// No storage engine was given to the builder.
    #[error("no storage engine configured: call ServerBuilder::storage")]
    NoStorage,
    /// The listen address could not be bound or the server failed while serving.
    #[error("server I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The store failed while the server prepared its initial state.
    #[error("storage error during startup: {0}")]
    Storage(String),
}

/// Entry point: `Server::builder()`.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// A builder with no kinds, no storage, Kubernetes 1.36 and `127.0.0.1:0`.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            registry: Registry::new(),
            storage: None,
            encryption: None,
            kube_version: DEFAULT_KUBE_VERSION,
            enablement: ApiEnablement::all(),
            features: Features::defaults(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            advertise: None,
            authentication: Authentication::none(),
            authorization: Authorization::default(),
            audit: None,
            service_accounts: None,
            root_ca: None,
            service_cidr: ServiceCidr::default(),
            node_ports: NodePortRange::default(),
            allow_privileged: true,
            admission_plugins: AdmissionPlugins::default(),
            kubelet: KubeletClient::default(),
            rv_wait: Duration::from_secs(3),
            bookmark_interval: Duration::from_secs(60),
            watch_timeout: Duration::from_secs(30 * 60),
            watch_queue: 1024,
            body_timeout: BODY_TIMEOUT,
            timeouts: connections::Timeouts::default(),
            tls: None,
            shutdown: shutdown::Plan::default(),
            seats: (
                inflight::READ_ONLY_SEATS,
                inflight::MUTATING_SEATS,
                inflight::QUEUE_WAIT,
            ),
        }
    }
}

/// Configures and starts a server.
#[derive(Debug)]
pub struct ServerBuilder {
    registry: Registry,
    storage: Option<Arc<dyn Storage>>,
    encryption: Option<EncryptionConfig>,
    kube_version: KubeVersion,
    enablement: ApiEnablement,
    features: Features,
    listen: SocketAddr,
    /// Where the cluster reaches the server; `None`: worked out from the listen address.
    advertise: Option<IpAddr>,
    authentication: Authentication,
    authorization: Authorization,
    audit: Option<Arc<Audit>>,
    service_accounts: Option<ServiceAccountTokens>,
    root_ca: Option<String>,
    service_cidr: ServiceCidr,
    node_ports: NodePortRange,
    allow_privileged: bool,
    admission_plugins: AdmissionPlugins,
    kubelet: KubeletClient,
    rv_wait: Duration,
    bookmark_interval: Duration,
    watch_timeout: Duration,
    watch_queue: usize,
    body_timeout: Duration,
    timeouts: connections::Timeouts,
    tls: Option<Tls>,
    shutdown: shutdown::Plan,
    /// Read-only and mutating seats, and how long a request waits for one.
    seats: (usize, usize, Duration),
}

/// Stops a router's background work (watches, namespace cleanup, the garbage collector) when
/// dropped.
#[derive(Debug)]
pub struct Background {
    stop: signal::Sender<bool>,
}

impl Background {
    /// Signals every watch and background task to end.
    pub fn stop(&self) {
        // Receivers may all be gone already; nothing is left to stop then.
        let _ = self.stop.send(true);
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A server running on a socket; stopping it ends every watch and background task.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    /// The served router, for requests made in-process ([`RunningServer::call`]).
    router: Router,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), ServerError>>,
}

impl RunningServer {
    /// The bound address (with the real port when the builder asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers `request` in-process, as if it had come over the socket: same state, same
    /// handlers, no connection. The URI needs only a path and query. The caller is the
    /// process that runs the server: its requests are a cluster admin's, whatever
    /// authentication the server asks of others.
    pub async fn call(&self, mut request: axum::http::Request<Body>) -> Response {
        use tower::ServiceExt as _;
        request.extensions_mut().insert(auth::InProcess);
        match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }

    /// Shuts down as upstream does: `/readyz` fails, the server serves on for the shutdown
    /// delay, then stops accepting connections, ends watches, and waits for open requests to
    /// finish (for at most the shutdown timeout).
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            Err(join) => Err(ServerError::Io(std::io::Error::other(join.to_string()))),
        }
    }
}

impl ServerBuilder {
    /// The kinds to serve. The core `v1` Namespace is added unless the registry has its own.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// The address the cluster reaches the server by (kube-apiserver's `--advertise-address`),
    /// where the `kubernetes` Service's endpoints point. Without it: the listen address, or
    /// for a wildcard the host's default-route address ([`default_advertise_address`]).
    pub fn advertise_address(mut self, ip: IpAddr) -> Self {
        self.advertise = Some(ip).filter(|ip| !ip.is_unspecified());
        self
    }

    /// The storage engine.
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = Some(storage);
        self
    }

    /// Encryption at rest: the values of the resources `config` lists are encrypted before
    /// they reach the storage engine and decrypted when read back, as kube-apiserver's
    /// `--encryption-provider-config` (see [`crate::storage::encryption`]). Without it (or
    /// given `None`) values are stored as they are, and an encrypted one is refused as
    /// upstream refuses it.
    pub fn encryption(mut self, config: impl Into<Option<EncryptionConfig>>) -> Self {
        self.encryption = config.into();
        self
    }

    /// The Kubernetes release to present as, and to compute deprecations against. The API
    /// features kapi implements follow the release's defaults (`sendInitialEvents`, field
    /// validation, OpenAPI v3, aggregated discovery), as `/version` does.
    pub fn kube_version(mut self, version: KubeVersion) -> Self {
        self.kube_version = version;
        self
    }

    /// Which group-versions and resources to serve (default: every registered one). Build it
    /// with [`ApiEnablement::for_release`] to serve what kube-apiserver of the release serves
    /// by default, changed by a `--runtime-config`.
    pub fn api_enablement(mut self, enablement: ApiEnablement) -> Self {
        self.enablement = enablement;
        self
    }

    /// The API features on (default: the release's defaults). Build it with
    /// [`Features::for_release`] from a `--feature-gates` value ([`FeatureGates`]), e.g.
    /// `CBORServingAndStorage=true` to serve and read CBOR in 1.34 and 1.36.
    pub fn features(mut self, features: Features) -> Self {
        self.features = features;
        self
    }

    /// The address [`ServerBuilder::start`] binds (port 0 picks a free port).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// How requests are authenticated (default: not at all, every request is served as
    /// `system:unsecured` in `system:masters`; only for servers reached by their own programs).
    pub fn authentication(mut self, authentication: Authentication) -> Self {
        self.authentication = authentication;
        self
    }

    /// Issues service-account tokens (`serviceaccounts/<name>/token`, `kubectl create token`)
    /// and, when requests are authenticated, authenticates them; serves the issuer's discovery
    /// documents (`/.well-known/openid-configuration`, `/openid/v1/jwks`). Without it, token
    /// requests fail as on a kube-apiserver without a signing key.
    pub fn service_account_tokens(mut self, tokens: ServiceAccountTokens) -> Self {
        self.service_accounts = Some(tokens);
        self
    }

    /// The CA bundle (PEM) clients in the cluster trust the server with: published in every
    /// namespace as the `kube-root-ca.crt` ConfigMap's `ca.crt`, as kube-controller-manager's
    /// root CA publisher does. Without it no such ConfigMap is made.
    pub fn root_ca(mut self, pem: impl Into<String>) -> Self {
        self.root_ca = Some(pem.into());
        self
    }

    /// How requests are authorized (default: RBAC, with `system:masters` allowed everything).
    pub fn authorization(mut self, authorization: Authorization) -> Self {
        self.authorization = authorization;
        self
    }

    /// Audits requests as the policy of `audit` says (default: no audit log; every answer
    /// still carries an `Audit-Id`).
    pub fn audit(mut self, audit: Audit) -> Self {
        self.audit = Some(Arc::new(audit));
        self
    }

    /// The range Services' cluster IPs are allocated from: kube-apiserver's
    /// `--service-cluster-ip-range` (default `10.0.0.0/24`). Its first address is the
    /// `default/kubernetes` Service's.
    pub fn service_cluster_ip_range(mut self, cidr: ServiceCidr) -> Self {
        self.service_cidr = cidr;
        self
    }

    /// The range node ports are allocated from: kube-apiserver's `--service-node-port-range`
    /// (default `30000-32767`).
    pub fn service_node_port_range(mut self, ports: NodePortRange) -> Self {
        self.node_ports = ports;
        self
    }

    /// Which admission plugins run beyond those kapi always runs: kube-apiserver's
    /// `--enable-admission-plugins` and `--disable-admission-plugins`
    /// ([`AdmissionPlugins::from_flags`]). By default upstream's default set, without
    /// NodeRestriction.
    pub fn admission_plugins(mut self, plugins: AdmissionPlugins) -> Self {
        self.admission_plugins = plugins;
        self
    }

    /// Whether containers may be privileged: kube-apiserver's `--allow-privileged`. Allowed
    /// by default, as kubeadm, kind and minikube start kube-apiserver (whose own default is
    /// false); refused, a container's `securityContext.privileged: true` is a 422
    /// `Forbidden: disallowed by cluster policy`.
    pub fn allow_privileged(mut self, allowed: bool) -> Self {
        self.allow_privileged = allowed;
        self
    }

    /// How the server reaches kubelets for a pod's `log`, `exec`, `attach` and `portforward`
    /// and a node's `proxy` (default: HTTPS without a client certificate, the kubelet's
    /// certificate not verified, as kube-apiserver without `--kubelet-*` flags).
    pub fn kubelet_client(mut self, client: KubeletClient) -> Self {
        self.kubelet = client;
        self
    }

    /// How long a read at a too-new resourceVersion waits before 504 (default 3 s).
    pub fn resource_version_wait(mut self, wait: Duration) -> Self {
        self.rv_wait = wait;
        self
    }

    /// How often watches that allow bookmarks get one (default 60 s).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// How long a watch without `timeoutSeconds` lasts (default 30 min).
    pub fn watch_timeout(mut self, timeout: Duration) -> Self {
        self.watch_timeout = timeout;
        self
    }

    /// How many changes a watcher may fall behind before its stream is ended, without an error
    /// event, as upstream's cacher ends a watcher that does not keep up (default 1024).
    pub fn watch_queue(mut self, events: usize) -> Self {
        self.watch_queue = events.max(1);
        self
    }

    /// How long a request body may take to arrive before the request fails with 504 (default
    /// 60 s, upstream's request timeout).
    pub fn request_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long a connection may take to send a request's headers (default 32 s; over
    /// HTTP/1.1 also how long a kept-alive connection may wait for its next request), and how
    /// long any connection may go without a request in flight (default 90 s): upstream's
    /// `ReadHeaderTimeout` and `IdleTimeout`. Applies to [`ServerBuilder::start`] and
    /// [`ServerBuilder::serve`].
    pub fn connection_timeouts(mut self, header_read: Duration, idle: Duration) -> Self {
        self.timeouts = connections::Timeouts { header_read, idle };
        self
    }

    /// Serve over TLS with this certificate, key and client CAs (default: plain HTTP).
    /// Clients negotiate HTTP/2 or HTTP/1.1 by ALPN; a client certificate is asked for when
    /// client CAs are given, never required, and its chain is checked against them for
    /// authentication, as kube-apiserver does. Applies to [`ServerBuilder::start`],
    /// [`ServerBuilder::start_on`] and [`ServerBuilder::serve`].
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// How many read-only and mutating requests are worked on at once (default 400 and 200,
    /// upstream's), and how long a request waits for a seat before it is answered 429
    /// (default 1 s). Watches and health probes take no seat.
    pub fn max_requests_in_flight(
        mut self,
        read_only: usize,
        mutating: usize,
        wait: Duration,
    ) -> Self {
        self.seats = (read_only, mutating, wait);
        self
    }

    /// How long the server goes on serving once asked to stop, with `/readyz` already failing
    /// so load balancers take it out of rotation first: upstream's `--shutdown-delay-duration`
    /// (default 0). Applies to [`ServerBuilder::start`] and [`ServerBuilder::serve`].
    pub fn shutdown_delay(mut self, delay: Duration) -> Self {
        self.shutdown.delay = delay;
        self
    }

    /// How long requests in flight may take to finish once the listener has closed before
    /// their connections are closed (default 60 s, upstream's `--request-timeout`, which bounds
    /// every non-long-running request kube-apiserver drains at shutdown).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown.drain = timeout;
        self
    }

    /// Builds the router (for in-process use with `tower::ServiceExt::oneshot`) and the guard
    /// whose drop stops its background work. Creates the system namespaces if missing.
    pub async fn into_router(self) -> Result<(Router, Background), ServerError> {
        let endpoint = Some(self.listen).filter(|addr| addr.port() != 0);
        let (router, background, _) = self.build(endpoint).await?;
        Ok((router, background))
    }

    /// The router, its background guard, and the state the shutdown sequence marks; `listening`
    /// is the address the server listens on: the `kubernetes` Service's endpoints point at its
    /// port on the advertised address.
    async fn build(
        self,
        listening: Option<SocketAddr>,
    ) -> Result<(Router, Background, State), ServerError> {
        let endpoint = listening.map(|addr| {
            let ip = self
                .advertise
                .unwrap_or_else(|| default_advertise_address(addr.ip()));
            SocketAddr::new(ip, addr.port())
        });
        // Without a configuration too: an encrypted value is then refused with upstream's
        // message rather than failing to decode.
        let storage: Arc<dyn Storage> = Arc::new(EncryptedStorage::new(
            self.storage.ok_or(ServerError::NoStorage)?,
            self.encryption.unwrap_or_default(),
        ));
        let mut registry = self.registry;
        if registry.get("", "v1", "namespaces").is_none() {
            registry.register::<builtin::Namespace>();
        }
        if registry
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .is_none()
        {
            registry.register::<crate::crd::CustomResourceDefinition>();
        }
        let base = Arc::new(admission::policy::validation::prepare(
            crds::prepare(registry),
            self.kube_version,
        ));
        let metrics = Arc::new(metrics::Metrics::default());
        // The Node authorizer's graph is kept only for a chain that asks it.
        let mirrors = Arc::new(if self.authorization.has_node() {
            mirrors::Mirrors::new(state::node_graph::MIRRORED, state::node_graph::MOST)
        } else {
            mirrors::Mirrors::default()
        });
        let authorization = if self.authorization.has_node() {
            let graph: Arc<dyn auth::node::NodeGraph> = mirrors.clone();
            let selectors = self
                .features
                .state(
                    self.kube_version,
                    state::release::Feature::AuthorizeNodeWithSelectors,
                )
                .is_on();
            let rules = auth::bootstrap::node_rules(self.kube_version);
            self.authorization
                .with_node(auth::node::NodeAuthorizer::new(graph, rules, selectors))
        } else {
            self.authorization
        };
        let state: State = Arc::new(ServerState {
            catalog: std::sync::RwLock::new(Arc::clone(&base)),
            storage: Arc::new(observed::Observed::new(
                Arc::new(metrics::Measured::new(storage, Arc::clone(&metrics))),
                service_allocations::ServiceAllocations::new(self.service_cidr, self.node_ports),
                mirrors,
            )),
            kube_version: self.kube_version,
            enablement: self.enablement,
            features: self.features,
            allow_privileged: self.allow_privileged,
            admission_plugins: self.admission_plugins,
            kubelet: self.kubelet.clone(),
            watch_cache: watch_cache::WatchCache::default(),
            metrics,
            access: Arc::new(auth::Access::new(
                self.authentication,
                authorization,
                self.service_accounts
                    .map(|tokens| tokens.serving(self.kube_version)),
            )),
            shutting_down: std::sync::atomic::AtomicBool::new(false),
        });
        let startup = |e: background::TaskError| ServerError::Storage(e.to_string());
        // Before anything reads them, objects are where this kapi looks for them.
        cohabiting::move_all(&state).await.map_err(startup)?;
        create_system_namespaces(&state).await?;
        // What the stored Services hold is known before the first write, and what a cluster
        // holds from the start is there before the first request.
        let services_read = service_allocations::load(&state)
            .await
            .map_err(|e| ServerError::Storage(e.to_string()))?;
        kubernetes_service::reconcile(&state, endpoint, kubernetes_service::Pass::Start)
            .await
            .map_err(startup)?;
        let accounts_read = service_accounts::ensure_all(&state)
            .await
            .map_err(startup)?;
        let root_ca: Option<Arc<str>> = self.root_ca.map(Arc::from);
        let root_ca_read = match &root_ca {
            Some(ca) => Some(root_ca::ensure_all(&state, ca).await.map_err(startup)?),
            None => None,
        };
        let token_signer = state
            .access
            .service_accounts
            .as_ref()
            .filter(|_| token_secrets::runs(&state))
            .map(|accounts| token_secrets::Tokens {
                key: accounts.signing_key.clone(),
                ca: root_ca.clone(),
            });
        let quotas_read = resource_quota::sync_all(&state).await.map_err(startup)?;
        // Requests are authorized against the stored policy from the first one on.
        rbac::bootstrap(&state).await.map_err(startup)?;
        let policy_read = rbac::refresh(&state).await.map_err(startup)?;
        let (stop_tx, stop_rx) = signal::channel(false);
        // Kinds of the stored CRDs are served from the first request on.
        let crds_read = crds::refresh(&state, &base)
            .await
            .map_err(|e| ServerError::Storage(e.to_string()))?;
        crds::spawn(state.clone(), base, crds_read, stop_rx.clone());
        namespaces::spawn(state.clone(), stop_rx.clone());
        mirrors::spawn(&state, &stop_rx);
        if state.access.authorization.has_node() {
            wait_for_node_graph(&state).await;
        }
        gc::spawn(state.clone(), stop_rx.clone());
        service_allocations::spawn(state.clone(), services_read, stop_rx.clone());
        kubernetes_service::spawn(state.clone(), endpoint, stop_rx.clone());
        policy_status::spawn(state.clone(), stop_rx.clone());
        service_accounts::spawn(state.clone(), accounts_read, stop_rx.clone());
        if let (Some(ca), Some(read)) = (root_ca, root_ca_read) {
            root_ca::spawn(state.clone(), ca, read, stop_rx.clone());
        }
        if let Some(tokens) = token_signer {
            token_secrets::spawn(state.clone(), tokens, stop_rx.clone());
        }
        resource_quota::spawn(state.clone(), quotas_read, stop_rx.clone());
        rbac::spawn(state.clone(), policy_read, stop_rx.clone());
        let tunables = Arc::new(Tunables {
            rv_wait: self.rv_wait,
            bookmark_interval: self.bookmark_interval,
            watch_timeout: self.watch_timeout,
            watch_queue: self.watch_queue,
            body_timeout: self.body_timeout,
            stop: stop_rx,
        });
        let (read_only, mutating, wait) = self.seats;
        let seats = inflight::Seats::new(read_only, mutating, wait);
        let fallback = move |AxumState(state): AxumState<State>, request: Request| {
            let tunables = tunables.clone();
            async move { dispatch::dispatch(state, tunables, request).await }
        };
        let shared = state.clone();
        let access = Arc::clone(&state.access);
        let guard_storage: Arc<dyn Storage> = state.storage.clone();
        // Without authentication, only the machine's programs may reach the server.
        let open = !state.access.authentication.enabled();
        let audit = self.audit.clone();
        let cbor = shared.cbor();
        let router = Router::new()
            .merge(index::routes())
            .merge(discovery::routes())
            .merge(openapi::routes())
            .merge(health::routes())
            .merge(version::routes())
            .merge(issuer_discovery::routes())
            .merge(metrics_endpoint::routes())
            .fallback(fallback)
            .with_state(state)
            .layer(axum::middleware::from_fn(move |request, next| {
                reencode::layer(cbor, request, next)
            }))
            .layer(
                CompressionLayer::new()
                    .compress_when(DefaultPredicate::new().and(NotStreamed).and(LargeEnough)),
            )
            .layer(axum::middleware::from_fn(move |request, next| {
                seats.clone().admit(request, next)
            }))
            .layer(axum::middleware::from_fn(move |request, next| {
                auth::guard(
                    Arc::clone(&access),
                    Arc::clone(&guard_storage),
                    cbor,
                    request,
                    next,
                )
            }))
            .layer(axum::middleware::from_fn(move |request, next| {
                origin::guard(open, request, next)
            }))
            .layer(axum::middleware::from_fn(move |request, next| {
                audit::layer(audit.clone(), request, next)
            }))
            .layer(axum::middleware::from_fn(httplog::log))
            .layer(panics::layer());
        Ok((router, Background { stop: stop_tx }, shared))
    }

    /// Serves on `listener` until `shutdown` resolves, then ends watches and drains requests.
    /// Connections speak HTTP/1.1 or HTTP/2: over TLS as ALPN negotiates, over plain HTTP
    /// HTTP/2 when the client opens with its preface (prior knowledge); many watches then share
    /// one connection.
    /// Slow, idle and oversized connections are cut as upstream cuts them (`connections`).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let timeouts = self.timeouts;
        let plan = self.shutdown;
        let tls = self.tls.clone();
        let addr = listener.local_addr()?;
        let (router, background, state) = self.build(Some(addr)).await?;
        let graceful = plan.run(state, background, shutdown);
        connections::serve(listener, router, tls, timeouts, plan.drain, graceful).await?;
        Ok(())
    }

    /// Binds the listen address and serves in a background task; returns once ready.
    pub async fn start(self) -> Result<RunningServer, ServerError> {
        let listener = tokio::net::TcpListener::bind(self.listen).await?;
        self.start_on(listener).await
    }

    /// Serves a listener bound by the caller in a background task; returns once ready. Nothing
    /// is answered before the server is built, so a caller can bind, publish the address
    /// (say, in a kubeconfig), and only then let requests in. The listen address set on the
    /// builder is not used.
    pub async fn start_on(
        self,
        listener: tokio::net::TcpListener,
    ) -> Result<RunningServer, ServerError> {
        let addr = listener.local_addr()?;
        let timeouts = self.timeouts;
        let plan = self.shutdown;
        let tls = self.tls.clone();
        let (router, background, state) = self.build(Some(addr)).await?;
        let served = router.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let asked = async move {
                let _ = rx.await;
            };
            let graceful = plan.run(state, background, asked);
            connections::serve(listener, served, tls, timeouts, plan.drain, graceful).await?;
            Ok(())
        });
        Ok(RunningServer {
            addr,
            router,
            shutdown: Some(tx),
            task,
        })
    }
}

/// Marks a streamed response (a watch) that must not be gzip-buffered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streamed;

/// Compression predicate that skips watches: a gzip encoder holds events back until its
/// buffer fills, which would stall a quiet watch.
#[derive(Debug, Clone, Copy)]
struct NotStreamed;

impl Predicate for NotStreamed {
    fn should_compress<B>(&self, response: &axum::http::Response<B>) -> bool
    where
        B: axum::body::HttpBody,
    {
        response.extensions().get::<Streamed>().is_none()
    }
}

/// Upstream gzips an answer only from 128 KiB on (`defaultGzipThresholdBytes` in
/// k8s.io/apiserver's `endpoints/handlers/responsewriters`): smaller ones cost more to compress
/// than they save. An answer whose size is not known ahead (a list written as it is read) is
/// compressed.
#[derive(Debug, Clone, Copy)]
struct LargeEnough;

/// [`LargeEnough`]'s threshold.
const GZIP_THRESHOLD: u64 = 128 * 1024;

impl Predicate for LargeEnough {
    fn should_compress<B>(&self, response: &axum::http::Response<B>) -> bool
    where
        B: axum::body::HttpBody,
    {
        let declared = || {
            response
                .headers()
                .get(axum::http::header::CONTENT_LENGTH)?
                .to_str()
                .ok()?
                .parse::<u64>()
                .ok()
        };
        match response.body().size_hint().exact().or_else(declared) {
            Some(size) => size >= GZIP_THRESHOLD,
            None => true,
        }
    }
}

/// How long a start waits for the Node authorizer's graph to list what the store holds.
const NODE_GRAPH_WAIT: Duration = Duration::from_secs(30);

/// Waits until the Node authorizer's graph has listed the store, so that a kubelet's first
/// requests find their pods, as upstream's authorizer waits for its informers; after
/// [`NODE_GRAPH_WAIT`] the server starts anyway and the graph catches up.
async fn wait_for_node_graph(state: &State) {
    let mirrors = state.storage.mirrors();
    let waited = tokio::time::timeout(NODE_GRAPH_WAIT, async {
        while !mirrors.projections_in_step() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    if waited.is_err() {
        tracing::warn!("the Node authorizer's graph has not listed the store yet; starting anyway");
    }
}

/// Creates `default` and the other system namespaces when missing.
async fn create_system_namespaces(state: &ServerState) -> Result<(), ServerError> {
    for name in builtin::SYSTEM_NAMESPACES {
        let key = format!("/registry/core/namespaces/{name}");
        let exists = state
            .storage
            .get(&key, None)
            .await
            .map_err(|e| ServerError::Storage(e.to_string()))?;
        if exists.is_some() {
            continue;
        }
        let object = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "uid": uuid::Uuid::new_v4().to_string(),
                "creationTimestamp": crate::time::Time::now(),
                "labels": {"kubernetes.io/metadata.name": name},
            },
            "spec": {"finalizers": [builtin::NAMESPACE_FINALIZER]},
            "status": {"phase": "Active"},
        });
        let bytes = serde_json::to_vec(&object).map_err(|e| ServerError::Storage(e.to_string()))?;
        match state.storage.create(&key, bytes.into()).await {
            Ok(_) | Err(crate::storage::CreateError::AlreadyExists { .. }) => {}
            Err(e) => return Err(ServerError::Storage(e.to_string())),
        }
    }
    Ok(())
}

/// One resource request being served.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) state: State,
    /// The catalog the request was resolved against, kept for the whole request even if a
    /// CRD change swaps the server's catalog meanwhile.
    pub(crate) registry: Arc<Registry>,
    pub(crate) tun: Arc<Tunables>,
    pub(crate) target: Target,
    pub(crate) headers: HeaderMap,
    pub(crate) uri: Uri,
    /// The user the request is served as.
    pub(crate) user: Arc<auth::user::User>,
    /// Warnings found deep in a write (admission webhooks' answers), sent with the answer's
    /// `Warning` headers. A plain mutex: held only to push or drain, never across an await.
    pub(crate) warnings: Arc<std::sync::Mutex<Vec<String>>>,
    /// Where the audit layer collects the request's annotations (admission policies' audit
    /// annotations), when it audits the request.
    pub(crate) audit: Option<auth::FindingsSlot>,
}

impl Call {
    /// The kind served.
    pub(crate) fn info(&self) -> &ResourceInfo {
        &self.target.kind.info
    }

    /// Adds an annotation to the request's audit events, as upstream's
    /// `Attributes.AddAnnotation`; a key already set keeps its first value.
    pub(crate) fn annotate(&self, key: String, value: String) {
        self.annotate_at(key, value, false);
    }

    /// [`Call::annotate`] for the events of level `Request` and above only (upstream's
    /// `AddAnnotationWithLevel(..., LevelRequest)`).
    pub(crate) fn annotate_request_level(&self, key: String, value: String) {
        self.annotate_at(key, value, true);
    }

    fn annotate_at(&self, key: String, value: String, request_level: bool) {
        if let Some(slot) = &self.audit {
            let mut findings = slot
                .findings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let taken = findings
                .annotations
                .iter()
                .chain(&findings.request_level_annotations)
                .any(|(k, _)| *k == key);
            if !taken {
                if request_level {
                    findings.request_level_annotations.push((key, value));
                } else {
                    findings.annotations.push((key, value));
                }
            }
        }
    }

    /// Error subject for an object of this resource.
    pub(crate) fn subject<'a>(&'a self, name: &'a str) -> Subject<'a> {
        Subject {
            group: self.target.group(),
            resource: self.target.plural(),
            name,
        }
    }

    /// The store key of the named object in this request's namespace.
    pub(crate) fn key(&self, name: &str) -> String {
        keys::object_key(self.info(), self.target.namespace.as_deref(), name)
    }

    /// 409 for an update whose `metadata.uid` precondition (`want`) the stored object (`uid`)
    /// does not meet: upstream's store checks it before anything else and answers with its
    /// storage error, which names the object's etcd key
    /// (`staging/src/k8s.io/apiserver/pkg/storage/interfaces.go`, `Preconditions.Check`).
    pub(crate) fn uid_precondition_failed(&self, name: &str, want: &str, uid: &str) -> ApiError {
        let builtin = state::release::is_builtin_group(self.target.group());
        let key = keys::upstream_key(self.info(), builtin, self.target.namespace.as_deref(), name);
        ApiError::conflict(
            self.subject(name),
            &format!(
                "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
            ),
        )
    }

    /// 409 for a write whose resourceVersion precondition (`want`) the stored object (at
    /// `revision`) does not meet, in the words of the same storage error.
    pub(crate) fn resource_version_precondition_failed(
        &self,
        name: &str,
        want: &str,
        revision: u64,
    ) -> ApiError {
        let builtin = state::release::is_builtin_group(self.target.group());
        let key = keys::upstream_key(self.info(), builtin, self.target.namespace.as_deref(), name);
        ApiError::conflict(
            self.subject(name),
            &format!(
                "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {revision}"
            ),
        )
    }

    /// The same call scoped to one namespace (for cluster-wide deletecollection).
    pub(crate) fn in_namespace(&self, namespace: &str) -> Call {
        let mut call = self.clone();
        call.target.namespace = Some(namespace.to_owned());
        call
    }

    /// The query string as typed options; 400 when it does not parse.
    pub(crate) fn query<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        let query = self.uri.query().unwrap_or("");
        axum::extract::Query::<T>::try_from_uri(&self.uri)
            .map(|q| q.0)
            .map_err(|e| {
                ApiError::bad_request(format!("invalid query {query:?}: {}", e.body_text()))
            })
    }
}

/// Starts the namespace lifecycle for a namespace just marked for deletion: delete its
/// contents, then drop the `kubernetes` finalizer, then the namespace.
pub(crate) fn spawn_namespace_cleanup(call: &Call, name: &str) {
    resume_namespace_cleanup(&call.state, &call.tun.stop, name);
}

/// Runs the namespace lifecycle of a terminating namespace: at its deletion, and for the
/// namespaces a restart found terminating.
pub(crate) fn resume_namespace_cleanup(state: &State, stop: &signal::Receiver<bool>, name: &str) {
    let state = state.clone();
    let mut stop = stop.clone();
    let name = name.to_owned();
    let key = match state.registry().get("", "v1", "namespaces") {
        Some(kind) => keys::object_key(&kind.info, None, &name),
        None => format!("/registry/core/namespaces/{name}"),
    };
    tokio::spawn(async move {
        loop {
            match namespace_lifecycle::purge_namespace(&state, &name).await {
                Ok(0) => match namespace_lifecycle::finish_namespace(&state, &key).await {
                    Ok(true) => return,
                    Ok(false) => {}
                    Err(error) => {
                        tracing::warn!(namespace = %name, %error, "removing a terminated namespace failed");
                        return;
                    }
                },
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(namespace = %name, %error, "emptying a terminating namespace failed; retrying");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(namespace_lifecycle::NAMESPACE_RETRY) => {}
                _ = stopped(&mut stop) => return,
            }
        }
    });
}

/// Upstream's request timeout (`--request-timeout`), which bounds reading a request's body.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// A `Content-Type` header value for JSON, shared by streamed responses.
pub(crate) const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Resolves once the server is stopping (or its stop signal is gone).
/// Runs `pass` again and again until `stop`, pausing `pause` after each one: the shape of
/// every task that follows a watch and starts over when it ends, or checks on an interval.
pub(crate) fn spawn_repeating<F, Fut>(stop: signal::Receiver<bool>, pause: Duration, mut pass: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut stop = stop;
        loop {
            tokio::select! {
                _ = stopped(&mut stop) => return,
                () = pass() => {}
            }
            tokio::select! {
                _ = stopped(&mut stop) => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    });
}

pub(crate) async fn stopped(stop: &mut signal::Receiver<bool>) {
    // The guard `wait_for` returns is not `Send`; drop it inside this future.
    let _ = stop.wait_for(|stopped| *stopped).await.map(|_| ());
}
