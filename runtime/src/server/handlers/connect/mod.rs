//! The subresources that reach past the API server, as upstream's connect storages serve
//! them: a pod's `log` (`log`), its `exec`, `attach` and `portforward` (upstream's
//! `ExecREST`, `AttachREST`, `PortForwardREST` in `pkg/registry/core/pod/rest/subresources.go`:
//! an upgraded connection tunnelled to the kubelet of the pod's node) and the `proxy` of a pod,
//! a Service or a Node (`ProxyREST` of each: HTTP to the pod's IP, a Service endpoint, the
//! node's kubelet or another of its ports). Where each goes is `location`'s; the connection is
//! `http::backend`'s; the query is read by `query`. Each but the log is admitted first as a
//! CONNECT of its options object (`admission::admit_connect`), as upstream's
//! `ConnectResource` admits it, and goes where the admitted options say.
//!
//! A WebSocket `exec`, `attach` or `portforward` is a GET, authorized as `get`; with
//! AuthorizePodWebsocketUpgradeCreatePermission on (from 1.35) it must also be allowed
//! `create`, as upstream's `ensureAuthorizedForVerb` checks.

pub(crate) mod location;
pub(crate) mod log;
pub(crate) mod query;

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use axum::response::Response;
use hyper::upgrade::OnUpgrade;
use serde_json::{Value, json};

use crate::server::auth::attributes::Attributes;
use crate::server::auth::authz::Decision;
use crate::server::http::backend::{self, Backend};
use crate::server::http::error::{ApiError, Subject};
use crate::server::http::path::Subresource;
use crate::server::state::release::Feature;
use crate::server::{Call, admission};

use location::{container, kubelet, node_name, read_core};
use query::{Query, parse_int64};

/// Serves a connect subresource's request; `upgrade` is the client connection's, when the
/// server can hand it over.
pub(crate) async fn serve(
    call: &Call,
    method: &Method,
    body: Body,
    upgrade: Option<OnUpgrade>,
) -> Result<Response, ApiError> {
    let name = call.target.name.as_deref().unwrap_or_default();
    match call.target.sub {
        Some(Subresource::Log) => log::serve(call, name).await,
        Some(sub @ (Subresource::Exec | Subresource::Attach | Subresource::PortForward)) => {
            stream(call, sub, name, method, body, upgrade).await
        }
        Some(Subresource::Proxy) => proxy(call, name, method, body, upgrade).await,
        _ => Err(ApiError::no_route()),
    }
}

/// The options object of an `exec`, `attach` or `portforward` (upstream's `PodExecOptions`,
/// `PodAttachOptions`, `PodPortForwardOptions` as `runtime.ParameterCodec` decodes the query,
/// written as their JSON omits empty fields): what admission is asked about.
fn options_of(query: &Query, sub: Subresource) -> Result<Value, ApiError> {
    if sub == Subresource::PortForward {
        let mut ports = Vec::new();
        for port in query.all("ports") {
            ports.push(parse_int64(port)?);
        }
        let mut options = json!({"kind": "PodPortForwardOptions", "apiVersion": "v1"});
        if !ports.is_empty() {
            options["ports"] = json!(ports);
        }
        return Ok(options);
    }
    let exec = sub == Subresource::Exec;
    let kind = if exec {
        "PodExecOptions"
    } else {
        "PodAttachOptions"
    };
    let mut options = json!({"kind": kind, "apiVersion": "v1"});
    for option in ["stdin", "stdout", "stderr", "tty"] {
        if query.flag(option) {
            options[option] = json!(true);
        }
    }
    if let Some(container) = query.first("container").filter(|c| !c.is_empty()) {
        options["container"] = json!(container);
    }
    if exec {
        options["command"] = json!(query.all("command").collect::<Vec<_>>());
    }
    Ok(options)
}

