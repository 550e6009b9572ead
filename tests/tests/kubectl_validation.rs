//! Writes a real cluster refuses are refused, with upstream's 422 `Invalid` and its messages:
//! the checks of `pkg/apis/<group>/validation` (ConfigMap and Secret keys, sizes and
//! immutability; workload selectors, counts and immutable selectors; Services (names, ports,
//! ExternalName, IPs, source ranges, affinity, LoadBalancer fields and traffic policies);
//! containers, volumes, resources and probes; Ingress, NetworkPolicy, RBAC, CronJob, storage,
//! scheduling, policy, autoscaling and coordination kinds) and of object metadata (`k8s.io/apimachinery/pkg/api/validation`), on create,
//! update, patch, apply and dry run, worded as each release words them. Seen through kubectl and
//! the official Python client.

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::process::Command;

use kapi_e2e::{KapiServer, Kubectl, ServerOptions, python};
use serde_json::{Value, json};

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx}]
";

/// kubectl prints a 422 as `The <Kind> "<name>" is invalid: <causes>` (its generators as
/// `failed to create ...: <Kind> "<name>" is invalid: ...`).
fn assert_refused(stderr: &str, kind_and_name: &str, cause: &str) {
    assert!(
        stderr.contains(&format!("{kind_and_name} is invalid")) && stderr.contains(cause),
        "expected `{cause}` in:\n{stderr}"
    );
}

