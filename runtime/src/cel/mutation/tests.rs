// Upstream: k8s.io/apiserver/pkg/cel/mutation (the Object and JSONPatch types, jsonpatch
// library tests) and admission/plugin/policy/mutating/patch (json_patch_test.go,
// smd_test.go: what the results become).

use serde_json::json;

use super::*;
use crate::cel::PER_CALL_LIMIT;

fn eval(source: &str, variables: &[(&str, Cel)]) -> Cel {
    let names: Vec<&str> = variables.iter().map(|(n, _)| *n).collect();
    let program = compile(source, &names).unwrap_or_else(|e| panic!("{source}: {e}"));
    program
        .evaluate(variables, PER_CALL_LIMIT)
        .result
        .unwrap_or_else(|e| panic!("{source}: {e:?}"))
}

#[test]
fn object_literals_build_an_apply_configuration() {
    let value = eval(
        r#"Object{metadata: Object.metadata{labels: {"team": "a"}}, spec: Object.spec{replicas: 3, template: Object.spec.template{spec: Object.spec.template.spec{containers: [Object.spec.template.spec.containers{name: "x"}]}}}}"#,
        &[],
    );
    assert_eq!(
        apply_configuration(&value),
        Ok(json!({
            "metadata": {"labels": {"team": "a"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "x"}]}}}
        }))
    );
}

#[test]
fn literals_read_the_request_variables() {
    let object = crate::cel::value::untyped(&json!({"metadata": {"name": "one"}}));
    let value = eval(
        "Object{metadata: Object.metadata{annotations: {'seen': object.metadata.name}}}",
        &[("object", object)],
    );
    assert_eq!(
        apply_configuration(&value),
        Ok(json!({"metadata": {"annotations": {"seen": "one"}}}))
    );
}

// Upstream's sanity check of literal names against field paths
// (`CheckTypeNamesMatchFieldPathNames`): `Object.spec{selector: Object.spec.wrong{}}` is a
// type mismatch.
#[test]
fn literals_must_be_named_by_their_field_path() {
    let value = eval(
        "Object{spec: Object.spec{selector: Object.spec.wrong{}}}",
        &[],
    );
    let error = apply_configuration(&value).unwrap_err();
    assert!(error.starts_with("type mismatch: "), "{error}");
    assert!(error.contains("Object.spec.wrong"), "{error}");
    let value = eval("Object.spec{}", &[]);
    assert!(
        apply_configuration(&value)
            .unwrap_err()
            .starts_with("unsupported return type from ApplyConfiguration expression")
    );
    let value = eval("{'a': 1}", &[]);
    assert!(apply_configuration(&value).is_err());
}

#[test]
fn json_patch_literals_become_operations() {
    let value = eval(
        r#"[JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("kapi.test/tier"), value: "gold"}, JSONPatch{op: "remove", path: "/data/x"}, JSONPatch{op: "replace", path: "/spec", value: Object.spec{replicas: 2}}]"#,
        &[],
    );
    assert_eq!(
        json_patch(&value),
        Ok(vec![
            json!({"op": "add", "path": "/metadata/labels/kapi.test~1tier", "value": "gold"}),
            json!({"op": "remove", "path": "/data/x"}),
            json!({"op": "replace", "path": "/spec", "value": {"replicas": 2}}),
        ])
    );
    assert!(
        json_patch(&eval("JSONPatch{op: 'add'}", &[]))
            .unwrap_err()
            .contains("should evaluate to array")
    );
    assert!(
        json_patch(&eval("[1]", &[]))
            .unwrap_err()
            .contains("array of JSONPatch")
    );
}

#[test]
fn escape_key_escapes_tilde_before_slash() {
    assert_eq!(
        eval("jsonpatch.escapeKey('a~b/c')", &[]),
        Cel::String(Arc::new("a~0b~1c".to_owned()))
    );
}

// cel-go's checker reads a `JSONPatch` literal against the type's declared fields
// (`k8s.io/apiserver/pkg/cel/mutation`: `op`, `path`, `from` strings, `value` dyn).
#[test]
fn json_patch_fields_are_checked_at_compile_time() {
    let error = compile("[JSONPatch{op: 'add', nope: 1}]", &[]).unwrap_err();
    assert!(error.0.contains("undefined field 'nope'"), "{error}");
    let error = compile("[JSONPatch{op: 1, path: '/a'}]", &[]).unwrap_err();
    assert_eq!(
        error.0,
        "ERROR: <input>:1:14: expected type of field 'op' is 'string' but provided type is 'int'\n | [JSONPatch{op: 1, path: '/a'}]\n | .............^"
    );
    assert!(
        compile(
            "[JSONPatch{op: 'add', path: object.p, value: 1}]",
            &["object"]
        )
        .is_ok()
    );
}

// cel-go's checker: a struct literal of a type the environment does not have is an
// undeclared reference; `jsonpatch` is only in the mutation environment.
#[test]
fn unknown_types_and_functions_do_not_compile() {
    let error = compile("Foo{a: 1}", &[]).unwrap_err();
    assert!(
        error
            .0
            .contains("undeclared reference to 'Foo' (in container '')"),
        "{error}"
    );
    assert!(crate::cel::compile("jsonpatch.escapeKey('a')", &[]).is_err());
    assert!(compile("object.spec", &[]).is_err());
}

#[test]
fn mutations_are_bounded_by_the_per_call_limit() {
    let program = compile(
        "Object{spec: Object.spec{items: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(z, x * y * z)))}}",
        &[],
    )
    .expect("compiles");
    let evaluated = program.evaluate(&[], 50);
    assert_eq!(evaluated.result, Err(crate::cel::EvalError::CostLimit));
}
