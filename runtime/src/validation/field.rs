//! Field errors as upstream writes them (`k8s.io/apimachinery/pkg/util/validation/field`): a
//! path (`spec.template.spec.containers[0].name`, `data[key]`), a type (`Required value`,
//! `Invalid value`, ...) and a detail, rendered into the `StatusCause`s of a 422.
//!
//! How a bad value prints changed in 1.34 ("Nicer value rendering in API errors"): before, Go's
//! `%#v` (`map[string]string{"app":"web"}`, `v1.LabelSelector{...}`, a nil value as the quoted
//! string `"null"`); from 1.34, JSON (`{"app":"web"}`, `null`). [`Shown`] says which Go shape a
//! value has so both renderings can be produced. The `Too long` detail changed in 1.32.

use serde_json::Value;

use crate::KubeVersion;
use crate::meta::{CauseType, StatusCause};

/// The release whose errors render values as JSON.
const JSON_VALUES_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// The release whose `Too long` says "may not be more than" instead of "must have at most".
const MAY_NOT_BE_MORE_SINCE: KubeVersion = KubeVersion::new(1, 32);

/// A field path, rendered as upstream's `field.Path.String()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// The root, which renders as nothing.
    pub fn root() -> Self {
        Self::default()
    }

    /// The root, with room for `bytes` of steps.
    pub(super) fn with_capacity(bytes: usize) -> Self {
        Self(String::with_capacity(bytes))
    }

    /// A path from the root: `"spec.selector"`.
    pub fn of(text: &str) -> Self {
        Self(text.to_owned())
    }

    /// `<path>.<name>`, or `<name>` at the root.
    pub fn child(&self, name: &str) -> Self {
        let mut path = self.with_room(name.len() + 1);
        path.push_child(name);
        path
    }

    /// `<path>.a.b` for a dotted relative path `.a.b`.
    pub fn join(&self, dotted: &str) -> Self {
        let mut path = self.with_room(dotted.len());
        for name in dotted.split('.').filter(|s| !s.is_empty()) {
            path.push_child(name);
        }
        path
    }

    /// `<path>[<i>]`.
    pub fn index(&self, i: usize) -> Self {
        let mut path = self.with_room(8);
        path.push_index(i);
        path
    }

    /// `<path>[<key>]`, the key unquoted as upstream writes it.
    pub fn key(&self, key: &str) -> Self {
        let mut path = self.with_room(key.len() + 2);
        path.push_key(key);
        path
    }

    /// A copy with room for `more` bytes, so that appending to it does not reallocate.
    fn with_room(&self, more: usize) -> Self {
        let mut text = String::with_capacity(self.0.len() + more);
        text.push_str(&self.0);
        Self(text)
    }

    // In place, as validation renders a path for every named rule it runs: no `format!`.
    pub(super) fn push_child(&mut self, name: &str) {
        if !self.0.is_empty() {
            self.0.push('.');
        }
        self.0.push_str(name);
    }

    pub(super) fn push_index(&mut self, i: usize) {
        use std::fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = write!(self.0, "[{i}]");
    }

    pub(super) fn push_key(&mut self, key: &str) {
        self.0.push('[');
        self.0.push_str(key);
        self.0.push(']');
    }

    /// The rendered path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A bad value and the Go type it has upstream, which decides how releases before 1.34 print
