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

use crate::storage::{CreateError, Guard, Storage, UpdateError, WatchEvent};

use crate::server::background::{TaskError, spawn_follower};
use crate::server::state::State;
use crate::server::state::{keys, namespaces};

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
    let listed = state
        .storage
        .list(namespaces::PREFIX, None, None, None)
        .await?;
    for kv in &listed.items {
        if let Some(name) = kv.key.strip_prefix(namespaces::PREFIX) {
            ensure(state, ca, name).await?;
        }
    }
    Ok(listed.revision)
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
            "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
        },
        "data": {DATA_KEY: ca},
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
        Ok(_) | Err(CreateError::AlreadyExists { .. } | CreateError::GuardChanged) => Ok(()),
        Err(source) => Err(TaskError::Create { key, source }),
    }
}

/// The namespace whose event asks for a look: a namespace written, or its ConfigMap written
/// or deleted.
fn namespace_to_check<'a>(event: &'a WatchEvent, configmaps: &str) -> Option<&'a str> {
    let of_configmap = |key: &'a str| {
        key.strip_prefix(configmaps)
            .and_then(|rest| rest.strip_suffix(&format!("/{NAME}")))
            .filter(|ns| !ns.contains('/'))
    };
    match event {
        WatchEvent::Put { kv, .. } => kv
            .key
            .strip_prefix(namespaces::PREFIX)
            .filter(|name| !name.contains('/'))
            .or_else(|| of_configmap(&kv.key)),
        WatchEvent::Delete { prev, .. } => of_configmap(&prev.key),
        WatchEvent::Progress { .. } => None,
    }
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
    let storage = &state.storage;
    let (Ok(mut namespaces), Ok(mut written)) = (
        storage
            .watch_without_prev(namespaces::PREFIX, revision)
            .await,
        storage.watch_without_prev(&configmaps, revision).await,
    ) else {
        return Ok(());
    };
    loop {
        let event = tokio::select! {
            event = namespaces.next() => event,
            event = written.next() => event,
        };
        let Some(Ok(event)) = event else {
            return Ok(());
        };
        if let Some(namespace) = namespace_to_check(&event, &configmaps) {
            ensure(state, ca, namespace).await?;
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
    fn namespaces_and_the_configmaps_are_looked_at() {
        let configmaps = "/registry/core/configmaps/";
        let put = |key: &str| WatchEvent::Put {
            kv: kv(key),
            prev: None,
        };
        assert_eq!(
            namespace_to_check(&put("/registry/core/namespaces/team"), configmaps),
            Some("team")
        );
        assert_eq!(
            namespace_to_check(
                &put("/registry/core/configmaps/team/kube-root-ca.crt"),
                configmaps
            ),
            Some("team")
        );
        assert_eq!(
            namespace_to_check(&put("/registry/core/configmaps/team/other"), configmaps),
            None
        );
        let deleted = WatchEvent::Delete {
            prev: kv("/registry/core/configmaps/team/kube-root-ca.crt"),
            revision: 2,
        };
        assert_eq!(namespace_to_check(&deleted, configmaps), Some("team"));
    }

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
