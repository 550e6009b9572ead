//! Rules of the storage, scheduling, policy, autoscaling and coordination kinds:
//! `ValidatePersistentVolumeClaimSpec` (`pkg/apis/core/validation`),
//! `ValidateStorageClass(Update)` (`pkg/apis/storage/validation`),
//! `ValidatePriorityClass(Update)` (`pkg/apis/scheduling/validation`),
//! `ValidatePodDisruptionBudgetSpec` (`pkg/apis/policy/validation`),
//! `validateHorizontalPodAutoscalerSpec` (`pkg/apis/autoscaling/validation`) and
//! `ValidateLeaseSpec` (`pkg/apis/coordination/validation`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::super::IMMUTABLE;
use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::apps::{not_more_than_100_percent, positive_int_or_percent};
use super::pod_update::diff;
use super::{items, text};
use crate::KubeVersion;
use crate::quantity::Quantity;

/// `maxProvisionerParameterLen`: at most this many parameters.
const MAX_PARAMETERS: usize = 512;
/// `maxProvisionerParameterSize`: at most this many bytes of keys and values.
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;
/// `HighestUserDefinablePriority`.
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;
/// `SystemPriorityClassPrefix`: such classes are upstream's own.
const SYSTEM_PREFIX: &str = "system-";
/// The release from which a PriorityClass's changed value is reported at `value`, not `Value`
/// (the first release read with it).
const LOWER_CASE_VALUE_SINCE: KubeVersion = KubeVersion::new(1, 27);
/// The release from which a Lease's negative transitions say "must be greater than or equal
/// to 0", not "must to greater or equal than 0".
const LEASE_WORDING_SINCE: KubeVersion = KubeVersion::new(1, 27);
/// The release whose PodDisruptionBudgetSpec has `unhealthyPodEvictionPolicy`.
const UNHEALTHY_POLICY_SINCE: KubeVersion = KubeVersion::new(1, 26);

/// `ValidateStorageClass` and, on an update, `ValidateStorageClassUpdate`'s forbidden changes.
pub(super) fn storage_class(
    class: &Value,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let release = errors.release();
    let provisioner = text(class, "provisioner");
    let provisioner_at = at.child("provisioner");
    if provisioner.is_empty() {
        errors.required(&provisioner_at, "");
    } else {
        let lower = provisioner.to_lowercase();
        for message in Format::QualifiedName.messages(&lower, release) {
            errors.invalid(
                &provisioner_at,
                Shown::Plain(&Value::from(lower.as_str())),
                &message,
            );
        }
    }
    let parameters = class.get("parameters").and_then(Value::as_object);
    let parameters_at = at.child("parameters");
    if let Some(parameters) = parameters {
        if parameters.len() > MAX_PARAMETERS {
            errors.too_long(&parameters_at, MAX_PARAMETERS);
        } else {
            let mut size = 0;
            for (key, value) in parameters {
                if key.is_empty() {
                    errors.invalid(
                        &parameters_at,
                        Shown::Plain(&Value::from("")),
                        "field can not be empty.",
                    );
                }
                size += key.len() + value.as_str().map_or(0, str::len);
            }
            if size > MAX_PARAMETERS_SIZE {
                errors.too_long(&parameters_at, MAX_PARAMETERS_SIZE);
            }
        }
    }
    let policy = text(class, "reclaimPolicy");
    if !policy.is_empty() && !matches!(policy, "Delete" | "Retain") {
        errors.not_supported(
            &at.child("reclaimPolicy"),
            &Value::from(policy),
            &["Delete", "Retain"],
        );
    }
    let mode_at = at.child("volumeBindingMode");
    match class.get("volumeBindingMode").and_then(Value::as_str) {
        None => errors.required(&mode_at, ""),
        Some("Immediate" | "WaitForFirstConsumer") => {}
        Some(other) => errors.not_supported(
            &mode_at,
            &Value::from(other),
            &["Immediate", "WaitForFirstConsumer"],
        ),
    }
    allowed_topologies(class, &at.child("allowedTopologies"), errors);
    let Some(old) = old else {
        return;
    };
    let empty = Value::Object(serde_json::Map::new());
    let parameters_of = |c: &Value| {
        c.get("parameters")
            .filter(|p| !p.is_null())
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    if parameters_of(class) != parameters_of(old) {
        errors.forbidden(&parameters_at, "updates to parameters are forbidden.");
    }
    if provisioner != text(old, "provisioner") {
        errors.forbidden(&provisioner_at, "updates to provisioner are forbidden.");
    }
    if policy != text(old, "reclaimPolicy") {
        errors.forbidden(
            &at.child("reclaimPolicy"),
            "updates to reclaimPolicy are forbidden.",
        );
    }
}

/// `validateAllowedTopologies`: each term's expressions (`ValidateTopologySelectorTerm`: values
/// present and unique, a qualified key, no key twice) and no term twice. Upstream compares each
/// term with the list it builds, which starts with as many empty entries as there are terms,
/// so a term without expressions is reported once for each of those and each earlier one.
fn allowed_topologies(class: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let terms = items(class, "allowedTopologies");
    let mut seen: Vec<BTreeMap<&str, BTreeSet<&str>>> = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let expressions_at = at.index(i).child("matchLabelExpressions");
        let mut keys: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (j, requirement) in items(term, "matchLabelExpressions").iter().enumerate() {
            let requirement_at = expressions_at.index(j);
            let values_at = requirement_at.child("values");
            let values = items(requirement, "values");
            if values.is_empty() {
                errors.required(&values_at, "");
            }
            let mut set = BTreeSet::new();
            for (k, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                if !set.insert(value) {
                    errors.duplicate(&values_at.index(k), &Value::from(value));
                }
            }
            let key = text(requirement, "key");
            let key_at = requirement_at.child("key");
            for message in Format::QualifiedName.messages(key, release) {
                errors.invalid(&key_at, Shown::Plain(&Value::from(key)), &message);
            }
            if keys.insert(key, set).is_some() {
                errors.duplicate(&key_at, &Value::from(key));
            }
        }
        let placeholders = if keys.is_empty() { terms.len() } else { 0 };
        let repeats = placeholders + seen.iter().filter(|earlier| **earlier == keys).count();
        for _ in 0..repeats {
            errors.duplicate(&expressions_at, &Value::from(""));
        }
        seen.push(keys);
    }
}

