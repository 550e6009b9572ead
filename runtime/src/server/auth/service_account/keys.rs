//! The keys service-account tokens are signed and verified with, as kube-apiserver's
//! `--service-account-signing-key-file` and `--service-account-key-file` hold them: PEM
//! blocks read with upstream's rules (`staging/src/k8s.io/client-go/util/keyutil`), a signing
//! key of ECDSA P-256 (`ES256`) or RSA (`RS256`, kubeadm's `sa.key`), each public key known by
//! upstream's key id (`keyIDFromPublicKey` in `pkg/serviceaccount/jwt.go`: the unpadded
//! base64url SHA-256 of its PKIX DER) and shown as the JSON Web Key `/openid/v1/jwks` serves.
//! The cryptography is `ring`'s.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair, UnparsedPublicKey};
use serde_json::{Value, json};
use x509_parser::oid_registry::{OID_EC_P256, OID_KEY_TYPE_EC_PUBLIC_KEY, OID_PKCS1_RSAENCRYPTION};
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;
use x509_parser::public_key::PublicKey;
use x509_parser::x509::SubjectPublicKeyInfo;

/// Why a key could not be read or made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text holds no PEM block of a key.
    #[error("data does not contain any valid {0} keys")]
    NoKey(&'static str),
    /// A PEM block is not a key of a supported kind.
    #[error("unsupported or malformed {label} key: {reason}")]
    Malformed {
        /// The PEM block's label.
        label: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The key could not be generated.
    #[error("generating a key failed")]
    Generate,
}

/// The JWS algorithm of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl Algorithm {
    /// The JWS `alg` name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::Rs256 => "RS256",
        }
    }
}

/// A public key tokens are verified with.
#[derive(Clone, PartialEq, Eq)]
pub struct VerificationKey {
    algorithm: Algorithm,
    /// What `ring` verifies with: the EC point, or the PKCS#1 `RSAPublicKey`.
    raw: Vec<u8>,
    /// The PKIX `SubjectPublicKeyInfo` DER.
    spki: Vec<u8>,
    kid: String,
}

impl std::fmt::Debug for VerificationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerificationKey")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .finish()
    }
}

impl VerificationKey {
    /// The public keys of a PEM text (`--service-account-key-file`): its `PUBLIC KEY`,
    /// `RSA PUBLIC KEY` blocks, and the public halves of its private keys, as upstream's
    /// `ParsePublicKeysPEM` reads them; other blocks are skipped.
    pub fn from_pem(pem: &[u8]) -> Result<Vec<Self>, KeyError> {
        let mut keys = Vec::new();
        for block in pem_blocks(pem)? {
            let key = match block.label.as_str() {
                "PUBLIC KEY" => Self::from_spki(&block.contents, &block.label)?,
                "RSA PUBLIC KEY" => Self::from_spki(&rsa_spki(&block.contents), &block.label)?,
                "PRIVATE KEY" | "RSA PRIVATE KEY" => SigningKey::from_block(&block)?.public,
                _ => continue,
            };
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(KeyError::NoKey("public"));
        }
        Ok(keys)
    }

