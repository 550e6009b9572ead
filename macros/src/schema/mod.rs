//! `#[derive(Schema)]`: a structural schema for a struct or enum, built from its serde shape,
//! doc comments and `#[schema(...)]` markers, plus the merge metadata those markers imply.
//!
//! The shapes a structural schema cannot express are found here, at compile time, and reported
//! at the field or variant with the fix; the emitted code only assembles a schema whose
//! structure is already known to be valid. `#[derive(CustomResource)]` reuses [`expand`] for the
//! spec struct.

pub(crate) mod attr;
mod rules;
mod types;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned as _;
use syn::{Data, DeriveInput, Fields, Ident, Path, Type};

use self::attr::{Place, SchemaAttrs};
use crate::errors::{Errors, Failure};
use crate::serde_attr::Serde;

/// One named field as the schema sees it.
struct Field<'a> {
    ident: &'a Ident,
    ty: &'a Type,
    wire: String,
    serde: Serde,
    schema: SchemaAttrs,
}

/// Expands `#[derive(Schema)]`, or the schema part of `#[derive(CustomResource)]`.
/// Expands `#[derive(Schema)]` on `input`: the impl, or the errors and a stub impl.
pub(crate) fn derive(input: &DeriveInput) -> Result<TokenStream, Failure> {
    let mut errors = Errors::default();
    let tokens = expand(input, None, &mut errors);
    match errors.finish() {
        None => Ok(tokens),
        Some(error) => Err(Failure::new(error, stub(input, None))),
    }
}

pub(crate) fn expand(
    input: &DeriveInput,
    krate_override: Option<&Path>,
    errors: &mut Errors,
) -> TokenStream {
    let container_serde = Serde::parse(&input.attrs);
    let container = SchemaAttrs::parse(&input.attrs, Place::Container, errors);
    let krate = krate_override
        .cloned()
        .or_else(|| container.krate.clone())
        .unwrap_or_else(crate::check::default_crate);
    let ident = &input.ident;
    // What `self` of the container's rules is known to be: a struct's object, its fields typed
    // as far as their written types tell.
    let mut node = rules::Node::unknown();
    let atomic = container.map_type.as_deref() == Some("atomic");
    let body = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => {
                let fields =
                    read_fields(named.named.iter(), &container_serde, ident, atomic, errors);
                if !container_serde.transparent {
                    node = struct_node(&fields, &container_serde, &container);
                }
                let body = struct_body(&fields, &container_serde, &krate, errors);
                let merge = input
                    .generics
                    .params
                    .is_empty()
                    .then(|| merge_static(&fields, &container, &krate));
                let conditions = conditions_impl(ident, &input.generics, &fields, &krate);
                Body {
                    schema: body,
                    merge,
                    extra: conditions,
                }
            }
            Fields::Unnamed(unnamed) if unnamed.unnamed.len() == 1 => {
                // serde writes a newtype struct as its one field.
                let field = unnamed.unnamed.iter().next().map(|f| &f.ty);
                let ty = field.map(|ty| quote!(#ty)).unwrap_or_default();
                if let Some(ty) = field {
                    types::check_type(ty, false, ident, errors);
                }
                Body::plain(quote! {
                    let mut __schema = <#ty as #krate::schema::Schema>::schema();
                })
            }
            Fields::Unnamed(unnamed) => {
                errors.at(
                    unnamed.span(),
                    "#[derive(Schema)] cannot describe a tuple struct: it is written as a JSON \
                     array of mixed types, which a structural schema cannot express; use named \
                     fields",
                );
                Body::plain(TokenStream::new())
            }
            Fields::Unit => {
                errors.at(
                    ident.span(),
                    "#[derive(Schema)] cannot describe a unit struct: it is written as `null`; \
                     use a struct with named fields",
                );
                Body::plain(TokenStream::new())
            }
        },
        Data::Enum(data) => Body::plain(enum_body(data, &container_serde, ident, &krate, errors)),
        Data::Union(data) => {
            errors.at(
                data.union_token.span,
                "#[derive(Schema)] cannot describe a union; use a struct or an enum",
            );
            Body::plain(TokenStream::new())
        }
    };

    rules::check_all(&container.validations, &node, errors);
    let container_mods = container_mods(&container, &krate);
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut where_clause = where_clause
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(where));
    for param in input.generics.type_params() {
        let param = &param.ident;
        where_clause
            .predicates
            .push(syn::parse_quote!(#param: #krate::schema::Schema));
    }
    let Body {
        schema,
        merge,
        extra,
    } = body;
    let merge_const = merge.as_ref().map(|_| {
        quote! {
            const MERGE: ::core::option::Option<&'static #krate::merge::TypeInfo> =
                ::core::option::Option::Some(&__KAPI_MERGE);
        }
    });
    quote! {
        const _: () = {
            #merge
            #[automatically_derived]
            impl #impl_generics #krate::schema::Schema for #ident #ty_generics #where_clause {
                #merge_const
                fn schema() -> #krate::schema::JSONSchemaProps {
                    #schema
                    #container_mods
                    __schema
                }
            }
            #extra
        };
    }
}

