//! `kapi serve` over TLS, its default: the kubeconfig it writes (the server's CA and an admin
//! client certificate) works unchanged with kubectl, the Python client and the kube crate;
//! HTTP/2 is negotiated by ALPN; the CA and the admin certificate survive a restart;
//! `--plain-http` is refused off loopback; every route kind is walked with and without client
//! certificates; the advertised address is in the endpoints and the certificate.
//!
//! Upstream's behaviour mirrored: kube-apiserver serves TLS 1.2+ with ALPN `h2`, `http/1.1`
//! and asks for client certificates without requiring or verifying them at the handshake
//! (`tls.RequestClientCert`, k8s.io/apiserver `pkg/server/secure_serving.go`), leaving the
//! chain to the x509 authenticator; kubeadm's admin user is CN `kubernetes-admin`, O
//! `system:masters`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kapi_e2e::{
    KapiServer, Kubectl, ServerOptions, expect_python_ok, expect_refusal, expect_serve_refusal,
};

fn tls_server() -> KapiServer {
    KapiServer::start(&ServerOptions::default().tls())
        .unwrap_or_else(|e| panic!("the TLS server did not start: {e}"))
}

/// The cert dir of a server started with the default `--cert-dir`.
fn pki(server: &KapiServer) -> PathBuf {
    server.data_dir().join("pki")
}

/// `curl` over TLS against `server` with `extra` arguments; its `-w` output, or why it failed.
fn curl(server: &KapiServer, extra: &[&str], path: &str) -> Result<String, String> {
    let output = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "--max-time", "20"])
        .args(extra)
        .arg(format!("{}{path}", server.url()))
        .output()
        .map_err(|e| format!("cannot run curl: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "curl {extra:?} failed ({}): {stdout}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// `curl` over TLS against `server` with `args`: its standard output, which must not be empty
/// (a failed handshake or connection is a failed test).
fn curl_output(server: &KapiServer, args: &[&str], path: &str) -> String {
    let output = Command::new("curl")
        .args(["-sS", "--max-time", "20"])
        .args(args)
        .arg(format!("{}{path}", server.url()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run curl: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "curl {args:?} {path} failed ({}): {stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The admin credentials of `server`'s cert dir as curl arguments, trusting its CA.
fn admin_args(dir: &Path) -> Vec<String> {
    let file = |name: &str| dir.join(name).display().to_string();
    vec![
        "--cacert".to_owned(),
        file("ca.crt"),
        "--cert".to_owned(),
        file("admin.crt"),
        "--key".to_owned(),
        file("admin.key"),
    ]
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn kubectl_works_over_https_with_the_written_kubeconfig() {
    let server = tls_server();
    assert!(
        server.url().starts_with("https://127.0.0.1:"),
        "{}",
        server.url()
    );
    let kubeconfig = std::fs::read_to_string(server.kubeconfig()).unwrap();
    assert!(
        kubeconfig.contains("certificate-authority-data"),
        "{kubeconfig}"
    );
    assert!(
        kubeconfig.contains("client-certificate-data"),
        "{kubeconfig}"
    );
    assert!(kubeconfig.contains("client-key-data"), "{kubeconfig}");
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path()).with_request_timeout("20s");
    let namespaces = k.expect_ok(&["get", "ns", "-o", "name"]);
    assert!(namespaces.contains("namespace/default"), "{namespaces}");
    k.expect_ok(&["create", "configmap", "settings", "--from-literal=a=b"]);
    // A watch over TLS (HTTP/2: kubectl negotiates it by ALPN) sees a create.
    let (mut watch, rx) = k.spawn_lines(&["get", "configmaps", "-w", "-o", "name"]);
    let result = (|| {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut seen = Vec::new();
        let mut created = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .map_err(|_| format!("get -w over TLS: {seen:?}"))?;
            if line.contains("configmap/settings") && !created {
                k.ok(&["create", "configmap", "watched", "--from-literal=k=v"])?;
                created = true;
            }
            if line.contains("configmap/watched") {
                return Ok::<(), String>(());
            }
            seen.push(line);
        }
    })();
    let _ = watch.kill();
    let _ = watch.wait();
    result.unwrap_or_else(|e| panic!("{e}\nserver stderr:\n{}", server.stderr()));
    let got = k.expect_ok(&["get", "configmap", "watched", "-o", "jsonpath={.data.k}"]);
    assert_eq!(got, "v");
}

/// The official Python client loads the same kubeconfig (CA and client certificate data) and
/// talks to the server over https.
#[test]
fn the_python_client_works_with_the_written_kubeconfig() {
    let server = tls_server();
    let script = r#"
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
assert client.Configuration.get_default_copy().host.startswith("https://"), "not https"
v1 = client.CoreV1Api()
names = [n.metadata.name for n in v1.list_namespace().items]
assert "default" in names, names
body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="from-python"), data={"a": "b"})
v1.create_namespaced_config_map("default", body)
assert v1.read_namespaced_config_map("from-python", "default").data == {"a": "b"}
print("ok")
"#;
    expect_python_ok(&server, script, "1.36");
}

/// HTTP/2 is negotiated by ALPN (curl offers `h2`), HTTP/1.1 when the client offers only it;
/// the serving certificate covers `localhost` as well as 127.0.0.1.
#[test]
fn alpn_negotiates_http2() {
    let server = tls_server();
    let admin = admin_args(&pki(&server));
    let admin = strs(&admin);
    let h2 = [
        &admin[..],
        &["--http2", "-w", "%{http_version} %{http_code}"],
    ]
    .concat();
    assert_eq!(curl(&server, &h2, "/version").unwrap(), "2 200");
    let h1 = [
        &admin[..],
        &["--http1.1", "-w", "%{http_version} %{http_code}"],
    ]
    .concat();
    assert_eq!(curl(&server, &h1, "/version").unwrap(), "1.1 200");
    let by_name = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "--max-time",
            "20",
            "-w",
            "%{http_code}",
        ])
        .args(&admin)
        .arg(format!(
            "https://localhost:{}/version",
            server.addr().port()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&by_name.stdout), "200");
}

