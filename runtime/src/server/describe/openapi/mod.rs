//! OpenAPI documents built from the registry: `/openapi/v2` (Swagger 2.0), the `/openapi/v3`
//! index, and one `/openapi/v3/<api|apis>/<group>/<version>` document per served group/version.
//!
//! Every served kind gets a schema named like upstream's (`io.k8s.api.<group>.<version>.<Kind>`
//! for Kubernetes groups, the reversed group for others, e.g. `dev.kapi.widgets.v1.Widget`),
//! tagged `x-kubernetes-group-version-kind`, plus its `<Kind>List`. The schema is the one the
//! kind was registered with ([`Registry::register_with_schema`](crate::Registry) or
//! `register_custom`); else the registry's definition tagged with the kind's GVK (generated
//! crates hand theirs over in `register`, see [`Registry::add_definitions`](crate::Registry)),
//! published under its own name with every definition it refers to; else a permissive object
//! schema (`x-kubernetes-preserve-unknown-fields`) so clients still find and accept the kind.
//!
//! Paths carry the operations kube-apiserver publishes (list, create, deletecollection, get,
//! replace, patch, delete, and the `status`/`scale` subresources), each with
//! `x-kubernetes-action` and `x-kubernetes-group-version-kind`, because that is how kubectl
//! finds a kind: `kubectl apply` checks the PATCH operation for the `fieldValidation` parameter
//! to choose server-side validation, and `kubectl explain` looks the schema up by its GVK. The
//! PATCH request bodies list JSON patch, merge patch and apply patch but not strategic merge
//! patch, so kubectl computes patches the way it does without OpenAPI (strategic merge for
//! kinds it knows, merge patch otherwise).
//!
//! The v3 index names each document with `?hash=<content hash>`; a request with the current
//! hash is cacheable forever, one with a stale hash is redirected (301) to the current one, and
//! `ETag`/`If-None-Match` work on every document. Releases before OpenAPIV3 (1.20) have no v3:
//! its paths answer as paths nothing serves. The v3 documents are JSON only (a client
//! accepting nothing else gets 406); `/openapi/v2` is also served in protobuf, the form
//! client-go asks for, as each release's kube-openapi serves it (`v2`, `protobuf`).
//!
//! The documents are assembled here from `schemas` (the kinds' and the shared meta schemas)
//! and `paths` (the kinds' operations), and served with their hashes and ETags.
//!
//! May import: what `describe` may; `schemas` imports neither this module nor `paths`, and
//! `paths` only `schemas`; `protobuf` none of them; `v2` this module and `protobuf`.

mod paths;
mod protobuf;
mod schemas;
mod v2;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, State as Extract};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Map, Value, json};

use crate::meta::Status;
use crate::registry::RegisteredKind;
use crate::server::describe::discovery::{
    Served, content_hash, json_response, not_found, page_not_found, status_response,
};
use crate::server::describe::health::percent_decode;
use crate::server::describe::version;
use crate::server::state::release::{Feature, FeatureState};
use crate::server::state::{ServerState, State};
use crate::{KubeVersion, Registry, ResourceInfo};

use paths::kind_paths;
use schemas::{Dialect, add_kind_schemas, meta_schemas, to_v2_schema, to_v3_schema};

/// The schemas (by name) and paths of the given kinds.
fn build(
    registry: &Registry,
    kinds: &[&RegisteredKind],
    dialect: Dialect,
) -> (Map<String, Value>, Map<String, Value>) {
    let mut schemas: BTreeMap<String, Value> = meta_schemas().into_iter().collect();
    let mut paths = Map::new();
    for kind in kinds {
        let names = add_kind_schemas(registry, kind, dialect, &mut schemas);
        kind_paths(&kind.info, &names, dialect, &mut paths);
    }
    let mut schemas: Map<String, Value> = schemas.into_iter().collect();
    let publish = match dialect {
        Dialect::V2 => to_v2_schema,
        Dialect::V3 => to_v3_schema,
    };
    schemas.values_mut().for_each(publish);
    let mut sorted: Vec<(String, Value)> = paths.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    (schemas, sorted.into_iter().collect())
}

/// The document's `info`: upstream's title and the server's `gitVersion`.
fn info_block(at: KubeVersion) -> Value {
    json!({"title": "Kubernetes", "version": version::git_version(at)})
}

