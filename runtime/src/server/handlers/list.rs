//! Lists: query validation, the `resourceVersion`/`resourceVersionMatch` table, label and field
//! selection, `limit`/`continue` pagination over one snapshot. Items are served as
//! `stored::from_stored` serves them, so they come in the requested version, converted when the
//! resource has conversions, and selectors see that version's shape. A plain JSON list is
//! written from each item's served bytes (`served`: the stored bytes with the resourceVersion
//! spliced in when nothing needs converting), without building a `Value` per item.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::meta::{ListMeta, ListOptions, ResourceVersionMatch, StatusCause};
use crate::storage::{ReadError, Storage};

use crate::server::Call;
use crate::server::http::error::ApiError;
use crate::server::http::negotiate::{self, Format, Output, Shape};
use crate::server::http::protobuf;
use crate::server::objects::continue_token::ContinueToken;
use crate::server::objects::render::Rendering;
use crate::server::objects::revision::{parse_list_rv, parse_rv, wait_for};
use crate::server::objects::selector::Selectors;
use crate::server::objects::served::ServedJson;
use crate::server::objects::stored::{converted_value, from_stored_converted};
use crate::server::state::keys;
use crate::server::state::release::{Feature, FeatureState};

/// Upstream's message for a list at a resourceVersion that was compacted away
/// (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/errors.go`).
const EXPIRED_LIST: &str = "The resourceVersion for the provided list is too old.";

