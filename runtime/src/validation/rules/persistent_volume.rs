//! A PersistentVolume's spec and what an update may change (`ValidatePersistentVolumeSpec`,
//! `validateVolumeNodeAffinity` and `ValidatePersistentVolumeUpdate` in
//! `pkg/apis/core/validation/validation.go`, read at 1.20, 1.28, 1.34 and 1.35): access modes, a
//! positive `storage` capacity and nothing else, the reclaim policy, node affinity with required
//! terms (their own checks are the NodeSelector's), exactly one volume source with the required
//! fields of the common ones (hostPath, NFS, local, CSI), the class name and the volume mode; on
//! update, the source, the volume mode and the node affinity stay. Inline volume specs (a
//! VolumeAttachment's) are not checked.
//!
//! Where a message prints the capacity as upstream's internal `core.ResourceList` before 1.34,
//! kapi prints the quantities as strings (`core.ResourceList{"cpu":"1"}`), not Go's dump of
//! `resource.Quantity`'s fields; from 1.34 the JSON is upstream's.

use serde_json::{Map, Value};

use super::super::IMMUTABLE;
use super::super::field::{Errors, FieldPath, Shown};
use super::cluster::{access_modes, class_and_volume_mode};
use super::go_value::{self, VOLUME_NODE_AFFINITY};
use super::pod_update::diff;
use super::text;
use crate::KubeVersion;
use crate::quantity::Quantity;

/// A volume's sources in upstream's order: the JSON field, the path a second one is reported
/// at, whether a second one is reported at all (a flex volume after another is only counted),
/// and the fields the first one must set.
const SOURCES: &[(&str, &str, bool, &[&str])] = &[
    ("hostPath", "hostPath", true, &["path"]),
    ("gcePersistentDisk", "gcePersistentDisk", true, &[]),
    ("awsElasticBlockStore", "awsElasticBlockStore", true, &[]),
    ("glusterfs", "glusterfs", true, &[]),
    ("flocker", "flocker", true, &[]),
    ("nfs", "nfs", true, &["server", "path"]),
    ("rbd", "rbd", true, &[]),
    ("quobyte", "quobyte", true, &[]),
    ("cephfs", "cephFS", true, &[]),
    ("iscsi", "iscsi", true, &[]),
    ("cinder", "cinder", true, &[]),
    ("fc", "fc", true, &[]),
    ("flexVolume", "flexVolume", false, &[]),
    ("azureFile", "azureFile", true, &[]),
    ("vsphereVolume", "vsphereVolume", true, &[]),
    ("photonPersistentDisk", "photonPersistentDisk", true, &[]),
    ("portworxVolume", "portworxVolume", true, &[]),
    ("azureDisk", "azureDisk", true, &[]),
    ("scaleIO", "scaleIO", true, &[]),
    ("local", "local", true, &["path"]),
    ("storageos", "storageos", true, &[]),
    ("csi", "csi", true, &["driver", "volumeHandle"]),
];

/// The release from which a changed node affinity may still move from beta to GA labels, and
/// says so (`validatePvNodeAffinity`; the first release read with it).
const BETA_TO_GA_SINCE: KubeVersion = KubeVersion::new(1, 28);

/// `betaToGALabel`: an old beta key a new GA key may replace.
const BETA_TO_GA: &[(&str, &str)] = &[
    (
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    ),
    ("beta.kubernetes.io/os", "kubernetes.io/os"),
    ("beta.kubernetes.io/arch", "kubernetes.io/arch"),
    (
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
    ),
];

/// On a PersistentVolume: `ValidatePersistentVolumeSpec`, then on an update what may not change.
pub(super) fn persistent_volume(
    pv: &Value,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let null = Value::Null;
    let spec = pv.get("spec").unwrap_or(&null);
    spec_checks(spec, &at.child("spec"), errors);
    if let Some(old) = old {
        update(spec, old.get("spec").unwrap_or(&null), at, errors);
    }
}

