//! Upstream's MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/`): the webhooks of the stored
//! `admissionregistration.k8s.io` configurations (`config`), called when they match the
//! request (`matching`) with an `AdmissionReview` (`review`) over HTTPS (`http::webhook`, the client conversion webhooks
//! share); a mutating
//! webhook's JSON patch is applied to the object (`patch`). A webhook matched through an
//! equivalent version or group (`matchPolicy: Equivalent`) is sent the objects converted to it,
//! and its patch is converted back.
//!
//! Mutating webhooks run one after another in configuration name order, after the built-in
//! mutating plugins and the mutating admission policies; one that changes the object asks for
//! the second pass of the mutating plugins (`admission::reinvocation`), where the webhooks
//! with `reinvocationPolicy: IfNeeded` run once more if a later webhook changed the object,
//! or anything else did since the webhooks last ran (`mutating/dispatcher.go`,
//! `webhookReinvokeContext`). Validating
//! webhooks run in parallel after validation and the built-in validating plugins but
//! ResourceQuota, which upstream orders last (`AllOrderedPlugins`); the first refusal in
//! webhook order answers.
//!
//! What a webhook's answer does, as upstream: a refusal is `admission webhook "<name>" denied
//! the request: <message>` with the webhook's code (400 when it gives none below 400,
//! `webhookerrors.ToStatusErr`); a failure to call it or an answer that is not a valid review
//! is `Internal error occurred: failed calling webhook "<name>": ...` (500) under
//! `failurePolicy: Fail` and is logged and passed over under `Ignore`; a dry run reaches only
//! webhooks declaring `sideEffects` `None` or `NoneOnDryRun`, others refuse it (400,
//! `NewDryRunUnsupportedErr`); warnings go to the answer's `Warning` headers. The request's
//! audit events are annotated as upstream's dispatchers annotate them: the answer's
//! `auditAnnotations` as `<webhook>/<key>`; per mutating invocation whether it changed the
//! object and (at level `Request` and above) its patch; a webhook that failed open.

pub(super) mod config;
pub(super) mod matching;
mod patch;
pub(super) mod review;

use serde_json::{Value, json};

use crate::meta::{Status, StatusOutcome};
use crate::server::Call;
use crate::server::admission::reinvocation::{Pass, Reinvocation};
use crate::server::http::error::ApiError;
use crate::server::http::webhook as client;

use config::{Kind, Webhook};
use matching::Matched;

/// The operation admitted, as webhook rules name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Create,
    Update,
    Delete,
    /// A connect subresource (`exec`, `attach`, `portforward`), admitted over its options.
    Connect,
}

impl Operation {
    pub(in crate::server::admission) fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What a webhook is asked about: the object written (none for a delete), the object before
/// (updates and deletes), the object's name (empty for a generated one) and the dry run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    pub(crate) operation: Operation,
    pub(crate) name: &'a str,
    pub(crate) object: Option<&'a Value>,
    pub(crate) old: Option<&'a Value>,
    pub(crate) dry_run: bool,
}

/// How one call went wrong: the webhook could not be called or answered nonsense (what its
/// failure policy decides about), or the request is refused whatever the policy.
enum Failure {
    Calling(String),
    Refused(ApiError),
}

/// Runs the mutating webhooks over `object`, in the pass `reinvocation` is at: in the second,
/// only those due again.
pub(crate) async fn mutate(
    call: &Call,
    request: Request<'_>,
    object: &mut Value,
    reinvocation: &mut Reinvocation,
) -> Result<(), ApiError> {
    let hooks = config::webhooks(call, Kind::Mutating).await?;
    let pass = reinvocation.pass;
    reinvocation.webhooks.start(pass, object);
    let mut outcome = Ok(());
    for (index, hook) in hooks.iter().enumerate() {
        // Upstream's webhook accessor UID.
        let key = format!("{}/{}/{}", hook.configuration, hook.name, hook.index);
        if !reinvocation.webhooks.runs(pass, &key) {
            continue;
        }
        let annotations = Annotations {
            call,
            hook,
            suffix: format!("round_{}_index_{index}", u8::from(pass == Pass::Second)),
        };
        match mutate_once(call, hook, &request, object, &annotations).await {
            Err(e) => {
                outcome = Err(e);
                break;
            }
            Ok(None) => {}
            Ok(Some(changed)) => {
                if changed {
                    reinvocation.changed();
                }
                reinvocation
                    .webhooks
                    .ran(key, changed, hook.reinvoked_if_needed());
            }
        }
    }
    reinvocation.webhooks.finish(object);
    outcome
}