#[test]
fn kubectl_sees_upstream_refusals_in_each_release() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let json_values = release >= "1.34";

        // ValidatePodTemplateSpecForReplicaSet: the template must carry the selected labels.
        let mismatched = k.file(
            "mismatch.yaml",
            &DEPLOYMENT.replace("labels: {app: web}", "labels: {app: api}"),
        );
        let stderr = k.expect_failure(&[
            "create",
            "--validate=false",
            "-f",
            mismatched.to_str().unwrap(),
        ]);
        let labels = if json_values {
            r#"{"app":"api"}"#
        } else {
            r#"map[string]string{"app":"api"}"#
        };
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            &format!(
                "spec.template.metadata.labels: Invalid value: {labels}: `selector` does not match template `labels`"
            ),
        );
        // A dry run is checked as the real write would be.
        let stderr = k.expect_failure(&[
            "create",
            "--validate=false",
            "--dry-run=server",
            "-f",
            mismatched.to_str().unwrap(),
        ]);
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            "`selector` does not match template `labels`",
        );

        let file = k.file("deployment.yaml", DEPLOYMENT);
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        // ValidateNonnegativeField, through a patch.
        let stderr = k.expect_failure(&[
            "patch",
            "deployment/web",
            "-p",
            r#"{"spec":{"replicas":-1}}"#,
        ]);
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        );
        // The apps strategies' ValidateUpdate: the selector never changes.
        let stderr = k.expect_failure(&[
            "patch", "deployment/web", "-p",
            r#"{"spec":{"selector":{"matchLabels":{"app":"web2"}},"template":{"metadata":{"labels":{"app":"web2"}}}}}"#,
        ]);
        let selector = if json_values {
            r#"{"matchLabels":{"app":"web2"}}"#
        } else {
            r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"web2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#
        };
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            &format!("spec.selector: Invalid value: {selector}: field is immutable"),
        );
        // A valid change passes, through server-side apply too.
        k.expect_ok(&["scale", "deployment/web", "--replicas=3"]);
        let applied = k.file(
            "applied.yaml",
            &DEPLOYMENT.replace("image: nginx", "image: \"\""),
        );
        let stderr = k.expect_failure(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--validate=false",
            "-f",
            applied.to_str().unwrap(),
        ]);
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            "spec.template.spec.containers[0].image: Required value",
        );

        // ValidateConfigMapUpdate: an immutable ConfigMap keeps its data.
        k.expect_ok(&["create", "configmap", "frozen", "--from-literal=k=v"]);
        k.expect_ok(&["patch", "configmap/frozen", "-p", r#"{"immutable":true}"#]);
        let stderr =
            k.expect_failure(&["patch", "configmap/frozen", "-p", r#"{"data":{"k":"w"}}"#]);
        assert_refused(
            &stderr,
            r#"ConfigMap "frozen""#,
            "data: Forbidden: field is immutable when `immutable` is set",
        );

        // ValidateServiceName: a DNS-1035 label, so not starting with a digit.
        let stderr = k.expect_failure(&["create", "service", "clusterip", "1web", "--tcp=80"]);
        assert_refused(
            &stderr,
            r#"Service "1web""#,
            "metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        );
        // ValidateRBACName: path segments, so the `system:` names of upstream's roles are fine.
        k.expect_ok(&[
            "create",
            "clusterrole",
            "system:kapi-test",
            "--verb=get",
            "--resource=pods",
        ]);
    }
}

/// One write a release refuses: the upstream function it mirrors, the manifest, and the causes
/// kubectl must print, each from the first release that words it so (`("", ...)` for all).
struct Refusal {
    cites: &'static str,
    manifest: &'static str,
    kind_and_name: &'static str,
    causes: &'static [(&'static str, &'static str)],
}

const POD_HEAD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n";

/// Creates refused across the kinds `specs/validation/kubernetes.yaml` covers beyond workloads.
const REFUSALS: &[Refusal] = &[
    Refusal {
        cites: "ValidateVolumes/validateVolumeSource/validateSecretVolumeSource, ValidateVolumeMounts",
        manifest: "  volumes: [{name: data}, {name: both, emptyDir: {}, configMap: {name: c}}, {name: s, secret: {}}]
  containers: [{name: c, image: x, volumeMounts: [{name: data, mountPath: /d}, {name: both, mountPath: /d}]}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", "spec.volumes[0]: Required value: must specify a volume type"),
            ("", "spec.volumes[1].configMap: Forbidden: may not specify more than 1 volume type"),
            ("", "spec.volumes[2].secret.secretName: Required value"),
            ("", r#"spec.containers[0].volumeMounts[0].name: Not found: "data""#),
            ("", r#"spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d": must be unique"#),
        ],
    },
    Refusal {
        cites: "ValidateResourceRequirements (the limit named from 1.27)",
        manifest: "  containers: [{name: c, image: x, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", r#"spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit"#),
            ("1.28", r#"spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1"#),
        ],
    },
    Refusal {
        cites: "validateProbe/validateHandler, validateLivenessProbe",
        manifest: "  containers:
  - name: c
    image: x
    livenessProbe: {exec: {command: ['true']}, httpGet: {port: 80}, successThreshold: 2, periodSeconds: -1}",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", "spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"),
            ("", "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"),
            ("", "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"),
        ],
    },
    Refusal {
        cites: "ValidatePodSpec (hostname, activeDeadlineSeconds), validateTCPSocketAction",
        manifest: "  hostname: a.b
  activeDeadlineSeconds: 0
  containers: [{name: c, image: x, readinessProbe: {tcpSocket: {port: 0}}}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", "spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive"),
            ("", "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"),
            ("", r#"spec.hostname: Invalid value: "a.b": a lowercase RFC 1123 label must consist of"#),
            ("1.28", r#"spec.hostname: Invalid value: "a.b": must not contain dots"#),
        ],
    },
    Refusal {
        cites: "ValidateTolerations (the value alone from 1.34)",
        manifest: "  tolerations: [{key: k, operator: Exists, value: v}, {operator: Equal, effect: Never}]
  containers: [{name: c, image: x}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", r#"spec.tolerations[0].operator: Invalid value: core.Toleration{Key:"k", Operator:"Exists", Value:"v", Effect:"", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'"#),
            ("1.34", r#"spec.tolerations[0].operator: Invalid value: "v": value must be empty when `operator` is 'Exists'"#),
            ("", r#"spec.tolerations[1].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys""#),
            ("", r#"spec.tolerations[1].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#),
        ],
    },
    Refusal {
        cites: "checkHostPortConflicts",
        manifest: "  containers:
  - {name: a, image: x, ports: [{containerPort: 80, hostPort: 8080}]}
  - {name: b, image: x, ports: [{containerPort: 81, hostPort: 8080}]}",
        kind_and_name: r#"Pod "p""#,
        causes: &[("", r#"spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080""#)],
    },
    Refusal {
        cites: "ValidateEnv (IsEnvVarName; IsRelaxedEnvVarName from 1.32 refuses only '=' and non-printables)",
        manifest: "  containers: [{name: c, image: x, env: [{name: 'A=B'}]}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", r#"spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit"#),
            ("1.34", r#"spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='"#),
        ],
    },
    Refusal {
        cites: "validateIngressRules, validateHTTPIngressPath, validateIngressBackend",
        manifest: "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing}
spec:
  rules:
  - host: 1.2.3.4
    http:
      paths:
      - {path: /a, backend: {service: {name: web, port: {number: 80}}}}
      - {path: a, pathType: Prefix, backend: {service: {name: web, port: {}}}}",
        kind_and_name: r#"Ingress "ing""#,
        causes: &[
            ("", r#"spec.rules[0].host: Invalid value: "1.2.3.4": must be a DNS name, not an IP address"#),
            ("", "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"),
            ("", r#"spec.rules[0].http.paths[1].path: Invalid value: "a": must be an absolute path"#),
            ("", "spec.rules[0].http.paths[1].backend: Required value: port name or number is required"),
        ],
    },
    Refusal {
        cites: "validateIngressClassSpec (IsDomainPrefixedPath)",
        manifest: "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: ic}\nspec: {controller: nginx}",
        kind_and_name: r#"IngressClass "ic""#,
        causes: &[("", r#"spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#)],
    },
    Refusal {
        cites: "ValidateNetworkPolicyPeer, ValidateNetworkPolicyPort, ValidateIPBlock, ValidateLabelSelector",
        manifest: "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np}
spec:
  podSelector: {matchExpressions: [{key: app, operator: In}]}
  ingress: [{from: [{}], ports: [{protocol: ICMP, port: 70000}]}]
  egress: [{to: [{ipBlock: {cidr: 10.0.0.0/8, except: [11.0.0.0/16]}}]}]",
        kind_and_name: r#"NetworkPolicy "np""#,
        causes: &[
            ("", r#"spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP""#),
            ("", "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"),
            ("", "spec.ingress[0].from[0]: Required value: must specify a peer"),
            ("", "spec.podSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
            ("", r#"spec.egress[0].to[0].ipBlock.except[0]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`"#),
        ],
    },
    Refusal {
        cites: "ValidatePolicyRule (namespaced)",
        manifest: "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules: [{verbs: [get], nonResourceURLs: [/healthz]}, {apiGroups: ['']}]",
        kind_and_name: r#"Role "r""#,
        causes: &[
            ("", r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#),
            ("1.34", r#"rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs"#),
            ("", "rules[1].verbs: Required value: verbs must contain at least one value"),
            ("", "rules[1].resources: Required value: resource rules must supply at least one resource"),
        ],
    },
    Refusal {
        cites: "ValidateClusterRole (aggregationRule)",
        manifest: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: agg}\naggregationRule: {clusterRoleSelectors: []}",
        kind_and_name: r#"ClusterRole "agg""#,
        causes: &[("", "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil")],
    },
    Refusal {
        cites: "ValidateClusterRoleBinding, ValidateRoleBindingSubject",
        manifest: "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: view}
subjects: [{kind: ServiceAccount, name: default}]",
        kind_and_name: r#"ClusterRoleBinding "crb""#,
        causes: &[
            ("", r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#),
            ("", "subjects[0].namespace: Required value"),
        ],
    },
    Refusal {
        cites: "ValidatePersistentVolumeClaimSpec (ReadWriteOncePod from 1.27)",
        manifest: "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: claim}
spec: {accessModes: [ReadWriteOncePod, ReadWriteOnce], resources: {requests: {storage: '0'}}}",
        kind_and_name: r#"PersistentVolumeClaim "claim""#,
        causes: &[
            ("", r#"spec.accessModes: Unsupported value: "ReadWriteOncePod": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce""#),
            ("1.28", "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"),
            ("", r#"spec.resources[storage]: Invalid value: "0": must be greater than zero"#),
        ],
    },
    Refusal {
        cites: "validateConfigMapVolumeSource/validateKeyToPath, validateProjectionSources",
        manifest: "  volumes:
  - {name: c, configMap: {name: c, items: [{key: k, path: /abs}]}}
  - {name: t, projected: {sources: [{serviceAccountToken: {path: token, expirationSeconds: 60}}, {configMap: {name: a}, secret: {name: b}}]}}
  containers: [{name: c, image: x}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", r#"spec.volumes[0].configMap.items[0].path: Invalid value: "/abs": must be a relative path"#),
            ("", "spec.volumes[1].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"),
            // The line's end: the later wording only adds to it (kubernetes#125940).
            ("", "spec.volumes[1].projected.sources[1]: Forbidden: may not specify more than 1 volume type\n"),
            ("1.31", "spec.volumes[1].projected.sources[1]: Forbidden: may not specify more than 1 volume type per source"),
        ],
    },
    Refusal {
        cites: "ValidatePersistentVolumeSpec",
        manifest: "apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
spec: {capacity: {storage: '-1'}, persistentVolumeReclaimPolicy: Keep, local: {path: /d}, csi: {driver: d, volumeHandle: h}}",
        kind_and_name: r#"PersistentVolume "pv""#,
        causes: &[
            ("", "spec.accessModes: Required value"),
            ("", "spec.capacity[storage]: Invalid value: -1: must be a valid resource quantity"),
            ("", r#"spec.capacity[storage]: Invalid value: "-1": must be greater than zero"#),
            ("", r#"spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain""#),
            ("", "spec.nodeAffinity: Required value: Local volume requires node affinity"),
            ("", "spec.csi: Forbidden: may not specify more than 1 volume type"),
        ],
    },
    Refusal {
        cites: "ValidateStorageClass",
        manifest: "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: sc}\nreclaimPolicy: Recycle",
        kind_and_name: r#"StorageClass "sc""#,
        causes: &[
            ("", "provisioner: Required value"),
            ("", r#"reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain""#),
        ],
    },
    Refusal {
        cites: "ValidatePriorityClass",
        manifest: "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pc}\nvalue: 2000000000",
        kind_and_name: r#"PriorityClass "pc""#,
        causes: &[("", "value: Forbidden: maximum allowed value of a user defined priority is 1000000000")],
    },
    Refusal {
        cites: "validateHorizontalPodAutoscalerSpec, ValidateCrossVersionObjectReference",
        manifest: "apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: hpa}
spec: {minReplicas: 3, maxReplicas: 2, scaleTargetRef: {kind: Deployment, name: 'a/b'}}",
        kind_and_name: r#"HorizontalPodAutoscaler "hpa""#,
        causes: &[
            ("", "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"),
            ("", r#"spec.scaleTargetRef.name: Invalid value: "a/b": may not contain '/'"#),
        ],
    },
    Refusal {
        cites: "validateMatchLabelKeysInTopologySpread (from 1.27), validateMatchLabelKeysAndMismatchLabelKeys (from 1.31)",
        manifest: "  topologySpreadConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [app]}]
  affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: zone, mismatchLabelKeys: [app]}]}}
  containers: [{name: c, image: x}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"),
            ("1.28", "spec.topologySpreadConstraints[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
            ("1.34", "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set"),
        ],
    },
    Refusal {
        cites: "validateWindowsSecurityContextOptions, validateWindowsHostProcessPod (from 1.23), validateSELinuxChangePolicy (from 1.33)",
        manifest: r"  securityContext: {seLinuxChangePolicy: MountOption, windowsOptions: {runAsUserName: 'a\b\c'}}
  containers: [{name: c, image: x, securityContext: {windowsOptions: {hostProcess: true}}}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", r#"spec.securityContext.windowsOptions.runAsUserName: Invalid value: "a\\b\\c": runAsUserName cannot contain more than one backslash"#),
            ("1.28", "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers"),
            ("1.34", r#"spec.securityContext.seLinuxChangePolicy: Unsupported value: "MountOption": supported values: "Recursive""#),
        ],
    },
    Refusal {
        cites: "ValidateVolumeDevices (ephemeral volumes' devices from 1.23)",
        manifest: "  volumes: [{name: scratch, emptyDir: {}}]
  containers: [{name: c, image: x, volumeDevices: [{name: scratch, devicePath: /dev/xvda}]}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", r#"spec.containers[0].volumeDevices[0].name: Invalid value: "scratch": can only use volume source type of PersistentVolumeClaim for block mode"#),
            ("1.28", r#"spec.containers[0].volumeDevices[0].name: Invalid value: "scratch": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"#),
        ],
    },
    Refusal {
        cites: "ValidatePodTemplateSpec (ephemeral containers, on from 1.23)",
        manifest: "apiVersion: apps/v1
kind: Deployment
metadata: {name: debug}
spec:
  replicas: -1
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec:
      containers: [{name: c, image: x}]
      ephemeralContainers: [{name: e, image: busybox}]",
        kind_and_name: r#"Deployment "debug""#,
        causes: &[
            ("", "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
            ("1.28", "spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"),
        ],
    },
    Refusal {
        cites: "ValidateResourceQuantityValue (IsIntegerResourceName: extended resources)",
        manifest: "  containers: [{name: c, image: x, resources: {limits: {example.com/gpu: 500m}}}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", r#"spec.containers[0].resources.limits[example.com/gpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"500m", Format:"DecimalSI"}: must be an integer"#),
            ("1.34", r#"spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer"#),
        ],
    },
    Refusal {
        cites: "validateMetricTarget (autoscaling/v1's target as its CPU metric)",
        manifest: "apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: cpu}
spec: {maxReplicas: 2, targetCPUUtilizationPercentage: 0, scaleTargetRef: {kind: Deployment, name: web}}",
        kind_and_name: r#"HorizontalPodAutoscaler "cpu""#,
        causes: &[("", "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0")],
    },
    Refusal {
        cites: "validateAllowedTopologies, ValidateTopologySelectorTerm",
        manifest: "apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zoned}
provisioner: example.com/disk
allowedTopologies: [{matchLabelExpressions: [{key: zone, values: []}]}, {matchLabelExpressions: [{key: zone, values: []}]}]",
        kind_and_name: r#"StorageClass "zoned""#,
        causes: &[
            ("", "allowedTopologies[0].matchLabelExpressions[0].values: Required value"),
            ("", r#"allowedTopologies[1].matchLabelExpressions: Duplicate value: """#),
        ],
    },
    Refusal {
        cites: "ValidatePriorityClass (IsKnownSystemPriorityClass)",
        manifest: "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-mine}\nvalue: 1",
        kind_and_name: r#"PriorityClass "system-mine""#,
        causes: &[("", "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class")],
    },
    Refusal {
        cites: "ValidateIngressCreate (the class annotation; a matching one allowed from 1.28)",
        manifest: "apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: classy, annotations: {kubernetes.io/ingress.class: other}}
spec: {ingressClassName: nginx, defaultBackend: {service: {name: web, port: {number: 80}}}}",
        kind_and_name: r#"Ingress "classy""#,
        causes: &[
            ("", r#"annotations.kubernetes.io/ingress.class: Invalid value: "other": can not be set when the class field is also set"#),
            ("1.28", r#"annotations.kubernetes.io/ingress.class: Invalid value: "other": must match `ingressClassName` when both are specified"#),
        ],
    },
    Refusal {
        cites: "ValidatePersistentVolumeClaimSpec (validateDataSource from 1.24); the strategy's \
                EnforceDataSourceBackwardsCompatibility drops a core-group `dataSource` that is no \
                claim before validation, one given as `dataSourceRef` is copied into it",
        manifest: "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: cloned}
spec: {resources: {requests: {storage: 1Gi}}, dataSource: {kind: Snapshot, name: s}}",
        kind_and_name: r#"PersistentVolumeClaim "cloned""#,
        causes: &[("", "spec.accessModes: Required value: at least 1 access mode is required")],
    },
    Refusal {
        cites: "ValidatePersistentVolumeClaimSpec (validateDataSource, validateDataSourceRef) after \
                the strategy's NormalizeDataSources",
        manifest: "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: populated}
spec: {resources: {requests: {storage: 1Gi}}, dataSourceRef: {kind: Snapshot, name: s}}",
        kind_and_name: r#"PersistentVolumeClaim "populated""#,
        causes: &[
            ("", "spec.accessModes: Required value: at least 1 access mode is required"),
            ("1.28", r#"spec.dataSource: Invalid value: "Snapshot": must be 'PersistentVolumeClaim' when referencing the default apiGroup"#),
            ("1.28", r#"spec.dataSourceRef: Invalid value: "Snapshot": must be 'PersistentVolumeClaim' when referencing the default apiGroup"#),
        ],
    },
    Refusal {
        cites: "validateEnvVarValueFrom, validateObjectFieldSelector, validateContainerResourceDivisor, ValidateEnvFrom, validateDownwardAPIVolumeFile",
        manifest: "  volumes: [{name: info, downwardAPI: {items: [{path: node, fieldRef: {fieldPath: spec.nodeName}}]}}]
  containers:
  - name: c
    image: x
    env:
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodename}}}
    - {name: PHASE, valueFrom: {fieldRef: {fieldPath: status.phase}}}
    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 2}}}
    - {name: BOTH, value: x, valueFrom: {configMapKeyRef: {name: c, key: k}}}
    envFrom: [{prefix: P_}]",
        kind_and_name: r#"Pod "p""#,
        causes: &[
            ("", "spec.volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\""),
            ("", "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nodename\": error converting fieldPath: field label not supported: spec.nodename"),
            ("", "spec.containers[0].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.podIP\", \"status.podIPs\""),
            ("1.34", "spec.containers[0].env[1].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\""),
            ("", "spec.containers[0].env[2].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource"),
            ("", "spec.containers[0].env[3].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"),
            ("", "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"),
        ],
    },
    Refusal {
        cites: "ValidateLeaseSpec",
        manifest: "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l}\nspec: {leaseDurationSeconds: 0}",
        kind_and_name: r#"Lease "l""#,
        causes: &[("", "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0")],
    },
];

/// The causes of `refusal` that `release` prints: for each text, the latest wording whose first
/// release is at most `release` (entries sharing a field path and message tail are one cause).
fn expected(refusal: &Refusal, release: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for (i, (since, cause)) in refusal.causes.iter().enumerate() {
        let newer = refusal.causes[i + 1..]
            .iter()
            .any(|(s, c)| !s.is_empty() && *s <= release && same_cause(cause, c));
        if (since.is_empty() || *since <= release) && !newer {
            out.push(cause);
        }
    }
    out
}

/// Two wordings of one cause: the same field path.
fn same_cause(a: &str, b: &str) -> bool {
    a.split(':').next() == b.split(':').next()
}

#[test]
fn kubectl_sees_refusals_of_volumes_probes_ingress_rbac_and_cluster_kinds() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        for (i, refusal) in REFUSALS.iter().enumerate() {
            let manifest = if refusal.manifest.starts_with("  ") {
                format!("{POD_HEAD}{}", refusal.manifest)
            } else {
                refusal.manifest.to_owned()
            };
            let file = k.file(&format!("refused-{i}.yaml"), &manifest);
            let stderr =
                k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
            for cause in expected(refusal, release) {
                assert!(
                    stderr.contains(&format!("{} is invalid", refusal.kind_and_name))
                        && stderr.contains(cause),
                    "{} in {release}: expected `{cause}` in:\n{stderr}",
                    refusal.cites
                );
            }
        }

        // validateCronJobSpec: robfig/cron's errors (v1 in 1.20, batch/v1beta1 there).
        let group = if release == "1.20" {
            "batch/v1beta1"
        } else {
            "batch/v1"
        };
        let cron = |schedule: &str| {
            k.file(
                "cron.yaml",
                &format!(
                    "apiVersion: {group}
kind: CronJob
metadata: {{name: cj}}
spec:
  schedule: '{schedule}'
  jobTemplate: {{spec: {{template: {{spec: {{restartPolicy: Never, containers: [{{name: c, image: x}}]}}}}}}}}"
                ),
            )
        };
        let file = cron("* * *");
        let stderr =
            k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let parsed = if release == "1.20" {
            "Expected exactly 5 fields, found 3: * * *"
        } else {
            "expected exactly 5 fields, found 3: [* * *]"
        };
        assert_refused(
            &stderr,
            r#"CronJob "cj""#,
            &format!(r#"spec.schedule: Invalid value: "* * *": {parsed}"#),
        );

        // ValidatePodDisruptionBudgetSpec (policy/v1beta1 in 1.20).
        let group = if release == "1.20" {
            "policy/v1beta1"
        } else {
            "policy/v1"
        };
        let pdb = k.file(
            "pdb.yaml",
            &format!("apiVersion: {group}\nkind: PodDisruptionBudget\nmetadata: {{name: pdb}}\nspec: {{minAvailable: 1, maxUnavailable: '150%'}}"),
        );
        let stderr = k.expect_failure(&["create", "--validate=false", "-f", pdb.to_str().unwrap()]);
        assert_refused(
            &stderr,
            r#"PodDisruptionBudget "pdb""#,
            ": minAvailable and maxUnavailable cannot be both set",
        );
        let percent = if release >= "1.34" {
            r#""150%""#
        } else {
            r#"intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}"#
        };
        assert_refused(
            &stderr,
            r#"PodDisruptionBudget "pdb""#,
            &format!(
                "spec.maxUnavailable: Invalid value: {percent}: must not be greater than 100%"
            ),
        );

        // Updates: ValidateRoleBindingUpdate, ValidateStorageClassUpdate,
        // ValidatePriorityClassUpdate (at `Value` before 1.27).
        k.expect_ok(&[
            "create",
            "rolebinding",
            "rb",
            "--clusterrole=view",
            "--user=u",
        ]);
        let stderr = k.expect_failure(&[
            "patch",
            "rolebinding/rb",
            "-p",
            r#"{"roleRef":{"name":"edit"}}"#,
        ]);
        let role_ref = if release >= "1.34" {
            r#"{"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"edit"}"#
        } else {
            r#"rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}"#
        };
        assert_refused(
            &stderr,
            r#"RoleBinding "rb""#,
            &format!("roleRef: Invalid value: {role_ref}: cannot change roleRef"),
        );
        let class = k.file(
            "class.yaml",
            "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: example.com/disk\nparameters: {type: ssd}",
        );
        k.expect_ok(&["create", "--validate=false", "-f", class.to_str().unwrap()]);
        let stderr = k.expect_failure(&[
            "patch",
            "storageclass/fast",
            "-p",
            r#"{"parameters":{"type":"hdd"}}"#,
        ]);
        assert_refused(
            &stderr,
            r#"StorageClass "fast""#,
            "parameters: Forbidden: updates to parameters are forbidden.",
        );
        k.expect_ok(&["create", "priorityclass", "low", "--value=10"]);
        let stderr = k.expect_failure(&["patch", "priorityclass/low", "-p", r#"{"value":20}"#]);
        let field = if release == "1.20" { "Value" } else { "value" };
        assert_refused(
            &stderr,
            r#"PriorityClass "low""#,
            &format!("{field}: Forbidden: may not be changed in an update."),
        );
        // ValidateRollingUpdateDeployment: the IntOrString struct shown before 1.34.
        let deployment = k.file("rolling.yaml", DEPLOYMENT);
        k.expect_ok(&[
            "create",
            "--validate=false",
            "-f",
            deployment.to_str().unwrap(),
        ]);
        let stderr = k.expect_failure(&[
            "patch",
            "deployment/web",
            "-p",
            r#"{"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":0,"maxSurge":0}}}}"#,
        ]);
        let zero = if release >= "1.34" {
            "0"
        } else {
            r#"intstr.IntOrString{Type:0, IntVal:0, StrVal:""}"#
        };
        assert_refused(
            &stderr,
            r#"Deployment "web""#,
            &format!(
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: {zero}: may not be 0 when `maxSurge` is 0"
            ),
        );
        // What upstream accepts passes: a defaulted StorageClass, a valid Ingress and CronJob.
        let get = k.expect_ok(&[
            "get",
            "storageclass/fast",
            "-o",
            "jsonpath={.reclaimPolicy}/{.volumeBindingMode}",
        ]);
        assert_eq!(get, "Delete/Immediate", "{release}");
        k.expect_ok(&["create", "ingress", "web", "--rule=example.com/=web:80"]);
        k.expect_ok(&[
            "create",
            "--validate=false",
            "-f",
            cron("@hourly").to_str().unwrap(),
        ]);
    }
}

/// The 422 bodies as the Python client receives them: code, reason, message and causes.
const SCRIPT: &str = r#"
import base64
import json
import sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config(sys.argv[1])
release = sys.argv[2]
v1 = client.CoreV1Api()

def refused(create, body):
    try:
        create("default", body)
    except ApiException as e:
        assert e.status == 422, (e.status, e.body)
        status = json.loads(e.body)
        assert status["reason"] == "Invalid", status
        return status
    raise AssertionError(f"accepted: {body}")

# ValidateConfigMap: keys, a key in both maps, and the 1 MiB total reported at `[]`.
status = refused(v1.create_namespaced_config_map, {
    "metadata": {"name": "keys"}, "data": {"a b": "x", "k": "v"},
    "binaryData": {"k": base64.b64encode(b"v").decode()}})
causes = [(c["field"], c["reason"]) for c in status["details"]["causes"]]
assert causes == [("data[a b]", "FieldValueInvalid"), ("data[k]", "FieldValueInvalid")], causes
assert status["message"].startswith('ConfigMap "keys" is invalid: [data[a b]: Invalid value: "a b": '), status
assert status["message"].endswith(', data[k]: Invalid value: "k": duplicate of key present in binaryData]'), status
assert status["details"] == {**status["details"], "name": "keys", "kind": "ConfigMap"}, status

status = refused(v1.create_namespaced_config_map, {
    "metadata": {"name": "big"}, "data": {"a": "x" * (1024 * 1024), "b": "y"}})
worded = "must have at most" if release < "1.32" else "may not be more than"
assert status["message"] == f'ConfigMap "big" is invalid: []: Too long: {worded} 1048576 bytes', status

# ValidateSecret: the keys a type needs; ValidateSecretUpdate: the type never changes.
status = refused(v1.create_namespaced_secret, {
    "metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
    "data": {"tls.crt": base64.b64encode(b"c").decode()}})
assert status["message"] == 'Secret "tls" is invalid: data[tls.key]: Required value', status
v1.create_namespaced_secret("default", {"metadata": {"name": "plain"}, "stringData": {"k": "v"}})
try:
    v1.patch_namespaced_secret("plain", "default", {"type": "example.com/custom"})
    raise AssertionError("the type changed")
except ApiException as e:
    assert e.status == 422, e.body
    assert json.loads(e.body)["message"] == (
        'Secret "plain" is invalid: type: Invalid value: "example.com/custom": field is immutable'), e.body

# ValidateObjectMeta: labels are checked at `metadata.labels`, the bad value shown.
status = refused(v1.create_namespaced_config_map, {
    "metadata": {"name": "labels", "labels": {"app": "bad value!"}}})
assert status["details"]["causes"] == [{
    "reason": "FieldValueInvalid", "field": "metadata.labels",
    "message": 'Invalid value: "bad value!": a valid label must be an empty string or consist of '
               "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
               "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
               "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}], status

# ValidatePodSpec: each container's problems at its full path.
status = refused(v1.create_namespaced_pod, {
    "metadata": {"name": "pod"},
    "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "web"},
                            {"name": "side", "image": "x", "ports": [{"containerPort": 70000}]}]}})
fields = sorted(c["field"] for c in status["details"]["causes"])
assert fields == ["spec.containers[1].image", "spec.containers[1].name",
                  "spec.containers[2].ports[0].containerPort"], status

# validateVolumeSource, ValidateVolumeMounts: the reasons a client sees. A volume with an
# error is not there to mount.
status = refused(v1.create_namespaced_pod, {
    "metadata": {"name": "vols"},
    "spec": {"volumes": [{"name": "a", "emptyDir": {}, "secret": {"secretName": "s"}}],
             "containers": [{"name": "c", "image": "x",
                             "volumeMounts": [{"name": "a", "mountPath": "/a"}]}]}})
causes = [(c["field"], c["reason"], c["message"]) for c in status["details"]["causes"]]
assert causes == [
    ("spec.volumes[0].secret", "FieldValueForbidden", "Forbidden: may not specify more than 1 volume type"),
    ("spec.containers[0].volumeMounts[0].name", "FieldValueNotFound", 'Not found: "a"'),
], causes

# ValidatePolicyRule and validateIngressRules through their groups' clients.
rbac = client.RbacAuthorizationV1Api()
status = refused(rbac.create_namespaced_role, {"metadata": {"name": "r"}, "rules": [{"resources": ["pods"]}]})
assert [(c["field"], c["reason"]) for c in status["details"]["causes"]] == [
    ("rules[0].verbs", "FieldValueRequired"), ("rules[0].apiGroups", "FieldValueRequired")], status
networking = client.NetworkingV1Api()
status = refused(networking.create_namespaced_ingress, {
    "metadata": {"name": "ing"},
    "spec": {"rules": [{"host": "*.a.*.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}})
assert status["message"].startswith(
    'Ingress.networking.k8s.io "ing" is invalid: spec.rules[0].host: Invalid value: "*.a.*.com": '
    "a wildcard DNS-1123 subdomain must start with '*.'"), status
print("ok")
"#;

#[test]
fn python_client_receives_upstream_invalid_statuses() {
    for release in ["1.20", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let output = Command::new(python())
            .arg("-c")
            .arg(SCRIPT)
            .arg(server.kubeconfig())
            .arg(release)
            .output()
            .unwrap();
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains("ok"),
            "the Python validation script failed in {release} ({}):\n{}{}\nserver stderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            server.stderr()
        );
    }
}

const PRIVILEGED: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      initContainers:
      - {name: setup, image: busybox, securityContext: {privileged: true}}
      containers:
      - {name: agent, image: busybox, securityContext: {privileged: true}}
";

#[test]
fn privileged_containers_follow_allow_privileged() {
    // kube-apiserver's --allow-privileged (capabilities.AllowPrivileged, checked by
    // ValidateSecurityContext): kapi allows them unless told otherwise, as kubeadm's and
    // kind's clusters do.
    let open = KapiServer::start(&ServerOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = Kubectl::on_path(&open, dir.path());
    let file = k.file("agent.yaml", PRIVILEGED);
    k.expect_ok(&["create", "-f", file.to_str().unwrap()]);

    let options = ServerOptions {
        args: vec!["--allow-privileged=false".into()],
        ..ServerOptions::default()
    };
    let closed = KapiServer::start(&options).unwrap();
    let k = Kubectl::on_path(&closed, dir.path());
    let refused = k.expect_failure(&["create", "-f", file.to_str().unwrap()]);
    for cause in [
        "spec.template.spec.initContainers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
        "spec.template.spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
    ] {
        assert_refused(&refused, r#"DaemonSet "agent""#, cause);
    }
}

/// One Service cause and the releases that print it: from `since` (`""`: 1.20) to before
/// `until` (`""`: every later release).
type ServiceCause = (&'static str, &'static str, &'static str);

/// Services each release refuses on create (`ValidateService`), with their causes.
const SERVICE_REFUSALS: &[(&str, &str, &[ServiceCause])] = &[
    (
        "ext",
        "{type: ExternalName, externalName: Bad_Name., clusterIP: 10.0.0.1}",
        &[
            ("", "", "spec.clusterIPs: Forbidden: may not be set for ExternalName services"),
            ("", "", "spec.externalName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of"),
        ],
    ),
    (
        "cip",
        "{type: ClusterIP, ports: [{name: a, port: 80}, {name: b, port: 80}], externalIPs: [127.0.0.1],
  loadBalancerSourceRanges: [bad], sessionAffinity: ClientIP,
  sessionAffinityConfig: {clientIP: {timeoutSeconds: 90000}}}",
        &[
            ("", "1.34", r#"spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}"#),
            ("1.34", "", r#"spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}"#),
            ("", "1.28", r#"spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8)"#),
            ("1.28", "", r#"spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)"#),
            ("", "", "spec.LoadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer'"),
            ("", "1.34", r#"spec.LoadBalancerSourceRanges: Invalid value: "[bad]": must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 "#),
            ("1.34", "", r#"spec.LoadBalancerSourceRanges[0]: Invalid value: "bad": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"#),
            ("", "", "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 90000: must be greater than 0 and less than 86400"),
        ],
    ),
    (
        "lb",
        "{type: LoadBalancer, ports: [{port: 10250}], externalTrafficPolicy: Local, healthCheckNodePort: 70000,
  loadBalancerClass: a/b/c, internalTrafficPolicy: Everywhere, trafficDistribution: Anywhere}",
        &[
            ("", "1.34", "spec.ports[0]: Invalid value: 10250: may not expose port 10250 externally since it is used by kubelet"),
            ("1.28", "", "spec.healthCheckNodePort: Invalid value: 70000: must be between 1 and 65535, inclusive"),
            ("1.28", "1.35", r#"spec.loadBalancerClass: Invalid value: "a/b/c": a qualified name must consist of"#),
            ("1.35", "", r#"spec.loadBalancerClass: Invalid value: "a/b/c": a valid label key must consist of"#),
            ("1.28", "", r#"spec.internalTrafficPolicy: Unsupported value: "Everywhere": supported values: "Cluster", "Local""#),
            ("1.34", "", r#"spec.trafficDistribution: Unsupported value: "Anywhere": supported values: "PreferClose", "PreferSameZone", "PreferSameNode""#),
        ],
    ),
];

#[test]
fn kubectl_sees_service_refusals_in_each_release() {
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        for (name, spec, causes) in SERVICE_REFUSALS {
            let manifest = format!(
                "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec: {spec}\n"
            );
            let file = k.file(&format!("{name}.yaml"), &manifest);
            let stderr =
                k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
            for (since, until, cause) in *causes {
                let printed = since.is_empty() || *since <= release;
                let gone = !until.is_empty() && *until <= release;
                if printed && !gone {
                    assert_refused(&stderr, &format!(r#"Service "{name}""#), cause);
                } else {
                    assert!(
                        !stderr.contains(cause),
                        "{release} printed `{cause}`:\n{stderr}"
                    );
                }
            }
        }

        // ValidateServiceUpdate: a LoadBalancer keeps its class (1.20 has no class); 1.20's
        // validateServiceExternalTrafficFieldsValue against validateServiceExternalTrafficPolicy.
        let file = k.file(
            "good-lb.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: good}\nspec: {type: LoadBalancer, ports: [{port: 80}], loadBalancerClass: example.com/a}\n",
        );
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let stderr = k.expect_failure(&[
            "patch",
            "service/good",
            "-p",
            r#"{"spec":{"externalTrafficPolicy":"Nowhere"}}"#,
        ]);
        let cause = if release < "1.28" {
            r#"spec.externalTrafficPolicy: Invalid value: "Nowhere": ExternalTrafficPolicy must be empty, Cluster or Local"#
        } else {
            r#"spec.externalTrafficPolicy: Unsupported value: "Nowhere": supported values: "Cluster", "Local""#
        };
        assert_refused(&stderr, r#"Service "good""#, cause);
        if release >= "1.28" {
            let stderr = k.expect_failure(&[
                "patch",
                "service/good",
                "-p",
                r#"{"spec":{"loadBalancerClass":"example.com/b"}}"#,
            ]);
            assert_refused(
                &stderr,
                r#"Service "good""#,
                r#"spec.loadBalancerClass: Invalid value: "example.com/b": may not change once set"#,
            );
        }
    }
}

#[test]
fn kubectl_sees_job_managed_by_success_policy_and_status_refusals() {
    // validateJobSpec: `managedBy` (JobManagedBy, on from 1.32) and `successPolicy`
    // (JobSuccessPolicy, on from 1.31); validateJobStatus and ValidateJobStatusUpdate through
    // jobs/status, stricter from 1.32 (the strategy's getStatusValidationOptions).
    let job = |extra: &str| {
        format!(
            "apiVersion: batch/v1
kind: Job
metadata: {{name: pi}}
spec:
{extra}  template:
    spec:
      restartPolicy: Never
      containers: [{{name: pi, image: perl}}]
"
        )
    };
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let create = |name: &str, manifest: &str| {
            let file = k.file(name, manifest);
            k.expect_failure(&["create", "--validate=false", "-f", file.to_str().unwrap()])
        };
        if release >= "1.34" {
            let stderr = create("managed.yaml", &job("  managedBy: kueue\n"));
            assert_refused(
                &stderr,
                "\"pi\"",
                r#"spec.managedBy: Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")"#,
            );
            let stderr = create(
                "success.yaml",
                &job("  successPolicy: {rules: [{succeededIndexes: \"0-2\"}]}\n"),
            );
            assert_refused(
                &stderr,
                "\"pi\"",
                r#"spec.successPolicy: Invalid value: {"Rules":[{"SucceededIndexes":"0-2","SucceededCount":null}]}: requires indexed completion mode"#,
            );
            let stderr = create(
                "indexed.yaml",
                &job(
                    "  completionMode: Indexed\n  completions: 3\n  successPolicy: {rules: [{succeededCount: 4}]}\n",
                ),
            );
            assert_refused(
                &stderr,
                "\"pi\"",
                "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of specified completions)",
            );
        }

        let file = k.file("job.yaml", &job(""));
        k.expect_ok(&["create", "--validate=false", "-f", file.to_str().unwrap()]);
        let status = |patch: &'static str| {
            [
                "patch",
                "job/pi",
                "--subresource=status",
                "--type=merge",
                "-p",
                patch,
            ]
        };
        let stderr = k.expect_failure(&status(r#"{"status":{"active":-1}}"#));
        assert_refused(
            &stderr,
            "\"pi\"",
            "status.active: Invalid value: -1: must be greater than or equal to 0",
        );
        k.expect_ok(&status(r#"{"status":{"failed":2}}"#));
        let args = status(r#"{"status":{"failed":1}}"#);
        if release < "1.34" {
            k.expect_ok(&args);
            continue;
        }
        let stderr = k.expect_failure(&args);
        assert_refused(
            &stderr,
            "\"pi\"",
            "status.failed: Invalid value: 1: cannot decrease the failed counter",
        );
        // A Job completes as its controller completes it: with its success criteria, start and
        // completion times, and no more ready pods than active ones.
        let complete =
            r#"{"status":{"ready":3,"conditions":[{"type":"Complete","status":"True"}]}}"#;
        let stderr = k.expect_failure(&status(complete));
        for cause in [
            "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
            "status.completionTime: Required value: completionTime is required for Complete jobs",
            "status.startTime: Required value: startTime is required for finished job",
            "status.ready: Invalid value: 3: cannot set more ready pods than active",
        ] {
            assert_refused(&stderr, "\"pi\"", cause);
        }
        k.expect_ok(&status(
            r#"{"status":{"startTime":"2026-01-01T00:00:00Z","completionTime":"2026-01-01T00:01:00Z","succeeded":1,"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}"#,
        ));
        let stderr = k.expect_failure(&status(
            r#"{"status":{"completionTime":"2026-01-01T00:02:00Z"}}"#,
        ));
        assert_refused(
            &stderr,
            "\"pi\"",
            "status.completionTime: Invalid value: 2026-01-01 00:02:00 +0000 UTC: field is immutable",
        );
    }
}

#[test]
fn kubectl_sees_status_claim_and_autoscaler_update_refusals() {
    // ValidateServiceStatusUpdate, ValidatePodStatusUpdate's pod IPs,
    // ValidatePersistentVolumeClaimUpdate and an autoscaling v2 (v2beta2 in 1.20) spec's
    // metrics and behavior, through kubectl in each release.
    for release in ["1.20", "1.28", "1.34", "1.36"] {
        let server = KapiServer::start(&ServerOptions::release(release)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let k = Kubectl::on_path(&server, dir.path());
        let status = |target: &str, patch: &str| {
            let args = [
                "patch",
                target,
                "--subresource=status",
                "--type=merge",
                "-p",
                patch,
            ];
            k.ok(&args)
        };

        k.expect_ok(&["create", "service", "loadbalancer", "lb", "--tcp=80"]);
        k.expect_ok(&["create", "service", "clusterip", "inner", "--tcp=80"]);
        let refused = status(
            "service/lb",
            r#"{"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3"}]}}}"#,
        );
        let cause = if release >= "1.34" {
            r#"status.loadBalancer.ingress[0].ip: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#
        } else {
            r#"status.loadBalancer.ingress[0].ip: Invalid value: "1.2.3": must be a valid IP address"#
        };
        assert_refused(&refused.unwrap_err(), r#"Service "lb""#, cause);
        let on_cluster_ip = status(
            "service/inner",
            r#"{"status":{"loadBalancer":{"ingress":[{"hostname":"lb.example.com"}]}}}"#,
        );
        assert_eq!(on_cluster_ip.is_ok(), release < "1.34", "{release}");
        if release >= "1.34" {
            assert_refused(
                &on_cluster_ip.unwrap_err(),
                r#"Service "inner""#,
                "status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'",
            );
        }

        // SetDefaults_Service: from 1.28 (ExternallyAccessible) a ClusterIP Service with
        // external IPs gets `externalTrafficPolicy: Cluster`, which
        // validateServiceExternalTrafficPolicy then requires; from 1.30 (LoadBalancerIPMode) a
        // LoadBalancer's ingress point with an IP gets `ipMode: VIP`, which
        // ValidateLoadBalancerStatus then requires beside an IP. The external IPs come with an
        // update, which the defaults run on as well.
        k.expect_ok(&["create", "service", "clusterip", "ext", "--tcp=80"]);
        let ips = r#"{"spec":{"externalIPs":["203.0.113.10"]}}"#;
        k.expect_ok(&["patch", "service/ext", "-p", ips]);
        let policy =
            k.expect_json(&["get", "service", "ext"])["spec"]["externalTrafficPolicy"].clone();
        let expected = if release >= "1.28" {
            json!("Cluster")
        } else {
            Value::Null
        };
        assert_eq!(policy, expected, "{release}");

        status(
            "service/lb",
            r#"{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.5"},{"hostname":"lb.example.com"}]}}}"#,
        )
        .unwrap();
        let ingress =
            k.expect_json(&["get", "service", "lb"])["status"]["loadBalancer"]["ingress"].clone();
        let expected = if release >= "1.34" {
            json!([{"ip": "203.0.113.5", "ipMode": "VIP"}, {"hostname": "lb.example.com"}])
        } else {
            json!([{"ip": "203.0.113.5"}, {"hostname": "lb.example.com"}])
        };
        assert_eq!(ingress, expected, "{release}");

        // validatePodIPs: no IP twice (and, with two of one family, one per family).
        let pod = k.file(
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n",
        );
        k.expect_ok(&["create", "-f", pod.to_str().unwrap()]);
        let refused = status(
            "pod/p",
            r#"{"status":{"podIPs":[{"ip":"10.0.0.1"},{"ip":"10.0.0.1"}]}}"#,
        );
        let shown = if release >= "1.34" {
            r#"{"IP":"10.0.0.1"}"#
        } else {
            r#"core.PodIP{IP:"10.0.0.1"}"#
        };
        assert_refused(
            &refused.unwrap_err(),
            r#"Pod "p""#,
            &format!("status.podIPs[1]: Duplicate value: {shown}"),
        );

        let claim = k.file(
            "claim.yaml",
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
        );
        k.expect_ok(&["create", "-f", claim.to_str().unwrap()]);
        let resize = |size: &str| {
            let patch =
                format!(r#"{{"spec":{{"resources":{{"requests":{{"storage":"{size}"}}}}}}}}"#);
            k.ok(&["patch", "pvc/data", "-p", &patch])
        };
        let pending = resize("2Gi");
        let cause = match release {
            "1.20" => {
                "spec: Forbidden: is immutable after creation except resources.requests for bound claims"
            }
            "1.28" => {
                "spec: Forbidden: spec is immutable after creation except resources.requests for bound claims"
            }
            _ => {
                "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
            }
        };
        assert_refused(
            &pending.unwrap_err(),
            r#"PersistentVolumeClaim "data""#,
            cause,
        );
        let bound = status(
            "pvc/data",
            r#"{"status":{"phase":"Bound","capacity":{"storage":"2Gi"}}}"#,
        );
        bound.unwrap_or_else(|e| panic!("{e}"));
        let grown = resize("3Gi");
        grown.unwrap_or_else(|e| panic!("{e}"));
        let cause = if release >= "1.34" {
            "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
        } else {
            "spec.resources.requests.storage: Forbidden: field can not be less than previous value"
        };
        let shrunk = resize("1Gi");
        assert_refused(
            &shrunk.unwrap_err(),
            r#"PersistentVolumeClaim "data""#,
            cause,
        );

        let version = if release == "1.20" {
            "autoscaling/v2beta2"
        } else {
            "autoscaling/v2"
        };
        let hpa = k.file(
            "hpa.yaml",
            &format!(
                "apiVersion: {version}
kind: HorizontalPodAutoscaler
metadata: {{name: web}}
spec:
  maxReplicas: 3
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  metrics: [{{type: Pods}}]
  behavior: {{scaleDown: {{policies: [{{type: Pods, value: 0, periodSeconds: 60}}]}}}}
"
            ),
        );
        let stderr = k.expect_failure(&["create", "--validate=false", "-f", hpa.to_str().unwrap()]);
        for cause in [
            "spec.metrics[0].pods: Required value: must populate information for the given metric source",
            "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
        ] {
            assert_refused(&stderr, r#"HorizontalPodAutoscaler "web""#, cause);
        }
    }
}
