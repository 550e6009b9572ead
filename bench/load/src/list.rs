//! Listing the stored ConfigMaps: the whole collection in one response, and in pages of
//! `limit` following `continue`. Each run is timed from the request to the last byte of the
//! last body; checking the item count happens after the clock stops.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hyper::{Method, StatusCode};
use serde_json::Value;

use crate::http::{Conn, query_escape};
use crate::stats::{Samples, Summary};

/// Lists `collection` whole `runs` times, checking each time that `expected` items came back;
/// returns the timings and the size of one response.
pub(crate) async fn whole(
    conn: &mut Conn,
    collection: &str,
    expected: usize,
    runs: usize,
) -> Result<(Summary, usize)> {
    let mut times = Samples::default();
    let mut bytes = 0;
    for _ in 0..runs {
        let started = Instant::now();
        let body = conn
            .expect(Method::GET, collection, None, StatusCode::OK)
            .await?;
        times.record(started.elapsed());
        bytes = body.len();
        let list: Value = serde_json::from_slice(&body).context("parsing the list")?;
        check_count(items(&list), expected, "whole list")?;
    }
    Ok((times.summary(), bytes))
}

/// Lists `collection` `runs` times in pages of `limit`; returns the timings and the number of
/// pages one run took.
pub(crate) async fn paged(
    conn: &mut Conn,
    collection: &str,
    expected: usize,
    limit: usize,
    runs: usize,
) -> Result<(Summary, usize)> {
    let mut times = Samples::default();
    let mut pages = 0;
    for _ in 0..runs {
        let (elapsed, count, n) = paginate(conn, collection, limit).await?;
        times.record(elapsed);
        pages = n;
        check_count(count, expected, "paginated list")?;
    }
    Ok((times.summary(), pages))
}

/// One paginated run: its duration, the items seen and the pages taken. Like the whole list,
/// the clock covers requests and body reads only: each page's continue token is found by its
/// key, and the pages are parsed (and the tokens checked) after the clock stops.
async fn paginate(
    conn: &mut Conn,
    collection: &str,
    limit: usize,
) -> Result<(Duration, usize, usize)> {
    let started = Instant::now();
    let mut token: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let mut path = format!("{collection}?limit={limit}");
        if let Some(token) = &token {
            path.push_str("&continue=");
            path.push_str(&query_escape(token));
        }
        let body = conn
            .expect(Method::GET, &path, None, StatusCode::OK)
            .await?;
        token = continue_token(&body);
        pages.push((body, token.clone()));
        if token.is_none() {
            break;
        }
    }
    let elapsed = started.elapsed();
    let mut count = 0;
    for (body, token) in &pages {
        let page: Value = serde_json::from_slice(body).context("parsing a page")?;
        count += items(&page);
        let parsed = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        if parsed != token.as_deref() {
            bail!("continue token {token:?} found by key, {parsed:?} parsed");
        }
    }
    Ok((elapsed, count, pages.len()))
}

/// `metadata.continue` of a list page, found by its key (list metadata precedes the items,
/// and no ConfigMap of this benchmark has a `continue` key).
fn continue_token(body: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"continue\":\"";
    let start = body.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let len = body[start..].iter().position(|&b| b == b'"')?;
    let token = std::str::from_utf8(&body[start..start + len]).ok()?;
    (!token.is_empty()).then(|| token.to_owned())
}

fn items(list: &Value) -> usize {
    list.get("items")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn check_count(got: usize, expected: usize, what: &str) -> Result<()> {
    if got != expected {
        bail!("{what}: {got} items, expected {expected}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_are_found_by_key() {
        let page = br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"9","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ=="},"items":[]}"#;
        assert_eq!(
            continue_token(page).as_deref(),
            Some("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==")
        );
        assert_eq!(continue_token(br#"{"metadata":{"continue":""}}"#), None);
        assert_eq!(continue_token(br#"{"metadata":{}}"#), None);
    }
}
