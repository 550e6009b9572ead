//! Printer columns of built-in kinds (`specs/printers/kubernetes.yaml`): parsing and checking.
//! The generator gives each built-in kind its columns as `printer_column(...)` attributes; the
//! rules they name are `kapi::printer::Rule`'s, whose paths the derive checks again.
//!
//! [`Printers::from_yaml_str`] parses text; reading the file is
//! [`load_printers`](crate::load::load_printers)'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::data_file::DataText;
use crate::load::LoadError;
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
        let file = DataText::new("printers", path);
        let mut kinds = BTreeMap::new();
        for (i, entry) in file.entries(text)?.iter().enumerate() {
            let at = format!("/{i}");
            let entry = file.object(entry, &at, &["group", "kinds", "columns"])?;
            let group = file.text(entry, "group", &at)?.unwrap_or_default();
            let names = file.names(&Value::Object(entry.clone()), "kinds", &at)?;
            let Some(Value::Array(columns)) = entry.get("columns") else {
                return Err(file.invalid(format!("{at}/columns"), "expected a list"));
            };
            let columns = columns
                .iter()
                .enumerate()
                .map(|(c, column)| parse_column(&file, column, &format!("{at}/columns/{c}")))
                .collect::<Result<Vec<_>, _>>()?;
            for name in names {
                let key = (group.clone(), name);
                if kinds.insert(key.clone(), columns.clone()).is_some() {
                    return Err(file.invalid(
                        at.clone(),
                        format!("group {:?} kind {} is listed twice", key.0, key.1),
                    ));
                }
            }
        }
        Ok(Self { kinds })
    }
}

fn parse_column(file: &DataText, column: &Value, at: &str) -> Result<PrinterColumn, LoadError> {
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
    let map = file.object(column, at, KEYS)?;
    let required = |key: &str| -> Result<String, LoadError> {
        file.text(map, key, at)?
            .ok_or_else(|| file.invalid(format!("{at}/{key}"), "required"))
    };
    let priority = match map.get("priority") {
        None => 0,
        Some(p) => p
            .as_i64()
            .ok_or_else(|| file.invalid(format!("{at}/priority"), "expected an integer"))?,
    };
    let cell = required("cell")?;
    check_cell(&cell).map_err(|message| file.invalid(format!("{at}/cell"), message))?;
    let (since, until) = file.releases(map, at)?;
    Ok(PrinterColumn {
        name: required("name")?,
        ty: required("type")?,
        format: file.text(map, "format", at)?,
        description: file.text(map, "description", at)?,
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