/// A client that does not trust the server's CA refuses it; a client certificate of another
/// CA does not fail the handshake (upstream's `RequestClientCert`: the authenticator, not the
/// handshake, refuses it, with 401). The operator's own certificate, key and client CA files
/// (`--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`) are served as given.
#[test]
fn trust_runs_through_the_ca() {
    let first = tls_server();
    let second = tls_server();
    // The second server's kubeconfig trusts only its own CA.
    let dir = tempfile::tempdir().unwrap();
    let mut crossed = std::fs::read_to_string(second.kubeconfig()).unwrap();
    crossed = crossed.replace(&second.url(), &first.url());
    let crossed_path = dir.path().join("crossed");
    std::fs::write(&crossed_path, crossed).unwrap();
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&crossed_path)
        .args(["get", "ns", "--request-timeout=20s"])
        .env("KUBECACHEDIR", dir.path().join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("certificate signed by unknown authority"),
        "{stderr}"
    );
    // The second server's admin certificate against the first server: the handshake
    // completes and the authenticator refuses it, 401 (not anonymous).
    let foreign = pki(&second);
    let args = [
        "--cacert".to_owned(),
        pki(&first).join("ca.crt").display().to_string(),
        "--cert".to_owned(),
        foreign.join("admin.crt").display().to_string(),
        "--key".to_owned(),
        foreign.join("admin.key").display().to_string(),
        "-w".to_owned(),
        "%{http_code}".to_owned(),
    ];
    let code = curl(&first, &strs(&args), "/version").unwrap();
    assert_eq!(code, "401");
    // The first server's files given as the operator's own to a third server.
    let own = pki(&first);
    let file = |name: &str| own.join(name).display().to_string();
    let third = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--tls-cert-file={}", file("apiserver.crt")),
            format!("--tls-private-key-file={}", file("apiserver.key")),
            format!("--client-ca-file={}", file("ca.crt")),
        ],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let admin = admin_args(&own);
    let h2 = [
        &strs(&admin)[..],
        &["--http2", "-w", "%{http_version} %{http_code}"],
    ]
    .concat();
    assert_eq!(curl(&third, &h2, "/version").unwrap(), "2 200");
}

