//! What a kind's writes do to an object's generation and status, as upstream's registry
//! strategies decide per kind (`pkg/registry/<group>/<kind>/strategy.go`: `PrepareForCreate`,
//! `PrepareForUpdate`). The default is a custom resource's: generation 1 on create, bumped by
//! any change outside `metadata` and `status`, and a status sent on create dropped when the
//! kind has a status subresource.

use serde_json::Value;

use crate::KubeVersion;

/// A kind's generation and status rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRules {
    /// When `metadata.generation` is set and bumped.
    pub generation: Generation,
    /// The first release whose strategy keeps a generation; before it, as [`Generation::None`]
    /// (Jobs and CronJobs have one since 1.27, Pods since 1.33).
    pub generation_since: Option<KubeVersion>,
    /// What a create does with the `status` it is sent, for a kind with a status subresource.
    pub status_on_create: StatusOnCreate,
    /// What an update through the status subresource takes from the stored object besides
    /// everything outside `metadata` and `status`.
    pub status_update: StatusUpdate,
    /// What every write does to the object as decoded, as upstream's conversion to the
    /// internal type does.
    pub write_conversion: WriteConversion,
    /// What a create does to the object before it is validated, beyond its status.
    pub create_rule: CreateRule,
    /// Whether a PUT of a missing object creates it (201), as upstream's strategies that
    /// return true from `AllowCreateOnUpdate` (Endpoints, Events, LimitRanges, Leases, RBAC);
    /// otherwise such a PUT is a 404.
    pub create_on_update: bool,
}

impl WriteRules {
    /// A custom resource's rules.
    pub const CUSTOM: Self = Self {
        generation: Generation::Spec,
        generation_since: None,
        status_on_create: StatusOnCreate::Remove,
        status_update: StatusUpdate::OnlyStatus,
        write_conversion: WriteConversion::None,
        create_rule: CreateRule::None,
        create_on_update: false,
    };

    /// The generation rule in release `at`.
    pub fn generation_at(&self, at: KubeVersion) -> Generation {
        match self.generation_since {
            Some(since) if at < since => Generation::None,
            _ => self.generation,
        }
    }
}

impl Default for WriteRules {
    fn default() -> Self {
        Self::CUSTOM
    }
}

/// When `metadata.generation` is set and bumped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Generation {
    /// Never set by the server (a ConfigMap, a Service): a create keeps what the client sent.
    None,
    /// 1 on create, bumped when anything outside `metadata` and `status` changes.
    Spec,
    /// As [`Generation::Spec`], and bumped when the annotations change (a Deployment's are
    /// copied to its ReplicaSets).
    SpecAndAnnotations,
    /// As [`Generation::Spec`], and bumped when the labels change (an EndpointSlice's).
    SpecAndLabels,
    /// 1 on create and never bumped (a PriorityClass).
    CreateOnly,
}

impl Generation {
    /// The generation on create; `None` leaves the client's value.
    pub fn on_create(self) -> Option<i64> {
        match self {
            Self::None => None,
            _ => Some(1),
        }
    }

    /// Whether an update from `old` to `new` bumps the generation.
    pub fn bumps(self, old: &Value, new: &Value) -> bool {
        let meta =
            |object: &Value, field: &str| object.pointer(&format!("/metadata/{field}")).cloned();
        match self {
            Self::None | Self::CreateOnly => false,
            Self::Spec => outside_metadata(old) != outside_metadata(new),
            Self::SpecAndAnnotations => {
                outside_metadata(old) != outside_metadata(new)
                    || meta(old, "annotations") != meta(new, "annotations")
            }
            Self::SpecAndLabels => {
                outside_metadata(old) != outside_metadata(new)
                    || meta(old, "labels") != meta(new, "labels")
            }
        }
    }
}

/// Everything but `metadata`, `status`, `apiVersion` and `kind`: what a generation counts
/// changes of.
pub(crate) fn outside_metadata(object: &Value) -> serde_json::Map<String, Value> {
    let mut map = object.as_object().cloned().unwrap_or_default();
    for key in ["metadata", "status", "apiVersion", "kind"] {
        map.remove(key);
    }
    map
}

