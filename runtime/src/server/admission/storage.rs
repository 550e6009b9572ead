//! What admission plugins read of other objects: one object by key, or every object of a
//! collection, as stored (the fields plugins read are the same in every version a resource is
//! stored in): from the server's in-memory copy of the resources read on every write
//! (`state::mirrors`) when it can answer, else straight from the store. Read failures answer
//! as every read does.

use serde_json::Value;

use crate::storage::Storage;

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::state::keys::prefix_of;
use crate::server::state::mirrors;

/// How many objects of one resource a plugin looks through at most (classes are few; a store
/// holding more is read no further rather than without bound), as many as a mirror holds.
const MOST: usize = mirrors::MOST;

/// The stored object `name` (in `namespace`, for namespaced resources) of `group`'s `plural`.
pub(super) async fn read(
    call: &Call,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, ApiError> {
    let mut key = prefix_of(group, plural);
    if let Some(ns) = namespace {
        key.push_str(ns);
        key.push('/');
    }
    key.push_str(name);
    if let Some(object) = call.state.storage.mirrors().get(&key) {
        return Ok(object);
    }
    match call.state.storage.get(&key, None).await {
        Ok(Some(kv)) => serde_json::from_slice(&kv.value)
            .map(Some)
            .map_err(ApiError::internal),
        Ok(None) => Ok(None),
        Err(e) => Err(ApiError::from_read(e)),
    }
}

/// Every stored object of `group`'s `plural`: of one namespace, or of a cluster-scoped resource.
pub(super) async fn list(
    call: &Call,
    group: &str,
    plural: &str,
    namespace: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    let mut prefix = prefix_of(group, plural);
    if let Some(ns) = namespace {
        prefix.push_str(ns);
        prefix.push('/');
    }
    if let Some(objects) = call.state.storage.mirrors().list(&prefix) {
        return Ok(objects);
    }
    let page = call
        .state
        .storage
        .list(&prefix, None, None, Some(MOST))
        .await
        .map_err(ApiError::from_read)?;
    page.items
        .iter()
        .map(|kv| serde_json::from_slice(&kv.value).map_err(ApiError::internal))
        .collect()
}
