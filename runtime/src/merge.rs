//! Static merge metadata: how strategic merge patch and server-side apply walk a kind's JSON.
//!
//! Kubernetes schemas annotate fields with `x-kubernetes-list-type`, `-list-map-keys`,
//! `-map-type`, `-patch-strategy`, `-patch-merge-key`, `-embedded-resource`,
//! `-preserve-unknown-fields` and `-int-or-string`. The generator turns them into one `static`
//! [`TypeInfo`] per struct type that carries any of them (or leads to one that does), linking to
//! the statics of nested types, and points each kind's [`Resource::merge_info`](crate::Resource::merge_info) at its root.
//! Fields that carry nothing are left out, so a missing field means "plain value, no annotations"
//! (upstream's defaults: lists atomic, maps and structs granular).
//!
//! The same statics carry what the server does to a type's fields on every write, its
//! defaults ([`TypeInfo::defaults`]) and checks ([`TypeInfo::checks`]): upstream keeps those
//! per type too, and the tree that reaches every annotated type reaches every defaulted or
//! checked one.
//!
//! Everything here is `const`-constructible, so the data costs no start-up work:
//!
//! ```
//! use kapi::merge::{ListType, TypeInfo, field};
//!
//! static CONTAINER: TypeInfo = TypeInfo::new(&[field("ports").list_map(&["containerPort"])]);
//! static POD_SPEC: TypeInfo = TypeInfo::new(&[
//!     field("containers").list_map(&["name"]).strategy("merge").merge_key("name").items(&CONTAINER),
//! ]);
//!
//! let containers = POD_SPEC.field("containers").unwrap();
//! assert_eq!(containers.list_type, Some(ListType::Map));
//! assert_eq!(containers.list_map_keys, ["name"]);
//! assert!(containers.patch_strategy_has("merge"));
//! assert!(containers.ty.unwrap().field("ports").is_some());
//! ```

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListType {
    /// The list is replaced as a whole (also upstream's default for unannotated lists).
    Atomic,
    /// Scalar items merged as a set.
    Set,
    /// Object items merged by the [`FieldInfo::list_map_keys`].
    Map,
}

/// `x-kubernetes-map-type` (also used on structs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapType {
    /// The map or struct is replaced as a whole.
    Atomic,
    /// Keys are merged one by one (upstream's default).
    Granular,
}

/// A container a field's value is wrapped in on the way to its struct type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wrap {
    /// A JSON array: apply to each element.
    List,
    /// A JSON object used as a map: apply to each value.
    Map,
}

/// The merge metadata of one struct type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// `x-kubernetes-map-type` on the struct itself (`Atomic`: replace the struct as a whole).
    pub map_type: Option<MapType>,
    /// `x-kubernetes-preserve-unknown-fields` on the struct: fields beyond the known ones are kept.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource` on the struct: it is a whole object with
    /// `apiVersion`, `kind` and `metadata`.
    pub embedded_resource: bool,
    /// Annotated fields, and fields leading to annotated types, in schema order.
    pub fields: &'static [FieldInfo],
    /// The fields of this type the server fills in when a write leaves them out, by paths
    /// from the type (see [`crate::defaulting::apply_types`]).
    pub defaults: &'static [crate::defaulting::Default],
    /// What writes must satisfy in this type's fields, by paths from the type (see
    /// [`crate::validation::check_types`]).
    pub checks: &'static [crate::validation::Check],
}

/// The merge metadata of one field, by its wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldInfo {
    /// The JSON field name.
    pub name: &'static str,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-list-map-keys` (empty unless the list type is `map`).
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type` of the field's map or struct.
    pub map_type: Option<MapType>,
    /// `x-kubernetes-patch-strategy`, verbatim (`merge`, `retainKeys`, `merge,retainKeys`, `replace`).
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-embedded-resource` on the field or its elements.
    pub embedded_resource: bool,
    /// `x-kubernetes-preserve-unknown-fields` on the field or its elements.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-int-or-string` on the field or its elements.
    pub int_or_string: bool,
    /// The containers between the field and [`FieldInfo::ty`], outermost first.
    pub wrap: &'static [Wrap],
    /// The metadata of the struct type the field holds (after [`FieldInfo::wrap`]), if it has any.
    pub ty: Option<&'static TypeInfo>,
}

