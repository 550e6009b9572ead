//! The quota controller: every ResourceQuota's `status`, `hard` from its spec and `used`
//! counted from its namespace's objects, as kube-controller-manager's resourcequota controller
//! keeps it (`pkg/controller/resourcequota/resource_quota_controller.go`): at start, when a
//! quota is written, when an object of a namespace with quotas is created, changed or deleted
//! (upstream's replenishment, so usage falls when objects go), and on a full pass every five
//! minutes (upstream's default `--resource-quota-sync-period`). Every resource `hard` names is
//! in `used`, `"0"` when nothing uses it; a scoped quota counts the pods in its scopes.
//!
//! The ResourceQuota admission plugin charges a create at once, before the object is written;
//! this task settles the rest. A recount may find a charged object not written yet, so it
//! lowers a quota's usage only for a batch of changes that deleted or changed objects (and on
//! the passes over everything), as upstream's replenishment follows deletions and updates and
//! a quota's own sync does not undo charges in flight.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::watch as signal;

use crate::storage::{Bytes, Storage, UpdateError, WatchEvent};

use crate::server::background::{TaskError, spawn_follower};
use crate::server::objects::quota::{counted_resource, in_scopes, usage_of};
use crate::server::state::State;
use crate::server::state::keys::{self, prefix_of};

/// Where every object is stored.
const EVERYTHING: &str = "/registry/";

/// How long the task waits before starting again after its watch ended.
const RESTART_AFTER: Duration = Duration::from_millis(500);

/// How often every quota is recounted whatever changed.
const FULL_PASS: Duration = Duration::from_secs(300);

/// How long changes are gathered before the namespaces they touch are recounted.
const GATHER: Duration = Duration::from_millis(50);

/// How many objects one read returns while counting.
const PAGE: usize = 500;

fn quotas_prefix() -> String {
    prefix_of("", "resourcequotas")
}

/// Recounts every quota; answers the revision the quotas were listed at and the namespaces
/// that have quotas.
pub(crate) async fn sync_all(state: &State) -> Result<(u64, BTreeSet<String>), TaskError> {
    let prefix = quotas_prefix();
    let listed = state.storage.list(&prefix, None, None, None).await?;
    let namespaces: BTreeSet<String> = listed
        .items
        .iter()
        .filter_map(|kv| namespace_of(&kv.key))
        .collect();
    for namespace in &namespaces {
        sync_namespace(state, namespace, Lowering::Allowed).await?;
    }
    Ok((listed.revision, namespaces))
}

/// The namespace of a namespaced object's key (`/registry/<group>/<plural>/<ns>/<name>`).
fn namespace_of(key: &str) -> Option<String> {
    let mut parts = key.strip_prefix(EVERYTHING)?.split('/');
    let (_group, _plural, namespace, _name) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    parts.next().is_none().then(|| namespace.to_owned())
}

/// Whether a recount may lower a quota's usage below what its status says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lowering {
    /// Objects went or changed: usage may fall.
    Allowed,
    /// Only creates and quota writes (charges among them): what was charged stays, as the
    /// charged object may not be written yet.
    KeepCharges,
}

