//! A HorizontalPodAutoscaler's TARGETS (`formatHPAMetrics`, called by
//! `printHorizontalPodAutoscaler` of `pkg/printers/internalversion/printers.go`).
//!
//! Upstream prints the internal type, so every served version reads the same: `autoscaling/v1`'s
//! CPU percentages and `v2beta1`'s flat fields are first written in `v2`'s shape, as the
//! conversions to the internal type write them. The shape is read from the fields, so an object
//! served in another version than it was written in (kapi does not convert) still reads right.

use serde_json::{Map, Value, json};

use crate::printer::format::{self, at, str_at};

/// TARGETS since 1.30: `cpu: 45%/80%`, the resource named.
pub(crate) fn targets(hpa: &Value) -> Value {
    Value::from(metrics(hpa, true))
}

/// TARGETS before 1.30: `45%/80%`.
pub(crate) fn targets_unnamed(hpa: &Value) -> Value {
    Value::from(metrics(hpa, false))
}

/// The metric specs and statuses of any version, in `autoscaling/v2`'s shape. Each is read by
/// its fields rather than the object's `apiVersion`: `metrics` (else `v1`'s CPU percentage),
/// each metric in `v2beta1`'s flat shape or `v2`'s.
fn specs_and_statuses(hpa: &Value) -> (Vec<Value>, Vec<Value>) {
    let side = |list: &str, percentage: &str, key: &str| -> Vec<Value> {
        match at(hpa, list).and_then(Value::as_array) {
            Some(metrics) => metrics.iter().map(|m| v2(m, key)).collect(),
            None => at(hpa, percentage)
                .filter(|v| !v.is_null())
                .map(|pct| {
                    let mut resource = Map::new();
                    resource.insert("name".into(), Value::from("cpu"));
                    resource.insert(key.into(), json!({ "averageUtilization": pct }));
                    json!({"type": "Resource", "resource": resource})
                })
                .into_iter()
                .collect(),
        }
    };
    (
        side(
            ".spec.metrics",
            ".spec.targetCPUUtilizationPercentage",
            "target",
        ),
        side(
            ".status.currentMetrics",
            ".status.currentCPUUtilizationPercentage",
            "current",
        ),
    )
}

/// A metric in `v2`'s shape: as it is, or converted from `v2beta1`'s (whose sources name the
/// metric `metricName` and spell their values `targetAverageValue`, `currentValue`, ...).
fn v2(metric: &Value, side: &str) -> Value {
    let flat = [
        "resource",
        "containerResource",
        "pods",
        "object",
        "external",
    ]
    .iter()
    .filter_map(|source| metric.get(*source).and_then(Value::as_object))
    .flat_map(|source| source.keys())
    .any(|key| {
        key == "metricName"
            || (key.starts_with(side) && key != side)
            || (side == "current" && key == "averageValue")
    });
    if flat {
        v2beta1(metric, side)
    } else {
        metric.clone()
    }
}

/// A `v2beta1` metric spec (`side` "target") or status ("current") in `v2`'s shape.
fn v2beta1(metric: &Value, side: &str) -> Value {
    let prefix = if side == "target" {
        "target"
    } else {
        "current"
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::from(str_at(metric, ".type")));
    for (source, fields) in [
        ("resource", ["AverageUtilization", "AverageValue", ""]),
        (
            "containerResource",
            ["AverageUtilization", "AverageValue", ""],
        ),
        ("pods", ["", "AverageValue", ""]),
        ("external", ["", "AverageValue", "Value"]),
        ("object", ["", "", "Value"]),
    ] {
        let Some(old) = metric.get(source).and_then(Value::as_object) else {
            continue;
        };
        let mut values = Map::new();
        for (field, new) in fields
            .iter()
            .zip(["averageUtilization", "averageValue", "value"])
        {
            if let Some(v) = old
                .get(&format!("{prefix}{field}"))
                .filter(|_| !field.is_empty())
            {
                values.insert(new.into(), v.clone());
            }
        }
        // An object metric's average is `averageValue` on both sides.
        if source == "object"
            && let Some(v) = old.get("averageValue")
        {
            values.insert("averageValue".into(), v.clone());
        }
        let mut new = Map::new();
        if let Some(name) = old.get("name") {
            new.insert("name".into(), name.clone());
        }
        new.insert(side.into(), Value::Object(values));
        out.insert(source.into(), Value::Object(new));
    }
    Value::Object(out)
}

/// A quantity as `(*Quantity).String()`: `<nil>` when missing.
fn quantity(value: Option<&Value>) -> String {
    match value.filter(|v| !v.is_null()) {
        Some(value) => format::quantity(Some(value)),
        None => "<nil>".to_owned(),
    }
}

fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

