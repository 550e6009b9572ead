//! `ApiError`: every failure a request can meet, rendered as a Kubernetes `Status` with the
//! upstream code, reason and details; and the one place storage errors become API errors.
//!
//! Handlers return `Result<Response, ApiError>`; axum's own rejections (bad query strings,
//! unreadable bodies) are converted here too, so a client never sees a plain-text error.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::meta::{Status, StatusCause, StatusReason};
use crate::storage::{CreateError, DeleteError, ReadError, UpdateError, WatchError};

/// The largest request body accepted, as kube-apiserver's default (3 MiB).
pub(crate) const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// A failed request: a `Status` and the headers that go with it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    /// Boxed so `Result<_, ApiError>` stays small on the happy path.
    status: Box<Status>,
    /// `Retry-After` seconds, sent as a header because clients prefer it to the body field.
    retry_after: Option<u32>,
}

/// What the error concerns, for messages such as `widgets.example.com "a" not found`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    /// API group, empty for core.
    pub(crate) group: &'a str,
    /// Plural resource name.
    pub(crate) resource: &'a str,
    /// Object name, empty for collections.
    pub(crate) name: &'a str,
}

impl ApiError {
    /// Wraps a ready-made `Status`.
    pub(crate) fn from_status(status: Status) -> Self {
        Self {
            status: Box::new(status),
            retry_after: None,
        }
    }

    /// The `Status` sent.
    #[cfg(test)]
    pub(crate) fn status(&self) -> &Status {
        &self.status
    }