/// The query parameters of features the release does not have yet, which its documents do not
/// list. Without `fieldValidation` (1.20), kubectl validates manifests on the client side
/// against `/openapi/v2` in protobuf, as it does against upstream's 1.20, instead of leaving it
/// to the server (`NewParamVerifyingSchema` in kubectl's `pkg/cmd/util/factory_client_access.go`).
fn absent_params(state: &ServerState) -> Vec<&'static str> {
    let mut absent = Vec::new();
    if state.feature(Feature::WatchList) == FeatureState::Absent {
        absent.push("sendInitialEvents");
    }
    if state.feature(Feature::ServerSideFieldValidation) == FeatureState::Absent {
        absent.push("fieldValidation");
    }
    absent
}

/// Removes the parameters named `absent` from every operation of `paths`.
fn strip_params(paths: &mut Map<String, Value>, absent: &[&str]) {
    if absent.is_empty() {
        return;
    }
    let named = |param: &Value| {
        param
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| absent.contains(&name))
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for operation in item.values_mut() {
            let params = match operation {
                Value::Array(params) => Some(params),
                Value::Object(op) => op.get_mut("parameters").and_then(Value::as_array_mut),
                _ => None,
            };
            if let Some(params) = params {
                params.retain(|param| !named(param));
            }
        }
    }
}

/// The registered kinds served at `at` in one group/version.
fn served_kinds<'a>(
    registry: &'a Registry,
    served: &Served<'_>,
    group: &str,
    version: &str,
) -> Option<Vec<&'a RegisteredKind>> {
    let infos = served.kinds(group, version)?;
    Some(
        registry
            .kinds()
            .filter(|kind| infos.iter().any(|info| std::ptr::eq(*info, &*kind.info)))
            .collect(),
    )
}

/// The Swagger 2.0 document of every served kind.
pub(crate) fn v2_document(registry: &Registry, state: &ServerState) -> Value {
    let at = state.kube_version;
    let served = Served::new(registry, |info| state.serves(info));
    let infos: Vec<&ResourceInfo> = served
        .group_versions()
        .flat_map(|(_, _, kinds)| kinds.iter().copied())
        .collect();
    let kinds: Vec<&RegisteredKind> = registry
        .kinds()
        .filter(|kind| infos.iter().any(|info| std::ptr::eq(*info, &*kind.info)))
        .collect();
    let (definitions, mut paths) = build(registry, &kinds, Dialect::V2);
    strip_params(&mut paths, &absent_params(state));
    json!({
        "swagger": "2.0",
        "info": info_block(at),
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}
        },
        "security": [{"BearerToken": []}]
    })
}

/// The OpenAPI v3 document of one served group/version, or `None` when it is not served.
pub(crate) fn v3_document(
    registry: &Registry,
    state: &ServerState,
    group: &str,
    version: &str,
) -> Option<Value> {
    let at = state.kube_version;
    let served = Served::new(registry, |info| state.serves(info));
    let kinds = served_kinds(registry, &served, group, version)?;
    let (schemas, mut paths) = build(registry, &kinds, Dialect::V3);
    strip_params(&mut paths, &absent_params(state));
    Some(json!({
        "openapi": "3.0.0",
        "info": info_block(at),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}
            }
        }
    }))
}

/// The `/openapi/v3` path of a group/version: `api/v1` or `apis/<group>/<version>`.
fn v3_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The `/openapi/v3` index.
pub(crate) fn v3_index(registry: &Registry, state: &ServerState) -> Value {
    let served = Served::new(registry, |info| state.serves(info));
    let mut paths = Map::new();
    for (group, version, _) in served.group_versions() {
        let Some(doc) = v3_document(registry, state, group, version) else {
            continue;
        };
        let bytes = serde_json::to_vec(&doc).unwrap_or_default();
        let path = v3_path(group, version);
        let url = format!("/openapi/v3/{path}?hash={}", content_hash(&bytes));
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    let mut sorted: Vec<(String, Value)> = paths.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    json!({"paths": sorted.into_iter().collect::<Map<String, Value>>()})
}

/// Whether the client takes JSON.
fn accepts_json(headers: &HeaderMap) -> bool {
    let values: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if values.iter().all(|v| v.trim().is_empty()) {
        return true;
    }
    values.iter().flat_map(|v| v.split(',')).any(|range| {
        let mut parts = range.split(';');
        let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let refused = parts.any(|p| {
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim() == "q" && v.trim().parse::<f32>().unwrap_or(0.0) <= 0.0
            })
        });
        !refused
            && matches!(
                essence.as_str(),
                "application/json" | "application/*" | "*/*"
            )
    })
}

fn not_acceptable() -> Response {
    status_response(&Status::not_acceptable(&["application/json"]))
}

