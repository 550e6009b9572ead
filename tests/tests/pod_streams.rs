//! The subresources that reach past the API server, driven by kubectl and the official Python
//! client against a fake kubelet the test starts (HTTPS on 127.0.0.1) and a plain HTTP backend:
//! a pod's `log` (`kubectl logs`, `--tail`, `-c`, `-f` with lines arriving over time), `exec`
//! (`kubectl exec`, over kubectl's WebSocket `v5.channel.k8s.io`, and a raw SPDY upgrade
//! round trip), a Service's `proxy` to an endpoint, the admission of `exec` and the proxies as
//! a CONNECT of their options, and upstream's refusals. Upstream's
//! behaviour comes from `pkg/registry/core/pod/rest/log.go`, `subresources.go` and
//! `pkg/registry/core/pod/strategy.go` (`LogLocation`, `streamLocation`,
//! `validateContainer`, `ResourceLocation`), `pkg/registry/core/service/storage/storage.go`
//! (`ResourceLocation`), `pkg/registry/core/node/strategy.go` (`isProxyableHostname`),
//! `pkg/kubelet/client/kubelet_client.go` and `ValidatePodLogOptions`.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{any, get};
use base64::Engine as _;
use hyper_util::rt::TokioIo;
use kapi_e2e::https::HttpsServer;
use kapi_e2e::{KapiServer, Kubectl, ServerOptions, expect_python_ok, kubectl_binaries_since};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// What the fake kubelet was asked, one `path?query` per request.
type Seen = Arc<Mutex<Vec<String>>>;

/// The fake kubelet: `/containerLogs/<ns>/<pod>/<container>` answers three lines (the last
/// `tailLines` of them; with `follow=true` a fourth a second and a half later), a 400 for the
/// container `crashing`; `/exec/...` takes a WebSocket (answering the command on stdout, then
/// success on the error channel) or a SPDY upgrade (echoing what it reads).
fn fake_kubelet(seen: &Seen) -> HttpsServer {
    let router = Router::new()
        .route("/containerLogs/{ns}/{pod}/{container}", get(logs))
        .route("/exec/{ns}/{pod}/{container}", any(exec))
        .route("/attach/{ns}/{pod}/{container}", any(exec))
        .with_state(Arc::clone(seen));
    HttpsServer::start(router).unwrap()
}

fn record(seen: &Seen, request_uri: &axum::http::Uri) {
    seen.lock().unwrap().push(request_uri.to_string());
}

async fn logs(
    State(seen): State<Seen>,
    Path((_, _, container)): Path<(String, String, String)>,
    request: Request,
) -> Response {
    record(&seen, request.uri());
    if container == "crashing" {
        let mut answer = Response::new(Body::from(format!(
            "container \"{container}\" in pod is waiting to start: ContainerCreating"
        )));
        *answer.status_mut() = StatusCode::BAD_REQUEST;
        return answer;
    }
    let query = request.uri().query().unwrap_or_default().to_owned();
    let lines: Vec<String> = (1..=3).map(|i| format!("{container} line {i}\n")).collect();
    let tail = query
        .split('&')
        .find_map(|p| p.strip_prefix("tailLines="))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(lines.len());
    let shown = lines[lines.len() - tail.min(lines.len())..].concat();
    if !query.split('&').any(|p| p == "follow=true") {
        return Response::new(Body::from(shown));
    }
    let later = format!("{container} later\n");
    let chunks = futures_util::stream::unfold(0, move |step| {
        let (shown, later) = (shown.clone(), later.clone());
        async move {
            match step {
                0 => Some((Ok::<_, std::io::Error>(shown), 1)),
                1 => {
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    Some((Ok(later), 2))
                }
                _ => None,
            }
        }
    });
    Response::new(Body::from_stream(chunks))
}