fn spec_checks(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    access_modes(spec, "", at, errors);
    capacity(spec, &at.child("capacity"), errors);
    let policy = text(spec, "persistentVolumeReclaimPolicy");
    if !policy.is_empty() && !matches!(policy, "Delete" | "Recycle" | "Retain") {
        errors.not_supported(
            &at.child("persistentVolumeReclaimPolicy"),
            &Value::from(policy),
            &["Delete", "Recycle", "Retain"],
        );
    }
    let affinity = spec.get("nodeAffinity").filter(|a| !a.is_null());
    if let Some(affinity) = affinity
        && affinity.get("required").is_none_or(Value::is_null)
    {
        let path = at.child("nodeAffinity").child("required");
        errors.required(&path, "must specify required node constraints");
    }
    let mut count = 0;
    for (field, shown, reported, required) in SOURCES {
        let Some(source) = spec.get(*field).filter(|s| !s.is_null()) else {
            continue;
        };
        if !reported {
            count += 1;
            continue;
        }
        if count > 0 {
            errors.forbidden(&at.child(shown), "may not specify more than 1 volume type");
            continue;
        }
        count += 1;
        for name in *required {
            if text(source, name).is_empty() {
                errors.required(&at.child(shown).child(name), "");
            }
        }
        source_paths(field, source, &at.child(shown), errors);
        if *field == "local" && affinity.is_none() {
            errors.required(
                &at.child("nodeAffinity"),
                "Local volume requires node affinity",
            );
        }
    }
    if count == 0 {
        errors.required(at, "must specify a volume type");
    }
    let host_path = spec.pointer("/hostPath/path").and_then(Value::as_str);
    if host_path.is_some_and(is_root) && policy == "Recycle" {
        errors.forbidden(
            &at.child("persistentVolumeReclaimPolicy"),
            "may not be 'recycle' for a hostPath mount of '/'",
        );
    }
    class_and_volume_mode(spec, at, errors);
}

/// A source's paths past being required: an NFS export's is absolute
/// (`validateNFSVolumeSource`), a host or local path has no `..` (`validatePathNoBacksteps`).
pub(super) fn source_paths(field: &str, source: &Value, at: &FieldPath, errors: &mut Errors) {
    let path = text(source, "path");
    let shown = Value::from(path);
    match field {
        "nfs" if !path.starts_with('/') => {
            errors.invalid(
                &at.child("path"),
                Shown::Plain(&shown),
                "must be an absolute path",
            );
        }
        "hostPath" | "local" if path.split('/').any(|part| part == "..") => {
            errors.invalid(
                &at.child("path"),
                Shown::Plain(&shown),
                "must not contain '..'",
            );
        }
        _ => {}
    }
}

/// Whether `path.Clean(p)` is `/`.
fn is_root(p: &str) -> bool {
    let mut depth = 0usize;
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => depth = depth.saturating_sub(1),
            _ => depth += 1,
        }
    }
    p.starts_with('/') && depth == 0
}

/// A capacity of `storage` only, each quantity positive (`validateBasicResource`,
/// `ValidatePositiveQuantityValue`).
fn capacity(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let map = spec.get("capacity").and_then(Value::as_object);
    let empty = map.is_none_or(Map::is_empty);
    if empty {
        errors.required(at, "");
    }
    let parsed: Vec<(&String, Option<Quantity>)> = map
        .into_iter()
        .flatten()
        .map(|(name, q)| {
            let text = q.as_str().map_or_else(|| q.to_string(), str::to_owned);
            (name, text.parse::<Quantity>().ok())
        })
        .collect();
    if !map.is_some_and(|m| m.contains_key("storage")) || parsed.len() > 1 {
        let json = match map {
            None => Value::Null,
            Some(_) => {
                let mut sorted: Vec<(&String, String)> = parsed
                    .iter()
                    .map(|(name, q)| {
                        (
                            *name,
                            q.as_ref().map(ToString::to_string).unwrap_or_default(),
                        )
                    })
                    .collect();
                sorted.sort();
                Value::Object(
                    sorted
                        .into_iter()
                        .map(|(k, v)| (k.clone(), Value::from(v)))
                        .collect(),
                )
            }
        };
        let go = match json.as_object() {
            None => "core.ResourceList(nil)".to_owned(),
            Some(pairs) => {
                let pairs: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
                    .collect();
                format!("core.ResourceList{{{}}}", pairs.join(", "))
            }
        };
        errors.not_supported_shown(at, Shown::Go(&go, &json), &["storage"]);
    }
    for (name, quantity) in &parsed {
        let Some(quantity) = quantity else { continue };
        let path = at.key(name);
        if let Some(value) = quantity.value()
            && value < 0
        {
            errors.invalid(
                &path,
                Shown::Plain(&Value::from(value)),
                "must be a valid resource quantity",
            );
        }
        if quantity.signum() <= 0 {
            let shown = Value::from(quantity.to_string());
            errors.invalid(&path, Shown::Plain(&shown), "must be greater than zero");
        }
    }
}

