//! The Node authorizer (`--authorization-mode=Node`): what a kubelet may do, as upstream's
//! `plugin/pkg/auth/authorizer/node/node_authorizer.go` decides it. A node's user is
//! `system:node:<name>` in `system:nodes` (upstream's `pkg/auth/nodeidentifier/default.go`).
//! Secrets, ConfigMaps, PersistentVolumeClaims, PersistentVolumes, ResourceClaims,
//! VolumeAttachments, service-account tokens and ResourceSlices are allowed only along a path
//! from the object to the node: the pods bound to it and what they reference, which a
//! [`NodeGraph`] answers; its Lease and CSINode by name; the rest by the static rules of the
//! `system:node` role (upstream's `NodeRules()`). Whatever it does not allow it leaves to the
//! next authorizer with no opinion, often with a reason that ends up in the 403.
//!
//! The graph itself is the server's state (`state::node_graph`); this module sees it only
//! through [`NodeGraph`], so that authorization imports nothing of the state.

use std::fmt;
use std::sync::Arc;

use crate::server::auth::attributes::Attributes;
use crate::server::auth::rbac::PolicyRule;
use crate::server::auth::user::User;

/// The group every node's user is in (upstream's `user.NodesGroup`).
pub(crate) const NODES_GROUP: &str = "system:nodes";
/// What a node's user name starts with; the rest is the node's name.
const NODE_USER_PREFIX: &str = "system:node:";
/// The namespace of the nodes' Leases (upstream's `NamespaceNodeLease`).
pub(crate) const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The kinds of object the graph relates to nodes (upstream's vertex types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vertex {
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    PersistentVolume,
    ResourceClaim,
    VolumeAttachment,
    ServiceAccount,
    Pod,
    ResourceSlice,
}

/// Which objects lead to which node: the pods bound to a node and what they reference, the
/// PersistentVolumes bound to their claims, VolumeAttachments and ResourceSlices naming it.
pub(crate) trait NodeGraph: Send + Sync + fmt::Debug {
    /// Whether a path leads from the object of `vertex` named `name` (in `namespace`, empty
    /// for a cluster-scoped one) to node `node`. A graph that cannot tell now answers false.
    fn related(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool;
}

/// The node `user` is, if it is a node's user: `Some("")` for a user in `system:nodes` named
/// `system:node:` with no name after it (upstream refuses such a user).
pub(crate) fn node_of(user: &User) -> Option<&str> {
    let name = user.username.strip_prefix(NODE_USER_PREFIX)?;
    user.in_group(NODES_GROUP).then_some(name)
}

/// The Node authorizer of one server.
#[derive(Debug, Clone)]
pub(crate) struct NodeAuthorizer {
    graph: Arc<dyn NodeGraph>,
    /// The `system:node` role's rules in the release served.
    rules: Vec<PolicyRule>,
    /// Whether reads of Nodes and Pods are limited to the node's own (upstream's
    /// AuthorizeNodeWithSelectors, on from 1.32).
    selectors: bool,
}

/// The node authorizer's answer: allowed, or no opinion with a reason (often empty).
pub(crate) type Verdict = Result<(), String>;

fn no_opinion(reason: impl Into<String>) -> Verdict {
    Err(reason.into())
}

impl NodeAuthorizer {
    pub(crate) fn new(graph: Arc<dyn NodeGraph>, rules: Vec<PolicyRule>, selectors: bool) -> Self {
        Self {
            graph,
            rules,
            selectors,
        }
    }

