//! Which field labels a kind's `fieldSelector` accepts and what each reads from an object, as
//! upstream registers them per kind and version: a field label conversion function
//! (`AddFieldLabelConversionFunc` in `pkg/apis/<group>/<version>/conversion.go`) decides which
//! labels a request may name and the refusal's message; the registry's `GetAttrs` /
//! `*ToSelectableFields` (`pkg/registry/**/strategy.go`) decides each label's value on the typed
//! object, where a field the client left out has its type's zero value and booleans and
//! integers print as Go's `strconv` does.
//!
//! The built-ins' labels are data (`specs/field_selectors/kubernetes.yaml`, emitted into each
//! kind's [`ResourceInfo`](crate::ResourceInfo)); [`FieldLabels::resolve`] is the engine.

use std::borrow::Cow;

use serde_json::Value;

use crate::KubeVersion;
use crate::printer::Releases;

/// The field labels of a kind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum FieldLabels {
    /// A custom resource's (apiextensions' field label conversion): `metadata.name`,
    /// `metadata.namespace` for a namespaced kind, and the kind's `selectable_fields`; other
    /// labels are refused with `field label not supported: <label>`.
    #[default]
    Custom,
    /// A built-in without a conversion function of its own (apimachinery's
    /// `DefaultMetaV1FieldSelectorConversion`): `metadata.name` and `metadata.namespace`.
    Meta,
    /// A built-in's own conversion function: exactly these labels, others refused with
    /// `message` (Go's `%s` and `%q` stand for the label).
    Listed {
        /// The accepted labels.
        labels: Cow<'static, [FieldLabel]>,
        /// The refusal, as upstream's `fmt.Errorf` format.
        message: Cow<'static, str>,
    },
}

/// One accepted label and how its value is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldLabel {
    /// The label a request names, e.g. `spec.nodeName` or its alias `spec.host`.
    pub label: Cow<'static, str>,
    /// The JSON paths (`.a.b`, `.a.0.b` for a list item) read in order; the first that gives a
    /// non-empty value wins. None: upstream's field set has no such key, so the value is empty.
    pub paths: Cow<'static, [Cow<'static, str>]>,
    /// The Go type of the field, for its zero value and printing.
    pub type_: FieldType,
    /// The releases that accept the label.
    pub releases: Releases,
}

/// The Go type of a selectable field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// A string; zero value `""`.
    String,
    /// A bool, printed `true`/`false` (`strconv.FormatBool`, `fmt.Sprint`); zero value `false`.
    Boolean,
    /// An integer, printed in decimal (`strconv.Itoa`); zero value `0`.
    Integer,
}

/// How a selected label's value is read from an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selectable {
    /// The paths read in order (see [`FieldLabel::paths`]).
    pub paths: Vec<String>,
    /// The field's type.
    pub type_: FieldType,
}

impl Selectable {
    fn string(path: &str) -> Self {
        Self {
            paths: vec![path.to_owned()],
            type_: FieldType::String,
        }
    }

    /// The label's value on `object`, as upstream's field set holds it.
    pub fn value(&self, object: &Value) -> String {
        for path in &self.paths {
            let found = match lookup(object, path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                Some(Value::Null) | None => String::new(),
                // A list or map is not a selectable value; upstream never selects on one.
                Some(_) => String::new(),
            };
            if !found.is_empty() {
                return found;
            }
        }
        match self.type_ {
            FieldType::String => String::new(),
            FieldType::Boolean => "false".to_owned(),
            FieldType::Integer => "0".to_owned(),
        }
    }
}

