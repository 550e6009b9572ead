//! Upstream's MutatingAdmissionPolicy plugin
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/mutating/`: `plugin.go`,
//! `dispatcher.go`, `patch/`), on the same machinery as the validating plugin: the stored
//! policies and bindings (`config`), their `matchConstraints` and `matchResources`
//! (`matching`), each binding's parameters (`params`), and the variables and match conditions
//! of each invocation (`evaluate::prepare`). Then each of the policy's `mutations` in order,
//! each seeing the object as the one before left it:
//!
//! - `ApplyConfiguration`: the expression's `Object{...}` merged into the object with
//!   server-side apply's merge under the kind's schema (`handlers::patch::apply::merge`),
//!   refused when it sets an atomic list, map or struct (upstream's `validatePatch`); no field
//!   is owned by the mutation, as upstream's.
//! - `JSONPatch`: the expression's `JSONPatch` operations applied with the JSON patch engine
//!   (`handlers::patch::json_patch`); a failed `test` leaves the object as it was.
//!
//! The plugin runs first of the mutating plugins kapi has that act on every kind
//! (`AllOrderedPlugins` puts it just before MutatingAdmissionWebhook), on creates and updates
//! (also of subresources), never on deletes (upstream's handler takes `CREATE`, `UPDATE` and
//! `CONNECT`), dry runs included, never for the `admissionregistration.k8s.io` kinds. It is
//! on where `Feature::MutatingAdmissionPolicy` is: locked on in 1.36, with the gate (and
//! `admissionregistration.k8s.io/v1beta1` to serve the kinds) in 1.34.
//!
//! Errors (an expression that fails or gives the wrong type, a patch that does not apply, a
//! binding's parameters not found under `Deny`) are gathered over every invocation; under
//! `failurePolicy: Fail` they refuse the request as upstream's policy dispatcher does:
//! `admission.NewForbidden` (403) whose message is the first error, `policy '<policy>' with
//! binding '<binding>' denied request: <error>` (`policy "<policy>" denied request: ...` for
//! the policy's own configuration error), reason `Invalid` for an evaluation's error, every
//! error a cause.
//!
//! `reinvocationPolicy: IfNeeded`: an invocation whose match conditions held is run once more
//! in the second pass of the mutating plugins (`admission::reinvocation`) if a later
//! invocation changed the object, or if anything else did (the mutating webhooks after the
//! plugin's first pass, the built-in plugins of the second) since the plugin last ran, as
//! upstream's `policyReinvokeContext` decides; an invocation that changed the object is what
//! asks for that second pass. After each invocation the object is decoded and defaulted again
//! (`admission::redecode`), as upstream's `dispatchOne` runs the kind's defaulter.

use serde_json::Value;

use super::config::{self, MUTATING, Policy};
use super::evaluate::{self, OBJECT, OUT_OF_BUDGET, Prelude, VARIABLES};
use super::{inputs_of, matching, params};
use crate::cel::{Activation, RUNTIME_COST_BUDGET, mutation};
use crate::meta::{Status, StatusCause, StatusReason};
use crate::server::Call;
use crate::server::admission::reinvocation::Reinvocation;
use crate::server::admission::webhook::matching::{Matched, exempt};
use crate::server::admission::webhook::{Operation, Request};
use crate::server::handlers::managed_fields::typed::{Node, Shape};
use crate::server::handlers::patch::apply::merge::merge;
use crate::server::handlers::patch::json_patch;
use crate::server::http::error::ApiError;
use crate::server::state::release::Feature;

/// An error of one policy: its binding (none for the policy's own configuration), the message
/// and whether the reason is `Invalid` (an evaluation's error) or stays `Forbidden`.
struct PolicyError {
    policy: String,
    binding: Option<String>,
    message: String,
    invalid: bool,
}

