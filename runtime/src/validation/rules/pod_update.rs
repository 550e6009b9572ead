//! What an update may change in a Pod (`ValidatePodUpdate` in
//! `pkg/apis/core/validation/validation.go`, read at 1.20, 1.28, 1.34 and 1.35): container and
//! init container images, `activeDeadlineSeconds` (set, or lowered), tolerations (added, or
//! their `tolerationSeconds` changed), `terminationGracePeriodSeconds` (to 1 from a negative
//! value), scheduling gates (removed) and, on a pod that still has gates, node selector and
//! required node affinity additions (1.27 on). Anything else is `spec: Forbidden: pod updates
//! may not change fields other than ...` followed by a diff of the two specs. Also the pod's own
//! annotation rules (`ValidatePodSpecificAnnotationUpdates`: mirror pod and AppArmor
//! annotations stay as they are), and `ValidatePodCreate`'s own checks on a create
//! ([`pod_create`]). Writes through `/status` are held to `ValidatePodStatusUpdate`
//! ([`pod_status`]).
//!
//! Upstream's appended diff is of its internal Go struct (Go field names, every zero field
//! written): `diff.ObjectDiff` of the compact JSON in 1.20, go-cmp's `cmp.Diff` in 1.28 (whose
//! output go-cmp randomizes on purpose) and a unified diff of the indented JSON from 1.34. kapi
//! reproduces the first line exactly and appends a diff of the same style over the API (v1)
//! JSON: `A:`/`B:` after the common prefix for 1.20, a unified diff with 3 lines of context
//! from 1.28. The diff is therefore not byte-for-byte upstream's.

use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::go_value::{self, NODE_SELECTOR_TERM};
use super::pods::toleration;
use super::services::{BAD_IP, parse_ip_sloppy};
use super::{items, text};
use crate::KubeVersion;

/// The mirror pod annotation (`core.MirrorPodAnnotationKey`).
pub(super) const MIRROR: &str = "kubernetes.io/config.mirror";
/// The AppArmor annotations' prefix (`v1.AppArmorBetaContainerAnnotationKeyPrefix`).
const APPARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The release whose message lists `terminationGracePeriodSeconds` and joins the fields with
/// `","` (`updatablePodSpecFieldsNoResources`; the first release read with it, 1.20 having a
/// literal sentence).
const JOINED_LIST_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// The release from which kapi writes the diff as a unified one: upstream's `diff.Diff` read at
/// 1.34, and in kapi's approximation of 1.28's go-cmp output.
const UNIFIED_DIFF_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// The release whose pods have scheduling gates that an update may only remove
/// (`validateOnlyDeletedSchedulingGates`).
const SCHEDULING_GATES_SINCE: KubeVersion = KubeVersion::new(1, 26);
/// The release from which a gated pod may add node selectors and node affinity
/// (`PodSchedulingReadiness` beta, on by default, in 1.27; unconditional in 1.34).
const GATED_MUTATIONS_SINCE: KubeVersion = KubeVersion::new(1, 27);

/// The fields an update may change, as upstream words them (`updatablePodSpecFieldsNoResources`
/// in 1.28, where in-place resize is off by default; `updatablePodSpecFields` from 1.33).
const UPDATABLE: &[&str] = &[
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
];

/// 1.20's literal message.
const UPDATABLE_1_20: &str = "`spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or `spec.tolerations` (only additions to existing tolerations)";

/// `ValidatePodUpdate`'s own checks, on the Pod (the spec's are the create checks, run too).
pub(super) fn pod_update(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    annotation_updates(new, old, &at.child("metadata").child("annotations"), errors);
    let null = Value::Null;
    let new_spec = new.get("spec").unwrap_or(&null);
    let old_spec = old.get("spec").unwrap_or(&null);
    let spec_at = at.child("spec");
    for list in ["containers", "initContainers"] {
        if !container_updates(new_spec, old_spec, list, &spec_at, errors) {
            return;
        }
    }
    if !deadline_update(new_spec, old_spec, &spec_at, errors) {
        return;
    }
    only_added_tolerations(new_spec, old_spec, &spec_at.child("tolerations"), errors);
    if errors.release() >= SCHEDULING_GATES_SINCE {
        only_deleted_gates(
            new_spec,
            old_spec,
            &spec_at.child("schedulingGates"),
            errors,
        );
    }
    if same(Some(new_spec), Some(old_spec)) {
        return;
    }
    let munged = munge(new_spec, old_spec, &spec_at, errors);
    if !same(Some(&munged), Some(old_spec)) {
        let message = forbidden_message(errors.release(), old_spec, &munged);
        errors.forbidden(&spec_at, &message);
    }
}

/// The release first read with ephemeral containers (beta from 1.23) and scheduling gates (beta
/// from 1.27) on by default.
const CREATE_CHECKS_SINCE: KubeVersion = KubeVersion::new(1, 28);

/// `ValidatePodCreate`'s own checks, on a create: no ephemeral containers (they come through
/// their subresource) and no node before the scheduling gates are gone.
pub(super) fn pod_create(pod: &Value, at: &FieldPath, errors: &mut Errors) {
    if errors.release() < CREATE_CHECKS_SINCE {
        return;
    }
    let null = Value::Null;
    let spec = pod.get("spec").unwrap_or(&null);
    let spec_at = at.child("spec");
    if !items(spec, "ephemeralContainers").is_empty() {
        errors.forbidden(
            &spec_at.child("ephemeralContainers"),
            "cannot be set on create",
        );
    }
    if !text(spec, "nodeName").is_empty() && !items(spec, "schedulingGates").is_empty() {
        errors.forbidden(
            &spec_at.child("nodeName"),
            "cannot be set until all schedulingGates have been cleared",
        );
    }
}

