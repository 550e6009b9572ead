//! The types `build.rs` generated from `specs/example/widgets.kapi.dev.yaml`, used the way a
//! downstream crate would: built, serialized, decoded, described and registered. Also checks that
//! the build script really printed its `cargo:rerun-if-changed` directive.

use std::borrow::Cow;

use kapi::meta::ObjectMeta;
use kapi::resource::{KubeVersion, Scale, Scope};
use kapi::{Quantity, Registry, Resource, Time};
use kapi_codegen_example::widgets::{v1, v1alpha1, v1beta1};
use serde_json::{Value, json};

fn widget(name: &str, color: v1::WidgetSpecColor, replicas: i32) -> v1::Widget {
    v1::Widget {
        api_version: Default::default(),
        kind: Default::default(),
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        spec: v1::WidgetSpec {
            color,
            replicas: Some(replicas),
            size: None,
            labels: None,
            parts: None,
            tags: None,
            config: None,
            template: None,
            timeout: None,
            checksum: None,
            expires_at: None,
        },
        status: None,
    }
}

#[test]
fn a_built_widget_serializes_with_its_api_version_and_kind() {
    let w = widget("w1", v1::WidgetSpecColor::Blue, 3);
    let value = serde_json::to_value(&w).expect("serializes");
    assert_eq!(
        value,
        json!({
            "apiVersion": "widgets.kapi.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default"},
            "spec": {"color": "blue", "replicas": 3}
        })
    );
    let back: v1::Widget = serde_json::from_value(value).expect("decodes");
    assert_eq!(back, w);
}

#[test]
fn every_version_writes_its_own_api_version() {
    let cases: [(Value, &str); 3] = [
        (
            serde_json::to_value(v1alpha1::Widget::default()).expect("v1alpha1"),
            "widgets.kapi.dev/v1alpha1",
        ),
        (
            serde_json::to_value(v1beta1::Widget::default()).expect("v1beta1"),
            "widgets.kapi.dev/v1beta1",
        ),
        (
            serde_json::to_value(widget("w", v1::WidgetSpecColor::Red, 1)).expect("v1"),
            "widgets.kapi.dev/v1",
        ),
    ];
    for (value, api_version) in cases {
        assert_eq!(value["apiVersion"], api_version, "{value}");
        assert_eq!(value["kind"], "Widget", "{value}");
    }
}

/// What a server would return for a Widget that a controller has reconciled.
const REAL_WIDGET: &str = r#"{
  "apiVersion": "widgets.kapi.dev/v1",
  "kind": "Widget",
  "metadata": {
    "name": "blue-widget",
    "namespace": "shop",
    "uid": "5b4c1e9e-7a43-4d55-9d3e-0b8f4d7b2a11",
    "resourceVersion": "48213",
    "generation": 4,
    "creationTimestamp": "2025-03-01T10:00:00Z",
    "labels": {"app": "shop"}
  },
  "spec": {
    "color": "blue",
    "replicas": 3,
    "size": "1500m",
    "labels": {"tier": "front"},
    "parts": [{"name": "gear", "count": 12, "weight": 0.5}, {"name": "spring"}],
    "tags": ["fast", "shiny"],
    "config": {"mode": "eco", "limits": {"rpm": 3000}},
    "template": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}},
    "timeout": "30s",
    "checksum": "aGVsbG8=",
    "expiresAt": "2026-01-01T00:00:00Z"
  },
  "status": {
    "replicas": 3,
    "selector": "app=shop",
    "observedGeneration": 4,
    "conditions": [{
      "type": "Ready",
      "status": "True",
      "observedGeneration": 4,
      "lastTransitionTime": "2025-03-01T10:05:00Z",
      "reason": "AllPartsFitted",
      "message": "3 of 3 replicas ready"
    }]
  }
}"#;

