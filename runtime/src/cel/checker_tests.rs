use serde_json::json;

use crate::cel::validation::{compile_errors, schema_errors};
use crate::cel::{Decl, compile, compile_declared};
use crate::schema::JSONSchemaProps;

fn schema(value: serde_json::Value) -> JSONSchemaProps {
    serde_json::from_value(value).expect("schema parses")
}

/// A resource with `spec.replicas` (int), `spec.name` (string), `spec.port`
/// (int-or-string), `spec.items` (list of strings) and `spec.labels` (map of strings).
fn widget() -> JSONSchemaProps {
    schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 64},
            "port": {"x-kubernetes-int-or-string": true},
            "created": {"type": "string", "format": "date-time"},
            "timeout": {"type": "string", "format": "duration"},
            "items": {"type": "array", "maxItems": 10,
                      "items": {"type": "string", "maxLength": 16}},
            "labels": {"type": "object", "maxProperties": 10,
                       "additionalProperties": {"type": "string", "maxLength": 16}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}
    }))
}

/// The compile error of `rule` on the widget's root, or `None` when it compiles.
fn error(rule: &str) -> Option<String> {
    let decl = Decl::of_schema(&widget(), true, "selfType");
    compile_declared(rule, &decl, false).err().map(|e| e.0)
}

// cel-go checker/errors.go `noMatchingOverload`: the operator's node (its position in the
// source) and the argument types as FormatCelType writes them.
#[test]
fn an_operator_on_types_it_has_no_overload_for_is_refused() {
    assert_eq!(
        error("self.spec.replicas + 'a' == 'b'").as_deref(),
        Some(
            "ERROR: <input>:1:20: found no matching overload for '_+_' applied to '(int, string)'\n | self.spec.replicas + 'a' == 'b'\n | ...................^"
        )
    );
    assert_eq!(
        error("self.spec.created > 3").as_deref(),
        Some(
            "ERROR: <input>:1:19: found no matching overload for '_>_' applied to '(timestamp, int)'\n | self.spec.created > 3\n | ..................^"
        )
    );
}

// A member call is written `target.(args)` (formatFunctionDeclType with isInstance).
#[test]
fn a_member_call_with_wrong_arguments_is_refused() {
    assert_eq!(
        error("self.spec.name.contains(1)").as_deref(),
        Some(
            "ERROR: <input>:1:24: found no matching overload for 'contains' applied to 'string.(int)'\n | self.spec.name.contains(1)\n | .......................^"
        )
    );
    assert_eq!(
        error("self.spec.items.exists(i, i.startsWith(self.spec.replicas))").map(|e| e
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()),
        Some(
            "ERROR: <input>:1:39: found no matching overload for 'startsWith' applied to 'string.(int)'"
                .to_owned()
        )
    );
}

// cel-go `undefinedField`, `undeclaredReference`, `typeDoesNotSupportFieldSelection` and
// `notAComprehensionRange`.
#[test]
fn fields_names_selections_and_ranges_are_checked() {
    assert_eq!(
        error("self.spec.replicass > 1").as_deref(),
        Some(
            "ERROR: <input>:1:10: undefined field 'replicass'\n | self.spec.replicass > 1\n | .........^"
        )
    );
    assert_eq!(
        error("foo > 1").as_deref(),
        Some(
            "ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo > 1\n | ^"
        )
    );
    assert_eq!(
        error("self.spec.replicas.x == 1").as_deref(),
        Some(
            "ERROR: <input>:1:19: type 'int' does not support field selection\n | self.spec.replicas.x == 1\n | ..................^"
        )
    );
    assert_eq!(
        error("self.spec.name.all(c, c == 'a')")
            .map(|e| e.lines().next().unwrap_or_default().to_owned()),
        Some(
            "ERROR: <input>:1:10: expression of type 'string' cannot be range of a comprehension (must be list, map, or dynamic)"
                .to_owned()
        )
    );
}

