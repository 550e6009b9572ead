//! The ClusterRoles of upstream's own programs and their bindings (`policy.go`'s
//! `ClusterRoles` and `ClusterRoleBindings`, the part not in [`user_facing`](super::user_facing)):
//! the kubelets' `system:node`, the proxy's `system:node-proxier`, `system:kube-scheduler` and
//! `system:volume-scheduler`, `system:kube-controller-manager`, `system:kube-dns`, the
//! certificate-signing-request roles (`system:certificates.k8s.io:*`), and roles meant for
//! programs deployed at varying places that upstream leaves unbound (`system:heapster`,
//! `system:node-problem-detector`, `system:persistent-volume-provisioner`, ...).
//!
//! `system:node`'s binding names no one: since 1.8 the Node authorizer (`auth::node`, with
//! `--authorization-mode=Node,RBAC`), not RBAC, grants kubelets their access, and upstream
//! keeps the binding empty; its rules are what that authorizer allows every node
//! ([`node_rules`](super::node_rules)). Without the Node mode a kubelet's user
//! (`system:node:<name>` in `system:nodes`) gets only what every authenticated user gets.

use super::{Binding, EVENTS, READ, Role, Rule, Subject, binding, resources, role};

/// Reading and updating (upstream's `ReadUpdate`), sorted as upstream stores verbs.
const READ_UPDATE: &[&str] = &["get", "list", "patch", "update", "watch"];

const CORE: &[&str] = &[""];
const CERTIFICATES: &[&str] = &["certificates.k8s.io"];
const COORDINATION: &[&str] = &["coordination.k8s.io"];
const RESOURCE: &[&str] = &["resource.k8s.io"];
const STORAGE: &[&str] = &["storage.k8s.io"];

/// Approving certificate signing requests, of the signers the rule names.
const APPROVE: Rule = resources(&["approve"], CERTIFICATES, &["signers"]);

/// Creating token and access reviews, which components do to check their callers.
const TOKEN_REVIEWS: Rule = resources(&["create"], &["authentication.k8s.io"], &["tokenreviews"]);
const ACCESS_REVIEWS: Rule = resources(
    &["create"],
    &["authorization.k8s.io"],
    &["subjectaccessreviews"],
);

/// The kubelets' role, whose rules the Node authorizer applies.
pub(super) const NODE_ROLE: &str = "system:node";

