//! Storage: the engine-neutral conformance suite run against the etcd engine (each case on
//! its own fresh etcd, since a fresh store must be at revision 1), plus what only a shared,
//! replicated store has: engines over one etcd seeing each other's writes, prefixes keeping
//! servers apart, coordinated compaction, etcd's own request limit, and watches and writes
//! riding out the loss of a cluster member.

// Wall clock throughout: a paused clock would not wait for etcd.

#![allow(clippy::unwrap_used)]

#[path = "support/etcd.rs"]
mod etcd;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcd::EtcdCluster;
use kapi::storage::conformance::Fixture;
use kapi::storage::etcd::COMPACT_KEY;
use kapi::storage::{
    BoxFuture, CreateError, EtcdOptions, EtcdStorage, ReadError, Storage, UpdateError, WatchEvent,
};
use tokio::sync::Mutex;

/// Options for tests: no compaction behind their back, progress soon after idleness.
fn options(cluster: &EtcdCluster) -> EtcdOptions {
    EtcdOptions::new(cluster.endpoints())
        .with_compaction_interval(None)
        .with_progress_interval(Duration::from_millis(100))
}

/// A fresh etcd for every store the suite opens, all killed when the fixture goes.
struct Fresh {
    clusters: Mutex<Vec<EtcdCluster>>,
}

impl Fresh {
    fn new() -> Self {
        Self {
            clusters: Mutex::new(Vec::new()),
        }
    }
}

impl Fixture for Fresh {
    fn open(&self) -> BoxFuture<'_, Result<Arc<dyn Storage>, String>> {
        Box::pin(async move {
            let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
                .await
                .map_err(|e| e.to_string())?;
            let storage = EtcdStorage::connect(options(&cluster))
                .await
                .map_err(|e| e.to_string())?;
            self.clusters.lock().await.push(cluster);
            Ok(Arc::new(storage) as Arc<dyn Storage>)
        })
    }
}

kapi::storage_conformance_tests!(Fresh::new());

fn v(text: &str) -> Bytes {
    Bytes::copy_from_slice(text.as_bytes())
}

async fn connect(cluster: &EtcdCluster, prefix: &str) -> EtcdStorage {
    EtcdStorage::connect(options(cluster).with_prefix(prefix))
        .await
        .unwrap()
}

