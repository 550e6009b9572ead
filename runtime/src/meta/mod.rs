//! `meta.k8s.io/v1`: the API machinery types every Kubernetes kind and endpoint shares.
//!
//! Each type is a serde-exact equivalent of the upstream JSON: the same field names, the same
//! omission rules (`omitempty` fields are skipped when empty, everything else is always written)
//! and the same formats, so an object decoded and re-encoded comes out as it went in.

mod aggregated_discovery;
mod condition;
mod discovery;
mod label_selector;
mod managed_fields;
mod object_meta;
mod options;
mod partial;
mod status;
mod table;
mod watch;

pub use aggregated_discovery::*;
pub use condition::*;
pub use discovery::*;
pub use label_selector::*;
pub use managed_fields::*;
pub use object_meta::*;
pub use options::*;
pub use partial::*;
pub use status::*;
pub use table::*;
pub use watch::*;