/// The kubelet query of admitted options (upstream's `streamParams` for `exec` and `attach`,
/// keys sorted as `url.Values.Encode` sorts them; the ports of a `portforward`) and the
/// container they name.
fn kubelet_query(options: &Value, sub: Subresource) -> (String, String) {
    let mut encoded = form_urlencoded::Serializer::new(String::new());
    if sub == Subresource::PortForward {
        let ports: Vec<String> = options["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(ToString::to_string)
            .collect();
        if !ports.is_empty() {
            encoded.append_pair("port", &ports.join(","));
        }
        return (encoded.finish(), String::new());
    }
    for command in options["command"].as_array().into_iter().flatten() {
        encoded.append_pair("command", command.as_str().unwrap_or_default());
    }
    for (option, param) in [
        ("stderr", "error"),
        ("stdin", "input"),
        ("stdout", "output"),
        ("tty", "tty"),
    ] {
        if options[option] == true {
            encoded.append_pair(param, "1");
        }
    }
    let container = options["container"].as_str().unwrap_or_default().to_owned();
    (encoded.finish(), container)
}

/// A pod's `exec`, `attach` or `portforward`: the kubelet's location worked out with
/// upstream's checks, then the upgrade the request asks for tunnelled to it.
async fn stream(
    call: &Call,
    sub: Subresource,
    name: &str,
    method: &Method,
    body: Body,
    upgrade: Option<OnUpgrade>,
) -> Result<Response, ApiError> {
    let query = Query::new(call.uri.query().unwrap_or_default());
    // The options are converted before anything else, then admitted, as the connect handler
    // does (`ConnectResource`): what the kubelet is asked is what admission let through.
    let mut options = options_of(&query, sub)?;
    authorize_create(call, sub, method, name)?;
    admission::admit_connect(call, &mut options, name).await?;
    let (kubelet_query, wanted) = kubelet_query(&options, sub);
    let namespace = call.target.namespace.as_deref().unwrap_or_default();
    let pod = read_core(call, "pods", Some(namespace), name).await?;
    let path = if sub == Subresource::PortForward {
        format!("/portForward/{namespace}/{name}")
    } else {
        let container = container(&pod, &wanted)?;
        format!("/{}/{namespace}/{name}/{container}", sub.name())
    };
    let node = node_name(&pod).ok_or_else(|| {
        ApiError::bad_request(format!("pod {name} does not have a host assigned"))
    })?;
    let kubelet = kubelet(call, node, false).await?;
    if !backend::is_upgrade(&call.headers) {
        return Err(ApiError::bad_request("Upgrade request required"));
    }
    let mut path_and_query = path;
    if !kubelet_query.is_empty() {
        path_and_query.push('?');
        path_and_query.push_str(&kubelet_query);
    }
    upgraded(call, &kubelet, method, &path_and_query, body, upgrade).await
}

/// Upstream's `ensureAuthorizedForVerb`: with AuthorizePodWebsocketUpgradeCreatePermission on,
/// a request not already authorized as `create` (a WebSocket's GET) must be allowed it too;
/// the refusal names the pod as upstream's `NewForbidden` does.
fn authorize_create(
    call: &Call,
    sub: Subresource,
    method: &Method,
    name: &str,
) -> Result<(), ApiError> {
    let gated = matches!(
        sub,
        Subresource::Exec | Subresource::Attach | Subresource::PortForward
    );
    if !gated
        || !call
            .state
            .feature(Feature::AuthorizePodWebsocketUpgradeCreatePermission)
            .is_on()
    {
        return Ok(());
    }
    let mut attributes = Attributes::of(method, &call.uri);
    if attributes.verb == "create" {
        return Ok(());
    }
    attributes.verb = "create".to_owned();
    match call.state.access.decide(&call.user, &attributes) {
        Decision::Allow(_) => Ok(()),
        Decision::Deny(reason) | Decision::NoOpinion(reason) => Err(ApiError::forbidden(
            Subject {
                group: "",
                resource: "pods",
                name,
            },
            &reason,
        )),
    }
}

/// Sends an upgrade request to `backend` and tunnels the connection once it answers 101; any
/// other answer goes back to the client as it is, as upstream's `tryUpgrade` copies it.
async fn upgraded(
    call: &Call,
    backend: &Backend,
    method: &Method,
    path_and_query: &str,
    body: Body,
    upgrade: Option<OnUpgrade>,
) -> Result<Response, ApiError> {
    let Some(upgrade) = upgrade else {
        // A request that did not come over a connection (the server's in-process calls) has
        // nothing to hand over.
        return Err(ApiError::bad_request("Upgrade request required"));
    };
    let mut request = Request::builder()
        .method(method.clone())
        .uri(path_and_query)
        .body(body)
        .map_err(ApiError::internal)?;
    *request.headers_mut() = backend::end_to_end(&call.headers, true);
    set_host(&mut request, backend)?;
    let forwarded = backend::send(backend, request)
        .await
        .map_err(|why| ApiError::unstatused(format!("error dialing backend: {why}")))?;
    if forwarded.response.status() == StatusCode::SWITCHING_PROTOCOLS {
        Ok(forwarded.tunnel(upgrade, call.tun.stop.clone()))
    } else {
        Ok(forwarded.streamed())
    }
}

fn set_host(request: &mut Request<Body>, backend: &Backend) -> Result<(), ApiError> {
    let host = HeaderValue::from_str(&backend.authority()).map_err(ApiError::internal)?;
    request.headers_mut().insert(header::HOST, host);
    Ok(())
}

/// The `proxy` of a pod, Service or Node: HTTP (an upgrade included) to where its registry's
/// `ResourceLocation` points, at the path after `proxy` and with the request's query.
async fn proxy(
    call: &Call,
    id: &str,
    method: &Method,
    body: Body,
    upgrade: Option<OnUpgrade>,
) -> Result<Response, ApiError> {
    // Admitted before the location is looked up, as `ConnectResource` admits before it
    // connects: the path proxied to is the one admission let through.
    let mut options = proxy_options(call);
    admission::admit_connect(call, &mut options, id).await?;
    let backend = match call.target.plural() {
        "pods" => location::pod_backend(call, id).await?,
        "services" => location::service_backend(call, id).await?,
        _ => location::node_backend(call, id).await?,
    };
    let path = clean_path(options["path"].as_str().unwrap_or_default());
    let query = call
        .uri
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    if backend::is_upgrade(&call.headers) {
        let target = format!("{}{query}", if path.is_empty() { "/" } else { &path });
        return upgraded(call, &backend, method, &target, body, upgrade).await;
    }
    // Upstream's `proxyRedirectsforRootPath`: `.../proxy` without a path redirects to
    // `.../proxy/`, so that relative links resolve under the proxy.
    if path.is_empty() && (*method == Method::GET || *method == Method::HEAD) {
        let location = format!("{}/{query}", call.uri.path());
        let mut answer = Response::new(Body::empty());
        *answer.status_mut() = StatusCode::MOVED_PERMANENTLY;
        let location = HeaderValue::from_str(&location).map_err(ApiError::internal)?;
        answer.headers_mut().insert(header::LOCATION, location);
        return Ok(answer);
    }
    let target = format!("{}{query}", if path.is_empty() { "/" } else { &path });
    let mut request = Request::builder()
        .method(method.clone())
        .uri(&target)
        .body(body)
        .map_err(ApiError::internal)?;
    let mut headers = backend::end_to_end(&call.headers, false);
    // Upstream's proxy `Transport` tells the backend where the request was addressed.
    if let Ok(uri) = HeaderValue::from_str(call.uri.path()) {
        headers.insert("x-forwarded-uri", uri);
    }
    *request.headers_mut() = headers;
    set_host(&mut request, &backend)?;
    let forwarded = backend::send(&backend, request)
        .await
        .map_err(|why| ApiError::unstatused(format!("error trying to reach service: {why}")))?;
    let mut answer = forwarded.streamed();
    // Upstream's `corsRemovingTransport`: the backend's CORS headers are not the server's.
    let cors: Vec<_> = answer
        .headers()
        .keys()
        .filter(|name| name.as_str().starts_with("access-control-"))
        .cloned()
        .collect();
    for name in cors {
        answer.headers_mut().remove(name);
    }
    Ok(answer)
}

/// The options object of a `proxy` (upstream's `PodProxyOptions`, `ServiceProxyOptions`,
/// `NodeProxyOptions`): the path after `proxy`, as `getRequestOptions` reads it into the
/// options' `path` (omitted when empty, as their JSON omits it).
fn proxy_options(call: &Call) -> Value {
    let kind = format!("{}ProxyOptions", call.info().gvk.kind);
    let mut options = json!({"kind": kind, "apiVersion": "v1"});
    if !call.target.proxy_path.is_empty() {
        options["path"] = json!(call.target.proxy_path);
    }
    options
}

/// The backend path of `proxy_path` as upstream joins it onto the location
/// (`net.JoinPreservingTrailingSlash`, Go's `path.Join`): `.` and `..` resolved, repeated
/// slashes folded, a trailing slash kept; empty stays empty.
fn clean_path(proxy_path: &str) -> String {
    if proxy_path.is_empty() {
        return String::new();
    }
    let mut parts: Vec<&str> = Vec::new();
    for segment in proxy_path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            segment => parts.push(segment),
        }
    }
    let mut path = format!("/{}", parts.join("/"));
    if proxy_path.ends_with('/') && !path.ends_with('/') {
        path.push('/');
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_paths_are_cleaned_as_go_joins_them() {
        assert_eq!(clean_path(""), "");
        assert_eq!(clean_path("/"), "/");
        assert_eq!(clean_path("/a/b"), "/a/b");
        assert_eq!(clean_path("/a//b/./c/../d/"), "/a/b/d/");
        assert_eq!(clean_path("/../../etc"), "/etc");
    }

    #[test]
    fn exec_options_become_the_kubelets_query() {
        let query = Query::new(
            "command=sh&command=-c&command=echo+hi&stdout=true&stderr=1&stdin=false&container=app",
        );
        let exec = options_of(&query, Subresource::Exec).unwrap();
        assert_eq!(
            exec,
            json!({"kind": "PodExecOptions", "apiVersion": "v1", "stdout": true,
                "stderr": true, "container": "app", "command": ["sh", "-c", "echo hi"]})
        );
        let (encoded, container) = kubelet_query(&exec, Subresource::Exec);
        assert_eq!(
            encoded,
            "command=sh&command=-c&command=echo+hi&error=1&output=1"
        );
        assert_eq!(container, "app");
        let attach = options_of(&query, Subresource::Attach).unwrap();
        assert_eq!(attach["kind"], "PodAttachOptions");
        let (encoded, _) = kubelet_query(&attach, Subresource::Attach);
        assert_eq!(encoded, "error=1&output=1");
        let ports = options_of(&Query::new("ports=80&ports=443"), Subresource::PortForward);
        let (encoded, _) = kubelet_query(&ports.unwrap(), Subresource::PortForward);
        assert_eq!(encoded, "port=80%2C443");
    }
}
