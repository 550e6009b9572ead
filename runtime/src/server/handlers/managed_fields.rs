// Over the server's 800-line bound: field sets, the schema walk that builds them and the
// conflict and ownership rules share the private set types; a split along those lines is left
// for a later change.
//! Field ownership (`metadata.managedFields`), as upstream's field manager keeps it: which
//! manager set which field, recorded per manager and operation in the `FieldsV1` trie format.
//!
//! - Field sets follow the kind's list and map semantics: a [`Node`] walks the kind's JSON
//!   schema when it was registered with one (the `x-kubernetes-list-type`, `-list-map-keys`
//!   and `-map-type` of CRD and derived schemas), otherwise its static merge metadata
//!   ([`crate::merge`]), where a `patchStrategy: merge` list without a list type counts as a
//!   map keyed by its merge key (a set for scalars). Unannotated lists are atomic, objects
//!   granular.
//! - Every write that is not an apply records an `Update` entry for its manager ([`track`]):
//!   the `fieldManager` option, or the User-Agent up to its first `/`. The manager takes the
//!   fields it changed from everyone else; removed fields leave every set. Managed fields
//!   written by the client replace the stored ones, `[{}]` clears them (and, as upstream, an
//!   object without managed fields is not tracked until the next apply), `[]` changes nothing.
//! - Apply (`patch::apply`) uses the same sets, comparisons and encoding.
//!
//! - An `Update` entry also owns the granular nodes (maps, structs, sets, map lists) its
//!   write created as a whole, as upstream's typed comparison adds them: `f:labels:
//!   {".": {}, f:app: {}}`. Struct fields the static merge metadata types (`spec`,
//!   `template`, ...) count as present whenever their parent is, as upstream's Go values are,
//!   so a created Deployment's `f:spec` carries no `"."` while a custom resource's does.
//! - Client-written entries that do not decode (an operation other than `Apply`/`Update`, no
//!   `apiVersion`, a `fieldsType` other than `FieldsV1`, a malformed trie) are ignored and the
//!   stored ones kept, as upstream's decoding falls back to the live object; a manager name
//!   over 128 bytes or with unprintable characters, or a subresource over 256 bytes, is a 422
//!   (upstream's `ValidateManagedFields`).
//! - Beyond ten `Update` entries the oldest merge into one `ancient-changes` bucket per
//!   version ([`cap`]).
//!
//! Metadata the server owns (`name`, `uid`, `resourceVersion`, ...) is never in a set, nor is
//! `status` for writes to the main resource of a kind with a status subresource, nor anything
//! but `status` for writes to `/status`.
//!
//! Known gaps against upstream:
//! - Sets are not converted between API versions: an entry recorded through one version keeps
//!   that version's paths, and a field renamed between versions is owned under both names.
//! - Static merge metadata carries no defaults, so a map-list key left out of an item is not
//!   defaulted into its key (upstream's `k:{"containerPort":80,"protocol":"TCP"}` is
//!   `k:{"containerPort":80}` here), and only `protocol` counts as a key with a default when
//!   an apply configuration leaves one out.
//! - Which typed struct fields exist in an empty object is guessed from the merge metadata
//!   (every linked struct field is a Go value); a linked pointer field upstream would show
//!   with `"."` when created.
//! - Live lists with repeated keys keep the repeats as they are; upstream treats such a list
//!   as atomic in some versions.
//! - A manager that drops `spec.replicas` from an apply through `/scale` gives up ownership,
//!   but the value stays.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::merge::{Cursor, ListType, MapType, TypeInfo, Wrap};
use crate::meta::{CauseType, Status, StatusCause, StatusDetails, StatusReason};
use crate::schema::{JSONSchemaProps, JSONSchemaPropsOrBool};
use crate::time::Time;

use crate::server::Call;
use crate::server::http::error::ApiError;

/// Upstream's limit on a field manager's length, in bytes.
const MAX_MANAGER_BYTES: usize = 128;

