//! Defaults of built-in types (`specs/defaults/kubernetes.yaml`): parsing, and laying them out
//! along each kind's schema. Upstream defaults per Go type (`SetDefaults_PodSpec`, called for
//! every PodSpec inside every kind by the generated `SetObjectDefaults_*`); a kind's
//! `ResourceInfo` lists its defaults by path, parents before children, as upstream calls them.
//!
//! [`Defaults::from_yaml_str`] parses text; reading the file is
//! [`load_defaults`](crate::load::load_defaults)'s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::data_file::DataText;
use super::lifecycle::Release;
use crate::load::LoadError;
use crate::model::{Model, SchemaType};

/// Defaults by type definition name (`io.k8s.api.apps.v1.Deployment`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Defaults {
    /// Each type's defaults, in order, with paths relative to the type.
    pub types: BTreeMap<String, Vec<TypeDefault>>,
}

/// One default of a type, as the data file writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDefault {
    /// Path relative to the type, e.g. `.spec.replicas` or `.ports[*].protocol`.
    pub path: String,
    /// What fills the field.
    pub fill: DefaultFill,
    /// `field == <JSON>` on a sibling, as written.
    pub when: Option<String>,
    /// The first release that defaults the field.
    pub since: Option<Release>,
    /// The first release that no longer does.
    pub until: Option<Release>,
}

/// What a default fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefaultFill {
    /// JSON text.
    Json(String),
    /// A `kapi::defaulting::Rule` in snake case.
    Rule(String),
}

impl Defaults {
    /// Parses the YAML list described in `specs/defaults/README.md`; `path` names the input in
    /// errors.
    pub fn from_yaml_str(path: &Path, text: &str) -> Result<Self, LoadError> {
        let file = DataText::new("defaults", path);
        let mut types: BTreeMap<String, Vec<TypeDefault>> = BTreeMap::new();
        for (i, entry) in file.entries(text)?.iter().enumerate() {
            let at = format!("/{i}");
            file.object(entry, &at, &["types", "fields"])?;
            let names = file.names(entry, "types", &at)?;
            let Some(Value::Array(fields)) = entry.get("fields") else {
                return Err(file.invalid(format!("{at}/fields"), "expected a list"));
            };
            let fields = fields
                .iter()
                .enumerate()
                .map(|(f, field)| parse_field(&file, field, &format!("{at}/fields/{f}")))
                .collect::<Result<Vec<_>, _>>()?;
            for name in names {
                types
                    .entry(name)
                    .or_default()
                    .extend(fields.iter().cloned());
            }
        }
        Ok(Self { types })
    }

    /// A kind's defaults by path from its root: each type's defaults where the kind's schema
    /// reaches the type (through objects, and every item of lists), parents before children.
    pub fn for_kind(&self, model: &Model, definition: &str) -> Vec<TypeDefault> {
        let mut out = Vec::new();
        if !self.types.is_empty() {
            self.walk(model, definition, "", &mut BTreeSet::new(), &mut out);
        }
        out
    }

    fn walk(
        &self,
        model: &Model,
        name: &str,
        at: &str,
        open: &mut BTreeSet<String>,
        out: &mut Vec<TypeDefault>,
    ) {
        // A recursive type (JSONSchemaProps) is walked once per branch.
        if !open.insert(name.to_owned()) {
            return;
        }
        for default in self.types.get(name).into_iter().flatten() {
            out.push(TypeDefault {
                path: format!("{at}{}", default.path),
                ..default.clone()
            });
        }
        if let Some(SchemaType::Object(object)) = model.types.get(name).map(|s| &s.ty) {
            for property in &object.properties {
                let (inner, suffix) = match &property.schema.ty {
                    SchemaType::Ref(inner) => (inner, ""),
                    SchemaType::Array(items) => match &items.ty {
                        SchemaType::Ref(inner) => (inner, "[*]"),
                        _ => continue,
                    },
                    _ => continue,
                };
                let path = format!("{at}.{}{suffix}", property.name);
                self.walk(model, inner, &path, open, out);
            }
        }
        open.remove(name);
    }
}

