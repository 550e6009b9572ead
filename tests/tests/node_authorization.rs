//! Kubelets' access as kubeadm's kube-apiserver limits it: `--authorization-mode=Node,RBAC`
//! and `--enable-admission-plugins=NodeRestriction`, with node users of a token file
//! (`system:node:<name>` in `system:nodes`, upstream's `pkg/auth/nodeidentifier/default.go`),
//! through kubectl, the Python client and the kube crate.
//!
//! Upstream's behaviour mirrored: the Node authorizer allows a node the Secrets, ConfigMaps
//! and service accounts of the pods bound to it and refuses the rest with "no relationship
//! found between node '<node>' and this object"
//! (`plugin/pkg/auth/authorizer/node/node_authorizer.go`, `authorize`); the graph follows
//! bindings and deletes (`graph_populator.go`); NodeRestriction limits a node to its own Node,
//! Lease and labels (`plugin/pkg/admission/noderestriction/admission.go`, `admitNode`,
//! `admitLease`, `admitServiceAccount`, `admitPodCreate`).

use std::path::Path;
use std::process::Command;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions};
use serde_json::{Value, json};

/// A TLS server as kubeadm runs kube-apiserver, whose token file (written in `dir`) knows the
/// nodes `n1` and `n2`.
fn kubeadm_like(dir: &Path) -> KapiServer {
    kubeadm_like_of(dir, ServerOptions::default())
}

/// [`kubeadm_like`] with `options` (a release).
fn kubeadm_like_of(dir: &Path, options: ServerOptions) -> KapiServer {
    let tokens = dir.join("tokens.csv");
    std::fs::write(
        &tokens,
        "n1-token,system:node:n1,n1,system:nodes\nn2-token,system:node:n2,n2,system:nodes\n",
    )
    .unwrap_or_else(|e| panic!("cannot write the token file: {e}"));
    KapiServer::start(&ServerOptions {
        args: vec![
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=Node,RBAC".to_owned(),
            "--enable-admission-plugins=NodeRestriction".to_owned(),
        ],
        ..options.tls()
    })
    .unwrap_or_else(|e| panic!("the server did not start: {e}"))
}

/// Creates `object` as the admin.
fn create(admin: &Kubectl<'_>, name: &str, object: &Value) {
    let path = admin.file(&format!("{name}.json"), &object.to_string());
    let path = path.display().to_string();
    admin.expect_ok(&["create", "-f", &path]);
}

/// The refusal kube-apiserver writes for a node's request the Node authorizer has no
/// relationship for (`forbiddenMessage` and the authorizer's reason).
fn no_relationship(node: &str, verb: &str, resource: &str, name: &str) -> String {
    format!(
        r#"{resource} "{name}" is forbidden: User "system:node:{node}" cannot {verb} resource "{resource}" in API group "" in the namespace "default": no relationship found between node '{node}' and this object"#
    )
}

/// Sets up the cluster of the tests: nodes, secrets, configmaps and the pod `web`.
fn cluster(admin: &Kubectl<'_>) {
    for node in ["n1", "n2"] {
        create(
            admin,
            node,
            &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}),
        );
    }
    for name in ["s1", "s2"] {
        admin.expect_ok(&["create", "secret", "generic", name, "--from-literal=k=v"]);
    }
    for name in ["c1", "c2"] {
        admin.expect_ok(&["create", "configmap", name, "--from-literal=k=v"]);
    }
    create(
        admin,
        "web",
        &json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "containers": [{
                    "name": "app",
                    "image": "nginx",
                    "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "k"}}}]
                }],
                "volumes": [{"name": "config", "configMap": {"name": "c1"}}]
            }
        }),
    );
}

/// Binds pod `web` to `node` through `pods/binding`, as a scheduler does.
fn bind(admin: &Kubectl<'_>, node: &str) {
    let binding = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}
    });
    let path = admin.file("binding.json", &binding.to_string());
    let path = path.display().to_string();
    admin.expect_ok(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/web/binding",
        "-f",
        &path,
    ]);
}

