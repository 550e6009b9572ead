//! Derive macros for kapi; the `kapi` crate re-exports them, so users write `kapi::Resource`.
//!
//! This file holds only the entry points; each derive's function returns
//! `Result<TokenStream, errors::Failure>`, whose error becomes spanned `compile_error!`s (and a
//! stub impl where one helps). Every derive reads serde's attributes through `serde_attr`.
//! `wire` (the lean serde impls of generated structs) and `schema` are one module each; the
//! rest is `#[derive(Resource)]`, split the way serde_derive splits it:
//! `ast` reads the struct's fields, `attr` reads the `#[resource(...)]` vocabulary, `check`
//! applies the rules that span several keys or fields and fills in defaults, and `expand` turns
//! the checked model into tokens. Every stage reports into one `errors::Errors`, so a user sees
//! all mistakes of one derive at once.

mod ast;
mod attr;
mod check;
mod custom_resource;
mod errors;
mod expand;
mod schema;
mod serde_attr;
mod wire;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

use crate::errors::Failure;

/// Implements `kapi::Resource` for a kind struct and emits its `<Name>List` alias.
///
/// The struct needs named fields `apiVersion` (`kapi::type_tag::ApiVersion<Self>`), `kind`
/// (`kapi::type_tag::Kind<Self>`) and `metadata` (`kapi::meta::ObjectMeta`, or k8s-openapi's
/// with `kube`), matched by their
/// JSON names (from `#[serde(rename..)]` or `#[wire(rename..)]`). The kind is described by one or more `#[resource(...)]` attributes:
///
/// | key | value | default |
/// |---|---|---|
/// | `group` | `"apps"`, `""` for the core group | required |
/// | `version` | `"v1"` | required |
/// | `kind` | `"Deployment"` | the struct name |
/// | `plural` | `"deployments"` | upstream's guess from the kind |
/// | `singular` | `"deployment"` | the lowercase kind |
/// | `namespaced` / `cluster` | flag | `namespaced` |
/// | `short_names`, `categories`, `selectable_fields` | `["a", "b"]` | empty |
/// | `verbs` | `["get", "list"]` | all eight |
/// | `status` | flag | no status subresource |
/// | `scale(spec_replicas_path = "..", status_replicas_path = "..", label_selector_path = "..")` | | no scale subresource |
/// | `printer_column(name = "..", type = "..", json_path = "..", priority = 1, format = "..", description = "..")` | repeatable | none |
/// | `printer_column(.., cell = "ratio(.status.readyReplicas, .spec.replicas)", since = "1.22", until = "1.27")` | a `kapi::printer::Rule` in snake case with its paths instead of `json_path`; the releases that show the column; such a column may also take `format = "name"` (it names the row) or `format = ""` | every release |
/// | `default(path = ".spec.replicas", value = "1", when = "type == \"RollingUpdate\"", since = "1.21")` | repeatable; a JSON `value` or a `rule` of `kapi::defaulting::Rule` in snake case, filled in on every write when the field is missing | none |
/// | `generation` | `"none"`, `"spec"`, `"spec_and_annotations"`, `"spec_and_labels"`, `"create_only"`: when `metadata.generation` is set and bumped; `generation_since = "1.27"` the release that starts it | `"spec"`, a custom resource's |
/// | `status_on_create` | `"keep"`, `"remove"`, `"empty"` (`status: {}`) or `"pod_pending"` (a Pod's `phase: Pending` and QoS class): what a create does with the status it is sent, with a status subresource | `"remove"` |
/// | `status_keeps_metadata` | `["labels"]`: an update through the status subresource takes the new status and metadata but these fields, and keeps the old spec, as a built-in's status strategy | only the status changes, a custom resource's |
/// | `write_conversion` | `"none"` or `"secret_string_data"`: a `kapi::write_rules::WriteConversion` every write applies to the decoded object | `"none"` |
/// | `create_on_update` | `true` or `false`: whether a PUT of a missing object creates it (upstream's `AllowCreateOnUpdate`) | `false` |
/// | `create_rule` | `"none"`, `"job_selector"` or `"pod_label_keys"`: a `kapi::write_rules::CreateRule` a create applies before validation (a Job's generated selector and pod labels, a Pod's label keys merged into its selectors) | `"none"` |
/// | `field_label(label = "spec.unschedulable", paths = [".spec.unschedulable"], type = "boolean", since = "1.28", until = "1.30")` | repeatable: exactly the labels `fieldSelector` accepts (`kapi::field_labels`); `paths` read in order (the label's own by default, `[]` always empty), `type` `"string"`, `"boolean"` or `"integer"` for the zero value of a missing field | a custom resource's labels |
/// | `field_label_message` | `"field label not supported: %s"`: the refusal of other labels, `%s`/`%q` the label | that message |
/// | `field_labels` | `"custom"` or `"meta"` (`metadata.name` and `metadata.namespace`, upstream's default conversion) instead of `field_label` entries | `"custom"` |
/// | `introduced`, `deprecated`, `removed` | `"1.16"` | unset |
/// | `replacement(group = "..", version = "..", kind = "..")` | | unset |
/// | `deprecation_warning` | `"..."`; alone it marks the kind deprecated in every release, as a CRD's `deprecated: true` | unset |
/// | `merge` | `path::TO_STATIC`, a `kapi::merge::TypeInfo` | no merge metadata |
/// | `family` | `path::TO_STATIC`, a `kapi::conversion::Family`: a built-in served in several versions or groups, stored once and converted | stored as written, under the kind's group |
/// | `crate` | `"::my_reexport::kapi"` | `"::kapi"` |
/// | `no_list` | flag | emit the list alias |
/// | `kube` | flag: a kind for the `kube` crate: `metadata` is k8s-openapi's `ObjectMeta` (`kapi::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta`), k8s-openapi's `Resource`, `Metadata` and `ListableResource` are implemented (so `kube::Api<K>`, `watcher` and `Controller` take the kind) and the list alias is k8s-openapi's `List`; needs kapi's `kube` feature | a kapi kind only |
///
/// ```
/// #[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, kapi::Resource)]
/// #[resource(group = "example.com", version = "v1", plural = "widgets", status)]
/// pub struct Widget {
///     #[serde(rename = "apiVersion")]
///     pub api_version: kapi::type_tag::ApiVersion<Self>,
///     pub kind: kapi::type_tag::Kind<Self>,
///     #[serde(default)]
///     pub metadata: kapi::meta::ObjectMeta,
///     #[serde(default, skip_serializing_if = "Option::is_none")]
///     pub status: Option<serde_json::Value>,
/// }
///
/// use kapi::Resource as _;
/// assert_eq!(Widget::api_version(), "example.com/v1");
/// let _list: WidgetList = WidgetList::default();
/// ```
#[proc_macro_derive(Resource, attributes(resource))]
pub fn derive_resource(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive_resource(&input)
        .unwrap_or_else(Failure::into_compile_error)
        .into()
}

