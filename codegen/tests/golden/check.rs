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
