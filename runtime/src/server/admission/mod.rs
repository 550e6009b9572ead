//! RBAC's escalation prevention (`escalation`), which upstream's storage of roles and bindings
//! runs first on a create and here before the validating plugins of an update; and the default
//! admission plugins that shape built-in objects, as kube-apiserver runs them:
//! mutating admission after the decoder's defaulting and before validation, in upstream's
//! plugin order (`kubeapiserver/options/plugins.go`, `AllOrderedPlugins`): `limit_ranger`
//! (LimitRanger), `service_account` (ServiceAccount), `node_restriction` (NodeRestriction, when
//! `--enable-admission-plugins` names it; also on subresources and deletes), `priority` (Priority),
//! `default_toleration_seconds` (DefaultTolerationSeconds), `default_storage_class`
//! (DefaultStorageClass) and `storage_protection` (StorageObjectInUseProtection); validating
//! admission after validation: Priority's check of PriorityClasses and `resource_quota`
//! (ResourceQuota), and on updates LimitRanger's limits of claims and ResourceQuota. NamespaceLifecycle is the namespace check of the create handler. Each
//! plugin but NodeRestriction acts on the main resource only, never on a subresource, as
//! upstream's do; a dry run
//! runs them too (without charging quotas).
//!
//! Plugins read the objects they depend on (limit ranges, service accounts, priority classes,
//! storage classes, quotas) straight from the store by key (`storage`).
//!
//! `webhook` is upstream's MutatingAdmissionWebhook and ValidatingAdmissionWebhook: the
//! mutating webhooks run last of the mutating plugins, the validating ones after the built-in
//! validating plugins but before ResourceQuota, and both on deletes (with the old object).
//! `policy` is upstream's ValidatingAdmissionPolicy plugin, which runs just before the
//! validating webhooks (`AllOrderedPlugins`), on creates, updates and deletes alike, and
//! shares the webhooks' matching; `policy::mutating` is its MutatingAdmissionPolicy plugin,
//! run just before the mutating webhooks on creates and updates. When a policy or a webhook
//! changed the object, the mutating plugins run a second time, the policies and webhooks only
//! for their invocations with `reinvocationPolicy: IfNeeded` that are due (`reinvocation`, as
//! upstream's admission chain is wrapped in its reinvocation handler).
//!
//! Writes through subresources are admitted as upstream admits them, with the kind the
//! subresource takes (`describe::discovery`'s): an update of a `scale` over the new and old
//! `autoscaling/v1` Scale, a pod's `binding` and `eviction` and a service account's `token`
//! as creates of their Binding, Eviction and TokenRequest, and the `exec`, `attach`,
//! `portforward` and `proxy` subresources as a CONNECT of their options.
//!
//! May import `objects`, `state`, `http`, `describe::discovery` (the kinds of subresources)
//! and, for webhooks' and policies' patches, the JSON patch engine and the apply merge of
//! `handlers::patch` (with `handlers::managed_fields`' schema walk); imported by the handlers
//! that write (create, update, delete, scale, binding, eviction, token) and connect.

pub(crate) mod authorizer;
mod default_storage_class;
mod default_toleration_seconds;
mod escalation;
mod limit_ranger;
mod node_restriction;
pub(crate) mod policy;
mod priority;
mod reinvocation;
mod resource_quota;
mod service_account;
mod storage;
mod storage_protection;
pub(crate) mod webhook;

use serde_json::Value;

use crate::server::Call;
use crate::server::http::error::ApiError;
use reinvocation::Reinvocation;
use webhook::Operation;

/// Whether the request writes the main resource `plural` of the core group (the resources
/// every plugin here acts on are core's).
fn writes_core(call: &Call, plural: &str) -> bool {
    call.target.sub.is_none() && call.target.group().is_empty() && call.target.plural() == plural
}

/// An object a webhook's patch or a mutating policy changed, decoded through its kind's type
/// and defaulted again, as upstream's dispatchers decode the patched JSON into the versioned
/// object and run the kind's defaulter on it (`webhook/mutating/dispatcher.go`,
/// `policy/mutating/dispatcher.go`): fields the kind does not have are dropped and fields it
/// defaults are filled. An object of another kind than the resource's (the `Binding` or
/// `Eviction` a pod's subresource takes) is left as it is. A patched object that no longer
/// decodes is upstream's internal error.
pub(super) fn redecode(call: &Call, object: &mut Value) -> Result<(), ApiError> {
    if !of_resource_kind(call, object) {
        return Ok(());
    }
    let decoded = crate::server::handlers::object::through_codec(call, std::mem::take(object))
        .map_err(|e| ApiError::internal(e.into_status().message.unwrap_or_default()))?;
    *object = decoded;
    Ok(())
}

