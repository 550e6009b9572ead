//! The resource dispatcher: every path the descriptive routes do not match comes here. The path
//! is resolved against the catalog (`http::path`, subresources included), the request's
//! [`Operation`] is decided once from its method, path and query, measured for
//! `state::metrics`, and handled by its module under `handlers`; creates, updates, patches and
//! finalizes share one extractor for their body and options ([`write_request`]).
//!
//! May import anything in the server: nothing imports the dispatcher but `serve`'s router.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use crate::Verb;
use crate::meta::{ListOptions, Status};

use crate::server::background::gc;
use crate::server::describe::deprecation;
use crate::server::handlers::{
    create, delete, list, namespace_lifecycle, object, patch, scale, update, watch,
};
use crate::server::http::dry_run;
use crate::server::http::error::{ApiError, MAX_BODY_BYTES};
use crate::server::http::negotiate::{self, RequestShape};
use crate::server::http::path::{self, Subresource};
use crate::server::objects::{json, selector};
use crate::server::state::{State, metrics};
use crate::server::{Call, Streamed, Tunables};

/// Which operation a request performs, decided once from its method, path and query
/// ([`Operation::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
    /// PUT of a namespace's `finalize` subresource.
    Finalize,
}

impl Operation {
    fn verb(self) -> Verb {
        match self {
            Self::Get => Verb::Get,
            Self::List => Verb::List,
            Self::Watch => Verb::Watch,
            Self::Create => Verb::Create,
            Self::Update | Self::Finalize => Verb::Update,
            Self::Patch => Verb::Patch,
            Self::Delete => Verb::Delete,
            Self::DeleteCollection => Verb::DeleteCollection,
        }
    }

    /// The operation `method` performs on the call's target, or upstream's 405 when the
    /// target does not take that method.
    fn of(call: &Call, method: &Method) -> Result<Self, ApiError> {
        let info = call.info();
        let target = &call.target;
        let collection_in_scope = !info.is_namespaced() || target.namespace.is_some();
        Ok(match (method, &target.name, target.sub) {
            (&Method::PUT, Some(_), Some(Subresource::Finalize)) => Self::Finalize,
            (_, _, Some(Subresource::Finalize)) => return Err(Self::not_allowed(call, method)),
            (&Method::GET, None, None) => {
                if is_watch(call)? {
                    Self::Watch
                } else {
                    Self::List
                }
            }
            (&Method::GET, Some(_), _) => {
                if target.sub.is_none() && is_watch(call)? {
                    Self::Watch
                } else {
                    Self::Get
                }
            }
            (&Method::POST, None, None) if collection_in_scope => Self::Create,
            (&Method::PUT, Some(_), _) => Self::Update,
            (&Method::PATCH, Some(_), _) => Self::Patch,
            (&Method::DELETE, Some(_), None) => Self::Delete,
            (&Method::DELETE, None, None) if collection_in_scope => Self::DeleteCollection,
            _ => return Err(Self::not_allowed(call, method)),
        })
    }

    fn not_allowed(call: &Call, method: &Method) -> ApiError {
        let action = match *method {
            Method::PATCH => "patch".to_owned(),
            ref m => m.as_str().to_ascii_lowercase(),
        };
        ApiError::method_not_allowed(call.target.group(), call.target.plural(), &action)
    }
}

/// The query options of a write: each names its dry-run and field-validation options.
trait WriteQuery: DeserializeOwned {
    /// The options' kind, as errors about them name it.
    const KIND: &'static str;
    fn dry_run(&self) -> &[String];
    fn field_validation(&self) -> Option<&crate::meta::FieldValidation>;
}

macro_rules! write_query {
    ($($options:ident),*) => {$(
        impl WriteQuery for crate::meta::$options {
            const KIND: &'static str = stringify!($options);
            fn dry_run(&self) -> &[String] {
                &self.dry_run
            }
            fn field_validation(&self) -> Option<&crate::meta::FieldValidation> {
                self.field_validation.as_ref()
            }
        }
    )*};
}

write_query!(CreateOptions, UpdateOptions, PatchOptions);

