//! `LabelSelector`: the structured label query kinds embed (e.g. a Deployment's `spec.selector`),
//! its conversion to the string syntax list requests take (`app=web,tier in (a,b)`), and
//! matching against an object's labels.
//!
//! Parsing the string syntax back belongs with the server's query handling, not here.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::open_enum;
use crate::wire::null_as_default;

/// A label query over a set of objects (`metav1.LabelSelector`).
///
/// The requirements are ANDed. An empty selector matches every object.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must be present with exactly these values.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One set-based requirement of a [`LabelSelector`] (`metav1.LabelSelectorRequirement`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key.
    #[serde(default)]
    pub key: String,
    /// How the key relates to `values`.
    pub operator: LabelSelectorOperator,
    /// The values for `In` and `NotIn`; must be empty for `Exists` and `DoesNotExist`.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

open_enum! {
    /// The operator of a [`LabelSelectorRequirement`] (`metav1.LabelSelectorOperator`).
    pub enum LabelSelectorOperator {
        /// The label's value is one of `values`.
        In = "In",
        /// The label is absent or its value is none of `values`.
        NotIn = "NotIn",
        /// The label is present, with any value.
        Exists = "Exists",
        /// The label is absent.
        DoesNotExist = "DoesNotExist",
    }
}

/// Why a [`LabelSelector`] cannot be turned into a selector string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelSelectorError {
    /// The operator is not one of the four upstream defines.
    #[error("{0:?} is not a valid label selector operator")]
    InvalidOperator(String),
    /// `In` or `NotIn` without values.
    #[error("key {key:?}: for 'in', 'notin' operators, values set can't be empty")]
    MissingValues {
        /// The requirement's key.
        key: String,
    },
    /// `Exists` or `DoesNotExist` with values.
    #[error("key {key:?}: values set must be empty for exists and does not exist")]
    UnexpectedValues {
        /// The requirement's key.
        key: String,
    },
    /// A key that is not a qualified name (`[prefix/]name`).
    #[error("invalid label key {0:?}")]
    InvalidKey(String),
    /// A value that is not a valid label value.
    #[error("invalid label value {value:?} for key {key:?}")]
    InvalidValue {
        /// The requirement's key.
        key: String,
        /// The offending value.
        value: String,
    },
}

/// One requirement after normalisation, in the form upstream's `labels.Requirement` prints.
enum Requirement<'a> {
    Equals(&'a str, &'a str),
    In(&'a str, Vec<&'a str>),
    NotIn(&'a str, Vec<&'a str>),
    Exists(&'a str),
    DoesNotExist(&'a str),
}

impl Requirement<'_> {
    fn key(&self) -> &str {
        match self {
            Self::Equals(k, _)
            | Self::In(k, _)
            | Self::NotIn(k, _)
            | Self::Exists(k)
            | Self::DoesNotExist(k) => k,
        }
    }

    fn write(&self, out: &mut String) {
        match self {
            Self::Equals(k, v) => {
                out.push_str(k);
                out.push('=');
                out.push_str(v);
            }
            Self::In(k, values) | Self::NotIn(k, values) => {
                out.push_str(k);
                out.push_str(if matches!(self, Self::In(..)) {
                    " in ("
                } else {
                    " notin ("
                });
                out.push_str(&values.join(","));
                out.push(')');
            }
            Self::Exists(k) => out.push_str(k),
            Self::DoesNotExist(k) => {
                out.push('!');
                out.push_str(k);
            }
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Equals(k, v) => labels.get(*k).is_some_and(|have| have == v),
            Self::In(k, values) => labels
                .get(*k)
                .is_some_and(|have| values.contains(&have.as_str())),
            Self::NotIn(k, values) => labels
                .get(*k)
                .is_none_or(|have| !values.contains(&have.as_str())),
            Self::Exists(k) => labels.contains_key(*k),
            Self::DoesNotExist(k) => !labels.contains_key(*k),
        }
    }
}

impl LabelSelector {
    /// Whether the selector has no requirements, and so matches everything.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Validates the selector and returns its requirements sorted by key, as upstream's
    /// `LabelSelectorAsSelector` builds them.
    fn requirements(&self) -> Result<Vec<Requirement<'_>>, LabelSelectorError> {
        let mut reqs = Vec::with_capacity(self.match_labels.len() + self.match_expressions.len());
        for (key, value) in &self.match_labels {
            check_key(key)?;
            check_value(key, value)?;
            reqs.push(Requirement::Equals(key, value));
        }
        for expr in &self.match_expressions {
            let key = expr.key.as_str();
            check_key(key)?;
            for value in &expr.values {
                check_value(key, value)?;
            }
            // Upstream prints set values sorted, so `b,a` and `a,b` give the same string.
            let mut values: Vec<&str> = expr.values.iter().map(String::as_str).collect();
            values.sort_unstable();
            let req = match &expr.operator {
                LabelSelectorOperator::In | LabelSelectorOperator::NotIn => {
                    if values.is_empty() {
                        return Err(LabelSelectorError::MissingValues { key: key.into() });
                    }
                    if expr.operator == LabelSelectorOperator::In {
                        Requirement::In(key, values)
                    } else {
                        Requirement::NotIn(key, values)
                    }
                }
                LabelSelectorOperator::Exists | LabelSelectorOperator::DoesNotExist => {
                    if !values.is_empty() {
                        return Err(LabelSelectorError::UnexpectedValues { key: key.into() });
                    }
                    if expr.operator == LabelSelectorOperator::Exists {
                        Requirement::Exists(key)
                    } else {
                        Requirement::DoesNotExist(key)
                    }
                }
                LabelSelectorOperator::Other(op) => {
                    return Err(LabelSelectorError::InvalidOperator(op.clone()));
                }
            };
            reqs.push(req);
        }
        // Stable, so two requirements on one key keep their written order.
        reqs.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(reqs)
    }

    /// The selector in the string syntax of the `labelSelector` query parameter, e.g.
    /// `app=web,tier in (back,front)`; empty for an empty selector.
    ///
    /// Requirements are sorted by key and set values alphabetically, as upstream prints them.
    pub fn to_selector_string(&self) -> Result<String, LabelSelectorError> {
        let mut out = String::new();
        for (i, req) in self.requirements()?.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            req.write(&mut out);
        }
        Ok(out)
    }

    /// The selector as `kubectl` displays it (upstream's `FormatLabelSelector`): the selector
    /// string, `<none>` when empty, `<error>` when invalid.
    pub fn format(&self) -> String {
        match self.to_selector_string() {
            Ok(s) if s.is_empty() => "<none>".to_owned(),
            Ok(s) => s,
            Err(_) => "<error>".to_owned(),
        }
    }

    /// Whether an object with these labels is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> Result<bool, LabelSelectorError> {
        Ok(self.requirements()?.iter().all(|r| r.matches(labels)))
    }
}

