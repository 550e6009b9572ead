//! Server-side apply and managed fields through the router: create-by-apply, conflicts and
//! forcing, shared ownership, removal of dropped fields, the documented ConfigMap and
//! replicas hand-over examples, `/status`, list and map semantics from merge metadata and
//! from a JSON schema, `Update` entries for every other write, and clearing managed fields.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use kapi::schema::JSONSchemaProps;
use kapi::storage::EmbeddedOptions;
use kapi::{KubeVersion, Registry};
use serde_json::{Value, json};

use support::kinds::{ConfigMap, DEPLOYMENTS, Deployment, WIDGETS, Widget};
use support::{APPLY, Harness, MERGE, Reply};

mod support;

/// Widgets' list and map semantics come from this JSON schema.
impl kapi::Schema for Widget {
    fn schema() -> JSONSchemaProps {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "properties": {
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port", "protocol"],
                            "items": {"type": "object", "properties": {
                                "port": {"type": "integer"},
                                "protocol": {"type": "string"},
                                "name": {"type": "string"}
                            }}
                        },
                        "hosts": {
                            "type": "array",
                            "x-kubernetes-list-type": "set",
                            "items": {"type": "string"}
                        },
                        "args": {"type": "array", "items": {"type": "string"}},
                        "selector": {
                            "type": "object",
                            "x-kubernetes-map-type": "atomic",
                            "additionalProperties": {"type": "string"}
                        },
                        "settings": {
                            "type": "object",
                            "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}
                        }
                    }
                }
            }
        }))
        .unwrap()
    }
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn harness() -> Harness {
    let mut registry = Registry::new();
    registry
        .register::<ConfigMap>()
        .register::<Deployment>()
        .register_with_schema::<Widget>();
    let builder = support::builder(registry, KubeVersion::new(1, 34));
    let options = EmbeddedOptions::default().with_compaction_interval(None);
    Harness::in_temp_dir(options, builder).await
}

impl Harness {
    /// Applies `config` (YAML text) as `manager`; `query` is added to the URL.
    async fn apply(&self, uri: &str, manager: &str, query: &str, config: &str) -> Reply {
        let uri = format!("{uri}?fieldManager={manager}{query}");
        self.raw("PATCH", &uri, APPLY, config).await
    }

    async fn applied(&self, uri: &str, manager: &str, config: &str) -> Value {
        let reply = self.apply(uri, manager, "", config).await;
        assert!(
            reply.code == 200 || reply.code == 201,
            "apply as {manager}: {} {}",
            reply.code,
            reply.body
        );
        reply.body
    }

    async fn get(&self, uri: &str) -> Value {
        self.ok("GET", uri, None).await
    }
}

