//! kubectl against CustomResourceDefinitions created while the server runs: the nine real CRDs
//! of the spec corpus (cert-manager, Gateway API, Prometheus operator, Argo Workflows) are
//! accepted and established; their kinds show up in `api-resources`, take objects through
//! `apply`, answer `get` with their printer columns and `explain` with their schemas, refuse
//! objects that break the schema, and disappear with their CRD. Every kubectl on the machine
//! runs the short cycle on a small CRD of its own.

use std::path::{Path, PathBuf};

use kapi_e2e::kubectl::expect;
use kapi_e2e::{KapiServer, Kubectl, ServerOptions, kubectl_binaries, spec_corpus};

/// One kubectl against `server` with its home in `dir`, as every test here runs it.
fn kubectl<'a>(binary: &Path, server: &'a KapiServer, dir: &'a Path) -> Kubectl<'a> {
    Kubectl::new(binary, server, dir).with_request_timeout("30s")
}

/// The corpus' CRD manifests, the minimal Argo variant left out (it defines the same CRD as the
/// full one).
fn corpus_crds() -> Vec<PathBuf> {
    let dir = spec_corpus().join("crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {dir:?}: {e}"))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".yaml") && !name.contains("_minimal_")
        })
        .collect();
    files.sort();
    files
}

fn real_crds_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    for file in corpus_crds() {
        k.ok(&["create", "-f", &file.to_string_lossy()])?;
    }
    let established = k.ok(&[
        "wait",
        "--for",
        "condition=Established",
        "crd",
        "--all",
        "--timeout=20s",
    ])?;
    for crd in [
        "certificates.cert-manager.io",
        "issuers.cert-manager.io",
        "gateways.gateway.networking.k8s.io",
        "httproutes.gateway.networking.k8s.io",
        "alertmanagers.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
        "servicemonitors.monitoring.coreos.com",
        "workflows.argoproj.io",
    ] {
        expect("kubectl wait", &established, crd)?;
    }
    let resources = k.ok(&["api-resources", "--api-group=cert-manager.io"])?;
    expect("api-resources", &resources, "certificates")?;
    expect("api-resources", &resources, "cert,certs")?;

    let certificate = k.file(
        "certificate.yaml",
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: web\nspec:\n  \
         secretName: web-tls\n  dnsNames: [example.com]\n  issuerRef: {name: ca, kind: ClusterIssuer}\n",
    );
    k.ok(&["apply", "-f", &certificate.to_string_lossy()])?;
    let route = k.file(
        "route.yaml",
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: r\nspec:\n  \
         parentRefs: [{name: gw}]\n  rules: [{backendRefs: [{name: svc, port: 80}]}]\n",
    );
    k.ok(&["apply", "-f", &route.to_string_lossy()])?;
    // The schema's defaults are filled in (Gateway API defaults the path match).
    let got = k.ok(&[
        "get",
        "httproute",
        "r",
        "-o",
        "jsonpath={.spec.rules[0].matches[0].path}",
    ])?;
    expect("HTTPRoute defaults", &got, "PathPrefix")?;
    let listed = k.ok(&["get", "certificates"])?;
    // cert-manager's printer columns.
    expect("get certificates", &listed, "SECRET")?;
    expect("get certificates", &listed, "web-tls")?;
    let explained = k.ok(&["explain", "certificate.spec.dnsNames"])?;
    expect("explain", &explained, "dnsNames")?;

    let bad = k.file(
        "bad.yaml",
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: bad\nspec:\n  \
         secretName: 5\n  issuerRef: {name: ca}\n",
    );
    match k.ok(&["create", "-f", &bad.to_string_lossy(), "--validate=false"]) {
        Ok(out) => return Err(format!("an invalid Certificate was created: {out}")),
        Err(e) => expect(
            "invalid Certificate",
            &e,
            "spec.secretName in body must be of type string",
        )?,
    }

    k.ok(&["delete", "crd", "certificates.cert-manager.io"])?;
    // A fresh discovery cache: the resource type is gone.
    std::fs::remove_dir_all(k.dir().join("cache")).ok();
    match k.ok(&["get", "certificates"]) {
        Ok(out) => Err(format!(
            "certificates still served after their CRD went: {out}"
        )),
        Err(e) => expect(
            "get after delete",
            &e,
            "the server doesn't have a resource type",
        ),
    }
}

