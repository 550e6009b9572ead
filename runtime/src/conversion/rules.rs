//! Shape changes between versions that are code, one function each, both directions: what a
//! [`Rule`] names in a family's steps. Each cites the upstream conversion function it mirrors.

use serde_json::{Map, Value, json};

use super::{ConversionError, Direction, apiextensions, autoscaling, take};

/// A named shape change between a served version and the stored one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rule {
    /// An Ingress backend: `serviceName`/`servicePort` in `v1beta1`, `service.name` and
    /// `service.port.number` or `.name` in `networking.k8s.io/v1`
    /// (`Convert_v1beta1_IngressBackend_To_networking_IngressBackend`).
    IngressBackend,
    /// An `autoscaling/v1` HorizontalPodAutoscaler: `targetCPUUtilizationPercentage` and the
    /// annotations that carry what v1 has no field for
    /// (`Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`).
    HorizontalPodAutoscalerV1,
    /// An `autoscaling/v2beta1` HorizontalPodAutoscaler: metrics with `targetAverageValue` and
    /// friends, behavior in an annotation
    /// (`Convert_v2beta1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`).
    HorizontalPodAutoscalerV2beta1,
    /// An RBAC subject of `v1alpha1`, which names `apiVersion` where later versions name
    /// `apiGroup` (`Convert_v1alpha1_Subject_To_rbac_Subject`).
    RbacSubjectV1alpha1,
    /// An EndpointSlice endpoint of `discovery.k8s.io/v1beta1`, whose `topology` map holds
    /// what v1 keeps in `zone`, `nodeName` and `deprecatedTopology`
    /// (`Convert_v1beta1_Endpoint_To_discovery_Endpoint`).
    EndpointTopologyV1beta1,
    /// An `apiextensions.k8s.io/v1beta1` CustomResourceDefinition, which may say its schema,
    /// subresources and columns once for every version
    /// (`Convert_v1beta1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec`).
    CustomResourceDefinitionV1beta1,
}

impl Rule {
    /// Runs the rule on `place` in `direction`.
    pub(crate) fn apply(
        self,
        place: &mut Value,
        direction: Direction,
    ) -> Result<(), ConversionError> {
        match (self, direction) {
            (Self::IngressBackend, Direction::ToStorage) => ingress_backend_up(place),
            (Self::IngressBackend, Direction::FromStorage) => ingress_backend_down(place),
            (Self::HorizontalPodAutoscalerV1, Direction::ToStorage) => {
                return autoscaling::v1_up(place);
            }
            (Self::HorizontalPodAutoscalerV1, Direction::FromStorage) => {
                autoscaling::v1_down(place)
            }
            (Self::HorizontalPodAutoscalerV2beta1, Direction::ToStorage) => {
                autoscaling::v2beta1_up(place)
            }
            (Self::HorizontalPodAutoscalerV2beta1, Direction::FromStorage) => {
                autoscaling::v2beta1_down(place)
            }
            (Self::RbacSubjectV1alpha1, Direction::ToStorage) => rbac_subject_up(place),
            (Self::RbacSubjectV1alpha1, Direction::FromStorage) => rbac_subject_down(place),
            (Self::EndpointTopologyV1beta1, Direction::ToStorage) => endpoint_topology_up(place),
            (Self::EndpointTopologyV1beta1, Direction::FromStorage) => {
                endpoint_topology_down(place)
            }
            (Self::CustomResourceDefinitionV1beta1, Direction::ToStorage) => {
                apiextensions::v1beta1_up(place)
            }
            (Self::CustomResourceDefinitionV1beta1, Direction::FromStorage) => {
                apiextensions::v1beta1_down(place)
            }
        }
        Ok(())
    }
}

/// `serviceName`/`servicePort` → `service: {name, port: {number | name}}`.
fn ingress_backend_up(place: &mut Value) {
    let Some(backend) = place.as_object_mut() else {
        return;
    };
    let name = backend.remove("serviceName");
    let port = backend.remove("servicePort");
    if name.is_none() && port.is_none() {
        return;
    }
    let mut service = Map::new();
    if let Some(name) = name {
        service.insert("name".into(), name);
    }
    match port {
        Some(Value::String(name)) => {
            service.insert("port".into(), json!({ "name": name }));
        }
        Some(number @ Value::Number(_)) => {
            service.insert("port".into(), json!({ "number": number }));
        }
        _ => {}
    }
    backend.insert("service".into(), Value::Object(service));
}

