//! The three ciphers of upstream's EncryptionConfiguration, one key each, laid out in storage
//! byte for byte as kube-apiserver lays them out (`staging/src/k8s.io/apiserver/pkg/storage/
//! value/encrypt/aes/aes.go` and `.../secretbox/secretbox.go`):
//!
//! - `aescbc`: a random 16-byte IV, then the value padded with PKCS#7 and encrypted with AES in
//!   CBC mode. No authentication: a tampered value decrypts to garbage or fails its padding.
//! - `aesgcm`: a random 12-byte nonce, then the AES-GCM ciphertext with its 16-byte tag. The
//!   authenticated data is the value's storage key (upstream's `authenticatedDataString`), so
//!   a value copied under another key does not decrypt.
//! - `secretbox`: a random 24-byte nonce, then NaCl's secretbox (XSalsa20-Poly1305): the
//!   16-byte Poly1305 tag, then the ciphertext. No authenticated data, as upstream.
//!
//! The errors read as upstream's (Go's `cipher: message authentication failed` for GCM).

use aes::cipher::block_padding::NoPadding;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, InnerIvInit, KeyInit};
use aes_gcm::aead::AeadInPlace;
use aes_gcm::aead::consts::U12;
use aes_gcm::{AesGcm, Nonce};
use crypto_secretbox::XSalsa20Poly1305;

/// AES's block size, also the CBC IV's length.
const BLOCK: usize = 16;
/// AES-GCM's nonce length (upstream refuses any other).
const GCM_NONCE: usize = 12;
/// AES-GCM's and secretbox's tag length.
const TAG: usize = 16;
/// Secretbox's nonce length.
const SECRETBOX_NONCE: usize = 24;

/// Why a value could not be encrypted or decrypted; the message is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CipherError(pub(crate) String);

impl CipherError {
    fn short() -> Self {
        Self("the stored data was shorter than the required size".into())
    }
}

/// One AES key of 16, 24 or 32 bytes.
#[derive(Clone)]
enum AesKey {
    A128(aes::Aes128),
    A192(aes::Aes192),
    A256(aes::Aes256),
}

/// The AES key lengths upstream accepts (`aes.NewCipher`).
pub(crate) const AES_KEY_SIZES: [usize; 3] = [16, 24, 32];
/// The secretbox key length.
pub(crate) const SECRETBOX_KEY_SIZES: [usize; 1] = [32];

/// One key of one provider, ready to encrypt and decrypt.
#[derive(Clone)]
pub(crate) enum Cipher {
    /// `aescbc`.
    AesCbc(Box<AesCbc>),
    /// `aesgcm`.
    AesGcm(AesGcmKey),
    /// `secretbox`.
    Secretbox(Box<XSalsa20Poly1305>),
}

impl std::fmt::Debug for Cipher {
    // Never the key material.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::AesCbc(_) => "AesCbc",
            Self::AesGcm(_) => "AesGcm",
            Self::Secretbox(_) => "Secretbox",
        })
    }
}

/// AES in CBC mode with one key.
#[derive(Clone)]
pub(crate) struct AesCbc {
    key: AesKey,
}

/// AES-GCM with one key.
#[derive(Clone)]
pub(crate) enum AesGcmKey {
    A128(Box<AesGcm<aes::Aes128, U12>>),
    A192(Box<AesGcm<aes::Aes192, U12>>),
    A256(Box<AesGcm<aes::Aes256, U12>>),
}

/// Random bytes from the operating system.
fn random(buf: &mut [u8]) -> Result<(), CipherError> {
    getrandom::fill(buf).map_err(|_| CipherError("unable to read sufficient random bytes".into()))
}

impl Cipher {
    /// An `aescbc` key; `None` unless it is 16, 24 or 32 bytes.
    pub(crate) fn aes_cbc(secret: &[u8]) -> Option<Self> {
        let key = match secret.len() {
            16 => AesKey::A128(aes::Aes128::new_from_slice(secret).ok()?),
            24 => AesKey::A192(aes::Aes192::new_from_slice(secret).ok()?),
            32 => AesKey::A256(aes::Aes256::new_from_slice(secret).ok()?),
            _ => return None,
        };
        Some(Self::AesCbc(Box::new(AesCbc { key })))
    }

