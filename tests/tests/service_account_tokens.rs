//! Service-account tokens over TLS with the binary, as a cluster's clients use them:
//! `kubectl create token` (a `TokenRequest` on `serviceaccounts/<name>/token`), the token in a
//! kubeconfig (`kubectl auth whoami`, RBAC through a RoleBinding to the account), the checks
//! that make a token stop working (another audience, the account recreated with a new uid, the
//! bound pod deleted), `TokenReview` from the Python client, the issuer's `/openid/v1/jwks`,
//! and the `kube-root-ca.crt` ConfigMap of every namespace. A token that authenticated is
//! remembered for a while (upstream's `tokencache`), so it outlives its account that long.
//!
//! Upstream's behaviour mirrored: `pkg/registry/core/serviceaccount/storage/token.go` (the
//! request's defaults and refusals), `pkg/apis/authentication/validation` (at least ten
//! minutes), `pkg/serviceaccount/claims.go` and `jwt.go` (the claims and the checks of a
//! presented token), `staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go`
//! (the user and groups), `pkg/serviceaccount/openidmetadata.go` (the key set) and
//! `pkg/controller/certificates/rootcacertpublisher` (the ConfigMap).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use kapi_e2e::{KapiServer, ServerOptions, expect_refusal, python};
use serde_json::{Value, json};

