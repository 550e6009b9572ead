//! The pod rules that are code (`pkg/apis/core/validation/validation.go`): a pod's volumes
//! (`ValidateVolumes`: a single source each, `validateVolumeSource`), volume mounts that name a volume (`ValidateVolumeMounts`),
//! resource requirements (`ValidateResourceRequirements`), one handler per probe or lifecycle
//! hook (`validateHandler`) and the probes whose success threshold is 1.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::super::meta::labels;
use super::go_value;
use super::{items, port_number, text};
use crate::KubeVersion;
use crate::quantity::Quantity;

/// A volume's sources in upstream's order (`validateVolumeSource`): the JSON field, the path
/// upstream reports a second source at (two differ from the JSON name, `downwarAPI` being
/// upstream's spelling), and the first release that counts it.
const VOLUME_SOURCES: &[(&str, &str, Option<KubeVersion>)] = &[
    ("emptyDir", "emptyDir", None),
    ("hostPath", "hostPath", None),
    ("gitRepo", "gitRepo", None),
    ("gcePersistentDisk", "gcePersistentDisk", None),
    ("awsElasticBlockStore", "awsElasticBlockStore", None),
    ("secret", "secret", None),
    ("nfs", "nfs", None),
    ("iscsi", "iscsi", None),
    ("glusterfs", "glusterfs", None),
    ("flocker", "flocker", None),
    ("persistentVolumeClaim", "persistentVolumeClaim", None),
    ("rbd", "rbd", None),
    ("cinder", "cinder", None),
    ("cephfs", "cephFS", None),
    ("quobyte", "quobyte", None),
    ("downwardAPI", "downwarAPI", None),
    ("fc", "fc", None),
    ("flexVolume", "flexVolume", None),
    ("configMap", "configMap", None),
    ("azureFile", "azureFile", None),
    ("vsphereVolume", "vsphereVolume", None),
    ("photonPersistentDisk", "photonPersistentDisk", None),
    ("portworxVolume", "portworxVolume", None),
    ("azureDisk", "azureDisk", None),
    ("storageos", "storageos", None),
    ("projected", "projected", None),
    ("scaleIO", "scaleIO", None),
    ("csi", "csi", None),
    // GenericEphemeralVolume, beta and on by default from 1.21 (the field is dropped before).
    ("ephemeral", "ephemeral", Some(KubeVersion::new(1, 21))),
    // The ImageVolume feature, on by default from 1.35 (the field is dropped before).
    ("image", "image", Some(KubeVersion::new(1, 35))),
];

/// A handler's actions in upstream's order (`validateHandler`), and the first release that
/// counts each (gRPC probes from 1.24, the sleep hook from 1.30, both when on by default).
const HANDLERS: &[(&str, &str, Option<KubeVersion>)] = &[
    ("exec", "exec", None),
    ("httpGet", "httpGet", None),
    ("tcpSocket", "tcpSocket", None),
    ("grpc", "grpc", Some(KubeVersion::new(1, 24))),
    ("sleep", "sleep", Some(KubeVersion::new(1, 30))),
];

/// The release from which the requests-above-limits message names the limit ("of 1").
const LIMIT_SHOWN_SINCE: KubeVersion = KubeVersion::new(1, 27);

/// The fields a volume source must set (`validateHostPathVolumeSource`,
/// `validateSecretVolumeSource`, `validateNFSVolumeSource`, ...), checked on the one source
/// counted; and the sources whose `defaultMode` is a file mode.
const SOURCE_REQUIRES: &[(&str, &[&str])] = &[
    ("hostPath", &["path"]),
    ("secret", &["secretName"]),
    ("nfs", &["server", "path"]),
    ("persistentVolumeClaim", &["claimName"]),
    ("rbd", &["monitors", "image"]),
    ("cinder", &["volumeID"]),
    ("cephfs", &["monitors"]),
    ("flexVolume", &["driver"]),
    ("configMap", &["name"]),
    ("azureFile", &["secretName", "shareName"]),
    ("azureDisk", &["diskName", "diskURI"]),
    ("gitRepo", &["repository"]),
    ("gcePersistentDisk", &["pdName"]),
    ("awsElasticBlockStore", &["volumeID"]),
    ("iscsi", &["targetPortal"]),
    ("glusterfs", &["endpoints", "path"]),
    ("vsphereVolume", &["volumePath"]),
    ("photonPersistentDisk", &["pdID"]),
    ("portworxVolume", &["volumeID"]),
    ("scaleIO", &["gateway", "system", "volumeName"]),
];
const FILE_MODE_SOURCES: &[&str] = &["secret", "configMap"];
/// `fileModeErrorMsg`.
const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// How many of `sources` `holder` sets, reporting each after the first as upstream does and
/// checking the first with `first`.
fn count_sources(
    holder: &Value,
    sources: &[(&str, &str, Option<KubeVersion>)],
    noun: &str,
    at: &FieldPath,
    errors: &mut Errors,
    first: impl Fn(&str, &Value, &FieldPath, &mut Errors),
) -> usize {
    let release = errors.release();
    let mut count = 0;
    for (field, shown, since) in sources {
        let Some(source) = holder.get(*field).filter(|v| !v.is_null()) else {
            continue;
        };
        if since.is_some_and(|since| release < since) {
            continue;
        }
        if count > 0 {
            let detail = format!("may not specify more than 1 {noun} type");
            errors.forbidden(&at.child(shown), &detail);
        } else {
            count += 1;
            // The one source is checked at its own name (upstream's `downwarAPI` and `cephFS`
            // spellings are only those of a second source), but a GCE disk's at
            // `persistentDisk`, as upstream reports it.
            let reported = if *field == "gcePersistentDisk" {
                "persistentDisk"
            } else {
                field
            };
            first(field, source, &at.child(reported), errors);
        }
    }
    count
}

/// A volume source's own required fields and file mode.
fn source_fields(field: &str, source: &Value, at: &FieldPath, errors: &mut Errors) {
    for (_, required) in SOURCE_REQUIRES.iter().filter(|(f, _)| *f == field) {
        for name in *required {
            // A string or a list (a Ceph cluster's monitors); Go's zero value is missing.
            let missing = match source.get(*name) {
                Some(Value::String(text)) => text.is_empty(),
                Some(Value::Array(items)) => items.is_empty(),
                Some(Value::Null) | None => true,
                Some(_) => false,
            };
            if missing {
                errors.required(&at.child(name), "");
            }
        }
    }
    match field {
        "cinder" => {
            if let Some(reference) = source.get("secretRef").filter(|r| !r.is_null())
                && text(reference, "name").is_empty()
            {
                errors.required(&at.child("secretRef").child("name"), "");
            }
        }
        "flexVolume" => flex_options(source, at, errors),
        "azureDisk" => azure_disk(source, at, errors),
        _ => super::volume_sources::source_fields(field, source, at, errors),
    }
    super::persistent_volume::source_paths(field, source, at, errors);
    if field == "hostPath" {
        super::volume_sources::host_path_type(source, at, errors);
    }
    if field == "projected" {
        projected(source, at, errors);
    }
    if field == "downwardAPI" {
        file_mode(source, "defaultMode", at, errors);
        super::downward::downward_files(source, at, errors);
    }
    if FILE_MODE_SOURCES.contains(&field) {
        file_mode(source, "defaultMode", at, errors);
        for (i, item) in items(source, "items").iter().enumerate() {
            key_to_path(item, &at.child("items").index(i), errors);
        }
    }
}

/// `validateFlexVolumeSource`: options may not use the `kubernetes.io` and `k8s.io`
/// namespaces.
fn flex_options(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(options) = source.get("options").and_then(Value::as_object) else {
        return;
    };
    for key in options.keys() {
        let namespace = key.split_once('/').map_or(key.as_str(), |(ns, _)| ns);
        let normalized = format!(".{}", namespace.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            let detail = "kubernetes.io and k8s.io namespaces are reserved";
            let path = at.child("options").key(key);
            errors.invalid(&path, Shown::Plain(&Value::from(key.as_str())), detail);
        }
    }
}

/// `validateAzureDisk` after its names: the caching mode and kind, and a disk URI of the
/// kind's shape.
fn azure_disk(source: &Value, at: &FieldPath, errors: &mut Errors) {
    if let Some(mode) = source.get("cachingMode").and_then(Value::as_str) {
        let supported = ["None", "ReadOnly", "ReadWrite"];
        if !supported.contains(&mode) {
            errors.not_supported(&at.child("cachingMode"), &Value::from(mode), &supported);
        }
    }
    let kind = source.get("kind").and_then(Value::as_str);
    if let Some(kind) = kind {
        let supported = ["Dedicated", "Managed", "Shared"];
        if !supported.contains(&kind) {
            errors.not_supported(&at.child("kind"), &Value::from(kind), &supported);
        }
    }
    let uri = text(source, "diskURI");
    let uri_at = at.child("diskURI");
    let managed = "/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}";
    let blob = "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd";
    match kind {
        Some("Managed") if !uri.starts_with("/subscriptions/") => {
            errors.not_supported(&uri_at, &Value::from(uri), &[managed]);
        }
        Some(_) if kind != Some("Managed") && !uri.starts_with("https://") => {
            errors.not_supported(&uri_at, &Value::from(uri), &[blob]);
        }
        _ => {}
    }
}

/// The first release saying a projection source holds "more than 1 volume type per source"
/// (kubernetes#125940's string cleanups, merged July 2024; the stored file read with it has
/// also the `clusterTrustBundle` path the earlier one spells `clusterTrustBundlePEM`).
const PER_SOURCE_SINCE: KubeVersion = KubeVersion::new(1, 31);

