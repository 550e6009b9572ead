//! Which field labels the built-ins' `fieldSelector` accepts and what each reads
//! (`specs/field_selectors/kubernetes.yaml`, from upstream's field label conversion functions
//! and registry `GetAttrs`), given to each kind as `field_label(...)` and
//! `field_label_message` attributes; a built-in the file does not name gets
//! `field_labels = "meta"`, upstream's default conversion.
//!
//! [`FieldSelectors::from_yaml_str`] parses text; reading the file is
//! [`load_field_selectors`](crate::load::load_field_selectors)'s.

use std::path::Path;

use serde_json::Value;

use super::data_file::DataText;
use super::lifecycle::Release;
use crate::load::LoadError;

/// Field labels by API group, kind and version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelectors {
    /// The file's entries, in order.
    pub entries: Vec<FieldSelectorEntry>,
}

/// One entry: the labels of some kinds of a group, in some or all versions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelectorEntry {
    /// The API group.
    pub group: String,
    /// The kinds.
    pub kinds: Vec<String>,
    /// The versions; empty for every version.
    pub versions: Vec<String>,
    /// Upstream's refusal, a Go format with `%s` or `%q` for the label.
    pub message: Option<String>,
    /// The accepted labels.
    pub labels: Vec<LabelFact>,
}

/// One accepted label.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelFact {
    /// The label a request names.
    pub label: String,
    /// The JSON paths read, dotted and without a leading dot; `None` for the label itself.
    pub paths: Option<Vec<String>>,
    /// `string`, `boolean` or `integer`; `None` for `string`.
    pub type_: Option<String>,
    /// The first release that accepts the label.
    pub since: Option<Release>,
    /// The first release that no longer does.
    pub until: Option<Release>,
}

impl FieldSelectors {
    /// The entry for a kind's version, if the file names it.
    pub fn of(&self, group: &str, version: &str, kind: &str) -> Option<&FieldSelectorEntry> {
        self.entries.iter().find(|e| {
            e.group == group
                && e.kinds.iter().any(|k| k == kind)
                && (e.versions.is_empty() || e.versions.iter().any(|v| v == version))
        })
    }

    /// Whether the file names no kind (no file given): the built-ins then keep a custom
    /// resource's field labels.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses the YAML list described in `specs/field_selectors/README.md`; `path` names the
    /// input in errors.
    pub fn from_yaml_str(path: &Path, text: &str) -> Result<Self, LoadError> {
        let file = DataText::new("field selectors", path);
        let keys = ["group", "kinds", "versions", "message", "labels"];
        let label_keys = ["label", "paths", "type", "since", "until"];
        let mut entries = Vec::new();
        for (i, entry) in file.entries(text)?.iter().enumerate() {
            let at = format!("/{i}");
            let map = file.object(entry, &at, &keys)?;
            let versions = match map.get("versions") {
                None => Vec::new(),
                Some(_) => file.names(entry, "versions", &at)?,
            };
            let mut labels = Vec::new();
            let list = match map.get("labels") {
                Some(Value::Array(list)) => list,
                _ => return Err(file.invalid(format!("{at}/labels"), "expected a list of labels")),
            };
            for (j, item) in list.iter().enumerate() {
                let at = format!("{at}/labels/{j}");
                labels.push(match item {
                    Value::String(label) => LabelFact {
                        label: label.clone(),
                        ..LabelFact::default()
                    },
                    _ => {
                        let map = file.object(item, &at, &label_keys)?;
                        let label = file
                            .text(map, "label", &at)?
                            .ok_or_else(|| file.invalid(format!("{at}/label"), "missing"))?;
                        let paths = match map.get("paths") {
                            None => None,
                            Some(Value::Array(paths)) => {
                                Some(file.strings(paths, &format!("{at}/paths"))?)
                            }
                            Some(_) => {
                                return Err(
                                    file.invalid(format!("{at}/paths"), "expected a list of paths")
                                );
                            }
                        };
                        let type_ = file.text(map, "type", &at)?;
                        if let Some(t) = &type_
                            && !["string", "boolean", "integer"].contains(&t.as_str())
                        {
                            return Err(file.invalid(
                                format!("{at}/type"),
                                "expected string, boolean or integer",
                            ));
                        }
                        let (since, until) = file.releases(map, &at)?;
                        LabelFact {
                            label,
                            paths,
                            type_,
                            since,
                            until,
                        }
                    }
                });
            }
            entries.push(FieldSelectorEntry {
                group: file.text(map, "group", &at)?.unwrap_or_default(),
                kinds: file.names(entry, "kinds", &at)?,
                versions,
                message: file.text(map, "message", &at)?,
                labels,
            });
        }
        Ok(Self { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_match_group_kind_and_version() {
        let text = r#"
- group: ""
  kinds: [Node]
  labels: [metadata.name, {label: spec.unschedulable, type: boolean}]
- group: batch
  kinds: [CronJob]
  versions: [v1beta1]
  message: 'field label %q not supported for %q'
  labels: [metadata.name, {label: status.successful, paths: []}]
"#;
        let file = FieldSelectors::from_yaml_str(Path::new("f.yaml"), text).unwrap();
        let node = file.of("", "v1", "Node").unwrap();
        assert_eq!(node.labels[1].type_.as_deref(), Some("boolean"));
        assert!(file.of("batch", "v1", "CronJob").is_none());
        let cron = file.of("batch", "v1beta1", "CronJob").unwrap();
        assert_eq!(cron.labels[1].paths, Some(Vec::new()));
        for (text, pointer) in [
            ("- {kinds: [Pod], labels: x}", "/0/labels"),
            (
                "- {kinds: [Pod], labels: [{label: a, type: float}]}",
                "/0/labels/0/type",
            ),
            (
                "- {kinds: [Pod], labels: [{label: a, since: soon}]}",
                "/0/labels/0/since",
            ),
        ] {
            match FieldSelectors::from_yaml_str(Path::new("f.yaml"), text) {
                Err(LoadError::Invalid { pointer: found, .. }) => assert_eq!(found, pointer),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
