//! Endpoints that describe the server rather than its objects: discovery (`discovery`), OpenAPI
//! (`openapi`), `/version` (`version`), the probes (`health`), deprecation warnings
//! (`deprecation`), `/metrics` (`metrics_endpoint`), and the kubeconfig a client needs
//! (`kubeconfig`).
//!
//! May import: `state`, `objects` and `http`; never `handlers` or `background`.

pub(crate) mod deprecation;
pub(crate) mod discovery;
pub(crate) mod health;
pub(crate) mod kubeconfig;
pub(crate) mod metrics_endpoint;
pub(crate) mod openapi;
pub(crate) mod version;
