//! Upstream's `ResourceQuota` admission plugin (`plugin/pkg/admission/resourcequota`, with
//! the evaluators of `pkg/quota/v1/evaluator/core` and the generic `count/<resource>`
//! evaluator), on creates in a namespace, after validation: against every ResourceQuota of the
//! namespace whose `spec.hard` names something the new object uses, the namespace's usage plus
//! the object's must stay within the limit, else 403 `exceeded quota: <name>, requested: ...,
//! used: ..., limited: ...`; a pod without a request or limit a quota constrains is refused
//! with `failed quota: <name>: must specify ...`. An admitted create (not a dry run) writes the
//! quota's `status.hard` and `status.used` as upstream's admission does.
//!
//! Usage is counted from the stored objects at each admission (what upstream's quota
//! controller recalculates), so it also reflects deletions; kapi has no quota controller, so
//! `status.used` moves only when something is admitted. Scopes and scope selectors are not
//! applied yet (a scoped quota is skipped), nor are updates.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::quantity::{Format, Quantity};
use crate::storage::{Bytes, Storage, UpdateError};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::state::keys::prefix_of;

use super::{forbidden, storage};

/// Usage of one object or a namespace, by quota resource name.
type Usage = BTreeMap<String, Quantity>;

/// The core resources counted under their own name, besides `count/<resource>`.
const LEGACY_COUNTED: [&str; 7] = [
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

/// A pod's compute resources a quota may constrain: the quota name, the container field and
/// resource it sums.
const POD_COMPUTE: [(&str, &str, &str); 6] = [
    ("requests.cpu", "requests", "cpu"),
    ("requests.memory", "requests", "memory"),
    ("cpu", "requests", "cpu"),
    ("memory", "requests", "memory"),
    ("limits.cpu", "limits", "cpu"),
    ("limits.memory", "limits", "memory"),
];

/// How often the status write is retried after losing a race.
const RETRIES: usize = 8;

/// Checks a created object against the namespace's quotas and charges it.
pub(super) async fn check_create(
    call: &Call,
    object: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let Some(namespace) = call.target.namespace.as_deref() else {
        return Ok(());
    };
    if call.target.sub.is_some() || !call.info().is_namespaced() {
        return Ok(());
    }
    let quotas = storage::list(call, "", "resourcequotas", Some(namespace)).await?;
    if quotas.is_empty() {
        return Ok(());
    }
    let (group, plural) = (call.target.group(), call.target.plural());
    let delta = usage_of(group, plural, object);
    let mut namespace_usage: Option<Usage> = None;
    for quota in &quotas {
        if quota.pointer("/spec/scopes").is_some_and(non_empty)
            || quota.pointer("/spec/scopeSelector").is_some()
        {
            continue;
        }
        let quota_name = quota
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let hard = quantities(quota.pointer("/spec/hard"));
        if plural == "pods" && group.is_empty() {
            let missing = missing_compute(object, &hard);
            if !missing.is_empty() {
                return Err(forbidden(
                    call,
                    name,
                    &format!(
                        "failed quota: {quota_name}: must specify {}",
                        missing.join(",")
                    ),
                ));
            }
        }
        let relevant: Vec<&String> = hard.keys().filter(|k| delta.contains_key(*k)).collect();
        if relevant.is_empty() {
            continue;
        }
        if namespace_usage.is_none() {
            let existing = storage::list(call, group, plural, Some(namespace)).await?;
            let mut total = Usage::new();
            for item in &existing {
                add(&mut total, &usage_of(group, plural, item));
            }
            namespace_usage = Some(total);
        }
        let used = namespace_usage.clone().unwrap_or_default();
        let mut after = Usage::new();
        let mut exceeded = Vec::new();
        for key in relevant {
            let before = used.get(key).copied().unwrap_or_default();
            let total = before
                .checked_add(delta[key])
                .unwrap_or(Quantity::from_i64(i64::MAX, Format::DecimalSi));
            if hard.get(key).is_some_and(|limit| total > *limit) {
                exceeded.push(key.clone());
            }
            after.insert(key.clone(), total);
        }
        if !exceeded.is_empty() {
            let show = |of: &dyn Fn(&String) -> Quantity| {
                exceeded
                    .iter()
                    .map(|k| format!("{k}={}", of(k)))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            return Err(forbidden(
                call,
                name,
                &format!(
                    "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
                    show(&|k| delta[k]),
                    show(&|k| used.get(k).copied().unwrap_or_default()),
                    show(&|k| hard[k]),
                ),
            ));
        }
        if !dry_run {
            charge(call, namespace, quota_name, &after).await?;
        }
    }
    Ok(())
}

fn non_empty(v: &Value) -> bool {
    v.as_array().is_some_and(|a| !a.is_empty())
}

/// Writes `used` into the quota's status (with `status.hard` from its spec), retrying when the
/// quota changed meanwhile.
async fn charge(
    call: &Call,
    namespace: &str,
    quota_name: &str,
    used: &Usage,
) -> Result<(), ApiError> {
    let key = format!(
        "{}{namespace}/{quota_name}",
        prefix_of("", "resourcequotas")
    );
    let store = &call.state.storage;
    for _ in 0..RETRIES {
        let Some(kv) = store.get(&key, None).await.map_err(ApiError::from_read)? else {
            return Ok(());
        };
        let mut quota: Value = serde_json::from_slice(&kv.value).map_err(ApiError::internal)?;
        let hard = quota.pointer("/spec/hard").cloned().unwrap_or(json!({}));
        let mut status_used = quota
            .pointer("/status/used")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in used {
            status_used.insert(k.clone(), Value::from(v.to_string()));
        }
        if let Value::Object(map) = &mut quota {
            map.insert("status".into(), json!({"hard": hard, "used": status_used}));
        }
        let bytes = serde_json::to_vec(&quota).map_err(ApiError::internal)?;
        match store
            .update(&key, Bytes::from(bytes), kv.mod_revision)
            .await
        {
            Ok(_) | Err(UpdateError::NotFound) => return Ok(()),
            Err(UpdateError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_update(e, call.subject(quota_name))),
        }
    }
    Ok(())
}

/// The quantities of a resource list.
fn quantities(list: Option<&Value>) -> Usage {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.parse().ok()?)))
        .collect()
}

