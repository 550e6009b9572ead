//! Tasks that run beside the requests, and what the server does to its store before them
//! (`cohabiting`: objects an earlier kapi stored under a group that now shares another group's
//! storage move there): the garbage collector (`gc`), the
//! CustomResourceDefinition task that rebuilds the served catalog (`crds`), and the
//! controllers that keep what a cluster holds from the start: the `default/kubernetes`
//! Service with its endpoints (`kubernetes_service`) and every namespace's `default`
//! ServiceAccount (`service_accounts`) and `kube-root-ca.crt` ConfigMap (`root_ca`), both
//! through `per_namespace`, and the service-account token Secrets (`token_secrets`); the quota controller, which keeps every
//! ResourceQuota's `status.used` (`resource_quota`); RBAC's bootstrap roles, ClusterRole
//! aggregation and the policy authorization reads (`rbac`); and the ValidatingAdmissionPolicies'
//! `status` (`policy_status`, its type checking in `policy_types`). Each is started by `serve` and stops with
//! the server.
//!
//! May import: `objects`, `state`, `http` (errors, paths, request options) and `auth` (the
//! policy, the token signer); never `handlers`.

pub(crate) mod cohabiting;
pub(crate) mod crds;
pub(crate) mod gc;
pub(crate) mod kubernetes_service;
pub(crate) mod per_namespace;
pub(crate) mod policy_status;
mod policy_types;
pub(crate) mod rbac;
pub(crate) mod resource_quota;
pub(crate) mod root_ca;
pub(crate) mod service_accounts;
pub(crate) mod token_secrets;

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch as signal;

use crate::server::spawn_repeating;
use crate::server::state::State;
use crate::storage::{CreateError, DeleteError, ReadError, UpdateError};

/// Starts a task that follows the store: `follow` from `first` (where the pass made at start
/// ended), and after it ends or fails, after `pause`, from scratch (`None`), until `stop`.
/// `what` names the task's work in the log of a failure.
pub(crate) fn spawn_follower<T, F, Fut>(
    state: State,
    first: T,
    stop: signal::Receiver<bool>,
    pause: Duration,
    what: &'static str,
    follow: F,
) where
    T: Send + 'static,
    F: Fn(State, Option<T>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), TaskError>> + Send,
{
    let mut from = Some(first);
    spawn_repeating(stop, pause, move || {
        let run = follow(state.clone(), from.take());
        async move {
            if let Err(error) = run.await {
                tracing::warn!(%error, "{what} failed; retrying");
            }
        }
    });
}

/// What one pass of a background task (the CRD task, a namespace's lifecycle) fails with. The
/// task logs it and tries again after a pause; nothing answers a client with it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaskError {
    /// The store could not be read.
    #[error("reading the store: {0}")]
    Read(#[from] ReadError),
    /// An object could not be written back.
    #[error("writing {key}: {source}")]
    Update {
        key: String,
        #[source]
        source: UpdateError,
    },
    /// An object could not be created.
    #[error("creating {key}: {source}")]
    Create {
        key: String,
        #[source]
        source: CreateError,
    },
    /// An object could not be deleted.
    #[error("deleting {key}: {source}")]
    Delete {
        key: String,
        #[source]
        source: DeleteError,
    },
    /// A stored object is not the JSON the server writes.
    #[error("stored object {key} does not decode: {source}")]
    Stored {
        key: String,
        #[source]
        source: serde_json::Error,
    },
    /// An object could not be encoded.
    #[error("encoding an object: {0}")]
    Encode(#[source] serde_json::Error),
}
