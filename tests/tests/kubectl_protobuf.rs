//! Objects written by kubectl in Kubernetes' protobuf encoding read back right, and answers
//! written in it read right by kubectl.
//!
//! kubectl 1.32 and newer send the bodies of `kubectl create <kind>` as
//! `application/vnd.kubernetes.protobuf` (older ones send JSON), and their typed clients
//! (`create <kind>`, `events`, `events --watch`, `rollout history`) ask for
//! `application/vnd.kubernetes.protobuf,application/json`, so the server answers them in
//! protobuf: objects, lists, `Status` failures and watch streams. Every kubectl on the machine
//! creates the same objects in its own namespace of one server; each object is checked field by
//! field, and the objects of a protobuf-sending kubectl must equal those a JSON-sending one
//! created (server-set metadata aside), which holds the protobuf path to the JSON path.
//!
//! Field numbers the server has no table entry for (a client newer than the server) come
//! back as `fieldValidation` problems, like unknown JSON fields; no kubectl sends those, so
//! that test writes its protobuf bodies by hand over a plain HTTP connection.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, kubectl_binaries};
use serde_json::{Value, json};

/// Longest a hand-written HTTP request may wait for its answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The first kubectl minor version that sends protobuf bodies.
const FIRST_PROTOBUF_MINOR: u32 = 32;

/// The objects a session creates, as `get` names them.
const OBJECTS: &[&str] = &[
    "configmap/cm",
    "secret/s",
    "serviceaccount/sa",
    "deployment/web",
    "service/svc",
    "job/j",
    "role/r",
    "poddisruptionbudget/pdb",
    "resourcequota/q",
    "cronjob/cj",
];

