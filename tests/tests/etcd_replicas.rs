//! Several `kapi serve` replicas over one etcd, driven with the kube crate: a write through one
//! replica reaches watches on another with the same resourceVersion, optimistic concurrency
//! holds across replicas, a restarted replica resumes a watch without missing events, and over
//! a three-member etcd the loss of a member (the leader) under write load loses no
//! acknowledged write while the replicas keep serving and `/readyz` reports the etcd check.
//! In 1.20 the replicas, each running the tokens controller, give every ServiceAccount one
//! token Secret between them, as one kube-controller-manager would. What admission reads on
//! every write (here a ResourceQuota) written through one replica binds writes through the
//! other, and stops binding them once deleted there.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

#[path = "../../runtime/tests/support/etcd.rs"]
mod etcd;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd::EtcdCluster;
use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, ResourceQuota, ResourceQuotaSpec, Secret, ServiceAccount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client, Config};

/// A `kapi serve --etcd-servers` child process; killed when dropped.
struct Replica {
    child: Child,
    addr: SocketAddr,
    _temp: tempfile::TempDir,
}

impl Replica {
    fn start(endpoints: &str) -> Self {
        Self::start_with(endpoints, &[])
    }

    /// A replica started with more flags.
    fn start_with(endpoints: &str, extra: &[&str]) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(temp.path().join("stderr.log")).unwrap();
        let mut child = Command::new(kapi_e2e::kapi_binary())
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--etcd-servers",
                endpoints,
                "--plain-http",
            ])
            .args(extra)
            .arg("--kubeconfig")
            .arg(temp.path().join("kubeconfig"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(60));
        let addr = match line.map(|l| kapi_e2e::parse_ready_line(&l)) {
            Ok(Ok(addr)) => addr,
            other => {
                let _ = child.kill();
                let stderr =
                    std::fs::read_to_string(temp.path().join("stderr.log")).unwrap_or_default();
                panic!("replica did not start ({other:?}): {stderr}");
            }
        };
        Replica {
            child,
            addr,
            _temp: temp,
        }
    }

    fn client(&self) -> Client {
        let config = Config::new(format!("http://{}", self.addr).parse().unwrap());
        Client::try_from(config).unwrap()
    }

    fn maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client(), "default")
    }

    /// `GET path` with a plain HTTP/1.0 request: (status code, body).
    fn get(&self, path: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let code = answer
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (code, body)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("v".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

fn rv(object: &ConfigMap) -> String {
    object.metadata.resource_version.clone().unwrap()
}

/// Reads `count` ADDED events from a watch of `maps` from `from`, as (name, resourceVersion).
async fn added(maps: &Api<ConfigMap>, from: &str, count: usize) -> Vec<(String, String)> {
    let stream = maps
        .watch(&WatchParams::default().timeout(30), from)
        .await
        .unwrap();
    let mut stream = stream.boxed();
    let mut seen = Vec::new();
    while seen.len() < count {
        let event = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .unwrap_or_else(|_| panic!("no event after {seen:?}"))
            .unwrap_or_else(|| panic!("watch ended after {seen:?}"))
            .unwrap();
        match event {
            WatchEvent::Added(cm) => seen.push((cm.metadata.name.clone().unwrap(), rv(&cm))),
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected event {other:?} after {seen:?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_watches_conflicts_and_resume_after_a_restart() {
    let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
        .await
        .unwrap();
    let endpoints = cluster.endpoints_flag();
    let a = Replica::start(&endpoints);
    let mut b = Replica::start(&endpoints);
    let (maps_a, maps_b) = (a.maps(), b.maps());
    let pp = PostParams::default();

    // A write through one replica reaches a watch on the other, same resourceVersion.
    let start = maps_b
        .list_metadata(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let watching = {
        let (maps_b, start) = (maps_b.clone(), start.clone());
        tokio::spawn(async move { added(&maps_b, &start, 1).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let created = maps_a
        .create(&pp, &config_map("shared", "1"))
        .await
        .unwrap();
    let seen = watching.await.unwrap();
    assert_eq!(seen, [("shared".to_owned(), rv(&created))]);

    // Optimistic concurrency across replicas: a write based on a stale read is refused.
    let stale = maps_b.get("shared").await.unwrap();
    let mut fresh = stale.clone();
    fresh.data = Some(BTreeMap::from([("v".to_owned(), "2".to_owned())]));
    maps_a.replace("shared", &pp, &fresh).await.unwrap();
    let mut late = stale;
    late.data = Some(BTreeMap::from([("v".to_owned(), "3".to_owned())]));
    match maps_b.replace("shared", &pp, &late).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 409, "{status:?}"),
        other => panic!("a stale replace through the other replica: {other:?}"),
    }

    // A replica restart: the watch resumes from the last resourceVersion it saw, and the
    // changes made through the other replica meanwhile all arrive, once each, in order.
    let from = rv(&maps_a.get("shared").await.unwrap());
    let mut before = Vec::new();
    for i in 0..5 {
        before.push(
            maps_a
                .create(&pp, &config_map(&format!("before-{i}"), "x"))
                .await
                .unwrap(),
        );
    }
    let seen = added(&maps_b, &from, 5).await;
    let want: Vec<_> = before
        .iter()
        .map(|cm| (cm.metadata.name.clone().unwrap(), rv(cm)))
        .collect();
    assert_eq!(seen, want);
    let resume_from = seen.last().unwrap().1.clone();
    tokio::task::block_in_place(|| b.kill());
    let mut during = Vec::new();
    for i in 0..5 {
        during.push(
            maps_a
                .create(&pp, &config_map(&format!("during-{i}"), "x"))
                .await
                .unwrap(),
        );
    }
    let b = tokio::task::block_in_place(|| Replica::start(&endpoints));
    let seen = added(&b.maps(), &resume_from, 5).await;
    let want: Vec<_> = during
        .iter()
        .map(|cm| (cm.metadata.name.clone().unwrap(), rv(cm)))
        .collect();
    assert_eq!(seen, want);
}

/// The member that leads the cluster, by index, asked through `etcdctl endpoint status`.
fn leader(cluster: &EtcdCluster) -> usize {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &cluster.endpoints_flag()])
        .args(["endpoint", "status", "--write-out", "json"])
        .output()
        .unwrap();
    let statuses: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let statuses = statuses.as_array().unwrap();
    statuses
        .iter()
        .position(|s| s["Status"]["header"]["member_id"] == s["Status"]["leader"])
        .unwrap_or(0)
}

/// Acknowledged creates: name → resourceVersion.
type Acked = Arc<Mutex<BTreeMap<String, String>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn losing_an_etcd_member_under_load_loses_no_acknowledged_write() {
    let mut cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(3))
        .await
        .unwrap();
    let endpoints = cluster.endpoints_flag();
    let replicas = [Replica::start(&endpoints), Replica::start(&endpoints)];
    let acked: Acked = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for writer in 0..4 {
        let maps = replicas[writer % 2].maps();
        let (acked, stop) = (acked.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let pp = PostParams::default();
            let mut failures = 0;
            for round in 0.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let name = format!("w{writer}-{round}");
                let object = config_map(&name, "x");
                let create = maps.create(&pp, &object);
                match tokio::time::timeout(Duration::from_secs(15), create).await {
                    Ok(Ok(created)) => {
                        acked.lock().unwrap().insert(name, rv(&created));
                    }
                    // Unacknowledged: may or may not have landed, and is not checked.
                    _ => failures += 1,
                }
            }
            failures
        }));
    }
    let wait_for = |n: usize| {
        let acked = acked.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            while acked.lock().unwrap().len() < n {
                assert!(tokio::time::Instant::now() < deadline, "writes stalled");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    wait_for(100).await;
    let victim = tokio::task::block_in_place(|| leader(&cluster));
    tokio::task::block_in_place(|| cluster.kill(victim));
    let at_kill = acked.lock().unwrap().len();
    // The replicas keep serving: writes go on being acknowledged after the member is gone.
    wait_for(at_kill + 100).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    for (i, replica) in replicas.iter().enumerate() {
        let maps = replica.maps();
        for (name, version) in &acked {
            let got = maps.get(name).await.unwrap();
            assert_eq!(&rv(&got), version, "{name} through replica {i}");
        }
        let (code, body) = tokio::task::block_in_place(|| replica.get("/readyz?verbose"));
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("[+]etcd ok"), "{body}");
        assert!(body.contains("readyz check passed"), "{body}");
    }
}

/// Each replica runs the tokens controller that kube-controller-manager runs once: in 1.20,
/// where it makes a token Secret per account, the replicas race for every new account, and
/// the account must still end with one token, referenced once
/// (`pkg/controller/serviceaccount/tokens_controller.go`: `ensureReferencedToken`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_give_each_account_one_token_secret_in_1_20() {
    let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
        .await
        .unwrap();
    let endpoints = cluster.endpoints_flag();
    // Plain HTTP: each replica signs with a key of its own, which changes nothing here.
    let flags = ["--kube-version", "1.20"];
    let a = Replica::start_with(&endpoints, &flags);
    let b = Replica::start_with(&endpoints, &flags);

    let namespaces: Api<Namespace> = Api::all(a.client());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some("team".to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(a.client(), "team");
    let names: Vec<String> = (0..12).map(|i| format!("robot-{i}")).collect();
    for name in &names {
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        accounts
            .create(&PostParams::default(), &account)
            .await
            .unwrap();
    }

    let secrets: Api<Secret> = Api::namespaced(b.client(), "team");
    let tokens_of = |list: &[Secret], account: &str| -> Vec<String> {
        list.iter()
            .filter(|s| s.type_.as_deref() == Some("kubernetes.io/service-account-token"))
            .filter(|s| {
                s.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("kubernetes.io/service-account.name"))
                    .map(String::as_str)
                    == Some(account)
            })
            .map(|s| s.metadata.name.clone().unwrap())
            .collect()
    };
    let mut settled = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let listed = secrets.list(&ListParams::default()).await.unwrap().items;
        let every = names.iter().all(|n| !tokens_of(&listed, n).is_empty());
        if every {
            settled = Some(());
            break;
        }
    }
    assert!(settled.is_some(), "not every account got a token");
    // Let a losing replica finish undoing its token.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let listed = secrets.list(&ListParams::default()).await.unwrap().items;
    let through_b: Api<ServiceAccount> = Api::namespaced(b.client(), "team");
    for name in names.iter().map(String::as_str).chain(["default"]) {
        let tokens = tokens_of(&listed, name);
        assert_eq!(tokens.len(), 1, "{name}: {tokens:?}");
        let account = through_b.get(name).await.unwrap();
        let referenced: Vec<String> = account
            .secrets
            .unwrap_or_default()
            .into_iter()
            .filter_map(|r| r.name)
            .collect();
        assert_eq!(referenced, tokens, "{name}");
    }
}

/// Creates ConfigMaps `<prefix>-0`, `<prefix>-1`, ... through `maps` every 100 ms, for at most
/// 15 s, until one is refused (`want_refusal`) or accepted: the answer that ended it.
async fn create_until(maps: &Api<ConfigMap>, prefix: &str, want_refusal: bool) -> Option<String> {
    for i in 0..150 {
        match maps
            .create(
                &PostParams::default(),
                &config_map(&format!("{prefix}-{i}"), "x"),
            )
            .await
        {
            Ok(_) if !want_refusal => return Some("created".to_owned()),
            Err(kube::Error::Api(status)) if want_refusal => {
                return Some(format!("{} {}", status.code, status.message));
            }
            Ok(_) | Err(kube::Error::Api(_)) => {}
            Err(e) => return Some(format!("{e}")),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Each replica keeps what admission reads on every write in memory, fed by a watch of the
/// store: a quota written through one replica reaches the other's admission (a moment later,
/// as upstream's quota admission reads quotas from an informer), and so does its deletion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quota_written_through_one_replica_binds_the_other() {
    let cluster = tokio::task::spawn_blocking(EtcdCluster::single)
        .await
        .unwrap();
    let endpoints = cluster.endpoints_flag();
    let a = Replica::start(&endpoints);
    let b = Replica::start(&endpoints);
    // Both replicas have listed the (empty) quotas before the quota exists.
    let (maps_a, maps_b) = (a.maps(), b.maps());
    maps_b
        .create(&PostParams::default(), &config_map("first", "x"))
        .await
        .unwrap();

    let quotas: Api<ResourceQuota> = Api::namespaced(a.client(), "default");
    let held = maps_a
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();
    let quota = ResourceQuota {
        metadata: ObjectMeta {
            name: Some("maps".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(ResourceQuotaSpec {
            hard: Some(BTreeMap::from([(
                "configmaps".to_owned(),
                Quantity((held + 1).to_string()),
            )])),
            ..ResourceQuotaSpec::default()
        }),
        ..ResourceQuota::default()
    };
    quotas.create(&PostParams::default(), &quota).await.unwrap();

    let refused = create_until(&maps_b, "over", true).await;
    let refused = refused.expect("the other replica never applied the quota");
    assert!(
        refused.starts_with("403 ") && refused.contains("exceeded quota: maps"),
        "{refused}"
    );

    quotas.delete("maps", &Default::default()).await.unwrap();
    let after = create_until(&maps_b, "free", false).await;
    assert_eq!(
        after.as_deref(),
        Some("created"),
        "the quota's deletion never arrived"
    );
}
