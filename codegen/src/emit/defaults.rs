//! Defaults of built-in types (`specs/defaults/kubernetes.yaml`). Upstream defaults per Go type
//! (`SetDefaults_PodSpec`, called for every PodSpec inside every kind by the generated
//! `SetObjectDefaults_*`); so does kapi: each type's defaults go into its static
//! `kapi::merge::TypeInfo`, which the server walks from each kind's root.
//!
//! [`Defaults::from_yaml_str`] parses text; reading the file is
//! [`load_defaults`](crate::load::load_defaults)'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::data_file::DataText;
use super::lifecycle::Release;
use crate::load::LoadError;

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
    /// A condition on a sibling: its name and the JSON text it must equal.
    pub when: Option<(String, String)>,
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
    /// The field removed (`clear: true`).
    Clear,
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

    /// A type's own defaults, by paths from the type.
    pub fn of(&self, definition: &str) -> &[TypeDefault] {
        self.types.get(definition).map_or(&[], Vec::as_slice)
    }
}

fn parse_field(file: &DataText, field: &Value, at: &str) -> Result<TypeDefault, LoadError> {
    const KEYS: &[&str] = &["path", "value", "rule", "clear", "when", "since", "until"];
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
    let clear = match map.get("clear") {
        None => false,
        Some(Value::Bool(clear)) => *clear,
        Some(_) => return Err(file.invalid(format!("{at}/clear"), "expected true or false")),
    };
    let fill = match (map.get("value"), file.text(map, "rule", at)?, clear) {
        (Some(value), None, false) => DefaultFill::Json(value.to_string()),
        (None, Some(rule), false) => DefaultFill::Rule(rule),
        (None, None, true) => DefaultFill::Clear,
        _ => {
            return Err(file.invalid(at, "give a `value`, a `rule` or `clear: true`, one of them"));
        }
    };
    let (since, until) = file.releases(map, at)?;
    let when = match file.text(map, "when", at)? {
        None => None,
        Some(text) => Some(parse_when(&text).ok_or_else(|| {
            file.invalid(
                format!("{at}/when"),
                format!("{text:?} is not a condition `field == <JSON>` on a sibling"),
            )
        })?),
    };
    Ok(TypeDefault {
        path,
        fill,
        when,
        since,
        until,
    })
}

/// `type == "RollingUpdate"` → (`type`, `"RollingUpdate"`); a field written as a JSON pointer
/// (`/spec/hostNetwork == true`) is read from the value of the entry's type.
fn parse_when(text: &str) -> Option<(String, String)> {
    let (field, equals) = text.split_once("==")?;
    let (field, equals) = (field.trim(), equals.trim());
    let name = field.strip_prefix('/').unwrap_or(field);
    let is_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || (c == '/' && field.starts_with('/')));
    (is_name && serde_json::from_str::<Value>(equals).is_ok())
        .then(|| (field.to_owned(), equals.to_owned()))
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
    fn each_type_carries_its_own_defaults_and_the_types_between_link_to_it() {
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
    - {path: .spec.strategy, value: {}, since: "1.21"}
"#,
        )
        .unwrap();
        let facts = super::super::KindFacts {
            defaults,
            ..Default::default()
        };
        let generated =
            super::super::generate(&model, &facts, &super::super::Options::default()).unwrap();
        let text: String = generated
            .files
            .iter()
            .map(|f| f.contents.as_str())
            .collect();
        let squeezed: String = text.split_whitespace().collect();
        // Container's static holds its rule once; the types on the way from a kind link to it.
        assert!(
            squeezed.contains(
                "pubstaticContainer:TypeInfo=TypeInfo::new(&[]).defaults(&[kapi::defaulting::Default::rule(\".imagePullPolicy\",kapi::defaulting::Rule::ImagePullPolicy,"
            ),
            "{text}"
        );
        assert!(
            squeezed.contains("field(\"containers\").items(&Container)"),
            "{text}"
        );
        assert!(
            squeezed.contains("field(\"template\").of(&PodSpec)"),
            "{text}"
        );
        assert!(
            squeezed.contains(
                "kapi::defaulting::Default::value(\".spec.strategy\",\"{}\").since(1,21)"
            ),
            "{text}"
        );
        assert_eq!(text.matches("ImagePullPolicy").count(), 1, "{text}");
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
            (
                "- {types: [a], fields: [{path: .a, value: 1, when: type = 1}]}",
                "/0/fields/0/when",
            ),
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