/// it.
#[derive(Debug, Clone, Copy)]
pub enum Shown<'v> {
    /// A string, number, boolean or null: the same in every release (a nil `"null"` before
    /// 1.34).
    Plain(&'v Value),
    /// A `map[string]string` (labels).
    StringMap(&'v Value),
    /// A `*metav1.LabelSelector`.
    LabelSelector(&'v Value),
    /// A `[]string`.
    StringList(&'v Value),
    /// A slice of the named Go type (`[]networking.PolicyType`), of strings or empty:
    /// `[]networking.PolicyType{"Ingress"}`, or `(nil)` for null, before 1.34.
    GoSlice(&'static str, &'v Value),
    /// A value whose Go `%#v` the caller wrote (an internal struct): that text before 1.34, the
    /// JSON value from 1.34.
    Go(&'v str, &'v Value),
}

impl Shown<'_> {
    fn render(self, release: KubeVersion) -> String {
        let json = release >= JSON_VALUES_SINCE;
        match (self, json) {
            (Self::Plain(Value::Null), false) => "\"null\"".to_owned(),
            (Self::Plain(value), _)
            | (Self::StringList(value), true)
            | (Self::GoSlice(_, value), true)
            | (Self::Go(_, value), true) => value.to_string(),
            (Self::Go(go, _), false) => (*go).to_owned(),
            (Self::GoSlice(go_type, Value::Null), false) => format!("{go_type}(nil)"),
            (Self::GoSlice(go_type, value), false) => {
                let items: Vec<String> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(go_string)
                    .collect();
                format!("{go_type}{{{}}}", items.join(", "))
            }
            (Self::StringMap(value), true) => sorted_map(value).to_string(),
            (Self::LabelSelector(value), true) => json_label_selector(value),
            (Self::StringList(value), false) => {
                let items: Vec<String> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(go_string)
                    .collect();
                format!("[]string{{{}}}", items.join(", "))
            }
            (Self::StringMap(value), false) => go_string_map(value),
            (Self::LabelSelector(value), false) => go_label_selector(value),
        }
    }
}

/// A map as Go's JSON encoder writes it: keys sorted.
fn sorted_map(value: &Value) -> Value {
    match value.as_object() {
        None => value.clone(),
        Some(map) => {
            let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        }
    }
}

/// A `metav1.LabelSelector` as Go's JSON encoder writes it: fields in declaration order.
fn json_label_selector(value: &Value) -> String {
    let mut out = serde_json::Map::new();
    if let Some(labels) = value.get("matchLabels").filter(|l| !l.is_null()) {
        out.insert("matchLabels".into(), sorted_map(labels));
    }
    if let Some(expressions) = value.get("matchExpressions").filter(|e| !e.is_null()) {
        out.insert("matchExpressions".into(), expressions.clone());
    }
    Value::Object(out).to_string()
}

/// Go's `%#v` of a `map[string]string`: keys sorted, `map[string]string(nil)` for nil.
fn go_string_map(value: &Value) -> String {
    match value.as_object() {
        None => "map[string]string(nil)".to_owned(),
        Some(map) => {
            let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            let pairs: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), go_string(v)))
                .collect();
            format!("map[string]string{{{}}}", pairs.join(", "))
        }
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quoted<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|item| format!("{:?}", item.as_ref()))
        .collect();
    format!("[{}]", quoted.join(" "))
}

fn go_string(value: &Value) -> String {
    Value::from(value.as_str().unwrap_or("")).to_string()
}

/// Go's `%#v` of a dereferenced `metav1.LabelSelector`.
fn go_label_selector(value: &Value) -> String {
    let labels = go_string_map(value.get("matchLabels").unwrap_or(&Value::Null));
    let expressions = match value.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|item| {
                    let values = match item.get("values").and_then(Value::as_array) {
                        None => "[]string(nil)".to_owned(),
                        Some(values) => {
                            let values: Vec<String> = values.iter().map(go_string).collect();
                            format!("[]string{{{}}}", values.join(", "))
                        }
                    };
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                        go_string(item.get("key").unwrap_or(&Value::Null)),
                        go_string(item.get("operator").unwrap_or(&Value::Null)),
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}")
}

/// The field errors of one object, in the order they were found, for one release and the
/// cluster's policy.
#[derive(Debug)]
pub struct Errors {
    release: KubeVersion,
    privileged_allowed: bool,
    causes: Vec<StatusCause>,
}

