//! The `default` ServiceAccount in every namespace, as kube-controller-manager's
//! serviceaccounts controller keeps it (`pkg/controller/serviceaccount/serviceaccounts_controller.go`):
//! made in each active namespace, at start for the namespaces already stored and at once for
//! a namespace created later, and made again when deleted. A namespace being deleted gets
//! none: the create is guarded by the namespace's mod revision, so it lands only if the
//! namespace has not changed since it was read as active.
//!
//! Only for a catalog that serves the core ServiceAccount.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch as signal;

use crate::storage::{CreateError, Guard, Storage, WatchEvent};

use crate::server::background::{TaskError, spawn_follower};
use crate::server::state::State;
use crate::server::state::{keys, namespaces};

/// The account every namespace has.
const NAME: &str = "default";

/// How long the task waits before listing again after a watch failed.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// Makes the account in every active namespace that lacks it; answers the revision of the
/// namespace listing.
pub(crate) async fn ensure_all(state: &State) -> Result<u64, TaskError> {
    let listed = state
        .storage
        .list(namespaces::PREFIX, None, None, None)
        .await?;
    for kv in &listed.items {
        if let Some(name) = kv.key.strip_prefix(namespaces::PREFIX) {
            ensure(state, name).await?;
        }
    }
    Ok(listed.revision)
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
    let ns_key = format!("{}{namespace}", namespaces::PREFIX);
    let Some(ns) = state.storage.get(&ns_key, None).await? else {
        return Ok(());
    };
    // A namespace that does not decode counts as terminating: nothing is created in it.
    let terminating = serde_json::from_slice::<Value>(&ns.value).map_or(true, |ns| {
        ns.pointer("/metadata/deletionTimestamp")
            .is_some_and(|stamp| !stamp.is_null())
    });
    if terminating {
        return Ok(());
    }
    let object = json!({
        "apiVersion": info.gvk.api_version(),
        "kind": info.gvk.kind,
        "metadata": {
            "name": NAME,
            "namespace": namespace,
            "uid": uuid::Uuid::new_v4().to_string(),
            "creationTimestamp": crate::time::Time::now(),
        },
    });
    let bytes = serde_json::to_vec(&object).map_err(TaskError::Encode)?;
    let guard = Guard {
        key: ns_key,
        mod_revision: ns.mod_revision,
    };
    match state
        .storage
        .create_guarded(&key, bytes.into(), &guard)
        .await
    {
        // The namespace changed meanwhile: its watch event brings it here again.
        Ok(_) | Err(CreateError::AlreadyExists { .. } | CreateError::GuardChanged) => Ok(()),
        Err(source) => Err(TaskError::Create { key, source }),
    }
}

/// The namespace whose event asks for a look: a namespace written, or its account deleted.
fn namespace_to_check<'a>(event: &'a WatchEvent, accounts: &str) -> Option<&'a str> {
    match event {
        WatchEvent::Put { kv, .. } => kv
            .key
            .strip_prefix(namespaces::PREFIX)
            .filter(|name| !name.contains('/')),
        WatchEvent::Delete { prev, .. } => prev
            .key
            .strip_prefix(accounts)
            .and_then(|rest| rest.strip_suffix(&format!("/{NAME}")))
            .filter(|ns| !ns.contains('/')),
        WatchEvent::Progress { .. } => None,
    }
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
    let storage = &state.storage;
    let (Ok(mut namespaces), Ok(mut deleted)) = (
        storage
            .watch_without_prev(namespaces::PREFIX, revision)
            .await,
        storage.watch_without_prev(&accounts, revision).await,
    ) else {
        return Ok(());
    };
    loop {
        let event = tokio::select! {
            event = namespaces.next() => event,
            event = deleted.next() => event,
        };
        let Some(Ok(event)) = event else {
            return Ok(());
        };
        if let Some(namespace) = namespace_to_check(&event, &accounts) {
            ensure(state, namespace).await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Bytes, KeyValue};

    fn kv(key: &str) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Bytes::new(),
            create_revision: 1,
            mod_revision: 1,
        }
    }

    #[test]
    fn namespaces_and_deleted_default_accounts_are_looked_at() {
        let accounts = "/registry/core/serviceaccounts/";
        let put = WatchEvent::Put {
            kv: kv("/registry/core/namespaces/team"),
            prev: None,
        };
        assert_eq!(namespace_to_check(&put, accounts), Some("team"));
        let deleted = |key: &str| WatchEvent::Delete {
            prev: kv(key),
            revision: 2,
        };
        assert_eq!(
            namespace_to_check(
                &deleted("/registry/core/serviceaccounts/team/default"),
                accounts
            ),
            Some("team")
        );
        assert_eq!(
            namespace_to_check(
                &deleted("/registry/core/serviceaccounts/team/builder"),
                accounts
            ),
            None
        );
    }
}
