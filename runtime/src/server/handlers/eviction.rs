//! `POST .../pods/<name>/eviction`: an `Eviction` deletes a pod unless a PodDisruptionBudget
//! forbids it, which is what `kubectl drain` and cluster autoscalers use. As upstream's
//! `EvictionREST` (`pkg/registry/core/pod/storage/eviction.go`):
//!
//! - a pod that is terminal, pending or already being deleted is deleted at once (a pending
//!   one only at the version read, so that it cannot become ready meanwhile);
//! - otherwise the budgets of its namespace whose selector matches it decide: none, and it is
//!   deleted; more than one is a 500; one that has not seen its latest generation
//!   (`status.observedGeneration`), or allows no disruption, is a 429 with a `DisruptionBudget`
//!   cause; else the budget's `status.disruptionsAllowed` is taken down by one and the pod
//!   recorded in `status.disruptedPods` before the pod is deleted. A pod that is not ready
//!   costs the budget nothing when the budget is healthy anyway, or when its
//!   `unhealthyPodEvictionPolicy` is `AlwaysAllow` (from 1.27, where the gate is on).
//!
//! No disruption controller runs in kapi, so a budget's status says what its writer (a test,
//! a controller under test) put there, as on a cluster whose controller manager is stopped.
//! The answer is a success `Status` with code 201.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::KubeVersion;
use crate::meta::{
    CauseType, CreateOptions, DeleteOptions, LabelSelector, Preconditions, Status, StatusCause,
};
use crate::storage::{Storage as _, UpdateError};
use crate::time::Time;

use crate::server::Call;
use crate::server::handlers::delete::{self, Admission};
use crate::server::handlers::object::{RETRIES, check_namespace, read};
use crate::server::handlers::request::write_request;
use crate::server::http::error::{ApiError, Subject};
use crate::server::http::negotiate::{self, Output};
use crate::server::objects::json::{meta_str, object_mut, set_condition};
use crate::server::objects::stored::kv_object;
use crate::server::state::keys::prefix_of;

/// `MaxDisruptedPodSize`: evictions a budget may have approved that its controller has not
/// yet seen; beyond it evictions are refused until the controller catches up.
const MAX_DISRUPTED_PODS: usize = 2000;

/// The first release whose `PDBUnhealthyPodEvictionPolicy` gate is on by default (beta).
const UNHEALTHY_POLICY_SINCE: KubeVersion = KubeVersion::new(1, 27);

/// The first release that accepts a `policy/v1` Eviction (before: `policy/v1beta1` only).
const POLICY_V1_SINCE: KubeVersion = KubeVersion::new(1, 22);

/// Serves an `Eviction` of the pod `name`.
pub(crate) async fn serve(
    call: &Call,
    name: &str,
    body: Body,
    output: Output,
) -> Result<Response, ApiError> {
    let (body, write) = write_request::<CreateOptions>(call, body).await?;
    let mut eviction = negotiate::decode_body(&call.headers, &body, call.state.cbor())?;
    let served = check_version(call, &eviction)?;
    // Decoded into the version the endpoint serves, as upstream's decoder converts a
    // `policy/v1beta1` body (of the same shape) before admission sees it.
    if let Some(fields) = eviction.as_object_mut() {
        fields.insert("apiVersion".into(), Value::from(served));
        fields.insert("kind".into(), Value::from("Eviction"));
    }
    if meta_str(&eviction, "name").unwrap_or("") != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    check_namespace(call, &eviction)?;
    let query_dry_run = if write.dry_run {
        vec!["All".to_owned()]
    } else {
        Vec::new()
    };
    let options = delete_options(&eviction, query_dry_run)?;
    crate::server::admission::admit_action(call, &mut eviction, name, options.is_dry_run()).await?;
    evict(call, name, options).await?;
    let mut status = Status::success();
    status.code = Some(201);
    let value = serde_json::to_value(status).map_err(ApiError::internal)?;
    Ok(negotiate::encode(
        output.format,
        StatusCode::CREATED,
        &value,
    ))
}

