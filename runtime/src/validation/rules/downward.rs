//! Where a container's environment and a pod's downward API files come from
//! (`pkg/apis/core/validation/validation.go`): `validateEnvVarValueFrom` and its selectors
//! (`validateObjectFieldSelector`, `validateContainerResourceFieldSelector`,
//! `validateContainerResourceDivisor`, the key selectors), `ValidateEnvFrom`, and
//! `validateDownwardAPIVolumeFile` for downward API volumes and projections. The field paths a
//! selector may name are the release's (`validEnvDownwardAPIFieldPathExpressions`,
//! `validVolumeDownwardAPIFieldPathExpressions`, `ConvertDownwardAPIFieldLabel`).

use std::str::FromStr;

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::{present, text};
use crate::KubeVersion;
use crate::quantity::Quantity;

/// From 1.30 (PodHostIPs GA; alpha and off in 1.28) an environment variable may read
/// `status.hostIPs`.
const HOST_IPS_ENV_SINCE: KubeVersion = KubeVersion::new(1, 30);
/// From 1.28 `status.hostIPs` is a field label a selector may name at all.
const HOST_IPS_LABEL_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// From 1.22 (DownwardAPIHugePages on by default) hugepages may be read.
const HUGEPAGES_SINCE: KubeVersion = KubeVersion::new(1, 22);
/// `ValidateEnvFrom`'s message for an item with neither source.
const ENV_FROM_SOURCES: &str = "must specify one of: `configMapRef` or `secretRef`";

/// The pod fields a variable's `fieldRef` may read, sorted as upstream lists them.
fn env_field_paths(release: KubeVersion) -> &'static [&'static str] {
    if release >= HOST_IPS_ENV_SINCE {
        &[
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
            "spec.nodeName",
            "spec.serviceAccountName",
            "status.hostIP",
            "status.hostIPs",
            "status.podIP",
            "status.podIPs",
        ]
    } else {
        &[
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
            "spec.nodeName",
            "spec.serviceAccountName",
            "status.hostIP",
            "status.podIP",
            "status.podIPs",
        ]
    }
}

/// The pod fields a downward API file may hold.
const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// The container resources a `resourceFieldRef` may read.
const RESOURCE_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// The pod field labels `ConvertDownwardAPIFieldLabel` knows (`spec.host` is `spec.nodeName`).
fn field_labels(release: KubeVersion) -> impl Iterator<Item = &'static str> {
    [
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.podIP",
        "status.podIPs",
    ]
    .into_iter()
    .chain((release >= HOST_IPS_LABEL_SINCE).then_some("status.hostIPs"))
}

/// On an EnvVar: `validateEnvVarValueFrom`.
pub(super) fn env_var(var: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(from) = var.get("valueFrom").filter(|v| !v.is_null()) else {
        return;
    };
    let at = at.child("valueFrom");
    let release = errors.release();
    let mut sources = 0;
    if let Some(selector) = present(from, "fieldRef") {
        sources += 1;
        let paths = env_field_paths(release);
        object_field(selector, paths, &at.child("fieldRef"), errors);
    }
    if let Some(selector) = present(from, "resourceFieldRef") {
        sources += 1;
        resource_field(selector, false, &at.child("resourceFieldRef"), errors);
    }
    if let Some(selector) = present(from, "configMapKeyRef") {
        sources += 1;
        key_selector(selector, &at.child("configMapKeyRef"), errors);
    }
    if let Some(selector) = present(from, "secretKeyRef") {
        sources += 1;
        key_selector(selector, &at.child("secretKeyRef"), errors);
    }
    let empty = Value::from("");
    if sources == 0 {
        let detail = "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`";
        errors.invalid(&at, Shown::Plain(&empty), detail);
    } else if !text(var, "value").is_empty() {
        let detail = "may not be specified when `value` is not empty";
        errors.invalid(&at, Shown::Plain(&empty), detail);
    } else if sources > 1 {
        let detail = "may not have more than one field specified at a time";
        errors.invalid(&at, Shown::Plain(&empty), detail);
    }
}

