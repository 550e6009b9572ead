//! Upstream's `DefaultStorageClass` admission plugin
//! (`plugin/pkg/admission/storage/storageclass/setdefault`, `claimDefaulterPlugin.Admit`, and
//! `volumeutil.GetDefaultClass`), on PersistentVolumeClaim creates: a claim with neither
//! `spec.storageClassName` (an empty one counts as set) nor the beta
//! `volume.beta.kubernetes.io/storage-class` annotation gets the name of the StorageClass
//! annotated `storageclass.kubernetes.io/is-default-class: "true"` (or the beta annotation).
//! With several, releases since 1.26 take the newest (then the first name), older ones refuse
//! the claim with upstream's 403 (`<n> default StorageClasses were found`).

use serde_json::Value;

use crate::KubeVersion;
use crate::server::Call;
use crate::server::http::error::ApiError;

use super::{forbidden, storage};

/// The annotations marking the default class (`IsDefaultAnnotation`).
const DEFAULT_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The beta annotation that names a claim's class.
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The first release in which the newest of several default classes wins (kubernetes#110559).
const NEWEST_WINS_SINCE: KubeVersion = KubeVersion::new(1, 26);

/// Names the default class in a claim without one.
pub(super) async fn admit(call: &Call, claim: &mut Value, name: &str) -> Result<(), ApiError> {
    let has_class = claim
        .pointer("/spec/storageClassName")
        .is_some_and(|v| !v.is_null())
        || claim
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(BETA_CLASS_ANNOTATION));
    if has_class {
        return Ok(());
    }
    let classes = storage::list(call, "storage.k8s.io", "storageclasses", None).await?;
    let chosen = match default_class(&classes, call.state.kube_version) {
        Ok(Some(class)) => class,
        Ok(None) => return Ok(()),
        Err(found) => {
            return Err(forbidden(
                call,
                name,
                &format!("Internal error occurred: {found} default StorageClasses were found"),
            ));
        }
    };
    if let Some(Value::Object(spec)) = claim.get_mut("spec") {
        spec.insert("storageClassName".into(), Value::from(chosen));
    }
    Ok(())
}

/// The default class's name, `None` without one; `Err(n)` when a release before
/// [`NEWEST_WINS_SINCE`] finds `n` of them.
fn default_class(classes: &[Value], release: KubeVersion) -> Result<Option<String>, usize> {
    let mut defaults: Vec<(&str, &str)> = classes
        .iter()
        .filter(|c| {
            DEFAULT_ANNOTATIONS.iter().any(|key| {
                c.pointer("/metadata/annotations")
                    .and_then(|a| a.get(*key))
                    .and_then(Value::as_str)
                    == Some("true")
            })
        })
        .map(|c| {
            let field = |f: &str| {
                c.get("metadata")
                    .and_then(|m| m.get(f))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            (field("creationTimestamp"), field("name"))
        })
        .collect();
    if defaults.len() > 1 && release < NEWEST_WINS_SINCE {
        return Err(defaults.len());
    }
    // RFC 3339 timestamps in UTC order as strings; newest first, then by name.
    defaults.sort_by(|a, b| b.0.cmp(a.0).then(a.1.cmp(b.1)));
    Ok(defaults.first().map(|(_, name)| (*name).to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let mut c = json!({"metadata": {"name": name, "creationTimestamp": created}});
        if let Some(v) = default {
            c["metadata"]["annotations"] =
                json!({"storageclass.kubernetes.io/is-default-class": v});
        }
        c
    }

    /// Mirrors upstream's `TestGetDefaultClass` (pkg/volume/util): newest default wins since
    /// 1.26, an error before; "false" or no annotation is no default.
    #[test]
    fn the_default_class_is_chosen_as_upstream() {
        let classes = [
            class("old", "2024-01-01T00:00:00Z", Some("true")),
            class("new", "2025-01-01T00:00:00Z", Some("true")),
            class("off", "2026-01-01T00:00:00Z", Some("false")),
            class("plain", "2026-01-01T00:00:00Z", None),
        ];
        assert_eq!(
            default_class(&classes, KubeVersion::new(1, 36)),
            Ok(Some("new".to_owned()))
        );
        assert_eq!(default_class(&classes, KubeVersion::new(1, 20)), Err(2));
        assert_eq!(
            default_class(&classes[..1], KubeVersion::new(1, 20)),
            Ok(Some("old".to_owned()))
        );
        assert_eq!(
            default_class(&classes[2..], KubeVersion::new(1, 36)),
            Ok(None)
        );
    }
}
