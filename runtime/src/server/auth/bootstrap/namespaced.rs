//! The bootstrap Roles and RoleBindings, in `kube-system` and `kube-public`
//! (`namespace_policy.go`): reading the `extension-apiserver-authentication` ConfigMap for
//! the scheduler and the controller manager, their leader-election leases, and the
//! bootstrap-token controllers' (`bootstrap-signer` signs `kube-public`'s `cluster-info`,
//! `token-cleaner` deletes expired token Secrets) and the cloud provider's. Each binding
//! names a Role of its own namespace. Both namespaces are made before the policy
//! (`create_system_namespaces`), so these have a namespace to live in from the first start.

use super::{Binding, EVENTS, READ, Role, Rule, Subject, binding, resources, role};

const SYSTEM: &str = "kube-system";
const PUBLIC: &str = "kube-public";

const CORE: &[&str] = &[""];
const COORDINATION: &[&str] = &["coordination.k8s.io"];
/// What leader election does with its leases and lease candidates.
const LEADER_ELECTION: &[&str] = &["create", "get", "list", "update", "watch"];

/// The rules of a leader-election role: leases, and from 1.34 the lease candidates of
/// coordinated leader election.
const LEADER_LOCKING: &[Rule] = &[
    resources(LEADER_ELECTION, COORDINATION, &["leases"]),
    resources(LEADER_ELECTION, COORDINATION, &["leasecandidates"]).since(34),
];

/// The Roles, each with its namespace.
pub(super) const ROLES: &[(&str, Role)] = &[
    (
        SYSTEM,
        role(
            "extension-apiserver-authentication-reader",
            &[resources(READ, CORE, &["configmaps"])
                .named(&["extension-apiserver-authentication"])],
        ),
    ),
    (
        SYSTEM,
        role(
            "system::leader-locking-kube-controller-manager",
            LEADER_LOCKING,
        ),
    ),
    (
        SYSTEM,
        role("system::leader-locking-kube-scheduler", LEADER_LOCKING),
    ),
    (
        SYSTEM,
        role(
            "system:controller:bootstrap-signer",
            &[resources(READ, CORE, &["secrets"])],
        ),
    ),
    (
        SYSTEM,
        role(
            "system:controller:cloud-provider",
            &[resources(
                &["create", "get", "list", "watch"],
                CORE,
                &["configmaps"],
            )],
        ),
    ),
    (
        SYSTEM,
        role(
            "system:controller:token-cleaner",
            &[
                resources(&["delete", "get", "list", "watch"], CORE, &["secrets"]),
                EVENTS,
            ],
        ),
    ),
    (
        PUBLIC,
        role(
            "system:controller:bootstrap-signer",
            &[
                resources(READ, CORE, &["configmaps"]),
                resources(&["update"], CORE, &["configmaps"]).named(&["cluster-info"]),
                EVENTS,
            ],
        ),
    ),
];

/// The RoleBindings, each with its namespace.
pub(super) const ROLE_BINDINGS: &[(&str, Binding)] = &[
    (
        SYSTEM,
        Binding {
            name: "system::extension-apiserver-authentication-reader",
            role: "extension-apiserver-authentication-reader",
            subjects: &[
                Subject::User("system:kube-controller-manager"),
                Subject::User("system:kube-scheduler"),
            ],
        },
    ),
    (
        SYSTEM,
        binding(
            "system::leader-locking-kube-controller-manager",
            &[
                Subject::User("system:kube-controller-manager"),
                Subject::ServiceAccount(SYSTEM, "kube-controller-manager"),
                Subject::ServiceAccount(SYSTEM, "leader-election-controller"),
            ],
        ),
    ),
    (
        SYSTEM,
        binding(
            "system::leader-locking-kube-scheduler",
            &[
                Subject::User("system:kube-scheduler"),
                Subject::ServiceAccount(SYSTEM, "kube-scheduler"),
            ],
        ),
    ),
    (
        SYSTEM,
        binding(
            "system:controller:bootstrap-signer",
            &[Subject::ServiceAccount(SYSTEM, "bootstrap-signer")],
        ),
    ),
    (
        SYSTEM,
        binding(
            "system:controller:cloud-provider",
            &[Subject::ServiceAccount(SYSTEM, "cloud-provider")],
        ),
    ),
    (
        SYSTEM,
        binding(
            "system:controller:token-cleaner",
            &[Subject::ServiceAccount(SYSTEM, "token-cleaner")],
        ),
    ),
    (
        PUBLIC,
        binding(
            "system:controller:bootstrap-signer",
            &[Subject::ServiceAccount(SYSTEM, "bootstrap-signer")],
        ),
    ),
];
