//! Authentication: who sent a request, from its credentials, as kube-apiserver's union of
//! authenticators finds out (`pkg/kubeapiserver/authenticator/config.go`), in its order: an
//! X.509 client certificate the TLS layer verified against the client CAs (its common name is
//! the user, its organizations the groups: `CommonNameUserConversion`), a bearer token from the
//! static token file, a service-account token, a JWT of an issuer `--authentication-config`
//! configures (`oidc`), else, with no credentials at all, the anonymous user when anonymous
//! requests are enabled (by `--anonymous-auth`, or by the configuration file's `anonymous`
//! section, which may limit them to some paths). A request whose credentials no authenticator accepts (a certificate
//! of another CA, an unknown token) is answered 401 even when anonymous requests are enabled,
//! as upstream's `FailOnError` union does.
//!
//! A server built without [`Authentication`] has none: every request is upstream's old
//! insecure-port user (`user::UNSECURED`).

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::http::request::Parts;
use axum::http::{HeaderMap, header};

use crate::server::auth::oidc::{AnonymousConfig, AuthenticationConfigError, LiveJwt, Sources};
use crate::server::auth::token_cache;
use crate::server::auth::user::User;
use crate::server::http::tls::{PeerCertificates, UnverifiedPeerCertificates, certificate_subject};

/// How a server finds out who sends each request: `kube-apiserver`'s `--token-auth-file`,
/// `--authentication-config` and `--anonymous-auth`.
#[derive(Debug, Clone, Default)]
pub struct Authentication {
    /// `false`: no authentication, every request is the unsecured superuser.
    enabled: bool,
    anonymous: Anonymous,
    tokens: Arc<HashMap<String, User>>,
    /// The JWT authenticators of `--authentication-config`.
    jwt: Arc<LiveJwt>,
    /// How long a token past the token file that authenticated is remembered (zero: not).
    token_success_ttl: Duration,
}

/// Who may send requests without credentials.
#[derive(Debug, Clone, Default)]
struct Anonymous {
    allowed: bool,
    /// When not empty, the only paths anonymous requests may reach (exactly these).
    paths: Arc<[String]>,
    /// Whether the configuration file said so, rather than `--anonymous-auth`.
    from_file: bool,
}

/// Why a token file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("reading token file '{path}': {source}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// A line is not CSV.
    #[error("token file '{path}': {source}")]
    Csv {
        /// The file.
        path: String,
        /// Where and why the CSV does not parse.
        #[source]
        source: csv::Error,
    },
    /// A line has fewer than three columns (upstream's words).
    #[error(
        "token file '{path}' must have at least 3 columns (token, user name, user uid), found {found}"
    )]
    Columns {
        /// The file.
        path: String,
        /// How many columns the record has.
        found: usize,
    },
}

impl Authentication {
    /// No authentication (the default of [`crate::server::Server::builder`]): every request is
    /// served as `system:unsecured` in `system:masters`, as kube-apiserver's insecure port
    /// served it. Only for servers that nothing but their own programs can reach.
    pub fn none() -> Self {
        Self::default()
    }

    /// Requests must authenticate; anonymous requests are refused until
    /// [`Authentication::anonymous`] allows them.
    pub fn required() -> Self {
        Self {
            enabled: true,
            token_success_ttl: token_cache::SUCCESS_TTL,
            ..Self::default()
        }
    }

    /// How long a service-account token or JWT that authenticated is remembered, so that it
    /// is not verified again (and its account not read again) on every request: ten seconds
    /// by default, as kube-apiserver's `TokenSuccessCacheTTL`; zero remembers nothing, and a
    /// deleted account's tokens stop working at once.
    pub fn token_success_cache_ttl(mut self, ttl: Duration) -> Self {
        self.token_success_ttl = ttl;
        self
    }

    /// See [`Authentication::token_success_cache_ttl`].
    pub(crate) fn token_success_ttl(&self) -> Duration {
        self.token_success_ttl
    }

    /// Whether requests without credentials are served as `system:anonymous` (group
    /// `system:unauthenticated`), whom the bootstrap policy lets read only health, version
    /// and discovery: kube-apiserver's `--anonymous-auth` (on there by default).
    pub fn anonymous(mut self, allowed: bool) -> Self {
        self.anonymous.allowed = allowed;
        self
    }

    /// Whether the `--authentication-config` file decides anonymous authentication (its
    /// `anonymous` section): `--anonymous-auth` may then not be given, as upstream refuses
    /// both.
    pub fn anonymous_configured_by_file(&self) -> bool {
        self.anonymous.from_file
    }

