//! Crash safety of the embedded engine: a child process (this test binary re-executed) writes
//! from many tasks and prints each write only once it is acknowledged; the parent kills it
//! with SIGKILL mid-stream, reopens the data directory, and checks that every acknowledged
//! write is there with its revision, and that revisions continue from the last one.
//!
//! Runs without the libtest harness so the re-executed binary can act as the child.

// Wall clock throughout: the writer is another process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kapi::storage::{Bytes, EmbeddedOptions, EmbeddedStorage, Storage};

const CHILD_ENV: &str = "KAPI_STORAGE_CRASH_CHILD_DIR";
/// Kill the child after this many acknowledged writes...
const KILL_AFTER_ACKS: usize = 400;
/// ...or after this long, whichever comes first.
const KILL_AFTER: Duration = Duration::from_secs(10);
/// The child stops by itself after this long, should the parent never kill it.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);

fn main() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(&dir);
        return;
    }
    match parent() {
        Ok(summary) => {
            println!("test acknowledged_writes_survive_sigkill ... ok ({summary})");
            println!("1 passed, 0 failed");
        }
        Err(failure) => {
            println!("test acknowledged_writes_survive_sigkill ... FAILED: {failure}");
            println!("0 passed, 1 failed");
            std::process::exit(1);
        }
    }
}

fn options() -> EmbeddedOptions {
    EmbeddedOptions::default().with_compaction_interval(None)
}

fn child(dir: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let storage =
            std::sync::Arc::new(EmbeddedStorage::open(dir, options()).await.expect("open"));
        let stdout = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
        let mut tasks = Vec::new();
        for writer in 0..16 {
            let storage = storage.clone();
            let stdout = stdout.clone();
            tasks.push(tokio::spawn(async move {
                let started = Instant::now();
                let mut i = 0u64;
                while started.elapsed() < CHILD_LIFETIME {
                    let key = format!("/crash/{writer:02}/{i:06}");
                    let kv = storage
                        .create(&key, Bytes::from(key.clone().into_bytes()))
                        .await
                        .expect("create");
                    // Printed only after the write is acknowledged (durable).
                    let mut out = stdout.lock().expect("stdout");
                    writeln!(out, "ack {key} {}", kv.mod_revision).expect("write ack");
                    out.flush().expect("flush ack");
                    i += 1;
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
    });
}

fn parent() -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("spawn child: {e}"))?;
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let (lines, received) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut acks = Vec::new();
    let deadline = Instant::now() + KILL_AFTER;
    while acks.len() < KILL_AFTER_ACKS {
        let left = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(left) {
            Ok(line) => acks.push(line),
            Err(_) => break,
        }
    }
    // Child::kill sends SIGKILL on Unix: no destructor, no flush, no clean shutdown.
    child.kill().map_err(|e| format!("kill child: {e}"))?;
    child.wait().map_err(|e| format!("wait child: {e}"))?;
    let _ = reader.join();
    // Lines the child printed before it died were acknowledged too.
    acks.extend(received.try_iter());
    if acks.len() < 10 {
        return Err(format!(
            "child acknowledged only {} writes before the kill",
            acks.len()
        ));
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let storage = EmbeddedStorage::open(dir.path(), options())
            .await
            .map_err(|e| format!("reopen after crash: {e}"))?;
        let mut max_acked = 0;
        for line in &acks {
            let mut parts = line.split(' ');
            let (Some("ack"), Some(key), Some(revision)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(format!("malformed ack line {line:?}"));
            };
            let revision: u64 = revision
                .parse()
                .map_err(|_| format!("bad revision in {line:?}"))?;
            max_acked = max_acked.max(revision);
            let kv = storage
                .get(key, None)
                .await
                .map_err(|e| format!("get {key}: {e}"))?
                .ok_or_else(|| {
                    format!("acknowledged write {key} at revision {revision} is lost")
                })?;
            if kv.mod_revision != revision || kv.value.as_ref() != key.as_bytes() {
                return Err(format!(
                    "{key}: found {kv:?}, acknowledged at revision {revision}"
                ));
            }
        }
        let current = storage
            .current_revision()
            .await
            .map_err(|e| e.to_string())?;
        if current < max_acked {
            return Err(format!(
                "revision went back: {current} < acknowledged {max_acked}"
            ));
        }
        let stored = storage.count("/crash/").await.map_err(|e| e.to_string())?;
        // Every revision after the first belongs to one create, so the store is gap-free.
        if stored != current - 1 {
            return Err(format!("{stored} keys stored but revision is {current}"));
        }
        let next = storage
            .create("/after-crash", Bytes::from_static(b"x"))
            .await
            .map_err(|e| e.to_string())?;
        if next.mod_revision != current + 1 {
            return Err(format!(
                "write after restart got revision {}, want {}",
                next.mod_revision,
                current + 1
            ));
        }
        Ok(format!(
            "{} acknowledged writes checked, {} committed, resumed at revision {}",
            acks.len(),
            stored,
            next.mod_revision
        ))
    })
}
