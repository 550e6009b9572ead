//! RBAC's moving parts: the bootstrap roles and bindings, made at start and completed where
//! they carry `rbac.authorization.kubernetes.io/autoupdate: "true"` (upstream's
//! `rbac/bootstrap-roles` post-start hook); ClusterRole aggregation, which fills a role with an
//! `aggregationRule` with the rules of the roles its selectors match, as
//! kube-controller-manager's `clusterroleaggregation` controller does; and the policy
//! authorization reads (`auth::rbac::Policy`), rebuilt from the store on every change of a
//! Role, ClusterRole or binding.
//!
//! Only for a catalog that serves `rbac.authorization.k8s.io/v1`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::stream::{SelectAll, StreamExt as _};
use serde_json::{Value, json};
use tokio::sync::watch as signal;

use crate::meta::LabelSelector;
use crate::storage::{CreateError, KeyValue, Storage, UpdateError};

use crate::server::auth::bootstrap::{self, AUTOUPDATE};
use crate::server::auth::rbac::{Policy, PolicyRule, Stored, Subject};
use crate::server::background::{TaskError, spawn_follower};
use crate::server::state::{State, keys};

const GROUP: &str = "rbac.authorization.k8s.io";

/// The four resources the policy is made of, in [`Stored`]'s order.
const RESOURCES: [&str; 4] = [
    "clusterroles",
    "roles",
    "clusterrolebindings",
    "rolebindings",
];

/// How long the task waits before reading everything again after a watch failed.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// The store prefix of an RBAC resource, if the catalog serves it.
fn prefix(state: &State, resource: &str) -> Option<String> {
    let registry = state.registry();
    registry
        .get(GROUP, "v1", resource)
        .map(|kind| keys::resource_prefix(&kind.info))
}

/// Makes the bootstrap roles and bindings of the release served that are missing (the
/// namespaced ones in `kube-system` and `kube-public`, made just before), and adds to those
/// marked for automatic update the rules or subjects they lack.
pub(crate) async fn bootstrap(state: &State) -> Result<(), TaskError> {
    let version = state.kube_version;
    let sets = [
        ("clusterroles", bootstrap::cluster_roles(version)),
        (
            "clusterrolebindings",
            bootstrap::cluster_role_bindings(version),
        ),
        ("roles", bootstrap::roles(version)),
        ("rolebindings", bootstrap::role_bindings()),
    ];
    let mut writes = Vec::new();
    for (resource, objects) in sets {
        let Some(prefix) = prefix(state, resource) else {
            continue;
        };
        let mut stored = stored_under(state, &prefix, &objects).await?;
        for object in objects {
            let metadata = &object["metadata"];
            let name = metadata["name"].as_str().unwrap_or_default();
            let key = match metadata["namespace"].as_str() {
                Some(namespace) => format!("{prefix}{namespace}/{name}"),
                None => format!("{prefix}{name}"),
            };
            let current = stored.remove(&key);
            writes.push(async move { ensure(state, &key, object, current).await });
        }
    }
    // All at once: the embedded store commits concurrent writes together, so a first start
    // pays a few commits for the hundred-odd objects rather than one each.
    futures_util::future::try_join_all(writes).await?;
    Ok(())
}

/// The stored objects where `objects` go, by key: one listing of the resource's prefix, or of
/// each namespace `objects` name, rather than a read per object.
async fn stored_under(
    state: &State,
    prefix: &str,
    objects: &[Value],
) -> Result<BTreeMap<String, KeyValue>, TaskError> {
    let namespaces: BTreeSet<&str> = objects
        .iter()
        .filter_map(|o| o["metadata"]["namespace"].as_str())
        .collect();
    let prefixes: Vec<String> = if namespaces.is_empty() {
        vec![prefix.to_owned()]
    } else {
        namespaces
            .iter()
            .map(|namespace| format!("{prefix}{namespace}/"))
            .collect()
    };
    let mut stored = BTreeMap::new();
    for prefix in prefixes {
        let listed = state.storage.list(&prefix, None, None, None).await?;
        stored.extend(listed.items.into_iter().map(|kv| (kv.key.clone(), kv)));
    }
    Ok(stored)
}

