//! What the controllers that keep one object in every namespace share (`service_accounts`'
//! `default` ServiceAccount, `root_ca`'s `kube-root-ca.crt`): the namespaces stored now, the
//! create guarded by the namespace (nothing lands in a namespace being deleted: the create
//! holds only if the namespace has not changed since it was read as active), and the watches
//! of the namespaces and of the object that say which namespace to look at again.

use std::future::Future;

use serde_json::{Value, json};

use crate::ResourceInfo;

use crate::storage::{CreateError, Guard, Storage, WatchEvent};

use crate::server::background::TaskError;
use crate::server::state::State;
use crate::server::state::namespaces;

/// The names of the stored namespaces, and the revision of the listing.
pub(crate) async fn stored_namespaces(state: &State) -> Result<(Vec<String>, u64), TaskError> {
    let listed = state
        .storage
        .list(namespaces::PREFIX, None, None, None)
        .await?;
    let names = listed
        .items
        .iter()
        .filter_map(|kv| kv.key.strip_prefix(namespaces::PREFIX))
        .map(str::to_owned)
        .collect();
    Ok((names, listed.revision))
}

/// A new object of kind `info` named `name` in `namespace`, with a fresh uid and creation time.
pub(crate) fn new_object(info: &ResourceInfo, namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": info.gvk.api_version(),
        "kind": info.gvk.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uuid::Uuid::new_v4().to_string(),
            "creationTimestamp": crate::time::Time::now(),
        },
    })
}

/// Creates `object` at `key` in `namespace` if the namespace is stored and not being deleted,
/// guarded by the namespace; one already there, or a namespace changed meanwhile (its watch
/// event brings it back), is no failure.
pub(crate) async fn create_in_active(
    state: &State,
    namespace: &str,
    key: String,
    object: &Value,
) -> Result<(), TaskError> {
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
    let bytes = serde_json::to_vec(object).map_err(TaskError::Encode)?;
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

/// The namespace whose event asks for a look: a namespace written, or the object `name` under
/// `resource` (a resource's key prefix) written or deleted.
pub(crate) fn namespace_to_check<'a>(
    event: &'a WatchEvent,
    resource: &str,
    name: &str,
) -> Option<&'a str> {
    let of_object = |key: &'a str| {
        key.strip_prefix(resource)
            .and_then(|rest| rest.strip_suffix(name))
            .and_then(|rest| rest.strip_suffix('/'))
            .filter(|ns| !ns.contains('/'))
    };
    match event {
        WatchEvent::Put { kv, .. } => kv
            .key
            .strip_prefix(namespaces::PREFIX)
            .filter(|ns| !ns.contains('/'))
            .or_else(|| of_object(&kv.key)),
        WatchEvent::Delete { prev, .. } => of_object(&prev.key),
        WatchEvent::Progress { .. } => None,
    }
}

/// Watches the namespaces and the objects under `resource` from `revision`, calling `look` with
/// each namespace an event asks about (see [`namespace_to_check`]); returns when a watch ends.
pub(crate) async fn follow<F, Fut>(
    state: &State,
    revision: u64,
    resource: &str,
    name: &str,
    mut look: F,
) -> Result<(), TaskError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<(), TaskError>>,
{
    let storage = &state.storage;
    let (Ok(mut namespaces), Ok(mut objects)) = (
        storage
            .watch_without_prev(namespaces::PREFIX, revision)
            .await,
        storage.watch_without_prev(resource, revision).await,
    ) else {
        return Ok(());
    };
    loop {
        let event = tokio::select! {
            event = namespaces.next() => event,
            event = objects.next() => event,
        };
        let Some(Ok(event)) = event else {
            return Ok(());
        };
        if let Some(namespace) = namespace_to_check(&event, resource, name) {
            look(namespace.to_owned()).await?;
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
    fn namespaces_and_the_kept_objects_are_looked_at() {
        let accounts = "/registry/core/serviceaccounts/";
        let check =
            |event: &WatchEvent| namespace_to_check(event, accounts, "default").map(str::to_owned);
        let put = |key: &str| WatchEvent::Put {
            kv: kv(key),
            prev: None,
        };
        let deleted = |key: &str| WatchEvent::Delete {
            prev: kv(key),
            revision: 2,
        };
        assert_eq!(
            check(&put("/registry/core/namespaces/team")).as_deref(),
            Some("team")
        );
        assert_eq!(
            check(&deleted("/registry/core/serviceaccounts/team/default")).as_deref(),
            Some("team")
        );
        assert_eq!(
            check(&put("/registry/core/serviceaccounts/team/default")).as_deref(),
            Some("team")
        );
        assert_eq!(
            check(&deleted("/registry/core/serviceaccounts/team/builder")),
            None
        );
        assert_eq!(
            check(&deleted("/registry/core/serviceaccounts/team/xdefault")),
            None
        );
    }
}
