//! The derive input as the other stages need it: the struct's name, visibility and named fields,
//! each with the name serde writes it under.
//!
//! Fields are found by their wire name rather than their Rust name because the contract is about
//! JSON: a field called `api_version` that serde writes as `api_version` is a bug the derive must
//! catch, and a field called `av` renamed to `apiVersion` is fine. Only the keys that change a
//! name are read, through `serde_attr` from `#[serde(...)]` and `#[wire(...)]`
//! (`#[derive(kapi::Wire)]`, which generated code uses); those derives report anything malformed
//! in their attributes.

use syn::ext::IdentExt;
use syn::{Data, DeriveInput, Fields, Generics, Ident, Type, Visibility};

use crate::errors::Errors;
use crate::serde_attr::Serde;

/// The struct a derive was applied to.
pub(crate) struct Input<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) vis: &'a Visibility,
    pub(crate) generics: &'a Generics,
    /// The named fields, or `None` when the input is not a struct with named fields (already
    /// reported).
    pub(crate) fields: Option<Vec<Field<'a>>>,
}

/// One named field.
pub(crate) struct Field<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    /// The key serde reads and writes, after `rename` and the container's `rename_all`.
    pub(crate) wire_name: String,
}

impl<'a> Input<'a> {
    /// Reads the struct, reporting inputs that cannot be a kind.
    pub(crate) fn from_syn(input: &'a DeriveInput, errors: &mut Errors) -> Self {
        let fields = match &input.data {
            Data::Struct(data) => match &data.fields {
                Fields::Named(named) => {
                    let rule = Serde::parse(&input.attrs).rename_all;
                    Some(
                        named
                            .named
                            .iter()
                            .filter_map(|field| {
                                let ident = field.ident.as_ref()?;
                                let wire_name =
                                    Serde::parse(&field.attrs).rename.unwrap_or_else(|| {
                                        rule.apply_to_field(&ident.unraw().to_string())
                                    });
                                Some(Field {
                                    ident,
                                    ty: &field.ty,
                                    wire_name,
                                })
                            })
                            .collect(),
                    )
                }
                Fields::Unnamed(_) | Fields::Unit => {
                    errors.at(
                        input.ident.span(),
                        "#[derive(Resource)] needs a struct with named fields \
                         (`apiVersion`, `kind`, `metadata`, ...); \
                         a tuple or unit struct has no JSON object form",
                    );
                    None
                }
            },
            Data::Enum(data) => {
                errors.at(
                    data.enum_token.span,
                    "#[derive(Resource)] needs a struct with named fields, not an enum: \
                     a kind is one JSON object with `apiVersion`, `kind` and `metadata`",
                );
                None
            }
            Data::Union(data) => {
                errors.at(
                    data.union_token.span,
                    "#[derive(Resource)] needs a struct with named fields, not a union",
                );
                None
            }
        };
        Input {
            ident: &input.ident,
            vis: &input.vis,
            generics: &input.generics,
            fields,
        }
    }

    /// The field serde writes under `wire_name`.
    pub(crate) fn field(&self, wire_name: &str) -> Option<&Field<'a>> {
        self.fields
            .as_deref()?
            .iter()
            .find(|field| field.wire_name == wire_name)
    }

    /// The field whose Rust name is `ident`.
    pub(crate) fn field_by_ident(&self, ident: &str) -> Option<&Field<'a>> {
        self.fields
            .as_deref()?
            .iter()
            .find(|field| field.ident.unraw() == ident)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_follow_rename_and_rename_all() {
        let input: DeriveInput = syn::parse_quote! {
            #[serde(rename_all = "camelCase")]
            struct S {
                api_version: u8,
                #[serde(default, rename = "kind", skip_serializing_if = "x")]
                k: u8,
                #[serde(rename(serialize = "meta", deserialize = "m"))]
                r#metadata: u8,
            }
        };
        let mut errors = Errors::default();
        let parsed = Input::from_syn(&input, &mut errors);
        assert!(errors.finish().is_none());
        let names: Vec<_> = parsed
            .fields
            .iter()
            .flatten()
            .map(|f| f.wire_name.as_str())
            .collect();
        assert_eq!(names, ["apiVersion", "kind", "meta"]);
    }

    #[test]
    fn wire_names_follow_wire_attributes() {
        let input: DeriveInput = syn::parse_quote! {
            #[wire(crate = "::kapi", rename_all = "camelCase")]
            struct S {
                #[wire(rename = "apiVersion")]
                av: u8,
                #[wire(default)]
                object_meta: u8,
            }
        };
        let mut errors = Errors::default();
        let parsed = Input::from_syn(&input, &mut errors);
        assert!(errors.finish().is_none());
        let names: Vec<_> = parsed
            .fields
            .iter()
            .flatten()
            .map(|f| f.wire_name.as_str())
            .collect();
        assert_eq!(names, ["apiVersion", "objectMeta"]);
    }
}