/// A field with no annotations; chain the builder methods to add them.
pub const fn field(name: &'static str) -> FieldInfo {
    FieldInfo {
        name,
        list_type: None,
        list_map_keys: &[],
        map_type: None,
        patch_strategy: None,
        patch_merge_key: None,
        embedded_resource: false,
        preserve_unknown_fields: false,
        int_or_string: false,
        wrap: &[],
        ty: None,
    }
}

impl TypeInfo {
    /// A granular struct with the given fields.
    pub const fn new(fields: &'static [FieldInfo]) -> Self {
        Self {
            map_type: None,
            preserve_unknown_fields: false,
            embedded_resource: false,
            fields,
            defaults: &[],
            checks: &[],
        }
    }

    /// The type's own defaults.
    pub const fn defaults(mut self, defaults: &'static [crate::defaulting::Default]) -> Self {
        self.defaults = defaults;
        self
    }

    /// The type's own checks.
    pub const fn checks(mut self, checks: &'static [crate::validation::Check]) -> Self {
        self.checks = checks;
        self
    }

    /// Marks the struct `x-kubernetes-map-type: atomic`.
    pub const fn atomic(mut self) -> Self {
        self.map_type = Some(MapType::Atomic);
        self
    }

    /// Marks the struct `x-kubernetes-map-type: granular`.
    pub const fn granular(mut self) -> Self {
        self.map_type = Some(MapType::Granular);
        self
    }

    /// Marks the struct `x-kubernetes-preserve-unknown-fields`.
    pub const fn preserve_unknown(mut self) -> Self {
        self.preserve_unknown_fields = true;
        self
    }

    /// Marks the struct `x-kubernetes-embedded-resource`.
    pub const fn embedded(mut self) -> Self {
        self.embedded_resource = true;
        self
    }

    /// The metadata of the field with this wire name, if it carries any.
    pub fn field(&self, name: &str) -> Option<&'static FieldInfo> {
        self.fields.iter().find(|f| f.name == name)
    }
}

impl FieldInfo {
    /// `x-kubernetes-list-type: atomic`.
    pub const fn atomic_list(mut self) -> Self {
        self.list_type = Some(ListType::Atomic);
        self
    }

    /// `x-kubernetes-list-type: set`.
    pub const fn set(mut self) -> Self {
        self.list_type = Some(ListType::Set);
        self
    }