/// How many `Update` entries an object keeps before the oldest merge into one.
const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager the oldest `Update` entries merge into beyond [`MAX_UPDATE_MANAGERS`].
const ANCIENT_CHANGES: &str = "ancient-changes";

/// The manager that owns the fields of an object without managed fields at its first apply.
pub(crate) const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The operation of an apply entry.
pub(crate) const APPLY: &str = "Apply";
/// The operation of every other write's entry.
pub(crate) const UPDATE: &str = "Update";

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

/// One step of a field path (`fieldpath.PathElement`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Step {
    /// A struct field or map key: `f:<name>`.
    Field(String),
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
    fn encode(&self) -> String {
        match self {
            Step::Field(name) => format!("f:{name}"),
            Step::Key(keys) => format!("k:{keys}"),
            Step::Value(value) => format!("v:{value}"),
            Step::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(text: &str) -> Option<Step> {
        let (kind, rest) = text.split_at_checked(2)?;
        match kind {
            "f:" => Some(Step::Field(rest.to_owned())),
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
fn key_text(keys: &Map<String, Value>) -> String {
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
    #[derive(Default)]
    struct Trie {
        member: bool,
        children: BTreeMap<Step, Trie>,
    }
    fn render(trie: &Trie) -> Value {
        let mut map = Map::new();
        if trie.member && !trie.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (step, child) in &trie.children {
            map.insert(step.encode(), render(child));
        }
        Value::Object(map)
    }
    let mut root = Trie::default();
    for path in set {
        let mut node = &mut root;
        for step in path {
            node = node.children.entry(step.clone()).or_default();
        }
        node.member = true;
    }
    render(&root)
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

    /// Whether the key field `key` of a map list item here has a default: the item schema's
    /// `default`, or for static merge metadata (which carries no defaults) upstream's
    /// built-in `protocol: TCP` of ports.
    pub(crate) fn key_has_default(self, key: &str) -> bool {
        match self {
            Node::Static(_) => key == "protocol",
            Node::Schema(schema, _) => schema
                .properties
                .get(key)
                .is_some_and(|p| p.default.is_some()),
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

/// The step naming a list item; `None` for items a key cannot name.
pub(crate) fn item_step(shape: &Shape, item: &Value) -> Option<Step> {
    match (shape, item) {
        (Shape::Set, _) => Some(Step::Value(item.to_string())),
        (Shape::ListMap(keys), Value::Object(map)) => {
            let mut found = Map::new();
            for key in keys {
                if let Some(v) = map.get(key) {
                    found.insert(key.clone(), v.clone());
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

/// The field set of an object.
pub(crate) fn fields_of(object: &Value, root: Node<'_>, part: Part) -> Fields {
    let mut out = Fields::default();
    let Value::Object(map) = object else {
        return out;
    };
    let mut path = Vec::new();
    for (key, value) in map {
        let keep = match key.as_str() {
            "apiVersion" | "kind" => false,
            "status" => part != Part::NoStatus,
            _ => part != Part::Status,
        };
        if !keep {
            continue;
        }
        path.push(Step::Field(key.clone()));
        if key == "metadata" {
            // Upstream strips `metadata` itself, like the fields the server owns.
            if let Value::Object(meta) = value {
                let node = root.child("metadata");
                for (field, v) in meta {
                    if SERVER_META.contains(&field.as_str()) {
                        continue;
                    }
                    path.push(Step::Field(field.clone()));
                    member(v, node.child(field), &mut path, &mut out, false);
                    path.pop();
                }
            }
        } else {
            member(value, root.child(key), &mut path, &mut out, false);
        }
        path.pop();
    }
    out
}

/// Collects the members at and below `value`; `entry` marks a map entry or list item, which
/// is a member even when it only holds other members.
fn member(value: &Value, node: Node<'_>, path: &mut Path, out: &mut Fields, entry: bool) {
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
                path.push(Step::Field(key.clone()));
                member(v, node.child(key), path, out, entries);
                path.pop();
            }
            if entry {
                out.members.insert(path.clone(), None);
            }
            out.interior
                .insert(path.clone(), !entry && node.typed_struct());
        }
        (Shape::Set | Shape::ListMap(_), Value::Array(items)) if !items.is_empty() => {
            let item_node = node.item();
            for item in items {
                let Some(step) = item_step(&shape, item) else {
                    continue;
                };
                path.push(step);
                match (&shape, item) {
                    (Shape::ListMap(_), Value::Object(_)) => {
                        member(item, item_node, path, out, true);
                    }
                    _ => {
                        out.members.insert(path.clone(), Some(item.clone()));
                    }
                }
                path.pop();
            }
            out.interior.insert(path.clone(), false);
        }
        _ => {
            out.members.insert(path.clone(), Some(value.clone()));
        }
    }
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
}

/// Compares an object's field set before and after a write, as upstream's typed comparison
/// does: besides the members, a granular node the write created or dropped as a whole is
/// added or removed itself.
pub(crate) fn compare(old: &Fields, new: &Fields) -> Comparison {
    let mut out = Comparison::default();
    for (path, value) in &new.members {
        match old.members.get(path) {
            // A node that only lost what was below it is still there.
            None if old.interior.contains_key(path) => {}
            None => {
                out.added.insert(path.clone());
            }
            Some(before) if before != value => {
                out.modified.insert(path.clone());
            }
            Some(_) => {}
        }
    }
    for path in old.members.keys() {
        if !new.members.contains_key(path) && !new.interior.contains_key(path) {
            out.removed.insert(path.clone());
        }
    }
    for path in new.interior.keys() {
        if !old.has_node(path, new) {
            out.added.insert(path.clone());
        }
    }
    for path in old.interior.keys() {
        if !new.has_node(path, old) {
            out.removed.insert(path.clone());
        }
    }
    out
}

/// One manager's entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: String,
    pub(crate) api_version: String,
    pub(crate) time: Option<String>,
    pub(crate) subresource: String,
    pub(crate) fields: Set,
}

impl Entry {
    /// A new entry with no fields.
    pub(crate) fn new(
        manager: &str,
        operation: &str,
        api_version: &str,
        subresource: &str,
    ) -> Self {
        Entry {
            manager: manager.to_owned(),
            operation: operation.to_owned(),
            api_version: api_version.to_owned(),
            time: None,
            subresource: subresource.to_owned(),
            fields: Set::new(),
        }
    }

    /// Whether this entry has `other`'s identity, upstream's manager identifier: same
    /// manager, operation and subresource, and for updates the same version (an applier
    /// keeps one entry across versions).
    pub(crate) fn same_identity(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == APPLY || self.api_version == other.api_version)
    }

    /// Stamps the entry with the current time.
    pub(crate) fn touch(&mut self) {
        self.time = serde_json::to_value(Time::now())
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned));
    }

    /// How upstream names this manager in a conflict: `"name"`, with the subresource and,
    /// for an update, the version.
    pub(crate) fn describe(&self) -> String {
        let mut text = Value::from(self.manager.as_str()).to_string();
        if !self.subresource.is_empty() {
            text.push_str(&format!(
                " with subresource {}",
                Value::from(self.subresource.as_str())
            ));
        }
        if self.operation == UPDATE {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }
}

/// Why stored managed fields could not be read.
#[derive(Debug)]
pub(crate) struct Undecodable;

/// The entries of a `managedFields` value (absent or null: none).
pub(crate) fn decode(value: Option<&Value>) -> Result<Vec<Entry>, Undecodable> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(Undecodable),
    };
    let text = |item: &Map<String, Value>, key: &str| -> Result<String, Undecodable> {
        match item.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(Undecodable),
        }
    };
    let mut entries = Vec::new();
    for item in items {
        let Value::Object(item) = item else {
            return Err(Undecodable);
        };
        let fields_type = text(item, "fieldsType")?;
        let fields = match item.get("fieldsV1") {
            None | Some(Value::Null) => Set::new(),
            Some(v) => decode_set(v).ok_or(Undecodable)?,
        };
        // Upstream's decoding refuses these, and the write keeps the stored entries.
        if fields_type != "FieldsV1" {
            return Err(Undecodable);
        }
        let operation = text(item, "operation")?;
        let api_version = text(item, "apiVersion")?;
        if (operation != APPLY && operation != UPDATE) || api_version.is_empty() {
            return Err(Undecodable);
        }
        entries.push(Entry {
            manager: text(item, "manager")?,
            operation,
            api_version,
            time: Some(text(item, "time")?).filter(|t| !t.is_empty()),
            subresource: text(item, "subresource")?,
            fields,
        });
    }
    Ok(entries)
}

/// The `managedFields` value of these entries, empty ones dropped, sorted as upstream sorts
/// them: appliers first, then by time, manager, version and subresource.
pub(crate) fn encode(entries: &[Entry]) -> Vec<Value> {
    let mut kept: Vec<&Entry> = entries.iter().filter(|e| !e.fields.is_empty()).collect();
    kept.sort_by(|a, b| {
        (b.operation == APPLY)
            .cmp(&(a.operation == APPLY))
            .then_with(|| seconds(a).cmp(&seconds(b)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    kept.into_iter()
        .map(|e| {
            let mut map = Map::new();
            map.insert("manager".into(), Value::from(e.manager.as_str()));
            map.insert("operation".into(), Value::from(e.operation.as_str()));
            map.insert("apiVersion".into(), Value::from(e.api_version.as_str()));
            if let Some(time) = &e.time {
                map.insert("time".into(), Value::from(time.as_str()));
            }
            map.insert("fieldsType".into(), Value::from("FieldsV1"));
            map.insert("fieldsV1".into(), encode_set(&e.fields));
            if !e.subresource.is_empty() {
                map.insert("subresource".into(), Value::from(e.subresource.as_str()));
            }
            Value::Object(map)
        })
        .collect()
}

/// An entry's time in seconds since the epoch (0 without one), for ordering.
fn seconds(entry: &Entry) -> i64 {
    entry
        .time
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, |t| t.as_second())
}

/// Whether an entry is the `ancient-changes` bucket of `version`.
fn is_bucket(entry: &Entry, version: &str) -> bool {
    entry.manager == ANCIENT_CHANGES
        && entry.operation == UPDATE
        && entry.subresource.is_empty()
        && entry.api_version == version
}

/// Merges the oldest `Update` entries into one `ancient-changes` bucket per version until at
/// most [`MAX_UPDATE_MANAGERS`] remain, as upstream caps them: the oldest entry of a version
/// stays unless the version has no bucket yet (it becomes the bucket), every later one
/// merges into the bucket, which takes the time of the last entry merged.
pub(crate) fn cap(entries: &mut Vec<Entry>) {
    let mut updaters: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].operation != APPLY && !entries[i].fields.is_empty())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|&a, &b| {
        seconds(&entries[a])
            .cmp(&seconds(&entries[b]))
            .then_with(|| entries[a].manager.cmp(&entries[b].manager))
    });
    let mut remaining = updaters.len();
    let mut first_of_version: BTreeMap<String, usize> = BTreeMap::new();
    let mut gone = BTreeSet::new();
    for &i in &updaters {
        if remaining <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = entries[i].api_version.clone();
        let Some(&first) = first_of_version.get(&version) else {
            first_of_version.insert(version, i);
            continue;
        };
        if is_bucket(&entries[i], &version) {
            // Already the bucket: nothing to merge it into.
            continue;
        }
        let bucket = match (0..entries.len())
            .find(|&b| !gone.contains(&b) && is_bucket(&entries[b], &version))
        {
            Some(bucket) => bucket,
            None => {
                let bucket = &mut entries[first];
                bucket.manager = ANCIENT_CHANGES.to_owned();
                bucket.subresource = String::new();
                first
            }
        };
        let moved = std::mem::take(&mut entries[i].fields);
        let time = entries[i].time.clone();
        entries[bucket].fields.extend(moved);
        entries[bucket].time = time;
        gone.insert(i);
        remaining -= 1;
    }
    let mut index = 0;
    entries.retain(|_| {
        let keep = !gone.contains(&index);
        index += 1;
        keep
    });
}

/// The field manager of a write that is not an apply: the `fieldManager` option, or else the
/// User-Agent up to its first `/`, printable characters only, cut at 128 bytes.
pub(crate) fn manager_of(call: &Call, options_kind: &str) -> Result<String, ApiError> {
    #[derive(serde::Deserialize)]
    struct Query {
        #[serde(rename = "fieldManager", default)]
        field_manager: Option<String>,
    }
    let query: Query = call.query()?;
    match query.field_manager.filter(|m| !m.is_empty()) {
        Some(manager) => {
            check_manager(&manager, options_kind)?;
            Ok(manager)
        }
        None => {
            let agent = call
                .headers
                .get(axum::http::header::USER_AGENT)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default();
            Ok(from_user_agent(&agent))
        }
    }
}

/// Upstream's default manager for a User-Agent.
pub(crate) fn from_user_agent(agent: &str) -> String {
    let prefix = agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_MANAGER_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

/// Upstream's checks of a manager name at `field`: at most 128 bytes, printable characters
/// only.
fn manager_causes(manager: &str, field: &str) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if manager.len() > MAX_MANAGER_BYTES {
        causes.push(StatusCause::new(
            CauseType::FieldValueTooLong,
            field,
            format!("Too long: may not be more than {MAX_MANAGER_BYTES} bytes"),
        ));
    }
    for (at, c) in manager.char_indices() {
        // Go's unicode.IsPrint: no control characters and no spaces but ASCII's.
        if c.is_control() || (c.is_whitespace() && c != ' ') {
            causes.push(StatusCause::invalid(
                field,
                &Value::from(manager),
                &format!(
                    "invalid character U+{:04X} (at position {at})",
                    u32::from(c)
                ),
            ));
        }
    }
    causes
}

/// A `fieldManager` option must be at most 128 bytes of printable characters (422 on the
/// options kind otherwise).
pub(crate) fn check_manager(manager: &str, options_kind: &str) -> Result<(), ApiError> {
    let causes = manager_causes(manager, "fieldManager");
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("meta.k8s.io", options_kind, "", causes))
    }
}

/// Upstream's limit on an entry's subresource, in bytes.
const MAX_SUBRESOURCE_BYTES: usize = 256;

/// Upstream's `ValidateManagedFields` of the entries an object is written with (422 on the
/// kind). Entries that do not decode never get here: the write keeps the stored ones, so
/// what is left to refuse are managers and subresources a client named.
fn validate(call: &Call, object: &Value) -> Result<(), ApiError> {
    let Some(Value::Array(items)) = managed_value(object) else {
        return Ok(());
    };
    let mut causes = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("metadata.managedFields[{i}]");
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or("");
        match text("operation") {
            APPLY | UPDATE => {}
            other => causes.push(StatusCause::invalid(
                format!("{at}.operation"),
                &Value::from(other),
                "must be `Apply` or `Update`",
            )),
        }
        let fields_type = text("fieldsType");
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            causes.push(StatusCause::invalid(
                format!("{at}.fieldsType"),
                &Value::from(fields_type),
                "must be `FieldsV1`",
            ));
        }
        causes.extend(manager_causes(text("manager"), &format!("{at}.manager")));
        if text("subresource").len() > MAX_SUBRESOURCE_BYTES {
            causes.push(StatusCause::new(
                CauseType::FieldValueTooLong,
                format!("{at}.subresource"),
                format!("Too long: may not be more than {MAX_SUBRESOURCE_BYTES} bytes"),
            ));
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let info = call.info();
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::invalid(
        &info.gvk.group,
        &info.gvk.kind,
        name,
        causes,
    ))
}

