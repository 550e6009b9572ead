//! kapi-codegen: Kubernetes OpenAPI specs and CRD manifests → typed Rust.
