//! Resource versions sent by clients: parsing them, and waiting for the store to reach one
//! (or answering upstream's 504 "Too large resource version"). Imports only `error`.

use crate::storage::Storage;

use crate::server::Call;
use crate::server::http::error::ApiError;

/// Parses a resourceVersion sent by a client.
pub(crate) fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    rv.parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))
}

/// Waits for the store to reach `rv`, or answers 504 "Too large resource version".
pub(crate) async fn wait_for(call: &Call, rv: u64) -> Result<(), ApiError> {
    let storage = call.state.storage.as_ref();
    let reached = crate::storage::wait_for_revision(storage, rv, call.tun.rv_wait)
        .await
        .map_err(ApiError::from_read)?;
    if reached {
        Ok(())
    } else {
        let current = storage
            .current_revision()
            .await
            .map_err(ApiError::from_read)?;
        Err(ApiError::too_large_resource_version(rv, current))
    }
}