/// What a create does with the `status` it is sent, for a kind with a status subresource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusOnCreate {
    /// Kept (a Node's).
    Keep,
    /// Dropped (a custom resource's).
    Remove,
    /// Replaced by an empty status, as a built-in's Go status struct is written: `status: {}`.
    Empty,
    /// Replaced by a Pod's first status (`podStrategy.PrepareForCreate`): `phase: Pending` and
    /// the [`pod_qos_class`].
    PodPending,
}

/// What every write (create, update, patch, apply, through any subresource) does to a decoded
/// object before it is stored, one named rule per upstream conversion function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteConversion {
    /// Nothing.
    None,
    /// A Secret's `stringData` (`Convert_v1_Secret_To_core_Secret`): each entry overwrites
    /// `data`'s, base64-encoded, and `stringData` is never stored or returned.
    SecretStringData,
}

impl WriteConversion {
    /// Applies the rule to `object`.
    pub fn apply(self, object: &mut Value) {
        match self {
            Self::None => {}
            Self::SecretStringData => fold_string_data(object),
        }
    }
}

/// What a create does to a new object before it is validated, one named rule per upstream
/// strategy's `PrepareForCreate` step that is not about status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateRule {
    /// Nothing.
    None,
    /// A Job's selector and pod labels (`generateSelector` in `pkg/registry/batch/job`):
    /// unless `manualSelector` is true, the template is labelled with the Job's name and uid
    /// (labels it already has are kept) and the selector selects the uid.
    JobSelector,
    /// A Pod's label keys merged into its selectors (`mutatePodAffinity`,
    /// `mutateTopologySpreadConstraints` in `pkg/registry/core/pod/strategy.go`): each key of
    /// a pod affinity term's `matchLabelKeys` the pod has a label for becomes an `In`
    /// requirement of the term's label selector, and of `mismatchLabelKeys` a `NotIn` one, from
    /// 1.31 (MatchLabelKeysInPodAffinity beta); a topology spread constraint's
    /// `matchLabelKeys` likewise from 1.34 (MatchLabelKeysInPodTopologySpreadSelectorMerge).
    PodLabelKeys,
}

impl CreateRule {
    /// Applies the rule to `object`, which has its uid, in release `release`.
    pub fn apply(self, object: &mut Value, release: KubeVersion) {
        match self {
            Self::None => {}
            Self::JobSelector => generate_job_selector(object, release),
            Self::PodLabelKeys => merge_pod_label_keys(object, release),
        }
    }
}

/// A label the Job strategy puts on a Job's pod template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLabel {
    /// The label's key.
    pub name: &'static str,
    /// Whether its value is the Job's uid (else its name).
    pub uid: bool,
    /// Whether it is one of the `batch.kubernetes.io/` labels of 1.27 on.
    pub prefixed: bool,
}

/// From 1.27 Jobs' pods also carry `batch.kubernetes.io/job-name` and
/// `batch.kubernetes.io/controller-uid`, and the selector selects the latter.
const PREFIXED_JOB_LABELS_SINCE: KubeVersion = KubeVersion::new(1, 27);

const JOB_LABELS: [JobLabel; 4] = [
    JobLabel {
        name: "job-name",
        uid: false,
        prefixed: false,
    },
    JobLabel {
        name: "batch.kubernetes.io/job-name",
        uid: false,
        prefixed: true,
    },
    JobLabel {
        name: "controller-uid",
        uid: true,
        prefixed: false,
    },
    JobLabel {
        name: "batch.kubernetes.io/controller-uid",
        uid: true,
        prefixed: true,
    },
];

/// The labels a Job's pod template gets in release `release`, in the order upstream adds them.
pub fn job_labels(release: KubeVersion) -> &'static [JobLabel] {
    if release >= PREFIXED_JOB_LABELS_SINCE {
        &JOB_LABELS
    } else {
        // Without the prefixed ones: the legacy name, then the legacy uid.
        &LEGACY_JOB_LABELS
    }
}

