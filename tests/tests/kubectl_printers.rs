//! `kubectl get` shows the built-ins as a real cluster does: the server answers Tables with
//! kube-apiserver's columns (`pkg/printers/internalversion/printers.go`) in every release kapi
//! serves, wide columns included, and the cells computed as upstream's printers compute them.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use kapi_e2e::{KapiServer, Kubectl, ServerOptions};

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: nginx, image: nginx:1.25}
      - {name: log, image: busybox}
";

const CONFIG_MAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data: {color: blue, size: large}
binaryData: {logo: AAEC}
";

/// The words of each line of a table, as kubectl aligns them.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect()
}

#[test]
fn kubectl_get_shows_upstream_columns_in_every_release() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions {
            kube_version: Some(release.to_owned()),
            ..ServerOptions::default()
        })
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let deployment = k.file("deployment.yaml", DEPLOYMENT);
        let config_map = k.file("configmap.yaml", CONFIG_MAP);
        for file in [&deployment, &config_map] {
            // Client-side schema validation is another test's subject (kubectl.rs).
            k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        }

        // printDeployment: READY is ready/desired; nothing runs the pods, so no status yet.
        let table = rows(&k.expect_ok(&["get", "deployments"]));
        assert_eq!(
            table[0],
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
            "{release}"
        );
        assert_eq!(table[1][..4], ["web", "0/3", "0", "0"], "{release}");
        assert!(
            table[1][4].ends_with('s'),
            "{release}: age {:?}",
            table[1][4]
        );

        // Priority-1 columns come with -o wide.
        let wide = rows(&k.expect_ok(&["get", "deployments", "-o", "wide"]));
        assert_eq!(
            wide[0],
            [
                "NAME",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR"
            ],
            "{release}"
        );
        assert_eq!(
            wide[1][5..],
            ["nginx,log", "nginx:1.25,busybox", "app=web"],
            "{release}"
        );

        // printConfigMap: DATA counts data and binaryData.
        let table = rows(&k.expect_ok(&["get", "configmaps", "settings"]));
        assert_eq!(table[0], ["NAME", "DATA", "AGE"], "{release}");
        assert_eq!(table[1][..2], ["settings", "3"], "{release}");

        // printNamespace: STATUS is the phase.
        let table = rows(&k.expect_ok(&["get", "namespace", "default"]));
        assert_eq!(table[0], ["NAME", "STATUS", "AGE"], "{release}");
        assert_eq!(table[1][..2], ["default", "Active"], "{release}");
    }
}