impl PolicyError {
    /// Upstream's `PolicyError.Error()`.
    fn text(&self) -> String {
        match &self.binding {
            Some(binding) => format!(
                "policy '{}' with binding '{binding}' denied request: {}",
                self.policy, self.message
            ),
            None => format!("policy {:?} denied request: {}", self.policy, self.message),
        }
    }
}

/// The request's object and what the plugin needs to rebuild its view of it.
pub(crate) struct Target<'a> {
    pub(crate) operation: Operation,
    pub(crate) old: Option<&'a Value>,
    pub(crate) name: &'a str,
    pub(crate) dry_run: bool,
}

/// Runs the mutating admission policies bound to match the request over `object`, in the
/// pass `reinvocation` is at: in the second, only the invocations due again.
pub(crate) async fn mutate(
    call: &Call,
    target: &Target<'_>,
    object: &mut Value,
    reinvocation: &mut Reinvocation,
) -> Result<(), ApiError> {
    if target.operation == Operation::Delete
        || exempt(call)
        || !call.state.feature(Feature::MutatingAdmissionPolicy).is_on()
    {
        return Ok(());
    }
    reinvocation.policies.start(reinvocation.pass, object);
    let result = run(call, target, object, reinvocation).await;
    reinvocation.policies.finish(object);
    result
}

async fn run(
    call: &Call,
    target: &Target<'_>,
    object: &mut Value,
    reinvocation: &mut Reinvocation,
) -> Result<(), ApiError> {
    let pass = reinvocation.pass;
    let hooks = config::hooks(call, MUTATING).await?;
    let mut errors = Vec::new();
    for hook in &hooks {
        let policy = &hook.policy;
        let name = &policy.metadata.name;
        let Some(constraints) = &policy.spec.match_constraints else {
            continue;
        };
        let Some(matched) = matching::matches(
            call,
            constraints,
            &request(target, object),
            MUTATING.name,
            name,
        )
        .await?
        else {
            continue;
        };
        let kind = match &policy.spec.param_kind {
            None => None,
            Some(kind) => match params::param_kind(call, kind) {
                Ok(kind) => Some(kind),
                Err(e) => {
                    errors.push(PolicyError {
                        policy: name.clone(),
                        binding: None,
                        message: format!("failed to configure policy: {e}"),
                        invalid: false,
                    });
                    continue;
                }
            },
        };
        for binding in &hook.bindings {
            let binding_name = &binding.metadata.name;
            if let Some(resources) = &binding.spec.match_resources
                && matching::matches(
                    call,
                    resources,
                    &request(target, object),
                    MUTATING.name,
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
                    errors.push(PolicyError {
                        policy: name.clone(),
                        binding: Some(binding_name.clone()),
                        message: format!("failed to configure binding: {e}"),
                        invalid: false,
                    });
                    continue;
                }
            };
            for param in &objects {
                let key = invocation_key(name, binding_name, param.as_ref());
                if !reinvocation.policies.runs(pass, &key) {
                    continue;
                }
                let before = object.clone();
                let inputs = inputs_of(call, &request(target, object), &matched).await?;
                let params = param
                    .as_ref()
                    .map_or(::cel::Value::Null, crate::cel::value::untyped);
                let applied = match &matched {
                    Matched::Exact => apply(call, policy, &inputs, &params, object),
                    // Mutated as the version matched through, then brought back.
                    Matched::Equivalent(info) => {
                        let mut seen = crate::server::admission::to_version(
                            call,
                            object.clone(),
                            &info.api_version(),
                        )
                        .await?;
                        let applied = apply(call, policy, &inputs, &params, &mut seen);
                        *object = crate::server::admission::to_version(
                            call,
                            seen,
                            &call.info().api_version(),
                        )
                        .await?;
                        applied
                    }
                };
                let applied = applied.and_then(|ran| {
                    super::super::redecode(call, object)
                        .map(|()| ran)
                        .map_err(|e| Failed::Mutating(e.into_status().message.unwrap_or_default()))
                });
                let ran = match applied {
                    Ok(ran) => ran,
                    Err(failed) => {
                        let (ran, message) = match failed {
                            Failed::Matching(message) => (false, message),
                            Failed::Mutating(message) => (true, message),
                        };
                        errors.push(PolicyError {
                            policy: name.clone(),
                            binding: Some(binding_name.clone()),
                            message,
                            invalid: true,
                        });
                        ran
                    }
                };
                // Upstream's dispatcher counts an invocation once its match conditions held,
                // whether its mutations then failed or not.
                if ran {
                    let changed = *object != before;
                    if changed {
                        reinvocation.changed();
                    }
                    let if_needed = policy.spec.reinvocation_policy.as_deref() == Some("IfNeeded");
                    reinvocation.policies.ran(key, changed, if_needed);
                }
            }
        }
    }
    // Upstream's dispatcher drops the errors of policies that ignore failures.
    errors.retain(|e| {
        hooks
            .iter()
            .find(|h| h.policy.metadata.name == e.policy)
            .is_none_or(|h| !h.policy.ignores_failures())
    });
    if errors.is_empty() {
        Ok(())
    } else {
        Err(refusal(call, target.name, &errors))
    }
}