const LEGACY_JOB_LABELS: [JobLabel; 2] = [JOB_LABELS[0], JOB_LABELS[2]];

fn generate_job_selector(job: &mut Value, release: KubeVersion) {
    if job.pointer("/spec/manualSelector") == Some(&Value::Bool(true)) {
        return;
    }
    let meta = |field: &str| {
        job.pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let (name, uid) = (meta("name"), meta("uid"));
    let Some(spec) = job.get_mut("spec") else {
        return;
    };
    if let Some(labels) = object_at(spec, &["template", "metadata", "labels"]) {
        for label in job_labels(release) {
            let value = if label.uid { &uid } else { &name };
            labels
                .entry(label.name)
                .or_insert_with(|| Value::from(value.as_str()));
        }
    }
    let key = if release >= PREFIXED_JOB_LABELS_SINCE {
        "batch.kubernetes.io/controller-uid"
    } else {
        "controller-uid"
    };
    if let Some(match_labels) = object_at(spec, &["selector", "matchLabels"]) {
        match_labels.entry(key).or_insert_with(|| Value::from(uid));
    }
}

/// From 1.31 a new pod's affinity terms take its labels' values for their label keys.
const AFFINITY_LABEL_KEYS_SINCE: KubeVersion = KubeVersion::new(1, 31);
/// From 1.34 its topology spread constraints do too.
const SPREAD_LABEL_KEYS_SINCE: KubeVersion = KubeVersion::new(1, 34);

fn merge_pod_label_keys(pod: &mut Value, release: KubeVersion) {
    if release < AFFINITY_LABEL_KEYS_SINCE {
        return;
    }
    let labels = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let Some(spec) = pod.get_mut("spec") else {
        return;
    };
    if let Some(affinity) = spec.get_mut("affinity") {
        for kind in ["podAffinity", "podAntiAffinity"] {
            let Some(kind) = affinity.get_mut(kind) else {
                continue;
            };
            if let Some(Value::Array(terms)) =
                kind.get_mut("preferredDuringSchedulingIgnoredDuringExecution")
            {
                for weighted in terms {
                    if let Some(term) = weighted.get_mut("podAffinityTerm") {
                        merge_label_keys(term, &labels, true);
                    }
                }
            }
            if let Some(Value::Array(terms)) =
                kind.get_mut("requiredDuringSchedulingIgnoredDuringExecution")
            {
                for term in terms {
                    merge_label_keys(term, &labels, true);
                }
            }
        }
    }
    if release >= SPREAD_LABEL_KEYS_SINCE
        && let Some(Value::Array(constraints)) = spec.get_mut("topologySpreadConstraints")
    {
        for constraint in constraints {
            merge_label_keys(constraint, &labels, false);
        }
    }
}

/// `applyLabelKeysToLabelSelector` on a term or constraint with a label selector (a missing one
/// selects nothing and stays missing): `matchLabelKeys` as `In`, and for an affinity term
/// `mismatchLabelKeys` as `NotIn`, each key the pod has a label for, appended in order.
fn merge_label_keys(
    holder: &mut Value,
    labels: &serde_json::Map<String, Value>,
    mismatch_too: bool,
) {
    let keys = |field: &str| -> Vec<String> {
        holder
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let mut wanted: Vec<(String, &str)> = keys("matchLabelKeys")
        .into_iter()
        .map(|key| (key, "In"))
        .collect();
    if mismatch_too {
        wanted.extend(
            keys("mismatchLabelKeys")
                .into_iter()
                .map(|key| (key, "NotIn")),
        );
    }
    if wanted.is_empty() || holder.get("labelSelector").is_none_or(Value::is_null) {
        return;
    }
    let Some(Value::Object(selector)) = holder.get_mut("labelSelector") else {
        return;
    };
    let slot = selector.entry("matchExpressions").or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    let Value::Array(expressions) = slot else {
        return;
    };
    for (key, operator) in wanted {
        if let Some(value) = labels.get(&key) {
            expressions
                .push(serde_json::json!({"key": key, "operator": operator, "values": [value]}));
        }
    }
}

/// The object at `path` under `value`, each step made an object when it is missing or null,
/// as Go makes a nil map or pointer before writing through it; none under a value of another
/// type.
fn object_at<'v>(
    value: &'v mut Value,
    path: &[&str],
) -> Option<&'v mut serde_json::Map<String, Value>> {
    let mut map = value.as_object_mut()?;
    for step in path {
        let slot = map.entry(*step).or_insert(Value::Null);
        if slot.is_null() {
            *slot = Value::Object(serde_json::Map::new());
        }
        map = slot.as_object_mut()?;
    }
    Some(map)
}