    /// A key from its `SubjectPublicKeyInfo` DER.
    fn from_spki(der: &[u8], label: &str) -> Result<Self, KeyError> {
        let malformed = |reason: &str| KeyError::Malformed {
            label: label.to_owned(),
            reason: reason.to_owned(),
        };
        let (_, info) =
            SubjectPublicKeyInfo::from_der(der).map_err(|e| malformed(&e.to_string()))?;
        let oid = &info.algorithm.algorithm;
        let algorithm = if *oid == OID_KEY_TYPE_EC_PUBLIC_KEY {
            let curve = info
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok());
            if curve != Some(OID_EC_P256) {
                return Err(malformed("only the P-256 curve is supported"));
            }
            Algorithm::Es256
        } else if *oid == OID_PKCS1_RSAENCRYPTION {
            Algorithm::Rs256
        } else {
            return Err(malformed("not an ECDSA or RSA key"));
        };
        let raw = info.subject_public_key.data.to_vec();
        let digest = ring::digest::digest(&ring::digest::SHA256, der);
        Ok(Self {
            algorithm,
            raw,
            spki: der.to_vec(),
            kid: URL_SAFE_NO_PAD.encode(digest.as_ref()),
        })
    }

    /// Upstream's key id.
    pub fn key_id(&self) -> &str {
        &self.kid
    }

    pub(crate) fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// Whether `signature` signs `message` with this key.
    pub(crate) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let algorithm: &dyn signature::VerificationAlgorithm = match self.algorithm {
            Algorithm::Es256 => &signature::ECDSA_P256_SHA256_FIXED,
            Algorithm::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
        };
        UnparsedPublicKey::new(algorithm, &self.raw)
            .verify(message, signature)
            .is_ok()
    }

    /// The key in PEM (`PUBLIC KEY`), as kubeadm's `sa.pub`.
    pub fn to_pem(&self) -> String {
        pem("PUBLIC KEY", &self.spki)
    }

    /// The JSON Web Key `/openid/v1/jwks` lists (go-jose's fields).
    pub(crate) fn jwk(&self) -> Value {
        let parsed =
            SubjectPublicKeyInfo::from_der(&self.spki)
                .ok()
                .and_then(|(_, info)| match info.parsed().ok()? {
                    PublicKey::RSA(rsa) => Some((
                        URL_SAFE_NO_PAD.encode(strip_zeros(rsa.modulus)),
                        URL_SAFE_NO_PAD.encode(strip_zeros(rsa.exponent)),
                    )),
                    PublicKey::EC(point) => {
                        let data = point.data();
                        let coordinates = data.get(1..33).zip(data.get(33..65))?;
                        Some((
                            URL_SAFE_NO_PAD.encode(coordinates.0),
                            URL_SAFE_NO_PAD.encode(coordinates.1),
                        ))
                    }
                    _ => None,
                });
        let (first, second) = parsed.unwrap_or_default();
        match self.algorithm {
            Algorithm::Es256 => json!({
                "use": "sig", "kty": "EC", "kid": self.kid, "crv": "P-256", "alg": "ES256",
                "x": first, "y": second,
            }),
            Algorithm::Rs256 => json!({
                "use": "sig", "kty": "RSA", "kid": self.kid, "alg": "RS256",
                "n": first, "e": second,
            }),
        }
    }
}

/// The private key tokens are signed with.
#[derive(Clone)]
pub struct SigningKey {
    pair: Arc<Pair>,
    /// The key as its file holds it.
    pem: String,
    public: VerificationKey,
}

enum Pair {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new ECDSA P-256 key.
    pub fn generate() -> Result<Self, KeyError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| KeyError::Generate)?;
        Self::from_pem(pem("PRIVATE KEY", pkcs8.as_ref()).as_bytes())
    }

    /// The first private key of a PEM text (`--service-account-signing-key-file`): PKCS#8
    /// `PRIVATE KEY` (ECDSA P-256 or RSA) or PKCS#1 `RSA PRIVATE KEY`.
    pub fn from_pem(pem: &[u8]) -> Result<Self, KeyError> {
        let blocks = pem_blocks(pem)?;
        let block = blocks
            .iter()
            .find(|b| b.label.ends_with("PRIVATE KEY"))
            .ok_or(KeyError::NoKey("private"))?;
        Self::from_block(block)
    }

    fn from_block(block: &Pem) -> Result<Self, KeyError> {
        let malformed = |reason: String| KeyError::Malformed {
            label: block.label.clone(),
            reason,
        };
        let der = &block.contents;
        let pair = match block.label.as_str() {
            "PRIVATE KEY" => {
                let rng = SystemRandom::new();
                match EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    der,
                    &rng,
                ) {
                    Ok(pair) => Pair::Ecdsa(pair),
                    Err(ec) => Pair::Rsa(RsaKeyPair::from_pkcs8(der).map_err(|rsa| {
                        malformed(format!("not ECDSA P-256 ({ec}) nor RSA ({rsa})"))
                    })?),
                }
            }
            "RSA PRIVATE KEY" => {
                Pair::Rsa(RsaKeyPair::from_der(der).map_err(|e| malformed(e.to_string()))?)
            }
            "EC PRIVATE KEY" => {
                return Err(malformed(
                    "write it as PKCS#8 (`openssl pkcs8 -topk8 -nocrypt`)".to_owned(),
                ));
            }
            other => return Err(malformed(format!("a {other} block is no private key"))),
        };
        let spki = match &pair {
            Pair::Ecdsa(pair) => ec_spki(pair.public_key().as_ref()),
            Pair::Rsa(pair) => rsa_spki(pair.public().as_ref()),
        };
        let public = VerificationKey::from_spki(&spki, &block.label)?;
        Ok(Self {
            pair: Arc::new(pair),
            pem: pem(&block.label, der),
            public,
        })
    }

    /// The public half.
    pub fn public_key(&self) -> &VerificationKey {
        &self.public
    }

    /// The key in PEM, as it is kept in a file.
    pub fn to_pem(&self) -> &str {
        &self.pem
    }

    /// The JWS signature of `message`; `None` only if the system's random source fails.
    pub(crate) fn sign(&self, message: &[u8]) -> Option<Vec<u8>> {
        let rng = SystemRandom::new();
        match &*self.pair {
            Pair::Ecdsa(pair) => pair.sign(&rng, message).ok().map(|s| s.as_ref().to_vec()),
            Pair::Rsa(pair) => {
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut signature)
                    .ok()?;
                Some(signature)
            }
        }
    }
}

