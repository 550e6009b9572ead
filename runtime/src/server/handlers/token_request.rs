//! `POST .../serviceaccounts/<name>/token`: a `TokenRequest` (`authentication.k8s.io/v1`)
//! answered with a signed token for the account, as upstream's `TokenREST` answers it
//! (`pkg/registry/core/serviceaccount/storage/token.go`): `expirationSeconds` defaulted to an
//! hour and validated (`pkg/apis/authentication/validation`: at least ten minutes, at most
//! 2^32 seconds), shortened to the server's maximum with a warning, the audiences defaulted
//! to the API audiences, and a bound object (a Pod of the account, a Secret or a Node) looked
//! up and named in the token with its uid; a pod's node is named too (from the releases whose
//! feature gates do it). Nothing is stored.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::KubeVersion;
use crate::meta::{CreateOptions, StatusCause};

use crate::server::auth::service_account::jwt::{self, Claims, Private, Ref};
use crate::server::handlers::request::write_request;
use crate::server::http::error::{ApiError, Subject};
use crate::server::http::negotiate::{self, Output};
use crate::server::http::path::is_path_segment;
use crate::server::state::keys;
use crate::server::{Call, admission};
use crate::storage::Storage as _;

/// The group, version and kind of the request and answer.
const GROUP: &str = "authentication.k8s.io";
const API_VERSION: &str = "authentication.k8s.io/v1";
const KIND: &str = "TokenRequest";

/// `SetDefaults_TokenRequestSpec`: an hour.
const DEFAULT_EXPIRATION_SECONDS: i64 = 60 * 60;
/// What the kubelet's projected token volumes ask for by default, upstream's signal to extend
/// the token (`WarnOnlyBoundTokenExpirationSeconds`), and the life it then gets
/// (`ExpirationExtensionSeconds`, a year); `pkg/serviceaccount/claims.go`.
const WARN_ONLY_SECONDS: i64 = 60 * 60 + 7;
const EXTENDED_SECONDS: i64 = 24 * 365 * 60 * 60;
/// The releases from which upstream's feature gates are on by default: a `jti` claim
/// (`ServiceAccountTokenJTI`, beta in 1.30), the node of a bound pod named
/// (`ServiceAccountTokenPodNodeInfo`, beta in 1.30) and tokens bound to a Node
/// (`ServiceAccountTokenNodeBinding`, beta in 1.31).
const JTI_SINCE: KubeVersion = KubeVersion::new(1, 30);
const POD_NODE_SINCE: KubeVersion = KubeVersion::new(1, 30);
const NODE_BINDING_SINCE: KubeVersion = KubeVersion::new(1, 31);
/// From 1.34 (`TokenRequestServiceAccountUIDValidation`, beta) a request keeps its
/// `metadata.uid`, which must then be the account's, and gets the account's when it has none;
/// before, the uid was wiped as on any create.
const ACCOUNT_UID_SINCE: KubeVersion = KubeVersion::new(1, 34);

/// `ValidateTokenRequest`'s bounds.
const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// A stored object's JSON, or 404 with upstream's message.
async fn stored(
    call: &Call,
    plural: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, ApiError> {
    let not_found = || {
        ApiError::not_found(Subject {
            group: "",
            resource: plural,
            name,
        })
    };
    if !is_path_segment(name) {
        return Err(not_found());
    }
    let mut key = keys::prefix_of("", plural);
    if let Some(namespace) = namespace {
        key.push_str(namespace);
        key.push('/');
    }
    key.push_str(name);
    let kv = call
        .state
        .storage
        .get(&key, None)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .ok_or_else(not_found)?;
    serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string()))
}

