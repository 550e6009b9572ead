#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
#[resource(printer_column(name = "Ready", type = "text", json_path = ".status.ready"))]
#[resource(printer_column(name = "Age", type = "date", json_path = "metadata.creationTimestamp", format = "timestamp"))]
#[resource(printer_column(name = "Size", width = 3))]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
