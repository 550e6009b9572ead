//! `#[derive(Resource)]` end to end: the constants and `ResourceInfo` it emits, its defaults
//! (including upstream's plural guessing), the `<Name>List` alias, and the JSON form of derived
//! kinds through the `apiVersion`/`kind` type tags.

use std::borrow::Cow;

use kapi::defaulting::{Default, Rule as DefaultRule};
use kapi::meta::{ListMeta, ObjectMeta};
use kapi::printer::{Cell, Releases, Rule};
use kapi::type_tag::{ApiVersion, Kind};
use kapi::write_rules::{Generation, StatusOnCreate, WriteRules};
use kapi::{
    GroupVersionKind, KubeVersion, Lifecycle, PrinterColumn, Resource, ResourceInfo, Scale, Scope,
    Subresources, Verb,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A namespaced kind using every key: apps/v1beta2's real lifecycle, with the scale paths,
/// printer columns and names of upstream's Deployment.
mod apps_v1beta2 {
    use super::*;

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
    #[expect(
        clippy::duplicated_attributes,
        reason = "repeated `printer_column(..)` keys of the Resource derive are not duplicates"
    )]
    #[resource(
        group = "apps",
        version = "v1beta2",
        kind = "Deployment",
        plural = "deployments"
    )]
    #[resource(namespaced, singular = "deployment", short_names = ["deploy"], categories = ["all"])]
    #[resource(
        status,
        scale(
            spec_replicas_path = ".spec.replicas",
            status_replicas_path = ".status.replicas",
            label_selector_path = ".status.labelSelector",
        )
    )]
    #[resource(
        printer_column(name = "Ready", type = "string", json_path = ".status.readyReplicas"),
        printer_column(
            name = "Age",
            type = "date",
            json_path = ".metadata.creationTimestamp",
            priority = 1,
            format = "date-time",
            description = "Time since creation",
        ),
        printer_column(
            name = "Ready Of",
            type = "string",
            cell = "ratio(.status.readyReplicas, .spec.replicas)",
            since = "1.10",
            until = "1.30",
        )
    )]
    #[resource(
        default(path = ".spec.paused", value = "false"),
        default(
            path = ".spec.strategy.rollingUpdate",
            value = "{}",
            when = "type == \"RollingUpdate\"",
            since = "1.10"
        ),
        default(
            path = ".spec.template.spec.containers[*].imagePullPolicy",
            rule = "image_pull_policy"
        )
    )]
    #[resource(
        generation = "spec_and_annotations",
        generation_since = "1.9",
        status_on_create = "empty",
        status_keeps_metadata = ["labels"]
    )]
    #[resource(field_label_message = "field label %q not supported")]
    #[resource(field_label(label = "metadata.name"))]
    #[resource(field_label(
        label = "status.ready",
        paths = [".status.readyReplicas"],
        type = "integer",
        since = "1.10"
    ))]
    #[resource(introduced = "1.8", deprecated = "1.9", removed = "1.16")]
    #[resource(replacement(group = "apps", version = "v1", kind = "Deployment"))]
    #[resource(deprecation_warning = "use apps/v1 Deployment")]
    #[resource(verbs = ["watch", "get", "list", "create"], selectable_fields = [".spec.paused"])]
    pub(crate) struct Deployment {
        #[serde(rename = "apiVersion")]
        pub api_version: ApiVersion<Self>,
        pub kind: Kind<Self>,
        #[serde(default)]
        pub metadata: ObjectMeta,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub spec: Option<DeploymentSpec>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status: Option<DeploymentStatus>,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct DeploymentSpec {
        pub replicas: i32,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct DeploymentStatus {
        pub ready_replicas: i32,
    }
}

use apps_v1beta2::{Deployment, DeploymentList, DeploymentSpec, DeploymentStatus};

/// Declares a cluster-scoped kind in `example.com/v1` that takes every other default.
macro_rules! defaulted_kind {
    ($name:ident) => {
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
        #[resource(group = "example.com", version = "v1", cluster)]
        pub struct $name {
            #[serde(rename = "apiVersion")]
            pub api_version: ApiVersion<Self>,
            pub kind: Kind<Self>,
            #[serde(default)]
            pub metadata: ObjectMeta,
        }
    };
}

defaulted_kind!(Ingress);
defaulted_kind!(Policy);
defaulted_kind!(Gateway);
defaulted_kind!(Endpoints);
defaulted_kind!(Widget);
defaulted_kind!(Box);

/// A core-group kind: its apiVersion is the bare version. Field names come from
/// `rename_all`, and the kind differs from the struct name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "", version = "v1", kind = "ConfigMap")]
#[serde(rename_all = "camelCase")]
pub struct CoreConfigMap {
    pub api_version: ApiVersion<Self>,
    pub kind: Kind<Self>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub data: std::collections::BTreeMap<String, String>,
}

/// Reaches kapi through a re-export, as a crate wrapping kapi would.
mod reexport {
    pub(crate) use kapi as inner;
}

/// `no_list` leaves the name free: this struct would clash with an emitted alias.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(
    crate = "crate::reexport::inner",
    group = "example.com",
    version = "v2",
    no_list
)]
pub struct Thing {
    #[serde(rename = "apiVersion")]
    pub api_version: ApiVersion<Self>,
    pub kind: Kind<Self>,
    #[serde(default)]
    pub metadata: ObjectMeta,
}