impl Errors {
    /// No errors yet; messages follow release `release`.
    pub fn new(release: KubeVersion) -> Self {
        Self {
            release,
            privileged_allowed: true,
            causes: Vec::new(),
        }
    }

    /// Whether the cluster allows privileged containers (kube-apiserver's
    /// `--allow-privileged`); allowed unless this says otherwise.
    pub fn allowing_privileged(mut self, allowed: bool) -> Self {
        self.privileged_allowed = allowed;
        self
    }

    /// Whether privileged containers are allowed.
    pub fn privileged_allowed(&self) -> bool {
        self.privileged_allowed
    }

    /// The release the messages follow.
    pub fn release(&self) -> KubeVersion {
        self.release
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.causes.is_empty()
    }

    /// The causes found, for a 422.
    pub fn into_causes(self) -> Vec<StatusCause> {
        self.causes
    }

    /// `Required value[: <detail>]`.
    pub fn required(&mut self, path: &FieldPath, detail: &str) {
        self.causes
            .push(StatusCause::required(path.as_str(), detail));
    }

    /// `Invalid value: <value>: <detail>`.
    pub fn invalid(&mut self, path: &FieldPath, value: Shown<'_>, detail: &str) {
        let shown = value.render(self.release);
        self.causes
            .push(StatusCause::invalid_shown(path.as_str(), &shown, detail));
    }

    /// `Invalid value: <text>: <detail>`: a value Go prints through its `String()` method (a
    /// `metav1.Time`), rendered by the caller.
    pub fn invalid_text(&mut self, path: &FieldPath, text: &str, detail: &str) {
        self.causes
            .push(StatusCause::invalid_shown(path.as_str(), text, detail));
    }

    /// `Invalid value: <detail>`: a value upstream leaves out (`field.OmitValueType`).
    pub fn invalid_omitted(&mut self, path: &FieldPath, detail: &str) {
        self.causes.push(StatusCause::new(
            CauseType::FieldValueInvalid,
            path.as_str(),
            format!("Invalid value: {detail}"),
        ));
    }

