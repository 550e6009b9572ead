//! JSON Merge Patch (RFC 7386): a partial document merged into the target, objects member by
//! member, `null` deleting a member, and every other value (arrays included) replacing.

use serde_json::{Map, Value};

/// Merges `patch` into `target` in place.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(map) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            map.shift_remove(key);
        } else {
            merge(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn merged(target: Value, patch: &Value) -> Value {
        let mut target = target;
        merge(&mut target, patch);
        target
    }

    /// RFC 7386 Appendix A: (original, patch, result).
    fn rfc_examples() -> Vec<(Value, Value, Value)> {
        vec![
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ]
    }

    #[test]
    fn rfc_7386_appendix_examples() {
        for (original, patch, want) in rfc_examples() {
            assert_eq!(
                merged(original.clone(), &patch),
                want,
                "{original} + {patch}"
            );
        }
    }

    #[test]
    fn deleting_keeps_the_order_of_the_rest() {
        let out = merged(json!({"b": 1, "a": 2, "c": 3}), &json!({"a": null, "d": 4}));
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "c", "d"]);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[a-z]{0,3}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                prop::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// The merge patch that turns `from` into `to` (RFC 7386 §3's inverse), for null-free `to`.
    fn diff(from: &Value, to: &Value) -> Value {
        match (from, to) {
            (Value::Object(a), Value::Object(b)) => {
                let mut patch = Map::new();
                for key in a.keys().filter(|k| !b.contains_key(*k)) {
                    patch.insert(key.clone(), Value::Null);
                }
                for (key, value) in b {
                    match a.get(key) {
                        Some(old) if old == value => {}
                        Some(old) => {
                            patch.insert(key.clone(), diff(old, value));
                        }
                        None => {
                            patch.insert(key.clone(), value.clone());
                        }
                    }
                }
                Value::Object(patch)
            }
            _ => to.clone(),
        }
    }

    fn has_null_member(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.values().any(|v| v.is_null() || has_null_member(v)),
            Value::Array(items) => items.iter().any(has_null_member),
            _ => false,
        }
    }

    proptest! {
        #[test]
        fn applying_twice_is_applying_once(target in json_value(), patch in json_value()) {
            let once = merged(target, &patch);
            prop_assert_eq!(merged(once.clone(), &patch), once);
        }

        #[test]
        fn a_diff_patch_reaches_its_target(from in json_value(), to in json_value()) {
            prop_assume!(!has_null_member(&to) && !to.is_null());
            prop_assert_eq!(merged(from.clone(), &diff(&from, &to)), to);
        }

        #[test]
        fn result_has_no_null_members_from_an_object_patch(
            target in json_value(),
            patch in prop::collection::btree_map("[a-d]", json_value(), 0..4),
        ) {
            let patch = Value::Object(patch.into_iter().collect());
            let out = merged(target.clone(), &patch);
            for (key, value) in patch.as_object().into_iter().flatten() {
                if value.is_null() {
                    prop_assert!(out.get(key).is_none());
                }
            }
        }
    }
}
