//! The key `kapi serve` signs service-account tokens with when `--service-account-signing-key-file`
//! is not given: an ECDSA P-256 key made once and kept in the cert dir under kubeadm's names
//! (`sa.key`, PKCS#8, and its public half `sa.pub`, both readable by the owner only, as kubeadm
//! writes them), reused on the next start so tokens issued earlier stay valid; made again only
//! when `sa.key` is missing or unreadable. Without a cert dir the key lasts one run.

use std::path::{Path, PathBuf};

use kapi::server::{KeyError, SigningKey};

/// The private key's file in the cert dir.
pub const SA_KEY: &str = "sa.key";
/// The public key's file in the cert dir.
pub const SA_PUB: &str = "sa.pub";

/// Why the key could not be made or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceAccountKeyError {
    /// A key file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A key file given on the command line holds no usable key.
    #[error("{path}: {source}")]
    Key {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: KeyError,
    },
}

/// The key kept in `dir` (made and written when missing or unreadable), or one made for this
/// run without a dir; with whether it was made now.
pub fn ensure(dir: Option<&Path>) -> Result<(SigningKey, bool), ServiceAccountKeyError> {
    let kept = dir
        .and_then(|dir| std::fs::read(dir.join(SA_KEY)).ok())
        .and_then(|pem| SigningKey::from_pem(&pem).ok());
    if let Some(key) = kept {
        return Ok((key, false));
    }
    let key = SigningKey::generate().map_err(|source| ServiceAccountKeyError::Key {
        path: PathBuf::from(SA_KEY),
        source,
    })?;
    if let Some(dir) = dir {
        for (name, text) in [
            (SA_KEY, key.to_pem().to_owned()),
            (SA_PUB, key.public_key().to_pem()),
        ] {
            let path = dir.join(name);
            kapi::server::write_atomically(&path, &text, 0o600)
                .map_err(|source| ServiceAccountKeyError::Io { path, source })?;
        }
    }
    Ok((key, true))
}

/// The signing key of a file (`--service-account-signing-key-file`).
pub fn read_signing_key(path: &Path) -> Result<SigningKey, ServiceAccountKeyError> {
    let pem = read(path)?;
    SigningKey::from_pem(&pem).map_err(|source| ServiceAccountKeyError::Key {
        path: path.to_path_buf(),
        source,
    })
}

/// The public keys of a file (`--service-account-key-file`).
pub fn read_verification_keys(
    path: &Path,
) -> Result<Vec<kapi::server::VerificationKey>, ServiceAccountKeyError> {
    let pem = read(path)?;
    kapi::server::VerificationKey::from_pem(&pem).map_err(|source| ServiceAccountKeyError::Key {
        path: path.to_path_buf(),
        source,
    })
}

fn read(path: &Path) -> Result<Vec<u8>, ServiceAccountKeyError> {
    std::fs::read(path).map_err(|source| ServiceAccountKeyError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn the_key_is_made_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let (first, made) = ensure(Some(dir.path())).unwrap();
        assert!(made);
        for name in [SA_KEY, SA_PUB] {
            let mode = std::fs::metadata(dir.path().join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
        let (again, made) = ensure(Some(dir.path())).unwrap();
        assert!(!made);
        assert_eq!(again.public_key(), first.public_key());
        let public = read_verification_keys(&dir.path().join(SA_PUB)).unwrap();
        assert_eq!(public, [first.public_key().clone()]);
        // A broken key is made again.
        std::fs::write(dir.path().join(SA_KEY), "garbage").unwrap();
        let (remade, made) = ensure(Some(dir.path())).unwrap();
        assert!(made);
        assert_ne!(remade.public_key(), first.public_key());
    }
}
