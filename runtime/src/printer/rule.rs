//! The rules that compute cells, one per kind of cell upstream's printers write. The generic
//! ones read the paths a column gives them; the ones named after a kind read that kind's fields
//! themselves, as upstream's `printX` function for the kind does (`printer::kinds`).

use jiff::Timestamp;
use serde_json::Value;

use super::format::{self, at, int_at, str_at};
use super::kinds::{
    admission, autoscaling, cluster, events, networking, node, pod, rbac, service, storage,
    workloads,
};

/// A named way to compute a cell. Columns name a rule in snake case (`ratio`), the derive
/// attribute `printer_column(cell = "ratio(.status.readyReplicas, .spec.replicas)")` and the
/// printer data alike. A rule whose upstream computation changed between releases is split in
/// two, each named for what it does, and the data shows each in its releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// The object's name: the Name column (format `name`). Tables start with one; a kind whose
    /// columns name it puts it where it stands instead (an Event's is last).
    Name,
    /// The string at the path, `""` when missing.
    Text,
    /// The string at the path, `<none>` when missing or empty.
    TextOrNone,
    /// The string at the path, `<unset>` when missing (a nil pointer); `""` stays `""`.
    TextOrUnset,
    /// The string at the path, `<unknown>` when missing or empty (a Node's OS-IMAGE).
    TextOrUnknown,
    /// The string at the second path, `<none>` when the first (its parent) is missing (a
    /// FlowSchema's DISTINGUISHERMETHOD).
    TextOrNoneIfAbsent,
    /// The string at the path without surrounding white space (`strings.TrimSpace`).
    Trimmed,
    /// The integer at the path, 0 when missing (a number cell).
    Int,
    /// The integer at the path as text, `0` when missing (`fmt.Sprint` of an int).
    IntText,
    /// The integer at the path as text, `<unset>` when missing (an HPA's MINPODS).
    IntOrUnset,
    /// The integer at the second path (0 when missing), `<none>` when the first (its parent)
    /// is missing (a PriorityLevelConfiguration's QUEUES).
    IntOrNoneIfAbsent,
    /// The `IntOrString` at the path as text, `N/A` when missing (a PDB's MIN AVAILABLE).
    IntOrStringOrNa,
    /// The boolean at the path, false when missing (a boolean cell).
    Bool,
    /// The boolean at the path, true when missing (a CSIDriver's ATTACHREQUIRED).
    BoolOrTrue,
    /// The boolean at the path as text, `true` or `false` (`fmt.Sprintf("%v")`).
    BoolText,
    /// The optional boolean at the path: `True`, `False` or `<unset>` (`printBoolPtr`).
    BoolPtr,
    /// The quantity at the path in canonical form (`Quantity.String()`), `0` when missing.
    Quantity,
    /// The quantity at the path in canonical form, `<unset>` when missing.
    QuantityOrUnset,
    /// The age of the timestamp at the path (`translateTimestampSince`): `5m`, `<unknown>`.
    Age,
    /// The age of the timestamp at the path, `<none>` when missing (a CronJob's LAST SCHEDULE).
    AgeOrNone,
    /// The age of the timestamp at the path, `""` when missing (a DeviceTaintRule's TIMEADDED).
    AgeOrEmpty,
    /// The duration of the seconds at the path (`HumanDuration`), `<none>` when missing (a
    /// CSR's REQUESTEDDURATION).
    SecondsOrNone,
    /// `a/b` of the integers at the two paths (READY `1/3`).
    Ratio,
    /// How many entries the maps or lists at the paths hold together (a ConfigMap's DATA
    /// counts `data` and `binaryData`).
    Count,
    /// The `name` of each item of the list at the path, joined by `,` (CONTAINERS).
    Names,
    /// The `image` of each item of the list at the path, joined by `,` (IMAGES).
    Images,
    /// The `LabelSelector` at the path (`FormatLabelSelector`), `<none>` when empty.
    LabelSelector,
    /// The `LabelSelector` at the path as `LabelSelectorAsSelector(..).String()`: `""` when
    /// empty, `<invalid>` when it is not a selector (a Deployment's SELECTOR).
    Selector,
    /// The label map at the path (`FormatLabels`: a map selector, node selector, labels),
    /// `<none>` when empty.
    Labels,
    /// The strings of the list at the path joined by `,`, `<none>` when empty.
    Join,
    /// The strings of the list at the path joined by `,`, `""` when empty.
    JoinOrEmpty,
    /// `kind/name` of the reference at the path (an HPA's REFERENCE, a binding's ROLE).
    KindSlashName,
    /// The access modes at the path as `RWO,ROX,RWX,RWOP` (`GetAccessModesAsString`).
    AccessModes,
    /// The load balancer ingress points at the path: IPs or hostnames, sorted, without repeats
    /// (an Ingress's ADDRESS).
    LoadBalancerAddresses,
    /// The phase at the path, `Terminating` once the object is deleted (a volume's STATUS).
    PhaseOrTerminating,
    /// The class of a volume or claim: the beta annotation, else the name at the path.
    StorageClassOf,
    /// Pod READY since 1.28 (`pod::ready`).
    PodReady,
    /// Pod READY before 1.28 (`pod::ready_before_sidecars`).
    PodReadyBeforeSidecars,
    /// Pod STATUS since 1.31 (`pod::status`).
    PodStatus,
    /// Pod STATUS of 1.28 to 1.30 (`pod::status_before_terminal_phases`).
    PodStatusBeforeTerminalPhases,
    /// Pod STATUS before 1.28 (`pod::status_before_sidecars`).
    PodStatusBeforeSidecars,
    /// Pod RESTARTS since 1.22 (`pod::restarts`).
    PodRestarts,
    /// Pod RESTARTS before 1.22, a number (`pod::restart_count`).
    PodRestartCount,
    /// Pod READINESS GATES (`pod::readiness_gates`).
    PodReadinessGates,
    /// Job STATUS since 1.34 (`workloads::job_status`).
    JobStatus,
    /// Job STATUS of 1.30 to 1.33 (`workloads::job_status_before_success_criteria`).
    JobStatusBeforeSuccessCriteria,
    /// Job COMPLETIONS (`workloads::job_completions`).
    JobCompletions,
    /// Job DURATION (`workloads::job_duration`).
    JobDuration,
    /// ControllerRevision CONTROLLER (`workloads::controller_of`).
    ControllerOf,
    /// HorizontalPodAutoscaler TARGETS since 1.30 (`autoscaling::targets`).
    AutoscalerTargets,
    /// HorizontalPodAutoscaler TARGETS before 1.30 (`autoscaling::targets_unnamed`).
    AutoscalerTargetsUnnamed,
    /// Service EXTERNAL-IP (`service::service_external_ip`).
    ServiceExternalIp,
    /// Service PORT(S) (`service::service_ports`).
    ServicePorts,
    /// Endpoints ENDPOINTS (`service::endpoints_addresses`).
    EndpointsAddresses,
    /// EndpointSlice PORTS (`service::endpoint_slice_ports`).
    EndpointSlicePorts,
    /// EndpointSlice ENDPOINTS (`service::endpoint_slice_endpoints`).
    EndpointSliceEndpoints,
    /// Ingress HOSTS (`networking::ingress_hosts`).
    IngressHosts,
    /// Ingress PORTS (`networking::ingress_ports`).
    IngressPorts,
    /// IngressClass PARAMETERS (`networking::ingress_class_parameters`).
    IngressClassParameters,
    /// IPAddress PARENTREF (`networking::ip_address_parent`).
    IpAddressParent,
    /// ClusterCIDR NODESELECTOR (`networking::cluster_cidr_node_selector`).
    ClusterCidrNodeSelector,
    /// Node STATUS (`node::node_status`).
    NodeStatus,
    /// Node ROLES (`node::node_roles`).
    NodeRoles,
    /// Node INTERNAL-IP (`node::node_internal_ip`).
    NodeInternalIp,
    /// Node EXTERNAL-IP (`node::node_external_ip`).
    NodeExternalIp,
    /// PersistentVolume CLAIM (`storage::persistent_volume_claim`).
    PersistentVolumeClaim,
    /// PersistentVolumeClaim CAPACITY (`storage::claim_capacity`).
    ClaimCapacity,
    /// PersistentVolumeClaim ACCESS MODES (`storage::claim_access_modes`).
    ClaimAccessModes,
    /// StorageClass NAME, which names the row (`storage::storage_class_name`).
    StorageClassName,
    /// StorageClass RECLAIMPOLICY (`storage::storage_class_reclaim_policy`).
    StorageClassReclaimPolicy,
    /// StorageClass VOLUMEBINDINGMODE (`storage::storage_class_binding_mode`).
    StorageClassBindingMode,
    /// CSIDriver TOKENREQUESTS (`storage::csi_driver_token_requests`).
    CsiDriverTokenRequests,
    /// RoleBinding and ClusterRoleBinding USERS (`rbac::binding_users`).
    BindingUsers,
    /// RoleBinding and ClusterRoleBinding GROUPS (`rbac::binding_groups`).
    BindingGroups,
    /// RoleBinding and ClusterRoleBinding SERVICEACCOUNTS (`rbac::binding_service_accounts`).
    BindingServiceAccounts,
    /// Event LAST SEEN, reading `lastTimestamp, firstTimestamp, eventTime, series`
    /// (`events::last_seen`).
    EventLastSeen,
    /// Event FIRST SEEN, reading `firstTimestamp, eventTime` (`events::first_seen`).
    EventFirstSeen,
    /// Event OBJECT, reading the involved object (`events::object`).
    EventObject,
    /// Event SOURCE, reading `source, reportingController, reportingInstance`
    /// (`events::source`).
    EventSource,
    /// Event COUNT since 1.23, reading `count, series` (`events::count`).
    EventCount,
    /// Event COUNT before 1.23 (`events::count_series_plus_one`).
    EventCountSeriesPlusOne,
    /// Secret DATA (`cluster::secret_data`).
    SecretData,
    /// ResourceQuota REQUEST (`cluster::quota_requests`).
    QuotaRequests,
    /// ResourceQuota LIMIT (`cluster::quota_limits`).
    QuotaLimits,
    /// ComponentStatus STATUS (`cluster::component_status`).
    ComponentStatus,
    /// ComponentStatus MESSAGE (`cluster::component_message`).
    ComponentMessage,
    /// ComponentStatus ERROR (`cluster::component_error`).
    ComponentError,
    /// CertificateSigningRequest CONDITION (`cluster::certificate_request_condition`).
    CertificateRequestCondition,
    /// PodCertificateRequest STATE (`cluster::pod_certificate_request_state`).
    PodCertificateRequestState,
    /// FlowSchema MISSINGPL (`cluster::flow_schema_missing_priority_level`).
    FlowSchemaMissingPriorityLevel,
    /// PriorityLevelConfiguration shares (`cluster::priority_level_shares`).
    PriorityLevelShares,
    /// StorageVersion STORAGEVERSIONS (`cluster::storage_versions`).
    StorageVersions,
    /// StorageVersionMigration RESOURCE (`cluster::storage_version_migration_resource`).
    StorageVersionMigrationResource,
    /// ResourceClaim STATE since 1.32 (`cluster::resource_claim_state`).
    ResourceClaimState,
    /// ResourceClaim STATE before 1.32 (`cluster::resource_claim_state_with_deallocating`).
    ResourceClaimStateWithDeallocating,
    /// APIService SERVICE (`cluster::api_service_service`).
    ApiServiceService,
    /// APIService AVAILABLE (`cluster::api_service_available`).
    ApiServiceAvailable,
    /// An admission policy's PARAMKIND, reading it at the path (`admission::param_kind`).
    ParamKind,
    /// An admission policy binding's PARAMREF, reading it at the path
    /// (`admission::param_ref`).
    ParamRef,
}

