//! Derive macros for kapi; the `kapi` crate re-exports them, so users write `kapi::Resource`.
//!
//! This file holds only the entry points. The work is split the way serde_derive splits it:
//! `ast` reads the struct's fields, `attr` reads the `#[resource(...)]` vocabulary, `check`
//! applies the rules that span several keys or fields and fills in defaults, and `expand` turns
//! the checked model into tokens. Every stage reports into one `errors::Errors`, so a user sees
//! all mistakes of one derive at once.

mod ast;
mod attr;
mod check;
mod errors;
mod expand;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Implements `kapi::Resource` for a kind struct and emits its `<Name>List` alias.
///
/// The struct needs named fields `apiVersion` (`kapi::type_tag::ApiVersion<Self>`), `kind`
/// (`kapi::type_tag::Kind<Self>`) and `metadata` (`kapi::meta::ObjectMeta`), matched by their
/// serde names. The kind is described by one or more `#[resource(...)]` attributes:
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
/// | `introduced`, `deprecated`, `removed` | `"1.16"` | unset |
/// | `replacement(group = "..", version = "..", kind = "..")` | | unset |
/// | `deprecation_warning` | `"..."`; alone it marks the kind deprecated in every release, as a CRD's `deprecated: true` | unset |
/// | `merge` | `path::TO_STATIC`, a `kapi::merge::TypeInfo` | no merge metadata |
/// | `crate` | `"::my_reexport::kapi"` | `"::kapi"` |
/// | `no_list` | flag | emit the list alias |
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
        .unwrap_or_else(expand::Failure::into_compile_error)
        .into()
}
