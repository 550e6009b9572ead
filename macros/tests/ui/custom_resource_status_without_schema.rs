#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, kapi::CustomResource)]
#[resource(group = "example.com", version = "v1", status = "WidgetStatus")]
pub struct WidgetSpec {
    size: i32,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct WidgetStatus {
    ready: bool,
}

fn main() {}
