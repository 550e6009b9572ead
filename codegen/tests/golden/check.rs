//! Compiled into the golden scratch crate: exercises the generated golden code end to end.

use kapi::Resource;
use kapi::merge::{ListType, MapType};

use crate::crd::stable::v1 as crd_v1;
use crate::swagger::widgets::v1beta1 as w;

#[test]
fn widget_round_trips_and_describes_itself() {
    let json = serde_json::json!({
        "apiVersion": "widgets.example.k8s.io/v1beta1",
        "kind": "Widget",
        "metadata": {"name": "a"},
        "spec": {
            "size": 3, "ports": [{"port": 80}], "podIP": "10.0.0.1", "type": "t", "$ref": "r",
            "caBundle": "aGk=", "maxSurge": "25%", "memory": "1Gi", "restartPolicy": "Sometimes",
            "phase": "Ready", "template": {"not": {"name": "inner"}, "children": [{"name": "c"}]},
            "inline": {"level": 1, "kind": "B"}
        }
    });
    let widget: w::Widget = serde_json::from_value(json.clone()).expect("decodes");
    let spec = widget.spec.as_ref().expect("spec");
    assert_eq!(
        spec.restart_policy.as_ref().map(|p| p.as_str()),
        Some("Sometimes")
    );
    assert_eq!(spec.phase, Some(w::WidgetPhase::Ready));
    assert_eq!(
        spec.ca_bundle.as_ref().map(|b| b.as_slice()),
        Some(&b"hi"[..])
    );
    assert_eq!(serde_json::to_value(&widget).expect("encodes"), json);

    let info = w::Widget::info();
    assert_eq!(info.plural, "widgets");
    assert!(info.subresources.status);
    assert_eq!(
        info.subresources
            .scale
            .as_ref()
            .map(|s| s.spec_replicas_path.as_ref()),
        Some(".spec.replicas")
    );
    assert_eq!(
        info.lifecycle.deprecated,
        Some(kapi::KubeVersion::new(1, 33))
    );
    assert_eq!(info.lifecycle.removed, Some(kapi::KubeVersion::new(1, 36)));
    let _list: w::WidgetList = kapi::List::default();

    let gizmo = w::Gizmo::info();
    assert!(!gizmo.is_namespaced());
    assert_eq!(gizmo.verbs.as_ref(), [kapi::Verb::Get, kapi::Verb::List]);
    let _own_list = w::GizmoList::default();
}

#[test]
fn merge_metadata_reaches_nested_types() {
    let root = w::Widget::merge_info().expect("kinds carry merge metadata");
    let spec = root.field("spec").and_then(|f| f.ty).expect("spec");
    let ports = spec.field("ports").expect("ports");
    assert_eq!(ports.list_type, Some(ListType::Map));
    assert_eq!(ports.list_map_keys, ["port", "protocol"]);
    assert_eq!(ports.patch_merge_key, Some("port"));
    let owner = spec.field("owner").and_then(|f| f.ty).expect("owner");
    assert_eq!(owner.map_type, Some(MapType::Atomic));
    let meta = root.field("metadata").and_then(|f| f.ty).expect("metadata");
    assert_eq!(
        meta.field("ownerReferences").map(|f| f.list_map_keys),
        Some(&["uid"][..])
    );

    let crd = crd_v1::CronTab::merge_info().expect("kinds carry merge metadata");
    let jobs = crd
        .field("spec")
        .and_then(|f| f.ty)
        .and_then(|s| s.field("jobs"))
        .expect("jobs");
    assert_eq!(jobs.ty.map(|t| t.map_type), Some(Some(MapType::Atomic)));
    assert!(std::ptr::eq(
        crd.field("metadata").and_then(|f| f.ty).expect("metadata"),
        &kapi::merge::OBJECT_META
    ));
}

#[test]
fn crd_kinds_carry_their_names_and_columns() {
    let info = crd_v1::CronTab::info();
    assert_eq!(info.short_names.as_ref(), ["ct"]);
    assert_eq!(info.categories.as_ref(), ["all"]);
    assert_eq!(info.printer_columns.len(), 3);
    assert_eq!(info.selectable_fields.as_ref(), [".spec.color"]);
    let old = crate::crd::stable::v1beta1::CronTab::info();
    assert_eq!(
        old.lifecycle.warning.as_deref(),
        Some("stable.example.com/v1beta1 CronTab is deprecated; use stable.example.com/v1 CronTab")
    );
    let tab: crd_v1::CronTab = serde_json::from_str(
        r#"{"apiVersion":"stable.example.com/v1","kind":"CronTab","spec":{"cronSpec":"* * * * *","maxUnavailable":1,"params":{"x":[1]}}}"#,
    )
    .expect("decodes");
    assert_eq!(
        tab.spec.as_ref().map(|s| s.cron_spec.as_str()),
        Some("* * * * *")
    );
}

/// Issue 17: CRD constructs from the wild (`tests/golden/edge.yaml`), one per item.
mod edge {
    use kapi::Resource;
    use serde_json::{Value, json};

    use crate::edge::edge::v1 as e;
    use crate::edge::names::v1 as n;

