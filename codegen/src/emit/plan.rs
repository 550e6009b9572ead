//! The emission plan: every Rust item to generate, named, typed and placed in its module.
//!
//! Planning is where the decisions are made (module of each definition, type and field names,
//! enums, boxing of recursive fields, which kinds get the `Resource` derive, merge metadata);
//! [`super::tokens`] only renders the plan. Walk order is fixed (modules, then definitions by name,
//! then properties in schema order), so names and suffixes never depend on hash order.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::defaults::TypeDefault;
use super::facts::KindFacts;
use super::field_selectors::FieldSelectorEntry;
use super::lifecycle::ResolvedLifecycle;
use super::names::{
    Allocator, camel_segment, field_ident, group_modules, module_ident, type_ident, variant_ident,
};
use super::strategies::{StatusKeeps, Strategy};
use super::validations::TypeCheck;
use super::{Options, Warning, WarningKind};
use crate::model::{
    GroupVersion, Gvk, ListType, MapType, Model, ObjectType, PrinterColumn, Resource, Schema,
    SchemaType, Scope, Verb,
};

/// A module path below the generated root, e.g. `["apps", "v1"]`.
pub(crate) type ModPath = Vec<String>;

/// Name of the module holding apimachinery definitions the runtime does not provide.
pub(crate) const APIMACHINERY: &str = "apimachinery";
/// Name of the module for definitions whose group cannot be told.
pub(crate) const OTHER: &str = "other";

/// apimachinery definitions the runtime provides, and the path below the runtime crate.
const RUNTIME_TYPES: [(&str, &str); 28] = [
    ("io.k8s.apimachinery.pkg.api.resource.Quantity", "Quantity"),
    (
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        "IntOrString",
    ),
    (
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "RawExtension",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Time", "Time"),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
        "MicroTime",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.Duration", "Duration"),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "meta::ObjectMeta",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
        "meta::ListMeta",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.TypeMeta",
        "meta::TypeMeta",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
        "meta::LabelSelector",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        "meta::LabelSelectorRequirement",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
        "meta::OwnerReference",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
        "meta::ManagedFieldsEntry",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "meta::FieldsV1",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "meta::Status",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails",
        "meta::StatusDetails",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause",
        "meta::StatusCause",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Condition",
        "meta::Condition",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "meta::DeleteOptions",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions",
        "meta::Preconditions",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResource",
        "meta::APIResource",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
        "meta::APIResourceList",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup",
        "meta::APIGroup",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
        "meta::APIGroupList",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        "meta::APIVersions",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.GroupVersionForDiscovery",
        "meta::GroupVersionForDiscovery",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ServerAddressByClientCIDR",
        "meta::ServerAddressByClientCIDR",
    ),
    // A watch event's object is whatever kind is watched; generic code picks the type.
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
        "meta::WatchEvent<serde_json::Value>",
    ),
];

/// Runtime types without a `Default` impl (a struct requiring one could not derive `Default`).
const RUNTIME_NO_DEFAULT: [&str; 2] = [
    "meta::LabelSelectorRequirement",
    "meta::WatchEvent<serde_json::Value>",
];

/// Definitions that are free-form JSON by design.
const JSON_DEFINITIONS: [&str; 2] = [
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1beta1.JSON",
];

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A Rust type as generated code spells it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    Bool,
    I32,
    I64,
    String,
    /// `serde_json::Value`.
    Value,
    /// A runtime type, by its path below the runtime crate; `merge` is the plan entry holding
    /// the spec's merge metadata for it, if the spec defines it.
    Runtime {
        path: &'static str,
        merge: Option<usize>,
    },
    /// A planned type.
    Named(usize),
    Vec(Box<Ty>),
    Map(Box<Ty>),
}

/// One named item of the plan.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) module: ModPath,
    pub(crate) name: String,
    pub(crate) doc: Option<String>,
    pub(crate) body: Body,
}

#[derive(Debug)]
pub(crate) enum Body {
    /// Placeholder while the entry is being built.
    Pending,
    Struct(StructBody),
    /// An open enum: `(variant, wire value)` pairs.
    Enum(Vec<(String, String)>),
    Alias(Ty),
    /// The `<Kind>List` alias the derive emits; nothing to generate.
    ListAlias,
    /// A runtime type's merge metadata only (the type itself comes from the runtime).
    MergeOnly(StructBody),
}

#[derive(Debug, Default)]
pub(crate) struct StructBody {
    pub(crate) fields: Vec<FieldPlan>,
    pub(crate) kind: Option<KindPlan>,
    pub(crate) map_type: Option<MapType>,
    pub(crate) preserve_unknown_fields: bool,
    pub(crate) embedded_resource: bool,
    /// The struct has merge metadata worth a static.
    pub(crate) merge: bool,
    /// The fields of this type the server defaults, by paths from the type (from the data
    /// file; they go into the type's static).
    pub(crate) defaults: Vec<TypeDefault>,
    /// What writes must satisfy in this type's fields (from the data file; into the static).
    pub(crate) checks: Vec<TypeCheck>,
}

/// Which type-tag role a kind's field plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    ApiVersion,
    Kind,
    Metadata,
}

#[derive(Debug)]
pub(crate) struct FieldPlan {
    pub(crate) ident: String,
    pub(crate) wire: String,
    pub(crate) ty: Ty,
    pub(crate) required: bool,
    pub(crate) boxed: bool,
    pub(crate) doc: Option<String>,
    pub(crate) special: Option<Special>,
    pub(crate) merge: FieldMerge,
    /// The `#[wire(flatten)]` map holding keys the schema does not name.
    pub(crate) flatten: bool,
}