fn metrics(hpa: &Value, named: bool) -> String {
    let (specs, statuses) = specs_and_statuses(hpa);
    if specs.is_empty() {
        return format::NONE.to_owned();
    }
    let unknown = || "<unknown>".to_owned();
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let type_ = str_at(spec, ".type");
        let source = match type_ {
            "External" => "external",
            "Pods" => "pods",
            "Object" => "object",
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            _ => {
                list.push("<unknown type>".to_owned());
                continue;
            }
        };
        let target = at(spec, &format!(".{source}.target")).unwrap_or(&Value::Null);
        let current = status
            .and_then(|s| present(s.get(source)))
            .map(|s| s.get("current").unwrap_or(&Value::Null));
        let average = present(target.get("averageValue"));
        let text = match source {
            "external" | "object" => match average {
                Some(average) => {
                    let now = current
                        .and_then(|c| present(c.get("averageValue")))
                        .map_or_else(unknown, |v| quantity(Some(v)));
                    format!("{now}/{} (avg)", quantity(Some(average)))
                }
                None => {
                    let now = current.map_or_else(unknown, |c| quantity(c.get("value")));
                    format!("{now}/{}", quantity(target.get("value")))
                }
            },
            "pods" => {
                let now = current.map_or_else(unknown, |c| quantity(c.get("averageValue")));
                format!("{now}/{}", quantity(average))
            }
            _ => {
                let name = str_at(spec, &format!(".{source}.name"));
                let prefix = if named {
                    format!("{name}: ")
                } else {
                    String::new()
                };
                match average {
                    Some(average) => {
                        let now = current.map_or_else(unknown, |c| quantity(c.get("averageValue")));
                        format!("{prefix}{now}/{}", quantity(Some(average)))
                    }
                    None => {
                        let percent = |v: Option<&Value>| {
                            present(v).and_then(Value::as_i64).map(|p| format!("{p}%"))
                        };
                        let now = current
                            .and_then(|c| percent(c.get("averageUtilization")))
                            .unwrap_or_else(unknown);
                        let goal = percent(target.get("averageUtilization"))
                            .unwrap_or_else(|| "<auto>".to_owned());
                        format!("{prefix}{now}/{goal}")
                    }
                }
            }
        };
        list.push(text);
    }
    let count = list.len();
    list.truncate(2);
    let joined = list.join(", ");
    if count > 2 {
        format!("{joined} + {} more...", count - 2)
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_metrics_of_every_source() {
        let hpa = json!({"apiVersion": "autoscaling/v2", "spec": {"metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1k"}}},
        ]}, "status": {"currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45}}},
        ]}});
        assert_eq!(targets(&hpa), json!("cpu: 45%/80%, <unknown>/1k"));
        assert_eq!(targets_unnamed(&hpa), json!("45%/80%, <unknown>/1k"));
        let more = json!({"spec": {"metrics": [
            {"type": "External", "external": {"target": {"averageValue": "30"}}},
            {"type": "Object", "object": {"target": {"value": "2"}}},
            {"type": "ContainerResource", "containerResource": {"name": "memory", "target": {"averageValue": "1Gi"}}},
            {"type": "Bogus"},
        ]}, "status": {"currentMetrics": [{"type": "External", "external": {"current": {"averageValue": "25"}}}]}});
        assert_eq!(
            targets(&more),
            json!("25/30 (avg), <unknown>/2 + 2 more...")
        );
        assert_eq!(targets(&json!({"spec": {}})), json!("<none>"));
        // A resource without a utilization target is <auto>.
        let auto = json!({"spec": {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {}}}]}});
        assert_eq!(targets(&auto), json!("cpu: <unknown>/<auto>"));
    }

    #[test]
    fn v1_and_v2beta1_read_as_the_internal_type() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "spec": {"targetCPUUtilizationPercentage": 70},
                        "status": {"currentCPUUtilizationPercentage": 12}});
        assert_eq!(targets(&v1), json!("cpu: 12%/70%"));
        let bare = json!({"apiVersion": "autoscaling/v1", "spec": {}});
        assert_eq!(targets(&bare), json!("<none>"));
        let beta = json!({"apiVersion": "autoscaling/v2beta1", "spec": {"metrics": [
            {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "2048Mi"}},
            {"type": "Object", "object": {"metricName": "hits", "targetValue": "10"}},
        ]}, "status": {"currentMetrics": [
            {"type": "Resource", "resource": {"name": "memory", "currentAverageValue": "1Gi"}},
            {"type": "Object", "object": {"metricName": "hits", "currentValue": "7"}},
        ]}});
        assert_eq!(targets_unnamed(&beta), json!("1Gi/2Gi, 7/10"));
        // The fields decide, not apiVersion: an object written in v2 and read as v1.
        let mut read_as_v1 = json!({"apiVersion": "autoscaling/v1", "spec": {"metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 50}}}]}});
        assert_eq!(targets(&read_as_v1), json!("cpu: <unknown>/50%"));
        read_as_v1["apiVersion"] = json!("autoscaling/v2");
        read_as_v1["spec"] = json!({"targetCPUUtilizationPercentage": 70});
        assert_eq!(targets(&read_as_v1), json!("cpu: <unknown>/70%"));
    }
}
