//! Objects as the kind's schema types them, as upstream's `typed` package compares them: where
//! a value sits in the kind's JSON schema or static merge metadata ([`Node`]), how its fields
//! are tracked there ([`Shape`]: atomic, struct, map, set, map list), the field set of an
//! object ([`fields_of`], for the [`Part`] a write covers), what changed between two sets
//! ([`compare`]) and, for a create, the `FieldsV1` trie of everything it wrote, built in one
//! walk ([`created_fields`]).
//!
//! Metadata the server owns (`name`, `uid`, `resourceVersion`, ...) is never in a set.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::defaulting::Fill;
use crate::merge::{Cursor, ListType, MapType, TypeInfo, Wrap};
use crate::schema::{JSONSchemaProps, JSONSchemaPropsOrBool};

use super::fieldpath::{Path, Set, Step, key_text};

/// Metadata fields the server sets, never owned by a manager.
const SERVER_META: &[&str] = &[
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// Where a value sits in the kind's schema, for its list and map semantics.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Node<'a> {
    /// A position in static merge metadata ([`Cursor::UNKNOWN`] when nothing is known:
    /// objects are granular, lists atomic).
    Static(Cursor),
    /// A JSON schema node; `true` at the kind's root.
    Schema(&'a JSONSchemaProps, bool),
}

/// How a value's fields are tracked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A scalar, or anything replaced as a whole: one member.
    Atomic,
    /// Named fields, each tracked on its own.
    Struct,
    /// Keys, each a member of its own.
    Map,
    /// Scalar items, each a member by value.
    Set,
    /// Object items, each a member by these key fields.
    ListMap(Vec<String>),
}

impl<'a> Node<'a> {
    /// The root node of a kind: its JSON schema when it has one, else its merge metadata.
    pub(crate) fn root(
        schema: Option<&'a JSONSchemaProps>,
        merge: Option<&'static TypeInfo>,
    ) -> Self {
        match schema {
            Some(schema) => Node::Schema(schema, true),
            None => Node::Static(Cursor::root(merge)),
        }
    }

    /// How `value` at this node is tracked.
    pub(crate) fn shape(self, value: &Value) -> Shape {
        match value {
            Value::Array(_) => self.list_shape(),
            Value::Object(_) => self.object_shape(),
            _ => Shape::Atomic,
        }
    }

    fn list_shape(self) -> Shape {
        match self {
            Node::Static(cursor) => match cursor.field() {
                Some(field) if cursor.container().is_none_or(|w| w == Wrap::List) => {
                    match field.list_type {
                        Some(ListType::Atomic) => Shape::Atomic,
                        Some(ListType::Set) => Shape::Set,
                        Some(ListType::Map) => Shape::ListMap(
                            field
                                .list_map_keys
                                .iter()
                                .map(|k| (*k).to_owned())
                                .collect(),
                        ),
                        None if field.patch_strategy_has("merge") => match field.patch_merge_key {
                            Some(key) => Shape::ListMap(vec![key.to_owned()]),
                            None => Shape::Set,
                        },
                        None => Shape::Atomic,
                    }
                }
                _ => Shape::Atomic,
            },
            Node::Schema(schema, _) => match schema.x_kubernetes_list_type.as_deref() {
                Some("set") => Shape::Set,
                Some("map") => Shape::ListMap(schema.x_kubernetes_list_map_keys.clone()),
                _ => Shape::Atomic,
            },
        }
    }

    fn object_shape(self) -> Shape {
        let atomic = |t: Option<MapType>| t == Some(MapType::Atomic);
        match self {
            Node::Static(cursor) => match cursor.container() {
                Some(Wrap::Map) if cursor.field().is_some_and(|f| atomic(f.map_type)) => {
                    Shape::Atomic
                }
                Some(Wrap::Map) => Shape::Map,
                Some(Wrap::List) => Shape::Struct,
                None => {
                    let own = cursor.ty().and_then(|t| t.map_type);
                    if atomic(own.or(cursor.field().and_then(|f| f.map_type))) {
                        Shape::Atomic
                    } else {
                        Shape::Struct
                    }
                }
            },
            Node::Schema(schema, _) => {
                if schema.x_kubernetes_map_type.as_deref() == Some("atomic") {
                    Shape::Atomic
                } else if schema.properties.is_empty()
                    && matches!(
                        schema.additional_properties.as_deref(),
                        Some(
                            JSONSchemaPropsOrBool::Schema(_) | JSONSchemaPropsOrBool::Allows(true)
                        )
                    )
                {
                    Shape::Map
                } else {
                    Shape::Struct
                }
            }
        }
    }

