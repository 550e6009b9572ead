//! Service-account tokens, as kube-apiserver issues and authenticates them: the issuer, API
//! audiences and keys of [`ServiceAccountTokens`] (`--service-account-issuer`,
//! `--api-audiences`, `--service-account-signing-key-file`, `--service-account-key-file`,
//! `--service-account-max-token-expiration`); the keys (`keys`), the JWT claims, signature and
//! the checks that need no store (`jwt`), and those that read it (`validation`); the legacy
//! tokens kept in Secrets (`legacy`), authenticated beside them.
//! `handlers::token_request` issues tokens, `auth::Access` authenticates them after the token
//! file, as upstream's union does (`pkg/kubeapiserver/authenticator/config.go`).

pub(crate) mod jwt;
pub(crate) mod keys;
pub(crate) mod legacy;
pub(crate) mod validation;

use std::time::Duration;

pub use keys::{KeyError, SigningKey, VerificationKey};

use crate::KubeVersion;
use crate::server::auth::user::User;
use crate::storage::Storage;

/// kube-apiserver's usual `--service-account-issuer` (kubeadm's and kind's).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// How a server issues and authenticates service-account tokens.
#[derive(Debug, Clone)]
pub struct ServiceAccountTokens {
    pub(crate) issuer: String,
    audiences: Vec<String>,
    pub(crate) signing_key: SigningKey,
    extra_keys: Vec<VerificationKey>,
    pub(crate) max_expiration: Option<Duration>,
    /// Whether pod-bound tokens asked for with kubelet's 3607 seconds live a year
    /// (`--service-account-extend-token-expiration`, on by default as upstream's).
    pub(crate) extend_expiration: bool,
    /// The `jwks_uri` the discovery document names, when not the server's own.
    pub(crate) jwks_uri: Option<String>,
    /// The release served, which decides how legacy tokens are tracked (the server sets it).
    pub(crate) release: KubeVersion,
}

impl ServiceAccountTokens {
    /// Tokens signed with `key`, of issuer [`DEFAULT_ISSUER`], for the API audience of the
    /// issuer.
    pub fn new(key: SigningKey) -> Self {
        Self {
            issuer: DEFAULT_ISSUER.to_owned(),
            audiences: Vec::new(),
            signing_key: key,
            extra_keys: Vec::new(),
            max_expiration: None,
            extend_expiration: true,
            jwks_uri: None,
            release: crate::server::DEFAULT_KUBE_VERSION,
        }
    }

    /// The `iss` of the tokens issued, and the only one authenticated
    /// (`--service-account-issuer`).
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = issuer.into();
        self
    }

    /// The audiences of the API (`--api-audiences`): tokens are issued for them unless a
    /// request names others, and authenticated only for one of them. Empty: the issuer.
    pub fn api_audiences(mut self, audiences: Vec<String>) -> Self {
        self.audiences = audiences;
        self
    }

    /// More keys tokens are verified with, besides the signing key's
    /// (`--service-account-key-file`): tokens signed by an earlier key stay valid.
    pub fn verification_keys(mut self, keys: Vec<VerificationKey>) -> Self {
        self.extra_keys = keys;
        self
    }

    /// The longest a requested token lives; longer requests are shortened with a warning
    /// (`--service-account-max-token-expiration`).
    pub fn max_expiration(mut self, max: Duration) -> Self {
        self.max_expiration = Some(max);
        self
    }

    /// Whether a pod-bound token requested for the API audiences with the 3607 seconds the
    /// kubelet's projected volumes ask for is issued for a year instead, marked to warn after
    /// the hour asked for (`--service-account-extend-token-expiration`, default on): upstream's
    /// safe rollout of bound tokens, which keeps pods with clients that do not reload their
    /// token working.
    pub fn extend_expiration(mut self, extend: bool) -> Self {
        self.extend_expiration = extend;
        self
    }

    /// The URL of the keys that `/.well-known/openid-configuration` names
    /// (`--service-account-jwks-uri`), when they are published elsewhere than the server's
    /// own `/openid/v1/jwks`.
    pub fn jwks_uri(mut self, uri: impl Into<String>) -> Self {
        self.jwks_uri = Some(uri.into());
        self
    }

    /// These tokens on a server of `release`.
    pub(crate) fn serving(self, release: KubeVersion) -> Self {
        Self { release, ..self }
    }

    /// The API audiences.
    pub(crate) fn audiences(&self) -> Vec<String> {
        if self.audiences.is_empty() {
            vec![self.issuer.clone()]
        } else {
            self.audiences.clone()
        }
    }

    /// Every key a token may be signed with, the signing key's first, without repeats.
    pub(crate) fn public_keys(&self) -> Vec<VerificationKey> {
        let mut keys = vec![self.signing_key.public_key().clone()];
        for key in &self.extra_keys {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
        keys
    }

    /// Authenticates `token` for `wanted` audiences (`None`: the API audiences): `None` when it
    /// is no token of this issuer (left to other authenticators), else the user and the
    /// audiences it is valid for, or upstream's error.
    pub(crate) async fn authenticate(
        &self,
        storage: &dyn Storage,
        token: &str,
        wanted: Option<&[String]>,
    ) -> Option<Result<Verified, String>> {
        let parsed = jwt::parse(token)?;
        if parsed.claims.iss == legacy::ISSUER {
            let parsed = jwt::parse_as::<legacy::LegacyClaims>(token)?;
            let api = self.audiences();
            let keys = self.public_keys();
            let verified =
                legacy::authenticate(storage, token, &parsed, &keys, &api, wanted, self.release)
                    .await;
            return Some(verified.map(|(user, audiences)| Verified {
                user,
                audiences,
                stale: None,
            }));
        }
        // Upstream's `hasCorrectIssuer`: another issuer's token is not this authenticator's.
        if parsed.claims.iss != self.issuer {
            return None;
        }
        Some(self.check(storage, &parsed, wanted).await)
    }

    async fn check(
        &self,
        storage: &dyn Storage,
        parsed: &jwt::Parsed<'_>,
        wanted: Option<&[String]>,
    ) -> Result<Verified, String> {
        if !parsed.signed_by_any(&self.public_keys()) {
            return Err("invalid signature".to_owned());
        }
        let claims = &parsed.claims;
        let api = self.audiences();
        let audiences = jwt::check_audiences(&claims.aud, wanted.unwrap_or(&api))?;
        let now = jiff::Timestamp::now().as_second();
        jwt::check_times(claims, now)?;
        let user = validation::user_of(storage, claims, now).await?;
        // An extended token used after the time it was asked for still authenticates;
        // upstream counts it stale and annotates the request's audit event
        // (`pkg/serviceaccount/claims.go`).
        let stale = claims
            .kubernetes
            .warnafter
            .filter(|at| now > *at)
            .map(|warnafter| {
                let note = format!(
                    "subject: {}, seconds after warning threshold: {}",
                    claims.sub,
                    now - warnafter
                );
                tracing::info!("stale service account token: {note}");
                note
            });
        Ok(Verified {
            user,
            audiences,
            stale,
        })
    }
}

