//! The declarations upstream writes by hand for admission expressions' `request` (an
//! AdmissionRequest without `uid`, `object` and `oldObject`) and `namespaceObject` (a Namespace
//! without its managed fields and owner references): closed objects, so a misspelt field is an
//! `undefined field` error when a policy is written or type-checked. `authorizer` and
//! `authorizer.requestResource` are of the authz library's types, whose functions `overloads`
//! declares, so a check built with the wrong arguments is a `found no matching overload` error.
//!
//! Upstream: `apiserver/pkg/admission/plugin/cel/compile.go` (`BuildRequestType`,
//! `BuildNamespaceType`, `createEnvForOpts`), `apiserver/pkg/cel/library/authz.go`.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use super::checker::Variable;
use super::types::{Decl, MAX_REQUEST_BYTES, Shape, Type};

fn scalar(t: Type) -> Arc<Decl> {
    Arc::new(Decl::typed(t))
}

fn string() -> Arc<Decl> {
    scalar(Type::String)
}

fn list_of(items: Arc<Decl>) -> Arc<Decl> {
    Arc::new(Decl {
        name: String::new(),
        shape: Shape::List(items),
        max_elements: MAX_REQUEST_BYTES / 3,
        min_size: 2,
    })
}

fn map_of(values: Arc<Decl>) -> Arc<Decl> {
    Arc::new(Decl {
        name: String::new(),
        shape: Shape::Map(values),
        max_elements: MAX_REQUEST_BYTES / 8,
        min_size: 2,
    })
}

fn object(name: &str, fields: &[(&str, Arc<Decl>)]) -> Arc<Decl> {
    Arc::new(Decl {
        name: name.to_owned(),
        shape: Shape::Object {
            fields: fields
                .iter()
                .map(|(n, d)| ((*n).to_owned(), Arc::clone(d)))
                .collect::<BTreeMap<_, _>>(),
            open: false,
        },
        max_elements: 0,
        min_size: 2,
    })
}

static REQUEST: LazyLock<Arc<Decl>> = LazyLock::new(|| {
    let gvk = object(
        "kubernetes.GroupVersionKind",
        &[
            ("group", string()),
            ("version", string()),
            ("kind", string()),
        ],
    );
    let gvr = object(
        "kubernetes.GroupVersionResource",
        &[
            ("group", string()),
            ("version", string()),
            ("resource", string()),
        ],
    );
    let user = object(
        "kubernetes.UserInfo",
        &[
            ("username", string()),
            ("uid", string()),
            ("groups", list_of(string())),
            ("extra", map_of(list_of(string()))),
        ],
    );
    object(
        "kubernetes.AdmissionRequest",
        &[
            ("kind", Arc::clone(&gvk)),
            ("resource", Arc::clone(&gvr)),
            ("subResource", string()),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", string()),
            ("name", string()),
            ("namespace", string()),
            ("operation", string()),
            ("userInfo", user),
            ("dryRun", scalar(Type::Bool)),
            ("options", scalar(Type::Dyn)),
        ],
    )
});

static NAMESPACE: LazyLock<Arc<Decl>> = LazyLock::new(|| {
    let spec = object(
        "kubernetes.NamespaceSpec",
        &[("finalizers", list_of(string()))],
    );
    let condition = object(
        "kubernetes.NamespaceCondition",
        &[
            ("status", string()),
            ("type", string()),
            ("lastTransitionTime", scalar(Type::Timestamp)),
            ("message", string()),
            ("reason", string()),
        ],
    );
    let status = object(
        "kubernetes.NamespaceStatus",
        &[("conditions", list_of(condition)), ("phase", string())],
    );
    let metadata = object(
        "kubernetes.NamespaceMetadata",
        &[
            ("name", string()),
            ("generateName", string()),
            ("namespace", string()),
            ("labels", map_of(string())),
            ("annotations", map_of(string())),
            ("UID", string()),
            ("creationTimestamp", scalar(Type::Timestamp)),
            ("deletionGracePeriodSeconds", scalar(Type::Int)),
            ("deletionTimestamp", scalar(Type::Timestamp)),
            ("generation", scalar(Type::Int)),
            ("resourceVersion", string()),
            ("finalizers", list_of(string())),
        ],
    );
    object(
        "kubernetes.Namespace",
        &[("metadata", metadata), ("spec", spec), ("status", status)],
    )
});

