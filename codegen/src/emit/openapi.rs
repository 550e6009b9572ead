//! The OpenAPI schemas of a model's types, carried by the generated crate as data.
//!
//! A server publishes a kind's schema at `/openapi/v2` and `/openapi/v3` so that `kubectl explain`
//! can describe its fields and `kubectl apply` can validate against them. Generated types have no
//! `Schema` impl (that would cost compile time per type); instead the crate carries every
//! definition of the spec once, as one JSON object in a string constant, and its `register`
//! function hands it to the registry. The JSON is rendered from the model, not copied from the
//! input: OpenAPI 3 spelling, references as `#/components/schemas/<name>`, kinds tagged with
//! `x-kubernetes-group-version-kind`, one definition per line in name order, with the spec's
//! descriptions (which `kubectl explain` prints) beside the structure, a reference's beside its
//! `$ref` as Swagger 2.0 writes it; `default` is left out, so the output does not depend on the
//! front end.

use std::collections::BTreeMap;

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use serde_json::{Map, Value, json};

use crate::model::{ListType, MapType, Model, Schema, SchemaType};

/// The name of the generated constant.
pub(crate) const CONSTANT: &str = "OPENAPI_DEFINITIONS";

/// The items of a generated definitions module: the constant holding `definitions` (name →
/// rendered schema) as one JSON object.
pub(crate) fn definitions_items<'a>(
    definitions: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> TokenStream {
    let literal = raw_string(&json_object(definitions));
    let name = quote::format_ident!("{CONSTANT}");
    quote! {
        /// OpenAPI 3 schemas by definition name (references as `#/components/schemas/<name>`),
        /// which `register` hands to the registry so a server can publish them.
        pub(crate) const #name: &str = #literal;
    }
}

/// Every definition of `model`, rendered as compact JSON, by name.
pub(crate) fn rendered_definitions(model: &Model) -> BTreeMap<String, String> {
    let mut kinds: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for kind in model.kinds.values() {
        kinds.entry(&kind.definition).or_default().push(json!({
            "group": kind.gvk.group,
            "kind": kind.gvk.kind,
            "version": kind.gvk.version,
        }));
    }
    model
        .types
        .iter()
        .map(|(name, schema)| {
            let mut value = render(schema);
            if let (Some(gvks), Some(object)) = (kinds.get(name.as_str()), value.as_object_mut()) {
                object.insert(
                    "x-kubernetes-group-version-kind".to_owned(),
                    Value::Array(gvks.clone()),
                );
            }
            (name.clone(), value.to_string())
        })
        .collect()
}

/// Rendered definitions as one JSON object, one definition per line.
fn json_object<'a>(definitions: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    let lines: Vec<String> = definitions
        .into_iter()
        .map(|(name, schema)| format!("{}:{schema}", Value::String(name.clone())))
        .collect();
    format!("{{\n{}\n}}", lines.join(",\n"))
}

/// One schema node in OpenAPI 3 form, with its description.
fn render(schema: &Schema) -> Value {
    let mut out = Map::new();
    if let Some(description) = schema.description.as_deref().filter(|d| !d.is_empty()) {
        out.insert("description".into(), description.into());
    }
    match &schema.ty {
        SchemaType::Any => {}
        SchemaType::Object(object) => {
            out.insert("type".into(), "object".into());
            if !object.properties.is_empty() {
                let properties: Map<String, Value> = object
                    .properties
                    .iter()
                    .map(|p| (p.name.clone(), render(&p.schema)))
                    .collect();
                out.insert("properties".into(), Value::Object(properties));
            }
            if !object.required.is_empty() {
                out.insert(
                    "required".into(),
                    object.required.iter().cloned().collect::<Vec<_>>().into(),
                );
            }
            if let Some(extra) = &object.additional_properties {
                out.insert("additionalProperties".into(), render(extra));
            }
        }
        SchemaType::Map(values) => {
            out.insert("type".into(), "object".into());
            out.insert("additionalProperties".into(), render(values));
        }
        SchemaType::Array(items) => {
            out.insert("type".into(), "array".into());
            out.insert("items".into(), render(items));
        }
        SchemaType::String { format } => typed(&mut out, "string", format.as_deref()),
        SchemaType::Integer { format } => typed(&mut out, "integer", format.as_deref()),
        SchemaType::Number { format } => typed(&mut out, "number", format.as_deref()),
        SchemaType::Boolean => typed(&mut out, "boolean", None),
        // Upstream's spelling for built-in IntOrString fields; clients know the format.
        SchemaType::IntOrString => typed(&mut out, "string", Some("int-or-string")),
        SchemaType::Ref(name) => {
            out.insert("$ref".into(), format!("#/components/schemas/{name}").into());
        }
    }
    // `default` is left out: the v3 documents of a release spell zero values as defaults where
    // its Swagger 2.0 document has none, and the output must not depend on the front end.
    if schema.nullable {
        out.insert("nullable".into(), true.into());
    }
    if !schema.enum_values.is_empty() {
        out.insert("enum".into(), schema.enum_values.clone().into());
    }
    for (keyword, value) in &schema.constraints {
        out.insert(keyword.clone(), value.clone());
    }
    let ext = &schema.ext;
    if let Some(list_type) = ext.list_type {
        let name = match list_type {
            ListType::Atomic => "atomic",
            ListType::Set => "set",
            ListType::Map => "map",
        };
        out.insert("x-kubernetes-list-type".into(), name.into());
    }
    if !ext.list_map_keys.is_empty() {
        out.insert(
            "x-kubernetes-list-map-keys".into(),
            ext.list_map_keys.clone().into(),
        );
    }
    if let Some(map_type) = ext.map_type {
        let name = match map_type {
            MapType::Atomic => "atomic",
            MapType::Granular => "granular",
        };
        out.insert("x-kubernetes-map-type".into(), name.into());
    }
    if let Some(strategy) = &ext.patch_strategy {
        out.insert(
            "x-kubernetes-patch-strategy".into(),
            strategy.clone().into(),
        );
    }
    if let Some(key) = &ext.patch_merge_key {
        out.insert("x-kubernetes-patch-merge-key".into(), key.clone().into());
    }
    let flags = [
        (
            "x-kubernetes-preserve-unknown-fields",
            ext.preserve_unknown_fields,
        ),
        ("x-kubernetes-embedded-resource", ext.embedded_resource),
        ("x-kubernetes-int-or-string", ext.int_or_string),
    ];
    for (name, set) in flags {
        if set {
            out.insert(name.into(), true.into());
        }
    }
    if !ext.validations.is_empty() {
        out.insert(
            "x-kubernetes-validations".into(),
            ext.validations.clone().into(),
        );
    }
    if !ext.unions.is_empty() {
        out.insert("x-kubernetes-unions".into(), ext.unions.clone().into());
    }
    Value::Object(out)
}