/// `validateObjectFieldSelector`: an API version, a field path the conversion knows, and one
/// of `paths`, or a label or annotation by key.
fn object_field(selector: &Value, paths: &[&str], at: &FieldPath, errors: &mut Errors) {
    let version = text(selector, "apiVersion");
    if version.is_empty() {
        errors.required(&at.child("apiVersion"), "");
        return;
    }
    let path = text(selector, "fieldPath");
    let path_at = at.child("fieldPath");
    if path.is_empty() {
        errors.required(&path_at, "");
        return;
    }
    let converted = match convert_field_label(version, path, errors.release()) {
        Ok(converted) => converted,
        Err(reason) => {
            let detail = format!("error converting fieldPath: {reason}");
            errors.invalid(&path_at, Shown::Plain(&Value::from(path)), &detail);
            return;
        }
    };
    match converted {
        Converted::Keyed(field, key) => {
            // Annotation keys are checked lower-cased; the label's as written.
            let checked = if field == "metadata.annotations" {
                key.to_lowercase()
            } else {
                key.to_owned()
            };
            for message in Format::QualifiedName.messages(&checked, errors.release()) {
                errors.invalid(at, Shown::Plain(&Value::from(key)), &message);
            }
        }
        Converted::Field(field) if !paths.contains(&field) => {
            errors.not_supported(&path_at, &Value::from(field), paths);
        }
        Converted::Field(_) => {}
    }
}

/// A field label as `ConvertDownwardAPIFieldLabel` converts it.
enum Converted<'a> {
    /// A field: `spec.nodeName`.
    Field(&'a str),
    /// A label's or annotation's value by key: `metadata.labels['app']`.
    Keyed(&'a str, &'a str),
}

/// `ConvertDownwardAPIFieldLabel`: the internal field path, or why there is none.
fn convert_field_label<'a>(
    version: &str,
    label: &'a str,
    release: KubeVersion,
) -> Result<Converted<'a>, String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((field, key)) = split_subscript(label) {
        return match field {
            "metadata.annotations" | "metadata.labels" => Ok(Converted::Keyed(field, key)),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    if label == "spec.host" {
        return Ok(Converted::Field("spec.nodeName"));
    }
    field_labels(release)
        .find(|known| *known == label)
        .map(Converted::Field)
        .ok_or_else(|| format!("field label not supported: {label}"))
}

/// `SplitMaybeSubscriptedPath`: `metadata.labels['app']` as (`metadata.labels`, `app`).
fn split_subscript(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_suffix("']")?;
    let (field, key) = inner.split_once("['")?;
    (!field.is_empty()).then_some((field, key))
}

/// `validateContainerResourceFieldSelector` and `validateContainerResourceDivisor`: a
/// resource (and, in a volume, a container) and a divisor that suits the resource.
fn resource_field(selector: &Value, volume: bool, at: &FieldPath, errors: &mut Errors) {
    let resource = text(selector, "resource");
    let hugepages = errors.release() >= HUGEPAGES_SINCE
        && (resource.starts_with("requests.hugepages-")
            || resource.starts_with("limits.hugepages-"));
    if volume && text(selector, "containerName").is_empty() {
        errors.required(&at.child("containerName"), "");
    } else if resource.is_empty() {
        errors.required(&at.child("resource"), "");
    } else if !RESOURCE_PATHS.contains(&resource) && !hugepages {
        errors.not_supported(
            &at.child("resource"),
            &Value::from(resource),
            RESOURCE_PATHS,
        );
    }
    let divisor = match selector.get("divisor") {
        Some(Value::String(text)) => Quantity::from_str(text).ok(),
        Some(Value::Number(n)) => Quantity::from_str(&n.to_string()).ok(),
        _ => None,
    };
    let Some(divisor) = divisor.filter(|d| !d.is_zero()) else {
        return;
    };
    let shown = divisor.to_string();
    let (allowed, noun): (&[&str], &str) = match resource {
        "limits.cpu" | "requests.cpu" => (&["1m", "1"], "cpu"),
        "limits.memory" | "requests.memory" => (BYTE_DIVISORS, "memory"),
        "limits.ephemeral-storage" | "requests.ephemeral-storage" => {
            (BYTE_DIVISORS, "local ephemeral storage")
        }
        _ if resource.starts_with("requests.hugepages-")
            || resource.starts_with("limits.hugepages-") =>
        {
            (BYTE_DIVISORS, "hugepages")
        }
        _ => return,
    };
    if !allowed.contains(&shown.as_str()) {
        // Upstream's text for the cpu's two values reads "1m and 1".
        let values = match allowed {
            [first, second] => format!("{first} and {second}"),
            _ => allowed.join(", "),
        };
        let detail =
            format!("only divisor's values {values} are supported with the {noun} resource");
        // Upstream shows the resource's name as the bad value.
        errors.invalid(
            &at.child("divisor"),
            Shown::Plain(&Value::from(resource)),
            &detail,
        );
    }
}

