//! Service-account token Secrets, as kube-controller-manager's tokens controller keeps them
//! (`pkg/controller/serviceaccount/tokens_controller.go`):
//! - a Secret of type `kubernetes.io/service-account-token` whose
//!   `kubernetes.io/service-account.name` annotation names an existing account (with the uid
//!   of `kubernetes.io/service-account.uid`, when given) gets what it lacks: the uid
//!   annotation, a legacy `token` (`auth::service_account::legacy`), `namespace`, and the
//!   server's CA bundle as `ca.crt`; one whose account does not exist, is being deleted or has
//!   another uid is deleted, so deleting an account deletes its tokens;
//! - a deleted token Secret is taken out of its account's `secrets`;
//! - in releases before 1.24 (LegacyServiceAccountTokenNoAutoGeneration), every account without
//!   a token Secret among its `secrets` gets one, `<account>-token-<5 random>`, referenced
//!   there.
//!
//! Only for a server that signs service-account tokens and serves the core Secret and
//! ServiceAccount.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::sync::watch as signal;

use crate::KubeVersion;
use crate::storage::{CreateError, DeleteError, Storage, UpdateError, WatchEvent};

use crate::server::auth::service_account::SigningKey;
use crate::server::auth::service_account::legacy;
use crate::server::background::{TaskError, spawn_follower};
use crate::server::objects::generated_names::random_suffix;
use crate::server::state::State;
use crate::server::state::keys;

/// The Secret type of service-account tokens.
const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotations naming the account (`ServiceAccountNameKey`, `ServiceAccountUIDKey`).
const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

/// The first release that makes no token Secrets by itself.
const NO_AUTO_GENERATION_SINCE: KubeVersion = KubeVersion::new(1, 24);

/// How often adding a new token to its account is tried against concurrent changes
/// (`clientretry.DefaultRetry`'s steps).
const REFERENCE_ATTEMPTS: usize = 5;

/// How long the task waits before listing again after a watch failed.
const RESYNC_AFTER: Duration = Duration::from_millis(500);

/// What the controller writes into tokens.
#[derive(Debug, Clone)]
pub(crate) struct Tokens {
    /// Signs the tokens (the server's service-account key).
    pub(crate) key: SigningKey,
    /// The CA bundle written as `ca.crt`, if the server has one.
    pub(crate) ca: Option<Arc<str>>,
}

/// Whether the server runs the controller: it signs tokens and serves both kinds.
pub(crate) fn runs(state: &State) -> bool {
    let registry = state.registry();
    state.access.service_accounts.is_some()
        && registry.get("", "v1", "secrets").is_some()
        && registry.get("", "v1", "serviceaccounts").is_some()
}

fn secrets_prefix() -> String {
    keys::prefix_of("", "secrets")
}

fn accounts_prefix() -> String {
    keys::prefix_of("", "serviceaccounts")
}

/// A stored object, its mod revision and its key.
struct Stored {
    key: String,
    object: Value,
    revision: u64,
}

async fn read(state: &State, key: String) -> Result<Option<Stored>, TaskError> {
    let Some(kv) = state.storage.get(&key, None).await? else {
        return Ok(None);
    };
    let object = serde_json::from_slice(&kv.value).map_err(|source| TaskError::Stored {
        key: key.clone(),
        source,
    })?;
    Ok(Some(Stored {
        key,
        object,
        revision: kv.mod_revision,
    }))
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn annotation<'a>(object: &'a Value, key: &str) -> &'a str {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|stamp| !stamp.is_null())
}

/// The account a token Secret names (name, and uid when annotated); `None` for other Secrets.
fn token_owner(secret: &Value) -> Option<(&str, &str)> {
    let name = annotation(secret, NAME_ANNOTATION);
    (text(secret, "/type") == TOKEN_TYPE && !name.is_empty())
        .then(|| (name, annotation(secret, UID_ANNOTATION)))
}

/// Whether `secret` is a token of `account` (`IsServiceAccountToken`).
fn is_token_of(secret: &Value, account: &Value) -> bool {
    token_owner(secret).is_some_and(|(name, uid)| {
        name == text(account, "/metadata/name")
            && (uid.is_empty() || uid == text(account, "/metadata/uid"))
    })
}