/// A node reads the Secret and ConfigMap of a pod once the pod is bound to it, and no longer
/// once the pod is deleted; another node, and other objects, stay refused with upstream's
/// message.
#[test]
fn a_node_reads_what_the_pods_bound_to_it_reference() {
    let dir = tempfile::tempdir().unwrap();
    let server = kubeadm_like(dir.path());
    let admin = Kubectl::on_path(&server, dir.path());
    cluster(&admin);
    let n1 = admin.as_user("n1", json!({"token": "n1-token"}));
    let n2 = admin.as_user("n2", json!({"token": "n2-token"}));

    let refused = n1.expect_failure(&["get", "secret", "s1"]);
    assert!(
        refused.contains(&no_relationship("n1", "get", "secrets", "s1")),
        "before the binding: {refused}"
    );

    bind(&admin, "n1");
    assert!(
        n1.expect_ok(&["get", "secret", "s1", "-o", "name"])
            .contains("secret/s1")
    );
    assert!(
        n1.expect_ok(&["get", "configmap", "c1", "-o", "name"])
            .contains("configmap/c1")
    );
    // kubelets watch one object with a metadata.name field selector.
    n1.expect_ok(&["get", "secrets", "--field-selector", "metadata.name=s1"]);
    let refused = n1.expect_failure(&["get", "secret", "s2"]);
    assert!(
        refused.contains(&no_relationship("n1", "get", "secrets", "s2")),
        "{refused}"
    );
    let refused = n1.expect_failure(&["get", "configmap", "c2"]);
    assert!(
        refused.contains(&no_relationship("n1", "get", "configmaps", "c2")),
        "{refused}"
    );
    let refused = n1.expect_failure(&["get", "secrets"]);
    assert!(
        refused.contains(
            r#"secrets is forbidden: User "system:node:n1" cannot list resource "secrets" in API group "" in the namespace "default": No Object name found"#
        ),
        "{refused}"
    );
    let refused = n2.expect_failure(&["get", "secret", "s1"]);
    assert!(
        refused.contains(&no_relationship("n2", "get", "secrets", "s1")),
        "{refused}"
    );
    // The static rules of `system:node`: services are readable by every node.
    n2.expect_ok(&["get", "services"]);

    admin.expect_ok(&["delete", "pod", "web", "--grace-period=0", "--force"]);
    let refused = n1.expect_failure(&["get", "secret", "s1"]);
    assert!(
        refused.contains(&no_relationship("n1", "get", "secrets", "s1")),
        "after the pod's delete: {refused}"
    );
}

