//! What admission plugins read of other objects: one object by key, or every object of a
//! cluster-scoped resource, straight from the store as stored (the fields plugins read are the
//! same in every version a resource is stored in). Read failures answer as every read does.

use serde_json::Value;

use crate::storage::Storage;

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::state::keys::prefix_of;

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
    match call.state.storage.get(&key, None).await {
        Ok(Some(kv)) => serde_json::from_slice(&kv.value)
            .map(Some)
            .map_err(ApiError::internal),
        Ok(None) => Ok(None),
        Err(e) => Err(ApiError::from_read(e)),
    }
}