fn uid_of(object: &Value) -> String {
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The spec's `expirationSeconds` after defaulting, or upstream's 422.
fn expiration_seconds(spec: &Value, name: &str) -> Result<i64, ApiError> {
    let shown = spec
        .get("expirationSeconds")
        .cloned()
        .unwrap_or(Value::Null);
    let seconds = match &shown {
        Value::Null => DEFAULT_EXPIRATION_SECONDS,
        value => value
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds must be an integer"))?,
    };
    let detail = if seconds < MIN_EXPIRATION_SECONDS {
        "may not specify a duration less than 10 minutes"
    } else if seconds > MAX_EXPIRATION_SECONDS {
        "may not specify a duration larger than 2^32 seconds"
    } else {
        return Ok(seconds);
    };
    Err(ApiError::invalid(
        GROUP,
        KIND,
        name,
        vec![StatusCause::invalid(
            "spec.expirationSeconds",
            &json!(seconds),
            detail,
        )],
    ))
}

/// Serves a token request for account `name` in the call's namespace.
pub(crate) async fn serve(
    call: &Call,
    name: &str,
    body: Body,
    output: Output,
    warnings: &mut Vec<String>,
) -> Result<Response, ApiError> {
    let Some(tokens) = call.state.access.service_accounts.clone() else {
        // Upstream installs the subresource only with an issuer and a signing key.
        return Err(ApiError::no_route());
    };
    let namespace = call.target.namespace.clone().unwrap_or_default();
    let (body, write) = write_request::<CreateOptions>(call, body).await?;
    let mut request = negotiate::decode_body(&call.headers, &body, call.state.cbor())?;
    as_decoded(&mut request);
    admission::admit_token_request(call, &mut request, name, write.dry_run).await?;
    // The body's name and namespace must be the URL's when given.
    for (field, want, detail) in [
        (
            "name",
            name,
            "must match the service account name if specified",
        ),
        (
            "namespace",
            namespace.as_str(),
            "must match the service account namespace if specified",
        ),
    ] {
        let given = request
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str);
        if let Some(given) = given.filter(|g| !g.is_empty() && *g != want) {
            return Err(ApiError::invalid(
                GROUP,
                KIND,
                name,
                vec![StatusCause::invalid(
                    format!("metadata.{field}"),
                    &json!(given),
                    detail,
                )],
            ));
        }
    }
    let account = stored(call, "serviceaccounts", Some(&namespace), name).await?;
    let uid = if call.state.kube_version >= ACCOUNT_UID_SINCE {
        let account_uid = uid_of(&account);
        match request.pointer("/metadata/uid").and_then(Value::as_str) {
            Some(given) if !given.is_empty() && given != account_uid => {
                let message = format!(
                    "the UID in the token request ({given}) does not match the UID of the service account ({account_uid})"
                );
                return Err(ApiError::conflict(
                    Subject {
                        group: GROUP,
                        resource: KIND,
                        name,
                    },
                    &message,
                ));
            }
            _ => Some(account_uid),
        }
    } else {
        None
    };
    let mut spec = request.get("spec").cloned().unwrap_or_else(|| json!({}));
    if !spec.is_object() {
        spec = json!({});
    }
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .unwrap_or_default();
    if audiences.is_empty() {
        audiences = tokens.audiences();
    }
    let mut seconds = expiration_seconds(&spec, name)?;
    // Validating admission sees the request as the token storage completed it.
    let mut completed = request.clone();
    if let Some(map) = completed.as_object_mut() {
        let mut metadata = map
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let empty = |metadata: &serde_json::Map<String, Value>, field: &str| {
            metadata
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        };
        for (field, value) in [("name", name), ("namespace", namespace.as_str())] {
            if empty(&metadata, field) {
                metadata.insert(field.into(), json!(value));
            }
        }
        match &uid {
            Some(uid) if empty(&metadata, "uid") => {
                metadata.insert("uid".into(), json!(uid));
            }
            Some(_) => {}
            None => {
                metadata.remove("uid");
            }
        }
        map.insert("metadata".into(), Value::Object(metadata));
        let mut completed_spec = spec.clone();
        completed_spec["audiences"] = json!(audiences);
        map.insert("spec".into(), completed_spec);
        map.remove("status");
    }
    admission::validate_token_request(call, &completed, name, write.dry_run).await?;
    let mut private = Private {
        namespace: namespace.clone(),
        serviceaccount: Ref {
            name: name.to_owned(),
            uid: uid_of(&account),
        },
        ..Private::default()
    };
    if let Some(reference) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        bind(call, name, &namespace, reference, &mut private).await?;
    }
    if let Some(max) = tokens.max_expiration {
        let max = i64::try_from(max.as_secs()).unwrap_or(i64::MAX);
        if seconds > max {
            warnings.push(format!(
                "requested expiration of {seconds} seconds shortened to {max} seconds"
            ));
            seconds = max;
        }
    }
    let now = jiff::Timestamp::now().as_second();
    // Upstream's safe transition to bound tokens: a pod's token asked for with the kubelet's
    // 3607 seconds, for API audiences only, lives a year and is stale after the 3607 seconds;
    // the answer's expirationTimestamp still says what was asked for.
    let api_audiences = tokens.audiences();
    let mut lives = seconds;
    if tokens.extend_expiration
        && private.pod.is_some()
        && seconds == WARN_ONLY_SECONDS
        && audiences.iter().all(|a| api_audiences.contains(a))
    {
        private.warnafter = Some(now + seconds);
        lives = EXTENDED_SECONDS;
    }
    let claims = Claims {
        aud: audiences.clone(),
        exp: now + lives,
        iat: now,
        nbf: now,
        iss: tokens.issuer.clone(),
        jti: if call.state.kube_version >= JTI_SINCE {
            uuid::Uuid::new_v4().to_string()
        } else {
            String::new()
        },
        sub: format!("system:serviceaccount:{namespace}:{name}"),
        kubernetes: private,
    };
    let token = jwt::sign(&tokens.signing_key, &claims)
        .ok_or_else(|| ApiError::internal("failed to generate token: signing failed".to_owned()))?;
    let stamp = |seconds: i64| {
        jiff::Timestamp::from_second(seconds)
            .map(|t| t.to_string())
            .unwrap_or_default()
    };
    spec["audiences"] = json!(audiences);
    spec["expirationSeconds"] = json!(seconds);
    if spec.get("boundObjectRef").is_some_and(Value::is_null)
        && let Some(map) = spec.as_object_mut()
    {
        map.remove("boundObjectRef");
    }
    let mut metadata = json!({
        "name": name,
        "namespace": namespace,
        "creationTimestamp": stamp(now),
    });
    if let Some(uid) = uid {
        metadata["uid"] = json!(uid);
    }
    if let Some(map) = request.as_object_mut() {
        map.insert("apiVersion".into(), json!(API_VERSION));
        map.insert("kind".into(), json!(KIND));
        map.insert("metadata".into(), metadata);
        map.insert("spec".into(), spec);
        map.insert(
            "status".into(),
            json!({"token": token, "expirationTimestamp": stamp(now + seconds)}),
        );
    }
    Ok(negotiate::encode(
        output.format,
        StatusCode::CREATED,
        &request,
    ))
}

