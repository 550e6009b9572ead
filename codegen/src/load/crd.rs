//! CustomResourceDefinition manifests (`apiextensions.k8s.io/v1`, YAML or JSON) → types and kinds.
//!
//! Every version of every CRD becomes a kind whose root type is named the way kube-apiserver
//! publishes CRDs in its OpenAPI (group reversed, then version and kind:
//! `io.k8s.networking.gateway.v1.HTTPRoute`), so a CRD read from a manifest and the same CRD read
//! from a cluster's `/openapi/v2` get the same name. Nested schemas stay inline in that root type;
//! naming them is emission's job. A kind-root `metadata` stays as the CRD writes it (usually a bare
//! `type: object`); emission treats it as ObjectMeta, as the API server does.

use serde::Deserialize;
use serde_json::Value;

use super::document::Parts;
use super::error::{Cx, LoadError, Ptr, Source};
use super::json::{Obj, array, flag, object, opt_object, opt_str, req_object, req_str, strings};
use super::schema::{Dialect, parse_schema};
use crate::model::{
    ColumnCell, CrdVersion, Gvk, Kind, PrinterColumn, Resource, ScalePaths, Scope, Subresource,
    Verb,
};

/// Splits a YAML stream into its non-empty documents.
pub(crate) fn yaml_documents(path: &std::path::Path, text: &str) -> Result<Vec<Value>, LoadError> {
    let mut out = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let value = Value::deserialize(doc).map_err(|e| LoadError::Syntax {
            format: "YAML",
            source_file: Source {
                path: path.to_path_buf(),
                document: Some(i + 1),
            },
            message: e.to_string(),
        })?;
        out.push(value);
    }
    Ok(out)
}

/// Loads every CRD in one document (a CRD, or a `List` of CRDs as `kubectl get -o yaml` prints).
pub(crate) fn load_crd_document(source: &Source, root: &Value) -> Result<Parts, LoadError> {
    let cx = Cx {
        source,
        what: "CRD",
    };
    let top = Ptr::Root;
    let doc = object(&cx, root, &top)?;
    let kind = opt_str(&cx, doc, "kind", &top)?.unwrap_or_default();
    let mut parts = Parts::default();
    if kind == "List" || kind == "CustomResourceDefinitionList" {
        let items_at = top.key("items");
        for (i, item) in array(&cx, doc, "items", &top)?.iter().enumerate() {
            load_crd(&cx, item, &items_at.index(i), &mut parts)?;
        }
    } else {
        load_crd(&cx, root, &top, &mut parts)?;
    }
    Ok(parts)
}

fn load_crd(cx: &Cx<'_>, v: &Value, at: &Ptr<'_>, parts: &mut Parts) -> Result<(), LoadError> {
    let crd = object(cx, v, at)?;
    let kind = opt_str(cx, crd, "kind", at)?.unwrap_or_default();
    if kind != "CustomResourceDefinition" {
        // Manifests bundle CRDs with the rest of an install (namespaces, RBAC, deployments):
        // one of those skips its document, it does not fail the run.
        let kind = if kind.is_empty() { "kindless" } else { kind };
        let place = match at {
            Ptr::Root => String::new(),
            _ => format!(" at {at}"),
        };
        parts.skipped.push(format!(
            "skipped a {kind} object in {}{place}: not a CustomResourceDefinition",
            cx.source
        ));
        return Ok(());
    }
    let api_version = opt_str(cx, crd, "apiVersion", at)?.unwrap_or_default();
    if api_version != "apiextensions.k8s.io/v1" {
        return Err(cx.invalid(
            &at.key("apiVersion"),
            format!("unsupported apiVersion \"{api_version}\" (expected apiextensions.k8s.io/v1)"),
        ));
    }
    let spec_at = at.key("spec");
    let spec = req_object(cx, crd, "spec", at)?;
    let group = req_str(cx, spec, "group", &spec_at)?;
    let names_at = spec_at.key("names");
    let names = req_object(cx, spec, "names", &spec_at)?;
    let kind = req_str(cx, names, "kind", &names_at)?;
    let scope = match req_str(cx, spec, "scope", &spec_at)? {
        "Namespaced" => Scope::Namespaced,
        "Cluster" => Scope::Cluster,
        other => {
            return Err(cx.invalid(
                &spec_at.key("scope"),
                format!("unknown scope \"{other}\" (expected Namespaced or Cluster)"),
            ));
        }
    };
    let plural = req_str(cx, names, "plural", &names_at)?;
    let shared = CrdVersion {
        singular: opt_str(cx, names, "singular", &names_at)?.map(str::to_owned),
        short_names: strings(cx, names, "shortNames", &names_at)?,
        categories: strings(cx, names, "categories", &names_at)?,
        list_kind: opt_str(cx, names, "listKind", &names_at)?.map(str::to_owned),
        ..CrdVersion::default()
    };
    let versions_at = spec_at.key("versions");
    let versions = array(cx, spec, "versions", &spec_at)?;
    if versions.is_empty() {
        return Err(cx.invalid(&spec_at, "missing versions"));
    }
    for (i, v) in versions.iter().enumerate() {
        let v_at = versions_at.index(i);
        let version = object(cx, v, &v_at)?;
        let name = req_str(cx, version, "name", &v_at)?;
        let gvk = Gvk::new(group, name, kind);
        // Upstream serves no REST endpoint, discovery entry or OpenAPI for such a version.
        if !flag(cx, version, "served", &v_at)? {
            parts.skipped.push(format!(
                "skipped {gvk} in {}: the version is not served (served: false)",
                cx.source
            ));
            continue;
        }
        let schema_at = v_at.key("schema");
        let schema = req_object(cx, version, "schema", &v_at)?;
        let root_at = schema_at.key("openAPIV3Schema");
        let Some(root) = schema.get("openAPIV3Schema") else {
            return Err(cx.invalid(&schema_at, "missing openAPIV3Schema"));
        };
        let root = parse_schema(&cx.with_what("schema"), root, &root_at, Dialect::Crd)?;
        if root.as_object().is_none() {
            return Err(cx.invalid(&root_at, "the root schema of a kind must be of type object"));
        }
        let mut crd = CrdVersion {
            served: flag(cx, version, "served", &v_at)?,
            storage: flag(cx, version, "storage", &v_at)?,
            deprecated: flag(cx, version, "deprecated", &v_at)?,
            deprecation_warning: opt_str(cx, version, "deprecationWarning", &v_at)?
                .map(str::to_owned),
            printer_columns: printer_columns(cx, version, &v_at)?,
            ..shared.clone()
        };
        let sel_at = v_at.key("selectableFields");
        for (j, f) in array(cx, version, "selectableFields", &v_at)?
            .iter()
            .enumerate()
        {
            let f_at = sel_at.index(j);
            let f = object(cx, f, &f_at)?;
            crd.selectable_fields
                .push(req_str(cx, f, "jsonPath", &f_at)?.to_owned());
        }
        let definition = definition_name(group, name, kind);
        parts
            .types
            .push((definition.clone(), root, root_at.to_string()));
        parts.kinds.push(Kind {
            resource: Some(Resource {
                plural: plural.to_owned(),
                scope,
                verbs: Verb::ALL.into_iter().collect(),
                subresources: subresources(cx, version, &v_at, &gvk)?,
                crd: Some(crd),
            }),
            gvk,
            definition,
        });
    }
    Ok(())
}

