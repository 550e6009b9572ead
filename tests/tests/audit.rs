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

/// `--audit-log-maxsize`, `--audit-log-maxbackup` and `--audit-log-compress` rotate the log as
/// kube-apiserver's lumberjack does: a line that would pass the size moves the file aside as
/// `audit-<UTC time>.log`, only the newest backups stay, and they are gzipped.
#[test]
fn the_log_is_rotated_as_the_flags_say() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log_dir = dir.path().join("audit");
    let log = log_dir.join("audit.log");
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
            "--audit-log-maxsize=1".to_owned(),
            "--audit-log-maxbackup=1".to_owned(),
            "--audit-log-compress".to_owned(),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    // Each create's event holds a third of a megabyte: seven of them fill the file twice.
    let data = dir.path().join("data.txt");
    std::fs::write(&data, "x".repeat(300 << 10)).unwrap();
    for i in 0..7 {
        k.expect_ok(&[
            "create",
            "configmap",
            &format!("big{i}"),
            &format!("--from-file={}", data.display()),
        ]);
    }
    find(&log, |e| {
        e["verb"] == "create" && e["objectRef"]["name"] == "big6"
    });
    let backups: Vec<String> = std::fs::read_dir(&log_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "audit.log")
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    let backup = &backups[0];
    assert!(
        backup.starts_with("audit-") && backup.ends_with(".log.gz") && backup.len() == 36,
        "{backup}"
    );
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(log_dir.join(backup)).unwrap()),
        &mut text,
    )
    .unwrap();
    let created = |text: &str| -> Vec<String> {
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|e| e["verb"] == "create")
            .map(|e| e["objectRef"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // The newest backup only: the first one, with big0, is gone; the current file goes on
    // where the backup ends.
    let backed_up = created(&text);
    let current = created(&std::fs::read_to_string(&log).unwrap());
    assert!(
        !backed_up.is_empty() && !backed_up.contains(&"big0".to_owned()),
        "{backed_up:?}"
    );
    let next = |name: &str| name[3..].parse::<usize>().unwrap();
    assert_eq!(
        next(backed_up.last().unwrap()) + 1,
        next(&current[0]),
        "{backed_up:?} {current:?}"
    );
    assert_eq!(current.last().map(String::as_str), Some("big6"));
    assert!(std::fs::metadata(&log).unwrap().len() <= 1 << 20);
}

/// `--audit-webhook-config-file` (kube-apiserver's batching webhook backend,
/// `staging/src/k8s.io/apiserver/plugin/pkg/audit/buffered` and `.../audit/webhook`): the events
/// the policy keeps are POSTed as `audit.k8s.io/v1` `EventList`s to the server the kubeconfig
/// names, trusted by its CA and with its user's token, at most
/// `--audit-webhook-batch-max-size` to a request, beside the log; an audit webhook alone is
/// a backend too.
#[test]
fn events_are_sent_to_the_webhook_in_batches() {
    use axum::http::HeaderMap;
    use base64::Engine as _;
    use std::sync::{Arc, Mutex};

    /// Each request's `Authorization` header and body.
    type Received = Arc<Mutex<Vec<(Option<String>, Value)>>>;
    let received: Received = Arc::default();
    let seen = Arc::clone(&received);
    let router = axum::Router::new().route(
        "/audit",
        axum::routing::post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let seen = Arc::clone(&seen);
            async move {
                let token = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let list: Value = serde_json::from_slice(&body).unwrap_or_default();
                seen.lock().unwrap().push((token, list));
                "{}"
            }
        }),
    );
    let sink = kapi_e2e::HttpsServer::start(router).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let kubeconfig = dir.path().join("audit-webhook.kubeconfig");
    let ca = base64::engine::general_purpose::STANDARD.encode(sink.ca_pem());
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: audit\n  cluster:\n    server: {}/audit\n    certificate-authority-data: {ca}\nusers:\n- name: kapi\n  user:\n    token: audit-writer\ncontexts:\n- name: default\n  context: {{cluster: audit, user: kapi}}\ncurrent-context: default\n",
            sink.url()
        ),
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
            format!("--audit-webhook-config-file={}", kubeconfig.display()),
            "--audit-webhook-batch-max-wait=200ms".to_owned(),
            "--audit-webhook-batch-max-size=2".to_owned(),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let admin = Kubectl::on_path(&server, dir.path());
    for name in ["one", "two", "three"] {
        admin.expect_ok(&["create", "configmap", name, "--from-literal=k=v"]);
    }
    let created = |items: &[Value], name: &str| {
        items.iter().any(|e| {
            e["verb"] == "create"
                && e["objectRef"]["name"] == name
                && e["stage"] == "ResponseComplete"
        })
    };
    let mut all = Vec::new();
    for _ in 0..100 {
        all = received
            .lock()
            .unwrap()
            .iter()
            .flat_map(|(_, list)| list["items"].as_array().cloned().unwrap_or_default())
            .collect();
        if ["one", "two", "three"].iter().all(|n| created(&all, n)) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        ["one", "two", "three"].iter().all(|n| created(&all, n)),
        "{all:#?}"
    );
    let batches = received.lock().unwrap().clone();
    for (token, list) in &batches {
        assert_eq!(token.as_deref(), Some("Bearer audit-writer"));
        assert_eq!(list["kind"], "EventList");
        assert_eq!(list["apiVersion"], "audit.k8s.io/v1");
        let items = list["items"].as_array().unwrap();
        assert!((1..=2).contains(&items.len()), "{list}");
    }
    // The webhook gets what the log gets: the same events, at the policy's level.
    let event = all
        .iter()
        .find(|e| created(std::slice::from_ref(e), "two"))
        .unwrap();
    assert_eq!(event["level"], "RequestResponse");
    assert_eq!(event["responseObject"]["data"]["k"], "v");
    let logged = find(&log, |e| {
        e["auditID"] == event["auditID"] && e["stage"] == "ResponseComplete"
    });
    assert_eq!(logged["requestObject"], event["requestObject"]);

    // Without a log: the webhook alone.
    drop(server);
    let before = received.lock().unwrap().len();
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-webhook-config-file={}", kubeconfig.display()),
            "--audit-webhook-batch-max-wait=200ms".to_owned(),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    Kubectl::on_path(&server, dir.path()).expect_ok(&["create", "configmap", "four"]);
    let mut found = false;
    for _ in 0..100 {
        let lists = received.lock().unwrap()[before..].to_vec();
        let items: Vec<Value> = lists
            .iter()
            .flat_map(|(_, list)| list["items"].as_array().cloned().unwrap_or_default())
            .collect();
        if created(&items, "four") {
            found = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(found, "the webhook alone got no event of the create");
}

/// `--audit-webhook-mode` and `--audit-log-mode` (kube-apiserver's `blocking` and
/// `blocking-strict`, `staging/src/k8s.io/apiserver/pkg/server/options/audit.go`
/// `wrapBackend`, and the audit filter `pkg/endpoints/filters/audit.go`): in the blocking modes
/// a request is answered only once its events are stored, so they are there as soon as the
/// client has its answer; a failed delivery is logged, and in `blocking-strict` a request whose
/// RequestReceived event cannot be stored fails with upstream's plain-text 500 and is not
/// served. The log blocks by default, as upstream's does.
#[test]
fn blocking_backends_hold_requests_until_their_events_are_stored() {
    use base64::Engine as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    const STAGES: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Metadata
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: None
"#;
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let failing = Arc::new(AtomicBool::new(false));
    let (seen, fails) = (Arc::clone(&received), Arc::clone(&failing));
    let router = axum::Router::new().route(
        "/audit",
        axum::routing::post(move |body: axum::body::Bytes| {
            let (seen, fails) = (Arc::clone(&seen), Arc::clone(&fails));
            async move {
                if fails.load(Ordering::SeqCst) {
                    return (axum::http::StatusCode::SERVICE_UNAVAILABLE, "down");
                }
                let list: Value = serde_json::from_slice(&body).unwrap_or_default();
                let items = list["items"].as_array().cloned().unwrap_or_default();
                seen.lock().unwrap().extend(items);
                (axum::http::StatusCode::OK, "{}")
            }
        }),
    );
    let sink = kapi_e2e::HttpsServer::start(router).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, STAGES).unwrap();
    let kubeconfig = dir.path().join("audit-webhook.kubeconfig");
    let ca = base64::engine::general_purpose::STANDARD.encode(sink.ca_pem());
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: audit\n  cluster:\n    server: {}/audit\n    certificate-authority-data: {ca}\nusers:\n- name: kapi\n  user: {{}}\ncontexts:\n- name: default\n  context: {{cluster: audit, user: kapi}}\ncurrent-context: default\n",
            sink.url()
        ),
    )
    .unwrap();
    let start = |mode: &str, log: &Path| {
        KapiServer::start(&ServerOptions {
            args: vec![
                format!("--audit-policy-file={}", policy.display()),
                format!("--audit-log-path={}", log.display()),
                format!("--audit-webhook-config-file={}", kubeconfig.display()),
                format!("--audit-webhook-mode={mode}"),
                "--audit-webhook-initial-backoff=10ms".to_owned(),
            ],
            ..ServerOptions::default()
        })
        .unwrap()
    };
    // The stage events of the request that created `name` (a create's RequestReceived event
    // names no object yet: upstream fills the name in from the body later).
    let stages = |events: &[Value], name: &str| -> Vec<String> {
        let Some(id) = events
            .iter()
            .find(|e| e["objectRef"]["name"] == name)
            .map(|e| e["auditID"].clone())
        else {
            return Vec::new();
        };
        events
            .iter()
            .filter(|e| e["auditID"] == id)
            .map(|e| e["stage"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let both = ["RequestReceived", "ResponseComplete"];

    // Blocking: the events are at the webhook and in the log when kubectl has its answer; the
    // RequestReceived event carries no authorization decision yet, as upstream's.
    let log = dir.path().join("audit.log");
    let server = start("blocking", &log);
    let admin = Kubectl::on_path(&server, dir.path());
    admin.expect_ok(&["create", "configmap", "one"]);
    let now = received.lock().unwrap().clone();
    assert_eq!(stages(&now, "one"), both, "{now:#?}");
    let first = now
        .iter()
        .find(|e| e["stage"] == "RequestReceived" && e["verb"] == "create")
        .unwrap();
    assert!(
        first["annotations"]["authorization.k8s.io/decision"].is_null(),
        "{first}"
    );
    assert_eq!(stages(&events(&log), "one"), both);
    // A webhook that fails costs blocking requests nothing but their events.
    failing.store(true, Ordering::SeqCst);
    admin.expect_ok(&["create", "configmap", "two"]);
    failing.store(false, Ordering::SeqCst);
    assert!(stages(&received.lock().unwrap(), "two").is_empty());
    assert_eq!(stages(&events(&log), "two"), both);
    drop(server);

    // Blocking-strict: a request whose first event cannot be delivered fails, unserved.
    let server = start("blocking-strict", &dir.path().join("strict.log"));
    let admin = Kubectl::on_path(&server, dir.path());
    failing.store(true, Ordering::SeqCst);
    let error = admin.expect_failure(&["create", "configmap", "three"]);
    failing.store(false, Ordering::SeqCst);
    assert!(
        error.contains(r#"Internal Server Error: \"/api/v1/namespaces/default/configmaps"#)
            && error.contains("failed to store audit event"),
        "{error}"
    );
    admin.expect_failure(&["get", "configmap", "three"]);
    // Upstream's filter writes nothing more of a request it refused for want of its event.
    let strict_log = events(&dir.path().join("strict.log"));
    assert!(
        !strict_log
            .iter()
            .any(|e| e["stage"] == "ResponseComplete" && e["responseStatus"]["code"] == 500),
        "{strict_log:#?}"
    );
    admin.expect_ok(&["create", "configmap", "three"]);
    assert_eq!(stages(&received.lock().unwrap(), "three"), both);
    drop(server);

    // The log in blocking-strict mode: a log that cannot be written fails requests too.
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--audit-policy-file={}", policy.display()),
            "--audit-log-path=/dev/full".to_owned(),
            "--audit-log-mode=blocking-strict".to_owned(),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let error =
        Kubectl::on_path(&server, dir.path()).expect_failure(&["create", "configmap", "four"]);
    assert!(error.contains("failed to store audit event"), "{error}");
}
