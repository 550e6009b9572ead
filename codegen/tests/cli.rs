//! Runs the built `kapi-codegen` binary on real inputs and checks what it prints and returns.

use std::path::PathBuf;
use std::process::Command;

fn corpus() -> PathBuf {
    match std::env::var_os("KAPI_SPEC_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/specs"),
    }
}

fn run(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kapi-codegen"))
        .args(args)
        .output()
        .expect("run kapi-codegen");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn list_prints_crd_versions() {
    let crd = corpus().join("crds/gateway-api-v1.6.1_gateway.networking.k8s.io_httproutes.yaml");
    let (ok, stdout, stderr) = run(&["list".as_ref(), crd.as_os_str()]);
    assert!(ok, "{stderr}");
    let verbs = "create,delete,deletecollection,get,list,patch,update,watch";
    let want = format!(
        "gateway.networking.k8s.io/v1\n  HTTPRoute  httproutes  Namespaced  {verbs}  [status]  storage\n\
         gateway.networking.k8s.io/v1beta1\n  HTTPRoute  httproutes  Namespaced  {verbs}  [status]\n"
    );
    assert_eq!(stdout, want);
}

#[test]
fn list_prints_built_in_group_versions() {
    let spec = corpus().join("kubernetes/v1.34/swagger.json");
    let (ok, stdout, stderr) = run(&["list".as_ref(), spec.as_os_str()]);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with("v1\n  Binding "), "{stdout}");
    let deployment = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Deployment "))
        .expect("Deployment row");
    let cells: Vec<&str> = deployment.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "Deployment",
            "deployments",
            "Namespaced",
            "create,delete,deletecollection,get,list,patch,update,watch",
            "[scale,status]"
        ]
    );
    assert!(
        !stdout.contains("DeleteOptions"),
        "meta kinds are not resources"
    );
}

#[test]
fn bad_input_exits_non_zero_with_the_message() {
    let dir = std::env::temp_dir().join(format!("kapi-codegen-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {group: g}\n",
    )
    .expect("write");
    let (ok, stdout, stderr) = run(&["list".as_ref(), bad.as_os_str()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!ok);
    assert!(stdout.is_empty());
    assert_eq!(
        stderr,
        format!(
            "kapi-codegen: invalid CRD at {} #/spec: missing names\n",
            bad.display()
        )
    );
    let (ok, _, stderr) = run(&["list".as_ref()]);
    assert!(!ok, "an input is required");
    assert!(stderr.contains("<INPUT>"), "{stderr}");
}

#[test]
fn list_help_is_stable() {
    let (ok, stdout, _) = run(&["list".as_ref(), "--help".as_ref()]);
    assert!(ok);
    let want = "\
List the group-versions of the inputs and, under each, its kinds with plural, scope, verbs and subresources

Usage: kapi-codegen list [OPTIONS] <INPUT>...

Arguments:
  <INPUT>...  Inputs: a swagger.json (OpenAPI v2), a folder of OpenAPI v3 documents, or CRD manifests (YAML or JSON); several inputs are merged

Options:
      --all-kinds  Also list kinds that are not served as resources (DeleteOptions, WatchEvent, Scale, ...)
  -h, --help       Print help
";
    assert_eq!(stdout, want);
}