/// RFC 6455's `Sec-WebSocket-Accept` for `key`.
fn websocket_accept(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// A server's unmasked binary WebSocket frame on `channel` (the first payload byte of the
/// `channel.k8s.io` protocols).
fn frame(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut payload = vec![channel];
    payload.extend_from_slice(data);
    let mut framed = vec![0x82];
    match u16::try_from(payload.len()) {
        Ok(len) if len < 126 => framed.push(u8::try_from(len).unwrap()),
        Ok(len) => {
            framed.push(126);
            framed.extend_from_slice(&len.to_be_bytes());
        }
        Err(_) => panic!("a frame this test never sends"),
    }
    framed.extend_from_slice(&payload);
    framed
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

async fn exec(State(seen): State<Seen>, mut request: Request) -> Response {
    record(&seen, request.uri());
    let headers = request.headers().clone();
    let Some(upgrade) = request
        .extensions_mut()
        .remove::<hyper::upgrade::OnUpgrade>()
    else {
        return Response::new(Body::from("no upgrade"));
    };
    // The commands of this test need no percent-decoding.
    let command: Vec<String> = request
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.strip_prefix("command="))
        .map(|word| word.replace('+', " "))
        .collect();
    let mut answer = Response::new(Body::empty());
    *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let out = answer.headers_mut();
    out.insert(header::CONNECTION, "Upgrade".parse().unwrap());
    if header_text(&headers, "upgrade").eq_ignore_ascii_case("websocket") {
        let accept = websocket_accept(header_text(&headers, "sec-websocket-key"));
        out.insert(header::UPGRADE, "websocket".parse().unwrap());
        out.insert("sec-websocket-accept", accept.parse().unwrap());
        out.insert(
            "sec-websocket-protocol",
            "v5.channel.k8s.io".parse().unwrap(),
        );
        tokio::spawn(async move {
            let Ok(upgraded) = upgrade.await else { return };
            let mut io = TokioIo::new(upgraded);
            // An attach has no command: it is told it attached.
            let stdout = match command.is_empty() {
                true => "attached\n".to_owned(),
                false => format!("{}\n", command.join(" ")),
            };
            let status = br#"{"metadata":{},"status":"Success"}"#;
            let mut bytes = frame(1, stdout.as_bytes());
            bytes.extend(frame(3, status));
            // A close frame, code 1000.
            bytes.extend([0x88, 0x02, 0x03, 0xe8]);
            let _ = io.write_all(&bytes).await;
            let mut rest = [0u8; 256];
            let _ = tokio::time::timeout(Duration::from_secs(2), io.read(&mut rest)).await;
        });
    } else {
        out.insert(header::UPGRADE, "SPDY/3.1".parse().unwrap());
        out.insert(
            "x-stream-protocol-version",
            "v4.channel.k8s.io".parse().unwrap(),
        );
        tokio::spawn(async move {
            let Ok(upgraded) = upgrade.await else { return };
            let mut io = TokioIo::new(upgraded);
            let mut buffer = [0u8; 1024];
            while let Ok(Ok(read)) =
                tokio::time::timeout(Duration::from_secs(10), io.read(&mut buffer)).await
            {
                if read == 0 || io.write_all(&buffer[..read]).await.is_err() {
                    break;
                }
            }
        });
    }
    answer
}

/// A plain HTTP backend answering `<method> <path?query> <body>`.
fn echo_backend() -> HttpsServer {
    let router = Router::new().fallback(|request: Request| async move {
        let (parts, body) = request.into_parts();
        let body = axum::body::to_bytes(body, 1 << 20)
            .await
            .unwrap_or_default();
        format!(
            "{} {} {}",
            parts.method,
            parts.uri,
            String::from_utf8_lossy(&body)
        )
    });
    HttpsServer::plain(router).unwrap()
}

/// `node-1`, whose kubelet is `kubelet`: an InternalIP of 127.0.0.1 and the kubelet's port in
/// its status, as a kubelet registers them.
fn register_node(k: &Kubectl<'_>, kubelet: SocketAddr) {
    let node = k.file(
        "node.json",
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}}).to_string(),
    );
    k.expect_ok(&["create", "-f", node.to_str().unwrap()]);
    let status = json!({"status": {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port()}}}});
    k.expect_ok(&[
        "patch",
        "node",
        "node-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
}

/// Creates pod `name` with `containers` (and `init` containers), on `node` if given.
fn create_pod(k: &Kubectl<'_>, name: &str, containers: &[&str], init: &[&str], node: Option<&str>) {
    let list = |names: &[&str]| -> Vec<Value> {
        names
            .iter()
            .map(|n| json!({"name": n, "image": "nginx"}))
            .collect()
    };
    let mut spec = json!({"containers": list(containers)});
    if !init.is_empty() {
        spec["initContainers"] = json!(list(init));
    }
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec});
    let file = k.file(&format!("{name}.json"), &pod.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
}

/// One HTTP/1.0 exchange with the server (the answer ends with the connection): status code,
/// head and body.
fn raw_request(server: &KapiServer, request: &str) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(answer.len());
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let body = answer.get(split + 4..).unwrap_or_default().to_vec();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head, body)
}

fn seen_since(seen: &Seen, from: usize) -> Vec<String> {
    seen.lock().unwrap()[from..].to_vec()
}

