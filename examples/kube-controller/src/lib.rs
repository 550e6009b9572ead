//! kapi's kinds reconciled by a `kube::runtime` controller, as on a real cluster.
//!
//! - [`api`]: `Backup` (namespaced, in v1 and the deprecated v1alpha1, with status and scale
//!   subresources) and the cluster-scoped `BackupStore`, generated at build time from
//!   `crds/backups.yaml` by kapi-codegen's kube target (`Builder::kube(true)`, see `build.rs`).
//! - [`BackupPolicy`]: a kind derived with kapi's `#[derive(CustomResource)]` and
//!   `#[resource(kube)]`.
//!
//! Both are plain kube resources: `Api<K>`, `watcher`, `reflector` and `Controller` take them
//! unchanged, while their fields keep kapi's value types (`Quantity`, `Time`, open enums,
//! `Condition` with its helpers). The
//! controller ([`run`]) gives each Backup a ConfigMap describing its schedule, owned by the
//! Backup, and reports on it in the Backup's status by server-side apply.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kapi::meta::{Condition, Conditions as _};
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The kinds generated from `crds/backups.yaml` for the kube crate.
#[allow(
    missing_docs,
    reason = "generated from a CRD without descriptions on every field"
)]
#[allow(
    clippy::duplicated_attributes,
    reason = "repeated `printer_column(..)` keys of the Resource derive are not duplicates"
)]
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/kapi_generated.rs"));
}

pub use api::ops::v1::{Backup, BackupSpec, BackupStore, BackupStoreSpec};

/// The name the controller writes under: its field manager.
pub const MANAGER: &str = "backup-controller";

/// How often a Backup is looked at again when nothing changed.
const RESYNC: Duration = Duration::from_secs(300);

/// A policy Backups may refer to, derived with kapi rather than generated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kapi::CustomResource)]
#[serde(rename_all = "camelCase")]
#[resource(
    group = "ops.kapi.dev",
    version = "v1",
    kind = "BackupPolicy",
    status = "BackupPolicyStatus",
    kube
)]
pub struct BackupPolicySpec {
    /// How many backups to keep.
    pub keep: i32,
    /// The most a Backup under this policy may store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<kapi::Quantity>,
}

/// What the controller observed of a policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Schema)]
#[serde(rename_all = "camelCase")]
pub struct BackupPolicyStatus {
    /// How many Backups use the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<i32>,
}

/// Why a reconcile failed; the controller retries it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error("API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// The Backup has no namespace, name or uid (the API server always sets them).
    #[error("the Backup has no {0}")]
    Incomplete(&'static str),
}

/// The name of the ConfigMap written for the Backup called `backup`.
pub fn config_map_name(backup: &str) -> String {
    format!("{backup}-schedule")
}

/// Runs the controller over every Backup and the ConfigMaps they own until `shutdown` resolves.
pub async fn run(client: Client, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let backups: Api<Backup> = Api::all(client.clone());
    let config_maps: Api<ConfigMap> = Api::all(client.clone());
    Controller::new(backups, watcher::Config::default())
        .owns(config_maps, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|_| async {})
        .await;
}

/// One reconcile of one Backup: its ConfigMap applied, then its status.
pub async fn reconcile(backup: Arc<Backup>, client: Arc<Client>) -> Result<Action, Error> {
    let namespace = backup.namespace().ok_or(Error::Incomplete("namespace"))?;
    let name = backup
        .meta()
        .name
        .clone()
        .ok_or(Error::Incomplete("name"))?;
    let owner = backup
        .controller_owner_ref(&())
        .ok_or(Error::Incomplete("uid"))?;
    let apply = PatchParams::apply(MANAGER).force();

    let spec = &backup.spec;
    let mut data = vec![
        ("schedule".to_owned(), spec.schedule.clone()),
        (
            "target".to_owned(),
            format!("{}/{}", spec.target.kind, spec.target.name),
        ),
    ];
    if let Some(size) = &spec.storage_size {
        data.push(("storageSize".to_owned(), size.to_string()));
    }
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(&name)),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(data.into_iter().collect()),
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced((*client).clone(), &namespace)
        .patch(&config_map_name(&name), &apply, &Patch::Apply(&config_map))
        .await?;

    let suspended = spec.suspend.unwrap_or(false);
    let (phase, ready, reason) = if suspended {
        ("Pending", false, "Suspended")
    } else {
        ("Scheduled", true, "ConfigMapWritten")
    };
    // The CRD's conditions have metav1.Condition's shape, so they are kapi's `Condition` and
    // `set_condition` keeps the transition time unless the status changes, as upstream's
    // `SetStatusCondition`: a time that moved on every pass would wake the controller again.
    let mut conditions = backup
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut condition = Condition::new(
        "Ready",
        ready,
        reason,
        format!("ConfigMap {} holds the schedule", config_map_name(&name)),
    );
    condition.observed_generation = backup.meta().generation;
    conditions.set_condition(condition);
    let status = json!({
        "apiVersion": Backup::api_version(&()),
        "kind": Backup::kind(&()),
        "status": {
            "phase": phase,
            "observedGeneration": backup.meta().generation,
            "parallelism": spec.parallelism.unwrap_or(1),
            "selector": format!("ops.kapi.dev/backup={name}"),
            "conditions": conditions,
        },
    });
    Api::<Backup>::namespaced((*client).clone(), &namespace)
        .patch_status(&name, &apply, &Patch::Apply(&status))
        .await?;
    Ok(Action::requeue(RESYNC))
}

/// Retries a failed reconcile after a short pause.
pub fn error_policy(_: Arc<Backup>, _: &Error, _: Arc<Client>) -> Action {
    Action::requeue(Duration::from_millis(200))
}
