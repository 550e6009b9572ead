//! Derive macros for kapi. `#[derive(Resource)]` and `#[derive(CustomResource)]` land here; the
//! `kapi` crate re-exports them.
