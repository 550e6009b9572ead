//! Impersonation: a request that carries `Impersonate-User` (and optionally `Impersonate-Uid`,
//! `Impersonate-Group`, `Impersonate-Extra-<key>`) is served as that user once its sender is
//! allowed the `impersonate` verb on each part, as upstream's filter checks it
//! (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`): `users` (or
//! `serviceaccounts` for a service account's name), `groups`, and in `authentication.k8s.io`
//! `userextras/<key>` and `uids`. `kubectl --as` and `--as-group` send these headers.

use axum::http::HeaderMap;

use crate::server::auth::attributes::Attributes;
use crate::server::auth::authz::{Authorization, Decision, forbidden};
use crate::server::auth::rbac::Policy;
use crate::server::auth::user::{
    ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, User, service_account_groups, service_account_of,
};
use crate::server::http::error::ApiError;

const USER: &str = "impersonate-user";
const UID: &str = "impersonate-uid";
const GROUP: &str = "impersonate-group";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// Whether `headers` ask for impersonation at all.
pub(crate) fn asked(headers: &HeaderMap) -> bool {
    headers
        .keys()
        .any(|name| name.as_str().starts_with("impersonate-"))
}

/// An `Impersonate-Extra-` key as upstream's `unescapeExtraKey` reads it: Go's
/// `url.PathUnescape` (`%XX` escapes; `+` stays itself), the key as written when an escape
/// is malformed.
fn path_unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        if byte != b'%' {
            out.push(byte);
            i += 1;
            continue;
        }
        let escaped = bytes
            .get(i + 1..i + 3)
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
        let Some(escaped) = escaped else {
            return key.to_owned();
        };
        out.push(escaped);
        i += 3;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_owned())
}

