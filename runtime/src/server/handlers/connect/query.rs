//! A connect subresource's query as upstream's parameter codec converts it into options
//! (`staging/src/k8s.io/apimachinery/pkg/runtime/conversion.go`): the first value of a key
//! read, a flag true for any value but `0` and `false`, an integer parsed by Go's
//! `strconv.ParseInt` with its error as the 400's message.

use std::num::IntErrorKind;

use crate::server::http::error::ApiError;

/// The decoded pairs of a query, in order.
#[derive(Debug, Default)]
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    /// The pairs of `raw` (the part after `?`).
    pub(crate) fn new(raw: &str) -> Self {
        Self(
            form_urlencoded::parse(raw.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// Every value of `key`, in order.
    pub(crate) fn all<'a, 'k>(
        &'a self,
        key: &'k str,
    ) -> impl Iterator<Item = &'a str> + use<'a, 'k> {
        self.0
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `key`.
    pub(crate) fn first(&self, key: &str) -> Option<&str> {
        self.all(key).next()
    }

    /// `Convert_Slice_string_To_bool`: absent is false, `0` and `false` (any case) are false,
    /// anything else true.
    pub(crate) fn flag(&self, key: &str) -> bool {
        self.first(key)
            .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    }

    /// `Convert_Slice_string_To_Pointer_int64`: absent is `None`, anything else parsed.
    pub(crate) fn int64(&self, key: &str) -> Result<Option<i64>, ApiError> {
        self.first(key).map(parse_int64).transpose()
    }
}

/// Go's `strconv.ParseInt(text, 10, 64)`, its error as a 400.
pub(crate) fn parse_int64(text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => "value out of range",
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {text:?}: {why}"))
    })
}
