//! Resource URLs: `/api/v1/...` and `/apis/<group>/<version>/...` turned into the kind, namespace,
//! name and subresource a request targets.
//!
//! Accepted shapes after the group-version prefix (an optional legacy `watch/` first):
//! `<plural>`, `<plural>/<name>`, `<plural>/<name>/<sub>`, and the same three after
//! `namespaces/<ns>/`. The subresources are `status`, `scale`, a namespace's `finalize`, a
//! service account's `token`, a pod's `binding`, `eviction`, `ephemeralcontainers`, `resize`,
//! `log`, `exec`, `attach` and `portforward`, and the `proxy` of a pod, a Service or a Node,
//! which takes any path after it (`<plural>/<name>/proxy/<path>`).
//! Anything else, an unknown resource included, is a 404 `Status`.

use axum::http::Uri;

use crate::registry::{RegisteredKind, Registry};

use crate::server::http::error::ApiError;
use crate::server::state::builtin::is_namespace_kind;

/// A subresource the core serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// `/status`.
    Status,
    /// `/scale`.
    Scale,
    /// `/finalize` of a core Namespace: its `spec.finalizers`, PUT only.
    Finalize,
    /// `/token` of a core ServiceAccount: a `TokenRequest`, POST only.
    Token,
    /// `/binding` of a core Pod: a `Binding` to a node, POST only.
    Binding,
    /// `/eviction` of a core Pod: an `Eviction`, POST only.
    Eviction,
    /// `/ephemeralcontainers` of a core Pod: the Pod, of which only
    /// `spec.ephemeralContainers` may change.
    EphemeralContainers,
    /// `/resize` of a core Pod: the Pod, of which only its containers' `resources` and
    /// `resizePolicy` may change.
    Resize,
    /// `/log` of a core Pod: a container's log, read from its node's kubelet.
    Log,
    /// `/exec` of a core Pod: a command in a container, over an upgraded connection.
    Exec,
    /// `/attach` of a core Pod: a container's standard streams, over an upgraded connection.
    Attach,
    /// `/portforward` of a core Pod: its ports, over an upgraded connection.
    PortForward,
    /// `/proxy[/<path>]` of a core Pod, Service or Node: HTTP to it.
    Proxy,
}

impl Subresource {
    /// The subresource as a URL, RBAC, admission and metrics name it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Scale => "scale",
            Self::Finalize => "finalize",
            Self::Token => "token",
            Self::Binding => "binding",
            Self::Eviction => "eviction",
            Self::EphemeralContainers => "ephemeralcontainers",
            Self::Resize => "resize",
            Self::Log => "log",
            Self::Exec => "exec",
            Self::Attach => "attach",
            Self::PortForward => "portforward",
            Self::Proxy => "proxy",
        }
    }

    /// Whether it reaches past the API server, to a kubelet or a backend: upstream's
    /// `Connecter` storages and the pod's log, whose verbs are the HTTP methods'.
    pub(crate) fn is_connect(self) -> bool {
        matches!(
            self,
            Self::Log | Self::Exec | Self::Attach | Self::PortForward | Self::Proxy
        )
    }
}

/// What a resource URL names.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The kind served there.
    pub(crate) kind: RegisteredKind,
    /// The namespace segment, for namespaced kinds.
    pub(crate) namespace: Option<String>,
    /// The object name, absent for collections.
    pub(crate) name: Option<String>,
    /// The subresource, if any.
    pub(crate) sub: Option<Subresource>,
    /// Whether the legacy `/watch/` prefix was used.
    pub(crate) legacy_watch: bool,
    /// For `proxy`, the path after it as upstream's `PodProxyOptions.Path` holds it: the
    /// segments after `proxy` joined by `/`, a trailing slash kept; empty for `.../proxy`.
    pub(crate) proxy_path: String,
}

impl Target {
    /// The kind's group.
    pub(crate) fn group(&self) -> &str {
        &self.kind.info.gvk.group
    }

    /// The kind's plural.
    pub(crate) fn plural(&self) -> &str {
        &self.kind.info.plural
    }
}

/// Whether `segment` can be a name or namespace in a URL and a key: not empty, not `.` or `..`,
/// and free of `/` and `%` (upstream's path segment rule).
pub(crate) fn is_path_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && !segment.contains('/')
        && !segment.contains('%')
}

/// Whether `info` is the core ServiceAccount, whose `token` subresource issues tokens.
pub(crate) fn is_service_account_kind(info: &crate::ResourceInfo) -> bool {
    info.gvk.group.is_empty() && info.gvk.version == "v1" && info.plural == "serviceaccounts"
}

