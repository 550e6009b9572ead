//! An applied configuration merged into the live object with the kind's list and map
//! semantics ([`merge`]), and the fields the manager applied before and dropped now taken out
//! of the result unless someone still owns them ([`prune`]).
//!
//! Both walk the object along the kind's `typed` nodes; ownership comes in as field sets, so
//! nothing here reads or writes managed fields.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::server::handlers::managed_fields::fieldpath::{Path, Set, Step};
use crate::server::handlers::managed_fields::typed::{Node, Shape, item_step};

/// `config` merged into `live`: the configuration's values win, structs and granular maps
/// merge key by key, sets and map lists item by item, everything else is replaced.
pub(crate) fn merge(live: &Value, config: &Value, node: Node<'_>) -> Value {
    match (node.shape(config), live, config) {
        (Shape::Struct | Shape::Map, Value::Object(old), Value::Object(new)) => {
            let mut out = old.clone();
            for (key, value) in new {
                let merged = match old.get(key) {
                    Some(before) => merge(before, value, node.child(key)),
                    None => value.clone(),
                };
                out.insert(key.clone(), merged);
            }
            Value::Object(out)
        }
        (shape @ (Shape::Set | Shape::ListMap(_)), Value::Array(old), Value::Array(new)) => {
            Value::Array(merge_items(old, new, &shape, node.item()))
        }
        _ => config.clone(),
    }
}

/// The items of a set or map list merged as upstream's merging walker orders them: items in
/// both lists follow the configuration's order, new items sit where the configuration has
/// them, and items only in the live list keep their place relative to the others. Live
/// items no key names (and repeats of a key) count as live-only items.
fn merge_items(old: &[Value], new: &[Value], shape: &Shape, item: Node<'_>) -> Vec<Value> {
    let old_steps: Vec<Option<Step>> = old.iter().map(|v| item_step(shape, v, item)).collect();
    let mut in_old: HashMap<&Step, usize> = HashMap::with_capacity(old.len());
    for (i, step) in old_steps.iter().enumerate() {
        if let Some(step) = step {
            in_old.entry(step).or_insert(i);
        }
    }
    // The configuration was checked: every item has a key and no key repeats.
    let new_steps: Vec<(Step, &Value)> = new
        .iter()
        .filter_map(|v| item_step(shape, v, item).map(|step| (step, v)))
        .collect();
    let in_new: HashMap<&Step, &Value> = new_steps.iter().map(|(s, v)| (s, *v)).collect();
    // A live item shared with the configuration: its first occurrence only.
    let shared_at = |i: usize| {
        old_steps[i]
            .as_ref()
            .filter(|s| in_old.get(s) == Some(&i) && in_new.contains_key(s))
    };
    let mut shared = new_steps
        .iter()
        .map(|(s, _)| s)
        .filter(|s| in_old.contains_key(s));
    let mut next_shared = shared.next();
    let merged = |step: &Step, value: &Value| match in_old.get(step) {
        Some(&i) if matches!(shape, Shape::ListMap(_)) => merge(&old[i], value, item),
        _ => value.clone(),
    };
    let mut out = Vec::with_capacity(old.len().max(new.len()));
    let (mut l, mut r) = (0, 0);
    while l < old.len() || r < new_steps.len() {
        if l < old.len() {
            match shared_at(l) {
                None => {
                    out.push(old[l].clone());
                    l += 1;
                    continue;
                }
                Some(step) if r < new_steps.len() && *step == new_steps[r].0 => {
                    out.push(merged(step, new_steps[r].1));
                    l += 1;
                    r += 1;
                    next_shared = shared.next();
                    continue;
                }
                // Its turn comes where the configuration has it.
                Some(step) if next_shared != Some(step) => {
                    l += 1;
                    continue;
                }
                Some(_) => {}
            }
        }
        if r < new_steps.len() {
            let (step, value) = &new_steps[r];
            out.push(merged(step, value));
            r += 1;
            if next_shared == Some(step) {
                next_shared = shared.next();
            }
        } else {
            // Only shared live items remain, all merged already.
            l += 1;
        }
    }
    out
}