/// The value at a dotted path; a numeric segment indexes a list.
fn lookup<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    let mut at = object;
    for part in path.trim_start_matches('.').split('.') {
        at = match at {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Go's `%q` of a string, as upstream's messages quote a label or a name: quotes and
/// backslashes escaped, control characters as `\xNN` or their short escapes.
pub(crate) fn go_quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Upstream's message with `%s` and `%q` replaced by the label.
fn refusal(message: &str, label: &str) -> String {
    message.replace("%q", &go_quote(label)).replace("%s", label)
}

impl FieldLabels {
    /// A custom resource's message for a label it does not select on.
    pub const CUSTOM_MESSAGE: &'static str = "field label not supported: %s";

    /// `DefaultMetaV1FieldSelectorConversion`'s message.
    pub const META_MESSAGE: &'static str =
        "%q is not a known field selector: only \"metadata.name\", \"metadata.namespace\"";

    /// How `label` is read for a kind in release `at`, or the 400 message refusing it.
    /// `namespaced` and `selectable_fields` (paths such as `.spec.color`) matter for
    /// [`FieldLabels::Custom`] only.
    pub fn resolve(
        &self,
        label: &str,
        at: KubeVersion,
        namespaced: bool,
        selectable_fields: &[Cow<'static, str>],
    ) -> Result<Selectable, String> {
        match self {
            Self::Custom => {
                let meta =
                    label == "metadata.name" || (namespaced && label == "metadata.namespace");
                if meta
                    || selectable_fields
                        .iter()
                        .any(|f| f.trim_start_matches('.') == label)
                {
                    Ok(Selectable::string(label))
                } else {
                    Err(refusal(Self::CUSTOM_MESSAGE, label))
                }
            }
            Self::Meta => match label {
                "metadata.name" | "metadata.namespace" => Ok(Selectable::string(label)),
                _ => Err(refusal(Self::META_MESSAGE, label)),
            },
            Self::Listed { labels, message } => labels
                .iter()
                .find(|l| l.label == label && l.releases.contains(at))
                .map(|l| Selectable {
                    paths: l.paths.iter().map(|p| p.to_string()).collect(),
                    type_: l.type_,
                })
                .ok_or_else(|| refusal(message, label)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn label(
        label: &'static str,
        paths: &'static [Cow<'static, str>],
        type_: FieldType,
    ) -> FieldLabel {
        FieldLabel {
            label: Cow::Borrowed(label),
            paths: Cow::Borrowed(paths),
            type_,
            releases: Releases::ALL,
        }
    }

    #[test]
    fn missing_fields_have_their_zero_value() {
        // NodeToSelectableFields: fmt.Sprint(node.Spec.Unschedulable); JobToSelectableFields:
        // strconv.Itoa(int(job.Status.Succeeded)).
        let labels = FieldLabels::Listed {
            labels: Cow::Owned(vec![
                label(
                    "spec.unschedulable",
                    &[Cow::Borrowed(".spec.unschedulable")],
                    FieldType::Boolean,
                ),
                label(
                    "status.successful",
                    &[Cow::Borrowed(".status.succeeded")],
                    FieldType::Integer,
                ),
                label("status.podIPs", &[], FieldType::String),
                label(
                    "source",
                    &[
                        Cow::Borrowed(".source.component"),
                        Cow::Borrowed(".reportingComponent"),
                    ],
                    FieldType::String,
                ),
                label(
                    "status.podIP",
                    &[Cow::Borrowed(".status.podIPs.0.ip")],
                    FieldType::String,
                ),
            ]),
            message: Cow::Borrowed("field label %q not supported for batchv1.Job"),
        };
        let at = KubeVersion::new(1, 36);
        let value =
            |l: &str, object: &Value| labels.resolve(l, at, true, &[]).unwrap().value(object);
        assert_eq!(value("spec.unschedulable", &json!({"spec": {}})), "false");
        assert_eq!(
            value(
                "spec.unschedulable",
                &json!({"spec": {"unschedulable": true}})
            ),
            "true"
        );
        assert_eq!(value("status.successful", &json!({})), "0");
        assert_eq!(
            value("status.successful", &json!({"status": {"succeeded": 3}})),
            "3"
        );
        assert_eq!(
            value(
                "status.podIPs",
                &json!({"status": {"podIPs": [{"ip": "x"}]}})
            ),
            ""
        );
        assert_eq!(
            value(
                "status.podIP",
                &json!({"status": {"podIPs": [{"ip": "10.0.0.1"}]}})
            ),
            "10.0.0.1"
        );
        // Event's source: source.component, else reportingController.
        assert_eq!(
            value("source", &json!({"reportingComponent": "kubelet"})),
            "kubelet"
        );
        assert_eq!(
            value(
                "source",
                &json!({"source": {"component": "sched"}, "reportingComponent": "kubelet"})
            ),
            "sched"
        );
        assert_eq!(
            labels.resolve("spec.x\"", at, true, &[]).unwrap_err(),
            "field label \"spec.x\\\"\" not supported for batchv1.Job"
        );
    }

    #[test]
    fn defaults_and_custom_resources_refuse_as_upstream() {
        let at = KubeVersion::new(1, 20);
        assert_eq!(
            FieldLabels::Meta
                .resolve("status.replicas", at, true, &[])
                .unwrap_err(),
            "\"status.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert!(
            FieldLabels::Meta
                .resolve("metadata.namespace", at, false, &[])
                .is_ok()
        );
        let fields = [Cow::Borrowed(".spec.color")];
        assert!(
            FieldLabels::Custom
                .resolve("spec.color", at, true, &fields)
                .is_ok()
        );
        // A cluster-scoped custom resource has no metadata.namespace label.
        assert_eq!(
            FieldLabels::Custom
                .resolve("metadata.namespace", at, false, &fields)
                .unwrap_err(),
            "field label not supported: metadata.namespace"
        );
    }
}
