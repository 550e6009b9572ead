//! kapi-codegen: Kubernetes OpenAPI specs and CRD manifests → typed Rust.
//!
//! The crate is split the way data flows through it:
//! - [`load`] reads Swagger 2.0, OpenAPI 3.0 folders and CRD manifests (the only file I/O),
//! - [`model`] is the one intermediate representation all inputs become (no I/O),
//! - [`emit`](mod@emit) turns a model into Rust token streams and formatted files (no I/O),
//! - [`list`] renders a model's group-versions and kinds for the `list` command.
//! - [`builder`] is the build-script front end: inputs in, one file in `OUT_DIR` out;
//!   [`project`] the CLI's jobs (arguments or a manifest) and [`output`] the output directory
//!   (compare, write what changed, remove what is stale).

pub mod builder;
pub mod emit;
pub mod list;
pub mod load;
pub mod model;
pub mod output;
pub mod project;
#[cfg(feature = "sample")]
pub mod sample;

pub use builder::{BuildError, Builder};
pub use emit::{Emitted, Generated, Lifecycles, Options, Report, emit, generate};
pub use load::{
    FactFiles, LoadError, load_conversions, load_defaults, load_facts, load_field_selectors,
    load_inputs, load_lifecycle, load_printers, load_strategies, load_validations,
};
pub use model::Model;
