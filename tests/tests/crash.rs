//! Crash safety of the `kapi` binary: clients write ConfigMaps concurrently, the server is
//! killed with SIGKILL mid-stream, and after a restart on the same data directory every write
//! the server acknowledged is there and new resourceVersions are greater than all old ones.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kapi_e2e::{KapiServer, ServerOptions};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client, Config};

const WRITERS: usize = 4;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

fn api(server: &KapiServer) -> Api<ConfigMap> {
    let config = Config::new(server.url().parse().unwrap());
    Api::namespaced(Client::try_from(config).unwrap(), "default")
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

/// Acknowledged writes: name → (value, resourceVersion).
type Acked = Arc<Mutex<BTreeMap<String, (String, u64)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_kill_dash_nine() {
    let data = tempfile::tempdir().unwrap();
    let options = ServerOptions {
        data_dir: Some(data.path().to_path_buf()),
        ..ServerOptions::default()
    };
    let mut server = KapiServer::start(&options).unwrap();
    let maps = api(&server);
    let acked: Acked = Arc::default();

    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let maps = maps.clone();
        let acked = acked.clone();
        writers.push(tokio::spawn(async move {
            // Creates, and every third round an update of the writer's previous object, until
            // the server is gone.
            let pp = PostParams::default();
            let mut last: Option<ConfigMap> = None;
            for round in 0.. {
                let name = format!("w{writer}-{round}");
                let value = format!("{writer}:{round}");
                let object = config_map(&name, &value);
                let create = maps.create(&pp, &object);
                let Ok(Ok(created)) = tokio::time::timeout(REQUEST_TIMEOUT, create).await else {
                    return;
                };
                let rv = created
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap()
                    .parse()
                    .unwrap();
                acked.lock().unwrap().insert(name.clone(), (value, rv));
                if let Some(mut previous) = last.take().filter(|_| round % 3 == 0) {
                    let prev_name = previous.metadata.name.clone().unwrap();
                    let value = format!("{writer}:{round}:updated");
                    previous.data = Some(BTreeMap::from([("v".to_owned(), value.clone())]));
                    let replace = maps.replace(&prev_name, &pp, &previous);
                    let Ok(Ok(updated)) = tokio::time::timeout(REQUEST_TIMEOUT, replace).await
                    else {
                        return;
                    };
                    let rv = updated
                        .metadata
                        .resource_version
                        .clone()
                        .unwrap()
                        .parse()
                        .unwrap();
                    acked.lock().unwrap().insert(prev_name, (value, rv));
                }
                last = Some(created);
            }
        }));
    }

    // Let the writers get going, then pull the plug while they are mid-stream.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while acked.lock().unwrap().len() < 200 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill();
    for writer in writers {
        tokio::time::timeout(Duration::from_secs(30), writer)
            .await
            .unwrap()
            .unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 50,
        "only {} writes acknowledged before the kill",
        acked.len()
    );
    let newest_acked = acked.values().map(|(_, rv)| *rv).max().unwrap();

    let server = KapiServer::start(&options).unwrap();
    let maps = api(&server);
    let listed = tokio::time::timeout(REQUEST_TIMEOUT, maps.list(&ListParams::default()))
        .await
        .unwrap()
        .unwrap();
    let found: BTreeMap<String, (String, u64)> = listed
        .items
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap(),
                (
                    cm.data
                        .as_ref()
                        .and_then(|d| d.get("v").cloned())
                        .unwrap_or_default(),
                    cm.metadata
                        .resource_version
                        .clone()
                        .unwrap()
                        .parse()
                        .unwrap(),
                ),
            )
        })
        .collect();
    let lost: Vec<String> = acked
        .iter()
        .filter(|(name, (value, rv))| {
            // A write in flight at the kill may have committed after its ack was lost, so only
            // an acknowledged state missing or replaced by an older one counts as lost.
            found
                .get(*name)
                .is_none_or(|(v, found_rv)| found_rv < rv || (found_rv == rv && v != value))
        })
        .map(|(name, state)| format!("{name} {state:?} -> {:?}", found.get(name)))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged writes lost after kill -9: {lost:?}"
    );

    let list_rv: u64 = listed
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        list_rv >= newest_acked,
        "list at {list_rv} after acked {newest_acked}"
    );
    let fresh = maps
        .create(&PostParams::default(), &config_map("after-restart", "x"))
        .await
        .unwrap();
    let fresh_rv: u64 = fresh.metadata.resource_version.unwrap().parse().unwrap();
    let newest_stored = found.values().map(|(_, rv)| *rv).max().unwrap();
    assert!(
        fresh_rv > newest_acked && fresh_rv > newest_stored,
        "new resourceVersion {fresh_rv} not above acked {newest_acked} / stored {newest_stored}"
    );
    eprintln!(
        "crash: {} acknowledged writes survived kill -9; newest acked rv {newest_acked}, first new rv {fresh_rv}",
        acked.len()
    );
}
