//! The attributes `#[derive(Schema)]` reads besides serde's (which `serde_attr` reads): doc
//! comments and the `#[schema(...)]` vocabulary named after kubebuilder markers.
//!
//! `#[schema(...)]` is ours, so every mistake in it is reported with the fix.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned as _;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Path};

use crate::attr::skip_value;
use crate::errors::Errors;

/// The attribute this derive reads.
pub(crate) const SCHEMA: &str = "schema";

/// Keys allowed on a field.
const FIELD_KEYS: &[&str] = &[
    "list_type",
    "list_map_keys",
    "map_type",
    "preserve_unknown_fields",
    "int_or_string",
    "embedded_resource",
    "nullable",
    "allow_float",
    "validation",
    "default",
    "minimum",
    "maximum",
    "exclusive_minimum",
    "exclusive_maximum",
    "multiple_of",
    "pattern",
    "format",
    "min_length",
    "max_length",
    "min_items",
    "max_items",
    "min_properties",
    "max_properties",
    "description",
    "with",
];

/// Keys allowed on a struct or enum.
const CONTAINER_KEYS: &[&str] = &[
    "map_type",
    "preserve_unknown_fields",
    "embedded_resource",
    "validation",
    "min_properties",
    "max_properties",
    "description",
    "crate",
];

const VALIDATION_KEYS: &[&str] = &[
    "rule",
    "message",
    "message_expression",
    "reason",
    "field_path",
    "optional_old_self",
];

const LIST_TYPES: &[&str] = &["atomic", "set", "map"];
const MAP_TYPES: &[&str] = &["atomic", "granular"];
const REASONS: &[&str] = &[
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueRequired",
    "FieldValueDuplicate",
];

/// One `validation(...)`.
pub(crate) struct Validation {
    pub(crate) rule: String,
    /// The rule's string literal, where a rule that does not compile is reported.
    pub(crate) rule_span: Span,
    pub(crate) message: Option<String>,
    pub(crate) message_expression: Option<(String, Span)>,
    pub(crate) reason: Option<String>,
    pub(crate) field_path: Option<String>,
    pub(crate) optional_old_self: Option<bool>,
}

/// `#[schema(...)]` on a field or container, plus the doc comment.
#[derive(Default)]
pub(crate) struct SchemaAttrs {
    pub(crate) doc: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) list_type: Option<(String, Span)>,
    pub(crate) list_map_keys: Option<(Vec<String>, Span)>,
    pub(crate) map_type: Option<String>,
    pub(crate) preserve_unknown_fields: bool,
    pub(crate) int_or_string: bool,
    pub(crate) embedded_resource: bool,
    pub(crate) nullable: bool,
    pub(crate) allow_float: bool,
    pub(crate) validations: Vec<Validation>,
    pub(crate) default: Option<Expr>,
    pub(crate) numbers: Vec<(&'static str, Expr)>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) exclusive_maximum: bool,
    pub(crate) pattern: Option<String>,
    pub(crate) format: Option<String>,
    pub(crate) with: Option<Path>,
    pub(crate) krate: Option<Path>,
}

/// Where `#[schema(...)]` was written, which decides the keys it may hold.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Container,
    Field,
}

impl SchemaAttrs {
    pub(crate) fn parse(attrs: &[Attribute], place: Place, errors: &mut Errors) -> Self {
        let mut out = SchemaAttrs {
            doc: doc_comment(attrs),
            ..SchemaAttrs::default()
        };
        let keys = match place {
            Place::Container => CONTAINER_KEYS,
            Place::Field => FIELD_KEYS,
        };
        let place_name = match place {
            Place::Container => "a struct or enum",
            Place::Field => "a field",
        };
        for attr in attrs.iter().filter(|a| a.path().is_ident(SCHEMA)) {
            if let Err(error) =
                attr.parse_nested_meta(|meta| out.key(&meta, keys, place_name, errors))
            {
                errors.push(error);
            }
        }
        out
    }

