//! `#[derive(CustomResource)]`: from a spec struct, the kind struct around it, its `Resource`
//! impl (through the same checks and tokens as `#[derive(Resource)]`), its list alias, the
//! spec's `Schema` impl, the `CustomResource` impl that builds the CRD version, `HasStatus`, a
//! `new(name, spec)` constructor and the merge metadata of the whole object.
//!
//! The kind struct is built as a `DeriveInput` and run through `ast` and `check` like a
//! hand-written one, so both derives share one set of naming rules and messages.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned as _;
use syn::{Data, DeriveInput, Fields};

use crate::ast::Input;
use crate::attr::{Attrs, Derive};
use crate::check;
use crate::errors::Errors;
use crate::errors::Failure;
use crate::expand;
use crate::schema;

/// Expands `#[derive(CustomResource)]` on `input`, the spec struct.
pub(crate) fn derive(input: &DeriveInput) -> Result<TokenStream, Failure> {
    let mut errors = Errors::default();
    let mut attrs = Attrs::parse_for(&input.attrs, Derive::CustomResource, &mut errors);
    let krate = attrs.krate.clone().unwrap_or_else(check::default_crate);
    let spec_schema = schema::expand(input, Some(&krate), &mut errors);

    let spec_ident = &input.ident;
    if let Some(param) = input.generics.params.first() {
        errors.at(
            param.span(),
            "#[derive(CustomResource)] does not support generic parameters or lifetimes: a \
             kind has one fixed schema; write a concrete spec struct",
        );
    }
    if !matches!(&input.data, Data::Struct(s) if matches!(s.fields, Fields::Named(_))) {
        errors.at(
            spec_ident.span(),
            "#[derive(CustomResource)] goes on the spec struct, a struct with named fields; \
             the kind struct around it is generated",
        );
    }

    // The kind: written, or the spec's name without `Spec`.
    let kind_name = match (&attrs.kind, spec_ident.to_string().strip_suffix("Spec")) {
        (Some(kind), _) => Some(kind.value.clone()),
        (None, Some(stem)) if !stem.is_empty() => Some(stem.to_owned()),
        _ => {
            errors.at(
                spec_ident.span(),
                format_args!(
                    "cannot tell the kind from `{spec_ident}`: name the struct `<Kind>Spec` \
                     (e.g. `WidgetSpec`) or write #[resource(kind = \"Widget\")]"
                ),
            );
            None
        }
    };
    // Upstream requires a CRD's group to be a domain, e.g. `example.com`.
    if let Some(group) = &attrs.group
        && !group.value.contains('.')
    {
        errors.at(
            group.span,
            format_args!(
                "a CustomResourceDefinition's group must be a domain with at least one dot, \
                 not {:?}: write e.g. #[resource(group = \"{}.example.com\")]",
                group.value, group.value
            ),
        );
    }

    let Some(kind_name) = kind_name else {
        return Err(failure(errors, input, &krate));
    };
    let kind_ident = match syn::parse_str::<syn::Ident>(&kind_name) {
        Ok(_) => syn::Ident::new(&kind_name, spec_ident.span()),
        // `check` reports the invalid kind name; a placeholder lets it collect the rest.
        Err(_) => format_ident!("InvalidKind", span = spec_ident.span()),
    };
    if attrs.kind.is_none() {
        attrs.kind = Some(crate::attr::Spanned {
            value: kind_name.clone(),
            span: spec_ident.span(),
        });
    }

    let status_ty = attrs.status_type.clone();
    let deprecated_flag = attrs.deprecated_flag.is_some();
    let explicit_warning = attrs.deprecation_warning.as_ref().map(|w| w.value.clone());
    let served = attrs.served.unwrap_or(true);
    let storage = attrs.storage.unwrap_or(true);
    let derives = std::mem::take(&mut attrs.derives);
    let user_merge = attrs.merge.is_some();
    if !user_merge {
        attrs.merge = Some(syn::parse_quote!(__KAPI_OBJECT_MERGE));
    }

    // kube's `Resource` returns k8s-openapi's `ObjectMeta`, so a kind made for it carries that.
    let metadata_ty = if attrs.kube.is_some() {
        quote!(#krate::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta)
    } else {
        quote!(#krate::meta::ObjectMeta)
    };
    let vis = &input.vis;
    let status_field = status_ty.as_ref().map(|ty| {
        quote! {
            /// The observed state, written by controllers through the status subresource.
            #vis status: ::core::option::Option<#ty>,
        }
    });
    let kind_struct: DeriveInput = syn::parse_quote! {
        #vis struct #kind_ident {
            /// `group/version` of this object.
            #[serde(rename = "apiVersion")]
            #vis api_version: #krate::type_tag::ApiVersion<Self>,
            /// The kind of this object.
            #vis kind: #krate::type_tag::Kind<Self>,
            /// Standard object metadata.
            #[serde(default)]
            #vis metadata: #metadata_ty,
            /// The desired state.
            #vis spec: #spec_ident,
            #status_field
        }
    };
    let ast = Input::from_syn(&kind_struct, &mut errors);
    let model = check::resolve(&ast, attrs, &mut errors);
    let Some(mut model) = model.filter(|_| errors.is_empty()) else {
        return Err(failure(errors, input, &krate));
    };

    // A flag-only `deprecated` warns with the server's default text for CRDs.
    if deprecated_flag && model.warning.is_none() {
        model.warning = Some(format!(
            "{}/{} {} is deprecated",
            model.group, model.version, model.kind
        ));
    }
    let list = model.list;
    model.list = false;
    let resource = expand::resource_impl(&model);
    let alias = list.then(|| expand::list_alias(&kind_ident, vis, &krate, &model.kind, model.kube));

    let wire_crate = quote!(#krate).to_string().replace(' ', "");
    let kind_doc = format!(
        "The `{}` kind (`{}`), generated by `#[derive(CustomResource)]` around [`{spec_ident}`].",
        model.kind,
        if model.group.is_empty() {
            model.version.clone()
        } else {
            format!("{}/{}", model.group, model.version)
        }
    );
    let Data::Struct(kind_data) = &kind_struct.data else {
        return Err(failure(Errors::default(), input, &krate));
    };
    let kind_fields = kind_data.fields.iter();
    let status_init = status_ty
        .as_ref()
        .map(|_| quote!(status: ::core::option::Option::None,));
    let has_status = status_ty.as_ref().map(|ty| {
        quote! {
            #[automatically_derived]
            impl #krate::crd::HasStatus for #kind_ident {
                type Status = #ty;
                fn status(&self) -> ::core::option::Option<&#ty> {
                    self.status.as_ref()
                }
                fn status_mut(&mut self) -> &mut ::core::option::Option<#ty> {
                    &mut self.status
                }
            }
        }
    });
    let props = quote!(#krate::schema::JSONSchemaProps);
    let status_schema = status_ty.as_ref().map(|ty| {
        quote! {
            __root.properties.insert(
                "status".to_owned(),
                <#ty as #krate::schema::Schema>::schema(),
            );
        }
    });
    let deprecation = deprecated_flag.then(|| {
        let warning = match &explicit_warning {
            Some(w) => quote!(::core::option::Option::Some(#w.to_owned())),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            __version.deprecated = true;
            __version.deprecation_warning = #warning;
        }
    });
    let merge = quote!(#krate::merge);
    let status_merge = status_ty.as_ref().map(|ty| {
        quote! {
            #merge::FieldInfo {
                ty: <#ty as #krate::schema::Schema>::MERGE,
                ..#merge::field("status")
            },
        }
    });
    let object_merge = (!user_merge).then(|| {
        quote! {
            static __KAPI_OBJECT_MERGE: #merge::TypeInfo = #merge::TypeInfo::new(&[
                #merge::field("metadata").of(&#merge::OBJECT_META),
                #merge::FieldInfo {
                    ty: <#spec_ident as #krate::schema::Schema>::MERGE,
                    ..#merge::field("spec")
                },
                #status_merge
            ]);
        }
    });

    Ok(quote! {
        #[doc = #kind_doc]
        #[derive(
            ::core::clone::Clone,
            ::core::fmt::Debug,
            #krate::Wire,
            #(#derives),*
        )]
        #[wire(crate = #wire_crate)]
        #vis struct #kind_ident {
            #(#kind_fields,)*
        }

        #alias

        impl #kind_ident {
            /// A new object named `name` with `spec` and no status.
            #vis fn new(name: &str, spec: #spec_ident) -> Self {
                let mut metadata = <#metadata_ty as ::core::default::Default>::default();
                #krate::ObjectMetaAccess::set_name(&mut metadata, name.to_owned());
                Self {
                    api_version: ::core::default::Default::default(),
                    kind: ::core::default::Default::default(),
                    metadata,
                    spec,
                    #status_init
                }
            }
        }

        #spec_schema

        const _: () = {
            #object_merge
            #resource

            #[automatically_derived]
            impl #krate::crd::CustomResource for #kind_ident {
                type Spec = #spec_ident;

                fn crd_version() -> #krate::crd::CustomResourceDefinitionVersion {
                    let mut __root = #props::object();
                    __root.properties.insert(
                        "apiVersion".to_owned(),
                        #props::string().with_description(
                            "The versioned schema of this object: `group/version`.",
                        ),
                    );
                    __root.properties.insert(
                        "kind".to_owned(),
                        #props::string().with_description(
                            "The kind of this object, in CamelCase.",
                        ),
                    );
                    __root.properties.insert("metadata".to_owned(), #props::object());
                    __root.properties.insert(
                        "spec".to_owned(),
                        <#spec_ident as #krate::schema::Schema>::schema(),
                    );
                    #status_schema
                    __root.required.push("spec".to_owned());
                    let mut __version = #krate::crd::CustomResourceDefinitionVersion::from_info(
                        <Self as #krate::Resource>::info(),
                        #served,
                        #storage,
                    );
                    #deprecation
                    __version.schema = ::core::option::Option::Some(
                        #krate::crd::CustomResourceValidation {
                            open_api_v3_schema: ::core::option::Option::Some(__root),
                        },
                    );
                    __version
                }
            }

            #has_status
        };
    })
}

fn failure(errors: Errors, input: &DeriveInput, krate: &syn::Path) -> Failure {
    let error = errors.finish().unwrap_or_else(|| {
        syn::Error::new(
            input.ident.span(),
            "#[derive(CustomResource)] could not read this struct",
        )
    });
    Failure::new(error, schema::stub(input, Some(krate)))
}
