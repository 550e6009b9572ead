//! `#[derive(Wire)]`: serde's `Serialize` and `Deserialize` in a lean form, for structs of named
//! fields and enums of unit variants: the shapes Kubernetes objects are made of.
//!
//! serde's own derive emits a field enum with its visitor, a struct visitor with a map and a
//! sequence path, and a local per field, for every struct; across the ~600 structs of a
//! Kubernetes release (or the few structs of each custom resource) the compiler spends most of
//! `cargo check` type- and borrow-checking those bodies. This derive emits a table of wire names,
//! one `match` that stores a value, and a `Serialize` body of one call per field; the visitor is
//! `kapi::wire::deserialize_fields`, generic and checked once in the runtime.
//!
//! It reads its keys from `#[wire(...)]` and from `#[serde(...)]`, with serde's meaning, so a type
//! moves from serde's derives to this one by changing its derive line, and `#[derive(Schema)]`
//! (which reads `#[serde]`) sees the same shape. Keys serde has and this derive does not are
//! errors naming the key, never silently ignored.
//!
//! Reading a struct takes one of two routes. With the container key `default` it starts from the
//! struct's `Default` and overwrites what the input names (what generated bindings use: no extra
//! code per struct). Otherwise the fields are read into a hidden struct of `Option` slots and the
//! value is built from it, so the struct needs no `Default` and a missing required field fails
//! with serde's ``missing field `name` `` error.

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::{ToTokens as _, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DataEnum, DeriveInput, Fields, Ident, LitStr, Path, PathArguments, Type,
};

use crate::errors::{Errors, Failure};
use crate::serde_attr::{self, RenameRule};

/// serde keys with a wire meaning this derive does not implement, and what to do instead.
const UNSUPPORTED: &[&str] = &[
    "flatten",
    "with",
    "serialize_with",
    "deserialize_with",
    "untagged",
    "tag",
    "content",
    "transparent",
    "alias",
    "deny_unknown_fields",
    "skip_serializing",
    "skip_deserializing",
    "getter",
    "from",
    "try_from",
    "into",
    "remote",
    "bound",
    "borrow",
    "other",
    "field_identifier",
    "variant_identifier",
    "expecting",
];

/// The keys on the struct or enum.
struct Container {
    krate: Path,
    rename_all: RenameRule,
    /// `default`: missing fields keep the struct's `Default` value.
    default: bool,
}

/// One field as the expansion needs it.
struct WireField<'a> {
    ident: &'a Ident,
    ty: &'a Type,
    wire: String,
    /// Spelled `Option<..>`: may be absent, `null` reads as `None`, left out when `None`.
    optional: bool,
    /// `default` or `default = "path"`: may be absent.
    default: Option<FieldDefault>,
    /// `skip_serializing_if = "path"`: left out when `path(&field)` is true.
    skip_if: Option<Path>,
    /// `skip`: neither read nor written; always its `Default`.
    skip: bool,
    /// `flatten` (`#[wire]` only, on a `BTreeMap<String, V>`): holds the keys no other field
    /// names, read and written inline.
    flatten: bool,
}

enum FieldDefault {
    Trait,
    Function(Path),
}

/// Expands `#[derive(Wire)]` on `input`: the impls, or the errors when the input has a shape
/// or attribute this derive does not support (with no stub: a missing `Serialize` impl is
/// reported where it is used, once).
pub(crate) fn derive(input: &DeriveInput) -> Result<TokenStream, Failure> {
    let mut errors = Errors::default();
    let container = container(&input.attrs, &mut errors);
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        errors.at(
            input.generics.span(),
            "#[derive(Wire)] does not support generic types",
        );
    }
    let expanded = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => {
                let fields = named
                    .named
                    .iter()
                    .filter_map(|field| read_field(field, &container, &mut errors))
                    .collect::<Vec<_>>();
                check_fields(&fields, &container, &mut errors);
                expand_struct(&input.ident, &container, &fields)
            }
            Fields::Unnamed(_) | Fields::Unit => {
                errors.at(
                    input.ident.span(),
                    "#[derive(Wire)] needs a struct with named fields: \
                     a tuple or unit struct has no JSON object form",
                );
                TokenStream::new()
            }
        },
        Data::Enum(data) => expand_enum(&input.ident, &container, data, &mut errors),
        Data::Union(data) => {
            errors.at(
                data.union_token.span,
                "#[derive(Wire)] supports structs with named fields and enums of unit variants, \
                 not unions",
            );
            TokenStream::new()
        }
    };
    match errors.finish() {
        Some(error) => Err(Failure::new(error, TokenStream::new())),
        None => Ok(expanded),
    }
}

