//! The rules written for one kind's cells, one function each, grouped by area as upstream's
//! `printX` functions (`pkg/printers/internalversion/printers.go`) compute them. Each reads the
//! object's JSON, a missing field being Go's zero value, and takes the time it needs as `now`.

pub(crate) mod admission;
pub(crate) mod autoscaling;
pub(crate) mod cluster;
pub(crate) mod events;
pub(crate) mod networking;
pub(crate) mod node;
pub(crate) mod pod;
pub(crate) mod rbac;
pub(crate) mod service;
pub(crate) mod storage;
pub(crate) mod workloads;
