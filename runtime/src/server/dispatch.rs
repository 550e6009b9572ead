//! The resource dispatcher: every path the descriptive routes do not match comes here. The path
//! is resolved against the catalog (`http::path`, subresources included), the request's
//! [`Operation`] is decided once from its method, path and query, measured for
//! `state::metrics`, and served by its module under `handlers`, which reads what it needs of
//! the request and renders its answer.
//!
//! May import anything in the server: nothing imports the dispatcher but `serve`'s router.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::OnUpgrade;

use crate::meta::ListOptions;
use crate::{Registry, Verb};

use crate::server::auth::user::User;
use crate::server::auth::{FindingsSlot, Requestor};
use crate::server::describe::deprecation;
use crate::server::describe::discovery::{Served, page_not_found};
use crate::server::handlers::object::UpdateScope;
use crate::server::handlers::patch::apply;
use crate::server::handlers::request;
use crate::server::handlers::{
    binding, connect, create, delete, eviction, get, list, namespace_lifecycle, patch, reviews,
    scale, token_request, update, watch,
};
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::{self, RequestShape};
use crate::server::http::path::{self, Subresource};
use crate::server::http::routes;
use crate::server::http::{cbor, protobuf};
use crate::server::state::{State, metrics};
use crate::server::{Call, Tunables};

/// What a request does to which part of its target, decided once from its method, path and
/// query ([`Operation::of`]): the verb it is authorized and measured as ([`Operation::verb`]),
/// and the handler that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    /// GET of an object or its `status`.
    Get,
    GetScale,
    List,
    /// A watch of a collection, or of one object (`?watch` on its URL, or the legacy
    /// `/watch/` prefix).
    Watch,
    Create,
    Update(UpdateScope),
    UpdateScale,
    Patch(UpdateScope),
    PatchScale,
    Delete,
    DeleteCollection,
    /// PUT of a namespace's `finalize` subresource.
    Finalize,
    /// POST of a service account's `token` subresource.
    CreateToken,
    /// POST of a pod's `binding` subresource, or of the `bindings` collection.
    Bind,
    /// POST of a pod's `eviction` subresource.
    Evict,
    /// A subresource that reaches past the server (a pod's `log`, `exec`, `attach`,
    /// `portforward`, the `proxy` of a pod, Service or Node), with the verb of its method.
    Connect(Verb),
}

/// The first release serving a pod's `ephemeralcontainers`.
const EPHEMERAL_CONTAINERS_SINCE: crate::KubeVersion = crate::KubeVersion::new(1, 23);

/// Whether the kind is the core `bindings` collection, whose create binds the pod it names
/// rather than storing the binding (upstream's `LegacyBindingREST`).
fn is_bindings(info: &crate::ResourceInfo) -> bool {
    info.gvk.group.is_empty() && info.plural == "bindings"
}

impl Operation {
    fn verb(self) -> Verb {
        match self {
            Self::Get | Self::GetScale => Verb::Get,
            Self::List => Verb::List,
            Self::Watch => Verb::Watch,
            Self::Create | Self::CreateToken | Self::Bind | Self::Evict => Verb::Create,
            Self::Update(_) | Self::UpdateScale | Self::Finalize => Verb::Update,
            Self::Patch(_) | Self::PatchScale => Verb::Patch,
            Self::Delete => Verb::Delete,
            Self::DeleteCollection => Verb::DeleteCollection,
            Self::Connect(verb) => verb,
        }
    }

    /// The shape of answer the operation gives, for content negotiation.
    fn shape(self) -> RequestShape {
        match self {
            Self::List | Self::DeleteCollection => RequestShape::List,
            Self::Watch => RequestShape::Watch,
            _ => RequestShape::Single,
        }
    }

