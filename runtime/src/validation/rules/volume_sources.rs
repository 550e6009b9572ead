//! The fields of a pod volume's source beyond the required names and paths `pods` checks as
//! data (`validateVolumeSource`'s per-source validators in `pkg/apis/core/validation`): iSCSI
//! names and LUNs, Fibre Channel targets, disk partitions, a Git repository's directory, Quobyte
//! registries, StorageOS names, Flocker datasets, an ephemeral volume's claim template (its
//! metadata only labels and annotations, `ValidateTemplateObjectMeta`), an
//! emptyDir's size limit and a hostPath's type.
//! `pods::volume_source` counts the one source and calls [`source_fields`] with it.

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::super::meta;
use super::{cluster, present, security, text};
use crate::quantity::Quantity;

/// `pdPartitionErrorMsg`: `InclusiveRangeError(1, 255)`, though 0 passes.
const PARTITION_MSG: &str = "must be between 1 and 255, inclusive";
/// A LUN's range (`InclusiveRangeError(0, 255)`).
const LUN_MSG: &str = "must be between 0 and 255, inclusive";
/// `supportedHostPathTypes`, sorted as upstream lists them.
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];
/// The longest `<volume name>:<targetPortal>` when an iSCSI initiator name is set.
const ISCSI_NAME_MAX: usize = 64;

fn invalid_text(errors: &mut Errors, at: &FieldPath, value: &str, detail: &str) {
    errors.invalid(at, Shown::Plain(&Value::from(value)), detail);
}

/// The source's own checks that are not a required name, at `at` (the source's path as
/// upstream reports it).
pub(super) fn source_fields(field: &str, source: &Value, at: &FieldPath, errors: &mut Errors) {
    match field {
        "emptyDir" => {
            let negative = source
                .get("sizeLimit")
                .map(|q| q.as_str().map_or_else(|| q.to_string(), str::to_owned))
                .and_then(|q| q.parse::<Quantity>().ok())
                .is_some_and(|q| q.signum() < 0);
            if negative {
                let detail = "SizeLimit field must be a valid resource quantity";
                errors.forbidden(&at.child("sizeLimit"), detail);
            }
        }
        "gitRepo" => {
            security::local_descending_path(
                text(source, "directory"),
                &at.child("directory"),
                errors,
            );
        }
        "gcePersistentDisk" | "awsElasticBlockStore" => {
            let partition = source.get("partition").and_then(Value::as_i64).unwrap_or(0);
            if !(0..=255).contains(&partition) {
                let shown = Value::from(partition);
                errors.invalid(&at.child("partition"), Shown::Plain(&shown), PARTITION_MSG);
            }
        }
        "iscsi" => iscsi(source, at, errors),
        "fc" => fibre_channel(source, at, errors),
        "quobyte" => quobyte(source, at, errors),
        "storageos" => storageos(source, at, errors),
        "flocker" => flocker(source, at, errors),
        "ephemeral" => match present(source, "volumeClaimTemplate") {
            None => errors.required(&at.child("volumeClaimTemplate"), ""),
            Some(template) => {
                // ValidatePersistentVolumeClaimTemplate: the metadata, then the spec.
                let template_at = at.child("volumeClaimTemplate");
                let meta = template.get("metadata").unwrap_or(&Value::Null);
                meta::template_metadata(meta, &template_at.child("metadata"), errors);
                let spec = template.get("spec").unwrap_or(&Value::Null);
                cluster::claim_spec(spec, &template_at.child("spec"), errors);
            }
        },
        _ => {}
    }
}

/// `validateHostPathType`, after the path's own checks: a known type when set.
pub(super) fn host_path_type(source: &Value, at: &FieldPath, errors: &mut Errors) {
    if text(source, "path").is_empty() {
        return;
    }
    if let Some(kind) = source.get("type").and_then(Value::as_str)
        && !HOST_PATH_TYPES.contains(&kind)
    {
        errors.not_supported(&at.child("type"), &Value::from(kind), HOST_PATH_TYPES);
    }
}

/// `validateVolumeSource`'s iSCSI name check, made whichever source counted: with an initiator
/// name, `<volume name>:<targetPortal>` is under 64 characters.
pub(super) fn iscsi_volume_name(volume: &Value, at: &FieldPath, errors: &mut Errors) {
    let Some(iscsi) = present(volume, "iscsi") else {
        return;
    };
    let name = text(volume, "name");
    if present(iscsi, "initiatorName").is_some()
        && name.len() + 1 + text(iscsi, "targetPortal").len() > ISCSI_NAME_MAX
    {
        let detail = "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.";
        invalid_text(errors, &at.child("name"), name, detail);
    }
}

