//! Services get their addresses as on a real cluster, and the server starts with what a
//! cluster holds from the start, seen through `kubectl` and the official Python client.
//!
//! Upstream sources mirrored: the Service storage's allocation
//! (`pkg/registry/core/service/storage/alloc.go`: `allocateCreate`, `initIPFamilyFields`,
//! `initNodePorts`; `rest.go`: `patchAllocatedValues`), the allocators' errors
//! (`pkg/registry/core/service/ipallocator` and `portallocator`: "provided IP is already
//! allocated", "provided port is not in the valid range..."), the strategy's
//! `dropTypeDependentFields`, `validateUpgradeDowngradeClusterIPs` ("may not change once set")
//! in `pkg/apis/core/validation`, the controlplane's `kubernetes` Service and endpoint
//! reconcilers (`pkg/controlplane/controller/kubernetesservice`,
//! `pkg/controlplane/reconcilers`), and kube-controller-manager's serviceaccounts controller.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::Command;
use std::time::{Duration, Instant};

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, python};
use serde_json::{Value, json};

fn get(k: &Kubectl<'_>, what: &str) -> Value {
    k.expect_json(&["get", what])
}

/// Waits (bounded) until `kubectl get <what>` succeeds.
fn eventually(k: &Kubectl<'_>, args: &[&str]) -> String {
    let started = Instant::now();
    loop {
        match k.ok(args) {
            Ok(out) => return out,
            Err(e) if started.elapsed() > Duration::from_secs(10) => panic!("{e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

#[test]
fn a_new_server_holds_the_kubernetes_service_and_default_service_accounts() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let port = server.addr().port();

        // The first address of 10.0.0.0/24; port 443 `https` to the server's own port.
        let service = get(&k, "service/kubernetes");
        assert_eq!(
            service["metadata"]["labels"],
            json!({"component": "apiserver", "provider": "kubernetes"})
        );
        let spec = &service["spec"];
        assert_eq!(spec["clusterIP"], "10.0.0.1", "{release}");
        assert_eq!(spec["clusterIPs"], json!(["10.0.0.1"]), "{release}");
        assert_eq!(spec["type"], "ClusterIP", "{release}");
        assert_eq!(
            spec["ports"],
            json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]),
            "{release}"
        );
        if release == "1.20" {
            // IPv6DualStack was alpha in 1.20: no family fields.
            assert!(spec.get("ipFamilies").is_none(), "{spec}");
        } else {
            assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
            assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
        }

        let endpoints = get(&k, "endpoints/kubernetes");
        assert_eq!(
            endpoints["subsets"],
            json!([{"addresses": [{"ip": "127.0.0.1"}],
                    "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]),
            "{release}"
        );
        let slice = get(&k, "endpointslices.discovery.k8s.io/kubernetes");
        let version = if release == "1.20" { "v1beta1" } else { "v1" };
        assert_eq!(
            slice["apiVersion"],
            format!("discovery.k8s.io/{version}"),
            "{release}"
        );
        assert_eq!(slice["addressType"], "IPv4");
        assert_eq!(
            slice["endpoints"][0]["addresses"],
            json!(["127.0.0.1"]),
            "{release}"
        );
        assert_eq!(slice["ports"][0]["port"], port, "{release}");
        assert_eq!(
            slice["metadata"]["labels"]["kubernetes.io/service-name"],
            "kubernetes"
        );

        // Every namespace has its `default` ServiceAccount: those at start, a new one, and
        // one whose account was deleted.
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            k.expect_ok(&["get", "serviceaccount", "default", "-n", ns]);
        }
        k.expect_ok(&["create", "namespace", "team"]);
        eventually(&k, &["get", "serviceaccount", "default", "-n", "team"]);
        let uid = get(&k, "serviceaccount/default")["metadata"]["uid"].clone();
        k.expect_ok(&["delete", "serviceaccount", "default"]);
        let started = Instant::now();
        loop {
            let again = k
                .ok(&[
                    "get",
                    "serviceaccount",
                    "default",
                    "-o",
                    "jsonpath={.metadata.uid}",
                ])
                .unwrap_or_default();
            if !again.is_empty() && again != uid.as_str().unwrap() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "not made again"
            );
            std::thread::sleep(Duration::from_millis(100));
        }

        // Deleted, the kubernetes Service comes back within the reconcile interval (10 s).
        k.expect_ok(&["delete", "endpoints", "kubernetes"]);
        let started = Instant::now();
        while k.ok(&["get", "endpoints", "kubernetes"]).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "not made again"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

const SERVICES: &str = "apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80}, {name: dns, port: 53, protocol: UDP}]
---
apiVersion: v1
kind: Service
metadata: {name: headless}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: outside}
spec:
  type: ExternalName
  externalName: example.com
---
apiVersion: v1
kind: Service
metadata: {name: fixed}
spec:
  clusterIP: 10.0.0.5
  ports: [{port: 80}]
";

/// `kubectl create service ... --clusterip` with a dry run or for real.
fn create_with_ip(k: &Kubectl<'_>, name: &str, ip: &str, extra: &[&str]) -> Result<String, String> {
    let mut args = vec![
        "create",
        "service",
        "clusterip",
        name,
        "--tcp=80",
        "--clusterip",
        ip,
    ];
    args.extend(extra);
    k.ok(&args)
}

/// `kubectl create service nodeport <name>`, with the node port asked for if any.
fn create_node_port(k: &Kubectl<'_>, name: &str, port: Option<&str>) -> Result<String, String> {
    let mut args = vec!["create", "service", "nodeport", name, "--tcp=80"];
    args.extend(port.map(|port| ["--node-port", port]).into_iter().flatten());
    k.ok(&args)
}

#[test]
fn services_get_cluster_ips_and_node_ports_with_upstreams_errors() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("services.yaml", SERVICES);
        k.expect_ok(&["apply", "-f", file.to_str().unwrap()]);

        let web = get(&k, "service/web")["spec"].clone();
        let ip: std::net::Ipv4Addr = web["clusterIP"].as_str().unwrap().parse().unwrap();
        // Picked from the upper band: 10.0.0.17-10.0.0.254 (the lower 16 kept for requests).
        assert!(
            ip.octets()[..3] == [10, 0, 0] && ip.octets()[3] > 16,
            "{ip}"
        );
        assert_eq!(web["clusterIPs"], json!([ip.to_string()]));
        let node_ports: Vec<i64> = (0..2)
            .map(|i| web["ports"][i]["nodePort"].as_i64().unwrap())
            .collect();
        // Upper band of 30000-32767: from 30086.
        assert!(
            node_ports.iter().all(|p| (30086..=32767).contains(p)),
            "{node_ports:?}"
        );
        assert_ne!(node_ports[0], node_ports[1]);
        if release == "1.36" {
            assert_eq!(web["ipFamilies"], json!(["IPv4"]));
            assert_eq!(web["ipFamilyPolicy"], "SingleStack");
            // A headless Service keeps `None`; with a selector it is single-stack.
            let headless = get(&k, "service/headless")["spec"].clone();
            assert_eq!(headless["ipFamilyPolicy"], "SingleStack");
            assert_eq!(headless["ipFamilies"], json!(["IPv4"]));
        } else {
            assert!(web.get("ipFamilies").is_none(), "{web}");
        }
        let headless = get(&k, "service/headless")["spec"].clone();
        assert_eq!(
            (&headless["clusterIP"], &headless["clusterIPs"]),
            (&json!("None"), &json!(["None"]))
        );
        let outside = get(&k, "service/outside")["spec"].clone();
        assert!(
            outside.get("clusterIP").is_none() && outside.get("ipFamilies").is_none(),
            "{outside}"
        );
        assert_eq!(get(&k, "service/fixed")["spec"]["clusterIP"], "10.0.0.5");

        // Applied again: what the server allocated stays (patchAllocatedValues).
        k.expect_ok(&["apply", "-f", file.to_str().unwrap()]);
        assert_eq!(get(&k, "service/web")["spec"], web, "{release}");

        // A requested address that is taken or outside the range; a port likewise.
        let taken = create_with_ip(&k, "dup", "10.0.0.5", &[]).unwrap_err();
        assert!(
            taken.contains(
                r#"Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.5"}: failed to allocate IP 10.0.0.5: provided IP is already allocated"#
            ),
            "{taken}"
        );
        let outside_range = create_with_ip(&k, "far", "10.1.0.5", &[]).unwrap_err();
        assert!(
            outside_range.contains(
                "failed to allocate IP 10.1.0.5: provided IP is not in the valid range. The range of valid IPs is 10.0.0.0/24"
            ),
            "{outside_range}"
        );
        let port = node_ports[0].to_string();
        let port_taken = create_node_port(&k, "np", Some(&port)).unwrap_err();
        assert!(
            port_taken.contains(&format!(
                "spec.ports[0].nodePort: Invalid value: {port}: provided port is already allocated"
            )),
            "{port_taken}"
        );
        let port_outside = create_node_port(&k, "np", Some("8080")).unwrap_err();
        assert!(
            port_outside.contains(
                "spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"
            ),
            "{port_outside}"
        );

        // The cluster IP may not change.
        let changed = k.expect_failure(&[
            "patch",
            "service",
            "fixed",
            "-p",
            r#"{"spec":{"clusterIP":"10.0.0.6"}}"#,
        ]);
        assert!(
            changed.contains(
                r#"spec.clusterIPs[0]: Invalid value: []string{"10.0.0.6"}: may not change once set"#
            ),
            "{changed}"
        );

        // A dry run answers with the address and keeps nothing.
        let dry =
            create_with_ip(&k, "dry", "10.0.0.7", &["--dry-run=server", "-o", "json"]).unwrap();
        let dry: Value = serde_json::from_str(&dry).unwrap();
        assert_eq!(dry["spec"]["clusterIP"], "10.0.0.7");
        create_with_ip(&k, "seven", "10.0.0.7", &[]).unwrap();

        // Away from NodePort the node ports are released; a deleted Service's address too.
        k.expect_ok(&[
            "patch",
            "service",
            "web",
            "-p",
            r#"{"spec":{"type":"ClusterIP"}}"#,
        ]);
        let now = get(&k, "service/web")["spec"].clone();
        assert!(now["ports"][0].get("nodePort").is_none(), "{now}");
        assert_eq!(now["clusterIP"], web["clusterIP"]);
        create_node_port(&k, "np", Some(&port)).unwrap();
        k.expect_ok(&["delete", "service", "fixed"]);
        create_with_ip(&k, "again", "10.0.0.5", &[]).unwrap();
    }
}

