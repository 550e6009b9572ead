// Upstream: policy/mutating/patch/smd.go (`validatePatch`, `findAtomics`) and
// patch/json_patch.go (a failed `test` leaves the object as it was; other errors are
// prefixed `JSONPath: `).

use serde_json::json;

use super::*;
use crate::schema::JSONSchemaProps;

fn schema() -> JSONSchemaProps {
    serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}
                    },
                    "args": {"type": "array", "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                    "tags": {"type": "object", "additionalProperties": {"type": "string"}}
                }
            }
        }
    }))
    .unwrap_or_else(|e| panic!("schema: {e}"))
}

#[test]
fn apply_configurations_may_not_set_atomic_values() {
    let schema = schema();
    let root = Node::root(Some(&schema), None);
    let mut found = Vec::new();
    atomics(
        &json!({"spec": {"ports": [{"name": "a", "port": 1}], "tags": {"x": "y"}}}),
        root,
        "",
        &mut found,
    );
    assert!(found.is_empty(), "{found:?}");
    atomics(
        &json!({"spec": {"args": ["a"], "selector": {"k": "v"}}}),
        root,
        "",
        &mut found,
    );
    assert_eq!(found, [".spec.args", ".spec.selector"]);
}

#[test]
fn apply_configurations_merge_with_the_kinds_semantics() {
    let schema = schema();
    let root = Node::root(Some(&schema), None);
    let live = json!({"spec": {"ports": [{"name": "a", "port": 1}], "tags": {"x": "1"}}});
    let config = json!({"spec": {"ports": [{"name": "b", "port": 2}], "tags": {"y": "2"}}});
    assert_eq!(
        merge(&live, &config, root),
        json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}], "tags": {"x": "1", "y": "2"}}})
    );
}

#[test]
fn json_patches_apply_and_a_failed_test_changes_nothing() {
    let mut object = json!({"data": {"a": "1"}});
    patched(
        &mut object,
        vec![json!({"op": "add", "path": "/data/b", "value": "2"})],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(object, json!({"data": {"a": "1", "b": "2"}}));
    patched(
        &mut object,
        vec![
            json!({"op": "test", "path": "/data/a", "value": "9"}),
            json!({"op": "remove", "path": "/data/a"}),
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(object, json!({"data": {"a": "1", "b": "2"}}));
    let error = patched(
        &mut object,
        vec![json!({"op": "remove", "path": "/data/missing"})],
    )
    .unwrap_err();
    assert!(error.starts_with("JSONPath: "), "{error}");
}

#[test]
fn refusals_name_the_policy_and_binding() {
    let error = PolicyError {
        policy: "p".to_owned(),
        binding: Some("b".to_owned()),
        message: "expression 'x' resulted in error: no such key: y".to_owned(),
        invalid: true,
    };
    assert_eq!(
        error.text(),
        "policy 'p' with binding 'b' denied request: expression 'x' resulted in error: no such key: y"
    );
    let error = PolicyError {
        binding: None,
        ..error
    };
    assert!(error.text().starts_with("policy \"p\" denied request: "));
}
