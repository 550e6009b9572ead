//! Who a request is from: the user an authenticator found (or the one it impersonates), with
//! upstream's names for the users and groups every cluster knows
//! (`staging/src/k8s.io/apiserver/pkg/authentication/user/user.go`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The user of requests that carry no credentials, when anonymous requests are allowed.
pub(crate) const ANONYMOUS: &str = "system:anonymous";
/// The group of [`ANONYMOUS`].
pub(crate) const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group every authenticated user is in.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The group whose members every request is allowed to (upstream's `SystemPrivilegedGroup`).
pub(crate) const MASTERS: &str = "system:masters";
/// The user of a server without authentication: upstream's insecure port served every request
/// as this user, in [`MASTERS`] and [`AUTHENTICATED`]
/// (`staging/src/k8s.io/apiserver/pkg/server/deprecated_insecure_serving.go`).
pub(crate) const UNSECURED: &str = "system:unsecured";

/// A user as authenticators and `authentication.k8s.io`'s `UserInfo` describe it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct User {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) username: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) groups: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// A user named `name` in `groups`.
    pub(crate) fn new(name: impl Into<String>, groups: &[&str]) -> Self {
        Self {
            username: name.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// The user of every request to a server without authentication.
    pub(crate) fn unsecured() -> Self {
        Self::new(UNSECURED, &[MASTERS, AUTHENTICATED])
    }

    /// The user of a request without credentials.
    pub(crate) fn anonymous() -> Self {
        Self::new(ANONYMOUS, &[UNAUTHENTICATED])
    }

    /// Whether the user is in `group`.
    pub(crate) fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds [`AUTHENTICATED`] unless the user is anonymous or has it, as upstream's
    /// `AuthenticatedGroupAdder` does for every authenticated request.
    pub(crate) fn with_authenticated_group(mut self) -> Self {
        let anonymous = self.username == ANONYMOUS || self.in_group(UNAUTHENTICATED);
        if !anonymous && !self.in_group(AUTHENTICATED) {
            self.groups.push(AUTHENTICATED.to_owned());
        }
        self
    }
}

/// The group of every service account; `system:serviceaccounts:<namespace>` is the group of a
/// namespace's.
pub(crate) const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

/// Service account `name` of `namespace` as a user: `system:serviceaccount:<namespace>:<name>`
/// in the groups of all accounts and of its namespace's (upstream's `serviceaccount.UserInfo`).
pub(crate) fn service_account(namespace: &str, name: &str) -> User {
    User {
        username: format!("system:serviceaccount:{namespace}:{name}"),
        groups: service_account_groups(namespace),
        ..User::default()
    }
}

/// The groups of a service account of `namespace`.
pub(crate) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        SERVICE_ACCOUNTS.to_owned(),
        format!("{SERVICE_ACCOUNTS}:{namespace}"),
    ]
}

/// The service account a user name stands for: `system:serviceaccount:<namespace>:<name>`.
pub(crate) fn service_account_of(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authenticated_users_join_the_authenticated_group_once() {
        let alice = User::new("alice", &["dev"]).with_authenticated_group();
        assert_eq!(alice.groups, ["dev", AUTHENTICATED]);
        assert_eq!(alice.clone().with_authenticated_group(), alice);
        let anonymous = User::anonymous().with_authenticated_group();
        assert_eq!(anonymous.groups, [UNAUTHENTICATED]);
    }

    #[test]
    fn service_account_names() {
        let user = "system:serviceaccount:team:builder";
        assert_eq!(service_account_of(user), Some(("team", "builder")));
        assert_eq!(service_account_of("system:serviceaccount:team"), None);
        assert_eq!(service_account_of("alice"), None);
    }
}