impl Rule {
    /// Whether the rule reads `paths` paths: a column written with another count is refused
    /// where it is declared (by the derive, and by the generator for the printer data).
    pub const fn takes(self, paths: usize) -> bool {
        match self {
            Self::Ratio
            | Self::TextOrNoneIfAbsent
            | Self::IntOrNoneIfAbsent
            | Self::EventFirstSeen
            | Self::EventCount
            | Self::EventCountSeriesPlusOne => paths == 2,
            Self::EventSource => paths == 3,
            Self::EventLastSeen => paths == 4,
            Self::Count => paths >= 1,
            Self::Text
            | Self::TextOrNone
            | Self::TextOrUnset
            | Self::TextOrUnknown
            | Self::Trimmed
            | Self::Int
            | Self::IntText
            | Self::IntOrUnset
            | Self::IntOrStringOrNa
            | Self::Bool
            | Self::BoolOrTrue
            | Self::BoolText
            | Self::BoolPtr
            | Self::Quantity
            | Self::QuantityOrUnset
            | Self::Age
            | Self::AgeOrNone
            | Self::AgeOrEmpty
            | Self::SecondsOrNone
            | Self::Names
            | Self::Images
            | Self::LabelSelector
            | Self::Selector
            | Self::Labels
            | Self::Join
            | Self::JoinOrEmpty
            | Self::KindSlashName
            | Self::AccessModes
            | Self::LoadBalancerAddresses
            | Self::PhaseOrTerminating
            | Self::StorageClassOf
            | Self::EventObject
            | Self::ParamKind
            | Self::ParamRef => paths == 1,
            _ => paths == 0,
        }
    }