#[test]
fn the_corpus_crds_are_served_to_kubectl() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let binary = PathBuf::from("kubectl");
    if let Err(e) = real_crds_cycle(&kubectl(&binary, &server, dir.path())) {
        panic!("{e}\nserver stderr:\n{}", server.stderr());
    }
}

const SMALL_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
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
              cronSpec: {type: string}
              replicas: {type: integer, minimum: 1, default: 1}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
"#;

fn small_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    let crd = k.file("crd.yaml", SMALL_CRD);
    k.ok(&["apply", "-f", &crd.to_string_lossy()])?;
    k.ok(&[
        "wait",
        "--for",
        "condition=Established",
        "crd/crontabs.stable.example.com",
        "--timeout=20s",
    ])?;
    let tab = k.file(
        "tab.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: t\nspec:\n  cronSpec: '* * * * */5'\n",
    );
    k.ok(&["apply", "-f", &tab.to_string_lossy()])?;
    let listed = k.ok(&["get", "ct"])?;
    expect("get ct", &listed, "* * * * */5")?;
    let replicas = k.ok(&["get", "crontab", "t", "-o", "jsonpath={.spec.replicas}"])?;
    expect("defaulted replicas", &replicas, "1")?;
    k.ok(&["delete", "-f", &crd.to_string_lossy()])?;
    Ok(())
}

