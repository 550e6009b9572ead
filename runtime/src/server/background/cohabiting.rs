//! Objects an earlier kapi stored under a group that now shares another group's storage.
//!
//! Before built-ins were stored once per [`Family`](crate::conversion::Family), a resource
//! served in two groups (Ingresses in `extensions` and `networking.k8s.io`, Events in the core
//! group and `events.k8s.io`) was stored twice, under each group's keys. At start the server
//! moves what it finds under a member group's keys to the family's storage keys, converted to
//! the storage version: a create of the new key, then a delete of the old one guarded by the
//! revision it was read at, so a crash between the two leaves both and the next start finishes
//! the move. An object whose name the storage keys already hold for another object (the two
//! groups were separate stores then) stays where it is, and is logged.
//!
//! Objects stored in another version of the same group need no move: the family converts them
//! from the version they were stored in whenever they are read.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::conversion::Family;
use crate::storage::{Bytes, CreateError, DeleteError, Storage};

use crate::server::background::TaskError;
use crate::server::objects::json::meta_str;
use crate::server::state::State;
use crate::server::state::keys::{self, prefix_of};

/// How many keys one read of an old prefix returns, so a large store is moved in bounded steps.
const PAGE: usize = 500;

/// Moves every object stored under a family member's group into the family's storage; answers
/// how many moved.
pub(crate) async fn move_all(state: &State) -> Result<usize, TaskError> {
    let registry = state.registry();
    let mut moves: BTreeMap<(String, String), &'static Family> = BTreeMap::new();
    for kind in registry.kinds() {
        let Some(family) = kind.info.family else {
            continue;
        };
        for version in family.versions {
            let group = version
                .api_version
                .rsplit_once('/')
                .map_or("", |(group, _)| group);
            if group != family.storage_group() {
                let from = prefix_of(group, family.resource);
                let to = prefix_of(family.storage_group(), family.resource);
                moves.insert((from, to), family);
            }
        }
    }
    let mut moved = 0;
    for ((from, to), family) in moves {
        moved += move_prefix(state, &from, &to, family).await?;
    }
    Ok(moved)
}

async fn move_prefix(
    state: &State,
    from: &str,
    to: &str,
    family: &Family,
) -> Result<usize, TaskError> {
    let storage = &state.storage;
    let mut moved = 0;
    let mut start: Option<String> = None;
    loop {
        let page = storage
            .list(from, None, start.as_deref(), Some(PAGE))
            .await?;
        let Some(last) = page.items.last() else {
            return Ok(moved);
        };
        start = Some(keys::after(&last.key));
        let more = page.more;
        for kv in &page.items {
            let Some(rest) = kv.key.strip_prefix(from) else {
                continue;
            };
            let target = format!("{to}{rest}");
            let object: Value =
                serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
                    key: kv.key.clone(),
                    source,
                })?;
            let uid = meta_str(&object, "uid").map(str::to_owned);
            let converted = match family.convert(object, family.storage) {
                Ok(converted) => converted,
                Err(error) => {
                    tracing::warn!(key = %kv.key, %error, "an object stored by an earlier kapi does not convert; left where it is");
                    continue;
                }
            };
            let value = serde_json::to_vec(&converted).map_err(TaskError::Encode)?;
            match storage.create(&target, Bytes::from(value)).await {
                Ok(_) => {}
                Err(CreateError::AlreadyExists { current }) => {
                    let held: Option<Value> = serde_json::from_slice(&current.value).ok();
                    if held.as_ref().and_then(|h| meta_str(h, "uid")) != uid.as_deref() {
                        tracing::warn!(key = %kv.key, target = %target, "an object stored by an earlier kapi has the name of another in its new place; left where it is");
                        continue;
                    }
                }
                Err(source) => {
                    return Err(TaskError::Create {
                        key: target,
                        source,
                    });
                }
            }
            match storage.delete(&kv.key, Some(kv.mod_revision)).await {
                Ok(_) | Err(DeleteError::NotFound | DeleteError::Conflict { .. }) => {}
                Err(error) => {
                    tracing::warn!(key = %kv.key, %error, "an object moved to its family's storage could not be removed from its old place");
                }
            }
            moved += 1;
            tracing::info!(from = %kv.key, to = %target, "moved an object to its family's storage");
        }
        if !more {
            return Ok(moved);
        }
    }
}
