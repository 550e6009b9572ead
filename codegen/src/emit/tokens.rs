//! Rendering: a [`Plan`] → one `TokenStream` per output file.
//!
//! Nothing is decided here beyond spelling: types reach each other through relative
//! `super::` paths (so the output can sit at any depth of a user's crate), runtime types through
//! the configured runtime crate path, and each module's merge metadata lives in a `merge` child
//! module of statics named like the types they describe.

use std::collections::{BTreeMap, BTreeSet};

use heck::ToUpperCamelCase;
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

use super::conversions::Conversions;
use super::defaults::{DefaultFill, TypeDefault};
use super::lifecycle::Release;
use super::names::serde_camel;
use super::plan::{Body, FieldPlan, KindPlan, MergeTarget, ModPath, Plan, Special, StructBody, Ty};
use super::validations::{CheckRule, TypeCheck};
use super::{EmitError, EmittedFile, Options};
use crate::model::{ColumnCell, ListType, MapType, Model, Scope, Verb};

/// Spells a plan's items; `prefix` places an entry's module below the output root (empty for a
/// single-spec tree, `shared/<set>` for a multi-version crate's shared definitions).
pub(crate) struct Renderer<'p> {
    pub(crate) plan: &'p Plan,
    /// Where kinds find the `families` module: `crate::families` in a multi-version crate,
    /// whose version trees render paths relative to themselves; `None`: relative to the output
    /// root, where [`render`] puts it.
    families: Option<TokenStream>,
    krate: TokenStream,
    krate_attr: Option<String>,
    /// `Options::kube`: kinds for the `kube` crate.
    kube: bool,
    prefix: Box<dyn Fn(usize) -> Vec<String> + 'p>,
    merge_prefix: Box<dyn Fn(usize) -> Vec<String> + 'p>,
}

/// One entry's output: the item for its module and its merge static for the `merge` child.
#[derive(Default)]
pub(crate) struct EntryTokens {
    pub(crate) item: TokenStream,
    pub(crate) merge: TokenStream,
    /// The merge static calls `field(..)`, so the `merge` module needs that import.
    pub(crate) uses_field: bool,
}

/// A module's items and merge statics, gathered before the module is closed.
#[derive(Default)]
pub(crate) struct ModuleTokens {
    pub(crate) items: TokenStream,
    pub(crate) merge: TokenStream,
    pub(crate) uses_field: bool,
    /// `pub use` lines for the `merge` child (statics defined elsewhere).
    pub(crate) merge_uses: TokenStream,
}

impl ModuleTokens {
    pub(crate) fn push(&mut self, e: EntryTokens) {
        self.items.extend(e.item);
        self.merge.extend(e.merge);
        self.uses_field |= e.uses_field;
    }
}

