//! What handlers share about objects, kept apart so it imports no handler: an object's JSON
//! (`json`: metadata and simple JSON paths), its stored and served forms (`stored`, with
//! `conversion_webhook` for custom resources a CRD's webhook converts), the bodies
//! spliced from stored bytes (`served`), the representations it is answered in (`render`:
//! object, metadata only, table), resource versions and the waits for them (`revision`),
//! label and field selectors (`selector`, the label syntax in `label_parser`), continue
//! tokens (`continue_token`), the random suffixes of generated names (`generated_names`), the texts of Go's decoders upstream's answers embed (`go_text`),
//! and what it counts against a ResourceQuota (`quota`).
//!
//! May import: `http::error`, `http::negotiate`, `http::webhook` and `state`; never `handlers`.

pub(crate) mod continue_token;
pub(crate) mod conversion_webhook;
pub(crate) mod generated_names;
pub(crate) mod go_text;
pub(crate) mod json;
pub(crate) mod label_parser;
pub(crate) mod quota;
pub(crate) mod render;
pub(crate) mod revision;
pub(crate) mod selector;
pub(crate) mod served;
pub(crate) mod stored;
