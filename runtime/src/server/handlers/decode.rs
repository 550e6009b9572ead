//! A create or update body decoded as upstream's serializer decodes it, with its refusals word
//! for word (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go` and `update.go`,
//! `transformDecodeError` in `rest.go`; the serializer's `Interpret` in
//! `staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/meta.go`; the scheme's
//! `notRegisteredErr` and its converter's `unknown conversion`):
//!
//! - a body that is not a JSON (or YAML) object: `the object provided is unrecognized (must be
//!   of type ConfigMap): couldn't get version/kind; json parse error: ... (<summary>)`;
//! - a kind the API group's scheme does not know: `pod in version "v1" cannot be handled as a
//!   Pod: no kind "pod" is registered for version "v1" in scheme "..."`;
//! - a known kind of another type: `Secret in version "v1" cannot be handled as a ConfigMap:
//!   converting (v1.Secret) to (core.ConfigMap): unknown conversion`;
//! - the endpoint's type in another version: `the API version in the data (apps/v1beta1) does
//!   not match the expected API version (apps/v1)`.
//!
//! These are the built-in groups kube-apiserver decodes through its one scheme. A custom
//! resource's body is decoded as the CRD handler decodes it (`foreign_custom_type`): another
//! group is not convertible, a version the resource lacks is invalid, another kind is a 422 on
//! `kind`. A CRD's or an APIService's body (servers with schemes of their own) is held to its
//! `apiVersion` and `kind` (`object::check_type`).

use axum::http::StatusCode;
use serde_json::Value;

use crate::{KubeVersion, ResourceInfo};

use crate::server::Call;
use crate::server::handlers::object::check_type;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate;
use crate::server::objects::go_text;
use crate::server::state::release;

/// The release whose kube-apiserver is built from module paths, not a GOPATH, so its scheme's
/// name (the file and line that made it) starts at `pkg/`.
const MODULE_PATHS_SINCE: KubeVersion = KubeVersion::new(1, 30);

/// Go's name of the struct upstream's `Interpret` reads `apiVersion` and `kind` into.
const FIND_KIND: &str = r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

/// The kinds `metav1.AddToGroupVersion` registers in every group-version of the scheme.
const OPTION_KINDS: &[&str] = &[
    "WatchEvent",
    "ListOptions",
    "GetOptions",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
];

/// Group-versions the scheme still installs that no release kapi carries serves
/// (`pkg/apis/apps/install/install.go`).
const UNSERVED_IN_SCHEME: &[&str] = &["apps/v1beta1", "apps/v1beta2"];

/// The kinds registered unversioned under `v1`.
const UNVERSIONED_KINDS: &[&str] = &[
    "Status",
    "APIVersions",
    "APIGroupList",
    "APIGroup",
    "APIResourceList",
];

/// Reads, type-checks and decodes a write's body.
pub(crate) fn decode_object(call: &Call, body: &[u8]) -> Result<Value, ApiError> {
    let mut object = match negotiate::decode_body(&call.headers, body, call.state.cbor()) {
        Ok(object) => object,
        Err(refused) if refused.code() == StatusCode::BAD_REQUEST => {
            return Err(unreadable(call, body).unwrap_or(refused));
        }
        Err(refused) => return Err(refused),
    };
    let info = call.info();
    let custom = !release::is_builtin_group(&info.gvk.group);
    if decodes_through_scheme(info) || custom {
        let (group, version, kind) = body_type(info, body, &object)?;
        let refused = if custom {
            foreign_custom_type(call, &object, group, version, kind)
        } else {
            foreign_type(call, group, version, kind)
        };
        if let Some(refused) = refused {
            return Err(refused);
        }
    }
    check_type(call.info(), &mut object)?;
    Ok(object)
}

/// Whether kube-apiserver decodes the kind's writes through its legacy scheme.
fn decodes_through_scheme(info: &ResourceInfo) -> bool {
    let group = &*info.gvk.group;
    release::is_builtin_group(group)
        && !matches!(group, "apiextensions.k8s.io" | "apiregistration.k8s.io")
}

