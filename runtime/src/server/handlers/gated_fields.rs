//! Fields a release's strategies drop while the feature gate that owns them is off by default
//! there (upstream's `dropDisabledFields`, run by `PrepareForCreate` and `PrepareForUpdate`):
//! a create loses them, and so does an update unless the stored object already used the
//! feature; a write through a pod's `status` loses the status fields of such gates
//! (`dropDisabledPodStatusFields`). A field the release's schema lacks altogether is pruned by
//! the codec instead; what is left here are fields the release declares but does not serve yet
//! (alpha, or beta and off). A gate the release table (`specs/gating`) records is on or off as
//! the server resolves it, so `--feature-gates` moves it; the others follow the release's
//! default.
//!
//! Each gate is data: the fields it owns, as paths under the object's pod spec or the object,
//! and the paths whose presence in the stored object means the feature is in use. Where a drop
//! is more than removing fields it is one named function (image volumes with their mounts, a
//! Job's per-index backoff, a masked `procMount`), and so is a claim's data sources, which its
//! strategy also fills in from each other once AnyVolumeDataSource is on.
//!
//! Upstream: `pkg/api/pod/util.go` (`dropDisabledFields`, `DropDisabledTemplateFields`, called
//! by every kind with a pod template), `pkg/api/persistentvolumeclaim/util.go`
//! (`DropDisabledFields`, `EnforceDataSourceBackwardsCompatibility`, `NormalizeDataSources`),
//! the Job, StatefulSet and Service strategies' `dropDisabledFields`, and the feature gates'
//! defaults per release (`pkg/features/kube_features.go`).

use serde_json::Value;

use crate::KubeVersion;
use crate::server::objects::json::object_mut;
use crate::server::state::feature_gates::Features;
use crate::server::state::release::{Feature, FeatureState};
use crate::validation::restart_rules_in_use;

/// A feature gate whose fields a release drops while it is off.
struct Gate {
    /// When the gate is on.
    on: On,
    /// The fields it owns; `*` is every item of a list.
    fields: &'static [&'static str],
    /// The fields whose presence in the stored object means the feature is in use.
    in_use: &'static [&'static str],
}

/// When a gate is on.
#[derive(Clone, Copy)]
enum On {
    /// By default from a release on; the release table does not record the gate, so
    /// `--feature-gates` does not name it.
    Since(KubeVersion),
    /// As the server resolves a feature the release table records (the release's default,
    /// changed by `--feature-gates`); by default from a release on where it does not.
    Feature(Feature, KubeVersion),
    /// In no release kapi serves.
    Never,
}

impl On {
    fn is_on(self, release: KubeVersion, features: &Features) -> bool {
        match self {
            Self::Since(since) => release >= since,
            Self::Feature(feature, since) => match features.state(release, feature) {
                FeatureState::On => true,
                FeatureState::Off => false,
                FeatureState::Absent => release >= since,
            },
            Self::Never => false,
        }
    }
}

impl Gate {
    /// Removes the gate's fields from `value`, unless the gate is on or `old` uses the
    /// feature.
    fn drop_from(
        &self,
        value: &mut Value,
        old: Option<&Value>,
        release: KubeVersion,
        features: &Features,
    ) {
        if self.on.is_on(release, features)
            || old.is_some_and(|old| self.in_use.iter().any(|p| present(old, p)))
        {
            return;
        }
        for path in self.fields {
            remove(value, path);
        }
    }
}

const fn since(minor: u16) -> On {
    On::Since(KubeVersion::new(1, minor))
}