#[test]
fn logs_are_read_from_the_pods_kubelet() {
    let seen = Seen::default();
    let kubelet = fake_kubelet(&seen);
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    register_node(&k, kubelet.addr());
    create_pod(&k, "web", &["app"], &[], Some("node-1"));
    create_pod(&k, "two", &["app", "sidecar"], &["setup"], Some("node-1"));
    create_pod(&k, "pending", &["app"], &[], None);
    create_pod(&k, "waiting", &["crashing"], &[], Some("node-1"));

    assert_eq!(
        k.expect_ok(&["logs", "web"]),
        "app line 1\napp line 2\napp line 3\n"
    );
    // LogLocation's query to the kubelet, keys sorted as url.Values encodes them.
    let before = seen.lock().unwrap().len();
    assert_eq!(
        k.expect_ok(&["logs", "web", "--tail=2", "--timestamps"]),
        "app line 2\napp line 3\n"
    );
    assert_eq!(
        seen_since(&seen, before),
        ["/containerLogs/default/web/app?tailLines=2&timestamps=true"]
    );
    assert_eq!(
        k.expect_ok(&["logs", "two", "-c", "sidecar", "--tail=1"]),
        "sidecar line 3\n"
    );
    assert_eq!(
        k.expect_ok(&["logs", "two", "-c", "setup", "--tail=1"]),
        "setup line 3\n"
    );

    // validateContainer: several containers and none named, or one the pod lacks.
    let refused = k.expect_failure(&["get", "--raw", "/api/v1/namespaces/default/pods/two/log"]);
    assert!(
        refused.contains(
            "a container name must be specified for pod two, choose one of: [setup app sidecar]"
        ),
        "{refused}"
    );
    let refused = k.expect_failure(&["logs", "web", "-c", "db"]);
    assert!(
        refused.contains("container db is not valid for pod web"),
        "{refused}"
    );

    // ValidatePodLogOptions: 422 with its causes, before the pod is even read.
    let refused = k.expect_failure(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/log?tailLines=-1&limitBytes=0",
    ]);
    // kubectl prints the causes of the Status, one per line.
    for cause in [
        "The PodLogOptions \"web\" is invalid:",
        "tailLines: Invalid value: -1: must be greater than or equal to 0",
        "limitBytes: Invalid value: 0: must be greater than 0",
    ] {
        assert!(refused.contains(cause), "{refused}");
    }
    let refused = k.expect_failure(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/log?sinceSeconds=10&sinceTime=2024-01-01T00:00:00Z",
    ]);
    assert!(
        refused.contains("at most one of `sinceTime` or `sinceSeconds` may be specified"),
        "{refused}"
    );

    // A pod on no node has no log yet: StreamObject's 204 without a body.
    assert_eq!(k.expect_ok(&["logs", "pending"]), "");
    let (code, _, body) = raw_request(
        &server,
        "GET /api/v1/namespaces/default/pods/pending/log HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n",
    );
    assert_eq!((code, body.len()), (204, 0));

    // The kubelet's 400 is the answer's, as GenericHttpResponseChecker passes it on.
    let refused = k.expect_failure(&["logs", "waiting"]);
    assert!(
        refused.contains("container \"crashing\" in pod is waiting to start: ContainerCreating"),
        "{refused}"
    );

    // A kubelet nobody answers for: Go's client error, `Get "<url>": <why>`. A node without
    // addresses: upstream's error, which is no API status.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let node = |name: &str, status: Value| {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}});
        let file = k.file(&format!("{name}.json"), &node.to_string());
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
        let status = json!({ "status": status });
        k.expect_ok(&[
            "patch",
            "node",
            name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ]);
    };
    node(
        "gone",
        json!({"addresses": [{"type": "Hostname", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": closed_port}}}),
    );
    // Registered by hand, with no status: no address at all.
    let bare = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}});
    let file = k.file("bare.json", &bare.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    create_pod(&k, "orphan", &["app"], &[], Some("gone"));
    create_pod(&k, "stranded", &["app"], &[], Some("bare"));
    let refused = k.expect_failure(&["logs", "orphan"]);
    let expected = format!(
        "Get \"https://127.0.0.1:{closed_port}/containerLogs/default/orphan/app\": dial tcp 127.0.0.1:{closed_port}: connect: connection refused"
    );
    assert!(refused.contains(&expected), "{refused}");
    let refused = k.expect_failure(&["logs", "stranded"]);
    assert!(
        refused.contains("no preferred addresses found; known addresses: []"),
        "{refused}"
    );

    // A missing pod is the pods' 404.
    let refused = k.expect_failure(&["logs", "nowhere"]);
    assert!(refused.contains("pods \"nowhere\" not found"), "{refused}");

    // Measured as upstream measures it: CONNECT (`LogREST.OverrideMetricsVerb`).
    // (Read directly: kubectl's output here is larger than a pipe holds before it is read.)
    let (_, _, metrics) = raw_request(&server, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("apiserver_request_total{")
                && line.contains("verb=\"CONNECT\"")
                && line.contains("subresource=\"log\"")),
        "{metrics}"
    );

    // The official Python client's read_namespaced_pod_log.
    expect_python_ok(
        &server,
        r#"
import sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
# This client (36.x) deserializes a `str` answer without decoding it, against any server
# (kube-apiserver's log is `text/plain` too): the raw answer is what it read.
def log(name, **options):
    answer = v1.read_namespaced_pod_log(name, "default", _preload_content=False, **options)
    return answer.data.decode()
got = log("web")
assert got == "app line 1\napp line 2\napp line 3\n", repr(got)
got = log("two", container="app", tail_lines=1)
assert got == "app line 3\n", repr(got)
try:
    v1.read_namespaced_pod_log("web", "default", since_seconds=0)
    raise SystemExit("a zero sinceSeconds was accepted")
except client.exceptions.ApiException as e:
    body = e.body.decode() if isinstance(e.body, bytes) else e.body
    assert e.status == 422, e.status
    assert "sinceSeconds: Invalid value: 0: must be greater than 0" in body, body
print("ok")
"#,
        "1.36",
    );
}

