//! What a CRD version's structural schema does to the objects written through it: pruning,
//! defaulting and validation, in the order kube-apiserver applies them.
//!
//! - **Pruning** drops every field the schema does not specify, except under
//!   `x-kubernetes-preserve-unknown-fields: true` or `additionalProperties`. At the root and in
//!   embedded resources `apiVersion`, `kind` and `metadata` are always kept; the root's
//!   `metadata` is pruned to ObjectMeta's fields by decoding it. A `null` in a field that is
//!   not `nullable` is dropped too (Go clients send them for unset pointers).
//! - **Defaulting** fills in a missing property that has a `default`, then prunes and defaults
//!   inside the value it put there, as upstream does.
//! - **Validation** checks types, `required`, `enum`, numeric and length bounds, `pattern`, and
//!   the uniqueness `x-kubernetes-list-type: set|map` asks for, and reports each failure as a
//!   field cause with upstream's reason and wording (`spec.replicas in body must be of type
//!   integer: "string"`).
//! - **CEL rules** (`x-kubernetes-validations`) are compiled once per schema ([`Rules::new`])
//!   and run after the checks above by [`crate::cel::validation`], transition rules against
//!   the old object of an update.
//!
//! Paths are written as upstream's field paths: `spec.ports[0].name`, `metadata.labels[app]`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use regex::Regex;
use serde_json::{Map, Value};

use crate::meta::{CauseType, ObjectMeta, StatusCause};
use crate::schema::{JSONSchemaProps, JSONSchemaPropsOrBool};

/// The fields every object and embedded resource keeps, whatever its schema says.
const TYPE_AND_META: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// One CRD version's schema, prepared once for the objects written through it: the `pattern`s
/// compiled, the root stripped of what the server checks itself.
#[derive(Debug)]
pub struct Rules {
    schema: Arc<JSONSchemaProps>,
    /// The root without `apiVersion`, `kind` and `metadata`, which are the server's business.
    body: JSONSchemaProps,
    patterns: HashMap<String, Regex>,
    /// The compiled `x-kubernetes-validations`, when the schema has any.
    cel: Option<crate::cel::validation::Validator>,
}

impl Rules {
    /// Prepares `schema`. A `pattern` that does not compile holds no value to anything (the
    /// CRD that carries it is refused before it is served).
    pub fn new(schema: JSONSchemaProps) -> Self {
        let mut patterns = HashMap::new();
        collect_patterns(&schema, &mut patterns);
        let mut body = schema.clone();
        for key in TYPE_AND_META {
            body.properties.remove(key);
            body.required.retain(|r| r != key);
        }
        let cel = crate::cel::validation::Validator::new(&schema);
        Rules {
            schema: Arc::new(schema),
            body,
            patterns,
            cel,
        }
    }

    /// The schema as given.
    pub fn schema(&self) -> &Arc<JSONSchemaProps> {
        &self.schema
    }

