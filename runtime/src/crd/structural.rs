//! The structural-schema rules kube-apiserver applies to a CRD's `openAPIV3Schema`.
//!
//! Three groups of rules, each as upstream states them: the keywords a v1 CRD schema may not use
//! at all (`$ref`, `uniqueItems: true`, ...); the structural invariants (a type on every node,
//! items for arrays, `metadata` at the root limited to `name`/`generateName`, value validations
//! that only restrict, the int-or-string and embedded-resource shapes); and the
//! `x-kubernetes-list-type`/`-map-type` rules and defaults (which must validate and be pruned).
//! Paths are written from the schema root the way upstream's field paths are
//! (`properties[spec].properties[replicas].type`), and messages use upstream's wording.

use std::fmt;

use serde_json::Value;

use crate::schema::{JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool};

/// One violation of the structural-schema rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructuralError {
    /// Where, from the schema root, e.g. `properties[spec].type`.
    pub path: String,
    /// What is wrong, in upstream's words, e.g. `Required value: must not be empty for
    /// specified object fields`.
    pub message: String,
}

impl fmt::Display for StructuralError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for StructuralError {}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

struct Checker {
    errors: Vec<StructuralError>,
}

impl Checker {
    fn push(&mut self, path: &str, child: &str, message: impl Into<String>) {
        let path = join(path, child);
        self.errors.push(StructuralError {
            path,
            message: message.into(),
        });
    }
}

fn join(path: &str, child: &str) -> String {
    match (path.is_empty(), child.is_empty()) {
        (_, true) => path.to_owned(),
        (true, false) => child.to_owned(),
        (false, false) if child.starts_with('[') => format!("{path}{child}"),
        (false, false) => format!("{path}.{child}"),
    }
}

/// Checks `schema` (a version's `openAPIV3Schema`) against the structural-schema rules.
/// Returns every violation, sorted by path as upstream sorts them.
pub fn validate_structural(schema: &JSONSchemaProps) -> Result<(), Vec<StructuralError>> {
    let mut checker = Checker { errors: Vec::new() };
    node(&mut checker, schema, Level::Root, "");
    let mut errors = checker.errors;
    if errors.is_empty() {
        return Ok(());
    }
    errors.sort_by_key(ToString::to_string);
    errors.dedup();
    Err(errors)
}

/// The keywords v1 CRDs forbid anywhere, nested value validations included.
fn forbidden_keywords(c: &mut Checker, s: &JSONSchemaProps, path: &str) {
    if s.ref_path.is_some() {
        c.push(path, "$ref", "Forbidden: $ref is not supported");
    }
    if s.schema.is_some() {
        c.push(path, "$schema", "Forbidden: $schema is not supported");
    }
    if s.id.is_some() {
        c.push(path, "id", "Forbidden: id is not supported");
    }
    if s.unique_items {
        c.push(
            path,
            "uniqueItems",
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes \
             quadratic; use x-kubernetes-list-type: set",
        );
    }
    if s.additional_items.is_some() {
        c.push(
            path,
            "additionalItems",
            "Forbidden: additionalItems is not supported",
        );
    }
    if !s.pattern_properties.is_empty() {
        c.push(
            path,
            "patternProperties",
            "Forbidden: patternProperties is not supported",
        );
    }
    if !s.dependencies.is_empty() {
        c.push(
            path,
            "dependencies",
            "Forbidden: dependencies is not supported",
        );
    }
    if !s.definitions.is_empty() {
        c.push(
            path,
            "definitions",
            "Forbidden: definitions is not supported",
        );
    }
    if matches!(s.items.as_deref(), Some(JSONSchemaPropsOrArray::Array(_))) {
        c.push(
            path,
            "items",
            "Forbidden: items must be a schema object and not an array",
        );
    }
    if !s.properties.is_empty() && s.additional_properties.is_some() {
        c.push(
            path,
            "additionalProperties",
            "Forbidden: additionalProperties and properties are mutual exclusive",
        );
    }
    if s.x_kubernetes_preserve_unknown_fields == Some(false) {
        c.push(
            path,
            "x-kubernetes-preserve-unknown-fields",
            "Invalid value: false: must be true or undefined",
        );
    }
}

