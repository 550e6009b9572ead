//! A pod's Windows settings, as `pkg/apis/core/validation` checks them:
//! `validateWindowsSecurityContextOptions` (a pod's or container's `windowsOptions`: the GMSA
//! credential spec and its name, the user to run as) and `validateWindowsHostProcessPod`
//! (HostProcess containers all or none, on the host's network, allowed by the cluster).
//!
//! Read at 1.20, 1.28 and 1.34 (the options' checks alike in each; `hostProcess` from 1.22,
//! WindowsHostProcessContainers on by default from 1.23). Also what a pod's `spec.os` forbids
//! (`validateOS`, `validateLinux`, `validateWindows`: Windows options on a Linux pod, Linux
//! security settings and host namespaces on a Windows one), read at 1.35.

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::{items, present};
use crate::KubeVersion;

/// `maxGMSACredentialSpecLengthInKiB`.
const MAX_CREDENTIAL_SPEC_KIB: usize = 64;
/// `maxRunAsUserNameDomainLength` and `maxRunAsUserNameUserLength`, in bytes.
const MAX_DOMAIN_LENGTH: usize = 256;
const MAX_USER_LENGTH: usize = 104;
/// What a NetBIOS domain (`validNetBiosRegex`) and a user name (`invalidUserNameCharsRegex`)
/// may not contain.
const NETBIOS_FORBIDDEN: &[char] = &['\\', '/', ':', '*', '?', '"', '<', '>', '|'];
const USER_FORBIDDEN: &[char] = &[
    '"', '/', '\\', ':', ';', '|', '=', ',', '+', '*', '?', '<', '>', '@', '[', ']',
];
/// The first release with `hostProcess` on by default (WindowsHostProcessContainers beta).
const HOST_PROCESS_SINCE: KubeVersion = KubeVersion::new(1, 23);

/// `validateWindowsSecurityContextOptions` of `holder.windowsOptions`, reported at `at` (the
/// options' path).
pub(super) fn windows_options(holder: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(options) = holder.get("windowsOptions").filter(|o| o.is_object()) else {
        return;
    };
    let release = errors.release();
    if let Some(name) = options
        .get("gmsaCredentialSpecName")
        .and_then(Value::as_str)
    {
        for message in Format::DnsSubdomain.messages(name, release) {
            let path = at.child("gmsaCredentialSpecName");
            errors.invalid(&path, Shown::Plain(&Value::from(name)), &message);
        }
    }
    if let Some(spec) = options.get("gmsaCredentialSpec").and_then(Value::as_str) {
        let path = at.child("gmsaCredentialSpec");
        let shown = Value::from(spec);
        if spec.is_empty() {
            let detail = "gmsaCredentialSpec cannot be an empty string";
            errors.invalid(&path, Shown::Plain(&shown), detail);
        } else if spec.len() > MAX_CREDENTIAL_SPEC_KIB * 1024 {
            let detail =
                format!("gmsaCredentialSpec size must be under {MAX_CREDENTIAL_SPEC_KIB} KiB");
            errors.invalid(&path, Shown::Plain(&shown), &detail);
        }
    }
    if let Some(name) = options.get("runAsUserName").and_then(Value::as_str) {
        for detail in user_name_problems(name) {
            let path = at.child("runAsUserName");
            errors.invalid(&path, Shown::Plain(&Value::from(name)), &detail);
        }
    }
}

/// IdentifyPodOS on by default (beta) from 1.24; 1.20's strategy drops `os`.
const POD_OS_SINCE: KubeVersion = KubeVersion::new(1, 24);
/// The release from which a Windows pod may not ask for the host's PID, IPC or user
/// namespaces (the first release kapi serves read with those checks).
const WINDOWS_HOST_NAMESPACES_SINCE: KubeVersion = KubeVersion::new(1, 34);

