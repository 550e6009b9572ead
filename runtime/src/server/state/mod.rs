//! What the server remembers, and the state every request handler shares: the catalog of
//! kinds, the store (wrapped by `observed`, which feeds `recent` and `namespaces`, and by
//! `metrics::Measured`), the Kubernetes release the server speaks as, the watch cache
//! (`watch_cache`), the metrics (`metrics`), and whether it is shutting down; where objects live
//! in the store (`keys`), the kinds every server has (`builtin`, `builtin_names`), what the
//! release serves by default (`release`) as `--runtime-config` changes it (`enablement`) and
//! the API features it has as `--feature-gates` changes them (`feature_gates`), the
//! Service ranges (`service_ranges`) and what the stored Services hold of them
//! (`service_allocations`, fed by `observed` too), the in-memory copies of what admission
//! reads on every write (`mirrors`, fed by `observed` and a watch) and, in projected mirrors,
//! the Node authorizer's graph (`node_graph`); which admission plugins run beyond the
//! default set (`admission_plugins`).
//!
//! May import: `auth` (the state holds how requests are authorized), `objects` (the watch
//! cache serves events as reads do) and from `http` the
//! error type, the protobuf and CBOR encodings (the watch cache frames events once for every
//! protobuf or CBOR watcher) and what the metrics label requests by (`path`, `connections`); never `handlers`,
//! `background` or `describe`.

pub(crate) mod admission_plugins;
pub(crate) mod builtin;
pub(crate) mod builtin_names;
pub(crate) mod enablement;
pub(crate) mod feature_gates;
pub(crate) mod keys;
pub(crate) mod metrics;
pub(crate) mod mirrors;
pub(crate) mod namespaces;
pub(crate) mod node_graph;
pub(crate) mod observed;
pub(crate) mod recent;
pub(crate) mod release;
pub(crate) mod service_allocations;
pub(crate) mod service_ranges;
pub(crate) mod watch_cache;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, PoisonError, RwLock};

use crate::KubeVersion;
use crate::Registry;
use crate::ResourceInfo;
use crate::server::state::enablement::ApiEnablement;
use crate::server::state::metrics::Metrics;
use crate::server::state::observed::Observed;
use crate::server::state::release::{Feature, FeatureState};
use crate::server::state::watch_cache::WatchCache;

/// What the server knows; handlers get it as the cheap-clone [`State`].
#[derive(Debug)]
pub(crate) struct ServerState {
    /// The kinds served, by group, version and plural: those registered at start and those of
    /// the CRDs in the store, swapped whole when a CRD changes (see `crds`). Read through
    /// [`ServerState::registry`], so a request sees one catalog from start to end.
    pub(crate) catalog: RwLock<Arc<Registry>>,
    /// Where objects live, seen through the server's caches of what it read and wrote.
    pub(crate) storage: Arc<Observed>,
    /// The Kubernetes release the server presents itself as: `/version`, and the release that
    /// deprecation warnings and removals are computed against.
    pub(crate) kube_version: KubeVersion,
    /// The group-versions and resources served: the release's defaults and `--runtime-config`.
    pub(crate) enablement: ApiEnablement,
    /// The API features on: the release's defaults and `--feature-gates`.
    pub(crate) features: feature_gates::Features,
    /// Whether containers may be privileged (`--allow-privileged`).
    pub(crate) allow_privileged: bool,
    /// Which admission plugins run beyond those that always do (`--enable-admission-plugins`).
    pub(crate) admission_plugins: admission_plugins::AdmissionPlugins,
    /// How kubelets are reached (`--kubelet-*`).
    pub(crate) kubelet: crate::server::http::kubelet::KubeletClient,
    /// The shared watch feeds, one per watched resource and version.
    pub(crate) watch_cache: WatchCache,
    /// The series `/metrics` serves.
    pub(crate) metrics: Arc<Metrics>,
    /// How requests are authenticated and authorized, and the RBAC policy in force.
    pub(crate) access: Arc<crate::server::auth::Access>,
    /// Set when the server begins to shut down: `/readyz` fails from then on.
    pub(crate) shutting_down: AtomicBool,
}

/// Shared server state, cloned into every handler.
pub(crate) type State = Arc<ServerState>;

/// The first release with a pod's `resize` subresource (alpha and off then).
const POD_RESIZE_SINCE: crate::KubeVersion = crate::KubeVersion::new(1, 32);

impl ServerState {
    /// The kinds served now.
    pub(crate) fn registry(&self) -> Arc<Registry> {
        // A panic while swapping cannot leave a half-written Arc behind: the value is whole.
        Arc::clone(&self.catalog.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Whether `info`'s resource is served: in the release (its lifecycle) and enabled.
    pub(crate) fn serves(&self, info: &ResourceInfo) -> bool {
        release::is_served(info, self.kube_version)
            && self
                .enablement
                .serves(&info.gvk.group, &info.gvk.version, &info.plural)
    }

    /// What the release served makes of `feature`.
    pub(crate) fn feature(&self, feature: Feature) -> FeatureState {
        self.features.state(self.kube_version, feature)
    }

    /// Whether a pod's `resize` subresource is served: registered only while
    /// InPlacePodVerticalScaling is on (`pkg/registry/core/rest/storage_core.go`), in a release
    /// that has it (1.32 on; on by default from 1.33).
    pub(crate) fn serves_pod_resize(&self) -> bool {
        self.kube_version >= POD_RESIZE_SINCE
            && self.feature(Feature::InPlacePodVerticalScaling).is_on()
    }

    /// Whether requests and answers may be CBOR (`CBORServingAndStorage`).
    pub(crate) fn cbor(&self) -> bool {
        self.feature(Feature::CborServingAndStorage).is_on()
    }

    /// Serves `registry` from now on.
    pub(crate) fn set_registry(&self, registry: Registry) {
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(registry);
    }
}
