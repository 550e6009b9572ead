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
//! `Accept` negotiation follows the client's preference order (q-values, then position), over
//! the serializers upstream's discovery handlers have: JSON, YAML, Kubernetes' protobuf and,
//! with `CBORServingAndStorage` on, CBOR. `<type>;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`
//! (or `v=v2beta1`, which kubectl 1.26–1.29 ask for) gets the aggregated document on `/api` and
//! `/apis`, its `Content-Type` the media type with the kind after it; a media type without
//! parameters (or `application/*`, `*/*`, no `Accept`: JSON) gets the legacy document; anything
//! else is 406 NotAcceptable listing the serializers' media types, in JSON. The per-group and
//! per-version endpoints serve only the legacy form, as upstream does. The documents upstream
//! writes without `apiVersion` (`/api`, `/api/v1`, `/apis/extensions/<version>`) have none in
//! any format: an empty one in protobuf's envelope.
//!
//! The shared [`status_response`], [`not_found`] and [`content_hash`] helpers live here so the
//! descriptive modules answer errors and tag documents the same way.

use crate::server::state::builtin_names;
use std::collections::{BTreeMap, BTreeSet};

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
use crate::server::http::negotiate::{self, Format, parse_accept};
use crate::server::http::path::{has_proxy, is_pod_kind, is_service_account_kind};
use crate::server::http::routes::get_only;
use crate::server::http::{cbor, protobuf};
use crate::server::state::builtin::is_namespace_kind;
use crate::server::state::release::Feature;
use crate::server::state::{ServerState, State};
use crate::{GroupVersionKind, KubeVersion};
use crate::{Registry, ResourceInfo};

/// The group of aggregated discovery documents.
const DISCOVERY_GROUP: &str = "apidiscovery.k8s.io";
/// The aggregated discovery versions served, preferred first.
const AGGREGATED_VERSIONS: [&str; 2] = ["v2", "v2beta1"];
/// A JSON answer with `Content-Type: application/json`.
pub(crate) fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response(),
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

/// FNV-1a over a document: a stable content hash for cache-busting URLs and ETags.
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016X}")
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
    /// The groups with a served kind registered in code (see [`Served::is_compiled`]).
    compiled: BTreeSet<&'a str>,
}