fn add(total: &mut Usage, more: &Usage) {
    for (k, v) in more {
        let entry = total.entry(k.clone()).or_default();
        *entry = entry.checked_add(*v).unwrap_or(*entry);
    }
}

fn one() -> Quantity {
    Quantity::from_i64(1, Format::DecimalSi)
}

/// What one object uses: `count/<resource>[.<group>]`, the legacy core counts, and the
/// evaluators' resources of pods (compute, unless terminal), services (node ports, load
/// balancers) and claims (storage).
fn usage_of(group: &str, plural: &str, object: &Value) -> Usage {
    let mut usage = Usage::new();
    let phase = object.pointer("/status/phase").and_then(Value::as_str);
    if group.is_empty() && plural == "pods" && matches!(phase, Some("Succeeded" | "Failed")) {
        return usage;
    }
    let count = if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    };
    usage.insert(count, one());
    if !group.is_empty() || !LEGACY_COUNTED.contains(&plural) {
        return usage;
    }
    usage.insert(plural.to_owned(), one());
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    match plural {
        "pods" => {
            for (key, field, resource) in POD_COMPUTE {
                if let Some(total) = pod_total(&spec, field, resource) {
                    usage.insert(key.to_owned(), total);
                }
            }
        }
        "services" => {
            let kind = spec
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let ports = spec
                .get("ports")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let node_ports = if matches!(kind, "NodePort" | "LoadBalancer") {
                ports
            } else {
                0
            };
            let balancers = i64::from(kind == "LoadBalancer");
            usage.insert(
                "services.nodeports".into(),
                Quantity::from_i64(
                    i64::try_from(node_ports).unwrap_or(i64::MAX),
                    Format::DecimalSi,
                ),
            );
            usage.insert(
                "services.loadbalancers".into(),
                Quantity::from_i64(balancers, Format::DecimalSi),
            );
        }
        "persistentvolumeclaims" => {
            if let Some(storage) = quantities(spec.pointer("/resources/requests")).remove("storage")
            {
                usage.insert("requests.storage".into(), storage);
            }
        }
        _ => {}
    }
    usage
}

/// A pod's total of `resources.<field>.<resource>`: the containers' sum, or an init
/// container's when larger (upstream's `PodRequests`); `None` when no container sets it.
fn pod_total(spec: &Value, field: &str, resource: &str) -> Option<Quantity> {
    let of = |c: &Value| -> Option<Quantity> {
        c.get("resources")?
            .get(field)?
            .get(resource)?
            .as_str()?
            .parse()
            .ok()
    };
    let list = |name: &str| {
        spec.get(name)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut found = false;
    let mut sum = Quantity::default();
    for container in list("containers") {
        if let Some(q) = of(&container) {
            found = true;
            sum = sum.checked_add(q).unwrap_or(sum);
        }
    }
    for init in list("initContainers") {
        if let Some(q) = of(&init) {
            found = true;
            sum = sum.max(q);
        }
    }
    found.then_some(sum)
}

/// The compute resources `hard` constrains that a container of the pod does not set
/// (upstream's pod evaluator `Constraints`), sorted.
fn missing_compute(pod: &Value, hard: &Usage) -> Vec<String> {
    let spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    let containers: Vec<Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect();
    let mut missing: Vec<String> = POD_COMPUTE
        .iter()
        .filter(|(key, _, _)| hard.contains_key(*key))
        .filter(|(_, field, resource)| {
            containers.iter().any(|c| {
                c.get("resources")
                    .and_then(|r| r.get(*field))
                    .and_then(|f| f.get(*resource))
                    .is_none()
            })
        })
        .map(|(key, _, _)| (*key).to_owned())
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pod evaluator's usage: counts, and requests summed over containers.
    #[test]
    fn pods_use_their_count_and_compute() {
        let pod = json!({"spec": {"containers": [
            {"resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "500m"}}},
        ]}});
        let usage = usage_of("", "pods", &pod);
        let shown: BTreeMap<&str, String> = usage
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_string()))
            .collect();
        assert_eq!(shown["pods"], "1");
        assert_eq!(shown["count/pods"], "1");
        assert_eq!(shown["requests.cpu"], "750m");
        assert_eq!(shown["cpu"], "750m");
        assert_eq!(shown["limits.memory"], "1Gi");
        let done = json!({"status": {"phase": "Succeeded"}});
        assert!(usage_of("", "pods", &done).is_empty());
        let deployment = usage_of("apps", "deployments", &json!({}));
        assert_eq!(
            deployment.keys().collect::<Vec<_>>(),
            ["count/deployments.apps"]
        );
    }

    /// The pod evaluator's `Constraints`: every container must set what the quota limits.
    #[test]
    fn constrained_compute_must_be_specified() {
        let hard = quantities(Some(
            &json!({"limits.cpu": "2", "requests.memory": "1Gi", "pods": "3"}),
        ));
        let pod = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "1"}}}]}});
        assert_eq!(missing_compute(&pod, &hard), ["requests.memory"]);
    }
}
