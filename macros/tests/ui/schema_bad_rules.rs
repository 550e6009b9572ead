// Rules that kube-apiserver would refuse at `kubectl apply` refuse the build instead.
#[derive(serde::Serialize, kapi::Schema)]
#[serde(rename_all = "camelCase")]
#[schema(validation(rule = "self.minReplicas <= self.max_replicas"))]
#[schema(validation(rule = "self.minReplicas <= self.maxReplicas"))]
#[schema(validation(rule = "self.minReplicas >= 0", optional_old_self = false))]
struct Scaling {
    #[schema(validation(rule = "self >"))]
    min_replicas: i32,
    #[schema(validation(rule = "self >= minimum", message_expression = "'too few: ' + string(slef)"))]
    max_replicas: i32,
    #[schema(validation(rule = "self.all(x, x != '') && x == ''"))]
    #[schema(validation(rule = "!oldSelf.hasValue() || oldSelf.value().size() <= self.size()", optional_old_self = true))]
    modes: Vec<String>,
}

// A struct with a flattened field admits fields it does not list.
#[derive(serde::Serialize, kapi::Schema)]
#[schema(validation(rule = "has(self.anything)"))]
struct Open {
    #[serde(flatten)]
    rest: std::collections::BTreeMap<String, String>,
}

fn main() {}