    /// `x-kubernetes-list-type: map` with these `x-kubernetes-list-map-keys`.
    pub const fn list_map(mut self, keys: &'static [&'static str]) -> Self {
        self.list_type = Some(ListType::Map);
        self.list_map_keys = keys;
        self
    }

    /// `x-kubernetes-map-type: atomic`.
    pub const fn atomic_map(mut self) -> Self {
        self.map_type = Some(MapType::Atomic);
        self
    }

    /// `x-kubernetes-map-type: granular`.
    pub const fn granular_map(mut self) -> Self {
        self.map_type = Some(MapType::Granular);
        self
    }

    /// `x-kubernetes-patch-strategy`.
    pub const fn strategy(mut self, strategy: &'static str) -> Self {
        self.patch_strategy = Some(strategy);
        self
    }

    /// `x-kubernetes-patch-merge-key`.
    pub const fn merge_key(mut self, key: &'static str) -> Self {
        self.patch_merge_key = Some(key);
        self
    }

    /// `x-kubernetes-embedded-resource`.
    pub const fn embedded(mut self) -> Self {
        self.embedded_resource = true;
        self
    }

    /// `x-kubernetes-preserve-unknown-fields`.
    pub const fn preserve_unknown(mut self) -> Self {
        self.preserve_unknown_fields = true;
        self
    }

    /// `x-kubernetes-int-or-string`.
    pub const fn int_or_string(mut self) -> Self {
        self.int_or_string = true;
        self
    }

    /// The field holds a struct of type `ty` directly.
    pub const fn of(mut self, ty: &'static TypeInfo) -> Self {
        self.ty = Some(ty);
        self
    }

    /// The field is a list of `ty`.
    pub const fn items(mut self, ty: &'static TypeInfo) -> Self {
        self.wrap = &[Wrap::List];
        self.ty = Some(ty);
        self
    }

    /// The field is a map with values of `ty`.
    pub const fn values(mut self, ty: &'static TypeInfo) -> Self {
        self.wrap = &[Wrap::Map];
        self.ty = Some(ty);
        self
    }

    /// The field reaches `ty` through several containers, outermost first.
    pub const fn via(mut self, wrap: &'static [Wrap], ty: &'static TypeInfo) -> Self {
        self.wrap = wrap;
        self.ty = Some(ty);
        self
    }

    /// Whether the patch strategy lists `part` (`merge`, `retainKeys`, `replace`).
    pub fn patch_strategy_has(&self, part: &str) -> bool {
        self.patch_strategy
            .is_some_and(|s| s.split(',').any(|p| p.trim() == part))
    }
}

/// A position in a kind's merge metadata while walking its JSON: the one cursor strategic
/// merge patch and server-side apply both move through objects, maps and lists.
///
/// A field's annotations ([`Cursor::field`]) describe its value as a whole, so they apply
/// only until the cursor moves into one of the field's containers ([`FieldInfo::wrap`]); the
/// struct type ([`Cursor::ty`]) applies once every container is unwrapped. At the root,
/// `metadata` without merge metadata of its own is upstream's [`OBJECT_META`].
///
/// ```
/// use kapi::merge::{Cursor, TypeInfo, Wrap, field};
///
/// static PORT: TypeInfo = TypeInfo::new(&[]);
/// static SPEC: TypeInfo = TypeInfo::new(&[field("ports").list_map(&["port"]).items(&PORT)]);
/// static ROOT: TypeInfo = TypeInfo::new(&[field("spec").of(&SPEC)]);
///
/// let ports = Cursor::root(Some(&ROOT)).child("spec").child("ports");
/// assert_eq!(ports.field().map(|f| f.list_map_keys), Some(&["port"][..]));
/// assert_eq!(ports.container(), Some(Wrap::List));
/// let item = ports.item();
/// assert!(item.field().is_none());
/// assert!(std::ptr::eq(item.ty().unwrap(), &PORT));
/// assert!(Cursor::root(None).child("metadata").ty().is_some());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Cursor {
    field: Option<&'static FieldInfo>,
    wrap: &'static [Wrap],
    ty: Option<&'static TypeInfo>,
    root: bool,
}

impl Cursor {
    /// Nowhere known: objects are plain structs or maps, lists atomic.
    pub const UNKNOWN: Cursor = Cursor {
        field: None,
        wrap: &[],
        ty: None,
        root: false,
    };

    /// The root of a kind with this merge metadata (or none).
    pub const fn root(ty: Option<&'static TypeInfo>) -> Cursor {
        Cursor {
            field: None,
            wrap: &[],
            ty,
            root: true,
        }
    }

    /// A value of struct type `ty`, outside any field.
    pub const fn of(ty: &'static TypeInfo) -> Cursor {
        Cursor {
            field: None,
            wrap: &[],
            ty: Some(ty),
            root: false,
        }
    }

