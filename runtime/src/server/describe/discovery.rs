//! Discovery: `/api`, `/api/<version>`, `/apis`, `/apis/<group>`, `/apis/<group>/<version>`, and
//! the aggregated document on `/api` and `/apis` chosen by `Accept`.
//!
//! Only kinds the server serves appear: in the configured release (see
//! [`deprecation::is_served`]) and enabled there (the release's defaults and
//! `--runtime-config`); a group/version whose kinds are all removed or off disappears with them. Versions are listed in
//! upstream's priority order (GA, then beta, then alpha; newer first) and the first is the
//! preferred version. Resources are sorted by name, subresources after their parent, as
//! kube-apiserver lists them. Named groups are listed alphabetically.
//!
//! `Accept` negotiation follows the client's preference order (q-values, then position):
//! `application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` (or `v=v2beta1`, which
//! kubectl 1.26–1.29 ask for) gets the aggregated document with that exact media type as its
//! `Content-Type`; `application/json`, `application/*`, `*/*` or no `Accept` get the legacy
//! document; anything else is 406 NotAcceptable. The per-group endpoints serve only the legacy
//! form, as upstream does.
//!
//! The shared [`status_response`] and [`not_found`] helpers live here so the descriptive
//! modules answer errors the same way.

use crate::server::state::builtin_names;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use axum::Router;
use axum::extract::{Path, State as Extract};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde::Serialize;

use crate::meta::{
    APIGroup, APIGroupDiscovery, APIGroupDiscoveryList, APIResource, APIResourceDiscovery,
    APIResourceList, APISubresourceDiscovery, APIVersionDiscovery, APIVersions, DiscoveryFreshness,
    GroupVersionForDiscovery, ServerAddressByClientCIDR, Status, StatusDetails, StatusReason,
};
use crate::server::describe::deprecation::compare_versions;
use crate::server::http::routes::get_only;
use crate::server::state::builtin::is_namespace_kind;
use crate::server::state::release::Feature;
use crate::server::state::{ServerState, State};
use crate::{Registry, ResourceInfo};

/// The group of aggregated discovery documents.
const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";
/// The aggregated discovery versions served, preferred first.
const AGGREGATED_VERSIONS: [&str; 2] = ["v2", "v2beta1"];
/// What a 406 answer names as acceptable.
const ACCEPTED: [&str; 3] = [
    "application/json",
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
];

/// A JSON answer with `Content-Type: application/json`.
pub(crate) fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response {
    json_with_type(status, body, HeaderValue::from_static("application/json"))
}

fn json_with_type<T: Serialize>(
    status: StatusCode,
    body: &T,
    content_type: HeaderValue,
) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, content_type)], bytes).into_response(),
        Err(error) => status_response(&Status::internal_error(&error.to_string())),
    }
}

/// A `Status` as the answer, with its code as the HTTP status.
pub(crate) fn status_response(status: &Status) -> Response {
    let code = status
        .code
        .and_then(|code| u16::try_from(code).ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match serde_json::to_vec(status) {
        Ok(bytes) => (
            code,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response(),
        Err(_) => code.into_response(),
    }
}

/// What kube-apiserver answers for a path outside `/api` and `/apis` that no handler serves:
/// the last delegate's mux ends in Go's `http.NotFound` (k8s.io/apiserver
/// `pkg/server/mux/pathrecorder.go`, whose default not-found handler is
/// `http.NotFoundHandler()`; `pkg/util/notfoundhandler` from 1.24 on, once the server is
/// ready), which `http.Error` writes as plain text.
pub(crate) fn page_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        "404 page not found\n",
    )
        .into_response()
}

/// kube-apiserver's answer for a path nothing serves.
pub(crate) fn not_found() -> Response {
    status_response(&Status::failure(
        StatusReason::NotFound,
        "the server could not find the requested resource",
        Some(StatusDetails::default()),
    ))
}

/// The kinds served at `at`, by group then version (versions in priority order, preferred
/// first).
pub(crate) struct Served<'a> {
    groups: BTreeMap<&'a str, Vec<(&'a str, Vec<&'a ResourceInfo>)>>,
}

impl<'a> Served<'a> {
    /// Collects the kinds of `registry` that `serves` says are served.
    pub(crate) fn new(registry: &'a Registry, serves: impl Fn(&ResourceInfo) -> bool) -> Self {
        let mut nested: BTreeMap<&str, BTreeMap<&str, Vec<&ResourceInfo>>> = BTreeMap::new();
        for kind in registry.kinds() {
            let info = &*kind.info;
            if serves(info) {
                nested
                    .entry(info.gvk.group.as_ref())
                    .or_default()
                    .entry(info.gvk.version.as_ref())
                    .or_default()
                    .push(info);
            }
        }
        let groups = nested
            .into_iter()
            .map(|(group, versions)| {
                let mut versions: Vec<_> = versions.into_iter().collect();
                versions.sort_by(|a, b| compare_versions(b.0, a.0));
                (group, versions)
            })
            .collect();
        Self { groups }
    }

