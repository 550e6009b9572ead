//! The `kube` crate (5, with `k8s-openapi` 0.29 types) against the `kapi` binary, configured
//! from the kubeconfig the binary wrote: `Api::list`, `get`, `create`, `replace` (and 409 on a
//! stale replace), and a `kube::runtime::watcher` that sees every change of an object in order.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kapi_e2e::{KapiServer, ServerOptions};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Api, Client, Config};

const STEP: Duration = Duration::from_secs(10);

async fn client(server: &KapiServer) -> Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        server.url()
    );
    Client::try_from(config).unwrap()
}

fn config_map(name: &str, value: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("v".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_list_get_create_replace() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let client = client(&server).await;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let list = tokio::time::timeout(STEP, namespaces.list(&ListParams::default()))
        .await
        .unwrap()
        .unwrap();
    let names: Vec<String> = list
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert!(names.contains(&"default".to_owned()), "{names:?}");

    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams::default();
    let created = maps
        .create(&pp, &config_map("kube-cm", "1", &[("suite", "kube")]))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let got = maps.get("kube-cm").await.unwrap();
    assert_eq!(got.metadata.uid.as_deref(), Some(uid.as_str()));
    assert_eq!(got.data.as_ref().unwrap()["v"], "1");

    let mut changed = got.clone();
    changed.data = Some(BTreeMap::from([("v".to_owned(), "2".to_owned())]));
    let replaced = maps.replace("kube-cm", &pp, &changed).await.unwrap();
    assert_eq!(replaced.data.as_ref().unwrap()["v"], "2");
    let old_rv: u64 = got
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    let new_rv: u64 = replaced
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(new_rv > old_rv, "{new_rv} after {old_rv}");

    // `got` still carries the old resourceVersion.
    match maps.replace("kube-cm", &pp, &got).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 409, "{status:?}");
            assert_eq!(status.reason, "Conflict", "{status:?}");
        }
        other => panic!("a stale replace must conflict, got {other:?}"),
    }

    let listed = maps
        .list(&ListParams::default().labels("suite=kube"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].data.as_ref().unwrap()["v"], "2");
    assert!(listed.metadata.resource_version.is_some());

    match maps.get("missing").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404, "{status:?}"),
        other => panic!("get of a missing object must be 404, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_sees_every_change_in_order() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let client = client(&server).await;
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PostParams::default();
    // An object that exists before the watch starts arrives in the initial list.
    maps.create(&pp, &config_map("before", "0", &[("suite", "watch")]))
        .await
        .unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stream = watcher(
        maps.clone(),
        watcher::Config::default().labels("suite=watch"),
    );
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if tx.send(event).is_err() {
                break;
            }
        }
    });

    let mut log: Vec<String> = Vec::new();
    let describe = |event: &watcher::Event<ConfigMap>| -> String {
        let text = |cm: &ConfigMap| {
            format!(
                "{}={}",
                cm.metadata.name.clone().unwrap_or_default(),
                cm.data
                    .as_ref()
                    .and_then(|d| d.get("v").cloned())
                    .unwrap_or_default()
            )
        };
        match event {
            watcher::Event::Init => "init".to_owned(),
            watcher::Event::InitApply(cm) => format!("init-apply {}", text(cm)),
            watcher::Event::InitDone => "init-done".to_owned(),
            watcher::Event::Apply(cm) => format!("apply {}", text(cm)),
            watcher::Event::Delete(cm) => format!("delete {}", text(cm)),
        }
    };
    // Wait until the initial list is done, so every later write is a watch event.
    loop {
        let event = tokio::time::timeout(STEP, rx.recv())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        log.push(describe(&event));
        if matches!(event, watcher::Event::InitDone) {
            break;
        }
    }
    assert_eq!(log, ["init", "init-apply before=0", "init-done"]);

    let mut current = maps
        .create(&pp, &config_map("live", "1", &[("suite", "watch")]))
        .await
        .unwrap();
    for v in 2..=5 {
        current.data = Some(BTreeMap::from([("v".to_owned(), v.to_string())]));
        current = maps.replace("live", &pp, &current).await.unwrap();
    }
    maps.delete("live", &Default::default()).await.unwrap();
    maps.delete("before", &Default::default()).await.unwrap();

    let want = [
        "apply live=1",
        "apply live=2",
        "apply live=3",
        "apply live=4",
        "apply live=5",
        "delete live=5",
        "delete before=0",
    ];
    let mut seen = Vec::new();
    while seen.len() < want.len() {
        match tokio::time::timeout(STEP, rx.recv()).await {
            Ok(Some(Ok(event))) => seen.push(describe(&event)),
            Ok(Some(Err(e))) => panic!("watcher error after {seen:?}: {e}"),
            Ok(None) | Err(_) => panic!("watcher stopped after {seen:?}"),
        }
    }
    assert_eq!(seen, want);
    task.abort();
}
