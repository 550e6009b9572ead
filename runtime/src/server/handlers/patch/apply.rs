// Over the server's 800-line bound: the merge of an applied configuration and the ownership
// moves it causes share their private walk; a split is left for a later change.
//! Server-side apply (`application/apply-patch+yaml`): the applied configuration is merged
//! into the live object with the kind's list and map semantics, fields the manager applied
//! before and dropped now are removed unless someone else owns them, and ownership moves as
//! upstream's field manager moves it (see `managed_fields`).
//!
//! - `fieldManager` is required (upstream's 422 on `PatchOptions`); `force=true` takes the
//!   fields of other managers instead of answering 409 with one cause per conflicting field.
//! - The configuration must name the kind's `apiVersion` and `kind` (400 `invalid object
//!   type`), may not carry `managedFields` (400), and must fit the kind's type: a type error
//!   or a field the type lacks fails as upstream's typed conversion does (500).
//! - A missing object is created from the configuration (201); `/status` applies only to
//!   `status` and never creates.
//! - An object without managed fields gives its existing fields to `before-first-apply` at
//!   its first apply, so dropping them later does not remove them.

use axum::http::StatusCode;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::meta::{PatchOptions, Status, StatusCause, StatusReason};

use crate::server::Call;
use crate::server::handlers::managed_fields::fieldpath::{self, Path, Set, Step};
use crate::server::handlers::managed_fields::typed::{self, Node, Shape};
use crate::server::handlers::managed_fields::{
    self as mf, APPLY, BEFORE_FIRST_APPLY, Entry, UPDATE, Writer,
};
use crate::server::handlers::object;
use crate::server::handlers::update::{self, UpdateScope};
use crate::server::handlers::{create, scale};
use crate::server::http::dry_run::WriteOptions;
use crate::server::http::error::ApiError;
use crate::server::http::field_validation::Directive;

/// `Content-Type` of a server-side apply.
pub(crate) const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The apply options: the manager (required) and whether to force.
fn options(call: &Call) -> Result<(String, bool), ApiError> {
    let options: PatchOptions = call.query()?;
    let manager = options.field_manager.unwrap_or_default();
    if manager.is_empty() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![StatusCause::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    mf::check_manager(&manager, "PatchOptions")?;
    Ok((manager, options.force == Some(true)))
}

/// The applied configuration: YAML (or JSON) holding one object.
pub(crate) fn decode_config(body: &[u8]) -> Result<Value, ApiError> {
    let value: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Map::new())
    } else {
        crate::server::http::yaml::check_depth(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        serde_yaml_ng::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    };
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(Map::new())),
        other => Err(ApiError::bad_request(format!(
            "error decoding YAML: cannot unmarshal {} into an object",
            kind_name(&other)
        ))),
    }
}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

/// What upstream's strict YAML decoding (`yaml.UnmarshalStrict` into a map) says of an
/// apply body: its repeated mapping keys, `line N: key "k" already set in map` each, in
/// document order; JSON bodies go through the same YAML parser. `None` when none repeats.
pub(crate) fn strict_yaml_problem(body: &[u8]) -> Option<String> {
    let mut lines = Vec::new();
    // Each pass stops at the first repeat it has not reported yet.
    while lines.len() < MAX_STRICT_PROBLEMS {
        let found = RefCell::new(None);
        let seed = YamlNode {
            skip: lines.len(),
            seen: &Cell::new(0),
            found: &found,
        };
        match seed.deserialize(serde_yaml_ng::Deserializer::from_slice(body)) {
            Ok(()) => break,
            Err(error) => match (found.into_inner(), error.location()) {
                (Some(message), Some(at)) => lines.push(format!("line {}: {message}", at.line())),
                _ => break,
            },
        }
    }
    if lines.is_empty() {
        None
    } else {
        Some(format!(
            "error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
            lines.join("\n  ")
        ))
    }
}

