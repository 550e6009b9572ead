// `status` without a status field; scale paths outside the part of the object that owns them.
#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1", status)]
#[resource(scale(
    spec_replicas_path = ".status.replicas",
    status_replicas_path = "status.replicas",
    label_selector_path = ".metadata.labels",
))]
#[resource(selectable_fields = ["spec.color"])]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
