//! Objects between the store and the client: [`to_stored`] converts a write to the storage
//! version and drops `metadata.resourceVersion`, which is the key's mod revision;
//! [`from_stored`] converts a read back to the requested version and fills the resourceVersion
//! in, so it can never disagree with the store. Two things convert: a built-in's
//! [`Family`] (`kapi::conversion`, named by its `ResourceInfo`), and the versions of a kind
//! registered with conversions (`Registry::register_versions`), and a custom resource whose
//! CRD converts through a webhook (`conversion_webhook`). Gets, list items, watch events and
//! write answers all go through it.
//!
//! Only the webhook is asynchronous. Paths that render stored bytes synchronously (list pages,
//! the watch cache's entries, a watcher catching up from the store) first bring the values to
//! the requested version with [`converted_value`] and then render them with
//! [`from_stored_converted`]; every other path calls the asynchronous [`from_stored`], which
//! does both. Imports `json`, `conversion_webhook` and `error` from the server (and the `Call`
//! it reads).

use serde_json::Value;

use crate::conversion::{ConversionError, Family};
use crate::crd::{ConversionWebhook, VersionConverter};
use crate::storage::{Bytes, KeyValue, WatchEvent};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::objects::conversion_webhook;
use crate::server::objects::json::meta_mut;

/// What converts the call's resource between its versions.
#[derive(Clone, Copy)]
enum Conversion<'a> {
    /// A built-in's family.
    Family(&'static Family),
    /// Versions registered with their `From` impls.
    Typed(&'a VersionConverter),
    /// A CRD's conversion webhook.
    Webhook(&'a ConversionWebhook),
}

fn conversion(call: &Call) -> Option<Conversion<'_>> {
    let info = call.info();
    if let Some(family) = info.family {
        return Some(Conversion::Family(family));
    }
    if let Some(typed) = call
        .registry
        .conversion(&info.gvk.group, &info.plural)
        .filter(|c| c.has_version(&info.gvk.version))
    {
        return Some(Conversion::Typed(typed));
    }
    webhook(call).map(Conversion::Webhook)
}

/// The conversion webhook of the call's resource, when its CRD converts through one.
fn webhook(call: &Call) -> Option<&ConversionWebhook> {
    let info = call.info();
    call.registry
        .conversion_webhook(&info.gvk.group, &info.plural)
        .filter(|w| w.versions.iter().any(|v| *v == info.gvk.version))
        .map(|w| &**w)
}

/// Whether the call's resource converts through a CRD's conversion webhook.
pub(crate) fn has_webhook(call: &Call) -> bool {
    webhook(call).is_some()
}

/// Whether the call's resource converts between versions, so that objects equal as served
/// may differ as stored (and the other way round).
pub(crate) fn converts(call: &Call) -> bool {
    conversion(call).is_some()
}

/// `object` converted to the `apiVersion` `to`: a write that cannot be converted is the
/// client's 400 (a built-in's rule found a value it cannot read, such as a malformed
/// annotation a conversion keeps data in), any other failure the server's 500 naming the
/// versions and why.
async fn convert(
    call: &Call,
    how: Conversion<'_>,
    object: Value,
    to: &str,
) -> Result<Value, ApiError> {
    match how {
        Conversion::Webhook(hook) => conversion_webhook::convert(call, hook, object, to).await,
        _ => convert_here(call, how, object, to),
    }
}

/// [`convert`] without the webhook, which a caller must have run before: a webhook's
/// resource reaching here is the server's error.
fn convert_here(
    call: &Call,
    how: Conversion<'_>,
    object: Value,
    to: &str,
) -> Result<Value, ApiError> {
    let from = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let info = call.info();
    let failed = |reason: &dyn std::fmt::Display| {
        let resource = if info.gvk.group.is_empty() {
            info.plural.to_string()
        } else {
            format!("{}.{}", info.plural, info.gvk.group)
        };
        format!("conversion of {resource} from {from:?} to {to:?} failed: {reason}")
    };
    match how {
        Conversion::Family(family) => family.convert(object, to).map_err(|e| match e {
            ConversionError::Invalid(_) => ApiError::bad_request(failed(&e)),
            _ => ApiError::internal(failed(&e)),
        }),
        Conversion::Typed(converter) => {
            let version = to.rsplit_once('/').map_or(to, |(_, v)| v);
            converter
                .convert(object, version)
                .map_err(|e| ApiError::internal(failed(&e)))
        }
        Conversion::Webhook(_) => Err(ApiError::internal(failed(
            &"the object was not converted by its conversion webhook",
        ))),
    }
}

/// The `apiVersion` objects are stored in.
fn storage_api_version(call: &Call, how: Conversion<'_>) -> String {
    match how {
        Conversion::Family(family) => family.storage.to_owned(),
        Conversion::Typed(_) | Conversion::Webhook(_) => {
            let group = &call.info().gvk.group;
            let version = match how {
                Conversion::Typed(converter) => converter.storage_version(),
                Conversion::Webhook(hook) => hook.storage.as_str(),
                Conversion::Family(_) => "",
            };
            if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            }
        }
    }
}