fn node(c: &mut Checker, s: &JSONSchemaProps, level: Level, path: &str) {
    forbidden_keywords(c, s, path);
    let type_ = s.type_.as_deref().unwrap_or_default();

    if type_ == "array" && s.items.is_none() {
        c.push(path, "items", "Required value: must be specified");
    }
    if let Some(items) = s.items_schema() {
        node(c, items, Level::Item, &join(path, "items"));
    }
    for (name, child) in &s.properties {
        node(
            c,
            child,
            Level::Field,
            &join(path, &format!("properties[{name}]")),
        );
    }
    match s.additional_properties.as_deref() {
        Some(_) if level == Level::Root => c.push(
            path,
            "additionalProperties",
            "Forbidden: must not be used at the root",
        ),
        Some(JSONSchemaPropsOrBool::Schema(values)) => {
            node(c, values, Level::Field, &join(path, "additionalProperties"));
        }
        _ => {}
    }
    if s.x_kubernetes_embedded_resource && s.additional_properties.is_some() {
        c.push(
            path,
            "additionalProperties",
            "Forbidden: must not be used if x-kubernetes-embedded-resource is set",
        );
    }

    if s.x_kubernetes_int_or_string && s.x_kubernetes_preserve_unknown_fields == Some(true) {
        c.push(
            path,
            "x-kubernetes-preserve-unknown-fields",
            "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
        );
    }
    if s.x_kubernetes_int_or_string && s.x_kubernetes_embedded_resource {
        c.push(
            path,
            "x-kubernetes-embedded-resource",
            "Invalid value: true: must be false if x-kubernetes-int-or-string is true",
        );
    }
    if s.x_kubernetes_int_or_string && !type_.is_empty() {
        c.push(
            path,
            "type",
            format!(
                "Invalid value: \"{type_}\": must be empty if x-kubernetes-int-or-string is true"
            ),
        );
    }

    value_validations(c, s, path);

    if s.x_kubernetes_embedded_resource && type_ != "object" {
        let message = if type_.is_empty() {
            "Required value: must be object if x-kubernetes-embedded-resource is true".to_owned()
        } else {
            format!(
                "Invalid value: \"{type_}\": must be object if x-kubernetes-embedded-resource is true"
            )
        };
        c.push(path, "type", message);
    } else if type_.is_empty()
        && !s.x_kubernetes_int_or_string
        && s.x_kubernetes_preserve_unknown_fields != Some(true)
    {
        let message = match level {
            Level::Root => "Required value: must not be empty at the root",
            Level::Item => "Required value: must not be empty for specified array items",
            Level::Field => "Required value: must not be empty for specified object fields",
        };
        c.push(path, "type", message);
    }
    if level == Level::Root && !type_.is_empty() && type_ != "object" {
        c.push(
            path,
            "type",
            format!("Invalid value: \"{type_}\": must be object at the root"),
        );
    }
    if !type_.is_empty()
        && !["object", "array", "string", "integer", "number", "boolean"].contains(&type_)
    {
        c.push(
            path,
            "type",
            format!(
                "Unsupported value: \"{type_}\": supported values: \"array\", \"boolean\", \
                 \"integer\", \"number\", \"object\", \"string\""
            ),
        );
    }
    if s.x_kubernetes_embedded_resource
        && s.x_kubernetes_preserve_unknown_fields != Some(true)
        && s.properties.is_empty()
    {
        c.push(
            path,
            "properties",
            "Required value: must not be empty if x-kubernetes-embedded-resource is true without \
             x-kubernetes-preserve-unknown-fields",
        );
    }

    let check_metadata = level == Level::Root || s.x_kubernetes_embedded_resource;
    if check_metadata {
        for key in ["kind", "apiVersion"] {
            if let Some(child) = s.properties.get(key)
                && child.type_.as_deref() != Some("string")
            {
                c.push(
                    path,
                    &format!("properties[{key}].type"),
                    format!(
                        "Invalid value: \"{}\": must be string",
                        child.type_.as_deref().unwrap_or_default()
                    ),
                );
            }
        }
    }
    if let Some(metadata) = s.properties.get("metadata") {
        metadata_rules(
            c,
            metadata,
            check_metadata,
            level,
            &join(path, "properties[metadata]"),
        );
    }

    markers(c, s, type_, path);
    if let Some(default) = &s.default {
        if level == Level::Root {
            c.push(path, "default", "Forbidden: must not be set at the root");
        } else {
            default_rules(c, s, default, &join(path, "default"));
        }
    }
}

