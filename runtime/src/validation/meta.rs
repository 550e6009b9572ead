//! Object metadata, which every kind shares, custom resources included
//! (`k8s.io/apimachinery/pkg/api/validation/objectmeta.go`: `ValidateObjectMetaAccessor` and
//! `ValidateObjectMetaAccessorUpdate`). Names are the create handler's, which knows each kind's
//! name format and generates names; the server sets uid, timestamps and generation itself.

use serde_json::Value;

use super::field::{Errors, FieldPath, Shown};
use super::format::Format;
use crate::KubeVersion;

/// The most bytes of annotation keys and values an object may carry
/// (`TotalAnnotationSizeLimitB`).
const ANNOTATIONS_MAX: usize = 256 * 1024;
/// The release whose owner-reference messages no longer repeat the field's name.
const SHORT_OWNER_MESSAGES_SINCE: KubeVersion = KubeVersion::new(1, 34);

fn strings<'v>(meta: &'v Value, field: &str) -> impl Iterator<Item = (&'v String, &'v str)> {
    meta.get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or("")))
}

/// `ValidateLabels` of the map `holder.<field>`: errors at the map itself, the bad key or value
/// as the value (object labels, a selector's `matchLabels`).
pub(super) fn labels(holder: &Value, field: &str, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let path = at.child(field);
    for (key, value) in strings(holder, field) {
        for message in Format::QualifiedName.messages(key, release) {
            errors.invalid(&path, Shown::Plain(&Value::from(key.as_str())), &message);
        }
        for message in Format::LabelValue.messages(value, release) {
            errors.invalid(&path, Shown::Plain(&Value::from(value)), &message);
        }
    }
}

/// Checks an object's `metadata` as upstream does on create and update.
pub fn check_metadata(object: &Value, errors: &mut Errors) {
    let Some(meta) = object.get("metadata") else {
        return;
    };
    let at = FieldPath::root().child("metadata");
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        errors.invalid(
            &at.child("generation"),
            Shown::Plain(&Value::from(generation)),
            super::NEGATIVE,
        );
    }
    labels(meta, "labels", &at, errors);
    annotations(meta, &at, errors);
    owner_references(meta, &at.child("ownerReferences"), errors);
    finalizers(meta, &at.child("finalizers"), errors);
}

/// `ValidateAnnotations` of `meta.annotations`: keys checked lowercased (only the prefix
/// cares), sizes summed; errors at `<at>.annotations`.
fn annotations(meta: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let annotations = at.child("annotations");
    let mut size = 0;
    for (key, value) in strings(meta, "annotations") {
        for message in Format::QualifiedName.messages(&key.to_lowercase(), release) {
            errors.invalid(
                &annotations,
                Shown::Plain(&Value::from(key.as_str())),
                &message,
            );
        }
        size += key.len() + value.len();
    }
    if size > ANNOTATIONS_MAX {
        errors.too_long(&annotations, ANNOTATIONS_MAX);
    }
}

/// `ObjectMeta`'s fields in Go's declaration order, each with the JSON name and the name
/// `validateFieldAllowList` reports (the Go name with its first letter lowered: `uID`), but for
/// the labels and annotations a template may set (`allowedTemplateObjectMetaFields`).
const TEMPLATE_FORBIDDEN_META: &[(&str, &str)] = &[
    ("name", "name"),
    ("generateName", "generateName"),
    ("namespace", "namespace"),
    ("selfLink", "selfLink"),
    ("uid", "uID"),
    ("resourceVersion", "resourceVersion"),
    ("generation", "generation"),
    ("creationTimestamp", "creationTimestamp"),
    ("deletionTimestamp", "deletionTimestamp"),
    ("deletionGracePeriodSeconds", "deletionGracePeriodSeconds"),
    ("ownerReferences", "ownerReferences"),
    ("finalizers", "finalizers"),
    ("managedFields", "managedFields"),
];

/// `ValidateTemplateObjectMeta` (an ephemeral volume's claim template's `metadata`, at `at`):
/// annotations, labels, and no other field set to other than Go's zero value (an empty string
/// or 0; a list, even empty, or a time or pointer is set), `Forbidden: cannot be set`.
pub(super) fn template_metadata(meta: &Value, at: &FieldPath, errors: &mut Errors) {
    annotations(meta, at, errors);
    labels(meta, "labels", at, errors);
    for (json, reported) in TEMPLATE_FORBIDDEN_META {
        let set = match meta.get(*json) {
            None | Some(Value::Null) => false,
            Some(Value::String(text)) => !text.is_empty() || *json == "creationTimestamp",
            Some(Value::Number(number)) => {
                number.as_f64() != Some(0.0) || *json == "deletionGracePeriodSeconds"
            }
            Some(_) => true,
        };
        if set {
            errors.forbidden(&at.child(reported), "cannot be set");
        }
    }
}

