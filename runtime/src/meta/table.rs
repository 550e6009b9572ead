//! `Table`: the tabular form of objects that `kubectl get` asks for, and `TableOptions`.
//!
//! A client asks for it with `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`. Each row
//! has one cell per column definition and, depending on `includeObject`, the object itself, its
//! metadata as a `PartialObjectMetadata` (the default) or nothing.

use serde::{Deserialize, Serialize};

use super::partial::META_API_VERSION;
use super::{ConditionStatus, ListMeta};
use crate::RawExtension;
use crate::open_enum;
use crate::printer::Cell;
use crate::resource::{KubeVersion, PrinterColumn};
use crate::wire::null_as_default;

/// Objects in tabular form (`metav1.Table`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Table {
    /// `Table` when built by [`Table::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `meta.k8s.io/v1` when built by [`Table::new`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Resource version and continue token of the underlying list; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: ListMeta,
    /// The columns; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub column_definitions: Vec<TableColumnDefinition>,
    /// The rows, each as wide as `column_definitions`; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub rows: Vec<TableRow>,
}

impl Table {
    /// A table with `kind: Table` and `apiVersion: meta.k8s.io/v1`.
    pub fn new(
        metadata: ListMeta,
        column_definitions: Vec<TableColumnDefinition>,
        rows: Vec<TableRow>,
    ) -> Self {
        Self {
            kind: Some("Table".to_owned()),
            api_version: Some(META_API_VERSION.to_owned()),
            metadata,
            column_definitions,
            rows,
        }
    }
}

/// One column of a [`Table`]. Every field is always written, `""`/`0` included.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableColumnDefinition {
    /// Column header, e.g. `Name`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub name: String,
    /// OpenAPI type of the cells: `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type", default, deserialize_with = "null_as_default")]
    pub type_: String,
    /// OpenAPI format hint; `name` marks the column holding the object's name.
    #[serde(default, deserialize_with = "null_as_default")]
    pub format: String,
    /// Human-readable description.
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    /// 0 for the default view; higher values are shown only in wide output.
    #[serde(default)]
    pub priority: i32,
}

/// `ObjectMeta.name`'s documentation up to its link (`SwaggerDoc()` of k8s.io/apimachinery).
const OBJECT_META_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated.";

/// `ObjectMeta.creationTimestamp`'s documentation, the same in every release kapi serves.
const OBJECT_META_CREATION_TIMESTAMP: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

impl TableColumnDefinition {
    /// The `Name` column a table starts with (format `name`) in release `release`, described
    /// by `ObjectMeta.name`'s documentation, as upstream's default table convertor does (its
    /// link changed in 1.27).
    pub fn name_column(release: KubeVersion) -> Self {
        let link = if release < KubeVersion::new(1, 27) {
            "http://kubernetes.io/docs/user-guide/identifiers#names"
        } else {
            "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
        };
        Self {
            name: "Name".to_owned(),
            type_: "string".to_owned(),
            format: "name".to_owned(),
            description: format!("{OBJECT_META_NAME} More info: {link}"),
            priority: 0,
        }
    }

    /// The `Created At` column of a kind without printer columns (upstream's default table
    /// convertor), described by `ObjectMeta.creationTimestamp`'s documentation.
    pub fn created_at_column() -> Self {
        Self {
            name: "Created At".to_owned(),
            type_: "date".to_owned(),
            format: String::new(),
            description: OBJECT_META_CREATION_TIMESTAMP.to_owned(),
            priority: 0,
        }
    }
}

impl From<&PrinterColumn> for TableColumnDefinition {
    fn from(column: &PrinterColumn) -> Self {
        // A column naming the row is a `name` column unless it says otherwise (upstream's
        // StorageVersionMigration leaves the format out).
        let format = match (&column.format, &column.cell) {
            (Some(format), _) => format,
            (None, Cell::Rule(rule, _)) if rule.names_row() => "name",
            (None, _) => "",
        };
        Self {
            name: column.name.to_string(),
            type_: column.type_.to_string(),
            format: format.to_owned(),
            description: column.description.as_deref().unwrap_or_default().to_owned(),
            priority: column.priority,
        }
    }
}