#[test]
fn allocations_survive_a_restart_and_follow_the_configured_ranges() {
    let data = tempfile::tempdir().unwrap();
    let options = ServerOptions {
        data_dir: Some(data.path().join("data")),
        args: vec![
            "--service-cluster-ip-range=10.96.0.0/16".to_owned(),
            "--service-node-port-range=31000-31010".to_owned(),
        ],
        ..ServerOptions::default()
    };
    let (ip, port) = {
        let server = KapiServer::start(&options).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        assert_eq!(
            get(&k, "service/kubernetes")["spec"]["clusterIP"],
            "10.96.0.1"
        );
        create_node_port(&k, "np", None).unwrap();
        let spec = get(&k, "service/np")["spec"].clone();
        let port = spec["ports"][0]["nodePort"].as_i64().unwrap();
        // A range of 11 ports keeps no lower band (smaller than 16).
        assert!((31000..=31010).contains(&port), "{port}");
        (spec["clusterIP"].as_str().unwrap().to_owned(), port)
    };
    let server = KapiServer::start(&options).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&server, dir.path());
    // Started on another port, the server corrects its endpoints.
    assert_eq!(
        get(&k, "endpoints/kubernetes")["subsets"][0]["ports"][0]["port"],
        server.addr().port()
    );
    // The stored Services hold their values after the restart.
    let taken = create_with_ip(&k, "dup", &ip, &[]).unwrap_err();
    assert!(
        taken.contains("provided IP is already allocated"),
        "{taken}"
    );
    let port_taken = create_node_port(&k, "np2", Some(&port.to_string())).unwrap_err();
    assert!(
        port_taken.contains("provided port is already allocated"),
        "{port_taken}"
    );
    let outside = create_with_ip(&k, "far", "10.0.0.5", &[]).unwrap_err();
    assert!(
        outside.contains("The range of valid IPs is 10.96.0.0/16"),
        "{outside}"
    );
    let port_outside = create_node_port(&k, "np3", Some("30000")).unwrap_err();
    assert!(
        port_outside.contains("The range of valid ports is 31000-31010"),
        "{port_outside}"
    );
}

