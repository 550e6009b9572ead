//! CustomResourceDefinitions created while the server runs: the kinds they define are served
//! like compiled ones, through a schema-driven codec instead of a Rust type.
//!
//! One task owns the catalog. It reads every stored CRD, builds the served [`Registry`] (the
//! kinds registered at start plus one kind per served version of each accepted CRD), swaps it
//! into the state, writes each CRD's `status` (accepted names, the `NamesAccepted` and
//! `Established` conditions, stored versions) and its cleanup finalizer, then waits on a watch of
//! the CRD prefix and does it all again on any change. Being watch-driven, it works the same for
//! one process and for replicas over one etcd.
//!
//! Deleting a CRD (it carries `customresourcecleanup.apiextensions.k8s.io` once accepted) marks
//! it `Terminating`: its kinds stop accepting creates, every object of the resource is deleted
//! (objects with finalizers are marked and waited for), then the finalizer goes and the CRD with
//! it, as apiextensions-apiserver does.
//!
//! Writes to CRDs are checked here too ([`validate_crd`]): the name is `<plural>.<group>`,
//! exactly one version stores objects, the schemas are structural.
//!
//! The catalog the stored CRDs make (names and served kinds) is `catalog`'s, the checks of a
//! CRD write are `validation`'s; this module runs the task, writes the CRDs' status and
//! finalizer, and cleans up after a deleted CRD.
//!
//! May import: what `background` may; `catalog` and `validation` import neither this module
//! nor each other.

mod catalog;
mod validation;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Registry;
use crate::crd::{CustomResourceDefinition, CustomResourceDefinitionNames};
use crate::registry::{RegisteredKind, Validator};
use crate::storage::{Bytes, KeyValue, Storage, WatchEvent};

use crate::server::background::TaskError;
use crate::server::signal;
use crate::server::state::State;
use crate::server::state::keys;
use crate::server::state::release::Feature;

use catalog::{Verdict, catalog, kind_of};
use validation::validate_crd;

/// The group and resource of CRDs themselves.
const GROUP: &str = "apiextensions.k8s.io";
const PLURAL: &str = "customresourcedefinitions";
/// The version CRDs are stored in.
const STORAGE: &str = "apiextensions.k8s.io/v1";

/// The finalizer an accepted CRD carries until its objects are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The served CRD kind (`apiextensions.k8s.io/v1`), if the server serves CRDs.
fn crd_kind(registry: &Registry) -> Option<&RegisteredKind> {
    registry.get(GROUP, "v1", PLURAL)
}

/// The registry to serve at start: `base` with its CRD kind checking CRD writes.
pub(crate) fn prepare(mut base: Registry) -> Registry {
    // Built-in kinds write their quantities in canonical form, as Go's `resource.Quantity`
    // does; custom resources keep the spelling they were sent (upstream stores them verbatim).
    let builtin: Vec<RegisteredKind> = base
        .kinds()
        .filter(|k| crate::server::state::release::is_builtin_group(&k.info.gvk.group))
        .cloned()
        .collect();
    for kind in builtin {
        let codec = Arc::clone(&kind.codec);
        base.insert_kind(RegisteredKind {
            codec: Arc::new(move |value| crate::quantity::canonical_scope(|| codec(value))),
            ..kind
        });
    }
    if let Some(kind) = crd_kind(&base) {
        let checked = RegisteredKind {
            validate: Some(
                Arc::new(|object: &Value, old: Option<&Value>| validate_crd(object, old))
                    as Validator,
            ),
            ..kind.clone()
        };
        base.insert_kind(checked);
    }
    // Another version stored as v1 (1.20's v1beta1) is checked as the v1 it is stored as.
    let others: Vec<RegisteredKind> = base
        .kinds()
        .filter(|k| {
            k.info.gvk.group == GROUP && k.info.plural == PLURAL && k.info.gvk.version != "v1"
        })
        .filter(|k| k.info.family.is_some_and(|f| f.storage == STORAGE))
        .cloned()
        .collect();
    for kind in others {
        let Some(family) = kind.info.family else {
            continue;
        };
        let check = move |object: &Value, old: Option<&Value>| match family
            .convert(object.clone(), STORAGE)
        {
            Ok(stored) => {
                let old = old.and_then(|old| family.convert(old.clone(), STORAGE).ok());
                validate_crd(&stored, old.as_ref())
            }
            Err(_) => Vec::new(),
        };
        base.insert_kind(RegisteredKind {
            validate: Some(Arc::new(check) as Validator),
            ..kind
        });
    }
    base
}