/// How many repeated keys [`strict_yaml_problem`] reports at most.
const MAX_STRICT_PROBLEMS: usize = 100;

/// A YAML node walked for repeated keys: `skip` repeats are already reported, `seen`
/// counts the repeats met so far, `found` gets the message of the one that stops the walk.
#[derive(Clone, Copy)]
struct YamlNode<'s> {
    skip: usize,
    seen: &'s Cell<usize>,
    found: &'s RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for YamlNode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for YamlNode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while map
            .next_key_seed(YamlKey {
                node: self,
                keys: &mut keys,
            })?
            .is_some()
        {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

/// A mapping key, checked against the keys before it in its mapping.
struct YamlKey<'s, 'k> {
    node: YamlNode<'s>,
    keys: &'k mut HashSet<String>,
}

impl<'de> DeserializeSeed<'de> for YamlKey<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        // Read as text, so the error raised here carries the key's own position.
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for YamlKey<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<(), E> {
        if self.keys.insert(key.to_owned()) {
            return Ok(());
        }
        let seen = self.node.seen.get();
        self.node.seen.set(seen + 1);
        if seen < self.node.skip {
            return Ok(());
        }
        let message = format!("key {} already set in map", Value::from(key));
        *self.node.found.borrow_mut() = Some(message.clone());
        Err(E::custom(message))
    }
}