/// Whether `info` is the core Pod, whose `binding`, `eviction`, `ephemeralcontainers` and
/// `resize` subresources act on it.
pub(crate) fn is_pod_kind(info: &crate::ResourceInfo) -> bool {
    info.gvk.group.is_empty() && info.gvk.version == "v1" && info.plural == "pods"
}

/// Whether `info` is a core kind with a `proxy` subresource: Pods, Services and Nodes.
pub(crate) fn has_proxy(info: &crate::ResourceInfo) -> bool {
    info.gvk.group.is_empty()
        && info.gvk.version == "v1"
        && ["pods", "services", "nodes"].contains(&info.plural.as_ref())
}

/// Whether `path` is a connect subresource's (a pod's `log`, `exec`, `attach`,
/// `portforward` or `proxy`, a Service's or Node's `proxy`): long-running requests upstream's
/// `BasicLongRunningRequestCheck` exempts from in-flight limits and the request timeout.
pub(crate) fn is_long_running_subresource(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    matches!(
        segments.as_slice(),
        [
            "api",
            "v1",
            "namespaces",
            _,
            "pods",
            _,
            "log" | "exec" | "attach" | "portforward" | "proxy",
            ..
        ] | ["api", "v1", "namespaces", _, "services", _, "proxy", ..]
            | ["api", "v1", "nodes", _, "proxy", ..]
    )
}

/// Splits `rest` (the segments after the group-version and any `watch`) at a `proxy`
/// subresource: the segments up to and including `proxy`, and those after it. Only the
/// kinds that have one are split, so a name or namespace called `proxy` stays what it is.
fn split_proxy<'a, 'b>(rest: &'b [&'a str]) -> (&'b [&'a str], &'b [&'a str]) {
    let at = match rest {
        ["namespaces", _, "pods" | "services", _, "proxy", ..] => 5,
        ["nodes", _, "proxy", ..] => 3,
        _ => return (rest, &[]),
    };
    rest.split_at(at)
}

/// Resolves a request path against the registry.
pub(crate) fn resolve(registry: &Registry, path: &str) -> Result<Target, ApiError> {
    let trailing_slash = path.ends_with('/');
    let path = path.strip_suffix('/').unwrap_or(path);
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(ApiError::no_route()),
    };
    let (legacy_watch, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let (rest, after_proxy) = split_proxy(rest);
    // The path after `proxy`, as upstream's request options read it: the parts joined after
    // a leading slash, and the request's trailing slash kept (`getRequestOptions` in
    // k8s.io/apiserver's `endpoints/handlers/rest.go`).
    let mut proxy_path = String::new();
    for part in after_proxy {
        proxy_path.push('/');
        proxy_path.push_str(part);
    }
    if trailing_slash && !proxy_path.ends_with('/') && rest.last() == Some(&"proxy") {
        proxy_path.push('/');
    }
    let lookup = |plural: &str| registry.get(group, version, plural).cloned();
    // `namespaces/<ns>/<plural>...` unless the third segment is a subresource of a namespace
    // object (`namespaces/<name>/status`), which only the core group's Namespace kind has.
    let namespaced = match rest {
        ["namespaces", ns, plural, tail @ ..] if tail.len() <= 2 => lookup(plural)
            .filter(|k| k.info.is_namespaced())
            .map(|kind| (kind, *ns, tail)),
        _ => None,
    };
    let (kind, namespace, tail) = match namespaced {
        Some((kind, ns, tail)) => (kind, Some(ns), tail),
        None => match rest {
            [plural, tail @ ..] if tail.len() <= 2 => {
                let kind = lookup(plural).ok_or_else(ApiError::no_route)?;
                (kind, None, tail)
            }
            _ => return Err(ApiError::no_route()),
        },
    };
    let (name, sub) = match tail {
        [] => (None, None),
        [name] => (Some(*name), None),
        [name, "status"] if kind.info.subresources.status => {
            (Some(*name), Some(Subresource::Status))
        }
        [name, "scale"] if kind.info.subresources.scale.is_some() => {
            (Some(*name), Some(Subresource::Scale))
        }
        // Upstream serves `finalize` on `/api/v1/namespaces/<name>/finalize` exactly: not under
        // the legacy watch prefix, not with a trailing slash.
        [name, "finalize"]
            if is_namespace_kind(&kind.info)
                && version == "v1"
                && !legacy_watch
                && !trailing_slash =>
        {
            (Some(*name), Some(Subresource::Finalize))
        }
        [name, "token"]
            if is_service_account_kind(&kind.info) && !legacy_watch && !trailing_slash =>
        {
            (Some(*name), Some(Subresource::Token))
        }
        [
            name,
            sub @ ("binding" | "eviction" | "ephemeralcontainers" | "resize"),
        ] if is_pod_kind(&kind.info) && !legacy_watch && !trailing_slash => {
            let sub = match *sub {
                "binding" => Subresource::Binding,
                "eviction" => Subresource::Eviction,
                "resize" => Subresource::Resize,
                _ => Subresource::EphemeralContainers,
            };
            (Some(*name), Some(sub))
        }
        [name, sub @ ("log" | "exec" | "attach" | "portforward")]
            if is_pod_kind(&kind.info) && !legacy_watch && !trailing_slash =>
        {
            let sub = match *sub {
                "log" => Subresource::Log,
                "exec" => Subresource::Exec,
                "attach" => Subresource::Attach,
                _ => Subresource::PortForward,
            };
            (Some(*name), Some(sub))
        }
        [name, "proxy"] if has_proxy(&kind.info) && !legacy_watch => {
            (Some(*name), Some(Subresource::Proxy))
        }
        _ => return Err(ApiError::no_route()),
    };
    // A namespaced kind's objects are only reachable inside a namespace; the cluster-wide path
    // serves list and watch of every namespace.
    if kind.info.is_namespaced() && namespace.is_none() && name.is_some() {
        return Err(ApiError::no_route());
    }
    if namespace.is_some_and(|ns| !is_path_segment(ns)) || name.is_some_and(|n| !is_path_segment(n))
    {
        return Err(ApiError::no_route());
    }
    Ok(Target {
        kind,
        namespace: namespace.map(str::to_owned),
        name: name.map(str::to_owned),
        sub,
        legacy_watch,
        proxy_path,
    })
}

