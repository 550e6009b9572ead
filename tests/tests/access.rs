//! Authentication, authorization and impersonation end to end: a server that requires
//! authentication (static bearer tokens, anonymous requests allowed, RBAC with upstream's
//! bootstrap policy), walked route kind by route kind with a bad token (401), without one
//! (`system:anonymous`) and as a user without roles (403 with upstream's messages);
//! impersonation headers; `kubectl auth can-i` (with `--list`), `kubectl auth whoami`, `--as`,
//! RoleBindings and ClusterRole aggregation as kubectl users meet them; the bootstrap roles of
//! upstream's scheduler, controllers and nodes as `--as` meets them; and the review kinds
//! from the Python client; service-account token requests to a library server.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use kapi::server::{Authentication, ServiceAccountTokens, SigningKey};
use kapi_e2e::routes::{Open, Route, every_route_kind};
use kapi_e2e::{KapiServer, ServerOptions};
use kapi_test::TestServer;
use serde_json::{Value, json};

const ADMIN: &str = "admin-token";
const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";

fn authentication() -> Authentication {
    Authentication::required()
        .anonymous(true)
        .token(ADMIN, "admin", "1", &["system:masters"])
        .token(ALICE, "alice", "2", &[])
        .token(BOB, "bob", "3", &["devs"])
}

fn server() -> TestServer {
    TestServer::builder()
        .authentication(authentication())
        .start_blocking()
        .unwrap()
}

/// One HTTP/1.1 request; answers the status code and the body.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, String) {
    http_with(addr, method, path, token, "", body)
}

/// [`http`] with more header lines (`Name: value\r\n` each).
fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &str,
    body: Option<&Value>,
) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let auth = token.map_or_else(String::new, |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}{headers}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let code = answer[9..12].parse().unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (code, body)
}

/// A kubectl against the server, answering its exit success, stdout and stderr.
fn kubectl(server: &TestServer, args: &[&str]) -> (bool, String, String) {
    kubectl_with(server.kubeconfig_path(), args)
}

/// A kubectl with the kubeconfig at `kubeconfig`; one that cannot run answers its error as
/// stderr.
fn kubectl_with(kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new("kubectl");
    command.arg("--kubeconfig").arg(kubeconfig).args(args);
    match command.output() {
        Ok(out) => (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ),
        Err(e) => (false, String::new(), format!("cannot run kubectl: {e}")),
    }
}

fn message(body: &str) -> String {
    let status: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    status["message"].as_str().unwrap_or(body).to_owned()
}