/// The managers of an object with their operations: `[("kubectl", "Apply"), ...]`.
fn managers(object: &Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_owned(),
                        e["operation"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The `fieldsV1` of one manager's entry.
fn fields_of(object: &Value, manager: &str) -> Value {
    object["metadata"]["managedFields"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e["manager"] == manager))
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

const TEST_CM: &str = "
apiVersion: v1
kind: ConfigMap
metadata:
  name: test-cm
  namespace: default
  labels:
    test-label: test
data:
  key: some value
";

#[tokio::test]
async fn apply_creates_with_the_documented_managed_fields() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/test-cm");
    let created = h.apply(&uri, "kubectl", "", TEST_CM).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let entry = &created.body["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:test-label": {}}}})
    );
    assert_eq!(created.body["data"], json!({"key": "some value"}));
    assert!(created.body["metadata"]["uid"].is_string());

    // The same apply again changes nothing, not even the resourceVersion.
    let again = h.apply(&uri, "kubectl", "", TEST_CM).await;
    assert_eq!(again.code, 200, "{}", again.body);
    assert_eq!(
        again.body["metadata"]["resourceVersion"],
        created.body["metadata"]["resourceVersion"]
    );
    assert_eq!(
        h.get(&uri).await["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn apply_options_and_configurations_are_checked() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/test-cm");
    let cases: Vec<(String, &str, &str, u16, &str)> = vec![
        // (uri, content type, body, code, message contains)
        (
            uri.clone(),
            APPLY,
            TEST_CM,
            422,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ),
        (
            format!("{uri}?fieldManager=m"),
            APPLY,
            "apiVersion: v2\nkind: ConfigMap\nmetadata: {name: test-cm}\n",
            400,
            "invalid object type: /v2, Kind=ConfigMap",
        ),
        (
            format!("{uri}?fieldManager=m"),
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: test-cm, managedFields: [{manager: x}]}\n",
            400,
            "metadata.managedFields must be nil",
        ),
        (
            format!("{uri}?fieldManager=m"),
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n",
            400,
            "does not match the name on the URL",
        ),
        (
            format!("{uri}?fieldManager=m"),
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: test-cm}\nbogus: 1\n",
            500,
            "failed to create typed patch object (default/test-cm; /v1, Kind=ConfigMap): .bogus: field not declared in schema",
        ),
        (
            format!("{uri}?fieldManager=m"),
            APPLY,
            "a: [",
            400,
            "error decoding YAML",
        ),
        (
            format!("{uri}?force=true"),
            MERGE,
            "{}",
            422,
            "force: Forbidden: may not be specified for non-apply patch",
        ),
        (
            format!("{uri}?fieldManager={}", "x".repeat(129)),
            APPLY,
            TEST_CM,
            422,
            "fieldManager: Too long",
        ),
    ];
    for (uri, content_type, body, code, message) in cases {
        let reply = h.raw("PATCH", &uri, content_type, body).await;
        assert_eq!(reply.code, code, "{uri} {body}: {}", reply.body);
        assert!(
            reply.message().contains(message),
            "{uri}: {:?} lacks {message:?}",
            reply.message()
        );
    }
    // Nothing was created along the way; a dry-run apply creates nothing either.
    let dry = h.apply(&uri, "m", "&dryRun=All", TEST_CM).await;
    assert_eq!(dry.code, 201, "{}", dry.body);
    assert_eq!(dry.body["metadata"]["managedFields"][0]["manager"], "m");
    let (code, _) = h.call("GET", &uri, None).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn an_update_takes_ownership_and_the_same_change_as_apply_conflicts() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/test-cm");
    h.applied(&uri, "kubectl", TEST_CM).await;
    // kube-controller-manager changes data.key with an Update: no conflict, it owns it now.
    let patched = h
        .ok_as(
            "PATCH",
            &format!("{uri}?fieldManager=kube-controller-manager"),
            MERGE,
            Some(json!({"data": {"key": "new value"}})),
        )
        .await;
    assert_eq!(
        managers(&patched),
        pairs(&[("kubectl", "Apply"), ("kube-controller-manager", "Update")])
    );
    assert_eq!(
        fields_of(&patched, "kube-controller-manager"),
        json!({"f:data": {"f:key": {}}})
    );
    assert_eq!(
        fields_of(&patched, "kubectl"),
        json!({"f:metadata": {"f:labels": {"f:test-label": {}}}})
    );

    // kubectl applying its old value now conflicts, with upstream's message and cause.
    let conflict = h.apply(&uri, "kubectl", "", TEST_CM).await;
    assert_eq!(conflict.code, 409, "{}", conflict.body);
    assert_eq!(conflict.body["reason"], "Conflict");
    assert_eq!(
        conflict.message(),
        "Apply failed with 1 conflict: conflict with \"kube-controller-manager\" using v1: .data.key"
    );
    assert_eq!(
        conflict.body["details"]["causes"],
        json!([{
            "reason": "FieldManagerConflict",
            "message": "conflict with \"kube-controller-manager\" using v1",
            "field": ".data.key"
        }])
    );
    assert_eq!(h.get(&uri).await["data"]["key"], "new value");

    // Forcing takes the field back; the updater's entry, now empty, goes away.
    let forced = h.apply(&uri, "kubectl", "&force=true", TEST_CM).await;
    assert_eq!(forced.code, 200, "{}", forced.body);
    assert_eq!(forced.body["data"]["key"], "some value");
    assert_eq!(managers(&forced.body), pairs(&[("kubectl", "Apply")]));
}

