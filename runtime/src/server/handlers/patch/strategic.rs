//! Strategic merge patch over JSON, driven by a kind's static merge metadata
//! ([`crate::merge::TypeInfo`]): upstream apimachinery's semantics re-implemented.
//!
//! - Maps and structs merge key by key; `null` deletes a key.
//! - Lists whose field has patch strategy `merge` merge: object items by the field's
//!   `patchMergeKey` (matching items merge recursively, new ones are appended), scalar items
//!   as a set. Every other list, and every value of another type, is replaced.
//! - Directives: `$patch: replace | delete | merge` in a map (replace it, clear it, merge it)
//!   and as a list item (`replace`: the list becomes the patch's other items; `delete`: remove
//!   the item with that merge key); `$retainKeys` (drop the keys of the original it does not
//!   list); `$deleteFromPrimitiveList/<field>`; `$setElementOrder/<field>` (order of the merged
//!   list: the directive's order first, server-only items kept at their relative places).
//!
//! Errors use upstream's classes: a malformed directive is [`SmpError::BadRequest`], content
//! that contradicts `$retainKeys` or a list of lists is [`SmpError::Invalid`], and a list item
//! without its declared merge key is [`SmpError::Internal`] (upstream answers 500 there).

use serde_json::{Map, Value};

use crate::merge::{Cursor, TypeInfo};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";

/// Why a strategic merge patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SmpError {
    /// A malformed patch (upstream 400).
    #[error("{0}")]
    BadRequest(String),
    /// A well-formed patch that cannot apply (upstream 422).
    #[error("{0}")]
    Invalid(String),
    /// Upstream reports these as plain errors (500).
    #[error("{0}")]
    Internal(String),
}

/// Applies `patch` to `original` with the kind's root merge metadata.
pub(crate) fn apply(
    original: &Value,
    patch: &Value,
    root: &'static TypeInfo,
) -> Result<Value, SmpError> {
    let Value::Object(patch) = patch else {
        return Err(SmpError::BadRequest("invalid JSON document".to_owned()));
    };
    let original = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    merge_map(original, patch.clone(), Cursor::root(Some(root))).map(Value::Object)
}

