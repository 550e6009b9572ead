//! Legacy service-account tokens: the long-lived tokens kept in Secrets of type
//! `kubernetes.io/service-account-token`, which kube-controller-manager's tokens controller
//! writes (`background::token_secrets` here) and kube-apiserver authenticates
//! (`pkg/serviceaccount/legacy.go`).
//!
//! Such a token is a JWT of issuer `kubernetes/serviceaccount` without audiences or times,
//! naming the namespace, the account and its uid, and the Secret it is kept in, in flat
//! `kubernetes.io/serviceaccount/...` claims (`LegacyClaims`). It authenticates for the API
//! audiences while the Secret exists, is not being deleted and still holds exactly this token,
//! and the account exists with the uid it names. From 1.27 (LegacyServiceAccountTokenTracking)
//! each use marks the Secret with the day it was last used (label
//! `kubernetes.io/legacy-token-last-used`, written at most once a day), and from 1.29
//! (LegacyServiceAccountTokenCleanUp) a Secret labelled `kubernetes.io/legacy-token-invalid-since`
//! no longer authenticates.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::KubeVersion;
use crate::server::auth::service_account::jwt::{self, Parsed};
use crate::server::auth::service_account::keys::SigningKey;
use crate::server::auth::user::{User, service_account};
use crate::server::state::keys;
use crate::storage::Storage;

/// The issuer of legacy tokens (`LegacyIssuer`).
pub(crate) const ISSUER: &str = "kubernetes/serviceaccount";

/// The label a use of the token sets to the day (`LastUsedLabelKey`).
const LAST_USED_LABEL: &str = "kubernetes.io/legacy-token-last-used";
/// The label that invalidates the token (`InvalidSinceLabelKey`).
const INVALID_SINCE_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

/// The first release that records the last use (LegacyServiceAccountTokenTracking beta).
const TRACKED_SINCE: KubeVersion = KubeVersion::new(1, 27);
/// The first release that honours the invalid-since label (LegacyServiceAccountTokenCleanUp
/// beta).
const INVALIDATED_SINCE: KubeVersion = KubeVersion::new(1, 29);

/// Upstream's words for a token whose Secret is gone, going or marked invalid.
const INVALIDATED: &str = "Token has been invalidated";

/// A legacy token's claims, in the order Go writes a map's keys (`LegacyClaims`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LegacyClaims {
    #[serde(default)]
    pub(crate) iss: String,
    #[serde(default, rename = "kubernetes.io/serviceaccount/namespace")]
    pub(crate) namespace: String,
    #[serde(default, rename = "kubernetes.io/serviceaccount/secret.name")]
    pub(crate) secret_name: String,
    #[serde(default, rename = "kubernetes.io/serviceaccount/service-account.name")]
    pub(crate) account_name: String,
    #[serde(default, rename = "kubernetes.io/serviceaccount/service-account.uid")]
    pub(crate) account_uid: String,
    #[serde(default)]
    pub(crate) sub: String,
}

/// The token of the account `account` (name and uid) of `namespace`, kept in Secret `secret`.
pub(crate) fn token(
    key: &SigningKey,
    namespace: &str,
    account: (&str, &str),
    secret: &str,
) -> Option<String> {
    let (name, uid) = account;
    let claims = LegacyClaims {
        iss: ISSUER.to_owned(),
        namespace: namespace.to_owned(),
        secret_name: secret.to_owned(),
        account_name: name.to_owned(),
        account_uid: uid.to_owned(),
        sub: service_account(namespace, name).username,
    };
    jwt::sign(key, &claims)
}

/// The claims' own checks (`legacyValidator.Validate` before its lookups).
fn check_claims(claims: &LegacyClaims) -> Result<(), &'static str> {
    let missing = [
        (claims.sub.is_empty(), "sub claim is missing"),
        (claims.namespace.is_empty(), "namespace claim is missing"),
        (claims.secret_name.is_empty(), "secretName claim is missing"),
        (
            claims.account_name.is_empty(),
            "serviceAccountName claim is missing",
        ),
        (
            claims.account_uid.is_empty(),
            "serviceAccountUID claim is missing",
        ),
    ];
    if let Some((_, message)) = missing.iter().find(|(missing, _)| *missing) {
        return Err(message);
    }
    if claims.sub != service_account(&claims.namespace, &claims.account_name).username {
        return Err("sub claim is invalid");
    }
    let segment_ok = |s: &str| crate::server::http::path::is_path_segment(s);
    if ![&claims.namespace, &claims.secret_name, &claims.account_name]
        .iter()
        .all(|s| segment_ok(s))
    {
        return Err(INVALIDATED);
    }
    Ok(())
}

/// A stored object and its mod revision, or `None`.
async fn read(storage: &dyn Storage, key: &str) -> Result<Option<(Value, u64)>, String> {
    let kv = storage.get(key, None).await.map_err(|e| e.to_string())?;
    let Some(kv) = kv else { return Ok(None) };
    let object = serde_json::from_slice(&kv.value).map_err(|e| e.to_string())?;
    Ok(Some((object, kv.mod_revision)))
}

fn deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|stamp| !stamp.is_null())
}

fn label<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(key))
        .and_then(Value::as_str)
}