/// `kubectl <args>` with `kubeconfig`: (success, stdout, stderr).
fn kubectl(dir: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=20s")
        .args(args)
        .env("KUBECACHEDIR", dir.join("cache"))
        .env("HOME", dir)
        .output()
        .expect("kubectl runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A kubeconfig for the server's cluster and CA with `token` as its credentials.
fn with_token(server: &KapiServer, dir: &Path, name: &str, token: &str) -> PathBuf {
    let mut config: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(server.kubeconfig()).expect("kubeconfig"))
            .expect("kubeconfig is YAML");
    config["users"][0]["user"] = json!({"token": token});
    let path = dir.join(name);
    std::fs::write(&path, config.to_string()).expect("kubeconfig written");
    path
}

/// Retries `check` for up to ten seconds (background tasks: the RBAC policy, the publisher).
fn eventually(what: &str, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match check() {
            Ok(()) => return,
            Err(e) if Instant::now() > deadline => panic!("{what}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// The JSON header of a JWS.
fn jws_header(token: &str) -> Value {
    let header = token.split('.').next().unwrap_or_default();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .expect("base64url header"),
    )
    .expect("JSON header")
}

#[test]
fn service_account_tokens_authenticate_until_what_they_name_is_gone() {
    let server =
        KapiServer::start(&ServerOptions::default().tls().remembering_no_tokens()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let admin = server.kubeconfig().to_path_buf();
    let run = |kubeconfig: &Path, args: &[&str]| kubectl(d, kubeconfig, args);
    let ok = |kubeconfig: &Path, args: &[&str]| {
        let (ok, out, err) = run(kubeconfig, args);
        assert!(
            ok,
            "kubectl {args:?}: {err}\nserver stderr:\n{}",
            server.stderr()
        );
        out.trim().to_owned()
    };
    let logged_out = |kubeconfig: &Path| {
        let (ok, _, err) = run(kubeconfig, &["get", "pods"]);
        assert!(!ok);
        assert!(err.contains("You must be logged in to the server"), "{err}");
    };

    // The subresource is listed as upstream lists it.
    let discovery: Value = serde_json::from_str(&ok(&admin, &["get", "--raw", "/api/v1"])).unwrap();
    let token_resource = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .cloned()
        .unwrap();
    assert_eq!(token_resource["verbs"], json!(["create"]));
    assert_eq!(token_resource["kind"], "TokenRequest");
    assert_eq!(token_resource["group"], "authentication.k8s.io");

    // `kubectl create token` and the user the token is.
    let token = ok(&admin, &["create", "token", "default", "-n", "default"]);
    let header = jws_header(&token);
    assert_eq!(header["alg"], "ES256");
    let as_default = with_token(&server, d, "default", &token);
    let who: Value = serde_json::from_str(&ok(
        &as_default,
        &["auth", "whoami", "-o", "jsonpath={.status.userInfo}"],
    ))
    .unwrap();
    assert_eq!(who["username"], "system:serviceaccount:default:default");
    assert_eq!(
        who["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let account_uid = ok(
        &admin,
        &["get", "sa", "default", "-o", "jsonpath={.metadata.uid}"],
    );
    assert_eq!(who["uid"], account_uid.as_str());
    let credential = who["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap();
    assert!(credential.starts_with("JTI="), "{who}");

    // RBAC judges the account: forbidden, then allowed through a RoleBinding.
    let (allowed, _, err) = run(&as_default, &["get", "configmaps"]);
    assert!(!allowed);
    assert!(
        err.contains(
            r#"User "system:serviceaccount:default:default" cannot list resource "configmaps""#
        ),
        "{err}"
    );
    ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "default-view",
            "--clusterrole=view",
            "--serviceaccount=default:default",
        ],
    );
    eventually("the RoleBinding lets the account list", || {
        let (allowed, _, err) = run(&as_default, &["get", "configmaps"]);
        allowed.then_some(()).ok_or(err)
    });

    // A token request is `create` on `serviceaccounts/token`: `view` does not have it, `edit`
    // does (upstream's bootstrap roles).
    let (created, _, err) = run(&as_default, &["create", "token", "default"]);
    assert!(!created);
    assert!(
        err.contains(r#"User "system:serviceaccount:default:default" cannot create resource "serviceaccounts/token" in API group "" in the namespace "default""#),
        "{err}"
    );
    ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "default-edit",
            "--clusterrole=edit",
            "--serviceaccount=default:default",
        ],
    );
    eventually("the edit role lets the account request tokens", || {
        let (created, _, err) = run(&as_default, &["create", "token", "default"]);
        created.then_some(()).ok_or(err)
    });

    // The issuer's keys: readable by service accounts, the token's `kid` among them.
    let ca = server.data_dir().join("pki").join("ca.crt");
    let curl = |path: &str, bearer: Option<&str>| {
        let mut command = Command::new("curl");
        command
            .args([
                "-sS",
                "--max-time",
                "20",
                "-w",
                "\n%{http_code}",
                "--cacert",
            ])
            .arg(&ca);
        if let Some(bearer) = bearer {
            command.args(["-H", &format!("Authorization: Bearer {bearer}")]);
        }
        let output = command
            .arg(format!("{}{path}", server.url()))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (code.to_owned(), body.to_owned())
    };
    let (code, jwks) = curl("/openid/v1/jwks", Some(&token));
    assert_eq!(code, "200", "{jwks}");
    let jwks: Value = serde_json::from_str(&jwks).unwrap();
    assert_eq!(jwks["keys"][0]["kid"], header["kid"]);
    assert_eq!(jwks["keys"][0]["kty"], "EC");
    let (code, configuration) = curl("/.well-known/openid-configuration", Some(&token));
    assert_eq!(code, "200");
    let configuration: Value = serde_json::from_str(&configuration).unwrap();
    assert_eq!(
        configuration["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(curl("/openid/v1/jwks", None).0, "403");

    // Another audience's token is not the API's; too short a duration is refused.
    let vault = ok(&admin, &["create", "token", "default", "--audience=vault"]);
    logged_out(&with_token(&server, d, "vault", &vault));
    let (created, _, err) = run(&admin, &["create", "token", "default", "--duration=5m"]);
    assert!(!created);
    assert!(
        err.contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{err}"
    );
    let (created, _, err) = run(&admin, &["create", "token", "nobody"]);
    assert!(!created);
    assert!(
        err.contains(r#"serviceaccounts "nobody" not found"#),
        "{err}"
    );

    // A token bound to a pod names it, and stops working once the pod is gone.
    ok(&admin, &["run", "app", "--image=nginx", "--restart=Never"]);
    let bound = ok(
        &admin,
        &[
            "create",
            "token",
            "default",
            "--bound-object-kind=Pod",
            "--bound-object-name=app",
        ],
    );
    let as_pod = with_token(&server, d, "pod", &bound);
    let who: Value = serde_json::from_str(&ok(
        &as_pod,
        &["auth", "whoami", "-o", "jsonpath={.status.userInfo}"],
    ))
    .unwrap();
    assert_eq!(
        who["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["app"])
    );
    ok(
        &admin,
        &[
            "delete",
            "pod",
            "app",
            "--grace-period=0",
            "--force",
            "--wait=true",
        ],
    );
    logged_out(&as_pod);

    // An account deleted and made again (a new uid) does not take its old tokens back.
    ok(&admin, &["create", "serviceaccount", "builder"]);
    let builder = ok(&admin, &["create", "token", "builder"]);
    let as_builder = with_token(&server, d, "builder", &builder);
    ok(&as_builder, &["auth", "whoami"]);
    ok(&admin, &["delete", "serviceaccount", "builder"]);
    ok(&admin, &["create", "serviceaccount", "builder"]);
    logged_out(&as_builder);

    // TokenReview from the Python client: the API's audiences, or those the review names.
    let script = format!(
        r#"
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
api = client.AuthenticationV1Api()
review = api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token={token:?})))
assert review.status.authenticated, review.status
assert review.status.user.username == "system:serviceaccount:default:default", review.status
assert "system:serviceaccounts:default" in review.status.user.groups, review.status
assert review.status.audiences == ["https://kubernetes.default.svc.cluster.local"], review.status
other = api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token={token:?}, audiences=["vault"])))
assert not other.status.authenticated, other.status
assert "invalid for the target audiences" in other.status.error, other.status
vault = api.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token={vault:?}, audiences=["vault"])))
assert vault.status.authenticated and vault.status.audiences == ["vault"], vault.status
print("ok")
"#
    );
    let output = Command::new(python())
        .arg("-c")
        .arg(&script)
        .arg(server.kubeconfig())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("ok"),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// kube-apiserver remembers a token that authenticated for `TokenSuccessCacheTTL` (10 s) in