/// The source's fields: every spec field a source can be.
fn source(spec: &Value) -> Value {
    let mut out = Map::new();
    for (field, ..) in SOURCES {
        if let Some(value) = spec.get(*field).filter(|v| !v.is_null()) {
            out.insert((*field).to_owned(), value.clone());
        }
    }
    Value::Object(out)
}

/// `ValidatePersistentVolumeUpdate`: the source stays (a CSI source may gain its controller
/// expand secret), the volume mode stays and a set node affinity stays (but for beta labels
/// turned GA, from 1.28). Upstream reports the last two at `volumeMode` and `nodeAffinity`.
fn update(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let (mut new_source, old_source) = (source(new), source(old));
    let old_secret = old_source
        .pointer("/csi/controllerExpandSecretRef")
        .filter(|s| !s.is_null());
    if old_source.get("csi").is_some()
        && old_secret.is_none()
        && let Some(Value::Object(csi)) = new_source.get_mut("csi")
    {
        csi.remove("controllerExpandSecretRef");
    }
    if !super::pod_update::same(Some(&new_source), Some(&old_source)) {
        let detail = format!(
            "spec.persistentvolumesource is immutable after creation\n{}",
            diff(release, &old_source, &new_source)
        );
        errors.forbidden(&at.child("spec").child("persistentvolumesource"), &detail);
    }
    let (new_mode, old_mode) = (new.get("volumeMode"), old.get("volumeMode"));
    if !super::pod_update::same(new_mode, old_mode) {
        let shown = new_mode.unwrap_or(&Value::Null);
        errors.invalid(&at.child("volumeMode"), Shown::Plain(shown), IMMUTABLE);
    }
    let old_affinity = old.get("nodeAffinity").filter(|a| !a.is_null());
    let Some(old_affinity) = old_affinity else {
        return;
    };
    let new_affinity = new.get("nodeAffinity").filter(|a| !a.is_null());
    let beta_to_ga = release >= BETA_TO_GA_SINCE;
    let kept = match new_affinity {
        None => false,
        Some(new) if beta_to_ga => same_affinity(new, old_affinity),
        Some(new) => super::pod_update::same(Some(new), Some(old_affinity)),
    };
    if !kept {
        let detail = if beta_to_ga {
            "field is immutable, except for updating from beta label to GA"
        } else {
            IMMUTABLE
        };
        match new_affinity {
            None => errors.invalid(
                &at.child("nodeAffinity"),
                Shown::Plain(&Value::Null),
                detail,
            ),
            Some(new) => {
                let (go, json) = go_value::render(&VOLUME_NODE_AFFINITY, new, release);
                errors.invalid(&at.child("nodeAffinity"), Shown::Go(&go, &json), detail);
            }
        }
    }
}

