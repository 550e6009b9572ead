#[derive(serde::Serialize, kapi::Schema)]
struct Pair(String, i32);

#[derive(serde::Serialize, kapi::Schema)]
struct Marker;

#[derive(serde::Serialize, kapi::Schema)]
struct Tree {
    children: Vec<Tree>,
}

mod as_string {
    pub fn serialize<S: serde::Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }
}

#[derive(serde::Serialize, kapi::Schema)]
struct Custom {
    #[serde(with = "as_string")]
    port: i32,
}

fn main() {}