/// The pod spec's gates kapi's releases have off by default, with paths under the pod spec.
const POD_SPEC_GATES: &[Gate] = &[
    // EphemeralContainers: alpha in 1.16, beta and on in 1.23.
    Gate {
        on: since(23),
        fields: &["ephemeralContainers"],
        in_use: &["ephemeralContainers"],
    },
    // GenericEphemeralVolume: alpha in 1.19, beta and on in 1.21.
    Gate {
        on: since(21),
        fields: &["volumes/*/ephemeral"],
        in_use: &["volumes/*/ephemeral"],
    },
    // SidecarContainers: alpha in 1.28, beta and on in 1.29; only init containers' restart
    // policies are dropped (validation refuses the others').
    Gate {
        on: since(29),
        fields: &["initContainers/*/restartPolicy"],
        in_use: &["initContainers/*/restartPolicy"],
    },
    // InPlacePodVerticalScaling: alpha in 1.27, beta and on in 1.33; the resources stay (a
    // template's are mutable), the resize policies go.
    Gate {
        on: On::Feature(Feature::InPlacePodVerticalScaling, KubeVersion::new(1, 33)),
        fields: &["containers/*/resizePolicy"],
        in_use: &["containers/*/resizePolicy"],
    },
    // UserNamespacesSupport: alpha in 1.25, beta in 1.30, on in 1.33.
    Gate {
        on: since(33),
        fields: &["hostUsers"],
        in_use: &["hostUsers"],
    },
    // DynamicResourceAllocation: alpha in 1.26, GA and on in 1.34. Containers cannot name a
    // claim the pod does not list, so the pod's claims alone say it is in use.
    Gate {
        on: since(34),
        fields: &[
            "resourceClaims",
            "containers/*/resources/claims",
            "initContainers/*/resources/claims",
            "ephemeralContainers/*/resources/claims",
        ],
        in_use: &["resourceClaims"],
    },
    // HostnameOverride: alpha in 1.34, beta and on in 1.35.
    Gate {
        on: since(35),
        fields: &["hostnameOverride"],
        in_use: &["hostnameOverride"],
    },
    // EnvFiles: alpha in 1.34, beta and on in 1.35.
    Gate {
        on: since(35),
        fields: ENV_FILE_KEY_REFS,
        in_use: ENV_FILE_KEY_REFS,
    },
    // ClusterTrustBundleProjection: alpha in 1.29, beta and still off.
    Gate {
        on: On::Never,
        fields: &["volumes/*/projected/sources/*/clusterTrustBundle"],
        in_use: &["volumes/*/projected/sources/*/clusterTrustBundle"],
    },
    // PodCertificateRequest: alpha in 1.34, beta and still off.
    Gate {
        on: On::Never,
        fields: &["volumes/*/projected/sources/*/podCertificate"],
        in_use: &["volumes/*/projected/sources/*/podCertificate"],
    },
];

const ENV_FILE_KEY_REFS: &[&str] = &[
    "containers/*/env/*/valueFrom/fileKeyRef",
    "initContainers/*/env/*/valueFrom/fileKeyRef",
    "ephemeralContainers/*/env/*/valueFrom/fileKeyRef",
];

/// Gates of one kind's own fields, with paths under the object.
const KIND_GATES: &[(&str, &str, Gate)] = &[
    // ServiceTopology: alpha until the field went in 1.22 (`dropServiceDisabledFields`).
    (
        "",
        "Service",
        Gate {
            on: On::Never,
            fields: &["spec/topologyKeys"],
            in_use: &["spec/topologyKeys"],
        },
    ),
    // ServiceLBNodePortControl: alpha in 1.20, beta and on in 1.22.
    (
        "",
        "Service",
        Gate {
            on: since(22),
            fields: &["spec/allocateLoadBalancerNodePorts"],
            in_use: &["spec/allocateLoadBalancerNodePorts"],
        },
    ),
    // MaxUnavailableStatefulSet: alpha in 1.24, beta and on in 1.35.
    (
        "apps",
        "StatefulSet",
        Gate {
            on: since(35),
            fields: &["spec/updateStrategy/rollingUpdate/maxUnavailable"],
            in_use: &["spec/updateStrategy/rollingUpdate/maxUnavailable"],
        },
    ),
    // JobPodReplacementPolicy: alpha in 1.28, beta and on in 1.29.
    (
        "batch",
        "Job",
        Gate {
            on: since(29),
            fields: &["spec/podReplacementPolicy"],
            in_use: &["spec/podReplacementPolicy"],
        },
    ),
];

