#[derive(serde::Serialize, kapi::Schema)]
enum Mixed {
    Off,
    Fixed { replicas: i32 },
}

#[derive(serde::Serialize, kapi::Schema)]
#[serde(tag = "kind", content = "spec")]
enum Adjacent {
    A { x: i32 },
}

#[derive(serde::Serialize, kapi::Schema)]
#[serde(untagged)]
enum Conflicting {
    ByName { target: String },
    ByIndex { target: i32 },
}

#[derive(serde::Serialize, kapi::Schema)]
#[serde(tag = "type")]
enum Tuple {
    Pair(String, i32),
}

#[derive(serde::Serialize, kapi::Schema)]
#[serde(untagged)]
enum Nothing {
    Named { a: String },
    Empty,
}

fn main() {}
