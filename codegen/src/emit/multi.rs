//! Several specs (e.g. Kubernetes versions) in one crate, with definitions identical across
//! versions emitted once.
//!
//! Each version is planned on its own, exactly as a single-spec tree. Then every planned entry
//! gets an identity class by partition refinement: entries start grouped by their own rendered
//! text (module, name, fields, attributes, merge static; references spelled by module and name),
//! and groups split until every member's references fall into the same classes, pairwise. The
//! result is the coarsest partition where "same class" means "same shape, and every type it
//! reaches is the same too" — cycles included, since refinement starts from equality and only
//! splits. A class seen in two or more versions is emitted once under
//! `shared::<versions>::<group>::<version>` and re-exported (`pub use`) into each of those
//! versions' modules, so public paths stay `v1_34::apps::v1::Deployment`.
//!
//! Gating: `v1_34::` needs feature `v1_34`, a group module needs its group feature, and a shared
//! module needs any of its versions. A type's references lie in classes seen in at least the
//! same versions, and group features enable the groups their types reference, so whatever
//! compiles can reach everything it names.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use super::facts::KindFacts;
use super::openapi;
use super::plan::{self, Body, Plan, StructBody, Ty};
use super::tokens::{ModuleTokens, Renderer, families_used, module_tree};
use super::{EmitError, EmittedFile, Options, Report};
use crate::model::Model;

/// Name of the module holding definitions shared by several versions.
const SHARED: &str = "shared";

/// The output of [`emit_versions`].
#[derive(Debug)]
pub(crate) struct MultiEmitted {
    /// Files below `src/`, `lib.rs` excluded (its items are in `root`).
    pub(crate) files: Vec<EmittedFile>,
    /// Items of the crate root: `shared` and one module per version.
    pub(crate) root: TokenStream,
    /// Group feature → group features its types reference.
    pub(crate) groups: BTreeMap<String, BTreeSet<String>>,
    pub(crate) report: Report,
}

/// The two items an entry can produce, each with its own identity: the Rust item (struct,
/// enum, alias) and its merge static. They are separate so a type whose merge metadata changed
/// between versions (e.g. a list became `atomic`) is still shared; only a kind's item depends on
/// its merge static (its `Resource` impl names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Item = 0,
    Merge = 1,
}

fn node(id: usize, part: Part) -> usize {
    id * 2 + part as usize
}

struct Classes {
    /// Class of every node (`node(id, part)`), per version.
    of: Vec<Vec<usize>>,
    /// Versions (bit set) each class is seen in.
    versions: Vec<u64>,
}

impl Classes {
    /// The versions sharing a part of entry `id` of version `v`, when more than `v` alone.
    fn shared_set(&self, v: usize, id: usize, part: Part) -> Option<u64> {
        let class = *self.of.get(v)?.get(node(id, part))?;
        let set = *self.versions.get(class)?;
        (set.count_ones() > 1).then_some(set)
    }
}

/// Whether an entry renders anything for `part`.
fn renders(plan: &Plan, id: usize, part: Part) -> bool {
    match (plan.entries.get(id).map(|e| &e.body), part) {
        (Some(Body::Struct(_) | Body::Enum(_) | Body::Alias(_)), Part::Item) => true,
        (Some(Body::Struct(s) | Body::MergeOnly(s)), Part::Merge) => s.merge,
        _ => false,
    }
}

fn is_type(plan: &Plan, id: usize) -> bool {
    renders(plan, id, Part::Item)
}

/// Shared parts: set → top module → child module → `(entry, part)` of the set's first version
/// (every class's representative there).
type SharedTree = BTreeMap<u64, BTreeMap<String, BTreeMap<Option<String>, Vec<(usize, Part)>>>>;

