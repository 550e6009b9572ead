//! Pod and container security contexts and affinity (`pkg/apis/core/validation/validation.go`,
//! read at 1.20, 1.28, 1.34 and 1.35): `validatePodSpecSecurityContext` (named
//! `ValidatePodSecurityContext` in 1.20), `ValidateSecurityContext`,
//! `validateSeccompProfileField`, `ValidateAppArmorProfileField`, `validateSysctls`,
//! `ValidateHostSysctl`; `validateAffinity`'s `ValidateNodeSelector`,
//! `ValidatePreferredSchedulingTerms`, `validatePodAffinityTerm` and the weights. The user and
//! group ids' ranges are data (`range` checks); privileged containers are refused where the
//! cluster's `--allow-privileged` is false (`Errors::allowing_privileged`). Windows options are
//! not checked.

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::go_value::{self, SECCOMP_PROFILE, SECURITY_CONTEXT};
use super::pods::map_keys;
use super::windows::windows_options;
use super::{items, text};
use crate::KubeVersion;

/// The release from which sysctl names may use `/` and the message shows the anchored regex.
const SLASHED_SYSCTLS_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// The release first read with AppArmor fields, host sysctl checks, `hostUsers` and
/// `Unmasked`, supplemental groups policies and required node affinity label values.
const NEWER_CHECKS_SINCE: KubeVersion = KubeVersion::new(1, 34);

const SYSCTL_MAX: usize = 253;
const SYSCTL_FMT_1_20: &str = "([a-z0-9]([-_a-z0-9]*[a-z0-9])?\\.)*[a-z0-9]([-_a-z0-9]*[a-z0-9])?";
const SYSCTL_FMT: &str = "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
/// `IsValidGroupID`'s message.
const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";
const WEIGHT_RANGE: &str = "must be in the range 1-100";

fn flag(holder: &Value, field: &str) -> Option<bool> {
    holder.get(field).and_then(Value::as_bool)
}

/// `validatePodSpecSecurityContext` after the ids (data): supplemental groups, sysctls, the
/// fsGroup change policy, seccomp profile, Windows options, AppArmor profile, the supplemental
/// groups policy; on a PodSecurityContext.
pub(super) fn pod_security_context(
    sc: &Value,
    old: Option<&Value>,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let release = errors.release();
    for (i, gid) in items(sc, "supplementalGroups").iter().enumerate() {
        if let Some(gid) = gid.as_i64()
            && !(0..=i64::from(i32::MAX)).contains(&gid)
        {
            let path = at.child("supplementalGroups").index(i);
            errors.invalid(&path, Shown::Plain(&Value::from(gid)), ID_RANGE);
        }
    }
    sysctls(sc, &at.child("sysctls"), errors);
    if let Some(policy) = sc.get("fsGroupChangePolicy").and_then(Value::as_str)
        && !matches!(policy, "Always" | "OnRootMismatch")
    {
        errors.not_supported(
            &at.child("fsGroupChangePolicy"),
            &Value::from(policy),
            &["Always", "OnRootMismatch"],
        );
    }
    seccomp_profile(sc, &at.child("seccompProfile"), errors);
    windows_options(sc, &at.child("windowsOptions"), errors);
    if release >= NEWER_CHECKS_SINCE {
        apparmor_profile(sc, &at.child("appArmorProfile"), errors);
        if let Some(policy) = sc.get("supplementalGroupsPolicy").and_then(Value::as_str)
            && !matches!(policy, "Merge" | "Strict")
        {
            errors.not_supported(
                &at.child("supplementalGroupsPolicy"),
                &Value::from(policy),
                &["Merge", "Strict"],
            );
        }
    }
    se_linux_change_policy(sc, old, &at.child("seLinuxChangePolicy"), errors);
}

/// The first release with a pod's `seLinuxChangePolicy` on by default (SELinuxChangePolicy beta).
const SE_LINUX_CHANGE_POLICY_SINCE: KubeVersion = KubeVersion::new(1, 33);

