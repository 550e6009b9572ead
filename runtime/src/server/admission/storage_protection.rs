//! Upstream's `StorageObjectInUseProtection` admission plugin
//! (`plugin/pkg/admission/storage/storageobjectinuseprotection`, `admitPV` and `admitPVC`),
//! on creates: a PersistentVolume gets the `kubernetes.io/pv-protection` finalizer and a
//! PersistentVolumeClaim `kubernetes.io/pvc-protection`, unless already there, so neither goes
//! while in use (the protection controllers remove them).

use serde_json::Value;

use crate::server::Call;
use crate::server::objects::json::meta_mut;

/// The finalizer each protected core resource gets.
const FINALIZERS: [(&str, &str); 2] = [
    ("persistentvolumes", "kubernetes.io/pv-protection"),
    ("persistentvolumeclaims", "kubernetes.io/pvc-protection"),
];

/// Adds the resource's finalizer to a created object.
pub(super) fn admit(call: &Call, object: &mut Value) {
    let Some((_, finalizer)) = FINALIZERS
        .iter()
        .find(|(plural, _)| super::writes_core(call, plural))
    else {
        return;
    };
    add_finalizer(object, finalizer);
}

/// Appends `finalizer` to `metadata.finalizers` unless it is there.
fn add_finalizer(object: &mut Value, finalizer: &str) {
    let list = meta_mut(object)
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    if let Value::Array(items) = list
        && !items.iter().any(|f| f.as_str() == Some(finalizer))
    {
        items.push(Value::from(finalizer));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Mirrors upstream's `TestAdmit` (admission_test.go): added once, kept after others.
    #[test]
    fn the_finalizer_is_added_once() {
        let mut pvc = json!({"metadata": {"finalizers": ["a"]}});
        super::add_finalizer(&mut pvc, "kubernetes.io/pvc-protection");
        super::add_finalizer(&mut pvc, "kubernetes.io/pvc-protection");
        assert_eq!(
            pvc["metadata"]["finalizers"],
            json!(["a", "kubernetes.io/pvc-protection"])
        );
    }
}