// Codes and messages as kube-apiserver gives them: `Unauthorized` from the authentication
// filter (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go`), and
// `responsewriters.Forbidden`'s texts under upstream's bootstrap policy
// (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`).
#[test]
fn every_route_kind_refuses_strangers_and_users_without_roles() {
    let server = server();
    let addr = server.addr();
    for Route {
        method,
        path,
        body,
        open,
    } in every_route_kind()
    {
        let (code, text) = http(addr, method, path, Some("not-a-token"), body.as_ref());
        assert_eq!(code, 401, "{method} {path} with a bad token: {text}");
        let status: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(status["reason"], "Unauthorized", "{path}");
        assert_eq!(status["message"], "Unauthorized", "{path}");

        let (code, text) = http(addr, method, path, None, body.as_ref());
        if open == Open::Everyone {
            assert_eq!(code, 200, "{method} {path} anonymously: {text}");
        } else {
            assert_eq!(code, 403, "{method} {path} anonymously: {text}");
            assert!(
                message(&text).contains(r#"User "system:anonymous" cannot"#),
                "{path}: {text}"
            );
        }

        let (code, text) = http(addr, method, path, Some(ALICE), body.as_ref());
        match open {
            Open::Everyone => assert_eq!(code, 200, "{method} {path} as alice: {text}"),
            // Authorized, then answered, or 404 where nothing serves the path.
            Open::Authenticated => assert!(
                code == 200 || code == 404,
                "{method} {path} as alice: {code} {text}"
            ),
            Open::SelfReview => assert_eq!(code, 201, "{method} {path} as alice: {text}"),
            Open::Privileged => {
                assert_eq!(code, 403, "{method} {path} as alice: {text}");
                assert!(message(&text).contains(r#"User "alice" cannot"#), "{text}");
            }
        }

        let (code, text) = http(addr, method, path, Some(ADMIN), body.as_ref());
        assert!(
            code != 401 && code != 403 && code < 500,
            "{method} {path} as a member of system:masters: {code} {text}"
        );
    }
    let (_, text) = http(
        addr,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        None,
    );
    assert_eq!(
        message(&text),
        r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    let (_, text) = http(addr, "GET", "/api", None, None);
    assert_eq!(
        message(&text),
        r#"forbidden: User "system:anonymous" cannot get path "/api""#
    );
    let (_, text) = http(
        addr,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
        Some(ALICE),
        None,
    );
    assert_eq!(
        message(&text),
        r#"deployments.apps "web" is forbidden: User "alice" cannot get resource "deployments/scale" in API group "apps" in the namespace "default""#
    );
    let (_, text) = http(addr, "GET", "/api/v1/namespaces", Some(ALICE), None);
    assert_eq!(
        message(&text),
        r#"namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
}

// kubectl sends no bearer token over plain HTTP, so kubectl here is the server's own
// unsecured superuser (a server without authentication, as kube-apiserver's insecure port
// was) and acts as other users with `--as`, which RBAC then judges as theirs.
// Upstream's filters write their 401 and 403 with `responsewriters.ErrorNegotiated`
// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/writers.go`), negotiated
// as any answer is: in YAML or protobuf for a client that asks for them, indented for `curl`.
#[test]
fn refusals_are_written_as_the_client_asked() {
    let server = server();
    let addr = server.addr();
    let path = "/api/v1/namespaces/default/configmaps";
    let yaml = "Accept: application/yaml\r\n";
    let (code, text) = http_with(addr, "GET", path, Some("not-a-token"), yaml, None);
    assert_eq!(code, 401, "{text}");
    assert_eq!(
        text,
        "apiVersion: v1\ncode: 401\nkind: Status\nmessage: Unauthorized\nmetadata: {}\n\
         reason: Unauthorized\nstatus: Failure\n"
    );
    let curl = "User-Agent: curl/8.5.0\r\n";
    let (code, text) = http_with(addr, "GET", path, Some(ALICE), curl, None);
    assert_eq!(code, 403, "{text}");
    assert!(text.starts_with("{\n  \"kind\": \"Status\",\n"), "{text}");
    assert!(
        message(&text).contains(r#"User "alice" cannot list"#),
        "{text}"
    );
    let protobuf = "Accept: application/vnd.kubernetes.protobuf\r\n";
    let (code, text) = http_with(addr, "GET", path, None, protobuf, None);
    assert_eq!(code, 403, "{text}");
    assert!(text.starts_with("k8s\0"), "{text:?}");
    assert!(
        text.contains(r#"User "system:anonymous" cannot list"#),
        "{text:?}"
    );
}

#[test]
fn kubectl_auth_can_i_whoami_and_as() {
    let server = TestServer::start_blocking().unwrap();
    let run = |args: &[&str]| kubectl(&server, args);
    let (ok, out, err) = run(&[
        "auth",
        "whoami",
        "-o",
        "json",
        "--as",
        "alice",
        "--as-group",
        "devs",
    ]);
    assert!(ok, "{err}");
    let review: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "alice");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["devs", "system:authenticated"])
    );
    let (ok, out, err) = run(&["auth", "whoami"]);
    assert!(ok, "{err}");
    assert!(out.contains("system:unsecured"), "{out}");

    let can = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let (_, out, _) = run(&all);
        out.trim().to_owned()
    };
    // Before any binding: alice may do nothing but ask; the superuser may do everything.
    assert_eq!(can(&["list", "pods", "-n", "team", "--as", "alice"]), "no");
    assert_eq!(can(&["list", "pods", "-n", "team"]), "yes");
    assert_eq!(can(&["*", "*"]), "yes");

    // The aggregated `edit` role bound in one namespace: that namespace only, and no RBAC.
    let (ok, _, err) = run(&["create", "namespace", "team"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&[
        "create",
        "rolebinding",
        "alice-edit",
        "--clusterrole=edit",
        "--user=alice",
        "-n",
        "team",
    ]);
    assert!(ok, "{err}");
    eventually(|| can(&["create", "deployments.apps", "-n", "team", "--as", "alice"]) == "yes");
    for (args, want) in [
        (&["create", "configmaps", "-n", "team"][..], "yes"),
        (&["delete", "secrets", "-n", "team"], "yes"),
        // `system:aggregate-to-edit` reads what `view` leaves out (`policy.go`).
        (&["get", "secrets", "-n", "team"], "yes"),
        (&["get", "pods", "--subresource=exec", "-n", "team"], "yes"),
        (&["get", "pods", "--subresource=log", "-n", "team"], "yes"),
        (&["create", "configmaps", "-n", "default"], "no"),
        (
            &["create", "roles.rbac.authorization.k8s.io", "-n", "team"],
            "no",
        ),
        (&["update", "resourcequotas", "-n", "team"], "no"),
        (&["list", "namespaces"], "no"),
    ] {
        let mut args = args.to_vec();
        args.extend(["--as", "alice"]);
        assert_eq!(can(&args), want, "alice: can-i {args:?}");
    }
    let (ok, out, err) = run(&["auth", "can-i", "--list", "-n", "team", "--as", "alice"]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("deployments.apps ") && l.contains("create")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("selfsubjectaccessreviews.authorization.k8s.io")),
        "{out}"
    );

    // Alice's own requests: allowed in `team`, refused elsewhere with upstream's message.
    let (ok, _, err) = run(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=a=b",
        "--as",
        "alice",
    ]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["get", "configmaps", "-n", "default", "--as", "alice"]);
    assert!(!ok);
    assert!(
        err.contains(r#"Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{err}"
    );

    // A ClusterRole labelled to aggregate into `view` reaches users of `view`.
    let lease_reader = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "lease-reader",
            "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"verbs": ["get"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}]});
    let (ok, _, err) = kubectl_stdin(&server, &["create", "-f", "-"], &lease_reader);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&[
        "create",
        "clusterrolebinding",
        "devs-view",
        "--clusterrole=view",
        "--group=devs",
    ]);
    assert!(ok, "{err}");
    let bob = ["--as", "bob", "--as-group", "devs"];
    let can_bob = |args: &[&str]| {
        let mut args = args.to_vec();
        args.extend(bob);
        can(&args)
    };
    eventually(|| can_bob(&["get", "leases.coordination.k8s.io", "-n", "default"]) == "yes");
    assert_eq!(can_bob(&["get", "pods", "-n", "default"]), "yes");
    assert_eq!(can_bob(&["create", "pods", "-n", "default"]), "no");
    assert_eq!(can_bob(&["get", "secrets", "-n", "default"]), "no");
    let (ok, out, err) = run(&["get", "clusterrole", "view", "-o", "json"]);
    assert!(ok, "{err}");
    let view: Value = serde_json::from_str(&out).unwrap();
    assert!(
        view["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"] == json!(["leases"])),
        "{view}"
    );
}

// The roles upstream gives its own programs, as `kubectl auth can-i --as` meets them. From
// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/`: `policy.go` (component ClusterRoles and
// their bindings), `controller_policy.go` (`system:controller:*`, each bound to its
// kube-system service account) and `namespace_policy.go` (kube-system's Roles).
#[test]
fn upstream_components_hold_their_bootstrap_roles() {
    let server = TestServer::start_blocking().unwrap();
    let can = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let (_, out, _) = kubectl(&server, &all);
        out.trim().to_owned()
    };
    let check = |who: &[&str], cases: &[(&[&str], &str)]| {
        for (args, want) in cases {
            let mut args = args.to_vec();
            args.extend_from_slice(who);
            assert_eq!(can(&args), *want, "can-i {args:?}");
        }
    };

    // policy.go: `system:kube-scheduler` and `system:volume-scheduler`, both bound to the
    // user `system:kube-scheduler`; its lease by name only (`Names("kube-scheduler")`).
    // namespace_policy.go: `system::leader-locking-kube-scheduler` (every lease of
    // kube-system) and `extension-apiserver-authentication-reader` (one ConfigMap).
    check(
        &["--as", "system:kube-scheduler"],
        &[
            (
                &["create", "pods", "--subresource=binding", "-n", "default"],
                "yes",
            ),
            (&["delete", "pods", "-n", "default"], "yes"),
            (&["create", "pods", "-n", "default"], "no"),
            (&["update", "persistentvolumes"], "yes"),
            (&["list", "csinodes.storage.k8s.io"], "yes"),
            (&["list", "secrets", "-n", "default"], "no"),
            (&["update", "leases/kube-scheduler", "-n", "default"], "yes"),
            (&["update", "leases/other", "-n", "default"], "no"),
            (&["update", "leases/other", "-n", "kube-system"], "yes"),
            (
                &[
                    "get",
                    "configmaps/extension-apiserver-authentication",
                    "-n",
                    "kube-system",
                ],
                "yes",
            ),
            (&["get", "configmaps/other", "-n", "kube-system"], "no"),
            (
                &[
                    "get",
                    "configmaps/extension-apiserver-authentication",
                    "-n",
                    "default",
                ],
                "no",
            ),
        ],
    );
    // policy.go: `system:kube-controller-manager` lists everything, writes little itself.
    check(
        &["--as", "system:kube-controller-manager"],
        &[
            (&["list", "secrets", "--all-namespaces"], "yes"),
            (
                &[
                    "create",
                    "serviceaccounts",
                    "--subresource=token",
                    "-n",
                    "default",
                ],
                "yes",
            ),
            (&["delete", "pods", "-n", "default"], "no"),
        ],
    );
    // controller_policy.go: the deployment controller's account writes deployment status and
    // replica sets, reads and updates pods, deletes none.
    check(
        &[
            "--as",
            "system:serviceaccount:kube-system:deployment-controller",
        ],
        &[
            (
                &[
                    "update",
                    "deployments.apps",
                    "--subresource=status",
                    "-n",
                    "default",
                ],
                "yes",
            ),
            (&["create", "replicasets.apps", "-n", "default"], "yes"),
            (&["create", "deployments.apps", "-n", "default"], "no"),
            (&["update", "pods", "-n", "default"], "yes"),
            (&["delete", "pods", "-n", "default"], "no"),
        ],
    );
    // The same name in another namespace is another account, bound to nothing.
    check(
        &[
            "--as",
            "system:serviceaccount:default:deployment-controller",
        ],
        &[(
            &[
                "update",
                "deployments.apps",
                "--subresource=status",
                "-n",
                "default",
            ],
            "no",
        )],
    );
    // policy.go: the `system:node` binding has no subjects (the Node authorizer grants
    // kubelets their access upstream), so a node holds only what every user holds.
    check(
        &["--as", "system:node:n1", "--as-group", "system:nodes"],
        &[
            (&["get", "nodes"], "no"),
            (
                &["create", "certificatesigningrequests.certificates.k8s.io"],
                "no",
            ),
            (
                &["create", "selfsubjectaccessreviews.authorization.k8s.io"],
                "yes",
            ),
        ],
    );
    // policy.go: kube-proxy's user reads services and endpoint slices.
    check(
        &["--as", "system:kube-proxy"],
        &[
            (
                &[
                    "watch",
                    "endpointslices.discovery.k8s.io",
                    "--all-namespaces",
                ],
                "yes",
            ),
            (&["update", "services", "-n", "default"], "no"),
        ],
    );

    let (ok, out, err) = kubectl(
        &server,
        &["get", "clusterrolebinding", "system:node", "-o", "json"],
    );
    assert!(ok, "{err}");
    let node: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(node["roleRef"]["name"], "system:node");
    assert!(node.get("subjects").is_none(), "{node}");
    let (ok, out, err) = kubectl(
        &server,
        &["get", "roles", "-n", "kube-public", "-o", "name"],
    );
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "role.rbac.authorization.k8s.io/system:controller:bootstrap-signer"
    );

    // A Role of kube-system bound to another user grants that user the same.
    let (ok, _, err) = kubectl(
        &server,
        &[
            "create",
            "rolebinding",
            "alice-reads-authentication",
            "--role=extension-apiserver-authentication-reader",
            "--user=alice",
            "-n",
            "kube-system",
        ],
    );
    assert!(ok, "{err}");
    let reads = |name: &str| {
        can(&[
            "get",
            &format!("configmaps/{name}"),
            "-n",
            "kube-system",
            "--as",
            "alice",
        ])
    };
    eventually(|| reads("extension-apiserver-authentication") == "yes");
    assert_eq!(reads("cluster-info"), "no");
}