/// A document answer with its ETag, or 304 when the client already has it.
fn document_response(headers: &HeaderMap, body: &Value) -> (Response, String) {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let hash = content_hash(&bytes);
    let etag = format!("\"{hash}\"");
    let matches = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == etag || tag.trim() == "*");
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response()
    };
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    (response, hash)
}

/// The documents' paths as upstream lists them in the index of `/` (`/openapi/v3/` is the
/// prefix its mux records for the group-version documents).
pub(crate) fn listed_paths(state: &State) -> &'static [&'static str] {
    if state.feature(Feature::OpenApiV3).is_on() {
        &["/openapi/v2", "/openapi/v3", "/openapi/v3/"]
    } else {
        &["/openapi/v2"]
    }
}

async fn openapi_v3_index(Extract(state): Extract<State>, headers: HeaderMap) -> Response {
    if !state.feature(Feature::OpenApiV3).is_on() {
        return page_not_found();
    }
    if !accepts_json(&headers) {
        return not_acceptable();
    }
    json_response(StatusCode::OK, &v3_index(&state.registry(), &state))
}

async fn openapi_v3_group_version(
    Extract(state): Extract<State>,
    Path(path): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    if !state.feature(Feature::OpenApiV3).is_on() {
        return page_not_found();
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version) = match segments.as_slice() {
        ["api", version] => ("", *version),
        ["apis", group, version] if !group.is_empty() => (*group, *version),
        _ => return not_found(),
    };
    let Some(doc) = v3_document(&state.registry(), &state, group, version) else {
        return not_found();
    };
    if !accepts_json(&headers) {
        return not_acceptable();
    }
    let requested_hash = raw.as_deref().and_then(|raw| {
        raw.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == "hash")
            .map(|(_, value)| percent_decode(value))
    });
    let (mut response, hash) = document_response(&headers, &doc);
    match requested_hash {
        Some(requested) if requested != hash => {
            let location = format!("/openapi/v3/{}?hash={hash}", v3_path(group, version));
            let mut redirect = StatusCode::MOVED_PERMANENTLY.into_response();
            if let Ok(value) = HeaderValue::from_str(&location) {
                redirect.headers_mut().insert(header::LOCATION, value);
            }
            redirect
        }
        Some(_) => {
            response.headers_mut().insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            response
        }
        None => response,
    }
}

/// `/openapi/v2`, `/openapi/v3` and `/openapi/v3/<path>`.
pub(crate) fn routes() -> Router<State> {
    let cache = Arc::new(v2::Cache::default());
    let openapi_v2 = move |Extract(state): Extract<State>, headers: HeaderMap| {
        let cache = Arc::clone(&cache);
        async move { v2::answer(&state, &cache, &headers) }
    };
    Router::new()
        .route("/openapi/v2", get(openapi_v2))
        .route("/openapi/v3", get(openapi_v3_index))
        .route("/openapi/v3/", get(openapi_v3_index))
        .route("/openapi/v3/{*path}", get(openapi_v3_group_version))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::server::Server;
    use crate::storage::{EmbeddedOptions, EmbeddedStorage};

    /// The Swagger 2.0 documents of a server with the crate's own kinds (Namespace and
    /// CustomResourceDefinition) at each release kapi speaks as.
    pub(crate) fn v2_documents() -> Vec<Value> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut docs = Vec::new();
            for minor in [20, 28, 34, 36] {
                let dir = tempfile::tempdir().unwrap();
                let storage = EmbeddedStorage::open(dir.path(), EmbeddedOptions::default())
                    .await
                    .unwrap();
                let (_, background, state) = Server::builder()
                    .storage(Arc::new(storage))
                    .kube_version(KubeVersion::new(1, minor))
                    .build(None)
                    .await
                    .unwrap();
                docs.push(v2_document(&state.registry(), &state));
                background.stop();
            }
            docs
        })
    }

    /// 1.20 predates server-side field validation: its documents do not offer
    /// `fieldValidation`, so kubectl validates on the client side, as against upstream's 1.20.
    #[test]
    fn field_validation_is_offered_from_1_25_on() {
        let docs = v2_documents();
        let offers = |doc: &Value| {
            serde_json::to_string(doc)
                .unwrap()
                .contains("\"fieldValidation\"")
        };
        assert!(!offers(&docs[0]));
        assert!(docs[1..].iter().all(offers));
    }

    #[test]
    fn accept_json() {
        let mut headers = HeaderMap::new();
        assert!(accepts_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
        );
        assert!(!accepts_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, */*"),
        );
        assert!(accepts_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;q=0"),
        );
        assert!(!accepts_json(&headers));
    }
}
