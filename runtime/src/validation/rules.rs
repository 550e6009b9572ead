//! The checks that are code, one function per rule, each following one upstream validation
//! function (named at each variant). A Deployment's rolling update is in `apps`, pod rules in
//! `pods`, a pod update's in `pod_update`, security contexts and affinity in `security` (with
//! `go_value` printing upstream's internal structs), a pod's Windows options and HostProcess
//! containers in `windows`, what a container may set by its place in
//! the pod (init containers, restart policies, sleep hooks) in `containers`, environment
//! sources and downward API files in `downward`, pod volume sources' own fields beyond their
//! required names in `volume_sources`, a PersistentVolume's in `persistent_volume`, Ingress,
//! NetworkPolicy and label selector rules in `networking`, RBAC's in `rbac`, the CronJob
//! schedule parser in `batch`, a Job's selector, spec, update and status rules and a CronJob's
//! job template in `jobs`, a Service's in `services`, a HorizontalPodAutoscaler's metrics and
//! behavior in `autoscaling`, and the storage, scheduling, policy, autoscaling and coordination
//! kinds' other rules (and a claim's) in `cluster`.

mod apps;
mod autoscaling;
mod batch;
mod cluster;
mod containers;
mod downward;
mod go_value;
mod jobs;
mod networking;
mod persistent_volume;
mod pod_resize;
mod pod_update;
mod pods;
mod rbac;
mod security;
mod services;
mod volume_sources;
mod windows;

#[cfg(feature = "server")]
pub(crate) use containers::restart_rules_in_use;

use networking::IngressShape;

use std::collections::BTreeMap;

use serde_json::Value;

use super::field::{Errors, FieldPath, Shown};
use super::{IMMUTABLE, at_path};
use crate::KubeVersion;
use crate::meta::LabelSelector;

/// The largest ConfigMap or Secret, in bytes of data (`core.MaxSecretSize`).
const MAX_DATA_SIZE: usize = 1024 * 1024;
/// The message of a change to a ConfigMap or Secret marked immutable.
const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";

