//! Table tests for schema parsing: each dialect's spellings and every rejected construct.

use serde_json::json;

use super::*;
use crate::load::error::Source;
use crate::model::Property;

fn parse(v: Value, dialect: Dialect) -> Result<Schema, LoadError> {
    let source = Source::file("s.json".as_ref());
    let cx = Cx {
        source: &source,
        what: "schema",
    };
    let root = Ptr::Root;
    let at = root.key("x");
    parse_schema(&cx, &v, &at, dialect)
}

fn ok(v: Value, dialect: Dialect) -> Schema {
    match parse(v.clone(), dialect) {
        Ok(s) => s,
        Err(e) => panic!("{v}: {e}"),
    }
}

fn s(ty: SchemaType) -> Schema {
    Schema::of(ty)
}

#[test]
fn shapes() {
    use Dialect::*;
    let string = |f: Option<&str>| SchemaType::String {
        format: f.map(str::to_owned),
    };
    let cases: Vec<(Value, Dialect, SchemaType)> = vec![
        (json!({}), Swagger2, SchemaType::Any),
        (
            json!({"x-kubernetes-preserve-unknown-fields": true}),
            Crd,
            SchemaType::Any,
        ),
        (json!({"type": "string"}), Swagger2, string(None)),
        (
            json!({"type": "string", "format": "byte"}),
            Swagger2,
            string(Some("byte")),
        ),
        (
            json!({"type": "integer", "format": "int64"}),
            Swagger2,
            SchemaType::Integer {
                format: Some("int64".into()),
            },
        ),
        (
            json!({"type": "number", "format": "double"}),
            Swagger2,
            SchemaType::Number {
                format: Some("double".into()),
            },
        ),
        (json!({"type": "boolean"}), Crd, SchemaType::Boolean),
        (
            json!({"type": "string", "format": "int-or-string"}),
            Swagger2,
            SchemaType::IntOrString,
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"type": "string"}]}),
            OpenApi3,
            SchemaType::IntOrString,
        ),
        (
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}),
            Crd,
            SchemaType::IntOrString,
        ),
        (
            json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
            OpenApi3,
            string(None),
        ),
        (
            json!({"$ref": "#/definitions/a.B"}),
            Swagger2,
            SchemaType::Ref("a.B".into()),
        ),
        (
            json!({"$ref": "#/components/schemas/a.B"}),
            OpenApi3,
            SchemaType::Ref("a.B".into()),
        ),
        (
            json!({"allOf": [{"$ref": "#/components/schemas/a.B"}], "default": {}}),
            OpenApi3,
            SchemaType::Ref("a.B".into()),
        ),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            Crd,
            SchemaType::Array(Box::new(s(string(None)))),
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "string"}}),
            Crd,
            SchemaType::Map(Box::new(s(string(None)))),
        ),
        (
            json!({"type": "object", "additionalProperties": true}),
            Crd,
            SchemaType::Map(Box::default()),
        ),
        (
            json!({"type": "object"}),
            Crd,
            SchemaType::Object(ObjectType::default()),
        ),
        (
            json!({"type": "object", "additionalProperties": false}),
            Crd,
            SchemaType::Object(ObjectType::default()),
        ),
        (
            json!({"properties": {"b": {"type": "boolean"}}}),
            Swagger2,
            SchemaType::Object(ObjectType {
                properties: vec![Property {
                    name: "b".into(),
                    schema: s(SchemaType::Boolean),
                }],
                ..ObjectType::default()
            }),
        ),
    ];
    for (input, dialect, want) in cases {
        assert_eq!(ok(input.clone(), dialect).ty, want, "{input}");
    }
}

#[test]
fn objects_keep_property_order_required_and_extra_properties() {
    let got = ok(
        json!({"type": "object", "required": ["z"],
               "properties": {"z": {"type": "string"}, "a": {"type": "integer"}},
               "additionalProperties": {"type": "boolean"}}),
        Dialect::Crd,
    );
    let o = got.as_object().expect("object");
    let names: Vec<&str> = o.properties.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["z", "a"]);
    assert_eq!(o.required.iter().collect::<Vec<_>>(), ["z"]);
    assert_eq!(
        o.additional_properties.as_deref(),
        Some(&s(SchemaType::Boolean))
    );
}

