//! The `kapi` binary driven by real `kubectl` binaries: every `kubectl` on the machine (the
//! default one and each pinned `kubectl.1.NN`) runs the same session against its own server,
//! and the deprecation warnings of an old release and of the example API reach kubectl's stderr.
//!
//! Failures are collected per kubectl version and reported together, so one run shows which
//! versions work.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kapi_e2e::kubectl::{DEFAULT_CALL_TIMEOUT, expect};
use kapi_e2e::{KapiServer, Kubectl, ServerOptions, kubectl_binaries};
use serde_json::Value;

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app: shop
data:
  color: blue
";

const CONFIG_MAP_REPLACED: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels:
    app: shop
data:
  color: green
  size: large
";

const WIDGET: &str = "apiVersion: widgets.kapi.dev/v1
kind: Widget
metadata:
  name: sprocket
spec:
  color: red
  replicas: 3
";

/// The whole session one kubectl version runs; the first failing step ends it, except that
/// explain, describe and short-name failures are reported after the rest has run.
fn session(k: &Kubectl<'_>) -> Result<(), String> {
    let namespaces = k.ok(&["get", "namespaces"])?;
    expect("get namespaces", &namespaces, "default")?;
    expect("get namespaces", &namespaces, "kube-system")?;

    let version: Value = serde_json::from_str(&k.ok(&["get", "--raw", "/version"])?)
        .map_err(|e| format!("get --raw /version is not JSON: {e}"))?;
    let git_version = version["gitVersion"].as_str().unwrap_or_default();
    expect("get --raw /version", git_version, "v1.36")?;

    let resources = k.ok(&["api-resources"])?;
    for needle in ["configmaps", "widgets", "wdg", "gizmos", "namespaces"] {
        expect("api-resources", &resources, needle)?;
    }
    let versions = k.ok(&["api-versions"])?;
    for needle in ["widgets.kapi.dev/v1", "apps/v1", "v1"] {
        expect("api-versions", &versions, needle)?;
    }
    // explain needs the OpenAPI documents; its failure is reported after the rest has run.
    let explain = explain(k);

    let cm = k.file("configmap.yaml", CONFIG_MAP);
    let created = k.ok(&["create", "-f", cm.to_str().unwrap()])?;
    expect(
        "create -f configmap",
        &created,
        "configmap/settings created",
    )?;
    let widget = k.file("widget.yaml", WIDGET);
    let created = k.ok(&["create", "-f", widget.to_str().unwrap()])?;
    expect(
        "create -f widget",
        &created,
        "widget.widgets.kapi.dev/sprocket created",
    )?;
    let again = k.run(&["create", "-f", cm.to_str().unwrap()]);
    if again.status.success() {
        return Err("a second create of the same ConfigMap succeeded".to_owned());
    }
    expect(
        "create of an existing ConfigMap",
        &String::from_utf8_lossy(&again.stderr),
        "AlreadyExists",
    )?;

    let json: Value =
        serde_json::from_str(&k.ok(&["get", "configmap", "settings", "-o", "json"])?)
            .map_err(|e| format!("get -o json is not JSON: {e}"))?;
    if json["data"]["color"] != "blue" || json["metadata"]["uid"].as_str().is_none() {
        return Err(format!("get -o json returned {json}"));
    }
    let yaml = k.ok(&["get", "configmap", "settings", "-o", "yaml"])?;
    expect("get -o yaml", &yaml, "name: settings")?;
    expect("get -o yaml", &yaml, "color: blue")?;
    let table = k.ok(&["get", "widgets"])?;
    for needle in ["NAME", "COLOR", "REPLICAS", "sprocket", "red"] {
        expect("get widgets (table with printer columns)", &table, needle)?;
    }
    let by_label = k.ok(&["get", "configmaps", "-l", "app=shop", "-o", "name"])?;
    expect("get -l app=shop", &by_label, "configmap/settings")?;

    // describe also lists the object's Events by field selector; its failure is reported
    // after the rest of the session has run.
    let describe = describe(k);
    let short_names = short_names(k);

    let replacement = k.file("configmap-replaced.yaml", CONFIG_MAP_REPLACED);
    let replaced = k.ok(&["replace", "-f", replacement.to_str().unwrap()])?;
    expect("replace -f", &replaced, "configmap/settings replaced")?;
    let json: Value =
        serde_json::from_str(&k.ok(&["get", "configmap", "settings", "-o", "json"])?)
            .map_err(|e| format!("get -o json is not JSON: {e}"))?;
    if json["data"]["color"] != "green" || json["data"]["size"] != "large" {
        return Err(format!("replace did not take effect: {json}"));
    }

    apply_label_annotate(k)?;
    watch_sees_a_create(k)?;

    let deleted = k.ok(&["delete", "configmap", "settings"])?;
    expect(
        "delete configmap",
        &deleted,
        "configmap \"settings\" deleted",
    )?;
    let gone = k.run(&["get", "configmap", "settings"]);
    if gone.status.success() {
        return Err("the deleted ConfigMap is still there".to_owned());
    }
    expect(
        "get after delete",
        &String::from_utf8_lossy(&gone.stderr),
        "NotFound",
    )?;
    let deleted = k.ok(&["delete", "-f", widget.to_str().unwrap()])?;
    expect("delete -f widget", &deleted, "deleted")?;
    let remaining = k.ok(&["get", "widgets", "-o", "name"])?;
    if !remaining.trim().is_empty() {
        return Err(format!("widgets left after delete: {remaining}"));
    }
    let failed: Vec<String> = [explain, describe, short_names]
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n"))
    }
}

