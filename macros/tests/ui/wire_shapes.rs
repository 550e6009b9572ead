// `#[derive(Wire)]` covers structs with named fields, no generics; every other shape and every
// unknown or clashing attribute is an error at its span.
#[derive(kapi::Wire)]
enum Phase {
    Running,
}

#[derive(kapi::Wire)]
struct Pair(u8, u8);

#[derive(Default, kapi::Wire)]
struct Generic<T> {
    value: T,
}

#[derive(Default, kapi::Wire)]
struct Clash {
    name: String,
    #[wire(rename = "name")]
    alias: String,
}

#[derive(Default, kapi::Wire)]
#[wire(rename_all = "Title Case", flatten)]
struct BadAttributes {
    #[wire(skip_serializing_if = "Option::is_none")]
    a: Option<u8>,
}

#[derive(kapi::Wire)]
struct NoDefault {
    a: u8,
}

fn main() {}
