//! Upstream's prefix transformers (`staging/src/k8s.io/apiserver/pkg/storage/value/
//! transformer.go` and `.../server/options/encryptionconfig/config.go`): the providers listed
//! for a resource, in order, each a prefix (`k8s:enc:aescbc:v1:`, ... or none for `identity`)
//! and, but for `identity`, named keys that add `<name>:` to the prefix.
//!
//! A write goes through the first provider with its first key. A read takes the first
//! provider whose prefix the stored value starts with and, within it, the first key whose
//! name follows; a provider or key that fails does not stop the next matching one from being
//! tried (two `aescbc` providers share a prefix while keys rotate), and an `identity` provider
//! that meets encrypted data passes it on. A value read through any but the first provider or
//! key is *stale*: a write of it, even unchanged, rewrites it with the first one.

use super::ciphers::Cipher;

/// The prefix every encrypted value starts with; `identity` refuses to read such a value.
pub(crate) const ENCRYPTED: &[u8] = b"k8s:enc:";

/// Why a stored value could not be read or a value could not be written; the message is
/// upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TransformError(pub(crate) String);

/// One named key of a provider.
#[derive(Debug, Clone)]
pub(crate) struct NamedKey {
    /// `<name>:`, what follows the provider's prefix.
    pub(crate) prefix: Vec<u8>,
    pub(crate) cipher: Cipher,
}

/// One provider of a resource's list.
#[derive(Debug, Clone)]
pub(crate) enum Provider {
    /// Stores values as they are; reads any value that is not encrypted.
    Identity,
    /// A cipher provider: its prefix, its keys (the first encrypts), and the error upstream
    /// gives when no key name matches.
    Keyed {
        prefix: &'static str,
        keys: Vec<NamedKey>,
        no_key: &'static str,
    },
}

/// The providers of one resource, in the configuration's order.
#[derive(Debug, Clone)]
pub(crate) struct Transformer {
    pub(crate) providers: Vec<Provider>,
}

/// A value read back: the plain bytes and whether they should be written again.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) plain: Vec<u8>,
    pub(crate) stale: bool,
}

/// The identity transformer's check (`identity.NewEncryptCheckTransformer`), also what reads
/// a resource that no rule lists.
pub(crate) fn check_not_encrypted(stored: &[u8]) -> Result<(), TransformError> {
    if stored.starts_with(ENCRYPTED) {
        return Err(TransformError(
            "identity transformer tried to read encrypted data".into(),
        ));
    }
    Ok(())
}

/// Go's `utilerrors.NewAggregate(errs).Error()` for one or more messages: the message alone,
/// or `[a, b]` (duplicates dropped).
fn aggregate(mut errors: Vec<String>) -> String {
    let mut seen = std::collections::HashSet::new();
    errors.retain(|e| seen.insert(e.clone()));
    if errors.len() == 1 {
        errors.pop().unwrap_or_default()
    } else {
        format!("[{}]", errors.join(", "))
    }
}

impl Transformer {
    /// Whether a write stores the value as it is (the first provider is `identity`).
    pub(crate) fn writes_plain(&self) -> bool {
        matches!(self.providers.first(), Some(Provider::Identity) | None)
    }

    /// The stored form of `plain` under `key`: the first provider's prefix and first key's
    /// name, then its cipher's output.
    pub(crate) fn write(&self, plain: &[u8], key: &str) -> Result<Vec<u8>, TransformError> {
        match self.providers.first() {
            None | Some(Provider::Identity) => Ok(plain.to_vec()),
            Some(Provider::Keyed { prefix, keys, .. }) => {
                let Some(first) = keys.first() else {
                    return Err(TransformError("aes provider has no valid keys".into()));
                };
                let mut out =
                    Vec::with_capacity(prefix.len() + first.prefix.len() + plain.len() + 64);
                out.extend_from_slice(prefix.as_bytes());
                out.extend_from_slice(&first.prefix);
                first
                    .cipher
                    .seal(plain, key, &mut out)
                    .map_err(|e| TransformError(e.0))?;
                Ok(out)
            }
        }
    }

    /// The plain form of `stored`, read under `key`.
    pub(crate) fn read(&self, stored: &[u8], key: &str) -> Result<Opened, TransformError> {
        let mut errors = Vec::new();
        for (i, provider) in self.providers.iter().enumerate() {
            match provider {
                Provider::Identity => {
                    // An encrypted value is for a later provider, not an error here.
                    if check_not_encrypted(stored).is_ok() {
                        return Ok(Opened {
                            plain: stored.to_vec(),
                            stale: i != 0,
                        });
                    }
                }
                Provider::Keyed {
                    prefix,
                    keys,
                    no_key,
                } => {
                    let Some(rest) = stored.strip_prefix(prefix.as_bytes()) else {
                        continue;
                    };
                    match open_with_keys(keys, no_key, rest, key) {
                        Ok((plain, key_index)) => {
                            return Ok(Opened {
                                plain,
                                stale: i != 0 || key_index != 0,
                            });
                        }
                        Err(e) => errors.push(e),
                    }
                }
            }
        }
        if errors.is_empty() {
            return Err(TransformError("no matching prefix found".into()));
        }
        Err(TransformError(aggregate(errors)))
    }
}

