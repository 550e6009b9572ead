// Upstream: pkg/apis/admissionregistration/validation/validation_test.go
// (TestValidateValidatingAdmissionPolicy, TestValidateValidatingAdmissionPolicyBinding).

use serde_json::{Value, json};

use super::*;

const RELEASE: KubeVersion = KubeVersion::new(1, 34);

fn texts(causes: &[StatusCause]) -> Vec<String> {
    causes.iter().map(|c| c.to_string()).collect()
}

fn valid_policy() -> Value {
    json!({
        "metadata": {"name": "replicas.example.com"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"], "scope": "*"
                }]
            },
            "validations": [{"expression": "object.spec.replicas <= 5"}]
        }
    })
}

#[test]
fn valid_policies_and_bindings_pass() {
    assert_eq!(
        texts(&check_policy(&valid_policy(), RELEASE)),
        Vec::<String>::new()
    );
    let binding =
        json!({"spec": {"policyName": "replicas.example.com", "validationActions": ["Deny"]}});
    assert_eq!(
        texts(&check_binding(&binding, RELEASE)),
        Vec::<String>::new()
    );
}

#[test]
fn policy_expressions_that_do_not_compile_are_refused() {
    let mut policy = valid_policy();
    policy["spec"]["validations"][0]["expression"] = json!("foo.bar > 1");
    assert_eq!(
        texts(&check_policy(&policy, RELEASE)),
        [
            "spec.validations[0].expression: Invalid value: \"foo.bar > 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo.bar > 1\n | ^"
        ]
    );
    // `params` is declared only with a paramKind.
    policy["spec"]["validations"][0]["expression"] = json!("params.x == 1");
    assert_eq!(check_policy(&policy, RELEASE).len(), 1);
    policy["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
    assert_eq!(texts(&check_policy(&policy, RELEASE)), Vec::<String>::new());
}

// Upstream `plugin/cel/compile.go` (`CompileCELExpression`): an expression whose type is not
// among its ReturnTypes is refused: validations and match conditions bool, message
// expressions string, audit annotations string or null. A dyn result is let through here.
#[test]
fn policy_expressions_of_the_wrong_type_are_refused() {
    let mut policy = valid_policy();
    policy["spec"]["validations"][0]["expression"] = json!("1 + 2");
    policy["spec"]["validations"][0]["messageExpression"] = json!("42");
    policy["spec"]["auditAnnotations"] = json!([
        {"key": "a", "valueExpression": "true"},
        {"key": "b", "valueExpression": "object.metadata.name"},
        {"key": "c", "valueExpression": "null"}
    ]);
    policy["spec"]["matchConditions"] = json!([
        {"name": "m", "expression": "'yes'"},
        {"name": "n", "expression": "object.metadata.name == 'x'"}
    ]);
    assert_eq!(
        texts(&check_policy(&policy, RELEASE)),
        [
            "spec.matchConditions[0].expression: Invalid value: \"'yes'\": must evaluate to bool",
            "spec.validations[0].expression: Invalid value: \"1 + 2\": must evaluate to bool",
            "spec.validations[0].messageExpression: Invalid value: \"42\": must evaluate to string",
            "spec.auditAnnotations[0].valueExpression: Invalid value: \"true\": must evaluate to one of [string null_type]",
        ]
    );
    // A type error inside an expression is a compile error.
    policy["spec"]["validations"][0]["expression"] =
        json!("object.spec.replicas + 'a' > 'b' && 1 + 'a' == 2");
    policy["spec"]["validations"][0]["messageExpression"] = json!("'ok'");
    policy["spec"]["auditAnnotations"] = json!([{"key": "b", "valueExpression": "'v'"}]);
    policy["spec"]["matchConditions"] = json!([]);
    assert_eq!(
        texts(&check_policy(&policy, RELEASE)),
        [
            "spec.validations[0].expression: Invalid value: \"object.spec.replicas + 'a' > 'b' && 1 + 'a' == 2\": compilation failed: ERROR: <input>:1:39: found no matching overload for '_+_' applied to '(int, string)'\n | object.spec.replicas + 'a' > 'b' && 1 + 'a' == 2\n | ......................................^"
        ]
    );
}

#[test]
fn policy_specs_are_checked_with_upstreams_messages() {
    let policy = json!({"metadata": {"name": "p"}, "spec": {
        "failurePolicy": "Never",
        "paramKind": {"apiVersion": "a/b/c", "kind": ""},
        "matchConstraints": {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
            "resourceRules": [{"apiGroups": ["*", "apps"], "apiVersions": ["v1"], "operations": ["MAKE"], "resources": []}]},
        "variables": [{"name": "1x", "expression": "true"}],
        "validations": [{"expression": "true", "message": "a\nb", "reason": "NotFound"}],
    }});
    assert_eq!(
        texts(&check_policy(&policy, RELEASE)),
        [
            "spec.failurePolicy: Unsupported value: \"Never\": supported values: \"Fail\", \"Ignore\"",
            "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
            "spec.paramKind.kind: Required value",
            "spec.matchConstraints.resourceRules[0].operations[0]: Unsupported value: \"MAKE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
            "spec.matchConstraints.resourceRules[0].apiGroups: Invalid value: [\"*\",\"apps\"]: if '*' is present, must not specify other API groups",
            "spec.matchConstraints.resourceRules[0].resources: Required value",
            "spec.variables[0].name: Invalid value: \"1x\": name is not a valid CEL identifier",
            "spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain line breaks",
            "spec.validations[0].reason: Unsupported value: \"NotFound\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"",
        ]
    );
    let empty = json!({"metadata": {"name": "p"}, "spec": {"failurePolicy": "Fail"}});
    assert_eq!(
        texts(&check_policy(&empty, RELEASE)),
        [
            "spec.matchConstraints: Required value",
            "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
            "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
        ]
    );
}

#[test]
fn bindings_are_checked_with_upstreams_messages() {
    let binding = json!({"spec": {
        "paramRef": {"name": "a/b", "selector": {}},
        "validationActions": ["Deny", "Warn", "Deny", "Block"]
    }});
    assert_eq!(
        texts(&check_binding(&binding, RELEASE)),
        [
            "spec.policyName: Required value",
            "spec.paramRef.name: Invalid value: \"a/b\": may not contain '/'",
            "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
            "spec.paramRef.parameterNotFoundAction: Required value",
            "spec.validationActions[2]: Duplicate value: \"Deny\"",
            "spec.validationActions[3]: Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"",
            "spec.validationActions: Invalid value: [\"Deny\",\"Warn\",\"Deny\",\"Block\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ]
    );
    let none = json!({"spec": {"policyName": "p", "paramRef": {"parameterNotFoundAction": "Deny"}, "validationActions": []}});
    assert_eq!(
        texts(&check_binding(&none, RELEASE)),
        [
            "spec.paramRef: Required value: one of name or selector must be specified",
            "spec.validationActions: Required value: at least one validation action is required",
        ]
    );
}

/// A mutating policy with `mutations`.
fn mutating_policy(mutations: Value) -> Value {
    json!({
        "metadata": {"name": "labels.example.com"},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]
                }]
            },
            "mutations": mutations
        }
    })
}

