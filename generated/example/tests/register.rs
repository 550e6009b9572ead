//! The example crate registers every served version of its kinds, with the CRD's names,
//! subresources and deprecation data.

use kapi::{Registry, Resource, Scope};
use kapi_example::widgets;

#[test]
fn registers_every_served_version() {
    let mut r = Registry::new();
    kapi_example::register(&mut r);
    let mut gvks: Vec<String> = r
        .kinds()
        .map(|k| format!("{}/{}", k.info.api_version(), k.info.gvk.kind))
        .collect();
    gvks.sort();
    assert_eq!(
        gvks,
        [
            "widgets.kapi.dev/v1/Gizmo",
            "widgets.kapi.dev/v1/Widget",
            "widgets.kapi.dev/v1alpha1/Widget",
            "widgets.kapi.dev/v1beta1/Widget",
        ]
    );
    let gizmo = r.get("widgets.kapi.dev", "v1", "gizmos").expect("gizmos");
    assert_eq!(gizmo.info.scope, Scope::Cluster);
    let widget = widgets::v1::Widget::info();
    assert!(widget.subresources.scale.is_some());
    assert_eq!(&*widget.short_names, ["wdg"]);
    assert!(
        widgets::v1alpha1::Widget::info()
            .lifecycle
            .warning
            .is_some()
    );
    assert!(widgets::v1beta1::Widget::info().lifecycle.warning.is_some());
    assert!(widget.lifecycle.warning.is_none());
}