fn read_field<'a>(
    field: &'a syn::Field,
    container: &Container,
    errors: &mut Errors,
) -> Option<WireField<'a>> {
    let ident = field.ident.as_ref()?;
    let mut rename_to = None;
    let mut default = None;
    let mut skip_if = None;
    let mut skip = false;
    let mut flatten = false;
    for_each_key(&field.attrs, errors, |meta, key| {
        match key {
            "rename" => rename_to = Some(string_value(meta)?.value()),
            "default" if meta.input.peek(syn::Token![=]) => {
                default = Some(FieldDefault::Function(string_value(meta)?.parse()?));
            }
            "default" => default = Some(FieldDefault::Trait),
            "skip_serializing_if" => skip_if = Some(string_value(meta)?.parse()?),
            "skip" => skip = true,
            "flatten" => flatten = true,
            _ => {
                return Err(meta.error(format_args!(
                    "unknown key `{key}` on a field; #[derive(Wire)] reads `rename`, `default`, \
                     `default = \"path\"`, `skip_serializing_if = \"path\"`, `skip` and \
                     `flatten`"
                )));
            }
        }
        Ok(())
    });
    Some(WireField {
        ident,
        ty: &field.ty,
        wire: rename_to.unwrap_or_else(|| {
            container
                .rename_all
                .apply_to_field(&ident.unraw().to_string())
        }),
        optional: is_option(&field.ty),
        default,
        skip_if,
        skip,
        flatten,
    })
}

