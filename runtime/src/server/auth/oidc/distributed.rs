//! Distributed claims (OpenID Connect Core 1.0, section 5.6.2), resolved as upstream's
//! `claimResolver` resolves them (`plugin/pkg/authenticator/token/oidc/oidc.go`): when an
//! authenticator maps groups from a claim and a token lacks that claim but names it in
//! `_claim_names`, the source `_claim_sources` gives for it is asked (a GET of its `endpoint`,
//! with its `access_token` as a bearer token) for a JWT holding the claim, and the claim is
//! taken from that JWT once it is verified: signed by its issuer's keys, not expired, and for
//! one of the authenticator's audiences. Aggregated claims (a source with a `JWT` and no
//! endpoint) are left alone, as upstream leaves them.
//!
//! The claims JWT's issuer need not be the token's: its keys are found by discovery over the
//! authenticator's trust (its `certificateAuthority`), fetched when first needed and again when
//! none verifies, at most once per `REFETCH_INTERVAL` (a failed fetch is remembered as long),
//! and kept for at most [`MOST_ISSUERS`] issuers; a token waits at most [`DEADLINE`] for its
//! claim. A claims JWT of the authenticator's own issuer is verified with that issuer's keys,
//! so the keys of a `--authentication-config-jwks` file serve it too. Upstream starts another
//! issuer's verifier in the background and fails the tokens that come before it is ready; kapi
//! fetches the keys while the token waits, within the fetch's deadline.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::server::auth::service_account::jwt;
use crate::server::http::client::{self, Credentials, Destination, Exchange};

use super::keys::{self, Jwk};
use super::{
    Authenticator, REFETCH_INTERVAL, check_times, signed_by, string_or_array, supported_algorithm,
};

/// The claim naming, per claim, the source that holds it.
const CLAIM_NAMES: &str = "_claim_names";
/// The claim describing each source.
const CLAIM_SOURCES: &str = "_claim_sources";
/// The most issuers of claims JWTs whose keys are kept.
const MOST_ISSUERS: usize = 16;
/// How long resolving a token's distributed claim may take, waiting for a fetch included.
pub(super) const DEADLINE: Duration = Duration::from_secs(60);
/// How long asking a source may take.
const SOURCE_DEADLINE: Duration = Duration::from_secs(30);
/// The most bytes of a source's answer read: a JWT.
const MOST_JWT_BYTES: usize = 64 << 10;

/// A source of distributed claims (upstream's `endpoint`).
#[derive(Debug, Deserialize)]
struct Source {
    #[serde(default, rename = "endpoint")]
    url: String,
    #[serde(default)]
    access_token: String,
}

/// The keys of the issuers of claims JWTs other than the authenticator's own, with when they
/// were fetched.
#[derive(Debug, Default)]
pub(super) struct ForeignKeys {
    /// Read without waiting on a fetch.
    keys: std::sync::RwLock<BTreeMap<String, Fetched>>,
    /// Held while keys are fetched, so that one fetch serves everyone waiting for it.
    fetching: tokio::sync::Mutex<()>,
}

/// One issuer's keys (none when the fetch failed: remembered as long as keys are) and when
/// they were fetched.
type Fetched = (Arc<Vec<Jwk>>, Instant);

impl Authenticator {
    /// Puts the groups claim into `claims` from its distributed source, when the token names
    /// one instead of holding the claim (upstream's `expand`).
    pub(super) async fn expand_distributed_claims(
        &self,
        claims: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let claim = self.config.claim_mappings.groups.claim.as_str();
        if claim.is_empty() || claims.contains_key(claim) {
            return Ok(());
        }
        let Some(names) = claims.get(CLAIM_NAMES) else {
            return Ok(());
        };
        let names: BTreeMap<String, String> = serde_json::from_value(names.clone())
            .map_err(|e| format!("oidc: error parsing distributed claim names: {e}"))?;
        let sources = claims
            .get(CLAIM_SOURCES)
            .ok_or_else(|| "oidc: no claim sources".to_owned())?;
        let sources: BTreeMap<String, Source> = serde_json::from_value(sources.clone())
            .map_err(|e| format!("oidc: could not parse claim sources: {e}"))?;
        let Some(source_name) = names.get(claim) else {
            return Ok(());
        };
        let source = sources.get(source_name).ok_or_else(|| {
            format!(
                "id token _claim_names contained a source {source_name} missing in _claims_sources"
            )
        })?;
        if source.url.is_empty() {
            // An aggregated claim, which upstream does not read either.
            return Ok(());
        }
        let value = self.resolve(claim, source).await?;
        claims.insert(claim.to_owned(), value);
        Ok(())
    }

