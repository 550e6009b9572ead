//! Authorization: whether a user may do what a request asks, as kube-apiserver's chain of
//! authorizers decides (`pkg/kubeapiserver/authorizer/config.go`): members of
//! `system:masters` may do anything; then each configured mode in turn (`--authorization-mode`)
//! allows, denies or has no opinion, and a request no mode allows is refused with 403 and
//! upstream's message (`responsewriters.Forbidden`), after the reasons the modes gave.

use crate::server::auth::attributes::Attributes;
use crate::server::auth::node::NodeAuthorizer;
use crate::server::auth::rbac::Policy;
use crate::server::auth::user::{MASTERS, User};
use crate::server::http::error::ApiError;

/// One authorizer of the chain: kube-apiserver's `--authorization-mode` values kapi has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthorizationMode {
    /// Everything is allowed.
    AlwaysAllow,
    /// Everything is refused.
    AlwaysDeny,
    /// What kubelets need: the objects of the pods bound to their node, their own Node and
    /// Lease, and the `system:node` role's rules (`node`).
    Node,
    /// Role-based access control over the stored Roles, ClusterRoles and bindings.
    Rbac,
}

impl std::str::FromStr for AuthorizationMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "AlwaysAllow" => Ok(Self::AlwaysAllow),
            "AlwaysDeny" => Ok(Self::AlwaysDeny),
            "RBAC" => Ok(Self::Rbac),
            "Node" => Ok(Self::Node),
            other => Err(format!(
                "authorization-mode {other:?} is not supported: kapi has AlwaysAllow, AlwaysDeny, Node and RBAC"
            )),
        }
    }
}

/// The authorizers a server asks, in order (default: RBAC alone).
#[derive(Debug, Clone)]
pub struct Authorization {
    modes: Vec<AuthorizationMode>,
    /// The Node authorizer, once the server has its graph (only when a mode is `Node`).
    node: Option<NodeAuthorizer>,
}

impl PartialEq for Authorization {
    fn eq(&self, other: &Self) -> bool {
        self.modes == other.modes
    }
}

impl Eq for Authorization {}

impl Default for Authorization {
    fn default() -> Self {
        Self::modes([AuthorizationMode::Rbac])
    }
}

/// What the chain decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Allowed, with the reason the authorizer gave (empty for `system:masters`).
    Allow(String),
    /// Refused by an authorizer that denies (`AlwaysDeny`), with its reason.
    Deny(String),
    /// No authorizer allowed it, with the reasons they gave (often empty); refused too.
    NoOpinion(String),
}

impl Authorization {
    /// The chain of `modes`, asked in order.
    pub fn modes(modes: impl IntoIterator<Item = AuthorizationMode>) -> Self {
        Self {
            modes: modes.into_iter().collect(),
            node: None,
        }
    }

    /// Whether the chain has the Node authorizer.
    pub(crate) fn has_node(&self) -> bool {
        self.modes.contains(&AuthorizationMode::Node)
    }

    /// The chain, its `Node` mode answering with `node`.
    pub(crate) fn with_node(self, node: NodeAuthorizer) -> Self {
        Self {
            node: Some(node),
            ..self
        }
    }

    /// The Node authorizer, when the chain has it.
    pub(crate) fn node(&self) -> Option<&NodeAuthorizer> {
        self.node.as_ref().filter(|_| self.has_node())
    }