    /// The field whose whole value is here, if any.
    pub fn field(self) -> Option<&'static FieldInfo> {
        self.field
    }

    /// The container still to unwrap here, if any.
    pub fn container(self) -> Option<Wrap> {
        self.wrap.first().copied()
    }

    /// The struct type here, once every container is unwrapped.
    pub fn ty(self) -> Option<&'static TypeInfo> {
        if self.wrap.is_empty() { self.ty } else { None }
    }

    /// Whether this is a kind's root.
    pub fn is_root(self) -> bool {
        self.root
    }

    /// The position of `key` in an object here: a map value, or a struct field.
    pub fn child(self, key: &str) -> Cursor {
        match self.wrap.split_first() {
            Some((Wrap::Map, rest)) => Cursor {
                field: None,
                wrap: rest,
                ty: self.ty,
                root: false,
            },
            Some((Wrap::List, _)) => Cursor::UNKNOWN,
            None => {
                let field = self.ty.and_then(|t| t.field(key));
                match field {
                    // Kinds whose metadata links no type of its own merge it as upstream.
                    _ if self.root && key == "metadata" && field.is_none_or(|f| f.ty.is_none()) => {
                        Cursor {
                            field,
                            wrap: &[],
                            ty: Some(&OBJECT_META),
                            root: false,
                        }
                    }
                    Some(f) => Cursor {
                        field: Some(f),
                        wrap: f.wrap,
                        ty: f.ty,
                        root: false,
                    },
                    None => Cursor::UNKNOWN,
                }
            }
        }
    }

    /// The position of an item of a list here.
    pub fn item(self) -> Cursor {
        match self.wrap.split_first() {
            Some((Wrap::List, rest)) => Cursor {
                field: None,
                wrap: rest,
                ty: self.ty,
                root: false,
            },
            _ => Cursor::UNKNOWN,
        }
    }
}

/// A kind's type tree cut down to the types where an engine has work (defaults to fill, checks
/// to run), each node holding what the engine compiled from its type once: walking it visits
/// only the fields that lead to such types, in the order of [`TypeInfo::fields`]. Built by
/// [`Pruned::build`], kept per tree in a [`PrunedCache`].
#[derive(Debug)]
pub(crate) struct Pruned<T> {
    /// The nodes; the root is the first.
    pub(crate) nodes: Vec<PrunedNode<T>>,
}

/// One type of a [`Pruned`] tree.
#[derive(Debug)]
pub(crate) struct PrunedNode<T> {
    /// What the engine compiled from the type.
    pub(crate) data: T,
    /// The fields leading to types with work, in schema order.
    pub(crate) children: Vec<PrunedChild>,
}

/// A field of a [`PrunedNode`] and the node of the type it holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PrunedChild {
    /// The field.
    pub(crate) field: &'static FieldInfo,
    /// The index of the node of [`FieldInfo::ty`].
    pub(crate) node: usize,
}

impl<T> Pruned<T> {
    /// The tree of `root`, keeping the types for which `has_work` holds and the types that
    /// lead to them; `compile` makes each kept type's data.
    pub(crate) fn build(
        root: &TypeInfo,
        has_work: fn(&TypeInfo) -> bool,
        compile: fn(&TypeInfo) -> T,
    ) -> Self {
        // Every type reachable from the root once (trees may be recursive), with all its edges.
        let mut types: Vec<&TypeInfo> = vec![root];
        let mut edges: Vec<Vec<PrunedChild>> = Vec::new();
        let mut seen: std::collections::HashMap<*const TypeInfo, usize> =
            std::collections::HashMap::from([(std::ptr::from_ref(root), 0)]);
        let mut next = 0;
        while let Some(ty) = types.get(next).copied() {
            let mut out = Vec::new();
            for field in ty.fields {
                let Some(inner) = field.ty else { continue };
                let node = *seen.entry(std::ptr::from_ref(inner)).or_insert_with(|| {
                    types.push(inner);
                    types.len() - 1
                });
                out.push(PrunedChild { field, node });
            }
            edges.push(out);
            next += 1;
        }
        // A type is kept when it has work or leads to a kept type.
        let mut keep: Vec<bool> = types.iter().map(|ty| has_work(ty)).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for (i, out) in edges.iter().enumerate() {
                if !keep[i] && out.iter().any(|c| keep[c.node]) {
                    keep[i] = true;
                    changed = true;
                }
            }
        }
        let nodes = types
            .iter()
            .zip(edges)
            .map(|(ty, mut children)| {
                children.retain(|c| keep[c.node]);
                PrunedNode {
                    data: compile(ty),
                    children,
                }
            })
            .collect();
        Self { nodes }
    }
}

