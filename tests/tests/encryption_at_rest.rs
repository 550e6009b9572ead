//! Encryption at rest with kube-apiserver's `--encryption-provider-config`: with upstream's
//! `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`), the values of the resources it
//! lists never reach the data directory (or etcd) in plain text, and read back after a
//! restart; keys rotate as upstream's documentation describes ("Rotating a decryption key":
//! add the new key first, rewrite every Secret with `kubectl get secrets -A -o json | kubectl
//! replace -f -`, drop the old key); a data directory written without encryption opens with it
//! and with it turned off again (`identity` first).
//!
//! Upstream: `staging/src/k8s.io/apiserver/pkg/server/options/encryptionconfig/config.go`,
//! `staging/src/k8s.io/apiserver/pkg/storage/value/encrypt/{aes,secretbox,identity}`.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

#[path = "../../runtime/tests/support/etcd.rs"]
mod etcd;

use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use kapi_e2e::{KapiServer, Kubectl, ServerOptions};

/// Two 32-byte keys, base64.
const KEY1: &str = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbz8/Pz8=";
const KEY2: &str = "YW5vdGhlciB0aGlydHktdHdvIGJ5dGUga2V5ISEhISE=";

/// What a Secret and a ConfigMap hold: distinctive enough that no other bytes match.
const SECRET_VALUE: &str = "enc-at-rest-secret-7f3a9c21d4";
const MAP_VALUE: &str = "enc-at-rest-configmap-5be08e61aa";

/// An EncryptionConfiguration: `secrets` with `secret_providers`; every core resource (`*.`,
/// so ConfigMaps through the wildcard) with aesgcm and key1.
fn config(secret_providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers: {secret_providers}
- resources: ['*.']
  providers:
  - aesgcm:
      keys: [{{name: gcm1, secret: '{KEY1}'}}]
  - identity: {{}}
"
    )
}

/// An EncryptionConfiguration of `secrets` alone.
fn secrets_only(providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers: {providers}
"
    )
}

fn aescbc(keys: &[(&str, &str)]) -> String {
    let keys: Vec<String> = keys
        .iter()
        .map(|(name, secret)| format!("{{name: {name}, secret: '{secret}'}}"))
        .collect();
    format!("{{aescbc: {{keys: [{}]}}}}", keys.join(", "))
}

/// Every file under `dir`, recursively, as (path, bytes).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The files under `dir` holding `needle`.
fn holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|(_, bytes)| contains(bytes, needle.as_bytes()))
        .map(|(path, _)| path)
        .collect()
}

fn base64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Asserts neither value, nor its base64, is anywhere under `dir`, and that `marker` (a
/// provider's prefix) is: the bytes searched are the stored ones.
fn assert_encrypted(dir: &Path, marker: &str) {
    for needle in [SECRET_VALUE, MAP_VALUE] {
        for form in [needle.to_owned(), base64(needle)] {
            let found = holding(dir, &form);
            assert!(
                found.is_empty(),
                "{form} is stored in plain text in {found:?}"
            );
        }
    }
    assert!(
        !holding(dir, marker).is_empty(),
        "no {marker} value under {}",
        dir.display()
    );
}

/// A server on `data_dir` with the configuration `text`, or without encryption.
fn start(data_dir: &Path, text: Option<&str>) -> KapiServer {
    let mut options = ServerOptions {
        data_dir: Some(data_dir.to_path_buf()),
        ..ServerOptions::default()
    };
    if let Some(text) = text {
        let file = data_dir.with_extension("encryption.yaml");
        std::fs::write(&file, text).unwrap();
        options.args = vec![
            "--encryption-provider-config".to_owned(),
            file.display().to_string(),
        ];
    }
    KapiServer::start(&options).unwrap()
}

fn stop(mut server: KapiServer) {
    let status = server.terminate(Duration::from_secs(30)).unwrap();
    assert!(status.success(), "{status}: {}", server.stderr());
}

/// The Secret's value as kubectl reads it.
fn secret_value(k: &Kubectl<'_>) -> String {
    let encoded = k.expect_ok(&["get", "secret", "s", "-o", "jsonpath={.data.password}"]);
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .unwrap(),
    )
    .unwrap()
}

