#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
#[resource(default(path = ".spec.size", value = "{not json"))]
#[resource(default(value = "1"))]
#[resource(default(path = ".spec.size", value = "1", rule = "image_pull_policy"))]
#[resource(default(path = ".spec.size", value = "1", when = "type = Big"))]
#[resource(default(path = "spec.size", value = "1"))]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
