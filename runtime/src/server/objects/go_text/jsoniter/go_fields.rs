//! The Go struct fields of Kubernetes 1.20's API types (`go_fields.txt`, written by
//! `scripts/go_fields_1_20.py` from kubernetes/api, apimachinery, apiextensions-apiserver and
//! kube-aggregator at kubernetes-1.20.2), parsed once on first use: what json-iterator's messages and reading
//! depend on that OpenAPI does not say. A field's Go name, whether it is a pointer, how a
//! slice decoder prints its type, and the structs embedded inline that hold a JSON field.

use std::collections::HashMap;
use std::sync::OnceLock;

const SOURCE: &str = include_str!("go_fields.txt");

/// One struct field as the source declares it.
#[derive(Debug, Clone, Copy)]
pub(super) struct GoField {
    /// The JSON name, `-` for a struct embedded inline.
    json: &'static str,
    /// The Go field name (an embedded struct's: its type's name).
    pub(super) name: &'static str,
    /// The Go type as written (`*int32`, `[]Capability`, `metav1.Time`).
    go_type: &'static str,
}

/// A JSON field of a struct found through the table.
pub(super) struct Found {
    pub(super) field: GoField,
    /// The structs embedded inline it is reached through, outermost first.
    pub(super) embedded: Vec<&'static str>,
    /// The package the field is declared in (`api.core.v1`).
    package: &'static str,
}

impl Found {
    /// Whether the Go field is a pointer.
    pub(super) fn pointer(&self) -> bool {
        self.field.go_type.starts_with('*')
    }

    /// The field's type as `reflect` prints it (`[]v1.Capability`), pointer cut.
    pub(super) fn printed_type(&self) -> String {
        printed(self.field.go_type.trim_start_matches('*'), self.package)
    }
}

/// Structs by `<package>.<Type>` (`api.core.v1.Volume`).
fn table() -> &'static HashMap<String, (&'static str, Vec<GoField>)> {
    static TABLE: OnceLock<HashMap<String, (&'static str, Vec<GoField>)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut structs = HashMap::new();
        let mut package = "";
        let mut current: Option<(String, Vec<GoField>)> = None;
        let mut close = |current: &mut Option<(String, Vec<GoField>)>, package: &'static str| {
            if let Some((name, fields)) = current.take() {
                structs.insert(name, (package, fields));
            }
        };
        for line in SOURCE.lines() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            if let Some(label) = line.strip_prefix('@') {
                close(&mut current, package);
                package = label;
                continue;
            }
            let mut parts = line.split(' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(json), Some(name), Some(go_type)) => {
                    if let Some((_, fields)) = &mut current {
                        fields.push(GoField {
                            json,
                            name,
                            go_type,
                        });
                    }
                }
                (Some(type_name), None, None) => {
                    close(&mut current, package);
                    current = Some((format!("{package}.{type_name}"), Vec::new()));
                }
                _ => {}
            }
        }
        close(&mut current, package);
        structs
    })
}

/// The JSON field `key` of the struct a definition names (`io.k8s.api.core.v1.Volume`),
/// looking into structs embedded inline; `None` when the table does not have the struct or
/// the field.
pub(super) fn field(definition: &str, key: &str) -> Option<Found> {
    let name = definition.strip_prefix("io.k8s.")?;
    find(name, key, 0)
}

/// How many JSON fields the struct a definition names has in Go, its embedded structs' fields
/// counted in (json-iterator picks its struct decoder by that count), if the table has it.
pub(super) fn field_count(definition: &str) -> Option<usize> {
    count(definition.strip_prefix("io.k8s.")?, 0)
}

fn count(name: &str, depth: usize) -> Option<usize> {
    if depth > 8 {
        return None;
    }
    let (package, fields) = table().get(name)?;
    fields.iter().try_fold(0, |total, field| {
        if field.json != "-" {
            return Some(total + 1);
        }
        let inner = qualified(field.go_type.trim_start_matches('*'), package)?;
        Some(total + count(&inner, depth + 1)?)
    })
}

fn find(name: &str, key: &str, depth: usize) -> Option<Found> {
    if depth > 8 {
        return None;
    }
    let (package, fields) = table().get(name)?;
    if let Some(field) = fields.iter().find(|f| f.json == key) {
        return Some(Found {
            field: *field,
            embedded: Vec::new(),
            package,
        });
    }
    fields
        .iter()
        .filter(|f| f.json == "-")
        .find_map(|embedded| {
            let inner = qualified(embedded.go_type.trim_start_matches('*'), package)?;
            let mut found = find(&inner, key, depth + 1)?;
            found.embedded.insert(0, embedded.name);
            Some(found)
        })
}

/// The table's name of a struct type written `go_type` in `package`: `metav1.TypeMeta` is
/// apimachinery's, a bare name the package's own.
fn qualified(go_type: &str, package: &str) -> Option<String> {
    match go_type.split_once('.') {
        Some(("metav1", name)) => Some(format!("apimachinery.pkg.apis.meta.v1.{name}")),
        Some(_) => None,
        None => Some(format!("{package}.{go_type}")),
    }
}