    /// The value of `claim` in the verified JWT `source` answers with (upstream's `resolve`).
    async fn resolve(&self, claim: &str, source: &Source) -> Result<Value, String> {
        let token = self
            .claims_jwt(source)
            .await
            .map_err(|e| format!("while getting distributed claim {claim:?}: {e}"))?;
        let issuer = untrusted_issuer(&token).map_err(|e| {
            format!(
                "getting untrusted issuer from endpoint {} failed for claim {claim:?}: {e}",
                source.url
            )
        })?;
        // A token whose issuer reads is a JWS whose claims may still not be an object.
        let parsed = jwt::parse_as::<Map<String, Value>>(&token)
            .ok_or_else(|| format!("could not parse distributed claims for claim {claim}"))?;
        self.verify_claims_jwt(&parsed, &issuer).await?;
        parsed.claims.get(claim).cloned().ok_or_else(|| {
            format!(
                "jwt returned by distributed claim endpoint {:?} did not contain claim: {claim}",
                source.url
            )
        })
    }

    /// The source's answer: a GET with its access token, any 2xx status (upstream's
    /// `getClaimJWT`).
    async fn claims_jwt(&self, source: &Source) -> Result<String, String> {
        let destination = Destination::of_url(&source.url)?;
        let credentials = Credentials {
            certificate: None,
            token: (!source.access_token.is_empty()).then(|| source.access_token.clone()),
        };
        let answer = client::send(Exchange {
            method: Method::GET,
            destination: &destination,
            body: None,
            roots: Arc::clone(&self.roots),
            deadline: SOURCE_DEADLINE,
            most_bytes: MOST_JWT_BYTES,
            credentials: Some(&credentials),
        })
        .await?;
        if !(200..=226).contains(&answer.status.as_u16()) {
            return Err(format!(
                "error while getting distributed claim JWT: {}",
                answer.status
            ));
        }
        String::from_utf8(answer.body.to_vec())
            .map(|body| body.trim_end_matches(['\r', '\n']).to_owned())
            .map_err(|e| e.to_string())
    }

    /// A claims JWT checked as go-oidc checks an ID token of `issuer`: signature, times and
    /// one of the authenticator's audiences.
    async fn verify_claims_jwt(
        &self,
        token: &jwt::Parsed<'_, Map<String, Value>>,
        issuer: &str,
    ) -> Result<(), String> {
        const OWN: &str = "oidc: verify token: ";
        let unverified = |e: String| {
            format!(
                "verify distributed claim token: {}",
                e.trim_start_matches(OWN)
            )
        };
        if issuer == self.config.issuer.url {
            self.verify_signature(token).await.map_err(unverified)?;
        } else {
            let keys = self
                .foreign_keys(issuer)
                .await
                .map_err(|e| format!("verifying untrusted issuer {issuer} failed: {e}"))?;
            self.verify_foreign_signature(token, issuer, keys)
                .await
                .map_err(unverified)?;
        }
        check_times(&token.claims, jiff::Timestamp::now().as_second()).map_err(unverified)?;
        let audiences = string_or_array(token.claims.get("aud")).unwrap_or_default();
        let wanted = &self.config.issuer.audiences;
        if audiences.iter().any(|a| wanted.contains(a)) {
            return Ok(());
        }
        let mut sorted = wanted.clone();
        sorted.sort();
        Err(unverified(super::audience_error(&sorted, &audiences)))
    }

    /// The cached keys of another issuer, fetched by its discovery when there are none.
    async fn foreign_keys(&self, issuer: &str) -> Result<Arc<Vec<Jwk>>, String> {
        match self.cached_foreign_keys(issuer) {
            Some((keys, _)) => Ok(keys),
            None => self.fetch_foreign_keys(issuer).await,
        }
    }

    fn cached_foreign_keys(&self, issuer: &str) -> Option<Fetched> {
        let cache = self
            .foreign_keys
            .keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.get(issuer).cloned()
    }

