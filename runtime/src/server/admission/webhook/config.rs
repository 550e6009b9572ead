//! The webhooks the stored `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s declare, read from the store at each admitted write (a
//! change to a configuration takes effect for the next request, as upstream's informer-fed
//! configuration manager does within moments), with the `admissionregistration.k8s.io/v1`
//! defaults (`pkg/apis/admissionregistration/v1/defaults.go`) for what a stored object leaves
//! out. Configurations are taken in name order and each one's webhooks in their order, as
//! upstream's `mutatingWebhookConfigurationManager` sorts them.

use serde::Deserialize;
use serde_json::Value;

use crate::meta::LabelSelector;
use crate::server::Call;
use crate::server::admission::storage;
use crate::server::http::error::ApiError;
use crate::server::http::webhook::ClientConfig;

/// The group both configuration kinds are in.
pub(in crate::server::admission) const GROUP: &str = "admissionregistration.k8s.io";

/// Upstream's default `timeoutSeconds` of a v1 webhook.
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
/// The most `timeoutSeconds` validation lets a webhook ask for.
const MOST_TIMEOUT_SECONDS: u64 = 30;

/// One webhook of a configuration, with upstream's v1 defaults filled in.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Webhook {
    pub(super) name: String,
    #[serde(default)]
    pub(super) client_config: ClientConfig,
    #[serde(default)]
    pub(super) rules: Vec<Rule>,
    #[serde(default)]
    failure_policy: Option<String>,
    #[serde(default)]
    pub(super) namespace_selector: Option<LabelSelector>,
    #[serde(default)]
    pub(super) object_selector: Option<LabelSelector>,
    #[serde(default)]
    pub(super) side_effects: Option<String>,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    pub(super) admission_review_versions: Vec<String>,
    #[serde(default)]
    reinvocation_policy: Option<String>,
    #[serde(default)]
    pub(super) match_conditions: Vec<MatchCondition>,
    #[serde(default)]
    match_policy: Option<String>,
    /// The configuration the webhook is in, and its place there (upstream's accessor UID).
    #[serde(skip)]
    pub(super) configuration: String,
    #[serde(skip)]
    pub(super) index: usize,
}

/// A `RuleWithOperations`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(in crate::server::admission) struct Rule {
    #[serde(default)]
    pub(in crate::server::admission) operations: Vec<String>,
    #[serde(default)]
    pub(in crate::server::admission) api_groups: Vec<String>,
    #[serde(default)]
    pub(in crate::server::admission) api_versions: Vec<String>,
    #[serde(default)]
    pub(in crate::server::admission) resources: Vec<String>,
    /// `*` (the default), `Cluster` or `Namespaced`.
    #[serde(default)]
    pub(in crate::server::admission) scope: Option<String>,
}

/// A CEL expression that must hold for the webhook to be called (its `name` shows only in
/// upstream's metrics).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MatchCondition {
    pub(super) expression: String,
}

impl Webhook {
    /// Whether a failure to call the webhook lets the request through (`Ignore`); v1 defaults
    /// to `Fail`.
    pub(super) fn ignores_failures(&self) -> bool {
        self.failure_policy.as_deref() == Some("Ignore")
    }

    /// How long a call may take: `timeoutSeconds`, 10 s by default, at most 30 s.
    pub(super) fn timeout(&self) -> std::time::Duration {
        let seconds = self
            .timeout_seconds
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
            .clamp(1, MOST_TIMEOUT_SECONDS);
        std::time::Duration::from_secs(seconds)
    }

    /// Whether the rules also match the same resource requested through another version or
    /// group (`matchPolicy: Equivalent`, v1's default) rather than only the request's own
    /// (`Exact`).
    pub(super) fn matches_equivalents(&self) -> bool {
        self.match_policy.as_deref() != Some("Exact")
    }

    /// Whether a mutating webhook is called again when a later one changed the object.
    pub(super) fn reinvoked_if_needed(&self) -> bool {
        self.reinvocation_policy.as_deref() == Some("IfNeeded")
    }

    /// Whether the webhook may be called for a dry run: only with `sideEffects` `None` or
    /// `NoneOnDryRun`.
    pub(super) fn dry_run_safe(&self) -> bool {
        matches!(self.side_effects.as_deref(), Some("None" | "NoneOnDryRun"))
    }

    /// The AdmissionReview version to send: the first of `admissionReviewVersions` the server
    /// speaks (`v1`, `v1beta1`), `None` when it speaks none of them.
    pub(super) fn review_version(&self) -> Option<&'static str> {
        self.admission_review_versions
            .iter()
            .find_map(|v| match v.as_str() {
                "v1" => Some("v1"),
                "v1beta1" => Some("v1beta1"),
                _ => None,
            })
    }
}

/// Which of the two configuration kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Mutating,
    Validating,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Mutating => "mutatingwebhookconfigurations",
            Kind::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// Every webhook of the stored configurations of `kind`, configurations in name order. A
/// configuration that does not read as one is skipped (its write was validated; what is
/// stored and not understood is an older or newer shape, not a reason to fail every write).
pub(super) async fn webhooks(call: &Call, kind: Kind) -> Result<Vec<Webhook>, ApiError> {
    if call.registry.get(GROUP, "v1", kind.plural()).is_none()
        && call.registry.get(GROUP, "v1beta1", kind.plural()).is_none()
    {
        return Ok(Vec::new());
    }
    let mut configurations = storage::list(call, GROUP, kind.plural(), None).await?;
    configurations.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    let mut out = Vec::new();
    for configuration in &configurations {
        let name = name_of(configuration);
        let hooks = configuration.get("webhooks").and_then(Value::as_array);
        for (index, hook) in hooks.into_iter().flatten().enumerate() {
            match Webhook::deserialize(hook) {
                Ok(mut webhook) => {
                    webhook.configuration = name.to_owned();
                    webhook.index = index;
                    out.push(webhook);
                }
                Err(e) => {
                    tracing::warn!(configuration = name, error = %e, "webhook skipped");
                }
            }
        }
    }
    Ok(out)
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}