/// A Go type as `reflect` prints it: named types with their package's name (the last element
/// of its path: `v1`, `resource`, `intstr`), `byte` as `uint8`.
fn printed(go_type: &str, package: &str) -> String {
    if let Some(element) = go_type.strip_prefix("[]") {
        return format!("[]{}", printed(element, package));
    }
    if let Some(element) = go_type.strip_prefix('*') {
        return format!("*{}", printed(element, package));
    }
    if let Some((key, element)) = go_type
        .strip_prefix("map[")
        .and_then(|rest| rest.split_once(']'))
    {
        return format!(
            "map[{}]{}",
            printed(key, package),
            printed(element, package)
        );
    }
    match go_type.split_once('.') {
        Some((alias, name)) => format!("{}.{name}", package_name(alias)),
        None if is_builtin(go_type) => match go_type {
            "byte" => "uint8".to_owned(),
            other => other.to_owned(),
        },
        None => {
            let own = package.rsplit('.').next().unwrap_or(package);
            format!("{own}.{go_type}")
        }
    }
}

/// The package name behind an import alias: the API version an alias ends with (`metav1`,
/// `corev1`, `apiv1` are packages named `v1`), else the alias (`resource`, `intstr`).
fn package_name(alias: &str) -> &str {
    let is_version = |text: &str| {
        let Some(rest) = text.strip_prefix('v') else {
            return false;
        };
        let digits = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        if digits.len() == rest.len() {
            return false;
        }
        let stage = digits
            .strip_prefix("alpha")
            .or_else(|| digits.strip_prefix("beta"));
        match stage {
            Some(number) => !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()),
            None => digits.is_empty(),
        }
    };
    alias
        .char_indices()
        .map(|(at, _)| &alias[at..])
        .find(|tail| is_version(tail))
        .unwrap_or(alias)
}

fn is_builtin(go_type: &str) -> bool {
    matches!(
        go_type,
        "string"
            | "bool"
            | "byte"
            | "int"
            | "int8"
            | "int16"
            | "int32"
            | "int64"
            | "uint"
            | "uint8"
            | "uint16"
            | "uint32"
            | "uint64"
            | "float32"
            | "float64"
            | "interface{}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_1_20s() {
        let found = field("io.k8s.api.core.v1.PodSpec", "serviceAccount").unwrap();
        assert_eq!(found.field.name, "DeprecatedServiceAccount");
        assert!(!found.pointer());
        assert!(
            field("io.k8s.api.core.v1.PodSpec", "priority")
                .unwrap()
                .pointer()
        );
        let caps = field("io.k8s.api.core.v1.Capabilities", "add").unwrap();
        assert_eq!(caps.printed_type(), "[]v1.Capability");
        let config_map = field("io.k8s.api.core.v1.Volume", "configMap").unwrap();
        assert_eq!(config_map.embedded, ["VolumeSource"]);
        assert_eq!(config_map.field.name, "ConfigMap");
        let name = field("io.k8s.api.core.v1.ConfigMapVolumeSource", "name").unwrap();
        assert_eq!(name.embedded, ["LocalObjectReference"]);
        let exec = field("io.k8s.api.core.v1.Probe", "exec").unwrap();
        assert_eq!(exec.embedded, ["Handler"]);
        let kind = field("io.k8s.api.apps.v1.Deployment", "kind").unwrap();
        assert_eq!(kind.embedded, ["TypeMeta"]);
        let metadata = field("io.k8s.api.apps.v1.Deployment", "metadata").unwrap();
        assert_eq!(
            (metadata.field.name, metadata.embedded.len()),
            ("ObjectMeta", 0)
        );
        let conditions = field("io.k8s.api.apps.v1.DeploymentStatus", "conditions").unwrap();
        assert_eq!(conditions.printed_type(), "[]v1.DeploymentCondition");
        let schema = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
        assert_eq!(field(schema, "$ref").unwrap().field.name, "Ref");
        let service = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec";
        assert!(field(service, "service").unwrap().pointer());
        assert!(field("io.k8s.api.core.v1.PodSpec", "nothing").is_none());
        // ConfigMap: TypeMeta's two, metadata, immutable, data, binaryData.
        assert_eq!(field_count("io.k8s.api.core.v1.ConfigMap"), Some(6));
        assert_eq!(field_count("io.k8s.api.core.v1.Volume"), Some(30));
        assert_eq!(package_name("metav1"), "v1");
        assert_eq!(package_name("batchv1beta1"), "v1beta1");
        assert_eq!(package_name("resource"), "resource");
        assert_eq!(printed("[]byte", "api.core.v1"), "[]uint8");
        let extra = field(
            "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
            "extra",
        );
        assert_eq!(extra.unwrap().printed_type(), "map[string]v1.ExtraValue");
    }
}
