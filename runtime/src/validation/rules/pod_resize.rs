//! What a write through a pod's `/resize` may change (`ValidatePodResize` in
//! `pkg/apis/core/validation/validation.go`, read as of 1.33 and 1.36, with the changes between
//! them from their pull requests: the container ordering checks of kubernetes#130282 (1.33), the
//! memory limit rule lifted by #133012 (1.34), resources new to a container checked by #135084
//! (1.35), pod-level resources resized from 1.36 (InPlacePodLevelResourcesVerticalScaling,
//! #132919 alpha in 1.35, beta and on in 1.36) and non-sidecar init containers resized from 1.36
//! (InPlacePodVerticalScalingInitContainers, #137352, with #137458's resize policy rule)): the
//! pod keeps its QoS class; containers are neither added, removed, renamed nor reordered; a
//! container's requests and limits may change but not go away; only `cpu` and `memory` change.
//! A static pod and a Windows pod are refused whole (their error alone), as is, before 1.35, a
//! pod with pod-level resources; a pod whose running container reports no allocated resources
//! runs on a node without resize. The write itself keeps only the containers' `resources` and
//! `resizePolicy` (`dropNonResizeUpdates`, the server's `handlers::update`); the pod's metadata
//! and spec are held to what a create holds them to (`validatePodMetadataAndSpec`), not to
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
/// The release whose resize checks resources a container had no list of before
/// (`dropCPUMemoryUpdates` after #135084), and whose pods with pod-level resources meet the
/// InPlacePodLevelResourcesVerticalScaling gate (alpha, off) rather than a refusal of their own.
const POD_LEVEL_GATE_SINCE: KubeVersion = KubeVersion::new(1, 35);
/// The release that resizes pod-level resources and non-sidecar init containers (both gates
/// beta and on), and refuses pods holding node-allocatable resource claims.
const POD_LEVEL_AND_INIT_RESIZE_SINCE: KubeVersion = KubeVersion::new(1, 36);
/// The resources a resize may change.
const RESIZABLE: [&str; 2] = ["cpu", "memory"];
const ONLY_CPU_AND_MEMORY: &str = "only cpu and memory resources are mutable";