/// The user `requestor` impersonates as `headers` ask, each part checked with the
/// `impersonate` verb; 403 for a part the requestor may not impersonate.
pub(crate) fn impersonate(
    headers: &HeaderMap,
    requestor: &User,
    authorization: &Authorization,
    policy: &Policy,
) -> Result<User, ApiError> {
    let text = |value: &axum::http::HeaderValue| value.to_str().unwrap_or_default().to_owned();
    let username = headers.get(USER).map(text).filter(|u| !u.is_empty());
    let uid = headers.get(UID).map(text);
    let groups: Vec<String> = headers.get_all(GROUP).iter().map(text).collect();
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            extra
                .entry(path_unescape(key))
                .or_default()
                .push(text(value));
        }
    }
    let Some(username) = username else {
        // Upstream answers this with a plain 500 from `buildImpersonationRequests`.
        let mut asked = Vec::new();
        if uid.is_some() {
            asked.push("uid");
        }
        if !groups.is_empty() {
            asked.push("groups");
        }
        if !extra.is_empty() {
            asked.push("extra");
        }
        return Err(ApiError::unstatused(format!(
            "requested {} without impersonating a user",
            asked.join(", ")
        )));
    };
    let check = |request: Attributes| match authorization.decide(policy, requestor, &request) {
        Decision::Allow(_) => Ok(()),
        Decision::Deny(reason) | Decision::NoOpinion(reason) => {
            Err(forbidden(requestor, &request, &reason))
        }
    };
    let acting = |group: &str, resource: &str, namespace: &str, name: &str, sub: &str| Attributes {
        verb: "impersonate".to_owned(),
        resource_request: true,
        api_group: group.to_owned(),
        namespace: namespace.to_owned(),
        resource: resource.to_owned(),
        subresource: sub.to_owned(),
        name: name.to_owned(),
        ..Attributes::default()
    };
    let mut user = User {
        username: username.clone(),
        uid: uid.clone().unwrap_or_default(),
        groups: groups.clone(),
        extra: extra.clone(),
    };
    match service_account_of(&username) {
        Some((namespace, name)) => {
            check(acting("", "serviceaccounts", namespace, name, ""))?;
            if groups.is_empty() {
                // A service account's groups follow from its name.
                user.groups = service_account_groups(namespace);
            }
        }
        None => check(acting("", "users", "", &username, ""))?,
    }
    for group in &groups {
        check(acting("", "groups", "", group, ""))?;
    }
    for (key, values) in &extra {
        for value in values {
            check(acting(
                "authentication.k8s.io",
                "userextras",
                "",
                value,
                key,
            ))?;
        }
    }
    if let Some(uid) = &uid {
        check(acting("authentication.k8s.io", "uids", "", uid, ""))?;
    }
    let marker = if username == ANONYMOUS {
        UNAUTHENTICATED
    } else if user.in_group(UNAUTHENTICATED) {
        ""
    } else {
        AUTHENTICATED
    };
    if !marker.is_empty() && !user.in_group(marker) {
        user.groups.push(marker.to_owned());
    }
    Ok(user)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use serde_json::json;

    use super::*;

    #[test]
    fn extra_keys_are_path_unescaped() {
        assert_eq!(path_unescape("example.com%2fteam+x"), "example.com/team+x");
        assert_eq!(path_unescape("scopes"), "scopes");
        // A malformed escape leaves the whole key as written, as PathUnescape's error does.
        assert_eq!(path_unescape("a%2fb%zz"), "a%2fb%zz");
        assert_eq!(path_unescape("a%+1"), "a%+1");
    }
    use crate::server::auth::rbac::Stored;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn policy() -> Policy {
        Policy::new(Stored {
            cluster_roles: vec![json!({"metadata": {"name": "impersonator"}, "rules": [
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"]},
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["groups"]}]})],
            cluster_role_bindings: vec![json!({
                "metadata": {"name": "alice-impersonates"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonator"},
                "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]})],
            ..Stored::default()
        })
    }

    #[test]
    fn allowed_parts_become_the_user() {
        let alice = User::new("alice", &[AUTHENTICATED]);
        let asked = headers(&[("impersonate-user", "bob"), ("impersonate-group", "dev")]);
        let bob = impersonate(&asked, &alice, &Authorization::default(), &policy()).unwrap();
        assert_eq!(bob.username, "bob");
        assert_eq!(bob.groups, ["dev", AUTHENTICATED]);
    }

    #[test]
    fn refused_parts_are_forbidden_with_upstreams_message() {
        let alice = User::new("alice", &[AUTHENTICATED]);
        let asked = headers(&[("impersonate-user", "carol")]);
        let refused =
            impersonate(&asked, &alice, &Authorization::default(), &policy()).unwrap_err();
        assert_eq!(
            refused.into_status().message.as_deref(),
            Some(
                r#"users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
            )
        );
        let sa = headers(&[("impersonate-user", "system:serviceaccount:a:builder")]);
        let refused = impersonate(&sa, &alice, &Authorization::default(), &policy()).unwrap_err();
        assert_eq!(
            refused.into_status().message.as_deref(),
            Some(
                r#"serviceaccounts "builder" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "a""#
            )
        );
    }

    #[test]
    fn service_accounts_get_their_groups_and_groups_need_a_user() {
        let root = User::unsecured();
        let sa = headers(&[("impersonate-user", "system:serviceaccount:a:builder")]);
        let user = impersonate(&sa, &root, &Authorization::default(), &policy()).unwrap();
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:a",
                AUTHENTICATED
            ]
        );
        let anonymous = headers(&[("impersonate-user", ANONYMOUS)]);
        let user = impersonate(&anonymous, &root, &Authorization::default(), &policy()).unwrap();
        assert_eq!(user.groups, [UNAUTHENTICATED]);
        let no_user = headers(&[("impersonate-group", "dev")]);
        let refused =
            impersonate(&no_user, &root, &Authorization::default(), &policy()).unwrap_err();
        assert_eq!(
            refused.code(),
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        );
    }
}