// Upstream's `rbac/bootstrap-roles` start hook on a store that already holds a policy
// (`pkg/registry/rbac/rest/storage_rbac.go`, with `reconciliation`): what is missing is made
// again, a role marked `rbac.authorization.kubernetes.io/autoupdate: "true"` gets back the
// rules it lacks, one marked "false" keeps what its owner made of it; the roles of a newer
// release (`controller_policy.go`'s resource-claim controller, 1.34) arrive with it.
#[test]
fn a_restart_completes_the_stored_policy() {
    let data = tempfile::tempdir().unwrap();
    let options = |release: &str| ServerOptions {
        data_dir: Some(data.path().to_path_buf()),
        kube_version: Some(release.to_owned()),
        ..ServerOptions::default()
    };
    let claims = "system:controller:resource-claim-controller";
    let mut server = KapiServer::start(&options("1.28")).unwrap();
    let run = |server: &KapiServer, line: &str| {
        let args: Vec<&str> = line.split_whitespace().collect();
        kubectl_with(server.kubeconfig(), &args)
    };
    let (ok, _, err) = run(&server, &format!("get clusterrole {claims}"));
    assert!(!ok && err.contains("NotFound"), "{err}");
    for line in [
        "delete role extension-apiserver-authentication-reader -n kube-system",
        "patch clusterrole system:kube-scheduler --type=json -p [{\"op\":\"replace\",\"path\":\"/rules\",\"value\":[]}]",
        "patch clusterrole system:kube-dns --type=json -p [{\"op\":\"replace\",\"path\":\"/rules\",\"value\":[]}]",
        "annotate clusterrole system:kube-dns --overwrite rbac.authorization.kubernetes.io/autoupdate=false",
    ] {
        let (ok, _, err) = run(&server, line);
        assert!(ok, "{line}: {err}");
    }
    server.terminate(Duration::from_secs(10)).unwrap();

    let server = KapiServer::start(&options("1.36")).unwrap();
    let (ok, _, err) = run(&server, &format!("get clusterrole {claims}"));
    assert!(ok, "{err}");
    let (ok, _, err) = run(
        &server,
        "get role extension-apiserver-authentication-reader -n kube-system",
    );
    assert!(ok, "{err}");
    let (_, out, _) = run(
        &server,
        "auth can-i create pods --subresource=binding -n default --as system:kube-scheduler",
    );
    assert_eq!(out.trim(), "yes");
    let (ok, out, err) = run(&server, "get clusterrole system:kube-dns -o json");
    assert!(ok, "{err}");
    let dns: Value = serde_json::from_str(&out).unwrap();
    assert!(dns["rules"].as_array().is_none_or(Vec::is_empty), "{dns}");
}

