//! Compile-fail tests pinning every error `#[derive(Resource)]` reports, with its span.
//!
//! Each `ui/<mistake>.rs` is a user's mistake and `ui/<mistake>.stderr` the exact compiler
//! output. After changing a message, regenerate with
//! `TRYBUILD=overwrite cargo test -p kapi-macros --test ui` and read the diff.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
