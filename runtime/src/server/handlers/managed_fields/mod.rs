//! Field ownership (`metadata.managedFields`), as upstream's field manager keeps it: which
//! manager set which field, recorded per manager and operation in the `FieldsV1` trie format.
//!
//! Field paths and sets and their `FieldsV1` encoding are `fieldpath`'s; how an object's
//! fields are tracked under the kind's schema, and how two field sets compare, are `typed`'s;
//! this module keeps the entries: what a write records, the cap on them and the checks of the
//! ones a client writes.
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
//!
//! May import: what `handlers` may. `fieldpath` imports nothing of its siblings, `typed` only
//! `fieldpath`.

pub(crate) mod fieldpath;
pub(crate) mod typed;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::meta::{CauseType, Status, StatusCause, StatusDetails, StatusReason};
use crate::time::Time;

use crate::server::Call;
use crate::server::http::error::ApiError;

use fieldpath::{Display, Path, Set, decode_set, encode_set};
use typed::{Node, compare, created_fields, fields_of, part_of};

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
        .map(|e| entry_value(e, encode_set(&e.fields)))
        .collect()
}

/// One `managedFields` item: the entry with `fields`, its set as a `FieldsV1` trie.
fn entry_value(entry: &Entry, fields: Value) -> Value {
    let mut map = Map::new();
    map.insert("manager".into(), Value::from(entry.manager.as_str()));
    map.insert("operation".into(), Value::from(entry.operation.as_str()));
    map.insert("apiVersion".into(), Value::from(entry.api_version.as_str()));
    if let Some(time) = &entry.time {
        map.insert("time".into(), Value::from(time.as_str()));
    }
    map.insert("fieldsType".into(), Value::from("FieldsV1"));
    map.insert("fieldsV1".into(), fields);
    if !entry.subresource.is_empty() {
        map.insert(
            "subresource".into(),
            Value::from(entry.subresource.as_str()),
        );
    }
    Value::Object(map)
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
    let root = Node::root(schema.as_deref(), call.target.kind.merge);
    let part = part_of(info.subresources.status, &writer.subresource);
    let me = Entry::new(
        &writer.manager,
        UPDATE,
        &info.api_version(),
        &writer.subresource,
    );
    if live.is_none() && entries.is_empty() {
        // A create without client-written entries: the writer owns everything it created,
        // the same set the comparison below finds against nothing, built directly.
        record_created(next, me, created_fields(next, root, part));
        return validate(call, next);
    }
    let empty = Value::Object(Map::new());
    let before = fields_of(live.unwrap_or(&empty), root, part);
    let after = fields_of(next, root, part);
    let (changed, removed) = compare(&before, after).into_changed();
    for entry in entries.iter_mut() {
        entry.fields.retain(|p| !removed.contains(p));
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

/// Writes the one entry of a created object: `me`, owning `fields`; none when it owns
/// nothing.
fn record_created(object: &mut Value, mut me: Entry, fields: Map<String, Value>) {
    let meta = crate::server::objects::json::meta_mut(object);
    if fields.is_empty() {
        meta.remove("managedFields");
        return;
    }
    me.touch();
    let item = entry_value(&me, Value::Object(fields));
    meta.insert("managedFields".into(), Value::Array(vec![item]));
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
    use super::fieldpath::Step;
    use super::*;
    use serde_json::json;

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
    fn an_existing_bucket_absorbs_further_merges() {
        let entry = |manager: &str, version: &str, second: u32| {
            let mut e = Entry::new(manager, UPDATE, version, "");
            e.time = Some(format!("2024-01-01T00:00:{second:02}Z"));
            e.fields
                .insert(vec![Step::Field(format!("{manager}-{version}").into())]);
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
                e.fields.insert(vec![Step::Field(format!("f{i}").into())]);
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