fn apply(expression: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}})
}

fn patch(expression: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expression}})
}

// Upstream: `validateMutation` compiles each expression with `CompileCELExpression` against
// the accessor's `ReturnTypes` (`Object`, `list(JSONPatch)`), which refuses a result type
// that is not exactly the one required (plugin/cel/compile.go).
#[test]
fn mutating_policy_expressions_of_the_wrong_type_are_refused() {
    let release = KubeVersion::new(1, 36);
    let good = mutating_policy(json!([
        apply("Object{metadata: Object.metadata{labels: {'a': 'b'}}}"),
        apply("has(object.data) ? Object{data: {'x': 'y'}} : Object{}"),
        // dyn: let through, the value is checked when the policy runs.
        apply("variables.config"),
        patch("[JSONPatch{op: 'add', path: '/data/x', value: request.name}]"),
        patch(
            "object.data.size() > 0 ? [JSONPatch{op: 'remove', path: '/data'}] : [JSONPatch{op: 'test', path: '/a', value: 1}]"
        ),
        // A list of literals the checker types dyn: cel-go's is `list(JSONPatch)`.
        patch("object.spec.ports.map(p, JSONPatch{op: 'remove', path: '/spec/ports/0'})"),
    ]));
    assert_eq!(
        texts(&check_mutating_policy(&good, release)),
        Vec::<String>::new()
    );

    let bad = mutating_policy(json!([
        apply("\"I'm a teapot!\""),
        apply("Object.spec{replicas: 1}"),
        apply("{'a': 1}"),
        patch("[]"),
        patch("JSONPatch{op: 'remove', path: '/data'}"),
        patch("[Object{}]"),
        patch("request.name"),
        apply("[Object{}]"),
        apply("{'a': object.metadata.name}"),
        patch("[{'op': 'remove'}]"),
        patch("object.spec.ports.map(p, {'op': 'remove', 'path': p.name})"),
    ]));
    assert_eq!(
        texts(&check_mutating_policy(&bad, release)),
        [
            "spec.mutations[0].applyConfiguration.expression: Invalid value: \"\\\"I'm a teapot!\\\"\": must evaluate to Object but got string",
            "spec.mutations[1].applyConfiguration.expression: Invalid value: \"Object.spec{replicas: 1}\": must evaluate to Object but got Object.spec",
            "spec.mutations[2].applyConfiguration.expression: Invalid value: \"{'a': 1}\": must evaluate to Object but got map(string, int)",
            "spec.mutations[3].jsonPatch.expression: Invalid value: \"[]\": must evaluate to list(JSONPatch) but got list(dyn)",
            "spec.mutations[4].jsonPatch.expression: Invalid value: \"JSONPatch{op: 'remove', path: '/data'}\": must evaluate to list(JSONPatch) but got JSONPatch",
            "spec.mutations[5].jsonPatch.expression: Invalid value: \"[Object{}]\": must evaluate to list(JSONPatch) but got list(Object)",
            "spec.mutations[6].jsonPatch.expression: Invalid value: \"request.name\": must evaluate to list(JSONPatch) but got string",
            "spec.mutations[7].applyConfiguration.expression: Invalid value: \"[Object{}]\": must evaluate to Object but got list(Object)",
            "spec.mutations[8].applyConfiguration.expression: Invalid value: \"{'a': object.metadata.name}\": must evaluate to Object but got map(string, dyn)",
            "spec.mutations[9].jsonPatch.expression: Invalid value: \"[{'op': 'remove'}]\": must evaluate to list(JSONPatch) but got list(map(string, string))",
            "spec.mutations[10].jsonPatch.expression: Invalid value: \"object.spec.ports.map(p, {'op': 'remove', 'path': p.name})\": must evaluate to list(JSONPatch) but got list(map(string, dyn))",
        ]
    );
}