/// The audit annotations of one mutating webhook's invocation (upstream's
/// `webhookAnnotator`): whether it changed the object, its patch (at level `Request` and
/// above), and that it failed open; keyed by the pass and the webhook's place among all.
struct Annotations<'a> {
    call: &'a Call,
    hook: &'a Webhook,
    /// `round_<pass>_index_<place>`.
    suffix: String,
}

impl Annotations<'_> {
    fn mutated(&self, mutated: bool) {
        let value = json!({
            "configuration": self.hook.configuration,
            "webhook": self.hook.name,
            "mutated": mutated,
        });
        self.call.annotate(
            format!("mutation.webhook.admission.k8s.io/{}", self.suffix),
            value.to_string(),
        );
    }

    fn patched(&self, patch: &[u8]) {
        let Ok(mut patch) = serde_json::from_slice::<Value>(patch) else {
            return;
        };
        // Each operation's fields in order, as Go writes the maps upstream decodes them to.
        for operation in patch.as_array_mut().into_iter().flatten() {
            if let Some(fields) = operation.as_object_mut() {
                fields.sort_keys();
            }
        }
        let value = json!({
            "configuration": self.hook.configuration,
            "webhook": self.hook.name,
            "patch": patch,
            "patchType": "JSONPatch",
        });
        self.call.annotate_request_level(
            format!("patch.webhook.admission.k8s.io/{}", self.suffix),
            value.to_string(),
        );
    }

    fn failed_open(&self) {
        self.call.annotate(
            format!(
                "failed-open.mutation.webhook.admission.k8s.io/{}",
                self.suffix
            ),
            self.hook.name.clone(),
        );
    }
}

/// One mutating webhook, if it matches: `None` when it was not called, else whether it
/// changed the object (not when the call failed and the webhook ignores failures).
async fn mutate_once(
    call: &Call,
    hook: &Webhook,
    request: &Request<'_>,
    object: &mut Value,
    annotations: &Annotations<'_>,
) -> Result<Option<bool>, ApiError> {
    let operation = request.operation;
    let deleting = operation == Operation::Delete;
    let request = Request {
        object: (!deleting).then_some(&*object),
        ..*request
    };
    // A matching error (upstream's ShouldCallHook) answers the request before the invocation
    // is annotated; from here on, whatever happens, it is.
    let Some(invocation) = invocation(call, hook, &request).await? else {
        return Ok(None);
    };
    let called = invoke(call, invocation, &request, true).await;
    let outcome = patch_once(call, hook, operation, called, object, annotations).await;
    annotations.mutated(matches!(outcome, Ok(true)));
    outcome.map(Some)
}

/// Whether a webhook's JSON patch has no operation (none sent, or `[]`), which upstream takes as
/// no patch: nothing to annotate, and no attempt to modify a deleted object.
fn no_operations(patch: &[u8]) -> bool {
    patch.is_empty()
        || serde_json::from_slice::<Vec<serde::de::IgnoredAny>>(patch)
            .is_ok_and(|ops| ops.is_empty())
}

