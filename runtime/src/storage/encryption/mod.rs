//! Encryption at rest, as kube-apiserver's `--encryption-provider-config`: upstream's
//! `EncryptionConfiguration` file names resources (`secrets`, `configmaps`, `*.apps`, `*.`,
//! `*.*`, custom resources as `<plural>.<group>`) and, for each, an ordered list of providers
//! (`aescbc`, `aesgcm`, `secretbox` with base64 keys, or `identity`). The first provider
//! encrypts every write; every provider can read, so keys rotate by adding the new key first,
//! rewriting the objects, and dropping the old key; and encryption is turned off by listing
//! `identity` first.
//!
//! - `config`: the file, its validation with upstream's messages, and the rules built from it
//!   ([`EncryptionConfig`]);
//! - `ciphers`: the three ciphers, with upstream's byte layouts;
//! - `transformer`: upstream's prefix transformers (`k8s:enc:<provider>:v1:<key name>:`),
//!   which provider and key reads a value, and staleness;
//! - `storage`: [`EncryptedStorage`], the [`Storage`](crate::storage::Storage) wrapper that
//!   applies them below the server, so the engine (the embedded store's file, etcd) only ever
//!   holds the encrypted values.

mod ciphers;
mod config;
mod storage;
mod transformer;

pub use ciphers::CipherError;
pub use config::{ConfigError, EncryptionConfig};
pub use storage::EncryptedStorage;
#[cfg(test)]
pub(crate) use storage::resource_of;
pub use transformer::TransformError;