    /// The operation `method` performs on the call's target (`watch`: a GET asked for a watch),
    /// once `routes::check` has let the method through; a combination no handler serves is
    /// refused as the CRD handler refuses a verb it does not serve.
    fn of(call: &Call, method: &Method, watch: bool) -> Result<Self, ApiError> {
        let info = call.info();
        let target = &call.target;
        let collection_in_scope = !info.is_namespaced() || target.namespace.is_some();
        let scope = match target.sub {
            Some(Subresource::Status) => UpdateScope::Status,
            Some(Subresource::EphemeralContainers) => UpdateScope::EphemeralContainers,
            Some(Subresource::Resize) => UpdateScope::Resize,
            _ => UpdateScope::Main,
        };
        // The subresource holding ephemeral containers is served from 1.23, where the feature
        // went beta (its alpha in 1.20 took another kind, and was off).
        if target.sub == Some(Subresource::EphemeralContainers)
            && call.state.kube_version < EPHEMERAL_CONTAINERS_SINCE
        {
            return Err(ApiError::no_route());
        }
        // `pods/resize` is registered only while InPlacePodVerticalScaling is on
        // (`storage_core.go`): from 1.33 by default, and never before the subresource's 1.32.
        if target.sub == Some(Subresource::Resize) && !call.state.serves_pod_resize() {
            return Err(ApiError::no_route());
        }
        // A HEAD reaches here only for a custom resource, which the CRD handler serves as a GET,
        // and for a `proxy`, which passes it on (authorized as a GET).
        let method = if *method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        if target.sub.is_some_and(Subresource::is_connect) {
            // `routes::check` let only the subresource's methods through.
            let verb = match *method {
                Method::POST => Verb::Create,
                Method::PUT => Verb::Update,
                Method::PATCH => Verb::Patch,
                Method::DELETE => Verb::Delete,
                _ => Verb::Get,
            };
            return Ok(Self::Connect(verb));
        }
        Ok(match (method, &target.name, target.sub) {
            (&Method::PUT, Some(_), Some(Subresource::Finalize)) => Self::Finalize,
            (&Method::POST, Some(_), Some(Subresource::Token)) => Self::CreateToken,
            (&Method::POST, Some(_), Some(Subresource::Binding)) => Self::Bind,
            (&Method::POST, Some(_), Some(Subresource::Eviction)) => Self::Evict,
            (&Method::POST, None, None) if collection_in_scope && is_bindings(info) => Self::Bind,
            (&Method::GET, _, None) if watch => Self::Watch,
            (&Method::GET, None, None) => Self::List,
            (&Method::GET, Some(_), Some(Subresource::Scale)) => Self::GetScale,
            (
                &Method::GET,
                Some(_),
                Some(Subresource::Status | Subresource::EphemeralContainers | Subresource::Resize)
                | None,
            ) => Self::Get,
            (&Method::POST, None, None) if collection_in_scope => Self::Create,
            (&Method::PUT, Some(_), Some(Subresource::Scale)) => Self::UpdateScale,
            (
                &Method::PUT,
                Some(_),
                Some(Subresource::Status | Subresource::EphemeralContainers | Subresource::Resize)
                | None,
            ) => Self::Update(scope),
            (&Method::PATCH, Some(_), Some(Subresource::Scale)) => Self::PatchScale,
            (
                &Method::PATCH,
                Some(_),
                Some(Subresource::Status | Subresource::EphemeralContainers | Subresource::Resize)
                | None,
            ) => Self::Patch(scope),
            (&Method::DELETE, Some(_), None) => Self::Delete,
            (&Method::DELETE, None, None) if collection_in_scope => Self::DeleteCollection,
            _ => {
                let verb = routes::request_verb(target, method, watch);
                return Err(ApiError::method_not_allowed(
                    target.group(),
                    target.plural(),
                    &verb,
                ));
            }
        })
    }
}

/// Whether anything on upstream's handler chain serves `path`, which no route here took and no
/// served kind resolves: go-restful's container (its director in k8s.io/apiserver
/// `pkg/server/handler.go`) takes `/api...`, `/version...` and a path under a group that has
/// a go-restful web service (one registered in code, [`Served::is_compiled`]) and answers what
/// it has no route for with a `Status`; apiextensions' handler takes the resources of served
/// CRD versions. Anything else (`/foo`, `/apis/<a group nothing serves>/...`, a CRD group's
/// unknown version or resource) falls through to Go's plain-text `404 page not found`.
fn served_upstream(state: &State, registry: &Registry, path: &str) -> bool {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api" | "version", ..] => return true,
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        ["apis", ..] => return true,
        _ => return false,
    };
    let served = Served::new(registry, |info| state.serves(info));
    if served.is_compiled(group) {
        return true;
    }
    // The resource as upstream's `RequestInfoFactory` reads it: after `watch`, and after
    // `namespaces/<ns>` unless that is a namespace's own path.
    let rest = match rest {
        ["watch", rest @ ..] => rest,
        rest => rest,
    };
    let resource = match rest {
        ["namespaces", _, resource, ..] if !matches!(*resource, "status" | "finalize") => *resource,
        [resource, ..] => *resource,
        [] => return false,
    };
    registry
        .get(group, version, resource)
        .is_some_and(|kind| state.serves(&kind.info))
}

