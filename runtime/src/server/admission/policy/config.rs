//! The stored admission policies and their bindings as the plugins read them, validating
//! (`ValidatingAdmissionPolicy`, `ValidatingAdmissionPolicyBinding`) and mutating
//! (`MutatingAdmissionPolicy`, `MutatingAdmissionPolicyBinding`) alike: the fields of `spec`
//! every served version (`v1`, `v1beta1`, `v1alpha1`) shares, one shape for both (each kind
//! leaves the other's fields empty), read from the store at each admitted write (a change takes effect for the next
//! request, as upstream's informer-fed policy source does within moments). Policies are taken in
//! name order and each one's bindings in name order.

use serde::Deserialize;
use serde_json::Value;

use crate::meta::LabelSelector;
use crate::server::Call;
use crate::server::admission::storage;
use crate::server::admission::webhook::config::{GROUP, Rule};
use crate::server::http::error::ApiError;

/// The resource policies are stored as.
pub(super) const POLICIES: &str = "validatingadmissionpolicies";
/// The resource bindings are stored as.
pub(super) const BINDINGS: &str = "validatingadmissionpolicybindings";
/// The resource mutating policies are stored as.
pub(super) const MUTATING_POLICIES: &str = "mutatingadmissionpolicies";
/// The resource mutating policies' bindings are stored as.
pub(super) const MUTATING_BINDINGS: &str = "mutatingadmissionpolicybindings";

/// One plugin's kinds: the resources of its policies and bindings, and the policy kind's name
/// as messages print it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Kinds {
    pub(super) policies: &'static str,
    pub(super) bindings: &'static str,
    pub(super) name: &'static str,
}

/// ValidatingAdmissionPolicy's kinds.
pub(super) const VALIDATING: Kinds = Kinds {
    policies: POLICIES,
    bindings: BINDINGS,
    name: "ValidatingAdmissionPolicy",
};

/// MutatingAdmissionPolicy's kinds.
pub(super) const MUTATING: Kinds = Kinds {
    policies: MUTATING_POLICIES,
    bindings: MUTATING_BINDINGS,
    name: "MutatingAdmissionPolicy",
};

/// A policy: its name and spec.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Policy {
    #[serde(default)]
    pub(super) metadata: Metadata,
    #[serde(default)]
    pub(super) spec: PolicySpec,
}

/// The metadata the plugin reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Metadata {
    #[serde(default)]
    pub(super) name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PolicySpec {
    #[serde(default)]
    pub(super) param_kind: Option<ParamKind>,
    #[serde(default)]
    pub(super) match_constraints: Option<MatchResources>,
    #[serde(default)]
    pub(super) validations: Vec<Validation>,
    /// `Fail` (the default) or `Ignore`.
    #[serde(default)]
    pub(super) failure_policy: Option<String>,
    #[serde(default)]
    pub(super) audit_annotations: Vec<AuditAnnotation>,
    #[serde(default)]
    pub(super) match_conditions: Vec<MatchCondition>,
    #[serde(default)]
    pub(super) variables: Vec<Variable>,
    /// A mutating policy's mutations, applied in order.
    #[serde(default)]
    pub(super) mutations: Vec<Mutation>,
    /// A mutating policy's `Never` or `IfNeeded`.
    #[serde(default)]
    pub(super) reinvocation_policy: Option<String>,
}

/// One mutation: `patchType` `ApplyConfiguration` or `JSONPatch`, with its expression.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Mutation {
    #[serde(default)]
    pub(super) patch_type: String,
    #[serde(default)]
    pub(super) apply_configuration: Option<Expression>,
    #[serde(default)]
    pub(super) json_patch: Option<Expression>,
}

/// A mutation's CEL expression.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Expression {
    #[serde(default)]
    pub(super) expression: String,
}

/// The kind of a policy's parameters.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(super) struct ParamKind {
    #[serde(default)]
    pub(super) api_version: String,
    #[serde(default)]
    pub(super) kind: String,
}

impl ParamKind {
    /// The group and version of `apiVersion` (`v1` is the core group's).
    pub(super) fn group_version(&self) -> (&str, &str) {
        self.api_version
            .split_once('/')
            .unwrap_or(("", self.api_version.as_str()))
    }