fn metadata_rules(c: &mut Checker, s: &JSONSchemaProps, check: bool, level: Level, path: &str) {
    if check && s.type_.as_deref() != Some("object") {
        c.push(
            path,
            "type",
            format!(
                "Invalid value: \"{}\": must be object",
                s.type_.as_deref().unwrap_or_default()
            ),
        );
    }
    if level != Level::Root {
        return;
    }
    // Only `type`, and properties restricted to `name` and `generateName`, may be written: the
    // server owns the rest of metadata's validation.
    let restricted_properties = s
        .properties
        .keys()
        .all(|key| key == "name" || key == "generateName");
    let stripped = JSONSchemaProps {
        type_: None,
        properties: Default::default(),
        ..s.clone()
    };
    if !restricted_properties || stripped != JSONSchemaProps::default() {
        c.push(
            path,
            "",
            "Forbidden: must not specify anything other than name and generateName, but \
             metadata is implicitly specified",
        );
    }
}

/// `anyOf`, `allOf`, `oneOf` and `not` may only restrict values the structural part already
/// declares; the int-or-string `anyOf` is the one exception.
fn value_validations(c: &mut Checker, s: &JSONSchemaProps, path: &str) {
    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of = s
        .all_of
        .first()
        .is_some_and(|first| is_int_or_string_any_of(&first.any_of));
    if !skip_any_of {
        for (i, branch) in s.any_of.iter().enumerate() {
            nested(c, s, branch, false, &join(path, &format!("anyOf[{i}]")));
        }
    }
    for (i, branch) in s.all_of.iter().enumerate() {
        nested(
            c,
            s,
            branch,
            skip_first_all_of && i == 0,
            &join(path, &format!("allOf[{i}]")),
        );
    }
    for (i, branch) in s.one_of.iter().enumerate() {
        nested(c, s, branch, false, &join(path, &format!("oneOf[{i}]")));
    }
    if let Some(not) = s.not.as_deref() {
        nested(c, s, not, false, &join(path, "not"));
    }
}

fn is_int_or_string_any_of(any_of: &[JSONSchemaProps]) -> bool {
    any_of.len() == 2
        && any_of[0] == JSONSchemaProps::typed("integer")
        && any_of[1] == JSONSchemaProps::typed("string")
}

/// One value-validation branch under `outer`: no structure of its own, and every property or
/// item it mentions must exist in the structural part (upstream's completeness rule).
fn nested(
    c: &mut Checker,
    outer: &JSONSchemaProps,
    v: &JSONSchemaProps,
    skip_any_of: bool,
    path: &str,
) {
    forbidden_keywords(c, v, path);
    if !skip_any_of {
        for (i, branch) in v.any_of.iter().enumerate() {
            nested(c, outer, branch, false, &join(path, &format!("anyOf[{i}]")));
        }
    }
    for (i, branch) in v.all_of.iter().enumerate() {
        nested(c, outer, branch, false, &join(path, &format!("allOf[{i}]")));
    }
    for (i, branch) in v.one_of.iter().enumerate() {
        nested(c, outer, branch, false, &join(path, &format!("oneOf[{i}]")));
    }
    if let Some(not) = v.not.as_deref() {
        nested(c, outer, not, false, &join(path, "not"));
    }
    if let Some(items) = v.items_schema() {
        match outer.items_schema() {
            Some(outer_items) => nested(c, outer_items, items, false, &join(path, "items")),
            None => c.push(
                path,
                "items",
                "Required value: because it is defined in a value validation, it must also be \
                 specified outside of value validations",
            ),
        }
    }
    for (name, child) in &v.properties {
        let child_path = join(path, &format!("properties[{name}]"));
        match outer.properties.get(name) {
            Some(declared) => nested(c, declared, child, false, &child_path),
            None if outer.x_kubernetes_preserve_unknown_fields == Some(true) => {}
            None => c.push(
                &child_path,
                "",
                "Required value: because it is defined in a value validation, it must also be \
                 specified outside of value validations",
            ),
        }
    }
    let forbidden: [(&str, bool, &str); 12] = [
        ("type", v.type_.is_some(), "must be empty to be structural"),
        (
            "additionalProperties",
            v.additional_properties.is_some(),
            "must be undefined to be structural",
        ),
        (
            "default",
            v.default.is_some(),
            "must be undefined to be structural",
        ),
        ("title", v.title.is_some(), "must be empty to be structural"),
        (
            "description",
            v.description.is_some(),
            "must be empty to be structural",
        ),
        ("nullable", v.nullable, "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            v.x_kubernetes_preserve_unknown_fields.is_some(),
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            v.x_kubernetes_embedded_resource,
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            v.x_kubernetes_int_or_string,
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            !v.x_kubernetes_list_map_keys.is_empty(),
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            v.x_kubernetes_list_type.is_some(),
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-map-type",
            v.x_kubernetes_map_type.is_some(),
            "must be undefined to be structural",
        ),
    ];
    for (key, present, message) in forbidden {
        if present {
            c.push(path, key, format!("Forbidden: {message}"));
        }
    }
    if !v.x_kubernetes_validations.is_empty() {
        c.push(
            path,
            "x-kubernetes-validations",
            "Forbidden: must be empty to be structural",
        );
    }
    if v.properties.contains_key("metadata") {
        c.push(
            path,
            "properties[metadata]",
            "Forbidden: must not be specified in a nested context",
        );
    }
}

