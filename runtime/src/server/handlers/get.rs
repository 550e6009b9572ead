//! Get (GET of one object or its `status`): the object at the `resourceVersion` asked for,
//! rendered as the client asked. A scale is read by `scale`.

use axum::http::StatusCode;
use axum::response::Response;

use crate::meta::GetOptions;

use crate::server::Call;
use crate::server::handlers::object;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::Output;
use crate::server::objects::render;

pub(crate) async fn serve(call: &Call, name: &str, output: Output) -> Result<Response, ApiError> {
    let options: GetOptions = call.query()?;
    let object = object::get(call, name, options.resource_version.as_deref()).await?;
    render::reply(call, output, StatusCode::OK, object)
}