fn check_fields(fields: &[WireField<'_>], container: &Container, errors: &mut Errors) {
    for (i, field) in fields.iter().enumerate() {
        if field.flatten && fields.iter().take(i).any(|f| f.flatten) {
            errors.at(
                field.ident.span(),
                "only one field may be `flatten`: it holds every key no other field names",
            );
        }
        if field.flatten && (field.optional || field.skip_if.is_some() || field.default.is_some()) {
            errors.at(
                field.ident.span(),
                "a `flatten` field is a map (`BTreeMap<String, V>`), empty when no key is left \
                 over: it takes no `Option`, `default` or `skip_serializing_if`",
            );
        }
        if !field.skip
            && !field.flatten
            && fields
                .iter()
                .take(i)
                .any(|f| !f.skip && f.wire == field.wire)
        {
            errors.at(
                field.ident.span(),
                format!(
                    "two fields are written as \"{}\"; give one a different `rename`",
                    field.wire
                ),
            );
        }
        if container.default && matches!(field.default, Some(FieldDefault::Function(_))) {
            errors.at(
                field.ident.span(),
                "`default = \"..\"` on a field of a struct marked `default`: the struct's \
                 `Default` already gives every missing field its value; set it there",
            );
        }
    }
}

fn expand_struct(ident: &Ident, container: &Container, fields: &[WireField<'_>]) -> TokenStream {
    let krate = &container.krate;
    let serde = quote!(#krate::__private::serde);
    let result = quote!(::core::result::Result);
    let name = ident.to_string();
    let read: Vec<&WireField<'_>> = fields.iter().filter(|f| !f.skip && !f.flatten).collect();
    let flat = fields.iter().find(|f| f.flatten && !f.skip);
    let names: Vec<&String> = read.iter().map(|f| &f.wire).collect();

    // Reading into `Self` (container `default`) or into a struct of slots built into `Self`.
    let target = if container.default {
        quote!(#ident)
    } else {
        quote!(__Slots)
    };
    let set_body = if read.is_empty() {
        quote! {
            let _ = index;
            #krate::wire::skip(map)
        }
    } else {
        let arms = read.iter().enumerate().map(|(i, f)| {
            let (i, member) = (Literal::usize_unsuffixed(i), f.ident);
            // Spanned on the field's type, so a type serde cannot read is reported there.
            let slot = quote_spanned!(f.ty.span()=> &mut self.#member);
            let reader = if container.default || f.optional {
                quote!(read)
            } else {
                quote!(read_some)
            };
            quote!(#i => #krate::wire::#reader(#slot, map),)
        });
        quote! {
            match index {
                #(#arms)*
                _ => #krate::wire::skip(map),
            }
        }
    };
    let unknown = flat.map(|f| {
        let member = f.ident;
        let slot = quote_spanned!(f.ty.span()=> &mut self.#member);
        quote! {
            const KEEPS_UNKNOWN: bool = true;

            fn set_unknown<'de, A: #serde::de::MapAccess<'de>>(
                &mut self,
                key: ::std::string::String,
                map: &mut A,
            ) -> #result<(), A::Error> {
                #krate::wire::read_unknown(#slot, key, map)
            }
        }
    });
    let fields_impl = quote! {
        #[automatically_derived]
        impl #krate::wire::WireFields for #target {
            const NAME: &'static str = #name;
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            #unknown

            fn set_field<'de, A: #serde::de::MapAccess<'de>>(
                &mut self,
                index: usize,
                map: &mut A,
            ) -> #result<(), A::Error> {
                #set_body
            }
        }
    };
    // Either the struct reads into itself, or into its slots and is built from them.
    let (slots_struct, body) = if container.default {
        (None, quote!(#krate::wire::deserialize_fields(deserializer)))
    } else {
        let slots = read.iter().chain(flat.as_slice()).map(|f| {
            // `Self` in a field's type means the struct, not the slots.
            let (member, ty) = (f.ident, replace_self(f.ty.to_token_stream(), ident));
            if f.optional || f.flatten {
                quote!(#member: #ty,)
            } else {
                quote!(#member: ::core::option::Option<#ty>,)
            }
        });
        let build = fields.iter().map(|f| {
            let (member, wire) = (f.ident, &f.wire);
            let value = if f.skip {
                quote_spanned!(f.ty.span()=> ::core::default::Default::default())
            } else if f.optional || f.flatten {
                quote!(slots.#member)
            } else {
                match &f.default {
                    Some(FieldDefault::Trait) => quote!(slots.#member.unwrap_or_default()),
                    Some(FieldDefault::Function(path)) => {
                        quote!(slots.#member.unwrap_or_else(#path))
                    }
                    None => quote!(#krate::wire::present(slots.#member, #wire)?),
                }
            };
            quote!(#member: #value,)
        });
        (
            Some(quote! {
                #[derive(Default)]
                struct __Slots {
                    #(#slots)*
                }
            }),
            quote! {
                let slots: __Slots = #krate::wire::deserialize_fields(deserializer)?;
                ::core::result::Result::Ok(Self { #(#build)* })
            },
        )
    };
    let deserialize = quote! {
        const _: () = {
            #slots_struct

            #fields_impl

            #[automatically_derived]
            impl<'de> #serde::Deserialize<'de> for #ident {
                fn deserialize<D: #serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> #result<Self, D::Error> {
                    #body
                }
            }
        };
    };

    let written: Vec<&WireField<'_>> = read;
    let always = written
        .iter()
        .filter(|f| !f.optional && f.skip_if.is_none())
        .count();
    let mut len = Vec::new();
    if always > 0 || written.iter().all(|f| !f.optional && f.skip_if.is_none()) {
        len.push(Literal::usize_unsuffixed(always).into_token_stream());
    }
    // `as` rather than `usize::from`: no trait to resolve, once per conditional field.
    len.extend(
        written
            .iter()
            .filter(|f| f.optional || f.skip_if.is_some())
            .map(|f| {
                let member = f.ident;
                match &f.skip_if {
                    Some(path) => quote!((!#path(&self.#member) as usize)),
                    None => quote!((self.#member.is_some() as usize)),
                }
            }),
    );
    let writes = written.iter().map(|f| {
        let (member, wire) = (f.ident, &f.wire);
        let value = quote_spanned!(f.ty.span()=> &self.#member);
        match &f.skip_if {
            Some(path) => quote!(.field_unless(#wire, #value, #path(&self.#member))),
            None if f.optional => quote!(.optional(#wire, #value)),
            None => quote!(.field(#wire, #value)),
        }
    });
    // With a `flatten` map the struct is written as a map: its leftover keys are not static.
    let writer = match flat {
        Some(f) => {
            let member = f.ident;
            (
                quote!(#krate::wire::MapWriter::new(serializer, ::core::option::Option::None)),
                quote!(.rest(&[#(#names),*], &self.#member)),
            )
        }
        None => (
            quote!(#krate::wire::StructWriter::new(serializer, #name, #(#len)+*)),
            TokenStream::new(),
        ),
    };
    let (writer, rest) = writer;
    quote! {
        #deserialize

        #[automatically_derived]
        impl #serde::Serialize for #ident {
            fn serialize<S: #serde::Serializer>(&self, serializer: S) -> #result<S::Ok, S::Error> {
                #writer
                    #(#writes)*
                    #rest
                    .end()
            }
        }
    }
}

/// An enum of unit variants, written as its variants' names.
fn expand_enum(
    ident: &Ident,
    container: &Container,
    data: &DataEnum,
    errors: &mut Errors,
) -> TokenStream {
    if container.default {
        errors.at(
            ident.span(),
            "`default` applies to structs; mark the default variant with #[default] and derive \
             Default instead",
        );
    }
    let mut variants = Vec::new();
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            errors.at(
                variant.ident.span(),
                format_args!(
                    "#[derive(Wire)] writes an enum as a string, so every variant must be a unit \
                     variant; `{}` carries data: derive serde's Serialize and Deserialize for this \
                     enum instead",
                    variant.ident
                ),
            );
            continue;
        }
        let mut rename_to = None;
        for_each_key(&variant.attrs, errors, |meta, key| {
            if key == "rename" {
                rename_to = Some(string_value(meta)?.value());
                Ok(())
            } else {
                Err(meta.error(format_args!(
                    "unknown key `{key}` on a variant; #[derive(Wire)] reads `rename`"
                )))
            }
        });
        let wire = rename_to.unwrap_or_else(|| {
            container
                .rename_all
                .apply_to_variant(&variant.ident.unraw().to_string())
        });
        variants.push((&variant.ident, wire));
    }
    if variants.is_empty() {
        errors.at(
            ident.span(),
            "#[derive(Wire)] needs at least one variant: an empty enum has no value to write",
        );
        return TokenStream::new();
    }
    let krate = &container.krate;
    let serde = quote!(#krate::__private::serde);
    let result = quote!(::core::result::Result);
    let name = ident.to_string();
    let wires = variants.iter().map(|(_, wire)| wire);
    let to_index = variants.iter().enumerate().map(|(i, (variant, _))| {
        let i = Literal::u32_unsuffixed(i as u32);
        quote!(Self::#variant => #i,)
    });
    let last = variants.len() - 1;
    let from_index = variants.iter().enumerate().map(|(i, (variant, _))| {
        if i == last {
            quote!(_ => Self::#variant,)
        } else {
            let i = Literal::usize_unsuffixed(i);
            quote!(#i => Self::#variant,)
        }
    });
    quote! {
        const _: () = {
            const __VARIANTS: &[&str] = &[#(#wires),*];

            #[automatically_derived]
            impl #serde::Serialize for #ident {
                fn serialize<S: #serde::Serializer>(&self, serializer: S) -> #result<S::Ok, S::Error> {
                    let index = match self {
                        #(#to_index)*
                    };
                    #krate::wire::serialize_variant(serializer, #name, index, __VARIANTS)
                }
            }

            #[automatically_derived]
            impl<'de> #serde::Deserialize<'de> for #ident {
                fn deserialize<D: #serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> #result<Self, D::Error> {
                    let index = #krate::wire::deserialize_variant(deserializer, __VARIANTS)?;
                    ::core::result::Result::Ok(match index {
                        #(#from_index)*
                    })
                }
            }
        };
    }
}

/// The container keys, from `#[wire(crate, rename_all, default)]` and serde's `rename_all` and
/// `default`.
fn container(attrs: &[Attribute], errors: &mut Errors) -> Container {
    let mut krate = None;
    let mut rename_all = RenameRule::None;
    let mut default = false;
    let parsed = serde_attr::for_each_key(attrs, |meta, key, wire| {
        match key {
            // serde's `crate` names serde; ours names kapi.
            "crate" if wire => krate = Some(string_value(meta)?.parse()?),
            "crate" => {
                string_value(meta)?;
            }
            "rename_all" => {
                let value = string_value(meta)?;
                rename_all = RenameRule::parse(&value.value()).ok_or_else(|| {
                    syn::Error::new(
                        value.span(),
                        format_args!("unknown rename_all rule; {}", RenameRule::EXPECTED),
                    )
                })?;
            }
            "default" if !meta.input.peek(syn::Token![=]) => default = true,
            _ => return Err(unsupported(meta, key, "a struct or enum", wire)),
        }
        Ok(())
    });
    parsed.into_iter().for_each(|error| errors.push(error));
    Container {
        krate: krate.unwrap_or_else(crate::check::default_crate),
        rename_all,
        default,
    }
}

/// Calls `each` with every key of the `#[wire]` and `#[serde]` attributes in `attrs` that is
/// not one of serde's keys this derive does not implement.
fn for_each_key(
    attrs: &[Attribute],
    errors: &mut Errors,
    mut each: impl FnMut(&ParseNestedMeta<'_>, &str) -> syn::Result<()>,
) {
    let parsed = serde_attr::for_each_key(attrs, |meta, key, wire| {
        // serde's `flatten` takes any type; `#[wire(flatten)]` only the map of leftover keys.
        if UNSUPPORTED.contains(&key) && !(wire && key == "flatten") {
            return Err(unsupported(meta, key, "a field or variant", wire));
        }
        each(meta, key)
    });
    parsed.into_iter().for_each(|error| errors.push(error));
}

fn string_value(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value()?.parse()
}

fn unsupported(meta: &ParseNestedMeta<'_>, key: &str, place: &str, wire: bool) -> syn::Error {
    let span: Span = meta.path.span();
    if !wire && UNSUPPORTED.contains(&key) {
        syn::Error::new(
            span,
            format!(
                "#[derive(Wire)] does not support serde's `{key}`; derive serde's Serialize and \
                 Deserialize for this type instead"
            ),
        )
    } else {
        syn::Error::new(
            span,
            format!("#[derive(Wire)] has no key `{key}` for {place}"),
        )
    }
}

/// `tokens` with every `Self` replaced by `ident`.
fn replace_self(tokens: TokenStream, ident: &Ident) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Ident(i) if i == "Self" => TokenTree::Ident(ident.clone()),
            TokenTree::Group(g) => {
                let mut group = Group::new(g.delimiter(), replace_self(g.stream(), ident));
                group.set_span(g.span());
                TokenTree::Group(group)
            }
            other => other,
        })
        .collect()
}

/// Whether `ty` is spelled `Option<T>` (any path ending in `Option` with one argument).
fn is_option(ty: &Type) -> bool {
    match ty {
        Type::Group(group) => is_option(&group.elem),
        Type::Paren(paren) => is_option(&paren.elem),
        Type::Path(path) if path.qself.is_none() => path.path.segments.last().is_some_and(|last| {
            last.ident == "Option"
                && matches!(&last.arguments,
                        PathArguments::AngleBracketed(args) if args.args.len() == 1)
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(input: DeriveInput) -> String {
        derive(&input)
            .unwrap_or_else(Failure::into_compile_error)
            .to_string()
    }

    #[test]
    fn options_are_detected_by_spelling() {
        let cases: [(Type, bool); 6] = [
            (syn::parse_quote!(Option<String>), true),
            (syn::parse_quote!(std::option::Option<Box<X>>), true),
            (syn::parse_quote!(String), false),
            (syn::parse_quote!(Vec<Option<String>>), false),
            (syn::parse_quote!(Option), false),
            (syn::parse_quote!(<T as Tr>::Option<u8>), false),
        ];
        for (ty, want) in cases {
            assert_eq!(is_option(&ty), want, "{}", ty.to_token_stream());
        }
    }

    #[test]
    fn a_default_struct_reads_into_itself() {
        let out = expand_str(syn::parse_quote! {
            #[wire(rename_all = "camelCase", default)]
            struct S {
                spec_name: Option<String>,
                #[wire(rename = "apiVersion")]
                av: String,
                r#type: i32,
            }
        });
        assert!(
            out.contains(r#"& ["specName" , "apiVersion" , "type"]"#),
            "{out}"
        );
        assert!(
            out.contains("impl :: kapi :: wire :: WireFields for S"),
            "{out}"
        );
        assert!(!out.contains("__Slots"), "{out}");
        assert!(
            out.contains("1 => :: kapi :: wire :: read (& mut self . av , map)"),
            "{out}"
        );
        assert!(
            out.contains("new (serializer , \"S\" , 2 + (self . spec_name . is_some () as usize))"),
            "{out}"
        );
        assert!(
            out.contains(". optional (\"specName\" , & self . spec_name)"),
            "{out}"
        );
    }

    #[test]
    fn other_structs_read_into_slots() {
        let out = expand_str(syn::parse_quote! {
            #[serde(rename_all = "camelCase")]
            struct S {
                image: String,
                #[serde(default)]
                replicas: i32,
                #[serde(default = "five")]
                max: i32,
                #[serde(default, skip_serializing_if = "Vec::is_empty")]
                args: Vec<String>,
                backend: Option<String>,
                #[serde(skip)]
                cache: u8,
            }
        });
        for want in [
            "impl :: kapi :: wire :: WireFields for __Slots",
            "0 => :: kapi :: wire :: read_some (& mut self . image , map)",
            "4 => :: kapi :: wire :: read (& mut self . backend , map)",
            "image : :: kapi :: wire :: present (slots . image , \"image\") ?",
            "replicas : slots . replicas . unwrap_or_default ()",
            "max : slots . max . unwrap_or_else (five)",
            "cache : :: core :: default :: Default :: default ()",
            ". field_unless (\"args\" , & self . args , Vec :: is_empty (& self . args))",
            "3 + (! Vec :: is_empty (& self . args) as usize)",
        ] {
            assert!(out.contains(want), "{want}\n{out}");
        }
        assert!(!out.contains("\"cache\""), "{out}");
    }

    #[test]
    fn unit_enums_are_strings() {
        let out = expand_str(syn::parse_quote! {
            #[serde(rename_all = "lowercase")]
            enum Strategy {
                Recreate,
                #[serde(rename = "rolling")]
                RollingUpdate,
                OnDelete,
            }
        });
        for want in [
            r#"& ["recreate" , "rolling" , "ondelete"]"#,
            "Self :: RollingUpdate => 1 ,",
            "0 => Self :: Recreate , 1 => Self :: RollingUpdate , _ => Self :: OnDelete ,",
        ] {
            assert!(out.contains(want), "{want}\n{out}");
        }
    }

    #[test]
    fn crate_path_is_used() {
        let out = expand_str(syn::parse_quote! {
            #[wire(crate = "::my::kapi")]
            struct S { a: Option<u8> }
        });
        assert!(
            out.contains("impl :: my :: kapi :: wire :: WireFields for __Slots"),
            "{out}"
        );
        // Every runtime path goes through the override.
        assert_eq!(
            out.matches(":: kapi ::").count(),
            out.matches(":: my :: kapi ::").count(),
            "{out}"
        );
    }

    #[test]
    fn unsupported_shapes_are_errors() {
        let cases: [(DeriveInput, &str); 10] = [
            (
                syn::parse_quote!(
                    enum E {
                        A(u8),
                    }
                ),
                "must be a unit variant",
            ),
            (
                syn::parse_quote!(
                    enum V {}
                ),
                "at least one variant",
            ),
            (
                syn::parse_quote!(
                    struct T(u8);
                ),
                "named fields",
            ),
            (
                syn::parse_quote!(
                    struct U;
                ),
                "named fields",
            ),
            (
                syn::parse_quote!(
                    struct G<T> {
                        a: T,
                    }
                ),
                "generic",
            ),
            (
                syn::parse_quote!(
                    struct D {
                        a: u8,
                        #[wire(rename = "a")]
                        b: u8,
                    }
                ),
                "two fields",
            ),
            (
                syn::parse_quote!(
                    #[wire(rename_all = "Title")]
                    struct R {
                        a: u8,
                    }
                ),
                "rename_all",
            ),
            (
                syn::parse_quote!(
                    struct K {
                        #[wire(flatten)]
                        a: Option<u8>,
                    }
                ),
                "a `flatten` field is a map",
            ),
            (
                syn::parse_quote!(
                    struct F {
                        #[serde(flatten)]
                        a: u8,
                    }
                ),
                "does not support serde's `flatten`",
            ),
            (
                syn::parse_quote!(
                    #[serde(default)]
                    struct P {
                        #[serde(default = "one")]
                        a: u8,
                    }
                ),
                "already gives every missing field",
            ),
        ];
        for (input, want) in cases {
            let out = expand_str(input);
            assert!(out.contains("compile_error"), "{out}");
            assert!(out.contains(want), "{want}: {out}");
        }
    }
}
