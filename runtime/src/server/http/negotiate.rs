//! Content negotiation: which representation a response takes (`Accept`) and how a request body
//! is read (`Content-Type`).
//!
//! Responses come as JSON, YAML or, for the kinds `protobuf` has field numbers for, Kubernetes'
//! protobuf encoding; as the object itself, a `meta.k8s.io/v1` `Table` (JSON and YAML only, as
//! upstream's `AllowsMediaTypeTransform` says), or `PartialObjectMetadata[List]` (any format, for
//! every kind). An `Accept` naming nothing we can produce is 406, a body in a type we cannot
//! read is 415, and a body that does not parse is 400. Bodies may come in protobuf too
//! (built-in kinds only): kubectl 1.32 and newer send them so.
//!
//! With `CBORServingAndStorage` on, CBOR (`cbor`) joins for every kind, as upstream's codec
//! factories and custom resource handler add it: answers and bodies in `application/cbor`,
//! watches in `application/cbor-seq` (asked for as `application/cbor`, the media type a
//! serializer has; `application/cbor-seq` in `Accept` names none), never a `Table` (JSON and
//! YAML only). 406 and 415 list it after the others, as upstream appends its serializer. A
//! watch whose preferred type is YAML, which has no stream form, is 406 listing the stream
//! types (`application/json;stream=watch`, protobuf's, `application/cbor-seq`).

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::server::http::error::ApiError;

/// The media types we produce for kinds without protobuf field numbers, as 406 lists them.
const SERVED: &[&str] = &["application/json", "application/yaml"];

/// The media types we produce for the built-in kinds, as 406 lists them.
const SERVED_PROTOBUF: &[&str] = &[
    "application/json",
    "application/yaml",
    crate::server::http::protobuf::MEDIA_TYPE,
];

/// The media types we read request bodies in, as 415 lists them.
const READ: &[&str] = &[
    "application/json",
    "application/yaml",
    crate::server::http::protobuf::MEDIA_TYPE,
];

/// The media types of watch streams, as upstream's `MediaTypesForSerializer` lists them for a
/// watch whose preferred type has no stream form.
fn stream_types(protobuf: bool, cbor: bool) -> Vec<&'static str> {
    let mut out = vec!["application/json;stream=watch"];
    if protobuf {
        out.push(crate::server::http::protobuf::WATCH_MEDIA_TYPE);
    }
    if cbor {
        out.push(crate::server::http::cbor::SEQ_MEDIA_TYPE);
    }
    out
}

/// `list` with `application/cbor` after it when CBOR is on.
fn with_cbor(list: &[&'static str], cbor: bool) -> Vec<&'static str> {
    let mut out = list.to_vec();
    if cbor {
        out.push(crate::server::http::cbor::MEDIA_TYPE);
    }
    out
}

/// A serialization format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
    /// `application/cbor` (`application/cbor-seq` for watches).
    Cbor,
}

/// What a response carries in place of (or as) the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// The object or list itself.
    Object,
    /// A `meta.k8s.io/v1` `Table`.
    Table,
    /// `PartialObjectMetadata` (one object or watch events) or its list.
    Partial,
}

/// The kind of request, which decides which shapes are acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestShape {
    /// One object.
    Single,
    /// A list.
    List,
    /// A watch stream.
    Watch,
}

/// The chosen representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Output {
    /// Serialization.
    pub(crate) format: Format,
    /// Shape.
    pub(crate) shape: Shape,
    /// The version of `meta.k8s.io` a `Table` or `PartialObjectMetadata` is written in, as
    /// asked (`v1` or `v1beta1`).
    pub(crate) meta_version: &'static str,
}

impl Output {
    /// Plain JSON.
    pub(crate) const JSON: Output = Output {
        format: Format::Json,
        shape: Shape::Object,
        meta_version: "v1",
    };
}

/// One entry of an `Accept` header: its media type (lowercased), parameters and quality.
pub(crate) struct MediaRange<'a> {
    pub(crate) essence: String,
    pub(crate) params: Vec<(String, &'a str)>,
    pub(crate) q: f32,
}