/// The body is an Eviction of a version the release accepts (`AcceptsGroupVersion`); answers
/// the version the endpoint serves.
fn check_version(call: &Call, eviction: &Value) -> Result<&'static str, ApiError> {
    let release = call.state.kube_version;
    let expected = if release >= POLICY_V1_SINCE {
        "policy/v1"
    } else {
        "policy/v1beta1"
    };
    let version = eviction
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or(expected);
    let accepted = version == "policy/v1beta1" || version == expected;
    if !accepted {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({version}) does not match the expected API version ({expected})"
        )));
    }
    if eviction
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Eviction")
        != "Eviction"
    {
        return Err(ApiError::bad_request("not a Eviction object"));
    }
    Ok(expected)
}

/// The eviction's `deleteOptions` with the request's dry run (`propagateDryRun`): either may
/// name it, but not two different ones.
fn delete_options(eviction: &Value, query_dry_run: Vec<String>) -> Result<DeleteOptions, ApiError> {
    let mut options: DeleteOptions = match eviction.get("deleteOptions") {
        None | Some(Value::Null) => DeleteOptions::default(),
        Some(given) => serde_json::from_value(given.clone())
            .map_err(|e| ApiError::bad_request(format!("invalid deleteOptions: {e}")))?,
    };
    if options.dry_run.is_empty() {
        options.dry_run = query_dry_run;
    } else if !query_dry_run.is_empty() && options.dry_run != query_dry_run {
        return Err(ApiError::unstatused(format!(
            "Non-matching dry-run options in request and content: [{}] and [{}]",
            query_dry_run.join(" "),
            options.dry_run.join(" ")
        )));
    }
    Ok(options)
}

/// The pod's state as far as an eviction cares.
struct PodState {
    phase: String,
    deleting: bool,
    ready: bool,
    labels: BTreeMap<String, String>,
    revision: u64,
}