/// The names in an account's `secrets`.
fn references(account: &Value) -> Vec<String> {
    account
        .get("secrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// The data a token Secret of `account` should hold that it lacks or holds wrong
/// (`generateTokenIfNeeded`): the key and the base64 value.
fn missing_data(tokens: &Tokens, secret: &Value, account: &Value) -> Vec<(&'static str, String)> {
    let data = |key: &str| text(secret, &format!("/data/{key}"));
    let namespace = text(account, "/metadata/namespace");
    let mut missing = Vec::new();
    if data("token").is_empty() {
        let token = legacy::token(
            &tokens.key,
            namespace,
            (
                text(account, "/metadata/name"),
                text(account, "/metadata/uid"),
            ),
            text(secret, "/metadata/name"),
        );
        if let Some(token) = token {
            missing.push(("token", STANDARD.encode(token)));
        }
    }
    if let Some(ca) = &tokens.ca {
        let encoded = STANDARD.encode(ca.as_bytes());
        if data("ca.crt") != encoded {
            missing.push(("ca.crt", encoded));
        }
    }
    if data("namespace").is_empty() {
        missing.push(("namespace", STANDARD.encode(namespace)));
    }
    missing
}

/// Fills in or deletes the token Secret at `key` (see the module docs).
async fn sync_secret(state: &State, tokens: &Tokens, key: String) -> Result<(), TaskError> {
    let Some(mut secret) = read(state, key).await? else {
        return Ok(());
    };
    let Some((name, uid)) = token_owner(&secret.object) else {
        return Ok(());
    };
    let namespace = text(&secret.object, "/metadata/namespace").to_owned();
    let account_key = format!("{}{namespace}/{name}", accounts_prefix());
    let account = read(state, account_key).await?.filter(|account| {
        !deleting(&account.object)
            && (uid.is_empty() || uid == text(&account.object, "/metadata/uid"))
    });
    let Some(account) = account else {
        return match state
            .storage
            .delete(&secret.key, Some(secret.revision))
            .await
        {
            // Changed or gone meanwhile: its watch event brings it here again.
            Ok(_) | Err(DeleteError::NotFound | DeleteError::Conflict { .. }) => Ok(()),
            Err(source) => Err(TaskError::Delete {
                key: secret.key,
                source,
            }),
        };
    };
    let missing = missing_data(tokens, &secret.object, &account.object);
    if missing.is_empty() && !uid.is_empty() {
        return Ok(());
    }
    let account_uid = text(&account.object, "/metadata/uid").to_owned();
    let object = &mut secret.object;
    object["metadata"]["annotations"][UID_ANNOTATION] = json!(account_uid);
    if !object.get("data").is_some_and(Value::is_object) {
        object["data"] = json!({});
    }
    for (key, value) in missing {
        object["data"][key] = json!(value);
    }
    write_back(state, &secret).await
}

/// Writes `stored` back over the revision it was read at; a change meanwhile is no failure
/// (its watch event brings it back).
async fn write_back(state: &State, stored: &Stored) -> Result<(), TaskError> {
    let bytes = serde_json::to_vec(&stored.object).map_err(TaskError::Encode)?;
    match state
        .storage
        .update(&stored.key, bytes.into(), stored.revision)
        .await
    {
        Ok(_) | Err(UpdateError::Conflict { .. } | UpdateError::NotFound) => Ok(()),
        Err(source) => Err(TaskError::Update {
            key: stored.key.clone(),
            source,
        }),
    }
}

/// Gives the account at `key` a token Secret it references, if it has none
/// (`ensureReferencedToken`; releases before 1.24 only).
async fn ensure_token(state: &State, tokens: &Tokens, key: String) -> Result<(), TaskError> {
    let Some(account) = read(state, key.clone()).await? else {
        return Ok(());
    };
    if deleting(&account.object) {
        return Ok(());
    }
    if has_token(state, &account.object).await? {
        return Ok(());
    }
    let namespace = text(&account.object, "/metadata/namespace").to_owned();
    let account_name = text(&account.object, "/metadata/name");
    let name = format!("{account_name}-token-{}", random_suffix());
    let mut secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uuid::Uuid::new_v4().to_string(),
            "creationTimestamp": crate::time::Time::now(),
            "annotations": {
                NAME_ANNOTATION: account_name,
                UID_ANNOTATION: text(&account.object, "/metadata/uid"),
            },
        },
        "type": TOKEN_TYPE,
        "data": {},
    });
    for (key, value) in missing_data(tokens, &secret, &account.object) {
        secret["data"][key] = json!(value);
    }
    let secret_key = format!("{}{namespace}/{name}", secrets_prefix());
    let bytes = serde_json::to_vec(&secret).map_err(TaskError::Encode)?;
    match state.storage.create(&secret_key, bytes.into()).await {
        Ok(_) => {}
        // A name taken already: the account's next event tries another.
        Err(CreateError::AlreadyExists { .. }) => return Ok(()),
        Err(source) => {
            return Err(TaskError::Create {
                key: secret_key,
                source,
            });
        }
    }
    if !add_reference(state, &key, &name).await? {
        // The account went, kept changing, or got its token from another server over the
        // same store meanwhile: this token is of no use.
        let _ = state.storage.delete(&secret_key, None).await;
    }
    Ok(())
}

