//! Objects between the store and the client: [`to_stored`] converts a write to the storage
//! version and drops `metadata.resourceVersion`, which is the key's mod revision;
//! [`from_stored`] converts a read back to the requested version and fills the resourceVersion
//! in, so it can never disagree with the store. Two things convert: a built-in's
//! [`Family`] (`kapi::conversion`, named by its `ResourceInfo`), and the versions of a kind
//! registered with conversions (`Registry::register_versions`). Gets, list items, watch events
//! and write answers all go through it. Imports only `json` and `error` from the server (and
//! the `Call` it reads).

use serde_json::Value;

use crate::conversion::{ConversionError, Family};
use crate::crd::VersionConverter;
use crate::storage::{Bytes, KeyValue};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::objects::json::meta_mut;

/// What converts the call's resource between its versions.
#[derive(Clone, Copy)]
enum Conversion<'a> {
    /// A built-in's family.
    Family(&'static Family),
    /// Versions registered with their `From` impls.
    Typed(&'a VersionConverter),
}

fn conversion(call: &Call) -> Option<Conversion<'_>> {
    let info = call.info();
    if let Some(family) = info.family {
        return Some(Conversion::Family(family));
    }
    call.registry
        .conversion(&info.gvk.group, &info.plural)
        .filter(|c| c.has_version(&info.gvk.version))
        .map(Conversion::Typed)
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
fn convert(call: &Call, how: Conversion<'_>, object: Value, to: &str) -> Result<Value, ApiError> {
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
    }
}

/// The `apiVersion` objects are stored in.
fn storage_api_version(call: &Call, how: Conversion<'_>) -> String {
    match how {
        Conversion::Family(family) => family.storage.to_owned(),
        Conversion::Typed(converter) => {
            let group = &call.info().gvk.group;
            let version = converter.storage_version();
            if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            }
        }
    }
}

/// The object as stored: in the storage version when the resource converts, without
/// `resourceVersion`. A dry run calls this too, so a failing conversion fails it as well.
pub(crate) fn to_stored(call: &Call, object: &Value) -> Result<Bytes, ApiError> {
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
        copy = convert(call, how, copy, &storage)?;
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
    if converts(call)
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
/// conversions the object is converted from the version it was stored in, whichever that is:
/// objects written by an earlier kapi in the version they were sent in read as well as those
/// in the storage version.
pub(crate) fn from_stored(call: &Call, value: &[u8], rv: u64) -> Result<Value, ApiError> {
    let mut object: Value = serde_json::from_slice(value).map_err(ApiError::internal)?;
    let info = call.info();
    let api_version = info.api_version();
    let stored_as = object.get("apiVersion").and_then(Value::as_str);
    match conversion(call) {
        Some(how @ Conversion::Typed(_)) => object = convert(call, how, object, &api_version)?,
        Some(Conversion::Family(family)) if stored_as != Some(api_version.as_str()) => {
            object = if stored_as.is_some_and(|v| family.has(v)) {
                convert(call, Conversion::Family(family), object, &api_version)?
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
        // back with it.
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
    if converts(call) {
        from_stored(call, stored, rv)
    } else {
        Ok(at_revision(next, rv))
    }
}