/// Client-side apply (create, then a three-way merge patch), label and annotate (merge patches).
fn apply_label_annotate(k: &Kubectl<'_>) -> Result<(), String> {
    let manifest = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"{value}\"\n  gone: x\n"
        )
    };
    let file = k.file("applied.yaml", &manifest("1"));
    let applied = k.ok(&["apply", "-f", file.to_str().unwrap()])?;
    expect("apply -f (new)", &applied, "configmap/applied created")?;
    let labeled = k.ok(&["label", "configmap", "applied", "tier=web"])?;
    expect("label", &labeled, "configmap/applied labeled")?;
    let annotated = k.ok(&["annotate", "configmap", "applied", "example.com/note=hi"])?;
    // kubectl 1.27 prints "annotate", later versions "annotated".
    expect("annotate", &annotated, "configmap/applied annotate")?;
    let labeled = k.ok(&["label", "widget", "sprocket", "tier=web"])?;
    expect(
        "label widget",
        &labeled,
        "widget.widgets.kapi.dev/sprocket labeled",
    )?;
    // The second apply changes `a` and drops `gone`, which only the last-applied annotation
    // tells kubectl to remove.
    let file = k.file(
        "applied.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"2\"\n",
    );
    let applied = k.ok(&["apply", "-f", file.to_str().unwrap()])?;
    expect(
        "apply -f (changed)",
        &applied,
        "configmap/applied configured",
    )?;
    let json: Value =
        serde_json::from_str(&k.ok(&["get", "configmap", "applied", "-o", "json"])?)
            .map_err(|e| format!("get -o json is not JSON: {e}"))?;
    let meta = &json["metadata"];
    if json["data"] != serde_json::json!({"a": "2"})
        || meta["labels"]["tier"] != "web"
        || meta["annotations"]["example.com/note"] != "hi"
        || meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_null()
    {
        return Err(format!("apply/label/annotate left {json}"));
    }
    let widget: Value = serde_json::from_str(&k.ok(&["get", "widget", "sprocket", "-o", "json"])?)
        .map_err(|e| format!("get -o json is not JSON: {e}"))?;
    if widget["metadata"]["labels"]["tier"] != "web" || widget["spec"]["color"] != "red" {
        return Err(format!("label on a widget left {widget}"));
    }
    k.ok(&["delete", "configmap", "applied"])?;
    Ok(())
}

/// The short names kubectl users type: built-ins' (`cm`, `ns`) and the example API's (`wdg`).
fn short_names(k: &Kubectl<'_>) -> Result<(), String> {
    for (short, expected) in [
        ("cm", "configmap/settings"),
        ("ns", "namespace/default"),
        ("wdg", "widget.widgets.kapi.dev/sprocket"),
    ] {
        let listed = k.ok(&["get", short, "-o", "name"])?;
        expect(&format!("get {short}"), &listed, expected)?;
    }
    Ok(())
}

