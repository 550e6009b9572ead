//! `RawExtension`: `runtime.RawExtension`, an embedded value of any shape.
//!
//! Upstream keeps the raw bytes of a nested object (e.g. `ControllerRevision.data`, a webhook
//! review's `object`) and decodes them later. kapi keeps the parsed JSON instead: a
//! `RawExtension` is a transparent wrapper around [`serde_json::Value`], so it reads and writes any
//! JSON value unchanged (key order included, as the workspace enables `preserve_order`), and
//! `null` round-trips as `null` just as upstream writes an empty extension as `null`.
//!
//! Only `runtime.RawExtension` uses this wrapper. Schema fields that are free-form JSON
//! (`x-kubernetes-preserve-unknown-fields: true`, `apiextensions.JSON`, CRD `default`/`example`
//! values) use `serde_json::Value` directly: the wrapper would add nothing there but a name.

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An embedded JSON value of any shape (`runtime.RawExtension`), including `null`.
///
/// Derefs to the [`serde_json::Value`] it wraps. `Default` is `null`.
///
/// ```
/// use kapi::RawExtension;
///
/// let raw: RawExtension = serde_json::from_str(r#"{"kind":"Pod","b":1,"a":2}"#).unwrap();
/// assert_eq!(raw["kind"], "Pod");
/// assert_eq!(serde_json::to_string(&raw).unwrap(), r#"{"kind":"Pod","b":1,"a":2}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawExtension(pub Value);

impl RawExtension {
    /// Unwraps the JSON value.
    pub fn into_inner(self) -> Value {
        self.0
    }
}

impl Deref for RawExtension {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl DerefMut for RawExtension {
    fn deref_mut(&mut self) -> &mut Value {
        &mut self.0
    }
}

impl From<Value> for RawExtension {
    fn from(v: Value) -> Self {
        Self(v)
    }
}

impl From<RawExtension> for Value {
    fn from(r: RawExtension) -> Self {
        r.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn any_json_round_trips_unchanged() {
        let inputs = [
            "null",
            "true",
            "-1.5",
            "12345678901234567890",
            r#""text""#,
            "[]",
            r#"[1,"a",null,{"z":{}}]"#,
            r#"{"z":1,"a":{"y":[true],"b":null}}"#,
        ];
        for input in inputs {
            let raw: RawExtension = serde_json::from_str(input).unwrap();
            assert_eq!(serde_json::to_string(&raw).unwrap(), input);
        }
    }

    #[test]
    fn null_is_a_value_but_an_absent_optional_is_none() {
        #[derive(Debug, PartialEq, Deserialize, Serialize)]
        struct Holder {
            raw: RawExtension,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            opt: Option<RawExtension>,
        }
        let h: Holder = serde_json::from_str(r#"{"raw":null}"#).unwrap();
        assert_eq!(
            h,
            Holder {
                raw: RawExtension(Value::Null),
                opt: None
            }
        );
        assert_eq!(serde_json::to_string(&h).unwrap(), r#"{"raw":null}"#);
        let h: Holder = serde_json::from_str(r#"{"raw":{},"opt":{"a":1}}"#).unwrap();
        assert_eq!(h.opt, Some(RawExtension(json!({"a": 1}))));
    }

    #[test]
    fn deref_and_conversions() {
        let mut raw = RawExtension::from(json!({"spec": {"replicas": 1}}));
        raw["spec"]["replicas"] = json!(3);
        assert_eq!(raw.pointer("/spec/replicas"), Some(&json!(3)));
        assert_eq!(Value::from(raw.clone()), raw.into_inner());
        assert_eq!(RawExtension::default().0, Value::Null);
    }
}
