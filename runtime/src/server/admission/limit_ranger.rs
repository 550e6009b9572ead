//! Upstream's `LimitRanger` admission plugin (`plugin/pkg/admission/limitranger`), on pod and
//! PersistentVolumeClaim creates, against every LimitRange of the namespace:
//! - mutating (`PodMutateLimitFunc`): each container and init container gets the `default`
//!   limits and `defaultRequest` requests of the ranges' `Container` items it does not set,
//!   recorded in the pod's `kubernetes.io/limit-ranger` annotation
//!   (`mergePodResourceRequirements`);
//! - validating (`PodValidateLimitFunc`, `PersistentVolumeClaimValidateLimitFunc`): each
//!   container against the `Container` items' `min`, `max` and `maxLimitRequestRatio`, a
//!   claim's requests against the `PersistentVolumeClaim` items' `min` and `max`, refused with
//!   upstream's 403 and messages, several as one `[a, b]` list without repeats (upstream's
//!   aggregate error).
//!
//! kapi runs the check right after the defaults rather than after validation, so a pod that is
//! both invalid and outside its limits gets the 403 first; `Pod`-type items and updates are
//! not checked yet.

use serde_json::{Map, Value};

use crate::quantity::Quantity;
use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::objects::json::meta_mut;

use super::{forbidden, storage};

/// The annotation recording what the plugin set.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// Sets a created pod's container defaults, then checks it (or a created claim) against the
/// namespace's limit ranges.
pub(super) async fn admit(call: &Call, object: &mut Value, name: &str) -> Result<(), ApiError> {
    let pods = super::writes_core(call, "pods");
    if !pods && !super::writes_core(call, "persistentvolumeclaims") {
        return Ok(());
    }
    let namespace = call.target.namespace.as_deref();
    let ranges = storage::list(call, "", "limitranges", namespace).await?;
    if ranges.is_empty() {
        return Ok(());
    }
    let mut problems = Vec::new();
    for range in &ranges {
        let items = range
            .pointer("/spec/limits")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if pods {
            set_defaults(object, items);
            check_pod(object, items, &mut problems);
        } else {
            check_claim(object, items, &mut problems);
        }
    }
    let mut seen = Vec::new();
    for problem in problems {
        if !seen.contains(&problem) {
            seen.push(problem);
        }
    }
    match seen.as_slice() {
        [] => Ok(()),
        [one] => Err(forbidden(call, name, one)),
        many => Err(forbidden(call, name, &format!("[{}]", many.join(", ")))),
    }
}

/// `defaultContainerResourceRequirements` and `mergePodResourceRequirements`.
fn set_defaults(pod: &mut Value, items: &[Value]) {
    let mut limits = Map::new();
    let mut requests = Map::new();
    for item in items.iter().filter(|i| is_type(i, "Container")) {
        let (item_limits, item_requests) = item_defaults(item);
        limits.extend(item_limits);
        requests.extend(item_requests);
    }
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (list, label) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(Value::Array(containers)) = pod.pointer_mut(&format!("/spec/{list}")) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let container_name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let resources = container
                .entry("resources")
                .or_insert_with(|| Value::Object(Map::new()));
            let set_requests = merge(resources, "requests", &requests);
            let set_limits = merge(resources, "limits", &limits);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {label} {container_name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!(
                    "{} limit for {label} {container_name}",
                    set_limits.join(", ")
                ));
            }
        }
    }
    if !notes.is_empty() {
        let annotations = meta_mut(pod)
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(annotations) = annotations {
            annotations.insert(
                ANNOTATION.into(),
                Value::from(format!("LimitRanger plugin set: {}", notes.join("; "))),
            );
        }
    }
}