/// The steps every create, update, patch and finalize shares before its handler: the body,
/// read whole, then the typed query options and the write options (dry run, field
/// validation) they give.
async fn write_request<O: WriteQuery>(
    call: &Call,
    body: Body,
) -> Result<(bytes::Bytes, dry_run::WriteOptions), ApiError> {
    let body = read_body(call, body).await?;
    let options: O = call.query()?;
    let write = dry_run::write_options(O::KIND, options.dry_run(), options.field_validation())?;
    Ok((body, write))
}

/// Serves every resource URL: routing, verb checks, deprecation warnings, then the handler.
pub(crate) async fn dispatch(state: State, tun: Arc<Tunables>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let metrics = Arc::clone(&state.metrics);
    let registry = state.registry();
    let target = match path::resolve(&registry, parts.uri.path()) {
        Ok(target) => target,
        Err(e) => return e.into_response(),
    };
    let info = &*target.kind.info;
    if !deprecation::is_served(info, state.kube_version) {
        return ApiError::no_route().into_response();
    }
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
    let call = Call {
        state,
        registry,
        tun,
        target,
        headers: parts.headers,
        uri: parts.uri,
    };
    // Warnings found while serving (unknown fields) go out with any answer, as upstream's.
    let mut warnings = Vec::new();
    let mut response = match handle(&call, &parts.method, body, &mut warnings).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    };
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

fn is_watch(call: &Call) -> Result<bool, ApiError> {
    if call.target.legacy_watch {
        return Ok(true);
    }
    let options: ListOptions = call.query()?;
    Ok(options.watch == Some(true))
}

/// The request body, whole: at most [`MAX_BODY_BYTES`], within the body timeout (a client that
/// sends half a body and stops holds nothing for longer).
async fn read_body(call: &Call, body: Body) -> Result<bytes::Bytes, ApiError> {
    tokio::time::timeout(call.tun.body_timeout, read_whole_body(body, &call.headers))
        .await
        .map_err(|_| ApiError::timeout("request did not complete within the allotted timeout"))?
}

async fn read_whole_body(body: Body, headers: &HeaderMap) -> Result<bytes::Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES) {
        return Err(ApiError::body_too_large());
    }
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            // `to_bytes` reports the limit as a length-limit error in its source chain.
            let text = format!("{e:?}");
            if text.contains("LengthLimit") {
                ApiError::body_too_large()
            } else {
                ApiError::bad_request(format!("unable to read the request body: {e}"))
            }
        })
}