/// The release that holds a projected token's path local (the first release read with it).
const LOCAL_TOKEN_PATH_SINCE: KubeVersion = KubeVersion::new(1, 34);

/// `validateProjectedVolumeSource`: the default mode, then each source: one projection, a
/// Secret's or ConfigMap's name and items, a token's lifetime (10 minutes to 2³² seconds) and
/// path (reported at the volume's `path`, as upstream does; local from 1.34), no path twice. A downward API
/// projection's files are not checked beyond their paths being unique.
fn projected(source: &Value, at: &FieldPath, errors: &mut Errors) {
    file_mode(source, "defaultMode", at, errors);
    let mut paths: Vec<&str> = Vec::new();
    for (i, projection) in items(source, "sources").iter().enumerate() {
        let src_at = at.child("sources").index(i);
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let Some(object) = projection.get(kind).filter(|v| !v.is_null()) else {
                continue;
            };
            count += 1;
            let kind_at = src_at.child(kind);
            let name = text(object, "name");
            if name.is_empty() {
                errors.required(&kind_at.child("name"), "");
            }
            for (j, item) in items(object, "items").iter().enumerate() {
                key_to_path(item, &kind_at.child("items").index(j), errors);
                unique_path(&mut paths, text(item, "path"), name, at, errors);
            }
        }
        if let Some(api) = projection.get("downwardAPI").filter(|v| !v.is_null()) {
            count += 1;
            super::downward::downward_files(api, &src_at.child("downwardAPI"), errors);
            for file in items(api, "items") {
                let path = text(file, "path");
                unique_path(&mut paths, path, path, at, errors);
            }
        }
        if let Some(token) = projection
            .get("serviceAccountToken")
            .filter(|v| !v.is_null())
        {
            count += 1;
            let seconds = token
                .get("expirationSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let seconds_at = src_at
                .child("serviceAccountToken")
                .child("expirationSeconds");
            if seconds < 600 {
                let detail = "may not specify a duration less than 10 minutes";
                errors.invalid(&seconds_at, Shown::Plain(&Value::from(seconds)), detail);
            }
            if seconds > 1 << 32 {
                let detail = "may not specify a duration larger than 2^32 seconds";
                errors.invalid(&seconds_at, Shown::Plain(&Value::from(seconds)), detail);
            }
            let path = text(token, "path");
            if path.is_empty() {
                errors.required(&at.child("path"), "");
            } else if errors.release() >= LOCAL_TOKEN_PATH_SINCE {
                local_non_reserved_path(path, &at.child("path"), errors);
            }
        }
        if count > 1 {
            let detail = if errors.release() >= PER_SOURCE_SINCE {
                "may not specify more than 1 volume type per source"
            } else {
                "may not specify more than 1 volume type"
            };
            errors.forbidden(&src_at, detail);
        }
    }
}

/// A projected file's path, when set, taken once in the volume (the error shows `shown`: the
/// source's name, or the path of a downward API file).
fn unique_path<'v>(
    paths: &mut Vec<&'v str>,
    path: &'v str,
    shown: &str,
    at: &FieldPath,
    errors: &mut Errors,
) {
    if path.is_empty() {
        return;
    }
    if paths.contains(&path) {
        let shown = Value::from(shown);
        errors.invalid(at, Shown::Plain(&shown), "conflicting duplicate paths");
    } else {
        paths.push(path);
    }
}

/// A file mode, 0 to 0777, when set.
pub(super) fn file_mode(holder: &Value, field: &str, at: &FieldPath, errors: &mut Errors) {
    if let Some(mode) = holder.get(field).and_then(Value::as_i64)
        && !(0..=0o777).contains(&mode)
    {
        errors.invalid(
            &at.child(field),
            Shown::Plain(&Value::from(mode)),
            FILE_MODE_MSG,
        );
    }
}

/// `validateKeyToPath`: a key, and a relative path without `..` (`validateLocalNonReservedPath`)
/// and a file mode; a Secret's or ConfigMap volume's items.
fn key_to_path(item: &Value, at: &FieldPath, errors: &mut Errors) {
    if text(item, "key").is_empty() {
        errors.required(&at.child("key"), "");
    }
    let path = text(item, "path");
    let path_at = at.child("path");
    if path.is_empty() {
        errors.required(&path_at, "");
    }
    local_non_reserved_path(path, &path_at, errors);
    file_mode(item, "mode", at, errors);
}

/// `validateLocalNonReservedPath`: relative, without `..`, not starting with `..`.
pub(super) fn local_non_reserved_path(path: &str, at: &FieldPath, errors: &mut Errors) {
    super::security::local_descending_path(path, at, errors);
    if path.starts_with("..") && !path.starts_with("../") {
        let shown = Value::from(path);
        errors.invalid(at, Shown::Plain(&shown), "must not start with '..'");
    }
}

/// `validateVolumeSource`: exactly one source, with its own required fields.
fn volume_source(volume: &Value, at: &FieldPath, errors: &mut Errors) {
    if count_sources(volume, VOLUME_SOURCES, "volume", at, errors, source_fields) == 0 {
        errors.required(at, "must specify a volume type");
    }
    super::volume_sources::iscsi_volume_name(volume, at, errors);
}

/// `validateHandler`: exactly one action (on a probe or a lifecycle hook), and that action's
/// own fields.
pub(super) fn handler(holder: &Value, at: &FieldPath, errors: &mut Errors) {
    if count_sources(holder, HANDLERS, "handler", at, errors, action_fields) == 0 {
        errors.required(at, "must specify a handler type");
    }
}

/// `validateExecAction`, `validateHTTPGetAction`, `validateTCPSocketAction`,
/// `validateGRPCAction`.
fn action_fields(field: &str, action: &Value, at: &FieldPath, errors: &mut Errors) {
    match field {
        "exec"
            if action
                .get("command")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty) =>
        {
            errors.required(&at.child("command"), "");
        }
        "httpGet" => {
            if action
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                errors.required(&at.child("path"), "");
            }
            port_num_or_name(action.get("port"), &at.child("port"), errors);
            let scheme = action.get("scheme").and_then(Value::as_str).unwrap_or("");
            if !matches!(scheme, "HTTP" | "HTTPS") {
                errors.not_supported(
                    &at.child("scheme"),
                    &Value::from(scheme),
                    &["HTTP", "HTTPS"],
                );
            }
            // `IsHTTPHeaderName`, each reported at `httpHeaders` (no index), as upstream does.
            for header in items(action, "httpHeaders") {
                let name = text(header, "name");
                let valid = !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
                if !valid {
                    let message = super::super::format::regex_error(
                        "a valid HTTP header must consist of alphanumeric characters or '-'",
                        "[-A-Za-z0-9]+",
                        &["X-Header-Name"],
                    );
                    let path = at.child("httpHeaders");
                    errors.invalid(&path, Shown::Plain(&Value::from(name)), &message);
                }
            }
        }
        "tcpSocket" | "grpc" => port_num_or_name(action.get("port"), &at.child("port"), errors),
        _ => {}
    }
}

/// `ValidatePortNumOrName`: a port number, or a port name when a string; missing is 0.
fn port_num_or_name(port: Option<&Value>, path: &FieldPath, errors: &mut Errors) {
    match port {
        Some(Value::String(name)) => {
            for message in Format::PortName.messages(name, errors.release()) {
                errors.invalid(path, Shown::Plain(&Value::from(name.as_str())), &message);
            }
        }
        other => {
            port_number(other.and_then(Value::as_i64).unwrap_or(0), path, errors);
        }
    }
}

/// `checkHostPortConflicts`: no two ports of the containers take one host port, protocol and
/// address (init containers each on their own).
pub(super) fn host_ports(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let containers = |list: &str| -> Vec<(usize, &Value)> {
        spec.get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .collect()
    };
    let check = |list: &str, group: &[(usize, &Value)], errors: &mut Errors| {
        let mut taken: Vec<String> = Vec::new();
        for (i, container) in group {
            for (j, port) in container
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                if host_port == 0 {
                    continue;
                }
                let key = format!(
                    "{}/{}/{host_port}",
                    text(port, "protocol"),
                    text(port, "hostIP")
                );
                let path = at
                    .child(list)
                    .index(*i)
                    .child("ports")
                    .index(j)
                    .child("hostPort");
                if taken.contains(&key) {
                    errors.duplicate(&path, &Value::from(key));
                } else {
                    taken.push(key);
                }
            }
        }
    };
    for init in containers("initContainers") {
        check("initContainers", &[init], errors);
    }
    check("containers", &containers("containers"), errors);
}

/// The release from which an Exists toleration with a value prints the value, not the whole
/// internal struct.
const TOLERATION_VALUE_SHOWN_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// The release whose tolerations know the `Lt` and `Gt` operators (behind a gate that is off).
const COMPARISON_OPERATORS_SINCE: KubeVersion = KubeVersion::new(1, 35);

/// The internal `core.Toleration` as Go's `%#v` prints it (its seconds pointer at a fixed
/// address).
fn toleration_go(toleration: &Value) -> String {
    let seconds = match toleration.get("tolerationSeconds") {
        Some(v) if !v.is_null() => "(*int64)(0xc000000000)",
        _ => "(*int64)(nil)",
    };
    let field = |name: &str| Value::from(text(toleration, name));
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:{seconds}}}",
        field("key"),
        field("operator"),
        field("value"),
        field("effect")
    )
}