/// Recounts the quotas of `namespace`; answers whether it has any.
async fn sync_namespace(
    state: &State,
    namespace: &str,
    lowering: Lowering,
) -> Result<bool, TaskError> {
    let prefix = format!("{}{namespace}/", quotas_prefix());
    let quotas = state.storage.list(&prefix, None, None, None).await?;
    if quotas.items.is_empty() {
        return Ok(false);
    }
    let mut counted: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    for kv in &quotas.items {
        let quota: Value =
            serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                key: kv.key.clone(),
                source,
            })?;
        let hard = quota
            .pointer("/spec/hard")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut used = Map::new();
        for name in hard.keys() {
            let mut total = crate::Quantity::default();
            if let Some(resource) = counted_resource(name) {
                if !counted.contains_key(&resource) {
                    let objects = objects_of(state, &resource, namespace).await?;
                    counted.insert(resource.clone(), objects);
                }
                let (group, plural) = &resource;
                for object in counted.get(&resource).into_iter().flatten() {
                    if !in_scopes(&quota, group, plural, object) {
                        continue;
                    }
                    if let Some(amount) = usage_of(group, plural, object).get(name) {
                        total = total.checked_add(*amount).unwrap_or(total);
                    }
                }
            }
            if lowering == Lowering::KeepCharges
                && let Some(charged) = quota
                    .pointer("/status/used")
                    .and_then(|used| used.get(name))
                    .and_then(Value::as_str)
                    .and_then(|text| text.parse::<crate::Quantity>().ok())
                && charged > total
            {
                total = charged;
            }
            used.insert(name.clone(), Value::from(total.to_string()));
        }
        let status = json!({"hard": hard, "used": used});
        if quota.get("status") == Some(&status) {
            continue;
        }
        let mut quota = quota;
        if let Value::Object(map) = &mut quota {
            map.insert("status".into(), status);
        }
        let bytes = serde_json::to_vec(&quota).map_err(TaskError::Encode)?;
        match state
            .storage
            .update(&kv.key, Bytes::from(bytes), kv.mod_revision)
            .await
        {
            // A quota written meanwhile is recounted on its own event.
            Ok(_) | Err(UpdateError::Conflict { .. } | UpdateError::NotFound) => {}
            Err(source) => {
                return Err(TaskError::Update {
                    key: kv.key.clone(),
                    source,
                });
            }
        }
    }
    Ok(true)
}

/// Every stored object of `resource` in `namespace`, read a page at a time.
async fn objects_of(
    state: &State,
    (group, plural): &(String, String),
    namespace: &str,
) -> Result<Vec<Value>, TaskError> {
    let registry = state.registry();
    let prefix = match registry
        .kinds()
        .find(|k| k.info.gvk.group == *group && k.info.plural == *plural)
    {
        Some(kind) => keys::collection_prefix(&kind.info, Some(namespace)),
        None => format!("{}{namespace}/", prefix_of(group, plural)),
    };
    let mut objects = Vec::new();
    let mut start: Option<String> = None;
    // Every page at the first one's revision, so a write meanwhile neither adds nor hides one.
    let mut revision = None;
    loop {
        let page = state
            .storage
            .list(&prefix, revision, start.as_deref(), Some(PAGE))
            .await?;
        revision = Some(page.revision);
        for kv in &page.items {
            if let Ok(object) = serde_json::from_slice::<Value>(&kv.value) {
                objects.push(object);
            }
        }
        match page.items.last() {
            Some(last) if page.more => start = Some(keys::after(&last.key)),
            _ => return Ok(objects),
        }
    }
}

/// Keeps every quota's status from `revision` on, until `stop`.
pub(crate) fn spawn(state: State, first: (u64, BTreeSet<String>), stop: signal::Receiver<bool>) {
    let follow = |state: State, from| async move { follow(&state, from).await };
    spawn_follower(
        state,
        first,
        stop,
        RESTART_AFTER,
        "keeping the ResourceQuotas' usage",
        follow,
    );
}