/// Where a field's merge metadata continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MergeTarget {
    Entry(usize),
    /// The runtime's `kapi::merge::OBJECT_META` (a CRD's `metadata` without a spec definition).
    RuntimeObjectMeta,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct FieldMerge {
    pub(crate) list_type: Option<ListType>,
    pub(crate) list_map_keys: Vec<String>,
    pub(crate) map_type: Option<MapType>,
    pub(crate) patch_strategy: Option<String>,
    pub(crate) patch_merge_key: Option<String>,
    pub(crate) embedded_resource: bool,
    pub(crate) preserve_unknown_fields: bool,
    pub(crate) int_or_string: bool,
    /// `true` for a list, `false` for a map, outermost first.
    pub(crate) wrap: Vec<bool>,
    pub(crate) target: Option<MergeTarget>,
}

impl FieldMerge {
    fn annotated(&self) -> bool {
        self.list_type.is_some()
            || self.map_type.is_some()
            || self.patch_strategy.is_some()
            || self.patch_merge_key.is_some()
            || self.embedded_resource
            || self.preserve_unknown_fields
            || self.int_or_string
    }
}

/// What the `#[resource(...)]` attributes say.
#[derive(Debug)]
pub(crate) struct KindPlan {
    pub(crate) gvk: Gvk,
    pub(crate) plural: String,
    pub(crate) scope: Scope,
    pub(crate) verbs: BTreeSet<Verb>,
    pub(crate) status: bool,
    pub(crate) scale: Option<(String, String, Option<String>)>,
    pub(crate) singular: Option<String>,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) printer_columns: Vec<PrinterColumn>,
    /// What writes do to the generation and status, when the data names the kind.
    pub(crate) strategy: Option<Strategy>,
    pub(crate) selectable_fields: Vec<String>,
    /// A built-in's status update: the metadata fields it keeps as stored; `None`, only the
    /// status changes (a custom resource's).
    pub(crate) status_keeps_metadata: Option<Vec<String>>,
    /// A built-in's field labels, when a field selectors file is given: its entry, or `None`
    /// inside for upstream's default conversion.
    pub(crate) field_labels: Option<Option<FieldSelectorEntry>>,
    pub(crate) lifecycle: Option<ResolvedLifecycle>,
    pub(crate) deprecation_warning: Option<String>,
    /// The family static (`families::NAME`) of a built-in stored once across versions.
    pub(crate) family: Option<String>,
    pub(crate) no_list: bool,
}

/// The whole plan.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) entries: Vec<Entry>,
    pub(crate) warnings: Vec<Warning>,
    /// Group → module name.
    pub(crate) group_modules: BTreeMap<String, String>,
}

impl Plan {
    /// Emitted entries by module, each module's entries sorted by name.
    pub(crate) fn modules(&self) -> BTreeMap<ModPath, Vec<usize>> {
        let mut out: BTreeMap<ModPath, Vec<usize>> = BTreeMap::new();
        for (id, e) in self.entries.iter().enumerate() {
            if !matches!(e.body, Body::ListAlias) {
                out.entry(e.module.clone()).or_default().push(id);
            }
        }
        for ids in out.values_mut() {
            ids.sort_by(|a, b| self.name(*a).cmp(self.name(*b)));
        }
        out
    }

    pub(crate) fn name(&self, id: usize) -> &str {
        self.entries.get(id).map_or("", |e| e.name.as_str())
    }

    pub(crate) fn struct_body(&self, id: usize) -> Option<&StructBody> {
        match self.entries.get(id).map(|e| &e.body) {
            Some(Body::Struct(s) | Body::MergeOnly(s)) => Some(s),
            _ => None,
        }
    }
}

/// Where a definition goes.
#[derive(Debug, Clone)]
enum DefTarget {
    Ty(Ty),
    Entry(usize),
}

struct Builder<'m> {
    model: &'m Model,
    facts: &'m KindFacts,
    options: &'m Options,
    plan: Plan,
    defs: BTreeMap<&'m str, DefTarget>,
    allocators: BTreeMap<ModPath, Allocator>,
    enums: BTreeMap<(ModPath, Vec<String>), usize>,
    kinds: BTreeMap<&'m str, (&'m Gvk, &'m Resource)>,
}

/// Plans the emission of a model.
pub(crate) fn plan(model: &Model, facts: &KindFacts, options: &Options) -> Plan {
    let mut b = Builder {
        model,
        facts,
        options,
        plan: Plan::default(),
        defs: BTreeMap::new(),
        allocators: BTreeMap::new(),
        enums: BTreeMap::new(),
        kinds: BTreeMap::new(),
    };
    for skipped in &model.skipped {
        b.warn(WarningKind::Input, skipped.clone());
    }
    b.place_definitions();
    b.build_all();
    b.box_recursion();
    b.compute_defaults();
    b.compute_merge();
    b.plan
}

fn package(name: &str) -> &str {
    name.rsplit_once('.').map_or("", |(p, _)| p)
}

fn last_segment(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(_, n)| n)
}

