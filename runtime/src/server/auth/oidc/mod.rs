//! Structured JWT authentication (`--authentication-config`), as kube-apiserver's JWT
//! authenticators do it (`staging/src/k8s.io/apiserver/plugin/pkg/authenticator/token/oidc`):
//! a bearer token whose (unverified) `iss` is a configured issuer's URL belongs to that
//! issuer's authenticator, which verifies it with the issuer's keys (`keys`), checks its
//! expiry, not-before time and audiences, maps its claims to the user (a claim with a prefix,
//! or a CEL expression over `claims`), checks the required claims and the claim and user
//! validation rules, and answers the user or an error (401 for the client; the reason is
//! logged, as upstream logs it). A token of no configured issuer is left to the others.
//!
//! The configuration file and its checks are `config`'s. An issuer's keys may come from a
//! JSON Web Key Set file (kapi's `--authentication-config-jwks`, for issuers a server cannot
//! or should not reach; upstream has only the fetch). Otherwise keys are fetched when a token first
//! needs them and again when none of the cached keys verifies a token, at most once per
//! [`REFETCH_INTERVAL`] (upstream fetches at start-up and on every verification failure);
//! verifications read the cached keys without waiting on each other.
//!
//! The authenticators in force are reloaded when their files change (`reload`); the
//! configuration's `anonymous` section decides anonymous authentication in place of
//! `--anonymous-auth` (in `authn`).
//!
//! A groups claim a token holds elsewhere (distributed claims) is fetched from its source
//! (`distributed`). Not done: the egress selector (kapi has one network).

mod config;
mod distributed;
mod keys;
mod reload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rustls::RootCertStore;
use serde_json::{Map, Value};

use ::cel::Value as Cel;

use crate::cel::{self, value::untyped};
use crate::server::auth::service_account::jwt;
use crate::server::auth::user::User;
use crate::server::http::client;

pub(crate) use config::AnonymousConfig;
pub use config::AuthenticationConfigError;
use config::{CLAIMS, Compiled, JwtAuthenticator, USER};
use keys::Jwk;
pub(crate) use reload::LiveJwt;

/// The least time between two fetches of one issuer's keys.
const REFETCH_INTERVAL: Duration = Duration::from_secs(10);
/// go-oidc's leeway on a token's `nbf`.
const NOT_BEFORE_LEEWAY_SECONDS: i64 = 5 * 60;

/// The JWT authenticators of one configuration, tried in order.
#[derive(Debug, Default)]
pub(crate) struct JwtAuthenticators {
    authenticators: Vec<Authenticator>,
}

/// One issuer's authenticator.
#[derive(Debug)]
struct Authenticator {
    config: JwtAuthenticator,
    compiled: Compiled,
    roots: Arc<RootCertStore>,
    keys: RwLock<Cached>,
    /// Held while the keys are fetched, so that one fetch serves everyone waiting.
    fetching: tokio::sync::Mutex<()>,
    /// Whether the keys came from a file: then they are never fetched.
    from_file: bool,
    /// The keys of other issuers of distributed claims.
    foreign_keys: distributed::ForeignKeys,
}

/// The keys fetched last, and when.
#[derive(Debug, Default, Clone)]
struct Cached {
    keys: Arc<Vec<Jwk>>,
    fetched: Option<Instant>,
}

/// The files one configuration is read from: the `--authentication-config` file and the JSON
/// Web Key Set files of `--authentication-config-jwks`, with the issuers no authenticator may
/// claim (the server's own service-account issuers).
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    pub(crate) path: PathBuf,
    pub(crate) disallowed: Vec<String>,
    /// Key set files by issuer URL: that issuer's tokens are verified with these keys, which
    /// are then never fetched.
    pub(crate) key_files: BTreeMap<String, PathBuf>,
}

impl Sources {
    /// Every file's bytes: the configuration first, then the key sets in issuer order.
    fn read(&self) -> Result<Vec<Vec<u8>>, AuthenticationConfigError> {
        std::iter::once(&self.path)
            .chain(self.key_files.values())
            .map(|path| {
                std::fs::read(path).map_err(|source| AuthenticationConfigError::Io {
                    path: path.display().to_string(),
                    source,
                })
            })
            .collect()
    }