/// `service: {name, port}` → `serviceName`/`servicePort` (a port name wins over a number, as
/// upstream's conversion checks the name first).
fn ingress_backend_down(place: &mut Value) {
    let Some(backend) = place.as_object_mut() else {
        return;
    };
    let Some(Value::Object(mut service)) = backend.remove("service") else {
        return;
    };
    if let Some(name) = service.remove("name") {
        backend.insert("serviceName".into(), name);
    }
    let mut port = service.remove("port").unwrap_or(Value::Null);
    let port_name = take(&mut port, "name").filter(|n| n.as_str().is_some_and(|n| !n.is_empty()));
    match (port_name, take(&mut port, "number")) {
        (Some(name), _) => {
            backend.insert("servicePort".into(), name);
        }
        (None, Some(number)) => {
            backend.insert("servicePort".into(), number);
        }
        (None, None) => {}
    }
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const RBAC_V1ALPHA1: &str = "rbac.authorization.k8s.io/v1alpha1";

/// A v1alpha1 subject's `apiVersion` → `apiGroup`: users and groups are RBAC's, service
/// accounts the core group's.
fn rbac_subject_up(place: &mut Value) {
    let Some(subject) = place.as_object_mut() else {
        return;
    };
    let version = subject.remove("apiVersion");
    let group = match subject.get("kind").and_then(Value::as_str) {
        Some("User" | "Group") => RBAC_GROUP,
        Some("ServiceAccount") => "",
        _ => match version.as_ref().and_then(Value::as_str) {
            Some(v) => v.rsplit_once('/').map_or("", |(g, _)| g),
            None => "",
        },
    };
    if !group.is_empty() {
        subject.insert("apiGroup".into(), Value::from(group));
    }
}

/// A subject's `apiGroup` → v1alpha1's `apiVersion`.
fn rbac_subject_down(place: &mut Value) {
    let Some(subject) = place.as_object_mut() else {
        return;
    };
    subject.remove("apiGroup");
    if let Some("User" | "Group") = subject.get("kind").and_then(Value::as_str) {
        subject.insert("apiVersion".into(), Value::from(RBAC_V1ALPHA1));
    }
}

const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// v1beta1's `topology` → `deprecatedTopology`, its zone into `zone`, and its hostname dropped
/// when it repeats `nodeName` (v1beta1 allowed the two to differ; then both are kept).
fn endpoint_topology_up(place: &mut Value) {
    let Some(endpoint) = place.as_object_mut() else {
        return;
    };
    let Some(Value::Object(mut topology)) = endpoint.remove("topology") else {
        return;
    };
    if let Some(zone) = topology.remove(ZONE_LABEL) {
        endpoint.insert("zone".into(), zone);
    }
    if topology.get(HOSTNAME_LABEL).is_some()
        && topology.get(HOSTNAME_LABEL) == endpoint.get("nodeName")
    {
        topology.remove(HOSTNAME_LABEL);
    }
    if !topology.is_empty() {
        endpoint.insert("deprecatedTopology".into(), Value::Object(topology));
    }
}

/// `deprecatedTopology`, `zone` and `nodeName` → v1beta1's `topology` (the hostname only when
/// the map has none).
fn endpoint_topology_down(place: &mut Value) {
    let Some(endpoint) = place.as_object_mut() else {
        return;
    };
    let deprecated = endpoint.remove("deprecatedTopology");
    let zone = endpoint.remove("zone");
    if deprecated.is_none() && zone.is_none() && endpoint.get("nodeName").is_none() {
        return;
    }
    let mut topology = match deprecated {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    if let Some(zone) = zone {
        topology.insert(ZONE_LABEL.into(), zone);
    }
    let has_host = topology
        .get(HOSTNAME_LABEL)
        .and_then(Value::as_str)
        .is_some_and(|h| !h.is_empty());
    if let (false, Some(node)) = (has_host, endpoint.get("nodeName").cloned()) {
        topology.insert(HOSTNAME_LABEL.into(), node);
    }
    endpoint.insert("topology".into(), Value::Object(topology));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn up(rule: Rule, mut value: Value) -> Value {
        rule.apply(&mut value, Direction::ToStorage).unwrap();
        value
    }

    fn down(rule: Rule, mut value: Value) -> Value {
        rule.apply(&mut value, Direction::FromStorage).unwrap();
        value
    }

    #[test]
    fn ingress_backends_split_the_port_by_its_type() {
        let numbered = json!({"serviceName": "web", "servicePort": 80});
        let stored = up(Rule::IngressBackend, numbered.clone());
        assert_eq!(
            stored,
            json!({"service": {"name": "web", "port": {"number": 80}}})
        );
        assert_eq!(down(Rule::IngressBackend, stored), numbered);

        let named = json!({"serviceName": "web", "servicePort": "http"});
        let stored = up(Rule::IngressBackend, named.clone());
        assert_eq!(
            stored,
            json!({"service": {"name": "web", "port": {"name": "http"}}})
        );
        assert_eq!(down(Rule::IngressBackend, stored), named);

        let resource = json!({"resource": {"kind": "Bucket", "name": "b"}});
        assert_eq!(up(Rule::IngressBackend, resource.clone()), resource);
        assert_eq!(down(Rule::IngressBackend, resource.clone()), resource);
    }

    #[test]
    fn endpoint_topology_splits_into_zone_and_node() {
        let old = json!({
            "addresses": ["10.0.0.1"], "nodeName": "n1",
            "topology": {ZONE_LABEL: "z1", HOSTNAME_LABEL: "n1", "rack": "r7"},
        });
        let stored = up(Rule::EndpointTopologyV1beta1, old.clone());
        assert_eq!(
            stored,
            json!({
                "addresses": ["10.0.0.1"], "nodeName": "n1", "zone": "z1",
                "deprecatedTopology": {"rack": "r7"},
            })
        );
        assert_eq!(down(Rule::EndpointTopologyV1beta1, stored), old);
        let bare = json!({"addresses": ["10.0.0.2"]});
        assert_eq!(up(Rule::EndpointTopologyV1beta1, bare.clone()), bare);
        assert_eq!(down(Rule::EndpointTopologyV1beta1, bare.clone()), bare);
    }

    #[test]
    fn rbac_v1alpha1_subjects_name_versions_for_groups() {
        let user = json!({"kind": "User", "name": "jane", "apiVersion": RBAC_V1ALPHA1});
        let stored = up(Rule::RbacSubjectV1alpha1, user.clone());
        assert_eq!(
            stored,
            json!({"kind": "User", "name": "jane", "apiGroup": RBAC_GROUP})
        );
        assert_eq!(down(Rule::RbacSubjectV1alpha1, stored), user);

        let account = json!({"kind": "ServiceAccount", "name": "a", "namespace": "n"});
        assert_eq!(up(Rule::RbacSubjectV1alpha1, account.clone()), account);
        assert_eq!(down(Rule::RbacSubjectV1alpha1, account.clone()), account);
    }
}