struct Body {
    schema: TokenStream,
    merge: Option<TokenStream>,
    extra: TokenStream,
}

impl Body {
    fn plain(schema: TokenStream) -> Self {
        Body {
            schema,
            merge: None,
            extra: TokenStream::new(),
        }
    }
}

/// A stub impl emitted beside errors, so code using the type adds no errors of its own.
pub(crate) fn stub(input: &DeriveInput, krate_override: Option<&Path>) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let krate = krate_override.cloned().unwrap_or_else(|| {
        SchemaAttrs::parse(&input.attrs, Place::Container, &mut Errors::default())
            .krate
            .unwrap_or_else(crate::check::default_crate)
    });
    let ident = &input.ident;
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #krate::schema::Schema for #ident {
                fn schema() -> #krate::schema::JSONSchemaProps {
                    ::core::unreachable!("#[derive(Schema)] failed to compile")
                }
            }
        };
    }
}

/// What a struct's rules see as `self`: its object, each serialized field with the schema its
/// written type and markers give (the tag of an internally tagged struct a string), open to
/// other fields where a flattened field or `preserve_unknown_fields` admits them.
fn struct_node(fields: &[Field<'_>], serde: &Serde, container: &SchemaAttrs) -> rules::Node {
    let open = container.preserve_unknown_fields || fields.iter().any(|f| f.serde.flatten);
    let properties = fields
        .iter()
        .filter(|f| !f.serde.flatten)
        .map(|f| (f.wire.clone(), rules::field_schema(f.ty, &f.schema)))
        .chain(
            serde
                .tag
                .iter()
                .map(|tag| (tag.clone(), serde_json::json!({"type": "string"}))),
        )
        .collect();
    rules::Node::object(properties, open, container)
}

fn read_fields<'a>(
    fields: impl Iterator<Item = &'a syn::Field>,
    container: &Serde,
    owner: &Ident,
    in_atomic_map: bool,
    errors: &mut Errors,
) -> Vec<Field<'a>> {
    let mut out = Vec::new();
    for field in fields {
        let Some(ident) = field.ident.as_ref() else {
            continue;
        };
        let serde = Serde::parse(&field.attrs);
        let schema = SchemaAttrs::parse(&field.attrs, Place::Field, errors);
        if serde.skip {
            continue;
        }
        let name = syn::ext::IdentExt::unraw(ident).to_string();
        let wire = serde
            .rename
            .clone()
            .unwrap_or_else(|| container.rename_all.apply_to_field(&name));
        if let Some(span) = serde.with
            && schema.with.is_none()
        {
            errors.at(
                span,
                format_args!(
                    "field `{name}` is written by a custom serde function, so its JSON shape is \
                     not its Rust type's: describe it with #[schema(with = path::to_fn)], a \
                     `fn() -> kapi::schema::JSONSchemaProps`"
                ),
            );
        }
        if schema.with.is_none() {
            types::check_type(&field.ty, schema.allow_float, owner, errors);
        }
        check_markers(&schema, &field.ty, errors);
        rules::check_all(
            &schema.validations,
            &rules::Node::field(&field.ty, &schema, in_atomic_map),
            errors,
        );
        out.push(Field {
            ident,
            ty: &field.ty,
            wire,
            serde,
            schema,
        });
    }
    out
}

