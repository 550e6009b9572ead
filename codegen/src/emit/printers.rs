//! Printer columns of built-in kinds (`specs/printers/kubernetes.yaml`): parsing and checking.
//! The generator gives each built-in kind its columns as `printer_column(...)` attributes; the
//! rules they name are `kapi::printer::Rule`'s, whose paths the derive checks again.
//!
//! [`Printers::from_yaml_str`] parses text; reading the file is
//! [`load_printers`](crate::load::load_printers)'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::lifecycle::parse_release;
use crate::load::{LoadError, Source};
use crate::model::{ColumnCell, PrinterColumn};

/// Printer columns by API group and kind: every version of a kind in a group shows the same
/// columns, as upstream's printers are written for the group's internal type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Printers {
    /// The columns of each `(group, kind)`, Name included, in order.
    pub kinds: BTreeMap<(String, String), Vec<PrinterColumn>>,
}

impl Printers {
    /// The columns of a kind, if the file gives it any.
    pub fn columns(&self, group: &str, kind: &str) -> Option<&[PrinterColumn]> {
        self.kinds
            .get(&(group.to_owned(), kind.to_owned()))
            .map(Vec::as_slice)
    }

    /// Parses the YAML list described in `specs/printers/README.md`; `path` names the input in
    /// errors.
    pub fn from_yaml_str(path: &Path, text: &str) -> Result<Self, LoadError> {
        let source = Source::file(path);
        let invalid = |pointer: String, message: String| LoadError::Invalid {
            what: "printers",
            source_file: source.clone(),
            pointer,
            message,
        };
        let value: Value = serde_yaml_ng::from_str(text).map_err(|e| LoadError::Syntax {
            format: "YAML",
            source_file: source.clone(),
            message: e.to_string(),
        })?;
        let entries = match &value {
            Value::Array(entries) => entries.as_slice(),
            Value::Null => &[],
            _ => return Err(invalid(String::new(), "expected a list of entries".into())),
        };
        let mut kinds = BTreeMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("/{i}");
            let group = match entry.get("group") {
                None => String::new(),
                Some(Value::String(group)) => group.clone(),
                Some(_) => return Err(invalid(format!("{at}/group"), "expected a string".into())),
            };
            let names: Vec<String> = match entry.get("kinds") {
                Some(Value::Array(names)) if !names.is_empty() => names
                    .iter()
                    .enumerate()
                    .map(|(k, name)| match name {
                        Value::String(name) => Ok(name.clone()),
                        _ => Err(invalid(
                            format!("{at}/kinds/{k}"),
                            "expected a string".into(),
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                _ => {
                    return Err(invalid(
                        format!("{at}/kinds"),
                        "expected a non-empty list of kinds".into(),
                    ));
                }
            };
            let Some(Value::Array(columns)) = entry.get("columns") else {
                return Err(invalid(format!("{at}/columns"), "expected a list".into()));
            };
            let columns = columns
                .iter()
                .enumerate()
                .map(|(c, column)| parse_column(column, &format!("{at}/columns/{c}"), &invalid))
                .collect::<Result<Vec<_>, _>>()?;
            for name in names {
                let key = (group.clone(), name);
                if kinds.insert(key.clone(), columns.clone()).is_some() {
                    return Err(invalid(
                        at.clone(),
                        format!("group {:?} kind {} is listed twice", key.0, key.1),
                    ));
                }
            }
        }
        Ok(Self { kinds })
    }
}

fn parse_column(
    column: &Value,
    at: &str,
    invalid: &dyn Fn(String, String) -> LoadError,
) -> Result<PrinterColumn, LoadError> {
    const KEYS: &[&str] = &[
        "name",
        "type",
        "format",
        "priority",
        "description",
        "cell",
        "since",
        "until",
    ];
    let Some(map) = column.as_object() else {
        return Err(invalid(at.to_owned(), "expected an object".into()));
    };
    if let Some(key) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(invalid(
            format!("{at}/{key}"),
            format!("unknown key (expected one of {})", KEYS.join(", ")),
        ));
    }
    let text = |key: &str| -> Result<Option<String>, LoadError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(invalid(format!("{at}/{key}"), "expected a string".into())),
        }
    };
    let required = |key: &str| -> Result<String, LoadError> {
        text(key)?.ok_or_else(|| invalid(format!("{at}/{key}"), "required".into()))
    };
    let release = |key: &str| {
        text(key)?
            .map(|s| {
                parse_release(&s).ok_or_else(|| {
                    invalid(
                        format!("{at}/{key}"),
                        format!("expected \"MAJOR.MINOR\", found \"{s}\""),
                    )
                })
            })
            .transpose()
    };
    let priority = match map.get("priority") {
        None => 0,
        Some(p) => p
            .as_i64()
            .ok_or_else(|| invalid(format!("{at}/priority"), "expected an integer".into()))?,
    };
    let cell = required("cell")?;
    check_cell(&cell).map_err(|message| invalid(format!("{at}/cell"), message))?;
    let (since, until) = (release("since")?, release("until")?);
    if let (Some(since), Some(until)) = (since, until)
        && until <= since
    {
        return Err(invalid(
            format!("{at}/until"),
            "must be a later release than `since`".into(),
        ));
    }
    Ok(PrinterColumn {
        name: required("name")?,
        ty: required("type")?,
        format: text("format")?,
        description: text("description")?,
        priority,
        cell: ColumnCell::Rule(cell),
        since,
        until,
    })
}