/// [`mutate_once`]'s patch, once the webhook was `called`: whether it changed the object;
/// `Err` for refusals.
async fn patch_once(
    call: &Call,
    hook: &Webhook,
    operation: Operation,
    called: Called,
    object: &mut Value,
    annotations: &Annotations<'_>,
) -> Result<bool, ApiError> {
    let deleting = operation == Operation::Delete;
    let (verdict, converted) = match called {
        Called::FailedOpen => {
            annotations.failed_open();
            return Ok(false);
        }
        Called::Refused(error) => return Err(error),
        Called::Answered(verdict, converted) => (verdict, converted),
    };
    if deleting && !no_operations(&verdict.patch) {
        return Err(ApiError::internal(format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            hook.name
        )));
    }
    // A webhook matched through an equivalent version patches the object it was sent, which
    // then goes back to the requested version.
    let mut seen = converted.and_then(|c| c.object);
    let patched = match &mut seen {
        Some(seen) => patch::apply(seen, &verdict.patch),
        None => patch::apply(object, &verdict.patch),
    };
    match patched {
        Ok(changed) => {
            if !no_operations(&verdict.patch) {
                annotations.patched(&verdict.patch);
            }
            if changed {
                if let Some(seen) = seen {
                    let requested = call.info().api_version();
                    *object = super::to_version(call, seen, &requested).await?;
                }
                // A CONNECT's options are no object of the kind to decode.
                if operation != Operation::Connect {
                    super::redecode(call, object)?;
                }
            }
            Ok(changed)
        }
        Err(patch::PatchError::Undecodable(e)) => {
            failed(
                hook,
                format!("received undecodable patch in webhook response: {e}"),
            )?;
            annotations.failed_open();
            Ok(false)
        }
        Err(patch::PatchError::Unappliable(e)) => Err(ApiError::internal(e)),
    }
}

/// The mutating webhooks of a delete of `old`, which see no object and may not patch one (the
/// validating ones run after, as upstream's `AdmissionToValidateObjectDeleteFunc`).
pub(crate) async fn mutate_delete(
    call: &Call,
    old: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let request = Request {
        operation: Operation::Delete,
        name,
        object: None,
        old: Some(old),
        dry_run,
    };
    // Nothing to patch, so nothing to reinvoke.
    mutate(
        call,
        request,
        &mut Value::Null,
        &mut Reinvocation::default(),
    )
    .await
}

/// Runs the validating webhooks, in parallel.
pub(crate) async fn validate(call: &Call, request: Request<'_>) -> Result<(), ApiError> {
    let hooks = config::webhooks(call, Kind::Validating).await?;
    if hooks.is_empty() {
        return Ok(());
    }
    // Upstream's dispatcher picks the webhooks to call first, then calls them in parallel,
    // numbering them among themselves.
    let mut invocations = Vec::new();
    for hook in &hooks {
        invocations.extend(invocation(call, hook, &request).await?);
    }
    let calls = invocations
        .into_iter()
        .enumerate()
        .map(|(index, invocation)| async move {
            let name = invocation.hook.name.clone();
            match invoke(call, invocation, &request, false).await {
                Called::Refused(error) => Err(error),
                Called::FailedOpen => {
                    call.annotate(
                        format!(
                            "failed-open.validating.webhook.admission.k8s.io/round_0_index_{index}"
                        ),
                        name,
                    );
                    Ok(())
                }
                Called::Answered(..) => Ok(()),
            }
        });
    for outcome in futures_util::future::join_all(calls).await {
        outcome?;
    }
    Ok(())
}

/// The request's objects converted to the version a webhook or policy matched through
/// (`matchPolicy: Equivalent`), and that version's resource.
pub(in crate::server::admission) struct Converted {
    pub(in crate::server::admission) seen_as: std::sync::Arc<crate::ResourceInfo>,
    object: Option<Value>,
    old: Option<Value>,
}

impl Converted {
    /// `request`'s objects converted to `seen_as`'s version; a conversion that fails is the
    /// server's error, as upstream's `ConvertVersionedAttributes`.
    pub(in crate::server::admission) async fn of(
        call: &Call,
        request: &Request<'_>,
        seen_as: std::sync::Arc<crate::ResourceInfo>,
    ) -> Result<Self, ApiError> {
        let to = seen_as.api_version();
        let mut converted = Self {
            seen_as,
            object: None,
            old: None,
        };
        if let Some(object) = request.object {
            converted.object = Some(super::to_version(call, object.clone(), &to).await?);
        }
        if let Some(old) = request.old {
            converted.old = Some(super::to_version(call, old.clone(), &to).await?);
        }
        Ok(converted)
    }