/// A rule that is not a shape of data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Named {
    /// A ConfigMap's keys in `data` and `binaryData`, no key in both, and at most 1 MiB of
    /// values (`ValidateConfigMap`).
    ConfigMapData,
    /// A Secret's keys, at most 1 MiB of values, and the keys its `type` requires
    /// (`ValidateSecret`).
    SecretData,
    /// Once `immutable: true`, a ConfigMap's or Secret's data and the flag stay as they are
    /// (`ValidateConfigMapUpdate`, `ValidateSecretUpdate`).
    ImmutableData,
    /// A workload's selector: present, not empty, matching the pod template's labels
    /// (`ValidateDeploymentSpec` and its siblings).
    Selector(Workload),
    /// A Deployment's `progressDeadlineSeconds` above its `minReadySeconds`.
    ProgressDeadline,
    /// A Deployment's rolling update: counts or percentages, not both 0
    /// (`ValidateRollingUpdateDeployment`); on a RollingUpdateDeployment.
    RollingUpdate,
    /// An update changes only the StatefulSet spec fields upstream lets change
    /// (`ValidateStatefulSetUpdate`).
    StatefulSetUpdate,
    /// A Job's generated selector and labels, its selector against its template, an Indexed
    /// Job's name, and on update its completions, selector and policies unchanged
    /// (`validateGeneratedSelector`, `ValidateJob`, `ValidateJobSpecUpdate`); on the Job.
    Job,
    /// A JobSpec's restart policy, completion mode, per-index backoff and pod failure and
    /// replacement policies (`validateJobSpec`); a Job's and a CronJob's job template's.
    JobSpec,
    /// A CronJob's job template sets no selector (`ValidateJobTemplateSpec`).
    JobTemplateSpec,
    /// A Job's status counts and uncounted pods, and from 1.32 counters that do not go down and
    /// terminal conditions that stay (`validateJobStatus`, `ValidateJobStatusUpdate`); on a Job,
    /// on status writes only.
    JobStatus,
    /// A new CronJob's name leaves room for its Jobs' suffix: 52 characters
    /// (`ValidateCronJobCreate`); on the CronJob, creates only.
    CronJobName,
    /// An update leaves a Job's pod template as it was, except the scheduling directives of a
    /// suspended Job that never started (`validatePodTemplateUpdate`); on the Job itself.
    JobTemplate,
    /// A Service's ports: required unless headless or ExternalName, named when several, names
    /// unique, no port or node port twice for a protocol, and before 1.31 not the kubelet's on
    /// a LoadBalancer (`ValidateService`); on a ServiceSpec.
    ServicePorts,
    /// The rest of `ValidateService` that is code (ExternalName, cluster IP and family fields,
    /// external IPs, source ranges, session affinity, selector, LoadBalancer-only fields,
    /// traffic policies) and `ValidateServiceUpdate`'s load balancer class and health check
    /// port; on the Service.
    Service,
    /// A pod's volumes: one source each, DNS-label names, none twice (`ValidateVolumes`,
    /// `validateVolumeSource`); then each container's volume mounts name one of the valid
    /// volumes and have unique, non-empty mount paths (`ValidateVolumeMounts`); on a PodSpec.
    Volumes,
    /// A container's resource names and quantities, requests within limits
    /// (`ValidateResourceRequirements`); on a Container.
    Resources,
    /// A probe or lifecycle hook has exactly one action, with its command, path or port
    /// (`validateHandler`).
    Handler,
    /// A toleration's key, operator, value and effect (`ValidateTolerations`).
    Toleration,
    /// An environment variable's `valueFrom`: one source, and that source's field path,
    /// resource and divisor, or ConfigMap or Secret key (`validateEnvVarValueFrom`); on an
    /// EnvVar.
    EnvVarSource,
    /// An `envFrom` item's prefix and its one ConfigMap or Secret (`ValidateEnvFrom`).
    EnvFromSource,
    /// No two container ports take one host port (`checkHostPortConflicts`); on a PodSpec.
    HostPorts,
    /// A PodSpec's service account, node, host and priority class names and its deadline, when
    /// set (`ValidatePodSpec`).
    PodFields,
    /// What an update may change in a Pod, and its mirror pod and AppArmor annotations
    /// (`ValidatePodUpdate`, `ValidatePodSpecificAnnotationUpdates`); on a Pod, updates only.
    PodUpdate,
    /// A pod security context's supplemental groups, sysctls, fsGroup change policy, seccomp
    /// and AppArmor profiles (`validatePodSpecSecurityContext`); on a PodSecurityContext.
    PodSecurityContext,
    /// A container security context's proc mount, seccomp and AppArmor profiles and privilege
    /// escalation (`ValidateSecurityContext`); on a SecurityContext.
    SecurityContext,
    /// What a security context checks against the PodSpec's host namespaces and users
    /// (`shareProcessNamespace`, `ValidateHostSysctl`, `Unmasked` proc mounts); on a PodSpec.
    PodHostNamespaces,
    /// A required node affinity's terms (`ValidateNodeSelector`); on a NodeSelector.
    NodeSelector,
    /// A preferred node affinity term's weight and preference (`ValidatePreferredSchedulingTerms`).
    PreferredSchedulingTerm,
    /// A weighted pod affinity term's weight, 1 to 100 (`validateWeightedPodAffinityTerms`).
    AffinityWeight,
    /// A pod affinity term's namespaces and topology key (`validatePodAffinityTerm`).
    PodAffinityTerm,
    /// A new Pod has no ephemeral containers, nor a node while it has scheduling gates
    /// (`ValidatePodCreate`); on a Pod, creates only.
    PodCreate,
    /// An ephemeral volume's claim named `<pod>-<volume>`, and no claim volume naming one
    /// (`ValidateVolumes` with the pod's metadata); on a Pod.
    EphemeralClaimNames,
    /// An image volume's `reference`, required in a Pod (`validateImageVolumeSource`); on a Pod.
    ImageVolumeReferences,
    /// A PodSpec's host aliases: IPs and host names (`ValidateHostAliases`).
    HostAliases,
    /// A PodSpec's DNS config (`validatePodDNSConfig`).
    DnsConfig,
    /// A PodSpec's topology spread constraints (`validateTopologySpreadConstraints`).
    TopologySpread,
    /// A PodSpec's HostProcess containers: all or none, on the host's network, allowed by the
    /// cluster (`validateWindowsHostProcessPod`).
    WindowsHostProcess,
    /// What a pod's `spec.os` names and forbids (`validateOS`, `validateLinux`,
    /// `validateWindows`); on a PodSpec.
    PodOs,
    /// Containers' restart policies, and no probes or hooks on a regular init container
    /// (`validateContainers`, `validateInitContainers`); on a PodSpec.
    InitContainers,
    /// What an ephemeral container may be and set (`validateEphemeralContainers`); on a
    /// PodSpec.
    EphemeralContainers,
    /// Each container's resize policy (`validateResizePolicy`, from 1.33); on a PodSpec.
    ResizePolicy,
    /// A lifecycle hook's sleep within the pod's grace period (`validateSleepAction`); on a
    /// PodSpec.
    SleepHooks,
    /// A pod template has no ephemeral containers (`ValidatePodTemplateSpec`); on a
    /// PodTemplateSpec.
    PodTemplate,
    /// What a write through a Pod's `/status` may do: its conditions' types, the nominated
    /// node's name, the QoS class and terminated containers left as they were
    /// (`ValidatePodStatusUpdate`); on a Pod, on status writes only.
    PodStatus,
    /// What a write through a Service's `/status` may say of its load balancer: ingress points'
    /// IPs, modes and host names, from 1.29 only on a LoadBalancer
    /// (`ValidateServiceStatusUpdate`); on a Service, on status writes only.
    ServiceStatus,
    /// A PersistentVolume's spec and, on an update, its unchanged source, volume mode and node
    /// affinity (`ValidatePersistentVolumeSpec`, `ValidatePersistentVolumeUpdate`).
    PersistentVolume,
    /// A container's liveness and startup probes have a `successThreshold` of 1
    /// (`validateLivenessProbe`, `validateStartupProbe`); on a Container.
    ProbeThresholds,
    /// An Ingress has rules or a default backend (`ValidateIngressSpec`); networking/v1.
    IngressSpec,
    /// [`Named::IngressSpec`] in the v1beta1 shape (`backend`), served in 1.20.
    IngressSpecV1beta1,
    /// An Ingress rule's host is a DNS name or a wildcard one (`validateIngressRules`).
    IngressHost,
    /// An Ingress's TLS hosts and secret names (`validateIngressTLS`); on the spec.
    IngressTls,
    /// An Ingress path has a supported type and a path it allows (`validateHTTPIngressPath`).
    IngressPath,
    /// An Ingress backend names a Service port or a resource (`validateIngressBackend`).
    IngressBackend,
    /// [`Named::IngressBackend`] in the v1beta1 shape (`serviceName`, `servicePort`).
    IngressBackendV1beta1,
    /// A new Ingress's `kubernetes.io/ingress.class` annotation beside `ingressClassName`
    /// (`ValidateIngressCreate`); on an Ingress, creates only.
    IngressClassAnnotation,
    /// An IngressClass's controller is a domain-prefixed path (`validateIngressClassSpec`).
    IngressClassController,
    /// A label selector's labels and requirements (`ValidateLabelSelector`).
    LabelSelector,
    /// A NetworkPolicy IP block's CIDR and exceptions (`ValidateIPBlock`).
    IpBlock,
    /// A NetworkPolicy port's protocol, port and end port (`ValidateNetworkPolicyPort`).
    NetworkPolicyPort,
    /// A NetworkPolicy peer has a selector or an IP block, the block alone
    /// (`ValidateNetworkPolicyPeer`).
    NetworkPolicyPeer,
    /// A NetworkPolicy's `policyTypes` are at most two of `Ingress` and `Egress`.
    PolicyTypes,
    /// A CronJob's schedule parses as robfig/cron parses it, and its time zone is known
    /// (`validateCronJobSpec`); on a CronJobSpec.
    CronJobSchedule,
    /// A Role's rules (`ValidatePolicyRule`, namespaced: no non-resource URLs).
    RoleRules,
    /// A ClusterRole's rules (`ValidatePolicyRule`) and aggregation rule.
    ClusterRoleRules,
    /// A RoleBinding's role reference and subjects, the reference unchanged on update
    /// (`ValidateRoleBinding(Update)`).
    RoleBinding,
    /// A ClusterRoleBinding's (`ValidateClusterRoleBinding(Update)`).
    ClusterRoleBinding,
    /// A PersistentVolumeClaim's access modes, storage request, class and volume mode
    /// (`ValidatePersistentVolumeClaimSpec`); on a PersistentVolumeClaim, the kind or a
    /// StatefulSet's template (from 1.35, on create).
    Claim,
    /// A StorageClass's provisioner, parameters, reclaim policy and binding mode, and what an
    /// update may not change (`ValidateStorageClass(Update)`).
    StorageClass,
    /// A PriorityClass's value: at most 10⁹ for a user's class, never changed
    /// (`ValidatePriorityClass(Update)`).
    PriorityClass,
    /// A PodDisruptionBudget's `minAvailable` or `maxUnavailable`
    /// (`ValidatePodDisruptionBudgetSpec`).
    PodDisruptionBudget,
    /// A HorizontalPodAutoscaler's `maxReplicas`: positive and not below `minReplicas`.
    AutoscalerReplicas,
    /// A HorizontalPodAutoscaler's metrics and scaling behavior (`validateMetrics`,
    /// `validateBehavior`); on an autoscaling/v2 or v2beta2 spec.
    AutoscalerMetrics,
    /// An autoscaling/v1 HorizontalPodAutoscaler's `targetCPUUtilizationPercentage`, checked as
    /// the CPU metric upstream converts it to (`validateMetricTarget`); on a v1 spec.
    AutoscalerTargetCpu,
    /// What an update may change in a PersistentVolumeClaim's spec: its volume name once, its
    /// class from none, a bound claim's storage request up (`ValidatePersistentVolumeClaimUpdate`);
    /// on a PersistentVolumeClaim, updates only.
    ClaimUpdate,
    /// A Lease's duration and transitions (`ValidateLeaseSpec`).
    LeaseSpec,
}

