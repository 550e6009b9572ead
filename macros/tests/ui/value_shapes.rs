// Each key given a value of the wrong shape.
#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = apps, version = "v1", status = true, short_names = "w", crate = "not a path")]
#[resource(printer_column = "Age", plural, categories = [all])]
#[resource(printer_column(name = "N", type = "integer", json_path = ".spec.n", priority = "high"))]
pub struct Widget {
    #[serde(rename = "apiVersion")]
    pub api_version: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
}

fn main() {}
