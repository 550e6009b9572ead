//! The checks kube-apiserver makes of a CRD write that the CRD kind's own schema cannot
//! express: the name, group and scope, the versions (exactly one stored, at least one served,
//! names unique DNS-1035 labels), and each version's schema (present, structural, with
//! patterns and CEL rules that compile).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::crd::CustomResourceDefinition;
use crate::meta::StatusCause;
use crate::schema::JSONSchemaProps;

/// The checks kube-apiserver makes on a CRD write that its schema cannot express.
pub(super) fn validate_crd(object: &Value) -> Vec<StatusCause> {
    let crd: CustomResourceDefinition = match serde_json::from_value(object.clone()) {
        Ok(crd) => crd,
        // The codec already refused what does not decode.
        Err(_) => return Vec::new(),
    };
    let mut causes = Vec::new();
    let spec = &crd.spec;
    let name = crd.metadata.name.clone().unwrap_or_default();
    let expected = format!("{}.{}", spec.names.plural, spec.group);
    if !name.is_empty() && name != expected {
        causes.push(StatusCause::invalid(
            "metadata.name",
            &Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if spec.group.is_empty() {
        causes.push(StatusCause::required("spec.group", ""));
    } else if !spec.group.contains('.') {
        causes.push(StatusCause::invalid(
            "spec.group",
            &Value::from(spec.group.clone()),
            "should be a domain with at least one dot",
        ));
    } else if !crate::names::is_dns_subdomain(&spec.group) {
        causes.push(StatusCause::invalid(
            "spec.group",
            &Value::from(spec.group.clone()),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        ));
    }
    if spec.scope != "Namespaced" && spec.scope != "Cluster" {
        causes.push(StatusCause::not_supported(
            "spec.scope",
            &Value::from(spec.scope.clone()),
            &["Cluster", "Namespaced"],
        ));
    }
    for (field, value) in [
        ("spec.names.plural", &spec.names.plural),
        ("spec.names.kind", &spec.names.kind),
    ] {
        if value.is_empty() {
            causes.push(StatusCause::required(field, ""));
        }
    }
    if !spec.names.plural.is_empty() && !crate::names::is_dns_label(&spec.names.plural) {
        causes.push(StatusCause::invalid(
            "spec.names.plural",
            &Value::from(spec.names.plural.clone()),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ));
    }
    if spec.versions.is_empty() {
        causes.push(StatusCause::invalid(
            "spec.versions",
            &json!([]),
            "must have exactly one version marked as storage version",
        ));
    }
    let storage = spec.versions.iter().filter(|v| v.storage).count();
    if !spec.versions.is_empty() && storage != 1 {
        causes.push(StatusCause::invalid(
            "spec.versions",
            &serde_json::to_value(&spec.versions).unwrap_or(Value::Null),
            "must have exactly one version marked as storage version",
        ));
    }
    if !spec.versions.is_empty() && !spec.versions.iter().any(|v| v.served) {
        causes.push(StatusCause::invalid(
            "spec.versions",
            &serde_json::to_value(&spec.versions).unwrap_or(Value::Null),
            "must have at least one version marked as served",
        ));
    }
    let mut seen = BTreeMap::new();
    for (i, version) in spec.versions.iter().enumerate() {
        let field = format!("spec.versions[{i}]");
        if seen.insert(version.name.clone(), i).is_some() {
            causes.push(StatusCause::duplicate(
                format!("{field}.name"),
                &Value::from(version.name.clone()),
            ));
        }
        // DNS-1035: a DNS label that starts with a letter.
        let starts_alphabetic = version.name.starts_with(|c: char| c.is_ascii_lowercase());
        if !starts_alphabetic || !crate::names::is_dns_label(&version.name) {
            causes.push(StatusCause::invalid(
                format!("{field}.name"),
                &Value::from(version.name.clone()),
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            ));
        }
        match version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        {
            None => causes.push(StatusCause::required(
                format!("{field}.schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(schema) => {
                if let Err(errors) = crate::crd::validate_structural(schema) {
                    for error in errors {
                        let path = if error.path.is_empty() {
                            format!("{field}.schema.openAPIV3Schema")
                        } else {
                            format!("{field}.schema.openAPIV3Schema.{}", error.path)
                        };
                        causes.push(StatusCause::new(
                            crate::meta::CauseType::FieldValueInvalid,
                            path,
                            error.message,
                        ));
                    }
                }
                check_patterns(
                    schema,
                    &format!("{field}.schema.openAPIV3Schema"),
                    &mut causes,
                );
                let root = format!("{field}.schema.openAPIV3Schema");
                for error in crate::cel::validation::compile_errors(schema) {
                    let at = format!("{root}.{}", error.path);
                    causes.push(match (&error.within, error.cause) {
                        (_, Some(mut cause)) => {
                            cause.field = Some(at);
                            cause
                        }
                        (None, None) => {
                            StatusCause::invalid_shown(at, &go_rule(&error.rule), &error.detail)
                        }
                        (Some(within), None) => {
                            let within = if within.is_empty() {
                                root.clone()
                            } else {
                                format!("{root}.{within}")
                            };
                            StatusCause::invalid(
                                at,
                                &Value::from(error.rule.rule.clone()),
                                &format!("{} {within}", error.detail),
                            )
                        }
                    });
                }
            }
        }
    }
    causes
}

/// A rule as Go's `%#v` prints upstream's internal `apiextensions.ValidationRule`, the value
/// of the cause for a rule that does not compile (a set pointer prints as an address there).
fn go_rule(rule: &crate::schema::ValidationRule) -> String {
    let pointer = |set: bool, type_: &str| {
        if set {
            format!("(*{type_})(0xc000000000)")
        } else {
            format!("(*{type_})(nil)")
        }
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{:?}, Message:{:?}, MessageExpression:{:?}, Reason:{}, FieldPath:{:?}, OptionalOldSelf:{}}}",
        rule.rule,
        rule.message,
        rule.message_expression,
        pointer(rule.reason.is_some(), "apiextensions.FieldValueErrorReason"),
        rule.field_path,
        pointer(rule.optional_old_self.is_some(), "bool"),
    )
}

/// Every `pattern` in a schema must compile, or objects could never be checked against it.
fn check_patterns(schema: &JSONSchemaProps, path: &str, causes: &mut Vec<StatusCause>) {
    if let Some(pattern) = &schema.pattern
        && let Err(e) = regex::Regex::new(pattern)
    {
        causes.push(StatusCause::invalid(
            format!("{path}.pattern"),
            &Value::from(pattern.clone()),
            &format!("must be a valid regular expression: {e}"),
        ));
    }
    for (name, property) in &schema.properties {
        check_patterns(property, &format!("{path}.properties[{name}]"), causes);
    }
    if let Some(crate::schema::JSONSchemaPropsOrArray::Schema(items)) = schema.items.as_deref() {
        check_patterns(items, &format!("{path}.items"), causes);
    }
    if let Some(crate::schema::JSONSchemaPropsOrBool::Schema(extra)) =
        schema.additional_properties.as_deref()
    {
        check_patterns(extra, &format!("{path}.additionalProperties"), causes);
    }
}
