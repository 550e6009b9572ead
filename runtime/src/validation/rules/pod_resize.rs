//! What a write through a pod's `/resize` may change (`ValidatePodResize` in
//! `pkg/apis/core/validation/validation.go`, read as of 1.33, with the memory limit rule lifted
//! in 1.34 by kubernetes/kubernetes#133012): the pod keeps its QoS class; a container's, or a
//! sidecar's (a restartable init container's), requests and limits may change but not go away;
//! only `cpu` and `memory` change; a regular init container keeps its resources. A pod with
//! pod-level resources, a static pod and a Windows pod are refused whole (their error alone),
//! and a pod whose running container reports no allocated resources runs on a node without
//! resize. The write itself keeps only the containers' `resources` and `resizePolicy`
//! (`dropNonResizeUpdates`, the server's `handlers::update`); the pod's metadata and spec are
//! held to what a create holds them to (`validatePodMetadataAndSpec`), not to
//! `ValidatePodUpdate`'s rules.

use serde_json::{Map, Value};

use super::super::field::{Errors, FieldPath, Shown};
use super::pod_update::{MIRROR, same};
use super::{items, text};
use crate::KubeVersion;
use crate::quantity::{Format, Quantity};
use crate::write_rules::pod_qos_class;

/// The release from which a resize may lower or add a memory limit whatever the container's
/// memory resize policy (kubelet checks usage instead); in 1.32 and 1.33 only `RestartContainer`
/// allowed it.
const MEMORY_LIMIT_DECREASE_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// The resources a resize may change.
const RESIZABLE: [&str; 2] = ["cpu", "memory"];
const ONLY_CPU_AND_MEMORY: &str = "only cpu and memory resources are mutable";

/// `ValidatePodResize`'s refusals of the pod as a whole, each upstream's only error: pod-level
/// resources (set before or after), a static (mirror) pod, a Windows pod.
pub(super) fn pod_resize_refused(new: &Value, old: &Value, release: KubeVersion) -> Option<Errors> {
    let windows = old
        .pointer("/spec/os/name")
        .and_then(Value::as_str)
        .is_some_and(|os| os == "windows");
    let mirrored = old
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR));
    let message = if pod_level_resources(old) || pod_level_resources(new) {
        "pods with pod-level resources cannot be resized"
    } else if mirrored {
        "static pods cannot be resized"
    } else if windows {
        "windows pods cannot be resized"
    } else {
        return None;
    };
    let mut errors = Errors::new(release);
    errors.forbidden(&FieldPath::root(), message);
    Some(errors)
}

/// Whether the pod sets `spec.resources` requests or limits.
fn pod_level_resources(pod: &Value) -> bool {
    ["requests", "limits"].iter().any(|kind| {
        pod.pointer(&format!("/spec/resources/{kind}"))
            .and_then(Value::as_object)
            .is_some_and(|list| !list.is_empty())
    })
}