    /// Accepts the bearer tokens of a static token file: kube-apiserver's `--token-auth-file`,
    /// CSV lines `token,user,uid[,"group1,group2"]`.
    pub fn token_file(self, path: impl AsRef<Path>) -> Result<Self, TokenFileError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read(path).map_err(|source| TokenFileError::Io {
            path: shown.clone(),
            source,
        })?;
        let tokens = parse_token_file(&text, &shown)?;
        let mut all = (*self.tokens).clone();
        all.extend(tokens);
        Ok(Self {
            tokens: Arc::new(all),
            ..self
        })
    }

    /// Accepts the JWTs of the issuers an `AuthenticationConfiguration` file configures, and
    /// takes anonymous authentication from its `anonymous` section when it has one:
    /// kube-apiserver's `--authentication-config`. `disallowed` are the issuers none may
    /// claim, the server's own service-account issuers. `key_files` name, by issuer URL, JSON
    /// Web Key Set files whose keys verify that issuer's tokens, which are then never fetched
    /// from the issuer. The files are read again when they change (the authenticators are
    /// replaced; the `anonymous` section may not change).
    pub fn authentication_config(
        self,
        path: impl AsRef<Path>,
        disallowed: &[String],
        key_files: &BTreeMap<String, PathBuf>,
    ) -> Result<Self, AuthenticationConfigError> {
        let (jwt, anonymous) = LiveJwt::load(Sources {
            path: path.as_ref().to_owned(),
            disallowed: disallowed.to_vec(),
            key_files: key_files.clone(),
        })?;
        let anonymous = match anonymous {
            Some(AnonymousConfig {
                enabled,
                conditions,
            }) => Anonymous {
                allowed: enabled,
                paths: conditions.into_iter().map(|c| c.path).collect(),
                from_file: true,
            },
            None => self.anonymous,
        };
        Ok(Self {
            jwt: Arc::new(jwt),
            anonymous,
            ..self
        })
    }

    /// Accepts bearer `token` as user `name` in `groups` (what one token file line says).
    pub fn token(self, token: &str, name: &str, uid: &str, groups: &[&str]) -> Self {
        let mut all = (*self.tokens).clone();
        let mut user = User::new(name, groups);
        user.uid = uid.to_owned();
        all.insert(token.to_owned(), user);
        Self {
            tokens: Arc::new(all),
            ..self
        }
    }

    /// Whether requests are authenticated at all.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The user a request authenticates as (with `system:authenticated` added), or `None`
    /// for 401. A bearer token the token file does not know goes to `other_tokens`, the
    /// authenticators after it (service-account tokens, then [`Authentication::jwt_user`]).
    pub(crate) async fn authenticate<F, Fut>(
        &self,
        request: &Parts,
        other_tokens: F,
    ) -> Option<User>
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Option<User>>,
    {
        if !self.enabled {
            return Some(User::unsecured());
        }
        if let Some(user) = client_certificate_user(request) {
            return Some(user.with_authenticated_group());
        }
        let token = bearer_token(&request.headers);
        if let Some(token) = token {
            let user = match self.user_of_token(token) {
                Some(user) => Some(user),
                None => other_tokens(token.to_owned()).await,
            };
            if let Some(user) = user {
                return Some(user.with_authenticated_group());
            }
        }
        // Credentials that no authenticator accepted are refused, not taken as none.
        let unverified = request.extensions.get::<UnverifiedPeerCertificates>();
        if let Some(unverified) = unverified {
            // Upstream logs this too: the client sees only 401.
            tracing::debug!(
                certificates = unverified.certificates.len(),
                error = %unverified.error,
                "verifying the client certificate failed"
            );
        }
        let rejected = token.is_some() || unverified.is_some();
        (!rejected && self.anonymous.allows(request.uri.path())).then(User::anonymous)
    }

    /// The verdict of the JWT authenticators on `token`: `None` when no configured issuer
    /// issued it (without the groups authentication adds).
    pub(crate) async fn jwt_user(&self, token: &str) -> Option<Result<User, String>> {
        let jwt = self.jwt.current();
        if jwt.is_empty() {
            return None;
        }
        jwt.authenticate(token).await
    }

    /// The user a bearer token stands for (without the groups authentication adds).
    pub(crate) fn user_of_token(&self, token: &str) -> Option<User> {
        self.tokens.get(token).cloned()
    }
}

impl Anonymous {
    /// Whether a request without credentials to `path` is `system:anonymous` (upstream's
    /// anonymous authenticator: with conditions, only their paths, matched exactly).
    fn allows(&self, path: &str) -> bool {
        self.allowed && (self.paths.is_empty() || self.paths.iter().any(|p| p == path))
    }
}

/// The user of a verified client certificate; none without one, or when its common name is
/// empty (upstream leaves such a certificate to the other authenticators).
fn client_certificate_user(request: &Parts) -> Option<User> {
    let PeerCertificates(chain) = request.extensions.get()?;
    let subject = certificate_subject(chain.first()?).ok()?;
    if subject.common_name.is_empty() {
        return None;
    }
    let mut user = User::new(subject.common_name, &[]);
    user.groups = subject.organizations;
    Some(user)
}