#[test]
fn a_followed_log_streams_lines_as_the_kubelet_writes_them() {
    let seen = Seen::default();
    let kubelet = fake_kubelet(&seen);
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    register_node(&k, kubelet.addr());
    create_pod(&k, "web", &["app"], &[], Some("node-1"));
    let (mut child, lines) = k.spawn_lines(&["logs", "-f", "web"]);
    let wait = |what: &str| {
        let line = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{what}: {e}\nserver stderr:\n{}", server.stderr()));
        (line, Instant::now())
    };
    let (first, _) = wait("the first line");
    let (_, _) = wait("the second line");
    let (third, shown) = wait("the third line");
    let (later, arrived) = wait("the line written later");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        [first.as_str(), third.as_str(), later.as_str()],
        ["app line 1", "app line 3", "app later"]
    );
    // The first lines were shown while the kubelet still held the last one back: the body
    // was streamed through, not gathered first.
    assert!(
        arrived.duration_since(shown) >= Duration::from_millis(1000),
        "the lines arrived together: {:?}",
        arrived.duration_since(shown)
    );
    assert!(
        seen.lock()
            .unwrap()
            .contains(&"/containerLogs/default/web/app?follow=true".to_owned())
    );
}

#[test]
fn exec_tunnels_the_upgraded_connection_to_the_kubelet() {
    let seen = Seen::default();
    let kubelet = fake_kubelet(&seen);
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    register_node(&k, kubelet.addr());
    create_pod(&k, "web", &["app"], &[], Some("node-1"));
    create_pod(&k, "pending", &["app"], &[], None);

    // kubectl 1.30 and newer speak WebSocket (`v5.channel.k8s.io`) to the server first; the
    // fake kubelet answers nothing else to them, so older pinned releases (SPDY) are left out.
    let mut binaries = kubectl_binaries_since(30);
    binaries.push(k.binary().to_path_buf());
    for binary in binaries {
        let each = Kubectl::new(&binary, &server, dir.path());
        let before = seen.lock().unwrap().len();
        let printed = each.expect_ok(&["exec", "web", "--", "echo", "hi", "there"]);
        assert_eq!(printed, "echo hi there\n", "{}", binary.display());
        // streamParams' query to the kubelet: the command, then `error` and `output` for the
        // stderr and stdout kubectl asked for.
        assert_eq!(
            seen_since(&seen, before),
            ["/exec/default/web/app?command=echo&command=hi&command=there&error=1&output=1"]
        );
    }

    // `kubectl attach` takes the same path to the kubelet's `/attach`.
    let before = seen.lock().unwrap().len();
    assert_eq!(k.expect_ok(&["attach", "web", "-c", "app"]), "attached\n");
    assert_eq!(
        seen_since(&seen, before),
        ["/attach/default/web/app?error=1&output=1"]
    );

    // A SPDY upgrade (kubectl's fallback, POST) tunnelled byte for byte both ways.
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
        .write_all(
            b"POST /api/v1/namespaces/default/pods/web/exec?command=cat&stdin=true&stdout=true HTTP/1.1\r\n\
              Host: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
              X-Stream-Protocol-Version: v4.channel.k8s.io\r\nContent-Length: 0\r\n\r\n",
        )
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "the answer ended early");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("upgrade: spdy/3.1"), "{head}");
    assert!(
        head.contains("x-stream-protocol-version: v4.channel.k8s.io"),
        "{head}"
    );
    for message in [&b"ping"[..], b"\x00\x01binary\xff"] {
        stream.write_all(message).unwrap();
        let mut echoed = vec![0u8; message.len()];
        stream.read_exact(&mut echoed).unwrap();
        assert_eq!(echoed, message);
    }
    drop(stream);

    // Upstream's refusals: no upgrade asked for, no node, several containers.
    let (code, _, body) = raw_request(
        &server,
        "POST /api/v1/namespaces/default/pods/web/exec?command=ls HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n",
    );
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (code, &status["message"]),
        (400, &json!("Upgrade request required"))
    );
    let refused = k.expect_failure(&["exec", "pending", "--", "ls"]);
    assert!(
        refused.contains("pod pending does not have a host assigned"),
        "{refused}"
    );
    let refused = k.expect_failure(&["exec", "web", "-c", "db", "--", "ls"]);
    assert!(
        refused.contains("container db is not valid for pod web"),
        "{refused}"
    );
}

