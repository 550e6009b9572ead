//! Defaults computed from the object, one function per rule: most read the object holding the
//! field, some the whole object their type describes (a Job's labels come from its template).

use serde_json::{Map, Value};

/// A named way to compute a default from the object that holds the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A container's `imagePullPolicy` (`SetDefaults_Container`): `Always` for an image tagged
    /// `latest` or without a tag or digest, else `IfNotPresent`.
    ImagePullPolicy,
    /// An image volume's `pullPolicy` (`SetDefaults_Volume`, where ImageVolume is on): as a
    /// container's, from the volume's `reference`.
    ImageVolumePullPolicy,
    /// A Service port's `targetPort` (`SetDefaults_Service`): the port's own `port`.
    TargetPort,
    /// A Job's `backoffLimit` (`SetDefaults_Job`, from 1.29): the largest int32 when it backs
    /// off per index (`backoffLimitPerIndex`), else 6.
    BackoffLimit,
    /// The pod template's labels, `.spec.template.metadata.labels` of the object the type
    /// describes, when it has them: a Job's and a ReplicationController's own labels and the
    /// latter's selector (`SetDefaults_Job`, `SetDefaults_ReplicationController`), also
    /// replacing an empty map, as Go's `len(...) == 0` does.
    TemplateLabels,
    /// A container port's `hostPort` on the host's network: its `containerPort`
    /// (`defaultHostNetworkPorts`).
    ContainerPort,
    /// A Pod's container's `resources.requests` from its limits (`SetDefaults_Pod`, Pods only,
    /// not templates): every limit the requests do not name is requested as much.
    RequestsFromLimits,
    /// A ClusterIP Service's `externalTrafficPolicy` when it has external IPs
    /// (`SetDefaults_Service`'s `ExternallyAccessible`; NodePort and LoadBalancer Services get
    /// theirs by value): `Cluster`.
    ExternalTrafficPolicy,
    /// A load balancer ingress point's `ipMode` beside an `ip` (`SetDefaults_Service`, on a
    /// LoadBalancer Service): `VIP`.
    IpMode,
}

impl Rule {
    /// Whether the rule reads the whole object its type describes (see
    /// [`Rule::compute_from_object`]) rather than the field's holder.
    pub fn reads_object(self) -> bool {
        self == Self::TemplateLabels
    }

    /// Whether an empty map in the field counts as missing.
    pub fn fills_empty(self) -> bool {
        self == Self::TemplateLabels
    }

    /// Whether the computed map is merged into one the field already holds, each missing key
    /// added, rather than filling only a missing field.
    pub fn merges_keys(self) -> bool {
        self == Self::RequestsFromLimits
    }

    /// The default for a field of `holder`, or none to leave it out.
    pub fn compute(self, holder: &Map<String, Value>) -> Option<Value> {
        match self {
            Self::ImagePullPolicy => Some(Value::from(image_pull_policy(
                holder.get("image").and_then(Value::as_str).unwrap_or(""),
            ))),
            Self::ImageVolumePullPolicy => Some(Value::from(image_pull_policy(
                holder
                    .get("reference")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ))),
            Self::TargetPort => holder.get("port").cloned(),
            Self::BackoffLimit => {
                let per_index = holder
                    .get("backoffLimitPerIndex")
                    .is_some_and(|v| !v.is_null());
                Some(Value::from(if per_index { i32::MAX } else { 6 }))
            }
            Self::TemplateLabels => None,
            Self::ContainerPort => holder.get("containerPort").cloned(),
            Self::ExternalTrafficPolicy => {
                let cluster_ip = holder.get("type").and_then(Value::as_str) == Some("ClusterIP");
                let external = holder
                    .get("externalIPs")
                    .and_then(Value::as_array)
                    .is_some_and(|ips| !ips.is_empty());
                (cluster_ip && external).then(|| Value::from("Cluster"))
            }
            Self::IpMode => holder
                .get("ip")
                .and_then(Value::as_str)
                .filter(|ip| !ip.is_empty())
                .map(|_| Value::from("VIP")),
            Self::RequestsFromLimits => holder
                .get("limits")
                .filter(|limits| limits.as_object().is_some_and(|l| !l.is_empty()))
                .cloned(),
        }
    }

    /// The default computed from `object`, the value of the type the default belongs to, for a
    /// rule that [`reads_object`](Rule::reads_object); none to leave the field out.
    pub fn compute_from_object(self, object: &Value) -> Option<Value> {
        match self {
            Self::TemplateLabels => object
                .pointer("/spec/template/metadata/labels")
                .filter(|labels| labels.is_object())
                .cloned(),
            _ => None,
        }
    }
}

/// `SetDefaults_Container`: `Always` when the image's tag is `latest`, which
/// `parsers.ParseImageName` assumes for an image with neither tag nor digest; `IfNotPresent`
/// otherwise, also for a name it cannot parse (the empty one), whose tag it reports empty.
fn image_pull_policy(image: &str) -> &'static str {
    if image.is_empty() {
        return "IfNotPresent";
    }
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    // A tag follows the last `:` after the last `/` (a registry's port comes before a `/`).
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = match last.rsplit_once(':') {
        Some((_, tag)) => tag,
        None if digest.is_some() => "",
        None => "latest",
    };
    if tag == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn services_default_their_traffic_policy_and_ip_mode() {
        // SetDefaults_Service: ExternallyAccessible's ClusterIP Service with external IPs; an
        // ingress point's mode beside an IP.
        let holder = |value: serde_json::Value| value.as_object().cloned().unwrap_or_default();
        let policy = |spec| Rule::ExternalTrafficPolicy.compute(&holder(spec));
        assert_eq!(
            policy(serde_json::json!({"type": "ClusterIP", "externalIPs": ["1.2.3.4"]})),
            Some(Value::from("Cluster"))
        );
        assert_eq!(policy(serde_json::json!({"type": "ClusterIP"})), None);
        assert_eq!(
            policy(serde_json::json!({"type": "ExternalName", "externalIPs": ["1.2.3.4"]})),
            None
        );
        let mode = |point| Rule::IpMode.compute(&holder(point));
        assert_eq!(
            mode(serde_json::json!({"ip": "1.2.3.4"})),
            Some(Value::from("VIP"))
        );
        assert_eq!(mode(serde_json::json!({"hostname": "lb.example"})), None);
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        // Cases from SetDefaults_Container and its tests (pkg/apis/core/v1/defaults_test.go).
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1.25", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
            ("", "IfNotPresent"),
        ] {
            assert_eq!(image_pull_policy(image), policy, "{image}");
            // An image volume's policy follows its reference alike (SetDefaults_Volume).
            let volume = serde_json::json!({"reference": image});
            assert_eq!(
                Rule::ImageVolumePullPolicy.compute(volume.as_object().unwrap()),
                Some(Value::from(policy))
            );
        }
    }
}
