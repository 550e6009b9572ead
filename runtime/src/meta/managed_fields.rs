//! `ManagedFieldsEntry` and `FieldsV1`: the field-ownership records server-side apply keeps in
//! `metadata.managedFields`.
//!
//! The field set itself (`fieldsV1`) is an opaque JSON tree here; computing and merging field
//! sets belongs to the server.

use serde::{Deserialize, Serialize};

use crate::Time;
use crate::open_enum;

open_enum! {
    /// The kind of request that recorded a managed-fields entry (`metav1.ManagedFieldsOperationType`).
    pub enum ManagedFieldsOperation {
        /// A server-side apply (`PATCH` with `application/apply-patch+yaml`).
        Apply = "Apply",
        /// Any other write: create, update or a non-apply patch.
        Update = "Update",
    }
}

/// One manager's claim on a set of fields (`metav1.ManagedFieldsEntry`).
///
/// Every field is optional upstream.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    /// Name of the workflow that manages these fields, e.g. `kubectl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    /// Whether the fields were set by an apply or an update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<ManagedFieldsOperation>,
    /// Version of the schema the field set is written against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// When the entry was last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Time>,
    /// Format of the field set; upstream only defines `FieldsV1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields_type: Option<String>,
    /// The field set.
    #[serde(default, rename = "fieldsV1", skip_serializing_if = "Option::is_none")]
    pub fields_v1: Option<FieldsV1>,
    /// Subresource the write went through, e.g. `status`; empty for the main resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
}

/// A set of fields in the `FieldsV1` trie format (`metav1.FieldsV1`), e.g.
/// `{"f:metadata":{"f:labels":{"f:app":{}}}}`, kept as the JSON it arrived as.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FieldsV1(pub serde_json::Value);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn full_entry_round_trips() {
        let input = json!({
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2024-01-02T03:04:05Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}},
            "subresource": "status"
        });
        let entry: ManagedFieldsEntry = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(entry.operation, Some(ManagedFieldsOperation::Update));
        assert_eq!(
            entry.fields_v1,
            Some(FieldsV1(json!({"f:metadata": {"f:labels": {"f:app": {}}}})))
        );
        assert_eq!(serde_json::to_value(&entry).unwrap(), input);
    }

    #[test]
    fn empty_entry_is_an_empty_object() {
        assert_eq!(
            serde_json::to_string(&ManagedFieldsEntry::default()).unwrap(),
            "{}"
        );
    }

    #[test]
    fn operations_are_open() {
        let cases = [
            ("\"Apply\"", ManagedFieldsOperation::Apply),
            ("\"Update\"", ManagedFieldsOperation::Update),
            ("\"Merge\"", ManagedFieldsOperation::Other("Merge".into())),
        ];
        for (text, want) in cases {
            let got: ManagedFieldsOperation = serde_json::from_str(text).unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(serde_json::to_string(&got).unwrap(), text);
        }
        // Equality goes by spelling, so a hand-built Other matches the variant.
        assert_eq!(
            ManagedFieldsOperation::Other("Apply".into()),
            ManagedFieldsOperation::Apply
        );
    }
}
