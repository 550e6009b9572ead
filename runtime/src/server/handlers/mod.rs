//! The handlers of resource requests: single objects (`object`, with the write rules they
//! share), the namespace lifecycle (`namespace_lifecycle`), lists (`list`), watches (`watch`),
//! patches (`patch`, with server-side apply) and field ownership (`managed_fields`).
//!
//! May import: `objects`, `state`, `http` and `background` (a delete starts the collector's
//! work). Nothing outside this folder imports a handler but the dispatcher.

pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod list;
pub(crate) mod managed_fields;
pub(crate) mod namespace_lifecycle;
pub(crate) mod object;
pub(crate) mod patch;
pub(crate) mod scale;
pub(crate) mod update;
pub(crate) mod watch;
