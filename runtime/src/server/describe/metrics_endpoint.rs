//! `GET /metrics`: the series of `metrics`, with the object counts read from the store at each
//! scrape. Kept apart from `metrics` so that the series, which the state holds, import nothing
//! of the state.

use axum::extract::State as Extract;
use axum::routing::get;

use crate::server::state::State;

/// `GET /metrics`.
pub(crate) fn routes() -> axum::Router<State> {
    axum::Router::new().route(
        "/metrics",
        get(|Extract(state): Extract<State>| async move {
            crate::server::state::metrics::scrape(
                &state.metrics,
                &state.registry(),
                state.storage.as_ref(),
            )
            .await
        }),
    )
}
