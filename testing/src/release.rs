//! The Kubernetes releases whose built-in kinds a test server can serve, each behind the cargo
//! feature of the same name.

use kapi::{KubeVersion, Registry};

/// A Kubernetes release whose built-ins (`kapi-k8s`) a [`TestServer`](crate::TestServer) serves.
///
/// Each needs the crate feature of its name (`v1_36`, the default, ...), so a test suite
/// compiles only the releases it uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Release {
    /// Kubernetes 1.20 (feature `v1_20`).
    V1_20,
    /// Kubernetes 1.28 (feature `v1_28`).
    V1_28,
    /// Kubernetes 1.34 (feature `v1_34`).
    V1_34,
    /// Kubernetes 1.36 (feature `v1_36`), the newest and the `kapi` binary's default.
    V1_36,
}

impl Release {
    /// Every release, oldest first.
    pub const ALL: [Release; 4] = [Self::V1_20, Self::V1_28, Self::V1_34, Self::V1_36];

    /// The newest release this build carries: the default of a test server. `None` when no
    /// release feature is enabled (the server then serves namespaces and CRDs only).
    pub fn newest() -> Option<Release> {
        Self::ALL.into_iter().rev().find(|r| r.is_built())
    }

    /// The version a server of this release reports and computes deprecations against.
    pub fn version(self) -> KubeVersion {
        match self {
            Self::V1_20 => KubeVersion::new(1, 20),
            Self::V1_28 => KubeVersion::new(1, 28),
            Self::V1_34 => KubeVersion::new(1, 34),
            Self::V1_36 => KubeVersion::new(1, 36),
        }
    }

    /// The cargo feature that carries this release's built-ins.
    pub fn feature(self) -> &'static str {
        match self {
            Self::V1_20 => "v1_20",
            Self::V1_28 => "v1_28",
            Self::V1_34 => "v1_34",
            Self::V1_36 => "v1_36",
        }
    }

    /// Whether this build carries the release (its feature is enabled).
    pub fn is_built(self) -> bool {
        self.registrar().is_some()
    }

    /// Adds the release's built-in kinds to `registry`; `false` when the release is not built.
    pub(crate) fn register(self, registry: &mut Registry) -> bool {
        match self.registrar() {
            Some(register) => {
                register(registry);
                true
            }
            None => false,
        }
    }

    fn registrar(self) -> Option<fn(&mut Registry)> {
        match self {
            #[cfg(feature = "v1_20")]
            Self::V1_20 => Some(kapi_k8s::v1_20::register),
            #[cfg(feature = "v1_28")]
            Self::V1_28 => Some(kapi_k8s::v1_28::register),
            #[cfg(feature = "v1_34")]
            Self::V1_34 => Some(kapi_k8s::v1_34::register),
            #[cfg(feature = "v1_36")]
            Self::V1_36 => Some(kapi_k8s::v1_36::register),
            #[allow(unreachable_patterns, reason = "reached when a release feature is off")]
            _ => None,
        }
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.version())
    }
}