/// What identifies a type tree: its root's slices, which are `'static`, so two roots with the
/// same key have the same content whether or not the roots themselves are statics.
type TreeKey = [usize; 6];

fn tree_key(root: &TypeInfo) -> TreeKey {
    [
        root.fields.as_ptr() as usize,
        root.fields.len(),
        root.defaults.as_ptr() as usize,
        root.defaults.len(),
        root.checks.as_ptr() as usize,
        root.checks.len(),
    ]
}

/// The most trees a [`PrunedCache`] keeps; the trees are static data, so a program has a fixed
/// number, and beyond this one (which no program reaches) each walk builds its own.
const MOST_TREES: usize = 4096;

/// [`Pruned`] trees by the type tree they were built from, each built on its first use and
/// kept for the life of the process (type trees are static data).
pub(crate) struct PrunedCache<T: 'static> {
    trees: std::sync::LazyLock<
        std::sync::RwLock<std::collections::HashMap<TreeKey, &'static Pruned<T>>>,
    >,
}

impl<T: Send + Sync + 'static> PrunedCache<T> {
    /// An empty cache, for a `static`.
    pub(crate) const fn new() -> Self {
        Self {
            trees: std::sync::LazyLock::new(Default::default),
        }
    }

    /// Calls `f` with the tree of `root`, built with `build` on first use.
    pub(crate) fn with<R>(
        &self,
        root: &TypeInfo,
        build: impl FnOnce() -> Pruned<T>,
        f: impl FnOnce(&Pruned<T>) -> R,
    ) -> R {
        use std::sync::PoisonError;
        let key = tree_key(root);
        let found = self
            .trees
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .copied();
        if let Some(tree) = found {
            return f(tree);
        }
        let mut trees = self.trees.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(tree) = trees.get(&key) {
            return f(tree);
        }
        if trees.len() >= MOST_TREES {
            drop(trees);
            return f(&build());
        }
        let tree: &'static Pruned<T> = Box::leak(Box::new(build()));
        trees.insert(key, tree);
        drop(trees);
        f(tree)
    }
}

/// `ObjectMeta`'s merge metadata as upstream declares it, for kinds whose spec carries no
/// ObjectMeta definition (CRDs).
pub static OBJECT_META: TypeInfo = TypeInfo::new(&[
    field("finalizers").set().strategy("merge"),
    field("managedFields").atomic_list(),
    field("ownerReferences")
        .list_map(&["uid"])
        .strategy("merge")
        .merge_key("uid")
        .items(&OWNER_REFERENCE),
]);

/// `OwnerReference` is replaced as a whole (`x-kubernetes-map-type: atomic`).
pub static OWNER_REFERENCE: TypeInfo = TypeInfo::new(&[]).atomic();

#[cfg(test)]
mod tests {
    use super::*;

    static LEAF: TypeInfo = TypeInfo::new(&[field("x").int_or_string()]).atomic();
    static ROOT: TypeInfo = TypeInfo::new(&[
        field("a").items(&LEAF),
        field("b").values(&LEAF),
        field("c").via(&[Wrap::List, Wrap::Map], &LEAF),
        field("self").of(&ROOT),
        field("s").strategy("merge, retainKeys").granular_map(),
    ]);