/// A `Container` item's default limits and requests as upstream's `SetDefaults_LimitRangeItem`
/// completes them (kapi stores LimitRanges as written): a limit defaults to `max`, a request to
/// the default limit, then to `min`.
fn item_defaults(item: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let field = |name: &str| {
        item.get(name)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let fill = |into: &mut Map<String, Value>, from: &Map<String, Value>| {
        for (key, value) in from {
            into.entry(key.clone()).or_insert_with(|| value.clone());
        }
    };
    let mut limits = field("default");
    fill(&mut limits, &field("max"));
    let mut requests = field("defaultRequest");
    fill(&mut requests, &limits);
    fill(&mut requests, &field("min"));
    (limits, requests)
}

/// Adds the `defaults` a container's `resources.<field>` lacks; answers their names, sorted.
fn merge(resources: &mut Value, field: &str, defaults: &Map<String, Value>) -> Vec<String> {
    let Value::Object(resources) = resources else {
        return Vec::new();
    };
    let mut set = Vec::new();
    for (key, value) in defaults {
        let list = resources
            .entry(field)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(list) = list
            && !list.contains_key(key)
        {
            list.insert(key.clone(), value.clone());
            set.push(key.clone());
        }
    }
    set.sort();
    set
}

fn is_type(item: &Value, kind: &str) -> bool {
    item.get("type").and_then(Value::as_str) == Some(kind)
}

/// A resource list's quantity of `resource`, when set and well-formed.
fn quantity(list: Option<&Value>, resource: &str) -> Option<Quantity> {
    list?.get(resource)?.as_str()?.parse().ok()
}

/// The quantities of a limit item's `field` (`min`, `max`, `maxLimitRequestRatio`).
fn bounds<'a>(item: &'a Value, field: &str) -> impl Iterator<Item = (&'a str, Quantity)> {
    item.get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?.parse().ok()?)))
}

/// `PodValidateLimitFunc` for the `Container` items.
fn check_pod(pod: &Value, items: &[Value], problems: &mut Vec<String>) {
    for item in items.iter().filter(|i| is_type(i, "Container")) {
        for list in ["containers", "initContainers"] {
            let containers = pod
                .pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for container in containers {
                let requests = container.pointer("/resources/requests");
                let limits = container.pointer("/resources/limits");
                let limits_of = |r: &str| (quantity(requests, r), quantity(limits, r));
                for (resource, min) in bounds(item, "min") {
                    let (request, limit) = limits_of(resource);
                    problems.extend(min_problem("Container", resource, &min, request, limit));
                }
                for (resource, max) in bounds(item, "max") {
                    let (request, limit) = limits_of(resource);
                    problems.extend(max_problem("Container", resource, &max, request, limit));
                }
                for (resource, ratio) in bounds(item, "maxLimitRequestRatio") {
                    let (request, limit) = limits_of(resource);
                    problems.extend(ratio_problem("Container", resource, &ratio, request, limit));
                }
            }
        }
    }
}

/// `PersistentVolumeClaimValidateLimitFunc`: the claim's requests against `min` and `max`.
fn check_claim(claim: &Value, items: &[Value], problems: &mut Vec<String>) {
    let requests = claim.pointer("/spec/resources/requests");
    for item in items.iter().filter(|i| is_type(i, "PersistentVolumeClaim")) {
        for (resource, min) in bounds(item, "min") {
            let request = quantity(requests, resource);
            problems.extend(min_problem(
                "PersistentVolumeClaim",
                resource,
                &min,
                request,
                None,
            ));
        }
        for (resource, max) in bounds(item, "max") {
            let kind = "PersistentVolumeClaim";
            problems.extend(match quantity(requests, resource) {
                None => Some(format!(
                    "maximum {resource} usage per {kind} is {max}.  No request is specified"
                )),
                Some(request) if request > max => Some(format!(
                    "maximum {resource} usage per {kind} is {max}, but request is {request}"
                )),
                Some(_) => None,
            });
        }
    }
}

/// `minConstraint`.
fn min_problem(
    kind: &str,
    resource: &str,
    min: &Quantity,
    request: Option<Quantity>,
    limit: Option<Quantity>,
) -> Option<String> {
    let Some(request) = request else {
        return Some(format!(
            "minimum {resource} usage per {kind} is {min}.  No request is specified"
        ));
    };
    if request < *min {
        return Some(format!(
            "minimum {resource} usage per {kind} is {min}, but request is {request}"
        ));
    }
    limit
        .filter(|l| l < min)
        .map(|limit| format!("minimum {resource} usage per {kind} is {min}, but limit is {limit}"))
}