/// `Convert_v1_Secret_To_core_Secret`: "StringData overwrites Data".
fn fold_string_data(object: &mut Value) {
    use base64::Engine as _;

    let Value::Object(map) = object else {
        return;
    };
    let Some(string_data) = map.remove("stringData") else {
        return;
    };
    let Value::Object(entries) = string_data else {
        return;
    };
    if entries.is_empty() {
        return;
    }
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !data.is_object() {
        *data = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(data) = data {
        for (key, value) in entries {
            let text = match value {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            };
            data.insert(
                key,
                Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

/// A new Pod's status, as `podStrategy.PrepareForCreate` sets it: `Pending`, with its QoS class,
/// and for a pod with scheduling gates (a field since 1.26) the `PodScheduled` condition
/// `applySchedulingGatedCondition` adds, stamped `now`.
pub fn pod_pending_status(pod: &Value, now: &str) -> Value {
    let mut status = serde_json::json!({"phase": "Pending", "qosClass": pod_qos_class(pod)});
    let gated = pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gates| !gates.is_empty());
    if gated && let Value::Object(map) = &mut status {
        map.insert(
            "conditions".into(),
            serde_json::json!([{
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": null,
                "lastTransitionTime": now,
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }]),
        );
    }
    status
}

/// A Pod's QoS class (`qos.GetPodQOS` in `pkg/apis/core/helper/qos`): `BestEffort` when no
/// container or init container requests or limits a positive amount of `cpu` or `memory`;
/// `Guaranteed` when every one limits both and the summed requests equal the summed limits;
/// else `Burstable`; pod-level `spec.resources`, when set, stand for all containers
/// (`ComputePodQOS`). A missing request for a limited resource is the limit, as
/// `SetDefaults_Pod` fills it in before the strategy runs.
pub fn pod_qos_class(pod: &Value) -> &'static str {
    use std::collections::BTreeMap;

    use crate::quantity::Quantity;

    const COMPUTE: [&str; 2] = ["cpu", "memory"];
    let positive = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<Quantity>().ok())
            .or_else(|| {
                v.as_i64()
                    .map(|n| Quantity::from_i64(n, crate::quantity::Format::DecimalSi))
            })
            .filter(|q| q.signum() > 0)
    };
    let add = |sums: &mut BTreeMap<&'static str, Quantity>, name: &'static str, q: Quantity| {
        let sum = match sums.remove(name) {
            Some(old) => old.checked_add(q).unwrap_or(q),
            None => q,
        };
        sums.insert(name, sum);
    };
    let (mut requests, mut limits) = (BTreeMap::new(), BTreeMap::new());
    let mut guaranteed = true;
    // Pod-level resources (`spec.resources`, a field since 1.32, on by default since 1.34)
    // decide alone when set (`ComputePodQOS`).
    let pod_level = pod
        .pointer("/spec/resources")
        .and_then(Value::as_object)
        .is_some_and(|r| {
            ["requests", "limits"].iter().any(|k| {
                r.get(*k)
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
            })
        });
    let containers: Vec<&Value> = match pod.get("spec") {
        Some(spec) if pod_level => vec![spec],
        _ => ["containers", "initContainers"]
            .into_iter()
            .flat_map(|list| {
                pod.pointer(&format!("/spec/{list}"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .collect(),
    };
    for container in containers {
        let resources =
            |kind: &str, name: &str| container.pointer(&format!("/resources/{kind}/{name}"));
        let mut limited = 0;
        for name in COMPUTE {
            let limit = resources("limits", name);
            let request = resources("requests", name).or(limit);
            if let Some(q) = request.and_then(positive) {
                add(&mut requests, name, q);
            }
            if let Some(q) = limit.and_then(positive) {
                limited += 1;
                add(&mut limits, name, q);
            }
        }
        if limited < COMPUTE.len() {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.len() == limits.len()
        && requests
            .iter()
            .all(|(name, req)| limits.get(name) == Some(req))
    {
        return "Guaranteed";
    }
    "Burstable"
}

/// What a write to a kind's status subresource changes, as its status strategy's
/// `PrepareForUpdate` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusUpdate {
    /// Only `status` (apiextensions' custom resource status strategy copies the old object and
    /// sets the new status; flowcontrol's keep the old `ObjectMeta`).
    OnlyStatus,
    /// `status` and metadata: the strategy keeps the old spec (`newX.Spec = oldX.Spec`) and
    /// resets these metadata fields from the stored object (a Deployment's `labels`, a Pod's
    /// `ownerReferences`, `metav1.ResetObjectMetaForStatus`' set); the fields every update keeps
    /// (`uid`, `creationTimestamp`, `generation`, ...) stay as on any update.
    StatusAndMetadata {
        /// The `metadata` fields kept from the stored object, by JSON name.
        keeps: &'static [&'static str],
    },
}

impl StatusUpdate {
    /// The object a status write leaves: `incoming`'s status and, for
    /// [`StatusUpdate::StatusAndMetadata`], its metadata but the kept fields; everything else
    /// from `current`. `incoming`'s metadata has had the rules of every update applied.
    pub fn merge(self, current: &Value, incoming: &Value) -> Value {
        let mut next = current.clone();
        let Value::Object(map) = &mut next else {
            return next;
        };
        match incoming.get("status") {
            Some(status) => map.insert("status".into(), status.clone()),
            None => map.remove("status"),
        };
        if let Self::StatusAndMetadata { keeps } = self {
            let mut meta = incoming
                .get("metadata")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let old = current.get("metadata").and_then(Value::as_object);
            for field in keeps {
                match old.and_then(|old| old.get(*field)) {
                    Some(value) => meta.insert((*field).to_owned(), value.clone()),
                    None => meta.remove(*field),
                };
            }
            map.insert("metadata".into(), Value::Object(meta));
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_pods_label_keys_join_its_selectors_from_their_releases() {
        // mutatePodAffinity, mutateTopologySpreadConstraints (pkg/registry/core/pod/strategy.go).
        let term = json!({"labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": ["track", "missing"], "mismatchLabelKeys": ["tenant"],
            "topologyKey": "zone"});
        let pod = json!({
            "metadata": {"labels": {"app": "web", "track": "canary", "tenant": "a"}},
            "spec": {
                "affinity": {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term.clone()],
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}],
                }},
                "topologySpreadConstraints": [
                    {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
                        "matchLabelKeys": ["track"], "maxSkew": 1},
                    {"matchLabelKeys": ["track"], "maxSkew": 1},
                ],
            }
        });
        let merged = json!([
            {"key": "track", "operator": "In", "values": ["canary"]},
            {"key": "tenant", "operator": "NotIn", "values": ["a"]},
        ]);
        let mut new = pod.clone();
        CreateRule::PodLabelKeys.apply(&mut new, KubeVersion::new(1, 34));
        let anti = &new["spec"]["affinity"]["podAntiAffinity"];
        assert_eq!(
            anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"],
            json!({"matchLabels": {"app": "web"}, "matchExpressions": merged})
        );
        assert_eq!(
            anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["labelSelector"]
                ["matchExpressions"],
            merged
        );
        let spread = &new["spec"]["topologySpreadConstraints"];
        assert_eq!(
            spread[0]["labelSelector"]["matchExpressions"],
            json!([{"key": "app", "operator": "Exists"}, {"key": "track", "operator": "In", "values": ["canary"]}])
        );
        // Without a selector a constraint selects nothing, and stays so.
        assert!(spread[1].get("labelSelector").is_none());
        // 1.28 predates both merges.
        let mut old = pod.clone();
        CreateRule::PodLabelKeys.apply(&mut old, KubeVersion::new(1, 28));
        assert_eq!(old, pod);
    }

    #[test]
    fn a_jobs_selector_is_generated_as_its_release_did() {
        // generateSelector (pkg/registry/batch/job/strategy.go): labels the template already
        // has are kept; the prefixed labels and the prefixed selector key from 1.27.
        let job = || {
            json!({"metadata": {"name": "pi", "uid": "u-1"},
                "spec": {"template": {"metadata": {"labels": {"job-name": "mine"}}}}})
        };
        let mut old = job();
        CreateRule::JobSelector.apply(&mut old, KubeVersion::new(1, 20));
        assert_eq!(
            old["spec"],
            json!({"template": {"metadata": {"labels": {"job-name": "mine", "controller-uid": "u-1"}}},
                "selector": {"matchLabels": {"controller-uid": "u-1"}}})
        );
        let mut new = job();
        CreateRule::JobSelector.apply(&mut new, KubeVersion::new(1, 28));
        assert_eq!(
            new["spec"],
            json!({"template": {"metadata": {"labels": {"job-name": "mine",
                    "batch.kubernetes.io/job-name": "pi", "controller-uid": "u-1",
                    "batch.kubernetes.io/controller-uid": "u-1"}}},
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}})
        );
        let mut manual = job();
        manual["spec"]["manualSelector"] = json!(true);
        let before = manual.clone();
        CreateRule::JobSelector.apply(&mut manual, KubeVersion::new(1, 28));
        assert_eq!(manual, before);
    }

    #[test]
    fn each_rule_bumps_on_what_its_strategy_compares() {
        let old = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let annotated = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "2"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let labelled = json!({"metadata": {"labels": {"a": "2"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let respecced = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 2}, "status": {"s": 2}});
        let status_only = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 2}});
        // (rule, annotations changed, labels changed, spec changed, status changed)
        let rows = [
            (Generation::None, false, false, false, false),
            (Generation::CreateOnly, false, false, false, false),
            (Generation::Spec, false, false, true, false),
            (Generation::SpecAndAnnotations, true, false, true, false),
            (Generation::SpecAndLabels, false, true, true, false),
        ];
        for (rule, a, l, s, st) in rows {
            assert_eq!(rule.bumps(&old, &annotated), a, "{rule:?} annotations");
            assert_eq!(rule.bumps(&old, &labelled), l, "{rule:?} labels");
            assert_eq!(rule.bumps(&old, &respecced), s, "{rule:?} spec");
            assert_eq!(rule.bumps(&old, &status_only), st, "{rule:?} status");
        }
    }

    #[test]
    fn status_writes_keep_the_spec_and_what_the_strategy_resets() {
        let current = json!({"metadata": {"name": "d", "labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 1}});
        let incoming = json!({"metadata": {"name": "d", "labels": {"a": "2"}, "annotations": {"n": "2"}}, "spec": {"x": 2}, "status": {"s": 2}});
        // apiextensions' customresource statusStrategy: only the status.
        assert_eq!(
            StatusUpdate::OnlyStatus.merge(&current, &incoming),
            json!({"metadata": {"name": "d", "labels": {"a": "1"}, "annotations": {"n": "1"}}, "spec": {"x": 1}, "status": {"s": 2}})
        );
        // deploymentStatusStrategy: newDeployment.Spec = old.Spec; newDeployment.Labels = old.Labels.
        assert_eq!(
            StatusUpdate::StatusAndMetadata { keeps: &["labels"] }.merge(&current, &incoming),
            json!({"metadata": {"name": "d", "labels": {"a": "1"}, "annotations": {"n": "2"}}, "spec": {"x": 1}, "status": {"s": 2}})
        );
        // A status write without a status clears it.
        let cleared = StatusUpdate::StatusAndMetadata { keeps: &[] }
            .merge(&current, &json!({"metadata": {"name": "d"}}));
        assert_eq!(
            cleared,
            json!({"metadata": {"name": "d"}, "spec": {"x": 1}})
        );
    }

    #[test]
    fn secret_string_data_overwrites_data_and_is_dropped() {
        // Convert_v1_Secret_To_core_Secret: "StringData overwrites Data".
        let mut secret =
            json!({"data": {"a": "b2xk", "keep": "eA=="}, "stringData": {"a": "new", "b": "two"}});
        WriteConversion::SecretStringData.apply(&mut secret);
        assert_eq!(
            secret,
            json!({"data": {"a": "bmV3", "keep": "eA==", "b": "dHdv"}})
        );
        let mut only = json!({"stringData": {"x": ""}});
        WriteConversion::SecretStringData.apply(&mut only);
        assert_eq!(only, json!({"data": {"x": ""}}));
        let mut empty = json!({"stringData": {}});
        WriteConversion::SecretStringData.apply(&mut empty);
        assert_eq!(empty, json!({}));
    }

    #[test]
    fn pods_get_upstreams_qos_class() {
        // qos.GetPodQOS: cpu and memory only, init containers count, requests default to limits.
        let pod = |containers: Value| json!({"spec": {"containers": containers}});
        let rows = [
            (json!([{"name": "a"}]), "BestEffort"),
            (
                json!([{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]),
                "BestEffort",
            ),
            (
                json!([{"resources": {"requests": {"cpu": "0"}}}]),
                "BestEffort",
            ),
            (
                json!([{"resources": {"requests": {"cpu": "100m"}}}]),
                "Burstable",
            ),
            (
                json!([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]),
                "Guaranteed",
            ),
            (
                json!([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1Gi"}}}]),
                "Guaranteed",
            ),
            (
                json!([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]),
                "Burstable",
            ),
            (
                json!([{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}, {"name": "b"}]),
                "Burstable",
            ),
        ];
        for (containers, want) in rows {
            assert_eq!(
                pod_qos_class(&pod(containers.clone())),
                want,
                "{containers}"
            );
        }
        // ComputePodQOS: pod-level resources decide alone.
        let pod_level = json!({"spec": {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
            "containers": [{"resources": {"requests": {"cpu": "100m"}}}]}});
        assert_eq!(pod_qos_class(&pod_level), "Guaranteed");
        let init = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}], "initContainers": [{"resources": {"requests": {"memory": "1Mi"}}}]}});
        assert_eq!(pod_qos_class(&init), "Burstable");
        assert_eq!(
            pod_pending_status(&json!({}), "t"),
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
        // applySchedulingGatedCondition.
        let gated = pod_pending_status(&json!({"spec": {"schedulingGates": [{"name": "g"}]}}), "t");
        assert_eq!(gated["conditions"][0]["reason"], "SchedulingGated");
        assert_eq!(gated["conditions"][0]["lastTransitionTime"], "t");
    }

    #[test]
    fn a_generation_starts_in_its_release() {
        let job = WriteRules {
            generation_since: Some(KubeVersion::new(1, 27)),
            ..WriteRules::CUSTOM
        };
        assert_eq!(job.generation_at(KubeVersion::new(1, 20)), Generation::None);
        assert_eq!(job.generation_at(KubeVersion::new(1, 28)), Generation::Spec);
        assert_eq!(Generation::None.on_create(), None);
        assert_eq!(Generation::CreateOnly.on_create(), Some(1));
    }
}
