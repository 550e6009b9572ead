//! `Status`, the body of every error response and of a successful `DELETE`, with its details,
//! causes, the standard reasons and cause types, and constructors for the common API errors.
//!
//! The constructors build the same codes, reasons, details and message text as apimachinery's
//! `pkg/api/errors`, so clients that match on messages behave as they do against a real server.

use serde::{Deserialize, Serialize};

use super::ListMeta;
use crate::open_enum;
use crate::wire::null_as_default;

/// The outcome of an operation, as returned in a `Status` (`metav1.Status`).
///
/// `metadata` is always written, as `{}` when empty, as upstream does.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status` when built by the constructors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Always `v1` when built by the constructors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// List metadata; servers leave it empty.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ListMeta,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusOutcome>,
    /// Human-readable description of the outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Machine-readable reason for a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<StatusReason>,
    /// Extra data about the failure, depending on the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code of the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
}

open_enum! {
    /// Whether an operation succeeded (`Status.status`).
    pub enum StatusOutcome {
        /// The operation succeeded.
        Success = "Success",
        /// The operation failed; `reason` says why.
        Failure = "Failure",
    }
}

/// Extra data about a failure (`metav1.StatusDetails`). Every field is optional upstream.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Name of the resource the failure concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// API group of the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Kind of the resource; the error constructors put the plural resource name here, as
    /// upstream does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// UID of the resource, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The individual problems, e.g. one per invalid field.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait before retrying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i32>,
}

/// One problem behind a failure (`metav1.StatusCause`). Every field is optional upstream.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCause {
    /// Machine-readable kind of problem (upstream's Go field is `Type`, its JSON name `reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<CauseType>,
    /// Human-readable description of the problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Path of the field at fault, e.g. `spec.containers[0].name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

open_enum! {
    /// Why an operation failed (`metav1.StatusReason`).
    pub enum StatusReason {
        /// The request carried no valid credentials (401).
        Unauthorized = "Unauthorized",
        /// The caller may not perform the action (403).
        Forbidden = "Forbidden",
        /// The resource does not exist (404).
        NotFound = "NotFound",
        /// The resource being created already exists (409).
        AlreadyExists = "AlreadyExists",
        /// The write lost a race with another write (409).
        Conflict = "Conflict",
        /// The requested resource version is no longer available (410).
        Gone = "Gone",
        /// The object failed validation (422).
        Invalid = "Invalid",
        /// The server could not finish in time; the client may retry (500).
        ServerTimeout = "ServerTimeout",
        /// The object could not be read from storage, e.g. it fails to decode (500).
        StoreReadError = "StoreReadError",
        /// The request could not finish within its timeout (504).
        Timeout = "Timeout",
        /// The client sent too many requests (429).
        TooManyRequests = "TooManyRequests",
        /// The request is malformed (400).
        BadRequest = "BadRequest",
        /// The verb is not supported on the resource (405).
        MethodNotAllowed = "MethodNotAllowed",
        /// None of the accepted media types can be produced (406).
        NotAcceptable = "NotAcceptable",
        /// The request body is too large (413).
        RequestEntityTooLarge = "RequestEntityTooLarge",
        /// The request body's media type is not supported (415).
        UnsupportedMediaType = "UnsupportedMediaType",
        /// An unexpected server-side failure (500).
        InternalError = "InternalError",
        /// The requested content (e.g. a continue token) has expired (410).
        Expired = "Expired",
        /// The server is temporarily unavailable (503).
        ServiceUnavailable = "ServiceUnavailable",
    }
}

impl StatusReason {
    /// The HTTP status code upstream pairs with this reason; 500 for unknown reasons.
    pub fn code(&self) -> i32 {
        match self {
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::AlreadyExists | Self::Conflict => 409,
            Self::Gone | Self::Expired => 410,
            Self::Invalid => 422,
            Self::ServerTimeout | Self::StoreReadError | Self::InternalError => 500,
            Self::Timeout => 504,
            Self::TooManyRequests => 429,
            Self::BadRequest => 400,
            Self::MethodNotAllowed => 405,
            Self::NotAcceptable => 406,
            Self::RequestEntityTooLarge => 413,
            Self::UnsupportedMediaType => 415,
            Self::ServiceUnavailable => 503,
            Self::Other(_) => 500,
        }
    }
}