/// The entries of an `Accept` header with a quality above zero, best first (equal qualities
/// in the client's order).
pub(crate) fn parse_accept(accept: &str) -> Vec<MediaRange<'_>> {
    let mut ranges: Vec<MediaRange<'_>> = accept
        .split(',')
        .filter_map(|item| {
            let mut parts = item.split(';');
            let essence = parts.next()?.trim().to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let mut q = 1.0f32;
            let mut params = Vec::new();
            for param in parts {
                let Some((k, v)) = param.split_once('=') else {
                    continue;
                };
                let k = k.trim().to_ascii_lowercase();
                let v = v.trim().trim_matches('"');
                if k == "q" {
                    q = v.parse().unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(MediaRange { essence, params, q })
        })
        .filter(|r| r.q > 0.0)
        .collect();
    // Stable, so equal weights keep the client's order.
    ranges.sort_by(|a, b| b.q.total_cmp(&a.q));
    ranges
}

/// Chooses the response representation from the `Accept` header; `protobuf` says whether the
/// kind can be written in protobuf, `cbor` whether CBOR is on, `go_type` names the Go type
/// upstream would hold for the kind (in the 406 for metadata asked in the wrong shape).
pub(crate) fn choose(
    headers: &HeaderMap,
    request: RequestShape,
    protobuf: bool,
    cbor: bool,
    tables: bool,
    go_type: &dyn Fn(bool) -> String,
) -> Result<Output, ApiError> {
    let served = with_cbor(if protobuf { SERVED_PROTOBUF } else { SERVED }, cbor);
    let Some(accept) = headers.get(header::ACCEPT) else {
        return Ok(Output::JSON);
    };
    let accept = accept
        .to_str()
        .map_err(|_| ApiError::not_acceptable(&served))?;
    if accept.trim().is_empty() {
        return Ok(Output::JSON);
    }
    for range in parse_accept(accept) {
        let format = match range.essence.as_str() {
            "application/json" | "*/*" | "application/*" => Format::Json,
            // YAML has no stream serializer: a watch that prefers it is refused with the
            // stream types (`NegotiateOutputMediaTypeStream`).
            "application/yaml" if request == RequestShape::Watch => {
                return Err(ApiError::not_acceptable(&stream_types(protobuf, cbor)));
            }
            "application/yaml" => Format::Yaml,
            crate::server::http::protobuf::MEDIA_TYPE => Format::Protobuf,
            crate::server::http::cbor::MEDIA_TYPE if cbor => Format::Cbor,
            _ => continue,
        };
        let param = |name: &str| {
            range
                .params
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| *v)
        };
        let meta_version = match param("v") {
            Some("v1beta1") => "v1beta1",
            _ => "v1",
        };
        let shape = match param("as") {
            None => Shape::Object,
            Some(as_) => {
                let meta_group = param("g") == Some("meta.k8s.io")
                    && matches!(param("v"), Some("v1" | "v1beta1"));
                match (as_, request) {
                    _ if !meta_group => continue,
                    ("Table", _) if matches!(format, Format::Protobuf | Format::Cbor) => continue,
                    // A kind without a table convertor (the review kinds) takes no Table
                    // (`RequestScope.AllowsMediaTypeTransform`).
                    ("Table", _) if !tables => continue,
                    ("Table", _) => Shape::Table,
                    ("PartialObjectMetadata", RequestShape::Single | RequestShape::Watch)
                    | ("PartialObjectMetadataList", RequestShape::List | RequestShape::Watch) => {
                        Shape::Partial
                    }
                    // Upstream's negotiation takes either for any request and its transform
                    // refuses the wrong one (`asPartialObjectMetadata[List]`), whatever else the
                    // client accepts.
                    ("PartialObjectMetadata", _) => {
                        return Err(ApiError::not_acceptable_because(format!(
                            "you requested PartialObjectMetadata, but the requested object is \
                             a list (*{})",
                            go_type(true)
                        )));
                    }
                    ("PartialObjectMetadataList", _) => {
                        return Err(ApiError::not_acceptable_because(format!(
                            "you requested PartialObjectMetadataList, but the requested object \
                             is not a list (*{})",
                            go_type(false)
                        )));
                    }
                    _ => continue,
                }
            }
        };
        // The object itself in protobuf only for kinds with field numbers;
        // `PartialObjectMetadata` has them whatever the kind.
        if format == Format::Protobuf && shape == Shape::Object && !protobuf {
            continue;
        }
        return Ok(Output {
            format,
            shape,
            meta_version,
        });
    }
    Err(ApiError::not_acceptable(&served))
}

