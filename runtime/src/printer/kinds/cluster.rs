//! The cells of the cluster's own kinds, from `pkg/printers/internalversion/printers.go` unless
//! said otherwise: a Secret's DATA (`printSecret`), a ResourceQuota's REQUEST and LIMIT
//! (`printResourceQuota`), a ComponentStatus (`printComponentStatus`), a
//! CertificateSigningRequest's CONDITION (`extractCSRStatus`), a PodCertificateRequest's STATE
//! (`printPodCertificateRequest`), flow control's MISSINGPL and shares (`printFlowSchema`,
//! `printPriorityLevelConfiguration`), StorageVersions (`formatStorageVersions`), a
//! StorageVersionMigration's RESOURCE, a ResourceClaim's STATE (`resourceClaimState`) and an
//! APIService's SERVICE and AVAILABLE (kube-aggregator's `apiservice/etcd` convertor).

use serde_json::Value;

use crate::printer::format::{self, array_at, at, condition, str_at};

/// Secret DATA: how many keys it holds. The stored object has `stringData` merged into
/// `data`, so keys written there count too, once.
pub(crate) fn secret_data(secret: &Value) -> Value {
    let mut keys: Vec<&String> = [".data", ".stringData"]
        .iter()
        .filter_map(|path| format::map_at(secret, path))
        .flat_map(|map| map.keys())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    Value::from(keys.len())
}

/// `resource: used/hard` of the quota's resources in `status.hard`, sorted, the `limits.*`
/// ones (`limits == true`) or the others.
fn quota(resource_quota: &Value, limits: bool) -> Value {
    let Some(hard) = format::map_at(resource_quota, ".status.hard") else {
        return Value::from("");
    };
    let used = format::map_at(resource_quota, ".status.used");
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let parts: Vec<String> = names
        .into_iter()
        .filter(|name| {
            let mut pieces = name.split('.');
            let is_limit = pieces.next() == Some("limits") && pieces.next().is_some();
            is_limit == limits
        })
        .map(|name| {
            format!(
                "{name}: {}/{}",
                format::quantity(used.and_then(|u| u.get(name.as_str()))),
                format::quantity(hard.get(name.as_str()))
            )
        })
        .collect();
    Value::from(parts.join(", "))
}

/// ResourceQuota REQUEST: every resource but the `limits.*` ones.
pub(crate) fn quota_requests(resource_quota: &Value) -> Value {
    quota(resource_quota, false)
}

/// ResourceQuota LIMIT: the `limits.*` resources.
pub(crate) fn quota_limits(resource_quota: &Value) -> Value {
    quota(resource_quota, true)
}

fn healthy(status: &Value) -> Option<&Value> {
    condition(array_at(status, ".conditions"), "Healthy")
}

/// ComponentStatus STATUS: `Healthy` or `Unhealthy` from the Healthy condition, `Unknown`
/// without.
pub(crate) fn component_status(status: &Value) -> Value {
    Value::from(match healthy(status) {
        Some(c) if str_at(c, ".status") == "True" => "Healthy",
        Some(_) => "Unhealthy",
        None => "Unknown",
    })
}

/// ComponentStatus MESSAGE: the Healthy condition's message.
pub(crate) fn component_message(status: &Value) -> Value {
    Value::from(healthy(status).map_or("", |c| str_at(c, ".message")))
}

/// ComponentStatus ERROR: the Healthy condition's error.
pub(crate) fn component_error(status: &Value) -> Value {
    Value::from(healthy(status).map_or("", |c| str_at(c, ".error")))
}

/// CertificateSigningRequest CONDITION: `Denied`, `Approved` or `Pending` (whatever the
/// conditions' status), then `,Failed` and `,Issued` (a certificate is there).
pub(crate) fn certificate_request_condition(request: &Value) -> Value {
    let conditions = array_at(request, ".status.conditions");
    let has = |type_: &str| conditions.iter().any(|c| str_at(c, ".type") == type_);
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(request, ".status.certificate").is_empty() {
        status.push_str(",Issued");
    }
    Value::from(status)
}

