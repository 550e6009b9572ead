//! The checks kube-apiserver makes of a CRD write that the CRD kind's own schema cannot
//! express: the name, group and scope, the versions (exactly one stored, at least one served,
//! names unique DNS-1035 labels), each version's schema (present, structural, with
//! patterns and CEL rules that compile), and `spec.conversion` (`validateCustomResourceConversion`
//! with `util/webhook`'s URL and Service checks; paths name the internal type's fields,
//! `webhookClientConfig` and `conversionReviewVersions`, as upstream's errors do).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::crd::CustomResourceDefinition;
use crate::meta::StatusCause;
use crate::schema::JSONSchemaProps;

/// The checks kube-apiserver makes on a CRD write that its schema cannot express; `old` is
/// the CRD an update replaces.
pub(super) fn validate_crd(object: &Value, old: Option<&Value>) -> Vec<StatusCause> {
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
    // An update may keep review versions this server does not know only if the CRD already
    // had them (`requireRecognizedConversionReviewVersion`).
    let old_reviews: Option<Vec<String>> = old.map(|old| {
        old.pointer("/spec/conversion/webhook/conversionReviewVersions")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    });
    let require_known = old_reviews.is_none_or(|versions| {
        versions.is_empty()
            || versions
                .iter()
                .any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
    });
    check_conversion(&crd, require_known, &mut causes);
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
                // A version whose schema the update keeps is not judged rule by rule again
                // (`versionsWithUnchangedSchemas`).
                let unchanged = old
                    .and_then(|old| old.pointer("/spec/versions"))
                    .and_then(Value::as_array)
                    .and_then(|versions| {
                        versions.iter().find(|v| {
                            v.get("name").and_then(Value::as_str) == Some(version.name.as_str())
                        })
                    })
                    .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
                    .is_some_and(|old_schema| {
                        JSONSchemaProps::deserialize(old_schema).is_ok_and(|o| &o == schema)
                    });
                for error in crate::cel::validation::schema_errors(schema, unchanged) {
                    let at = if error.path.is_empty() {
                        root.clone()
                    } else {
                        format!("{root}.{}", error.path)
                    };
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

/// The `ConversionReview` versions the server speaks, sorted as upstream lists them.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The release whose texts of name formats these checks use (they do not differ between the
/// releases kapi serves).
const TEXTS: crate::KubeVersion = crate::KubeVersion::new(1, 34);

/// `validateCustomResourceConversion`, and the strategy's check against
/// `preserveUnknownFields`.
fn check_conversion(
    crd: &CustomResourceDefinition,
    require_known: bool,
    causes: &mut Vec<StatusCause>,
) {
    let Some(conversion) = &crd.spec.conversion else {
        return;
    };
    let strategy = conversion.strategy.as_str();
    match strategy {
        "" => causes.push(StatusCause::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        other => causes.push(StatusCause::not_supported(
            "spec.conversion.strategy",
            &Value::from(other),
            &["None", "Webhook"],
        )),
    }
    if strategy != "None" && !strategy.is_empty() && crd.spec.preserve_unknown_fields {
        causes.push(StatusCause::invalid(
            "spec.conversion.strategy",
            &Value::from(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    let webhook = conversion.webhook.as_ref();
    let client_config = webhook.and_then(|w| w.client_config.as_ref());
    let reviews = webhook.map_or(&[][..], |w| &w.conversion_review_versions[..]);
    const CLIENT: &str = "spec.conversion.webhookClientConfig";
    const REVIEWS: &str = "spec.conversion.conversionReviewVersions";
    if strategy != "Webhook" {
        let not_webhook = "should not be set when strategy is not set to Webhook";
        if client_config.is_some() {
            causes.push(StatusCause::forbidden(CLIENT, not_webhook));
        }
        if !reviews.is_empty() {
            causes.push(StatusCause::forbidden(REVIEWS, not_webhook));
        }
        return;
    }
    match client_config {
        None => causes.push(StatusCause::required(
            CLIENT,
            "required when strategy is set to Webhook",
        )),
        Some(config) => match (&config.url, &config.service) {
            (Some(url), None) => check_url(&format!("{CLIENT}.url"), url, causes),
            (None, Some(service)) => check_service(&format!("{CLIENT}.service"), service, causes),
            _ => causes.push(StatusCause::required(
                CLIENT,
                "exactly one of url or service is required",
            )),
        },
    }
    if reviews.is_empty() {
        causes.push(StatusCause::required(REVIEWS, ""));
        return;
    }
    let mut seen = Vec::new();
    for (i, version) in reviews.iter().enumerate() {
        let at = format!("{REVIEWS}[{i}]");
        if seen.contains(&version) {
            causes.push(StatusCause::invalid(
                at,
                &Value::from(version.as_str()),
                "duplicate version",
            ));
            continue;
        }
        seen.push(version);
        for message in crate::validation::Format::Dns1035Label.messages(version, TEXTS) {
            causes.push(StatusCause::invalid(
                at.clone(),
                &Value::from(version.as_str()),
                &message,
            ));
        }
    }
    if require_known
        && !reviews
            .iter()
            .any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
    {
        causes.push(StatusCause::invalid_shown(
            REVIEWS,
            // Go's `%#v` of a `[]string`, as `field.Invalid` prints a slice.
            &format!(
                "[]string{{{}}}",
                reviews
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &format!(
                "must include at least one of {}",
                REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

/// `ValidateWebhookURL` with https required.
fn check_url(at: &str, url: &str, causes: &mut Vec<StatusCause>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        causes.push(StatusCause::invalid(
            at,
            &Value::from(scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if url.contains("://") {
        rest.split('/').next().unwrap_or("")
    } else {
        ""
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if host.is_empty() {
        causes.push(StatusCause::invalid(
            at,
            &Value::from(host),
            &format!("host must be provided{FORM}"),
        ));
    }
    if let Some(user) = user {
        causes.push(StatusCause::invalid(
            at,
            &Value::from(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        causes.push(StatusCause::invalid(
            at,
            &Value::from(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        causes.push(StatusCause::invalid(
            at,
            &Value::from(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `ValidateWebhookService`, the port defaulted to 443 as v1 defaults it.
fn check_service(at: &str, service: &crate::crd::ServiceReference, causes: &mut Vec<StatusCause>) {
    if service.name.is_empty() {
        causes.push(StatusCause::required(
            format!("{at}.name"),
            "service name is required",
        ));
    }
    if service.namespace.is_empty() {
        causes.push(StatusCause::required(
            format!("{at}.namespace"),
            "service namespace is required",
        ));
    }
    let port = service.port.unwrap_or(443);
    if !(1..=65535).contains(&port) {
        causes.push(StatusCause::invalid(
            format!("{at}.port"),
            &Value::from(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = service.path.as_deref() else {
        return;
    };
    if path.is_empty() || path == "/" {
        return;
    }
    let at = format!("{at}.path");
    let shown = Value::from(path);
    if path == "//" {
        causes.push(StatusCause::invalid(
            at,
            &shown,
            "segment[0] may not be empty",
        ));
        return;
    }
    if !path.starts_with('/') {
        causes.push(StatusCause::invalid(
            at.clone(),
            &shown,
            "must start with a '/'",
        ));
    }
    let steps = path.get(1..).unwrap_or("");
    let steps = steps.strip_suffix('/').unwrap_or(steps);
    for (i, step) in steps.split('/').enumerate() {
        if step.is_empty() {
            causes.push(StatusCause::invalid(
                at.clone(),
                &shown,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in crate::validation::Format::DnsSubdomain.messages(step, TEXTS) {
            causes.push(StatusCause::invalid(
                at.clone(),
                &shown,
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::validate_crd;

    fn crd(conversion: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}],
                     "conversion": conversion},
        })
    }

    fn messages(conversion: Value, old: Option<Value>) -> Vec<String> {
        validate_crd(&crd(conversion), old.as_ref())
            .into_iter()
            .map(|c| c.to_string())
            .collect()
    }

    /// A CRD whose `v1` list of integers has `rule` on it (`maxItems` when given).
    fn with_rule(rule: &str, max_items: Option<u64>) -> Value {
        let mut values = json!({"type": "array", "items": {"type": "integer"},
            "x-kubernetes-validations": [{"rule": rule}]});
        if let Some(max) = max_items {
            values["maxItems"] = json!(max);
        }
        let mut object = crd(Value::Null);
        object["spec"]
            .as_object_mut()
            .map(|spec| spec.remove("conversion"));
        object["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object",
            "properties": {"values": values}});
        object
    }

    fn fields(object: &Value, old: Option<&Value>) -> Vec<String> {
        validate_crd(object, old)
            .into_iter()
            .map(|c| c.to_string())
            .collect()
    }

    /// apiextensions `validation.go`: type errors are refused at the rule; per-rule cost is not
    /// judged again for a version whose schema an update keeps (`suppressPerExpressionCost`),
    /// the schema's total still is.
    #[test]
    fn rules_are_type_checked_and_costed_with_the_old_crd_in_mind() {
        let mistyped = with_rule("self.size() + 'a' == 'b'", None);
        let causes = fields(&mistyped, None);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert!(
            causes[0].starts_with("spec.versions[0].schema.openAPIV3Schema.properties[values].x-kubernetes-validations[0].rule: Invalid value: ")
                && causes[0].ends_with("compilation failed: ERROR: <input>:1:13: found no matching overload for '_+_' applied to '(int, string)'\n | self.size() + 'a' == 'b'\n | ............^"),
            "{causes:?}"
        );
        let quadratic = "self.all(x, self.exists_one(y, x == y))";
        let expensive = with_rule(quadratic, None);
        let rule_at = "spec.versions[0].schema.openAPIV3Schema.properties[values].x-kubernetes-validations[0].rule";
        let created = fields(&expensive, None);
        assert_eq!(created.len(), 3, "{created:?}");
        assert!(
            created[0].starts_with(&format!(
                "{rule_at}: Forbidden: estimated rule cost exceeds budget"
            )),
            "{created:?}"
        );
        assert!(created[2].starts_with("spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total"), "{created:?}");
        // The same schema kept by an update: only the total.
        let updated = fields(&expensive, Some(&expensive));
        assert_eq!(updated.len(), 2, "{updated:?}");
        assert!(
            updated[0].starts_with(&format!("{rule_at}: Forbidden: contributed to")),
            "{updated:?}"
        );
        // Bounded, it is accepted.
        assert_eq!(
            fields(&with_rule(quadratic, Some(100)), None),
            Vec::<String>::new()
        );
    }

    /// `validateCustomResourceConversion` and `util/webhook`'s checks, with upstream's paths
    /// (the internal type's `webhookClientConfig`, `conversionReviewVersions`) and texts.
    #[test]
    fn conversion_is_checked_as_upstream_checks_it() {
        let ok = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://conv.example.com/convert"}}});
        assert_eq!(messages(ok, None), Vec::<String>::new());
        assert_eq!(
            messages(json!({"strategy": "None"}), None),
            Vec::<String>::new()
        );
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (
                json!({"strategy": "Webhook"}),
                vec![
                    "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                    "spec.conversion.conversionReviewVersions: Required value",
                ],
            ),
            (
                json!({"strategy": "Other"}),
                vec![
                    r#"spec.conversion.strategy: Unsupported value: "Other": supported values: "None", "Webhook""#,
                ],
            ),
            (
                json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"],
                       "clientConfig": {"url": "https://a"}}}),
                vec![
                    "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                    "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
                ],
            ),
            (
                json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                       "clientConfig": {"url": "https://a",
                                        "service": {"namespace": "n", "name": "s"}}}}),
                vec![
                    "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
                ],
            ),
            (
                json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                       "clientConfig": {"url": "http://u@a/x?q=1#f"}}}),
                vec![
                    r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
                    r#"spec.conversion.webhookClientConfig.url: Invalid value: "u": user information is not permitted in the URL"#,
                    r#"spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL"#,
                    r#"spec.conversion.webhookClientConfig.url: Invalid value: "q=1": query parameters are not permitted in the URL"#,
                ],
            ),
            (
                json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                       "clientConfig": {"service": {"namespace": "", "name": "s", "port": 0,
                                                    "path": "/a//b"}}}}),
                vec![
                    "spec.conversion.webhookClientConfig.service.namespace: Required value: service namespace is required",
                    "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                    r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//b": segment[1] may not be empty"#,
                ],
            ),
            (
                json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v9", "v9"],
                       "clientConfig": {"url": "https://a"}}}),
                vec![
                    r#"spec.conversion.conversionReviewVersions[1]: Invalid value: "v9": duplicate version"#,
                    r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v9", "v9"}: must include at least one of v1, v1beta1"#,
                ],
            ),
        ];
        for (conversion, want) in cases {
            assert_eq!(messages(conversion.clone(), None), want, "{conversion}");
        }
        // An update may keep unknown review versions the CRD already had.
        let unknown = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v9"],
            "clientConfig": {"url": "https://a"}}});
        assert_eq!(
            messages(unknown.clone(), Some(crd(unknown))),
            Vec::<String>::new()
        );
    }
}
