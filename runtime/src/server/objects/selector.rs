//! The `labelSelector` and `fieldSelector` query parameters: parsing (400 on bad syntax) and
//! matching against stored objects.
//!
//! Label syntax is upstream's: comma-separated requirements `k`, `!k`, `k=v`, `k==v`, `k!=v`,
//! `k in (a,b)`, `k notin (a,b)`, `k>n`, `k<n`. Field syntax is `f=v`, `f==v`, `f!=v` with `\`
//! escaping, over the labels the kind accepts in the release ([`crate::field_labels`]).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::field_labels::Selectable;
use crate::meta::ListOptions;
use crate::{KubeVersion, ResourceInfo};

use crate::server::http::error::ApiError;
use crate::server::objects::label_parser::{self, Operator, Requirement};

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelReq {
    Exists(String),
    DoesNotExist(String),
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Gt(String, i64),
    Lt(String, i64),
}

impl LabelReq {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Exists(k) => labels.contains_key(k),
            Self::DoesNotExist(k) => !labels.contains_key(k),
            Self::Equals(k, v) => labels.get(k) == Some(v),
            Self::NotEquals(k, v) => labels.get(k) != Some(v),
            Self::In(k, vs) => labels.get(k).is_some_and(|have| vs.contains(have)),
            Self::NotIn(k, vs) => labels.get(k).is_none_or(|have| !vs.contains(have)),
            Self::Gt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Self::Lt(k, n) => labels
                .get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        }
    }
}

/// A parsed `labelSelector`; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelQuery(Vec<LabelReq>);

/// A parsed `fieldSelector`: `(field, value, equal?)` terms.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldQuery(Vec<(Selectable, String, bool)>);

/// Both selectors of a list or watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selectors {
    labels: LabelQuery,
    fields: FieldQuery,
}

impl Selectors {
    /// Parses both query parameters for a kind; the error is the 400 message.
    pub(crate) fn parse(
        info: &ResourceInfo,
        at: KubeVersion,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Self, String> {
        Ok(Self {
            labels: LabelQuery::parse(label_selector.unwrap_or(""), at)?,
            fields: FieldQuery::parse(info, at, field_selector.unwrap_or(""))?,
        })
    }

    /// The selectors of a list or watch request; a watch of one object (`name`) adds a name
    /// selector, as upstream's watch of `/{name}` is a field-selected watch of the collection.
    pub(crate) fn of_request(
        info: &ResourceInfo,
        at: KubeVersion,
        options: &ListOptions,
        name: Option<&str>,
    ) -> Result<Self, ApiError> {
        let field = match (options.field_selector.as_deref(), name) {
            (Some(f), Some(n)) if !f.is_empty() => Some(format!("{f},metadata.name={n}")),
            (_, Some(n)) => Some(format!("metadata.name={n}")),
            (f, None) => f.map(str::to_owned),
        };
        Self::parse(
            info,
            at,
            options.label_selector.as_deref(),
            field.as_deref(),
        )
        .map_err(ApiError::bad_request)
    }

    /// Whether neither selector restricts anything.
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.0.is_empty() && self.fields.0.is_empty()
    }

    /// Whether a stored object (JSON) is selected.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        if self.is_empty() {
            return true;
        }
        let labels: BTreeMap<String, String> = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        self.labels.0.iter().all(|r| r.matches(&labels))
            && self
                .fields
                .0
                .iter()
                .all(|(field, want, equal)| (field.value(object) == *want) == *equal)
    }
}

impl LabelQuery {
    /// Parses the string syntax as kube-apiserver of release `at` does (`label_parser`).
    pub(crate) fn parse(input: &str, at: KubeVersion) -> Result<Self, String> {
        let requirements = label_parser::parse(input, at)?;
        Ok(Self(requirements.into_iter().map(LabelReq::from).collect()))
    }
}

