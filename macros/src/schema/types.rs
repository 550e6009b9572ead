//! Syntactic checks on field types: the shapes that have no structural schema and can be seen
//! in the tokens (floats, maps with non-string keys, direct recursion), and known shapes that
//! get defaults (`conditions: Vec<Condition>`).
//!
//! These are checks on how the type is written, so a type alias hides them; the `Schema` trait
//! bounds still catch what they miss (a map key type without `MapKey` fails to compile), only
//! with the compiler's message instead of ours.

use syn::spanned::Spanned as _;
use syn::visit::Visit;
use syn::{GenericArgument, Ident, PathArguments, Type, TypePath};

use crate::errors::Errors;

/// Reports floats (unless allowed), non-string map keys and direct recursion in `ty`.
pub(crate) fn check_type(ty: &Type, allow_float: bool, owner: &Ident, errors: &mut Errors) {
    struct Visitor<'a> {
        allow_float: bool,
        owner: &'a Ident,
        errors: &'a mut Errors,
    }
    impl<'ast> Visit<'ast> for Visitor<'_> {
        fn visit_type_path(&mut self, path: &'ast TypePath) {
            if let Some(last) = path.path.segments.last() {
                let name = last.ident.to_string();
                if !self.allow_float && (name == "f32" || name == "f64") {
                    self.errors.at(
                        last.ident.span(),
                        format_args!(
                            "`{name}` is a float, which Kubernetes API conventions disallow \
                             (floats do not round-trip through JSON exactly): use an integer, \
                             a `kapi::Quantity` or a string, or mark the field \
                             #[schema(allow_float)]"
                        ),
                    );
                }
                if (last.ident == *self.owner || name == "Self") && path.qself.is_none() {
                    self.errors.at(
                        last.ident.span(),
                        format_args!(
                            "`{name}` contains itself: a structural schema is a finite tree \
                             without references, so it cannot describe a recursive type; cut \
                             the recursion with a `serde_json::Value` field or describe the field \
                             with #[schema(with = path::to_fn)]"
                        ),
                    );
                }
                if matches!(name.as_str(), "BTreeMap" | "HashMap" | "IndexMap")
                    && let PathArguments::AngleBracketed(args) = &last.arguments
                    && let Some(GenericArgument::Type(key)) = args.args.first()
                    && !is_string_type(key)
                {
                    self.errors.at(
                        key.span(),
                        format_args!(
                            "map keys are JSON object keys, which are strings, so `{}` cannot \
                             key a map in a Kubernetes schema: use `String` keys, or a list of \
                             items with #[schema(list_type = \"map\", list_map_keys = [...])]",
                            quote::quote!(#key).to_string().replace(' ', "")
                        ),
                    );
                }
            }
            syn::visit::visit_type_path(self, path);
        }
    }
    Visitor {
        allow_float,
        owner,
        errors,
    }
    .visit_type(ty);
}

fn is_string_type(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "String" || s.ident == "Cow"),
        Type::Reference(r) => matches!(&*r.elem, Type::Path(p) if p.path.is_ident("str")),
        // A type parameter or macro: the trait bound decides.
        _ => true,
    }
}

/// `Vec<Condition>`, `Vec<meta::Condition>` or `Vec<kapi::meta::Condition>`.
pub(crate) fn is_vec_of_condition(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    if last.ident != "Vec" {
        return false;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let Some(GenericArgument::Type(Type::Path(inner))) = args.args.first() else {
        return false;
    };
    let segments: Vec<String> = inner
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segments.as_slice() {
        [only] => only == "Condition",
        [.., parent, last] => last == "Condition" && (parent == "meta" || parent == "kapi"),
        [] => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(ty: Type, allow_float: bool) -> Vec<String> {
        let mut errors = Errors::default();
        check_type(&ty, allow_float, &syn::parse_quote!(Owner), &mut errors);
        errors
            .finish()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn finds_bad_shapes() {
        assert_eq!(messages(syn::parse_quote!(Vec<String>), false).len(), 0);
        assert_eq!(messages(syn::parse_quote!(Option<f64>), false).len(), 1);
        assert_eq!(messages(syn::parse_quote!(Option<f64>), true).len(), 0);
        assert_eq!(
            messages(syn::parse_quote!(BTreeMap<String, i32>), false).len(),
            0
        );
        assert_eq!(
            messages(syn::parse_quote!(BTreeMap<i32, i32>), false).len(),
            1
        );
        assert_eq!(
            messages(syn::parse_quote!(HashMap<Cow<'static, str>, i32>), false).len(),
            0
        );
        assert_eq!(
            messages(syn::parse_quote!(Option<Box<Owner>>), false).len(),
            1
        );
        assert!(is_vec_of_condition(&syn::parse_quote!(
            Vec<kapi::meta::Condition>
        )));
        assert!(is_vec_of_condition(&syn::parse_quote!(Vec<Condition>)));
        assert!(!is_vec_of_condition(&syn::parse_quote!(Vec<my::Condition>)));
    }
}