/// `validateSELinuxChangePolicy`: `Recursive` only, as SELinuxMount is off by default in every
/// served release, unless the stored pod or template already used `MountOption`
/// (`useOnlyRecursiveSELinuxChangePolicy`), which then allows both.
fn se_linux_change_policy(sc: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    if errors.release() < SE_LINUX_CHANGE_POLICY_SINCE {
        return;
    }
    let Some(policy) = sc.get("seLinuxChangePolicy").filter(|p| !p.is_null()) else {
        return;
    };
    let was_mount_option = old
        .and_then(|o| o.get("seLinuxChangePolicy"))
        .and_then(Value::as_str)
        == Some("MountOption");
    let supported: &[&str] = if was_mount_option {
        &["MountOption", "Recursive"]
    } else {
        &["Recursive"]
    };
    if !policy.as_str().is_some_and(|p| supported.contains(&p)) {
        errors.not_supported(at, policy, supported);
    }
}

/// `IsValidSysctlName`: at most 253 characters, segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`
/// joined by `.` (or `/` from 1.28 on).
fn is_sysctl_name(name: &str, release: KubeVersion) -> bool {
    let slashes = release >= SLASHED_SYSCTLS_SINCE;
    name.len() <= SYSCTL_MAX
        && name
            .split(|c| c == '.' || (slashes && c == '/'))
            .all(|segment| {
                let bytes = segment.as_bytes();
                let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
                bytes.first().is_some_and(edge)
                    && bytes.last().is_some_and(edge)
                    && bytes.iter().all(|b| edge(b) || *b == b'-' || *b == b'_')
            })
}

/// `validateSysctls`: names present, valid and not repeated.
fn sysctls(sc: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let mut seen: Vec<&str> = Vec::new();
    for (i, sysctl) in items(sc, "sysctls").iter().enumerate() {
        let name = text(sysctl, "name");
        let path = at.index(i).child("name");
        if name.is_empty() {
            errors.required(&path, "");
        } else if !is_sysctl_name(name, release) {
            let regex = if release >= SLASHED_SYSCTLS_SINCE {
                SYSCTL_FMT
            } else {
                SYSCTL_FMT_1_20
            };
            let detail =
                format!("must have at most {SYSCTL_MAX} characters and match regex {regex}");
            errors.invalid(&path, Shown::Plain(&Value::from(name)), &detail);
        } else if seen.contains(&name) {
            errors.duplicate(&path, &Value::from(name));
        }
        seen.push(name);
    }
}

/// The kernel namespace of a sysctl (`utilsysctl.GetNamespace`): `net` or `ipc`.
fn sysctl_namespace(name: &str) -> Option<&'static str> {
    let name = name.replace('/', ".");
    if name.starts_with("net.") {
        Some("net")
    } else if name == "kernel.sem"
        || ["kernel.shm", "kernel.msg", "fs.mqueue."]
            .iter()
            .any(|p| name.starts_with(p))
    {
        Some("ipc")
    } else {
        None
    }
}

/// What needs the PodSpec around a security context (the internal PodSecurityContext holds
/// `hostPID`, `hostNetwork`, `hostIPC` and `shareProcessNamespace`, so upstream reports them
/// under `spec.securityContext`): a shared process namespace with the host's PIDs, namespaced
/// sysctls with the host's network or IPC (1.34 read), and `Unmasked` proc mounts with the
/// host's users (1.34 read); on a PodSpec.
pub(super) fn pod_host_namespaces(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let sc_at = at.child("securityContext");
    if flag(spec, "shareProcessNamespace") == Some(true) && flag(spec, "hostPID") == Some(true) {
        errors.invalid(
            &sc_at.child("shareProcessNamespace"),
            Shown::Plain(&Value::Bool(true)),
            "ShareProcessNamespace and HostPID cannot both be enabled",
        );
    }
    if release < NEWER_CHECKS_SINCE {
        return;
    }
    if let Some(sc) = spec.get("securityContext") {
        for (i, sysctl) in items(sc, "sysctls").iter().enumerate() {
            let name = text(sysctl, "name");
            let detail = match sysctl_namespace(name) {
                Some("net") if flag(spec, "hostNetwork") == Some(true) => {
                    "may not be specified when 'hostNetwork' is true"
                }
                Some("ipc") if flag(spec, "hostIPC") == Some(true) => {
                    "may not be specified when 'hostIPC' is true"
                }
                _ => continue,
            };
            let path = sc_at.child("sysctls").index(i).child("name");
            errors.invalid(&path, Shown::Plain(&Value::from(name)), detail);
        }
    }
    if flag(spec, "hostUsers") == Some(false) {
        return;
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, container) in items(spec, list).iter().enumerate() {
            if let Some(mount) = container.pointer("/securityContext/procMount")
                && mount.as_str() == Some("Unmasked")
            {
                let path = at
                    .child(list)
                    .index(i)
                    .child("securityContext")
                    .child("procMount");
                errors.invalid(
                    &path,
                    Shown::Plain(mount),
                    "`hostUsers` must be false to use `Unmasked`",
                );
            }
        }
    }
}

