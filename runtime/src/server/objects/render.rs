//! The representations an object or a page of objects is answered in: the object itself,
//! `PartialObjectMetadata[List]`, or a `Table` of the kind's columns (Name, then its printer
//! columns, or Created At without any), each row embedding the object as `includeObject` asks.

use axum::http::StatusCode;
use axum::response::Response;
use jiff::Timestamp;
use serde_json::{Map, Value};

use crate::meta::{
    IncludeObjectPolicy, ListMeta, ObjectMeta, PartialObjectMetadata, PartialObjectMetadataList,
    Table, TableColumnDefinition, TableOptions, TableRow,
};
use crate::printer::{Cell, Rule};
use crate::{KubeVersion, PrinterColumn, ResourceInfo};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::{self, Output, Shape};

/// Answers with one object, rendered as asked.
pub(crate) fn reply(
    call: &Call,
    output: Output,
    code: StatusCode,
    object: Value,
) -> Result<Response, ApiError> {
    let value = Rendering::of(call, output)?.object(call.info(), object);
    Ok(negotiate::encode(output.format, code, &value))
}

/// How a request wants its objects: whole, as metadata only, or as table rows embedding them
/// as `includeObject` asks (read from the query only for tables, as upstream does).
#[derive(Debug, Clone)]
pub(crate) struct Rendering {
    shape: Shape,
    /// The `meta.k8s.io` version a table or partial metadata is written in.
    meta_version: &'static str,
    include: IncludeObjectPolicy,
    /// The release served: the built-ins' columns differ between releases.
    release: KubeVersion,
}

impl Rendering {
    pub(crate) fn of(call: &Call, output: Output) -> Result<Self, ApiError> {
        let include = match output.shape {
            Shape::Table => call.query::<TableOptions>()?.include_object(),
            _ => IncludeObjectPolicy::Metadata,
        };
        // Upstream's `ValidateTableOptions`, as `optionsForTransform` words its failure.
        if let IncludeObjectPolicy::Other(value) = &include {
            return Err(ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: \
                 {value:?}: must be 'Metadata', 'Object', 'None', or empty"
            )));
        }
        Ok(Self {
            shape: output.shape,
            meta_version: output.meta_version,
            include,
            release: call.state.kube_version,
        })
    }

    /// One object as asked.
    pub(crate) fn object(&self, info: &ResourceInfo, object: Value) -> Value {
        let rendered = match self.shape {
            Shape::Object => object,
            Shape::Partial => to_value(PartialObjectMetadata::new(object_meta(&object))),
            Shape::Table => {
                let meta = ListMeta {
                    resource_version: object
                        .pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    ..ListMeta::default()
                };
                let rows = vec![self.row(info, &object, Timestamp::now())];
                to_value(Table::new(meta, self.columns(info), rows))
            }
        };
        self.in_meta_version(rendered)
    }

    /// A meta.k8s.io answer in the version asked: the `Table` or `PartialObjectMetadata[List]`
    /// and what it embeds (list items, row objects), which are built as `meta.k8s.io/v1`.
    fn in_meta_version(&self, mut value: Value) -> Value {
        if self.shape == Shape::Object || self.meta_version == "v1" {
            return value;
        }
        let api_version = Value::from(format!("meta.k8s.io/{}", self.meta_version));
        let retag = |object: &mut Value| {
            if let Some(object) = object.as_object_mut()
                && object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with("meta.k8s.io/"))
            {
                object.insert("apiVersion".into(), api_version.clone());
            }
        };
        retag(&mut value);
        for item in value
            .get_mut("items")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            retag(item);
        }
        for row in value
            .get_mut("rows")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(object) = row.get_mut("object") {
                retag(object);
            }
        }
        value
    }

    /// The columns of the kind's table in the release served: Name, then its printer columns,
    /// or Created At without any in that release.
    fn columns(&self, info: &ResourceInfo) -> Vec<TableColumnDefinition> {
        let mut out = Vec::new();
        if !self.names_itself(info) {
            out.push(TableColumnDefinition::name_column(self.release));
        }
        if self.printer_columns(info).next().is_none() {
            out.push(TableColumnDefinition::created_at_column());
        } else {
            out.extend(self.printer_columns(info).map(TableColumnDefinition::from));
        }
        out
    }

    fn printer_columns<'a>(
        &self,
        info: &'a ResourceInfo,
    ) -> impl Iterator<Item = &'a PrinterColumn> {
        let release = self.release;
        info.printer_columns
            .iter()
            .filter(move |column| column.releases.contains(release))
    }

    /// Whether the kind's columns in the release served place the Name column themselves (an
    /// Event's is last, a StorageClass's says `(default)`).
    fn names_itself(&self, info: &ResourceInfo) -> bool {
        self.printer_columns(info)
            .any(|column| matches!(column.cell, Cell::Rule(rule, _) if rule.names_row()))
    }

    /// One table row for an object, its cells as of `now`.
    fn row(&self, info: &ResourceInfo, object: &Value, now: Timestamp) -> TableRow {
        let mut cells = Vec::new();
        if !self.names_itself(info) {
            cells.push(Rule::Name.apply(object, &[], now));
        }
        if self.printer_columns(info).next().is_none() {
            cells.push(
                object
                    .pointer("/metadata/creationTimestamp")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
        } else {
            cells.extend(
                self.printer_columns(info)
                    .map(|column| column.cell.value(object, now)),
            );
        }
        let embedded = match self.include {
            IncludeObjectPolicy::None => Value::Null,
            IncludeObjectPolicy::Object => object.clone(),
            _ => to_value(PartialObjectMetadata::new(object_meta(object))),
        };
        TableRow {
            cells,
            conditions: Vec::new(),
            object: serde_json::from_value(embedded).unwrap_or_default(),
        }
    }

    /// A page of objects, with its list metadata, as asked.
    pub(crate) fn list(&self, info: &ResourceInfo, meta: ListMeta, items: Vec<Value>) -> Value {
        let rendered = match self.shape {
            Shape::Object => {
                // Key order as the spliced JSON list body writes it: kind, apiVersion,
                // metadata, items.
                let mut list = Map::new();
                list.insert("kind".into(), Value::from(info.list_kind()));
                list.insert("apiVersion".into(), Value::from(info.api_version()));
                list.insert("metadata".into(), to_value(&meta));
                list.insert("items".into(), Value::Array(items));
                Value::Object(list)
            }
            Shape::Partial => {
                let metas = items.iter().map(object_meta).collect();
                to_value(PartialObjectMetadataList::new(meta, metas))
            }
            Shape::Table => {
                // One clock reading for the page, so every row's age is as of the same moment.
                let now = Timestamp::now();
                let rows = items.iter().map(|o| self.row(info, o, now)).collect();
                to_value(Table::new(meta, self.columns(info), rows))
            }
        };
        self.in_meta_version(rendered)
    }
}

/// The JSON of a meta type; these serialize infallibly (string keys, no foreign types).
fn to_value<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn object_meta(object: &Value) -> ObjectMeta {
    object
        .get("metadata")
        .and_then(|m| serde_json::from_value(m.clone()).ok())
        .unwrap_or_default()
}
