//! Any bytes given to the CRD loader (YAML or JSON, several documents) produce a model or an
//! error, never a panic or hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kapi_codegen::load::load_crds_str("fuzz.yaml", text);
    }
});
