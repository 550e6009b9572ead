//! Tasks that run beside the requests: the garbage collector (`gc`) and the
//! CustomResourceDefinition task that rebuilds the served catalog (`crds`). Each is started by
//! `serve` and stops with the server.
//!
//! May import: `objects`, `state` and `http` (errors, paths, request options); never `handlers`.

pub(crate) mod crds;
pub(crate) mod gc;