/// The release whose status checks report conditions under `status` (not `metadata`), check
/// observed generations and keep the QoS class (the first release read with them).
const STATUS_PATHS_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// The release that holds ephemeral containers' statuses too (1.28 read).
const EPHEMERAL_STATUSES_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// The conditions the system owns, whose types need not be qualified names.
const SYSTEM_CONDITIONS: &[&str] = &["PodScheduled", "Ready", "Initialized"];
const NON_NEGATIVE: &str = "must be a non-negative integer";

/// `ValidatePodStatusUpdate` on a write through `/status` (whose spec upstream keeps as
/// stored): the pod's annotations, conditions, nominated node, observed generation and QoS
/// class, and no terminated container running again unless the restart policy lets it.
pub(super) fn pod_status(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    annotation_updates(new, old, &at.child("metadata").child("annotations"), errors);
    let null = Value::Null;
    let status = new.get("status").unwrap_or(&null);
    let old_status = old.get("status").unwrap_or(&null);
    let status_at = at.child("status");
    let conditions_at = if release >= STATUS_PATHS_SINCE {
        status_at.child("conditions")
    } else {
        at.child("metadata").child("conditions")
    };
    for (i, condition) in items(status, "conditions").iter().enumerate() {
        let item = conditions_at.index(i);
        if release >= STATUS_PATHS_SINCE
            && let Some(generation) = condition.get("observedGeneration").and_then(Value::as_i64)
            && generation < 0
        {
            let shown = Value::from(generation);
            errors.invalid(
                &item.child("observedGeneration"),
                Shown::Plain(&shown),
                NON_NEGATIVE,
            );
        }
        let kind = text(condition, "type");
        if SYSTEM_CONDITIONS.contains(&kind) {
            continue;
        }
        for message in Format::QualifiedName.messages(kind, release) {
            errors.invalid(
                &item.child("Type"),
                Shown::Plain(&Value::from(kind)),
                &message,
            );
        }
    }
    let nominated = text(status, "nominatedNodeName");
    if !nominated.is_empty() && nominated != text(old_status, "nominatedNodeName") {
        for message in Format::DnsSubdomain.messages(nominated, release) {
            let path = status_at.child("nominatedNodeName");
            errors.invalid(&path, Shown::Plain(&Value::from(nominated)), &message);
        }
    }
    if release >= STATUS_PATHS_SINCE {
        if let Some(generation) = status.get("observedGeneration").and_then(Value::as_i64)
            && generation < 0
        {
            let shown = Value::from(generation);
            errors.invalid(
                &status_at.child("observedGeneration"),
                Shown::Plain(&shown),
                NON_NEGATIVE,
            );
        }
        // An empty class is the stored one (podStatusStrategy.PrepareForUpdate backfills it).
        let qos = text(status, "qosClass");
        let old_qos = text(old_status, "qosClass");
        if !qos.is_empty() && qos != old_qos {
            let path = status_at.child("qosClass");
            errors.invalid(
                &path,
                Shown::Plain(&Value::from(qos)),
                super::super::IMMUTABLE,
            );
        }
    }
    let null = Value::Null;
    let spec = old.get("spec").unwrap_or(&null);
    let policy = text(spec, "restartPolicy");
    for (list, policy) in [
        ("containerStatuses", policy),
        ("initContainerStatuses", policy),
        ("ephemeralContainerStatuses", "Never"),
    ] {
        if list == "ephemeralContainerStatuses" && release < EPHEMERAL_STATUSES_SINCE {
            continue;
        }
        let restartable = |name: &str| {
            list == "initContainerStatuses"
                && release >= STATUS_PATHS_SINCE
                && items(spec, "initContainers")
                    .iter()
                    .find(|c| text(c, "name") == name)
                    .is_some_and(|c| text(c, "restartPolicy") == "Always")
        };
        state_transitions(
            status,
            old_status,
            list,
            policy,
            restartable,
            &status_at,
            errors,
        );
    }
    if release >= CLAIM_STATUSES_SINCE {
        claim_statuses(new, &status_at.child("resourceClaimStatuses"), errors);
    }
    status_ips(status, "podIPs", &go_value::POD_IP, &status_at, errors);
    if release >= HOST_IPS_SINCE {
        let host_ips = items(status, "hostIPs");
        if let Some(first) = host_ips.first()
            && text(first, "ip") != text(status, "hostIP")
        {
            let path = status_at.child("hostIPs").index(0).child("ip");
            let shown = Value::from(text(first, "ip"));
            errors.invalid(&path, Shown::Plain(&shown), "must be equal to `hostIP`");
        }
        status_ips(status, "hostIPs", &go_value::HOST_IP, &status_at, errors);
    }
    if release >= USERS_SINCE {
        container_users(new, &status_at, errors);
    }
}

/// The first release with a pod's `resourceClaimStatuses` (DynamicResourceAllocation, alpha in
/// 1.26; 1.28's strategy drops them unless the stored pod has claims).
const CLAIM_STATUSES_SINCE: KubeVersion = KubeVersion::new(1, 26);
/// Before 1.36 a bad `resourceClaimName` is reported at the entry's `name`.
const CLAIM_NAME_PATH_SINCE: KubeVersion = KubeVersion::new(1, 36);
/// The first release kapi serves with containers' `user` in a pod's status (SupplementalGroupsPolicy,
/// alpha in 1.31, beta and on from 1.33).
const USERS_SINCE: KubeVersion = KubeVersion::new(1, 33);

/// `validatePodResourceClaimStatuses`: each status names one of the spec's claims, once, and the
/// claim it was given a valid object name.
fn claim_statuses(pod: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let null = Value::Null;
    let spec = pod.get("spec").unwrap_or(&null);
    let status = pod.get("status").unwrap_or(&null);
    let claims: HashSet<&str> = items(spec, "resourceClaims")
        .iter()
        .map(|claim| text(claim, "name"))
        .collect();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, entry) in items(status, "resourceClaimStatuses").iter().enumerate() {
        let item = at.index(i);
        let name = text(entry, "name");
        if !claims.contains(&name) {
            let detail = "must match the name of an entry in `spec.resourceClaims`";
            errors.invalid(
                &item.child("name"),
                Shown::Plain(&Value::from(name)),
                detail,
            );
        }
        if !seen.insert(name) {
            errors.duplicate(&item.child("name"), &Value::from(name));
        }
        if let Some(claim) = entry.get("resourceClaimName").and_then(Value::as_str) {
            let field = if release >= CLAIM_NAME_PATH_SINCE {
                "resourceClaimName"
            } else {
                "name"
            };
            for message in Format::DnsSubdomain.messages(claim, release) {
                errors.invalid(
                    &item.child(field),
                    Shown::Plain(&Value::from(claim)),
                    &message,
                );
            }
        }
    }
}

