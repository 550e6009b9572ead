//! Single-object handlers: create, get, update (PUT), delete (one object or a collection), the
//! `status` and `scale` subresources, and the object rules they share (name validation,
//! server-set metadata, generation, finalizers, namespace checks, the trip through the kind's
//! codec).
//!
//! Objects are stored as JSON without `metadata.resourceVersion`; it is the key's mod revision
//! and is filled in on every read, so it can never disagree with the store. A resource whose
//! versions were registered with conversions (`Registry::register_versions`) is stored in its
//! storage version: `stored::to_stored` converts every write to it, after the requested
//! version's codec, and `stored::from_stored` converts every read (gets, list items, watch
//! events, write answers) to the requested version, so handlers and patches only see the
//! requested version.
//!
//! Every write takes its [`WriteOptions`]: a dry run runs all of the above and the store reads
//! they need, then answers with the object it would have stored instead of writing it; the
//! body's unknown and duplicate fields are reported as `fieldValidation` asks (see
//! `field_validation`). Every create and update records its field manager's changes in
//! `metadata.managedFields` (see `managed_fields`).

use serde_json::Value;

use crate::ResourceInfo;
use crate::defaulting;
use crate::meta::StatusCause;
use crate::storage::{KeyValue, Storage};
use crate::validation::{self, FieldPath, Format, Shown};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::http::field_validation::{self, Directive};
use crate::server::http::negotiate;
use crate::server::objects::go_text;
use crate::server::objects::json::meta_str;
use crate::server::objects::revision::{parse_rv, wait_for};
use crate::server::objects::stored::kv_object;
use crate::server::state::builtin::is_namespace_kind;

/// How many times a write re-reads and retries after losing a race it may retry.
pub(crate) const RETRIES: usize = 16;

/// The name format of a kind: the one its data gives (a Service's DNS-1035 label, an RBAC
/// kind's path segment), else a namespace's DNS label or everything else's DNS subdomain.
fn name_format(call: &Call) -> Format {
    call.target
        .kind
        .merge
        .and_then(|root| validation::name_format(root, call.state.kube_version))
        .unwrap_or(if is_namespace_kind(call.info()) {
            Format::DnsLabel
        } else {
            Format::DnsSubdomain
        })
}

/// The name rule of a kind (upstream's `ValidateObjectMeta` with the kind's name function).
pub(crate) fn name_causes(call: &Call, name: &str) -> Vec<StatusCause> {
    let release = call.state.kube_version;
    let messages = name_format(call).messages(name, release);
    invalid_causes("metadata.name", name, &messages, release)
}

/// The name rule applied to a `generateName` as a prefix: a trailing `-` masked as upstream's
/// `maskTrailingDash` masks it (the last two characters become `a`), a path segment checked
/// for `/` and `%` only (`IsValidPathSegmentPrefix`).
pub(crate) fn generate_name_causes(call: &Call, prefix: &str) -> Vec<StatusCause> {
    let release = call.state.kube_version;
    let format = name_format(call);
    let messages = if format == Format::PathSegment {
        ["/", "%"]
            .iter()
            .filter(|illegal| prefix.contains(**illegal))
            .map(|illegal| format!("may not contain '{illegal}'"))
            .collect()
    } else {
        let masked = match prefix.strip_suffix('-') {
            Some(_) if prefix.len() > 1 => {
                let cut = prefix.len() - 2;
                match prefix.get(..cut) {
                    Some(head) => format!("{head}a"),
                    None => prefix.to_owned(),
                }
            }
            _ => prefix.to_owned(),
        };
        format.messages(&masked, release)
    };
    invalid_causes("metadata.generateName", prefix, &messages, release)
}

fn invalid_causes(
    field: &str,
    value: &str,
    messages: &[String],
    release: crate::KubeVersion,
) -> Vec<StatusCause> {
    let mut errors = validation::Errors::new(release);
    let value = Value::from(value);
    for message in messages {
        errors.invalid(&FieldPath::of(field), Shown::Plain(&value), message);
    }
    errors.into_causes()
}

