//! Objects read back as a real cluster returns them: the server fills in the fields upstream's
//! defaulting functions set (`pkg/apis/*/v1/defaults.go`), on create and on every later write,
//! in each release kapi serves, and `kubectl` sees them.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use kapi_e2e::{KapiServer, Kubectl, ServerOptions};
use serde_json::{Value, json};

const OBJECTS: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80}]
        readinessProbe: {httpGet: {port: 80}}
      - {name: sidecar, image: busybox}
---
apiVersion: v1
kind: Secret
metadata: {name: token}
stringData: {key: value}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: busybox}]
";

fn get(k: &Kubectl<'_>, resource: &str) -> Value {
    k.expect_json(&["get", resource, "-o", "json"])
}

#[test]
fn built_in_objects_carry_upstream_defaults_in_every_release() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("objects.yaml", OBJECTS);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);

        // SetDefaults_Deployment.
        let deployment = get(&k, "deployment/web");
        let spec = &deployment["spec"];
        assert_eq!(spec["replicas"], 1, "{release}");
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
            "{release}"
        );
        assert_eq!(spec["revisionHistoryLimit"], 10, "{release}");
        assert_eq!(spec["progressDeadlineSeconds"], 600, "{release}");
        // SetDefaults_PodSpec, SetDefaults_Container, _ContainerPort, _Probe, _HTTPGetAction.
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always", "{release}");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst", "{release}");
        assert_eq!(pod["schedulerName"], "default-scheduler", "{release}");
        assert_eq!(pod["terminationGracePeriodSeconds"], 30, "{release}");
        assert_eq!(pod["securityContext"], json!({}), "{release}");
        let nginx = &pod["containers"][0];
        assert_eq!(nginx["imagePullPolicy"], "IfNotPresent", "{release}");
        assert_eq!(
            nginx["terminationMessagePath"], "/dev/termination-log",
            "{release}"
        );
        assert_eq!(nginx["terminationMessagePolicy"], "File", "{release}");
        assert_eq!(nginx["ports"][0]["protocol"], "TCP", "{release}");
        assert_eq!(
            nginx["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}),
            "{release}"
        );
        // No tag: `latest`, always pulled.
        assert_eq!(
            pod["containers"][1]["imagePullPolicy"], "Always",
            "{release}"
        );

        // SetDefaults_Secret.
        assert_eq!(get(&k, "secret/token")["type"], "Opaque", "{release}");

        // SetDefaults_Service: each port's protocol and targetPort.
        let service = get(&k, "service/web");
        assert_eq!(service["spec"]["type"], "ClusterIP", "{release}");
        assert_eq!(service["spec"]["sessionAffinity"], "None", "{release}");
        assert_eq!(
            service["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80}),
            "{release}"
        );
        // ServiceInternalTrafficPolicy (on from 1.22); a ClusterIP Service has no external
        // traffic policy.
        let internal = &service["spec"]["internalTrafficPolicy"];
        if release == "1.20" {
            assert!(internal.is_null(), "{release}");
        } else {
            assert_eq!(internal, "Cluster", "{release}");
        }
        assert!(
            service["spec"].get("externalTrafficPolicy").is_none(),
            "{release}"
        );
        // A LoadBalancer with ClientIP affinity: the traffic policy, node port allocation
        // (from 1.22) and the affinity's 3-hour timeout.
        let balancer = k.file(
            "lb.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: lb}\nspec:\n  type: LoadBalancer\n  sessionAffinity: ClientIP\n  selector: {app: web}\n  ports: [{port: 443}]\n",
        );
        k.expect_ok(&["create", "-f", balancer.to_str().unwrap()]);
        let lb = get(&k, "service/lb")["spec"].clone();
        assert_eq!(lb["externalTrafficPolicy"], "Cluster", "{release}");
        assert_eq!(
            lb["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}}),
            "{release}"
        );
        let allocates = &lb["allocateLoadBalancerNodePorts"];
        if release == "1.20" {
            assert!(allocates.is_null(), "{release}");
        } else {
            assert_eq!(allocates, true, "{release}");
        }
        // An affinity config under no affinity: from 1.34 SetDefaults_Service drops it; before,
        // validation refuses it (`must not be set when session affinity is None`).
        let sticky = k.file(
            "sticky.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: sticky}\nspec:\n  sessionAffinity: None\n  sessionAffinityConfig: {clientIP: {timeoutSeconds: 60}}\n  ports: [{port: 80}]\n",
        );
        let created = k.run(&["create", "-f", sticky.to_str().unwrap()]);
        let from_1_34 = !matches!(release, "1.20" | "1.28");
        assert_eq!(created.status.success(), from_1_34, "{release}");
        if from_1_34 {
            let spec = &get(&k, "service/sticky")["spec"];
            assert!(
                spec.get("sessionAffinityConfig").is_none(),
                "{release}: {spec}"
            );
        }
        // ClientIP affinity with a config that leaves the timeout out: from 1.34 the default
        // timeout fills it; before, it is refused as required.
        let partial = k.file(
            "partial.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: partial}\nspec:\n  sessionAffinity: ClientIP\n  sessionAffinityConfig: {clientIP: {}}\n  ports: [{port: 80}]\n",
        );
        let created = k.run(&["create", "-f", partial.to_str().unwrap()]);
        assert_eq!(created.status.success(), from_1_34, "{release}");
        if from_1_34 {
            assert_eq!(
                get(&k, "service/partial")["spec"]["sessionAffinityConfig"],
                json!({"clientIP": {"timeoutSeconds": 10800}}),
                "{release}"
            );
        }
        // SetDefaults_Pod: a Pod's containers request what they limit (a template's do not).
        let limited = k.file(
            "limited.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: limited}\nspec:\n  containers:\n  - {name: c, image: busybox, resources: {limits: {cpu: 500m, memory: 64Mi}, requests: {cpu: 100m}}}\n",
        );
        k.expect_ok(&["create", "-f", limited.to_str().unwrap()]);
        let pod = get(&k, "pod/limited");
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "100m", "memory": "64Mi"}),
            "{release}"
        );
        // defaultHostNetworkPorts: on the host's network a port is its own host port.
        let host = k.file(
            "host.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: host}\nspec:\n  hostNetwork: true\n  containers:\n  - {name: c, image: busybox, ports: [{containerPort: 9100}]}\n",
        );
        k.expect_ok(&["create", "-f", host.to_str().unwrap()]);
        let pod = get(&k, "pod/host");
        assert_eq!(
            pod["spec"]["containers"][0]["ports"][0],
            json!({"containerPort": 9100, "hostPort": 9100, "protocol": "TCP"}),
            "{release}"
        );
        // Made a ClusterIP Service, it drops what only externally reachable types have
        // (dropTypeDependentFields).
        k.expect_ok(&[
            "patch",
            "service/lb",
            "--type=merge",
            "-p",
            r#"{"spec":{"type":"ClusterIP"}}"#,
        ]);
        let cluster = get(&k, "service/lb")["spec"].clone();
        assert!(
            cluster.get("externalTrafficPolicy").is_none(),
            "{release}: {cluster}"
        );
        assert!(
            cluster.get("allocateLoadBalancerNodePorts").is_none(),
            "{release}: {cluster}"
        );

        // SetDefaults_Job: completionMode and suspend arrived in 1.21.
        let job = &get(&k, "job/once")["spec"];
        assert_eq!(
            (&job["completions"], &job["parallelism"]),
            (&json!(1), &json!(1))
        );
        assert_eq!(job["backoffLimit"], 6, "{release}");
        let later = release != "1.20";
        assert_eq!(job.get("completionMode").is_some(), later, "{release}");
        assert_eq!(job.get("suspend").is_some(), later, "{release}");

        // Defaults apply on every write: a patch that drops the strategy gets it back.
        k.expect_ok(&[
            "patch",
            "deployment/web",
            "--type=json",
            "-p",
            r#"[{"op": "remove", "path": "/spec/strategy"}]"#,
        ]);
        assert_eq!(
            get(&k, "deployment/web")["spec"]["strategy"]["type"],
            "RollingUpdate",
            "{release}"
        );
    }
}

