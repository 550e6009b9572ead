//! One ClusterRole per controller of kube-controller-manager (`controller_policy.go`):
//! `system:controller:<name>`, holding what the controller reads and writes when it runs
//! with `--use-service-account-credentials`, as the kube-system service account `<name>`
//! (the bindings are made from the names, in [`cluster_role_bindings`](super::cluster_role_bindings)).
//! Roles of controllers behind feature gates that are off by default in 1.34 (the storage
//! version migrator and garbage collector) are left out.

use super::{EVENTS, READ, Role, resources, role};

/// The prefix of every controller role's name; the rest names the controller's account.
pub(super) const PREFIX: &str = "system:controller:";

const CORE: &[&str] = &[""];
const APPS: &[&str] = &["apps"];
const APPS_EXTENSIONS: &[&str] = &["apps", "extensions"];
const BATCH: &[&str] = &["batch"];
const CERTIFICATES: &[&str] = &["certificates.k8s.io"];
const NETWORKING: &[&str] = &["networking.k8s.io"];
const RESOURCE: &[&str] = &["resource.k8s.io"];
const STORAGE: &[&str] = &["storage.k8s.io"];

/// Every verb of a writer that also reads, sorted as upstream stores verbs.
const ALL_BUT_DELETECOLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
const READ_UPDATE: &[&str] = &["get", "list", "update", "watch"];
const UPDATE: &[&str] = &["update"];
const PATCH_UPDATE: &[&str] = &["patch", "update"];
/// Keeping a kind's objects in sync with their sources (endpoints and slices).
const SYNC: &[&str] = &["create", "delete", "get", "list", "update", "watch"];
/// Making pods of a workload and watching them.
const POD_OWNER: &[&str] = &["create", "delete", "list", "patch", "watch"];

