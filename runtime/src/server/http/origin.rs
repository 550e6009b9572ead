//! Who may talk to a server that has no authentication: programs on the machine, not web pages.
//!
//! A server without authentication trusts whoever reaches its socket. Two ways let a web page
//! in a local browser reach a loopback socket: a cross-origin request (a `no-cors` POST needs
//! no preflight, and a body without Content-Type is read as JSON, as upstream reads it), and
//! DNS rebinding (a name of the attacker's that later resolves to 127.0.0.1, so the page's
//! requests are same-origin to the browser). So every request must name the server by a
//! loopback name or an IP address in `Host` (a rebinding name is neither), and a request that
//! carries an `Origin` (browsers send it; kubectl and the client libraries do not) must come
//! from the server's own origin. Anything else is 403.

use axum::extract::Request;
use axum::http::{HeaderMap, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::server::http::error::ApiError;

/// The middleware of a server without authentication (`open`): passes requests from the
/// machine's programs, refuses the rest with 403. A server that authenticates passes all.
pub(crate) async fn guard(open: bool, request: Request, next: Next) -> Response {
    if !open {
        return next.run(request).await;
    }
    match check(request.headers(), request.uri()) {
        Ok(()) => next.run(request).await,
        Err(message) => ApiError::forbidden_request(message).into_response(),
    }
}

/// Why a request may not be served, if it may not.
fn check(headers: &HeaderMap, uri: &Uri) -> Result<(), String> {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()));
    // In-process requests name no host; over a socket HTTP/1.1 requires one.
    let Some(host) = host else {
        return Ok(());
    };
    if !is_local_name(host_name(host)) {
        return Err(format!(
            "host {host:?} is not a loopback name or an IP address: this server has no \
             authentication and answers only requests addressed to it directly"
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let own = ["http://", "https://"]
            .iter()
            .any(|scheme| origin.strip_prefix(scheme) == Some(host));
        if !own {
            return Err(format!(
                "requests from origin {origin:?} are refused: this server has no \
                 authentication and answers only programs, not web pages of other origins"
            ));
        }
    }
    Ok(())
}

/// The name part of a `Host` value: without its port, and without brackets for IPv6.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(name, _)| name)
}

/// `localhost` (and names under it, which resolve to loopback by RFC 6761) or an IP address.
/// An IP address cannot be rebound; a DNS name other than these can.
fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        }
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        headers
    }

    #[test]
    fn programs_on_the_machine_pass() {
        let uri = Uri::from_static("/api/v1/namespaces");
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST",
            "kapi.localhost:1",
            "[::1]:8080",
            "10.1.2.3:6443",
            "127.0.0.1",
        ] {
            assert_eq!(check(&headers(Some(host), None), &uri), Ok(()), "{host}");
        }
        assert_eq!(check(&headers(None, None), &uri), Ok(()));
        let same = headers(Some("127.0.0.1:8080"), Some("http://127.0.0.1:8080"));
        assert_eq!(check(&same, &uri), Ok(()));
    }

    #[test]
    fn web_pages_and_rebound_names_are_refused() {
        let uri = Uri::from_static("/api/v1/namespaces");
        for (host, origin) in [
            ("attacker.example:8080", None),
            ("127.0.0.1.nip.io:8080", None),
            ("127.0.0.1:8080", Some("http://attacker.example")),
            ("127.0.0.1:8080", Some("null")),
            ("127.0.0.1:8080", Some("http://127.0.0.1:9999")),
        ] {
            assert!(
                check(&headers(Some(host), origin), &uri).is_err(),
                "{host} {origin:?}"
            );
        }
        // HTTP/2 carries the host in the URI's authority.
        let rebound = Uri::from_static("http://attacker.example:8080/api");
        assert!(check(&headers(None, None), &rebound).is_err());
    }
}
