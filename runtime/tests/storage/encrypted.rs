//! The conformance suite through [`EncryptedStorage`]: every value the suite writes is
//! encrypted (aesgcm, the key as authenticated data) before it reaches the embedded engine, and
//! the contract holds as the engine's own: conflicts and existing keys answer the current value,
//! old revisions, lists, watches with and without previous values, compaction.
//!
//! The suite's keys (`/k/a`) are moved under the server's Secrets (`/registry/core/secrets/k/a`)
//! by [`Rooted`], so the configuration (`secrets`) applies to every one of them.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt as _;
use kapi::KubeVersion;
use kapi::storage::conformance::Fixture;
use kapi::storage::{
    BoxFuture, CompactError, CreateError, DeleteError, Deleted, EmbeddedStorage, EncryptedStorage,
    EncryptionConfig, Guard, KeyValue, ListResult, ReadError, Storage, UpdateError, WatchError,
    WatchEvent, WatchStream,
};

use super::test_options;

/// Where the suite's keys go: every one a Secret's.
const ROOT: &str = "/registry/core/secrets";

/// A store whose keys are the inner store's under [`ROOT`].
#[derive(Debug)]
struct Rooted(Arc<dyn Storage>);

fn down(key: &str) -> String {
    format!("{ROOT}{key}")
}

fn up(mut kv: KeyValue) -> KeyValue {
    kv.key = kv.key.strip_prefix(ROOT).unwrap_or(&kv.key).to_owned();
    kv
}

fn up_event(event: Result<WatchEvent, WatchError>) -> Result<WatchEvent, WatchError> {
    Ok(match event? {
        WatchEvent::Put { kv, prev } => WatchEvent::Put {
            kv: up(kv),
            prev: prev.map(up),
        },
        WatchEvent::Delete { prev, revision } => WatchEvent::Delete {
            prev: up(prev),
            revision,
        },
        progress => progress,
    })
}

impl Storage for Rooted {
    fn get<'a>(
        &'a self,
        key: &'a str,
        at: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>> {
        Box::pin(async move { Ok(self.0.get(&down(key), at).await?.map(up)) })
    }

    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at: Option<u64>,
        start: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>> {
        Box::pin(async move {
            let start = start.map(down);
            let mut listed = self
                .0
                .list(&down(prefix), at, start.as_deref(), limit)
                .await?;
            listed.items = listed.items.into_iter().map(up).collect();
            Ok(listed)
        })
    }

    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>> {
        Box::pin(async move { self.0.count(&down(prefix)).await })
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(async move { created(self.0.create(&down(key), value).await) })
    }

    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(async move {
            let guard = Guard {
                key: down(&guard.key),
                mod_revision: guard.mod_revision,
            };
            created(self.0.create_guarded(&down(key), value, &guard).await)
        })
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>> {
        Box::pin(async move {
            match self.0.update(&down(key), value, expected).await {
                Ok(kv) => Ok(up(kv)),
                Err(UpdateError::Conflict { current }) => Err(UpdateError::Conflict {
                    current: up(current),
                }),
                Err(e) => Err(e),
            }
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>> {
        Box::pin(async move {
            match self.0.delete(&down(key), expected).await {
                Ok(Deleted { prev, revision }) => Ok(Deleted {
                    prev: up(prev),
                    revision,
                }),
                Err(DeleteError::Conflict { current }) => Err(DeleteError::Conflict {
                    current: up(current),
                }),
                Err(e) => Err(e),
            }
        })
    }

    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        Box::pin(async move { Ok(rooted(self.0.watch(&down(prefix), from).await?)) })
    }

    fn watch_without_prev<'a>(
        &'a self,
        prefix: &'a str,
        from: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        Box::pin(async move {
            let key = down(prefix);
            Ok(rooted(self.0.watch_without_prev(&key, from).await?))
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.0.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>> {
        self.0.compact(revision)
    }

    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.0.compacted_revision()
    }
}

/// A watch of the inner store with its keys moved back.
fn rooted(stream: WatchStream) -> WatchStream {
    WatchStream::new(stream.map(up_event))
}

fn created(result: Result<KeyValue, CreateError>) -> Result<KeyValue, CreateError> {
    match result {
        Ok(kv) => Ok(up(kv)),
        Err(CreateError::AlreadyExists { current }) => Err(CreateError::AlreadyExists {
            current: up(current),
        }),
        Err(e) => Err(e),
    }
}

/// Secrets encrypted with aesgcm, over a fresh in-memory engine.
struct Encrypted;

impl Fixture for Encrypted {
    fn open(&self) -> BoxFuture<'_, Result<Arc<dyn Storage>, String>> {
        Box::pin(async move {
            let config = EncryptionConfig::parse(
                "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers: [{aesgcm: {keys: [{name: k, secret: 'MTIzNDU2Nzg5MDEyMzQ1Ng=='}]}}]
",
                KubeVersion::new(1, 36),
            )
            .map_err(|e| e.to_string())?;
            let engine = EmbeddedStorage::in_memory(test_options()).map_err(|e| e.to_string())?;
            let encrypted = EncryptedStorage::new(Arc::new(engine), config);
            Ok(Arc::new(Rooted(Arc::new(encrypted))) as Arc<dyn Storage>)
        })
    }
}

kapi::storage_conformance_tests!(Encrypted);

/// What a store like the suite's holds underneath is encrypted.
#[tokio::test]
async fn the_engine_holds_only_encrypted_values() {
    let engine: Arc<dyn Storage> = Arc::new(EmbeddedStorage::in_memory(test_options()).unwrap());
    let config = EncryptionConfig::parse(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers: [{secretbox: {keys: [{name: b, secret: 'MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI='}]}}]\n",
        KubeVersion::new(1, 36),
    )
    .unwrap();
    let store = Rooted(Arc::new(EncryptedStorage::new(Arc::clone(&engine), config)));
    let kv = store
        .create("/k/a", Bytes::from_static(b"plain value"))
        .await
        .unwrap();
    assert_eq!(kv.value, &b"plain value"[..]);
    let raw = engine
        .get("/registry/core/secrets/k/a", None)
        .await
        .unwrap()
        .unwrap();
    assert!(raw.value.starts_with(b"k8s:enc:secretbox:v1:b:"));
    assert_eq!(
        store.get("/k/a", None).await.unwrap().unwrap().value,
        kv.value
    );
}
