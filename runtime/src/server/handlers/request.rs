//! What every handler that reads a body shares: the body read whole within its bounds
//! ([`read_body`]), and for creates, updates, patches and finalizes, the typed query options
//! and the write options (dry run, field validation) they give ([`write_request`]).

use axum::body::Body;
use axum::http::{HeaderMap, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::meta::{CreateOptions, FieldValidation, PatchOptions, UpdateOptions};

use crate::server::Call;
use crate::server::http::dry_run::{self, WriteOptions};
use crate::server::http::error::{ApiError, MAX_BODY_BYTES};
use crate::server::http::field_validation::Directive;
use crate::server::state::release::{Feature, FeatureState};

/// The query options of a write: each names its dry-run and field-validation options.
pub(crate) trait WriteQuery: DeserializeOwned {
    /// The options' kind, as errors about them name it.
    const KIND: &'static str;
    fn dry_run(&self) -> &[String];
    fn field_validation(&self) -> Option<&FieldValidation>;
}

macro_rules! write_query {
    ($($options:ident),*) => {$(
        impl WriteQuery for $options {
            const KIND: &'static str = stringify!($options);
            fn dry_run(&self) -> &[String] {
                &self.dry_run
            }
            fn field_validation(&self) -> Option<&FieldValidation> {
                self.field_validation.as_ref()
            }
        }
    )*};
}

write_query!(CreateOptions, UpdateOptions, PatchOptions);

/// The steps every create, update, patch and finalize takes before its own: the body, read
/// whole, then the typed query options `O` and the write options they give.
pub(crate) async fn write_request<O: WriteQuery>(
    call: &Call,
    body: Body,
) -> Result<(Bytes, WriteOptions), ApiError> {
    let body = read_body(call, body).await?;
    let options: O = call.query()?;
    // Before server-side field validation, `fieldValidation` is an unknown parameter and
    // unknown fields are dropped without a word.
    let validates = call.state.feature(Feature::ServerSideFieldValidation) != FeatureState::Absent;
    let asked = options.field_validation().filter(|_| validates);
    let mut write = dry_run::write_options(O::KIND, options.dry_run(), asked)?;
    if !validates {
        write.validation = Directive::Ignore;
    }
    Ok((body, write))
}

/// The request body, whole: at most [`MAX_BODY_BYTES`], within the body timeout (a client that
/// sends half a body and stops holds nothing for longer).
pub(crate) async fn read_body(call: &Call, body: Body) -> Result<Bytes, ApiError> {
    tokio::time::timeout(call.tun.body_timeout, read_whole_body(body, &call.headers))
        .await
        .map_err(|_| ApiError::timeout("request did not complete within the allotted timeout"))?
}

async fn read_whole_body(body: Body, headers: &HeaderMap) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES) {
        return Err(ApiError::body_too_large());
    }
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            // `to_bytes` reports the limit as a length-limit error in its source chain.
            let text = format!("{e:?}");
            if text.contains("LengthLimit") {
                ApiError::body_too_large()
            } else {
                ApiError::bad_request(format!("unable to read the request body: {e}"))
            }
        })
}
