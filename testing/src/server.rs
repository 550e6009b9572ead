//! [`TestServer`]: a kapi server on a thread of its own, configured by [`TestServerBuilder`],
//! stopped and cleaned up when dropped.
//!
//! The server gets its own thread and single-threaded tokio runtime rather than the test's:
//! it serves sync tests and async ones alike, from any runtime, and dropping it can wait for
//! everything it started (tasks, the store's writer thread, the blocking pool, sockets) to be
//! gone, so a process that starts hundreds of servers keeps no threads, files or memory of
//! the stopped ones.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kapi::server::{
    AdmissionPlugins, ApiEnablement, Authentication, Authorization, FeatureGates, Features,
    RunningServer, RuntimeConfig, Server, ServiceAccountTokens,
};
use kapi::storage::{EmbeddedOptions, EmbeddedStorage, Storage};
use kapi::{KubeVersion, Registry};
use serde::Serialize;
use tempfile::TempDir;
use tokio::sync::oneshot;

use crate::Error;
use crate::Release;
use crate::crds::{self, CrdSource};

/// How long dropping a server lets open requests finish before their connections are cut.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where a test server keeps its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Store {
    /// In memory only (the default): the fastest start, nothing on disk.
    #[default]
    Memory,
    /// The durable embedded store in a temporary directory, removed when the server is
    /// dropped ([`TestServer::data_dir`]).
    TempDir,
}

/// A running API server for a test. Dropping it stops the server and removes its files.
///
/// ```no_run
/// # async fn demo() -> Result<(), kapi_test::Error> {
/// let server = kapi_test::TestServer::start().await?;
/// println!("{} {}", server.url(), server.kubeconfig_path().display());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    url: String,
    release: Option<Release>,
    kubeconfig: String,
    kubeconfig_path: PathBuf,
    data_dir: Option<PathBuf>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    // Dropped after the thread is joined, so the store is closed before its files go.
    _files: TempDir,
}

/// Configures a [`TestServer`]: `TestServer::builder()`.
#[derive(Debug, Clone)]
#[must_use]
pub struct TestServerBuilder {
    release: Option<Release>,
    store: Store,
    crds: Vec<CrdSource>,
    registry: Option<Registry>,
    runtime_config: RuntimeConfig,
    feature_gates: Vec<(String, bool)>,
    authentication: Authentication,
    authorization: Authorization,
    admission_plugins: AdmissionPlugins,
    service_accounts: Option<ServiceAccountTokens>,
    worker_threads: Option<usize>,
}

impl TestServer {
    /// A server with the built-ins of the newest release in this build, in memory: the one
    /// line a test needs.
    pub async fn start() -> Result<TestServer, Error> {
        Self::builder().start().await
    }

    /// What [`TestServer::start`] starts, for a test without an async runtime.
    pub fn start_blocking() -> Result<TestServer, Error> {
        Self::builder().start_blocking()
    }

    /// A builder: release, store and CRDs to install.
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder {
            release: Release::newest(),
            store: Store::Memory,
            crds: Vec::new(),
            registry: None,
            runtime_config: RuntimeConfig::default(),
            feature_gates: Vec::new(),
            authentication: Authentication::none(),
            authorization: Authorization::default(),
            admission_plugins: AdmissionPlugins::default(),
            service_accounts: None,
            worker_threads: None,
        }
    }

    /// The server's address on 127.0.0.1.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The release whose built-ins are served; `None` for a server without built-ins.
    pub fn release(&self) -> Option<Release> {
        self.release
    }

    /// A kubeconfig (YAML) whose current context points at the server, namespace `default`.
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// The same kubeconfig as a file, for `kubectl --kubeconfig` or `KUBECONFIG`; removed on
    /// drop.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The data directory of a [`Store::TempDir`] server; `None` in memory.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            // The thread only ends once its runtime is gone: every task, the store and its
            // writer thread. A panic there has been reported already.
            let _ = thread.join();
        }
    }
}

impl TestServerBuilder {
    /// Serves the built-ins of `release` (its crate feature must be enabled).
    pub fn release(mut self, release: Release) -> Self {
        self.release = Some(release);
        self
    }

    /// Serves no built-in kinds: only namespaces, CRDs and what [`TestServerBuilder::registry`]
    /// adds.
    pub fn without_builtins(mut self) -> Self {
        self.release = None;
        self
    }

    /// Turns built-in APIs on or off as kube-apiserver's `--runtime-config` does (e.g.
    /// `api/alpha=true` or `batch/v1=false`); may be given several times. Without it the
    /// release serves what its kube-apiserver serves by default: no alpha versions, and no
    /// betas introduced after 1.24.
    pub fn runtime_config(mut self, flag: &str) -> Self {
        self.runtime_config.add(flag);
        self
    }

