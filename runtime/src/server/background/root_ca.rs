//! The `kube-root-ca.crt` ConfigMap in every namespace, as kube-controller-manager's root CA
//! publisher keeps it (`pkg/controller/certificates/rootcacertpublisher/publisher.go`): its
//! `ca.crt` is the CA bundle pods trust the server with (what the projected
//! `kube-api-access-*` volume mounts), with upstream's description annotation; made in each
//! active namespace, at start and when a namespace is created, made again when deleted, and
//! set back when its data or annotation is changed (other fields are left as they are).
//!
//! Only for a server given its CA ([`crate::server::ServerBuilder::root_ca`]) and a catalog
//! that serves the core ConfigMap.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch as signal;

use crate::storage::{Storage, UpdateError};

use crate::server::background::per_namespace;
use crate::server::background::{TaskError, spawn_follower};
use crate::server::state::State;
use crate::server::state::keys;

/// The ConfigMap's name.
const NAME: &str = "kube-root-ca.crt";
/// Its one key.
const DATA_KEY: &str = "ca.crt";
/// Upstream's annotation and its text.
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// How long the task waits before listing again after a watch failed.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// Makes or sets back the ConfigMap in every active namespace; answers the revision of the
/// namespace listing.
pub(crate) async fn ensure_all(state: &State, ca: &str) -> Result<u64, TaskError> {
    let (names, revision) = per_namespace::stored_namespaces(state).await?;
    for name in &names {
        ensure(state, ca, name).await?;
    }
    Ok(revision)
}

/// Whether a stored ConfigMap holds what the publisher writes.
fn is_current(object: &Value, ca: &str) -> bool {
    object.get("data") == Some(&json!({DATA_KEY: ca}))
        && object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
            .and_then(Value::as_str)
            == Some(DESCRIPTION)
}

/// Makes the ConfigMap in `namespace` if the namespace is active and lacks it, or sets its
/// data and annotation back.
async fn ensure(state: &State, ca: &str, namespace: &str) -> Result<(), TaskError> {
    let registry = state.registry();
    let Some(kind) = registry.get("", "v1", "configmaps") else {
        return Ok(());
    };
    let info = &kind.info;
    let key = keys::object_key(info, Some(namespace), NAME);
    if let Some(kv) = state.storage.get(&key, None).await? {
        let mut object: Value =
            serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                key: key.clone(),
                source,
            })?;
        if is_current(&object, ca) {
            return Ok(());
        }
        object["data"] = json!({DATA_KEY: ca});
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
            if !annotations.is_object() {
                *annotations = json!({});
            }
            annotations[DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
        }
        let bytes = serde_json::to_vec(&object).map_err(TaskError::Encode)?;
        return match state
            .storage
            .update(&key, bytes.into(), kv.mod_revision)
            .await
        {
            // Changed or deleted meanwhile: its watch event brings it here again.
            Ok(_) | Err(UpdateError::Conflict { .. } | UpdateError::NotFound) => Ok(()),
            Err(source) => Err(TaskError::Update { key, source }),
        };
    }
    let mut object = per_namespace::new_object(info, namespace, NAME);
    object["metadata"]["annotations"] = json!({DESCRIPTION_ANNOTATION: DESCRIPTION});
    object["data"] = json!({DATA_KEY: ca});
    per_namespace::create_in_active(state, namespace, key, &object).await
}

/// Keeps every namespace's ConfigMap from `revision` on (see [`ensure_all`]), until `stop`.
pub(crate) fn spawn(state: State, ca: Arc<str>, revision: u64, stop: signal::Receiver<bool>) {
    let follow = move |state: State, from| {
        let ca = Arc::clone(&ca);
        async move { follow(&state, &ca, from).await }
    };
    spawn_follower(
        state,
        revision,
        stop,
        RESYNC_AFTER,
        "publishing kube-root-ca.crt",
        follow,
    );
}

/// A pass over every namespace (unless `from` says where the last one ended), then the
/// watches of namespaces and ConfigMaps after it; returns when a watch ends.
async fn follow(state: &State, ca: &str, from: Option<u64>) -> Result<(), TaskError> {
    let revision = match from {
        Some(revision) => revision,
        None => ensure_all(state, ca).await?,
    };
    let Some(kind) = state.registry().get("", "v1", "configmaps").cloned() else {
        return Ok(());
    };
    let configmaps = keys::resource_prefix(&kind.info);
    per_namespace::follow(state, revision, &configmaps, NAME, |namespace| async move {
        ensure(state, ca, &namespace).await
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_configmaps_are_left_alone() {
        let current = json!({
            "metadata": {"annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": {DATA_KEY: "PEM"},
        });
        assert!(is_current(&current, "PEM"));
        assert!(!is_current(&current, "OTHER"));
        assert!(!is_current(&json!({"data": {DATA_KEY: "PEM"}}), "PEM"));
    }
}
