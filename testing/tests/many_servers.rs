//! A process that starts and stops a hundred test servers keeps none of their threads or file
//! descriptors: dropping a server waits for everything it started. (Alone in its own test
//! binary, so no other test's server is counted.)

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::io::{Read, Write};

use kapi_test::{Store, TestServer};

/// Threads and open file descriptors of this process, from /proc.
fn threads_and_fds() -> (usize, usize) {
    let count = |dir: &str| std::fs::read_dir(dir).unwrap().count();
    (count("/proc/self/task"), count("/proc/self/fd"))
}

/// One request over a socket, so each server has served a connection before it stops.
fn ready(server: &TestServer) {
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn a_hundred_servers_leave_no_threads_or_descriptors_behind() {
    // One server first: whatever the process sets up once (the allocator's, the standard
    // library's) is in the baseline.
    ready(&TestServer::start_blocking().unwrap());
    let before = threads_and_fds();
    for i in 0..100 {
        let store = if i % 2 == 0 {
            Store::Memory
        } else {
            Store::TempDir
        };
        let server = TestServer::builder().store(store).start_blocking().unwrap();
        ready(&server);
        drop(server);
        assert_eq!(threads_and_fds(), before, "after server {i}");
    }
}
