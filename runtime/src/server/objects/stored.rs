//! Objects between the store and the client: [`to_stored`] converts a write to the storage
//! version (when the resource's versions were registered with conversions) and drops
//! `metadata.resourceVersion`, which is the key's mod revision; [`from_stored`] converts a read
//! back to the requested version and fills the resourceVersion in, so it can never disagree
//! with the store. Gets, list items, watch events and write answers all go through it.
//! Imports only `json` and `error` from the server (and the `Call` it reads).

use serde_json::Value;

use crate::crd::VersionConverter;
use crate::storage::{Bytes, KeyValue};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::objects::json::meta_mut;

/// The conversions of the call's resource, when they were registered and the requested
/// version is one of them; versions registered alone keep the `apiVersion` rewrite.
pub(crate) fn converter(call: &Call) -> Option<&VersionConverter> {
    let info = call.info();
    call.registry
        .conversion(&info.gvk.group, &info.plural)
        .filter(|c| c.has_version(&info.gvk.version))
}

/// `object` converted to `to_version`, or a 500 naming the versions and why.
fn convert(
    call: &Call,
    converter: &VersionConverter,
    object: Value,
    to_version: &str,
) -> Result<Value, ApiError> {
    let from = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    converter.convert(object, to_version).map_err(|e| {
        let info = call.info();
        let (resource, to) = if info.gvk.group.is_empty() {
            (info.plural.to_string(), to_version.to_owned())
        } else {
            (
                format!("{}.{}", info.plural, info.gvk.group),
                format!("{}/{to_version}", info.gvk.group),
            )
        };
        ApiError::internal(format!(
            "conversion of {resource} from {from:?} to {to:?} failed: {e}"
        ))
    })
}

/// The object as stored: in the storage version when the resource has conversions, without
/// `resourceVersion`. A dry run calls this too, so a failing conversion fails it as well.
pub(crate) fn to_stored(call: &Call, object: &Value) -> Result<Bytes, ApiError> {
    let as_is = matches!(object.get("metadata"), Some(Value::Object(meta)) if !meta.contains_key("resourceVersion"));
    let converter = converter(call);
    if converter.is_none() && as_is {
        // Nothing to drop or convert: written as it is, without a copy.
        return serde_json::to_vec(object)
            .map(Bytes::from)
            .map_err(ApiError::internal);
    }
    let mut copy = object.clone();
    meta_mut(&mut copy).remove("resourceVersion");
    if let Some(converter) = converter {
        copy = convert(call, converter, copy, converter.storage_version())?;
    }
    serde_json::to_vec(&copy)
        .map(Bytes::from)
        .map_err(ApiError::internal)
}

/// What a write answers once `object` was stored as `stored` at revision `rv`: the stored
/// value read back, as [`from_stored`] serves it. Without conversions and at the requested
/// version that is `object` itself with the revision, which it gives without parsing the bytes
/// again.
pub(crate) fn written(
    call: &Call,
    mut object: Value,
    stored: &[u8],
    rv: u64,
) -> Result<Value, ApiError> {
    let api_version = call.info().api_version();
    if converter(call).is_some()
        || object.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str())
    {
        return from_stored(call, stored, rv);
    }
    // As `to_stored` dropped it and `from_stored` adds it: the same place in `metadata`.
    let meta = meta_mut(&mut object);
    meta.remove("resourceVersion");
    meta.insert("resourceVersion".into(), Value::from(rv.to_string()));
    Ok(object)
}

/// A stored value as served at `info`'s version, `resourceVersion` filled in from `rv`. With
/// conversions the object is converted from the version it was stored in, whichever that is.
pub(crate) fn from_stored(call: &Call, value: &[u8], rv: u64) -> Result<Value, ApiError> {
    let mut object: Value = serde_json::from_slice(value).map_err(ApiError::internal)?;
    let info = call.info();
    let api_version = info.api_version();
    if let Some(converter) = converter(call) {
        object = convert(call, converter, object, &info.gvk.version)?;
    } else if object.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str()) {
        // Stored through another version of the same resource: serve it at this version,
        // through this version's type when it fits, as it came otherwise.
        if let Value::Object(map) = &mut object {
            map.insert("apiVersion".into(), Value::from(api_version));
        }
        if let Ok(converted) = (call.target.kind.codec)(object.clone()) {
            object = converted;
        }
    }
    meta_mut(&mut object).insert("resourceVersion".into(), Value::from(rv.to_string()));
    Ok(object)
}

pub(crate) fn kv_object(call: &Call, kv: &KeyValue) -> Result<Value, ApiError> {
    from_stored(call, &kv.value, kv.mod_revision)
}

/// The object a dry-run update answers with: what would have been stored, at the stored
/// object's resourceVersion (nothing was written, so the version did not move).
pub(crate) fn at_revision(mut object: Value, rv: u64) -> Value {
    meta_mut(&mut object).insert("resourceVersion".into(), Value::from(rv.to_string()));
    object
}

/// What a dry-run write answers: `next` at revision `rv`. With conversions it is `stored` read
/// back, as a real write answers, so the conversions' round trip shows.
pub(crate) fn dry_answer(
    call: &Call,
    next: Value,
    stored: &[u8],
    rv: u64,
) -> Result<Value, ApiError> {
    if converter(call).is_some() {
        from_stored(call, stored, rv)
    } else {
        Ok(at_revision(next, rv))
    }
}
