//! The `authorizer` variables of admission's CEL expressions (policies' and webhooks' match
//! conditions): the server's authorizers asked for the request's user, or for a service
//! account an expression names, as upstream's admission plugins bind
//! `library.NewAuthorizerVal` and `NewResourceAuthorizerVal`
//! (`k8s.io/apiserver/pkg/admission/plugin/cel/activation.go`).
//!
//! A check is a resource request of API version `*` with the group, resource, subresource,
//! namespace and name the expression set (and a field selector's equality terms, which the
//! Node authorizer reads; label selectors no kapi authorizer reads, as RBAC does not), or a
//! non-resource request of a path.

use std::sync::Arc;

use crate::cel::library::authz::{self, Authorize, Check, Principal, ResourceCheck, Verdict};
use crate::server::Call;
use crate::server::auth::Access;
use crate::server::auth::attributes::{Attributes, equality_terms};
use crate::server::auth::authz::Decision;
use crate::server::auth::user::{User, service_account};

/// The server's authorizers for one request's user.
struct RequestAuthorizer {
    access: Arc<Access>,
    user: Arc<User>,
}

impl Authorize for RequestAuthorizer {
    fn authorize(&self, principal: &Principal, check: &Check, verb: &str) -> Verdict {
        // Upstream's `ServiceAccountInfo.UserInfo`: the account's name and its two groups,
        // without `system:authenticated`, which only authentication adds.
        let account;
        let user = match principal {
            Principal::Requester => &*self.user,
            Principal::ServiceAccount { namespace, name } => {
                account = service_account(namespace, name);
                &account
            }
        };
        let attributes = match check {
            Check::Resource(resource) => Attributes {
                verb: verb.to_owned(),
                resource_request: true,
                api_group: resource.group.clone(),
                api_version: "*".to_owned(),
                namespace: resource.namespace.clone(),
                resource: resource.resource.clone(),
                subresource: resource.subresource.clone(),
                name: resource.name.clone(),
                fields: equality_terms(&resource.field_selector),
                ..Attributes::default()
            },
            Check::Path(path) => Attributes {
                verb: verb.to_owned(),
                path: path.clone(),
                ..Attributes::default()
            },
        };
        match self.access.decide(user, &attributes) {
            Decision::Allow(reason) => Verdict {
                allowed: true,
                reason,
                error: None,
            },
            Decision::Deny(reason) | Decision::NoOpinion(reason) => Verdict {
                allowed: false,
                reason,
                error: None,
            },
        }
    }
}

/// The `authorizer` and `authorizer.requestResource` variables of `call`, for an object
/// named `name` (empty when the server generates it).
pub(crate) fn variables(call: &Call, name: &str) -> [(&'static str, ::cel::Value); 2] {
    let authorize: Arc<dyn Authorize> = Arc::new(RequestAuthorizer {
        access: Arc::clone(&call.state.access),
        user: Arc::clone(&call.user),
    });
    let request = ResourceCheck {
        group: call.target.group().to_owned(),
        resource: call.target.plural().to_owned(),
        subresource: call.target.sub.map_or("", |sub| sub.name()).to_owned(),
        namespace: call
            .target
            .namespace
            .clone()
            .filter(|_| call.info().is_namespaced())
            .unwrap_or_default(),
        name: name.to_owned(),
        ..ResourceCheck::default()
    };
    [
        (AUTHORIZER, authz::authorizer(Arc::clone(&authorize))),
        (
            REQUEST_RESOURCE,
            authz::request_resource(authorize, request),
        ),
    ]
}

/// The variable's name.
pub(crate) const AUTHORIZER: &str = "authorizer";
/// The check of the request's own resource, a variable with a dotted name.
const REQUEST_RESOURCE: &str = "authorizer.requestResource";