/// Plans every version, finds shared definitions and renders the crate's module tree.
pub(crate) fn emit_versions(
    versions: &[(String, &Model)],
    facts: &KindFacts,
    options: &Options,
) -> Result<MultiEmitted, EmitError> {
    check_names(versions)?;
    let plans: Vec<Plan> = versions
        .iter()
        .map(|(_, model)| plan::plan(model, facts, options))
        .collect();
    let names: Vec<&str> = versions.iter().map(|(n, _)| n.as_str()).collect();
    let classes = classify(&plans, options)?;
    let members = |set: u64| -> Vec<&str> {
        names
            .iter()
            .enumerate()
            .filter(|(i, _)| set & (1 << i) != 0)
            .map(|(_, n)| *n)
            .collect()
    };
    let set_name = |set: u64| members(set).join("_");

    let mut files = Vec::new();
    let mut root = TokenStream::new();
    let mut report = Report::default();
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut shared: SharedTree = BTreeMap::new();
    for (v, plan) in plans.iter().enumerate() {
        for (top, children) in module_tree(plan) {
            groups.entry(top.clone()).or_default();
            for (child, ids) in children {
                for id in ids {
                    for part in [Part::Item, Part::Merge] {
                        let Some(set) = classes.shared_set(v, id, part) else {
                            continue;
                        };
                        if renders(plan, id, part) && set.trailing_zeros() as usize == v {
                            shared
                                .entry(set)
                                .or_default()
                                .entry(top.clone())
                                .or_default()
                                .entry(child.clone())
                                .or_default()
                                .push((id, part));
                        }
                    }
                }
            }
        }
        for (id, e) in plan.entries.iter().enumerate() {
            let Some(from) = e.module.first() else {
                continue;
            };
            let (items, statics) = references(plan, id);
            for target in items.into_iter().chain(statics) {
                if let Some(to) = plan.entries.get(target).and_then(|t| t.module.first())
                    && to != from
                {
                    groups.entry(from.clone()).or_default().insert(to.clone());
                }
            }
        }
    }

    // Shared definitions, each rendered from its set's first version, naming what it refers to
    // where that is defined.
    let (classes_ref, set_name_ref, names_ref) = (&classes, &set_name, &names);
    let mut shared_root = TokenStream::new();
    for (set, tree) in &shared {
        let set_name = set_name(*set);
        let set_ident = ident(&set_name);
        let v = set.trailing_zeros() as usize;
        let Some(plan) = plans.get(v) else { continue };
        let place = move |part: Part| {
            move |id: usize| match classes_ref.shared_set(v, id, part) {
                Some(set) => vec![SHARED.to_owned(), set_name_ref(set)],
                None => vec![names_ref.get(v).copied().unwrap_or_default().to_owned()],
            }
        };
        let r = Renderer::new(plan, options)?
            .with_prefix(place(Part::Item), place(Part::Merge))
            .with_families_at_crate_root();
        let features = members(*set);
        shared_root.extend(quote! {
            #[cfg(any(#(feature = #features),*))]
            pub mod #set_ident;
        });
        let mut set_root = TokenStream::new();
        for (top, children) in tree {
            let top_ident = ident(top);
            set_root.extend(quote!(#[cfg(feature = #top)] pub mod #top_ident;));
            let mut body = TokenStream::new();
            for (child, parts) in children {
                let mut path = vec![SHARED.to_owned(), set_name.clone(), top.clone()];
                path.extend(child.clone());
                let mut m = ModuleTokens::default();
                for &(id, part) in parts {
                    let mut t = r.entry(&path, id);
                    match part {
                        Part::Item => {
                            t.merge = TokenStream::new();
                            t.uses_field = false;
                            report.types += 1;
                        }
                        Part::Merge => t.item = TokenStream::new(),
                    }
                    m.push(t);
                }
                let inner = r.close_module(m);
                match child {
                    Some(child) => {
                        let child = ident(child);
                        body.extend(quote!(pub mod #child { #inner }));
                    }
                    None => body.extend(inner),
                }
            }
            files.push(EmittedFile {
                path: format!("{SHARED}/{set_name}/{top}.rs"),
                tokens: body,
            });
        }
        files.push(EmittedFile {
            path: format!("{SHARED}/{set_name}/mod.rs"),
            tokens: set_root,
        });
    }
    root.extend(quote! {
        /// Definitions identical in several versions, re-exported by each of them.
        #[doc(hidden)]
        pub mod shared;
    });
    files.push(EmittedFile {
        path: format!("{SHARED}/mod.rs"),
        tokens: shared_root,
    });

    // OpenAPI definitions: each rendered once per set of versions it is identical in, in
    // `definitions/<set>.rs`, and handed to the registry by every version of the set.
    let rendered: Vec<BTreeMap<String, String>> = versions
        .iter()
        .map(|(_, model)| openapi::rendered_definitions(model))
        .collect();
    let mut definition_sets: BTreeMap<u64, BTreeMap<&String, &String>> = BTreeMap::new();
    for (v, definitions) in rendered.iter().enumerate() {
        for (name, schema) in definitions {
            let set = rendered
                .iter()
                .enumerate()
                .filter(|(_, other)| other.get(name) == Some(schema))
                .fold(0u64, |set, (w, _)| set | 1 << w);
            // Rendered by the set's first version only.
            if set.trailing_zeros() as usize == v {
                definition_sets.entry(set).or_default().insert(name, schema);
            }
        }
    }
    let mut definitions_root = TokenStream::new();
    for (set, definitions) in &definition_sets {
        let set_name = set_name(*set);
        let set_ident = ident(&set_name);
        let cfg = match members(*set).as_slice() {
            [one] => quote!(feature = #one),
            several => quote!(any(#(feature = #several),*)),
        };
        definitions_root.extend(quote! {
            #[cfg(#cfg)]
            pub(crate) mod #set_ident;
        });
        files.push(EmittedFile {
            path: format!("definitions/{set_name}.rs"),
            tokens: openapi::definitions_items(definitions.iter().map(|(n, s)| (*n, *s))),
        });
    }
    files.push(EmittedFile {
        path: "definitions/mod.rs".to_owned(),
        tokens: definitions_root,
    });
    root.extend(quote! {
        /// OpenAPI definitions, each once per set of versions it is identical in.
        mod definitions;
    });
    if let Some(first) = plans.first() {
        let used: BTreeSet<String> = plans.iter().flat_map(families_used).collect();
        root.extend(
            facts
                .conversions
                .module(Renderer::new(first, options)?.runtime(), &used),
        );
    }

    // One tree per version: its own definitions, and re-exports of shared ones. References stay
    // relative inside the version's tree, reaching shared items through the re-exports.
    for (v, plan) in plans.iter().enumerate() {
        let Some(version) = names.get(v).copied() else {
            continue;
        };
        let r = Renderer::new(plan, options)?.with_families_at_crate_root();
        let vid = ident(version);
        root.extend(quote! {
            #[cfg(feature = #version)]
            pub mod #vid;
        });
        let mut version_root = TokenStream::new();
        let mut registered = Vec::new();
        for (top, children) in module_tree(plan) {
            let top_ident = ident(&top);
            let cfg = quote!(#[cfg(feature = #top)]);
            version_root.extend(quote!(#cfg pub mod #top_ident;));
            let mut body = TokenStream::new();
            let mut own_kinds = Vec::new();
            let mut registered_children = Vec::new();
            for (child, ids) in children {
                let mut module_path = vec![top.clone()];
                module_path.extend(child.clone());
                let mut m = ModuleTokens::default();
                let mut items: BTreeMap<u64, Vec<Ident>> = BTreeMap::new();
                let mut statics: BTreeMap<u64, Vec<Ident>> = BTreeMap::new();
                for &id in &ids {
                    let mut t = r.entry(&module_path, id);
                    match classes.shared_set(v, id, Part::Item) {
                        Some(set) if is_type(plan, id) => {
                            reexport_items(plan, id, items.entry(set).or_default());
                            t.item = TokenStream::new();
                        }
                        _ => report.types += usize::from(is_type(plan, id)),
                    }
                    if let Some(set) = classes.shared_set(v, id, Part::Merge)
                        && renders(plan, id, Part::Merge)
                    {
                        if let Some(e) = plan.entries.get(id) {
                            statics.entry(set).or_default().push(ident(&e.name));
                        }
                        t.merge = TokenStream::new();
                        t.uses_field = false;
                    }
                    m.push(t);
                }
                let from = |set: u64| {
                    let mut path = vec![SHARED.to_owned(), set_name(set)];
                    path.extend(module_path.iter().cloned());
                    path.into_iter().map(|s| ident(&s)).collect::<Vec<_>>()
                };
                let mut uses = TokenStream::new();
                for (set, names) in &items {
                    let from = from(*set);
                    uses.extend(quote!(pub use crate::#(#from::)*{#(#names),*};));
                }
                for (set, names) in &statics {
                    let from = from(*set);
                    m.merge_uses
                        .extend(quote!(pub use crate::#(#from::)*merge::{#(#names),*};));
                }
                uses.extend(std::mem::take(&mut m.items));
                m.items = uses;
                let mut inner = r.close_module(m);
                let kinds = r.kinds(&ids);
                report.kinds += kinds.len();
                match child {
                    Some(child) => {
                        if !kinds.is_empty() {
                            inner.extend(r.register_fn(&kinds, &[], &[]));
                            registered_children.push((child.clone(), None));
                        }
                        let child = ident(&child);
                        body.extend(quote!(pub mod #child { #inner }));
                    }
                    None => {
                        own_kinds = kinds;
                        body.extend(inner);
                    }
                }
            }
            if !own_kinds.is_empty() || !registered_children.is_empty() {
                body.extend(r.register_fn(&own_kinds, &registered_children, &[]));
                registered.push((top.clone(), Some(cfg)));
            }
            files.push(EmittedFile {
                path: format!("{version}/{top}.rs"),
                tokens: body,
            });
        }
        let definitions: Vec<TokenStream> = definition_sets
            .keys()
            .filter(|set| *set & (1 << v) != 0)
            .map(|set| {
                let set = ident(&set_name(*set));
                quote!(crate::definitions::#set)
            })
            .collect();
        version_root.extend(r.register_fn(&[], &registered, &definitions));
        files.push(EmittedFile {
            path: format!("{version}/mod.rs"),
            tokens: version_root,
        });
        report.warnings.extend(plan.warnings.iter().map(|w| {
            let mut w = w.clone();
            w.message = format!("{version}: {}", w.message);
            w
        }));
        for (g, m) in &plan.group_modules {
            if !report.group_modules.contains(&(g.clone(), m.clone())) {
                report.group_modules.push((g.clone(), m.clone()));
            }
        }
    }
    report.group_modules.sort();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(MultiEmitted {
        files,
        root,
        groups,
        report,
    })
}

fn ident(s: &str) -> Ident {
    Ident::new(s, Span::call_site())
}

/// Version names become module and feature names: identifiers, unique, not `shared`.
fn check_names(versions: &[(String, &Model)]) -> Result<(), EmitError> {
    if versions.is_empty() || versions.len() > 64 {
        return Err(EmitError::Option(format!(
            "a multi-version crate takes 1 to 64 versions, not {}",
            versions.len()
        )));
    }
    let mut seen = BTreeSet::new();
    for (name, _) in versions {
        let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && name != SHARED
            && !super::names::is_keyword(name);
        if !valid {
            return Err(EmitError::Option(format!(
                "version name \"{name}\" must be a lowercase identifier such as v1_34 (and not \"{SHARED}\")"
            )));
        }
        if !seen.insert(name) {
            return Err(EmitError::Option(format!(
                "version name \"{name}\" is given twice"
            )));
        }
    }
    Ok(())
}

/// What a version module re-exports for a shared item: the item, and for a kind the derive's
/// `<Kind>List` alias.
fn reexport_items(plan: &Plan, id: usize, items: &mut Vec<Ident>) {
    let Some(e) = plan.entries.get(id) else {
        return;
    };
    items.push(ident(&e.name));
    if let Body::Struct(StructBody { kind: Some(k), .. }) = &e.body
        && !k.no_list
    {
        items.push(ident(&format!("{}List", e.name)));
    }
}

/// The entries an entry's item names (field and alias types; a `<Kind>List` alias its kind) and
/// whose merge statics its merge static (or a kind's `Resource` impl) names.
fn references(plan: &Plan, id: usize) -> (Vec<usize>, Vec<usize>) {
    fn walk(ty: &Ty, out: &mut Vec<usize>) {
        match ty {
            Ty::Named(id) => out.push(*id),
            Ty::Vec(inner) | Ty::Map(inner) => walk(inner, out),
            _ => {}
        }
    }
    let (mut items, mut statics) = (Vec::new(), Vec::new());
    let Some(e) = plan.entries.get(id) else {
        return (items, statics);
    };
    match &e.body {
        Body::Struct(s) | Body::MergeOnly(s) => {
            for f in &s.fields {
                walk(&f.ty, &mut items);
                if let Some(plan::MergeTarget::Entry(t)) = f.merge.target {
                    statics.push(t);
                }
            }
        }
        Body::Alias(ty) => walk(ty, &mut items),
        Body::ListAlias => {
            let kind = e.name.strip_suffix("List").unwrap_or_default();
            items.extend(
                plan.entries
                    .iter()
                    .position(|o| o.module == e.module && o.name == kind),
            );
        }
        Body::Enum(_) | Body::Pending => {}
    }
    if matches!(e.body, Body::MergeOnly(_)) {
        items.clear();
    }
    (items, statics)
}

/// Identity classes of both parts of all entries of all versions (see the module docs).
fn classify(plans: &[Plan], options: &Options) -> Result<Classes, EmitError> {
    let mut interner: HashMap<String, usize> = HashMap::new();
    let mut of: Vec<Vec<usize>> = Vec::with_capacity(plans.len());
    let mut edges: Vec<Vec<Vec<usize>>> = Vec::with_capacity(plans.len());
    for (v, plan) in plans.iter().enumerate() {
        let r = Renderer::new(plan, options)?.with_families_at_crate_root();
        let mut classes = Vec::with_capacity(plan.entries.len() * 2);
        let mut version_edges = Vec::with_capacity(plan.entries.len() * 2);
        for (id, e) in plan.entries.iter().enumerate() {
            let t = r.entry(&e.module, id);
            let tag = match &e.body {
                Body::Struct(_) => "struct",
                Body::MergeOnly(_) => "merge",
                Body::Enum(_) => "enum",
                Body::Alias(_) => "alias",
                Body::ListAlias => "list",
                Body::Pending => "pending",
            };
            let head = format!("{}\n{}\n{tag}", e.module.join("::"), e.name);
            let mut item_sig = format!("{head}\nitem\n{}", t.item);
            let merge_sig = format!("{head}\nmerge\n{}", t.merge);
            if matches!(e.body, Body::Pending) {
                // Never shared: unique per node.
                item_sig.push_str(&format!("\n{v}:{id}"));
            }
            for sig in [item_sig, merge_sig] {
                let next = interner.len();
                classes.push(*interner.entry(sig).or_insert(next));
            }
            let (items, statics) = references(plan, id);
            let mut item_edges: Vec<usize> = items.iter().map(|&t| node(t, Part::Item)).collect();
            if let Body::Struct(StructBody { kind: Some(_), .. }) = &e.body {
                item_edges.push(node(id, Part::Merge));
            }
            version_edges.push(item_edges);
            version_edges.push(statics.iter().map(|&t| node(t, Part::Merge)).collect());
        }
        of.push(classes);
        edges.push(version_edges);
    }
    let mut count = interner.len();
    loop {
        let mut keys: HashMap<(usize, Vec<usize>), usize> = HashMap::new();
        let mut next_of = Vec::with_capacity(of.len());
        for (v, classes) in of.iter().enumerate() {
            let mut next = Vec::with_capacity(classes.len());
            for (n, class) in classes.iter().enumerate() {
                let targets = edges
                    .get(v)
                    .and_then(|e| e.get(n))
                    .map(|t| {
                        t.iter()
                            .map(|&t| classes.get(t).copied().unwrap_or(usize::MAX))
                            .collect()
                    })
                    .unwrap_or_default();
                let k = keys.len();
                next.push(*keys.entry((*class, targets)).or_insert(k));
            }
            next_of.push(next);
        }
        of = next_of;
        if keys.len() == count {
            break;
        }
        count = keys.len();
    }
    let mut versions = vec![0u64; count];
    for (v, classes) in of.iter().enumerate() {
        for &c in classes {
            if let Some(set) = versions.get_mut(c) {
                *set |= 1 << v;
            }
        }
    }
    Ok(Classes { of, versions })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load_swagger_str;

    /// A two-kind spec whose `Thing` gains a field in the "new" version: `Leaf` is identical in
    /// both, `Thing` and everything that reaches it differ, and a cycle through `Node` stays
    /// shared as a whole.
    fn spec(extra: bool) -> String {
        let extra = if extra {
            r#", "extra": {"type": "string"}"#
        } else {
            ""
        };
        format!(
            r##"{{"swagger": "2.0", "info": {{"title": "t", "version": "1"}}, "paths": {{
  "/apis/ex.io/v1/namespaces/{{namespace}}/things": {{"get": {{"x-kubernetes-action": "list",
     "x-kubernetes-group-version-kind": {{"group": "ex.io", "version": "v1", "kind": "Thing"}}}}}},
  "/apis/ex.io/v1/namespaces/{{namespace}}/things/{{name}}": {{"get": {{"x-kubernetes-action": "get",
     "x-kubernetes-group-version-kind": {{"group": "ex.io", "version": "v1", "kind": "Thing"}}}}}}
}}, "definitions": {{
  "io.ex.v1.Thing": {{"type": "object", "properties": {{
     "apiVersion": {{"type": "string"}}, "kind": {{"type": "string"}},
     "metadata": {{"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}},
     "spec": {{"$ref": "#/definitions/io.ex.v1.ThingSpec"}}}},
     "x-kubernetes-group-version-kind": [{{"group": "ex.io", "version": "v1", "kind": "Thing"}}]}},
  "io.ex.v1.ThingSpec": {{"type": "object", "properties": {{
     "leaf": {{"$ref": "#/definitions/io.ex.v1.Leaf"}}, "node": {{"$ref": "#/definitions/io.ex.v1.Node"}}{extra}}}}},
  "io.ex.v1.Leaf": {{"type": "object", "properties": {{"size": {{"type": "integer"}}}}}},
  "io.ex.v1.Node": {{"type": "object", "properties": {{"next": {{"$ref": "#/definitions/io.ex.v1.Node"}},
     "leaf": {{"$ref": "#/definitions/io.ex.v1.Leaf"}}}}}},
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {{"type": "object", "properties": {{"name": {{"type": "string"}}}}}}
}}}}"##
        )
    }

    fn shared_names(versions: &[(&str, bool)]) -> BTreeMap<String, Vec<String>> {
        let models: Vec<(String, Model)> = versions
            .iter()
            .map(|(n, extra)| {
                let model = load_swagger_str("s.json", &spec(*extra)).expect("spec loads");
                ((*n).to_owned(), model)
            })
            .collect();
        let plans: Vec<Plan> = models
            .iter()
            .map(|(_, m)| plan::plan(m, &KindFacts::default(), &Options::default()))
            .collect();
        let classes = classify(&plans, &Options::default()).expect("classify");
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (id, e) in plans[0].entries.iter().enumerate() {
            let set = classes.versions[classes.of[0][node(id, Part::Item)]];
            let members: Vec<String> = models
                .iter()
                .enumerate()
                .filter(|(i, _)| set & (1 << i) != 0)
                .map(|(_, (n, _))| n.clone())
                .collect();
            out.insert(e.name.clone(), members);
        }
        out
    }

    #[test]
    fn sharing_is_structural_and_transitive() {
        let got = shared_names(&[("old", false), ("mid", false), ("new", true)]);
        let all = vec!["old".to_owned(), "mid".into(), "new".into()];
        let old_mid = vec!["old".to_owned(), "mid".into()];
        let cases = [
            ("Leaf", &all),
            // A cycle whose members are all identical is shared as a whole.
            ("Node", &all),
            // Changed in "new".
            ("ThingSpec", &old_mid),
            // Unchanged itself, but it reaches ThingSpec.
            ("Thing", &old_mid),
        ];
        for (name, want) in cases {
            assert_eq!(got.get(name), Some(want), "{name}: {got:?}");
        }
    }

    #[test]
    fn emits_shared_once_and_reexports() {
        let old = load_swagger_str("s.json", &spec(false)).expect("loads");
        let new = load_swagger_str("s.json", &spec(true)).expect("loads");
        let out = emit_versions(
            &[("v1_1".to_owned(), &old), ("v1_2".to_owned(), &new)],
            &KindFacts::default(),
            &Options::default(),
        )
        .expect("emits");
        let file = |p: &str| {
            out.files
                .iter()
                .find(|f| f.path == p)
                .map(|f| f.tokens.to_string())
                .unwrap_or_else(|| panic!("no {p}"))
        };
        let shared = file("shared/v1_1_v1_2/ex.rs");
        assert!(shared.contains("pub struct Leaf"), "{shared}");
        assert!(shared.contains("pub struct Node"), "{shared}");
        assert!(!shared.contains("ThingSpec"), "{shared}");
        let v2 = file("v1_2/ex.rs");
        assert!(
            v2.contains("pub use crate :: shared :: v1_1_v1_2 :: ex :: v1 :: { Leaf , Node }"),
            "{v2}"
        );
        assert!(v2.contains("pub struct ThingSpec"), "{v2}");
        assert!(v2.contains("registry . register :: < Thing > ()"), "{v2}");
        assert_eq!(
            out.groups
                .get("ex")
                .map(|g| g.iter().cloned().collect::<Vec<_>>()),
            Some(vec!["apimachinery".to_owned()])
        );
        assert!(
            emit_versions(
                &[("v1".to_owned(), &old), ("v1".to_owned(), &new)],
                &KindFacts::default(),
                &Options::default()
            )
            .is_err()
        );
    }
}