/// Serves every resource URL: routing, verb checks, deprecation warnings, then the handler.
pub(crate) async fn dispatch(state: State, tun: Arc<Tunables>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    // The client connection, for a subresource that upgrades it (`exec`, `attach`,
    // `portforward`, a proxied WebSocket).
    let upgrade = parts.extensions.remove::<OnUpgrade>();
    let metrics = Arc::clone(&state.metrics);
    let registry = state.registry();
    let resolved = path::resolve(&registry, parts.uri.path()).and_then(|target| {
        match state.serves(&target.kind.info) {
            true => Ok(target),
            false => Err(ApiError::no_route()),
        }
    });
    let target = match resolved {
        Ok(target) => target,
        Err(_) if !served_upstream(&state, &registry, parts.uri.path()) => {
            return refuse_unread(page_not_found(), body).await;
        }
        Err(e) => return refuse_unread(e, body).await,
    };
    let info = &*target.kind.info;
    let warning = deprecation::warning_in(&registry, info, state.kube_version)
        .and_then(|text| deprecation::header_value(&text));
    let measure = metrics::begin(
        &metrics,
        &parts.method,
        &parts.uri,
        &parts.headers,
        &target,
        state.kube_version,
    );
    // Every request passed the auth guard, which names its user; an in-process call that
    // bypassed it is the unsecured user's, as on a server without authentication.
    let user = parts
        .extensions
        .get::<Requestor>()
        .map_or_else(|| Arc::new(User::unsecured()), |r| Arc::clone(&r.0));
    let call = Call {
        state,
        registry,
        tun,
        target,
        headers: parts.headers,
        uri: parts.uri,
        user,
        warnings: Arc::default(),
        audit: parts.extensions.get::<FindingsSlot>().cloned(),
    };
    // Warnings found while serving (unknown fields) go out with any answer, as upstream's.
    let mut warnings = Vec::new();
    let mut response = match handle(&call, &parts.method, body, upgrade, &mut warnings).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    };
    if let Ok(mut found) = call.warnings.lock() {
        warnings.append(&mut found);
    }
    let headers = response.headers_mut();
    if let Some(warning) = warning {
        headers.append(header::WARNING, warning);
    }
    let mut sent: Vec<&str> = Vec::new();
    for text in &warnings {
        if sent.contains(&text.as_str()) {
            continue;
        }
        sent.push(text);
        if let Some(value) = deprecation::header_value(text) {
            headers.append(header::WARNING, value);
        }
    }
    measure.finish(&metrics, response)
}

/// A CBOR body (`application/cbor`, or `application/apply-patch+cbor` on a patch) with
/// `CBORServingAndStorage` on, read whole and handed on as the JSON (or, for apply, the JSON the
/// YAML reader takes) the handlers read: the request, its `Content-Type` changed, and the body.
/// No new request, and the body as it came, when the body is not CBOR or the gate is off (the
/// handlers then refuse the type).
async fn cbor_body(
    call: &Call,
    op: Operation,
    body: Body,
) -> Result<(Option<Call>, Body), ApiError> {
    if !call.state.cbor() {
        return Ok((None, body));
    }
    let Some(content_type) = negotiate::content_type(&call.headers) else {
        return Ok((None, body));
    };
    let patch = matches!(op, Operation::Patch(_) | Operation::PatchScale);
    let as_type = match content_type.as_str() {
        cbor::APPLY_PATCH if patch => apply::APPLY_PATCH,
        cbor::MEDIA_TYPE if !patch => "application/json",
        _ => return Ok((None, body)),
    };
    let raw = request::read_body(call, body).await?;
    let value = negotiate::decode_cbor(&raw)?;
    let json = serde_json::to_vec(&value).map_err(ApiError::internal)?;
    let mut json_call = call.clone();
    json_call.headers.remove(header::CONTENT_LENGTH);
    json_call
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(as_type));
    Ok((Some(json_call), Body::from(json)))
}

