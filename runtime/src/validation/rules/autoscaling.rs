//! A HorizontalPodAutoscaler's metrics and scaling behavior, as
//! `validateHorizontalPodAutoscalerSpec` (`pkg/apis/autoscaling/validation`) checks the internal
//! spec every served version converts to: `validateMetrics` (each metric's one source and its
//! target) and `validateBehavior` (the scaling rules' windows, select policy and policies).
//! The autoscaling/v2 and v2beta2 specs have the internal shape; autoscaling/v1's
//! `targetCPUUtilizationPercentage` becomes a CPU `Utilization` metric, checked at the path
//! upstream reports it at. (1.20's autoscaling/v2beta1, whose metrics have another shape, is
//! not checked here.)
//!
//! Read at 1.20, 1.28 and 1.34; upstream's scale-to-zero (`HPAScaleToZero`) and configurable
//! tolerance (`HPAConfigurableTolerance`) are alpha and off by default in every served release.

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::go_value;
use super::pods::resource_name;
use super::{items, present, text};
use crate::KubeVersion;
use crate::quantity::Quantity;

/// `validMetricSourceTypes`, sorted as upstream lists them.
const METRIC_SOURCE_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
/// The metric sources, in the order upstream looks at them: only the first one present is
/// checked; each other one is refused.
const SOURCES: &[(&str, &str)] = &[
    ("object", "Object"),
    ("external", "External"),
    ("pods", "Pods"),
    ("resource", "Resource"),
    ("containerResource", "ContainerResource"),
];
/// `validSelectPolicyTypes` and `validPolicyTypes`, sorted.
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];
/// `MaxPeriodSeconds` and `MaxStabilizationWindowSeconds`.
const MAX_PERIOD_SECONDS: i64 = 1800;
const MAX_STABILIZATION_SECONDS: i64 = 3600;
/// The first release with container resource metrics on by default (`HPAContainerMetrics`
/// beta); 1.20's strategy drops the source, so a `ContainerResource` metric lacks it there.
const CONTAINER_METRICS_SINCE: KubeVersion = KubeVersion::new(1, 27);
/// The release whose errors print values as JSON (a quantity as its canonical string) rather
/// than Go's `%#v` of `resource.Quantity`.
const JSON_VALUES_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// What `validateMetricSpec` says of a source named by the type and missing.
const POPULATE: &str = "must populate information for the given metric source";

/// `validateMetrics` and `validateBehavior`, on an autoscaling/v2 or v2beta2 spec.
pub(super) fn metrics_and_behavior(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let metrics_at = at.child("metrics");
    for (i, metric) in items(spec, "metrics").iter().enumerate() {
        metric_spec(metric, &metrics_at.index(i), errors);
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        let behavior_at = at.child("behavior");
        for rules in ["scaleUp", "scaleDown"] {
            if let Some(rules_value) = behavior.get(rules).filter(|r| !r.is_null()) {
                scaling_rules(rules_value, &behavior_at.child(rules), errors);
            }
        }
    }
}

/// autoscaling/v1's target, which upstream converts to `metrics[0]`'s CPU utilization.
pub(super) fn target_cpu(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    if let Some(target) = spec
        .get("targetCPUUtilizationPercentage")
        .and_then(Value::as_i64)
        && target < 1
    {
        let path = at
            .join(".metrics")
            .index(0)
            .join(".resource.target.averageUtilization");
        errors.invalid(
            &path,
            Shown::Plain(&Value::from(target)),
            "must be greater than 0",
        );
    }
}

/// A metric's source as validation sees it: before 1.27 upstream's strategy has dropped a
/// container resource source.
fn source<'v>(metric: &'v Value, field: &str, release: KubeVersion) -> Option<&'v Value> {
    if field == "containerResource" && release < CONTAINER_METRICS_SINCE {
        return None;
    }
    present(metric, field)
}