/// The CA and the admin certificate are reused on restart, so a kubeconfig written before it
/// still works (pointed at the new port); the serving certificate too, as long as it covers the
/// listen address.
#[test]
fn a_restart_keeps_the_ca_and_the_old_kubeconfig_works() {
    let data = tempfile::tempdir().unwrap();
    let options = ServerOptions {
        data_dir: Some(data.path().join("data")),
        ..ServerOptions::default().tls()
    };
    let mut first = KapiServer::start(&options).unwrap();
    let old = std::fs::read_to_string(first.kubeconfig()).unwrap();
    let old_url = first.url();
    let ca = std::fs::read(pki(&first).join("ca.crt")).unwrap();
    let serving = std::fs::read(pki(&first).join("apiserver.crt")).unwrap();
    let status = first.terminate(Duration::from_secs(20)).unwrap();
    assert!(status.success(), "{status}");
    let second = KapiServer::start(&options).unwrap();
    assert_eq!(std::fs::read(pki(&second).join("ca.crt")).unwrap(), ca);
    assert_eq!(
        std::fs::read(pki(&second).join("apiserver.crt")).unwrap(),
        serving
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old-kubeconfig");
    std::fs::write(&path, old.replace(&old_url, &second.url())).unwrap();
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&path)
        .args([
            "get",
            "ns",
            "default",
            "-o",
            "name",
            "--request-timeout=20s",
        ])
        .env("KUBECACHEDIR", dir.path().join("cache"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "namespace/default"
    );
}

/// `--plain-http` serves without TLS or authentication: refused on an address other machines
/// can reach, with a message that says why and what to do.
#[test]
fn plain_http_is_refused_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let kubeconfig = dir.path().join("kubeconfig");
    let args: [&std::ffi::OsStr; 8] = [
        "serve".as_ref(),
        "--plain-http".as_ref(),
        "--listen".as_ref(),
        "0.0.0.0:0".as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
        "--kubeconfig".as_ref(),
        kubeconfig.as_os_str(),
    ];
    let stderr = expect_refusal(&args, Duration::from_secs(20)).unwrap();
    assert!(
        stderr.contains(
            "--plain-http serves without TLS or authentication, so it is allowed only on a loopback address, and --listen 0.0.0.0:0 is not one"
        ),
        "{stderr}"
    );
    assert!(!kubeconfig.exists());
}

/// `--advertise-address` is where the cluster reaches the server, as kube-apiserver's flag: the
/// `default/kubernetes` Endpoints and EndpointSlice point at it (upstream's endpoint reconciler
/// publishes the public address) and the generated serving certificate names it (upstream's
/// self-signed certificate covers its public address), so a client that dials that address
/// verifies the server. The server itself listens on loopback only.
#[test]
fn the_advertised_address_is_in_the_endpoints_and_the_certificate() {
    let advertised = "192.0.2.10";
    let mut options = ServerOptions::default().tls();
    options.args = vec![format!("--advertise-address={advertised}")];
    let server =
        KapiServer::start(&options).unwrap_or_else(|e| panic!("the TLS server did not start: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path()).with_request_timeout("20s");
    let port = server.addr().port().to_string();
    let endpoints = k.expect_json(&["get", "endpoints", "kubernetes", "-n", "default"]);
    assert_eq!(
        endpoints["subsets"][0]["addresses"][0]["ip"], advertised,
        "{endpoints}"
    );
    assert_eq!(
        endpoints["subsets"][0]["ports"][0]["port"].to_string(),
        port
    );
    let slices = k.expect_json(&[
        "get",
        "endpointslices",
        "-n",
        "default",
        "-l",
        "kubernetes.io/service-name=kubernetes",
    ]);
    let slice = &slices["items"][0];
    assert_eq!(slice["endpoints"][0]["addresses"][0], advertised, "{slice}");
    assert_eq!(slice["addressType"], "IPv4");
    // kubectl checks the certificate against the name it is told the server has: the
    // advertised address verifies, another address does not.
    k.expect_ok(&["get", "ns", "default", "--tls-server-name", advertised]);
    let refused = k.expect_failure(&["get", "ns", "default", "--tls-server-name", "192.0.2.11"]);
    assert!(
        refused.contains("certificate is valid for") && refused.contains(advertised),
        "{refused}"
    );
}

/// The kube crate (rustls) reads the same kubeconfig: it trusts the CA, presents the admin
/// certificate, and lists, creates and watches over https.
#[tokio::test]
async fn the_kube_crate_works_with_the_written_kubeconfig() {
    use futures_util::StreamExt as _;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use kube::{Api, Client, Config};

    let server = tls_server();
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    assert_eq!(config.cluster_url.scheme_str(), Some("https"));
    let client = Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let listed = namespaces.list(&ListParams::default()).await.unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );
    let maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let version = maps
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = maps
        .watch(&WatchParams::default().timeout(20), &version)
        .await
        .unwrap()
        .boxed();
    let map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("from-kube".to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    maps.create(&PostParams::default(), &map).await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(15), events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Added(added) => {
            assert_eq!(added.metadata.name.as_deref(), Some("from-kube"));
        }
        other => panic!("expected the ConfigMap's ADDED event, got {other:?}"),
    }
}

/// A client certificate for `user` in `group` signed by `server`'s CA: (certificate, key), PEM.
fn signed_by_server_ca(server: &KapiServer, user: &str, group: &str) -> (String, String) {
    use rcgen::{CertificateParams, DnType, Issuer, KeyPair};
    let read = |name: &str| {
        std::fs::read_to_string(pki(server).join(name))
            .unwrap_or_else(|e| panic!("cannot read the server's {name}: {e}"))
    };
    let made = (|| {
        let issuer =
            Issuer::from_ca_cert_pem(&read("ca.crt"), KeyPair::from_pem(&read("ca.key"))?)?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, user);
        params
            .distinguished_name
            .push(DnType::OrganizationName, group);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok::<_, rcgen::Error>((cert.pem(), key.serialize_pem()))
    })();
    made.unwrap_or_else(|e| panic!("cannot make {user}'s certificate: {e}"))
}