    /// Whether an object here is a struct whose fields are known from static merge
    /// metadata: upstream's typed objects always carry such a struct (Go value fields), so
    /// it is never "added" by a write on its own.
    fn typed_struct(self) -> bool {
        matches!(self, Node::Static(cursor) if cursor.container().is_none() && cursor.ty().is_some())
    }

    /// The node of a struct field or map key.
    pub(crate) fn child(self, key: &str) -> Node<'a> {
        match self {
            Node::Static(cursor) => Node::Static(cursor.child(key)),
            // A CRD's schema says no more of metadata than `type: object`.
            Node::Schema(_, true) if key == "metadata" => {
                Node::Static(Cursor::root(None).child(key))
            }
            Node::Schema(schema, _) => match schema.properties.get(key) {
                Some(props) => Node::Schema(props, false),
                None => schema
                    .additional_schema()
                    .map_or(Node::Static(Cursor::UNKNOWN), |p| Node::Schema(p, false)),
            },
        }
    }

    /// The default of the key field `key` of a map list item here, which upstream's merge
    /// fills in when an item leaves the key out: the item schema's `default`, or the item
    /// type's own default (a port's `protocol: TCP`).
    pub(crate) fn key_default(self, key: &str) -> Option<Value> {
        match self {
            Node::Static(cursor) => {
                let path = format!(".{key}");
                cursor.ty()?.defaults.iter().find_map(|d| match d.fill {
                    Fill::Json(json) if d.path == path && d.when.is_none() => {
                        serde_json::from_str(json).ok()
                    }
                    _ => None,
                })
            }
            Node::Schema(schema, _) => schema.properties.get(key)?.default.clone(),
        }
    }

    /// The node of a list item.
    pub(crate) fn item(self) -> Node<'a> {
        match self {
            Node::Static(cursor) => Node::Static(cursor.item()),
            Node::Schema(schema, _) => schema
                .items_schema()
                .map_or(Node::Static(Cursor::UNKNOWN), |p| Node::Schema(p, false)),
        }
    }
}

/// The step naming a list item at node `node` (the list's item node); `None` for items a key
/// cannot name. A key the item leaves out is named by its default, as upstream's merge does,
/// so an applied port without `protocol` is the live port with `protocol: TCP`.
pub(crate) fn item_step(shape: &Shape, item: &Value, node: Node<'_>) -> Option<Step> {
    match (shape, item) {
        (Shape::Set, _) => Some(Step::Value(item.to_string())),
        (Shape::ListMap(keys), Value::Object(map)) => {
            let mut found = Map::new();
            for key in keys {
                if let Some(v) = map.get(key).cloned().or_else(|| node.key_default(key)) {
                    found.insert(key.clone(), v);
                }
            }
            if found.is_empty() {
                None
            } else {
                Some(Step::Key(key_text(&found)))
            }
        }
        (Shape::ListMap(_), other) => Some(Step::Value(other.to_string())),
        _ => None,
    }
}

/// Which part of an object a write's field sets cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// Everything.
    Whole,
    /// Everything but `status` (the main resource of a kind with a status subresource).
    NoStatus,
    /// Only `status`.
    Status,
}

impl Part {
    /// Whether the object's top-level field `key` is in this part (`apiVersion` and `kind`
    /// never are).
    fn covers(self, key: &str) -> bool {
        match key {
            "apiVersion" | "kind" => false,
            "status" => self != Part::NoStatus,
            _ => self != Part::Status,
        }
    }
}

/// The part of an object a write through `subresource` covers, for a kind that has (or not)
/// a status subresource.
pub(crate) fn part_of(has_status: bool, subresource: &str) -> Part {
    match subresource {
        "status" => Part::Status,
        _ if has_status => Part::NoStatus,
        _ => Part::Whole,
    }
}

/// An object's field set as a write compares it.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    /// The members, each with its value when it is compared as one (scalars, atomic values,
    /// empty objects and lists) and `None` for list items and map entries with members
    /// below them.
    members: BTreeMap<Path, Option<Value>>,
    /// The nodes with members below them (granular objects, non-empty sets and map lists),
    /// `true` for a struct field whose type the merge metadata knows: upstream's typed
    /// objects hold those as Go values, present whenever their parent is.
    interior: BTreeMap<Path, bool>,
}