#[test]
fn annotations_extensions_and_constraints_are_kept() {
    let got = ok(
        json!({"type": "array", "description": "d", "default": [], "nullable": true,
               "items": {"type": "object", "properties": {"name": {"type": "string", "enum": ["a", "b"]}}},
               "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
               "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name",
               "x-kubernetes-validations": [{"rule": "self.size() < 3"}],
               "maxItems": 3, "title": "dropped"}),
        Dialect::Crd,
    );
    assert_eq!(got.description.as_deref(), Some("d"));
    assert_eq!(got.default, Some(json!([])));
    assert!(got.nullable);
    assert_eq!(got.ext.list_type, Some(ListType::Map));
    assert_eq!(got.ext.list_map_keys, ["name"]);
    assert_eq!(got.ext.patch_strategy.as_deref(), Some("merge"));
    assert_eq!(got.ext.patch_merge_key.as_deref(), Some("name"));
    assert_eq!(got.ext.validations, [json!({"rule": "self.size() < 3"})]);
    assert_eq!(got.constraints.keys().collect::<Vec<_>>(), ["maxItems"]);
    let SchemaType::Array(items) = &got.ty else {
        panic!("array: {got:?}")
    };
    let name = &items.as_object().expect("object").properties[0].schema;
    assert_eq!(name.enum_values, [json!("a"), json!("b")]);

    let flags = ok(
        json!({"type": "object", "x-kubernetes-embedded-resource": true,
               "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-map-type": "atomic",
               "x-kubernetes-unions": [{"discriminator": "type"}],
               "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
        Dialect::Crd,
    );
    assert!(flags.ext.embedded_resource && flags.ext.preserve_unknown_fields);
    assert_eq!(flags.ext.map_type, Some(MapType::Atomic));
    assert_eq!(flags.ext.unions.len(), 1);
    assert!(
        flags.constraints.contains_key("oneOf"),
        "validation-only oneOf is kept"
    );

    let ios = ok(
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true, "pattern": "^x$"}),
        Dialect::Crd,
    );
    assert!(ios.ext.int_or_string);
    assert_eq!(
        ios.constraints.keys().collect::<Vec<_>>(),
        ["pattern"],
        "the type union is consumed"
    );
}

#[test]
fn rejected_constructs_name_the_json_path() {
    use Dialect::*;
    let cases: Vec<(Value, Dialect, &str)> = vec![
        (
            json!("str"),
            Swagger2,
            "#/x: expected a schema object, found a string",
        ),
        (
            json!({"type": "strung"}),
            Swagger2,
            "#/x/type: unknown type \"strung\"",
        ),
        (
            json!({"type": ["string", "null"]}),
            OpenApi3,
            "#/x/type: expected a string, found an array",
        ),
        (
            json!({"type": "array"}),
            Crd,
            "#/x: array schema without items",
        ),
        (
            json!({"type": "array", "items": [{"type": "string"}]}),
            Swagger2,
            "#/x/items: unsupported construct: tuple items",
        ),
        (
            json!({"$ref": "#/definitions/a"}),
            Crd,
            "#/x/$ref: $ref is not allowed in a CRD schema",
        ),
        (
            json!({"$ref": "#/components/schemas/a"}),
            Swagger2,
            "#/x/$ref: unsupported $ref \"#/components/schemas/a\": expected #/definitions/<name>",
        ),
        (
            json!({"$ref": 3}),
            Swagger2,
            "#/x/$ref: expected a string, found a number",
        ),
        (
            json!({"oneOf": [{"type": "boolean"}, {"type": "string"}]}),
            OpenApi3,
            "#/x/oneOf: unsupported construct: a union of types boolean|string",
        ),
        (
            json!({"anyOf": [{"$ref": "#/components/schemas/a"}, {"type": "string"}]}),
            OpenApi3,
            "#/x/anyOf: unsupported construct: a union of schemas",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": 1}}}}}),
            Crd,
            "#/x/properties/a/properties/b/type: expected a string, found a number",
        ),
        (
            json!({"type": "object", "properties": []}),
            Crd,
            "#/x/properties: expected an object, found an array",
        ),
        (
            json!({"type": "object", "required": "a"}),
            Crd,
            "#/x/required: expected an array, found a string",
        ),
        (
            json!({"type": "array", "items": {}, "x-kubernetes-list-type": "bag"}),
            Crd,
            "#/x/x-kubernetes-list-type: unknown list type \"bag\"",
        ),
        (
            json!({"type": "object", "x-kubernetes-map-type": "set"}),
            Crd,
            "#/x/x-kubernetes-map-type: unknown map type \"set\"",
        ),
        (
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": "yes"}),
            Crd,
            "#/x/x-kubernetes-preserve-unknown-fields: expected a boolean",
        ),
        (
            json!({"type": "object", "properties": {"a/b": {"type": "x"}}}),
            Crd,
            "#/x/properties/a~1b/type: unknown type \"x\"",
        ),
    ];
    for (input, dialect, want) in cases {
        let err = match parse(input.clone(), dialect) {
            Err(e) => e.to_string(),
            Ok(s) => panic!("{input} parsed as {s:?}"),
        };
        let want = format!("invalid schema at s.json {want}");
        assert!(err.starts_with(&want), "{input}\n got: {err}\nwant: {want}");
    }
}