/// `validateContainerStatusUsers` of each list of container statuses: a Linux pod's user and
/// groups are valid IDs; a Windows pod has no Linux user.
fn container_users(pod: &Value, at: &FieldPath, errors: &mut Errors) {
    let windows = pod.pointer("/spec/os/name").and_then(Value::as_str) == Some("windows");
    let null = Value::Null;
    let status = pod.get("status").unwrap_or(&null);
    for list in [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ] {
        for (i, container) in items(status, list).iter().enumerate() {
            let Some(linux) = container.pointer("/user/linux").filter(|l| !l.is_null()) else {
                continue;
            };
            let linux_at = at.child(list).index(i).child("user").child("linux");
            if windows {
                errors.forbidden(&linux_at, "cannot be set for a windows pod");
                continue;
            }
            let ids = ["uid", "gid"]
                .into_iter()
                .map(|field| (linux_at.child(field), linux.get(field)))
                .chain(
                    items(linux, "supplementalGroups")
                        .iter()
                        .enumerate()
                        .map(|(g, id)| (linux_at.child("supplementalGroups").index(g), Some(id))),
                );
            for (path, id) in ids {
                if let Some(id) = id.and_then(Value::as_i64)
                    && !(0..=i64::from(i32::MAX)).contains(&id)
                {
                    let detail = "must be between 0 and 2147483647, inclusive";
                    errors.invalid(&path, Shown::Plain(&Value::from(id)), detail);
                }
            }
        }
    }
}

/// The first release with a pod's `hostIPs` (PodHostIPs beta, on by default from 1.29; 1.28's
/// strategy drops them).
const HOST_IPS_SINCE: KubeVersion = KubeVersion::new(1, 29);
/// The first release read parsing a pod's IPs strictly (`IsValidIP` of KEP-4858: no leading
/// zeros, no IPv4-mapped IPv6 address): 1.34.
const STRICT_IPS_SINCE: KubeVersion = KubeVersion::new(1, 34);

/// `validatePodIPs` and `validateHostIPs`' list checks: each a valid IP, and when several, one
/// of each family (checked before the repeats for pod IPs, after them for host IPs) without
/// repeats. Where an IP does not parse, upstream also reports an internal error
/// from its dual-stack check; kapi reports the family problem alone.
fn status_ips(
    status: &Value,
    field: &str,
    ty: &'static go_value::GoType,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let release = errors.release();
    let list_at = at.child(field);
    let listed = items(status, field);
    let ips: Vec<&str> = listed.iter().map(|ip| text(ip, "ip")).collect();
    for (i, ip) in ips.iter().enumerate() {
        let path = list_at.index(i);
        let shown = Value::from(*ip);
        match parse_ip_sloppy(ip) {
            None => errors.invalid(&path, Shown::Plain(&shown), BAD_IP),
            Some(addr) if release >= STRICT_IPS_SINCE => {
                if ip.parse::<IpAddr>().is_err() {
                    errors.invalid(&path, Shown::Plain(&shown), "must not have leading 0s");
                }
                if let IpAddr::V6(v6) = addr
                    && v6.to_ipv4_mapped().is_some()
                {
                    let detail = "must not be an IPv4-mapped IPv6 address";
                    errors.invalid(&path, Shown::Plain(&shown), detail);
                }
            }
            Some(_) => {}
        }
    }
    if ips.len() < 2 {
        return;
    }
    let list = status.get(field).unwrap_or(&Value::Null);
    let family = |errors: &mut Errors| {
        let parsed: Vec<Option<IpAddr>> = ips.iter().map(|ip| parse_ip_sloppy(ip)).collect();
        let v4 = parsed.iter().any(|a| matches!(a, Some(IpAddr::V4(_))));
        let v6 = parsed.iter().any(|a| matches!(a, Some(IpAddr::V6(_))));
        let dual = v4 && v6 && parsed.iter().all(Option::is_some);
        if !dual || ips.len() > 2 {
            let (go, json) = go_value::render_slice(ty, list, release);
            errors.invalid(
                &list_at,
                Shown::Go(&go, &json),
                "may specify no more than one IP for each IP family",
            );
        }
    };
    let repeats = |errors: &mut Errors| {
        for (i, ip) in listed.iter().enumerate() {
            if ips[..i].contains(&text(ip, "ip")) {
                let (go, json) = go_value::render(ty, ip, release);
                errors.duplicate_shown(&list_at.index(i), Shown::Go(&go, &json));
            }
        }
    };
    if field == "podIPs" {
        family(errors);
        repeats(errors);
    } else {
        repeats(errors);
        family(errors);
    }
}

/// `ValidateContainerStateTransition`: under a restart policy other than `Always`, a container
/// that terminated (successfully, under `OnFailure`) does not leave that state.
fn state_transitions(
    status: &Value,
    old_status: &Value,
    list: &str,
    policy: &str,
    restartable: impl Fn(&str) -> bool,
    at: &FieldPath,
    errors: &mut Errors,
) {
    if policy == "Always" {
        return;
    }
    let terminated = |s: &Value| s.pointer("/state/terminated").is_some_and(|t| !t.is_null());
    for (i, old) in items(old_status, list).iter().enumerate() {
        if !terminated(old) {
            continue;
        }
        let code = old
            .pointer("/state/terminated/exitCode")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let name = text(old, "name");
        if (code != 0 && policy == "OnFailure") || restartable(name) {
            continue;
        }
        for new in items(status, list) {
            if text(new, "name") == name && !terminated(new) {
                let path = at.child(list).index(i).child("state");
                errors.forbidden(&path, "may not be transitioned to non-terminated state");
            }
        }
    }
}