/// Authenticates a legacy token (`token`, parsed as `parsed`) signed by one of `keys`, for
/// the `wanted` audiences among the API's `audiences`: the account's user and the audiences,
/// or upstream's error. `release` decides the last-use mark and the invalid-since label.
pub(crate) async fn authenticate(
    storage: &dyn Storage,
    token: &str,
    parsed: &Parsed<'_, LegacyClaims>,
    keys: &[super::VerificationKey],
    audiences: &[String],
    wanted: Option<&[String]>,
    release: KubeVersion,
) -> Result<(User, Vec<String>), String> {
    if !parsed.signed_by_any(keys) {
        return Err("invalid signature".to_owned());
    }
    // A token without audiences is for the API's (`JWTTokenAuthenticator`'s implicit ones).
    let audiences = jwt::check_audiences(audiences, wanted.unwrap_or(audiences))?;
    let claims = &parsed.claims;
    check_claims(claims)?;
    let namespace = &claims.namespace;
    let secret_key = format!(
        "{}{namespace}/{}",
        keys::prefix_of("", "secrets"),
        claims.secret_name
    );
    let Some((mut secret, revision)) = read(storage, &secret_key).await? else {
        return Err(INVALIDATED.to_owned());
    };
    if deleting(&secret) {
        return Err(INVALIDATED.to_owned());
    }
    let kept = secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .and_then(|text| STANDARD.decode(text).ok());
    if kept.as_deref() != Some(token.as_bytes()) {
        return Err("Token does not match server's copy".to_owned());
    }
    if release >= INVALIDATED_SINCE && label(&secret, INVALID_SINCE_LABEL).is_some() {
        return Err(INVALIDATED.to_owned());
    }
    let account_key = format!(
        "{}{namespace}/{}",
        keys::prefix_of("", "serviceaccounts"),
        claims.account_name
    );
    let name = &claims.account_name;
    let Some((account, _)) = read(storage, &account_key).await? else {
        return Err(format!("serviceaccounts \"{name}\" not found"));
    };
    if deleting(&account) {
        return Err(format!(
            "ServiceAccount {namespace}/{name} has been deleted"
        ));
    }
    let uid = account
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if uid != claims.account_uid {
        return Err(format!(
            "ServiceAccount UID ({uid}) does not match claim ({})",
            claims.account_uid
        ));
    }
    if release >= TRACKED_SINCE {
        mark_used(storage, &secret_key, &mut secret, revision).await;
    }
    let mut user = service_account(namespace, name);
    user.uid = claims.account_uid.clone();
    Ok((user, audiences))
}

/// Labels the Secret with today's date (UTC) unless it already says today, as upstream's
/// validator updates it; a write that fails (a concurrent change) is left for the next use.
async fn mark_used(storage: &dyn Storage, key: &str, secret: &mut Value, revision: u64) {
    let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    if label(secret, LAST_USED_LABEL) == Some(today.as_str()) {
        return;
    }
    let Some(metadata) = secret.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = metadata
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if !labels.is_object() {
        *labels = Value::Object(Default::default());
    }
    labels[LAST_USED_LABEL] = Value::from(today);
    let Ok(bytes) = serde_json::to_vec(secret) else {
        return;
    };
    if let Err(error) = storage.update(key, bytes.into(), revision).await {
        tracing::debug!(%error, key, "recording a legacy token's last use");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_upstreams_flat_claims() {
        let key = SigningKey::generate().unwrap();
        let token = token(&key, "team", ("builder", "u1"), "builder-token-abcde").unwrap();
        let payload = token.split('.').nth(1).unwrap();
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap();
        assert_eq!(
            String::from_utf8(payload).unwrap(),
            r#"{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"team","kubernetes.io/serviceaccount/secret.name":"builder-token-abcde","kubernetes.io/serviceaccount/service-account.name":"builder","kubernetes.io/serviceaccount/service-account.uid":"u1","sub":"system:serviceaccount:team:builder"}"#
        );
        let parsed = jwt::parse_as::<LegacyClaims>(&token).unwrap();
        assert!(parsed.signed_by_any(&[key.public_key().clone()]));
        assert_eq!(check_claims(&parsed.claims), Ok(()));
    }

    #[test]
    fn claims_are_checked_in_upstreams_order() {
        let good = LegacyClaims {
            iss: ISSUER.into(),
            namespace: "team".into(),
            secret_name: "s".into(),
            account_name: "builder".into(),
            account_uid: "u1".into(),
            sub: "system:serviceaccount:team:builder".into(),
        };
        let with = |change: fn(&mut LegacyClaims)| {
            let mut claims = good.clone();
            change(&mut claims);
            check_claims(&claims)
        };
        assert_eq!(with(|c| c.sub.clear()), Err("sub claim is missing"));
        assert_eq!(
            with(|c| c.secret_name.clear()),
            Err("secretName claim is missing")
        );
        assert_eq!(
            with(|c| c.account_uid.clear()),
            Err("serviceAccountUID claim is missing")
        );
        assert_eq!(
            with(|c| c.sub = "system:serviceaccount:team:other".into()),
            Err("sub claim is invalid")
        );
    }
}
