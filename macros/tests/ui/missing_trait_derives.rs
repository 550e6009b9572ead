// `Resource` needs the kind to be Clone, Serialize and Deserialize; rustc names what is missing.
#[derive(serde::Serialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
