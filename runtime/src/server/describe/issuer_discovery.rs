//! The service-account issuer's discovery documents, as kube-apiserver serves them
//! (`pkg/serviceaccount/openidmetadata.go`, `pkg/routes/openidmetadata.go`):
//! `/.well-known/openid-configuration` (the issuer, where its keys are, `id_token`, `public`
//! subjects and the keys' algorithms) and `/openid/v1/jwks` (the verification keys as JSON Web
//! Keys), both cacheable for an hour. Served when the server issues tokens and its issuer is an
//! `https` URL; the bootstrap policy lets `system:serviceaccounts` read them
//! (`system:service-account-issuer-discovery`). The keys' address is the server's own, as the
//! request reached it (upstream's default external address).

use axum::Router;
use axum::extract::State as Extract;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::server::auth::ServiceAccountTokens;
use crate::server::http::error::ApiError;
use crate::server::http::routes::get_only;
use crate::server::state::State;

/// Where the configuration and the keys are served.
const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
const JWKS_PATH: &str = "/openid/v1/jwks";

/// Upstream's `Cache-Control` of both documents.
const CACHE_CONTROL: &str = "public, max-age=3600";

/// The issuer's tokens, when the documents are served.
fn served(state: &State) -> Option<&ServiceAccountTokens> {
    state
        .access
        .service_accounts
        .as_ref()
        .filter(|tokens| tokens.issuer.starts_with("https://"))
}

/// The documents' paths, when served, as upstream lists them in the index of `/`.
pub(crate) fn listed_paths(state: &State) -> &'static [&'static str] {
    match served(state) {
        Some(_) => &[CONFIGURATION_PATH, JWKS_PATH],
        None => &[],
    }
}

/// The configuration document for a server reached at `host`.
pub(crate) fn configuration(tokens: &ServiceAccountTokens, host: &str) -> Value {
    let mut algorithms: Vec<&str> = tokens
        .public_keys()
        .iter()
        .map(|key| key.algorithm().name())
        .collect();
    algorithms.sort_unstable();
    algorithms.dedup();
    json!({
        "issuer": tokens.issuer,
        "jwks_uri": tokens
            .jwks_uri
            .clone()
            .unwrap_or_else(|| format!("https://{host}{JWKS_PATH}")),
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": algorithms,
    })
}

/// The key set document.
pub(crate) fn key_set(tokens: &ServiceAccountTokens) -> Value {
    let keys: Vec<Value> = tokens.public_keys().iter().map(|key| key.jwk()).collect();
    json!({"keys": keys})
}

fn document(value: &Value, content_type: &'static str) -> Response {
    let mut response = (StatusCode::OK, value.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    response
}

async fn serve_configuration(Extract(state): Extract<State>, headers: HeaderMap) -> Response {
    let Some(tokens) = served(&state) else {
        return ApiError::no_route().into_response();
    };
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    document(&configuration(tokens, host), "application/json")
}

async fn serve_key_set(Extract(state): Extract<State>) -> Response {
    let Some(tokens) = served(&state) else {
        return ApiError::no_route().into_response();
    };
    document(&key_set(tokens), "application/jwk-set+json")
}

/// The two documents' routes.
pub(crate) fn routes() -> Router<State> {
    Router::new()
        .route(CONFIGURATION_PATH, get_only(get(serve_configuration)))
        .route(JWKS_PATH, get_only(get(serve_key_set)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::auth::SigningKey;

    /// The fields `openidmetadata.go` writes.
    #[test]
    fn documents_are_upstreams() {
        let key = SigningKey::generate().unwrap();
        let tokens = ServiceAccountTokens::new(key.clone());
        let configuration = configuration(&tokens, "127.0.0.1:6443");
        assert_eq!(
            configuration,
            json!({
                "issuer": "https://kubernetes.default.svc.cluster.local",
                "jwks_uri": "https://127.0.0.1:6443/openid/v1/jwks",
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["ES256"],
            })
        );
        let keys = key_set(&tokens);
        assert_eq!(keys["keys"][0]["kid"], key.public_key().key_id());
        assert_eq!(keys["keys"][0]["use"], "sig");
    }
}