/// Implements `kapi::Schema` for a struct or enum: its Kubernetes structural schema.
///
/// The schema follows the type's serde shape (`rename`, `rename_all`, `default`, `skip`,
/// `skip_serializing_if`, `flatten`, `tag`, `untagged`, `transparent`), takes descriptions from
/// doc comments, and reads `#[schema(...)]` markers named after kubebuilder's:
///
/// | key | where | effect |
/// |---|---|---|
/// | `list_type = "atomic" \| "set" \| "map"`, `list_map_keys = ["name"]` | field | `x-kubernetes-list-type`, `-list-map-keys` |
/// | `map_type = "atomic" \| "granular"` | field, container | `x-kubernetes-map-type` |
/// | `preserve_unknown_fields`, `embedded_resource` | field, container | the `x-kubernetes-` marker |
/// | `int_or_string` | field | the int-or-string shape |
/// | `validation(rule = "...", message = "...", message_expression, reason, field_path, optional_old_self)` | field, container, repeatable | `x-kubernetes-validations` |
/// | `default = <expr>` | field | `default` (any `Serialize` value) |
/// | `minimum`, `maximum`, `multiple_of`, `min_length`, `max_length`, `min_items`, `max_items`, `min_properties`, `max_properties` | field (`*_properties` also container) | the bound |
/// | `exclusive_minimum`, `exclusive_maximum`, `nullable` | field | flag |
/// | `pattern = "..."`, `format = "..."`, `description = "..."` | field (`description` also container) | the keyword |
/// | `allow_float` | field | allow `f32`/`f64` (disallowed by API conventions) |
/// | `with = path::to_fn` | field | the field's schema is `path::to_fn()` |
/// | `crate = "::path::to::kapi"` | container | path to kapi |
///
/// Every `rule` and `message_expression` is parsed and type-checked at compile time by the
/// checker the server runs when a CRD is created (`kapi-cel-check`), with `self` and `oldSelf`
/// typed by the schema the rule's node gets: a struct's serialized fields (a flattened field or
/// `preserve_unknown_fields` admits other names), each typed from how its type is written
/// (`bool`, integers, `String`, `Vec`, string-keyed maps, through `Option`, `Box`, `Arc`) and its
/// markers; other types are dyn. It is refused, at its string, when it does not parse, names
/// something undeclared, reads a field the schema lacks, calls a function no overload of which
/// fits, is not a bool (a `message_expression`: not a string), sets `optional_old_self` without
/// using `oldSelf`, uses `oldSelf` on a field of a `map_type = "atomic"` struct, or, reading only
/// typed values, is estimated past upstream's per-expression cost limit; the message is
/// kube-apiserver's for a CRD with that rule. What is dyn is checked when the CRD is applied.
///
/// A `conditions: Vec<Condition>` field becomes a map list keyed by `type`, and the struct
/// implements `kapi::crd::HasConditions`. Shapes a structural schema cannot express (tuples,
/// unit variants mixed with data variants, adjacently tagged enums, one field name with two
/// types across union variants, maps with non-string keys, floats, recursion, serde `with`
/// without `#[schema(with)]`) are compile errors at the offending field or variant.
///
/// ```
/// #[derive(serde::Serialize, serde::Deserialize, kapi::Schema)]
/// #[serde(rename_all = "camelCase")]
/// struct Backup {
///     /// Cron schedule.
///     #[schema(pattern = "^\\S+ \\S+ \\S+ \\S+ \\S+$")]
///     schedule: String,
///     #[serde(default, skip_serializing_if = "Option::is_none")]
///     #[schema(minimum = 1)]
///     keep_last: Option<i32>,
/// }
///
/// use kapi::Schema as _;
/// let schema = serde_json::to_value(Backup::schema()).unwrap();
/// assert_eq!(schema["required"], serde_json::json!(["schedule"]));
/// assert_eq!(schema["properties"]["keepLast"]["minimum"], 1);
/// ```
#[proc_macro_derive(Schema, attributes(schema))]
pub fn derive_schema(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    schema::derive(&input)
        .unwrap_or_else(Failure::into_compile_error)
        .into()
}

