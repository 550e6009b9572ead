//! Crash safety of the `kapi` binary: clients write ConfigMaps concurrently, the server is
//! killed with SIGKILL mid-stream, and after a restart on the same data directory every write
//! the server acknowledged is there and new resourceVersions are greater than all old ones.
//! And damage to the data directory: a truncated database is refused, a flipped byte in a
//! stored object answers 500 rather than data, and a database replaced by an older copy is
//! refused until `--accept-restored-database`, after which resourceVersions still move on.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kapi_e2e::{KapiServer, ServerOptions};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client, Config};

const WRITERS: usize = 4;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

fn api(server: &KapiServer) -> Api<ConfigMap> {
    let config = Config::new(server.url().parse().unwrap());
    Api::namespaced(Client::try_from(config).unwrap(), "default")
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("v".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Acknowledged writes: name → (value, resourceVersion).
type Acked = Arc<Mutex<BTreeMap<String, (String, u64)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_kill_dash_nine() {
    let data = tempfile::tempdir().unwrap();
    let options = ServerOptions {
        data_dir: Some(data.path().to_path_buf()),
        ..ServerOptions::default()
    };
    let mut server = KapiServer::start(&options).unwrap();
    let maps = api(&server);
    let acked: Acked = Arc::default();

    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let maps = maps.clone();
        let acked = acked.clone();
        writers.push(tokio::spawn(async move {
            // Creates, and every third round an update of the writer's previous object, until
            // the server is gone.
            let pp = PostParams::default();
            let mut last: Option<ConfigMap> = None;
            for round in 0.. {
                let name = format!("w{writer}-{round}");
                let value = format!("{writer}:{round}");
                let object = config_map(&name, &value);
                let create = maps.create(&pp, &object);
                let Ok(Ok(created)) = tokio::time::timeout(REQUEST_TIMEOUT, create).await else {
                    return;
                };
                let rv = created
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap()
                    .parse()
                    .unwrap();
                acked.lock().unwrap().insert(name.clone(), (value, rv));
                if let Some(mut previous) = last.take().filter(|_| round % 3 == 0) {
                    let prev_name = previous.metadata.name.clone().unwrap();
                    let value = format!("{writer}:{round}:updated");
                    previous.data = Some(BTreeMap::from([("v".to_owned(), value.clone())]));
                    let replace = maps.replace(&prev_name, &pp, &previous);
                    let Ok(Ok(updated)) = tokio::time::timeout(REQUEST_TIMEOUT, replace).await
                    else {
                        return;
                    };
                    let rv = updated
                        .metadata
                        .resource_version
                        .clone()
                        .unwrap()
                        .parse()
                        .unwrap();
                    acked.lock().unwrap().insert(prev_name, (value, rv));
                }
                last = Some(created);
            }
        }));
    }

    // Let the writers get going, then pull the plug while they are mid-stream.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while acked.lock().unwrap().len() < 200 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill();
    for writer in writers {
        tokio::time::timeout(Duration::from_secs(30), writer)
            .await
            .unwrap()
            .unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(
        acked.len() >= 50,
        "only {} writes acknowledged before the kill",
        acked.len()
    );
    let newest_acked = acked.values().map(|(_, rv)| *rv).max().unwrap();

    let server = KapiServer::start(&options).unwrap();
    let maps = api(&server);
    let listed = tokio::time::timeout(REQUEST_TIMEOUT, maps.list(&ListParams::default()))
        .await
        .unwrap()
        .unwrap();
    let found: BTreeMap<String, (String, u64)> = listed
        .items
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap(),
                (
                    cm.data
                        .as_ref()
                        .and_then(|d| d.get("v").cloned())
                        .unwrap_or_default(),
                    cm.metadata
                        .resource_version
                        .clone()
                        .unwrap()
                        .parse()
                        .unwrap(),
                ),
            )
        })
        .collect();
    let lost: Vec<String> = acked
        .iter()
        .filter(|(name, (value, rv))| {
            // A write in flight at the kill may have committed after its ack was lost, so only
            // an acknowledged state missing or replaced by an older one counts as lost.
            found
                .get(*name)
                .is_none_or(|(v, found_rv)| found_rv < rv || (found_rv == rv && v != value))
        })
        .map(|(name, state)| format!("{name} {state:?} -> {:?}", found.get(name)))
        .collect();
    assert!(
        lost.is_empty(),
        "acknowledged writes lost after kill -9: {lost:?}"
    );

    let list_rv: u64 = listed
        .metadata
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        list_rv >= newest_acked,
        "list at {list_rv} after acked {newest_acked}"
    );
    let fresh = maps
        .create(&PostParams::default(), &config_map("after-restart", "x"))
        .await
        .unwrap();
    let fresh_rv: u64 = fresh.metadata.resource_version.unwrap().parse().unwrap();
    let newest_stored = found.values().map(|(_, rv)| *rv).max().unwrap();
    assert!(
        fresh_rv > newest_acked && fresh_rv > newest_stored,
        "new resourceVersion {fresh_rv} not above acked {newest_acked} / stored {newest_stored}"
    );
    eprintln!(
        "crash: {} acknowledged writes survived kill -9; newest acked rv {newest_acked}, first new rv {fresh_rv}",
        acked.len()
    );
}

