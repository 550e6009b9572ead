//! The review kinds, evaluated instead of stored: a create of one answers 201 with the object
//! and its `status` filled in, as upstream's registries of `authorization.k8s.io` and
//! `authentication.k8s.io` do (`pkg/registry/authorization/*/rest.go`,
//! `pkg/registry/authentication/*/storage.go`):
//! - `SubjectAccessReview` (whether a given user may do something), `LocalSubjectAccessReview`
//!   (the same within the URL's namespace), `SelfSubjectAccessReview` (whether the requestor
//!   may: `kubectl auth can-i`), answered by the server's authorizers;
//! - `SelfSubjectRulesReview`, the rules the requestor has in a namespace (`kubectl auth can-i
//!   --list`);
//! - `SelfSubjectReview`, who the requestor is (`kubectl auth whoami`);
//! - `TokenReview`, who a bearer token authenticates as.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::ResourceInfo;
use crate::meta::{CreateOptions, StatusCause};

use crate::server::Call;
use crate::server::auth::attributes::Attributes;
use crate::server::auth::authz::Decision;
use crate::server::auth::user::User;
use crate::server::handlers::decode::decode_object;
use crate::server::handlers::request::write_request;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::Output;
use crate::server::objects::render;

/// The review kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    Subject,
    LocalSubject,
    SelfSubject,
    SelfSubjectRules,
    SelfSubjectIdentity,
    Token,
}

impl Review {
    /// The review `info` is, if it is one.
    pub(crate) fn of(info: &ResourceInfo) -> Option<Self> {
        Some(match (&*info.gvk.group, &*info.plural) {
            ("authorization.k8s.io", "subjectaccessreviews") => Self::Subject,
            ("authorization.k8s.io", "localsubjectaccessreviews") => Self::LocalSubject,
            ("authorization.k8s.io", "selfsubjectaccessreviews") => Self::SelfSubject,
            ("authorization.k8s.io", "selfsubjectrulesreviews") => Self::SelfSubjectRules,
            ("authentication.k8s.io", "selfsubjectreviews") => Self::SelfSubjectIdentity,
            ("authentication.k8s.io", "tokenreviews") => Self::Token,
            _ => return None,
        })
    }
}

/// `spec.resourceAttributes`.
#[derive(Debug, Default, Deserialize)]
struct ResourceAttributes {
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    verb: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: String,
    #[serde(default)]
    name: String,
    #[serde(default, rename = "fieldSelector")]
    field_selector: Option<FieldSelectorAttributes>,
}

/// `spec.resourceAttributes.fieldSelector`: a selector as written, or its requirements.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FieldSelectorAttributes {
    #[serde(default)]
    raw_selector: String,
    #[serde(default)]
    requirements: Vec<FieldRequirement>,
}

/// One requirement of [`FieldSelectorAttributes`].
#[derive(Debug, Default, Deserialize)]
struct FieldRequirement {
    #[serde(default)]
    key: String,
    #[serde(default)]
    operator: String,
    #[serde(default)]
    values: Vec<String>,
}

impl FieldSelectorAttributes {
    /// The equality terms the authorizers read: those of the raw selector, or the `In`
    /// requirements of one value (upstream's `fieldSelectorAsSelector` makes those `=`).
    fn equality_terms(&self) -> Vec<(String, String)> {
        if !self.raw_selector.is_empty() {
            return crate::server::auth::attributes::equality_terms(&self.raw_selector);
        }
        self.requirements
            .iter()
            .filter_map(|r| match r.values.as_slice() {
                [value] if r.operator == "In" => Some((r.key.clone(), value.clone())),
                _ => None,
            })
            .collect()
    }
}

/// `spec.nonResourceAttributes`.
#[derive(Debug, Default, Deserialize)]
struct NonResourceAttributes {
    #[serde(default)]
    path: String,
    #[serde(default)]
    verb: String,
}

/// The spec of the access reviews.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccessSpec {
    resource_attributes: Option<ResourceAttributes>,
    non_resource_attributes: Option<NonResourceAttributes>,
    #[serde(default)]
    user: String,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    extra: BTreeMap<String, Vec<String>>,
    /// `SelfSubjectRulesReview`'s.
    #[serde(default)]
    namespace: String,
}

