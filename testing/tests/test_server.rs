//! The test server as a user's test sees it: one line to start, the built-ins of the chosen
//! release, CRDs installed and Established before it is handed out, a kubeconfig and a `kube`
//! client that work, and nothing left behind once it is dropped.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kapi::meta::Condition;
use kapi::{CustomResource, Schema, Wire};
use kapi_test::{Error, Release, Store, TestServer};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

/// A kind derived with kapi's `CustomResource`, installed through its `crd()`.
#[derive(Clone, Debug, Wire, CustomResource)]
#[serde(rename_all = "camelCase")]
#[resource(group = "test.kapi.dev", version = "v1", status = "BackupStatus")]
pub struct BackupSpec {
    /// Cron schedule.
    pub schedule: String,
}

/// Observed state of a Backup.
#[derive(Clone, Debug, Default, Wire, Schema)]
pub struct BackupStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.test.kapi.dev
spec:
  group: test.kapi.dev
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, default: 3}
"#;

fn gizmos_yaml() -> String {
    GADGETS
        .replace("gadgets", "gizmos")
        .replace("gadget", "gizmo")
        .replace("Gadget", "Gizmo")
}

async fn minor_version(client: &Client) -> String {
    client.apiserver_version().await.unwrap().minor
}

#[tokio::test]
async fn one_line_gives_the_newest_builtins_and_a_client() {
    let server = TestServer::start().await.unwrap();
    assert_eq!(server.release(), Release::newest());
    assert_eq!(server.url(), format!("http://{}", server.addr()));
    let client = server.client().unwrap();
    assert_eq!(minor_version(&client).await, "36");

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for system in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(names.contains(&system.to_owned()), "{names:?}");
    }
    // The client's default namespace is `default`.
    let maps: Api<ConfigMap> = Api::default_namespaced(client);
    let mut map = ConfigMap::default();
    map.metadata.name = Some("hello".to_owned());
    let created = maps.create(&PostParams::default(), &map).await.unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
}

#[tokio::test]
async fn the_kubeconfig_file_reaches_the_server_and_goes_with_it() {
    let server = TestServer::start().await.unwrap();
    let path = server.kubeconfig_path().to_path_buf();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), server.kubeconfig());
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert_eq!(config.default_namespace, "default");
    let client = Client::try_from(config).unwrap();
    assert_eq!(minor_version(&client).await, "36");
    drop(server);
    assert!(!path.exists(), "{} outlived its server", path.display());
    // Nothing answers on the address any more.
    assert!(client.apiserver_version().await.is_err());
}

#[test]
fn every_release_in_the_build_is_served_and_the_others_are_a_clear_error() {
    for release in Release::ALL {
        let started = TestServer::builder().release(release).start_blocking();
        if !release.is_built() {
            let error = started.unwrap_err();
            assert!(matches!(error, Error::ReleaseNotBuilt(r) if r == release));
            let feature = release.feature();
            assert!(error.to_string().contains(feature), "{error}");
            continue;
        }
        let server = started.unwrap();
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let minor = runtime.block_on(async { minor_version(&server.client().unwrap()).await });
        assert_eq!(
            format!("v1.{minor}"),
            release.version().to_string(),
            "{release}"
        );
    }
}

#[tokio::test]
async fn crds_from_a_file_yaml_text_and_a_derived_kind_are_established_before_start_returns() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crds.yaml");
    // Two documents in one file, and an empty one between them.
    std::fs::write(&file, format!("{GADGETS}\n---\n---\n{}", gizmos_yaml())).unwrap();
    let server = TestServer::builder()
        .crd_file(&file)
        .crd(Backup::crd())
        .start()
        .await
        .unwrap();
    let client = server.client().unwrap();
    for (kind, plural) in [
        ("Gadget", "gadgets"),
        ("Gizmo", "gizmos"),
        ("Backup", "backups"),
    ] {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("test.kapi.dev", "v1", kind),
            plural,
        );
        let api: Api<DynamicObject> = Api::default_namespaced_with(client.clone(), &resource);
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "test.kapi.dev/v1",
            "kind": kind,
            "metadata": {"name": "one"},
            "spec": {"schedule": "@daily"},
        }))
        .unwrap();
        // No waiting: the kinds are served from the first request.
        let created = api.create(&PostParams::default(), &object).await.unwrap();
        if kind == "Gadget" {
            // The CRD's schema defaults apply.
            assert_eq!(created.data["spec"]["size"], 3, "{created:?}");
        }
    }
}

#[tokio::test]
async fn a_bad_crd_is_an_error_naming_where_it_came_from() {
    let missing = TestServer::builder()
        .crd_file("/nonexistent/crds.yaml")
        .start()
        .await
        .unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/crds.yaml"),
        "{missing}"
    );

    let not_a_crd = TestServer::builder()
        .crd_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
        .start()
        .await
        .unwrap_err();
    assert!(
        matches!(&not_a_crd, Error::Crd { origin, message }
            if origin == "YAML text (document 1)" && message.contains("\"ConfigMap\"")),
        "{not_a_crd}"
    );

    // The server's own validation: a CRD whose name is not `<plural>.<group>`.
    let refused = TestServer::builder()
        .crd_yaml(GADGETS.replace("name: gadgets.test.kapi.dev", "name: wrong.test.kapi.dev"))
        .start()
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::Crd { message, .. } if message.contains("422")),
        "{refused}"
    );
}

