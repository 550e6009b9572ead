//! The kube target outside this repository: the Kubernetes 1.34 spec generated with `--kube`
//! into a crate of its own that finds kapi by `--kapi-path`, and a consumer crate that hands its
//! kinds to the kube crate (`Api` at both scopes, subresources, `watcher`, `reflector`,
//! `Controller`), both checked by `cargo check` in a workspace outside this one
//! (`<target>/kapi-kube-target`, whose target dir is kept between runs).

use std::path::PathBuf;
use std::process::Command;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn work_dir() -> PathBuf {
    let base = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => manifest_dir().join("../target"),
    };
    base.join("kapi-kube-target")
}

/// What a kube user writes: every line type-checks only if the generated kinds are kube
/// resources of the right scope with k8s-openapi's metadata.
const CONSUMER: &str = r#"
use futures_util::StreamExt as _;
use k8s_kube::apps::v1::Deployment;
use k8s_kube::core::v1::{Namespace, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{reflector, watcher, WatchStreamExt as _};
use kube::{Client, ResourceExt as _};
use std::sync::Arc;

pub async fn uses(client: Client) -> Result<(), kube::Error> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut deployment = Deployment::default();
    deployment.metadata.name = Some("web".to_owned());
    deployment.spec.get_or_insert_with(Default::default).replicas = Some(2);
    deployments
        .patch("web", &PatchParams::apply("me"), &Patch::Apply(&deployment))
        .await?;
    let scale = deployments.get_scale("web").await?;
    let _: Option<i32> = scale.spec.and_then(|s| s.replicas);
    let status = deployments.get_status("web").await?;
    let _: Option<&k8s_kube::apps::v1::DeploymentStatus> = status.status.as_ref();
    let listed: kube::core::ObjectList<Namespace> = namespaces.list(&Default::default()).await?;
    let _: Vec<String> = listed.items.iter().map(|n| n.name_any()).collect();

    let (store, writer) = reflector::store::<Pod>();
    let pods: Api<Pod> = Api::all(client.clone());
    let _stream = reflector(writer, watcher(pods, watcher::Config::default())).applied_objects();
    let _: Vec<Arc<Pod>> = store.state();

    Controller::new(deployments, watcher::Config::default())
        .run(
            |_: Arc<Deployment>, _: Arc<()>| async { Ok::<_, kube::Error>(Action::await_change()) },
            |_, _, _| Action::await_change(),
            Arc::new(()),
        )
        .for_each(|_| async {})
        .await;
    Ok(())
}
"#;

#[test]
fn kubernetes_kinds_generated_for_kube_check_in_a_crate_of_their_own() {
    let Some(corpus) = std::env::var_os("KAPI_SPEC_CORPUS") else {
        panic!("set KAPI_SPEC_CORPUS to the reference specs (tests/all.sh does)");
    };
    let spec = PathBuf::from(corpus).join("kubernetes/v1.34/swagger.json");
    let work = work_dir();
    let bindings = work.join("k8s-kube");
    let runtime = manifest_dir()
        .join("../runtime")
        .canonicalize()
        .expect("runtime dir");
    let out = Command::new(env!("CARGO_BIN_EXE_kapi-codegen"))
        .args(["generate", "--kube", "--crate-name", "k8s-kube", "--out"])
        .arg(&bindings)
        .arg("--kapi-path")
        .arg(&runtime)
        .arg(&spec)
        .output()
        .expect("run kapi-codegen");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = std::fs::read_to_string(bindings.join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        manifest.contains(&format!(
            "kapi = {{ path = {:?}, package = \"kapi-runtime\", features = [\"kube\"] }}",
            runtime.display().to_string()
        )),
        "{manifest}"
    );

    let consumer = work.join("consumer");
    std::fs::create_dir_all(consumer.join("src")).expect("consumer dir");
    std::fs::write(consumer.join("src/lib.rs"), CONSUMER).expect("consumer lib");
    std::fs::write(
        consumer.join("Cargo.toml"),
        r#"[package]
name = "consumer"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
futures-util = "0.3"
k8s-kube = { path = "../k8s-kube" }
k8s-openapi = { version = "0.29", features = ["v1_34"] }
kube = { version = "5", default-features = false, features = ["client", "runtime"] }
"#,
    )
    .expect("consumer manifest");
    std::fs::write(
        work.join("Cargo.toml"),
        "[workspace]\nresolver = \"3\"\nmembers = [\"k8s-kube\", \"consumer\"]\n",
    )
    .expect("workspace manifest");
    // The workspace's lock file pins what the consumer resolves to, so the check needs no
    // registry beyond what this workspace already fetched.
    std::fs::copy(
        manifest_dir().join("../Cargo.lock"),
        work.join("Cargo.lock"),
    )
    .expect("lock");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let check = Command::new(cargo)
        .args(["check", "--quiet", "--offline", "-p", "consumer"])
        .current_dir(&work)
        .env("CARGO_TARGET_DIR", work.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        check.status.success(),
        "cargo check of the kube consumer failed:\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
}
