//! Cascading deletion: the deletion rules the delete paths share (`deletion`: propagation
//! policies, the `orphan` and `foregroundDeletion` finalizers, graceful deletion of Pods) and
//! the garbage collector that carries them out (this module, over its `graph` of the store),
//! as kube-apiserver and kube-controller-manager's garbage collector do between them.
//!
//! The collector is one background task per server. It owns an in-memory graph of every
//! stored object (uid, coordinates, owner references, deletion state), built from one full
//! list of the store and kept current from one watch of it; no lock is shared with request
//! handlers. Work is a queue of object uids. Processing an item re-reads it from the store and
//! writes with optimistic concurrency, so a stale graph can only delay work, not corrupt it:
//! - an object marked for deletion with the `orphan` finalizer: its dependents lose their
//!   reference to it, then the finalizer goes (and with the last finalizer, the object);
//! - with `foregroundDeletion`: every dependent is deleted, and the finalizer goes once no
//!   dependent with `blockOwnerDeletion: true` remains;
//! - an object whose owners are all gone (or waiting for their dependents) is deleted: in
//!   the foreground when an owner is waiting and it has dependents of its own, otherwise as
//!   its own finalizers ask, otherwise in the background. Owners that are gone but not all
//!   of them: the references to the gone ones are removed.
//!
//! An owner reference is resolved as upstream's collector does: by kind, name and uid, in the
//! dependent's namespace when the owner's kind is namespaced. A namespaced owner therefore
//! never owns objects in another namespace: such a reference counts as absent, and an
//! object whose owners are all absent is collected. References to kinds the server does not
//! serve, and namespaced owners of cluster-scoped objects, can never be resolved and keep the
//! object, as upstream keeps retrying them.
//!
//! State that survives a restart drives everything, so a cascade cut short by a crash
//! finishes when the server starts again: the first sync queues every object marked with a
//! collector finalizer and every object with an owner the graph does not hold, and resumes
//! the lifecycle of terminating namespaces.
//!
//! Pods are the one kind with graceful deletion. Without a kubelet to stop containers, a Pod
//! that is not scheduled (no `spec.nodeName`), or is deleted with `gracePeriodSeconds: 0`,
//! or has finished, goes at once, as upstream does for such Pods; a scheduled Pod keeps its
//! `deletionTimestamp` (now plus its grace period) and the collector removes it when that
//! time has passed, standing in for the kubelet.
//!
//! May import: what `background` may. `deletion` imports nothing of the collector or its
//! graph, and `graph` only `deletion`, so the request handlers reach the rules without the
//! collector.

mod deletion;
mod graph;

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch as signal;
use tokio::time::Instant;

use crate::meta::{DeleteOptions, DeletionPropagation};
use crate::storage::{Bytes, DeleteError, KeyValue, Storage, UpdateError, WatchEvent};
use crate::time::Time;

use crate::server::state::State;
use crate::server::state::keys;

// The rules the delete handlers and the dispatcher use, at the path they have always used.
pub(crate) use deletion::{
    DeletePlan, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, class_of, is_deleting, plan_delete,
    validate_options,
};

use deletion::{class_of_key, finalizers, held, unheld};
use graph::{Graph, Node, OwnerRef, node_of, parse_node};

/// Where every object the server stores lives.
const ROOT: &str = "/registry/";

/// How many keys one page of the collector's initial list reads.
const SYNC_PAGE: usize = 1000;

/// How long an item waits before it is tried again after a storage error or a lost race.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// How long the collector waits before listing again after the store failed it.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// How many times one write is re-read and retried after losing a race.
const WRITE_RETRIES: usize = 8;

/// Starts the collector for a server; it ends when `stop` flips.
pub(crate) fn spawn(state: State, stop: signal::Receiver<bool>) {
    tokio::spawn(async move {
        Collector::new(state, stop).run().await;
    });
}

/// Why an item goes back on the queue.
#[derive(Debug)]
struct Retry;

/// How an owner reference resolved against the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The owner exists and is not waiting for its dependents (or cannot be resolved).
    Solid,
    /// The owner is gone, or another object has its name.
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

/// Things the collector does at a time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    /// Try an item again.
    Retry(String),
    /// A Pod's grace period may have run out.
    PodExpiry(String),
}

struct Collector {
    state: State,
    stop: signal::Receiver<bool>,
    graph: Graph,
    queue: VecDeque<String>,
    queued: HashSet<String>,
    timers: BTreeSet<(Instant, Timer)>,
    /// Namespace lifecycles are resumed once, at the first sync after a start.
    resumed_namespaces: bool,
}

