//! JSON schema text (Swagger 2.0, OpenAPI 3.0 or a CRD's structural schema) → [`Schema`].
//!
//! This is where the dialects meet: each spells references, int-or-string and Quantity its own way,
//! and all of them come out as one [`SchemaType`]. Shape-changing keywords become the tree;
//! validation-only keywords are kept verbatim in [`Schema::constraints`]; unknown annotations
//! (`title`, `example`, `externalDocs`, ...) are dropped.

use std::collections::BTreeSet;

use serde_json::Value;

use super::error::{Cx, LoadError, Ptr, json_type};
use super::json::{Obj, array, flag, opt_object, opt_str, strings};
use crate::model::{Extensions, ListType, MapType, ObjectType, Property, Schema, SchemaType};

/// Which document format a schema comes from; it decides how `$ref` is spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Swagger2,
    OpenApi3,
    Crd,
}

/// Keywords that constrain values without changing their shape.
const CONSTRAINTS: [&str; 16] = [
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "oneOf",
    "anyOf",
    "allOf",
];

/// Parses one schema node and everything below it.
pub(crate) fn parse_schema(
    cx: &Cx<'_>,
    v: &Value,
    at: &Ptr<'_>,
    dialect: Dialect,
) -> Result<Schema, LoadError> {
    let Some(m) = v.as_object() else {
        return Err(cx.invalid(
            at,
            format!("expected a schema object, found {}", json_type(v)),
        ));
    };
    let mut schema = Schema {
        description: opt_str(cx, m, "description", at)?.map(str::to_owned),
        default: m.get("default").cloned(),
        nullable: flag(cx, m, "nullable", at)?,
        enum_values: array(cx, m, "enum", at)?.to_vec(),
        ext: extensions(cx, m, at)?,
        ..Schema::default()
    };
    for key in CONSTRAINTS.iter().chain(&["not"]) {
        if let Some(value) = m.get(*key) {
            schema.constraints.insert((*key).to_owned(), value.clone());
        }
    }
    schema.ty = shape(cx, m, at, dialect, &mut schema)?;
    Ok(schema)
}

fn shape(
    cx: &Cx<'_>,
    m: &Obj,
    at: &Ptr<'_>,
    dialect: Dialect,
    schema: &mut Schema,
) -> Result<SchemaType, LoadError> {
    if let Some(r) = m.get("$ref") {
        return reference(cx, r, &at.key("$ref"), dialect);
    }
    let ty = opt_str(cx, m, "type", at)?;
    // OpenAPI 3 cannot put siblings next to `$ref`, so upstream wraps a described reference as
    // `allOf: [{$ref}]`; unwrap it so v2 and v3 give the same tree.
    if ty.is_none()
        && let Some([Value::Object(only)]) =
            m.get("allOf").and_then(Value::as_array).map(Vec::as_slice)
        && only.len() == 1
        && let Some(r) = only.get("$ref")
    {
        schema.constraints.remove("allOf");
        let all_of = at.key("allOf");
        let first = all_of.index(0);
        return reference(cx, r, &first.key("$ref"), dialect);
    }
    let format = opt_str(cx, m, "format", at)?.map(str::to_owned);
    if schema.ext.int_or_string || format.as_deref() == Some("int-or-string") {
        drop_type_union(m, schema);
        return Ok(SchemaType::IntOrString);
    }
    let Some(ty) = ty else {
        if let Some(union) = type_union(cx, m, at)? {
            drop_type_union(m, schema);
            return Ok(union);
        }
        if m.contains_key("properties") || m.contains_key("additionalProperties") {
            return object(cx, m, at, dialect);
        }
        return Ok(SchemaType::Any);
    };
    Ok(match ty {
        "object" => object(cx, m, at, dialect)?,
        "array" => {
            let items = match m.get("items") {
                None | Some(Value::Null) => {
                    return Err(cx.invalid(at, "array schema without items"));
                }
                Some(Value::Array(_)) => {
                    return Err(cx.invalid(
                        &at.key("items"),
                        "unsupported construct: tuple items (an array of schemas)",
                    ));
                }
                Some(items) => parse_schema(cx, items, &at.key("items"), dialect)?,
            };
            SchemaType::Array(Box::new(items))
        }
        "string" => SchemaType::String { format },
        "integer" => SchemaType::Integer { format },
        "number" => SchemaType::Number { format },
        "boolean" => SchemaType::Boolean,
        other => return Err(cx.invalid(&at.key("type"), format!("unknown type \"{other}\""))),
    })
}

fn object(cx: &Cx<'_>, m: &Obj, at: &Ptr<'_>, dialect: Dialect) -> Result<SchemaType, LoadError> {
    let additional = match m.get("additionalProperties") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) => Some(Schema::default()),
        Some(v) => Some(parse_schema(
            cx,
            v,
            &at.key("additionalProperties"),
            dialect,
        )?),
    };
    let required: BTreeSet<String> = strings(cx, m, "required", at)?.into_iter().collect();
    let mut properties = Vec::new();
    if let Some(props) = opt_object(cx, m, "properties", at)? {
        let here = at.key("properties");
        for (name, v) in props {
            let schema = parse_schema(cx, v, &here.key(name), dialect)?;
            properties.push(Property {
                name: name.clone(),
                schema,
            });
        }
    }
    if properties.is_empty()
        && required.is_empty()
        && let Some(value) = additional
    {
        return Ok(SchemaType::Map(Box::new(value)));
    }
    Ok(SchemaType::Object(ObjectType {
        properties,
        required,
        additional_properties: additional.map(Box::new),
    }))
}

