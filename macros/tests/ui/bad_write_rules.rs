#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
#[resource(generation = "always", generation_since = "soon", status_on_create = "wipe")]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
