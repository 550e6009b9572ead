//! The per-request option kinds: `ListOptions`, `GetOptions`, `DeleteOptions`, `CreateOptions`,
//! `UpdateOptions` and `PatchOptions`, with their enumerations.
//!
//! Clients send most of these as query parameters, where every value is a string
//! (`?watch=true&limit=500`), and `DeleteOptions` also as a JSON body. The booleans and numbers
//! here therefore read from either a JSON value or its string form, and `dryRun` from a single
//! string as well as a list, so one type serves both.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::open_enum;

open_enum! {
    /// How a delete treats the object's dependents (`metav1.DeletionPropagation`).
    pub enum DeletionPropagation {
        /// Dependents are orphaned: their owner reference is removed.
        Orphan = "Orphan",
        /// The object is deleted at once and the garbage collector removes dependents after.
        Background = "Background",
        /// The object stays, with a `foregroundDeletion` finalizer, until its blocking
        /// dependents are gone.
        Foreground = "Foreground",
    }
}

open_enum! {
    /// How `resourceVersion` is applied to a list (`metav1.ResourceVersionMatch`).
    pub enum ResourceVersionMatch {
        /// Data at least as new as the given version.
        NotOlderThan = "NotOlderThan",
        /// Data at exactly the given version.
        Exact = "Exact",
    }
}

open_enum! {
    /// What the server does with unknown or duplicate fields in a write (`fieldValidation`).
    pub enum FieldValidation {
        /// Drop them silently.
        Ignore = "Ignore",
        /// Drop them and return a warning header for each.
        Warn = "Warn",
        /// Reject the request.
        Strict = "Strict",
    }
}

/// The list and watch query parameters (`metav1.ListOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListOptions {
    /// Kind, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Label selector in string syntax, e.g. `app=web,tier in (a,b)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Field selector, e.g. `metadata.name=x`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// Stream changes instead of returning a list.
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub watch: Option<bool>,
    /// Ask for `BOOKMARK` events on a watch.
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub allow_watch_bookmarks: Option<bool>,
    /// The version to read at or watch from; see `resourceVersionMatch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// How `resourceVersion` applies to a list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// Upper bound on the duration of a list or watch call.
    #[serde(
        default,
        deserialize_with = "lenient_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout_seconds: Option<i64>,
    /// Maximum number of items in one page.
    #[serde(
        default,
        deserialize_with = "lenient_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub limit: Option<i64>,
    /// Token from the previous page's `metadata.continue`.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_: Option<String>,
    /// Start a watch with synthetic `ADDED` events for the current state, then a bookmark.
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub send_initial_events: Option<bool>,
}

/// The query parameters of a get (`metav1.GetOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetOptions {
    /// Kind, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `0` to allow a read from cache; otherwise the latest version is returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// Conditions a delete checks before acting (`metav1.Preconditions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The object's UID must be this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The object's resource version must be this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// The options of a delete, sent as a body or as query parameters (`metav1.DeleteOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// `DeleteOptions` when sent as a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version when sent as a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Seconds before the object is removed; `0` deletes at once.
    #[serde(
        default,
        deserialize_with = "lenient_i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub grace_period_seconds: Option<i64>,
    /// Conditions checked before deleting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
    /// Deprecated form of `propagationPolicy: Orphan`.
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub orphan_dependents: Option<bool>,
    /// How dependents are treated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<DeletionPropagation>,
    /// `["All"]` to validate without persisting.
    #[serde(
        default,
        deserialize_with = "string_or_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub dry_run: Vec<String>,
    /// Delete an object that cannot be decoded from storage, bypassing finalizers.
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub ignore_store_read_error_with_cluster_breaking_potential: Option<bool>,
}

impl DeleteOptions {
    /// Whether the request asks for a dry run.
    pub fn is_dry_run(&self) -> bool {
        is_dry_run(&self.dry_run)
    }
}