/// A full pass (unless `from` says where the last one ended), then the namespaces that
/// changes touch, recounted as they come; returns when the watch ends.
async fn follow(state: &State, from: Option<(u64, BTreeSet<String>)>) -> Result<(), TaskError> {
    let (mut revision, mut with_quotas) = match from {
        Some(from) => from,
        None => sync_all(state).await?,
    };
    loop {
        // A watch that cannot start (its revision compacted away) ends the pass; the next
        // starts with a full one.
        let Ok(mut watch) = state.storage.watch_without_prev(EVERYTHING, revision).await else {
            return Ok(());
        };
        let full_pass = tokio::time::sleep(FULL_PASS);
        tokio::pin!(full_pass);
        loop {
            let event = tokio::select! {
                event = watch.next() => event,
                () = &mut full_pass => break,
            };
            let Some(Ok(event)) = event else {
                return Ok(());
            };
            let mut touched = BTreeMap::new();
            note(&event, &quotas_prefix(), &mut with_quotas, &mut touched);
            // Changes come in bursts (a deployment's pods, a namespace's cleanup): gather them.
            let deadline = tokio::time::sleep(GATHER);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    event = watch.next() => match event {
                        Some(Ok(event)) => note(&event, &quotas_prefix(), &mut with_quotas, &mut touched),
                        _ => return Ok(()),
                    },
                    () = &mut deadline => break,
                }
            }
            for (namespace, lowering) in touched {
                if !sync_namespace(state, &namespace, lowering).await? {
                    with_quotas.remove(&namespace);
                }
            }
        }
        (revision, with_quotas) = sync_all(state).await?;
    }
}

/// Adds the namespace `event` touches to `touched` when it has quotas (or the event is of a
/// quota), with whether its usage may fall (an object other than a quota deleted or
/// changed), and remembers namespaces that gain a quota.
fn note(
    event: &WatchEvent,
    quotas: &str,
    with_quotas: &mut BTreeSet<String>,
    touched: &mut BTreeMap<String, Lowering>,
) {
    let (key, went_or_changed) = match event {
        WatchEvent::Put { kv, .. } => (&kv.key, kv.create_revision != kv.mod_revision),
        WatchEvent::Delete { prev, .. } => (&prev.key, true),
        WatchEvent::Progress { .. } => return,
    };
    let Some(namespace) = namespace_of(key) else {
        return;
    };
    let is_quota = key.starts_with(quotas);
    if is_quota {
        with_quotas.insert(namespace.clone());
    }
    if with_quotas.contains(&namespace) {
        let lowering = touched.entry(namespace).or_insert(Lowering::KeepCharges);
        if went_or_changed && !is_quota {
            *lowering = Lowering::Allowed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::KeyValue;

    fn put(key: &str) -> WatchEvent {
        WatchEvent::Put {
            kv: KeyValue {
                key: key.to_owned(),
                value: Bytes::new(),
                create_revision: 1,
                mod_revision: 1,
            },
            prev: None,
        }
    }

    #[test]
    fn changes_in_namespaces_with_quotas_are_recounted() {
        let quotas = "/registry/core/resourcequotas/";
        let mut with_quotas = BTreeSet::new();
        let mut touched = BTreeMap::new();
        note(
            &put("/registry/core/pods/team/a"),
            quotas,
            &mut with_quotas,
            &mut touched,
        );
        assert!(touched.is_empty(), "no quota in team yet");
        note(
            &put("/registry/core/resourcequotas/team/q"),
            quotas,
            &mut with_quotas,
            &mut touched,
        );
        note(
            &put("/registry/apps/deployments/team/web"),
            quotas,
            &mut with_quotas,
            &mut touched,
        );
        note(
            &put("/registry/core/namespaces/team"),
            quotas,
            &mut with_quotas,
            &mut touched,
        );
        // Creates and quota writes keep what admission charged.
        assert_eq!(
            touched.clone().into_iter().collect::<Vec<_>>(),
            [("team".to_owned(), Lowering::KeepCharges)]
        );
        note(
            &WatchEvent::Delete {
                prev: KeyValue {
                    key: "/registry/core/pods/team/a".to_owned(),
                    value: Bytes::new(),
                    create_revision: 1,
                    mod_revision: 1,
                },
                revision: 2,
            },
            quotas,
            &mut with_quotas,
            &mut touched,
        );
        assert_eq!(touched.get("team"), Some(&Lowering::Allowed));
        assert_eq!(namespace_of("/registry/core/namespaces/team"), None);
    }
}