/// `ValidateTolerations`, for one toleration.
pub(super) fn toleration(toleration: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let (key, operator, value, effect) = (
        text(toleration, "key"),
        text(toleration, "operator"),
        text(toleration, "value"),
        text(toleration, "effect"),
    );
    let operator_at = at.child("operator");
    if !key.is_empty() {
        for message in Format::QualifiedName.messages(key, release) {
            errors.invalid(&at.child("key"), Shown::Plain(&Value::from(key)), &message);
        }
    }
    if key.is_empty() && operator != "Exists" {
        errors.invalid(
            &operator_at,
            Shown::Plain(&Value::from(operator)),
            "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        );
    }
    if toleration
        .get("tolerationSeconds")
        .is_some_and(|s| !s.is_null())
        && effect != "NoExecute"
    {
        errors.invalid(
            &at.child("effect"),
            Shown::Plain(&Value::from(effect)),
            "effect must be 'NoExecute' when `tolerationSeconds` is set",
        );
    }
    match operator {
        "Equal" | "" => {
            let messages = Format::LabelValue.messages(value, release);
            if !messages.is_empty() {
                errors.invalid(
                    &operator_at,
                    Shown::Plain(&Value::from(value)),
                    &messages.join(";"),
                );
            }
        }
        "Exists" => {
            if !value.is_empty() {
                let detail = "value must be empty when `operator` is 'Exists'";
                if release >= TOLERATION_VALUE_SHOWN_SINCE {
                    errors.invalid(&operator_at, Shown::Plain(&Value::from(value)), detail);
                } else {
                    let go = toleration_go(toleration);
                    errors.invalid(&operator_at, Shown::Go(&go, toleration), detail);
                }
            }
        }
        "Lt" | "Gt" if release >= COMPARISON_OPERATORS_SINCE => errors.not_supported(
            &operator_at,
            &Value::from(operator),
            &["Equal", "Exists", "Lt", "Gt"],
        ),
        other => errors.not_supported(&operator_at, &Value::from(other), &["Equal", "Exists"]),
    }
    if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        errors.not_supported(
            &at.child("effect"),
            &Value::from(effect),
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        );
    }
}

/// `ValidatePodSpec`'s node selector (`ValidateLabels`, errors at the map) and optional names
/// and deadline, each checked when set: `serviceAccountName`
/// and `nodeName` (DNS subdomains), `activeDeadlineSeconds` (1 to 2³¹−1), `hostname` and
/// `subdomain` (DNS labels), `priorityClassName` (a DNS subdomain), in upstream's order.
pub(super) fn pod_fields(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    labels(spec, "nodeSelector", at, errors);
    let names = |field: &str, format: Format, errors: &mut Errors| {
        let name = spec.get(field).and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() {
            for message in format.messages(name, release) {
                errors.invalid(&at.child(field), Shown::Plain(&Value::from(name)), &message);
            }
        }
    };
    names("serviceAccountName", Format::DnsSubdomain, errors);
    names("nodeName", Format::DnsSubdomain, errors);
    if let Some(deadline) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        errors.invalid(
            &at.child("activeDeadlineSeconds"),
            Shown::Plain(&Value::from(deadline)),
            "must be between 1 and 2147483647, inclusive",
        );
    }
    names("hostname", Format::DnsLabel, errors);
    names("subdomain", Format::DnsLabel, errors);
    names("priorityClassName", Format::DnsSubdomain, errors);
}

/// The release whose host aliases are reported per item (`hostAliases[0].ip`) with
/// `IsValidIPForLegacyField`'s message (the first release read with them).
const INDEXED_HOST_ALIASES_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// The release that checks spread constraints' `minDomains` and node inclusion policies (1.28
/// read; the fields came in 1.24 and 1.25).
const SPREAD_POLICIES_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// `isNotPositiveErrorMsg`.
const NOT_POSITIVE: &str = "must be greater than zero";

/// `ValidateHostAliases`: each alias's IP and host names (DNS subdomains); before 1.34 the
/// errors are reported at `hostAliases.ip` and `hostAliases.hostnames`, without an index.
pub(super) fn host_aliases(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let indexed = release >= INDEXED_HOST_ALIASES_SINCE;
    let base = at.child("hostAliases");
    for (i, alias) in items(spec, "hostAliases").iter().enumerate() {
        let item = if indexed { base.index(i) } else { base.clone() };
        let ip = text(alias, "ip");
        if ip.parse::<std::net::IpAddr>().is_err() {
            let detail = if indexed {
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            } else {
                "must be valid IP address"
            };
            errors.invalid(&item.child("ip"), Shown::Plain(&Value::from(ip)), detail);
        }
        for (j, name) in items(alias, "hostnames").iter().enumerate() {
            let name = name.as_str().unwrap_or("");
            let path = if indexed {
                item.child("hostnames").index(j)
            } else {
                item.child("hostnames")
            };
            for message in Format::DnsSubdomain.messages(name, release) {
                errors.invalid(&path, Shown::Plain(&Value::from(name)), &message);
            }
        }
    }
}

/// The release with 32 search paths of 2048 characters (ExpandedDNSConfig; 1.28 read).
const EXPANDED_DNS_SINCE: KubeVersion = KubeVersion::new(1, 28);
/// The release whose search domains may hold `_` and be `.` (RelaxedDNSSearchValidation, GA in
/// 1.34) and whose nameservers get `IsValidIPForLegacyField`'s message.
const RELAXED_DNS_SINCE: KubeVersion = KubeVersion::new(1, 34);
/// `MaxDNSNameservers`.
const MAX_NAMESERVERS: usize = 3;
/// `IsDNS1123SubdomainWithUnderscore`'s message.
const SUBDOMAIN_WITH_UNDERSCORE_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')";

/// `IsDNS1123SubdomainWithUnderscore`: labels of `_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?`.
fn is_subdomain_with_underscore(name: &str) -> bool {
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    name.split('.').all(|label| {
        let bytes = label.strip_prefix('_').unwrap_or(label).as_bytes();
        bytes.first().is_some_and(edge)
            && bytes.last().is_some_and(edge)
            && bytes.iter().all(|b| edge(b) || *b == b'-' || *b == b'_')
    })
}

/// `validatePodDNSConfig`: a config with a nameserver under `dnsPolicy: None`, at most 3
/// nameservers that are IPs, a bounded search list of DNS subdomains, named options.
pub(super) fn dns_config(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let at = at.child("dnsConfig");
    let config = spec.get("dnsConfig").filter(|c| !c.is_null());
    if text(spec, "dnsPolicy") == "None" {
        match config {
            None => {
                return errors.required(&at, "must provide `dnsConfig` when `dnsPolicy` is None");
            }
            Some(config) if items(config, "nameservers").is_empty() => {
                let detail = "must provide at least one DNS nameserver when `dnsPolicy` is None";
                return errors.required(&at.child("nameservers"), detail);
            }
            Some(_) => {}
        }
    }
    let Some(config) = config else {
        return;
    };
    let relaxed = release >= RELAXED_DNS_SINCE;
    let nameservers = items(config, "nameservers");
    if nameservers.len() > MAX_NAMESERVERS {
        let detail = format!("must not have more than {MAX_NAMESERVERS} nameservers");
        let value = config.get("nameservers").unwrap_or(&Value::Null);
        errors.invalid(&at.child("nameservers"), Shown::StringList(value), &detail);
    }
    for (i, server) in nameservers.iter().enumerate() {
        let server = server.as_str().unwrap_or("");
        if server.parse::<std::net::IpAddr>().is_err() {
            let detail = if relaxed {
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
            } else {
                "must be valid IP address"
            };
            let path = at.child("nameservers").index(i);
            errors.invalid(&path, Shown::Plain(&Value::from(server)), detail);
        }
    }
    let searches: Vec<&str> = items(config, "searches")
        .iter()
        .map(|s| s.as_str().unwrap_or(""))
        .collect();
    let (max_paths, max_chars) = if release >= EXPANDED_DNS_SINCE {
        (32, 2048)
    } else {
        (6, 256)
    };
    let value = config.get("searches").unwrap_or(&Value::Null);
    if searches.len() > max_paths {
        let detail = format!("must not have more than {max_paths} search paths");
        errors.invalid(&at.child("searches"), Shown::StringList(value), &detail);
    }
    if searches.join(" ").len() > max_chars {
        let detail = format!(
            "must not have more than {max_chars} characters (including spaces) in the search list"
        );
        errors.invalid(&at.child("searches"), Shown::StringList(value), &detail);
    }
    for (i, search) in searches.iter().enumerate() {
        let path = at.child("searches").index(i);
        if relaxed && *search == "." {
            continue;
        }
        let search = search.strip_suffix('.').unwrap_or(search);
        let shown = Value::from(search);
        if !relaxed {
            for message in Format::DnsSubdomain.messages(search, release) {
                errors.invalid(&path, Shown::Plain(&shown), &message);
            }
            continue;
        }
        if search.len() > 253 {
            errors.invalid(
                &path,
                Shown::Plain(&shown),
                "must be no more than 253 characters",
            );
        }
        if !is_subdomain_with_underscore(search) {
            errors.invalid(&path, Shown::Plain(&shown), SUBDOMAIN_WITH_UNDERSCORE_MSG);
        }
    }
    for (i, option) in items(config, "options").iter().enumerate() {
        if text(option, "name").is_empty() {
            errors.required(&at.child("options").index(i), "must not be empty");
        }
    }
}