/// The `authorizer` variable's name.
const AUTHORIZER: &str = "authorizer";
/// The check of the request's own resource, a variable of its own upstream.
const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// The variable `name` of an admission expression: `request` and `namespaceObject` with their
/// declarations, `authorizer` and `authorizer.requestResource` of the authz library's types
/// (`kubernetes.authorization.Authorizer`, `...ResourceCheck`), any other dyn.
pub fn variable(name: &str) -> Variable {
    let opaque = |ty: &'static str| Variable {
        name: name.to_owned(),
        ty: Type::Opaque(ty, Vec::new()),
        decl: None,
    };
    match name {
        "request" => Variable::declared(name, Arc::clone(&REQUEST)),
        "namespaceObject" => Variable::declared(name, Arc::clone(&NAMESPACE)),
        AUTHORIZER => opaque("kubernetes.authorization.Authorizer"),
        REQUEST_RESOURCE => opaque("kubernetes.authorization.ResourceCheck"),
        other => Variable::dyn_named(other),
    }
}

/// The variables `names` name ([`variable`]), with `authorizer.requestResource` beside
/// `authorizer`, as upstream declares both (`plugin/cel/compile.go`, `createEnvForOpts`).
pub fn variables(names: &[&str]) -> Vec<Variable> {
    let mut variables: Vec<Variable> = names.iter().map(|n| variable(n)).collect();
    if names.contains(&AUTHORIZER) && !names.contains(&REQUEST_RESOURCE) {
        variables.push(variable(REQUEST_RESOURCE));
    }
    variables
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::compile_typed;

    // Upstream: `library/authz.go` declares the checks' functions on the library's types, so a
    // call with the wrong arguments is cel-go's `found no matching overload`.
    #[test]
    fn authorizer_checks_are_typed() {
        let variables = variables(&["object", "authorizer"]);
        for source in [
            "authorizer.group('apps').resource('deployments').namespace('ns').name('x').check('get').allowed()",
            "authorizer.path('/healthz').check('get').reason() == ''",
            "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').subresource('log').fieldSelector('a=b').labelSelector('c').check('get').errored()",
            "authorizer.requestResource.check('create').error() == ''",
            "authorizer.group(object.spec.group).resource('x').check('list').allowed()",
        ] {
            let program =
                compile_typed(source, &variables).unwrap_or_else(|e| panic!("{source}: {e}"));
            assert!(
                matches!(program.result_type(), Type::Bool | Type::String),
                "{source}"
            );
        }
        for (source, message) in [
            (
                "authorizer.group(1)",
                "found no matching overload for 'group' applied to 'kubernetes.authorization.Authorizer.(int)'",
            ),
            (
                "authorizer.path('/x').resource('pods')",
                "found no matching overload for 'resource' applied to 'kubernetes.authorization.PathCheck.(string)'",
            ),
            (
                "authorizer.requestResource.check('get').allowed() == 'yes'",
                "found no matching overload for '_==_' applied to '(bool, string)'",
            ),
        ] {
            let error = compile_typed(source, &variables)
                .err()
                .unwrap_or_else(|| panic!("{source} compiled"));
            assert!(error.0.contains(message), "{source}: {error}");
        }
        let program =
            compile_typed("authorizer.group('')", &variables).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            program.result_type().to_string(),
            "kubernetes.authorization.GroupCheck"
        );
    }

    // Upstream's declarations are closed: a field they lack is `undefined field`.
    #[test]
    fn request_and_namespace_are_typed() {
        let variables = [
            variable("request"),
            variable("namespaceObject"),
            variable("object"),
        ];
        for source in [
            "request.userInfo.username == 'a' && 'g' in request.userInfo.groups",
            "request.operation == 'CREATE' && request.kind.kind == object.kind",
            "namespaceObject.metadata.labels['env'] == 'prod'",
            "has(request.dryRun) && request.options.anything == 1",
        ] {
            assert!(compile_typed(source, &variables).is_ok(), "{source}");
        }
        let error = compile_typed("request.usernam == 'a'", &variables)
            .err()
            .map(|e| e.0);
        assert_eq!(
            error.as_deref(),
            Some(
                "ERROR: <input>:1:8: undefined field 'usernam'\n | request.usernam == 'a'\n | .......^"
            )
        );
    }
}
