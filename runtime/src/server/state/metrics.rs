//! `/metrics`: what the server has done, in the OpenMetrics text format Prometheus scrapes,
//! under kube-apiserver's metric names, labels and buckets.
//!
//! - `apiserver_request_total` (counter) and `apiserver_request_duration_seconds` (histogram):
//!   every resource request, labelled as upstream's `endpoints/metrics` labels them: `verb`
//!   (GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE; upstream reports a deletecollection
//!   as DELETE on a collection scope, and so does kapi), `dry_run`, `group`, `version`,
//!   `resource`, `subresource`, `scope` (`resource` for a named object or a create,
//!   `namespace`, `cluster`), `component` (`apiserver`) and, on the counter, `code`. A watch is
//!   recorded as upstream records it: when its stream ends, with its whole duration.
//! - `apiserver_longrunning_requests` (gauge): the watches open now.
//! - `apiserver_requested_deprecated_apis` (gauge): 1 for each deprecated group, version and
//!   resource requested since the start, with the release that removes it.
//! - `apiserver_storage_objects` (gauge): objects stored per resource (`pods`,
//!   `deployments.apps`), counted when scraped.
//! - `etcd_request_duration_seconds` (histogram, upstream's buckets): each read, count, write,
//!   compaction and watch opening, by `operation` (`get`, `list`, `listWithCount`, `create`,
//!   `update`, `delete`, `watch`, `compact`) and `type` (the resource, as
//!   `apiserver_storage_objects` names it), measured by [`Measured`] around whichever engine
//!   serves (the name is upstream's, whatever the engine). Revision probes are not measured.
//!
//! Non-resource paths (discovery, OpenAPI, probes, `/metrics` itself) are not counted, as
//! upstream counts only its resource handlers; `/metrics` is in no discovery document.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry as Series;

use crate::server::http::connections::Holding;
use crate::server::http::path::{Subresource, Target, query_values};
use crate::storage::{
    BoxFuture, Bytes as StoreBytes, CompactError, CreateError, DeleteError, Deleted, Guard,
    KeyValue, ListResult, ReadError, Storage, UpdateError, WatchError, WatchStream,
};
use crate::{KubeVersion, ResourceInfo};

/// Upstream's buckets of `apiserver_request_duration_seconds` and
/// `etcd_request_duration_seconds`, in seconds.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// The `component` label of every request series.
const COMPONENT: &str = "apiserver";

