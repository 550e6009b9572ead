//! The example operator end to end against kapi's test server: a Greeting is reconciled (its
//! ConfigMap applied with a controller owner reference, its status written by server-side
//! apply and by merge patch, an Event recorded, the finalizer added), then deleted: the
//! finalizer's cleanup runs, the Greeting goes, and the garbage collector removes the ConfigMap.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kapi_example_operator::{
    Context, FINALIZER, Greeting, GreetingSpec, MANAGER, config_map_name, run,
};
use kapi_test::TestServer;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, CustomResourceExt, ResourceExt};

/// A bound on each wait, so a broken operator fails the test instead of hanging it.
const STEP: Duration = Duration::from_secs(10);

fn is_ready(greeting: Option<&Greeting>) -> bool {
    greeting
        .and_then(|g| g.status.as_ref())
        .is_some_and(|s| s.phase.as_deref() == Some("Ready") && s.config_map.is_some())
}

#[tokio::test]
async fn a_greeting_is_reconciled_then_finalized_and_its_config_map_collected() {
    let server = TestServer::builder()
        .crd(Greeting::crd())
        .start()
        .await
        .unwrap();
    let client = server.client().unwrap();
    let context = Arc::new(Context::new(client.clone()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let operator = tokio::spawn(run(context.clone(), async {
        let _ = stopped.await;
    }));

    let greetings: Api<Greeting> = Api::default_namespaced(client.clone());
    let created = greetings
        .create(
            &PostParams::default(),
            &Greeting::new(
                "hello",
                GreetingSpec {
                    message: "hi there".to_owned(),
                },
            ),
        )
        .await
        .unwrap();
    let ready = tokio::time::timeout(STEP, await_condition(greetings.clone(), "hello", is_ready))
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    // Status from both writers, the finalizer, and the managers server-side apply recorded.
    let status = ready.status.clone().unwrap();
    assert_eq!(status.config_map.as_deref(), Some("hello-greeting"));
    assert_eq!(status.observed_generation, created.metadata.generation);
    assert_eq!(ready.finalizers(), [FINALIZER]);
    let managers: Vec<(String, String)> = ready
        .managed_fields()
        .iter()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.subresource.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&(MANAGER.to_owned(), "status".to_owned())),
        "{managers:?}"
    );

    // The owned ConfigMap, applied with a controller reference to the Greeting.
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let map = config_maps.get(&config_map_name("hello")).await.unwrap();
    assert_eq!(map.data.unwrap()["message"], "hi there");
    let owner = &map.metadata.owner_references.unwrap()[0];
    assert_eq!(owner.uid, ready.uid().unwrap());
    assert_eq!(owner.controller, Some(true));

    // The recorder's Event, regarding the Greeting.
    let events: Api<Event> = Api::default_namespaced(client.clone());
    let reasons: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("hello"))
        .filter_map(|e| e.reason)
        .collect();
    assert!(reasons.contains(&"Reconciled".to_owned()), "{reasons:?}");

    // Deleting runs the cleanup, then the Greeting goes, then its ConfigMap.
    greetings
        .delete("hello", &DeleteParams::default())
        .await
        .unwrap();
    let uid = ready.uid().unwrap();
    tokio::time::timeout(
        STEP,
        await_condition(greetings, "hello", conditions::is_deleted(&uid)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(context.cleanups(), 1);
    let map_uid = map.metadata.uid.unwrap();
    tokio::time::timeout(
        STEP,
        await_condition(
            config_maps,
            &config_map_name("hello"),
            conditions::is_deleted(&map_uid),
        ),
    )
    .await
    .unwrap()
    .unwrap();

    let _ = stop.send(());
    tokio::time::timeout(STEP, operator).await.unwrap().unwrap();
}
