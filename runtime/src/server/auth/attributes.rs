//! What a request asks to do, as the authorizer sees it: upstream's `RequestInfo` read from the
//! method, path and query alone, before any kind is resolved
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`). A path under `/api/`
//! or `/apis/` with a version and a resource is a resource request (verb `get`, `list`,
//! `watch`, `create`, `update`, `patch`, `delete` or `deletecollection`); anything else is a
//! non-resource request whose verb is the lower-case HTTP method.

use axum::http::{Method, Uri};

/// One request's authorization attributes, without the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub(crate) verb: String,
    /// `false` for discovery, OpenAPI, health and every other path that names no resource.
    pub(crate) resource_request: bool,
    /// The URL path (what non-resource rules match).
    pub(crate) path: String,
    pub(crate) api_group: String,
    pub(crate) api_version: String,
    pub(crate) namespace: String,
    pub(crate) resource: String,
    pub(crate) subresource: String,
    pub(crate) name: String,
    /// The equality terms of a collection request's `fieldSelector` (`field=value` and
    /// `field==value`), which the Node authorizer reads (upstream's `GetFieldSelector`).
    pub(crate) fields: Vec<(String, String)>,
}

/// Verbs spelled as a path segment before the resource (`/api/v1/watch/pods`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];

/// Subresources of a namespace, which are not namespaced resources (`/namespaces/x/status`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl Attributes {
    /// The attributes of a request to `uri` with `method`.
    pub(crate) fn of(method: &Method, uri: &Uri) -> Self {
        let path = uri.path();
        let mut info = Self {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_owned(),
            ..Self::default()
        };
        let trimmed = path.trim_matches('/');
        let parts: Vec<&str> = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').collect()
        };
        let mut rest: &[&str] = &parts;
        match rest {
            ["api", _, _, ..] => rest = &rest[1..],
            ["apis", group, _, _, ..] => {
                info.api_group = (*group).to_owned();
                rest = &rest[2..];
            }
            _ => return info,
        }
        info.resource_request = true;
        info.api_version = rest[0].to_owned();
        rest = &rest[1..];
        if SPECIAL_VERBS.contains(&rest[0]) {
            if rest.len() < 2 {
                // Upstream gives up on the path here and the request is refused as
                // unresolvable; authorizing it as a non-resource request refuses it too.
                return Self {
                    resource_request: false,
                    api_group: String::new(),
                    api_version: String::new(),
                    ..info
                };
            }
            info.verb = rest[0].to_owned();
            rest = &rest[1..];
        } else {
            info.verb = match *method {
                Method::POST => "create",
                Method::GET | Method::HEAD => "get",
                Method::PUT => "update",
                Method::PATCH => "patch",
                Method::DELETE => "delete",
                _ => "",
            }
            .to_owned();
        }
        if rest[0] == "namespaces"
            && let Some(namespace) = rest.get(1)
        {
            info.namespace = (*namespace).to_owned();
            if rest.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&rest[2]) {
                rest = &rest[2..];
            }
        }
        let subresources = info.verb != "proxy";
        if let Some(resource) = rest.first() {
            info.resource = (*resource).to_owned();
        }
        if let Some(name) = rest.get(1) {
            info.name = (*name).to_owned();
        }
        if subresources && let Some(sub) = rest.get(2) {
            info.subresource = (*sub).to_owned();
        }
        if info.name.is_empty() && info.verb == "get" {
            let query = Query(uri.query().unwrap_or(""));
            info.verb = if query.watch() { "watch" } else { "list" }.to_owned();
            if let Some(name) = query.selected_name() {
                info.name = name;
            }
        }
        if info.name.is_empty() && matches!(info.verb.as_str(), "list" | "watch" | "delete") {
            let query = Query(uri.query().unwrap_or(""));
            if let Some(selector) = query.values("fieldSelector").next() {
                info.fields = equality_terms(&selector);
            }
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_owned();
        }
        info
    }

    /// Whether the request's field selector requires `field` to equal `value`.
    pub(crate) fn selects_field(&self, field: &str, value: &str) -> bool {
        self.fields.iter().any(|(f, v)| f == field && v == value)
    }
}

/// The `field=value` and `field==value` terms of a field selector, as upstream's parser reads
/// them (terms split at commas, spaces around the field trimmed); `!=` terms are left out.
pub(crate) fn equality_terms(selector: &str) -> Vec<(String, String)> {
    selector
        .split(',')
        .filter_map(|term| {
            let (field, value) = term.split_once("==").or_else(|| {
                term.split_once('=')
                    .filter(|(field, _)| !field.ends_with('!'))
            })?;
            Some((field.trim().to_owned(), value.to_owned()))
        })
        .collect()
}

/// The query of a collection GET, as far as authorization reads it.
struct Query<'a>(&'a str);

impl Query<'_> {
    fn values<'k>(&self, key: &'k str) -> impl Iterator<Item = String> + use<'_, 'k> {
        form_urlencoded::parse(self.0.as_bytes())
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }

    /// `watch` as upstream converts a query value to a bool: anything but `0` and `false`
    /// (any case) is true.
    fn watch(&self) -> bool {
        self.values("watch")
            .next()
            .is_some_and(|value| value != "0" && !value.eq_ignore_ascii_case("false"))
    }

    /// The name a `fieldSelector` requires (`metadata.name=x`): a list or watch of one object
    /// is authorized as that object's, so a rule naming it in `resourceNames` allows it.
    fn selected_name(&self) -> Option<String> {
        let selector = self.values("fieldSelector").next()?;
        selector.split(',').find_map(|term| {
            let (field, value) = term.split_once("==").or_else(|| {
                term.split_once('=')
                    .filter(|(field, _)| !field.ends_with('!'))
            })?;
            let valid =
                !value.is_empty() && value != "." && value != ".." && !value.contains(['/', '%']);
            (field.trim() == "metadata.name" && valid).then(|| value.to_owned())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(method: Method, uri: &str) -> Attributes {
        Attributes::of(&method, &uri.parse().unwrap())
    }

    // Cases from upstream's `TestGetAPIRequestInfo`
    // (`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo_test.go`). Each line:
    // method, URI, then verb, group, namespace, resource, name and subresource (`-`: empty).
    const RESOURCE_REQUESTS: &str = "
        GET /api/v1/namespaces                      list - - namespaces - -
        GET /api/v1/namespaces/other                get - other namespaces other -
        GET /api/v1/namespaces/other/pods           list - other pods - -
        GET /api/v1/namespaces/other/pods/foo       get - other pods foo -
        HEAD /api/v1/namespaces/other/pods/foo      get - other pods foo -
        GET /api/v1/pods                            list - - pods - -
        GET /api/v1/watch/pods                      watch - - pods - -
        GET /api/v1/pods?watch=true                 watch - - pods - -
        GET /api/v1/pods?watch=false                list - - pods - -
        GET /api/v1/watch/namespaces/other/pods     watch - other pods - -
        POST /api/v1/namespaces/other/pods          create - other pods - -
        PUT /api/v1/namespaces/other/pods/foo       update - other pods foo -
        PATCH /api/v1/namespaces/other/pods/foo     patch - other pods foo -
        DELETE /api/v1/namespaces/other/pods/foo    delete - other pods foo -
        DELETE /api/v1/namespaces/other/pods        deletecollection - other pods - -
        PUT /api/v1/namespaces/other/finalize       update - other namespaces other finalize
        PUT /api/v1/namespaces/other/status         update - other namespaces other status
        GET /apis/apps/v1/namespaces/a/deployments/d/scale  get apps a deployments d scale
        POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews  create authorization.k8s.io - selfsubjectaccessreviews - -
        GET /api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dweb  list - a pods web -
        GET /api/v1/namespaces/a/pods?watch=1&fieldSelector=metadata.name==web  watch - a pods web -
        GET /api/v1/namespaces/a/pods?fieldSelector=metadata.name!%3Dweb  list - a pods - -
    ";

    #[test]
    fn resource_requests() {
        for line in RESOURCE_REQUESTS.lines().filter(|l| !l.trim().is_empty()) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [method, uri, want @ ..] = words.as_slice() else {
                panic!("{line}");
            };
            let info = of(method.parse().unwrap(), uri);
            assert!(info.resource_request, "{uri}");
            let got = [
                &info.verb,
                &info.api_group,
                &info.namespace,
                &info.resource,
                &info.name,
                &info.subresource,
            ]
            .map(|field| {
                if field.is_empty() {
                    "-"
                } else {
                    field.as_str()
                }
            });
            assert_eq!(got.as_slice(), want, "{uri}");
        }
    }

    #[test]
    fn non_resource_requests() {
        for (method, uri, verb) in [
            (Method::GET, "/", "get"),
            (Method::GET, "/api", "get"),
            (Method::GET, "/api/v1", "get"),
            (Method::GET, "/apis/apps", "get"),
            (Method::GET, "/apis/apps/v1", "get"),
            (Method::GET, "/healthz", "get"),
            (Method::GET, "/openapi/v3/apis/apps/v1", "get"),
            (Method::POST, "/version", "post"),
        ] {
            let info = of(method, uri);
            assert!(!info.resource_request, "{uri}");
            assert_eq!(info.verb, verb, "{uri}");
            assert_eq!(info.path, uri);
        }
    }
}
