#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, kapi::CustomResource)]
#[resource(group = "widgets", version = "v1", status)]
pub struct WidgetSpec {
    size: i32,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, kapi::CustomResource)]
#[resource(group = "example.com", version = "v1", served = "yes")]
pub struct Gadget {
    size: i32,
}

fn main() {}