    /// Go's `GroupVersionKind.String()`, which upstream's errors print: `/v1, Kind=ConfigMap`.
    pub(super) fn gvk_text(&self) -> String {
        let (group, version) = self.group_version();
        format!("{group}/{version}, Kind={}", self.kind)
    }
}

/// `matchConstraints` of a policy, `matchResources` of a binding.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MatchResources {
    #[serde(default)]
    pub(super) namespace_selector: Option<LabelSelector>,
    #[serde(default)]
    pub(super) object_selector: Option<LabelSelector>,
    #[serde(default)]
    pub(super) resource_rules: Vec<NamedRule>,
    #[serde(default)]
    pub(super) exclude_resource_rules: Vec<NamedRule>,
    /// `Exact` or `Equivalent` (the default).
    #[serde(default)]
    pub(super) match_policy: Option<String>,
}

/// A `NamedRuleWithOperations`: a webhook's rule, optionally limited to some object names.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NamedRule {
    #[serde(flatten)]
    pub(super) rule: Rule,
    #[serde(default)]
    pub(super) resource_names: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Validation {
    #[serde(default)]
    pub(super) expression: String,
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) reason: Option<String>,
    #[serde(default)]
    pub(super) message_expression: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AuditAnnotation {
    #[serde(default)]
    pub(super) key: String,
    #[serde(default)]
    pub(super) value_expression: String,
}

/// A CEL expression that must hold for the policy to run (its `name` shows only in upstream's
/// metrics).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct MatchCondition {
    #[serde(default)]
    pub(super) expression: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Variable {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) expression: String,
}

/// A binding: its name and spec.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Binding {
    #[serde(default)]
    pub(super) metadata: Metadata,
    #[serde(default)]
    pub(super) spec: BindingSpec,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BindingSpec {
    #[serde(default)]
    pub(super) policy_name: String,
    #[serde(default)]
    pub(super) param_ref: Option<ParamRef>,
    #[serde(default)]
    pub(super) match_resources: Option<MatchResources>,
    /// `Deny`, `Warn`, `Audit`.
    #[serde(default)]
    pub(super) validation_actions: Vec<String>,
}

/// Where a binding's parameters are: one object by name, or those a selector picks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ParamRef {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespace: String,
    #[serde(default)]
    pub(super) selector: Option<LabelSelector>,
    /// `Allow` or `Deny`.
    #[serde(default)]
    pub(super) parameter_not_found_action: Option<String>,
}

impl Policy {
    /// Whether a failure to evaluate or configure the policy lets the request through.
    pub(super) fn ignores_failures(&self) -> bool {
        self.spec.failure_policy.as_deref() == Some("Ignore")
    }
}

/// A policy with the bindings that name it.
#[derive(Debug, Clone)]
pub(super) struct Hook {
    pub(super) policy: Policy,
    pub(super) bindings: Vec<Binding>,
}

/// Every stored policy that some binding names, with its bindings, in name order. A policy or
/// binding that does not read as one is skipped (its write was validated; what is stored and
/// not understood is an older or newer shape, not a reason to fail every write).
pub(super) async fn hooks(call: &Call, kinds: Kinds) -> Result<Vec<Hook>, ApiError> {
    let served = ["v1", "v1beta1", "v1alpha1"]
        .iter()
        .any(|v| call.registry.get(GROUP, v, kinds.policies).is_some());
    if !served {
        return Ok(Vec::new());
    }
    let mut bindings: Vec<Binding> =
        decoded(storage::list(call, GROUP, kinds.bindings, None).await?);
    if bindings.is_empty() {
        return Ok(Vec::new());
    }
    bindings.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut policies: Vec<Policy> =
        decoded(storage::list(call, GROUP, kinds.policies, None).await?);
    policies.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(policies
        .into_iter()
        .filter_map(|policy| {
            let bound: Vec<Binding> = bindings
                .iter()
                .filter(|b| b.spec.policy_name == policy.metadata.name)
                .cloned()
                .collect();
            (!bound.is_empty()).then_some(Hook {
                policy,
                bindings: bound,
            })
        })
        .collect())
}

fn decoded<T: for<'de> Deserialize<'de>>(objects: Vec<Value>) -> Vec<T> {
    objects
        .into_iter()
        .filter_map(|object| match T::deserialize(&object) {
            Ok(decoded) => Some(decoded),
            Err(e) => {
                tracing::warn!(error = %e, "admission policy object skipped");
                None
            }
        })
        .collect()
}
