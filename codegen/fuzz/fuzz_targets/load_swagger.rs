//! Any bytes given to the Swagger 2.0 loader produce a model or an error, never a panic or hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = kapi_codegen::load::load_swagger_str("fuzz.json", text);
    }
});
