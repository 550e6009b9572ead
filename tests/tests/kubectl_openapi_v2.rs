//! kubectl reading `/openapi/v2` in protobuf: client-go's `DiscoveryClient.OpenAPISchema`
//! (`staging/src/k8s.io/client-go/discovery/discovery_client.go`) asks for
//! `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and nothing else, and falls
//! back to `/swagger-2.0.0.pb-v1` when refused; it proto-decodes the answer as gnostic's
//! `openapi_v2.Document`, which kube-openapi's `pkg/util/proto` turns into the models kubectl
//! works with.
//!
//! What reads it: client-side `apply` and `diff` compute a strategic merge patch from the
//! models' patch strategies (`Patcher.patchSimple` in `staging/src/k8s.io/kubectl/pkg/cmd/apply/
//! patcher.go`; kapi's v3 PATCH operations list no strategic merge patch, so every kubectl
//! 1.27 .. 1.35 reads v2 for it, in every release); `explain` renders them
//! (`renderOpenAPIV2` in `pkg/cmd/explain/explain.go`: with `--output=plaintext-openapiv2`, and
//! by default in kubectl 1.27 and 1.28); and client-side validation checks manifests against
//! them (`NewParamVerifyingSchema`, `pkg/validation`) when the server's documents offer no
//! `fieldValidation`, as 1.20's (server-side field validation came in 1.25) do not, with the
//! message of kube-openapi's `pkg/util/proto/validation` (`ValidationError(<path>): unknown
//! field "<name>" in <model>`), for built-in kinds and for a real CRD's custom resources.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::path::Path;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, kubectl_binaries, spec_corpus};

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx
";

/// kubectl's `-v=6` log names every request with its status: the v2 document was read in
/// protobuf, so there was no fallback to the legacy path.
fn assert_read_v2(call: &str, stderr: &str) {
    let read = stderr.lines().any(|line| {
        line.contains("/openapi/v2") && line.contains("200 OK") && !line.contains("/openapi/v3")
    });
    assert!(
        read && !stderr.contains("swagger-2.0.0.pb-v1"),
        "{call} did not read /openapi/v2:\n{stderr}"
    );
}

/// Runs `args` with `-v=6`; returns stdout and stderr, failing unless the exit code is `code`.
fn run(k: &Kubectl<'_>, args: &[&str], code: i32) -> (String, String) {
    let mut all = args.to_vec();
    all.push("-v=6");
    let output = k.run(&all);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(code),
        "`kubectl {}`:\n{stdout}{stderr}\nserver stderr:\n{}",
        args.join(" "),
        k.server().stderr()
    );
    (stdout, stderr)
}

fn name_of(binary: &Path) -> String {
    binary.file_name().unwrap().to_string_lossy().into_owned()
}