// Escalation prevention (`pkg/registry/rbac/validation/rule.go`, `ConfirmNoEscalation`): a
// namespace admin may hand out what she holds, and nothing more without `escalate` or `bind`.
#[test]
fn roles_and_bindings_grant_only_what_their_writer_holds() {
    let server = TestServer::start_blocking().unwrap();
    let run = |line: &str| kubectl(&server, &line.split_whitespace().collect::<Vec<_>>());
    for line in [
        "create namespace team",
        "create rolebinding alice-admin --clusterrole=admin --user=alice -n team",
    ] {
        let (ok, _, err) = run(line);
        assert!(ok, "{err}");
    }
    let as_alice = |line: &str| {
        let mut args: Vec<&str> = line.split_whitespace().collect();
        args.extend(["--as", "alice", "-n", "team"]);
        kubectl(&server, &args)
    };
    eventually(|| {
        as_alice("auth can-i create roles.rbac.authorization.k8s.io")
            .1
            .trim()
            == "yes"
    });
    let (ok, _, err) = as_alice("create role pod-reader --verb=get,list --resource=pods");
    assert!(ok, "{err}");
    let (ok, _, err) = as_alice("create role node-reader --verb=get --resource=nodes");
    assert!(!ok);
    assert!(
        err.contains(r#"roles.rbac.authorization.k8s.io "node-reader" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#)
            && err.contains(r#"{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}"#),
        "{err}"
    );
    let (ok, _, err) = as_alice("create rolebinding bob-view --clusterrole=view --user=bob");
    assert!(ok, "{err}");
    let (ok, _, err) =
        as_alice("create rolebinding bob-root --clusterrole=cluster-admin --user=bob");
    assert!(!ok);
    assert!(
        err.contains(
            r#"rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: user "alice""#
        ) && err.contains(r#"{APIGroups:["*"], Resources:["*"], Verbs:["*"]}"#),
        "{err}"
    );
    // `bind` on the role lets her bind it anyway; `escalate` lets her write any role.
    let grant = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "binder", "namespace": "team"},
        "rules": [
            {"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["cluster-admin"]},
            {"verbs": ["escalate"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]}]});
    let (ok, _, err) = kubectl_stdin(&server, &["create", "-f", "-"], &grant);
    assert!(ok, "{err}");
    let (ok, _, err) = run("create rolebinding alice-binder --role=binder --user=alice -n team");
    assert!(ok, "{err}");
    eventually(|| as_alice("create rolebinding bob-root --clusterrole=cluster-admin --user=bob").0);
    let (ok, _, err) = as_alice("create role node-reader --verb=get --resource=nodes");
    assert!(ok, "{err}");

    // An aggregated ClusterRole gathers any rule: writing one takes cluster-admin's rules,
    // whatever else the writer holds (`pkg/registry/rbac/clusterrole/policybased`).
    let (ok, _, err) =
        run("create clusterrolebinding carol-roles --clusterrole=carol-roles --user=carol");
    assert!(ok, "{err}");
    let roles_writer = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "carol-roles"},
        "rules": [{"verbs": ["create", "get", "update"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"]}]});
    let (ok, _, err) = kubectl_stdin(&server, &["create", "-f", "-"], &roles_writer);
    assert!(ok, "{err}");
    let aggregated = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "everything"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}]},
        "rules": []});
    eventually(|| {
        run("auth can-i create clusterroles.rbac.authorization.k8s.io --as carol")
            .1
            .trim()
            == "yes"
    });
    let as_carol = ["create", "-f", "-", "--as", "carol"];
    let (ok, _, refused) = kubectl_stdin(&server, &as_carol, &aggregated);
    assert!(!ok);
    assert!(
        refused.contains(r#"clusterroles.rbac.authorization.k8s.io "everything" is forbidden: must have cluster-admin privileges to use the aggregationRule"#),
        "{refused}"
    );
    // The same role without the rule is hers to write.
    let mut plain = aggregated.clone();
    plain.as_object_mut().unwrap().remove("aggregationRule");
    let (ok, _, err) = kubectl_stdin(&server, &as_carol, &plain);
    assert!(ok, "{err}");
}