/// The checks upstream makes of an applied configuration before merging it.
fn check_config(call: &Call, name: &str, config: &Value) -> Result<(), ApiError> {
    let info = call.info();
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != info.api_version() || kind != info.gvk.kind {
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    object::check_identity(call, name, config)?;
    let codec = &call.target.kind.codec;
    let typed_error = |detail: String| {
        let namespace = call.target.namespace.as_deref().unwrap_or("");
        let gvk = format!(
            "{}/{}, Kind={}",
            info.gvk.group, info.gvk.version, info.gvk.kind
        );
        let mut status = Status::failure(
            StatusReason::InternalError,
            format!("failed to create typed patch object ({namespace}/{name}; {gvk}): {detail}"),
            None,
        );
        // Upstream's typed conversion fails with a plain error: a 500 without a reason.
        status.reason = None;
        ApiError::from_status(status)
    };
    let decoded = codec(config.clone()).map_err(|e| typed_error(e.to_string()))?;
    let unknown = crate::server::http::field_validation::unknown_fields(&**codec, config, &decoded);
    let mut problems: Vec<String> = unknown
        .iter()
        .map(|path| format!(".{path}: field not declared in schema"))
        .collect();
    let schema = call.target.kind.schema.as_ref().and_then(|source| source());
    let root = Node::root(schema.as_ref(), call.target.kind.merge);
    check_lists(config, root, &mut Vec::new(), &mut problems);
    match problems.as_slice() {
        [] => Ok(()),
        [one] => Err(typed_error(one.clone())),
        // Upstream's list of validation errors.
        many => Err(typed_error(format!("errors:\n  {}", many.join("\n  ")))),
    }
}

/// The items of the configuration's sets and map lists as upstream's typed conversion
/// checks them: every item named by a key (map lists: an object with every key field, or
/// a default for it; sets: a scalar), no key twice.
fn check_lists(value: &Value, node: Node<'_>, path: &mut Path, problems: &mut Vec<String>) {
    let shape = node.shape(value);
    match (&shape, value) {
        (Shape::Struct | Shape::Map, Value::Object(map)) => {
            for (key, v) in map {
                path.push(Step::Field(key.clone()));
                check_lists(v, node.child(key), path, problems);
                path.pop();
            }
        }
        (Shape::Set | Shape::ListMap(_), Value::Array(items)) => {
            let item = node.item();
            let mut seen = HashSet::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                let at = fieldpath::Display(path);
                if let Some(problem) = keyless(&shape, v, item) {
                    problems.push(format!("{at}: element {i}: {problem}"));
                    continue;
                }
                let Some(step) = typed::item_step(&shape, v) else {
                    continue;
                };
                let named = fieldpath::Display(std::slice::from_ref(&step)).to_string();
                if !seen.insert(step.clone()) {
                    problems.push(format!("{at}: duplicate entries for key {named}"));
                }
                path.push(step);
                check_lists(v, item, path, problems);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Why a list item has no key, in upstream's words; `None` when it has one.
fn keyless(shape: &Shape, item: &Value, node: Node<'_>) -> Option<String> {
    match (shape, item) {
        (Shape::ListMap(_), Value::Null) => {
            Some("associative list with keys may not have a null element".to_owned())
        }
        (Shape::ListMap(keys), Value::Object(map)) => keys
            .iter()
            .find(|k| !map.contains_key(k.as_str()) && !node.key_has_default(k))
            .map(|k| {
                format!(
                    "associative list with keys has an element that omits key field {} (and doesn't have default value)",
                    Value::from(k.as_str())
                )
            }),
        (Shape::ListMap(_), _) => {
            Some("associative list with keys may not have non-map elements".to_owned())
        }
        (_, Value::Object(_)) => {
            Some("associative list without keys has an element that's a map type".to_owned())
        }
        (_, Value::Array(_)) => {
            Some("not supported: associative list with lists as elements".to_owned())
        }
        (_, Value::Null) => {
            Some("associative list without keys has an element that's an explicit null".to_owned())
        }
        _ => None,
    }
}

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
    let old_steps: Vec<Option<Step>> = old.iter().map(|v| typed::item_step(shape, v)).collect();
    let mut in_old: HashMap<&Step, usize> = HashMap::with_capacity(old.len());
    for (i, step) in old_steps.iter().enumerate() {
        if let Some(step) = step {
            in_old.entry(step).or_insert(i);
        }
    }
    // The configuration was checked: every item has a key and no key repeats.
    let new_steps: Vec<(Step, &Value)> = new
        .iter()
        .filter_map(|v| typed::item_step(shape, v).map(|step| (step, v)))
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
fn prune(merged: &mut Value, root: Node<'_>, last: &Set, kept: &Set) {
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
                path.push(Step::Field(key.clone()));
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
                let step = typed::item_step(&shape, v).unwrap_or(Step::Index(index));
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

/// The object an apply makes of `live` (`{}` when creating), with its managed fields.
fn apply_to(
    call: &Call,
    live: &Value,
    config: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApiError> {
    let info = call.info();
    let schema = call.target.kind.schema.as_ref().and_then(|source| source());
    let root = Node::root(schema.as_ref(), call.target.kind.merge);
    let part = typed::part_of(info.subresources.status, &writer.subresource);
    let api_version = info.api_version();
    let mut base = live.clone();
    crate::server::objects::json::meta_mut(&mut base).remove("managedFields");
    let live_fields = typed::fields_of(&base, root, part);
    let mut entries = mf::decode(live.pointer("/metadata/managedFields")).unwrap_or_default();
    if entries.is_empty() {
        let mut first = Entry::new(
            BEFORE_FIRST_APPLY,
            UPDATE,
            &api_version,
            &writer.subresource,
        );
        first.fields = typed::members(&live_fields);
        if !first.fields.is_empty() {
            first.touch();
            entries.push(first);
        }
    }
    let me = Entry::new(&writer.manager, APPLY, &api_version, &writer.subresource);
    let applied = typed::members(&typed::fields_of(config, root, part));
    let last = match entries.iter_mut().find(|e| e.same_identity(&me)) {
        Some(entry) => {
            entry.api_version = api_version.clone();
            std::mem::replace(&mut entry.fields, applied.clone())
        }
        None => {
            let mut entry = me.clone();
            entry.fields = applied.clone();
            entries.push(entry);
            Set::new()
        }
    };
    let mut merged = merge(&base, config, root);
    let kept: Set = entries
        .iter()
        .flat_map(|e| e.fields.iter().cloned())
        .collect();
    prune(&mut merged, root, &last, &kept);
    let comparison = typed::compare(&live_fields, &typed::fields_of(&merged, root, part));
    let changed = comparison.changed();
    let mut conflicts = Vec::new();
    for entry in entries.iter_mut().filter(|e| !e.same_identity(&me)) {
        let lost: Vec<Path> = entry.fields.intersection(&changed).cloned().collect();
        for path in lost {
            if force {
                entry.fields.remove(&path);
            } else {
                conflicts.push((entry.describe(), path));
            }
        }
        entry.fields.retain(|p| !comparison.removed.contains(p));
    }
    if !conflicts.is_empty() {
        conflicts.sort();
        return Err(mf::conflict_error(&conflicts));
    }
    if merged != base
        && let Some(entry) = entries.iter_mut().find(|e| e.same_identity(&me))
    {
        entry.touch();
    }
    entries.retain(|e| !e.fields.is_empty());
    mf::store(&mut merged, &mut entries);
    Ok(merged)
}

/// PATCH with `application/apply-patch+yaml` on the object (`scope` Main) or its `/status`.
/// Answers 201 when the apply created the object.
pub(crate) async fn apply(
    call: &Call,
    name: &str,
    body: &[u8],
    scope: UpdateScope,
    write: WriteOptions,
    warnings: &mut Vec<String>,
) -> Result<(StatusCode, Value), ApiError> {
    let (manager, force) = options(call)?;
    let config = decode_config(body)?;
    check_config(call, name, &config)?;
    // Upstream decodes strictly once the apply itself succeeded.
    let strict = match write.validation {
        Directive::Ignore => None,
        _ => strict_yaml_problem(body),
    };
    let refuse = |strict: &Option<String>| match (strict, write.validation) {
        (Some(problem), Directive::Strict) => Err(ApiError::bad_request(format!(
            "error strict decoding YAML: {problem}"
        ))),
        _ => Ok(()),
    };
    let writer = Writer {
        manager,
        subresource: match scope {
            UpdateScope::Status => "status".to_owned(),
            UpdateScope::Main => String::new(),
        },
    };
    let updated = update::update_with(call, name, scope, write.dry_run, None, |current| {
        let merged = apply_to(call, current, &config, &writer, force)?;
        refuse(&strict)?;
        object::through_codec(call, merged)
    })
    .await;
    if let (Some(problem), Directive::Warn) = (&strict, write.validation) {
        // A header holds no line breaks; Go's server writes them as spaces.
        warnings.push(problem.replace('\n', " "));
    }
    match updated {
        Err(e)
            if e.code() == StatusCode::NOT_FOUND
                && scope == UpdateScope::Main
                && call.info().verbs.contains(&crate::Verb::Create) =>
        {
            let mut fresh = apply_to(call, &Value::Object(Map::new()), &config, &writer, force)?;
            refuse(&strict)?;
            let meta = crate::server::objects::json::meta_mut(&mut fresh);
            if meta
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                meta.insert("name".into(), Value::from(name));
            }
            let fresh = object::through_codec(call, fresh)?;
            create::create_decoded(call, fresh, write, None).await
        }
        Err(e) => Err(e),
        Ok(object) => Ok((StatusCode::OK, object)),
    }
}

/// The path of the parent's replicas behind `/scale` (`.spec.replicas`), as field steps.
fn replicas_path(call: &Call) -> Result<Path, ApiError> {
    let Some(scale) = call.info().subresources.scale.as_ref() else {
        return Err(ApiError::no_route());
    };
    Ok(scale
        .spec_replicas_path
        .trim_start_matches('.')
        .split('.')
        .filter(|part| !part.is_empty())
        .map(|part| Step::Field(part.to_owned()))
        .collect())
}

/// The value at a path of field steps.
fn at_path<'v>(object: &'v Value, path: &[Step]) -> Option<&'v Value> {
    path.iter().try_fold(object, |value, step| match step {
        Step::Field(name) => value.get(name),
        _ => None,
    })
}

/// PATCH `/scale` with an apply configuration (an `autoscaling/v1` `Scale`): the manager
/// applies the parent's replicas and owns them in the parent's managed fields, recorded as
/// an `Apply` entry with subresource `scale` (upstream's scale handler maps `Scale`'s
/// `.spec.replicas` to the parent's replicas path and back). Only the replicas are the
/// configuration's to set; a manager that drops them gives up ownership and the value stays.
pub(crate) async fn apply_scale(
    call: &Call,
    name: &str,
    body: &[u8],
    write: WriteOptions,
) -> Result<Value, ApiError> {
    let (manager, force) = options(call)?;
    let config = decode_config(body)?;
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "autoscaling/v1" || kind != "Scale" {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(ApiError::bad_request(format!(
            "invalid object type: {group}/{version}, Kind={kind}"
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    object::check_identity(call, name, &config)?;
    let unknown = scale::scale_unknown_fields(&config);
    if !unknown.is_empty() {
        let namespace = call.target.namespace.as_deref().unwrap_or("");
        let mut status = Status::failure(
            StatusReason::InternalError,
            format!(
                "failed to create typed patch object ({namespace}/{name}; autoscaling/v1, Kind=Scale): {}",
                unknown
                    .iter()
                    .map(|p| format!(".{p}: field not declared in schema"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            None,
        );
        status.reason = None;
        return Err(ApiError::from_status(status));
    }
    let count = match config.pointer("/spec/replicas") {
        None | Some(Value::Null) => None,
        Some(replicas) => Some(
            replicas
                .as_i64()
                .filter(|n| *n >= 0 && *n <= i64::from(i32::MAX))
                .ok_or_else(|| {
                    ApiError::invalid(
                        "autoscaling",
                        "Scale",
                        name,
                        vec![StatusCause::invalid(
                            "spec.replicas",
                            replicas,
                            "must be greater than or equal to 0",
                        )],
                    )
                })?,
        ),
    };
    let path = replicas_path(call)?;
    let writer = Writer {
        manager,
        subresource: "scale".to_owned(),
    };
    scale::set_replicas(call, name, count, None, write.dry_run, |current, next| {
        scale_fields(call, current, next, &path, &writer, force, count.is_some())
    })
    .await
}

/// The managed fields of an apply through `/scale`: `path` is the parent's replicas,
/// `applied` whether the configuration set them.
fn scale_fields(
    call: &Call,
    current: &Value,
    next: &mut Value,
    path: &Path,
    writer: &Writer,
    force: bool,
    applied: bool,
) -> Result<(), ApiError> {
    let api_version = call.info().api_version();
    let mut entries = mf::decode(current.pointer("/metadata/managedFields")).unwrap_or_default();
    if entries.is_empty() && at_path(current, path).is_some() {
        let mut first = Entry::new(BEFORE_FIRST_APPLY, UPDATE, &api_version, "");
        first.fields.insert(path.clone());
        first.touch();
        entries.push(first);
    }
    let me = Entry::new(&writer.manager, APPLY, &api_version, &writer.subresource);
    let changed = at_path(current, path) != at_path(next, path);
    let mut conflicts = Vec::new();
    if changed {
        let shown: Path = vec![Step::Field("spec".into()), Step::Field("replicas".into())];
        for entry in entries.iter_mut().filter(|e| !e.same_identity(&me)) {
            if entry.fields.contains(path) {
                if force {
                    entry.fields.remove(path);
                } else {
                    conflicts.push((entry.describe(), shown.clone()));
                }
            }
        }
    }
    if !conflicts.is_empty() {
        conflicts.sort();
        return Err(mf::conflict_error(&conflicts));
    }
    let owned: Set = if applied {
        std::iter::once(path.clone()).collect()
    } else {
        Set::new()
    };
    match entries.iter_mut().find(|e| e.same_identity(&me)) {
        Some(entry) => {
            entry.api_version = api_version;
            entry.fields = owned;
            if changed {
                entry.touch();
            }
        }
        None => {
            let mut entry = me;
            entry.fields = owned;
            if changed {
                entry.touch();
            }
            entries.push(entry);
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    mf::store(next, &mut entries);
    Ok(())
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

    #[test]
    fn configurations_name_every_list_item_once() {
        static PORTS: TypeInfo =
            TypeInfo::new(&[field("ports").list_map(&["port", "protocol"]).items(&ITEM)]);
        static KEYED: TypeInfo = TypeInfo::new(&[
            field("items").list_map(&["name"]).items(&ITEM),
            field("tags").set(),
            field("spec").of(&PORTS),
        ]);
        let root = Node::root(None, Some(&KEYED));
        let rows = [
            (
                json!({"items": [{"name": "a"}, {"v": 1}]}),
                vec![
                    r#".items: element 1: associative list with keys has an element that omits key field "name" (and doesn't have default value)"#,
                ],
            ),
            (
                json!({"items": [{"name": "a"}, {"name": "a", "v": 1}]}),
                vec![r#".items: duplicate entries for key [name="a"]"#],
            ),
            (
                json!({"items": [null, 3]}),
                vec![
                    ".items: element 0: associative list with keys may not have a null element",
                    ".items: element 1: associative list with keys may not have non-map elements",
                ],
            ),
            (
                json!({"tags": ["a", "b", "a", {"x": 1}, [1], null]}),
                vec![
                    r#".tags: duplicate entries for key [="a"]"#,
                    ".tags: element 3: associative list without keys has an element that's a map type",
                    ".tags: element 4: not supported: associative list with lists as elements",
                    ".tags: element 5: associative list without keys has an element that's an explicit null",
                ],
            ),
            // `protocol` has upstream's default; `port` has none.
            (
                json!({"spec": {"ports": [{"port": 80}, {"protocol": "UDP"}]}}),
                vec![
                    r#".spec.ports: element 1: associative list with keys has an element that omits key field "port" (and doesn't have default value)"#,
                ],
            ),
            (
                json!({"items": [{"name": "a", "sub": [1, 1]}], "tags": ["a", "b"]}),
                vec![],
            ),
        ];
        for (config, want) in rows {
            let mut problems = Vec::new();
            check_lists(&config, root, &mut Vec::new(), &mut problems);
            assert_eq!(problems, want, "{config}");
        }
    }

    #[test]
    fn strict_yaml_decoding_reports_every_repeated_key() {
        let rows: [(&str, Option<&str>); 5] = [
            ("a: 1\nb: 2\n", None),
            (
                "a: 1\nb:\n  c: 1\n  c: 2\na: 3\n",
                Some(
                    "error converting YAML to JSON: yaml: unmarshal errors:\n  line 4: key \"c\" already set in map\n  line 5: key \"a\" already set in map",
                ),
            ),
            (
                "{\"a\": 1, \"a\": 2}",
                Some(
                    "error converting YAML to JSON: yaml: unmarshal errors:\n  line 1: key \"a\" already set in map",
                ),
            ),
            (
                "items:\n- name: x\n  name: y\n- name: x\n",
                Some(
                    "error converting YAML to JSON: yaml: unmarshal errors:\n  line 3: key \"name\" already set in map",
                ),
            ),
            ("a: [", None),
        ];
        for (body, want) in rows {
            assert_eq!(
                strict_yaml_problem(body.as_bytes()).as_deref(),
                want,
                "{body}"
            );
        }
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
        let path = |steps: &[&str]| -> Path {
            steps.iter().map(|s| Step::Field((*s).to_owned())).collect()
        };
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