/// `apply` (create, then a change applied as a strategic merge patch computed from the v2
/// models), `diff` (the same patch as a server-side dry run) and `explain` from v2, each seen
/// to read `/openapi/v2`; `validates_on_client` says whether an unknown field is kubectl's own
/// error (1.20) or the server's strict decoding error.
fn apply_diff_explain(k: &Kubectl<'_>, validates_on_client: bool) {
    let name = name_of(k.binary());
    let created = k.file("web.yaml", DEPLOYMENT);
    let created = created.to_str().unwrap();
    let (stdout, stderr) = run(k, &["apply", "--validate=true", "-f", created], 0);
    assert!(
        stdout.contains("deployment.apps/web created"),
        "{name}: {stdout}"
    );
    if validates_on_client {
        assert_read_v2(&format!("{name} apply (validation)"), &stderr);
    }

    // A changed count and image: a strategic merge patch keyed by the containers' names.
    let changed = DEPLOYMENT
        .replace("replicas: 2", "replicas: 3")
        .replace("image: nginx", "image: nginx:1.27");
    let changed = k.file("web-changed.yaml", &changed);
    let changed = changed.to_str().unwrap();
    let (stdout, stderr) = run(k, &["apply", "-f", changed], 0);
    assert!(
        stdout.contains("deployment.apps/web configured"),
        "{name}: {stdout}"
    );
    assert_read_v2(&format!("{name} apply (patch)"), &stderr);
    let live = k.expect_json(&["get", "deployment", "web"]);
    assert_eq!(live["spec"]["replicas"], 3, "{name}");
    let containers = live["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1, "{name}: {containers:?}");
    assert_eq!(containers[0]["image"], "nginx:1.27", "{name}");

    // diff: nothing to show for what is applied (exit 0), a change for the rest (exit 1).
    let (stdout, stderr) = run(k, &["diff", "-f", changed], 0);
    assert!(stdout.is_empty(), "{name}: {stdout}");
    assert_read_v2(&format!("{name} diff"), &stderr);
    let (stdout, _) = run(k, &["diff", "-f", created], 1);
    assert!(
        stdout.contains("-  replicas: 3") && stdout.contains("+  replicas: 2"),
        "{name}: {stdout}"
    );

    let (stdout, stderr) = run(
        k,
        &[
            "explain",
            "deployment.spec.replicas",
            "--output=plaintext-openapiv2",
        ],
        0,
    );
    assert!(
        stdout.contains("KIND:") && stdout.contains("Deployment"),
        "{name}: {stdout}"
    );
    assert!(stdout.contains("replicas <integer>"), "{name}: {stdout}");
    // The 1.20 swagger's description of the field.
    assert!(
        stdout.contains("Number of desired pods."),
        "{name}: {stdout}"
    );
    assert_read_v2(&format!("{name} explain"), &stderr);
    // A field the model lacks is refused by kubectl's reading of the models.
    let stderr = k.expect_failure(&[
        "explain",
        "deployment.spec.bogus",
        "--output=plaintext-openapiv2",
    ]);
    assert!(
        stderr.contains("field \"bogus\" does not exist"),
        "{name}: {stderr}"
    );

    let unknown = DEPLOYMENT.replace("  replicas: 2\n", "  replicas: 2\n  bogus: 1\n");
    let unknown = k.file("web-unknown.yaml", &unknown);
    let stderr = k.expect_failure(&["apply", "--validate=true", "-f", unknown.to_str().unwrap()]);
    if validates_on_client {
        assert!(
            stderr.contains(
                "ValidationError(Deployment.spec): unknown field \"bogus\" in io.k8s.api.apps.v1.DeploymentSpec"
            ),
            "{name}: {stderr}"
        );
    } else {
        assert!(
            stderr.contains("strict decoding error: unknown field \"spec.bogus\""),
            "{name}: {stderr}"
        );
    }
    k.expect_ok(&["delete", "deployment", "web"]);
}

/// Against 1.20 every kubectl reads v2 for all four: it validates on the client side too.
///
/// 1.20 has no `/openapi/v3` (OpenAPIV3 came in 1.23): kubectl 1.29 and newer, whose `explain`
/// reads v3 by default, first ask `/openapi/v3`, get upstream's 404 for a path nothing serves,
/// and render from v2 (`explain.go`'s `plaintext` case: "Use v2 renderer if server does not
/// support v3"); 1.27 and 1.28 read v2 by default.
#[test]
fn every_kubectl_applies_diffs_explains_and_validates_against_1_20() {
    let binaries = kubectl_binaries();
    assert!(!binaries.is_empty(), "no kubectl on PATH");
    let server = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    for binary in &binaries {
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(binary, &server, dir.path());
        apply_diff_explain(&k, true);
        let name = name_of(binary);
        let (stdout, stderr) = run(&k, &["explain", "deployment.spec.replicas"], 0);
        assert!(stdout.contains("replicas <integer>"), "{name}: {stdout}");
        assert_read_v2(&format!("{name} explain (default output)"), &stderr);
        if k.client_minor().unwrap() >= 29 {
            assert!(
                stderr
                    .lines()
                    .any(|line| line.contains("/openapi/v3") && line.contains("404 Not Found")),
                "{name} did not ask /openapi/v3:\n{stderr}"
            );
        }
    }
}

/// Later releases offer `fieldValidation`, so kubectl leaves validation to the server; it
/// still reads v2 for `apply`'s and `diff`'s patches, and kubectl 1.27 and 1.28 for `explain`
/// without being asked (checked for the oldest and the newest kubectl).
#[test]
fn oldest_and_newest_kubectl_read_v2_in_later_releases() {
    let binaries = kubectl_binaries();
    let mut pinned: Vec<_> = binaries
        .iter()
        .filter(|b| name_of(b).starts_with("kubectl.1."))
        .collect();
    pinned.sort_by_key(|b| {
        name_of(b)
            .trim_start_matches("kubectl.1.")
            .parse::<u32>()
            .unwrap_or(0)
    });
    let chosen: Vec<_> = match (pinned.first(), pinned.last()) {
        (Some(first), Some(last)) if first != last => vec![*first, *last],
        _ => binaries.iter().take(1).collect(),
    };
    for release in ["1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        for binary in &chosen {
            let dir = tempfile::tempdir().unwrap();
            let k = Kubectl::new(binary, &server, dir.path());
            apply_diff_explain(&k, false);
            // kubectl 1.27 and 1.28 explain from v2 unless told otherwise.
            if ["kubectl.1.27", "kubectl.1.28"].contains(&name_of(binary).as_str()) {
                let (stdout, stderr) = run(&k, &["explain", "deployment.spec.replicas"], 0);
                assert!(stdout.contains("replicas <integer>"), "{stdout}");
                assert_read_v2(&format!("{} explain", name_of(binary)), &stderr);
            }
        }
    }
}

/// A real CRD's schema (the Prometheus operator's ServiceMonitor, from the spec corpus) reaches
/// kubectl through v2 as upstream's 1.20 publishes it: `explain` reads its fields and
/// client-side validation names the unknown one with the schema's name, reversed-group style.
#[test]
fn custom_resources_are_explained_and_validated_from_v2_against_1_20() {
    let server = KapiServer::start(&ServerOptions::release("1.20")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let crd = spec_corpus()
        .join("crds/prometheus-operator-v0.93.0_monitoring.coreos.com_servicemonitors.yaml");
    k.expect_ok(&["apply", "-f", crd.to_str().unwrap()]);
    k.expect_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/servicemonitors.monitoring.coreos.com",
        "--timeout=30s",
    ]);
    let (stdout, stderr) = run(
        &k,
        &[
            "explain",
            "servicemonitors.spec.endpoints.port",
            "--output=plaintext-openapiv2",
        ],
        0,
    );
    assert!(stdout.contains("ServiceMonitor"), "{stdout}");
    assert!(stdout.contains("port <string>"), "{stdout}");
    assert_read_v2("explain servicemonitors", &stderr);
    let monitor = k.file(
        "monitor.yaml",
        "apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  endpoints: [{port: web, bogusField: 1}]
",
    );
    let stderr = k.expect_failure(&["apply", "-f", monitor.to_str().unwrap()]);
    assert!(
        stderr.contains(
            "ValidationError(ServiceMonitor.spec.endpoints[0]): unknown field \"bogusField\" in com.coreos.monitoring.v1.ServiceMonitor.spec.endpoints"
        ),
        "{stderr}"
    );
}
