//! Runs the example operator against the cluster of the current kubeconfig (a `kapi serve`
//! works: `KUBECONFIG=/tmp/kapi.kubeconfig cargo run -p kapi-example-operator`), after
//! installing its CRD with server-side apply. Stops on Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kapi_example_operator::{Context, Greeting, MANAGER, run};
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, CustomResourceExt, ResourceExt};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match operate().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("greeter: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn operate() -> Result<(), kube::Error> {
    let client = Client::try_default().await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Greeting::crd();
    crds.patch(
        &crd.name_any(),
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await?;
    println!("greeter: reconciling Greetings");
    let interrupted = async {
        // Without a signal handler there is nothing to wait for: stop at once.
        let _ = tokio::signal::ctrl_c().await;
    };
    run(Arc::new(Context::new(client)), interrupted).await;
    Ok(())
}