/// `kubectl auth can-i` as a node (a SelfSubjectAccessReview of the impersonated user) gets
/// the Node authorizer's answers.
#[test]
fn can_i_as_a_node() {
    let dir = tempfile::tempdir().unwrap();
    let server = kubeadm_like(dir.path());
    let admin = Kubectl::on_path(&server, dir.path());
    cluster(&admin);
    bind(&admin, "n1");
    let can_i = |node: &str, args: &[&str]| {
        let user = format!("system:node:{node}");
        let mut all = vec!["auth", "can-i", "--as", &user, "--as-group", "system:nodes"];
        all.extend_from_slice(args);
        let output = admin.run(&all);
        // kubectl prints the authorizers' reason after a "no": `no - <reason>`.
        let answer = String::from_utf8_lossy(&output.stdout);
        answer
            .split(" - ")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let lease = ["-n", "kube-node-lease"];
    for (node, args, answer) in [
        ("n1", vec!["get", "secret/s1"], "yes"),
        ("n1", vec!["get", "secret/s2"], "no"),
        ("n2", vec!["get", "secret/s1"], "no"),
        ("n1", vec!["get", "configmap/c1"], "yes"),
        ("n1", vec!["list", "secrets"], "no"),
        ("n1", vec!["get", "node/n1"], "yes"),
        ("n1", vec!["get", "node/n2"], "no"),
        ("n1", vec!["list", "nodes"], "no"),
        (
            "n1",
            vec![
                "update",
                "leases.coordination.k8s.io/n1",
                lease[0],
                lease[1],
            ],
            "yes",
        ),
        (
            "n1",
            vec![
                "update",
                "leases.coordination.k8s.io/n2",
                lease[0],
                lease[1],
            ],
            "no",
        ),
        ("n1", vec!["get", "leases.coordination.k8s.io/n1"], "no"),
        (
            "n1",
            vec!["create", "serviceaccounts/default", "--subresource=token"],
            "yes",
        ),
        (
            "n2",
            vec!["create", "serviceaccounts/default", "--subresource=token"],
            "no",
        ),
        ("n1", vec!["get", "pod/web"], "yes"),
        ("n2", vec!["get", "pod/web"], "no"),
        ("n1", vec!["list", "services"], "yes"),
        ("n1", vec!["delete", "secret/s1"], "no"),
        ("n1", vec!["create", "deployments.apps"], "no"),
    ] {
        assert_eq!(
            can_i(node, &args),
            answer,
            "{node}: can-i {}",
            args.join(" ")
        );
    }
    let output = admin.run(&[
        "auth",
        "can-i",
        "--as",
        "system:node:n1",
        "--as-group",
        "system:nodes",
        "get",
        "secret/s2",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "no - no relationship found between node 'n1' and this object"
    );
    // Without the node group the user is no node: RBAC alone answers.
    let output = admin.run(&[
        "auth",
        "can-i",
        "--as",
        "system:node:n1",
        "get",
        "secret/s1",
    ]);
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "no");
}

/// NodeRestriction: a node writes its own Node's status and kubelet labels, but neither
/// another Node, nor restricted labels, nor its taints; only its own Lease; only tokens bound
/// to its pods; only mirror pods.
#[test]
fn node_restriction_limits_writes_to_the_nodes_own() {
    let dir = tempfile::tempdir().unwrap();
    let server = kubeadm_like(dir.path());
    let admin = Kubectl::on_path(&server, dir.path());
    cluster(&admin);
    let n1 = admin.as_user("n1", json!({"token": "n1-token"}));

    // (Its status a kubelet patches without reading `nodes/status` first, which the Node
    // authorizer does not allow: the Python client's test does.)
    n1.expect_ok(&[
        "label",
        "node",
        "n1",
        "kubernetes.io/hostname=n1",
        "example.com/free=yes",
    ]);
    let refused = n1.expect_failure(&[
        "label",
        "node",
        "n1",
        "node-restriction.kubernetes.io/secure=yes",
    ]);
    assert!(
        refused.contains(
            r#"nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/secure"#
        ),
        "{refused}"
    );
    let refused = n1.expect_failure(&[
        "label",
        "node",
        "n1",
        "node-role.kubernetes.io/control-plane=",
    ]);
    assert!(
        refused.contains("is not allowed to modify labels: node-role.kubernetes.io/control-plane"),
        "{refused}"
    );
    let refused = n1.expect_failure(&["taint", "node", "n1", "dedicated=x:NoSchedule"]);
    assert!(
        refused.contains(r#"nodes "n1" is forbidden: node "n1" is not allowed to modify taints"#),
        "{refused}"
    );

    let lease = |name: &str| {
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}
        })
    };
    let own = n1.file("lease-n1.json", &lease("n1").to_string());
    n1.expect_ok(&["create", "-f", &own.display().to_string()]);
    let other = n1.file("lease-n2.json", &lease("n2").to_string());
    let refused = n1.expect_failure(&["create", "-f", &other.display().to_string()]);
    assert!(
        refused.contains(
            r#"leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node"#
        ),
        "{refused}"
    );

    // A pod that is not a mirror pod.
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "static", "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx"}]}
    });
    let path = n1.file("pod.json", &pod.to_string());
    let refused = n1.expect_failure(&["create", "-f", &path.display().to_string()]);
    assert!(
        refused.contains(
            r#"pods "static" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#
        ),
        "{refused}"
    );
    // A mirror pod owned by its Node.
    let uid = admin.expect_ok(&["get", "node", "n1", "-o", "jsonpath={.metadata.uid}"]);
    let mut mirror = pod.clone();
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
    mirror["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": uid, "controller": true}]);
    let path = n1.file("mirror.json", &mirror.to_string());
    n1.expect_ok(&["create", "-f", &path.display().to_string()]);

    // Tokens: only bound to a pod of the node, with its uid.
    bind(&admin, "n1");
    let refused = n1.expect_failure(&["create", "token", "default"]);
    assert!(
        refused.contains(
            r#"serviceaccounts "default" is forbidden: node requested token not bound to a pod"#
        ),
        "{refused}"
    );
    let pod_uid = admin.expect_ok(&["get", "pod", "web", "-o", "jsonpath={.metadata.uid}"]);
    n1.expect_ok(&[
        "create",
        "token",
        "default",
        "--bound-object-kind=Pod",
        "--bound-object-name=web",
        &format!("--bound-object-uid={pod_uid}"),
    ]);
}

