//! Upstream's ValidatingAdmissionPolicy plugin
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/`, with the shared
//! `policy/generic` dispatcher and `policy/matching`): the stored policies and their bindings
//! (`config`), matched against the request (`matching`: a policy's `matchConstraints`, then
//! each binding's `matchResources`, with the webhooks' rules and selectors), run once per
//! parameter object a binding gives (`params`) in CEL (`evaluate`), and the verdicts routed by
//! each binding's `validationActions`:
//!
//! - `Deny`: the first refusal answers the request, as `admission.NewForbidden` words it with
//!   the validation's `reason` (`Invalid`, 422, when it gives none) and the message
//!   `ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>`
//!   repeated as the Status' one cause;
//! - `Warn`: a `Warning` header, `Validation failed for ValidatingAdmissionPolicy '<policy>'
//!   with binding '<binding>': <message>`;
//! - `Audit`: the audit annotation `validation.policy.admission.k8s.io/validation_failure`, a
//!   JSON list of `{message, policy, binding, expressionIndex, validationActions}`.
//!
//! A policy's `auditAnnotations` become `<policy>/<key>` annotations (distinct values of several
//! bindings joined with `, `). Errors (an expression that fails, parameters that cannot be found
//! under `parameterNotFoundAction: Deny`, a `paramKind` the server does not serve) refuse the
//! request under `failurePolicy: Fail` and are passed over under `Ignore`.
//!
//! The plugin runs after mutation and validation, just before the validating webhooks, on
//! creates, updates (also of subresources) and deletes, dry runs included, and never for the
//! `admissionregistration.k8s.io` kinds themselves. It is on in every release that serves
//! `admissionregistration.k8s.io/v1` policies (1.30 on, `Feature::ValidatingAdmissionPolicy`
//! graduated) and in 1.28 only with the `ValidatingAdmissionPolicy` gate on.
//!
//! `validation` checks writes of the policies and bindings themselves, with upstream's
//! messages (a CEL expression that does not compile, or whose type is certainly not what its
//! field requires, refuses its policy).
//!
//! A policy matched through an equivalent version or group (`matchPolicy: Equivalent`) sees
//! the request through it, its objects converted, as upstream's dispatcher converts the
//! versioned attributes to the matched kind. The type-checking warnings of
//! `status.typeChecking` are written by `background::policy_status` with the observed
//! generation.
//!
//! May import what `admission` may, and the webhooks' matching, configuration types and review.

mod config;
mod evaluate;
mod matching;
pub(crate) mod mutating;
mod params;
pub(crate) mod validation;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::GroupVersionKind;
use crate::meta::{Status, StatusCause, StatusReason};
use crate::server::Call;
use crate::server::admission::webhook::matching::{Matched, exempt};
use crate::server::admission::webhook::{Converted, Request, review};
use crate::server::http::error::ApiError;
use crate::server::state::release::Feature;

use config::{Binding, Policy};

/// The audit annotation of failures under the `Audit` action.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

/// A refusal: which policy and binding (none for the policy's own configuration error), the
/// message and the reason.
struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

/// Runs the policies bound to match `request`; the first refusal answers it.
pub(crate) async fn validate(call: &Call, request: &Request<'_>) -> Result<(), ApiError> {
    if exempt(call)
        || !call
            .state
            .feature(Feature::ValidatingAdmissionPolicy)
            .is_on()
    {
        return Ok(());
    }
    let hooks = config::hooks(call, config::VALIDATING).await?;
    if hooks.is_empty() {
        return Ok(());
    }
    let mut inputs = Vec::new();
    let mut denials = Vec::new();
    for hook in &hooks {
        let policy = &hook.policy;
        let name = &policy.metadata.name;
        let Some(constraints) = &policy.spec.match_constraints else {
            continue;
        };
        let Some(matched) =
            matching::matches(call, constraints, request, config::VALIDATING.name, name).await?
        else {
            continue;
        };
        let kind = match &policy.spec.param_kind {
            None => None,
            Some(kind) => match params::param_kind(call, kind) {
                Ok(kind) => Some(kind),
                Err(e) => {
                    if !policy.ignores_failures() {
                        denials.push(Denial {
                            policy: name.clone(),
                            binding: None,
                            message: format!("failed to configure policy: {e}"),
                            reason: None,
                        });
                    }
                    continue;
                }
            },
        };
        let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for binding in &hook.bindings {
            let binding_name = &binding.metadata.name;
            if let Some(resources) = &binding.spec.match_resources
                && matching::matches(
                    call,
                    resources,
                    request,
                    config::VALIDATING.name,
                    binding_name,
                )
                .await?
                .is_none()
            {
                continue;
            }
            let objects = match params::collect(call, kind, binding.spec.param_ref.as_ref()).await {
                Ok(objects) => objects,
                Err(params::ParamError::Read(e)) => return Err(e),
                Err(params::ParamError::Configuration(e)) => {
                    if !policy.ignores_failures() {
                        denials.push(Denial {
                            policy: name.clone(),
                            binding: Some(binding_name.clone()),
                            message: format!("failed to configure binding: {e}"),
                            reason: None,
                        });
                    }
                    continue;
                }
            };
            if objects.is_empty() {
                continue;
            }
            let inputs = inputs_for(call, request, &matched, &mut inputs).await?;
            for object in &objects {
                let params = object
                    .as_ref()
                    .map_or(::cel::Value::Null, crate::cel::value::untyped);
                let outcome = evaluate::validate(policy, inputs, &params);
                route(call, policy, binding, &outcome, &mut denials);
                for (key, value) in outcome.annotations {
                    let values = annotations.entry(key).or_default();
                    if !values.contains(&value) {
                        values.push(value);
                    }
                }
            }
        }
        for (key, values) in annotations {
            call.annotate(format!("{name}/{key}"), values.join(", "));
        }
    }
    match denials.into_iter().next() {
        Some(denial) => Err(refusal(call, request.name, denial)),
        None => Ok(()),
    }
}

