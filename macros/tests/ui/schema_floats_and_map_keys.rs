use std::collections::BTreeMap;

#[derive(serde::Serialize, kapi::Schema)]
struct Limits {
    ratio: f64,
    weights: Option<Vec<f32>>,
    #[schema(allow_float)]
    allowed: f64,
    by_port: BTreeMap<i32, String>,
    by_name: BTreeMap<String, String>,
}

fn main() {}