    #[test]
    fn builders_set_what_they_name() {
        let a = ROOT.field("a").expect("a");
        assert_eq!((a.wrap, a.ty), (&[Wrap::List][..], Some(&LEAF)));
        assert_eq!(ROOT.field("b").expect("b").wrap, [Wrap::Map]);
        assert_eq!(ROOT.field("c").expect("c").wrap, [Wrap::List, Wrap::Map]);
        assert_eq!(LEAF.map_type, Some(MapType::Atomic));
        assert!(LEAF.field("x").expect("x").int_or_string);
        assert!(ROOT.field("missing").is_none());
    }

    #[test]
    fn recursive_types_link_to_themselves() {
        let mut t = &ROOT;
        for _ in 0..3 {
            t = t.field("self").and_then(|f| f.ty).expect("self link");
        }
        assert!(std::ptr::eq(t, &ROOT));
    }

    #[test]
    fn patch_strategy_parts() {
        let s = ROOT.field("s").expect("s");
        assert!(s.patch_strategy_has("merge"));
        assert!(s.patch_strategy_has("retainKeys"));
        assert!(!s.patch_strategy_has("replace"));
        assert!(!field("n").patch_strategy_has("merge"));
        assert_eq!(s.map_type, Some(MapType::Granular));
    }

    #[test]
    fn object_meta_merges_owner_references_by_uid() {
        let refs = OBJECT_META
            .field("ownerReferences")
            .expect("ownerReferences");
        assert_eq!(refs.list_map_keys, ["uid"]);
        assert_eq!(refs.patch_merge_key, Some("uid"));
        assert_eq!(refs.ty.and_then(|t| t.map_type), Some(MapType::Atomic));
        assert_eq!(
            OBJECT_META.field("finalizers").and_then(|f| f.list_type),
            Some(ListType::Set)
        );
    }

    #[test]
    fn pruned_trees_keep_only_the_fields_that_lead_to_work() {
        static WORK: TypeInfo = TypeInfo::new(&[]).atomic();
        static IDLE: TypeInfo = TypeInfo::new(&[field("loop").of(&IDLE)]);
        static MIDDLE: TypeInfo = TypeInfo::new(&[field("idle").of(&IDLE), field("w").of(&WORK)]);
        static TOP: TypeInfo = TypeInfo::new(&[
            field("idle").of(&IDLE),
            field("m").items(&MIDDLE),
            field("self").of(&TOP),
            field("w").of(&WORK),
        ]);
        // "Work" here: an atomic type. Kept: TOP (leads to WORK, also through itself),
        // MIDDLE, WORK; IDLE, which only leads to itself, is cut.
        let tree = Pruned::build(&TOP, |t| t.map_type.is_some(), |t| t.fields.len());
        let names = |node: usize| -> Vec<&str> {
            tree.nodes[node]
                .children
                .iter()
                .map(|c| c.field.name)
                .collect()
        };
        assert_eq!(names(0), ["m", "self", "w"]);
        let middle = tree.nodes[0].children[0].node;
        assert_eq!(names(middle), ["w"]);
        assert_eq!(tree.nodes[middle].data, 2);
        assert_eq!(tree.nodes[0].children[1].node, 0, "a type is one node");
        // Nothing to do anywhere: the root has no children.
        let none = Pruned::build(&TOP, |_| false, |_| ());
        assert!(none.nodes[0].children.is_empty());
    }

    #[test]
    fn pruned_caches_build_a_tree_once() {
        static CACHE: PrunedCache<usize> = PrunedCache::new();
        let mut builds = 0;
        for _ in 0..3 {
            let children = CACHE.with(
                &ROOT,
                || {
                    builds += 1;
                    Pruned::build(&ROOT, |t| t.map_type.is_some(), |_| 0)
                },
                |tree| tree.nodes[0].children.len(),
            );
            assert_eq!(children, 4);
        }
        assert_eq!(builds, 1);
    }
}