/// The Go type kube-apiserver holds an object (or, with `list`, a list) of `info`'s kind in,
/// as `%T` prints it in its messages: the internal type of a built-in (`core.ConfigMap`,
/// `apps.DeploymentList`), `unstructured.Unstructured[List]` for anything else.
pub(crate) fn go_type_name(info: &crate::ResourceInfo, list: bool) -> String {
    let builtin = crate::server::http::protobuf::can_encode(&info.api_version(), &info.gvk.kind);
    let suffix = if list { "List" } else { "" };
    if !builtin {
        return format!("unstructured.Unstructured{suffix}");
    }
    // Internal packages are named after their group's first label, with these exceptions.
    let package = match &*info.gvk.group {
        "" | "events.k8s.io" => "core",
        "extensions" => "networking",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("{package}.{}{suffix}", info.gvk.kind)
}

/// The essence of a request's `Content-Type` (lowercase, without parameters); empty when absent.
pub(crate) fn content_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?;
    let text = value.to_str().ok()?;
    Some(
        text.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase(),
    )
}

/// Reads a request body as JSON, YAML, protobuf or (when `cbor`) CBOR into a JSON object.
pub(crate) fn decode_body(headers: &HeaderMap, body: &[u8], cbor: bool) -> Result<Value, ApiError> {
    let read = with_cbor(READ, cbor);
    let format = match headers.get(header::CONTENT_TYPE) {
        None => Format::Json,
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| ApiError::unsupported_media_type(&read))?;
            let essence = text
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            match essence.as_str() {
                "" | "application/json" => Format::Json,
                "application/yaml" | "application/x-yaml" | "text/yaml" => Format::Yaml,
                crate::server::http::protobuf::MEDIA_TYPE => Format::Protobuf,
                crate::server::http::cbor::MEDIA_TYPE if cbor => Format::Cbor,
                _ => return Err(ApiError::unsupported_media_type(&read)),
            }
        }
    };
    let value: Value = match format {
        Format::Protobuf => return decode_protobuf(body),
        Format::Cbor => decode_cbor(body)?,
        _ if body.iter().all(u8::is_ascii_whitespace) => {
            return Err(ApiError::bad_request("the request body is empty"));
        }
        Format::Json => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))?,
        Format::Yaml => crate::server::http::yaml::check_depth(body)
            .and_then(|()| serde_yaml_ng::from_slice(body).map_err(|e| e.to_string()))
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}")))?,
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON or YAML object",
        ));
    }
    Ok(value)
}

/// A protobuf body: its kind's fields by number into JSON; a kind with no field numbers is 415,
/// as upstream answers for custom resources. Numbers the table lacks are skipped here and
/// reported by field validation (`protobuf::unknown_fields`).
fn decode_protobuf(body: &[u8]) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    match crate::server::http::protobuf::decode(body) {
        Ok(value) => Ok(value),
        Err(crate::server::http::protobuf::ProtoError::UnknownKind { .. }) => {
            Err(ApiError::unsupported_media_type(SERVED))
        }
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// A CBOR body: one data item, which must be a map.
pub(crate) fn decode_cbor(body: &[u8]) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    let value = crate::server::http::cbor::decode(body).map_err(|e| ApiError::bad_request(e.0))?;
    // Upstream reads the kind first (`defaultMetaFactory.Interpret` into `metav1.TypeMeta`).
    let found = match &value {
        Value::Object(_) => return Ok(value),
        Value::Array(_) => "array",
        Value::String(_) => "byte string",
        Value::Number(n) if n.is_u64() => "positive integer",
        Value::Number(n) if n.is_i64() => "negative integer",
        _ => "primitives",
    };
    Err(ApiError::bad_request(format!(
        "unable to determine group/version/kind: cbor: cannot unmarshal {found} into Go value of type v1.TypeMeta"
    )))
}

