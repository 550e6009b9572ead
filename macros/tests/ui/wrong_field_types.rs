// The tag fields must be the type tags, and metadata must be ObjectMeta.
#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: Option<kapi::meta::ObjectMeta>,
}

fn main() {}
