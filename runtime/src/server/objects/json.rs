//! JSON helpers every handler shares: an object's `metadata` and its string fields, and the
//! simple JSON paths (`.spec.replicas`, `.a[0].b`) that scale subresources and table columns
//! name. Imports nothing from the server but `error`.

use serde_json::{Map, Value, json};

use crate::server::http::error::ApiError;

/// `metadata` of a JSON object; the object and its metadata are created when absent.
pub(crate) fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    let meta = object_mut(object)
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    object_mut(meta)
}

/// The value as a JSON object, replacing anything else with an empty one.
pub(crate) fn object_mut(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    match value {
        Value::Object(map) => map,
        // The value was made an object just above.
        _ => unreachable!("value is an object"),
    }
}

/// A string field of `metadata`.
pub(crate) fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// Evaluates a simple JSON path (`.a.b`, `.a[0].b`) against an object.
pub(crate) use crate::printer::format::at as eval_path;

/// Sets a simple JSON path (`.spec.replicas`), creating objects on the way.
pub(crate) fn set_path(object: &mut Value, path: &str, value: Value) -> Result<(), ApiError> {
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut current = object;
    for (i, part) in parts.iter().enumerate() {
        if !current.is_object() {
            *current = json!({});
        }
        let Value::Object(map) = current else {
            return Err(ApiError::internal("scale path is not an object path"));
        };
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), value);
            return Ok(());
        }
        current = map.entry((*part).to_owned()).or_insert_with(|| json!({}));
    }
    Ok(())
}

/// The strings of the JSON list at `pointer` below `value` (none when it is absent or not a
/// list; items that are not strings are skipped).
pub(crate) fn strings_at<'v>(value: &'v Value, pointer: &str) -> Vec<&'v str> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Sets `condition` (with a `type` and a `status`) in `status.conditions`, as upstream's
/// condition helpers do (`meta.SetStatusCondition`, a pod's `UpdatePodCondition`): it replaces
/// the condition of its type, keeping that one's `lastTransitionTime` when the status did not
/// change and stamping `now` otherwise.
pub(crate) fn set_condition(status: &mut Map<String, Value>, mut condition: Value, now: Value) {
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !conditions.is_array() {
        *conditions = Value::Array(Vec::new());
    }
    let Value::Array(conditions) = conditions else {
        return;
    };
    let kind = condition.get("type").cloned();
    let existing = conditions
        .iter_mut()
        .find(|c| c.get("type") == kind.as_ref());
    let transition = match &existing {
        Some(old) if old.get("status") == condition.get("status") => {
            old.get("lastTransitionTime").cloned().unwrap_or(now)
        }
        _ => now,
    };
    object_mut(&mut condition).insert("lastTransitionTime".into(), transition);
    match existing {
        Some(old) => *old = condition,
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let obj = json!({"spec": {"replicas": 3, "list": [{"x": 1}]}, "status": {"a.b": 2}});
        assert_eq!(eval_path(&obj, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(eval_path(&obj, ".spec.list[0].x"), Some(&json!(1)));
        assert_eq!(eval_path(&obj, ".spec.missing"), None);
        assert_eq!(eval_path(&obj, ".spec.list[9]"), None);
        let mut target = json!({});
        set_path(&mut target, ".spec.replicas", json!(5)).unwrap();
        assert_eq!(target, json!({"spec": {"replicas": 5}}));
    }
}
