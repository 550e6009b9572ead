//! One storage for a built-in resource served in several versions or groups.
//!
//! Kubernetes serves many resources in more than one version (`autoscaling/v1` and `v2`
//! HorizontalPodAutoscalers) and some in more than one group (Ingresses in `extensions` and
//! `networking.k8s.io`, Events in the core group and `events.k8s.io`). kube-apiserver stores
//! each such resource once, in one version, and converts every object on its way in and out, so
//! a list or watch through any version sees every object. A [`Family`] describes one such
//! resource: the version objects are stored in (its group is where they are stored) and, for
//! every other version, the [`Step`]s that take an object of that version to the stored one.
//! Steps run forwards on the way in and backwards on the way out: a field moved (`Move`) moves
//! back; a named [`Rule`] (one function per shape change that is code, in `rules` and
//! `autoscaling`, `apiextensions`) knows both directions.
//!
//! Families are data: the generator writes them from `specs/conversions/` into the crate of the
//! built-ins, and each kind's [`ResourceInfo`](crate::ResourceInfo) names its family. The server
//! keys a family's objects by its storage group and converts through [`Family::convert`].
//! Custom resources convert through their CRD's conversion or the users' `From` impls
//! ([`VersionConverter`](crate::crd::VersionConverter)) instead.

mod apiextensions;
mod autoscaling;
mod rules;

pub use rules::Rule;

use serde_json::{Map, Value};

/// A resource served in several versions or groups and stored once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// The resource's plural, the same in every member.
    pub resource: &'static str,
    /// The `apiVersion` objects are stored in; its group is the one whose keys hold them.
    pub storage: &'static str,
    /// Every other `apiVersion` the resource is served at, with its way to `storage`.
    pub versions: &'static [Version],
}

/// One served version of a [`Family`] other than the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// The `apiVersion`, e.g. `extensions/v1beta1`.
    pub api_version: &'static str,
    /// What takes an object of this version to the stored version, in order; undone in reverse
    /// order on the way back. Empty when the shapes are the same.
    pub steps: &'static [Step],
}

/// One change between a version's shape and the stored version's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Where the change applies: a dotted path from the object, `[*]` through list items; empty
    /// for the object itself. Places that are absent are left alone.
    pub at: &'static str,
    /// The change.
    pub change: Change,
}

/// What a [`Step`] does at its place, on the way to the stored version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The value at dotted path `from` moves to dotted path `to` (parents created as needed;
    /// parents left empty by the move are removed). Undone by moving it back.
    Move {
        /// Where the value is in the served version.
        from: &'static str,
        /// Where it is in the stored version.
        to: &'static str,
    },
    /// A change that is code, with both directions.
    Rule(Rule),
}

/// Which way a conversion runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// From a served version to the stored one.
    ToStorage,
    /// From the stored version to a served one.
    FromStorage,
}

/// Why an object could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The object or the target names a version the family does not have.
    #[error("no conversion for apiVersion {0:?}")]
    UnknownVersion(String),
    /// The object has no `apiVersion`.
    #[error("object has no apiVersion")]
    NoApiVersion,
    /// A rule found a value it cannot convert; the text says which.
    #[error("{0}")]
    Invalid(String),
}

impl Step {
    /// A move of `from` to `to` below `at`.
    pub const fn moved(at: &'static str, from: &'static str, to: &'static str) -> Self {
        Self {
            at,
            change: Change::Move { from, to },
        }
    }

    /// The named rule `rule` at `at`.
    pub const fn rule(at: &'static str, rule: Rule) -> Self {
        Self {
            at,
            change: Change::Rule(rule),
        }
    }
}

impl Family {
    /// The group whose keys hold the family's objects: the storage version's.
    pub fn storage_group(&self) -> &'static str {
        group_of(self.storage)
    }

    /// Whether `api_version` is one of the family's, the stored one included.
    pub fn has(&self, api_version: &str) -> bool {
        api_version == self.storage || self.version(api_version).is_some()
    }

    fn version(&self, api_version: &str) -> Option<&'static Version> {
        self.versions.iter().find(|v| v.api_version == api_version)
    }

    /// `object` (of any of the family's versions, read from its `apiVersion`) at `to`.
    pub fn convert(&self, mut object: Value, to: &str) -> Result<Value, ConversionError> {
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .ok_or(ConversionError::NoApiVersion)?
            .to_owned();
        if from == to {
            return Ok(object);
        }
        let target = (to != self.storage)
            .then(|| {
                self.version(to)
                    .ok_or_else(|| ConversionError::UnknownVersion(to.to_owned()))
            })
            .transpose()?;
        if from != self.storage {
            let version = self
                .version(&from)
                .ok_or_else(|| ConversionError::UnknownVersion(from.clone()))?;
            for step in version.steps {
                apply(step, &mut object, Direction::ToStorage)?;
            }
        }
        if let Some(version) = target {
            for step in version.steps.iter().rev() {
                apply(step, &mut object, Direction::FromStorage)?;
            }
        }
        if let Value::Object(map) = &mut object {
            map.insert("apiVersion".into(), Value::from(to));
        }
        Ok(object)
    }
}