/// front of its token authenticators (`pkg/kubeapiserver/authenticator/config.go`,
/// `staging/src/k8s.io/apiserver/pkg/authentication/token/cache`): a token whose account was
/// just deleted still authenticates until then, and not after. kapi's flag shortens the wait.
#[test]
fn a_token_that_authenticated_is_remembered_for_the_cache_ttl() {
    let ttl = Duration::from_secs(4);
    let options = ServerOptions {
        args: vec![format!("--token-success-cache-ttl={}s", ttl.as_secs())],
        ..ServerOptions::default().tls()
    };
    let server = KapiServer::start(&options).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let admin = server.kubeconfig().to_path_buf();
    let ok = |kubeconfig: &Path, args: &[&str]| {
        let (ok, out, err) = kubectl(d, kubeconfig, args);
        assert!(ok, "kubectl {args:?}: {err}");
        out.trim().to_owned()
    };
    ok(&admin, &["create", "serviceaccount", "short-lived"]);
    let token = ok(&admin, &["create", "token", "short-lived"]);
    let as_account = with_token(&server, d, "short-lived", &token);
    let whoami = [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ];
    let remembered_at = Instant::now();
    assert_eq!(
        ok(&as_account, &whoami),
        "system:serviceaccount:default:short-lived"
    );
    ok(&admin, &["delete", "serviceaccount", "short-lived"]);
    let (still, out, err) = kubectl(d, &as_account, &whoami);
    if remembered_at.elapsed() < ttl {
        assert!(still, "forgotten before the TTL: {out} {err}");
    }
    eventually("the deleted account's token refused", || {
        match kubectl(d, &as_account, &whoami) {
            (false, _, err) if err.contains("You must be logged in to the server") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    assert!(
        remembered_at.elapsed() >= ttl,
        "refused after {:?}, before the TTL",
        remembered_at.elapsed()
    );
}

/// Every namespace gets `kube-root-ca.crt` with the server's CA, made again when deleted and
/// set back when changed.
#[test]
fn every_namespace_has_the_root_ca_configmap() {
    let server = KapiServer::start(&ServerOptions::default().tls()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let admin = server.kubeconfig().to_path_buf();
    let ca = std::fs::read_to_string(server.data_dir().join("pki").join("ca.crt")).unwrap();
    let run = |args: &[&str]| kubectl(dir.path(), &admin, args);
    let published = |namespace: &str| {
        let (ok, out, err) = run(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            namespace,
            "-o",
            "json",
        ]);
        if !ok {
            return Err(err);
        }
        let object: Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
        (object["data"]["ca.crt"] == ca.as_str())
            .then_some(())
            .ok_or_else(|| format!("{object}"))
    };
    eventually("kube-root-ca.crt in default", || published("default"));
    assert!(run(&["create", "namespace", "team"]).0);
    eventually("kube-root-ca.crt in a new namespace", || published("team"));
    assert!(run(&["delete", "configmap", "kube-root-ca.crt", "-n", "team"]).0);
    eventually("kube-root-ca.crt made again", || published("team"));
    let (ok, _, err) = run(&[
        "patch",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"data":{"ca.crt":"changed"}}"#,
    ]);
    assert!(ok, "{err}");
    eventually("kube-root-ca.crt set back", || published("team"));
}

/// Before the release whose feature gate adds it (`ServiceAccountTokenJTI`, beta in 1.30), a
/// token has no `jti` claim; from it on, one.
#[test]
fn tokens_carry_a_jti_from_1_30_on() {
    for (release, with_jti) in [("1.28", false), ("1.36", true)] {
        let server = KapiServer::start(&ServerOptions::release(release).tls()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (ok, token, err) = kubectl(
            dir.path(),
            server.kubeconfig(),
            &["create", "token", "default"],
        );
        assert!(ok, "{release}: {err}");
        let payload = token.trim().split('.').nth(1).unwrap();
        let claims: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(claims.get("jti").is_some(), with_jti, "{release}: {claims}");
        assert_eq!(claims["sub"], "system:serviceaccount:default:default");
        assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    }
}

/// From 1.34 (`TokenRequestServiceAccountUIDValidation`, beta) a TokenRequest names the
/// account's uid in its answer, and one that names another uid is a conflict; before, the uid
/// was wiped as on any create (`pkg/registry/core/serviceaccount/storage/token.go`).
#[test]
fn token_requests_carry_the_accounts_uid_from_1_34_on() {
    for (release, carries) in [("1.28", false), ("1.36", true)] {
        let server = KapiServer::start(&ServerOptions::release(release).tls()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut account_uid = String::new();
        eventually("the default account", || {
            let (ok, out, err) = kubectl(
                dir.path(),
                server.kubeconfig(),
                &[
                    "get",
                    "serviceaccount",
                    "default",
                    "-o",
                    "jsonpath={.metadata.uid}",
                ],
            );
            account_uid = out.trim().to_owned();
            (ok && !account_uid.is_empty()).then_some(()).ok_or(err)
        });
        let ask = |uid: &str| {
            let file = dir.path().join("request.json");
            let request = json!({
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "metadata": {"uid": uid},
                "spec": {},
            });
            std::fs::write(&file, request.to_string()).unwrap();
            let path = "/api/v1/namespaces/default/serviceaccounts/default/token";
            let file = file.to_str().unwrap().to_owned();
            kubectl(
                dir.path(),
                server.kubeconfig(),
                &["create", "--raw", path, "-f", &file],
            )
        };
        let (ok, out, err) = ask("");
        assert!(ok, "{release}: {err}");
        let answer: Value = serde_json::from_str(&out).unwrap();
        let expected = if carries {
            json!(account_uid)
        } else {
            Value::Null
        };
        assert_eq!(answer["metadata"]["uid"], expected, "{release}: {answer}");
        let (ok, out, err) = ask("not-the-accounts");
        if carries {
            assert!(!ok, "{release}: {out}");
            assert!(
                err.contains(&format!(
                    r#"Operation cannot be fulfilled on TokenRequest.authentication.k8s.io "default": the UID in the token request (not-the-accounts) does not match the UID of the service account ({account_uid})"#
                )),
                "{release}: {err}"
            );
        } else {
            assert!(ok, "{release}: {err}");
            let answer: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(
                answer["metadata"]["uid"],
                Value::Null,
                "{release}: {answer}"
            );
        }
    }
}

/// `kubectl <args>` that must succeed; its stdout, trimmed.
fn kubectl_ok(dir: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let (ok, out, err) = kubectl(dir, kubeconfig, args);
    assert!(ok, "kubectl {args:?}: {err}");
    out.trim().to_owned()
}

/// A Secret's `data[key]`, decoded.
fn secret_data(secret: &Value, key: &str) -> String {
    let encoded = secret["data"][key].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .expect("Secret data is base64");
    String::from_utf8(bytes).expect("Secret data is text")
}

/// In 1.20 every account gets a token Secret the tokens controller makes and references
/// (`pkg/controller/serviceaccount/tokens_controller.go`, `ensureReferencedToken`), pods mount
/// it (`plugin/pkg/admission/serviceaccount`, `mountServiceAccountToken`), its token is the
/// account (`pkg/serviceaccount/legacy.go`), and a deleted token is replaced.
#[test]
fn legacy_token_secrets_in_1_20() {
    let server =
        KapiServer::start(&ServerOptions::release("1.20").tls().remembering_no_tokens()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let admin = server.kubeconfig().to_path_buf();
    let ok = |args: &[&str]| kubectl_ok(d, &admin, args);
    ok(&["create", "namespace", "team"]);
    ok(&["create", "serviceaccount", "builder", "-n", "team"]);
    let referenced = || -> Result<String, String> {
        let account: Value =
            serde_json::from_str(&ok(&["get", "sa", "builder", "-n", "team", "-o", "json"]))
                .unwrap();
        account["secrets"][0]["name"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| account.to_string())
    };
    let mut name = String::new();
    eventually("a token Secret referenced", || {
        name = referenced()?;
        Ok(())
    });
    assert!(
        name.starts_with("builder-token-") && name.len() == "builder-token-".len() + 5,
        "{name}"
    );
    let secret: Value =
        serde_json::from_str(&ok(&["get", "secret", &name, "-n", "team", "-o", "json"])).unwrap();
    let uid = ok(&[
        "get",
        "sa",
        "builder",
        "-n",
        "team",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert_eq!(secret["type"], "kubernetes.io/service-account-token");
    assert_eq!(
        secret["metadata"]["annotations"],
        json!({"kubernetes.io/service-account.name": "builder",
               "kubernetes.io/service-account.uid": uid})
    );
    assert_eq!(secret_data(&secret, "namespace"), "team");
    let ca = std::fs::read_to_string(server.data_dir().join("pki").join("ca.crt")).unwrap();
    assert_eq!(secret_data(&secret, "ca.crt"), ca);
    let token = secret_data(&secret, "token");

    // The token is the account's: authenticated, then refused by RBAC.
    let as_builder = with_token(&server, d, "builder", &token);
    let (allowed, _, err) = kubectl(d, &as_builder, &["get", "pods", "-n", "team"]);
    assert!(!allowed);
    assert!(
        err.contains(r#"User "system:serviceaccount:team:builder" cannot list resource "pods""#),
        "{err}"
    );

    // A pod of the account mounts its token Secret.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"serviceAccountName": "builder", "containers": [{"name": "app", "image": "nginx"}]}});
    let file = d.join("pod.json");
    std::fs::write(&file, pod.to_string()).unwrap();
    ok(&["create", "-f", file.to_str().unwrap(), "-n", "team"]);
    let volumes: Value = serde_json::from_str(&ok(&[
        "get",
        "pod",
        "web",
        "-n",
        "team",
        "-o",
        "jsonpath={.spec.volumes}",
    ]))
    .unwrap();
    assert_eq!(
        volumes[0]["secret"]["secretName"],
        name.as_str(),
        "{volumes}"
    );
    // In a namespace made a moment ago, the `default` account and its token are waited for.
    ok(&["create", "namespace", "fresh"]);
    let unnamed = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    std::fs::write(&file, unnamed.to_string()).unwrap();
    ok(&["create", "-f", file.to_str().unwrap(), "-n", "fresh"]);
    let mounted = ok(&[
        "get",
        "pod",
        "web",
        "-n",
        "fresh",
        "-o",
        "jsonpath={.spec.volumes[0].secret.secretName}",
    ]);
    assert!(mounted.starts_with("default-token-"), "{mounted}");

    // A deleted token no longer authenticates, and the account gets another.
    ok(&["delete", "secret", &name, "-n", "team"]);
    eventually("another token Secret", || match referenced() {
        Ok(other) if other != name => Ok(()),
        other => Err(format!("{other:?}")),
    });
    let (allowed, _, err) = kubectl(d, &as_builder, &["get", "pods", "-n", "team"]);
    assert!(!allowed);
    assert!(err.contains("You must be logged in to the server"), "{err}");
}

/// From 1.24 no account gets a token Secret by itself, but one made by hand is filled in
/// (`generateTokenIfNeeded`), its use is recorded from 1.27 and its invalid-since label
/// honoured from 1.29 (`pkg/serviceaccount/legacy.go`), and it goes with its account (or at
/// once, when its account does not exist: `syncSecret`).
#[test]
fn legacy_token_secrets_made_by_hand() {
    let server =
        KapiServer::start(&ServerOptions::default().tls().remembering_no_tokens()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let admin = server.kubeconfig().to_path_buf();
    let ok = |args: &[&str]| kubectl_ok(d, &admin, args);
    let apply = |object: &Value| {
        let file = d.join("object.json");
        std::fs::write(&file, object.to_string()).unwrap();
        ok(&["apply", "-f", file.to_str().unwrap()]);
    };
    let token_secret = |name: &str, account: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}}})
    };
    let get = |name: &str| -> Result<Value, String> {
        let (found, out, err) = kubectl(d, &admin, &["get", "secret", name, "-o", "json"]);
        if !found {
            return Err(err);
        }
        serde_json::from_str(&out).map_err(|e| e.to_string())
    };
    ok(&["create", "serviceaccount", "builder"]);
    apply(&token_secret("builder-token", "builder"));
    let mut token = String::new();
    eventually("the token filled in", || {
        let secret = get("builder-token")?;
        token = secret_data(&secret, "token");
        (!token.is_empty() && secret_data(&secret, "namespace") == "default")
            .then_some(())
            .ok_or_else(|| secret.to_string())
    });
    let uid = ok(&["get", "sa", "builder", "-o", "jsonpath={.metadata.uid}"]);
    let secret = get("builder-token").unwrap();
    assert_eq!(
        secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        uid.as_str()
    );
    let as_builder = with_token(&server, d, "builder", &token);
    let who = kubectl_ok(
        d,
        &as_builder,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(who, "system:serviceaccount:default:builder");
    let today = Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap();
    let labels = get("builder-token").unwrap()["metadata"]["labels"].clone();
    assert_eq!(
        labels["kubernetes.io/legacy-token-last-used"],
        today.as_str()
    );
    // Nothing is made for an account from 1.24 on.
    let account: Value =
        serde_json::from_str(&ok(&["get", "sa", "builder", "-o", "json"])).unwrap();
    assert_eq!(account.get("secrets"), None, "{account}");

    // Marked invalid: refused.
    ok(&[
        "label",
        "secret",
        "builder-token",
        "kubernetes.io/legacy-token-invalid-since=2026-01-01",
    ]);
    let (allowed, _, err) = kubectl(d, &as_builder, &["auth", "whoami"]);
    assert!(!allowed);
    assert!(err.contains("You must be logged in to the server"), "{err}");

    // A token of no account is deleted; so are an account's tokens with it.
    apply(&token_secret("ghost-token", "ghost"));
    eventually("the ghost's token deleted", || match get("ghost-token") {
        Err(err) if err.contains("NotFound") => Ok(()),
        other => Err(format!("{other:?}")),
    });
    ok(&["delete", "serviceaccount", "builder"]);
    eventually("the builder's token deleted", || {
        match get("builder-token") {
            Err(err) if err.contains("NotFound") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
}

/// `--service-account-jwks-uri` names where the keys are published in the discovery document
/// (`pkg/serviceaccount/openidmetadata.go`), and must be an https URL
/// (`pkg/kubeapiserver/options/authentication.go`).
#[test]
fn the_jwks_uri_is_the_one_given() {
    let uri = "https://keys.example.com/openid/v1/jwks";
    let server = KapiServer::start(&ServerOptions {
        args: vec![format!("--service-account-jwks-uri={uri}")],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let document = kubectl_ok(
        dir.path(),
        server.kubeconfig(),
        &["get", "--raw", "/.well-known/openid-configuration"],
    );
    let document: Value = serde_json::from_str(&document).unwrap();
    assert_eq!(document["jwks_uri"], uri);

    let data = dir.path().join("data");
    let args: Vec<std::ffi::OsString> = vec![
        "serve".into(),
        "--plain-http".into(),
        "--listen=127.0.0.1:0".into(),
        "--data-dir".into(),
        data.into(),
        "--kubeconfig".into(),
        dir.path().join("kubeconfig").into(),
        "--service-account-jwks-uri=http://keys.example.com/jwks".into(),
    ];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
    let stderr = expect_refusal(&args, Duration::from_secs(20)).unwrap();
    assert!(
        stderr.contains(
            "service-account-jwks-uri requires https scheme, parsed as: http://keys.example.com/jwks"
        ),
        "{stderr}"
    );
}

/// The claims of a JWT, decoded without checking anything.
fn jwt_claims(token: &str) -> Value {
    let payload = token.trim().split('.').nth(1).unwrap_or_default();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .expect("base64url payload"),
    )
    .expect("JSON claims")
}

/// `--service-account-extend-token-expiration` (on by default), upstream's safe rollout of
/// bound tokens (`pkg/registry/core/serviceaccount/storage/token.go`, `Create`): a token bound
/// to a pod, asked for with the kubelet's 3607 seconds (`WarnOnlyBoundTokenExpirationSeconds`)
/// for the API audiences, lives a year (`ExpirationExtensionSeconds`) and carries
/// `warnafter` at the 3607 seconds; other durations, other audiences, tokens not bound to a
/// pod, and servers with the flag off get what was asked for.
#[test]
fn pod_tokens_asked_for_3607_seconds_live_a_year() {
    const YEAR: i64 = 24 * 365 * 60 * 60;
    for extend in [true, false] {
        let server = KapiServer::start(&ServerOptions {
            args: vec![format!(
                "--service-account-extend-token-expiration={extend}"
            )],
            ..ServerOptions::default().tls()
        })
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let admin = server.kubeconfig();
        kubectl_ok(dir.path(), admin, &["run", "web", "--image=nginx"]);
        let token = |extra: &[&str]| {
            let args = [
                &["create", "token", "default", "--bound-object-kind=Pod"][..],
                &["--bound-object-name=web"],
                extra,
            ]
            .concat();
            let raw = kubectl_ok(dir.path(), admin, &args);
            (jwt_claims(&raw), raw)
        };
        let life =
            |claims: &Value| claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
        let (kubelets, raw) = token(&["--duration=3607s"]);
        if extend {
            assert_eq!(life(&kubelets), YEAR, "{kubelets}");
            assert_eq!(
                kubelets["kubernetes.io"]["warnafter"].as_i64().unwrap(),
                kubelets["iat"].as_i64().unwrap() + 3607,
                "{kubelets}"
            );
            // It authenticates as the account, bound to the pod.
            let as_pod = with_token(&server, dir.path(), "as-pod", &raw);
            let whoami = kubectl_ok(dir.path(), &as_pod, &["auth", "whoami", "-o", "json"]);
            let review: Value = serde_json::from_str(&whoami).unwrap();
            assert_eq!(
                review["status"]["userInfo"]["username"],
                "system:serviceaccount:default:default"
            );
            assert_eq!(
                review["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"],
                json!(["web"])
            );
        } else {
            assert_eq!(life(&kubelets), 3607, "{kubelets}");
            assert!(kubelets["kubernetes.io"].get("warnafter").is_none());
        }
        let (hour, _) = token(&["--duration=3600s"]);
        assert_eq!(life(&hour), 3600);
        let (vault, _) = token(&["--duration=3607s", "--audience=vault"]);
        assert_eq!(life(&vault), 3607, "{vault}");
        let unbound = jwt_claims(&kubectl_ok(
            dir.path(),
            admin,
            &["create", "token", "default", "--duration=3607s"],
        ));
        assert_eq!(life(&unbound), 3607);
        assert!(unbound["kubernetes.io"].get("warnafter").is_none());
    }
}