/// The request as upstream's decoder hands it on: of its group, version and kind, and with
/// `spec.expirationSeconds` defaulted to an hour (`SetDefaults_TokenRequestSpec`), which is
/// what admission sees.
fn as_decoded(request: &mut Value) {
    let Some(map) = request.as_object_mut() else {
        return;
    };
    map.insert("apiVersion".into(), json!(API_VERSION));
    map.insert("kind".into(), json!(KIND));
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut()
        && spec.get("expirationSeconds").is_none_or(Value::is_null)
    {
        spec.insert(
            "expirationSeconds".into(),
            json!(DEFAULT_EXPIRATION_SECONDS),
        );
    }
}

/// Looks up the object a token is bound to and names it in the claims: upstream's errors for
/// a kind it cannot bind to, an object that is not there or whose uid is not the reference's,
/// and a pod of another account.
async fn bind(
    call: &Call,
    account: &str,
    namespace: &str,
    reference: &Value,
    private: &mut Private,
) -> Result<(), ApiError> {
    let field = |name: &str| {
        reference
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (api_version, kind, name, uid) = (
        field("apiVersion"),
        field("kind"),
        field("name"),
        field("uid"),
    );
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    let object = match (group, kind.as_str()) {
        ("", "Pod") => {
            let pod = stored(call, "pods", Some(namespace), &name).await?;
            let pod_account = pod
                .pointer("/spec/serviceAccountName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if pod_account != account {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
                )));
            }
            // The pod's node is named too (`ServiceAccountTokenPodNodeInfo`).
            let node = pod
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !node.is_empty()
                && call.state.kube_version >= POD_NODE_SINCE
                && let Ok(node_object) = stored(call, "nodes", None, node).await
            {
                private.node = Some(Ref {
                    name: node.to_owned(),
                    uid: uid_of(&node_object),
                });
            }
            pod
        }
        ("", "Secret") => stored(call, "secrets", Some(namespace), &name).await?,
        ("", "Node") if call.state.kube_version >= NODE_BINDING_SINCE => {
            stored(call, "nodes", None, &name).await?
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let found = uid_of(&object);
    if !uid.is_empty() && uid != found {
        return Err(ApiError::conflict(
            Subject {
                group,
                resource: &kind,
                name: &name,
            },
            &format!(
                "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    let bound = Some(Ref { name, uid: found });
    match kind.as_str() {
        "Pod" => private.pod = bound,
        "Secret" => private.secret = bound,
        _ => private.node = bound,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pkg/apis/authentication/validation/validation_test.go`'s bounds and defaults.
    #[test]
    fn expiration_is_defaulted_and_bounded_as_upstream() {
        assert_eq!(expiration_seconds(&json!({}), "sa").unwrap(), 3600);
        assert_eq!(
            expiration_seconds(&json!({"expirationSeconds": 600}), "sa").unwrap(),
            600
        );
        let short = expiration_seconds(&json!({"expirationSeconds": 599}), "sa").unwrap_err();
        assert_eq!(short.code(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            short.status().message.as_deref(),
            Some(
                "TokenRequest.authentication.k8s.io \"sa\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
            )
        );
        let long = expiration_seconds(&json!({"expirationSeconds": (1_i64 << 32) + 1}), "sa");
        assert!(long.is_err());
    }
}
