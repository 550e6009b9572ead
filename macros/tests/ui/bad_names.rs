// Names upstream would refuse to serve.
#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "Example.com", version = "V1", kind = "Wid_get", plural = "Widgets")]
#[resource(short_names = ["w", "w", "-x"], categories = ["All"])]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