#[tokio::test]
async fn appliers_share_equal_values_and_conflict_on_changes() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/shared");
    let config = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: shared}}\ndata: {{key: {value}}}\n"
        )
    };
    h.applied(&uri, "one", &config("a")).await;
    let shared = h.applied(&uri, "two", &config("a")).await;
    // Both own it; the second apply changed nothing, so its entry has no time and sorts
    // first, as upstream sorts entries without one.
    assert_eq!(
        managers(&shared),
        pairs(&[("two", "Apply"), ("one", "Apply")])
    );
    assert!(shared["metadata"]["managedFields"][0].get("time").is_none());
    assert_eq!(fields_of(&shared, "two"), json!({"f:data": {"f:key": {}}}));
    let conflict = h.apply(&uri, "two", "", &config("b")).await;
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.message(),
        "Apply failed with 1 conflict: conflict with \"one\": .data.key"
    );

    // A co-owner that drops the field gives up ownership; the value stays.
    let dropped = h
        .applied(
            &uri,
            "two",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n",
        )
        .await;
    assert_eq!(dropped["data"]["key"], "a");
    assert_eq!(managers(&dropped), pairs(&[("one", "Apply")]));
    // Now dropped by its last owner too: the field goes.
    let gone = h
        .applied(
            &uri,
            "one",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {other: x}\n",
        )
        .await;
    assert_eq!(gone["data"], json!({"other": "x"}));
    assert_eq!(fields_of(&gone, "one"), json!({"f:data": {"f:other": {}}}));
}

#[tokio::test]
async fn conflicts_name_every_field_and_manager() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/many");
    h.applied(
        &uri,
        "one",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many}\ndata: {a: '1', b: '2'}\n",
    )
    .await;
    h.applied(
        &uri,
        "two",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many}\ndata: {c: '3'}\n",
    )
    .await;
    let conflict = h
        .apply(
            &uri,
            "three",
            "",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: many}\ndata: {a: x, b: y, c: z}\n",
        )
        .await;
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.message(),
        "Apply failed with 3 conflicts: conflicts with \"one\":\n- .data.a\n- .data.b\nconflicts with \"two\":\n- .data.c"
    );
    let fields: Vec<&str> = conflict.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, [".data.a", ".data.b", ".data.c"]);
}

const NGINX: &str = "
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
";

#[tokio::test]
async fn replicas_hand_over_to_an_autoscaler() {
    let h = harness().await;
    let uri = format!("{DEPLOYMENTS}/nginx-deployment");
    let created = h.applied(&uri, "kubectl", NGINX).await;
    let fields = fields_of(&created, "kubectl");
    assert_eq!(fields["f:spec"]["f:replicas"], json!({}));
    assert_eq!(
        fields["f:spec"]["f:template"]["f:spec"]["f:containers"],
        json!({"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}})
    );
    // The selector is atomic: one member.
    assert_eq!(fields["f:spec"]["f:selector"], json!({}));

    // A temporary manager applies the same replicas: shared ownership.
    let replicas_only = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nginx-deployment}\nspec: {replicas: 3}\n";
    h.applied(&uri, "handover-to-hpa", replicas_only).await;
    // The user drops replicas from their configuration; the value stays.
    let without = NGINX.replace("  replicas: 3\n", "");
    let after = h.applied(&uri, "kubectl", &without).await;
    assert_eq!(after["spec"]["replicas"], 3);
    assert!(
        fields_of(&after, "kubectl")["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert_eq!(
        fields_of(&after, "handover-to-hpa"),
        json!({"f:spec": {"f:replicas": {}}})
    );

    // The autoscaler writes replicas through /scale: the temporary manager disappears.
    let scaled = h
        .ok(
            "PUT",
            &format!("{uri}/scale?fieldManager=horizontal-pod-autoscaler"),
            Some(json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                        "metadata": {"name": "nginx-deployment", "namespace": "default"},
                        "spec": {"replicas": 5}})),
        )
        .await;
    assert_eq!(scaled["spec"]["replicas"], 5);
    let object = h.get(&uri).await;
    assert_eq!(
        managers(&object),
        pairs(&[
            ("kubectl", "Apply"),
            ("horizontal-pod-autoscaler", "Update")
        ])
    );
    let hpa = &object["metadata"]["managedFields"][1];
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["apiVersion"], "apps/v1");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    // The user's next apply no longer touches replicas.
    let again = h.applied(&uri, "kubectl", &without).await;
    assert_eq!(again["spec"]["replicas"], 5);
}

