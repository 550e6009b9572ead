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
#![warn(missing_docs)]

pub mod bytes;
pub mod crd;
pub mod duration;
pub mod dynamic;
pub mod int_or_string;
pub mod list;
pub mod merge;
pub mod meta;
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
pub mod wire;

/// Re-exports used by kapi's macros and generated code; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;
}

pub use bytes::ByteString;
pub use crd::CustomResource;
pub use duration::Duration;
pub use dynamic::DynamicObject;
pub use int_or_string::IntOrString;
pub use kapi_macros::{CustomResource, Resource, Schema, Wire};
pub use list::List;
pub use quantity::Quantity;
pub use raw::RawExtension;
pub use registry::Registry;
pub use resource::{
    GroupVersionKind, KubeVersion, Lifecycle, PrinterColumn, Resource, ResourceInfo, Scale, Scope,
    Subresources, Verb,
};
pub use schema::Schema;
pub use time::{MicroTime, Time};