    /// The HTTP status code.
    pub(crate) fn code(&self) -> StatusCode {
        self.status
            .code
            .and_then(|c| u16::try_from(c).ok())
            .and_then(|c| StatusCode::from_u16(c).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// An error that is no API status, as upstream's `ErrorToAPIStatus` answers one: 500, no
    /// reason, the error's text as the message
    /// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/status.go`).
    pub(crate) fn unstatused(message: impl Into<String>) -> Self {
        Self::from_status(Status {
            kind: Some("Status".to_owned()),
            api_version: Some("v1".to_owned()),
            status: Some(crate::meta::StatusOutcome::Failure),
            message: Some(message.into()),
            code: Some(500),
            ..Status::default()
        })
    }

    /// 404 for an object.
    pub(crate) fn not_found(s: Subject<'_>) -> Self {
        Self::from_status(Status::not_found(s.group, s.resource, s.name))
    }

    /// 404 for a URL that names no served resource.
    pub(crate) fn no_route() -> Self {
        let mut status = Status::not_found("", "", "");
        status.message = Some("the server could not find the requested resource".to_owned());
        status.details = None;
        Self::from_status(status)
    }

    /// 409 AlreadyExists.
    pub(crate) fn already_exists(s: Subject<'_>) -> Self {
        Self::from_status(Status::already_exists(s.group, s.resource, s.name))
    }

    /// 409 Conflict with upstream's message for a stale resourceVersion.
    pub(crate) fn conflict_modified(s: Subject<'_>) -> Self {
        Self::conflict(
            s,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a custom explanation (failed preconditions).
    pub(crate) fn conflict(s: Subject<'_>, message: &str) -> Self {
        Self::from_status(Status::conflict(s.group, s.resource, s.name, message))
    }

    /// 422 Invalid; `kind` is the kind (not the resource), as upstream.
    pub(crate) fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        Self::from_status(Status::invalid(group, kind, name, causes))
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::from_status(Status::bad_request(message))
    }

    /// 403 Forbidden.
    pub(crate) fn forbidden(s: Subject<'_>, message: &str) -> Self {
        Self::from_status(Status::forbidden(s.group, s.resource, s.name, message))
    }

    /// 403 Forbidden for a request refused before any resource is resolved.
    pub(crate) fn forbidden_request(message: impl std::fmt::Display) -> Self {
        Self::from_status(Status::failure(
            crate::meta::StatusReason::Forbidden,
            format!("forbidden: {message}"),
            None,
        ))
    }

    /// 504 Timeout: the request could not finish in time.
    pub(crate) fn timeout(message: &str) -> Self {
        Self::from_status(Status::timeout(message, 0))
    }

    /// 410 Expired.
    pub(crate) fn expired(message: impl Into<String>) -> Self {
        Self::from_status(Status::expired(message))
    }

    /// 410 Expired for a read below the compaction point, with upstream's message.
    pub(crate) fn too_old(requested: u64, compacted: u64) -> Self {
        Self::expired(format!(
            "too old resource version: {requested} ({compacted})"
        ))
    }

    /// 504 "Too large resource version", with a one-second retry hint.
    pub(crate) fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self {
            status: Box::new(Status::too_large_resource_version(requested, current, 1)),
            retry_after: Some(1),
        }
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed(group: &str, resource: &str, action: &str) -> Self {
        Self::from_status(Status::method_not_allowed(group, resource, action))
    }

    /// 406 NotAcceptable.
    pub(crate) fn not_acceptable(accepted: &[&str]) -> Self {
        Self::from_status(Status::not_acceptable(accepted))
    }

    /// 406 NotAcceptable with its own message (a transform the request cannot take).
    pub(crate) fn not_acceptable_because(message: String) -> Self {
        Self::from_status(Status::failure(StatusReason::NotAcceptable, message, None))
    }

    /// 415 UnsupportedMediaType.
    pub(crate) fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::from_status(Status::unsupported_media_type(accepted))
    }

    /// 413 for a body over [`MAX_BODY_BYTES`].
    pub(crate) fn body_too_large() -> Self {
        Self::from_status(Status::request_entity_too_large(&format!(
            "limit is {MAX_BODY_BYTES}"
        )))
    }

    /// 500 ServerTimeout, e.g. no unique generated name found in time.
    pub(crate) fn server_timeout(s: Subject<'_>, operation: &str) -> Self {
        Self {
            status: Box::new(Status::server_timeout(s.group, s.resource, operation, 1)),
            retry_after: Some(1),
        }
    }

    /// The same refusal worded as the code that refuses words it (an admission plugin's
    /// ServerTimeout, say).
    pub(crate) fn reworded(mut self, message: String) -> Self {
        self.status.message = Some(message);
        self
    }

    /// 503 ServiceUnavailable with the message as given.
    pub(crate) fn service_unavailable(message: impl Into<String>) -> Self {
        Self::from_status(Status::service_unavailable(message))
    }

    /// 500 InternalError, logged: such an answer means a storage failure or a bug.
    pub(crate) fn internal(message: impl std::fmt::Display) -> Self {
        let message = message.to_string();
        tracing::error!(error = %message, "internal error, answered 500");
        Self::from_status(Status::internal_error(&message))
    }

    /// 500 InternalError for a stored value that failed its integrity check, logged with the
    /// engine's `cause`, which names the key and where it was stored; the client learns only
    /// that its data could not be served.
    pub(crate) fn corrupt(cause: &str) -> Self {
        tracing::error!(error = %cause, "stored data failed its integrity check, answered 500");
        Self::from_status(Status::internal_error(
            "stored data failed its integrity check",
        ))
    }

    /// A read failure. `FutureRevision` reaching here means the caller already waited.
    pub(crate) fn from_read(error: ReadError) -> Self {
        match error {
            ReadError::Corrupt(cause) => Self::corrupt(&cause),
            ReadError::Compacted {
                requested,
                compacted,
            } => Self::too_old(requested, compacted),
            ReadError::FutureRevision { requested, current } => {
                Self::too_large_resource_version(requested, current)
            }
            other => Self::internal(other),
        }
    }

    /// A create failure.
    pub(crate) fn from_create(error: CreateError, s: Subject<'_>) -> Self {
        match error {
            CreateError::Corrupt(cause) => Self::corrupt(&cause),
            CreateError::AlreadyExists { .. } => Self::already_exists(s),
            CreateError::TooLarge { size, limit } => {
                Self::from_status(Status::request_entity_too_large(&format!(
                    "object of {size} bytes exceeds {limit}"
                )))
            }
            other => Self::internal(other),
        }
    }

    /// An update failure.
    pub(crate) fn from_update(error: UpdateError, s: Subject<'_>) -> Self {
        match error {
            UpdateError::Corrupt(cause) => Self::corrupt(&cause),
            UpdateError::NotFound => Self::not_found(s),
            UpdateError::Conflict { .. } => Self::conflict_modified(s),
            UpdateError::TooLarge { size, limit } => {
                Self::from_status(Status::request_entity_too_large(&format!(
                    "object of {size} bytes exceeds {limit}"
                )))
            }
            other => Self::internal(other),
        }
    }

    /// A delete failure.
    pub(crate) fn from_delete(error: DeleteError, s: Subject<'_>) -> Self {
        match error {
            DeleteError::Corrupt(cause) => Self::corrupt(&cause),
            DeleteError::NotFound => Self::not_found(s),
            DeleteError::Conflict { .. } => Self::conflict_modified(s),
            other => Self::internal(other),
        }
    }

    /// A watch failure, as the ERROR event's Status or an HTTP error before streaming.
    pub(crate) fn from_watch(error: WatchError) -> Self {
        match error {
            WatchError::Corrupt(cause) => Self::corrupt(&cause),
            WatchError::Compacted {
                requested,
                compacted,
            } => Self::too_old(requested, compacted),
            WatchError::FutureRevision { requested, current } => {
                Self::too_large_resource_version(requested, current)
            }
            WatchError::Lagged { revision } => Self::expired(format!(
                "the watcher fell behind after resource version {revision}; list again and watch from the new resource version"
            )),
            other => Self::internal(other),
        }
    }

    /// The `Status` body, for a watch ERROR event.
    pub(crate) fn into_status(self) -> Status {
        *self.status
    }
}

impl From<axum::extract::rejection::QueryRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::QueryRejection) -> Self {
        Self::bad_request(rejection.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = self.code();
        let body = serde_json::to_vec(&self.status).unwrap_or_else(|_| {
            br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}"#
                .to_vec()
        });
        let mut response = (code, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject() -> Subject<'static> {
        Subject {
            group: "example.com",
            resource: "widgets",
            name: "w",
        }
    }