async fn handle(
    call: &Call,
    method: &Method,
    body: Body,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let info = call.info();
    let target = &call.target;
    let name = target.name.clone();
    let op = Operation::of(call, method)?;
    if !info.verbs.contains(&op.verb()) {
        return Err(ApiError::method_not_allowed(
            target.group(),
            target.plural(),
            op.verb().as_str(),
        ));
    }
    let shape = match op {
        Operation::List | Operation::DeleteCollection => RequestShape::List,
        Operation::Watch => RequestShape::Watch,
        _ => RequestShape::Single,
    };
    let output = negotiate::choose(&call.headers, shape)?;
    let reply = |code: StatusCode, value: serde_json::Value| -> Result<Response, ApiError> {
        Ok(negotiate::encode(output.format, code, &value))
    };
    match op {
        Operation::Get => {
            let name = name.unwrap_or_default();
            let options: crate::meta::GetOptions = call.query()?;
            let object = object::get(call, &name, options.resource_version.as_deref()).await?;
            let value = match target.sub {
                Some(Subresource::Scale) => scale::scale_of(call, &object)?,
                _ => list::render_object(call, output, object)?,
            };
            reply(StatusCode::OK, value)
        }
        Operation::List => {
            let options: ListOptions = call.query()?;
            list::validate(&options, false)?;
            let selectors = selectors(call, &options, None)?;
            list::respond(call, &options, &selectors, output).await
        }
        Operation::Watch => {
            let options: ListOptions = call.query()?;
            list::validate(&options, true)?;
            let selectors = selectors(call, &options, name.as_deref())?;
            let mut response = watch::watch(call.clone(), options, selectors, output).await?;
            response.extensions_mut().insert(Streamed);
            Ok(response)
        }
        Operation::Create => {
            let (body, write) = write_request::<crate::meta::CreateOptions>(call, body).await?;
            let (code, object) = create::create(call, &body, write, warnings).await?;
            reply(code, list::render_object(call, output, object)?)
        }
        Operation::Update => {
            let name = name.unwrap_or_default();
            let (body, write) = write_request::<crate::meta::UpdateOptions>(call, body).await?;
            let value = match target.sub {
                Some(Subresource::Scale) => {
                    scale::update_scale(call, &name, &body, write, warnings).await?
                }
                sub => {
                    let scope = match sub {
                        Some(Subresource::Status) => update::UpdateScope::Status,
                        _ => update::UpdateScope::Main,
                    };
                    let object = update::update(call, &name, &body, scope, write, warnings).await?;
                    list::render_object(call, output, object)?
                }
            };
            reply(StatusCode::OK, value)
        }
        Operation::Patch => {
            let name = name.unwrap_or_default();
            let patch_type = patch::patch_type(call)?;
            let (body, write) = write_request::<crate::meta::PatchOptions>(call, body).await?;
            let value = match target.sub {
                Some(Subresource::Scale) => {
                    patch::patch_scale(call, &name, patch_type, &body, write, warnings).await?
                }
                sub => {
                    let scope = match sub {
                        Some(Subresource::Status) => update::UpdateScope::Status,
                        _ => update::UpdateScope::Main,
                    };
                    let (code, object) =
                        patch::patch(call, &name, patch_type, &body, scope, write, warnings)
                            .await?;
                    return reply(code, list::render_object(call, output, object)?);
                }
            };
            reply(StatusCode::OK, value)
        }
        Operation::Delete => {
            let name = name.unwrap_or_default();
            let body = read_body(call, body).await?;
            let options = delete::delete_options(call, &body)?;
            gc::validate_options(&options)?;
            match delete::delete(call, &name, &options).await? {
                delete::Deletion::Pending(object) => {
                    // Upstream answers 202 only to a client that asked for cascading with the
                    // deprecated `orphanDependents: false`, for compatibility.
                    let code = if options.orphan_dependents == Some(false) {
                        StatusCode::ACCEPTED
                    } else {
                        StatusCode::OK
                    };
                    reply(code, list::render_object(call, output, object)?)
                }
                delete::Deletion::Gone(object) if !delete::delete_returns_status(info) => {
                    reply(StatusCode::OK, list::render_object(call, output, object)?)
                }
                delete::Deletion::Gone(object) => {
                    let mut status = Status::success();
                    status.details = Some(crate::meta::StatusDetails {
                        name: Some(name.clone()),
                        group: (!info.gvk.group.is_empty()).then(|| info.gvk.group.to_string()),
                        kind: Some(info.plural.to_string()),
                        uid: json::meta_str(&object, "uid").map(str::to_owned),
                        ..Default::default()
                    });
                    reply(
                        StatusCode::OK,
                        serde_json::to_value(status).map_err(ApiError::internal)?,
                    )
                }
            }
        }
        Operation::Finalize => {
            let name = name.unwrap_or_default();
            let (body, write) = write_request::<crate::meta::UpdateOptions>(call, body).await?;
            let object = namespace_lifecycle::finalize_namespace(call, &name, &body, write).await?;
            reply(StatusCode::OK, list::render_object(call, output, object)?)
        }
        Operation::DeleteCollection => {
            let body = read_body(call, body).await?;
            let delete = delete::delete_options(call, &body)?;
            gc::validate_options(&delete)?;
            let options: ListOptions = call.query()?;
            let selectors = selectors(call, &options, None)?;
            let value = delete::delete_collection(call, &options, &selectors, &delete).await?;
            reply(StatusCode::OK, value)
        }
    }
}

/// Parses the selectors of a list or watch; a watch on one object adds a name selector.
fn selectors(
    call: &Call,
    options: &ListOptions,
    name: Option<&str>,
) -> Result<selector::Selectors, ApiError> {
    let field = match (options.field_selector.as_deref(), name) {
        (Some(f), Some(n)) if !f.is_empty() => Some(format!("{f},metadata.name={n}")),
        (_, Some(n)) => Some(format!("metadata.name={n}")),
        (f, None) => f.map(str::to_owned),
    };
    selector::Selectors::parse(
        call.info(),
        options.label_selector.as_deref(),
        field.as_deref(),
    )
    .map_err(ApiError::bad_request)
}