/// `ValidatePodResize`'s second part, after the pod's own checks (whose errors `errors` holds):
/// the QoS class, the node's support, each container's resize, and that nothing but `cpu` and
/// `memory` changed (checked last, and only when nothing else was reported).
pub(super) fn pod_resize(new: &Value, old: &Value, errors: &mut Errors) {
    let null = Value::Null;
    let new_spec = new.get("spec").unwrap_or(&null);
    let old_spec = old.get("spec").unwrap_or(&null);
    let spec_at = FieldPath::of("spec");
    // qos.GetPodQOS(old) (the recorded class) against qos.ComputePodQOS(new); the value shown
    // is the new pod's status class, the stored one.
    let recorded = old
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .filter(|class| !class.is_empty());
    if recorded.unwrap_or_else(|| pod_qos_class(old)) != pod_qos_class(new) {
        let shown = Value::from(
            new.pointer("/status/qosClass")
                .and_then(Value::as_str)
                .unwrap_or(""),
        );
        errors.invalid(
            &spec_at,
            Shown::Plain(&shown),
            "Pod QOS Class may not change as a result of resizing",
        );
    }
    if !resize_supported(old) {
        errors.forbidden(&spec_at, "Pod running on node without support for resize");
    }
    let old_inits = items(old_spec, "initContainers");
    let new_inits = items(new_spec, "initContainers");
    for (ix, before) in old_inits.iter().enumerate() {
        if let Some(after) = new_inits.get(ix).filter(|_| restartable(before)) {
            let at = spec_at.child("initContainers").index(ix).child("resources");
            container_resize(after, before, &at, errors);
        }
    }
    let old_containers = items(old_spec, "containers");
    let new_containers = items(new_spec, "containers");
    for (ix, before) in old_containers.iter().enumerate() {
        if let Some(after) = new_containers.get(ix) {
            let at = spec_at.child("containers").index(ix).child("resources");
            container_resize(after, before, &at, errors);
        }
    }
    let mut munged_containers = Vec::new();
    for (ix, container) in new_containers.iter().enumerate() {
        // Upstream indexes the stored containers by the written ones' positions; a write with
        // more containers than stored is refused here rather than failing.
        let munged = old_containers
            .get(ix)
            .map(|before| (without_cpu_memory_changes(container, before), before));
        match munged {
            Some((munged, before)) if same_container(&munged, before) => {
                munged_containers.push(munged);
            }
            Some((munged, _)) => {
                errors.forbidden(&spec_at, ONLY_CPU_AND_MEMORY);
                munged_containers.push(munged);
            }
            None => {
                errors.forbidden(&spec_at, ONLY_CPU_AND_MEMORY);
                munged_containers.push(container.clone());
            }
        }
    }
    let mut munged_inits = Vec::new();
    for (ix, container) in new_inits.iter().enumerate() {
        let before = old_inits.get(ix).unwrap_or(&null);
        if restartable(container) {
            let munged = without_cpu_memory_changes(container, before);
            if !same_container(&munged, before) {
                errors.forbidden(
                    &spec_at,
                    "only cpu and memory resources for sidecar containers are mutable",
                );
            }
            munged_inits.push(munged);
        } else {
            if !same_container(container, before) {
                errors.forbidden(
                    &spec_at,
                    "resources for non-sidecar init containers are immutable",
                );
            }
            munged_inits.push(container.clone());
        }
    }
    if !errors.is_empty() {
        return;
    }
    let mut munged = new_spec.clone();
    if let Value::Object(spec) = &mut munged {
        for (list, containers) in [
            ("containers", munged_containers),
            ("initContainers", munged_inits),
        ] {
            if spec.contains_key(list) {
                spec.insert(list.into(), Value::Array(containers));
            }
        }
    }
    if !same(
        Some(&normalized_spec(&munged)),
        Some(&normalized_spec(old_spec)),
    ) {
        errors.forbidden(&spec_at, ONLY_CPU_AND_MEMORY);
    }
}

/// `isPodResizeRequestSupported`: the first running container (in the stored status) reports
/// its allocated resources, as a kubelet with the feature does; with none running, assumed.
fn resize_supported(pod: &Value) -> bool {
    let null = Value::Null;
    items(pod.get("status").unwrap_or(&null), "containerStatuses")
        .iter()
        .find(|status| {
            status
                .pointer("/state/running")
                .is_some_and(|running| !running.is_null())
        })
        .is_none_or(|status| status.get("resources").is_some_and(|r| !r.is_null()))
}

/// `isRestartableInitContainer`: a sidecar, `restartPolicy: Always`.
fn restartable(container: &Value) -> bool {
    text(container, "restartPolicy") == "Always"
}

/// A container's `resources.<kind>` list, when set (Go's non-nil map).
fn resource_list<'v>(container: &'v Value, kind: &str) -> Option<&'v Map<String, Value>> {
    container
        .pointer(&format!("/resources/{kind}"))
        .and_then(Value::as_object)
}

/// A quantity of a resource list (a string, or a number a client sent).
fn quantity(list: Option<&Map<String, Value>>, name: &str) -> Option<Quantity> {
    let value = list?.get(name)?;
    value.as_str().and_then(|s| s.parse().ok()).or_else(|| {
        value
            .as_i64()
            .map(|n| Quantity::from_i64(n, Format::DecimalSi))
    })
}