fn create_objects(k: &Kubectl<'_>) {
    let literal = format!("--from-literal=password={SECRET_VALUE}");
    k.expect_ok(&["create", "secret", "generic", "s", &literal]);
    let literal = format!("--from-literal=v={MAP_VALUE}");
    k.expect_ok(&["create", "configmap", "c", &literal]);
}

/// `kubectl get secrets -A -o json | kubectl replace -f -`, upstream's rewrite of every Secret;
/// answers whether it changed the resourceVersion of Secret `s`.
fn rewrite_secrets(k: &Kubectl<'_>) -> bool {
    let version = || {
        k.expect_ok(&[
            "get",
            "secret",
            "s",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
    };
    let before = version();
    let all = k.expect_ok(&["get", "secrets", "-A", "-o", "json"]);
    let file = k.file("secrets.json", &all);
    k.expect_ok(&["replace", "-f", file.to_str().unwrap()]);
    before != version()
}

#[test]
fn secrets_and_wildcard_configmaps_are_encrypted_in_the_data_directory() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let text = config(&format!("[{}]", aescbc(&[("key1", KEY1)])));
    let server = start(&data, Some(&text));
    let kubectl_home = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, kubectl_home.path());
    create_objects(&k);
    assert_eq!(secret_value(&k), SECRET_VALUE);
    stop(server);
    assert_encrypted(&data, "k8s:enc:aescbc:v1:key1:");
    assert!(!holding(&data, "k8s:enc:aesgcm:v1:gcm1:").is_empty());

    // A restart with the same file reads both back.
    let server = start(&data, Some(&text));
    let k = Kubectl::on_path(&server, kubectl_home.path());
    assert_eq!(secret_value(&k), SECRET_VALUE);
    let value = k.expect_ok(&["get", "configmap", "c", "-o", "jsonpath={.data.v}"]);
    assert_eq!(value, MAP_VALUE);
    stop(server);

    // Without the file the encrypted objects are refused as upstream's identity transformer
    // refuses them (identity.go): the start stops at the first one it reads.
    let options = ServerOptions {
        data_dir: Some(data.clone()),
        ..ServerOptions::default()
    };
    let error = KapiServer::start(&options).unwrap_err();
    assert!(
        error.contains("identity transformer tried to read encrypted data"),
        "{error}"
    );
}

#[test]
fn keys_rotate_as_upstream_documents() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let home = tempfile::tempdir().unwrap();
    let server = start(
        &data,
        Some(&config(&format!("[{}]", aescbc(&[("key1", KEY1)])))),
    );
    create_objects(&Kubectl::on_path(&server, home.path()));
    stop(server);

    // The new key first, the old one still listed: everything reads; a rewrite moves every
    // Secret to key2, even though none changed.
    let both = config(&format!("[{}]", aescbc(&[("key2", KEY2), ("key1", KEY1)])));
    let server = start(&data, Some(&both));
    let k = Kubectl::on_path(&server, home.path());
    assert!(
        rewrite_secrets(&k),
        "the stale Secret was not written again"
    );
    stop(server);
    assert_encrypted(&data, "k8s:enc:aescbc:v1:key2:");

    // key1 dropped: the Secret reads with key2 alone.
    let server = start(
        &data,
        Some(&config(&format!("[{}]", aescbc(&[("key2", KEY2)])))),
    );
    let k = Kubectl::on_path(&server, home.path());
    assert_eq!(secret_value(&k), SECRET_VALUE);
    // A second rewrite finds nothing stale: a no-op, as upstream's.
    assert!(!rewrite_secrets(&k));
    stop(server);
}

/// A Secret whose key was dropped before it was rewritten: reads of it fail as upstream's
/// (the etcd3 store's internal error with the transformer's message), other objects serve on.
#[test]
fn a_secret_no_listed_key_reads_is_an_internal_error() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let home = tempfile::tempdir().unwrap();
    let server = start(
        &data,
        Some(&secrets_only(&format!("[{}]", aescbc(&[("key1", KEY1)])))),
    );
    create_objects(&Kubectl::on_path(&server, home.path()));
    stop(server);
    let server = start(
        &data,
        Some(&secrets_only(&format!("[{}]", aescbc(&[("key2", KEY2)])))),
    );
    let k = Kubectl::on_path(&server, home.path());
    let error = k.expect_failure(&["get", "secret", "s"]);
    assert!(
        error.contains(
            "Internal error occurred: no matching key was found for the provided AES transformer"
        ),
        "{error}"
    );
    let error = k.expect_failure(&["get", "secrets"]);
    assert!(
        error.contains("Internal error occurred: unable to transform key \"/registry/core/secrets/default/s\": no matching key was found for the provided AES transformer"),
        "{error}"
    );
    let value = k.expect_ok(&["get", "configmap", "c", "-o", "jsonpath={.data.v}"]);
    assert_eq!(value, MAP_VALUE);
    stop(server);
}