/// The metadata fields a manager can own: all but those the server sets.
fn owned_metadata(meta: &Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    meta.iter()
        .filter(|(field, _)| !SERVER_META.contains(&field.as_str()))
}

/// The field set of an object.
pub(crate) fn fields_of(object: &Value, root: Node<'_>, part: Part) -> Fields {
    let mut out = Collected::default();
    let Value::Object(map) = object else {
        return Fields::default();
    };
    let mut path = Vec::new();
    for (key, value) in map {
        if !part.covers(key) {
            continue;
        }
        path.push(Step::Field(key.as_str().into()));
        if key == "metadata" {
            // Upstream strips `metadata` itself, like the fields the server owns.
            if let Value::Object(meta) = value {
                let node = root.child("metadata");
                for (field, v) in owned_metadata(meta) {
                    path.push(Step::Field(field.as_str().into()));
                    member(v, node.child(field), &mut path, &mut out, false);
                    path.pop();
                }
            }
        } else {
            member(value, root.child(key), &mut path, &mut out, false);
        }
        path.pop();
    }
    out.into_fields()
}

/// A field set as [`member`] finds it, in the order it finds it. Sorting once and building
/// the maps from the sorted entries is cheaper than inserting each entry; a path found twice
/// (items with the same keys) keeps its last entry, as inserting it twice would.
#[derive(Default)]
struct Collected {
    members: Vec<(Path, Option<Value>)>,
    interior: Vec<(Path, bool)>,
}

impl Collected {
    fn into_fields(self) -> Fields {
        Fields {
            members: self.members.into_iter().collect(),
            interior: self.interior.into_iter().collect(),
        }
    }
}

/// Collects the members at and below `value`; `entry` marks a map entry or list item, which
/// is a member even when it only holds other members.
fn member(value: &Value, node: Node<'_>, path: &mut Path, out: &mut Collected, entry: bool) {
    let shape = node.shape(value);
    let empty = match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    match (&shape, value) {
        (Shape::Struct | Shape::Map, Value::Object(map)) if !empty => {
            let entries = shape == Shape::Map;
            for (key, v) in map {
                path.push(Step::Field(key.as_str().into()));
                member(v, node.child(key), path, out, entries);
                path.pop();
            }
            if entry {
                out.members.push((path.clone(), None));
            }
            out.interior
                .push((path.clone(), !entry && node.typed_struct()));
        }
        (Shape::Set | Shape::ListMap(_), Value::Array(items)) if !items.is_empty() => {
            let item_node = node.item();
            for item in items {
                let Some(step) = item_step(&shape, item, item_node) else {
                    continue;
                };
                path.push(step);
                match (&shape, item) {
                    (Shape::ListMap(_), Value::Object(_)) => {
                        member(item, item_node, path, out, true);
                    }
                    _ => {
                        out.members.push((path.clone(), Some(item.clone())));
                    }
                }
                path.pop();
            }
            out.interior.push((path.clone(), false));
        }
        _ => {
            out.members.push((path.clone(), Some(value.clone())));
        }
    }
}

/// The `FieldsV1` trie of what creating `object` changes: the same set as
/// `encode_set(&compare(&Fields::default(), fields_of(object, root, part)).changed())`, built
/// in one walk over the object without a path per member. A create is the common write, and
/// the paths, their sorting and the comparison against nothing cost it more than the rest of
/// its field tracking.
pub(crate) fn created_fields(object: &Value, root: Node<'_>, part: Part) -> Map<String, Value> {
    let Value::Object(map) = object else {
        return Map::new();
    };
    let mut children = Vec::new();
    for (key, value) in map {
        if !part.covers(key) {
            continue;
        }
        let step = Step::Field(key.as_str().into());
        if key == "metadata" {
            // `metadata` itself is never a node of the set (see `fields_of`), so nothing
            // below it is implied by it.
            let Value::Object(meta) = value else {
                continue;
            };
            let node = root.child("metadata");
            let mut below = Vec::new();
            for (field, v) in owned_metadata(meta) {
                if let Some(trie) = created_node(v, node.child(field), false, false) {
                    below.push((Step::Field(field.as_str().into()), trie));
                }
            }
            if !below.is_empty() {
                children.push((step, trie_of(false, below)));
            }
        } else if let Some(trie) = created_node(value, root.child(key), false, true) {
            children.push((step, trie));
        }
    }
    trie_of(false, children)
}

