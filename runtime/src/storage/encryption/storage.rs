//! [`EncryptedStorage`]: a [`Storage`] over another that encrypts the values of the resources
//! an [`EncryptionConfig`] lists before they reach the engine and decrypts them on the way
//! back, as kube-apiserver's etcd3 store calls its transformer
//! (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`): the storage key is the
//! authenticated data (`authenticatedDataString`), a failed read is an internal error naming
//! the key in lists, and a value read through an older provider or key is reported stale.
//!
//! Keys are the server's (`/registry/<group, "core" for the core group>/<plural>/...`, see
//! `server::state::keys`), so built-ins and custom resources alike are matched by group and
//! plural. Every value the engine holds (current, history kept for watches and old reads)
//! went through [`Storage::create`] or [`Storage::update`] here, so none is plain text.

use std::sync::Arc;

use futures_util::StreamExt as _;

use super::config::EncryptionConfig;
use super::transformer::{Transformer, check_not_encrypted};
use crate::storage::{
    BoxFuture, Bytes, CompactError, CreateError, DeleteError, Deleted, Guard, KeyValue, ListResult,
    ReadError, Storage, UpdateError, WatchError, WatchEvent, WatchStream,
};

/// The root of the server's keys.
const ROOT: &str = "/registry/";

/// A store whose listed resources' values are encrypted at rest.
#[derive(Debug, Clone)]
pub struct EncryptedStorage {
    inner: Arc<dyn Storage>,
    config: Arc<EncryptionConfig>,
}

/// The group ("" for core) and resource a server key belongs to.
pub(crate) fn resource_of(key: &str) -> Option<(&str, &str)> {
    let mut parts = key.strip_prefix(ROOT)?.splitn(3, '/');
    let group = parts.next()?;
    let resource = parts.next()?;
    let group = if group == "core" { "" } else { group };
    Some((group, resource))
}

impl EncryptedStorage {
    /// `inner` with the values of `config`'s resources encrypted.
    pub fn new(inner: Arc<dyn Storage>, config: EncryptionConfig) -> Self {
        Self {
            inner,
            config: Arc::new(config),
        }
    }

    /// A create, guarded or not: the value sealed on the way down, the answer opened.
    async fn create_with(
        &self,
        key: &str,
        value: Bytes,
        guard: Option<&Guard>,
    ) -> Result<KeyValue, CreateError> {
        let values = Values::of(&self.config, key);
        let stored = values
            .seal(key, value.clone())
            .map_err(CreateError::Internal)?;
        let created = match guard {
            Some(guard) => self.inner.create_guarded(key, stored, guard).await,
            None => self.inner.create(key, stored).await,
        };
        match created {
            Ok(kv) => Ok(KeyValue { value, ..kv }),
            Err(CreateError::AlreadyExists { current }) => Err(CreateError::AlreadyExists {
                current: values.open_kv(current).map_err(CreateError::Internal)?,
            }),
            Err(e) => Err(e),
        }
    }

    /// The store underneath, which holds the encrypted values.
    pub fn inner(&self) -> &Arc<dyn Storage> {
        &self.inner
    }
}

/// What reading and writing one key does: its resource's providers, or none.
struct Values<'c> {
    transformer: Option<&'c Arc<Transformer>>,
}

impl<'c> Values<'c> {
    fn of(config: &'c EncryptionConfig, key: &str) -> Self {
        let transformer = resource_of(key).and_then(|(g, r)| config.transformer(g, r));
        Self { transformer }
    }

    /// The stored form of `value`.
    fn seal(&self, key: &str, value: Bytes) -> Result<Bytes, String> {
        match self.transformer {
            Some(t) if !t.writes_plain() => t.write(&value, key).map(Bytes::from).map_err(|e| e.0),
            _ => Ok(value),
        }
    }

    /// The plain form of a stored value, and whether it is stale.
    fn open(&self, key: &str, value: Bytes) -> Result<(Bytes, bool), String> {
        match self.transformer {
            None => {
                check_not_encrypted(&value).map_err(|e| e.0)?;
                Ok((value, false))
            }
            Some(t) => {
                // The common case of a plain provider first, on a plain value: no copy.
                if t.writes_plain() && check_not_encrypted(&value).is_ok() {
                    return Ok((value, false));
                }
                let read = t.read(&value, key).map_err(|e| e.0)?;
                Ok((Bytes::from(read.plain), read.stale))
            }
        }
    }

    fn open_kv(&self, mut kv: KeyValue) -> Result<KeyValue, String> {
        self.open_in_place(&mut kv)?;
        Ok(kv)
    }

    fn open_in_place(&self, kv: &mut KeyValue) -> Result<(), String> {
        kv.value = self.open(&kv.key, std::mem::take(&mut kv.value))?.0;
        Ok(())
    }
}