/// The keys' own prefix transformer: the first key whose `<name>:` the value starts with and
/// that opens it, with its index.
fn open_with_keys(
    keys: &[NamedKey],
    no_key: &str,
    rest: &[u8],
    key: &str,
) -> Result<(Vec<u8>, usize), String> {
    let mut errors = Vec::new();
    for (j, named) in keys.iter().enumerate() {
        let Some(sealed) = rest.strip_prefix(named.prefix.as_slice()) else {
            continue;
        };
        match named.cipher.open(sealed, key) {
            Ok(plain) => return Ok((plain, j)),
            Err(e) => errors.push(e.0),
        }
    }
    if errors.is_empty() {
        return Err(no_key.to_owned());
    }
    Err(aggregate(errors))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    const KEY: &str = "/registry/core/secrets/default/s";

    fn keyed(prefix: &'static str, keys: &[(&str, u8)]) -> Provider {
        let keys = keys
            .iter()
            .map(|(name, fill)| NamedKey {
                prefix: format!("{name}:").into_bytes(),
                cipher: if prefix.contains("secretbox") {
                    Cipher::secretbox(&[*fill; 32]).unwrap()
                } else if prefix.contains("aesgcm") {
                    Cipher::aes_gcm(&[*fill; 32]).unwrap()
                } else {
                    Cipher::aes_cbc(&[*fill; 32]).unwrap()
                },
            })
            .collect();
        Provider::Keyed {
            prefix,
            keys,
            no_key: "no matching key was found for the provided AES transformer",
        }
    }

    fn of(providers: Vec<Provider>) -> Transformer {
        Transformer { providers }
    }

    const CBC: &str = "k8s:enc:aescbc:v1:";
    const GCM: &str = "k8s:enc:aesgcm:v1:";

    #[test]
    fn writes_carry_the_first_providers_prefix_and_key_name() {
        let t = of(vec![
            keyed(CBC, &[("key2", 2), ("key1", 1)]),
            Provider::Identity,
        ]);
        let stored = t.write(b"{}", KEY).unwrap();
        assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key2:"));
        let read = t.read(&stored, KEY).unwrap();
        assert_eq!(read.plain, b"{}");
        assert!(!read.stale);
        // identity first stores the value as it is.
        let plain = of(vec![Provider::Identity, keyed(CBC, &[("key1", 1)])]);
        assert_eq!(plain.write(b"{}", KEY).unwrap(), b"{}");
    }

    #[test]
    fn reads_through_later_providers_and_keys_are_stale() {
        // prefixTransformers.TransformFromStorage: stale unless the first one read it.
        let old = of(vec![keyed(CBC, &[("key1", 1)])]);
        let stored = old.write(b"{}", KEY).unwrap();
        let rotated = of(vec![keyed(CBC, &[("key2", 2), ("key1", 1)])]);
        let read = rotated.read(&stored, KEY).unwrap();
        assert_eq!((read.plain.as_slice(), read.stale), (&b"{}"[..], true));
        // Another provider, and identity reading plain data while it is not first.
        let moved = of(vec![keyed(GCM, &[("k", 3)]), keyed(CBC, &[("key1", 1)])]);
        assert!(moved.read(&stored, KEY).unwrap().stale);
        let plain_later = of(vec![keyed(CBC, &[("key1", 1)]), Provider::Identity]);
        let read = plain_later.read(b"{\"a\":1}", KEY).unwrap();
        assert_eq!(
            (read.plain.as_slice(), read.stale),
            (&b"{\"a\":1}"[..], true)
        );
        // Turning encryption off: identity first still reads encrypted values, stale.
        let off = of(vec![Provider::Identity, keyed(CBC, &[("key1", 1)])]);
        let read = off.read(&stored, KEY).unwrap();
        assert_eq!((read.plain.as_slice(), read.stale), (&b"{}"[..], true));
        assert!(!off.read(b"{}", KEY).unwrap().stale);
    }

    #[test]
    fn two_providers_sharing_a_prefix_are_both_tried() {
        // Same provider, same key name, different secrets: the second opens it.
        let stored = of(vec![keyed(GCM, &[("k", 1)])]).write(b"{}", KEY).unwrap();
        let both = of(vec![keyed(GCM, &[("k", 2)]), keyed(GCM, &[("k", 1)])]);
        let read = both.read(&stored, KEY).unwrap();
        assert_eq!((read.plain.as_slice(), read.stale), (&b"{}"[..], true));
    }

    #[test]
    fn unreadable_values_get_upstreams_errors() {
        let encrypted = of(vec![keyed(CBC, &[("key1", 1)])]);
        // A plain value without identity listed.
        assert_eq!(
            encrypted.read(b"{}", KEY).unwrap_err().0,
            "no matching prefix found"
        );
        // An unknown key name.
        let other = of(vec![keyed(CBC, &[("other", 1)])]);
        let stored = encrypted.write(b"{}", KEY).unwrap();
        assert_eq!(
            other.read(&stored, KEY).unwrap_err().0,
            "no matching key was found for the provided AES transformer"
        );
        // Two failures are aggregated as Go's errors.NewAggregate writes them.
        let stored = of(vec![keyed(GCM, &[("k", 1)])]).write(b"{}", KEY).unwrap();
        let wrong = of(vec![keyed(GCM, &[("k", 2)]), keyed(GCM, &[("x", 3)])]);
        assert_eq!(
            wrong.read(&stored, KEY).unwrap_err().0,
            "[cipher: message authentication failed, no matching key was found for the provided AES transformer]"
        );
        // identity alone refuses encrypted data (identity.go).
        assert_eq!(
            check_not_encrypted(&stored).unwrap_err().0,
            "identity transformer tried to read encrypted data"
        );
        assert_eq!(
            of(vec![Provider::Identity])
                .read(&stored, KEY)
                .unwrap_err()
                .0,
            "no matching prefix found"
        );
    }
}
