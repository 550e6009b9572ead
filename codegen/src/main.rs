//! The `kapi-codegen` command line.
fn main() {}
