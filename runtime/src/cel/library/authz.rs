//! Kubernetes' authorization library: the `authorizer` variable admission policies and
//! webhooks' match conditions read, and the checks built from it:
//! `authorizer.group('apps').resource('deployments').namespace('ns').name('x').check('get')`,
//! `authorizer.path('/healthz').check('get')`, `authorizer.serviceAccount('ns', 'sa')` (the
//! same checks asked for that account), `authorizer.requestResource` (the request's own
//! resource), with `subresource`, `fieldSelector` and `labelSelector`, and on the decision
//! `allowed()`, `reason()`, `errored()` and `error()`.
//!
//! The library only builds what is asked; the answer comes from [`Authorize`], which the
//! server implements with its authorizers. A check costs 350,000 (two fit in one expression's
//! limit), every builder and accessor 1, as upstream's cost estimator charges them.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/authz.go` (functions, errors, the attributes a
//! check sends: API version `*`), `library/cost.go` (`CallCost`).

use std::sync::Arc;

use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use super::{no_overload, string_arg, value_overload};
use crate::cel::cost::charge;

/// The cost of one authorization check, beyond its call node.
const CHECK_COST: u64 = 350_000 - 1;

/// Who a check is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The user who sent the request under admission.
    Requester,
    /// A service account (`authorizer.serviceAccount(namespace, name)`).
    ServiceAccount {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// What a check asks, as upstream's library fills `authorizer.AttributesRecord`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceCheck {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource, lower-case plural.
    pub resource: String,
    /// The subresource, `""` for none.
    pub subresource: String,
    /// The namespace, `""` for the cluster scope.
    pub namespace: String,
    /// The object's name, `""` for none.
    pub name: String,
    /// A field selector the check is limited to (`""` for none), as written.
    pub field_selector: String,
    /// A label selector the check is limited to (`""` for none), as written.
    pub label_selector: String,
}

/// A check: on a resource with an API verb, or on a non-resource path with an HTTP verb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// A resource check (`ResourceRequest: true`, API version `*`).
    Resource(ResourceCheck),
    /// A path check (`/healthz`).
    Path(String),
}

/// An authorizer's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the decision is "allow" ("deny" and "no opinion" are not).
    pub allowed: bool,
    /// The reason the authorizer gave.
    pub reason: String,
    /// The error the authorizer met, if any.
    pub error: Option<String>,
}

/// Answers checks: the server's authorizers, for the user of one request.
pub trait Authorize: Send + Sync {
    /// Whether `principal` may do `verb` on `check`.
    fn authorize(&self, principal: &Principal, check: &Check, verb: &str) -> Verdict;
}

/// `kubernetes.authorization.Authorizer`.
#[derive(Clone)]
struct Authorizer {
    authorize: Arc<dyn Authorize>,
    principal: Principal,
}

/// `kubernetes.authorization.PathCheck`.
#[derive(Clone)]
struct PathCheck {
    authorizer: Authorizer,
    path: String,
}

/// `kubernetes.authorization.GroupCheck`.
#[derive(Clone)]
struct GroupCheck {
    authorizer: Authorizer,
    group: String,
}

/// `kubernetes.authorization.ResourceCheck`.
#[derive(Clone)]
struct Resource {
    authorizer: Authorizer,
    check: ResourceCheck,
}

/// `kubernetes.authorization.Decision`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decision(Verdict);

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.authorize, &other.authorize) && self.principal == other.principal
    }
}

impl Eq for Authorizer {}

/// Debug and equality of the values that carry an authorizer, by their fields.
macro_rules! carrying_authorizer {
    ($name:ident { $($field:ident),* }) => {
        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    $(.field(stringify!($field), &self.$field))*
                    .finish()
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                true $(&& self.$field == other.$field)*
            }
        }

        impl Eq for $name {}
    };
}

carrying_authorizer!(PathCheck { authorizer, path });
carrying_authorizer!(GroupCheck { authorizer, group });
carrying_authorizer!(Resource { authorizer, check });

impl Opaque for Authorizer {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

impl Opaque for PathCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.PathCheck"
    }
}

