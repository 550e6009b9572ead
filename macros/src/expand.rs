//! Tokens for `#[derive(Resource)]`: the `Resource` impl with its static `ResourceInfo`, the
//! `<Name>List` alias, and on error a stub impl so one mistake shows as one error.
//!
//! Everything the impl needs lives inside `const _: () = { ... };` so no helper name leaks into
//! the user's module; only the list alias is emitted beside the struct, since users name it.
//! Runtime items are reached through the `crate = "..."` path, default `::kapi`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{DeriveInput, Ident, Path, Visibility};

use crate::ast::Input;
use crate::attr::{Attrs, Scope};
use crate::check::{self, Cell, Model};
use crate::errors::{Errors, Failure};

/// Expands `#[derive(Resource)]` on `input`.
pub(crate) fn derive_resource(input: &DeriveInput) -> Result<TokenStream, Failure> {
    let mut errors = Errors::default();
    let ast = Input::from_syn(input, &mut errors);
    let attrs = Attrs::parse(&input.attrs, &mut errors);
    let krate = attrs.krate.clone().unwrap_or_else(check::default_crate);
    let list = attrs.no_list.is_none();
    let model = check::resolve(&ast, attrs, &mut errors);
    match (errors.finish(), model) {
        (None, Some(model)) => Ok(resource_impl(&model)),
        (error, _) => Err(Failure::new(
            // `resolve` reports whatever makes it return `None`; this covers a slip there.
            error.unwrap_or_else(|| {
                syn::Error::new(
                    input.ident.span(),
                    "#[derive(Resource)] could not read this struct",
                )
            }),
            stub(&ast, &krate, list),
        )),
    }
}

