//! The `default` ServiceAccount in every namespace, as kube-controller-manager's
//! serviceaccounts controller keeps it (`pkg/controller/serviceaccount/serviceaccounts_controller.go`):
//! made in each active namespace, at start for the namespaces already stored and at once for
//! a namespace created later, and made again when deleted. A namespace being deleted gets
//! none: the create is guarded by the namespace's mod revision, so it lands only if the
//! namespace has not changed since it was read as active.
//!
//! Only for a catalog that serves the core ServiceAccount.

use std::time::Duration;

use tokio::sync::watch as signal;

use crate::storage::Storage;

use crate::server::background::per_namespace;
use crate::server::background::{TaskError, spawn_follower};
use crate::server::state::State;
use crate::server::state::keys;

/// The account every namespace has.
const NAME: &str = "default";

/// How long the task waits before listing again after a watch failed.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// Makes the account in every active namespace that lacks it; answers the revision of the
/// namespace listing.
pub(crate) async fn ensure_all(state: &State) -> Result<u64, TaskError> {
    let (names, revision) = per_namespace::stored_namespaces(state).await?;
    for name in &names {
        ensure(state, name).await?;
    }
    Ok(revision)
}

/// Makes the account in namespace `namespace` if the namespace is active and lacks it.
async fn ensure(state: &State, namespace: &str) -> Result<(), TaskError> {
    let registry = state.registry();
    let Some(kind) = registry.get("", "v1", "serviceaccounts") else {
        return Ok(());
    };
    let info = &kind.info;
    let key = keys::object_key(info, Some(namespace), NAME);
    if state.storage.get(&key, None).await?.is_some() {
        return Ok(());
    }
    let object = per_namespace::new_object(info, namespace, NAME);
    per_namespace::create_in_active(state, namespace, key, &object).await
}

/// Keeps every namespace's account from `revision` on (see [`ensure_all`]), until `stop`.
pub(crate) fn spawn(state: State, revision: u64, stop: signal::Receiver<bool>) {
    let follow = |state: State, from| async move { follow(&state, from).await };
    spawn_follower(
        state,
        revision,
        stop,
        RESYNC_AFTER,
        "keeping the default ServiceAccounts",
        follow,
    );
}

/// A pass over every namespace (unless `from` says where the last one ended), then the
/// watches of namespaces and accounts after it; returns when a watch ends.
async fn follow(state: &State, from: Option<u64>) -> Result<(), TaskError> {
    let revision = match from {
        Some(revision) => revision,
        None => ensure_all(state).await?,
    };
    let Some(kind) = state.registry().get("", "v1", "serviceaccounts").cloned() else {
        return Ok(());
    };
    let accounts = keys::resource_prefix(&kind.info);
    per_namespace::follow(state, revision, &accounts, NAME, |namespace| async move {
        ensure(state, &namespace).await
    })
    .await
}