/// The token of an `Authorization: Bearer <token>` header; none for another scheme or an
/// empty token, which count as no credentials (`staging/src/k8s.io/apiserver/pkg/
/// authentication/request/bearertoken/bearertoken.go`).
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The tokens of a token file (`staging/src/k8s.io/apiserver/pkg/authentication/token/
/// tokenfile/tokenfile.go`): records of at least three columns; a record with an empty token
/// is skipped, a repeated token's last record wins, the fourth column lists groups.
fn parse_token_file(text: &[u8], path: &str) -> Result<HashMap<String, User>, TokenFileError> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text);
    let mut tokens = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(|source| TokenFileError::Csv {
            path: path.to_owned(),
            source,
        })?;
        if record.len() < 3 {
            return Err(TokenFileError::Columns {
                path: path.to_owned(),
                found: record.len(),
            });
        }
        if record[0].is_empty() {
            tracing::warn!(path, "an empty token in the token file is skipped");
            continue;
        }
        let mut user = User::new(&record[1], &[]);
        user.uid = record[2].to_owned();
        if let Some(groups) = record.get(3) {
            user.groups = groups.split(',').map(str::to_owned).collect();
        }
        if tokens.insert(record[0].to_owned(), user).is_some() {
            tracing::warn!(
                path,
                "a token repeats in the token file; its last line counts"
            );
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;
    use crate::server::auth::user::{ANONYMOUS, AUTHENTICATED, UNSECURED};

    fn with_auth(value: &str) -> Parts {
        let mut request = axum::http::Request::new(());
        request
            .headers_mut()
            .insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        request.into_parts().0
    }

    fn without_credentials() -> Parts {
        axum::http::Request::new(()).into_parts().0
    }

    #[test]
    fn token_files_read_as_upstream() {
        let text = b"t1,alice,1001,\"dev,ops\"\nt2,bob,1002\n,empty,3\n";
        let tokens = parse_token_file(text, "tokens.csv").unwrap();
        assert_eq!(tokens["t1"].username, "alice");
        assert_eq!(tokens["t1"].uid, "1001");
        assert_eq!(tokens["t1"].groups, ["dev", "ops"]);
        assert!(tokens["t2"].groups.is_empty());
        assert_eq!(tokens.len(), 2);
        let short = parse_token_file(b"t1,alice\n", "tokens.csv").unwrap_err();
        assert_eq!(
            short.to_string(),
            "token file 'tokens.csv' must have at least 3 columns (token, user name, user uid), found 2"
        );
    }

    /// `authenticate` with no token authenticator after the token file.
    fn authenticate(auth: &Authentication, request: &Parts) -> Option<User> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(auth.authenticate(request, |_| async { None }))
    }

    /// The configuration file's `anonymous` section: enabled with conditions, anonymous
    /// requests reach exactly those paths (upstream's `anonymous.NewAuthenticator`); the file
    /// decides over what `anonymous(..)` said.
    #[test]
    fn anonymous_conditions_allow_their_paths_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.yaml");
        std::fs::write(
            &path,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n\
             anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /readyz\n",
        )
        .unwrap();
        let auth = Authentication::required()
            .anonymous(false)
            .authentication_config(&path, &[], &BTreeMap::new())
            .unwrap();
        assert!(auth.anonymous_configured_by_file());
        let at = |uri: &str| {
            let request = axum::http::Request::get(uri).body(()).unwrap();
            authenticate(&auth, &request.into_parts().0).map(|user| user.username)
        };
        assert_eq!(at("/livez").as_deref(), Some(ANONYMOUS));
        assert_eq!(at("/readyz?verbose").as_deref(), Some(ANONYMOUS));
        assert_eq!(at("/livez/ping"), None);
        assert_eq!(at("/version"), None);
        let without_section = dir.path().join("jwt-only.yaml");
        std::fs::write(
            &without_section,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n",
        )
        .unwrap();
        let flag_decides = Authentication::required()
            .anonymous(true)
            .authentication_config(&without_section, &[], &BTreeMap::new())
            .unwrap();
        assert!(!flag_decides.anonymous_configured_by_file());
        let request = axum::http::Request::get("/version").body(()).unwrap();
        assert!(authenticate(&flag_decides, &request.into_parts().0).is_some());
    }

    #[test]
    fn bearer_tokens_authenticate_and_unknown_ones_do_not() {
        let auth = Authentication::required()
            .anonymous(true)
            .token("t1", "alice", "1", &["dev"]);
        let alice = authenticate(&auth, &with_auth("Bearer t1")).unwrap();
        assert_eq!(alice.groups, ["dev", AUTHENTICATED]);
        assert_eq!(authenticate(&auth, &with_auth("bearer t1")), Some(alice));
        assert_eq!(authenticate(&auth, &with_auth("Bearer nope")), None);
        let anonymous = authenticate(&auth, &without_credentials()).unwrap();
        assert_eq!(anonymous.username, ANONYMOUS);
        // Another scheme, or an empty token, is no credential at all.
        assert_eq!(
            authenticate(&auth, &with_auth("Basic YTpi"))
                .unwrap()
                .username,
            ANONYMOUS
        );
        let closed = Authentication::required();
        assert_eq!(authenticate(&closed, &without_credentials()), None);
        let open = Authentication::none();
        assert_eq!(
            authenticate(&open, &with_auth("Bearer nope"))
                .unwrap()
                .username,
            UNSECURED
        );
    }
}