/// Every route kind over TLS (`kapi_e2e::routes`), as the plain-HTTP walk of `access.rs` does
/// with tokens, here with what TLS brings: no client certificate is `system:anonymous` (403
/// but for health and version), a certificate of the server's CA is its common name (403 on
/// what the bootstrap policy does not grant), one of another CA is refused (401, upstream's
/// x509 authenticator), and the kubeconfig's admin certificate reaches everything.
#[test]
fn every_route_kind_over_tls_is_authenticated_and_authorized() {
    use kapi_e2e::routes::{Open, Route, every_route_kind};
    let dir = tempfile::tempdir().unwrap();
    let server = tls_server();
    let ca = pki(&server).join("ca.crt").display().to_string();
    let (cert, key) = signed_by_server_ca(&server, "carol", "devs");
    let (carol_cert, carol_key) = (dir.path().join("carol.crt"), dir.path().join("carol.key"));
    std::fs::write(&carol_cert, cert).unwrap();
    std::fs::write(&carol_key, key).unwrap();
    let (mallory_cert, mallory_key) = self_signed(dir.path(), "mallory");
    let carol = [
        "--cert".to_owned(),
        carol_cert.display().to_string(),
        "--key".to_owned(),
        carol_key.display().to_string(),
    ];
    let mallory = [
        "--cert".to_owned(),
        mallory_cert,
        "--key".to_owned(),
        mallory_key,
    ];
    let admin = admin_args(&pki(&server));
    let call = |credentials: &[String], route: &Route| -> (u16, String) {
        let mut args = vec!["--cacert", ca.as_str(), "-X", route.method, "-o", "-"];
        args.extend(credentials.iter().map(String::as_str));
        let body = route.body.as_ref().map(ToString::to_string);
        if let Some(body) = &body {
            args.extend([
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                body,
            ]);
        }
        args.extend(["-w", "\n%{http_code}"]);
        let out = curl_output(&server, &args, route.path);
        let (text, code) = out.rsplit_once('\n').unwrap_or(("", &out));
        let code = code.parse().unwrap_or_else(|e| {
            panic!(
                "{} {}: no status code ({e}): {out}",
                route.method, route.path
            )
        });
        (code, text.to_owned())
    };
    for route in every_route_kind() {
        let Route { method, path, .. } = route;
        let (code, text) = call(&mallory, &route);
        assert_eq!(
            code, 401,
            "{method} {path} with a foreign certificate: {text}"
        );

        let (code, text) = call(&[], &route);
        match route.open {
            Open::Everyone => assert_eq!(code, 200, "{method} {path} anonymously: {text}"),
            _ => {
                assert_eq!(code, 403, "{method} {path} anonymously: {text}");
                assert!(
                    text.contains(r#"User \"system:anonymous\" cannot"#),
                    "{text}"
                );
            }
        }

        let (code, text) = call(&carol, &route);
        match route.open {
            Open::Everyone => assert_eq!(code, 200, "{method} {path} as carol: {text}"),
            Open::Authenticated => assert!(
                code == 200 || code == 404,
                "{method} {path} as carol: {code} {text}"
            ),
            Open::SelfReview => assert_eq!(code, 201, "{method} {path} as carol: {text}"),
            Open::Privileged => {
                assert_eq!(code, 403, "{method} {path} as carol: {text}");
                assert!(text.contains(r#"User \"carol\" cannot"#), "{text}");
            }
        }

        let (code, text) = call(&admin, &route);
        assert!(
            code != 401 && code != 403 && code < 500,
            "{method} {path} as the admin: {code} {text}"
        );
    }
}

/// A TLS server whose `--token-auth-file` (written in `dir`) knows `alice-token` as alice
/// (uid 1001, groups dev and ops).
fn with_alice_token(dir: &Path) -> KapiServer {
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,1001,\"dev,ops\"\n")
        .unwrap_or_else(|e| panic!("cannot write the token file: {e}"));
    KapiServer::start(&ServerOptions {
        args: vec![format!("--token-auth-file={}", tokens.display())],
        ..ServerOptions::default().tls()
    })
    .unwrap_or_else(|e| panic!("the TLS server did not start: {e}"))
}

/// Users other than the admin through the kube crate: a client certificate of the server's CA
/// (its common name the user, its organization the group: `CommonNameUserConversion`) and a
/// bearer token of `--token-auth-file` are who RBAC judges (403 with upstream's message); an
/// unknown token is 401.
#[tokio::test]
async fn the_kube_crate_authenticates_certificates_and_tokens() {
    use base64::Engine as _;
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{ListParams, PostParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use kube::{Api, Client, Config};

    let dir = tempfile::tempdir().unwrap();
    let server = with_alice_token(dir.path());
    let (cert, key) = signed_by_server_ca(&server, "carol", "devs");
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let client_as = |user: serde_json::Value| {
        let text = std::fs::read_to_string(server.kubeconfig()).unwrap();
        let mut config: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        config["users"][0]["user"] = user;
        let kubeconfig: Kubeconfig = serde_json::from_value(config).unwrap();
        async move {
            let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
            Client::try_from(config).unwrap()
        }
    };
    let carol = client_as(serde_json::json!({
        "client-certificate-data": b64(&cert),
        "client-key-data": b64(&key),
    }))
    .await;
    let alice = client_as(serde_json::json!({"token": "alice-token"})).await;
    let stranger = client_as(serde_json::json!({"token": "not-a-token"})).await;

    let whoami = |client: Client| async move {
        let reviews: Api<SelfSubjectReview> = Api::all(client);
        let review = reviews
            .create(&PostParams::default(), &SelfSubjectReview::default())
            .await
            .unwrap();
        let info = review.status.unwrap().user_info.unwrap();
        (info.username.unwrap(), info.groups.unwrap_or_default())
    };
    assert_eq!(
        whoami(carol.clone()).await,
        (
            "carol".to_owned(),
            vec!["devs".to_owned(), "system:authenticated".to_owned()]
        )
    );
    assert_eq!(whoami(alice.clone()).await.0, "alice");
    for (client, user) in [(carol, "carol"), (alice, "alice")] {
        let pods: Api<Pod> = Api::namespaced(client, "default");
        match pods.list(&ListParams::default()).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 403);
                assert_eq!(
                    status.message,
                    format!(
                        r#"pods is forbidden: User "{user}" cannot list resource "pods" in API group "" in the namespace "default""#
                    )
                );
            }
            other => panic!("{user} listed pods: {other:?}"),
        }
    }
    let pods: Api<Pod> = Api::namespaced(stranger, "default");
    match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 401),
        other => panic!("an unknown token listed pods: {other:?}"),
    }
}