#[test]
fn a_realistic_widget_decodes_and_round_trips() {
    let w: v1::Widget = serde_json::from_str(REAL_WIDGET).expect("decodes");
    assert_eq!(w.metadata.name.as_deref(), Some("blue-widget"));
    assert_eq!(w.spec.color, v1::WidgetSpecColor::Blue);
    // v1 `size` is int-or-string with the quantity pattern, so it is a Quantity.
    assert_eq!(
        w.spec.size,
        Some("1500m".parse::<Quantity>().expect("quantity"))
    );
    let parts = w.spec.parts.as_deref().expect("parts");
    assert_eq!(parts.len(), 2);
    assert_eq!((parts[0].name.as_str(), parts[0].count), ("gear", Some(12)));
    assert_eq!(parts[1].weight, None);
    assert_eq!(
        w.spec.checksum.as_ref().map(|c| c.as_slice()),
        Some(&b"hello"[..])
    );
    assert_eq!(
        w.spec.expires_at,
        Some("2026-01-01T00:00:00Z".parse::<Time>().expect("time"))
    );
    assert_eq!(
        w.spec.config.as_ref().expect("config")["limits"]["rpm"],
        3000
    );
    let status = w.status.as_ref().expect("status");
    let conditions = status.conditions.as_ref().expect("conditions");
    assert_eq!(conditions[0].type_, "Ready");
    // The CRD's conditions are metav1.Condition's shape: kapi's Condition and its helpers.
    assert!(kapi::meta::Conditions::is_condition_true(
        conditions, "Ready"
    ));

    let original: Value = serde_json::from_str(REAL_WIDGET).expect("json");
    assert_eq!(serde_json::to_value(&w).expect("encodes"), original);
}

#[test]
fn decoding_rejects_the_wrong_kind_or_version() {
    let mut other_version: Value = serde_json::from_str(REAL_WIDGET).expect("json");
    other_version["apiVersion"] = json!("widgets.kapi.dev/v1beta1");
    let mut other_kind: Value = serde_json::from_str(REAL_WIDGET).expect("json");
    other_kind["kind"] = json!("Gizmo");
    for value in [other_version, other_kind] {
        assert!(
            serde_json::from_value::<v1::Widget>(value.clone()).is_err(),
            "{value}"
        );
    }
}