fn looks_like_version(s: &str) -> bool {
    s.strip_prefix('v')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

impl<'m> Builder<'m> {
    fn warn(&mut self, kind: WarningKind, message: String) {
        self.plan.warnings.push(Warning { kind, message });
    }

    fn push(&mut self, module: ModPath, name: String, doc: Option<String>, body: Body) -> usize {
        self.plan.entries.push(Entry {
            module,
            name,
            doc,
            body,
        });
        self.plan.entries.len() - 1
    }

    fn doc(&self, schema: &Schema) -> Option<String> {
        if self.options.docs {
            schema.description.clone()
        } else {
            None
        }
    }

    /// A property's doc (with docs on): its description and the `default:` the API server
    /// fills in when the property is absent. The type does not apply it: decoding must give
    /// back what was sent, and the server (or a mutating client) does the defaulting.
    fn field_doc(&self, schema: &Schema) -> Option<String> {
        let Some(default) = meaningful_default(schema).filter(|_| self.options.docs) else {
            return self.doc(schema);
        };
        let value = default.to_string();
        let ticks = if value.contains('`') { "``" } else { "`" };
        let line = format!("Default (set by the API server when absent): {ticks}{value}{ticks}.");
        Some(match self.doc(schema) {
            Some(doc) if !doc.trim().is_empty() => format!("{}\n\n{line}", doc.trim_end()),
            _ => line,
        })
    }

    /// Decides the module and top-level name of every definition.
    fn place_definitions(&mut self) {
        let model = self.model;
        // Which served kind each definition implements (first GVK wins).
        for (kind, resource) in model.resources() {
            let def = kind.definition.as_str();
            if let Some((other, _)) = self.kinds.get(def) {
                let message = format!(
                    "{} uses definition {def} already used by {other}; no Resource impl for it",
                    kind.gvk
                );
                self.warn(WarningKind::Kind, message);
                continue;
            }
            self.kinds.insert(def, (&kind.gvk, resource));
        }
        // Package → group-version, from the kinds declared by definitions of that package.
        let mut package_gv: BTreeMap<&str, GroupVersion> = BTreeMap::new();
        for kind in model.kinds.values() {
            let pkg = package(&kind.definition);
            if pkg.starts_with("io.k8s.apimachinery.")
                || !model.types.contains_key(&kind.definition)
            {
                continue;
            }
            package_gv
                .entry(pkg)
                .or_insert_with(|| kind.gvk.group_version());
        }
        // Module (as group key + version) of every definition not provided by the runtime.
        let mut placed: Vec<(&'m str, Option<(String, String)>)> = Vec::new();
        let mut groups: BTreeSet<String> = BTreeSet::new();
        for name in model.types.keys() {
            let name = name.as_str();
            if let Some((_, path)) = RUNTIME_TYPES.iter().find(|(n, _)| *n == name) {
                self.defs
                    .insert(name, DefTarget::Ty(Ty::Runtime { path, merge: None }));
                continue;
            }
            if JSON_DEFINITIONS.contains(&name) {
                self.defs.insert(name, DefTarget::Ty(Ty::Value));
                continue;
            }
            let pkg = package(name);
            let place = if pkg.starts_with("io.k8s.apimachinery.") {
                None
            } else if let Some(gv) = package_gv.get(pkg) {
                groups.insert(gv.group.clone());
                Some((gv.group.clone(), gv.version.clone()))
            } else {
                let mut segs = pkg.rsplit('.');
                match (segs.next(), segs.next()) {
                    (Some(v), Some(g)) if looks_like_version(v) => {
                        groups.insert(g.to_owned());
                        Some((g.to_owned(), v.to_owned()))
                    }
                    _ => Some((String::new(), String::new())),
                }
            };
            placed.push((name, place));
        }
        let (group_mods, messages) = group_modules(&groups, &[APIMACHINERY, OTHER]);
        for m in messages {
            self.warn(WarningKind::ModuleName, m);
        }
        self.plan.group_modules = group_mods.clone();
        // Top-level names, per module in definition-name order.
        for (name, place) in placed {
            let module: ModPath = match &place {
                None => vec![APIMACHINERY.to_owned()],
                Some((g, v)) if v.is_empty() && g.is_empty() => vec![OTHER.to_owned()],
                Some((g, v)) => vec![
                    group_mods
                        .get(g)
                        .cloned()
                        .unwrap_or_else(|| module_ident(g)),
                    module_ident(v),
                ],
            };
            let wanted = type_ident(last_segment(name));
            let allocator = self.allocators.entry(module.clone()).or_default();
            let (rust, moved) = allocator.allocate(&wanted);
            if moved {
                let message = format!(
                    "type {wanted} of {name} is taken in {}; using {rust}",
                    module.join("::")
                );
                self.warn(WarningKind::TypeName, message);
            }
            let body = if self.is_standard_list(name) {
                Body::ListAlias
            } else {
                Body::Pending
            };
            let id = self.push(module, rust, None, body);
            self.defs.insert(name, DefTarget::Entry(id));
        }
        // The spec's own definitions of runtime types keep their merge metadata.
        for name in model.types.keys() {
            let name = name.as_str();
            if !RUNTIME_TYPES.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let is_object = model.types.get(name).and_then(Schema::as_object).is_some();
            if !is_object {
                continue;
            }
            let module = vec![APIMACHINERY.to_owned()];
            let wanted = type_ident(last_segment(name));
            let (rust, _) = self
                .allocators
                .entry(module.clone())
                .or_default()
                .allocate(&wanted);
            let id = self.push(module, rust, None, Body::Pending);
            if let Some(DefTarget::Ty(Ty::Runtime { merge, .. })) = self.defs.get_mut(name) {
                *merge = Some(id);
            }
        }
    }

    /// `FooList` with exactly apiVersion, kind, metadata (ListMeta) and items (array of a served
    /// kind named `Foo` in the same package) is what `kapi::List<Foo>` already is.
    fn is_standard_list(&self, name: &str) -> bool {
        let Some(obj) = self.model.types.get(name).and_then(Schema::as_object) else {
            return false;
        };
        let names: BTreeSet<&str> = obj.properties.iter().map(|p| p.name.as_str()).collect();
        if names != BTreeSet::from(["apiVersion", "items", "kind", "metadata"]) {
            return false;
        }
        let prop = |n: &str| {
            obj.properties
                .iter()
                .find(|p| p.name == n)
                .map(|p| &p.schema.ty)
        };
        let meta_ok =
            matches!(prop("metadata"), Some(SchemaType::Ref(r)) if r.ends_with("meta.v1.ListMeta"));
        let item = match prop("items") {
            Some(SchemaType::Array(items)) => match &items.ty {
                SchemaType::Ref(r) => r.as_str(),
                _ => return false,
            },
            _ => return false,
        };
        meta_ok
            && self.kinds.contains_key(item)
            && package(item) == package(name)
            && format!("{}List", last_segment(item)) == last_segment(name)
    }

    fn build_all(&mut self) {
        let model = self.model;
        for (name, schema) in &model.types {
            let Some(DefTarget::Entry(id)) = self.defs.get(name.as_str()).cloned() else {
                // Runtime types: build their merge-only entry.
                if let Some(DefTarget::Ty(Ty::Runtime {
                    merge: Some(id), ..
                })) = self.defs.get(name.as_str()).cloned()
                    && let Some(obj) = schema.as_object()
                {
                    let body = self.struct_body(id, obj, schema, None, true, Some(name));
                    if let Some(e) = self.plan.entries.get_mut(id) {
                        e.body = Body::MergeOnly(body);
                    }
                }
                continue;
            };
            if matches!(
                self.plan.entries.get(id).map(|e| &e.body),
                Some(Body::ListAlias)
            ) {
                continue;
            }
            let doc = self.doc(schema);
            let body = match &schema.ty {
                SchemaType::Object(obj) => {
                    let kind = self.kinds.get(name.as_str()).copied();
                    Body::Struct(self.struct_body(id, obj, schema, kind, false, Some(name)))
                }
                SchemaType::String { .. } if !string_values(schema).is_empty() => {
                    Body::Enum(variants(&string_values(schema)))
                }
                _ => {
                    let module = self.module_of(id);
                    let parent = self.plan.name(id).to_owned();
                    Body::Alias(self.ty_of(&module, schema, &parent, "", false))
                }
            };
            if let Some(e) = self.plan.entries.get_mut(id) {
                e.body = body;
                e.doc = doc;
            }
        }
        // A kind loses its `<Kind>List` alias when another item already has that name.
        let mut clashes = Vec::new();
        for (id, e) in self.plan.entries.iter().enumerate() {
            if let Body::Struct(StructBody { kind: Some(_), .. }) = &e.body {
                let list = format!("{}List", e.name);
                let clash = self.plan.entries.iter().any(|o| {
                    o.module == e.module && o.name == list && !matches!(o.body, Body::ListAlias)
                });
                if clash {
                    clashes.push(id);
                }
            }
        }
        for id in clashes {
            if let Some(Entry {
                body: Body::Struct(StructBody { kind: Some(k), .. }),
                ..
            }) = self.plan.entries.get_mut(id)
            {
                k.no_list = true;
            }
        }
    }

    fn module_of(&self, id: usize) -> ModPath {
        self.plan
            .entries
            .get(id)
            .map(|e| e.module.clone())
            .unwrap_or_default()
    }

    fn struct_body(
        &mut self,
        id: usize,
        obj: &'m ObjectType,
        schema: &'m Schema,
        kind: Option<(&'m Gvk, &'m Resource)>,
        merge_only: bool,
        schema_name: Option<&str>,
    ) -> StructBody {
        let module = self.module_of(id);
        let parent = self.plan.name(id).to_owned();
        let mut idents = Allocator::default();
        let mut fields = Vec::new();
        if kind.is_some() {
            for (wire, special) in [
                ("apiVersion", Special::ApiVersion),
                ("kind", Special::Kind),
                ("metadata", Special::Metadata),
            ] {
                if !obj.properties.iter().any(|p| p.name == wire) {
                    fields.push(self.special_field(wire, special, &mut idents, None));
                }
            }
        }
        for prop in &obj.properties {
            let special = kind.and(match prop.name.as_str() {
                "apiVersion" => Some(Special::ApiVersion),
                "kind" => Some(Special::Kind),
                "metadata" => Some(Special::Metadata),
                _ => None,
            });
            if let Some(special) = special {
                let doc = self.doc(&prop.schema);
                let field = self.special_field(&prop.name, special, &mut idents, doc);
                fields.push(field);
                continue;
            }
            let wanted = field_ident(&prop.name);
            let (ident, moved) = idents.allocate(&wanted);
            if moved {
                let message = format!(
                    "field \"{}\" of {}::{parent} is named {ident} ({wanted} is taken)",
                    prop.name,
                    module.join("::")
                );
                self.warn(WarningKind::FieldName, message);
            }
            let ty = self.ty_of(&module, &prop.schema, &parent, &prop.name, merge_only);
            let merge = self.field_merge(&prop.schema, &ty);
            fields.push(FieldPlan {
                ident,
                wire: prop.name.clone(),
                ty,
                // `nullable` admits `null` even for a required property, which only an
                // `Option` can hold; a required property with a `default` may be left out
                // (the API server defaults before it checks `required`), and must stay out.
                required: obj.required.contains(&prop.name)
                    && !prop.schema.nullable
                    && meaningful_default(&prop.schema).is_none(),
                boxed: false,
                doc: self.field_doc(&prop.schema),
                special: None,
                merge,
                flatten: false,
            });
        }
        // A status subresource serves `.status` even when the schema has no such property
        // (it may be free-form or come from `x-kubernetes-preserve-unknown-fields`).
        let status_sub = kind.is_some_and(|(_, r)| r.subresources.contains_key("status"));
        if status_sub && !obj.properties.iter().any(|p| p.name == "status") {
            let (ident, _) = idents.allocate("status");
            fields.push(FieldPlan {
                ident,
                wire: "status".to_owned(),
                ty: Ty::Value,
                required: false,
                boxed: false,
                doc: None,
                special: None,
                merge: FieldMerge::default(),
                flatten: false,
            });
        }
        // `x-kubernetes-preserve-unknown-fields` keeps keys the schema does not name (upstream
        // prunes nothing below such a node): they go to a flattened map, so a round trip
        // loses nothing. An object without properties is free-form JSON already, unless it is
        // a kind's root.
        let open = schema.ext.preserve_unknown_fields && !merge_only;
        if open && (kind.is_some() || !obj.properties.is_empty()) {
            let (ident, _) = idents.allocate("extra");
            fields.push(FieldPlan {
                wire: ident.clone(),
                ident,
                ty: Ty::Map(Box::new(Ty::Value)),
                required: true,
                boxed: false,
                doc: self.options.docs.then(|| {
                    "Keys the schema does not name (it preserves unknown fields), as written."
                        .to_owned()
                }),
                special: None,
                merge: FieldMerge::default(),
                flatten: true,
            });
        }
        let kind = kind.map(|(gvk, resource)| self.kind_plan(gvk, resource, obj));
        StructBody {
            fields,
            kind,
            map_type: schema.ext.map_type,
            preserve_unknown_fields: schema.ext.preserve_unknown_fields,
            embedded_resource: schema.ext.embedded_resource,
            merge: false,
            // A CRD's defaults are in its schema; the built-ins' come from the data file.
            defaults: schema_name
                .map(|name| self.facts.defaults.of(name).to_vec())
                .unwrap_or_default(),
            checks: schema_name
                .map(|name| self.facts.validations.of(name).to_vec())
                .unwrap_or_default(),
        }
    }

    fn special_field(
        &mut self,
        wire: &str,
        special: Special,
        idents: &mut Allocator,
        doc: Option<String>,
    ) -> FieldPlan {
        let (ident, _) = idents.allocate(&field_ident(wire));
        let object_meta = match self.defs.get(OBJECT_META) {
            Some(DefTarget::Ty(Ty::Runtime {
                merge: Some(id), ..
            })) => MergeTarget::Entry(*id),
            _ => MergeTarget::RuntimeObjectMeta,
        };
        let (ty, target) = match special {
            Special::Metadata => (
                Ty::Runtime {
                    path: "meta::ObjectMeta",
                    merge: None,
                },
                Some(object_meta),
            ),
            _ => (Ty::String, None),
        };
        FieldPlan {
            ident,
            wire: wire.to_owned(),
            ty,
            required: true,
            boxed: false,
            doc,
            special: Some(special),
            merge: FieldMerge {
                target,
                ..FieldMerge::default()
            },
            flatten: false,
        }
    }

    /// The Rust type of a schema met at `parent.field`; inline objects and enums become named
    /// items `<Parent><Field>` in `module`.
    fn ty_of(
        &mut self,
        module: &ModPath,
        schema: &'m Schema,
        parent: &str,
        field: &str,
        merge_only: bool,
    ) -> Ty {
        match &schema.ty {
            SchemaType::Any => Ty::Value,
            SchemaType::Boolean => Ty::Bool,
            SchemaType::Integer { format } => match format.as_deref() {
                Some("int32") => Ty::I32,
                _ => Ty::I64,
            },
            // `Number` writes `100` back as `100` (an `f64` would write `100.0`).
            SchemaType::Number { .. } => runtime("Number"),
            // controller-gen writes `resource.Quantity` as an int-or-string with its pattern;
            // IntOrString would reject quantities beyond int32 (`107374182400`) and fractions.
            SchemaType::IntOrString if schema.has_quantity_pattern() => runtime("Quantity"),
            SchemaType::IntOrString => runtime("IntOrString"),
            SchemaType::String { format } => {
                let values = string_values(schema);
                if !values.is_empty() && !merge_only {
                    return Ty::Named(self.enum_for(module, values, parent, field, schema));
                }
                match format.as_deref() {
                    Some("byte") => runtime("ByteString"),
                    Some("date-time") => runtime("Time"),
                    _ => Ty::String,
                }
            }
            SchemaType::Ref(target) => match self.defs.get(target.as_str()) {
                Some(DefTarget::Ty(ty)) => ty.clone(),
                Some(DefTarget::Entry(id)) => Ty::Named(*id),
                // Loaders reject dangling references; a hand-built model gets free-form JSON.
                None => Ty::Value,
            },
            SchemaType::Array(items) => Ty::Vec(Box::new(
                self.ty_of(module, items, parent, field, merge_only),
            )),
            SchemaType::Map(values) => Ty::Map(Box::new(
                self.ty_of(module, values, parent, field, merge_only),
            )),
            SchemaType::Object(obj) => {
                if obj.properties.is_empty() {
                    return match &obj.additional_properties {
                        Some(v) => {
                            Ty::Map(Box::new(self.ty_of(module, v, parent, field, merge_only)))
                        }
                        None => Ty::Value,
                    };
                }
                if is_condition(obj) {
                    return runtime("meta::Condition");
                }
                let wanted = format!("{parent}{}", camel_segment(field));
                let (name, moved) = self
                    .allocators
                    .entry(module.clone())
                    .or_default()
                    .allocate(&wanted);
                if moved {
                    let message = format!(
                        "nested type {wanted} is taken in {}; using {name}",
                        module.join("::")
                    );
                    self.warn(WarningKind::TypeName, message);
                }
                let doc = self.doc(schema);
                let id = self.push(module.clone(), name, doc, Body::Pending);
                let body = self.struct_body(id, obj, schema, None, merge_only, None);
                if let Some(e) = self.plan.entries.get_mut(id) {
                    e.body = if merge_only {
                        Body::MergeOnly(body)
                    } else {
                        Body::Struct(body)
                    };
                }
                Ty::Named(id)
            }
        }
    }

    fn enum_for(
        &mut self,
        module: &ModPath,
        values: Vec<String>,
        parent: &str,
        field: &str,
        schema: &Schema,
    ) -> usize {
        let key = (module.clone(), values);
        if let Some(id) = self.enums.get(&key) {
            return *id;
        }
        let wanted = format!("{parent}{}", camel_segment(field));
        let (name, moved) = self
            .allocators
            .entry(module.clone())
            .or_default()
            .allocate(&wanted);
        if moved {
            let message = format!(
                "enum {wanted} is taken in {}; using {name}",
                module.join("::")
            );
            self.warn(WarningKind::TypeName, message);
        }
        let doc = self.doc(schema);
        let body = Body::Enum(variants(&key.1));
        let id = self.push(module.clone(), name, doc, body);
        self.enums.insert(key, id);
        id
    }

    fn field_merge(&self, schema: &Schema, ty: &Ty) -> FieldMerge {
        let ext = &schema.ext;
        let mut m = FieldMerge {
            list_type: ext.list_type,
            list_map_keys: ext.list_map_keys.clone(),
            map_type: ext.map_type,
            patch_strategy: ext.patch_strategy.clone(),
            patch_merge_key: ext.patch_merge_key.clone(),
            ..FieldMerge::default()
        };
        let mut node = schema;
        let mut ty = ty;
        loop {
            m.embedded_resource |= node.ext.embedded_resource;
            m.preserve_unknown_fields |= node.ext.preserve_unknown_fields;
            m.int_or_string |= node.ext.int_or_string;
            match (&node.ty, ty) {
                (SchemaType::Array(items), Ty::Vec(inner)) => {
                    m.wrap.push(true);
                    node = items;
                    ty = inner;
                }
                (SchemaType::Map(values), Ty::Map(inner)) => {
                    m.wrap.push(false);
                    node = values;
                    ty = inner;
                }
                (SchemaType::Object(o), Ty::Map(inner)) if o.properties.is_empty() => {
                    let Some(values) = &o.additional_properties else {
                        break;
                    };
                    m.wrap.push(false);
                    node = values;
                    ty = inner;
                }
                _ => break,
            }
        }
        m.target = match ty {
            Ty::Named(id) => Some(MergeTarget::Entry(*id)),
            Ty::Runtime {
                merge: Some(id), ..
            } => Some(MergeTarget::Entry(*id)),
            _ => None,
        };
        if m.target.is_none() {
            m.wrap.clear();
        }
        m
    }

    fn kind_plan(&mut self, gvk: &Gvk, resource: &Resource, obj: &ObjectType) -> KindPlan {
        let crd = resource.crd.as_ref();
        let mut scale = None;
        if let Some(sub) = resource.subresources.get("scale") {
            scale = match &sub.scale {
                Some(p) => Some((
                    p.spec_replicas.clone(),
                    p.status_replicas.clone(),
                    p.label_selector.clone(),
                )),
                None => self.builtin_scale(gvk, obj),
            };
        }
        let deprecation_warning = crd.and_then(|c| {
            if !c.deprecated {
                return None;
            }
            Some(
                c.deprecation_warning
                    .clone()
                    .unwrap_or_else(|| self.crd_default_warning(gvk)),
            )
        });
        KindPlan {
            gvk: gvk.clone(),
            plural: resource.plural.clone(),
            scope: resource.scope,
            verbs: resource.verbs.clone(),
            status: resource.subresources.contains_key("status"),
            scale,
            singular: crd.and_then(|c| c.singular.clone()),
            short_names: crd.map(|c| c.short_names.clone()).unwrap_or_default(),
            categories: crd.map(|c| c.categories.clone()).unwrap_or_default(),
            strategy: match crd {
                None => self.facts.strategies.of(&gvk.group, &gvk.kind).cloned(),
                Some(_) => None,
            },
            printer_columns: match crd {
                Some(crd) => crd.printer_columns.clone(),
                None => self
                    .facts
                    .printers
                    .columns(&gvk.group, &gvk.kind)
                    .map(<[_]>::to_vec)
                    .unwrap_or_default(),
            },
            selectable_fields: crd.map(|c| c.selectable_fields.clone()).unwrap_or_default(),
            // A built-in's status strategy keeps the old spec and takes the new metadata but
            // what it resets; with no strategies file, a custom resource's rule.
            status_keeps_metadata: match (crd, resource.subresources.contains_key("status")) {
                (None, true) if !self.facts.strategies.kinds.is_empty() => match self
                    .facts
                    .strategies
                    .of(&gvk.group, &gvk.kind)
                    .and_then(|s| s.status_keeps_metadata.clone())
                {
                    Some(StatusKeeps::All) => None,
                    Some(StatusKeeps::Fields(fields)) => Some(fields),
                    None => Some(Vec::new()),
                },
                _ => None,
            },
            field_labels: match crd {
                None if !self.facts.field_selectors.is_empty() => Some(
                    self.facts
                        .field_selectors
                        .of(&gvk.group, &gvk.version, &gvk.kind)
                        .cloned(),
                ),
                _ => None,
            },
            lifecycle: self.facts.lifecycles.resolve(gvk),
            deprecation_warning,
            family: match crd {
                None => {
                    self.facts
                        .conversions
                        .family_of(&gvk.group, &gvk.version, &resource.plural)
                }
                Some(_) => None,
            },
            no_list: false,
        }
    }

    /// Built-in kinds publish no scale paths; upstream's scale handlers read `.spec.replicas`
    /// and `.status.replicas` and derive the selector string from `.spec.selector`.
    fn builtin_scale(
        &mut self,
        gvk: &Gvk,
        obj: &ObjectType,
    ) -> Option<(String, String, Option<String>)> {
        let props_of = |name: &str| -> Option<&ObjectType> {
            let schema = &obj.properties.iter().find(|p| p.name == name)?.schema;
            match &schema.ty {
                SchemaType::Ref(r) => self.model.types.get(r)?.as_object(),
                SchemaType::Object(o) => Some(o),
                _ => None,
            }
        };
        let has = |o: Option<&ObjectType>, f: &str| {
            o.is_some_and(|o| o.properties.iter().any(|p| p.name == f))
        };
        let spec = props_of("spec");
        let status = props_of("status");
        if has(spec, "replicas") && has(status, "replicas") {
            let selector = has(spec, "selector").then(|| ".spec.selector".to_owned());
            return Some((".spec.replicas".into(), ".status.replicas".into(), selector));
        }
        self.warn(
            WarningKind::Kind,
            format!("{gvk} serves scale but has no spec.replicas/status.replicas; scale omitted"),
        );
        None
    }

    /// The warning kube-apiserver sends for a deprecated CRD version without its own text:
    /// `<group>/<version> <Kind> is deprecated`, plus `; use <group>/<version> <Kind>` naming the
    /// highest newer served version that is not deprecated.
    fn crd_default_warning(&self, gvk: &Gvk) -> String {
        let mut msg = format!("{}/{} {} is deprecated", gvk.group, gvk.version, gvk.kind);
        let newer = self
            .model
            .kinds
            .values()
            .filter(|k| k.gvk.group == gvk.group && k.gvk.kind == gvk.kind)
            .filter(|k| {
                k.resource
                    .as_ref()
                    .and_then(|r| r.crd.as_ref())
                    .is_some_and(|c| c.served && !c.deprecated)
            })
            .map(|k| k.gvk.version.as_str())
            .filter(|v| version_key(v) > version_key(&gvk.version))
            .max_by_key(|v| version_key(v));
        if let Some(v) = newer {
            msg.push_str(&format!("; use {}/{v} {}", gvk.group, gvk.kind));
        }
        msg
    }

    /// Boxes fields that hold a struct by value on a cycle of by-value fields (Tarjan's SCCs).
    fn box_recursion(&mut self) {
        let n = self.plan.entries.len();
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (id, e) in self.plan.entries.iter().enumerate() {
            if let Body::Struct(s) = &e.body
                && let Some(list) = edges.get_mut(id)
            {
                for f in &s.fields {
                    if let Ty::Named(t) = f.ty {
                        list.push(t);
                    }
                }
            }
        }
        let scc = tarjan(&edges);
        for (id, e) in self.plan.entries.iter_mut().enumerate() {
            if let Body::Struct(s) = &mut e.body {
                for f in &mut s.fields {
                    if let Ty::Named(t) = f.ty
                        && scc.get(t) == scc.get(id)
                    {
                        f.boxed = true;
                    }
                }
            }
        }
    }

    /// `#[derive(kapi::Wire)]` reads into a struct's `Default`, so every generated struct derives
    /// it (open enums default to the empty spelling). A required field whose type has no
    /// `Default`, which only a few runtime types lack and no known spec requires directly, is
    /// generated as an `Option` instead.
    fn compute_defaults(&mut self) {
        let mut relax = Vec::new();
        for (id, e) in self.plan.entries.iter().enumerate() {
            if let Body::Struct(s) = &e.body {
                for (i, f) in s.fields.iter().enumerate() {
                    if f.required && f.special.is_none() && !self.has_default(&f.ty) {
                        relax.push((id, i));
                    }
                }
            }
        }
        for (id, i) in relax {
            if let Some(Entry {
                body: Body::Struct(s),
                ..
            }) = self.plan.entries.get_mut(id)
                && let Some(f) = s.fields.get_mut(i)
            {
                f.required = false;
            }
        }
    }

    fn has_default(&self, ty: &Ty) -> bool {
        match ty {
            Ty::Runtime { path, .. } => !RUNTIME_NO_DEFAULT.contains(path),
            Ty::Named(id) => match self.plan.entries.get(*id).map(|e| &e.body) {
                Some(Body::Alias(t)) => self.has_default(t),
                _ => true,
            },
            _ => true,
        }
    }

    /// A struct carries merge metadata when it or a field is annotated, it has defaults or
    /// checks, or a field leads to a struct that carries some; kinds always do, so
    /// `Resource::merge_info` has a root.
    fn compute_merge(&mut self) {
        loop {
            let mut changed = Vec::new();
            for (id, e) in self.plan.entries.iter().enumerate() {
                let s = match &e.body {
                    Body::Struct(s) | Body::MergeOnly(s) => s,
                    _ => continue,
                };
                if s.merge {
                    continue;
                }
                let carries = s.kind.is_some()
                    || !s.defaults.is_empty()
                    || !s.checks.is_empty()
                    || s.map_type.is_some()
                    || s.preserve_unknown_fields
                    || s.embedded_resource
                    || s.fields.iter().any(|f| self.field_carries(&f.merge));
                if carries {
                    changed.push(id);
                }
            }
            if changed.is_empty() {
                break;
            }
            for id in changed {
                if let Some(Body::Struct(s) | Body::MergeOnly(s)) =
                    self.plan.entries.get_mut(id).map(|e| &mut e.body)
                {
                    s.merge = true;
                }
            }
        }
    }

    fn field_carries(&self, m: &FieldMerge) -> bool {
        m.annotated()
            || match m.target {
                Some(MergeTarget::RuntimeObjectMeta) => true,
                Some(MergeTarget::Entry(t)) => self.plan.struct_body(t).is_some_and(|s| s.merge),
                None => false,
            }
    }
}

impl Plan {
    /// Whether a field appears in its struct's merge static.
    pub(crate) fn field_in_merge(&self, m: &FieldMerge) -> bool {
        m.annotated() || self.merge_target_live(m.target)
    }

    /// Whether a merge target has a static to link to.
    pub(crate) fn merge_target_live(&self, t: Option<MergeTarget>) -> bool {
        match t {
            Some(MergeTarget::RuntimeObjectMeta) => true,
            Some(MergeTarget::Entry(id)) => self.struct_body(id).is_some_and(|s| s.merge),
            None => false,
        }
    }
}

/// A schema's `default`, unless it is a Go zero value (`""`, `false`, `0`, `[]`, `{}`):
/// OpenAPI v3 publishes those for built-ins where v2 has none, and they tell a reader nothing.
fn meaningful_default(schema: &Schema) -> Option<&serde_json::Value> {
    use serde_json::Value;
    schema.default.as_ref().filter(|d| match d {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    })
}

fn runtime(path: &'static str) -> Ty {
    Ty::Runtime { path, merge: None }
}

/// The string values of an `enum` (non-strings, e.g. a `null` some CRDs list, are skipped).
/// Whether an object is `metav1.Condition` as controller-gen writes it into CRDs: its five
/// required fields and the optional `observedGeneration`, nothing else, `status` one of `True`,
/// `False` and `Unknown`. Such objects become `kapi::meta::Condition`, so generated kinds get the
/// condition helpers (`kapi::meta::Conditions`) derived kinds have.
fn is_condition(obj: &ObjectType) -> bool {
    const REQUIRED: [&str; 5] = ["lastTransitionTime", "message", "reason", "status", "type"];
    let names: BTreeSet<&str> = obj.properties.iter().map(|p| p.name.as_str()).collect();
    let mut expected: BTreeSet<&str> = REQUIRED.into_iter().collect();
    if names.contains("observedGeneration") {
        expected.insert("observedGeneration");
    }
    let status_ok = obj.properties.iter().any(|p| {
        p.name == "status"
            && matches!(p.schema.ty, SchemaType::String { .. })
            && string_values(&p.schema)
                .iter()
                .all(|v| ["True", "False", "Unknown"].contains(&v.as_str()))
    });
    names == expected
        && status_ok
        && obj.additional_properties.is_none()
        && REQUIRED.iter().all(|r| obj.required.contains(*r))
}

fn string_values(schema: &Schema) -> Vec<String> {
    let mut seen = BTreeSet::new();
    schema
        .enum_values
        .iter()
        .filter_map(Value::as_str)
        .filter(|v| seen.insert(*v))
        .map(str::to_owned)
        .collect()
}

fn variants(values: &[String]) -> Vec<(String, String)> {
    let mut idents = Allocator::default();
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (idents.allocate(&variant_ident(v, i + 1)).0, v.clone()))
        .collect()
}

/// Kube-aware version order: GA above beta above alpha, then by major and minor number;
/// versions of another shape sort below all of them.
pub(crate) fn version_key(v: &str) -> (u8, u64, u64, String) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0, v.to_owned());
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0, v.to_owned());
    };
    let tail = rest.get(digits.len()..).unwrap_or_default();
    if tail.is_empty() {
        return (3, major, 0, String::new());
    }
    for (stage, word) in [(2, "beta"), (1, "alpha")] {
        if let Some(n) = tail.strip_prefix(word)
            && let Ok(minor) = n.parse::<u64>()
        {
            return (stage, major, minor, String::new());
        }
    }
    (0, 0, 0, v.to_owned())
}