    /// Prunes `object` to what the schema specifies and fills in its defaults. The root
    /// `metadata` must decode as ObjectMeta; the error says why it does not.
    pub fn prune_and_default(&self, object: &mut Value) -> Result<(), String> {
        normalize(&self.schema, object, true);
        if let Some(metadata) = object.get_mut("metadata") {
            let decoded: ObjectMeta =
                serde_json::from_value(metadata.take()).map_err(|e| format!("metadata: {e}"))?;
            *metadata = serde_json::to_value(decoded).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Checks `object` against the schema, then its CEL rules (transition rules with `old`, the
    /// stored object of an update; with `ratchet`, a rule failing on a value the update does
    /// not change is let go, as upstream's CRDValidationRatcheting does): one cause per
    /// violation, in document order. The root's `apiVersion`, `kind` and `metadata` are left
    /// to the server.
    pub fn validate(&self, object: &Value, old: Option<&Value>, ratchet: bool) -> Vec<StatusCause> {
        let mut causes = self.validate_schema(object);
        if let Some(cel) = &self.cel {
            // Upstream's strategy (`hasBlockingErr`) runs no rule on an object of the wrong
            // shape or past its bounds: the rules' costs were estimated on the bounds.
            if causes.iter().any(blocks_rules) {
                causes.push(StatusCause::invalid(
                    "",
                    &Value::Null,
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                causes.extend(cel.validate(object, old, ratchet));
            }
        }
        causes
    }

    fn validate_schema(&self, object: &Value) -> Vec<StatusCause> {
        let mut causes = Vec::new();
        let Some(fields) = object.as_object() else {
            causes.push(type_cause("", object, "object"));
            return causes;
        };
        let mut check = Check {
            patterns: &self.patterns,
            causes: &mut causes,
        };
        for name in &self.body.required {
            if !fields.contains_key(name) {
                check.causes.push(StatusCause::required(name.as_str(), ""));
            }
        }
        for (key, child) in fields {
            if TYPE_AND_META.contains(&key.as_str()) {
                continue;
            }
            if let Some(property) = self.body.properties.get(key) {
                check.value(property, child, key);
            } else if let Some(extra) = self.body.additional_schema() {
                check.value(extra, child, &format!("[{key}]"));
            }
        }
        causes
    }
}

fn collect_patterns(schema: &JSONSchemaProps, into: &mut HashMap<String, Regex>) {
    if let Some(pattern) = &schema.pattern
        && let Ok(re) = Regex::new(pattern)
    {
        into.insert(pattern.clone(), re);
    }
    for child in schema.properties.values() {
        collect_patterns(child, into);
    }
    for child in [schema.items_schema(), schema.additional_schema()]
        .into_iter()
        .flatten()
    {
        collect_patterns(child, into);
    }
    for child in &schema.all_of {
        collect_patterns(child, into);
    }
}

/// Pruning and defaulting in one walk, so a default is pruned by the schema it sits under.
/// `resource` says the value is an object in its own right (the root, or embedded), which
/// keeps its `apiVersion`, `kind` and `metadata` whatever the schema lists.
fn normalize(schema: &JSONSchemaProps, value: &mut Value, resource: bool) {
    match value {
        Value::Object(map) => {
            apply_defaults(schema, map);
            let keep_unknown = schema.x_kubernetes_preserve_unknown_fields == Some(true);
            let extra = match schema.additional_properties.as_deref() {
                Some(JSONSchemaPropsOrBool::Schema(s)) => Some(Extra::Schema(s)),
                Some(JSONSchemaPropsOrBool::Allows(true)) => Some(Extra::Any),
                _ => None,
            };
            let embedded = !resource && schema.x_kubernetes_embedded_resource;
            let keeps_type_and_meta = resource || embedded;
            map.retain(|key, child| {
                // Checked before the schema's own properties: CRD schemas often list
                // `metadata: {type: object}`, which must not prune the object's metadata.
                if keeps_type_and_meta && TYPE_AND_META.contains(&key.as_str()) {
                    return true;
                }
                if let Some(property) = schema.properties.get(key) {
                    // Go clients send `null` for unset pointers; upstream drops such nulls
                    // where the schema does not allow them (defaults were applied above).
                    if child.is_null() && !property.nullable {
                        return false;
                    }
                    normalize(property, child, false);
                    return true;
                }
                match &extra {
                    Some(Extra::Schema(s)) => {
                        normalize(s, child, false);
                        true
                    }
                    Some(Extra::Any) => true,
                    None => keep_unknown,
                }
            });
            if embedded {
                // An embedded object is a resource of its own: its metadata is ObjectMeta too.
                if let Some(metadata) = map.get_mut("metadata")
                    && let Ok(decoded) = serde_json::from_value::<ObjectMeta>(metadata.clone())
                    && let Ok(encoded) = serde_json::to_value(decoded)
                {
                    *metadata = encoded;
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items_schema() {
                for item in items {
                    normalize(item_schema, item, false);
                }
            }
        }
        _ => {}
    }
}

enum Extra<'a> {
    Schema(&'a JSONSchemaProps),
    Any,
}

fn apply_defaults(schema: &JSONSchemaProps, map: &mut Map<String, Value>) {
    for (name, property) in &schema.properties {
        if let Some(default) = &property.default {
            let missing = match map.get(name) {
                None => true,
                // Upstream treats an explicit null in a non-nullable field as absent.
                Some(Value::Null) => !property.nullable,
                Some(_) => false,
            };
            if missing {
                map.insert(name.clone(), default.clone());
            }
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// kube-openapi's name for a field in its messages: the path, or `body` at the root.
fn subject(path: &str) -> &str {
    if path.is_empty() { "body" } else { path }
}

/// Whether a schema violation keeps the CEL rules from running: a wrong type, a value too
/// long or with too many items, a missing required field, a value outside its enum.
fn blocks_rules(cause: &StatusCause) -> bool {
    matches!(
        cause.reason,
        Some(
            CauseType::FieldValueNotSupported
                | CauseType::FieldValueRequired
                | CauseType::FieldValueTooLong
                | CauseType::FieldValueTooMany
                | CauseType::FieldValueTypeInvalid
        )
    )
}

fn type_cause(path: &str, value: &Value, expected: &str) -> StatusCause {
    // Upstream names the JSON type as the invalid value, not the value itself.
    StatusCause::type_invalid(
        path,
        &Value::from(json_type(value)),
        &format!(
            "{} in body must be of type {expected}: {:?}",
            subject(path),
            json_type(value)
        ),
    )
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => true,
    }
}

/// One validation walk: the compiled patterns it matches strings against and the causes it
/// has found so far.
struct Check<'a> {
    patterns: &'a HashMap<String, Regex>,
    causes: &'a mut Vec<StatusCause>,
}

impl Check<'_> {
    fn value(&mut self, schema: &JSONSchemaProps, value: &Value, path: &str) {
        if value.is_null() {
            if !schema.nullable && schema.type_.is_some() {
                let expected = schema.type_.as_deref().unwrap_or("");
                self.causes.push(type_cause(path, value, expected));
            }
            return;
        }
        if schema.x_kubernetes_int_or_string {
            if !(value.is_string() || value.is_i64() || value.is_u64()) {
                self.causes.push(type_cause(path, value, "integer,string"));
                return;
            }
        } else if let Some(expected) = schema.type_.as_deref()
            && !has_type(value, expected)
        {
            self.causes.push(type_cause(path, value, expected));
            return;
        }
        self.enumeration(schema, value, path);
        match value {
            Value::String(text) => self.string(schema, text, value, path),
            Value::Number(n) => {
                if let Some(number) = n.as_f64() {
                    self.number(schema, number, value, path);
                }
            }
            Value::Array(items) => self.array(schema, items, value, path),
            Value::Object(map) => self.object(schema, map, value, path),
            _ => {}
        }
        for part in &schema.all_of {
            self.value(part, value, path);
        }
    }

    fn enumeration(&mut self, schema: &JSONSchemaProps, value: &Value, path: &str) {
        if schema.enum_.is_empty() || schema.enum_.contains(value) {
            return;
        }
        let supported: Vec<String> = schema
            .enum_
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
        self.causes
            .push(StatusCause::not_supported(path, value, &supported));
    }

    fn string(&mut self, schema: &JSONSchemaProps, text: &str, value: &Value, path: &str) {
        let length = text.chars().count() as i64;
        if let Some(max) = schema.max_length
            && length > max
        {
            self.causes.push(StatusCause::new(
                CauseType::FieldValueTooLong,
                path,
                format!("Too long: may not be more than {max} bytes"),
            ));
        }
        if let Some(min) = schema.min_length
            && length < min
        {
            let detail = format!(
                "{} in body should be at least {min} chars long",
                subject(path)
            );
            self.causes.push(StatusCause::invalid(path, value, &detail));
        }
        if let Some(pattern) = &schema.pattern
            && let Some(re) = self.patterns.get(pattern)
            && !re.is_match(text)
        {
            let detail = format!("{} in body should match '{pattern}'", subject(path));
            self.causes.push(StatusCause::invalid(path, value, &detail));
        }
    }

    fn number(&mut self, schema: &JSONSchemaProps, number: f64, value: &Value, path: &str) {
        let field = subject(path);
        if let Some(max) = schema.maximum {
            let (bad, relation) = if schema.exclusive_maximum {
                (number >= max, "less than")
            } else {
                (number > max, "less than or equal to")
            };
            if bad {
                let detail = format!("{field} in body should be {relation} {}", show(max));
                self.causes.push(StatusCause::invalid(path, value, &detail));
            }
        }
        if let Some(min) = schema.minimum {
            let (bad, relation) = if schema.exclusive_minimum {
                (number <= min, "greater than")
            } else {
                (number < min, "greater than or equal to")
            };
            if bad {
                let detail = format!("{field} in body should be {relation} {}", show(min));
                self.causes.push(StatusCause::invalid(path, value, &detail));
            }
        }
        if let Some(factor) = schema.multiple_of
            && factor != 0.0
            && (number / factor).fract() != 0.0
        {
            let detail = format!("{field} in body should be a multiple of {}", show(factor));
            self.causes.push(StatusCause::invalid(path, value, &detail));
        }
    }

    fn array(&mut self, schema: &JSONSchemaProps, items: &[Value], value: &Value, path: &str) {
        let count = items.len() as i64;
        if let Some(max) = schema.max_items
            && count > max
        {
            self.causes.push(StatusCause::new(
                CauseType::FieldValueTooMany,
                path,
                format!("Too many: {count}: must have at most {max} items"),
            ));
        }
        if let Some(min) = schema.min_items
            && count < min
        {
            let detail = format!("{} in body should have at least {min} items", subject(path));
            self.causes.push(StatusCause::invalid(path, value, &detail));
        }
        if let Some(item_schema) = schema.items_schema() {
            for (i, item) in items.iter().enumerate() {
                self.value(item_schema, item, &format!("{path}[{i}]"));
            }
        }
        let identity = |item: &Value| -> Option<Value> {
            match schema.x_kubernetes_list_type.as_deref() {
                Some("set") => Some(item.clone()),
                Some("map") => Some(Value::Object(
                    schema
                        .x_kubernetes_list_map_keys
                        .iter()
                        .filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone())))
                        .collect(),
                )),
                _ => None,
            }
        };
        // One pass with a set of the items (or their keys) seen, as text: JSON values do
        // not hash, and their text is canonical enough for equal scalars and key maps.
        let mut seen = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let Some(id) = identity(item) else {
                return;
            };
            if !seen.insert(id.to_string()) {
                self.causes
                    .push(StatusCause::duplicate(format!("{path}[{i}]"), &id));
            }
        }
    }

    fn object(
        &mut self,
        schema: &JSONSchemaProps,
        map: &Map<String, Value>,
        value: &Value,
        path: &str,
    ) {
        for name in &schema.required {
            if !map.contains_key(name) {
                self.causes
                    .push(StatusCause::required(join(path, name), ""));
            }
        }
        let count = map.len() as i64;
        if let Some(max) = schema.max_properties
            && count > max
        {
            let detail = format!(
                "{} in body should have at most {max} properties",
                subject(path)
            );
            self.causes.push(StatusCause::invalid(path, value, &detail));
        }
        if let Some(min) = schema.min_properties
            && count < min
        {
            let detail = format!(
                "{} in body should have at least {min} properties",
                subject(path)
            );
            self.causes.push(StatusCause::invalid(path, value, &detail));
        }
        let extra = schema.additional_schema();
        for (key, child) in map {
            if let Some(property) = schema.properties.get(key) {
                self.value(property, child, &join(path, key));
            } else if let Some(s) = extra {
                self.value(s, child, &format!("{path}[{key}]"));
            }
        }
    }
}

/// A bound as Go prints it: integers without a fraction.
fn show(number: f64) -> String {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        format!("{}", number as i64)
    } else {
        number.to_string()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> JSONSchemaProps {
        serde_json::from_value(value).expect("schema parses")
    }

    fn widget_schema() -> JSONSchemaProps {
        schema(json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "items": {"type": "string"},
                                 "x-kubernetes-list-type": "set", "maxItems": 3},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "properties": {
                                      "name": {"type": "string"}, "port": {"type": "integer"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "properties": {"spec": {"type": "object"}}},
                        "nested": {"type": "object", "default": {},
                                   "properties": {"depth": {"type": "integer", "default": 3}}}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        }))
    }

    // Upstream's customresource strategy (`hasBlockingErr`): past its bounds, or of the
    // wrong type, an object's rules are not run, and one cause says so.
    #[test]
    fn rules_do_not_run_on_an_object_past_its_bounds() {
        let rules = Rules::new(schema(json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.name != 'forbidden'"}],
                "properties": {"name": {"type": "string", "maxLength": 10}, "size": {"type": "integer"}}
            }}
        })));
        let causes = |spec: Value| -> Vec<String> {
            rules
                .validate(&json!({"spec": spec}), None, false)
                .into_iter()
                .map(|c| c.to_string())
                .collect()
        };
        assert_eq!(
            causes(json!({"name": "forbidden"})),
            vec!["spec: Invalid value: \"object\": failed rule: self.name != 'forbidden'"]
        );
        let not_checked = ": Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";
        let long = causes(json!({"name": "forbidden-and-too-long"}));
        assert_eq!(long.len(), 2, "{long:?}");
        assert!(long[0].contains("Too long"), "{long:?}");
        assert_eq!(long[1], not_checked);
        let mistyped = causes(json!({"name": "forbidden", "size": "ten"}));
        assert_eq!(mistyped.last().map(String::as_str), Some(not_checked));
    }

    fn causes(object: Value) -> Vec<String> {
        Rules::new(widget_schema())
            .validate(&object, None, false)
            .into_iter()
            .map(|c| c.to_string())
            .collect()
    }

    #[test]
    fn pruning_keeps_what_the_schema_specifies() {
        let mut object = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "bogus": 1},
            "spec": {"size": 2, "unknown": true, "labels": {"a": "b"},
                     "free": {"anything": {"goes": 1}},
                     "template": {"apiVersion": "v1", "kind": "Pod",
                                  "metadata": {"name": "p", "junk": 1},
                                  "spec": {"x": 1}, "dropped": 1}},
            "extra": "gone"
        });
        Rules::new(widget_schema())
            .prune_and_default(&mut object)
            .unwrap();
        assert_eq!(
            object,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"size": 2, "color": "red", "labels": {"a": "b"},
                         "free": {"anything": {"goes": 1}},
                         "template": {"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": "p"}, "spec": {}},
                         "nested": {"depth": 3}}
            })
        );
    }

    #[test]
    fn defaults_fill_missing_and_null_fields_only() {
        let mut object =
            json!({"spec": {"size": 1, "color": null, "name": null, "nested": {"depth": 7}}});
        Rules::new(widget_schema())
            .prune_and_default(&mut object)
            .unwrap();
        assert_eq!(object["spec"]["color"], "red");
        assert_eq!(object["spec"]["nested"]["depth"], 7);
        // A null without a default is dropped, not refused.
        assert_eq!(object["spec"].get("name"), None);
    }

    #[test]
    fn metadata_that_is_not_object_meta_is_refused() {
        let mut object = json!({"metadata": {"labels": "not-a-map"}});
        let error = Rules::new(widget_schema())
            .prune_and_default(&mut object)
            .unwrap_err();
        assert!(error.starts_with("metadata: "), "{error}");
    }

    #[test]
    fn validation_reports_each_violation_with_upstream_wording() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({"spec": {"size": 3}}), vec![]),
            (json!({"spec": {}}), vec!["spec.size: Required value"]),
            (
                json!({"spec": {"size": "3"}}),
                vec![
                    "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
                ],
            ),
            (
                json!({"spec": {"size": 11}}),
                vec![
                    "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
                ],
            ),
            (
                json!({"spec": {"size": 0}}),
                vec![
                    "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1",
                ],
            ),
            (
                json!({"spec": {"size": 1, "color": "green"}}),
                vec![
                    "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"",
                ],
            ),
            (
                json!({"spec": {"size": 1, "name": "Abcdefg"}}),
                vec![
                    "spec.name: Too long: may not be more than 5 bytes",
                    "spec.name: Invalid value: \"Abcdefg\": spec.name in body should match '^[a-z]+$'",
                ],
            ),
            (json!({"spec": {"size": 1, "port": 80}}), vec![]),
            (json!({"spec": {"size": 1, "port": "http"}}), vec![]),
            (
                json!({"spec": {"size": 1, "port": true}}),
                vec![
                    "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                ],
            ),
            (
                json!({"spec": {"size": 1, "tags": ["a", "b", "a", "c"]}}),
                vec![
                    "spec.tags: Too many: 4: must have at most 3 items",
                    "spec.tags[2]: Duplicate value: \"a\"",
                ],
            ),
            (
                json!({"spec": {"size": 1, "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]}}),
                vec!["spec.ports[1]: Duplicate value: {\"name\":\"a\"}"],
            ),
            (
                json!({"spec": {"size": 1, "labels": {"app": 1}}}),
                vec![
                    "spec.labels[app]: Invalid value: \"integer\": spec.labels[app] in body must be of type string: \"integer\"",
                ],
            ),
            (
                json!({"spec": {"size": 1}, "status": {"ready": "yes"}}),
                vec![
                    "status.ready: Invalid value: \"string\": status.ready in body must be of type boolean: \"string\"",
                ],
            ),
        ];
        for (object, want) in cases {
            assert_eq!(causes(object.clone()), want, "{object}");
        }
    }

    #[test]
    fn type_and_metadata_are_left_to_the_server() {
        let object = json!({"apiVersion": 1, "kind": [], "metadata": "x", "spec": {"size": 1}});
        assert_eq!(causes(object), Vec::<String>::new());
    }
}