#[tokio::test]
async fn a_store_in_a_temporary_directory_is_removed_on_drop() {
    let server = TestServer::builder()
        .store(Store::TempDir)
        .start()
        .await
        .unwrap();
    let data = server.data_dir().unwrap().to_path_buf();
    let maps: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    let mut map = ConfigMap::default();
    map.metadata.name = Some("kept".to_owned());
    maps.create(&PostParams::default(), &map).await.unwrap();
    assert!(data.join(kapi::storage::embedded::DATA_FILE).exists());
    drop(server);
    assert!(!data.exists(), "{} outlived its server", data.display());

    let memory = TestServer::start().await.unwrap();
    assert_eq!(memory.data_dir(), None);
}

#[test]
fn a_sync_test_gets_a_server_without_a_runtime() {
    let server = TestServer::start_blocking().unwrap();
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    use std::io::{Read, Write};
    stream
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// kubectl, as a person debugging a test would run it, through the server's kubeconfig file.
#[tokio::test]
async fn kubectl_reads_the_kubeconfig_file() {
    let server = TestServer::builder()
        .crd_yaml(GADGETS)
        .start()
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let kubectl = |args: &[&str]| {
        let output = std::process::Command::new("kubectl")
            .args(["--request-timeout=20s", "--kubeconfig"])
            .arg(server.kubeconfig_path())
            .args(args)
            .env("HOME", home.path())
            .output()
            .expect("kubectl is installed (tests/setup.sh)");
        assert!(
            output.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let crds = kubectl(&["get", "crd", "-o", "name"]);
    assert_eq!(
        crds.trim(),
        "customresourcedefinition.apiextensions.k8s.io/gadgets.test.kapi.dev"
    );
    kubectl(&["create", "configmap", "from-kubectl", "--from-literal=a=b"]);
    let maps: Api<ConfigMap> = Api::default_namespaced(server.client().unwrap());
    assert_eq!(
        maps.get("from-kubectl").await.unwrap().data.unwrap()["a"],
        "b"
    );
}

/// The test server serves what kube-apiserver of its release serves by default
/// (`DefaultAPIResourceConfigSource`: alpha versions off, and betas introduced after 1.24, such
/// as 1.36's `storage.k8s.io/v1beta1`), and `runtime_config` switches them as
/// `--runtime-config` does.
#[tokio::test]
async fn alpha_and_new_beta_apis_are_off_unless_switched_on() {
    let served = |client: Client, group: &'static str, version: &'static str| async move {
        let groups = client.list_api_groups().await.unwrap();
        groups
            .groups
            .iter()
            .filter(|g| g.name == group)
            .flat_map(|g| &g.versions)
            .any(|v| v.version == version)
    };
    let server = TestServer::start().await.unwrap();
    let client = server.client().unwrap();
    assert!(served(client.clone(), "apps", "v1").await);
    assert!(!served(client.clone(), "storage.k8s.io", "v1beta1").await);
    assert!(!served(client.clone(), "admissionregistration.k8s.io", "v1alpha1").await);
    drop(server);

    let server = TestServer::builder()
        .runtime_config("api/alpha=true")
        .runtime_config("storage.k8s.io/v1beta1=true,batch/v1=false")
        .start()
        .await
        .unwrap();
    let client = server.client().unwrap();
    assert!(served(client.clone(), "storage.k8s.io", "v1beta1").await);
    assert!(served(client.clone(), "admissionregistration.k8s.io", "v1alpha1").await);
    assert!(!served(client.clone(), "batch", "v1").await);

    let refused = TestServer::builder()
        .runtime_config("nosuch.example.com/v1=true")
        .start()
        .await
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "invalid runtime config: unknown api groups nosuch.example.com"
    );
}

/// `feature_gate` switches an API feature as kube-apiserver's `--feature-gates` does: with
/// `CBORServingAndStorage` (alpha since 1.32, k8s.io/apiserver `kube_features.go`) on, a client
/// that asks for `application/cbor` gets it; an unknown gate is refused with upstream's
/// message (k8s.io/component-base `featuregate/feature_gate.go`).
#[tokio::test]
async fn feature_gates_switch_api_features() {
    use std::io::{Read, Write};
    let content_type = |server: &TestServer| {
        let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
        write!(
            stream,
            "GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/cbor, application/json;q=0.9\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let head = String::from_utf8_lossy(&answer).to_lowercase();
        head.lines()
            .find_map(|l| l.strip_prefix("content-type: ").map(str::to_owned))
            .unwrap()
    };
    let off = TestServer::start().await.unwrap();
    assert_eq!(content_type(&off), "application/json");
    let on = TestServer::builder()
        .feature_gate("CBORServingAndStorage", true)
        .start()
        .await
        .unwrap();
    assert_eq!(content_type(&on), "application/cbor");
    let refused = TestServer::builder()
        .feature_gate("NoSuchGate", true)
        .start()
        .await
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "invalid feature gates: unrecognized feature gate: NoSuchGate"
    );
}