/// Renders the plan into files: `mod.rs` declaring one module per group (plus `apimachinery`),
/// and `<module>.rs` per group holding its versions as inline modules; or everything inline in
/// `mod.rs` when `options.single_file`. Every module holding kinds, directly or below, gets a
/// `register` function.
pub(crate) fn render(
    model: &Model,
    plan: &Plan,
    options: &Options,
    conversions: &Conversions,
) -> Result<Vec<EmittedFile>, EmitError> {
    let r = Renderer::new(plan, options)?;
    let mut files = Vec::new();
    let mut root = TokenStream::new();
    let mut root_children = Vec::new();
    for (top, children) in &module_tree(plan) {
        let top_ident = ident(top);
        let mut body = TokenStream::new();
        let mut kinds = Vec::new();
        let mut registered_children = Vec::new();
        for (child, ids) in children {
            let path: ModPath = match child {
                None => vec![top.clone()],
                Some(child) => vec![top.clone(), child.clone()],
            };
            let mut m = ModuleTokens::default();
            for &id in ids {
                m.push(r.entry(&path, id));
            }
            let mut inner = r.close_module(m);
            let child_kinds = r.kinds(ids);
            match child {
                None => kinds = child_kinds,
                Some(child) => {
                    if !child_kinds.is_empty() {
                        inner.extend(r.register_fn(&child_kinds, &[], &[]));
                        registered_children.push((child.clone(), None));
                    }
                    let child_ident = ident(child);
                    body.extend(quote!(pub mod #child_ident { #inner }));
                    continue;
                }
            }
            body.extend(inner);
        }
        if !kinds.is_empty() || !registered_children.is_empty() {
            body.extend(r.register_fn(&kinds, &registered_children, &[]));
            root_children.push((top.clone(), None));
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
    root.extend(conversions.module(&r.krate, &families_used(plan)));
    if !root_children.is_empty() {
        root.extend(r.register_fn(&[], &root_children, &[quote!(definitions)]));
        super::openapi::add_definitions_module(model, options.single_file, &mut root, &mut files);
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

/// The names of the families the plan's kinds belong to.
pub(crate) fn families_used(plan: &Plan) -> BTreeSet<String> {
    plan.entries
        .iter()
        .filter_map(|e| match &e.body {
            Body::Struct(s) => s.kind.as_ref()?.family.clone(),
            _ => None,
        })
        .collect()
}

/// Top-level module → (child module → entries); `None` holds a flat module's own entries.
pub(crate) fn module_tree(plan: &Plan) -> BTreeMap<String, BTreeMap<Option<String>, Vec<usize>>> {
    let mut tree: BTreeMap<String, BTreeMap<Option<String>, Vec<usize>>> = BTreeMap::new();
    for (path, ids) in plan.modules() {
        let (top, child) = match path.as_slice() {
            [top] => (top.clone(), None),
            [top, child, ..] => (top.clone(), Some(child.clone())),
            [] => continue,
        };
        tree.entry(top).or_default().insert(child, ids);
    }
    tree
}

/// The root module holding the families of versions stored once (see `conversions`).
pub(crate) const FAMILIES: &str = "families";

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

impl<'p> Renderer<'p> {
    pub(crate) fn new(plan: &'p Plan, options: &Options) -> Result<Self, EmitError> {
        let krate: syn::Path = syn::parse_str(&options.runtime_crate).map_err(|e| {
            EmitError::Option(format!(
                "runtime_crate \"{}\" is not a path: {e}",
                options.runtime_crate
            ))
        })?;
        Ok(Self {
            plan,
            families: None,
            krate: quote!(#krate),
            krate_attr: (options.runtime_crate != "kapi").then(|| options.runtime_crate.clone()),
            kube: options.kube,
            prefix: Box::new(|_| Vec::new()),
            merge_prefix: Box::new(|_| Vec::new()),
        })
    }

    /// The same renderer naming families as `crate::families::NAME`.
    pub(crate) fn with_families_at_crate_root(mut self) -> Self {
        self.families = Some(quote!(crate::families));
        self
    }

    /// The path of the runtime crate (`kapi` unless the options say otherwise).
    pub(crate) fn runtime(&self) -> &TokenStream {
        &self.krate
    }

    /// The same renderer placing entry `id`'s item below `prefix(id)` and its merge static
    /// below `merge_prefix(id)`.
    pub(crate) fn with_prefix(
        mut self,
        prefix: impl Fn(usize) -> Vec<String> + 'p,
        merge_prefix: impl Fn(usize) -> Vec<String> + 'p,
    ) -> Self {
        self.prefix = Box::new(prefix);
        self.merge_prefix = Box::new(merge_prefix);
        self
    }

    /// Where entry `id`'s item is defined, from the output root.
    fn path_of(&self, id: usize) -> Vec<String> {
        let mut path = (self.prefix)(id);
        if let Some(e) = self.plan.entries.get(id) {
            path.extend(e.module.iter().cloned());
        }
        path
    }

    /// The module holding entry `id`'s merge static, from the output root.
    fn merge_path_of(&self, id: usize) -> Vec<String> {
        let mut path = (self.merge_prefix)(id);
        if let Some(e) = self.plan.entries.get(id) {
            path.extend(e.module.iter().cloned());
        }
        path.push("merge".to_owned());
        path
    }

    /// One entry rendered as if it lived in `module` (a path from the output root).
    pub(crate) fn entry(&self, module: &[String], id: usize) -> EntryTokens {
        let mut out = EntryTokens::default();
        let Some(e) = self.plan.entries.get(id) else {
            return out;
        };
        let doc = e.doc.as_deref().map(doc_attr);
        let name = ident(&e.name);
        match &e.body {
            Body::Struct(s) => {
                let merge = relative(module, &self.merge_path_of(id), &e.name);
                out.item = self.structure(module, &e.name, doc, s, merge);
                if s.merge {
                    (out.merge, out.uses_field) = self.merge_static(module, &e.name, s);
                }
            }
            Body::MergeOnly(s) => {
                if s.merge {
                    (out.merge, out.uses_field) = self.merge_static(module, &e.name, s);
                }
            }
            Body::Enum(variants) => {
                let krate = &self.krate;
                let vs = variants.iter().map(|(v, wire)| {
                    let v = ident(v);
                    quote!(#v = #wire,)
                });
                // The `Default` (the empty spelling) lets a struct requiring the enum derive one.
                out.item = quote! {
                    #krate::open_enum! {
                        #doc
                        pub enum #name { #(#vs)* }
                        impl Default;
                    }
                };
            }
            Body::Alias(ty) => {
                let ty = self.ty(module, ty);
                out.item = quote!(#doc pub type #name = #ty;);
            }
            Body::ListAlias | Body::Pending => {}
        }
        out
    }

    /// A module's items followed by its `merge` child, when it has statics.
    pub(crate) fn close_module(&self, m: ModuleTokens) -> TokenStream {
        let mut out = m.items;
        if m.merge.is_empty() && m.merge_uses.is_empty() {
            return out;
        }
        let krate = &self.krate;
        let uses = if m.merge.is_empty() {
            None
        } else if m.uses_field {
            Some(quote!(use #krate::merge::{field, TypeInfo};))
        } else {
            Some(quote!(use #krate::merge::TypeInfo;))
        };
        let allow = (!m.merge.is_empty()).then(|| quote!(#![allow(non_upper_case_globals)]));
        let (statics, reexports) = (m.merge, m.merge_uses);
        out.extend(quote! {
            /// Merge metadata of this module's types (see `kapi::merge`).
            pub mod merge {
                #allow
                #uses
                #reexports
                #statics
            }
        });
        out
    }

    /// Names of the served kinds among `ids`, in the given order.
    pub(crate) fn kinds(&self, ids: &[usize]) -> Vec<String> {
        ids.iter()
            .filter_map(|&id| {
                let e = self.plan.entries.get(id)?;
                match &e.body {
                    Body::Struct(StructBody { kind: Some(_), .. }) => Some(e.name.clone()),
                    _ => None,
                }
            })
            .collect()
    }

    /// `pub fn register(registry)`: registers `kinds` of this module, then calls the `register`
    /// of each child module, each call under the child's `cfg` attribute, if any.
    /// It first hands the OpenAPI schemas of the `definitions` modules at the given paths to
    /// the registry.
    pub(crate) fn register_fn(
        &self,
        kinds: &[String],
        children: &[(String, Option<TokenStream>)],
        definitions: &[TokenStream],
    ) -> TokenStream {
        let krate = &self.krate;
        let name = format_ident!("{}", super::openapi::CONSTANT);
        let definitions = definitions
            .iter()
            .map(|module| quote!(registry.add_definitions(#module::#name);));
        let own = (!kinds.is_empty()).then(|| {
            let kinds = kinds.iter().map(|k| ident(k));
            quote!(registry #(.register::<#kinds>())*;)
        });
        let calls = children.iter().map(|(child, cfg)| {
            let child = ident(child);
            quote!(#cfg #child::register(registry);)
        });
        let doc = if children.is_empty() {
            " Adds this group-version's served kinds to `registry`."
        } else {
            " Adds every served kind below this module to `registry`."
        };
        // `#[inline]` keeps the handlers out of this crate's own code generation: registering a
        // kind instantiates its JSON codec, which is most of the machine code a bindings crate
        // would otherwise build. Only a crate that calls `register` (a server) pays for it, and
        // only for the groups it registers.
        quote! {
            #[doc = #doc]
            #[inline]
            pub fn register(registry: &mut #krate::Registry) {
                #(#definitions)*
                #own
                #(#calls)*
            }
        }
    }

    fn ty(&self, module: &[String], ty: &Ty) -> TokenStream {
        let krate = &self.krate;
        match ty {
            Ty::Bool => quote!(bool),
            Ty::I32 => quote!(i32),
            Ty::I64 => quote!(i64),
            Ty::String => quote!(String),
            Ty::Value => quote!(#krate::serde_json::Value),
            Ty::Runtime { path, .. } => {
                let path: TokenStream = path.parse().unwrap_or_default();
                quote!(#krate::#path)
            }
            Ty::Named(id) => match self.plan.entries.get(*id) {
                Some(e) => relative(module, &self.path_of(*id), &e.name),
                None => quote!(#krate::serde_json::Value),
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
        merge: TokenStream,
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
        let resource = s.kind.as_ref().map(|_| quote!(#krate::Resource,));
        let mut wire = Vec::new();
        if let Some(krate) = &self.krate_attr {
            wire.push(quote!(crate = #krate));
        }
        if use_camel {
            wire.push(quote!(rename_all = "camelCase"));
        }
        // A missing field reads as its zero value, as Go's decoder does; it also lets `Wire`
        // read straight into the struct, the leanest form it has.
        wire.push(quote!(default));
        let wire = quote!(#[wire(#(#wire),*)]);
        let attrs = s.kind.as_ref().map(|k| {
            // Families live in the output root's `families` module.
            let family = k.family.as_deref().map(|f| match &self.families {
                Some(root) => {
                    let f = ident(f);
                    quote!(#root::#f)
                }
                None => relative(module, &[FAMILIES.to_owned()], f),
            });
            self.resource_attrs(name, k, &merge, family)
        });
        // On the item, not the crate: code pulled in with `include!` gets no crate attributes.
        let allow = s
            .kind
            .as_ref()
            .is_some_and(|k| k.printer_columns.len() > 1)
            .then(|| {
                quote!(#[allow(
                    clippy::duplicated_attributes,
                    reason = "repeated `printer_column(..)` keys are not duplicates"
                )])
            });
        // `Wire` rather than serde's derives: far less code for the compiler to check per
        // struct (see `kapi::wire`).
        quote! {
            #doc
            #allow
            #[derive(Clone, Debug, Default, PartialEq, #krate::Wire, #resource)]
            #wire
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
        let mut wire = Vec::new();
        if f.flatten {
            wire.push(quote!(flatten));
        } else if expected != f.wire {
            let name = &f.wire;
            wire.push(quote!(rename = #name));
        }
        let ty = match f.special {
            Some(Special::ApiVersion) => quote!(#krate::type_tag::ApiVersion<Self>),
            Some(Special::Kind) => quote!(#krate::type_tag::Kind<Self>),
            Some(Special::Metadata) if self.kube => {
                quote!(#krate::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta)
            }
            Some(Special::Metadata) => quote!(#krate::meta::ObjectMeta),
            None => {
                let mut ty = self.ty(module, &f.ty);
                if f.boxed {
                    ty = quote!(Box<#ty>);
                }
                // `Wire` treats a field spelled `Option<..>` as optional.
                if !f.required {
                    ty = quote!(Option<#ty>);
                }
                ty
            }
        };
        let wire = (!wire.is_empty()).then(|| quote!(#[wire(#(#wire),*)]));
        quote! {
            #doc
            #wire
            pub #name: #ty,
        }
    }

    fn resource_attrs(
        &self,
        name: &str,
        k: &KindPlan,
        merge: &TokenStream,
        family: Option<TokenStream>,
    ) -> TokenStream {
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
        if self.kube {
            id.push(quote!(kube));
        }
        // Every kind has a merge static (see `plan`), so the server always finds a root.
        id.push(quote!(merge = #merge));
        if let Some(family) = family {
            id.push(quote!(family = #family));
        }
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
            let (n, t, p) = (&c.name, &c.ty, c.priority);
            let cell = match &c.cell {
                ColumnCell::Path(path) => quote!(json_path = #path),
                ColumnCell::Rule(rule) => quote!(cell = #rule),
            };
            let mut parts = vec![quote!(name = #n), quote!(type = #t), cell];
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
            parts.extend(releases(c.since, c.until));
            attrs.push(vec![quote!(printer_column(#(#parts),*))]);
        }
        if let Some(s) = &k.strategy {
            let mut parts = Vec::new();
            if let Some(g) = &s.generation {
                parts.push(quote!(generation = #g));
            }
            if let Some((major, minor)) = s.generation_since {
                let release = format!("{major}.{minor}");
                parts.push(quote!(generation_since = #release));
            }
            if let Some(status) = &s.status_on_create {
                parts.push(quote!(status_on_create = #status));
            }
            if let Some(conversion) = &s.write_conversion {
                parts.push(quote!(write_conversion = #conversion));
            }
            if s.create_on_update {
                parts.push(quote!(create_on_update = true));
            }
            if let Some(rule) = &s.create_rule {
                parts.push(quote!(create_rule = #rule));
            }
            attrs.push(parts);
        }
        if let Some(keeps) = &k.status_keeps_metadata {
            attrs.push(vec![quote!(status_keeps_metadata = [#(#keeps),*])]);
        }
        match &k.field_labels {
            Some(None) => attrs.push(vec![quote!(field_labels = "meta")]),
            Some(Some(entry)) => {
                if let Some(message) = &entry.message {
                    attrs.push(vec![quote!(field_label_message = #message)]);
                }
                for l in &entry.labels {
                    let label = &l.label;
                    let mut parts = vec![quote!(label = #label)];
                    if let Some(paths) = &l.paths {
                        let paths = paths.iter().map(|p| format!(".{p}"));
                        parts.push(quote!(paths = [#(#paths),*]));
                    }
                    if let Some(t) = &l.type_ {
                        parts.push(quote!(type = #t));
                    }
                    parts.extend(releases(l.since, l.until));
                    attrs.push(vec![quote!(field_label(#(#parts),*))]);
                }
            }
            None => {}
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

    /// The merge static of a struct, and whether it calls `field(..)`.
    fn merge_static(&self, module: &[String], name: &str, s: &StructBody) -> (TokenStream, bool) {
        let krate = &self.krate;
        let mut here = module.to_vec();
        here.push("merge".to_owned());
        let fields: Vec<TokenStream> = s
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
                            Some(e) => relative(&here, &self.merge_path_of(id), &e.name),
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
            })
            .collect();
        let uses_field = !fields.is_empty();
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
        if !s.defaults.is_empty() {
            let defaults = s.defaults.iter().map(|d| self.default_step(d));
            value.extend(quote!(.defaults(&[#(#defaults),*])));
        }
        if !s.checks.is_empty() {
            let checks = s.checks.iter().map(|c| self.check(c));
            value.extend(quote!(.checks(&[#(#checks),*])));
        }
        let name = format_ident!("{}", name);
        (quote!(pub static #name: TypeInfo = #value;), uses_field)
    }
}

impl Renderer<'_> {
    /// One `kapi::defaulting::Default`, built with its `const` constructors.
    fn default_step(&self, d: &TypeDefault) -> TokenStream {
        let krate = &self.krate;
        let path = &d.path;
        let mut step = match &d.fill {
            DefaultFill::Json(json) => quote!(#krate::defaulting::Default::value(#path, #json)),
            DefaultFill::Rule(rule) => {
                let variant = format_ident!("{}", rule.to_upper_camel_case());
                quote!(#krate::defaulting::Default::rule(#path, #krate::defaulting::Rule::#variant))
            }
            DefaultFill::Clear => quote!(#krate::defaulting::Default::clear(#path)),
        };
        if let Some((field, equals)) = &d.when {
            step.extend(quote!(.when(#field, #equals)));
        }
        for (bound, at) in [("since", d.since), ("until", d.until)] {
            if let Some((major, minor)) = at {
                let bound = format_ident!("{bound}");
                let (major, minor) = (
                    proc_macro2::Literal::u16_unsuffixed(major),
                    proc_macro2::Literal::u16_unsuffixed(minor),
                );
                step.extend(quote!(.#bound(#major, #minor)));
            }
        }
        step
    }
}

impl Renderer<'_> {
    /// One `kapi::validation::Check`, built with its `const` constructors.
    fn check(&self, c: &TypeCheck) -> TokenStream {
        let krate = &self.krate;
        let v = quote!(#krate::validation);
        let variant = |name: &str| format_ident!("{name}");
        let rule = match &c.rule {
            CheckRule::Required => quote!(#v::Rule::Required),
            CheckRule::Minimum(n) => quote!(#v::Rule::Minimum(#n)),
            CheckRule::Range(lo, hi) => quote!(#v::Rule::Range(#lo, #hi)),
            CheckRule::Port => quote!(#v::Rule::Port),
            CheckRule::PortOrName => quote!(#v::Rule::PortOrName),
            CheckRule::OneOf(values) => quote!(#v::Rule::OneOf(&[#(#values),*])),
            CheckRule::Format(f) => {
                let f = variant(f);
                quote!(#v::Rule::Format(#v::Format::#f))
            }
            CheckRule::KeysFormat(f) => {
                let f = variant(f);
                quote!(#v::Rule::KeysFormat(#v::Format::#f))
            }
            CheckRule::Unique(field) => quote!(#v::Rule::Unique(#field)),
            CheckRule::Immutable(shape) => {
                let shape = variant(shape);
                quote!(#v::Rule::Immutable(#v::Shape::#shape))
            }
            CheckRule::Named { variant, workload } => {
                let named = format_ident!("{variant}");
                match workload {
                    Some(w) => {
                        let w = format_ident!("{w}");
                        quote!(#v::Rule::Named(#v::Named::#named(#v::Workload::#w)))
                    }
                    None => quote!(#v::Rule::Named(#v::Named::#named)),
                }
            }
        };
        let path = &c.path;
        let mut check = quote!(#v::Check::new(#path, #rule));
        for (bound, at) in [("since", c.since), ("until", c.until)] {
            if let Some((major, minor)) = at {
                let bound = format_ident!("{bound}");
                let (major, minor) = (
                    proc_macro2::Literal::u16_unsuffixed(major),
                    proc_macro2::Literal::u16_unsuffixed(minor),
                );
                check.extend(quote!(.#bound(#major, #minor)));
            }
        }
        check
    }
}

fn doc_attr(text: &str) -> TokenStream {
    let text = super::docs::rustdoc(text);
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

/// `since = "1.21"` and `until = "1.27"`, as far as they are set.
fn releases(since: Option<Release>, until: Option<Release>) -> Vec<TokenStream> {
    [("since", since), ("until", until)]
        .into_iter()
        .filter_map(|(key, release)| {
            let (major, minor) = release?;
            let key = format_ident!("{key}");
            let release = format!("{major}.{minor}");
            Some(quote!(#key = #release))
        })
        .collect()
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
