//! Pods are held to what a real cluster holds them to, seen through kubectl in each release:
//! an update may change only images, a lowered deadline, added tolerations and the like
//! (`ValidatePodUpdate` in `pkg/apis/core/validation/validation.go`); security contexts
//! (`validatePodSpecSecurityContext`, `ValidateSecurityContext`) and affinity
//! (`validateAffinity`) are checked on every write. A PersistentVolume keeps its source, volume
//! mode and node affinity (`ValidatePersistentVolumeUpdate`).

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use kapi_e2e::{KapiServer, Kubectl, ServerOptions};

const POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  activeDeadlineSeconds: 100
  restartPolicy: Never
  tolerations: [{key: a, operator: Exists, effect: NoSchedule}]
  containers: [{name: web, image: nginx}]
";

const RELEASES: [&str; 4] = ["1.20", "1.28", "1.34", "1.36"];

fn assert_refused(stderr: &str, cause: &str) {
    assert!(
        stderr.contains("Pod \"p\" is invalid") && stderr.contains(cause),
        "expected `{cause}` in:\n{stderr}"
    );
}

/// kubectl's refusal of `create -f` of `manifest`, written to `name` (kubectl's own schema
/// check off, so the server's answer shows).
fn create_refused(k: &Kubectl<'_>, name: &str, manifest: &str) -> String {
    let file = k.file(name, manifest);
    k.expect_failure(&["create", "--validate=false", "-f", &file.to_string_lossy()])
}

/// The first line of upstream's message for a forbidden pod update, per release: 1.20's
/// literal sentence; later the fields joined with "," (1.28 with in-place resize off).
fn forbidden_update(release: &str) -> &'static str {
    if release == "1.20" {
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or `spec.tolerations` (only additions to existing tolerations)\n"
    } else {
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
    }
}

