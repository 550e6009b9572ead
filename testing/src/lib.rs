//! A Kubernetes-compatible API server for tests, started in milliseconds in the test's own
//! process: what envtest is to Go operators, without downloading binaries or waiting seconds.
//!
//! [`TestServer::start`] gives a running server with the built-in kinds of a Kubernetes
//! release (the newest in this build by default, as the `kapi` binary), in memory, with
//! namespace cleanup and garbage collection running as on a cluster. The builder installs
//! CustomResourceDefinitions (YAML files, YAML text, or a derived kind's `crd()`) and waits
//! until they are `Established`. The server hands back its URL and a kubeconfig, and with the
//! `kube` feature a ready [`kube::Client`](https://docs.rs/kube). Dropping it stops the server
//! and removes its files.
//!
//! ```no_run
//! # #[cfg(feature = "kube")]
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use kapi_test::{Release, TestServer};
//!
//! // One line: the newest built-ins, in memory.
//! let server = TestServer::start().await?;
//! let client = server.client()?;
//!
//! // Or choose: an older release, CRDs from a file, a store on disk.
//! let server = TestServer::builder()
//!     .release(Release::V1_34)
//!     .crd_file("config/crd/bases/example.com_backups.yaml")
//!     .store(kapi_test::Store::TempDir)
//!     .start()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Features: `v1_20`, `v1_28`, `v1_34`, `v1_36` (default) carry each release's built-ins;
//! `kube` adds `TestServer::client` and `TestServer::kube_config`.

mod crds;
mod release;
mod server;

#[cfg(feature = "kube")]
mod client;

pub use release::Release;
pub use server::{Store, TestServer, TestServerBuilder};

/// Why a test server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The release's built-ins are not in this build.
    #[error(
        "the built-ins of Kubernetes {0} are not built: enable the `{feature}` feature of kapi-test",
        feature = .0.feature()
    )]
    ReleaseNotBuilt(Release),
    /// A CRD could not be read, or the server refused it, or it did not become `Established`.
    #[error("CRD from {origin}: {message}")]
    Crd {
        /// The file (and document) or other source the CRD came from.
        origin: String,
        /// What went wrong.
        message: String,
    },
    /// A socket, thread or temporary file could not be made.
    #[error("test server I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The store could not be opened.
    #[error(transparent)]
    Storage(#[from] kapi::storage::OpenError),
    /// The server failed to start.
    #[error(transparent)]
    Server(#[from] kapi::server::ServerError),
    /// A runtime config was refused (upstream's message).
    #[error("invalid runtime config: {0}")]
    RuntimeConfig(#[from] kapi::server::RuntimeConfigError),
    /// A feature gate was refused (upstream's message).
    #[error("invalid feature gates: {0}")]
    FeatureGates(#[from] kapi::server::FeatureGateError),
    /// The server's thread ended before it was ready.
    #[error("the test server stopped before it was ready")]
    Stopped,
    /// Something that should not fail did.
    #[error("test server internal error: {0}")]
    Internal(String),
}

impl Error {
    pub(crate) fn internal(error: impl std::fmt::Display) -> Self {
        Self::Internal(error.to_string())
    }
}
