// Rules are typed by the schema the derive writes: kube-apiserver would refuse each of these
// when the CRD is created (for its types, or for a cost estimated past its limit on one value),
// so the build refuses them.
#[derive(serde::Serialize, kapi::Schema)]
#[serde(rename_all = "camelCase")]
#[schema(validation(rule = "self.replicas + \"x\" == \"1x\""))]
#[schema(validation(rule = "self.nosuchfield > 0"))]
#[schema(validation(rule = "self.replicas"))]
#[schema(validation(rule = "self.replicas > 0", message_expression = "self.replicas"))]
#[schema(validation(rule = "self.name.size() >= oldSelf.replicas.size()"))]
#[schema(validation(rule = "self.items.all(x, x > 0)"))]
#[schema(validation(rule = "self.items.all(x, x.matches('^[a-z]+$'))"))]
struct Pool {
    replicas: i32,
    name: String,
    items: Vec<String>,
    #[schema(validation(rule = "self.matches(1)"))]
    pattern: Option<String>,
    #[schema(validation(rule = "self.port < 65536"))]
    port: i32,
}

// The fields of an atomic map have no old values: a transition rule on one is refused.
#[derive(serde::Serialize, kapi::Schema)]
#[schema(map_type = "atomic")]
struct Pinned {
    #[schema(validation(rule = "self == oldSelf"))]
    image: String,
}

fn main() {}
