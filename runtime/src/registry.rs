//! The registry: the catalog of kinds a server serves.
//!
//! Generated crates add their kinds with one `register(&mut Registry)` per group-version (and one
//! per spec); users add theirs with [`Registry::register`]. The server reads only this catalog: a
//! [`ResourceInfo`] per kind, its merge metadata, and a [`Codec`] that pushes JSON through the
//! kind's Rust type, so it never needs the concrete type itself.
//!
//! Versions of one resource registered one by one share the server's storage but not a shape:
//! an object written through one version is served through another by rewriting its
//! `apiVersion`. A kind whose versions differ in shape registers them together with
//! [`Registry::register_versions`]: the registry then keeps a [`VersionConverter`] for the
//! resource, and the server stores every object in the hub's version and converts on each
//! write and read.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

#[cfg(feature = "server")]
use crate::crd::ConversionWebhook;
use crate::crd::{Conversions, CustomResource, Hub, VersionConverter};
use crate::definitions::Definitions;
use crate::merge::TypeInfo;
use crate::meta::StatusCause;
use crate::schema::{JSONSchemaProps, Schema};
use crate::{GroupVersionKind, Resource, ResourceInfo};

/// Decodes JSON into a kind's shape and encodes it back: the server's schema check. Fields the
/// kind does not know are dropped, which is how unknown fields are detected. A compiled kind's
/// codec is a round trip through its Rust type; a CustomResourceDefinition created at run time
/// gets one that prunes and checks against the CRD's schema.
pub type Codec = Arc<dyn Fn(Value) -> Result<Value, serde_json::Error> + Send + Sync>;

/// Produces a kind's OpenAPI v3 schema (the whole object: `apiVersion`, `kind`, `metadata`, ...)
/// for the server's `/openapi` documents, managed fields and apply. Built on first use, not at
/// registration, then shared: writes ask for it on every request.
pub type SchemaSource = Arc<dyn Fn() -> Option<Arc<JSONSchemaProps>> + Send + Sync>;

/// Checks a decoded object beyond what its codec expresses, given the stored object on an
/// update: each cause it returns makes the write a 422 Invalid. CRDs created at run time check
/// their objects against their schema and its CEL rules (transition rules see the old object).
pub type Validator = Arc<dyn Fn(&Value, Option<&Value>) -> Vec<StatusCause> + Send + Sync>;

/// One registered kind.
#[derive(Clone)]
pub struct RegisteredKind {
    /// The description of the kind: shared, because kinds defined by CRDs at run time are built
    /// while the server runs, and every request's target holds its kind.
    pub info: Arc<ResourceInfo>,
    /// The kind's merge metadata, when it declares any.
    pub merge: Option<&'static TypeInfo>,
    /// Round trip through the kind's Rust type.
    pub codec: Codec,
    /// The kind's schema, when it was registered with one; the server publishes a permissive
    /// object schema for kinds without.
    pub schema: Option<SchemaSource>,
    /// Checks the kind's objects on every write, after the codec.
    pub validate: Option<Validator>,
    /// Defined by a stored CustomResourceDefinition while the server runs, rather than
    /// registered in code: paths in its group that serve nothing end as upstream's
    /// apiextensions handler ends them (Go's plain-text 404), not in a `Status`.
    pub from_crd: bool,
}

impl fmt::Debug for RegisteredKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredKind")
            .field("gvk", &self.info.gvk)
            .field("plural", &self.info.plural)
            .finish_non_exhaustive()
    }
}

/// A source that builds a schema once, on first use, and shares it after.
fn built_once(build: fn() -> Option<JSONSchemaProps>) -> SchemaSource {
    let built = OnceLock::new();
    Arc::new(move || built.get_or_init(|| build().map(Arc::new)).clone())
}

fn schema_of<K: Schema>() -> Option<JSONSchemaProps> {
    Some(K::schema())
}

fn round_trip<K: Resource>(value: Value) -> Result<Value, serde_json::Error> {
    let object: K = serde_json::from_value(value)?;
    serde_json::to_value(object)
}

/// The entry [`Registry::register`] adds for `K`.
pub(crate) fn entry_of<K: Resource>() -> RegisteredKind {
    RegisteredKind {
        info: Arc::new(K::info().clone()),
        merge: K::merge_info(),
        codec: Arc::new(round_trip::<K>),
        schema: None,
        validate: None,
        from_crd: false,
    }
}