    fn key(
        &mut self,
        meta: &ParseNestedMeta<'_>,
        keys: &[&'static str],
        place: &str,
        errors: &mut Errors,
    ) -> syn::Result<()> {
        let Some(key) = keys.iter().copied().find(|k| meta.path.is_ident(k)) else {
            let name = meta
                .path
                .get_ident()
                .map(ToString::to_string)
                .unwrap_or_default();
            errors.at(
                meta.path.span(),
                format_args!(
                    "unknown key `{name}` in #[schema(...)] on {place}; expected one of: {}",
                    keys.join(", ")
                ),
            );
            return skip_value(meta);
        };
        let span = meta.path.span();
        match key {
            "preserve_unknown_fields" => self.preserve_unknown_fields = flag(meta, key, errors)?,
            "int_or_string" => self.int_or_string = flag(meta, key, errors)?,
            "embedded_resource" => self.embedded_resource = flag(meta, key, errors)?,
            "nullable" => self.nullable = flag(meta, key, errors)?,
            "allow_float" => self.allow_float = flag(meta, key, errors)?,
            "exclusive_minimum" => self.exclusive_minimum = flag(meta, key, errors)?,
            "exclusive_maximum" => self.exclusive_maximum = flag(meta, key, errors)?,
            "list_type" => {
                self.list_type =
                    one_of(string(meta, key, errors)?, key, LIST_TYPES, errors).map(|v| (v, span));
            }
            "map_type" => {
                self.map_type = one_of(string(meta, key, errors)?, key, MAP_TYPES, errors);
            }
            "list_map_keys" => {
                self.list_map_keys = string_list(meta, key, errors)?.map(|v| (v, span));
            }
            "pattern" => self.pattern = string(meta, key, errors)?.map(|s| s.0),
            "format" => self.format = string(meta, key, errors)?.map(|s| s.0),
            "description" => self.description = string(meta, key, errors)?.map(|s| s.0),
            "default" => self.default = Some(meta.value()?.parse()?),
            "with" => self.with = Some(meta.value()?.parse()?),
            "crate" => {
                if let Some((path, span)) = string(meta, key, errors)? {
                    match LitStr::new(&path, span).parse::<Path>() {
                        Ok(path) => self.krate = Some(path),
                        Err(_) => errors.at(
                            span,
                            format_args!(
                                "#[schema(crate = {path:?})] is not a path: write e.g. \
                                 #[schema(crate = \"::kapi\")]"
                            ),
                        ),
                    }
                }
            }
            "validation" => {
                if let Some(v) = validation(meta, errors)? {
                    self.validations.push(v);
                }
            }
            number => {
                let value: Expr = meta.value()?.parse()?;
                if number_literal(&value).is_none() {
                    errors.at(
                        value.span(),
                        format_args!(
                            "#[schema({number} = ...)] takes a number literal: write e.g. \
                             #[schema({number} = 1)]"
                        ),
                    );
                } else {
                    self.numbers.push((number, value));
                }
            }
        }
        Ok(())
    }
}

/// The value of a number literal, possibly negative.
pub(crate) fn number_literal(expr: &Expr) -> Option<f64> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<f64>().ok(),
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => f.base10_parse::<f64>().ok(),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => number_literal(&u.expr).map(|v| -v),
        Expr::Group(g) => number_literal(&g.expr),
        _ => None,
    }
}

fn flag(meta: &ParseNestedMeta<'_>, key: &str, errors: &mut Errors) -> syn::Result<bool> {
    if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
        errors.at(
            meta.path.span(),
            format_args!("#[schema({key})] takes no value: write just `{key}`"),
        );
        skip_value(meta)?;
        return Ok(false);
    }
    Ok(true)
}

fn string(
    meta: &ParseNestedMeta<'_>,
    key: &str,
    errors: &mut Errors,
) -> syn::Result<Option<(String, Span)>> {
    if !meta.input.peek(syn::Token![=]) {
        errors.at(
            meta.path.span(),
            format_args!("#[schema({key})] needs a value: write #[schema({key} = \"...\")]"),
        );
        skip_value(meta)?;
        return Ok(None);
    }
    let expr: Expr = meta.value()?.parse()?;
    match &expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Ok(Some((s.value(), s.span()))),
        _ => {
            errors.at(
                expr.span(),
                format_args!(
                    "#[schema({key} = ...)] takes a string: write #[schema({key} = \"...\")]"
                ),
            );
            Ok(None)
        }
    }
}