/// `x-kubernetes-list-type`, `-list-map-keys` and `-map-type` rules.
fn markers(c: &mut Checker, s: &JSONSchemaProps, type_: &str, path: &str) {
    if let Some(list_type) = s.x_kubernetes_list_type.as_deref() {
        if type_ != "array" {
            c.push(
                path,
                "x-kubernetes-list-type",
                format!("Invalid value: \"{list_type}\": must only be used if type is array"),
            );
        }
        match list_type {
            "atomic" => {}
            "set" => {
                let item_type = s.items_schema().and_then(|i| i.type_.as_deref());
                let atomic_item = s.items_schema().is_some_and(|i| {
                    i.x_kubernetes_map_type.as_deref() == Some("atomic")
                        || i.x_kubernetes_list_type.as_deref() == Some("atomic")
                });
                if matches!(item_type, Some("object" | "array")) && !atomic_item {
                    c.push(
                        path,
                        "items.x-kubernetes-map-type",
                        "Invalid value: null: must be atomic as item of a list with \
                         x-kubernetes-list-type=set",
                    );
                }
            }
            "map" => list_map(c, s, path),
            other => c.push(
                path,
                "x-kubernetes-list-type",
                format!(
                    "Unsupported value: \"{other}\": supported values: \"atomic\", \"map\", \"set\""
                ),
            ),
        }
    }
    if !s.x_kubernetes_list_map_keys.is_empty()
        && s.x_kubernetes_list_type.as_deref() != Some("map")
    {
        c.push(
            path,
            "x-kubernetes-list-map-keys",
            "Forbidden: must not be specified unless x-kubernetes-list-type is map",
        );
    }
    if let Some(map_type) = s.x_kubernetes_map_type.as_deref() {
        if type_ != "object" {
            c.push(
                path,
                "x-kubernetes-map-type",
                format!("Invalid value: \"{map_type}\": must only be used if type is object"),
            );
        }
        if map_type != "atomic" && map_type != "granular" {
            c.push(
                path,
                "x-kubernetes-map-type",
                format!(
                    "Unsupported value: \"{map_type}\": supported values: \"atomic\", \"granular\""
                ),
            );
        }
    }
}

fn list_map(c: &mut Checker, s: &JSONSchemaProps, path: &str) {
    if s.x_kubernetes_list_map_keys.is_empty() {
        c.push(
            path,
            "x-kubernetes-list-map-keys",
            "Required value: must not be empty if x-kubernetes-list-type is map",
        );
    }
    let Some(items) = s.items_schema() else {
        return;
    };
    if items.type_.as_deref() != Some("object") {
        c.push(
            path,
            "items.type",
            "Invalid value: must be object if parent array's x-kubernetes-list-type is map",
        );
        return;
    }
    // Items of a map-list may be atomic structs: controller-gen writes exactly that for
    // `imagePullSecrets` (a map-list of LocalObjectReference, an atomic struct) in every CRD
    // that embeds a PodSpec, and clusters accept such CRDs (cert-manager's Issuer is one).
    for key in &s.x_kubernetes_list_map_keys {
        match items.properties.get(key) {
            None => c.push(
                path,
                "x-kubernetes-list-map-keys",
                format!("Invalid value: \"{key}\": entries must all be names of item properties"),
            ),
            Some(prop) => {
                if !matches!(
                    prop.type_.as_deref(),
                    Some("string" | "integer" | "number" | "boolean")
                ) {
                    c.push(
                        path,
                        &format!("items.properties[{key}].type"),
                        "Invalid value: must be a scalar type if parent array's \
                         x-kubernetes-list-type is map",
                    );
                }
                if !items.required.contains(key) && prop.default.is_none() {
                    c.push(
                        path,
                        "items.required",
                        format!(
                            "Required value: all map keys must be required or have a default \
                             value, \"{key}\" is neither"
                        ),
                    );
                }
            }
        }
    }
}

