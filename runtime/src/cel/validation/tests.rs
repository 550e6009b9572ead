use serde_json::json;

use super::*;

fn schema(value: Value) -> JSONSchemaProps {
    serde_json::from_value(value).expect("schema parses")
}

fn causes(schema: &JSONSchemaProps, object: Value, old: Option<Value>) -> Vec<String> {
    Validator::new(schema)
        .expect("rules")
        .validate(&object, old.as_ref(), false)
        .into_iter()
        .map(|c| {
            format!(
                "{}|{}|{}",
                c.reason.map(|r| format!("{r:?}")).unwrap_or_default(),
                c.field.unwrap_or_default(),
                c.message.unwrap_or_default()
            )
        })
        .collect()
}

fn widget() -> JSONSchemaProps {
    schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('w')", "message": "name must start with w"}
        ],
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.min <= self.max"},
                    {"rule": "self.min >= 0", "messageExpression": "'min is ' + string(self.min)"},
                    {"rule": "!has(self.forbidden)", "reason": "FieldValueForbidden",
                     "message": "forbidden is forbidden", "fieldPath": ".forbidden"},
                    {"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"}
                ],
                "properties": {
                    "min": {"type": "integer"},
                    "max": {"type": "integer"},
                    "mode": {"type": "string"},
                    "forbidden": {"type": "string"},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "x-kubernetes-validations": [
                                {"rule": "self.port == oldSelf.port", "message": "port is immutable"}
                            ],
                            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}
                        }
                    },
                    "labels": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "string",
                            "x-kubernetes-validations": [{"rule": "size(self) < 4"}]
                        }
                    }
                }
            }
        }
    }))
}

// Upstream: apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go
// (validateExpressions, fieldErrorForReason, ruleMessageOrDefault).
#[test]
fn failures_read_as_upstream_writes_them() {
    let object = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"},
        "spec": {"min": -2, "max": -5, "mode": "a", "forbidden": "yes",
                 "labels": {"a": "long value"}}
    });
    assert_eq!(
        causes(&widget(), object, None),
        vec![
            "FieldValueInvalid|<nil>|Invalid value: \"object\": name must start with w",
            "FieldValueInvalid|spec|Invalid value: \"object\": failed rule: self.min <= self.max",
            "FieldValueInvalid|spec|Invalid value: \"object\": min is -2",
            "FieldValueForbidden|spec.forbidden|Forbidden: forbidden is forbidden",
            "FieldValueInvalid|spec.labels[a]|Invalid value: \"string\": failed rule: size(self) < 4",
        ]
    );
}

#[test]
fn transition_rules_run_where_an_old_value_correlates() {
    let old = json!({"metadata": {"name": "w"},
        "spec": {"min": 0, "max": 1, "mode": "a",
                 "ports": [{"name": "http", "port": 80}, {"name": "x", "port": 1}]}});
    let new = json!({"metadata": {"name": "w"},
        "spec": {"min": 0, "max": 1, "mode": "b",
                 "ports": [{"name": "x", "port": 2}, {"name": "http", "port": 80},
                           {"name": "new", "port": 5}]}});
    assert_eq!(
        causes(&widget(), new.clone(), Some(old)),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": mode is immutable",
            "FieldValueInvalid|spec.ports[0]|Invalid value: \"object\": port is immutable",
        ]
    );
    // A create has no old value: transition rules do not run.
    assert_eq!(causes(&widget(), new, None), Vec::<String>::new());
}

// Upstream: validation.go (shouldRatchetError): with CRDValidationRatcheting, a failure of a
// rule that is not a transition rule is let go where the value is unchanged, or, where old
// values do not correlate (an atomic list's items), where the nearest correlated ancestor is.
#[test]
fn ratcheting_lets_unchanged_values_keep_failing() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]},
            "b": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 10"}]},
            "list": {"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}},
            "frozen": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "frozen"}]}
        }}}
    }));
    let validator = Validator::new(&s).expect("rules");
    let run = |new: Value, old: Value, ratchet: bool| -> Vec<String> {
        validator
            .validate(&new, Some(&old), ratchet)
            .into_iter()
            .map(|c| c.field.unwrap_or_default())
            .collect()
    };
    let old = json!({"spec": {"a": 50, "b": 1, "list": ["long"], "frozen": 1}});
    // `a` and the list keep their bad values; `b` changes to a bad one.
    let new = json!({"spec": {"a": 50, "b": 60, "list": ["long"], "frozen": 1}});
    assert_eq!(run(new.clone(), old.clone(), true), vec!["spec.b"]);
    assert_eq!(
        run(new, old.clone(), false),
        vec!["spec.a", "spec.b", "spec.list[0]"]
    );
    // A changed list: its items are held to the rules again.
    let new = json!({"spec": {"a": 1, "b": 1, "list": ["long", "x"], "frozen": 2}});
    assert_eq!(run(new, old, true), vec!["spec.list[0]", "spec.frozen"]);
}