/// What a request is, as its series are labelled.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: &'static str,
    dry_run: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    #[prometheus(flatten)]
    request: RequestLabels,
    code: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LongRunningLabels {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    component: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeprecatedLabels {
    group: String,
    version: String,
    resource: String,
    subresource: String,
    removed_release: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabels {
    resource: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StorageLabels {
    operation: &'static str,
    r#type: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// Every series the server keeps, and the registry that writes them out.
pub(crate) struct Metrics {
    registry: Series,
    requests: Family<CodeLabels, Counter>,
    durations: Histograms<RequestLabels>,
    longrunning: Family<LongRunningLabels, Gauge>,
    deprecated: Family<DeprecatedLabels, Gauge>,
    objects: Family<ResourceLabels, Gauge>,
    storage: Histograms<StorageLabels>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Series::default();
        let requests = Family::<CodeLabels, Counter>::default();
        let durations = Histograms::<RequestLabels>::new_with_constructor(duration_histogram);
        let longrunning = Family::<LongRunningLabels, Gauge>::default();
        let deprecated = Family::<DeprecatedLabels, Gauge>::default();
        let objects = Family::<ResourceLabels, Gauge>::default();
        let storage = Histograms::<StorageLabels>::new_with_constructor(duration_histogram);
        // Help texts are upstream's, without the final period the encoder adds.
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, \
             version, resource, scope, component, and HTTP response code",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, \
             version, resource, subresource, scope and component",
            durations.clone(),
        );
        registry.register(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, \
             version, resource, scope and component. Not all requests are tracked this way",
            longrunning.clone(),
        );
        registry.register(
            "apiserver_requested_deprecated_apis",
            "Gauge of deprecated APIs that have been requested, broken out by API group, \
             version, resource, subresource, and removed_release",
            deprecated.clone(),
        );
        registry.register(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind",
            objects.clone(),
        );
        registry.register(
            "etcd_request_duration_seconds",
            "Etcd request latency in seconds for each operation and object type",
            storage.clone(),
        );
        Self {
            registry,
            requests,
            durations,
            longrunning,
            deprecated,
            objects,
            storage,
        }
    }
}

/// One resource request being measured, from its resolution to the end of its response.
#[derive(Debug)]
pub(crate) struct Measure {
    labels: RequestLabels,
    started: Instant,
}

/// Starts measuring a request to `target`, once its URL is resolved. A request to a
/// group/version deprecated at release `at` also sets `apiserver_requested_deprecated_apis`.
pub(crate) fn begin(
    metrics: &Metrics,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    target: &Target,
    at: KubeVersion,
) -> Measure {
    let info = &*target.kind.info;
    let subresource = target.sub.map_or("", Subresource::name);
    let mut labels = labels(
        method,
        uri,
        headers,
        info,
        target.namespace.is_some(),
        target.name.is_some(),
        subresource,
        target.legacy_watch,
    );
    // Upstream installs the connect subresources' routes as CONNECT, and a pod's `log`
    // reports its GET as CONNECT (`LogREST.OverrideMetricsVerb`).
    if target.sub.is_some_and(Subresource::is_connect) {
        labels.verb = "CONNECT";
    }
    if info.lifecycle.is_deprecated_at(at) {
        let removed_release = info
            .lifecycle
            .removed
            .filter(|removed| removed.major != 0 || removed.minor != 0)
            .map(|removed| format!("{}.{}", removed.major, removed.minor))
            .unwrap_or_default();
        metrics
            .deprecated
            .get_or_create(&DeprecatedLabels {
                group: labels.group.clone(),
                version: labels.version.clone(),
                resource: labels.resource.clone(),
                subresource: labels.subresource.clone(),
                removed_release,
            })
            .set(1);
    }
    Measure {
        labels,
        started: Instant::now(),
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "the parts of one request, each a label"
)]
fn labels(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    info: &ResourceInfo,
    namespaced: bool,
    named: bool,
    subresource: &str,
    legacy_watch: bool,
) -> RequestLabels {
    // Upstream's CleanScope: a named object or a create is `resource`.
    let scope = if named || *method == Method::POST {
        "resource"
    } else if namespaced {
        "namespace"
    } else {
        "cluster"
    };
    RequestLabels {
        verb: verb(method, uri, headers, scope, legacy_watch),
        dry_run: dry_run(uri),
        group: info.gvk.group.to_string(),
        version: info.gvk.version.to_string(),
        resource: info.plural.to_string(),
        subresource: subresource.to_owned(),
        scope,
        component: COMPONENT,
    }
}

/// Upstream's reported verb: GET on a collection is LIST, a GET with `watch` (or on a legacy
/// `/watch/` path) is WATCH, a PATCH with the apply content type is APPLY, other methods by
/// their name, and anything unknown `other`.
fn verb(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    scope: &str,
    legacy_watch: bool,
) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => {
            if legacy_watch || asks_to_watch(uri) {
                "WATCH"
            } else if scope == "resource" {
                "GET"
            } else {
                "LIST"
            }
        }
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => {
            let apply = headers
                .get(header::CONTENT_TYPE)
                .is_some_and(|value| value.as_bytes() == b"application/apply-patch+yaml");
            if apply { "APPLY" } else { "PATCH" }
        }
        Method::DELETE => "DELETE",
        _ => "other",
    }
}

/// Whether the query's first `watch` value is neither `0` nor `false` (upstream's reading).
fn asks_to_watch(uri: &Uri) -> bool {
    query_values(uri, "watch")
        .next()
        .is_some_and(|value| !value.eq_ignore_ascii_case("false") && value != "0")
}

/// Upstream's `dry_run` label: empty without the option, else its values sorted, deduplicated
/// and joined by commas (`All`).
fn dry_run(uri: &Uri) -> String {
    let mut values: Vec<&str> = query_values(uri, "dryRun").collect();
    if values.is_empty() {
        return String::new();
    }
    values.sort_unstable();
    values.dedup();
    if values.iter().any(|value| *value != "All") {
        return "invalid".to_owned();
    }
    values.join(",")
}

