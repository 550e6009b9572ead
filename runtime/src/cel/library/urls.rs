//! Kubernetes' URL library: `isURL`, `url`, and on URLs `getScheme`, `getHost`,
//! `getHostname`, `getPort`, `getEscapedPath` and `getQuery`. A URL is what Go's
//! `url.ParseRequestURI` accepts: an absolute URI (`https://host:port/path?query`, or an opaque
//! one such as `mailto:x`) or an absolute path.
//!
//! Upstream: `k8s.io/apiserver/pkg/cel/library/urls.go`, `k8s.io/apiserver/pkg/cel/url.go`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, STRING_TYPE};
use cel::objects::{Key, Map, Opaque};
use cel::{Env, ExecutionError, Value};

use super::{no_overload, traversed_arg, value_overload};

/// A parsed URL (`kubernetes.URL`).
#[derive(Debug, PartialEq, Eq, Default)]
struct Url {
    scheme: String,
    /// Host and port as written (`[::1]:80`).
    host: String,
    path: String,
    query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

/// `url.ParseRequestURI`, the parts the library reads.
fn parse(text: &str) -> Result<Url, String> {
    let error =
        |why: &str| format!("URL parse error during conversion from string: parse {text:?}: {why}");
    if text.chars().any(|c| c.is_ascii_control()) {
        return Err(error("net/url: invalid control character in URL"));
    }
    let (rest, query) = text.split_once('?').unwrap_or((text, ""));
    let mut url = Url {
        query: query.to_owned(),
        ..Url::default()
    };
    if rest.starts_with('/') && !rest.starts_with("//") {
        url.path = rest.to_owned();
        return Ok(url);
    }
    let Some((scheme, after)) = rest.split_once(':') else {
        return Err(error("invalid URI for request"));
    };
    let valid_scheme = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return Err(error(if scheme.is_empty() {
            "missing protocol scheme"
        } else {
            "first path segment in URL cannot contain colon"
        }));
    }
    url.scheme = scheme.to_ascii_lowercase();
    let Some(after) = after.strip_prefix("//") else {
        if after.starts_with('/') {
            url.path = after.to_owned();
        }
        return Ok(url);
    };
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if let Some(inner) = host.strip_prefix('[') {
        let end = inner
            .find(']')
            .ok_or_else(|| error("missing ']' in host"))?;
        &inner[end + 1..]
    } else {
        host.rsplit_once(':').map_or("", |(_, p)| p)
    };
    let port = port.strip_prefix(':').unwrap_or(port);
    if !port.chars().all(|c| c.is_ascii_digit()) {
        return Err(error(&format!(
            "invalid port {:?} after host",
            format!(":{port}")
        )));
    }
    if host.contains(' ') {
        return Err(error("invalid character \" \" in host name"));
    }
    url.host = host.to_owned();
    url.path = path.to_owned();
    Ok(url)
}

/// Why `text` is not a URL (Go's `url.ParseRequestURI` error), if it is not one.
pub(super) fn parse_error(text: &str) -> Option<String> {
    parse(text).err().map(|e| {
        e.trim_start_matches("URL parse error during conversion from string: ")
            .to_owned()
    })
}

fn url_at(function: &str, args: &[Value]) -> Result<Arc<dyn Opaque>, ExecutionError> {
    match args.first() {
        Some(Value::Opaque(o)) if o.downcast_ref::<Url>().is_some() => Ok(Arc::clone(o)),
        _ => Err(no_overload(function)),
    }
}

fn with_url(
    function: &str,
    args: &[Value],
    f: impl FnOnce(&Url) -> Value,
) -> Result<Value, ExecutionError> {
    let o = url_at(function, args)?;
    o.downcast_ref::<Url>()
        .map(f)
        .ok_or_else(|| no_overload(function))
}

fn text(s: &str) -> Value {
    Value::String(Arc::new(s.to_owned()))
}

