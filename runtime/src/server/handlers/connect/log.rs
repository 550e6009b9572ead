//! A pod's `log`: upstream's `LogREST` (`pkg/registry/core/pod/rest/log.go`) and the
//! `LocationStreamer` it answers with. The `PodLogOptions` of the query are read as
//! upstream's parameter codec reads them (400 for a value it cannot convert) and checked by
//! `ValidatePodLogOptions` (422); then the container is found, and the log is read from the
//! kubelet of the pod's node (`/containerLogs/<namespace>/<pod>/<container>`) and streamed to
//! the client as it arrives, `follow=true` included. A pod on no node has no log yet: 204
//! without a body, as upstream's `StreamObject` answers a streamer without a location. A
//! kubelet's refusal becomes upstream's `GenericHttpResponseChecker` error.
//!
//! `stream` (PodLogsQuerySplitStreams) is ignored, as upstream ignores it with the gate off:
//! the gate is alpha, and off, in every release kapi serves.

use axum::body::Body;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::response::Response;
use http_body_util::BodyExt as _;
use serde_json::json;

use crate::meta::{Status, StatusCause, StatusDetails, StatusReason};

use crate::server::Call;
use crate::server::handlers::connect::location::{container, kubelet, node_name, read_core};
use crate::server::handlers::connect::query::Query;
use crate::server::http::backend;
use crate::server::http::error::ApiError;
use crate::server::objects::go_text::time_text_error;

/// The most of a kubelet's refusal read into the error (`maxReadLength` of upstream's
/// response checker).
const MOST_REFUSAL_BYTES: usize = 50_000;
/// How long reading a kubelet's refusal may take.
const REFUSAL_READ: std::time::Duration = std::time::Duration::from_secs(10);

/// The options of a log read (`PodLogOptions`), as the query gives them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LogOptions {
    pub(crate) container: String,
    pub(crate) follow: bool,
    pub(crate) previous: bool,
    pub(crate) timestamps: bool,
    pub(crate) since_seconds: Option<i64>,
    pub(crate) since_time: Option<String>,
    pub(crate) tail_lines: Option<i64>,
    pub(crate) limit_bytes: Option<i64>,
    pub(crate) insecure_skip_tls_verify_backend: bool,
}

impl LogOptions {
    /// The options of `query`, or upstream's 400 for a value its conversion refuses.
    pub(crate) fn from_query(query: &str) -> Result<Self, ApiError> {
        let query = Query::new(query);
        let since_time = match query.first("sinceTime") {
            Some(text) if !text.is_empty() && text != "null" => {
                if let Some(error) = time_text_error(text) {
                    return Err(ApiError::bad_request(error));
                }
                Some(text.to_owned())
            }
            _ => None,
        };
        Ok(Self {
            container: query.first("container").unwrap_or_default().to_owned(),
            follow: query.flag("follow"),
            previous: query.flag("previous"),
            timestamps: query.flag("timestamps"),
            since_seconds: query.int64("sinceSeconds")?,
            since_time,
            tail_lines: query.int64("tailLines")?,
            limit_bytes: query.int64("limitBytes")?,
            insecure_skip_tls_verify_backend: query.flag("insecureSkipTLSVerifyBackend"),
        })
    }

