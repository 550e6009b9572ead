//! A mutating webhook's answer applied: its JSON patch (RFC 6902, the only `patchType`
//! upstream accepts) over the object as the webhook saw it, through the JSON patch engine the
//! PATCH handler uses. Whether the object changed decides the reinvocation of earlier
//! webhooks, as upstream compares the object before and after
//! (`mutating/dispatcher.go`, `callAttrMutatingHook`).

use serde_json::Value;

use crate::server::handlers::patch::json_patch;

/// Why a patch was not applied: it does not decode (the webhook's fault, which its failure
/// policy covers) or it does not apply (upstream's internal error).
#[derive(Debug)]
pub(super) enum PatchError {
    Undecodable(String),
    Unappliable(String),
}

/// Applies `patch` to `object`; `Ok(true)` when the object changed. An empty patch changes
/// nothing.
pub(super) fn apply(object: &mut Value, patch: &[u8]) -> Result<bool, PatchError> {
    if patch.is_empty() {
        return Ok(false);
    }
    let operations =
        json_patch::parse(patch).map_err(|e| PatchError::Undecodable(e.to_string()))?;
    if operations.is_empty() {
        return Ok(false);
    }
    let mut patched = object.clone();
    json_patch::apply(&mut patched, &operations)
        .map_err(|e| PatchError::Unappliable(e.to_string()))?;
    let changed = patched != *object;
    *object = patched;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{PatchError, apply};

    #[test]
    fn webhook_patches_apply_and_report_a_change() {
        let mut object = json!({"metadata": {"name": "a"}});
        let patch = br#"[{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]"#;
        assert!(apply(&mut object, patch).expect("applies"));
        assert_eq!(object["metadata"]["labels"]["x"], "y");
        assert!(!apply(&mut object, b"[]").expect("empty patch"));
        assert!(matches!(
            apply(&mut object, b"{"),
            Err(PatchError::Undecodable(_))
        ));
        assert!(matches!(
            apply(&mut object, br#"[{"op":"remove","path":"/nope"}]"#),
            Err(PatchError::Unappliable(_))
        ));
    }
}
