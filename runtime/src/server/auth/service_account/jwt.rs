//! Service-account tokens as JSON Web Tokens: the claims kube-apiserver writes
//! (`pkg/serviceaccount/claims.go`: `iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti` and the
//! private `kubernetes.io` claims naming the namespace, the account and the object the token
//! is bound to), signed as a compact JWS with the key's id in the header (`jwt.go`), and the
//! checks of a presented token that need no store: its issuer (a token of another issuer is
//! not this authenticator's), a signature by one of the verification keys, an audience among
//! the expected ones, and its times with go-jose's one-minute leeway.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::server::auth::service_account::keys::{SigningKey, VerificationKey};
use crate::validation::go_quoted;

/// go-jose's `DefaultLeeway`, which `Validate` allows around `nbf`, `exp` and `iat`.
pub(crate) const LEEWAY_SECONDS: i64 = 60;

/// The longest token read: longer ones are no token this server made.
const MAX_TOKEN_BYTES: usize = 64 << 10;

/// One object a claim names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ref {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) uid: String,
}

/// The `kubernetes.io` private claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Private {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) namespace: String,
    #[serde(default)]
    pub(crate) serviceaccount: Ref,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pod: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) secret: Option<Ref>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) node: Option<Ref>,
    /// When an extended pod token is past what was asked for (seconds since the epoch):
    /// used after it, the token still authenticates and the request is audited as stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) warnafter: Option<i64>,
}

/// A token's claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Claims {
    #[serde(default)]
    pub(crate) aud: Vec<String>,
    #[serde(default)]
    pub(crate) exp: i64,
    #[serde(default)]
    pub(crate) iat: i64,
    #[serde(default)]
    pub(crate) iss: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) jti: String,
    #[serde(default, rename = "kubernetes.io")]
    pub(crate) kubernetes: Private,
    #[serde(default)]
    pub(crate) nbf: i64,
    #[serde(default)]
    pub(crate) sub: String,
}

/// The signed compact JWS of `claims` (this module's [`Claims`], or the legacy token Secrets'
/// flat ones); `None` only if signing fails.
pub(crate) fn sign<C: Serialize>(key: &SigningKey, claims: &C) -> Option<String> {
    let header =
        json!({"alg": key.public_key().algorithm().name(), "kid": key.public_key().key_id()});
    let header = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).ok()?);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).ok()?);
    let signed = format!("{header}.{payload}");
    let signature = key.sign(signed.as_bytes())?;
    Some(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// A token split and decoded, not yet verified.
#[derive(Debug)]
pub(crate) struct Parsed<'a, C = Claims> {
    alg: String,
    /// The key id of the header (empty without one).
    kid: String,
    signed: &'a str,
    signature: Vec<u8>,
    pub(crate) claims: C,
}

#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    alg: String,
    #[serde(default)]
    kid: String,
}

/// The token's parts if it is a JWS whose claims decode; `None` for any other token.
pub(crate) fn parse(token: &str) -> Option<Parsed<'_>> {
    parse_as(token)
}

/// [`parse`], the claims read as `C`.
pub(crate) fn parse_as<C: DeserializeOwned>(token: &str) -> Option<Parsed<'_, C>> {
    if token.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let (signed, signature) = token.rsplit_once('.')?;
    let (header, payload) = signed.split_once('.')?;
    let header: Header = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    let claims: C = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    Some(Parsed {
        alg: header.alg,
        kid: header.kid,
        signed,
        signature: URL_SAFE_NO_PAD.decode(signature).ok()?,
        claims,
    })
}

impl<C> Parsed<'_, C> {
    /// The JWS algorithm the header names.
    pub(crate) fn alg(&self) -> &str {
        &self.alg
    }

    /// The key id the header names (empty without one).
    pub(crate) fn kid(&self) -> &str {
        &self.kid
    }

    /// Whether `verifies` accepts the token's signature of its signed part.
    pub(crate) fn signed_with(&self, verifies: impl Fn(&[u8], &[u8]) -> bool) -> bool {
        verifies(self.signed.as_bytes(), &self.signature)
    }

    /// Whether one of `keys` signed the token with the algorithm its header names.
    pub(crate) fn signed_by_any(&self, keys: &[VerificationKey]) -> bool {
        keys.iter().any(|key| {
            key.algorithm().name() == self.alg
                && key.verifies(self.signed.as_bytes(), &self.signature)
        })
    }
}