/// `ValidateSecurityContext` after the ids (data): privileged containers where the cluster
/// refuses them, the proc mount, seccomp, privilege escalation against `privileged` and
/// `CAP_SYS_ADMIN`, Windows options, AppArmor; on a SecurityContext.
pub(super) fn security_context(sc: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    // The cluster's `--allow-privileged` (`capabilities.Get().AllowPrivileged`).
    if flag(sc, "privileged") == Some(true) && !errors.privileged_allowed() {
        errors.forbidden(&at.child("privileged"), "disallowed by cluster policy");
    }
    if let Some(mount) = sc.get("procMount").and_then(Value::as_str)
        && !matches!(mount, "Default" | "Unmasked")
    {
        errors.not_supported(
            &at.child("procMount"),
            &Value::from(mount),
            &["Default", "Unmasked"],
        );
    }
    seccomp_profile(sc, &at.child("seccompProfile"), errors);
    if flag(sc, "allowPrivilegeEscalation") == Some(false) {
        let (go, json) = go_value::render(&SECURITY_CONTEXT, sc, release);
        if flag(sc, "privileged") == Some(true) {
            errors.invalid(
                at,
                Shown::Go(&go, &json),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            );
        }
        let adds = sc.pointer("/capabilities/add").and_then(Value::as_array);
        for capability in adds.into_iter().flatten() {
            if capability.as_str() == Some("CAP_SYS_ADMIN") {
                errors.invalid(
                    at,
                    Shown::Go(&go, &json),
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                );
            }
        }
    }
    windows_options(sc, &at.child("windowsOptions"), errors);
    if release >= NEWER_CHECKS_SINCE {
        apparmor_profile(sc, &at.child("appArmorProfile"), errors);
    }
}

/// `validateSeccompProfileField` of `holder.seccompProfile`, reported at `at`.
fn seccomp_profile(holder: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(profile) = holder.get("seccompProfile").filter(|p| p.is_object()) else {
        return;
    };
    let kind = text(profile, "type");
    match kind {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errors.required(
            &at.child("type"),
            "type is required when seccompProfile is set",
        ),
        other => errors.not_supported(
            &at.child("type"),
            &Value::from(other),
            &["Localhost", "RuntimeDefault", "Unconfined"],
        ),
    }
    let local = profile.get("localhostProfile").filter(|p| !p.is_null());
    let local_at = at.child("localhostProfile");
    match (kind, local) {
        ("Localhost", None) => {
            errors.required(&local_at, "must be set when seccomp type is Localhost");
        }
        ("Localhost", Some(path)) => {
            local_descending_path(path.as_str().unwrap_or(""), &local_at, errors);
        }
        (_, Some(_)) => {
            let (go, json) = go_value::render(&SECCOMP_PROFILE, profile, errors.release());
            errors.invalid(
                &local_at,
                Shown::Go(&go, &json),
                "can only be set when seccomp type is Localhost",
            );
        }
        (_, None) => {}
    }
}

/// `validateLocalDescendingPath`: relative, without `..`.
pub(super) fn local_descending_path(path: &str, at: &FieldPath, errors: &mut Errors) {
    if path.starts_with('/') {
        errors.invalid(
            at,
            Shown::Plain(&Value::from(path)),
            "must be a relative path",
        );
    }
    if path.split('/').any(|part| part == "..") {
        errors.invalid(
            at,
            Shown::Plain(&Value::from(path)),
            "must not contain '..'",
        );
    }
}

