//! The representations an object or a page of objects is answered in: the object itself,
//! `PartialObjectMetadata[List]`, or a `Table` of the kind's columns (Name, then its printer
//! columns, or Created At without any), each row embedding the object as `includeObject` asks.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value};

use crate::ResourceInfo;
use crate::meta::{
    IncludeObjectPolicy, ListMeta, ObjectMeta, PartialObjectMetadata, PartialObjectMetadataList,
    Table, TableColumnDefinition, TableOptions, TableRow,
};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::{self, Output, Shape};
use crate::server::objects::json::eval_path;

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
    include: IncludeObjectPolicy,
}

impl Rendering {
    pub(crate) fn of(call: &Call, output: Output) -> Result<Self, ApiError> {
        let include = match output.shape {
            Shape::Table => call.query::<TableOptions>()?.include_object(),
            _ => IncludeObjectPolicy::Metadata,
        };
        Ok(Self {
            shape: output.shape,
            include,
        })
    }

    /// One object as asked.
    pub(crate) fn object(&self, info: &ResourceInfo, object: Value) -> Value {
        match self.shape {
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
                let rows = vec![self.row(info, &object)];
                to_value(Table::new(meta, self.columns(info), rows))
            }
        }
    }

    /// The columns of the kind's table: Name, then its printer columns, or Created At without
    /// any.
    fn columns(&self, info: &ResourceInfo) -> Vec<TableColumnDefinition> {
        let mut out = vec![TableColumnDefinition::name_column()];
        if info.printer_columns.is_empty() {
            out.push(TableColumnDefinition::created_at_column());
        } else {
            out.extend(info.printer_columns.iter().map(TableColumnDefinition::from));
        }
        out
    }

    /// One table row for an object.
    fn row(&self, info: &ResourceInfo, object: &Value) -> TableRow {
        let name = object
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::from(""));
        let mut cells = vec![name];
        if info.printer_columns.is_empty() {
            cells.push(
                object
                    .pointer("/metadata/creationTimestamp")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
        } else {
            for column in info.printer_columns.iter() {
                cells.push(
                    eval_path(object, &column.json_path)
                        .cloned()
                        .unwrap_or(Value::Null),
                );
            }
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
        match self.shape {
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
                let rows = items.iter().map(|o| self.row(info, o)).collect();
                to_value(Table::new(meta, self.columns(info), rows))
            }
        }
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