/// Upstream's answer to a body its serializer could not read its `apiVersion` and `kind` from;
/// `None` where kapi's own answer stands (protobuf, YAML nested too deep, `null`).
fn unreadable(call: &Call, body: &[u8]) -> Option<ApiError> {
    let kind = &call.info().gvk.kind;
    let media = negotiate::content_type(&call.headers).unwrap_or_default();
    let problem = match media.as_str() {
        "" | "application/json" => match serde_json::from_slice::<Value>(body) {
            Err(e) => format!(
                "couldn't get version/kind; json parse error: {}",
                go_text::json_syntax_error(body, &e)
            ),
            Ok(value) => not_an_object(&value)?,
        },
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            crate::server::http::yaml::check_depth(body).ok()?;
            match serde_yaml_ng::from_slice::<Value>(body) {
                Err(e) => go_text::yaml_error(&e),
                Ok(value) => not_an_object(&value)?,
            }
        }
        _ => return None,
    };
    Some(ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): {problem} ({})",
        go_text::summarize(body)
    )))
}

/// `Interpret`'s error for JSON that is no object; `null` decodes (to an empty object).
fn not_an_object(value: &Value) -> Option<String> {
    match value {
        Value::Object(_) | Value::Null => None,
        other => Some(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type {FIND_KIND}",
            go_text::json_kind(other)
        )),
    }
}

/// A body's group, version and kind as upstream's serializer reads them: `Interpret`'s
/// `apiVersion` and `kind` (strings, or the refusal of a body with others), defaulted from the
/// endpoint's as `gvkWithDefaults` defaults them.
fn body_type(
    info: &ResourceInfo,
    body: &[u8],
    object: &Value,
) -> Result<(String, String, String), ApiError> {
    let target = &info.gvk;
    let text = |field: &str| -> Result<String, ApiError> {
        match object.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(unrecognized(
                info,
                body,
                &format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{field} of type string",
                    go_text::json_kind(other)
                ),
            )),
        }
    };
    let api_version = text("apiVersion")?;
    let kind = text("kind")?;
    // `schema.ParseGroupVersion`.
    let (mut group, mut version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [] | [""] => (String::new(), String::new()),
        [version] => (String::new(), (*version).to_owned()),
        [group, version] => ((*group).to_owned(), (*version).to_owned()),
        _ => {
            return Err(unrecognized(
                info,
                body,
                &format!("unexpected GroupVersion string: {api_version}"),
            ));
        }
    };
    let kind = if kind.is_empty() {
        target.kind.to_string()
    } else {
        kind
    };
    if version.is_empty() && (group.is_empty() || group == *target.group) {
        group = target.group.to_string();
        version = target.version.to_string();
    }
    Ok((group, version, kind))
}

/// The refusal of a body whose `apiVersion` and `kind` (defaulted from the endpoint's, as the
/// serializer defaults them) name another type than the endpoint's, if they do.
fn foreign_type(call: &Call, group: String, version: String, kind: String) -> Option<ApiError> {
    let info = call.info();
    let target = &info.gvk;
    if group == *target.group && version == *target.version && kind == *target.kind {
        return None;
    }
    let group_version = if group.is_empty() {
        version.clone()
    } else {
        format!("{group}/{version}")
    };
    let cannot = |reason: String| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {}: {reason}",
            target.kind
        ))
    };
    let registry = &call.registry;
    let meta_kind = OPTION_KINDS.contains(&kind.as_str())
        || (group_version == "v1" && UNVERSIONED_KINDS.contains(&kind.as_str()));
    // The scheme holds every version a release of the group served, after it stops serving
    // one: a kind kapi serves in another version of the group counts when some release
    // served this one.
    let named = |k: &&crate::registry::RegisteredKind| {
        *k.info.gvk.group == group && (*k.info.gvk.kind == kind || k.info.list_kind() == kind)
    };
    let known = registry
        .kinds()
        .filter(named)
        .find(|k| *k.info.gvk.version == version)
        .or_else(|| {
            (release::ever_served(&group_version) || UNSERVED_IN_SCHEME.contains(&&*group_version))
                .then(|| registry.kinds().find(named))
                .flatten()
        });
    let in_scheme = release::is_builtin_group(&group)
        && !matches!(
            group.as_str(),
            "apiextensions.k8s.io" | "apiregistration.k8s.io"
        );
    match known {
        Some(found)
            if in_scheme && *found.info.gvk.kind == kind && same_type(&found.info, info) =>
        {
            Some(ApiError::bad_request(format!(
                "the API version in the data ({group_version}) does not match the expected API version ({})",
                info.api_version()
            )))
        }
        Some(_) if in_scheme => Some(cannot(unknown_conversion(&version, &kind, info))),
        _ if in_scheme && meta_kind => Some(cannot(unknown_conversion(&version, &kind, info))),
        _ => Some(cannot(format!(
            "no kind {kind:?} is registered for version {group_version:?} in scheme {:?}",
            scheme_name(call.state.kube_version)
        ))),
    }
}