fn string_list(
    meta: &ParseNestedMeta<'_>,
    key: &str,
    errors: &mut Errors,
) -> syn::Result<Option<Vec<String>>> {
    let expr: Expr = meta.value()?.parse()?;
    let strings = match &expr {
        Expr::Array(array) => array
            .elems
            .iter()
            .map(|e| match e {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            })
            .collect::<Option<Vec<_>>>(),
        _ => None,
    };
    match strings {
        Some(list) if !list.is_empty() => Ok(Some(list)),
        _ => {
            errors.at(
                expr.span(),
                format_args!(
                    "#[schema({key} = ...)] takes a non-empty list of strings: write \
                     #[schema({key} = [\"name\"])]"
                ),
            );
            Ok(None)
        }
    }
}

fn one_of(
    value: Option<(String, Span)>,
    key: &str,
    allowed: &[&str],
    errors: &mut Errors,
) -> Option<String> {
    let (value, span) = value?;
    if allowed.contains(&value.as_str()) {
        return Some(value);
    }
    errors.at(
        span,
        format_args!(
            "#[schema({key} = {value:?})] is not allowed; `{key}` is one of: {}",
            allowed.join(", ")
        ),
    );
    None
}

fn validation(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<Validation>> {
    let span = meta.path.span();
    if !meta.input.peek(syn::token::Paren) {
        errors.at(
            span,
            "#[schema(validation)] takes a list: write \
             #[schema(validation(rule = \"self.size() > 0\", message = \"...\"))]",
        );
        skip_value(meta)?;
        return Ok(None);
    }
    let mut v = Validation {
        rule: String::new(),
        rule_span: span,
        message: None,
        message_expression: None,
        reason: None,
        field_path: None,
        optional_old_self: None,
    };
    let mut has_rule = false;
    meta.parse_nested_meta(|inner| {
        let Some(key) = VALIDATION_KEYS
            .iter()
            .copied()
            .find(|k| inner.path.is_ident(k))
        else {
            errors.at(
                inner.path.span(),
                format_args!(
                    "unknown key in #[schema(validation(...))]; expected one of: {}",
                    VALIDATION_KEYS.join(", ")
                ),
            );
            return skip_value(&inner);
        };
        if key == "optional_old_self" {
            let expr: Expr = inner.value()?.parse()?;
            match &expr {
                Expr::Lit(ExprLit {
                    lit: Lit::Bool(b), ..
                }) => v.optional_old_self = Some(b.value),
                _ => errors.at(expr.span(), "optional_old_self takes `true` or `false`"),
            }
            return Ok(());
        }
        let literal = string(&inner, key, errors)?;
        if key == "message_expression" {
            v.message_expression = literal;
            return Ok(());
        }
        let value = literal.map(|(text, literal_span)| {
            if key == "rule" {
                v.rule_span = literal_span;
            }
            text
        });
        match key {
            "rule" => {
                has_rule = value.is_some();
                v.rule = value.unwrap_or_default();
            }
            "message" => v.message = value,
            "field_path" => v.field_path = value,
            _ => {
                if let Some(reason) = &value
                    && !REASONS.contains(&reason.as_str())
                {
                    errors.at(
                        inner.path.span(),
                        format_args!(
                            "reason {reason:?} is not allowed; it is one of: {}",
                            REASONS.join(", ")
                        ),
                    );
                }
                v.reason = value;
            }
        }
        Ok(())
    })?;
    if !has_rule {
        errors.at(
            span,
            "#[schema(validation(...))] is missing `rule`: write \
             validation(rule = \"<CEL expression>\", message = \"...\")",
        );
        return Ok(None);
    }
    Ok(Some(v))
}

/// The doc comment as a description: lines joined with newlines, one leading space each
/// removed (the one after `///`), surrounding blank lines dropped.
pub(crate) fn doc_comment(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| {
            text.split('\n')
                .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_comments_become_descriptions() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[doc = " First line."]),
            syn::parse_quote!(#[doc = ""]),
            syn::parse_quote!(#[doc = " Second  "]),
        ];
        assert_eq!(
            doc_comment(&attrs).as_deref(),
            Some("First line.\n\nSecond")
        );
        assert_eq!(doc_comment(&[]), None);
    }
}