/// Before AuthorizeNodeWithSelectors (1.28), the Node authorizer reads Nodes and pods by
/// `system:node`'s rules: every node's, while Secrets still follow the graph.
#[test]
fn before_selectors_a_node_reads_every_node() {
    let dir = tempfile::tempdir().unwrap();
    let server = kubeadm_like_of(dir.path(), ServerOptions::release("1.28"));
    let admin = Kubectl::on_path(&server, dir.path());
    cluster(&admin);
    let n1 = admin.as_user("n1", json!({"token": "n1-token"}));
    assert!(
        n1.expect_ok(&["get", "nodes", "-o", "name"])
            .contains("node/n2")
    );
    n1.expect_ok(&["get", "pods", "-A"]);
    let refused = n1.expect_failure(&["get", "secret", "s1"]);
    assert!(
        refused.contains(&no_relationship("n1", "get", "secrets", "s1")),
        "{refused}"
    );
}

/// A CertificateSigningRequest of a node for a kubelet signer, with `common_name`.
fn kubelet_csr(name: &str, common_name: &str) -> Value {
    use base64::Engine as _;
    let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("no key: {e}"));
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    let pem = params
        .serialize_request(&key)
        .and_then(|request| request.pem())
        .unwrap_or_else(|e| panic!("no CSR: {e}"));
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": "kubernetes.io/kubelet-serving",
            "usages": ["digital signature", "key encipherment", "server auth"]
        }
    })
}

/// NodeRestriction's `admitCSR`: a node asks for kubelet certificates in its own name only.
#[test]
fn a_node_asks_for_certificates_in_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = kubeadm_like(dir.path());
    let admin = Kubectl::on_path(&server, dir.path());
    let n1 = admin.as_user("n1", json!({"token": "n1-token"}));
    let own = n1.file(
        "own.json",
        &kubelet_csr("own", "system:node:n1").to_string(),
    );
    n1.expect_ok(&["create", "-f", &own.display().to_string()]);
    let other = n1.file(
        "other.json",
        &kubelet_csr("other", "system:node:n2").to_string(),
    );
    let refused = n1.expect_failure(&["create", "-f", &other.display().to_string()]);
    assert!(
        refused.contains(
            r#"certificatesigningrequests.certificates.k8s.io "other" is forbidden: can only create a node CSR with CN=system:node:n1"#
        ),
        "{refused}"
    );
}

/// The Python client as node n1: patching another node is NodeRestriction's 403.
#[test]
fn the_python_client_is_refused_another_node() {
    let dir = tempfile::tempdir().unwrap();
    let server = kubeadm_like(dir.path());
    let admin = Kubectl::on_path(&server, dir.path());
    cluster(&admin);
    // Writes the kubeconfig `kubeconfig-n1` the script reads.
    admin.as_user("n1", json!({"token": "n1-token"}));
    let script = r#"
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=sys.argv[1])
api = client.CoreV1Api()
api.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
try:
    api.patch_node("n2", {"metadata": {"labels": {"a": "b"}}})
    raise SystemExit("patched n2")
except ApiException as e:
    assert e.status == 403, e.status
    import json
    status = json.loads(e.body)
    assert status["message"] == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"', status
    assert status["reason"] == "Forbidden", status
print("ok")
"#;
    let output = Command::new(kapi_e2e::python())
        .arg("-c")
        .arg(script)
        .arg(dir.path().join("kubeconfig-n1"))
        .output()
        .unwrap();
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
        "{}{}\nserver stderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.stderr()
    );
}

/// The kube crate as node n1: the bound pod's Secret, and upstream's 403 for another.
#[tokio::test]
async fn the_kube_crate_reads_as_a_node() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use kube::{Api, Client, Config};

    let dir = tempfile::tempdir().unwrap();
    let server = kubeadm_like(dir.path());
    let admin = Kubectl::on_path(&server, dir.path());
    cluster(&admin);
    bind(&admin, "n1");
    let text = std::fs::read_to_string(server.kubeconfig()).unwrap();
    let mut config: Value = serde_yaml_ng::from_str(&text).unwrap();
    config["users"][0]["user"] = json!({"token": "n1-token"});
    let kubeconfig: Kubeconfig = serde_json::from_value(config).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(Client::try_from(config).unwrap(), "default");
    let s1 = secrets.get("s1").await.unwrap();
    assert_eq!(s1.metadata.name.as_deref(), Some("s1"));
    match secrets.get("s2").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403);
            assert_eq!(
                status.message,
                no_relationship("n1", "get", "secrets", "s2")
            );
        }
        other => panic!("n1 read s2: {other:?}"),
    }
}
