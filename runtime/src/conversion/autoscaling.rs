//! HorizontalPodAutoscalers between `autoscaling/v1`, `v2beta1` and the stored `v2` shape, as
//! `pkg/apis/autoscaling/v1/conversion.go` and `v2beta1/conversion.go` convert them.
//!
//! v1 has one field, `targetCPUUtilizationPercentage`; the other metrics, the current metrics
//! and the conditions travel in annotations (`autoscaling.alpha.kubernetes.io/...`) written in
//! the v2beta1 metric shape, so a v1 client that reads and writes an HPA back loses nothing.
//! v2beta1 names targets `targetAverageValue` and friends where v2 has a `target` object, and
//! keeps `behavior` in an annotation (upstream marshals its internal Go struct there, so the
//! keys are Go's field names: `ScaleUp`, `StabilizationWindowSeconds`).

use serde_json::{Map, Value, json};

use super::{ConversionError, put_some, take};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const SCALE_DOWN_TOLERANCE: &str = "autoscaling.alpha.kubernetes.io/scale-down-tolerance";
const SCALE_UP_TOLERANCE: &str = "autoscaling.alpha.kubernetes.io/scale-up-tolerance";

/// Every annotation a conversion writes, dropped before writing them again
/// (`DropRoundTripHorizontalPodAutoscalerAnnotations`).
const ROUND_TRIP: [&str; 6] = [
    METRICS,
    CURRENT_METRICS,
    CONDITIONS,
    BEHAVIOR,
    SCALE_DOWN_TOLERANCE,
    SCALE_UP_TOLERANCE,
];