/// `metadata.finalizers` plus, for namespaces, `spec.finalizers`: what holds a deletion.
pub(crate) fn has_finalizers(info: &ResourceInfo, object: &Value) -> bool {
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    non_empty(object.pointer("/metadata/finalizers"))
        || (is_namespace_kind(info) && non_empty(object.pointer("/spec/finalizers")))
}

/// Fills in missing `apiVersion`/`kind` and rejects ones that name another kind (400).
pub(crate) fn check_type(info: &ResourceInfo, object: &mut Value) -> Result<(), ApiError> {
    let Value::Object(map) = object else {
        return Err(ApiError::bad_request("the request body must be an object"));
    };
    let want_version = info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::from(want_version));
        }
        Some(v) if v == want_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({want_version})"
            )));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::from(info.gvk.kind.to_string()));
        }
        Some(k) if k == info.gvk.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.gvk.kind
            )));
        }
    }
    Ok(())
}

/// Decodes a written object as upstream's decoder does: through the kind's Rust type, dropping
/// unknown fields (400 on type errors), then filling the fields the kind defaults in the
/// release served. Every write (create, update, patch, apply, dry run or not) passes here.
pub(crate) fn through_codec(call: &Call, object: Value) -> Result<Value, ApiError> {
    let mut object =
        (call.target.kind.codec)(object).map_err(|e| cannot_be_handled(call, &e.to_string()))?;
    fill_defaults(call, &mut object);
    Ok(object)
}

/// The release whose kube-apiserver decodes JSON with `sigs.k8s.io/json` (Go's
/// `encoding/json`), whose type errors `json_type_error` words; before it, json-iterator's
/// (`jsoniter_type_error`).
const GO_JSON_SINCE: crate::KubeVersion = crate::KubeVersion::new(1, 23);

/// [`through_codec`] of a body as the client sent it (`body`, not consumed; `raw`, its
/// bytes): a field of the wrong JSON type is refused with the release's decoder's text where
/// the kind's OpenAPI definition tells which field and Go type: Go's (`json: cannot unmarshal
/// number into Go struct field ConfigMap.data of type string`) from 1.23 on, json-iterator's
/// before (`v1.ConfigMap.Data: ReadString: expects " or n, but found 1, error found in #10
/// byte of ...`), for a YAML body over the JSON upstream converts it to.
pub(crate) fn body_through_codec(call: &Call, body: &Value, raw: &[u8]) -> Result<Value, ApiError> {
    let refused = match through_codec(call, body.clone()) {
        Ok(object) => return Ok(object),
        Err(refused) => refused,
    };
    let registry = &call.registry;
    let resolve = |name: &str| registry.definition(name);
    let Some((name, schema)) = registry.definition_of(&call.info().gvk) else {
        return Err(refused);
    };
    let text = if call.state.kube_version >= GO_JSON_SINCE {
        go_text::json_type_error(body, name, schema, &resolve)
    } else {
        // json-iterator reads the JSON body as sent, and a YAML body as `sigs.k8s.io/yaml`
        // turns it into JSON (Go's `json.Marshal` of the parsed document).
        let media = negotiate::content_type(&call.headers).unwrap_or_default();
        let json = match media.as_str() {
            "" | "application/json" => Some(raw.to_vec()),
            "application/yaml" | "application/x-yaml" | "text/yaml" => go_text::go_json(body),
            _ => None,
        };
        json.and_then(|json| go_text::jsoniter_type_error(&json, name, schema, &resolve))
    };
    match text {
        Some(text) => Err(cannot_be_handled(call, &text)),
        None => Err(refused),
    }
}