/// The workload whose selector is checked: the rules differ a little.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `ValidateDeploymentSpec`.
    Deployment,
    /// `ValidateReplicaSetSpec` (whose empty-selector message also says "deployment").
    ReplicaSet,
    /// `ValidateDaemonSetSpec`: a missing selector is not reported as required.
    DaemonSet,
    /// `ValidateStatefulSetSpec`.
    StatefulSet,
    /// `ValidateJobSpec`: an empty selector is allowed (it selects every pod).
    Job,
}

impl Named {
    /// Whether the rule holds writes through `/status` (and only those).
    pub(super) fn on_status(self) -> bool {
        matches!(
            self,
            Self::PodStatus | Self::JobStatus | Self::ServiceStatus
        )
    }

    /// Checks `holder` (a value of the type the rule belongs to, at `at`); `old` on updates.
    pub(super) fn check(
        self,
        holder: &Value,
        old: Option<&Value>,
        at: &FieldPath,
        errors: &mut Errors,
    ) {
        match self {
            Self::ConfigMapData => config_map_data(holder, at, errors),
            Self::SecretData => secret_data(holder, at, errors),
            Self::ImmutableData => {
                if let Some(old) = old {
                    immutable_data(holder, old, at, errors);
                }
            }
            Self::Selector(workload) => selector(workload, holder, at, errors),
            Self::ProgressDeadline => progress_deadline(holder, at, errors),
            Self::RollingUpdate => apps::rolling_update(holder, at, errors),
            Self::StatefulSetUpdate => {
                if let Some(old) = old {
                    stateful_set_update(holder, old, at, errors);
                }
            }
            Self::Job => jobs::job(holder, old, at, errors),
            Self::JobSpec => jobs::job_spec(holder, at, errors),
            Self::JobTemplateSpec => jobs::job_template_spec(holder, at, errors),
            Self::JobStatus => {
                if let Some(old) = old {
                    jobs::job_status(holder, old, at, errors);
                }
            }
            Self::CronJobName => {
                if old.is_none() {
                    jobs::cron_job_name(holder, at, errors);
                }
            }
            Self::JobTemplate => {
                if let Some(old) = old {
                    job_template(holder, old, at, errors);
                }
            }
            Self::ServicePorts => services::service_ports(holder, at, errors),
            Self::Service => services::service(holder, old, at, errors),
            Self::ServiceStatus => services::service_status(holder, at, errors),
            Self::Volumes => pods::volumes(holder, at, errors),
            Self::Resources => pods::container_resources(holder, at, errors),
            Self::Handler => pods::handler(holder, at, errors),
            Self::PodFields => pods::pod_fields(holder, at, errors),
            Self::Toleration => pods::toleration(holder, at, errors),
            Self::EnvVarSource => downward::env_var(holder, at, errors),
            Self::EnvFromSource => downward::env_from(holder, at, errors),
            Self::HostPorts => pods::host_ports(holder, at, errors),
            Self::ProbeThresholds => pods::probe_thresholds(holder, at, errors),
            Self::PodUpdate => {
                if let Some(old) = old {
                    pod_update::pod_update(holder, old, at, errors);
                }
            }
            Self::PodCreate => {
                if old.is_none() {
                    pod_update::pod_create(holder, at, errors);
                }
            }
            Self::EphemeralClaimNames => pods::ephemeral_claim_names(holder, at, errors),
            Self::ImageVolumeReferences => pods::image_volume_references(holder, at, errors),
            Self::HostAliases => pods::host_aliases(holder, at, errors),
            Self::DnsConfig => pods::dns_config(holder, at, errors),
            Self::TopologySpread => pods::topology_spread(holder, at, errors),
            Self::WindowsHostProcess => windows::windows_host_process(holder, at, errors),
            Self::PodOs => windows::pod_os(holder, at, errors),
            Self::InitContainers => containers::init_containers(holder, old, at, errors),
            Self::EphemeralContainers => containers::ephemeral_containers(holder, at, errors),
            Self::ResizePolicy => containers::resize_policies(holder, old, at, errors),
            Self::SleepHooks => containers::sleep_hooks(holder, at, errors),
            Self::PodTemplate => containers::pod_template(holder, at, errors),
            Self::PodStatus => {
                if let Some(old) = old {
                    pod_update::pod_status(holder, old, at, errors);
                }
            }
            Self::PersistentVolume => {
                persistent_volume::persistent_volume(holder, old, at, errors);
            }
            Self::PodSecurityContext => security::pod_security_context(holder, old, at, errors),
            Self::SecurityContext => security::security_context(holder, at, errors),
            Self::PodHostNamespaces => security::pod_host_namespaces(holder, at, errors),
            Self::NodeSelector => security::node_selector(holder, at, errors),
            Self::PreferredSchedulingTerm => {
                security::preferred_scheduling_term(holder, at, errors);
            }
            Self::AffinityWeight => security::weight(holder, at, errors),
            Self::PodAffinityTerm => security::pod_affinity_term(holder, at, errors),
            Self::IngressSpec => networking::ingress_spec(IngressShape::V1, holder, at, errors),
            Self::IngressSpecV1beta1 => {
                networking::ingress_spec(IngressShape::V1beta1, holder, at, errors);
            }
            Self::IngressHost => networking::ingress_host(holder, at, errors),
            Self::IngressTls => networking::ingress_tls(holder, old, at, errors),
            Self::IngressPath => networking::ingress_path(holder, at, errors),
            Self::IngressBackend => {
                networking::ingress_backend(IngressShape::V1, holder, at, errors);
            }
            Self::IngressBackendV1beta1 => {
                networking::ingress_backend(IngressShape::V1beta1, holder, at, errors);
            }
            Self::IngressClassAnnotation => {
                if old.is_none() {
                    networking::ingress_class_annotation(holder, at, errors);
                }
            }
            Self::IngressClassController => {
                networking::ingress_class_controller(holder, at, errors);
            }
            Self::LabelSelector => networking::label_selector(holder, at, errors),
            Self::IpBlock => networking::ip_block(holder, at, errors),
            Self::NetworkPolicyPort => networking::network_policy_port(holder, at, errors),
            Self::NetworkPolicyPeer => networking::network_policy_peer(holder, at, errors),
            Self::PolicyTypes => networking::policy_types(holder, at, errors),
            Self::CronJobSchedule => batch::cron_job_schedule(holder, old, at, errors),
            Self::RoleRules => rbac::policy_rules(holder, true, at, errors),
            Self::ClusterRoleRules => {
                rbac::policy_rules(holder, false, at, errors);
                rbac::aggregation_rule(holder, at, errors);
            }
            Self::RoleBinding => rbac::binding(holder, old, true, at, errors),
            Self::ClusterRoleBinding => rbac::binding(holder, old, false, at, errors),
            Self::Claim => cluster::claim(holder, old, at, errors),
            Self::StorageClass => cluster::storage_class(holder, old, at, errors),
            Self::PriorityClass => cluster::priority_class(holder, old, at, errors),
            Self::PodDisruptionBudget => cluster::pdb_spec(holder, at, errors),
            Self::AutoscalerReplicas => cluster::hpa_replicas(holder, at, errors),
            Self::AutoscalerMetrics => autoscaling::metrics_and_behavior(holder, at, errors),
            Self::AutoscalerTargetCpu => autoscaling::target_cpu(holder, at, errors),
            Self::ClaimUpdate => {
                if let Some(old) = old {
                    cluster::claim_update(holder, old, at, errors);
                }
            }
            Self::LeaseSpec => cluster::lease_spec(holder, at, errors),
        }
    }
}