/// A stored CRD, converted to v1 when an earlier kapi stored it as sent in another version.
fn stored_crd(kind: &RegisteredKind, value: &[u8]) -> Option<CustomResourceDefinition> {
    let mut object: Value = serde_json::from_slice(value).ok()?;
    if let Some(family) = kind.info.family
        && object.get("apiVersion").and_then(Value::as_str) != Some(STORAGE)
    {
        object = family.convert(object, STORAGE).ok()?;
    }
    serde_json::from_value(object).ok()
}

/// What one pass over the stored CRDs found.
pub(crate) struct Refreshed {
    /// The revision the CRDs were read at.
    pub(crate) revision: u64,
    /// Whether a deleted CRD still waits for objects held by finalizers: their removal does
    /// not touch any CRD, so the task looks again after a pause instead of waiting on a change.
    pub(crate) pending: bool,
}

/// Reads every CRD, serves the kinds of the accepted ones and brings their status up to date.
pub(crate) async fn refresh(state: &State, base: &Registry) -> Result<Refreshed, TaskError> {
    let Some(kind) = crd_kind(base) else {
        let revision = state.storage.current_revision().await?;
        return Ok(Refreshed {
            revision,
            pending: false,
        });
    };
    let prefix = keys::resource_prefix(&kind.info);
    let listed = state.storage.list(&prefix, None, None, None).await?;
    let mut stored: Vec<(KeyValue, CustomResourceDefinition)> = listed
        .items
        .into_iter()
        .filter_map(|kv| {
            // What does not convert to v1 is no CRD kapi can serve: skipped.
            let crd = stored_crd(kind, &kv.value)?;
            Some((kv, crd))
        })
        .collect();
    // Older CRDs win name conflicts, as upstream's naming controller decides by age.
    stored.sort_by(|(a, x), (b, y)| {
        (&x.metadata.creation_timestamp, a.create_revision)
            .cmp(&(&y.metadata.creation_timestamp, b.create_revision))
    });
    // Whether an update keeps objects whose rules fail only on values it leaves alone.
    let ratchet = state.feature(Feature::CrdValidationRatcheting).is_on();
    let (registry, verdicts) = catalog(base, stored.iter().map(|(_, crd)| crd), ratchet);
    state.set_registry(registry);
    let mut pending = false;
    let mut finished = Vec::new();
    for ((kv, crd), verdict) in stored.iter().zip(&verdicts) {
        match reconcile(state, kv, crd, verdict).await {
            Cleanup::Done => {}
            Cleanup::Waiting => pending = true,
            Cleanup::Finished { object, remaining } => finished.push((kv, object, remaining)),
        }
    }
    if !finished.is_empty() {
        // Stop serving the finished CRDs' kinds before they disappear, so a client that saw
        // the CRD go never finds its kinds still in discovery.
        let gone = |kv: &KeyValue| finished.iter().any(|(done, ..)| done.key == kv.key);
        let still = stored
            .iter()
            .filter(|(kv, _)| !gone(kv))
            .map(|(_, crd)| crd);
        state.set_registry(catalog(base, still, ratchet).0);
        for (kv, object, remaining) in &finished {
            finish(state, kv, object, *remaining).await;
        }
    }
    Ok(Refreshed {
        revision: listed.revision,
        pending,
    })
}

/// How long the task waits before looking again at a deleted CRD whose objects remain.
const CLEANUP_RETRY: Duration = Duration::from_millis(500);

/// Runs [`refresh`] after every change to a CRD until `stop`.
pub(crate) fn spawn(
    state: State,
    base: Arc<Registry>,
    first: Refreshed,
    stop: signal::Receiver<bool>,
) {
    let Some(kind) = crd_kind(&base) else {
        return;
    };
    let prefix = keys::resource_prefix(&kind.info);
    tokio::spawn(async move {
        let mut stop = stop;
        let Refreshed {
            mut revision,
            mut pending,
        } = first;
        loop {
            let changed = async {
                let mut watch = state.storage.watch(&prefix, revision).await.ok()?;
                loop {
                    match watch.next().await? {
                        Ok(WatchEvent::Progress { .. }) => continue,
                        Ok(_) => return Some(()),
                        Err(_) => return None,
                    }
                }
            };
            tokio::select! {
                _ = stop.changed() => return,
                changed = changed => {
                    if changed.is_none() {
                        // The watch failed (compacted, engine hiccup): re-read after a pause.
                        tokio::time::sleep(CLEANUP_RETRY).await;
                    }
                }
                _ = tokio::time::sleep(CLEANUP_RETRY), if pending => {}
            }
            match refresh(&state, &base).await {
                Ok(done) => (revision, pending) = (done.revision, done.pending),
                Err(error) => {
                    tracing::warn!(%error, "reading the CustomResourceDefinitions failed; retrying");
                    tokio::time::sleep(CLEANUP_RETRY).await;
                }
            }
        }
    });
}