/// The PEM blocks of a text.
fn pem_blocks(text: &[u8]) -> Result<Vec<Pem>, KeyError> {
    let mut blocks = Vec::new();
    for block in Pem::iter_from_buffer(text) {
        match block {
            Ok(block) => blocks.push(block),
            // No further block: the rest of the text is not PEM.
            Err(x509_parser::prelude::PEMError::MissingHeader) => break,
            Err(error) => {
                return Err(KeyError::Malformed {
                    label: "PEM".to_owned(),
                    reason: error.to_string(),
                });
            }
        }
    }
    Ok(blocks)
}

/// `label`'s PEM block of `der`.
fn pem(label: &str, der: &[u8]) -> String {
    let encoded = STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

/// The DER header of a P-256 `SubjectPublicKeyInfo`, before its 65-byte point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

fn ec_spki(point: &[u8]) -> Vec<u8> {
    let mut der = P256_SPKI_PREFIX.to_vec();
    der.extend_from_slice(point);
    der
}

/// The `SubjectPublicKeyInfo` of a PKCS#1 `RSAPublicKey`.
fn rsa_spki(public: &[u8]) -> Vec<u8> {
    // SEQUENCE { OID rsaEncryption, NULL }
    const ALGORITHM: [u8; 15] = [
        0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
    ];
    let mut bits = vec![0];
    bits.extend_from_slice(public);
    let mut content = ALGORITHM.to_vec();
    content.extend(der_tlv(0x03, &bits));
    der_tlv(0x30, &content)
}

/// A DER tag-length-value.
fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn strip_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_sign_and_round_trip_through_pem() {
        let key = SigningKey::generate().unwrap();
        let signature = key.sign(b"message").unwrap();
        assert!(key.public_key().verifies(b"message", &signature));
        assert!(!key.public_key().verifies(b"other", &signature));
        let again = SigningKey::from_pem(key.to_pem().as_bytes()).unwrap();
        assert_eq!(again.public_key(), key.public_key());
        let public = VerificationKey::from_pem(key.public_key().to_pem().as_bytes()).unwrap();
        assert_eq!(public, [key.public_key().clone()]);
        // Upstream's key id: the unpadded base64url SHA-256 of the PKIX DER, 43 characters.
        assert_eq!(key.public_key().key_id().len(), 43);
        let jwk = key.public_key().jwk();
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["alg"], "ES256");
        assert_eq!(jwk["x"].as_str().unwrap().len(), 43);
    }

    /// Keys openssl made (`testdata/README.md`): kubeadm's PKCS#1 RSA `sa.key` signs RS256,
    /// a PKCS#8 P-256 key ES256, and each public key file openssl wrote is the same key, with
    /// the same key id, as the one derived from the private key.
    #[test]
    fn openssl_keys_read_as_upstream_reads_them() {
        let pairs: [(&str, &str, &str, &str); 2] = [
            (
                include_str!("testdata/rsa.key"),
                include_str!("testdata/rsa.pub"),
                "RS256",
                "RSA",
            ),
            (
                include_str!("testdata/ec.key"),
                include_str!("testdata/ec.pub"),
                "ES256",
                "EC",
            ),
        ];
        for (private, public, alg, kty) in pairs {
            let key = SigningKey::from_pem(private.as_bytes()).unwrap();
            let from_file = VerificationKey::from_pem(public.as_bytes()).unwrap();
            assert_eq!(from_file, [key.public_key().clone()], "{alg}");
            assert_eq!(key.public_key().algorithm().name(), alg);
            let signature = key.sign(b"message").unwrap();
            assert!(from_file[0].verifies(b"message", &signature), "{alg}");
            let jwk = key.public_key().jwk();
            assert_eq!(jwk["kty"], kty);
            assert_eq!(jwk["kid"], key.public_key().key_id());
            // A private key in the verification key file counts as its public half.
            let again = VerificationKey::from_pem(private.as_bytes()).unwrap();
            assert_eq!(again, from_file);
        }
        let rsa = VerificationKey::from_pem(include_str!("testdata/rsa.pub").as_bytes()).unwrap();
        assert_eq!(rsa[0].jwk()["e"], "AQAB");
    }

    #[test]
    fn texts_without_keys_are_refused_as_upstream() {
        assert_eq!(
            VerificationKey::from_pem(b"nothing")
                .unwrap_err()
                .to_string(),
            "data does not contain any valid public keys"
        );
        assert!(SigningKey::from_pem(b"").is_err());
    }
}