    #[test]
    fn storage_errors_map_to_upstream_codes_and_reasons() {
        let kv = crate::storage::KeyValue {
            key: "k".into(),
            value: Default::default(),
            create_revision: 2,
            mod_revision: 2,
        };
        let cases: Vec<(ApiError, u16, &str)> = vec![
            (
                ApiError::from_read(ReadError::Compacted {
                    requested: 3,
                    compacted: 9,
                }),
                410,
                "Expired",
            ),
            (
                ApiError::from_read(ReadError::FutureRevision {
                    requested: 30,
                    current: 9,
                }),
                504,
                "Timeout",
            ),
            (
                ApiError::from_read(ReadError::Internal("disk".into())),
                500,
                "InternalError",
            ),
            (
                ApiError::from_read(ReadError::Corrupt("corrupt current record".into())),
                500,
                "InternalError",
            ),
            (
                ApiError::from_watch(WatchError::Corrupt("corrupt history record".into())),
                500,
                "InternalError",
            ),
            (
                ApiError::from_create(
                    CreateError::AlreadyExists {
                        current: kv.clone(),
                    },
                    subject(),
                ),
                409,
                "AlreadyExists",
            ),
            (
                ApiError::from_create(CreateError::TooLarge { size: 9, limit: 1 }, subject()),
                413,
                "RequestEntityTooLarge",
            ),
            (
                ApiError::from_update(UpdateError::Conflict { current: kv }, subject()),
                409,
                "Conflict",
            ),
            (
                ApiError::from_update(UpdateError::NotFound, subject()),
                404,
                "NotFound",
            ),
            (
                ApiError::from_delete(DeleteError::NotFound, subject()),
                404,
                "NotFound",
            ),
            (
                ApiError::from_watch(WatchError::Lagged { revision: 4 }),
                410,
                "Expired",
            ),
        ];
        for (error, code, reason) in cases {
            assert_eq!(error.code().as_u16(), code, "{error:?}");
            assert_eq!(
                error.status.reason.as_ref().map(|r| r.to_string()),
                Some(reason.to_owned()),
                "{error:?}"
            );
        }
    }

    #[test]
    fn corruption_message_keeps_the_key_in_the_server() {
        let error = ApiError::from_read(ReadError::Corrupt(
            "checksum mismatch in current record /registry/configmaps/ns/secret-name".into(),
        ));
        assert_eq!(
            error.status.message.as_deref(),
            Some("Internal error occurred: stored data failed its integrity check")
        );
        let body = serde_json::to_string(&error.status).unwrap();
        assert!(!body.contains("secret-name"), "{body}");
    }

    #[test]
    fn conflict_message_is_upstreams() {
        let error = ApiError::conflict_modified(subject());
        assert_eq!(
            error.status.message.as_deref(),
            Some(
                "Operation cannot be fulfilled on widgets.example.com \"w\": the object has been modified; please apply your changes to the latest version and try again"
            )
        );
    }

    #[test]
    fn too_large_rv_sets_retry_after_header() {
        let response = ApiError::too_large_resource_version(10, 5).into_response();
        assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
    }
}
