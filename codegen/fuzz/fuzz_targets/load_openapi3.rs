//! Any bytes given to the OpenAPI 3.0 loader produce a model or an error, never a panic or hang.
//! The input is split at the first NUL byte into two documents, so merging is fuzzed too.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let documents: Vec<(&str, &str)> = match text.split_once('\0') {
            Some((a, b)) => vec![("a.json", a), ("b.json", b)],
            None => vec![("a.json", text)],
        };
        let _ = kapi_codegen::load::load_openapi3_str(&documents);
    }
});