#[test]
fn kubectl_may_change_only_what_upstream_lets_a_pod_update_change() {
    for release in RELEASES {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("pod.yaml", POD);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);

        // Allowed: images, a lower deadline, another toleration, labels.
        k.expect_ok(&["set", "image", "pod/p", "web=nginx:1.27"]);
        k.expect_ok(&[
            "patch",
            "pod/p",
            "-p",
            r#"{"spec":{"activeDeadlineSeconds":50}}"#,
        ]);
        k.expect_ok(&[
            "patch",
            "pod/p",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/tolerations/-","value":{"key":"b","operator":"Exists"}}]"#,
        ]);
        k.expect_ok(&["label", "pod/p", "tier=web"]);
        let image = k.expect_ok(&["get", "pod/p", "-o", "jsonpath={.spec.containers[0].image}"]);
        assert_eq!(image.trim(), "nginx:1.27", "{release}");

        // ValidatePodUpdate's final comparison: anything else is forbidden, with a diff.
        let stderr = k.expect_failure(&[
            "patch",
            "pod/p",
            "-p",
            r#"{"spec":{"restartPolicy":"OnFailure"}}"#,
        ]);
        assert_refused(&stderr, forbidden_update(release));
        assert!(
            stderr.contains("OnFailure"),
            "{release}: the diff names the change:\n{stderr}"
        );

        // The deadline may only go down; an image may not be blank.
        let stderr = k.expect_failure(&[
            "patch",
            "pod/p",
            "-p",
            r#"{"spec":{"activeDeadlineSeconds":500}}"#,
        ]);
        assert_refused(
            &stderr,
            "spec.activeDeadlineSeconds: Invalid value: 500: must be less than or equal to previous value",
        );
        let stderr = k.expect_failure(&["set", "image", "pod/p", "web= nginx"]);
        assert_refused(
            &stderr,
            r#"spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace"#,
        );

        // validateOnlyAddedTolerations: an existing toleration stays.
        let stderr = k.expect_failure(&[
            "patch",
            "pod/p",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/spec/tolerations/0"}]"#,
        ]);
        assert_refused(
            &stderr,
            "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
        );

        // ValidateContainerUpdates: no container added or removed.
        let stderr = k.expect_failure(&[
            "patch",
            "pod/p",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/containers/-","value":{"name":"side","image":"busybox"}}]"#,
        ]);
        assert_refused(
            &stderr,
            "spec.containers: Forbidden: pod updates may not add or remove containers",
        );

        // ValidatePodStatusUpdate, through pods/status: a container that terminated under
        // restartPolicy Never stays terminated; a condition's type is a qualified name
        // (reported under `metadata` before 1.34).
        let status = |patch: &str| {
            vec![
                "patch".to_owned(),
                "pod/p".to_owned(),
                "--subresource=status".to_owned(),
                "--type=merge".to_owned(),
                "-p".to_owned(),
                patch.to_owned(),
            ]
        };
        let run = |args: Vec<String>| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            k.expect_failure(&args)
        };
        k.expect_ok(&["patch", "pod/p", "--subresource=status", "--type=merge", "-p",
            r#"{"status":{"containerStatuses":[{"name":"web","ready":false,"restartCount":0,"image":"nginx","imageID":"","state":{"terminated":{"exitCode":0}}}]}}"#]);
        let stderr = run(status(
            r#"{"status":{"containerStatuses":[{"name":"web","ready":true,"restartCount":1,"image":"nginx","imageID":"","state":{"running":{}}}]}}"#,
        ));
        assert_refused(
            &stderr,
            "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
        );
        let stderr = run(status(
            r#"{"status":{"conditions":[{"type":"not valid","status":"True"}]}}"#,
        ));
        let conditions = if release >= "1.34" {
            "status"
        } else {
            "metadata"
        };
        assert_refused(
            &stderr,
            &format!(r#"{conditions}.conditions[0].Type: Invalid value: "not valid": "#),
        );
        if release >= "1.34" {
            // validatePodResourceClaimStatuses (the pod has no claims) and
            // validateContainerStatusUsers (SupplementalGroupsPolicy, on from 1.33).
            let stderr = run(status(
                r#"{"status":{"resourceClaimStatuses":[{"name":"gpu"}],"containerStatuses":[{"name":"web","ready":false,"restartCount":0,"image":"nginx","imageID":"","state":{"terminated":{"exitCode":0}},"user":{"linux":{"uid":-1,"gid":0}}}]}}"#,
            ));
            assert_refused(
                &stderr,
                r#"status.resourceClaimStatuses[0].name: Invalid value: "gpu": must match the name of an entry in `spec.resourceClaims`"#,
            );
            assert_refused(
                &stderr,
                "status.containerStatuses[0].user.linux.uid: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            );
        }

        // ValidatePodSpecificAnnotationUpdates: no mirror pod annotation afterwards.
        let stderr = k.expect_failure(&["annotate", "pod/p", "kubernetes.io/config.mirror=x"]);
        assert_refused(
            &stderr,
            "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation",
        );
    }
}

#[test]
fn kubectl_sees_security_context_and_affinity_refusals() {
    let manifest = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  securityContext:
    runAsUser: -1
    sysctls: [{name: 'Bad_Name'}]
    seccompProfile: {localhostProfile: x}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}
      preferredDuringSchedulingIgnoredDuringExecution:
        - {weight: 0, preference: {matchExpressions: [{key: zone, operator: In}]}}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: web}}}]
  hostAliases: [{ip: not-an-ip, hostnames: [web]}]
  dnsConfig: {nameservers: [not-an-ip]}
  topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]
  containers:
    - name: web
      image: nginx
      securityContext: {privileged: true, allowPrivilegeEscalation: false, runAsGroup: -2}