/// Who requests over TLS are: the kubeconfig's admin certificate is `kubernetes-admin` in
/// `system:masters`; bearer tokens of `--token-auth-file` are their users (`system:authenticated`
/// added); no credentials is `system:anonymous`, who may read health and version only; an
/// unknown token is 401, as kube-apiserver answers (`kubectl` prints "You must be logged in").
#[test]
fn users_over_tls_are_their_certificates_and_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let server = with_alice_token(dir.path());
    let admin = Kubectl::on_path(&server, dir.path());
    let whoami = ["auth", "whoami", "-o", "jsonpath={.status.userInfo}"];
    assert_eq!(
        admin.expect_ok(&whoami),
        r#"{"groups":["system:masters","system:authenticated"],"username":"kubernetes-admin"}"#
    );
    // The same cluster and CA with other credentials: a token, none, a wrong token.
    let alice = admin.as_user("alice", serde_json::json!({"token": "alice-token"}));
    assert_eq!(
        alice.expect_ok(&whoami),
        r#"{"groups":["dev","ops","system:authenticated"],"uid":"1001","username":"alice"}"#
    );
    let err = alice.expect_failure(&["get", "pods"]);
    assert!(
        err.contains(r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#),
        "{err}"
    );
    // Without credentials (kubectl would ask for a password: curl with the CA alone).
    let ca = pki(&server).join("ca.crt").display().to_string();
    let anonymous = |path: &str| curl(&server, &["--cacert", &ca, "-w", "%{http_code}"], path);
    assert_eq!(anonymous("/version").unwrap(), "200");
    assert_eq!(anonymous("/healthz").unwrap(), "200");
    assert_eq!(anonymous("/api/v1/namespaces").unwrap(), "403");
    assert_eq!(anonymous("/apis").unwrap(), "403");
    let wrong = admin.as_user("wrong", serde_json::json!({"token": "not-a-token"}));
    let err = wrong.expect_failure(&["get", "pods"]);
    assert!(err.contains("You must be logged in to the server"), "{err}");
}