/// `validateMetricSpec`.
fn metric_spec(metric: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let kind = text(metric, "type");
    let type_at = at.child("type");
    if kind.is_empty() {
        errors.required(&type_at, "must specify a metric source type");
    }
    if !METRIC_SOURCE_TYPES.contains(&kind) {
        errors.not_supported(&type_at, &Value::from(kind), METRIC_SOURCE_TYPES);
    }
    let given: Vec<&str> = SOURCES
        .iter()
        .map(|(field, _)| *field)
        .filter(|field| source(metric, field, release).is_some())
        .collect();
    if let Some(first) = given.first()
        && let Some(checked) = source(metric, first, release)
    {
        let source_at = at.child(first);
        match *first {
            "object" => object_source(checked, &source_at, errors),
            "external" => external_source(checked, &source_at, errors),
            "pods" => pods_source(checked, &source_at, errors),
            "resource" => resource_source(checked, false, &source_at, errors),
            _ => resource_source(checked, true, &source_at, errors),
        }
    }
    let expected = SOURCES.iter().find(|(_, name)| *name == kind).map(|s| s.0);
    match expected {
        Some(field) if source(metric, field, release).is_none() => {
            let detail = if field == "containerResource" && release < CONTAINER_METRICS_SINCE {
                "must populate information for the given metric source (only allowed when HPAContainerMetrics feature is enabled)"
            } else {
                POPULATE
            };
            errors.required(&at.child(field), detail);
        }
        Some(_) => {}
        // Upstream's `switch` reports an unknown type a second time.
        None => errors.not_supported(&type_at, &Value::from(kind), METRIC_SOURCE_TYPES),
    }
    if given.len() != 1 {
        // Upstream walks a set, in no fixed order; kapi names them as it found them.
        for field in given.into_iter().filter(|f| Some(*f) != expected) {
            errors.forbidden(
                &at.child(field),
                "must populate the given metric source only",
            );
        }
    }
}

/// `validateMetricIdentifier`: a name that is a path segment.
fn metric_identifier(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let metric = source.get("metric").unwrap_or(&Value::Null);
    let name = text(metric, "name");
    let name_at = at.child("metric").child("name");
    if name.is_empty() {
        errors.required(&name_at, "must specify a metric name");
        return;
    }
    for message in Format::PathSegment.messages(name, errors.release()) {
        errors.invalid(&name_at, Shown::Plain(&Value::from(name)), &message);
    }
}

/// `validateObjectSource` (the described object is a CrossVersionObjectReference's checks).
fn object_source(source: &Value, at: &FieldPath, errors: &mut Errors) {
    metric_identifier(source, at, errors);
    let target = metric_target(source, at, errors);
    if present(target, "value").is_none() && present(target, "averageValue").is_none() {
        errors.required(
            &at.child("target").child("averageValue"),
            "must set either a target value or averageValue",
        );
    }
}

/// `validateExternalSource`.
fn external_source(source: &Value, at: &FieldPath, errors: &mut Errors) {
    metric_identifier(source, at, errors);
    let target = metric_target(source, at, errors);
    let (value, average) = (present(target, "value"), present(target, "averageValue"));
    if value.is_none() && average.is_none() {
        errors.required(
            &at.child("target").child("averageValue"),
            "must set either a target value for metric or a per-pod target",
        );
    }
    if value.is_some() && average.is_some() {
        errors.forbidden(
            &at.child("target").child("value"),
            "may not set both a target value for metric and a per-pod target",
        );
    }
}

/// `validatePodsSource`.
fn pods_source(source: &Value, at: &FieldPath, errors: &mut Errors) {
    metric_identifier(source, at, errors);
    let target = metric_target(source, at, errors);
    if present(target, "averageValue").is_none() {
        errors.required(
            &at.child("target").child("averageValue"),
            "must specify a positive target averageValue",
        );
    }
}