    /// An `aesgcm` key; `None` unless it is 16, 24 or 32 bytes.
    pub(crate) fn aes_gcm(secret: &[u8]) -> Option<Self> {
        let key = match secret.len() {
            16 => AesGcmKey::A128(Box::new(AesGcm::new_from_slice(secret).ok()?)),
            24 => AesGcmKey::A192(Box::new(AesGcm::new_from_slice(secret).ok()?)),
            32 => AesGcmKey::A256(Box::new(AesGcm::new_from_slice(secret).ok()?)),
            _ => return None,
        };
        Some(Self::AesGcm(key))
    }

    /// A `secretbox` key; `None` unless it is 32 bytes.
    pub(crate) fn secretbox(secret: &[u8]) -> Option<Self> {
        let cipher = XSalsa20Poly1305::new_from_slice(secret).ok()?;
        Some(Self::Secretbox(Box::new(cipher)))
    }

    /// Encrypts `plain` for storage under `key`, appending the result to `out`.
    pub(crate) fn seal(
        &self,
        plain: &[u8],
        key: &str,
        out: &mut Vec<u8>,
    ) -> Result<(), CipherError> {
        match self {
            Self::AesCbc(cbc) => {
                let mut iv = [0u8; BLOCK];
                random(&mut iv)?;
                cbc.seal_with_iv(plain, &iv, out);
                Ok(())
            }
            Self::AesGcm(gcm) => {
                let mut nonce = [0u8; GCM_NONCE];
                random(&mut nonce)?;
                gcm.seal_with_nonce(plain, &nonce, key.as_bytes(), out)
            }
            Self::Secretbox(cipher) => {
                let mut nonce = [0u8; SECRETBOX_NONCE];
                random(&mut nonce)?;
                secretbox_seal(cipher, plain, &nonce, out)
            }
        }
    }

    /// Decrypts `stored` (what [`Cipher::seal`] wrote, after the prefixes), stored under `key`.
    pub(crate) fn open(&self, stored: &[u8], key: &str) -> Result<Vec<u8>, CipherError> {
        match self {
            Self::AesCbc(cbc) => cbc.open(stored),
            Self::AesGcm(gcm) => gcm.open(stored, key.as_bytes()),
            Self::Secretbox(cipher) => secretbox_open(cipher, stored),
        }
    }
}

impl AesCbc {
    /// IV, then `plain` with PKCS#7 padding (1 to 16 bytes of the pad length) encrypted.
    pub(crate) fn seal_with_iv(&self, plain: &[u8], iv: &[u8; BLOCK], out: &mut Vec<u8>) {
        let pad = BLOCK - plain.len() % BLOCK;
        let start = out.len();
        out.extend_from_slice(iv);
        out.extend_from_slice(plain);
        // `pad` is 1..=16, so it fits a byte.
        out.extend(std::iter::repeat_n(pad as u8, pad));
        let body = &mut out[start + BLOCK..];
        let len = body.len();
        // The body is a whole number of blocks, which is all NoPadding needs.
        let _ = match &self.key {
            AesKey::A128(k) => cbc::Encryptor::inner_iv_init(k.clone(), iv.into())
                .encrypt_padded_mut::<NoPadding>(body, len)
                .map(|_| ()),
            AesKey::A192(k) => cbc::Encryptor::inner_iv_init(k.clone(), iv.into())
                .encrypt_padded_mut::<NoPadding>(body, len)
                .map(|_| ()),
            AesKey::A256(k) => cbc::Encryptor::inner_iv_init(k.clone(), iv.into())
                .encrypt_padded_mut::<NoPadding>(body, len)
                .map(|_| ()),
        };
    }