/// `validateTopologySpreadConstraints` (its label selectors are LabelSelector checks): a
/// positive skew, a topology key, a known action, no two constraints on one key and action, and
/// from 1.28 `minDomains`, the node policies and `matchLabelKeys`.
pub(super) fn topology_spread(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let constraints = items(spec, "topologySpreadConstraints");
    for (i, constraint) in constraints.iter().enumerate() {
        let item = at.child("topologySpreadConstraints").index(i);
        let skew = constraint
            .get("maxSkew")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if skew <= 0 {
            errors.invalid(
                &item.child("maxSkew"),
                Shown::Plain(&Value::from(skew)),
                NOT_POSITIVE,
            );
        }
        let key = text(constraint, "topologyKey");
        if key.is_empty() {
            errors.required(&item.child("topologyKey"), "can not be empty");
        }
        let action = text(constraint, "whenUnsatisfiable");
        if !matches!(action, "DoNotSchedule" | "ScheduleAnyway") {
            errors.not_supported(
                &item.child("whenUnsatisfiable"),
                &Value::from(action),
                &["DoNotSchedule", "ScheduleAnyway"],
            );
        }
        let repeated = constraints[i + 1..].iter().any(|other| {
            text(other, "topologyKey") == key && text(other, "whenUnsatisfiable") == action
        });
        if repeated {
            let shown = Value::from(format!("{{{key}, {action}}}"));
            errors.duplicate(&item.child("{topologyKey, whenUnsatisfiable}"), &shown);
        }
        if release < SPREAD_POLICIES_SINCE {
            continue;
        }
        if let Some(domains) = constraint.get("minDomains").and_then(Value::as_i64) {
            let path = item.child("minDomains");
            let shown = Value::from(domains);
            if domains <= 0 {
                errors.invalid(&path, Shown::Plain(&shown), NOT_POSITIVE);
            }
            if action != "DoNotSchedule" {
                let detail = format!(
                    "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                );
                errors.invalid(&path, Shown::Plain(&shown), &detail);
            }
        }
        for field in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(policy) = constraint.get(field).and_then(Value::as_str)
                && !matches!(policy, "Honor" | "Ignore")
            {
                errors.not_supported(
                    &item.child(field),
                    &Value::from(policy),
                    &["Honor", "Ignore"],
                );
            }
        }
        spread_label_keys(constraint, &item.child("matchLabelKeys"), errors);
    }
}

/// The first release that merges a new pod's spread `matchLabelKeys` into the constraint's
/// selector before validating it (MatchLabelKeysInPodTopologySpreadSelectorMerge, as kapi's
/// `CreateRule::PodLabelKeys`); kapi then leaves the keys' presence in the selector unchecked.
const SPREAD_KEYS_MERGED_SINCE: KubeVersion = KubeVersion::new(1, 34);

/// `validateMatchLabelKeysInTopologySpread` (MatchLabelKeysInPodTopologySpread, on by default
/// from 1.27): keys only beside a label selector, each a label name and, before the merge, not
/// one the selector already names.
fn spread_label_keys(constraint: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let keys = items(constraint, "matchLabelKeys");
    if keys.is_empty() {
        return;
    }
    let selector = constraint.get("labelSelector").filter(|s| !s.is_null());
    let mut named: Vec<&str> = Vec::new();
    match selector {
        Some(selector) => {
            named.extend(map_keys(selector, "matchLabels"));
            named.extend(
                items(selector, "matchExpressions")
                    .iter()
                    .map(|e| text(e, "key")),
            );
        }
        None => errors.forbidden(at, "must not be specified when labelSelector is not set"),
    }
    for (i, key) in keys.iter().enumerate() {
        let key = key.as_str().unwrap_or("");
        let shown = Value::from(key);
        for message in Format::QualifiedName.messages(key, release) {
            errors.invalid(&at.index(i), Shown::Plain(&shown), &message);
        }
        if release < SPREAD_KEYS_MERGED_SINCE && named.contains(&key) {
            let detail = "exists in both matchLabelKeys and labelSelector";
            errors.invalid(&at.index(i), Shown::Plain(&shown), detail);
        }
    }
}

/// The keys of a map field, in the map's order.
pub(super) fn map_keys<'v>(holder: &'v Value, field: &str) -> impl Iterator<Item = &'v str> {
    holder
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|map| map.keys().map(String::as_str))
}

/// The liveness and startup probes' `successThreshold` must be 1 (`validateLivenessProbe`,
/// `validateStartupProbe`; inline in `validateContainers` before 1.29).
pub(super) fn probe_thresholds(container: &Value, at: &FieldPath, errors: &mut Errors) {
    for probe in ["livenessProbe", "startupProbe"] {
        let Some(probe_value) = container.get(probe).filter(|p| p.is_object()) else {
            continue;
        };
        let threshold = probe_value
            .get("successThreshold")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if threshold != 1 {
            let path = at.child(probe).child("successThreshold");
            errors.invalid(&path, Shown::Plain(&Value::from(threshold)), "must be 1");
        }
    }
}

/// `ValidateVolumes` for each of a pod's volumes: one source, a DNS-label name, no name twice;
/// the names of the volumes without errors, the only ones a container may mount.
fn check_volumes<'v>(spec: &'v Value, at: &FieldPath, errors: &mut Errors) -> Vec<&'v str> {
    let release = errors.release();
    let mut names: Vec<&str> = Vec::new();
    for (i, volume) in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let item = at.child("volumes").index(i);
        let name_at = item.child("name");
        let mut own = Errors::new(release);
        volume_source(volume, &item, &mut own);
        let name = volume.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            own.required(&name_at, "");
        } else {
            for message in Format::DnsLabel.messages(name, release) {
                own.invalid(&name_at, Shown::Plain(&Value::from(name)), &message);
            }
        }
        if names.contains(&name) {
            own.duplicate(&name_at, &Value::from(name));
        }
        if own.is_empty() {
            names.push(name);
        } else {
            errors.extend(own);
        }
    }
    names
}

/// ImageVolume, beta and on by default from 1.35 (the volumes are dropped before).
const IMAGE_VOLUMES_SINCE: KubeVersion = KubeVersion::new(1, 35);

/// `validateImageVolumeSource`'s check of a Pod (`opts.ResourceIsPod`): each image volume names
/// its image. A template's may leave the reference empty, as upstream lets it until 1.37.
pub(super) fn image_volume_references(pod: &Value, at: &FieldPath, errors: &mut Errors) {
    if errors.release() < IMAGE_VOLUMES_SINCE {
        return;
    }
    let Some(spec) = pod.get("spec") else {
        return;
    };
    for (i, volume) in items(spec, "volumes").iter().enumerate() {
        let image = volume.get("image").filter(|image| !image.is_null());
        if image.is_some_and(|image| text(image, "reference").is_empty()) {
            let path = at.join(&format!("spec.volumes[{i}].image.reference"));
            errors.required(&path, "");
        }
    }
}

/// GenericEphemeralVolume, beta and on by default from 1.21 (the field is dropped before).
const EPHEMERAL_VOLUMES_SINCE: KubeVersion = KubeVersion::new(1, 21);

/// `ValidateVolumes`' checks that need the pod's name (on a Pod, not a template): an ephemeral
/// volume's claim, `<pod>-<volume>`, a valid object name (reported at the volume's `name`), and
/// no claim volume naming such a claim. (Upstream then leaves the volume out of those a
/// container may mount; kapi does not.)
pub(super) fn ephemeral_claim_names(pod: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if release < EPHEMERAL_VOLUMES_SINCE || pod_name.is_empty() {
        return;
    }
    let volumes = pod.pointer("/spec/volumes").and_then(Value::as_array);
    let volumes = volumes.map_or(&[][..], Vec::as_slice);
    let ephemeral = |volume: &Value| volume.get("ephemeral").is_some_and(|e| !e.is_null());
    let created: Vec<String> = volumes
        .iter()
        .filter(|volume| ephemeral(volume))
        .map(|volume| format!("{pod_name}-{}", text(volume, "name")))
        .collect();
    let volumes_at = at.child("spec").child("volumes");
    for (i, volume) in volumes.iter().enumerate() {
        let name = text(volume, "name");
        if ephemeral(volume) && !name.is_empty() {
            let claim = format!("{pod_name}-{name}");
            for message in Format::DnsSubdomain.messages(&claim, release) {
                let detail = format!("PVC name {}: {message}", Value::from(claim.as_str()));
                let shown = Value::from(name);
                errors.invalid(
                    &volumes_at.index(i).child("name"),
                    Shown::Plain(&shown),
                    &detail,
                );
            }
        }
        let claim = volume
            .pointer("/persistentVolumeClaim/claimName")
            .and_then(Value::as_str);
        if let Some(claim) = claim.filter(|claim| created.iter().any(|c| c == claim)) {
            let path = volumes_at
                .index(i)
                .child("persistentVolumeClaim")
                .child("claimName");
            let detail = "must not reference a PVC that gets created for an ephemeral volume";
            errors.invalid(&path, Shown::Plain(&Value::from(claim)), detail);
        }
    }
}

/// `ValidateVolumes`, then each container's `ValidateVolumeMounts` against the volumes
/// without errors (on a PodSpec, before its containers' own checks).
pub(super) fn volumes(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let valid = check_volumes(spec, at, errors);
    volume_mounts(spec, &valid, at, errors);
}