impl Collector {
    fn new(state: State, stop: signal::Receiver<bool>) -> Self {
        Self {
            state,
            stop,
            graph: Graph::default(),
            queue: VecDeque::new(),
            queued: HashSet::new(),
            timers: BTreeSet::new(),
            resumed_namespaces: false,
        }
    }

    fn enqueue(&mut self, uid: &str) {
        if self.queued.insert(uid.to_owned()) {
            self.queue.push_back(uid.to_owned());
        }
    }

    async fn run(mut self) {
        let mut stop = self.stop.clone();
        loop {
            let revision = tokio::select! {
                _ = crate::server::stopped(&mut stop) => return,
                synced = self.sync() => synced,
            };
            let watch = match revision {
                Ok(revision) => self
                    .state
                    .storage
                    .watch_without_prev(ROOT, revision)
                    .await
                    .ok(),
                Err(()) => None,
            };
            let Some(mut watch) = watch else {
                tokio::select! {
                    _ = crate::server::stopped(&mut stop) => return,
                    _ = tokio::time::sleep(RESYNC_AFTER) => continue,
                }
            };
            loop {
                let next_timer = self.timers.first().map(|(at, _)| *at);
                let has_work = !self.queue.is_empty();
                tokio::select! {
                    biased;
                    _ = crate::server::stopped(&mut stop) => return,
                    event = watch.next() => match event {
                        Some(Ok(event)) => self.observe(event),
                        // Fell behind or history was compacted: list again.
                        Some(Err(_)) | None => break,
                    },
                    _ = sleep_until(next_timer), if next_timer.is_some() => self.fire_timers().await,
                    _ = std::future::ready(()), if has_work => self.work_one().await,
                }
            }
        }
    }

    /// Lists the whole store into a fresh graph and queues what needs a look; answers the
    /// revision the list was read at.
    async fn sync(&mut self) -> Result<u64, ()> {
        let storage = self.state.storage.clone();
        let mut items: Vec<KeyValue> = Vec::new();
        let first = storage
            .list(ROOT, None, None, Some(SYNC_PAGE))
            .await
            .map_err(|_| ())?;
        let revision = first.revision;
        let mut more = first.more;
        items.extend(first.items);
        while more {
            let Some(last) = items.last().map(|kv| keys::after(&kv.key)) else {
                break;
            };
            let page = storage
                .list(ROOT, Some(revision), Some(&last), Some(SYNC_PAGE))
                .await
                .map_err(|_| ())?;
            more = page.more;
            items.extend(page.items);
        }
        self.graph = Graph::default();
        self.queue.clear();
        self.queued.clear();
        self.timers.clear();
        let mut terminating = Vec::new();
        for kv in &items {
            if let Some((uid, node)) = parse_node(&kv.key, &kv.value) {
                if node.terminating_namespace {
                    terminating.push(node.name.clone());
                }
                self.schedule_pod(&uid, &node);
                self.graph.insert(&uid, node);
            }
        }
        let uids: Vec<String> = self.graph.nodes.keys().cloned().collect();
        for uid in uids {
            let Some(node) = self.graph.nodes.get(&uid) else {
                continue;
            };
            if node.pending() || self.graph.needs_check(node) {
                self.enqueue(&uid);
            }
        }
        if !self.resumed_namespaces {
            self.resumed_namespaces = true;
            for name in terminating {
                crate::server::resume_namespace_cleanup(&self.state, &self.stop, &name);
            }
        }
        Ok(revision)
    }

    /// A scheduled Pod in graceful deletion gets a timer for when its grace period ends.
    fn schedule_pod(&mut self, uid: &str, node: &Node) {
        let Some(until) = node.graceful_until.as_deref() else {
            return;
        };
        let due = until
            .parse::<Time>()
            .ok()
            .map(|t| t.timestamp().duration_since(jiff::Timestamp::now()))
            .and_then(|d| Duration::try_from(d).ok())
            .unwrap_or_default();
        self.timers
            .insert((Instant::now() + due, Timer::PodExpiry(uid.to_owned())));
    }