/// A string field of `holder`, `""` when missing (a Go string's zero value).
/// The checks of a write through a pod's `/ephemeralcontainers` beyond its types' (see
/// `pod_update::ephemeral_containers_update`).
/// Returns whether the pod is static, whose only error that is.
pub(super) fn ephemeral_containers_update(new: &Value, old: &Value, errors: &mut Errors) -> bool {
    pod_update::ephemeral_containers_update(new, old, errors)
}

/// `ValidatePodResize`'s refusal of the pod as a whole (pod-level resources, a static or a
/// Windows pod), upstream's only error then (see `pod_resize`).
pub(super) fn pod_resize_refused(new: &Value, old: &Value, release: KubeVersion) -> Option<Errors> {
    pod_resize::pod_resize_refused(new, old, release)
}

/// The checks of a write through a pod's `/resize` beyond its types' (see
/// `pod_resize::pod_resize`), after them.
pub(super) fn pod_resize(new: &Value, old: &Value, errors: &mut Errors) {
    pod_resize::pod_resize(new, old, errors);
}

/// A field of `holder` that is set: there and not null (a Go pointer that is not nil).
fn present<'v>(holder: &'v Value, field: &str) -> Option<&'v Value> {
    holder.get(field).filter(|v| !v.is_null())
}

fn text<'v>(holder: &'v Value, field: &str) -> &'v str {
    holder.get(field).and_then(Value::as_str).unwrap_or("")
}

