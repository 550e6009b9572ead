//! Endpoints that describe the server rather than its objects: the index of paths at `/`
//! (`index`), discovery (`discovery`), OpenAPI
//! (`openapi`), `/version` (`version`), the probes (`health`), deprecation warnings
//! (`deprecation`), `/metrics` (`metrics_endpoint`), the service-account issuer's
//! `/.well-known/openid-configuration` and keys (`issuer_discovery`), and the kubeconfig a client needs
//! (`kubeconfig`).
//!
//! May import: `state`, `objects`, `http` and `auth` (the issuer's keys); never `handlers` or `background`.

pub(crate) mod deprecation;
pub(crate) mod discovery;
pub(crate) mod health;
pub(crate) mod index;
pub(crate) mod issuer_discovery;
pub(crate) mod kubeconfig;
pub(crate) mod metrics_endpoint;
pub(crate) mod openapi;
pub(crate) mod version;
