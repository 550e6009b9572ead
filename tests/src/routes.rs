//! Every kind of route a client can reach, with who may reach it under upstream's bootstrap
//! policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`): the table the access
//! walks (over plain HTTP with tokens in `access.rs`, over TLS with client certificates in
//! `tls.rs`) send as strangers, as a user without roles and as a cluster admin.

use serde_json::{Value, json};

/// Who may reach a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Health and version: everyone, anonymous included (`system:public-info-viewer`: exactly
    /// `/healthz`, `/livez`, `/readyz`, `/version` and `/version/`).
    Everyone,
    /// Discovery and OpenAPI: authenticated users (`system:discovery`: `/api`, `/api/*`,
    /// `/apis`, `/apis/*`, `/openapi`, `/openapi/*`).
    Authenticated,
    /// The self-reviews: authenticated users (`system:basic-user`); answered 201.
    SelfReview,
    /// Everything else: only users with roles.
    Privileged,
}

/// One request of the walk.
#[derive(Debug, Clone)]
pub struct Route {
    /// The HTTP method.
    pub method: &'static str,
    /// Path and query.
    pub path: &'static str,
    /// The JSON body, if any.
    pub body: Option<Value>,
    /// Who may reach it.
    pub open: Open,
}

const fn route(method: &'static str, path: &'static str, open: Open) -> Route {
    Route {
        method,
        path,
        body: None,
        open,
    }
}

fn with_body(method: &'static str, path: &'static str, body: Value, open: Open) -> Route {
    Route {
        method,
        path,
        body: Some(body),
        open,
    }
}

/// Every route kind: health, version, discovery, OpenAPI, metrics, the root listing, paths
/// nothing serves, service-account issuer discovery, resources (collection and object, every
/// verb, the legacy watch path, across namespaces), subresources (status, scale, eviction,
/// token, binding, log, the connect ones: exec, attach, port-forward, proxy), the review kinds
/// and custom resource definitions.
pub fn every_route_kind() -> Vec<Route> {
    use Open::{Authenticated, Everyone, Privileged, SelfReview};
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "walk"}});
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}});
    let ssrr = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "default"}});
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods"}}});
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": "not-a-token"}});
    let whoami = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "web", "namespace": "default"}});
    let token = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": ["walk"]}});
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
        "target": {"kind": "Node", "name": "node-1"}});
    vec![
        route("GET", "/healthz", Everyone),
        route("GET", "/livez", Everyone),
        route("GET", "/readyz", Everyone),
        route("GET", "/version", Everyone),
        route("GET", "/version/", Everyone),
        // Only the bare health paths are public; their checks are `system:monitoring`'s.
        route("GET", "/livez/ping", Privileged),
        route("GET", "/readyz/verbose", Privileged),
        route("GET", "/metrics", Privileged),
        route("GET", "/", Privileged),
        route("GET", "/no/such/path", Privileged),
        route("GET", "/.well-known/openid-configuration", Privileged),
        route("GET", "/openid/v1/jwks", Privileged),
        route("GET", "/api", Authenticated),
        route("GET", "/api/v1", Authenticated),
        route("GET", "/apis", Authenticated),
        route("GET", "/apis/apps", Authenticated),
        route("GET", "/apis/apps/v1", Authenticated),
        route("GET", "/apis/no.such.group", Authenticated),
        route("GET", "/openapi/v2", Authenticated),
        route("GET", "/openapi/v3", Authenticated),
        route("GET", "/openapi/v3/apis/apps/v1", Authenticated),
        route("GET", "/api/v1/namespaces", Privileged),
        route("GET", "/api/v1/namespaces/default", Privileged),
        route("GET", "/api/v1/namespaces/default/configmaps", Privileged),
        route("GET", "/api/v1/configmaps", Privileged),
        route(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
            Privileged,
        ),
        route(
            "GET",
            "/api/v1/watch/namespaces/default/configmaps?timeoutSeconds=1",
            Privileged,
        ),
        with_body(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            cm.clone(),
            Privileged,
        ),
        with_body(
            "PUT",
            "/api/v1/namespaces/default/configmaps/walk",
            cm,
            Privileged,
        ),
        with_body(
            "PATCH",
            "/api/v1/namespaces/default/configmaps/walk",
            json!({}),
            Privileged,
        ),
        route(
            "DELETE",
            "/api/v1/namespaces/default/configmaps/walk",
            Privileged,
        ),
        route(
            "DELETE",
            "/api/v1/namespaces/default/configmaps",
            Privileged,
        ),
        route(
            "GET",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            Privileged,
        ),
        with_body(
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            json!({"spec": {"replicas": 2}}),
            Privileged,
        ),
        route(
            "GET",
            "/api/v1/namespaces/default/pods/web/status",
            Privileged,
        ),
        with_body(
            "POST",
            "/api/v1/namespaces/default/pods/web/eviction",
            eviction,
            Privileged,
        ),
        with_body(
            "POST",
            "/api/v1/namespaces/default/pods/web/binding",
            binding,
            Privileged,
        ),
        with_body(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/default/token",
            token,
            Privileged,
        ),
        route("GET", "/api/v1/namespaces/default/pods/web/log", Privileged),
        route(
            "GET",
            "/api/v1/namespaces/default/pods/web/exec?command=true",
            Privileged,
        ),
        route(
            "POST",
            "/api/v1/namespaces/default/pods/web/attach?stdout=true",
            Privileged,
        ),
        route(
            "POST",
            "/api/v1/namespaces/default/pods/web/portforward?ports=80",
            Privileged,
        ),
        route(
            "GET",
            "/api/v1/namespaces/default/services/web/proxy/",
            Privileged,
        ),
        route("GET", "/api/v1/nodes/node-1/proxy/", Privileged),
        route(
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Privileged,
        ),
        with_body(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            ssar,
            SelfReview,
        ),
        with_body(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            ssrr,
            SelfReview,
        ),
        with_body(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            whoami,
            SelfReview,
        ),
        with_body(
            "POST",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            sar,
            Privileged,
        ),
        with_body(
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            review,
            Privileged,
        ),
    ]
}