/// The pod security context's fields a Windows pod may not set (`validateWindows`), in its
/// order, under `spec.securityContext`.
const WINDOWS_POD_FORBIDDEN: &[&str] = &[
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "fsGroup",
    "fsGroupChangePolicy",
    "sysctls",
];
/// The same, after `shareProcessNamespace` (which the internal security context holds).
const WINDOWS_POD_FORBIDDEN_AFTER: &[&str] = &[
    "runAsUser",
    "runAsGroup",
    "supplementalGroups",
    "supplementalGroupsPolicy",
    "seLinuxChangePolicy",
];
/// A container security context's fields a Windows pod may not set, in upstream's order.
const WINDOWS_CONTAINER_FORBIDDEN: &[&str] = &[
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
];

/// `validateOS` and what the named OS forbids; on the PodSpec.
pub(super) fn pod_os(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    if release < POD_OS_SINCE {
        return;
    }
    let Some(os) = spec.get("os").filter(|os| os.is_object()) else {
        return;
    };
    let name = os.get("name").and_then(Value::as_str).unwrap_or("");
    match name {
        "" => errors.required(&at.child("os").child("name"), "cannot be empty"),
        "linux" => linux(spec, at, errors),
        "windows" => windows(spec, at, errors),
        other => errors.not_supported(&at.child("os"), &Value::from(other), &["linux", "windows"]),
    }
}

/// The containers of every kind with their paths, as `VisitContainersWithPath` walks them.
fn containers<'v>(spec: &'v Value, at: &FieldPath) -> Vec<(FieldPath, &'v Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(|list| {
            items(spec, list)
                .iter()
                .enumerate()
                .map(move |(i, c)| (at.child(list).index(i), c))
        })
        .collect()
}

/// `validateLinux`: no Windows options, on the pod or a container.
fn linux(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    const DETAIL: &str = "windows options cannot be set for a linux pod";
    let context = at.child("securityContext");
    if spec
        .get("securityContext")
        .and_then(|c| present(c, "windowsOptions"))
        .is_some()
    {
        errors.forbidden(&context.child("windowsOptions"), DETAIL);
    }
    for (path, container) in containers(spec, at) {
        if container
            .get("securityContext")
            .and_then(|c| present(c, "windowsOptions"))
            .is_some()
        {
            let path = path.child("securityContext").child("windowsOptions");
            errors.forbidden(&path, DETAIL);
        }
    }
}

/// `validateWindows`: none of the Linux settings of the pod's or a container's security
/// context, nor (from 1.34) the host's namespaces.
fn windows(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    const DETAIL: &str = "cannot be set for a windows pod";
    let null = Value::Null;
    let context = spec.get("securityContext").unwrap_or(&null);
    let context_at = at.child("securityContext");
    let forbid_in = |fields: &[&str], errors: &mut Errors| {
        for field in fields {
            let given = match present(context, field) {
                Some(Value::Array(items)) if *field == "sysctls" => !items.is_empty(),
                other => other.is_some(),
            };
            if given {
                errors.forbidden(&context_at.child(field), DETAIL);
            }
        }
    };
    forbid_in(&WINDOWS_POD_FORBIDDEN[..2], errors);
    if errors.release() >= WINDOWS_HOST_NAMESPACES_SINCE {
        if present(spec, "hostUsers").is_some() {
            errors.forbidden(&at.child("hostUsers"), DETAIL);
        }
        for field in ["hostPID", "hostIPC"] {
            if spec.get(field).and_then(Value::as_bool) == Some(true) {
                errors.forbidden(&at.child(field), DETAIL);
            }
        }
    }
    forbid_in(&WINDOWS_POD_FORBIDDEN[2..], errors);
    if present(spec, "shareProcessNamespace").is_some() {
        errors.forbidden(&at.child("shareProcessNamespace"), DETAIL);
    }
    forbid_in(WINDOWS_POD_FORBIDDEN_AFTER, errors);
    for (path, container) in containers(spec, at) {
        let Some(context) = container.get("securityContext").filter(|c| c.is_object()) else {
            continue;
        };
        for field in WINDOWS_CONTAINER_FORBIDDEN {
            if present(context, field).is_some() {
                errors.forbidden(&path.child("securityContext").child(field), DETAIL);
            }
        }
    }
}

