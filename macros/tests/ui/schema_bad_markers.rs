#[derive(serde::Serialize, kapi::Schema)]
#[schema(list_type = "set")]
struct Markers {
    #[schema(list_type = "bag")]
    a: Vec<String>,
    #[schema(list_type = "map")]
    b: Vec<String>,
    #[schema(list_type = "set", list_map_keys = ["name"])]
    c: Vec<String>,
    #[schema(validation(message = "no rule"))]
    d: String,
    #[schema(minimum = "one", max_length = 3)]
    e: i32,
    #[schema(preserve_unknown_fields = true, colour = "red")]
    f: String,
    #[schema(validation(rule = "self > 0", reason = "Bad"))]
    g: i32,
}

fn main() {}