/// Upstream's errors for a token's times at `now` (go-jose's `ValidateWithLeeway` as
/// `claims.go` words them).
pub(crate) fn check_times(claims: &Claims, now: i64) -> Result<(), &'static str> {
    if claims.nbf != 0 && now + LEEWAY_SECONDS < claims.nbf {
        return Err("service account token is not valid yet");
    }
    if claims.exp != 0 && now - LEEWAY_SECONDS > claims.exp {
        return Err("service account token has expired");
    }
    if claims.iat != 0 && now + LEEWAY_SECONDS < claims.iat {
        return Err("service account token is issued in the future");
    }
    Ok(())
}

/// The audiences of a token for `audiences` among `wanted`, in the token's order; an error
/// with upstream's words when there are none.
pub(crate) fn check_audiences(
    audiences: &[String],
    wanted: &[String],
) -> Result<Vec<String>, String> {
    let matched: Vec<String> = audiences
        .iter()
        .filter(|aud| wanted.contains(aud))
        .cloned()
        .collect();
    if matched.is_empty() {
        return Err(format!(
            "token audiences {} is invalid for the target audiences {}",
            go_quoted(audiences),
            go_quoted(wanted)
        ));
    }
    Ok(matched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            aud: vec!["api".into()],
            exp: 1_000 + 3600,
            iat: 1_000,
            nbf: 1_000,
            iss: "https://issuer".into(),
            sub: "system:serviceaccount:ns:sa".into(),
            jti: "id".into(),
            kubernetes: Private {
                namespace: "ns".into(),
                serviceaccount: Ref {
                    name: "sa".into(),
                    uid: "u1".into(),
                },
                ..Private::default()
            },
        }
    }

    #[test]
    fn signed_tokens_verify_with_their_key_only() {
        let key = SigningKey::generate().unwrap();
        let other = SigningKey::generate().unwrap();
        let token = sign(&key, &claims()).unwrap();
        let parsed = parse(&token).unwrap();
        assert_eq!(parsed.claims, claims());
        assert!(parsed.signed_by_any(&[other.public_key().clone(), key.public_key().clone()]));
        assert!(!parsed.signed_by_any(&[other.public_key().clone()]));
        // The payload as upstream writes it: the private claims under `kubernetes.io`.
        let payload = token.split('.').nth(1).unwrap();
        let payload: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!(
            payload["kubernetes.io"],
            json!({"namespace": "ns", "serviceaccount": {"name": "sa", "uid": "u1"}})
        );
        // A changed payload no longer verifies.
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(br#"{"sub":"system:admin"}"#);
        parts[1] = &forged;
        let forged = parts.join(".");
        assert!(
            !parse(&forged)
                .unwrap()
                .signed_by_any(&[key.public_key().clone()])
        );
        assert!(parse("not-a-jwt").is_none());
    }

    #[test]
    fn times_are_checked_with_a_minute_of_leeway() {
        let c = claims();
        assert_eq!(check_times(&c, 1_000), Ok(()));
        assert_eq!(check_times(&c, 1_000 + 3600 + 60), Ok(()));
        assert_eq!(
            check_times(&c, 1_000 + 3600 + 61),
            Err("service account token has expired")
        );
        assert_eq!(
            check_times(&c, 1_000 - 61),
            Err("service account token is not valid yet")
        );
    }

    #[test]
    fn audiences_intersect_as_upstream() {
        let c = claims();
        assert_eq!(
            check_audiences(&c.aud, &["api".into()]),
            Ok(vec!["api".into()])
        );
        assert_eq!(
            check_audiences(&c.aud, &["vault".into()]).unwrap_err(),
            r#"token audiences ["api"] is invalid for the target audiences ["vault"]"#
        );
    }
}
