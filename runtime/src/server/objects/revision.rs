//! Resource versions sent by clients: parsing them, and waiting for the store to reach one
//! (or answering upstream's 504 "Too large resource version"). Imports only `error`.

use crate::storage::Storage;

use crate::server::Call;
use crate::server::http::error::ApiError;

/// Go's `strconv.ParseUint(rv, 10, 64)`: the value, or its error text (`strconv.ParseUint:
/// parsing "x": invalid syntax`, or `value out of range` for digits past `u64::MAX`).
fn parse_uint(rv: &str) -> Result<u64, String> {
    let digits = !rv.is_empty() && rv.bytes().all(|b| b.is_ascii_digit());
    let problem = match rv.parse::<u64>() {
        Ok(value) if digits => return Ok(value),
        _ if digits => "value out of range",
        _ => "invalid syntax",
    };
    Err(format!("strconv.ParseUint: parsing {rv:?}: {problem}"))
}

/// Upstream's `APIObjectVersioner.ParseResourceVersion` error: `resourceVersion: Invalid value:
/// "x": strconv.ParseUint: ...` (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/
/// api_object_versioner.go`).
fn versioner_error(rv: &str, problem: &str) -> String {
    format!("resourceVersion: Invalid value: {rv:?}: {problem}")
}

/// Parses the resourceVersion of a read the watch cache serves (a get or list naming one, a
/// watch): as upstream's cacher, an unparsable one is its storage error, which reaches the
/// client as a 500 without a reason (`ErrorToAPIStatus` of an error that is no API status).
/// kube-apiserver answers so in every release kapi serves (kubernetes/kubernetes#101350,
/// #139485).
pub(crate) fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    parse_uint(rv).map_err(|problem| ApiError::unstatused(versioner_error(rv, &problem)))
}

/// Parses the resourceVersion of a list the cache hands to etcd (with a `limit`, or
/// `resourceVersionMatch=Exact`): 400 `invalid resource version: ...`, as the etcd3 store's
/// `GetList` answers (`storage.ValidateListOptions` since 1.31, inline before).
pub(crate) fn parse_list_rv(rv: &str) -> Result<u64, ApiError> {
    parse_uint(rv).map_err(|problem| {
        ApiError::bad_request(format!(
            "invalid resource version: {}",
            versioner_error(rv, &problem)
        ))
    })
}

/// Parses the `metadata.resourceVersion` of a written object: upstream's `ObjectResourceVersion`
/// hands `strconv`'s error back as it is, a 500 without a reason.
pub(crate) fn parse_object_rv(rv: &str) -> Result<u64, ApiError> {
    parse_uint(rv).map_err(ApiError::unstatused)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts of kube-apiserver's answers quoted in kubernetes/kubernetes#139485 and
    /// `strconv.ParseUint`'s two errors.
    #[test]
    fn unparsable_versions_answer_as_upstream() {
        assert_eq!(parse_rv("42").ok(), Some(42));
        assert_eq!(parse_rv("007").ok(), Some(7));
        let status = parse_rv("-1").unwrap_err().into_status();
        assert_eq!(status.code, Some(500));
        assert_eq!(status.reason, None);
        assert_eq!(
            status.message.as_deref(),
            Some(
                "resourceVersion: Invalid value: \"-1\": strconv.ParseUint: parsing \"-1\": invalid syntax"
            )
        );
        let status = parse_list_rv("99999999999999999999")
            .unwrap_err()
            .into_status();
        assert_eq!(status.code, Some(400));
        assert_eq!(
            status.message.as_deref(),
            Some(
                "invalid resource version: resourceVersion: Invalid value: \"99999999999999999999\": strconv.ParseUint: parsing \"99999999999999999999\": value out of range"
            )
        );
        let status = parse_object_rv("+1").unwrap_err().into_status();
        assert_eq!(
            status.message.as_deref(),
            Some("strconv.ParseUint: parsing \"+1\": invalid syntax")
        );
    }
}