    /// Whether the rule's cell is the row's name: such a column stands for the Name column
    /// a table otherwise starts with (an Event's last one, a StorageClass's `(default)`).
    pub const fn names_row(self) -> bool {
        matches!(self, Self::Name | Self::StorageClassName)
    }

    /// The cell of `object` at time `now`, reading `paths` (as many as [`Rule::takes`]).
    pub fn apply(self, object: &Value, paths: &[&str], now: Timestamp) -> Value {
        let path = |i: usize| paths.get(i).copied().unwrap_or_default();
        let value = || at(object, path(0)).filter(|v| !v.is_null());
        let present = |i: usize| at(object, path(i)).is_some_and(|v| !v.is_null());
        let age = |v: &Value| format::age(Some(v), now);
        match self {
            Self::Name => Value::from(str_at(object, ".metadata.name")),
            Self::Text => Value::from(str_at(object, path(0))),
            Self::TextOrNone => Value::from(format::or_none(str_at(object, path(0)))),
            Self::TextOrUnset => {
                Value::from(value().map_or(format::UNSET, |v| v.as_str().unwrap_or("")))
            }
            Self::TextOrUnknown => Value::from(match str_at(object, path(0)) {
                "" => format::UNKNOWN,
                text => text,
            }),
            Self::TextOrNoneIfAbsent if !present(0) => Value::from(format::NONE),
            Self::TextOrNoneIfAbsent => Value::from(str_at(object, path(1))),
            Self::Trimmed => Value::from(str_at(object, path(0)).trim()),
            Self::Int => Value::from(int_at(object, path(0))),
            Self::IntText => Value::from(int_at(object, path(0)).to_string()),
            Self::IntOrUnset => Value::from(
                value()
                    .and_then(Value::as_i64)
                    .map_or_else(|| format::UNSET.to_owned(), |n| n.to_string()),
            ),
            Self::IntOrNoneIfAbsent if !present(0) => Value::from(format::NONE),
            Self::IntOrNoneIfAbsent => Value::from(int_at(object, path(1))),
            Self::IntOrStringOrNa => {
                Value::from(value().map_or_else(|| "N/A".to_owned(), format::int_or_string))
            }
            Self::Bool => Value::from(value().and_then(Value::as_bool).unwrap_or(false)),
            Self::BoolOrTrue => Value::from(value().and_then(Value::as_bool).unwrap_or(true)),
            Self::BoolText => Value::from(
                value()
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string(),
            ),
            Self::BoolPtr => Value::from(format::bool_ptr(at(object, path(0)))),
            Self::Quantity => Value::from(format::quantity(value())),
            Self::QuantityOrUnset => Value::from(
                value().map_or_else(|| format::UNSET.to_owned(), |v| format::quantity(Some(v))),
            ),
            Self::Age => Value::from(format::age(at(object, path(0)), now)),
            Self::AgeOrNone => Value::from(value().map_or_else(|| format::NONE.to_owned(), age)),
            Self::AgeOrEmpty => Value::from(value().map_or_else(String::new, age)),
            Self::SecondsOrNone => Value::from(
                value()
                    .and_then(Value::as_i64)
                    .map_or_else(|| format::NONE.to_owned(), format::human_duration),
            ),
            Self::Ratio => Value::from(format!(
                "{}/{}",
                int_at(object, path(0)),
                int_at(object, path(1))
            )),
            Self::Count => Value::from(
                paths
                    .iter()
                    .map(|p| format::len_at(object, p))
                    .sum::<usize>(),
            ),
            Self::Names => Value::from(format::join_field(
                format::array_at(object, path(0)),
                "name",
            )),
            Self::Images => Value::from(format::join_field(
                format::array_at(object, path(0)),
                "image",
            )),
            Self::LabelSelector => Value::from(format::label_selector(at(object, path(0)))),
            Self::Selector => Value::from(
                format::selector_text(at(object, path(0)))
                    .unwrap_or_else(|| "<invalid>".to_owned()),
            ),
            Self::Labels => Value::from(format::labels(format::map_at(object, path(0)))),
            Self::Join => Value::from(format::or_none(join(object, path(0)))),
            Self::JoinOrEmpty => Value::from(join(object, path(0))),
            Self::KindSlashName => {
                let reference = value().unwrap_or(&Value::Null);
                Value::from(format!(
                    "{}/{}",
                    str_at(reference, ".kind"),
                    str_at(reference, ".name")
                ))
            }
            Self::AccessModes => {
                Value::from(storage::access_modes(format::array_at(object, path(0))))
            }
            Self::LoadBalancerAddresses => Value::from(service::load_balancer_addresses(
                format::array_at(object, path(0)),
            )),
            Self::PhaseOrTerminating => storage::phase_or_terminating(object, path(0)),
            Self::StorageClassOf => storage::storage_class_of(object, path(0)),
            Self::PodReady => pod::ready(object),
            Self::PodReadyBeforeSidecars => pod::ready_before_sidecars(object),
            Self::PodStatus => pod::status(object),
            Self::PodStatusBeforeTerminalPhases => pod::status_before_terminal_phases(object),
            Self::PodStatusBeforeSidecars => pod::status_before_sidecars(object),
            Self::PodRestarts => pod::restarts(object, now),
            Self::PodRestartCount => pod::restart_count(object),
            Self::PodReadinessGates => pod::readiness_gates(object),
            Self::JobStatus => workloads::job_status(object),
            Self::JobStatusBeforeSuccessCriteria => {
                workloads::job_status_before_success_criteria(object)
            }
            Self::JobCompletions => workloads::job_completions(object),
            Self::JobDuration => workloads::job_duration(object, now),
            Self::ControllerOf => workloads::controller_of(object),
            Self::AutoscalerTargets => autoscaling::targets(object),
            Self::AutoscalerTargetsUnnamed => autoscaling::targets_unnamed(object),
            Self::ServiceExternalIp => service::service_external_ip(object),
            Self::ServicePorts => service::service_ports(object),
            Self::EndpointsAddresses => service::endpoints_addresses(object),
            Self::EndpointSlicePorts => service::endpoint_slice_ports(object),
            Self::EndpointSliceEndpoints => service::endpoint_slice_endpoints(object),
            Self::IngressHosts => networking::ingress_hosts(object),
            Self::IngressPorts => networking::ingress_ports(object),
            Self::IngressClassParameters => networking::ingress_class_parameters(object),
            Self::IpAddressParent => networking::ip_address_parent(object),
            Self::ClusterCidrNodeSelector => networking::cluster_cidr_node_selector(object),
            Self::NodeStatus => node::node_status(object),
            Self::NodeRoles => node::node_roles(object),
            Self::NodeInternalIp => node::node_internal_ip(object),
            Self::NodeExternalIp => node::node_external_ip(object),
            Self::PersistentVolumeClaim => storage::persistent_volume_claim(object),
            Self::ClaimCapacity => storage::claim_capacity(object),
            Self::ClaimAccessModes => storage::claim_access_modes(object),
            Self::StorageClassName => storage::storage_class_name(object),
            Self::StorageClassReclaimPolicy => storage::storage_class_reclaim_policy(object),
            Self::StorageClassBindingMode => storage::storage_class_binding_mode(object),
            Self::CsiDriverTokenRequests => storage::csi_driver_token_requests(object),
            Self::BindingUsers => rbac::binding_users(object),
            Self::BindingGroups => rbac::binding_groups(object),
            Self::BindingServiceAccounts => rbac::binding_service_accounts(object),
            Self::EventLastSeen => {
                events::last_seen(object, [path(0), path(1), path(2), path(3)], now)
            }
            Self::EventFirstSeen => Value::from(events::first_seen(object, path(0), path(1), now)),
            Self::EventObject => events::object(object, path(0)),
            Self::EventSource => events::source(object, [path(0), path(1), path(2)]),
            Self::EventCount => events::count(object, path(0), path(1)),
            Self::EventCountSeriesPlusOne => {
                events::count_series_plus_one(object, path(0), path(1))
            }
            Self::SecretData => cluster::secret_data(object),
            Self::QuotaRequests => cluster::quota_requests(object),
            Self::QuotaLimits => cluster::quota_limits(object),
            Self::ComponentStatus => cluster::component_status(object),
            Self::ComponentMessage => cluster::component_message(object),
            Self::ComponentError => cluster::component_error(object),
            Self::CertificateRequestCondition => cluster::certificate_request_condition(object),
            Self::PodCertificateRequestState => cluster::pod_certificate_request_state(object),
            Self::FlowSchemaMissingPriorityLevel => {
                cluster::flow_schema_missing_priority_level(object)
            }
            Self::PriorityLevelShares => cluster::priority_level_shares(object),
            Self::StorageVersions => cluster::storage_versions(object),
            Self::StorageVersionMigrationResource => {
                cluster::storage_version_migration_resource(object)
            }
            Self::ResourceClaimState => cluster::resource_claim_state(object),
            Self::ResourceClaimStateWithDeallocating => {
                cluster::resource_claim_state_with_deallocating(object)
            }
            Self::ApiServiceService => cluster::api_service_service(object),
            Self::ApiServiceAvailable => cluster::api_service_available(object),
            Self::ParamKind => admission::param_kind(object, path(0)),
            Self::ParamRef => admission::param_ref(object, path(0)),
        }
    }
}

