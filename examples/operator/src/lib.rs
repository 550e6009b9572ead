//! An example operator written with `kube::runtime`, the way operators are written for real
//! clusters, and tested against kapi's in-process test server (`tests/operator.rs`).
//!
//! A `Greeting` (`greetings.demo.kapi.dev/v1`, derived with kube's `CustomResource`) asks for
//! a ConfigMap holding its message. The reconciler:
//! - keeps a finalizer on each Greeting through `kube::runtime::finalizer`, so its cleanup runs
//!   before the Greeting is gone;
//! - applies the ConfigMap with server-side apply, owned by the Greeting through a controller
//!   owner reference, so the garbage collector removes it after the Greeting;
//! - records an `events.k8s.io` Event through kube's `Recorder` when it has reconciled and when
//!   it cleans up;
//! - writes the status twice over, as operators do: `configMap` and `observedGeneration` by
//!   server-side apply, then `phase: Ready` by a JSON merge patch, last.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The name the operator writes under: field manager, event reporter.
pub const MANAGER: &str = "greeter";

/// The finalizer the operator keeps on every Greeting until it has cleaned up.
pub const FINALIZER: &str = "demo.kapi.dev/cleanup";

/// What a Greeting asks for: a ConfigMap holding `message`.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "demo.kapi.dev",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus",
    shortname = "gr"
)]
pub struct GreetingSpec {
    /// The message the ConfigMap carries.
    pub message: String,
}

/// What the operator has done for a Greeting.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GreetingStatus {
    /// The ConfigMap written for the Greeting (set by server-side apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
    /// The generation of the spec that ConfigMap reflects (set by server-side apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` once reconciled (set by a merge patch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// Why a reconcile failed; the controller retries it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error("API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// The finalizer helper failed (it wraps the reconciler's own errors).
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
    /// The Greeting has no namespace or name (the API server always sets them).
    #[error("the Greeting has no {0}")]
    Incomplete(&'static str),
}

/// What every reconcile shares.
pub struct Context {
    client: Client,
    recorder: Recorder,
    cleanups: AtomicUsize,
}

impl std::fmt::Debug for Context {
    // The client and recorder have nothing to show.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("cleanups", &self.cleanups())
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context whose events are reported as [`MANAGER`].
    pub fn new(client: Client) -> Self {
        let reporter = Reporter {
            controller: MANAGER.to_owned(),
            instance: None,
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            cleanups: AtomicUsize::new(0),
        }
    }

    /// How many Greetings the operator has cleaned up (its finalizer ran).
    pub fn cleanups(&self) -> usize {
        self.cleanups.load(Ordering::Acquire)
    }
}

/// The name of the ConfigMap written for the Greeting called `greeting`.
pub fn config_map_name(greeting: &str) -> String {
    format!("{greeting}-greeting")
}

/// Runs the operator, reconciling every Greeting and reacting to the ConfigMaps they own,
/// until `shutdown` resolves and the reconciles in flight have finished.
pub async fn run(
    context: Arc<Context>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let greetings: Api<Greeting> = Api::all(context.client.clone());
    let config_maps: Api<ConfigMap> = Api::all(context.client.clone());
    Controller::new(greetings, watcher::Config::default())
        .owns(config_maps, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, context)
        .for_each(|_| async {})
        .await;
}

/// One reconcile of one Greeting, inside the finalizer helper.
pub async fn reconcile(greeting: Arc<Greeting>, context: Arc<Context>) -> Result<Action, Error> {
    let namespace = greeting.namespace().ok_or(Error::Incomplete("namespace"))?;
    let greetings: Api<Greeting> = Api::namespaced(context.client.clone(), &namespace);
    finalizer(&greetings, FINALIZER, greeting, |event| async {
        match event {
            finalizer::Event::Apply(greeting) => apply(&greeting, &context).await,
            finalizer::Event::Cleanup(greeting) => cleanup(&greeting, &context).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

/// Retries a failed reconcile after a short pause.
pub fn error_policy(_: Arc<Greeting>, _: &Error, _: Arc<Context>) -> Action {
    Action::requeue(Duration::from_millis(200))
}

async fn apply(greeting: &Greeting, context: &Context) -> Result<Action, Error> {
    let namespace = greeting.namespace().ok_or(Error::Incomplete("namespace"))?;
    let name = greeting
        .meta()
        .name
        .clone()
        .ok_or(Error::Incomplete("name"))?;
    let owner = greeting
        .controller_owner_ref(&())
        .ok_or(Error::Incomplete("uid"))?;
    let apply = PatchParams::apply(MANAGER).force();

    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(&name)),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some([("message".to_owned(), greeting.spec.message.clone())].into()),
        ..ConfigMap::default()
    };
    let config_maps: Api<ConfigMap> = Api::namespaced(context.client.clone(), &namespace);
    config_maps
        .patch(&config_map_name(&name), &apply, &Patch::Apply(&config_map))
        .await?;

    let greetings: Api<Greeting> = Api::namespaced(context.client.clone(), &namespace);
    let applied_status = json!({
        "apiVersion": Greeting::api_version(&()),
        "kind": Greeting::kind(&()),
        "status": {
            "configMap": config_map_name(&name),
            "observedGeneration": greeting.meta().generation,
        },
    });
    greetings
        .patch_status(&name, &apply, &Patch::Apply(&applied_status))
        .await?;
    let reconciled = Event {
        type_: EventType::Normal,
        reason: "Reconciled".to_owned(),
        note: Some(format!(
            "ConfigMap {} holds the message",
            config_map_name(&name)
        )),
        action: "Reconcile".to_owned(),
        secondary: None,
    };
    context
        .recorder
        .publish(&reconciled, &greeting.object_ref(&()))
        .await?;
    // Last: whoever sees `Ready` sees everything above done.
    let merged_status = json!({"status": {"phase": "Ready"}});
    greetings
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&merged_status),
        )
        .await?;
    Ok(Action::await_change())
}

async fn cleanup(greeting: &Greeting, context: &Context) -> Result<Action, Error> {
    let cleaned = Event {
        type_: EventType::Normal,
        reason: "CleanedUp".to_owned(),
        note: Some("the ConfigMap goes with the Greeting".to_owned()),
        action: "Cleanup".to_owned(),
        secondary: None,
    };
    context
        .recorder
        .publish(&cleaned, &greeting.object_ref(&()))
        .await?;
    context.cleanups.fetch_add(1, Ordering::AcqRel);
    Ok(Action::await_change())
}
