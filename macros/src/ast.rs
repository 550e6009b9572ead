//! The derive input as the other stages need it: the struct's name, visibility and named fields,
//! each with the name serde writes it under.
//!
//! Fields are found by their wire name rather than their Rust name because the contract is about
//! JSON: a field called `api_version` that serde writes as `api_version` is a bug the derive must
//! catch, and a field called `av` renamed to `apiVersion` is fine. Only the keys that change a
//! name are read, from `#[serde(...)]` and from `#[wire(...)]` (`#[derive(kapi::Wire)]`, which
//! generated code uses); those derives report anything malformed in their attributes.

use syn::ext::IdentExt;
use syn::{Attribute, Data, DeriveInput, Fields, Generics, Ident, LitStr, Type, Visibility};

use crate::errors::Errors;

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
                    let rule = container_rename_rule(&input.attrs);
                    Some(
                        named
                            .named
                            .iter()
                            .filter_map(|field| {
                                let ident = field.ident.as_ref()?;
                                let wire_name = field_rename(&field.attrs)
                                    .unwrap_or_else(|| rule.apply(&ident.unraw().to_string()));
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

/// serde's `rename_all` rules, as they apply to snake_case field names.
#[derive(Clone, Copy)]
pub(crate) enum RenameRule {
    None,
    Lower,
    Upper,
    Pascal,
    Camel,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    fn from_name(name: &str) -> Self {
        // An unknown rule is the owning derive's to report.
        Self::parse(name).unwrap_or(Self::None)
    }

    /// The rule serde calls `name`, if it has one.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "lowercase" => Self::Lower,
            "UPPERCASE" => Self::Upper,
            "PascalCase" => Self::Pascal,
            "camelCase" => Self::Camel,
            "SCREAMING_SNAKE_CASE" => Self::ScreamingSnake,
            "kebab-case" => Self::Kebab,
            "SCREAMING-KEBAB-CASE" => Self::ScreamingKebab,
            // `snake_case` leaves field names alone.
            "snake_case" => Self::None,
            _ => return None,
        })
    }

    /// `field` (a snake_case Rust name) as the rule writes it.
    pub(crate) fn apply(self, field: &str) -> String {
        match self {
            Self::None => field.to_owned(),
            Self::Lower => field.to_ascii_lowercase(),
            Self::Upper | Self::ScreamingSnake => field.to_ascii_uppercase(),
            Self::Pascal | Self::Camel => {
                let mut out = String::with_capacity(field.len());
                let mut capitalize = matches!(self, Self::Pascal);
                for c in field.chars() {
                    if c == '_' {
                        capitalize = true;
                    } else if capitalize {
                        out.push(c.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            }
            Self::Kebab => field.replace('_', "-"),
            Self::ScreamingKebab => field.replace('_', "-").to_ascii_uppercase(),
        }
    }
}

/// The container's `#[serde(rename_all = "...")]`, using the serialize side when split.
fn container_rename_rule(attrs: &[Attribute]) -> RenameRule {
    let mut rule = RenameRule::None;
    for_each_serde_key(attrs, "rename_all", |name| {
        rule = RenameRule::from_name(name)
    });
    rule
}

/// The field's `#[serde(rename = "...")]`, using the serialize side when split.
fn field_rename(attrs: &[Attribute]) -> Option<String> {
    let mut rename = None;
    for_each_serde_key(attrs, "rename", |name| rename = Some(name.to_owned()));
    rename
}

/// Calls `found` with the value of `key = "..."` or `key(serialize = "...")` in `#[serde(...)]`
/// or `#[wire(...)]`.
fn for_each_serde_key(attrs: &[Attribute], key: &str, mut found: impl FnMut(&str)) {
    let naming = |attr: &&Attribute| attr.path().is_ident("serde") || attr.path().is_ident("wire");
    for attr in attrs.iter().filter(naming) {
        // A malformed serde attribute is reported by serde's own derive; reading stops there.
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) {
                if meta.input.peek(syn::Token![=]) {
                    let value: LitStr = meta.value()?.parse()?;
                    found(&value.value());
                } else {
                    meta.parse_nested_meta(|side| {
                        let value: LitStr = side.value()?.parse()?;
                        if side.path.is_ident("serialize") {
                            found(&value.value());
                        }
                        Ok(())
                    })?;
                }
            } else {
                crate::attr::skip_value(&meta)?;
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_rules_match_serde() {
        let cases = [
            ("camelCase", "api_version", "apiVersion"),
            ("camelCase", "metadata", "metadata"),
            ("PascalCase", "api_version", "ApiVersion"),
            ("lowercase", "Kind", "kind"),
            ("UPPERCASE", "kind", "KIND"),
            ("kebab-case", "api_version", "api-version"),
            ("SCREAMING-KEBAB-CASE", "api_version", "API-VERSION"),
            ("snake_case", "api_version", "api_version"),
        ];
        for (rule, field, want) in cases {
            assert_eq!(
                RenameRule::from_name(rule).apply(field),
                want,
                "{rule} {field}"
            );
        }
    }

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