/// The official Python client sees the 422 with upstream's reason and causes, and the
/// server's own objects.
const PYTHON_SCRIPT: &str = r#"
import json
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
v1 = client.CoreV1Api()
svc = v1.read_namespaced_service("kubernetes", "default")
assert svc.spec.cluster_ip == "10.0.0.1", svc.spec
assert svc.spec.ports[0].name == "https" and svc.spec.ports[0].port == 443, svc.spec
assert v1.read_namespaced_service_account("default", "kube-system").metadata.name == "default"

def service(name, **spec):
    return client.V1Service(metadata=client.V1ObjectMeta(name=name),
                            spec=client.V1ServiceSpec(ports=[client.V1ServicePort(port=80)], **spec))

made = v1.create_namespaced_service("default", service("lb", type="LoadBalancer"))
assert made.spec.cluster_ip.startswith("10.0.0."), made.spec
assert 30000 <= made.spec.ports[0].node_port <= 32767, made.spec
try:
    v1.create_namespaced_service("default", service("dup", cluster_ip=made.spec.cluster_ip))
    raise AssertionError("a taken address was given out twice")
except ApiException as e:
    assert e.status == 422, e
    body = json.loads(e.body)
    assert body["reason"] == "Invalid", body
    cause = body["details"]["causes"][0]
    assert cause["reason"] == "FieldValueInvalid" and cause["field"] == "spec.clusterIPs", cause
    assert cause["message"].endswith("provided IP is already allocated"), cause
print("ok")
"#;

#[test]
fn the_python_client_sees_allocations_and_their_errors() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let output = Command::new(python())
            .arg("-c")
            .arg(PYTHON_SCRIPT)
            .arg(server.kubeconfig())
            .output()
            .unwrap();
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
            "the Python script failed in {release} ({}):\n{}{}\nserver stderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            server.stderr()
        );
    }
}
