//! What an object counts against a ResourceQuota, as upstream's quota evaluators say
//! (`pkg/quota/v1/evaluator/core`: pods, services, persistent volume claims, and the generic
//! `count/<resource>` evaluator): the usage of one object, the resources a quota's `hard` name
//! reads, and whether an object is in a quota's scopes (`scopes` and `scopeSelector`, pods
//! only). Shared by the ResourceQuota admission plugin and the quota controller.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::quantity::{Format, Quantity};

use crate::server::objects::json::strings_at;

/// Usage of one object or a namespace, by quota resource name.
pub(crate) type Usage = BTreeMap<String, Quantity>;

/// The core resources counted under their own name, besides `count/<resource>`.
const LEGACY_COUNTED: [&str; 7] = [
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

/// A pod's compute resources a quota may constrain: the quota name, the container field and
/// resource it sums.
const POD_COMPUTE: [(&str, &str, &str); 6] = [
    ("requests.cpu", "requests", "cpu"),
    ("requests.memory", "requests", "memory"),
    ("cpu", "requests", "cpu"),
    ("memory", "requests", "memory"),
    ("limits.cpu", "limits", "cpu"),
    ("limits.memory", "limits", "memory"),
];

/// The quantities of a resource list.
pub(crate) fn quantities(list: Option<&Value>) -> Usage {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.parse().ok()?)))
        .collect()
}

pub(crate) fn add(total: &mut Usage, more: &Usage) {
    for (k, v) in more {
        let entry = total.entry(k.clone()).or_default();
        *entry = entry.checked_add(*v).unwrap_or(*entry);
    }
}

fn one() -> Quantity {
    Quantity::from_i64(1, Format::DecimalSi)
}

/// What one object uses: `count/<resource>[.<group>]`, the legacy core counts, and the
/// evaluators' resources of pods (compute, unless terminal), services (node ports, load
/// balancers) and claims (storage).
pub(crate) fn usage_of(group: &str, plural: &str, object: &Value) -> Usage {
    let mut usage = Usage::new();
    let phase = object.pointer("/status/phase").and_then(Value::as_str);
    if group.is_empty() && plural == "pods" && matches!(phase, Some("Succeeded" | "Failed")) {
        return usage;
    }
    let count = if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    };
    usage.insert(count, one());
    if !group.is_empty() || !LEGACY_COUNTED.contains(&plural) {
        return usage;
    }
    usage.insert(plural.to_owned(), one());
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    match plural {
        "pods" => {
            for (key, field, resource) in POD_COMPUTE {
                if let Some(total) = pod_total(&spec, field, resource) {
                    usage.insert(key.to_owned(), total);
                }
            }
        }
        "services" => {
            let kind = spec
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let ports = spec
                .get("ports")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let node_ports = if matches!(kind, "NodePort" | "LoadBalancer") {
                ports
            } else {
                0
            };
            let balancers = i64::from(kind == "LoadBalancer");
            usage.insert(
                "services.nodeports".into(),
                Quantity::from_i64(
                    i64::try_from(node_ports).unwrap_or(i64::MAX),
                    Format::DecimalSi,
                ),
            );
            usage.insert(
                "services.loadbalancers".into(),
                Quantity::from_i64(balancers, Format::DecimalSi),
            );
        }
        "persistentvolumeclaims" => {
            if let Some(storage) = quantities(spec.pointer("/resources/requests")).remove("storage")
            {
                usage.insert("requests.storage".into(), storage);
            }
        }
        _ => {}
    }
    usage
}