/// The query parameters of a create (`metav1.CreateOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateOptions {
    /// Kind, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `["All"]` to validate without persisting.
    #[serde(
        default,
        deserialize_with = "string_or_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub dry_run: Vec<String>,
    /// Name recorded in `managedFields` for this write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    /// What to do with unknown or duplicate fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_validation: Option<FieldValidation>,
}

impl CreateOptions {
    /// Whether the request asks for a dry run.
    pub fn is_dry_run(&self) -> bool {
        is_dry_run(&self.dry_run)
    }
}

/// The query parameters of an update (`metav1.UpdateOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateOptions {
    /// Kind, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `["All"]` to validate without persisting.
    #[serde(
        default,
        deserialize_with = "string_or_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub dry_run: Vec<String>,
    /// Name recorded in `managedFields` for this write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    /// What to do with unknown or duplicate fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_validation: Option<FieldValidation>,
}

impl UpdateOptions {
    /// Whether the request asks for a dry run.
    pub fn is_dry_run(&self) -> bool {
        is_dry_run(&self.dry_run)
    }
}

/// The query parameters of a patch (`metav1.PatchOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchOptions {
    /// Kind, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version, when sent as an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `["All"]` to validate without persisting.
    #[serde(
        default,
        deserialize_with = "string_or_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub dry_run: Vec<String>,
    /// For server-side apply: take over fields other managers own instead of failing.
    #[serde(
        default,
        deserialize_with = "lenient_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub force: Option<bool>,
    /// Name recorded in `managedFields`; required for apply patches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_manager: Option<String>,
    /// What to do with unknown or duplicate fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_validation: Option<FieldValidation>,
}

impl PatchOptions {
    /// Whether the request asks for a dry run.
    pub fn is_dry_run(&self) -> bool {
        is_dry_run(&self.dry_run)
    }
}

/// Upstream accepts only `All` as a dry-run value; any entry means "dry run" once validated.
fn is_dry_run(values: &[String]) -> bool {
    values.iter().any(|v| v == "All")
}

/// Reads Go's `strconv.ParseBool` spellings, the form query parameters arrive in.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// An optional boolean from JSON `true`/`false`/`null` or a query-string spelling.
fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<bool>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a boolean or a string such as \"true\" or \"false\"")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            parse_go_bool(v)
                .map(Some)
                .ok_or_else(|| E::custom(format!("invalid boolean {v:?}")))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
    }
    d.deserialize_any(V)
}

/// An optional integer from a JSON number, `null` or a decimal string.
fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<i64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an integer or a decimal string")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            i64::try_from(v)
                .map(Some)
                .map_err(|_| E::custom(format!("integer {v} out of range")))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            v.parse()
                .map(Some)
                .map_err(|_| E::custom(format!("invalid integer {v:?}")))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
    }
    d.deserialize_any(V)
}

