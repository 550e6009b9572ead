//! The networking rules that are code (`pkg/apis/networking/validation/validation.go`): an
//! Ingress's spec, rule hosts, paths and backends (in networking/v1 and in the v1beta1 shapes
//! 1.20 serves), an IngressClass's controller, and a NetworkPolicy's ports, peers and policy
//! types.

use std::net::IpAddr;

use serde_json::Value;

use super::super::field::{Errors, FieldPath, Shown};
use super::super::format::Format;
use super::super::meta::labels;
use super::{port_number, text};
use crate::KubeVersion;

/// The Ingress shape a rule reads: networking/v1, or the v1beta1 shape of 1.20's
/// `networking.k8s.io/v1beta1` and `extensions/v1beta1` (`backend`, `serviceName`,
/// `servicePort`), whose paths upstream reports in the request's own field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IngressShape {
    /// `defaultBackend`, `service.name`, `service.port.{name,number}`.
    V1,
    /// `backend`, `serviceName`, `servicePort`.
    V1beta1,
}

/// `supportedPathTypes.List()`, sorted.
const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];
const INVALID_PATH_SEQUENCES: &[&str] = &["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: &[&str] = &["/..", "/."];
/// `maxLenIngressClassController`.
const MAX_CONTROLLER_LEN: usize = 250;

const WILDCARD_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";
const WILDCARD_FMT: &str = "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

fn invalid_text(errors: &mut Errors, path: &FieldPath, value: &str, detail: &str) {
    errors.invalid(path, Shown::Plain(&Value::from(value)), detail);
}

/// `ValidateIngressSpec`: a default backend or rules.
pub(super) fn ingress_spec(shape: IngressShape, spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let backend = match shape {
        IngressShape::V1 => "defaultBackend",
        IngressShape::V1beta1 => "backend",
    };
    let rules = spec.get("rules").unwrap_or(&Value::Null);
    let has_backend = spec.get(backend).is_some_and(|b| !b.is_null());
    if rules.as_array().is_none_or(Vec::is_empty) && !has_backend {
        let detail = format!("either `{backend}` or `rules` must be specified");
        let shown = Shown::GoSlice("[]networking.IngressRule", rules);
        errors.invalid(at, shown, &detail);
    }
}

/// `IsWildcardDNS1123Subdomain`.
fn wildcard_messages(host: &str, release: KubeVersion) -> Vec<String> {
    let mut out = Vec::new();
    if host.len() > 253 {
        out.push("must be no more than 253 characters".to_owned());
    }
    let valid = host.strip_prefix("*.").is_some_and(|rest| {
        !rest.is_empty() && Format::DnsSubdomain.messages(rest, release).is_empty()
    });
    if !valid {
        out.push(format!(
            "{WILDCARD_MSG} (e.g. '*.example.com', regex used for validation is '{WILDCARD_FMT}')"
        ));
    }
    out
}

/// `validateIngressRules`: a rule's host is a DNS name, a wildcard one when it has a `*`.
pub(super) fn ingress_host(rule: &Value, at: &FieldPath, errors: &mut Errors) {
    let host = text(rule, "host");
    if host.is_empty() {
        return;
    }
    let path = at.child("host");
    if host.parse::<IpAddr>().is_ok() {
        invalid_text(errors, &path, host, "must be a DNS name, not an IP address");
    }
    let messages = if host.contains('*') {
        wildcard_messages(host, errors.release())
    } else {
        Format::DnsSubdomain.messages(host, errors.release())
    };
    for message in messages {
        invalid_text(errors, &path, host, &message);
    }
}

/// A TLS secret name, checked when not empty (`validateTLSSecretName`: a DNS subdomain).
fn tls_secret_messages(name: &str, release: KubeVersion) -> Vec<String> {
    if name.is_empty() {
        return Vec::new();
    }
    Format::DnsSubdomain.messages(name, release)
}

fn tls_items(spec: &Value) -> impl Iterator<Item = &Value> {
    spec.get("tls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// `validateIngressTLS`: hosts are DNS names, wildcard ones with a `*`; secret names are DNS
/// subdomains unless the stored Ingress already had one that is not (`allowInvalidSecretName`).
pub(super) fn ingress_tls(spec: &Value, old: Option<&Value>, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    let allow_invalid_secret = old.is_some_and(|old| {
        tls_items(old).any(|tls| !tls_secret_messages(text(tls, "secretName"), release).is_empty())
    });
    for (i, tls) in tls_items(spec).enumerate() {
        let item = at.child("tls").index(i);
        for (j, host) in tls
            .get("hosts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let host = host.as_str().unwrap_or("");
            let messages = if host.contains('*') {
                wildcard_messages(host, release)
            } else {
                Format::DnsSubdomain.messages(host, release)
            };
            for message in messages {
                invalid_text(errors, &item.child("hosts").index(j), host, &message);
            }
        }
        if !allow_invalid_secret {
            let name = text(tls, "secretName");
            for message in tls_secret_messages(name, release) {
                invalid_text(errors, &item.child("secretName"), name, &message);
            }
        }
    }
}

/// `validateHTTPIngressPath`: a path type, and a path it allows.
pub(super) fn ingress_path(path_item: &Value, at: &FieldPath, errors: &mut Errors) {
    // The codec writes a missing required string as "", so "" is a missing type here.
    let Some(path_type) = path_item
        .get("pathType")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        errors.required(&at.child("pathType"), "pathType must be specified");
        return;
    };
    let path = text(path_item, "path");
    let path_at = at.child("path");
    match path_type {
        "Exact" | "Prefix" => {
            if !path.starts_with('/') {
                invalid_text(errors, &path_at, path, "must be an absolute path");
            }
            if !path.is_empty() {
                for sequence in INVALID_PATH_SEQUENCES {
                    if path.contains(sequence) {
                        let detail = format!("must not contain '{sequence}'");
                        invalid_text(errors, &path_at, path, &detail);
                    }
                }
                for suffix in INVALID_PATH_SUFFIXES {
                    if path.ends_with(suffix) {
                        let detail = format!("cannot end with '{suffix}'");
                        invalid_text(errors, &path_at, path, &detail);
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !path.is_empty() && !path.starts_with('/') {
                invalid_text(errors, &path_at, path, "must be an absolute path");
            }
        }
        other => errors.not_supported(&at.child("pathType"), &Value::from(other), PATH_TYPES),
    }
}

/// A backend's Service, as upstream's internal type holds it: name, port name, port number.
struct ServiceBackend<'v> {
    name: &'v str,
    port_name: &'v str,
    port_number: i64,
}

/// `validateIngressBackend`: a Service or a resource, not both; a Service has a DNS-1035 name
/// and a port name or number.
pub(super) fn ingress_backend(
    shape: IngressShape,
    backend: &Value,
    at: &FieldPath,
    errors: &mut Errors,
) {
    let resource = backend.get("resource").is_some_and(|r| !r.is_null());
    let (service, name_at, port_name_at, port_number_at) = match shape {
        IngressShape::V1 => {
            let service = backend.get("service").filter(|s| !s.is_null());
            let port = service.and_then(|s| s.get("port"));
            let service = service.map(|s| ServiceBackend {
                name: text(s, "name"),
                port_name: port.map_or("", |p| text(p, "name")),
                port_number: port
                    .and_then(|p| p.get("number"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            });
            let port_at = at.child("service").child("port");
            (
                service,
                at.child("service").child("name"),
                port_at.child("name"),
                port_at.child("number"),
            )
        }
        IngressShape::V1beta1 => {
            // Conversion makes a Service backend of any service name or port.
            let name = text(backend, "serviceName");
            let port = backend.get("servicePort");
            let (port_name, port_number) = match port {
                Some(Value::String(name)) => (name.as_str(), 0),
                Some(Value::Number(n)) => ("", n.as_i64().unwrap_or(0)),
                _ => ("", 0),
            };
            let set = !name.is_empty() || port_number != 0 || port.is_some_and(Value::is_string);
            let service = set.then_some(ServiceBackend {
                name,
                port_name,
                port_number,
            });
            let port_at = at.child("servicePort");
            (service, at.child("serviceName"), port_at.clone(), port_at)
        }
    };
    let empty = Value::from("");
    match (resource, service) {
        (true, Some(_)) => {
            errors.invalid(
                at,
                Shown::Plain(&empty),
                "cannot set both resource and service backends",
            );
        }
        (true, None) => {}
        (false, Some(service)) => {
            if service.name.is_empty() {
                errors.required(&name_at, "");
            } else {
                for message in Format::Dns1035Label.messages(service.name, errors.release()) {
                    invalid_text(errors, &name_at, service.name, &message);
                }
            }
            match (service.port_name.is_empty(), service.port_number) {
                (false, n) if n != 0 => errors.invalid(
                    at,
                    Shown::Plain(&empty),
                    "cannot set both port name & port number",
                ),
                (false, _) => {
                    for message in Format::PortName.messages(service.port_name, errors.release()) {
                        invalid_text(errors, &port_name_at, service.port_name, &message);
                    }
                }
                (true, 0) => errors.required(at, "port name or number is required"),
                (true, n) => {
                    port_number(n, &port_number_at, errors);
                }
            }
        }
        (false, None) => errors.invalid(
            at,
            Shown::Plain(&empty),
            "resource or service backend is required",
        ),
    }
}

/// The annotation that named an Ingress's class before `ingressClassName`.
const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";
/// The first release read letting the annotation stand beside the field when both name the
/// same class, with the message saying so (1.20's refuses any pair).
const MATCHING_CLASS_SINCE: KubeVersion = KubeVersion::new(1, 28);

/// `ValidateIngressCreate`'s class check, on a new Ingress: the annotation and
/// `ingressClassName` not both set (from 1.28: not naming different classes), reported at
/// upstream's `annotations.kubernetes.io/ingress.class` (without `metadata.`).
pub(super) fn ingress_class_annotation(ingress: &Value, at: &FieldPath, errors: &mut Errors) {
    let annotation = ingress
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CLASS_ANNOTATION))
        .and_then(Value::as_str);
    let field = ingress
        .pointer("/spec/ingressClassName")
        .and_then(Value::as_str);
    let (Some(annotation), Some(field)) = (annotation, field) else {
        return;
    };
    let path = at.child("annotations").child(CLASS_ANNOTATION);
    if errors.release() < MATCHING_CLASS_SINCE {
        invalid_text(
            errors,
            &path,
            annotation,
            "can not be set when the class field is also set",
        );
    } else if annotation != field {
        let detail = "must match `ingressClassName` when both are specified";
        invalid_text(errors, &path, annotation, detail);
    }
}

/// `validateIngressClassSpec`: the controller is at most 250 characters and a domain-prefixed
/// path (`IsDomainPrefixedPath`).
pub(super) fn ingress_class_controller(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let controller = text(spec, "controller");
    let path = at.child("controller");
    if controller.len() > MAX_CONTROLLER_LEN {
        errors.too_long(&path, MAX_CONTROLLER_LEN);
    }
    domain_prefixed_path(controller, &path, errors);
}

/// `IsDomainPrefixedPath`: a DNS subdomain, `/`, and an HTTP path; an IngressClass's controller,
/// a Job's `managedBy`.
pub(super) fn domain_prefixed_path(value: &str, path: &FieldPath, errors: &mut Errors) {
    if value.is_empty() {
        errors.required(path, "");
        return;
    }
    let Some((host, rest)) = value
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        let detail = "must be a domain-prefixed path (such as \"acme.io/foo\")";
        invalid_text(errors, path, value, detail);
        return;
    };
    for message in Format::DnsSubdomain.messages(host, errors.release()) {
        invalid_text(errors, path, host, &message);
    }
    let http_path = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !rest.chars().all(http_path) {
        let detail = format!("Invalid path (regex used for validation is '{HTTP_PATH_FMT}')");
        invalid_text(errors, path, rest, &detail);
    }
}

/// The release from which a selector's values must be label values
/// (`AllowInvalidLabelValueInSelector` is false for new objects).
const SELECTOR_VALUES_SINCE: KubeVersion = KubeVersion::new(1, 26);

/// `ValidateLabelSelector` (apimachinery's `meta/v1/validation`): `matchLabels` as labels, each
/// requirement's operator, values and key.
pub(super) fn label_selector(selector: &Value, at: &FieldPath, errors: &mut Errors) {
    let release = errors.release();
    labels(selector, "matchLabels", at, errors);
    for (i, requirement) in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let item = at.child("matchExpressions").index(i);
        let values: Vec<&str> = requirement
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or(""))
            .collect();
        let operator = text(requirement, "operator");
        match operator {
            "In" | "NotIn" if values.is_empty() => errors.required(
                &item.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.forbidden(
                &item.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => invalid_text(
                errors,
                &item.child("operator"),
                other,
                "not a valid selector operator",
            ),
        }
        let key = text(requirement, "key");
        for message in Format::QualifiedName.messages(key, release) {
            invalid_text(errors, &item.child("key"), key, &message);
        }
        if release >= SELECTOR_VALUES_SINCE {
            for (j, value) in values.iter().enumerate() {
                for message in Format::LabelValue.messages(value, release) {
                    invalid_text(errors, &item.child("values").index(j), value, &message);
                }
            }
        }
    }
}

/// `ValidateNetworkPolicyPort`: protocol, and a port number or name (an `endPort` only after a
/// number, and not below it).
pub(super) fn network_policy_port(port: &Value, at: &FieldPath, errors: &mut Errors) {
    if let Some(protocol) = port.get("protocol").and_then(Value::as_str)
        && !matches!(protocol, "TCP" | "UDP" | "SCTP")
    {
        errors.not_supported(
            &at.child("protocol"),
            &Value::from(protocol),
            &["TCP", "UDP", "SCTP"],
        );
    }
    let end = port.get("endPort").and_then(Value::as_i64);
    let end_at = at.child("endPort");
    let port_at = at.child("port");
    match port.get("port") {
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            port_number(n, &port_at, errors);
            if let Some(end) = end {
                if end < n {
                    let detail = "must be greater than or equal to `port`";
                    errors.invalid(&end_at, Shown::Plain(&Value::from(n)), detail);
                }
                port_number(end, &end_at, errors);
            }
        }
        Some(Value::String(name)) => {
            if let Some(end) = end {
                let detail = "may not be specified when `port` is non-numeric";
                errors.invalid(&end_at, Shown::Plain(&Value::from(end)), detail);
            }
            for message in Format::PortName.messages(name, errors.release()) {
                invalid_text(errors, &port_at, name, &message);
            }
        }
        _ => {
            if let Some(end) = end {
                let detail = "may not be specified when `port` is not specified";
                errors.invalid(&end_at, Shown::Plain(&Value::from(end)), detail);
            }
        }
    }
}

/// The release from which a bad CIDR is worded by `IsValidCIDRForLegacyField` and a bad
/// `except` no longer stops the checks (the first release read with it).
const LEGACY_CIDR_FIELD_SINCE: KubeVersion = KubeVersion::new(1, 33);

/// A CIDR as `netutils.ParseCIDRSloppy` reads it (IPv4 parts may have leading zeros): the
/// network's bits, its width in bits and its prefix length.
pub(super) fn parse_cidr(text: &str) -> Option<(u128, u32, u32)> {
    let (ip, prefix) = text.split_once('/')?;
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let prefix: u32 = prefix.parse().ok()?;
    let (bits, width) = if ip.contains(':') {
        (u128::from(ip.parse::<std::net::Ipv6Addr>().ok()?), 128)
    } else {
        let parts: Vec<&str> = ip.split('.').collect();
        if parts.len() != 4 {
            return None;
        }
        let mut value: u128 = 0;
        for part in parts {
            if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let octet: u8 = part.parse().ok()?;
            value = (value << 8) | u128::from(octet);
        }
        (value, 32)
    };
    if prefix > width {
        return None;
    }
    let mask = if prefix == 0 {
        0
    } else {
        (u128::MAX >> (128 - width)) & !((1u128 << (width - prefix)) - 1)
    };
    Some((bits & mask, width, prefix))
}

/// `ValidateIPBlock`: a CIDR, and `except` entries strictly inside it.
pub(super) fn ip_block(block: &Value, at: &FieldPath, errors: &mut Errors) {
    let legacy = errors.release() >= LEGACY_CIDR_FIELD_SINCE;
    let bad_cidr = if legacy {
        "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
    } else {
        "not a valid CIDR"
    };
    let cidr = text(block, "cidr");
    let cidr_at = at.child("cidr");
    if cidr.is_empty() {
        errors.required(&cidr_at, "");
        return;
    }
    let Some((network, width, prefix)) = parse_cidr(cidr) else {
        invalid_text(errors, &cidr_at, cidr, bad_cidr);
        return;
    };
    for (i, except) in block
        .get("except")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let except = except.as_str().unwrap_or("");
        let except_at = at.child("except").index(i);
        let Some((inner, inner_width, inner_prefix)) = parse_cidr(except) else {
            invalid_text(errors, &except_at, except, bad_cidr);
            if legacy {
                continue;
            }
            return;
        };
        let mask = if prefix == 0 {
            0
        } else {
            (u128::MAX >> (128 - width)) & !((1u128 << (width - prefix)) - 1)
        };
        let inside = inner_width == width && inner & mask == network;
        if !inside || prefix >= inner_prefix {
            invalid_text(
                errors,
                &except_at,
                except,
                "must be a strict subset of `cidr`",
            );
        }
    }
}

/// `ValidateNetworkPolicyPeer`: a pod selector, a namespace selector or an IP block, the block
/// alone.
pub(super) fn network_policy_peer(peer: &Value, at: &FieldPath, errors: &mut Errors) {
    let set = |field: &str| peer.get(field).is_some_and(|v| !v.is_null());
    let count = ["podSelector", "namespaceSelector", "ipBlock"]
        .into_iter()
        .filter(|f| set(f))
        .count();
    if count == 0 {
        errors.required(at, "must specify a peer");
    } else if count > 1 && set("ipBlock") {
        errors.forbidden(at, "may not specify both ipBlock and another peer");
    }
}

/// `ValidateNetworkPolicySpec`'s policy types: `Ingress` or `Egress`.
pub(super) fn policy_types(spec: &Value, at: &FieldPath, errors: &mut Errors) {
    let types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let path = at.child("policyTypes");
    if types.len() > 2 {
        let list = spec.get("policyTypes").unwrap_or(&Value::Null);
        let shown = Shown::GoSlice("[]networking.PolicyType", list);
        errors.invalid(&path, shown, "may not specify more than two policyTypes");
        return;
    }
    for (i, value) in types.iter().enumerate() {
        let name = value.as_str().unwrap_or("");
        if !matches!(name, "Ingress" | "Egress") {
            errors.not_supported(&path.index(i), &Value::from(name), &["Ingress", "Egress"]);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::lines;
    use super::*;

    fn run(
        rule: impl Fn(&Value, &FieldPath, &mut Errors),
        value: &Value,
        minor: u16,
    ) -> Vec<String> {
        super::super::lines(minor, |e| rule(value, &FieldPath::of("spec"), e))
    }

    #[test]
    fn the_class_annotation_and_field_agree() {
        // ValidateIngressCreate: both refused in 1.20, differing ones from 1.28 read.
        let ingress = |annotation: &str| {
            json!({"metadata": {"annotations": {"kubernetes.io/ingress.class": annotation}},
                "spec": {"ingressClassName": "nginx"}})
        };
        let root = FieldPath::root();
        assert_eq!(
            lines(20, |e| ingress_class_annotation(
                &ingress("nginx"),
                &root,
                e
            )),
            [
                "annotations.kubernetes.io/ingress.class: Invalid value: \"nginx\": can not be set when the class field is also set"
            ]
        );
        assert!(
            lines(28, |e| ingress_class_annotation(
                &ingress("nginx"),
                &root,
                e
            ))
            .is_empty()
        );
        assert_eq!(
            lines(34, |e| ingress_class_annotation(
                &ingress("other"),
                &root,
                e
            )),
            [
                "annotations.kubernetes.io/ingress.class: Invalid value: \"other\": must match `ingressClassName` when both are specified"
            ]
        );
    }

    #[test]
    fn an_ingress_needs_rules_or_a_default_backend() {
        // ValidateIngressSpec, with the v1beta1 field name in 1.20's v1beta1 requests.
        let v1 = |s: &Value, a: &FieldPath, e: &mut Errors| ingress_spec(IngressShape::V1, s, a, e);
        let beta =
            |s: &Value, a: &FieldPath, e: &mut Errors| ingress_spec(IngressShape::V1beta1, s, a, e);
        assert_eq!(
            run(v1, &json!({}), 34),
            ["spec: Invalid value: null: either `defaultBackend` or `rules` must be specified"]
        );
        assert_eq!(
            run(beta, &json!({"rules": []}), 20),
            [
                "spec: Invalid value: []networking.IngressRule{}: either `backend` or `rules` must be specified"
            ]
        );
        assert!(run(v1, &json!({"defaultBackend": {}}), 34).is_empty());
    }

    #[test]
    fn hosts_are_dns_names_or_wildcards() {
        // validateIngressRules.
        assert_eq!(
            run(ingress_host, &json!({"host": "1.2.3.4"}), 34),
            ["spec.host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address"]
        );
        assert_eq!(
            run(ingress_host, &json!({"host": "a.*.com"}), 34),
            [format!(
                "spec.host: Invalid value: \"a.*.com\": {WILDCARD_MSG} (e.g. '*.example.com', regex used for validation is '{WILDCARD_FMT}')"
            )]
        );
        assert!(run(ingress_host, &json!({"host": "*.example.com"}), 34).is_empty());
        assert_eq!(run(ingress_host, &json!({"host": "Foo.com"}), 34).len(), 1);
    }

    #[test]
    fn tls_hosts_and_secret_names() {
        // validateIngressTLS; a stored invalid secret name lets an update keep it.
        let spec =
            json!({"tls": [{"hosts": ["Bad.example", "*.ok.example"], "secretName": "Bad"}]});
        let found = |old: Option<&Value>| {
            let mut errors = Errors::new(KubeVersion::new(1, 34));
            ingress_tls(&spec, old, &FieldPath::of("spec"), &mut errors);
            errors
                .into_causes()
                .into_iter()
                .map(|c| c.field.unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            found(None),
            ["spec.tls[0].hosts[0]", "spec.tls[0].secretName"]
        );
        assert_eq!(found(Some(&spec)), ["spec.tls[0].hosts[0]"]);
    }

    #[test]
    fn paths_have_a_type_and_an_absolute_path() {
        // validateHTTPIngressPath.
        assert_eq!(
            run(ingress_path, &json!({"path": "/a"}), 34),
            ["spec.pathType: Required value: pathType must be specified"]
        );
        assert_eq!(
            run(
                ingress_path,
                &json!({"path": "a//b/.", "pathType": "Prefix"}),
                34
            ),
            [
                "spec.path: Invalid value: \"a//b/.\": must be an absolute path",
                "spec.path: Invalid value: \"a//b/.\": must not contain '//'",
                "spec.path: Invalid value: \"a//b/.\": cannot end with '/.'",
            ]
        );
        assert_eq!(
            run(ingress_path, &json!({"path": "/", "pathType": "Regex"}), 34),
            [
                "spec.pathType: Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""
            ]
        );
    }

    #[test]
    fn backends_name_a_service_port_or_a_resource() {
        // validateIngressBackend, and 1.20's v1beta1 paths (serviceNameFieldPath, ...).
        let v1 =
            |b: &Value, a: &FieldPath, e: &mut Errors| ingress_backend(IngressShape::V1, b, a, e);
        let beta = |b: &Value, a: &FieldPath, e: &mut Errors| {
            ingress_backend(IngressShape::V1beta1, b, a, e)
        };
        assert_eq!(
            run(v1, &json!({}), 34),
            ["spec: Invalid value: \"\": resource or service backend is required"]
        );
        assert_eq!(
            run(v1, &json!({"service": {"name": "1web", "port": {}}}), 34),
            [
                "spec.service.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec: Required value: port name or number is required",
            ]
        );
        assert_eq!(
            run(
                v1,
                &json!({"service": {"name": "web", "port": {"name": "http", "number": 80}}}),
                34
            ),
            ["spec: Invalid value: \"\": cannot set both port name & port number"]
        );
        assert_eq!(
            run(
                beta,
                &json!({"serviceName": "web", "servicePort": 70000}),
                20
            ),
            ["spec.servicePort: Invalid value: 70000: must be between 1 and 65535, inclusive"]
        );
        assert_eq!(
            run(beta, &json!({"servicePort": "http"}), 20),
            ["spec.serviceName: Required value"]
        );
    }

    #[test]
    fn ingress_class_controllers_are_domain_prefixed_paths() {
        // validateIngressClassSpec, IsDomainPrefixedPath.
        assert_eq!(
            run(
                ingress_class_controller,
                &json!({"controller": "nginx"}),
                34
            ),
            [
                "spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")"
            ]
        );
        assert_eq!(
            run(ingress_class_controller, &json!({}), 34),
            ["spec.controller: Required value"]
        );
        assert!(
            run(
                ingress_class_controller,
                &json!({"controller": "k8s.io/ingress-nginx"}),
                34
            )
            .is_empty()
        );
    }

    #[test]
    fn ip_blocks_hold_their_exceptions() {
        // ValidateIPBlock; IsValidCIDRForLegacyField's wording from 1.33.
        let block = json!({"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "11.0.0.0/16", "10.0.0.0/8", "x"]});
        assert_eq!(
            run(ip_block, &block, 28),
            [
                "spec.except[1]: Invalid value: \"11.0.0.0/16\": must be a strict subset of `cidr`",
                "spec.except[2]: Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`",
                "spec.except[3]: Invalid value: \"x\": not a valid CIDR",
            ]
        );
        assert_eq!(
            run(ip_block, &json!({"cidr": "10.0.0.0/33"}), 34),
            [
                "spec.cidr: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            ]
        );
        assert!(
            run(
                ip_block,
                &json!({"cidr": "2001:db8::/32", "except": ["2001:db8:1::/48"]}),
                34
            )
            .is_empty()
        );
        assert_eq!(run(ip_block, &json!({}), 34), ["spec.cidr: Required value"]);
    }

    #[test]
    fn label_selectors_pair_operators_and_values() {
        // ValidateLabelSelector; values are label values from 1.26.
        let selector = json!({
            "matchLabels": {"app": "a b"},
            "matchExpressions": [
                {"key": "k", "operator": "In"},
                {"key": "k", "operator": "Exists", "values": ["x"]},
                {"key": "bad key", "operator": "Near", "values": ["a b"]},
            ]
        });
        let found = run(label_selector, &selector, 28);
        let fields: Vec<&str> = found.iter().map(|m| m.split(':').next().unwrap()).collect();
        assert_eq!(
            fields,
            [
                "spec.matchLabels",
                "spec.matchExpressions[0].values",
                "spec.matchExpressions[1].values",
                "spec.matchExpressions[2].operator",
                "spec.matchExpressions[2].key",
                "spec.matchExpressions[2].values[0]",
            ]
        );
        assert_eq!(
            found[3],
            "spec.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator"
        );
        assert_eq!(run(label_selector, &selector, 20).len(), 5);
    }

    #[test]
    fn network_policy_ports_and_peers() {
        // ValidateNetworkPolicyPort, ValidateNetworkPolicyPeer.
        assert_eq!(
            run(
                network_policy_port,
                &json!({"protocol": "ICMP", "port": 80, "endPort": 70}),
                34
            ),
            [
                "spec.protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"",
                "spec.endPort: Invalid value: 80: must be greater than or equal to `port`",
            ]
        );
        assert_eq!(
            run(
                network_policy_port,
                &json!({"port": "http", "endPort": 90}),
                34
            ),
            ["spec.endPort: Invalid value: 90: may not be specified when `port` is non-numeric"]
        );
        assert_eq!(
            run(network_policy_peer, &json!({}), 34),
            ["spec: Required value: must specify a peer"]
        );
        assert_eq!(
            run(
                network_policy_peer,
                &json!({"podSelector": {}, "ipBlock": {"cidr": "10.0.0.0/8"}}),
                34
            ),
            ["spec: Forbidden: may not specify both ipBlock and another peer"]
        );
        assert_eq!(
            run(
                policy_types,
                &json!({"policyTypes": ["Ingress", "Both"]}),
                34
            ),
            [
                "spec.policyTypes[1]: Unsupported value: \"Both\": supported values: \"Ingress\", \"Egress\""
            ]
        );
    }
}