/// A pod's total of `resources.<field>.<resource>`: the containers' sum, or an init
/// container's when larger (upstream's `PodRequests`); `None` when no container sets it.
fn pod_total(spec: &Value, field: &str, resource: &str) -> Option<Quantity> {
    let of = |c: &Value| -> Option<Quantity> {
        c.get("resources")?
            .get(field)?
            .get(resource)?
            .as_str()?
            .parse()
            .ok()
    };
    let list = |name: &str| {
        spec.get(name)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut found = false;
    let mut sum = Quantity::default();
    for container in list("containers") {
        if let Some(q) = of(&container) {
            found = true;
            sum = sum.checked_add(q).unwrap_or(sum);
        }
    }
    for init in list("initContainers") {
        if let Some(q) = of(&init) {
            found = true;
            sum = sum.max(q);
        }
    }
    found.then_some(sum)
}

/// The compute resources `hard` constrains that a container of the pod does not set
/// (upstream's pod evaluator `Constraints`), sorted.
pub(crate) fn missing_compute(pod: &Value, hard: &Usage) -> Vec<String> {
    let spec = pod.get("spec").cloned().unwrap_or(Value::Null);
    let containers: Vec<Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect();
    let mut missing: Vec<String> = POD_COMPUTE
        .iter()
        .filter(|(key, _, _)| hard.contains_key(*key))
        .filter(|(_, field, resource)| {
            containers.iter().any(|c| {
                c.get("resources")
                    .and_then(|r| r.get(*field))
                    .and_then(|f| f.get(*resource))
                    .is_none()
            })
        })
        .map(|(key, _, _)| (*key).to_owned())
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

/// The resource whose objects count toward the quota resource `name` (as group and plural):
/// `count/<resource>[.<group>]`, the legacy core counts, and the pod, service and claim
/// evaluators' resources.
pub(crate) fn counted_resource(name: &str) -> Option<(String, String)> {
    if let Some(resource) = name.strip_prefix("count/") {
        return Some(match resource.split_once('.') {
            Some((plural, group)) => (group.to_owned(), plural.to_owned()),
            None => (String::new(), resource.to_owned()),
        });
    }
    if LEGACY_COUNTED.contains(&name) {
        return Some((String::new(), name.to_owned()));
    }
    let core = |plural: &str| Some((String::new(), plural.to_owned()));
    match name {
        _ if POD_COMPUTE.iter().any(|(key, _, _)| *key == name) => core("pods"),
        "services.nodeports" | "services.loadbalancers" => core("services"),
        "requests.storage" => core("persistentvolumeclaims"),
        _ => None,
    }
}

/// Whether `object` of `group`'s `plural` is in the quota's scopes: every quota without
/// scopes holds every object; a scoped one only pods that match each scope and each
/// `scopeSelector` expression (upstream's `podMatchesScopeFunc`).
pub(crate) fn in_scopes(quota: &Value, group: &str, plural: &str, object: &Value) -> bool {
    let scopes = strings_at(quota, "/spec/scopes");
    let expressions: Vec<&Value> = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    if scopes.is_empty() && expressions.is_empty() {
        return true;
    }
    if !group.is_empty() || plural != "pods" {
        return false;
    }
    let spec = object.get("spec").unwrap_or(&Value::Null);
    scopes.iter().all(|scope| pod_in_scope(spec, scope, None))
        && expressions.iter().all(|e| {
            let scope = e.get("scopeName").and_then(Value::as_str).unwrap_or("");
            pod_in_scope(spec, scope, Some(e))
        })
}

/// Whether a pod spec is in `scope`; `expression` is a `scopeSelector` requirement (operator
/// and values), `None` for a plain `scopes` entry (operator `Exists`).
fn pod_in_scope(spec: &Value, scope: &str, expression: Option<&Value>) -> bool {
    let deadline = spec
        .get("activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0);
    let matches = match scope {
        "Terminating" => deadline,
        "NotTerminating" => !deadline,
        "BestEffort" => best_effort(spec),
        "NotBestEffort" => !best_effort(spec),
        "CrossNamespacePodAffinity" => cross_namespace_affinity(spec),
        "PriorityClass" => {
            let class = spec
                .get("priorityClassName")
                .and_then(Value::as_str)
                .unwrap_or("");
            return match expression {
                None => true,
                Some(e) => requirement_matches(e, class),
            };
        }
        _ => false,
    };
    // A boolean scope selected with `DoesNotExist` holds what the scope does not.
    match expression
        .and_then(|e| e.get("operator"))
        .and_then(Value::as_str)
    {
        Some("DoesNotExist") => !matches,
        _ => matches,
    }
}

/// A label requirement on the key the scope names, whose value is `value`: the pod's label
/// set always has the key (upstream matches `{"PriorityClass": <name>}`).
fn requirement_matches(expression: &Value, value: &str) -> bool {
    let values = strings_at(expression, "/values");
    match expression.get("operator").and_then(Value::as_str) {
        Some("In") => values.contains(&value),
        Some("NotIn") => !values.contains(&value),
        Some("Exists") => true,
        _ => false,
    }
}

/// A pod whose containers request and limit no CPU or memory (QoS class BestEffort).
fn best_effort(spec: &Value) -> bool {
    ["initContainers", "containers"]
        .iter()
        .filter_map(|list| spec.get(*list).and_then(Value::as_array))
        .flatten()
        .all(|c| {
            ["requests", "limits"].iter().all(|field| {
                c.pointer(&format!("/resources/{field}"))
                    .and_then(Value::as_object)
                    .is_none_or(|r| !r.contains_key("cpu") && !r.contains_key("memory"))
            })
        })
}

/// A pod with an affinity term that reaches other namespaces (`namespaces` or a
/// `namespaceSelector`).
fn cross_namespace_affinity(spec: &Value) -> bool {
    let mut terms: Vec<&Value> = Vec::new();
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(affinity) = spec.pointer(&format!("/affinity/{kind}")) else {
            continue;
        };
        let list = |key: &str| {
            affinity
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        };
        terms.extend(list("requiredDuringSchedulingIgnoredDuringExecution"));
        terms.extend(
            list("preferredDuringSchedulingIgnoredDuringExecution")
                .filter_map(|p| p.get("podAffinityTerm")),
        );
    }
    terms.iter().any(|t| {
        t.get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
            || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The pod evaluator's usage: counts, and requests summed over containers.
    #[test]
    fn pods_use_their_count_and_compute() {
        let pod = json!({"spec": {"containers": [
            {"resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "500m"}}},
        ]}});
        let usage = usage_of("", "pods", &pod);
        let shown: BTreeMap<&str, String> = usage
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_string()))
            .collect();
        assert_eq!(shown["pods"], "1");
        assert_eq!(shown["count/pods"], "1");
        assert_eq!(shown["requests.cpu"], "750m");
        assert_eq!(shown["cpu"], "750m");
        assert_eq!(shown["limits.memory"], "1Gi");
        let done = json!({"status": {"phase": "Succeeded"}});
        assert!(usage_of("", "pods", &done).is_empty());
        let deployment = usage_of("apps", "deployments", &json!({}));
        assert_eq!(
            deployment.keys().collect::<Vec<_>>(),
            ["count/deployments.apps"]
        );
    }

    /// The pod evaluator's `Constraints`: every container must set what the quota limits.
    #[test]
    fn constrained_compute_must_be_specified() {
        let hard = quantities(Some(
            &json!({"limits.cpu": "2", "requests.memory": "1Gi", "pods": "3"}),
        ));
        let pod = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "1"}}}]}});
        assert_eq!(missing_compute(&pod, &hard), ["requests.memory"]);
    }

    #[test]
    fn quota_names_count_their_resources() {
        let core = |p: &str| Some((String::new(), p.to_owned()));
        assert_eq!(
            counted_resource("count/deployments.apps"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(counted_resource("count/secrets"), core("secrets"));
        assert_eq!(counted_resource("limits.memory"), core("pods"));
        assert_eq!(counted_resource("services.nodeports"), core("services"));
        assert_eq!(
            counted_resource("requests.storage"),
            core("persistentvolumeclaims")
        );
        assert_eq!(counted_resource("example.com/gpu"), None);
    }

    /// `podMatchesScopeFunc`: scopes select pods by deadline, QoS, affinity and priority class.
    #[test]
    fn scoped_quotas_hold_only_the_pods_in_their_scopes() {
        let quota = |spec: Value| json!({"spec": spec});
        let job = json!({"spec": {"activeDeadlineSeconds": 60,
            "containers": [{"resources": {"limits": {"cpu": "1"}}}]}});
        let web = json!({"spec": {"priorityClassName": "high", "containers": [{}]}});
        let terminating = quota(json!({"scopes": ["Terminating"]}));
        assert!(in_scopes(&terminating, "", "pods", &job));
        assert!(!in_scopes(&terminating, "", "pods", &web));
        assert!(!in_scopes(&terminating, "", "services", &json!({})));
        let best = quota(json!({"scopes": ["BestEffort"]}));
        assert!(in_scopes(&best, "", "pods", &web) && !in_scopes(&best, "", "pods", &job));
        let high = quota(json!({"scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}));
        assert!(in_scopes(&high, "", "pods", &web) && !in_scopes(&high, "", "pods", &job));
        assert!(in_scopes(
            &quota(json!({"hard": {}})),
            "",
            "services",
            &json!({})
        ));
        let affinity = json!({"spec": {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"namespaces": ["other"]}]}}}});
        let cross = quota(json!({"scopes": ["CrossNamespacePodAffinity"]}));
        assert!(in_scopes(&cross, "", "pods", &affinity) && !in_scopes(&cross, "", "pods", &web));
    }
}