#[tokio::test]
async fn list_items_and_status_have_their_own_owners() {
    let h = harness().await;
    let uri = format!("{DEPLOYMENTS}/nginx-deployment");
    h.applied(&uri, "kubectl", NGINX).await;
    // A sidecar injector adds its own container: a map list, so no conflict.
    let sidecar = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nginx-deployment}\nspec: {template: {spec: {containers: [{name: sidecar, image: envoy}]}}}\n";
    let both = h.applied(&uri, "injector", sidecar).await;
    let names: Vec<&str> = both["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nginx", "sidecar"]);
    // Changing the other manager's container image conflicts on that field only.
    let clash = sidecar.replace("name: sidecar, image: envoy", "name: nginx, image: evil");
    let conflict = h.apply(&uri, "injector", "", &clash).await;
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.body["details"]["causes"][0]["field"],
        ".spec.template.spec.containers[name=\"nginx\"].image"
    );
    // The injector drops its container: removed, the user's stays.
    let removed = h
        .applied(
            &uri,
            "injector",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nginx-deployment}\n",
        )
        .await;
    assert_eq!(
        removed["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx:1.14.2"}])
    );

    // Status is applied through /status only, and recorded with its subresource.
    let status = h
        .apply(
            &format!("{uri}/status"),
            "controller",
            "",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nginx-deployment}\nspec: {replicas: 9}\nstatus: {replicas: 3}\n",
        )
        .await;
    assert_eq!(status.code, 200, "{}", status.body);
    assert_eq!(status.body["status"], json!({"replicas": 3}));
    assert_eq!(status.body["spec"]["replicas"], 3);
    let entry = status.body["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "controller")
        .unwrap()
        .clone();
    assert_eq!(entry["subresource"], "status");
    assert_eq!(entry["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
    // Status in a main-resource apply is ignored.
    let main = h
        .applied(
            &uri,
            "kubectl",
            &format!("{NGINX}status: {{replicas: 7}}\n"),
        )
        .await;
    assert_eq!(main["status"], json!({"replicas": 3}));
    assert!(fields_of(&main, "kubectl").get("f:status").is_none());
    // /status never creates.
    let missing = h
        .apply(
            &format!("{DEPLOYMENTS}/none/status"),
            "c",
            "",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: none}\n",
        )
        .await;
    assert_eq!(missing.code, 404);
}

#[tokio::test]
async fn schema_list_and_map_types_decide_ownership() {
    let h = harness().await;
    let uri = format!("{WIDGETS}/w");
    let first = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  ports: [{port: 80, protocol: TCP, name: http}]\n  hosts: [a]\n  args: [x]\n  selector: {app: w}\n  settings: {one: {v: '1'}}\n";
    let created = h.applied(&uri, "one", first).await;
    assert_eq!(
        fields_of(&created, "one"),
        json!({"f:spec": {
            "f:args": {},
            "f:hosts": {"v:\"a\"": {}},
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}},
            "f:selector": {},
            "f:settings": {"f:one": {".": {}, "f:v": {}}},
        }})
    );
    // Another manager adds its own port, host and setting: granular, no conflict.
    let second = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  ports: [{port: 443, protocol: TCP}]\n  hosts: [b]\n  settings: {two: {v: '2'}}\n";
    let merged = h.applied(&uri, "two", second).await;
    assert_eq!(merged["spec"]["ports"].as_array().unwrap().len(), 2);
    assert_eq!(merged["spec"]["hosts"], json!(["a", "b"]));
    assert_eq!(
        merged["spec"]["settings"],
        json!({"one": {"v": "1"}, "two": {"v": "2"}})
    );
    // Atomic list and atomic map: any change conflicts with their owner.
    for (config, field) in [
        ("  args: [y]\n", ".spec.args"),
        ("  selector: {app: w, tier: x}\n", ".spec.selector"),
    ] {
        let body = format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w}}\nspec:\n{config}"
        );
        let conflict = h.apply(&uri, "two", "", &body).await;
        assert_eq!(conflict.code, 409, "{config}");
        assert_eq!(conflict.body["details"]["causes"][0]["field"], field);
    }
}