    /// The request as the webhook or policy sees it.
    pub(in crate::server::admission) fn request<'a>(
        &'a self,
        request: &Request<'a>,
    ) -> Request<'a> {
        Request {
            object: self.object.as_ref(),
            old: self.old.as_ref(),
            ..*request
        }
    }
}

/// What came of a webhook that may be called.
enum Called {
    /// It was called and failed, and it ignores failures.
    FailedOpen,
    /// It was called and the request is refused: it denied it, or the call failed and the
    /// webhook does not ignore failures.
    Refused(ApiError),
    /// It allowed the request: its verdict, with the objects it was sent when it matched
    /// through an equivalent version.
    Answered(Box<review::Verdict>, Option<Converted>),
}

/// A webhook to be called about the request (upstream's `WebhookInvocation`): the review it is
/// sent, and the objects converted for it when it matched through an equivalent version.
struct Invocation<'h> {
    hook: &'h Webhook,
    converted: Option<Converted>,
    uid: String,
    review: Value,
}

/// `hook`'s invocation, if its rules, selectors and match conditions let it be called about
/// the request (upstream's `ShouldCallHook`); `Err` answers the request.
async fn invocation<'h>(
    call: &Call,
    hook: &'h Webhook,
    request: &Request<'_>,
) -> Result<Option<Invocation<'h>>, ApiError> {
    let converted = match matching::matched(call, hook, request) {
        None => return Ok(None),
        Some(Matched::Exact) => None,
        Some(Matched::Equivalent(seen_as)) => Some(Converted::of(call, request, seen_as).await?),
    };
    let seen = converted.as_ref().map_or(*request, |c| c.request(request));
    let version = hook.review_version().unwrap_or("v1");
    let seen_as = converted.as_ref().map(|c| &*c.seen_as);
    let (uid, review) = review::request(call, &seen, version, seen_as);
    if !matching::selected(call, hook, &seen, &review["request"]).await? {
        return Ok(None);
    }
    Ok(Some(Invocation {
        hook,
        converted,
        uid,
        review,
    }))
}

/// Calls a webhook and reads its answer.
async fn invoke(
    call: &Call,
    invocation: Invocation<'_>,
    request: &Request<'_>,
    mutating: bool,
) -> Called {
    let Invocation {
        hook,
        converted,
        uid,
        review,
    } = invocation;
    let seen = converted.as_ref().map_or(*request, |c| c.request(request));
    match call_hook(call, hook, &seen, &uid, &review, mutating).await {
        Ok(verdict) => {
            if let Ok(mut warnings) = call.warnings.lock() {
                warnings.extend(verdict.warnings.iter().cloned());
            }
            for (key, value) in &verdict.audit_annotations {
                let key = format!("{}/{key}", hook.name);
                // Upstream's `AddAnnotation` takes only a qualified name (and logs the rest).
                if crate::names::is_qualified_name(&key) {
                    call.annotate(key, value.clone());
                } else {
                    tracing::warn!(webhook = %hook.name, %key, "admission audit annotation with an invalid key dropped");
                }
            }
            if verdict.allowed {
                Called::Answered(Box::new(verdict), converted)
            } else {
                Called::Refused(denied(hook, verdict.status))
            }
        }
        Err(Failure::Refused(e)) => Called::Refused(e),
        Err(Failure::Calling(reason)) => match failed(hook, reason) {
            Ok(()) => Called::FailedOpen,
            Err(refused) => Called::Refused(refused),
        },
    }
}