    /// What `ValidatePodLogOptions` (`pkg/apis/core/validation`) finds wrong.
    pub(crate) fn causes(&self) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        if let Some(tail) = self.tail_lines.filter(|t| *t < 0) {
            causes.push(StatusCause::invalid(
                "tailLines",
                &json!(tail),
                "must be greater than or equal to 0",
            ));
        }
        if let Some(limit) = self.limit_bytes.filter(|l| *l < 1) {
            causes.push(StatusCause::invalid(
                "limitBytes",
                &json!(limit),
                "must be greater than 0",
            ));
        }
        match (self.since_seconds, &self.since_time) {
            (Some(_), Some(_)) => {
                // `field.Forbidden(field.NewPath(""), ...)`: a cause without a field.
                let mut cause = StatusCause::forbidden(
                    "",
                    "at most one of `sinceTime` or `sinceSeconds` may be specified",
                );
                cause.field = None;
                causes.push(cause);
            }
            (Some(since), None) if since < 1 => causes.push(StatusCause::invalid(
                "sinceSeconds",
                &json!(since),
                "must be greater than 0",
            )),
            _ => {}
        }
        causes
    }

    /// The kubelet's query, as `LogLocation` builds it (Go's `url.Values.Encode`: keys
    /// sorted).
    fn kubelet_query(&self) -> String {
        let mut pairs: Vec<(&str, String)> = Vec::new();
        if self.follow {
            pairs.push(("follow", "true".to_owned()));
        }
        if let Some(limit) = self.limit_bytes {
            pairs.push(("limitBytes", limit.to_string()));
        }
        if self.previous {
            pairs.push(("previous", "true".to_owned()));
        }
        if let Some(since) = self.since_seconds {
            pairs.push(("sinceSeconds", since.to_string()));
        }
        if let Some(since) = &self.since_time {
            pairs.push(("sinceTime", since.clone()));
        }
        if let Some(tail) = self.tail_lines {
            pairs.push(("tailLines", tail.to_string()));
        }
        if self.timestamps {
            pairs.push(("timestamps", "true".to_owned()));
        }
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in &pairs {
            query.append_pair(key, value);
        }
        query.finish()
    }
}

/// GET of a pod's `log`.
pub(crate) async fn serve(call: &Call, name: &str) -> Result<Response, ApiError> {
    let options = LogOptions::from_query(call.uri.query().unwrap_or_default())?;
    let causes = options.causes();
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "PodLogOptions", name, causes));
    }
    let namespace = call.target.namespace.as_deref().unwrap_or_default();
    let pod = read_core(call, "pods", Some(namespace), name).await?;
    let container = container(&pod, &options.container)?;
    let Some(node) = node_name(&pod) else {
        let mut answer = Response::new(Body::empty());
        *answer.status_mut() = StatusCode::NO_CONTENT;
        return Ok(answer);
    };
    let kubelet = kubelet(call, node, options.insecure_skip_tls_verify_backend).await?;
    let mut path = format!("/containerLogs/{namespace}/{name}/{container}");
    let query = options.kubelet_query();
    if !query.is_empty() {
        path.push('?');
        path.push_str(&query);
    }
    let request = Request::get(&path)
        .header(header::HOST, kubelet.authority())
        .body(Body::empty())
        .map_err(ApiError::internal)?;
    // Go's `http.Client.Do` error: `Get "<url>": <why>`.
    let forwarded = backend::send(&kubelet, request)
        .await
        .map_err(|why| ApiError::unstatused(format!("Get {:?}: {why}", kubelet.url(&path))))?;
    let status = forwarded.response.status();
    if !(200..=206).contains(&status.as_u16()) {
        let body = forwarded.streamed().into_body();
        let read = tokio::time::timeout(
            REFUSAL_READ,
            http_body_util::Limited::new(body, MOST_REFUSAL_BYTES).collect(),
        )
        .await;
        let text = match read {
            Ok(Ok(collected)) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
            _ => String::new(),
        };
        return Err(kubelet_refusal(status.as_u16(), &text, name));
    }
    let mut answer = forwarded.streamed();
    *answer.status_mut() = StatusCode::OK;
    let headers = answer.headers_mut();
    headers.clear();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(answer)
}

/// Upstream's `GenericHttpResponseChecker` for a kubelet's answer outside 200-206: a 500 is
/// an internal error and a 400 a bad request with the kubelet's text, anything else
/// `NewGenericServerResponse` for `pods/log` of the pod.
fn kubelet_refusal(code: u16, body: &str, name: &str) -> ApiError {
    match code {
        500 => ApiError::from_status(Status::internal_error(body)),
        400 => ApiError::bad_request(body),
        _ => ApiError::from_status(generic_server_response(
            i32::from(code),
            "pods/log",
            name,
            body,
        )),
    }
}

