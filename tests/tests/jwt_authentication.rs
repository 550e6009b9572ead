//! Structured JWT authentication (`--authentication-config`) as kube-apiserver does it
//! (`staging/src/k8s.io/apiserver/plugin/pkg/authenticator/token/oidc/oidc.go`,
//! `AuthenticateToken`): an issuer served by this test over HTTPS (its discovery document and
//! key set), tokens it signs presented by kubectl, and the user kapi maps them to as
//! `kubectl auth whoami` shows it; tokens that fail a check are 401, which kubectl reports as
//! "You must be logged in to the server".

#![allow(
    clippy::unwrap_used,
    reason = "helpers of a test: a failed unwrap is a failed test"
)]

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::http::HeaderMap;
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kapi_e2e::{HttpsServer, KapiServer, Kubectl, ServerOptions, expect_serve_refusal};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

/// An ES256 signing key and its JSON Web Key.
struct Signer {
    pair: EcdsaKeyPair,
    kid: &'static str,
}

impl Signer {
    fn new(kid: &'static str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self { pair, kid }
    }

    fn jwk(&self) -> Value {
        // The uncompressed point: 0x04, then x and y.
        let point = self.pair.public_key().as_ref();
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        })
    }

    fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "ES256", "kid": self.kid, "typ": "JWT"});
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signed.as_bytes())
            .unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

/// The issuer: `/.well-known/openid-configuration` names `/keys`, which lists `jwks`.
fn issuer(jwks: Value) -> HttpsServer {
    let router = axum::Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(move |headers: HeaderMap| async move {
                let url = here(&headers);
                Json(json!({"issuer": url, "jwks_uri": format!("{url}/keys")}))
            }),
        )
        .route(
            "/keys",
            get(move || {
                let jwks = jwks.clone();
                async move { Json(json!({"keys": jwks})) }
            }),
        );
    HttpsServer::start(router).unwrap()
}