/// The divisors of byte quantities.
const BYTE_DIVISORS: &[&str] = &[
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];

/// `validateConfigMapKeySelector`, `validateSecretKeySelector`: a DNS-subdomain name (the
/// empty one too fails it) and a ConfigMap key.
fn key_selector(selector: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let name = text(selector, "name");
    for message in Format::DnsSubdomain.messages(name, release) {
        errors.invalid(
            &at.child("name"),
            Shown::Plain(&Value::from(name)),
            &message,
        );
    }
    let key = text(selector, "key");
    if key.is_empty() {
        errors.required(&at.child("key"), "");
    } else {
        for message in Format::ConfigMapKey.messages(key, release) {
            errors.invalid(&at.child("key"), Shown::Plain(&Value::from(key)), &message);
        }
    }
}

/// On an EnvFromSource (`ValidateEnvFrom`): a prefix that is a variable name (relaxed from
/// 1.32, as the `env-var-name` format is), and one ConfigMap or Secret by name. Upstream reports a missing or second source at the list
/// (`envFrom`), not the item.
pub(super) fn env_from(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let prefix = text(source, "prefix");
    if !prefix.is_empty() {
        for message in Format::EnvVarName.messages(prefix, release) {
            let path = at.child("prefix");
            errors.invalid(&path, Shown::Plain(&Value::from(prefix)), &message);
        }
    }
    let mut sources = 0;
    for field in ["configMapRef", "secretRef"] {
        let Some(reference) = present(source, field) else {
            continue;
        };
        sources += 1;
        let name = text(reference, "name");
        let path = at.child(field).child("name");
        if name.is_empty() {
            errors.required(&path, "");
        } else {
            for message in Format::DnsSubdomain.messages(name, release) {
                errors.invalid(&path, Shown::Plain(&Value::from(name)), &message);
            }
        }
    }
    let list = list_of(at);
    let empty = Value::from("");
    if sources == 0 {
        errors.invalid(&list, Shown::Plain(&empty), ENV_FROM_SOURCES);
    } else if sources > 1 {
        let detail = "may not have more than one field specified at a time";
        errors.invalid(&list, Shown::Plain(&empty), detail);
    }
}

/// The list an item's path is in: `a.envFrom[2]` → `a.envFrom`.
fn list_of(item: &FieldPath) -> FieldPath {
    let text = item.as_str();
    match text.rfind('[') {
        Some(open) if text.ends_with(']') => FieldPath::of(&text[..open]),
        _ => item.clone(),
    }
}

/// The files of a downward API volume or projection, each reported at `at` (upstream passes
/// the source's path to every file, without the item's index).
pub(super) fn downward_files(source: &Value, at: &FieldPath, errors: &mut Errors) {
    for file in super::items(source, "items") {
        downward_file(file, at, errors);
    }
}

