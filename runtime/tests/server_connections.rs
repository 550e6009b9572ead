//! What one connection or request may cost: slow headers, idle connections and half-sent
//! bodies are cut as upstream cuts them (its `ReadHeaderTimeout`, `IdleTimeout` and request
//! timeout, shortened here), watches keep their connection however quiet, and a full share of
//! request seats answers 429 with `Retry-After` as upstream's max-in-flight and APF filters do;
//! a stop fails readiness first and bounds how long requests in flight may hold it; over TLS,
//! ALPN picks the protocol and a stalled handshake is cut like slow headers.

// Wall clock throughout: the server is reached over real sockets, which a paused clock skips.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use kapi::Registry;
use kapi::server::{RunningServer, Server, ServerBuilder};
use kapi::storage::{EmbeddedOptions, EmbeddedStorage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::kinds::{WIDGETS, Widget};

mod support;

/// A bound on waits that should end far sooner; only turns a hang into a failure.
const PATIENCE: Duration = Duration::from_secs(10);

async fn start(configure: impl FnOnce(ServerBuilder) -> ServerBuilder) -> RunningServer {
    let storage = EmbeddedStorage::in_memory(EmbeddedOptions::default()).unwrap();
    let mut registry = Registry::new();
    registry.register::<Widget>();
    configure(
        Server::builder()
            .registry(registry)
            .storage(Arc::new(storage)),
    )
    .start()
    .await
    .unwrap()
}

/// Everything the server sends until it closes the connection, and how long that took.
async fn until_closed(stream: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut received = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received)).await;
    assert!(read.is_ok(), "the server kept the connection open");
    (
        String::from_utf8_lossy(&received).into_owned(),
        started.elapsed(),
    )
}

