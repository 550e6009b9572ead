// `#[derive(Wire)]` covers structs with named fields and enums of unit variants, no generics;
// every other shape and every unknown or clashing attribute is an error at its span.
#[derive(kapi::Wire)]
enum Phase {
    Running,
    Failed { reason: String },
}

#[derive(kapi::Wire)]
struct Pair(u8, u8);

#[derive(kapi::Wire)]
struct Generic<T> {
    value: T,
}

#[derive(kapi::Wire)]
struct Clash {
    name: String,
    #[wire(rename = "name")]
    alias: String,
}

#[derive(kapi::Wire)]
#[wire(rename_all = "Title Case")]
struct BadRule {
    #[wire(skip_serializing_if = "Option::is_none", alias = "b")]
    a: Option<u8>,
}

#[derive(kapi::Wire)]
struct SerdeOnly {
    #[serde(flatten)]
    inner: Clash,
}

#[derive(Default, kapi::Wire)]
#[serde(default)]
struct DefaultTwice {
    #[serde(default = "seven")]
    a: u8,
}

#[derive(kapi::Wire)]
struct NotReadable {
    a: std::time::Instant,
}

fn main() {}