fn explain(k: &Kubectl<'_>) -> Result<(), String> {
    // Generated crates hand their OpenAPI definitions to the registry, so explain reaches
    // every field of a built-in or example kind, through references (Deployment → PodSpec),
    // with the release's descriptions: a field's own above its type's, as upstream's v3
    // document has it (the 1.36 swagger's `DeploymentSpec.strategy` and `DeploymentStrategy`).
    let cases: [(&str, &[&str]); 8] = [
        ("deployments", &["Deployment enables declarative updates"]),
        (
            "deployments.spec.strategy",
            &[
                "The deployment strategy to use",
                "DeploymentStrategy describes how",
                "Rolling update config params.",
            ],
        ),
        (
            "configmaps",
            &[
                "KIND:",
                "ConfigMap",
                "FIELDS:",
                "apiVersion",
                "data",
                "metadata",
            ],
        ),
        ("configmaps.data", &["FIELD:", "data", "map[string]string"]),
        (
            "deployments.spec.replicas",
            &["FIELD:", "replicas", "integer"],
        ),
        (
            "deployments.spec.template.spec.containers",
            &["FIELD:", "containers", "image", "ports"],
        ),
        (
            "widgets",
            &["KIND:", "Widget", "FIELDS:", "spec", "metadata"],
        ),
        ("widgets.spec", &["FIELD:", "spec", "color"]),
    ];
    for (path, needles) in cases {
        let explain = k.ok(&["explain", path])?;
        for needle in needles {
            expect(&format!("explain {path}"), &explain, needle)?;
        }
    }
    Ok(())
}

fn describe(k: &Kubectl<'_>) -> Result<(), String> {
    let described = k.ok(&["describe", "configmap", "settings"])?;
    for needle in [
        "Name:",
        "settings",
        "Namespace:",
        "default",
        "color",
        "blue",
    ] {
        expect("describe configmap", &described, needle)?;
    }
    let described = k.ok(&["describe", "widget", "sprocket"])?;
    expect("describe widget", &described, "sprocket")
}

/// `kubectl get -w` runs for a few seconds; a ConfigMap created meanwhile must show up.
fn watch_sees_a_create(k: &Kubectl<'_>) -> Result<(), String> {
    let (mut watch, rx) = k.spawn_lines(&[
        "get",
        "configmaps",
        "-w",
        "--output-watch-events",
        "-o",
        "name",
    ]);
    let result = (|| {
        // The initial list comes first: once settings is listed the watch is established.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while !seen
            .iter()
            .any(|l: &String| l.contains("configmap/settings"))
        {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => return Err(format!("get -w listed nothing in 10 s: {seen:?}")),
            }
        }
        let watched = k.file(
            "watched.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: watched\ndata:\n  k: v\n",
        );
        k.ok(&["create", "-f", watched.to_str().unwrap()])?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains("configmap/watched") => return Ok(()),
                Ok(line) => seen.push(line),
                Err(_) => {
                    return Err(format!(
                        "get -w saw no event for the new ConfigMap: {seen:?}"
                    ));
                }
            }
        }
    })();
    let _ = watch.kill();
    let _ = watch.wait();
    result
}