/// `validateResourceSource`, or `validateContainerResourceSource` with `container`.
fn resource_source(source: &Value, container: bool, at: &FieldPath, errors: &mut Errors) {
    let name = text(source, "name");
    let name_at = at.child("name");
    if name.is_empty() {
        errors.required(&name_at, "must specify a resource name");
    } else if container {
        resource_name(name, &name_at, errors);
    }
    if container {
        let container_name = text(source, "container");
        let container_at = at.child("container");
        if container_name.is_empty() {
            errors.required(&container_at, "must specify a container");
        }
        let release = errors.release();
        let messages = if container_name.is_empty() {
            Vec::new()
        } else {
            Format::DnsLabel.messages(container_name, release)
        };
        for message in messages {
            errors.invalid(
                &container_at,
                Shown::Plain(&Value::from(container_name)),
                &message,
            );
        }
    }
    let target = metric_target(source, at, errors);
    let (utilization, average) = (
        present(target, "averageUtilization"),
        present(target, "averageValue"),
    );
    if utilization.is_none() && average.is_none() {
        errors.required(
            &at.child("target").child("averageUtilization"),
            "must set either a target raw value or a target utilization",
        );
    }
    if utilization.is_some() && average.is_some() {
        errors.forbidden(
            &at.child("target").child("averageValue"),
            "may not set both a target raw value and a target utilization",
        );
    }
}

/// `validateMetricTarget`; gives the target checked.
fn metric_target<'v>(source: &'v Value, at: &FieldPath, errors: &mut Errors) -> &'v Value {
    let target = source.get("target").unwrap_or(&Value::Null);
    let at = at.child("target");
    let kind = text(target, "type");
    if kind.is_empty() {
        errors.required(&at.child("type"), "must specify a metric target type");
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        errors.invalid(
            &at.child("type"),
            Shown::Plain(&Value::from(kind)),
            "must be either Utilization, Value, or AverageValue",
        );
    }
    if let Some(utilization) = target.get("averageUtilization").and_then(Value::as_i64)
        && utilization < 1
    {
        errors.invalid(
            &at.child("averageUtilization"),
            Shown::Plain(&Value::from(utilization)),
            "must be greater than 0",
        );
    }
    for field in ["value", "averageValue"] {
        let Some(raw) = present(target, field) else {
            continue;
        };
        let spelled = raw.as_str().map_or_else(|| raw.to_string(), str::to_owned);
        // A quantity that does not parse is the decoder's to refuse.
        if let Ok(quantity) = spelled.trim().parse::<Quantity>()
            && quantity.signum() != 1
        {
            let json = Value::from(quantity.to_string());
            let go = go_value::quantity(spelled.trim());
            let shown = if errors.release() >= JSON_VALUES_SINCE {
                Shown::Plain(&json)
            } else {
                Shown::Go(&go, &json)
            };
            errors.invalid(&at.child(field), shown, "must be positive");
        }
    }
    target
}