/// The node affinities are equal but for requirements whose old beta key the new one names as
/// GA (`getMaskNodeSelectorLabelChangeEqualities`).
fn same_affinity(new: &Value, old: &Value) -> bool {
    let mut masked = old.clone();
    let new_terms = new
        .pointer("/required/nodeSelectorTerms")
        .and_then(Value::as_array);
    if let (Some(Value::Array(old_terms)), Some(new_terms)) =
        (masked.pointer_mut("/required/nodeSelectorTerms"), new_terms)
    {
        for (old_term, new_term) in old_terms.iter_mut().zip(new_terms) {
            let new_exprs = new_term.get("matchExpressions").and_then(Value::as_array);
            if let (Some(Value::Array(old_exprs)), Some(new_exprs)) =
                (old_term.get_mut("matchExpressions"), new_exprs)
            {
                for (old_req, new_req) in old_exprs.iter_mut().zip(new_exprs) {
                    let (old_key, new_key) = (text(old_req, "key"), text(new_req, "key"));
                    if BETA_TO_GA
                        .iter()
                        .any(|(beta, ga)| *beta == old_key && *ga == new_key)
                        && let Value::Object(req) = old_req
                    {
                        req.insert("key".into(), Value::from(new_key));
                    }
                }
            }
        }
    }
    super::pod_update::same(Some(new), Some(&masked))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::lines;
    use super::*;

    fn pv(spec: Value) -> Value {
        json!({"metadata": {"name": "v"}, "spec": spec})
    }

    fn run(new: &Value, old: Option<&Value>, minor: u16) -> Vec<String> {
        lines(minor, |e| {
            persistent_volume(new, old, &FieldPath::root(), e)
        })
    }

    #[test]
    fn volumes_need_modes_storage_and_one_source() {
        // ValidatePersistentVolumeSpec.
        assert_eq!(
            run(&pv(json!({})), None, 28),
            [
                "spec.accessModes: Required value",
                "spec.capacity: Required value",
                "spec.capacity: Unsupported value: core.ResourceList(nil): supported values: \"storage\"",
                "spec: Required value: must specify a volume type",
            ]
        );
        let two = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi", "cpu": "1"},
            "persistentVolumeReclaimPolicy": "Keep", "local": {"path": "/d"}, "csi": {"driver": "x"}}),
        );
        assert_eq!(
            run(&two, None, 34),
            [
                "spec.capacity: Unsupported value: {\"cpu\":\"1\",\"storage\":\"1Gi\"}: supported values: \"storage\"",
                "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
                "spec.nodeAffinity: Required value: Local volume requires node affinity",
                "spec.csi: Forbidden: may not specify more than 1 volume type",
            ]
        );
        let negative = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "-1"}, "nfs": {"server": "s"}}),
        );
        assert_eq!(
            run(&negative, None, 20),
            [
                "spec.capacity[storage]: Invalid value: -1: must be a valid resource quantity",
                "spec.capacity[storage]: Invalid value: \"-1\": must be greater than zero",
                "spec.nfs.path: Required value",
                "spec.nfs.path: Invalid value: \"\": must be an absolute path",
            ]
        );
    }

    #[test]
    fn updates_keep_the_source_mode_and_affinity() {
        // ValidatePersistentVolumeUpdate; beta labels may turn GA from 1.28 (validatePvNodeAffinity).
        let affinity = |key: &str| json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": ["a"]}]}]}});
        let old = pv(
            json!({"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/a"},
            "nodeAffinity": affinity("failure-domain.beta.kubernetes.io/zone")}),
        );
        let mut new = old.clone();
        new["spec"]["nodeAffinity"] = affinity("topology.kubernetes.io/zone");
        assert!(run(&new, Some(&old), 28).is_empty());
        let found = run(&new, Some(&old), 20);
        assert_eq!(
            found,
            [
                "nodeAffinity: Invalid value: core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}: field is immutable"
            ]
        );
        new["spec"]["hostPath"]["path"] = json!("/b");
        new["spec"]["volumeMode"] = json!("Block");
        let found = run(&new, Some(&old), 34);
        assert!(found[0].starts_with("spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n@@"), "{found:?}");
        assert_eq!(
            found[1],
            "volumeMode: Invalid value: \"Block\": field is immutable"
        );
    }
}
