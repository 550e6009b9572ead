//! `#[derive(Wire)]`: serde's `Serialize` and `Deserialize` for a struct of named fields, in
//! the lean form generated bindings need.
//!
//! serde's own derive emits a field enum with its visitor, a struct visitor with a map and a
//! sequence path, and a local per field, for every struct; across the ~600 structs of a
//! Kubernetes release the compiler spends most of `cargo check` type- and borrow-checking those
//! bodies. This derive emits a table of wire names, one `match` that stores a value, and a
//! `Serialize` body of one call per field; the visitor is `kapi::wire::deserialize_fields`,
//! generic and checked once in the runtime. The vocabulary is what generated code uses:
//! `crate` and `rename_all` on the struct, `rename` and `default` on a field; a field whose type
//! is spelled `Option<..>` is optional and left out when `None`.

use proc_macro2::{Literal, TokenStream};
use quote::{ToTokens as _, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr, Path, PathArguments, Type};

use crate::ast::RenameRule;
use crate::errors::Errors;

/// One field as the expansion needs it.
struct WireField<'a> {
    ident: &'a Ident,
    ty: &'a Type,
    wire: String,
    /// Spelled `Option<..>`: may be absent, skipped when `None`.
    optional: bool,
    /// `#[wire(default)]`: may be absent, always written.
    default: bool,
}

impl WireField<'_> {
    fn required(&self) -> bool {
        !self.optional && !self.default
    }
}

/// Expands `#[derive(Wire)]` on `input`: the impls, or the errors when the input is not a
/// non-generic struct with named fields or an attribute is wrong.
pub(crate) fn derive(input: &DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let (krate, rule) = container(&input.attrs, &mut errors);
    if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
        errors.at(
            input.generics.span(),
            "#[derive(Wire)] does not support generic structs",
        );
    }
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named
                .named
                .iter()
                .filter_map(|field| {
                    let ident = field.ident.as_ref()?;
                    let (rename, default) = field_attrs(&field.attrs, &mut errors);
                    Some(WireField {
                        ident,
                        ty: &field.ty,
                        wire: rename.unwrap_or_else(|| rule.apply(&ident.unraw().to_string())),
                        optional: is_option(&field.ty),
                        default,
                    })
                })
                .collect(),
            Fields::Unnamed(_) | Fields::Unit => {
                errors.at(
                    input.ident.span(),
                    "#[derive(Wire)] needs a struct with named fields: \
                     a tuple or unit struct has no JSON object form",
                );
                Vec::new()
            }
        },
        Data::Enum(data) => {
            errors.at(
                data.enum_token.span,
                "#[derive(Wire)] needs a struct with named fields, not an enum",
            );
            Vec::new()
        }
        Data::Union(data) => {
            errors.at(
                data.union_token.span,
                "#[derive(Wire)] needs a struct with named fields, not a union",
            );
            Vec::new()
        }
    };
    for (i, field) in fields.iter().enumerate() {
        if fields.iter().take(i).any(|f| f.wire == field.wire) {
            errors.at(
                field.ident.span(),
                format!(
                    "two fields are written as \"{}\"; give one a different #[wire(rename)]",
                    field.wire
                ),
            );
        }
    }
    match errors.finish() {
        Some(error) => error.into_compile_error(),
        None => expand(&input.ident, &krate, &fields),
    }
}