/// What upstream says of a `runAsUserName`: `DOMAIN\USER` or `USER`, the domain a NetBIOS or
/// DNS name, the user neither empty, too long, only dots and spaces nor with reserved
/// characters.
fn user_name_problems(name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec!["runAsUserName cannot be an empty string".to_owned()];
    }
    // Go's `[[:cntrl:]]`: the ASCII control characters.
    if name.chars().any(|c| c.is_ascii_control()) {
        return vec!["runAsUserName cannot contain control characters".to_owned()];
    }
    let parts: Vec<&str> = name.split('\\').collect();
    let (domain, user) = match parts.as_slice() {
        [user] => (None, *user),
        [domain, user] => (Some(*domain), *user),
        _ => return vec!["runAsUserName cannot contain more than one backslash".to_owned()],
    };
    let mut problems = Vec::new();
    if domain.is_some_and(|d| d.len() >= MAX_DOMAIN_LENGTH) {
        problems.push(format!(
            "runAsUserName's Domain length must be under {MAX_DOMAIN_LENGTH} characters"
        ));
    }
    if let Some(domain) = domain
        && !(is_netbios_domain(domain) || is_dns_domain(domain))
    {
        problems
            .push("runAsUserName's Domain doesn't match the NetBios nor the DNS format".to_owned());
    }
    if user.is_empty() {
        problems.push("runAsUserName's User cannot be empty".to_owned());
    } else if user.len() > MAX_USER_LENGTH {
        problems.push(format!(
            "runAsUserName's User length must not be longer than {MAX_USER_LENGTH} characters"
        ));
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        problems.push("runAsUserName's User cannot contain only periods or spaces".to_owned());
    }
    if user.contains(USER_FORBIDDEN) {
        problems.push(
            "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]"
                .to_owned(),
        );
    }
    problems
}

/// `validNetBiosRegex`: 1 to 15 characters, none reserved, not starting with a dot.
fn is_netbios_domain(domain: &str) -> bool {
    let count = domain.chars().count();
    (1..=15).contains(&count) && !domain.starts_with('.') && !domain.contains(NETBIOS_FORBIDDEN)
}

/// `validWindowsUserDomainDNSRegex`: dot-separated labels of letters, digits and inner dashes,
/// each at most 63 characters.
fn is_dns_domain(domain: &str) -> bool {
    domain.split('.').all(|label| {
        let bytes = label.as_bytes();
        (1..=63).contains(&bytes.len())
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
    })
}

