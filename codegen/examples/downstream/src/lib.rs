//! A downstream crate using kapi-codegen from its build script: the types of the project's example
//! API group `widgets.kapi.dev` (`specs/example/widgets.kapi.dev.yaml`), generated at build time
//! and included here, so `widgets::v1::Widget` and friends are ordinary items of this crate, and
//! the generated `register` functions add them to a `kapi::Registry`.
//!
//! ```
//! use kapi::Resource;
//! use kapi_codegen_example::widgets::v1::Widget;
//!
//! assert_eq!(Widget::info().plural, "widgets");
//! ```

// The generated kinds carry one `#[resource(printer_column(..))]` attribute per column, which
// clippy's `duplicated_attributes` mistakes for repeats when two columns share a `type`.
#![allow(clippy::duplicated_attributes)]

include!(concat!(env!("OUT_DIR"), "/kapi_generated.rs"));
