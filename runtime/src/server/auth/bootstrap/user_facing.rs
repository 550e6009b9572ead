//! The user-facing part of upstream's bootstrap policy (`policy.go`'s `ClusterRoles` and
//! `ClusterRoleBindings`): `cluster-admin` for `system:masters`; discovery, health and version
//! for everyone (`system:discovery`, `system:public-info-viewer`); the self-reviews
//! (`system:basic-user`); the aggregated `admin`, `edit` and `view` and the
//! `system:aggregate-to-*` roles that fill them; metrics and health details for
//! `system:monitoring`; token and access reviews for delegating servers
//! (`system:auth-delegator`); service-account issuer discovery.

use super::{Binding, READ, Role, Subject, WRITE, binding, resources, role, urls};

const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

const TO_ADMIN: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-admin", "true");
const TO_EDIT: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-edit", "true");
const TO_VIEW: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-view", "true");

pub(super) const CLUSTER_ROLES: &[Role] = &[
    role(
        "cluster-admin",
        &[resources(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
    ),
    role(
        "system:discovery",
        &[urls(
            &["get"],
            &[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ],
        )],
    ),
    role(
        "system:public-info-viewer",
        &[urls(
            &["get"],
            &["/healthz", "/livez", "/readyz", "/version", "/version/"],
        )],
    ),
    role(
        "system:basic-user",
        &[
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            ),
            resources(
                &["create"],
                &["authentication.k8s.io"],
                &["selfsubjectreviews"],
            ),
        ],
    ),
    role(
        "system:monitoring",
        &[urls(
            &["get"],
            &[
                "/healthz",
                "/healthz/*",
                "/livez",
                "/livez/*",
                "/metrics",
                "/metrics/slis",
                "/readyz",
                "/readyz/*",
            ],
        )],
    ),
    role(
        "system:auth-delegator",
        &[
            resources(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
            ),
        ],
    ),
    role(
        "system:service-account-issuer-discovery",
        &[urls(
            &["get"],
            &[
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ],
        )],
    ),
    Role {
        name: "admin",
        labels: &[],
        aggregates: Some(TO_ADMIN.0),
        rules: &[],
        since: 0,
    },
    Role {
        name: "edit",
        labels: &[TO_ADMIN],
        aggregates: Some(TO_EDIT.0),
        rules: &[],
        since: 0,
    },
    Role {
        name: "view",
        labels: &[TO_EDIT],
        aggregates: Some(TO_VIEW.0),
        rules: &[],
        since: 0,
    },
    Role {
        name: "system:aggregate-to-admin",
        labels: &[TO_ADMIN],
        aggregates: None,
        rules: &[
            resources(
                &["create"],
                &["authorization.k8s.io"],
                &["localsubjectaccessreviews"],
            ),
            resources(
                READ_WRITE,
                &["rbac.authorization.k8s.io"],
                &["rolebindings", "roles"],
            ),
        ],
        since: 0,
    },
    Role {
        name: "system:aggregate-to-edit",
        labels: &[TO_EDIT],
        aggregates: None,
        rules: &[
            // Reading what `view` leaves out because it escalates.
            resources(
                READ,
                &[""],
                &[
                    "pods/attach",
                    "pods/proxy",
                    "pods/exec",
                    "pods/portforward",
                    "secrets",
                    "services/proxy",
                ],
            ),
            resources(&["impersonate"], &[""], &["serviceaccounts"]),
            resources(
                WRITE,
                &[""],
                &[
                    "pods",
                    "pods/attach",
                    "pods/proxy",
                    "pods/exec",
                    "pods/portforward",
                ],
            ),
            resources(&["create"], &[""], &["pods/eviction"]),
            resources(
                WRITE,
                &[""],
                &[
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "serviceaccounts",
                    "services",
                    "services/proxy",
                    "persistentvolumeclaims",
                    "configmaps",
                    "secrets",
                    "events",
                ],
            ),
            resources(&["create"], &[""], &["serviceaccounts/token"]),
            resources(
                WRITE,
                &["apps"],
                &[
                    "statefulsets",
                    "statefulsets/scale",
                    "daemonsets",
                    "deployments",
                    "deployments/scale",
                    "deployments/rollback",
                    "replicasets",
                    "replicasets/scale",
                ],
            ),
            resources(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
            resources(WRITE, &["batch"], &["jobs", "cronjobs"]),
            resources(
                WRITE,
                &["extensions"],
                &[
                    "daemonsets",
                    "deployments",
                    "deployments/scale",
                    "deployments/rollback",
                    "ingresses",
                    "replicasets",
                    "replicasets/scale",
                    "replicationcontrollers/scale",
                    "networkpolicies",
                ],
            ),
            resources(WRITE, &["policy"], &["poddisruptionbudgets"]),
            resources(
                WRITE,
                &["networking.k8s.io"],
                &["networkpolicies", "ingresses"],
            ),
            // Dynamic resource allocation, on by default from 1.34.
            resources(
                WRITE,
                &["resource.k8s.io"],
                &["resourceclaims", "resourceclaimtemplates"],
            )
            .since(34),
        ],
        since: 0,
    },
    Role {
        name: "system:aggregate-to-view",
        labels: &[TO_VIEW],
        aggregates: None,
        rules: &[
            resources(
                READ,
                &[""],
                &[
                    "pods",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "serviceaccounts",
                    "services",
                    "services/status",
                    "endpoints",
                    "persistentvolumeclaims",
                    "persistentvolumeclaims/status",
                    "configmaps",
                ],
            ),
            resources(
                READ,
                &[""],
                &[
                    "limitranges",
                    "resourcequotas",
                    "bindings",
                    "events",
                    "pods/status",
                    "resourcequotas/status",
                    "namespaces/status",
                    "replicationcontrollers/status",
                    "pods/log",
                ],
            ),
            resources(READ, &[""], &["namespaces"]),
            resources(READ, &["discovery.k8s.io"], &["endpointslices"]),
            resources(
                READ,
                &["apps"],
                &[
                    "controllerrevisions",
                    "statefulsets",
                    "statefulsets/status",
                    "statefulsets/scale",
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/status",
                    "deployments/scale",
                    "replicasets",
                    "replicasets/status",
                    "replicasets/scale",
                ],
            ),
            resources(
                READ,
                &["autoscaling"],
                &[
                    "horizontalpodautoscalers",
                    "horizontalpodautoscalers/status",
                ],
            ),
            resources(
                READ,
                &["batch"],
                &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
            ),
            resources(
                READ,
                &["extensions"],
                &[
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/scale",
                    "deployments/status",
                    "ingresses",
                    "ingresses/status",
                    "replicasets",
                    "replicasets/scale",
                    "replicasets/status",
                    "replicationcontrollers/scale",
                    "networkpolicies",
                ],
            ),
            resources(
                READ,
                &["policy"],
                &["poddisruptionbudgets", "poddisruptionbudgets/status"],
            ),
            resources(
                READ,
                &["networking.k8s.io"],
                &["networkpolicies", "ingresses", "ingresses/status"],
            ),
            resources(
                READ,
                &["resource.k8s.io"],
                &[
                    "resourceclaims",
                    "resourceclaims/status",
                    "resourceclaimtemplates",
                ],
            )
            .since(34),
        ],
        since: 0,
    },
];

/// The bootstrap ClusterRoleBindings of these roles.
pub(super) const CLUSTER_ROLE_BINDINGS: &[Binding] = &[
    binding("cluster-admin", &[Subject::Group("system:masters")]),
    binding(
        "system:discovery",
        &[Subject::Group("system:authenticated")],
    ),
    binding(
        "system:basic-user",
        &[Subject::Group("system:authenticated")],
    ),
    binding(
        "system:public-info-viewer",
        &[
            Subject::Group("system:authenticated"),
            Subject::Group("system:unauthenticated"),
        ],
    ),
    binding("system:monitoring", &[Subject::Group("system:monitoring")]),
    binding(
        "system:service-account-issuer-discovery",
        &[Subject::Group("system:serviceaccounts")],
    ),
];
