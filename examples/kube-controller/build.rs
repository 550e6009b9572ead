//! Generates the Backup and BackupStore kinds from `crds/backups.yaml` for the kube crate into
//! `$OUT_DIR/kapi_generated.rs`, which `src/lib.rs` includes.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    kapi_codegen::Builder::new()
        .input("crds/backups.yaml")
        .kube(true)
        .generate()?;
    Ok(())
}