open_enum! {
    /// The kind of one problem in `StatusDetails.causes` (`metav1.CauseType`).
    pub enum CauseType {
        /// A referenced value does not exist.
        FieldValueNotFound = "FieldValueNotFound",
        /// A required value is missing.
        FieldValueRequired = "FieldValueRequired",
        /// A value that must be unique is repeated.
        FieldValueDuplicate = "FieldValueDuplicate",
        /// A value is malformed or out of range.
        FieldValueInvalid = "FieldValueInvalid",
        /// A value is not one of the supported values.
        FieldValueNotSupported = "FieldValueNotSupported",
        /// A value is valid but not allowed here, e.g. a change to an immutable field.
        FieldValueForbidden = "FieldValueForbidden",
        /// A value is too long.
        FieldValueTooLong = "FieldValueTooLong",
        /// A list has too many items.
        FieldValueTooMany = "FieldValueTooMany",
        /// An internal error unrelated to the input.
        InternalError = "InternalError",
        /// A value has the wrong JSON type.
        FieldValueTypeInvalid = "FieldValueTypeInvalid",
        /// A response from a server could not be understood.
        UnexpectedServerResponse = "UnexpectedServerResponse",
        /// A server-side apply conflicts with another manager's fields.
        FieldManagerConflict = "FieldManagerConflict",
        /// The requested resource version is newer than the server's.
        ResourceVersionTooLarge = "ResourceVersionTooLarge",
        /// A create was refused because its namespace is being deleted (core/v1's
        /// `NamespaceTerminatingCause`).
        NamespaceTerminating = "NamespaceTerminating",
        /// An eviction was refused by a PodDisruptionBudget (policy/v1's
        /// `DisruptionBudgetCause`).
        DisruptionBudget = "DisruptionBudget",
    }
}

/// `None` for an empty string, as upstream's `omitempty` drops empty strings.
fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// `<resource>.<group>`, or `<resource>` for the core group (upstream's `GroupResource.String`,
/// and `GroupKind.String` for kinds).
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// Details naming one resource: group, plural resource (in `kind`, as upstream does) and name.
fn resource_details(group: &str, resource: &str, name: &str) -> StatusDetails {
    StatusDetails {
        name: non_empty(name),
        group: non_empty(group),
        kind: non_empty(resource),
        ..StatusDetails::default()
    }
}

/// Details carrying only a retry hint; upstream always sends them for timeouts and throttling,
/// even when the hint is zero and so `{}`.
fn retry_details(retry_after_seconds: i32) -> StatusDetails {
    StatusDetails {
        retry_after_seconds: (retry_after_seconds > 0).then_some(retry_after_seconds),
        ..StatusDetails::default()
    }
}

impl Status {
    /// A `Success` status, as returned by a `DELETE` that removed the object at once.
    pub fn success() -> Self {
        Self {
            kind: Some("Status".to_owned()),
            api_version: Some("v1".to_owned()),
            status: Some(StatusOutcome::Success),
            ..Self::default()
        }
    }

    /// A `Failure` status with the reason's default HTTP code.
    pub fn failure(
        reason: StatusReason,
        message: impl Into<String>,
        details: Option<StatusDetails>,
    ) -> Self {
        Self {
            kind: Some("Status".to_owned()),
            api_version: Some("v1".to_owned()),
            status: Some(StatusOutcome::Failure),
            message: Some(message.into()),
            code: Some(reason.code()),
            reason: Some(reason),
            details,
            ..Self::default()
        }
    }

    /// Whether `status` is `Success`.
    pub fn is_success(&self) -> bool {
        self.status == Some(StatusOutcome::Success)
    }