/// The refusal of a custom resource's body of another type, as the CRD handler's unstructured
/// decoding and conversion (`crConverter.ConvertToVersion` in
/// `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/converter.go`) and its
/// validator's `ValidateTypeMeta` (`.../pkg/registry/customresource/validator.go`) answer it:
/// another group is not convertible, a version the resource does not have is invalid, another
/// kind is a 422 on `kind`. Another version of the resource is left to the usual check.
fn foreign_custom_type(
    call: &Call,
    object: &Value,
    group: String,
    version: String,
    kind: String,
) -> Option<ApiError> {
    let info = call.info();
    let target = &info.gvk;
    let cannot = |reason: String| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {}: {reason}",
            target.kind
        ))
    };
    if group != *target.group {
        return Some(cannot(format!(
            "{group}/{version}, Kind={kind} is unstructured and is not suitable for converting to \"{}\"",
            info.api_version()
        )));
    }
    let has_version = call.registry.kinds().any(|k| {
        *k.info.gvk.group == group && k.info.plural == info.plural && *k.info.gvk.version == version
    });
    if !has_version {
        return Some(cannot(format!(
            "request to convert CR from an invalid group/version: {group}/{version}"
        )));
    }
    if version != *target.version || kind == *target.kind {
        return None;
    }
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let cause = crate::meta::StatusCause::invalid(
        "kind",
        &Value::from(kind.as_str()),
        &format!("must be {}", target.kind),
    );
    Some(ApiError::invalid(
        &target.group,
        &target.kind,
        name,
        vec![cause],
    ))
}

/// Whether two kinds decode to one internal type: the same kind of the same storage group.
fn same_type(a: &ResourceInfo, b: &ResourceInfo) -> bool {
    storage_group(a) == storage_group(b) && a.gvk.kind == b.gvk.kind
}

fn storage_group(info: &ResourceInfo) -> &str {
    info.family.map_or(&*info.gvk.group, |f| f.storage_group())
}

/// The scheme converter's refusal: `converting (<version>.<Kind>) to (<package>.<Kind>):
/// unknown conversion`, the target named by its internal Go package.
fn unknown_conversion(version: &str, kind: &str, target: &ResourceInfo) -> String {
    format!(
        "converting ({version}.{kind}) to ({}.{}): unknown conversion",
        internal_package(storage_group(target)),
        target.gvk.kind
    )
}

/// The Go package of a group's internal types: `core` for the core group, else the group's
/// first label (`rbac` for `rbac.authorization.k8s.io`), `apiserverinternal` for
/// `internal.apiserver.k8s.io`.
fn internal_package(group: &str) -> &str {
    match group {
        "" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        other => other.split('.').next().unwrap_or(other),
    }
}

/// The name the legacy scheme got from the file and line that made it
/// (`runtime.NewScheme`, `naming.GetNameFromCallsite`).
fn scheme_name(release: KubeVersion) -> &'static str {
    if release >= MODULE_PATHS_SINCE {
        "pkg/api/legacyscheme/scheme.go:30"
    } else {
        "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"
    }
}

/// `transformDecodeError` when no kind was read: the object is unrecognized.
fn unrecognized(info: &ResourceInfo, body: &[u8], problem: &str) -> ApiError {
    ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): {problem} ({})",
        info.gvk.kind,
        go_text::summarize(body)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_packages_are_upstreams() {
        assert_eq!(internal_package(""), "core");
        assert_eq!(internal_package("apps"), "apps");
        assert_eq!(internal_package("rbac.authorization.k8s.io"), "rbac");
        assert_eq!(
            internal_package("internal.apiserver.k8s.io"),
            "apiserverinternal"
        );
    }

    #[test]
    fn the_scheme_name_follows_the_build() {
        assert_eq!(
            scheme_name(KubeVersion::new(1, 34)),
            "pkg/api/legacyscheme/scheme.go:30"
        );
        assert_eq!(
            scheme_name(KubeVersion::new(1, 20)),
            "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"
        );
    }
}
