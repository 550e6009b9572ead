//! kapi: typed Kubernetes-style APIs.
//!
//! This crate is what users depend on. It owns the types every Kubernetes kind shares
//! (`meta.k8s.io/v1` in [`meta`], and the special value types [`Time`], [`MicroTime`],
//! [`Duration`], [`Quantity`], [`IntOrString`] and [`RawExtension`]), the generic [`List`],
//! and the [`Resource`] trait with its static [`ResourceInfo`] description that the code
//! generator and the derive macros implement for every kind.
//!
//! ```
//! use kapi::meta::{Condition, ConditionStatus, Conditions};
//! use kapi::{IntOrString, Quantity};
//!
//! let memory: Quantity = "1.5Gi".parse()?;
//! assert_eq!(memory.to_string(), "1536Mi");
//!
//! let surge = IntOrString::from("25%");
//! assert_eq!(surge.scaled_value(10, true)?, 3);
//!
//! let mut conditions: Vec<Condition> = Vec::new();
//! conditions.set_condition(Condition::new("Ready", ConditionStatus::True, "Started", ""));
//! assert!(conditions.is_condition_true("Ready"));
//! assert_eq!(conditions.condition_status("Synced"), ConditionStatus::Unknown);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A custom resource is one derive on its spec. [`Wire`] gives the types serde's `Serialize`
//! and `Deserialize` (reading the usual `#[serde]` attributes) with far less code than serde's
//! own derives; [`Schema`] gives the structural schema its CRD carries.
//!
//! ```
//! use kapi::meta::Condition;
//! use kapi::{CustomResource, Registry, Schema, Wire};
//!
//! /// Desired state of a Backup.
//! #[derive(Clone, Debug, Wire, CustomResource)]
//! #[serde(rename_all = "camelCase")]
//! #[resource(group = "example.com", version = "v1", status = "BackupStatus", short_names = ["bk"])]
//! pub struct BackupSpec {
//!     /// Cron schedule.
//!     pub schedule: String,
//!     /// How many backups to keep.
//!     #[serde(default)]
//!     pub keep_last: i32,
//! }
//!
//! /// Observed state of a Backup.
//! #[derive(Clone, Debug, Default, Wire, Schema)]
//! #[serde(rename_all = "camelCase")]
//! pub struct BackupStatus {
//!     #[serde(default, skip_serializing_if = "Vec::is_empty")]
//!     pub conditions: Vec<Condition>,
//! }
//!
//! let backup: Backup = serde_json::from_str(
//!     r#"{"apiVersion": "example.com/v1", "kind": "Backup",
//!         "metadata": {"name": "nightly"}, "spec": {"schedule": "0 3 * * *"}}"#,
//! )?;
//! assert_eq!(backup.spec.keep_last, 0);
//! let crd = Backup::crd();
//! assert_eq!(crd.metadata.name.as_deref(), Some("backups.example.com"));
//!
//! // A server serves whatever the registry holds.
//! let mut registry = Registry::new();
//! registry.register_custom::<Backup>();
//! assert!(registry.get("example.com", "v1", "backups").is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod bytes;
#[cfg(feature = "server")]
pub mod cel;
pub mod conversion;
pub mod crd;
pub mod defaulting;
mod definitions;
pub mod duration;
pub mod dynamic;
pub mod field_labels;
pub mod int_or_string;
#[cfg(feature = "kube")]
pub mod kube;
pub mod list;
pub mod merge;
pub mod meta;
mod names;
pub mod number;
pub mod printer;
pub mod quantity;
pub mod raw;
pub mod registry;
pub mod resource;
pub mod schema;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod storage;
pub mod time;
pub mod type_tag;
pub mod validation;
pub mod wire;
pub mod write_rules;
#[cfg(feature = "yaml")]
pub mod yaml;

/// Re-exports used by kapi's macros and generated code; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;
}

/// The `serde_json` whose `Value` kapi's types hold, re-exported so that generated crates need
/// no dependency of their own for free-form fields (`kapi::serde_json::Value`).
pub use serde_json;

pub use bytes::ByteString;
pub use crd::CustomResource;
pub use duration::Duration;
pub use dynamic::DynamicObject;
pub use int_or_string::IntOrString;
pub use kapi_macros::{CustomResource, Resource, Schema, Wire};
pub use list::List;
pub use number::Number;
pub use quantity::Quantity;
pub use raw::RawExtension;
pub use registry::Registry;
pub use resource::{
    GroupVersionKind, KubeVersion, Lifecycle, ObjectMetaAccess, PrinterColumn, Resource,
    ResourceInfo, Scale, Scope, Subresources, Verb,
};
pub use schema::Schema;
pub use time::{MicroTime, Time};
