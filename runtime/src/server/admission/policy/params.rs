//! The parameters a binding gives its policy, as upstream's `CollectParams`
//! (`policy/generic/policy_dispatcher.go`): none when the policy has no `paramKind` or the
//! binding no `paramRef` (the policy runs once, with `params` null); else the object `name`
//! names or every object `selector` picks, in the `paramRef`'s namespace, the request's, or
//! none for a cluster-scoped kind. The policy runs once per parameter object; no object found
//! lets the request through unless `parameterNotFoundAction` is `Deny`.
//!
//! Parameter objects are read from the store as stored (a custom resource's in its storage
//! version, which its other versions only rename).

use serde_json::Value;

use super::config::{ParamKind, ParamRef};
use crate::registry::RegisteredKind;
use crate::server::Call;
use crate::server::admission::storage;
use crate::server::http::error::ApiError;

/// Why a binding's parameters could not be gathered: a configuration error, which the policy's
/// failure policy decides about (the message goes after `failed to configure binding: `), or a
/// failure to read the store.
#[derive(Debug)]
pub(super) enum ParamError {
    Configuration(String),
    Read(ApiError),
}

/// The served kind `paramKind` names, or the configuration error of a kind the server does not
/// serve (`failed to find resource referenced by paramKind: '<gvk>'`, reported against the
/// policy).
pub(super) fn param_kind<'a>(
    call: &'a Call,
    kind: &ParamKind,
) -> Result<&'a RegisteredKind, String> {
    let (group, version) = kind.group_version();
    call.registry
        .kinds()
        .find(|k| {
            let gvk = &k.info.gvk;
            gvk.group == group && gvk.version == version && gvk.kind == kind.kind
        })
        .filter(|k| call.state.serves(&k.info))
        .ok_or_else(|| {
            format!(
                "failed to find resource referenced by paramKind: '{}'",
                kind.gvk_text()
            )
        })
}

/// The parameter objects of one binding: `[None]` when the policy runs without parameters.
pub(super) async fn collect(
    call: &Call,
    kind: Option<&RegisteredKind>,
    param_ref: Option<&ParamRef>,
) -> Result<Vec<Option<Value>>, ParamError> {
    let (Some(kind), Some(param_ref)) = (kind, param_ref) else {
        return Ok(vec![None]);
    };
    let info = &kind.info;
    let namespaced = info.is_namespaced();
    let namespace = if !namespaced {
        if !param_ref.namespace.is_empty() {
            return Err(ParamError::Configuration(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
                    .to_owned(),
            ));
        }
        None
    } else if !param_ref.namespace.is_empty() {
        Some(param_ref.namespace.as_str())
    } else {
        match call
            .target
            .namespace
            .as_deref()
            .filter(|_| call.info().is_namespaced())
        {
            Some(ns) => Some(ns),
            None => {
                return Err(ParamError::Configuration(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                        .to_owned(),
                ));
            }
        }
    };
    let group = info.gvk.group.as_ref();
    let plural = info.plural.as_ref();
    let found: Vec<Value> = if !param_ref.name.is_empty() {
        if param_ref.selector.is_some() {
            return Err(ParamError::Configuration(
                "paramRef.name and paramRef.selector are mutually exclusive".to_owned(),
            ));
        }
        storage::read(call, group, plural, namespace, &param_ref.name)
            .await
            .map_err(ParamError::Read)?
            .into_iter()
            .collect()
    } else if let Some(selector) = &param_ref.selector {
        let objects = storage::list(call, group, plural, namespace)
            .await
            .map_err(ParamError::Read)?;
        let mut picked = Vec::new();
        for object in objects {
            let labels = crate::server::admission::webhook::matching::labels_of(Some(&object));
            match selector.matches(&labels) {
                Ok(true) => picked.push(object),
                Ok(false) => {}
                Err(e) => return Err(ParamError::Configuration(e.to_string())),
            }
        }
        picked
    } else {
        return Err(ParamError::Configuration(
            "one of name or selector must be provided".to_owned(),
        ));
    };
    if found.is_empty() && param_ref.parameter_not_found_action.as_deref() == Some("Deny") {
        return Err(ParamError::Configuration(
            "no params found for policy binding with `Deny` parameterNotFoundAction".to_owned(),
        ));
    }
    Ok(found.into_iter().map(Some).collect())
}