pub(super) const CLUSTER_ROLES: &[Role] = &[
    role(
        "system:heapster",
        &[
            resources(READ, CORE, &["events", "namespaces", "nodes", "pods"]),
            resources(READ, &["extensions"], &["deployments"]),
        ],
    ),
    role(
        NODE_ROLE,
        &[
            TOKEN_REVIEWS,
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["localsubjectaccessreviews", "subjectaccessreviews"],
            ),
            resources(READ, CORE, &["services"]),
            resources(&["create", "get", "list", "watch"], CORE, &["nodes"]),
            resources(&["patch", "update"], CORE, &["nodes/status"]),
            resources(&["patch", "update"], CORE, &["nodes"]),
            resources(&["create", "patch", "update"], CORE, &["events"]),
            resources(READ, CORE, &["pods"]),
            resources(&["create", "delete"], CORE, &["pods"]),
            resources(&["patch", "update"], CORE, &["pods/status"]),
            resources(&["create"], CORE, &["pods/eviction"]),
            resources(READ, CORE, &["configmaps", "secrets"]),
            resources(
                &["get"],
                CORE,
                &["persistentvolumeclaims", "persistentvolumes"],
            ),
            resources(&["get"], CORE, &["endpoints"]),
            resources(
                &["create", "get", "list", "watch"],
                CERTIFICATES,
                &["certificatesigningrequests"],
            ),
            resources(
                &["create", "delete", "get", "patch", "update"],
                COORDINATION,
                &["leases"],
            ),
            resources(&["get"], STORAGE, &["volumeattachments"]),
            resources(&["create"], CORE, &["serviceaccounts/token"]),
            resources(
                &["get", "patch", "update"],
                CORE,
                &["persistentvolumeclaims/status"],
            ),
            resources(READ, STORAGE, &["csidrivers"]),
            resources(
                &["create", "delete", "get", "patch", "update"],
                STORAGE,
                &["csinodes"],
            ),
            resources(READ, &["node.k8s.io"], &["runtimeclasses"]),
            // Dynamic resource allocation, on by default from 1.34.
            resources(&["get"], RESOURCE, &["resourceclaims"]).since(34),
            resources(&["deletecollection"], RESOURCE, &["resourceslices"]).since(34),
        ],
    ),
    role(
        "system:node-problem-detector",
        &[
            resources(&["get"], CORE, &["nodes"]),
            resources(&["patch"], CORE, &["nodes/status"]),
            EVENTS,
        ],
    ),
    role(
        "system:node-proxier",
        &[
            resources(&["list", "watch"], CORE, &["endpoints", "services"]),
            resources(READ, CORE, &["nodes"]),
            EVENTS,
            resources(
                &["list", "watch"],
                &["networking.k8s.io"],
                &["servicecidrs"],
            )
            .since(34),
            resources(
                &["list", "watch"],
                &["discovery.k8s.io"],
                &["endpointslices"],
            ),
        ],
    ),
    role(
        "system:kubelet-api-admin",
        &[
            resources(READ, CORE, &["nodes"]),
            resources(&["proxy"], CORE, &["nodes"]),
            resources(
                &["*"],
                CORE,
                &["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"],
            ),
            // The kubelet's fine-grained authorization, on by default in 1.34.
            resources(
                &["*"],
                CORE,
                &["nodes/configz", "nodes/healthz", "nodes/pods"],
            )
            .since(34),
        ],
    ),
    role(
        "system:node-bootstrapper",
        &[resources(
            &["create", "get", "list", "watch"],
            CERTIFICATES,
            &["certificatesigningrequests"],
        )],
    ),
    role(
        "system:kube-aggregator",
        &[resources(READ, CORE, &["endpoints", "services"])],
    ),
    role(
        "system:kube-controller-manager",
        &[
            EVENTS,
            // Leader election.
            resources(&["create"], COORDINATION, &["leases"]),
            resources(&["get", "update"], COORDINATION, &["leases"])
                .named(&["kube-controller-manager"]),
            resources(&["create"], CORE, &["secrets", "serviceaccounts"]),
            resources(&["delete"], CORE, &["secrets"]),
            resources(
                &["get"],
                CORE,
                &["configmaps", "namespaces", "secrets", "serviceaccounts"],
            ),
            resources(&["update"], CORE, &["secrets", "serviceaccounts"]),
            TOKEN_REVIEWS,
            ACCESS_REVIEWS,
            // Every shared informer.
            resources(&["list", "watch"], &["*"], &["*"]),
            resources(&["create"], CORE, &["serviceaccounts/token"]),
        ],
    ),
    role(
        "system:kube-dns",
        &[resources(
            &["list", "watch"],
            CORE,
            &["endpoints", "services"],
        )],
    ),
    role(
        "system:kube-scheduler",
        &[
            EVENTS,
            // Leader election.
            resources(&["create"], COORDINATION, &["leases"]),
            resources(&["get", "update"], COORDINATION, &["leases"]).named(&["kube-scheduler"]),
            resources(READ, CORE, &["nodes"]),
            resources(&["delete", "get", "list", "watch"], CORE, &["pods"]),
            resources(&["create"], CORE, &["bindings", "pods/binding"]),
            resources(&["patch", "update"], CORE, &["pods/status"]),
            resources(READ, CORE, &["replicationcontrollers", "services"]),
            resources(READ, &["apps", "extensions"], &["replicasets"]),
            resources(READ, &["apps"], &["statefulsets"]),
            resources(READ, &["policy"], &["poddisruptionbudgets"]),
            resources(READ, CORE, &["persistentvolumeclaims", "persistentvolumes"]),
            TOKEN_REVIEWS,
            ACCESS_REVIEWS,
            resources(READ, STORAGE, &["csinodes"]),
            resources(READ, CORE, &["namespaces"]),
            resources(READ, STORAGE, &["csidrivers"]),
            resources(READ, STORAGE, &["csistoragecapacities"]),
            // Dynamic resource allocation, on by default from 1.34.
            resources(READ, RESOURCE, &["deviceclasses"]).since(34),
            resources(READ_UPDATE, RESOURCE, &["resourceclaims"]).since(34),
            resources(READ_UPDATE, RESOURCE, &["resourceclaims/status"]).since(34),
            resources(READ_UPDATE, CORE, &["pods/finalizers"]).since(34),
            resources(READ, RESOURCE, &["resourceslices"]).since(34),
        ],
    ),
    role(
        "system:volume-scheduler",
        &[
            resources(READ_UPDATE, CORE, &["persistentvolumes"]),
            resources(READ, STORAGE, &["storageclasses"]),
            resources(READ_UPDATE, CORE, &["persistentvolumeclaims"]),
        ],
    ),
    role(
        "system:persistent-volume-provisioner",
        &[
            resources(
                &["create", "delete", "get", "list", "watch"],
                CORE,
                &["persistentvolumes"],
            ),
            // Update, to set lock annotations on claims.
            resources(
                &["get", "list", "update", "watch"],
                CORE,
                &["persistentvolumeclaims"],
            ),
            resources(READ, STORAGE, &["storageclasses"]),
            // Watching the events of provisioning.
            resources(&["watch"], CORE, &["events"]),
            EVENTS,
        ],
    ),
    // Creating requests for node client certificates (the CSR approver's subresources).
    role(
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        &[resources(
            &["create"],
            CERTIFICATES,
            &["certificatesigningrequests/nodeclient"],
        )],
    ),
    role(
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        &[resources(
            &["create"],
            CERTIFICATES,
            &["certificatesigningrequests/selfnodeclient"],
        )],
    ),
    // Approving the requests of one signer each.
    role(
        "system:certificates.k8s.io:legacy-unknown-approver",
        &[APPROVE.named(&["kubernetes.io/legacy-unknown"])],
    ),
    role(
        "system:certificates.k8s.io:kubelet-serving-approver",
        &[APPROVE.named(&["kubernetes.io/kubelet-serving"])],
    ),
    role(
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        &[APPROVE.named(&["kubernetes.io/kube-apiserver-client"])],
    ),
    role(
        "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
        &[APPROVE.named(&["kubernetes.io/kube-apiserver-client-kubelet"])],
    ),
];

/// The bindings of these roles: upstream's users of its programs, and kube-dns' service
/// account.
pub(super) const CLUSTER_ROLE_BINDINGS: &[Binding] = &[
    binding("system:node-proxier", &[Subject::User("system:kube-proxy")]),
    binding(
        "system:kube-controller-manager",
        &[Subject::User("system:kube-controller-manager")],
    ),
    binding(
        "system:kube-dns",
        &[Subject::ServiceAccount("kube-system", "kube-dns")],
    ),
    binding(
        "system:kube-scheduler",
        &[Subject::User("system:kube-scheduler")],
    ),
    binding(
        "system:volume-scheduler",
        &[Subject::User("system:kube-scheduler")],
    ),
    binding("system:node", &[]),
];
