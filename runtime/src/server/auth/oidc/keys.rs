//! An issuer's signing keys, as go-oidc finds and uses them: the discovery document
//! (`<issuer>/.well-known/openid-configuration`, or the configured `discoveryURL`) names the
//! key set (`jwks_uri`), whose JSON Web Keys verify the tokens. RSA keys verify `RS*` and
//! `PS*` signatures, EC keys `ES256` (P-256) and `ES384` (P-384); the cryptography is `ring`'s.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use rustls::RootCertStore;
use serde::Deserialize;

use crate::server::http::client;

/// How long one fetch of a document may take (upstream's client timeout).
const FETCH_DEADLINE: Duration = Duration::from_secs(30);
/// The largest discovery document or key set read.
const MOST_DOCUMENT_BYTES: usize = 1024 * 1024;
/// The path of the discovery document below the issuer.
const WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// A public key of the key set.
#[derive(Debug, Clone)]
pub(super) struct Jwk {
    kid: String,
    key: PublicKey,
}

#[derive(Debug, Clone)]
enum PublicKey {
    /// The PKCS#1 `RSAPublicKey` DER.
    Rsa(Vec<u8>),
    /// An uncompressed point on P-256.
    P256(Vec<u8>),
    /// An uncompressed point on P-384.
    P384(Vec<u8>),
}

impl Jwk {
    /// The key's id (empty when the set gives none).
    pub(super) fn kid(&self) -> &str {
        &self.kid
    }

    /// Whether `signature` signs `message` with this key under JWS algorithm `alg`.
    pub(super) fn verifies(&self, alg: &str, message: &[u8], signature: &[u8]) -> bool {
        let (algorithm, raw): (&dyn VerificationAlgorithm, &[u8]) = match (&self.key, alg) {
            (PublicKey::Rsa(der), "RS256") => (&signature::RSA_PKCS1_2048_8192_SHA256, der),
            (PublicKey::Rsa(der), "RS384") => (&signature::RSA_PKCS1_2048_8192_SHA384, der),
            (PublicKey::Rsa(der), "RS512") => (&signature::RSA_PKCS1_2048_8192_SHA512, der),
            (PublicKey::Rsa(der), "PS256") => (&signature::RSA_PSS_2048_8192_SHA256, der),
            (PublicKey::Rsa(der), "PS384") => (&signature::RSA_PSS_2048_8192_SHA384, der),
            (PublicKey::Rsa(der), "PS512") => (&signature::RSA_PSS_2048_8192_SHA512, der),
            (PublicKey::P256(point), "ES256") => (&signature::ECDSA_P256_SHA256_FIXED, point),
            (PublicKey::P384(point), "ES384") => (&signature::ECDSA_P384_SHA384_FIXED, point),
            _ => return false,
        };
        UnparsedPublicKey::new(algorithm, raw)
            .verify(message, signature)
            .is_ok()
    }
}

/// A JSON Web Key as a key set holds it.
#[derive(Debug, Deserialize)]
struct Written {
    #[serde(default)]
    kty: String,
    #[serde(default)]
    kid: String,
    #[serde(default, rename = "use")]
    usage: String,
    #[serde(default)]
    crv: String,
    #[serde(default)]
    n: String,
    #[serde(default)]
    e: String,
    #[serde(default)]
    x: String,
    #[serde(default)]
    y: String,
}

/// The signing keys of a JSON Web Key Set; keys of other kinds or uses are skipped, as
/// go-jose cannot verify with them either.
pub(super) fn parse_key_set(body: &[u8]) -> Result<Vec<Jwk>, String> {
    #[derive(Deserialize)]
    struct KeySet {
        keys: Vec<serde_json::Value>,
    }
    let set: KeySet =
        serde_json::from_slice(body).map_err(|e| format!("oidc: failed to decode keys: {e}"))?;
    Ok(set
        .keys
        .into_iter()
        .filter_map(|key| serde_json::from_value::<Written>(key).ok())
        .filter(|key| key.usage.is_empty() || key.usage == "sig")
        .filter_map(|key| {
            let decode = |text: &str| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok();
            let public = match (key.kty.as_str(), key.crv.as_str()) {
                ("RSA", _) => PublicKey::Rsa(rsa_public_key(&decode(&key.n)?, &decode(&key.e)?)),
                ("EC", "P-256") => PublicKey::P256(point(&decode(&key.x)?, &decode(&key.y)?, 32)?),
                ("EC", "P-384") => PublicKey::P384(point(&decode(&key.x)?, &decode(&key.y)?, 48)?),
                _ => return None,
            };
            Some(Jwk {
                kid: key.kid,
                key: public,
            })
        })
        .collect())
}

/// An uncompressed EC point from its coordinates, each `size` bytes.
fn point(x: &[u8], y: &[u8], size: usize) -> Option<Vec<u8>> {
    (x.len() == size && y.len() == size).then(|| [&[0x04], x, y].concat())
}