fn typed(out: &mut Map<String, Value>, ty: &str, format: Option<&str>) {
    out.insert("type".into(), ty.into());
    if let Some(format) = format {
        out.insert("format".into(), format.into());
    }
}

/// `text` as a raw string literal whose delimiter cannot occur inside it.
fn raw_string(text: &str) -> Literal {
    let mut hashes = 1;
    while text.contains(&format!("\"{}", "#".repeat(hashes))) {
        hashes += 1;
    }
    let fence = "#".repeat(hashes);
    format!("r{fence}\"{text}\"{fence}")
        .parse()
        .unwrap_or_else(|_| Literal::string(text))
}

/// Adds the `definitions` module of a single spec to a module's `root` tokens: inline, or as a
/// file at `definitions.rs` pushed to `files`.
pub(crate) fn add_definitions_module(
    model: &Model,
    single_file: bool,
    root: &mut TokenStream,
    files: &mut Vec<super::EmittedFile>,
) {
    let items = definitions_items(&rendered_definitions(model));
    if single_file {
        root.extend(quote!(mod definitions { #items }));
    } else {
        root.extend(quote!(
            mod definitions;
        ));
        files.push(super::EmittedFile {
            path: "definitions.rs".to_owned(),
            tokens: items,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Gvk, Kind, ObjectType, Property};

    fn prop(name: &str, ty: SchemaType) -> Property {
        Property {
            name: name.into(),
            schema: Schema {
                ty,
                description: Some(format!("The {name}.")),
                ..Schema::default()
            },
        }
    }

    #[test]
    fn definitions_are_openapi3_with_descriptions() {
        let mut model = Model::default();
        let mut spec = ObjectType {
            properties: vec![
                prop(
                    "replicas",
                    SchemaType::Integer {
                        format: Some("int32".into()),
                    },
                ),
                prop(
                    "ports",
                    SchemaType::Array(Box::new(Schema {
                        ty: SchemaType::Ref("x.v1.Port".into()),
                        ..Schema::default()
                    })),
                ),
                prop("surge", SchemaType::IntOrString),
            ],
            ..ObjectType::default()
        };
        spec.required.insert("replicas".into());
        model.types.insert(
            "x.v1.Thing".into(),
            Schema {
                ty: SchemaType::Object(spec),
                description: Some("A thing.".into()),
                ..Schema::default()
            },
        );
        model.types.insert(
            "x.v1.Port".into(),
            Schema {
                ty: SchemaType::Map(Box::new(Schema {
                    ty: SchemaType::String { format: None },
                    ..Schema::default()
                })),
                ..Schema::default()
            },
        );
        model.kinds.insert(
            Gvk::new("x.dev", "v1", "Thing"),
            Kind {
                gvk: Gvk::new("x.dev", "v1", "Thing"),
                definition: "x.v1.Thing".into(),
                resource: None,
            },
        );
        let json = json_object(&rendered_definitions(&model));
        assert_eq!(json.lines().count(), 4, "one definition per line:\n{json}");
        let parsed: Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(
            parsed["x.v1.Thing"],
            json!({
                "description": "A thing.",
                "type": "object",
                "required": ["replicas"],
                "properties": {
                    "replicas": {"description": "The replicas.", "type": "integer", "format": "int32"},
                    "ports": {"description": "The ports.", "type": "array", "items": {"$ref": "#/components/schemas/x.v1.Port"}},
                    "surge": {"description": "The surge.", "type": "string", "format": "int-or-string"}
                },
                "x-kubernetes-group-version-kind": [{"group": "x.dev", "kind": "Thing", "version": "v1"}]
            })
        );
        assert_eq!(
            parsed["x.v1.Port"],
            json!({"type": "object", "additionalProperties": {"type": "string"}})
        );
    }

    #[test]
    fn raw_strings_outlast_their_contents() {
        for text in ["plain", "a \"# b", "a \"## b \"# c"] {
            let literal = raw_string(text).to_string();
            let parsed: syn::LitStr = syn::parse_str(&literal).expect(&literal);
            assert_eq!(parsed.value(), text);
        }
    }
}