/// A list field of `holder`, empty when missing (a Go nil slice).
fn items<'v>(holder: &'v Value, field: &str) -> &'v [Value] {
    holder
        .get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// `IsValidPortNum` for the rules' submodules: 1 to 65535 (`Invalid value: 0: ...`).
fn port_number(n: i64, path: &FieldPath, errors: &mut Errors) {
    if !(1..=65535).contains(&n) {
        let detail = "must be between 1 and 65535, inclusive";
        errors.invalid(path, Shown::Plain(&Value::from(n)), detail);
    }
}

/// What `check` reports in release 1.`minor`, as `<field>: <message>` lines (the rules' tests).
#[cfg(test)]
fn lines(minor: u16, check: impl FnOnce(&mut Errors)) -> Vec<String> {
    let mut errors = Errors::new(KubeVersion::new(1, minor));
    check(&mut errors);
    rendered(errors)
}

/// The errors found, as `<field>: <message>` lines (the rules' tests).
#[cfg(test)]
fn rendered(errors: Errors) -> Vec<String> {
    errors
        .into_causes()
        .into_iter()
        .map(|c| {
            let field = c.field.unwrap_or_default();
            format!("{field}: {}", c.message.unwrap_or_default())
        })
        .collect()
}

fn map_of<'v>(holder: &'v Value, field: &str) -> impl Iterator<Item = (&'v String, &'v Value)> {
    holder
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// The length in bytes of what a base64 text decodes to.
fn decoded_len(text: &str) -> usize {
    let padding = text.bytes().rev().take_while(|&b| b == b'=').count();
    (text.len() / 4 * 3 + (text.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

/// The keys' format is data (`keys-format` before this rule, and after it for `binaryData`).
fn config_map_data(holder: &Value, at: &FieldPath, errors: &mut Errors) {
    let binary = holder.get("binaryData").and_then(Value::as_object);
    for (key, _) in map_of(holder, "data") {
        if binary.is_some_and(|b| b.contains_key(key)) {
            let value = Value::from(key.as_str());
            errors.invalid(
                &at.child("data").key(key),
                Shown::Plain(&value),
                "duplicate of key present in binaryData",
            );
        }
    }
    let size: usize = map_of(holder, "data")
        .map(|(_, v)| v.as_str().map_or(0, str::len))
        .chain(map_of(holder, "binaryData").map(|(_, v)| v.as_str().map_or(0, decoded_len)))
        .sum();
    if size > MAX_DATA_SIZE {
        // Upstream reports it at `field.NewPath("")`, which renders as `[]`.
        errors.too_long(&FieldPath::of("[]"), MAX_DATA_SIZE);
    }
}

/// Before 1.21 upstream built these paths from `"data[%s]"` unformatted.
const LITERAL_DATA_PATH_UNTIL: KubeVersion = KubeVersion::new(1, 21);

/// The keys' format is data (`keys-format` before this rule).
fn secret_data(holder: &Value, at: &FieldPath, errors: &mut Errors) {
    let size: usize = map_of(holder, "data")
        .map(|(_, v)| v.as_str().map_or(0, decoded_len))
        .sum();
    if size > MAX_DATA_SIZE {
        errors.too_long(&at.child("data"), MAX_DATA_SIZE);
    }
    let data = holder.get("data").and_then(Value::as_object);
    let has = |key: &str| {
        data.and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .is_some_and(|v| !v.is_empty())
    };
    let present = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let data_path = at.child("data");
    let quirk = if errors.release() < LITERAL_DATA_PATH_UNTIL {
        at.child("data[%s]")
    } else {
        data_path.clone()
    };
    match holder.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let name = holder
                .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                let path = at
                    .child("metadata")
                    .child("annotations")
                    .key("kubernetes.io/service-account.name");
                errors.required(&path, "");
            }
        }
        "kubernetes.io/dockercfg" if !present(".dockercfg") => {
            errors.required(&data_path.key(".dockercfg"), "");
        }
        "kubernetes.io/dockerconfigjson" if !present(".dockerconfigjson") => {
            errors.required(&data_path.key(".dockerconfigjson"), "");
        }
        "kubernetes.io/basic-auth" if !present("username") && !present("password") => {
            errors.required(&quirk.key("username"), "");
            errors.required(&quirk.key("password"), "");
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            errors.required(&quirk.key("ssh-privatekey"), "");
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !present(key) {
                    errors.required(&data_path.key(key), "");
                }
            }
        }
        _ => {}
    }
}

