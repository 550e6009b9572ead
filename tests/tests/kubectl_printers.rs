//! `kubectl get` shows the built-ins as a real cluster does: the server answers Tables with
//! kube-apiserver's columns (`pkg/printers/internalversion/printers.go`) in every release kapi
//! serves, wide columns included, and the cells computed as upstream's printers compute them.
//!
//! One server per release holds one object of each kind (statuses written through the status
//! subresource, as controllers write them); each kind is then read with `kubectl get -o wide`.
//! kapi does not default built-ins, so the objects spell out what upstream's defaulting would
//! add (protocols, phases, cluster IPs).

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use kapi_e2e::{KapiServer, Kubectl, ServerOptions};

const RELEASES: [&str; 4] = ["1.20", "1.28", "1.34", "1.36"];

/// The objects every release serves in the same versions.
const COMMON: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: nginx, image: "nginx:1.25"}
      - {name: log, image: busybox}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue, size: large}
binaryData: {logo: AAEC}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
type: Opaque
data: {user: YWRtaW4=, password: c2VjcmV0}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: builder}
secrets: [{name: builder-token}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-0}
spec:
  nodeName: node-1
  containers:
  - {name: app, image: nginx}
  - {name: sidecar, image: busybox}
---
apiVersion: v1
kind: Pod
metadata: {name: setup}
spec:
  initContainers: [{name: migrate, image: busybox}]
  containers: [{name: app, image: nginx}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: ClusterIP
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10]
  selector: {app: web}
  ports: [{port: 80, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: web-nodeport}
spec:
  type: NodePort
  clusterIP: 10.96.0.11
  clusterIPs: [10.96.0.11]
  ports: [{port: 80, nodePort: 30080, protocol: TCP}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: postgres, image: "postgres:16"}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {disk: ssd}
      containers: [{name: agent, image: "agent:1"}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: nginx}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: backup}
spec:
  completions: 3
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: backup, image: "backup:2"}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: site}
spec:
  ingressClassName: nginx
  tls: [{hosts: [a.example]}]
  rules: [{host: a.example}, {host: b.example}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  volumeMode: Filesystem
  volumeName: pv-data
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {node-role.kubernetes.io/control-plane: ""}
spec: {unschedulable: true}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}
- {kind: Group, name: devs, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: builder, namespace: default}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader}
spec: {holderIdentity: node-1}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: critical}
value: 1000
globalDefault: false
preemptionPolicy: Never
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
---
apiVersion: v1
kind: Event
metadata: {name: web-0.started}
involvedObject: {kind: Pod, name: web-0, namespace: default, fieldPath: "spec.containers{app}"}
reason: Started
type: Normal
message: "  Started container app  "
source: {component: kubelet, host: node-1}
firstTimestamp: "2024-01-01T00:00:00Z"
lastTimestamp: "2024-01-01T00:00:00Z"
count: 2
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: web-0.scheduled}
regarding: {kind: Pod, name: web-0, namespace: default}
reason: Scheduled
type: Normal
action: Binding
note: Successfully assigned default/web-0 to node-1
eventTime: "2024-01-01T00:00:00.000000Z"
reportingController: default-scheduler
reportingInstance: scheduler-1
"#;

/// The objects whose served version depends on the release.
fn by_release(release: &str) -> String {
    let (cron, pdb) = if release == "1.20" {
        ("batch/v1beta1", "policy/v1beta1")
    } else {
        ("batch/v1", "policy/v1")
    };
    // autoscaling/v1 in 1.20 (what kubectl reads there), v2 after.
    let (hpa, target) = if release == "1.20" {
        ("autoscaling/v1", "targetCPUUtilizationPercentage: 80")
    } else {
        (
            "autoscaling/v2",
            "metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]",
        )
    };
    format!(
        "apiVersion: {cron}
kind: CronJob
metadata: {{name: nightly}}
spec:
  schedule: \"0 3 * * *\"
  suspend: false
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{{name: report, image: \"report:1\"}}]
---
apiVersion: {pdb}
kind: PodDisruptionBudget
metadata: {{name: web}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: web}}}}
---
apiVersion: {hpa}
kind: HorizontalPodAutoscaler
metadata: {{name: web}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 1
  maxReplicas: 5
  {target}
"
    )
}