#[test]
fn stored_data_outlives_turning_encryption_on_and_off() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let home = tempfile::tempdir().unwrap();
    // Written without encryption.
    let server = start(&data, None);
    create_objects(&Kubectl::on_path(&server, home.path()));
    stop(server);

    // Encryption on, identity listed: the plain Secret reads; a rewrite encrypts it.
    let on = secrets_only(&format!(
        "[{}, {{identity: {{}}}}]",
        aescbc(&[("key1", KEY1)])
    ));
    let server = start(&data, Some(&on));
    let k = Kubectl::on_path(&server, home.path());
    assert_eq!(secret_value(&k), SECRET_VALUE);
    assert!(rewrite_secrets(&k));
    stop(server);

    // Without identity the Secret is read through key1 only: it was rewritten encrypted.
    let strict = secrets_only(&format!("[{}]", aescbc(&[("key1", KEY1)])));
    let server = start(&data, Some(&strict));
    assert_eq!(
        secret_value(&Kubectl::on_path(&server, home.path())),
        SECRET_VALUE
    );
    stop(server);

    // Encryption off: identity first, aescbc second; the Secret still reads, and a rewrite
    // stores it plain again, which a server without the file reads.
    let off = secrets_only(&format!(
        "[{{identity: {{}}}}, {}]",
        aescbc(&[("key1", KEY1)])
    ));
    let server = start(&data, Some(&off));
    let k = Kubectl::on_path(&server, home.path());
    assert_eq!(secret_value(&k), SECRET_VALUE);
    assert!(rewrite_secrets(&k));
    stop(server);
    let server = start(&data, None);
    assert_eq!(
        secret_value(&Kubectl::on_path(&server, home.path())),
        SECRET_VALUE
    );
    stop(server);
}

#[test]
fn a_refused_file_stops_the_server_with_upstreams_message() {
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("encryption.yaml");
    std::fs::write(
        &file,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*']\n  providers: [{secretbox: {keys: [{name: k, secret: c2hvcnQ=}]}}]\n",
    )
    .unwrap();
    let options = ServerOptions {
        args: vec![
            "--encryption-provider-config".to_owned(),
            file.display().to_string(),
        ],
        ..ServerOptions::default()
    };
    let error = KapiServer::start(&options).unwrap_err();
    assert!(
        error.contains(&format!(
            "invalid --encryption-provider-config {}: error while parsing file: [resources[0].resources[0]: Invalid value: \"*\": use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources, resources[0].providers[0].secretbox.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 5, expected one of [32]]",
            file.display()
        )),
        "{error}"
    );
}

#[test]
fn over_etcd_the_values_are_encrypted_in_etcds_data() {
    if !etcd::etcd_available() {
        eprintln!("skipped: no etcd binary on PATH");
        return;
    }
    let cluster = etcd::EtcdCluster::single();
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("encryption.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, configmaps]
  providers:
  - secretbox:
      keys: [{{name: box1, secret: '{KEY1}'}}]
"
        ),
    )
    .unwrap();
    let options = ServerOptions {
        etcd_servers: Some(cluster.endpoints_flag()),
        args: vec![
            "--encryption-provider-config".to_owned(),
            file.display().to_string(),
        ],
        ..ServerOptions::default()
    };
    let home = tempfile::tempdir().unwrap();
    let server = KapiServer::start(&options).unwrap();
    create_objects(&Kubectl::on_path(&server, home.path()));
    stop(server);
    // etcd's write-ahead log and its database: neither holds the values.
    assert_encrypted(&cluster.members[0].data_dir, "k8s:enc:secretbox:v1:box1:");

    let server = KapiServer::start(&options).unwrap();
    let k = Kubectl::on_path(&server, home.path());
    assert_eq!(secret_value(&k), SECRET_VALUE);
    let value = k.expect_ok(&["get", "configmap", "c", "-o", "jsonpath={.data.v}"]);
    assert_eq!(value, MAP_VALUE);
    stop(server);
}
