//! kapi: typed Kubernetes-style APIs.
//!
//! This crate is what users depend on. It owns the types every Kubernetes kind shares
//! (`meta.k8s.io/v1` in [`meta`], and the special value types [`Time`], [`MicroTime`],
//! [`Duration`], [`Quantity`], [`IntOrString`] and [`RawExtension`]), the generic [`List`],
//! and the [`Resource`] trait with its static [`ResourceInfo`] description that the code
//! generator and the derive macros implement for every kind.
#![warn(missing_docs)]

pub mod duration;
pub mod dynamic;
pub mod int_or_string;
pub mod list;
pub mod meta;
pub mod quantity;
pub mod raw;
pub mod resource;
pub mod time;

pub use duration::Duration;
pub use dynamic::DynamicObject;
pub use int_or_string::IntOrString;
pub use list::List;
pub use quantity::Quantity;
pub use raw::RawExtension;
pub use resource::{
    GroupVersionKind, KubeVersion, Lifecycle, PrinterColumn, Resource, ResourceInfo, Scale,
    Scope, Subresources, Verb,
};
pub use time::{MicroTime, Time};
