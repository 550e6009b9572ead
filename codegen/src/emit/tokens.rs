//! Rendering: a [`Plan`] → one `TokenStream` per output file.
//!
//! Nothing is decided here beyond spelling: types reach each other through relative
//! `super::` paths (so the output can sit at any depth of a user's crate), runtime types through
//! the configured runtime crate path, and each module's merge metadata lives in a `merge` child
//! module of statics named like the types they describe.

use std::collections::BTreeMap;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::lifecycle::Release;
use super::names::serde_camel;
use super::plan::{Body, FieldPlan, KindPlan, MergeTarget, Plan, Special, StructBody, Ty};
use super::{EmitError, EmittedFile, Options};
use crate::model::{ListType, MapType, Scope, Verb};

struct Renderer<'p> {
    plan: &'p Plan,
    krate: TokenStream,
    krate_attr: Option<String>,
}

/// Renders the plan into files: `mod.rs` declaring one module per group (plus `apimachinery`),
/// and `<module>.rs` per group holding its versions as inline modules; or everything inline in
/// `mod.rs` when `options.single_file`.
pub(crate) fn render(plan: &Plan, options: &Options) -> Result<Vec<EmittedFile>, EmitError> {
    let krate: syn::Path = syn::parse_str(&options.runtime_crate).map_err(|e| {
        EmitError::Option(format!(
            "runtime_crate \"{}\" is not a path: {e}",
            options.runtime_crate
        ))
    })?;
    let r = Renderer {
        plan,
        krate: quote!(#krate),
        krate_attr: (options.runtime_crate != "kapi").then(|| options.runtime_crate.clone()),
    };
    // Top-level module → (child module → entries); `None` holds a flat module's own entries.
    let mut tree: BTreeMap<String, BTreeMap<Option<String>, Vec<usize>>> = BTreeMap::new();
    let modules = plan.modules();
    for (path, ids) in &modules {
        let (top, child) = match path.as_slice() {
            [top] => (top.clone(), None),
            [top, child, ..] => (top.clone(), Some(child.clone())),
            [] => continue,
        };
        tree.entry(top).or_default().insert(child, ids.clone());
    }
    let mut files = Vec::new();
    let mut root = TokenStream::new();
    for (top, children) in &tree {
        let top_ident = ident(top);
        let mut body = TokenStream::new();
        for (child, ids) in children {
            match child {
                None => body.extend(r.module_body(std::slice::from_ref(top), ids)),
                Some(child) => {
                    let path = vec![top.clone(), child.clone()];
                    let inner = r.module_body(&path, ids);
                    let child_ident = ident(child);
                    body.extend(quote!(pub mod #child_ident { #inner }));
                }
            }
        }
        if options.single_file {
            root.extend(quote!(pub mod #top_ident { #body }));
        } else {
            root.extend(quote!(pub mod #top_ident;));
            files.push(EmittedFile {
                path: format!("{top}.rs"),
                tokens: body,
            });
        }
    }
    files.insert(
        0,
        EmittedFile {
            path: "mod.rs".to_owned(),
            tokens: root,
        },
    );
    Ok(files)
}

fn ident(s: &str) -> Ident {
    Ident::new(s, Span::call_site())
}

/// `super::super::core::v1::Name` from `from` to `name` in module `to`.
fn relative(from: &[String], to: &[String], name: &str) -> TokenStream {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    let mut out = TokenStream::new();
    for _ in common..from.len() {
        out.extend(quote!(super::));
    }
    for seg in to.get(common..).unwrap_or_default() {
        let seg = ident(seg);
        out.extend(quote!(#seg::));
    }
    let name = ident(name);
    out.extend(quote!(#name));
    out
}

fn release((major, minor): Release) -> String {
    format!("{major}.{minor}")
}

impl Renderer<'_> {
    fn module_body(&self, module: &[String], ids: &[usize]) -> TokenStream {
        let mut out = TokenStream::new();
        let mut merge = TokenStream::new();
        for &id in ids {
            let Some(e) = self.plan.entries.get(id) else {
                continue;
            };
            let doc = e.doc.as_deref().map(doc_attr);
            let name = ident(&e.name);
            match &e.body {
                Body::Struct(s) => {
                    out.extend(self.structure(module, &e.name, doc, s));
                    if s.merge {
                        merge.extend(self.merge_static(module, &e.name, s));
                    }
                }
                Body::MergeOnly(s) => {
                    if s.merge {
                        merge.extend(self.merge_static(module, &e.name, s));
                    }
                }
                Body::Enum(variants) => {
                    let krate = &self.krate;
                    let vs = variants.iter().map(|(v, wire)| {
                        let v = ident(v);
                        quote!(#v = #wire,)
                    });
                    out.extend(quote! {
                        #krate::open_enum! {
                            #doc
                            pub enum #name { #(#vs)* }
                        }
                    });
                }
                Body::Alias(ty) => {
                    let ty = self.ty(module, ty);
                    out.extend(quote!(#doc pub type #name = #ty;));
                }
                Body::ListAlias | Body::Pending => {}
            }
        }
        if !merge.is_empty() {
            let krate = &self.krate;
            out.extend(quote! {
                /// Merge metadata of this module's types (see `kapi::merge`).
                pub mod merge {
                    #![allow(non_upper_case_globals)]
                    use #krate::merge::{field, TypeInfo};
                    #merge
                }
            });
        }
        out
    }

    fn ty(&self, module: &[String], ty: &Ty) -> TokenStream {
        let krate = &self.krate;
        match ty {
            Ty::Bool => quote!(bool),
            Ty::I32 => quote!(i32),
            Ty::I64 => quote!(i64),
            Ty::F64 => quote!(f64),
            Ty::String => quote!(String),
            Ty::Value => quote!(serde_json::Value),
            Ty::Runtime { path, .. } => {
                let path: TokenStream = path.parse().unwrap_or_default();
                quote!(#krate::#path)
            }
            Ty::Named(id) => match self.plan.entries.get(*id) {
                Some(e) => relative(module, &e.module, &e.name),
                None => quote!(serde_json::Value),
            },
            Ty::Vec(inner) => {
                let inner = self.ty(module, inner);
                quote!(Vec<#inner>)
            }
            Ty::Map(inner) => {
                let inner = self.ty(module, inner);
                quote!(std::collections::BTreeMap<String, #inner>)
            }
        }
    }

    fn structure(
        &self,
        module: &[String],
        name: &str,
        doc: Option<TokenStream>,
        s: &StructBody,
    ) -> TokenStream {
        let krate = &self.krate;
        let name_ident = ident(name);
        // `rename_all = "camelCase"` pays off when it saves more renames than its own line.
        let plain = s.fields.iter().filter(|f| f.ident != f.wire).count();
        let camel = s
            .fields
            .iter()
            .filter(|f| serde_camel(&f.ident) != f.wire)
            .count();
        let use_camel = camel + 1 < plain;
        let fields = s.fields.iter().map(|f| self.field(module, f, use_camel));
        let default = s.default.then(|| quote!(Default,));
        let resource = s.kind.as_ref().map(|_| quote!(#krate::Resource,));
        let rename_all = use_camel.then(|| quote!(#[serde(rename_all = "camelCase")]));
        let attrs = s.kind.as_ref().map(|k| self.resource_attrs(name, k));
        quote! {
            #doc
            #[derive(Clone, Debug, #default PartialEq, serde::Serialize, serde::Deserialize, #resource)]
            #rename_all
            #attrs
            pub struct #name_ident { #(#fields)* }
        }
    }

    fn field(&self, module: &[String], f: &FieldPlan, camel: bool) -> TokenStream {
        let krate = &self.krate;
        let name = ident(&f.ident);
        let doc = f.doc.as_deref().map(doc_attr);
        let expected = if camel {
            serde_camel(&f.ident)
        } else {
            f.ident.clone()
        };
        let mut serde = Vec::new();
        if expected != f.wire {
            let wire = &f.wire;
            serde.push(quote!(rename = #wire));
        }
        let ty = match f.special {
            Some(Special::ApiVersion) => quote!(#krate::type_tag::ApiVersion<Self>),
            Some(Special::Kind) => quote!(#krate::type_tag::Kind<Self>),
            Some(Special::Metadata) => {
                serde.push(quote!(default));
                quote!(#krate::meta::ObjectMeta)
            }
            None => {
                let mut ty = self.ty(module, &f.ty);
                if f.boxed {
                    ty = quote!(Box<#ty>);
                }
                if !f.required {
                    serde.push(quote!(default, skip_serializing_if = "Option::is_none"));
                    ty = quote!(Option<#ty>);
                }
                ty
            }
        };
        let serde = (!serde.is_empty()).then(|| quote!(#[serde(#(#serde),*)]));
        quote! {
            #doc
            #serde
            pub #name: #ty,
        }
    }

    fn resource_attrs(&self, name: &str, k: &KindPlan) -> TokenStream {
        let mut attrs = Vec::new();
        let group = &k.gvk.group;
        let version = &k.gvk.version;
        let mut id = vec![quote!(group = #group), quote!(version = #version)];
        if k.gvk.kind != name {
            let kind = &k.gvk.kind;
            id.push(quote!(kind = #kind));
        }
        if k.plural != guess_plural(&k.gvk.kind) {
            let plural = &k.plural;
            id.push(quote!(plural = #plural));
        }
        if k.scope == Scope::Cluster {
            id.push(quote!(cluster));
        }
        if let Some(krate) = &self.krate_attr {
            id.push(quote!(crate = #krate));
        }
        if k.no_list {
            id.push(quote!(no_list));
        }
        // Every kind has a merge static (see `plan`), so the server always finds a root.
        let merge_static = ident(name);
        id.push(quote!(merge = merge::#merge_static));
        attrs.push(id);
        let mut names = Vec::new();
        if let Some(s) = &k.singular
            && *s != k.gvk.kind.to_lowercase()
        {
            names.push(quote!(singular = #s));
        }
        if !k.short_names.is_empty() {
            let s = &k.short_names;
            names.push(quote!(short_names = [#(#s),*]));
        }
        if !k.categories.is_empty() {
            let c = &k.categories;
            names.push(quote!(categories = [#(#c),*]));
        }
        if !k.selectable_fields.is_empty() {
            let c = &k.selectable_fields;
            names.push(quote!(selectable_fields = [#(#c),*]));
        }
        attrs.push(names);
        if k.verbs.len() != Verb::ALL.len() {
            let v = k.verbs.iter().map(|v| v.as_str());
            attrs.push(vec![quote!(verbs = [#(#v),*])]);
        }
        let mut subs = Vec::new();
        if k.status {
            subs.push(quote!(status));
        }
        if let Some((spec, status, selector)) = &k.scale {
            let selector = selector
                .as_ref()
                .map(|s| quote!(, label_selector_path = #s));
            subs.push(
                quote!(scale(spec_replicas_path = #spec, status_replicas_path = #status #selector)),
            );
        }
        attrs.push(subs);
        for c in &k.printer_columns {
            let (n, t, p, j) = (&c.name, &c.ty, c.priority, &c.json_path);
            let mut parts = vec![quote!(name = #n), quote!(type = #t), quote!(json_path = #j)];
            if p != 0 {
                let p = proc_macro2::Literal::i64_unsuffixed(p);
                parts.push(quote!(priority = #p));
            }
            if let Some(f) = &c.format {
                parts.push(quote!(format = #f));
            }
            // The description is data the server returns in Table column definitions.
            if let Some(d) = &c.description {
                parts.push(quote!(description = #d));
            }
            attrs.push(vec![quote!(printer_column(#(#parts),*))]);
        }
        let mut life = Vec::new();
        if let Some(l) = &k.lifecycle {
            for (key, value) in [
                ("introduced", l.introduced),
                ("deprecated", l.deprecated),
                ("removed", l.removed),
            ] {
                if let Some(v) = value {
                    let key = ident(key);
                    let v = release(v);
                    life.push(quote!(#key = #v));
                }
            }
            if let Some(r) = &l.replacement {
                let (g, v, kd) = (&r.group, &r.version, &r.kind);
                life.push(quote!(replacement(group = #g, version = #v, kind = #kd)));
            }
        }
        if let Some(w) = &k.deprecation_warning {
            life.push(quote!(deprecation_warning = #w));
        }
        attrs.push(life);
        let attrs = attrs
            .into_iter()
            .filter(|a| !a.is_empty())
            .map(|a| quote!(#[resource(#(#a),*)]));
        quote!(#(#attrs)*)
    }

    fn merge_static(&self, module: &[String], name: &str, s: &StructBody) -> TokenStream {
        let krate = &self.krate;
        let mut here = module.to_vec();
        here.push("merge".to_owned());
        let fields = s
            .fields
            .iter()
            .filter(|f| self.plan.field_in_merge(&f.merge))
            .map(|f| {
                let m = &f.merge;
                let wire = &f.wire;
                let mut chain = quote!(field(#wire));
                match m.list_type {
                    Some(ListType::Atomic) => chain.extend(quote!(.atomic_list())),
                    Some(ListType::Set) => chain.extend(quote!(.set())),
                    Some(ListType::Map) => {
                        let keys = &m.list_map_keys;
                        chain.extend(quote!(.list_map(&[#(#keys),*])));
                    }
                    None => {}
                }
                match m.map_type {
                    Some(MapType::Atomic) => chain.extend(quote!(.atomic_map())),
                    Some(MapType::Granular) => chain.extend(quote!(.granular_map())),
                    None => {}
                }
                if let Some(s) = &m.patch_strategy {
                    chain.extend(quote!(.strategy(#s)));
                }
                if let Some(k) = &m.patch_merge_key {
                    chain.extend(quote!(.merge_key(#k)));
                }
                if m.embedded_resource {
                    chain.extend(quote!(.embedded()));
                }
                if m.preserve_unknown_fields {
                    chain.extend(quote!(.preserve_unknown()));
                }
                if m.int_or_string {
                    chain.extend(quote!(.int_or_string()));
                }
                if self.plan.merge_target_live(m.target) {
                    let target = match m.target {
                        Some(MergeTarget::Entry(id)) => match self.plan.entries.get(id) {
                            Some(e) => {
                                let mut to = e.module.clone();
                                to.push("merge".to_owned());
                                relative(&here, &to, &e.name)
                            }
                            None => quote!(#krate::merge::OBJECT_META),
                        },
                        _ => quote!(#krate::merge::OBJECT_META),
                    };
                    chain.extend(match m.wrap.as_slice() {
                        [] => quote!(.of(&#target)),
                        [true] => quote!(.items(&#target)),
                        [false] => quote!(.values(&#target)),
                        wraps => {
                            let w = wraps.iter().map(|l| {
                                if *l {
                                    quote!(#krate::merge::Wrap::List)
                                } else {
                                    quote!(#krate::merge::Wrap::Map)
                                }
                            });
                            quote!(.via(&[#(#w),*], &#target))
                        }
                    });
                }
                chain
            });
        let mut value = quote!(TypeInfo::new(&[#(#fields),*]));
        match s.map_type {
            Some(MapType::Atomic) => value.extend(quote!(.atomic())),
            Some(MapType::Granular) => value.extend(quote!(.granular())),
            None => {}
        }
        if s.preserve_unknown_fields {
            value.extend(quote!(.preserve_unknown()));
        }
        if s.embedded_resource {
            value.extend(quote!(.embedded()));
        }
        let name = format_ident!("{}", name);
        quote!(pub static #name: TypeInfo = #value;)
    }
}

fn doc_attr(text: &str) -> TokenStream {
    let lines = text.lines().map(|l| {
        let l = format!(" {}", l.trim_end());
        quote!(#[doc = #l])
    });
    quote!(#(#lines)*)
}

/// Upstream's plural guess for a kind (`UnsafeGuessKindToResource`): lowercase, then `y` after a
/// consonant → `ies`, `s`/`x`/`z`/`ch`/`sh` → `+es`, else `+s`.
pub(crate) fn guess_plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    if lower.is_empty() {
        return lower;
    }
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
        && !stem.is_empty()
    {
        return format!("{stem}ies");
    }
    if lower.ends_with(['s', 'x', 'z']) || lower.ends_with("ch") || lower.ends_with("sh") {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_guesses() {
        let cases = [
            ("Deployment", "deployments"),
            ("NetworkPolicy", "networkpolicies"),
            ("Gateway", "gateways"),
            ("Ingress", "ingresses"),
            ("Box", "boxes"),
            ("Match", "matches"),
            ("Mesh", "meshes"),
            ("Endpoints", "endpointses"),
        ];
        for (kind, want) in cases {
            assert_eq!(guess_plural(kind), want, "{kind}");
        }
    }

    #[test]
    fn relative_paths() {
        let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cases = [
            (p(&["apps", "v1"]), p(&["apps", "v1"]), "X", "X"),
            (
                p(&["apps", "v1"]),
                p(&["core", "v1"]),
                "X",
                "super :: super :: core :: v1 :: X",
            ),
            (
                p(&["apps", "v1"]),
                p(&["apps", "v1beta1"]),
                "X",
                "super :: v1beta1 :: X",
            ),
            (
                p(&["apps", "v1", "merge"]),
                p(&["apimachinery", "merge"]),
                "X",
                "super :: super :: super :: apimachinery :: merge :: X",
            ),
        ];
        for (from, to, name, want) in cases {
            assert_eq!(relative(&from, &to, name).to_string(), want);
        }
    }
}
