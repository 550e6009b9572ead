// No #[resource] at all. The stub impl keeps `Widget::KIND` and `WidgetList` from adding errors.
use kapi::Resource;

#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {
    let _ = Widget::KIND;
    let _ = WidgetList::default();
}