// Impersonation needs the `impersonate` verb on each part (`filters/impersonation.go`).
#[test]
fn impersonation_is_authorized_part_by_part() {
    let server = server();
    let addr = server.addr();
    let whoami = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let ask = |token: &str, headers: &str| {
        let path = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
        http_with(addr, "POST", path, Some(token), headers, Some(&whoami))
    };
    let (code, text) = ask(ALICE, "Impersonate-User: bob\r\n");
    assert_eq!(code, 403, "{text}");
    assert_eq!(
        message(&text),
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    let (code, text) = ask(
        ADMIN,
        "Impersonate-User: system:serviceaccount:team:builder\r\nImpersonate-Extra-Scopes: view\r\n",
    );
    assert_eq!(code, 201, "{text}");
    let review: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        review["status"]["userInfo"],
        json!({
            "username": "system:serviceaccount:team:builder",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"],
            "extra": {"scopes": ["view"]},
        })
    );
    // A uid, and an extra key escaped as upstream's clients escape it (`%2F` for `/`; a `+`
    // stays a `+`, as `url.PathUnescape` leaves it).
    let (code, text) = ask(
        ADMIN,
        "Impersonate-User: jane\r\nImpersonate-Uid: 42\r\nImpersonate-Extra-Example.com%2Fteam+x: a\r\n",
    );
    assert_eq!(code, 201, "{text}");
    let review: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        review["status"]["userInfo"],
        json!({
            "username": "jane", "uid": "42", "groups": ["system:authenticated"],
            "extra": {"example.com/team+x": ["a"]},
        })
    );
    let (code, _) = ask(ADMIN, "Impersonate-Group: devs\r\n");
    assert_eq!(
        code, 500,
        "groups without a user: upstream's internal error"
    );
}