// Corruption: a damaged or replaced database file is refused or reported, never served as
// data. The server is driven over plain HTTP/1.1 so the status and the exact body are seen.

/// A unique string stored in one ConfigMap, to find its bytes in the database file.
const MARKER: &str = "kapi-corruption-marker-7f3a9c";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

/// One HTTP/1.1 request: (status, body), the body de-chunked.
fn http(server: &KapiServer, method: &str, path: &str, body: Option<&str>) -> (u16, Vec<u8>) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(REQUEST_TIMEOUT)).unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr(),
        body.len()
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    let mut rest = &response[split + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return (status, rest.to_vec());
    }
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16);
        let size = size.unwrap();
        if size == 0 {
            return (status, body);
        }
        body.extend_from_slice(&rest[line_end + 2..line_end + 2 + size]);
        rest = &rest[line_end + 2 + size + 2..];
    }
}

fn create(server: &KapiServer, namespace: &str, name: &str, value: &str) -> u64 {
    let body = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"v": value},
    });
    let path = format!("/api/v1/namespaces/{namespace}/configmaps");
    let (status, created) = http(server, "POST", &path, Some(&body.to_string()));
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&created));
    resource_version(&created)
}

fn resource_version(body: &[u8]) -> u64 {
    let value: serde_json::Value = serde_json::from_slice(body).unwrap();
    value["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// The server's answer to a stored value that failed its check: upstream's 500 Status with a
/// message that tells nothing of the store or the stored bytes.
fn assert_generic_500(status: u16, body: &[u8]) {
    let text = String::from_utf8_lossy(body);
    assert_eq!(status, 500, "{text}");
    let value: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(value["kind"], "Status", "{text}");
    assert_eq!(value["reason"], "InternalError", "{text}");
    for leak in ["corruption-marker", "current", "history", "/registry"] {
        assert!(!text.contains(leak), "{leak} in {text}");
    }
}

/// Stops the server cleanly (its store records its revision) and returns its database file.
fn stop(mut server: KapiServer) -> std::path::PathBuf {
    let status = server.terminate(Duration::from_secs(10)).unwrap();
    assert!(status.success(), "{status}");
    server.data_dir().join("kapi.redb")
}

/// Runs `kapi serve` on `data` expecting it to refuse: it must exit non-zero within 10 s;
/// returns its standard error.
fn refused(data: &std::path::Path) -> String {
    let temp = tempfile::tempdir().unwrap();
    let kubeconfig = temp.path().join("kubeconfig");
    let args: [&std::ffi::OsStr; 8] = [
        "serve".as_ref(),
        "--plain-http".as_ref(),
        "--listen".as_ref(),
        "127.0.0.1:0".as_ref(),
        "--data-dir".as_ref(),
        data.as_os_str(),
        "--kubeconfig".as_ref(),
        kubeconfig.as_os_str(),
    ];
    kapi_e2e::expect_refusal(&args, Duration::from_secs(10)).unwrap()
}

fn with_data(data: &std::path::Path) -> ServerOptions {
    ServerOptions {
        data_dir: Some(data.to_path_buf()),
        ..ServerOptions::default()
    }
}

/// A database file cut at half its length is refused: redb records the file's layout in its
/// header and will not open a file shorter than that (its repair, after an unclean shutdown,
/// rebuilds allocator state from a whole file; it does not invent missing pages). So the
/// server exits non-zero, saying which file, why, and what to do, and serves nothing.
#[test]
fn a_truncated_database_is_refused_with_a_clear_message() {
    let data = tempfile::tempdir().unwrap();
    let server = KapiServer::start(&with_data(data.path())).unwrap();
    for i in 0..20 {
        create(&server, "default", &format!("cm-{i}"), &"x".repeat(2000));
    }
    let file = stop(server);
    let length = std::fs::metadata(&file).unwrap().len();
    let cut = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    cut.set_len(length / 2).unwrap();
    drop(cut);
    let stderr = refused(data.path());
    for part in [
        "kapi.redb",
        "is damaged",
        "truncated",
        "Restore the file from a backup",
    ] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
}

/// One flipped byte inside a stored ConfigMap's value.
#[test]
fn a_flipped_byte_in_a_stored_object_is_a_500_never_data() {
    let data = tempfile::tempdir().unwrap();
    let server = KapiServer::start(&with_data(data.path())).unwrap();
    let (status, body) = http(
        &server,
        "POST",
        "/api/v1/namespaces",
        Some(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}"#),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let before = create(&server, "default", "a-fine", "fine");
    create(&server, "default", "b-damaged", MARKER);
    create(&server, "default", "c-fine", "fine too");
    create(&server, "other", "d-fine", "elsewhere");
    let file = stop(server);

    let mut bytes = std::fs::read(&file).unwrap();
    let mut found = 0;
    let mut at = 0;
    while let Some(offset) = bytes[at..]
        .windows(MARKER.len())
        .position(|w| w == MARKER.as_bytes())
    {
        // `c` becomes `b`: the JSON stays valid, only the checksum can tell.
        bytes[at + offset + 5] ^= 0x01;
        found += 1;
        at += offset + MARKER.len();
    }
    assert!(found >= 1, "the marker is in the database file");
    std::fs::write(&file, bytes).unwrap();

    let server = KapiServer::start(&with_data(data.path())).unwrap();
    let (status, body) = http(&server, "GET", &format!("{CONFIG_MAPS}/b-damaged"), None);
    assert_generic_500(status, &body);
    // A list that reaches the damaged object fails whole: no 200 that leaves it out.
    let (status, body) = http(&server, "GET", CONFIG_MAPS, None);
    assert_generic_500(status, &body);
    let (status, body) = http(&server, "GET", "/api/v1/configmaps", None);
    assert_generic_500(status, &body);
    // Objects beside it, and pages and namespaces that do not reach it, are served.
    for path in [
        format!("{CONFIG_MAPS}/a-fine"),
        format!("{CONFIG_MAPS}/c-fine"),
        format!("{CONFIG_MAPS}?limit=1"),
        "/api/v1/namespaces/other/configmaps".to_owned(),
    ] {
        let (status, body) = http(&server, "GET", &path, None);
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        serde_json::from_slice::<serde_json::Value>(&body).unwrap();
    }
    // A watch whose replay reaches the damaged value ends with an ERROR event carrying the
    // same Status, not the value.
    let path = format!("{CONFIG_MAPS}?watch=true&resourceVersion={before}");
    let (status, body) = http(&server, "GET", &path, None);
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{text}");
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "ERROR", "{text}");
    assert_generic_500(500, last["object"].to_string().as_bytes());
    assert_eq!(last["object"]["code"], 500, "{text}");
    // A write over the damaged object is refused the same way; a new one is written.
    let (status, body) = http(&server, "DELETE", &format!("{CONFIG_MAPS}/b-damaged"), None);
    assert_generic_500(status, &body);
    create(&server, "default", "e-new", "new");
    // The log, unlike the answers, says which key failed its check and where it was stored.
    let log = server.stderr();
    assert!(
        log.contains("integrity check") && log.contains("configmaps/default/b-damaged"),
        "{log}"
    );
}

/// A database replaced by an older copy of itself.
#[test]
fn an_older_copy_of_the_database_is_refused_then_accepted_with_revisions_moving_on() {
    let data = tempfile::tempdir().unwrap();
    let server = KapiServer::start(&with_data(data.path())).unwrap();
    for i in 0..3 {
        create(&server, "default", &format!("old-{i}"), "old");
    }
    let file = stop(server);
    let copy = data.path().join("older-copy.redb");
    std::fs::copy(&file, &copy).unwrap();
    let server = KapiServer::start(&with_data(data.path())).unwrap();
    let newest = (0..5)
        .map(|i| create(&server, "default", &format!("new-{i}"), "new"))
        .max()
        .unwrap();
    stop(server);
    std::fs::rename(&copy, &file).unwrap();

    let stderr = refused(data.path());
    for part in ["older copy", "--accept-restored-database", "backwards"] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }

    let accept = ServerOptions {
        accept_restored_database: true,
        ..with_data(data.path())
    };
    let server = KapiServer::start(&accept).unwrap();
    let (status, body) = http(&server, "GET", CONFIG_MAPS, None);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        list["items"].as_array().unwrap().len(),
        3,
        "the copy's objects"
    );
    let list_rv = resource_version(&body);
    assert!(list_rv > newest, "list at {list_rv}, served up to {newest}");
    let fresh = create(&server, "default", "after-restore", "x");
    assert!(
        fresh > newest,
        "new write at {fresh}, served up to {newest}"
    );
    // A watch from a resourceVersion of before the restore must list again.
    let path = format!("{CONFIG_MAPS}?watch=true&resourceVersion={newest}");
    let (status, body) = http(&server, "GET", &path, None);
    let text = String::from_utf8_lossy(&body);
    assert!(
        status == 410 || text.contains("\"code\":410"),
        "{status}: {text}"
    );
    stop(server);
    // Accepted once: later starts need no flag.
    KapiServer::start(&with_data(data.path())).unwrap();
}