    /// The authenticators and the `anonymous` section of the files' bytes (as [`Sources::read`]
    /// answers them).
    fn load(
        &self,
        texts: &[Vec<u8>],
    ) -> Result<(JwtAuthenticators, Option<AnonymousConfig>), AuthenticationConfigError> {
        let (config, key_texts) = texts
            .split_first()
            .map_or((&[][..], &[][..]), |(config, keys)| {
                (config.as_slice(), keys)
            });
        let mut key_sets = BTreeMap::new();
        for ((issuer, file), text) in self.key_files.iter().zip(key_texts) {
            let keys =
                keys::parse_key_set(text).map_err(|reason| AuthenticationConfigError::Decode {
                    path: file.display().to_string(),
                    reason,
                })?;
            key_sets.insert(issuer.clone(), keys);
        }
        let loaded = config::load(config, &self.path.display().to_string(), &self.disallowed)?;
        let jwt = JwtAuthenticators::new(loaded.jwt, key_sets)?;
        Ok((jwt, loaded.anonymous))
    }
}

impl JwtAuthenticators {
    /// The authenticators of a loaded configuration, with the key sets read from files.
    fn new(
        loaded: Vec<(JwtAuthenticator, Compiled)>,
        mut key_sets: BTreeMap<String, Vec<Jwk>>,
    ) -> Result<Self, AuthenticationConfigError> {
        let authenticators: Vec<Authenticator> = loaded
            .into_iter()
            .map(|(config, compiled)| {
                let roots = match config.issuer.certificate_authority.as_str() {
                    "" => client::system_roots(),
                    pem => {
                        client::roots_of_pem(pem.as_bytes()).unwrap_or_else(RootCertStore::empty)
                    }
                };
                let fixed = key_sets.remove(&config.issuer.url);
                Authenticator {
                    from_file: fixed.is_some(),
                    keys: RwLock::new(Cached {
                        keys: Arc::new(fixed.unwrap_or_default()),
                        fetched: None,
                    }),
                    config,
                    compiled,
                    roots: Arc::new(roots),
                    fetching: tokio::sync::Mutex::new(()),
                    foreign_keys: distributed::ForeignKeys::default(),
                }
            })
            .collect();
        if let Some(issuer) = key_sets.keys().next() {
            return Err(AuthenticationConfigError::Invalid(format!(
                "keys were given for {issuer:?}, which the configuration names no authenticator for"
            )));
        }
        Ok(Self { authenticators })
    }

    /// Whether any issuer is configured.
    pub(crate) fn is_empty(&self) -> bool {
        self.authenticators.is_empty()
    }

    /// The user `token` stands for: `None` when no configured issuer issued it, else the
    /// issuer's verdict (its error is for the log).
    pub(crate) async fn authenticate(&self, token: &str) -> Option<Result<User, String>> {
        let parsed = jwt::parse_as::<Map<String, Value>>(token)?;
        let issuer = parsed.claims.get("iss").and_then(Value::as_str)?;
        let authenticator = self
            .authenticators
            .iter()
            .find(|a| a.config.issuer.url == issuer)?;
        Some(authenticator.authenticate(&parsed).await)
    }
}