fn kubectl_stdin(server: &TestServer, args: &[&str], input: &Value) -> (bool, String, String) {
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Waits (bounded) for `check`: a binding is authorized by once the server's policy has
/// read it, as upstream's informers do.
fn eventually(mut check: impl FnMut() -> bool) {
    for _ in 0..50 {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("condition not met within 5 s");
}

// The review kinds from the official Python client: evaluated, never stored, with upstream's
// validation (`pkg/apis/authorization/validation/validation.go`).
#[test]
fn reviews_from_the_python_client() {
    let server = server();
    let script = format!(
        r#"
import json
from kubernetes import client, config
from kubernetes.client.rest import ApiException
cfg = client.Configuration()
cfg.host = "{url}"
cfg.api_key = {{"authorization": "Bearer {admin}"}}
api = client.ApiClient(cfg)
authz = client.AuthorizationV1Api(api)
sar = authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
    user="alice", resource_attributes=client.V1ResourceAttributes(verb="get", resource="pods", namespace="x"))))
assert sar.status.allowed is False, sar.status
sar = authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
    user="carol", groups=["system:masters"], non_resource_attributes=client.V1NonResourceAttributes(verb="get", path="/metrics"))))
assert sar.status.allowed is True, sar.status
lsar = authz.create_namespaced_local_subject_access_review("x", client.V1LocalSubjectAccessReview(
    metadata=client.V1ObjectMeta(namespace="x"),
    spec=client.V1SubjectAccessReviewSpec(groups=["system:authenticated"],
        resource_attributes=client.V1ResourceAttributes(verb="create", group="authorization.k8s.io", resource="selfsubjectaccessreviews", namespace="x"))))