    /// 404: `<resource>.<group> "<name>" not found` (`pods "x" not found` for the core group).
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::failure(
            StatusReason::NotFound,
            format!("{} {name:?} not found", qualified(group, resource)),
            Some(resource_details(group, resource, name)),
        )
    }

    /// 409 `AlreadyExists`: `<resource>.<group> "<name>" already exists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::failure(
            StatusReason::AlreadyExists,
            format!("{} {name:?} already exists", qualified(group, resource)),
            Some(resource_details(group, resource, name)),
        )
    }

    /// 409 `Conflict`: `Operation cannot be fulfilled on <resource>.<group> "<name>": <message>`.
    pub fn conflict(group: &str, resource: &str, name: &str, message: &str) -> Self {
        Self::failure(
            StatusReason::Conflict,
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {message}",
                qualified(group, resource)
            ),
            Some(resource_details(group, resource, name)),
        )
    }

    /// 422 `Invalid`: `<Kind>.<group> "<name>" is invalid: <field>: <message>`.
    ///
    /// As upstream, each cause prints as `<field>: <message>`; duplicates are dropped, several
    /// causes print as `[a, b]`, and no causes leave just `... is invalid`. The details name the
    /// kind, not the resource.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let mut seen: Vec<String> = Vec::new();
        for cause in &causes {
            let text = cause.to_string();
            if !seen.contains(&text) {
                seen.push(text);
            }
        }
        let subject = format!("{} {name:?} is invalid", qualified(group, kind));
        let message = match seen.as_slice() {
            [] => subject,
            [one] => format!("{subject}: {one}"),
            many => format!("{subject}: [{}]", many.join(", ")),
        };
        let details = StatusDetails {
            causes,
            ..resource_details(group, kind, name)
        };
        Self::failure(StatusReason::Invalid, message, Some(details))
    }

    /// 400 `BadRequest` with the message as given.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::failure(StatusReason::BadRequest, message, None)
    }

    /// 401 `Unauthorized`; an empty message becomes `not authorized`, as upstream.
    pub fn unauthorized(message: &str) -> Self {
        let message = if message.is_empty() {
            "not authorized"
        } else {
            message
        };
        Self::failure(StatusReason::Unauthorized, message, None)
    }

    /// 403 `Forbidden`: `<resource>.<group> "<name>" is forbidden: <message>`, without the name
    /// part when `name` is empty and as `forbidden: <message>` when `resource` is empty too.
    pub fn forbidden(group: &str, resource: &str, name: &str, message: &str) -> Self {
        let text = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {message}")
        } else if name.is_empty() {
            format!("{} is forbidden: {message}", qualified(group, resource))
        } else {
            format!(
                "{} {name:?} is forbidden: {message}",
                qualified(group, resource)
            )
        };
        Self::failure(
            StatusReason::Forbidden,
            text,
            Some(resource_details(group, resource, name)),
        )
    }

    /// 410 `Expired`: the requested content (a resource version or continue token) is too old.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::failure(StatusReason::Expired, message, None)
    }

    /// 410 `Gone`; upstream prefers [`Status::expired`] for new code.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::failure(StatusReason::Gone, message, None)
    }

    /// 504 `Timeout`: `Timeout: <message>`, with a retry hint.
    pub fn timeout(message: &str, retry_after_seconds: i32) -> Self {
        Self::failure(
            StatusReason::Timeout,
            format!("Timeout: {message}"),
            Some(retry_details(retry_after_seconds)),
        )
    }

    /// 504 `Timeout` for a read at a resource version newer than the store's:
    /// `Timeout: Too large resource version: <requested>, current: <current>`, with a
    /// `ResourceVersionTooLarge` cause clients look for to retry.
    pub fn too_large_resource_version(
        requested: u64,
        current: u64,
        retry_after_seconds: i32,
    ) -> Self {
        let mut status = Self::timeout(
            &format!("Too large resource version: {requested}, current: {current}"),
            retry_after_seconds,
        );
        if let Some(details) = status.details.as_mut() {
            details.causes = vec![StatusCause {
                reason: Some(CauseType::ResourceVersionTooLarge),
                message: Some("Too large resource version".to_owned()),
                field: None,
            }];
        }
        status
    }

    /// 500 `ServerTimeout`: `The <operation> operation against <resource>.<group> could not be
    /// completed at this time, please try again.`
    pub fn server_timeout(
        group: &str,
        resource: &str,
        operation: &str,
        retry_after_seconds: i32,
    ) -> Self {
        let details = StatusDetails {
            retry_after_seconds: (retry_after_seconds > 0).then_some(retry_after_seconds),
            ..resource_details(group, resource, operation)
        };
        Self::failure(
            StatusReason::ServerTimeout,
            format!(
                "The {operation} operation against {} could not be completed at this time, please try again.",
                qualified(group, resource)
            ),
            Some(details),
        )
    }

    /// 405 `MethodNotAllowed`: `<action> is not supported on resources of kind "<resource>.<group>"`.
    pub fn method_not_allowed(group: &str, resource: &str, action: &str) -> Self {
        Self::failure(
            StatusReason::MethodNotAllowed,
            format!(
                "{action} is not supported on resources of kind {:?}",
                qualified(group, resource)
            ),
            Some(resource_details(group, resource, "")),
        )
    }

    /// Upstream's `NewGenericServerResponse` for a status code a server sent without a `Status`
    /// of its own (kube-apiserver answers go-restful's routing errors this way): the code's
    /// generic message and reason, and the server's text as an `UnexpectedServerResponse`
    /// cause. Codes without a generic message of their own are an `InternalError`.
    pub fn generic_server_response(code: i32, server_message: &str) -> Self {
        let (reason, message) = match code {
            400 => (
                StatusReason::BadRequest,
                "the server rejected our request for an unknown reason".to_owned(),
            ),
            404 => (
                StatusReason::NotFound,
                "the server could not find the requested resource".to_owned(),
            ),
            405 => (
                StatusReason::MethodNotAllowed,
                "the server does not allow this method on the requested resource".to_owned(),
            ),
            _ => (
                StatusReason::InternalError,
                format!(
                    "an error on the server ({server_message:?}) has prevented the request from succeeding"
                ),
            ),
        };
        let details = StatusDetails {
            causes: (!server_message.is_empty())
                .then(|| StatusCause {
                    reason: Some(CauseType::UnexpectedServerResponse),
                    message: Some(server_message.to_owned()),
                    field: None,
                })
                .into_iter()
                .collect(),
            ..StatusDetails::default()
        };
        let mut status = Self::failure(reason, message, Some(details));
        status.code = Some(code);
        status
    }

    /// 406 `NotAcceptable`: `only the following media types are accepted: <a>, <b>`.
    pub fn not_acceptable(accepted: &[&str]) -> Self {
        Self::failure(
            StatusReason::NotAcceptable,
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    /// 415 `UnsupportedMediaType`: `the body of the request was in an unknown format - accepted
    /// media types include: <a>, <b>`.
    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::failure(
            StatusReason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
            None,
        )
    }

    /// 413 `RequestEntityTooLarge`: `Request entity too large: <message>`.
    pub fn request_entity_too_large(message: &str) -> Self {
        Self::failure(
            StatusReason::RequestEntityTooLarge,
            format!("Request entity too large: {message}"),
            None,
        )
    }

    /// 429 `TooManyRequests` with the message as given and a retry hint.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i32) -> Self {
        Self::failure(
            StatusReason::TooManyRequests,
            message,
            Some(retry_details(retry_after_seconds)),
        )
    }

    /// 503 `ServiceUnavailable` with the message as given.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::failure(StatusReason::ServiceUnavailable, message, None)
    }

    /// 500 `InternalError`: `Internal error occurred: <error>`, with the error as the only cause.
    pub fn internal_error(error: &str) -> Self {
        let details = StatusDetails {
            causes: vec![StatusCause {
                message: Some(error.to_owned()),
                ..StatusCause::default()
            }],
            ..StatusDetails::default()
        };
        Self::failure(
            StatusReason::InternalError,
            format!("Internal error occurred: {error}"),
            Some(details),
        )
    }
}