";
    for release in RELEASES {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("pod.yaml", manifest);
        let stderr =
            k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let sysctl_regex = if release == "1.20" {
            r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
        } else {
            r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
        };
        let sysctl = format!(
            r#"spec.securityContext.sysctls[0].name: Invalid value: "Bad_Name": must have at most 253 characters and match regex {sysctl_regex}"#
        );
        // The security context prints as the internal Go struct before 1.34, as its JSON after.
        let struct_value = if release >= "1.34" {
            r#"{"Capabilities":null,"Privileged":true,"SELinuxOptions":null,"#
        } else {
            "core.SecurityContext{Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0xc000000000), "
        };
        let host_alias = if release >= "1.34" {
            r#"spec.hostAliases[0].ip: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#
        } else {
            r#"spec.hostAliases.ip: Invalid value: "not-an-ip": must be valid IP address"#
        };
        let nameserver = if release >= "1.34" {
            r#"spec.dnsConfig.nameservers[0]: Invalid value: "not-an-ip": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#
        } else {
            r#"spec.dnsConfig.nameservers[0]: Invalid value: "not-an-ip": must be valid IP address"#
        };
        let causes = [
            host_alias,
            nameserver,
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            "spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            &sysctl,
            "spec.securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set",
            "spec.containers[0].securityContext.runAsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive",
            &format!("spec.containers[0].securityContext: Invalid value: {struct_value}"),
            "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty",
        ];
        for cause in causes {
            assert!(
                stderr.contains(cause),
                "{release}: expected `{cause}` in:\n{stderr}"
            );
        }

        // ValidatePodCreate: ephemeral containers come through their subresource only (a
        // field 1.20 drops, its gate being off).
        if release != "1.20" {
            let debug = k.file(
                "debug.yaml",
                "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: web, image: nginx}]
  ephemeralContainers: [{name: debug, image: busybox}]
",
            );
            let stderr =
                k.expect_failure(&["create", "--validate=false", "-f", debug.to_str().unwrap()]);
            assert_refused(
                &stderr,
                "spec.ephemeralContainers: Forbidden: cannot be set on create",
            );
        }
    }
}

#[test]
fn kubectl_may_not_change_a_persistent_volume_s_source() {
    let manifest = "apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
spec:
  accessModes: [ReadWriteOnce]
  capacity: {storage: 1Gi}
  hostPath: {path: /data}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [a]}]
";
    for release in RELEASES {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("pv.yaml", manifest);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        // The capacity may change; the source may not (ValidatePersistentVolumeUpdate).
        k.expect_ok(&[
            "patch",
            "pv/pv",
            "-p",
            r#"{"spec":{"capacity":{"storage":"2Gi"}}}"#,
        ]);
        let stderr = k.expect_failure(&[
            "patch",
            "pv/pv",
            "-p",
            r#"{"spec":{"hostPath":{"path":"/other"}}}"#,
        ]);
        assert!(
            stderr.contains("PersistentVolume \"pv\" is invalid: spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n")
                && stderr.contains("other"),
            "{release}:\n{stderr}"
        );
        // validatePvNodeAffinity: from 1.28 a beta zone label may become the GA one.
        let ga = r#"{"spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["a"]}]}]}}}}"#;
        if release == "1.20" {
            let stderr = k.expect_failure(&["patch", "pv/pv", "--type=merge", "-p", ga]);
            assert!(
                stderr.contains("nodeAffinity: Invalid value: core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}: field is immutable"),
                "{stderr}"
            );
        } else {
            k.expect_ok(&["patch", "pv/pv", "--type=merge", "-p", ga]);
        }
    }
}