/// `transformDecodeError` of a body of the endpoint's kind the decoder refused.
fn cannot_be_handled(call: &Call, problem: &str) -> ApiError {
    let info = call.info();
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {problem}",
        kind = info.gvk.kind,
        version = info.gvk.version
    ))
}

/// Fills the fields the kind defaults in the release served, as upstream's decoder does after
/// decoding every written object, then applies the kind's write conversion (a Secret's
/// `stringData`), as its conversion to the internal type does.
pub(crate) fn fill_defaults(call: &Call, object: &mut Value) {
    let release = call.state.kube_version;
    defaulting::apply(&call.info().defaults, object, release);
    if let Some(root) = call.target.kind.merge {
        defaulting::apply_types(root, object, release);
    }
    call.info().write_rules.write_conversion.apply(object);
}

/// Which part of an object a PUT may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateScope {
    /// The main resource: everything but `status` when the kind has a status subresource.
    Main,
    /// `/status`: only `status`.
    Status,
    /// A pod's `/ephemeralcontainers`: only `spec.ephemeralContainers`.
    EphemeralContainers,
    /// A pod's `/resize`: only its containers' and init containers' `resources` and
    /// `resizePolicy`.
    Resize,
}

impl UpdateScope {
    /// The subresource written, as managed fields name it (empty for the main resource).
    pub(crate) fn subresource(self) -> &'static str {
        match self {
            Self::Main => "",
            Self::Status => "status",
            Self::EphemeralContainers => "ephemeralcontainers",
            Self::Resize => "resize",
        }
    }
}

/// Holds a written object to what its kind must satisfy: object metadata, the checks of its
/// types (a built-in's, `specs/validation/`) and its schema (a CRD's); `old` is the stored
/// object on an update. A write through `/status` is held to its metadata and its kind's status
/// rules only (a Pod's), as upstream's status strategies validate status, not spec. 422 Invalid
/// with one cause per violation.
pub(crate) fn check_object(
    call: &Call,
    object: &Value,
    old: Option<&Value>,
    scope: UpdateScope,
    name: &str,
) -> Result<(), ApiError> {
    check_object_after(call, object, old, scope, name, Vec::new())
}

/// [`check_object`] with the causes of checks that come first (a create's name rules, which
/// upstream's `ValidateObjectMeta` reports before the rest).
pub(crate) fn check_object_after(
    call: &Call,
    object: &Value,
    old: Option<&Value>,
    scope: UpdateScope,
    name: &str,
    first: Vec<StatusCause>,
) -> Result<(), ApiError> {
    let mut errors = validation::Errors::new(call.state.kube_version)
        .allowing_privileged(call.state.allow_privileged);
    validation::check_metadata(object, &mut errors);
    if let Some(old) = old {
        validation::check_metadata_update(object, old, &mut errors);
    }
    match (call.target.kind.merge, scope) {
        (Some(root), UpdateScope::Main) => validation::check_types(root, object, old, &mut errors),
        (Some(root), UpdateScope::Status) => {
            validation::check_status(root, object, old, &mut errors);
        }
        (Some(root), UpdateScope::EphemeralContainers) => {
            validation::check_ephemeral_containers(root, object, old, &mut errors);
        }
        (Some(root), UpdateScope::Resize) => {
            validation::check_pod_resize(root, object, old, &mut errors);
        }
        (None, _) => {}
    }
    let mut causes = first;
    causes.extend(errors.into_causes());
    if let Some(validate) = &call.target.kind.validate {
        causes.extend(validate(object, old));
    }
    refuse(call, name, causes)
}

/// 422 Invalid for the named object of the call's kind when there are `causes`.
pub(crate) fn refuse(call: &Call, name: &str, causes: Vec<StatusCause>) -> Result<(), ApiError> {
    if causes.is_empty() {
        return Ok(());
    }
    let info = call.info();
    Err(ApiError::invalid(
        &info.gvk.group,
        &info.gvk.kind,
        name,
        causes,
    ))
}