async fn call_hook(
    call: &Call,
    hook: &Webhook,
    request: &Request<'_>,
    uid: &str,
    review: &Value,
    mutating: bool,
) -> Result<review::Verdict, Failure> {
    if request.dry_run && !hook.dry_run_safe() {
        if hook.side_effects.is_none() {
            return Err(Failure::Calling("Webhook SideEffects is nil".to_owned()));
        }
        return Err(Failure::Refused(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        ))));
    }
    let Some(version) = hook.review_version() else {
        return Err(Failure::Calling(
            "webhook does not accept known AdmissionReview versions".to_owned(),
        ));
    };
    let timeout = hook.timeout();
    let target = client::target(call, &hook.client_config, timeout)
        .await
        .map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
    let body = serde_json::to_vec(review).map_err(|e| Failure::Refused(ApiError::internal(e)))?;
    let answer = client::post(&target, body, timeout)
        .await
        .map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
    review::verify(&answer, uid, version, mutating)
        .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))
}

/// A failure to call `hook` (`reason`): passed over under `failurePolicy: Ignore`, else 500.
fn failed(hook: &Webhook, reason: String) -> Result<(), ApiError> {
    let message = format!("failed calling webhook {:?}: {reason}", hook.name);
    if hook.ignores_failures() {
        tracing::warn!(webhook = %hook.name, error = %message, "failed calling webhook, failing open");
        return Ok(());
    }
    Err(ApiError::internal(message))
}

/// A refusal, as upstream's `ToStatusErr`: the webhook's status with a code of at least 400
/// (400 when it gave a lower one or none), `Failure`, and the message naming the webhook.
fn denied(hook: &Webhook, status: Option<Status>) -> ApiError {
    let mut status = status.unwrap_or_default();
    let denied_by = format!("admission webhook {:?} denied the request", hook.name);
    if status.code.is_none_or(|c| c < 400) {
        status.code = Some(400);
    }
    status.status = Some(StatusOutcome::Failure);
    let message = status.message.as_deref().filter(|m| !m.is_empty());
    let reason = status.reason.as_ref().map(|r| r.to_string());
    status.message = Some(
        match (message, reason.as_deref().filter(|r| !r.is_empty())) {
            (Some(m), _) => format!("{denied_by}: {m}"),
            (None, Some(r)) => format!("{denied_by}: {r}"),
            (None, None) => format!("{denied_by} without explanation"),
        },
    );
    status.kind = Some("Status".to_owned());
    status.api_version = Some("v1".to_owned());
    ApiError::from_status(status)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Webhook, denied};
    use crate::meta::Status;

    fn hook() -> Webhook {
        serde_json::from_value(json!({"name": "deny.example.com"})).expect("webhook")
    }

    #[test]
    fn webhook_denials_read_as_upstreams_to_status_err() {
        let plain = denied(&hook(), None);
        assert_eq!(plain.code().as_u16(), 400);
        let text = serde_json::to_value(plain.status()).expect("status");
        assert_eq!(
            text["message"],
            r#"admission webhook "deny.example.com" denied the request without explanation"#
        );
        let given: Status =
            serde_json::from_value(json!({"code": 403, "message": "no"})).expect("status");
        let with_code = denied(&hook(), Some(given));
        assert_eq!(with_code.code().as_u16(), 403);
        assert_eq!(
            with_code.status().message.as_deref(),
            Some(r#"admission webhook "deny.example.com" denied the request: no"#)
        );
        let low: Status = serde_json::from_value(json!({"code": 200})).expect("status");
        assert_eq!(denied(&hook(), Some(low)).code().as_u16(), 400);
    }

    #[test]
    fn webhook_defaults_are_upstreams_v1_defaults() {
        let h = hook();
        assert!(!h.ignores_failures());
        assert_eq!(h.timeout().as_secs(), 10);
        assert!(!h.dry_run_safe());
        let long: Webhook =
            serde_json::from_value(json!({"name": "a", "timeoutSeconds": 90})).expect("webhook");
        assert_eq!(long.timeout().as_secs(), 30);
    }
}