pub(super) const CLUSTER_ROLES: &[Role] = &[
    role(
        "system:controller:attachdetach-controller",
        &[
            resources(
                &["list", "watch"],
                CORE,
                &["persistentvolumeclaims", "persistentvolumes"],
            ),
            resources(READ, CORE, &["nodes"]),
            resources(PATCH_UPDATE, CORE, &["nodes/status"]),
            resources(&["list", "watch"], CORE, &["pods"]),
            EVENTS,
            resources(
                &["create", "delete", "get", "list", "watch"],
                STORAGE,
                &["volumeattachments"],
            ),
            resources(READ, STORAGE, &["csidrivers"]),
            resources(READ, STORAGE, &["csinodes"]),
        ],
    ),
    role(
        "system:controller:certificate-controller",
        &[
            resources(
                &["delete", "get", "list", "watch"],
                CERTIFICATES,
                &["certificatesigningrequests"],
            ),
            resources(
                UPDATE,
                CERTIFICATES,
                &[
                    "certificatesigningrequests/approval",
                    "certificatesigningrequests/status",
                ],
            ),
            resources(&["approve"], CERTIFICATES, &["signers"])
                .named(&["kubernetes.io/kube-apiserver-client-kubelet"]),
            resources(&["sign"], CERTIFICATES, &["signers"]).named(&[
                "kubernetes.io/kube-apiserver-client",
                "kubernetes.io/kube-apiserver-client-kubelet",
                "kubernetes.io/kubelet-serving",
                "kubernetes.io/legacy-unknown",
            ]),
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
            ),
            EVENTS,
        ],
    ),
    role(
        "system:controller:clusterrole-aggregation-controller",
        &[resources(
            &["escalate", "get", "list", "patch", "update", "watch"],
            &["rbac.authorization.k8s.io"],
            &["clusterroles"],
        )],
    ),
    role(
        "system:controller:cronjob-controller",
        &[
            resources(READ_UPDATE, BATCH, &["cronjobs"]),
            resources(ALL_BUT_DELETECOLLECTION, BATCH, &["jobs"]),
            resources(UPDATE, BATCH, &["cronjobs/status"]),
            resources(UPDATE, BATCH, &["cronjobs/finalizers"]),
            resources(&["delete", "list", "watch"], CORE, &["pods"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:daemon-set-controller",
        &[
            resources(READ, APPS_EXTENSIONS, &["daemonsets"]),
            resources(UPDATE, APPS_EXTENSIONS, &["daemonsets/status"]),
            resources(UPDATE, APPS_EXTENSIONS, &["daemonsets/finalizers"]),
            resources(&["list", "watch"], CORE, &["nodes"]),
            resources(POD_OWNER, CORE, &["pods"]),
            resources(&["create"], CORE, &["pods/binding"]),
            resources(ALL_BUT_DELETECOLLECTION, APPS, &["controllerrevisions"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:deployment-controller",
        &[
            resources(READ_UPDATE, APPS_EXTENSIONS, &["deployments"]),
            resources(UPDATE, APPS_EXTENSIONS, &["deployments/status"]),
            resources(UPDATE, APPS_EXTENSIONS, &["deployments/finalizers"]),
            resources(ALL_BUT_DELETECOLLECTION, APPS_EXTENSIONS, &["replicasets"]),
            resources(READ_UPDATE, CORE, &["pods"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:device-taint-eviction-controller",
        &[
            resources(&["delete", "get", "list", "watch"], CORE, &["pods"]),
            resources(PATCH_UPDATE, CORE, &["pods/status"]),
            resources(READ, RESOURCE, &["resourceclaims"]),
            resources(READ, RESOURCE, &["resourceslices"]),
            resources(READ, RESOURCE, &["deviceclasses"]),
            EVENTS,
        ],
    )
    .since(34),
    role(
        "system:controller:disruption-controller",
        &[
            resources(READ, APPS_EXTENSIONS, &["deployments"]),
            resources(READ, APPS_EXTENSIONS, &["replicasets"]),
            resources(READ, CORE, &["replicationcontrollers"]),
            resources(READ, &["policy"], &["poddisruptionbudgets"]),
            resources(READ, APPS, &["statefulsets"]),
            resources(UPDATE, &["policy"], &["poddisruptionbudgets/status"]),
            resources(PATCH_UPDATE, CORE, &["pods/status"]),
            resources(&["get"], &["*"], &["*/scale"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:endpoint-controller",
        &[
            resources(READ, CORE, &["pods", "services"]),
            resources(SYNC, CORE, &["endpoints"]),
            resources(&["create"], CORE, &["endpoints/restricted"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:endpointslice-controller",
        &[
            resources(READ, CORE, &["nodes", "pods", "services"]),
            resources(UPDATE, CORE, &["services/finalizers"]),
            resources(SYNC, &["discovery.k8s.io"], &["endpointslices"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:endpointslicemirroring-controller",
        &[
            resources(READ, CORE, &["endpoints", "services"]),
            resources(UPDATE, CORE, &["services/finalizers"]),
            resources(UPDATE, CORE, &["endpoints/finalizers"]),
            resources(SYNC, &["discovery.k8s.io"], &["endpointslices"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:ephemeral-volume-controller",
        &[
            resources(READ, CORE, &["pods"]),
            resources(UPDATE, CORE, &["pods/finalizers"]),
            resources(
                &["create", "get", "list", "watch"],
                CORE,
                &["persistentvolumeclaims"],
            ),
            EVENTS,
        ],
    )
    .since(28),
    role(
        "system:controller:expand-controller",
        &[
            resources(
                &["get", "list", "patch", "update", "watch"],
                CORE,
                &["persistentvolumes"],
            ),
            resources(PATCH_UPDATE, CORE, &["persistentvolumeclaims/status"]),
            resources(READ, CORE, &["persistentvolumeclaims"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:generic-garbage-collector",
        &[
            resources(
                &["delete", "get", "list", "patch", "update", "watch"],
                &["*"],
                &["*"],
            ),
            EVENTS,
        ],
    ),
    role(
        "system:controller:horizontal-pod-autoscaler",
        &[
            resources(READ, &["autoscaling"], &["horizontalpodautoscalers"]),
            resources(
                UPDATE,
                &["autoscaling"],
                &["horizontalpodautoscalers/status"],
            ),
            resources(&["get", "update"], &["*"], &["*/scale"]),
            resources(&["list", "watch"], CORE, &["pods"]),
            resources(&["list", "watch"], &["metrics.k8s.io"], &["pods"]),
            resources(READ, &["custom.metrics.k8s.io"], &["*"]),
            resources(READ, &["external.metrics.k8s.io"], &["*"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:job-controller",
        &[
            resources(
                &["get", "list", "patch", "update", "watch"],
                BATCH,
                &["jobs"],
            ),
            resources(UPDATE, BATCH, &["jobs/status"]),
            resources(UPDATE, BATCH, &["jobs/finalizers"]),
            resources(POD_OWNER, CORE, &["pods"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:legacy-service-account-token-cleaner",
        &[
            resources(&["get"], CORE, &["configmaps"])
                .named(&["kube-apiserver-legacy-service-account-token-tracking"]),
            resources(&["delete", "patch"], CORE, &["secrets"]),
        ],
    )
    .since(28),
    role(
        "system:controller:namespace-controller",
        &[
            resources(&["delete", "get", "list", "watch"], CORE, &["namespaces"]),
            resources(UPDATE, CORE, &["namespaces/finalize", "namespaces/status"]),
            resources(
                &["delete", "deletecollection", "get", "list", "watch"],
                &["*"],
                &["*"],
            ),
        ],
    ),
    role(
        "system:controller:node-controller",
        &[
            resources(
                &["delete", "get", "list", "patch", "update", "watch"],
                CORE,
                &["nodes"],
            ),
            resources(PATCH_UPDATE, CORE, &["nodes/status"]),
            resources(PATCH_UPDATE, CORE, &["pods/status"]),
            resources(&["delete", "get", "list", "watch"], CORE, &["pods"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:persistent-volume-binder",
        &[
            resources(SYNC, CORE, &["persistentvolumes"]),
            resources(UPDATE, CORE, &["persistentvolumes/status"]),
            resources(READ_UPDATE, CORE, &["persistentvolumeclaims"]),
            resources(UPDATE, CORE, &["persistentvolumeclaims/status"]),
            resources(
                &["create", "delete", "get", "list", "watch"],
                CORE,
                &["pods"],
            ),
            resources(READ, STORAGE, &["storageclasses"]),
            resources(&["list", "watch"], CORE, &["nodes"]),
            EVENTS,
            resources(&["watch"], CORE, &["events"]),
        ],
    ),
    role(
        "system:controller:pod-garbage-collector",
        &[
            resources(&["delete", "list", "watch"], CORE, &["pods"]),
            resources(READ, CORE, &["nodes"]),
            resources(&["patch"], CORE, &["pods/status"]),
        ],
    ),
    role(
        "system:controller:pv-protection-controller",
        &[resources(READ_UPDATE, CORE, &["persistentvolumes"]), EVENTS],
    ),
    role(
        "system:controller:pvc-protection-controller",
        &[
            resources(READ_UPDATE, CORE, &["persistentvolumeclaims"]),
            resources(UPDATE, CORE, &["persistentvolumeclaims/status"]),
            resources(READ, CORE, &["pods"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:replicaset-controller",
        &[
            resources(READ_UPDATE, APPS_EXTENSIONS, &["replicasets"]),
            resources(UPDATE, APPS_EXTENSIONS, &["replicasets/status"]),
            resources(UPDATE, APPS_EXTENSIONS, &["replicasets/finalizers"]),
            resources(POD_OWNER, CORE, &["pods"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:replication-controller",
        &[
            resources(READ_UPDATE, CORE, &["replicationcontrollers"]),
            resources(UPDATE, CORE, &["replicationcontrollers/status"]),
            resources(UPDATE, CORE, &["replicationcontrollers/finalizers"]),
            resources(POD_OWNER, CORE, &["pods"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:resource-claim-controller",
        &[
            resources(READ, CORE, &["pods"]),
            resources(UPDATE, CORE, &["pods/finalizers"]),
            resources(
                &["create", "delete", "get", "list", "watch"],
                RESOURCE,
                &["resourceclaims"],
            ),
            resources(
                PATCH_UPDATE,
                RESOURCE,
                &["resourceclaims", "resourceclaims/status"],
            ),
            resources(PATCH_UPDATE, CORE, &["pods/status"]),
            EVENTS,
            resources(PATCH_UPDATE, RESOURCE, &["resourceclaims/binding"]),
        ],
    )
    .since(34),
    role(
        "system:controller:resourcequota-controller",
        &[
            resources(&["list", "watch"], &["*"], &["*"]),
            resources(UPDATE, CORE, &["resourcequotas/status"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:root-ca-cert-publisher",
        &[
            resources(&["create", "update"], CORE, &["configmaps"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:route-controller",
        &[
            resources(&["list", "watch"], CORE, &["nodes"]),
            resources(&["patch"], CORE, &["nodes/status"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:selinux-warning-controller",
        &[
            EVENTS,
            resources(READ, CORE, &["persistentvolumes"]),
            resources(READ, CORE, &["persistentvolumeclaims"]),
            resources(READ, CORE, &["pods"]),
            resources(READ, STORAGE, &["csidrivers"]),
        ],
    )
    .since(34),
    role(
        "system:controller:service-account-controller",
        &[resources(&["create"], CORE, &["serviceaccounts"]), EVENTS],
    ),
    role(
        "system:controller:service-cidrs-controller",
        &[
            resources(
                &["get", "list", "patch", "update", "watch"],
                NETWORKING,
                &["servicecidrs"],
            ),
            resources(PATCH_UPDATE, NETWORKING, &["servicecidrs/finalizers"]),
            resources(PATCH_UPDATE, NETWORKING, &["servicecidrs/status"]),
            resources(READ, NETWORKING, &["ipaddresses"]),
            EVENTS,
        ],
    )
    .since(34),
    role(
        "system:controller:service-controller",
        &[
            resources(READ, CORE, &["services"]),
            resources(PATCH_UPDATE, CORE, &["services/status"]),
            resources(&["list", "watch"], CORE, &["nodes"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:statefulset-controller",
        &[
            resources(&["list", "watch"], CORE, &["pods"]),
            resources(READ, APPS, &["statefulsets"]),
            resources(UPDATE, APPS, &["statefulsets/status"]),
            resources(UPDATE, APPS, &["statefulsets/finalizers"]),
            resources(
                &["create", "delete", "get", "patch", "update"],
                CORE,
                &["pods"],
            ),
            resources(ALL_BUT_DELETECOLLECTION, APPS, &["controllerrevisions"]),
            resources(
                &["create", "get", "list", "watch"],
                CORE,
                &["persistentvolumeclaims"],
            ),
            resources(&["delete", "update"], CORE, &["persistentvolumeclaims"]),
            resources(UPDATE, CORE, &["pods/finalizers"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:ttl-after-finished-controller",
        &[
            resources(&["delete", "get", "list", "watch"], BATCH, &["jobs"]),
            EVENTS,
        ],
    )
    .since(28),
    role(
        "system:controller:ttl-controller",
        &[
            resources(&["list", "patch", "update", "watch"], CORE, &["nodes"]),
            EVENTS,
        ],
    ),
    role(
        "system:controller:validatingadmissionpolicy-status-controller",
        &[
            resources(
                READ,
                &["admissionregistration.k8s.io"],
                &["validatingadmissionpolicies"],
            ),
            resources(
                &["get", "patch", "update"],
                &["admissionregistration.k8s.io"],
                &["validatingadmissionpolicies/status"],
            ),
            EVENTS,
        ],
    )
    .since(34),
    role(
        "system:controller:volumeattributesclass-protection-controller",
        &[
            resources(READ, CORE, &["persistentvolumeclaims"]),
            resources(READ, CORE, &["persistentvolumes"]),
            resources(READ_UPDATE, STORAGE, &["volumeattributesclasses"]),
            EVENTS,
        ],
    )
    .since(34),
];