impl From<Requirement> for LabelReq {
    fn from(requirement: Requirement) -> Self {
        let Requirement {
            key,
            operator,
            values,
        } = requirement;
        let first = values.first().cloned().unwrap_or_default();
        // The parser checked that a Gt or Lt value is an integer.
        let number = first.parse::<i64>().unwrap_or_default();
        match operator {
            Operator::Exists => Self::Exists(key),
            Operator::DoesNotExist => Self::DoesNotExist(key),
            Operator::Equals => Self::Equals(key, first),
            Operator::NotEquals => Self::NotEquals(key, first),
            Operator::In => Self::In(key, values),
            Operator::NotIn => Self::NotIn(key, values),
            Operator::GreaterThan => Self::Gt(key, number),
            Operator::LessThan => Self::Lt(key, number),
        }
    }
}

/// Splits on unescaped `sep`.
fn split_unescaped(input: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut escaped = false;
    for c in input.chars() {
        if escaped {
            current.push('\\');
            current.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    if escaped {
        current.push('\\');
    }
    out.push(current);
    out
}

/// Upstream's `UnescapeValue`: `\\`, `\,` and `\=` stand for the character, any other escape
/// is refused, and so is a bare `,` or `=` (named by its code point, as Go prints a rune).
fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                other => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{}",
                        other.map(String::from).unwrap_or_default()
                    ));
                }
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// Upstream's `splitTerm`: the first operator from the left, `!=` before `==` before `=` at
/// one position.
fn split_term(term: &str) -> Option<(&str, &str, bool)> {
    (0..term.len())
        .filter(|i| term.is_char_boundary(*i))
        .find_map(|i| {
            let rest = &term[i..];
            if let Some(value) = rest.strip_prefix("!=") {
                Some((&term[..i], value, false))
            } else if let Some(value) = rest.strip_prefix("==") {
                Some((&term[..i], value, true))
            } else {
                rest.strip_prefix('=')
                    .map(|value| (&term[..i], value, true))
            }
        })
}

