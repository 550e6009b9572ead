//! The Kubernetes structural-schema dialect: [`JSONSchemaProps`] as `apiextensions.k8s.io/v1`
//! writes it, and the [`Schema`] trait that gives a Rust type its schema.
//!
//! kube-derive produced generic JSON Schema and repaired it into Kubernetes' dialect afterwards,
//! which is where its long tail of bugs came from. Here every type produces the dialect
//! directly: no `$ref`, a `type` on every node, and the `x-kubernetes-*` markers in place, so
//! the output needs no rewriting. `#[derive(Schema)]` (in `kapi-macros`) implements the trait
//! for user structs and enums and rejects, at compile time, shapes a structural schema cannot
//! express. [`crate::crd::validate_structural`] checks any schema, hand-written or derived,
//! against upstream's structural rules.

mod impls;
mod props;

pub use props::{
    ExternalDocumentation, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    ValidationRule,
};

use crate::merge::{TypeInfo, Wrap};

/// A type with a Kubernetes structural schema.
///
/// Implemented for the primitives Kubernetes allows, the collections, the kapi value types and
/// meta types, and by `#[derive(Schema)]` / `#[derive(CustomResource)]` for user types.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no Kubernetes schema",
    label = "`{Self}` does not implement `kapi::Schema`",
    note = "derive it with `#[derive(kapi::Schema)]`; unsigned 64-bit and 128-bit integers have \
            no schema (use `i64`), and maps need `String` keys"
)]
pub trait Schema {
    /// Whether an absent field of this type is valid, so the field is left out of `required`.
    const OPTIONAL: bool = false;

    /// The merge metadata of the struct this type is or holds, for strategic merge patch and
    /// server-side apply.
    #[doc(hidden)]
    const MERGE: Option<&'static TypeInfo> = None;

    /// The lists and maps between a field of this type and [`Schema::MERGE`], outermost first.
    #[doc(hidden)]
    const MERGE_WRAP: &'static [Wrap] = &[];

    /// The schema of a value of this type.
    fn schema() -> JSONSchemaProps;
}

/// Support for code emitted by `#[derive(Schema)]`; not a public API.
#[doc(hidden)]
pub mod __private {
    use serde::Serialize;
    use serde_json::Value;

    use super::JSONSchemaProps;
    use crate::merge::Wrap;

    /// A value as a schema `default`, or `None` when it serializes to `null` (which the server
    /// prunes) or does not serialize at all.
    pub fn default_value<T: Serialize>(value: &T) -> Option<Value> {
        match serde_json::to_value(value) {
            Ok(Value::Null) | Err(_) => None,
            Ok(value) => Some(value),
        }
    }

    /// A `#[serde(default)]` value as a schema `default`: like [`default_value`], but empty
    /// strings, lists and maps are left out, since they mean "unset" on the wire and a schema
    /// default would make the server write them into every object.
    pub fn serde_default<T: Serialize>(value: &T) -> Option<Value> {
        default_value(value).filter(|v| match v {
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => true,
        })
    }

    /// Adds one variant of an internally tagged enum to the union schema `into`: its
    /// properties join the union and a `oneOf` branch ties its required fields to its tag
    /// value, so each tag value requires exactly its own variant's fields.
    pub fn tagged_variant(
        into: &mut JSONSchemaProps,
        from: JSONSchemaProps,
        tag: &str,
        name: &str,
    ) {
        let mut branch = JSONSchemaProps::default();
        let mut tag_value = JSONSchemaProps::default();
        tag_value.enum_.push(Value::String(name.to_owned()));
        branch.properties.insert(tag.to_owned(), tag_value);
        branch.required = from.required.into_iter().filter(|r| r != tag).collect();
        for (field, schema) in from.properties {
            into.properties.entry(field).or_insert(schema);
        }
        if from.x_kubernetes_preserve_unknown_fields == Some(true) {
            into.x_kubernetes_preserve_unknown_fields = Some(true);
        }
        into.one_of.push(branch);
    }

    /// Moves the properties of a `#[serde(flatten)]`ed field into `into`. A flattened map has
    /// no fixed keys, and a structural object cannot have both `properties` and
    /// `additionalProperties`, so it turns into `x-kubernetes-preserve-unknown-fields`.
    pub fn flatten(into: &mut JSONSchemaProps, from: JSONSchemaProps, optional: bool) {
        if from.additional_properties.is_some()
            || from.x_kubernetes_preserve_unknown_fields == Some(true)
        {
            into.x_kubernetes_preserve_unknown_fields = Some(true);
        }
        for (name, schema) in from.properties {
            into.properties.entry(name).or_insert(schema);
        }
        if !optional {
            for name in from.required {
                if !into.required.contains(&name) {
                    into.required.push(name);
                }
            }
        }
        into.x_kubernetes_validations
            .extend(from.x_kubernetes_validations);
    }

    /// Adds one variant of an untagged enum to the union schema `into`: its properties join
    /// the union (a name already present keeps its first schema; the derive rejects
    /// conflicting field types it can see) and its required fields become one `anyOf` branch,
    /// so a value must have the fields of at least one variant.
    pub fn variant(into: &mut JSONSchemaProps, from: JSONSchemaProps) {
        let branch = JSONSchemaProps {
            required: from.required,
            ..JSONSchemaProps::default()
        };
        for (name, schema) in from.properties {
            into.properties.entry(name).or_insert(schema);
        }
        if from.x_kubernetes_preserve_unknown_fields == Some(true) {
            into.x_kubernetes_preserve_unknown_fields = Some(true);
        }
        into.any_of.push(branch);
    }

    /// Drops `anyOf` when a branch requires nothing, since it would then accept every value
    /// and only add noise.
    pub fn finish_union(schema: &mut JSONSchemaProps) {
        if schema.any_of.iter().any(|b| b.required.is_empty()) {
            schema.any_of.clear();
        }
    }

    /// `[first, rest...]` for the nestings that occur in practice (three levels); deeper
    /// nesting keeps the outer three, which only costs merge precision below them.
    pub const fn wrap_in(first: Wrap, rest: &'static [Wrap]) -> &'static [Wrap] {
        use Wrap::{List as L, Map as M};
        match (first, rest) {
            (L, []) => &[L],
            (M, []) => &[M],
            (L, [L, ..]) => match rest {
                [_] => &[L, L],
                [_, L, ..] => &[L, L, L],
                _ => &[L, L, M],
            },
            (L, [M, ..]) => match rest {
                [_] => &[L, M],
                [_, L, ..] => &[L, M, L],
                _ => &[L, M, M],
            },
            (M, [L, ..]) => match rest {
                [_] => &[M, L],
                [_, L, ..] => &[M, L, L],
                _ => &[M, L, M],
            },
            (M, [M, ..]) => match rest {
                [_] => &[M, M],
                [_, L, ..] => &[M, M, L],
                _ => &[M, M, M],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::__private::wrap_in;
    use crate::merge::Wrap::{List as L, Map as M};

    #[test]
    fn wrap_in_prepends() {
        assert_eq!(wrap_in(L, &[]), [L]);
        assert_eq!(wrap_in(M, &[L]), [M, L]);
        assert_eq!(wrap_in(L, &[M, L]), [L, M, L]);
        assert_eq!(wrap_in(M, &[M, M]), [M, M, M]);
        assert_eq!(wrap_in(L, &[L, M, L]), [L, L, M]);
    }
}