/// The URL a request to the test's HTTPS server was addressed to.
fn here(headers: &HeaderMap) -> String {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    format!("https://{host}")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The configuration: the issuer's tokens for audience `kapi`, from the `example.com` domain,
/// living an hour at most; users named by `sub` with a prefix, groups and `extra` from CEL
/// expressions, and no `oidc:system:` users.
fn configuration(issuer: &HttpsServer) -> String {
    let ca: String = issuer
        .ca_pem()
        .lines()
        .map(|line| format!("      {line}\n"))
        .collect();
    format!(
        r#"apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: {url}
    audiences: [kapi]
    certificateAuthority: |
{ca}  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  - expression: "claims.exp - claims.iat <= 3600"
    message: tokens live an hour at most
  claimMappings:
    username: {{claim: sub, prefix: "oidc:"}}
    groups: {{expression: "claims.groups.map(g, 'oidc:' + g)"}}
    uid: {{claim: sub}}
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant
  userValidationRules:
  - expression: "!user.username.startsWith('oidc:system:')"
    message: no system users
"#,
        url = issuer.url()
    )
}

#[test]
fn tokens_of_configured_issuers_authenticate_as_their_mapped_users() {
    let signer = Signer::new("one");
    let issuer = issuer(json!([signer.jwk()]));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("authentication.yaml");
    std::fs::write(&config, configuration(&issuer)).unwrap();
    let server = KapiServer::start(&ServerOptions {
        args: vec![format!("--authentication-config={}", config.display())],
        ..ServerOptions::default().tls()
    })
    .unwrap();
    let admin = Kubectl::on_path(&server, dir.path());
    let claims = |changes: Value| {
        let mut claims = json!({
            "iss": issuer.url(), "aud": ["kapi", "other"], "sub": "jane",
            "groups": ["dev", "ops"], "hd": "example.com", "tenant": "acme",
            "iat": now(), "exp": now() + 600,
        });
        for (key, value) in changes.as_object().unwrap() {
            claims[key] = value.clone();
        }
        claims
    };
    // One kubeconfig user per token: each name is a file of its own.
    let as_token =
        |name: &str, token: String| admin.as_user(&name.replace(' ', "-"), json!({"token": token}));
    let whoami = ["auth", "whoami", "-o", "jsonpath={.status.userInfo}"];

    let jane = as_token("jane", signer.sign(&claims(json!({}))));
    assert_eq!(
        jane.expect_ok(&whoami),
        r#"{"extra":{"example.com/tenant":["acme"]},"groups":["oidc:dev","oidc:ops","system:authenticated"],"uid":"jane","username":"oidc:jane"}"#
    );
    // The user is who RBAC judges: no binding, no pods.
    let err = jane.expect_failure(&["get", "pods"]);
    assert!(
        err.contains(r#"User "oidc:jane" cannot list resource "pods""#),
        "{err}"
    );

    // Each check refuses with 401 (the reason is only logged, as upstream's is).
    let other_key = Signer::new("one");
    let refused = [
        (
            "another audience",
            signer.sign(&claims(json!({"aud": "someone-else"}))),
        ),
        ("expired", signer.sign(&claims(json!({"exp": now() - 120})))),
        (
            "another domain",
            signer.sign(&claims(json!({"hd": "example.org"}))),
        ),
        (
            "living two hours",
            signer.sign(&claims(json!({"exp": now() + 7200}))),
        ),
        (
            "a system user",
            signer.sign(&claims(json!({"sub": "system:admin"}))),
        ),
        ("signed by another key", other_key.sign(&claims(json!({})))),
        (
            "of an unknown issuer",
            signer.sign(&claims(json!({"iss": "https://elsewhere.example"}))),
        ),
    ];
    for (what, token) in refused {
        let err = as_token(what, token).expect_failure(&["get", "pods"]);
        assert!(
            err.contains("You must be logged in to the server"),
            "a token {what}: {err}"
        );
    }
    // Refusals leave good tokens working.
    assert!(
        jane.expect_ok(&whoami)
            .contains(r#""username":"oidc:jane""#)
    );
}

/// With `--authentication-config-jwks`, an issuer's keys come from a file: the server never
/// reaches the issuer (here one that does not exist).
#[test]
fn keys_from_a_file_need_no_issuer_to_reach() {
    let signer = Signer::new("filed");
    let dir = tempfile::tempdir().unwrap();
    let issuer = "https://issuer.invalid";
    let (server, config, keys) = with_filed_keys(dir.path(), &prefixed(issuer, "", ""), &signer);
    let admin = Kubectl::on_path(&server, dir.path());
    let claims = json!({"iss": issuer, "aud": "kapi", "sub": "jane", "exp": now() + 600});
    let jane = admin.as_user("jane", json!({"token": signer.sign(&claims)}));
    assert_eq!(
        jane.expect_ok(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}"
        ]),
        "jane"
    );
    let stranger = admin.as_user(
        "stranger",
        json!({"token": Signer::new("filed").sign(&claims)}),
    );
    let err = stranger.expect_failure(&["get", "pods"]);
    assert!(err.contains("You must be logged in to the server"), "{err}");
    // Keys for an issuer the configuration does not name are a mistake worth stopping for.
    let other = format!(
        "--authentication-config-jwks=https://other.invalid={}",
        keys.display()
    );
    let stderr = kapi_e2e::expect_serve_refusal_with(
        &dir.path().join("second"),
        &[
            &format!("--authentication-config={}", config.display()),
            &other,
        ],
    )
    .unwrap();
    assert!(
        stderr.contains(r#"keys were given for "https://other.invalid", which the configuration names no authenticator for"#),
        "{stderr}"
    );
}

/// A configuration upstream's validation refuses stops the server with its field errors
/// (`ValidateAuthenticationConfiguration`).
#[test]
fn invalid_configurations_stop_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("authentication.yaml");
    std::fs::write(
        &config,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: \"http://issuer.example\", audiences: [kapi]}\n  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n",
    )
    .unwrap();
    let flag = format!("--authentication-config={}", config.display());
    let stderr = expect_serve_refusal(dir.path(), &flag).unwrap();
    assert!(
        stderr.contains(
            r#"invalid authentication config: jwt[0].issuer.url: Invalid value: "http://issuer.example": URL scheme must be https"#
        ),
        "{stderr}"
    );
}

/// A TLS server with the configuration `text` (naming `https://issuer.invalid`) written in
/// `dir`, whose tokens `signer` signs (its key in a key set file): the server, the
/// configuration file and the key set file.
fn with_filed_keys(dir: &Path, text: &str, signer: &Signer) -> (KapiServer, PathBuf, PathBuf) {
    let (config, keys) = (dir.join("authentication.yaml"), dir.join("keys.json"));
    std::fs::write(&config, text).unwrap_or_else(|e| panic!("cannot write the config: {e}"));
    std::fs::write(&keys, json!({"keys": [signer.jwk()]}).to_string())
        .unwrap_or_else(|e| panic!("cannot write the keys: {e}"));
    let options = ServerOptions {
        args: vec![
            format!("--authentication-config={}", config.display()),
            format!(
                "--authentication-config-jwks=https://issuer.invalid={}",
                keys.display()
            ),
        ],
        ..ServerOptions::default().tls()
    };
    // The tests change the configuration and expect the next request to see it.
    let server = KapiServer::start(&options.remembering_no_tokens())
        .unwrap_or_else(|e| panic!("the server did not start: {e}"));
    (server, config, keys)
}

/// A configuration file naming `issuer` with usernames prefixed `prefix`, and `anonymous`
/// (YAML, possibly empty) appended.
fn prefixed(issuer: &str, prefix: &str, anonymous: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {{url: \"{issuer}\", audiences: [kapi]}}\n  claimMappings:\n    username: {{claim: sub, prefix: \"{prefix}\"}}\n{anonymous}"
    )
}

/// The file is read again when it changes, as kube-apiserver reloads `--authentication-config`
/// (`ApplyTo` in `pkg/kubeapiserver/options/authentication.go`): a valid change is in force
/// for the next token, an invalid one is ignored, and one that changes the `anonymous`
/// section is refused ("changed from initial configuration file"); the key set files reload
/// with it. The `anonymous` section decides anonymous requests (upstream's anonymous
/// authenticator: with conditions, only their exact paths; anything else without credentials
/// is 401), and `--anonymous-auth` may not be given beside it.
#[test]
fn a_changed_configuration_is_reloaded_and_its_anonymous_section_decides() {
    let (signer, rotated) = (Signer::new("first"), Signer::new("second"));
    let dir = tempfile::tempdir().unwrap();
    let issuer = "https://issuer.invalid";
    let anonymous = "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n";
    let (server, config, keys) =
        with_filed_keys(dir.path(), &prefixed(issuer, "sso:", anonymous), &signer);
    let admin = Kubectl::on_path(&server, dir.path());
    let claims = json!({"iss": issuer, "aud": "kapi", "sub": "jane", "exp": now() + 600});
    let jane = admin.as_user("jane", json!({"token": signer.sign(&claims)}));
    let whoami = |who: &Kubectl| {
        who.ok(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
    };
    assert_eq!(whoami(&jane).unwrap(), "sso:jane");
    // Waits out the server's check interval (a second) before the next request.
    let after_change = || std::thread::sleep(std::time::Duration::from_millis(1300));

    std::fs::write(&config, prefixed(issuer, "corp:", anonymous)).unwrap();
    after_change();
    assert_eq!(whoami(&jane).unwrap(), "corp:jane");
    // Invalid (an http issuer): the last configuration stays.
    std::fs::write(&config, prefixed("http://issuer.invalid", "x:", anonymous)).unwrap();
    after_change();
    assert_eq!(whoami(&jane).unwrap(), "corp:jane");
    // A changed anonymous section is refused whole.
    std::fs::write(&config, prefixed(issuer, "y:", "")).unwrap();
    after_change();
    assert_eq!(whoami(&jane).unwrap(), "corp:jane");
    // New keys: the old key's tokens stop working, the new key's work.
    std::fs::write(&config, prefixed(issuer, "corp:", anonymous)).unwrap();
    std::fs::write(&keys, json!({"keys": [rotated.jwk()]}).to_string()).unwrap();
    after_change();
    let err = jane.expect_failure(&["get", "pods"]);
    assert!(err.contains("You must be logged in to the server"), "{err}");
    let again = admin.as_user("jane-again", json!({"token": rotated.sign(&claims)}));
    assert_eq!(whoami(&again).unwrap(), "corp:jane");

    // Anonymous requests reach /livez only.
    let ca = server.data_dir().join("pki/ca.crt");
    let anonymous_get = |path: &str| {
        let out = std::process::Command::new("curl")
            .args([
                "-sS",
                "--max-time",
                "20",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
            ])
            .arg("--cacert")
            .arg(&ca)
            .arg(format!("{}{path}", server.url()))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(anonymous_get("/livez"), "200");
    assert_eq!(anonymous_get("/healthz"), "401");
    assert_eq!(anonymous_get("/version"), "401");

    // Both switches at once: refused with upstream's message.
    let stderr = kapi_e2e::expect_serve_refusal_with(
        &dir.path().join("second"),
        &[
            &format!("--authentication-config={}", config.display()),
            &format!("--authentication-config-jwks={issuer}={}", keys.display()),
            "--anonymous-auth=true",
        ],
    )
    .unwrap();
    assert!(
        stderr.contains("anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file"),
        "{stderr}"
    );
    // Conditions without `enabled`: upstream's field error, the value as Go prints it.
    std::fs::write(
        &config,
        prefixed(
            issuer,
            "",
            "anonymous:\n  enabled: false\n  conditions:\n  - path: /livez\n  - path: /readyz\n",
        ),
    )
    .unwrap();
    let flag = format!("--authentication-config={}", config.display());
    let stderr = expect_serve_refusal(&dir.path().join("third"), &flag).unwrap();
    assert!(
        stderr.contains(r#"anonymous.conditions: Invalid value: []apiserver.AnonymousAuthCondition{apiserver.AnonymousAuthCondition{Path:"/livez"}, apiserver.AnonymousAuthCondition{Path:"/readyz"}}: enabled should be set to true when conditions are defined"#),
        "{stderr}"
    );
}

/// Distributed claims (OpenID Connect Core 1.0 §5.6.2) as upstream's `claimResolver` resolves
/// them for a groups claim (`oidc.go`, `expand` and `resolve`): a token without `groups` that
/// names a source for it in `_claim_names`/`_claim_sources` gets its groups from the JWT the
/// source's endpoint answers (asked with the source's access token), once that JWT is verified
/// with its own issuer's keys (here a second issuer, found by discovery, or the token's own)
/// and is for one of the audiences. A token holding the claim is not expanded; a source that
/// refuses, a claims JWT for another audience or claim names without sources are 401.
#[test]
fn distributed_groups_claims_are_fetched_from_their_source() {
    use std::sync::Arc;

    let (own, other) = (Arc::new(Signer::new("own")), Arc::new(Signer::new("other")));
    let discovery = move |path: &'static str| {
        get(move |headers: HeaderMap| async move {
            let url = format!("{}{path}", here(&headers));
            Json(json!({"issuer": url, "jwks_uri": format!("{url}/keys")}))
        })
    };
    let key_set = |signer: &Arc<Signer>| {
        let jwks = json!({"keys": [signer.jwk()]});
        get(move || {
            let jwks = jwks.clone();
            async move { Json(jwks) }
        })
    };
    // `/claims/{who}` answers, to the access token `s3cret` only, a JWT of groups signed by
    // `other` (as the issuer `<url>/other`), or by `own` as the token's issuer, or for another
    // audience.
    let (own_signer, other_signer) = (Arc::clone(&own), Arc::clone(&other));
    let claims = get(
        move |axum::extract::Path(who): axum::extract::Path<String>, headers: HeaderMap| {
            let (own, other) = (Arc::clone(&own_signer), Arc::clone(&other_signer));
            async move {
                let authorized = headers.get("authorization").and_then(|v| v.to_str().ok())
                    == Some("Bearer s3cret");
                if !authorized {
                    return (axum::http::StatusCode::UNAUTHORIZED, String::new());
                }
                let url = here(&headers);
                let claims = |iss: String, aud: &str, groups: &[&str]| json!({"iss": iss, "aud": aud, "groups": groups, "exp": now() + 600});
                let jwt = match who.as_str() {
                    "other" => other.sign(&claims(format!("{url}/other"), "kapi", &["remote"])),
                    "own" => own.sign(&claims(url, "kapi", &["local"])),
                    _ => other.sign(&claims(format!("{url}/other"), "elsewhere", &["x"])),
                };
                (axum::http::StatusCode::OK, jwt)
            }
        },
    );
    let router = axum::Router::new()
        .route("/.well-known/openid-configuration", discovery(""))
        .route("/keys", key_set(&own))
        .route(
            "/other/.well-known/openid-configuration",
            discovery("/other"),
        )
        .route("/other/keys", key_set(&other))
        .route("/claims/{who}", claims);
    let issuer = HttpsServer::start(router).unwrap();
    let ca: String = issuer
        .ca_pem()
        .lines()
        .map(|line| format!("      {line}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("authentication.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: {url}\n    audiences: [kapi]\n    certificateAuthority: |\n{ca}  claimMappings:\n    username: {{claim: sub, prefix: \"\"}}\n    groups: {{claim: groups, prefix: \"oidc:\"}}\n",
            url = issuer.url()
        ),
    )
    .unwrap();
    let server = KapiServer::start(
        &ServerOptions {
            args: vec![format!("--authentication-config={}", config.display())],
            ..ServerOptions::default().tls()
        }
        .remembering_no_tokens(),
    )
    .unwrap();
    let admin = Kubectl::on_path(&server, dir.path());
    let token = |name: &str, source: Value, extra: Value| {
        let mut claims = json!({
            "iss": issuer.url(), "aud": "kapi", "sub": name, "exp": now() + 600,
            "_claim_names": {"groups": "src1"},
        });
        if !source.is_null() {
            claims["_claim_sources"] = json!({ "src1": source });
        }
        for (key, value) in extra.as_object().unwrap() {
            claims[key] = value.clone();
        }
        admin.as_user(name, json!({"token": own.sign(&claims)}))
    };
    let source = |who: &str, access_token: &str| json!({"endpoint": format!("{}/claims/{who}", issuer.url()), "access_token": access_token});
    let groups = ["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"];

    let remote = token("remote", source("other", "s3cret"), json!({}));
    assert_eq!(
        remote.expect_ok(&groups),
        r#"["oidc:remote","system:authenticated"]"#
    );
    let local = token("local", source("own", "s3cret"), json!({}));
    assert_eq!(
        local.expect_ok(&groups),
        r#"["oidc:local","system:authenticated"]"#
    );
    // A token that holds the claim keeps it: its source is not asked.
    let holding = token(
        "holding",
        source("other", "wrong"),
        json!({"groups": ["mine"]}),
    );
    assert_eq!(
        holding.expect_ok(&groups),
        r#"["oidc:mine","system:authenticated"]"#
    );
    for (what, user) in [
        (
            "refused by its source",
            token("refused", source("other", "wrong"), json!({})),
        ),
        (
            "for another audience",
            token("astray", source("astray", "s3cret"), json!({})),
        ),
        (
            "without sources",
            token("sourceless", Value::Null, json!({})),
        ),
    ] {
        let err = user.expect_failure(&["get", "pods"]);
        assert!(
            err.contains("You must be logged in to the server"),
            "a token {what}: {err}"
        );
    }
}