    /// Upstream's `NodeAuthorizer.Authorize`.
    pub(crate) fn authorize(&self, user: &User, request: &Attributes) -> Verdict {
        let Some(node) = node_of(user) else {
            return no_opinion("");
        };
        if node.is_empty() {
            return no_opinion(format!("unknown node for user {:?}", user.username));
        }
        if request.resource_request {
            let subdivided = match (request.api_group.as_str(), request.resource.as_str()) {
                ("", "secrets") => Some(self.read_namespaced(node, Vertex::Secret, request)),
                ("", "configmaps") => Some(self.read_namespaced(node, Vertex::ConfigMap, request)),
                ("", "persistentvolumeclaims") if request.subresource == "status" => {
                    Some(self.status_update(node, Vertex::PersistentVolumeClaim, request))
                }
                ("", "persistentvolumeclaims") => {
                    Some(self.get(node, Vertex::PersistentVolumeClaim, request))
                }
                ("", "persistentvolumes") => {
                    Some(self.get(node, Vertex::PersistentVolume, request))
                }
                ("resource.k8s.io", "resourceclaims") => {
                    Some(self.get(node, Vertex::ResourceClaim, request))
                }
                ("storage.k8s.io", "volumeattachments") => {
                    Some(self.get(node, Vertex::VolumeAttachment, request))
                }
                ("", "serviceaccounts") => Some(self.create_token(node, request)),
                ("coordination.k8s.io", "leases") => Some(lease(node, request)),
                ("storage.k8s.io", "csinodes") => Some(csi_node(node, request)),
                ("resource.k8s.io", "resourceslices") => Some(self.resource_slice(node, request)),
                ("", "nodes") if self.selectors => Some(node_object(node, request)),
                ("", "pods") if self.selectors => Some(self.pod(node, request)),
                _ => None,
            };
            if let Some(verdict) = subdivided {
                return verdict;
            }
        }
        if self.rules.iter().any(|rule| rule.allows(request)) {
            Ok(())
        } else {
            no_opinion("")
        }
    }

    /// `authorizeStatusUpdate`: update or patch of the status of an object related to the node.
    fn status_update(&self, node: &str, vertex: Vertex, request: &Attributes) -> Verdict {
        if !matches!(request.verb.as_str(), "update" | "patch") {
            return no_opinion("can only get/update/patch this type");
        }
        if request.subresource != "status" {
            return no_opinion("can only update status subresource");
        }
        self.path_from(node, vertex, request)
    }

    /// `authorizeGet`: a get of one object related to the node.
    fn get(&self, node: &str, vertex: Vertex, request: &Attributes) -> Verdict {
        if request.verb != "get" {
            return no_opinion("can only get individual resources of this type");
        }
        if !request.subresource.is_empty() {
            return no_opinion("cannot get subresource");
        }
        self.path_from(node, vertex, request)
    }

    /// `authorizeReadNamespacedObject`: a get, list or watch of one namespaced object related
    /// to the node (a list or watch names it with a `metadata.name` field selector).
    fn read_namespaced(&self, node: &str, vertex: Vertex, request: &Attributes) -> Verdict {
        if !matches!(request.verb.as_str(), "get" | "list" | "watch") {
            return no_opinion("can only read resources of this type");
        }
        if !request.subresource.is_empty() {
            return no_opinion("cannot read subresource");
        }
        if request.namespace.is_empty() {
            return no_opinion("can only read namespaced object of this type");
        }
        self.path_from(node, vertex, request)
    }

    /// `authorize`: whether the graph relates the named object to the node.
    fn path_from(&self, node: &str, vertex: Vertex, request: &Attributes) -> Verdict {
        if request.name.is_empty() {
            return no_opinion("No Object name found");
        }
        if self
            .graph
            .related(node, vertex, &request.namespace, &request.name)
        {
            Ok(())
        } else {
            no_opinion(format!(
                "no relationship found between node '{node}' and this object"
            ))
        }
    }

    /// `authorizeCreateToken`: a token of a service account a pod of the node runs as.
    fn create_token(&self, node: &str, request: &Attributes) -> Verdict {
        if request.verb != "create" || request.name.is_empty() {
            return no_opinion("can only create tokens for individual service accounts");
        }
        if request.subresource != "token" {
            return no_opinion("can only create token subresource of serviceaccount");
        }
        self.path_from(node, Vertex::ServiceAccount, request)
    }

    /// `authorizeResourceSlice`: creates are NodeRestriction's to check; reads and writes of one
    /// slice need the slice to name the node; collections a `nodeName` field selector.
    fn resource_slice(&self, node: &str, request: &Attributes) -> Verdict {
        if !request.subresource.is_empty() {
            return no_opinion("cannot authorize ResourceSlice subresources");
        }
        match request.verb.as_str() {
            "create" => Ok(()),
            "get" | "update" | "patch" | "delete" => {
                self.path_from(node, Vertex::ResourceSlice, request)
            }
            "watch" | "list" | "deletecollection" if self.selectors => {
                if request.selects_field("nodeName", node) {
                    Ok(())
                } else {
                    no_opinion(
                        "can only list/watch/deletecollection resourceslices with nodeName field selector",
                    )
                }
            }
            "watch" | "list" | "deletecollection" => Ok(()),
            _ => no_opinion(
                "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
            ),
        }
    }