/// `ValidatePodResize`'s refusals of the pod as a whole, each upstream's only error: a static
/// (mirror) pod, a Windows pod and, before 1.35 and first, pod-level resources (set before or
/// after).
pub(super) fn pod_resize_refused(new: &Value, old: &Value, release: KubeVersion) -> Option<Errors> {
    let windows = old
        .pointer("/spec/os/name")
        .and_then(Value::as_str)
        .is_some_and(|os| os == "windows");
    let mirrored = old
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR));
    let pod_level =
        release < POD_LEVEL_GATE_SINCE && (pod_level_resources(old) || pod_level_resources(new));
    let message = if pod_level {
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

/// Whether the pod sets `spec.resources` requests or limits (`isPodLevelResourcesSet`).
fn pod_level_resources(pod: &Value) -> bool {
    ["requests", "limits"].iter().any(|kind| {
        pod.pointer(&format!("/spec/resources/{kind}"))
            .and_then(Value::as_object)
            .is_some_and(|list| !list.is_empty())
    })
}

/// `ValidatePodResize`'s part after the pod's own checks (whose errors `errors` holds): the QoS
/// class, the node's support, pod-level resources, the containers' order, each container's
/// resize, and that nothing but `cpu` and `memory` changed (checked last, and only when nothing
/// else was reported).
pub(super) fn pod_resize(new: &Value, old: &Value, errors: &mut Errors) {
    let release = errors.release();
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
    let mut munged = new_spec.clone();
    if release >= POD_LEVEL_GATE_SINCE && (pod_level_resources(old) || pod_level_resources(new)) {
        if release < POD_LEVEL_AND_INIT_RESIZE_SINCE {
            errors.forbidden(
                &FieldPath::root(),
                "resize of pods with pod-level resources is forbidden when InPlacePodLevelResourcesVerticalScalingEnabled feature gate is disabled",
            );
            return;
        }
        let resources = pod_level_resize(new_spec, old_spec, &spec_at, errors);
        if let Value::Object(spec) = &mut munged {
            match resources {
                Some(resources) => spec.insert("resources".into(), resources),
                None => spec.remove("resources"),
            };
        }
    }
    let node_allocatable_claims = old
        .pointer("/status/nodeAllocatableResourceClaimStatuses")
        .and_then(Value::as_array)
        .is_some_and(|claims| !claims.is_empty());
    if release >= POD_LEVEL_AND_INIT_RESIZE_SINCE && node_allocatable_claims {
        errors.forbidden(
            &spec_at,
            "pods with node allocatable resource claims cannot be resized",
        );
    }
    if !same_container_order(new_spec, old_spec, &spec_at, errors) {
        return;
    }
    let init_resize = release >= POD_LEVEL_AND_INIT_RESIZE_SINCE;
    let old_inits = items(old_spec, "initContainers");
    let new_inits = items(new_spec, "initContainers");
    for (ix, (after, before)) in new_inits.iter().zip(old_inits).enumerate() {
        if init_resize || restartable(before) {
            let at = spec_at.child("initContainers").index(ix).child("resources");
            container_resize(after, before, &at, errors);
        }
    }
    let old_containers = items(old_spec, "containers");
    let new_containers = items(new_spec, "containers");
    for (ix, (after, before)) in new_containers.iter().zip(old_containers).enumerate() {
        let at = spec_at.child("containers").index(ix).child("resources");
        container_resize(after, before, &at, errors);
    }
    let mut munged_containers = Vec::new();
    for (container, before) in new_containers.iter().zip(old_containers) {
        let container = without_cpu_memory_changes(container, before, release);
        if !same_container(&container, before) {
            errors.forbidden(&spec_at, ONLY_CPU_AND_MEMORY);
        }
        munged_containers.push(container);
    }
    let mut munged_inits = Vec::new();
    for (ix, (container, before)) in new_inits.iter().zip(old_inits).enumerate() {
        munged_inits.push(init_container_resize(
            container,
            before,
            &spec_at.child("initContainers").index(ix),
            errors,
        ));
    }
    if !errors.is_empty() {
        return;
    }
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

/// `validatePodResizeContainerOrdering` (from 1.33): no container or init container added,
/// removed, renamed or reordered. Returns whether the order held, without which the rest is not
/// checked.
fn same_container_order(
    new: &Value,
    old: &Value,
    spec_at: &FieldPath,
    errors: &mut Errors,
) -> bool {
    let mut held = true;
    for list in ["containers", "initContainers"] {
        let (after, before) = (items(new, list), items(old, list));
        let at = spec_at.child(list);
        if after.len() != before.len() {
            errors.forbidden(
                &at,
                &format!("{list} may not be added or removed on resize"),
            );
            held = false;
            continue;
        }
        for (i, (a, b)) in after.iter().zip(before).enumerate() {
            if text(a, "name") != text(b, "name") {
                errors.forbidden(
                    &at.index(i).child("name"),
                    &format!("{list} may not be renamed or reordered on resize"),
                );
                held = false;
            }
        }
    }
    held
}

/// An init container's part of the last checks at `at`: before 1.36 a sidecar changes only
/// `cpu` and `memory` and a regular init container not at all; from 1.36 (non-sidecar init
/// containers resize too) any init container changes only `cpu` and `memory`, and a regular one
/// whose resize policy restarts it is not resized. Returns the container with its `cpu` and
/// `memory` as stored where it may resize.
fn init_container_resize(
    container: &Value,
    before: &Value,
    at: &FieldPath,
    errors: &mut Errors,
) -> Value {
    let release = errors.release();
    let modified = !same_container(container, before);
    let sidecar = restartable(container);
    if release < POD_LEVEL_AND_INIT_RESIZE_SINCE {
        if !sidecar {
            if modified {
                errors.forbidden(
                    &FieldPath::of("spec"),
                    "resources for non-sidecar init containers are immutable",
                );
            }
            return container.clone();
        }
        let munged = without_cpu_memory_changes(container, before, release);
        if !same_container(&munged, before) {
            errors.forbidden(
                &FieldPath::of("spec"),
                "only cpu and memory resources for sidecar containers are mutable",
            );
        }
        return munged;
    }
    let munged = without_cpu_memory_changes(container, before, release);
    if !same_container(&munged, before) {
        errors.forbidden(
            at,
            "only cpu and memory resources for init or sidecar containers are mutable",
        );
    }
    if modified && !sidecar {
        for policy in items(&munged, "resizePolicy") {
            if text(policy, "restartPolicy") == "RestartContainer" {
                errors.forbidden(
                    at,
                    "non-sidecar init containers with a resize policy of RestartContainer cannot be resized",
                );
            }
        }
    }
    munged
}

/// `validatePodLevelResourcesResize` (from 1.36): pod-level resources, once set, stay, as do
/// their requests and limits, and only their `cpu` and `memory` change. Returns the written
/// pod-level resources with `cpu` and `memory` as stored
/// (`dropCPUMemoryResourceRequirementsUpdates`), for the last check.
fn pod_level_resize(
    new: &Value,
    old: &Value,
    spec_at: &FieldPath,
    errors: &mut Errors,
) -> Option<Value> {
    let set = |spec: &Value| spec.get("resources").filter(|r| !r.is_null()).cloned();
    let (after, before) = (set(new), set(old));
    let at = spec_at.child("resources");
    let Some(after) = after else {
        if before.is_some() {
            errors.forbidden(&at, "pod-level resources cannot be removed");
        }
        return None;
    };
    if let Some(before) = &before {
        for kind in ["requests", "limits"] {
            if removed(list_of(&after, kind), list_of(before, kind)) {
                errors.forbidden(
                    &at.child(kind),
                    &format!("pod-level resource {kind} cannot be removed"),
                );
            }
        }
    }
    let null = Value::Null;
    let old_resources = before.as_ref().unwrap_or(&null);
    let mut munged = after.clone();
    if let Value::Object(map) = &mut munged {
        for kind in ["requests", "limits"] {
            let list = drop_cpu_memory_updates(
                list_of(&after, kind),
                list_of(old_resources, kind),
                errors.release(),
            );
            match list {
                Some(list) => map.insert(kind.into(), Value::Object(list)),
                None => map.remove(kind),
            };
        }
        let empty = |key: &str| map.get(key).is_none_or(is_empty);
        if before.is_none() && empty("requests") && empty("limits") && empty("claims") {
            munged = Value::Null;
        }
    }
    let munged = Some(munged).filter(|m| !m.is_null());
    let normal = |r: &Option<Value>| r.as_ref().map(normalized_resources);
    if !same(normal(&munged).as_ref(), normal(&before).as_ref()) {
        errors.forbidden(
            spec_at,
            "only cpu and memory resources are mutable at pod-level",
        );
    }
    munged
}

/// A null, empty object or empty list: Go's nil or empty map or slice.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
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
    container.get("resources").and_then(|r| list_of(r, kind))
}

/// A `ResourceRequirements`' `<kind>` list, when set.
fn list_of<'v>(resources: &'v Value, kind: &str) -> Option<&'v Map<String, Value>> {
    resources.get(kind).and_then(Value::as_object)
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