/// The kinds a server serves, keyed by group, version and plural, and the conversions between
/// the versions of a resource, keyed by group and plural.
///
/// Nested maps rather than one map keyed by a tuple, so a lookup on the request path borrows the
/// URL's segments instead of allocating a key.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    kinds: BTreeMap<String, BTreeMap<String, BTreeMap<String, RegisteredKind>>>,
    conversions: BTreeMap<String, BTreeMap<String, VersionConverter>>,
    /// The conversion webhooks of resources defined by CRDs, by group and plural.
    #[cfg(feature = "server")]
    conversion_webhooks: BTreeMap<String, BTreeMap<String, Arc<ConversionWebhook>>>,
    definitions: Definitions,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds kind `K`. Registering a kind at the group, version and plural of an earlier one
    /// replaces it, so a user can override a built-in with their own type.
    pub fn register<K: Resource>(&mut self) -> &mut Self {
        self.insert::<K>(None)
    }

    /// Adds kind `K` with its [`Schema`], which the server publishes in its OpenAPI documents
    /// (so `kubectl explain` shows the fields).
    pub fn register_with_schema<K: Resource + Schema>(&mut self) -> &mut Self {
        self.insert::<K>(Some(built_once(schema_of::<K>)))
    }

    /// Adds the custom resource `K` with the schema of its CRD version.
    pub fn register_custom<K: CustomResource>(&mut self) -> &mut Self {
        self.insert::<K>(Some(built_once(K::openapi_schema)))
    }

    /// Adds every version of a kind and serves them all from one stored version, the hub,
    /// converting through it with the versions' `From` impls: what kube-apiserver does for a
    /// CRD with a conversion webhook.
    ///
    /// ```
    /// # use kapi::crd::{Conversions, Hub};
    /// # macro_rules! version {
    /// #     ($module:ident, $version:literal, $field:ident: $ty:ty) => {
    /// #         mod $module {
    /// #             use kapi::meta::ObjectMeta;
    /// #             use kapi::type_tag::{ApiVersion, Kind};
    /// #             use serde::{Deserialize, Serialize};
    /// #             #[derive(Clone, Debug, Default, Serialize, Deserialize, kapi::Resource)]
    /// #             #[resource(group = "example.com", version = $version, kind = "Widget")]
    /// #             pub struct Widget {
    /// #                 #[serde(rename = "apiVersion")]
    /// #                 pub api_version: ApiVersion<Self>,
    /// #                 pub kind: Kind<Self>,
    /// #                 #[serde(default)]
    /// #                 pub metadata: ObjectMeta,
    /// #                 #[serde(default)]
    /// #                 pub $field: $ty,
    /// #             }
    /// #         }
    /// #     };
    /// # }
    /// # version!(v1, "v1", replicas: i32);
    /// # version!(v1beta1, "v1beta1", count: i32);
    /// # version!(v1alpha1, "v1alpha1", size: String);
    /// # impl Hub for v1::Widget {}
    /// # impl From<v1beta1::Widget> for v1::Widget {
    /// #     fn from(w: v1beta1::Widget) -> Self {
    /// #         Self { metadata: w.metadata, replicas: w.count, ..Default::default() }
    /// #     }
    /// # }
    /// # impl From<v1::Widget> for v1beta1::Widget {
    /// #     fn from(w: v1::Widget) -> Self {
    /// #         Self { metadata: w.metadata, count: w.replicas, ..Default::default() }
    /// #     }
    /// # }
    /// # impl From<v1alpha1::Widget> for v1::Widget {
    /// #     fn from(w: v1alpha1::Widget) -> Self {
    /// #         let replicas = w.size.parse().unwrap_or_default();
    /// #         Self { metadata: w.metadata, replicas, ..Default::default() }
    /// #     }
    /// # }
    /// # impl From<v1::Widget> for v1alpha1::Widget {
    /// #     fn from(w: v1::Widget) -> Self {
    /// #         Self { metadata: w.metadata, size: w.replicas.to_string(), ..Default::default() }
    /// #     }
    /// # }
    /// use kapi::Registry;
    ///
    /// // `v1::Widget: Hub`, and each spoke has `From` impls to and from `v1::Widget`.
    /// let mut registry = Registry::new();
    /// registry.register_versions(
    ///     Conversions::<v1::Widget>::new()
    ///         .spoke::<v1beta1::Widget>()
    ///         .spoke::<v1alpha1::Widget>(),
    /// );
    /// assert_eq!(registry.len(), 3);
    /// let conversion = registry.conversion("example.com", "widgets").unwrap();
    /// assert_eq!(conversion.storage_version(), "v1");
    /// ```
    ///
    /// Each version is added as [`Registry::register`] adds it, unless that version is already
    /// registered: register a version with [`Registry::register_custom`] or
    /// [`Registry::register_with_schema`] (before or after) to publish its schema. Registering
    /// versions again replaces the resource's conversions.
    ///
    /// The server then stores objects of the resource in the hub's version: a write through
    /// any version is converted to the hub after the version's own decoding, and every answer
    /// (get, list items, watch events, write responses) is converted to the requested version.
    /// Objects stored before, in any of the versions, are converted from the version they carry.
    /// A failed conversion is a 500 `InternalError`. Versions of the resource registered alone,
    /// outside the family, keep being served by rewriting `apiVersion`.
    pub fn register_versions<H: Hub>(&mut self, conversions: Conversions<H>) -> &mut Self {
        let converter = conversions.into_converter();
        for kind in converter.entries() {
            let info = Arc::clone(&kind.info);
            self.version_of(&info)
                .entry(info.plural.to_string())
                .or_insert(kind);
        }
        self.conversions
            .entry(converter.group().to_owned())
            .or_default()
            .insert(converter.plural().to_owned(), converter);
        self
    }

    fn insert<K: Resource>(&mut self, schema: Option<SchemaSource>) -> &mut Self {
        let kind = RegisteredKind {
            schema,
            ..entry_of::<K>()
        };
        let info = Arc::clone(&kind.info);
        self.version_of(&info).insert(info.plural.to_string(), kind);
        self
    }

    /// Adds (or replaces) one kind as it is: how the server serves the kinds of CRDs.
    #[cfg(feature = "server")]
    pub(crate) fn insert_kind(&mut self, kind: RegisteredKind) {
        let info = Arc::clone(&kind.info);
        self.version_of(&info).insert(info.plural.to_string(), kind);
    }

    /// The kinds of `info`'s group-version, keyed by plural.
    fn version_of(&mut self, info: &ResourceInfo) -> &mut BTreeMap<String, RegisteredKind> {
        self.kinds
            .entry(info.gvk.group.to_string())
            .or_default()
            .entry(info.gvk.version.to_string())
            .or_default()
    }

    /// The kind served at `group`, `version` and `plural`, if registered.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&RegisteredKind> {
        self.kinds.get(group)?.get(version)?.get(plural)
    }

    /// The kind served at `group`, `version` and `plural`, to adjust before serving it (its
    /// merge metadata, defaults and checks, or its validator).
    pub fn get_mut(
        &mut self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<&mut RegisteredKind> {
        self.kinds.get_mut(group)?.get_mut(version)?.get_mut(plural)
    }

    /// The conversions between the versions of the resource `plural` in `group`, when they
    /// were registered with [`Registry::register_versions`].
    pub fn conversion(&self, group: &str, plural: &str) -> Option<&VersionConverter> {
        self.conversions.get(group)?.get(plural)
    }

    /// Converts the versions of the CRD resource `webhook` names through its webhook.
    #[cfg(feature = "server")]
    pub(crate) fn insert_conversion_webhook(&mut self, webhook: Arc<ConversionWebhook>) {
        self.conversion_webhooks
            .entry(webhook.group.clone())
            .or_default()
            .insert(webhook.plural.clone(), webhook);
    }

    /// The conversion webhook of the resource `plural` in `group`, when a CRD names one.
    #[cfg(feature = "server")]
    pub(crate) fn conversion_webhook(
        &self,
        group: &str,
        plural: &str,
    ) -> Option<&Arc<ConversionWebhook>> {
        self.conversion_webhooks.get(group)?.get(plural)
    }

    /// Every registered kind, sorted by group, version and plural.
    pub fn kinds(&self) -> impl Iterator<Item = &RegisteredKind> {
        self.kinds
            .values()
            .flat_map(BTreeMap::values)
            .flat_map(BTreeMap::values)
    }

    /// The number of registered kinds.
    pub fn len(&self) -> usize {
        self.kinds().count()
    }

    /// Whether no kind is registered.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Adds OpenAPI schema definitions: a JSON object from definition name to OpenAPI 3 schema,
    /// references written `#/components/schemas/<name>`, each kind's schema tagged with
    /// `x-kubernetes-group-version-kind`. Generated crates call this from `register` with their
    /// spec's schemas; the server publishes a kind's tagged definition, and every definition it
    /// refers to, when the kind was registered without a schema of its own. Parsed on first
    /// use; a document that does not parse is ignored.
    pub fn add_definitions(&mut self, json: &'static str) -> &mut Self {
        self.definitions.add(json);
        self
    }

    /// The definition called `name`, from the documents given to [`Registry::add_definitions`].
    pub fn definition(&self, name: &str) -> Option<&Value> {
        self.definitions.get(name)
    }

    /// The name and schema of the definition tagged with `gvk`, if any.
    pub fn definition_of(&self, gvk: &GroupVersionKind) -> Option<(&str, &Value)> {
        self.definitions.of_kind(gvk)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;
    use crate::meta::ObjectMeta;
    use crate::type_tag::{ApiVersion, Kind};

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, crate::Resource)]
    #[resource(
        crate = "crate",
        group = "widgets.kapi.dev",
        version = "v1",
        kind = "Widget"
    )]
    struct Widget {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        color: Option<String>,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, crate::Resource)]
    #[resource(crate = "crate", group = "", version = "v1", kind = "Gadget", cluster)]
    struct Gadget {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
    }

    #[test]
    fn finds_kinds_by_group_version_and_plural() {
        let mut registry = Registry::new();
        registry.register::<Widget>().register::<Gadget>();
        assert_eq!(registry.len(), 2);
        let widget = registry.get("widgets.kapi.dev", "v1", "widgets").unwrap();
        assert_eq!(widget.info.gvk.kind, "Widget");
        assert_eq!(
            registry.get("", "v1", "gadgets").unwrap().info.gvk.kind,
            "Gadget"
        );
        assert!(registry.get("widgets.kapi.dev", "v2", "widgets").is_none());
        assert!(registry.get("", "v1", "widgets").is_none());
        let order: Vec<_> = registry.kinds().map(|k| k.info.gvk.kind.as_ref()).collect();
        assert_eq!(order, ["Gadget", "Widget"]);
    }

    impl crate::Schema for Widget {
        fn schema() -> JSONSchemaProps {
            JSONSchemaProps::object().with_description("a widget")
        }
    }

    #[test]
    fn schema_sources_are_kept() {
        let mut registry = Registry::new();
        registry
            .register_with_schema::<Widget>()
            .register::<Gadget>();
        let widget = registry.get("widgets.kapi.dev", "v1", "widgets").unwrap();
        let schema = widget.schema.as_ref().and_then(|source| source()).unwrap();
        assert_eq!(schema.description.as_deref(), Some("a widget"));
        assert!(registry.get("", "v1", "gadgets").unwrap().schema.is_none());
    }

    #[test]
    fn registering_again_replaces() {
        let mut registry = Registry::new();
        registry.register::<Widget>().register::<Widget>();
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn codec_drops_unknown_fields_and_rejects_bad_ones() {
        let mut registry = Registry::new();
        registry.register::<Widget>();
        let codec = registry
            .get("widgets.kapi.dev", "v1", "widgets")
            .unwrap()
            .codec
            .clone();
        let out = codec(json!({
            "apiVersion": "widgets.kapi.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "a"},
            "color": "red",
            "shape": "round"
        }))
        .unwrap();
        assert_eq!(
            out,
            json!({"apiVersion": "widgets.kapi.dev/v1", "kind": "Widget",
                   "metadata": {"name": "a"}, "color": "red"})
        );
        assert!(codec(json!({"kind": "Widget", "color": 7})).is_err());
        assert!(codec(json!({"kind": "Gadget"})).is_err());
    }
}