/// The operator's certificate, key and client CA files are read again when they change, as
/// kube-apiserver's dynamic certificate controllers read them
/// (`staging/src/k8s.io/apiserver/pkg/server/dynamiccertificates`): connections after the
/// change get the new serving certificate and are judged by the new client CAs, with no
/// restart.
#[test]
fn changed_certificate_files_are_served_without_a_restart() {
    let first = tls_server();
    let second = tls_server();
    let (one, two) = (pki(&first), pki(&second));
    let dir = tempfile::tempdir().unwrap();
    let place = |from: &Path| {
        for (source, target) in [
            ("apiserver.crt", "serving.crt"),
            ("apiserver.key", "serving.key"),
            ("ca.crt", "client-ca.crt"),
        ] {
            std::fs::copy(from.join(source), dir.path().join(target)).unwrap();
        }
    };
    place(&one);
    let file = |name: &str| dir.path().join(name).display().to_string();
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--tls-cert-file={}", file("serving.crt")),
            format!("--tls-private-key-file={}", file("serving.key")),
            format!("--client-ca-file={}", file("client-ca.crt")),
        ],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let as_admin_of = |pki: &Path| {
        let admin = admin_args(pki);
        let args = [&strs(&admin)[..], &["-w", "%{http_code}"]].concat();
        curl(&server, &args, "/api/v1/namespaces")
    };
    assert_eq!(as_admin_of(&one).unwrap(), "200");
    assert!(
        as_admin_of(&two).is_err(),
        "the second CA is not trusted yet"
    );

    place(&two);
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        match as_admin_of(&two) {
            Ok(code) => {
                assert_eq!(code, "200");
                break;
            }
            Err(error) if std::time::Instant::now() > deadline => panic!("{error}"),
            Err(_) => std::thread::sleep(Duration::from_millis(300)),
        }
    }
    // The first server's CA no longer signs what is served.
    let error = as_admin_of(&one).unwrap_err();
    assert!(error.contains("certificate"), "{error}");
}

/// A self-signed certificate and key for `name`, made with openssl, in `dir`: (cert, key).
fn self_signed(dir: &Path, name: &str) -> (String, String) {
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "1", "-subj", &format!("/CN={name}")])
        .args(["-addext", &format!("subjectAltName=DNS:{name}")])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(status.status.success(), "{status:?}");
    (cert.display().to_string(), key.display().to_string())
}