/// `value` with every object's keys in order: upstream writes YAML by converting its JSON
/// (`sigs.k8s.io/yaml.JSONToYAML`), which sorts keys.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Serializes a response body in `format` with the matching `Content-Type`.
pub(crate) fn encode(format: Format, code: axum::http::StatusCode, value: &Value) -> Response {
    let (bytes, content_type) = match format {
        Format::Protobuf => (
            crate::server::http::protobuf::encode(value).map_err(|e| e.to_string()),
            crate::server::http::protobuf::MEDIA_TYPE,
        ),
        Format::Cbor => (
            crate::server::http::cbor::encode(value).map_err(|e| e.0),
            crate::server::http::cbor::MEDIA_TYPE,
        ),
        Format::Json => (
            serde_json::to_vec(value).map_err(|e| e.to_string()),
            "application/json",
        ),
        Format::Yaml => (
            serde_yaml_ng::to_string(&sorted(value))
                .map(String::into_bytes)
                .map_err(|e| e.to_string()),
            "application/yaml",
        ),
    };
    match bytes {
        Ok(bytes) => {
            let mut response = (code, bytes).into_response();
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            response
        }
        Err(e) => ApiError::internal(e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str, request: RequestShape) -> Result<Output, u16> {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        choose(&headers, request, true, false, true, &go_type).map_err(|e| e.code().as_u16())
    }

    fn go_type(list: bool) -> String {
        if list {
            "core.ConfigMapList"
        } else {
            "core.ConfigMap"
        }
        .to_owned()
    }

    /// `asPartialObjectMetadata[List]` in k8s.io/apiserver's `handlers/response.go`.
    #[test]
    fn metadata_in_the_wrong_shape_is_406_with_upstreams_message() {
        let refused = |value: &str, request| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
            let status = choose(&headers, request, true, false, true, &go_type)
                .unwrap_err()
                .into_status();
            (status.code, status.message.unwrap_or_default())
        };
        assert_eq!(
            refused(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json",
                RequestShape::Single
            ),
            (
                Some(406),
                "you requested PartialObjectMetadataList, but the requested object is not a list \
                 (*core.ConfigMap)"
                    .to_owned()
            )
        );
        assert_eq!(
            refused(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                RequestShape::List
            ),
            (
                Some(406),
                "you requested PartialObjectMetadata, but the requested object is a list \
                 (*core.ConfigMapList)"
                    .to_owned()
            )
        );
    }

    #[test]
    fn accept_table() {
        use RequestShape::*;
        let json = Ok(Output::JSON);
        let yaml = Ok(Output {
            format: Format::Yaml,
            shape: Shape::Object,
            ..Output::JSON
        });
        let table = Ok(Output {
            format: Format::Json,
            shape: Shape::Table,
            ..Output::JSON
        });
        let partial = Ok(Output {
            format: Format::Json,
            shape: Shape::Partial,
            ..Output::JSON
        });
        let protobuf = Ok(Output {
            format: Format::Protobuf,
            shape: Shape::Object,
            ..Output::JSON
        });
        let rows = [
            ("application/json", Single, json),
            ("*/*", List, json),
            ("application/yaml", Single, yaml),
            ("application/yaml", Watch, Err(406)),
            (
                "application/vnd.kubernetes.protobuf, application/json",
                List,
                protobuf,
            ),
            ("application/vnd.kubernetes.protobuf", List, protobuf),
            ("application/vnd.kubernetes.protobuf", Watch, protobuf),
            (
                "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json",
                List,
                json,
            ),
            (
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                List,
                Ok(Output {
                    format: Format::Protobuf,
                    shape: Shape::Partial,
                    ..Output::JSON
                }),
            ),
            ("text/html", Single, Err(406)),
            (
                "application/json;as=Table;g=meta.k8s.io;v=v1, application/json",
                List,
                table,
            ),
            ("application/json;as=Table;g=meta.k8s.io;v=v1", Watch, table),
            (
                "application/json;as=Table;g=other;v=v1, application/json",
                List,
                json,
            ),
            ("application/json;as=Table;g=other;v=v1", List, Err(406)),
            (
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
                Single,
                partial,
            ),
            (
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                List,
                partial,
            ),
            ("application/yaml;q=0.5, application/json", Single, json),
            ("application/json;q=0, application/yaml", Single, yaml),
        ];
        for (header, request, want) in rows {
            assert_eq!(accept(header, request), want, "{header} {request:?}");
        }
    }

    /// Kinds without field numbers (custom resources) are not offered in protobuf, as
    /// upstream's custom resource handler leaves protobuf out of its standard serializers; their
    /// `PartialObjectMetadata` still is.
    #[test]
    fn protobuf_only_for_kinds_with_field_numbers() {
        let choose_for_custom = |value: &str, request| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
            choose(&headers, request, false, false, true, &go_type)
        };
        let json = choose_for_custom(
            "application/vnd.kubernetes.protobuf, application/json",
            RequestShape::Single,
        );
        assert_eq!(json.unwrap(), Output::JSON);
        let refused =
            choose_for_custom("application/vnd.kubernetes.protobuf", RequestShape::Single)
                .unwrap_err()
                .into_status();
        assert_eq!(refused.code, Some(406));
        assert_eq!(
            refused.message.as_deref(),
            Some("only the following media types are accepted: application/json, application/yaml")
        );
        let partial = choose_for_custom(
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            RequestShape::Single,
        );
        assert_eq!(partial.unwrap().format, Format::Protobuf);
    }

    /// `CBORServingAndStorage`: CBOR for every kind and shape but a `Table` (upstream's
    /// `AllowsMediaTypeTransform` keeps Tables to JSON and YAML), and only with the gate on.
    #[test]
    fn cbor_only_with_the_gate() {
        let chosen = |value: &str, request, cbor| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
            choose(&headers, request, false, cbor, true, &go_type).map(|o| (o.format, o.shape))
        };
        use RequestShape::*;
        assert_eq!(
            chosen("application/cbor", Watch, true).unwrap(),
            (Format::Cbor, Shape::Object)
        );
        assert_eq!(
            chosen(
                "application/cbor;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                List,
                true
            )
            .unwrap(),
            (Format::Cbor, Shape::Partial)
        );
        assert_eq!(
            chosen(
                "application/cbor;as=Table;g=meta.k8s.io;v=v1, application/json",
                List,
                true
            )
            .unwrap(),
            (Format::Json, Shape::Object)
        );
        assert_eq!(
            chosen("application/cbor-seq", Watch, true)
                .unwrap_err()
                .code()
                .as_u16(),
            406
        );
        let yaml_watch = chosen("application/yaml, application/json", Watch, true)
            .unwrap_err()
            .into_status();
        assert_eq!(
            yaml_watch.message.as_deref(),
            Some(
                "only the following media types are accepted: application/json;stream=watch, application/cbor-seq"
            )
        );
        let off = chosen("application/cbor", Single, false)
            .unwrap_err()
            .into_status();
        assert_eq!(
            off.message.as_deref(),
            Some("only the following media types are accepted: application/json, application/yaml")
        );
        let on = chosen("text/html", Single, true).unwrap_err().into_status();
        assert_eq!(
            on.message.as_deref(),
            Some(
                "only the following media types are accepted: application/json, application/yaml, application/cbor"
            )
        );
    }

    #[test]
    fn content_types() {
        let decode = |ct: Option<&str>, body: &str| {
            let mut headers = HeaderMap::new();
            if let Some(ct) = ct {
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            }
            decode_body(&headers, body.as_bytes(), false).map_err(|e| e.code().as_u16())
        };
        assert!(decode(None, r#"{"a":1}"#).is_ok());
        assert!(decode(Some("application/json; charset=utf-8"), r#"{"a":1}"#).is_ok());
        assert_eq!(
            decode(Some("application/yaml"), "a: 1\n").unwrap(),
            serde_json::json!({"a": 1})
        );
        assert_eq!(decode(Some("application/json"), "{"), Err(400));
        assert_eq!(decode(Some("application/json"), "[1]"), Err(400));
        assert_eq!(decode(Some("application/json"), ""), Err(400));
        assert_eq!(decode(Some("text/plain"), "{}"), Err(415));
        assert_eq!(
            decode(Some("application/vnd.kubernetes.protobuf"), "{}"),
            Err(400)
        );
        assert_eq!(
            decode(Some("application/vnd.kubernetes.protobuf"), ""),
            Err(400)
        );
        // Envelopes: typeMeta {apiVersion, kind} and an empty raw object.
        let envelope = |api_version: &str, kind: &str| {
            let mut type_meta = vec![0x0a, api_version.len() as u8];
            type_meta.extend(api_version.bytes());
            type_meta.extend([0x12, kind.len() as u8]);
            type_meta.extend(kind.bytes());
            let mut body = b"k8s\0\x0a".to_vec();
            body.push(type_meta.len() as u8);
            body.extend(type_meta);
            String::from_utf8(body).unwrap()
        };
        assert_eq!(
            decode(
                Some("application/vnd.kubernetes.protobuf"),
                &envelope("v1", "ConfigMap")
            ),
            Ok(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"}))
        );
        assert_eq!(
            decode(
                Some("application/vnd.kubernetes.protobuf"),
                &envelope("widgets.kapi.dev/v1", "Widget")
            ),
            Err(415)
        );
    }
}