/// `ValidatePodSpecificAnnotationUpdates`: the mirror pod and AppArmor annotations are neither
/// added, changed nor removed.
fn annotation_updates(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let annotations = |pod: &Value| {
        pod.pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (new, old) = (annotations(new), annotations(old));
    for (key, value) in &old {
        if new.get(key) == Some(value) {
            continue;
        }
        if key.starts_with(APPARMOR_PREFIX) {
            errors.forbidden(
                &at.key(key),
                "may not remove or update AppArmor annotations",
            );
        }
        if key == MIRROR {
            errors.forbidden(
                &at.key(key),
                "may not remove or update mirror pod annotation",
            );
        }
    }
    for key in new.keys().filter(|k| !old.contains_key(*k)) {
        if key.starts_with(APPARMOR_PREFIX) {
            errors.forbidden(&at.key(key), "may not add AppArmor annotations");
        }
        if key == MIRROR {
            errors.forbidden(&at.key(key), "may not add mirror pod annotation");
        }
    }
}

/// `ValidateContainerUpdates`: as many containers as before, each with an image without
/// surrounding whitespace. False when upstream stops there.
fn container_updates(
    new: &Value,
    old: &Value,
    list: &str,
    at: &FieldPath,
    errors: &mut Errors,
) -> bool {
    let (new, old) = (items(new, list), items(old, list));
    let at = at.child(list);
    if new.len() != old.len() {
        errors.forbidden(&at, "pod updates may not add or remove containers");
        return false;
    }
    for (i, container) in new.iter().enumerate() {
        let image = container.get("image").and_then(Value::as_str).unwrap_or("");
        let path = at.index(i).child("image");
        if image.is_empty() {
            errors.required(&path, "");
        }
        if image.trim() != image {
            errors.invalid(
                &path,
                Shown::Plain(&Value::from(image)),
                "must not have leading or trailing whitespace",
            );
        }
    }
    true
}

/// `activeDeadlineSeconds` may be set, or lowered, not raised or unset. False when upstream
/// stops there.
fn deadline_update(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) -> bool {
    let deadline = |spec: &Value| {
        spec.get("activeDeadlineSeconds")
            .filter(|v| !v.is_null())
            .and_then(Value::as_i64)
    };
    let path = at.child("activeDeadlineSeconds");
    match (deadline(new), deadline(old)) {
        (Some(new), _) if !(0..=i64::from(i32::MAX)).contains(&new) => {
            let detail = "must be between 0 and 2147483647, inclusive";
            errors.invalid(&path, Shown::Plain(&Value::from(new)), detail);
            false
        }
        (Some(new), Some(old)) if old < new => {
            let detail = "must be less than or equal to previous value";
            errors.invalid(&path, Shown::Plain(&Value::from(new)), detail);
            false
        }
        (None, Some(_)) => {
            let detail = "must not update from a positive integer to nil value";
            errors.invalid(&path, Shown::Plain(&Value::Null), detail);
            true
        }
        _ => true,
    }
}

/// A toleration without its `tolerationSeconds`, the part an update may change.
fn without_seconds(toleration: &Value) -> Value {
    let mut toleration = toleration.clone();
    if let Value::Object(map) = &mut toleration {
        map.remove("tolerationSeconds");
    }
    toleration
}

/// `validateOnlyAddedTolerations`: every old toleration is still there (its seconds aside),
/// then `ValidateTolerations` of the new list again.
fn only_added_tolerations(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let new_items: Vec<Value> = items(new, "tolerations")
        .iter()
        .map(without_seconds)
        .collect();
    for old_item in items(old, "tolerations") {
        let old_item = without_seconds(old_item);
        if !new_items.iter().any(|n| same(Some(n), Some(&old_item))) {
            errors.forbidden(
                at,
                "existing toleration can not be modified except its tolerationSeconds",
            );
            return;
        }
    }
    for (i, item) in items(new, "tolerations").iter().enumerate() {
        toleration(item, &at.index(i), errors);
    }
}

/// `validateOnlyDeletedSchedulingGates` (1.26 on): no gate that was not there before.
fn only_deleted_gates(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) {
    let name = |gate: &Value| {
        gate.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let old_names: Vec<String> = items(old, "schedulingGates").iter().map(name).collect();
    // Upstream walks a map of the new names to their last index.
    let mut added: Vec<(String, usize)> = Vec::new();
    for (i, gate) in items(new, "schedulingGates").iter().enumerate() {
        let gate = name(gate);
        if old_names.contains(&gate) {
            continue;
        }
        match added.iter_mut().find(|(n, _)| *n == gate) {
            Some(entry) => entry.1 = i,
            None => added.push((gate, i)),
        }
    }
    for (gate, i) in added {
        let detail = format!("only deletion is allowed, but found new scheduling gate '{gate}'");
        errors.forbidden(&at.index(i).child("name"), &detail);
    }
}

/// The new spec with what an update may change taken from the old one.
fn munge(new: &Value, old: &Value, at: &FieldPath, errors: &mut Errors) -> Value {
    let mut munged = new.clone();
    let Value::Object(map) = &mut munged else {
        return munged;
    };
    for list in ["containers", "initContainers"] {
        let old_items = items(old, list);
        if let Some(Value::Array(containers)) = map.get_mut(list) {
            for (container, old_container) in containers.iter_mut().zip(old_items) {
                if let Value::Object(container) = container {
                    match old_container.get("image") {
                        Some(image) => container.insert("image".into(), image.clone()),
                        None => container.remove("image"),
                    };
                }
            }
        }
    }
    let take = |field: &str, map: &mut serde_json::Map<String, Value>| match old.get(field) {
        Some(value) => map.insert(field.to_owned(), value.clone()),
        None => map.remove(field),
    };
    take("activeDeadlineSeconds", map);
    take("schedulingGates", map);
    take("tolerations", map);
    let grace = |spec: &Value| {
        spec.get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
    };
    if grace(old).is_some_and(|g| g < 0) && grace(new) == Some(1) {
        take("terminationGracePeriodSeconds", map);
    }
    let gated = !items(old, "schedulingGates").is_empty();
    if gated && errors.release() >= GATED_MUTATIONS_SINCE {
        gated_mutations(map, old, at, errors);
    }
    munged
}

/// A gated pod may add node selectors and required node affinity expressions
/// (`validateNodeSelectorMutation`, `validateNodeAffinityMutation`).
fn gated_mutations(
    munged: &mut serde_json::Map<String, Value>,
    old: &Value,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let new_selector = munged.get("nodeSelector").cloned();
    if !same(new_selector.as_ref(), old.get("nodeSelector")) {
        let new_map = new_selector.as_ref().and_then(Value::as_object);
        let kept = old
            .get("nodeSelector")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .all(|(k, v)| new_map.and_then(|m| m.get(k)) == Some(v));
        if !kept {
            errors.invalid(
                &at.child("nodeSelector"),
                Shown::StringMap(new_selector.as_ref().unwrap_or(&Value::Null)),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            );
        }
        match old.get("nodeSelector") {
            Some(value) => munged.insert("nodeSelector".into(), value.clone()),
            None => munged.remove("nodeSelector"),
        };
    }
    let old_affinity = old.pointer("/affinity/nodeAffinity");
    let new_affinity = munged.get("affinity").and_then(|a| a.get("nodeAffinity"));
    if same(old_affinity, new_affinity) {
        return;
    }
    let affinity_at = at.child("affinity").child("nodeAffinity");
    node_affinity_mutation(new_affinity, old_affinity, &affinity_at, errors);
    let old_whole = old.get("affinity").filter(|a| !a.is_null());
    let others_unset = munged
        .get("affinity")
        .is_none_or(|a| is_unset(a.get("podAffinity")) && is_unset(a.get("podAntiAffinity")));
    match (
        munged.get_mut("affinity").filter(|a| !a.is_null()),
        old_affinity,
    ) {
        (None, None) => {}
        (None, Some(old_affinity)) => {
            let value = serde_json::json!({"nodeAffinity": old_affinity});
            munged.insert("affinity".into(), value);
        }
        (Some(_), _) if old_whole.is_none() && others_unset => {
            munged.remove("affinity");
        }
        (Some(Value::Object(affinity)), _) => {
            match old_affinity {
                Some(value) => affinity.insert("nodeAffinity".into(), value.clone()),
                None => affinity.remove("nodeAffinity"),
            };
        }
        (Some(_), _) => {}
    }
}

/// `validateNodeAffinityMutation`: a gated pod's required node selector terms keep their number
/// and their expressions, adding to them only.
fn node_affinity_mutation(
    new: Option<&Value>,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    fn terms(affinity: Option<&Value>) -> Option<&[Value]> {
        affinity
            .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
            .filter(|r| !r.is_null())
            .map(|r| items(r, "nodeSelectorTerms"))
    }
    let Some(old_terms) = terms(old) else {
        return;
    };
    let new_terms = terms(new).unwrap_or_default();
    let terms_at = at
        .child("requiredDuringSchedulingIgnoredDuringExecution")
        .child("nodeSelectorTerms");
    let release = errors.release();
    if !old_terms.is_empty() && old_terms.len() != new_terms.len() {
        let list = Value::Array(new_terms.to_vec());
        let (go, json) = go_value::render_slice(&NODE_SELECTOR_TERM, &list, release);
        errors.invalid(
            &terms_at,
            Shown::Go(&go, &json),
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
        );
        return;
    }
    for (i, (new_term, old_term)) in new_terms.iter().zip(old_terms).enumerate() {
        if !only_additions(new_term, old_term) {
            let (go, json) = go_value::render(&NODE_SELECTOR_TERM, new_term, release);
            errors.invalid(
                &terms_at.index(i),
                Shown::Go(&go, &json),
                "only additions are allowed (no mutations or deletions)",
            );
        }
    }
}

/// `validateNodeSelectorTermHasOnlyAdditions`.
fn only_additions(new: &Value, old: &Value) -> bool {
    let (old_exprs, old_fields) = (items(old, "matchExpressions"), items(old, "matchFields"));
    let (new_exprs, new_fields) = (items(new, "matchExpressions"), items(new, "matchFields"));
    if old_exprs.is_empty()
        && old_fields.is_empty()
        && !(new_exprs.is_empty() && new_fields.is_empty())
    {
        return false;
    }
    let prefix = |new: &[Value], old: &[Value]| {
        old.is_empty()
            || (new.len() >= old.len() && new.iter().zip(old).all(|(n, o)| same(Some(n), Some(o))))
    };
    prefix(new_exprs, old_exprs) && prefix(new_fields, old_fields)
}

/// Missing, null or empty: what a Go nil slice, map or pointer serializes as.
fn is_unset(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Array(items)) => items.is_empty(),
        _ => false,
    }
}