const STRATEGY_OBJECTS: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: api:1}]
status: {replicas: 7}
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: busybox}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
";

fn generation(k: &Kubectl<'_>, resource: &str) -> Value {
    get(k, resource)["metadata"]["generation"].clone()
}

#[test]
fn generation_and_status_follow_each_kinds_strategy() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("objects.yaml", STRATEGY_OBJECTS);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);

        // ConfigMap and Secret strategies never set a generation.
        assert_eq!(
            generation(&k, "configmap/settings"),
            Value::Null,
            "{release}"
        );
        k.expect_ok(&["label", "configmap/settings", "x=y"]);
        assert_eq!(
            generation(&k, "configmap/settings"),
            Value::Null,
            "{release}"
        );

        // Deployment: 1 on create, the status sent reset to {}; annotations bump it
        // (SetDefaults aside, apps' deploymentStrategy.PrepareForUpdate), labels do not.
        let deployment = get(&k, "deployment/api");
        assert_eq!(deployment["metadata"]["generation"], 1, "{release}");
        assert_eq!(deployment["status"], json!({}), "{release}");
        k.expect_ok(&["annotate", "deployment/api", "note=1"]);
        assert_eq!(generation(&k, "deployment/api"), 2, "{release}");
        k.expect_ok(&["label", "deployment/api", "tier=web"]);
        assert_eq!(generation(&k, "deployment/api"), 2, "{release}");
        k.expect_ok(&["scale", "deployment/api", "--replicas=3"]);
        assert_eq!(generation(&k, "deployment/api"), 3, "{release}");

        // Jobs have a generation since 1.27 (jobStrategy.PrepareForCreate).
        let want = if release == "1.20" {
            Value::Null
        } else {
            json!(1)
        };
        assert_eq!(generation(&k, "job/batch"), want, "{release}");

        // PriorityClass: 1 on create, never bumped.
        assert_eq!(generation(&k, "priorityclass/high"), 1, "{release}");
        k.expect_ok(&["annotate", "priorityclass/high", "note=1"]);
        k.expect_ok(&[
            "patch",
            "priorityclass/high",
            "--type=merge",
            "-p",
            r#"{"description": "urgent"}"#,
        ]);
        assert_eq!(generation(&k, "priorityclass/high"), 1, "{release}");
    }
}