/// apimachinery's `NewGenericServerResponse` with no verb and no unexpected-response cause:
/// the code's generic message, then `( <resource> <name>)`.
fn generic_server_response(code: i32, resource: &str, name: &str, server_message: &str) -> Status {
    let (reason, message) = match code {
        409 => (
            Some(StatusReason::Conflict),
            "the server reported a conflict".to_owned(),
        ),
        404 => (
            Some(StatusReason::NotFound),
            "the server could not find the requested resource".to_owned(),
        ),
        401 => (
            Some(StatusReason::Unauthorized),
            "the server has asked for the client to provide credentials".to_owned(),
        ),
        403 => (Some(StatusReason::Forbidden), server_message.to_owned()),
        405 => (
            Some(StatusReason::MethodNotAllowed),
            "the server does not allow this method on the requested resource".to_owned(),
        ),
        422 => (
            Some(StatusReason::Invalid),
            "the server rejected our request due to an error in our request".to_owned(),
        ),
        503 => (
            Some(StatusReason::ServiceUnavailable),
            "the server is currently unable to handle the request".to_owned(),
        ),
        504 => (
            Some(StatusReason::Timeout),
            "the server was unable to return a response in the time allotted, but may still be processing the request".to_owned(),
        ),
        429 => (
            Some(StatusReason::TooManyRequests),
            "the server has received too many requests and has asked us to try again later"
                .to_owned(),
        ),
        code if code >= 500 => (
            Some(StatusReason::InternalError),
            format!(
                "an error on the server ({server_message:?}) has prevented the request from succeeding"
            ),
        ),
        code => (
            None,
            format!("the server responded with the status code {code} but did not return more information"),
        ),
    };
    let details = StatusDetails {
        name: (!name.is_empty()).then(|| name.to_owned()),
        kind: Some(resource.to_owned()),
        ..StatusDetails::default()
    };
    Status {
        kind: Some("Status".to_owned()),
        api_version: Some("v1".to_owned()),
        status: Some(crate::meta::StatusOutcome::Failure),
        message: Some(format!("{message} ( {resource} {name})")),
        reason,
        details: Some(details),
        code: Some(code),
        ..Status::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(query: &str) -> Vec<String> {
        LogOptions::from_query(query)
            .map(|o| o.causes())
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.to_string())
            .collect()
    }

    #[test]
    fn options_are_checked_as_validate_pod_log_options_checks_them() {
        assert_eq!(
            messages("tailLines=-1&limitBytes=0&sinceSeconds=0"),
            [
                "tailLines: Invalid value: -1: must be greater than or equal to 0",
                "limitBytes: Invalid value: 0: must be greater than 0",
                "sinceSeconds: Invalid value: 0: must be greater than 0",
            ]
        );
        assert_eq!(
            messages("sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z"),
            [": Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"]
        );
        assert!(messages("tailLines=0&limitBytes=1&sinceSeconds=1&follow=true").is_empty());
    }

    #[test]
    fn values_convert_as_upstreams_parameter_codec_converts_them() {
        let options = LogOptions::from_query("follow=1&previous=false&timestamps=&tailLines=3")
            .unwrap_or_default();
        assert!(options.follow && options.timestamps && !options.previous);
        assert_eq!(options.tail_lines, Some(3));
        let refused = LogOptions::from_query("tailLines=ten")
            .err()
            .map(ApiError::into_status);
        assert_eq!(
            refused.and_then(|s| s.message).as_deref(),
            Some("strconv.ParseInt: parsing \"ten\": invalid syntax")
        );
        assert!(LogOptions::from_query("sinceTime=yesterday").is_err());
    }

    #[test]
    fn the_kubelet_query_has_its_keys_sorted() {
        let options = LogOptions::from_query("timestamps=true&tailLines=5&follow=true&container=c")
            .unwrap_or_default();
        assert_eq!(
            options.kubelet_query(),
            "follow=true&tailLines=5&timestamps=true"
        );
    }

    #[test]
    fn a_kubelet_refusal_reads_as_upstreams_checker_words_it() {
        let status = kubelet_refusal(404, "no such container", "web").into_status();
        assert_eq!(
            status.message.as_deref(),
            Some("the server could not find the requested resource ( pods/log web)")
        );
        let status = kubelet_refusal(400, "container is not running", "web").into_status();
        assert_eq!(status.message.as_deref(), Some("container is not running"));
        let status = kubelet_refusal(502, "bad gateway", "web").into_status();
        assert_eq!(
            status.message.as_deref(),
            Some(
                "an error on the server (\"bad gateway\") has prevented the request from succeeding ( pods/log web)"
            )
        );
    }
}