/// `apiequality.Semantic.DeepEqual` over API JSON: a missing field equals a null one and an
/// empty list (Go's nil and empty slices compare equal there).
pub(super) fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (x, y) if is_unset(x) && is_unset(y) => true,
        (Some(Value::Object(a)), Some(Value::Object(b))) => a
            .iter()
            .map(|(k, v)| (k, Some(v), b.get(k)))
            .chain(
                b.iter()
                    .filter(|(k, _)| !a.contains_key(*k))
                    .map(|(k, v)| (k, None, Some(v))),
            )
            .all(|(_, x, y)| same(x, y)),
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(Some(x), Some(y)))
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// `pod updates may not change fields other than ...`, a newline and a diff of the old and the
/// munged new spec in the release's style (see the module's note on exactness).
fn forbidden_message(release: KubeVersion, old: &Value, munged: &Value) -> String {
    let fields = if release < JOINED_LIST_SINCE {
        UPDATABLE_1_20.to_owned()
    } else {
        UPDATABLE.join(",")
    };
    format!(
        "pod updates may not change fields other than {fields}\n{}",
        diff(release, old, munged)
    )
}

/// The diff upstream appends to a forbidden change of `old` into `new`, in the release's style
/// over the API JSON: 1.20's `diff.ObjectDiff(new, old)`, later a unified diff of old to new
/// (see the module's note on exactness).
pub(super) fn diff(release: KubeVersion, old: &Value, new: &Value) -> String {
    // Both sides in one field order (upstream's is the struct's; kapi's, the keys sorted).
    let (old, new) = (sorted(old), sorted(new));
    if release < UNIFIED_DIFF_SINCE {
        string_diff(&new.to_string(), &old.to_string())
    } else {
        unified_diff(&pretty(&old), &pretty(&new))
    }
}

