//! The state every request handler shares: the catalog of kinds, the store, and the Kubernetes
//! release the server speaks as.

use std::sync::Arc;

use crate::KubeVersion;
use crate::Registry;
use crate::storage::Storage;

/// What the server knows; handlers get it as the cheap-clone [`State`].
#[derive(Debug)]
pub(crate) struct ServerState {
    /// The kinds served, by group, version and plural.
    pub(crate) registry: Registry,
    /// Where objects live.
    pub(crate) storage: Arc<dyn Storage>,
    /// The Kubernetes release the server presents itself as: `/version`, and the release that
    /// deprecation warnings and removals are computed against.
    pub(crate) kube_version: KubeVersion,
}

/// Shared server state, cloned into every handler.
pub(crate) type State = Arc<ServerState>;