/// `validateContainerResize` at `at` (the container's `resources`): requests and limits may not
/// be removed, and before 1.34 a memory limit may neither go down nor be added unless the
/// container's memory resize policy is `RestartContainer`.
fn container_resize(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    for kind in ["requests", "limits"] {
        let (after, before) = (resource_list(new, kind), resource_list(old, kind));
        let removed = before.is_some_and(|before| {
            before.len() > after.map_or(0, Map::len)
                || before
                    .keys()
                    .any(|name| !after.is_some_and(|a| a.contains_key(name)))
        });
        if removed {
            errors.forbidden(
                &at.child(kind),
                &format!("resource {kind} cannot be removed"),
            );
        }
    }
    if errors.release() >= MEMORY_LIMIT_DECREASE_SINCE {
        return;
    }
    let policy = items(new, "resizePolicy")
        .iter()
        .find(|p| text(p, "resourceName") == "memory")
        .map_or("", |p| text(p, "restartPolicy"));
    if !matches!(policy, "" | "NotRequired") {
        return;
    }
    let (after, before) = (resource_list(new, "limits"), resource_list(old, "limits"));
    let has = |list: Option<&Map<String, Value>>| list.is_some_and(|l| l.contains_key("memory"));
    let detail = match (has(after), has(before)) {
        (true, true) => match (quantity(after, "memory"), quantity(before, "memory")) {
            (Some(a), Some(b)) if a < b => "decreased",
            _ => return,
        },
        (true, false) => "added",
        _ => return,
    };
    errors.forbidden(
        &at.child("limits").key("memory"),
        &format!("memory limits cannot be {detail} unless resizePolicy is RestartContainer"),
    );
}

/// `dropCPUMemoryResourcesFromContainer`: the written container with the stored `cpu` and
/// `memory` requests and limits (a list the stored container lacks stays unset) and no
/// resource claims.
fn without_cpu_memory_changes(container: &Value, old: &Value) -> Value {
    let mut resources = Map::new();
    for kind in ["limits", "requests"] {
        let Some(before) = resource_list(old, kind) else {
            continue;
        };
        let mut list = resource_list(container, kind).cloned().unwrap_or_default();
        for name in RESIZABLE {
            match before.get(name) {
                Some(quantity) => list.insert(name.into(), quantity.clone()),
                None => list.remove(name),
            };
        }
        resources.insert(kind.into(), Value::Object(list));
    }
    let mut munged = container.clone();
    if let Value::Object(map) = &mut munged {
        map.insert("resources".into(), Value::Object(resources));
    }
    munged
}

/// `apiequality.Semantic.DeepEqual` of two containers, whose `resources` is a struct of maps
/// in Go: an unset list equals an empty one, and no resources equal empty ones.
fn same_container(a: &Value, b: &Value) -> bool {
    same(Some(&normalized(a)), Some(&normalized(b)))
}

/// The container with its `resources` written as Go compares them: empty lists and an empty
/// `resources` left out.
fn normalized(container: &Value) -> Value {
    let mut container = container.clone();
    if let Value::Object(map) = &mut container {
        let resources = match map.remove("resources") {
            Some(Value::Object(mut resources)) => {
                resources.retain(|_, v| match v {
                    Value::Null => false,
                    Value::Object(list) => !list.is_empty(),
                    Value::Array(items) => !items.is_empty(),
                    _ => true,
                });
                resources
            }
            _ => Map::new(),
        };
        if !resources.is_empty() {
            map.insert("resources".into(), Value::Object(resources));
        }
    }
    container
}