    fn open(&self, stored: &[u8]) -> Result<Vec<u8>, CipherError> {
        if stored.len() < BLOCK {
            return Err(CipherError::short());
        }
        let (iv, body) = stored.split_at(BLOCK);
        if body.len() % BLOCK != 0 {
            return Err(CipherError(
                "the stored data is not a multiple of the block size".into(),
            ));
        }
        let mut plain = body.to_vec();
        let iv: &[u8; BLOCK] = iv.try_into().map_err(|_| CipherError::short())?;
        let decrypted = match &self.key {
            AesKey::A128(k) => cbc::Decryptor::inner_iv_init(k.clone(), iv.into())
                .decrypt_padded_mut::<NoPadding>(&mut plain)
                .map(|_| ()),
            AesKey::A192(k) => cbc::Decryptor::inner_iv_init(k.clone(), iv.into())
                .decrypt_padded_mut::<NoPadding>(&mut plain)
                .map(|_| ()),
            AesKey::A256(k) => cbc::Decryptor::inner_iv_init(k.clone(), iv.into())
                .decrypt_padded_mut::<NoPadding>(&mut plain)
                .map(|_| ()),
        };
        decrypted.map_err(|_| {
            CipherError("the stored data is not a multiple of the block size".into())
        })?;
        // Upstream's PKCS#7 check; an empty body has no padding byte at all.
        let invalid = || CipherError("invalid PKCS7 data (empty or not padded)".into());
        let pad = *plain.last().ok_or_else(invalid)?;
        let size = usize::from(pad);
        if size == 0 || size > plain.len() {
            return Err(invalid());
        }
        let keep = plain.len() - size;
        if plain[keep..].iter().any(|&b| b != pad) {
            return Err(CipherError("invalid padding on input".into()));
        }
        plain.truncate(keep);
        Ok(plain)
    }
}

/// Go's error for a GCM value that fails its tag.
fn gcm_failed() -> CipherError {
    CipherError("cipher: message authentication failed".into())
}

impl AesGcmKey {
    /// Nonce, then the ciphertext and its tag, authenticated with `aad`.
    pub(crate) fn seal_with_nonce(
        &self,
        plain: &[u8],
        nonce: &[u8; GCM_NONCE],
        aad: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), CipherError> {
        out.extend_from_slice(nonce);
        let start = out.len();
        out.extend_from_slice(plain);
        let nonce = Nonce::<U12>::from_slice(nonce);
        let body = &mut out[start..];
        let tag = match self {
            Self::A128(c) => c.encrypt_in_place_detached(nonce, aad, body),
            Self::A192(c) => c.encrypt_in_place_detached(nonce, aad, body),
            Self::A256(c) => c.encrypt_in_place_detached(nonce, aad, body),
        }
        .map_err(|_| CipherError("failed to encrypt with AES-GCM".into()))?;
        out.extend_from_slice(&tag);
        Ok(())
    }

    fn open(&self, stored: &[u8], aad: &[u8]) -> Result<Vec<u8>, CipherError> {
        if stored.len() < GCM_NONCE {
            return Err(CipherError::short());
        }
        let (nonce, sealed) = stored.split_at(GCM_NONCE);
        if sealed.len() < TAG {
            return Err(gcm_failed());
        }
        let (body, tag) = sealed.split_at(sealed.len() - TAG);
        let nonce = Nonce::<U12>::from_slice(nonce);
        let tag = aes_gcm::Tag::from_slice(tag);
        let mut plain = body.to_vec();
        match self {
            Self::A128(c) => c.decrypt_in_place_detached(nonce, aad, &mut plain, tag),
            Self::A192(c) => c.decrypt_in_place_detached(nonce, aad, &mut plain, tag),
            Self::A256(c) => c.decrypt_in_place_detached(nonce, aad, &mut plain, tag),
        }
        .map_err(|_| gcm_failed())?;
        Ok(plain)
    }
}

/// Nonce, then NaCl's box: the tag, then the ciphertext.
pub(crate) fn secretbox_seal(
    cipher: &XSalsa20Poly1305,
    plain: &[u8],
    nonce: &[u8; SECRETBOX_NONCE],
    out: &mut Vec<u8>,
) -> Result<(), CipherError> {
    out.extend_from_slice(nonce);
    let tag_at = out.len();
    out.extend_from_slice(&[0u8; TAG]);
    let start = out.len();
    out.extend_from_slice(plain);
    let tag = cipher
        .encrypt_in_place_detached(nonce.into(), b"", &mut out[start..])
        .map_err(|_| CipherError("failed to encrypt with secretbox".into()))?;
    out[tag_at..start].copy_from_slice(&tag);
    Ok(())
}