    /// Turns an API feature gate on or off as kube-apiserver's `--feature-gates` does (e.g.
    /// `("CBORServingAndStorage", true)` to serve CBOR in 1.34 and newer); may be given several
    /// times. A gate the release does not have, or a GA gate set against its locked value, fails
    /// [`TestServerBuilder::start`] with upstream's message.
    pub fn feature_gate(mut self, name: &str, on: bool) -> Self {
        self.feature_gates.push((name.to_owned(), on));
        self
    }

    /// Where objects are kept (default [`Store::Memory`]).
    pub fn store(mut self, store: Store) -> Self {
        self.store = store;
        self
    }

    /// Kinds compiled into the test (`Registry::register`, `register_custom`, generated
    /// crates' `register`) served beside the release's built-ins.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Installs the CRDs of a YAML file (one or more documents) before the server is handed
    /// out, and waits until each is `Established`.
    pub fn crd_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.crds.push(CrdSource::File(path.into()));
        self
    }

    /// Installs the CRDs of YAML text (one or more documents), as [`Self::crd_file`].
    pub fn crd_yaml(mut self, yaml: impl Into<String>) -> Self {
        self.crds.push(CrdSource::Yaml(yaml.into()));
        self
    }

    /// Installs one CRD value: what a derived kind's `crd()` returns, from kapi's
    /// `CustomResource` derive or kube's, or anything else that serializes to a CRD.
    pub fn crd(mut self, crd: impl Serialize) -> Self {
        let value = serde_json::to_value(crd).map_err(|e| e.to_string());
        self.crds.push(CrdSource::Value(value));
        self
    }

    /// How requests are authenticated (default: not at all, every request is a cluster
    /// admin's), e.g. `Authentication::required().token("t", "alice", "1", &[])` to test what
    /// a user without privileges sees. The CRDs the builder installs are installed whatever
    /// this says.
    pub fn authentication(mut self, authentication: Authentication) -> Self {
        self.authentication = authentication;
        self
    }

    /// How requests are authorized (default: RBAC, with upstream's bootstrap roles).
    pub fn authorization(mut self, authorization: Authorization) -> Self {
        self.authorization = authorization;
        self
    }

    /// Which admission plugins run beyond the default set, e.g.
    /// `AdmissionPlugins::with_node_restriction()` beside
    /// `Authorization::modes([AuthorizationMode::Node, AuthorizationMode::Rbac])` for a
    /// cluster guarded as kubeadm guards it.
    pub fn admission_plugins(mut self, plugins: AdmissionPlugins) -> Self {
        self.admission_plugins = plugins;
        self
    }

    /// Serves on a multi-threaded runtime of `threads` workers (at least one), as `kapi serve`
    /// does with one per core, rather than on the single-threaded runtime a test needs: for
    /// benchmarks of what the shipped server does with a machine's cores. One worker is still
    /// a multi-threaded runtime (its I/O and timers on their own thread).
    pub fn worker_threads(mut self, threads: usize) -> Self {
        self.worker_threads = Some(threads);
        self
    }

    /// Issues and authenticates service-account tokens (`kubectl create token`), e.g.
    /// `ServiceAccountTokens::new(SigningKey::generate()?)`; without it token requests are 404.
    pub fn service_account_tokens(mut self, tokens: ServiceAccountTokens) -> Self {
        self.service_accounts = Some(tokens);
        self
    }

    /// Starts the server and returns once it answers requests, its CRDs are `Established` and
    /// its kubeconfig is written.
    pub async fn start(self) -> Result<TestServer, Error> {
        let (server, ready) = self.launch()?;
        let answer = ready.await;
        server.ready(answer)
    }

    /// [`TestServerBuilder::start`] for a test without an async runtime. Inside one, use
    /// `start().await`: this call blocks its thread until the server is ready.
    pub fn start_blocking(self) -> Result<TestServer, Error> {
        let (server, ready) = self.launch()?;
        let answer = ready.blocking_recv();
        server.ready(answer)
    }

    /// Binds the socket, writes the kubeconfig and starts the server's thread; the receiver
    /// says when the server is ready or why it failed.
    fn launch(self) -> Result<(TestServer, oneshot::Receiver<Result<(), Error>>), Error> {
        let crds = self
            .crds
            .iter()
            .map(CrdSource::read)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        let mut registry = self.registry.unwrap_or_default();
        let mut version = None;
        let mut enablement = ApiEnablement::all();
        let mut features = Features::defaults();
        if let Some(release) = self.release {
            if !release.register(&mut registry) {
                return Err(Error::ReleaseNotBuilt(release));
            }
            version = Some(release.version());
            enablement =
                ApiEnablement::for_release(&registry, release.version(), &self.runtime_config)?;
            let mut gates = FeatureGates::default();
            for (name, on) in &self.feature_gates {
                gates.set(name, *on);
            }
            features = Features::for_release(release.version(), &gates)?;
        }

        let files = tempfile::Builder::new()
            .prefix("kapi-test-")
            .tempdir()
            .map_err(Error::Io)?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(Error::Io)?;
        let addr = listener.local_addr().map_err(Error::Io)?;
        listener.set_nonblocking(true).map_err(Error::Io)?;
        let kubeconfig_path = files.path().join("kubeconfig");
        kapi::server::write_kubeconfig(&kubeconfig_path, addr).map_err(Error::Io)?;
        let data_dir = (self.store == Store::TempDir).then(|| files.path().join("data"));

        let plan = Plan {
            registry,
            version,
            enablement,
            features,
            data_dir: data_dir.clone(),
            crds,
            listener,
            authentication: self.authentication,
            authorization: self.authorization,
            admission_plugins: self.admission_plugins,
            service_accounts: self.service_accounts,
            worker_threads: self.worker_threads,
        };
        let (ready_tx, ready_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("kapi-test-{}", addr.port()))
            .spawn(move || plan.run(ready_tx, stop_rx))
            .map_err(Error::Io)?;
        let server = TestServer {
            addr,
            url: format!("http://{addr}"),
            release: self.release,
            kubeconfig: kapi::server::kubeconfig(addr),
            kubeconfig_path,
            data_dir,
            stop: Some(stop_tx),
            thread: Some(thread),
            _files: files,
        };
        Ok((server, ready_rx))
    }
}