/// PodCertificateRequest STATE: the last Issued, Denied or Failed condition's type, else
/// `Pending`.
pub(crate) fn pod_certificate_request_state(request: &Value) -> Value {
    let state = array_at(request, ".status.conditions")
        .iter()
        .map(|c| str_at(c, ".type"))
        .rfind(|t| matches!(*t, "Issued" | "Denied" | "Failed"))
        .unwrap_or("Pending");
    Value::from(state)
}

/// FlowSchema MISSINGPL: the status of the first Dangling condition, `?` without.
pub(crate) fn flow_schema_missing_priority_level(schema: &Value) -> Value {
    Value::from(
        condition(array_at(schema, ".status.conditions"), "Dangling")
            .map_or("?", |c| str_at(c, ".status")),
    )
}

/// PriorityLevelConfiguration's shares (NOMINALCONCURRENCYSHARES, before 1.26
/// ASSUREDCONCURRENCYSHARES): the limited level's shares, which the older versions call
/// `assuredConcurrencyShares`; `<none>` for an exempt level.
pub(crate) fn priority_level_shares(level: &Value) -> Value {
    let Some(limited) = at(level, ".spec.limited").filter(|l| !l.is_null()) else {
        return Value::from(format::NONE);
    };
    let shares = ["nominalConcurrencyShares", "assuredConcurrencyShares"]
        .iter()
        .find_map(|field| limited.get(*field).and_then(Value::as_i64))
        .unwrap_or(0);
    Value::from(shares)
}

/// StorageVersion STORAGEVERSIONS: `apiServerID=encodingVersion` of the first three, then
/// ` + N more...`; `<unset>` without any.
pub(crate) fn storage_versions(version: &Value) -> Value {
    let all = array_at(version, ".status.storageVersions");
    let list: Vec<String> = all
        .iter()
        .take(3)
        .map(|v| {
            format!(
                "{}={}",
                str_at(v, ".apiServerID"),
                str_at(v, ".encodingVersion")
            )
        })
        .collect();
    Value::from(format::list_with_more(&list, all.len(), 3))
}

/// StorageVersionMigration RESOURCE: `resource.version.group`.
pub(crate) fn storage_version_migration_resource(migration: &Value) -> Value {
    Value::from(format!(
        "{}.{}.{}",
        str_at(migration, ".spec.resource.resource"),
        str_at(migration, ".spec.resource.version"),
        str_at(migration, ".spec.resource.group")
    ))
}

fn claim_state(claim: &Value, deallocating: bool) -> Value {
    let deleted = at(claim, ".metadata.deletionTimestamp").is_some_and(|t| !t.is_null());
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if at(claim, ".status.allocation").is_none_or(Value::is_null) {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !array_at(claim, ".status.reservedFor").is_empty() {
            states.push("reserved");
        } else if deallocating
            && (deleted
                || at(claim, ".status.deallocationRequested").and_then(Value::as_bool)
                    == Some(true))
        {
            states.push("deallocating");
        }
    }
    Value::from(states.join(","))
}

/// ResourceClaim STATE since 1.32: `deleted`, then `pending`, or `allocated` and `reserved`.
pub(crate) fn resource_claim_state(claim: &Value) -> Value {
    claim_state(claim, false)
}

/// ResourceClaim STATE before 1.32: an allocated claim not reserved is also `deallocating` once
/// deleted or asked to.
pub(crate) fn resource_claim_state_with_deallocating(claim: &Value) -> Value {
    claim_state(claim, true)
}

/// APIService SERVICE: `namespace/name` of the service, `Local` without one.
pub(crate) fn api_service_service(service: &Value) -> Value {
    match at(service, ".spec.service").filter(|s| !s.is_null()) {
        Some(s) => Value::from(format::namespaced_name(s)),
        None => Value::from("Local"),
    }
}