/// The strings of the list at `path` joined by `,`.
fn join(object: &Value, path: &str) -> String {
    format::array_at(object, path)
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cell(rule: Rule, paths: &[&'static str], object: &Value) -> Value {
        let now: Timestamp = "2024-05-01T10:00:00Z".parse().unwrap();
        rule.apply(object, paths, now)
    }

    #[test]
    fn generic_rules_read_missing_fields_as_zero_values() {
        // A Deployment just created: no status yet (printDeployment prints 0/3).
        let deployment = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [
            {"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox"}
        ]}}}});
        let ready = [".status.readyReplicas", ".spec.replicas"];
        assert_eq!(cell(Rule::Ratio, &ready, &deployment), json!("0/3"));
        let updated = [".status.updatedReplicas"];
        assert_eq!(cell(Rule::Int, &updated, &deployment), json!(0));
        let containers = [".spec.template.spec.containers"];
        assert_eq!(
            cell(Rule::Names, &containers, &deployment),
            json!("web,log")
        );
        assert_eq!(
            cell(Rule::Images, &containers, &deployment),
            json!("nginx,busybox")
        );
        assert_eq!(
            cell(Rule::TextOrNone, &[".status.podIP"], &deployment),
            json!("<none>")
        );
        assert_eq!(
            cell(Rule::BoolPtr, &[".spec.suspend"], &deployment),
            json!("<unset>")
        );
    }

    #[test]
    fn count_adds_every_path() {
        let config_map = json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        let paths = [".data", ".binaryData"];
        assert_eq!(cell(Rule::Count, &paths, &config_map), json!(3));
        assert_eq!(cell(Rule::Count, &paths, &json!({})), json!(0));
    }

    #[test]
    fn arity_is_checked_per_rule() {
        assert!(Rule::Ratio.takes(2) && !Rule::Ratio.takes(1));
        assert!(Rule::Count.takes(3) && !Rule::Count.takes(0));
        assert!(Rule::Age.takes(1) && !Rule::Age.takes(2));
        assert!(Rule::EventLastSeen.takes(4) && Rule::PodStatus.takes(0));
        assert!(Rule::StorageClassName.names_row() && !Rule::Text.names_row());
    }

    #[test]
    fn optional_values_print_as_upstream_prints_nil_pointers() {
        let object = json!({"spec": {"minReplicas": 2, "expirationSeconds": 3600, "empty": "",
            "limited": {}, "capacity": "2048Mi", "suspend": false, "budget": "50%"}});
        let queues = [".spec.limited", ".spec.limited.queues"];
        let absent = [".spec.exempt", ".spec.exempt.queues"];
        let cases: [(Rule, &[&'static str], Value); 20] = [
            (Rule::IntOrUnset, &[".spec.minReplicas"], json!("2")),
            (Rule::IntOrUnset, &[".spec.maxReplicas"], json!("<unset>")),
            (Rule::TextOrUnset, &[".spec.empty"], json!("")),
            (Rule::TextOrUnset, &[".spec.mode"], json!("<unset>")),
            (Rule::TextOrUnknown, &[".spec.empty"], json!("<unknown>")),
            (
                Rule::SecondsOrNone,
                &[".spec.expirationSeconds"],
                json!("60m"),
            ),
            (Rule::SecondsOrNone, &[".spec.none"], json!("<none>")),
            (Rule::IntOrNoneIfAbsent, &queues, json!(0)),
            (Rule::IntOrNoneIfAbsent, &absent, json!("<none>")),
            (Rule::Quantity, &[".spec.capacity"], json!("2Gi")),
            (Rule::Quantity, &[".spec.none"], json!("0")),
            (Rule::QuantityOrUnset, &[".spec.none"], json!("<unset>")),
            (Rule::IntOrStringOrNa, &[".spec.budget"], json!("50%")),
            (Rule::IntOrStringOrNa, &[".spec.minReplicas"], json!("2")),
            (Rule::IntOrStringOrNa, &[".spec.none"], json!("N/A")),
            (Rule::Bool, &[".spec.suspend"], json!(false)),
            (Rule::BoolOrTrue, &[".spec.none"], json!(true)),
            (Rule::BoolText, &[".spec.none"], json!("false")),
            (Rule::AgeOrNone, &[".spec.none"], json!("<none>")),
            (Rule::AgeOrEmpty, &[".spec.none"], json!("")),
        ];
        for (rule, paths, expected) in cases {
            assert_eq!(cell(rule, paths, &object), expected, "{rule:?} {paths:?}");
        }
    }

    #[test]
    fn selectors_as_deployments_and_the_rest_print_them() {
        let object = json!({
            "empty": {},
            "bad": {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "roleRef": {"kind": "ClusterRole", "name": "admin"},
            "cidrs": ["10.0.0.0/16", "fd00::/108"],
            "none": [],
        });
        let cases: [(Rule, &'static str, Value); 8] = [
            (Rule::Selector, ".empty", json!("")),
            (Rule::LabelSelector, ".empty", json!("<none>")),
            (Rule::Selector, ".bad", json!("<invalid>")),
            (Rule::LabelSelector, ".bad", json!("<error>")),
            (Rule::KindSlashName, ".roleRef", json!("ClusterRole/admin")),
            (Rule::JoinOrEmpty, ".cidrs", json!("10.0.0.0/16,fd00::/108")),
            (Rule::JoinOrEmpty, ".none", json!("")),
            (Rule::Join, ".none", json!("<none>")),
        ];
        for (rule, path, expected) in cases {
            assert_eq!(cell(rule, &[path], &object), expected, "{rule:?} {path}");
        }
    }
}