/// `validateISCSIVolumeSource` after the target portal: the IQN, LUN, CHAP secret and initiator
/// name.
fn iscsi(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let iqn = text(source, "iqn");
    let iqn_at = at.child("iqn");
    if iqn.is_empty() {
        errors.required(&iqn_at, "");
    } else if let Some(detail) = iscsi_name_error(iqn) {
        invalid_text(errors, &iqn_at, iqn, detail);
    }
    let lun = source.get("lun").and_then(Value::as_i64).unwrap_or(0);
    if !(0..=255).contains(&lun) {
        errors.invalid(&at.child("lun"), Shown::Plain(&Value::from(lun)), LUN_MSG);
    }
    let flag = |name: &str| source.get(name).and_then(Value::as_bool) == Some(true);
    if (flag("chapAuthDiscovery") || flag("chapAuthSession"))
        && present(source, "secretRef").is_none()
    {
        errors.required(&at.child("secretRef"), "");
    }
    if let Some(initiator) = present(source, "initiatorName") {
        let initiator = initiator.as_str().unwrap_or("");
        if let Some(detail) = iscsi_name_error(initiator) {
            invalid_text(errors, &at.child("initiatorname"), initiator, detail);
        }
    }
}

/// An IQN or initiator name: `iqn.`, `eui.` or `naa.` and its shape
/// (`iscsiInitiatorIqnRegex`, `...EuiRegex`, `...NaaRegex`).
fn iscsi_name_error(name: &str) -> Option<&'static str> {
    let alnum = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric());
    // Go's `.`: any character but a newline; then exactly n alphanumerics.
    let dotted = |rest: &str, n: usize| {
        let mut chars = rest.chars();
        chars.next().is_some_and(|c| c != '\n') && {
            let tail = chars.as_str();
            tail.len() == n && alnum(tail)
        }
    };
    let valid = if name.starts_with("iqn") {
        iqn_matches(name)
    } else if let Some(rest) = name.strip_prefix("eui") {
        dotted(rest, 16)
    } else if let Some(rest) = name.strip_prefix("naa") {
        dotted(rest, 32)
    } else {
        return Some("must be valid format starting with iqn, eui, or naa");
    };
    (!valid).then_some("must be valid format")
}