impl fmt::Display for LabelSelector {
    /// Writes [`LabelSelector::format`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format())
    }
}

/// Label keys are qualified names: an optional DNS-subdomain prefix and `/`, then a name of at
/// most 63 characters.
fn check_key(key: &str) -> Result<(), LabelSelectorError> {
    if crate::names::is_qualified_name(key) {
        Ok(())
    } else {
        Err(LabelSelectorError::InvalidKey(key.to_owned()))
    }
}

/// Label values are empty or a name of at most 63 characters.
fn check_value(key: &str, value: &str) -> Result<(), LabelSelectorError> {
    if crate::names::is_label_value(value) {
        Ok(())
    } else {
        Err(LabelSelectorError::InvalidValue {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: values.iter().map(|v| (*v).to_owned()).collect(),
        }
    }

    fn selector(labels: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            match_expressions: exprs,
        }
    }

    #[test]
    fn round_trips_and_omits_empty_fields() {
        let input = json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"}
            ]
        });
        let sel: LabelSelector = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(
            sel.match_expressions[1].operator,
            LabelSelectorOperator::DoesNotExist
        );
        assert_eq!(serde_json::to_value(&sel).unwrap(), input);
        assert_eq!(
            serde_json::to_string(&LabelSelector::default()).unwrap(),
            "{}"
        );
        // Go writes nil slices and maps as null; they read as empty.
        let nulls: LabelSelector =
            serde_json::from_str(r#"{"matchLabels":null,"matchExpressions":null}"#).unwrap();
        assert!(nulls.is_empty());
    }

    #[test]
    fn requirement_always_writes_key_and_operator() {
        let req = expr("", "Exists", &[]);
        assert_eq!(
            serde_json::to_value(&req).unwrap(),
            json!({"key": "", "operator": "Exists"})
        );
    }

    #[test]
    fn formats_like_upstream() {
        let cases: Vec<(LabelSelector, &str)> = vec![
            (LabelSelector::default(), "<none>"),
            (selector(&[("a", "b")], vec![]), "a=b"),
            (
                selector(&[("a", "b")], vec![expr("c", "In", &["e", "d"])]),
                "a=b,c in (d,e)",
            ),
            // Sorted by key across labels and expressions.
            (
                selector(
                    &[("z", "1")],
                    vec![
                        expr("m", "NotIn", &["x"]),
                        expr("b", "Exists", &[]),
                        expr("a", "DoesNotExist", &[]),
                    ],
                ),
                "!a,b,m notin (x),z=1",
            ),
            (
                selector(&[("example.com/app", "")], vec![]),
                "example.com/app=",
            ),
            (selector(&[], vec![expr("a", "Exists", &["x"])]), "<error>"),
            (selector(&[], vec![expr("a", "In", &[])]), "<error>"),
            (selector(&[], vec![expr("a", "Matches", &["x"])]), "<error>"),
            (selector(&[("bad key", "v")], vec![]), "<error>"),
            (selector(&[("k", "-bad")], vec![]), "<error>"),
            (selector(&[("Bad.Prefix/k", "v")], vec![]), "<error>"),
        ];
        for (sel, want) in cases {
            assert_eq!(sel.format(), want, "{sel:?}");
            assert_eq!(sel.to_string(), want);
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let err = selector(&[], vec![expr("a", "Matches", &[])])
            .to_selector_string()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#""Matches" is not a valid label selector operator"#
        );
        assert_eq!(selector(&[], vec![]).to_selector_string().unwrap(), "");
    }

    #[test]
    fn matches_labels() {
        let labels: BTreeMap<String, String> = [("app", "web"), ("tier", "front")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let cases = [
            (selector(&[], vec![]), true),
            (selector(&[("app", "web")], vec![]), true),
            (selector(&[("app", "db")], vec![]), false),
            (
                selector(&[], vec![expr("tier", "In", &["back", "front"])]),
                true,
            ),
            (
                selector(&[], vec![expr("tier", "NotIn", &["front"])]),
                false,
            ),
            (selector(&[], vec![expr("missing", "NotIn", &["x"])]), true),
            (selector(&[], vec![expr("app", "Exists", &[])]), true),
            (selector(&[], vec![expr("app", "DoesNotExist", &[])]), false),
            (
                selector(&[("app", "web")], vec![expr("tier", "In", &["back"])]),
                false,
            ),
        ];
        for (sel, want) in cases {
            assert_eq!(sel.matches(&labels).unwrap(), want, "{}", sel.format());
        }
        assert!(
            selector(&[], vec![expr("a", "In", &[])])
                .matches(&labels)
                .is_err()
        );
    }
}