fn directive_str<'a>(value: &'a Value, what: &str) -> Result<&'a str, SmpError> {
    value
        .as_str()
        .ok_or_else(|| SmpError::BadRequest(format!("{what} must be a string, got {value}")))
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Cursor,
) -> Result<Map<String, Value>, SmpError> {
    if let Some(directive) = patch.remove(PATCH) {
        match directive_str(&directive, PATCH)? {
            "replace" => return Ok(strip_map(patch)),
            "delete" => return Ok(Map::new()),
            "merge" => {}
            other => {
                return Err(SmpError::BadRequest(format!(
                    "Unknown patch type: {other} in map: {}",
                    Value::Object(patch)
                )));
            }
        }
    }
    if let Some(retain) = patch.remove(RETAIN_KEYS) {
        let Value::Array(keys) = retain else {
            return Err(SmpError::BadRequest(
                "invalid patch: the value of $retainKeys must be a list".to_owned(),
            ));
        };
        let mut retained = Vec::with_capacity(keys.len());
        for key in keys {
            let Value::String(key) = key else {
                return Err(SmpError::BadRequest(
                    "invalid patch: the value of $retainKeys must be a list of strings".to_owned(),
                ));
            };
            retained.push(key);
        }
        for key in patch.keys().filter(|k| !k.starts_with('$')) {
            if !retained.contains(key) {
                return Err(SmpError::Invalid(
                    "the patch has a key that is not in $retainKeys: every key in the patch must be in the $retainKeys list".to_owned(),
                ));
            }
        }
        original.retain(|k, _| retained.contains(k));
    }

    // Deletions from scalar lists first, so a key merged in the same patch stays.
    let deletions: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(DELETE_PRIMITIVE))
        .cloned()
        .collect();
    for directive in deletions {
        let Some(field) = directive.strip_prefix(DELETE_PRIMITIVE).map(str::to_owned) else {
            continue;
        };
        let Some(Value::Array(remove)) = patch.remove(&directive) else {
            return Err(SmpError::BadRequest(
                "invalid patch: the value of $deleteFromPrimitiveList must be a list".to_owned(),
            ));
        };
        if let Some(Value::Array(items)) = original.get_mut(&field) {
            items.retain(|item| !remove.contains(item));
        }
    }
    let orders: Vec<(String, Value)> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ORDER))
        .cloned()
        .collect::<Vec<_>>()
        .into_iter()
        .filter_map(|k| {
            let value = patch.remove(&k)?;
            Some((k.strip_prefix(SET_ORDER)?.to_owned(), value))
        })
        .collect();

    for (key, value) in patch {
        if key.starts_with('$') {
            // Unknown directives are not part of the object.
            continue;
        }
        if value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let child = schema.child(&key);
        let field = child.field();
        // Taken out in place so the object's key order survives the merge.
        let Some(slot) = original.get_mut(&key) else {
            original.insert(key, strip(value));
            continue;
        };
        let current = std::mem::take(slot);
        let merged = match (current, value) {
            (Value::Object(current), Value::Object(value)) => {
                if field.is_some_and(|f| f.patch_strategy_has("replace")) {
                    Value::Object(strip_map(value))
                } else {
                    Value::Object(merge_map(current, value, child)?)
                }
            }
            (Value::Array(current), Value::Array(value)) => {
                if field.is_some_and(|f| f.patch_strategy_has("merge")) {
                    let merge_key = field.and_then(|f| f.patch_merge_key);
                    Value::Array(merge_list(current, value, child.item(), merge_key)?)
                } else {
                    strip(Value::Array(value))
                }
            }
            (_, value) => strip(value),
        };
        if let Some(slot) = original.get_mut(&key) {
            *slot = merged;
        }
    }

    for (field, order) in orders {
        let Value::Array(order) = order else {
            return Err(SmpError::BadRequest(
                "invalid patch: the value of $setElementOrder must be a list".to_owned(),
            ));
        };
        let info = schema.child(&field).field();
        let merge_key = info.and_then(|f| f.patch_merge_key);
        if let Some(Value::Array(items)) = original.get_mut(&field) {
            let ordered = apply_order(std::mem::take(items), &order, merge_key)?;
            *items = ordered;
        }
    }
    Ok(original)
}

/// The identity of a list item: its merge key's value for object items, itself otherwise.
fn identity<'a>(item: &'a Value, merge_key: Option<&str>) -> Option<&'a Value> {
    match (item, merge_key) {
        (Value::Object(map), Some(key)) => map.get(key),
        (Value::Object(_), None) => None,
        (other, _) => Some(other),
    }
}

fn no_merge_key(item: &Value, key: &str) -> SmpError {
    SmpError::Internal(format!(
        "map: {item} does not contain declared merge key: {key}"
    ))
}

fn merge_list(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    item_schema: Cursor,
    merge_key: Option<&str>,
) -> Result<Vec<Value>, SmpError> {
    if patch.iter().any(Value::is_array) {
        return Err(SmpError::Invalid(
            "lists of lists are not supported".to_owned(),
        ));
    }
    // Items that are directives.
    let mut rest = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let directive = item.as_object().and_then(|m| m.get(PATCH)).cloned();
        let Some(directive) = directive else {
            rest.push(item);
            continue;
        };
        match directive_str(&directive, PATCH)? {
            "replace" => replace = true,
            "delete" => {
                let Some(key) = merge_key else {
                    return Err(SmpError::BadRequest(format!(
                        "cannot delete {item} from a list without a merge key"
                    )));
                };
                let Some(target) = item.get(key).cloned() else {
                    return Err(no_merge_key(&item, key));
                };
                original.retain(|o| identity(o, Some(key)) != Some(&target));
            }
            other => {
                return Err(SmpError::BadRequest(format!(
                    "Unknown patch type: {other} in list item: {item}"
                )));
            }
        }
    }
    if replace {
        return Ok(rest.into_iter().map(strip).collect());
    }
    if rest.is_empty() {
        return Ok(original);
    }
    let scalars = rest.iter().all(|i| !i.is_object());
    if scalars {
        // Scalar lists merge as sets: the original's order, then new values.
        for item in rest {
            if !original.contains(&item) {
                original.push(item);
            }
        }
        return Ok(original);
    }
    let Some(key) = merge_key else {
        return Err(SmpError::Internal(
            "cannot merge lists without merge key".to_owned(),
        ));
    };
    let mut patch_ids = Vec::with_capacity(rest.len());
    for item in rest {
        let Some(id) = item.get(key).cloned() else {
            return Err(no_merge_key(&item, key));
        };
        let position = original
            .iter()
            .position(|o| identity(o, Some(key)) == Some(&id));
        match (position, item) {
            (Some(i), Value::Object(item)) => {
                let merged = match original.get_mut(i).map(std::mem::take) {
                    Some(Value::Object(current)) => merge_map(current, item, item_schema)?,
                    _ => strip_map(item),
                };
                if let Some(slot) = original.get_mut(i) {
                    *slot = Value::Object(merged);
                }
            }
            (None, item) => original.push(strip(item)),
            (Some(i), item) => {
                if let Some(slot) = original.get_mut(i) {
                    *slot = strip(item);
                }
            }
        }
        patch_ids.push(id);
    }
    // Patch items take the patch's order; server-only items keep their relative places.
    let server_order: Vec<Value> = original
        .iter()
        .filter_map(|o| identity(o, Some(key)).cloned())
        .collect();
    Ok(normalize(original, &patch_ids, &server_order, Some(key)))
}