/// The trie below one value of a created object, as [`member`] and [`compare`] would find
/// it; `None` when nothing at or below it is in the set. `entry` marks a map entry or list
/// item (a member itself), `implied` whether the parent exists in any object of the kind (a
/// chain of typed structs from the root): a typed struct below such a parent is not one the
/// create added.
fn created_node(
    value: &Value,
    node: Node<'_>,
    entry: bool,
    implied: bool,
) -> Option<Map<String, Value>> {
    let shape = node.shape(value);
    match (&shape, value) {
        (Shape::Struct | Shape::Map, Value::Object(map)) if !map.is_empty() => {
            let entries = shape == Shape::Map;
            let implied = implied && !entry && node.typed_struct();
            let children = map
                .iter()
                .filter_map(|(key, v)| {
                    let trie = created_node(v, node.child(key), entries, implied)?;
                    Some((Step::Field(key.as_str().into()), trie))
                })
                .collect();
            let member = entry || !implied;
            Some(trie_of(member, children)).filter(|t| member || !t.is_empty())
        }
        (Shape::Set | Shape::ListMap(_), Value::Array(items)) if !items.is_empty() => {
            let item_node = node.item();
            let children = items
                .iter()
                .filter_map(|item| {
                    let step = item_step(&shape, item, item_node)?;
                    let trie = match (&shape, item) {
                        (Shape::ListMap(_), Value::Object(_)) => {
                            created_node(item, item_node, true, false)?
                        }
                        _ => Map::new(),
                    };
                    Some((step, trie))
                })
                .collect();
            Some(trie_of(true, children))
        }
        _ => Some(Map::new()),
    }
}

/// A trie node from its children in any order: sorted as a set's paths sort, children under
/// one step (list items with the same keys) merged, and `"."` first when the node is a member
/// with members below it.
fn trie_of(member: bool, mut children: Vec<(Step, Map<String, Value>)>) -> Map<String, Value> {
    children.sort_by(|a, b| a.0.cmp(&b.0));
    let mut map = Map::new();
    if member && !children.is_empty() {
        map.insert(".".into(), Value::Object(Map::new()));
    }
    let mut children = children.into_iter().peekable();
    while let Some((step, mut trie)) = children.next() {
        while let Some((_, same)) = children.next_if(|(next, _)| *next == step) {
            trie = merged(trie, same);
        }
        map.insert(step.encode(), Value::Object(trie));
    }
    map
}

/// The union of two tries: a node is a member when either says so (an empty trie is a member
/// leaf, one with members below marks itself with `"."`).
fn merged(a: Map<String, Value>, b: Map<String, Value>) -> Map<String, Value> {
    let is_member = |t: &Map<String, Value>| t.is_empty() || t.contains_key(".");
    let member = is_member(&a) || is_member(&b);
    let children = a
        .into_iter()
        .chain(b)
        .filter_map(|(key, value)| match value {
            Value::Object(trie) if key != "." => Some((Step::decode(&key)?, trie)),
            _ => None,
        })
        .collect();
    trie_of(member, children)
}

impl Fields {
    /// Whether the node at `path` exists here, or is implied by its parent: a typed struct
    /// field (as `other` saw it) exists whenever its parent does, as upstream's Go values do.
    fn has_node(&self, path: &[Step], other: &Fields) -> bool {
        let Some((_, parent)) = path.split_last() else {
            return true;
        };
        self.members.contains_key(path)
            || self.interior.contains_key(path)
            || (other.interior.get(path) == Some(&true) && self.has_node(parent, other))
    }
}

/// The members of a field set.
pub(crate) fn members(fields: &Fields) -> Set {
    fields.members.keys().cloned().collect()
}

/// What changed between two field sets.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Members only in the new object, and the nodes with members below them that the
    /// write added (upstream's `"."` entries).
    pub(crate) added: Set,
    /// Members in both whose values differ.
    pub(crate) modified: Set,
    /// Members only in the old object, and the nodes with members below them that the
    /// write removed.
    pub(crate) removed: Set,
}

impl Comparison {
    /// Added and modified members: what a write changed.
    pub(crate) fn changed(&self) -> Set {
        self.added.union(&self.modified).cloned().collect()
    }