impl PodState {
    fn of(pod: &Value, revision: u64) -> Self {
        let ready = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|conditions| {
                conditions.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Ready")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            });
        Self {
            phase: pod
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            deleting: pod.pointer("/metadata/deletionTimestamp").is_some(),
            ready,
            labels: pod
                .pointer("/metadata/labels")
                .and_then(|l| serde_json::from_value(l.clone()).ok())
                .unwrap_or_default(),
            revision,
        }
    }

    fn terminal(&self) -> bool {
        matches!(self.phase.as_str(), "Succeeded" | "Failed")
    }

    /// `canIgnorePDB`: the pod disrupts nothing more by going.
    fn ignores_budgets(&self) -> bool {
        self.terminal() || self.phase == "Pending" || self.deleting
    }

    /// `shouldEnforceResourceVersion`: a pod that could still become ready is deleted only at
    /// the version the decision was made on.
    fn pins_version(&self) -> bool {
        !self.terminal() && !self.deleting
    }
}

/// Deletes the pod if its budgets allow, as `EvictionREST.Create` does.
async fn evict(call: &Call, name: &str, options: DeleteOptions) -> Result<(), ApiError> {
    let pinned = options
        .preconditions
        .as_ref()
        .and_then(|p| p.resource_version.as_ref())
        .is_some();
    // Pods that ignore their budgets go at once; a lost race reads again unless the client
    // pinned a version.
    let mut pod = None;
    for _ in 0..RETRIES {
        let kv = read(call, name).await?;
        let state = PodState::of(&kv_object(call, &kv).await?, kv.mod_revision);
        if !state.ignores_budgets() {
            pod = Some(state);
            break;
        }
        let mut options = options.clone();
        if state.pins_version() && !pinned {
            pin(&mut options, state.revision);
        }
        match delete::delete(call, name, &options, Admission::Skip).await {
            Ok(_) => return Ok(()),
            Err(conflict) if conflict.code() == StatusCode::CONFLICT && !pinned => continue,
            Err(e) => return Err(e),
        }
    }
    let Some(pod) = pod else {
        return Err(ApiError::conflict_modified(call.subject(name)));
    };
    let namespace = call.target.namespace.clone().unwrap_or_default();
    let budgets = budgets_of(call, &namespace, &pod).await?;
    let mut pin_pod = false;
    let budget_name = match budgets.as_slice() {
        [] => None,
        [budget] => {
            let name_of = meta_str(budget, "name").unwrap_or("").to_owned();
            if !pod.ready && spares_unready(call.state.kube_version, budget) {
                pin_pod = true;
            } else {
                take_disruption(call, &namespace, &name_of, name, options.is_dry_run()).await?;
            }
            Some(name_of)
        }
        _ => {
            return Err(ApiError::unstatused(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
    };
    let mut options = options;
    if pin_pod {
        pin(&mut options, pod.revision);
    }
    match delete::delete(call, name, &options, Admission::Skip).await {
        Ok(_) => Ok(()),
        Err(conflict) if conflict.code() == StatusCode::CONFLICT && pin_pod && !pinned => {
            // The pod changed after the decision: the client retries, as upstream tells it.
            Err(still_processing(budget_name.as_deref().unwrap_or("")))
        }
        Err(e) => Err(e),
    }
}

fn pin(options: &mut DeleteOptions, revision: u64) {
    options
        .preconditions
        .get_or_insert_with(Preconditions::default)
        .resource_version = Some(revision.to_string());
}

/// How many budgets of one namespace an eviction looks through at most (a namespace holds a
/// few; one holding more is read no further rather than without bound).
const MOST_BUDGETS: usize = 10_000;

/// The budgets of the pod's namespace whose selectors match it; a budget without a selector,
/// with an empty one or with one that does not parse matches nothing.
async fn budgets_of(call: &Call, namespace: &str, pod: &PodState) -> Result<Vec<Value>, ApiError> {
    let prefix = format!(
        "{}{namespace}/",
        prefix_of("policy", "poddisruptionbudgets")
    );
    let listed = call
        .state
        .storage
        .list(&prefix, None, None, Some(MOST_BUDGETS))
        .await
        .map_err(ApiError::from_read)?;
    let mut matching = Vec::new();
    for kv in listed.items {
        let budget: Value = serde_json::from_slice(&kv.value).map_err(ApiError::internal)?;
        let selector = budget
            .pointer("/spec/selector")
            .and_then(|s| serde_json::from_value::<LabelSelector>(s.clone()).ok());
        let matches = selector
            .filter(|s| !s.is_empty())
            .is_some_and(|s| s.matches(&pod.labels).unwrap_or(false));
        if matches {
            matching.push(budget);
        }
    }
    Ok(matching)
}

fn int_at(value: &Value, pointer: &str) -> i64 {
    value.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// Whether evicting a pod that is not ready leaves the budget alone: its policy says so
/// (`AlwaysAllow`), or it has the healthy pods it wants without this one.
fn spares_unready(release: KubeVersion, budget: &Value) -> bool {
    let always = release >= UNHEALTHY_POLICY_SINCE
        && budget
            .pointer("/spec/unhealthyPodEvictionPolicy")
            .and_then(Value::as_str)
            == Some("AlwaysAllow");
    let desired = int_at(budget, "/status/desiredHealthy");
    always || (int_at(budget, "/status/currentHealthy") >= desired && desired > 0)
}

/// 429 while the budget's controller has not caught up (`createTooManyRequestsError`).
fn still_processing(budget: &str) -> ApiError {
    refused_by_budget(
        10,
        format!("The disruption budget {budget} is still being processed by the server."),
    )
}

fn refused_by_budget(retry_after: i32, cause: String) -> ApiError {
    let mut status = Status::too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.",
        retry_after,
    );
    status
        .details
        .get_or_insert_with(Default::default)
        .causes
        .push(StatusCause {
            reason: Some(CauseType::DisruptionBudget),
            message: Some(cause),
            field: None,
        });
    ApiError::from_status(status)
}

/// `checkAndDecrement` under `RetryOnConflict`: takes one allowed disruption from the budget
/// and records the pod in it (unless a dry run), or says why the budget refuses.
async fn take_disruption(
    call: &Call,
    namespace: &str,
    budget_name: &str,
    pod_name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let key = format!(
        "{}{namespace}/{budget_name}",
        prefix_of("policy", "poddisruptionbudgets")
    );
    let subject = Subject {
        group: "policy",
        resource: "poddisruptionbudget",
        name: budget_name,
    };
    for _ in 0..RETRIES {
        let Some(kv) = call
            .state
            .storage
            .get(&key, None)
            .await
            .map_err(ApiError::from_read)?
        else {
            return Err(ApiError::not_found(Subject {
                resource: "poddisruptionbudgets",
                ..subject
            }));
        };
        let budget: Value = serde_json::from_slice(&kv.value).map_err(ApiError::internal)?;
        let next = decremented(&budget, budget_name, pod_name, &subject)?;
        if dry_run {
            return Ok(());
        }
        let bytes = serde_json::to_vec(&next).map_err(ApiError::internal)?;
        match call
            .state
            .storage
            .update(&key, bytes.into(), kv.mod_revision)
            .await
        {
            Ok(_) => return Ok(()),
            Err(UpdateError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_update(e, subject)),
        }
    }
    Err(ApiError::from_status(Status::timeout(
        &format!("couldn't update PodDisruptionBudget {budget_name:?} due to conflicts"),
        10,
    )))
}

/// The budget with one disruption fewer allowed and the pod among its disrupted pods, or the
/// refusal `checkAndDecrement` answers.
fn decremented(
    budget: &Value,
    budget_name: &str,
    pod_name: &str,
    subject: &Subject<'_>,
) -> Result<Value, ApiError> {
    let generation = int_at(budget, "/metadata/generation");
    if int_at(budget, "/status/observedGeneration") < generation {
        return Err(still_processing(budget_name));
    }
    let allowed = int_at(budget, "/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden(
            *subject,
            "pdb disruptions allowed is negative",
        ));
    }
    let disrupted = budget
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |pods| pods.len());
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(ApiError::forbidden(
            *subject,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(refused_by_budget(
            0,
            format!(
                "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
                int_at(budget, "/status/desiredHealthy"),
                int_at(budget, "/status/currentHealthy"),
            ),
        ));
    }
    let mut next = budget.clone();
    let status = object_mut(
        object_mut(&mut next)
            .entry("status")
            .or_insert_with(|| json!({})),
    );
    status.insert("disruptionsAllowed".into(), Value::from(allowed - 1));
    let now = serde_json::to_value(Time::now()).map_err(ApiError::internal)?;
    if allowed == 1 {
        // `UpdateDisruptionAllowedCondition` once no disruption is left.
        let observed = status
            .get("observedGeneration")
            .cloned()
            .unwrap_or(Value::from(0));
        let condition = json!({"type": "DisruptionAllowed", "status": "False",
            "observedGeneration": observed, "reason": "InsufficientPods", "message": ""});
        set_condition(status, condition, now.clone());
    }
    let pods = object_mut(status.entry("disruptedPods").or_insert_with(|| json!({})));
    pods.insert(pod_name.to_owned(), now);
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Subject<'static> {
        Subject {
            group: "policy",
            resource: "poddisruptionbudget",
            name: "db",
        }
    }

    fn budget(generation: i64, observed: i64, allowed: i64) -> Value {
        json!({
            "metadata": {"name": "db", "generation": generation},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
            "status": {"observedGeneration": observed, "disruptionsAllowed": allowed,
                       "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}
        })
    }

    fn refusal(result: Result<Value, ApiError>) -> Status {
        match result {
            Ok(v) => panic!("not refused: {v}"),
            Err(e) => e.into_status(),
        }
    }

    #[test]
    fn a_budget_its_controller_has_not_seen_refuses_with_a_retry() {
        // checkAndDecrement's first test, createTooManyRequestsError (eviction.go).
        let status = refusal(decremented(&budget(2, 1, 1), "db", "web-0", &subject()));
        assert_eq!(status.code, Some(429));
        assert_eq!(
            status.message.as_deref(),
            Some("Cannot evict pod as it would violate the pod's disruption budget.")
        );
        let details = status.details.unwrap_or_default();
        assert_eq!(details.retry_after_seconds, Some(10));
        assert_eq!(
            details.causes[0].message.as_deref(),
            Some("The disruption budget db is still being processed by the server.")
        );
        assert_eq!(details.causes[0].reason, Some(CauseType::DisruptionBudget));
    }

    #[test]
    fn a_budget_without_disruptions_left_refuses() {
        let status = refusal(decremented(&budget(1, 1, 0), "db", "web-0", &subject()));
        assert_eq!(status.code, Some(429));
        let details = status.details.unwrap_or_default();
        assert_eq!(details.retry_after_seconds, None);
        assert_eq!(
            details.causes[0].message.as_deref(),
            Some("The disruption budget db needs 1 healthy pods and has 2 currently")
        );
        let status = refusal(decremented(&budget(1, 1, -1), "db", "web-0", &subject()));
        assert_eq!(status.code, Some(403));
        assert_eq!(
            status.message.as_deref(),
            Some(
                "poddisruptionbudget.policy \"db\" is forbidden: pdb disruptions allowed is negative"
            )
        );
    }

    #[test]
    fn an_eviction_takes_one_disruption_and_records_the_pod() {
        let next = decremented(&budget(1, 1, 2), "db", "web-0", &subject())
            .unwrap_or_else(|e| panic!("{:?}", e.into_status()));
        assert_eq!(next["status"]["disruptionsAllowed"], 1);
        assert!(next["status"]["disruptedPods"]["web-0"].is_string());
        assert!(next["status"].get("conditions").is_none());
        // The last one allowed: the condition says no more are (UpdateDisruptionAllowedCondition).
        let next = decremented(&next, "db", "web-1", &subject())
            .unwrap_or_else(|e| panic!("{:?}", e.into_status()));
        assert_eq!(next["status"]["disruptionsAllowed"], 0);
        let condition = &next["status"]["conditions"][0];
        assert_eq!(condition["type"], "DisruptionAllowed");
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "InsufficientPods");
        assert_eq!(
            next["status"]["disruptedPods"]
                .as_object()
                .map(serde_json::Map::len),
            Some(2)
        );
    }

    #[test]
    fn an_unready_pod_is_spared_by_a_healthy_budget_or_its_policy() {
        let v = |minor| KubeVersion::new(1, minor);
        assert!(spares_unready(v(20), &budget(1, 1, 0)));
        let mut unhealthy = budget(1, 1, 0);
        unhealthy["status"]["currentHealthy"] = json!(0);
        assert!(!spares_unready(v(28), &unhealthy));
        unhealthy["spec"]["unhealthyPodEvictionPolicy"] = json!("AlwaysAllow");
        assert!(spares_unready(v(28), &unhealthy));
        // The gate is off before 1.27.
        assert!(!spares_unready(v(20), &unhealthy));
    }

    #[test]
    fn dry_run_may_come_from_the_body_or_the_query_but_not_differ() {
        let eviction = json!({"deleteOptions": {"dryRun": ["All"]}});
        let options = delete_options(&eviction, Vec::new()).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(options.is_dry_run());
        let options =
            delete_options(&json!({}), vec!["All".into()]).unwrap_or_else(|e| panic!("{e:?}"));
        assert!(options.is_dry_run());
    }

    #[test]
    fn which_pods_ignore_their_budgets() {
        let state = |phase: &str, deleting: bool| PodState {
            phase: phase.to_owned(),
            deleting,
            ready: false,
            labels: BTreeMap::new(),
            revision: 1,
        };
        assert!(state("Pending", false).ignores_budgets());
        assert!(state("Pending", false).pins_version());
        assert!(state("Succeeded", false).ignores_budgets());
        assert!(!state("Succeeded", false).pins_version());
        assert!(state("Running", true).ignores_budgets());
        assert!(!state("Running", false).ignores_budgets());
    }
}