/// The next change (progress skipped) within five seconds.
async fn next_change(watch: &mut kapi::storage::WatchStream) -> WatchEvent {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .expect("a watch event in time")
            .expect("the watch goes on")
            .expect("no watch error");
        if !matches!(event, WatchEvent::Progress { .. }) {
            return event;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engines_over_one_etcd_share_revisions_and_conflicts() {
    let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
        .await
        .unwrap();
    let a = connect(&cluster, "").await;
    let b = connect(&cluster, "").await;
    let from = b.current_revision().await.unwrap();
    let mut watch = b.watch("/registry/", from).await.unwrap();
    let created = a.create("/registry/core/pods/ns/p", v("1")).await.unwrap();
    match next_change(&mut watch).await {
        WatchEvent::Put { kv, prev: None } => assert_eq!(kv, created),
        other => panic!("want the create, got {other:?}"),
    }
    let updated = b
        .update("/registry/core/pods/ns/p", v("2"), created.mod_revision)
        .await
        .unwrap();
    // A stale write through the other engine conflicts and sees the winner.
    match a
        .update("/registry/core/pods/ns/p", v("3"), created.mod_revision)
        .await
    {
        Err(UpdateError::Conflict { current }) => assert_eq!(current, updated),
        other => panic!("want a conflict, got {other:?}"),
    }
    assert_eq!(
        a.get("/registry/core/pods/ns/p", None).await.unwrap(),
        Some(updated)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefixes_keep_servers_apart() {
    let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
        .await
        .unwrap();
    let a = connect(&cluster, "/tenant-a").await;
    let b = connect(&cluster, "/tenant-b/").await;
    a.create("/registry/core/pods/ns/p", v("a")).await.unwrap();
    b.create("/registry/core/pods/ns/p", v("b")).await.unwrap();
    for (engine, want) in [(&a, "a"), (&b, "b")] {
        let list = engine.list("/registry/", None, None, None).await.unwrap();
        let items: Vec<_> = list
            .items
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.clone()))
            .collect();
        assert_eq!(items, [("/registry/core/pods/ns/p", v(want))]);
        assert_eq!(engine.count("/registry/").await.unwrap(), 1);
    }
    // The keys really carry the prefix in etcd.
    let mut client = a.client().clone();
    let raw = client
        .get("/tenant-b/registry/core/pods/ns/p", None)
        .await
        .unwrap();
    assert_eq!(raw.kvs()[0].value(), b"b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_over_etcds_request_limit_are_too_large() {
    let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
        .await
        .unwrap();
    // Told the cluster takes more than it does, so etcd itself refuses the write.
    let lenient = EtcdStorage::connect(options(&cluster).with_max_request_bytes(64 << 20))
        .await
        .unwrap();
    let strict = connect(&cluster, "").await;
    let big = Bytes::from(vec![b'x'; 2 << 20]);
    for (name, engine) in [("checked by etcd", &lenient), ("checked locally", &strict)] {
        match engine.create("/big", big.clone()).await {
            Err(CreateError::TooLarge { size, limit }) => {
                assert!(size > limit, "{name}: {size} <= {limit}")
            }
            other => panic!("{name}: want TooLarge, got {other:?}"),
        }
    }
    let small = strict.create("/big", v("small")).await.unwrap();
    match lenient.update("/big", big, small.mod_revision).await {
        Err(UpdateError::TooLarge { .. }) => {}
        other => panic!("want TooLarge, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_compact_once_per_interval() {
    let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
        .await
        .unwrap();
    let interval = Duration::from_millis(300);
    let replicas: Vec<EtcdStorage> =
        futures_util::future::join_all((0..3).map(|_| {
            EtcdStorage::connect(options(&cluster).with_compaction_interval(Some(interval)))
        }))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let started = Instant::now();
    let mut kv = replicas[0].create("/c/k", v("0")).await.unwrap();
    while started.elapsed() < Duration::from_secs(3) {
        kv = replicas[1]
            .update("/c/k", v("x"), kv.mod_revision)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rounds = started.elapsed().as_millis() / interval.as_millis() + 1;
    let mut client = replicas[0].client().clone();
    let key = client.get(COMPACT_KEY, None).await.unwrap();
    let version = key.kvs()[0].version();
    // Three replicas, but one compaction per round at most.
    assert!(version >= 2, "compactions recorded: {version}");
    assert!(
        u128::try_from(version).unwrap() <= rounds,
        "{version} compactions in {rounds} rounds"
    );
    let point = replicas[2].compacted_revision().await.unwrap();
    assert!(point > 1, "compaction point {point}");
    match replicas[2].get("/c/k", Some(point - 1)).await {
        Err(ReadError::Compacted { compacted, .. }) => assert!(compacted >= point),
        other => panic!("read below the compaction point: {other:?}"),
    }
    // A replica whose own compactor never won still refuses old watches.
    assert!(
        replicas[2].watch("/c/", 1).await.is_err() || {
            let mut w = replicas[2].watch("/c/", 1).await.unwrap();
            matches!(w.next().await, Some(Err(_)))
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_and_watches_survive_losing_a_member() {
    let mut cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(3))
        .await
        .unwrap();
    let engine = Arc::new(connect(&cluster, "").await);
    let from = engine.current_revision().await.unwrap();
    let mut watch = engine.watch("/load/", from).await.unwrap();
    let writer = {
        let engine = engine.clone();
        tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0..150 {
                // A write may fail while the cluster re-forms; only acknowledged ones count.
                if let Ok(kv) = engine.create(&format!("/load/{i:04}"), v("x")).await {
                    acked.push(kv);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            acked
        })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    // The first member: the one this process dialed first, and possibly the leader.
    tokio::task::block_in_place(|| cluster.kill(0));
    let acked = writer.await.unwrap();
    assert!(
        acked.len() >= 100,
        "only {} writes acknowledged",
        acked.len()
    );
    // Writes that failed ambiguously may have landed too: the acknowledged ones must all
    // be among the events, which come in strictly increasing revisions.
    let last = acked.last().unwrap().mod_revision;
    let mut seen = Vec::new();
    while seen
        .last()
        .is_none_or(|kv: &kapi::storage::KeyValue| kv.mod_revision < last)
    {
        match next_change(&mut watch).await {
            WatchEvent::Put { kv, .. } => seen.push(kv),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        seen.windows(2)
            .all(|w| w[0].mod_revision < w[1].mod_revision)
    );
    let missing: Vec<_> = acked.iter().filter(|kv| !seen.contains(kv)).collect();
    assert!(
        missing.is_empty(),
        "acknowledged but never watched: {missing:?}"
    );
    for kv in &acked {
        assert_eq!(engine.get(&kv.key, None).await.unwrap().as_ref(), Some(kv));
    }
}