    /// What a write changed ([`Comparison::changed`]) and what it removed, without copying
    /// the paths.
    pub(crate) fn into_changed(self) -> (Set, Set) {
        let Comparison {
            mut added,
            mut modified,
            removed,
        } = self;
        added.append(&mut modified);
        (added, removed)
    }
}

/// Compares an object's field set before and after a write, as upstream's typed comparison
/// does: besides the members, a granular node the write created or dropped as a whole is
/// added or removed itself. The new set's paths move into the comparison.
pub(crate) fn compare(old: &Fields, new: Fields) -> Comparison {
    // Each set is built from sorted runs of paths, which is cheaper than inserting each.
    let (mut added, mut modified, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for path in old.members.keys() {
        if !new.members.contains_key(path) && !new.interior.contains_key(path) {
            removed.push(path.clone());
        }
    }
    for path in old.interior.keys() {
        if !new.has_node(path, old) {
            removed.push(path.clone());
        }
    }
    for path in new.interior.keys() {
        if !old.has_node(path, &new) {
            added.push(path.clone());
        }
    }
    for (path, value) in new.members {
        match old.members.get(&path) {
            // A node that only lost what was below it is still there.
            None if old.interior.contains_key(&path) => {}
            None => added.push(path),
            Some(before) if *before != value => modified.push(path),
            Some(_) => {}
        }
    }
    Comparison {
        added: added.into_iter().collect(),
        modified: modified.into_iter().collect(),
        removed: removed.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::field;
    use crate::server::handlers::managed_fields::fieldpath::{Display, encode_set};
    use serde_json::json;

    static CONTAINER: TypeInfo =
        TypeInfo::new(&[field("ports").list_map(&["containerPort", "protocol"])]);
    static SPEC: TypeInfo = TypeInfo::new(&[
        field("containers")
            .strategy("merge")
            .merge_key("name")
            .items(&CONTAINER),
        field("tags").set(),
        field("selector").atomic_map(),
        field("volumes").values(&CONTAINER),
    ]);
    static ROOT: TypeInfo = TypeInfo::new(&[field("spec").of(&SPEC)]);

    fn set_of(value: &Value) -> Value {
        encode_set(&members(&fields_of(
            value,
            Node::root(None, Some(&ROOT)),
            Part::Whole,
        )))
    }

    #[test]
    fn field_sets_follow_list_and_map_semantics() {
        let object = json!({
            "apiVersion": "v1", "kind": "X",
            "metadata": {"name": "a", "uid": "u", "labels": {"app": "x"}, "finalizers": ["f"]},
            "spec": {
                "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                "tags": ["t"],
                "selector": {"a": "b"},
                "atomicList": [1, 2],
                "volumes": {"v": {"x": 1}},
                "empty": {},
            }
        });
        assert_eq!(
            set_of(&object),
            json!({
                "f:metadata": {"f:finalizers": {"v:\"f\"": {}}, "f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:atomicList": {},
                    "f:containers": {"k:{\"name\":\"c\"}": {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:protocol": {}
                        }}
                    }},
                    "f:empty": {},
                    "f:selector": {},
                    "f:tags": {"v:\"t\"": {}},
                    "f:volumes": {"f:v": {".": {}, "f:x": {}}},
                }
            })
        );
    }

    #[test]
    fn comparisons_find_added_modified_and_removed() {
        let root = Node::root(None, Some(&ROOT));
        let old = fields_of(
            &json!({"spec": {"a": 1, "b": 2, "tags": ["x"]}}),
            root,
            Part::Whole,
        );
        let new = fields_of(
            &json!({"spec": {"a": 1, "b": 3, "tags": ["y"]}}),
            root,
            Part::Whole,
        );
        let c = compare(&old, new);
        let show = |s: &Set| s.iter().map(|p| Display(p).to_string()).collect::<Vec<_>>();
        assert_eq!(show(&c.modified), [".spec.b"]);
        assert_eq!(show(&c.added), [r#".spec.tags[="y"]"#]);
        assert_eq!(show(&c.removed), [r#".spec.tags[="x"]"#]);
    }

    #[test]
    fn comparisons_add_and_remove_the_granular_nodes_a_write_makes_whole() {
        static TYPED_SPEC: TypeInfo = TypeInfo::new(&[field("tags").set()]);
        static TYPED: TypeInfo = TypeInfo::new(&[field("spec").of(&TYPED_SPEC)]);
        let typed = Node::root(None, Some(&TYPED));
        let plain = Node::root(None, None);
        let changed = |node: Node<'_>, old: Value, new: Value| {
            let c = compare(
                &fields_of(&old, node, Part::Whole),
                fields_of(&new, node, Part::Whole),
            );
            (encode_set(&c.changed()), encode_set(&c.removed))
        };
        // (root, old, new, changed, removed)
        let rows = [
            // A create: maps and untyped objects get ".", typed structs do not.
            (
                typed,
                json!({}),
                json!({"metadata": {"labels": {"app": "x"}}, "spec": {"tags": ["a"], "opt": {"x": 1}}}),
                json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                       "f:spec": {"f:opt": {".": {}, "f:x": {}}, "f:tags": {".": {}, "v:\"a\"": {}}}}),
                json!({}),
            ),
            (
                plain,
                json!({}),
                json!({"spec": {"a": 1}}),
                json!({"f:spec": {".": {}, "f:a": {}}}),
                json!({}),
            ),
            // A node that existed keeps no "." in the change.
            (
                plain,
                json!({"data": {"a": "1"}}),
                json!({"data": {"a": "2", "b": "3"}}),
                json!({"f:data": {"f:a": {}, "f:b": {}}}),
                json!({}),
            ),
            // Dropping a map as a whole removes the node too.
            (
                plain,
                json!({"data": {"a": "1"}, "keep": 1}),
                json!({"keep": 1}),
                json!({}),
                json!({"f:data": {".": {}, "f:a": {}}}),
            ),
            // A typed struct inside a new object is new as well.
            (
                typed,
                json!({"x": 1}),
                json!({"x": 1, "spec": {"tags": ["a"]}}),
                json!({"f:spec": {"f:tags": {".": {}, "v:\"a\"": {}}}}),
                json!({}),
            ),
        ];
        for (node, old, new, want_changed, want_removed) in rows {
            let (got_changed, got_removed) = changed(node, old.clone(), new.clone());
            assert_eq!(got_changed, want_changed, "{old} -> {new}");
            assert_eq!(got_removed, want_removed, "{old} -> {new}");
        }
    }

    /// Objects over the field names the test types know, with list items that share keys.
    fn object() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop::sample::select(
            &[
                "metadata",
                "spec",
                "status",
                "labels",
                "finalizers",
                "uid",
                "containers",
                "name",
                "image",
                "ports",
                "containerPort",
                "protocol",
                "tags",
                "selector",
                "volumes",
                "x",
                "opt",
            ][..],
        );
        let scalar = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0..3i64).prop_map(Value::from),
            prop::sample::select(&["a", "b", "TCP"][..]).prop_map(Value::from),
        ];
        scalar.prop_recursive(4, 48, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(key.clone(), inner, 0..4).prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    /// Asserts that a create's trie built in one walk is the set the general comparison
    /// finds, for every kind of root and part.
    fn assert_created_fields_as_compared(value: &Value) {
        let schema: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "containers": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"ports": {"type": "array",
                        "x-kubernetes-list-type": "set", "items": {"type": "integer"}}}}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
                "volumes": {"type": "object", "additionalProperties": {"type": "object"}},
            }}},
        }))
        .unwrap();
        let roots = [
            Node::root(None, Some(&ROOT)),
            Node::root(None, None),
            Node::root(Some(&schema), None),
        ];
        for root in roots {
            for part in [Part::Whole, Part::NoStatus, Part::Status] {
                let want = compare(&Fields::default(), fields_of(value, root, part)).changed();
                let got = Value::Object(created_fields(value, root, part));
                // Compared as text: a trie's key order is part of what is stored.
                assert_eq!(got.to_string(), encode_set(&want).to_string(), "{value}");
            }
        }
    }

    #[test]
    fn created_fields_merge_items_with_the_same_keys() {
        assert_created_fields_as_compared(&json!({"spec": {
            "containers": [
                {"name": "c", "image": "i"},
                {"name": "c", "ports": [{"containerPort": 1}], "x": {"a": 1}},
                {"name": "c", "x": {"b": 2}},
                {"name": "d"},
            ],
            "tags": ["a", "a", "b"],
        }}));
    }

    proptest::proptest! {
        #[test]
        fn created_fields_are_what_a_comparison_against_nothing_finds(value in object()) {
            assert_created_fields_as_compared(&value);
        }
    }
}