fn immutable_data(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let flagged = |object: &Value| object.get("immutable") == Some(&Value::Bool(true));
    if !flagged(old) {
        return;
    }
    if !flagged(new) {
        errors.forbidden(&at.child("immutable"), IMMUTABLE_WHEN_SET);
    }
    for field in ["data", "binaryData"] {
        if new.get(field) != old.get(field) {
            errors.forbidden(&at.child(field), IMMUTABLE_WHEN_SET);
        }
    }
}

fn selector(workload: Workload, spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let path = at.child("selector");
    let raw = spec.get("selector").filter(|s| !s.is_null());
    let parsed = match raw {
        None => {
            if workload != Workload::DaemonSet {
                errors.required(&path, "");
            }
            None
        }
        Some(raw) => match serde_json::from_value::<LabelSelector>(raw.clone()) {
            Ok(selector) => Some(selector),
            Err(_) => {
                errors.invalid(&path, Shown::LabelSelector(raw), "invalid label selector");
                return;
            }
        },
    };
    if let (Some(raw), Some(selector)) = (raw, &parsed)
        && selector.is_empty()
    {
        let noun = match workload {
            Workload::Deployment | Workload::ReplicaSet => "deployment",
            Workload::DaemonSet => "daemonset",
            Workload::StatefulSet => "statefulset",
            // An empty selector selects everything: the template's labels match.
            Workload::Job => return,
        };
        let message = format!("empty selector is invalid for {noun}");
        errors.invalid(&path, Shown::LabelSelector(raw), &message);
        // An empty selector selects everything: the template's labels match.
        return;
    }
    let labels_value = at_path(spec, ".template.metadata.labels");
    let labels: BTreeMap<String, String> = labels_value
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    // A missing selector selects nothing (`labels.Nothing()`), so it matches no template.
    let matches = match &parsed {
        None => false,
        Some(selector) => match selector.matches(&labels) {
            Ok(matches) => matches,
            Err(_) => {
                let raw = raw.unwrap_or(&Value::Null);
                errors.invalid(&path, Shown::LabelSelector(raw), "invalid label selector");
                return;
            }
        },
    };
    if !matches {
        errors.invalid(
            &at.join(".template.metadata.labels"),
            Shown::StringMap(labels_value.unwrap_or(&Value::Null)),
            "`selector` does not match template `labels`",
        );
    }
}