    /// The versions of `group` with their kinds, preferred first.
    pub(crate) fn versions(&self, group: &str) -> &[(&'a str, Vec<&'a ResourceInfo>)] {
        self.groups
            .get(group)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The kinds of one group/version, if served.
    pub(crate) fn kinds(&self, group: &str, version: &str) -> Option<&[&'a ResourceInfo]> {
        self.versions(group)
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, kinds)| kinds.as_slice())
    }

    /// Every served group/version with its kinds: the core group first, then named groups
    /// alphabetically, versions preferred first.
    pub(crate) fn group_versions(
        &self,
    ) -> impl Iterator<Item = (&'a str, &'a str, &[&'a ResourceInfo])> + '_ {
        self.groups.iter().flat_map(|(group, versions)| {
            versions
                .iter()
                .map(move |(version, kinds)| (*group, *version, kinds.as_slice()))
        })
    }

    fn named_groups(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.groups.keys().copied().filter(|g| !g.is_empty())
    }
}

/// The namespace subresource only the namespace lifecycle writes (`PUT .../finalize`).
const FINALIZE: &str = "finalize";

/// The resource entries of one group/version, sorted by name as upstream lists them.
fn resource_list(kinds: &[&ResourceInfo]) -> Vec<APIResource> {
    let mut resources: Vec<APIResource> = kinds
        .iter()
        .flat_map(|info| {
            let mut entries = APIResource::for_kind(info);
            for entry in entries.iter_mut().filter(|e| e.name == info.plural) {
                builtin_names::fill(
                    &info.gvk.group,
                    &info.plural,
                    &mut entry.short_names,
                    &mut entry.categories,
                );
            }
            if is_namespace_kind(info) {
                entries.push(APIResource {
                    name: format!("{}/{FINALIZE}", info.plural),
                    namespaced: false,
                    kind: info.gvk.kind.to_string(),
                    verbs: vec!["update".to_owned()],
                    ..APIResource::default()
                });
            }
            entries
        })
        .collect();
    resources.sort_by(|a, b| a.name.cmp(&b.name));
    resources
}

fn api_group(served: &Served<'_>, group: &str) -> APIGroup {
    let versions = served
        .versions(group)
        .iter()
        .map(|(version, _)| GroupVersionForDiscovery::new(group, version))
        .collect();
    APIGroup::new(group, versions)
}

fn aggregated_group(served: &Served<'_>, group: &str) -> APIGroupDiscovery {
    let versions = served
        .versions(group)
        .iter()
        .map(|(version, kinds)| {
            let mut resources: Vec<APIResourceDiscovery> = kinds
                .iter()
                .map(|info| {
                    let mut entry = APIResourceDiscovery::for_kind(info);
                    if is_namespace_kind(info) {
                        entry.subresources.push(APISubresourceDiscovery {
                            subresource: FINALIZE.to_owned(),
                            response_kind: Some(info.gvk.clone()),
                            accepted_types: Vec::new(),
                            verbs: vec!["update".to_owned()],
                        });
                    }
                    builtin_names::fill(
                        &info.gvk.group,
                        &info.plural,
                        &mut entry.short_names,
                        &mut entry.categories,
                    );
                    entry
                        .subresources
                        .sort_by(|a, b| a.subresource.cmp(&b.subresource));
                    entry
                })
                .collect();
            resources.sort_by(|a, b| a.resource.cmp(&b.resource));
            APIVersionDiscovery {
                version: (*version).to_owned(),
                resources,
                freshness: Some(DiscoveryFreshness::Current),
            }
        })
        .collect();
    APIGroupDiscovery::new(group, versions)
}

/// What the client asked `/api` or `/apis` for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiscoveryFormat {
    /// The per-group documents (`APIVersions`, `APIGroupList`).
    Legacy,
    /// `APIGroupDiscoveryList` of the given `apidiscovery.k8s.io` version.
    Aggregated(&'static str),
}

/// One media range of an `Accept` header.
struct MediaRange<'a> {
    essence: String,
    params: Vec<(String, &'a str)>,
    quality: f32,
}

fn parse_accept(accept: &str) -> Vec<MediaRange<'_>> {
    let mut ranges: Vec<MediaRange<'_>> = accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';');
            let essence = parts.next()?.trim().to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let mut quality = 1.0;
            let mut params = Vec::new();
            for param in parts {
                let Some((key, value)) = param.split_once('=') else {
                    continue;
                };
                let key = key.trim().to_ascii_lowercase();
                let value = value.trim().trim_matches('"');
                if key == "q" {
                    quality = value.parse::<f32>().unwrap_or(0.0);
                } else {
                    params.push((key, value));
                }
            }
            Some(MediaRange {
                essence,
                params,
                quality,
            })
        })
        .filter(|range| range.quality > 0.0)
        .collect();
    // Stable, so ranges of equal quality keep the client's order.
    ranges.sort_by(|a, b| b.quality.partial_cmp(&a.quality).unwrap_or(Ordering::Equal));
    ranges
}