/// The group of an `apiVersion`: empty for the core group's `v1`.
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

fn apply(step: &Step, object: &mut Value, direction: Direction) -> Result<(), ConversionError> {
    let mut result = Ok(());
    each_at(object, step.at, &mut |place| {
        if result.is_err() {
            return;
        }
        match step.change {
            Change::Move { from, to } => match direction {
                Direction::ToStorage => move_value(place, from, to),
                Direction::FromStorage => move_value(place, to, from),
            },
            Change::Rule(rule) => result = rule.apply(place, direction),
        }
    });
    result
}

/// Calls `f` on every value at dotted `path` below `value`, `[*]` through each list item.
fn each_at(value: &mut Value, path: &str, f: &mut dyn FnMut(&mut Value)) {
    if path.is_empty() {
        return f(value);
    }
    let (head, rest) = path.split_once('.').unwrap_or((path, ""));
    let (field, items) = match head.strip_suffix("[*]") {
        Some(field) => (field, true),
        None => (head, false),
    };
    let Some(child) = value.get_mut(field) else {
        return;
    };
    match (items, child) {
        (true, Value::Array(list)) => {
            for item in list {
                each_at(item, rest, f);
            }
        }
        (true, _) => {}
        (false, child) => each_at(child, rest, f),
    }
}

/// Moves the value at dotted `from` to dotted `to` within `place`.
fn move_value(place: &mut Value, from: &str, to: &str) {
    let Some(value) = take(place, from) else {
        return;
    };
    put(place, to, value);
}

/// Removes and returns the value at dotted `path`, removing objects the removal leaves empty.
pub(crate) fn take(place: &mut Value, path: &str) -> Option<Value> {
    let Value::Object(map) = place else {
        return None;
    };
    match path.split_once('.') {
        None => map.remove(path),
        Some((head, rest)) => {
            let child = map.get_mut(head)?;
            let taken = take(child, rest);
            if child.as_object().is_some_and(Map::is_empty) {
                map.remove(head);
            }
            taken
        }
    }
}

/// Sets dotted `path` to `value`, creating parent objects (a parent that is not an object is
/// left alone, and the value dropped, as there is nowhere to put it).
pub(crate) fn put(place: &mut Value, path: &str, value: Value) {
    let Value::Object(map) = place else {
        return;
    };
    match path.split_once('.') {
        None => {
            map.insert(path.to_owned(), value);
        }
        Some((head, rest)) => {
            let child = map
                .entry(head.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            put(child, rest, value);
        }
    }
}

/// Writes `value` at dotted `path` unless it is null.
pub(crate) fn put_some(place: &mut Value, path: &str, value: Option<Value>) {
    if let Some(value) = value.filter(|v| !v.is_null()) {
        put(place, path, value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    static RENAMED: Family = Family {
        resource: "widgets",
        storage: "example.com/v1",
        versions: &[
            Version {
                api_version: "example.com/v1beta1",
                steps: &[
                    Step::moved("spec.items[*]", "size", "limits.size"),
                    Step::moved("", "note", "message"),
                ],
            },
            Version {
                api_version: "old.example.com/v1",
                steps: &[],
            },
        ],
    };

    #[test]
    fn moves_run_forwards_to_storage_and_backwards_from_it() {
        let served = json!({
            "apiVersion": "example.com/v1beta1", "note": "hi",
            "spec": {"items": [{"size": 1}, {"name": "b"}]},
        });
        let stored = RENAMED.convert(served.clone(), "example.com/v1").unwrap();
        assert_eq!(
            stored,
            json!({
                "apiVersion": "example.com/v1", "message": "hi",
                "spec": {"items": [{"limits": {"size": 1}}, {"name": "b"}]},
            })
        );
        assert_eq!(
            RENAMED.convert(stored, "example.com/v1beta1").unwrap(),
            served
        );
    }

    #[test]
    fn versions_convert_to_each_other_through_storage() {
        let object = json!({"apiVersion": "example.com/v1beta1", "note": "x"});
        let other = RENAMED.convert(object, "old.example.com/v1").unwrap();
        assert_eq!(
            other,
            json!({"apiVersion": "old.example.com/v1", "message": "x"})
        );
        assert_eq!(RENAMED.storage_group(), "example.com");
        assert!(RENAMED.has("old.example.com/v1") && !RENAMED.has("example.com/v2"));
    }

    #[test]
    fn unknown_versions_are_errors() {
        let object = json!({"apiVersion": "example.com/v9"});
        assert_eq!(
            RENAMED.convert(object.clone(), "example.com/v1"),
            Err(ConversionError::UnknownVersion("example.com/v9".into()))
        );
        let stored = json!({"apiVersion": "example.com/v1"});
        assert_eq!(
            RENAMED.convert(stored, "example.com/v9"),
            Err(ConversionError::UnknownVersion("example.com/v9".into()))
        );
        assert_eq!(
            RENAMED.convert(json!({}), "example.com/v1"),
            Err(ConversionError::NoApiVersion)
        );
    }

    #[test]
    fn core_versions_have_the_empty_group() {
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("events.k8s.io/v1"), "events.k8s.io");
    }
}