impl std::fmt::Display for Status {
    /// Writes the message, or the reason when there is none.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.message, &self.reason) {
            (Some(message), _) => f.write_str(message),
            (None, Some(reason)) => write!(f, "{reason}"),
            (None, None) => f.write_str("unknown"),
        }
    }
}

impl std::error::Error for Status {}

/// Upstream's rendering of a rejected value inside a field error message: strings quoted,
/// numbers and booleans bare, `null` for nothing.
fn bad_value(value: &serde_json::Value) -> String {
    value.to_string()
}

/// `<type text>[: <detail>]`, the tail every field error message shares.
fn with_detail(mut head: String, detail: &str) -> String {
    if !detail.is_empty() {
        head.push_str(": ");
        head.push_str(detail);
    }
    head
}

impl std::fmt::Display for StatusCause {
    /// Upstream's `field.Error` text: `<field>: <message>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            self.field.as_deref().unwrap_or(""),
            self.message.as_deref().unwrap_or("")
        )
    }
}

impl StatusCause {
    /// A cause with every field set.
    pub fn new(reason: CauseType, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: Some(reason),
            message: Some(message.into()),
            field: Some(field.into()),
        }
    }

    /// `FieldValueRequired`: `Required value[: <detail>]`.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        Self::new(
            CauseType::FieldValueRequired,
            field,
            with_detail("Required value".to_owned(), detail),
        )
    }

    /// `FieldValueInvalid`: `Invalid value: <value>[: <detail>]`.
    pub fn invalid(field: impl Into<String>, value: &serde_json::Value, detail: &str) -> Self {
        Self::invalid_shown(field, &bad_value(value), detail)
    }

    /// [`StatusCause::invalid`] with the value already rendered (as a release renders it).
    pub fn invalid_shown(field: impl Into<String>, shown: &str, detail: &str) -> Self {
        Self::new(
            CauseType::FieldValueInvalid,
            field,
            with_detail(format!("Invalid value: {shown}"), detail),
        )
    }

    /// `FieldValueTypeInvalid`: `Invalid value: <value>[: <detail>]`.
    pub fn type_invalid(field: impl Into<String>, value: &serde_json::Value, detail: &str) -> Self {
        Self::new(
            CauseType::FieldValueTypeInvalid,
            field,
            with_detail(format!("Invalid value: {}", bad_value(value)), detail),
        )
    }

    /// `FieldValueNotSupported`: `Unsupported value: <value>: supported values: "a", "b"`.
    pub fn not_supported(
        field: impl Into<String>,
        value: &serde_json::Value,
        supported: &[&str],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported
                .iter()
                .map(|v| serde_json::Value::from(*v).to_string())
                .collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            CauseType::FieldValueNotSupported,
            field,
            with_detail(format!("Unsupported value: {}", bad_value(value)), &detail),
        )
    }

    /// `FieldValueForbidden`: `Forbidden[: <detail>]`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self::new(
            CauseType::FieldValueForbidden,
            field,
            with_detail("Forbidden".to_owned(), detail),
        )
    }

    /// `FieldValueDuplicate`: `Duplicate value: <value>`.
    pub fn duplicate(field: impl Into<String>, value: &serde_json::Value) -> Self {
        Self::new(
            CauseType::FieldValueDuplicate,
            field,
            format!("Duplicate value: {}", bad_value(value)),
        )
    }

    /// `FieldValueNotFound`: `Not found: <value>`.
    pub fn not_found(field: impl Into<String>, value: &serde_json::Value) -> Self {
        Self::new(
            CauseType::FieldValueNotFound,
            field,
            format!("Not found: {}", bad_value(value)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn not_found_matches_the_upstream_body_byte_for_byte() {
        assert_eq!(
            serde_json::to_string(&Status::not_found("", "pods", "grafana")).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"grafana\" not found","reason":"NotFound","details":{"name":"grafana","kind":"pods"},"code":404}"#
        );
    }

    #[test]
    fn metadata_is_always_written() {
        assert_eq!(
            serde_json::to_string(&Status::default()).unwrap(),
            r#"{"metadata":{}}"#
        );
        assert_eq!(
            serde_json::to_string(&Status::success()).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}"#
        );
        assert!(Status::success().is_success());
        assert!(!Status::bad_request("x").is_success());
    }

    #[test]
    fn constructors_build_upstream_messages_codes_and_reasons() {
        let cases: Vec<(Status, &str, i32, StatusReason)> = vec![
            (
                Status::not_found("apps", "deployments", "web"),
                r#"deployments.apps "web" not found"#,
                404,
                StatusReason::NotFound,
            ),
            (
                Status::already_exists("", "configmaps", "cm"),
                r#"configmaps "cm" already exists"#,
                409,
                StatusReason::AlreadyExists,
            ),
            (
                Status::conflict(
                    "apps",
                    "deployments",
                    "web",
                    "the object has been modified; please apply your changes to the latest version and try again",
                ),
                r#"Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again"#,
                409,
                StatusReason::Conflict,
            ),
            (
                Status::bad_request("the server rejected our request"),
                "the server rejected our request",
                400,
                StatusReason::BadRequest,
            ),
            (
                Status::expired("too old resource version: 1 (5)"),
                "too old resource version: 1 (5)",
                410,
                StatusReason::Expired,
            ),
            (
                Status::gone("gone away"),
                "gone away",
                410,
                StatusReason::Gone,
            ),
            (
                Status::too_large_resource_version(10, 7, 1),
                "Timeout: Too large resource version: 10, current: 7",
                504,
                StatusReason::Timeout,
            ),
            (
                Status::timeout("request did not complete within 60s", 0),
                "Timeout: request did not complete within 60s",
                504,
                StatusReason::Timeout,
            ),
            (
                Status::method_not_allowed("", "bindings", "list"),
                r#"list is not supported on resources of kind "bindings""#,
                405,
                StatusReason::MethodNotAllowed,
            ),
            (
                Status::not_acceptable(&["application/json", "application/yaml"]),
                "only the following media types are accepted: application/json, application/yaml",
                406,
                StatusReason::NotAcceptable,
            ),
            (
                Status::unsupported_media_type(&["application/json"]),
                "the body of the request was in an unknown format - accepted media types include: application/json",
                415,
                StatusReason::UnsupportedMediaType,
            ),
            (
                Status::request_entity_too_large("limit is 3145728"),
                "Request entity too large: limit is 3145728",
                413,
                StatusReason::RequestEntityTooLarge,
            ),
            (
                Status::internal_error("disk on fire"),
                "Internal error occurred: disk on fire",
                500,
                StatusReason::InternalError,
            ),
            (
                Status::unauthorized(""),
                "not authorized",
                401,
                StatusReason::Unauthorized,
            ),
            (
                Status::forbidden("", "pods", "p", "no"),
                r#"pods "p" is forbidden: no"#,
                403,
                StatusReason::Forbidden,
            ),
            (
                Status::forbidden("apps", "deployments", "", "no"),
                "deployments.apps is forbidden: no",
                403,
                StatusReason::Forbidden,
            ),
            (
                Status::forbidden("", "", "", "no"),
                "forbidden: no",
                403,
                StatusReason::Forbidden,
            ),
            (
                Status::too_many_requests("slow down", 2),
                "slow down",
                429,
                StatusReason::TooManyRequests,
            ),
            (
                Status::service_unavailable("down"),
                "down",
                503,
                StatusReason::ServiceUnavailable,
            ),
            (
                Status::server_timeout("", "pods", "create", 2),
                "The create operation against pods could not be completed at this time, please try again.",
                500,
                StatusReason::ServerTimeout,
            ),
        ];
        for (status, message, code, reason) in cases {
            assert_eq!(status.message.as_deref(), Some(message));
            assert_eq!(status.code, Some(code), "{message}");
            assert_eq!(status.reason.as_ref(), Some(&reason), "{message}");
            assert_eq!(status.status, Some(StatusOutcome::Failure), "{message}");
            assert_eq!(status.kind.as_deref(), Some("Status"));
            assert_eq!(status.api_version.as_deref(), Some("v1"));
            assert_eq!(status.to_string(), message);
        }
    }

    #[test]
    fn constructors_fill_details_like_upstream() {
        let cases: Vec<(Status, serde_json::Value)> = vec![
            (
                Status::conflict("apps", "deployments", "web", "x"),
                json!({"name": "web", "group": "apps", "kind": "deployments"}),
            ),
            (
                Status::method_not_allowed("apps", "deployments", "watch"),
                json!({"group": "apps", "kind": "deployments"}),
            ),
            (
                Status::too_large_resource_version(10, 7, 1),
                json!({
                    "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                    "retryAfterSeconds": 1
                }),
            ),
            // Upstream always attaches details to a timeout, so a zero hint leaves `{}`.
            (Status::timeout("t", 0), json!({})),
            (
                Status::internal_error("boom"),
                json!({"causes": [{"message": "boom"}]}),
            ),
            (
                Status::server_timeout("", "pods", "create", 2),
                json!({"name": "create", "kind": "pods", "retryAfterSeconds": 2}),
            ),
        ];
        for (status, want) in cases {
            let got = serde_json::to_value(&status).unwrap();
            assert_eq!(got["details"], want, "{status}");
        }
        for status in [
            Status::bad_request("x"),
            Status::expired("x"),
            Status::not_acceptable(&[]),
        ] {
            assert!(status.details.is_none(), "{status}");
        }
    }

    #[test]
    fn invalid_prints_one_cause_bare_and_several_in_brackets() {
        let name_required = StatusCause::required("metadata.name", "");
        let bad_replicas = StatusCause::invalid(
            "spec.replicas",
            &json!(-1),
            "must be greater than or equal to 0",
        );
        let cases = vec![
            (vec![], r#"Deployment.apps "web" is invalid"#),
            (
                vec![name_required.clone()],
                r#"Deployment.apps "web" is invalid: metadata.name: Required value"#,
            ),
            (
                vec![name_required.clone(), bad_replicas.clone()],
                r#"Deployment.apps "web" is invalid: [metadata.name: Required value, spec.replicas: Invalid value: -1: must be greater than or equal to 0]"#,
            ),
            // Identical causes print once, as upstream's aggregate deduplicates them.
            (
                vec![name_required.clone(), name_required.clone()],
                r#"Deployment.apps "web" is invalid: metadata.name: Required value"#,
            ),
        ];
        for (causes, message) in cases {
            let n = causes.len();
            let status = Status::invalid("apps", "Deployment", "web", causes);
            assert_eq!(status.message.as_deref(), Some(message));
            assert_eq!(status.code, Some(422));
            let details = status.details.unwrap();
            assert_eq!(details.kind.as_deref(), Some("Deployment"));
            assert_eq!(details.group.as_deref(), Some("apps"));
            assert_eq!(details.name.as_deref(), Some("web"));
            assert_eq!(details.causes.len(), n);
        }
        let core = Status::invalid(
            "",
            "Pod",
            "p",
            vec![StatusCause::forbidden(
                "spec",
                "pod updates may not change fields",
            )],
        );
        assert_eq!(
            core.message.as_deref(),
            Some(r#"Pod "p" is invalid: spec: Forbidden: pod updates may not change fields"#)
        );
        assert_eq!(
            serde_json::to_value(&core.details.unwrap().causes[0]).unwrap(),
            json!({"reason": "FieldValueForbidden", "message": "Forbidden: pod updates may not change fields", "field": "spec"})
        );
    }

    #[test]
    fn field_cause_messages() {
        let cases = [
            (
                StatusCause::required("a", "need it"),
                CauseType::FieldValueRequired,
                "Required value: need it",
            ),
            (
                StatusCause::invalid("a", &json!("x y"), ""),
                CauseType::FieldValueInvalid,
                r#"Invalid value: "x y""#,
            ),
            (
                StatusCause::type_invalid("a", &json!(true), "must be a string"),
                CauseType::FieldValueTypeInvalid,
                "Invalid value: true: must be a string",
            ),
            (
                StatusCause::not_supported("a", &json!("Maybe"), &["Always", "Never"]),
                CauseType::FieldValueNotSupported,
                r#"Unsupported value: "Maybe": supported values: "Always", "Never""#,
            ),
            (
                StatusCause::duplicate("a", &json!("x")),
                CauseType::FieldValueDuplicate,
                r#"Duplicate value: "x""#,
            ),
            (
                StatusCause::not_found("a", &json!(null)),
                CauseType::FieldValueNotFound,
                "Not found: null",
            ),
        ];
        for (cause, reason, message) in cases {
            assert_eq!(cause.reason, Some(reason));
            assert_eq!(cause.message.as_deref(), Some(message));
            assert_eq!(cause.field.as_deref(), Some("a"));
        }
    }

    #[test]
    fn reasons_map_to_their_default_codes() {
        let cases = [
            ("Unauthorized", 401),
            ("Forbidden", 403),
            ("NotFound", 404),
            ("AlreadyExists", 409),
            ("Conflict", 409),
            ("Gone", 410),
            ("Invalid", 422),
            ("ServerTimeout", 500),
            ("StoreReadError", 500),
            ("Timeout", 504),
            ("TooManyRequests", 429),
            ("BadRequest", 400),
            ("MethodNotAllowed", 405),
            ("NotAcceptable", 406),
            ("RequestEntityTooLarge", 413),
            ("UnsupportedMediaType", 415),
            ("InternalError", 500),
            ("Expired", 410),
            ("ServiceUnavailable", 503),
            ("SomethingNew", 500),
        ];
        for (text, code) in cases {
            let reason = StatusReason::from(text);
            assert_eq!(reason.code(), code, "{text}");
            assert_eq!(reason.as_str(), text);
            assert_eq!(
                matches!(reason, StatusReason::Other(_)),
                text == "SomethingNew"
            );
        }
    }

    #[test]
    fn cause_types_use_upstream_spellings() {
        let all = [
            CauseType::FieldValueNotFound,
            CauseType::FieldValueRequired,
            CauseType::FieldValueDuplicate,
            CauseType::FieldValueInvalid,
            CauseType::FieldValueNotSupported,
            CauseType::FieldValueForbidden,
            CauseType::FieldValueTooLong,
            CauseType::FieldValueTooMany,
            CauseType::InternalError,
            CauseType::FieldValueTypeInvalid,
            CauseType::UnexpectedServerResponse,
            CauseType::FieldManagerConflict,
            CauseType::ResourceVersionTooLarge,
        ];
        for cause in all {
            let text = format!("{cause:?}");
            assert_eq!(cause.as_str(), text);
            assert!(!matches!(
                CauseType::from(text.as_str()),
                CauseType::Other(_)
            ));
        }
    }

    #[test]
    fn status_round_trips_and_reads_what_servers_send() {
        let input = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "m",
            "reason": "Invalid",
            "details": {
                "name": "n",
                "group": "g",
                "kind": "K",
                "uid": "u",
                "causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "spec.x"}, {}],
                "retryAfterSeconds": 3
            },
            "code": 422
        });
        let status: Status = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(status.reason, Some(StatusReason::Invalid));
        assert_eq!(
            status.details.as_ref().unwrap().causes[1],
            StatusCause::default()
        );
        assert_eq!(serde_json::to_value(&status).unwrap(), input);

        // Old servers omit metadata or send null; unknown reasons are kept.
        let sparse: Status =
            serde_json::from_value(json!({"metadata": null, "reason": "Brand New", "extra": 1}))
                .unwrap();
        assert_eq!(sparse.reason, Some(StatusReason::Other("Brand New".into())));
        assert_eq!(
            serde_json::to_value(&sparse).unwrap(),
            json!({"metadata": {}, "reason": "Brand New"})
        );
        assert!(serde_json::from_value::<Status>(json!({"code": "404"})).is_err());
    }
}