/// The format to answer `/api` or `/apis` in, or `None` when nothing acceptable is offered.
pub(crate) fn negotiate(accept: Option<&str>) -> Option<DiscoveryFormat> {
    let accept = accept.map(str::trim).filter(|a| !a.is_empty());
    let Some(accept) = accept else {
        return Some(DiscoveryFormat::Legacy);
    };
    for range in parse_accept(accept) {
        let param = |name: &str| {
            range
                .params
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| *value)
        };
        match range.essence.as_str() {
            "application/json" => match param("as") {
                None => return Some(DiscoveryFormat::Legacy),
                Some("APIGroupDiscoveryList") if param("g") == Some(DISCOVERY_GROUP) => {
                    let version = param("v").unwrap_or_default();
                    if let Some(v) = AGGREGATED_VERSIONS.iter().find(|v| **v == version) {
                        return Some(DiscoveryFormat::Aggregated(v));
                    }
                }
                Some(_) => {}
            },
            "application/*" | "*/*" => return Some(DiscoveryFormat::Legacy),
            _ => {}
        }
    }
    None
}

fn aggregated_response(version: &str, items: Vec<APIGroupDiscovery>) -> Response {
    let mut list = APIGroupDiscoveryList::new(items);
    list.api_version = Some(format!("{DISCOVERY_GROUP}/{version}"));
    let content_type =
        format!("application/json;g={DISCOVERY_GROUP};v={version};as=APIGroupDiscoveryList");
    match HeaderValue::from_str(&content_type) {
        Ok(value) => {
            let mut response = json_with_type(StatusCode::OK, &list, value);
            response
                .headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
            response
        }
        Err(error) => status_response(&Status::internal_error(&error.to_string())),
    }
}

fn legacy_response<T: Serialize>(body: &T) -> Response {
    let mut response = json_response(StatusCode::OK, body);
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

/// The discovery format `headers` ask for, as the release serves them: before aggregated
/// discovery (`AggregatedDiscoveryEndpoint`), its media types are not known and the legacy
/// documents answer.
fn format(state: &ServerState, headers: &HeaderMap) -> Option<DiscoveryFormat> {
    let accept = accept_header(headers);
    if state.feature(Feature::AggregatedDiscoveryEndpoint).is_on() {
        return negotiate(accept.as_deref());
    }
    let plain = accept.map(|accept| {
        accept
            .split(',')
            .filter(|range| !range.contains(DISCOVERY_GROUP))
            .collect::<Vec<_>>()
            .join(",")
    });
    negotiate(plain.as_deref().filter(|plain| !plain.trim().is_empty()))
}

fn accept_header(headers: &HeaderMap) -> Option<String> {
    let values: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// `GET /api`.
async fn api_root(Extract(state): Extract<State>, headers: HeaderMap) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    match format(&state, &headers) {
        Some(DiscoveryFormat::Aggregated(version)) => {
            let items = if served.versions("").is_empty() {
                Vec::new()
            } else {
                vec![aggregated_group(&served, "")]
            };
            aggregated_response(version, items)
        }
        Some(DiscoveryFormat::Legacy) => {
            let versions = served
                .versions("")
                .iter()
                .map(|(version, _)| (*version).to_owned())
                .collect();
            // Upstream names the address clients should use; the Host they used is the best
            // answer a server bound to one address has.
            let addresses = headers
                .get(header::HOST)
                .and_then(|host| host.to_str().ok())
                .map(|host| {
                    vec![ServerAddressByClientCIDR {
                        client_cidr: "0.0.0.0/0".to_owned(),
                        server_address: host.to_owned(),
                    }]
                })
                .unwrap_or_default();
            legacy_response(&APIVersions::new(versions, addresses))
        }
        None => status_response(&Status::not_acceptable(&ACCEPTED)),
    }
}

/// `GET /api/<version>`.
async fn api_version(Extract(state): Extract<State>, Path(version): Path<String>) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    match served.kinds("", &version) {
        Some(kinds) => legacy_response(&APIResourceList::legacy(
            version.clone(),
            resource_list(kinds),
        )),
        None => not_found(),
    }
}