/// `value` with every object's keys sorted.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut pairs: Vec<(&String, &Value)> = map.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// `diff.StringDiff` (1.20's `ObjectDiff`): the common prefix, then what differs in each.
fn string_diff(a: &str, b: &str) -> String {
    let common = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    let common = (0..=common)
        .rev()
        .find(|&i| a.is_char_boundary(i) && b.is_char_boundary(i))
        .unwrap_or(0);
    format!(
        "{}\n\nA: {}\n\nB: {}\n\n",
        &a[..common],
        &a[common..],
        &b[common..]
    )
}

/// JSON indented by one space, as `json.MarshalIndent(v, "", " ")`.
fn pretty(value: &Value) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    if serde::Serialize::serialize(value, &mut serializer).is_err() {
        return value.to_string();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// How many unchanged lines a hunk shows around a change (difflib's `Context: 3`).
const CONTEXT: usize = 3;

/// A unified diff (`@@ -a,b +c,d @@`, then ` `, `-` and `+` lines) of `a` and `b` as one hunk
/// around the lines between their common first and last lines.
fn unified_diff(a: &str, b: &str) -> String {
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    if prefix == a.len() && prefix == b.len() {
        return String::new();
    }
    let start = prefix.saturating_sub(CONTEXT);
    let (a_end, b_end) = (a.len() - suffix, b.len() - suffix);
    let tail = suffix.min(CONTEXT);
    let range = |from: usize, to: usize| {
        let length = to - from;
        match length {
            1 => format!("{}", from + 1),
            0 => format!("{from},0"),
            _ => format!("{},{length}", from + 1),
        }
    };
    let mut out = format!(
        "@@ -{} +{} @@\n",
        range(start, a_end + tail),
        range(start, b_end + tail)
    );
    for line in &a[start..prefix] {
        out.push_str(&format!(" {line}\n"));
    }
    for line in &a[prefix..a_end] {
        out.push_str(&format!("-{line}\n"));
    }
    for line in &b[prefix..b_end] {
        out.push_str(&format!("+{line}\n"));
    }
    for line in &a[a_end..a_end + tail] {
        out.push_str(&format!(" {line}\n"));
    }
    out
}

/// `ValidatePodEphemeralContainersUpdate`'s own part, on a write through a pod's
/// `/ephemeralcontainers`: a static pod takes none (the only error then), and the ephemeral
/// containers already there stay, unchanged (order aside: a patch may reorder them).
/// Returns whether the pod is static, which answers that error alone.
pub(super) fn ephemeral_containers_update(new: &Value, old: &Value, errors: &mut Errors) -> bool {
    let mirrored = old
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR));
    if mirrored {
        errors.forbidden(
            &FieldPath::root(),
            "static pods do not support ephemeral containers",
        );
        return true;
    }
    let null = Value::Null;
    let spec_at = FieldPath::of("spec.ephemeralContainers");
    let news = items(new.get("spec").unwrap_or(&null), "ephemeralContainers");
    for before in items(old.get("spec").unwrap_or(&null), "ephemeralContainers") {
        let name = text(before, "name");
        match news.iter().find(|c| text(c, "name") == name) {
            None => errors.forbidden(
                &spec_at,
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            ),
            Some(after) if !same(Some(before), Some(after)) => {
                let detail = format!(
                    "existing ephemeral containers {name:?} may not be changed\n{}",
                    diff(errors.release(), before, after)
                );
                errors.forbidden(&spec_at.key(name), &detail);
            }
            Some(_) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::validation::rules::lines;

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    fn web(image: &str) -> Value {
        json!({"containers": [{"name": "web", "image": image}], "restartPolicy": "Always"})
    }

    fn run(new: &Value, old: &Value, minor: u16) -> Vec<String> {
        lines(minor, |e| pod_update(new, old, &FieldPath::root(), e))
    }

    #[test]
    fn a_status_names_the_pods_claims_and_valid_users() {
        // ValidatePodStatusUpdate: validatePodResourceClaimStatuses (a bad claim name reported at
        // `name` until 1.36 moved it) and validateContainerStatusUsers.
        let spec = json!({"containers": [{"name": "web", "image": "x"}],
            "resourceClaims": [{"name": "gpu"}]});
        let old = pod(spec.clone());
        let mut new = pod(spec);
        new["status"] = json!({
            "resourceClaimStatuses": [
                {"name": "gpu", "resourceClaimName": "p-gpu"},
                {"name": "gpu", "resourceClaimName": "Bad_Name"},
                {"name": "tpu"}],
            "containerStatuses": [{"name": "web",
                "user": {"linux": {"uid": -1, "gid": 0, "supplementalGroups": [1, 2147483648_i64]}}}],
        });
        let check =
            |new: &Value, minor| lines(minor, |e| pod_status(new, &old, &FieldPath::root(), e));
        let bad_name = |field: &str| {
            format!(
                r#"status.resourceClaimStatuses[1].{field}: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#
            )
        };
        let users = [
            "status.containerStatuses[0].user.linux.uid: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            "status.containerStatuses[0].user.linux.supplementalGroups[1]: Invalid value: 2147483648: must be between 0 and 2147483647, inclusive",
        ];
        let claims = |field: &str| {
            vec![
                r#"status.resourceClaimStatuses[1].name: Duplicate value: "gpu""#.to_owned(),
                bad_name(field),
                r#"status.resourceClaimStatuses[2].name: Invalid value: "tpu": must match the name of an entry in `spec.resourceClaims`"#.to_owned(),
            ]
        };
        let mut expected = claims("resourceClaimName");
        expected.extend(users.map(str::to_owned));
        assert_eq!(check(&new, 36), expected);
        let mut expected = claims("name");
        expected.extend(users.map(str::to_owned));
        assert_eq!(check(&new, 34), expected);
        // A Windows pod reports no Linux user.
        new["spec"]["os"] = json!({"name": "windows"});
        let found = check(&new, 36);
        assert!(
            found.contains(&"status.containerStatuses[0].user.linux: Forbidden: cannot be set for a windows pod".to_owned()),
            "{found:?}"
        );
    }

    #[test]
    fn images_may_change_but_not_to_nothing() {
        // ValidatePodUpdate, ValidateContainerUpdates.
        let old = pod(web("nginx"));
        assert!(run(&pod(web("nginx:2")), &old, 34).is_empty());
        assert_eq!(
            run(&pod(web(" nginx")), &old, 28),
            [
                "spec.containers[0].image: Invalid value: \" nginx\": must not have leading or trailing whitespace"
            ]
        );
        let two =
            pod(json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]}));
        assert_eq!(
            run(&two, &old, 20),
            ["spec.containers: Forbidden: pod updates may not add or remove containers"]
        );
    }

    #[test]
    fn other_spec_changes_are_forbidden_with_the_release_s_list() {
        // ValidatePodUpdate's final DeepEqual: 1.20's literal sentence, later the joined list.
        let old = pod(web("nginx"));
        let mut new = pod(web("nginx"));
        new["spec"]["restartPolicy"] = json!("Never");
        let first = |minor| {
            let found = run(&new, &old, minor);
            assert_eq!(found.len(), 1, "{found:?}");
            found[0].lines().next().unwrap().to_owned()
        };
        assert_eq!(
            first(20),
            "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`, `spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or `spec.tolerations` (only additions to existing tolerations)"
        );
        let joined = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";
        assert_eq!(first(28), joined);
        assert_eq!(first(36), joined);
        let found = run(&new, &old, 34).remove(0);
        assert!(
            found.contains("- \"restartPolicy\": \"Always\"\n+ \"restartPolicy\": \"Never\"\n"),
            "{found}"
        );
        let found = run(&new, &old, 20).remove(0);
        assert!(
            found.contains("\n\nA: Never\"}\n\nB: Always\"}\n\n"),
            "{found}"
        );
    }

    #[test]
    fn deadlines_are_set_or_lowered() {
        let with = |deadline: Value| {
            let mut spec = web("nginx");
            spec["activeDeadlineSeconds"] = deadline;
            pod(spec)
        };
        assert!(run(&with(json!(10)), &pod(web("nginx")), 34).is_empty());
        assert!(run(&with(json!(5)), &with(json!(10)), 34).is_empty());
        assert_eq!(
            run(&with(json!(20)), &with(json!(10)), 34),
            [
                "spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"
            ]
        );
        assert_eq!(
            run(&pod(web("nginx")), &with(json!(10)), 28)[0],
            "spec.activeDeadlineSeconds: Invalid value: \"null\": must not update from a positive integer to nil value"
        );
    }

    #[test]
    fn tolerations_may_only_be_added() {
        // validateOnlyAddedTolerations.
        let with = |tolerations: Value| {
            let mut spec = web("nginx");
            spec["tolerations"] = tolerations;
            pod(spec)
        };
        let a = json!({"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5});
        let a_later = json!({"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 50});
        let b = json!({"key": "b", "operator": "Exists"});
        assert!(run(&with(json!([a_later, b])), &with(json!([a])), 34).is_empty());
        assert_eq!(
            run(&with(json!([b])), &with(json!([a])), 34),
            [
                "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
            ]
        );
    }

    #[test]
    fn scheduling_gates_may_only_be_removed_and_gated_pods_gain_selectors() {
        // validateOnlyDeletedSchedulingGates, validateNodeSelectorMutation.
        let with = |gates: Value, selector: Value| {
            let mut spec = web("nginx");
            spec["schedulingGates"] = gates;
            spec["nodeSelector"] = selector;
            pod(spec)
        };
        let old = with(json!([{"name": "a"}]), json!({"zone": "x"}));
        assert!(
            run(
                &with(json!([]), json!({"zone": "x", "disk": "ssd"})),
                &old,
                34
            )
            .is_empty()
        );
        assert_eq!(
            run(
                &with(json!([{"name": "a"}, {"name": "b"}]), json!({"zone": "x"})),
                &old,
                28
            ),
            [
                "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b'"
            ]
        );
        assert_eq!(
            run(
                &with(json!([{"name": "a"}]), json!({"zone": "y"})),
                &old,
                28
            ),
            [
                "spec.nodeSelector: Invalid value: map[string]string{\"zone\":\"y\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"
            ]
        );
    }

    #[test]
    fn mirror_annotations_stay() {
        // ValidatePodSpecificAnnotationUpdates.
        let mut new = pod(web("nginx"));
        new["metadata"]["annotations"] = json!({MIRROR: "x"});
        assert_eq!(
            run(&new, &pod(web("nginx")), 34),
            [
                "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation"
            ]
        );
    }

    #[test]
    fn status_ips_are_valid_and_one_per_family() {
        // validatePodIPs, validateHostIPs (PodHostIPs, on from 1.29); IsValidIP's strict
        // parsing read at 1.34.
        let pod = |status: Value| json!({"spec": {}, "status": status});
        let old = pod(json!({}));
        let run =
            |new: &Value, minor| lines(minor, |e| pod_status(new, &old, &FieldPath::root(), e));
        let twice = pod(json!({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}, {"ip": "x"}]}));
        assert_eq!(
            run(&twice, 28),
            [
                "status.podIPs[2]: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:\"10.0.0.1\"}, core.PodIP{IP:\"10.0.0.1\"}, core.PodIP{IP:\"x\"}}: may specify no more than one IP for each IP family",
                "status.podIPs[1]: Duplicate value: core.PodIP{IP:\"10.0.0.1\"}",
            ]
        );
        let hosts = pod(
            json!({"hostIP": "10.0.0.2", "hostIPs": [{"ip": "010.0.0.1"}, {"ip": "010.0.0.1"}]}),
        );
        assert_eq!(
            run(&hosts, 34),
            [
                "status.hostIPs[0].ip: Invalid value: \"010.0.0.1\": must be equal to `hostIP`",
                "status.hostIPs[0]: Invalid value: \"010.0.0.1\": must not have leading 0s",
                "status.hostIPs[1]: Invalid value: \"010.0.0.1\": must not have leading 0s",
                "status.hostIPs[1]: Duplicate value: {\"IP\":\"010.0.0.1\"}",
                "status.hostIPs: Invalid value: [{\"IP\":\"010.0.0.1\"},{\"IP\":\"010.0.0.1\"}]: may specify no more than one IP for each IP family",
            ]
        );
        assert!(run(&hosts, 28).is_empty());
        let dual = pod(json!({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}));
        assert!(run(&dual, 34).is_empty());
    }

    #[test]
    fn status_writes_keep_terminated_containers_terminated() {
        // ValidatePodStatusUpdate, ValidateContainerStateTransition, validatePodConditions.
        let old = json!({"spec": {"restartPolicy": "Never"}, "status": {"qosClass": "BestEffort",
            "containerStatuses": [{"name": "web", "state": {"terminated": {"exitCode": 0}}}]}});
        let new = json!({"spec": {"restartPolicy": "Never"}, "status": {"qosClass": "Burstable",
            "conditions": [{"type": "bad type", "status": "True"}, {"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "web", "state": {"running": {}}}]}});
        let found = |minor| lines(minor, |e| pod_status(&new, &old, &FieldPath::root(), e));
        let at_20 = found(20);
        assert_eq!(at_20.len(), 2, "{at_20:?}");
        assert!(at_20[0].starts_with("metadata.conditions[0].Type: Invalid value: \"bad type\": "));
        assert_eq!(
            at_20[1],
            "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"
        );
        let at_34 = found(34);
        assert!(at_34[0].starts_with("status.conditions[0].Type: Invalid value: "));
        assert!(at_34.contains(
            &"status.qosClass: Invalid value: \"Burstable\": field is immutable".to_owned()
        ));
        let mut always = old.clone();
        always["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            lines(28, |e| pod_status(&new, &always, &FieldPath::root(), e)).len(),
            1
        );
    }

    #[test]
    fn creates_carry_no_ephemeral_containers_nor_a_node_before_the_gates_go() {
        // ValidatePodCreate.
        let mut new = pod(web("nginx"));
        new["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
        new["spec"]["nodeName"] = json!("n1");
        new["spec"]["schedulingGates"] = json!([{"name": "wait"}]);
        assert_eq!(
            lines(28, |e| pod_create(&new, &FieldPath::root(), e)),
            [
                "spec.ephemeralContainers: Forbidden: cannot be set on create",
                "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
            ]
        );
        assert!(lines(20, |e| pod_create(&new, &FieldPath::root(), e)).is_empty());
    }

    #[test]
    fn unified_diffs_show_three_lines_of_context() {
        let a = "1\n2\n3\n4\n5\n6\n7\n";
        let b = "1\n2\n3\n4\nX\n6\n7\n";
        assert_eq!(
            unified_diff(a, b),
            "@@ -2,6 +2,6 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n"
        );
        assert_eq!(string_diff("abcd", "abXd"), "ab\n\nA: cd\n\nB: Xd\n\n");
    }

    #[test]
    fn ephemeral_containers_stay_once_added() {
        // ValidatePodEphemeralContainersUpdate's own part.
        let debug = json!({"name": "debug", "image": "busybox"});
        let old = json!({"metadata": {}, "spec": {"ephemeralContainers": [debug]}});
        let added = json!({"metadata": {}, "spec": {"ephemeralContainers": [
            {"name": "two", "image": "busybox"}, debug]}});
        assert!(
            lines(34, |e| {
                ephemeral_containers_update(&added, &old, e);
            })
            .is_empty()
        );
        let removed = json!({"metadata": {}, "spec": {}});
        assert_eq!(
            lines(34, |e| {
                ephemeral_containers_update(&removed, &old, e);
            }),
            [
                "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debug\" may not be removed\n"
            ]
        );
        let changed = json!({"metadata": {}, "spec": {"ephemeralContainers": [
            {"name": "debug", "image": "alpine"}]}});
        let text = lines(34, |e| {
            ephemeral_containers_update(&changed, &old, e);
        });
        assert!(
            text[0].starts_with("spec.ephemeralContainers[debug]: Forbidden: existing ephemeral containers \"debug\" may not be changed\n"),
            "{text:?}"
        );
        // A static pod takes none at all.
        let mut mirror = old.clone();
        mirror["metadata"]["annotations"] = json!({MIRROR: "x"});
        let mut static_errors = Vec::new();
        let text = lines(34, |e| {
            static_errors.push(ephemeral_containers_update(&added, &mirror, e));
        });
        assert_eq!(static_errors, [true]);
        assert_eq!(
            text,
            [": Forbidden: static pods do not support ephemeral containers"]
        );
    }
}
