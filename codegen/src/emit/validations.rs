//! Checks of built-in types (`specs/validation/kubernetes.yaml`, from upstream's validation
//! functions): parsing, and the `kapi::validation::Check` each entry becomes. Like defaults,
//! each type's checks go into its static `kapi::merge::TypeInfo`.
//!
//! [`Validations::from_yaml_str`] parses text; reading the file is
//! [`load_validations`](crate::load::load_validations)'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::data_file::DataText;
use super::lifecycle::Release;
use crate::load::LoadError;

/// Checks by type definition name (`io.k8s.api.core.v1.ConfigMap`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Validations {
    /// Each type's checks, in order, with paths relative to the type.
    pub types: BTreeMap<String, Vec<TypeCheck>>,
}

/// One check of a type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeCheck {
    /// Dotted path from the type; empty for the type itself.
    pub path: String,
    /// What the field must satisfy.
    pub rule: CheckRule,
    /// The first release that checks it.
    pub since: Option<Release>,
    /// The first release that no longer does.
    pub until: Option<Release>,
}

/// A `kapi::validation::Rule`, named as the runtime names its variants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckRule {
    /// `Required`.
    Required,
    /// `Minimum(n)`.
    Minimum(i64),
    /// `Range(lo, hi)`.
    Range(i64, i64),
    /// `Port`.
    Port,
    /// `PortOrName`.
    PortOrName,
    /// `OneOf(values)`.
    OneOf(Vec<String>),
    /// `Format(variant)`.
    Format(&'static str),
    /// `KeysFormat(variant)`.
    KeysFormat(&'static str),
    /// `Unique(field)`.
    Unique(String),
    /// `Immutable(Shape::variant)`.
    Immutable(&'static str),
    /// `Named(Named::variant)`, or `Named(Named::variant(Workload::workload))`.
    Named {
        /// The `kapi::validation::Named` variant.
        variant: &'static str,
        /// The `kapi::validation::Workload` it takes, if any.
        workload: Option<&'static str>,
    },
}

/// Format names in the data file and their `kapi::validation::Format` variants.
const FORMATS: &[(&str, &str)] = &[
    ("dns-label", "DnsLabel"),
    ("dns-subdomain", "DnsSubdomain"),
    ("dns-1035-label", "Dns1035Label"),
    ("qualified-name", "QualifiedName"),
    ("label-value", "LabelValue"),
    ("config-map-key", "ConfigMapKey"),
    ("port-name", "PortName"),
    ("path-segment", "PathSegment"),
    ("env-var-name", "EnvVarName"),
];

/// Shapes of immutable values and their `kapi::validation::Shape` variants.
const SHAPES: &[(&str, &str)] = &[
    ("plain", "Plain"),
    ("string-map", "StringMap"),
    ("label-selector", "LabelSelector"),
];

/// Named rules, their `kapi::validation::Named` variants and the `Workload` they take.
const NAMED: &[(&str, &str, Option<&str>)] = &[
    ("config_map_data", "ConfigMapData", None),
    ("secret_data", "SecretData", None),
    ("immutable_data", "ImmutableData", None),
    ("deployment_selector", "Selector", Some("Deployment")),
    ("replica_set_selector", "Selector", Some("ReplicaSet")),
    ("daemon_set_selector", "Selector", Some("DaemonSet")),
    ("stateful_set_selector", "Selector", Some("StatefulSet")),
    ("progress_deadline", "ProgressDeadline", None),
    ("rolling_update", "RollingUpdate", None),
    ("stateful_set_update", "StatefulSetUpdate", None),
    ("job_template", "JobTemplate", None),
    ("job", "Job", None),
    ("job_spec", "JobSpec", None),
    ("job_template_spec", "JobTemplateSpec", None),
    ("job_status", "JobStatus", None),
    ("cron_job_name", "CronJobName", None),
    ("service_ports", "ServicePorts", None),
    ("service", "Service", None),
    ("volumes", "Volumes", None),
    ("resources", "Resources", None),
    ("handler", "Handler", None),
    ("pod_fields", "PodFields", None),
    ("toleration", "Toleration", None),
    ("env_var_source", "EnvVarSource", None),
    ("env_from_source", "EnvFromSource", None),
    ("host_ports", "HostPorts", None),
    ("probe_thresholds", "ProbeThresholds", None),
    ("pod_update", "PodUpdate", None),
    ("pod_status", "PodStatus", None),
    ("pod_create", "PodCreate", None),
    ("ephemeral_claim_names", "EphemeralClaimNames", None),
    ("image_volume_references", "ImageVolumeReferences", None),
    ("host_aliases", "HostAliases", None),
    ("topology_spread", "TopologySpread", None),
    ("windows_host_process", "WindowsHostProcess", None),
    ("pod_os", "PodOs", None),
    ("init_containers", "InitContainers", None),
    ("ephemeral_containers", "EphemeralContainers", None),
    ("resize_policy", "ResizePolicy", None),
    ("sleep_hooks", "SleepHooks", None),
    ("pod_template", "PodTemplate", None),
    ("dns_config", "DnsConfig", None),
    ("persistent_volume", "PersistentVolume", None),
    ("pod_security_context", "PodSecurityContext", None),
    ("security_context", "SecurityContext", None),
    ("pod_host_namespaces", "PodHostNamespaces", None),
    ("node_selector", "NodeSelector", None),
    ("preferred_scheduling_term", "PreferredSchedulingTerm", None),
    ("affinity_weight", "AffinityWeight", None),
    ("pod_affinity_term", "PodAffinityTerm", None),
    ("ingress_spec", "IngressSpec", None),
    ("ingress_spec_v1beta1", "IngressSpecV1beta1", None),
    ("ingress_host", "IngressHost", None),
    ("ingress_tls", "IngressTls", None),
    ("ingress_path", "IngressPath", None),
    ("ingress_backend", "IngressBackend", None),
    ("ingress_backend_v1beta1", "IngressBackendV1beta1", None),
    ("ingress_class_controller", "IngressClassController", None),
    ("label_selector", "LabelSelector", None),
    ("ip_block", "IpBlock", None),
    ("network_policy_port", "NetworkPolicyPort", None),
    ("network_policy_peer", "NetworkPolicyPeer", None),
    ("policy_types", "PolicyTypes", None),
    ("cron_job_schedule", "CronJobSchedule", None),
    ("role_rules", "RoleRules", None),
    ("cluster_role_rules", "ClusterRoleRules", None),
    ("role_binding", "RoleBinding", None),
    ("cluster_role_binding", "ClusterRoleBinding", None),
    ("claim", "Claim", None),
    ("storage_class", "StorageClass", None),
    ("priority_class", "PriorityClass", None),
    ("pod_disruption_budget", "PodDisruptionBudget", None),
    ("autoscaler_replicas", "AutoscalerReplicas", None),
    ("service_status", "ServiceStatus", None),
    ("ingress_class_annotation", "IngressClassAnnotation", None),
    ("autoscaler_metrics", "AutoscalerMetrics", None),
    ("autoscaler_target_cpu", "AutoscalerTargetCpu", None),
    ("claim_update", "ClaimUpdate", None),
    ("lease_spec", "LeaseSpec", None),
];

/// The keys of a check that say what it checks; exactly one per check.
const RULE_KEYS: &[&str] = &[
    "required",
    "minimum",
    "range",
    "port",
    "port-or-name",
    "one-of",
    "format",
    "keys-format",
    "unique",
    "immutable",
    "rule",
];

impl Validations {
    /// A type's own checks, by paths from the type.
    pub fn of(&self, definition: &str) -> &[TypeCheck] {
        self.types.get(definition).map_or(&[], Vec::as_slice)
    }

    /// Parses the YAML list described in `specs/validation/README.md`; `path` names the input
    /// in errors.
    pub fn from_yaml_str(path: &Path, text: &str) -> Result<Self, LoadError> {
        let file = DataText::new("validation", path);
        let mut types: BTreeMap<String, Vec<TypeCheck>> = BTreeMap::new();
        for (i, entry) in file.entries(text)?.iter().enumerate() {
            let at = format!("/{i}");
            file.object(entry, &at, &["types", "checks"])?;
            let names = file.names(entry, "types", &at)?;
            let Some(Value::Array(checks)) = entry.get("checks") else {
                return Err(file.invalid(format!("{at}/checks"), "expected a list"));
            };
            let checks = checks
                .iter()
                .enumerate()
                .map(|(c, check)| parse_check(&file, check, &format!("{at}/checks/{c}")))
                .collect::<Result<Vec<_>, _>>()?;
            for name in names {
                types
                    .entry(name)
                    .or_default()
                    .extend(checks.iter().cloned());
            }
        }
        Ok(Self { types })
    }
}

fn parse_check(file: &DataText, check: &Value, at: &str) -> Result<TypeCheck, LoadError> {
    let mut keys = vec!["path", "since", "until"];
    keys.extend(RULE_KEYS);
    let map = file.object(check, at, &keys)?;
    let path = file.text(map, "path", at)?.unwrap_or_default();
    let simple = path.split('.').skip(1).all(|step| {
        !step.is_empty() && step.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    if !(path.is_empty() || (path.starts_with('.') && simple)) {
        return Err(file.invalid(
            format!("{at}/path"),
            format!("{path:?} is not a dotted path from the type (`.a.b`)"),
        ));
    }
    let given: Vec<&&str> = RULE_KEYS.iter().filter(|k| map.contains_key(**k)).collect();
    let [key] = given.as_slice() else {
        return Err(file.invalid(at, format!("give exactly one of {}", RULE_KEYS.join(", "))));
    };
    let rule = parse_rule(file, map, key, &format!("{at}/{key}"))?;
    let (since, until) = file.releases(map, at)?;
    Ok(TypeCheck {
        path,
        rule,
        since,
        until,
    })
}

fn parse_rule(
    file: &DataText,
    map: &Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<CheckRule, LoadError> {
    let value = map.get(key).unwrap_or(&Value::Null);
    let invalid = |what: &str| file.invalid(at, what.to_owned());
    let flag = || match value {
        Value::Bool(true) => Ok(()),
        _ => Err(invalid("expected `true`")),
    };
    let named = |table: &[(&str, &'static str)]| {
        let name = value.as_str().unwrap_or("");
        table
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, variant)| *variant)
            .ok_or_else(|| {
                let known: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
                invalid(&format!("{value} is not one of {}", known.join(", ")))
            })
    };
    Ok(match key {
        "required" => flag().map(|()| CheckRule::Required)?,
        "port" => flag().map(|()| CheckRule::Port)?,
        "port-or-name" => flag().map(|()| CheckRule::PortOrName)?,
        "minimum" => CheckRule::Minimum(
            value
                .as_i64()
                .ok_or_else(|| invalid("expected an integer"))?,
        ),
        "range" => match value.as_array().map(Vec::as_slice) {
            Some([lo, hi]) => match (lo.as_i64(), hi.as_i64()) {
                (Some(lo), Some(hi)) if lo <= hi => CheckRule::Range(lo, hi),
                _ => return Err(invalid("expected [low, high] integers, low ≤ high")),
            },
            _ => return Err(invalid("expected [low, high]")),
        },
        "one-of" => {
            let values: Option<Vec<String>> = value
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or(None);
            match values {
                Some(values) if !values.is_empty() => CheckRule::OneOf(values),
                _ => return Err(invalid("expected a list of strings")),
            }
        }
        "format" => CheckRule::Format(named(FORMATS)?),
        "keys-format" => CheckRule::KeysFormat(named(FORMATS)?),
        "unique" => CheckRule::Unique(
            value
                .as_str()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| invalid("expected a field name"))?
                .to_owned(),
        ),
        "immutable" => CheckRule::Immutable(named(SHAPES)?),
        _ => {
            let name = value.as_str().unwrap_or("");
            let Some((_, variant, workload)) = NAMED.iter().find(|(n, ..)| *n == name) else {
                let known: Vec<&str> = NAMED.iter().map(|(n, ..)| *n).collect();
                return Err(invalid(&format!(
                    "{value} is not one of {}",
                    known.join(", ")
                )));
            };
            CheckRule::Named {
                variant,
                workload: *workload,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_parse_into_runtime_rules() {
        let parsed = Validations::from_yaml_str(
            Path::new("validation.yaml"),
            r#"
- types: [t.Container]
  checks:
    - {path: .name, required: true}
    - {path: .name, format: dns-label}
    - {path: .imagePullPolicy, one-of: [Always, Never]}
- types: [t.DeploymentSpec]
  checks:
    - {path: .replicas, minimum: 0}
    - {path: .selector, immutable: label-selector, since: "1.21"}
    - {rule: deployment_selector}
"#,
        )
        .unwrap();
        let rules: Vec<&CheckRule> = parsed
            .of("t.DeploymentSpec")
            .iter()
            .map(|c| &c.rule)
            .collect();
        assert_eq!(
            rules,
            [
                &CheckRule::Minimum(0),
                &CheckRule::Immutable("LabelSelector"),
                &CheckRule::Named {
                    variant: "Selector",
                    workload: Some("Deployment")
                },
            ]
        );
        assert_eq!(parsed.of("t.DeploymentSpec")[1].since, Some((1, 21)));
        assert_eq!(
            parsed.of("t.Container")[1].rule,
            CheckRule::Format("DnsLabel")
        );
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases = [
            ("- {types: [a], checks: [{path: .a}]}", "/0/checks/0"),
            (
                "- {types: [a], checks: [{path: .a, required: true, port: true}]}",
                "/0/checks/0",
            ),
            (
                "- {types: [a], checks: [{path: a, required: true}]}",
                "/0/checks/0/path",
            ),
            (
                "- {types: [a], checks: [{path: \".a[*]\", required: true}]}",
                "/0/checks/0/path",
            ),
            (
                "- {types: [a], checks: [{path: .a, format: dns}]}",
                "/0/checks/0/format",
            ),
            ("- {types: [a], checks: [{rule: nope}]}", "/0/checks/0/rule"),
            (
                "- {types: [a], checks: [{path: .a, range: [2, 1]}]}",
                "/0/checks/0/range",
            ),
            (
                "- {types: [a], checks: [{path: .a, required: false}]}",
                "/0/checks/0/required",
            ),
        ];
        for (text, pointer) in cases {
            match Validations::from_yaml_str(Path::new("validation.yaml"), text) {
                Err(LoadError::Invalid { pointer: found, .. }) => {
                    assert_eq!(found, pointer, "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
