// No stub impl is emitted for a generic struct (it could not satisfy `Resource`'s bounds for
// every parameter), so this case leaves out serde's derives, whose own errors would follow;
// without them there is no `#[serde(rename)]`, hence the camelCase field name.
#[derive(Clone, kapi::Resource)]
#[resource(group = "example.com", version = "v1")]
#[allow(non_snake_case)]
pub struct Widget<'a, T> {
    pub apiVersion: kapi::type_tag::ApiVersion<Self>,
    pub kind: kapi::type_tag::Kind<Self>,
    pub metadata: kapi::meta::ObjectMeta,
    pub spec: &'a T,
}

fn main() {}