    /// Whether `user` may do `request` under `policy`.
    pub(crate) fn decide(&self, policy: &Policy, user: &User, request: &Attributes) -> Decision {
        if user.in_group(MASTERS) {
            return Decision::Allow(String::new());
        }
        let mut reasons = Vec::new();
        for mode in &self.modes {
            match mode {
                AuthorizationMode::AlwaysAllow => return Decision::Allow(String::new()),
                AuthorizationMode::AlwaysDeny => {
                    return Decision::Deny("Everything is forbidden.".to_owned());
                }
                AuthorizationMode::Rbac => match policy.authorize(user, request) {
                    Ok(reason) => return Decision::Allow(reason),
                    Err(reason) if reason.is_empty() => {}
                    Err(reason) => reasons.push(reason),
                },
                // Without its graph (a chain not built by a server) the Node authorizer has
                // no opinion.
                AuthorizationMode::Node => {
                    match self.node.as_ref().map(|node| node.authorize(user, request)) {
                        Some(Ok(())) => return Decision::Allow(String::new()),
                        Some(Err(reason)) if !reason.is_empty() => reasons.push(reason),
                        _ => {}
                    }
                }
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }
}

/// The 403 for `request` refused to `user`: upstream's `forbiddenMessage`, after `: <reason>`
/// when the authorizers gave one
/// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`).
pub(crate) fn forbidden(user: &User, request: &Attributes, reason: &str) -> ApiError {
    let message = forbidden_message(user, request);
    let message = if reason.is_empty() {
        message
    } else {
        format!("{message}: {reason}")
    };
    ApiError::forbidden(
        crate::server::http::error::Subject {
            group: &request.api_group,
            resource: &request.resource,
            name: &request.name,
        },
        &message,
    )
}

fn forbidden_message(user: &User, request: &Attributes) -> String {
    let name = &user.username;
    let verb = &request.verb;
    if !request.resource_request {
        return format!("User {name:?} cannot {verb} path {:?}", request.path);
    }
    let mut resource = request.resource.clone();
    if !request.subresource.is_empty() {
        resource = format!("{resource}/{}", request.subresource);
    }
    let group = &request.api_group;
    if request.namespace.is_empty() {
        format!(
            "User {name:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
        )
    } else {
        format!(
            "User {name:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
            request.namespace
        )
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::*;

    fn request(method: Method, uri: &str) -> Attributes {
        Attributes::of(&method, &uri.parse().unwrap())
    }

    // The messages kubectl prints for refused requests, as kube-apiserver words them.
    #[test]
    fn forbidden_messages_as_upstream() {
        let anonymous = User::anonymous();
        let list = request(Method::GET, "/api/v1/namespaces/default/pods");
        let status = forbidden(&anonymous, &list, "").into_status();
        assert_eq!(
            status.message.as_deref(),
            Some(
                r#"pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "default""#
            )
        );
        assert_eq!(status.code, Some(403));
        let scale = request(
            Method::GET,
            "/apis/apps/v1/namespaces/a/deployments/web/scale",
        );
        assert_eq!(
            forbidden(&anonymous, &scale, "")
                .into_status()
                .message
                .as_deref(),
            Some(
                r#"deployments.apps "web" is forbidden: User "system:anonymous" cannot get resource "deployments/scale" in API group "apps" in the namespace "a""#
            )
        );
        let nodes = request(Method::GET, "/api/v1/nodes");
        assert_eq!(
            forbidden(&anonymous, &nodes, "")
                .into_status()
                .message
                .as_deref(),
            Some(
                r#"nodes is forbidden: User "system:anonymous" cannot list resource "nodes" in API group "" at the cluster scope"#
            )
        );
        let path = request(Method::GET, "/metrics");
        assert_eq!(
            forbidden(&anonymous, &path, "")
                .into_status()
                .message
                .as_deref(),
            Some(r#"forbidden: User "system:anonymous" cannot get path "/metrics""#)
        );
    }

    /// A graph that relates nothing.
    #[derive(Debug)]
    struct Empty;

    impl crate::server::auth::node::NodeGraph for Empty {
        fn related(&self, _: &str, _: crate::server::auth::node::Vertex, _: &str, _: &str) -> bool {
            false
        }
    }

    // Upstream's union authorizer: the Node authorizer's reason is kept when RBAC has no
    // opinion either, and a chain without its graph has no opinion.
    #[test]
    fn the_node_authorizers_reason_reaches_the_refusal() {
        let policy = Policy::default();
        let node = crate::server::auth::user::User::new(
            "system:node:n1",
            &[crate::server::auth::node::NODES_GROUP],
        );
        let secret = request(Method::GET, "/api/v1/namespaces/default/secrets/s1");
        let chain = Authorization::modes([AuthorizationMode::Node, AuthorizationMode::Rbac]);
        assert_eq!(
            chain.decide(&policy, &node, &secret),
            Decision::NoOpinion(String::new()),
            "no graph yet"
        );
        let rules = crate::server::auth::bootstrap::node_rules(crate::KubeVersion::new(1, 36));
        let chain = chain.with_node(NodeAuthorizer::new(std::sync::Arc::new(Empty), rules, true));
        assert_eq!(
            chain.decide(&policy, &node, &secret),
            Decision::NoOpinion(
                "no relationship found between node 'n1' and this object".to_owned()
            )
        );
        assert_eq!(
            chain.decide(&policy, &node, &request(Method::GET, "/api/v1/services")),
            Decision::Allow(String::new()),
            "system:node's rules"
        );
        assert!(chain.node().is_some());
        assert!(Authorization::default().node().is_none());
    }

    #[test]
    fn masters_may_do_anything_and_modes_are_asked_in_order() {
        let policy = Policy::default();
        let list = request(Method::GET, "/api/v1/pods");
        let rbac = Authorization::default();
        assert_eq!(
            rbac.decide(&policy, &User::unsecured(), &list),
            Decision::Allow(String::new())
        );
        assert_eq!(
            rbac.decide(&policy, &User::anonymous(), &list),
            Decision::NoOpinion(String::new())
        );
        let open = Authorization::modes([AuthorizationMode::Rbac, AuthorizationMode::AlwaysAllow]);
        assert_eq!(
            open.decide(&policy, &User::anonymous(), &list),
            Decision::Allow(String::new())
        );
        let closed = Authorization::modes([AuthorizationMode::AlwaysDeny]);
        assert_eq!(
            closed.decide(&policy, &User::anonymous(), &list),
            Decision::Deny("Everything is forbidden.".to_owned())
        );
    }
}