/// Orders `items` so those named in `order` come in its order, merged with the rest (kept in
/// their current order) by their current positions.
fn apply_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<Vec<Value>, SmpError> {
    let mut ids = Vec::with_capacity(order.len());
    for entry in order {
        let id = match (entry, merge_key) {
            (Value::Object(map), Some(key)) => map
                .get(key)
                .cloned()
                .ok_or_else(|| no_merge_key(entry, key))?,
            (Value::Object(_), None) => {
                return Err(SmpError::BadRequest(
                    "invalid patch: $setElementOrder has objects for a list without a merge key"
                        .to_owned(),
                ));
            }
            (other, _) => other.clone(),
        };
        ids.push(id);
    }
    let server_order: Vec<Value> = items
        .iter()
        .filter_map(|o| identity(o, merge_key).cloned())
        .collect();
    Ok(normalize(items, &ids, &server_order, merge_key))
}

/// Upstream's element order: items whose identity is in `patch_order` sorted by it, merged with
/// the other items (in server order) by comparing server positions where both are known.
fn normalize(
    items: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    let position = |list: &[Value], item: &Value| {
        identity(item, merge_key).and_then(|id| list.iter().position(|x| x == id))
    };
    let (mut patched, server_only): (Vec<Value>, Vec<Value>) = items
        .into_iter()
        .partition(|item| position(patch_order, item).is_some());
    patched.sort_by_key(|item| position(patch_order, item));
    let mut out = Vec::with_capacity(patched.len() + server_only.len());
    let mut left = patched.into_iter().peekable();
    let mut right = server_only.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (position(server_order, l), position(server_order, r)) {
                (Some(li), Some(ri)) => li < ri,
                _ => true,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// A patch value with its directives removed, for when it is taken whole.
fn strip(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(strip_map(map)),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .filter(|i| i.get(PATCH).and_then(Value::as_str) != Some("delete"))
                .map(strip)
                .collect(),
        ),
        other => other,
    }
}

