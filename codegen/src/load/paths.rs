//! REST paths of a Swagger 2.0 or OpenAPI 3.0 document → the resources that serve each kind.
//!
//! A path names its group-version, scope, plural and subresource
//! (`/apis/{group}/{version}[/watch][/namespaces/{namespace}]/{plural}[/{name}[/{subresource}...]]`);
//! each operation's `x-kubernetes-action` gives a verb and its `x-kubernetes-group-version-kind`
//! the kind. Top-level paths decide which kinds are served; subresource paths (whose kind is often
//! another one, e.g. Scale) attach to the resource with the same group-version and plural.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::error::{Cx, LoadError, Ptr};
use super::json::{Obj, object, opt_object, opt_str, req_str};
use crate::model::{GroupVersion, Gvk, Resource, Scope, Subresource, Verb};

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

/// What a resource path says, before its operations are read.
#[derive(Debug, PartialEq, Eq)]
struct PathShape<'p> {
    gv: GroupVersion,
    namespaced: bool,
    plural: &'p str,
    subresource: Option<&'p str>,
}

fn parse_path(path: &str) -> Option<PathShape<'_>> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (gv, mut rest) = match segs.as_slice() {
        ["api", version, rest @ ..] => (("", *version), rest),
        ["apis", group, version, rest @ ..] => ((*group, *version), rest),
        _ => return None,
    };
    if let ["watch", tail @ ..] = rest {
        rest = tail;
    }
    let mut namespaced = false;
    if let ["namespaces", "{namespace}", tail @ ..] = rest
        && !tail.is_empty()
    {
        namespaced = true;
        rest = tail;
    }
    let (plural, subresource) = match rest {
        [plural] | [plural, _] => (*plural, None),
        [plural, _, sub, ..] => (*plural, Some(*sub)),
        [] => return None,
    };
    if plural.starts_with('{') || subresource.is_some_and(|s| s.starts_with('{')) {
        return None;
    }
    Some(PathShape {
        gv: GroupVersion {
            group: gv.0.to_owned(),
            version: gv.1.to_owned(),
        },
        namespaced,
        plural,
        subresource,
    })
}

struct Top {
    gvk: Gvk,
    namespaced: bool,
    verbs: BTreeSet<Verb>,
}

/// Derives every served resource from a `paths` object, keyed by the kind it serves.
pub(crate) fn resources(
    cx: &Cx<'_>,
    paths: &Obj,
    at: &Ptr<'_>,
) -> Result<BTreeMap<Gvk, Resource>, LoadError> {
    let cx = cx.with_what("path");
    let mut tops: BTreeMap<(GroupVersion, String), Top> = BTreeMap::new();
    let mut subs: BTreeMap<(GroupVersion, String, String), Subresource> = BTreeMap::new();
    let here = at.key("paths");
    for (path, item) in paths {
        let p_at = here.key(path);
        let item = object(&cx, item, &p_at)?;
        let shape = parse_path(path);
        for method in METHODS {
            let Some(op) = opt_object(&cx, item, method, &p_at)? else {
                continue;
            };
            let op_at = p_at.key(method);
            let Some(action) = opt_str(&cx, op, "x-kubernetes-action", &op_at)? else {
                continue;
            };
            let Some(shape) = &shape else {
                return Err(cx.invalid(
                    &op_at,
                    "x-kubernetes-action on a path that names no resource",
                ));
            };
            let verb = if action == "connect" {
                Verb::from_method(method)
            } else {
                Some(Verb::from_action(action).ok_or_else(|| {
                    cx.invalid(
                        &op_at.key("x-kubernetes-action"),
                        format!("unknown action \"{action}\""),
                    )
                })?)
            };
            let gvk = op_gvk(&cx, op, &op_at)?;
            match shape.subresource {
                None => {
                    let Some(gvk) = gvk else {
                        return Err(cx.invalid(&op_at, "missing x-kubernetes-group-version-kind"));
                    };
                    let key = (shape.gv.clone(), shape.plural.to_owned());
                    let top = tops.entry(key).or_insert_with(|| Top {
                        gvk: gvk.clone(),
                        namespaced: false,
                        verbs: BTreeSet::new(),
                    });
                    if top.gvk != gvk {
                        return Err(cx.invalid(
                            &op_at,
                            format!("{} is served as both {} and {gvk}", shape.plural, top.gvk),
                        ));
                    }
                    top.namespaced |= shape.namespaced;
                    top.verbs.extend(verb);
                }
                Some(sub) => {
                    let key = (shape.gv.clone(), shape.plural.to_owned(), sub.to_owned());
                    let entry = subs.entry(key).or_default();
                    entry.verbs.extend(verb);
                    if entry.kind.is_none() {
                        entry.kind = gvk;
                    }
                }
            }
        }
    }
    let mut out: BTreeMap<Gvk, Resource> = BTreeMap::new();
    for ((gv, plural), top) in &tops {
        let resource = Resource {
            plural: plural.clone(),
            scope: if top.namespaced {
                Scope::Namespaced
            } else {
                Scope::Cluster
            },
            verbs: top.verbs.clone(),
            subresources: BTreeMap::new(),
            crd: None,
        };
        if let Some(previous) = out.insert(top.gvk.clone(), resource) {
            return Err(cx.invalid(
                &here,
                format!(
                    "{} is served by two resources in {gv}: {} and {plural}",
                    top.gvk, previous.plural
                ),
            ));
        }
    }
    for ((gv, plural, sub), subresource) in subs {
        let parent = tops
            .get(&(gv.clone(), plural.clone()))
            .and_then(|top| out.get_mut(&top.gvk));
        let Some(parent) = parent else {
            return Err(cx.invalid(
                &here,
                format!("subresource {plural}/{sub} of {gv} has no resource path {plural}"),
            ));
        };
        parent.subresources.insert(sub, subresource);
    }
    Ok(out)
}