#[test]
fn optional_old_self_runs_on_create_with_an_optional() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{
                "rule": "!oldSelf.hasValue() || self.v >= oldSelf.value().v",
                "optionalOldSelf": true, "message": "v may not decrease"
            }, {
                "rule": "oldSelf.hasValue() || self.v < 10", "optionalOldSelf": true,
                "message": "v starts below 10"
            }],
            "properties": {"v": {"type": "integer"}}}}
    }));
    assert_eq!(
        causes(&s, json!({"spec": {"v": 11}}), None),
        vec!["FieldValueInvalid|spec|Invalid value: \"object\": v starts below 10"]
    );
    assert_eq!(
        causes(
            &s,
            json!({"spec": {"v": 5}}),
            Some(json!({"spec": {"v": 6}}))
        ),
        vec!["FieldValueInvalid|spec|Invalid value: \"object\": v may not decrease"]
    );
}

// Upstream: validation.go (evalMessageExpression): a message expression that fails, or yields
// an empty string, falls back to the rule's message.
#[test]
fn message_expressions_fall_back_to_the_message() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.?limit.orValue(0) <= 10", "message": "limit at most 10",
                 "messageExpression": "string(1 / (self.limit - self.limit))"},
                {"rule": "self.?limit.orValue(0) <= 5", "messageExpression": "' '"}
            ],
            "properties": {"limit": {"type": "integer"}}}}
    }));
    assert_eq!(
        causes(&s, json!({"spec": {"limit": 11}}), None),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": limit at most 10",
            "FieldValueInvalid|spec|Invalid value: \"object\": failed rule: self.?limit.orValue(0) <= 5",
        ]
    );
    assert_eq!(causes(&s, json!({"spec": {}}), None), Vec::<String>::new());
}

#[test]
fn runtime_errors_name_the_rule() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.missing == 1"}],
            "properties": {"missing": {"type": "integer"}}}}
    }));
    assert_eq!(
        causes(&s, json!({"spec": {}}), None),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": no such key: missing evaluating rule: self.missing == 1"
        ]
    );
}

#[test]
fn a_rule_past_the_per_call_limit_stops_validation() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.xs.all(a, self.xs.all(b, self.xs.all(c, a + b + c >= 0)))"},
                {"rule": "false"}
            ],
            "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}}
    }));
    let xs: Vec<i64> = (0..60).collect();
    assert_eq!(
        causes(&s, json!({"spec": {"xs": xs}}), None),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.xs.all(a, self.xs.all(b, self.xs.all(c, a + b + c >= 0)))"
        ]
    );
}

// Upstream: validation.go (validateExpressions): the rules of one object share
// `RuntimeCELCostBudget`; past it no further rule runs.
#[test]
fn the_rules_of_an_object_share_one_budget() {
    let rule = json!({"rule": "self.xs.all(a, self.xs.all(b, a + b >= 0))"});
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": vec![rule; 40],
            "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}}
    }));
    let xs: Vec<i64> = (0..300).collect();
    assert_eq!(
        causes(&s, json!({"spec": {"xs": xs}}), None),
        vec![
            "FieldValueInvalid|spec|Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"
        ]
    );
}

#[test]
fn rules_that_do_not_compile_are_found_with_their_path() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.a == "}, {"rule": "self.a == b"}],
            "properties": {"a": {"type": "string"}}}}
    }));
    let errors = compile_errors(&s);
    assert_eq!(errors.len(), 2);
    assert_eq!(
        errors[0].path,
        "properties[spec].x-kubernetes-validations[0].rule"
    );
    assert!(
        errors[0]
            .detail
            .starts_with("compilation failed: ERROR: <input>:1:")
    );
    assert_eq!(
        errors[1].detail,
        "compilation failed: ERROR: <input>:1:11: undeclared reference to 'b' (in container '')\n | self.a == b\n | ..........^"
    );
}

// Upstream: cel-go's checker refuses a field the declared type of `self` does not have
// (`undefined field 'x'`), which apiextensions reports as `compilation failed`; a `has()`
// macro is reported at its call's parenthesis, as cel-go's parser places it.
#[test]
fn reads_of_undeclared_fields_do_not_compile() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name != '' && self.spec.size > 0"}],
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.sise > 0"},
                {"rule": "self.items.all(i, has(i.nmae))"},
                {"rule": "self.labels.all(k, self.labels[k].size() > 0) && self.free.anything"},
                {"rule": "self.x__dash__y == 1 && self.items[0].name == ''"}
            ],
            "properties": {
                "size": {"type": "integer"},
                "x-y": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "object",
                    "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}}
    }));
    let errors: Vec<String> = compile_errors(&s)
        .into_iter()
        .map(|e| format!("{}: {}", e.path, e.detail))
        .collect();
    assert_eq!(
        errors,
        vec![
            "properties[spec].x-kubernetes-validations[0].rule: compilation failed: ERROR: <input>:1:5: undefined field 'sise'\n | self.sise > 0\n | ....^",
            "properties[spec].x-kubernetes-validations[1].rule: compilation failed: ERROR: <input>:1:22: undefined field 'nmae'\n | self.items.all(i, has(i.nmae))\n | .....................^",
        ]
    );
}