/// Upstream's 400 for a body its strict decoder refused: `<Kind> in version "<v>" cannot be
/// handled as a <Kind>: strict decoding error: ...`.
pub(crate) fn strict_decoding(kind: &str, version: &str, problems: &[String]) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {}",
        field_validation::strict_error(problems)
    ))
}

/// Applies `fieldValidation` to a decoded create or update body: `decoded` is the codec's
/// result for `object`, `raw` the bytes it came from. Warnings go to `warnings`; `Strict`
/// refuses the body.
pub(crate) fn validate_fields(
    call: &Call,
    validation: Directive,
    raw: &[u8],
    object: &Value,
    decoded: &Value,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    if validation == Directive::Ignore {
        return Ok(());
    }
    let problems = field_validation::body_problems(&*call.target.kind.codec, raw, object, decoded);
    if problems.is_empty() {
        return Ok(());
    }
    if validation == Directive::Strict {
        let info = call.info();
        return Err(strict_decoding(
            &info.gvk.kind,
            &info.gvk.version,
            &problems,
        ));
    }
    warnings.extend(problems);
    Ok(())
}

/// GET of one object (also `/status`), honouring `resourceVersion` (unset: latest; "0": any;
/// N: not older than N).
pub(crate) async fn get(call: &Call, name: &str, rv: Option<&str>) -> Result<Value, ApiError> {
    match rv {
        None | Some("") | Some("0") => {}
        Some(rv) => {
            let rv = parse_rv(rv)?;
            wait_for(call, rv).await?;
        }
    }
    let kv = read(call, name).await?;
    kv_object(call, &kv).await
}

/// The latest stored value of the named object, or 404.
pub(crate) async fn read(call: &Call, name: &str) -> Result<KeyValue, ApiError> {
    let key = call.key(name);
    call.state
        .storage
        .get(&key, None)
        .await
        .map_err(ApiError::from_read)?
        .ok_or_else(|| ApiError::not_found(call.subject(name)))
}

/// A written object must name the object and namespace of the URL, as upstream's `checkName`
/// holds an updated or patched object to them (400 otherwise; an object without a name does
/// not match either): `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go`. An applied
/// configuration (`config`) may leave its name out, the live object supplying it.
pub(crate) fn check_identity(call: &Call, name: &str, incoming: &Value) -> Result<(), ApiError> {
    check_name(call, name, incoming, false)
}

/// [`check_identity`] of an applied configuration, whose name may be left out.
pub(crate) fn check_config_identity(
    call: &Call,
    name: &str,
    config: &Value,
) -> Result<(), ApiError> {
    check_name(call, name, config, true)
}

fn check_name(call: &Call, name: &str, incoming: &Value, config: bool) -> Result<(), ApiError> {
    let given = meta_str(incoming, "name").unwrap_or("");
    if given != name && !(config && given.is_empty()) {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({given}) does not match the name on the URL ({name})"
        )));
    }
    check_namespace(call, incoming)
}

/// A body's namespace, when it names one, must be the URL's (for a namespaced kind).
pub(crate) fn check_namespace(call: &Call, incoming: &Value) -> Result<(), ApiError> {
    if let (Some(url_ns), Some(body_ns)) = (
        call.target.namespace.as_deref(),
        meta_str(incoming, "namespace").filter(|s| !s.is_empty()),
    ) && call.info().is_namespaced()
        && url_ns != body_ns
    {
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({body_ns}) does not match the namespace on the request ({url_ns})"
        )));
    }
    Ok(())
}

/// Whether two stored values hold the same JSON. Key order may differ when one of them went
/// through a conversion and the other was stored as written, so equal bytes are only the
/// fast path.
pub(crate) fn same_json(a: &[u8], b: &[u8]) -> bool {
    a == b
        || matches!(
            (serde_json::from_slice::<Value>(a), serde_json::from_slice::<Value>(b)),
            (Ok(a), Ok(b)) if a == b
        )
}