#[test]
fn kubectl_session_against_every_kubectl_on_the_machine() {
    let binaries = kubectl_binaries();
    assert!(!binaries.is_empty(), "no kubectl on PATH");
    let mut failures = Vec::new();
    let mut passed = Vec::new();
    for binary in &binaries {
        let server = KapiServer::start(&ServerOptions::default()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(binary, &server, dir.path());
        let started = Instant::now();
        let name = binary.file_name().unwrap().to_string_lossy().into_owned();
        match session(&k) {
            Ok(()) => passed.push(format!("{name} ({:.1?})", started.elapsed())),
            Err(e) => failures.push(format!("{name}: {e}\nserver stderr:\n{}", server.stderr())),
        }
    }
    eprintln!("kubectl sessions passed: {passed:?}");
    assert!(
        failures.is_empty(),
        "{} of {} kubectl versions failed:\n\n{}",
        failures.len(),
        binaries.len(),
        failures.join("\n\n")
    );
}

#[test]
fn deprecation_warnings_reach_kubectl_stderr() {
    let old = KapiServer::start(&ServerOptions {
        kube_version: Some("1.20".to_owned()),
        ..ServerOptions::default()
    })
    .unwrap();
    let new = KapiServer::start(&ServerOptions::default()).unwrap();
    let mut failures = Vec::new();
    for binary in &kubectl_binaries() {
        let dir = tempfile::tempdir().unwrap();
        let name = binary.file_name().unwrap().to_string_lossy().into_owned();
        let on_old = Kubectl::new(binary, &old, dir.path());
        let on_new = Kubectl::new(binary, &new, dir.path());
        let cases = [
            (
                &on_old,
                "ingresses.v1beta1.extensions",
                "Warning: extensions/v1beta1 Ingress is deprecated in v1.14+, unavailable in v1.22+; use networking.k8s.io/v1 Ingress",
            ),
            (
                &on_new,
                "widgets.v1alpha1.widgets.kapi.dev",
                "Warning: widgets.kapi.dev/v1alpha1 Widget is deprecated and will be removed; use widgets.kapi.dev/v1 Widget",
            ),
        ];
        for (k, resource, warning) in cases {
            let output = k.run(&["get", resource]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            if !output.status.success() || !stderr.contains(warning) {
                failures.push(format!(
                    "{name} get {resource}: status {}, stderr:\n{stderr}",
                    output.status
                ));
            }
        }
        // The current version of the same kind carries no warning.
        let output = on_new.run(&["get", "widgets.v1.widgets.kapi.dev"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() || stderr.contains("Warning") {
            failures.push(format!(
                "{name} get widgets v1: {}, stderr:\n{stderr}",
                output.status
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_binary_stops_cleanly_on_sigterm() {
    let mut server = KapiServer::start(&ServerOptions::default()).unwrap();
    eprintln!("kapi ready after {:?}", server.ready_after());
    let started = Instant::now();
    let status = server.terminate(Duration::from_secs(15)).unwrap();
    assert!(status.success(), "kapi exited with {status} on SIGTERM");
    eprintln!("kapi stopped {:?} after SIGTERM", started.elapsed());
}

/// The CRDs `#[derive(CustomResource)]` emits (the committed goldens under
/// `runtime/tests/crd_golden/`) pass `kubectl apply --dry-run=client`: kubectl maps them through
/// discovery and validates them against the server's OpenAPI documents before sending nothing.
#[test]
fn derived_crds_pass_kubectl_client_dry_run() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let binaries = kubectl_binaries();
    let binary = binaries.first().expect("no kubectl on PATH");
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::new(binary, &server, dir.path());
    let goldens = kapi_e2e::workspace_root().join("runtime/tests/crd_golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&goldens)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 3,
        "expected the CRD goldens in {}",
        goldens.display()
    );
    for file in &files {
        let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let name = crd["metadata"]["name"].as_str().unwrap();
        let applied = k
            .ok(&[
                "apply",
                "--dry-run=client",
                "-o",
                "name",
                "-f",
                file.to_str().unwrap(),
            ])
            .unwrap();
        assert_eq!(
            applied.trim(),
            format!("customresourcedefinition.apiextensions.k8s.io/{name}"),
            "{}",
            file.display()
        );
    }
    // The same manifest under an API version the server does not serve is refused, so the loop
    // above really went through the server's discovery.
    let wrong = std::fs::read_to_string(&files[0])
        .unwrap()
        .replace("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v9");
    let wrong = k.file("wrong-version.yaml", &wrong);
    let refused = k.run(&["apply", "--dry-run=client", "-f", wrong.to_str().unwrap()]);
    assert!(
        !refused.status.success(),
        "kubectl accepted apiextensions.k8s.io/v9"
    );
}

/// A ConfigMap named by the server (`generateName`), for server-side dry runs.
const GENERATED_CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  generateName: dry-
data:
  k: v
";

/// A ConfigMap with a field ConfigMap does not have.
const UNKNOWN_FIELD_CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: loose
bogus: 1
data:
  k: v
";

/// Server-side dry runs and field validation as kubectl drives them: `create --dry-run=server`
/// answers with a server-made name and uid that a following `get` does not find;
/// `apply --validate=strict` fails on an unknown field with the server's strict decoding error,
/// `--validate=warn` prints the server's warning and applies; `delete --dry-run=server` keeps
/// the object.
fn dry_run_and_field_validation(k: &Kubectl<'_>) -> Result<(), String> {
    // The server is shared by every kubectl; a failed run may have left this behind.
    k.ok(&["delete", "configmap", "loose", "--ignore-not-found"])?;
    let generated = k.file("generated.yaml", GENERATED_CONFIG_MAP);
    let out = k.ok(&[
        "create",
        "--dry-run=server",
        "-o",
        "json",
        "-f",
        generated.to_str().unwrap(),
    ])?;
    let created: Value =
        serde_json::from_str(&out).map_err(|e| format!("create -o json is not JSON: {e}"))?;
    let name = created["metadata"]["name"].as_str().unwrap_or_default();
    if !name.starts_with("dry-")
        || name.len() <= "dry-".len()
        || created["metadata"]["uid"]
            .as_str()
            .is_none_or(str::is_empty)
    {
        return Err(format!("create --dry-run=server answered {created}"));
    }
    let missing = k.run(&["get", "configmap", name]);
    expect(
        "get after create --dry-run=server",
        &String::from_utf8_lossy(&missing.stderr),
        "NotFound",
    )?;
    let listed = k.ok(&["get", "configmaps", "-o", "name"])?;
    if listed.contains("dry-") {
        return Err(format!("a dry-run create was stored: {listed}"));
    }

    let loose = k.file("loose.yaml", UNKNOWN_FIELD_CONFIG_MAP);
    let refused = k.run(&["apply", "--validate=strict", "-f", loose.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    if refused.status.success() {
        return Err(format!(
            "apply --validate=strict accepted an unknown field:\n{stderr}"
        ));
    }
    expect(
        "apply --validate=strict",
        &stderr,
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\"",
    )?;
    let gone = k.run(&["get", "configmap", "loose"]);
    expect(
        "get after a refused apply",
        &String::from_utf8_lossy(&gone.stderr),
        "NotFound",
    )?;
    let warned = k.run(&["apply", "--validate=warn", "-f", loose.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&warned.stdout);
    let stderr = String::from_utf8_lossy(&warned.stderr);
    if !warned.status.success() {
        return Err(format!("apply --validate=warn failed:\n{stdout}{stderr}"));
    }
    expect("apply --validate=warn", &stdout, "configmap/loose created")?;
    expect(
        "apply --validate=warn",
        &stderr,
        "Warning: unknown field \"bogus\"",
    )?;

    let deleted = k.ok(&["delete", "configmap", "loose", "--dry-run=server"])?;
    // kubectl 1.34 started naming the namespace in delete's success line (its own text,
    // not the server's; seen from kubectl 1.34.5 and 1.35.2).
    let said = if k.client_minor()? >= 34 {
        "configmap \"loose\" deleted from default namespace (server dry run)"
    } else {
        "configmap \"loose\" deleted (server dry run)"
    };
    expect("delete --dry-run=server", &deleted, said)?;
    let kept: Value = serde_json::from_str(&k.ok(&["get", "configmap", "loose", "-o", "json"])?)
        .map_err(|e| format!("get -o json is not JSON: {e}"))?;
    if kept["metadata"].get("deletionTimestamp").is_some() || kept["data"]["k"] != "v" {
        return Err(format!(
            "delete --dry-run=server changed the object: {kept}"
        ));
    }
    k.ok(&["delete", "configmap", "loose"])?;
    Ok(())
}

#[test]
fn server_side_dry_run_and_field_validation_with_every_kubectl() {
    let binaries = kubectl_binaries();
    assert!(!binaries.is_empty(), "no kubectl on PATH");
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let mut failures = Vec::new();
    for binary in &binaries {
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(binary, &server, dir.path());
        if let Err(e) = dry_run_and_field_validation(&k) {
            let name = binary.file_name().unwrap().to_string_lossy().into_owned();
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} kubectl versions failed:\n\n{}\nserver stderr:\n{}",
        failures.len(),
        binaries.len(),
        failures.join("\n\n"),
        server.stderr()
    );
}

/// Two ConfigMaps owned by `owner` (blocking its foreground deletion).
fn dependents_manifest(mode: &str, owner: &str, uid: &str) -> String {
    (0..2)
        .map(|i| {
            format!(
                "apiVersion: v1
kind: ConfigMap
metadata:
  name: dep-{mode}-{i}
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: {owner}
    uid: {uid}
    blockOwnerDeletion: true
data:
  k: v
"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// `kubectl delete --cascade=...` on an owner ConfigMap with two dependent ConfigMaps: the
/// server's garbage collector deletes the dependents (foreground: before the owner is gone,
/// which `kubectl delete` waits for; background: after it) or orphans them (their owner
/// reference is removed). Runs against the default kubectl only.
#[test]
fn kubectl_delete_cascade_modes() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let run = |mode: &str| -> Result<(), String> {
        let owner = format!("owner-{mode}");
        // Imperative `create configmap` sends protobuf, which the server does not read.
        let owner_file = k.file(
            &format!("{owner}.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {owner}\n"),
        );
        k.ok(&["create", "-f", owner_file.to_str().unwrap()])?;
        let uid = k.ok(&["get", "configmap", &owner, "-o", "jsonpath={.metadata.uid}"])?;
        let manifest = k.file(
            &format!("{mode}.yaml"),
            &dependents_manifest(mode, &owner, uid.trim()),
        );
        k.ok(&["create", "-f", manifest.to_str().unwrap()])?;
        k.ok(&["delete", "configmap", &owner, &format!("--cascade={mode}")])?;
        let names = [format!("dep-{mode}-0"), format!("dep-{mode}-1")];
        let remaining = || -> Result<String, String> {
            let mut args = vec!["get", "configmaps", "--ignore-not-found", "-o", "name"];
            args.extend(names.iter().map(String::as_str));
            k.ok(&args)
        };
        match mode {
            "orphan" => {
                for name in &names {
                    let refs = k.ok(&[
                        "get",
                        "configmap",
                        name,
                        "-o",
                        "jsonpath={.metadata.ownerReferences}",
                    ])?;
                    if !refs.trim().is_empty() {
                        return Err(format!("orphaned {name} still has owners: {refs}"));
                    }
                }
            }
            // The owner only goes once its blocking dependents are gone.
            "foreground" => {
                let left = remaining()?;
                if !left.trim().is_empty() {
                    return Err(format!("dependents outlived a foreground delete: {left}"));
                }
            }
            _ => {
                let deadline = Instant::now() + DEFAULT_CALL_TIMEOUT;
                while !remaining()?.trim().is_empty() {
                    if Instant::now() > deadline {
                        return Err("dependents outlived a background delete".to_owned());
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        let owner_left = k.ok(&[
            "get",
            "configmap",
            &owner,
            "--ignore-not-found",
            "-o",
            "name",
        ])?;
        if owner_left.trim().is_empty() {
            Ok(())
        } else {
            Err(format!("the owner is still there: {owner_left}"))
        }
    };
    let failures: Vec<String> = ["foreground", "background", "orphan"]
        .into_iter()
        .filter_map(|mode| run(mode).err().map(|e| format!("--cascade={mode}: {e}")))
        .collect();
    assert!(
        failures.is_empty(),
        "{}\nserver stderr:\n{}",
        failures.join("\n\n"),
        server.stderr()
    );
}

/// kubectl's discovery cache (`--cache-dir`, client-go's `diskcache` over an HTTP cache)
/// revalidates the aggregated document with the `ETag` the server tagged it with
/// (`ServeHTTPWithETag`, k8s.io/apiserver `endpoints/discovery/aggregated/etag.go`: `ETag`,
/// `Cache-Control: public`, 304 for a matching `If-None-Match`): the second run reads `/api`
/// and `/apis` from its cache (`X-From-Cache: 1`), the server having answered 304.
#[test]
fn kubectl_revalidates_aggregated_discovery_with_its_etag() {
    let server = KapiServer::start(&ServerOptions::release("1.34")).unwrap();
    let mut failures = Vec::new();
    for binary in &kubectl_binaries() {
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(binary, &server, dir.path());
        let cache = dir.path().join("cache");
        let cache = format!("--cache-dir={}", cache.display());
        let run = || {
            let out = k.run(&["api-resources", &cache, "-v=8"]);
            String::from_utf8_lossy(&out.stderr).into_owned()
        };
        let first = run();
        let second = run();
        let name = binary.file_name().unwrap().to_string_lossy().into_owned();
        if !first.contains("Etag: \"") || first.contains("X-From-Cache: 1") {
            failures.push(format!("{name}: first run:\n{first}"));
        } else if second.matches("X-From-Cache: 1").count() < 2 {
            failures.push(format!("{name}: second run:\n{second}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