impl Measure {
    /// Records the request once `response` is complete: now for a plain answer; when the
    /// stream ends for a watch, which meanwhile counts in `apiserver_longrunning_requests`.
    pub(crate) fn finish(self, metrics: &Arc<Metrics>, response: Response) -> Response {
        if self.labels.verb != "WATCH" || !response.status().is_success() {
            self.record(metrics, response.status());
            return response;
        }
        let gauge = LongRunningLabels {
            verb: self.labels.verb,
            group: self.labels.group.clone(),
            version: self.labels.version.clone(),
            resource: self.labels.resource.clone(),
            subresource: self.labels.subresource.clone(),
            scope: self.labels.scope,
            component: COMPONENT,
        };
        metrics.longrunning.get_or_create(&gauge).inc();
        let open = OpenWatch {
            measure: Some(self),
            status: response.status(),
            gauge,
            metrics: Arc::clone(metrics),
        };
        response.map(|body| Body::new(Holding::new(body, open)))
    }

    fn record(self, metrics: &Metrics, status: StatusCode) {
        metrics
            .durations
            .get_or_create(&self.labels)
            .observe(self.started.elapsed().as_secs_f64());
        metrics
            .requests
            .get_or_create(&CodeLabels {
                request: self.labels,
                code: status.as_u16(),
            })
            .inc();
    }
}

/// A watch being served: it leaves the gauge and is recorded when its body is dropped, which
/// hyper does once the stream has ended or the client has gone.
struct OpenWatch {
    measure: Option<Measure>,
    status: StatusCode,
    gauge: LongRunningLabels,
    metrics: Arc<Metrics>,
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.metrics.longrunning.get_or_create(&self.gauge).dec();
        if let Some(measure) = self.measure.take() {
            measure.record(&self.metrics, self.status);
        }
    }
}

/// The `type` label of a storage key: its resource as `<plural>` for the core group and
/// `<plural>.<group>` otherwise (keys are `/registry/<group or core>/<plural>/...`).
fn key_type(key: &str) -> String {
    let mut parts = key.trim_start_matches('/').split('/').skip(1);
    match (parts.next(), parts.next()) {
        (Some("core"), Some(plural)) => plural.to_owned(),
        (Some(group), Some(plural)) => format!("{plural}.{group}"),
        _ => String::new(),
    }
}

/// The `resource` label of a kind's objects.
fn resource_label(info: &ResourceInfo) -> String {
    if info.gvk.group.is_empty() {
        info.plural.to_string()
    } else {
        format!("{}.{}", info.plural, info.gvk.group)
    }
}

/// Writes the exposition: the object counts of `registry`'s kinds are read from `storage` now.
pub(crate) async fn scrape(
    metrics: &Metrics,
    registry: &crate::Registry,
    storage: &dyn Storage,
) -> Response {
    metrics.objects.clear();
    let mut counted = std::collections::BTreeSet::new();
    for kind in registry.kinds() {
        let info = &*kind.info;
        let label = resource_label(info);
        if !counted.insert(label.clone()) {
            continue;
        }
        let prefix = crate::server::state::keys::resource_prefix(info);
        // A store that cannot count now leaves the series out rather than failing the scrape.
        if let Ok(count) = storage.count(&prefix).await {
            let count = i64::try_from(count).unwrap_or(i64::MAX);
            metrics
                .objects
                .get_or_create(&ResourceLabels { resource: label })
                .set(count);
        }
    }
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, &metrics.registry).is_err() {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}

/// A storage engine whose every call is timed into `etcd_request_duration_seconds`.
pub(crate) struct Measured {
    engine: Arc<dyn Storage>,
    metrics: Arc<Metrics>,
}

impl fmt::Debug for Measured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.engine.fmt(f)
    }
}

impl Measured {
    pub(crate) fn new(engine: Arc<dyn Storage>, metrics: Arc<Metrics>) -> Self {
        Self { engine, metrics }
    }

    fn observe(&self, operation: &'static str, key: &str, started: Instant) {
        self.metrics
            .storage
            .get_or_create(&StorageLabels {
                operation,
                r#type: key_type(key),
            })
            .observe(started.elapsed().as_secs_f64());
    }

    async fn timed<T>(
        &self,
        operation: &'static str,
        key: &str,
        call: impl Future<Output = T>,
    ) -> T {
        let started = Instant::now();
        let result = call.await;
        self.observe(operation, key, started);
        result
    }
}

impl Storage for Measured {
    fn get<'a>(
        &'a self,
        key: &'a str,
        at_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Option<KeyValue>, ReadError>> {
        Box::pin(self.timed("get", key, self.engine.get(key, at_revision)))
    }