/// Creates everything in namespace `ns`, scales and deletes, and checks each object's
/// fields. Returns the objects as read back, for the cross-version comparison.
fn session(k: &Kubectl<'_>, ns: &str) -> Result<Vec<Value>, String> {
    let binary = k.dir().join("bytes.bin");
    std::fs::write(&binary, [0u8, 1, 2, 0xff]).unwrap();
    let from_file = format!("--from-file=bin={}", binary.display());
    k.ok(&["create", "namespace", ns])?;
    let n = ["-n", ns];
    let steps: &[&[&str]] = &[
        &[
            "create",
            "configmap",
            "cm",
            "--from-literal=a=b",
            &from_file,
        ],
        &[
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=pw=hunter2",
        ],
        &["create", "serviceaccount", "sa"],
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
            "--port=80",
        ],
        &["create", "service", "clusterip", "svc", "--tcp=80:8080"],
        &["create", "job", "j", "--image=busybox"],
        &["create", "role", "r", "--verb=get,list", "--resource=pods"],
        &[
            "create",
            "poddisruptionbudget",
            "pdb",
            "--selector=app=web",
            "--min-available=50%",
        ],
        &["create", "quota", "q", "--hard=cpu=500m,memory=1Gi,pods=2"],
        &[
            "create",
            "cronjob",
            "cj",
            "--image=busybox",
            "--schedule=*/5 * * * *",
        ],
    ];
    for step in steps {
        let args: Vec<&str> = step.iter().chain(n.iter()).copied().collect();
        k.ok(&args)?;
    }
    let namespace = k.get_json("", &format!("namespace/{ns}"))?;
    check("namespace", &namespace["metadata"]["name"], &json!(ns))?;

    let objects = OBJECTS
        .iter()
        .map(|o| k.get_json(ns, o))
        .collect::<Result<Vec<_>, _>>()?;
    let [
        cm,
        secret,
        sa,
        deployment,
        service,
        job,
        role,
        pdb,
        quota,
        cronjob,
    ] = objects.as_slice()
    else {
        unreachable!("one value per object");
    };
    check("configmap data", &cm["data"], &json!({"a": "b"}))?;
    check(
        "configmap binaryData",
        &cm["binaryData"],
        &json!({"bin": "AAEC/w=="}),
    )?;
    check(
        "configmap namespace",
        &cm["metadata"]["namespace"],
        &json!(ns),
    )?;
    check(
        "secret data",
        &secret["data"],
        &json!({"pw": "aHVudGVyMg=="}),
    )?;
    check("serviceaccount name", &sa["metadata"]["name"], &json!("sa"))?;
    check(
        "deployment replicas",
        &deployment["spec"]["replicas"],
        &json!(2),
    )?;
    check(
        "deployment selector",
        &deployment["spec"]["selector"],
        &json!({"matchLabels": {"app": "web"}}),
    )?;
    check(
        "deployment container",
        &deployment["spec"]["template"]["spec"]["containers"],
        // What kubectl sent, plus what upstream's SetDefaults_Container and
        // SetDefaults_ContainerPort fill in.
        &json!([{
            "name": "nginx",
            "image": "nginx",
            "imagePullPolicy": "Always",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }]),
    )?;
    check(
        "service ports",
        &service["spec"]["ports"],
        &json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]),
    )?;
    check(
        "service type",
        &service["spec"]["type"],
        &json!("ClusterIP"),
    )?;
    check(
        "job restartPolicy",
        &job["spec"]["template"]["spec"]["restartPolicy"],
        &json!("Never"),
    )?;
    check(
        "job image",
        &job["spec"]["template"]["spec"]["containers"][0]["image"],
        &json!("busybox"),
    )?;
    check(
        "role rules",
        &role["rules"],
        &json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]),
    )?;
    check(
        "pdb minAvailable",
        &pdb["spec"]["minAvailable"],
        &json!("50%"),
    )?;
    check(
        "quota hard",
        &quota["spec"]["hard"],
        &json!({"cpu": "500m", "memory": "1Gi", "pods": "2"}),
    )?;
    check(
        "cronjob schedule",
        &cronjob["spec"]["schedule"],
        &json!("*/5 * * * *"),
    )?;

    // scale (a merge patch of the scale subresource) to zero, then deletes (DeleteOptions).
    k.ok(&["scale", "deployment", "web", "--replicas=0", "-n", ns])?;
    let scaled = k.get_json(ns, "deployment/web")?;
    check("scaled replicas", &scaled["spec"]["replicas"], &json!(0))?;
    k.ok(&["delete", "configmap", "cm", "-n", ns])?;
    k.ok(&[
        "delete",
        "secret",
        "s",
        "-n",
        ns,
        "--grace-period=0",
        "--force",
    ])?;
    for gone in ["configmap/cm", "secret/s"] {
        let output = k.run(&["get", gone, "-n", ns]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() || !stderr.contains("NotFound") {
            return Err(format!("{gone} is still there after delete: {stderr}"));
        }
    }
    Ok(objects)
}

fn check(what: &str, got: &Value, want: &Value) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, want {want}"))
    }
}

/// An object without what the server sets per write (and the namespace, which differs per
/// kubectl; a Service's allocated addresses; the uid wherever the server copied it, as into a
/// Job's generated selector and labels), so two kubectls' objects compare equal when the
/// server read them the same.
fn comparable(object: Value) -> Value {
    let uid = object["metadata"]["uid"].as_str().unwrap_or_default();
    let mut object = if uid.is_empty() {
        object
    } else {
        serde_json::from_str(&object.to_string().replace(uid, "<uid>")).unwrap()
    };
    if let Some(meta) = object["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "namespace",
            "managedFields",
            "generation",
        ] {
            meta.remove(field);
        }
    }
    if object["kind"] == "Service"
        && let Some(spec) = object["spec"].as_object_mut()
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    object
}

