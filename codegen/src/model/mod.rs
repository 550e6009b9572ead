//! The intermediate representation every input is loaded into and every output is emitted from.
//!
//! The model does no I/O and knows nothing about file formats: loaders in [`crate::load`] fill it,
//! emission reads it. All collections are ordered (`BTreeMap`, `Vec` in source order) so walking a
//! model is deterministic.

mod kind;
mod schema;

use std::collections::BTreeMap;

pub use kind::{
    ColumnCell, CrdVersion, GroupVersion, Gvk, Kind, PrinterColumn, Resource, ScalePaths, Scope,
    Subresource, Verb,
};
pub use schema::{
    Extensions, ListType, MapType, ObjectType, Property, QUANTITY_PATTERN, RefSite, Schema,
    SchemaType, escape_pointer,
};

/// Named type definitions and the kinds that use them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Model {
    /// Type definitions by name (`io.k8s.api.apps.v1.Deployment`; CRD roots are named like the
    /// API server publishes them, e.g. `io.k8s.networking.gateway.v1.HTTPRoute`).
    pub types: BTreeMap<String, Schema>,
    /// Every kind by group, version and kind.
    pub kinds: BTreeMap<Gvk, Kind>,
    /// Input documents that were skipped (a manifest that is not a CRD among CRDs), one
    /// sentence each naming the document.
    pub skipped: Vec<String>,
}

/// A `$ref` to a name the model does not define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DanglingRef {
    /// The definition containing the reference.
    pub definition: String,
    /// Where in that definition, as a JSON pointer relative to it.
    pub pointer: String,
    /// The missing name.
    pub target: String,
}

impl Model {
    /// Kinds grouped by group-version, both in sorted order.
    pub fn group_versions(&self) -> BTreeMap<GroupVersion, Vec<&Kind>> {
        let mut out: BTreeMap<GroupVersion, Vec<&Kind>> = BTreeMap::new();
        for kind in self.kinds.values() {
            out.entry(kind.gvk.group_version()).or_default().push(kind);
        }
        out
    }

    /// Kinds that are served as resources, in GVK order.
    pub fn resources(&self) -> impl Iterator<Item = (&Kind, &Resource)> {
        self.kinds
            .values()
            .filter_map(|k| k.resource.as_ref().map(|r| (k, r)))
    }

    /// The definition of a kind, if both exist.
    pub fn kind_schema(&self, gvk: &Gvk) -> Option<&Schema> {
        self.kinds
            .get(gvk)
            .and_then(|k| self.types.get(&k.definition))
    }

    /// Every `$ref` whose target is not a definition of this model, in definition order.
    pub fn dangling_refs(&self) -> Vec<DanglingRef> {
        let mut out = Vec::new();
        for (name, schema) in &self.types {
            for site in schema.refs() {
                if !self.types.contains_key(&site.target) {
                    out.push(DanglingRef {
                        definition: name.clone(),
                        pointer: site.pointer,
                        target: site.target,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(group: &str, version: &str, name: &str, served: bool) -> Kind {
        Kind {
            gvk: Gvk::new(group, version, name),
            definition: name.to_string(),
            resource: served.then(|| Resource {
                plural: name.to_lowercase(),
                scope: Scope::Namespaced,
                verbs: Default::default(),
                subresources: Default::default(),
                crd: None,
            }),
        }
    }

    #[test]
    fn group_versions_and_resources_are_sorted() {
        let mut model = Model::default();
        for k in [
            kind("apps", "v1", "Deployment", true),
            kind("", "v1", "Pod", true),
            kind("apps", "v1", "DeleteOptions", false),
        ] {
            model.kinds.insert(k.gvk.clone(), k);
        }
        let gvs: Vec<(String, Vec<&str>)> = model
            .group_versions()
            .into_iter()
            .map(|(gv, ks)| {
                (
                    gv.to_string(),
                    ks.iter().map(|k| k.gvk.kind.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            gvs,
            vec![
                ("v1".to_string(), vec!["Pod"]),
                ("apps/v1".to_string(), vec!["DeleteOptions", "Deployment"]),
            ]
        );
        let served: Vec<&str> = model
            .resources()
            .map(|(k, _)| k.gvk.kind.as_str())
            .collect();
        assert_eq!(served, vec!["Pod", "Deployment"]);
    }

    #[test]
    fn dangling_refs_name_definition_and_pointer() {
        let mut model = Model::default();
        model.types.insert(
            "a".into(),
            Schema::of(SchemaType::Array(Box::new(Schema::of(SchemaType::Ref(
                "missing".into(),
            ))))),
        );
        model
            .types
            .insert("b".into(), Schema::of(SchemaType::Ref("a".into())));
        assert_eq!(
            model.dangling_refs(),
            vec![DanglingRef {
                definition: "a".into(),
                pointer: "/items".into(),
                target: "missing".into(),
            }]
        );
    }
}