/// One row of a [`Table`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableRow {
    /// One value per column: strings, numbers, booleans, small maps or lists, or `null`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub cells: Vec<serde_json::Value>,
    /// Row conditions such as `Completed`; omitted when empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<TableRowCondition>,
    /// The object, its `PartialObjectMetadata`, or `null` for `includeObject=None`.
    ///
    /// Always written: upstream's `omitempty` has no effect on its struct-typed field, and Go
    /// writes an empty extension as `null`. A missing `object` reads as `null`.
    #[serde(default)]
    pub object: RawExtension,
}

open_enum! {
    /// The type of a [`TableRowCondition`]; upstream defines only `Completed`.
    pub enum RowConditionType {
        /// The object has run to completion and may be shown with less emphasis.
        Completed = "Completed",
    }
}

impl Default for RowConditionType {
    /// The empty string, what Go reads a missing `type` as.
    fn default() -> Self {
        Self::Other(String::new())
    }
}

/// A condition of a table row (`metav1.TableRowCondition`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableRowCondition {
    /// The condition type; always written.
    #[serde(rename = "type", default, deserialize_with = "null_as_default")]
    pub type_: RowConditionType,
    /// `True`, `False` or `Unknown`; always written.
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: ConditionStatus,
    /// Machine-readable reason; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

open_enum! {
    /// How much of each object a [`Table`] row carries (`includeObject`).
    pub enum IncludeObjectPolicy {
        /// No object: `object` is `null`.
        None = "None",
        /// The object's metadata as a `PartialObjectMetadata` (the server's default).
        Metadata = "Metadata",
        /// The whole object.
        Object = "Object",
    }
}

/// Options of a Table request (`metav1.TableOptions`), read from the query string.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableOptions {
    /// Usually unset; `TableOptions` when sent as a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Usually unset; `meta.k8s.io/v1` when sent as a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// What each row carries; unset means [`IncludeObjectPolicy::Metadata`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_object: Option<IncludeObjectPolicy>,
}