    /// Fetches another issuer's keys and keeps them (a failure too, for as long), making room
    /// by forgetting the issuer fetched longest ago; an issuer fetched less than
    /// `REFETCH_INTERVAL` ago is not fetched again.
    async fn fetch_foreign_keys(&self, issuer: &str) -> Result<Arc<Vec<Jwk>>, String> {
        let not_ready = || format!("verifier not initialized for issuer: {issuer:?}");
        let _fetching = self.foreign_keys.fetching.lock().await;
        if let Some((keys, fetched)) = self.cached_foreign_keys(issuer)
            && fetched.elapsed() < REFETCH_INTERVAL
        {
            return if keys.is_empty() {
                Err(not_ready())
            } else {
                Ok(keys)
            };
        }
        let fetched = keys::fetch(issuer, "", Arc::clone(&self.roots)).await;
        let keys = Arc::new(fetched.as_ref().cloned().unwrap_or_default());
        let mut cache = self
            .foreign_keys
            .keys
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= MOST_ISSUERS && !cache.contains_key(issuer) {
            let oldest = cache
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                cache.remove(&oldest);
            }
        }
        cache.insert(issuer.to_owned(), (Arc::clone(&keys), Instant::now()));
        match fetched {
            Ok(_) => Ok(keys),
            Err(error) => {
                tracing::warn!(%issuer, %error, "oidc authenticator: fetching a distributed claims issuer's keys failed");
                Err(not_ready())
            }
        }
    }

    /// A signature by one of `keys` of another issuer; when none verifies, its keys are
    /// fetched again (at most once per `REFETCH_INTERVAL`), as for the authenticator's own.
    async fn verify_foreign_signature(
        &self,
        token: &jwt::Parsed<'_, Map<String, Value>>,
        issuer: &str,
        keys: Arc<Vec<Jwk>>,
    ) -> Result<(), String> {
        supported_algorithm(token)?;
        if signed_by(token, &keys) {
            return Ok(());
        }
        match self.fetch_foreign_keys(issuer).await {
            Ok(fresh) if !Arc::ptr_eq(&fresh, &keys) && signed_by(token, &fresh) => Ok(()),
            _ => Err(UNVERIFIED.into()),
        }
    }
}

/// The `iss` a JWT claims, unverified, with upstream's `untrustedIssuer` errors (and its
/// `accounts.google.com` coalesced with the URL form).
fn untrusted_issuer(token: &str) -> Result<String, String> {
    use base64::Engine as _;
    if token.trim_start().starts_with('{') {
        return Err("token is not compact JWT".to_owned());
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [_, payload, _] = parts.as_slice() else {
        return Err("malformed token".to_owned());
    };
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|e| format!("error decoding token: {e}"))?;
    #[derive(Deserialize)]
    struct Claims {
        #[serde(default)]
        iss: String,
    }
    let claims: Claims =
        serde_json::from_slice(&payload).map_err(|e| format!("while unmarshaling token: {e}"))?;
    Ok(if claims.iss == "accounts.google.com" {
        "https://accounts.google.com".to_owned()
    } else {
        claims.iss
    })
}

/// go-oidc's words for a signature no key verifies.
const UNVERIFIED: &str = "failed to verify signature: failed to verify id token signature";

#[cfg(test)]
mod tests {
    use super::untrusted_issuer;

    /// upstream's `untrustedIssuer` (`oidc.go`): its errors, and Google's legacy issuer.
    #[test]
    fn issuers_are_read_unverified_with_upstreams_errors() {
        let token = |claims: &str| {
            use base64::Engine as _;
            let encode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
            format!("{}.{}.sig", encode(r#"{"alg":"ES256"}"#), encode(claims))
        };
        assert_eq!(
            untrusted_issuer(&token(r#"{"iss":"https://a.example"}"#)),
            Ok("https://a.example".to_owned())
        );
        assert_eq!(
            untrusted_issuer(&token(r#"{"iss":"accounts.google.com"}"#)),
            Ok("https://accounts.google.com".to_owned())
        );
        assert_eq!(
            untrusted_issuer(r#"{"iss":"x"}"#),
            Err("token is not compact JWT".to_owned())
        );
        assert_eq!(untrusted_issuer("a.b"), Err("malformed token".to_owned()));
        assert!(untrusted_issuer("a.!!.c").is_err_and(|e| e.starts_with("error decoding token")));
        assert!(
            untrusted_issuer(&token("[1]"))
                .is_err_and(|e| e.starts_with("while unmarshaling token"))
        );
    }
}