impl Authenticator {
    async fn authenticate(
        &self,
        token: &jwt::Parsed<'_, Map<String, Value>>,
    ) -> Result<User, String> {
        self.verify_signature(token).await?;
        let mut claims = &token.claims;
        check_times(claims, jiff::Timestamp::now().as_second())?;
        self.check_audience(claims)?;
        let expanded;
        if claims.contains_key("_claim_names") {
            let mut all = claims.clone();
            tokio::time::timeout(
                distributed::DEADLINE,
                self.expand_distributed_claims(&mut all),
            )
            .await
            .unwrap_or_else(|_| Err("context deadline exceeded".to_owned()))
            .map_err(|e| format!("oidc: could not expand distributed claims: {e}"))?;
            expanded = all;
            claims = &expanded;
        }
        let claims_value = Value::Object(claims.clone());
        let bound = untyped(&claims_value);
        let run = |program: &cel::Program, what: &str| {
            program
                .evaluate(&[(CLAIMS, bound.clone())], cel::PER_CALL_LIMIT)
                .result
                .map_err(|e| {
                    format!(
                        "oidc: error evaluating {what} claim expression: {}",
                        eval_error(&e)
                    )
                })
        };
        let mappings = &self.config.claim_mappings;
        let username = match &self.compiled.username {
            Some(program) => match run(program, "username")? {
                Cel::String(name) => name.to_string(),
                _ => {
                    return Err("oidc: error evaluating username claim expression: username claim expression must return a string".into());
                }
            },
            None => claim_username(
                claims,
                &mappings.username.claim,
                mappings.username.prefix.as_deref(),
            )?,
        };
        let mut user = User::new(username, &[]);
        let groups_claim = &mappings.groups.claim;
        if !groups_claim.is_empty() && claims.contains_key(groups_claim) {
            let prefix = mappings.groups.prefix.as_deref().unwrap_or("");
            user.groups = string_or_array(claims.get(groups_claim))
                .ok_or_else(|| format!("oidc: parse groups claim {groups_claim:?}: not a string or an array of strings"))?
                .into_iter()
                .map(|group| format!("{prefix}{group}"))
                .collect();
        } else if let Some(program) = &self.compiled.groups {
            user.groups = string_list(&run(program, "group")?)
                .map_err(|e| format!("oidc: error evaluating group claim expression: {e}"))?;
        }
        let uid_claim = &mappings.uid.claim;
        if !uid_claim.is_empty() {
            user.uid = claims
                .get(uid_claim)
                .and_then(Value::as_str)
                .ok_or_else(|| format!("oidc: parse uid claim {uid_claim:?}: claim not present"))?
                .to_owned();
        } else if let Some(program) = &self.compiled.uid {
            match run(program, "uid")? {
                Cel::String(uid) => user.uid = uid.to_string(),
                _ => return Err("oidc: error evaluating uid claim expression: uid claim expression must return a string".into()),
            }
        }
        for (key, program) in &self.compiled.extra {
            let values = string_list(&run(program, "extra")?).map_err(|e| {
                format!(
                    "oidc: error evaluating extra claim expression: {}: {e}",
                    program.source()
                )
            })?;
            if !values.is_empty() {
                user.extra.insert(key.clone(), values);
            }
        }
        self.check_required_claims(claims)?;
        for (program, message) in &self.compiled.claim_rules {
            passes(&run(program, "claim validation")?, program, message)
                .map_err(|e| format!("oidc: error evaluating claim validation expression: {e}"))?;
        }
        if !self.compiled.user_rules.is_empty() {
            let bound_user = untyped(&serde_json::json!({
                "username": user.username,
                "uid": user.uid,
                "groups": user.groups,
                "extra": user.extra,
            }));
            for (program, message) in &self.compiled.user_rules {
                let result = program
                    .evaluate(&[(USER, bound_user.clone())], cel::PER_CALL_LIMIT)
                    .result
                    .map_err(|e| {
                        format!(
                            "oidc: error evaluating user info validation rule: {}",
                            eval_error(&e)
                        )
                    })?;
                passes(&result, program, message).map_err(|e| {
                    format!("oidc: error evaluating user info validation rule: {e}")
                })?;
            }
        }
        Ok(user)
    }

    /// A signature by one of the issuer's keys (those of the header's key id, when it names
    /// one), fetching the keys when none are cached or none verifies. Verifying takes the
    /// cached keys without waiting on anyone; only a fetch is serialized.
    async fn verify_signature(
        &self,
        token: &jwt::Parsed<'_, Map<String, Value>>,
    ) -> Result<(), String> {
        const UNVERIFIED: &str =
            "oidc: verify token: failed to verify signature: failed to verify id token signature";
        supported_algorithm(token).map_err(|e| format!("oidc: verify token: {e}"))?;
        let verified_by = |keys: &[Jwk]| signed_by(token, keys);
        let cached = self
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if verified_by(&cached.keys) {
            return Ok(());
        }
        if self.from_file {
            return Err(UNVERIFIED.into());
        }
        let _fetching = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        let latest = self
            .keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if !Arc::ptr_eq(&latest.keys, &cached.keys) && verified_by(&latest.keys) {
            return Ok(());
        }
        if latest
            .fetched
            .is_some_and(|at| at.elapsed() < REFETCH_INTERVAL)
        {
            return Err(UNVERIFIED.into());
        }
        let issuer = &self.config.issuer;
        let fetched = keys::fetch(&issuer.url, &issuer.discovery_url, self.roots.clone()).await;
        let mut cache = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        cache.fetched = Some(Instant::now());
        match fetched {
            Ok(fresh) => cache.keys = Arc::new(fresh),
            Err(error) => {
                tracing::warn!(issuer = %self.config.issuer.url, %error, "oidc authenticator: fetching the issuer's keys failed");
                return Err(format!(
                    "oidc: verify token: failed to verify signature: fetching keys {error}"
                ));
            }
        }
        if verified_by(&cache.keys) {
            Ok(())
        } else {
            Err(UNVERIFIED.into())
        }
    }