impl TableOptions {
    /// The policy in effect: the one requested, or `Metadata` when none was.
    pub fn include_object(&self) -> IncludeObjectPolicy {
        self.include_object
            .clone()
            .unwrap_or(IncludeObjectPolicy::Metadata)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use serde_json::{Value, json};

    use super::*;

    fn round_trip<T>(value: &Value) -> T
    where
        T: Serialize + for<'de> Deserialize<'de>,
    {
        let typed: T = serde_json::from_value(value.clone()).expect("decode");
        assert_eq!(&serde_json::to_value(&typed).expect("encode"), value);
        typed
    }

    #[test]
    fn full_table_round_trips() {
        let doc = json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "2947301"},
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "description": "the name", "priority": 0},
                {"name": "Ready", "type": "string", "format": "", "description": "", "priority": 0},
                {"name": "Restarts", "type": "integer", "format": "", "description": "", "priority": 0},
                {"name": "IP", "type": "string", "format": "", "description": "", "priority": 1}
            ],
            "rows": [
                {
                    "cells": ["web-0", "1/1", 0, null],
                    "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                               "metadata": {"name": "web-0", "namespace": "default"}}
                },
                {
                    "cells": ["job-1", "0/1", 2, "10.0.0.7"],
                    "conditions": [{"type": "Completed", "status": "True"}],
                    "object": null
                }
            ]
        });
        let table: Table = round_trip(&doc);
        assert_eq!(table.column_definitions[3].priority, 1);
        assert_eq!(table.rows[0].cells[2], json!(0));
        assert_eq!(table.rows[0].object["metadata"]["name"], "web-0");
        assert!(table.rows[1].object.is_null());
        assert_eq!(
            table.rows[1].conditions[0].type_,
            RowConditionType::Completed
        );
        assert_eq!(table.rows[1].conditions[0].status, ConditionStatus::True);
    }

    #[test]
    fn required_fields_are_written_when_empty() {
        let cases = [
            (
                serde_json::to_value(Table::new(ListMeta::default(), vec![], vec![])),
                json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
                       "columnDefinitions": [], "rows": []}),
            ),
            (
                serde_json::to_value(TableColumnDefinition::default()),
                json!({"name": "", "type": "", "format": "", "description": "", "priority": 0}),
            ),
            (
                serde_json::to_value(TableRow::default()),
                json!({"cells": [], "object": null}),
            ),
            (
                serde_json::to_value(TableRowCondition {
                    type_: RowConditionType::Completed,
                    status: ConditionStatus::False,
                    reason: Some("Running".into()),
                    message: None,
                }),
                json!({"type": "Completed", "status": "False", "reason": "Running"}),
            ),
            (serde_json::to_value(TableOptions::default()), json!({})),
        ];
        for (got, want) in cases {
            assert_eq!(got.expect("encode"), want);
        }
    }

    #[test]
    fn missing_object_reads_as_null_and_is_then_written() {
        let row: TableRow = serde_json::from_value(json!({"cells": ["a"]})).expect("decode");
        assert!(row.object.is_null());
        assert_eq!(
            serde_json::to_value(&row).expect("encode"),
            json!({"cells": ["a"], "object": null})
        );
    }

    #[test]
    fn table_options_policy() {
        let cases = [
            (json!({}), IncludeObjectPolicy::Metadata),
            (json!({"includeObject": "None"}), IncludeObjectPolicy::None),
            (
                json!({"includeObject": "Object"}),
                IncludeObjectPolicy::Object,
            ),
            (
                json!({"includeObject": "Metadata"}),
                IncludeObjectPolicy::Metadata,
            ),
            (
                json!({"includeObject": "Everything"}),
                IncludeObjectPolicy::Other("Everything".into()),
            ),
        ];
        for (doc, want) in cases {
            let opts: TableOptions = round_trip(&doc);
            assert_eq!(opts.include_object(), want, "{doc}");
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        for bad in [
            json!({"rows": {}}),
            json!({"columnDefinitions": [{"priority": "high"}]}),
            json!({"rows": [{"cells": "a"}]}),
            json!({"rows": [{"cells": [], "conditions": [{"status": 1}]}]}),
        ] {
            assert!(
                serde_json::from_value::<Table>(bad.clone()).is_err(),
                "{bad} should not decode"
            );
        }
    }

    #[test]
    fn columns_from_printer_columns() {
        let column = PrinterColumn {
            name: Cow::Borrowed("Replicas"),
            type_: Cow::Borrowed("integer"),
            format: Some(Cow::Borrowed("int32")),
            description: None,
            priority: 1,
            cell: crate::printer::Cell::Path(Cow::Borrowed(".spec.replicas")),
            releases: crate::printer::Releases::ALL,
        };
        assert_eq!(
            serde_json::to_value(TableColumnDefinition::from(&column)).expect("encode"),
            json!({"name": "Replicas", "type": "integer", "format": "int32", "description": "", "priority": 1})
        );
        let old = TableColumnDefinition::name_column(KubeVersion::new(1, 20));
        let new = TableColumnDefinition::name_column(KubeVersion::new(1, 36));
        assert_eq!((old.format.as_str(), new.format.as_str()), ("name", "name"));
        // The texts printers.go takes from ObjectMeta's documentation in each release.
        assert!(
            old.description
                .ends_with("More info: http://kubernetes.io/docs/user-guide/identifiers#names")
        );
        assert!(
            new.description
                .ends_with("/working-with-objects/names#names")
        );
        assert_eq!(TableColumnDefinition::created_at_column().type_, "date");
    }
}