/// `rule(.path, ...)` or `rule`: a snake-case rule name and simple JSON paths. Whether the rule
/// exists and takes that many paths is the derive's to check, against `kapi::printer::Rule`.
fn check_cell(cell: &str) -> Result<(), String> {
    let (name, args) = match cell.split_once('(') {
        Some((name, rest)) => {
            let args = rest
                .strip_suffix(')')
                .ok_or_else(|| format!("{cell:?} does not end with `)`"))?;
            (name.trim(), args)
        }
        None => (cell.trim(), ""),
    };
    let snake = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !snake {
        return Err(format!(
            "{cell:?} does not name a rule: write `rule(.path, ...)` with a snake-case rule of kapi::printer::Rule"
        ));
    }
    for path in args.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        if path.len() < 2 || !path.starts_with('.') {
            return Err(format!(
                "{path:?} is not a simple JSON path: start it with `.`, e.g. \".spec.replicas\""
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "printers.yaml";

    fn parse(text: &str) -> Result<Printers, LoadError> {
        Printers::from_yaml_str(Path::new(FILE), text)
    }

    #[test]
    fn columns_apply_to_every_kind_listed() {
        let printers = parse(
            r#"
- group: apps
  kinds: [Deployment]
  columns:
    - {name: Name, type: string, format: name, cell: "text(.metadata.name)"}
    - name: Ready
      type: string
      description: Number of the pod with ready state
      cell: ratio(.status.readyReplicas, .spec.replicas)
      since: "1.20"
      until: "1.40"
"#,
        )
        .unwrap();
        let columns = printers.columns("apps", "Deployment").unwrap();
        assert_eq!(columns.len(), 2);
        assert_eq!(columns[0].format.as_deref(), Some("name"));
        assert_eq!(
            columns[1].cell,
            ColumnCell::Rule("ratio(.status.readyReplicas, .spec.replicas)".into())
        );
        assert_eq!(
            (columns[1].since, columns[1].until),
            (Some((1, 20)), Some((1, 40)))
        );
        assert!(printers.columns("", "Deployment").is_none());
    }

    #[test]
    fn errors_name_the_file_and_the_json_path() {
        let cases = [
            (
                "- {kinds: [Pod], columns: [{name: A, type: string}]}",
                "/0/columns/0/cell",
            ),
            (
                "- {kinds: [Pod], columns: [{name: A, type: string, cell: \"Text(.a)\"}]}",
                "/0/columns/0/cell",
            ),
            (
                "- {kinds: [Pod], columns: [{name: A, type: string, cell: \"text(a)\"}]}",
                "/0/columns/0/cell",
            ),
            (
                "- {kinds: [Pod], columns: [{name: A, type: string, cell: \"text(.a)\", width: 3}]}",
                "/0/columns/0/width",
            ),
            (
                "- {kinds: [Pod], columns: [{name: A, type: string, cell: \"text(.a)\", since: \"1.30\", until: \"1.20\"}]}",
                "/0/columns/0/until",
            ),
            ("- {kinds: [], columns: []}", "/0/kinds"),
            (
                "- {kinds: [Pod], columns: []}\n- {kinds: [Pod], columns: []}",
                "/1",
            ),
        ];
        for (text, pointer) in cases {
            match parse(text) {
                Err(LoadError::Invalid {
                    pointer: found,
                    source_file,
                    ..
                }) => {
                    assert_eq!(found, pointer, "{text}");
                    assert!(source_file.to_string().contains(FILE));
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
