//! Kinds from kapi-codegen's kube target and from `#[resource(kube)]`, used through the kube
//! crate against kapi's test server exactly as against a cluster: `Api` in both scopes, server-
//! side apply, the status and scale subresources, `reflector`, and a `kube::runtime` controller.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kapi::meta::Conditions as _;
use kapi_example_kube::api::ops::{v1, v1alpha1};
use kapi_example_kube::{
    Backup, BackupPolicy, BackupPolicySpec, BackupPolicyStatus, BackupSpec, BackupStore,
    BackupStoreSpec, config_map_name, run,
};
use kapi_test::TestServer;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;

/// A bound on each wait, so a broken controller fails the test instead of hanging it.
const STEP: Duration = Duration::from_secs(10);

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/crds/backups.yaml");

async fn server() -> TestServer {
    TestServer::builder()
        .crd_file(CRDS)
        .crd(<BackupPolicy as kapi::CustomResource>::crd())
        .start()
        .await
        .unwrap()
}

fn nightly(parallelism: i32) -> Backup {
    Backup {
        metadata: ObjectMeta {
            name: Some("nightly".to_owned()),
            ..ObjectMeta::default()
        },
        spec: BackupSpec {
            schedule: "0 3 * * *".to_owned(),
            parallelism: Some(parallelism),
            storage_size: Some("1500Mi".parse().unwrap()),
            target: v1::BackupSpecTarget {
                kind: v1::BackupSpecTargetKind::StatefulSet,
                name: "db".to_owned(),
            },
            ..BackupSpec::default()
        },
        ..Backup::default()
    }
}

fn is_scheduled(parallelism: i32) -> impl Fn(Option<&Backup>) -> bool {
    move |backup| {
        backup.and_then(|b| b.status.as_ref()).is_some_and(|s| {
            s.phase == Some(v1::BackupStatusPhase::Scheduled)
                && s.parallelism == Some(parallelism)
                && s.conditions
                    .as_ref()
                    .is_some_and(|c| c.is_condition_true("Ready"))
        })
    }
}

#[tokio::test]
async fn a_generated_kind_is_reconciled_by_a_kube_controller() {
    let server = server().await;
    let client = server.client().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(run(client.clone(), async {
        let _ = stopped.await;
    }));

    // Created by server-side apply from the typed value, as `kubectl apply` would.
    let backups: Api<Backup> = Api::default_namespaced(client.clone());
    let created = backups
        .patch(
            "nightly",
            &PatchParams::apply("test"),
            &Patch::Apply(nightly(2)),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    // The CRD's default filled in, the quantity kept as written.
    assert_eq!(created.spec.suspend, Some(false));
    assert_eq!(
        created.spec.storage_size.as_ref().unwrap().to_string(),
        "1500Mi"
    );

    let ready = tokio::time::timeout(
        STEP,
        await_condition(backups.clone(), "nightly", is_scheduled(2)),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    let status = ready.status.as_ref().unwrap();
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(
        status.selector.as_deref(),
        Some("ops.kapi.dev/backup=nightly")
    );

    // The ConfigMap the controller applied, owned by the Backup.
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let config_map = config_maps.get(&config_map_name("nightly")).await.unwrap();
    let data = config_map.data.clone().unwrap();
    assert_eq!(data["schedule"], "0 3 * * *");
    assert_eq!(data["target"], "StatefulSet/db");
    assert_eq!(data["storageSize"], "1500Mi");
    let owner = &config_map.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Backup", "nightly")
    );
    assert_eq!(Some(&owner.uid), ready.metadata.uid.as_ref());
    assert_eq!(owner.controller, Some(true));

    // The scale subresource reads and writes through the CRD's paths; the controller follows.
    let scale = backups.get_scale("nightly").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    let scale_status = scale.status.as_ref().unwrap();
    assert_eq!(scale_status.replicas, 2);
    assert_eq!(
        scale_status.selector.as_deref(),
        Some("ops.kapi.dev/backup=nightly")
    );
    backups
        .patch_scale(
            "nightly",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    let rescaled = tokio::time::timeout(
        STEP,
        await_condition(backups.clone(), "nightly", is_scheduled(3)),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap();
    assert_eq!(rescaled.spec.parallelism, Some(3));
    assert_eq!(rescaled.metadata.generation, Some(2));
    assert_eq!(rescaled.status.unwrap().observed_generation, Some(2));

    // The same object through the deprecated version, another generated module of the crate.
    let old: Api<v1alpha1::Backup> = Api::default_namespaced(client.clone());
    let old_backup = old.get("nightly").await.unwrap();
    assert_eq!(
        old_backup.spec.unwrap().schedule.as_deref(),
        Some("0 3 * * *")
    );

    // Deleting the Backup lets the garbage collector take its ConfigMap.
    backups
        .delete("nightly", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::timeout(STEP, async {
        while config_maps
            .get_opt(&config_map_name("nightly"))
            .await
            .unwrap()
            .is_some()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap();

    let _ = stop.send(());
    tokio::time::timeout(STEP, controller)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_cluster_scoped_generated_kind_and_a_reflector() {
    let server = server().await;
    let client = server.client().unwrap();
    let stores: Api<BackupStore> = Api::all(client.clone());

    let (reader, writer) = reflector::store::<BackupStore>();
    let watch = reflector(writer, watcher(stores.clone(), watcher::Config::default()))
        .applied_objects()
        .for_each(|_| async {});
    let watching = tokio::spawn(watch);

    let store = BackupStore {
        metadata: ObjectMeta {
            name: Some("s3".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(BackupStoreSpec {
            endpoint: "https://s3.example.invalid".to_owned(),
            capacity: Some("2Ti".parse().unwrap()),
        }),
        ..BackupStore::default()
    };
    let created = stores.create(&PostParams::default(), &store).await.unwrap();
    assert_eq!(created.namespace(), None);
    assert!(created.metadata.uid.is_some());

    tokio::time::timeout(STEP, async {
        while reader.find(|s| s.name_any() == "s3").is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    let cached = reader.find(|s| s.name_any() == "s3").unwrap();
    assert_eq!(
        cached
            .spec
            .as_ref()
            .unwrap()
            .capacity
            .as_ref()
            .unwrap()
            .to_string(),
        "2Ti"
    );

    let listed = stores.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert!(listed.metadata.resource_version.is_some());
    watching.abort();
}

#[tokio::test]
async fn a_kind_derived_for_kube_serves_its_status() {
    let server = server().await;
    let client = server.client().unwrap();
    let policies: Api<BackupPolicy> = Api::default_namespaced(client.clone());
    let policy = BackupPolicy::new(
        "gold",
        BackupPolicySpec {
            keep: 7,
            max_size: Some("10Gi".parse().unwrap()),
        },
    );
    let created = policies
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    assert_eq!(created.spec, policy.spec);
    assert_eq!(created.metadata.generation, Some(1));

    let status = json!({"status": BackupPolicyStatus { users: Some(3) }});
    let patched = policies
        .patch_status("gold", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    assert_eq!(patched.status, Some(BackupPolicyStatus { users: Some(3) }));
    // A status write leaves the generation alone, as for every custom resource.
    assert_eq!(patched.metadata.generation, Some(1));

    // kapi reads the metadata of a kind made for kube through `ObjectMetaAccess`.
    assert_eq!(
        kapi::ObjectMetaAccess::name(&patched.metadata),
        Some("gold")
    );
}