#[test]
fn widget_info_describes_the_crd() {
    let info = v1::Widget::info();
    assert_eq!(info.api_version(), "widgets.kapi.dev/v1");
    assert_eq!(info.plural, "widgets");
    assert_eq!(info.singular, "widget");
    assert_eq!(info.scope, Scope::Namespaced);
    assert_eq!(&*info.short_names, [Cow::Borrowed("wdg")]);
    assert_eq!(&*info.categories, ["all", "kapi"]);
    assert!(info.subresources.status);
    assert_eq!(
        info.subresources.scale,
        Some(Scale {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".status.selector".into()),
        })
    );
    let columns: Vec<(&str, &str, i32, &str)> = info
        .printer_columns
        .iter()
        .map(|c| {
            (
                &*c.name,
                &*c.type_,
                c.priority,
                c.cell.json_path().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        columns,
        [
            ("Color", "string", 0, ".spec.color"),
            ("Replicas", "integer", 0, ".spec.replicas"),
            ("Size", "string", 1, ".spec.size"),
        ]
    );
    assert_eq!(&*info.selectable_fields, [".spec.color"]);
    assert_eq!(info.lifecycle.warning, None);

    let gizmo = kapi_codegen_example::widgets::v1::Gizmo::info();
    assert_eq!(gizmo.scope, Scope::Cluster);
    assert_eq!(gizmo.plural, "gizmos");
    assert_eq!(gizmo.subresources.scale, None);
}

#[test]
fn deprecated_versions_carry_their_warnings() {
    let now = KubeVersion::new(1, 34);
    let cases = [
        (
            v1alpha1::Widget::info(),
            Some(
                "widgets.kapi.dev/v1alpha1 Widget is deprecated and will be removed; use widgets.kapi.dev/v1 Widget",
            ),
        ),
        (
            v1beta1::Widget::info(),
            Some("widgets.kapi.dev/v1beta1 Widget is deprecated; use widgets.kapi.dev/v1 Widget"),
        ),
        (v1::Widget::info(), None),
    ];
    for (info, warning) in cases {
        assert_eq!(
            info.lifecycle.warning.as_deref(),
            warning,
            "{}",
            info.gvk.version
        );
        assert_eq!(
            info.lifecycle.is_deprecated_at(now),
            warning.is_some(),
            "{}",
            info.gvk.version
        );
        assert!(!info.lifecycle.is_removed_at(now), "{}", info.gvk.version);
    }
}

#[test]
fn the_kinds_register_and_their_codecs_check_the_schema() {
    fn served(registry: &Registry) -> Vec<(String, String, String)> {
        registry
            .kinds()
            .map(|k| {
                (
                    k.info.gvk.group.to_string(),
                    k.info.gvk.version.to_string(),
                    k.info.plural.to_string(),
                )
            })
            .collect()
    }
    let expected: Vec<(String, String, String)> = [
        ("v1", "gizmos"),
        ("v1", "widgets"),
        ("v1alpha1", "widgets"),
        ("v1beta1", "widgets"),
    ]
    .iter()
    .map(|(v, p)| ("widgets.kapi.dev".to_owned(), v.to_string(), p.to_string()))
    .collect();

    // The generated functions: one for the whole spec, one per group, one per group-version.
    let mut registry = Registry::new();
    kapi_codegen_example::register(&mut registry);
    assert_eq!(served(&registry), expected);

    let mut by_group = Registry::new();
    kapi_codegen_example::widgets::register(&mut by_group);
    assert_eq!(served(&by_group), expected);

    let mut one_version = Registry::new();
    v1beta1::register(&mut one_version);
    assert_eq!(served(&one_version), expected[3..]);

    // By hand, as a crate adding its own types would.
    let mut by_hand = Registry::new();
    by_hand
        .register::<v1::Widget>()
        .register::<v1beta1::Widget>()
        .register::<v1alpha1::Widget>()
        .register::<v1::Gizmo>();
    assert_eq!(served(&by_hand), expected);

    let kind = registry
        .get("widgets.kapi.dev", "v1", "widgets")
        .expect("registered");
    assert!(kind.merge.is_some(), "v1 Widget declares merge metadata");
    let mut value: Value = serde_json::from_str(REAL_WIDGET).expect("json");
    let round_tripped = (kind.codec)(value.clone()).expect("codec accepts a valid widget");
    assert_eq!(round_tripped, value);
    // A field the schema does not know is dropped by the codec: that is how the server spots it.
    value["spec"]["unknown"] = json!(1);
    let pruned = (kind.codec)(value).expect("codec");
    assert_eq!(pruned["spec"].get("unknown"), None);
    assert!(registry.get("widgets.kapi.dev", "v2", "widgets").is_none());
}

#[test]
fn the_build_script_printed_rerun_if_changed_for_its_input() {
    // Cargo stores a build script's stdout in `output` next to its OUT_DIR.
    let out_dir = std::path::Path::new(env!("OUT_DIR"));
    let output = out_dir
        .parent()
        .map(|dir| dir.join("output"))
        .expect("OUT_DIR has a parent");
    let printed = std::fs::read_to_string(&output).expect("build script output");
    let directives: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("cargo:rerun-if-changed="))
        .collect();
    assert_eq!(
        directives,
        ["cargo:rerun-if-changed=../../../specs/example/widgets.kapi.dev.yaml"],
        "{}",
        output.display()
    );
    let generated =
        std::fs::read_to_string(out_dir.join("kapi_generated.rs")).expect("generated file");
    assert!(
        generated.starts_with("// @generated by kapi-codegen "),
        "{generated:.80}"
    );
}