/// Creates `wanted` at `key` when nothing is stored there (`stored`), or completes the stored
/// object when it allows it.
async fn ensure(
    state: &State,
    key: &str,
    mut wanted: Value,
    stored: Option<KeyValue>,
) -> Result<(), TaskError> {
    let storage = &state.storage;
    let Some(kv) = stored else {
        wanted["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
        wanted["metadata"]["creationTimestamp"] = json!(crate::time::Time::now());
        let bytes = serde_json::to_vec(&wanted).map_err(TaskError::Encode)?;
        return match storage.create(key, bytes.into()).await {
            Ok(_) | Err(CreateError::AlreadyExists { .. }) => Ok(()),
            Err(source) => Err(TaskError::Create {
                key: key.to_owned(),
                source,
            }),
        };
    };
    let mut stored: Value =
        serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
            key: key.to_owned(),
            source,
        })?;
    let autoupdate = stored
        .pointer(&format!(
            "/metadata/annotations/{}",
            AUTOUPDATE.replace('/', "~1")
        ))
        .and_then(Value::as_str);
    if autoupdate != Some("true") {
        return Ok(());
    }
    let changed = add_missing::<PolicyRule>(&mut stored, &wanted, "rules")
        | add_missing::<Subject>(&mut stored, &wanted, "subjects");
    if !changed {
        return Ok(());
    }
    let bytes = serde_json::to_vec(&stored).map_err(TaskError::Encode)?;
    match storage.update(key, bytes.into(), kv.mod_revision).await {
        // Changed meanwhile: the next start completes it.
        Ok(_) | Err(UpdateError::Conflict { .. }) => Ok(()),
        Err(source) => Err(TaskError::Update {
            key: key.to_owned(),
            source,
        }),
    }
}

/// Appends to `stored[field]` the entries of `wanted[field]` it lacks; answers whether any.
fn add_missing<T>(stored: &mut Value, wanted: &Value, field: &str) -> bool
where
    T: serde::de::DeserializeOwned + serde::Serialize + PartialEq,
{
    // What every start meets: the stored entries are the wanted ones.
    if stored.get(field) == wanted.get(field) {
        return false;
    }
    let decode = |value: Option<&Value>| -> Vec<T> {
        value
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    };
    let mut have: Vec<T> = decode(stored.get(field));
    let want: Vec<T> = decode(wanted.get(field));
    let before = have.len();
    for entry in want {
        if !have.contains(&entry) {
            have.push(entry);
        }
    }
    if have.len() == before {
        return false;
    }
    stored[field] = serde_json::to_value(have).unwrap_or_default();
    true
}

/// Reads every RBAC object at one revision; answers them and the revision.
async fn read(state: &State) -> Result<(Stored, u64), TaskError> {
    let mut revision = None;
    let mut lists: Vec<Vec<Value>> = Vec::new();
    for resource in RESOURCES {
        let Some(prefix) = prefix(state, resource) else {
            lists.push(Vec::new());
            continue;
        };
        let listed = state.storage.list(&prefix, revision, None, None).await?;
        revision = Some(listed.revision);
        let mut values = Vec::with_capacity(listed.items.len());
        for kv in listed.items {
            let value = serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                key: kv.key.clone(),
                source,
            })?;
            values.push(value);
        }
        lists.push(values);
    }
    let mut lists = lists.into_iter();
    let mut next = || lists.next().unwrap_or_default();
    let stored = Stored {
        cluster_roles: next(),
        roles: next(),
        cluster_role_bindings: next(),
        role_bindings: next(),
    };
    let revision = match revision {
        Some(revision) => revision,
        None => state.storage.current_revision().await?,
    };
    Ok((stored, revision))
}

/// Brings aggregated ClusterRoles up to date, then hands the policy to authorization;
/// answers the revision read at.
pub(crate) async fn refresh(state: &State) -> Result<u64, TaskError> {
    let (stored, revision) = read(state).await?;
    aggregate(state, &stored.cluster_roles).await?;
    state.access.set_policy(Policy::new(stored));
    Ok(revision)
}