/// `validateScalingRules` and each policy's `validateScalingPolicy`.
fn scaling_rules(rules: &Value, at: &FieldPath, errors: &mut Errors) {
    if let Some(window) = rules
        .get("stabilizationWindowSeconds")
        .and_then(Value::as_i64)
    {
        let window_at = at.child("stabilizationWindowSeconds");
        let shown = Value::from(window);
        if window < 0 {
            let detail = "must be greater than or equal to zero";
            errors.invalid(&window_at, Shown::Plain(&shown), detail);
        }
        if window > MAX_STABILIZATION_SECONDS {
            let detail = format!("must be less than or equal to {MAX_STABILIZATION_SECONDS}");
            errors.invalid(&window_at, Shown::Plain(&shown), &detail);
        }
    }
    if let Some(select) = present(rules, "selectPolicy")
        && !select
            .as_str()
            .is_some_and(|s| SELECT_POLICIES.contains(&s))
    {
        errors.not_supported(&at.child("selectPolicy"), select, SELECT_POLICIES);
    }
    let policies_at = at.child("policies");
    let policies = items(rules, "policies");
    if policies.is_empty() {
        errors.required(&policies_at, "must specify at least one Policy");
    }
    for (i, policy) in policies.iter().enumerate() {
        let policy_at = policies_at.index(i);
        let kind = text(policy, "type");
        if !POLICY_TYPES.contains(&kind) {
            errors.not_supported(&policy_at.child("type"), &Value::from(kind), POLICY_TYPES);
        }
        let value = policy.get("value").and_then(Value::as_i64).unwrap_or(0);
        if value <= 0 {
            errors.invalid(
                &policy_at.child("value"),
                Shown::Plain(&Value::from(value)),
                "must be greater than zero",
            );
        }
        let period = policy
            .get("periodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let period_at = policy_at.child("periodSeconds");
        if period <= 0 {
            let detail = "must be greater than zero";
            errors.invalid(&period_at, Shown::Plain(&Value::from(period)), detail);
        }
        if period > MAX_PERIOD_SECONDS {
            let detail = format!("must be less than or equal to {MAX_PERIOD_SECONDS}");
            errors.invalid(&period_at, Shown::Plain(&Value::from(period)), &detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::lines;
    use super::*;

    #[test]
    fn metrics_have_one_source_of_their_type_with_a_target() {
        // validateMetricSpec, validateResourceSource, validatePodsSource, validateMetricTarget.
        let spec = json!({"metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}},
            {"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
             "pods": {"metric": {"name": "a/b"}, "target": {"type": "Speed"}}},
            {"type": "Object"},
        ]});
        let at = FieldPath::of("spec");
        assert_eq!(
            lines(28, |e| metrics_and_behavior(&spec, &at, e)),
            [
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
                "spec.metrics[1].pods.metric.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.metrics[1].pods.target.type: Invalid value: \"Speed\": must be either Utilization, Value, or AverageValue",
                "spec.metrics[1].pods.target.averageValue: Required value: must specify a positive target averageValue",
                "spec.metrics[1].resource: Forbidden: must populate the given metric source only",
                "spec.metrics[2].object: Required value: must populate information for the given metric source",
            ]
        );
        let unknown = json!({"metrics": [{"type": "Custom"}]});
        assert_eq!(
            lines(34, |e| metrics_and_behavior(&unknown, &at, e)),
            [
                "spec.metrics[0].type: Unsupported value: \"Custom\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.metrics[0].type: Unsupported value: \"Custom\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ]
        );
        // 1.20's strategy drops container resource sources (HPAContainerMetrics alpha).
        let container = json!({"metrics": [{"type": "ContainerResource"}]});
        assert_eq!(
            lines(20, |e| metrics_and_behavior(&container, &at, e)),
            [
                "spec.metrics[0].containerResource: Required value: must populate information for the given metric source (only allowed when HPAContainerMetrics feature is enabled)"
            ]
        );
    }

    #[test]
    fn quantities_print_as_go_structs_before_1_34() {
        // validateExternalSource; a *resource.Quantity's %#v (ParseQuantity keeps a canonical
        // text in `s`), JSON from 1.34.
        let spec = json!({"metrics": [{"type": "External", "external": {
            "metric": {"name": "queue"}, "target": {"type": "Value", "value": "-1", "averageValue": "0"}}}]});
        let at = FieldPath::of("spec");
        assert_eq!(
            lines(28, |e| metrics_and_behavior(&spec, &at, e)),
            [
                "spec.metrics[0].external.target.value: Invalid value: resource.Quantity{i:resource.int64Amount{value:-1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"-1\", Format:\"DecimalSI\"}: must be positive",
                "spec.metrics[0].external.target.averageValue: Invalid value: resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}: must be positive",
                "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a per-pod target",
            ]
        );
        assert_eq!(
            lines(34, |e| metrics_and_behavior(&spec, &at, e))[0],
            "spec.metrics[0].external.target.value: Invalid value: \"-1\": must be positive"
        );
    }

    #[test]
    fn scaling_rules_bound_windows_and_policies() {
        // validateScalingRules, validateScalingPolicy.
        let spec = json!({"behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Most", "policies": []},
            "scaleDown": {"policies": [{"type": "Nodes", "value": 0, "periodSeconds": 1801}]},
        }});
        let at = FieldPath::of("spec");
        assert_eq!(
            lines(34, |e| metrics_and_behavior(&spec, &at, e)),
            [
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Most\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies: Required value: must specify at least one Policy",
                "spec.behavior.scaleDown.policies[0].type: Unsupported value: \"Nodes\": supported values: \"Percent\", \"Pods\"",
                "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
            ]
        );
    }

    #[test]
    fn a_v1_target_is_checked_as_its_cpu_metric() {
        // autoscaling/v1's conversion to a Resource metric, then validateMetricTarget.
        let at = FieldPath::of("spec");
        assert_eq!(
            lines(20, |e| target_cpu(
                &json!({"targetCPUUtilizationPercentage": 0}),
                &at,
                e
            )),
            [
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"
            ]
        );
    }
}