/// The gates of a Pod's status, which a write through `pods/status` loses while they are off
/// (`dropDisabledPodStatusFields`), with paths under the Pod: whether a feature is in use is
/// read from the stored pod's spec for some, from its status for others.
const POD_STATUS_GATES: &[Gate] = &[
    // PodHostIPs: alpha in 1.28, beta and on in 1.29.
    Gate {
        on: since(29),
        fields: &["status/hostIPs"],
        in_use: &["status/hostIPs"],
    },
    // InPlacePodVerticalScaling: alpha in 1.27, beta and on in 1.33.
    Gate {
        on: On::Feature(Feature::InPlacePodVerticalScaling, KubeVersion::new(1, 33)),
        fields: &[
            "status/resize",
            "status/containerStatuses/*/resources",
            "status/containerStatuses/*/allocatedResources",
            "status/initContainerStatuses/*/resources",
            "status/initContainerStatuses/*/allocatedResources",
            "status/ephemeralContainerStatuses/*/resources",
            "status/ephemeralContainerStatuses/*/allocatedResources",
        ],
        in_use: &["spec/containers/*/resizePolicy"],
    },
    // DynamicResourceAllocation: GA and on in 1.34.
    Gate {
        on: since(34),
        fields: &["status/resourceClaimStatuses"],
        in_use: &["spec/resourceClaims"],
    },
    // DRAExtendedResource: alpha in 1.34, still off.
    Gate {
        on: On::Never,
        fields: &["status/extendedResourceClaimStatus"],
        in_use: &["status/extendedResourceClaimStatus"],
    },
    // ResourceHealthStatus: alpha in 1.31, still off; dropped even when the stored pod has it.
    Gate {
        on: On::Never,
        fields: &[
            "status/containerStatuses/*/allocatedResourcesStatus",
            "status/initContainerStatuses/*/allocatedResourcesStatus",
            "status/ephemeralContainerStatuses/*/allocatedResourcesStatus",
        ],
        in_use: &[],
    },
];

/// JobBackoffLimitPerIndex: alpha in 1.28, beta and on in 1.29.
const BACKOFF_PER_INDEX_SINCE: KubeVersion = KubeVersion::new(1, 29);
/// ProcMountType: alpha in 1.12, beta in 1.31, on in 1.33.
const PROC_MOUNT_SINCE: KubeVersion = KubeVersion::new(1, 33);
/// ContainerRestartRules: alpha in 1.34, where a container's own restart policy and rules came,
/// beta and on in 1.35; before 1.34 validation refuses a regular container's policy instead.
const RESTART_RULES_FIELDS_SINCE: KubeVersion = KubeVersion::new(1, 34);
const RESTART_RULES_SINCE: KubeVersion = KubeVersion::new(1, 35);
/// ImageVolume: beta in 1.33, off by default until 1.35.
const IMAGE_VOLUMES_SINCE: KubeVersion = KubeVersion::new(1, 35);
/// AnyVolumeDataSource: alpha in 1.18, beta and on in 1.24 (`dataSourceRef` came in 1.22).
const ANY_DATA_SOURCE_SINCE: KubeVersion = KubeVersion::new(1, 24);

