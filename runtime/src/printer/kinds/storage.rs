//! The storage kinds' cells: PersistentVolumes' and claims' STATUS, CLAIM, CAPACITY, ACCESS
//! MODES and STORAGECLASS (`printPersistentVolume`, `printPersistentVolumeClaim`, with
//! `helper.GetAccessModesAsString` and `GetPersistentVolume[Claim]Class`), a StorageClass's
//! NAME and defaults (`printStorageClass`) and a CSIDriver's TOKENREQUESTS (`printCSIDriver`), of
//! `pkg/printers/internalversion/printers.go`.

use serde_json::Value;

use crate::printer::format::{self, array_at, at, str_at};

/// The annotation that names a volume's or claim's class before `storageClassName`.
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// Access modes as `GetAccessModesAsString`: `RWO`, `ROX`, `RWX`, `RWOP`, in that order,
/// each once, joined by `,`.
pub(crate) fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .into_iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| short)
    .collect::<Vec<_>>()
    .join(",")
}

/// A volume's or claim's STATUS: `Terminating` once deleted, else the phase at `path`.
pub(crate) fn phase_or_terminating(object: &Value, path: &str) -> Value {
    if at(object, ".metadata.deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return Value::from("Terminating");
    }
    Value::from(str_at(object, path))
}

/// A volume's or claim's STORAGECLASS: the beta annotation when present, else the class name
/// at `path`, else `""`.
pub(crate) fn storage_class_of(object: &Value, path: &str) -> Value {
    let annotation = format::map_at(object, ".metadata.annotations")
        .and_then(|a| a.get(BETA_CLASS))
        .and_then(Value::as_str);
    Value::from(annotation.unwrap_or_else(|| str_at(object, path)))
}

/// PersistentVolume CLAIM: `namespace/name` of the claim bound, `""` without.
pub(crate) fn persistent_volume_claim(volume: &Value) -> Value {
    match at(volume, ".spec.claimRef").filter(|c| !c.is_null()) {
        Some(claim) => Value::from(format::namespaced_name(claim)),
        None => Value::from(""),
    }
}

fn bound(claim: &Value) -> bool {
    !str_at(claim, ".spec.volumeName").is_empty()
}

/// PersistentVolumeClaim CAPACITY: the bound volume's storage (`status.capacity`), `""` while
/// the claim is not bound.
pub(crate) fn claim_capacity(claim: &Value) -> Value {
    if !bound(claim) {
        return Value::from("");
    }
    Value::from(format::quantity(at(claim, ".status.capacity.storage")))
}

/// PersistentVolumeClaim ACCESS MODES: the bound volume's (`status.accessModes`), `""` while the
/// claim is not bound.
pub(crate) fn claim_access_modes(claim: &Value) -> Value {
    if !bound(claim) {
        return Value::from("");
    }
    Value::from(access_modes(array_at(claim, ".status.accessModes")))
}

/// StorageClass NAME: the name, with ` (default)` when either default-class annotation is
/// `"true"`.
pub(crate) fn storage_class_name(class: &Value) -> Value {
    let name = str_at(class, ".metadata.name");
    let annotations = format::map_at(class, ".metadata.annotations");
    let default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|key| {
        annotations
            .and_then(|a| a.get(*key))
            .and_then(Value::as_str)
            == Some("true")
    });
    Value::from(if default {
        format!("{name} (default)")
    } else {
        name.to_owned()
    })
}

/// StorageClass RECLAIMPOLICY: `Delete` when unset.
pub(crate) fn storage_class_reclaim_policy(class: &Value) -> Value {
    Value::from(
        at(class, ".reclaimPolicy")
            .and_then(Value::as_str)
            .unwrap_or("Delete"),
    )
}

/// StorageClass VOLUMEBINDINGMODE: `Immediate` when unset.
pub(crate) fn storage_class_binding_mode(class: &Value) -> Value {
    Value::from(
        at(class, ".volumeBindingMode")
            .and_then(Value::as_str)
            .unwrap_or("Immediate"),
    )
}

/// CSIDriver TOKENREQUESTS: the audiences joined by `,`; `<unset>` without the list.
pub(crate) fn csi_driver_token_requests(driver: &Value) -> Value {
    match at(driver, ".spec.tokenRequests").and_then(Value::as_array) {
        Some(requests) => Value::from(
            requests
                .iter()
                .map(|r| str_at(r, ".audience"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        None => Value::from(format::UNSET),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn volumes_and_claims() {
        let modes = json!([
            "ReadWriteMany",
            "ReadWriteOnce",
            "ReadWriteOnce",
            "ReadWriteOncePod"
        ]);
        assert_eq!(access_modes(modes.as_array().unwrap()), "RWO,RWX,RWOP");
        let volume = json!({"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"storageClassName": "fast", "claimRef": {"namespace": "ns", "name": "data"}},
            "status": {"phase": "Bound"}});
        assert_eq!(
            storage_class_of(&volume, ".spec.storageClassName"),
            json!("old")
        );
        assert_eq!(persistent_volume_claim(&volume), json!("ns/data"));
        assert_eq!(
            phase_or_terminating(&volume, ".status.phase"),
            json!("Bound")
        );
        let deleted = json!({"metadata": {"deletionTimestamp": "2024-05-01T09:00:00Z"}, "status": {"phase": "Bound"}});
        assert_eq!(
            phase_or_terminating(&deleted, ".status.phase"),
            json!("Terminating")
        );
        let pending = json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}},
            "status": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}});
        assert_eq!(claim_capacity(&pending), json!(""));
        assert_eq!(claim_access_modes(&pending), json!(""));
        let mut bound = pending.clone();
        bound["spec"]["volumeName"] = json!("pv1");
        bound["status"]["capacity"]["storage"] = json!("1024Mi");
        assert_eq!(claim_capacity(&bound), json!("1Gi"));
        assert_eq!(claim_access_modes(&bound), json!("RWO"));
        assert_eq!(
            storage_class_of(&bound, ".spec.storageClassName"),
            json!("")
        );
    }

    #[test]
    fn storage_classes_and_drivers() {
        let class = json!({"metadata": {"name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}});
        assert_eq!(storage_class_name(&class), json!("standard (default)"));
        assert_eq!(storage_class_reclaim_policy(&class), json!("Delete"));
        assert_eq!(storage_class_binding_mode(&class), json!("Immediate"));
        let other = json!({"metadata": {"name": "slow", "annotations": {
            "storageclass.beta.kubernetes.io/is-default-class": "false"}}, "reclaimPolicy": "Retain"});
        assert_eq!(storage_class_name(&other), json!("slow"));
        assert_eq!(storage_class_reclaim_policy(&other), json!("Retain"));
        let driver = json!({"spec": {"tokenRequests": [{"audience": "a"}, {"audience": "b"}]}});
        assert_eq!(csi_driver_token_requests(&driver), json!("a,b"));
        assert_eq!(csi_driver_token_requests(&json!({})), json!("<unset>"));
    }
}
