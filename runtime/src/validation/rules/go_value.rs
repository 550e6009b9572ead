//! Upstream's internal Go structs as its errors print them (`pkg/apis/core/types.go`): where a
//! check reports a whole struct (`field.Invalid(fldPath, sc, ...)`), releases before 1.34 print
//! Go's `%#v` of it (pointers at an address, which kapi fixes at `0xc000000000`) and 1.34 on its
//! JSON, whose keys are the Go field names as the internal types have no JSON tags. A struct is
//! described as data, its fields in declaration order; [`render`] gives both texts.

use serde_json::{Map, Value};

use crate::KubeVersion;

/// The address kapi prints for a non-nil pointer (upstream prints a heap address).
const ADDRESS: &str = "0xc000000000";

/// A field's Go type.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// A string or a named string type.
    Str,
    /// A pointer to a scalar, its Go type named (`*bool`).
    Ptr(&'static str),
    /// A pointer to a struct.
    PtrStruct(&'static GoType),
    /// A slice of strings, its Go type named (`[]core.Capability`).
    StrSlice(&'static str),
    /// A slice of structs.
    StructSlice(&'static GoType),
    /// An integer (`int32`, `int64`), 0 when missing.
    Int,
    /// A struct embedded by value (1.20's `core.Probe` embeds `core.Handler`): Go prints it
    /// under its type's name, and its JSON flattens its fields into the outer struct.
    Embedded(&'static GoType),
}

/// A field: its Go name, its JSON name, its kind and the first release that has it.
type Field = (&'static str, &'static str, Kind, Option<KubeVersion>);

/// A struct: its Go name and its fields.
#[derive(Debug)]
pub(super) struct GoType {
    pub name: &'static str,
    pub fields: &'static [Field],
}

const fn f(go: &'static str, json: &'static str, kind: Kind) -> Field {
    (go, json, kind, None)
}

const fn since(go: &'static str, json: &'static str, kind: Kind, minor: u16) -> Field {
    (go, json, kind, Some(KubeVersion::new(1, minor)))
}

/// A pod's IP and its node's (`core.PodIP`, `core.HostIP`).
pub(super) static POD_IP: GoType = GoType {
    name: "core.PodIP",
    fields: &[f("IP", "ip", Kind::Str)],
};

pub(super) static HOST_IP: GoType = GoType {
    name: "core.HostIP",
    fields: &[f("IP", "ip", Kind::Str)],
};

pub(super) static CAPABILITIES: GoType = GoType {
    name: "core.Capabilities",
    fields: &[
        f("Add", "add", Kind::StrSlice("[]core.Capability")),
        f("Drop", "drop", Kind::StrSlice("[]core.Capability")),
    ],
};

pub(super) static SE_LINUX_OPTIONS: GoType = GoType {
    name: "core.SELinuxOptions",
    fields: &[
        f("User", "user", Kind::Str),
        f("Role", "role", Kind::Str),
        f("Type", "type", Kind::Str),
        f("Level", "level", Kind::Str),
    ],
};

pub(super) static WINDOWS_OPTIONS: GoType = GoType {
    name: "core.WindowsSecurityContextOptions",
    fields: &[
        f(
            "GMSACredentialSpecName",
            "gmsaCredentialSpecName",
            Kind::Ptr("*string"),
        ),
        f(
            "GMSACredentialSpec",
            "gmsaCredentialSpec",
            Kind::Ptr("*string"),
        ),
        f("RunAsUserName", "runAsUserName", Kind::Ptr("*string")),
        since("HostProcess", "hostProcess", Kind::Ptr("*bool"), 22),
    ],
};

pub(super) static SECCOMP_PROFILE: GoType = GoType {
    name: "core.SeccompProfile",
    fields: &[
        f("Type", "type", Kind::Str),
        f("LocalhostProfile", "localhostProfile", Kind::Ptr("*string")),
    ],
};

pub(super) static APPARMOR_PROFILE: GoType = GoType {
    name: "core.AppArmorProfile",
    fields: &[
        f("Type", "type", Kind::Str),
        f("LocalhostProfile", "localhostProfile", Kind::Ptr("*string")),
    ],
};

/// `core.SecurityContext` (a container's).
pub(super) static SECURITY_CONTEXT: GoType = GoType {
    name: "core.SecurityContext",
    fields: &[
        f(
            "Capabilities",
            "capabilities",
            Kind::PtrStruct(&CAPABILITIES),
        ),
        f("Privileged", "privileged", Kind::Ptr("*bool")),
        f(
            "SELinuxOptions",
            "seLinuxOptions",
            Kind::PtrStruct(&SE_LINUX_OPTIONS),
        ),
        f(
            "WindowsOptions",
            "windowsOptions",
            Kind::PtrStruct(&WINDOWS_OPTIONS),
        ),
        f("RunAsUser", "runAsUser", Kind::Ptr("*int64")),
        f("RunAsGroup", "runAsGroup", Kind::Ptr("*int64")),
        f("RunAsNonRoot", "runAsNonRoot", Kind::Ptr("*bool")),
        f(
            "ReadOnlyRootFilesystem",
            "readOnlyRootFilesystem",
            Kind::Ptr("*bool"),
        ),
        f(
            "AllowPrivilegeEscalation",
            "allowPrivilegeEscalation",
            Kind::Ptr("*bool"),
        ),
        f("ProcMount", "procMount", Kind::Ptr("*core.ProcMountType")),
        f(
            "SeccompProfile",
            "seccompProfile",
            Kind::PtrStruct(&SECCOMP_PROFILE),
        ),
        since(
            "AppArmorProfile",
            "appArmorProfile",
            Kind::PtrStruct(&APPARMOR_PROFILE),
            30,
        ),
    ],
};

pub(super) static NODE_SELECTOR_REQUIREMENT: GoType = GoType {
    name: "core.NodeSelectorRequirement",
    fields: &[
        f("Key", "key", Kind::Str),
        f("Operator", "operator", Kind::Str),
        f("Values", "values", Kind::StrSlice("[]string")),
    ],
};

pub(super) static NODE_SELECTOR_TERM: GoType = GoType {
    name: "core.NodeSelectorTerm",
    fields: &[
        f(
            "MatchExpressions",
            "matchExpressions",
            Kind::StructSlice(&NODE_SELECTOR_REQUIREMENT),
        ),
        f(
            "MatchFields",
            "matchFields",
            Kind::StructSlice(&NODE_SELECTOR_REQUIREMENT),
        ),
    ],
};

pub(super) static NODE_SELECTOR: GoType = GoType {
    name: "core.NodeSelector",
    fields: &[f(
        "NodeSelectorTerms",
        "nodeSelectorTerms",
        Kind::StructSlice(&NODE_SELECTOR_TERM),
    )],
};

/// `core.VolumeNodeAffinity` (a PersistentVolume's).
pub(super) static VOLUME_NODE_AFFINITY: GoType = GoType {
    name: "core.VolumeNodeAffinity",
    fields: &[f("Required", "required", Kind::PtrStruct(&NODE_SELECTOR))],
};

/// 1.20's `core.Handler`, a probe's or a lifecycle hook's one action.
pub(super) static HANDLER: GoType = GoType {
    name: "core.Handler",
    fields: &[
        f("Exec", "exec", Kind::Ptr("*core.ExecAction")),
        f("HTTPGet", "httpGet", Kind::Ptr("*core.HTTPGetAction")),
        f("TCPSocket", "tcpSocket", Kind::Ptr("*core.TCPSocketAction")),
    ],
};

/// 1.20's `core.Probe` (the only release kapi serves that prints one: an init container's
/// probe; 1.21 added `TerminationGracePeriodSeconds`, 1.23 renamed the embedded handler).
pub(super) static PROBE: GoType = GoType {
    name: "core.Probe",
    fields: &[
        f("Handler", "", Kind::Embedded(&HANDLER)),
        f("InitialDelaySeconds", "initialDelaySeconds", Kind::Int),
        f("TimeoutSeconds", "timeoutSeconds", Kind::Int),
        f("PeriodSeconds", "periodSeconds", Kind::Int),
        f("SuccessThreshold", "successThreshold", Kind::Int),
        f("FailureThreshold", "failureThreshold", Kind::Int),
    ],
};

/// 1.20's `core.Lifecycle` (an init container's, printed when refused).
pub(super) static LIFECYCLE: GoType = GoType {
    name: "core.Lifecycle",
    fields: &[
        f("PostStart", "postStart", Kind::PtrStruct(&HANDLER)),
        f("PreStop", "preStop", Kind::PtrStruct(&HANDLER)),
    ],
};

/// A struct value (API JSON) as Go's `%#v` prints it and as its internal JSON, in `release`.
pub(super) fn render(ty: &GoType, value: &Value, release: KubeVersion) -> (String, Value) {
    (
        go_struct(ty, value, release),
        json_struct(ty, value, release),
    )
}

/// A slice of structs, as [`render`] does.
pub(super) fn render_slice(ty: &GoType, value: &Value, release: KubeVersion) -> (String, Value) {
    (
        go_slice(ty, Some(value), release),
        json_slice(ty, Some(value), release),
    )
}

fn present(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

fn fields(ty: &GoType, release: KubeVersion) -> impl Iterator<Item = &Field> {
    ty.fields
        .iter()
        .filter(move |(_, _, _, since)| since.is_none_or(|s| release >= s))
}

fn go_text(value: Option<&Value>) -> String {
    Value::from(value.and_then(Value::as_str).unwrap_or("")).to_string()
}

fn go_struct(ty: &GoType, value: &Value, release: KubeVersion) -> String {
    let parts: Vec<String> = fields(ty, release)
        .map(|(go, json, kind, _)| {
            let field = present(value.get(*json));
            let shown = match kind {
                Kind::Str => go_text(field),
                Kind::Ptr(name) => pointer(name, field.is_some()),
                Kind::PtrStruct(inner) => pointer(&format!("*{}", inner.name), field.is_some()),
                Kind::StrSlice(name) => match field.and_then(Value::as_array) {
                    None => format!("{name}(nil)"),
                    Some(items) => {
                        let items: Vec<String> = items.iter().map(|i| go_text(Some(i))).collect();
                        format!("{name}{{{}}}", items.join(", "))
                    }
                },
                Kind::StructSlice(inner) => go_slice(inner, field, release),
                Kind::Int => field.and_then(Value::as_i64).unwrap_or(0).to_string(),
                Kind::Embedded(inner) => go_struct(inner, value, release),
            };
            format!("{go}:{shown}")
        })
        .collect();
    format!("{}{{{}}}", ty.name, parts.join(", "))
}

fn go_slice(ty: &GoType, value: Option<&Value>, release: KubeVersion) -> String {
    match present(value).and_then(Value::as_array) {
        None => format!("[]{}(nil)", ty.name),
        Some(items) => {
            let items: Vec<String> = items.iter().map(|i| go_struct(ty, i, release)).collect();
            format!("[]{}{{{}}}", ty.name, items.join(", "))
        }
    }
}

fn pointer(name: &str, set: bool) -> String {
    if set {
        format!("({name})({ADDRESS})")
    } else {
        format!("({name})(nil)")
    }
}

fn json_struct(ty: &GoType, value: &Value, release: KubeVersion) -> Value {
    let mut out = Map::new();
    for (go, json, kind, _) in fields(ty, release) {
        let field = present(value.get(*json));
        if let Kind::Embedded(inner) = kind {
            if let Value::Object(inner) = json_struct(inner, value, release) {
                out.extend(inner);
            }
            continue;
        }
        let shown = match kind {
            Kind::Str => Value::from(field.and_then(Value::as_str).unwrap_or("")),
            Kind::Ptr(_) | Kind::StrSlice(_) => field.cloned().unwrap_or(Value::Null),
            Kind::PtrStruct(inner) => field.map_or(Value::Null, |v| json_struct(inner, v, release)),
            Kind::StructSlice(inner) => json_slice(inner, field, release),
            Kind::Int => Value::from(field.and_then(Value::as_i64).unwrap_or(0)),
            Kind::Embedded(_) => continue,
        };
        out.insert((*go).to_owned(), shown);
    }
    Value::Object(out)
}

fn json_slice(ty: &GoType, value: Option<&Value>, release: KubeVersion) -> Value {
    match present(value).and_then(Value::as_array) {
        None => Value::Null,
        Some(items) => Value::Array(items.iter().map(|i| json_struct(ty, i, release)).collect()),
    }
}

/// Go's `%#v` of the `resource.Quantity` that `ParseQuantity` makes of `text` when it fits an
/// `int64Amount` (the string kept as `s` when already canonical): the form a target's bad
/// value prints in before 1.34 (its `String` method takes a pointer, so an error's
/// dereferenced value is printed as a struct). Other quantities print with their text as `s`.
pub(super) fn quantity(text: &str) -> String {
    let (value, scale, canonical, format) = int64_amount(text).unwrap_or((0, 0, true, "DecimalSI"));
    let kept = if canonical { text } else { "" };
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:{}, Format:\"{format}\"}}",
        Value::from(kept)
    )
}

/// `ParseQuantity`'s fast path: the `int64Amount` value and scale, whether the text is kept as
/// canonical, and the format; `None` where upstream would fall back to `inf.Dec`.
fn int64_amount(text: &str) -> Option<(i64, i32, bool, &'static str)> {
    let (positive, rest) = match text.strip_prefix('-') {
        Some(rest) => (false, rest),
        None => (true, text.strip_prefix('+').unwrap_or(text)),
    };
    let digits_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(digits_end);
    let (num, denom) = number.split_once('.').unwrap_or((number, ""));
    // Leading zeros go, as `parseQuantityString` drops them (keeping one).
    let num = match num.trim_start_matches('0') {
        "" => "0",
        trimmed => trimmed,
    };
    let (binary, exponent) = match suffix {
        "Ki" => (true, 10),
        "Mi" => (true, 20),
        "Gi" => (true, 30),
        "Ti" => (true, 40),
        "Pi" => (true, 50),
        "Ei" => (true, 60),
        "n" => (false, -9),
        "u" => (false, -6),
        "m" => (false, -3),
        "" => (false, 0),
        "k" => (false, 3),
        "M" => (false, 6),
        "G" => (false, 9),
        "T" => (false, 12),
        "P" => (false, 15),
        "E" => (false, 18),
        _ => return None,
    };
    let shifted = format!("{num}{denom}");
    let parsed: i64 = shifted.parse().ok()?;
    let sign = if positive { 1 } else { -1 };
    if binary {
        if !denom.is_empty() {
            return None;
        }
        let value = parsed.checked_mul(1_i64.checked_shl(u32::try_from(exponent).ok()?)?)?;
        let canonical = exponent % 10 == 0 && parsed & 0x07 != 0;
        return Some((sign * value, 0, canonical, "BinarySI"));
    }
    let precision = 18 - i32::try_from(num.len() + denom.len()).ok()?;
    let scale = exponent - i32::try_from(denom.len()).ok()?;
    if precision < 0 || scale < -9 {
        return None;
    }
    let canonical = scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0');
    Some((sign * parsed, scale, canonical, "DecimalSI"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn quantities_print_as_parse_quantity_leaves_them() {
        // resource.ParseQuantity's int64Amount, its text kept when canonical.
        assert_eq!(int64_amount("-100m"), Some((-100, -3, true, "DecimalSI")));
        assert_eq!(int64_amount("1Ki"), Some((1024, 0, true, "BinarySI")));
        assert_eq!(int64_amount("1000"), Some((1000, 0, false, "DecimalSI")));
        assert_eq!(
            quantity("500m"),
            "resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}"
        );
    }

    #[test]
    fn structs_print_as_go_before_1_34_and_as_go_named_json_after() {
        let sc = json!({"privileged": true, "allowPrivilegeEscalation": false});
        let (go, _) = render(&SECURITY_CONTEXT, &sc, KubeVersion::new(1, 28));
        assert_eq!(
            go,
            "core.SecurityContext{Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0xc000000000), SELinuxOptions:(*core.SELinuxOptions)(nil), WindowsOptions:(*core.WindowsSecurityContextOptions)(nil), RunAsUser:(*int64)(nil), RunAsGroup:(*int64)(nil), RunAsNonRoot:(*bool)(nil), ReadOnlyRootFilesystem:(*bool)(nil), AllowPrivilegeEscalation:(*bool)(0xc000000000), ProcMount:(*core.ProcMountType)(nil), SeccompProfile:(*core.SeccompProfile)(nil)}"
        );
        let (_, json) = render(&SECURITY_CONTEXT, &sc, KubeVersion::new(1, 34));
        assert_eq!(
            json.to_string(),
            r#"{"Capabilities":null,"Privileged":true,"SELinuxOptions":null,"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":null,"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":null,"SeccompProfile":null,"AppArmorProfile":null}"#
        );
        let terms =
            json!([{"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}]);
        let (go, json) = render_slice(&NODE_SELECTOR_TERM, &terms, KubeVersion::new(1, 28));
        assert_eq!(
            go,
            r#"[]core.NodeSelectorTerm{core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:"a", Operator:"In", Values:[]string{"x"}}}, MatchFields:[]core.NodeSelectorRequirement(nil)}}"#
        );
        assert_eq!(
            json.to_string(),
            r#"[{"MatchExpressions":[{"Key":"a","Operator":"In","Values":["x"]}],"MatchFields":null}]"#
        );
    }
}