/// `iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`, unanchored at its start as Go's
/// `MatchString` runs it.
fn iqn_matches(name: &str) -> bool {
    name.match_indices("iqn.").any(|(start, _)| {
        let rest = &name[start + 4..];
        let bytes = rest.as_bytes();
        let date = bytes.len() > 8
            && bytes[..4].iter().all(u8::is_ascii_digit)
            && bytes[4] == b'-'
            && bytes[5..7].iter().all(u8::is_ascii_digit)
            && bytes[7] == b'.';
        if !date {
            return false;
        }
        let Some((naming, target)) = rest[8..].split_once(':') else {
            return false;
        };
        let naming_ok = !naming.is_empty()
            && naming
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        let target_ok = !target.is_empty()
            && target
                .chars()
                .all(|c| !",;*&$|".contains(c) && !matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c'));
        naming_ok && target_ok
    })
}

/// `validateFCVolumeSource`: target WWNs or WWIDs, not both, and a LUN with the WWNs.
fn fibre_channel(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let count = |name: &str| {
        source
            .get(name)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    let (wwns, wwids) = (count("targetWWNs"), count("wwids"));
    let wwns_at = at.child("targetWWNs");
    if wwns == 0 && wwids == 0 {
        let detail = "must specify either targetWWNs or wwids, but not both";
        errors.required(&wwns_at, detail);
    }
    if wwns != 0 && wwids != 0 {
        let shown = source.get("targetWWNs").unwrap_or(&Value::Null);
        let detail = "targetWWNs and wwids can not be specified simultaneously";
        errors.invalid(&wwns_at, Shown::GoSlice("[]string", shown), detail);
    }
    if wwns != 0 {
        match source.get("lun").and_then(Value::as_i64) {
            None => errors.required(
                &at.child("lun"),
                "lun is required if targetWWNs is specified",
            ),
            Some(lun) if !(0..=255).contains(&lun) => {
                errors.invalid(&at.child("lun"), Shown::Plain(&Value::from(lun)), LUN_MSG);
            }
            Some(_) => {}
        }
    }
}

/// `validateQuobyteVolumeSource`: a registry of host:port pairs, a tenant of at most 64
/// characters, a volume.
fn quobyte(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let registry = text(source, "registry");
    let detail = "must be a host:port pair or multiple pairs separated by commas";
    if registry.is_empty() {
        errors.required(&at.child("registry"), detail);
    } else if text(source, "tenant").len() >= 65 {
        let detail = "must be a UUID and may not exceed a length of 64 characters";
        errors.required(&at.child("tenant"), detail);
    } else {
        for pair in registry.split(',') {
            if !host_port(pair) {
                invalid_text(errors, &at.child("registry"), registry, detail);
            }
        }
    }
    if text(source, "volume").is_empty() {
        errors.required(&at.child("volume"), "");
    }
}

/// Whether Go's `net.SplitHostPort` takes `pair`: `host:port` or `[host]:port`, one colon
/// outside brackets.
fn host_port(pair: &str) -> bool {
    let Some(colon) = pair.rfind(':') else {
        return false;
    };
    let host = &pair[..colon];
    if let Some(inner) = host.strip_prefix('[') {
        let Some(inner) = inner.strip_suffix(']') else {
            return false;
        };
        return !inner.contains(['[', ']']);
    }
    !host.contains([':', '[', ']']) && !pair[colon + 1..].contains(['[', ']'])
}

/// `validateStorageOSVolumeSource`: the volume name (and namespace) DNS labels, a secret's name.
fn storageos(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let name = text(source, "volumeName");
    let name_at = at.child("volumeName");
    if name.is_empty() {
        errors.required(&name_at, "");
    } else {
        for message in Format::DnsLabel.messages(name, release) {
            invalid_text(errors, &name_at, name, &message);
        }
    }
    let namespace = text(source, "volumeNamespace");
    if !namespace.is_empty() {
        for message in Format::DnsLabel.messages(namespace, release) {
            invalid_text(errors, &at.child("volumeNamespace"), namespace, &message);
        }
    }
    if let Some(reference) = present(source, "secretRef")
        && text(reference, "name").is_empty()
    {
        errors.required(&at.child("secretRef").child("name"), "");
    }
}

/// `validateFlockerVolumeSource`: one of a dataset name (without `/`) and UUID.
fn flocker(source: &Value, at: &FieldPath, errors: &mut Errors) {
    let name = text(source, "datasetName");
    let uuid = text(source, "datasetUUID");
    if name.is_empty() && uuid.is_empty() {
        errors.required(at, "one of datasetName and datasetUUID is required");
    }
    if !name.is_empty() && !uuid.is_empty() {
        let detail = "datasetName and datasetUUID can not be specified simultaneously";
        invalid_text(errors, at, "resource", detail);
    }
    if name.contains('/') {
        invalid_text(
            errors,
            &at.child("datasetName"),
            name,
            "must not contain '/'",
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(field: &str, source: Value, minor: u16) -> Vec<String> {
        super::super::lines(minor, |errors| {
            source_fields(field, &source, &FieldPath::of("v"), errors);
        })
    }

    #[test]
    fn iscsi_names_and_luns_follow_upstream_s_patterns() {
        // validateISCSIVolumeSource (pkg/apis/core/validation).
        let ok = json!({"targetPortal": "10.0.0.1:3260", "lun": 0,
            "iqn": "iqn.2001-04.com.example:storage.disk1", "initiatorName": "eui.02004567A425678D"});
        assert!(check("iscsi", ok, 34).is_empty());
        let bad = json!({"iqn": "iqn.2001-04.com.example", "lun": 256, "chapAuthSession": true,
            "initiatorName": "x"});
        assert_eq!(
            check("iscsi", bad, 28),
            [
                r#"v.iqn: Invalid value: "iqn.2001-04.com.example": must be valid format"#,
                "v.lun: Invalid value: 256: must be between 0 and 255, inclusive",
                "v.secretRef: Required value",
                r#"v.initiatorname: Invalid value: "x": must be valid format starting with iqn, eui, or naa"#,
            ]
        );
        assert_eq!(
            check("iscsi", json!({"iqn": "naa.1"}), 20),
            [r#"v.iqn: Invalid value: "naa.1": must be valid format"#]
        );
    }

    #[test]
    fn other_sources_check_their_own_fields() {
        // validateFCVolumeSource, validateGCEPersistentDiskVolumeSource, validateGitRepoVolumeSource,
        // validateQuobyteVolumeSource, validateStorageOSVolumeSource, validateFlockerVolumeSource,
        // validateEphemeralVolumeSource.
        assert_eq!(
            check("fc", json!({}), 34),
            ["v.targetWWNs: Required value: must specify either targetWWNs or wwids, but not both"]
        );
        assert_eq!(
            check("fc", json!({"targetWWNs": ["a"], "wwids": ["b"]}), 28),
            [
                r#"v.targetWWNs: Invalid value: []string{"a"}: targetWWNs and wwids can not be specified simultaneously"#,
                "v.lun: Required value: lun is required if targetWWNs is specified",
            ]
        );
        assert_eq!(
            check(
                "gcePersistentDisk",
                json!({"pdName": "d", "partition": 300}),
                34
            ),
            ["v.partition: Invalid value: 300: must be between 1 and 255, inclusive"]
        );
        assert_eq!(
            check(
                "gitRepo",
                json!({"repository": "r", "directory": "../x"}),
                34
            ),
            [r#"v.directory: Invalid value: "../x": must not contain '..'"#]
        );
        assert_eq!(
            check("quobyte", json!({"registry": "host", "volume": "v"}), 34),
            [
                r#"v.registry: Invalid value: "host": must be a host:port pair or multiple pairs separated by commas"#
            ]
        );
        assert!(
            check(
                "quobyte",
                json!({"registry": "a:1,[::1]:2", "volume": "v"}),
                34
            )
            .is_empty()
        );
        assert_eq!(
            check(
                "storageos",
                json!({"volumeName": "Bad_Name", "secretRef": {}}),
                34
            )[1],
            "v.secretRef.name: Required value"
        );
        assert_eq!(
            check(
                "flocker",
                json!({"datasetName": "a/b", "datasetUUID": "u"}),
                34
            ),
            [
                r#"v: Invalid value: "resource": datasetName and datasetUUID can not be specified simultaneously"#,
                r#"v.datasetName: Invalid value: "a/b": must not contain '/'"#,
            ]
        );
        assert_eq!(
            check("emptyDir", json!({"sizeLimit": "-1Gi"}), 20),
            ["v.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity"]
        );
        let host_path = |minor| {
            super::super::lines(minor, |errors| {
                host_path_type(
                    &json!({"path": "/d", "type": "Dir"}),
                    &FieldPath::of("v"),
                    errors,
                );
            })
        };
        assert_eq!(
            host_path(36),
            [
                r#"v.type: Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket""#
            ]
        );
        assert_eq!(
            check("ephemeral", json!({}), 34),
            ["v.volumeClaimTemplate: Required value"]
        );
        assert_eq!(
            check(
                "ephemeral",
                json!({"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}),
                34
            ),
            ["v.volumeClaimTemplate.spec.resources[storage]: Required value"]
        );
    }

    #[test]
    fn a_claim_template_s_metadata_holds_only_labels_and_annotations() {
        // ValidatePersistentVolumeClaimTemplate's ValidateTemplateObjectMeta: annotations and
        // labels checked, every other ObjectMeta field set refused by validateFieldAllowList
        // at its Go name with the first letter lowered (`uID`); zero values pass.
        let template = json!({"volumeClaimTemplate": {
            "metadata": {
                "name": "data", "namespace": "", "uid": "1", "generation": 0,
                "creationTimestamp": null, "finalizers": [],
                "labels": {"app": "web", "bad key": "v"},
                "annotations": {"ok": "x", "-bad": "y"},
            },
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}},
        }});
        let at = "v.volumeClaimTemplate.metadata";
        assert_eq!(
            check("ephemeral", template, 36),
            [
                format!(
                    r#"{at}.annotations: Invalid value: "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#
                ),
                format!(
                    r#"{at}.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#
                ),
                format!("{at}.name: Forbidden: cannot be set"),
                format!("{at}.uID: Forbidden: cannot be set"),
                format!("{at}.finalizers: Forbidden: cannot be set"),
            ]
        );
    }
}