fn expand(ident: &Ident, krate: &Path, fields: &[WireField<'_>]) -> TokenStream {
    let serde = quote!(#krate::__private::serde);
    let result = quote!(::core::result::Result);
    let name = ident.to_string();

    // Required fields lead the table, so the runtime tracks them by position.
    let table: Vec<&WireField<'_>> = fields
        .iter()
        .filter(|f| f.required())
        .chain(fields.iter().filter(|f| !f.required()))
        .collect();
    let required = Literal::usize_unsuffixed(fields.iter().filter(|f| f.required()).count());
    let names = table.iter().map(|f| &f.wire);
    let set_body = if table.is_empty() {
        quote! {
            let _ = index;
            #krate::wire::skip(map)
        }
    } else {
        let arms = table.iter().enumerate().map(|(i, f)| {
            let (i, member) = (Literal::usize_unsuffixed(i), f.ident);
            // Spanned on the field's type, so a type serde cannot read is reported there.
            let slot = quote_spanned!(f.ty.span()=> &mut self.#member);
            quote!(#i => #krate::wire::read(#slot, map),)
        });
        quote! {
            match index {
                #(#arms)*
                _ => #krate::wire::skip(map),
            }
        }
    };

    let always = fields.iter().filter(|f| !f.optional).count();
    let mut len = Vec::new();
    if always > 0 || fields.iter().all(|f| !f.optional) {
        len.push(Literal::usize_unsuffixed(always).into_token_stream());
    }
    // `as` rather than `usize::from`: no trait to resolve, once per optional field.
    len.extend(fields.iter().filter(|f| f.optional).map(|f| {
        let member = f.ident;
        quote!((self.#member.is_some() as usize))
    }));
    let writes = fields.iter().map(|f| {
        let (member, wire) = (f.ident, &f.wire);
        let value = quote_spanned!(f.ty.span()=> &self.#member);
        if f.optional {
            quote!(.optional(#wire, #value))
        } else {
            quote!(.field(#wire, #value))
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::wire::WireFields for #ident {
            const NAME: &'static str = #name;
            const FIELDS: &'static [&'static str] = &[#(#names),*];
            const REQUIRED: usize = #required;

            fn set_field<'de, A: #serde::de::MapAccess<'de>>(
                &mut self,
                index: usize,
                map: &mut A,
            ) -> #result<(), A::Error> {
                #set_body
            }
        }

        #[automatically_derived]
        impl<'de> #serde::Deserialize<'de> for #ident {
            fn deserialize<D: #serde::Deserializer<'de>>(
                deserializer: D,
            ) -> #result<Self, D::Error> {
                #krate::wire::deserialize_fields(deserializer)
            }
        }

        #[automatically_derived]
        impl #serde::Serialize for #ident {
            fn serialize<S: #serde::Serializer>(&self, serializer: S) -> #result<S::Ok, S::Error> {
                #krate::wire::StructWriter::new(serializer, #name, #(#len)+*)
                    #(#writes)*
                    .end()
            }
        }
    }
}

/// The struct's `#[wire(crate = "..", rename_all = "..")]`.
fn container(attrs: &[Attribute], errors: &mut Errors) -> (Path, RenameRule) {
    let mut krate = None;
    let mut rule = RenameRule::None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("wire")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let value: LitStr = meta.value()?.parse()?;
                krate = Some(value.parse::<Path>()?);
            } else if meta.path.is_ident("rename_all") {
                let value: LitStr = meta.value()?.parse()?;
                match RenameRule::parse(&value.value()) {
                    Some(r) => rule = r,
                    None => {
                        return Err(syn::Error::new(
                            value.span(),
                            "unknown rename_all rule; expected one of serde's: \"camelCase\", \
                             \"snake_case\", \"PascalCase\", \"lowercase\", \"UPPERCASE\", \
                             \"SCREAMING_SNAKE_CASE\", \"kebab-case\", \"SCREAMING-KEBAB-CASE\"",
                        ));
                    }
                }
            } else {
                return Err(
                    meta.error("unknown #[wire] key on a struct; expected `crate` or `rename_all`")
                );
            }
            Ok(())
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    let krate = krate.unwrap_or_else(crate::check::default_crate);
    (krate, rule)
}

/// A field's `#[wire(rename = "..", default)]`.
fn field_attrs(attrs: &[Attribute], errors: &mut Errors) -> (Option<String>, bool) {
    let mut rename = None;
    let mut default = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("wire")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                let value: LitStr = meta.value()?.parse()?;
                rename = Some(value.value());
            } else if meta.path.is_ident("default") {
                default = true;
            } else {
                return Err(meta.error(
                    "unknown #[wire] key on a field; expected `rename = \"..\"` or `default`",
                ));
            }
            Ok(())
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    (rename, default)
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
        derive(&input).to_string()
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
    fn required_fields_lead_the_table() {
        let out = expand_str(syn::parse_quote! {
            #[wire(rename_all = "camelCase")]
            struct S {
                spec_name: Option<String>,
                #[wire(rename = "apiVersion")]
                av: String,
                #[wire(default)]
                metadata: M,
                r#type: i32,
            }
        });
        assert!(
            out.contains(r#"& ["apiVersion" , "type" , "specName" , "metadata"]"#),
            "{out}"
        );
        assert!(out.contains("const REQUIRED : usize = 2"), "{out}");
        assert!(
            out.contains("0 => :: kapi :: wire :: read (& mut self . av , map)"),
            "{out}"
        );
        assert!(
            out.contains("2 => :: kapi :: wire :: read (& mut self . spec_name"),
            "{out}"
        );
        assert!(
            out.contains("new (serializer , \"S\" , 3 + (self . spec_name . is_some () as usize))"),
            "{out}"
        );
        assert!(
            out.contains(". optional (\"specName\" , & self . spec_name)"),
            "{out}"
        );
        assert!(
            out.contains(". field (\"apiVersion\" , & self . av)"),
            "{out}"
        );
    }

    #[test]
    fn crate_path_is_used() {
        let out = expand_str(syn::parse_quote! {
            #[wire(crate = "::my::kapi")]
            struct S { a: Option<u8> }
        });
        assert!(
            out.contains("impl :: my :: kapi :: wire :: WireFields for S"),
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
        let cases: [(DeriveInput, &str); 7] = [
            (
                syn::parse_quote!(
                    enum E {
                        A,
                    }
                ),
                "not an enum",
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
                        a: u8,
                    }
                ),
                "unknown #[wire] key",
            ),
        ];
        for (input, want) in cases {
            let out = expand_str(input);
            assert!(out.contains("compile_error"), "{out}");
            assert!(out.contains(want), "{want}: {out}");
        }
    }
}