// Upstream: apiextensions validation.go (forbidOldSelfValidations): a transition rule under an
// item of a list that is not a map list, or a field of an atomic map, is refused.
#[test]
fn transition_rules_where_old_values_do_not_correlate_are_refused() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "atomic": {"type": "array", "items": {"type": "object",
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                "properties": {"a": {"type": "object",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}},
            "keyed": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k"],
                "items": {"type": "object", "required": ["k"],
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}, {"rule": "self.k != ''"}],
                    "properties": {"k": {"type": "string"}}}},
            "fixed": {"type": "object", "x-kubernetes-map-type": "atomic",
                "properties": {"x": {"type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}
        }}}
    }));
    let errors: Vec<(String, Option<String>)> = compile_errors(&s)
        .into_iter()
        .map(|e| (e.path, e.within))
        .collect();
    assert_eq!(
        errors,
        vec![
            (
                "properties[spec].properties[atomic].items.x-kubernetes-validations[0].rule".to_owned(),
                Some("properties[spec].properties[atomic]".to_owned())
            ),
            (
                "properties[spec].properties[atomic].items.properties[a].x-kubernetes-validations[0].rule".to_owned(),
                Some("properties[spec].properties[atomic]".to_owned())
            ),
            (
                "properties[spec].properties[fixed].properties[x].x-kubernetes-validations[0].rule".to_owned(),
                Some("properties[spec].properties[fixed]".to_owned())
            ),
        ]
    );
}

// Upstream: apiextensions validation.go (the checks of each x-kubernetes-validations entry).
#[test]
fn a_rules_own_fields_are_checked() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "self.a > 0", "message": "two\nlines"},
            {"rule": "self.a\n > 0"},
            {"rule": "self.a > 0", "reason": "Bogus"},
            {"rule": "self.a > 0", "fieldPath": ".b"},
            {"rule": "self.a > 0", "messageExpression": "  "}
        ],
        "properties": {"a": {"type": "integer"}}
    }));
    let causes: Vec<String> = compile_errors(&s)
        .into_iter()
        .filter_map(|e| e.cause)
        .map(|c| c.to_string())
        .collect();
    assert_eq!(
        causes,
        vec![
            "x-kubernetes-validations[0].rule: Required value: rule is not specified",
            "x-kubernetes-validations[1].message: Invalid value: \"two\\nlines\": message must not contain line breaks",
            "x-kubernetes-validations[2].message: Required value: message must be specified if rule contains line breaks",
            "x-kubernetes-validations[3].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
            "x-kubernetes-validations[4].fieldPath: Invalid value: \".b\": fieldPath must be a valid path: does not refer to a valid field",
            "x-kubernetes-validations[5].messageExpression: Required value: messageExpression must be non-empty if specified",
        ]
    );
}

#[test]
fn field_paths_name_properties_and_map_keys() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b.c": {"type": "string"}}},
            "m": {"type": "object", "additionalProperties": {"type": "string"}}
        }
    }));
    assert_eq!(field_path(".a['b.c']", &s).as_deref(), Ok("a.b.c"));
    assert_eq!(field_path(".m['k']", &s).as_deref(), Ok("m[k]"));
    assert_eq!(
        field_path(".nope", &s),
        Err("does not refer to a valid field".to_owned())
    );
    assert_eq!(
        field_path("a", &s),
        Err("expected [ or . but got: a".to_owned())
    );
}

/// The spec corpus: `$KAPI_SPEC_CORPUS`, else `shared/specs` beside the workspace.
fn corpus() -> std::path::PathBuf {
    std::env::var_os("KAPI_SPEC_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/specs")
        })
}

// Every rule of the real CRDs of the corpus (Gateway API, cert-manager, Cluster API-style
// operators of `crds-wild`) compiles, as it does in kube-apiserver, which accepted them.
#[test]
fn every_rule_of_the_corpus_crds_compiles() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for dir in ["crds", "crds-wild"] {
        let Ok(entries) = std::fs::read_dir(corpus().join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("corpus file");
            for document in serde_yaml_ng::Deserializer::from_str(&text) {
                let Ok(crd) =
                    <crate::crd::CustomResourceDefinition as serde::Deserialize>::deserialize(
                        document,
                    )
                else {
                    continue;
                };
                for version in &crd.spec.versions {
                    let Some(schema) = version
                        .schema
                        .as_ref()
                        .and_then(|s| s.open_api_v3_schema.as_ref())
                    else {
                        continue;
                    };
                    checked += 1;
                    for error in schema_errors(schema, false) {
                        let detail = error.cause.and_then(|c| c.message).unwrap_or(error.detail);
                        failures.push(format!(
                            "{path:?} {}: {}: {detail}",
                            version.name, error.path
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 0, "no corpus CRD found under {:?}", corpus());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
