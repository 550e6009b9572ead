// Generated code reaches kapi only through `crate = "..."`: a path that does not exist fails,
// even though `::kapi` itself is available here.
#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(crate = "crate::nowhere", group = "example.com", version = "v1", no_list)]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