const JOBS: &str = "apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  template:
    metadata: {labels: {app: pi}}
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: perl}]
---
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: web, image: nginx}]
";

#[test]
fn jobs_get_the_selector_and_labels_their_strategy_generates() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("jobs.yaml", JOBS);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);

        // jobStrategy.PrepareForCreate (generateSelector): the template is labelled with the
        // Job's name and uid, from 1.27 also under batch.kubernetes.io/, and the selector
        // selects the uid. SetDefaults_Job copies the template's labels as they were sent to
        // the Job's own, and from 1.28 writes manualSelector: false, from 1.29 the pod
        // replacement policy.
        let job = get(&k, "job/pi");
        let uid = job["metadata"]["uid"].as_str().unwrap();
        let labels = &job["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["app"], "pi", "{release}");
        assert_eq!(labels["job-name"], "pi", "{release}");
        assert_eq!(labels["controller-uid"], uid, "{release}");
        let old = release == "1.20";
        let key = if old {
            "controller-uid"
        } else {
            "batch.kubernetes.io/controller-uid"
        };
        assert_eq!(
            job["spec"]["selector"],
            json!({"matchLabels": {key: uid}}),
            "{release}"
        );
        if !old {
            assert_eq!(labels["batch.kubernetes.io/job-name"], "pi", "{release}");
            assert_eq!(
                labels["batch.kubernetes.io/controller-uid"], uid,
                "{release}"
            );
            assert_eq!(job["spec"]["manualSelector"], false, "{release}");
        } else {
            assert_eq!(labels.as_object().unwrap().len(), 3, "{release}");
            assert!(job["spec"].get("manualSelector").is_none(), "{release}");
        }
        assert_eq!(job["metadata"]["labels"], json!({"app": "pi"}), "{release}");
        let replacement = &job["spec"]["podReplacementPolicy"];
        match release {
            "1.20" | "1.28" => assert!(replacement.is_null(), "{release}"),
            _ => assert_eq!(replacement, "TerminatingOrFailed", "{release}"),
        }
        // Pods the generated selector picks: kubectl's own selector string.
        let pods = k.expect_ok(&[
            "get",
            "job/pi",
            "-o",
            "jsonpath={.spec.selector.matchLabels}",
        ]);
        assert!(pods.contains(uid), "{release}: {pods}");

        // SetDefaults_ReplicationController: the template's labels select and label it.
        let rc = get(&k, "replicationcontroller/legacy");
        assert_eq!(
            rc["spec"]["selector"],
            json!({"app": "legacy"}),
            "{release}"
        );
        assert_eq!(
            rc["metadata"]["labels"],
            json!({"app": "legacy"}),
            "{release}"
        );

        // validateGeneratedSelector: a selector of one's own needs manualSelector: true.
        let own = k.file(
            "own.yaml",
            "apiVersion: batch/v1
kind: Job
metadata: {name: own}
spec:
  selector: {matchLabels: {app: own}}
  template:
    metadata: {labels: {app: own}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
",
        );
        let refused =
            k.expect_failure(&["create", "--validate=false", "-f", own.to_str().unwrap()]);
        assert!(
            refused.contains("spec.selector: Invalid value:")
                && refused.contains("`selector` not auto-generated"),
            "{release}: {refused}"
        );
        let manual = std::fs::read_to_string(&own).unwrap().replace(
            "spec:\n  selector",
            "spec:\n  manualSelector: true\n  selector",
        );
        let manual = k.file("manual.yaml", &manual);
        k.expect_ok(&["create", "--validate=false", "-f", manual.to_str().unwrap()]);
        let kept = get(&k, "job/own");
        assert_eq!(
            kept["spec"]["selector"],
            json!({"matchLabels": {"app": "own"}}),
            "{release}"
        );
        assert!(
            kept["spec"]["template"]["metadata"]["labels"]
                .get("job-name")
                .is_none(),
            "{release}"
        );

        // validateJobSpec: a Job's pods may not restart in place (the pod default, Always).
        let always = k.file(
            "always.yaml",
            "apiVersion: batch/v1
kind: Job
metadata: {name: always}
spec:
  template:
    spec:
      containers: [{name: c, image: busybox}]
",
        );
        let refused =
            k.expect_failure(&["create", "--validate=false", "-f", always.to_str().unwrap()]);
        let want = if old {
            r#"spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never""#
        } else {
            r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#
        };
        assert!(refused.contains(want), "{release}: {refused}");

        // ValidateJobSpecUpdate: the selector and completions stay.
        let refused = k.expect_failure(&[
            "patch",
            "job/pi",
            "--type=merge",
            "-p",
            r#"{"spec":{"completions":2}}"#,
        ]);
        assert!(
            refused.contains("spec.completions: Invalid value: 2: field is immutable"),
            "{release}: {refused}"
        );
        let refused = k.expect_failure(&[
            "patch",
            "job/pi",
            "--type=merge",
            "-p",
            r#"{"spec":{"selector":{"matchLabels":{"x":"y"}}}}"#,
        ]);
        assert!(
            refused.contains("spec.selector: Invalid value: ")
                && refused.contains(": field is immutable"),
            "{release}: {refused}"
        );
    }
}

