//! Upstream's `ResourceQuota` admission plugin (`plugin/pkg/admission/resourcequota`, with
//! the evaluators of `pkg/quota/v1/evaluator/core` and the generic `count/<resource>`
//! evaluator), on creates and updates in a namespace, after validation: against every ResourceQuota of the
//! namespace whose `spec.hard` names something the new object uses, the namespace's usage plus
//! the object's must stay within the limit, else 403 `exceeded quota: <name>, requested: ...,
//! used: ..., limited: ...`; a pod without a request or limit a quota constrains is refused
//! with `failed quota: <name>: must specify ...`. An admitted create (not a dry run) writes the
//! quota's `status.hard` and `status.used` as upstream's admission does.
//!
//! Usage is counted from the stored objects at each admission, so it also reflects deletions;
//! the quota controller (`background::resource_quota`) keeps `status.used` up to date between
//! admissions. A scoped quota (`scopes`, `scopeSelector`) holds only the pods in its scopes.
//! An update is checked for what it uses beyond the old object; of the subresources, a pod's
//! `resize` is (the pod evaluator handles it), the others are not.

use serde_json::{Value, json};

use crate::quantity::{Format, Quantity};
use crate::storage::{Bytes, Storage, UpdateError};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::http::path::Subresource;
use crate::server::objects::quota::{Usage, add, in_scopes, missing_compute, quantities, usage_of};
use crate::server::state::keys::prefix_of;

use super::{forbidden, storage};

/// How often the status write is retried after losing a race.
const RETRIES: usize = 8;

/// Checks a created object against the namespace's quotas and charges it.
pub(super) async fn check_create(
    call: &Call,
    object: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let (group, plural) = (call.target.group(), call.target.plural());
    let delta = usage_of(group, plural, object);
    check(call, object, &delta, name, dry_run).await
}

/// Checks an update against the namespace's quotas for what it uses beyond the old object (a
/// Service that becomes a NodePort, a claim that grows), and charges that; an update that
/// uses nothing more is not checked, as upstream's evaluator subtracts the old usage.
pub(super) async fn check_update(
    call: &Call,
    object: &Value,
    old: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    if !evaluated(call) {
        return Ok(());
    }
    let (group, plural) = (call.target.group(), call.target.plural());
    let before = usage_of(group, plural, old);
    let mut delta = Usage::new();
    for (key, after) in usage_of(group, plural, object) {
        let was = before.get(&key).copied().unwrap_or_default();
        if after > was
            && let Some(more) = after.checked_sub(was)
        {
            delta.insert(key, more);
        }
    }
    if delta.is_empty() {
        return Ok(());
    }
    check(call, object, &delta, name, dry_run).await
}

/// Whether the write is one quota evaluates: the main resource's, or of the subresources a pod's
/// `resize` (the pod evaluator's `Handles`).
fn evaluated(call: &Call) -> bool {
    matches!(call.target.sub, None | Some(Subresource::Resize))
}

/// Checks `delta`, what `object` adds to its namespace's usage, against every quota of the
/// namespace whose scopes hold it, and charges it unless `dry_run`.
async fn check(
    call: &Call,
    object: &Value,
    delta: &Usage,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let Some(namespace) = call.target.namespace.as_deref() else {
        return Ok(());
    };
    if !evaluated(call) || !call.info().is_namespaced() {
        return Ok(());
    }
    // A catalog without ResourceQuotas (a test server of one's own kinds) holds none: no need
    // to look on every create.
    if call.registry.get("", "v1", "resourcequotas").is_none() {
        return Ok(());
    }
    let quotas = storage::list(call, "", "resourcequotas", Some(namespace)).await?;
    if quotas.is_empty() {
        return Ok(());
    }
    let (group, plural) = (call.target.group(), call.target.plural());
    let mut existing: Option<Vec<Value>> = None;
    for quota in &quotas {
        if !in_scopes(quota, group, plural, object) {
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
        if existing.is_none() {
            existing = Some(storage::list(call, group, plural, Some(namespace)).await?);
        }
        let mut used = Usage::new();
        for item in existing.iter().flatten() {
            if in_scopes(quota, group, plural, item) {
                add(&mut used, &usage_of(group, plural, item));
            }
        }
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
