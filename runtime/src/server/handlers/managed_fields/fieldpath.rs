//! Field paths and sets, as upstream's `fieldpath` package has them: a path is a list of
//! steps (a struct field or map key, a list item by its keys, a set item by its value, an item
//! by position), a set is an ordered set of paths. A set is stored as a `FieldsV1` trie and
//! printed in conflicts as upstream prints a path.
//!
//! Nothing here knows a kind's schema; `typed` builds sets from objects.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// One step of a field path (`fieldpath.PathElement`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Step {
    /// A struct field or map key: `f:<name>`. Shared rather than owned: a field set holds a
    /// path per member, each a copy of its parent's steps.
    Field(Arc<str>),
    /// A list item by its key fields: `k:<compact JSON object>`.
    Key(String),
    /// A set item by its value: `v:<compact JSON>`.
    Value(String),
    /// A list item by position: `i:<n>`.
    Index(usize),
}

/// A field path.
pub(crate) type Path = Vec<Step>;

/// A set of field paths.
pub(crate) type Set = BTreeSet<Path>;

impl Step {
    /// The step as a `FieldsV1` key.
    pub(super) fn encode(&self) -> String {
        match self {
            Step::Field(name) => format!("f:{name}"),
            Step::Key(keys) => format!("k:{keys}"),
            Step::Value(value) => format!("v:{value}"),
            Step::Index(i) => format!("i:{i}"),
        }
    }

    /// A `FieldsV1` key as a step; `None` when it is not one.
    pub(super) fn decode(text: &str) -> Option<Step> {
        let (kind, rest) = text.split_at_checked(2)?;
        match kind {
            "f:" => Some(Step::Field(rest.into())),
            "k:" => {
                let keys: Map<String, Value> = serde_json::from_str(rest).ok()?;
                Some(Step::Key(key_text(&keys)))
            }
            "v:" => {
                let value: Value = serde_json::from_str(rest).ok()?;
                Some(Step::Value(value.to_string()))
            }
            "i:" => rest.parse().ok().map(Step::Index),
            _ => None,
        }
    }
}

/// The canonical text of a list item's keys: compact JSON with the keys sorted.
pub(super) fn key_text(keys: &Map<String, Value>) -> String {
    let sorted: BTreeMap<&String, &Value> = keys.iter().collect();
    serde_json::to_string(&sorted).unwrap_or_default()
}

/// A path as upstream prints it in conflicts: `.data.key`, `.spec.ports[port=80,protocol="TCP"]`,
/// `.metadata.finalizers[="a"]`, `.items[2]`.
pub(crate) struct Display<'a>(pub(crate) &'a [Step]);

impl fmt::Display for Display<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for step in self.0 {
            match step {
                Step::Field(name) => write!(f, ".{name}")?,
                Step::Key(keys) => {
                    let keys: Map<String, Value> = serde_json::from_str(keys).unwrap_or_default();
                    let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    write!(f, "[{}]", parts.join(","))?;
                }
                Step::Value(value) => write!(f, "[={value}]")?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// A set as a `FieldsV1` trie: `{"f:data":{"f:key":{}}}`; a member with members below it
/// carries a `"."` key.
pub(crate) fn encode_set(set: &Set) -> Value {
    // The set is sorted, so a path comes before the paths below it and the paths below one
    // step are consecutive: the trie is written in one pass over them.
    let paths: Vec<&[Step]> = set.iter().map(Vec::as_slice).collect();
    Value::Object(render(&paths, 0))
}

/// The trie node of the paths `paths`, which share their first `depth` steps.
fn render(paths: &[&[Step]], depth: usize) -> Map<String, Value> {
    let mut map = Map::new();
    let (member, mut rest) = match paths.split_first() {
        Some((first, rest)) if first.len() == depth => (true, rest),
        _ => (false, paths),
    };
    // Repeats of the node itself cannot be in a set; skipped all the same.
    while let Some((first, after)) = rest.split_first() {
        if first.len() > depth {
            break;
        }
        rest = after;
    }
    if member && !rest.is_empty() {
        map.insert(".".into(), Value::Object(Map::new()));
    }
    while let Some(step) = rest.first().and_then(|p| p.get(depth)) {
        let end = rest
            .iter()
            .position(|p| p.get(depth) != Some(step))
            .unwrap_or(rest.len());
        let (group, after) = rest.split_at(end);
        map.insert(step.encode(), Value::Object(render(group, depth + 1)));
        rest = after;
    }
    map
}

/// A `FieldsV1` trie as a set; `None` when it is not one.
pub(crate) fn decode_set(fields: &Value) -> Option<Set> {
    fn walk(value: &Value, path: &mut Path, out: &mut Set) -> Option<()> {
        let map = value.as_object()?;
        if map.is_empty() && !path.is_empty() {
            out.insert(path.clone());
        }
        for (key, child) in map {
            if key == "." {
                out.insert(path.clone());
                continue;
            }
            path.push(Step::decode(key)?);
            walk(child, path, out)?;
            path.pop();
        }
        Some(())
    }
    let mut out = Set::new();
    walk(fields, &mut Vec::new(), &mut out)?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sets_round_trip_through_fields_v1() {
        let value = json!({"f:data": {".": {}, "f:a": {}}, "f:spec": {"k:{\"name\":\"c\"}": {".": {}, "f:x": {}}, "v:3": {}, "i:2": {}}});
        let set = decode_set(&value).unwrap();
        assert_eq!(set.len(), 6);
        assert_eq!(encode_set(&set), value);
        assert!(decode_set(&json!({"x:y": {}})).is_none());
    }

    #[test]
    fn paths_print_as_upstream() {
        let path = vec![
            Step::Field("spec".into()),
            Step::Field("ports".into()),
            Step::Key(r#"{"port":80,"protocol":"TCP"}"#.into()),
            Step::Field("name".into()),
        ];
        assert_eq!(
            Display(&path).to_string(),
            r#".spec.ports[port=80,protocol="TCP"].name"#
        );
        let set = vec![
            Step::Field("f".into()),
            Step::Value("\"a\"".into()),
            Step::Index(2),
        ];
        assert_eq!(Display(&set).to_string(), r#".f[="a"][2]"#);
    }
}