fn secretbox_open(cipher: &XSalsa20Poly1305, stored: &[u8]) -> Result<Vec<u8>, CipherError> {
    if stored.len() < TAG + SECRETBOX_NONCE {
        return Err(CipherError::short());
    }
    let (nonce, sealed) = stored.split_at(SECRETBOX_NONCE);
    let (tag, body) = sealed.split_at(TAG);
    let mut plain = body.to_vec();
    let nonce: &[u8; SECRETBOX_NONCE] = nonce.try_into().map_err(|_| CipherError::short())?;
    cipher
        .decrypt_in_place_detached(nonce.into(), b"", &mut plain, tag.into())
        // Upstream's message for a box that fails to open, however odd.
        .map_err(|_| CipherError("output array was not large enough for encryption".into()))?;
    Ok(plain)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use aes_gcm::aead::{Aead, Payload};

    use super::*;

    const KEY: &str = "/registry/core/secrets/default/s";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn key32() -> Vec<u8> {
        (0u8..32).collect()
    }

    #[test]
    fn every_cipher_and_key_size_round_trips() {
        let plain = br#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}"#;
        let mut ciphers = Vec::new();
        for size in AES_KEY_SIZES {
            let secret: Vec<u8> = (0..size as u8).collect();
            ciphers.push(Cipher::aes_cbc(&secret).unwrap());
            ciphers.push(Cipher::aes_gcm(&secret).unwrap());
        }
        ciphers.push(Cipher::secretbox(&key32()).unwrap());
        for cipher in ciphers {
            for plain in [&plain[..], b"", b"exactly sixteen!"] {
                let mut sealed = Vec::new();
                cipher.seal(plain, KEY, &mut sealed).unwrap();
                assert!(
                    !sealed.windows(8).any(|w| w == b"password"),
                    "{cipher:?} leaves the plain text"
                );
                assert_eq!(cipher.open(&sealed, KEY).unwrap(), plain, "{cipher:?}");
                // A random IV or nonce: the same value encrypts differently each time.
                let mut again = Vec::new();
                cipher.seal(plain, KEY, &mut again).unwrap();
                assert_ne!(sealed, again, "{cipher:?}");
            }
        }
    }

    #[test]
    fn key_lengths_are_upstreams() {
        // aes.NewCipher takes 16, 24 or 32 bytes; secretbox 32 (validation_encryption.go).
        for size in [0, 8, 15, 17, 31, 33, 64] {
            let secret = vec![7u8; size];
            assert!(Cipher::aes_cbc(&secret).is_none(), "{size}");
            assert!(Cipher::aes_gcm(&secret).is_none(), "{size}");
        }
        assert!(Cipher::secretbox(&[7u8; 16]).is_none());
        assert!(Cipher::secretbox(&[7u8; 24]).is_none());
    }

    /// aescbc: IV, then AES-CBC with PKCS#7 padding (aes.go's cbc.TransformToStorage); the
    /// expected bytes are `openssl enc -aes-256-cbc` of the same key, IV and value.
    #[test]
    fn aescbc_layout_is_iv_then_pkcs7_cbc() {
        let Some(Cipher::AesCbc(cbc)) = Cipher::aes_cbc(&key32()) else {
            panic!("aescbc key");
        };
        let iv: [u8; 16] = std::array::from_fn(|i| 100 + i as u8);
        let mut out = Vec::new();
        cbc.seal_with_iv(br#"{"kind":"Secret"}"#, &iv, &mut out);
        assert_eq!(
            hex(&out),
            format!(
                "{}{}",
                hex(&iv),
                "44283a8a80a45cba29966b60a5c5bdab4a4b98a357c1999c0391ccbce1378672"
            )
        );
    }

    /// aesgcm: the 12-byte nonce, then Go's `Seal` output (ciphertext, then tag), with the
    /// storage key as the authenticated data (aes.go's gcm.TransformToStorage).
    #[test]
    fn aesgcm_layout_is_nonce_then_sealed_with_the_key_as_aad() {
        let Some(Cipher::AesGcm(gcm)) = Cipher::aes_gcm(&key32()) else {
            panic!("aesgcm key");
        };
        let nonce = [9u8; 12];
        let mut out = Vec::new();
        gcm.seal_with_nonce(b"value", &nonce, KEY.as_bytes(), &mut out)
            .unwrap();
        assert_eq!(out.len(), 12 + 5 + 16);
        assert_eq!(out[..12], nonce);
        let reference = aes_gcm::Aes256Gcm::new_from_slice(&key32()).unwrap();
        let payload = Payload {
            msg: &out[12..],
            aad: KEY.as_bytes(),
        };
        assert_eq!(
            reference
                .decrypt(Nonce::from_slice(&nonce), payload)
                .unwrap(),
            b"value"
        );
    }

    /// secretbox: the 24-byte nonce, then NaCl's box, tag first (secretbox.go).
    #[test]
    fn secretbox_layout_is_nonce_then_nacl_box() {
        let cipher = XSalsa20Poly1305::new_from_slice(&key32()).unwrap();
        let nonce = [5u8; 24];
        let mut out = Vec::new();
        secretbox_seal(&cipher, b"value", &nonce, &mut out).unwrap();
        // The crate's `encrypt` writes NaCl's layout (tag, then ciphertext).
        let nacl = cipher.encrypt((&nonce).into(), &b"value"[..]).unwrap();
        assert_eq!(out[..24], nonce);
        assert_eq!(out[24..], nacl[..]);
    }

    #[test]
    fn tampered_values_fail_aesgcm_and_secretbox() {
        for cipher in [
            Cipher::aes_gcm(&key32()).unwrap(),
            Cipher::secretbox(&key32()).unwrap(),
        ] {
            let mut sealed = Vec::new();
            cipher.seal(b"some value", KEY, &mut sealed).unwrap();
            for at in [0, sealed.len() / 2, sealed.len() - 1] {
                let mut tampered = sealed.clone();
                tampered[at] ^= 1;
                assert!(cipher.open(&tampered, KEY).is_err(), "{cipher:?} at {at}");
            }
        }
        // aesgcm authenticates the key: a value copied under another key does not read.
        let gcm = Cipher::aes_gcm(&key32()).unwrap();
        let mut sealed = Vec::new();
        gcm.seal(b"v", KEY, &mut sealed).unwrap();
        assert_eq!(
            gcm.open(&sealed, "/registry/core/secrets/default/other")
                .unwrap_err()
                .to_string(),
            "cipher: message authentication failed"
        );
    }

    #[test]
    fn wrong_keys_do_not_open() {
        let other = [1u8; 32];
        let mut sealed = Vec::new();
        let gcm = Cipher::aes_gcm(&key32()).unwrap();
        gcm.seal(b"value", KEY, &mut sealed).unwrap();
        assert_eq!(
            Cipher::aes_gcm(&other)
                .unwrap()
                .open(&sealed, KEY)
                .unwrap_err()
                .to_string(),
            "cipher: message authentication failed"
        );
        let sb = Cipher::secretbox(&key32()).unwrap();
        let mut sealed = Vec::new();
        sb.seal(b"value", KEY, &mut sealed).unwrap();
        assert_eq!(
            Cipher::secretbox(&other)
                .unwrap()
                .open(&sealed, KEY)
                .unwrap_err()
                .to_string(),
            "output array was not large enough for encryption"
        );
        // aescbc has no tag: a wrong key shows as bad padding (with this IV and value).
        let Some(Cipher::AesCbc(cbc)) = Cipher::aes_cbc(&key32()) else {
            panic!("aescbc key");
        };
        let mut sealed = Vec::new();
        cbc.seal_with_iv(b"value", &[3u8; 16], &mut sealed);
        let error = Cipher::aes_cbc(&other)
            .unwrap()
            .open(&sealed, KEY)
            .unwrap_err();
        assert!(
            [
                "invalid padding on input",
                "invalid PKCS7 data (empty or not padded)"
            ]
            .contains(&error.to_string().as_str()),
            "{error}"
        );
    }

    /// Short and misshapen values get aes.go's and secretbox.go's errors, never a panic.
    #[test]
    fn short_values_are_refused_with_upstreams_messages() {
        let short = "the stored data was shorter than the required size";
        let cbc = Cipher::aes_cbc(&key32()).unwrap();
        let gcm = Cipher::aes_gcm(&key32()).unwrap();
        let sb = Cipher::secretbox(&key32()).unwrap();
        assert_eq!(cbc.open(&[0; 15], KEY).unwrap_err().to_string(), short);
        assert_eq!(
            cbc.open(&[0; 16], KEY).unwrap_err().to_string(),
            "invalid PKCS7 data (empty or not padded)"
        );
        assert_eq!(
            cbc.open(&[0; 20], KEY).unwrap_err().to_string(),
            "the stored data is not a multiple of the block size"
        );
        assert_eq!(gcm.open(&[0; 11], KEY).unwrap_err().to_string(), short);
        assert_eq!(
            gcm.open(&[0; 20], KEY).unwrap_err().to_string(),
            "cipher: message authentication failed"
        );
        assert_eq!(sb.open(&[0; 39], KEY).unwrap_err().to_string(), short);
    }
}