/// Upstream's message for a continue token whose snapshot was compacted away.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// Checks a list or watch request's options as upstream's `ValidateListOptions` does (422),
/// as the release has it (`watch_list`, the state of its `WatchList` feature): before the
/// feature, `sendInitialEvents` is an unknown parameter, dropped here, and `resourceVersionMatch`
/// is refused on watches; while it is off, `sendInitialEvents` is refused on watches.
pub(crate) fn validate(
    options: &mut ListOptions,
    watch: bool,
    watch_list: FeatureState,
) -> Result<(), ApiError> {
    set_defaults(options, watch, watch_list);
    let mut causes = Vec::new();
    let rv = options.resource_version.as_deref().unwrap_or("");
    let has_continue = options.continue_.as_deref().is_some_and(|c| !c.is_empty());
    let field = "resourceVersionMatch";
    if watch_list == FeatureState::Absent {
        options.send_initial_events = None;
        if watch && options.resource_version_match.is_some() {
            causes.push(StatusCause::forbidden(
                field,
                "resourceVersionMatch is forbidden for watch",
            ));
        }
    }
    if watch && watch_list != FeatureState::Absent {
        let not_older = options.resource_version_match == Some(ResourceVersionMatch::NotOlderThan);
        if options.send_initial_events.is_some() && !not_older {
            causes.push(StatusCause::forbidden(
                field,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if options.send_initial_events.is_some() && watch_list == FeatureState::Off {
            causes.push(StatusCause::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
        if let Some(m) = &options.resource_version_match {
            if options.send_initial_events.is_none() {
                causes.push(StatusCause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if *m != ResourceVersionMatch::NotOlderThan {
                causes.push(StatusCause::not_supported(
                    field,
                    &Value::from(m.to_string()),
                    &["NotOlderThan"],
                ));
            }
            if has_continue {
                causes.push(StatusCause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if let Some(m) = &options.resource_version_match {
            if rv.is_empty() {
                causes.push(StatusCause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if has_continue {
                causes.push(StatusCause::forbidden(
                    field,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            match m {
                ResourceVersionMatch::Exact if rv == "0" => causes.push(StatusCause::forbidden(
                    field,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                )),
                ResourceVersionMatch::Exact | ResourceVersionMatch::NotOlderThan => {}
                other => causes.push(StatusCause::not_supported(
                    field,
                    &Value::from(other.to_string()),
                    &["Exact", "NotOlderThan"],
                )),
            }
        }
        if options.send_initial_events.is_some() {
            causes.push(StatusCause::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", causes))
    }
}

/// Upstream's `SetListOptionsDefaults`: while WatchList is on, a watch from no resourceVersion
/// or `0` that names neither `sendInitialEvents` nor `resourceVersionMatch` asks for initial
/// events (so it ends them with a bookmark when it allows bookmarks).
fn set_defaults(options: &mut ListOptions, watch: bool, watch_list: FeatureState) {
    let legacy = matches!(options.resource_version.as_deref(), None | Some("" | "0"));
    if watch
        && watch_list.is_on()
        && legacy
        && options.send_initial_events.is_none()
        && options.resource_version_match.is_none()
    {
        options.send_initial_events = Some(true);
        options.resource_version_match = Some(ResourceVersionMatch::NotOlderThan);
    }
}

/// One page of a list.
#[derive(Debug)]
pub(crate) struct Page<T = Value> {
    /// The selected objects, in key order.
    pub(crate) items: Vec<T>,
    /// The revision the page was read at.
    pub(crate) revision: u64,
    /// The token for the next page.
    pub(crate) continue_: Option<String>,
    /// How many objects follow (only without selectors).
    pub(crate) remaining: Option<i64>,
}

/// Where and at which revision a list reads.
struct Plan {
    at: Option<u64>,
    start: Option<String>,
}

async fn plan(call: &Call, options: &ListOptions, prefix: &str) -> Result<Plan, ApiError> {
    let rv = options.resource_version.as_deref().unwrap_or("");
    if let Some(token) = options.continue_.as_deref().filter(|c| !c.is_empty()) {
        if !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let token = ContinueToken::decode(token)
            .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
        let at = u64::try_from(token.rv).ok().filter(|rv| *rv > 0);
        return Ok(Plan {
            at,
            start: Some(format!("{prefix}{}", token.start)),
        });
    }
    if rv.is_empty() || rv == "0" {
        return Ok(Plan {
            at: None,
            start: None,
        });
    }
    let exact = match options.resource_version_match {
        Some(ResourceVersionMatch::Exact) => true,
        Some(_) => false,
        None => options.limit.is_some_and(|l| l > 0),
    };
    // An exact read goes to etcd, any other to the watch cache, each with its own answer to
    // an unparsable version (upstream's `shouldDelegateList`).
    let wanted = if exact {
        parse_list_rv(rv)?
    } else {
        parse_rv(rv)?
    };
    wait_for(call, wanted).await?;
    Ok(Plan {
        at: exact.then_some(wanted),
        start: None,
    })
}

/// Reads one page of the target collection as objects.
pub(crate) async fn list(
    call: &Call,
    options: &ListOptions,
    selectors: &Selectors,
) -> Result<Page, ApiError> {
    list_with(call, options, selectors, |kv| {
        let object = from_stored_converted(call, &kv.value, kv.mod_revision)?;
        Ok(selectors.matches(&object).then_some(object))
    })
    .await
}

/// Reads one page of the target collection as served JSON, each item encoded once, from the
/// stored bytes when no conversion is needed.
pub(crate) async fn list_json(
    call: &Call,
    options: &ListOptions,
    selectors: &Selectors,
) -> Result<Page<Vec<u8>>, ApiError> {
    let served = ServedJson::new(call);
    list_with(call, options, selectors, |kv| {
        if selectors.is_empty() {
            return served.json(call, &kv.value, kv.mod_revision).map(Some);
        }
        let (json, object) = served.json_and_value(call, &kv.value, kv.mod_revision)?;
        Ok(selectors.matches(&object).then_some(json))
    })
    .await
}

/// Reads one page; `select` renders a stored object, `None` when the selectors drop it.
async fn list_with<T>(
    call: &Call,
    options: &ListOptions,
    selectors: &Selectors,
    mut select: impl FnMut(&crate::storage::KeyValue) -> Result<Option<T>, ApiError>,
) -> Result<Page<T>, ApiError> {
    let info = call.info();
    let prefix = keys::collection_prefix(info, call.target.namespace.as_deref());
    let Plan { mut at, start } = plan(call, options, &prefix).await?;
    let from_token = options.continue_.as_deref().is_some_and(|c| !c.is_empty());
    let limit = options
        .limit
        .and_then(|l| usize::try_from(l).ok())
        .filter(|l| *l > 0);
    let mut items = Vec::new();
    let mut next = start;
    let mut revision;
    let mut continue_ = None;
    let mut remaining = None;
    loop {
        let want = limit.map(|l| {
            let left = l.saturating_sub(items.len());
            if selectors.is_empty() {
                left
            } else {
                left.max(256)
            }
        });
        let page = match call
            .state
            .storage
            .list(&prefix, at, next.as_deref(), want)
            .await
        {
            Ok(page) => page,
            Err(ReadError::Compacted { .. }) if from_token => {
                let restart = next
                    .as_deref()
                    .and_then(|k| k.strip_prefix(prefix.as_str()))
                    .unwrap_or("")
                    .to_owned();
                let mut status = ApiError::expired(INCONSISTENT_CONTINUE).into_status();
                status.metadata.continue_ = Some(ContinueToken::new(-1, restart).encode());
                return Err(ApiError::from_status(status));
            }
            Err(ReadError::Compacted { .. }) => return Err(ApiError::expired(EXPIRED_LIST)),
            Err(e) => return Err(ApiError::from_read(e)),
        };
        revision = page.revision;
        // Later pages of this request read the same snapshot.
        at = Some(page.revision);
        let count = page.items.len();
        let mut last_key = None;
        items.reserve(count);
        for (i, mut kv) in page.items.into_iter().enumerate() {
            if limit.is_some_and(|l| items.len() >= l) {
                break;
            }
            // A value its CRD's webhook converts is converted first, one review per object
            // as upstream's storage decodes each item (`objects::conversion_webhook`).
            if let Some(converted) = converted_value(call, &kv.value).await? {
                kv.value = converted;
            }
            if let Some(item) = select(&kv)? {
                items.push(item);
            }
            last_key = Some((kv.key, i + 1 < count));
        }
        let Some(limit) = limit else { break };
        let Some((key, more_in_page)) = last_key else {
            break;
        };
        let more = more_in_page || page.more;
        if !more {
            break;
        }
        let relative = key.strip_prefix(prefix.as_str()).unwrap_or(&key);
        let resume = keys::after(relative);
        if items.len() >= limit {
            let rv = i64::try_from(revision).unwrap_or(i64::MAX);
            continue_ = Some(ContinueToken::new(rv, resume).encode());
            if selectors.is_empty() {
                let later_in_page = if more_in_page { 1 } else { 0 };
                remaining = i64::try_from(page.remaining)
                    .ok()
                    .map(|r| r + later_in_page);
            }
            break;
        }
        next = Some(format!("{prefix}{resume}"));
    }
    Ok(Page {
        items,
        revision,
        continue_,
        remaining,
    })
}

/// Serves a list request: plain JSON objects are written from each item's served bytes
/// (spliced from the stored ones when no conversion is needed); every other representation
/// goes through the objects.
pub(crate) async fn serve(call: &Call, output: Output) -> Result<Response, ApiError> {
    let mut options: ListOptions = call.query()?;
    validate(&mut options, false, call.state.feature(Feature::WatchList))?;
    let selectors = Selectors::of_request(call.info(), call.state.kube_version, &options, None)?;
    if output.format == Format::Protobuf && output.shape == Shape::Object {
        let page = list_json(call, &options, &selectors).await?;
        let info = call.info();
        let meta = serde_json::to_value(list_meta(&page)).map_err(ApiError::internal)?;
        let items = page.items.iter().map(|item| &item[..]);
        let body = protobuf::encode_list(&info.api_version(), &info.list_kind(), &meta, items)
            .map_err(ApiError::internal)?;
        let mut response = (StatusCode::OK, body).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(protobuf::MEDIA_TYPE),
        );
        return Ok(response);
    }
    if output != Output::JSON {
        let rendering = Rendering::of(call, output)?;
        let page = list(call, &options, &selectors).await?;
        let value = rendering.list(call.info(), list_meta(&page), page.items);
        return Ok(negotiate::encode(output.format, StatusCode::OK, &value));
    }
    let page = list_json(call, &options, &selectors).await?;
    let info = call.info();
    let meta = serde_json::to_vec(&list_meta(&page)).map_err(ApiError::internal)?;
    let kind = serde_json::to_vec(&info.list_kind()).map_err(ApiError::internal)?;
    let api_version = serde_json::to_vec(&info.api_version()).map_err(ApiError::internal)?;
    let size = page.items.iter().map(|i| i.len() + 1).sum::<usize>() + meta.len() + 64;
    let mut body = Vec::with_capacity(size);
    // The key order of `Rendering::list`'s object: kind, apiVersion, metadata, items.
    body.extend_from_slice(b"{\"kind\":");
    body.extend_from_slice(&kind);
    body.extend_from_slice(b",\"apiVersion\":");
    body.extend_from_slice(&api_version);
    body.extend_from_slice(b",\"metadata\":");
    body.extend_from_slice(&meta);
    body.extend_from_slice(b",\"items\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.extend_from_slice(b"]}");
    let mut response = (StatusCode::OK, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, crate::server::JSON);
    Ok(response)
}

/// The list metadata of a page.
pub(crate) fn list_meta<T>(page: &Page<T>) -> ListMeta {
    ListMeta {
        resource_version: Some(page.revision.to_string()),
        continue_: page.continue_.clone(),
        remaining_item_count: page.remaining,
        ..ListMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(
        rv: Option<&str>,
        m: Option<&str>,
        cont: Option<&str>,
        sie: Option<bool>,
    ) -> ListOptions {
        ListOptions {
            resource_version: rv.map(str::to_owned),
            resource_version_match: m.map(|m| serde_json::from_value(Value::from(m)).unwrap()),
            continue_: cont.map(str::to_owned),
            send_initial_events: sie,
            ..ListOptions::default()
        }
    }

    #[test]
    fn list_option_validation_matches_upstream() {
        let rows = [
            (opts(None, None, None, None), false, true),
            (opts(None, Some("Exact"), None, None), false, false),
            (opts(Some("5"), Some("Exact"), None, None), false, true),
            (opts(Some("0"), Some("Exact"), None, None), false, false),
            (
                opts(Some("0"), Some("NotOlderThan"), None, None),
                false,
                true,
            ),
            (opts(Some("5"), Some("Bogus"), None, None), false, false),
            (
                opts(Some("5"), Some("NotOlderThan"), Some("x"), None),
                false,
                false,
            ),
            (opts(None, None, None, Some(true)), false, false),
            (opts(None, None, None, Some(true)), true, false),
            (
                opts(None, Some("NotOlderThan"), None, Some(true)),
                true,
                true,
            ),
            (
                opts(Some("5"), Some("NotOlderThan"), None, None),
                true,
                false,
            ),
            (
                opts(Some("5"), Some("Exact"), None, Some(true)),
                true,
                false,
            ),
        ];
        for (mut options, watch, ok) in rows {
            let result = validate(&mut options, watch, FeatureState::On);
            assert_eq!(result.is_ok(), ok, "{options:?} watch={watch}");
            if let Err(e) = result {
                assert_eq!(e.code().as_u16(), 422);
            }
        }
    }

    /// `ValidateListOptions` of k8s.io/apimachinery at 1.28 (WatchList alpha, off) and at 1.20
    /// (before it: `sendInitialEvents` unknown, `resourceVersionMatch` refused on watches).
    #[test]
    fn watch_list_follows_the_release() {
        let mut asked = opts(None, Some("NotOlderThan"), None, Some(true));
        let err = validate(&mut asked.clone(), true, FeatureState::Off).unwrap_err();
        let status = err.status();
        assert_eq!(status.code, Some(422));
        let causes = &status.details.as_ref().unwrap().causes;
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field.as_deref(), Some("sendInitialEvents"));
        assert_eq!(
            causes[0].message.as_deref(),
            Some(
                "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
            )
        );
        let err = validate(&mut asked, true, FeatureState::Absent).unwrap_err();
        let causes = &err.status().details.as_ref().unwrap().causes;
        assert_eq!(
            causes[0].message.as_deref(),
            Some("Forbidden: resourceVersionMatch is forbidden for watch")
        );
        let mut plain = opts(None, None, None, Some(true));
        validate(&mut plain, true, FeatureState::Absent).unwrap();
        assert_eq!(plain.send_initial_events, None);
        // A list's sendInitialEvents is unknown before the feature, not refused.
        validate(
            &mut opts(None, None, None, Some(true)),
            false,
            FeatureState::Absent,
        )
        .unwrap();
    }
}