/// Whether `object` is of the resource's own kind rather than of the kind a subresource takes
/// (a Scale, a TokenRequest, a Binding, an Eviction or a CONNECT's options).
fn of_resource_kind(call: &Call, object: &Value) -> bool {
    let kind = object.get("kind").and_then(Value::as_str);
    kind.is_none_or(|kind| kind == call.info().gvk.kind)
}

/// `object` converted to `api_version` of the request's resource, as upstream's dispatchers
/// convert the versioned attributes to a kind matched through an equivalent resource and
/// back. An object of a subresource's own kind is left as it is: its kind is the same at every
/// version of the resource (a custom resource's Scale is `autoscaling/v1` at all of them).
pub(super) async fn to_version(
    call: &Call,
    object: Value,
    api_version: &str,
) -> Result<Value, ApiError> {
    if !of_resource_kind(call, &object) {
        return Ok(object);
    }
    crate::server::objects::stored::to_version(call, object, api_version).await
}

/// The mutating plugins of a create, in upstream's order, the mutating admission policies and
/// then the mutating webhooks last; all of them once more if a policy or a webhook changed the
/// object (`reinvocation`). `name` is the object's name as errors show it (empty for a
/// generated name, as upstream's admission sees it).
pub(crate) async fn admit_create(
    call: &Call,
    object: &mut Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    escalation::check(call, object, None)?;
    let mut reinvocation = Reinvocation::default();
    loop {
        limit_ranger::admit(call, object, name).await?;
        if writes_core(call, "pods") {
            service_account::admit(call, object, name).await?;
        }
        let write = node_restriction::Write {
            operation: Operation::Create,
            name,
            object: Some(object),
            old: None,
        };
        node_restriction::admit(call, write).await?;
        if writes_core(call, "pods") {
            priority::admit_create(call, object, name).await?;
            default_toleration_seconds::admit(object);
        }
        if writes_core(call, "persistentvolumeclaims") {
            default_storage_class::admit(call, object, name).await?;
        }
        storage_protection::admit(call, object);
        let request = write_request(Operation::Create, name, None, dry_run);
        mutate_last(call, request, object, &mut reinvocation).await?;
        if !reinvocation.next_pass() {
            return Ok(());
        }
    }
}

/// The request a write's policies and webhooks are asked about; its object is the one they
/// mutate.
fn write_request<'a>(
    operation: Operation,
    name: &'a str,
    old: Option<&'a Value>,
    dry_run: bool,
) -> webhook::Request<'a> {
    webhook::Request {
        operation,
        name,
        object: None,
        old,
        dry_run,
    }
}

/// The last of a write's mutating plugins: the mutating admission policies, then the mutating
/// webhooks, each running in the pass `reinvocation` is at.
async fn mutate_last(
    call: &Call,
    request: webhook::Request<'_>,
    object: &mut Value,
    reinvocation: &mut Reinvocation,
) -> Result<(), ApiError> {
    let target = policy::mutating::Target {
        operation: request.operation,
        old: request.old,
        name: request.name,
        dry_run: request.dry_run,
    };
    policy::mutating::mutate(call, &target, object, reinvocation).await?;
    webhook::mutate(call, request, object, reinvocation).await
}

/// The admission of a create through a subresource that acts on its parent rather than
/// storing the object it takes (a pod's `binding` and `eviction`): the mutating admission
/// policies and webhooks (a second pass of them if one changed the object), then the
/// validating admission policies and webhooks; the built-in plugins act on stored objects of
/// the main resources only.
pub(crate) async fn admit_action(
    call: &Call,
    object: &mut Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    mutate_action(call, object, name, dry_run).await?;
    validate_action(call, object, name, dry_run).await
}

/// The mutating half of [`admit_action`]: NodeRestriction, then the mutating admission
/// policies and webhooks, all once more if a policy or a webhook changed the object.
async fn mutate_action(
    call: &Call,
    object: &mut Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let mut reinvocation = Reinvocation::default();
    loop {
        let write = node_restriction::Write {
            operation: Operation::Create,
            name,
            object: Some(object),
            old: None,
        };
        node_restriction::admit(call, write).await?;
        let request = write_request(Operation::Create, name, None, dry_run);
        mutate_last(call, request, object, &mut reinvocation).await?;
        if !reinvocation.next_pass() {
            return Ok(());
        }
    }
}

/// The validating half of [`admit_action`]: the validating admission policies and webhooks.
async fn validate_action(
    call: &Call,
    object: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let request = webhook::Request {
        operation: Operation::Create,
        name,
        object: Some(object),
        old: None,
        dry_run,
    };
    validate_last(call, request).await
}

/// The last of the validating plugins, as upstream orders them: the validating admission
/// policies, then the validating webhooks.
async fn validate_last(call: &Call, request: webhook::Request<'_>) -> Result<(), ApiError> {
    policy::validate(call, &request).await?;
    webhook::validate(call, request).await
}