// Dyn is permissive: an int-or-string, a value keeping unknown fields and the untyped
// variables of `compile` meet any overload, so nothing upstream accepts is refused.
#[test]
fn dynamic_values_meet_every_overload() {
    for rule in [
        "self.spec.port + 'a' == 'b' || self.spec.port > 1",
        "type(self.spec.port) == string ? self.spec.port.matches('^[0-9]+%$') : self.spec.port < 5",
        "self.spec.extra.anything.deeper == 1",
        "self.spec.labels.all(k, self.spec.labels[k].size() < 10 && k.startsWith('a'))",
        "self.spec.items.map(i, i.size()).sum() < 100",
        "self.spec.items.filter(i, i != '').all(i, i.lowerAscii() == i)",
        "self.spec.created < timestamp('2030-01-01T00:00:00Z') && self.spec.timeout > duration('1s')",
        "self.metadata.name.startsWith('w') && self.apiVersion != '' && self.kind != ''",
        "quantity('1Gi').isGreaterThan(quantity('1Mi')) && isURL('https://x') && ip('1.2.3.4').family() == 4",
        "cidr('10.0.0.0/8').containsIP('10.1.2.3') && sets.contains([1, 2], [1]) && [1, 2].isSorted()",
        "self.spec.?name.orValue('') == '' || optional.of(1).hasValue()",
        "format.dns1123Label().validate(self.spec.name).hasValue() == false",
        "self.spec.items.indexOf('a') >= -1 && self.spec.name.indexOf('a') >= -1",
        "has(self.spec.name) && self.spec.replicas == 1 && 1 < 2.0 && 1u < 2",
        "self.spec.name == null || self.spec == null",
    ] {
        assert_eq!(error(rule), None, "{rule}");
    }
    assert!(compile("a + 'b' == b && a[0] > 1", &["a", "b"]).is_ok());
}

// apiextensions compilation.go: a rule whose type is not bool, and a messageExpression whose
// type is not string, are refused with these texts; a dyn result is let through.
#[test]
fn rules_must_be_bool_and_messages_strings() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.replicas"},
                {"rule": "self.replicas > 1", "messageExpression": "42"},
                {"rule": "self.port", "messageExpression": "self.port"},
                {"rule": "self.replicas > 1", "messageExpression": "'replicas: ' + string(self.replicas)"}
            ],
            "properties": {"replicas": {"type": "integer"},
                           "port": {"x-kubernetes-int-or-string": true}}}}
    }));
    let errors: Vec<String> = compile_errors(&s)
        .into_iter()
        .map(|e| format!("{}: {}", e.path, e.detail))
        .collect();
    assert_eq!(
        errors,
        vec![
            "properties[spec].x-kubernetes-validations[0].rule: cel expression must evaluate to a bool",
            "properties[spec].x-kubernetes-validations[1].messageExpression: messageExpression must evaluate to a string",
        ]
    );
}

// `oldSelf` of a rule with `optionalOldSelf` is an optional of `self`'s type.
#[test]
fn optional_old_self_is_an_optional() {
    let decl = Decl::of_schema(&widget(), true, "selfType");
    assert!(
        compile_declared(
            "!oldSelf.hasValue() || oldSelf.value().spec.replicas <= self.spec.replicas",
            &decl,
            true
        )
        .is_ok()
    );
    assert!(compile_declared("oldSelf.hasValue()", &decl, false).is_err());
}

fn cost_causes(s: &JSONSchemaProps) -> Vec<String> {
    schema_errors(s, false)
        .into_iter()
        .filter_map(|e| e.cause)
        .map(|c| c.to_string())
        .collect()
}

/// A list of integers (bounded by `max_items`) whose items must be unique, quadratically.
fn pairs(max_items: Option<u64>) -> JSONSchemaProps {
    let mut list = json!({"type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.exists_one(y, x == y))"}]});
    if let Some(max) = max_items {
        list["maxItems"] = json!(max);
    }
    schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"values": list}}}}),
    )
}