const SPREAD_POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web, pod-template-hash: abc}}
spec:
  containers: [{name: web, image: nginx}]
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector: {matchLabels: {app: web}}
    matchLabelKeys: [pod-template-hash]
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector: {matchLabels: {app: web}}
        matchLabelKeys: [pod-template-hash]
";

#[test]
fn a_new_pods_label_keys_join_its_selectors_from_1_34() {
    for release in ["1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("pod.yaml", SPREAD_POD);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let pod = get(&k, "pod/web");
        // podStrategy.PrepareForCreate: mutatePodAffinity (MatchLabelKeysInPodAffinity, beta
        // in 1.31) and mutateTopologySpreadConstraints
        // (MatchLabelKeysInPodTopologySpreadSelectorMerge, beta in 1.34).
        let merged = if release == "1.28" {
            json!({"matchLabels": {"app": "web"}})
        } else {
            json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                {"key": "pod-template-hash", "operator": "In", "values": ["abc"]}]})
        };
        assert_eq!(
            pod["spec"]["topologySpreadConstraints"][0]["labelSelector"], merged,
            "{release}"
        );
        let term = &pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            [0];
        assert_eq!(term["labelSelector"], merged, "{release}");
        // The keys stay as sent (1.28's affinity terms have none: the field came in 1.29).
        if release != "1.28" {
            assert_eq!(
                term["matchLabelKeys"],
                json!(["pod-template-hash"]),
                "{release}"
            );
        }
    }
}

const GATED_DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: gated}
spec:
  selector: {matchLabels: {app: gated}}
  template:
    metadata: {labels: {app: gated}}
    spec:
      initContainers:
      - {name: proxy, image: envoy, restartPolicy: Always}
      containers:
      - name: app
        image: nginx
        resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
";

