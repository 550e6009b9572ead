//! The handlers of resource requests, one module per operation, each with a `serve` the
//! dispatcher calls: `get`, `list`, `watch`, `create`, `update` (of an object or its status),
//! `patch` (with server-side apply), `delete` (of one object or a collection), `scale` (the
//! scale subresource) and `namespace_lifecycle` (a namespace's `finalize`, and the passes that
//! empty a terminating one); a pod's `binding` (to a node) and `eviction` (a delete its
//! disruption budgets allow), neither stored; `services` (a Service write's cluster IP and node ports, which
//! `create` and `update` run); `reviews` (creates of the review kinds, evaluated by `auth`
//! and never stored); `token_request` (a service account's `token`: a signed token, never
//! stored); `connect` (the subresources that reach past the server: a pod's `log`, `exec`,
//! `attach`, `portforward`, and the `proxy` of pods, Services and Nodes). What several share:
//! `request` (the body and write options), `gated_fields` (the fields a release drops while
//! their feature gates are off), `decode` (a create or update body read as upstream's serializer reads it, with its
//! refusals), `object` (the rules writes share: names, the kind's codec and schema, field
//! validation, reads) and `managed_fields` (field ownership).
//!
//! May import: `objects`, `state`, `http`, `auth` (the reviews, and `connect`'s second
//! authorization), `admission` (the plugins a
//! create or update runs)
//! and `background` (a delete starts the collector's work). Nothing outside this folder
//! imports a handler but the dispatcher.

pub(crate) mod binding;
pub(crate) mod connect;
pub(crate) mod create;
pub(crate) mod decode;
pub(crate) mod delete;
pub(crate) mod eviction;
pub(crate) mod gated_fields;
pub(crate) mod get;
pub(crate) mod list;
pub(crate) mod managed_fields;
pub(crate) mod namespace_lifecycle;
pub(crate) mod object;
pub(crate) mod patch;
pub(crate) mod request;
pub(crate) mod reviews;
pub(crate) mod scale;
pub(crate) mod services;
pub(crate) mod token_request;
pub(crate) mod update;
pub(crate) mod watch;