/// Strongly connected component index of every node.
fn tarjan(edges: &[Vec<usize>]) -> Vec<usize> {
    struct State<'e> {
        edges: &'e [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        comp: Vec<usize>,
        comps: usize,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        let i = s.next;
        s.next += 1;
        s.index[v] = Some(i);
        s.low[v] = i;
        s.stack.push(v);
        s.on_stack[v] = true;
        let edges = s.edges;
        for &w in edges.get(v).map(Vec::as_slice).unwrap_or_default() {
            match s.index.get(w).copied().flatten() {
                None if w < s.index.len() => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(wi) if s.on_stack[w] => s.low[v] = s.low[v].min(wi),
                _ => {}
            }
        }
        if s.low[v] == i {
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                s.comp[w] = s.comps;
                if w == v {
                    break;
                }
            }
            s.comps += 1;
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        comp: vec![0; n],
        comps: 0,
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    // A node alone in its component is only recursive through a self edge.
    let mut out = s.comp;
    let mut size = vec![0usize; s.comps];
    for &c in &out {
        if let Some(x) = size.get_mut(c) {
            *x += 1;
        }
    }
    for (v, comp) in out.iter_mut().enumerate() {
        let self_loop = edges.get(v).is_some_and(|e| e.contains(&v));
        if size.get(*comp).copied() == Some(1) && !self_loop {
            // Give singletons unique ids past every component so no edge matches them.
            *comp = s.comps + v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_aware_version_order() {
        let mut vs = vec![
            "v1", "v1beta1", "v2", "v1alpha1", "v2beta2", "foo", "v10", "v1beta2",
        ];
        vs.sort_by_key(|v| version_key(v));
        assert_eq!(
            vs,
            [
                "foo", "v1alpha1", "v1beta1", "v1beta2", "v2beta2", "v1", "v2", "v10"
            ]
        );
    }

    #[test]
    fn tarjan_finds_cycles_and_self_loops() {
        // 0 → 1 → 2 → 0 is a cycle, 3 → 3 a self loop, 4 → 0 enters the cycle only.
        let edges = vec![vec![1], vec![2], vec![0], vec![3], vec![0]];
        let c = tarjan(&edges);
        assert_eq!(c[0], c[1]);
        assert_eq!(c[1], c[2]);
        assert_ne!(c[4], c[0]);
        assert_ne!(c[3], c[0]);
        let c3 = c[3];
        assert!(edges[3].iter().all(|&w| c[w] == c3));
    }
}