/// `validateWindowsHostProcessPod`, on a PodSpec: a container's `hostProcess` as the pod's when
/// both say, and once any container is a HostProcess one (by its own setting or the pod's),
/// every container is, the pod is on the host's network and the cluster allows privileged
/// containers.
pub(super) fn windows_host_process(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    if errors.release() < HOST_PROCESS_SINCE {
        return;
    }
    let host_process = |holder: &Value| {
        holder
            .pointer("/securityContext/windowsOptions/hostProcess")
            .and_then(Value::as_bool)
    };
    let pod = host_process(spec);
    let (mut containers, mut host_processes) = (0, 0);
    // `VisitContainersWithPath`: init containers, then containers, then ephemeral ones.
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, container) in items(spec, list).iter().enumerate() {
            containers += 1;
            let own = host_process(container);
            if let (Some(pod), Some(own)) = (pod, own)
                && pod != own
            {
                let path = at
                    .child(list)
                    .index(i)
                    .join(".securityContext.windowsOptions.hostProcess");
                let detail = format!(
                    "pod hostProcess value must be identical if both are specified, was {pod}"
                );
                errors.invalid(&path, Shown::Plain(&Value::Bool(own)), &detail);
            }
            if own.or(pod) == Some(true) {
                host_processes += 1;
            }
        }
    }
    if host_processes == 0 {
        return;
    }
    if host_processes != containers {
        errors.invalid(
            at,
            Shown::Plain(&Value::from("")),
            "If pod contains any hostProcess containers then all containers must be HostProcess containers",
        );
    }
    if spec.get("hostNetwork").and_then(Value::as_bool) != Some(true) {
        errors.invalid(
            &at.child("hostNetwork"),
            Shown::Plain(&Value::Bool(false)),
            "hostNetwork must be true if pod contains any hostProcess containers",
        );
    }
    if !errors.privileged_allowed() {
        errors.forbidden(
            at,
            "hostProcess containers are disallowed by cluster policy",
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{lines, rendered};
    use super::*;

    #[test]
    fn a_pods_os_forbids_the_other_systems_settings() {
        // validateOS, validateLinux, validateWindows (pkg/apis/core/validation).
        let spec = |os: &str| {
            json!({
                "os": {"name": os},
                "hostPID": true,
                "securityContext": {"runAsUser": 1, "sysctls": [], "seccompProfile": {"type": "RuntimeDefault"},
                                    "windowsOptions": {"runAsUserName": "ContainerUser"}},
                "containers": [{"name": "a", "securityContext": {"privileged": false,
                    "windowsOptions": {"runAsUserName": "ContainerUser"}}}],
                "initContainers": [{"name": "i", "securityContext": {"capabilities": {}}}],
            })
        };
        let run = |os: &str, minor| lines(minor, |e| pod_os(&spec(os), &FieldPath::of("spec"), e));
        assert_eq!(
            run("linux", 34),
            [
                "spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
                "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
            ]
        );
        assert_eq!(
            run("windows", 34),
            [
                "spec.hostPID: Forbidden: cannot be set for a windows pod",
                "spec.securityContext.seccompProfile: Forbidden: cannot be set for a windows pod",
                "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
                "spec.initContainers[0].securityContext.capabilities: Forbidden: cannot be set for a windows pod",
                "spec.containers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
            ]
        );
        // The host namespaces are checked from 1.34, `os` not at all in 1.20.
        assert_eq!(run("windows", 28).len(), 4);
        assert!(run("windows", 20).is_empty());
        assert_eq!(
            run("plan9", 28),
            ["spec.os: Unsupported value: \"plan9\": supported values: \"linux\", \"windows\""]
        );
        assert_eq!(
            run("", 28),
            ["spec.os.name: Required value: cannot be empty"]
        );
    }

    #[test]
    fn run_as_user_names_are_windows_accounts() {
        // validateWindowsSecurityContextOptions.
        let sc = json!({"windowsOptions": {"gmsaCredentialSpecName": "Bad_Name", "gmsaCredentialSpec": "",
            "runAsUserName": "bad|domain\\user?"}});
        let found = lines(28, |e| {
            windows_options(&sc, &FieldPath::of("sc.windowsOptions"), e)
        });
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].starts_with("sc.windowsOptions.gmsaCredentialSpecName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
        assert_eq!(
            found[1..],
            [
                "sc.windowsOptions.gmsaCredentialSpec: Invalid value: \"\": gmsaCredentialSpec cannot be an empty string",
                "sc.windowsOptions.runAsUserName: Invalid value: \"bad|domain\\\\user?\": runAsUserName's Domain doesn't match the NetBios nor the DNS format",
                "sc.windowsOptions.runAsUserName: Invalid value: \"bad|domain\\\\user?\": runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]",
            ]
        );
        assert_eq!(
            user_name_problems("a\\b\\c"),
            ["runAsUserName cannot contain more than one backslash"]
        );
        assert_eq!(
            user_name_problems("CONTOSO\\..."),
            ["runAsUserName's User cannot contain only periods or spaces"]
        );
        assert!(user_name_problems("corp.example.com\\svc").is_empty());
        assert!(user_name_problems("NT AUTHORITY\\NETWORK SERVICE").is_empty());
    }

    #[test]
    fn host_process_pods_are_all_host_process_on_the_host_network() {
        // validateWindowsHostProcessPod.
        let spec = json!({"securityContext": {"windowsOptions": {"hostProcess": true}},
            "initContainers": [{"name": "i", "securityContext": {"windowsOptions": {"hostProcess": false}}}],
            "containers": [{"name": "c"}]});
        let run = |minor, allowed| {
            let mut errors = Errors::new(KubeVersion::new(1, minor)).allowing_privileged(allowed);
            windows_host_process(&spec, &FieldPath::of("spec"), &mut errors);
            rendered(errors)
        };
        assert_eq!(
            run(34, false),
            [
                "spec.initContainers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true",
                "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
                "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
                "spec: Forbidden: hostProcess containers are disallowed by cluster policy",
            ]
        );
        assert_eq!(run(28, true).len(), 3);
        assert!(run(20, true).is_empty());
    }
}
