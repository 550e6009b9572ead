//! Who sends each request and what they may do: authentication (`authn`: X.509 client
//! certificates the TLS layer verified, bearer tokens from a token file, anonymous requests),
//! impersonation (`impersonation`), and authorization (`authz`: `system:masters`, then the
//! configured modes, among them RBAC over the stored roles and bindings, `rbac`, and the Node
//! authorizer, `node`, over a graph the state keeps), each
//! decided on a request's `attributes` as upstream's filters decide them, in upstream's
//! order: authentication, impersonation, authorization. The user a request is served as goes
//! into its extensions ([`Requestor`]) for the handlers that answer about it (the review
//! kinds).
//!
//! Service-account tokens (`service_account`) are authenticated after the token file; their
//! checks read the store, which the guard is given. Tokens past the token file that
//! authenticated are remembered for ten seconds (`token_cache`), as upstream's are.
//!
//! May import: `http` (errors, paths, the TLS layer's client certificates, how a refusal is
//! written as the client asked), `state::keys` (where the objects a service-account token
//! names are stored). Imported by `serve`'s router, `state` (the server's state holds
//! the [`Access`]), `background` (the task that keeps the policy) and the handlers of the review
//! kinds.

pub(crate) mod attributes;
pub(crate) mod authn;
pub(crate) mod authz;
pub(crate) mod bootstrap;
pub(crate) mod impersonation;
pub(crate) mod node;
pub(crate) mod oidc;
pub(crate) mod rbac;
pub(crate) mod service_account;
pub(crate) mod token_cache;
pub(crate) mod user;

use std::sync::{Arc, PoisonError, RwLock};

use axum::extract::Request;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;

use crate::meta::Status;
use crate::storage::Storage;

use crate::server::http::error::ApiError;
use crate::server::http::reencode::Wants;

use attributes::Attributes;
pub use authn::{Authentication, TokenFileError};
use authz::Decision;
pub use authz::{Authorization, AuthorizationMode};
pub use oidc::AuthenticationConfigError;
use rbac::Policy;
pub use service_account::{
    DEFAULT_ISSUER, KeyError, ServiceAccountTokens, SigningKey, VerificationKey,
};
use user::{MASTERS, User};

/// How a server authenticates and authorizes, and the RBAC policy it holds now.
#[derive(Debug, Default)]
pub(crate) struct Access {
    pub(crate) authentication: Authentication,
    pub(crate) authorization: Authorization,
    /// How service-account tokens are issued and authenticated, if they are.
    pub(crate) service_accounts: Option<ServiceAccountTokens>,
    policy: RwLock<Arc<Policy>>,
    /// Tokens past the token file that authenticated lately.
    tokens: token_cache::TokenCache,
}

impl Access {
    pub(crate) fn new(
        authentication: Authentication,
        authorization: Authorization,
        service_accounts: Option<ServiceAccountTokens>,
    ) -> Self {
        Self {
            tokens: token_cache::TokenCache::new(authentication.token_success_ttl()),
            authentication,
            authorization,
            service_accounts,
            policy: RwLock::default(),
        }
    }

    /// The user `request` authenticates as, or `None` for 401: the static authenticators
    /// (`authn`), then service-account tokens, which read `storage`.
    /// The request's user, if it authenticates, and the audit annotations authentication
    /// adds (a stale service-account token's).
    pub(crate) async fn authenticate(
        &self,
        request: &Parts,
        storage: &dyn Storage,
    ) -> (Option<User>, Vec<(String, String)>) {
        let mut annotations = Vec::new();
        let noted = &mut annotations;
        let user = self
            .authentication
            .authenticate(request, |token| async move {
                if let Some(known) = self.tokens.get(&token) {
                    noted.extend(known.annotations);
                    return Some(known.user);
                }
                let found = self.authenticate_token(storage, &token).await?;
                noted.extend(found.annotations.iter().cloned());
                let user = found.user.clone();
                self.tokens.remember(&token, found);
                Some(user)
            })
            .await;
        (user, annotations)
    }