#[tokio::test]
async fn every_other_write_records_an_update() {
    let h = harness().await;
    let created = h
        .exchange(
            "POST",
            CONFIGMAPS,
            &[
                ("content-type", "application/json"),
                ("user-agent", "OpenAPI-Generator/31.0.0/python"),
            ],
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "u", "labels": {"a": "1"}}, "data": {"k": "v"}}))
            .unwrap(),
        )
        .await;
    assert_eq!(created.code(), 201);
    let created = created.json();
    assert_eq!(
        managers(&created),
        pairs(&[("OpenAPI-Generator", "Update")])
    );
    // The maps the create made whole are owned with them (upstream's ".").
    assert_eq!(
        fields_of(&created, "OpenAPI-Generator"),
        json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
    );
    // A PUT by another manager owns what it changed; the creator keeps the rest.
    let mut next = created.clone();
    next["data"]["k"] = json!("w");
    next["data"]["n"] = json!("new");
    let updated = h
        .ok(
            "PUT",
            &format!("{CONFIGMAPS}/u?fieldManager=kubectl-edit"),
            Some(next),
        )
        .await;
    assert_eq!(
        managers(&updated),
        pairs(&[("OpenAPI-Generator", "Update"), ("kubectl-edit", "Update")])
    );
    assert_eq!(
        fields_of(&updated, "kubectl-edit"),
        json!({"f:data": {"f:k": {}, "f:n": {}}})
    );
    assert_eq!(
        fields_of(&updated, "OpenAPI-Generator"),
        json!({"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
    );
    // Removing a field removes it from its owner, and the emptied map with it.
    let patched = h
        .ok_as(
            "PATCH",
            &format!("{CONFIGMAPS}/u?fieldManager=kubectl-patch"),
            MERGE,
            Some(json!({"metadata": {"labels": {"a": null}}})),
        )
        .await;
    assert_eq!(
        managers(&patched),
        pairs(&[("OpenAPI-Generator", "Update"), ("kubectl-edit", "Update")])
    );
    assert_eq!(
        fields_of(&patched, "OpenAPI-Generator"),
        json!({"f:data": {}})
    );
}

#[tokio::test]
async fn updates_own_the_nodes_they_create_as_upstream_compares() {
    let h = harness().await;
    // (collection, object, the creator's fieldsV1)
    let rows = [
        (
            WIDGETS,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w", "labels": {"app": "w"}},
                   "spec": {"hosts": ["a"], "settings": {"one": {"v": "1"}}}}),
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                   "f:spec": {".": {},
                              "f:hosts": {".": {}, "v:\"a\"": {}},
                              "f:settings": {".": {}, "f:one": {".": {}, "f:v": {}}}}}),
        ),
        // A typed kind's spec and template exist in its empty object: no "." there.
        (
            DEPLOYMENTS,
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "d", "labels": {"app": "d"}},
                   "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                   "f:spec": {"f:replicas": {},
                              "f:template": {"f:spec": {"f:containers": {".": {},
                                  "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}),
        ),
    ];
    for (collection, object, want) in rows {
        let created = h
            .ok(
                "POST",
                &format!("{collection}?fieldManager=creator"),
                Some(object),
            )
            .await;
        assert_eq!(fields_of(&created, "creator"), want, "{collection}");
    }
}