/// `maxConstraint`.
fn max_problem(
    kind: &str,
    resource: &str,
    max: &Quantity,
    request: Option<Quantity>,
    limit: Option<Quantity>,
) -> Option<String> {
    let Some(limit) = limit else {
        return Some(format!(
            "maximum {resource} usage per {kind} is {max}.  No limit is specified"
        ));
    };
    if limit > *max {
        return Some(format!(
            "maximum {resource} usage per {kind} is {max}, but limit is {limit}"
        ));
    }
    request.filter(|r| r > max).map(|request| {
        format!("maximum {resource} usage per {kind} is {max}, but request is {request}")
    })
}

/// `limitRequestRatioConstraint`.
fn ratio_problem(
    kind: &str,
    resource: &str,
    ratio: &Quantity,
    request: Option<Quantity>,
    limit: Option<Quantity>,
) -> Option<String> {
    let Some(request) = request.filter(|r| !r.is_zero()) else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {ratio}, but no request is specified or request is 0"
        ));
    };
    let Some(limit) = limit.filter(|l| !l.is_zero()) else {
        return Some(format!(
            "{resource} max limit to request ratio per {kind} is {ratio}, but no limit is specified or limit is 0"
        ));
    };
    let observed = limit.to_f64() / request.to_f64();
    (observed > ratio.to_f64()).then(|| {
        format!(
            "{resource} max limit to request ratio per {kind} is {ratio}, but provided ratio is {observed:.6}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Option<Quantity> {
        s.parse().ok()
    }

    /// Mirrors upstream's `TestMergePodResourceRequirements` (admission_test.go): defaults
    /// fill what a container lacks, and the annotation says which.
    #[test]
    fn defaults_fill_what_containers_lack() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "resources": {"limits": {"cpu": "2"}}},
        ]}});
        let items = [json!({"type": "Container",
            "default": {"cpu": "1", "memory": "1Gi"}, "defaultRequest": {"cpu": "500m"}})];
        set_defaults(&mut pod, &items);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}})
        );
        assert_eq!(
            pod["spec"]["containers"][1]["resources"]["limits"],
            json!({"cpu": "2", "memory": "1Gi"})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container a; cpu, memory limit for \
             container a; cpu, memory request for container b; memory limit for container b"
        );
    }

    /// `SetDefaults_LimitRangeItem`: limit from max, request from the limit, then from min.
    #[test]
    fn item_defaults_complete_as_upstreams_defaulting() {
        let item = json!({"type": "Container", "max": {"memory": "1Gi"},
            "default": {"cpu": "1"}, "min": {"cpu": "100m", "ephemeral-storage": "1Mi"}});
        let (limits, requests) = item_defaults(&item);
        assert_eq!(Value::Object(limits), json!({"cpu": "1", "memory": "1Gi"}));
        assert_eq!(
            Value::Object(requests),
            json!({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Mi"})
        );
    }

    /// `minConstraint`, `maxConstraint` and `limitRequestRatioConstraint` messages.
    #[test]
    fn constraints_word_their_problems_as_upstream() {
        let min = q("100m").unwrap_or_default();
        assert_eq!(
            min_problem("Container", "cpu", &min, q("50m"), None).as_deref(),
            Some("minimum cpu usage per Container is 100m, but request is 50m")
        );
        assert_eq!(
            min_problem("Container", "cpu", &min, None, None).as_deref(),
            Some("minimum cpu usage per Container is 100m.  No request is specified")
        );
        let max = q("1Gi").unwrap_or_default();
        assert_eq!(
            max_problem("Container", "memory", &max, None, q("2Gi")).as_deref(),
            Some("maximum memory usage per Container is 1Gi, but limit is 2Gi")
        );
        assert_eq!(
            max_problem("Container", "memory", &max, q("1Gi"), q("1Gi")),
            None
        );
        let ratio = q("2").unwrap_or_default();
        assert_eq!(
            ratio_problem("Container", "cpu", &ratio, q("100m"), q("300m")).as_deref(),
            Some(
                "cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000"
            )
        );
    }
}