/// The values of query parameter `name` in `uri`, in order (`pretty` in `?pretty=true`; an
/// empty one for `?pretty` or `?pretty=`), read as the request layers need them before any
/// handler parses its options.
pub(crate) fn query_values<'a>(uri: &'a Uri, name: &'a str) -> impl Iterator<Item = &'a str> {
    uri.query()
        .unwrap_or_default()
        .split('&')
        .filter_map(move |pair| match pair.split_once('=') {
            Some((key, value)) if key == name => Some(value),
            None if pair == name => Some(""),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[test]
    fn query_values_are_read_in_order_bare_names_empty() {
        let uri: Uri = "/api/v1/pods?dryRun=All&pretty&watch=1&dryRun=&prettyish=x"
            .parse()
            .unwrap_or_default();
        let values = |name| query_values(&uri, name).collect::<Vec<_>>();
        assert_eq!(values("dryRun"), ["All", ""]);
        assert_eq!(values("pretty"), [""]);
        assert_eq!(values("watch"), ["1"]);
        assert!(values("limit").is_empty());
        assert!(
            query_values(&Uri::from_static("/api"), "watch")
                .next()
                .is_none()
        );
    }
    use crate::meta::ObjectMeta;
    use crate::type_tag::{ApiVersion, Kind};

    #[derive(Clone, Debug, Default, Serialize, Deserialize, crate::Resource)]
    #[resource(
        crate = "crate",
        group = "example.com",
        version = "v1",
        kind = "Widget"
    )]
    #[resource(namespaced, status)]
    struct Widget {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<serde_json::Value>,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, crate::Resource)]
    #[resource(
        crate = "crate",
        group = "",
        version = "v1",
        kind = "Namespace",
        cluster
    )]
    #[resource(status)]
    struct Namespace {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<serde_json::Value>,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, crate::Resource)]
    #[resource(crate = "crate", group = "", version = "v1", kind = "Pod", namespaced)]
    struct Pod {
        #[serde(rename = "apiVersion")]
        api_version: ApiVersion<Self>,
        kind: Kind<Self>,
        #[serde(default)]
        metadata: ObjectMeta,
    }

    #[test]
    fn connect_subresources_resolve_with_the_path_after_proxy() {
        let mut registry = Registry::new();
        registry.register::<Pod>();
        let resolved = |path: &str| {
            resolve(&registry, path)
                .ok()
                .map(|t| (t.name.unwrap_or_default(), t.sub, t.proxy_path))
        };
        let pod = |sub, path: &str| Some(("web".to_owned(), Some(sub), path.to_owned()));
        let base = "/api/v1/namespaces/a/pods/web";
        assert_eq!(resolved(&format!("{base}/log")), pod(Subresource::Log, ""));
        assert_eq!(
            resolved(&format!("{base}/exec")),
            pod(Subresource::Exec, "")
        );
        assert_eq!(
            resolved(&format!("{base}/portforward")),
            pod(Subresource::PortForward, "")
        );
        assert_eq!(resolved(&format!("{base}/log/")), None);
        // `getRequestOptions`: the parts after `proxy` after a slash, a trailing one kept.
        assert_eq!(
            resolved(&format!("{base}/proxy")),
            pod(Subresource::Proxy, "")
        );
        assert_eq!(
            resolved(&format!("{base}/proxy/")),
            pod(Subresource::Proxy, "/")
        );
        assert_eq!(
            resolved(&format!("{base}/proxy/x/y/")),
            pod(Subresource::Proxy, "/x/y/")
        );
        // A pod named `proxy` is still a pod.
        assert_eq!(
            resolved("/api/v1/namespaces/a/pods/proxy").map(|(name, sub, _)| (name, sub)),
            Some(("proxy".to_owned(), None))
        );
        assert!(is_long_running_subresource(&format!("{base}/exec")));
        assert!(is_long_running_subresource("/api/v1/nodes/n/proxy/metrics"));
        assert!(!is_long_running_subresource(&format!("{base}/status")));
    }

    #[test]
    fn resolves_every_shape() {
        let mut registry = Registry::new();
        registry.register::<Widget>().register::<Namespace>();
        type Row = (
            &'static str,
            Option<(
                &'static str,
                Option<&'static str>,
                Option<&'static str>,
                Option<Subresource>,
            )>,
        );
        let rows: &[Row] = &[
            (
                "/apis/example.com/v1/widgets",
                Some(("widgets", None, None, None)),
            ),
            (
                "/apis/example.com/v1/namespaces/a/widgets",
                Some(("widgets", Some("a"), None, None)),
            ),
            (
                "/apis/example.com/v1/namespaces/a/widgets/w",
                Some(("widgets", Some("a"), Some("w"), None)),
            ),
            (
                "/apis/example.com/v1/namespaces/a/widgets/w/status",
                Some(("widgets", Some("a"), Some("w"), Some(Subresource::Status))),
            ),
            (
                "/apis/example.com/v1/watch/namespaces/a/widgets",
                Some(("widgets", Some("a"), None, None)),
            ),
            ("/api/v1/namespaces", Some(("namespaces", None, None, None))),
            (
                "/api/v1/namespaces/",
                Some(("namespaces", None, None, None)),
            ),
            (
                "/api/v1/namespaces/a",
                Some(("namespaces", None, Some("a"), None)),
            ),
            (
                "/api/v1/namespaces/a/status",
                Some(("namespaces", None, Some("a"), Some(Subresource::Status))),
            ),
            (
                "/api/v1/namespaces/a/finalize",
                Some(("namespaces", None, Some("a"), Some(Subresource::Finalize))),
            ),
            ("/api/v1/namespaces/a/finalize/", None),
            ("/api/v1/watch/namespaces/a/finalize", None),
            ("/apis/example.com/v1/namespaces/a/widgets/w/finalize", None),
            ("/apis/example.com/v1/widgets/w", None),
            ("/apis/example.com/v1/namespaces/a/widgets/w/scale", None),
            ("/apis/example.com/v1/namespaces/a/widgets/w/status/x", None),
            ("/apis/example.com/v2/widgets", None),
            ("/apis/example.com/v1/gadgets", None),
            ("/api/v1/namespaces/a/widgets", None),
            ("/apis/example.com/v1/namespaces/../widgets", None),
            ("/apis/example.com/v1/namespaces/a/widgets/%2e%2e", None),
            ("/healthz", None),
        ];
        for (path, want) in rows {
            let got = resolve(&registry, path)
                .ok()
                .map(|t| (t.kind.info.plural.to_string(), t.namespace, t.name, t.sub));
            let want = want.map(|(p, ns, n, s)| {
                (p.to_owned(), ns.map(str::to_owned), n.map(str::to_owned), s)
            });
            assert_eq!(got, want, "{path}");
        }
        assert!(
            resolve(&registry, "/apis/example.com/v1/watch/widgets")
                .unwrap()
                .legacy_watch
        );
    }
}