/// `stable.example.com`, `v1`, `CronTab` → `com.example.stable.v1.CronTab`, as kube-apiserver
/// names CRD schemas in its published OpenAPI.
pub(crate) fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

fn subresources(
    cx: &Cx<'_>,
    version: &Obj,
    at: &Ptr<'_>,
    gvk: &Gvk,
) -> Result<std::collections::BTreeMap<String, Subresource>, LoadError> {
    let mut out = std::collections::BTreeMap::new();
    let Some(subs) = opt_object(cx, version, "subresources", at)? else {
        return Ok(out);
    };
    let subs_at = at.key("subresources");
    let verbs = [Verb::Get, Verb::Patch, Verb::Update].into_iter().collect();
    if opt_object(cx, subs, "status", &subs_at)?.is_some() {
        out.insert(
            "status".to_owned(),
            Subresource {
                kind: Some(gvk.clone()),
                verbs: Clone::clone(&verbs),
                scale: None,
            },
        );
    }
    if let Some(scale) = opt_object(cx, subs, "scale", &subs_at)? {
        let s_at = subs_at.key("scale");
        out.insert(
            "scale".to_owned(),
            Subresource {
                kind: Some(Gvk::new("autoscaling", "v1", "Scale")),
                verbs,
                scale: Some(ScalePaths {
                    spec_replicas: req_str(cx, scale, "specReplicasPath", &s_at)?.to_owned(),
                    status_replicas: req_str(cx, scale, "statusReplicasPath", &s_at)?.to_owned(),
                    label_selector: opt_str(cx, scale, "labelSelectorPath", &s_at)?
                        .map(str::to_owned),
                }),
            },
        );
    }
    if let Some(other) = subs.keys().find(|k| *k != "status" && *k != "scale") {
        return Err(cx.invalid(
            &subs_at.key(other),
            format!("unknown subresource \"{other}\" (CRDs support status and scale)"),
        ));
    }
    Ok(out)
}

fn printer_columns(
    cx: &Cx<'_>,
    version: &Obj,
    at: &Ptr<'_>,
) -> Result<Vec<PrinterColumn>, LoadError> {
    let cols_at = at.key("additionalPrinterColumns");
    let mut out = Vec::new();
    for (i, c) in array(cx, version, "additionalPrinterColumns", at)?
        .iter()
        .enumerate()
    {
        let c_at = cols_at.index(i);
        let c = object(cx, c, &c_at)?;
        let priority = match c.get("priority") {
            None | Some(Value::Null) => 0,
            Some(p) => p
                .as_i64()
                .ok_or_else(|| cx.invalid(&c_at.key("priority"), "expected an integer"))?,
        };
        out.push(PrinterColumn {
            name: req_str(cx, c, "name", &c_at)?.to_owned(),
            ty: req_str(cx, c, "type", &c_at)?.to_owned(),
            format: opt_str(cx, c, "format", &c_at)?.map(str::to_owned),
            description: opt_str(cx, c, "description", &c_at)?.map(str::to_owned),
            priority,
            cell: ColumnCell::Path(req_str(cx, c, "jsonPath", &c_at)?.to_owned()),
            since: None,
            until: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_names_reverse_the_group() {
        let cases = [
            (
                "gateway.networking.k8s.io",
                "v1",
                "HTTPRoute",
                "io.k8s.networking.gateway.v1.HTTPRoute",
            ),
            (
                "argoproj.io",
                "v1alpha1",
                "Workflow",
                "io.argoproj.v1alpha1.Workflow",
            ),
            ("example", "v1", "Thing", "example.v1.Thing"),
        ];
        for (g, v, k, want) in cases {
            assert_eq!(definition_name(g, v, k), want);
        }
    }
}