/// Turns a spec struct into a custom resource: the kind struct, its list, `Resource`,
/// `Schema` for the spec, `CustomResource` (the CRD), `HasStatus` and `new(name, spec)`.
///
/// Takes the `#[resource(...)]` keys of `#[derive(Resource)]` (the kind defaults to the spec's
/// name without `Spec`), where `status = "WidgetStatus"` names the status type (and serves
/// `/status`) and `deprecated` may be a bare flag, plus `served = bool`, `storage = bool`
/// (both default `true`) and `derive = ["PartialEq", ...]` for extra derives on the kind.
/// Field markers are those of `#[derive(Schema)]`, which this derive implies for the spec.
/// With `kube` the kind is one the `kube` crate takes (`Api<Widget>`, `Controller`): its
/// `metadata` is k8s-openapi's `ObjectMeta` (see `#[derive(Resource)]`).
///
/// ```
/// use kapi::CustomResource;
///
/// /// A widget.
/// // `kapi::Wire` is serde's `Serialize` and `Deserialize` with far less code; serde's own
/// // derives work here too.
/// #[derive(Clone, Debug, kapi::Wire, CustomResource)]
/// #[resource(group = "example.com", version = "v1", status = "WidgetStatus", short_names = ["wd"])]
/// pub struct WidgetSpec {
///     pub size: i32,
/// }
///
/// #[derive(Clone, Debug, Default, kapi::Wire, kapi::Schema)]
/// pub struct WidgetStatus {
///     #[serde(default)]
///     pub conditions: Vec<kapi::meta::Condition>,
/// }
///
/// let widget = Widget::new("w", WidgetSpec { size: 3 });
/// assert_eq!(widget.metadata.name.as_deref(), Some("w"));
/// let crd = Widget::crd();
/// assert_eq!(crd.metadata.name.as_deref(), Some("widgets.example.com"));
/// ```
#[proc_macro_derive(CustomResource, attributes(resource, schema))]
pub fn derive_custom_resource(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    custom_resource::derive(&input)
        .unwrap_or_else(Failure::into_compile_error)
        .into()
}