fn progress_deadline(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(deadline) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) else {
        return;
    };
    let min_ready = spec
        .get("minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if deadline <= min_ready {
        errors.invalid(
            &at.child("progressDeadlineSeconds"),
            Shown::Plain(&Value::from(deadline)),
            "must be greater than minReadySeconds",
        );
    }
}

/// The StatefulSet spec fields an update may change, and upstream's message, by the first
/// release read with them (kapi serves 1.20, 1.28, 1.34 and 1.36).
fn stateful_set_mutable(release: KubeVersion) -> (&'static [&'static str], &'static str) {
    if release < KubeVersion::new(1, 27) {
        (
            &["replicas", "template", "updateStrategy"],
            "updates to statefulset spec for fields other than 'replicas', 'template', and 'updateStrategy' are forbidden",
        )
    } else if release < KubeVersion::new(1, 33) {
        (
            &[
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ],
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )
    } else {
        (
            &[
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "revisionHistoryLimit",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ],
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        )
    }
}

fn stateful_set_update(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let (mutable, message) = stateful_set_mutable(errors.release());
    let without = |spec: &Value| -> Value {
        let mut spec = spec.clone();
        if let Value::Object(map) = &mut spec {
            for field in mutable {
                map.remove(*field);
            }
        }
        spec
    };
    if without(new) != without(old) {
        errors.forbidden(at, message);
    }
}

/// The release from which a suspended Job that never started may change its pod template's
/// scheduling directives (`JobMutableNodeSchedulingDirectives`, on by default from 1.27).
const MUTABLE_SCHEDULING_SINCE: KubeVersion = KubeVersion::new(1, 27);