/// Who makes a write and through which subresource.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    /// The field manager.
    pub(crate) manager: String,
    /// `status`, `scale`, or empty for the main resource.
    pub(crate) subresource: String,
}

/// `metadata.managedFields` of an object.
fn managed_value(object: &Value) -> Option<&Value> {
    object.get("metadata")?.get("managedFields")
}

/// Whether a written `managedFields` asks for a reset: exactly one empty entry.
fn is_reset(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Array(items)) if items.len() == 1 && items[0] == Value::Object(Map::new()))
}

/// Writes `entries` (capped, empty ones dropped) into the object's metadata; no entries
/// remove the field.
pub(crate) fn store(object: &mut Value, entries: &mut Vec<Entry>) {
    cap(entries);
    let encoded = encode(entries);
    let meta = crate::server::objects::json::meta_mut(object);
    if encoded.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(encoded));
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

/// Records a write that is not an apply in `next`'s managed fields: `live` is the object
/// before it (`None` for a create). See the module docs for the rules. Managed fields a
/// client wrote that upstream's validation refuses are a 422.
pub(crate) fn track(
    call: &Call,
    live: Option<&Value>,
    next: &mut Value,
    writer: &Writer,
) -> Result<(), ApiError> {
    let info = call.info();
    let written = managed_value(next).cloned();
    let stored = || {
        live.and_then(|l| decode(managed_value(l)).ok())
            .unwrap_or_default()
    };
    let mut entries = if !writer.subresource.is_empty() {
        stored()
    } else if is_reset(written.as_ref()) {
        Vec::new()
    } else {
        match decode(written.as_ref()) {
            Ok(entries) if !entries.is_empty() => entries,
            _ => stored(),
        }
    };
    if live.is_some() && entries.is_empty() {
        // Upstream leaves an existing object without managed fields untracked.
        crate::server::objects::json::meta_mut(next).remove("managedFields");
        return Ok(());
    }
    let schema = call.target.kind.schema.as_ref().and_then(|source| source());
    let root = Node::root(schema.as_ref(), call.target.kind.merge);
    let part = part_of(info.subresources.status, &writer.subresource);
    let empty = Value::Object(Map::new());
    let before = fields_of(live.unwrap_or(&empty), root, part);
    let after = fields_of(next, root, part);
    let comparison = compare(&before, &after);
    let changed = comparison.changed();
    let me = Entry::new(
        &writer.manager,
        UPDATE,
        &info.api_version(),
        &writer.subresource,
    );
    for entry in entries.iter_mut() {
        entry.fields.retain(|p| !comparison.removed.contains(p));
        if !entry.same_identity(&me) {
            entry.fields.retain(|p| !changed.contains(p));
        }
    }
    if !changed.is_empty() {
        match entries.iter_mut().find(|e| e.same_identity(&me)) {
            Some(entry) => {
                entry.fields.extend(changed);
                entry.touch();
            }
            None => {
                let mut entry = me;
                entry.fields = changed;
                entry.touch();
                entries.push(entry);
            }
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    store(next, &mut entries);
    validate(call, next)
}

/// Upstream's 409 for an apply that conflicts with other managers: one cause per field.
pub(crate) fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let message = if let [(manager, path)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {manager}: {}",
            Display(path)
        )
    } else {
        let mut by_manager: BTreeMap<&str, Vec<&Path>> = BTreeMap::new();
        for (manager, path) in conflicts {
            by_manager.entry(manager).or_default().push(path);
        }
        let mut lines = Vec::new();
        for (manager, paths) in by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.into_iter().map(|p| format!("- {}", Display(p))));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let causes = conflicts
        .iter()
        .map(|(manager, path)| {
            StatusCause::new(
                CauseType::FieldManagerConflict,
                Display(path).to_string(),
                format!("conflict with {manager}"),
            )
        })
        .collect();
    ApiError::from_status(Status::failure(
        StatusReason::Conflict,
        message,
        Some(StatusDetails {
            causes,
            ..StatusDetails::default()
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::field;
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

    #[test]
    fn user_agents_become_managers() {
        for (agent, want) in [
            ("kubectl/v1.34.0 (linux/amd64) kubernetes/abc", "kubectl"),
            ("OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator"),
            ("", ""),
            ("a\u{7}b", "ab"),
        ] {
            assert_eq!(from_user_agent(agent), want, "{agent}");
        }
        assert_eq!(from_user_agent(&"x".repeat(300)).len(), 128);
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
        let c = compare(&old, &new);
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
                &fields_of(&new, node, Part::Whole),
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

    #[test]
    fn an_existing_bucket_absorbs_further_merges() {
        let entry = |manager: &str, version: &str, second: u32| {
            let mut e = Entry::new(manager, UPDATE, version, "");
            e.time = Some(format!("2024-01-01T00:00:{second:02}Z"));
            e.fields
                .insert(vec![Step::Field(format!("{manager}-{version}"))]);
            e
        };
        // The bucket of v1 is the oldest entry; two more v1 entries overflow the cap.
        let mut entries = vec![entry(ANCIENT_CHANGES, "v1", 0)];
        entries.extend((1..12).map(|i| entry(&format!("m{i:02}"), "v1", i)));
        cap(&mut entries);
        let buckets: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.manager == ANCIENT_CHANGES)
            .collect();
        assert_eq!(buckets.len(), 1, "{entries:?}");
        assert_eq!(entries.len(), 10);
        assert_eq!(buckets[0].fields.len(), 3);
        assert_eq!(buckets[0].time.as_deref(), Some("2024-01-01T00:00:02Z"));

        // A bucket that is not the oldest still takes the merges; the oldest stays.
        let mut entries = vec![entry("old", "v1", 0), entry(ANCIENT_CHANGES, "v1", 1)];
        entries.extend((2..12).map(|i| entry(&format!("m{i:02}"), "v1", i)));
        cap(&mut entries);
        let managers: Vec<&str> = entries.iter().map(|e| e.manager.as_str()).collect();
        assert_eq!(
            managers.iter().filter(|m| **m == ANCIENT_CHANGES).count(),
            1
        );
        assert!(managers.contains(&"old"));
        assert_eq!(entries.len(), 10);
    }

    #[test]
    fn entries_that_do_not_decode_are_refused_whole() {
        let good = json!({"manager": "m", "operation": "Update", "apiVersion": "v1",
                          "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}});
        assert_eq!(decode(Some(&json!([good.clone()]))).unwrap().len(), 1);
        for (key, value) in [
            ("operation", json!("Patch")),
            ("operation", json!("")),
            ("apiVersion", json!("")),
            ("fieldsType", json!("FieldsV2")),
            ("fieldsV1", json!({"x:y": {}})),
        ] {
            let mut bad = good.clone();
            bad[key] = value.clone();
            assert!(
                decode(Some(&json!([good.clone(), bad]))).is_err(),
                "{key}: {value}"
            );
        }
    }

    #[test]
    fn entries_sort_appliers_first_and_cap_updaters() {
        let mut entries: Vec<Entry> = (0..12)
            .map(|i| {
                let mut e = Entry::new(&format!("m{i:02}"), UPDATE, "v1", "");
                e.time = Some(format!("2024-01-01T00:00:{i:02}Z"));
                e.fields.insert(vec![Step::Field(format!("f{i}"))]);
                e
            })
            .collect();
        let mut apply = Entry::new("applier", APPLY, "v1", "");
        apply.fields.insert(vec![Step::Field("a".into())]);
        entries.push(apply);
        cap(&mut entries);
        let encoded = encode(&entries);
        assert_eq!(encoded.len(), 11);
        assert_eq!(encoded[0]["manager"], "applier");
        let ancient = encoded
            .iter()
            .find(|e| e["manager"] == ANCIENT_CHANGES)
            .unwrap();
        assert_eq!(
            ancient["fieldsV1"],
            json!({"f:f0": {}, "f:f1": {}, "f:f2": {}})
        );
    }
}