/// The request as matching and CEL see it.
fn request<'a>(target: &Target<'a>, object: &'a Value) -> Request<'a> {
    Request {
        operation: target.operation,
        name: target.name,
        object: Some(object),
        old: target.old,
        dry_run: target.dry_run,
    }
}

/// Upstream's invocation key: the policy, the binding and the parameter object's namespace
/// and name.
fn invocation_key(policy: &str, binding: &str, param: Option<&Value>) -> String {
    let meta = |field: &str| {
        param
            .and_then(|p| p.pointer(&format!("/metadata/{field}")))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    format!(
        "{policy}\n{binding}\n{}\n{}",
        meta("namespace"),
        meta("name")
    )
}

/// One invocation: the policy's variables and match conditions, then its mutations in order
/// over `object`, within one runtime cost budget: whether the match conditions held and the
/// mutations ran. `Err` is the first error, which ends the invocation (the mutations before it
/// stay applied, as upstream's).
fn apply(
    call: &Call,
    policy: &Policy,
    inputs: &evaluate::Inputs,
    params: &::cel::Value,
    object: &mut Value,
) -> Result<bool, Failed> {
    let prepared = match evaluate::prepare(policy, inputs, params, RUNTIME_COST_BUDGET) {
        Prelude::Run(prepared) => prepared,
        Prelude::Skip => return Ok(false),
        Prelude::Fail(message) => return Err(Failed::Matching(message)),
    };
    mutations(call, policy, prepared, object)
        .map(|()| true)
        .map_err(Failed::Mutating)
}

/// How an invocation failed: before its mutations (its match conditions) or in one of them.
enum Failed {
    Matching(String),
    Mutating(String),
}

/// The policy's mutations in order over `object`.
fn mutations(
    call: &Call,
    policy: &Policy,
    prepared: evaluate::Prepared,
    object: &mut Value,
) -> Result<(), String> {
    let names = evaluate::names(policy.spec.param_kind.is_some(), true);
    let mut budget = prepared.budget;
    for mutation in &policy.spec.mutations {
        let (source, configuration) = match (mutation.patch_type.as_str(), mutation) {
            (
                "ApplyConfiguration",
                config::Mutation {
                    apply_configuration: Some(e),
                    ..
                },
            ) => (&e.expression, true),
            (
                "JSONPatch",
                config::Mutation {
                    json_patch: Some(e),
                    ..
                },
            ) => (&e.expression, false),
            // Upstream compiles no patcher for any other shape, which validation refuses.
            _ => continue,
        };
        let program =
            mutation::compile(source, &names).map_err(|e| format!("compilation failed: {e}"))?;
        if let Some((_, error)) = prepared
            .failed
            .iter()
            .find(|(name, _)| program.selects(VARIABLES, name))
        {
            return Err(format!("expression '{source}' resulted in error: {error}"));
        }
        let mut bound = prepared.bound.clone();
        for (name, value) in &mut bound {
            if *name == OBJECT {
                *value = crate::cel::value::untyped(object);
            }
        }
        let activation = Activation::in_env(program.env(), &bound);
        let value = match budget.run(&program, &activation) {
            Err(()) => return Err(OUT_OF_BUDGET.to_owned()),
            Ok(Err(e)) => return Err(format!("expression '{source}' resulted in error: {e}")),
            Ok(Ok(value)) => value,
        };
        if configuration {
            let config = mutation::apply_configuration(&value)?;
            *object = merged(call, object, &config)?;
        } else {
            let operations = mutation::json_patch(&value)?;
            patched(object, operations)?;
        }
    }
    Ok(())
}

/// `config` merged into `live` under the kind's schema, as upstream's
/// `ApplyStructuredMergeDiff`.
fn merged(call: &Call, live: &Value, config: &Value) -> Result<Value, String> {
    let schema = call.target.kind.schema.as_ref().and_then(|source| source());
    let root = Node::root(schema.as_deref(), call.target.kind.merge);
    let mut found = Vec::new();
    atomics(config, root, "", &mut found);
    if !found.is_empty() {
        return Err(format!(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            found.join(", ")
        ));
    }
    Ok(merge(live, config, root))
}

/// The paths of the atomic lists, maps and structs an apply configuration sets (upstream's
/// `findAtomics`), which a merge would replace whole, dropping what the configuration does
/// not repeat. Only the fields of structs are followed, as upstream follows only fields its
/// schema declares.
pub(super) fn atomics(value: &Value, node: Node<'_>, path: &str, found: &mut Vec<String>) {
    let shape = node.shape(value);
    match value {
        Value::Object(fields) => {
            if shape == Shape::Atomic {
                found.push(path.to_owned());
            }
            if shape == Shape::Struct {
                for (key, item) in fields {
                    atomics(item, node.child(key), &format!("{path}.{key}"), found);
                }
            }
        }
        Value::Array(items) => {
            if shape == Shape::Atomic {
                found.push(path.to_owned());
            }
            for (i, item) in items.iter().enumerate() {
                atomics(item, node.item(), &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

/// `operations` applied to `object` with upstream's `JSONPath: ` before an error; a failed
/// `test` leaves the object as it was (`jsonpatch.ErrTestFailed`).
pub(super) fn patched(object: &mut Value, operations: Vec<Value>) -> Result<(), String> {
    let body = serde_json::to_vec(&Value::Array(operations)).map_err(|e| e.to_string())?;
    let operations = json_patch::parse(&body).map_err(|e| format!("JSONPath: {e}"))?;
    let mut patched = object.clone();
    match json_patch::apply(&mut patched, &operations) {
        Ok(()) => {
            *object = patched;
            Ok(())
        }
        Err(e) if e.to_string().ends_with("test failed") => Ok(()),
        Err(e) => Err(format!("JSONPath: {e}")),
    }
}

/// Upstream's refusal: `admission.NewForbidden` with the first error's text as the message,
/// its reason (`Invalid` for an evaluation's error) and every error a cause.
fn refusal(call: &Call, name: &str, errors: &[PolicyError]) -> ApiError {
    let subject = call.subject(name);
    let mut status: Status = Status::forbidden(
        subject.group,
        subject.resource,
        name,
        "admission request denied by policy",
    );
    if let Some(first) = errors.first() {
        status.message = Some(first.text());
        if first.invalid {
            status.reason = Some(StatusReason::from("Invalid"));
        }
    }
    let details = status.details.get_or_insert_with(Default::default);
    for error in errors {
        details.causes.push(StatusCause {
            reason: None,
            message: Some(error.text()),
            field: None,
        });
    }
    ApiError::from_status(status)
}

#[cfg(test)]
mod tests;