/// A real full disk under the binary, where the machine lets a test mount a small tmpfs (root
/// on Linux; elsewhere the test says why it did nothing, and `server_describe`'s injected fault
/// covers the same answers): creates fill the disk until one answers 500 with the I/O error,
/// `/readyz` fails its storage check while the disk is full, and once a file beside the store
/// is removed the server recovers without a restart: ready again, writes accepted, and every
/// write it acknowledged before is there.
#[test]
fn a_full_disk_fails_writes_and_readiness_until_space_is_back() {
    /// Unmounts the tmpfs however the test ends (after the server, declared before it).
    struct Mounted(std::path::PathBuf);
    impl Drop for Mounted {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
        .arg(dir.path())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!(
            "no tmpfs could be mounted here (it needs root): server_describe's injected fault covers this"
        );
        return;
    }
    let _mount = Mounted(dir.path().to_path_buf());
    let server = KapiServer::start(&with_data(&dir.path().join("data"))).unwrap();
    // A filler file takes most of the space, so removing it later makes room.
    let filler = dir.path().join("filler");
    std::fs::write(&filler, vec![0u8; 8 * 1024 * 1024]).unwrap();
    let value = "x".repeat(256 * 1024);
    let mut acknowledged = 0;
    let refused = loop {
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("fill-{acknowledged}")},
            "data": {"v": value},
        });
        let (status, answer) = http(&server, "POST", CONFIG_MAPS, Some(&body.to_string()));
        if status != 201 {
            break (status, String::from_utf8_lossy(&answer).into_owned());
        }
        acknowledged += 1;
        assert!(acknowledged < 200, "the tmpfs never filled up");
    };
    assert_eq!(refused.0, 500, "{}", refused.1);
    assert!(refused.1.contains("storage I/O error"), "{}", refused.1);
    let (ready, text) = http(&server, "GET", "/readyz", None);
    assert_eq!(ready, 500, "{}", String::from_utf8_lossy(&text));
    assert!(String::from_utf8_lossy(&text).contains("[-]etcd failed"));

    std::fs::remove_file(&filler).unwrap();
    let started = std::time::Instant::now();
    while http(&server, "GET", "/readyz", None).0 != 200 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "/readyz stayed failed after space was freed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    create(&server, "default", "after-recovery", "1");
    let (status, list) = http(&server, "GET", CONFIG_MAPS, None);
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item["metadata"]["name"].as_str())
        .collect();
    for i in 0..acknowledged {
        assert!(
            names.contains(&format!("fill-{i}").as_str()),
            "fill-{i} lost"
        );
    }
    assert!(names.contains(&"after-recovery"));
    drop(server);
}