/// APIService AVAILABLE: the Available condition's status, with its reason in parentheses
/// when it is not True; `Unknown` without the condition.
pub(crate) fn api_service_available(service: &Value) -> Value {
    let Some(c) = condition(array_at(service, ".status.conditions"), "Available") else {
        return Value::from("Unknown");
    };
    let (status, reason) = (str_at(c, ".status"), str_at(c, ".reason"));
    Value::from(if status == "True" || reason.is_empty() {
        status.to_owned()
    } else {
        format!("{status} ({reason})")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secrets_and_quotas() {
        let secret = json!({"data": {"a": "", "b": ""}, "stringData": {"b": "x", "c": "y"}});
        assert_eq!(secret_data(&secret), json!(3));
        let quota = json!({"status": {
            "hard": {"pods": "10", "requests.cpu": "1", "limits.memory": "2Gi", "limits": "5", "cpu": "2000m"},
            "used": {"pods": "1", "requests.cpu": "100m"}}});
        assert_eq!(
            quota_requests(&quota),
            json!("cpu: 0/2, limits: 0/5, pods: 1/10, requests.cpu: 100m/1")
        );
        assert_eq!(quota_limits(&quota), json!("limits.memory: 0/2Gi"));
        assert_eq!(quota_limits(&json!({})), json!(""));
    }

    #[test]
    fn conditions_of_certificates_components_and_services() {
        let csr = json!({"status": {"conditions": [{"type": "Approved", "status": "True"},
            {"type": "Failed", "status": "True"}], "certificate": "Y2VydA=="}});
        assert_eq!(
            certificate_request_condition(&csr),
            json!("Approved,Failed,Issued")
        );
        let denied = json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Denied", "status": "False"}]}});
        assert_eq!(certificate_request_condition(&denied), json!("Denied"));
        assert_eq!(certificate_request_condition(&json!({})), json!("Pending"));
        let pcr = json!({"status": {"conditions": [{"type": "Denied"}, {"type": "Other"}, {"type": "Failed"}]}});
        assert_eq!(pod_certificate_request_state(&pcr), json!("Failed"));
        let cs = json!({"conditions": [{"type": "Healthy", "status": "False", "message": "m", "error": "e"}]});
        assert_eq!(component_status(&cs), json!("Unhealthy"));
        assert_eq!(component_error(&cs), json!("e"));
        assert_eq!(component_status(&json!({})), json!("Unknown"));
        let svc = json!({"spec": {"service": {"namespace": "ns", "name": "api"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        assert_eq!(api_service_service(&svc), json!("ns/api"));
        assert_eq!(
            api_service_available(&svc),
            json!("False (MissingEndpoints)")
        );
        assert_eq!(api_service_service(&json!({})), json!("Local"));
        assert_eq!(api_service_available(&json!({})), json!("Unknown"));
    }

    #[test]
    fn flow_control_and_storage_versions() {
        let exempt = json!({"spec": {"type": "Exempt"}});
        assert_eq!(priority_level_shares(&exempt), json!("<none>"));
        let beta = json!({"spec": {"limited": {"assuredConcurrencyShares": 20}}});
        assert_eq!(priority_level_shares(&beta), json!(20));
        let schema = json!({"status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(flow_schema_missing_priority_level(&schema), json!("False"));
        assert_eq!(flow_schema_missing_priority_level(&json!({})), json!("?"));
        let versions = json!({"status": {"storageVersions": [
            {"apiServerID": "a", "encodingVersion": "v1"}, {"apiServerID": "b", "encodingVersion": "v1"},
            {"apiServerID": "c", "encodingVersion": "v1"}, {"apiServerID": "d", "encodingVersion": "v2"}]}});
        assert_eq!(
            storage_versions(&versions),
            json!("a=v1,b=v1,c=v1 + 1 more...")
        );
        assert_eq!(storage_versions(&json!({})), json!("<unset>"));
        let svm = json!({"spec": {"resource": {"group": "apps", "version": "v1", "resource": "deployments"}}});
        assert_eq!(
            storage_version_migration_resource(&svm),
            json!("deployments.v1.apps")
        );
    }

    #[test]
    fn resource_claim_states() {
        assert_eq!(resource_claim_state(&json!({})), json!("pending"));
        let reserved = json!({"status": {"allocation": {}, "reservedFor": [{"name": "p"}]}});
        assert_eq!(resource_claim_state(&reserved), json!("allocated,reserved"));
        let deleted = json!({"metadata": {"deletionTimestamp": "2024-05-01T09:00:00Z"}, "status": {"allocation": {}}});
        assert_eq!(resource_claim_state(&deleted), json!("deleted,allocated"));
        assert_eq!(
            resource_claim_state_with_deallocating(&deleted),
            json!("deleted,allocated,deallocating")
        );
    }
}