/// Serves a create of a review: 201 with the review's status.
pub(crate) async fn serve(
    call: &Call,
    review: Review,
    body: Body,
    output: Output,
) -> Result<Response, ApiError> {
    // A dry run changes nothing: a review writes nothing anyway.
    let (body, _) = write_request::<CreateOptions>(call, body).await?;
    let mut object = decode_object(call, &body)?;
    let spec_value = object.get("spec").cloned().unwrap_or(Value::Null);
    let status = match review {
        Review::Token => token_review(call, &spec_value).await?,
        Review::SelfSubjectIdentity => json!({"userInfo": *call.user}),
        _ => {
            let spec: AccessSpec = serde_json::from_value(spec_value.clone())
                .map_err(|e| ApiError::bad_request(format!("invalid spec: {e}")))?;
            match review {
                Review::SelfSubjectRules => rules_review(call, &spec),
                _ => access_review(call, review, &spec, &spec_value)?,
            }
        }
    };
    if let Value::Object(map) = &mut object {
        map.insert("status".into(), status);
    }
    render::reply(call, output, StatusCode::CREATED, object)
}

/// The status of a SubjectAccessReview, LocalSubjectAccessReview or SelfSubjectAccessReview,
/// after upstream's validation (`pkg/apis/authorization/validation/validation.go`).
fn access_review(
    call: &Call,
    review: Review,
    spec: &AccessSpec,
    spec_value: &Value,
) -> Result<Value, ApiError> {
    let info = call.info();
    let mut causes = Vec::new();
    let shown = |field: &str| spec_value.get(field).cloned().unwrap_or(Value::Null);
    match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(_), Some(_)) => causes.push(StatusCause::invalid(
            "spec.nonResourceAttributes",
            &shown("nonResourceAttributes"),
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => causes.push(StatusCause::invalid(
            "spec.resourceAttributes",
            &Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    if review == Review::LocalSubject && spec.non_resource_attributes.is_some() {
        causes.push(StatusCause::invalid(
            "spec.nonResourceAttributes",
            &shown("nonResourceAttributes"),
            "disallowed on this kind of request",
        ));
    }
    if review != Review::SelfSubject && spec.user.is_empty() && spec.groups.is_empty() {
        causes.push(StatusCause::invalid(
            "spec.user",
            &Value::from(""),
            "at least one of user or group must be specified",
        ));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(
            &info.gvk.group,
            &info.gvk.kind,
            "",
            causes,
        ));
    }
    if review == Review::LocalSubject {
        let namespace = call.target.namespace.as_deref().unwrap_or_default();
        let asked = spec
            .resource_attributes
            .as_ref()
            .map(|r| r.namespace.as_str())
            .unwrap_or_default();
        if asked != namespace {
            return Err(ApiError::bad_request(format!(
                "spec.resourceAttributes.namespace must match namespace: {namespace}"
            )));
        }
    }
    let user = if review == Review::SelfSubject {
        (*call.user).clone()
    } else {
        User {
            username: spec.user.clone(),
            uid: spec.uid.clone(),
            groups: spec.groups.clone(),
            extra: spec.extra.clone(),
        }
    };
    let request = match (&spec.resource_attributes, &spec.non_resource_attributes) {
        (Some(r), _) => Attributes {
            verb: r.verb.clone(),
            resource_request: true,
            path: String::new(),
            api_group: r.group.clone(),
            api_version: r.version.clone(),
            namespace: r.namespace.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            name: r.name.clone(),
            fields: r
                .field_selector
                .as_ref()
                .map(FieldSelectorAttributes::equality_terms)
                .unwrap_or_default(),
        },
        (None, Some(n)) => Attributes {
            verb: n.verb.clone(),
            path: n.path.clone(),
            ..Attributes::default()
        },
        (None, None) => Attributes::default(),
    };
    Ok(match call.state.access.decide(&user, &request) {
        Decision::Allow(reason) => with_reason(json!({"allowed": true}), &reason),
        Decision::Deny(reason) => with_reason(json!({"allowed": false, "denied": true}), &reason),
        Decision::NoOpinion(reason) => with_reason(json!({"allowed": false}), &reason),
    })
}

fn with_reason(mut status: Value, reason: &str) -> Value {
    if !reason.is_empty() {
        status["reason"] = Value::from(reason);
    }
    status
}

/// The status of a SelfSubjectRulesReview: the requestor's rules in `spec.namespace`, split
/// into resource and non-resource rules; `incomplete` when a binding names a missing role.
fn rules_review(call: &Call, spec: &AccessSpec) -> Value {
    let policy = call.state.access.policy();
    let (rules, mut errors) = policy.rules_for(&call.user, &spec.namespace);
    // The Node authorizer's permissions follow the graph and cannot be listed: upstream's
    // `NodeAuthorizer.RulesFor` says so, which makes a node's list incomplete.
    let authorization = &call.state.access.authorization;
    if authorization.node().is_some() && crate::server::auth::node::node_of(&call.user).is_some() {
        errors.insert(
            0,
            "node authorizer does not support user rule resolution".to_owned(),
        );
    }
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules {
        if rule.non_resource_urls.is_empty() {
            let mut entry = json!({
                "verbs": rule.verbs,
                "apiGroups": rule.api_groups,
                "resources": rule.resources,
            });
            if !rule.resource_names.is_empty() {
                entry["resourceNames"] = json!(rule.resource_names);
            }
            resource_rules.push(entry);
        } else {
            non_resource_rules.push(json!({
                "verbs": rule.verbs,
                "nonResourceURLs": rule.non_resource_urls,
            }));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = Value::from(errors.join(", "));
    }
    status
}

/// The status of a TokenReview: the user `spec.token` authenticates as, or not authenticated.
/// A `TokenReview`, as upstream's storage answers it
/// (`pkg/registry/authentication/tokenreview/storage.go`): the token through every bearer-token
/// authenticator (the token file, service-account tokens, the JWT issuers), for the audiences
/// the review names or else the API's. Tokens of the file and of JWT issuers carry no audience
/// of their own: they stand for the API's audiences (`WrapAudienceAgnosticToken`), so a review
/// for audiences outside those does not authenticate them.
async fn token_review(call: &Call, spec: &Value) -> Result<Value, ApiError> {
    let token = spec
        .get("token")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication.k8s.io".to_owned(),
        ));
    }
    let access = &call.state.access;
    let requested: Vec<String> = spec
        .get("audiences")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    let api_audiences = access
        .service_accounts
        .as_ref()
        .map(|tokens| tokens.audiences())
        .unwrap_or_default();
    let requested_none = requested.is_empty();
    let wanted = if requested.is_empty() {
        api_audiences.clone()
    } else {
        requested
    };
    // What an audience-agnostic token stands for: the API's audiences the review asks for.
    let agnostic = |user: User| {
        let audiences: Vec<&String> = api_audiences
            .iter()
            .filter(|a| wanted.is_empty() || wanted.contains(a))
            .collect();
        // The API's audiences the review asks for: none in common (or none at all, when the
        // review names audiences) is no authentication.
        if audiences.is_empty() && !(api_audiences.is_empty() && requested_none) {
            return json!({"user": {}, "error": "invalid bearer token"});
        }
        let mut status = json!({"authenticated": true, "user": user.with_authenticated_group()});
        if !audiences.is_empty() {
            status["audiences"] = json!(audiences);
        }
        status
    };
    if let Some(user) = access.authentication.user_of_token(token) {
        return Ok(agnostic(user));
    }
    let outcome = match &access.service_accounts {
        Some(tokens) => {
            let storage: &dyn crate::storage::Storage = call.state.storage.as_ref();
            let audiences = (!wanted.is_empty()).then_some(wanted.as_slice());
            tokens.authenticate(storage, token, audiences).await
        }
        None => None,
    };
    let outcome = match outcome {
        Some(outcome) => Some(outcome.map(|verified| (verified.user, Some(verified.audiences)))),
        None => access
            .authentication
            .jwt_user(token)
            .await
            .map(|outcome| outcome.map(|user| (user, None))),
    };
    Ok(match outcome {
        Some(Ok((user, Some(audiences)))) => json!({
            "authenticated": true,
            "user": user.with_authenticated_group(),
            "audiences": audiences,
        }),
        Some(Ok((user, None))) => agnostic(user),
        // The bearer-token authenticator's words around the failing authenticator's.
        Some(Err(error)) => {
            json!({"user": {}, "error": format!("[invalid bearer token, {error}]")})
        }
        None => json!({"user": {}, "error": "invalid bearer token"}),
    })
}