/// A stored key-value read back in place, or the error upstream's store gives (the key is
/// left for the caller's message).
fn open_kv(config: &EncryptionConfig, kv: &mut KeyValue) -> Result<(), String> {
    Values::of(config, &kv.key).open_in_place(kv)
}

/// The error of a list item that did not decrypt (upstream's `GetList`).
fn list_error(key: &str, error: &str) -> ReadError {
    ReadError::Unreadable(format!(
        "unable to transform key {}: {error}",
        serde_json::Value::from(key)
    ))
}

/// One watch event with its values decrypted.
fn open_event(config: &EncryptionConfig, mut event: WatchEvent) -> Result<WatchEvent, WatchError> {
    let failed = |key: &str, e: String| WatchError::Internal(list_error(key, &e).to_string());
    match &mut event {
        WatchEvent::Put { kv, prev } => {
            open_kv(config, kv).map_err(|e| failed(&kv.key, e))?;
            if let Some(prev) = prev {
                open_kv(config, prev).map_err(|e| failed(&prev.key, e))?;
            }
        }
        // A watch without previous values may send the key alone.
        WatchEvent::Delete { prev, .. } if prev.value.is_empty() && prev.mod_revision == 0 => {}
        WatchEvent::Delete { prev, .. } => {
            open_kv(config, prev).map_err(|e| failed(&prev.key, e))?;
        }
        WatchEvent::Progress { .. } => {}
    }
    Ok(event)
}

/// `stream` with every event decrypted, ending after the first error.
fn open_stream(config: Arc<EncryptionConfig>, stream: WatchStream) -> WatchStream {
    let opened = stream
        .map(move |item| item.and_then(|event| open_event(&config, event)))
        .scan(false, |failed, item| {
            let next = if *failed {
                None
            } else {
                *failed = item.is_err();
                Some(item)
            };
            std::future::ready(next)
        });
    WatchStream::new(opened)
}