#[derive(Debug)]
pub struct ThingList;

fn strs(values: &[&'static str]) -> Cow<'static, [Cow<'static, str>]> {
    values.iter().map(|v| Cow::Borrowed(*v)).collect()
}

#[test]
fn namespaced_kind_info_has_every_attribute() {
    let want = ResourceInfo {
        gvk: GroupVersionKind::new_static("apps", "v1beta2", "Deployment"),
        plural: "deployments".into(),
        singular: "deployment".into(),
        short_names: strs(&["deploy"]),
        categories: strs(&["all"]),
        scope: Scope::Namespaced,
        // Sorted as discovery lists them, not as written.
        verbs: Cow::Borrowed(&[Verb::Create, Verb::Get, Verb::List, Verb::Watch]),
        subresources: Subresources {
            status: true,
            scale: Some(Scale {
                spec_replicas_path: ".spec.replicas".into(),
                status_replicas_path: ".status.replicas".into(),
                label_selector_path: Some(".status.labelSelector".into()),
            }),
        },
        lifecycle: Lifecycle {
            introduced: Some(KubeVersion::new(1, 8)),
            deprecated: Some(KubeVersion::new(1, 9)),
            removed: Some(KubeVersion::new(1, 16)),
            replacement: Some(GroupVersionKind::new_static("apps", "v1", "Deployment")),
            warning: Some("use apps/v1 Deployment".into()),
        },
        printer_columns: Cow::Owned(vec![
            PrinterColumn {
                name: "Ready".into(),
                type_: "string".into(),
                format: None,
                description: None,
                priority: 0,
                cell: Cell::Path(".status.readyReplicas".into()),
                releases: Releases::ALL,
            },
            PrinterColumn {
                name: "Age".into(),
                type_: "date".into(),
                format: Some("date-time".into()),
                description: Some("Time since creation".into()),
                priority: 1,
                cell: Cell::Path(".metadata.creationTimestamp".into()),
                releases: Releases::ALL,
            },
            PrinterColumn {
                name: "Ready Of".into(),
                type_: "string".into(),
                format: None,
                description: None,
                priority: 0,
                cell: Cell::Rule(Rule::Ratio, &[".status.readyReplicas", ".spec.replicas"]),
                releases: Releases {
                    since: Some(KubeVersion::new(1, 10)),
                    until: Some(KubeVersion::new(1, 30)),
                },
            },
        ]),
        selectable_fields: strs(&[".spec.paused"]),
        field_labels: kapi::field_labels::FieldLabels::Listed {
            labels: Cow::Owned(vec![
                kapi::field_labels::FieldLabel {
                    label: Cow::Borrowed("metadata.name"),
                    paths: Cow::Borrowed(&[Cow::Borrowed(".metadata.name")]),
                    type_: kapi::field_labels::FieldType::String,
                    releases: Releases::ALL,
                },
                kapi::field_labels::FieldLabel {
                    label: Cow::Borrowed("status.ready"),
                    paths: Cow::Borrowed(&[Cow::Borrowed(".status.readyReplicas")]),
                    type_: kapi::field_labels::FieldType::Integer,
                    releases: Releases {
                        since: Some(KubeVersion::new(1, 10)),
                        until: None,
                    },
                },
            ]),
            message: Cow::Borrowed("field label %q not supported"),
        },
        defaults: Cow::Owned(vec![
            Default::value(".spec.paused", "false"),
            Default::value(".spec.strategy.rollingUpdate", "{}")
                .when("type", "\"RollingUpdate\"")
                .since(1, 10),
            Default::rule(
                ".spec.template.spec.containers[*].imagePullPolicy",
                DefaultRule::ImagePullPolicy,
            ),
        ]),
        write_rules: WriteRules {
            generation: Generation::SpecAndAnnotations,
            generation_since: Some(KubeVersion::new(1, 9)),
            status_on_create: StatusOnCreate::Empty,
            status_update: kapi::write_rules::StatusUpdate::StatusAndMetadata {
                keeps: &["labels"],
            },
            write_conversion: kapi::write_rules::WriteRules::CUSTOM.write_conversion,
            create_rule: kapi::write_rules::CreateRule::None,
            create_on_update: false,
        },
        family: None,
    };
    assert_eq!(Deployment::info(), &want);
    assert_eq!(
        (
            Deployment::GROUP,
            Deployment::VERSION,
            Deployment::KIND,
            Deployment::PLURAL,
            Deployment::SCOPE
        ),
        (
            "apps",
            "v1beta2",
            "Deployment",
            "deployments",
            Scope::Namespaced
        )
    );
    assert_eq!(Deployment::api_version(), "apps/v1beta2");
    assert_eq!(Deployment::info().list_kind(), "DeploymentList");
    // One static, not a fresh value per call.
    assert!(std::ptr::eq(Deployment::info(), Deployment::info()));
}

#[test]
fn defaults_and_plural_guessing() {
    // (kind, plural, singular, info); plurals follow upstream's UnsafeGuessKindToResource
    // except where its guess is not English (`gatewaies`, `boxs`).
    let cases: [(&str, &str, &str, &ResourceInfo); 6] = [
        ("Ingress", "ingresses", "ingress", Ingress::info()),
        ("Policy", "policies", "policy", Policy::info()),
        ("Gateway", "gateways", "gateway", Gateway::info()),
        ("Endpoints", "endpoints", "endpoints", Endpoints::info()),
        ("Widget", "widgets", "widget", Widget::info()),
        ("Box", "boxes", "box", Box::info()),
    ];
    for (kind, plural, singular, info) in cases {
        let want = ResourceInfo {
            gvk: GroupVersionKind::new_static("example.com", "v1", kind),
            plural: plural.into(),
            singular: singular.into(),
            short_names: strs(&[]),
            categories: strs(&[]),
            scope: Scope::Cluster,
            verbs: Cow::Borrowed(Verb::ALL),
            subresources: Subresources::default(),
            lifecycle: Lifecycle::default(),
            printer_columns: Cow::Borrowed(&[]),
            selectable_fields: strs(&[]),
            defaults: Cow::Borrowed(&[]),
            field_labels: kapi::field_labels::FieldLabels::Custom,
            write_rules: kapi::write_rules::WriteRules::CUSTOM,
            family: None,
        };
        assert_eq!(info, &want, "{kind}");
    }
    assert_eq!(
        (Gateway::KIND, Gateway::PLURAL, Gateway::SCOPE),
        ("Gateway", "gateways", Scope::Cluster)
    );
    assert_eq!(Endpoints::PLURAL, "endpoints");
    assert_eq!(Widget::api_version(), "example.com/v1");
}

#[test]
fn core_group_kind() {
    assert_eq!(CoreConfigMap::GROUP, "");
    assert_eq!(CoreConfigMap::KIND, "ConfigMap");
    assert_eq!(CoreConfigMap::PLURAL, "configmaps");
    assert_eq!(CoreConfigMap::SCOPE, Scope::Namespaced);
    assert_eq!(CoreConfigMap::api_version(), "v1");
    assert_eq!(CoreConfigMap::info().api_version(), "v1");

    let mut object = CoreConfigMap::default();
    object.metadata.name = Some("settings".into());
    object.data.insert("a".into(), "b".into());
    assert_eq!(
        serde_json::to_value(&object).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "b"}})
    );
}