#[tokio::test]
async fn a_namespace_creator_does_not_own_the_finalizers_the_server_sets() {
    let h = harness().await;
    let created = h
        .ok(
            "POST",
            "/api/v1/namespaces?fieldManager=creator",
            Some(json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": "team", "labels": {"a": "b"}}})),
        )
        .await;
    assert_eq!(created["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(
        fields_of(&created, "creator"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:a": {}}}})
    );
}

#[tokio::test]
async fn written_managed_fields_are_validated_or_ignored_as_upstream() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/test-cm");
    let applied = h.applied(&uri, "kubectl", TEST_CM).await;
    let entry = |manager: &str, operation: &str, fields_type: &str| {
        json!([{"manager": manager, "operation": operation, "apiVersion": "v1",
                "fieldsType": fields_type, "fieldsV1": {"f:data": {"f:key": {}}}}])
    };
    // Entries that do not decode leave the stored ones in place.
    for written in [
        entry("x", "Patch", "FieldsV1"),
        entry("x", "Update", "FieldsV2"),
    ] {
        let kept = h
            .ok_as(
                "PATCH",
                &format!("{uri}?fieldManager=writer"),
                MERGE,
                Some(json!({"metadata": {"managedFields": written}})),
            )
            .await;
        assert_eq!(
            kept["metadata"]["managedFields"], applied["metadata"]["managedFields"],
            "{written}"
        );
    }
    // Names upstream's validation refuses are a 422 on the kind.
    let long = "m".repeat(129);
    for (written, field, message) in [
        (
            entry(&long, "Update", "FieldsV1"),
            "metadata.managedFields[0].manager",
            "Too long: may not be more than 128 bytes",
        ),
        (
            entry("a\u{1}b", "Update", "FieldsV1"),
            "metadata.managedFields[0].manager",
            "invalid character U+0001 (at position 1)",
        ),
    ] {
        let reply = h
            .raw(
                "PATCH",
                &format!("{uri}?fieldManager=writer"),
                MERGE,
                serde_json::to_vec(&json!({"metadata": {"managedFields": written}})).unwrap(),
            )
            .await;
        assert_eq!(reply.code, 422, "{}", reply.body);
        assert_eq!(reply.body["details"]["kind"], "ConfigMap");
        let cause = &reply.body["details"]["causes"][0];
        assert_eq!(cause["field"], field);
        assert!(
            cause["message"].as_str().unwrap().contains(message),
            "{cause}"
        );
    }
}

#[tokio::test]
async fn apply_merges_list_items_in_the_configurations_order() {
    let h = harness().await;
    let uri = format!("{WIDGETS}/w");
    let config = |hosts: &str, ports: &[u16]| {
        let ports: Vec<String> = ports
            .iter()
            .map(|p| format!("{{port: {p}, protocol: TCP}}"))
            .collect();
        format!(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: w}}\nspec:\n  hosts: [{hosts}]\n  ports: [{}]\n",
            ports.join(", ")
        )
    };
    let ports = |object: &Value| -> Vec<u64> {
        object["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["port"].as_u64().unwrap())
            .collect()
    };
    // (manager, hosts, ports, hosts after, ports after)
    type Row<'a> = (&'a str, &'a str, &'a [u16], Value, &'a [u64]);
    let rows: [Row<'_>; 4] = [
        ("one", "a, c", &[1, 3], json!(["a", "c"]), &[1, 3]),
        (
            "one",
            "a, b, c",
            &[1, 2, 3],
            json!(["a", "b", "c"]),
            &[1, 2, 3],
        ),
        (
            "one",
            "c, b, a",
            &[3, 2, 1],
            json!(["c", "b", "a"]),
            &[3, 2, 1],
        ),
        // Another manager's items keep their place among the first one's.
        (
            "two",
            "z, a",
            &[9, 1],
            json!(["c", "b", "z", "a"]),
            &[3, 2, 9, 1],
        ),
    ];
    for (manager, hosts, list, want_hosts, want_ports) in rows {
        let object = h.applied(&uri, manager, &config(hosts, list)).await;
        assert_eq!(object["spec"]["hosts"], want_hosts, "{manager} {hosts}");
        assert_eq!(ports(&object), want_ports, "{manager} {list:?}");
    }
}

#[tokio::test]
async fn apply_configurations_must_name_every_list_item_once() {
    let h = harness().await;
    let uri = format!("{WIDGETS}/w");
    let head = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n";
    let typed = "failed to create typed patch object (default/w; example.com/v1, Kind=Widget): ";
    let rows = [
        (
            "  ports: [{port: 80}]\n",
            r#".spec.ports: element 0: associative list with keys has an element that omits key field "protocol" (and doesn't have default value)"#.to_owned(),
        ),
        (
            "  ports: [{port: 80, protocol: TCP}, {port: 80, protocol: TCP, name: x}]\n",
            r#".spec.ports: duplicate entries for key [port=80,protocol="TCP"]"#.to_owned(),
        ),
        (
            "  hosts: [a, a]\n  ports: [{name: x}]\n",
            format!(
                "errors:\n  .spec.hosts: duplicate entries for key [=\"a\"]\n  {}",
                r#".spec.ports: element 0: associative list with keys has an element that omits key field "port" (and doesn't have default value)"#
            ),
        ),
    ];
    for (spec, message) in rows {
        // Twice: a refused configuration changes nothing, so nothing piles up.
        for _ in 0..2 {
            let reply = h.apply(&uri, "one", "", &format!("{head}{spec}")).await;
            assert_eq!(reply.code, 500, "{spec}: {}", reply.body);
            assert_eq!(reply.message(), format!("{typed}{message}"), "{spec}");
        }
    }
    let (code, _) = h.call("GET", &uri, None).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn apply_through_scale_owns_the_replicas() {
    let h = harness().await;
    let uri = format!("{DEPLOYMENTS}/nginx-deployment");
    h.applied(&uri, "kubectl", NGINX).await;
    let scale = |replicas: u32| {
        format!(
            "apiVersion: autoscaling/v1\nkind: Scale\nmetadata: {{name: nginx-deployment}}\nspec: {{replicas: {replicas}}}\n"
        )
    };
    let scale_uri = format!("{uri}/scale");
    // (manager, query, config, code, message)
    let refused = [
        ("", "", scale(5), 422, "fieldManager: Required value"),
        (
            "hpa",
            "",
            scale(5),
            409,
            "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas",
        ),
        (
            "hpa",
            "",
            NGINX.to_owned(),
            400,
            "invalid object type: apps/v1, Kind=Deployment",
        ),
        (
            "hpa",
            "",
            "apiVersion: autoscaling/v1\nkind: Scale\nspec: {replicas: -1}\n".to_owned(),
            422,
            "must be greater than or equal to 0",
        ),
    ];
    for (manager, query, config, code, message) in refused {
        let reply = if manager.is_empty() {
            h.raw("PATCH", &scale_uri, APPLY, &config).await
        } else {
            h.apply(&scale_uri, manager, query, &config).await
        };
        assert_eq!(reply.code, code, "{manager}: {}", reply.body);
        assert!(reply.message().contains(message), "{}", reply.message());
    }
    // The same value is shared; forcing a new one takes it.
    let shared = h.apply(&scale_uri, "hpa", "", &scale(3)).await;
    assert_eq!(shared.code, 200, "{}", shared.body);
    assert_eq!(shared.body["kind"], "Scale");
    let forced = h.apply(&scale_uri, "hpa", "&force=true", &scale(5)).await;
    assert_eq!(forced.code, 200, "{}", forced.body);
    assert_eq!(forced.body["spec"]["replicas"], 5);
    let object = h.get(&uri).await;
    assert_eq!(object["spec"]["replicas"], 5);
    let hpa = object["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "hpa")
        .unwrap()
        .clone();
    assert_eq!(hpa["operation"], "Apply");
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["apiVersion"], "apps/v1");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert!(
        fields_of(&object, "kubectl")["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    // The user's apply now conflicts with the scale applier.
    let conflict = h.apply(&uri, "kubectl", "", NGINX).await;
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.message(),
        "Apply failed with 1 conflict: conflict with \"hpa\" with subresource \"scale\": .spec.replicas"
    );
}

#[tokio::test]
async fn strict_apply_refuses_repeated_keys_and_warn_reports_them() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/dup");
    let body =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dup}\ndata:\n  a: '1'\n  a: '2'\n";
    let problem = "error converting YAML to JSON: yaml: unmarshal errors:\n  line 6: key \"a\" already set in map";
    let strict = h.apply(&uri, "m", "&fieldValidation=Strict", body).await;
    assert_eq!(strict.code, 400, "{}", strict.body);
    assert_eq!(
        strict.message(),
        format!("error strict decoding YAML: {problem}")
    );
    let (code, _) = h.call("GET", &uri, None).await;
    assert_eq!(code, 404);
    let warned = h.apply(&uri, "m", "&fieldValidation=Warn", body).await;
    assert_eq!(warned.code, 201, "{}", warned.body);
    assert_eq!(warned.warnings.len(), 1, "{:?}", warned.warnings);
    // On one line, quoted as a Warning header quotes.
    let shown = problem.replace('\n', " ").replace('"', "\\\"");
    assert!(warned.warnings[0].contains(&shown), "{:?}", warned.warnings);
    let ignored = h.apply(&uri, "m", "&fieldValidation=Ignore", body).await;
    assert_eq!(ignored.code, 200);
    assert!(ignored.warnings.is_empty());
}

#[tokio::test]
async fn managed_fields_clear_with_one_empty_entry_only() {
    let h = harness().await;
    let uri = format!("{CONFIGMAPS}/test-cm");
    h.applied(&uri, "kubectl", TEST_CM).await;
    // `[]` leaves them as they are.
    let kept = h
        .ok_as(
            "PATCH",
            &uri,
            MERGE,
            Some(json!({"metadata": {"managedFields": []}})),
        )
        .await;
    assert_eq!(managers(&kept), pairs(&[("kubectl", "Apply")]));
    // `[{}]` clears them, by JSON patch as by merge patch.
    let cleared = h
        .ok_as(
            "PATCH",
            &uri,
            "application/json-patch+json",
            Some(json!([{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}])),
        )
        .await;
    assert!(
        cleared["metadata"].get("managedFields").is_none(),
        "{cleared}"
    );
    // Untracked now; the next apply gives the existing fields to before-first-apply.
    let applied = h
        .applied(
            &uri,
            "kubectl",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: test-cm}\ndata: {other: x}\n",
        )
        .await;
    assert_eq!(
        managers(&applied),
        pairs(&[("kubectl", "Apply"), ("before-first-apply", "Update")])
    );
    assert_eq!(applied["data"], json!({"key": "some value", "other": "x"}));
    let conflict = h
        .apply(
            &uri,
            "kubectl",
            "",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: test-cm}\ndata: {key: changed}\n",
        )
        .await;
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.message(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.key"
    );
}
