#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
pub struct Tuple(kapi::meta::ObjectMeta);

#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
pub enum Either {
    A,
    B,
}

fn main() {}