impl<'a> Served<'a> {
    /// Collects the kinds of `registry` that `serves` says are served.
    pub(crate) fn new(registry: &'a Registry, serves: impl Fn(&ResourceInfo) -> bool) -> Self {
        let mut nested: BTreeMap<&str, BTreeMap<&str, Vec<&ResourceInfo>>> = BTreeMap::new();
        let mut compiled = BTreeSet::new();
        for kind in registry.kinds() {
            let info = &*kind.info;
            if serves(info) {
                if !kind.from_crd {
                    compiled.insert(info.gvk.group.as_ref());
                }
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
        Self { groups, compiled }
    }

    /// Whether `group` has a served kind registered in code. Upstream serves such a group as a
    /// go-restful web service rooted at `/apis/<group>`, which answers any path under it that
    /// it has no route for with a `Status`; a group only CRDs define is apiextensions'
    /// handler's, which hands what it does not serve down the chain to Go's plain-text 404.
    pub(crate) fn is_compiled(&self, group: &str) -> bool {
        self.compiled.contains(group)
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

/// A subresource a kind has beyond `status` and `scale`, as upstream's discovery lists it.
struct Extra {
    name: &'static str,
    /// The kind it takes and answers.
    kind: GroupVersionKind,
    verbs: &'static [&'static str],
}

/// The verbs of a `proxy` subresource: those of the methods it proxies
/// (`proxyMethods`), HEAD and OPTIONS having none.
const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];

/// The first release serving a pod's `ephemeralcontainers`.
const EPHEMERAL_CONTAINERS_SINCE: KubeVersion = KubeVersion::new(1, 23);
/// The first release whose pods take a `policy/v1` Eviction.
const POLICY_V1_EVICTION_SINCE: KubeVersion = KubeVersion::new(1, 22);

fn gvk(group: &'static str, version: &'static str, kind: &'static str) -> GroupVersionKind {
    GroupVersionKind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

/// The subresources `info` has in `release` beyond `status` and `scale`: a namespace's
/// `finalize` (only the namespace lifecycle writes it), a service account's `token` (a
/// `TokenRequest`), a pod's `binding`, `eviction`, (from 1.23) `ephemeralcontainers` and (while
/// InPlacePodVerticalScaling is on, by default from 1.33) `resize`.
fn extra_subresources(info: &ResourceInfo, state: &ServerState) -> Vec<Extra> {
    let release = state.kube_version;
    if is_namespace_kind(info) {
        return vec![Extra {
            name: "finalize",
            kind: info.gvk.clone(),
            verbs: &["update"],
        }];
    }
    if is_service_account_kind(info) {
        return vec![Extra {
            name: "token",
            kind: gvk("authentication.k8s.io", "v1", "TokenRequest"),
            verbs: &["create"],
        }];
    }
    if !is_pod_kind(info) {
        // A Service's and a Node's `proxy` (upstream's `ProxyREST` of each).
        return match has_proxy(info) {
            true => vec![Extra {
                name: "proxy",
                kind: GroupVersionKind {
                    group: "".into(),
                    version: "v1".into(),
                    kind: format!("{}ProxyOptions", info.gvk.kind).into(),
                },
                verbs: PROXY_VERBS,
            }],
            false => Vec::new(),
        };
    }
    let policy = if release >= POLICY_V1_EVICTION_SINCE {
        "v1"
    } else {
        "v1beta1"
    };
    let mut extras = vec![
        Extra {
            name: "binding",
            kind: gvk("", "v1", "Binding"),
            verbs: &["create"],
        },
        Extra {
            name: "eviction",
            kind: gvk("policy", policy, "Eviction"),
            verbs: &["create"],
        },
    ];
    // What reaches the pod's kubelet or the pod itself (`pkg/registry/core/pod/rest`): the
    // log, answered as the Pod kind, and the connect subresources with their options kinds.
    extras.push(Extra {
        name: "log",
        kind: info.gvk.clone(),
        verbs: &["get"],
    });
    for (name, kind) in [
        ("attach", "PodAttachOptions"),
        ("exec", "PodExecOptions"),
        ("portforward", "PodPortForwardOptions"),
    ] {
        extras.push(Extra {
            name,
            kind: gvk("", "v1", kind),
            verbs: &["create", "get"],
        });
    }
    extras.push(Extra {
        name: "proxy",
        kind: gvk("", "v1", "PodProxyOptions"),
        verbs: PROXY_VERBS,
    });
    if release >= EPHEMERAL_CONTAINERS_SINCE {
        extras.push(Extra {
            name: "ephemeralcontainers",
            kind: info.gvk.clone(),
            verbs: &["get", "patch", "update"],
        });
    }
    if state.serves_pod_resize() {
        extras.push(Extra {
            name: "resize",
            kind: info.gvk.clone(),
            verbs: &["get", "patch", "update"],
        });
    }
    extras
}

/// The kind subresource `name` of `info` takes and answers, as discovery lists it: upstream's
/// `scope.Kind` of the subresource's storage (`GetResourceKind` in `endpoints/installer.go`),
/// which admission names as the request's kind. `status` and the other views of the object
/// are its own kind, `scale` an `autoscaling/v1` Scale, the rest those
/// [`extra_subresources`] lists; `None` for a subresource `info` does not have.
pub(crate) fn subresource_kind(
    info: &ResourceInfo,
    state: &ServerState,
    name: &str,
) -> Option<GroupVersionKind> {
    match name {
        "status" => Some(info.gvk.clone()),
        "scale" => Some(gvk("autoscaling", "v1", "Scale")),
        _ => extra_subresources(info, state)
            .into_iter()
            .find(|extra| extra.name == name)
            .map(|extra| extra.kind),
    }
}

/// The resource entries of one group/version, sorted by name as upstream lists them.
fn resource_list(kinds: &[&ResourceInfo], state: &ServerState) -> Vec<APIResource> {
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
            for extra in extra_subresources(info, state) {
                // A subresource names its kind's group and version where they differ from
                // the resource's.
                let foreign =
                    extra.kind.group != info.gvk.group || extra.kind.version != info.gvk.version;
                entries.push(APIResource {
                    name: format!("{}/{}", info.plural, extra.name),
                    namespaced: info.is_namespaced(),
                    group: foreign.then(|| extra.kind.group.to_string()),
                    version: foreign.then(|| extra.kind.version.to_string()),
                    kind: extra.kind.kind.to_string(),
                    verbs: extra.verbs.iter().map(|v| (*v).to_owned()).collect(),
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

fn aggregated_group(served: &Served<'_>, group: &str, state: &ServerState) -> APIGroupDiscovery {
    let versions = served
        .versions(group)
        .iter()
        .map(|(version, kinds)| {
            let mut resources: Vec<APIResourceDiscovery> = kinds
                .iter()
                .map(|info| {
                    let mut entry = APIResourceDiscovery::for_kind(info);
                    for extra in extra_subresources(info, state) {
                        entry.subresources.push(APISubresourceDiscovery {
                            subresource: extra.name.to_owned(),
                            response_kind: Some(extra.kind),
                            accepted_types: Vec::new(),
                            verbs: extra.verbs.iter().map(|v| (*v).to_owned()).collect(),
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

/// Which document the client asked `/api` or `/apis` for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiscoveryFormat {
    /// The per-group documents (`APIVersions`, `APIGroupList`).
    Legacy,
    /// `APIGroupDiscoveryList` of the given `apidiscovery.k8s.io` version.
    Aggregated(&'static str),
}

/// The document and the serialization a discovery request is answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) document: DiscoveryFormat,
    pub(crate) format: Format,
}

/// What a discovery endpoint may answer with: the aggregated documents (on `/api` and `/apis`
/// while `AggregatedDiscoveryEndpoint` is on) and CBOR (`CBORServingAndStorage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offer {
    pub(crate) aggregated: bool,
    pub(crate) cbor: bool,
}

/// The answer to `accept` as upstream negotiates a discovery document: the clauses by
/// quality, each matched against the serializers of the handler's codec factory (JSON, YAML,
/// protobuf, and CBOR with its gate; k8s.io/apiserver `NegotiateMediaTypeOptions`). A clause
/// asking for a conversion (`as=`) is taken only for the aggregated document
/// (`aggregated/negotiation.go`'s `DiscoveryEndpointRestrictions`, behind the
/// `WrappedHandler` of `aggregated/wrapper.go`); every other endpoint has
/// `DefaultEndpointRestrictions`, which refuse any. No `Accept` is JSON; `None` is 406.
pub(crate) fn negotiate(accept: Option<&str>, offer: Offer) -> Option<Choice> {
    let accept = accept.map(str::trim).filter(|a| !a.is_empty());
    let Some(accept) = accept else {
        return Some(Choice {
            document: DiscoveryFormat::Legacy,
            format: Format::Json,
        });
    };
    for range in parse_accept(accept) {
        let format = match range.essence.as_str() {
            "application/json" | "application/*" | "*/*" => Format::Json,
            "application/yaml" => Format::Yaml,
            protobuf::MEDIA_TYPE => Format::Protobuf,
            cbor::MEDIA_TYPE if offer.cbor => Format::Cbor,
            _ => continue,
        };
        let param = |name: &str| {
            range
                .params
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| *value)
        };
        let document = match param("as") {
            None => DiscoveryFormat::Legacy,
            Some("APIGroupDiscoveryList")
                if offer.aggregated && param("g") == Some(DISCOVERY_GROUP) =>
            {
                let version = param("v").unwrap_or_default();
                match AGGREGATED_VERSIONS.iter().find(|v| **v == version) {
                    Some(v) => DiscoveryFormat::Aggregated(v),
                    None => continue,
                }
            }
            Some(_) => continue,
        };
        return Some(Choice { document, format });
    }
    None
}

/// The media types a discovery 406 lists: the codec factory's serializers
/// (`MediaTypesForSerializer`), CBOR appended when its gate is on.
fn accepted(cbor: bool) -> Vec<&'static str> {
    let mut out = vec!["application/json", "application/yaml", protobuf::MEDIA_TYPE];
    if cbor {
        out.push(cbor::MEDIA_TYPE);
    }
    out
}

/// A discovery document in the chosen format. The aggregated one's `Content-Type` names its
/// kind after the media type (`generateMediaTypeWithGVK`, as the aggregated handler asks
/// `WriteObjectNegotiated` to); every answer varies with `Accept`.
fn document_response<T: Serialize>(body: &T, format: Format, aggregated: Option<&str>) -> Response {
    let mut response = match format {
        Format::Json => json_response(StatusCode::OK, body),
        _ => match serde_json::to_value(body) {
            Ok(value) => negotiate::encode(format, StatusCode::OK, &value),
            Err(error) => return status_response(&Status::internal_error(&error.to_string())),
        },
    };
    if let Some(version) = aggregated {
        let media_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json");
        let content_type =
            format!("{media_type};g={DISCOVERY_GROUP};v={version};as=APIGroupDiscoveryList");
        if let Ok(value) = HeaderValue::from_str(&content_type) {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
    }
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    response
}

/// The aggregated document, tagged as upstream's aggregated handler tags it
/// (`ServeHTTPWithETag` in k8s.io/apiserver `endpoints/discovery/aggregated/etag.go`): an
/// `ETag` that is a hash of the document's JSON without its type (upstream's is the SHA-512 of
/// it, kapi's the content hash its OpenAPI documents are tagged with), `Vary: Accept`,
/// `Cache-Control: public`, and 304 with no body when `If-None-Match` names it. The tag is the
/// document's whatever the format and version asked.
fn aggregated_response(
    version: &str,
    items: Vec<APIGroupDiscovery>,
    format: Format,
    headers: &HeaderMap,
) -> Response {
    let mut list = APIGroupDiscoveryList::new(items);
    let untyped = APIGroupDiscoveryList {
        kind: None,
        api_version: None,
        ..list.clone()
    };
    let etag = serde_json::to_vec(&untyped)
        .map(|bytes| format!("\"{}\"", content_hash(&bytes)))
        .ok()
        .and_then(|etag| HeaderValue::from_str(&etag).ok());
    let mut response = match &etag {
        Some(etag) if headers.get(header::IF_NONE_MATCH) == Some(etag) => {
            StatusCode::NOT_MODIFIED.into_response()
        }
        _ => {
            list.api_version = Some(format!("{DISCOVERY_GROUP}/{version}"));
            document_response(&list, format, Some(version))
        }
    };
    if let Some(etag) = etag {
        let headers = response.headers_mut();
        headers.insert(header::ETAG, etag);
        headers.insert(header::VARY, HeaderValue::from_static("Accept"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    }
    response
}

/// What `/api` and `/apis` may answer with in the release served: the aggregated documents
/// from `AggregatedDiscoveryEndpoint` on (before it, their media types are not known and the
/// legacy documents answer), CBOR with its gate.
fn root_offer(state: &ServerState) -> Offer {
    Offer {
        aggregated: state.feature(Feature::AggregatedDiscoveryEndpoint).is_on(),
        cbor: state.cbor(),
    }
}

/// What the per-group and per-version documents may answer with: no conversion.
fn plain_offer(state: &ServerState) -> Offer {
    Offer {
        aggregated: false,
        cbor: state.cbor(),
    }
}

/// The legacy document of a per-group or per-version endpoint, negotiated: 406 as upstream's
/// `WriteObjectNegotiated` writes it, raw JSON, listing the serializers' media types.
fn plain_document<T: Serialize>(state: &ServerState, headers: &HeaderMap, body: &T) -> Response {
    let offer = plain_offer(state);
    match negotiate(accept_header(headers).as_deref(), offer) {
        Some(choice) => document_response(body, choice.format, None),
        None => status_response(&Status::not_acceptable(&accepted(offer.cbor))),
    }
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
    let offer = root_offer(&state);
    let Some(choice) = negotiate(accept_header(&headers).as_deref(), offer) else {
        return status_response(&Status::not_acceptable(&accepted(offer.cbor)));
    };
    match choice.document {
        DiscoveryFormat::Aggregated(version) => {
            let items = if served.versions("").is_empty() {
                Vec::new()
            } else {
                vec![aggregated_group(&served, "", &state)]
            };
            aggregated_response(version, items, choice.format, &headers)
        }
        DiscoveryFormat::Legacy => {
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
            document_response(&APIVersions::new(versions, addresses), choice.format, None)
        }
    }
}

/// `GET /api/<version>`.
async fn api_version(
    Extract(state): Extract<State>,
    Path(version): Path<String>,
    headers: HeaderMap,
) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    match served.kinds("", &version) {
        Some(kinds) => plain_document(
            &state,
            &headers,
            &APIResourceList::legacy(version.clone(), resource_list(kinds, &state)),
        ),
        None => not_found(),
    }
}

/// `GET /apis`.
async fn apis_root(Extract(state): Extract<State>, headers: HeaderMap) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    let offer = root_offer(&state);
    let Some(choice) = negotiate(accept_header(&headers).as_deref(), offer) else {
        return status_response(&Status::not_acceptable(&accepted(offer.cbor)));
    };
    match choice.document {
        DiscoveryFormat::Aggregated(version) => {
            let items = served
                .named_groups()
                .map(|group| aggregated_group(&served, group, &state))
                .collect();
            aggregated_response(version, items, choice.format, &headers)
        }
        DiscoveryFormat::Legacy => {
            let groups = served
                .named_groups()
                .map(|group| api_group(&served, group))
                .collect();
            document_response(&crate::meta::APIGroupList::new(groups), choice.format, None)
        }
    }
}

/// `GET /apis/<group>`.
async fn apis_group(
    Extract(state): Extract<State>,
    Path(group): Path<String>,
    headers: HeaderMap,
) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    if group.is_empty() || served.versions(&group).is_empty() {
        // Neither the aggregator nor apiextensions has a handler for it, and no go-restful
        // web service is rooted there.
        return page_not_found();
    }
    plain_document(
        &state,
        &headers,
        &api_group(&served, &group).into_response(),
    )
}

/// `GET /apis/<group>/<version>`.
async fn apis_group_version(
    Extract(state): Extract<State>,
    Path((group, version)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let registry = state.registry();
    let served = Served::new(&registry, |info| state.serves(info));
    if group.is_empty() {
        return not_found();
    }
    match served.kinds(&group, &version) {
        Some(kinds) => {
            let group_version = crate::resource::api_version(&group, &version);
            let resources = resource_list(kinds, &state);
            // The extensions group's versions are written without `apiVersion`, as the core
            // group's (`keepUnversioned` in k8s.io/apiserver `endpoints/discovery/util.go`);
            // `/apis/extensions` itself is the aggregator's, which keeps it.
            let list = if group == "extensions" {
                APIResourceList::legacy(group_version, resources)
            } else {
                APIResourceList::new(group_version, resources)
            };
            plain_document(&state, &headers, &list)
        }
        None if served.is_compiled(&group) => not_found(),
        None => page_not_found(),
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

    const ALL: Offer = Offer {
        aggregated: true,
        cbor: false,
    };

    fn choice(document: DiscoveryFormat, format: Format) -> Option<Choice> {
        Some(Choice { document, format })
    }

    #[test]
    fn negotiation_follows_client_preference() {
        use DiscoveryFormat::{Aggregated, Legacy};
        let v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        let v2_proto = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let cases: &[(Option<&str>, Option<Choice>)] = &[
            (None, choice(Legacy, Format::Json)),
            (Some(""), choice(Legacy, Format::Json)),
            (Some("application/json"), choice(Legacy, Format::Json)),
            (Some("*/*"), choice(Legacy, Format::Json)),
            (Some("application/yaml"), choice(Legacy, Format::Yaml)),
            (
                Some("application/vnd.kubernetes.protobuf"),
                choice(Legacy, Format::Protobuf),
            ),
            (Some(v2), choice(Aggregated("v2"), Format::Json)),
            (Some(v2_proto), choice(Aggregated("v2"), Format::Protobuf)),
            (
                Some(&format!("{v2},{v2beta1},application/json")),
                choice(Aggregated("v2"), Format::Json),
            ),
            (
                Some(&format!("{v2beta1},application/json")),
                choice(Aggregated("v2beta1"), Format::Json),
            ),
            (
                Some(&format!("application/json;q=0.9,{v2}")),
                choice(Aggregated("v2"), Format::Json),
            ),
            (
                Some(&format!("application/json,{v2}")),
                choice(Legacy, Format::Json),
            ),
            (
                Some("application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList"),
                None,
            ),
            (
                Some(
                    "application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList, application/json",
                ),
                choice(Legacy, Format::Json),
            ),
            (Some("application/json;as=Table;g=meta.k8s.io;v=v1"), None),
            (Some("application/cbor"), None),
            (Some("text/html"), None),
            (Some("application/json;q=0"), None),
        ];
        for (accept, expected) in cases {
            assert_eq!(negotiate(*accept, ALL), *expected, "Accept: {accept:?}");
        }
        // CBOR with its gate; no aggregated document where it is not offered.
        let cbor = Offer {
            aggregated: false,
            cbor: true,
        };
        assert_eq!(
            negotiate(Some("application/cbor"), cbor),
            choice(Legacy, Format::Cbor)
        );
        assert_eq!(negotiate(Some(v2), cbor), None);
        assert_eq!(
            negotiate(Some(&format!("{v2},application/cbor")), cbor),
            choice(Legacy, Format::Cbor)
        );
    }
}