/// `ValidateVolumeMounts` for each container and init container: a mount names a volume of the
/// pod, and has a mount path no other mount of the container has.
/// `ValidateVolumeMounts`' sub-paths: relative, without `..`, reported at the list's path (no
/// index), as upstream does; `subPathExpr` not beside `subPath` (at the item).
fn sub_paths(mount: &Value, list: &FieldPath, item: &FieldPath, errors: &mut Errors) {
    let sub_path = text(mount, "subPath");
    if !sub_path.is_empty() {
        super::security::local_descending_path(sub_path, &list.child("subPath"), errors);
    }
    let expr = text(mount, "subPathExpr");
    if !expr.is_empty() {
        if !sub_path.is_empty() {
            let detail = "subPathExpr and subPath are mutually exclusive";
            errors.invalid(
                &item.child("subPathExpr"),
                Shown::Plain(&Value::from(expr)),
                detail,
            );
        }
        super::security::local_descending_path(expr, &list.child("subPathExpr"), errors);
    }
}

fn volume_mounts(spec: &Value, volumes: &[&str], at: &FieldPath, errors: &mut Errors) {
    // Ephemeral containers are held to `validateContainerCommon` too (EphemeralContainers on
    // by default from 1.23; 1.20's strategy drops them).
    let ephemeral = errors.release() >= EPHEMERAL_CONTAINERS_SINCE;
    let lists: &[&str] = if ephemeral {
        &["initContainers", "containers", "ephemeralContainers"]
    } else {
        &["initContainers", "containers"]
    };
    for list in lists {
        for (i, container) in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let mounts_at = at.child(list).index(i).child("volumeMounts");
            let mut paths: Vec<&str> = Vec::new();
            // GetVolumeDeviceMap: a device's path by name, the last one of a name kept.
            let mut devices: BTreeMap<&str, &str> = BTreeMap::new();
            for device in items(container, "volumeDevices") {
                devices.insert(text(device, "name"), text(device, "devicePath"));
            }
            for (j, mount) in container
                .get("volumeMounts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let item = mounts_at.index(j);
                let name = mount.get("name").and_then(Value::as_str).unwrap_or("");
                if name.is_empty() {
                    errors.required(&item.child("name"), "");
                }
                if !volumes.contains(&name) {
                    errors.not_found(&item.child("name"), &Value::from(name));
                }
                let path = mount.get("mountPath").and_then(Value::as_str).unwrap_or("");
                if path.is_empty() {
                    errors.required(&item.child("mountPath"), "");
                }
                if paths.contains(&path) {
                    let shown = Value::from(path);
                    errors.invalid(
                        &item.child("mountPath"),
                        Shown::Plain(&shown),
                        "must be unique",
                    );
                }
                paths.push(path);
                mount_not_a_device(&devices, name, path, &item, errors);
                sub_paths(mount, &mounts_at, &item, errors);
                mount_propagation(mount, container, &mounts_at, errors);
            }
            volume_devices(spec, container, volumes, &at.child(list).index(i), errors);
        }
    }
}

/// `ValidateVolumeMounts`' overlap with the container's volume devices: a mount's name not a
/// device's, its path not a device's path.
fn mount_not_a_device(
    devices: &BTreeMap<&str, &str>,
    name: &str,
    path: &str,
    item: &FieldPath,
    errors: &mut Errors,
) {
    if devices.contains_key(name) {
        let detail = "must not already exist in volumeDevices";
        errors.invalid(
            &item.child("name"),
            Shown::Plain(&Value::from(name)),
            detail,
        );
    }
    if devices.values().any(|device| *device == path) {
        let detail = "must not already exist as a path in volumeDevices";
        errors.invalid(
            &item.child("mountPath"),
            Shown::Plain(&Value::from(path)),
            detail,
        );
    }
}

/// `supportedMountPropagations` and the recursive read-only modes, sorted as upstream lists
/// them.
const MOUNT_PROPAGATIONS: [&str; 3] = ["Bidirectional", "HostToContainer", "None"];
const RECURSIVE_READ_ONLY: [&str; 3] = ["Disabled", "Enabled", "IfPossible"];
/// RecursiveReadOnlyMounts is beta and on by default from 1.31 (the field is dropped before).
const RECURSIVE_READ_ONLY_SINCE: KubeVersion = KubeVersion::new(1, 31);

/// `ValidateVolumeMounts`' `validateMountPropagation` (a known mode, `Bidirectional` only for a
/// privileged container) and, from 1.31, `validateMountRecursiveReadOnly` (a known mode,
/// `Enabled` or `IfPossible` only on a read-only mount without propagation); both reported at
/// the list's path, as upstream does.
fn mount_propagation(mount: &Value, container: &Value, list: &FieldPath, errors: &mut Errors) {
    if let Some(mode) = mount.get("mountPropagation").filter(|m| !m.is_null()) {
        let at = list.child("mountPropagation");
        let mode_text = mode.as_str().unwrap_or("");
        if !MOUNT_PROPAGATIONS.contains(&mode_text) {
            errors.not_supported(&at, mode, &MOUNT_PROPAGATIONS);
        }
        let privileged =
            container.pointer("/securityContext/privileged") == Some(&Value::Bool(true));
        if mode_text == "Bidirectional" && !privileged {
            let detail =
                "Bidirectional mount propagation is available only to privileged containers";
            errors.forbidden(&at, detail);
        }
    }
    let Some(mode) = mount.get("recursiveReadOnly").filter(|m| !m.is_null()) else {
        return;
    };
    if errors.release() < RECURSIVE_READ_ONLY_SINCE {
        return;
    }
    let at = list.child("recursiveReadOnly");
    match mode.as_str().unwrap_or("") {
        "Disabled" => {}
        "Enabled" | "IfPossible" => {
            if mount.get("readOnly") != Some(&Value::Bool(true)) {
                errors.forbidden(&at, "may only be specified when readOnly is true");
            }
            if !matches!(text(mount, "mountPropagation"), "" | "None") {
                let detail = "may only be specified when mountPropagation is None or not specified";
                errors.forbidden(&at, detail);
            }
        }
        _ => errors.not_supported(&at, mode, &RECURSIVE_READ_ONLY),
    }
}

/// The first release whose pods keep ephemeral containers (EphemeralContainers beta, on).
const EPHEMERAL_CONTAINERS_SINCE: KubeVersion = KubeVersion::new(1, 23);

/// The first release letting a block device come from an ephemeral volume (1.23, as upstream's
/// message then says; 1.20's strategy drops ephemeral volumes anyway).
const EPHEMERAL_DEVICES_SINCE: KubeVersion = KubeVersion::new(1, 23);

/// `ValidateVolumeDevices` of a container (at `at`): each device a valid claim's (or from 1.23
/// an ephemeral) volume not also mounted, names and paths unique, paths without `..` and not a
/// mount's.
fn volume_devices(
    spec: &Value,
    container: &Value,
    volumes: &[&str],
    at: &FieldPath,
    errors: &mut Errors,
) {
    let release = errors.release();
    let ephemeral = release >= EPHEMERAL_DEVICES_SINCE;
    let mounts: Vec<(&str, &str)> = items(container, "volumeMounts")
        .iter()
        .map(|m| (text(m, "name"), text(m, "mountPath")))
        .collect();
    let devices_at = at.child("volumeDevices");
    let (mut names, mut paths): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    for (i, device) in items(container, "volumeDevices").iter().enumerate() {
        let item = devices_at.index(i);
        let (name, path) = (text(device, "name"), text(device, "devicePath"));
        let (name_at, path_at) = (item.child("name"), item.child("devicePath"));
        let (name_shown, path_shown) = (Value::from(name), Value::from(path));
        let source = volumes.contains(&name).then(|| {
            items(spec, "volumes")
                .iter()
                .find(|v| text(v, "name") == name)
        });
        if name.is_empty() {
            errors.required(&name_at, "");
        }
        if names.contains(&name) {
            errors.invalid(&name_at, Shown::Plain(&name_shown), "must be unique");
        }
        match source.flatten() {
            None => errors.not_found(&name_at, &name_shown),
            Some(volume) => {
                let set = |field: &str| volume.get(field).is_some_and(|s| !s.is_null());
                if !(set("persistentVolumeClaim") || ephemeral && set("ephemeral")) {
                    let detail = if ephemeral {
                        "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"
                    } else {
                        "can only use volume source type of PersistentVolumeClaim for block mode"
                    };
                    errors.invalid(&name_at, Shown::Plain(&name_shown), detail);
                }
            }
        }
        if path.is_empty() {
            errors.required(&path_at, "");
        }
        if paths.contains(&path) {
            errors.invalid(&path_at, Shown::Plain(&path_shown), "must be unique");
        }
        if !path.is_empty() && path.split('/').any(|part| part == "..") {
            let detail = "can not contain backsteps ('..')";
            errors.invalid(&path_at, Shown::Plain(&path_shown), detail);
        } else {
            paths.push(path);
        }
        if mounts.iter().any(|(mounted, _)| *mounted == name) {
            let detail = "must not already exist in volumeMounts";
            errors.invalid(&name_at, Shown::Plain(&name_shown), detail);
        }
        if mounts.iter().any(|(_, mounted)| *mounted == path) {
            let detail = "must not already exist as a path in volumeMounts";
            errors.invalid(&path_at, Shown::Plain(&path_shown), detail);
        }
        if !name.is_empty() {
            names.push(name);
        }
    }
}

