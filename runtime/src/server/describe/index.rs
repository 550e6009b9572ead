//! `/` and `/index.html`: the paths the server serves, as upstream's index handler lists them
//! (`routes.Index` in k8s.io/apiserver `pkg/server/routes/index.go`): a `RootPaths` object,
//! `{"paths": [...]}`, sorted, indented by two spaces as `responsewriters.WriteRawJSON`
//! writes it, whatever the method and `Accept` (the handler looks at neither). The list is
//! the one upstream's muxes keep of their listed paths: the discovery documents of every
//! served group and version, the probes and each of their checks, `/metrics`, the OpenAPI
//! documents, `/version` and, when served, the service-account issuer's documents.

use std::collections::BTreeSet;

use axum::Router;
use axum::extract::State as Extract;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::json;

use crate::server::describe::discovery::Served;
use crate::server::describe::{health, issuer_discovery, openapi};
use crate::server::state::State;

/// The paths `state` serves, sorted as Go's `sort.Strings` sorts them (by bytes).
fn listed_paths(state: &State) -> BTreeSet<String> {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    let mut paths: BTreeSet<String> = ["/api", "/apis", "/apis/", "/metrics", "/version"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    for (group, version, _) in served.group_versions() {
        if group.is_empty() {
            paths.insert(format!("/api/{version}"));
        } else {
            paths.insert(format!("/apis/{group}"));
            paths.insert(format!("/apis/{group}/{version}"));
        }
    }
    paths.extend(health::listed_paths());
    paths.extend(openapi::listed_paths(state).iter().map(|p| (*p).to_owned()));
    paths.extend(
        issuer_discovery::listed_paths(state)
            .iter()
            .map(|p| (*p).to_owned()),
    );
    paths
}

async fn index(Extract(state): Extract<State>) -> Response {
    let paths: Vec<String> = listed_paths(&state).into_iter().collect();
    let body = serde_json::to_vec_pretty(&json!({ "paths": paths })).unwrap_or_default();
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// `/` and `/index.html`, for any method.
pub(crate) fn routes() -> Router<State> {
    Router::new()
        .route("/", any(index))
        .route("/index.html", any(index))
}