/// Implements serde's `Serialize` and `Deserialize` for a struct with named fields or an enum of
/// unit variants, with far less code per type than serde's derives.
///
/// Keys are read from `#[wire(...)]` and, with serde's meaning, from `#[serde(...)]`: a type
/// moves from serde's derives to this one by changing its derive line, and `#[derive(Schema)]`
/// sees the same attributes. A field whose type is spelled `Option<..>` may be absent, reads
/// `null` as `None` and is left out when `None`; any other field is required unless it has a
/// default, and is written unless `skip_serializing_if` says otherwise. Unknown keys are
/// ignored; a key given twice keeps its last value, as Go does. An enum is written as its
/// variant's name.
///
/// | key | where | effect |
/// |---|---|---|
/// | `rename = "x"` | field, variant | the JSON name |
/// | `default` | field | may be absent: `Default::default()` |
/// | `default = "path"` | field | may be absent: `path()` |
/// | `skip_serializing_if = "path"` | field | left out when `path(&field)` |
/// | `skip` | field | neither read nor written (always its `Default`) |
/// | `rename_all = "camelCase"` | struct, enum | serde's rename rules |
/// | `default` | struct | every missing field keeps the struct's `Default` value; nothing is required |
/// | `crate = "::path::to::kapi"` | struct, enum (`#[wire]` only) | path to kapi (default `::kapi`) |
///
/// Other serde keys (`flatten`, `tag`, `with`, ...), tuple and unit structs, generic types and
/// enums with data are compile errors that say so.
///
/// ```
/// #[derive(Debug, PartialEq, kapi::Wire)]
/// #[serde(rename_all = "camelCase")]
/// struct Port {
///     container_port: i32,
///     #[serde(rename = "proto")]
///     protocol: Option<Protocol>,
///     #[serde(default, skip_serializing_if = "Vec::is_empty")]
///     labels: Vec<String>,
/// }
///
/// #[derive(Debug, PartialEq, kapi::Wire)]
/// enum Protocol {
///     #[serde(rename = "TCP")]
///     Tcp,
///     #[serde(rename = "UDP")]
///     Udp,
/// }
///
/// let port: Port = serde_json::from_str(r#"{"containerPort": 80, "proto": "UDP", "x": 1}"#)?;
/// assert_eq!(port, Port { container_port: 80, protocol: Some(Protocol::Udp), labels: vec![] });
/// assert_eq!(serde_json::to_string(&port)?, r#"{"containerPort":80,"proto":"UDP"}"#);
/// let missing = serde_json::from_str::<Port>("{}").unwrap_err().to_string();
/// assert!(missing.starts_with("missing field `containerPort`"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[proc_macro_derive(Wire, attributes(wire, serde))]
pub fn derive_wire(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    wire::derive(&input)
        .unwrap_or_else(Failure::into_compile_error)
        .into()
}