fn parse_field(file: &DataText, field: &Value, at: &str) -> Result<TypeDefault, LoadError> {
    const KEYS: &[&str] = &["path", "value", "rule", "when", "since", "until"];
    let map = file.object(field, at, KEYS)?;
    let path = file
        .text(map, "path", at)?
        .ok_or_else(|| file.invalid(format!("{at}/path"), "required"))?;
    let plain = path.replace("[*]", "");
    if plain.len() < 2 || !plain.starts_with('.') || plain.contains(['[', ']']) {
        return Err(file.invalid(
            format!("{at}/path"),
            format!("{path:?} is not a simple JSON path (`.a.b`, `.list[*].c`)"),
        ));
    }
    // The value is any YAML value, written into the kind as JSON text.
    let fill = match (map.get("value"), file.text(map, "rule", at)?) {
        (Some(value), None) => DefaultFill::Json(value.to_string()),
        (None, Some(rule)) => DefaultFill::Rule(rule),
        _ => return Err(file.invalid(at, "give a `value` or a `rule`, one of them")),
    };
    let (since, until) = file.releases(map, at)?;
    Ok(TypeDefault {
        path,
        fill,
        when: file.text(map, "when", at)?,
        since,
        until,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load_swagger_str;

    const SPEC: &str = r##"{"swagger": "2.0", "info": {"title": "t", "version": "v1"}, "paths": {},
      "definitions": {
        "t.Deployment": {"type": "object", "properties": {
          "spec": {"$ref": "#/definitions/t.DeploymentSpec"}}},
        "t.DeploymentSpec": {"type": "object", "properties": {
          "replicas": {"type": "integer"},
          "template": {"$ref": "#/definitions/t.PodSpec"}}},
        "t.PodSpec": {"type": "object", "properties": {
          "containers": {"type": "array", "items": {"$ref": "#/definitions/t.Container"}}}},
        "t.Container": {"type": "object", "properties": {"image": {"type": "string"}}}
      }}"##;

    #[test]
    fn type_defaults_are_laid_out_along_the_kind_parents_first() {
        let model = load_swagger_str("spec.json", SPEC).unwrap();
        let defaults = Defaults::from_yaml_str(
            Path::new("defaults.yaml"),
            r#"
- types: [t.Container]
  fields:
    - {path: .imagePullPolicy, rule: image_pull_policy}
- types: [t.Deployment]
  fields:
    - {path: .spec.replicas, value: 1}
    - {path: .spec.strategy, value: {}, since: "1.20"}
"#,
        )
        .unwrap();
        let laid: Vec<(String, DefaultFill)> = defaults
            .for_kind(&model, "t.Deployment")
            .into_iter()
            .map(|d| (d.path, d.fill))
            .collect();
        assert_eq!(
            laid,
            [
                (".spec.replicas".to_owned(), DefaultFill::Json("1".into())),
                (".spec.strategy".to_owned(), DefaultFill::Json("{}".into())),
                (
                    ".spec.template.containers[*].imagePullPolicy".to_owned(),
                    DefaultFill::Rule("image_pull_policy".into())
                ),
            ]
        );
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases = [
            ("- {types: [a], fields: [{value: 1}]}", "/0/fields/0/path"),
            (
                "- {types: [a], fields: [{path: spec, value: 1}]}",
                "/0/fields/0/path",
            ),
            ("- {types: [a], fields: [{path: .a}]}", "/0/fields/0"),
            (
                "- {types: [a], fields: [{path: .a, value: 1, rule: x}]}",
                "/0/fields/0",
            ),
            (
                "- {types: [a], fields: [{path: .a, value: 1, size: 3}]}",
                "/0/fields/0/size",
            ),
            ("- {types: [], fields: []}", "/0/types"),
        ];
        for (text, pointer) in cases {
            match Defaults::from_yaml_str(Path::new("defaults.yaml"), text) {
                Err(LoadError::Invalid { pointer: found, .. }) => {
                    assert_eq!(found, pointer, "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