/// Fields whose feature gates are off by default in a release are dropped on write there
/// (`dropDisabledFields` in pkg/api/pod/util.go, through `DropDisabledTemplateFields`): in
/// 1.28 SidecarContainers and InPlacePodVerticalScaling are alpha, so an init container's
/// restart policy and a container's resize policy go, and a status write loses a pod's host
/// IPs (PodHostIPs); from the releases that turn them on, they stay. An update keeps them when
/// the stored object already uses them.
#[test]
fn fields_of_gates_off_in_a_release_are_dropped() {
    for release in ["1.28", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("deployment.yaml", GATED_DEPLOYMENT);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let spec = &get(&k, "deployment/gated")["spec"]["template"]["spec"];
        let kept = release != "1.28";
        assert_eq!(
            spec["initContainers"][0].get("restartPolicy").is_some(),
            kept,
            "{release}: {spec}"
        );
        assert_eq!(
            spec["containers"][0].get("resizePolicy").is_some(),
            kept,
            "{release}: {spec}"
        );
        // A later write of the fields still drops them: the stored object does not use them.
        k.expect_ok(&["apply", "--validate=false", "-f", file.to_str().unwrap()]);
        let spec = &get(&k, "deployment/gated")["spec"]["template"]["spec"];
        assert_eq!(
            spec["initContainers"][0].get("restartPolicy").is_some(),
            kept,
            "{release}: {spec}"
        );
        // A status write loses what PodHostIPs (alpha in 1.28, on from 1.29) owns
        // (`dropDisabledPodStatusFields`).
        k.expect_ok(&["run", "web", "--image=nginx", "--restart=Never"]);
        k.expect_ok(&[
            "patch",
            "pod/web",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status": {"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}]}}"#,
        ]);
        let status = &get(&k, "pod/web")["status"];
        assert_eq!(status["hostIP"], "10.0.0.1", "{release}: {status}");
        assert_eq!(
            status.get("hostIPs").is_some(),
            release != "1.28",
            "{release}: {status}"
        );
    }
}

/// Webhook configurations read back with what upstream's admissionregistration defaulting
/// fills in (`SetDefaults_ValidatingWebhook`, `SetDefaults_MutatingWebhook`,
/// `SetDefaults_Rule`, `SetDefaults_ServiceReference`), and in 1.20 a configuration written
/// through `v1beta1` with that version's defaults (ignored failures, 30 s, Exact matching,
/// side effects Unknown, v1beta1 reviews), which the webhooks then run with.
#[test]
fn webhook_configurations_carry_their_versions_defaults() {
    let webhook = |version: &str, extra: &str| {
        format!(
            "apiVersion: admissionregistration.k8s.io/{version}
kind: MutatingWebhookConfiguration
metadata: {{name: hooks-{version}}}
webhooks:
- name: hook.example.com
  clientConfig: {{service: {{namespace: default, name: hooks}}}}
  rules: [{{operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [configmaps]}}]
{extra}"
        )
    };
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let v1 = webhook(
            "v1",
            "  sideEffects: None\n  admissionReviewVersions: [v1]\n",
        );
        k.expect_ok(&[
            "create",
            "-f",
            &k.file("v1.yaml", &v1).display().to_string(),
        ]);
        let hook = &get(&k, "mutatingwebhookconfiguration/hooks-v1")["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Fail", "{release}: {hook}");
        assert_eq!(hook["matchPolicy"], "Equivalent");
        assert_eq!(hook["timeoutSeconds"], 10);
        assert_eq!(hook["namespaceSelector"], json!({}));
        assert_eq!(hook["objectSelector"], json!({}));
        assert_eq!(hook["reinvocationPolicy"], "Never");
        assert_eq!(hook["rules"][0]["scope"], "*");
        assert_eq!(hook["clientConfig"]["service"]["port"], 443);
        if release == "1.20" {
            let v1beta1 = webhook("v1beta1", "");
            let file = k.file("v1beta1.yaml", &v1beta1).display().to_string();
            k.expect_ok(&["create", "-f", &file]);
            let read = k.expect_json(&[
                "get",
                "mutatingwebhookconfigurations.v1beta1.admissionregistration.k8s.io/hooks-v1beta1",
                "-o",
                "json",
            ]);
            let hook = &read["webhooks"][0];
            assert_eq!(hook["failurePolicy"], "Ignore", "{hook}");
            assert_eq!(hook["matchPolicy"], "Exact");
            assert_eq!(hook["timeoutSeconds"], 30);
            assert_eq!(hook["sideEffects"], "Unknown");
            assert_eq!(hook["admissionReviewVersions"], json!(["v1beta1"]));
        }
    }
}
