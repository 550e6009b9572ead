#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
#[resource(printer_column(name = "Both", type = "string", json_path = ".a", cell = "text(.a)"))]
#[resource(printer_column(name = "Neither", type = "string"))]
#[resource(printer_column(name = "Shape", type = "string", cell = "Ratio[.a]"))]
#[resource(printer_column(name = "Path", type = "string", cell = "text(status.a)"))]
#[resource(printer_column(name = "Span", type = "string", cell = "text(.a)", since = "1.30", until = "1.20"))]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