/// `ValidateAppArmorProfileField` of `holder.appArmorProfile`, reported at `at`.
fn apparmor_profile(holder: &Value, at: &FieldPath, errors: &mut Errors) {
    const MAX_PROFILE: usize = 4095;
    let Some(profile) = holder.get("appArmorProfile").filter(|p| p.is_object()) else {
        return;
    };
    let local = profile.get("localhostProfile").filter(|p| !p.is_null());
    let local_at = at.child("localhostProfile");
    match text(profile, "type") {
        "Localhost" => match local.and_then(Value::as_str) {
            None => errors.required(&local_at, "must be set when AppArmor type is Localhost"),
            Some(name) => {
                if name.trim() != name {
                    let detail = "must not be padded with whitespace";
                    errors.invalid(&local_at, Shown::Plain(&Value::from(name)), detail);
                } else if name.is_empty() {
                    errors.required(&local_at, "must be set when AppArmor type is Localhost");
                }
                if name.len() > MAX_PROFILE {
                    errors.too_long(&local_at, MAX_PROFILE);
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(local) = local {
                let detail = "can only be set when AppArmor type is Localhost";
                errors.invalid(&local_at, Shown::Plain(local), detail);
            }
        }
        "" => errors.required(
            &at.child("type"),
            "type is required when appArmorProfile is set",
        ),
        other => errors.not_supported(
            &at.child("type"),
            &Value::from(other),
            &["Localhost", "RuntimeDefault", "Unconfined"],
        ),
    }
}

/// `ValidateNodeSelector`: at least one term, each term's requirements (their values label
/// values from the 1.34 read); on a NodeSelector (a pod's required node affinity).
pub(super) fn node_selector(selector: &Value, at: &FieldPath, errors: &mut Errors) {
    let terms_at = at.child("nodeSelectorTerms");
    let terms = items(selector, "nodeSelectorTerms");
    if terms.is_empty() {
        errors.required(&terms_at, "must have at least one node selector term");
        return;
    }
    let values = errors.release() >= NEWER_CHECKS_SINCE;
    for (i, term) in terms.iter().enumerate() {
        node_selector_term(term, values, &terms_at.index(i), errors);
    }
}

/// `ValidatePreferredSchedulingTerms` for one term: a weight of 1 to 100 and the preference
/// (whose values are never checked); on a PreferredSchedulingTerm.
pub(super) fn preferred_scheduling_term(term: &Value, at: &FieldPath, errors: &mut Errors) {
    weight(term, at, errors);
    let preference = term.get("preference").unwrap_or(&Value::Null);
    node_selector_term(preference, false, &at.child("preference"), errors);
}

/// A weighted pod affinity term's weight (`validateWeightedPodAffinityTerms`).
pub(super) fn weight(term: &Value, at: &FieldPath, errors: &mut Errors) {
    let weight = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=100).contains(&weight) {
        errors.invalid(
            &at.child("weight"),
            Shown::Plain(&Value::from(weight)),
            WEIGHT_RANGE,
        );
    }
}

/// `ValidateNodeSelectorTerm`: label requirements, then field requirements.
fn node_selector_term(term: &Value, values: bool, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    for (j, requirement) in items(term, "matchExpressions").iter().enumerate() {
        let item = at.child("matchExpressions").index(j);
        let count = items(requirement, "values").len();
        match text(requirement, "operator") {
            "In" | "NotIn" if count == 0 => errors.required(
                &item.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            "Exists" | "DoesNotExist" if count > 0 => errors.forbidden(
                &item.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            "Gt" | "Lt" if count != 1 => errors.required(
                &item.child("values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => errors.invalid(
                &item.child("operator"),
                Shown::Plain(&Value::from(other)),
                "not a valid selector operator",
            ),
        }
        let key = text(requirement, "key");
        for message in Format::QualifiedName.messages(key, release) {
            errors.invalid(
                &item.child("key"),
                Shown::Plain(&Value::from(key)),
                &message,
            );
        }
        if values {
            for (k, value) in items(requirement, "values").iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                for message in Format::LabelValue.messages(value, release) {
                    let path = item.child("values").index(k);
                    errors.invalid(&path, Shown::Plain(&Value::from(value)), &message);
                }
            }
        }
    }
    for (j, requirement) in items(term, "matchFields").iter().enumerate() {
        let item = at.child("matchFields").index(j);
        match text(requirement, "operator") {
            "In" | "NotIn" => {
                if items(requirement, "values").len() != 1 {
                    errors.required(
                        &item.child("values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    );
                }
            }
            other => errors.invalid(
                &item.child("operator"),
                Shown::Plain(&Value::from(other)),
                "not a valid selector operator",
            ),
        }
        let key = text(requirement, "key");
        if key != "metadata.name" {
            let detail = "not a valid field selector key";
            errors.invalid(&item.child("key"), Shown::Plain(&Value::from(key)), detail);
            continue;
        }
        for (k, value) in items(requirement, "values").iter().enumerate() {
            let value = value.as_str().unwrap_or("");
            for message in Format::DnsSubdomain.messages(value, release) {
                let path = item.child("values").index(k);
                errors.invalid(&path, Shown::Plain(&Value::from(value)), &message);
            }
        }
    }
}

/// `validatePodAffinityTerm` after its selectors (each `LabelSelector` has its own check): the
/// namespaces' names (reported at `namespace`, as upstream does) and the topology key; on a
/// PodAffinityTerm.
/// The first release with a pod affinity term's `matchLabelKeys` and `mismatchLabelKeys`
/// (MatchLabelKeysInPodAffinity, on by default from 1.31).
const AFFINITY_LABEL_KEYS_SINCE: KubeVersion = KubeVersion::new(1, 31);

/// `validateMatchLabelKeysAndMismatchLabelKeys`: the keys only beside a label selector and
/// label names; a `matchLabelKeys` key the selector names both in `matchLabels` and in
/// `matchExpressions` (where the pod's strategy put it), reported at upstream's
/// `<term>[<i>]`; no key in both lists.
fn affinity_label_keys(term: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let selector = term.get("labelSelector").filter(|s| !s.is_null());
    let keys = |field: &str| -> Vec<&str> {
        items(term, field)
            .iter()
            .map(|k| k.as_str().unwrap_or(""))
            .collect()
    };
    let (matching, mismatching) = (keys("matchLabelKeys"), keys("mismatchLabelKeys"));
    for (field, list) in [
        ("matchLabelKeys", &matching),
        ("mismatchLabelKeys", &mismatching),
    ] {
        if list.is_empty() {
            continue;
        }
        let list_at = at.child(field);
        if selector.is_none() {
            errors.forbidden(
                &list_at,
                "must not be specified when labelSelector is not set",
            );
            continue;
        }
        for (i, key) in list.iter().enumerate() {
            for message in Format::QualifiedName.messages(key, release) {
                errors.invalid(
                    &list_at.index(i),
                    Shown::Plain(&Value::from(*key)),
                    &message,
                );
            }
        }
    }
    if let Some(selector) = selector {
        let mut named: Vec<&str> = map_keys(selector, "matchLabels").collect();
        for expression in items(selector, "matchExpressions") {
            let key = text(expression, "key");
            // The last index of the key, as upstream's map of them keeps.
            let index = matching.iter().rposition(|k| *k == key);
            if let Some(i) = index
                && named.contains(&key)
            {
                let detail = "exists in both matchLabelKeys and labelSelector";
                errors.invalid(&at.index(i), Shown::Plain(&Value::from(key)), detail);
            }
            named.push(key);
        }
    }
    for (i, key) in matching.iter().enumerate() {
        if mismatching.contains(key) {
            let path = at.child("matchLabelKeys").index(i);
            let detail = "exists in both matchLabelKeys and mismatchLabelKeys";
            errors.invalid(&path, Shown::Plain(&Value::from(*key)), detail);
        }
    }
}

pub(super) fn pod_affinity_term(term: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    for name in items(term, "namespaces") {
        let name = name.as_str().unwrap_or("");
        for message in Format::DnsLabel.messages(name, release) {
            errors.invalid(
                &at.child("namespace"),
                Shown::Plain(&Value::from(name)),
                &message,
            );
        }
    }
    if release >= AFFINITY_LABEL_KEYS_SINCE {
        affinity_label_keys(term, at, errors);
    }
    let key = text(term, "topologyKey");
    let key_at = at.child("topologyKey");
    if key.is_empty() {
        errors.required(&key_at, "can not be empty");
    }
    for message in Format::QualifiedName.messages(key, release) {
        errors.invalid(&key_at, Shown::Plain(&Value::from(key)), &message);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::lines;
    use super::*;

    /// A pod security context checked as on a create.
    fn new_pod_security_context(sc: &Value, at: &FieldPath, errors: &mut Errors) {
        pod_security_context(sc, None, at, errors);
    }

    fn run(rule: fn(&Value, &FieldPath, &mut Errors), value: &Value, minor: u16) -> Vec<String> {
        lines(minor, |e| rule(value, &FieldPath::of("sc"), e))
    }

    #[test]
    fn se_linux_change_policies_are_recursive_unless_they_were_not() {
        // validateSELinuxChangePolicy, useOnlyRecursiveSELinuxChangePolicy (SELinuxChangePolicy
        // on from 1.33, SELinuxMount off).
        let sc = json!({"seLinuxChangePolicy": "MountOption"});
        let run = |minor, old: Option<&Value>| {
            lines(minor, |e| {
                pod_security_context(&sc, old, &FieldPath::of("sc"), e)
            })
        };
        assert_eq!(
            run(34, None),
            [
                "sc.seLinuxChangePolicy: Unsupported value: \"MountOption\": supported values: \"Recursive\""
            ]
        );
        assert!(run(34, Some(&sc)).is_empty());
        assert!(run(28, None).is_empty());
    }

    #[test]
    fn affinity_label_keys_need_a_selector_and_differ() {
        // validateMatchLabelKeysAndMismatchLabelKeys (MatchLabelKeysInPodAffinity, from 1.31).
        let term = json!({"topologyKey": "zone",
            "labelSelector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
            "matchLabelKeys": ["app", "Bad Key"], "mismatchLabelKeys": ["Bad Key"]});
        let found = run(pod_affinity_term, &term, 34);
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].starts_with(
            "sc.matchLabelKeys[1]: Invalid value: \"Bad Key\": name part must consist of"
        ));
        assert!(found[1].starts_with("sc.mismatchLabelKeys[0]: Invalid value: \"Bad Key\""));
        assert_eq!(
            found[2..],
            [
                "sc[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector",
                "sc.matchLabelKeys[1]: Invalid value: \"Bad Key\": exists in both matchLabelKeys and mismatchLabelKeys",
            ]
        );
        let bare = json!({"topologyKey": "zone", "mismatchLabelKeys": ["app"]});
        assert_eq!(
            run(pod_affinity_term, &bare, 36),
            [
                "sc.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set"
            ]
        );
        assert!(run(pod_affinity_term, &bare, 28).is_empty());
    }

    #[test]
    fn privileged_containers_follow_the_cluster_policy() {
        // ValidateSecurityContext: `capabilities.Get().AllowPrivileged`, the API server's
        // `--allow-privileged`.
        let sc = json!({"privileged": true});
        assert_eq!(run(security_context, &sc, 34), Vec::<String>::new());
        let mut errors = Errors::new(KubeVersion::new(1, 34)).allowing_privileged(false);
        security_context(&sc, &FieldPath::of("sc"), &mut errors);
        let causes = errors.into_causes();
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field.as_deref(), Some("sc.privileged"));
        assert_eq!(
            causes[0].message.as_deref(),
            Some("Forbidden: disallowed by cluster policy")
        );
    }

    #[test]
    fn privileged_containers_may_escalate() {
        // ValidateSecurityContext: the struct prints as Go before 1.34 and as JSON after.
        let sc = json!({"privileged": true, "allowPrivilegeEscalation": false});
        let found = run(security_context, &sc, 28);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("sc: Invalid value: core.SecurityContext{Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0xc000000000),"),
            "{found:?}"
        );
        assert!(found[0].ends_with(
            ": cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
        ));
        let found = run(security_context, &sc, 34);
        assert!(
            found[0].starts_with("sc: Invalid value: {\"Capabilities\":null,\"Privileged\":true,"),
            "{found:?}"
        );
        let admin =
            json!({"allowPrivilegeEscalation": false, "capabilities": {"add": ["CAP_SYS_ADMIN"]}});
        assert!(run(security_context, &admin, 34)[0].ends_with("`capabilities.Add` CAP_SYS_ADMIN"));
    }

    #[test]
    fn seccomp_profiles_name_a_type_and_a_local_path() {
        // validateSeccompProfileField, validateLocalDescendingPath.
        let sc = json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "/etc/../x"}});
        assert_eq!(
            run(security_context, &sc, 20),
            [
                "sc.seccompProfile.localhostProfile: Invalid value: \"/etc/../x\": must be a relative path",
                "sc.seccompProfile.localhostProfile: Invalid value: \"/etc/../x\": must not contain '..'",
            ]
        );
        let none = json!({"seccompProfile": {}});
        assert_eq!(
            run(new_pod_security_context, &none, 34),
            ["sc.seccompProfile.type: Required value: type is required when seccompProfile is set"]
        );
        let stray = json!({"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x"}});
        assert_eq!(
            run(security_context, &stray, 28),
            [
                "sc.seccompProfile.localhostProfile: Invalid value: core.SeccompProfile{Type:\"RuntimeDefault\", LocalhostProfile:(*string)(0xc000000000)}: can only be set when seccomp type is Localhost"
            ]
        );
    }

    #[test]
    fn sysctls_are_named_once() {
        // validateSysctls: 1.20's regex has no slashes and no anchors.
        let sc = json!({"sysctls": [{"name": "net.core.somaxconn"}, {"name": "net/core"}, {"name": "net.core.somaxconn"}, {"name": ""}]});
        assert_eq!(
            run(new_pod_security_context, &sc, 20),
            [
                "sc.sysctls[1].name: Invalid value: \"net/core\": must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?\\.)*[a-z0-9]([-_a-z0-9]*[a-z0-9])?",
                "sc.sysctls[2].name: Duplicate value: \"net.core.somaxconn\"",
                "sc.sysctls[3].name: Required value",
            ]
        );
        assert_eq!(run(new_pod_security_context, &sc, 34).len(), 2);
    }

    #[test]
    fn host_namespaces_exclude_namespaced_sysctls() {
        // ValidateHostSysctl (1.34 read), the shared process namespace.
        let spec = json!({"hostNetwork": true, "hostPID": true, "shareProcessNamespace": true,
            "securityContext": {"sysctls": [{"name": "net.ipv4.ip_forward"}]}});
        assert_eq!(
            lines(34, |e| pod_host_namespaces(
                &spec,
                &FieldPath::of("spec"),
                e
            )),
            [
                "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
                "spec.securityContext.sysctls[0].name: Invalid value: \"net.ipv4.ip_forward\": may not be specified when 'hostNetwork' is true",
            ]
        );
        assert_eq!(
            lines(28, |e| pod_host_namespaces(
                &spec,
                &FieldPath::of("spec"),
                e
            ))
            .len(),
            1
        );
    }

    #[test]
    fn node_selectors_need_terms_and_valid_requirements() {
        // ValidateNodeSelector, ValidateNodeSelectorRequirement, ValidateNodeFieldSelectorRequirement.
        assert_eq!(
            run(node_selector, &json!({"nodeSelectorTerms": []}), 28),
            ["sc.nodeSelectorTerms: Required value: must have at least one node selector term"]
        );
        let selector = json!({"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "zone", "operator": "In"}, {"key": "n", "operator": "Gt", "values": ["1", "2"]}, {"key": "k", "operator": "Near"}],
            "matchFields": [{"key": "spec.nodeName", "operator": "In", "values": ["a"]}]
        }]});
        assert_eq!(
            run(node_selector, &selector, 34),
            [
                "sc.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "sc.nodeSelectorTerms[0].matchExpressions[1].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                "sc.nodeSelectorTerms[0].matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator",
                "sc.nodeSelectorTerms[0].matchFields[0].key: Invalid value: \"spec.nodeName\": not a valid field selector key",
            ]
        );
    }

    #[test]
    fn affinity_terms_need_a_topology_key_and_weights_in_range() {
        // validatePodAffinityTerm, validateWeightedPodAffinityTerms.
        let found = run(pod_affinity_term, &json!({"namespaces": ["Bad"]}), 34);
        assert_eq!(
            found[0].split(": ").take(2).collect::<Vec<_>>(),
            ["sc.namespace", "Invalid value"]
        );
        assert!(found.contains(&"sc.topologyKey: Required value: can not be empty".to_owned()));
        assert_eq!(
            run(weight, &json!({"weight": 101}), 28),
            ["sc.weight: Invalid value: 101: must be in the range 1-100"]
        );
    }
}
