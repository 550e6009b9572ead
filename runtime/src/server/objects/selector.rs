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
            labels: LabelQuery::parse(label_selector.unwrap_or(""))?,
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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Comma,
    Open,
    Close,
}

fn tokenize(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '!' => {
                chars.next();
                if chars.peek() == Some(&'=') {
                    chars.next();
                    tokens.push(Token::NotEq);
                } else {
                    tokens.push(Token::Not);
                }
            }
            '=' => {
                chars.next();
                if chars.peek() == Some(&'=') {
                    chars.next();
                    tokens.push(Token::DoubleEq);
                } else {
                    tokens.push(Token::Eq);
                }
            }
            '>' | '<' | ',' | '(' | ')' => {
                chars.next();
                tokens.push(match c {
                    '>' => Token::Gt,
                    '<' => Token::Lt,
                    ',' => Token::Comma,
                    '(' => Token::Open,
                    _ => Token::Close,
                });
            }
            _ => {
                let mut ident = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || "!=><,()".contains(c) {
                        break;
                    }
                    ident.push(c);
                    chars.next();
                }
                tokens.push(Token::Ident(ident));
            }
        }
    }
    tokens
}

impl LabelQuery {
    /// Parses the string syntax.
    pub(crate) fn parse(input: &str) -> Result<Self, String> {
        let tokens = tokenize(input);
        let mut reqs = Vec::new();
        let mut i = 0;
        let err = |msg: String| format!("unable to parse requirement: {msg}");
        while i < tokens.len() {
            let negated = tokens.get(i) == Some(&Token::Not);
            if negated {
                i += 1;
            }
            let key = match tokens.get(i) {
                Some(Token::Ident(k)) => k.clone(),
                other => return Err(err(format!("found {other:?}, expected: identifier"))),
            };
            if !crate::names::is_qualified_name(&key) {
                return Err(err(format!(
                    "invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                )));
            }
            i += 1;
            let req = if negated {
                LabelReq::DoesNotExist(key)
            } else {
                match tokens.get(i) {
                    None | Some(Token::Comma) => LabelReq::Exists(key),
                    Some(op @ (Token::Eq | Token::DoubleEq | Token::NotEq)) => {
                        let op = op.clone();
                        i += 1;
                        let value = match tokens.get(i) {
                            Some(Token::Ident(v)) => {
                                i += 1;
                                v.clone()
                            }
                            None | Some(Token::Comma) => String::new(),
                            other => {
                                return Err(err(format!("found {other:?}, expected: identifier")));
                            }
                        };
                        check_value(&key, &value).map_err(err)?;
                        // `i` stays on the separator, consumed below.
                        i -= 1;
                        if op == Token::NotEq {
                            LabelReq::NotEquals(key, value)
                        } else {
                            LabelReq::Equals(key, value)
                        }
                    }
                    Some(op @ (Token::Gt | Token::Lt)) => {
                        let op = op.clone();
                        i += 1;
                        let n = match tokens.get(i) {
                            Some(Token::Ident(v)) => v.parse::<i64>().map_err(|_| {
                                err(format!("for 'Gt', 'Lt' operators, the value must be an integer, got {v:?}"))
                            })?,
                            other => {
                                return Err(err(format!("found {other:?}, expected: integer")));
                            }
                        };
                        if op == Token::Gt {
                            LabelReq::Gt(key, n)
                        } else {
                            LabelReq::Lt(key, n)
                        }
                    }
                    Some(Token::Ident(word)) if word == "in" || word == "notin" => {
                        let notin = word == "notin";
                        i += 1;
                        if tokens.get(i) != Some(&Token::Open) {
                            return Err(err("found no '(' after set operator".to_owned()));
                        }
                        i += 1;
                        let mut values = Vec::new();
                        loop {
                            match tokens.get(i) {
                                Some(Token::Ident(v)) => {
                                    check_value(&key, v).map_err(err)?;
                                    values.push(v.clone());
                                    i += 1;
                                    match tokens.get(i) {
                                        Some(Token::Comma) => i += 1,
                                        Some(Token::Close) => break,
                                        other => {
                                            return Err(err(format!(
                                                "found {other:?}, expected: ',' or ')'"
                                            )));
                                        }
                                    }
                                }
                                Some(Token::Close) => break,
                                other => {
                                    return Err(err(format!(
                                        "found {other:?}, expected: value or ')'"
                                    )));
                                }
                            }
                        }
                        if values.is_empty() {
                            return Err(err(
                                "for 'in', 'notin' operators, values set can't be empty".to_owned(),
                            ));
                        }
                        if notin {
                            LabelReq::NotIn(key, values)
                        } else {
                            LabelReq::In(key, values)
                        }
                    }
                    other => {
                        return Err(err(format!(
                            "found {other:?}, expected: in, notin, =, ==, !=, gt, lt"
                        )));
                    }
                }
            };
            reqs.push(req);
            // After a requirement: end, or a comma followed by another requirement.
            match tokens.get(i) {
                Some(Token::Close)
                    if matches!(reqs.last(), Some(LabelReq::In(..) | LabelReq::NotIn(..))) =>
                {
                    i += 1;
                }
                _ => {}
            }
            if matches!(
                reqs.last(),
                Some(
                    LabelReq::Equals(..)
                        | LabelReq::NotEquals(..)
                        | LabelReq::Gt(..)
                        | LabelReq::Lt(..)
                )
            ) {
                i += 1;
            }
            match tokens.get(i) {
                None => break,
                Some(Token::Comma) if i + 1 < tokens.len() => i += 1,
                other => return Err(err(format!("found {other:?}, expected: ','"))),
            }
        }
        Ok(Self(reqs))
    }
}

fn check_value(key: &str, value: &str) -> Result<(), String> {
    if crate::names::is_label_value(value) {
        Ok(())
    } else {
        Err(format!(
            "values[0][{key}]: Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
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

fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=' | '!')) => out.push(e),
                other => {
                    return Err(format!(
                        "invalid field selector escape sequence: \\{}",
                        other.map(String::from).unwrap_or_default()
                    ));
                }
            },
            '=' | ',' | '!' => {
                return Err(format!(
                    "invalid field selector: unescaped {c:?} in value {value:?}"
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

impl FieldQuery {
    /// Parses the string syntax, accepting only the labels the kind accepts in release `at`.
    pub(crate) fn parse(info: &ResourceInfo, at: KubeVersion, input: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self(terms));
        }
        for term in split_unescaped(input, ',') {
            let (field, value, equal) = if let Some((f, v)) = term.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, v, true)
            } else {
                return Err(format!(
                    "invalid selector: '{term}'; can't understand '{term}'"
                ));
            };
            let selectable = info.field_labels.resolve(
                field.trim(),
                at,
                info.is_namespaced(),
                &info.selectable_fields,
            )?;
            terms.push((selectable, unescape(value)?, equal));
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
            let query = LabelQuery::parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
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
            "app in ()",
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
            assert!(LabelQuery::parse(bad).is_err(), "{bad:?} should fail");
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
        assert!(Selectors::parse(&info, AT, None, Some("metadata.name")).is_err());
        assert!(Selectors::parse(&info, AT, None, Some("metadata.name=a=b")).is_err());
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