fn op_gvk(cx: &Cx<'_>, op: &Obj, at: &Ptr<'_>) -> Result<Option<Gvk>, LoadError> {
    const KEY: &str = "x-kubernetes-group-version-kind";
    let Some(g) = op.get(KEY).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    parse_gvk(cx, g, &at.key(KEY)).map(Some)
}

/// Parses one `{group, version, kind}` object (group may be empty for the core group).
pub(crate) fn parse_gvk(cx: &Cx<'_>, v: &Value, at: &Ptr<'_>) -> Result<Gvk, LoadError> {
    let m = object(cx, v, at)?;
    Ok(Gvk::new(
        opt_str(cx, m, "group", at)?.unwrap_or_default(),
        req_str(cx, m, "version", at)?,
        req_str(cx, m, "kind", at)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::error::Source;

    #[test]
    fn path_shapes() {
        let gv = |g: &str, v: &str| GroupVersion {
            group: g.into(),
            version: v.into(),
        };
        let cases = [
            (
                "/api/v1/namespaces",
                Some((gv("", "v1"), false, "namespaces", None)),
            ),
            (
                "/api/v1/namespaces/{name}",
                Some((gv("", "v1"), false, "namespaces", None)),
            ),
            (
                "/api/v1/namespaces/{name}/status",
                Some((gv("", "v1"), false, "namespaces", Some("status"))),
            ),
            (
                "/api/v1/namespaces/{namespace}/pods",
                Some((gv("", "v1"), true, "pods", None)),
            ),
            (
                "/api/v1/watch/namespaces/{namespace}/pods/{name}",
                Some((gv("", "v1"), true, "pods", None)),
            ),
            (
                "/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}",
                Some((gv("", "v1"), true, "pods", Some("proxy"))),
            ),
            (
                "/apis/apps/v1/deployments",
                Some((gv("apps", "v1"), false, "deployments", None)),
            ),
            ("/apis/apps/v1/", None),
            ("/apis/apps/", None),
            ("/version/", None),
            ("/logs/{logpath}", None),
        ];
        for (path, want) in cases {
            let got = parse_path(path).map(|s| (s.gv, s.namespaced, s.plural, s.subresource));
            assert_eq!(got, want, "{path}");
        }
    }

    #[test]
    fn verbs_scope_and_subresources_come_from_operations() {
        let op = |action: &str, kind: &str| {
            serde_json::json!({"x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": {"group": if kind == "Scale" {"autoscaling"} else {"apps"}, "version": "v1", "kind": kind}})
        };
        let paths = serde_json::json!({
            "/apis/apps/v1/deployments": {"get": op("list", "Deployment")},
            "/apis/apps/v1/namespaces/{namespace}/deployments": {"get": op("list", "Deployment"), "post": op("post", "Deployment")},
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {"get": op("get", "Deployment"), "parameters": []},
            "/apis/apps/v1/watch/namespaces/{namespace}/deployments": {"get": op("watchlist", "Deployment")},
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale": {"put": op("put", "Scale"), "head": op("connect", "Scale")},
        });
        let source = Source::file("t.json".as_ref());
        let cx = Cx {
            source: &source,
            what: "spec",
        };
        let got =
            resources(&cx, paths.as_object().expect("object"), &Ptr::Root).expect("resources");
        let d = got
            .get(&Gvk::new("apps", "v1", "Deployment"))
            .expect("deployment");
        assert_eq!(d.scope, Scope::Namespaced);
        assert_eq!(
            d.verbs,
            BTreeSet::from([Verb::Create, Verb::Get, Verb::List, Verb::Watch])
        );
        let scale = d.subresources.get("scale").expect("scale");
        assert_eq!(scale.kind, Some(Gvk::new("autoscaling", "v1", "Scale")));
        assert_eq!(scale.verbs, BTreeSet::from([Verb::Update]));
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn bad_operations_name_the_path() {
        let cases = [
            (
                serde_json::json!({"/apis/a/v1/xs": {"get": {"x-kubernetes-action": "fly",
                "x-kubernetes-group-version-kind": {"group": "a", "version": "v1", "kind": "X"}}}}),
                "invalid path at t.json #/paths/~1apis~1a~1v1~1xs/get/x-kubernetes-action: unknown action \"fly\"",
            ),
            (
                serde_json::json!({"/apis/a/v1/xs": {"get": {"x-kubernetes-action": "list"}}}),
                "invalid path at t.json #/paths/~1apis~1a~1v1~1xs/get: missing x-kubernetes-group-version-kind",
            ),
            (
                serde_json::json!({"/apis/a/v1/xs/{name}/status": {"get": {"x-kubernetes-action": "get"}}}),
                "invalid path at t.json #/paths: subresource xs/status of a/v1 has no resource path xs",
            ),
            (
                serde_json::json!({"/apis/a/v1/xs": []}),
                "invalid path at t.json #/paths/~1apis~1a~1v1~1xs: expected an object, found an array",
            ),
        ];
        let source = Source::file("t.json".as_ref());
        let cx = Cx {
            source: &source,
            what: "spec",
        };
        for (paths, want) in cases {
            let err = resources(&cx, paths.as_object().expect("object"), &Ptr::Root)
                .expect_err("must fail");
            assert_eq!(err.to_string(), want);
        }
    }
}
