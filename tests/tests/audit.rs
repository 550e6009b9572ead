//! The audit log of `kapi serve` (`--audit-policy-file`, `--audit-log-path`), as kube-apiserver
//! writes it: one `audit.k8s.io/v1` Event per JSON line and stage, the level of the first rule
//! that matches, stages the policy omits left out, the authorization decision as annotations,
//! request and response bodies from the levels that keep them, impersonation recorded, refused
//! requests audited too, and an `Audit-Id` header on every answer
//! (`staging/src/k8s.io/apiserver/pkg/audit`, `pkg/endpoints/filters/audit.go`).

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::path::Path;
use std::time::Duration;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions};
use serde_json::Value;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/api*", "/openapi*"]
  - level: RequestResponse
    omitManagedFields: true
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: Metadata
"#;

fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Waits (bounded) until the log holds an event `matches` accepts, and answers it.
fn find(log: &Path, matches: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..100 {
        if let Some(event) = events(log).into_iter().find(|e| matches(e)) {
            return event;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "no such event in {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

#[test]
fn requests_are_audited_as_the_policy_says() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,1001\n").unwrap();
    let log = dir.path().join("audit/audit.log");
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
            format!("--token-auth-file={}", tokens.display()),
        ],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let admin = Kubectl::on_path(&server, dir.path());
    admin.expect_ok(&["create", "configmap", "audited", "--from-literal=k=v"]);

    // A create of a ConfigMap: RequestResponse, the bodies kept, RequestReceived omitted.
    let create = find(&log, |e| {
        e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps"
    });
    assert_eq!(create["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(create["kind"], "Event");
    assert_eq!(create["level"], "RequestResponse");
    assert_eq!(create["stage"], "ResponseComplete");
    assert_eq!(create["user"]["username"], "kubernetes-admin");
    assert_eq!(create["objectRef"]["namespace"], "default");
    assert_eq!(create["objectRef"]["name"], "audited");
    assert_eq!(create["objectRef"]["apiVersion"], "v1");
    assert_eq!(create["responseStatus"]["code"], 201);
    assert_eq!(create["requestObject"]["data"]["k"], "v");
    assert_eq!(create["responseObject"]["metadata"]["name"], "audited");
    assert!(
        create["responseObject"]["metadata"]
            .get("managedFields")
            .is_none(),
        "{create}"
    );
    assert_eq!(create["sourceIPs"][0], "127.0.0.1");
    assert!(
        create["userAgent"].as_str().unwrap().starts_with("kubectl"),
        "{create}"
    );
    assert_eq!(
        create["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(
        events(&log).iter().all(|e| e["stage"] != "RequestReceived"),
        "omitted stage written"
    );
    assert!(
        events(&log).iter().all(|e| e["requestURI"] != "/healthz"),
        "level None written"
    );

    // A refused request is audited with the decision and the Status.
    let alice = admin.as_user("alice", serde_json::json!({"token": "alice-token"}));
    alice.expect_failure(&["get", "secrets"]);
    let refused = find(&log, |e| {
        e["user"]["username"] == "alice" && e["verb"] == "list"
    });
    assert_eq!(refused["level"], "Metadata");
    assert_eq!(
        refused["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(refused["responseStatus"]["code"], 403);
    assert_eq!(refused["responseStatus"]["reason"], "Forbidden");
    assert!(refused.get("requestObject").is_none() && refused.get("responseObject").is_none());

    // Impersonation is recorded.
    admin.expect_ok(&["get", "pods", "--as=alice", "--as-group=system:masters"]);
    let impersonated = find(&log, |e| e["impersonatedUser"]["username"] == "alice");
    assert_eq!(impersonated["user"]["username"], "kubernetes-admin");

    // A watch: ResponseStarted when it starts, ResponseComplete when it ends.
    admin.run(&["get", "pods", "-w", "--request-timeout=1s"]);
    let started = find(&log, |e| {
        e["verb"] == "watch" && e["stage"] == "ResponseStarted"
    });
    let id = started["auditID"].clone();
    find(&log, |e| {
        e["auditID"] == id && e["stage"] == "ResponseComplete"
    });
}