/// Where a kind of `group` keeps its pod spec, if it has one.
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static str> {
    match (group, kind) {
        ("", "Pod") => Some("/spec"),
        ("", "PodTemplate") => Some("/template/spec"),
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => Some("/spec/template/spec"),
        ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

/// Drops from `object`, a `group`/`kind` written in `release`, the fields of the gates off
/// there, but those `old` (the stored object, on an update) already uses.
pub(crate) fn drop_disabled(
    object: &mut Value,
    old: Option<&Value>,
    group: &str,
    kind: &str,
    release: KubeVersion,
    features: &Features,
) {
    if let Some(path) = pod_spec_path(group, kind) {
        let old_spec = old.and_then(|old| old.pointer(path));
        if let Some(spec) = object.pointer_mut(path) {
            drop_from_pod_spec(spec, old_spec, release, features);
        }
    }
    for (_, _, gate) in KIND_GATES
        .iter()
        .filter(|(g, k, _)| (*g, *k) == (group, kind))
    {
        gate.drop_from(object, old, release, features);
    }
    match (group, kind) {
        ("batch", "Job") => drop_backoff_per_index(object, old, release),
        ("", "PersistentVolumeClaim") => {
            let old_spec = old.and_then(|old| old.get("spec"));
            if let Some(spec) = object.get_mut("spec") {
                claim_data_sources(spec, old_spec, release);
            }
        }
        _ => {}
    }
}

/// Drops from `object`, written through the status subresource of a `group`/`kind` in
/// `release`, the status fields of the gates off there, but those `old` (the stored object)
/// already uses.
pub(crate) fn drop_disabled_status(
    object: &mut Value,
    old: &Value,
    group: &str,
    kind: &str,
    release: KubeVersion,
    features: &Features,
) {
    if (group, kind) == ("", "Pod") {
        for gate in POD_STATUS_GATES {
            gate.drop_from(object, Some(old), release, features);
        }
    }
}

fn drop_from_pod_spec(
    spec: &mut Value,
    old: Option<&Value>,
    release: KubeVersion,
    features: &Features,
) {
    for gate in POD_SPEC_GATES {
        gate.drop_from(spec, old, release, features);
    }
    if release < IMAGE_VOLUMES_SINCE && !old.is_some_and(|old| present(old, "volumes/*/image")) {
        drop_image_volumes(spec);
    }
    if release < PROC_MOUNT_SINCE && !old.is_some_and(unmasked_proc_in_use) {
        default_proc_mounts(spec);
    }
    if (RESTART_RULES_FIELDS_SINCE..RESTART_RULES_SINCE).contains(&release)
        && !old.is_some_and(restart_rules_in_use)
    {
        drop_container_restart_rules(spec);
    }
}

/// `dropContainerRestartRules`: every container loses its restart rules, and its restart
/// policy unless it is an init container's `Always` (a sidecar, which SidecarContainers owns).
fn drop_container_restart_rules(spec: &mut Value) {
    for list in CONTAINER_LISTS {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            container.remove("restartPolicyRules");
            let sidecar = container.get("restartPolicy").and_then(Value::as_str) == Some("Always");
            if list != "initContainers" || !sidecar {
                container.remove("restartPolicy");
            }
        }
    }
}

/// The lists of a pod spec that hold containers.
const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// `procMountInUse`: a container of the stored pod spec has a `procMount` other than `Default`.
fn unmasked_proc_in_use(spec: &Value) -> bool {
    CONTAINER_LISTS.iter().any(|list| {
        spec.get(list)
            .and_then(Value::as_array)
            .is_some_and(|containers| {
                containers.iter().any(|c| {
                    c.pointer("/securityContext/procMount")
                        .and_then(Value::as_str)
                        .is_some_and(|mount| mount != "Default")
                })
            })
    })
}

/// `dropDisabledProcMountField`: while ProcMountType is off a `procMount` that is set becomes
/// `Default`. Upstream cannot drop it, because 1.12 forced it non-nil and stored objects hold it.
fn default_proc_mounts(spec: &mut Value) {
    for list in CONTAINER_LISTS {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for container in containers {
            if let Some(mount) = container.pointer_mut("/securityContext/procMount")
                && !mount.is_null()
            {
                *mount = Value::from("Default");
            }
        }
    }
}

/// Whether `value` has something at `path` (`*` matching any item of a list).
fn present(value: &Value, path: &str) -> bool {
    match path.split_once('/') {
        None => value.get(path).is_some_and(|v| !v.is_null()),
        Some(("*", rest)) => value
            .as_array()
            .is_some_and(|items| items.iter().any(|item| present(item, rest))),
        Some((field, rest)) => value.get(field).is_some_and(|v| present(v, rest)),
    }
}

/// Removes what is at `path` in `value`, everywhere `*` matches.
fn remove(value: &mut Value, path: &str) {
    match path.split_once('/') {
        None => {
            if let Value::Object(map) = value {
                map.remove(path);
            }
        }
        Some(("*", rest)) => {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(|item| remove(item, rest));
            }
        }
        Some((field, rest)) => {
            if let Some(inner) = value.get_mut(field) {
                remove(inner, rest);
            }
        }
    }
}

/// A Job's per-index backoff while JobBackoffLimitPerIndex is off (the Job strategy's
/// `PrepareForCreate` and `PrepareForUpdate`): a create loses `backoffLimitPerIndex`,
/// `maxFailedIndexes` and the pod failure policy's `FailIndex` rules; an update loses each of
/// the two fields the stored Job does not have, and keeps the rules (the policy is immutable).
fn drop_backoff_per_index(job: &mut Value, old: Option<&Value>, release: KubeVersion) {
    if release >= BACKOFF_PER_INDEX_SINCE {
        return;
    }
    for path in ["spec/backoffLimitPerIndex", "spec/maxFailedIndexes"] {
        if !old.is_some_and(|old| present(old, path)) {
            remove(job, path);
        }
    }
    if old.is_none()
        && let Some(Value::Array(rules)) = job.pointer_mut("/spec/podFailurePolicy/rules")
    {
        rules.retain(|rule| rule.get("action").and_then(Value::as_str) != Some("FailIndex"));
    }
}