    /// At least one of the token's audiences among the configured ones (`MatchAny`).
    fn check_audience(&self, claims: &Map<String, Value>) -> Result<(), String> {
        let audiences = string_or_array(claims.get("aud")).unwrap_or_default();
        let wanted = &self.config.issuer.audiences;
        if audiences.iter().any(|a| wanted.contains(a)) {
            return Ok(());
        }
        let mut sorted = wanted.clone();
        sorted.sort();
        Err(format!(
            "oidc: verify token: {}",
            audience_error(&sorted, &audiences)
        ))
    }

    /// The claim validation rules that name a claim and its required value.
    fn check_required_claims(&self, claims: &Map<String, Value>) -> Result<(), String> {
        for rule in &self.config.claim_validation_rules {
            if rule.claim.is_empty() {
                continue;
            }
            let Some(value) = claims.get(&rule.claim) else {
                return Err(format!(
                    "oidc: required claim {} not present in ID token",
                    rule.claim
                ));
            };
            let Some(value) = value.as_str() else {
                return Err(format!("oidc: parse claim {}: not a string", rule.claim));
            };
            if value != rule.required_value {
                return Err(format!(
                    "oidc: required claim {} value does not match. Got = {value}, want = {}",
                    rule.claim, rule.required_value
                ));
            }
        }
        Ok(())
    }
}

/// go-oidc's refusal of a token signed with an algorithm it does not verify.
fn supported_algorithm(token: &jwt::Parsed<'_, Map<String, Value>>) -> Result<(), String> {
    let alg = token.alg();
    if SIGNING_ALGORITHMS.contains(&alg) {
        Ok(())
    } else {
        Err(format!(
            "oidc: id token signed with unsupported algorithm, expected {SIGNING_ALGORITHMS:?} got {alg:?}"
        ))
    }
}

/// Whether one of `keys` (those of the header's key id, when it names one) signed `token`.
fn signed_by(token: &jwt::Parsed<'_, Map<String, Value>>, keys: &[Jwk]) -> bool {
    let alg = token.alg();
    keys.iter()
        .filter(|key| token.kid().is_empty() || key.kid() == token.kid())
        .any(|key| token.signed_with(|message, signature| key.verifies(alg, message, signature)))
}

/// The algorithms a token may be signed with (upstream allows every algorithm go-oidc knows
/// when the configuration file is used; these are the ones kapi verifies).
const SIGNING_ALGORITHMS: &[&str] = &[
    "ES256", "ES384", "PS256", "PS384", "PS512", "RS256", "RS384", "RS512",
];

/// go-oidc's time checks: `exp` in the future, `nbf` (if any) past, with its leeway.
fn check_times(claims: &Map<String, Value>, now: i64) -> Result<(), String> {
    let time = |name: &str| claims.get(name).and_then(Value::as_f64).map(|t| t as i64);
    let expiry = time("exp").unwrap_or(0);
    if expiry < now {
        return Err(format!(
            "oidc: verify token: oidc: token is expired (Token Expiry: {expiry})"
        ));
    }
    if let Some(not_before) = time("nbf")
        && now + NOT_BEFORE_LEEWAY_SECONDS < not_before
    {
        return Err(format!(
            "oidc: verify token: oidc: current time {now} before the nbf (not before) time: {not_before}"
        ));
    }
    Ok(())
}

/// The username of a claim mapping: the claim's string, prefixed; an `email` claim needs
/// `email_verified` true when the token has it.
fn claim_username(
    claims: &Map<String, Value>,
    claim: &str,
    prefix: Option<&str>,
) -> Result<String, String> {
    let name = claims
        .get(claim)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("oidc: parse username claims {claim:?}: claim not present"))?;
    if claim == "email"
        && let Some(verified) = claims.get("email_verified")
    {
        match verified.as_bool() {
            Some(true) => {}
            Some(false) => return Err("oidc: email not verified".into()),
            None => return Err("oidc: parse 'email_verified' claim: not a boolean".into()),
        }
    }
    Ok(format!("{}{name}", prefix.unwrap_or("")))
}