/// `object`, of the call's resource at the requested version, converted to `to`, another
/// version the resource is served at: what admission webhooks and policies matched through an
/// equivalent version see (`matchPolicy: Equivalent`), and, back again, what they changed.
/// A resource without conversions is the same object under either version.
pub(crate) async fn to_version(call: &Call, object: Value, to: &str) -> Result<Value, ApiError> {
    match conversion(call) {
        Some(how) => convert(call, how, object, to).await,
        None => Ok(renamed(object, to)),
    }
}

/// The object as stored: in the storage version when the resource converts, without
/// `resourceVersion`. A dry run calls this too, so a failing conversion fails it as well.
///
/// A webhook's answer is pruned and defaulted by the storage version's schema when that
/// version is served, as upstream's storage codec coerces what a conversion returns.
pub(crate) async fn to_stored(call: &Call, object: &Value) -> Result<Bytes, ApiError> {
    let as_is = matches!(object.get("metadata"), Some(Value::Object(meta)) if !meta.contains_key("resourceVersion"));
    let how = conversion(call);
    if how.is_none() && as_is {
        // Nothing to drop or convert: written as it is, without a copy.
        return serde_json::to_vec(object)
            .map(Bytes::from)
            .map_err(ApiError::internal);
    }
    let mut copy = object.clone();
    meta_mut(&mut copy).remove("resourceVersion");
    if let Some(how) = how {
        let storage = storage_api_version(call, how);
        copy = convert(call, how, copy, &storage).await?;
        if let Conversion::Webhook(hook) = how
            && hook.storage != call.info().gvk.version
            && let Some(kind) = call.registry.get(&hook.group, &hook.storage, &hook.plural)
        {
            copy = (kind.codec)(copy).map_err(ApiError::internal)?;
        }
    }
    serde_json::to_vec(&copy)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

/// What a write answers once `object` was stored as `stored` at revision `rv`: the stored
/// value read back, as [`from_stored`] serves it. Without conversions and at the requested
/// version that is `object` itself with the revision, which it gives without parsing the bytes
/// again.
pub(crate) async fn written(
    call: &Call,
    mut object: Value,
    stored: &[u8],
    rv: u64,
) -> Result<Value, ApiError> {
    let api_version = call.info().api_version();
    if converts(call)
        || object.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str())
    {
        return from_stored(call, stored, rv).await;
    }
    // As `to_stored` dropped it and `from_stored` adds it: the same place in `metadata`.
    let meta = meta_mut(&mut object);
    meta.remove("resourceVersion");
    meta.insert("resourceVersion".into(), Value::from(rv.to_string()));
    Ok(object)
}

/// A stored value as served at `info`'s version, `resourceVersion` filled in from `rv`. With
/// conversions the object is converted from the version it was stored in, whichever that is:
/// objects written by an earlier kapi in the version they were sent in read as well as those
/// in the storage version.
pub(crate) async fn from_stored(call: &Call, value: &[u8], rv: u64) -> Result<Value, ApiError> {
    match converted_value(call, value).await? {
        Some(converted) => from_stored_converted(call, &converted, rv),
        None => from_stored_converted(call, value, rv),
    }
}

/// A stored value brought to the requested version by the resource's conversion webhook, when
/// it has one and the value is stored in another version; `None` when there is nothing for a
/// webhook to do (the value serves as it is).
pub(crate) async fn converted_value(call: &Call, value: &[u8]) -> Result<Option<Bytes>, ApiError> {
    let Some(hook) = webhook(call) else {
        return Ok(None);
    };
    let object: Value = serde_json::from_slice(value).map_err(ApiError::internal)?;
    let api_version = call.info().api_version();
    if object.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str()) {
        return Ok(None);
    }
    let converted = conversion_webhook::convert(call, hook, object, &api_version).await?;
    serde_json::to_vec(&converted)
        .map(|bytes| Some(Bytes::from(bytes)))
        .map_err(ApiError::internal)
}