impl Storage for EncryptedStorage {
    fn get<'a>(
        &'a self,
        key: &'a str,
        at_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>> {
        Box::pin(async move {
            match self.inner.get(key, at_revision).await? {
                None => Ok(None),
                Some(mut kv) => {
                    open_kv(&self.config, &mut kv).map_err(ReadError::Unreadable)?;
                    Ok(Some(kv))
                }
            }
        })
    }

    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at_revision: Option<u64>,
        start_key: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>> {
        Box::pin(async move {
            let mut listed = self
                .inner
                .list(prefix, at_revision, start_key, limit)
                .await?;
            for kv in &mut listed.items {
                open_kv(&self.config, kv).map_err(|e| list_error(&kv.key, &e))?;
            }
            Ok(listed)
        })
    }

    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>> {
        self.inner.count(prefix)
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(self.create_with(key, value, None))
    }

    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(self.create_with(key, value, Some(guard)))
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>> {
        Box::pin(async move {
            let values = Values::of(&self.config, key);
            let stored = values
                .seal(key, value.clone())
                .map_err(UpdateError::Internal)?;
            match self.inner.update(key, stored, expected_mod_revision).await {
                Ok(kv) => Ok(KeyValue { value, ..kv }),
                Err(UpdateError::Conflict { current }) => Err(UpdateError::Conflict {
                    current: values.open_kv(current).map_err(UpdateError::Internal)?,
                }),
                Err(e) => Err(e),
            }
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>> {
        Box::pin(async move {
            let values = Values::of(&self.config, key);
            match self.inner.delete(key, expected_mod_revision).await {
                Ok(Deleted { prev, revision }) => Ok(Deleted {
                    prev: values.open_kv(prev).map_err(DeleteError::Internal)?,
                    revision,
                }),
                Err(DeleteError::Conflict { current }) => Err(DeleteError::Conflict {
                    current: values.open_kv(current).map_err(DeleteError::Internal)?,
                }),
                Err(e) => Err(e),
            }
        })
    }

    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        Box::pin(async move {
            let stream = self.inner.watch(prefix, from_revision).await?;
            Ok(open_stream(Arc::clone(&self.config), stream))
        })
    }

    fn watch_without_prev<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        Box::pin(async move {
            let stream = self.inner.watch_without_prev(prefix, from_revision).await?;
            Ok(open_stream(Arc::clone(&self.config), stream))
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.inner.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>> {
        self.inner.compact(revision)
    }

    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.inner.compacted_revision()
    }

    fn stale<'a>(
        &'a self,
        key: &'a str,
        mod_revision: u64,
    ) -> BoxFuture<'a, Result<bool, ReadError>> {
        Box::pin(async move {
            let values = Values::of(&self.config, key);
            if values.transformer.is_none() {
                return Ok(false);
            }
            match self.inner.get(key, None).await? {
                Some(kv) if kv.mod_revision == mod_revision => values
                    .open(key, kv.value)
                    .map(|(_, stale)| stale)
                    .map_err(ReadError::Unreadable),
                // Written since: whoever wrote it used the current providers.
                _ => Ok(false),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;
    use crate::KubeVersion;
    use crate::storage::{EmbeddedOptions, EmbeddedStorage};

    const SECRET: &str = "/registry/core/secrets/default/s";
    const MAP: &str = "/registry/core/configmaps/default/m";
    const KEY1: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng==";
    const KEY2: &str = "YWJjZGVmZ2hpamtsbW5vcA==";
    const VALUE: &[u8] = br#"{"kind":"Secret","data":{"p":"dG9wc2VjcmV0"}}"#;

    fn config(providers: &str) -> EncryptionConfig {
        let text = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, widgets.example.com]\n  providers: {providers}\n"
        );
        EncryptionConfig::parse(&text, KubeVersion::new(1, 36)).unwrap()
    }

    fn cbc(keys: &[(&str, &str)]) -> String {
        let keys: Vec<String> = keys
            .iter()
            .map(|(name, secret)| format!("{{name: {name}, secret: '{secret}'}}"))
            .collect();
        format!("{{aescbc: {{keys: [{}]}}}}", keys.join(", "))
    }

    fn engine() -> Arc<dyn Storage> {
        Arc::new(EmbeddedStorage::in_memory(EmbeddedOptions::default()).unwrap())
    }

    async fn raw(engine: &Arc<dyn Storage>, key: &str) -> Bytes {
        engine.get(key, None).await.unwrap().unwrap().value
    }

    #[test]
    fn keys_map_to_group_and_resource_as_the_server_writes_them() {
        assert_eq!(resource_of(SECRET), Some(("", "secrets")));
        assert_eq!(
            resource_of("/registry/example.com/widgets/ns/w"),
            Some(("example.com", "widgets"))
        );
        assert_eq!(
            resource_of("/registry/apps/deployments/"),
            Some(("apps", "deployments"))
        );
        assert_eq!(resource_of("/other/x"), None);
    }

    #[tokio::test]
    async fn listed_resources_are_encrypted_in_the_engine_and_plain_above_it() {
        let engine = engine();
        let store = EncryptedStorage::new(
            Arc::clone(&engine),
            config(&format!("[{}]", cbc(&[("key1", KEY1)]))),
        );
        let created = store
            .create(SECRET, Bytes::from_static(VALUE))
            .await
            .unwrap();
        assert_eq!(created.value, VALUE);
        store.create(MAP, Bytes::from_static(b"{}")).await.unwrap();
        let stored = raw(&engine, SECRET).await;
        assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key1:"));
        assert!(!stored.windows(12).any(|w| w == b"dG9wc2VjcmV0"));
        // An unlisted resource is stored as it is.
        assert_eq!(raw(&engine, MAP).await, &b"{}"[..]);
        // Every read path gives the plain value back.
        assert_eq!(store.get(SECRET, None).await.unwrap().unwrap().value, VALUE);
        let listed = store.list("/registry/", None, None, None).await.unwrap();
        assert_eq!(listed.items[1].value, VALUE);
        let conflict = store
            .update(SECRET, Bytes::from_static(b"{}"), 999)
            .await
            .unwrap_err();
        let UpdateError::Conflict { current } = conflict else {
            panic!("{conflict:?}");
        };
        assert_eq!(current.value, VALUE);
        let mut watch = store.watch("/registry/core/secrets/", 1).await.unwrap();
        let updated = store
            .update(
                SECRET,
                Bytes::from_static(b"{\"v\":2}"),
                created.mod_revision,
            )
            .await
            .unwrap();
        // History kept for watches and old reads is encrypted too.
        let old = engine
            .get(SECRET, Some(created.mod_revision))
            .await
            .unwrap()
            .unwrap();
        assert!(old.value.starts_with(b"k8s:enc:"));
        let deleted = store.delete(SECRET, None).await.unwrap();
        assert_eq!(deleted.prev.value, &b"{\"v\":2}"[..]);
        let mut seen = Vec::new();
        while seen.len() < 3 {
            match watch.next().await.unwrap().unwrap() {
                WatchEvent::Put { kv, prev } => {
                    seen.push(kv.value.clone());
                    if kv.mod_revision == updated.mod_revision {
                        assert_eq!(prev.unwrap().value, VALUE);
                    }
                }
                WatchEvent::Delete { prev, .. } => seen.push(prev.value),
                WatchEvent::Progress { .. } => {}
            }
        }
        assert_eq!(seen, [VALUE, &b"{\"v\":2}"[..], &b"{\"v\":2}"[..]]);
    }

    #[tokio::test]
    async fn rotation_and_turning_encryption_on_and_off() {
        let engine = engine();
        // Written without encryption.
        engine
            .create(SECRET, Bytes::from_static(VALUE))
            .await
            .unwrap();
        // Encryption on with identity listed: the plain value reads, and is stale.
        let on = EncryptedStorage::new(
            Arc::clone(&engine),
            config(&format!("[{}, {{identity: {{}}}}]", cbc(&[("key1", KEY1)]))),
        );
        let kv = on.get(SECRET, None).await.unwrap().unwrap();
        assert_eq!(kv.value, VALUE);
        assert!(on.stale(SECRET, kv.mod_revision).await.unwrap());
        let kv = on.update(SECRET, kv.value, kv.mod_revision).await.unwrap();
        assert!(!on.stale(SECRET, kv.mod_revision).await.unwrap());
        assert!(
            raw(&engine, SECRET)
                .await
                .starts_with(b"k8s:enc:aescbc:v1:key1:")
        );
        // Without identity a plain value does not read.
        let strict = EncryptedStorage::new(
            Arc::clone(&engine),
            config(&format!("[{}]", cbc(&[("key1", KEY1)]))),
        );
        engine
            .create(
                MAP.replace("configmaps", "secrets").as_str(),
                Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
        let plain_key = MAP.replace("configmaps", "secrets");
        assert_eq!(
            strict.get(&plain_key, None).await.unwrap_err(),
            ReadError::Unreadable("no matching prefix found".into())
        );
        assert_eq!(
            strict
                .list("/registry/core/secrets/", None, None, None)
                .await
                .unwrap_err(),
            ReadError::Unreadable(format!(
                "unable to transform key {}: no matching prefix found",
                serde_json::Value::from(plain_key.as_str())
            ))
        );
        engine.delete(&plain_key, None).await.unwrap();
        // Rotation: key2 first, key1 still reads; a rewrite moves the value to key2.
        let rotating = EncryptedStorage::new(
            Arc::clone(&engine),
            config(&format!("[{}]", cbc(&[("key2", KEY2), ("key1", KEY1)]))),
        );
        let kv = rotating.get(SECRET, None).await.unwrap().unwrap();
        assert!(rotating.stale(SECRET, kv.mod_revision).await.unwrap());
        rotating
            .update(SECRET, kv.value, kv.mod_revision)
            .await
            .unwrap();
        assert!(
            raw(&engine, SECRET)
                .await
                .starts_with(b"k8s:enc:aescbc:v1:key2:")
        );
        // key1 dropped: still reads.
        let rotated = EncryptedStorage::new(
            Arc::clone(&engine),
            config(&format!("[{}]", cbc(&[("key2", KEY2)]))),
        );
        assert_eq!(
            rotated.get(SECRET, None).await.unwrap().unwrap().value,
            VALUE
        );
        // Encryption off: identity first reads the encrypted value, and rewrites it plain.
        let off = EncryptedStorage::new(
            Arc::clone(&engine),
            config(&format!("[{{identity: {{}}}}, {}]", cbc(&[("key2", KEY2)]))),
        );
        let kv = off.get(SECRET, None).await.unwrap().unwrap();
        assert_eq!(kv.value, VALUE);
        assert!(off.stale(SECRET, kv.mod_revision).await.unwrap());
        off.update(SECRET, kv.value, kv.mod_revision).await.unwrap();
        assert_eq!(raw(&engine, SECRET).await, VALUE);
        // An unlisted resource holding encrypted data is refused as upstream's identity.
        let unlisted = EncryptedStorage::new(Arc::clone(&engine), config("[{identity: {}}]"));
        rotated
            .create(
                MAP.replace("configmaps", "secrets").as_str(),
                Bytes::from_static(b"{}"),
            )
            .await
            .unwrap();
        let encrypted = raw(&engine, &plain_key).await;
        engine.create(MAP, encrypted).await.unwrap();
        assert_eq!(
            unlisted.get(MAP, None).await.unwrap_err(),
            ReadError::Unreadable("identity transformer tried to read encrypted data".into())
        );
    }

    #[tokio::test]
    async fn custom_resources_are_matched_by_plural_and_group() {
        let engine = engine();
        let store = EncryptedStorage::new(
            Arc::clone(&engine),
            config(&format!("[{}]", cbc(&[("key1", KEY1)]))),
        );
        let key = "/registry/example.com/widgets/default/w";
        store
            .create(key, Bytes::from_static(b"{\"spec\":1}"))
            .await
            .unwrap();
        assert!(
            raw(&engine, key)
                .await
                .starts_with(b"k8s:enc:aescbc:v1:key1:")
        );
        assert_eq!(
            store.get(key, None).await.unwrap().unwrap().value,
            &b"{\"spec\":1}"[..]
        );
    }
}
