//! What the project's YAML data files about kinds share (`specs/lifecycle`, `specs/printers`,
//! `specs/defaults`): a list of entries, errors that name the file and the JSON path, lists of
//! names and `"MAJOR.MINOR"` releases.

use std::path::Path;

use serde_json::{Map, Value};

use super::lifecycle::{Release, parse_release};
use crate::load::{LoadError, Source};

/// The text of one data file being parsed, and where its errors point.
pub(crate) struct DataText {
    /// What the file holds, as errors name it (`lifecycle`, `printers`, `defaults`).
    what: &'static str,
    source: Source,
}

impl DataText {
    pub(crate) fn new(what: &'static str, path: &Path) -> Self {
        Self {
            what,
            source: Source::file(path),
        }
    }

    /// The error for the node at `pointer`.
    pub(crate) fn invalid(
        &self,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> LoadError {
        LoadError::Invalid {
            what: self.what,
            source_file: self.source.clone(),
            pointer: pointer.into(),
            message: message.into(),
        }
    }

    /// The file's entries: a YAML list (an empty file has none).
    pub(crate) fn entries(&self, text: &str) -> Result<Vec<Value>, LoadError> {
        let value: Value = serde_yaml_ng::from_str(text).map_err(|e| LoadError::Syntax {
            format: "YAML",
            source_file: self.source.clone(),
            message: e.to_string(),
        })?;
        match value {
            Value::Array(entries) => Ok(entries),
            Value::Null => Ok(Vec::new()),
            _ => Err(self.invalid("", "expected a list of entries")),
        }
    }

    /// The non-empty list of strings at `key` of the entry at `at`.
    pub(crate) fn names(
        &self,
        entry: &Value,
        key: &str,
        at: &str,
    ) -> Result<Vec<String>, LoadError> {
        match entry.get(key) {
            Some(Value::Array(names)) if !names.is_empty() => names
                .iter()
                .enumerate()
                .map(|(i, name)| match name {
                    Value::String(name) => Ok(name.clone()),
                    _ => Err(self.invalid(format!("{at}/{key}/{i}"), "expected a string")),
                })
                .collect(),
            _ => Err(self.invalid(format!("{at}/{key}"), "expected a non-empty list of names")),
        }
    }

    /// The strings of the list `items`, found at `at`; an empty list is allowed.
    pub(crate) fn strings(&self, items: &[Value], at: &str) -> Result<Vec<String>, LoadError> {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| self.invalid(format!("{at}/{i}"), "expected a string"))
            })
            .collect()
    }

    /// The object at `at`, with no key outside `keys`.
    pub(crate) fn object<'v>(
        &self,
        value: &'v Value,
        at: &str,
        keys: &[&str],
    ) -> Result<&'v Map<String, Value>, LoadError> {
        let map = value
            .as_object()
            .ok_or_else(|| self.invalid(at, "expected an object"))?;
        if let Some(key) = map.keys().find(|k| !keys.contains(&k.as_str())) {
            return Err(self.invalid(
                format!("{at}/{key}"),
                format!("unknown key (expected one of {})", keys.join(", ")),
            ));
        }
        Ok(map)
    }

    /// The string at `key` of `map`, if present.
    pub(crate) fn text(
        &self,
        map: &Map<String, Value>,
        key: &str,
        at: &str,
    ) -> Result<Option<String>, LoadError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.invalid(format!("{at}/{key}"), "expected a string")),
        }
    }

    /// The `"MAJOR.MINOR"` release at `key` of `map`, if present.
    pub(crate) fn release(
        &self,
        map: &Map<String, Value>,
        key: &str,
        at: &str,
    ) -> Result<Option<Release>, LoadError> {
        self.text(map, key, at)?
            .map(|s| {
                parse_release(&s).ok_or_else(|| {
                    self.invalid(
                        format!("{at}/{key}"),
                        format!("expected \"MAJOR.MINOR\", found \"{s}\""),
                    )
                })
            })
            .transpose()
    }

    /// `since` and `until` of `map`, refused unless `until` is later.
    pub(crate) fn releases(
        &self,
        map: &Map<String, Value>,
        at: &str,
    ) -> Result<(Option<Release>, Option<Release>), LoadError> {
        let (since, until) = (
            self.release(map, "since", at)?,
            self.release(map, "until", at)?,
        );
        if let (Some(since), Some(until)) = (since, until)
            && until <= since
        {
            return Err(self.invalid(
                format!("{at}/until"),
                "must be a later release than `since`",
            ));
        }
        Ok((since, until))
    }
}