assert lsar.status.allowed is True, lsar.status
assert "system:basic-user" in lsar.status.reason, lsar.status.reason
try:
    authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(verb="get", resource="pods"))))
    raise SystemExit("a review without a user or group was accepted")
except ApiException as e:
    assert e.status == 422, e.status
    assert "spec.user: Invalid value: \"\": at least one of user or group must be specified" in json.loads(e.body)["message"], e.body
try:
    authz.create_namespaced_local_subject_access_review("x", client.V1LocalSubjectAccessReview(
        metadata=client.V1ObjectMeta(namespace="x"),
        spec=client.V1SubjectAccessReviewSpec(user="a", resource_attributes=client.V1ResourceAttributes(verb="get", resource="pods", namespace="y"))))
    raise SystemExit("a local review of another namespace was accepted")
except ApiException as e:
    assert e.status == 400, e.status
    assert json.loads(e.body)["message"] == "spec.resourceAttributes.namespace must match namespace: x", e.body
authn = client.AuthenticationV1Api(api)
tr = authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="{bob}")))
assert tr.status.authenticated is True and tr.status.user.username == "bob", tr.status
assert tr.status.user.groups == ["devs", "system:authenticated"], tr.status.user.groups
tr = authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="nope")))
assert not tr.status.authenticated, tr.status
# A server without API audiences (no service-account tokens here): a token file's token stands
# for none, so a review naming audiences does not authenticate it
# (WrapAudienceAgnosticToken: no audience in common).
tr = authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="{bob}", audiences=["somebody"])))
assert not tr.status.authenticated, tr.status
assert not tr.status.audiences, tr.status
print("ok")
"#,
        url = server.url(),
        admin = ADMIN,
        bob = BOB,
    );
    let out = Command::new(kapi_e2e::python())
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing was stored.
    let (code, text) = http(
        server.addr(),
        "GET",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(ADMIN),
        None,
    );
    assert_eq!(code, 405, "{text}");
}