/// A service-account token that authenticated.
#[derive(Debug, Clone)]
pub(crate) struct Verified {
    /// Whom it names.
    pub(crate) user: User,
    /// The audiences it is valid for, of those asked.
    pub(crate) audiences: Vec<String>,
    /// For an extended token used after its `warnafter`: the request's
    /// `authentication.k8s.io/stale-token` audit annotation.
    pub(crate) stale: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::jwt::{Claims, Private, Ref};
    use super::*;
    use crate::server::state::keys;
    use crate::storage::{EmbeddedOptions, EmbeddedStorage};

    #[tokio::test]
    async fn an_extended_token_used_after_its_warning_time_is_stale() {
        // pkg/serviceaccount/claims.go: past `warnafter` the token still authenticates, and the
        // request's audit event gets `authentication.k8s.io/stale-token`.
        let storage = EmbeddedStorage::in_memory(EmbeddedOptions::default()).unwrap();
        let key = format!("{}team/robot", keys::prefix_of("", "serviceaccounts"));
        let account = br#"{"metadata":{"name":"robot","namespace":"team","uid":"u-1"}}"#;
        storage.create(&key, account.to_vec().into()).await.unwrap();
        let tokens = ServiceAccountTokens::new(SigningKey::generate().unwrap());
        let now = jiff::Timestamp::now().as_second();
        let token = |warnafter: Option<i64>| {
            let claims = Claims {
                aud: tokens.audiences(),
                exp: now + 3600,
                iat: now - 4000,
                iss: tokens.issuer.clone(),
                nbf: now - 4000,
                sub: "system:serviceaccount:team:robot".to_owned(),
                kubernetes: Private {
                    namespace: "team".to_owned(),
                    serviceaccount: Ref {
                        name: "robot".to_owned(),
                        uid: "u-1".to_owned(),
                    },
                    warnafter,
                    ..Private::default()
                },
                ..Claims::default()
            };
            jwt::sign(&tokens.signing_key, &claims).unwrap()
        };
        let fresh = tokens
            .authenticate(&storage, &token(Some(now + 60)), None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(fresh.stale, None);
        assert_eq!(fresh.user.username, "system:serviceaccount:team:robot");
        let stale = tokens
            .authenticate(&storage, &token(Some(now - 30)), None)
            .await
            .unwrap()
            .unwrap();
        let note = stale.stale.unwrap();
        assert!(
            note.starts_with(
                "subject: system:serviceaccount:team:robot, seconds after warning threshold: 3"
            ),
            "{note}"
        );
    }
}
