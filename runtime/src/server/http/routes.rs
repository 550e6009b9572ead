//! The routes kube-apiserver installs for a resource, and its answer to a method a route does
//! not take.
//!
//! A built-in resource is served through go-restful: a route per verb the kind's storage
//! serves, at each path shape (collection, every namespace, one object, a subresource, the
//! legacy `/watch/` prefix). A method no route at the path takes is go-restful's
//! `405: Method Not Allowed`, and a path no route takes is its `404: Page Not Found`, both
//! turned by the server's `serviceErrorHandler` into `NewGenericServerResponse`'s Status (no
//! `Allow` header: that handler drops go-restful's headers). `OPTIONS` and `HEAD` have no route
//! but a `proxy`'s, so elsewhere they are refused like any other method. Sources:
//! `staging/src/k8s.io/apiserver/pkg/server/handler.go` (`serviceErrorHandler`),
//! `vendor/github.com/emicklei/go-restful/v3/jsr311.go` (`detectRoute`),
//! `staging/src/k8s.io/apiserver/pkg/endpoints/installer.go`.
//!
//! A custom resource is served by the CRD handler instead, which dispatches on the request's
//! verb (`get`, `list`, `create`, ... or the lower-cased method for any other) and answers
//! `NewMethodNotSupported` for a verb it does not serve
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go`).
//! A kind of a group no release of kube-apiserver serves is taken to be such a resource.

use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;

use crate::meta::Status;
use crate::{ResourceInfo, Verb};

use crate::server::http::error::ApiError;
use crate::server::http::path::{Subresource, Target};
use crate::server::state::{State, release};

/// The shape of a resource path, which decides the routes installed at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `<plural>` in a namespace, or of a cluster-scoped kind.
    Collection,
    /// `<plural>` of a namespaced kind without a namespace: every namespace's objects.
    AllNamespaces,
    /// `<plural>/<name>`.
    Object,
    /// `<plural>/<name>/status`, `/scale` or a pod's `/ephemeralcontainers` or `/resize`.
    Subresource,
    /// A namespace's `finalize`.
    Finalize,
    /// A subresource that takes one object and acts on its parent: a service account's
    /// `token`, a pod's `binding` and `eviction`.
    Action,
    /// A subresource that reaches a kubelet or a backend: a pod's `log` (GET), `exec`,
    /// `attach` and `portforward` (GET and POST, upstream's `upgradeableMethods`), and the
    /// `proxy` of a pod, Service or Node (`proxyMethods`: every method but CONNECT and TRACE).
    Connect(Subresource),
    /// Under the legacy `/watch/` prefix.
    LegacyWatch,
}

impl Shape {
    fn of(target: &Target) -> Self {
        match (target.legacy_watch, &target.name, target.sub) {
            (true, _, _) => Self::LegacyWatch,
            (_, _, Some(Subresource::Finalize)) => Self::Finalize,
            (_, _, Some(sub)) if sub.is_connect() => Self::Connect(sub),
            (_, _, Some(Subresource::Token | Subresource::Binding | Subresource::Eviction)) => {
                Self::Action
            }
            (_, _, Some(_)) => Self::Subresource,
            (_, Some(_), None) => Self::Object,
            (_, None, None) if target.kind.info.is_namespaced() && target.namespace.is_none() => {
                Self::AllNamespaces
            }
            (_, None, None) => Self::Collection,
        }
    }
}

/// The methods go-restful routes take at `shape` for a kind serving `info.verbs`, each with
/// the verb whose storage interface installs it.
fn routed(info: &ResourceInfo, shape: Shape) -> Vec<Method> {
    let has = |verb: Verb| info.verbs.contains(&verb);
    let listed = has(Verb::List) || has(Verb::Watch);
    let rows: &[(Method, bool)] = match shape {
        Shape::Collection => &[
            (Method::GET, listed),
            (Method::POST, has(Verb::Create)),
            (Method::DELETE, has(Verb::DeleteCollection)),
        ],
        Shape::AllNamespaces => &[(Method::GET, listed)],
        Shape::Object => &[
            (Method::GET, has(Verb::Get)),
            (Method::PUT, has(Verb::Update)),
            (Method::PATCH, has(Verb::Patch)),
            (Method::DELETE, has(Verb::Delete)),
        ],
        Shape::Subresource => &[
            (Method::GET, true),
            (Method::PUT, true),
            (Method::PATCH, true),
        ],
        Shape::Finalize => &[(Method::PUT, true)],
        Shape::Action => &[(Method::POST, true)],
        Shape::Connect(Subresource::Log) => &[(Method::GET, true)],
        Shape::Connect(Subresource::Proxy) => &[
            (Method::GET, true),
            (Method::POST, true),
            (Method::PUT, true),
            (Method::PATCH, true),
            (Method::DELETE, true),
            (Method::HEAD, true),
            (Method::OPTIONS, true),
        ],
        Shape::Connect(_) => &[(Method::GET, true), (Method::POST, true)],
        Shape::LegacyWatch => &[(Method::GET, has(Verb::Watch))],
    };
    rows.iter()
        .filter(|(_, installed)| *installed)
        .map(|(method, _)| method.clone())
        .collect()
}

/// The verb upstream's request info gives a request (`RequestInfoFactory`): the method's verb
/// (`get` for HEAD too), `list`, `watch` or `deletecollection` on a collection, the lower-cased
/// method for any other. The CRD handler serves a custom resource by this verb, so a HEAD of
/// one is its GET without the body.
pub(crate) fn request_verb(target: &Target, method: &Method, watch: bool) -> String {
    let collection = target.name.is_none();
    let verb = match *method {
        // Upstream's request info reads HEAD as GET.
        Method::GET | Method::HEAD if watch || target.legacy_watch => "watch",
        Method::GET | Method::HEAD if collection => "list",
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if collection => "deletecollection",
        Method::DELETE => "delete",
        ref other => return other.as_str().to_ascii_lowercase(),
    };
    verb.to_owned()
}

/// Refuses a request whose method no route at its path takes, as upstream does: go-restful's
/// generic 405 (or 404 when no route at all is installed at the path) for a built-in, the CRD
/// handler's `MethodNotSupported` for a custom resource when it does not serve the verb.
pub(crate) fn check(target: &Target, method: &Method, watch: bool) -> Result<(), ApiError> {
    let info = &*target.kind.info;
    let shape = Shape::of(target);
    if release::is_builtin_group(target.group()) {
        let methods = routed(info, shape);
        if methods.contains(method) {
            return Ok(());
        }
        let (code, cause) = if methods.is_empty() {
            (404, "404: Page Not Found")
        } else {
            (405, "405: Method Not Allowed")
        };
        return Err(ApiError::from_status(Status::generic_server_response(
            code, cause,
        )));
    }
    let verb = request_verb(target, method, watch);
    let served = match shape {
        Shape::Finalize => verb == "update",
        Shape::Subresource => ["get", "update", "patch"].contains(&verb.as_str()),
        Shape::Connect(_) => false,
        _ => info.verbs.iter().any(|v| v.as_str() == verb),
    };
    if served {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed(
            target.group(),
            target.plural(),
            &verb,
        ))
    }
}

/// go-restful's answer to a method a route does not take: 405 with the generic Status.
pub(crate) async fn method_not_allowed() -> Response {
    let status = Status::generic_server_response(405, "405: Method Not Allowed");
    ApiError::from_status(status).into_response()
}

/// A descriptive route kube-apiserver serves through go-restful with GET only (the discovery
/// documents of `/api`, `/api/<version>` and `/apis/<group>/<version>`, and `/version`): any
/// other method, `HEAD` and `OPTIONS` included, is go-restful's 405.
pub(crate) fn get_only(route: MethodRouter<State>) -> MethodRouter<State> {
    route.head(method_not_allowed).fallback(method_not_allowed)
}