/// `dropImageVolumes`: the image volumes go, and every container's mounts of them.
fn drop_image_volumes(spec: &mut Value) {
    let Some(Value::Array(volumes)) = spec.get_mut("volumes") else {
        return;
    };
    let mut dropped = Vec::new();
    volumes.retain(|volume| {
        let image = volume.get("image").is_some_and(|v| !v.is_null());
        if image && let Some(name) = volume.get("name").and_then(Value::as_str) {
            dropped.push(name.to_owned());
        }
        !image
    });
    if dropped.is_empty() {
        return;
    }
    for list in CONTAINER_LISTS {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for container in containers {
            if let Some(Value::Array(mounts)) = container.get_mut("volumeMounts") {
                mounts.retain(|mount| {
                    mount
                        .get("name")
                        .and_then(Value::as_str)
                        .is_none_or(|name| !dropped.iter().any(|d| d == name))
                });
            }
        }
    }
}

/// A claim's data sources as its strategy leaves them (`pkg/api/persistentvolumeclaim/util.go`):
///
/// - a `dataSourceRef` into another namespace goes while CrossNamespaceVolumeDataSource is off
///   (alpha in every release kapi serves), unless the stored claim has a `dataSourceRef`
///   (`DropDisabledFields`);
/// - a `dataSource` other than a claim or a `VolumeSnapshot` (`snapshot.storage.k8s.io`) goes
///   when nothing says the client means it: no `dataSourceRef` beside it and no data source in
///   the stored claim (`EnforceDataSourceBackwardsCompatibility`; 1.20's `DropDisabledFields`,
///   without `dataSourceRef`, alike);
/// - from 1.24 (AnyVolumeDataSource on) each of the two fields is filled in from the other when
///   only one is set, a `dataSourceRef` into another namespace excepted
///   (`NormalizeDataSources`).
fn claim_data_sources(spec: &mut Value, old: Option<&Value>, release: KubeVersion) {
    let set = |value: &Value, field: &str| value.get(field).is_some_and(|v| !v.is_null());
    let text = |value: &Value, field: &str| {
        value
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let old_ref = old.is_some_and(|old| set(old, "dataSourceRef"));
    let foreign = |spec: &Value| {
        spec.get("dataSourceRef")
            .is_some_and(|r| !text(r, "namespace").is_empty())
    };
    if foreign(spec) && !old_ref {
        object_mut(spec).remove("dataSourceRef");
    }
    let old_source = old_ref || old.is_some_and(|old| set(old, "dataSource"));
    if !old_source && !set(spec, "dataSourceRef") && set(spec, "dataSource") {
        let source = &spec["dataSource"];
        let supported = matches!(
            (
                text(source, "apiGroup").as_str(),
                text(source, "kind").as_str()
            ),
            ("", "PersistentVolumeClaim") | ("snapshot.storage.k8s.io", "VolumeSnapshot")
        );
        if !supported {
            object_mut(spec).remove("dataSource");
        }
    }
    if release < ANY_DATA_SOURCE_SINCE {
        return;
    }
    // The reference's kind, name and group, as given (a group left out stays out).
    let copied = |from: &Value| {
        let mut to = serde_json::Map::new();
        for field in ["apiGroup", "kind", "name"] {
            if let Some(value) = from.get(field).filter(|v| !v.is_null()) {
                to.insert(field.into(), value.clone());
            }
        }
        Value::Object(to)
    };
    match (set(spec, "dataSource"), set(spec, "dataSourceRef")) {
        (true, false) => {
            let reference = copied(&spec["dataSource"]);
            object_mut(spec).insert("dataSourceRef".into(), reference);
        }
        (false, true) if !foreign(spec) => {
            let source = copied(&spec["dataSourceRef"]);
            object_mut(spec).insert("dataSource".into(), source);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn dropped(kind: &str, object: Value, old: Option<Value>, minor: u16) -> Value {
        let mut object = object;
        let group = match kind {
            "Deployment" | "StatefulSet" => "apps",
            "Job" => "batch",
            _ => "",
        };
        drop_disabled(
            &mut object,
            old.as_ref(),
            group,
            kind,
            KubeVersion::new(1, minor),
            &Features::defaults(),
        );
        object
    }

    // A gate the release table records follows `--feature-gates`: a 1.34 server started with
    // InPlacePodVerticalScaling off drops resize policies as 1.28's default does
    // (`dropDisabledFields` asks `utilfeature.DefaultFeatureGate`), unless the stored pod has
    // them; 1.28's table does not record the gate, so its default there decides.
    #[test]
    fn a_gate_the_server_turned_off_drops_its_fields() {
        let pod = json!({"spec": {"containers": [{"name": "c",
            "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}]}});
        let bare = json!({"spec": {"containers": [{"name": "c"}]}});
        let off = |minor: u16| {
            let at = KubeVersion::new(1, minor);
            let gates = crate::server::FeatureGates::parse("InPlacePodVerticalScaling=false");
            Features::for_release(at, &gates.unwrap())
        };
        let write = |minor: u16, features: &Features, old: Option<&Value>| {
            let mut object = pod.clone();
            drop_disabled(
                &mut object,
                old,
                "",
                "Pod",
                KubeVersion::new(1, minor),
                features,
            );
            object
        };
        assert_eq!(write(34, &Features::defaults(), None), pod);
        assert_eq!(write(34, &off(34).unwrap(), None), bare);
        assert_eq!(write(34, &off(34).unwrap(), Some(&pod)), pod);
        assert_eq!(write(28, &Features::defaults(), None), bare);
        assert!(off(28).is_err(), "1.28 does not know the gate");
    }

    // `dropDisabledFields` (pkg/api/pod/util.go): SidecarContainers and
    // InPlacePodVerticalScaling are off in 1.28, so a new pod loses an init container's
    // restart policy and the resize policies; from the releases that turn them on, both stay.
    #[test]
    fn a_release_drops_the_fields_of_its_gates_that_are_off() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "i", "restartPolicy": "Always"}],
            "containers": [{"name": "c", "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}],
        }});
        assert_eq!(
            dropped("Pod", pod.clone(), None, 28),
            json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}})
        );
        assert_eq!(dropped("Pod", pod.clone(), None, 34), pod);
        // 1.20 has ephemeral containers only where the stored pod has them.
        let debugged =
            json!({"spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
        assert_eq!(
            dropped("Pod", debugged.clone(), None, 20),
            json!({"spec": {}})
        );
        assert_eq!(
            dropped("Pod", debugged.clone(), Some(debugged.clone()), 20),
            debugged
        );
        // ProcMountType is off until 1.33: a set `procMount` is `Default`, unless the stored pod
        // already unmasks /proc.
        let unmasked = json!({"spec": {"containers": [
            {"name": "c", "securityContext": {"procMount": "Unmasked"}}]}});
        let masked = json!({"spec": {"containers": [
            {"name": "c", "securityContext": {"procMount": "Default"}}]}});
        assert_eq!(dropped("Pod", unmasked.clone(), None, 28), masked);
        assert_eq!(
            dropped("Pod", unmasked.clone(), Some(unmasked.clone()), 28),
            unmasked
        );
        assert_eq!(dropped("Pod", unmasked.clone(), None, 34), unmasked);
    }

    // An update keeps a gated field when the stored object already used the feature.
    #[test]
    fn an_update_keeps_what_the_stored_object_used() {
        let template = |policy: Option<&str>| {
            let mut container = json!({"name": "i"});
            if let Some(policy) = policy {
                container["restartPolicy"] = json!(policy);
            }
            json!({"spec": {"template": {"spec": {"initContainers": [container]}}}})
        };
        let next = template(Some("Always"));
        assert_eq!(
            dropped(
                "Deployment",
                next.clone(),
                Some(template(Some("Always"))),
                28
            ),
            next
        );
        assert_eq!(
            dropped("Deployment", next, Some(template(None)), 28),
            template(None)
        );
    }

    // `dropImageVolumes`: before 1.35 an image volume goes with the mounts of it.
    #[test]
    fn image_volumes_go_with_their_mounts_before_1_35() {
        let pod = json!({"spec": {
            "volumes": [{"name": "img", "image": {"reference": "x"}}, {"name": "e", "emptyDir": {}}],
            "containers": [{"name": "c", "volumeMounts": [{"name": "img", "mountPath": "/i"}, {"name": "e", "mountPath": "/e"}]}],
        }});
        assert_eq!(
            dropped("Pod", pod.clone(), None, 34),
            json!({"spec": {
                "volumes": [{"name": "e", "emptyDir": {}}],
                "containers": [{"name": "c", "volumeMounts": [{"name": "e", "mountPath": "/e"}]}],
            }})
        );
        assert_eq!(
            dropped("Pod", pod, None, 36)["spec"]["volumes"][0]["name"],
            "img"
        );
    }

    // pkg/api/pod/util.go `dropContainerRestartRules` (ContainerRestartRules, alpha in 1.34):
    // rules go, and restart policies but a sidecar's, unless the stored pod uses them.
    #[test]
    fn container_restart_rules_go_in_1_34_unless_in_use() {
        let rules = json!([{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]);
        let pod = json!({"spec": {
            "initContainers": [
                {"name": "s", "restartPolicy": "Always", "restartPolicyRules": rules},
                {"name": "i", "restartPolicy": "Never"}],
            "containers": [{"name": "c", "restartPolicy": "Never", "restartPolicyRules": rules}],
        }});
        assert_eq!(
            dropped("Pod", pod.clone(), None, 34),
            json!({"spec": {
                "initContainers": [{"name": "s", "restartPolicy": "Always"}, {"name": "i"}],
                "containers": [{"name": "c"}],
            }})
        );
        let in_use = json!({"spec": {"containers": [{"name": "c", "restartPolicy": "Never"}]}});
        assert_eq!(dropped("Pod", pod.clone(), Some(in_use), 34), pod);
        assert_eq!(dropped("Pod", pod.clone(), None, 36), pod);
        // 1.28 had no such fields: validation refuses a regular container's policy.
        assert_eq!(
            dropped("Pod", pod, None, 28)["spec"]["containers"][0]["restartPolicy"],
            "Never"
        );
    }

    // pkg/api/persistentvolumeclaim/util.go: an unsupported `dataSource` is dropped (1.20's
    // `DropDisabledFields`, later `EnforceDataSourceBackwardsCompatibility`), and from 1.24
    // `NormalizeDataSources` fills each field in from the other.
    #[test]
    fn a_claims_data_sources_as_its_strategy_leaves_them() {
        let claim = |spec: Value| json!({"spec": spec});
        let snapshot =
            json!({"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"});
        let populator = json!({"apiGroup": "example.com", "kind": "Populator", "name": "p"});
        let from_snapshot = claim(json!({"dataSource": snapshot}));
        assert_eq!(
            dropped("PersistentVolumeClaim", from_snapshot.clone(), None, 20),
            from_snapshot
        );
        assert_eq!(
            dropped("PersistentVolumeClaim", from_snapshot, None, 28),
            claim(json!({"dataSource": snapshot, "dataSourceRef": snapshot}))
        );
        // A populator in `dataSource` alone is dropped in every release; through
        // `dataSourceRef` it is kept and copied.
        for minor in [20, 28] {
            assert_eq!(
                dropped(
                    "PersistentVolumeClaim",
                    claim(json!({"dataSource": populator})),
                    None,
                    minor
                ),
                claim(json!({}))
            );
        }
        assert_eq!(
            dropped(
                "PersistentVolumeClaim",
                claim(json!({"dataSourceRef": populator})),
                None,
                34
            ),
            claim(json!({"dataSourceRef": populator, "dataSource": populator}))
        );
        // A stored data source keeps a populator on update.
        let stored = claim(json!({"dataSource": populator}));
        assert_eq!(
            dropped("PersistentVolumeClaim", stored.clone(), Some(stored), 20),
            claim(json!({"dataSource": populator}))
        );
        // A reference into another namespace (CrossNamespaceVolumeDataSource, alpha) goes.
        let foreign = json!({"kind": "PersistentVolumeClaim", "name": "c", "namespace": "other"});
        assert_eq!(
            dropped(
                "PersistentVolumeClaim",
                claim(json!({"dataSourceRef": foreign})),
                None,
                36
            ),
            claim(json!({}))
        );
    }

    // The Job strategy's `dropDisabledFields` in 1.28 (JobBackoffLimitPerIndex and
    // JobPodReplacementPolicy alpha): the per-index fields, the `FailIndex` rules and the
    // replacement policy go; from 1.29 they stay.
    #[test]
    fn a_jobs_per_index_backoff_and_replacement_policy_need_1_29() {
        let job = json!({"spec": {
            "backoffLimitPerIndex": 1, "maxFailedIndexes": 2, "podReplacementPolicy": "Failed",
            "podFailurePolicy": {"rules": [
                {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}},
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [2]}},
            ]},
        }});
        assert_eq!(
            dropped("Job", job.clone(), None, 28),
            json!({"spec": {"podFailurePolicy": {"rules": [
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [2]}},
            ]}}})
        );
        assert_eq!(dropped("Job", job.clone(), None, 34), job);
        // An update keeps each field the stored Job has, and the rules (the policy is
        // immutable).
        let mut stored = job.clone();
        remove(&mut stored, "spec/maxFailedIndexes");
        let updated = dropped("Job", job.clone(), Some(stored), 28);
        assert_eq!(updated["spec"]["backoffLimitPerIndex"], 1);
        assert!(
            updated["spec"].get("maxFailedIndexes").is_none(),
            "{updated}"
        );
        assert_eq!(
            updated["spec"]["podFailurePolicy"],
            job["spec"]["podFailurePolicy"]
        );
    }

    // MaxUnavailableStatefulSet is on from 1.35; ClusterTrustBundleProjection is off in every
    // release kapi serves.
    #[test]
    fn kind_gates_and_gates_never_on() {
        let set = json!({"spec": {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 2, "partition": 1}}}});
        assert_eq!(
            dropped("StatefulSet", set.clone(), None, 34),
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 1}}}})
        );
        assert_eq!(dropped("StatefulSet", set.clone(), None, 36), set);
        // 1.20's Service strategy: ServiceLBNodePortControl (alpha) and ServiceTopology.
        let service = json!({"spec": {"type": "LoadBalancer",
            "allocateLoadBalancerNodePorts": false, "topologyKeys": ["*"]}});
        assert_eq!(
            dropped("Service", service.clone(), None, 20),
            json!({"spec": {"type": "LoadBalancer"}})
        );
        assert_eq!(
            dropped("Service", service, None, 28),
            json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false}})
        );
        let pod = json!({"spec": {"volumes": [{"name": "p", "projected": {"sources": [
            {"clusterTrustBundle": {"name": "b", "path": "b.pem"}},
            {"configMap": {"name": "c"}},
        ]}}]}});
        assert_eq!(
            dropped("Pod", pod, None, 36),
            json!({"spec": {"volumes": [{"name": "p", "projected": {"sources": [
                {}, {"configMap": {"name": "c"}},
            ]}}]}})
        );
    }

    // `dropDisabledPodStatusFields` (pkg/api/pod/util.go): in 1.28 a status write loses the
    // host IPs (PodHostIPs alpha) and the containers' resources (InPlacePodVerticalScaling
    // alpha, unless the stored pod has resize policies); the health of allocated resources
    // (ResourceHealthStatus, alpha) goes in every release.
    #[test]
    fn a_status_write_loses_what_its_gates_leave_out() {
        // The stored pod: with or without resize policies, never with host IPs yet.
        let stored = |policy: bool| {
            let mut container = json!({"name": "c"});
            if policy {
                container["resizePolicy"] =
                    json!([{"resourceName": "cpu", "restartPolicy": "NotRequired"}]);
            }
            json!({"spec": {"containers": [container]}, "status": {"hostIP": "10.0.0.1"}})
        };
        let written = |old: &Value, minor: u16| {
            let mut next = old.clone();
            next["status"] = json!({
                "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
                "containerStatuses": [{"name": "c", "resources": {"limits": {"cpu": "1"}},
                    "allocatedResourcesStatus": [{"name": "cpu", "resources": []}]}],
            });
            let release = KubeVersion::new(1, minor);
            drop_disabled_status(&mut next, old, "", "Pod", release, &Features::defaults());
            next["status"].clone()
        };
        assert_eq!(
            written(&stored(false), 28),
            json!({"hostIP": "10.0.0.1", "containerStatuses": [{"name": "c"}]})
        );
        assert_eq!(
            written(&stored(true), 28)["containerStatuses"][0]["resources"],
            json!({"limits": {"cpu": "1"}})
        );
        assert_eq!(
            written(&stored(false), 36),
            json!({"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
                "containerStatuses": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]})
        );
    }
}