/// What v1 and the HPA controller target when nothing is said (`DefaultCPUUtilization`).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The object's annotations, taken out so a rule can read and write them; put back with
/// [`restore_annotations`].
fn take_annotations(object: &mut Value) -> Map<String, Value> {
    match take(object, "metadata.annotations") {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn restore_annotations(object: &mut Value, annotations: Map<String, Value>) {
    if !annotations.is_empty() {
        super::put(object, "metadata.annotations", Value::Object(annotations));
    }
}

/// A JSON list kept in annotation `key`, removed from `annotations`.
fn annotated_list(
    annotations: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<Value>>, ConversionError> {
    let Some(text) = annotations.remove(key) else {
        return Ok(None);
    };
    let text = text.as_str().unwrap_or_default();
    serde_json::from_str::<Vec<Value>>(text)
        .map(Some)
        .map_err(|e| ConversionError::Invalid(format!("annotation {key}: {e}")))
}

fn annotate(annotations: &mut Map<String, Value>, key: &str, value: &Value) {
    // Serializing a JSON value cannot fail.
    let text = serde_json::to_string(value).unwrap_or_default();
    annotations.insert(key.to_owned(), Value::from(text));
}

fn is_cpu_resource(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
}

fn cpu_utilization_target(percent: Value) -> Value {
    json!({
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": percent}},
    })
}

/// v1 → v2 (`Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`).
pub(super) fn v1_up(object: &mut Value) -> Result<(), ConversionError> {
    let mut annotations = take_annotations(object);
    let mut metrics: Vec<Value> = take(object, "spec.targetCPUUtilizationPercentage")
        .map(cpu_utilization_target)
        .into_iter()
        .collect();
    if let Some(others) = annotated_list(&mut annotations, METRICS)? {
        let mut all: Vec<Value> = others.iter().map(old_metric_spec_up).collect();
        all.append(&mut metrics);
        metrics = all;
    }
    let mut current: Option<Vec<Value>> = take(object, "status.currentCPUUtilizationPercentage")
        .map(|percent| {
            vec![json!({
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": percent}},
            })]
        });
    if let Some(statuses) = annotated_list(&mut annotations, CURRENT_METRICS)? {
        current = Some(statuses.iter().map(old_metric_status_up).collect());
    }
    if metrics.is_empty() {
        metrics.push(cpu_utilization_target(Value::from(DEFAULT_CPU_UTILIZATION)));
    }
    super::put(object, "spec.metrics", Value::Array(metrics));
    put_some(object, "status.currentMetrics", current.map(Value::Array));
    if let Some(conditions) = annotated_list(&mut annotations, CONDITIONS)? {
        super::put(object, "status.conditions", Value::Array(conditions));
    }
    restore_annotations(object, annotations);
    Ok(())
}

/// v2 → v1 (`Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`).
pub(super) fn v1_down(object: &mut Value) {
    let mut annotations = take_annotations(object);
    for key in ROUND_TRIP {
        annotations.remove(key);
    }
    let metrics = list(take(object, "spec.metrics"));
    // The first CPU resource metric alone decides the target.
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_resource(m)) {
        put_some(
            object,
            "spec.targetCPUUtilizationPercentage",
            cpu.pointer("/resource/target/averageUtilization").cloned(),
        );
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| {
            !(is_cpu_resource(m) && m.pointer("/resource/target/averageUtilization").is_some())
        })
        .map(old_metric_spec_down)
        .collect();
    take(object, "spec.behavior");
    let current = list(take(object, "status.currentMetrics"));
    for metric in current.iter().filter(|m| is_cpu_resource(m)) {
        put_some(
            object,
            "status.currentCPUUtilizationPercentage",
            metric
                .pointer("/resource/current/averageUtilization")
                .cloned(),
        );
    }
    let conditions = list(take(object, "status.conditions"));
    if !others.is_empty() {
        annotate(&mut annotations, METRICS, &Value::Array(others));
    }
    if !current.is_empty() {
        let old: Vec<Value> = current.iter().map(old_metric_status_down).collect();
        annotate(&mut annotations, CURRENT_METRICS, &Value::Array(old));
    }
    if !conditions.is_empty() {
        annotate(&mut annotations, CONDITIONS, &Value::Array(conditions));
    }
    restore_annotations(object, annotations);
}

/// v2beta1 → v2 (`Convert_v2beta1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`).
pub(super) fn v2beta1_up(object: &mut Value) {
    let mut annotations = take_annotations(object);
    if let Some(text) = annotations.remove(BEHAVIOR) {
        // Only well-formed, non-empty behavior moves into the field, as upstream's.
        let parsed = text
            .as_str()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .map(|b| rename_keys(b, lower_first));
        if let Some(behavior) = parsed.filter(|b| b.as_object().is_some_and(|m| !m.is_empty())) {
            super::put(object, "spec.behavior", behavior);
        }
    }
    for key in ROUND_TRIP {
        annotations.remove(key);
    }
    map_list(object, "spec.metrics", old_metric_spec_up);
    map_list(object, "status.currentMetrics", old_metric_status_up);
    restore_annotations(object, annotations);
}

/// v2 → v2beta1 (`Convert_autoscaling_HorizontalPodAutoscaler_To_v2beta1_HorizontalPodAutoscaler`).
pub(super) fn v2beta1_down(object: &mut Value) {
    let mut annotations = take_annotations(object);
    for key in ROUND_TRIP {
        annotations.remove(key);
    }
    if let Some(behavior) = take(object, "spec.behavior").filter(|b| !b.is_null()) {
        annotate(
            &mut annotations,
            BEHAVIOR,
            &rename_keys(behavior, upper_first),
        );
    }
    map_list(object, "spec.metrics", old_metric_spec_down);
    map_list(object, "status.currentMetrics", old_metric_status_down);
    restore_annotations(object, annotations);
}

fn list(value: Option<Value>) -> Vec<Value> {
    match value {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

fn map_list(object: &mut Value, path: &str, f: fn(&Value) -> Value) {
    if let Some(Value::Array(items)) = take(object, path) {
        super::put(object, path, Value::Array(items.iter().map(f).collect()));
    }
}

fn rename_keys(value: Value, rename: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (rename(&k), rename_keys(v, rename)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| rename_keys(v, rename)).collect())
        }
        other => other,
    }
}

fn upper_first(key: &str) -> String {
    let mut chars = key.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn lower_first(key: &str) -> String {
    let mut chars = key.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// One field of an old-shape metric source and where the v2 shape keeps it.
struct Moved {
    /// The old field, e.g. `targetAverageValue`.
    old: &'static str,
    /// Its place in the v2 source, a JSON pointer, e.g. `/target/averageValue`.
    new: &'static str,
    /// Whether Go declares the old field as a plain `resource.Quantity`, so it is always
    /// written (`"0"` when unset) and always read into the v2 field.
    quantity: bool,
}

const fn moved(old: &'static str, new: &'static str) -> Moved {
    Moved {
        old,
        new,
        quantity: false,
    }
}

const fn quantity(old: &'static str, new: &'static str) -> Moved {
    Moved {
        old,
        new,
        quantity: true,
    }
}

/// The fields of each metric source of a spec, old shape to v2
/// (`Convert_v2beta1_*MetricSource_To_autoscaling_*MetricSource`).
const SPEC_SOURCES: [(&str, &[Moved]); 5] = [
    (
        "resource",
        &[
            moved("name", "/name"),
            moved("targetAverageUtilization", "/target/averageUtilization"),
            moved("targetAverageValue", "/target/averageValue"),
        ],
    ),
    (
        "containerResource",
        &[
            moved("name", "/name"),
            moved("container", "/container"),
            moved("targetAverageUtilization", "/target/averageUtilization"),
            moved("targetAverageValue", "/target/averageValue"),
        ],
    ),
    (
        "pods",
        &[
            moved("metricName", "/metric/name"),
            moved("selector", "/metric/selector"),
            quantity("targetAverageValue", "/target/averageValue"),
        ],
    ),
    (
        "object",
        &[
            moved("target", "/describedObject"),
            moved("metricName", "/metric/name"),
            moved("selector", "/metric/selector"),
            quantity("targetValue", "/target/value"),
            moved("averageValue", "/target/averageValue"),
        ],
    ),
    (
        "external",
        &[
            moved("metricName", "/metric/name"),
            moved("metricSelector", "/metric/selector"),
            moved("targetValue", "/target/value"),
            moved("targetAverageValue", "/target/averageValue"),
        ],
    ),
];

/// The fields of each metric source of a status, old shape to v2
/// (`Convert_v2beta1_*MetricStatus_To_autoscaling_*MetricStatus`).
const STATUS_SOURCES: [(&str, &[Moved]); 5] = [
    (
        "resource",
        &[
            moved("name", "/name"),
            moved("currentAverageUtilization", "/current/averageUtilization"),
            quantity("currentAverageValue", "/current/averageValue"),
        ],
    ),
    (
        "containerResource",
        &[
            moved("name", "/name"),
            moved("container", "/container"),
            moved("currentAverageUtilization", "/current/averageUtilization"),
            quantity("currentAverageValue", "/current/averageValue"),
        ],
    ),
    (
        "pods",
        &[
            moved("metricName", "/metric/name"),
            moved("selector", "/metric/selector"),
            quantity("currentAverageValue", "/current/averageValue"),
        ],
    ),
    (
        "object",
        &[
            moved("target", "/describedObject"),
            moved("metricName", "/metric/name"),
            moved("selector", "/metric/selector"),
            quantity("currentValue", "/current/value"),
            moved("averageValue", "/current/averageValue"),
        ],
    ),
    (
        "external",
        &[
            moved("metricName", "/metric/name"),
            moved("metricSelector", "/metric/selector"),
            quantity("currentValue", "/current/value"),
            moved("currentAverageValue", "/current/averageValue"),
        ],
    ),
];

fn present(value: &Value, pointer: &str) -> Option<Value> {
    value.pointer(pointer).filter(|v| !v.is_null()).cloned()
}

/// Which half of an HPA a metric comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `spec.metrics`: v2 targets carry a `type` the old shape implies.
    Spec,
    /// `status.currentMetrics`.
    Status,
}

/// A metric in the other shape: `type` kept, each source's fields moved, up (old to v2) or
/// down; the zero quantity where Go's plain `Quantity` would write one.
fn reshaped(metric: &Value, part: Part, up: bool) -> Value {
    let sources: &[(&str, &[Moved])] = match part {
        Part::Spec => &SPEC_SOURCES,
        Part::Status => &STATUS_SOURCES,
    };
    let mut out = Value::Object(Map::new());
    put_some(&mut out, "type", present(metric, "/type"));
    for (key, fields) in sources {
        let Some(source) = metric.get(*key).filter(|s| s.is_object()) else {
            continue;
        };
        let mut converted = Value::Object(Map::new());
        for field in *fields {
            let (from, to) = if up {
                (format!("/{}", field.old), dotted(field.new))
            } else {
                (field.new.to_owned(), field.old.to_owned())
            };
            let value = present(source, &from).or_else(|| field.quantity.then(|| json!("0")));
            put_some(&mut converted, &to, value);
        }
        if up && part == Part::Spec {
            let kind = target_type(key, &converted);
            put_some(&mut converted, "target.type", Some(Value::from(kind)));
        }
        if let Value::Object(map) = &mut out {
            map.insert((*key).to_owned(), converted);
        }
    }
    out
}

/// A JSON pointer as the dotted path `put` takes.
fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// The v2 target's `type`, which the old shape implies by the fields it sets.
fn target_type(source: &str, converted: &Value) -> &'static str {
    let has = |pointer: &str| converted.pointer(pointer).is_some();
    match source {
        "resource" | "containerResource" if has("/target/averageUtilization") => "Utilization",
        "object" if !has("/target/averageValue") => "Value",
        "external" if has("/target/value") => "Value",
        _ => "AverageValue",
    }
}

fn old_metric_spec_up(metric: &Value) -> Value {
    reshaped(metric, Part::Spec, true)
}

fn old_metric_spec_down(metric: &Value) -> Value {
    reshaped(metric, Part::Spec, false)
}

fn old_metric_status_up(metric: &Value) -> Value {
    reshaped(metric, Part::Status, true)
}

fn old_metric_status_down(metric: &Value) -> Value {
    reshaped(metric, Part::Status, false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hpa(api_version: &str, spec: Value) -> Value {
        json!({"apiVersion": api_version, "metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn v1_target_becomes_a_cpu_utilization_metric_and_back() {
        let mut object = hpa(
            "autoscaling/v1",
            json!({"maxReplicas": 5, "targetCPUUtilizationPercentage": 50}),
        );
        v1_up(&mut object).unwrap();
        assert_eq!(
            object["spec"]["metrics"],
            json!([cpu_utilization_target(json!(50))])
        );
        assert!(object["metadata"].get("annotations").is_none());
        v1_down(&mut object);
        assert_eq!(
            object["spec"],
            json!({"maxReplicas": 5, "targetCPUUtilizationPercentage": 50})
        );
    }

    #[test]
    fn v1_without_a_target_gets_upstreams_eighty_percent() {
        let mut object = hpa("autoscaling/v1", json!({"maxReplicas": 5}));
        v1_up(&mut object).unwrap();
        assert_eq!(
            object["spec"]["metrics"],
            json!([cpu_utilization_target(json!(80))])
        );
    }

    #[test]
    fn v2_metrics_v1_cannot_hold_travel_in_annotations() {
        let pods = json!({
            "type": "Pods",
            "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
        });
        let conditions = json!([{"type": "AbleToScale", "status": "True"}]);
        let mut object = hpa(
            "autoscaling/v2",
            json!({"maxReplicas": 5, "metrics": [pods.clone(), cpu_utilization_target(json!(60))]}),
        );
        object["status"] = json!({"conditions": conditions, "currentReplicas": 2});
        let stored = object.clone();
        v1_down(&mut object);
        assert_eq!(object["spec"]["targetCPUUtilizationPercentage"], json!(60));
        let annotations = &object["metadata"]["annotations"];
        let others: Value = serde_json::from_str(annotations[METRICS].as_str().unwrap()).unwrap();
        assert_eq!(
            others,
            json!([{"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}])
        );
        assert!(annotations.get(CONDITIONS).is_some());
        assert_eq!(object["status"], json!({"currentReplicas": 2}));
        // Back up: every metric and condition returns, the annotations go.
        v1_up(&mut object).unwrap();
        assert_eq!(object["spec"], stored["spec"]);
        assert_eq!(object["status"], stored["status"]);
        assert!(object["metadata"].get("annotations").is_none());
    }

    #[test]
    fn v2beta1_targets_are_flat_and_behavior_is_an_annotation() {
        let old = json!({
            "type": "Resource",
            "resource": {"name": "memory", "targetAverageValue": "100Mi"},
        });
        let mut object = hpa(
            "autoscaling/v2beta1",
            json!({"maxReplicas": 3, "metrics": [old.clone()]}),
        );
        object["metadata"]["annotations"] =
            json!({BEHAVIOR: r#"{"ScaleDown":{"StabilizationWindowSeconds":60}}"#});
        v2beta1_up(&mut object);
        assert_eq!(
            object["spec"],
            json!({
                "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {
                    "name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"},
                }}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
            })
        );
        assert!(object["metadata"].get("annotations").is_none());
        v2beta1_down(&mut object);
        assert_eq!(object["spec"]["metrics"], json!([old]));
        assert_eq!(
            object["metadata"]["annotations"][BEHAVIOR],
            json!(r#"{"ScaleDown":{"StabilizationWindowSeconds":60}}"#)
        );
    }

    #[test]
    fn every_old_metric_source_round_trips_through_v2() {
        let selector = json!({"matchLabels": {"app": "web"}});
        let specs = [
            json!({"type": "Resource", "resource": {"name": "cpu", "targetAverageUtilization": 70}}),
            json!({"type": "ContainerResource", "containerResource": {
                "name": "memory", "container": "app", "targetAverageValue": "1Gi"}}),
            json!({"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "5"}}),
            json!({"type": "Object", "object": {
                "target": {"kind": "Service", "name": "web"}, "metricName": "rps",
                "targetValue": "100", "selector": selector}}),
            json!({"type": "External", "external": {
                "metricName": "queue", "metricSelector": selector, "targetAverageValue": "30"}}),
        ];
        let types = [
            "Utilization",
            "AverageValue",
            "AverageValue",
            "Value",
            "AverageValue",
        ];
        for (old, kind) in specs.iter().zip(types) {
            let v2 = old_metric_spec_up(old);
            let source = v2
                .as_object()
                .unwrap()
                .iter()
                .find(|(k, _)| *k != "type")
                .unwrap()
                .1;
            assert_eq!(source["target"]["type"], kind, "{v2}");
            assert_eq!(&old_metric_spec_down(&v2), old);
        }
        let statuses = [
            json!({"type": "Resource", "resource": {
                "name": "cpu", "currentAverageUtilization": 40, "currentAverageValue": "200m"}}),
            json!({"type": "Pods", "pods": {"metricName": "qps", "currentAverageValue": "4"}}),
            json!({"type": "Object", "object": {
                "target": {"kind": "Service", "name": "web"}, "metricName": "rps",
                "currentValue": "90"}}),
            json!({"type": "External", "external": {"metricName": "queue", "currentValue": "0",
                "currentAverageValue": "25"}}),
        ];
        for old in &statuses {
            assert_eq!(&old_metric_status_down(&old_metric_status_up(old)), old);
        }
        // Go's plain quantities: an unset one reads as zero, and is written as zero.
        let bare = json!({"type": "Pods", "pods": {"metricName": "qps"}});
        assert_eq!(
            old_metric_spec_up(&bare)["pods"]["target"],
            json!({"type": "AverageValue", "averageValue": "0"})
        );
    }

    #[test]
    fn malformed_annotations_are_errors_not_panics() {
        let mut object = hpa("autoscaling/v1", json!({"maxReplicas": 1}));
        object["metadata"]["annotations"] = json!({METRICS: "not json"});
        assert!(matches!(
            v1_up(&mut object),
            Err(ConversionError::Invalid(_))
        ));
    }
}
