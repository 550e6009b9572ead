//! What kinds made for the `kube` crate need from kapi (feature `kube`).
//!
//! The `kube` crate's `Api<K>`, `watcher`, `reflector` and `Controller` take any type that
//! implements k8s-openapi's `Resource` and `Metadata` with k8s-openapi's `ObjectMeta` (through
//! `kube::Resource`'s blanket impl). A kind marked `#[resource(kube)]`, and every kind the
//! generator writes for its kube target, carries that `ObjectMeta` as its `metadata` and
//! implements those traits besides kapi's [`Resource`](crate::Resource); everything else in it
//! (Quantity, IntOrString, Time, open enums, conditions) stays kapi's.
//!
//! k8s-openapi is re-exported so that derived and generated code reaches it through kapi, and
//! a crate of generated kinds needs no dependency of its own on it. kapi leaves the choice of
//! k8s-openapi's Kubernetes version (its `v1_*` feature) to the binary, as k8s-openapi asks of
//! libraries; a program using `kube` makes that choice already.

pub use k8s_openapi;

crate::resource::object_meta_access!(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta);