    fn list<'a>(
        &'a self,
        prefix: &'a str,
        at_revision: Option<u64>,
        start_key: Option<&'a str>,
        limit: Option<usize>,
    ) -> BoxFuture<'a, Result<ListResult, ReadError>> {
        let call = self.engine.list(prefix, at_revision, start_key, limit);
        Box::pin(self.timed("list", prefix, call))
    }

    fn count<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<u64, ReadError>> {
        Box::pin(self.timed("listWithCount", prefix, self.engine.count(prefix)))
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: StoreBytes,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        Box::pin(self.timed("create", key, self.engine.create(key, value)))
    }

    fn create_guarded<'a>(
        &'a self,
        key: &'a str,
        value: StoreBytes,
        guard: &'a Guard,
    ) -> BoxFuture<'a, Result<KeyValue, CreateError>> {
        let call = self.engine.create_guarded(key, value, guard);
        Box::pin(self.timed("create", key, call))
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: StoreBytes,
        expected_mod_revision: u64,
    ) -> BoxFuture<'a, Result<KeyValue, UpdateError>> {
        let call = self.engine.update(key, value, expected_mod_revision);
        Box::pin(self.timed("update", key, call))
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected_mod_revision: Option<u64>,
    ) -> BoxFuture<'a, Result<Deleted, DeleteError>> {
        let call = self.engine.delete(key, expected_mod_revision);
        Box::pin(self.timed("delete", key, call))
    }

    fn watch<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        // Only opening the stream is a request; its events are not.
        Box::pin(self.timed("watch", prefix, self.engine.watch(prefix, from_revision)))
    }

    fn watch_without_prev<'a>(
        &'a self,
        prefix: &'a str,
        from_revision: u64,
    ) -> BoxFuture<'a, Result<WatchStream, WatchError>> {
        let call = self.engine.watch_without_prev(prefix, from_revision);
        Box::pin(self.timed("watch", prefix, call))
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.engine.current_revision()
    }

    fn compact(&self, revision: u64) -> BoxFuture<'_, Result<(), CompactError>> {
        Box::pin(self.timed("compact", "", self.engine.compact(revision)))
    }

    fn compacted_revision(&self) -> BoxFuture<'_, Result<u64, ReadError>> {
        self.engine.compacted_revision()
    }

    fn stale<'a>(
        &'a self,
        key: &'a str,
        mod_revision: u64,
    ) -> BoxFuture<'a, Result<bool, ReadError>> {
        self.engine.stale(key, mod_revision)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_and_labels_as_upstream_reports_them() {
        let uri = |text: &str| text.parse::<Uri>().unwrap();
        let none = HeaderMap::new();
        let mut apply = HeaderMap::new();
        apply.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/apply-patch+yaml"),
        );
        let cases = [
            (Method::GET, "/x", &none, "resource", false, "GET"),
            (Method::GET, "/x", &none, "namespace", false, "LIST"),
            (
                Method::GET,
                "/x?watch=true",
                &none,
                "cluster",
                false,
                "WATCH",
            ),
            (Method::GET, "/x?watch=1", &none, "resource", false, "WATCH"),
            (
                Method::GET,
                "/x?watch=false",
                &none,
                "cluster",
                false,
                "LIST",
            ),
            (Method::GET, "/x", &none, "cluster", true, "WATCH"),
            (Method::PATCH, "/x", &apply, "resource", false, "APPLY"),
            (Method::PATCH, "/x", &none, "resource", false, "PATCH"),
            (Method::DELETE, "/x", &none, "namespace", false, "DELETE"),
            (Method::OPTIONS, "/x", &none, "resource", false, "other"),
        ];
        for (method, path, headers, scope, legacy, want) in cases {
            assert_eq!(
                verb(&method, &uri(path), headers, scope, legacy),
                want,
                "{method} {path} {scope}"
            );
        }
        assert_eq!(dry_run(&uri("/x")), "");
        assert_eq!(dry_run(&uri("/x?dryRun=All&dryRun=All")), "All");
        assert_eq!(dry_run(&uri("/x?dryRun=Some")), "invalid");
        assert_eq!(key_type("/registry/core/pods/default/a"), "pods");
        assert_eq!(key_type("/registry/apps/deployments/"), "deployments.apps");
        assert_eq!(key_type(""), "");
    }
}