fn widget(name: &str) -> String {
    format!(r#"{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{{"name":"{name}"}}}}"#)
}

#[tokio::test]
async fn slow_headers_and_idle_connections_are_closed() {
    let server =
        start(|b| b.connection_timeouts(Duration::from_millis(300), Duration::from_millis(600)))
            .await;
    // Half a request head, then nothing.
    let mut slow = TcpStream::connect(server.addr()).await.unwrap();
    slow.write_all(b"GET /readyz HTTP/1.1\r\nHo").await.unwrap();
    let (_, took) = until_closed(&mut slow).await;
    assert!(took >= Duration::from_millis(250), "closed after {took:?}");

    // A connection that never sends a byte.
    let mut silent = TcpStream::connect(server.addr()).await.unwrap();
    until_closed(&mut silent).await;

    // A kept-alive HTTP/1.1 connection after its request.
    let mut kept = TcpStream::connect(server.addr()).await.unwrap();
    kept.write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let (answer, _) = until_closed(&mut kept).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // An HTTP/2 connection after its request: closed for idleness.
    let stream = TcpStream::connect(server.addr()).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    let connection = tokio::spawn(connection);
    let request = axum::http::Request::get(format!("http://{}/readyz", server.addr()))
        .body(http_body_util::Empty::<kapi::storage::Bytes>::new())
        .unwrap();
    assert_eq!(sender.send_request(request).await.unwrap().status(), 200);
    let started = Instant::now();
    tokio::time::timeout(PATIENCE, connection)
        .await
        .expect("an idle HTTP/2 connection is closed")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn a_quiet_watch_keeps_its_connection_past_the_idle_timeout() {
    let server =
        start(|b| b.connection_timeouts(Duration::from_millis(300), Duration::from_millis(300)))
            .await;
    let mut watch = TcpStream::connect(server.addr()).await.unwrap();
    watch
        .write_all(
            format!("GET {WIDGETS}?watch=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut writer = TcpStream::connect(server.addr()).await.unwrap();
    let body = widget("late");
    writer
        .write_all(
            format!(
                "POST {WIDGETS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let (created, _) = until_closed(&mut writer).await;
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\"late\"") {
        let n = tokio::time::timeout(PATIENCE, watch.read(&mut buffer))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(
            n,
            0,
            "the watch's connection was closed: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..n]);
    }
}

#[tokio::test]
async fn a_half_sent_body_ends_with_504() {
    let server = start(|b| b.request_body_timeout(Duration::from_millis(300))).await;
    let mut stream = TcpStream::connect(server.addr()).await.unwrap();
    stream
        .write_all(
            format!(
                "POST {WIDGETS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: 100\r\nConnection: close\r\n\r\n{{\"apiVersion\""
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let (answer, _) = until_closed(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    assert!(
        answer.contains("Timeout: request did not complete within the allotted timeout"),
        "{answer}"
    );
}

/// One raw HTTP/1.1 exchange on a new connection.
async fn exchange(server: &RunningServer, method: &str, path: &str, body: &str) -> String {
    exchange_at(server.addr(), method, path, body).await
}

/// [`exchange`] with a server at `addr`.
async fn exchange_at(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    until_closed(&mut stream).await.0
}

#[tokio::test]
async fn a_full_share_answers_429_and_the_other_share_goes_on() {
    let server = start(|b| {
        b.max_requests_in_flight(1, 1, Duration::from_millis(100))
            .resource_version_wait(Duration::from_secs(3))
    })
    .await;
    let addr = server.addr();
    // A read that waits for a resourceVersion the store has not reached holds the one seat.
    let mut holder = TcpStream::connect(addr).await.unwrap();
    holder
        .write_all(
            format!(
                "GET {WIDGETS}?resourceVersion=999999&resourceVersionMatch=NotOlderThan HTTP/1.1\r\n\
                 Host: 127.0.0.1\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let refused = exchange(&server, "GET", WIDGETS, "").await;
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    let lower = refused.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 1\r\n"), "{refused}");
    assert!(
        refused.ends_with("Too many requests, please try again later.\n"),
        "{refused}"
    );
    // Writes have their own share; watches and probes take no seat.
    assert!(
        exchange(&server, "POST", WIDGETS, &widget("w"))
            .await
            .starts_with("HTTP/1.1 201")
    );
    assert!(
        exchange(&server, "GET", "/readyz", "")
            .await
            .starts_with("HTTP/1.1 200")
    );
    let mut watch = TcpStream::connect(addr).await.unwrap();
    watch
        .write_all(
            format!("GET {WIDGETS}?watch=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut head = [0u8; 12];
    tokio::time::timeout(PATIENCE, watch.read_exact(&mut head))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
}

/// A stop runs upstream's sequence in-process too: `/readyz` fails while the server serves on
/// for the shutdown delay, then the listener closes, and a request still in flight after the
/// shutdown timeout has its connection closed rather than holding the stop forever.
#[tokio::test]
async fn shutdown_fails_readiness_first_and_bounds_the_drain() {
    let delay = Duration::from_millis(600);
    let drain = Duration::from_millis(300);
    let server = start(|b| b.shutdown_delay(delay).shutdown_timeout(drain)).await;
    let addr = server.addr();
    // A create whose body never completes: in flight until the drain gives up on it.
    let mut stuck = TcpStream::connect(addr).await.unwrap();
    stuck
        .write_all(
            format!(
                "POST {WIDGETS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: 100\r\n\r\n{{\"apiVersion\""
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let ready = |server: &RunningServer| {
        let addr = server.addr();
        async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            stream
                .write_all(
                    b"GET /readyz?verbose HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                )
                .await
                .unwrap();
            until_closed(&mut stream).await.0
        }
    };
    assert!(ready(&server).await.starts_with("HTTP/1.1 200"));
    let check = ready(&server);
    let started = Instant::now();
    let stopping = tokio::spawn(server.shutdown());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let answer = check.await;
    assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
    assert!(
        answer.contains("[-]shutdown failed: reason withheld\n"),
        "{answer}"
    );
    let created = exchange_at(addr, "POST", WIDGETS, &widget("during-delay")).await;
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");

    tokio::time::timeout(PATIENCE, stopping)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    assert!(took >= delay + drain, "stopped after {took:?}");
    assert!(
        took < delay + drain + Duration::from_secs(3),
        "stopped after {took:?}"
    );
    let (cut, _) = until_closed(&mut stuck).await;
    assert!(!cut.contains("201"), "{cut}");
    assert!(TcpStream::connect(addr).await.is_err());
}

/// `ServerBuilder::tls` serves TLS on `start`: ALPN offers `h2` then `http/1.1` (upstream's
/// `NextProtos`, k8s.io/apiserver `secure_serving.go`), plain HTTP on the TLS port gets no HTTP
/// answer, and a handshake that stalls is cut at the header read timeout, as Go bounds it
/// (`net/http` `tlsHandshakeTimeout`).
#[tokio::test]
async fn tls_negotiates_the_protocol_and_bounds_the_handshake() {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, ServerName};
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = certified.cert.pem();
    let key = certified.signing_key.serialize_pem();
    let tls = kapi::server::Tls::from_pem(cert.as_bytes(), key.as_bytes(), None).unwrap();
    let server = start(|b| {
        b.tls(tls)
            .connection_timeouts(Duration::from_millis(300), Duration::from_secs(90))
    })
    .await;
    let connect = |alpn: &[&[u8]]| {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(cert.as_bytes()).unwrap())
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let addr = server.addr();
        async move {
            let tcp = TcpStream::connect(addr).await.unwrap();
            let name = ServerName::try_from("127.0.0.1").unwrap();
            connector.connect(name, tcp).await.unwrap()
        }
    };
    let h2 = connect(&[b"h2", b"http/1.1"]).await;
    assert_eq!(h2.get_ref().1.alpn_protocol(), Some(b"h2".as_slice()));
    let mut h1 = connect(&[b"http/1.1"]).await;
    assert_eq!(h1.get_ref().1.alpn_protocol(), Some(b"http/1.1".as_slice()));
    h1.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(PATIENCE, h1.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("gitVersion"), "{answer}");
    let mut plain = TcpStream::connect(server.addr()).await.unwrap();
    plain
        .write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let (answer, _) = until_closed(&mut plain).await;
    assert!(!answer.contains("HTTP/1.1"), "{answer}");
    let mut stalled = TcpStream::connect(server.addr()).await.unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    let (_, took) = until_closed(&mut stalled).await;
    assert!(took >= Duration::from_millis(250), "{took:?}");
    server.shutdown().await.unwrap();
}
