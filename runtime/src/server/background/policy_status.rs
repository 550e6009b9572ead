//! The status of ValidatingAdmissionPolicies, as upstream's type-checking controller
//! (`policy/validating/controller.go`, `typechecking.go`) keeps it: once a policy's generation
//! is seen, `status.observedGeneration` is that generation and `status.typeChecking` the
//! checker's warnings (`expressionWarnings`, from [`super::policy_types`]; `typeChecking: {}`
//! for a policy that checks clean). A pass every [`INTERVAL`] brings the stored policies up to
//! date; a write that lost a race is made again by the next pass.
//!
//! Runs only where policies are enforced (`Feature::ValidatingAdmissionPolicy`).

use std::time::Duration;

use crate::storage::{Bytes, Storage};
use serde_json::{Value, json};
use tokio::sync::watch as signal;

use crate::server::background::TaskError;
use crate::server::spawn_repeating;
use crate::server::state::State;
use crate::server::state::keys::prefix_of;
use crate::server::state::release::Feature;

/// How often the policies are looked at.
const INTERVAL: Duration = Duration::from_secs(1);
/// How many policies one pass looks at most.
const MOST: usize = 10_000;

const GROUP: &str = "admissionregistration.k8s.io";
const PLURAL: &str = "validatingadmissionpolicies";

/// One pass: every stored policy whose status lags its generation gets its status.
pub(crate) async fn reconcile(state: &State) -> Result<(), TaskError> {
    if !state.feature(Feature::ValidatingAdmissionPolicy).is_on() {
        return Ok(());
    }
    let page = state
        .storage
        .list(&prefix_of(GROUP, PLURAL), None, None, Some(MOST))
        .await?;
    let registry = state.registry();
    for kv in page.items {
        let mut policy: Value =
            serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                key: kv.key.clone(),
                source,
            })?;
        let generation = policy
            .pointer("/metadata/generation")
            .cloned()
            .unwrap_or(Value::Null);
        if generation.is_null() || policy.pointer("/status/observedGeneration") == Some(&generation)
        {
            continue;
        }
        let warnings = super::policy_types::warnings(&registry, &policy);
        let type_checking = if warnings.is_empty() {
            json!({})
        } else {
            json!({ "expressionWarnings": warnings })
        };
        if let Value::Object(fields) = &mut policy {
            fields.insert(
                "status".into(),
                json!({"observedGeneration": generation, "typeChecking": type_checking}),
            );
        }
        let bytes = serde_json::to_vec(&policy).map_err(TaskError::Encode)?;
        if let Err(source) = state
            .storage
            .update(&kv.key, Bytes::from(bytes), kv.mod_revision)
            .await
        {
            tracing::debug!(key = %kv.key, error = %source, "policy status not written; retrying");
        }
    }
    Ok(())
}

/// Keeps the policies' status, every [`INTERVAL`], until `stop`.
pub(crate) fn spawn(state: State, stop: signal::Receiver<bool>) {
    spawn_repeating(stop, INTERVAL, move || {
        let state = state.clone();
        async move {
            if let Err(error) = reconcile(&state).await {
                tracing::warn!(%error, "writing policies' status failed; retrying");
            }
        }
    });
}