    fn round_trip<K: Resource>(input: &Value) -> Value {
        let object: K = serde_json::from_value(input.clone()).expect("decodes");
        serde_json::to_value(&object).expect("encodes")
    }

    /// Item 1: a status subresource without a `status` property compiles and keeps `.status`.
    #[test]
    fn status_without_a_schema_is_kept() {
        assert!(e::Gadget::info().subresources.status);
        let gadget = json!({"apiVersion": "edge.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g"}, "spec": {"owner": "me"}, "status": {"phase": "Ready"}});
        assert_eq!(round_trip::<e::Gadget>(&gadget), gadget);
    }

    /// Items 2 and 3: `x-kubernetes-preserve-unknown-fields` at the root and beside properties.
    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let blob = json!({"apiVersion": "edge.example.com/v1", "kind": "Blob",
            "metadata": {"name": "b"}, "spec": {"anything": [1, {"x": null}]}, "data": "d"});
        assert_eq!(round_trip::<e::Blob>(&blob), blob);
        let gadget = json!({"apiVersion": "edge.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"owner": "me", "replicas": 2, "future": {"a": 1}, "other": "x"}});
        let decoded: e::Gadget = serde_json::from_value(gadget.clone()).expect("decodes");
        let spec = decoded.spec.as_ref().expect("spec");
        assert_eq!(spec.replicas, Some(2));
        assert_eq!(spec.extra.keys().collect::<Vec<_>>(), ["future", "other"]);
        assert_eq!(serde_json::to_value(&decoded).expect("encodes"), gadget);
    }

    /// Item 7: `required` with `nullable: true` admits `null`.
    #[test]
    fn required_nullable_admits_null() {
        let gadget = json!({"apiVersion": "edge.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g"}, "spec": {"owner": null}});
        let decoded: e::Gadget = serde_json::from_value(gadget).expect("null is valid");
        assert_eq!(decoded.spec.and_then(|s| s.owner), None);
    }

    /// Item 6: the `served: false` version is not generated, so not registered.
    #[test]
    fn unserved_versions_are_not_registered() {
        let mut registry = kapi::Registry::new();
        crate::edge::register(&mut registry);
        let kinds: Vec<String> = registry
            .kinds()
            .map(|k| format!("{}/{}", k.info.gvk.group, k.info.gvk.version))
            .collect();
        assert!(kinds.iter().all(|k| !k.ends_with("/v1alpha1")), "{kinds:?}");
    }

    /// Item 8: kinds named like prelude types keep their kind names.
    #[test]
    fn prelude_named_kinds_keep_their_kind() {
        assert_eq!(n::DefaultType::KIND, "Default");
        assert_eq!(n::VecType::KIND, "Vec");
        assert_eq!(n::OptionType::KIND, "Option");
        assert_eq!(n::ResultType::KIND, "Result");
        assert_eq!(n::BoxType::KIND, "Box");
        assert_eq!(n::StringType::KIND, "String");
        let object = json!({"apiVersion": "names.example.com/v1", "kind": "Default",
            "metadata": {"name": "d"}, "spec": {"value": "a"}});
        assert_eq!(round_trip::<n::DefaultType>(&object), object);
    }

    /// Item 9: escaped names that collide get lint-clean suffixes.
    #[test]
    fn colliding_escaped_fields_round_trip() {
        let gadget = json!({"apiVersion": "edge.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"owner": "o", "type": "a", "type_": "b", "Self": "c", "self": "d"}});
        let decoded: e::Gadget = serde_json::from_value(gadget.clone()).expect("decodes");
        let spec = decoded.spec.as_ref().expect("spec");
        assert_eq!(spec.type_2.as_deref(), Some("b"));
        assert_eq!(spec.self_2.as_deref(), Some("d"));
        assert_eq!(serde_json::to_value(&decoded).expect("encodes"), gadget);
    }

    /// Item 11: quantities and numbers write back as read (custom resources are stored
    /// verbatim upstream), and a decode error names the field.
    #[test]
    fn values_write_back_as_read() {
        let gadget = json!({"apiVersion": "edge.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g"},
            "spec": {"owner": "o", "ratio": 100, "weight": 0.05,
                     "limits": {"cpu": "1000m", "memory": "0.05", "pods": 2, "big": 107374182400_u64}}});
        let decoded: e::Gadget = serde_json::from_value(gadget.clone()).expect("decodes");
        let spec = decoded.spec.as_ref().expect("spec");
        assert_eq!(spec.ratio.as_ref().map(kapi::Number::as_f64), Some(100.0));
        let text = serde_json::to_string(&decoded).expect("encodes");
        assert!(text.contains(r#""ratio":100,"#), "{text}");
        assert!(text.contains(r#""cpu":"1000m""#), "{text}");
        assert_eq!(serde_json::to_value(&decoded).expect("encodes"), gadget);
        let error = serde_json::from_str::<e::Gadget>(
            r#"{"apiVersion": "edge.example.com/v1", "kind": "Gadget", "spec": {"replicas": "two"}}"#,
        )
        .expect_err("a string is not an integer")
        .to_string();
        assert!(error.starts_with("at `.spec.replicas`: invalid type"), "{error}");
    }
}