    /// What a bearer token the token file does not know authenticates as: a service-account
    /// token, else a JWT of a configured issuer.
    async fn authenticate_token(
        &self,
        storage: &dyn Storage,
        token: &str,
    ) -> Option<token_cache::Authenticated> {
        let verdict = match &self.service_accounts {
            Some(tokens) => tokens.authenticate(storage, token, None).await,
            None => None,
        };
        match verdict {
            Some(Ok(verified)) => {
                let annotations = verified
                    .stale
                    .map(|stale| (STALE_TOKEN.to_owned(), stale))
                    .into_iter()
                    .collect();
                return Some(token_cache::Authenticated {
                    user: verified.user,
                    annotations,
                });
            }
            // Upstream logs the reason; the client sees only 401.
            Some(Err(error)) => tracing::debug!(%error, "a service-account token was refused"),
            None => {}
        }
        match self.authentication.jwt_user(token).await? {
            Ok(user) => Some(token_cache::Authenticated {
                user,
                annotations: Vec::new(),
            }),
            Err(error) => {
                // Upstream logs why and answers 401.
                tracing::info!(%error, "JWT authentication failed");
                None
            }
        }
    }

    /// The RBAC policy now.
    pub(crate) fn policy(&self) -> Arc<Policy> {
        Arc::clone(&self.policy.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Authorizes with `policy` from now on.
    pub(crate) fn set_policy(&self, policy: Policy) {
        *self.policy.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(policy);
    }

    /// Whether `user` may do `request` now.
    pub(crate) fn decide(&self, user: &User, request: &Attributes) -> Decision {
        self.authorization.decide(&self.policy(), user, request)
    }
}

/// The user a request is served as, in its extensions.
#[derive(Debug, Clone)]
pub(crate) struct Requestor(pub(crate) Arc<User>);

/// The audit annotation of a request made with a stale service-account token.
const STALE_TOKEN: &str = "authentication.k8s.io/stale-token";

/// What authentication and authorization found out about a request, for its audit events:
/// the user it authenticated as and the annotations authentication adds, the user it
/// impersonated, and the decision with its reason.
#[derive(Debug, Clone, Default)]
pub(crate) struct Findings {
    pub(crate) user: Option<User>,
    /// Annotations of the request's audit events (a stale token's).
    pub(crate) annotations: Vec<(String, String)>,
    /// Annotations only events at level `Request` or above carry (upstream's
    /// `AddAnnotationWithLevel`: a mutating webhook's patch).
    pub(crate) request_level_annotations: Vec<(String, String)>,
    pub(crate) impersonated: Option<User>,
    /// Allowed or not, and why.
    pub(crate) decision: Option<(bool, String)>,
}

/// Where the guard writes a request's [`Findings`], when the audit layer asks for them, and
/// whom it tells once the request's user is known.
#[derive(Debug, Clone)]
pub(crate) struct FindingsSlot {
    pub(crate) findings: Arc<std::sync::Mutex<Findings>>,
    pub(crate) authenticated: Arc<dyn Authenticated>,
}

impl FindingsSlot {
    fn note(slot: Option<&Self>, note: impl FnOnce(&mut Findings)) {
        if let Some(slot) = slot {
            note(&mut slot.findings.lock().unwrap_or_else(PoisonError::into_inner));
        }
    }
}

/// Told by the guard once a request has authenticated, before it is impersonated, authorized
/// and served: where upstream's audit filter sits, which writes the request's RequestReceived
/// event there.
pub(crate) trait Authenticated: Send + Sync + std::fmt::Debug {
    /// Resolves to whether the request may go on (false: its event could not be stored and
    /// the audit says the request must fail then).
    fn authenticated(&self, findings: Findings) -> BoxFuture<'static, bool>;
}

/// Marks a request made by the server's own process ([`crate::server::RunningServer::call`]),
/// served as the unsecured superuser: no client can set a request's extensions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InProcess;

/// The most of a refused request's body read before answering, as `dispatch` does.
const DRAIN_BYTES: usize = 256 << 10;

/// The middleware: authenticates (401), impersonates and authorizes (403) every request, then
/// serves it as its user.
pub(crate) async fn guard(
    access: Arc<Access>,
    storage: Arc<dyn Storage>,
    cbor: bool,
    request: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = request.into_parts();
    // Refusals are written as the client asked, as upstream's `ErrorNegotiated` writes them
    // (YAML for a YAML client, indented for `curl`): they never reach the reencoding layer.
    // Worked out only for a refusal: most requests pass.
    let wants = |parts: &Parts| Wants::of(&parts.uri, &parts.headers, cbor);
    let trusted = parts.extensions.get::<InProcess>().is_some();
    let (authenticated, annotations) = if trusted {
        (Some(User::unsecured()), Vec::new())
    } else {
        access.authenticate(&parts, storage.as_ref()).await
    };
    let slot = parts.extensions.get::<FindingsSlot>().cloned();
    FindingsSlot::note(slot.as_ref(), |f| {
        f.user.clone_from(&authenticated);
        f.annotations = annotations;
    });
    let Some(mut user) = authenticated else {
        // Upstream's `Unauthorized` handler: `NewUnauthorized("Unauthorized")`.
        return refused(
            ApiError::from_status(Status::unauthorized("Unauthorized")),
            body,
            wants(&parts),
        )
        .await;
    };
    if let Some(slot) = &slot {
        let findings = slot
            .findings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if !slot.authenticated.authenticated(findings).await {
            // Upstream's audit filter answers with `responsewriters.InternalError`: plain text.
            let _ = axum::body::to_bytes(body, DRAIN_BYTES).await;
            return internal_error(&parts.uri, "failed to store audit event");
        }
    }
    // As upstream's bearer-token authenticator does, so nothing past this point is tempted to
    // use the credential.
    parts.headers.remove(axum::http::header::AUTHORIZATION);
    let policy = access.policy();
    if impersonation::asked(&parts.headers) {
        user =
            match impersonation::impersonate(&parts.headers, &user, &access.authorization, &policy)
            {
                Ok(impersonated) => {
                    FindingsSlot::note(slot.as_ref(), |f| {
                        f.impersonated = Some(impersonated.clone())
                    });
                    impersonated
                }
                Err(error) => return refused(error, body, wants(&parts)).await,
            };
    }
    // Members of `system:masters` are allowed everything: no attributes to work out.
    if user.in_group(MASTERS) {
        FindingsSlot::note(slot.as_ref(), |f| f.decision = Some((true, String::new())));
    } else {
        let attributes = Attributes::of(&parts.method, &parts.uri);
        match access.authorization.decide(&policy, &user, &attributes) {
            Decision::Allow(reason) => {
                FindingsSlot::note(slot.as_ref(), |f| f.decision = Some((true, reason)));
            }
            Decision::Deny(reason) | Decision::NoOpinion(reason) => {
                FindingsSlot::note(slot.as_ref(), |f| {
                    f.decision = Some((false, reason.clone()))
                });
                let refusal = authz::forbidden(&user, &attributes, &reason);
                return refused(refusal, body, wants(&parts)).await;
            }
        }
    }
    parts.extensions.insert(Requestor(Arc::new(user)));
    next.run(Request::from_parts(parts, body)).await
}

/// Upstream's `responsewriters.InternalError`: a plain-text 500 (Go's `http.Error`: a line)
/// naming the request's URI, its path and query, as a Go-quoted string.
fn internal_error(uri: &axum::http::Uri, error: &str) -> Response {
    let request_uri = uri.path_and_query().map_or("/", |p| p.as_str());
    let text = format!("Internal Server Error: {request_uri:?}: {error}\n");
    let mut response = (axum::http::StatusCode::INTERNAL_SERVER_ERROR, text).into_response();
    let headers = response.headers_mut();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        axum::http::header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    );
    response
}

/// Answers `error` once the request's body, up to [`DRAIN_BYTES`], has been read, so that a
/// client still sending it gets the answer rather than a broken connection.
async fn refused(error: ApiError, body: axum::body::Body, wants: Wants) -> Response {
    let _ = axum::body::to_bytes(body, DRAIN_BYTES).await;
    wants.apply(error.into_response()).await
}
