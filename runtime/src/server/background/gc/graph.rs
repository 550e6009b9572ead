//! The collector's graph of the store: one node per stored object (its coordinates, owner
//! references and deletion state, read from the stored bytes without building the whole
//! value), indexed by uid and by store key, with every owner's dependents; and how an owner
//! reference resolves to a node (kind, name, uid, and a namespace the owner may own objects
//! in).
//!
//! The graph is the collector's own, rebuilt from a full list and kept current from its watch;
//! a stale graph only delays work, as the collector re-reads an object before it writes.

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::Value;

use crate::server::state::builtin::NAMESPACE_FINALIZER;

use super::deletion::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER, class_of_key, strings_at};

/// One owner reference of a stored object, as far as the collector needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct OwnerRef {
    api_version: String,
    pub(super) kind: String,
    pub(super) name: String,
    pub(super) uid: String,
    block: bool,
}

impl OwnerRef {
    pub(super) fn group(&self) -> &str {
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
pub(super) struct Node {
    pub(super) key: String,
    pub(super) name: String,
    pub(super) namespace: Option<String>,
    group: String,
    kind: String,
    pub(super) owners: Vec<OwnerRef>,
    pub(super) deleting: bool,
    /// Marked for deletion with `foregroundDeletion`: waiting for its dependents.
    pub(super) deleting_dependents: bool,
    /// Marked for deletion with `orphan`.
    orphaning: bool,
    /// Marked for deletion with nothing left to hold it (a crash between the write that
    /// dropped the last finalizer and the delete): it only needs removing.
    stale: bool,
    /// A namespace whose lifecycle has not finished.
    pub(super) terminating_namespace: bool,
    /// A Pod's `deletionTimestamp`, when it is being deleted.
    pub(super) graceful_until: Option<String>,
}

impl Node {
    /// Whether the collector has something to do for this object itself.
    pub(super) fn pending(&self) -> bool {
        self.deleting_dependents || self.orphaning || self.stale
    }
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
pub(super) fn parse_node(key: &str, value: &[u8]) -> Option<(String, Node)> {
    if class_of_key(key).namespace {
        // Namespaces are few, and `spec.finalizers` holds them too.
        let object: Value = serde_json::from_slice(value).ok()?;
        return node_of(key, &object);
    }
    let stored: Stored = serde_json::from_slice(value).ok()?;
    build_node(key, stored, Vec::new())
}

/// The node of an object and its uid; `None` without a uid.
pub(super) fn node_of(key: &str, object: &Value) -> Option<(String, Node)> {
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
pub(super) struct Graph {
    pub(super) nodes: HashMap<String, Node>,
    /// Store key to the uid of the object stored there, so that a delete needs only the key.
    uids: HashMap<String, String>,
    /// Owner uid to the uids of objects whose references name it.
    pub(super) dependents: HashMap<String, BTreeSet<String>>,
}

impl Graph {
    pub(super) fn insert(&mut self, uid: &str, node: Node) -> Option<Node> {
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

    pub(super) fn remove(&mut self, uid: &str) -> Option<Node> {
        let old = self.nodes.remove(uid)?;
        self.unlink(uid, &old);
        if self.uids.get(&old.key).is_some_and(|at| at == uid) {
            self.uids.remove(&old.key);
        }
        Some(old)
    }

    /// The uid of the object stored under `key`.
    pub(super) fn uid_at(&self, key: &str) -> Option<String> {
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
    pub(super) fn dependents_of(&self, owner_uid: &str) -> Vec<(String, bool)> {
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
    pub(super) fn needs_check(&self, node: &Node) -> bool {
        !node.deleting
            && node.owners.iter().any(|r| match self.nodes.get(&r.uid) {
                None => true,
                Some(owner) => !Self::names(owner, node, r) || owner.deleting_dependents,
            })
    }
}
