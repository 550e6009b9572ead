//! The server's view of its storage engine: every call goes to the engine, and what this
//! server reads and writes also feeds its caches ([`RecentObjects`] for updates, the
//! [`NamespaceCache`] for creates, the [`ServiceAllocations`] for Service writes, the
//! [`Mirrors`] for admission), whichever code path made the call.

use std::fmt;
use std::sync::Arc;

use crate::storage::{
    BoxFuture, Bytes, CompactError, CreateError, DeleteError, Deleted, Guard, KeyValue, ListResult,
    ReadError, Storage, UpdateError, WatchError, WatchStream,
};

use crate::server::state::mirrors::Mirrors;
use crate::server::state::namespaces::NamespaceCache;
use crate::server::state::recent::RecentObjects;
use crate::server::state::service_allocations::ServiceAllocations;

/// An engine and what this server learned from its answers.
pub(crate) struct Observed {
    engine: Arc<dyn Storage>,
    recent: RecentObjects,
    namespaces: NamespaceCache,
    services: ServiceAllocations,
    mirrors: Arc<Mirrors>,
}

impl fmt::Debug for Observed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observed")
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl Observed {
    pub(crate) fn new(
        engine: Arc<dyn Storage>,
        services: ServiceAllocations,
        mirrors: Arc<Mirrors>,
    ) -> Self {
        Self {
            engine,
            recent: RecentObjects::default(),
            namespaces: NamespaceCache::default(),
            services,
            mirrors,
        }
    }

    /// The newest value of `key` this server has seen lately, if any (it may be stale).
    pub(crate) fn recent(&self, key: &str) -> Option<KeyValue> {
        self.recent.get(key)
    }

    /// The namespaces this server knows of.
    pub(crate) fn namespaces(&self) -> &NamespaceCache {
        &self.namespaces
    }

    /// The cluster IPs and node ports the stored Services hold.
    pub(crate) fn services(&self) -> &ServiceAllocations {
        &self.services
    }

    /// The copies of what admission reads on every write, and the node graph's.
    pub(crate) fn mirrors(&self) -> &Mirrors {
        &self.mirrors
    }

    fn saw(&self, kv: &KeyValue) {
        self.recent.remember(kv);
        self.namespaces.observe(kv);
        self.services.observe(kv);
        self.mirrors.observe(kv);
    }

    fn saw_delete(&self, key: &str, revision: u64) {
        self.recent.forget(key, revision);
        self.namespaces.deleted(key, revision);
        self.services.deleted(key, revision);
        self.mirrors.deleted(key, revision);
    }
}

impl Storage for Observed {
    fn get<'a>(
        &'a self,
        key: &'a str,
        at_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>> {
        Box::pin(async move {
            let found = self.engine.get(key, at_revision).await?;
            if let Some(kv) = found.as_ref().filter(|_| at_revision.is_none()) {
                self.saw(kv);
            }
            Ok(found)
        })
    }

    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at_revision: Option<u64>,
        start_key: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>> {
        self.engine.list(prefix, at_revision, start_key, limit)
    }

    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>> {
        self.engine.count(prefix)
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(async move {
            let created = self.engine.create(key, value).await;
            match &created {
                Ok(kv) | Err(CreateError::AlreadyExists { current: kv }) => self.saw(kv),
                Err(_) => {}
            }
            created
        })
    }

    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(async move {
            let created = self.engine.create_guarded(key, value, guard).await;
            match &created {
                Ok(kv) | Err(CreateError::AlreadyExists { current: kv }) => self.saw(kv),
                Err(_) => {}
            }
            created
        })
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        expected_mod_revision: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>> {
        Box::pin(async move {
            let updated = self.engine.update(key, value, expected_mod_revision).await;
            match &updated {
                Ok(kv) | Err(UpdateError::Conflict { current: kv }) => self.saw(kv),
                // Gone at some revision after the expected one.
                Err(UpdateError::NotFound) => self.recent.forget(key, u64::MAX),
                Err(_) => {}
            }
            updated
        })
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>> {
        Box::pin(async move {
            let deleted = self.engine.delete(key, expected_mod_revision).await;
            match &deleted {
                Ok(done) => self.saw_delete(key, done.revision),
                Err(DeleteError::Conflict { current }) => self.saw(current),
                Err(DeleteError::NotFound) => self.recent.forget(key, u64::MAX),
                Err(_) => {}
            }
            deleted
        })
    }

    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        self.engine.watch(prefix, from_revision)
    }

    fn watch_without_prev<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        self.engine.watch_without_prev(prefix, from_revision)
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.engine.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>> {
        self.engine.compact(revision)
    }

    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.engine.compacted_revision()
    }

    fn stale<'a>(
        &'a self,
        key: &'a str,
        mod_revision: u64,
    ) -> BoxFuture<'a, Result<bool, ReadError>> {
        self.engine.stale(key, mod_revision)
    }
}
