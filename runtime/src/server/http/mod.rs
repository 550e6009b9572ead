//! Connections and the layers every request passes, and the HTTPS requests the server itself
//! sends (`client`; `webhook`, the calls to admission and conversion webhooks over it), the
//! requests it forwards to kubelets and backends (`backend`; `kubelet`, how a Node's kubelet
//! is reached): the address the server is reached by (`advertise`), accepting and
//! bounding connections
//! (`connections`), TLS and the client certificate it establishes (`tls`), the stop sequence (`shutdown`), the request layers from the outside in
//! (`panics`, `httplog`, `origin`, `inflight`, then inside compression `reencode`: indented
//! JSON for people, errors in YAML, protobuf or CBOR for clients that asked for them),
//! resolving a URL against the catalog (`path`) and the methods its routes take (`routes`),
//! reading and writing bodies (`negotiate`, `yaml`, `protobuf`, `cbor`), the request options
//! every write takes (`dry_run`, `field_validation`), the send window of streaming bodies
//! (`send_window`) and the one error type every failure becomes (`error`).
//!
//! May import: `state` (the shared state, the built-in Namespace kind) and nothing else of the
//! server; objects, handlers, background tasks and the dispatcher build on these modules,
//! never the other way round.

pub(crate) mod advertise;
pub(crate) mod backend;
pub(crate) mod cbor;
pub(crate) mod client;
pub(crate) mod connections;
pub(crate) mod dry_run;
pub(crate) mod error;
pub(crate) mod field_validation;
pub(crate) mod httplog;
pub(crate) mod inflight;
pub(crate) mod kubelet;
pub(crate) mod negotiate;
pub(crate) mod origin;
pub(crate) mod panics;
pub(crate) mod path;
pub(crate) mod protobuf;
pub(crate) mod reencode;
pub(crate) mod routes;
pub(crate) mod send_window;
pub(crate) mod shutdown;
pub(crate) mod tls;
pub(crate) mod webhook;
pub(crate) mod yaml;