#[test]
fn kubectl_protobuf_bodies_read_back_like_json_ones() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let mut failures = Vec::new();
    // (kubectl, minor, objects): protobuf senders and JSON senders.
    let mut results: Vec<(String, u32, Vec<Value>)> = Vec::new();
    let binaries: Vec<PathBuf> = kubectl_binaries();
    for binary in &binaries {
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(binary, &server, dir.path());
        let name = binary.file_name().unwrap().to_string_lossy().into_owned();
        let outcome = k.client_minor().and_then(|minor| {
            session(&k, &format!("pb-{}", name.replace('.', "-"))).map(|o| (minor, o))
        });
        match outcome {
            Ok((minor, objects)) => results.push((name, minor, objects)),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    let protobuf: Vec<_> = results
        .iter()
        .filter(|(_, minor, _)| *minor >= FIRST_PROTOBUF_MINOR)
        .collect();
    eprintln!(
        "protobuf-sending kubectls: {:?}",
        protobuf.iter().map(|(n, _, _)| n).collect::<Vec<_>>()
    );
    if let Some((reference, _, json_objects)) = results
        .iter()
        .find(|(_, minor, _)| *minor < FIRST_PROTOBUF_MINOR)
    {
        for (name, _, objects) in &protobuf {
            for ((object, want), what) in objects.iter().zip(json_objects).zip(OBJECTS) {
                let (got, want) = (comparable(object.clone()), comparable(want.clone()));
                if got != want {
                    failures.push(format!(
                        "{name} {what} differs from {reference}'s:\n  got  {got}\n  want {want}"
                    ));
                }
            }
        }
    }
    assert_no_failures(&failures, &server);
    assert!(
        binaries.is_empty() || !results.is_empty(),
        "no kubectl ran the session"
    );
}

fn assert_no_failures(failures: &[String], server: &KapiServer) {
    assert!(
        failures.is_empty(),
        "{} failures:\n\n{}\n\nserver stderr:\n{}",
        failures.len(),
        failures.join("\n\n"),
        server.stderr()
    );
}

/// A protobuf message under construction: just what the unknown-field test needs.
#[derive(Default)]
struct Proto(Vec<u8>);

impl Proto {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn bytes(mut self, number: u64, bytes: &[u8]) -> Self {
        self.varint(number << 3 | 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
        self
    }

    fn str(self, number: u64, text: &str) -> Self {
        self.bytes(number, text.as_bytes())
    }

    fn msg(self, number: u64, inner: Proto) -> Self {
        self.bytes(number, &inner.0)
    }

    fn int(mut self, number: u64, value: u64) -> Self {
        self.varint(number << 3);
        self.varint(value);
        self
    }
}

/// A `v1` ConfigMap in Kubernetes' protobuf envelope, with `unknown` (field numbers
/// ConfigMap does not have) in its metadata and at its top level.
fn config_map_body(name: &str, unknown: &[u64]) -> Vec<u8> {
    let mut meta = Proto::default().str(1, name);
    for n in unknown {
        meta = meta.int(*n, 1);
    }
    let mut object = Proto::default()
        .msg(1, meta)
        .msg(2, Proto::default().str(1, "a").str(2, "b"));
    for n in unknown {
        object = object.str(*n, "from a newer release");
    }
    let envelope = Proto::default()
        .msg(1, Proto::default().str(1, "v1").str(2, "ConfigMap"))
        .msg(2, object);
    let mut body = b"k8s\0".to_vec();
    body.extend(envelope.0);
    body
}

/// One HTTP/1.1 request on a fresh connection: (status, headers, body).
fn request(
    server: &KapiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream.set_read_timeout(Some(CALL_TIMEOUT)).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: {content_type}\r\n\
         Accept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr(),
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// Unknown field numbers (a newer client's, or a removed field's: `metadata.initializers`, 16,
/// gone in 1.14) are dropped without a warning whatever `fieldValidation` says, `Strict`
/// included: upstream's `CodecFactory` uses the protobuf serializer as its own strict
/// serializer, strict decoding being JSON's and YAML's alone. The known fields are stored. A
/// field of another release (1.20's `metadata.clusterName`, 15, in the table for 1.20) is
/// dropped the same way by a release without it, as upstream's protobuf decoding drops it.
#[test]
fn unknown_protobuf_fields_are_dropped_silently() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let (status, _, body) = request(
        &server,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        br##"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"pb-unknown"}}"##,
    );
    assert!(status == 201 || status == 409, "{status} {body}");
    let warnings = |headers: &[(String, String)]| -> Vec<String> {
        headers
            .iter()
            .filter(|(k, _)| k == "warning")
            .map(|(_, v)| v.clone())
            .collect()
    };
    let queries = [
        "",
        "?fieldValidation=Warn",
        "?fieldValidation=Ignore",
        "?fieldValidation=Strict",
    ];
    for (i, query) in queries.into_iter().enumerate() {
        let name = format!("cm{i}");
        let (status, headers, body) = request(
            &server,
            "POST",
            &format!("/api/v1/namespaces/pb-unknown/configmaps{query}"),
            "application/vnd.kubernetes.protobuf",
            &config_map_body(&name, &[16, 900]),
        );
        assert_eq!(status, 201, "{query}: {body}");
        assert!(warnings(&headers).is_empty(), "{query}: {headers:?}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["data"], json!({"a": "b"}), "{query}");
        assert_eq!(body["metadata"]["name"], json!(name), "{query}");
    }
    let meta = Proto::default().str(1, "cm-cluster").str(15, "elsewhere");
    let object = Proto::default()
        .msg(1, meta)
        .msg(2, Proto::default().str(1, "a").str(2, "b"));
    let envelope = Proto::default()
        .msg(1, Proto::default().str(1, "v1").str(2, "ConfigMap"))
        .msg(2, object);
    let (status, headers, body) = request(
        &server,
        "POST",
        "/api/v1/namespaces/pb-unknown/configmaps?fieldValidation=Strict",
        "application/vnd.kubernetes.protobuf",
        &[b"k8s\0".as_slice(), &envelope.0].concat(),
    );
    assert_eq!(status, 201, "{body}");
    assert!(warnings(&headers).is_empty(), "{headers:?}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["metadata"].get("clusterName"), None, "{body}");
    // An update too.
    let (status, headers, body) = request(
        &server,
        "PUT",
        "/api/v1/namespaces/pb-unknown/configmaps/cm0?fieldValidation=Strict",
        "application/vnd.kubernetes.protobuf",
        &config_map_body("cm0", &[901]),
    );
    assert_eq!(status, 200, "{body}");
    assert!(warnings(&headers).is_empty(), "{headers:?}");
}

/// Whether every field of `want` is in `got` with the same value: `got` is a Go object printed
/// by kubectl, which spells out zero values (`status: {loadBalancer: {}}`) the JSON answer
/// leaves out.
fn contains(got: &Value, want: &Value, at: &str) -> Result<(), String> {
    match (got, want) {
        (Value::Object(got), Value::Object(want)) => want.iter().try_for_each(|(key, value)| {
            let inner = format!("{at}.{key}");
            got.get(key)
                .ok_or_else(|| format!("{inner} missing"))
                .and_then(|got| contains(got, value, &inner))
        }),
        (Value::Array(got), Value::Array(want)) if got.len() == want.len() => got
            .iter()
            .zip(want)
            .enumerate()
            .try_for_each(|(i, (got, want))| contains(got, want, &format!("{at}[{i}]"))),
        _ if got == want => Ok(()),
        _ => Err(format!("{at}: got {got}, want {want}")),
    }
}

/// What one protobuf-reading kubectl sees: each created object (answered in protobuf, printed
/// by kubectl from the Go object it decoded) holds everything `get` (JSON) shows; a failure's
/// `Status` is read for its message; `events` lists and `events --watch` watches in protobuf.
fn reads_protobuf_answers(k: &Kubectl<'_>, ns: &str) -> Result<(), String> {
    k.ok(&["create", "namespace", ns])?;
    let creates: &[(&[&str], &str)] = &[
        (&["configmap", "c", "--from-literal=a=b"], "configmap/c"),
        (
            &[
                "deployment",
                "d",
                "--image=nginx",
                "--port=80",
                "--replicas=2",
            ],
            "deployment/d",
        ),
        (&["service", "clusterip", "s", "--tcp=80:8080"], "service/s"),
        (
            &[
                "poddisruptionbudget",
                "p",
                "--selector=app=d",
                "--min-available=50%",
            ],
            "poddisruptionbudget/p",
        ),
        (
            &["priorityclass", "pc-{ns}", "--value=7"],
            "priorityclass/pc-{ns}",
        ),
    ];
    for (args, object) in creates {
        let args: Vec<String> = args.iter().map(|a| a.replace("{ns}", ns)).collect();
        let object = object.replace("{ns}", ns);
        let mut call: Vec<&str> = vec!["create"];
        call.extend(args.iter().map(String::as_str));
        call.extend(["-n", ns, "-o", "json"]);
        let created: Value = serde_json::from_str(&k.ok(&call)?)
            .map_err(|e| format!("create {object} -o json: {e}"))?;
        let read = k.get_json(ns, &object)?;
        contains(&created, &read, &object)?;
    }
    let again = k.run(&["create", "configmap", "c", "--from-literal=a=b", "-n", ns]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    if again.status.success() || !stderr.contains(r#"configmaps "c" already exists"#) {
        return Err(format!(
            "a second create did not fail as AlreadyExists: {stderr}"
        ));
    }

    let event = |name: &str, message: &str| {
        format!(
            "apiVersion: v1\nkind: Event\nmetadata:\n  name: {name}\n  namespace: {ns}\n\
             involvedObject:\n  kind: Deployment\n  name: d\n  namespace: {ns}\n\
             reason: Tested\nmessage: {message}\ntype: Normal\n"
        )
    };
    let first = k.file("first-event.yaml", &event("e1", "listed over protobuf"));
    k.ok(&["create", "-f", first.to_str().unwrap()])?;
    let listed = k.ok(&["events", "-n", ns])?;
    if !listed.contains("listed over protobuf") || !listed.contains("Deployment/d") {
        return Err(format!("kubectl events listed: {listed}"));
    }

    let (mut watch, rx) = k.spawn_lines(&["events", "--watch", "-n", ns]);
    let result = (|| {
        let mut seen = Vec::new();
        let mut wait_for = |needle: &str| -> Result<(), String> {
            let deadline = Instant::now() + Duration::from_secs(15);
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(line) if line.contains(needle) => return Ok(()),
                    Ok(line) => seen.push(line),
                    Err(_) => {
                        return Err(format!("events --watch never showed {needle:?}: {seen:?}"));
                    }
                }
            }
        };
        // The initial events come first: once listed, the watch is established.
        wait_for("listed over protobuf")?;
        let second = k.file("second-event.yaml", &event("e2", "watched over protobuf"));
        k.ok(&["create", "-f", second.to_str().unwrap()])?;
        wait_for("watched over protobuf")
    })();
    let _ = watch.kill();
    let _ = watch.wait();
    result
}

#[test]
fn kubectl_reads_protobuf_answers() {
    let server = KapiServer::start(&ServerOptions::default()).unwrap();
    let mut failures = Vec::new();
    let mut ran = Vec::new();
    for binary in kubectl_binaries() {
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::new(&binary, &server, dir.path());
        let name = binary.file_name().unwrap().to_string_lossy().into_owned();
        match k.client_minor() {
            Ok(minor) if minor >= FIRST_PROTOBUF_MINOR => {}
            Ok(_) => continue,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        }
        let ns = format!("pb-read-{}", name.replace('.', "-"));
        match reads_protobuf_answers(&k, &ns) {
            Ok(()) => ran.push(name),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!("protobuf-reading kubectls: {ran:?}");
    assert_no_failures(&failures, &server);
    // The test image carries kubectl 1.32 and newer: without them this test would prove nothing.
    assert!(!ran.is_empty(), "no kubectl 1.32 or newer ran");
}