/// `resourcesRemoved`: a resource of the stored list missing from the written one.
fn removed(after: Option<&Map<String, Value>>, before: Option<&Map<String, Value>>) -> bool {
    before.is_some_and(|before| {
        before
            .keys()
            .any(|name| !after.is_some_and(|a| a.contains_key(name)))
    })
}

/// `validateContainerResize` at `at` (the container's `resources`): requests and limits may not
/// be removed, and before 1.34 a memory limit may neither go down nor be added unless the
/// container's memory resize policy is `RestartContainer`.
fn container_resize(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    for kind in ["requests", "limits"] {
        if removed(resource_list(new, kind), resource_list(old, kind)) {
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

/// `dropCPUMemoryUpdates`: the written list with the stored `cpu` and `memory`. A list the
/// stored side lacks stays unset before 1.35, and from 1.35 only when the written side lacks
/// it too (so that other resources added to it show).
fn drop_cpu_memory_updates(
    list: Option<&Map<String, Value>>,
    before: Option<&Map<String, Value>>,
    release: KubeVersion,
) -> Option<Map<String, Value>> {
    if before.is_none() && (list.is_none() || release < POD_LEVEL_GATE_SINCE) {
        return None;
    }
    let mut list = list.cloned().unwrap_or_default();
    for name in RESIZABLE {
        match before.and_then(|b| b.get(name)) {
            Some(quantity) => list.insert(name.into(), quantity.clone()),
            None => list.remove(name),
        };
    }
    Some(list)
}

/// `dropCPUMemoryResourcesFromContainer`: the written container with the stored `cpu` and
/// `memory` requests and limits ([`drop_cpu_memory_updates`]) and no resource claims.
fn without_cpu_memory_changes(container: &Value, old: &Value, release: KubeVersion) -> Value {
    let mut resources = Map::new();
    for kind in ["limits", "requests"] {
        let list = drop_cpu_memory_updates(
            resource_list(container, kind),
            resource_list(old, kind),
            release,
        );
        if let Some(list) = list {
            resources.insert(kind.into(), Value::Object(list));
        }
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
        let resources = map.remove("resources").map(|r| normalized_resources(&r));
        if let Some(resources) = resources.filter(|r| !is_empty(r)) {
            map.insert("resources".into(), resources);
        }
    }
    container
}

/// A `ResourceRequirements` without its empty lists (Go's nil and empty maps compare equal).
fn normalized_resources(resources: &Value) -> Value {
    match resources {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !is_empty(v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => Value::Object(Map::new()),
    }
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

    fn with_init(restart: Option<&str>, cpu: &str, policy: Option<&str>) -> Value {
        let mut init = json!({"name": "i", "image": "i", "resources": {"requests": {"cpu": cpu}}});
        if let Some(restart) = restart {
            init["restartPolicy"] = json!(restart);
        }
        if let Some(policy) = policy {
            init["resizePolicy"] = json!([{"resourceName": "cpu", "restartPolicy": policy}]);
        }
        let mut pod = burstable("100m", "64Mi");
        pod["spec"]["initContainers"] = json!([init]);
        pod
    }

    #[test]
    fn init_containers_resize_as_sidecars_and_from_1_36_all() {
        // ValidatePodResize: sidecars only in 1.34; InPlacePodVerticalScalingInitContainers
        // (beta in 1.36) resizes the others, but not with a RestartContainer policy (#137458).
        let sidecar = |cpu| with_init(Some("Always"), cpu, None);
        assert!(resized(&sidecar("2"), &sidecar("1"), 34).is_empty());
        let regular = |cpu, policy| with_init(None, cpu, policy);
        assert_eq!(
            resized(&regular("2", None), &regular("1", None), 34),
            ["spec: Forbidden: resources for non-sidecar init containers are immutable"]
        );
        assert!(resized(&regular("2", None), &regular("1", None), 36).is_empty());
        let restarting = Some("RestartContainer");
        assert_eq!(
            resized(&regular("2", restarting), &regular("1", restarting), 36),
            [
                "spec.initContainers[0]: Forbidden: non-sidecar init containers with a resize policy of RestartContainer cannot be resized"
            ]
        );
        let mut storage = regular("1", None);
        storage["spec"]["initContainers"][0]["resources"]["requests"]["ephemeral-storage"] =
            json!("1Gi");
        assert_eq!(
            resized(&storage, &regular("1", None), 36),
            [
                "spec.initContainers[0]: Forbidden: only cpu and memory resources for init or sidecar containers are mutable"
            ]
        );
    }

    #[test]
    fn containers_keep_their_order() {
        // validatePodResizeContainerOrdering (1.33 on).
        let old = burstable("100m", "64Mi");
        let mut renamed = old.clone();
        renamed["spec"]["containers"][0]["name"] = json!("d");
        assert_eq!(
            resized(&renamed, &old, 34),
            [
                "spec.containers[0].name: Forbidden: containers may not be renamed or reordered on resize"
            ]
        );
        let mut added = old.clone();
        added["spec"]["initContainers"] = json!([{"name": "i", "image": "i"}]);
        assert_eq!(
            resized(&added, &old, 36),
            [
                "spec.initContainers: Forbidden: initContainers may not be added or removed on resize"
            ]
        );
    }

    #[test]
    fn resources_new_to_a_container_are_checked_from_1_35() {
        // dropCPUMemoryUpdates before and after kubernetes#135084: a container without limits
        // could take any resource as a limit.
        let mut unlimited = burstable("100m", "64Mi");
        unlimited["spec"]["containers"][0]["resources"]
            .as_object_mut()
            .unwrap()
            .remove("limits");
        let mut added = unlimited.clone();
        added["spec"]["containers"][0]["resources"]["limits"] = json!({"ephemeral-storage": "1Gi"});
        assert!(resized(&added, &unlimited, 34).is_empty());
        assert_eq!(
            resized(&added, &unlimited, 36),
            ["spec: Forbidden: only cpu and memory resources are mutable"]
        );
    }

    #[test]
    fn pod_level_resources_resize_from_1_36() {
        // validatePodLevelResourcesResize (InPlacePodLevelResourcesVerticalScaling on in 1.36).
        let pod_level = |cpu: &str, extra: Option<(&str, &str)>| {
            let mut pod = burstable("100m", "64Mi");
            pod["spec"]["resources"] = json!({"requests": {"cpu": cpu}});
            if let Some((name, quantity)) = extra {
                pod["spec"]["resources"]["requests"][name] = json!(quantity);
            }
            pod
        };
        let old = pod_level("1", None);
        assert_eq!(
            resized(&pod_level("2", None), &old, 34),
            [": Forbidden: pods with pod-level resources cannot be resized"]
        );
        assert!(resized(&pod_level("2", None), &old, 36).is_empty());
        assert_eq!(
            resized(
                &pod_level("1", Some(("ephemeral-storage", "1Gi"))),
                &old,
                36
            ),
            ["spec: Forbidden: only cpu and memory resources are mutable at pod-level"]
        );
        let mut removed = old.clone();
        removed["spec"].as_object_mut().unwrap().remove("resources");
        assert!(resized(&removed, &old, 36).contains(
            &"spec.resources: Forbidden: pod-level resources cannot be removed".to_owned()
        ));
    }

    #[test]
    fn some_pods_are_not_resized() {
        // ValidatePodResize's refusals of the whole pod, isPodResizeRequestSupported and, in
        // 1.36, node-allocatable claims (KEP-5517).
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
        let mut claims = old.clone();
        claims["status"]["nodeAllocatableResourceClaimStatuses"] =
            json!([{"resourceClaimName": "x"}]);
        assert_eq!(
            resized(&new, &claims, 36),
            ["spec: Forbidden: pods with node allocatable resource claims cannot be resized"]
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