    /// Updates the graph from one change and queues whatever it may concern.
    fn observe(&mut self, event: WatchEvent) {
        match event {
            WatchEvent::Put { kv, .. } => {
                let Some((uid, node)) = parse_node(&kv.key, &kv.value) else {
                    return;
                };
                self.schedule_pod(&uid, &node);
                let old = self.graph.insert(&uid, node.clone());
                if node.pending() || self.graph.needs_check(&node) {
                    self.enqueue(&uid);
                }
                self.touch_owners(&node, old.as_ref());
            }
            // The watch carries no deleted values: the graph knows what was at the key.
            WatchEvent::Delete { prev, .. } => {
                let Some(uid) = self.graph.uid_at(&prev.key) else {
                    return;
                };
                let Some(node) = self.graph.remove(&uid) else {
                    return;
                };
                let dependents: Vec<String> = self
                    .graph
                    .dependents
                    .get(&uid)
                    .map(|set| set.iter().cloned().collect())
                    .unwrap_or_default();
                for dependent in dependents {
                    self.enqueue(&dependent);
                }
                self.touch_owners(&node, None);
            }
            WatchEvent::Progress { .. } => {}
        }
    }

    /// Owners waiting for their dependents look again when one of those changes or goes.
    fn touch_owners(&mut self, node: &Node, old: Option<&Node>) {
        let owners: Vec<String> = node
            .owners
            .iter()
            .chain(old.map(|o| o.owners.iter()).into_iter().flatten())
            .map(|r| r.uid.clone())
            .collect();
        for owner in owners {
            if self
                .graph
                .nodes
                .get(&owner)
                .is_some_and(|o| o.deleting_dependents)
            {
                self.enqueue(&owner);
            }
        }
    }