/// Status patches, written through each kind's status subresource.
const STATUSES: [(&str, &str); 4] = [
    (
        "pod/web-0",
        r#"{"status": {"phase": "Running", "podIPs": [{"ip": "10.1.2.3"}], "podIP": "10.1.2.3",
            "containerStatuses": [
              {"name": "app", "ready": true, "restartCount": 0, "image": "nginx", "imageID": "",
               "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}},
              {"name": "sidecar", "ready": false, "restartCount": 3, "image": "busybox", "imageID": "",
               "state": {"waiting": {"reason": "CrashLoopBackOff"}},
               "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-01-01T00:00:00Z"}}}]}}"#,
    ),
    (
        "pod/setup",
        r#"{"status": {"phase": "Pending", "initContainerStatuses": [
              {"name": "migrate", "ready": false, "restartCount": 0, "image": "busybox", "imageID": "",
               "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]}}"#,
    ),
    (
        "node/node-1",
        r#"{"status": {"conditions": [{"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "nodeInfo": {"kubeletVersion": "v1.99.0", "osImage": "Debian GNU/Linux 12",
                         "containerRuntimeVersion": "containerd://1.7.0"}}}"#,
    ),
    (
        "pvc/data",
        r#"{"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1024Mi"}}}"#,
    ),
];

/// A table as kubectl aligns it: the headers and each row's cells, cut at the headers' columns.
struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn parse(text: &str) -> Self {
        let mut lines = text.lines();
        let header = lines.next().unwrap_or_default();
        // Headers are separated by at least three spaces; some hold one ("LAST SEEN").
        let mut starts = Vec::new();
        let mut headers = Vec::new();
        let bytes = header.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b' ' {
                let start = i;
                while i < bytes.len() && !(bytes[i] == b' ' && bytes.get(i + 1) == Some(&b' ')) {
                    i += 1;
                }
                starts.push(start);
                headers.push(header[start..i].trim().to_owned());
            }
            i += 1;
        }
        let rows = lines
            .map(|line| {
                (0..starts.len())
                    .map(|c| {
                        let end = starts
                            .get(c + 1)
                            .copied()
                            .unwrap_or(line.len())
                            .min(line.len());
                        line.get(starts[c].min(end)..end)
                            .unwrap_or("")
                            .trim()
                            .to_owned()
                    })
                    .collect()
            })
            .collect();
        Self { headers, rows }
    }

    /// The row whose `key` column is `value`.
    fn row(&self, key: &str, value: &str) -> Vec<(&str, &str)> {
        let c = self
            .headers
            .iter()
            .position(|h| h == key)
            .unwrap_or_else(|| panic!("no column {key} in {:?}", self.headers));
        let row = self
            .rows
            .iter()
            .find(|row| row[c] == value)
            .unwrap_or_else(|| panic!("no row {key}={value} in {:?}", self.rows));
        self.headers
            .iter()
            .map(String::as_str)
            .zip(row.iter().map(String::as_str))
            .collect()
    }
}

/// The cells of `row` other than the ages (which move with the clock), and whether each age
/// looks like one.
fn without_ages<'a>(row: &[(&'a str, &'a str)], release: &str) -> Vec<(&'a str, &'a str)> {
    for (header, cell) in row {
        if matches!(*header, "AGE" | "LAST SEEN" | "FIRST SEEN") {
            assert!(
                cell.chars().next().is_some_and(|c| c.is_ascii_digit()),
                "{release}: {header} {cell:?}"
            );
        }
    }
    row.iter()
        .filter(|(h, _)| !matches!(*h, "AGE" | "LAST SEEN" | "FIRST SEEN"))
        .copied()
        .collect()
}

/// The cells a release shows of `HEADER=cell|...`; a header written `1.30:STATUS` is shown
/// since 1.30.
fn shown_in(release: &str, cells: &str) -> Vec<(String, String)> {
    cells
        .split('|')
        .filter_map(|pair| {
            let (header, cell) = pair.split_once('=').unwrap();
            match header.split_once(':') {
                Some((since, header)) => {
                    let minor = since.trim_start_matches("1.").parse().unwrap();
                    at_least(release, minor).then(|| (header.to_owned(), cell.to_owned()))
                }
                None => Some((header.to_owned(), cell.to_owned())),
            }
        })
        .collect()
}

fn at_least(release: &str, minor: u32) -> bool {
    release
        .split('.')
        .nth(1)
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap()
        >= minor
}

