//! Loader tests over small inline documents: detection, merging, every error path, and garbage.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::model::{SchemaType, Scope, Verb};

fn swagger() -> Value {
    json!({
        "swagger": "2.0",
        "definitions": {
            "io.k8s.api.apps.v1.Deployment": {
                "type": "object",
                "properties": {
                    "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"},
                    "status": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentStatus", "description": "s"}
                },
                "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
            },
            "io.k8s.api.apps.v1.DeploymentSpec": {"type": "object", "properties": {"replicas": {"type": "integer", "format": "int32"}}},
            "io.k8s.api.apps.v1.DeploymentStatus": {"type": "object"},
            "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": {
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "DeleteOptions", "version": "v1"},
                                                    {"group": "apps", "kind": "DeleteOptions", "version": "v1"}]
            }
        },
        "paths": {
            "/apis/apps/v1/namespaces/{namespace}/deployments": {
                "get": {"x-kubernetes-action": "list", "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"}},
                "post": {"x-kubernetes-action": "post", "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"}}
            },
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status": {
                "get": {"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"}}
            },
            "/apis/apps/v1/": {"get": {"operationId": "getAppsV1APIResources"}}
        }
    })
}

/// The same content as [`swagger`], split into two OpenAPI 3 documents the way upstream does.
fn openapi3() -> (Value, Value) {
    let text = swagger()
        .to_string()
        .replace("#/definitions/", "#/components/schemas/");
    let mut v2: Value = serde_json::from_str(&text).expect("json");
    let defs = v2["definitions"].take();
    let paths = v2["paths"].take();
    let apps = json!({"openapi": "3.0.0", "components": {"schemas": defs.clone()}, "paths": paths});
    let core = json!({"openapi": "3.0.0", "components": {"schemas": {
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": defs["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]
    }}, "paths": {}});
    (apps, core)
}

const CRDS: &str = r#"
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd], listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size, priority: 1}
    selectableFields:
    - jsonPath: .spec.size
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: use v1
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object}}
"#;

#[test]
fn swagger_yields_types_kinds_and_resources() {
    let model = load_swagger_str("swagger.json", &swagger().to_string()).expect("load");
    assert_eq!(model.types.len(), 4);
    assert_eq!(model.kinds.len(), 3, "every stamped GVK is a kind");
    let d = &model.kinds[&Gvk::new("apps", "v1", "Deployment")];
    assert_eq!(d.definition, "io.k8s.api.apps.v1.Deployment");
    let r = d.resource.as_ref().expect("served");
    assert_eq!(r.plural, "deployments");
    assert_eq!(r.scope, Scope::Namespaced);
    assert_eq!(
        r.verbs.iter().copied().collect::<Vec<_>>(),
        [Verb::Create, Verb::List]
    );
    assert_eq!(r.subresources.keys().collect::<Vec<_>>(), ["status"]);
    assert!(
        model.kinds[&Gvk::new("apps", "v1", "DeleteOptions")]
            .resource
            .is_none()
    );
    let status = &model.types["io.k8s.api.apps.v1.Deployment"]
        .as_object()
        .expect("object")
        .properties[1];
    assert_eq!(
        status.schema.ty,
        SchemaType::Ref("io.k8s.api.apps.v1.DeploymentStatus".into())
    );
    assert_eq!(status.schema.description.as_deref(), Some("s"));
}

#[test]
fn openapi3_documents_merge_to_the_swagger_model() {
    let (apps, core) = openapi3();
    let (apps, core) = (apps.to_string(), core.to_string());
    let v3 = load_openapi3_str(&[("apps.json", &apps), ("core.json", &core)]).expect("v3");
    let v2 = load_swagger_str("swagger.json", &swagger().to_string()).expect("v2");
    assert_eq!(v3, v2);
    // Order of documents must not matter: the served copy of a kind wins either way.
    let reversed = load_openapi3_str(&[("core.json", &core), ("apps.json", &apps)]).expect("v3");
    assert_eq!(reversed, v2);
}