/// A list of strings from a JSON array, `null`, or one string (a single query parameter).
fn string_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or a list of strings")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(vec![v.to_owned()])
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(item) = seq.next_element::<String>()? {
                out.push(item);
            }
            Ok(out)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Self::Value, D2::Error> {
            d.deserialize_any(self)
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Decodes the way a query-string extractor does: every value arrives as a string.
    fn try_from_query<T: for<'de> Deserialize<'de>>(
        pairs: &[(&str, &str)],
    ) -> Result<T, serde_json::Error> {
        let map: serde_json::Map<String, serde_json::Value> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        serde_json::from_value(serde_json::Value::Object(map))
    }

    fn from_query<T: for<'de> Deserialize<'de>>(pairs: &[(&str, &str)]) -> T {
        try_from_query(pairs).unwrap()
    }

    #[test]
    fn list_options_read_from_a_query_string() {
        let opts: ListOptions = from_query(&[
            ("labelSelector", "app=web"),
            ("fieldSelector", "metadata.name=x"),
            ("watch", "1"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", "42"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("timeoutSeconds", "30"),
            ("limit", "500"),
            ("continue", "tok"),
            ("sendInitialEvents", "false"),
            ("pretty", "true"),
        ]);
        assert_eq!(
            opts,
            ListOptions {
                label_selector: Some("app=web".into()),
                field_selector: Some("metadata.name=x".into()),
                watch: Some(true),
                allow_watch_bookmarks: Some(true),
                resource_version: Some("42".into()),
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                timeout_seconds: Some(30),
                limit: Some(500),
                continue_: Some("tok".into()),
                send_initial_events: Some(false),
                ..ListOptions::default()
            }
        );
        assert_eq!(from_query::<ListOptions>(&[]), ListOptions::default());
    }

    #[test]
    fn bad_query_values_are_errors() {
        for (key, value) in [
            ("watch", "yes"),
            ("limit", "ten"),
            ("timeoutSeconds", "1.5"),
        ] {
            let err = try_from_query::<ListOptions>(&[(key, value)]).unwrap_err();
            assert!(err.to_string().contains(value), "{key}={value}: {err}");
        }
    }

    #[test]
    fn list_options_json_round_trip() {
        let input = json!({
            "labelSelector": "a=b",
            "watch": true,
            "resourceVersionMatch": "Exact",
            "limit": 10,
            "continue": "c"
        });
        let opts: ListOptions = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(opts.continue_.as_deref(), Some("c"));
        assert_eq!(serde_json::to_value(&opts).unwrap(), input);
        assert_eq!(
            serde_json::to_string(&ListOptions::default()).unwrap(),
            "{}"
        );
    }

    #[test]
    fn delete_options_body_round_trip() {
        let input = json!({
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "u-1", "resourceVersion": "7"},
            "orphanDependents": false,
            "propagationPolicy": "Foreground",
            "dryRun": ["All"]
        });
        let opts: DeleteOptions = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(opts.grace_period_seconds, Some(0));
        assert_eq!(
            opts.propagation_policy,
            Some(DeletionPropagation::Foreground)
        );
        assert!(opts.is_dry_run());
        assert_eq!(serde_json::to_value(&opts).unwrap(), input);
        assert_eq!(
            serde_json::to_string(&DeleteOptions::default()).unwrap(),
            "{}"
        );
        let nulls: DeleteOptions =
            serde_json::from_str(r#"{"dryRun":null,"gracePeriodSeconds":null}"#).unwrap();
        assert_eq!(nulls, DeleteOptions::default());
    }

    #[test]
    fn delete_options_read_from_a_query_string() {
        let opts: DeleteOptions = from_query(&[
            ("gracePeriodSeconds", "5"),
            ("propagationPolicy", "Orphan"),
            ("dryRun", "All"),
        ]);
        assert_eq!(opts.grace_period_seconds, Some(5));
        assert_eq!(opts.propagation_policy, Some(DeletionPropagation::Orphan));
        assert_eq!(opts.dry_run, vec!["All".to_owned()]);
    }

    #[test]
    fn write_options_round_trip() {
        let patch: PatchOptions = from_query(&[
            ("dryRun", "All"),
            ("force", "true"),
            ("fieldManager", "kubectl"),
            ("fieldValidation", "Strict"),
        ]);
        assert!(patch.is_dry_run());
        assert_eq!(patch.force, Some(true));
        assert_eq!(patch.field_validation, Some(FieldValidation::Strict));
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!({"dryRun": ["All"], "force": true, "fieldManager": "kubectl", "fieldValidation": "Strict"})
        );

        let create: CreateOptions =
            from_query(&[("fieldManager", "me"), ("fieldValidation", "Warn")]);
        assert!(!create.is_dry_run());
        assert_eq!(
            serde_json::to_value(&create).unwrap(),
            json!({"fieldManager": "me", "fieldValidation": "Warn"})
        );
        let update: UpdateOptions = serde_json::from_value(json!({"dryRun": ["All"]})).unwrap();
        assert!(update.is_dry_run());
        assert_eq!(
            serde_json::to_string(&UpdateOptions::default()).unwrap(),
            "{}"
        );

        let get: GetOptions = from_query(&[("resourceVersion", "0")]);
        assert_eq!(
            serde_json::to_value(&get).unwrap(),
            json!({"resourceVersion": "0"})
        );
    }
}