#[test]
fn kubectl_refuses_probes_on_init_containers_and_sleeps_past_the_grace_period() {
    // validateInitContainers: a regular init container has no probes or hooks (`Invalid` with
    // the internal struct in 1.20, `Forbidden` from 1.28).
    let init = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
    - {name: init, image: busybox, readinessProbe: {tcpSocket: {port: 80}}}
  containers: [{name: web, image: nginx}]
";
    // A sidecar (restartPolicy Always, on by default from 1.29) may have probes; a regular
    // container may not have a restart policy in 1.28 (validateContainers), 1.34 drops it
    // (ContainerRestartRules is alpha there, `dropContainerRestartRules`) and from 1.35 it is
    // the container's own.
    let sidecar = "apiVersion: v1
kind: Pod
metadata: {name: sidecar}
spec:
  initContainers:
    - {name: proxy, image: envoy, restartPolicy: Always, startupProbe: {tcpSocket: {port: 80}}}
  containers: [{name: web, image: nginx, restartPolicy: Always}]
";
    // validateSleepAction (PodLifecycleSleepAction from 1.30, zero allowed from 1.33).
    let sleep = |seconds: u32| {
        format!(
            "apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  terminationGracePeriodSeconds: 10
  containers:
    - name: web
      image: nginx
      lifecycle: {{preStop: {{sleep: {{seconds: {seconds}}}}}}}
"
        )
    };
    for release in RELEASES {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let create = |name: &str, manifest: &str| {
            let file = k.file(name, manifest);
            k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()])
        };
        let stderr = create("init.yaml", init);
        if release == "1.20" {
            assert_refused(
                &stderr,
                "spec.initContainers[0].readinessProbe: Invalid value: core.Probe{Handler:core.Handler{Exec:(*core.ExecAction)(nil), HTTPGet:(*core.HTTPGetAction)(nil), TCPSocket:(*core.TCPSocketAction)(0xc000000000)}, InitialDelaySeconds:0, TimeoutSeconds:1, PeriodSeconds:10, SuccessThreshold:1, FailureThreshold:3}: must not be set for init containers",
            );
            continue;
        }
        assert_refused(
            &stderr,
            "spec.initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
        );

        if release == "1.28" {
            let stderr = create("sidecar.yaml", sidecar);
            assert!(stderr.contains("Pod \"sidecar\" is invalid"), "{stderr}");
            assert!(
                stderr.contains("spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"),
                "{stderr}"
            );
            // SidecarContainers is alpha, the init container's policy does not count.
            assert!(
                stderr.contains("spec.initContainers[0].startupProbe: Forbidden"),
                "{stderr}"
            );
            continue;
        }
        let file = k.file("sidecar.yaml", sidecar);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let policy = k.expect_ok(&[
            "get",
            "pod",
            "sidecar",
            "-o",
            "jsonpath={.spec.containers[0].restartPolicy}",
        ]);
        let kept = if release == "1.34" { "" } else { "Always" };
        assert_eq!(policy.trim(), kept, "{release}");

        let stderr = create("sleep.yaml", &sleep(20));
        assert_refused(
            &stderr,
            "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 20: must be non-negative and less than terminationGracePeriodSeconds (10)",
        );
        let file = k.file("zero.yaml", &sleep(0));
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
    }
}

#[test]
fn containers_restart_rules_and_image_volumes_follow_the_release() {
    // ContainerRestartRules (alpha in 1.34, beta from 1.35): validateContainerRestartPolicy
    // refuses rules without a policy and unknown operators in 1.36; 1.34's strategy drops the
    // fields (`dropContainerRestartRules`). ImageVolume (on from 1.35): a Pod's image volume
    // names its image (validateImageVolumeSource) and gets its pull policy from the reference's
    // tag (SetDefaults_Volume); 1.34 drops such volumes with their mounts.
    let rules = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  containers:
    - name: web
      image: nginx
      restartPolicyRules:
        - {action: Restart, exitCodes: {operator: Is, values: [42]}}
";
    let no_reference = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: web, image: nginx, volumeMounts: [{name: tools, mountPath: /tools}]}]
  volumes: [{name: tools, image: {pullPolicy: Always}}]
";
    let tools = "apiVersion: v1
kind: Pod
metadata: {name: tools}
spec:
  containers: [{name: web, image: nginx, volumeMounts: [{name: tools, mountPath: /tools}]}]
  volumes: [{name: tools, image: {reference: 'registry.example/tools'}}]
";
    for release in ["1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let get = |name: &str, path: &str| {
            let jsonpath = format!("jsonpath={path}");
            k.expect_ok(&["get", "pod", name, "-o", &jsonpath])
        };
        if release == "1.36" {
            let stderr = create_refused(&k, "rules.yaml", rules);
            assert_refused(
                &stderr,
                "spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
            );
            assert_refused(
                &stderr,
                r#"spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: "Is": supported values: "In", "NotIn""#,
            );
            let stderr = create_refused(&k, "no-reference.yaml", no_reference);
            assert_refused(&stderr, "spec.volumes[0].image.reference: Required value");
            let file = k.file("tools.yaml", tools);
            k.expect_ok(&["create", "-f", file.to_str().unwrap()]);
            assert_eq!(
                get("tools", "{.spec.volumes[0].image.pullPolicy}"),
                "Always"
            );
            continue;
        }
        // 1.34: the rules and the image volumes with their mounts are gone, the pods created.
        for (name, manifest) in [("rules.yaml", rules), ("tools.yaml", tools)] {
            let file = k.file(name, manifest);
            k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        }
        assert_eq!(get("p", "{.spec.containers[0].restartPolicyRules}"), "");
        // (The ServiceAccount plugin adds its token volume and mount.)
        let volumes = get("tools", "{.spec.volumes[*].name}");
        assert!(
            volumes.starts_with("kube-api-access-") && !volumes.contains("tools"),
            "{volumes}"
        );
        let mounts = get("tools", "{.spec.containers[0].volumeMounts[*].mountPath}");
        assert!(!mounts.contains("/tools"), "{mounts}");
    }
}