/// The pod `web` on `node-1` at 127.0.0.1, and the Service `web` whose one endpoint is that
/// pod serving on `port` (the test's backend).
fn serve_web_on(k: &Kubectl<'_>, port: u16) {
    create_pod(k, "web", &["app"], &[], Some("node-1"));
    k.expect_ok(&[
        "patch",
        "pod",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}]}}"#,
    ]);
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
    // The only address a test may serve on is loopback, which upstream's Endpoints validation
    // (`ValidateNonSpecialIP`) refuses and kapi does not check yet; the proxy's own rules
    // (the address must be its target pod's) are upstream's.
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1",
            "targetRef": {"kind": "Pod", "name": "web", "namespace": "default"}}],
            "ports": [{"port": port}]}]});
    for (name, object) in [("svc", &service), ("eps", &endpoints)] {
        let file = k.file(&format!("{name}.json"), &object.to_string());
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    }
}

#[test]
fn a_services_proxy_reaches_a_ready_endpoint() {
    let backend = echo_backend();
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    serve_web_on(&k, backend.addr().port());
    let lonely = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lonely"},
        "spec": {"ports": [{"port": 80}]}});
    let file = k.file("lonely.json", &lonely.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    let answer = k.expect_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web:80/proxy/greet/?who=kapi",
    ]);
    assert_eq!(answer, "GET /greet/?who=kapi ");
    let answer = k.expect_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web/proxy/a/../b",
    ]);
    assert_eq!(answer, "GET /b ");
    let body = k.file("body.txt", "hello");
    let answer = k.expect_ok(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/services/http:web:80/proxy/post",
        "-f",
        body.to_str().unwrap(),
    ]);
    assert_eq!(answer, "POST /post hello");
    // proxyRedirectsforRootPath: `.../proxy` without a path moves under `.../proxy/`.
    let (code, head, _) = raw_request(
        &server,
        "GET /api/v1/namespaces/default/services/web/proxy?x=1 HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n",
    );
    assert_eq!(code, 301, "{head}");
    assert!(
        head.contains("location: /api/v1/namespaces/default/services/web/proxy/?x=1"),
        "{head}"
    );

    // Upstream's refusals.
    let get_raw = |path: &str| k.expect_failure(&["get", "--raw", path]);
    let refused = get_raw("/api/v1/namespaces/default/services/web:81/proxy/");
    assert!(
        refused.contains("no service port 81 found for service \"web\""),
        "{refused}"
    );
    let refused = get_raw("/api/v1/namespaces/default/services/lonely/proxy/");
    assert!(
        refused.contains("endpoints \"lonely\" not found"),
        "{refused}"
    );
    let empty = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "lonely"}});
    let file = k.file("empty.json", &empty.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    let refused = get_raw("/api/v1/namespaces/default/services/lonely/proxy/");
    assert!(
        refused.contains("no endpoints available for service \"lonely\""),
        "{refused}"
    );
    // A pod's and a node's proxy go only to global unicast addresses.
    let refused = get_raw("/api/v1/namespaces/default/pods/web:8080/proxy/");
    assert!(refused.contains("address not allowed"), "{refused}");
    register_node(&k, backend.addr());
    let refused = get_raw("/api/v1/nodes/node-1/proxy/healthz");
    assert!(refused.contains("address not allowed"), "{refused}");
}

#[test]
fn discovery_lists_the_subresources_with_their_verbs() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    let legacy: Value = serde_json::from_str(&k.expect_ok(&["get", "--raw", "/api/v1"])).unwrap();
    let entry = |name: &str| {
        legacy["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} is not listed"))
    };
    for (name, kind, verbs) in [
        ("pods/attach", "PodAttachOptions", json!(["create", "get"])),
        ("pods/exec", "PodExecOptions", json!(["create", "get"])),
        ("pods/log", "Pod", json!(["get"])),
        (
            "pods/portforward",
            "PodPortForwardOptions",
            json!(["create", "get"]),
        ),
        (
            "pods/proxy",
            "PodProxyOptions",
            json!(["create", "delete", "get", "patch", "update"]),
        ),
        (
            "services/proxy",
            "ServiceProxyOptions",
            json!(["create", "delete", "get", "patch", "update"]),
        ),
        (
            "nodes/proxy",
            "NodeProxyOptions",
            json!(["create", "delete", "get", "patch", "update"]),
        ),
    ] {
        let found = entry(name);
        assert_eq!(
            (&found["kind"], &found["verbs"]),
            (&json!(kind), &verbs),
            "{name}"
        );
    }
    let (code, _, body) = raw_request(
        &server,
        "GET /api HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList\r\n\r\n",
    );
    assert_eq!(code, 200);
    let aggregated: Value = serde_json::from_slice(&body).unwrap();
    let pods = aggregated["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .cloned()
        .unwrap();
    let exec = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subresource"] == "exec")
        .cloned()
        .unwrap();
    assert_eq!(exec["verbs"], json!(["create", "get"]));
    assert_eq!(exec["responseKind"]["kind"], "PodExecOptions");
}