#[test]
fn crate_override_and_no_list() {
    assert_eq!(Thing::api_version(), "example.com/v2");
    assert_eq!(Thing::PLURAL, "things");
    // The hand-written `ThingList` is still a unit struct, so no alias was emitted.
    let _: ThingList = ThingList;
}

#[test]
fn list_alias_writes_kind_list() {
    let item = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    };
    let list: DeploymentList = kapi::List {
        metadata: ListMeta {
            resource_version: Some("7".into()),
            ..ListMeta::default()
        },
        items: vec![item.clone()],
    };
    assert_eq!(
        serde_json::to_value(&list).unwrap(),
        json!({
            "apiVersion": "apps/v1beta2",
            "kind": "DeploymentList",
            "metadata": {"resourceVersion": "7"},
            "items": [{"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "web"}}],
        })
    );
    let back: DeploymentList =
        serde_json::from_value(serde_json::to_value(&list).unwrap()).unwrap();
    assert_eq!(back, list);

    let core: CoreConfigMapList = kapi::List::default();
    assert_eq!(
        serde_json::to_value(&core).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": []})
    );
    let gateways: GatewayList = kapi::List::default();
    assert_eq!(
        serde_json::to_value(&gateways).unwrap()["kind"],
        json!("GatewayList")
    );
}

#[test]
fn round_trip_writes_api_version_and_kind_first() {
    let object = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec { replicas: 3 }),
        status: Some(DeploymentStatus { ready_replicas: 2 }),
        ..Deployment::default()
    };
    let text = serde_json::to_string(&object).unwrap();
    assert_eq!(
        text,
        r#"{"apiVersion":"apps/v1beta2","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":3},"status":{"readyReplicas":2}}"#
    );
    let back: Deployment = serde_json::from_str(&text).unwrap();
    assert_eq!(back, object);

    // List items from a server may omit both tags.
    let bare: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"}})).unwrap();
    assert_eq!(bare.metadata.name.as_deref(), Some("web"));
}