#[test]
fn kubectl_refuses_volume_sources_without_their_own_fields() {
    // validateVolumeSource's per-source validators: a GCE disk reported at `persistentDisk`, an
    // iSCSI volume's IQN and LUN and, with an initiator name, its name's length, Fibre Channel
    // targets, and (from 1.21, GenericEphemeralVolume) an ephemeral volume's claim template.
    let long = "v".repeat(60);
    let manifest = format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers: [{{name: web, image: nginx}}]
  volumes:
    - {{name: gce, gcePersistentDisk: {{partition: 300}}}}
    - {{name: {long}, iscsi: {{targetPortal: '10.0.0.1:3260', iqn: bad, lun: 300, initiatorName: iqn.2001-04.com.example:node}}}}
    - {{name: fc, fc: {{}}}}
    - {{name: eph, ephemeral: {{}}}}
"
    );
    for release in RELEASES {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let file = k.file("pod.yaml", &manifest);
        let stderr =
            k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let ephemeral = if release == "1.20" {
            "spec.volumes[3]: Required value: must specify a volume type"
        } else {
            "spec.volumes[3].ephemeral.volumeClaimTemplate: Required value"
        };
        let causes = [
            "spec.volumes[0].persistentDisk.pdName: Required value",
            "spec.volumes[0].persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive",
            r#"spec.volumes[1].iscsi.iqn: Invalid value: "bad": must be valid format starting with iqn, eui, or naa"#,
            "spec.volumes[1].iscsi.lun: Invalid value: 300: must be between 0 and 255, inclusive",
            &format!(
                "spec.volumes[1].name: Invalid value: \"{long}\": Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."
            ),
            "spec.volumes[2].fc.targetWWNs: Required value: must specify either targetWWNs or wwids, but not both",
            ephemeral,
        ];
        for cause in causes {
            assert_refused(&stderr, cause);
        }
    }
}

#[test]
fn kubectl_sees_what_a_pods_os_forbids() {
    // validateOS, validateLinux and validateWindows (IdentifyPodOS, on from 1.24): a Windows
    // pod has no Linux security settings, a Linux pod no Windows options.
    const WINDOWS: &str = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  os: {name: windows}
  securityContext: {runAsUser: 1000}
  containers:
  - name: web
    image: nginx
    securityContext: {privileged: false, readOnlyRootFilesystem: true}
";
    const LINUX: &str = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  os: {name: linux}
  containers:
  - name: web
    image: nginx
    securityContext: {windowsOptions: {runAsUserName: ContainerUser}}
";
    for release in ["1.28", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let refused = create_refused(&k, "windows.yaml", WINDOWS);
        for cause in [
            "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
            "spec.containers[0].securityContext.readOnlyRootFilesystem: Forbidden: cannot be set for a windows pod",
            "spec.containers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
        ] {
            assert_refused(&refused, cause);
        }
        let file = k.file("linux.yaml", LINUX);
        let refused =
            k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        assert_refused(
            &refused,
            "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
        );
    }
}