/// A role binding `user` to `verbs` on `pods/exec` (and `get` on pods, which kubectl reads
/// first).
fn grant_exec(k: &Kubectl<'_>, user: &str, verbs: &[&str]) {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": user},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                  {"apiGroups": [""], "resources": ["pods/exec"], "verbs": verbs}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]});
    for (what, object) in [("role", role), ("binding", binding)] {
        let file = k.file(&format!("{user}-{what}.json"), &object.to_string());
        k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    }
}

#[test]
fn a_websocket_exec_needs_create_from_1_35() {
    let seen = Seen::default();
    let kubelet = fake_kubelet(&seen);
    for (release, get_only_reaches_the_kubelet) in [("1.34", true), ("1.36", false)] {
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("tokens.csv");
        std::fs::write(&tokens, "alice-token,alice,1001\nbob-token,bob,1002\n").unwrap();
        let server = KapiServer::start(&ServerOptions {
            args: vec![format!("--token-auth-file={}", tokens.display())],
            ..ServerOptions::release(release).tls()
        })
        .unwrap();
        let admin = Kubectl::on_path(&server, dir.path());
        register_node(&admin, kubelet.addr());
        create_pod(&admin, "web", &["app"], &[], Some("node-1"));
        grant_exec(&admin, "alice", &["get"]);
        grant_exec(&admin, "bob", &["get", "create"]);
        let alice = admin.as_user("alice", json!({"token": "alice-token"}));
        let bob = admin.as_user("bob", json!({"token": "bob-token"}));

        // AuthorizePodWebsocketUpgradeCreatePermission (beta, on from 1.35): the WebSocket's
        // GET, allowed as `get`, is refused without `create`; kubectl's SPDY fallback (a POST)
        // is refused by the `create` check of every request.
        let before = seen.lock().unwrap().len();
        let answer = alice.run(&["exec", "web", "--", "echo", "alice"]);
        let reached = seen_since(&seen, before);
        assert_eq!(
            (answer.status.success(), !reached.is_empty()),
            (get_only_reaches_the_kubelet, get_only_reaches_the_kubelet),
            "{release}: {}{reached:?}",
            String::from_utf8_lossy(&answer.stderr)
        );
        if !get_only_reaches_the_kubelet {
            let refused = String::from_utf8_lossy(&answer.stderr).into_owned();
            assert!(refused.contains("forbidden"), "{refused}");
        }
        assert_eq!(
            bob.expect_ok(&["exec", "web", "--", "echo", "bob"]),
            "echo bob\n"
        );
    }
}

#[test]
fn the_kubelets_certificate_is_verified_against_the_given_authority() {
    let seen = Seen::default();
    let kubelet = fake_kubelet(&seen);
    let stranger = fake_kubelet(&seen);
    for (ca, verified) in [(kubelet.ca_pem(), true), (stranger.ca_pem(), false)] {
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("kubelet-ca.crt");
        std::fs::write(&ca_file, ca).unwrap();
        let server = KapiServer::start(&ServerOptions {
            args: vec![format!(
                "--kubelet-certificate-authority={}",
                ca_file.display()
            )],
            ..ServerOptions::default()
        })
        .unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        register_node(&k, kubelet.addr());
        create_pod(&k, "web", &["app"], &[], Some("node-1"));
        if verified {
            assert_eq!(k.expect_ok(&["logs", "web", "--tail=1"]), "app line 3\n");
        } else {
            // Go's client error: `Get "<url>": <why>`.
            let refused = k.expect_failure(&["logs", "web"]);
            let url = format!(
                "Get \"https://{}/containerLogs/default/web/app\": tls:",
                kubelet.addr()
            );
            assert!(refused.contains(&url), "{refused}");
        }
    }
}

/// Every AdmissionReview a CONNECT webhook was sent, with the hook (`mutate` or `validate`).
type Reviews = Arc<Mutex<Vec<(String, Value)>>>;

