#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
#[resource(printer_column(name = "Ready", type = "string", cell = "ratio(.status.ready)"))]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {
    // The assertion runs when the kind's description is built, as the server would.
    let _ = <Widget as kapi::Resource>::info();
}