/// The DER of PKCS#1's `RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }`.
fn rsa_public_key(modulus: &[u8], exponent: &[u8]) -> Vec<u8> {
    let body = [der_integer(modulus), der_integer(exponent)].concat();
    [der_header(0x30, body.len()), body].concat()
}

/// A DER INTEGER of a big-endian unsigned number.
fn der_integer(number: &[u8]) -> Vec<u8> {
    let trimmed = match number.iter().position(|b| *b != 0) {
        Some(first) => &number[first..],
        None => &[0][..],
    };
    // A set high bit would read as negative: a zero byte keeps the number positive.
    let pad = trimmed.first().is_some_and(|b| b & 0x80 != 0);
    let mut content = Vec::with_capacity(trimmed.len() + 1);
    if pad {
        content.push(0);
    }
    content.extend_from_slice(trimmed);
    [der_header(0x02, content.len()), content].concat()
}

/// A DER tag and length.
fn der_header(tag: u8, len: usize) -> Vec<u8> {
    if len < 0x80 {
        // Below 128 the length is its own single byte.
        return vec![tag, len as u8];
    }
    let bytes: Vec<u8> = len
        .to_be_bytes()
        .into_iter()
        .skip_while(|b| *b == 0)
        .collect();
    let mut header = vec![tag, 0x80 | bytes.len() as u8];
    header.extend(bytes);
    header
}

/// The discovery document's fields go-oidc reads.
#[derive(Debug, Deserialize)]
struct Discovery {
    #[serde(default)]
    issuer: String,
    #[serde(default)]
    jwks_uri: String,
}

/// Fetches the issuer's discovery document and then its key set, with go-oidc's errors, both
/// within one [`FETCH_DEADLINE`].
/// `discovery_url` is where the document is read when it is not at the issuer's well-known
/// path (empty: it is).
pub(super) async fn fetch(
    issuer: &str,
    discovery_url: &str,
    roots: Arc<RootCertStore>,
) -> Result<Vec<Jwk>, String> {
    tokio::time::timeout(FETCH_DEADLINE, fetch_both(issuer, discovery_url, roots))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "fetching the keys of {issuer:?}: context deadline exceeded"
            ))
        })
}

async fn fetch_both(
    issuer: &str,
    discovery_url: &str,
    roots: Arc<RootCertStore>,
) -> Result<Vec<Jwk>, String> {
    let discovery_url = if discovery_url.is_empty() {
        format!("{}{WELL_KNOWN}", issuer.trim_end_matches('/'))
    } else {
        discovery_url.to_owned()
    };
    let answer = client::get(
        &discovery_url,
        roots.clone(),
        FETCH_DEADLINE,
        MOST_DOCUMENT_BYTES,
    )
    .await?;
    if answer.status != 200 {
        return Err(format!(
            "{}: {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        ));
    }
    let discovery: Discovery = serde_json::from_slice(&answer.body)
        .map_err(|e| format!("oidc: failed to decode provider discovery object: {e}"))?;
    if discovery.issuer != issuer {
        return Err(format!(
            "oidc: issuer did not match the issuer returned by provider, expected {issuer:?} got {:?}",
            discovery.issuer
        ));
    }
    let answer = client::get(
        &discovery.jwks_uri,
        roots,
        FETCH_DEADLINE,
        MOST_DOCUMENT_BYTES,
    )
    .await?;
    if answer.status != 200 {
        return Err(format!(
            "oidc: get keys failed: {} {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        ));
    }
    parse_key_set(&answer.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsa_keys_encode_as_pkcs1() {
        // A modulus with its high bit set gets a zero byte; short lengths are one byte.
        assert_eq!(
            rsa_public_key(&[0x80, 0x01], &[0x01, 0x00, 0x01]),
            [
                0x30, 0x0a, 0x02, 0x03, 0x00, 0x80, 0x01, 0x02, 0x03, 0x01, 0x00, 0x01
            ]
        );
        assert_eq!(der_header(0x30, 300), [0x30, 0x82, 0x01, 0x2c]);
    }

    #[test]
    fn key_sets_keep_the_signing_keys_they_can_use() {
        let set = br#"{"keys": [
            {"kty": "RSA", "kid": "r", "n": "gAE", "e": "AQAB"},
            {"kty": "EC", "kid": "e", "crv": "P-256", "x": "AA", "y": "AA"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "gAE", "e": "AQAB"},
            {"kty": "oct", "kid": "h", "k": "c2VjcmV0"}
        ]}"#;
        let keys = parse_key_set(set).unwrap();
        let kids: Vec<&str> = keys.iter().map(Jwk::kid).collect();
        assert_eq!(kids, ["r"]);
        assert!(
            parse_key_set(b"{}")
                .unwrap_err()
                .starts_with("oidc: failed to decode keys")
        );
    }
}
