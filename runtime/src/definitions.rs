//! OpenAPI schema definitions a [`Registry`](crate::Registry) carries for the kinds it serves.
//!
//! Generated crates hold their spec's schemas as one JSON object per version (definition name →
//! OpenAPI 3 schema, references as `#/components/schemas/<name>`, kinds tagged with
//! `x-kubernetes-group-version-kind`) and hand it over in `register`. Parsing waits for the
//! first lookup, so registering costs nothing for a server nobody asks for OpenAPI documents,
//! and happens once however many lookups follow.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::GroupVersionKind;

/// Named schema definitions from any number of JSON documents; a later document's definition
/// replaces an earlier one of the same name.
#[derive(Clone, Default)]
pub(crate) struct Definitions {
    sources: Vec<&'static str>,
    parsed: Arc<OnceLock<Parsed>>,
}

#[derive(Default)]
struct Parsed {
    by_name: BTreeMap<String, Value>,
    /// `(group, version, kind)` → definition name.
    by_gvk: BTreeMap<(String, String, String), String>,
}

impl fmt::Debug for Definitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Definitions")
            .field("documents", &self.sources.len())
            .finish_non_exhaustive()
    }
}

impl Definitions {
    /// Adds a document. A document that is not a JSON object of definitions is ignored when
    /// parsed (generated crates test theirs).
    pub(crate) fn add(&mut self, json: &'static str) {
        if !self.sources.iter().any(|s| std::ptr::eq(*s, json)) {
            self.sources.push(json);
            self.parsed = Arc::default();
        }
    }

    fn parsed(&self) -> &Parsed {
        self.parsed.get_or_init(|| {
            let mut parsed = Parsed::default();
            for source in &self.sources {
                let Ok(Value::Object(definitions)) = serde_json::from_str::<Value>(source) else {
                    continue;
                };
                for (name, schema) in definitions {
                    for gvk in schema
                        .get("x-kubernetes-group-version-kind")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let part = |key| gvk.get(key).and_then(Value::as_str).map(str::to_owned);
                        if let (Some(g), Some(v), Some(k)) =
                            (part("group"), part("version"), part("kind"))
                        {
                            parsed.by_gvk.insert((g, v, k), name.clone());
                        }
                    }
                    parsed.by_name.insert(name, schema);
                }
            }
            parsed
        })
    }

    /// The definition called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.parsed().by_name.get(name)
    }

    /// The name and schema of the definition tagged with `gvk`.
    pub(crate) fn of_kind(&self, gvk: &GroupVersionKind) -> Option<(&str, &Value)> {
        let parsed = self.parsed();
        let key = (
            gvk.group.to_string(),
            gvk.version.to_string(),
            gvk.kind.to_string(),
        );
        let name = parsed.by_gvk.get(&key)?;
        Some((name.as_str(), parsed.by_name.get(name)?))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const FIRST: &str = r##"{
"a.v1.Thing":{"type":"object","properties":{"spec":{"$ref":"#/components/schemas/a.v1.Spec"}},"x-kubernetes-group-version-kind":[{"group":"a.dev","kind":"Thing","version":"v1"}]},
"a.v1.Spec":{"type":"object"}
}"##;
    const SECOND: &str = r#"{"a.v1.Spec":{"type":"string"}}"#;

    #[test]
    fn lookups_by_name_and_kind_with_later_documents_winning() {
        let mut definitions = Definitions::default();
        definitions.add(FIRST);
        definitions.add("not json");
        let gvk = GroupVersionKind::new_static("a.dev", "v1", "Thing");
        let (name, schema) = definitions.of_kind(&gvk).expect("tagged");
        assert_eq!(name, "a.v1.Thing");
        assert_eq!(
            schema["properties"]["spec"]["$ref"],
            "#/components/schemas/a.v1.Spec"
        );
        assert_eq!(
            definitions.get("a.v1.Spec"),
            Some(&json!({"type": "object"}))
        );
        // Adding a document after a lookup is seen by the next one.
        definitions.add(SECOND);
        definitions.add(SECOND);
        assert_eq!(definitions.sources.len(), 3);
        assert_eq!(
            definitions.get("a.v1.Spec"),
            Some(&json!({"type": "string"}))
        );
        assert!(
            definitions
                .of_kind(&GroupVersionKind::new_static("a.dev", "v2", "Thing"))
                .is_none()
        );
    }
}