/// `GET /apis`.
async fn apis_root(Extract(state): Extract<State>, headers: HeaderMap) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    match format(&state, &headers) {
        Some(DiscoveryFormat::Aggregated(version)) => {
            let items = served
                .named_groups()
                .map(|group| aggregated_group(&served, group))
                .collect();
            aggregated_response(version, items)
        }
        Some(DiscoveryFormat::Legacy) => {
            let groups = served
                .named_groups()
                .map(|group| api_group(&served, group))
                .collect();
            legacy_response(&crate::meta::APIGroupList::new(groups))
        }
        None => status_response(&Status::not_acceptable(&ACCEPTED)),
    }
}

/// `GET /apis/<group>`.
async fn apis_group(Extract(state): Extract<State>, Path(group): Path<String>) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    if group.is_empty() || served.versions(&group).is_empty() {
        return not_found();
    }
    legacy_response(&api_group(&served, &group).into_response())
}

/// `GET /apis/<group>/<version>`.
async fn apis_group_version(
    Extract(state): Extract<State>,
    Path((group, version)): Path<(String, String)>,
) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    if group.is_empty() {
        return not_found();
    }
    match served.kinds(&group, &version) {
        Some(kinds) => legacy_response(&APIResourceList::new(
            crate::resource::api_version(&group, &version),
            resource_list(kinds),
        )),
        None => not_found(),
    }
}

/// The discovery endpoints, each also with a trailing slash as upstream's go-restful routes
/// answer it (`/apis/apps/`, `/api/v1/`; upstream's discovery conformance test asks for
/// `/apis/<group>/`). The core must not route these exact paths itself (axum refuses
/// overlapping routes); resource paths have more segments and do not collide.
///
/// `/api`, `/api/<version>` and `/apis/<group>/<version>` are go-restful routes upstream, which
/// refuse every method but GET (`routes::get_only`); `/apis` and `/apis/<group>` are the
/// aggregator's handlers, which answer any method with the document.
pub(crate) fn routes() -> Router<State> {
    Router::new()
        .route("/api", get_only(get(api_root)))
        .route("/api/", get_only(get(api_root)))
        .route("/api/{version}", get_only(get(api_version)))
        .route("/api/{version}/", get_only(get(api_version)))
        .route("/apis", any(apis_root))
        .route("/apis/", any(apis_root))
        .route("/apis/{group}", any(apis_group))
        .route("/apis/{group}/", any(apis_group))
        .route("/apis/{group}/{version}", get_only(get(apis_group_version)))
        .route(
            "/apis/{group}/{version}/",
            get_only(get(apis_group_version)),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_client_preference() {
        let v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        let cases: &[(Option<&str>, Option<DiscoveryFormat>)] = &[
            (None, Some(DiscoveryFormat::Legacy)),
            (Some(""), Some(DiscoveryFormat::Legacy)),
            (Some("application/json"), Some(DiscoveryFormat::Legacy)),
            (Some("*/*"), Some(DiscoveryFormat::Legacy)),
            (Some(v2), Some(DiscoveryFormat::Aggregated("v2"))),
            (
                Some(&format!("{v2},{v2beta1},application/json")),
                Some(DiscoveryFormat::Aggregated("v2")),
            ),
            (
                Some(&format!("{v2beta1},application/json")),
                Some(DiscoveryFormat::Aggregated("v2beta1")),
            ),
            (
                Some(&format!("application/json;q=0.9,{v2}")),
                Some(DiscoveryFormat::Aggregated("v2")),
            ),
            (
                Some(&format!("application/json,{v2}")),
                Some(DiscoveryFormat::Legacy),
            ),
            (
                Some("application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList"),
                None,
            ),
            (
                Some(
                    "application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList, application/json",
                ),
                Some(DiscoveryFormat::Legacy),
            ),
            (Some("application/json;as=Table;g=meta.k8s.io;v=v1"), None),
            (Some("application/vnd.kubernetes.protobuf"), None),
            (Some("application/json;q=0"), None),
        ];
        for (accept, expected) in cases {
            assert_eq!(negotiate(*accept), *expected, "Accept: {accept:?}");
        }
    }
}