#[test]
fn kubectl_get_shows_upstream_columns_in_every_release() {
    for release in RELEASES {
        let server = KapiServer::start(&ServerOptions {
            kube_version: Some(release.to_owned()),
            // The Services below ask for addresses of kubeadm's range.
            args: vec!["--service-cluster-ip-range=10.96.0.0/12".to_owned()],
            ..ServerOptions::default()
        })
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let objects = k.file(
            "objects.yaml",
            &format!("{COMMON}---\n{}", by_release(release)),
        );
        // Client-side schema validation is another test's subject (kubectl.rs).
        k.expect_ok(&[
            "create",
            "--validate=false",
            "-f",
            objects.to_str().unwrap(),
        ]);
        for (object, patch) in STATUSES {
            k.expect_ok(&[
                "patch",
                object,
                "--subresource=status",
                "--type=merge",
                "-p",
                patch,
            ]);
        }
        let get = |resource: &str, name: &str| {
            let table = Table::parse(&k.expect_ok(&["get", resource, "-o", "wide"]));
            assert!(!table.headers.is_empty(), "{release}: no {resource}");
            let row = table.row("NAME", name);
            without_ages(&row, release)
                .into_iter()
                .map(|(h, c)| (h.to_owned(), c.to_owned()))
                .collect::<Vec<_>>()
        };
        let expect = |resource: &str, name: &str, cells: &str| {
            let found = get(resource, name);
            assert_eq!(found, shown_in(release, cells), "{release}: {resource}");
        };
        check_workloads(release, &k, &expect, &get);
        check_the_rest(release, &expect);
    }
}

/// Checks the `-o wide` row of a resource's object, without its ages, against cells written
/// `HEADER=cell|...`.
type Expect<'a> = dyn Fn(&str, &str, &str) + 'a;
/// The `-o wide` row of a resource's object, without its ages.
type Get<'a> = dyn Fn(&str, &str) -> Vec<(String, String)> + 'a;

fn check_workloads(release: &str, k: &Kubectl<'_>, expect: &Expect<'_>, get: &Get<'_>) {
    // printDeployment: READY is ready/desired; nothing runs the pods, so no status yet.
    // Priority-1 columns hide without -o wide.
    let narrow = Table::parse(&k.expect_ok(&["get", "deployments"]));
    let headers = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"];
    assert_eq!(narrow.headers, headers, "{release}");
    expect(
        "deployments",
        "web",
        "NAME=web|READY=0/3|UP-TO-DATE=0|AVAILABLE=0|CONTAINERS=nginx,log\
         |IMAGES=nginx:1.25,busybox|SELECTOR=app=web",
    );
    // printPod: the last container's waiting reason wins; restarts with the last one's age
    // since 1.22.
    let mut pod = get("pods", "web-0");
    let restarts = pod.remove(3);
    assert_eq!(restarts.0, "RESTARTS", "{release}");
    if at_least(release, 22) {
        let ago = restarts.1.starts_with("3 (") && restarts.1.ends_with(" ago)");
        assert!(ago, "{release}: {}", restarts.1);
    } else {
        assert_eq!(restarts.1, "3", "{release}");
    }
    let want = "NAME=web-0|READY=1/2|STATUS=CrashLoopBackOff|IP=10.1.2.3|NODE=node-1\
                |NOMINATED NODE=<none>|READINESS GATES=<none>";
    assert_eq!(pod, shown_in(release, want), "{release}");
    // An init container still running.
    expect(
        "pods",
        "setup",
        "NAME=setup|READY=0/1|STATUS=Init:0/1|RESTARTS=0|IP=<none>|NODE=<none>\
         |NOMINATED NODE=<none>|READINESS GATES=<none>",
    );
    expect(
        "statefulsets",
        "db",
        "NAME=db|READY=0/2|CONTAINERS=postgres|IMAGES=postgres:16",
    );
    expect(
        "daemonsets",
        "agent",
        "NAME=agent|DESIRED=0|CURRENT=0|READY=0|UP-TO-DATE=0|AVAILABLE=0|NODE SELECTOR=disk=ssd\
         |CONTAINERS=agent|IMAGES=agent:1|SELECTOR=app=agent",
    );
    expect(
        "replicasets",
        "web-rs",
        "NAME=web-rs|DESIRED=2|CURRENT=0|READY=0|CONTAINERS=nginx|IMAGES=nginx|SELECTOR=app=web",
    );
    // printJob: STATUS since 1.30; no start time, no duration. The selector is the one the
    // Job strategy generated (generateSelector): the uid, under the prefixed key from 1.27.
    let uid = k.expect_ok(&["get", "job/backup", "-o", "jsonpath={.metadata.uid}"]);
    let key = if release == "1.20" {
        "controller-uid"
    } else {
        "batch.kubernetes.io/controller-uid"
    };
    expect(
        "jobs",
        "backup",
        &format!(
            "NAME=backup|1.30:STATUS=Running|COMPLETIONS=0/3|DURATION=|CONTAINERS=backup\
             |IMAGES=backup:2|SELECTOR={key}={uid}"
        ),
    );
    // printCronJob: TIMEZONE since 1.30.
    expect(
        "cronjobs",
        "nightly",
        "NAME=nightly|SCHEDULE=0 3 * * *|1.30:TIMEZONE=<none>|SUSPEND=False|ACTIVE=0\
         |LAST SCHEDULE=<none>|CONTAINERS=report|IMAGES=report:1|SELECTOR=<none>",
    );
    // printHorizontalPodAutoscaler: the resource named in TARGETS since 1.30.
    let targets = if at_least(release, 30) {
        "cpu: <unknown>/80%"
    } else {
        "<unknown>/80%"
    };
    expect(
        "hpa",
        "web",
        &format!(
            "NAME=web|REFERENCE=Deployment/web|TARGETS={targets}|MINPODS=1|MAXPODS=5|REPLICAS=0"
        ),
    );
    expect(
        "pdb",
        "web",
        "NAME=web|MIN AVAILABLE=1|MAX UNAVAILABLE=N/A|ALLOWED DISRUPTIONS=0",
    );
}

