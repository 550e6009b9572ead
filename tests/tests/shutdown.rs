//! `kapi serve` shuts down as kube-apiserver does on SIGTERM: `/readyz` fails at once while
//! the server goes on serving for `--shutdown-delay-duration`, then the listener closes, open
//! watches end without an ERROR event, a request in flight still gets its answer, and the
//! process exits 0 within the bound. With `--logging-format=json` every log line is a JSON object.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use kapi_e2e::{KapiServer, ServerOptions};

/// Sends one request on a fresh connection and reads the whole answer.
fn get(addr: SocketAddr, path: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .map_err(|e| e.to_string())?;
    Ok(answer)
}

/// Reads from `stream` until `needle` has arrived (or the read times out).
fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn sigterm_fails_readiness_then_drains_and_exits_zero() {
    // Long enough that a loaded machine still sees readiness fail within it.
    let delay = Duration::from_secs(3);
    let mut server = KapiServer::start(&ServerOptions {
        args: vec!["--shutdown-delay-duration=3s".to_owned(), "-v=3".to_owned()],
        ..ServerOptions::default()
    })
    .unwrap();
    let addr = server.addr();
    assert!(get(addr, "/readyz").unwrap().starts_with("HTTP/1.1 200"));

    // A watch, established.
    let mut watch = TcpStream::connect(addr).unwrap();
    watch
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    watch
        .write_all(b"GET /api/v1/namespaces?watch=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let head = read_until(&mut watch, "\"default\"");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    // A create whose body has only half arrived: a request in flight.
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}"#;
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    slow.write_all(head.as_bytes()).unwrap();
    slow.write_all(&body[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(200));

    let signalled = Instant::now();
    server.send_terminate().unwrap();
    // Readiness fails first, while everything else is still served.
    let mut readyz = String::new();
    while signalled.elapsed() < delay {
        readyz = get(addr, "/readyz?verbose").unwrap_or_default();
        if readyz.starts_with("HTTP/1.1 500") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(readyz.starts_with("HTTP/1.1 500"), "{readyz}");
    assert!(
        readyz.contains("[-]shutdown failed: reason withheld\n"),
        "{readyz}"
    );
    assert!(readyz.contains("[+]ping ok\n"), "{readyz}");
    assert!(
        signalled.elapsed() < delay,
        "readyz went red only after the delay"
    );
    let livez = get(addr, "/livez").unwrap();
    assert!(livez.starts_with("HTTP/1.1 200"), "{livez}");

    // After the delay the listener closes and the watch ends, cleanly.
    let mut rest = Vec::new();
    let _ = watch.read_to_end(&mut rest);
    let ended_after = signalled.elapsed();
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        ended_after >= delay,
        "the watch ended {ended_after:?} after SIGTERM"
    );
    assert!(!rest.contains("\"ERROR\""), "{rest}");
    assert!(rest.ends_with("0\r\n\r\n"), "the stream was cut: {rest:?}");
    assert!(
        TcpStream::connect(addr).is_err(),
        "new connections are accepted after the listener closed"
    );

    // The request in flight is still answered.
    slow.write_all(&body[10..]).unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");

    let status = server.wait_exit(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{status:?}\n{}", server.stderr());
    assert!(signalled.elapsed() < delay + Duration::from_secs(15));
    let log = server.stderr();
    for line in [
        "shutdown: started, /readyz now fails",
        "shutdown: listener closed",
        "shutdown: every request in flight finished",
        "server stopped",
        "store closed",
        "HTTP",
    ] {
        assert!(log.contains(line), "no {line:?} in the log:\n{log}");
    }
}

/// `--logging-format=json` writes one JSON object per event; without `-v` no request is logged.
#[test]
fn json_logs_without_request_lines_by_default() {
    let mut server = KapiServer::start(&ServerOptions {
        args: vec!["--logging-format=json".to_owned()],
        ..ServerOptions::default()
    })
    .unwrap();
    assert!(
        get(server.addr(), "/readyz")
            .unwrap()
            .starts_with("HTTP/1.1 200")
    );
    let status = server.terminate(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{status:?}");
    let log = server.stderr();
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let messages: Vec<&str> = events
        .iter()
        .filter_map(|event| event["fields"]["message"].as_str())
        .collect();
    assert!(messages.contains(&"serving"), "{log}");
    assert!(messages.contains(&"store closed"), "{log}");
    assert!(!messages.contains(&"HTTP"), "{log}");
    assert!(
        events.iter().all(|event| event["level"].is_string()),
        "{log}"
    );
}