impl Opaque for GroupCheck {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.GroupCheck"
    }
}

impl Opaque for Resource {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.ResourceCheck"
    }
}

impl Opaque for Decision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

/// The `authorizer` variable of a request whose user `authorize` answers for.
pub fn authorizer(authorize: Arc<dyn Authorize>) -> Value {
    Value::Opaque(Arc::new(Authorizer {
        authorize,
        principal: Principal::Requester,
    }))
}

/// The `authorizer.requestResource` variable: a check of the request's own resource,
/// subresource, namespace and name (upstream's `NewResourceAuthorizerVal`).
pub fn request_resource(authorize: Arc<dyn Authorize>, check: ResourceCheck) -> Value {
    Value::Opaque(Arc::new(Resource {
        authorizer: Authorizer {
            authorize,
            principal: Principal::Requester,
        },
        check,
    }))
}

pub(super) fn register(env: &mut Env) {
    let with_string: [(&str, cel::common::functions::Function); 9] = [
        ("path", value_overload!(path)),
        ("group", value_overload!(group)),
        ("resource", value_overload!(resource)),
        ("subresource", value_overload!(subresource)),
        ("namespace", value_overload!(namespace)),
        ("name", value_overload!(name)),
        ("fieldSelector", value_overload!(field_selector)),
        ("labelSelector", value_overload!(label_selector)),
        ("check", value_overload!(check)),
    ];
    for (function, f) in with_string {
        let _ = env.add_member_overload(
            function,
            &format!("authz_{function}"),
            DYN_TYPE,
            vec![STRING_TYPE],
            f,
        );
    }
    let _ = env.add_member_overload(
        "serviceAccount",
        "authz_serviceAccount",
        DYN_TYPE,
        vec![STRING_TYPE, STRING_TYPE],
        value_overload!(service_account),
    );
    let accessors: [(&str, cel::common::functions::Function); 4] = [
        ("allowed", value_overload!(allowed)),
        ("reason", value_overload!(reason)),
        ("errored", value_overload!(errored)),
        ("error", value_overload!(error)),
    ];
    for (function, f) in accessors {
        let _ =
            env.add_member_overload(function, &format!("authz_{function}"), DYN_TYPE, vec![], f);
    }
}

/// The receiver of a call of `function` as a `T`.
fn receiver<'a, T: Opaque>(function: &str, args: &'a [Value]) -> Result<&'a T, ExecutionError> {
    match args.first() {
        Some(Value::Opaque(o)) => o.downcast_ref::<T>().ok_or_else(|| no_overload(function)),
        _ => Err(no_overload(function)),
    }
}

fn opaque(value: impl Opaque) -> Result<Value, ExecutionError> {
    Ok(Value::Opaque(Arc::new(value)))
}

/// What parsing a selector of `length` bytes costs beyond its call node: a list, a traversal of
/// the text and a requirement (a struct and a list) per two bytes (`selectorCostEstimate`:
/// `ListCreateBaseCost` 10, `StringTraversalCostFactor` 0.1, `StructCreateBaseCost` 40).
fn selector_cost(length: u64) -> u64 {
    10 + length.div_ceil(10) + length.div_ceil(2) * (10 + 40) - 1
}

fn path(args: &[Value]) -> Result<Value, ExecutionError> {
    let authorizer = receiver::<Authorizer>("path", args)?;
    let path = string_arg("path", args, 1)?;
    if path.trim().is_empty() {
        return Err(ExecutionError::function_error(
            "path",
            "path must not be empty",
        ));
    }
    opaque(PathCheck {
        authorizer: authorizer.clone(),
        path: path.to_owned(),
    })
}

fn group(args: &[Value]) -> Result<Value, ExecutionError> {
    let authorizer = receiver::<Authorizer>("group", args)?;
    opaque(GroupCheck {
        authorizer: authorizer.clone(),
        group: string_arg("group", args, 1)?.to_owned(),
    })
}