    /// `authorizePod` (AuthorizeNodeWithSelectors): gets of its pods, lists and watches with
    /// its `spec.nodeName`, mirror pod creates and deletes, status, evictions.
    fn pod(&self, node: &str, request: &Attributes) -> Verdict {
        match (request.subresource.as_str(), request.verb.as_str()) {
            ("", "get") => self.get(node, Vertex::Pod, request),
            ("", "list" | "watch") => {
                if request.selects_field("spec.nodeName", node) {
                    Ok(())
                } else if !request.name.is_empty() {
                    self.path_from(node, Vertex::Pod, request)
                } else {
                    no_opinion("can only list/watch pods with spec.nodeName field selector")
                }
            }
            // NodeRestriction limits these to mirror pods and pods bound to the node.
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                Ok(())
            }
            _ => no_opinion(""),
        }
    }
}

/// `authorizeLease`: the node's own Lease in `kube-node-lease` (a create's name is
/// NodeRestriction's to check).
fn lease(node: &str, request: &Attributes) -> Verdict {
    if !matches!(
        request.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no_opinion("can only get, create, update, patch, or delete a node lease");
    }
    if request.namespace != NODE_LEASE_NAMESPACE {
        return no_opinion(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    if request.verb != "create" && request.name != node {
        return no_opinion("can only access node lease with the same name as the requesting node");
    }
    Ok(())
}

/// `authorizeCSINode`: the node's own CSINode.
fn csi_node(node: &str, request: &Attributes) -> Verdict {
    if !matches!(
        request.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no_opinion("can only get, create, update, patch, or delete a CSINode");
    }
    if !request.subresource.is_empty() {
        return no_opinion("cannot authorize CSINode subresources");
    }
    if request.verb != "create" && request.name != node {
        return no_opinion("can only access CSINode with the same name as the requesting node");
    }
    Ok(())
}

/// `authorizeNode` (AuthorizeNodeWithSelectors): reads of its own Node by name; creates and
/// updates, NodeRestriction limits to its own.
fn node_object(node: &str, request: &Attributes) -> Verdict {
    match (request.subresource.as_str(), request.verb.as_str()) {
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Ok(()),
        ("", "get" | "list" | "watch") => {
            if request.name == node {
                Ok(())
            } else if request.name.is_empty() {
                no_opinion(format!(
                    "node '{node}' cannot read all nodes, only its own Node object"
                ))
            } else {
                no_opinion(format!(
                    "node '{node}' cannot read '{}', only its own Node object",
                    request.name
                ))
            }
        }
        _ => no_opinion(""),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use axum::http::Method;

    use super::*;

    /// A graph of fixed relations: (node, vertex, namespace, name).
    #[derive(Debug, Default)]
    struct Fixed(BTreeSet<(String, String, String, String)>);

    impl NodeGraph for Fixed {
        fn related(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
            self.0.contains(&(
                node.to_owned(),
                format!("{vertex:?}"),
                namespace.to_owned(),
                name.to_owned(),
            ))
        }
    }

    fn authorizer(selectors: bool) -> NodeAuthorizer {
        let mut fixed = Fixed::default();
        for (vertex, namespace, name) in [
            (Vertex::Secret, "default", "s1"),
            (Vertex::ServiceAccount, "default", "sa"),
            (Vertex::PersistentVolume, "", "pv1"),
        ] {
            fixed.0.insert((
                "n1".into(),
                format!("{vertex:?}"),
                namespace.into(),
                name.into(),
            ));
        }
        let rules = vec![PolicyRule {
            verbs: vec!["get".into(), "list".into(), "watch".into()],
            api_groups: vec![String::new()],
            resources: vec!["services".into(), "nodes".into(), "secrets".into()],
            ..PolicyRule::default()
        }];
        NodeAuthorizer::new(Arc::new(fixed), rules, selectors)
    }

    fn node(name: &str) -> User {
        User::new(format!("system:node:{name}"), &[NODES_GROUP])
    }

    fn ask(method: Method, uri: &str, user: &User, selectors: bool) -> Verdict {
        authorizer(selectors).authorize(user, &Attributes::of(&method, &uri.parse().unwrap()))
    }

    // Upstream's `nodeidentifier.NodeIdentity`: the prefix and the group, both.
    #[test]
    fn node_users() {
        assert_eq!(node_of(&node("n1")), Some("n1"));
        assert_eq!(
            node_of(&User::new("system:node:n1", &["system:authenticated"])),
            None
        );
        assert_eq!(node_of(&User::new("alice", &[NODES_GROUP])), None);
        assert_eq!(
            ask(Method::GET, "/api/v1/services", &node(""), false),
            Err(r#"unknown node for user "system:node:""#.to_owned())
        );
    }

    // Cases after upstream's `TestAuthorizer` (`node_authorizer_test.go`).
    #[test]
    fn objects_of_the_graph_only() {
        let n1 = node("n1");
        let no_relation = || Err("no relationship found between node 'n1' and this object".into());
        assert_eq!(
            ask(
                Method::GET,
                "/api/v1/namespaces/default/secrets/s1",
                &n1,
                true
            ),
            Ok(())
        );
        assert_eq!(
            ask(
                Method::GET,
                "/api/v1/namespaces/default/secrets/s2",
                &n1,
                true
            ),
            no_relation()
        );
        assert_eq!(
            ask(
                Method::GET,
                "/api/v1/namespaces/default/secrets/s1",
                &node("n2"),
                true
            ),
            Err("no relationship found between node 'n2' and this object".into())
        );
        assert_eq!(
            ask(
                Method::GET,
                "/api/v1/namespaces/default/secrets?fieldSelector=metadata.name%3Ds1&watch=true",
                &n1,
                true
            ),
            Ok(())
        );
        assert_eq!(
            ask(Method::GET, "/api/v1/namespaces/default/secrets", &n1, true),
            Err("No Object name found".into()),
            "the static rules are not reached"
        );
        assert_eq!(
            ask(
                Method::PUT,
                "/api/v1/namespaces/default/secrets/s1",
                &n1,
                true
            ),
            Err("can only read resources of this type".into())
        );
        assert_eq!(
            ask(Method::GET, "/api/v1/persistentvolumes/pv1", &n1, true),
            Ok(())
        );
        assert_eq!(
            ask(
                Method::POST,
                "/api/v1/namespaces/default/serviceaccounts/sa/token",
                &n1,
                true
            ),
            Ok(())
        );
        assert_eq!(
            ask(
                Method::POST,
                "/api/v1/namespaces/default/serviceaccounts/other/token",
                &n1,
                true
            ),
            no_relation()
        );
    }

    #[test]
    fn own_lease_and_node_and_the_static_rules() {
        let n1 = node("n1");
        let lease = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
        assert_eq!(ask(Method::PUT, &format!("{lease}/n1"), &n1, true), Ok(()));
        assert_eq!(
            ask(Method::PUT, &format!("{lease}/n2"), &n1, true),
            Err("can only access node lease with the same name as the requesting node".into())
        );
        assert_eq!(
            ask(
                Method::GET,
                "/apis/coordination.k8s.io/v1/namespaces/default/leases/n1",
                &n1,
                true
            ),
            Err(r#"can only access leases in the "kube-node-lease" system namespace"#.into())
        );
        assert_eq!(ask(Method::GET, "/api/v1/nodes/n1", &n1, true), Ok(()));
        assert_eq!(
            ask(Method::GET, "/api/v1/nodes/n2", &n1, true),
            Err("node 'n1' cannot read 'n2', only its own Node object".into())
        );
        assert_eq!(
            ask(Method::GET, "/api/v1/nodes/n2", &n1, false),
            Ok(()),
            "without selectors, the static rules read every node"
        );
        assert_eq!(
            ask(
                Method::GET,
                "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1",
                &n1,
                true
            ),
            Ok(())
        );
        assert_eq!(
            ask(Method::GET, "/api/v1/pods", &n1, true),
            Err("can only list/watch pods with spec.nodeName field selector".into())
        );
        assert_eq!(ask(Method::GET, "/api/v1/services", &n1, true), Ok(()));
        assert_eq!(
            ask(Method::GET, "/api/v1/services", &User::anonymous(), true),
            Err(String::new()),
            "not a node: no opinion, no reason"
        );
    }
}