/// On a Job (the whole object, whose status says whether it started).
fn job_template(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let template = |job: &Value| {
        at_path(job, ".spec.template")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (new_template, mut old_template) = (template(new), template(old));
    let suspended = at_path(old, ".spec.suspend") == Some(&Value::Bool(true));
    let started = at_path(old, ".status.startTime").is_some_and(|t| !t.is_null());
    if suspended && !started && errors.release() >= MUTABLE_SCHEDULING_SINCE {
        for (parent, field) in [
            ("spec", "nodeSelector"),
            ("spec", "tolerations"),
            ("spec", "schedulingGates"),
            ("metadata", "labels"),
            ("metadata", "annotations"),
        ] {
            let from_new = new_template.get(parent).and_then(|p| p.get(field)).cloned();
            if let Some(Value::Object(holder)) = old_template.get_mut(parent) {
                match from_new {
                    Some(value) => holder.insert(field.to_owned(), value),
                    None => holder.remove(field),
                };
            }
        }
    }
    if new_template != old_template {
        let path = at.child("spec").child("template");
        errors.invalid(&path, Shown::Plain(&new_template), IMMUTABLE);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(named: Named, new: &Value, old: Option<&Value>, minor: u16) -> Vec<String> {
        messages_at(named, new, old, minor, &FieldPath::root())
    }

    fn messages_at(
        named: Named,
        new: &Value,
        old: Option<&Value>,
        minor: u16,
        at: &FieldPath,
    ) -> Vec<String> {
        let mut errors = Errors::new(KubeVersion::new(1, minor));
        named.check(new, old, at, &mut errors);
        errors
            .into_causes()
            .into_iter()
            .map(|c| format!("{}: {}", c.field.unwrap(), c.message.unwrap()))
            .collect()
    }

    #[test]
    fn config_maps_refuse_bad_keys_overlaps_and_more_than_a_mebibyte() {
        // ValidateConfigMap (pkg/apis/core/validation).
        // The keys' format is a `keys-format` check of the data file.
        let cm = json!({"data": {"a b": "x", "k": "v"}, "binaryData": {"k": "AA=="}});
        assert_eq!(
            messages(Named::ConfigMapData, &cm, None, 34),
            ["data[k]: Invalid value: \"k\": duplicate of key present in binaryData"]
        );
        let big = json!({"data": {"a": "x".repeat(MAX_DATA_SIZE), "b": "y"}});
        assert_eq!(
            messages(Named::ConfigMapData, &big, None, 28),
            ["[]: Too long: must have at most 1048576 bytes"]
        );
        assert_eq!(
            messages(Named::ConfigMapData, &big, None, 34),
            ["[]: Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn secrets_need_the_keys_their_type_names() {
        // ValidateSecret; before 1.21 the basic-auth and ssh-auth paths kept a literal `[%s]`.
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "AA=="}});
        assert_eq!(
            messages(Named::SecretData, &tls, None, 34),
            ["data[tls.key]: Required value"]
        );
        let basic = json!({"type": "kubernetes.io/basic-auth", "data": {}});
        assert_eq!(
            messages(Named::SecretData, &basic, None, 20),
            [
                "data[%s][username]: Required value",
                "data[%s][password]: Required value"
            ]
        );
        assert_eq!(
            messages(Named::SecretData, &basic, None, 28),
            [
                "data[username]: Required value",
                "data[password]: Required value"
            ]
        );
        assert_eq!(decoded_len("AA=="), 1);
        assert_eq!(decoded_len("AAAA"), 3);
        assert_eq!(decoded_len("AAA="), 2);
    }

    #[test]
    fn selectors_must_exist_and_match_the_template() {
        // ValidateDeploymentSpec: a missing selector is required and matches nothing.
        let none = json!({"template": {"metadata": {"labels": {"app": "web"}}}});
        assert_eq!(
            messages(Named::Selector(Workload::Deployment), &none, None, 28),
            [
                "selector: Required value",
                "template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            ]
        );
        let empty = json!({"selector": {}, "template": {}});
        assert_eq!(
            messages(Named::Selector(Workload::DaemonSet), &empty, None, 34),
            ["selector: Invalid value: {}: empty selector is invalid for daemonset"]
        );
        let ok = json!({"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}});
        assert!(messages(Named::Selector(Workload::StatefulSet), &ok, None, 34).is_empty());
    }

    #[test]
    fn immutable_config_maps_keep_their_data() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": false, "data": {"a": "2"}});
        assert_eq!(
            messages(Named::ImmutableData, &new, Some(&old), 34),
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        assert!(messages(Named::ImmutableData, &new, Some(&new), 34).is_empty());
    }

    #[test]
    fn stateful_sets_change_only_some_fields() {
        let old = json!({"replicas": 1, "serviceName": "a", "revisionHistoryLimit": 10});
        let renamed = json!({"replicas": 2, "serviceName": "b", "revisionHistoryLimit": 10});
        let spec = FieldPath::of("spec");
        assert_eq!(
            messages_at(Named::StatefulSetUpdate, &renamed, Some(&old), 20, &spec),
            [
                "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'template', and 'updateStrategy' are forbidden"
            ]
        );
        let history = json!({"replicas": 1, "serviceName": "a", "revisionHistoryLimit": 3});
        assert_eq!(
            messages(Named::StatefulSetUpdate, &history, Some(&old), 28).len(),
            1
        );
        assert!(messages(Named::StatefulSetUpdate, &history, Some(&old), 34).is_empty());
    }

    #[test]
    fn job_templates_are_immutable_but_a_suspended_job_may_move() {
        // validatePodTemplateUpdate; JobMutableNodeSchedulingDirectives since 1.27.
        let job = |suspend: bool, selector: &str| json!({"spec": {"suspend": suspend, "template": {"spec": {"nodeSelector": {"zone": selector}}}}});
        let moved = messages(
            Named::JobTemplate,
            &job(true, "b"),
            Some(&job(true, "a")),
            28,
        );
        assert!(moved.is_empty(), "{moved:?}");
        let running = messages(
            Named::JobTemplate,
            &job(false, "b"),
            Some(&job(false, "a")),
            28,
        );
        assert_eq!(
            running,
            [
                "spec.template: Invalid value: {\"spec\":{\"nodeSelector\":{\"zone\":\"b\"}}}: field is immutable"
            ]
        );
        assert_eq!(
            messages(
                Named::JobTemplate,
                &job(true, "b"),
                Some(&job(true, "a")),
                20
            )
            .len(),
            1
        );
    }
}