/// `ValidateOwnerReferences`: errors at `metadata.ownerReferences`, not indexed.
fn owner_references(meta: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(references) = meta.get("ownerReferences").and_then(Value::as_array) else {
        return;
    };
    let short = errors.release() >= SHORT_OWNER_MESSAGES_SINCE;
    let mut controller: Option<String> = None;
    for reference in references {
        let text = |field: &str| reference.get(field).and_then(Value::as_str).unwrap_or("");
        let api_version = text("apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or("");
        if version.is_empty() {
            errors.invalid(
                &at.child("apiVersion"),
                Shown::Plain(&Value::from(api_version)),
                "version must not be empty",
            );
        }
        for field in ["kind", "name", "uid"] {
            if text(field).is_empty() {
                let message = if short {
                    "must not be empty".to_owned()
                } else {
                    format!("{field} must not be empty")
                };
                errors.invalid(&at.child(field), Shown::Plain(&Value::from("")), &message);
            }
        }
        if reference.get("controller") == Some(&Value::Bool(true)) {
            // Named `Kind/name` since 1.28, by name before.
            let named = if errors.release() >= KubeVersion::new(1, 28) {
                format!("{}/{}", text("kind"), text("name"))
            } else {
                text("name").to_owned()
            };
            match &controller {
                Some(first) => {
                    let message = format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {named}"
                    );
                    errors.invalid(
                        at,
                        Shown::Plain(&Value::Array(references.clone())),
                        &message,
                    );
                }
                None => controller = Some(named),
            }
        }
    }
}

/// `ValidateFinalizers`: qualified names, and not both `orphan` and `foregroundDeletion`.
fn finalizers(meta: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(finalizers) = meta.get("finalizers").and_then(Value::as_array) else {
        return;
    };
    let names: Vec<&str> = finalizers.iter().filter_map(Value::as_str).collect();
    for name in &names {
        for message in Format::QualifiedName.messages(name, errors.release()) {
            errors.invalid(at, Shown::Plain(&Value::from(*name)), &message);
        }
    }
    if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
        errors.invalid(
            at,
            Shown::StringList(&Value::Array(finalizers.clone())),
            "finalizer orphan and foregroundDeletion cannot be both set",
        );
    }
}

/// What an update may not do to metadata beyond what [`check_metadata`] checks: add
/// finalizers to an object being deleted (`ValidateNoNewFinalizers`).
pub fn check_metadata_update(new: &Value, old: &Value, errors: &mut Errors) {
    let deleting = old
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    if !deleting {
        return;
    }
    let names = |object: &Value| -> Vec<String> {
        object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect()
    };
    let before = names(old);
    let mut added: Vec<String> = names(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return;
    }
    // `extra.List()` is sorted, and printed with `%#v` in every release.
    added.sort();
    added.dedup();
    let quoted: Vec<String> = added
        .iter()
        .map(|f| Value::from(f.as_str()).to_string())
        .collect();
    errors.forbidden(
        &FieldPath::root().child("metadata").child("finalizers"),
        &format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            quoted.join(", ")
        ),
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(object: &Value, minor: u16) -> Vec<String> {
        let mut errors = Errors::new(KubeVersion::new(1, minor));
        check_metadata(object, &mut errors);
        errors
            .into_causes()
            .into_iter()
            .map(|c| format!("{}: {}", c.field.unwrap(), c.message.unwrap()))
            .collect()
    }

    #[test]
    fn labels_and_annotations_are_checked_at_the_map_itself() {
        let object =
            json!({"metadata": {"labels": {"app": "bad value!"}, "annotations": {"a/b/c": "x"}}});
        assert_eq!(
            messages(&object, 34),
            [
                "metadata.labels: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "metadata.annotations: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ]
        );
        let big = json!({"metadata": {"annotations": {"k": "v".repeat(ANNOTATIONS_MAX)}}});
        assert_eq!(
            messages(&big, 20),
            ["metadata.annotations: Too long: must have at most 262144 bytes"]
        );
    }

    #[test]
    fn finalizers_and_owner_references() {
        let object = json!({"metadata": {
            "finalizers": ["orphan", "foregroundDeletion"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": ""}]
        }});
        assert_eq!(
            messages(&object, 28),
            [
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
                "metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\"}: finalizer orphan and foregroundDeletion cannot be both set",
            ]
        );
        let deleting = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["a/x"]}});
        let added = json!({"metadata": {"finalizers": ["a/x", "b/y"]}});
        let mut errors = Errors::new(KubeVersion::new(1, 34));
        check_metadata_update(&added, &deleting, &mut errors);
        assert_eq!(
            errors.into_causes()[0].message.as_deref(),
            Some(
                "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"b/y\"}"
            )
        );
    }
}