/// The resource names a container may request without a domain (`standardContainerResources`
/// and huge pages).
fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// `IsStandardResourceName`: the quota resources, which an unqualified name must be one of.
fn is_standard_resource(name: &str) -> bool {
    const STANDARD: &[&str] = &[
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    ];
    STANDARD.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// `IsOvercommitAllowed`: native (unqualified or `kubernetes.io/`) and not huge pages.
fn overcommit_allowed(name: &str) -> bool {
    (!name.contains('/') || name.contains("kubernetes.io/")) && !name.starts_with("hugepages-")
}

/// `validateContainerResourceName`.
pub(super) fn resource_name(name: &str, path: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let shown = Value::from(name);
    let messages = Format::QualifiedName.messages(name, release);
    for message in &messages {
        errors.invalid(path, Shown::Plain(&shown), message);
    }
    if !messages.is_empty() {
        return;
    }
    if !name.contains('/') {
        if !is_standard_resource(name) {
            errors.invalid(
                path,
                Shown::Plain(&shown),
                "must be a standard resource type or fully qualified",
            );
        }
        if !is_standard_container_resource(name) {
            errors.invalid(
                path,
                Shown::Plain(&shown),
                "must be a standard resource for containers",
            );
        }
    }
}

/// A map of resource names to quantities; values that do not parse are left to the decoder.
fn quantities<'v>(holder: &'v Value, field: &str) -> Vec<(&'v str, Quantity)> {
    holder
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Quantity::from_str(&text).ok().map(|q| (name.as_str(), q))
        })
        .collect()
}

/// `ValidateNonnegativeQuantity`, the quantity shown in canonical form.
fn nonnegative(quantity: &Quantity, path: &FieldPath, errors: &mut Errors) {
    if quantity.signum() < 0 {
        let shown = Value::from(quantity.to_string());
        errors.invalid(
            path,
            Shown::Plain(&shown),
            "must be greater than or equal to 0",
        );
    }
}

/// `IsExtendedResourceName`: a qualified name outside `kubernetes.io/`, not a quota's
/// `requests.` one, that is still a qualified name with that prefix.
fn is_extended_resource(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native
        && !name.starts_with("requests.")
        && Format::QualifiedName
            .messages(&format!("requests.{name}"), KubeVersion::new(1, 20))
            .is_empty()
}

/// `ValidateResourceQuantityValue`'s integer check: an extended resource is counted in whole
/// units. Upstream reports the `resource.Quantity` itself, which prints as Go's struct before
/// 1.34 and as its canonical string from 1.34.
fn integer(
    requirements: &Value,
    list: &str,
    name: &str,
    quantity: &Quantity,
    path: &FieldPath,
    errors: &mut Errors,
) {
    if !is_extended_resource(name) || quantity.milli_value().is_none_or(|m| m % 1000 == 0) {
        return;
    }
    let spelled = match requirements.get(list).and_then(|l| l.get(name)) {
        Some(Value::String(text)) => text.trim().to_owned(),
        Some(other) => other.to_string(),
        None => return,
    };
    let json = Value::from(quantity.to_string());
    let go = go_value::quantity(&spelled);
    errors.invalid(path, Shown::Go(&go, &json), "must be an integer");
}

/// `ValidateResourceRequirements` of a container's `resources` (on the Container: a
/// PersistentVolumeClaim's requirements are another type upstream but share this one's schema
/// before 1.29): names, non-negative quantities, requests at most the limits (equal for
/// resources that cannot be overcommitted), and huge pages only with cpu or memory.
pub(super) fn container_resources(container: &Value, at: &FieldPath, errors: &mut Errors) {
    if let Some(requirements) = container.get("resources") {
        resources(requirements, &at.child("resources"), errors);
    }
}