#[test]
fn kubectl_sees_mounts_checked_against_the_pod_s_volumes() {
    // validateContainerCommon's ValidateVolumeMounts, which ephemeral containers are held to
    // too (validateEphemeralContainers, through pods/ephemeralcontainers), its overlap with the
    // container's volume devices and its propagation and recursive read-only modes; ValidatePersistentVolumeClaimTemplate's
    // ValidateTemplateObjectMeta: an ephemeral volume's claim template sets only labels and
    // annotations (GenericEphemeralVolume, on from 1.21; ephemeral containers from 1.23).
    const PODS: &str = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: web
    image: nginx
    volumeMounts: [{name: claim, mountPath: /data, mountPropagation: Bidirectional, recursiveReadOnly: Enabled}]
    volumeDevices: [{name: claim, devicePath: /data}]
  volumes:
  - {name: claim, persistentVolumeClaim: {claimName: c}}
  - name: eph
    ephemeral:
      volumeClaimTemplate:
        metadata: {name: scratch, labels: {app: web}}
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  containers: [{name: web, image: nginx}]
  volumes: [{name: data, emptyDir: {}}]
";
    for release in ["1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let refused = create_refused(&k, "pods.yaml", PODS);
        for cause in [
            r#"spec.containers[0].volumeMounts[0].name: Invalid value: "claim": must not already exist in volumeDevices"#,
            r#"spec.containers[0].volumeMounts[0].mountPath: Invalid value: "/data": must not already exist as a path in volumeDevices"#,
            "spec.volumes[1].ephemeral.volumeClaimTemplate.metadata.name: Forbidden: cannot be set",
            "spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers",
        ] {
            assert_refused(&refused, cause);
        }
        // ValidateVolumes with the pod's name: an ephemeral volume's claim is `<pod>-<volume>`.
        let long = "p".repeat(250);
        let claims = format!(
            "apiVersion: v1
kind: Pod
metadata: {{name: {long}}}
spec:
  containers: [{{name: web, image: nginx}}]
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec: {{accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
  - {{name: claim, persistentVolumeClaim: {{claimName: {long}-scratch}}}}
"
        );
        let named = create_refused(&k, "claims.yaml", &claims);
        for cause in [
            format!(
                r#"spec.volumes[0].name: Invalid value: "scratch": PVC name "{long}-scratch": must be no more than 253 characters"#
            ),
            format!(
                r#"spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: "{long}-scratch": must not reference a PVC that gets created for an ephemeral volume"#
            ),
        ] {
            assert!(named.contains(&cause), "{named}");
        }
        // validateMountRecursiveReadOnly (RecursiveReadOnlyMounts, on from 1.31).
        let read_only = "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true";
        assert_eq!(refused.contains(read_only), release != "1.28", "{refused}");
        let debug = r#"[{"op":"add","path":"/spec/ephemeralContainers","value":[{"name":"debug","image":"busybox","volumeMounts":[{"name":"nope","mountPath":"/d"},{"name":"data","mountPath":"/e"}]}]}]"#;
        // kubectl patches pods/ephemeralcontainers from 1.32 (1.28's allows status and scale).
        let newer = kapi_e2e::kubectl_binaries_since(32);
        let binary = newer.first().expect("a pinned kubectl 1.32 or later");
        let debugger = Kubectl::new(binary.clone(), &server, dir.path());
        let refused = debugger.expect_failure(&[
            "patch",
            "pod",
            "q",
            "--subresource=ephemeralcontainers",
            "--type=json",
            "-p",
            debug,
        ]);
        assert!(
            refused.contains(r#"Pod "q" is invalid"#)
                && refused.contains(
                    r#"spec.ephemeralContainers[0].volumeMounts[0].name: Not found: "nope""#
                )
                && !refused.contains("volumeMounts[1]"),
            "{refused}"
        );
    }
}

#[test]
fn kubectl_sees_resize_policies_checked_on_create() {
    // validateResizePolicy in validateContainerCommon (InPlacePodVerticalScaling, beta and on
    // from 1.33; 1.28's strategy drops the field while the gate is off): cpu or memory, once
    // each, NotRequired or RestartContainer, NotRequired under a pod's `restartPolicy: Never`.
    const POD: &str = "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  containers:
  - name: web
    image: nginx
    resizePolicy:
    - {resourceName: cpu, restartPolicy: RestartContainer}
    - {resourceName: gpu, restartPolicy: NotRequired}
    - {resourceName: cpu, restartPolicy: NotRequired}
";
    for release in ["1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        if release == "1.28" {
            let file = k.file("pod.yaml", POD);
            k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
            continue;
        }
        let refused = create_refused(&k, "pod.yaml", POD);
        for cause in [
            "spec.containers[0].resizePolicy: Invalid value: \"RestartContainer\": must be 'NotRequired' when `restartPolicy` is 'Never'",
            r#"spec.containers[0].resizePolicy: Unsupported value: "gpu": supported values: "cpu", "memory""#,
            r#"spec.containers[0].resizePolicy[2]: Duplicate value: "cpu""#,
        ] {
            assert_refused(&refused, cause);
        }
    }
}
