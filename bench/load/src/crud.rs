//! Single-object operations on ConfigMaps in one namespace: create, get and update (PUT), each
//! one request on a connection, and which object the i-th operation touches.
//!
//! Every created object carries `data.stamp = "<i>:<nanoseconds since the run's epoch>"` taken
//! right before its request is written, which is how the watch scenario times delivery.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use hyper::{Method, StatusCode};
use serde_json::json;

use crate::http::Conn;

/// A multiplier coprime with any object count that is not its multiple, so `i * SPREAD % n`
/// visits every object once in `n` operations without two concurrent updates of one object.
const SPREAD: u64 = 104_729;

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// Creates object `i` (the i-th new name).
    Create,
    /// Reads an object, spread over the stored ones.
    Get,
    /// Replaces an object with new data at its last seen resourceVersion.
    Update,
}

/// ConfigMaps in one namespace and what the load generator knows of them.
#[derive(Debug)]
pub(crate) struct Workload {
    namespace: String,
    payload: String,
    epoch: Instant,
    /// The resourceVersion each object last had, from its create or update response.
    versions: Vec<Mutex<String>>,
    /// When each object's create was answered, since the epoch: the watch scenario tells the
    /// commit's cost apart from the fan-out's with it.
    answered: Vec<OnceLock<Duration>>,
}

impl Workload {
    /// A workload over `objects` ConfigMaps with `payload_bytes` of data each.
    pub(crate) fn new(
        namespace: &str,
        objects: usize,
        payload_bytes: usize,
        epoch: Instant,
    ) -> Self {
        Self {
            namespace: namespace.to_owned(),
            payload: "x".repeat(payload_bytes),
            epoch,
            versions: (0..objects).map(|_| Mutex::new(String::new())).collect(),
            answered: (0..objects).map(|_| OnceLock::new()).collect(),
        }
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.namespace
    }

    pub(crate) fn collection(&self) -> String {
        format!("/api/v1/namespaces/{}/configmaps", self.namespace)
    }

    /// Creates the namespace the workload's objects live in.
    pub(crate) async fn create_namespace(&self, conn: &mut Conn) -> Result<()> {
        let body =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}});
        conn.expect(
            Method::POST,
            "/api/v1/namespaces",
            Some(Bytes::from(body.to_string())),
            StatusCode::CREATED,
        )
        .await?;
        Ok(())
    }

    /// Runs the `i`-th operation of kind `op`.
    pub(crate) async fn run(&self, op: Op, conn: &mut Conn, i: u64) -> Result<()> {
        match op {
            Op::Create => {
                let index = i as usize;
                let body = self.object(index, i, None);
                let reply = conn
                    .expect(
                        Method::POST,
                        &self.collection(),
                        Some(body),
                        StatusCode::CREATED,
                    )
                    .await?;
                if let Some(slot) = self.answered.get(index) {
                    let _ = slot.set(self.epoch.elapsed());
                }
                self.remember(index, &reply);
            }
            Op::Get => {
                let index = self.spread(i);
                let path = format!("{}/{}", self.collection(), name(index));
                conn.expect(Method::GET, &path, None, StatusCode::OK)
                    .await?;
            }
            Op::Update => {
                let index = self.spread(i);
                let version = self
                    .versions
                    .get(index)
                    .and_then(|v| v.lock().ok().map(|v| v.clone()))
                    .context("no resourceVersion for the object")?;
                let body = self.object(index, i, Some(&version));
                let path = format!("{}/{}", self.collection(), name(index));
                let reply = conn
                    .expect(Method::PUT, &path, Some(body), StatusCode::OK)
                    .await?;
                self.remember(index, &reply);
            }
        }
        Ok(())
    }

    /// When the create of object `index` was answered, measured from the epoch.
    pub(crate) fn answered(&self, index: usize) -> Option<Duration> {
        self.answered
            .get(index)
            .and_then(|slot| slot.get().copied())
    }

    fn spread(&self, i: u64) -> usize {
        let n = self.versions.len().max(1) as u64;
        (i.wrapping_mul(SPREAD) % n) as usize
    }

    fn object(&self, index: usize, i: u64, version: Option<&str>) -> Bytes {
        let stamp = format!("{index}:{}", self.epoch.elapsed().as_nanos());
        let mut metadata = json!({
            "name": name(index),
            "namespace": self.namespace,
            "labels": {"app": "kapi-load"},
        });
        if let Some(version) = version {
            metadata["resourceVersion"] = json!(version);
        }
        let body = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata,
            "data": {"stamp": stamp, "generation": i.to_string(), "payload": self.payload},
        });
        Bytes::from(body.to_string())
    }

    fn remember(&self, index: usize, reply: &[u8]) {
        if let (Some(slot), Some(version)) = (self.versions.get(index), resource_version(reply))
            && let Ok(mut slot) = slot.lock()
        {
            *slot = version;
        }
    }
}

/// The name of object `index`.
pub(crate) fn name(index: usize) -> String {
    format!("cm-{index:05}")
}

/// `metadata.resourceVersion` of a single object's JSON, found without parsing the whole
/// body (it occurs once; managed fields never carry it).
fn resource_version(body: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"resourceVersion\":\"";
    let start = body.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let len = body[start..].iter().position(|&b| b == b'"')?;
    String::from_utf8(body[start..start + len].to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_versions_are_found_in_replies() {
        let reply =
            br#"{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"42","uid":"u"}}"#;
        assert_eq!(resource_version(reply).as_deref(), Some("42"));
        assert_eq!(resource_version(b"{}"), None);
    }

    #[test]
    fn spread_visits_every_object_once() {
        let work = Workload::new("ns", 10_000, 0, Instant::now());
        let mut seen: Vec<usize> = (0..10_000).map(|i| work.spread(i)).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 10_000);
    }
}