fn reference(
    cx: &Cx<'_>,
    r: &Value,
    at: &Ptr<'_>,
    dialect: Dialect,
) -> Result<SchemaType, LoadError> {
    let Value::String(r) = r else {
        return Err(cx.invalid(at, format!("expected a string, found {}", json_type(r))));
    };
    let prefix = match dialect {
        Dialect::Swagger2 => "#/definitions/",
        Dialect::OpenApi3 => "#/components/schemas/",
        Dialect::Crd => {
            return Err(cx.invalid(at, "$ref is not allowed in a CRD schema"));
        }
    };
    match r.strip_prefix(prefix) {
        Some(name) if !name.is_empty() => Ok(SchemaType::Ref(name.to_owned())),
        _ => Err(cx.invalid(
            at,
            format!("unsupported $ref \"{r}\": expected {prefix}<name>"),
        )),
    }
}

/// A `oneOf`/`anyOf` whose branches only name types is a union of shapes, not a validation rule.
/// Only the two unions Kubernetes uses are representable: integer|string (IntOrString) and
/// number|string, which OpenAPI 3 uses for Quantity where Swagger 2.0 says `string`.
fn type_union(cx: &Cx<'_>, m: &Obj, at: &Ptr<'_>) -> Result<Option<SchemaType>, LoadError> {
    for key in ["oneOf", "anyOf"] {
        let branches = array(cx, m, key, at)?;
        let typed = branches
            .iter()
            .any(|b| b.get("type").is_some() || b.get("$ref").is_some());
        if !typed {
            continue;
        }
        let mut types = BTreeSet::new();
        for b in branches {
            match b.as_object() {
                Some(o) if o.len() == 1 => {
                    if let Some(Value::String(t)) = o.get("type") {
                        types.insert(t.as_str());
                        continue;
                    }
                }
                _ => {}
            }
            return Err(cx.invalid(
                &at.key(key),
                "unsupported construct: a union of schemas (only integer|string and number|string are supported)",
            ));
        }
        let types: Vec<&str> = types.into_iter().collect();
        return match types.as_slice() {
            ["integer", "string"] => Ok(Some(SchemaType::IntOrString)),
            ["number", "string"] => Ok(Some(SchemaType::String { format: None })),
            other => Err(cx.invalid(
                &at.key(key),
                format!(
                    "unsupported construct: a union of types {}",
                    other.join("|")
                ),
            )),
        };
    }
    Ok(None)
}

/// Drops the `oneOf`/`anyOf` that spelled a union shape, so constraints keep only validation.
fn drop_type_union(m: &Obj, schema: &mut Schema) {
    for key in ["oneOf", "anyOf"] {
        let pure = m.get(key).and_then(Value::as_array).is_some_and(|bs| {
            bs.iter().all(|b| {
                b.as_object()
                    .is_some_and(|o| o.len() == 1 && o.contains_key("type"))
            })
        });
        if pure {
            schema.constraints.remove(key);
        }
    }
}

fn extensions(cx: &Cx<'_>, m: &Obj, at: &Ptr<'_>) -> Result<Extensions, LoadError> {
    let list_type = match opt_str(cx, m, "x-kubernetes-list-type", at)? {
        None => None,
        Some(s) => Some(ListType::parse(s).ok_or_else(|| {
            cx.invalid(
                &at.key("x-kubernetes-list-type"),
                format!("unknown list type \"{s}\" (expected atomic, set or map)"),
            )
        })?),
    };
    let map_type = match opt_str(cx, m, "x-kubernetes-map-type", at)? {
        None => None,
        Some(s) => Some(MapType::parse(s).ok_or_else(|| {
            cx.invalid(
                &at.key("x-kubernetes-map-type"),
                format!("unknown map type \"{s}\" (expected atomic or granular)"),
            )
        })?),
    };
    Ok(Extensions {
        list_type,
        list_map_keys: strings(cx, m, "x-kubernetes-list-map-keys", at)?,
        map_type,
        patch_strategy: opt_str(cx, m, "x-kubernetes-patch-strategy", at)?.map(str::to_owned),
        patch_merge_key: opt_str(cx, m, "x-kubernetes-patch-merge-key", at)?.map(str::to_owned),
        preserve_unknown_fields: flag(cx, m, "x-kubernetes-preserve-unknown-fields", at)?,
        embedded_resource: flag(cx, m, "x-kubernetes-embedded-resource", at)?,
        int_or_string: flag(cx, m, "x-kubernetes-int-or-string", at)?,
        validations: array(cx, m, "x-kubernetes-validations", at)?.to_vec(),
        unions: array(cx, m, "x-kubernetes-unions", at)?.to_vec(),
    })
}

#[cfg(test)]
mod tests;