/// A store watch event with its values brought to the requested version by the resource's
/// conversion webhook ([`converted_value`]), in place. After a failure the event is only good
/// for its revision and key.
pub(crate) async fn convert_event(call: &Call, event: &mut WatchEvent) -> Result<(), ApiError> {
    if webhook(call).is_none() {
        return Ok(());
    }
    let values: Vec<&mut KeyValue> = match event {
        WatchEvent::Put { kv, prev } => std::iter::once(kv).chain(prev.as_mut()).collect(),
        WatchEvent::Delete { prev, .. } => vec![prev],
        _ => Vec::new(),
    };
    for kv in values {
        if let Some(value) = converted_value(call, &kv.value).await? {
            kv.value = value;
        }
    }
    Ok(())
}

/// [`from_stored`] of a value [`converted_value`] has seen: a value a webhook still has to
/// convert is the server's error (a path that skipped it), never served in the wrong version.
pub(crate) fn from_stored_converted(call: &Call, value: &[u8], rv: u64) -> Result<Value, ApiError> {
    let mut object: Value = serde_json::from_slice(value).map_err(ApiError::internal)?;
    let info = call.info();
    let api_version = info.api_version();
    let stored_as = object.get("apiVersion").and_then(Value::as_str);
    match conversion(call) {
        Some(how @ Conversion::Typed(_)) => object = convert_here(call, how, object, &api_version)?,
        Some(how @ Conversion::Webhook(_)) if stored_as != Some(api_version.as_str()) => {
            object = convert_here(call, how, object, &api_version)?;
        }
        Some(Conversion::Family(family)) if stored_as != Some(api_version.as_str()) => {
            object = if stored_as.is_some_and(|v| family.has(v)) {
                convert_here(call, Conversion::Family(family), object, &api_version)?
            } else {
                // A version no member is (an alpha API of the same name an earlier release
                // served): renamed, as objects without a family are.
                renamed(object, &api_version)
            };
            // Fields this version does not have are dropped, as its type would.
            if let Ok(typed) = (call.target.kind.codec)(object.clone()) {
                object = typed;
            }
        }
        None if stored_as != Some(api_version.as_str()) => {
            // Stored through another version of the same resource: serve it at this version,
            // through this version's type when it fits, as it came otherwise.
            object = renamed(object, &api_version);
            if let Ok(converted) = (call.target.kind.codec)(object.clone()) {
                object = converted;
            }
        }
        // A custom resource is pruned and defaulted by its schema on the way out of storage
        // too, as upstream's storage codec does (`unstructuredDefaulter`,
        // `schemaCoercingConverter`): an object stored before a default was added reads
        // back with it. A webhook's answer is coerced the same way.
        _ if call.target.kind.from_crd => {
            // The stored object's metadata decoded when it was written, so this cannot fail
            // but on a damaged value, which is the server's error.
            object = (call.target.kind.codec)(object).map_err(ApiError::internal)?;
        }
        _ => {}
    }
    meta_mut(&mut object).insert("resourceVersion".into(), Value::from(rv.to_string()));
    Ok(object)
}

/// `object` with its `apiVersion` set to `api_version`.
fn renamed(mut object: Value, api_version: &str) -> Value {
    if let Value::Object(map) = &mut object {
        map.insert("apiVersion".into(), Value::from(api_version));
    }
    object
}

pub(crate) async fn kv_object(call: &Call, kv: &KeyValue) -> Result<Value, ApiError> {
    from_stored(call, &kv.value, kv.mod_revision).await
}

/// The object a dry-run update answers with: what would have been stored, at the stored
/// object's resourceVersion (nothing was written, so the version did not move).
pub(crate) fn at_revision(mut object: Value, rv: u64) -> Value {
    meta_mut(&mut object).insert("resourceVersion".into(), Value::from(rv.to_string()));
    object
}

/// What a dry-run write answers: `next` at revision `rv`. With conversions it is `stored` read
/// back, as a real write answers, so the conversions' round trip shows.
pub(crate) async fn dry_answer(
    call: &Call,
    next: Value,
    stored: &[u8],
    rv: u64,
) -> Result<Value, ApiError> {
    if converts(call) {
        from_stored(call, stored, rv).await
    } else {
        Ok(at_revision(next, rv))
    }
}