// Every answer names its audit ID, audited or not, as upstream's `WithAuditInit` sends it; a
// client's own `Audit-ID` is kept.
#[test]
fn every_answer_carries_an_audit_id() {
    let server = server();
    let head = |extra: &str| {
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        write!(
            stream,
            "GET /version HTTP/1.1\r\nHost: {}\r\n{extra}Connection: close\r\n\r\n",
            server.addr()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.to_ascii_lowercase()
    };
    let answer = head("");
    let id = answer
        .lines()
        .find_map(|line| line.strip_prefix("audit-id: "))
        .unwrap_or_else(|| panic!("no Audit-Id in {answer}"));
    assert_eq!(id.trim().len(), 36, "a UUID: {id}");
    assert!(head("Audit-ID: my-request-1\r\n").contains("audit-id: my-request-1"));
}

/// Service-account tokens from a library server (`TestServerBuilder::service_account_tokens`):
/// a `TokenRequest`'s answer and refusals as upstream's `TokenREST` and validation word them
/// (`pkg/registry/core/serviceaccount/storage/token.go`,
/// `pkg/apis/authentication/validation/validation.go`), authorized as `create` on
/// `serviceaccounts/token`, and the token as the account's user.
#[test]
fn token_requests_from_a_library_server() {
    let key = SigningKey::generate().unwrap();
    let server = TestServer::builder()
        .authentication(authentication())
        .service_account_tokens(ServiceAccountTokens::new(key).api_audiences(vec!["api".into()]))
        .start_blocking()
        .unwrap();
    let addr = server.addr();
    let path = "/api/v1/namespaces/default/serviceaccounts/default/token";
    let request = |spec: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    let (code, body) = http(addr, "POST", path, Some(ADMIN), Some(&request(json!({}))));
    assert_eq!(code, 201, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["metadata"]["name"], "default");
    assert_eq!(answer["spec"]["audiences"], json!(["api"]));
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    assert!(
        answer["status"]["expirationTimestamp"].is_string(),
        "{answer}"
    );
    let token = answer["status"]["token"].as_str().unwrap();
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, body) = http(
        addr,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(token),
        Some(&review),
    );
    assert_eq!(code, 201, "{body}");
    let who: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );
    // A user without roles may not ask for one.
    let (code, body) = http(addr, "POST", path, Some(ALICE), Some(&request(json!({}))));
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        message(&body),
        r#"serviceaccounts "default" is forbidden: User "alice" cannot create resource "serviceaccounts/token" in API group "" in the namespace "default""#
    );
    // Upstream's refusals.
    let refused = |path: &str, spec: Value| {
        let (code, body) = http(addr, "POST", path, Some(ADMIN), Some(&request(spec)));
        (code, message(&body))
    };
    assert_eq!(
        refused(path, json!({"expirationSeconds": 599})),
        (
            422,
            r#"TokenRequest.authentication.k8s.io "default" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"#
                .to_owned()
        )
    );
    assert_eq!(
        refused(
            path,
            json!({"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}})
        ),
        (
            400,
            "cannot bind token to object of type /v1, Kind=ConfigMap".to_owned()
        )
    );
    assert_eq!(
        refused(
            path,
            json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "nope"}})
        ),
        (404, r#"pods "nope" not found"#.to_owned())
    );
    assert_eq!(
        refused(
            "/api/v1/namespaces/default/serviceaccounts/nobody/token",
            json!({})
        ),
        (404, r#"serviceaccounts "nobody" not found"#.to_owned())
    );
    let (code, body) = http(
        addr,
        "POST",
        path,
        Some(ADMIN),
        Some(&json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": "other"},
        })),
    );
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        message(&body),
        r#"TokenRequest.authentication.k8s.io "default" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified"#
    );
    // Only POST is routed there.
    assert_eq!(http(addr, "GET", path, Some(ADMIN), None).0, 405);
}