/// Where the cleanup of a deleted CRD stands.
#[derive(Debug, PartialEq)]
enum Cleanup {
    /// Nothing to wait for: the CRD is not being deleted.
    Done,
    /// Objects held by finalizers remain.
    Waiting,
    /// Every object is gone: the CRD, without the cleanup finalizer, is to be written back
    /// (or deleted when no finalizer remains) once its kinds are no longer served.
    Finished { object: Value, remaining: usize },
}

/// Brings one CRD's stored status and finalizers up to date with `verdict`, and runs the
/// cleanup of a CRD being deleted. A write that loses a race is left to the next refresh,
/// which the winning write's watch event triggers.
async fn reconcile(
    state: &State,
    kv: &KeyValue,
    crd: &CustomResourceDefinition,
    verdict: &Verdict,
) -> Cleanup {
    let Ok(mut object) = serde_json::from_slice::<Value>(&kv.value) else {
        return Cleanup::Done;
    };
    let terminating = crd.metadata.deletion_timestamp.is_some();
    let wanted = status_for(crd, verdict, &object);
    let status_changed = object.get("status") != Some(&wanted);
    object["status"] = wanted;
    if !terminating {
        let finalizer_added = verdict.serving.is_some() && add_finalizer(&mut object);
        if status_changed || finalizer_added {
            let _ = write(state, kv, &object).await;
        }
        return Cleanup::Done;
    }
    let cleaned = match &verdict.serving {
        Some(names) => delete_instances(state, crd, names).await,
        None => true,
    };
    if !cleaned {
        if status_changed {
            let _ = write(state, kv, &object).await;
        }
        return Cleanup::Waiting;
    }
    let remaining = remove_finalizer(&mut object);
    Cleanup::Finished { object, remaining }
}

/// Ends a cleanup: the CRD goes when no other finalizer holds it.
async fn finish(state: &State, kv: &KeyValue, object: &Value, remaining: usize) {
    if remaining == 0 {
        let _ = state.storage.delete(&kv.key, Some(kv.mod_revision)).await;
    } else {
        let _ = write(state, kv, object).await;
    }
}

async fn write(state: &State, kv: &KeyValue, object: &Value) -> Result<(), TaskError> {
    let bytes = serde_json::to_vec(object).map_err(TaskError::Encode)?;
    state
        .storage
        .update(&kv.key, Bytes::from(bytes), kv.mod_revision)
        .await
        .map(|_| ())
        .map_err(|source| TaskError::Update {
            key: kv.key.clone(),
            source,
        })
}

/// The conditions this controller owns; others in a CRD's status are kept as they are.
const OWN_CONDITIONS: [&str; 3] = ["NamesAccepted", "Established", "Terminating"];

/// The status a CRD should carry: upstream's conditions (keeping the transition time of a
/// condition whose status did not change, and conditions others set), the accepted names and
/// the stored versions.
fn status_for(crd: &CustomResourceDefinition, verdict: &Verdict, stored: &Value) -> Value {
    let previous: Vec<Value> = stored
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = json!(crate::Time::now());
    let condition = |type_: &str, status: &str, reason: &str, message: &str| -> Value {
        let since = previous
            .iter()
            .find(|c| c["type"] == type_ && c["status"] == status)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| now.clone());
        json!({
            "type": type_, "status": status, "lastTransitionTime": since,
            "reason": reason, "message": message,
        })
    };
    let mut conditions = vec![match &verdict.conflict {
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
    }];
    conditions.push(match &verdict.serving {
        Some(_) => condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
        None => condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        ),
    });
    if crd.metadata.deletion_timestamp.is_some() {
        conditions.push(condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ));
    }
    conditions.extend(
        previous
            .iter()
            .filter(|c| {
                !OWN_CONDITIONS
                    .iter()
                    .any(|own| c.get("type").and_then(Value::as_str) == Some(own))
            })
            .cloned(),
    );
    let accepted = match &verdict.serving {
        Some(names) => serde_json::to_value(names).unwrap_or(Value::Null),
        None => json!({"plural": "", "kind": ""}),
    };
    let mut stored_versions: Vec<String> = stored
        .pointer("/status/storedVersions")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    if let Some(version) = crd.storage_version()
        && !stored_versions.contains(&version.name)
    {
        stored_versions.push(version.name.clone());
    }
    json!({
        "conditions": conditions,
        "acceptedNames": accepted,
        "storedVersions": stored_versions,
    })
}