/// Whether `account` references a token Secret of its own that exists.
async fn has_token(state: &State, account: &Value) -> Result<bool, TaskError> {
    let namespace = text(account, "/metadata/namespace");
    for name in references(account) {
        let secret_key = format!("{}{namespace}/{name}", secrets_prefix());
        if let Some(secret) = read(state, secret_key).await?
            && is_token_of(&secret.object, account)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Appends `secret` to the `secrets` of the account at `key`; `false` when the account is
/// gone, kept changing, or has a token already: replicas over one store each run this
/// controller, and the first to reference its token wins (the update is conditional on the
/// revision read, so two never both see the account without one).
async fn add_reference(state: &State, key: &str, secret: &str) -> Result<bool, TaskError> {
    for _ in 0..REFERENCE_ATTEMPTS {
        let Some(mut account) = read(state, key.to_owned()).await? else {
            return Ok(false);
        };
        if has_token(state, &account.object).await? {
            return Ok(false);
        }
        let object = &mut account.object;
        if !object.get("secrets").is_some_and(Value::is_array) {
            object["secrets"] = json!([]);
        }
        if let Some(list) = object["secrets"].as_array_mut() {
            list.push(json!({"name": secret}));
        }
        let bytes = serde_json::to_vec(&account.object).map_err(TaskError::Encode)?;
        match state
            .storage
            .update(key, bytes.into(), account.revision)
            .await
        {
            Ok(_) => return Ok(true),
            Err(UpdateError::Conflict { .. }) => continue,
            Err(UpdateError::NotFound) => return Ok(false),
            Err(source) => {
                return Err(TaskError::Update {
                    key: key.to_owned(),
                    source,
                });
            }
        }
    }
    Ok(false)
}

/// Takes the deleted token Secret `secret` out of its account's `secrets`
/// (`removeSecretReference`).
async fn remove_reference(
    state: &State,
    namespace: &str,
    owner: (&str, &str),
    secret: &str,
) -> Result<(), TaskError> {
    let (name, uid) = owner;
    let key = format!("{}{namespace}/{name}", accounts_prefix());
    let Some(mut account) = read(state, key).await? else {
        return Ok(());
    };
    if !uid.is_empty() && uid != text(&account.object, "/metadata/uid") {
        return Ok(());
    }
    let Some(list) = account
        .object
        .get_mut("secrets")
        .and_then(Value::as_array_mut)
    else {
        return Ok(());
    };
    let before = list.len();
    list.retain(|r| r.get("name").and_then(Value::as_str) != Some(secret));
    if list.len() == before {
        return Ok(());
    }
    write_back(state, &account).await
}

/// One pass over every account and token Secret; answers the revision to watch from.
async fn sync_all(state: &State, tokens: &Tokens) -> Result<u64, TaskError> {
    let accounts = state
        .storage
        .list(&accounts_prefix(), None, None, None)
        .await?;
    if auto_generates(state) {
        for kv in &accounts.items {
            ensure_token(state, tokens, kv.key.clone()).await?;
        }
    }
    let secrets = state
        .storage
        .list(&secrets_prefix(), None, None, None)
        .await?;
    for kv in &secrets.items {
        sync_secret(state, tokens, kv.key.clone()).await?;
    }
    Ok(accounts.revision)
}

fn auto_generates(state: &State) -> bool {
    state.kube_version < NO_AUTO_GENERATION_SINCE
}

/// Keeps token Secrets until `stop`: a pass over every account and Secret (see [`sync_all`]),
/// then their watches, again after a watch ends or a pass fails. The server does not wait for
/// the first pass, as kube-apiserver does not wait for kube-controller-manager: a Secret that
/// cannot be read (encrypted with a key the server lacks) fails the pass, not the start.
pub(crate) fn spawn(state: State, tokens: Tokens, stop: signal::Receiver<bool>) {
    let tokens = Arc::new(tokens);
    let follow = move |state: State, _: Option<()>| {
        let tokens = Arc::clone(&tokens);
        async move { follow(&state, &tokens).await }
    };
    spawn_follower(
        state,
        (),
        stop,
        RESYNC_AFTER,
        "keeping service-account token Secrets",
        follow,
    );
}

/// A pass, then the watches of accounts and Secrets after it; returns when a watch ends.
async fn follow(state: &State, tokens: &Tokens) -> Result<(), TaskError> {
    let revision = sync_all(state, tokens).await?;
    let (accounts, secrets) = (accounts_prefix(), secrets_prefix());
    // Secrets with their previous values: a deleted token names the account to update.
    let (Ok(mut account_events), Ok(mut secret_events)) = (
        state.storage.watch_without_prev(&accounts, revision).await,
        state.storage.watch(&secrets, revision).await,
    ) else {
        return Ok(());
    };
    let auto = auto_generates(state);
    loop {
        let event = tokio::select! {
            event = account_events.next() => event,
            event = secret_events.next() => event,
        };
        let Some(Ok(event)) = event else {
            return Ok(());
        };
        match event {
            WatchEvent::Put { kv, .. } if kv.key.starts_with(&accounts) => {
                if auto {
                    ensure_token(state, tokens, kv.key).await?;
                }
            }
            WatchEvent::Put { kv, .. } => sync_secret(state, tokens, kv.key).await?,
            // An account gone: its tokens go (each is looked at again).
            WatchEvent::Delete { prev, .. } if prev.key.starts_with(&accounts) => {
                let Some(namespace) = prev
                    .key
                    .strip_prefix(&accounts)
                    .and_then(|rest| rest.split_once('/'))
                    .map(|(namespace, _)| namespace)
                else {
                    continue;
                };
                let prefix = format!("{secrets}{namespace}/");
                let listed = state.storage.list(&prefix, None, None, None).await?;
                for kv in listed.items {
                    sync_secret(state, tokens, kv.key).await?;
                }
            }
            WatchEvent::Delete { prev, .. } => {
                let Ok(secret) = serde_json::from_slice::<Value>(&prev.value) else {
                    continue;
                };
                let Some(owner) = token_owner(&secret) else {
                    continue;
                };
                let namespace = text(&secret, "/metadata/namespace");
                let name = text(&secret, "/metadata/name");
                remove_reference(state, namespace, owner, name).await?;
                if auto {
                    let key = format!("{accounts}{namespace}/{}", owner.0);
                    ensure_token(state, tokens, key).await?;
                }
            }
            WatchEvent::Progress { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_belong_to_the_account_they_name() {
        let account = json!({"metadata": {"name": "builder", "namespace": "team", "uid": "u1"}});
        let token = |name: &str, uid: &str| {
            json!({"type": TOKEN_TYPE, "metadata": {"annotations": {
                NAME_ANNOTATION: name, UID_ANNOTATION: uid}}})
        };
        assert!(is_token_of(&token("builder", "u1"), &account));
        assert!(is_token_of(&token("builder", ""), &account));
        assert!(!is_token_of(&token("builder", "u2"), &account));
        assert!(!is_token_of(&token("other", "u1"), &account));
        let opaque =
            json!({"type": "Opaque", "metadata": {"annotations": {NAME_ANNOTATION: "builder"}}});
        assert!(!is_token_of(&opaque, &account));
    }

    #[test]
    fn a_token_gets_what_it_lacks() {
        let tokens = Tokens {
            key: SigningKey::generate().unwrap(),
            ca: Some(Arc::from("PEM")),
        };
        let account = json!({"metadata": {"name": "builder", "namespace": "team", "uid": "u1"}});
        let empty = json!({"metadata": {"name": "builder-token-x"}});
        let missing = missing_data(&tokens, &empty, &account);
        let keys: Vec<&str> = missing.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, ["token", "ca.crt", "namespace"]);
        let full = json!({"metadata": {"name": "builder-token-x"}, "data": {
            "token": "dA==", "ca.crt": STANDARD.encode("PEM"), "namespace": "dGVhbQ=="}});
        assert!(missing_data(&tokens, &full, &account).is_empty());
    }
}