/// A default must validate against its own node and carry no field the schema would prune.
fn default_rules(c: &mut Checker, s: &JSONSchemaProps, value: &Value, path: &str) {
    let mut problems = Vec::new();
    check_value(s, value, "", &mut problems);
    for problem in problems {
        c.push(path, "", problem);
    }
}

fn check_value(s: &JSONSchemaProps, value: &Value, at: &str, problems: &mut Vec<String>) {
    let here = |what: String| {
        if at.is_empty() {
            format!("Invalid value: {what}")
        } else {
            format!("Invalid value: {at}: {what}")
        }
    };
    if s.x_kubernetes_int_or_string {
        if !(value.is_i64() || value.is_u64() || value.is_string()) {
            problems.push(here(format!("{value}: must be an integer or a string")));
        }
        return;
    }
    let Some(type_) = s.type_.as_deref() else {
        return;
    };
    let fits = match type_ {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    };
    if !fits {
        problems.push(here(format!("{value}: must be of type {type_}")));
        return;
    }
    if !s.enum_.is_empty() && !s.enum_.contains(value) {
        problems.push(here(format!("{value}: must be one of the enum values")));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = s.minimum
            && (n < min || (s.exclusive_minimum && n == min))
        {
            problems.push(here(format!(
                "{value}: must be greater than or equal to {min}"
            )));
        }
        if let Some(max) = s.maximum
            && (n > max || (s.exclusive_maximum && n == max))
        {
            problems.push(here(format!(
                "{value}: must be less than or equal to {max}"
            )));
        }
    }
    if let Some(text) = value.as_str() {
        let len = i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
        if s.max_length.is_some_and(|max| len > max) || s.min_length.is_some_and(|min| len < min) {
            problems.push(here(format!(
                "{value}: has a length outside the allowed range"
            )));
        }
    }
    match value {
        Value::Object(map) => {
            for key in &s.required {
                if !map.contains_key(key) {
                    problems.push(here(format!("missing required field \"{key}\"")));
                }
            }
            for (key, child) in map {
                let child_at = join(at, key);
                if let Some(prop) = s.properties.get(key) {
                    check_value(prop, child, &child_at, problems);
                } else if let Some(values) = s.additional_schema() {
                    check_value(values, child, &child_at, problems);
                } else if s.x_kubernetes_preserve_unknown_fields != Some(true)
                    && s.additional_properties.is_none()
                {
                    problems.push(format!(
                        "Invalid value: {child_at}: must not have fields that would be pruned"
                    ));
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items_schema() {
                for (i, item) in items.iter().enumerate() {
                    check_value(item_schema, item, &format!("{at}[{i}]"), problems);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn errors(schema: Value) -> Vec<String> {
        let schema: JSONSchemaProps = serde_json::from_value(schema).expect("schema parses");
        match validate_structural(&schema) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }

    fn root(spec: Value) -> Value {
        json!({"type": "object", "properties": {"spec": spec}})
    }

    #[test]
    fn accepts_structural_schemas() {
        let good = [
            json!({"type": "object"}),
            root(
                json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}),
            ),
            root(json!({"x-kubernetes-preserve-unknown-fields": true})),
            root(json!({"x-kubernetes-int-or-string": true,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]})),
            root(
                json!({"type": "object", "properties": {"a": {"type": "integer"}},
                        "anyOf": [{"required": ["a"]}, {"properties": {"a": {"minimum": 1}}}]}),
            ),
            json!({"type": "object", "properties": {"metadata": {"type": "object",
                "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
            root(json!({"type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"],
                                  "properties": {"name": {"type": "string"}}}})),
            root(
                json!({"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true}),
            ),
        ];
        for schema in good {
            assert_eq!(errors(schema.clone()), Vec::<String>::new(), "{schema}");
        }
    }

    #[test]
    fn rejects_with_upstream_messages() {
        let cases = [
            (
                json!({}),
                "type: Required value: must not be empty at the root",
            ),
            (
                json!({"type": "string"}),
                "type: Invalid value: \"string\": must be object at the root",
            ),
            (
                root(json!({})),
                "properties[spec].type: Required value: must not be empty for specified object fields",
            ),
            (
                root(json!({"type": "array", "items": {}})),
                "properties[spec].items.type: Required value: must not be empty for specified array items",
            ),
            (
                root(json!({"type": "array"})),
                "properties[spec].items: Required value: must be specified",
            ),
            (
                root(json!({"$ref": "#/definitions/x", "type": "object"})),
                "properties[spec].$ref: Forbidden: $ref is not supported",
            ),
            (
                root(
                    json!({"type": "object", "properties": {"a": {"type": "string"}},
                         "additionalProperties": {"type": "string"}}),
                ),
                "properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            ),
            (
                json!({"type": "object", "additionalProperties": true}),
                "additionalProperties: Forbidden: must not be used at the root",
            ),
            (
                root(json!({"type": "array", "items": [{"type": "string"}]})),
                "properties[spec].items: Forbidden: items must be a schema object and not an array",
            ),
            (
                root(json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}})),
                "properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic; use x-kubernetes-list-type: set",
            ),
            (
                json!({"type": "object", "properties": {"metadata": {"type": "object",
                "properties": {"labels": {"type": "object"}}}}}),
                "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ),
            (
                root(
                    json!({"type": "object", "properties": {"a": {"type": "string"}},
                         "anyOf": [{"type": "object"}]}),
                ),
                "properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
            ),
            (
                root(json!({"type": "object", "oneOf": [{"properties": {"b": {"minimum": 1}}}]})),
                "properties[spec].oneOf[0].properties[b]: Required value: because it is defined in a value validation, it must also be specified outside of value validations",
            ),
            (
                root(json!({"type": "object", "allOf": [{"description": "x"}]})),
                "properties[spec].allOf[0].description: Forbidden: must be empty to be structural",
            ),
            (
                root(json!({"type": "string", "x-kubernetes-int-or-string": true})),
                "properties[spec].type: Invalid value: \"string\": must be empty if x-kubernetes-int-or-string is true",
            ),
            (
                root(json!({"type": "string", "x-kubernetes-embedded-resource": true})),
                "properties[spec].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
            ),
            (
                root(json!({"type": "object", "x-kubernetes-embedded-resource": true})),
                "properties[spec].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            ),
            (
                root(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false})),
                "properties[spec].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
            ),
            (
                root(
                    json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object",
                "properties": {"name": {"type": "string"}}, "required": ["name"]}}),
                ),
                "properties[spec].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            ),
            (
                root(
                    json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
                ),
                "properties[spec].items.required: Required value: all map keys must be required or have a default value, \"name\" is neither",
            ),
            (
                root(json!({"type": "string", "x-kubernetes-list-type": "set"})),
                "properties[spec].x-kubernetes-list-type: Invalid value: \"set\": must only be used if type is array",
            ),
            (
                root(json!({"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "object", "properties": {"a": {"type": "string"}}}})),
                "properties[spec].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
            ),
            (
                root(json!({"type": "integer", "default": "three"})),
                "properties[spec].default: Invalid value: \"three\": must be of type integer",
            ),
            (
                root(
                    json!({"type": "object", "default": {"b": 1}, "properties": {"a": {"type": "integer"}}}),
                ),
                "properties[spec].default: Invalid value: b: must not have fields that would be pruned",
            ),
            (
                root(json!({"type": "string", "enum": ["A"], "default": "B"})),
                "properties[spec].default: Invalid value: \"B\": must be one of the enum values",
            ),
            (
                root(json!({"type": "float"})),
                "properties[spec].type: Unsupported value: \"float\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            ),
            (
                json!({"type": "object", "properties": {"kind": {"type": "integer"}}}),
                "properties[kind].type: Invalid value: \"integer\": must be string",
            ),
        ];
        for (schema, want) in cases {
            let got = errors(schema.clone());
            assert!(
                got.iter().any(|e| e == want),
                "{schema}\nwant: {want}\ngot: {got:#?}"
            );
        }
    }
}