// apiextensions validation.go: a rule whose estimated cost passes StaticEstimatedCostLimit
// (10,000,000) is forbidden at its `rule` with getCostErrorMessage's text, and so is the
// schema once the total passes StaticEstimatedCRDCostLimit, the rule named as contributing.
#[test]
fn rules_estimated_too_expensive_are_refused_until_bounded() {
    let bounded = pairs(Some(100));
    assert_eq!(cost_causes(&bounded), Vec::<String>::new());
    let unbounded = pairs(None);
    let at = "properties[spec].properties[values].x-kubernetes-validations[0].rule";
    assert_eq!(
        cost_causes(&unbounded),
        vec![
            format!("{at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
            format!("{at}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
            ": Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)".to_owned(),
        ]
    );
    // An unchanged schema's rules are not judged one by one again; the total still is.
    assert_eq!(schema_errors(&unbounded, true).len(), 2);
}

// The estimate follows cel-go's coster: a string traversal costs a tenth per character, a
// comprehension its range's size times one iteration, and a rule under an unbounded list
// runs as many times as its smallest value fits in a 3 MiB request.
#[test]
fn estimates_follow_the_declared_sizes() {
    let decl = Decl::of_schema(&widget(), true, "selfType");
    let max = |rule: &str| {
        compile_declared(rule, &decl, false)
            .expect("compiles")
            .estimated_cost()
            .max
    };
    // Two identifiers, three selections, and a comparison of at most 256 bytes.
    assert_eq!(max("self.spec.name == 'x'"), 1 + 2 + 1);
    assert_eq!(max("self.spec.replicas > 1"), 1 + 2 + 1);
    // `contains`: 26 × 1 traversal units, plus the target's 3.
    assert_eq!(max("self.spec.name.contains('a')"), 3 + 26);
    // k8s library/cost.go: a format's `validate` is priced as a regular expression of the
    // longest pattern (128 characters at 0.25: 32) over the text (26), `isURL` as a plain call,
    // and `join` by the joined string (10 items of 64 bytes, 9 separators: 649 at 0.1).
    assert_eq!(
        max("format.dns1123Label().validate(self.spec.name).hasValue()"),
        26 * 32 + 1 + 3 + 1
    );
    // A qualified function's name is no value: `format.dns1123Label()` is one call.
    assert_eq!(
        max("format.dns1123Label().validate('a').hasValue()"),
        32 + 1 + 1
    );
    assert_eq!(max("isURL(self.spec.name)"), 1 + 3);
    // Upstream prices the network and quantity parsers only on a target, which a global call
    // has not: one unit each.
    assert_eq!(max("isIP(self.spec.name)"), 1 + 3);
    assert_eq!(max("ip.isCanonical(self.spec.name)"), 1 + 3);
    assert_eq!(max("isQuantity(self.spec.name)"), 1 + 3);
    assert_eq!(max("self.spec.items.join(',') == 'x'"), 65 + 3 + 1);
    // cel-go ext/lists.go (version 3): a call allocating a list costs its elements, the call
    // (1) and the list (10); sorting compares every pair twice, strings a tenth more.
    assert_eq!(max("self.spec.items.reverse()"), 10 + 11 + 3);
    assert_eq!(max("self.spec.items.slice(1, 3)"), 2 + 11 + 3);
    // An end not written is the list's length.
    assert_eq!(
        max("self.spec.items.slice(1, self.spec.replicas)"),
        9 + 11 + 3 + 3
    );
    assert_eq!(max("self.spec.items.distinct()"), 200 + 11 + 3);
    assert_eq!(max("self.spec.items.sort()"), 210 + 11 + 3);
    assert_eq!(max("lists.range(5)"), 5 + 11);
    assert_eq!(max("[[1], [2]].flatten()"), 2 + 11 + 30);
    assert_eq!(max("[[1], [2]].flatten(3)"), 6 + 11 + 30);
    // k8s library/cost.go: a version's accessors and comparisons cost one; its parse, a
    // global call, is priced as one too, like the quantity's.
    assert_eq!(
        max("semver(self.spec.name, true).isLessThan(semver('2.0.0'))"),
        3 + 3
    );
    assert_eq!(max("semver(self.spec.name) == semver('1.0.0')"), 3 + 3);
    assert_eq!(max("quantity(self.spec.name) == quantity('1')"), 3 + 3);
    // ... and a URL's equality the right side's size at 0.1 (9 characters: 1), beside the two
    // parses (26 and 1) and the name (3).
    assert_eq!(
        max("url(self.spec.name) == url('https://x')"),
        3 + 26 + 1 + 1
    );
    // A result's size is what the call gives it: the sorted list's is squared, as upstream,
    // so `all` runs 100 iterations of 3 (the loop's condition and step), and reads its result.
    assert_eq!(
        max("self.spec.items.sort().all(i, true)"),
        224 + 100 * 3 + 1
    );
    // 10 items, each: the identifier (1), the accumulator's && (and its condition).
    let all = max("self.spec.items.all(i, i == 'a')");
    assert!(all > 10 && all < 100, "{all}");
    let unbounded = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"names": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.contains('keyword')"}]}}}}}}),
    );
    let causes = cost_causes(&unbounded);
    assert!(
        causes[0].ends_with("Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        "{causes:?}"
    );
}

/// The derive types rules by a schema written as JSON, the server by its typed schema: both
/// give the same declarations, sizes included.
#[test]
fn a_json_schema_and_its_typed_schema_declare_the_same() {
    let mut value = serde_json::to_value(widget()).expect("schema serializes");
    value["properties"]["spec"]["required"] = json!(["replicas", "name"]);
    value["properties"]["spec"]["properties"]["mode"] =
        json!({"type": "string", "enum": ["a", "bcd"]});
    value["properties"]["spec"]["properties"]["blob"] = json!({"type": "string", "format": "byte"});
    let typed = Decl::of_schema(&schema(value.clone()), true, "selfType");
    let json = Decl::of_schema(&value, true, "selfType");
    assert_eq!(format!("{typed:?}"), format!("{json:?}"));
    assert!(format!("{json:?}").contains("max_elements: 3"), "{json:?}");
}