/// The rules a ClusterRole with an aggregation rule should hold: those of every other
/// ClusterRole its selectors match, roles in name order, each rule once (upstream's
/// `clusterroleaggregation` controller). `None` for a role without an aggregation rule.
fn aggregated_rules(role: &Value, roles: &BTreeMap<&str, &Value>) -> Option<Vec<PolicyRule>> {
    let selectors = role.pointer("/aggregationRule/clusterRoleSelectors")?;
    let selectors: Vec<LabelSelector> = serde_json::from_value(selectors.clone()).ok()?;
    let own = role.pointer("/metadata/name").and_then(Value::as_str);
    let mut rules: Vec<PolicyRule> = Vec::new();
    for (name, other) in roles {
        if Some(*name) == own {
            continue;
        }
        let labels: BTreeMap<String, String> = other
            .pointer("/metadata/labels")
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .unwrap_or_default();
        if !selectors
            .iter()
            .any(|s| !s.is_empty() && s.matches(&labels).unwrap_or(false))
        {
            continue;
        }
        let theirs: Vec<PolicyRule> = other
            .get("rules")
            .and_then(|r| serde_json::from_value(r.clone()).ok())
            .unwrap_or_default();
        for rule in theirs {
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
    }
    Some(rules)
}

/// Writes the rules of every aggregated ClusterRole whose stored rules differ.
async fn aggregate(state: &State, cluster_roles: &[Value]) -> Result<(), TaskError> {
    let Some(prefix) = prefix(state, "clusterroles") else {
        return Ok(());
    };
    let by_name: BTreeMap<&str, &Value> = cluster_roles
        .iter()
        .filter_map(|role| Some((role.pointer("/metadata/name")?.as_str()?, role)))
        .collect();
    for (name, role) in &by_name {
        let Some(rules) = aggregated_rules(role, &by_name) else {
            continue;
        };
        let current: Vec<PolicyRule> = role
            .get("rules")
            .and_then(|r| serde_json::from_value(r.clone()).ok())
            .unwrap_or_default();
        if current == rules {
            continue;
        }
        let key = format!("{prefix}{name}");
        let Some(kv) = state.storage.get(&key, None).await? else {
            continue;
        };
        let mut object: Value =
            serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                key: key.clone(),
                source,
            })?;
        object["rules"] = serde_json::to_value(&rules).map_err(TaskError::Encode)?;
        let bytes = serde_json::to_vec(&object).map_err(TaskError::Encode)?;
        match state
            .storage
            .update(&key, bytes.into(), kv.mod_revision)
            .await
        {
            // Changed meanwhile: its watch event brings the task here again.
            Ok(_) | Err(UpdateError::Conflict { .. } | UpdateError::NotFound) => {}
            Err(source) => return Err(TaskError::Update { key, source }),
        }
    }
    Ok(())
}

/// Keeps the policy from `revision` on (see [`refresh`]), until `stop`.
pub(crate) fn spawn(state: State, revision: u64, stop: signal::Receiver<bool>) {
    let follow = |state: State, from| async move { follow(&state, from).await };
    spawn_follower(
        state,
        revision,
        stop,
        RESYNC_AFTER,
        "keeping the RBAC policy",
        follow,
    );
}

/// Reads the policy again (unless `from` says where the last read was), then again after
/// every change to an RBAC object; returns when a watch ends.
async fn follow(state: &State, from: Option<u64>) -> Result<(), TaskError> {
    let revision = match from {
        Some(revision) => revision,
        None => refresh(state).await?,
    };
    let mut changes = SelectAll::new();
    for resource in RESOURCES {
        if let Some(prefix) = prefix(state, resource) {
            match state.storage.watch_without_prev(&prefix, revision).await {
                Ok(stream) => changes.push(stream),
                Err(_) => return Ok(()),
            }
        }
    }
    if changes.is_empty() {
        return Ok(());
    }
    while let Some(event) = changes.next().await {
        if event.is_err() {
            return Ok(());
        }
        // Changes that arrived together make one read.
        while let Some(Some(more)) = changes.next().now_or_never() {
            if more.is_err() {
                return Ok(());
            }
        }
        refresh(state).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_roles_collect_the_rules_of_the_roles_they_select() {
        let roles = [
            json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}}),
            json!({"metadata": {"name": "b-extra", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
                "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}),
            json!({"metadata": {"name": "a-base", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                          {"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}),
            json!({"metadata": {"name": "unrelated"}, "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
        ];
        let by_name: BTreeMap<&str, &Value> = roles
            .iter()
            .map(|r| (r["metadata"]["name"].as_str().unwrap(), r))
            .collect();
        let rules = aggregated_rules(&roles[0], &by_name).unwrap();
        let resources: Vec<&str> = rules.iter().map(|r| r.resources[0].as_str()).collect();
        assert_eq!(resources, ["pods", "widgets"], "name order, each rule once");
        assert_eq!(aggregated_rules(&roles[1], &by_name), None);
    }

    #[test]
    fn autoupdated_objects_get_what_they_lack_and_keep_what_they_have() {
        let mut stored = json!({"subjects": [{"kind": "Group", "name": "extra"}]});
        let wanted = json!({"subjects": [{"kind": "Group", "name": "system:masters"}]});
        assert!(add_missing::<Subject>(&mut stored, &wanted, "subjects"));
        assert_eq!(stored["subjects"].as_array().unwrap().len(), 2);
        assert!(!add_missing::<Subject>(&mut stored, &wanted, "subjects"));
    }
}
