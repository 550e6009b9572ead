//! A request whose handling panics (a bug) gets upstream's answer, a plain 500 that tells no
//! internals, while the panic's message is logged (an `ERROR` event; where it happened is in
//! the panic hook's report: Rust's default hook prints it, the `kapi` binary's logs it). The
//! connection and every other request go on.

use std::any::Any;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tower_http::catch_panic::CatchPanicLayer;

/// Upstream's body for a request that made the server panic (`WithPanicRecovery`).
const ANSWER: &str = "This request caused apiserver to panic. Look in the logs for details.\n";

/// The layer: outermost, so a panic anywhere in a handler is caught.
pub(crate) fn layer() -> CatchPanicLayer<fn(Box<dyn Any + Send>) -> Response> {
    CatchPanicLayer::custom(answer as fn(Box<dyn Any + Send>) -> Response)
}

fn answer(panic: Box<dyn Any + Send>) -> Response {
    let text = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    tracing::error!(panic = text, "a request panicked (a bug); answered 500");
    let mut response = Response::new(Body::from(ANSWER));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::http::Request;
    use axum::routing::get;
    use tower::ServiceExt as _;

    use super::*;

    #[tokio::test]
    async fn a_panic_is_a_plain_500_without_its_text() {
        let router = Router::new()
            .route(
                "/",
                get(|| async {
                    if true {
                        panic!("secret internals");
                    }
                }),
            )
            .layer(layer());
        let response = router
            .oneshot(Request::get("/").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), 500);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&body[..], ANSWER.as_bytes());
    }
}