#[test]
fn openapi3_disagreeing_documents_name_both_files() {
    let (apps, mut core) = openapi3();
    core["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]["description"] =
        json!("changed");
    let err = load_openapi3_str(&[
        ("apps.json", &apps.to_string()),
        ("core.json", &core.to_string()),
    ])
    .expect_err("conflict");
    assert_eq!(
        err.to_string(),
        "conflicting definitions of io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions in apps.json and core.json"
    );
}

#[test]
fn crds_yield_every_version() {
    let model = load_crds_str("crds.yaml", CRDS).expect("load");
    let names: Vec<String> = model.kinds.keys().map(|g| g.to_string()).collect();
    assert_eq!(
        names,
        [
            "example.com/v1 Gadget",
            "example.com/v1 Widget",
            "example.com/v1beta1 Widget"
        ]
    );
    let w = &model.kinds[&Gvk::new("example.com", "v1", "Widget")];
    assert_eq!(w.definition, "com.example.v1.Widget");
    let r = w.resource.as_ref().expect("served");
    assert_eq!(r.scope, Scope::Cluster);
    assert_eq!(r.verbs.len(), 8);
    let scale = r.subresources["scale"].scale.as_ref().expect("scale paths");
    assert_eq!(
        (
            scale.spec_replicas.as_str(),
            scale.label_selector.as_deref()
        ),
        (".spec.size", None)
    );
    let crd = r.crd.as_ref().expect("crd data");
    assert_eq!(
        (crd.served, crd.storage, crd.deprecated),
        (true, true, false)
    );
    assert_eq!(crd.short_names, ["wd"]);
    assert_eq!(crd.list_kind.as_deref(), Some("WidgetList"));
    assert_eq!(crd.printer_columns[0].priority, 1);
    assert_eq!(crd.selectable_fields, [".spec.size"]);
    let beta = model.kinds[&Gvk::new("example.com", "v1beta1", "Widget")]
        .resource
        .as_ref()
        .expect("served");
    let beta = beta.crd.as_ref().expect("crd");
    assert!(beta.deprecated && !beta.storage);
    assert_eq!(beta.deprecation_warning.as_deref(), Some("use v1"));
    let as_json: Value =
        serde_yaml_ng::from_str(CRDS.split("\n---\n").nth(2).expect("doc")).expect("yaml");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [as_json]}).to_string();
    let dir = std::env::temp_dir().join(format!("kapi-codegen-list-{}.json", std::process::id()));
    std::fs::write(&dir, list).expect("write");
    let from_list = load_inputs(&[&dir]);
    let _ = std::fs::remove_file(&dir);
    assert_eq!(
        from_list.expect("list").kinds.len(),
        1,
        "a JSON List of CRDs loads"
    );
}