impl FieldQuery {
    /// Parses the string syntax as upstream's `fields.ParseSelector` (terms sorted, empty terms
    /// skipped, every term parsed before any field is looked up), then accepts only the labels
    /// the kind accepts in release `at`, as the list handler's conversion of the selector does
    /// (`staging/src/k8s.io/apimachinery/pkg/fields/selector.go`).
    pub(crate) fn parse(info: &ResourceInfo, at: KubeVersion, input: &str) -> Result<Self, String> {
        if input.is_empty() {
            return Ok(Self(Vec::new()));
        }
        let mut parts = split_unescaped(input, ',');
        parts.sort();
        let mut parsed = Vec::new();
        for part in parts.iter().filter(|p| !p.is_empty()) {
            let (field, value, equal) = split_term(part)
                .ok_or_else(|| format!("invalid selector: '{input}'; can't understand '{part}'"))?;
            parsed.push((field, unescape(value)?, equal));
        }
        let mut terms = Vec::with_capacity(parsed.len());
        for (field, value, equal) in parsed {
            let selectable = info.field_labels.resolve(
                field,
                at,
                info.is_namespaced(),
                &info.selectable_fields,
            )?;
            terms.push((selectable, value, equal));
        }
        Ok(Self(terms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AT: KubeVersion = KubeVersion::new(1, 36);

    fn thing() -> ResourceInfo {
        ResourceInfo {
            gvk: crate::GroupVersionKind::new_static("", "v1", "Thing"),
            plural: "things".into(),
            singular: "thing".into(),
            short_names: std::borrow::Cow::Borrowed(&[]),
            categories: std::borrow::Cow::Borrowed(&[]),
            scope: crate::Scope::Namespaced,
            verbs: std::borrow::Cow::Borrowed(crate::Verb::ALL),
            subresources: Default::default(),
            lifecycle: Default::default(),
            printer_columns: std::borrow::Cow::Borrowed(&[]),
            selectable_fields: std::borrow::Cow::Borrowed(&[]),
            field_labels: Default::default(),
            defaults: std::borrow::Cow::Borrowed(&[]),
            write_rules: crate::write_rules::WriteRules::CUSTOM,
            family: None,
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_selectors_parse_and_match() {
        let web = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        let none = labels(&[]);
        let rows: &[(&str, bool, bool)] = &[
            ("", true, true),
            ("app=web", true, false),
            ("app==web", true, false),
            ("app = web", true, false),
            ("app!=web", false, true),
            ("app!=db", true, true),
            ("app", true, false),
            ("!app", false, true),
            ("app in (web,db)", true, false),
            ("app in (db)", false, false),
            ("app notin (db)", true, true),
            ("app notin (web)", false, true),
            ("app=web,tier=front", true, false),
            ("app=web,tier in (back)", false, false),
            ("n>4", true, false),
            ("n<4", false, false),
            ("example.com/x", false, false),
            ("app=", false, false),
        ];
        for (selector, on_web, on_none) in rows {
            let query =
                LabelQuery::parse(selector, AT).unwrap_or_else(|e| panic!("{selector}: {e}"));
            assert_eq!(
                query.0.iter().all(|r| r.matches(&web)),
                *on_web,
                "{selector}"
            );
            assert_eq!(
                query.0.iter().all(|r| r.matches(&none)),
                *on_none,
                "{selector}"
            );
        }
        for bad in [
            "app in (a",
            "app in a",
            "=x",
            "app=web,",
            ",app",
            "app==a b",
            "app=-x",
            "n>x",
            "-bad",
            "app=web)",
            "app notin",
        ] {
            assert!(LabelQuery::parse(bad, AT).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn field_selectors_parse_and_match() {
        let mut info = thing();
        info.selectable_fields = vec![std::borrow::Cow::Borrowed(".spec.paused")].into();
        let obj = json!({"metadata": {"name": "a,b", "namespace": "ns"}, "spec": {"paused": true}});
        let rows: &[(&str, bool)] = &[
            ("metadata.name=a\\,b", true),
            ("metadata.name==x", false),
            ("metadata.name!=x", true),
            ("metadata.namespace=ns,spec.paused=true", true),
            ("spec.paused=false", false),
        ];
        for (selector, want) in rows {
            let sel = Selectors::parse(&info, AT, None, Some(selector)).unwrap();
            assert_eq!(sel.matches(&obj), *want, "{selector}");
        }
        assert_eq!(
            Selectors::parse(&info, AT, None, Some("spec.color=red")).unwrap_err(),
            "field label not supported: spec.color"
        );
        // `fields.ParseSelector`'s texts (staging/src/k8s.io/apimachinery/pkg/fields/selector.go).
        let refused =
            |selector: &str| Selectors::parse(&info, AT, None, Some(selector)).unwrap_err();
        assert_eq!(
            refused("metadata.name=x,b"),
            "invalid selector: 'metadata.name=x,b'; can't understand 'b'"
        );
        assert_eq!(
            refused("metadata.name=a=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            refused("metadata.name=a\\x"),
            "invalid field selector: invalid escape sequence: \\x"
        );
        assert_eq!(
            refused("metadata.name=a\\"),
            "invalid field selector: invalid escape sequence: \\"
        );
        // Every term is parsed before any label is looked up, in sorted order.
        assert_eq!(
            refused("spec.color=red,a"),
            "invalid selector: 'spec.color=red,a'; can't understand 'a'"
        );
        // `a=b!=c` splits at the first operator: the value holds a `!=`, which is allowed.
        assert!(Selectors::parse(&info, AT, None, Some("metadata.name=b!c")).is_ok());
    }

    #[test]
    fn listed_labels_read_their_paths_and_refuse_the_rest() {
        use crate::field_labels::{FieldLabel, FieldLabels, FieldType};
        use std::borrow::Cow;
        let mut info = thing();
        // core/v1 Event: AddFieldLabelConversionsForEvent, ToSelectableFields.
        info.field_labels = FieldLabels::Listed {
            labels: Cow::Owned(vec![FieldLabel {
                label: Cow::Borrowed("involvedObject.name"),
                paths: Cow::Borrowed(&[Cow::Borrowed(".involvedObject.name")]),
                type_: FieldType::String,
                releases: crate::printer::Releases::ALL,
            }]),
            message: Cow::Borrowed("field label not supported: %s"),
        };
        let selectors =
            Selectors::parse(&info, AT, None, Some("involvedObject.name=settings")).unwrap();
        assert!(selectors.matches(&json!({"involvedObject": {"name": "settings"}})));
        assert!(!selectors.matches(&json!({"involvedObject": {"name": "other"}})));
        assert_eq!(
            FieldQuery::parse(&info, AT, "involvedObject.kind=ConfigMap").unwrap_err(),
            "field label not supported: involvedObject.kind"
        );
    }
}
