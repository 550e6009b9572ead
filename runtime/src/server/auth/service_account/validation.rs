//! The checks of a service-account token that read the store, as upstream's validator does
//! them (`pkg/serviceaccount/claims.go`, `Validate`): the account still exists with the uid the
//! token names, and so does the object the token is bound to (a Pod, Secret or Node); an object
//! deleted more than a minute ago counts as gone. A token that passes is the account's user
//! (`staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go`, `UserInfo`):
//! `system:serviceaccount:<namespace>:<name>` with the account's uid, in
//! `system:serviceaccounts` and `system:serviceaccounts:<namespace>`, with the bound pod, node
//! and the token's id as extra values.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::server::auth::service_account::jwt::{Claims, LEEWAY_SECONDS, Ref};
use crate::server::auth::user::{User, service_account};
use crate::server::state::keys;
use crate::storage::Storage;

/// Upstream's words for a token whose bound object is gone.
const INVALIDATED: &str = "service account token has been invalidated";

/// Extra keys of a service account's user (`serviceaccount/util.go`).
const POD_NAME: &str = "authentication.kubernetes.io/pod-name";
const POD_UID: &str = "authentication.kubernetes.io/pod-uid";
const NODE_NAME: &str = "authentication.kubernetes.io/node-name";
const NODE_UID: &str = "authentication.kubernetes.io/node-uid";
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// A stored object's uid and whether it was deleted before `before` (seconds since the
/// epoch); `None` when it is not stored.
async fn stored(
    storage: &dyn Storage,
    key: &str,
    before: i64,
) -> Result<Option<(String, bool)>, String> {
    let kv = storage.get(key, None).await.map_err(|e| e.to_string())?;
    let Some(kv) = kv else { return Ok(None) };
    let object: Value = serde_json::from_slice(&kv.value).map_err(|e| e.to_string())?;
    let uid = object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let deleted = object
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|stamp| stamp.parse::<jiff::Timestamp>().ok())
        .is_some_and(|stamp| stamp.as_second() < before);
    Ok(Some((uid, deleted)))
}

/// The user the token's claims stand for, after the store says the account and bound objects
/// are still those it names; upstream's error otherwise.
pub(crate) async fn user_of(
    storage: &dyn Storage,
    claims: &Claims,
    now: i64,
) -> Result<User, String> {
    let private = &claims.kubernetes;
    let namespace = &private.namespace;
    let account = &private.serviceaccount;
    let before = now - LEEWAY_SECONDS;
    let segment_ok = |s: &str| crate::server::http::path::is_path_segment(s);
    if !segment_ok(namespace) || !segment_ok(&account.name) {
        return Err("service account token does not name a service account".to_owned());
    }
    let key = format!(
        "{}{namespace}/{}",
        keys::prefix_of("", "serviceaccounts"),
        account.name
    );
    match stored(storage, &key, before).await? {
        None => {
            return Err(format!("serviceaccounts \"{}\" not found", account.name));
        }
        Some((_, true)) => {
            return Err(format!(
                "service account {namespace}/{} has been deleted",
                account.name
            ));
        }
        Some((uid, false)) if uid != account.uid => {
            return Err(format!(
                "service account UID ({uid}) does not match claim ({})",
                account.uid
            ));
        }
        Some(_) => {}
    }
    let bound: [(&Option<Ref>, &str, bool, &str); 3] = [
        (
            &private.secret,
            "secrets",
            true,
            "secret UID ({}) does not match service account secret ref claim ({})",
        ),
        (
            &private.pod,
            "pods",
            true,
            "pod UID ({}) does not match service account pod ref claim ({})",
        ),
        (
            &private.node,
            "nodes",
            false,
            "node UID ({}) does not match service account node ref claim ({})",
        ),
    ];
    for (reference, plural, namespaced, mismatch) in bound {
        let Some(reference) = reference else { continue };
        if !segment_ok(&reference.name) {
            return Err(INVALIDATED.to_owned());
        }
        let prefix = keys::prefix_of("", plural);
        let key = if namespaced {
            format!("{prefix}{namespace}/{}", reference.name)
        } else {
            format!("{prefix}{}", reference.name)
        };
        match stored(storage, &key, before).await? {
            None | Some((_, true)) => return Err(INVALIDATED.to_owned()),
            Some((uid, false)) if uid != reference.uid => {
                return Err(mismatch
                    .replacen("{}", &uid, 1)
                    .replacen("{}", &reference.uid, 1));
            }
            Some(_) => {}
        }
    }
    Ok(account_user(claims))
}

/// The user of a token whose claims passed every check.
fn account_user(claims: &Claims) -> User {
    let private = &claims.kubernetes;
    let namespace = &private.namespace;
    let mut user = service_account(namespace, &private.serviceaccount.name);
    user.uid = private.serviceaccount.uid.clone();
    let mut extra = BTreeMap::new();
    let mut add = |key: &str, value: &str| {
        if !value.is_empty() {
            extra.insert(key.to_owned(), vec![value.to_owned()]);
        }
    };
    if let Some(pod) = &private.pod {
        add(POD_NAME, &pod.name);
        add(POD_UID, &pod.uid);
    }
    if let Some(node) = &private.node {
        add(NODE_NAME, &node.name);
        add(NODE_UID, &node.uid);
    }
    if !claims.jti.is_empty() {
        add(CREDENTIAL_ID, &format!("JTI={}", claims.jti));
    }
    user.extra = extra;
    user
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::auth::service_account::jwt::Private;

    #[test]
    fn the_user_is_upstreams() {
        let claims = Claims {
            jti: "abc".into(),
            kubernetes: Private {
                namespace: "team".into(),
                serviceaccount: Ref {
                    name: "builder".into(),
                    uid: "u1".into(),
                },
                pod: Some(Ref {
                    name: "p".into(),
                    uid: "u2".into(),
                }),
                ..Private::default()
            },
            ..Claims::default()
        };
        let user = account_user(&claims);
        assert_eq!(user.username, "system:serviceaccount:team:builder");
        assert_eq!(user.uid, "u1");
        assert_eq!(
            user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:team"]
        );
        assert_eq!(user.extra[POD_NAME], ["p"]);
        assert_eq!(user.extra[POD_UID], ["u2"]);
        assert_eq!(user.extra[CREDENTIAL_ID], ["JTI=abc"]);
    }
}