#[test]
fn bad_inputs_name_file_and_path() {
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut v = swagger();
        edit(&mut v);
        load_swagger_str("swagger.json", &v.to_string())
            .expect_err("must fail")
            .to_string()
    };
    let cases: Vec<(String, &str)> = vec![
        (load_swagger_str("swagger.json", "{").expect_err("e").to_string(),
         "invalid JSON in swagger.json: EOF while parsing an object at line 1 column 1"),
        (load_swagger_str("swagger.json", "[]").expect_err("e").to_string(),
         "invalid spec at swagger.json #: expected an object, found an array"),
        (with(&|v| v["swagger"] = json!("3.0")), "invalid spec at swagger.json #/swagger: unsupported version \"3.0\""),
        (with(&|v| v["definitions"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]["$ref"] = json!("#/definitions/nope")),
         "dangling $ref at swagger.json #/definitions/io.k8s.api.apps.v1.DeploymentSpec/properties/replicas: no definition named nope"),
        (with(&|v| v["definitions"]["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"] = json!({"type": "strange"})),
         "invalid schema at swagger.json #/definitions/io.k8s.api.apps.v1.Deployment/properties/spec/type: unknown type \"strange\""),
        (with(&|v| v["definitions"]["io.k8s.api.apps.v1.Deployment"] = json!({"type": "string", "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]})),
         "invalid schema at swagger.json #/definitions/io.k8s.api.apps.v1.Deployment: apps/v1 Deployment is served as a resource, so its definition must be an object"),
        (with(&|v| v["definitions"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"] = json!([])),
         "invalid spec at swagger.json #/paths: deployments serves apps/v1 Deployment, which no definition declares in x-kubernetes-group-version-kind"),
        (with(&|v| v["definitions"]["io.k8s.api.apps.v1.DeploymentSpec"]["x-kubernetes-group-version-kind"] = json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])),
         "invalid schema at swagger.json #/definitions/io.k8s.api.apps.v1.DeploymentSpec/x-kubernetes-group-version-kind/0: apps/v1 Deployment is already declared by io.k8s.api.apps.v1.Deployment"),
        (with(&|v| v["definitions"]["io.k8s.api.apps.v1.DeploymentSpec"]["x-kubernetes-group-version-kind"] = json!([{"group": "apps"}])),
         "invalid schema at swagger.json #/definitions/io.k8s.api.apps.v1.DeploymentSpec/x-kubernetes-group-version-kind/0: missing version"),
        (load_crds_str("c.yaml", "a: [").expect_err("e").to_string(), "invalid YAML in c.yaml (document 1): "),
        (load_crds_str("c.yaml", &CRDS.replace("apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets", "apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets")).expect_err("e").to_string(),
         "invalid CRD at c.yaml (document 2) #/apiVersion: unsupported apiVersion \"apiextensions.k8s.io/v1beta1\""),
        (load_crds_str("c.yaml", &CRDS.replace("schema: {openAPIV3Schema: {type: object}}", "schema: {openAPIV3Schema: {type: string}}")).expect_err("e").to_string(),
         "invalid CRD at c.yaml (document 2) #/spec/versions/0/schema/openAPIV3Schema: the root schema of a kind must be of type object"),
        (load_crds_str("c.yaml", &CRDS.replace("size: {type: integer}", "size: {type: integr}")).expect_err("e").to_string(),
         "invalid schema at c.yaml (document 1) #/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/type: unknown type \"integr\""),
        (load_crds_str("c.yaml", &CRDS.replace("size: {type: integer}", "size: {$ref: '#/definitions/x'}")).expect_err("e").to_string(),
         "invalid schema at c.yaml (document 1) #/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/$ref: $ref is not allowed in a CRD schema"),
        (load_crds_str("c.yaml", &CRDS.replace("scope: Cluster", "scope: Galaxy")).expect_err("e").to_string(),
         "invalid CRD at c.yaml (document 1) #/spec/scope: unknown scope \"Galaxy\""),
        (load_crds_str("c.yaml", &CRDS.replace("status: {}", "status: {}\n      log: {}")).expect_err("e").to_string(),
         "invalid CRD at c.yaml (document 1) #/spec/versions/0/subresources/log: unknown subresource \"log\""),
        (load_crds_str("c.yaml", &CRDS.replace("plural: gadgets", "plurl: gadgets")).expect_err("e").to_string(),
         "invalid CRD at c.yaml (document 2) #/spec/names: missing plural"),
        (load_crds_str("c.yaml", &CRDS.replace("schema: {openAPIV3Schema: {type: object}}", "schema: {}")).expect_err("e").to_string(),
         "invalid CRD at c.yaml (document 2) #/spec/versions/0/schema: missing openAPIV3Schema"),
        (load_crds_str("c.yaml", &format!("{CRDS}\n---\n{}", CRDS.split("\n---\n").nth(2).expect("doc").replace("type: object}", "type: object, description: x}"))).expect_err("e").to_string(),
         "conflicting definitions of com.example.v1.Gadget in c.yaml (document 2) and c.yaml (document 3)"),
    ];
    for (got, want) in cases {
        assert!(got.starts_with(want), "\n got: {got}\nwant: {want}");
    }
}

#[test]
fn unrecognized_and_missing_inputs() {
    let dir = std::env::temp_dir().join(format!("kapi-codegen-inputs-{}", std::process::id()));
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let odd = dir.join("odd.json");
    std::fs::write(&odd, "{\"hello\": 1}").expect("write");
    let cases = [
        (dir.join("absent.json"), "cannot read "),
        (odd.clone(), "unrecognized input "),
        (empty.clone(), "no OpenAPI v3 documents (*.json) in "),
    ];
    for (path, want) in cases {
        let err = load_inputs(&[&path]).expect_err("must fail").to_string();
        assert!(
            err.starts_with(want) && err.contains(&*path.to_string_lossy()),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every node of a document, as a JSON pointer, so garbage can be planted anywhere.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                pointers(
                    child,
                    format!("{at}/{}", crate::model::escape_pointer(k)),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-z$#/]{0,12}".prop_map(Value::String),
        Just(json!("#/definitions/io.k8s.api.apps.v1.Deployment")),
        Just(json!("object")),
        Just(json!("array")),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z$]{1,6}|type|items|properties|\\$ref", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn garbage_text_never_panics(text in ".{0,200}") {
        let _ = load_swagger_str("g.json", &text);
        let _ = load_openapi3_str(&[("g.json", &text)]);
        let _ = load_crds_str("g.yaml", &text);
    }

    #[test]
    fn planted_garbage_never_panics(pick in any::<prop::sample::Index>(), garbage in any_json()) {
        let (apps, _) = openapi3();
        let crd: Value = serde_yaml_ng::from_str(CRDS.split("\n---\n").nth(1).expect("doc")).expect("yaml");
        for (doc, which) in [(swagger(), 0), (apps, 1), (crd, 2)] {
            let mut all = Vec::new();
            pointers(&doc, String::new(), &mut all);
            let mut doc = doc;
            if let Some(slot) = doc.pointer_mut(&all[pick.index(all.len())]) {
                *slot = garbage.clone();
            }
            let text = doc.to_string();
            let _ = match which {
                0 => load_swagger_str("g.json", &text).map(drop),
                1 => load_openapi3_str(&[("g.json", &text)]).map(drop),
                _ => load_crds_str("g.json", &text).map(drop),
            };
        }
    }
}

/// Install manifests bundle CRDs with namespaces, RBAC and deployments (issue 17, item 5): those
/// documents are skipped with a note, and so are versions upstream does not serve (item 6).
#[test]
fn non_crd_documents_and_unserved_versions_are_skipped_with_a_note() {
    let text = format!(
        "kind: Pod\n---\n{CRDS}\n---\napiVersion: v1\nkind: List\nitems: [{{kind: Service}}]\n"
    );
    let model = load_crds_str("c.yaml", &text).expect("loads the CRDs");
    assert!(!model.kinds.is_empty());
    assert_eq!(
        model.skipped[..2],
        [
            "skipped a Pod object in c.yaml (document 1): not a CustomResourceDefinition".to_owned(),
            "skipped a Service object in c.yaml (document 5) at /items/0: not a CustomResourceDefinition"
                .to_owned(),
        ]
    );
    let unserved = CRDS.replacen("served: true", "served: false", 1);
    let model = load_crds_str("c.yaml", &unserved).expect("loads");
    assert!(
        model
            .skipped
            .iter()
            .any(|s| s.contains("the version is not served (served: false)")),
        "{:?}",
        model.skipped
    );
}