    /// `Too many: <actual>: must have at most <max> items` (`field.TooMany`).
    pub fn too_many(&mut self, path: &FieldPath, actual: usize, max: usize) {
        let unit = if max == 1 { "item" } else { "items" };
        self.causes.push(StatusCause::new(
            CauseType::FieldValueTooMany,
            path.as_str(),
            format!("Too many: {actual}: must have at most {max} {unit}"),
        ));
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`, in the order given.
    pub fn not_supported(&mut self, path: &FieldPath, value: &Value, supported: &[&str]) {
        self.causes
            .push(StatusCause::not_supported(path.as_str(), value, supported));
    }

    /// [`Errors::not_supported`] of a value shown as its Go type prints (a map, a struct).
    pub fn not_supported_shown(&mut self, path: &FieldPath, value: Shown<'_>, supported: &[&str]) {
        let quoted: Vec<String> = supported
            .iter()
            .map(|v| Value::from(*v).to_string())
            .collect();
        let message = format!(
            "Unsupported value: {}: supported values: {}",
            value.render(self.release),
            quoted.join(", ")
        );
        self.causes.push(StatusCause::new(
            CauseType::FieldValueNotSupported,
            path.as_str(),
            message,
        ));
    }

    /// `Forbidden[: <detail>]`.
    pub fn forbidden(&mut self, path: &FieldPath, detail: &str) {
        self.causes
            .push(StatusCause::forbidden(path.as_str(), detail));
    }

    /// `Duplicate value: <value>`.
    pub fn duplicate(&mut self, path: &FieldPath, value: &Value) {
        self.causes
            .push(StatusCause::duplicate(path.as_str(), value));
    }

    /// [`Errors::duplicate`] of a value shown as its Go type prints (an internal struct).
    pub fn duplicate_shown(&mut self, path: &FieldPath, value: Shown<'_>) {
        let message = format!("Duplicate value: {}", value.render(self.release));
        self.causes.push(StatusCause::new(
            CauseType::FieldValueDuplicate,
            path.as_str(),
            message,
        ));
    }

    /// Appends the errors `other` found (a rule that checks a part before keeping its errors).
    pub fn extend(&mut self, other: Errors) {
        self.causes.extend(other.causes);
    }

    /// `Not found: <value>`.
    pub fn not_found(&mut self, path: &FieldPath, value: &Value) {
        self.causes
            .push(StatusCause::not_found(path.as_str(), value));
    }

    /// `Too long: ...` for a limit of `max` bytes, worded as the release words it.
    pub fn too_long(&mut self, path: &FieldPath, max: usize) {
        let detail = if self.release < MAY_NOT_BE_MORE_SINCE {
            format!("must have at most {max} bytes")
        } else if max == 1 && self.release >= JSON_VALUES_SINCE {
            "may not be more than 1 byte".to_owned()
        } else {
            format!("may not be more than {max} bytes")
        };
        self.causes.push(StatusCause::new(
            CauseType::FieldValueTooLong,
            path.as_str(),
            format!("Too long: {detail}"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const OLD: KubeVersion = KubeVersion::new(1, 28);
    const NEW: KubeVersion = KubeVersion::new(1, 34);

    #[test]
    fn paths_render_as_upstream_field_paths() {
        let spec = FieldPath::root().child("spec");
        assert_eq!(
            spec.join(".template.spec")
                .child("containers")
                .index(0)
                .child("name")
                .as_str(),
            "spec.template.spec.containers[0].name"
        );
        assert_eq!(
            FieldPath::root().child("data").key("a b").as_str(),
            "data[a b]"
        );
        // field.NewPath("") renders as `[]` upstream; the ConfigMap size error uses it.
        assert_eq!(FieldPath::of("[]").as_str(), "[]");
    }

    #[test]
    fn values_render_as_go_before_1_34_and_as_json_after() {
        let labels = json!({"b": "2", "a": "1"});
        let selector = json!({"matchLabels": {"app": "web2"}});
        let cases = [
            (
                Shown::StringMap(&labels),
                OLD,
                r#"map[string]string{"a":"1", "b":"2"}"#,
            ),
            (Shown::StringMap(&labels), NEW, r#"{"a":"1","b":"2"}"#),
            (
                Shown::LabelSelector(&selector),
                OLD,
                r#"v1.LabelSelector{MatchLabels:map[string]string{"app":"web2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"#,
            ),
            (
                Shown::LabelSelector(&selector),
                NEW,
                r#"{"matchLabels":{"app":"web2"}}"#,
            ),
            (Shown::Plain(&Value::Null), OLD, r#""null""#),
            (Shown::Plain(&Value::Null), NEW, "null"),
            (Shown::Plain(&json!(-1)), OLD, "-1"),
            (
                Shown::GoSlice("[]networking.IngressRule", &Value::Null),
                OLD,
                "[]networking.IngressRule(nil)",
            ),
            (
                Shown::GoSlice("[]networking.PolicyType", &json!(["Ingress"])),
                OLD,
                r#"[]networking.PolicyType{"Ingress"}"#,
            ),
            (
                Shown::GoSlice("[]networking.PolicyType", &json!(["Ingress"])),
                NEW,
                r#"["Ingress"]"#,
            ),
        ];
        for (shown, release, want) in cases {
            assert_eq!(shown.render(release), want, "{release}");
        }
    }

    #[test]
    fn too_long_is_worded_per_release() {
        let at = |minor| {
            let mut errors = Errors::new(KubeVersion::new(1, minor));
            errors.too_long(&FieldPath::of("data"), 1048576);
            errors.into_causes()[0].message.clone().unwrap()
        };
        assert_eq!(at(28), "Too long: must have at most 1048576 bytes");
        assert_eq!(at(32), "Too long: may not be more than 1048576 bytes");
    }
}
