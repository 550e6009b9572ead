//! What writes do to the built-ins' generation and status (`specs/strategies/kubernetes.yaml`,
//! from upstream's registry strategies), given to each kind as `generation`,
//! `generation_since`, `status_on_create`, `status_keeps_metadata`, `write_conversion`,
//! `create_rule` and `create_on_update` attributes, whose values the derive checks.
//!
//! [`Strategies::from_yaml_str`] parses text; reading the file is
//! [`load_strategies`](crate::load::load_strategies)'s.

use std::collections::BTreeMap;
use std::path::Path;

use super::data_file::DataText;
use super::lifecycle::Release;
use crate::load::LoadError;

/// Write rules by API group and kind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Strategies {
    /// The rules of each `(group, kind)`.
    pub kinds: BTreeMap<(String, String), Strategy>,
}

/// One kind's write rules, as the file writes them (snake case, as the derive takes them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Strategy {
    /// When the generation is set and bumped (`none`, `spec`, `spec_and_annotations`, ...).
    pub generation: Option<String>,
    /// The first release with a generation.
    pub generation_since: Option<Release>,
    /// What a create does with a sent status (`keep`, `remove`, `empty`).
    pub status_on_create: Option<String>,
    /// What a status update keeps of the stored metadata; `None`: nothing beyond what every
    /// update keeps.
    pub status_keeps_metadata: Option<StatusKeeps>,
    /// What every write does to the decoded object (`secret_string_data`).
    pub write_conversion: Option<String>,
    /// Whether a PUT of a missing object creates it (`AllowCreateOnUpdate`).
    pub create_on_update: bool,
    /// What a create does before validation (`create-rule`), as the derive's `create_rule`.
    pub create_rule: Option<String>,
}

/// `status-keeps-metadata`: the metadata a write to the status subresource leaves as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusKeeps {
    /// All of it: only the status changes (`all`).
    All,
    /// These fields, by JSON name.
    Fields(Vec<String>),
}

impl Strategies {
    /// The rules of a kind, if the file names it.
    pub fn of(&self, group: &str, kind: &str) -> Option<&Strategy> {
        self.kinds.get(&(group.to_owned(), kind.to_owned()))
    }

    /// Parses the YAML list described in `specs/strategies/README.md`; `path` names the input
    /// in errors.
    pub fn from_yaml_str(path: &Path, text: &str) -> Result<Self, LoadError> {
        let file = DataText::new("strategies", path);
        let keys = [
            "group",
            "kinds",
            "generation",
            "generation-since",
            "status-on-create",
            "status-keeps-metadata",
            "write-conversion",
            "create-on-update",
            "create-rule",
        ];
        let mut kinds = BTreeMap::new();
        for (i, entry) in file.entries(text)?.iter().enumerate() {
            let at = format!("/{i}");
            let map = file.object(entry, &at, &keys)?;
            let group = file.text(map, "group", &at)?.unwrap_or_default();
            let strategy = Strategy {
                generation: file.text(map, "generation", &at)?,
                generation_since: file.release(map, "generation-since", &at)?,
                status_on_create: file.text(map, "status-on-create", &at)?,
                write_conversion: file.text(map, "write-conversion", &at)?,
                create_rule: file.text(map, "create-rule", &at)?,
                create_on_update: match map.get("create-on-update") {
                    None => false,
                    Some(serde_json::Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(file
                            .invalid(format!("{at}/create-on-update"), "expected true or false"));
                    }
                },
                status_keeps_metadata: match map.get("status-keeps-metadata") {
                    None => None,
                    Some(serde_json::Value::String(all)) if all == "all" => Some(StatusKeeps::All),
                    Some(serde_json::Value::Array(fields)) => Some(StatusKeeps::Fields(
                        file.strings(fields, &format!("{at}/status-keeps-metadata"))?,
                    )),
                    Some(_) => {
                        return Err(file.invalid(
                            format!("{at}/status-keeps-metadata"),
                            "expected `all` or a list of metadata fields",
                        ));
                    }
                },
            };
            for name in file.names(entry, "kinds", &at)? {
                if kinds
                    .insert((group.clone(), name.clone()), strategy.clone())
                    .is_some()
                {
                    return Err(file.invalid(
                        at.clone(),
                        format!("group {group:?} kind {name} is listed twice"),
                    ));
                }
            }
        }
        Ok(Self { kinds })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_get_their_entry_and_errors_name_the_json_path() {
        let strategies = Strategies::from_yaml_str(
            Path::new("s.yaml"),
            "- {group: batch, kinds: [Job, CronJob], generation: spec, generation-since: \"1.27\"}\n",
        )
        .unwrap();
        let job = strategies.of("batch", "CronJob").unwrap();
        assert_eq!(job.generation.as_deref(), Some("spec"));
        assert_eq!(job.generation_since, Some((1, 27)));
        assert!(strategies.of("", "Job").is_none());
        let more = Strategies::from_yaml_str(
            Path::new("s.yaml"),
            "- {kinds: [Secret], write-conversion: secret_string_data}\n\
             - {group: apps, kinds: [Deployment], status-keeps-metadata: [labels]}\n\
             - {group: flowcontrol.apiserver.k8s.io, kinds: [FlowSchema], status-keeps-metadata: all}\n\
             - {kinds: [Endpoints], create-on-update: true}\n",
        )
        .unwrap();
        assert_eq!(
            more.of("", "Secret").unwrap().write_conversion.as_deref(),
            Some("secret_string_data")
        );
        assert_eq!(
            more.of("apps", "Deployment").unwrap().status_keeps_metadata,
            Some(StatusKeeps::Fields(vec!["labels".to_owned()]))
        );
        assert_eq!(
            more.of("flowcontrol.apiserver.k8s.io", "FlowSchema")
                .unwrap()
                .status_keeps_metadata,
            Some(StatusKeeps::All)
        );
        assert!(more.of("", "Endpoints").unwrap().create_on_update);
        assert!(!more.of("", "Secret").unwrap().create_on_update);
        for (text, pointer) in [
            ("- {kinds: [Pod], status: x}", "/0/status"),
            (
                "- {kinds: [Pod], generation-since: soon}",
                "/0/generation-since",
            ),
            ("- {kinds: [Pod]}\n- {kinds: [Pod]}", "/1"),
            (
                "- {kinds: [Pod], create-on-update: yes please}",
                "/0/create-on-update",
            ),
            (
                "- {kinds: [Pod], status-keeps-metadata: [1]}",
                "/0/status-keeps-metadata/0",
            ),
        ] {
            match Strategies::from_yaml_str(Path::new("s.yaml"), text) {
                Err(LoadError::Invalid { pointer: found, .. }) => assert_eq!(found, pointer),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
