// Over the server's 800-line bound: the deletion rules and the collector that carries them out
// share the planning types and the owner graph; a split into rules, graph and task is left for
// a later change.
//! Cascading deletion: the deletion rules the delete paths share (propagation policies, the
//! `orphan` and `foregroundDeletion` finalizers, graceful deletion of Pods) and the garbage
//! collector that carries them out, as kube-apiserver and kube-controller-manager's garbage
//! collector do between them.
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

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::sync::watch as signal;
use tokio::time::Instant;

use crate::ResourceInfo;
use crate::meta::{DeleteOptions, DeletionPropagation, StatusCause};
use crate::storage::{Bytes, DeleteError, KeyValue, Storage, UpdateError, WatchEvent};
use crate::time::Time;

use crate::server::http::error::ApiError;
use crate::server::state::State;
use crate::server::state::builtin::NAMESPACE_FINALIZER;
use crate::server::state::keys;

/// The finalizer that makes the collector orphan an object's dependents before it goes.
pub(crate) const ORPHAN_FINALIZER: &str = "orphan";

/// The finalizer that holds an object until the collector has deleted its blocking dependents.
pub(crate) const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

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

/// The default grace period of a Pod whose spec names none (upstream's API default).
const DEFAULT_POD_GRACE: i64 = 30;

/// The upstream values a `propagationPolicy` may take, as its message lists them.
const POLICY_VALUES: &[&str] = &["Foreground", "Background", "Orphan", "nil"];

/// What sets a kind's deletion rules apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeleteClass {
    /// Core `v1` Pods: graceful deletion.
    pub(crate) pod: bool,
    /// Core `v1` Namespaces: `spec.finalizers` hold them too.
    pub(crate) namespace: bool,
    /// Dependents are orphaned when a delete names no policy.
    pub(crate) default_orphan: bool,
}

/// The deletion rules of a served kind. The kinds that orphan by default are the ones upstream
/// kept that way for old clients: ReplicationControllers, and the controllers of
/// `extensions/v1beta1`, `apps/v1beta1` and `apps/v1beta2`.
pub(crate) fn class_of(info: &ResourceInfo) -> DeleteClass {
    let group: &str = &info.gvk.group;
    let version: &str = &info.gvk.version;
    let plural: &str = &info.plural;
    let legacy_controller = match (group, version) {
        ("extensions", "v1beta1") | ("apps", "v1beta2") => {
            matches!(
                plural,
                "deployments" | "daemonsets" | "replicasets" | "statefulsets"
            )
        }
        ("apps", "v1beta1") => matches!(plural, "deployments" | "statefulsets"),
        _ => false,
    };
    DeleteClass {
        pod: group.is_empty() && plural == "pods",
        namespace: group.is_empty() && plural == "namespaces",
        default_orphan: legacy_controller
            || (group.is_empty() && plural == "replicationcontrollers"),
    }
}

/// The deletion rules of a stored object, from its key (the collector always names a policy,
/// so the default does not matter there).
fn class_of_key(key: &str) -> DeleteClass {
    DeleteClass {
        pod: key.starts_with("/registry/core/pods/"),
        namespace: key.starts_with("/registry/core/namespaces/"),
        default_orphan: false,
    }
}

/// Checks `DeleteOptions` as upstream's `ValidateDeleteOptions` does: the policy, then
/// `orphanDependents` with a policy, then `dryRun`, all in one 422 on `DeleteOptions`.
/// Answers whether the delete is a dry run.
pub(crate) fn validate_options(options: &DeleteOptions) -> Result<bool, ApiError> {
    let mut causes = Vec::new();
    if let (Some(_), Some(policy)) = (options.orphan_dependents, &options.propagation_policy) {
        causes.push(StatusCause::invalid(
            "propagationPolicy",
            &Value::from(policy.as_str()),
            "orphanDependents and deletionPropagation cannot be both set",
        ));
    }
    if let Some(DeletionPropagation::Other(value)) = &options.propagation_policy {
        causes.push(StatusCause::not_supported(
            "propagationPolicy",
            &Value::from(value.as_str()),
            POLICY_VALUES,
        ));
    }
    let dry_run = match crate::server::http::dry_run::delete_dry_run(&options.dry_run) {
        Ok(dry_run) => dry_run,
        Err(e) => {
            let status = e.into_status();
            causes.extend(status.details.map(|d| d.causes).unwrap_or_default());
            true
        }
    };
    if causes.is_empty() {
        Ok(dry_run)
    } else {
        Err(ApiError::invalid(
            "meta.k8s.io",
            "DeleteOptions",
            "",
            causes,
        ))
    }
}

