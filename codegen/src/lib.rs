//! kapi-codegen: Kubernetes OpenAPI specs and CRD manifests → typed Rust.
//!
//! The crate is split the way data flows through it:
//! - [`load`] reads Swagger 2.0, OpenAPI 3.0 folders and CRD manifests (the only file I/O),
//! - [`model`] is the one intermediate representation all inputs become (no I/O),
//! - [`list`] renders a model's group-versions and kinds for the `list` command.
//!
//! Emission of Rust code from the model comes next and will read only the model.

pub mod list;
pub mod load;
pub mod model;

pub use load::{LoadError, load_inputs};
pub use model::Model;