/// `--tls-sni-cert-key` (k8s.io/apiserver `pkg/server/options/serving.go`,
/// `dynamiccertificates/named_certificates.go`): a client asking for a name the pair serves
/// gets its certificate, by the certificate's own names or the names given with it; any other
/// client the default serving certificate.
#[test]
fn sni_certificates_are_served_by_the_name_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let (own_cert, own_key) = self_signed(dir.path(), "api.example.test");
    let (given_cert, given_key) = self_signed(dir.path(), "other.example.test");
    let server = KapiServer::start(&ServerOptions {
        args: vec![
            format!("--tls-sni-cert-key={own_cert},{own_key}"),
            format!("--tls-sni-cert-key={given_cert},{given_key}:*.apps.example.test"),
        ],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let addr = server.url().trim_start_matches("https://").to_owned();
    // The subject of the certificate served to a client asking for `name` (none: no SNI).
    let served = |name: Option<&str>| {
        let mut s_client = Command::new("openssl");
        s_client.args(["s_client", "-connect", &addr]);
        match name {
            Some(name) => s_client.args(["-servername", name]),
            None => s_client.arg("-noservername"),
        };
        let output = s_client
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.lines()
            .find_map(|line| line.strip_prefix("subject="))
            .map(|subject| subject.replace(' ', ""))
            .unwrap_or_else(|| panic!("no certificate served to {name:?}: {text}"))
    };
    assert_eq!(served(Some("api.example.test")), "CN=api.example.test");
    assert_eq!(served(Some("API.example.test")), "CN=api.example.test");
    assert_eq!(
        served(Some("web.apps.example.test")),
        "CN=other.example.test"
    );
    // The given pair serves the names given, not its own; other names get the default.
    // The generated serving certificate's subject is `CN=kube-apiserver`, as kubeadm's.
    let default = served(None);
    assert_eq!(default, "CN=kube-apiserver");
    assert_eq!(served(Some("other.example.test")), default);
    assert_eq!(served(Some("a.web.apps.example.test")), default);
    // A client that checks the name accepts the pair's certificate for it.
    let port = addr.rsplit(':').next().unwrap();
    let output = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "20",
        ])
        .args(["--resolve", &format!("api.example.test:{port}:127.0.0.1")])
        .args(["--cacert", &own_cert])
        .arg(format!("https://api.example.test:{port}/version"))
        .output()
        .unwrap();
    // `/version` is public (system:public-info-viewer).
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "200",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `--tls-min-version` and `--tls-cipher-suites` take Go's names (k8s.io/component-base
/// `cli/flag/ciphersuites_flag.go`): TLS 1.3 only refuses a TLS 1.2 client; a suite list
/// restricts TLS 1.2 to those suites; unknown names stop the server with upstream's message.
#[test]
fn tls_versions_and_cipher_suites_are_as_configured() {
    let tls13 = KapiServer::start(&ServerOptions {
        args: vec!["--tls-min-version=VersionTLS13".to_owned()],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let ca = pki(&tls13).join("ca.crt").display().to_string();
    let code = ["--cacert", ca.as_str(), "-w", "%{http_code}"];
    assert_eq!(
        curl(&tls13, &[&code[..], &["--tlsv1.3"]].concat(), "/version").unwrap(),
        "200"
    );
    let error = curl(
        &tls13,
        &[&code[..], &["--tls-max", "1.2"]].concat(),
        "/version",
    )
    .unwrap_err();
    assert!(error.contains("alert") || error.contains("SSL"), "{error}");

    // The generated serving key is ECDSA: of its suites, only AES-256 is allowed.
    let restricted = KapiServer::start(&ServerOptions {
        args: vec![
            "--tls-cipher-suites=TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_RSA_WITH_AES_128_CBC_SHA"
                .to_owned(),
        ],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let ca = pki(&restricted).join("ca.crt").display().to_string();
    let tls12 = [
        "--cacert",
        ca.as_str(),
        "-w",
        "%{http_code}",
        "--tls-max",
        "1.2",
    ];
    let with = |cipher: &str| {
        curl(
            &restricted,
            &[&tls12[..], &["--ciphers", cipher]].concat(),
            "/version",
        )
    };
    assert_eq!(with("ECDHE-ECDSA-AES256-GCM-SHA384").unwrap(), "200");
    assert!(with("ECDHE-ECDSA-AES128-GCM-SHA256").is_err());
    assert!(with("ECDHE-ECDSA-CHACHA20-POLY1305").is_err());

    let dir = tempfile::tempdir().unwrap();
    for (flag, message) in [
        ("--tls-min-version=TLS13", "unknown tls version \"TLS13\""),
        (
            "--tls-cipher-suites=TLS_NOT_A_SUITE",
            "Cipher suite TLS_NOT_A_SUITE not supported or doesn't exist",
        ),
    ] {
        let stderr = expect_serve_refusal(dir.path(), flag).unwrap();
        assert!(stderr.contains(message), "{stderr}");
    }
}