/// The spec with each container and init container [`normalized`].
fn normalized_spec(spec: &Value) -> Value {
    let mut spec = spec.clone();
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(containers)) = spec.get_mut(list) {
            for container in containers.iter_mut() {
                *container = normalized(container);
            }
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::validation::rules::rendered;

    fn at(minor: u16) -> KubeVersion {
        KubeVersion::new(1, minor)
    }

    fn pod(containers: Value, qos: &str) -> Value {
        json!({
            "metadata": {"name": "p"},
            "spec": {"containers": containers},
            "status": {"qosClass": qos},
        })
    }

    fn burstable(cpu: &str, memory: &str) -> Value {
        pod(
            json!([{"name": "c", "image": "i", "resources": {
                "requests": {"cpu": cpu, "memory": memory},
                "limits": {"memory": "1Gi"}}}]),
            "Burstable",
        )
    }

    fn resized(new: &Value, old: &Value, minor: u16) -> Vec<String> {
        if let Some(alone) = pod_resize_refused(new, old, at(minor)) {
            return rendered(alone);
        }
        let mut errors = Errors::new(at(minor));
        pod_resize(new, old, &mut errors);
        rendered(errors)
    }

    #[test]
    fn cpu_and_memory_change_in_place() {
        // ValidatePodResize: requests may change within the QoS class.
        let old = burstable("100m", "64Mi");
        let new = burstable("200m", "128Mi");
        assert!(resized(&new, &old, 34).is_empty());
        assert!(resized(&new, &old, 36).is_empty());
    }

    #[test]
    fn the_qos_class_stays() {
        // ValidatePodResize: qos.GetPodQOS(old) != qos.ComputePodQOS(new).
        let old = burstable("100m", "64Mi");
        let mut new = old.clone();
        new["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(
            resized(&new, &old, 34),
            [
                r#"spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing"#
            ]
        );
    }

    #[test]
    fn only_cpu_and_memory_change_and_none_go_away() {
        // ValidatePodResize and validateContainerResize.
        let old = burstable("100m", "64Mi");
        let mut storage = old.clone();
        storage["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] =
            json!("1Gi");
        assert_eq!(
            resized(&storage, &old, 34),
            ["spec: Forbidden: only cpu and memory resources are mutable"]
        );
        let mut removed = old.clone();
        removed["spec"]["containers"][0]["resources"]["requests"] = json!({"cpu": "1"});
        assert_eq!(
            resized(&removed, &old, 34),
            [
                "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"
            ]
        );
        // Anything else of the spec: the last check.
        let mut image = old.clone();
        image["spec"]["containers"][0]["image"] = json!("other");
        assert_eq!(
            resized(&image, &old, 36),
            ["spec: Forbidden: only cpu and memory resources are mutable"]
        );
        let mut restart = old.clone();
        restart["spec"]["restartPolicy"] = json!("Never");
        assert_eq!(
            resized(&restart, &old, 36),
            ["spec: Forbidden: only cpu and memory resources are mutable"]
        );
    }

    #[test]
    fn memory_limits_went_down_only_with_a_restart_before_1_34() {
        // validateContainerResize in 1.33; lifted in 1.34 (kubernetes#133012).
        let old = burstable("100m", "64Mi");
        let mut lower = old.clone();
        lower["spec"]["containers"][0]["resources"]["limits"]["memory"] = json!("512Mi");
        assert_eq!(
            resized(&lower, &old, 33),
            [
                "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer"
            ]
        );
        assert!(resized(&lower, &old, 34).is_empty());
        lower["spec"]["containers"][0]["resizePolicy"] =
            json!([{"resourceName": "memory", "restartPolicy": "RestartContainer"}]);
        let mut old_with_policy = old.clone();
        old_with_policy["spec"]["containers"][0]["resizePolicy"] =
            lower["spec"]["containers"][0]["resizePolicy"].clone();
        assert!(resized(&lower, &old_with_policy, 33).is_empty());
    }

    #[test]
    fn init_containers_resize_only_as_sidecars() {
        // ValidatePodResize with SidecarContainers on.
        let spec = |restart: Option<&str>, cpu: &str| {
            let mut init =
                json!({"name": "i", "image": "i", "resources": {"requests": {"cpu": cpu}}});
            if let Some(policy) = restart {
                init["restartPolicy"] = json!(policy);
            }
            let mut pod = burstable("100m", "64Mi");
            pod["spec"]["initContainers"] = json!([init]);
            pod
        };
        assert!(resized(&spec(Some("Always"), "2"), &spec(Some("Always"), "1"), 34).is_empty());
        assert_eq!(
            resized(&spec(None, "2"), &spec(None, "1"), 34),
            ["spec: Forbidden: resources for non-sidecar init containers are immutable"]
        );
    }

    #[test]
    fn some_pods_are_not_resized() {
        // ValidatePodResize's refusals of the whole pod, and isPodResizeRequestSupported.
        let old = burstable("100m", "64Mi");
        let new = burstable("200m", "64Mi");
        let mut static_pod = old.clone();
        static_pod["metadata"]["annotations"] = json!({MIRROR: "x"});
        assert_eq!(
            resized(&new, &static_pod, 34),
            [": Forbidden: static pods cannot be resized"]
        );
        let mut windows = old.clone();
        windows["spec"]["os"] = json!({"name": "windows"});
        assert_eq!(
            resized(&new, &windows, 34),
            [": Forbidden: windows pods cannot be resized"]
        );
        let mut pod_level = old.clone();
        pod_level["spec"]["resources"] = json!({"requests": {"cpu": "1"}});
        assert_eq!(
            resized(&new, &pod_level, 36),
            [": Forbidden: pods with pod-level resources cannot be resized"]
        );
        let mut old_node = old.clone();
        old_node["status"]["containerStatuses"] = json!([{"name": "c", "state": {"running": {}}}]);
        assert_eq!(
            resized(&new, &old_node, 34),
            ["spec: Forbidden: Pod running on node without support for resize"]
        );
        old_node["status"]["containerStatuses"][0]["resources"] = json!({});
        assert!(resized(&new, &old_node, 34).is_empty());
    }
}