/// The most of an unread body read before an early refusal, as Go's server reads what a
/// handler left (`maxPostHandlerReadBytes`), so that a client still sending it gets the answer
/// rather than a broken connection.
const DRAIN_BYTES: usize = 256 << 10;

/// Answers `refused` once the request's body, up to [`DRAIN_BYTES`], has been read.
async fn refuse_unread(refused: impl IntoResponse, body: Body) -> Response {
    // A body over the bound or cut short is the client's; the refusal stands either way.
    let _ = axum::body::to_bytes(body, DRAIN_BYTES).await;
    refused.into_response()
}

fn is_watch(call: &Call) -> Result<bool, ApiError> {
    if call.target.legacy_watch {
        return Ok(true);
    }
    let options: ListOptions = call.query()?;
    Ok(options.watch == Some(true))
}

/// Decides the operation, checks the kind serves its verb, negotiates the answer's format and
/// hands the request to the operation's handler.
async fn handle(
    call: &Call,
    method: &Method,
    body: Body,
    upgrade: Option<OnUpgrade>,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let target = &call.target;
    let watch = *method == Method::GET && target.sub.is_none() && is_watch(call)?;
    if let Err(refused) = routes::check(target, method, watch) {
        return Ok(refuse_unread(refused, body).await);
    }
    let op = match Operation::of(call, method, watch) {
        Ok(op) => op,
        Err(refused) => return Ok(refuse_unread(refused, body).await),
    };
    if let Operation::Connect(_) = op {
        return connect::serve(call, method, body, upgrade).await;
    }
    // A route that serves more than one verb (a collection's GET lists and watches) refuses
    // the one the kind does not serve, as upstream's handler does.
    if !call.info().verbs.contains(&op.verb()) {
        let refused =
            ApiError::method_not_allowed(target.group(), target.plural(), op.verb().as_str());
        return Ok(refuse_unread(refused, body).await);
    }
    let info = call.info();
    let protobuf = protobuf::can_encode(&info.api_version(), &info.gvk.kind);
    let go_type = |list: bool| negotiate::go_type_name(info, list);
    let review = reviews::Review::of(info);
    let output = negotiate::choose(
        &call.headers,
        op.shape(),
        protobuf,
        call.state.cbor(),
        review.is_none(),
        &go_type,
    )?;
    let (transcoded, body) = cbor_body(call, op, body).await?;
    let call = transcoded.as_ref().unwrap_or(call);
    // `Operation::of` decided every operation on one object from a path with a name.
    let name = target.name.as_deref().unwrap_or_default();
    match op {
        Operation::Get => get::serve(call, name, output).await,
        Operation::GetScale => scale::serve_get(call, name, output).await,
        Operation::List => list::serve(call, output).await,
        Operation::Watch => watch::serve(call, target.name.as_deref(), output).await,
        Operation::Create => match review {
            Some(review) => reviews::serve(call, review, body, output).await,
            None => create::serve(call, body, output, warnings).await,
        },
        Operation::Update(scope) => update::serve(call, name, scope, body, output, warnings).await,
        Operation::UpdateScale => scale::serve_update(call, name, body, output, warnings).await,
        Operation::Patch(scope) => patch::serve(call, name, scope, body, output, warnings).await,
        Operation::PatchScale => patch::serve_scale(call, name, body, output, warnings).await,
        Operation::Delete => delete::serve(call, name, body, output).await,
        Operation::DeleteCollection => delete::serve_collection(call, body, output).await,
        Operation::Finalize => namespace_lifecycle::serve_finalize(call, name, body, output).await,
        Operation::CreateToken => token_request::serve(call, name, body, output, warnings).await,
        Operation::Bind => binding::serve(call, target.name.as_deref(), body, output).await,
        Operation::Evict => eviction::serve(call, name, body, output).await,
        // Served before the answer's format is negotiated: its answers are the backend's.
        Operation::Connect(_) => Err(ApiError::no_route()),
    }
}