/// Routes one evaluation's verdicts by the binding's validation actions.
fn route(
    call: &Call,
    policy: &Policy,
    binding: &Binding,
    outcome: &evaluate::Outcome,
    denials: &mut Vec<Denial>,
) {
    let policy_name = &policy.metadata.name;
    let binding_name = &binding.metadata.name;
    let actions = &binding.spec.validation_actions;
    for decision in &outcome.decisions {
        for action in actions {
            match action.as_str() {
                "Deny" => denials.push(Denial {
                    policy: policy_name.clone(),
                    binding: Some(binding_name.clone()),
                    message: decision.message.clone(),
                    reason: decision.reason.clone(),
                }),
                "Warn" => {
                    if let Ok(mut warnings) = call.warnings.lock() {
                        warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {}",
                            decision.message
                        ));
                    }
                }
                "Audit" => {
                    let value = json!([{
                        "message": decision.message,
                        "policy": binding.spec.policy_name,
                        "binding": binding_name,
                        "expressionIndex": decision.index,
                        "validationActions": actions,
                    }]);
                    call.annotate(VALIDATION_FAILURE.to_owned(), value.to_string());
                }
                _ => {}
            }
        }
    }
    for error in &outcome.annotation_errors {
        denials.push(Denial {
            policy: policy_name.clone(),
            binding: Some(binding_name.clone()),
            message: error.clone(),
            reason: None,
        });
    }
}

/// The inputs of policies that matched through `matched`, made once per resource matched
/// through and kept in `made`.
async fn inputs_for<'m>(
    call: &Call,
    request: &Request<'_>,
    matched: &Matched,
    made: &'m mut Vec<(Option<GroupVersionKind>, evaluate::Inputs)>,
) -> Result<&'m evaluate::Inputs, ApiError> {
    let through = match matched {
        Matched::Exact => None,
        Matched::Equivalent(info) => Some(info.gvk.clone()),
    };
    let at = match made.iter().position(|(gvk, _)| *gvk == through) {
        Some(at) => at,
        None => {
            made.push((through, inputs_of(call, request, matched).await?));
            made.len() - 1
        }
    };
    Ok(&made[at].1)
}

/// The request as CEL sees it, through the resource a policy matched: the objects (converted
/// to the version matched through), upstream's `CreateAdmissionRequest` (the review's request
/// without the objects or a uid) and the namespace (`CreateNamespaceObject`: its metadata
/// without managed fields, owners and self link, its spec and status).
async fn inputs_of(
    call: &Call,
    request: &Request<'_>,
    matched: &Matched,
) -> Result<evaluate::Inputs, ApiError> {
    let converted = match matched {
        Matched::Exact => None,
        Matched::Equivalent(info) => Some(Converted::of(call, request, Arc::clone(info)).await?),
    };
    let request = &converted.as_ref().map_or(*request, |c| c.request(request));
    let seen_as = converted.as_ref().map(|c| &*c.seen_as);
    let (_, mut review) = review::request(call, request, "v1", seen_as);
    let mut admission = review
        .get_mut("request")
        .map(Value::take)
        .unwrap_or(Value::Null);
    if let Value::Object(fields) = &mut admission {
        for field in ["uid", "object", "oldObject"] {
            fields.remove(field);
        }
    }
    let namespace = crate::server::admission::webhook::matching::namespace_of(call).await?;
    let namespace_object = namespace.map(|mut ns| {
        if let Some(Value::Object(meta)) = ns.get_mut("metadata") {
            for field in ["managedFields", "ownerReferences", "selfLink"] {
                meta.remove(field);
            }
        }
        ns
    });
    let cel_of =
        |value: Option<&Value>| value.map_or(::cel::Value::Null, crate::cel::value::untyped);
    Ok(evaluate::Inputs {
        object: cel_of(request.object),
        old_object: cel_of(request.old),
        request: crate::cel::value::untyped(&admission),
        namespace_object: cel_of(namespace_object.as_ref()),
        authorizer: crate::server::admission::authorizer::variables(call, request.name).to_vec(),
    })
}

/// Upstream's answer to the first refusal: `admission.NewForbidden`'s message and details, the
/// refusal's reason (`Invalid` when it has none) and its code, and the message as a cause.
fn refusal(call: &Call, name: &str, denial: Denial) -> ApiError {
    let message = match &denial.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
            denial.policy, denial.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            denial.policy, denial.message
        ),
    };
    let subject = call.subject(name);
    let mut status: Status = Status::forbidden(subject.group, subject.resource, name, &message);
    let reason = denial.reason.as_deref().unwrap_or("Invalid");
    status.code = Some(reason_code(reason));
    status.reason = Some(StatusReason::from(reason));
    let cause = StatusCause {
        reason: None,
        message: Some(message),
        field: None,
    };
    status
        .details
        .get_or_insert_with(Default::default)
        .causes
        .push(cause);
    ApiError::from_status(status)
}

/// Upstream's `reasonToCode`.
fn reason_code(reason: &str) -> i32 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

#[cfg(test)]
mod tests;
