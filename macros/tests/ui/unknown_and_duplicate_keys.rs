#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1", shortNames = ["w"])]
#[resource(group = "example.org", namespaced, cluster)]
#[resource(scale(spec_replicas_path = ".spec.replicas", status_path = ".status.replicas"))]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