pub(super) fn register(env: &mut Env) {
    let _ = env.add_overload(
        "isURL",
        "is_url_string",
        vec![STRING_TYPE],
        value_overload!(is_url),
    );
    let _ = env.add_overload(
        "url",
        "string_to_url",
        vec![STRING_TYPE],
        value_overload!(to_url),
    );
    let members: [(&str, cel::common::functions::Function); 6] = [
        ("getScheme", value_overload!(get_scheme)),
        ("getHost", value_overload!(get_host)),
        ("getHostname", value_overload!(get_hostname)),
        ("getPort", value_overload!(get_port)),
        ("getEscapedPath", value_overload!(get_escaped_path)),
        ("getQuery", value_overload!(get_query)),
    ];
    for (name, f) in members {
        let _ = env.add_member_overload(name, &format!("url_{name}"), DYN_TYPE, vec![], f);
    }
}

fn is_url(args: &[Value]) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        parse(traversed_arg("isURL", args, 0, 1)?).is_ok(),
    ))
}

fn to_url(args: &[Value]) -> Result<Value, ExecutionError> {
    parse(traversed_arg("url", args, 0, 1)?)
        .map(|u| Value::Opaque(Arc::new(u)))
        .map_err(|e| ExecutionError::function_error("url", e))
}

fn get_scheme(args: &[Value]) -> Result<Value, ExecutionError> {
    with_url("getScheme", args, |u| text(&u.scheme))
}

fn get_host(args: &[Value]) -> Result<Value, ExecutionError> {
    with_url("getHost", args, |u| text(&u.host))
}

/// The host without its port, and an IPv6 address without its brackets.
fn hostname(host: &str) -> &str {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.split(']').next().unwrap_or_default();
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn get_hostname(args: &[Value]) -> Result<Value, ExecutionError> {
    with_url("getHostname", args, |u| text(hostname(&u.host)))
}

fn get_port(args: &[Value]) -> Result<Value, ExecutionError> {
    with_url("getPort", args, |u| {
        let after = if u.host.starts_with('[') {
            u.host.rsplit_once(']').map_or("", |(_, p)| p)
        } else {
            u.host.rsplit_once(':').map_or("", |(_, p)| p)
        };
        text(after.trim_start_matches(':'))
    })
}

fn get_escaped_path(args: &[Value]) -> Result<Value, ExecutionError> {
    with_url("getEscapedPath", args, |u| text(&u.path))
}

/// The query as a map of each key to its values, in order.
fn get_query(args: &[Value]) -> Result<Value, ExecutionError> {
    with_url("getQuery", args, |u| {
        let mut values: HashMap<String, Vec<Value>> = HashMap::new();
        for (key, value) in form_urlencoded::parse(u.query.as_bytes()) {
            values
                .entry(key.into_owned())
                .or_default()
                .push(text(&value));
        }
        Value::Map(Map {
            map: Arc::new(
                values
                    .into_iter()
                    .map(|(k, v)| (Key::String(Arc::new(k)), Value::List(Arc::new(v))))
                    .collect(),
            ),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_all, eval};

    // Upstream: k8s.io/apiserver/pkg/cel/library/urls_test.go and library_test.go (URL cases).
    #[test]
    fn url_library() {
        assert_all(&[
            ("isURL('https://example.com:8080/path?x=1')", true),
            ("isURL('/absolute-path')", true),
            ("isURL('relative/path')", false),
            ("isURL('https://exa mple.com')", false),
            (
                "url('https://example.com:80/p').getScheme() == 'https'",
                true,
            ),
            (
                "url('https://example.com:80/p').getHost() == 'example.com:80'",
                true,
            ),
            ("url('https://[::1]:80/p').getHostname() == '::1'", true),
            ("url('https://example.com:80/p').getPort() == '80'", true),
            ("url('https://example.com/p').getPort() == ''", true),
            (
                "url('https://example.com/a/b').getEscapedPath() == '/a/b'",
                true,
            ),
            (
                "url('https://example.com/?k=a&k=b&j=c').getQuery() == {'k': ['a', 'b'], 'j': ['c']}",
                true,
            ),
            ("url('/path').getHost() == ''", true),
        ]);
        assert!(eval("url('x')").unwrap_err().contains("URL parse error"));
    }
}