pub(crate) fn resource_impl(model: &Model<'_>) -> TokenStream {
    let Model {
        ident,
        krate,
        group,
        version,
        kind,
        plural,
        ..
    } = model;
    let scope = scope_tokens(krate, model.scope);
    let info = info_tokens(model);

    // Spanned on the user's field types, so a wrong type is reported at the field.
    let api_version = field_check(
        model,
        model.api_version_field,
        quote!(type_tag::ApiVersion<#ident>),
    );
    let kind_check = field_check(model, model.kind_field, quote!(type_tag::Kind<#ident>));
    let metadata = &model.metadata_field.ident;
    let metadata_ty = model.metadata_field.ty;
    let metadata_span = metadata_ty.span();
    // Whatever type the field has; the bound on `Resource::Metadata` reports a wrong one there.
    // The signatures name the type rather than `Self::Metadata`, whose projection would repeat
    // every unmet supertrait bound (a missing `Clone`) at the derive.
    let metadata_assoc = quote_spanned!(metadata_span=> type Metadata = #metadata_ty;);
    let metadata_ref = quote_spanned!(metadata_span=> &self.#metadata);
    let metadata_mut = quote_spanned!(metadata_span=> &mut self.#metadata);

    let alias = model
        .list
        .then(|| list_alias(ident, model.vis, krate, kind, model.kube));
    let kube = model.kube.then(|| kube_impls(model));
    let merge_info = model.merge.as_ref().map(|path| {
        quote! {
            fn merge_info() -> ::core::option::Option<&'static #krate::merge::TypeInfo> {
                ::core::option::Option::Some(&#path)
            }
        }
    });
    quote! {
        const _: () = {
            #api_version
            #kind_check

            #[automatically_derived]
            impl #krate::Resource for #ident {
                const GROUP: &'static str = #group;
                const VERSION: &'static str = #version;
                const KIND: &'static str = #kind;
                const PLURAL: &'static str = #plural;
                const SCOPE: #krate::Scope = #scope;

                #metadata_assoc

                fn info() -> &'static #krate::ResourceInfo {
                    static INFO: #krate::ResourceInfo = #info;
                    &INFO
                }

                fn metadata(&self) -> &#metadata_ty {
                    #metadata_ref
                }

                fn metadata_mut(&mut self) -> &mut #metadata_ty {
                    #metadata_mut
                }

                #merge_info
            }

            #kube
        };
        #alias
    }
}

/// k8s-openapi's `Resource`, `Metadata` and `ListableResource`, through which the `kube` crate's
/// blanket `kube::Resource` impl takes the kind (`#[resource(kube)]`). The metadata field must be
/// k8s-openapi's `ObjectMeta`, as `kube::Resource::meta` returns it.
fn kube_impls(model: &Model<'_>) -> TokenStream {
    let Model {
        ident,
        krate,
        group,
        version,
        kind,
        plural,
        ..
    } = model;
    let k8s = quote!(#krate::kube::k8s_openapi);
    let api_version = if group.is_empty() {
        version.clone()
    } else {
        format!("{group}/{version}")
    };
    let list_kind = format!("{kind}List");
    let scope = match model.scope {
        Scope::Namespaced => quote!(#k8s::NamespaceResourceScope),
        Scope::Cluster => quote!(#k8s::ClusterResourceScope),
    };
    let metadata = &model.metadata_field.ident;
    let span = model.metadata_field.ty.span();
    let object_meta = quote!(#k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    let metadata_ref = quote_spanned!(span=> &self.#metadata);
    let metadata_mut = quote_spanned!(span=> &mut self.#metadata);
    quote! {
        #[automatically_derived]
        impl #k8s::Resource for #ident {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSION: &'static str = #version;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }

        #[automatically_derived]
        impl #k8s::ListableResource for #ident {
            const LIST_KIND: &'static str = #list_kind;
        }

        #[automatically_derived]
        impl #k8s::Metadata for #ident {
            type Ty = #object_meta;

            fn metadata(&self) -> &#object_meta {
                #metadata_ref
            }

            fn metadata_mut(&mut self) -> &mut #object_meta {
                #metadata_mut
            }
        }
    }
}

/// A compile-time assertion that `field` has type `ty`, failing at the field's type.
fn field_check(model: &Model<'_>, field: &crate::ast::Field<'_>, ty: TokenStream) -> TokenStream {
    let (ident, krate, member) = (model.ident, &model.krate, field.ident);
    let span = field.ty.span();
    let access = quote_spanned!(span=> &object.#member);
    quote! {
        const _: fn(&#ident) -> &#krate::#ty = |object| #access;
    }
}

fn scope_tokens(krate: &Path, scope: Scope) -> TokenStream {
    match scope {
        Scope::Namespaced => quote!(#krate::Scope::Namespaced),
        Scope::Cluster => quote!(#krate::Scope::Cluster),
    }
}

/// The `ResourceInfo` initializer; every part is a constant expression so it can be a `static`.
fn info_tokens(model: &Model<'_>) -> TokenStream {
    let krate = &model.krate;
    let cow = quote!(::std::borrow::Cow);
    let text = |value: &str| quote!(#cow::Borrowed(#value));
    let optional = |value: Option<&str>| match value {
        Some(value) => {
            let value = text(value);
            quote!(::core::option::Option::Some(#value))
        }
        None => quote!(::core::option::Option::None),
    };
    let texts = |values: &[String]| {
        let values = values.iter().map(|value| text(value));
        quote!(#cow::Borrowed(&[#(#values),*]))
    };
    let release = |release: Option<(u16, u16)>| match release {
        Some((major, minor)) => {
            quote!(::core::option::Option::Some(#krate::KubeVersion::new(#major, #minor)))
        }
        None => quote!(::core::option::Option::None),
    };

    let Model {
        group,
        version,
        kind,
        plural,
        singular,
        ..
    } = model;
    let scope = scope_tokens(krate, model.scope);
    let short_names = texts(&model.short_names);
    let categories = texts(&model.categories);
    let selectable_fields = texts(&model.selectable_fields);
    let verbs = model.verbs.iter().map(|verb| {
        let variant = Ident::new(verb_variant(verb), Span::call_site());
        quote!(#krate::Verb::#variant)
    });
    let status = model.status;
    let scale = match &model.scale {
        Some(scale) => {
            let spec = text(&scale.spec_replicas_path);
            let status = text(&scale.status_replicas_path);
            let selector = optional(scale.label_selector_path.as_deref());
            quote!(::core::option::Option::Some(#krate::Scale {
                spec_replicas_path: #spec,
                status_replicas_path: #status,
                label_selector_path: #selector,
            }))
        }
        None => quote!(::core::option::Option::None),
    };
    let introduced = release(model.introduced);
    let deprecated = release(model.deprecated);
    let removed = release(model.removed);
    let replacement = match &model.replacement {
        Some([group, version, kind]) => quote!(::core::option::Option::Some(
            #krate::GroupVersionKind::new_static(#group, #version, #kind)
        )),
        None => quote!(::core::option::Option::None),
    };
    let warning = optional(model.warning.as_deref());
    let columns = model.printer_columns.iter().map(|column| {
        let name = &column.name;
        let type_ = &column.type_;
        let format = match column.format.as_deref() {
            Some(format) => quote!(::core::option::Option::Some(#format)),
            None => quote!(::core::option::Option::None),
        };
        let description = column.description.as_deref().unwrap_or_default();
        let priority = column.priority;
        let cell = match &column.cell {
            Cell::Path(path) => {
                let path = text(path);
                quote!(#krate::printer::Cell::Path(#path))
            }
            Cell::Rule {
                variant,
                name,
                paths,
            } => {
                let count = paths.len();
                let message = format!(
                    "printer rule `{name}` does not take {count} paths (kapi::printer::Rule::takes)"
                );
                // The whole call carries the cell's span, so that a wrong count is reported
                // at the column's `cell = ".."`, where the constant's evaluation fails.
                let krate = respanned(krate.to_token_stream(), variant.span());
                quote_spanned!(variant.span()=>
                    #krate::printer::Cell::rule(
                        #krate::printer::Rule::#variant,
                        &[#(#paths),*],
                        #message,
                    )
                )
            }
        };
        let releases = match (column.since, column.until) {
            (None, None) => quote!(#krate::printer::Releases::ALL),
            (since, until) => {
                let (since_major, since_minor) = since.unwrap_or_default();
                let (until_major, until_minor) = until.unwrap_or_default();
                quote!(#krate::printer::Releases::between(
                    (#since_major, #since_minor),
                    (#until_major, #until_minor),
                ))
            }
        };
        quote!(#krate::PrinterColumn::derived(
            #name, #type_, #format, #description, #priority, #cell, #releases,
        ))
    });
    let defaults = model.defaults.iter().map(|default| {
        let path = &default.path;
        let mut step = match &default.fill {
            check::Fill::Json(json) => quote!(#krate::defaulting::Default::value(#path, #json)),
            check::Fill::Rule(variant) => quote!(#krate::defaulting::Default::rule(
                #path,
                #krate::defaulting::Rule::#variant
            )),
        };
        if let Some((field, equals)) = &default.when {
            step.extend(quote!(.when(#field, #equals)));
        }
        for (bound, at) in [("since", default.since), ("until", default.until)] {
            if let Some((major, minor)) = at {
                let bound = format_ident!("{bound}");
                step.extend(quote!(.#bound(#major, #minor)));
            }
        }
        step
    });
    let rules = quote!(#krate::write_rules);
    let generation = match &model.generation {
        Some(variant) => quote!(#rules::Generation::#variant),
        None => quote!(#rules::WriteRules::CUSTOM.generation),
    };
    let generation_since = release(model.generation_since);
    let status_on_create = match &model.status_on_create {
        Some(variant) => quote!(#rules::StatusOnCreate::#variant),
        None => quote!(#rules::WriteRules::CUSTOM.status_on_create),
    };
    let status_update = match &model.status_keeps_metadata {
        Some(keeps) => quote!(#rules::StatusUpdate::StatusAndMetadata {
            keeps: &[#(#keeps),*],
        }),
        None => quote!(#rules::WriteRules::CUSTOM.status_update),
    };
    let write_conversion = match &model.write_conversion {
        Some(variant) => quote!(#rules::WriteConversion::#variant),
        None => quote!(#rules::WriteRules::CUSTOM.write_conversion),
    };
    let create_on_update = model.create_on_update;
    let create_rule = match &model.create_rule {
        Some(variant) => quote!(#rules::CreateRule::#variant),
        None => quote!(#rules::WriteRules::CUSTOM.create_rule),
    };
    let labels_mod = quote!(#krate::field_labels);
    let field_labels = match &model.field_labels {
        check::FieldLabels::Custom => quote!(#labels_mod::FieldLabels::Custom),
        check::FieldLabels::Meta => quote!(#labels_mod::FieldLabels::Meta),
        check::FieldLabels::Listed { labels, message } => {
            let labels = labels.iter().map(|l| {
                let label = text(&l.label);
                let paths = l.paths.iter().map(|p| text(p));
                let type_ = &l.type_;
                let since = release(l.since);
                let until = release(l.until);
                quote!(#labels_mod::FieldLabel {
                    label: #label,
                    paths: #cow::Borrowed(&[#(#paths),*]),
                    type_: #labels_mod::FieldType::#type_,
                    releases: #krate::printer::Releases {
                        since: #since,
                        until: #until,
                    },
                })
            });
            let message = text(message);
            quote!(#labels_mod::FieldLabels::Listed {
                labels: #cow::Borrowed(&[#(#labels),*]),
                message: #message,
            })
        }
    };
    let family = match &model.family {
        Some(path) => quote!(::core::option::Option::Some(&#path)),
        None => quote!(::core::option::Option::None),
    };
    let plural = text(plural);
    let singular = text(singular);
    quote! {
        #krate::ResourceInfo {
            gvk: #krate::GroupVersionKind::new_static(#group, #version, #kind),
            plural: #plural,
            singular: #singular,
            short_names: #short_names,
            categories: #categories,
            scope: #scope,
            verbs: #cow::Borrowed(&[#(#verbs),*]),
            subresources: #krate::Subresources {
                status: #status,
                scale: #scale,
            },
            lifecycle: #krate::Lifecycle {
                introduced: #introduced,
                deprecated: #deprecated,
                removed: #removed,
                replacement: #replacement,
                warning: #warning,
            },
            printer_columns: #cow::Borrowed(&[#(#columns),*]),
            selectable_fields: #selectable_fields,
            field_labels: #field_labels,
            defaults: #cow::Borrowed(&[#(#defaults),*]),
            write_rules: #rules::WriteRules {
                generation: #generation,
                generation_since: #generation_since,
                status_on_create: #status_on_create,
                status_update: #status_update,
                write_conversion: #write_conversion,
                create_rule: #create_rule,
                create_on_update: #create_on_update,
            },
            family: #family,
        }
    }
}

/// The `kapi::Verb` variant for a verb from [`crate::attr::VERB_NAMES`].
fn verb_variant(verb: &str) -> &'static str {
    match verb {
        "create" => "Create",
        "delete" => "Delete",
        "deletecollection" => "DeleteCollection",
        "get" => "Get",
        "list" => "List",
        "patch" => "Patch",
        "update" => "Update",
        _ => "Watch",
    }
}

/// `pub type <Name>List = kapi::List<Name>;`, with the struct's visibility; k8s-openapi's
/// `List` for a kind made for the `kube` crate.
pub(crate) fn list_alias(
    ident: &Ident,
    vis: &Visibility,
    krate: &Path,
    kind: &str,
    kube: bool,
) -> TokenStream {
    let alias = format_ident!("{}List", ident);
    let doc = format!("A list of [`{ident}`] objects, written as `{kind}List`.");
    let list = if kube {
        quote!(#krate::kube::k8s_openapi::List)
    } else {
        quote!(#krate::List)
    };
    quote! {
        #[doc = #doc]
        #vis type #alias = #list<#ident>;
    }
}

/// An impl with placeholder values, emitted beside the errors so that code using the kind (its
/// serde derives, its list alias, calls to `Resource` methods) does not add errors of its own.
fn stub(input: &Input<'_>, krate: &Path, list: bool) -> TokenStream {
    // A generic struct already has an error saying generics are unsupported; an impl without
    // the parameters would only add more.
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = input.ident;
    let alias = list.then(|| list_alias(ident, input.vis, krate, &ident.to_string(), false));
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #krate::Resource for #ident {
                const GROUP: &'static str = "";
                const VERSION: &'static str = "";
                const KIND: &'static str = "";
                const PLURAL: &'static str = "";
                const SCOPE: #krate::Scope = #krate::Scope::Namespaced;

                type Metadata = #krate::meta::ObjectMeta;

                fn info() -> &'static #krate::ResourceInfo {
                    ::core::unreachable!("#[derive(Resource)] failed to compile")
                }

                fn metadata(&self) -> &#krate::meta::ObjectMeta {
                    ::core::unreachable!("#[derive(Resource)] failed to compile")
                }

                fn metadata_mut(&mut self) -> &mut #krate::meta::ObjectMeta {
                    ::core::unreachable!("#[derive(Resource)] failed to compile")
                }
            }
        };
        #alias
    }
}

/// `tokens` with every token's span set to `span`.
fn respanned(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}