impl TestServer {
    /// The server once its thread reported; on failure it is dropped (and joined) here.
    fn ready(
        self,
        answer: Result<Result<(), Error>, oneshot::error::RecvError>,
    ) -> Result<TestServer, Error> {
        match answer {
            Ok(Ok(())) => Ok(self),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Stopped),
        }
    }
}

/// Everything the server's thread needs.
struct Plan {
    registry: Registry,
    version: Option<KubeVersion>,
    enablement: ApiEnablement,
    features: Features,
    data_dir: Option<PathBuf>,
    crds: Vec<crds::Crd>,
    listener: TcpListener,
    authentication: Authentication,
    authorization: Authorization,
    admission_plugins: AdmissionPlugins,
    service_accounts: Option<ServiceAccountTokens>,
    worker_threads: Option<usize>,
}

impl Plan {
    /// The server thread: a runtime of its own, the server on it until `stop` fires (or the
    /// [`TestServer`] is gone), then the runtime shut down with everything on it.
    fn run(self, ready: oneshot::Sender<Result<(), Error>>, stop: oneshot::Receiver<()>) {
        let mut builder = match self.worker_threads {
            None => tokio::runtime::Builder::new_current_thread(),
            Some(threads) => {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(threads.max(1));
                builder
            }
        };
        let runtime = match builder.enable_all().build() {
            Ok(runtime) => runtime,
            Err(e) => {
                let _ = ready.send(Err(Error::Io(e)));
                return;
            }
        };
        runtime.block_on(async move {
            let running = match self.serve().await {
                Ok(running) => running,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            if ready.send(Ok(())).is_err() {
                // Nobody waits for this server any more.
                let _ = running.shutdown().await;
                return;
            }
            // A dropped sender (the TestServer gone without a stop) stops the server too.
            let _ = stop.await;
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, running.shutdown()).await;
        });
        // Connections a client left open past the grace are cut here with their tasks.
        runtime.shutdown_timeout(SHUTDOWN_GRACE);
    }

    async fn serve(self) -> Result<RunningServer, Error> {
        let storage: Arc<dyn Storage> = match &self.data_dir {
            None => Arc::new(EmbeddedStorage::in_memory(EmbeddedOptions::default())?),
            Some(dir) => Arc::new(EmbeddedStorage::open(dir, EmbeddedOptions::default()).await?),
        };
        let listener = tokio::net::TcpListener::from_std(self.listener).map_err(Error::Io)?;
        let mut builder = Server::builder()
            .registry(self.registry)
            .api_enablement(self.enablement)
            .features(self.features)
            .authentication(self.authentication)
            .authorization(self.authorization)
            .admission_plugins(self.admission_plugins)
            .storage(storage);
        if let Some(version) = self.version {
            builder = builder.kube_version(version);
        }
        if let Some(tokens) = self.service_accounts {
            builder = builder.service_account_tokens(tokens);
        }
        let running = builder.start_on(listener).await?;
        crds::install(&running, &self.crds).await?;
        Ok(running)
    }
}
