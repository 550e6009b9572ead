//! Renders a model's group-versions and kinds as the text `kapi-codegen list` prints.
//!
//! One block per group-version (sorted, core group first), one aligned row per kind: kind, plural,
//! scope, verbs, subresources, and for CRDs the version's storage/deprecation state. Pure function of
//! the model, so the output is byte-stable.

use std::fmt::Write as _;

use crate::model::{Kind, Model};

/// What to include in the listing.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListOptions {
    /// Also list kinds that are not served as resources (DeleteOptions, WatchEvent, Scale, ...).
    pub all_kinds: bool,
}

/// The listing text, ending with a newline (empty when nothing is listed).
pub fn render(model: &Model, options: ListOptions) -> String {
    let mut out = String::new();
    for (gv, kinds) in model.group_versions() {
        let rows: Vec<[String; 6]> = kinds
            .into_iter()
            .filter(|k| options.all_kinds || k.resource.is_some())
            .map(row)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{gv}");
        let mut widths = [0usize; 6];
        for r in &rows {
            for (w, cell) in widths.iter_mut().zip(r) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for r in &rows {
            let mut line = String::from(" ");
            for (cell, w) in r.iter().zip(widths) {
                let _ = write!(line, " {cell:<w$} ");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    out
}

fn row(kind: &Kind) -> [String; 6] {
    let Some(r) = &kind.resource else {
        return [
            kind.gvk.kind.clone(),
            "-".into(),
            "-".into(),
            "-".into(),
            String::new(),
            "type only".into(),
        ];
    };
    let verbs: Vec<&str> = r.verbs.iter().map(|v| v.as_str()).collect();
    let subs: Vec<&str> = r.subresources.keys().map(String::as_str).collect();
    let subs = if subs.is_empty() {
        String::new()
    } else {
        format!("[{}]", subs.join(","))
    };
    let mut notes = Vec::new();
    if let Some(crd) = &r.crd {
        if !crd.served {
            notes.push("not served");
        }
        if crd.storage {
            notes.push("storage");
        }
        if crd.deprecated {
            notes.push("deprecated");
        }
    }
    [
        kind.gvk.kind.clone(),
        r.plural.clone(),
        r.scope.as_str().to_owned(),
        verbs.join(","),
        subs,
        notes.join(","),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Gvk, Resource, Scope, Subresource, Verb};

    fn model() -> Model {
        let mut m = Model::default();
        let mut subresources = std::collections::BTreeMap::new();
        subresources.insert("status".to_string(), Subresource::default());
        subresources.insert("scale".to_string(), Subresource::default());
        let kinds = [
            Kind {
                gvk: Gvk::new("apps", "v1", "Deployment"),
                definition: "d".into(),
                resource: Some(Resource {
                    plural: "deployments".into(),
                    scope: Scope::Namespaced,
                    verbs: Verb::ALL.into_iter().collect(),
                    subresources,
                    crd: None,
                }),
            },
            Kind {
                gvk: Gvk::new("apps", "v1", "DeleteOptions"),
                definition: "o".into(),
                resource: None,
            },
            Kind {
                gvk: Gvk::new("", "v1", "Namespace"),
                definition: "n".into(),
                resource: Some(Resource {
                    plural: "namespaces".into(),
                    scope: Scope::Cluster,
                    verbs: [Verb::Get, Verb::List].into_iter().collect(),
                    subresources: Default::default(),
                    crd: None,
                }),
            },
        ];
        for k in kinds {
            m.kinds.insert(k.gvk.clone(), k);
        }
        m
    }

    #[test]
    fn served_kinds_only_by_default() {
        let want = "\
v1
  Namespace  namespaces  Cluster  get,list
apps/v1
  Deployment  deployments  Namespaced  create,delete,deletecollection,get,list,patch,update,watch  [scale,status]
";
        assert_eq!(render(&model(), ListOptions::default()), want);
    }

    #[test]
    fn all_kinds_adds_unserved_rows_aligned() {
        let got = render(&model(), ListOptions { all_kinds: true });
        let pad = " ".repeat(75);
        let want = format!(
            "v1\n  Namespace  namespaces  Cluster  get,list\napps/v1\n  DeleteOptions  -            -           -{pad}type only\n  Deployment     deployments  Namespaced  create,delete,deletecollection,get,list,patch,update,watch  [scale,status]\n"
        );
        assert_eq!(got, want);
    }
}