/// Whether some path in `set` is `prefix` or below it.
fn has_under(set: &Set, prefix: &Path) -> bool {
    set.range(prefix.clone()..)
        .next()
        .is_some_and(|p| p.starts_with(prefix))
}

/// Whether some path in `set` is strictly below `prefix`.
fn has_strictly_under(set: &Set, prefix: &Path) -> bool {
    use std::ops::Bound;
    set.range((Bound::Excluded(prefix.clone()), Bound::Unbounded))
        .next()
        .is_some_and(|p| p.starts_with(prefix))
}

/// Removes from `merged` what the manager applied last time (`last`) and no one owns now
/// (`kept`), then the struct fields above it that only held what was removed. One walk down
/// the paths to remove; ownership is looked up by range in the ordered sets.
pub(super) fn prune(merged: &mut Value, root: Node<'_>, last: &Set, kept: &Set) {
    let gone: Set = last
        .iter()
        .filter(|p| !has_under(kept, p))
        .cloned()
        .collect();
    if !gone.is_empty() {
        prune_at(merged, root, &mut Vec::new(), &gone, kept);
    }
}

/// [`prune`] below `path`, where `value` sits.
fn prune_at(value: &mut Value, node: Node<'_>, path: &mut Path, gone: &Set, kept: &Set) {
    let shape = node.shape(value);
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                path.push(Step::Field(key.as_str().into()));
                if gone.contains(path) {
                    map.shift_remove(&key);
                } else if has_strictly_under(gone, path)
                    && let Some(child) = map.get_mut(&key)
                {
                    prune_at(child, node.child(&key), path, gone, kept);
                    let emptied = child.as_object().is_some_and(Map::is_empty);
                    if emptied && !has_under(kept, path) {
                        map.shift_remove(&key);
                    }
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let item = node.item();
            let mut index = 0;
            items.retain_mut(|v| {
                let step = item_step(&shape, v, item).unwrap_or(Step::Index(index));
                index += 1;
                path.push(step);
                let keep = if gone.contains(path) {
                    false
                } else {
                    if has_strictly_under(gone, path) {
                        prune_at(v, item, path, gone, kept);
                    }
                    true
                };
                path.pop();
                keep
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{TypeInfo, field};
    use serde_json::json;

    static ITEM: TypeInfo = TypeInfo::new(&[]);
    static ROOT: TypeInfo = TypeInfo::new(&[
        field("items").list_map(&["name"]).items(&ITEM),
        field("tags").set(),
        field("atomic").atomic_map(),
    ]);

    #[test]
    fn merges_follow_the_schema() {
        let root = Node::root(None, Some(&ROOT));
        let live = json!({
            "items": [{"name": "a", "x": 1}, {"name": "b", "x": 2}],
            "tags": ["t1"],
            "atomic": {"k1": "v1"},
            "plain": [1, 2],
            "nested": {"a": 1, "b": 2}
        });
        let config = json!({
            "items": [{"name": "b", "y": 3}, {"name": "c"}],
            "tags": ["t2", "t1"],
            "atomic": {"k2": "v2"},
            "plain": [3],
            "nested": {"b": 5}
        });
        assert_eq!(
            merge(&live, &config, root),
            json!({
                "items": [{"name": "a", "x": 1}, {"name": "b", "x": 2, "y": 3}, {"name": "c"}],
                "tags": ["t2", "t1"],
                "atomic": {"k2": "v2"},
                "plain": [3],
                "nested": {"a": 1, "b": 5}
            })
        );
    }

    #[test]
    fn list_items_follow_the_configurations_order() {
        let root = Node::root(None, Some(&ROOT));
        let names = |list: &[&str]| -> Value { list.iter().map(|n| json!({"name": n})).collect() };
        // (live, config, merged)
        let rows: &[(&[&str], &[&str], &[&str])] = &[
            (&["a", "c"], &["a", "b", "c"], &["a", "b", "c"]),
            (&["a", "b"], &["b", "a"], &["b", "a"]),
            (&["x", "a", "y", "b"], &["b", "a"], &["x", "y", "b", "a"]),
            (&["a", "x", "b"], &["b", "n", "a"], &["x", "b", "n", "a"]),
            (&["x"], &["a", "b"], &["x", "a", "b"]),
            (&[], &["b", "a"], &["b", "a"]),
            (&["a", "b", "c"], &["c"], &["a", "b", "c"]),
        ];
        for (live, config, want) in rows {
            let merged = merge(
                &json!({"items": names(live), "tags": live}),
                &json!({"items": names(config), "tags": config}),
                root,
            );
            assert_eq!(merged["items"], names(want), "{live:?} + {config:?}");
            assert_eq!(merged["tags"], json!(want), "{live:?} + {config:?}");
        }
        // Live items without a key stay where they are; a shared item merges once.
        let merged = merge(
            &json!({"items": [{"x": 1}, {"name": "a", "v": 1}, {"name": "a", "v": 2}]}),
            &json!({"items": [{"name": "b"}, {"name": "a", "w": 3}]}),
            root,
        );
        assert_eq!(
            merged["items"],
            json!([{"x": 1}, {"name": "b"}, {"name": "a", "v": 1, "w": 3}, {"name": "a", "v": 2}])
        );
    }

    /// Big lists merge in the configuration's order and prune to what is kept. (Their speed,
    /// linear since the lists are indexed once, is a benchmark matter, not asserted here.)
    #[test]
    fn big_lists_merge_in_order_and_prune_to_what_is_kept() {
        const N: usize = 20_000;
        let root = Node::root(None, Some(&ROOT));
        let items: Vec<Value> = (0..N)
            .map(|i| json!({"name": format!("n{i}"), "v": i}))
            .collect();
        let reversed: Vec<Value> = items.iter().rev().cloned().collect();
        let mut merged = merge(&json!({"items": items}), &json!({"items": reversed}), root);
        assert_eq!(merged["items"][0]["name"], format!("n{}", N - 1));
        let item = |i: usize| -> Path {
            vec![
                Step::Field("items".into()),
                Step::Key(format!(r#"{{"name":"n{i}"}}"#)),
            ]
        };
        let last: Set = (0..N).map(item).collect();
        let kept: Set = (0..N)
            .step_by(2)
            .map(|i| {
                let mut p = item(i);
                p.push(Step::Field("v".into()));
                p
            })
            .collect();
        prune(&mut merged, root, &last, &kept);
        assert_eq!(merged["items"].as_array().map(Vec::len), Some(N / 2));
    }

    #[test]
    fn pruning_removes_what_nobody_owns_and_empty_parents() {
        let root = Node::root(None, Some(&ROOT));
        let mut object = json!({"spec": {"a": {"b": 1}, "c": 2}, "items": [{"name": "x", "v": 1}]});
        let path =
            |steps: &[&str]| -> Path { steps.iter().map(|s| Step::Field((*s).into())).collect() };
        let item: Path = vec![
            Step::Field("items".into()),
            Step::Key(r#"{"name":"x"}"#.into()),
        ];
        let last: Set = [
            path(&["spec", "a", "b"]),
            path(&["spec", "c"]),
            item.clone(),
        ]
        .into_iter()
        .collect();
        let mut kept_item = item.clone();
        kept_item.push(Step::Field("v".into()));
        let kept: Set = [path(&["spec", "c"]), kept_item].into_iter().collect();
        prune(&mut object, root, &last, &kept);
        assert_eq!(
            object,
            json!({"spec": {"c": 2}, "items": [{"name": "x", "v": 1}]})
        );
    }
}