/// A string list at a JSON pointer (empty when absent).
fn strings_at(object: &Value, pointer: &str) -> Vec<String> {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.finalizers`.
pub(crate) fn finalizers(object: &Value) -> Vec<String> {
    strings_at(object, "/metadata/finalizers")
}

/// Whether `metadata.deletionTimestamp` is set.
pub(crate) fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Whether anything still holds the object: `metadata.finalizers`, or for namespaces
/// `spec.finalizers`.
fn held(class: DeleteClass, object: &Value) -> bool {
    !finalizers(object).is_empty()
        || (class.namespace && !strings_at(object, "/spec/finalizers").is_empty())
}

/// The object's finalizers after a delete with `options`, following upstream's order of
/// precedence: `orphanDependents`, then `propagationPolicy`, then the collector finalizer the
/// object already has, then the kind's default.
fn finalizers_after_delete(
    class: DeleteClass,
    current: &[String],
    options: &DeleteOptions,
) -> Vec<String> {
    let has = |f: &str| current.iter().any(|c| c == f);
    let explicit = match (options.orphan_dependents, &options.propagation_policy) {
        (Some(true), _) | (None, Some(DeletionPropagation::Orphan)) => Some((true, false)),
        (Some(false), _) | (None, Some(DeletionPropagation::Background)) => Some((false, false)),
        (None, Some(DeletionPropagation::Foreground)) => Some((false, true)),
        _ => None,
    };
    let (orphan, foreground) = explicit.unwrap_or_else(|| {
        if has(ORPHAN_FINALIZER) {
            (true, false)
        } else if has(FOREGROUND_FINALIZER) {
            (false, true)
        } else {
            (class.default_orphan, false)
        }
    });
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN_FINALIZER.to_owned());
    }
    if foreground {
        next.push(FOREGROUND_FINALIZER.to_owned());
    }
    let same = next.len() == current.len() && next.iter().all(|f| has(f));
    if same { current.to_vec() } else { next }
}

/// What a delete does to an object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DeletePlan {
    /// Nothing holds it: remove it from the store.
    Remove,
    /// It stays, marked for deletion: store this.
    Mark(Value),
    /// It is already marked exactly so.
    Unchanged,
}

fn timestamp_after(now: jiff::Timestamp, seconds: i64) -> Value {
    let at = now
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap_or(now);
    serde_json::to_value(Time::from(at)).unwrap_or(Value::Null)
}

/// The grace period a delete gives a Pod that is not being deleted yet, as upstream's Pod
/// strategy computes it: the request's, else the Pod's own, and zero for a Pod that is not
/// scheduled or has finished.
fn pod_grace(pod: &Value, options: &DeleteOptions) -> i64 {
    let requested = options
        .grace_period_seconds
        .or_else(|| {
            pod.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(DEFAULT_POD_GRACE);
    let scheduled = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let finished = matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Failed" | "Succeeded")
    );
    if !scheduled || finished {
        0
    } else {
        // Negative periods mean one second upstream.
        if requested < 0 { 1 } else { requested }
    }
}

/// Decides what a delete with `options` does to `current` (a served or stored object) at
/// `now`, as upstream's generic store does: collector finalizers are set or cleared per the
/// policy, an object that anything holds is marked (`deletionTimestamp`, and for Pods with a
/// grace period `deletionGracePeriodSeconds`), and anything else is removed.
pub(crate) fn plan_delete(
    class: DeleteClass,
    current: &Value,
    options: &DeleteOptions,
    now: jiff::Timestamp,
) -> DeletePlan {
    let already = is_deleting(current);
    let current_grace = current
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut grace = 0;
    if class.pod {
        if already && current_grace > 0 {
            // A graceful deletion is under way: only a shorter period changes it, and the
            // finalizers stay as they are.
            match options.grace_period_seconds.map(|g| g.max(0)) {
                Some(shorter) if shorter < current_grace => grace = shorter,
                _ => return DeletePlan::Unchanged,
            }
            if grace > 0 {
                let mut next = current.clone();
                let meta = crate::server::objects::json::meta_mut(&mut next);
                meta.insert("deletionTimestamp".into(), timestamp_after(now, grace));
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
                return DeletePlan::Mark(next);
            }
        } else if !already {
            grace = pod_grace(current, options);
        }
    }
    let before = finalizers(current);
    let after = finalizers_after_delete(class, &before, options);
    let mut next = current.clone();
    if after != before {
        crate::server::objects::json::meta_mut(&mut next).insert(
            "finalizers".into(),
            Value::from(after.iter().map(String::as_str).collect::<Vec<_>>()),
        );
    }
    if grace <= 0 && !held(class, &next) {
        return DeletePlan::Remove;
    }
    let meta = crate::server::objects::json::meta_mut(&mut next);
    if !already {
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
            && generation > 0
        {
            meta.insert("generation".into(), Value::from(generation + 1));
        }
        meta.insert("deletionTimestamp".into(), timestamp_after(now, grace));
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
    } else if grace == 0 && current_grace > 0 {
        meta.insert("deletionTimestamp".into(), timestamp_after(now, 0));
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
    }
    if class.namespace
        && let Value::Object(map) = &mut next
    {
        let phase = map
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        crate::server::objects::json::object_mut(phase)
            .insert("phase".into(), Value::from("Terminating"));
    }
    if next == *current {
        DeletePlan::Unchanged
    } else {
        DeletePlan::Mark(next)
    }
}

/// Starts the collector for a server; it ends when `stop` flips.
pub(crate) fn spawn(state: State, stop: signal::Receiver<bool>) {
    tokio::spawn(async move {
        Collector::new(state, stop).run().await;
    });
}

/// One owner reference of a stored object, as far as the collector needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

impl OwnerRef {
    fn group(&self) -> &str {
        group_of(&self.api_version)
    }
}

fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// One stored object in the collector's graph.
#[derive(Debug, Clone)]
struct Node {
    key: String,
    name: String,
    namespace: Option<String>,
    group: String,
    kind: String,
    owners: Vec<OwnerRef>,
    deleting: bool,
    /// Marked for deletion with `foregroundDeletion`: waiting for its dependents.
    deleting_dependents: bool,
    /// Marked for deletion with `orphan`.
    orphaning: bool,
    /// Marked for deletion with nothing left to hold it (a crash between the write that
    /// dropped the last finalizer and the delete): it only needs removing.
    stale: bool,
    /// A namespace whose lifecycle has not finished.
    terminating_namespace: bool,
    /// A Pod's `deletionTimestamp`, when it is being deleted.
    graceful_until: Option<String>,
}

impl Node {
    /// Whether the collector has something to do for this object itself.
    fn pending(&self) -> bool {
        self.deleting_dependents || self.orphaning || self.stale
    }
}

/// Whether a marked object has nothing left to wait for: no finalizer holds it, and it is not
/// a Pod within its grace period.
fn unheld(key: &str, object: &Value) -> bool {
    let class = class_of_key(key);
    let graceful = class.pod
        && object
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|g| g > 0);
    is_deleting(object) && !held(class, object) && !graceful
}

/// The parts of a stored object the collector reads. Every write passes through the
/// collector's watch, so it skips the rest of the value instead of building it.
#[derive(Debug, Deserialize)]
struct Stored {
    #[serde(default, rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: Option<StoredMeta>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredMeta {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    owner_references: Option<Vec<StoredRef>>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
    #[serde(default)]
    deletion_grace_period_seconds: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredRef {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    block_owner_deletion: Option<bool>,
}

/// Reads a stored value into a node and its uid; `None` for anything that is not an object
/// with a uid.
fn parse_node(key: &str, value: &[u8]) -> Option<(String, Node)> {
    if class_of_key(key).namespace {
        // Namespaces are few, and `spec.finalizers` holds them too.
        let object: Value = serde_json::from_slice(value).ok()?;
        return node_of(key, &object);
    }
    let stored: Stored = serde_json::from_slice(value).ok()?;
    build_node(key, stored, Vec::new())
}

/// The node of an object and its uid; `None` without a uid.
fn node_of(key: &str, object: &Value) -> Option<(String, Node)> {
    let stored = Stored::deserialize(object).ok()?;
    build_node(key, stored, strings_at(object, "/spec/finalizers"))
}

fn build_node(key: &str, stored: Stored, spec_finalizers: Vec<String>) -> Option<(String, Node)> {
    let meta = stored.metadata?;
    let uid = meta.uid.filter(|u| !u.is_empty())?;
    let owners = meta
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| OwnerRef {
            api_version: r.api_version.unwrap_or_default(),
            kind: r.kind.unwrap_or_default(),
            name: r.name.unwrap_or_default(),
            uid: r.uid.unwrap_or_default(),
            block: r.block_owner_deletion.unwrap_or(false),
        })
        .collect();
    let class = class_of_key(key);
    let deleting = meta.deletion_timestamp.is_some();
    let fins = meta.finalizers.unwrap_or_default();
    let has = |f: &str| fins.iter().any(|x| x == f);
    let graceful = class.pod && meta.deletion_grace_period_seconds.is_some_and(|g| g > 0);
    let unheld = fins.is_empty() && (!class.namespace || spec_finalizers.is_empty());
    let node = Node {
        key: key.to_owned(),
        name: meta.name.unwrap_or_default(),
        namespace: meta.namespace.filter(|ns| !ns.is_empty()),
        group: group_of(stored.api_version.as_deref().unwrap_or("")).to_owned(),
        kind: stored.kind.unwrap_or_default(),
        owners,
        deleting,
        deleting_dependents: deleting && has(FOREGROUND_FINALIZER),
        orphaning: deleting && has(ORPHAN_FINALIZER),
        stale: deleting && unheld && !graceful,
        terminating_namespace: class.namespace
            && deleting
            && spec_finalizers.iter().any(|f| f == NAMESPACE_FINALIZER),
        graceful_until: if class.pod && deleting {
            meta.deletion_timestamp
        } else {
            None
        },
    };
    Some((uid, node))
}

/// The collector's view of the store: objects by uid, and who names whom as owner.
#[derive(Debug, Default)]
struct Graph {
    nodes: HashMap<String, Node>,
    /// Store key to the uid of the object stored there, so that a delete needs only the key.
    uids: HashMap<String, String>,
    /// Owner uid to the uids of objects whose references name it.
    dependents: HashMap<String, BTreeSet<String>>,
}

impl Graph {
    fn insert(&mut self, uid: &str, node: Node) -> Option<Node> {
        let old = self.nodes.insert(uid.to_owned(), node.clone());
        if let Some(old) = &old {
            self.unlink(uid, old);
        }
        self.uids.insert(node.key.clone(), uid.to_owned());
        for owner in &node.owners {
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(uid.to_owned());
        }
        old
    }

    fn remove(&mut self, uid: &str) -> Option<Node> {
        let old = self.nodes.remove(uid)?;
        self.unlink(uid, &old);
        if self.uids.get(&old.key).is_some_and(|at| at == uid) {
            self.uids.remove(&old.key);
        }
        Some(old)
    }

    /// The uid of the object stored under `key`.
    fn uid_at(&self, key: &str) -> Option<String> {
        self.uids.get(key).cloned()
    }

    fn unlink(&mut self, uid: &str, node: &Node) {
        for owner in &node.owners {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(uid);
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
    }

    /// Whether `reference` of `dependent` names `owner` (uid, kind, name, and a namespace the
    /// owner may own objects in).
    fn names(owner: &Node, dependent: &Node, reference: &OwnerRef) -> bool {
        reference.kind == owner.kind
            && reference.group() == owner.group
            && reference.name == owner.name
            && match &owner.namespace {
                None => true,
                Some(ns) => dependent.namespace.as_ref() == Some(ns),
            }
    }

    /// The dependents of `owner_uid` whose references really resolve to it, each with whether
    /// it blocks the owner's deletion.
    fn dependents_of(&self, owner_uid: &str) -> Vec<(String, bool)> {
        let Some(owner) = self.nodes.get(owner_uid) else {
            return Vec::new();
        };
        let Some(uids) = self.dependents.get(owner_uid) else {
            return Vec::new();
        };
        uids.iter()
            .filter_map(|uid| {
                let dependent = self.nodes.get(uid)?;
                let mut refs = dependent
                    .owners
                    .iter()
                    .filter(|r| r.uid == owner_uid && Self::names(owner, dependent, r))
                    .peekable();
                refs.peek()?;
                let block = refs.any(|r| r.block);
                Some((uid.clone(), block))
            })
            .collect()
    }

    /// Whether an object not being deleted may have owners that are gone or waiting: some
    /// reference does not resolve to a live node in the graph.
    fn needs_check(&self, node: &Node) -> bool {
        !node.deleting
            && node.owners.iter().any(|r| match self.nodes.get(&r.uid) {
                None => true,
                Some(owner) => !Self::names(owner, node, r) || owner.deleting_dependents,
            })
    }
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
            let Some(last) = items.last().map(|kv| format!("{}\0", kv.key)) else {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(orphan: Option<bool>, policy: Option<&str>) -> DeleteOptions {
        DeleteOptions {
            orphan_dependents: orphan,
            propagation_policy: policy.map(DeletionPropagation::from),
            ..DeleteOptions::default()
        }
    }

    const PLAIN: DeleteClass = DeleteClass {
        pod: false,
        namespace: false,
        default_orphan: false,
    };
    const ORPHANING: DeleteClass = DeleteClass {
        pod: false,
        namespace: false,
        default_orphan: true,
    };

    /// The kind, its finalizers, `orphanDependents`, `propagationPolicy`, and the finalizers
    /// after the delete.
    type Row = (
        DeleteClass,
        &'static [&'static str],
        Option<bool>,
        Option<&'static str>,
        &'static [&'static str],
    );

    #[test]
    fn collector_finalizers_follow_upstream_precedence() {
        let rows: &[Row] = &[
            (PLAIN, &[], None, None, &[]),
            (ORPHANING, &[], None, None, &["orphan"]),
            (ORPHANING, &[], None, Some("Background"), &[]),
            (PLAIN, &[], None, Some("Orphan"), &["orphan"]),
            (
                PLAIN,
                &[],
                None,
                Some("Foreground"),
                &["foregroundDeletion"],
            ),
            (PLAIN, &["a"], Some(true), None, &["a", "orphan"]),
            (PLAIN, &["orphan"], Some(false), None, &[]),
            (PLAIN, &["orphan"], None, None, &["orphan"]),
            (
                PLAIN,
                &["foregroundDeletion"],
                None,
                None,
                &["foregroundDeletion"],
            ),
            (
                PLAIN,
                &["foregroundDeletion", "x"],
                None,
                Some("Orphan"),
                &["x", "orphan"],
            ),
            (
                ORPHANING,
                &["foregroundDeletion"],
                None,
                None,
                &["foregroundDeletion"],
            ),
        ];
        for (class, current, orphan, policy, want) in rows {
            let current: Vec<String> = current.iter().map(|s| (*s).to_owned()).collect();
            let got = finalizers_after_delete(*class, &current, &options(*orphan, *policy));
            assert_eq!(got, *want, "{class:?} {current:?} {orphan:?} {policy:?}");
        }
    }

    #[test]
    fn option_validation_uses_upstreams_words() {
        let rows = [
            (options(None, Some("Orphan")), None),
            (options(Some(true), None), None),
            (
                options(None, Some("Bogus")),
                Some(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                ),
            ),
            (
                options(Some(false), Some("Background")),
                Some(
                    "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set",
                ),
            ),
        ];
        for (options, want) in rows {
            match (validate_options(&options), want) {
                (Ok(dry), None) => assert!(!dry),
                (Err(e), Some(message)) => {
                    assert_eq!(e.code().as_u16(), 422);
                    assert_eq!(e.into_status().message.as_deref(), Some(message));
                }
                (got, want) => panic!("{options:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn pods_are_graceful_only_when_scheduled() {
        let pod_class = DeleteClass {
            pod: true,
            namespace: false,
            default_orphan: false,
        };
        let now = jiff::Timestamp::now();
        let unscheduled = serde_json::json!({"metadata": {"name": "p"}, "spec": {}});
        let scheduled = serde_json::json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 20},
        });
        let zero = DeleteOptions {
            grace_period_seconds: Some(0),
            ..DeleteOptions::default()
        };
        assert_eq!(
            plan_delete(pod_class, &unscheduled, &DeleteOptions::default(), now),
            DeletePlan::Remove
        );
        assert_eq!(
            plan_delete(pod_class, &scheduled, &zero, now),
            DeletePlan::Remove
        );
        let DeletePlan::Mark(marked) =
            plan_delete(pod_class, &scheduled, &DeleteOptions::default(), now)
        else {
            panic!("a scheduled pod is deleted gracefully");
        };
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 20);
        assert_eq!(
            plan_delete(pod_class, &marked, &DeleteOptions::default(), now),
            DeletePlan::Unchanged
        );
        assert_eq!(
            plan_delete(pod_class, &marked, &zero, now),
            DeletePlan::Remove
        );
    }
}