fn strip_map(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(k, v)| !k.starts_with('$') && !v.is_null())
        .map(|(k, v)| (k, strip(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::field;
    use serde_json::json;

    static PORT: TypeInfo = TypeInfo::new(&[]);
    static CONTAINER: TypeInfo = TypeInfo::new(&[
        field("ports")
            .list_map(&["containerPort"])
            .strategy("merge")
            .merge_key("containerPort")
            .items(&PORT),
        field("env").strategy("merge").merge_key("name"),
    ]);
    static VOLUME: TypeInfo = TypeInfo::new(&[]);
    static STRATEGY: TypeInfo = TypeInfo::new(&[]);
    static POD_SPEC: TypeInfo = TypeInfo::new(&[
        field("containers")
            .strategy("merge")
            .merge_key("name")
            .items(&CONTAINER),
        field("volumes")
            .strategy("merge,retainKeys")
            .merge_key("name")
            .items(&VOLUME),
        field("strategy").strategy("retainKeys").of(&STRATEGY),
        field("nodeSelector").strategy("replace"),
    ]);
    static ROOT: TypeInfo = TypeInfo::new(&[field("spec").of(&POD_SPEC)]);

    fn run(original: Value, patch: Value) -> Result<Value, SmpError> {
        apply(&original, &patch, &ROOT)
    }

    #[test]
    fn table() {
        let pod = json!({
            "metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x", "y"]},
            "spec": {
                "containers": [
                    {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
                    {"name": "side", "image": "side:1"}
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "nodeSelector": {"zone": "a", "disk": "ssd"},
                "args": ["a", "b"]
            }
        });
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "containers merge by name",
                json!({"spec": {"containers": [{"name": "app", "image": "app:2"}]}}),
                json!([
                    {"name": "app", "image": "app:2", "ports": [{"containerPort": 80}]},
                    {"name": "side", "image": "side:1"}
                ]),
            ),
            (
                "new container appended, nested ports merged",
                json!({"spec": {"containers": [
                    {"name": "app", "ports": [{"containerPort": 443}]},
                    {"name": "new", "image": "n"}
                ]}}),
                json!([
                    {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}, {"containerPort": 443}]},
                    {"name": "side", "image": "side:1"},
                    {"name": "new", "image": "n"}
                ]),
            ),
            (
                "$patch: delete removes by merge key",
                json!({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}),
                json!([{"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}]),
            ),
            (
                "$patch: replace in a list replaces it",
                json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o"}]}}),
                json!([{"name": "only", "image": "o"}]),
            ),
            (
                "$setElementOrder reorders",
                json!({"spec": {
                    "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
                    "containers": [{"name": "app", "image": "app:3"}]
                }}),
                json!([
                    {"name": "side", "image": "side:1"},
                    {"name": "app", "image": "app:3", "ports": [{"containerPort": 80}]}
                ]),
            ),
            (
                "null deletes a field inside a merged item",
                json!({"spec": {"containers": [{"name": "app", "ports": null}]}}),
                json!([
                    {"name": "app", "image": "app:1"},
                    {"name": "side", "image": "side:1"}
                ]),
            ),
        ];
        for (name, patch, want) in cases {
            let got = run(pod.clone(), patch).unwrap();
            assert_eq!(got["spec"]["containers"], want, "{name}");
            assert_eq!(got["metadata"]["name"], "p", "{name}");
        }
    }

    #[test]
    fn maps_lists_and_directives() {
        let pod = json!({
            "metadata": {"finalizers": ["x", "y"], "labels": {"a": "1", "b": "2"}},
            "spec": {
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                "nodeSelector": {"zone": "a", "disk": "ssd"},
                "args": ["a", "b"],
                "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]
            }
        });
        let cases: Vec<(&str, Value, &str, Value)> = vec![
            (
                "labels merge",
                json!({"metadata": {"labels": {"c": "3", "a": null}}}),
                "/metadata/labels",
                json!({"b": "2", "c": "3"}),
            ),
            (
                "finalizers merge as a set",
                json!({"metadata": {"finalizers": ["y", "z"]}}),
                "/metadata/finalizers",
                json!(["x", "y", "z"]),
            ),
            (
                "$deleteFromPrimitiveList",
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}}),
                "/metadata/finalizers",
                json!(["y"]),
            ),
            (
                "$setElementOrder on scalars",
                json!({"metadata": {
                "$setElementOrder/finalizers": ["z", "y", "x"], "finalizers": ["z"]}}),
                "/metadata/finalizers",
                json!(["z", "y", "x"]),
            ),
            (
                "$retainKeys drops unlisted keys",
                json!({"spec": {"strategy": {
                "$retainKeys": ["type"], "type": "Recreate"}}}),
                "/spec/strategy",
                json!({"type": "Recreate"}),
            ),
            (
                "patch strategy replace on a map",
                json!({"spec": {"nodeSelector": {"zone": "b"}}}),
                "/spec/nodeSelector",
                json!({"zone": "b"}),
            ),
            (
                "$patch: replace on a map",
                json!({"metadata": {"labels": {"$patch": "replace", "only": "x"}}}),
                "/metadata/labels",
                json!({"only": "x"}),
            ),
            (
                "$patch: delete on a map",
                json!({"spec": {"strategy": {"$patch": "delete"}}}),
                "/spec/strategy",
                json!({}),
            ),
            (
                "lists without strategy replace",
                json!({"spec": {"args": ["c"]}}),
                "/spec/args",
                json!(["c"]),
            ),
            (
                "lists merged without metadata beyond the field",
                json!({"spec": {"containers": [
                {"name": "c", "env": [{"name": "B", "value": "2"}]}]}}),
                "/spec/containers/0/env",
                json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
            ),
            (
                "type change replaces",
                json!({"spec": {"args": "x"}}),
                "/spec/args",
                json!("x"),
            ),
            (
                "unknown keys merge as maps",
                json!({"extra": {"a": {"b": 1}}}),
                "/extra",
                json!({"a": {"b": 1}}),
            ),
        ];
        for (name, patch, pointer, want) in cases {
            let got = run(pod.clone(), patch).unwrap();
            assert_eq!(got.pointer(pointer), Some(&want), "{name}: {got}");
        }
    }

    #[test]
    fn errors_have_upstreams_classes() {
        let pod = json!({
            "metadata": {"finalizers": ["f"]},
            "spec": {"containers": [{"name": "a"}], "strategy": {"type": "x"}}
        });
        let class = |e: &SmpError| match e {
            SmpError::BadRequest(_) => 400,
            SmpError::Invalid(_) => 422,
            SmpError::Internal(_) => 500,
        };
        let cases = [
            (json!({"spec": {"$patch": "frob"}}), 400),
            (json!({"spec": {"strategy": {"$retainKeys": "type"}}}), 400),
            (
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}),
                422,
            ),
            (json!({"spec": {"containers": [["nested"]]}}), 422),
            (json!({"spec": {"containers": [{"image": "no-name"}]}}), 500),
            (
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}),
                400,
            ),
            (json!({"spec": {"$setElementOrder/containers": "x"}}), 400),
        ];
        for (patch, code) in cases {
            let got = run(pod.clone(), patch.clone());
            assert_eq!(
                got.as_ref().err().map(class),
                Some(code),
                "{patch}: {got:?}"
            );
        }
        assert_eq!(
            apply(&pod, &json!([1]), &ROOT).err().as_ref().map(class),
            Some(400)
        );
    }

    #[test]
    fn new_values_lose_their_directives() {
        let got = run(
            json!({}),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "b", "x": null}]}}),
        )
        .unwrap();
        assert_eq!(got, json!({"spec": {"containers": [{"name": "b"}]}}));
    }

    fn value_without_directives() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i16>().prop_map(Value::from),
            "[a-z]{0,3}".prop_map(Value::from),
        ];
        let leaf = prop_oneof![
            scalar.clone(),
            prop::collection::vec(scalar.prop_filter("no nulls", |v| !v.is_null()), 0..3)
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop::collection::btree_map("[a-d]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        })
    }

    proptest::proptest! {
        /// Where the schema declares nothing and the patch has no directives, strategic merge
        /// is JSON merge patch.
        #[test]
        fn without_metadata_it_is_a_merge_patch(
            original in value_without_directives(),
            patch in value_without_directives(),
        ) {
            proptest::prop_assume!(original.is_object() && patch.is_object());
            static NOTHING: TypeInfo = TypeInfo::new(&[]);
            let mut want = original.clone();
            super::super::merge_patch::merge(&mut want, &patch);
            proptest::prop_assert_eq!(apply(&original, &patch, &NOTHING).unwrap(), want);
        }
    }

    #[test]
    fn key_order_survives_merging() {
        let got = run(
            json!({"z": 1, "a": {"x": 1}, "m": 2, "d": 0}),
            json!({"a": {"y": 2}, "d": null}),
        )
        .unwrap();
        let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }

    #[test]
    fn element_order_interleaves_server_only_items() {
        let items = vec![json!("a"), json!("b"), json!("c"), json!("d")];
        let ordered = apply_order(items, &[json!("d"), json!("b")], None).unwrap();
        // Upstream's merge: a server-only item goes first while it sits earlier on the server
        // than the next ordered item.
        assert_eq!(ordered, [json!("a"), json!("c"), json!("d"), json!("b")]);
    }
}
