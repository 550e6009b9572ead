//! The one view of serde's attributes every derive shares: `#[serde(...)]` and `#[wire(...)]`
//! (the attribute of `#[derive(kapi::Wire)]`, whose keys have serde's meaning) on a container,
//! field or variant, read into [`Serde`]; and serde's `rename_all` rules ([`RenameRule`]).
//!
//! [`for_each_key`] is the one walk over those attributes. [`Serde::parse`] reads on top of it
//! leniently, for the derives that only need to know the wire shape (`Resource`'s field names,
//! `Schema`): a malformed serde attribute is serde's own derive to report, so reading an
//! attribute stops at its first malformed key. `#[derive(Wire)]` implements the keys itself, so
//! it walks the same keys strictly and reports each one it does not support (`wire` module).

use proc_macro2::Span;
use syn::ext::IdentExt as _;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned as _;
use syn::{Attribute, LitStr, Path};

use crate::attr::skip_value;

/// serde's attribute.
pub(crate) const SERDE: &str = "serde";
/// `#[derive(Wire)]`'s attribute: serde's keys plus `crate`.
pub(crate) const WIRE: &str = "wire";

/// Calls `each` with every key of the `#[serde]` and `#[wire]` attributes in `attrs`, its name
/// and whether it was written in `#[wire]`; returns the errors `each` or the parser gave, one
/// per attribute (an error ends the walk of its attribute).
pub(crate) fn for_each_key(
    attrs: &[Attribute],
    mut each: impl FnMut(&ParseNestedMeta<'_>, &str, bool) -> syn::Result<()>,
) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    for attr in attrs {
        let wire = attr.path().is_ident(WIRE);
        if !wire && !attr.path().is_ident(SERDE) {
            continue;
        }
        let parsed = attr.parse_nested_meta(|meta| {
            let key = meta
                .path
                .get_ident()
                .map(|i| i.unraw().to_string())
                .unwrap_or_else(|| quote::ToTokens::to_token_stream(&meta.path).to_string());
            each(&meta, &key, wire)
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    errors
}

/// The serde keys that change a value's wire shape, on one container, field or variant.
#[derive(Default)]
pub(crate) struct Serde {
    /// `rename`, the serialize side when split.
    pub(crate) rename: Option<String>,
    /// `rename_all`, the serialize side when split; an unknown rule renames nothing.
    pub(crate) rename_all: RenameRule,
    pub(crate) default: bool,
    /// `default = "path"`.
    pub(crate) default_path: Option<Path>,
    /// `skip`, or both `skip_serializing` and `skip_deserializing`.
    pub(crate) skip: bool,
    /// `skip_serializing_if`, or `skip_serializing` alone (written but never read back, so a
    /// reader must not require it).
    pub(crate) skip_serializing_if: bool,
    pub(crate) flatten: bool,
    pub(crate) untagged: bool,
    pub(crate) tag: Option<String>,
    pub(crate) content: Option<String>,
    pub(crate) transparent: bool,
    pub(crate) other: bool,
    /// `with`, `serialize_with` or `deserialize_with`: the wire form is custom.
    pub(crate) with: Option<Span>,
}

impl Serde {
    /// Reads the `#[serde]` and `#[wire]` attributes of one item, leniently.
    pub(crate) fn parse(attrs: &[Attribute]) -> Self {
        let mut out = Serde::default();
        let (mut skip_ser, mut skip_de) = (false, false);
        // Malformed serde attributes are serde's to report; `Wire` reports its own.
        let _ = for_each_key(attrs, |meta, key, _| {
            match key {
                "rename" => out.rename = serialize_side(meta)?,
                "rename_all" => {
                    out.rename_all = serialize_side(meta)?
                        .and_then(|rule| RenameRule::parse(&rule))
                        .unwrap_or_default();
                }
                "default" => {
                    out.default = true;
                    if meta.input.peek(syn::Token![=]) {
                        let lit: LitStr = meta.value()?.parse()?;
                        out.default_path = lit.parse().ok();
                    }
                }
                "skip" => out.skip = true,
                "skip_serializing" => skip_ser = true,
                "skip_deserializing" => skip_de = true,
                "skip_serializing_if" => {
                    out.skip_serializing_if = true;
                    skip_value(meta)?;
                }
                "flatten" => out.flatten = true,
                "untagged" => out.untagged = true,
                "transparent" => out.transparent = true,
                "other" => out.other = true,
                "tag" => out.tag = serialize_side(meta)?,
                "content" => out.content = serialize_side(meta)?,
                "with" | "serialize_with" | "deserialize_with" => {
                    out.with = Some(meta.path.span());
                    skip_value(meta)?;
                }
                _ => skip_value(meta)?,
            }
            Ok(())
        });
        out.skip |= skip_ser && skip_de;
        out.skip_serializing_if |= skip_ser;
        out
    }
}

/// The value of `key = "..."`, or of `serialize = "..."` in `key(serialize = "...", ...)`.
fn serialize_side(meta: &ParseNestedMeta<'_>) -> syn::Result<Option<String>> {
    if meta.input.peek(syn::Token![=]) {
        let lit: LitStr = meta.value()?.parse()?;
        Ok(Some(lit.value()))
    } else if meta.input.peek(syn::token::Paren) {
        let mut found = None;
        meta.parse_nested_meta(|side| {
            let lit: LitStr = side.value()?.parse()?;
            if side.path.is_ident("serialize") {
                found = Some(lit.value());
            }
            Ok(())
        })?;
        Ok(found)
    } else {
        Ok(None)
    }
}

/// serde's `rename_all` rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum RenameRule {
    /// No rule: names as written.
    #[default]
    None,
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameRule {
    /// The rules' names, for an error about an unknown one.
    pub(crate) const EXPECTED: &str = "expected one of serde's: \"camelCase\", \"snake_case\", \
         \"PascalCase\", \"lowercase\", \"UPPERCASE\", \"SCREAMING_SNAKE_CASE\", \"kebab-case\", \
         \"SCREAMING-KEBAB-CASE\"";

    /// The rule serde calls `name`, if it has one.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "lowercase" => Self::Lower,
            "UPPERCASE" => Self::Upper,
            "PascalCase" => Self::Pascal,
            "camelCase" => Self::Camel,
            "snake_case" => Self::Snake,
            "SCREAMING_SNAKE_CASE" => Self::ScreamingSnake,
            "kebab-case" => Self::Kebab,
            "SCREAMING-KEBAB-CASE" => Self::ScreamingKebab,
            _ => return None,
        })
    }

    /// `field` (a snake_case Rust name) as the rule writes it.
    pub(crate) fn apply_to_field(self, field: &str) -> String {
        match self {
            Self::None | Self::Snake => field.to_owned(),
            Self::Lower => field.to_ascii_lowercase(),
            Self::Upper | Self::ScreamingSnake => field.to_ascii_uppercase(),
            Self::Pascal | Self::Camel => {
                let mut out = String::with_capacity(field.len());
                let mut capitalize = self == Self::Pascal;
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

    /// `variant` (a PascalCase Rust name) as the rule writes it: split into words at each
    /// uppercase letter, as serde does.
    pub(crate) fn apply_to_variant(self, variant: &str) -> String {
        let mut words: Vec<String> = Vec::new();
        for c in variant.chars() {
            if c.is_uppercase() || words.is_empty() {
                words.push(String::new());
            }
            if let Some(word) = words.last_mut() {
                word.extend(c.to_lowercase());
            }
        }
        let capitalized = |w: &String| {
            let mut chars = w.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        };
        match self {
            Self::None => variant.to_owned(),
            Self::Lower => words.concat(),
            Self::Upper => words.concat().to_uppercase(),
            Self::Pascal => words.iter().map(capitalized).collect(),
            Self::Camel => words
                .iter()
                .enumerate()
                .map(|(i, w)| if i == 0 { w.clone() } else { capitalized(w) })
                .collect(),
            Self::Snake => words.join("_"),
            Self::ScreamingSnake => words.join("_").to_uppercase(),
            Self::Kebab => words.join("-"),
            Self::ScreamingKebab => words.join("-").to_uppercase(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rename(rule: &str, name: &str, variant: bool) -> String {
        let rule = RenameRule::parse(rule).expect("a rule");
        if variant {
            rule.apply_to_variant(name)
        } else {
            rule.apply_to_field(name)
        }
    }

    #[test]
    fn renames_like_serde() {
        let cases = [
            ("camelCase", "container_port", false, "containerPort"),
            ("PascalCase", "container_port", false, "ContainerPort"),
            ("lowercase", "container_port", false, "container_port"),
            ("UPPERCASE", "container_port", false, "CONTAINER_PORT"),
            ("snake_case", "container_port", false, "container_port"),
            ("SCREAMING_SNAKE_CASE", "api_version", false, "API_VERSION"),
            ("kebab-case", "api_version", false, "api-version"),
            ("SCREAMING-KEBAB-CASE", "api_version", false, "API-VERSION"),
            ("camelCase", "RollingUpdate", true, "rollingUpdate"),
            ("camelCase", "DigitalSignature", true, "digitalSignature"),
            ("PascalCase", "dns_names", false, "DnsNames"),
            ("PascalCase", "RollingUpdate", true, "RollingUpdate"),
            ("lowercase", "RollingUpdate", true, "rollingupdate"),
            ("UPPERCASE", "RollingUpdate", true, "ROLLINGUPDATE"),
            ("snake_case", "RollingUpdate", true, "rolling_update"),
            (
                "SCREAMING_SNAKE_CASE",
                "RollingUpdate",
                true,
                "ROLLING_UPDATE",
            ),
            ("kebab-case", "RollingUpdate", true, "rolling-update"),
            ("SCREAMING-KEBAB-CASE", "HTTPRoute", true, "H-T-T-P-ROUTE"),
        ];
        for (rule, name, variant, want) in cases {
            assert_eq!(rename(rule, name, variant), want, "{rule} {name}");
        }
        assert_eq!(RenameRule::parse("Title"), None);
        assert_eq!(RenameRule::None.apply_to_field("a_b"), "a_b");
        assert_eq!(RenameRule::None.apply_to_variant("AB"), "AB");
    }

    #[test]
    fn reads_serde_and_wire_keys_with_the_serialize_side() {
        let item: syn::DeriveInput = syn::parse_quote! {
            #[serde(rename_all(serialize = "camelCase", deserialize = "kebab-case"), tag = "t")]
            #[wire(crate = "::kapi", default)]
            struct S;
        };
        let serde = Serde::parse(&item.attrs);
        assert_eq!(serde.rename_all, RenameRule::Camel);
        assert_eq!(serde.tag.as_deref(), Some("t"));
        assert!(serde.default);
        let field: syn::Field = syn::parse_quote! {
            #[serde(skip_serializing, rename(serialize = "b"), with = "m")]
            a: i32
        };
        let serde = Serde::parse(&field.attrs);
        assert_eq!(serde.rename.as_deref(), Some("b"));
        assert!(serde.skip_serializing_if && !serde.skip && serde.with.is_some());
    }
}
