// None of the three fields a kind needs.
#[derive(Clone, serde::Serialize, serde::Deserialize, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
pub struct Widget {
    pub spec: String,
}

fn main() {}