/// An evaluation error as a sentence.
fn eval_error(error: &cel::EvalError) -> String {
    match error {
        cel::EvalError::CostLimit => "operation cancelled: actual cost limit exceeded".into(),
        cel::EvalError::Failed(message) => message.clone(),
    }
}

/// A claim that is a string or an array of strings (`stringOrArray`).
fn string_or_array(value: Option<&Value>) -> Option<Vec<String>> {
    match value? {
        Value::String(one) => Some(vec![one.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    }
}

/// An expression's string or list of strings, empty strings left out, null as none
/// (`convertCELValueToStringList`).
fn string_list(value: &Cel) -> Result<Vec<String>, String> {
    const WRONG: &str = "expression must return a string or a list of strings";
    match value {
        Cel::String(one) if one.is_empty() => Ok(Vec::new()),
        Cel::String(one) => Ok(vec![one.to_string()]),
        Cel::List(items) => items
            .iter()
            .filter_map(|item| match item {
                Cel::String(s) if s.is_empty() => None,
                Cel::String(s) => Some(Ok(s.to_string())),
                _ => Some(Err(WRONG.to_owned())),
            })
            .collect(),
        Cel::Null => Ok(Vec::new()),
        _ => Err(WRONG.to_owned()),
    }
}

/// A validation rule's result: true passes, false fails with its message, anything else is
/// an error (`checkValidationRulesEvaluation`).
fn passes(result: &Cel, program: &cel::Program, message: &str) -> Result<(), String> {
    match result {
        Cel::Bool(true) => Ok(()),
        Cel::Bool(false) => Err(format!(
            "validation expression '{}' failed: {message}",
            program.source()
        )),
        _ => Err("validation expression must return a boolean".into()),
    }
}

/// Upstream's error for a token of none of the audiences wanted, whose lists Go prints with
/// `%q`: `["a" "b"]`.
fn audience_error(wanted: &[String], got: &[String]) -> String {
    let quoted = |list: &[String]| {
        let items: Vec<String> = list.iter().map(|a| format!("{a:?}")).collect();
        format!("[{}]", items.join(" "))
    };
    format!(
        "oidc: expected audience in {} got {}",
        quoted(wanted),
        quoted(got)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_checked_as_go_oidc_checks_them() {
        let claims = |v: Value| v.as_object().unwrap().clone();
        assert!(check_times(&claims(serde_json::json!({"exp": 100})), 50).is_ok());
        assert_eq!(
            check_times(&claims(serde_json::json!({})), 50).unwrap_err(),
            "oidc: verify token: oidc: token is expired (Token Expiry: 0)"
        );
        // Five minutes of leeway before `nbf`.
        assert!(check_times(&claims(serde_json::json!({"exp": 1000, "nbf": 350})), 50).is_ok());
        assert!(check_times(&claims(serde_json::json!({"exp": 1000, "nbf": 351})), 50).is_err());
    }

    /// Go's `%q` of a `[]string`, as upstream's `oidc.go` formats the audiences.
    #[test]
    fn audience_lists_print_as_go_quotes_them() {
        let strings = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            audience_error(&strings(&["a", "b \"c\""]), &strings(&["x"])),
            r#"oidc: expected audience in ["a" "b \"c\""] got ["x"]"#
        );
        assert_eq!(
            audience_error(&strings(&["a"]), &[]),
            r#"oidc: expected audience in ["a"] got []"#
        );
    }

    #[test]
    fn usernames_come_from_claims_with_their_prefix() {
        let claims = serde_json::json!({"sub": "jane", "email": "j@x", "email_verified": false});
        let claims = claims.as_object().unwrap();
        assert_eq!(
            claim_username(claims, "sub", Some("oidc:")).unwrap(),
            "oidc:jane"
        );
        assert_eq!(
            claim_username(claims, "email", None).unwrap_err(),
            "oidc: email not verified"
        );
        assert!(claim_username(claims, "name", None).is_err());
    }

    #[test]
    fn expression_lists_drop_empty_strings() {
        let list = Cel::List(Arc::new(vec![
            Cel::String(Arc::new("a".into())),
            Cel::String(Arc::new(String::new())),
        ]));
        assert_eq!(string_list(&list).unwrap(), ["a"]);
        assert!(string_list(&Cel::Int(1)).is_err());
    }
}