/// Marker combinations that cannot hold whatever the type.
fn check_markers(schema: &SchemaAttrs, ty: &Type, errors: &mut Errors) {
    if let (Some((list_type, span)), Some(_)) = (&schema.list_type, &schema.list_map_keys)
        && list_type != "map"
    {
        errors.at(
            *span,
            format_args!(
                "#[schema(list_map_keys = [...])] needs list_type = \"map\", not \
                 {list_type:?}: a list keyed by fields is a map list"
            ),
        );
    }
    if let Some((list_type, span)) = &schema.list_type
        && list_type == "map"
        && schema.list_map_keys.is_none()
    {
        errors.at(
            *span,
            "#[schema(list_type = \"map\")] needs the keys that identify an item: add \
             list_map_keys = [\"name\"]",
        );
    }
    if schema.int_or_string && (schema.preserve_unknown_fields || schema.embedded_resource) {
        errors.at(
            ty.span(),
            "#[schema(int_or_string)] cannot be combined with preserve_unknown_fields or \
             embedded_resource: an int-or-string value is a scalar",
        );
    }
}

fn struct_body(
    fields: &[Field<'_>],
    container: &Serde,
    krate: &Path,
    _errors: &mut Errors,
) -> TokenStream {
    let mut out = quote! {
        let mut __schema = #krate::schema::JSONSchemaProps::object();
    };
    for field in fields {
        let ty = field.ty;
        let schema_trait = quote!(#krate::schema::Schema);
        let has_default = field.serde.default || container.default;
        if field.serde.flatten {
            out.extend(quote_spanned! {ty.span()=>
                #krate::schema::__private::flatten(
                    &mut __schema,
                    <#ty as #schema_trait>::schema(),
                    <#ty as #schema_trait>::OPTIONAL || #has_default,
                );
            });
            continue;
        }
        let wire = &field.wire;
        let base = field_schema(field, krate);
        let optional_statically = has_default || field.serde.skip_serializing_if;
        let required = if optional_statically {
            TokenStream::new()
        } else if field.schema.with.is_some() {
            quote!(__schema.required.push(#wire.to_owned());)
        } else {
            quote! {
                if !<#ty as #schema_trait>::OPTIONAL {
                    __schema.required.push(#wire.to_owned());
                }
            }
        };
        out.extend(quote! {
            {
                #base
                __schema.properties.insert(#wire.to_owned(), __field);
                #required
            }
        });
    }
    out
}

/// `let mut __field = ...;` with every field-level marker applied.
fn field_schema(field: &Field<'_>, krate: &Path) -> TokenStream {
    let ty = field.ty;
    let s = &field.schema;
    let props = quote!(#krate::schema::JSONSchemaProps);
    let mut out = match &s.with {
        Some(path) => quote_spanned!(path.span()=> let mut __field: #props = #path();),
        None => quote_spanned!(ty.span()=>
            let mut __field = <#ty as #krate::schema::Schema>::schema();
        ),
    };
    if s.int_or_string {
        out.extend(quote!(__field = #props::int_or_string();));
    }
    out.extend(markers(s, krate, "__field"));
    let list_type = s.list_type.as_ref().map(|(t, _)| t.as_str()).or_else(|| {
        (field.wire == "conditions" && types::is_vec_of_condition(ty)).then_some("map")
    });
    if let Some(list_type) = list_type {
        out.extend(quote!(__field.x_kubernetes_list_type = ::core::option::Option::Some(#list_type.to_owned());));
    }
    let keys: Vec<String> = match (&s.list_map_keys, list_type) {
        (Some((keys, _)), _) => keys.clone(),
        (None, Some("map")) if s.list_type.is_none() => vec!["type".to_owned()],
        _ => Vec::new(),
    };
    if !keys.is_empty() {
        out.extend(
            quote!(__field.x_kubernetes_list_map_keys = ::std::vec![#(#keys.to_owned()),*];),
        );
    }
    let default = match (&s.default, &field.serde.default_path) {
        (Some(expr), _) => Some(quote!(#krate::schema::__private::default_value(&(#expr)))),
        (None, Some(path)) if !field.serde.skip_serializing_if => {
            Some(quote!(#krate::schema::__private::serde_default(&#path())))
        }
        (None, None) if field.serde.default && !field.serde.skip_serializing_if => Some(
            quote_spanned!(ty.span()=> #krate::schema::__private::serde_default(&<#ty as ::core::default::Default>::default())),
        ),
        _ => None,
    };
    if let Some(default) = default {
        out.extend(quote! {
            if let ::core::option::Option::Some(__default) = #default {
                __field.default = ::core::option::Option::Some(__default);
            }
        });
    }
    let numbers = s.numbers.iter().map(|(key, expr)| {
        let name = Ident::new(key, Span::call_site());
        let value = attr::number_literal(expr).unwrap_or_default();
        if matches!(*key, "minimum" | "maximum" | "multiple_of") {
            quote!(__field.#name = ::core::option::Option::Some(#value);)
        } else {
            #[allow(clippy::cast_possible_truncation)]
            let value = value as i64;
            quote!(__field.#name = ::core::option::Option::Some(#value);)
        }
    });
    out.extend(quote!(#(#numbers)*));
    if s.exclusive_minimum {
        out.extend(quote!(__field.exclusive_minimum = true;));
    }
    if s.exclusive_maximum {
        out.extend(quote!(__field.exclusive_maximum = true;));
    }
    if s.nullable {
        out.extend(quote!(__field.nullable = true;));
    }
    if let Some(pattern) = &s.pattern {
        out.extend(quote!(__field.pattern = ::core::option::Option::Some(#pattern.to_owned());));
    }
    if let Some(format) = &s.format {
        out.extend(quote!(__field.format = ::core::option::Option::Some(#format.to_owned());));
    }
    out
}

/// Markers shared by fields and containers, applied to the schema variable `var`.
fn markers(s: &SchemaAttrs, krate: &Path, var: &str) -> TokenStream {
    let var = Ident::new(var, Span::call_site());
    let mut out = TokenStream::new();
    if let Some(text) = s.description.as_ref().or(s.doc.as_ref()) {
        out.extend(quote!(#var.description = ::core::option::Option::Some(#text.to_owned());));
    }
    if let Some(map_type) = &s.map_type {
        out.extend(quote!(#var.x_kubernetes_map_type = ::core::option::Option::Some(#map_type.to_owned());));
    }
    if s.preserve_unknown_fields {
        out.extend(
            quote!(#var.x_kubernetes_preserve_unknown_fields = ::core::option::Option::Some(true);),
        );
    }
    if s.embedded_resource {
        out.extend(quote! {
            #var.x_kubernetes_embedded_resource = true;
            #var.type_ = ::core::option::Option::Some("object".to_owned());
        });
    }
    for v in &s.validations {
        let rule = &v.rule;
        let text = |value: &Option<String>| {
            let value = value.clone().unwrap_or_default();
            quote!(#value.to_owned())
        };
        let message = text(&v.message);
        let message_expression = text(&v.message_expression.as_ref().map(|(e, _)| e.clone()));
        let field_path = text(&v.field_path);
        let reason = match &v.reason {
            Some(r) => quote!(::core::option::Option::Some(#r.to_owned())),
            None => quote!(::core::option::Option::None),
        };
        let old = match v.optional_old_self {
            Some(b) => quote!(::core::option::Option::Some(#b)),
            None => quote!(::core::option::Option::None),
        };
        out.extend(quote! {
            #var.x_kubernetes_validations.push(#krate::schema::ValidationRule {
                rule: #rule.to_owned(),
                message: #message,
                message_expression: #message_expression,
                reason: #reason,
                field_path: #field_path,
                optional_old_self: #old,
            });
        });
    }
    out
}

fn container_mods(s: &SchemaAttrs, krate: &Path) -> TokenStream {
    let mut out = markers(s, krate, "__schema");
    for (key, expr) in &s.numbers {
        let name = Ident::new(key, Span::call_site());
        #[allow(clippy::cast_possible_truncation)]
        let value = attr::number_literal(expr).unwrap_or_default() as i64;
        out.extend(quote!(__schema.#name = ::core::option::Option::Some(#value);));
    }
    out
}

/// The static `TypeInfo` SSA and strategic merge patch read for this struct.
fn merge_static(fields: &[Field<'_>], container: &SchemaAttrs, krate: &Path) -> TokenStream {
    let merge = quote!(#krate::merge);
    let none = quote!(::core::option::Option::None);
    let map_type = |t: &Option<String>| match t.as_deref() {
        Some("atomic") => quote!(::core::option::Option::Some(#merge::MapType::Atomic)),
        Some(_) => quote!(::core::option::Option::Some(#merge::MapType::Granular)),
        None => none.clone(),
    };
    let entries = fields.iter().filter(|f| !f.serde.flatten).map(|f| {
        let s = &f.schema;
        let name = &f.wire;
        let conditions = f.wire == "conditions" && types::is_vec_of_condition(f.ty);
        let list_type = match s.list_type.as_ref().map(|(t, _)| t.as_str()) {
            Some("atomic") => quote!(::core::option::Option::Some(#merge::ListType::Atomic)),
            Some("set") => quote!(::core::option::Option::Some(#merge::ListType::Set)),
            Some(_) => quote!(::core::option::Option::Some(#merge::ListType::Map)),
            None if conditions => quote!(::core::option::Option::Some(#merge::ListType::Map)),
            None => none.clone(),
        };
        let keys: Vec<String> = match &s.list_map_keys {
            Some((keys, _)) => keys.clone(),
            None if conditions && s.list_type.is_none() => vec!["type".to_owned()],
            None => Vec::new(),
        };
        let field_map_type = map_type(&s.map_type);
        let (embedded, preserve, int_or_string) = (
            s.embedded_resource,
            s.preserve_unknown_fields,
            s.int_or_string,
        );
        let ty = f.ty;
        let (wrap, nested) = if s.with.is_some() {
            (quote!(&[]), none.clone())
        } else {
            (
                quote!(<#ty as #krate::schema::Schema>::MERGE_WRAP),
                quote!(<#ty as #krate::schema::Schema>::MERGE),
            )
        };
        quote! {
            #merge::FieldInfo {
                name: #name,
                list_type: #list_type,
                list_map_keys: &[#(#keys),*],
                map_type: #field_map_type,
                patch_strategy: ::core::option::Option::None,
                patch_merge_key: ::core::option::Option::None,
                embedded_resource: #embedded,
                preserve_unknown_fields: #preserve,
                int_or_string: #int_or_string,
                wrap: #wrap,
                ty: #nested,
            }
        }
    });
    let struct_map_type = map_type(&container.map_type);
    let (preserve, embedded) = (
        container.preserve_unknown_fields,
        container.embedded_resource,
    );
    quote! {
        static __KAPI_MERGE: #merge::TypeInfo = #merge::TypeInfo {
            map_type: #struct_map_type,
            preserve_unknown_fields: #preserve,
            embedded_resource: #embedded,
            fields: &[#(#entries),*],
            defaults: &[],
            checks: &[],
        };
    }
}

/// `HasConditions` for a struct with a `conditions: Vec<Condition>` field.
fn conditions_impl(
    ident: &Ident,
    generics: &syn::Generics,
    fields: &[Field<'_>],
    krate: &Path,
) -> TokenStream {
    if !generics.params.is_empty() {
        return TokenStream::new();
    }
    let Some(field) = fields
        .iter()
        .find(|f| f.wire == "conditions" && types::is_vec_of_condition(f.ty))
    else {
        return TokenStream::new();
    };
    let member = field.ident;
    quote! {
        #[automatically_derived]
        impl #krate::crd::HasConditions for #ident {
            fn conditions(&self) -> &[#krate::meta::Condition] {
                &self.#member
            }
            fn conditions_mut(&mut self) -> &mut ::std::vec::Vec<#krate::meta::Condition> {
                &mut self.#member
            }
        }
    }
}

/// How an enum is tagged on the wire.
enum Tagging<'a> {
    External,
    Internal(&'a str),
    Adjacent,
    Untagged,
}

fn enum_body(
    data: &syn::DataEnum,
    serde: &Serde,
    owner: &Ident,
    krate: &Path,
    errors: &mut Errors,
) -> TokenStream {
    let props = quote!(#krate::schema::JSONSchemaProps);
    let tagging = match (&serde.tag, &serde.content, serde.untagged) {
        (_, _, true) => Tagging::Untagged,
        (Some(_), Some(_), _) => Tagging::Adjacent,
        (Some(tag), None, _) => Tagging::Internal(tag),
        _ => Tagging::External,
    };
    if let Tagging::Adjacent = tagging {
        errors.at(
            owner.span(),
            "#[derive(Schema)] cannot describe an adjacently tagged enum (`tag` + `content`): \
             `content` would need a different type per variant, which a structural schema \
             cannot express; drop `content` to tag internally",
        );
        return TokenStream::new();
    }

    struct Variant<'a> {
        v: &'a syn::Variant,
        wire: String,
        doc: Option<String>,
    }
    let variants: Vec<Variant<'_>> = data
        .variants
        .iter()
        .filter_map(|v| {
            let vs = Serde::parse(&v.attrs);
            // `other` only reads; `untagged` variants are the open catch-all of an enum whose
            // known values the schema lists.
            if vs.skip || vs.other || vs.untagged {
                return None;
            }
            let wire = vs
                .rename
                .clone()
                .unwrap_or_else(|| serde.rename_all.apply_to_variant(&v.ident.to_string()));
            Some(Variant {
                v,
                wire,
                doc: attr::doc_comment(&v.attrs),
            })
        })
        .collect();

    let all_unit = variants.iter().all(|v| matches!(v.v.fields, Fields::Unit));
    for variant in &variants {
        if let Fields::Unnamed(fields) = &variant.v.fields
            && fields.unnamed.len() > 1
        {
            errors.at(
                variant.v.ident.span(),
                format_args!(
                    "variant `{}` is a tuple of {} values, written as a JSON array of mixed \
                     types, which a structural schema cannot express; give it named fields",
                    variant.v.ident,
                    fields.unnamed.len()
                ),
            );
        }
    }

    match tagging {
        Tagging::External if all_unit => {
            let names = variants.iter().map(|v| &v.wire);
            quote! {
                let mut __schema = #props::string();
                __schema.enum_ = ::std::vec![#(#krate::__private::serde_json::Value::String(#names.to_owned())),*];
            }
        }
        Tagging::External => {
            if let Some(unit) = variants.iter().find(|v| matches!(v.v.fields, Fields::Unit)) {
                errors.at(
                    unit.v.ident.span(),
                    format_args!(
                        "unit variant `{}` is written as a string while the other variants are \
                         objects; a structural schema has one type per value: give it an empty \
                         struct body (`{} {{}}`) or tag the enum with #[serde(tag = \"type\")]",
                        unit.v.ident, unit.v.ident
                    ),
                );
            }
            let mut out = quote!(let mut __schema = #props::object(););
            for variant in &variants {
                let wire = &variant.wire;
                let inner = variant_schema(variant.v, serde, owner, krate, errors);
                let doc = variant.doc.as_ref().map(|d| {
                    quote!(__variant.description = ::core::option::Option::Some(#d.to_owned());)
                });
                out.extend(quote! {
                    {
                        #inner
                        #doc
                        __schema.properties.insert(#wire.to_owned(), __variant);
                        let mut __branch = #props::default();
                        __branch.required.push(#wire.to_owned());
                        __schema.one_of.push(__branch);
                    }
                });
            }
            out
        }
        Tagging::Internal(tag) => {
            check_union_fields(&variants.iter().map(|v| v.v).collect::<Vec<_>>(), errors);
            let names = variants.iter().map(|v| &v.wire);
            let mut out = quote! {
                let mut __schema = #props::object();
                let mut __tag = #props::string();
                __tag.enum_ = ::std::vec![#(#krate::__private::serde_json::Value::String(#names.to_owned())),*];
                __schema.properties.insert(#tag.to_owned(), __tag);
                __schema.required.push(#tag.to_owned());
            };
            for variant in &variants {
                if let Fields::Unnamed(f) = &variant.v.fields
                    && f.unnamed.len() > 1
                {
                    continue;
                }
                let wire = &variant.wire;
                let inner = match &variant.v.fields {
                    Fields::Unit => quote!(let __variant = #props::object();),
                    _ => variant_schema(variant.v, serde, owner, krate, errors),
                };
                out.extend(quote! {
                    {
                        #inner
                        #krate::schema::__private::tagged_variant(&mut __schema, __variant, #tag, #wire);
                    }
                });
            }
            out
        }
        Tagging::Untagged | Tagging::Adjacent => {
            check_union_fields(&variants.iter().map(|v| v.v).collect::<Vec<_>>(), errors);
            if let Some(unit) = variants.iter().find(|v| matches!(v.v.fields, Fields::Unit)) {
                errors.at(
                    unit.v.ident.span(),
                    format_args!(
                        "unit variant `{}` of an untagged enum is written as `null`, which a \
                         structural schema cannot mix with objects; give it named fields",
                        unit.v.ident
                    ),
                );
            }
            let mut out = quote!(let mut __schema = #props::object(););
            for variant in &variants {
                let inner = variant_schema(variant.v, serde, owner, krate, errors);
                out.extend(quote! {
                    {
                        #inner
                        #krate::schema::__private::variant(&mut __schema, __variant);
                    }
                });
            }
            out.extend(quote!(#krate::schema::__private::finish_union(&mut __schema);));
            out
        }
    }
}

/// `let __variant = ...;` for a newtype or struct variant.
fn variant_schema(
    variant: &syn::Variant,
    container: &Serde,
    owner: &Ident,
    krate: &Path,
    errors: &mut Errors,
) -> TokenStream {
    match &variant.fields {
        Fields::Named(named) => {
            // Struct variants take field names as written; serde's `rename_all` on the enum
            // renames variants, not their fields.
            let _ = container;
            let variant_serde = Serde::parse(&variant.attrs);
            let fields = read_fields(named.named.iter(), &variant_serde, owner, false, errors);
            let body = struct_body(&fields, &variant_serde, krate, errors);
            quote! {
                let __variant = {
                    #body
                    __schema
                };
            }
        }
        Fields::Unnamed(unnamed) => {
            let Some(field) = unnamed.unnamed.first() else {
                return quote!(let __variant = #krate::schema::JSONSchemaProps::object(););
            };
            let ty = &field.ty;
            types::check_type(ty, false, owner, errors);
            quote_spanned! {ty.span()=>
                let __variant = <#ty as #krate::schema::Schema>::schema();
            }
        }
        Fields::Unit => quote!(let __variant = #krate::schema::JSONSchemaProps::object();),
    }
}

/// Struct variants of a union merge into one object: a field name used by two variants must
/// have one type, or the merged schema would describe neither.
fn check_union_fields(variants: &[&syn::Variant], errors: &mut Errors) {
    let mut seen: Vec<(String, String, &Ident)> = Vec::new();
    for variant in variants {
        let Fields::Named(named) = &variant.fields else {
            continue;
        };
        for field in &named.named {
            let Some(ident) = &field.ident else { continue };
            let serde = Serde::parse(&field.attrs);
            let name = serde.rename.unwrap_or_else(|| ident.to_string());
            let ty = field.ty.to_token_stream_string();
            match seen.iter().find(|(n, _, _)| *n == name) {
                Some((_, other_ty, other_variant)) if *other_ty != ty => errors.at(
                    field.ty.span(),
                    format_args!(
                        "field `{name}` is `{ty}` here but `{other_ty}` in variant \
                         `{other_variant}`: the variants of an untagged or internally tagged \
                         enum share one object schema, so a field name needs one type; rename \
                         one of them"
                    ),
                ),
                Some(_) => {}
                None => seen.push((name, ty, &variant.ident)),
            }
        }
    }
}

trait TokenString {
    fn to_token_stream_string(&self) -> String;
}

impl TokenString for Type {
    fn to_token_stream_string(&self) -> String {
        quote!(#self).to_string().replace(' ', "")
    }
}