#[test]
fn every_kubectl_creates_and_uses_a_crd() {
    let mut failures = Vec::new();
    for binary in kubectl_binaries() {
        let server = KapiServer::start(&ServerOptions::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        if let Err(e) = small_cycle(&kubectl(&binary, &server, dir.path())) {
            failures.push(format!(
                "{binary:?}: {e}\nserver stderr:\n{}",
                server.stderr()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A CRD whose root keeps unknown fields, and whose spec embeds a resource.
const OPEN_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: bags.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: bags, singular: bag, kind: Bag}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
        properties:
          spec:
            type: object
            properties:
              template:
                type: object
                x-kubernetes-embedded-resource: true
                properties:
                  data: {type: string}
"#;

/// How custom resources' schemas are published (apiextensions-apiserver
/// `pkg/controller/openapi/builder`, `buildKubeNative`, `addTypeMetaProperties`,
/// `addEmbeddedProperties`): `apiVersion`, `kind` and `metadata` (ObjectMeta) are added at
/// the root and in embedded resources, so kubectl's client-side validation of 1.20 (against
/// `/openapi/v2`) accepts well-formed objects and refuses unknown fields; a schema that keeps
/// unknown fields at its root is published in v2 as a bare object, which kubectl does not
/// check.
fn published_schemas_cycle(k: &Kubectl<'_>) -> Result<(), String> {
    for (file, crd, name) in [
        ("crd.yaml", SMALL_CRD, "crontabs"),
        ("open.yaml", OPEN_CRD, "bags"),
    ] {
        let path = k.file(file, crd);
        k.ok(&["apply", "-f", &path.to_string_lossy()])?;
        k.ok(&[
            "wait",
            "--for",
            "condition=Established",
            &format!("crd/{name}.stable.example.com"),
            "--timeout=20s",
        ])?;
    }
    let tab = k.file(
        "tab.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: t\n  labels: {a: b}\nspec:\n  cronSpec: '* * * * */5'\n",
    );
    k.ok(&["apply", "-f", &tab.to_string_lossy()])?;
    let odd = k.file(
        "odd.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: u\nspec:\n  color: red\n",
    );
    match k.ok(&["apply", "-f", &odd.to_string_lossy()]) {
        Ok(out) => {
            return Err(format!(
                "an unknown field passed kubectl's validation: {out}"
            ));
        }
        Err(e) => expect(
            "kubectl's validation",
            &e,
            "unknown field \"color\" in com.example.stable.v1.CronTab.spec",
        )?,
    }
    let bag = k.file(
        "bag.yaml",
        "apiVersion: stable.example.com/v1\nkind: Bag\nmetadata:\n  name: b\nanything: 1\nspec:\n  template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: hello}\n",
    );
    k.ok(&["apply", "-f", &bag.to_string_lossy()])?;
    // The document is large: read it with curl rather than through kubectl's pipe.
    let fetched = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "30"])
        .arg(format!("{}/openapi/v2", k.server().url()))
        .output()
        .map_err(|e| e.to_string())?;
    let v2: serde_json::Value =
        serde_json::from_slice(&fetched.stdout).map_err(|e| e.to_string())?;
    let tab_schema = &v2["definitions"]["com.example.stable.v1.CronTab"];
    let meta_ref = &tab_schema["properties"]["metadata"]["$ref"];
    if meta_ref != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        || tab_schema["properties"]["apiVersion"]["type"] != "string"
    {
        return Err(format!("CronTab's v2 schema: {tab_schema}"));
    }
    let bag_schema = &v2["definitions"]["com.example.stable.v1.Bag"];
    if bag_schema["type"] != "object" || bag_schema.get("properties").is_some() {
        return Err(format!(
            "Bag's v2 schema is not a bare object: {bag_schema}"
        ));
    }
    Ok(())
}

#[test]
fn custom_resources_pass_kubectls_validation_in_1_20() {
    let server = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let binary = PathBuf::from("kubectl");
    if let Err(e) = published_schemas_cycle(&kubectl(&binary, &server, dir.path())) {
        panic!("{e}\nserver stderr:\n{}", server.stderr());
    }
}

/// A CronTab whose schema gains a default after objects were stored.
#[test]
fn objects_stored_before_a_default_was_added_read_back_with_it() {
    // Upstream defaults custom resources when it reads them from storage too (the storage
    // codec's `unstructuredDefaulter`; "Defaulting happens ... when reading from etcd using
    // the storage version defaults", the CRD documentation), and prunes what the schema
    // no longer has.
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let without = SMALL_CRD.replace(", default: 1", "").replace(
        "              cronSpec: {type: string}\n",
        "              cronSpec: {type: string}\n              image: {type: string}\n",
    );
    let crd = k.file("crd.yaml", &without);
    k.expect_ok(&["apply", "-f", crd.to_str().unwrap()]);
    k.expect_ok(&[
        "wait",
        "--for",
        "condition=Established",
        "crd/crontabs.stable.example.com",
        "--timeout=20s",
    ]);
    let tab = k.file(
        "tab.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: t}\nspec: {cronSpec: '* * * * *', image: busybox}\n",
    );
    k.expect_ok(&["create", "-f", tab.to_str().unwrap()]);
    let before = k.expect_ok(&["get", "crontab", "t", "-o", "jsonpath={.spec}"]);
    assert!(!before.contains("replicas"), "{before}");

    // The schema now defaults replicas and no longer has image.
    let crd = k.file("crd.yaml", SMALL_CRD);
    k.expect_ok(&["apply", "-f", crd.to_str().unwrap()]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let spec = k.expect_ok(&["get", "crontab", "t", "-o", "jsonpath={.spec}"]);
        if spec.contains(r#""replicas":1"#) {
            assert!(!spec.contains("image"), "{spec}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never defaulted: {spec}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Lists and watches read the same.
    let listed = k.expect_ok(&[
        "get",
        "crontabs",
        "-o",
        "jsonpath={.items[0].spec.replicas}",
    ]);
    assert_eq!(listed.trim(), "1");
}