fn finalizers_of(object: &mut Value) -> Option<&mut Vec<Value>> {
    let meta = object.get_mut("metadata")?.as_object_mut()?;
    meta.entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
}

/// Adds the cleanup finalizer; whether it was missing.
fn add_finalizer(object: &mut Value) -> bool {
    match finalizers_of(object) {
        Some(list) if !list.iter().any(|f| f == CLEANUP_FINALIZER) => {
            list.push(Value::from(CLEANUP_FINALIZER));
            true
        }
        _ => false,
    }
}

/// Removes the cleanup finalizer; how many finalizers remain.
fn remove_finalizer(object: &mut Value) -> usize {
    let Some(list) = finalizers_of(object) else {
        return 0;
    };
    list.retain(|f| f != CLEANUP_FINALIZER);
    let remaining = list.len();
    if remaining == 0
        && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("finalizers");
    }
    remaining
}

/// How many objects one cleanup pass reads at a time.
const CLEANUP_PAGE: usize = 500;

/// Deletes every object of a terminating CRD's resource; objects with finalizers get a
/// `deletionTimestamp` and are left to their controllers. Whether none remain: a delete that
/// loses a race, or a create that slipped in with an older catalog, leaves something behind,
/// so only an empty read of the whole resource counts.
async fn delete_instances(
    state: &State,
    crd: &CustomResourceDefinition,
    names: &CustomResourceDefinitionNames,
) -> bool {
    let Some(version) = crd.spec.versions.first() else {
        return true;
    };
    let prefix = keys::resource_prefix(&kind_of(crd, names, &version.name, false).info);
    let mut start: Option<String> = None;
    let mut found = false;
    loop {
        let Ok(page) = state
            .storage
            .list(&prefix, None, start.as_deref(), Some(CLEANUP_PAGE))
            .await
        else {
            return false;
        };
        for kv in &page.items {
            found = true;
            let mut object = serde_json::from_slice::<Value>(&kv.value).unwrap_or(Value::Null);
            let held = object
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
            if !held {
                let _ = state.storage.delete(&kv.key, Some(kv.mod_revision)).await;
            } else if object.pointer("/metadata/deletionTimestamp").is_none()
                && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.insert("deletionTimestamp".into(), json!(crate::Time::now()));
                let _ = write(state, kv, &object).await;
            }
        }
        match page.items.last() {
            Some(last) if page.more => start = Some(keys::after(&last.key)),
            _ => break,
        }
    }
    // Whatever was found is gone only if a fresh read finds nothing.
    !found
        || state
            .storage
            .count(&prefix)
            .await
            .is_ok_and(|remaining| remaining == 0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::conversion::{Family, Rule, Step, Version};

    static CRDS: Family = Family {
        resource: PLURAL,
        storage: STORAGE,
        versions: &[Version {
            api_version: "apiextensions.k8s.io/v1beta1",
            steps: &[Step::rule("", Rule::CustomResourceDefinitionV1beta1)],
        }],
    };

    /// A CRD an earlier kapi stored as it was sent, in v1beta1, is read as the v1 it converts to.
    #[test]
    fn crds_stored_as_v1beta1_read_as_v1() {
        let mut kind = crate::registry::entry_of::<CustomResourceDefinition>();
        let mut info = (*kind.info).clone();
        info.family = Some(&CRDS);
        kind.info = Arc::new(info);
        let stored = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "backups.example.com"},
            "spec": {"group": "example.com", "version": "v1", "scope": "Namespaced",
                     "names": {"plural": "backups", "kind": "Backup"},
                     "validation": {"openAPIV3Schema": {"type": "object"}}},
        });
        let crd = stored_crd(&kind, &serde_json::to_vec(&stored).unwrap()).unwrap();
        assert_eq!(crd.spec.versions.len(), 1);
        assert_eq!(crd.spec.versions[0].name, "v1");
        assert!(crd.spec.versions[0].storage && crd.spec.versions[0].schema.is_some());
    }
}