/// The admission of a CONNECT (a pod's `exec`, `attach`, `portforward`, the `proxy` of a pod,
/// a Service or a Node), as upstream's `ConnectResource` runs it before it connects: the
/// mutating webhooks over the request's options object (`PodExecOptions`, `PodProxyOptions`,
/// ...), which may change it, then the validating admission policies and webhooks. The
/// built-in plugins and mutating admission policies take no CONNECT.
pub(crate) async fn admit_connect(
    call: &Call,
    options: &mut Value,
    name: &str,
) -> Result<(), ApiError> {
    let request = write_request(Operation::Connect, name, None, false);
    webhook::mutate(call, request, options, &mut Reinvocation::default()).await?;
    let request = webhook::Request {
        operation: Operation::Connect,
        name,
        object: Some(options),
        old: None,
        dry_run: false,
    };
    validate_last(call, request).await
}

/// The mutating plugins of an update, in upstream's order: of the built-in ones (which act on
/// the main resource only) none reads the store (ServiceAccount and
/// StorageObjectInUseProtection act on creates only); the mutating webhooks last; all of them
/// once more if a policy or a webhook changed the object.
pub(crate) async fn admit_update(
    call: &Call,
    object: &mut Value,
    old: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let mut reinvocation = Reinvocation::default();
    loop {
        let write = node_restriction::Write {
            operation: Operation::Update,
            name,
            object: Some(object),
            old: Some(old),
        };
        node_restriction::admit(call, write).await?;
        if writes_core(call, "pods") {
            priority::admit_update(object, old);
            default_toleration_seconds::admit(object);
        }
        let request = write_request(Operation::Update, name, Some(old), dry_run);
        mutate_last(call, request, object, &mut reinvocation).await?;
        if !reinvocation.next_pass() {
            return Ok(());
        }
    }
}

/// The validating plugins of a create, after validation, in upstream's order: Priority (one
/// global default class), the validating admission policies, the validating webhooks and
/// ResourceQuota (which charges the
/// namespace's quotas unless `dry_run`).
pub(crate) async fn validate_create(
    call: &Call,
    object: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    priority::validate_class_create(call, object, name).await?;
    let request = webhook::Request {
        operation: Operation::Create,
        name,
        object: Some(object),
        old: None,
        dry_run,
    };
    validate_last(call, request).await?;
    resource_quota::check_create(call, object, name, dry_run).await
}

/// The validating plugins of an update, in upstream's order: LimitRanger's limits of a claim
/// (a pod's containers cannot change, so upstream skips pod updates), the validating admission
/// policies and webhooks (also for subresources) and ResourceQuota (what the update uses beyond the old object,
/// charged unless `dry_run`); all but the webhooks act on the main resource only.
pub(crate) async fn validate_update(
    call: &Call,
    object: &Value,
    old: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    if call.target.sub.is_none() {
        escalation::check(call, object, Some(old))?;
    }
    if writes_core(call, "persistentvolumeclaims") {
        limit_ranger::admit(call, &mut object.clone(), name).await?;
    }
    let request = webhook::Request {
        operation: Operation::Update,
        name,
        object: Some(object),
        old: Some(old),
        dry_run,
    };
    validate_last(call, request).await?;
    // ResourceQuota picks the subresources it evaluates (a pod's `resize`).
    resource_quota::check_update(call, object, old, name, dry_run).await?;
    Ok(())
}

/// The admission of a delete of `old`: the mutating webhooks, then the validating admission
/// policies and webhooks (the built-in plugins kapi runs act on creates and updates).
pub(crate) async fn admit_delete(
    call: &Call,
    old: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let write = node_restriction::Write {
        operation: Operation::Delete,
        name,
        object: None,
        old: Some(old),
    };
    node_restriction::admit(call, write).await?;
    webhook::mutate_delete(call, old, name, dry_run).await?;
    let request = webhook::Request {
        operation: Operation::Delete,
        name,
        object: None,
        old: Some(old),
        dry_run,
    };
    validate_last(call, request).await
}

/// The mutating admission of a `TokenRequest` for service account `name`
/// (`serviceaccounts/token`), which stores nothing, as upstream's create handler runs it
/// before the token storage looks at the request: NodeRestriction, then the mutating
/// admission policies and webhooks, whose changes the token is made from.
pub(crate) async fn admit_token_request(
    call: &Call,
    request: &mut Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    mutate_action(call, request, name, dry_run).await
}

/// The validating admission of a `TokenRequest`, which upstream's `TokenREST.Create` runs once
/// the request is completed (its audiences defaulted, its metadata filled) and validated,
/// before it looks up the bound object: the validating admission policies and webhooks.
pub(crate) async fn validate_token_request(
    call: &Call,
    request: &Value,
    name: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    validate_action(call, request, name, dry_run).await
}

/// A 403 Forbidden from an admission plugin: `<resource> "<name>" is forbidden: <reason>`,
/// as upstream's `admission.NewForbidden`.
fn forbidden(call: &Call, name: &str, reason: &str) -> ApiError {
    ApiError::forbidden(call.subject(name), reason)
}
