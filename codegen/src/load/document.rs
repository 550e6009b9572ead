//! One Swagger 2.0 or OpenAPI 3.0 document → its type definitions and kinds.
//!
//! Both formats carry the same content in different places: definitions under `definitions` or
//! `components.schemas`, kinds in `x-kubernetes-group-version-kind` on definitions, resources in
//! `paths` (see [`super::paths`]). The result is a [`Parts`] that [`super::Merger`] folds into the
//! model together with the other inputs.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::{Cx, LoadError, Ptr};
use super::json::{array, object, opt_object, opt_str};
use super::paths::{parse_gvk, resources};
use super::schema::{Dialect, parse_schema};
use crate::model::{Gvk, Kind, Schema};

/// What one input document contributes to the model.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    /// Definitions with the JSON pointer where each one sits in its document.
    pub(crate) types: Vec<(String, Schema, String)>,
    pub(crate) kinds: Vec<Kind>,
    /// Documents skipped because they hold no CRD, one sentence each.
    pub(crate) skipped: Vec<String>,
}

/// Loads a Swagger 2.0 (`dialect` = Swagger2) or OpenAPI 3.0 document.
pub(crate) fn load_document(
    cx: &Cx<'_>,
    root: &Value,
    dialect: Dialect,
) -> Result<Parts, LoadError> {
    let cx = cx.with_what("spec");
    let top = Ptr::Root;
    let doc = object(&cx, root, &top)?;
    let (version_key, base): (&str, [&str; 2]) = match dialect {
        Dialect::OpenApi3 => ("openapi", ["components", "schemas"]),
        _ => ("swagger", ["definitions", ""]),
    };
    let version = opt_str(&cx, doc, version_key, &top)?.unwrap_or_default();
    let supported = match dialect {
        Dialect::OpenApi3 => version.starts_with("3.0"),
        _ => version == "2.0",
    };
    if !supported {
        return Err(cx.invalid(
            &top.key(version_key),
            format!("unsupported version \"{version}\""),
        ));
    }
    let first = top.key(base[0]);
    let (defs, defs_at) = if base[1].is_empty() {
        (opt_object(&cx, doc, base[0], &top)?, top.key(base[0]))
    } else {
        let components = opt_object(&cx, doc, base[0], &top)?;
        let schemas = match components {
            Some(c) => opt_object(&cx, c, base[1], &first)?,
            None => None,
        };
        (schemas, first.key(base[1]))
    };

    let mut parts = Parts::default();
    let mut declared: BTreeMap<Gvk, String> = BTreeMap::new();
    let schema_cx = cx.with_what("schema");
    for (name, v) in defs.into_iter().flatten() {
        let at = defs_at.key(name);
        let schema = parse_schema(&schema_cx, v, &at, dialect)?;
        if let Some(m) = v.as_object() {
            const KEY: &str = "x-kubernetes-group-version-kind";
            let gvks_at = at.key(KEY);
            for (i, g) in array(&schema_cx, m, KEY, &at)?.iter().enumerate() {
                let gvk = parse_gvk(&schema_cx, g, &gvks_at.index(i))?;
                if let Some(other) = declared.insert(gvk.clone(), name.clone()) {
                    return Err(schema_cx.invalid(
                        &gvks_at.index(i),
                        format!("{gvk} is already declared by {other}"),
                    ));
                }
            }
        }
        let pointer = at.to_string();
        parts.types.push((name.clone(), schema, pointer));
    }

    let mut served = match opt_object(&cx, doc, "paths", &top)? {
        Some(paths) => resources(&cx, paths, &top)?,
        None => BTreeMap::new(),
    };
    for (gvk, definition) in declared {
        let resource = served.remove(&gvk);
        if resource.is_some() {
            let is_object = parts
                .types
                .iter()
                .find(|(n, _, _)| *n == definition)
                .is_some_and(|(_, s, _)| s.as_object().is_some());
            if !is_object {
                return Err(schema_cx.invalid(
                    &defs_at.key(&definition),
                    format!("{gvk} is served as a resource, so its definition must be an object"),
                ));
            }
        }
        parts.kinds.push(Kind {
            gvk,
            definition,
            resource,
        });
    }
    if let Some((gvk, resource)) = served.into_iter().next() {
        return Err(cx.invalid(
            &top.key("paths"),
            format!(
                "{} serves {gvk}, which no definition declares in x-kubernetes-group-version-kind",
                resource.plural
            ),
        ));
    }
    Ok(parts)
}