/// The release from which a claim may ask for `ReadWriteOncePod` (the feature on by default).
const READ_WRITE_ONCE_POD_SINCE: KubeVersion = KubeVersion::new(1, 27);

/// The release from which a StatefulSet's claim templates are checked on create
/// (`validateVolumeClaimTemplates`; the first release read with it).
const CLAIM_TEMPLATES_SINCE: KubeVersion = KubeVersion::new(1, 35);

/// A claim's or a volume's access modes: at least one (`required` the detail upstream gives),
/// each supported, ReadWriteOncePod alone (from 1.27).
pub(super) fn access_modes(spec: &Value, required: &str, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let modes: Vec<&str> = spec
        .get("accessModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|m| m.as_str().unwrap_or(""))
        .collect();
    let modes_at = at.child("accessModes");
    if modes.is_empty() {
        errors.required(&modes_at, required);
    }
    let once_pod = release >= READ_WRITE_ONCE_POD_SINCE;
    let supported: &[&str] = if once_pod {
        &[
            "ReadOnlyMany",
            "ReadWriteMany",
            "ReadWriteOnce",
            "ReadWriteOncePod",
        ]
    } else {
        &["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"]
    };
    for mode in &modes {
        if !supported.contains(mode) {
            errors.not_supported(&modes_at, &Value::from(*mode), supported);
        }
    }
    let with_once_pod = modes.contains(&"ReadWriteOncePod");
    let with_others = modes
        .iter()
        .any(|m| *m != "ReadWriteOncePod" && supported.contains(m));
    if once_pod && with_once_pod && with_others {
        errors.forbidden(
            &modes_at,
            "may not use ReadWriteOncePod with other access modes",
        );
    }
}

/// A PersistentVolumeClaim's spec, on the claim itself (which has its `kind`) or, from 1.35 and
/// on create only, on a StatefulSet's claim template (`validateVolumeClaimTemplates`).
pub(super) fn claim(claim: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let object = claim.get("kind").and_then(Value::as_str) == Some("PersistentVolumeClaim");
    let template = old.is_none() && errors.release() >= CLAIM_TEMPLATES_SINCE;
    if object || template {
        let spec = claim.get("spec").unwrap_or(&Value::Null);
        claim_spec(spec, &at.child("spec"), errors);
    }
}

/// `ValidatePersistentVolumeClaimSpec`: access modes, a positive storage request (reported at
/// upstream's `resources[storage]`), the class name and the volume mode.
pub(super) fn claim_spec(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    access_modes(spec, "at least 1 access mode is required", at, errors);
    let storage_at = at.child("resources").key("storage");
    let storage = spec.pointer("/resources/requests/storage");
    match storage.map(|q| q.as_str().map_or_else(|| q.to_string(), str::to_owned)) {
        None => errors.required(&storage_at, ""),
        Some(text) => {
            if let Ok(quantity) = text.parse::<Quantity>()
                && quantity.signum() <= 0
            {
                let shown = Value::from(quantity.to_string());
                errors.invalid(
                    &storage_at,
                    Shown::Plain(&shown),
                    "must be greater than zero",
                );
            }
        }
    }
    class_and_volume_mode(spec, at, errors);
    data_sources(spec, at, errors);
}

/// The first release checking a data source's fields as `validateDataSource` and
/// `validateDataSourceRef` do (AnyVolumeDataSource on by default from 1.24, 1.28 read).
const ANY_DATA_SOURCE_SINCE: KubeVersion = KubeVersion::new(1, 24);

/// The data sources of a claim: in 1.20 a volume's or a snapshot's name (upstream's strategy
/// drops any other source first; kapi keeps it unchecked); from 1.24 `dataSource` and
/// `dataSourceRef` each named, of a kind, a PersistentVolumeClaim when of the core group, and
/// the two alike. A reference's `namespace` (CrossNamespaceVolumeDataSource) is alpha.
fn data_sources(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let source = spec.get("dataSource").filter(|s| !s.is_null());
    let reference = spec.get("dataSourceRef").filter(|s| !s.is_null());
    let group = |s: &Value| s.get("apiGroup").and_then(Value::as_str).map(str::to_owned);
    if errors.release() < ANY_DATA_SOURCE_SINCE {
        let Some(source) = source else {
            return;
        };
        let kind = (group(source).unwrap_or_default(), text(source, "kind"));
        let supported = matches!(
            (kind.0.as_str(), kind.1),
            ("", "PersistentVolumeClaim") | ("snapshot.storage.k8s.io", "VolumeSnapshot")
        );
        if supported && text(source, "name").is_empty() {
            errors.required(&at.child("dataSource").child("name"), "");
        }
        return;
    }
    for (field, value) in [("dataSource", source), ("dataSourceRef", reference)] {
        if let Some(value) = value {
            data_source(value, &at.child(field), errors);
        }
    }
    if let (Some(source), Some(reference)) = (source, reference) {
        let alike = group(source) == group(reference)
            && text(source, "kind") == text(reference, "kind")
            && text(source, "name") == text(reference, "name");
        if !alike {
            // Upstream reports the path `spec.dataSource` itself as the bad value: a
            // `*field.Path`, whose fields Go's `%#v` prints and JSON does not.
            let go =
                "field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}";
            let json = Value::Object(serde_json::Map::new());
            errors.invalid(at, Shown::Go(go, &json), "must match dataSourceRef");
        }
    }
}

/// `validateDataSource` and `validateDataSourceRef` (but for the alpha namespace).
fn data_source(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let kind = text(source, "kind");
    if text(source, "name").is_empty() {
        errors.required(&at.child("name"), "");
    }
    if kind.is_empty() {
        errors.required(&at.child("kind"), "");
    }
    let group = text(source, "apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        errors.invalid(
            at,
            Shown::Plain(&Value::from(kind)),
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        );
    }
    if !group.is_empty() {
        for message in Format::DnsSubdomain.messages(group, errors.release()) {
            errors.invalid(
                &at.child("apiGroup"),
                Shown::Plain(&Value::from(group)),
                &message,
            );
        }
    }
}