/// `validateDownwardAPIVolumeFile`.
fn downward_file(file: &Value, at: &FieldPath, errors: &mut Errors) {
    let path = text(file, "path");
    let path_at = at.child("path");
    if path.is_empty() {
        errors.required(&path_at, "");
    }
    super::pods::local_non_reserved_path(path, &path_at, errors);
    match (present(file, "fieldRef"), present(file, "resourceFieldRef")) {
        (Some(selector), both) => {
            object_field(selector, VOLUME_FIELD_PATHS, &at.child("fieldRef"), errors);
            if both.is_some() {
                let detail = "fieldRef and resourceFieldRef can not be specified simultaneously";
                errors.invalid(at, Shown::Plain(&Value::from("resource")), detail);
            }
        }
        (None, Some(selector)) => {
            resource_field(selector, true, &at.child("resourceFieldRef"), errors);
        }
        (None, None) => errors.required(at, "one of fieldRef and resourceFieldRef is required"),
    }
    super::pods::file_mode(file, "mode", at, errors);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::lines;
    use super::*;

    fn env(minor: u16, var: &Value) -> Vec<String> {
        lines(minor, |errors| {
            env_var(var, &FieldPath::of("env[0]"), errors)
        })
    }

    #[test]
    fn a_variable_reads_one_source_of_the_releases_fields() {
        // validateEnvVarValueFrom, validEnvDownwardAPIFieldPathExpressions.
        let field = |path: &str| json!({"name": "X", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}});
        assert_eq!(env(34, &field("status.hostIPs")), Vec::<String>::new());
        assert_eq!(
            env(34, &field("metadata.labels['app.kubernetes.io/name']")),
            Vec::<String>::new()
        );
        assert_eq!(
            env(28, &field("status.hostIPs")),
            [
                "env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.hostIPs\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.podIP\", \"status.podIPs\""
            ]
        );
        assert_eq!(
            env(34, &field("status.phase"))[0],
            "env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\""
        );
        assert_eq!(
            env(34, &field("spec.nodename")),
            [
                "env[0].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nodename\": error converting fieldPath: field label not supported: spec.nodename"
            ]
        );
        assert_eq!(
            env(34, &field("spec.nodeName['x']")),
            [
                "env[0].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nodeName['x']\": error converting fieldPath: field label does not support subscript: spec.nodeName['x']"
            ]
        );
        let bad_key = env(34, &field("metadata.labels['a b']"));
        assert_eq!(bad_key.len(), 1);
        assert!(
            bad_key[0].starts_with(
                "env[0].valueFrom.fieldRef: Invalid value: \"a b\": name part must consist of"
            ),
            "{bad_key:?}"
        );
        let two = json!({"name": "X", "value": "v", "valueFrom": {
            "configMapKeyRef": {"name": "settings", "key": "k"},
            "secretKeyRef": {"key": "k"}}});
        let found = env(34, &two);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("env[0].valueFrom.secretKeyRef.name: Invalid value: \"\": a lowercase RFC 1123 subdomain"), "{found:?}");
        assert_eq!(
            found[1],
            "env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"
        );
        assert_eq!(
            env(20, &json!({"name": "X", "valueFrom": {}})),
            [
                "env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
            ]
        );
    }

    #[test]
    fn resources_are_read_with_a_divisor_that_suits_them() {
        // validateContainerResourceFieldSelector, validateContainerResourceDivisor.
        let resource = |name: &str, divisor: &str| json!({"name": "X", "valueFrom": {"resourceFieldRef": {"resource": name, "divisor": divisor}}});
        assert_eq!(env(34, &resource("limits.cpu", "1m")), Vec::<String>::new());
        assert_eq!(
            env(34, &resource("limits.cpu", "1000m")),
            Vec::<String>::new()
        );
        assert_eq!(
            env(34, &resource("requests.memory", "0")),
            Vec::<String>::new()
        );
        assert_eq!(
            env(34, &resource("limits.hugepages-2Mi", "1Mi")),
            Vec::<String>::new()
        );
        assert_eq!(
            env(34, &resource("limits.cpu", "2")),
            [
                "env[0].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource"
            ]
        );
        assert_eq!(
            env(20, &resource("limits.hugepages-2Mi", "1Mi"))[0],
            "env[0].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.hugepages-2Mi\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\""
        );
    }

    #[test]
    fn env_from_names_one_source_reported_at_the_list() {
        let check = |source: &Value| {
            lines(34, |errors| {
                env_from(source, &FieldPath::of("c.envFrom[1]"), errors)
            })
        };
        assert_eq!(
            check(&json!({"prefix": "A_"})),
            ["c.envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"]
        );
        assert_eq!(
            check(&json!({"configMapRef": {"name": "a"}, "secretRef": {}})),
            [
                "c.envFrom[1].secretRef.name: Required value",
                "c.envFrom: Invalid value: \"\": may not have more than one field specified at a time",
            ]
        );
    }

    #[test]
    fn downward_files_hold_one_pod_field_or_resource() {
        // validateDownwardAPIVolumeFile: every file's errors at the source's path.
        let source = json!({"items": [
            {"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}},
            {"path": "../up", "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
            {"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu"}},
            {"path": "none"},
        ]});
        let found = lines(34, |errors| {
            downward_files(&source, &FieldPath::of("v.downwardAPI"), errors)
        });
        assert_eq!(
            found,
            [
                "v.downwardAPI.path: Invalid value: \"../up\": must not contain '..'",
                "v.downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
                "v.downwardAPI.resourceFieldRef.containerName: Required value",
                "v.downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
            ]
        );
    }
}