/// A webhook's answer to the options of a CONNECT.
enum Verdict {
    Allow,
    /// Allowed, with this JSON patch of the options.
    Patch(Value),
    /// Denied (403) with this message.
    Deny(&'static str),
}

/// Starts webhooks for CONNECTs and configures them: `rewrite.kapi.test` (configuration
/// `<prefix>-mutator`) on the `mutated` resources and `guard.kapi.test` (`<prefix>-guard`) on
/// the `validated` ones, each answering as `judge(hook, options)` says. Keep the server
/// while the webhooks are wanted; the reviews they were sent are kept in order.
fn connect_webhooks(
    k: &Kubectl<'_>,
    prefix: &str,
    mutated: &[&str],
    validated: &[&str],
    judge: fn(&str, &Value) -> Verdict,
) -> (HttpsServer, Reviews) {
    let reviews = Reviews::default();
    let kept = Arc::clone(&reviews);
    let router = Router::new().route(
        "/{hook}",
        axum::routing::post(move |Path(hook): Path<String>, body: axum::body::Bytes| {
            let kept = Arc::clone(&kept);
            async move {
                let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                kept.lock().unwrap().push((hook.clone(), review.clone()));
                let request = &review["request"];
                let mut response = json!({"uid": request["uid"], "allowed": true});
                match judge(&hook, &request["object"]) {
                    Verdict::Allow => {}
                    Verdict::Patch(patch) => {
                        response["patchType"] = json!("JSONPatch");
                        response["patch"] = json!(
                            base64::engine::general_purpose::STANDARD.encode(patch.to_string())
                        );
                    }
                    Verdict::Deny(message) => {
                        response["allowed"] = json!(false);
                        response["status"] = json!({"code": 403, "message": message});
                    }
                }
                axum::Json(json!({
                    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "response": response,
                }))
            }
        }),
    );
    let hooks = HttpsServer::start(router).unwrap();
    let ca = base64::engine::general_purpose::STANDARD.encode(hooks.ca_pem());
    let hook = |name: &str, path: &str, resources: &[&str]| {
        json!({
            "name": name,
            "clientConfig": {"url": format!("{}/{path}", hooks.url()), "caBundle": ca},
            "rules": [{"operations": ["CONNECT"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": resources}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    };
    let configurations = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": format!("{prefix}-mutator")},
            "webhooks": [hook("rewrite.kapi.test", "mutate", mutated)]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": format!("{prefix}-guard")},
            "webhooks": [hook("guard.kapi.test", "validate", validated)]},
    ]});
    let file = k.file(&format!("{prefix}-hooks.json"), &configurations.to_string());
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
    (hooks, reviews)
}

/// A CONNECT is admitted before it connects, as upstream's `ConnectResource` admits it
/// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`): webhooks whose rules name
/// `CONNECT` on `pods/exec` are sent the exec's options (`PodExecOptions`, the review's `kind`),
/// a mutating webhook's patch changes what the kubelet is asked, and a validating webhook's
/// denial refuses the exec with upstream's message.
#[test]
fn exec_is_admitted_as_a_connect_of_its_options() {
    let seen = Seen::default();
    let kubelet = fake_kubelet(&seen);
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    register_node(&k, kubelet.addr());
    create_pod(&k, "web", &["app"], &[], Some("node-1"));

    let (_hooks, reviews) = connect_webhooks(
        &k,
        "connect",
        &["pods/exec"],
        &["pods/exec"],
        |hook, options| {
            let command = &options["command"];
            match hook {
                "mutate" if command[0] == "whoami" => Verdict::Patch(
                    json!([{"op": "replace", "path": "/command/0", "value": "echo"}]),
                ),
                "validate" if command[0] == "rm" => Verdict::Deny("no rm here"),
                _ => Verdict::Allow,
            }
        },
    );

    let before = seen.lock().unwrap().len();
    assert_eq!(
        k.expect_ok(&["exec", "web", "--", "whoami", "hi"]),
        "echo hi\n"
    );
    assert_eq!(
        seen_since(&seen, before),
        ["/exec/default/web/app?command=echo&command=hi&error=1&output=1"]
    );
    let validated = reviews
        .lock()
        .unwrap()
        .iter()
        .find(|(hook, _)| hook == "validate")
        .map(|(_, review)| review["request"].clone())
        .unwrap();
    assert_eq!(validated["operation"], "CONNECT");
    assert_eq!(
        validated["kind"],
        json!({"group": "", "version": "v1", "kind": "PodExecOptions"})
    );
    assert_eq!(
        validated["resource"],
        json!({"group": "", "version": "v1", "resource": "pods"})
    );
    assert_eq!(validated["subResource"], "exec");
    assert_eq!(
        (&validated["name"], &validated["namespace"]),
        (&json!("web"), &json!("default"))
    );
    assert_eq!(validated["object"]["kind"], "PodExecOptions");
    assert_eq!(validated["object"]["command"], json!(["echo", "hi"]));
    assert_eq!(validated["object"]["stdout"], true);
    assert!(validated["options"].is_null(), "{validated}");

    let before = seen.lock().unwrap().len();
    let refused = k.expect_failure(&["exec", "web", "--", "rm", "-rf", "/"]);
    assert!(
        refused.contains(r#"admission webhook "guard.kapi.test" denied the request: no rm here"#),
        "{refused}"
    );
    assert!(
        seen_since(&seen, before).is_empty(),
        "the kubelet was asked"
    );
}

/// The proxies are admitted as a CONNECT of their options before they connect, as upstream's
/// `ConnectResource` (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`) admits
/// the `ProxyREST` of a pod, a Service and a Node (`pkg/registry/core/pod/rest/subresources.go`,
/// `NewConnectOptions`: `PodProxyOptions` with the path after `proxy`, `getRequestOptions`):
/// a validating webhook on `pods/proxy` and `nodes/proxy` denies a path, before the location
/// is even looked up; a mutating webhook on `services/proxy` rewrites the path, and the
/// backend is asked the admitted one.
#[test]
fn proxies_are_admitted_as_a_connect_of_their_options() {
    let backend = echo_backend();
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    serve_web_on(&k, backend.addr().port());
    register_node(&k, backend.addr());

    let mutated = ["services/proxy"];
    let validated = ["pods/proxy", "nodes/proxy"];
    let (_hooks, reviews) = connect_webhooks(&k, "proxy", &mutated, &validated, |hook, options| {
        let path = options["path"].as_str().unwrap_or_default();
        match hook {
            "mutate" if path == "/old" => {
                Verdict::Patch(json!([{"op": "replace", "path": "/path", "value": "/new"}]))
            }
            "validate" if path.starts_with("/secret") => Verdict::Deny("no secrets here"),
            _ => Verdict::Allow,
        }
    });
    let sent = |hook: &str| -> Vec<Value> {
        reviews
            .lock()
            .unwrap()
            .iter()
            .filter(|(h, _)| h == hook)
            .map(|(_, review)| review["request"].clone())
            .collect()
    };

    let denial = r#"admission webhook "guard.kapi.test" denied the request: no secrets here"#;
    let refused = k.expect_failure(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/pods/web/proxy/secret/key",
    ]);
    assert!(refused.contains(denial), "{refused}");
    let validated = sent("validate");
    assert_eq!(validated.len(), 1, "{validated:?}");
    let request = &validated[0];
    assert_eq!(request["operation"], "CONNECT", "{request}");
    let options = json!({"group": "", "version": "v1", "kind": "PodProxyOptions"});
    assert_eq!(request["kind"], options, "{request}");
    assert_eq!(request["requestKind"], options, "{request}");
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "pods"}),
        "{request}"
    );
    assert_eq!(request["subResource"], "proxy", "{request}");
    assert_eq!(
        (&request["name"], &request["namespace"]),
        (&json!("web"), &json!("default")),
        "{request}"
    );
    assert_eq!(
        request["object"],
        json!({"kind": "PodProxyOptions", "apiVersion": "v1", "path": "/secret/key"}),
        "{request}"
    );
    assert!(request["options"].is_null(), "{request}");
    // An allowed path goes on to the location, which refuses the loopback pod IP: admission
    // came first.
    let refused = k.expect_failure(&["get", "--raw", "/api/v1/namespaces/default/pods/web/proxy/"]);
    assert!(!refused.contains(denial), "{refused}");
    assert_eq!(sent("validate")[1]["object"]["path"], "/", "{refused}");
    // A node's proxy is reviewed as a NodeProxyOptions, without a namespace.
    let refused = k.expect_failure(&["get", "--raw", "/api/v1/nodes/node-1/proxy/secret"]);
    assert!(refused.contains(denial), "{refused}");
    let node = &sent("validate")[2];
    assert_eq!(node["kind"]["kind"], "NodeProxyOptions", "{node}");
    assert_eq!(node["object"]["path"], "/secret", "{node}");
    assert!(node.get("namespace").is_none(), "{node}");

    // The Service's backend is asked the path the mutating webhook wrote.
    let answer = k.expect_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web/proxy/old?x=1",
    ]);
    assert_eq!(answer, "GET /new?x=1 ");
    let mutated = sent("mutate");
    assert_eq!(mutated.len(), 1, "{mutated:?}");
    assert_eq!(mutated[0]["kind"]["kind"], "ServiceProxyOptions");
    assert_eq!(mutated[0]["object"]["path"], "/old");
    let answer = k.expect_ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web/proxy/other",
    ]);
    assert_eq!(answer, "GET /other ");
}
