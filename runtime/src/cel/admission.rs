//! The declarations upstream writes by hand for admission expressions' `request` (an
//! AdmissionRequest without `uid`, `object` and `oldObject`) and `namespaceObject` (a Namespace
//! without its managed fields and owner references): closed objects, so a misspelt field is an
//! `undefined field` error when a policy is written or type-checked.
//!
//! Upstream: `apiserver/pkg/admission/plugin/cel/compile.go` (`BuildRequestType`,
//! `BuildNamespaceType`).

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

/// The variable `name` of an admission expression: `request` and `namespaceObject` with their
/// declarations, any other dyn.
pub fn variable(name: &str) -> Variable {
    match name {
        "request" => Variable::declared(name, Arc::clone(&REQUEST)),
        "namespaceObject" => Variable::declared(name, Arc::clone(&NAMESPACE)),
        other => Variable::dyn_named(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::compile_typed;

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
