//! Rules of the storage, scheduling, policy, autoscaling and coordination kinds:
//! `ValidatePersistentVolumeClaimSpec` (`pkg/apis/core/validation`),
//! `ValidateStorageClass(Update)` (`pkg/apis/storage/validation`),
//! `ValidatePriorityClass(Update)` (`pkg/apis/scheduling/validation`),
//! `ValidatePodDisruptionBudgetSpec` (`pkg/apis/policy/validation`),
//! `validateHorizontalPodAutoscalerSpec` (`pkg/apis/autoscaling/validation`) and
//! `ValidateLeaseSpec` (`pkg/apis/coordination/validation`).

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::apps::{not_more_than_100_percent, positive_int_or_percent};
use super::text;
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
    if !name.starts_with(SYSTEM_PREFIX) && value > HIGHEST_USER_PRIORITY {
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
