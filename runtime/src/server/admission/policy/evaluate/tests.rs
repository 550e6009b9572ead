// Upstream: policy/validating/validator_test.go (TestValidate) and admission_test.go: the
// messages, reasons and failure policies of a validation; variables (composition_test.go).

use serde_json::{Value, json};

use super::*;

fn policy(spec: Value) -> Policy {
    serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("policy")
}

fn inputs(object: Value) -> Inputs {
    Inputs {
        object: crate::cel::value::untyped(&object),
        old_object: Cel::Null,
        request: crate::cel::value::untyped(&json!({"operation": "CREATE", "name": "web"})),
        namespace_object: crate::cel::value::untyped(
            &json!({"metadata": {"name": "ns", "labels": {"env": "prod"}}}),
        ),
        authorizer: Vec::new(),
    }
}

fn deployment(replicas: i64) -> Value {
    json!({"metadata": {"name": "web"}, "spec": {"replicas": replicas}})
}

fn messages(outcome: &Outcome) -> Vec<(String, Option<String>)> {
    outcome
        .decisions
        .iter()
        .map(|d| (d.message.clone(), d.reason.clone()))
        .collect()
}

#[test]
fn policy_messages_fall_back_as_upstreams() {
    let p = policy(json!({"validations": [
        {"expression": "object.spec.replicas <= 5"},
        {"expression": "object.spec.replicas <= 4", "message": "  too many  ", "reason": "Forbidden"},
        {"expression": "object.spec.replicas <= 3", "messageExpression": "'has ' + string(object.spec.replicas)"},
        {"expression": "object.spec.replicas <= 2", "message": "fallback", "messageExpression": "1"},
        {"expression": "object.spec.replicas <= 1", "message": "fallback", "messageExpression": "'a\\nb'"},
        {"expression": "object.spec.replicas <= 10"},
    ]}));
    let outcome = validate(&p, &inputs(deployment(6)), &Cel::Null);
    let invalid = Some("Invalid".to_owned());
    assert_eq!(
        messages(&outcome),
        [
            (
                "failed expression: object.spec.replicas <= 5".to_owned(),
                invalid.clone()
            ),
            ("too many".to_owned(), Some("Forbidden".to_owned())),
            ("has 6".to_owned(), invalid.clone()),
            ("fallback".to_owned(), invalid.clone()),
            ("fallback".to_owned(), invalid),
        ]
    );
    assert_eq!(
        outcome
            .decisions
            .iter()
            .map(|d| d.index)
            .collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert!(
        validate(&p, &inputs(deployment(1)), &Cel::Null)
            .decisions
            .is_empty()
    );
}

#[test]
fn policy_errors_follow_the_failure_policy() {
    let spec = json!({"validations": [{"expression": "object.spec.missing > 1"}]});
    let outcome = validate(&policy(spec.clone()), &inputs(deployment(1)), &Cel::Null);
    assert_eq!(
        messages(&outcome),
        [(
            "expression 'object.spec.missing > 1' resulted in error: no such key: missing"
                .to_owned(),
            None
        )]
    );
    let mut ignored = spec;
    ignored["failurePolicy"] = json!("Ignore");
    assert!(
        validate(&policy(ignored), &inputs(deployment(1)), &Cel::Null)
            .decisions
            .is_empty()
    );
}

#[test]
fn policy_variables_params_and_namespace_are_bound() {
    let p = policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "variables": [
            {"name": "most", "expression": "int(params.data.most)"},
            {"name": "over", "expression": "object.spec.replicas > variables.most"},
            {"name": "broken", "expression": "object.nothing"},
        ],
        "validations": [
            {"expression": "!variables.over", "messageExpression": "'at most ' + string(variables.most)"},
            {"expression": "namespaceObject.metadata.labels.env == 'prod'"},
            {"expression": "variables.broken == 1"},
        ]
    }));
    let params = crate::cel::value::untyped(&json!({"data": {"most": "3"}}));
    let outcome = validate(&p, &inputs(deployment(4)), &params);
    assert_eq!(
        messages(&outcome),
        [
            ("at most 3".to_owned(), Some("Invalid".to_owned())),
            (
                "expression 'variables.broken == 1' resulted in error: composited variable \"broken\" fails to evaluate: no such key: nothing".to_owned(),
                None
            ),
        ]
    );
}

#[test]
fn policy_match_conditions_skip_or_fail() {
    let spec = json!({
        "matchConditions": [{"name": "big", "expression": "object.spec.replicas > 2"}],
        "validations": [{"expression": "false"}]
    });
    assert!(
        validate(&policy(spec.clone()), &inputs(deployment(1)), &Cel::Null)
            .decisions
            .is_empty()
    );
    assert_eq!(
        validate(&policy(spec), &inputs(deployment(3)), &Cel::Null)
            .decisions
            .len(),
        1
    );
    let failing = json!({
        "matchConditions": [{"name": "bad", "expression": "object.nope"}],
        "validations": [{"expression": "true"}]
    });
    assert_eq!(
        messages(&validate(
            &policy(failing),
            &inputs(deployment(1)),
            &Cel::Null
        )),
        [(
            "expression 'object.nope' resulted in error: no such key: nope".to_owned(),
            None
        )]
    );
}

#[test]
fn policy_audit_annotations_publish_strings_and_refuse_other_types() {
    let p = policy(json!({"auditAnnotations": [
        {"key": "replicas", "valueExpression": "'replicas: ' + string(object.spec.replicas)"},
        {"key": "none", "valueExpression": "null"},
        {"key": "blank", "valueExpression": "'  '"},
        {"key": "number", "valueExpression": "1"},
    ]}));
    let outcome = validate(&p, &inputs(deployment(2)), &Cel::Null);
    assert_eq!(
        outcome.annotations,
        [("replicas".to_owned(), "replicas: 2".to_owned())]
    );
    assert_eq!(
        outcome.annotation_errors,
        [
            "valueExpression '1' resulted in unsupported return type: int. Return type must be either string or null."
        ]
    );
}

#[test]
fn policy_costs_are_bounded() {
    // Each expression stops at the per-call limit.
    let p = policy(json!({"validations": [
        {"expression": "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, true))))))"},
    ]}));
    let outcome = validate(&p, &inputs(deployment(1)), &Cel::Null);
    assert_eq!(outcome.decisions.len(), 1);
    assert!(
        outcome.decisions[0]
            .message
            .ends_with("resulted in error: operation cancelled: actual cost limit exceeded"),
        "{:?}",
        outcome.decisions
    );
    // Together, expressions stop at the runtime budget.
    let heavy = "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, true))";
    let validations: Vec<Value> = (0..100).map(|_| json!({"expression": heavy})).collect();
    let p = policy(json!({"validations": validations}));
    let outcome = validate_within(&p, &inputs(deployment(1)), &Cel::Null, 5_000);
    assert_eq!(messages(&outcome), [(OUT_OF_BUDGET.to_owned(), None)]);
}
