//! Admission webhooks as kube-apiserver calls them
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/`): an HTTPS webhook server
//! started in this process (`HttpsServer`: its own CA, bound to 127.0.0.1), registered with kubectl through
//! a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration, and writes made with
//! kubectl (and curl, for the answers' codes) against `kapi serve`; writes through `/scale` and
//! `/token` reviewed as their Scale and TokenRequest.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::Uri;
use base64::Engine as _;
use kapi_e2e::{HttpsServer, KapiServer, Kubectl, ServerOptions};
use serde_json::{Value, json};

/// How long the `/slow` webhook takes to answer: past its 1 s `timeoutSeconds`.
const SLOW: Duration = Duration::from_secs(3);

/// The webhook server (`HttpsServer`, with its own CA for the configurations' `caBundle`)
/// and every review it was sent.
struct Webhooks {
    server: HttpsServer,
    reviews: Arc<Mutex<Vec<Value>>>,
}

impl Webhooks {
    fn start() -> Self {
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reviews);
        let router = axum::Router::new().fallback(move |uri: Uri, body: Bytes| {
            let seen = Arc::clone(&seen);
            async move { answer(uri.path(), &body, &seen).await }
        });
        let server = HttpsServer::start(router).unwrap();
        Webhooks { server, reviews }
    }

    fn reviews(&self) -> Vec<Value> {
        self.reviews.lock().unwrap().clone()
    }

    /// The requests of the reviews `path` was sent about the object `name`.
    fn requests(&self, path: &str, name: &str) -> Vec<Value> {
        self.reviews()
            .into_iter()
            .filter(|r| r["path"] == path && r["review"]["request"]["name"] == name)
            .map(|r| r["review"]["request"].clone())
            .collect()
    }
}

/// What each path of the webhook server answers to the review `body`.
async fn answer(path: &str, body: &[u8], seen: &Mutex<Vec<Value>>) -> String {
    let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    seen.lock()
        .unwrap()
        .push(json!({"path": path, "review": review}));
    let req = &review["request"];
    let name = req["name"].as_str().unwrap_or("");
    let mut response = json!({"uid": req["uid"], "allowed": true});
    match path {
        "/mutate" => {
            let label = if req["object"]["metadata"]["labels"].is_object() {
                json!({"op": "add", "path": "/metadata/labels/mutated", "value": "yes"})
            } else {
                json!({"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}})
            };
            // A field the kind does not have, which the server drops when it decodes the
            // patched object.
            let stray = json!({"op": "add", "path": "/stray", "value": "x"});
            let patch = json!([label, stray]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
            response["warnings"] = json!(["labelled by add-label.kapi.test"]);
            response["auditAnnotations"] = json!({"labelled": "yes", "Bad Key!": "dropped"});
        }
        "/deny" if name.starts_with("checked-") => {
            response["auditAnnotations"] = json!({"verdict": "checked"});
        }
        "/deny" if name.starts_with("bad-") => {
            response["allowed"] = json!(false);
            response["status"] =
                json!({"code": 403, "reason": "Forbidden", "message": "bad names are not allowed"});
        }
        "/deny" if name.starts_with("plain-") => {
            response["allowed"] = json!(false);
            response["status"] = json!({"message": "no code given"});
        }
        "/mark" => {
            let seen = if req["object"]["metadata"]["labels"]["b"].is_string() {
                "yes"
            } else {
                "no"
            };
            let patch =
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"seen-b": seen}}]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
        }
        "/add-b" => {
            let patch = json!([{"op": "add", "path": "/metadata/labels/b", "value": "yes"}]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
        }
        "/see-policy" => {
            // Marks the object and tells whether the policy's label was there.
            let saw = req["object"]["metadata"]["labels"]["policy-saw"]
                .as_str()
                .unwrap_or("none");
            let patch = json!([
                {"op": "add", "path": "/metadata/labels/webhook", "value": "yes"},
                {"op": "add", "path": "/metadata/labels/webhook-saw", "value": saw},
            ]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
        }
        "/strip-tolerations" if req["object"]["spec"]["tolerations"].is_array() => {
            let patch = json!([{"op": "remove", "path": "/spec/tolerations"}]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
        }
        "/cap-scale"
            if req["object"]["kind"] == "Scale"
                && req["object"]["spec"]["replicas"].as_i64().unwrap_or(0) > 10 =>
        {
            let patch = json!([{"op": "replace", "path": "/spec/replicas", "value": 10}]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
        }
        "/deny-token" if name == "blocked" => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 403, "reason": "Forbidden",
                "message": format!("no tokens for {name}")});
        }
        "/slow" => tokio::time::sleep(SLOW).await,
        _ => {}
    }
    json!({
        "apiVersion": review["apiVersion"],
        "kind": "AdmissionReview",
        "response": response,
    })
    .to_string()
}

/// The configurations, calling `hooks` and, for the unreachable ones, the closed port `closed`.
fn configurations(hooks: &Webhooks, closed: u16) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(hooks.server.ca_pem());
    let url = |path: &str| format!("{}{path}", hooks.server.url());
    let rules = json!([{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["configmaps"]}]);
    let hook = |name: &str, url: String, extra: Value| {
        let mut hook = json!({
            "name": name,
            "clientConfig": {"url": url, "caBundle": ca},
            "rules": rules,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        for (k, v) in extra.as_object().unwrap() {
            hook[k] = v.clone();
        }
        hook
    };
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "label-adder"},
        "webhooks": [hook("add-label.kapi.test", url("/mutate"),
            json!({"namespaceSelector": {"matchLabels": {"webhooks": "on"}},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                    "apiVersions": ["v1"], "resources": ["configmaps"]}]}))],
    });
    let unreachable = format!("https://127.0.0.1:{closed}/x");
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "guards"},
        "webhooks": [
            hook("deny.kapi.test", url("/deny"), json!({"objectSelector":
                {"matchExpressions": [{"key": "skip-deny", "operator": "DoesNotExist"}]}})),
            hook("ignore.kapi.test", unreachable.clone(), json!({"failurePolicy": "Ignore",
                "objectSelector": {"matchLabels": {"reach": "ignore"}}})),
            hook("fail.kapi.test", unreachable, json!({"failurePolicy": "Fail",
                "objectSelector": {"matchLabels": {"reach": "fail"}}})),
            hook("slow.kapi.test", url("/slow"), json!({"timeoutSeconds": 1,
                "objectSelector": {"matchLabels": {"slow": "yes"}}})),
            hook("unknown.kapi.test", url("/allow"), json!({"sideEffects": "Unknown",
                "objectSelector": {"matchLabels": {"dry": "yes"}}})),
        ],
    });
    format!("{mutating}\n{validating}\n")
}

fn config_map(namespace: &str, name: &str, labels: &Value) -> String {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": {"k": "v"}})
    .to_string()
}

/// `kubectl create` of a ConfigMap: its output, stdout and stderr together, and success.
fn create(
    k: &Kubectl<'_>,
    namespace: &str,
    name: &str,
    labels: Value,
    extra: &[&str],
) -> (bool, String) {
    let file = k.file(
        &format!("{namespace}-{name}.json"),
        &config_map(namespace, name, &labels),
    );
    let mut args = vec!["create", "-f", file.to_str().unwrap()];
    args.extend(extra);
    let output = k.run(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// A POST of a ConfigMap with curl: the answer's code and body.
fn post(
    server: &KapiServer,
    dir: &std::path::Path,
    namespace: &str,
    name: &str,
    labels: Value,
) -> (u16, Value) {
    let body = dir.join(format!("curl-{name}.json"));
    std::fs::write(&body, config_map(namespace, name, &labels)).unwrap();
    let answer = dir.join(format!("curl-{name}.answer"));
    let output = Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "20",
            "-H",
            "Content-Type: application/json",
            "-o",
        ])
        .arg(&answer)
        .args(["-w", "%{http_code}", "--data-binary"])
        .arg(format!("@{}", body.display()))
        .arg(format!(
            "{}/api/v1/namespaces/{namespace}/configmaps",
            server.url()
        ))
        .output()
        .unwrap();
    let code = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let text = std::fs::read(&answer).unwrap_or_default();
    (code, serde_json::from_slice(&text).unwrap_or(Value::Null))
}

#[test]
fn admission_webhooks_mutate_deny_and_fail_as_upstreams() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let hooks = Webhooks::start();
    // A port nothing listens on: bound, then released.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    k.expect_ok(&["create", "namespace", "hooked"]);
    k.expect_ok(&["label", "namespace", "hooked", "webhooks=on"]);
    k.expect_ok(&["create", "namespace", "plain"]);
    let file = k.file("configurations.json", &configurations(&hooks, closed));
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);

    // The mutating webhook's JSON patch lands and its warning reaches kubectl
    // (`mutatingDispatcher.callAttrMutatingHook`: the patch applied, `warning.AddWarning`).
    let (ok, text) = create(&k, "hooked", "labelled", json!({"app": "a"}), &[]);
    assert!(ok, "{text}");
    assert!(
        text.contains("Warning: labelled by add-label.kapi.test"),
        "{text}"
    );
    let stored = k.expect_json(&["get", "configmap", "labelled", "-n", "hooked"]);
    assert_eq!(
        stored["metadata"]["labels"],
        json!({"app": "a", "mutated": "yes"})
    );
    // The patched object is decoded into the kind's type again (the dispatcher's
    // `jsonSerializer.Decode` of the patched JSON, then the kind's defaulter).
    assert_eq!(stored.get("stray"), None, "{stored}");

    // The AdmissionReview carries upstream's request fields (`CreateAdmissionObjects`).
    let requests = hooks.requests("/mutate", "labelled");
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert!(
        request["uid"].as_str().is_some_and(|u| !u.is_empty()),
        "{request}"
    );
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(request["requestResource"], request["resource"]);
    assert_eq!(request["namespace"], "hooked");
    assert_eq!(request["operation"], "CREATE");
    assert!(
        request["userInfo"]["username"]
            .as_str()
            .is_some_and(|u| !u.is_empty()),
        "{request}"
    );
    assert_eq!(request["object"]["metadata"]["name"], "labelled");
    assert_eq!(request["oldObject"], Value::Null);
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["options"]["kind"], "CreateOptions");

    // An update (kubectl's patch) is a mutating review with the old object.
    k.expect_ok(&["label", "configmap", "labelled", "-n", "hooked", "extra=1"]);
    let update = hooks.requests("/mutate", "labelled");
    let update = update
        .iter()
        .find(|r| r["operation"] == "UPDATE")
        .expect("an UPDATE review");
    assert_eq!(update["oldObject"]["metadata"]["labels"]["mutated"], "yes");
    assert_eq!(update["object"]["metadata"]["labels"]["extra"], "1");
    assert_eq!(update["options"]["kind"], "UpdateOptions");

    // The namespaceSelector skips a namespace without the label (`namespace.Matcher`).
    let (ok, text) = create(&k, "plain", "untouched", json!({"app": "b"}), &[]);
    assert!(ok, "{text}");
    let stored = k.expect_json(&["get", "configmap", "untouched", "-n", "plain"]);
    assert_eq!(stored["metadata"]["labels"], json!({"app": "b"}));
    assert!(hooks.requests("/mutate", "untouched").is_empty());

    // A denial keeps the webhook's code, the message names the webhook
    // (`webhookerrors.ToStatusErr`); one without a code is 400.
    let (ok, text) = create(&k, "plain", "bad-one", json!({}), &[]);
    assert!(!ok);
    assert!(
        text.contains(
            r#"admission webhook "deny.kapi.test" denied the request: bad names are not allowed"#
        ),
        "{text}"
    );
    let (code, status) = post(&server, dir.path(), "plain", "bad-two", json!({}));
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        r#"admission webhook "deny.kapi.test" denied the request: bad names are not allowed"#
    );
    let (code, status) = post(&server, dir.path(), "plain", "plain-one", json!({}));
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        r#"admission webhook "deny.kapi.test" denied the request: no code given"#
    );

    // The objectSelector skips an object without the labels it asks for (`object.Matcher`).
    let (ok, text) = create(
        &k,
        "plain",
        "bad-skipped",
        json!({"skip-deny": "true"}),
        &[],
    );
    assert!(ok, "{text}");

    // failurePolicy: Ignore lets a write through an unreachable webhook; Fail refuses it with
    // upstream's internal error (`ErrCallingWebhook` through `apierrors.NewInternalError`).
    let (ok, text) = create(&k, "plain", "reach-ignore", json!({"reach": "ignore"}), &[]);
    assert!(ok, "{text}");
    let (code, status) = post(
        &server,
        dir.path(),
        "plain",
        "reach-fail",
        json!({"reach": "fail"}),
    );
    assert_eq!(code, 500, "{status}");
    assert_eq!(
        status["message"],
        format!(
            "Internal error occurred: failed calling webhook \"fail.kapi.test\": failed to call webhook: \
             Post \"https://127.0.0.1:{closed}/x?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
        )
    );
    assert_eq!(status["reason"], "InternalError");

    // timeoutSeconds bounds the call: 1 s, not the webhook's 3 s.
    let started = Instant::now();
    let (code, status) = post(
        &server,
        dir.path(),
        "plain",
        "slow-one",
        json!({"slow": "yes"}),
    );
    assert!(started.elapsed() < SLOW, "{:?}", started.elapsed());
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(r#"Internal error occurred: failed calling webhook "slow.kapi.test": failed to call webhook: Post "https://"#)
            && message.ends_with("?timeout=1s\": context deadline exceeded"),
        "{message}"
    );

    // A dry run reaches only webhooks without side effects; one with `sideEffects: Unknown`
    // refuses it (`NewDryRunUnsupportedErr`), whatever its failure policy.
    let (ok, text) = create(
        &k,
        "plain",
        "dry-one",
        json!({"dry": "yes"}),
        &["--dry-run=server"],
    );
    assert!(!ok);
    assert!(
        text.contains(r#"admission webhook "unknown.kapi.test" does not support dry run"#),
        "{text}"
    );
    let (ok, text) = create(
        &k,
        "hooked",
        "dry-two",
        json!({}),
        &["--dry-run=server", "-o", "json"],
    );
    assert!(ok, "{text}");
    assert!(text.contains(r#""mutated": "yes""#), "{text}");
    let dry = hooks.requests("/mutate", "dry-two");
    assert_eq!(dry.len(), 1, "{dry:?}");
    assert_eq!(dry[0]["dryRun"], true);

    // A delete goes through the validating webhooks with the old object and no object
    // (`AdmissionToValidateObjectDeleteFunc`).
    k.expect_ok(&["delete", "configmap", "labelled", "-n", "hooked"]);
    let deletes: Vec<Value> = hooks
        .requests("/deny", "labelled")
        .into_iter()
        .filter(|r| r["operation"] == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1, "{deletes:?}");
    assert_eq!(deletes[0]["oldObject"]["metadata"]["name"], "labelled");
    assert_eq!(deletes[0]["object"], Value::Null);
    assert_eq!(deletes[0]["options"]["kind"], "DeleteOptions");

    // Writes of the configurations themselves never reach a webhook
    // (`IsExemptAdmissionConfigurationResource`).
    assert!(
        hooks
            .reviews()
            .iter()
            .all(|r| r["review"]["request"]["resource"]["group"] != "admissionregistration.k8s.io")
    );
}

#[test]
fn admission_webhooks_are_reinvoked_if_needed_and_sent_the_review_version_they_accept() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let hooks = Webhooks::start();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let ca = base64::engine::general_purpose::STANDARD.encode(hooks.server.ca_pem());
    let hook = |name: &str, path: &str, versions: Value, extra: Value| {
        let mut hook = json!({
            "name": name,
            "clientConfig": {"url": format!("{}{path}", hooks.server.url()), "caBundle": ca},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {"reinvoke": "yes"}},
            "sideEffects": "None",
            "admissionReviewVersions": versions,
        });
        for (k, v) in extra.as_object().unwrap() {
            hook[k] = v.clone();
        }
        hook
    };
    let configuration = |name: &str, hook: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration", "metadata": {"name": name},
            "webhooks": [hook]})
    };
    // Configurations run in name order: `1-first`'s webhook, then `2-second`'s.
    let first = configuration(
        "1-first",
        hook(
            "mark.kapi.test",
            "/mark",
            json!(["v1beta1"]),
            json!({"reinvocationPolicy": "IfNeeded"}),
        ),
    );
    let conditions = json!({"matchConditions": [
        {"name": "named", "expression": "object.metadata.name != 'nob'"},
        {"name": "created", "expression": "request.operation == 'CREATE' && oldObject == null"},
    ]});
    let second = configuration(
        "2-second",
        hook("add-b.kapi.test", "/add-b", json!(["v2", "v1"]), conditions),
    );
    let broken = json!({"apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "broken"},
    "webhooks": [hook("broken.kapi.test", "/allow", json!(["v1"]), json!({
        "objectSelector": {"matchLabels": {"broken": "yes"}},
        "matchConditions": [{"name": "broken", "expression": "object.nope == 'x'"}],
    }))]});
    let file = k.file(
        "configurations.json",
        &format!("{first}\n{second}\n{broken}\n"),
    );
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);

    let (ok, text) = create(&k, "default", "again", json!({"reinvoke": "yes"}), &[]);
    assert!(ok, "{text}");
    let stored = k.expect_json(&["get", "configmap", "again"]);
    assert_eq!(stored["metadata"]["labels"]["b"], "yes");
    // `mark` ran again after `add-b` changed the object (`reinvocationPolicy: IfNeeded`,
    // `webhookReinvokeContext`), and saw the label the second time.
    assert_eq!(stored["metadata"]["annotations"]["seen-b"], "yes");
    let marks: Vec<Value> = hooks
        .reviews()
        .into_iter()
        .filter(|r| r["path"] == "/mark")
        .map(|r| r["review"].clone())
        .collect();
    assert_eq!(marks.len(), 2, "{marks:?}");
    // The first version of `admissionReviewVersions` the server speaks.
    assert!(
        marks
            .iter()
            .all(|r| r["apiVersion"] == "admission.k8s.io/v1beta1"),
        "{marks:?}"
    );
    assert_eq!(
        marks[1]["request"]["object"]["metadata"]["labels"]["b"],
        "yes"
    );
    let adds = hooks.requests("/add-b", "again");
    assert_eq!(adds.len(), 1, "{adds:?}");
    assert_eq!(
        hooks
            .reviews()
            .iter()
            .filter(|r| r["path"] == "/add-b")
            .count(),
        1
    );
    assert!(
        hooks
            .reviews()
            .iter()
            .any(|r| r["path"] == "/add-b" && r["review"]["apiVersion"] == "admission.k8s.io/v1")
    );

    // matchConditions (CEL over `object`, `oldObject` and `request`): one false skips the
    // webhook; one that fails to evaluate refuses the request under failurePolicy Fail
    // (`matchconditions.Matcher`, then `ShouldCallHook`'s `apierrors.NewForbidden`).
    let (ok, text) = create(&k, "default", "nob", json!({"reinvoke": "yes"}), &[]);
    assert!(ok, "{text}");
    let stored = k.expect_json(&["get", "configmap", "nob"]);
    assert_eq!(stored["metadata"]["labels"], json!({"reinvoke": "yes"}));
    assert!(hooks.requests("/add-b", "nob").is_empty());
    let (ok, text) = create(&k, "default", "broken-one", json!({"broken": "yes"}), &[]);
    assert!(!ok);
    assert!(
        text.contains(
            r#"configmaps "broken-one" is forbidden: expression 'object.nope == 'x'' resulted in error: no such key: nope"#
        ),
        "{text}"
    );

    // A `clientConfig.service` is dialed at its Endpoints' address (kapi runs no proxy) and
    // verified as `<name>.<namespace>.svc`, which this server's certificate (127.0.0.1 only)
    // is not: the handshake with the webhook's own server is what fails.
    let port = hooks.server.addr().port();
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "hooks", "namespace": "default"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}});
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "hooks", "namespace": "default"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port}]}]});
    let mut by_service = hook(
        "svc.kapi.test",
        "/allow",
        json!(["v1"]),
        json!({
            "objectSelector": {"matchLabels": {"svc": "yes"}},
        }),
    );
    by_service["clientConfig"] = json!({"caBundle": ca,
        "service": {"namespace": "default", "name": "hooks", "path": "/allow"}});
    let by_service = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "by-service"},
        "webhooks": [by_service]});
    let file = k.file(
        "service.json",
        &format!("{service}\n{endpoints}\n{by_service}\n"),
    );
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    let (ok, text) = create(&k, "default", "svc-one", json!({"svc": "yes"}), &[]);
    assert!(!ok);
    assert!(
        text.contains(
            r#"Internal error occurred: failed calling webhook "svc.kapi.test": failed to call webhook: Post "https://hooks.default.svc:443/allow?timeout=10s": tls: "#
        ),
        "{text}"
    );
}

/// Reinvocation across the mutating plugins (`admission/reinvocation.go`): a mutating policy
/// runs before the mutating webhooks and reacts to a webhook's label, which it sees only when
/// the webhook's change brings the second pass (`policyReinvokeContext`); the webhook with
/// `reinvocationPolicy: IfNeeded` is then called again because the policy changed the object
/// after it (`webhookReinvokeContext.IsOutputChangedSinceLastWebhookInvocation`), and sees the
/// policy's label; there is no third pass, and a webhook with `Never` is called once; the
/// built-in plugins run again in the second pass.
#[test]
fn admission_webhooks_are_reinvoked_after_a_policy_changed_the_object() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let hooks = Webhooks::start();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let ca = base64::engine::general_purpose::STANDARD.encode(hooks.server.ca_pem());
    let hook = |name: &str, policy: &str| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("{}/see-policy", hooks.server.url()), "caBundle": ca},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {"cross": policy}},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "reinvocationPolicy": policy,
        })
    };
    let webhooks = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration", "metadata": {"name": "see-policy"},
        "webhooks": [hook("if-needed.kapi.test", "IfNeeded"), hook("never.kapi.test", "Never")]});
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "MutatingAdmissionPolicy", "metadata": {"name": "see-webhook.kapi.test"},
    "spec": {
        "failurePolicy": "Fail",
        "reinvocationPolicy": "IfNeeded",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["configmaps"]}],
            "objectSelector": {"matchExpressions": [{"key": "cross", "operator": "Exists"}]}},
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": "'webhook' in object.metadata.labels ? Object{metadata: Object.metadata{labels: {'policy-saw': 'yes'}}} : Object{}"}}],
    }});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "see-webhook.kapi.test"},
        "spec": {"policyName": "see-webhook.kapi.test"}});
    let file = k.file("cross.json", &format!("{webhooks}\n{policy}\n{binding}\n"));
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);

    let (ok, text) = create(&k, "default", "again", json!({"cross": "IfNeeded"}), &[]);
    assert!(ok, "{text}");
    let stored = k.expect_json(&["get", "configmap", "again"]);
    assert_eq!(
        stored["metadata"]["labels"],
        json!({"cross": "IfNeeded", "webhook": "yes", "policy-saw": "yes", "webhook-saw": "yes"}),
        "{stored}"
    );
    let sent = hooks.requests("/see-policy", "again");
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(sent[0]["object"]["metadata"]["labels"]["policy-saw"].is_null());
    assert_eq!(sent[1]["object"]["metadata"]["labels"]["policy-saw"], "yes");

    let (ok, text) = create(&k, "default", "once", json!({"cross": "Never"}), &[]);
    assert!(ok, "{text}");
    let stored = k.expect_json(&["get", "configmap", "once"]);
    assert_eq!(
        stored["metadata"]["labels"],
        json!({"cross": "Never", "webhook": "yes", "policy-saw": "yes", "webhook-saw": "none"}),
        "{stored}"
    );
    assert_eq!(hooks.requests("/see-policy", "once").len(), 1);

    // The second pass runs the built-in mutating plugins again ("Calling admit a second time
    // will reinvoke all in-tree plugins"): DefaultTolerationSeconds puts back the tolerations
    // a webhook took away, and the webhook (`Never`) is not called again.
    let strip = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration", "metadata": {"name": "strip"},
        "webhooks": [{"name": "strip.kapi.test",
            "clientConfig": {"url": format!("{}/strip-tolerations", hooks.server.url()), "caBundle": ca},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    let file = k.file("strip.json", &strip.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    k.expect_ok(&["run", "tolerant", "--image=registry.k8s.io/pause:3.10"]);
    let sent = hooks.requests("/strip-tolerations", "tolerant");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(
        sent[0]["object"]["spec"]["tolerations"].is_array(),
        "{sent:?}"
    );
    let pod = k.expect_json(&["get", "pod", "tolerant"]);
    let keys: Vec<&str> = pod["spec"]["tolerations"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["key"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable"
        ],
        "{pod}"
    );
}

/// `matchPolicy: Equivalent` (v1's default): a webhook whose rules name `autoscaling/v2`
/// HorizontalPodAutoscalers is called for one created through `autoscaling/v1`, sent the
/// object converted to v2 with `kind`/`resource` naming v2 and `requestKind`/`requestResource`
/// v1, and its patch comes back to v1; an `Exact` webhook is not called
/// (`generic/webhook.go` `ShouldCallHook`, `request/admissionreview.go`).
#[test]
fn admission_webhooks_match_equivalent_versions() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let hooks = Webhooks::start();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let ca = base64::engine::general_purpose::STANDARD.encode(hooks.server.ca_pem());
    let hook = |name: &str, path: &str, policy: &str| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("{}{path}", hooks.server.url()), "caBundle": ca},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"],
                "apiVersions": ["v2"], "resources": ["horizontalpodautoscalers"]}],
            "matchPolicy": policy,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    };
    let configuration = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration", "metadata": {"name": "hpas"},
        "webhooks": [hook("equivalent.kapi.test", "/mutate", "Equivalent"),
            hook("exact.kapi.test", "/allow", "Exact")]});
    let file = k.file("hpas.json", &configuration.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);

    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}});
    let file = k.file("web.json", &v1.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    let sent = hooks.requests("/mutate", "web");
    assert_eq!(sent.len(), 1, "{sent:?}");
    let request = &sent[0];
    assert_eq!(request["kind"]["version"], "v2", "{request}");
    assert_eq!(request["resource"]["version"], "v2", "{request}");
    assert_eq!(request["requestKind"]["version"], "v1", "{request}");
    assert_eq!(request["requestResource"]["version"], "v1", "{request}");
    assert_eq!(
        request["object"]["apiVersion"], "autoscaling/v2",
        "{request}"
    );
    assert_eq!(
        request["object"]["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 70,
        "{request}"
    );
    assert!(hooks.requests("/allow", "web").is_empty());
    // The webhook's label came back through the conversion to v1.
    let stored = k.expect_json(&[
        "get",
        "horizontalpodautoscalers.v1.autoscaling",
        "web",
        "-o",
        "json",
    ]);
    assert_eq!(stored["apiVersion"], "autoscaling/v1", "{stored}");
    assert_eq!(stored["metadata"]["labels"]["mutated"], "yes", "{stored}");
    assert_eq!(
        stored["spec"]["targetCPUUtilizationPercentage"], 70,
        "{stored}"
    );

    // Through v2 itself both webhooks match exactly.
    let mut v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "maxReplicas": 3}});
    v2["spec"]["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": 50}}}]);
    let file = k.file("api.json", &v2.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    let exact = hooks.requests("/allow", "api");
    assert_eq!(exact.len(), 1, "{exact:?}");
    assert_eq!(exact[0]["requestKind"]["version"], "v2");
}

/// The audit annotations of webhook calls, as upstream's dispatchers add them: each answer's
/// `auditAnnotations` as `<webhook>/<key>` (keys that are no qualified name dropped), for every
/// mutating invocation `mutation.webhook.admission.k8s.io/round_<pass>_index_<place>` telling
/// whether it changed the object and, at level `Request` and above only, `patch.webhook...`
/// with its patch (`mutating/dispatcher.go`, `webhookAnnotator`), and
/// `failed-open.validating.webhook.admission.k8s.io/round_0_index_<place>` naming a webhook
/// that failed open, numbered among the webhooks called (`validating/dispatcher.go`).
#[test]
fn admission_webhooks_annotate_the_audit_events() {
    let hooks = Webhooks::start();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n\
         - level: Request\n  verbs: [create]\n  namespaces: [hooked]\n  resources: [{group: \"\", resources: [configmaps]}]\n\
         - level: Metadata\n  verbs: [create]\n  resources: [{group: \"\", resources: [configmaps]}]\n\
         - level: None\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--audit-policy-file={}", policy.display()),
            format!("--audit-log-path={}", log.display()),
        ],
        ..ServerOptions::default()
    })
    .unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    for namespace in ["hooked", "metadata"] {
        k.expect_ok(&["create", "namespace", namespace]);
        k.expect_ok(&["label", "namespace", namespace, "webhooks=on"]);
    }
    let file = k.file("configurations.json", &configurations(&hooks, closed));
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    for (namespace, name, labels) in [
        ("hooked", "checked-one", json!({"reach": "ignore"})),
        ("metadata", "checked-two", json!({})),
        (
            "hooked",
            "checked-three",
            json!({"reach": "ignore", "skip-deny": "yes"}),
        ),
    ] {
        let (ok, text) = create(&k, namespace, name, labels, &[]);
        assert!(ok, "{text}");
    }
    // The log blocks by default: the events are there once kubectl has its answers.
    let annotations = |name: &str| {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find(|e| e["objectRef"]["name"] == name && e["stage"] == "ResponseComplete")
            .map(|e| e["annotations"].clone())
            .unwrap_or_else(|| panic!("no event of {name}"))
    };
    let mutated =
        r#"{"configuration":"label-adder","webhook":"add-label.kapi.test","mutated":true}"#;
    let patch = r#"{"configuration":"label-adder","webhook":"add-label.kapi.test","patch":[{"op":"add","path":"/metadata/labels/mutated","value":"yes"},{"op":"add","path":"/stray","value":"x"}],"patchType":"JSONPatch"}"#;
    let one = annotations("checked-one");
    assert_eq!(
        one["mutation.webhook.admission.k8s.io/round_0_index_0"], mutated,
        "{one:#}"
    );
    assert_eq!(
        one["patch.webhook.admission.k8s.io/round_0_index_0"], patch,
        "{one:#}"
    );
    assert_eq!(one["add-label.kapi.test/labelled"], "yes", "{one:#}");
    assert_eq!(one["deny.kapi.test/verdict"], "checked", "{one:#}");
    assert_eq!(
        one["failed-open.validating.webhook.admission.k8s.io/round_0_index_1"], "ignore.kapi.test",
        "{one:#}"
    );
    assert!(
        one.as_object()
            .unwrap()
            .keys()
            .all(|k| !k.contains("Bad Key")),
        "{one:#}"
    );
    // Validating webhooks are numbered among those called (`relevantHooks`): without the
    // first, the one that failed open is the first.
    let three = annotations("checked-three");
    assert_eq!(
        three["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"],
        "ignore.kapi.test",
        "{three:#}"
    );
    // At level Metadata: no patch, and no webhook failed.
    let two = annotations("checked-two");
    assert_eq!(
        two["mutation.webhook.admission.k8s.io/round_0_index_0"], mutated,
        "{two:#}"
    );
    assert!(
        two.get("patch.webhook.admission.k8s.io/round_0_index_0")
            .is_none(),
        "{two:#}"
    );
    assert!(
        two.as_object()
            .unwrap()
            .keys()
            .all(|k| !k.starts_with("failed-open.")),
        "{two:#}"
    );
    // A match condition that fails refuses the request before the webhook's invocation is
    // annotated: upstream's mutating dispatcher returns ShouldCallHook's error before it makes
    // the webhook's annotator (`mutating/dispatcher.go`, `Dispatch`).
    let broken = k.file(
        "broken.json",
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "broken-match"},
            "webhooks": [{
                "name": "broken.kapi.test",
                "clientConfig": {"url": format!("https://127.0.0.1:{closed}/")},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["configmaps"]}],
                "matchConditions": [{"name": "breaks", "expression":
                    "!('broken' in object.metadata.labels) || object.metadata.labels['nosuch'] == 'x'"}],
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        })
        .to_string(),
    );
    k.expect_ok(&["create", "-f", broken.to_str().unwrap()]);
    let (ok, text) = create(
        &k,
        "hooked",
        "checked-broken",
        json!({"broken": "yes"}),
        &[],
    );
    assert!(!ok, "{text}");
    let refused = annotations("checked-broken");
    assert!(
        refused
            .as_object()
            .into_iter()
            .flatten()
            .all(|(key, _)| !key.starts_with("mutation.webhook.admission.k8s.io/")),
        "{refused:#}"
    );
}

/// Writes through subresources reach the webhooks as upstream sends them. A `kubectl scale` is
/// an UPDATE of `deployments/scale` (`endpoints/handlers/update.go` with
/// `pkg/registry/apps/deployment/storage/storage.go`, `ScaleREST` and
/// `scaleUpdatedObjectInfo`): the review names the kind `autoscaling/v1` Scale (the
/// subresource storage's `GroupVersionKind`), the resource `apps/v1` deployments and the
/// subresource `scale`, its object the new Scale and its old object the current one, and a
/// mutating webhook's patch of `spec.replicas` is what the deployment gets. A
/// `kubectl create token` is a CREATE of `serviceaccounts/token` with a TokenRequest
/// (`pkg/registry/core/serviceaccount/storage/token.go`), which a validating webhook may deny.
#[test]
fn admission_webhooks_see_scales_and_token_requests() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let hooks = Webhooks::start();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let ca = base64::engine::general_purpose::STANDARD.encode(hooks.server.ca_pem());
    let hook = |name: &str, path: &str, rule: Value| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("{}{path}", hooks.server.url()), "caBundle": ca},
            "rules": [rule],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    };
    let configurations = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "scale-capper"},
            "webhooks": [hook("cap.kapi.test", "/cap-scale", json!({"operations": ["UPDATE"],
                "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/scale"]}))]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "token-guard"},
            "webhooks": [hook("tokens.kapi.test", "/deny-token", json!({"operations": ["CREATE"],
                "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*/token"]}))]},
    ]});
    let file = k.file("subresource-hooks.json", &configurations.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);

    k.expect_ok(&["create", "deployment", "web", "--image=nginx"]);
    let replicas = || {
        k.expect_ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
    };
    k.expect_ok(&["scale", "deployment", "web", "--replicas=50"]);
    assert_eq!(replicas(), "10");
    let sent = hooks.requests("/cap-scale", "web");
    assert_eq!(sent.len(), 1, "{sent:?}");
    let request = &sent[0];
    assert_eq!(request["operation"], "UPDATE", "{request}");
    let scale_kind = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
    let deployments = json!({"group": "apps", "version": "v1", "resource": "deployments"});
    assert_eq!(request["kind"], scale_kind, "{request}");
    assert_eq!(request["requestKind"], scale_kind, "{request}");
    assert_eq!(request["resource"], deployments, "{request}");
    assert_eq!(request["requestResource"], deployments, "{request}");
    assert_eq!(request["subResource"], "scale", "{request}");
    assert_eq!(request["requestSubResource"], "scale", "{request}");
    assert_eq!(request["namespace"], "default", "{request}");
    assert_eq!(request["options"]["kind"], "UpdateOptions", "{request}");
    assert_eq!(
        request["object"]["apiVersion"], "autoscaling/v1",
        "{request}"
    );
    assert_eq!(request["object"]["kind"], "Scale", "{request}");
    assert_eq!(request["object"]["spec"]["replicas"], 50, "{request}");
    assert_eq!(request["oldObject"]["kind"], "Scale", "{request}");
    assert_eq!(request["oldObject"]["spec"]["replicas"], 1, "{request}");
    // Under the cap the webhook leaves the Scale alone; the deployment's own writes are no
    // `deployments/scale`.
    k.expect_ok(&["scale", "deployment", "web", "--replicas=4"]);
    assert_eq!(replicas(), "4");
    k.expect_ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"replicas":30}}"#,
    ]);
    assert_eq!(replicas(), "30");
    assert_eq!(hooks.requests("/cap-scale", "web").len(), 2);

    k.expect_ok(&["create", "serviceaccount", "blocked"]);
    let refused = k.expect_failure(&["create", "token", "blocked"]);
    assert!(
        refused.contains(
            r#"admission webhook "tokens.kapi.test" denied the request: no tokens for blocked"#
        ),
        "{refused}"
    );
    let token = k.expect_ok(&["create", "token", "default", "--duration=20m"]);
    assert_eq!(token.trim().split('.').count(), 3, "{token}");
    let sent = hooks.requests("/deny-token", "default");
    assert_eq!(sent.len(), 1, "{sent:?}");
    let request = &sent[0];
    assert_eq!(request["operation"], "CREATE", "{request}");
    assert_eq!(
        request["kind"],
        json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}),
        "{request}"
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "serviceaccounts"}),
        "{request}"
    );
    assert_eq!(request["subResource"], "token", "{request}");
    assert_eq!(request["options"]["kind"], "CreateOptions", "{request}");
    assert_eq!(request["object"]["kind"], "TokenRequest", "{request}");
    assert_eq!(
        request["object"]["spec"]["expirationSeconds"], 1200,
        "{request}"
    );
    assert!(
        request["object"]["spec"]["audiences"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{request}"
    );
}
