//! Generates the widgets.kapi.dev types into `$OUT_DIR/kapi_generated.rs`, which `src/lib.rs`
//! includes. The path is relative to this crate's root, where Cargo runs build scripts.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    kapi_codegen::Builder::new()
        .input("../../../specs/example/widgets.kapi.dev.yaml")
        .docs(true)
        .generate()?;
    Ok(())
}