fn resources(requirements: &Value, at: &FieldPath, errors: &mut Errors) {
    let limits = quantities(requirements, "limits");
    let requests = quantities(requirements, "requests");
    let (limits_at, requests_at) = (at.child("limits"), at.child("requests"));
    for (name, quantity) in &limits {
        let path = limits_at.key(name);
        resource_name(name, &path, errors);
        nonnegative(quantity, &path, errors);
        integer(requirements, "limits", name, quantity, &path, errors);
    }
    let named = errors.release() >= LIMIT_SHOWN_SINCE;
    for (name, quantity) in &requests {
        let path = requests_at.key(name);
        resource_name(name, &path, errors);
        nonnegative(quantity, &path, errors);
        integer(requirements, "requests", name, quantity, &path, errors);
        let shown = Value::from(quantity.to_string());
        match limits.iter().find(|(n, _)| n == name) {
            Some((_, limit)) => {
                let of = if named {
                    format!(" of {limit}")
                } else {
                    String::new()
                };
                if quantity != limit && !overcommit_allowed(name) {
                    let detail = format!("must be equal to {name} limit{of}");
                    errors.invalid(&requests_at, Shown::Plain(&shown), &detail);
                } else if quantity > limit {
                    let detail = format!("must be less than or equal to {name} limit{of}");
                    errors.invalid(&requests_at, Shown::Plain(&shown), &detail);
                }
            }
            None if !overcommit_allowed(name) => errors.required(
                &limits_at,
                "Limit must be set for non overcommitable resources",
            ),
            None => {}
        }
    }
    let names = || limits.iter().chain(&requests).map(|(n, _)| *n);
    let huge_pages = names().any(|n| n.starts_with("hugepages-"));
    let cpu_or_memory = names().any(|n| n == "cpu" || n == "memory");
    if huge_pages && !cpu_or_memory {
        errors.forbidden(at, "HugePages require cpu or memory");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(rule: fn(&Value, &FieldPath, &mut Errors), value: &Value, minor: u16) -> Vec<String> {
        super::super::lines(minor, |e| rule(value, &FieldPath::of("spec"), e))
    }

    #[test]
    fn spread_label_keys_need_a_selector_without_them() {
        // validateMatchLabelKeysInTopologySpread; from 1.34 the pod's strategy has merged the
        // keys into the selector (MatchLabelKeysInPodTopologySpreadSelectorMerge).
        let spec = |selector: Value| {
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector,
                "matchLabelKeys": ["app"]}]})
        };
        let named = spec(json!({"matchLabels": {"app": "web"}}));
        assert_eq!(
            run(topology_spread, &named, 28),
            [
                "spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"
            ]
        );
        assert!(run(topology_spread, &named, 34).is_empty());
        assert_eq!(
            run(topology_spread, &spec(Value::Null), 34),
            [
                "spec.topologySpreadConstraints[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"
            ]
        );
        assert!(run(topology_spread, &spec(Value::Null), 20).is_empty());
    }

    #[test]
    fn ephemeral_containers_mount_the_pod_s_volumes() {
        // validateEphemeralContainers' validateContainerCommon: ValidateVolumeMounts against the
        // pod's volumes (EphemeralContainers on from 1.23), then no subpaths for an ephemeral
        // container (`ephemeral_containers`).
        let spec = json!({
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [{"name": "c", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}],
            "ephemeralContainers": [{"name": "debug", "volumeMounts": [
                {"name": "data", "mountPath": "/d"},
                {"name": "nope", "mountPath": "/d", "subPath": "../up"},
            ]}],
        });
        let at = FieldPath::of("spec");
        assert_eq!(
            super::super::lines(28, |e| volumes(&spec, &at, e)),
            [
                "spec.ephemeralContainers[0].volumeMounts[1].name: Not found: \"nope\"",
                "spec.ephemeralContainers[0].volumeMounts[1].mountPath: Invalid value: \"/d\": must be unique",
                "spec.ephemeralContainers[0].volumeMounts.subPath: Invalid value: \"../up\": must not contain '..'",
            ]
        );
        assert!(super::super::lines(20, |e| volumes(&spec, &at, e)).is_empty());
    }

    #[test]
    fn a_pods_image_volumes_name_their_image_from_1_35() {
        // validateImageVolumeSource: `reference` required where `opts.ResourceIsPod`.
        let pod = json!({"spec": {"volumes": [
            {"name": "tools", "image": {"reference": "tools:1", "pullPolicy": "IfNotPresent"}},
            {"name": "empty", "image": {"pullPolicy": "Always"}},
        ]}});
        let check = |minor| {
            super::super::lines(minor, |e| {
                image_volume_references(&pod, &FieldPath::root(), e)
            })
        };
        assert_eq!(
            check(36),
            ["spec.volumes[1].image.reference: Required value"]
        );
        assert!(check(34).is_empty());
    }

    #[test]
    fn ephemeral_claims_are_named_after_their_pod() {
        // ValidateVolumes with the pod's metadata (GenericEphemeralVolume, from 1.21).
        let long = "p".repeat(250);
        let pod = json!({"metadata": {"name": long}, "spec": {"volumes": [
            {"name": "scratch", "ephemeral": {}},
            {"name": "claim", "persistentVolumeClaim": {"claimName": format!("{long}-scratch")}},
        ]}});
        let found = super::super::lines(34, |e| ephemeral_claim_names(&pod, &FieldPath::root(), e));
        assert_eq!(
            found,
            [
                format!(
                    r#"spec.volumes[0].name: Invalid value: "scratch": PVC name "{long}-scratch": must be no more than 253 characters"#
                ),
                format!(
                    r#"spec.volumes[1].persistentVolumeClaim.claimName: Invalid value: "{long}-scratch": must not reference a PVC that gets created for an ephemeral volume"#
                ),
            ]
        );
        assert!(
            super::super::lines(20, |e| ephemeral_claim_names(&pod, &FieldPath::root(), e))
                .is_empty()
        );
    }

    #[test]
    fn mount_propagation_and_recursive_read_only_modes() {
        // ValidateVolumeMounts' validateMountPropagation and (RecursiveReadOnlyMounts, on from
        // 1.31) validateMountRecursiveReadOnly, at the list's path.
        let spec = json!({
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [{"name": "c", "volumeMounts": [
                {"name": "data", "mountPath": "/a", "mountPropagation": "Bidirectional"},
                {"name": "data", "mountPath": "/b", "mountPropagation": "Sideways"},
                {"name": "data", "mountPath": "/c", "recursiveReadOnly": "Enabled",
                 "mountPropagation": "HostToContainer"},
                {"name": "data", "mountPath": "/d", "recursiveReadOnly": "Always", "readOnly": true},
            ]}],
        });
        let at = FieldPath::of("spec");
        let list = "spec.containers[0].volumeMounts";
        assert_eq!(
            super::super::lines(34, |e| volumes(&spec, &at, e)),
            [
                format!(
                    "{list}.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"
                ),
                format!(
                    r#"{list}.mountPropagation: Unsupported value: "Sideways": supported values: "Bidirectional", "HostToContainer", "None""#
                ),
                format!(
                    "{list}.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"
                ),
                format!(
                    "{list}.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified"
                ),
                format!(
                    r#"{list}.recursiveReadOnly: Unsupported value: "Always": supported values: "Disabled", "Enabled", "IfPossible""#
                ),
            ]
        );
        assert_eq!(super::super::lines(28, |e| volumes(&spec, &at, e)).len(), 2);
    }

    #[test]
    fn volume_devices_are_unmounted_claims() {
        // ValidateVolumeDevices; an ephemeral volume's devices from 1.23.
        let spec = json!({"volumes": [
            {"name": "claim", "persistentVolumeClaim": {"claimName": "c"}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}},
        ],
        "containers": [{"name": "c", "volumeMounts": [{"name": "claim", "mountPath": "/data"}],
            "volumeDevices": [
                {"name": "claim", "devicePath": "/data"},
                {"name": "scratch", "devicePath": "/dev/../x"},
                {"name": "eph", "devicePath": "/dev/x"},
                {"name": "gone", "devicePath": "/dev/x"},
            ]}]});
        let at = FieldPath::of("spec");
        let found = super::super::lines(28, |e| volumes(&spec, &at, e));
        assert_eq!(
            found,
            [
                // ValidateVolumeMounts' side of the overlap.
                "spec.containers[0].volumeMounts[0].name: Invalid value: \"claim\": must not already exist in volumeDevices",
                "spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/data\": must not already exist as a path in volumeDevices",
                "spec.containers[0].volumeDevices[0].name: Invalid value: \"claim\": must not already exist in volumeMounts",
                "spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/data\": must not already exist as a path in volumeMounts",
                "spec.containers[0].volumeDevices[1].name: Invalid value: \"scratch\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
                "spec.containers[0].volumeDevices[1].devicePath: Invalid value: \"/dev/../x\": can not contain backsteps ('..')",
                "spec.containers[0].volumeDevices[3].name: Not found: \"gone\"",
                "spec.containers[0].volumeDevices[3].devicePath: Invalid value: \"/dev/x\": must be unique",
            ]
        );
        // 1.20 has no ephemeral volumes (its strategy drops them), so that device names none.
        let found = super::super::lines(20, |e| volumes(&spec, &at, e));
        assert_eq!(
            found[5..8],
            [
                "spec.containers[0].volumeDevices[1].name: Invalid value: \"scratch\": can only use volume source type of PersistentVolumeClaim for block mode",
                "spec.containers[0].volumeDevices[1].devicePath: Invalid value: \"/dev/../x\": can not contain backsteps ('..')",
                "spec.containers[0].volumeDevices[2].name: Not found: \"eph\"",
            ]
        );
    }

    #[test]
    fn extended_resources_are_whole_numbers() {
        // ValidateResourceQuantityValue (IsIntegerResourceName: extended resources); the
        // quantity prints as a resource.Quantity before 1.34.
        let container = json!({"resources": {"limits": {"example.com/gpu": "500m", "cpu": "500m"},
            "requests": {"example.com/gpu": "500m"}}});
        let found = run(container_resources, &container, 28);
        assert_eq!(
            found,
            [
                "spec.resources.limits[example.com/gpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: must be an integer",
                "spec.resources.requests[example.com/gpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: must be an integer",
            ]
        );
        assert_eq!(
            run(container_resources, &container, 34)[0],
            "spec.resources.limits[example.com/gpu]: Invalid value: \"500m\": must be an integer"
        );
        let whole = json!({"resources": {"limits": {"example.com/gpu": 2}}});
        assert!(run(container_resources, &whole, 20).is_empty());
    }

    #[test]
    fn a_volume_has_exactly_one_source() {
        // validateVolumeSource, with upstream's `downwarAPI` path for a second source.
        let two = json!({"name": "v", "emptyDir": {}, "downwardAPI": {}, "cephfs": {}});
        assert_eq!(
            run(volume_source, &two, 34),
            [
                "spec.cephFS: Forbidden: may not specify more than 1 volume type",
                "spec.downwarAPI: Forbidden: may not specify more than 1 volume type",
            ]
        );
        assert_eq!(
            run(volume_source, &json!({"name": "v"}), 20),
            ["spec: Required value: must specify a volume type"]
        );
        assert!(
            run(
                volume_source,
                &json!({"name": "v", "secret": {"secretName": "s"}}),
                20
            )
            .is_empty()
        );
        // The counted source's own fields (validateSecretVolumeSource, validateNFSVolumeSource).
        assert_eq!(
            run(
                volume_source,
                &json!({"secret": {"defaultMode": 512}, "nfs": {}}),
                34
            ),
            [
                "spec.secret.secretName: Required value",
                "spec.secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
                "spec.nfs: Forbidden: may not specify more than 1 volume type",
            ]
        );
        // validateKeyToPath: items name a key and a relative path.
        let items = json!({"configMap": {"name": "c", "items": [{"path": "/abs"}, {"key": "k", "path": "..x", "mode": 512}]}});
        assert_eq!(
            run(volume_source, &items, 28),
            [
                "spec.configMap.items[0].key: Required value",
                "spec.configMap.items[0].path: Invalid value: \"/abs\": must be a relative path",
                "spec.configMap.items[1].path: Invalid value: \"..x\": must not start with '..'",
                "spec.configMap.items[1].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
            ]
        );
        // validateProjectionSources: one projection a source, tokens of 10 minutes or more.
        let projected = json!({"projected": {"sources": [
            {"secret": {"name": "s", "items": [{"key": "a", "path": "p"}]}, "configMap": {"name": "c", "items": [{"key": "b", "path": "p"}]}},
            {"serviceAccountToken": {"expirationSeconds": 60}}]}});
        assert_eq!(
            run(volume_source, &projected, 28)[1],
            "spec.projected.sources[0]: Forbidden: may not specify more than 1 volume type"
        );
        assert_eq!(
            run(volume_source, &projected, 34),
            [
                "spec.projected: Invalid value: \"c\": conflicting duplicate paths",
                "spec.projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
                "spec.projected.sources[1].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.projected.path: Required value",
            ]
        );
        // An image volume counts from 1.35 on, when the feature is on by default.
        assert_eq!(run(volume_source, &json!({"image": {}}), 34).len(), 1);
        assert!(run(volume_source, &json!({"image": {}}), 36).is_empty());
    }

    #[test]
    fn sub_paths_stay_inside_their_volume() {
        // ValidateVolumeMounts: subPath and subPathExpr at the list's path.
        let spec = json!({"volumes": [{"name": "data", "emptyDir": {}}],
        "containers": [{"name": "c", "volumeMounts": [
            {"name": "data", "mountPath": "/a", "subPath": "../up"},
            {"name": "data", "mountPath": "/b", "subPath": "x", "subPathExpr": "$(POD)"},
        ]}]});
        assert_eq!(
            run(volumes, &spec, 34),
            [
                "spec.containers[0].volumeMounts.subPath: Invalid value: \"../up\": must not contain '..'",
                "spec.containers[0].volumeMounts[1].subPathExpr: Invalid value: \"$(POD)\": subPathExpr and subPath are mutually exclusive",
            ]
        );
    }

    #[test]
    fn probe_header_names_are_http_tokens() {
        // validateHTTPGetAction: IsHTTPHeaderName, at `httpHeaders`.
        let probe = json!({"httpGet": {"path": "/", "port": 80, "scheme": "HTTP",
            "httpHeaders": [{"name": "X-Ok", "value": "1"}, {"name": "Bad Header", "value": "2"}]}});
        assert_eq!(
            run(handler, &probe, 34),
            [
                "spec.httpGet.httpHeaders: Invalid value: \"Bad Header\": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"
            ]
        );
    }

    #[test]
    fn network_volume_sources_name_what_they_mount() {
        // validateRBDVolumeSource, validateCinderVolumeSource, validateFlexVolumeSource,
        // validateAzureDisk.
        let check = |volume: Value| {
            super::super::lines(34, |errors| {
                volume_source(&volume, &FieldPath::of("v"), errors)
            })
        };
        assert_eq!(
            check(json!({"rbd": {"monitors": [], "image": "i"}})),
            ["v.rbd.monitors: Required value"]
        );
        assert_eq!(
            check(json!({"cinder": {"volumeID": "x", "secretRef": {}}})),
            ["v.cinder.secretRef.name: Required value"]
        );
        assert_eq!(
            check(
                json!({"flexVolume": {"driver": "d", "options": {"Example.K8s.io/x": "1", "mine": "2"}}})
            ),
            [
                "v.flexVolume.options[Example.K8s.io/x]: Invalid value: \"Example.K8s.io/x\": kubernetes.io and k8s.io namespaces are reserved"
            ]
        );
        assert_eq!(
            check(
                json!({"azureDisk": {"diskName": "d", "diskURI": "disk", "kind": "Managed", "cachingMode": "Fast"}})
            ),
            [
                "v.azureDisk.cachingMode: Unsupported value: \"Fast\": supported values: \"None\", \"ReadOnly\", \"ReadWrite\"",
                "v.azureDisk.diskURI: Unsupported value: \"disk\": supported values: \"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}\"",
            ]
        );
    }

    #[test]
    fn volumes_have_one_source_and_a_unique_name() {
        // ValidateVolumes: errors per volume, in order; a duplicate of a valid volume only.
        let spec = json!({"volumes": [
            {"name": "a", "emptyDir": {}},
            {"name": "a", "secret": {"secretName": "s"}},
            {"name": "Bad", "nfs": {"server": "nfs", "path": "/"}},
        ]});
        assert_eq!(
            run(volumes, &spec, 34),
            [
                "spec.volumes[1].name: Duplicate value: \"a\"",
                "spec.volumes[2].name: Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
    }

    #[test]
    fn mounts_name_a_valid_volume_and_a_unique_path() {
        // ValidateVolumeMounts; a volume with its own errors is not there to mount.
        let spec = json!({
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "bad"}],
            "containers": [{"name": "c", "volumeMounts": [
                {"name": "data", "mountPath": "/d"},
                {"name": "bad", "mountPath": "/d"},
                {"name": "", "mountPath": ""},
            ]}]
        });
        assert_eq!(
            run(volumes, &spec, 34),
            [
                "spec.volumes[1]: Required value: must specify a volume type",
                "spec.containers[0].volumeMounts[1].name: Not found: \"bad\"",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/d\": must be unique",
                "spec.containers[0].volumeMounts[2].name: Required value",
                "spec.containers[0].volumeMounts[2].name: Not found: \"\"",
                "spec.containers[0].volumeMounts[2].mountPath: Required value",
            ]
        );
    }

    #[test]
    fn requests_stay_within_limits() {
        // ValidateResourceRequirements: "of <limit>" from 1.27 on.
        let resources =
            json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1500m", "memory": "-1Gi"}});
        assert_eq!(
            run(super::resources, &resources, 20),
            [
                "spec.requests: Invalid value: \"1500m\": must be less than or equal to cpu limit",
                "spec.requests[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
            ]
        );
        assert_eq!(
            run(super::resources, &resources, 34)[0],
            "spec.requests: Invalid value: \"1500m\": must be less than or equal to cpu limit of 1"
        );
        let extended = json!({"requests": {"example.com/gpu": "1"}, "limits": {"gpu": "1"}});
        assert_eq!(
            run(super::resources, &extended, 34),
            [
                "spec.limits[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                "spec.limits[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
                "spec.limits: Required value: Limit must be set for non overcommitable resources",
            ]
        );
        let huge = json!({"limits": {"hugepages-2Mi": "2Mi"}});
        assert_eq!(
            run(super::resources, &huge, 34),
            ["spec: Forbidden: HugePages require cpu or memory"]
        );
    }

    #[test]
    fn actions_name_their_command_path_and_port() {
        // validateExecAction, validateHTTPGetAction, ValidatePortNumOrName.
        assert_eq!(
            run(handler, &json!({"exec": {}}), 34),
            ["spec.exec.command: Required value"]
        );
        assert_eq!(
            run(
                handler,
                &json!({"httpGet": {"path": "/", "port": 0, "scheme": "FTP"}}),
                28
            ),
            [
                "spec.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
            ]
        );
        assert_eq!(
            run(handler, &json!({"tcpSocket": {"port": "Web"}}), 34),
            [
                "spec.tcpSocket.port: Invalid value: \"Web\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"
            ]
        );
    }

    #[test]
    fn host_ports_are_taken_once() {
        // checkHostPortConflicts: across containers, each init container alone.
        let port = json!({"containerPort": 80, "hostPort": 8080, "protocol": "TCP"});
        let spec = json!({
            "initContainers": [{"ports": [port]}],
            "containers": [{"ports": [port]}, {"ports": [port]}],
        });
        assert_eq!(
            run(host_ports, &spec, 34),
            ["spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\""]
        );
    }

    #[test]
    fn tolerations_pair_operators_values_and_effects() {
        // ValidateTolerations; an Exists toleration's value shown whole before 1.34.
        let exists = json!({"key": "k", "operator": "Exists", "value": "v"});
        assert_eq!(
            run(toleration, &exists, 28),
            [
                "spec.operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'"
            ]
        );
        assert_eq!(
            run(toleration, &exists, 34),
            [
                "spec.operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"
            ]
        );
        let odd = json!({"operator": "Lt", "effect": "Never", "tolerationSeconds": 5});
        assert_eq!(
            run(toleration, &odd, 36),
            [
                "spec.operator: Invalid value: \"Lt\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                "spec.effect: Invalid value: \"Never\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                "spec.operator: Unsupported value: \"Lt\": supported values: \"Equal\", \"Exists\", \"Lt\", \"Gt\"",
                "spec.effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
            ]
        );
        assert_eq!(
            run(toleration, &odd, 34)[2],
            "spec.operator: Unsupported value: \"Lt\": supported values: \"Equal\", \"Exists\""
        );
    }

    #[test]
    fn pod_names_and_deadlines_are_checked_when_set() {
        // ValidatePodSpec: serviceAccountName, activeDeadlineSeconds, hostname.
        let spec = json!({"serviceAccountName": "", "activeDeadlineSeconds": 0, "hostname": "a.b"});
        assert_eq!(
            run(pod_fields, &spec, 34),
            [
                "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
                "spec.hostname: Invalid value: \"a.b\": must not contain dots",
            ]
        );
    }

    #[test]
    fn host_aliases_and_spread_constraints() {
        // ValidateHostAliases (indexed from 1.34), validateTopologySpreadConstraints.
        let spec = json!({"hostAliases": [{"ip": "10.0.0.300", "hostnames": ["ok"]}],
            "topologySpreadConstraints": [
                {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 0},
                {"maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2, "nodeTaintsPolicy": "Maybe"}]});
        let found = |minor| {
            let mut all = run(host_aliases, &spec, minor);
            all.extend(run(topology_spread, &spec, minor));
            all
        };
        assert_eq!(
            found(20),
            [
                "spec.hostAliases.ip: Invalid value: \"10.0.0.300\": must be valid IP address",
                "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
                "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"",
                "spec.topologySpreadConstraints[2].topologyKey: Required value: can not be empty",
            ]
        );
        assert_eq!(
            found(34),
            [
                "spec.hostAliases[0].ip: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
                "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"",
                "spec.topologySpreadConstraints[1].minDomains: Invalid value: 0: must be greater than zero",
                "spec.topologySpreadConstraints[2].topologyKey: Required value: can not be empty",
                "spec.topologySpreadConstraints[2].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
                "spec.topologySpreadConstraints[2].nodeTaintsPolicy: Unsupported value: \"Maybe\": supported values: \"Honor\", \"Ignore\"",
            ]
        );
    }

    #[test]
    fn dns_configs_name_servers_and_searches() {
        // validatePodDNSConfig: ExpandedDNSConfig from 1.28, RelaxedDNSSearchValidation from 1.34.
        assert_eq!(
            run(dns_config, &json!({"dnsPolicy": "None"}), 28),
            ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]
        );
        let spec = json!({"dnsConfig": {"nameservers": ["1.1.1.1", "x"], "searches": ["_srv.example.com", "ok."], "options": [{}]}});
        assert_eq!(
            run(dns_config, &spec, 20)[..2],
            [
                "spec.dnsConfig.nameservers[1]: Invalid value: \"x\": must be valid IP address",
                "spec.dnsConfig.searches[0]: Invalid value: \"_srv.example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        assert_eq!(
            run(dns_config, &spec, 34),
            [
                "spec.dnsConfig.nameservers[1]: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                "spec.dnsConfig.options[0]: Required value: must not be empty",
            ]
        );
        let many = json!({"dnsConfig": {"searches": ["a", "b", "c", "d", "e", "f", "g"]}});
        assert_eq!(
            run(dns_config, &many, 20),
            [
                "spec.dnsConfig.searches: Invalid value: []string{\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\"}: must not have more than 6 search paths"
            ]
        );
        assert!(run(dns_config, &many, 28).is_empty());
    }

    #[test]
    fn probes_have_one_handler_and_liveness_succeeds_once() {
        // validateHandler, validateLivenessProbe, validateStartupProbe.
        assert_eq!(
            run(
                handler,
                &json!({"exec": {"command": ["true"]}, "httpGet": {}}),
                34
            ),
            ["spec.httpGet: Forbidden: may not specify more than 1 handler type"]
        );
        assert_eq!(
            run(handler, &json!({"periodSeconds": 3}), 20),
            ["spec: Required value: must specify a handler type"]
        );
        // gRPC probes count from 1.24.
        assert_eq!(run(handler, &json!({"grpc": {"port": 1}}), 20).len(), 1);
        assert!(run(handler, &json!({"grpc": {"port": 1}}), 28).is_empty());
        let container = json!({"livenessProbe": {"successThreshold": 2}, "readinessProbe": {"successThreshold": 2}});
        assert_eq!(
            run(probe_thresholds, &container, 28),
            ["spec.livenessProbe.successThreshold: Invalid value: 2: must be 1"]
        );
    }
}