fn service_account(args: &[Value]) -> Result<Value, ExecutionError> {
    let authorizer = receiver::<Authorizer>("serviceAccount", args)?;
    let namespace = string_arg("serviceAccount", args, 1)?;
    let name = string_arg("serviceAccount", args, 2)?;
    let invalid = |what: &str| ExecutionError::function_error("serviceAccount", what);
    // Upstream: ValidateServiceAccountName (a DNS subdomain), ValidateNamespaceName (a label).
    if !crate::names::is_dns_subdomain(name) {
        return Err(invalid("Invalid service account name"));
    }
    if !crate::names::is_dns_label(namespace) {
        return Err(invalid("Invalid service account namespace"));
    }
    opaque(Authorizer {
        authorize: Arc::clone(&authorizer.authorize),
        principal: Principal::ServiceAccount {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        },
    })
}

fn resource(args: &[Value]) -> Result<Value, ExecutionError> {
    let group = receiver::<GroupCheck>("resource", args)?;
    let resource = string_arg("resource", args, 1)?;
    if resource.trim().is_empty() {
        return Err(ExecutionError::function_error(
            "resource",
            "resource must not be empty",
        ));
    }
    opaque(Resource {
        authorizer: group.authorizer.clone(),
        check: ResourceCheck {
            group: group.group.clone(),
            resource: resource.to_owned(),
            ..ResourceCheck::default()
        },
    })
}

/// A copy of the receiving resource check with one field set from the argument.
fn refine(
    function: &str,
    args: &[Value],
    set: fn(&mut ResourceCheck, String),
) -> Result<Value, ExecutionError> {
    let mut refined = receiver::<Resource>(function, args)?.clone();
    set(
        &mut refined.check,
        string_arg(function, args, 1)?.to_owned(),
    );
    opaque(refined)
}

fn subresource(args: &[Value]) -> Result<Value, ExecutionError> {
    refine("subresource", args, |c, v| c.subresource = v)
}

fn namespace(args: &[Value]) -> Result<Value, ExecutionError> {
    refine("namespace", args, |c, v| c.namespace = v)
}

fn name(args: &[Value]) -> Result<Value, ExecutionError> {
    refine("name", args, |c, v| c.name = v)
}

fn field_selector(args: &[Value]) -> Result<Value, ExecutionError> {
    charge(selector_cost(
        string_arg("fieldSelector", args, 1)?.len() as u64
    ))?;
    refine("fieldSelector", args, |c, v| c.field_selector = v)
}

fn label_selector(args: &[Value]) -> Result<Value, ExecutionError> {
    charge(selector_cost(
        string_arg("labelSelector", args, 1)?.len() as u64
    ))?;
    refine("labelSelector", args, |c, v| c.label_selector = v)
}

fn check(args: &[Value]) -> Result<Value, ExecutionError> {
    let verb = string_arg("check", args, 1)?;
    let (authorizer, asked) = match args.first() {
        Some(Value::Opaque(o)) => {
            if let Some(resource) = o.downcast_ref::<Resource>() {
                (
                    &resource.authorizer,
                    Check::Resource(resource.check.clone()),
                )
            } else if let Some(path) = o.downcast_ref::<PathCheck>() {
                (&path.authorizer, Check::Path(path.path.clone()))
            } else {
                return Err(no_overload("check"));
            }
        }
        _ => return Err(no_overload("check")),
    };
    charge(CHECK_COST)?;
    let verdict = authorizer
        .authorize
        .authorize(&authorizer.principal, &asked, verb);
    Ok(Value::Opaque(Arc::new(Decision(verdict))))
}

fn allowed(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        receiver::<Decision>("allowed", args)?.0.allowed,
    ))
}

fn reason(args: &[Value]) -> Result<Value, ExecutionError> {
    let decision = receiver::<Decision>("reason", args)?;
    Ok(Value::String(Arc::new(decision.0.reason.clone())))
}

fn errored(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        receiver::<Decision>("errored", args)?.0.error.is_some(),
    ))
}

fn error(args: &[Value]) -> Result<Value, ExecutionError> {
    let decision = receiver::<Decision>("error", args)?;
    Ok(Value::String(Arc::new(
        decision.0.error.clone().unwrap_or_default(),
    )))
}

#[cfg(test)]
mod tests;