#[test]
fn mismatched_tags_are_rejected_on_read() {
    let cases = [
        (
            json!({"apiVersion": "apps/v1beta2", "kind": "Pod", "metadata": {}}),
            r#"kind "Pod" does not match the expected "Deployment""#,
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}),
            r#"apiVersion "apps/v1" does not match the expected "apps/v1beta2""#,
        ),
        (
            json!({"apiVersion": "v1", "kind": "Deployment"}),
            r#"apiVersion "v1" does not match"#,
        ),
    ];
    for (value, want) in cases {
        let error = serde_json::from_value::<Deployment>(value.clone()).unwrap_err();
        assert!(error.to_string().contains(want), "{value}: {error}");
    }
    let error =
        serde_json::from_value::<CoreConfigMap>(json!({"apiVersion": "apps/v1"})).unwrap_err();
    assert!(error.to_string().contains(r#"expected "v1""#), "{error}");
}

#[test]
fn metadata_accessors_reach_the_field() {
    let mut object = Deployment::default();
    object.metadata_mut().name = Some("web".into());
    assert_eq!(object.metadata().name.as_deref(), Some("web"));
    assert_eq!(object.metadata.name.as_deref(), Some("web"));
}

#[test]
fn info_agrees_with_constants() {
    fn check<K: Resource>() {
        let info = K::info();
        assert_eq!(info.gvk.group, K::GROUP, "{}", K::KIND);
        assert_eq!(info.gvk.version, K::VERSION, "{}", K::KIND);
        assert_eq!(info.gvk.kind, K::KIND, "{}", K::KIND);
        assert_eq!(info.plural, K::PLURAL, "{}", K::KIND);
        assert_eq!(info.scope, K::SCOPE, "{}", K::KIND);
        assert_eq!(info.api_version(), K::api_version(), "{}", K::KIND);
    }
    check::<Deployment>();
    check::<Ingress>();
    check::<Policy>();
    check::<Gateway>();
    check::<Endpoints>();
    check::<CoreConfigMap>();
    check::<Thing>();
}

static WIDGET_MERGE: kapi::merge::TypeInfo =
    kapi::merge::TypeInfo::new(&[kapi::merge::field("parts").list_map(&["name"])]);

/// A CRD-style kind: deprecated through its warning alone, with merge metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, kapi::Resource)]
#[resource(group = "widgets.kapi.dev", version = "v1alpha1", kind = "Widget")]
#[resource(merge = WIDGET_MERGE, deprecation_warning = "use widgets.kapi.dev/v1 Widget")]
pub struct OldWidget {
    #[serde(rename = "apiVersion")]
    pub api_version: ApiVersion<Self>,
    pub kind: Kind<Self>,
    #[serde(default)]
    pub metadata: ObjectMeta,
}

#[test]
fn merge_metadata_and_warning_only_deprecation() {
    let merge = OldWidget::merge_info().expect("merge = ... is wired to merge_info()");
    assert!(std::ptr::eq(merge, &WIDGET_MERGE));
    assert!(Deployment::merge_info().is_none());
    let lifecycle = &OldWidget::info().lifecycle;
    assert_eq!(lifecycle.deprecated, None);
    assert!(lifecycle.is_deprecated_at(kapi::KubeVersion::new(1, 0)));
}