fn check_the_rest(release: &str, expect: &Expect<'_>) {
    expect("configmaps", "settings", "NAME=settings|DATA=3");
    expect("secrets", "creds", "NAME=creds|TYPE=Opaque|DATA=2");
    // In 1.20 the tokens controller adds the account's own token Secret to its `secrets`.
    let secrets = if release == "1.20" { 2 } else { 1 };
    expect(
        "serviceaccounts",
        "builder",
        &format!("NAME=builder|SECRETS={secrets}"),
    );
    expect("namespaces", "default", "NAME=default|STATUS=Active");
    expect(
        "services",
        "web",
        "NAME=web|TYPE=ClusterIP|CLUSTER-IP=10.96.0.10|EXTERNAL-IP=<none>|PORT(S)=80/TCP\
         |SELECTOR=app=web",
    );
    expect(
        "services",
        "web-nodeport",
        "NAME=web-nodeport|TYPE=NodePort|CLUSTER-IP=10.96.0.11|EXTERNAL-IP=<none>\
         |PORT(S)=80:30080/TCP|SELECTOR=<none>",
    );
    // 1.20's kubectl reads extensions' Ingresses, which kapi stores apart.
    expect(
        "ingresses.networking.k8s.io",
        "site",
        "NAME=site|CLASS=nginx|HOSTS=a.example,b.example|ADDRESS=|PORTS=80, 443",
    );
    // printPersistentVolumeClaim: capacity and modes of the bound volume; the class of
    // volume attributes since 1.29.
    expect(
        "pvc",
        "data",
        "NAME=data|STATUS=Bound|VOLUME=pv-data|CAPACITY=1Gi|ACCESS MODES=RWO\
         |STORAGECLASS=standard|1.29:VOLUMEATTRIBUTESCLASS=<unset>|VOLUMEMODE=Filesystem",
    );
    expect(
        "nodes",
        "node-1",
        "NAME=node-1|STATUS=Ready,SchedulingDisabled|ROLES=control-plane|VERSION=v1.99.0\
         |INTERNAL-IP=10.0.0.1|EXTERNAL-IP=<none>|OS-IMAGE=Debian GNU/Linux 12\
         |KERNEL-VERSION=<unknown>|CONTAINER-RUNTIME=containerd://1.7.0",
    );
    expect(
        "rolebindings",
        "readers",
        "NAME=readers|ROLE=ClusterRole/view|USERS=alice|GROUPS=devs\
         |SERVICEACCOUNTS=default/builder",
    );
    expect("leases", "leader", "NAME=leader|HOLDER=node-1");
    expect(
        "priorityclasses",
        "critical",
        "NAME=critical|VALUE=1000|GLOBAL-DEFAULT=false|1.32:PREEMPTIONPOLICY=Never",
    );
    // printStorageClass: the default class is named so.
    expect(
        "storageclasses",
        "standard (default)",
        "NAME=standard (default)|PROVISIONER=kubernetes.io/no-provisioner|RECLAIMPOLICY=Delete\
         |VOLUMEBINDINGMODE=WaitForFirstConsumer|ALLOWVOLUMEEXPANSION=true",
    );
    // printEvent, for both APIs: Name last; a singleton of events.k8s.io counts 1.
    expect(
        "events",
        "web-0.started",
        "TYPE=Normal|REASON=Started|OBJECT=pod/web-0|SUBOBJECT=spec.containers{app}\
         |SOURCE=kubelet, node-1|MESSAGE=Started container app|COUNT=2|NAME=web-0.started",
    );
    expect(
        "events.events.k8s.io",
        "web-0.scheduled",
        "TYPE=Normal|REASON=Scheduled|OBJECT=pod/web-0|SUBOBJECT=\
         |SOURCE=default-scheduler, scheduler-1|MESSAGE=Successfully assigned default/web-0 to \
         node-1|COUNT=1|NAME=web-0.scheduled",
    );
}