    async fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some((at, timer)) = self.timers.first().cloned() {
            if at > now {
                break;
            }
            self.timers.remove(&(at, timer.clone()));
            match timer {
                Timer::Retry(uid) => self.enqueue(&uid),
                Timer::PodExpiry(uid) => {
                    if self.expire_pod(&uid).await.is_err() {
                        self.timers
                            .insert((Instant::now() + RETRY_AFTER, Timer::PodExpiry(uid)));
                    }
                }
            }
        }
    }

    /// Removes a Pod whose grace period has run out and that nothing else holds.
    async fn expire_pod(&mut self, uid: &str) -> Result<(), Retry> {
        let Some(key) = self.graph.nodes.get(uid).map(|n| n.key.clone()) else {
            return Ok(());
        };
        let Some((kv, object)) = self.read(&key, uid).await? else {
            return Ok(());
        };
        let due = object
            .pointer("/metadata/deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<Time>().ok());
        let Some(due) = due else { return Ok(()) };
        if due.timestamp() > jiff::Timestamp::now() {
            if let Some((_, node)) = node_of(&key, &object) {
                self.schedule_pod(uid, &node);
            }
            return Ok(());
        }
        if held(class_of_key(&key), &object) {
            return Ok(());
        }
        self.remove(&kv).await
    }

    async fn work_one(&mut self) {
        let Some(uid) = self.queue.pop_front() else {
            return;
        };
        self.queued.remove(&uid);
        if self.attempt(&uid).await.is_err() {
            self.timers
                .insert((Instant::now() + RETRY_AFTER, Timer::Retry(uid)));
        }
    }

    /// The latest stored value of `key` while it is still the object `uid`.
    async fn read(&self, key: &str, uid: &str) -> Result<Option<(KeyValue, Value)>, Retry> {
        let Some(kv) = self.state.storage.get(key, None).await.map_err(|_| Retry)? else {
            return Ok(None);
        };
        let Ok(object) = serde_json::from_slice::<Value>(&kv.value) else {
            return Ok(None);
        };
        if crate::server::objects::json::meta_str(&object, "uid") != Some(uid) {
            return Ok(None);
        }
        Ok(Some((kv, object)))
    }

    /// Deletes a key at the revision it was read at; a lost race is retried later.
    async fn remove(&self, kv: &KeyValue) -> Result<(), Retry> {
        match self
            .state
            .storage
            .delete(&kv.key, Some(kv.mod_revision))
            .await
        {
            Ok(_) | Err(DeleteError::NotFound) => Ok(()),
            Err(_) => Err(Retry),
        }
    }

    /// Stores `object` over `kv`; `Ok(false)` when another write came first.
    async fn write(&self, kv: &KeyValue, object: &Value) -> Result<bool, Retry> {
        let bytes = serde_json::to_vec(object).map_err(|_| Retry)?;
        match self
            .state
            .storage
            .update(&kv.key, Bytes::from(bytes), kv.mod_revision)
            .await
        {
            Ok(_) | Err(UpdateError::NotFound) => Ok(true),
            Err(UpdateError::Conflict { .. }) => Ok(false),
            Err(_) => Err(Retry),
        }
    }

    /// Re-reads `uid` at `key` and applies `change` until it sticks. `change` answers `None`
    /// when there is nothing to do. An object marked for deletion that nothing holds any more
    /// is removed instead of stored.
    async fn modify(
        &self,
        key: &str,
        uid: &str,
        change: impl Fn(&Value) -> Option<Value>,
    ) -> Result<(), Retry> {
        for _ in 0..WRITE_RETRIES {
            let Some((kv, object)) = self.read(key, uid).await? else {
                return Ok(());
            };
            let Some(next) = change(&object) else {
                return Ok(());
            };
            if is_deleting(&next) && !held(class_of_key(key), &next) {
                match self.state.storage.delete(key, Some(kv.mod_revision)).await {
                    Ok(_) | Err(DeleteError::NotFound) => return Ok(()),
                    Err(DeleteError::Conflict { .. }) => continue,
                    Err(_) => return Err(Retry),
                }
            }
            if self.write(&kv, &next).await? {
                return Ok(());
            }
        }
        Err(Retry)
    }

    async fn remove_finalizer(&self, key: &str, uid: &str, finalizer: &str) -> Result<(), Retry> {
        self.modify(key, uid, |object| {
            let before = finalizers(object);
            if !before.iter().any(|f| f == finalizer) {
                return None;
            }
            let mut next = object.clone();
            let meta = crate::server::objects::json::meta_mut(&mut next);
            let kept: Vec<&str> = before
                .iter()
                .map(String::as_str)
                .filter(|f| *f != finalizer)
                .collect();
            if kept.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), Value::from(kept));
            }
            Some(next)
        })
        .await
    }

    /// Removes the references to `owners` from an object.
    async fn drop_references(&self, key: &str, uid: &str, owners: &[String]) -> Result<(), Retry> {
        self.modify(key, uid, |object| {
            let refs = object
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)?;
            let kept: Vec<Value> = refs
                .iter()
                .filter(|r| {
                    !r.get("uid")
                        .and_then(Value::as_str)
                        .is_some_and(|u| owners.iter().any(|o| o == u))
                })
                .cloned()
                .collect();
            if kept.len() == refs.len() {
                return None;
            }
            let mut next = object.clone();
            let meta = crate::server::objects::json::meta_mut(&mut next);
            if kept.is_empty() {
                meta.remove("ownerReferences");
            } else {
                meta.insert("ownerReferences".into(), Value::Array(kept));
            }
            Some(next)
        })
        .await
    }

    /// Sets `blockOwnerDeletion: false` on every owner reference of an object.
    async fn unblock(&self, key: &str, uid: &str) -> Result<(), Retry> {
        self.modify(key, uid, |object| {
            let mut next = object.clone();
            let refs = next
                .pointer_mut("/metadata/ownerReferences")
                .and_then(Value::as_array_mut)?;
            let mut changed = false;
            for reference in refs.iter_mut() {
                if reference.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
                    crate::server::objects::json::object_mut(reference)
                        .insert("blockOwnerDeletion".into(), Value::Bool(false));
                    changed = true;
                }
            }
            changed.then_some(next)
        })
        .await
    }

    /// Deletes an object as a client would with `policy`.
    async fn delete_object(
        &self,
        key: &str,
        uid: &str,
        policy: DeletionPropagation,
    ) -> Result<(), Retry> {
        let options = DeleteOptions {
            propagation_policy: Some(policy),
            ..DeleteOptions::default()
        };
        for _ in 0..WRITE_RETRIES {
            let Some((kv, object)) = self.read(key, uid).await? else {
                return Ok(());
            };
            match plan_delete(class_of_key(key), &object, &options, jiff::Timestamp::now()) {
                DeletePlan::Unchanged => return Ok(()),
                DeletePlan::Remove => {
                    match self.state.storage.delete(key, Some(kv.mod_revision)).await {
                        Ok(_) | Err(DeleteError::NotFound) => return Ok(()),
                        Err(DeleteError::Conflict { .. }) => continue,
                        Err(_) => return Err(Retry),
                    }
                }
                DeletePlan::Mark(next) => {
                    if self.write(&kv, &next).await? {
                        return Ok(());
                    }
                }
            }
        }
        Err(Retry)
    }

    /// Looks at one object and does what its deletion state and owners call for.
    async fn attempt(&mut self, uid: &str) -> Result<(), Retry> {
        let Some(node) = self.graph.nodes.get(uid).cloned() else {
            return Ok(());
        };
        let Some((kv, object)) = self.read(&node.key, uid).await? else {
            return Ok(());
        };
        let fins = finalizers(&object);
        if unheld(&node.key, &object) {
            return self.remove(&kv).await;
        }
        if is_deleting(&object) {
            if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
                return self.orphan(uid, &node).await;
            }
            if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
                return self.foreground(uid, &node).await;
            }
            // Being deleted already; its own finalizers decide when it goes.
            return Ok(());
        }
        let Some((_, current)) = node_of(&node.key, &object) else {
            return Ok(());
        };
        if current.owners.is_empty() {
            return Ok(());
        }
        let mut solid = false;
        let mut gone = Vec::new();
        let mut waiting = false;
        for reference in &current.owners {
            match self.resolve(&current, reference).await? {
                Owner::Solid => solid = true,
                Owner::Dangling => gone.push(reference.uid.clone()),
                Owner::Waiting => {
                    waiting = true;
                    gone.push(reference.uid.clone());
                }
            }
        }
        if solid {
            if gone.is_empty() {
                return Ok(());
            }
            // Other owners keep it: only the references to the gone or waiting ones go.
            return self.drop_references(&node.key, uid, &gone).await;
        }
        let dependents = self.graph.dependents_of(uid);
        let policy = if waiting && !dependents.is_empty() {
            let in_cycle = dependents.iter().any(|(dependent, _)| {
                self.graph
                    .nodes
                    .get(dependent)
                    .is_some_and(|n| n.deleting_dependents)
            });
            if in_cycle {
                // A dependent of this object is itself waiting for its dependents: an
                // ownership cycle. This object stops blocking its owners so that neither
                // side waits for the other forever.
                self.unblock(&node.key, uid).await?;
            }
            DeletionPropagation::Foreground
        } else if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
            DeletionPropagation::Orphan
        } else if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
            DeletionPropagation::Foreground
        } else {
            DeletionPropagation::Background
        };
        self.delete_object(&node.key, uid, policy).await
    }

    /// Resolves one owner reference of `dependent` against the store.
    async fn resolve(&self, dependent: &Node, reference: &OwnerRef) -> Result<Owner, Retry> {
        let registry = self.state.registry();
        let group = reference.group();
        let mut candidates = registry
            .kinds()
            .filter(|k| k.info.gvk.group == group && k.info.gvk.kind == reference.kind);
        let Some(kind) = candidates.next() else {
            // Not a kind this server serves: never treated as gone.
            return Ok(Owner::Solid);
        };
        let info = &*kind.info;
        let namespace = if info.is_namespaced() {
            match dependent.namespace.as_deref() {
                Some(ns) => Some(ns),
                // A cluster-scoped object cannot be owned by a namespaced one.
                None => return Ok(Owner::Solid),
            }
        } else {
            None
        };
        if !crate::server::http::path::is_path_segment(&reference.name)
            || namespace.is_some_and(|ns| !crate::server::http::path::is_path_segment(ns))
        {
            return Ok(Owner::Dangling);
        }
        let key = keys::object_key(info, namespace, &reference.name);
        let Some(kv) = self
            .state
            .storage
            .get(&key, None)
            .await
            .map_err(|_| Retry)?
        else {
            return Ok(Owner::Dangling);
        };
        let Ok(owner) = serde_json::from_slice::<Value>(&kv.value) else {
            return Ok(Owner::Solid);
        };
        if crate::server::objects::json::meta_str(&owner, "uid") != Some(reference.uid.as_str()) {
            return Ok(Owner::Dangling);
        }
        if is_deleting(&owner) && finalizers(&owner).iter().any(|f| f == FOREGROUND_FINALIZER) {
            Ok(Owner::Waiting)
        } else {
            Ok(Owner::Solid)
        }
    }

    /// An owner marked with `orphan`: its dependents lose their references to it, then the
    /// finalizer goes.
    async fn orphan(&mut self, uid: &str, node: &Node) -> Result<(), Retry> {
        let owner = [uid.to_owned()];
        for (dependent, _) in self.graph.dependents_of(uid) {
            let Some(key) = self.graph.nodes.get(&dependent).map(|n| n.key.clone()) else {
                continue;
            };
            self.drop_references(&key, &dependent, &owner).await?;
        }
        self.remove_finalizer(&node.key, uid, ORPHAN_FINALIZER)
            .await
    }

    /// An owner marked with `foregroundDeletion`: its dependents are deleted; once none that
    /// blocks it remains, the finalizer goes.
    async fn foreground(&mut self, uid: &str, node: &Node) -> Result<(), Retry> {
        let dependents = self.graph.dependents_of(uid);
        if !dependents.iter().any(|(_, block)| *block) {
            return self
                .remove_finalizer(&node.key, uid, FOREGROUND_FINALIZER)
                .await;
        }
        for (dependent, _) in dependents {
            let deleting = self.graph.nodes.get(&dependent).is_some_and(|n| n.deleting);
            if !deleting {
                self.enqueue(&dependent);
            }
        }
        Ok(())
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