/// The annotation that named a claim's class before `storageClassName`.
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// The first release letting a claim without a class get one (RetroactiveDefaultStorageClass,
/// on by default from 1.26; 1.28 read).
const CLASS_FROM_NIL_SINCE: KubeVersion = KubeVersion::new(1, 26);
/// The first release read appending a diff of the specs to a refused change (1.28).
const CLAIM_DIFF_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// The first release with `volumeAttributesClassName` mutable (VolumeAttributesClass GA) and a
/// bound claim's request lowered down to above its capacity (RecoverVolumeExpansionFailure):
/// 1.34 read.
const CLAIM_MODIFY_SINCE: KubeVersion = KubeVersion::new(1, 34);

/// `ValidatePersistentVolumeClaimUpdate`: the spec as it was but for a first volume name, a
/// class given where the beta annotation or nothing named one, from 1.34 the volume attributes
/// class, and a bound claim's storage request, which may grow (from 1.34 also shrink back to
/// above the capacity); the beta class annotation and the volume mode as they were.
pub(super) fn claim_update(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let spec_of = |claim: &Value| claim.get("spec").cloned().unwrap_or(Value::Null);
    let (mut new_spec, mut old_spec) = (normalized(spec_of(new)), normalized(spec_of(old)));
    let annotation = |claim: &Value| {
        claim
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let (new_annotation, old_annotation) = (annotation(new), annotation(old));
    let class = |spec: &Value| {
        spec.get("storageClassName")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let (new_class, old_class) = (class(&new_spec), class(&old_spec));
    if text(&old_spec, "volumeName").is_empty() {
        set(
            &mut old_spec,
            "volumeName",
            new_spec.get("volumeName").cloned(),
        );
    }
    // validateStorageClassUpgradeFromAnnotation and, from 1.26, ...FromNil.
    let from_annotation = old_annotation.as_ref().is_some_and(|old_sc| {
        old_class.is_none()
            && new_class.as_ref() == Some(old_sc)
            && new_annotation.as_ref().is_none_or(|a| a == old_sc)
    });
    let from_nil = release >= CLASS_FROM_NIL_SINCE
        && new_class.is_some()
        && old_class.is_none()
        && old_annotation
            .as_ref()
            .is_none_or(|a| Some(a) == new_class.as_ref());
    if from_annotation || from_nil {
        set(&mut new_spec, "storageClassName", None);
    } else if new_annotation != old_annotation {
        let path = at
            .child("metadata")
            .child("annotations")
            .child(BETA_CLASS_ANNOTATION);
        let shown = Value::from(new_annotation.unwrap_or_default());
        errors.invalid(&path, Shown::Plain(&shown), IMMUTABLE);
    }
    let modifiable = release >= CLAIM_MODIFY_SINCE;
    if modifiable {
        let attributes_at = at.child("spec").child("volumeAttributesClassName");
        let new_attributes = new_spec
            .get("volumeAttributesClassName")
            .and_then(Value::as_str);
        if old_spec
            .get("volumeAttributesClassName")
            .is_some_and(|c| !c.is_null())
        {
            match new_attributes {
                None => errors.forbidden(
                    &attributes_at,
                    "update from non-nil value to nil is forbidden",
                ),
                Some("") => errors.forbidden(
                    &attributes_at,
                    "update from non-nil value to an empty string is forbidden",
                ),
                Some(_) => {}
            }
        }
        let kept = old_spec.get("volumeAttributesClassName").cloned();
        set(&mut new_spec, "volumeAttributesClassName", kept);
    }
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    let storage = |spec: &Value| spec.pointer("/resources/requests/storage").cloned();
    if bound && let Some(Value::Object(requests)) = new_spec.pointer_mut("/resources/requests") {
        match storage(&old_spec) {
            Some(old_storage) => requests.insert("storage".into(), old_storage),
            None => requests.remove("storage"),
        };
    }
    if !super::pod_update::same(Some(&new_spec), Some(&old_spec)) {
        let except = if modifiable {
            "resources.requests and volumeAttributesClassName"
        } else {
            "resources.requests"
        };
        let detail = if release >= CLAIM_DIFF_SINCE {
            format!(
                "spec is immutable after creation except {except} for bound claims\n{}",
                diff(release, &old_spec, &new_spec)
            )
        } else {
            format!("is immutable after creation except {except} for bound claims")
        };
        errors.forbidden(&at.child("spec"), &detail);
    }
    let quantity = |claim: &Value, pointer: &str| {
        claim
            .pointer(pointer)
            .and_then(Value::as_str)
            .and_then(|q| q.parse::<Quantity>().ok())
            .unwrap_or_default()
    };
    let new_size = quantity(new, "/spec/resources/requests/storage");
    let old_size = quantity(old, "/spec/resources/requests/storage");
    if new_size < old_size {
        let path = at.join(".spec.resources.requests.storage");
        if !modifiable {
            errors.forbidden(&path, "field can not be less than previous value");
        } else if new_size <= quantity(old, "/status/capacity/storage") {
            errors.forbidden(&path, "field can not be less than status.capacity");
        }
    }
    let (new_mode, old_mode) = (
        new.pointer("/spec/volumeMode"),
        old.pointer("/spec/volumeMode"),
    );
    if !super::pod_update::same(new_mode, old_mode) {
        let shown = new_mode.unwrap_or(&Value::Null);
        errors.invalid(&at.child("volumeMode"), Shown::Plain(shown), IMMUTABLE);
    }
}

/// Sets (or with `None` removes) a field of an object.
fn set(holder: &mut Value, field: &str, value: Option<Value>) {
    if let Value::Object(map) = holder {
        match value {
            Some(value) => map.insert(field.to_owned(), value),
            None => map.remove(field),
        };
    }
}

/// A claim spec as `apiequality.Semantic` compares it: quantities by value (`1Gi` is
/// `1024Mi`), an empty map as a missing one.
fn normalized(mut spec: Value) -> Value {
    if let Some(Value::Object(resources)) = spec.get_mut("resources") {
        for list in ["requests", "limits"] {
            if let Some(Value::Object(quantities)) = resources.get_mut(list) {
                for value in quantities.values_mut() {
                    if let Some(quantity) = value.as_str().and_then(|q| q.parse::<Quantity>().ok())
                    {
                        *value = Value::from(quantity.to_string());
                    }
                }
            }
            if resources
                .get(list)
                .and_then(Value::as_object)
                .is_some_and(|m| m.is_empty())
            {
                resources.remove(list);
            }
        }
    }
    spec
}

/// A claim's or a volume's class name (a DNS subdomain) and volume mode.
pub(super) fn class_and_volume_mode(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let class = text(spec, "storageClassName");
    if !class.is_empty() {
        for message in Format::DnsSubdomain.messages(class, release) {
            errors.invalid(
                &at.child("storageClassName"),
                Shown::Plain(&Value::from(class)),
                &message,
            );
        }
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !matches!(mode, "Block" | "Filesystem")
    {
        errors.not_supported(
            &at.child("volumeMode"),
            &Value::from(mode),
            &["Block", "Filesystem"],
        );
    }
}

/// `ValidatePriorityClass` (a user class's value at most 10⁹) and, on an update, the value
/// that never changes.
pub(super) fn priority_class(
    class: &Value,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let name = class
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let value = class.get("value").and_then(Value::as_i64).unwrap_or(0);
    if name.starts_with(SYSTEM_PREFIX) {
        if let Some(problem) = system_class_problem(name, value, class) {
            let detail = format!(
                "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {problem}"
            );
            errors.forbidden(&at.child("metadata").child("name"), &detail);
        }
    } else if value > HIGHEST_USER_PRIORITY {
        let detail =
            format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}");
        errors.forbidden(&at.child("value"), &detail);
    }
    if let Some(old) = old
        && old.get("value").and_then(Value::as_i64).unwrap_or(0) != value
    {
        let field = if errors.release() >= LOWER_CASE_VALUE_SINCE {
            "value"
        } else {
            "Value"
        };
        errors.forbidden(&at.child(field), "may not be changed in an update.");
    }
}

/// `SystemPriorityClasses()`: upstream's own classes, their values (`SystemCriticalPriority`
/// and 1000 above it) and their `globalDefault`, false for both.
const SYSTEM_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// What `IsKnownSystemPriorityClass` says of a class named with the system prefix, if it is
/// not one of upstream's as upstream defines it.
fn system_class_problem(name: &str, value: i64, class: &Value) -> Option<String> {
    let Some((_, fixed)) = SYSTEM_CLASSES.iter().find(|(known, _)| *known == name) else {
        return Some(format!("{name} is not a known system priority class"));
    };
    if value != *fixed {
        return Some(format!("value of {name} PriorityClass must be {fixed}"));
    }
    if class.get("globalDefault") == Some(&Value::Bool(true)) {
        return Some(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
    }
    None
}

/// The internal `policy.PodDisruptionBudgetSpec` as upstream prints it: JSON of the untagged
/// struct from 1.34 (fields in declaration order); before, Go's `%#v`, whose pointers print as
/// addresses (a fixed one here).
fn pdb_spec_value(spec: &Value, release: KubeVersion) -> (String, Value) {
    let mut fields = vec![
        ("MinAvailable", "minAvailable", "intstr.IntOrString"),
        ("Selector", "selector", "v1.LabelSelector"),
        ("MaxUnavailable", "maxUnavailable", "intstr.IntOrString"),
    ];
    if release >= UNHEALTHY_POLICY_SINCE {
        fields.push((
            "UnhealthyPodEvictionPolicy",
            "unhealthyPodEvictionPolicy",
            "policy.UnhealthyPodEvictionPolicyType",
        ));
    }
    let mut json = serde_json::Map::new();
    let mut go = Vec::new();
    for (go_name, name, go_type) in fields {
        let value = spec.get(name).cloned().unwrap_or(Value::Null);
        let address = if value.is_null() {
            "nil"
        } else {
            "0xc000000000"
        };
        go.push(format!("{go_name}:(*{go_type})({address})"));
        json.insert(go_name.to_owned(), value);
    }
    let go = format!("policy.PodDisruptionBudgetSpec{{{}}}", go.join(", "));
    (go, Value::Object(json))
}

/// `ValidatePodDisruptionBudgetSpec`: `minAvailable` or `maxUnavailable`, each a count or a
/// percentage, and a known unhealthy-pod eviction policy.
pub(super) fn pdb_spec(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let set = |f: &str| spec.get(f).filter(|v| !v.is_null());
    if set("minAvailable").is_some() && set("maxUnavailable").is_some() {
        let (go, json) = pdb_spec_value(spec, release);
        errors.invalid(
            at,
            Shown::Go(&go, &json),
            "minAvailable and maxUnavailable cannot be both set",
        );
    }
    for field in ["minAvailable", "maxUnavailable"] {
        if let Some(value) = set(field) {
            let path = at.child(field);
            positive_int_or_percent(value, &path, errors);
            not_more_than_100_percent(value, &path, errors);
        }
    }
    if release >= UNHEALTHY_POLICY_SINCE
        && let Some(policy) = set("unhealthyPodEvictionPolicy").and_then(Value::as_str)
        && !matches!(policy, "AlwaysAllow" | "IfHealthyBudget")
    {
        errors.not_supported(
            &at.child("unhealthyPodEvictionPolicy"),
            &Value::from(policy),
            &["AlwaysAllow", "IfHealthyBudget"],
        );
    }
}

/// `validateHorizontalPodAutoscalerSpec`'s replica bounds (`minReplicas` is a `minimum` check).
pub(super) fn hpa_replicas(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    let path = at.child("maxReplicas");
    if max < 1 {
        errors.invalid(
            &path,
            Shown::Plain(&Value::from(max)),
            "must be greater than 0",
        );
    }
    if let Some(min) = spec.get("minReplicas").and_then(Value::as_i64)
        && max < min
    {
        errors.invalid(
            &path,
            Shown::Plain(&Value::from(max)),
            "must be greater than or equal to `minReplicas`",
        );
    }
}

/// `ValidateLeaseSpec`: a positive duration and non-negative transitions.
pub(super) fn lease_spec(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    if let Some(duration) = spec.get("leaseDurationSeconds").and_then(Value::as_i64)
        && duration <= 0
    {
        errors.invalid(
            &at.child("leaseDurationSeconds"),
            Shown::Plain(&Value::from(duration)),
            "must be greater than 0",
        );
    }
    if let Some(transitions) = spec.get("leaseTransitions").and_then(Value::as_i64)
        && transitions < 0
    {
        let detail = if errors.release() >= LEASE_WORDING_SINCE {
            "must be greater than or equal to 0"
        } else {
            "must to greater or equal than 0"
        };
        errors.invalid(
            &at.child("leaseTransitions"),
            Shown::Plain(&Value::from(transitions)),
            detail,
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    use super::super::lines as messages;

    #[test]
    fn storage_classes_name_a_provisioner_and_keep_it() {
        // ValidateStorageClass, ValidateStorageClassUpdate.
        let root = FieldPath::root();
        let bad = json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"});
        assert_eq!(
            messages(34, |e| storage_class(&bad, None, &root, e)),
            [
                "provisioner: Required value",
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ]
        );
        let old = json!({"provisioner": "a.io/x", "parameters": {"k": "v"}, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"});
        let new = json!({"provisioner": "a.io/x", "parameters": {"k": "w"}, "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate"});
        assert_eq!(
            messages(20, |e| storage_class(&new, Some(&old), &root, e)),
            [
                "parameters: Forbidden: updates to parameters are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
            ]
        );
    }

    #[test]
    fn allowed_topologies_have_values_keys_and_no_repeats() {
        // validateAllowedTopologies, ValidateTopologySelectorTerm: an empty term equals the
        // empty entries upstream's list starts with, one duplicate each.
        let class = json!({"provisioner": "a.io/x", "volumeBindingMode": "Immediate", "allowedTopologies": [
            {"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}, {"key": "zone", "values": []}]},
            {},
            {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
        ]});
        assert_eq!(
            messages(34, |e| storage_class(&class, None, &FieldPath::root(), e)),
            [
                "allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: \"a\"",
                "allowedTopologies[0].matchLabelExpressions[1].values: Required value",
                "allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value: \"zone\"",
                "allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\"",
                "allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\"",
                "allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\"",
            ]
        );
        let repeated = json!({"provisioner": "a.io/x", "volumeBindingMode": "Immediate", "allowedTopologies": [
            {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
            {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
        ]});
        assert_eq!(
            messages(20, |e| storage_class(
                &repeated,
                None,
                &FieldPath::root(),
                e
            )),
            ["allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\""]
        );
    }

    #[test]
    fn claim_data_sources_name_a_claim_or_a_grouped_kind() {
        // validateDataSource, validateDataSourceRef and their match (AnyVolumeDataSource on from
        // 1.24); 1.20 only names a volume's or snapshot's source.
        let spec = FieldPath::of("spec");
        let claim = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "dataSource": {"kind": "Snapshot"},
            "dataSourceRef": {"apiGroup": "Bad_Group", "kind": "Snapshot", "name": "s"}});
        assert_eq!(
            messages(28, |e| claim_spec(&claim, &spec, e)),
            [
                "spec.dataSource.name: Required value",
                "spec.dataSource: Invalid value: \"Snapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                "spec.dataSourceRef.apiGroup: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec: Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}: must match dataSourceRef",
            ]
        );
        assert_eq!(
            messages(34, |e| claim_spec(&claim, &spec, e))[3],
            "spec: Invalid value: {}: must match dataSourceRef"
        );
        let old_style = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "dataSource": {"kind": "PersistentVolumeClaim"}});
        assert_eq!(
            messages(20, |e| claim_spec(&old_style, &spec, e)),
            ["spec.dataSource.name: Required value"]
        );
    }

    #[test]
    fn claim_updates_keep_the_spec_but_for_what_upstream_lets_change() {
        // ValidatePersistentVolumeClaimUpdate.
        let root = FieldPath::root();
        let claim = |storage: &str, phase: &str, class: Value| {
            json!({"metadata": {"name": "c"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": storage}}, "storageClassName": class},
                "status": {"phase": phase, "capacity": {"storage": "2Gi"}}})
        };
        let old = claim("2Gi", "Bound", json!("fast"));
        // A bound claim grows.
        assert!(
            messages(20, |e| claim_update(
                &claim("3Gi", "Bound", json!("fast")),
                &old,
                &root,
                e
            ))
            .is_empty()
        );
        assert!(
            messages(34, |e| claim_update(
                &claim("3072Mi", "Bound", json!("fast")),
                &old,
                &root,
                e
            ))
            .is_empty()
        );
        // It may not shrink (from 1.34: not to its capacity).
        assert_eq!(
            messages(28, |e| claim_update(
                &claim("1Gi", "Bound", json!("fast")),
                &old,
                &root,
                e
            )),
            [
                "spec.resources.requests.storage: Forbidden: field can not be less than previous value"
            ]
        );
        assert_eq!(
            messages(34, |e| claim_update(
                &claim("1Gi", "Bound", json!("fast")),
                &old,
                &root,
                e
            )),
            [
                "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
            ]
        );
        // A pending claim keeps its request, and nothing keeps its class.
        let pending = claim("2Gi", "Pending", json!("fast"));
        assert_eq!(
            messages(20, |e| claim_update(
                &claim("3Gi", "Pending", json!("slow")),
                &pending,
                &root,
                e
            )),
            [
                "spec: Forbidden: is immutable after creation except resources.requests for bound claims"
            ]
        );
        let found = messages(28, |e| {
            claim_update(&claim("2Gi", "Pending", json!("slow")), &pending, &root, e)
        });
        assert!(
            found[0].starts_with("spec: Forbidden: spec is immutable after creation except resources.requests for bound claims\n@@"),
            "{found:?}"
        );
        let found = messages(34, |e| {
            claim_update(&claim("2Gi", "Pending", json!("slow")), &pending, &root, e)
        });
        assert!(
            found[0].starts_with("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"),
            "{found:?}"
        );
        // A claim without a class gets one from 1.26 (RetroactiveDefaultStorageClass).
        let classless = claim("2Gi", "Pending", Value::Null);
        let classed = claim("2Gi", "Pending", json!("fast"));
        assert!(messages(28, |e| claim_update(&classed, &classless, &root, e)).is_empty());
        assert_eq!(
            messages(20, |e| claim_update(&classed, &classless, &root, e)).len(),
            1
        );
        // The volume mode stays, reported at upstream's `volumeMode`.
        let mut block = pending.clone();
        block["spec"]["volumeMode"] = json!("Block");
        assert_eq!(
            messages(20, |e| claim_update(&block, &pending, &root, e))[1],
            "volumeMode: Invalid value: \"Block\": field is immutable"
        );
    }

    #[test]
    fn claims_ask_for_access_and_storage() {
        // ValidatePersistentVolumeClaimSpec: storage at `resources[storage]`; ReadWriteOncePod
        // from 1.27.
        let spec = FieldPath::of("spec");
        assert_eq!(
            messages(34, |e| claim_spec(&json!({"volumeMode": "Raw"}), &spec, e)),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value",
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
            ]
        );
        let claim = json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "resources": {"requests": {"storage": "0"}}});
        assert_eq!(
            messages(28, |e| claim_spec(&claim, &spec, e)),
            [
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
                "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
            ]
        );
        // A StatefulSet's template from 1.35, on create.
        let template = json!({"spec": {}});
        assert!(messages(34, |e| super::claim(&template, None, &FieldPath::root(), e)).is_empty());
        assert_eq!(
            messages(36, |e| super::claim(&template, None, &FieldPath::root(), e)).len(),
            2
        );
        assert!(
            messages(36, |e| super::claim(
                &template,
                Some(&template),
                &FieldPath::root(),
                e
            ))
            .is_empty()
        );
        assert_eq!(
            messages(20, |e| claim_spec(&claim, &spec, e))[0],
            "spec.accessModes: Unsupported value: \"ReadWriteOncePod\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\""
        );
    }

    #[test]
    fn priority_class_values_are_bounded_and_fixed() {
        // ValidatePriorityClass(Update); 1.20 reports the change at `Value`.
        let root = FieldPath::root();
        let high = json!({"metadata": {"name": "high"}, "value": 2_000_000_000});
        assert_eq!(
            messages(34, |e| priority_class(&high, None, &root, e)),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
        let old = json!({"metadata": {"name": "p"}, "value": 1});
        let new = json!({"metadata": {"name": "p"}, "value": 2});
        assert_eq!(
            messages(20, |e| priority_class(&new, Some(&old), &root, e)),
            ["Value: Forbidden: may not be changed in an update."]
        );
        assert_eq!(
            messages(28, |e| priority_class(&new, Some(&old), &root, e)),
            ["value: Forbidden: may not be changed in an update."]
        );
    }

    #[test]
    fn system_priority_classes_keep_their_values() {
        // ValidatePriorityClass, IsKnownSystemPriorityClass.
        let root = FieldPath::root();
        let class = |name: &str, value: i64| json!({"metadata": {"name": name}, "value": value});
        assert!(
            messages(28, |e| priority_class(
                &class("system-node-critical", 2_000_001_000),
                None,
                &root,
                e
            ))
            .is_empty()
        );
        assert_eq!(
            messages(28, |e| priority_class(
                &class("system-cluster-critical", 1),
                None,
                &root,
                e
            )),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-cluster-critical PriorityClass must be 2000000000"
            ]
        );
        assert_eq!(
            messages(34, |e| priority_class(
                &class("system-mine", 1),
                None,
                &root,
                e
            )),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
            ]
        );
        let mut default = class("system-node-critical", 2_000_001_000);
        default["globalDefault"] = json!(true);
        assert_eq!(
            messages(20, |e| priority_class(&default, None, &root, e)),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of system-node-critical PriorityClass must be false"
            ]
        );
    }

    #[test]
    fn disruption_budgets_take_one_count_or_percentage() {
        // ValidatePodDisruptionBudgetSpec, ValidatePositiveIntOrPercent.
        let spec = FieldPath::of("spec");
        let both = json!({"minAvailable": 1, "maxUnavailable": "150%"});
        assert_eq!(
            messages(34, |e| pdb_spec(&both, &spec, e)),
            [
                "spec: Invalid value: {\"MinAvailable\":1,\"Selector\":null,\"MaxUnavailable\":\"150%\",\"UnhealthyPodEvictionPolicy\":null}: minAvailable and maxUnavailable cannot be both set",
                "spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
            ]
        );
        assert_eq!(
            messages(20, |e| pdb_spec(&json!({"minAvailable": "half"}), &spec, e)),
            [
                "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"half\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
            ]
        );
        assert_eq!(
            messages(28, |e| pdb_spec(&json!({"maxUnavailable": -1}), &spec, e)),
            ["spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]
        );
    }

    #[test]
    fn autoscalers_and_leases_bound_their_numbers() {
        // validateHorizontalPodAutoscalerSpec, ValidateLeaseSpec (1.20's wording).
        let spec = FieldPath::of("spec");
        assert_eq!(
            messages(34, |e| hpa_replicas(
                &json!({"minReplicas": 3, "maxReplicas": 2}),
                &spec,
                e
            )),
            ["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"]
        );
        assert_eq!(
            messages(34, |e| hpa_replicas(&json!({}), &spec, e)),
            ["spec.maxReplicas: Invalid value: 0: must be greater than 0"]
        );
        let lease = json!({"leaseDurationSeconds": 0, "leaseTransitions": -1});
        assert_eq!(
            messages(20, |e| lease_spec(&lease, &spec, e)),
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must to greater or equal than 0",
            ]
        );
    }
}
